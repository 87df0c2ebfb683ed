/*
 * Unit tests of the software RoCEv2 engine's UD service: SEND and SEND
 * with immediate over IPv4 and IPv6 with the 40-byte GRH room checked byte
 * for byte (IPv4 header in its last 20 bytes), source QP, MAC and GID in
 * the completion; Q_Key mismatch dropped and counted, the QP's own Q_Key
 * when the WR's high bit is set; messages larger than the path MTU failing
 * locally (SQE, then back to RTS); a short receive buffer; no receive WR.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdlib.h>

#include "sw_testbed.h"
#include "unit.h"

int unit_failures;

#define QKEY 0x11223344u

struct ud {
    struct tb *tb;
    struct tb_node *na, *nb;
    struct qsw_qp *a, *b;
    uint32_t ka, kb;
};

static void ud_setup(struct ud *u, bool ipv6, enum qsw_mtu mtu)
{
    u->tb = tb_new(ipv6);
    u->na = &u->tb->node[0];
    u->nb = &u->tb->node[1];
    u->a = tb_qp(u->na, 0x31, QSW_QPT_UD, 1, 64);
    u->b = tb_qp(u->nb, 0x41, QSW_QPT_UD, 1, 64);
    u->ka = tb_reg_mr(u->na, 1, 0, TB_MEM_SIZE, 0xf);
    u->kb = tb_reg_mr(u->nb, 1, 0, TB_MEM_SIZE, 0xf);
    CHECK_EQ(tb_ud_up(u->a, QKEY, mtu), 0);
    CHECK_EQ(tb_ud_up(u->b, QKEY, mtu), 0);
}

static struct qsw_send_wr ud_wr(struct ud *u, uint64_t id, enum qsw_wr_opcode op, uint32_t len,
                                uint32_t qkey)
{
    struct qsw_send_wr wr = tb_wr(id, op, QSW_SEND_SIGNALED);

    tb_wr_sge(&wr, tb_va(0), len, u->ka);
    memcpy(wr.ud.av.dmac, u->nb->mac, 6);
    memcpy(wr.ud.av.dgid, u->nb->gid, 16);
    memcpy(wr.ud.av.sgid, u->na->gid, 16);
    wr.ud.av.hop_limit = 1;
    wr.ud.av.traffic_class = 0x20;
    wr.ud.remote_qpn = 0x41;
    wr.ud.remote_qkey = qkey;
    wr.imm_data = 0x0a0b0c0d;
    return wr;
}

static void test_ud_send(void)
{
    for (int v6 = 0; v6 < 2; v6++) {
        struct ud u;
        struct qsw_send_wr wr;
        const struct qsw_wc *wc;
        const uint8_t *grh;

        ud_setup(&u, v6, QSW_MTU_1024);
        tb_fill(u.na, 0, 1024, 9);
        memset(u.nb->mem + 65536, 0xee, 2048);
        tb_post_recv(u.b, 1, tb_va(65536), 40 + 1024, u.kb);
        tb_post_recv(u.b, 2, tb_va(65536 + 4096), 100, u.kb);
        wr = ud_wr(&u, 1, QSW_WR_SEND, 1024, QKEY);
        CHECK_EQ(qsw_post_send(u.a, &wr), 0);
        wr = ud_wr(&u, 2, QSW_WR_SEND_WITH_IMM, 0, QKEY);
        CHECK_EQ(qsw_post_send(u.a, &wr), 0);
        CHECK(tb_run_wcs(u.tb, 1, 2, 1000000000ull));
        wc = tb_find_wc(u.nb, 1, true);
        CHECK(wc && wc->status == 0 && wc->opcode == QSW_WC_RECV && wc->byte_len == 40 + 1024);
        CHECK(wc && wc->src_qp == 0x31 && wc->qp_num == 0x41 && wc->wc_flags == QSW_WC_GRH);
        CHECK(wc && wc->network_hdr_type == (v6 ? QSW_NET_IPV6 : QSW_NET_IPV4));
        CHECK(wc && memcmp(wc->smac, u.na->mac, 6) == 0 && memcmp(wc->sgid, u.na->gid, 16) == 0 &&
              memcmp(wc->dgid, u.nb->gid, 16) == 0);
        grh = u.nb->mem + 65536;
        if (v6) {
            CHECK_EQ(grh[0] >> 4, 6);
            CHECK_EQ((grh[0] & 0xf) << 4 | grh[1] >> 4, 0x20);     /* traffic class */
            CHECK_EQ(grh[4] << 8 | grh[5], 8 + 12 + 8 + 1024 + 4);  /* payload length */
            CHECK_EQ(grh[6], 17);
            CHECK_EQ(grh[7], 1);
            CHECK(memcmp(grh + 8, u.na->gid, 16) == 0);
            CHECK(memcmp(grh + 24, u.nb->gid, 16) == 0);
        } else {
            for (int i = 0; i < 20; i++) {
                CHECK_EQ(grh[i], 0);
            }
            CHECK_EQ(grh[20], 0x45);
            CHECK_EQ(grh[21], 0x20);
            CHECK_EQ(grh[22] << 8 | grh[23], 20 + 8 + 12 + 8 + 1024 + 4);
            CHECK_EQ(grh[28], 1);
            CHECK_EQ(grh[29], 17);
            CHECK(memcmp(grh + 32, u.na->gid + 12, 4) == 0);
            CHECK(memcmp(grh + 36, u.nb->gid + 12, 4) == 0);
        }
        CHECK(memcmp(grh + 40, u.na->mem, 1024) == 0);
        CHECK_EQ(grh[40 + 1024], 0xee);
        wc = tb_find_wc(u.nb, 2, true);
        CHECK(wc && wc->status == 0 && wc->byte_len == 40 && (wc->wc_flags & QSW_WC_WITH_IMM) &&
              wc->imm_data == 0x0a0b0c0d);
        wc = tb_find_wc(u.na, 1, false);
        CHECK(wc && wc->status == 0 && wc->opcode == QSW_WC_SEND && wc->byte_len == 1024);
        tb_free(u.tb);
    }
}

static void test_ud_qkey(void)
{
    struct ud u;
    struct qsw_send_wr wr;
    struct qsw_stats st;
    const struct qsw_wc *wc;

    ud_setup(&u, false, QSW_MTU_1024);
    tb_post_recv(u.b, 1, tb_va(65536), 200, u.kb);
    wr = ud_wr(&u, 1, QSW_WR_SEND, 10, QKEY + 1);
    CHECK_EQ(qsw_post_send(u.a, &wr), 0);
    CHECK(tb_run_idle(u.tb, 1000000000ull));
    qsw_engine_stats(u.nb->eng, &st);
    CHECK_EQ(st.drop_qkey, 1);
    CHECK_EQ(tb_rq_count(u.b), 1);                  /* no receive WR used */
    CHECK(tb_find_wc(u.na, 1, false) && tb_find_wc(u.na, 1, false)->status == 0);
    /* the high bit: the sender's QP Q_Key goes on the wire */
    wr = ud_wr(&u, 2, QSW_WR_SEND, 10, 0x80000000u);
    CHECK_EQ(qsw_post_send(u.a, &wr), 0);
    CHECK(tb_run_wcs(u.tb, 1, 1, 1000000000ull));
    wc = tb_find_wc(u.nb, 1, true);
    CHECK(wc && wc->status == 0 && wc->byte_len == 50);
    tb_free(u.tb);
}

static void test_ud_lengths(void)
{
    struct ud u;
    struct qsw_send_wr wr;
    const struct qsw_wc *wc;
    struct qsw_stats st;
    struct qsw_qp_attr a;

    ud_setup(&u, false, QSW_MTU_4096);
    /* every size up to the MTU arrives intact */
    for (uint32_t len = 0; len <= 4096; len += len < 8 ? 1 : 511) {
        tb_fill(u.na, 0, len, len);
        tb_post_recv(u.b, len, tb_va(1 << 20), 40 + 4096, u.kb);
        wr = ud_wr(&u, len, QSW_WR_SEND, len, QKEY);
        CHECK_EQ(qsw_post_send(u.a, &wr), 0);
        CHECK(tb_run_wcs(u.tb, 1, u.nb->nwc + 1, 1000000000ull));
        wc = tb_find_wc(u.nb, len, true);
        CHECK(wc && wc->status == 0 && wc->byte_len == 40 + len);
        CHECK(memcmp(u.nb->mem + (1 << 20) + 40, u.na->mem, len) == 0);
    }
    wr = ud_wr(&u, 4096, QSW_WR_SEND, 4096, QKEY);
    CHECK_EQ(qsw_post_send(u.a, &wr), 0);
    CHECK(tb_run_idle(u.tb, 1000000000ull));
    /* a receive buffer too small for GRH + payload: local length error, the QP goes on */
    tb_clear_wcs(u.nb);
    tb_post_recv(u.b, 100, tb_va(1 << 20), 40 + 99, u.kb);
    tb_post_recv(u.b, 101, tb_va(2 << 20), 40 + 100, u.kb);
    wr = ud_wr(&u, 100, QSW_WR_SEND, 100, QKEY);
    CHECK_EQ(qsw_post_send(u.a, &wr), 0);
    wr.wr_id = 101;
    CHECK_EQ(qsw_post_send(u.a, &wr), 0);
    CHECK(tb_run_wcs(u.tb, 1, 2, 1000000000ull));
    wc = tb_find_wc(u.nb, 100, true);
    CHECK(wc && wc->status == QSW_WC_LOC_LEN_ERR);
    wc = tb_find_wc(u.nb, 101, true);
    CHECK(wc && wc->status == 0 && wc->byte_len == 140);
    /* no receive WR: dropped and counted */
    wr.wr_id = 102;
    CHECK_EQ(qsw_post_send(u.a, &wr), 0);
    CHECK(tb_run_idle(u.tb, 1000000000ull));
    qsw_engine_stats(u.nb->eng, &st);
    CHECK_EQ(st.drop_no_recv, 2);                   /* with the 4096-byte one above */
    /* larger than the MTU: a local length error, the send queue stops (SQE) */
    tb_clear_wcs(u.na);
    wr = ud_wr(&u, 200, QSW_WR_SEND, 4097, QKEY);
    CHECK_EQ(qsw_post_send(u.a, &wr), 0);
    wr = ud_wr(&u, 201, QSW_WR_SEND, 10, QKEY);
    CHECK_EQ(qsw_post_send(u.a, &wr), 0);
    CHECK(tb_run_wcs(u.tb, 0, 2, 1000000000ull));
    wc = tb_find_wc(u.na, 200, false);
    CHECK(wc && wc->status == QSW_WC_LOC_LEN_ERR);
    wc = tb_find_wc(u.na, 201, false);
    CHECK(wc && wc->status == QSW_WC_WR_FLUSH_ERR);
    CHECK_EQ(qsw_qp_state(u.a), QSW_QPS_SQE);
    memset(&a, 0, sizeof(a));
    a.qp_state = QSW_QPS_RTS;
    CHECK_EQ(qsw_qp_modify(u.a, &a, QSW_QP_STATE), 0);
    tb_post_recv(u.b, 202, tb_va(1 << 20), 100, u.kb);
    wr.wr_id = 202;
    CHECK_EQ(qsw_post_send(u.a, &wr), 0);
    CHECK(tb_run_wcs(u.tb, 1, u.nb->nwc + 1, 1000000000ull));
    wc = tb_find_wc(u.nb, 202, true);
    CHECK(wc && wc->status == 0);
    /* UD carries SENDs only */
    wr = ud_wr(&u, 300, QSW_WR_RDMA_WRITE, 10, QKEY);
    CHECK_EQ(qsw_post_send(u.a, &wr), -QSW_EINVAL);
    tb_free(u.tb);
}

static void test_ud_lossy(void)
{
    struct qsw_fault f = { .loss_ppm = 100000, .dup_ppm = 50000, .corrupt_ppm = 50000, .seed = 3 };
    struct ud u;
    struct qsw_stats st;
    unsigned got = 0;

    ud_setup(&u, true, QSW_MTU_1024);
    qsw_engine_set_fault(u.na->eng, &f);
    for (unsigned i = 0; i < 500; i++) {
        tb_post_recv(u.b, i, tb_va((1 << 20) + (i % 64) * 2048), 2048, u.kb);
    }
    for (unsigned i = 0; i < 500; i++) {
        struct qsw_send_wr wr = ud_wr(&u, i, QSW_WR_SEND_WITH_IMM, 500 + i, QKEY);

        wr.sg_list[0].addr = tb_va(i * 1024);
        tb_fill(u.na, i * 1024, 500 + i, i);
        wr.imm_data = i;
        CHECK_EQ(qsw_post_send(u.a, &wr), 0);
        CHECK(tb_run_idle(u.tb, 1000000000ull));
        for (; got < u.nb->nwc; got++) {
            const struct qsw_wc *wc = &u.nb->wc[got];

            CHECK(wc->status == 0 && wc->byte_len == 40 + 500 + wc->imm_data);
            CHECK(memcmp(u.nb->mem + (1 << 20) + (wc->wr_id % 64) * 2048 + 40,
                         u.na->mem + wc->imm_data * 1024, 500 + wc->imm_data) == 0);
        }
    }
    qsw_engine_stats(u.nb->eng, &st);
    CHECK(st.drop_icrc > 5);
    CHECK(got > 400 && got < 540);
    CHECK_EQ(u.na->nwc, 500);
    tb_free(u.tb);
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_ud_send),
    UNIT_TEST(test_ud_qkey),
    UNIT_TEST(test_ud_lengths),
    UNIT_TEST(test_ud_lossy),
};

int main(void)
{
    return unit_run("test_sw_ud", tests, sizeof(tests) / sizeof(tests[0]));
}
