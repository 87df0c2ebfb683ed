/*
 * Unit tests of the software RoCEv2 engine's RC service over the in-memory
 * wire: every opcode end to end with the data compared byte for byte,
 * segmentation at every path MTU and message sizes around it, several SGEs,
 * inline data, PSN wraparound, RNR NAK and retry (recovered and exceeded),
 * retry exceeded with a dead peer (flush of the rest), remote access and
 * length errors on both sides, duplicate READ/ATOMIC handling (an atomic
 * executes once), fence and max_rd_atomic, unsignaled WRs, SQD and ERR.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdlib.h>

#include "qrdma/qrdma_qp_sm.h"
#include "sw_testbed.h"
#include "unit.h"

int unit_failures;

#define SRC   0                 /* per node memory layout */
#define DST   (8u << 20)
#define MISC  (16u << 20)
#define GUARD 64

struct rc {
    struct tb *tb;
    struct tb_node *na, *nb;
    struct qsw_qp *a, *b;
    uint32_t ka, kb;            /* all-access MR of the whole memory, each side */
};

static void rc_setup_conn(struct rc *r, const struct tb_conn *c)
{
    r->tb = tb_new(false);
    r->na = &r->tb->node[0];
    r->nb = &r->tb->node[1];
    r->a = tb_qp(r->na, 0x11, QSW_QPT_RC, 1, 1024);
    r->b = tb_qp(r->nb, 0x22, QSW_QPT_RC, 1, 1024);
    r->ka = tb_reg_mr(r->na, 1, 0, TB_MEM_SIZE, 0xf);
    r->kb = tb_reg_mr(r->nb, 1, 0, TB_MEM_SIZE, 0xf);
    CHECK(r->a && r->b);
    CHECK_EQ(tb_connect(r->tb, r->a, r->b, c), 0);
}

static void rc_setup(struct rc *r, enum qsw_mtu mtu)
{
    struct tb_conn c = { .mtu = mtu, .psn_a = 100, .psn_b = 5000, .retry_cnt = 7, .rnr_retry = 7 };

    rc_setup_conn(r, &c);
}

static void rc_done(struct rc *r)
{
    tb_free(r->tb);
}

static const struct qsw_wc *wait_wc(struct rc *r, struct tb_node *n, uint64_t wr_id, bool recv)
{
    const struct qsw_wc *wc;

    tb_run(r->tb, NULL, NULL, 0);
    for (int i = 0; i < 2000 && !(wc = tb_find_wc(n, wr_id, recv)); i++) {
        if (!tb_run_wcs(r->tb, n->idx, n->nwc + 1, 10ull * 1000000000)) {
            break;
        }
    }
    wc = tb_find_wc(n, wr_id, recv);
    if (!wc) {
        fprintf(stderr, "  no completion for wr_id %#" PRIx64 " (%s)\n", wr_id, recv ? "recv" : "send");
    }
    return wc;
}

static bool same(struct tb_node *x, uint64_t xoff, struct tb_node *y, uint64_t yoff, uint64_t len)
{
    return memcmp(x->mem + xoff, y->mem + yoff, len) == 0;
}

static bool untouched(struct tb_node *n, uint64_t off, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++) {
        if (n->mem[off + i]) {
            return false;
        }
    }
    return true;
}

/* One message of `op` and `len` bytes from a to b (READ: from b to a); checks data and wcs. */
static void xfer(struct rc *r, enum qsw_wr_opcode op, uint32_t len, uint64_t wr_id)
{
    struct qsw_send_wr wr = tb_wr(wr_id, op, QSW_SEND_SIGNALED);
    const struct qsw_wc *wc;
    bool read = op == QSW_WR_RDMA_READ;
    struct tb_node *src = read ? r->nb : r->na, *dst = read ? r->na : r->nb;

    tb_fill(src, SRC, len, (uint32_t)wr_id);
    memset(dst->mem + DST, 0, (size_t)len + GUARD);
    if (op == QSW_WR_SEND || op == QSW_WR_SEND_WITH_IMM) {
        tb_post_recv(r->b, wr_id, tb_va(DST), len + 7, r->kb);
    }
    if (read) {
        tb_wr_sge(&wr, tb_va(DST), len, r->ka);
        wr.rdma.remote_addr = tb_va(SRC);
        wr.rdma.rkey = r->kb;
    } else {
        tb_wr_sge(&wr, tb_va(SRC), len, r->ka);
        wr.rdma.remote_addr = tb_va(DST);
        wr.rdma.rkey = r->kb;
    }
    wr.imm_data = 0x01020304;
    CHECK_EQ(qsw_post_send(r->a, &wr), 0);
    wc = wait_wc(r, r->na, wr_id, false);
    CHECK(wc && wc->status == QSW_WC_SUCCESS);
    if (wc && wc->status) {
        fprintf(stderr, "  status %s\n", qsw_wc_status_str(wc->status));
    }
    if (op == QSW_WR_SEND || op == QSW_WR_SEND_WITH_IMM) {
        wc = wait_wc(r, r->nb, wr_id, true);
        CHECK(wc && wc->status == QSW_WC_SUCCESS && wc->byte_len == len);
    }
    if (!same(src, SRC, dst, DST, len) || !untouched(dst, DST + len, GUARD)) {
        fprintf(stderr, "  data mismatch: op %d len %u\n", op, len);
        unit_failures++;
    }
}

/* ---- basics -------------------------------------------------------------------------- */

static void test_send_basic(void)
{
    struct rc r;
    const struct qsw_wc *wc;
    struct qsw_stats st;

    rc_setup(&r, QSW_MTU_1024);
    xfer(&r, QSW_WR_SEND, 100, 1);
    wc = tb_find_wc(r.nb, 1, true);
    CHECK(wc && wc->opcode == QSW_WC_RECV && wc->src_qp == 0x11 && wc->qp_num == 0x22 &&
          wc->wc_flags == 0);
    wc = tb_find_wc(r.na, 1, false);
    CHECK(wc && wc->opcode == QSW_WC_SEND && wc->byte_len == 100 && wc->qp_num == 0x11);
    CHECK(tb_run_idle(r.tb, 1000000000ull));
    qsw_engine_stats(r.na->eng, &st);
    CHECK_EQ(st.tx_frames, 1);
    CHECK_EQ(st.retransmits, 0);
    CHECK_EQ(st.rx_acks, 1);
    CHECK_EQ(r.nb->events[QSW_EV_COMM_EST], 0);      /* b was in RTS already */
    rc_done(&r);
}

static void test_all_opcodes(void)
{
    struct rc r;
    const struct qsw_wc *wc;
    struct qsw_send_wr wr;
    uint64_t v;
    uint32_t inv_key;

    rc_setup(&r, QSW_MTU_1024);
    xfer(&r, QSW_WR_SEND, 3000, 1);
    xfer(&r, QSW_WR_SEND_WITH_IMM, 2500, 2);
    wc = tb_find_wc(r.nb, 2, true);
    CHECK(wc && (wc->wc_flags & QSW_WC_WITH_IMM) && wc->imm_data == 0x01020304);
    xfer(&r, QSW_WR_RDMA_WRITE, 5000, 3);
    xfer(&r, QSW_WR_RDMA_READ, 7000, 4);
    wc = tb_find_wc(r.na, 4, false);
    CHECK(wc && wc->opcode == QSW_WC_RDMA_READ && wc->byte_len == 7000);

    /* WRITE_WITH_IMM consumes a receive WR and reports the immediate */
    tb_post_recv(r.b, 5, 0, 0, 0);
    xfer(&r, QSW_WR_RDMA_WRITE_WITH_IMM, 4097, 5);
    wc = wait_wc(&r, r.nb, 5, true);
    CHECK(wc && wc->opcode == QSW_WC_RECV_RDMA_WITH_IMM && wc->imm_data == 0x01020304 &&
          wc->byte_len == 4097 && (wc->wc_flags & QSW_WC_WITH_IMM));

    /* SEND_WITH_INV: the responder invalidates the rkey */
    inv_key = tb_reg_mr(r.nb, 1, MISC, 4096, 0xf);
    tb_post_recv(r.b, 6, tb_va(DST), 64, r.kb);
    wr = tb_wr(6, QSW_WR_SEND_WITH_INV, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(SRC), 33, r.ka);
    wr.invalidate_rkey = inv_key;
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    wc = wait_wc(&r, r.nb, 6, true);
    CHECK(wc && wc->status == 0 && (wc->wc_flags & QSW_WC_WITH_INV) &&
          wc->invalidated_rkey == inv_key && wc->byte_len == 33);
    CHECK(!r.nb->mr[r.nb->nmr - 1].valid);
    wc = wait_wc(&r, r.na, 6, false);
    CHECK(wc && wc->status == 0 && wc->opcode == QSW_WC_SEND);

    /* atomics: CMP_AND_SWP (hit and miss) and FETCH_AND_ADD */
    v = 41;
    memcpy(r.nb->mem + MISC + 4096, &v, 8);
    wr = tb_wr(7, QSW_WR_ATOMIC_FETCH_AND_ADD, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(MISC), 8, r.ka);
    wr.atomic.remote_addr = tb_va(MISC + 4096);
    wr.atomic.rkey = r.kb;
    wr.atomic.compare_add = 1;
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    wc = wait_wc(&r, r.na, 7, false);
    CHECK(wc && wc->status == 0 && wc->opcode == QSW_WC_FETCH_ADD);
    memcpy(&v, r.na->mem + MISC, 8);
    CHECK_EQ(v, 41);
    memcpy(&v, r.nb->mem + MISC + 4096, 8);
    CHECK_EQ(v, 42);

    wr = tb_wr(8, QSW_WR_ATOMIC_CMP_AND_SWP, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(MISC + 8), 8, r.ka);
    wr.atomic.remote_addr = tb_va(MISC + 4096);
    wr.atomic.rkey = r.kb;
    wr.atomic.compare_add = 42;
    wr.atomic.swap = 0x1122334455667788ull;
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    wr.wr_id = 9;
    wr.sg_list[0].addr = tb_va(MISC + 16);
    wr.atomic.compare_add = 42;                     /* no longer equal: no swap */
    wr.atomic.swap = 7;
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    wc = wait_wc(&r, r.na, 9, false);
    CHECK(wc && wc->status == 0 && wc->opcode == QSW_WC_COMP_SWAP);
    memcpy(&v, r.na->mem + MISC + 8, 8);
    CHECK_EQ(v, 42);
    memcpy(&v, r.na->mem + MISC + 16, 8);
    CHECK_EQ(v, 0x1122334455667788ull);
    memcpy(&v, r.nb->mem + MISC + 4096, 8);
    CHECK_EQ(v, 0x1122334455667788ull);
    CHECK_EQ(r.nb->atomics, 3);

    /* LOCAL_INV: the local key goes away; a later use fails locally */
    {
        uint32_t lk = tb_reg_mr(r.na, 1, MISC + 8192, 4096, 0xf);

        wr = tb_wr(10, QSW_WR_LOCAL_INV, QSW_SEND_SIGNALED);
        wr.invalidate_rkey = lk;
        CHECK_EQ(qsw_post_send(r.a, &wr), 0);
        wc = wait_wc(&r, r.na, 10, false);
        CHECK(wc && wc->status == 0 && wc->opcode == QSW_WC_LOCAL_INV);
        CHECK(!r.na->mr[r.na->nmr - 1].valid);
        wr = tb_wr(11, QSW_WR_RDMA_WRITE, QSW_SEND_SIGNALED);
        tb_wr_sge(&wr, tb_va(MISC + 8192), 16, lk);
        wr.rdma.remote_addr = tb_va(DST);
        wr.rdma.rkey = r.kb;
        CHECK_EQ(qsw_post_send(r.a, &wr), 0);
        wc = wait_wc(&r, r.na, 11, false);
        CHECK(wc && wc->status == QSW_WC_LOC_PROT_ERR);
        CHECK_EQ(qsw_qp_state(r.a), QSW_QPS_ERR);
    }
    rc_done(&r);
}

/* ---- segmentation ----------------------------------------------------------------------- */

static void test_segmentation(void)
{
    static const enum qsw_wr_opcode ops[] = { QSW_WR_SEND, QSW_WR_RDMA_WRITE, QSW_WR_RDMA_READ };
    uint64_t id = 1;

    for (enum qsw_mtu m = QSW_MTU_256; m <= QSW_MTU_4096; m++) {
        uint32_t mtu = qsw_mtu_bytes(m);
        uint32_t sizes[] = { 0, 1, mtu - 1, mtu, mtu + 1, 2 * mtu + 3, (3u << 20) + 5 };
        struct rc r;

        rc_setup(&r, m);
        for (size_t o = 0; o < 3; o++) {
            for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
                int before = unit_failures;

                xfer(&r, ops[o], sizes[s], id++);
                if (unit_failures != before) {
                    fprintf(stderr, "  mtu %u op %d size %u\n", mtu, ops[o], sizes[s]);
                }
            }
        }
        {
            struct qsw_stats st;

            qsw_engine_stats(r.na->eng, &st);
            CHECK_EQ(st.retransmits, 0);
            CHECK_EQ(st.drop_malformed + st.drop_icrc + st.drop_out_of_seq, 0);
        }
        rc_done(&r);
    }
}

/* Counts frames by opcode and payload size; checks segment sizes. */
struct seg_tap {
    uint32_t mtu;
    unsigned by_op[256];
    unsigned bad;
};

static bool seg_tap_fn(struct tb *tb, int from, uint8_t *f, size_t *len, void *arg)
{
    struct seg_tap *t = arg;
    uint8_t op = f[14 + 20 + 8];
    unsigned udp_len = (unsigned)f[14 + 20 + 4] << 8 | f[14 + 20 + 5];
    unsigned pad = (f[14 + 20 + 8 + 1] >> 4) & 3;
    unsigned hl = op == 0x06 || op == 0x0a ? 28 : op == 0x0d || op == 0x0f || op == 0x10 ? 16 : 12;
    unsigned pay = udp_len - 8 - 4 - hl - pad;

    t->by_op[op]++;
    if ((op == 0x00 || op == 0x01 || op == 0x06 || op == 0x07 || op == 0x0d || op == 0x0e) &&
        pay != t->mtu) {
        t->bad++;
    }
    if (pay > t->mtu && op != 0x11) {
        t->bad++;
    }
    return false;
}

static void test_segment_opcodes(void)
{
    struct rc r;
    struct seg_tap t = { .mtu = 512 };

    rc_setup(&r, QSW_MTU_512);
    r.tb->tap = seg_tap_fn;
    r.tb->tap_arg = &t;
    xfer(&r, QSW_WR_SEND, 512 * 3 + 1, 1);      /* FIRST MIDDLE MIDDLE LAST */
    xfer(&r, QSW_WR_RDMA_WRITE, 512 * 2, 2);    /* FIRST LAST */
    xfer(&r, QSW_WR_RDMA_READ, 512 * 4 - 1, 3); /* RESP FIRST MIDDLE MIDDLE LAST */
    xfer(&r, QSW_WR_SEND, 512, 4);              /* ONLY */
    xfer(&r, QSW_WR_RDMA_READ, 0, 5);           /* RESP ONLY, empty */
    CHECK_EQ(t.by_op[0x00], 1);
    CHECK_EQ(t.by_op[0x01], 2);
    CHECK_EQ(t.by_op[0x02], 1);
    CHECK_EQ(t.by_op[0x04], 1);
    CHECK_EQ(t.by_op[0x06], 1);
    CHECK_EQ(t.by_op[0x08], 1);
    CHECK_EQ(t.by_op[0x0c], 2);
    CHECK_EQ(t.by_op[0x0d], 1);
    CHECK_EQ(t.by_op[0x0e], 2);
    CHECK_EQ(t.by_op[0x0f], 1);
    CHECK_EQ(t.by_op[0x10], 1);
    CHECK_EQ(t.bad, 0);
    rc_done(&r);
}

static void test_multi_sge(void)
{
    struct rc r;
    struct qsw_send_wr wr;
    struct qsw_recv_wr rw;
    const struct qsw_wc *wc;
    static const uint32_t ssz[] = { 1, 700, 3, 2048, 5 };
    static const uint32_t rsz[] = { 100, 1, 1500, 2000, 1000 };
    uint32_t total = 0, off = 0;

    rc_setup(&r, QSW_MTU_1024);
    tb_fill(r.na, SRC, 1 << 16, 77);
    memset(r.nb->mem + DST, 0, 1 << 16);
    /* SEND gathered from 5 scattered SGEs into 5 other scattered SGEs */
    wr = tb_wr(1, QSW_WR_SEND, QSW_SEND_SIGNALED);
    memset(&rw, 0, sizeof(rw));
    rw.wr_id = 1;
    for (int i = 0; i < 5; i++) {
        tb_wr_sge(&wr, tb_va(SRC + i * 8192), ssz[i], r.ka);
        total += ssz[i];
        rw.sg_list[i].addr = tb_va(DST + i * 8192);
        rw.sg_list[i].length = rsz[i];
        rw.sg_list[i].lkey = r.kb;
    }
    rw.num_sge = 5;
    tb_post_recv_wr(r.b, &rw);
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    wc = wait_wc(&r, r.nb, 1, true);
    CHECK(wc && wc->status == 0 && wc->byte_len == total);
    {
        uint8_t *s = malloc(total), *d = malloc(total);
        uint32_t p = 0;

        for (int i = 0; i < 5; i++) {
            memcpy(s + p, r.na->mem + SRC + i * 8192, ssz[i]);
            p += ssz[i];
        }
        for (int i = 0; i < 5 && off < total; i++) {
            uint32_t c = total - off < rsz[i] ? total - off : rsz[i];

            memcpy(d + off, r.nb->mem + DST + i * 8192, c);
            off += c;
        }
        CHECK(memcmp(s, d, total) == 0);
        free(s);
        free(d);
    }
    /* READ scattered into 3 local SGEs */
    tb_fill(r.nb, SRC, 4000, 5);
    wr = tb_wr(2, QSW_WR_RDMA_READ, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(DST + 100), 1000, r.ka);
    tb_wr_sge(&wr, tb_va(DST + 20000), 1, r.ka);
    tb_wr_sge(&wr, tb_va(DST + 30000), 2999, r.ka);
    wr.rdma.remote_addr = tb_va(SRC);
    wr.rdma.rkey = r.kb;
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    wc = wait_wc(&r, r.na, 2, false);
    CHECK(wc && wc->status == 0);
    CHECK(same(r.na, DST + 100, r.nb, SRC, 1000));
    CHECK(same(r.na, DST + 20000, r.nb, SRC + 1000, 1));
    CHECK(same(r.na, DST + 30000, r.nb, SRC + 1001, 2999));
    rc_done(&r);
}

static void test_inline(void)
{
    struct rc r;
    struct qsw_send_wr wr;
    const struct qsw_wc *wc;
    uint8_t buf[300];

    rc_setup(&r, QSW_MTU_256);
    for (int i = 0; i < 300; i++) {
        buf[i] = (uint8_t)(i * 7 + 1);
    }
    tb_post_recv(r.b, 1, tb_va(DST), 1000, r.kb);
    wr = tb_wr(1, QSW_WR_SEND, QSW_SEND_SIGNALED | QSW_SEND_INLINE);
    wr.inline_data = buf;
    wr.inline_len = 300;                            /* two packets at MTU 256 */
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    memset(buf, 0, sizeof(buf));                    /* copied at post */
    wc = wait_wc(&r, r.nb, 1, true);
    CHECK(wc && wc->status == 0 && wc->byte_len == 300);
    for (int i = 0; i < 300; i++) {
        CHECK_EQ(r.nb->mem[DST + i], (uint8_t)(i * 7 + 1));
        if (r.nb->mem[DST + i] != (uint8_t)(i * 7 + 1)) {
            break;
        }
    }
    wr = tb_wr(2, QSW_WR_RDMA_WRITE, QSW_SEND_SIGNALED | QSW_SEND_INLINE);
    wr.inline_data = "inline write";
    wr.inline_len = 12;
    wr.rdma.remote_addr = tb_va(DST + 4096);
    wr.rdma.rkey = r.kb;
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    wc = wait_wc(&r, r.na, 2, false);
    CHECK(wc && wc->status == 0);
    CHECK(memcmp(r.nb->mem + DST + 4096, "inline write", 12) == 0);
    /* too long for the QP's max_inline, or inline READ: refused at post */
    wr.inline_len = 513;
    CHECK_EQ(qsw_post_send(r.a, &wr), -QSW_EINVAL);
    wr = tb_wr(3, QSW_WR_RDMA_READ, QSW_SEND_INLINE);
    CHECK_EQ(qsw_post_send(r.a, &wr), -QSW_EINVAL);
    rc_done(&r);
}

static void test_psn_wrap(void)
{
    struct tb_conn c = { .mtu = QSW_MTU_256, .psn_a = 0xfffff0, .psn_b = 0xfffffe,
                         .retry_cnt = 7, .rnr_retry = 7 };
    struct rc r;
    struct qsw_qp_attr attr;

    rc_setup_conn(&r, &c);
    xfer(&r, QSW_WR_SEND, 256 * 40, 1);             /* crosses 0xffffff -> 0 */
    xfer(&r, QSW_WR_RDMA_READ, 256 * 30 + 1, 2);
    xfer(&r, QSW_WR_RDMA_WRITE, 256 * 5, 3);
    qsw_qp_query(r.a, &attr);
    CHECK_EQ(attr.sq_psn, (0xfffff0 + 40 + 31 + 5) & 0xffffff);
    qsw_qp_query(r.b, &attr);
    CHECK_EQ(attr.rq_psn, (0xfffff0 + 40 + 31 + 5) & 0xffffff);
    rc_done(&r);
}

/* ---- RNR --------------------------------------------------------------------------------- */

static void test_rnr_recover(void)
{
    struct rc r;
    struct qsw_send_wr wr = tb_wr(1, QSW_WR_SEND, QSW_SEND_SIGNALED);
    const struct qsw_wc *wc;
    struct qsw_stats st;

    rc_setup(&r, QSW_MTU_1024);
    tb_fill(r.na, SRC, 3000, 1);
    tb_wr_sge(&wr, tb_va(SRC), 3000, r.ka);
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    tb_run(r.tb, NULL, NULL, 5000000);              /* 5 ms of RNR NAKs and waits */
    CHECK(!tb_find_wc(r.na, 1, false));
    qsw_engine_stats(r.nb->eng, &st);
    CHECK(st.tx_rnr_naks >= 2);
    tb_post_recv(r.b, 1, tb_va(DST), 4096, r.kb);   /* the receiver posts late */
    wc = wait_wc(&r, r.na, 1, false);
    CHECK(wc && wc->status == 0);
    wc = wait_wc(&r, r.nb, 1, true);
    CHECK(wc && wc->status == 0 && wc->byte_len == 3000);
    CHECK(same(r.na, SRC, r.nb, DST, 3000));
    rc_done(&r);
}

static void test_rnr_exceeded(void)
{
    struct tb_conn c = { .mtu = QSW_MTU_1024, .psn_a = 1, .psn_b = 2, .retry_cnt = 7,
                         .rnr_retry = 3, .min_rnr_timer = 14 };
    struct rc r;
    struct qsw_send_wr wr = tb_wr(1, QSW_WR_SEND, QSW_SEND_SIGNALED);
    const struct qsw_wc *wc;
    struct qsw_stats st;
    uint64_t t0;

    rc_setup_conn(&r, &c);
    tb_wr_sge(&wr, tb_va(SRC), 10, r.ka);
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    wr.wr_id = 2;
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    t0 = r.tb->now;
    wc = wait_wc(&r, r.na, 1, false);
    CHECK(wc && wc->status == QSW_WC_RNR_RETRY_EXC_ERR);
    wc = tb_find_wc(r.na, 2, false);
    CHECK(wc && wc->status == QSW_WC_WR_FLUSH_ERR);
    CHECK_EQ(qsw_qp_state(r.a), QSW_QPS_ERR);
    qsw_engine_stats(r.nb->eng, &st);
    CHECK_EQ(st.tx_rnr_naks, 4);                    /* the first try and 3 retries */
    /* timer code 14 is 1.28 ms: three waits */
    CHECK(r.tb->now - t0 >= 3 * 1280000ull && r.tb->now - t0 < 4 * 1280000ull);
    rc_done(&r);
}

/* ---- retry exceeded --------------------------------------------------------------------- */

static void test_retry_exceeded(void)
{
    struct tb_conn c = { .mtu = QSW_MTU_1024, .psn_a = 1, .psn_b = 2, .retry_cnt = 3,
                         .rnr_retry = 7, .timeout = 12 };
    struct rc r;
    struct qsw_send_wr wr;
    const struct qsw_wc *wc;
    struct qsw_stats st;
    uint64_t t0;

    rc_setup_conn(&r, &c);
    xfer(&r, QSW_WR_RDMA_WRITE, 100, 1);            /* the peer is there */
    r.tb->drop_all = true;                          /* and now it is gone */
    t0 = r.tb->now;
    for (uint64_t id = 2; id < 6; id++) {
        wr = tb_wr(id, id == 3 ? QSW_WR_RDMA_READ : QSW_WR_RDMA_WRITE, QSW_SEND_SIGNALED);
        tb_wr_sge(&wr, tb_va(SRC), 3000, r.ka);
        wr.rdma.remote_addr = tb_va(DST);
        wr.rdma.rkey = r.kb;
        CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    }
    wc = wait_wc(&r, r.na, 2, false);
    CHECK(wc && wc->status == QSW_WC_RETRY_EXC_ERR);
    for (uint64_t id = 3; id < 6; id++) {
        wc = tb_find_wc(r.na, id, false);
        CHECK(wc && wc->status == QSW_WC_WR_FLUSH_ERR);
    }
    CHECK_EQ(qsw_qp_state(r.a), QSW_QPS_ERR);
    qsw_engine_stats(r.na->eng, &st);
    CHECK_EQ(st.timeouts, 4);                       /* first try + 3 retries */
    /* 4.096 us * 2^12 = 16.8 ms per try */
    CHECK(r.tb->now - t0 >= 4 * 16777216ull && r.tb->now - t0 < 5 * 16777216ull);
    /* posting in ERR completes at once with a flush */
    wr = tb_wr(9, QSW_WR_SEND, 0);
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    wc = tb_find_wc(r.na, 9, false);
    CHECK(wc && wc->status == QSW_WC_WR_FLUSH_ERR);
    CHECK(tb_run_idle(r.tb, 1000000000ull));
    rc_done(&r);
}

/*
 * With a stall floor the retries go on past retry_cnt until the requester
 * has gone that long without progress: a peer that answers late, within
 * the floor, is not declared dead; one that never answers is, at the floor.
 */
static void post_write(struct rc *r, uint64_t id, uint32_t len)
{
    struct qsw_send_wr wr = tb_wr(id, QSW_WR_RDMA_WRITE, QSW_SEND_SIGNALED);

    tb_wr_sge(&wr, tb_va(SRC), len, r->ka);
    wr.rdma.remote_addr = tb_va(DST);
    wr.rdma.rkey = r->kb;
    CHECK_EQ(qsw_post_send(r->a, &wr), 0);
}

static void test_stall_floor(void)
{
    struct tb_conn c = { .mtu = QSW_MTU_1024, .psn_a = 1, .psn_b = 2, .retry_cnt = 3,
                         .rnr_retry = 7, .timeout = 12 };
    const uint64_t floor = 500000000ull, try_ns = 16777216ull;     /* 0.5 s; 2^12 * 4.096 us */
    struct rc r;
    const struct qsw_wc *wc;
    struct qsw_stats st;
    uint64_t t0;

    rc_setup_conn(&r, &c);
    qsw_engine_set_stall_floor(r.na->eng, floor);
    xfer(&r, QSW_WR_RDMA_WRITE, 100, 1);

    /* Silent for 0.3 s (18 tries' worth): the WRITE still completes. */
    r.tb->drop_all = true;
    post_write(&r, 2, 3000);
    tb_run(r.tb, NULL, NULL, 300000000ull);
    CHECK(!tb_find_wc(r.na, 2, false));
    r.tb->drop_all = false;
    wc = wait_wc(&r, r.na, 2, false);
    CHECK(wc && wc->status == QSW_WC_SUCCESS);
    qsw_engine_stats(r.na->eng, &st);
    CHECK(st.stall_retries > 0);
    CHECK_EQ(qsw_qp_state(r.a), QSW_QPS_RTS);

    /* Progress refilled the budget; now the peer is gone for good. */
    r.tb->drop_all = true;
    t0 = r.tb->now;
    post_write(&r, 3, 3000);
    wc = wait_wc(&r, r.na, 3, false);
    CHECK(wc && wc->status == QSW_WC_RETRY_EXC_ERR);
    CHECK(r.tb->now - t0 >= floor && r.tb->now - t0 < floor + 2 * try_ns);
    CHECK_EQ(qsw_qp_state(r.a), QSW_QPS_ERR);
    rc_done(&r);
}

/* ---- errors --------------------------------------------------------------------------------- */

static void remote_error_case(enum qsw_wr_opcode op, uint32_t mr_access, uint64_t off, uint32_t len,
                              bool bad_key, uint32_t qp_access, uint32_t want)
{
    struct tb_conn c = { .mtu = QSW_MTU_1024, .psn_a = 1, .psn_b = 2, .retry_cnt = 7,
                         .rnr_retry = 7, .access = qp_access };
    struct rc r;
    struct qsw_send_wr wr;
    const struct qsw_wc *wc;
    uint32_t rk;

    rc_setup_conn(&r, &c);
    rk = tb_reg_mr(r.nb, 1, MISC, 8192, mr_access);
    wr = tb_wr(1, op, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(SRC), len, r.ka);
    wr.rdma.remote_addr = tb_va(MISC + off);
    wr.rdma.rkey = bad_key ? 0xdead : rk;
    wr.atomic.remote_addr = tb_va(MISC + off);
    wr.atomic.rkey = bad_key ? 0xdead : rk;
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    wr.wr_id = 2;
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    wc = wait_wc(&r, r.na, 1, false);
    CHECK(wc && wc->status == want);
    if (wc && wc->status != want) {
        fprintf(stderr, "  op %d: got %s, want %s\n", op, qsw_wc_status_str(wc->status),
                qsw_wc_status_str(want));
    }
    wc = tb_find_wc(r.na, 2, false);
    CHECK(wc && wc->status == QSW_WC_WR_FLUSH_ERR);
    CHECK_EQ(qsw_qp_state(r.a), QSW_QPS_ERR);
    CHECK_EQ(qsw_qp_state(r.b), QSW_QPS_ERR);
    CHECK(untouched(r.nb, MISC, 8192));
    rc_done(&r);
}

/*
 * The peer vanishes during a message longer than the send window (1 MB at
 * MTU 1024: 1024 packets, 256 in flight): the requester's cursor is still
 * on that first WQE when the retries run out, and the error must be
 * reported on it, not as a QP fatal event with every WR flushed.
 */
static void test_retry_exceeded_mid_message(void)
{
    struct tb_conn c = { .mtu = QSW_MTU_1024, .psn_a = 1, .psn_b = 2, .retry_cnt = 2,
                         .rnr_retry = 7, .timeout = 12 };
    struct rc r;
    struct qsw_send_wr wr;
    const struct qsw_wc *wc;

    rc_setup_conn(&r, &c);
    r.tb->drop_all = true;
    for (uint64_t id = 1; id <= 3; id++) {
        wr = tb_wr(id, QSW_WR_RDMA_WRITE, id == 2 ? QSW_SEND_SIGNALED : 0);
        tb_wr_sge(&wr, tb_va(SRC), 1u << 20, r.ka);
        wr.rdma.remote_addr = tb_va(DST);
        wr.rdma.rkey = r.kb;
        CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    }
    wc = wait_wc(&r, r.na, 1, false);
    CHECK(wc && wc->status == QSW_WC_RETRY_EXC_ERR);
    for (uint64_t id = 2; id <= 3; id++) {
        wc = tb_find_wc(r.na, id, false);
        CHECK(wc && wc->status == QSW_WC_WR_FLUSH_ERR);
    }
    CHECK_EQ(qsw_qp_state(r.a), QSW_QPS_ERR);
    CHECK(tb_run_idle(r.tb, 1000000000ull));
    rc_done(&r);
}

static void test_remote_access_errors(void)
{
    const uint32_t all = 0xf, rw = QSW_ACCESS_REMOTE_WRITE | QSW_ACCESS_REMOTE_READ |
                                   QSW_ACCESS_REMOTE_ATOMIC;

    /* bad rkey */
    remote_error_case(QSW_WR_RDMA_WRITE, all, 0, 100, true, rw, QSW_WC_REM_ACCESS_ERR);
    remote_error_case(QSW_WR_RDMA_READ, all, 0, 100, true, rw, QSW_WC_REM_ACCESS_ERR);
    remote_error_case(QSW_WR_ATOMIC_FETCH_AND_ADD, all, 0, 8, true, rw, QSW_WC_REM_ACCESS_ERR);
    /* out of bounds (the first packet is in bounds: the whole range is checked first) */
    remote_error_case(QSW_WR_RDMA_WRITE, all, 4096, 5000, false, rw, QSW_WC_REM_ACCESS_ERR);
    remote_error_case(QSW_WR_RDMA_READ, all, 8000, 193, false, rw, QSW_WC_REM_ACCESS_ERR);
    remote_error_case(QSW_WR_ATOMIC_CMP_AND_SWP, all, 8192, 8, false, rw, QSW_WC_REM_ACCESS_ERR);
    /* the MR does not allow it */
    remote_error_case(QSW_WR_RDMA_WRITE, QSW_ACCESS_REMOTE_READ | 1, 0, 10, false, rw,
                      QSW_WC_REM_ACCESS_ERR);
    remote_error_case(QSW_WR_RDMA_READ, QSW_ACCESS_REMOTE_WRITE | 1, 0, 10, false, rw,
                      QSW_WC_REM_ACCESS_ERR);
    remote_error_case(QSW_WR_ATOMIC_FETCH_AND_ADD, QSW_ACCESS_REMOTE_WRITE | 1, 0, 8, false, rw,
                      QSW_WC_REM_ACCESS_ERR);
    /* the QP does not allow it */
    remote_error_case(QSW_WR_RDMA_WRITE, all, 0, 10, false, QSW_ACCESS_REMOTE_READ,
                      QSW_WC_REM_ACCESS_ERR);
    remote_error_case(QSW_WR_RDMA_READ, all, 0, 10, false, QSW_ACCESS_REMOTE_WRITE,
                      QSW_WC_REM_ACCESS_ERR);
    /* a misaligned atomic is an invalid request */
    remote_error_case(QSW_WR_ATOMIC_FETCH_AND_ADD, all, 4, 8, false, rw, QSW_WC_REM_INV_REQ_ERR);
}

static void test_responder_length_error(void)
{
    struct rc r;
    struct qsw_send_wr wr = tb_wr(1, QSW_WR_SEND, QSW_SEND_SIGNALED);
    const struct qsw_wc *wc;

    rc_setup(&r, QSW_MTU_1024);
    tb_post_recv(r.b, 50, tb_va(DST), 2000, r.kb);
    tb_post_recv(r.b, 51, tb_va(DST + 4096), 2000, r.kb);
    tb_wr_sge(&wr, tb_va(SRC), 2500, r.ka);
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    wc = wait_wc(&r, r.na, 1, false);
    CHECK(wc && wc->status == QSW_WC_REM_INV_REQ_ERR);
    wc = tb_find_wc(r.nb, 50, true);
    CHECK(wc && wc->status == QSW_WC_LOC_LEN_ERR);
    CHECK_EQ(qsw_qp_state(r.b), QSW_QPS_ERR);
    CHECK_EQ(qsw_qp_state(r.a), QSW_QPS_ERR);
    CHECK_EQ(tb_rq_count(r.b), 1);                  /* the embedder flushes its own RQ */
    rc_done(&r);
}

static void test_local_length_error(void)
{
    struct rc r;
    struct qsw_send_wr wr = tb_wr(1, QSW_WR_SEND, QSW_SEND_SIGNALED);
    const struct qsw_wc *wc;

    rc_setup(&r, QSW_MTU_1024);
    /* an SGE past the end of its MR: the requester's sge_read refuses */
    tb_wr_sge(&wr, tb_va(TB_MEM_SIZE - 100), 200, r.ka);
    tb_post_recv(r.b, 1, tb_va(DST), 4096, r.kb);
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    wc = wait_wc(&r, r.na, 1, false);
    CHECK(wc && wc->status == QSW_WC_LOC_PROT_ERR);
    CHECK_EQ(qsw_qp_state(r.a), QSW_QPS_ERR);
    rc_done(&r);
}

/* ---- duplicates: READ re-executed, ATOMIC replayed ------------------------------------------ */

struct drop_tap {
    uint8_t opcode;             /* drop frames with this opcode ... */
    unsigned skip, count;       /* ... after skipping `skip`, `count` of them */
    unsigned seen;
};

static bool drop_tap_fn(struct tb *tb, int from, uint8_t *f, size_t *len, void *arg)
{
    struct drop_tap *t = arg;

    if (f[14 + 20 + 8] != t->opcode) {
        return false;
    }
    t->seen++;
    return t->seen > t->skip && t->seen <= t->skip + t->count;
}

static void test_duplicate_atomic(void)
{
    struct rc r;
    struct drop_tap t = { .opcode = 0x12, .skip = 0, .count = 2 };     /* ATOMIC ACKNOWLEDGE */
    struct qsw_send_wr wr;
    const struct qsw_wc *wc;
    struct qsw_stats st;
    uint64_t v = 1000;

    rc_setup(&r, QSW_MTU_1024);
    r.tb->tap = drop_tap_fn;
    r.tb->tap_arg = &t;
    memcpy(r.nb->mem + MISC, &v, 8);
    wr = tb_wr(1, QSW_WR_ATOMIC_FETCH_AND_ADD, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(MISC), 8, r.ka);
    wr.atomic.remote_addr = tb_va(MISC);
    wr.atomic.rkey = r.kb;
    wr.atomic.compare_add = 5;
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    wc = wait_wc(&r, r.na, 1, false);
    CHECK(wc && wc->status == 0);
    CHECK_EQ(r.nb->atomics, 1);                     /* executed exactly once */
    memcpy(&v, r.nb->mem + MISC, 8);
    CHECK_EQ(v, 1005);
    memcpy(&v, r.na->mem + MISC, 8);
    CHECK_EQ(v, 1000);                              /* the replayed original value */
    qsw_engine_stats(r.nb->eng, &st);
    CHECK_EQ(st.duplicates, 2);
    CHECK_EQ(st.tx_atomic_acks, 3);
    rc_done(&r);
}

static void test_duplicate_read(void)
{
    struct rc r;
    struct drop_tap t = { .opcode = 0x0e, .skip = 3, .count = 1 };     /* one READ RESPONSE MIDDLE */
    struct qsw_stats st;

    rc_setup(&r, QSW_MTU_256);
    r.tb->tap = drop_tap_fn;
    r.tb->tap_arg = &t;
    xfer(&r, QSW_WR_RDMA_READ, 256 * 10, 1);
    qsw_engine_stats(r.na->eng, &st);
    CHECK_EQ(st.retransmits, 1);                    /* one READ request resent, from the gap */
    qsw_engine_stats(r.nb->eng, &st);
    CHECK_EQ(st.tx_read_resp, 10 + 6);              /* the rest re-executed from PSN 5 on */
    /* and a whole READ lost with its ACKed successor: resent after the ACK */
    t.opcode = 0x10;
    t.skip = 0;
    t.seen = 0;
    t.count = 1;
    xfer(&r, QSW_WR_RDMA_READ, 100, 2);
    rc_done(&r);
}

static void test_duplicate_send_acked(void)
{
    struct rc r;
    struct drop_tap t = { .opcode = 0x11, .skip = 0, .count = 1 };     /* the first ACK */
    struct qsw_stats st;

    rc_setup(&r, QSW_MTU_1024);
    r.tb->tap = drop_tap_fn;
    r.tb->tap_arg = &t;
    xfer(&r, QSW_WR_SEND, 5000, 1);
    qsw_engine_stats(r.nb->eng, &st);
    CHECK(st.duplicates >= 1);                      /* the resent packets were duplicates ... */
    CHECK_EQ(r.nb->nwc, 1);                         /* ... and delivered nothing twice */
    rc_done(&r);
}

/* ---- ordering rules -------------------------------------------------------------------------- */

struct rd_tap {
    int outstanding, max;
};

static bool rd_tap_fn(struct tb *tb, int from, uint8_t *f, size_t *len, void *arg)
{
    struct rd_tap *t = arg;
    uint8_t op = f[14 + 20 + 8];

    if (op == 0x0c) {
        t->outstanding++;
        if (t->outstanding > t->max) {
            t->max = t->outstanding;
        }
    } else if (op == 0x0f || op == 0x10) {
        t->outstanding--;
    }
    return false;
}

static void test_max_rd_atomic_and_fence(void)
{
    struct tb_conn c = { .mtu = QSW_MTU_1024, .psn_a = 1, .psn_b = 2, .retry_cnt = 7,
                         .rnr_retry = 7, .max_rd_atomic = 2 };
    struct rc r;
    struct rd_tap t = { 0, 0 };
    struct qsw_send_wr wr;
    const struct qsw_wc *wc;

    rc_setup_conn(&r, &c);
    r.tb->tap = rd_tap_fn;
    r.tb->tap_arg = &t;
    tb_fill(r.nb, SRC, 1 << 16, 3);
    for (uint64_t i = 0; i < 16; i++) {
        wr = tb_wr(i, QSW_WR_RDMA_READ, QSW_SEND_SIGNALED);
        tb_wr_sge(&wr, tb_va(DST + i * 4096), 3000, r.ka);
        wr.rdma.remote_addr = tb_va(SRC + i * 4096);
        wr.rdma.rkey = r.kb;
        CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    }
    /* a fenced WRITE of what the READs brought in waits for all of them */
    wr = tb_wr(100, QSW_WR_RDMA_WRITE, QSW_SEND_SIGNALED | QSW_SEND_FENCE);
    tb_wr_sge(&wr, tb_va(DST), 16 * 4096, r.ka);
    wr.rdma.remote_addr = tb_va(DST);
    wr.rdma.rkey = r.kb;
    CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    wc = wait_wc(&r, r.na, 100, false);
    CHECK(wc && wc->status == 0);
    CHECK_EQ(t.max, 2);
    for (uint64_t i = 0; i < 16; i++) {
        CHECK(same(r.nb, DST + i * 4096, r.nb, SRC + i * 4096, 3000));
    }
    /* completions in posting order */
    CHECK_EQ(r.na->nwc, 17);
    for (size_t i = 0; i < r.na->nwc && i < 16; i++) {
        CHECK_EQ(r.na->wc[i].wr_id, i);
    }
    rc_done(&r);
}

static void test_responder_resources(void)
{
    struct rc r;
    struct qsw_qp_attr a;
    struct qsw_send_wr wr;
    const struct qsw_wc *wc;

    rc_setup(&r, QSW_MTU_256);
    memset(&a, 0, sizeof(a));
    a.max_dest_rd_atomic = 1;
    CHECK_EQ(qsw_qp_modify(r.b, &a, QSW_QP_MAX_DEST_RD_ATOMIC), 0);
    /* the requester allows 16, the responder keeps 1: the second READ finds it busy */
    for (uint64_t i = 1; i <= 2; i++) {
        wr = tb_wr(i, QSW_WR_RDMA_READ, QSW_SEND_SIGNALED);
        tb_wr_sge(&wr, tb_va(DST + i * 8192), 4096, r.ka);
        wr.rdma.remote_addr = tb_va(SRC);
        wr.rdma.rkey = r.kb;
        CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    }
    wc = wait_wc(&r, r.na, 2, false);
    CHECK(wc && wc->status == QSW_WC_REM_INV_REQ_ERR);
    wc = tb_find_wc(r.na, 1, false);
    CHECK(wc && wc->status == QSW_WC_SUCCESS);      /* the first READ was answered in full */
    CHECK_EQ(r.nb->events[QSW_EV_QP_REQ_ERR], 1);
    CHECK_EQ(qsw_qp_state(r.b), QSW_QPS_ERR);
    rc_done(&r);
}

/* Many small messages in one burst: one coalesced ACK, not one per message. */
static void test_ack_coalescing(void)
{
    struct rc r;
    struct qsw_stats st;

    rc_setup(&r, QSW_MTU_1024);
    for (uint64_t i = 0; i < 48; i++) {
        struct qsw_send_wr wr = tb_wr(i, QSW_WR_RDMA_WRITE, QSW_SEND_SIGNALED);

        tb_wr_sge(&wr, tb_va(SRC), 16, r.ka);
        wr.rdma.remote_addr = tb_va(DST + i * 16);
        wr.rdma.rkey = r.kb;
        CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    }
    CHECK(tb_run_wcs(r.tb, 0, 48, 1000000000ull));
    qsw_engine_stats(r.nb->eng, &st);
    CHECK(st.tx_acks >= 1 && st.tx_acks <= 4);
    rc_done(&r);
}

/*
 * The consumer stops the responder's QP (destroy, RESET, a modify to ERR)
 * after a message completed there but before the poll that would send its
 * coalesced ACK: the ACK leaves with the stop, and the requester completes
 * the SEND with success instead of retrying it into RETRY_EXC_ERR (or, as
 * iSER's logout did, flushing it when the disconnect that follows reaches
 * it first). qsw_qp_fail(), the embedder's own error, acknowledges nothing
 * more (test_core_dp's test_cq_overflow: a message whose completion was
 * lost must not be acknowledged): the requester retries into
 * RETRY_EXC_ERR.
 */
enum stop_how { STOP_DESTROY, STOP_MODIFY, STOP_FAIL };

static void test_ack_on_stop(void)
{
    /*
     * The consumer's stops (destroy, modify to RESET or ERR) send the ACK
     * B owes, so A's SEND completes without a retransmit; the device's
     * own failure of the QP (qsw_qp_fail) drops it, so A retries and
     * gives up.
     */
    static const struct {
        const char *name;
        enum stop_how how;
        enum qsw_qp_state to;           /* for STOP_MODIFY */
        enum qsw_wc_status want;
        bool retransmits;
    } cases[] = {
        { "destroy", STOP_DESTROY, 0, QSW_WC_SUCCESS, false },
        { "RESET", STOP_MODIFY, QSW_QPS_RESET, QSW_WC_SUCCESS, false },
        { "ERR", STOP_MODIFY, QSW_QPS_ERR, QSW_WC_SUCCESS, false },
        { "qsw_qp_fail", STOP_FAIL, 0, QSW_WC_RETRY_EXC_ERR, true },
    };

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct qsw_send_wr wr = tb_wr(1, QSW_WR_SEND, QSW_SEND_SIGNALED);
        struct qsw_qp_attr at = { .qp_state = cases[k].to };
        const struct qsw_wc *wc;
        struct qsw_stats st;
        struct rc r;

        rc_setup(&r, QSW_MTU_1024);
        tb_post_recv(r.b, 1, tb_va(DST), 4096, r.kb);
        tb_wr_sge(&wr, tb_va(SRC), 3000, r.ka);
        CHECK_EQ(qsw_post_send(r.a, &wr), 0);
        qsw_engine_poll(r.na->eng, r.tb->budget);   /* the SEND's packets onto the wire */
        tb_deliver(r.tb);                       /* b completes it, the ACK pending */
        wc = tb_find_wc(r.nb, 1, true);
        CHECK(wc && wc->status == QSW_WC_SUCCESS);
        switch (cases[k].how) {
        case STOP_DESTROY:
            qsw_qp_destroy(r.b);
            r.b = NULL;
            break;
        case STOP_MODIFY:
            CHECK_EQ(qsw_qp_modify(r.b, &at, QSW_QP_STATE), 0);
            CHECK_EQ(qsw_qp_state(r.b), cases[k].to);
            break;
        case STOP_FAIL:
            qsw_qp_fail(r.b);
            CHECK_EQ(qsw_qp_state(r.b), QSW_QPS_ERR);
            break;
        }
        wc = wait_wc(&r, r.na, 1, false);
        CHECK(wc && wc->status == cases[k].want);
        if (!wc || wc->status != cases[k].want) {
            fprintf(stderr, "  after %s: %s\n", cases[k].name,
                    wc ? qsw_wc_status_str(wc->status) : "none");
        }
        qsw_engine_stats(r.na->eng, &st);
        if (cases[k].retransmits) {
            CHECK(st.retransmits > 0);
        } else {
            CHECK_EQ(st.retransmits, 0);
        }
        rc_done(&r);
    }
}

/* A lost packet in a long message: one NAK for the gap, not one per packet after it. */
static void test_one_nak_per_gap(void)
{
    struct rc r;
    struct drop_tap t = { .opcode = 0x07, .skip = 2, .count = 1 };     /* one WRITE MIDDLE */
    struct qsw_stats sa, sb;

    rc_setup(&r, QSW_MTU_256);
    r.tb->tap = drop_tap_fn;
    r.tb->tap_arg = &t;
    xfer(&r, QSW_WR_RDMA_WRITE, 256 * 30, 1);
    qsw_engine_stats(r.na->eng, &sa);
    qsw_engine_stats(r.nb->eng, &sb);
    CHECK_EQ(sb.tx_naks_seq, 1);
    CHECK(sb.drop_out_of_seq >= 20);
    CHECK_EQ(sa.rx_naks_seq, 1);
    CHECK_EQ(sa.timeouts, 0);
    CHECK_EQ(sa.retransmits, 30 - 3);               /* go-back-N from the lost one */
    rc_done(&r);
}

/* The first packet a QP receives in RTR raises COMM_EST; an RTR QP answers but does not send. */
static void test_comm_est_in_rtr(void)
{
    struct rc r;
    struct qsw_qp_attr a;
    const struct qsw_wc *wc;

    rc_setup(&r, QSW_MTU_1024);
    CHECK_EQ(qsw_qp_query(r.b, &a), 0);
    a.qp_state = QSW_QPS_RESET;
    CHECK_EQ(qsw_qp_modify(r.b, &a, QSW_QP_STATE), 0);
    a.qp_state = QSW_QPS_INIT;
    CHECK_EQ(qsw_qp_modify(r.b, &a, QSW_QP_STATE | QSW_QP_ACCESS_FLAGS), 0);
    a.qp_state = QSW_QPS_RTR;
    CHECK_EQ(qsw_qp_modify(r.b, &a, QSW_QP_STATE), -QSW_EINVAL);   /* AV, MTU ... missing */
    CHECK_EQ(qsw_qp_modify(r.b, &a, QSW_QP_STATE | QSW_QP_AV | QSW_QP_PATH_MTU |
                                        QSW_QP_DEST_QPN | QSW_QP_RQ_PSN), 0);
    xfer(&r, QSW_WR_RDMA_WRITE, 3000, 1);
    xfer(&r, QSW_WR_SEND, 10, 2);
    CHECK_EQ(r.nb->events[QSW_EV_COMM_EST], 1);
    CHECK_EQ(qsw_qp_state(r.b), QSW_QPS_RTR);
    {
        struct qsw_send_wr wr = tb_wr(3, QSW_WR_SEND, QSW_SEND_SIGNALED);
        struct qsw_qp_attr pa;

        CHECK_EQ(qsw_post_send(r.b, &wr), 0);           /* queued until RTS */
        CHECK(tb_run_idle(r.tb, 1000000000ull));
        CHECK(!tb_find_wc(r.nb, 3, false));
        tb_post_recv(r.a, 3, tb_va(DST), 100, r.ka);
        CHECK_EQ(qsw_qp_query(r.a, &pa), 0);
        a.qp_state = QSW_QPS_RTS;
        a.sq_psn = pa.rq_psn;                           /* what a expects next */
        CHECK_EQ(qsw_qp_modify(r.b, &a, QSW_QP_STATE | QSW_QP_SQ_PSN), 0);
        wc = wait_wc(&r, r.nb, 3, false);
        CHECK(wc && wc->status == 0);
    }
    rc_done(&r);
}

static void test_unsignaled_and_sqd(void)
{
    struct rc r;
    struct qsw_send_wr wr;
    struct qsw_qp_attr a;

    rc_setup(&r, QSW_MTU_1024);
    for (uint64_t i = 0; i < 10; i++) {
        wr = tb_wr(i, QSW_WR_RDMA_WRITE, i == 9 ? QSW_SEND_SIGNALED : 0);
        tb_wr_sge(&wr, tb_va(SRC), 2000, r.ka);
        wr.rdma.remote_addr = tb_va(DST);
        wr.rdma.rkey = r.kb;
        CHECK_EQ(qsw_post_send(r.a, &wr), 0);
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = QSW_QPS_SQD;
    CHECK_EQ(qsw_qp_modify(r.a, &a, QSW_QP_STATE), 0);
    CHECK(tb_run_idle(r.tb, 1000000000ull));
    CHECK_EQ(r.na->nwc, 0);                         /* SQD: nothing started */
    CHECK_EQ(r.na->events[QSW_EV_SQ_DRAINED], 1);
    a.qp_state = QSW_QPS_RTS;
    CHECK_EQ(qsw_qp_modify(r.a, &a, QSW_QP_STATE), 0);
    CHECK(tb_run_idle(r.tb, 1000000000ull));
    CHECK_EQ(r.na->nwc, 1);
    CHECK_EQ(r.na->wc[0].wr_id, 9);
    /* bad transitions are refused */
    a.qp_state = QSW_QPS_INIT;
    CHECK_EQ(qsw_qp_modify(r.a, &a, QSW_QP_STATE), -QSW_EINVAL);
    a.qp_state = QSW_QPS_RESET;
    CHECK_EQ(qsw_qp_modify(r.a, &a, QSW_QP_STATE), 0);
    CHECK_EQ(qsw_post_send(r.a, &wr), -QSW_EINVAL);
    rc_done(&r);
}

static void test_qp_table(void)
{
    struct tb *tb = tb_new(false);
    struct qsw_engine *eng = tb->node[0].eng;
    struct qsw_qp *qps[2000];

    for (uint32_t i = 0; i < 2000; i++) {
        qps[i] = qsw_qp_create(eng, i * 7 + 2, QSW_QPT_RC, 1, NULL, NULL);
        CHECK(qps[i] != NULL);
    }
    CHECK(qsw_qp_create(eng, 2, QSW_QPT_RC, 1, NULL, NULL) == NULL);     /* in use */
    CHECK(qsw_qp_create(eng, 0x1000000, QSW_QPT_RC, 1, NULL, NULL) == NULL);
    for (uint32_t i = 0; i < 2000; i++) {
        CHECK(qsw_qp_lookup(eng, i * 7 + 2) == qps[i]);
    }
    for (uint32_t i = 0; i < 2000; i += 2) {
        qsw_qp_destroy(qps[i]);
    }
    for (uint32_t i = 0; i < 2000; i++) {
        CHECK(qsw_qp_lookup(eng, i * 7 + 2) == (i % 2 ? qps[i] : NULL));
    }
    tb_free(tb);
}

/*
 * A post refused for a full send queue is followed by one sq_space call
 * once a slot is free, also when the WRs that left were unsignaled (no
 * completion says so) or flushed: the device feeds a deeper guest ring
 * through a 128-WR queue this way.
 */
static void test_sq_space(void)
{
    struct tb_conn c = { .mtu = QSW_MTU_1024, .psn_a = 100, .psn_b = 5000, .retry_cnt = 7,
                         .rnr_retry = 7 };
    struct tb *tb = tb_new(false);
    struct tb_node *na = &tb->node[0];
    struct qsw_qp *a = tb_qp(na, 0x11, QSW_QPT_RC, 1, 4);
    struct qsw_qp *b = tb_qp(&tb->node[1], 0x22, QSW_QPT_RC, 1, 4);
    uint32_t ka = tb_reg_mr(na, 1, 0, TB_MEM_SIZE, 0xf);
    uint32_t kb = tb_reg_mr(&tb->node[1], 1, 0, TB_MEM_SIZE, 0xf);
    struct qsw_send_wr wr = tb_wr(1, QSW_WR_RDMA_WRITE, 0);
    struct qsw_qp_attr attr;
    unsigned i;

    CHECK_EQ(tb_connect(tb, a, b, &c), 0);
    tb_wr_sge(&wr, tb_va(SRC), 64, ka);
    wr.rdma.remote_addr = tb_va(DST);
    wr.rdma.rkey = kb;
    for (i = 0; i < 4; i++) {
        CHECK_EQ(qsw_post_send(a, &wr), 0);
    }
    CHECK_EQ(qsw_post_send(a, &wr), -QSW_ENOMEM);
    CHECK_EQ(qsw_post_send(a, &wr), -QSW_ENOMEM);
    CHECK_EQ(na->sq_space, 0);
    CHECK(tb_run_idle(tb, 1000000000ull));
    CHECK_EQ(na->nwc, 0);                   /* unsignaled: no completion to go by */
    CHECK_EQ(na->sq_space, 1);              /* once for the streak of two refusals */
    for (i = 0; i < 4; i++) {
        CHECK_EQ(qsw_post_send(a, &wr), 0);
    }
    CHECK(tb_run_idle(tb, 1000000000ull));
    CHECK_EQ(na->sq_space, 1);              /* nothing refused, nothing to say */
    /* Full again, then flushed by the error state. */
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = QSW_QPS_SQD;
    CHECK_EQ(qsw_qp_modify(a, &attr, QSW_QP_STATE), 0);
    for (i = 0; i < 4; i++) {
        CHECK_EQ(qsw_post_send(a, &wr), 0);
    }
    CHECK_EQ(qsw_post_send(a, &wr), -QSW_ENOMEM);
    attr.qp_state = QSW_QPS_ERR;
    CHECK_EQ(qsw_qp_modify(a, &attr, QSW_QP_STATE), 0);
    CHECK_EQ(na->sq_space, 2);
    CHECK_EQ(na->nwc, 4);                   /* WR_FLUSH_ERR, errors always complete */
    tb_free(tb);
}

/* A modify to state with every attribute the transport itself requires anywhere. */
static int sm_modify(struct qsw_qp *qp, unsigned state)
{
    struct qsw_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = state;
    a.path_mtu = QSW_MTU_1024;
    a.dest_qp_num = 0x77;
    a.rq_psn = 1;
    a.sq_psn = 2;
    a.av.hop_limit = 64;
    return qsw_qp_modify(qp, &a, QSW_QP_STATE | QSW_QP_AV | QSW_QP_PATH_MTU |
                                     QSW_QP_DEST_QPN | QSW_QP_RQ_PSN | QSW_QP_SQ_PSN);
}

/*
 * The transport takes exactly the transitions of the device's table,
 * qrdma_qp_transitions[] (issue 11: it allowed RESET -> ERR, which IBTA
 * 10.3.1 and the device forbid), from every state a modify can reach.
 */
static void test_state_machine(void)
{
    static const unsigned paths[][5] = {
        /* from RESET to each state a modify reaches (SQE is the transport's to enter) */
        { 0xff },
        { QSW_QPS_INIT, 0xff },
        { QSW_QPS_INIT, QSW_QPS_RTR, 0xff },
        { QSW_QPS_INIT, QSW_QPS_RTR, QSW_QPS_RTS, 0xff },
        { QSW_QPS_INIT, QSW_QPS_RTR, QSW_QPS_RTS, QSW_QPS_SQD, 0xff },
        { QSW_QPS_INIT, QSW_QPS_ERR, 0xff },
    };
    static const struct { enum qsw_qp_type type; unsigned kind; } types[] = {
        { QSW_QPT_RC, QRDMA_QPK_RC }, { QSW_QPT_UC, QRDMA_QPK_UC }, { QSW_QPT_UD, QRDMA_QPK_UD },
    };
    struct tb *tb = tb_new(false);
    struct qsw_engine *eng = tb->node[0].eng;
    uint32_t qpn = 0x100;

    for (unsigned t = 0; t < 3; t++) {
        for (unsigned p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
            for (unsigned next = 0; next < QRDMA_QP_NUM_STATES; next++) {
                struct qsw_qp *qp = qsw_qp_create(eng, qpn++, types[t].type, 1, NULL, NULL);
                unsigned i, cur = QSW_QPS_RESET;
                bool ok;

                CHECK(qp != NULL);
                if (!qp) {
                    continue;
                }
                for (i = 0; paths[p][i] != 0xff; i++) {
                    CHECK_EQ(sm_modify(qp, paths[p][i]), 0);
                    cur = paths[p][i];
                }
                CHECK_EQ(qsw_qp_state(qp), cur);
                ok = qrdma_qp_transitions[cur][next] & QRDMA_QPK_BIT(types[t].kind);
                if ((sm_modify(qp, next) == 0) != ok) {
                    fprintf(stderr, "  type %u: %u -> %u: the transport %s, the table %s\n",
                            types[t].type, cur, next, ok ? "refuses" : "accepts",
                            ok ? "allows" : "forbids");
                    unit_failures++;
                }
                CHECK_EQ(qsw_qp_state(qp), ok ? next : cur);
                qsw_qp_destroy(qp);
            }
        }
    }
    tb_free(tb);
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_send_basic),
    UNIT_TEST(test_all_opcodes),
    UNIT_TEST(test_segmentation),
    UNIT_TEST(test_segment_opcodes),
    UNIT_TEST(test_multi_sge),
    UNIT_TEST(test_inline),
    UNIT_TEST(test_psn_wrap),
    UNIT_TEST(test_rnr_recover),
    UNIT_TEST(test_rnr_exceeded),
    UNIT_TEST(test_retry_exceeded),
    UNIT_TEST(test_retry_exceeded_mid_message),
    UNIT_TEST(test_stall_floor),
    UNIT_TEST(test_remote_access_errors),
    UNIT_TEST(test_responder_length_error),
    UNIT_TEST(test_local_length_error),
    UNIT_TEST(test_duplicate_atomic),
    UNIT_TEST(test_duplicate_read),
    UNIT_TEST(test_duplicate_send_acked),
    UNIT_TEST(test_max_rd_atomic_and_fence),
    UNIT_TEST(test_responder_resources),
    UNIT_TEST(test_ack_coalescing),
    UNIT_TEST(test_ack_on_stop),
    UNIT_TEST(test_one_nak_per_gap),
    UNIT_TEST(test_comm_est_in_rtr),
    UNIT_TEST(test_unsignaled_and_sqd),
    UNIT_TEST(test_qp_table),
    UNIT_TEST(test_state_machine),
    UNIT_TEST(test_sq_space),
};

int main(void)
{
    return unit_run("test_sw_rc", tests, sizeof(tests) / sizeof(tests[0]));
}
