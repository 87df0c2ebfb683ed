/*
 * Regression tests for what the receive-path fuzzer (tests/fuzz/fuzz_sw_rx.c)
 * found in the software RoCEv2 engine: each case replays the smallest
 * sequence of frames, modifies and polls that showed the bug, over the
 * two-node test bed. docs/hardening.md lists the findings.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdlib.h>

#include "sw_int.h"
#include "sw_testbed.h"
#include "unit.h"

int unit_failures;

#define DAY_NS (86400ull * 1000000000ull)

struct pair {
    struct tb *tb;
    struct tb_node *na, *nb;
    struct qsw_qp *a, *b;
    uint32_t ka, kb;
};

/* RC a (node 0) <-> b (node 1); a's send queue has sq_depth slots. */
static void pair_setup(struct pair *p, enum qsw_mtu mtu, uint32_t sq_depth)
{
    struct tb_conn c = { .mtu = mtu, .psn_a = 100, .psn_b = 5000, .retry_cnt = 7, .rnr_retry = 7 };

    p->tb = tb_new(false);
    p->na = &p->tb->node[0];
    p->nb = &p->tb->node[1];
    p->a = tb_qp(p->na, 0x11, QSW_QPT_RC, 1, sq_depth);
    p->b = tb_qp(p->nb, 0x22, QSW_QPT_RC, 1, 16);
    p->ka = tb_reg_mr(p->na, 1, 0, TB_MEM_SIZE, 0xf);
    p->kb = tb_reg_mr(p->nb, 1, 0, TB_MEM_SIZE, 0xf);
    CHECK(p->a && p->b);
    CHECK_EQ(tb_connect(p->tb, p->a, p->b, &c), 0);
}

static void set_mtu(struct qsw_qp *qp, enum qsw_mtu mtu)
{
    struct qsw_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.path_mtu = mtu;
    CHECK_EQ(qsw_qp_modify(qp, &a, QSW_QP_PATH_MTU), 0);
}

/* A tap that keeps node 0's frames instead of delivering them. */
struct grab {
    unsigned n;
    size_t len[8];
    uint8_t f[8][QSW_MAX_FRAME];
};

static bool grab_fn(struct tb *tb, int from, uint8_t *f, size_t *len, void *arg)
{
    struct grab *g = arg;

    if (from != 0 || g->n == 8) {
        return false;
    }
    memcpy(g->f[g->n], f, *len);
    g->len[g->n++] = *len;
    return true;
}

/*
 * The path MTU changed by a modify while a message is unacknowledged: its
 * resent packets must be the ones first sent. The requester segmented
 * again with the new MTU: a 2-packet inline SEND resent at a larger MTU
 * read its second packet from 4096 bytes past the WQE's inline slot (a
 * heap over-read sent on the wire), and a 1-packet SEND resent at a
 * smaller MTU went out as a SEND ONLY of 256 bytes (the message truncated).
 */
static void test_mtu_change_resend_inline(void)
{
    struct pair p;
    struct qsw_send_wr wr;
    static uint8_t data[300];
    const struct qsw_wc *wc;

    pair_setup(&p, QSW_MTU_256, 1);         /* one SQ slot: the inline pool is 512 bytes */
    for (unsigned i = 0; i < sizeof(data); i++) {
        data[i] = (uint8_t)(i * 7 + 1);
    }
    tb_post_recv(p.b, 1, tb_va(0), 1000, p.kb);
    wr = tb_wr(1, QSW_WR_SEND, QSW_SEND_SIGNALED | QSW_SEND_INLINE);
    wr.inline_data = data;
    wr.inline_len = sizeof(data);
    CHECK_EQ(qsw_post_send(p.a, &wr), 0);
    p.tb->drop_all = true;                  /* both packets lost */
    tb_run(p.tb, NULL, NULL, 0);
    set_mtu(p.a, QSW_MTU_4096);
    p.tb->drop_all = false;
    CHECK(tb_run_wcs(p.tb, 0, 1, DAY_NS));
    wc = tb_find_wc(p.na, 1, false);
    CHECK(wc && wc->status == QSW_WC_SUCCESS);
    wc = tb_find_wc(p.nb, 1, true);
    CHECK(wc && wc->status == QSW_WC_SUCCESS && wc->byte_len == sizeof(data));
    CHECK(memcmp(p.nb->mem, data, sizeof(data)) == 0);
    CHECK_EQ(qsw_qp_state(p.b), QSW_QPS_RTS);
    tb_free(p.tb);
}

static void test_mtu_change_resend_sge(void)
{
    struct pair p;
    struct qsw_send_wr wr;
    const struct qsw_wc *wc;

    pair_setup(&p, QSW_MTU_4096, 16);
    tb_fill(p.na, 0, 3000, 11);
    tb_post_recv(p.b, 1, tb_va(65536), 4000, p.kb);
    wr = tb_wr(1, QSW_WR_SEND, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(0), 3000, p.ka);
    CHECK_EQ(qsw_post_send(p.a, &wr), 0);
    p.tb->drop_all = true;
    tb_run(p.tb, NULL, NULL, 0);
    set_mtu(p.a, QSW_MTU_256);
    p.tb->drop_all = false;
    CHECK(tb_run_wcs(p.tb, 0, 1, DAY_NS));
    wc = tb_find_wc(p.na, 1, false);
    CHECK(wc && wc->status == QSW_WC_SUCCESS);
    wc = tb_find_wc(p.nb, 1, true);
    CHECK(wc && wc->status == QSW_WC_SUCCESS && wc->byte_len == 3000);
    CHECK(memcmp(p.nb->mem + 65536, p.na->mem, 3000) == 0);
    tb_free(p.tb);
}

/*
 * The responder's MTU changed between accepting a READ and sending its
 * responses: they were cut at the new MTU while the resource's PSN range
 * came from the old one, so the second response read past the requested
 * range (paylen = len - off underflowed) and the requester got a FIRST of
 * the wrong size.
 */
static void test_mtu_change_read_responses(void)
{
    static struct grab g;
    struct pair p;
    struct qsw_send_wr wr;
    const struct qsw_wc *wc;

    pair_setup(&p, QSW_MTU_256, 16);
    tb_fill(p.nb, 8192, 600, 5);
    wr = tb_wr(1, QSW_WR_RDMA_READ, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(0), 600, p.ka);
    wr.rdma.remote_addr = tb_va(8192);
    wr.rdma.rkey = p.kb;
    CHECK_EQ(qsw_post_send(p.a, &wr), 0);
    memset(&g, 0, sizeof(g));
    p.tb->tap = grab_fn;
    p.tb->tap_arg = &g;
    tb_run(p.tb, NULL, NULL, 0);            /* the READ request, held back */
    p.tb->tap = NULL;
    CHECK_EQ(g.n, 1);
    qsw_rx_frame(p.nb->eng, g.f[0], g.len[0]);  /* accepted: 3 responses of 256 bytes due */
    set_mtu(p.b, QSW_MTU_1024);
    CHECK(tb_run_wcs(p.tb, 0, 1, DAY_NS));
    wc = tb_find_wc(p.na, 1, false);
    CHECK(wc && wc->status == QSW_WC_SUCCESS);
    CHECK(memcmp(p.na->mem, p.nb->mem + 8192, 600) == 0);
    tb_free(p.tb);
}

/*
 * A modify with SQ_PSN right after a go-back: the retransmit timer fired
 * in a poll that had no budget left to resend, which leaves sq_cur back
 * at sq_head and req.psn == comp.psn while the WQE there still owns its
 * PSNs. The modify took that for "nothing in flight" and moved req.psn,
 * so the resend computed its packet index from a PSN before the WQE's
 * first: an offset of gigabytes, read from past the WQE's inline slot.
 */
static void test_sq_psn_after_go_back(void)
{
    struct pair p;
    struct qsw_send_wr wr;
    struct qsw_qp_attr a;
    static uint8_t data[300];
    const struct qsw_wc *wc;

    pair_setup(&p, QSW_MTU_256, 1);
    for (unsigned i = 0; i < sizeof(data); i++) {
        data[i] = (uint8_t)(i * 3 + 2);
    }
    tb_post_recv(p.b, 1, tb_va(0), 1000, p.kb);
    wr = tb_wr(1, QSW_WR_SEND, QSW_SEND_SIGNALED | QSW_SEND_INLINE);
    wr.inline_data = data;
    wr.inline_len = sizeof(data);
    CHECK_EQ(qsw_post_send(p.a, &wr), 0);
    p.tb->drop_all = true;
    tb_run(p.tb, NULL, NULL, 0);            /* PSNs 100 and 101 sent, lost */
    p.tb->now += 1000000000ull;             /* past the retransmit timeout */
    qsw_engine_poll(p.na->eng, 0);          /* the timer goes back to 100, nothing resent yet */
    memset(&a, 0, sizeof(a));
    a.sq_psn = 100 - 101;
    CHECK_EQ(qsw_qp_modify(p.a, &a, QSW_QP_SQ_PSN), 0);
    p.tb->drop_all = false;
    CHECK(tb_run_wcs(p.tb, 0, 1, DAY_NS));
    wc = tb_find_wc(p.na, 1, false);
    CHECK(wc && wc->status == QSW_WC_SUCCESS);
    wc = tb_find_wc(p.nb, 1, true);
    CHECK(wc && wc->status == QSW_WC_SUCCESS && wc->byte_len == sizeof(data));
    CHECK(memcmp(p.nb->mem, data, sizeof(data)) == 0);
    tb_free(p.tb);
}

/* A tap that keeps node 1's frames instead of delivering them. */
static bool grab1_fn(struct tb *tb, int from, uint8_t *f, size_t *len, void *arg)
{
    return grab_fn(tb, 1 - from, f, len, arg);
}

/*
 * SQ_DRAINED while a WQE is unacknowledged: poll took "sq_cur == sq_head
 * and req.psn == comp.psn" for drained, which also holds right after a
 * go-back when the QP's responder used its whole turn (16 READ responses)
 * before the requester could resend.
 */
static void test_sq_drained_after_go_back(void)
{
    static struct grab g;
    struct pair p;
    struct qsw_send_wr wr;
    struct qsw_qp_attr a;
    const struct qsw_wc *wc;

    pair_setup(&p, QSW_MTU_256, 16);
    tb_post_recv(p.b, 1, tb_va(0), 1000, p.kb);
    wr = tb_wr(1, QSW_WR_SEND, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(0), 100, p.ka);
    CHECK_EQ(qsw_post_send(p.a, &wr), 0);
    p.tb->drop_all = true;
    tb_run(p.tb, NULL, NULL, 0);            /* the SEND, lost */
    p.tb->drop_all = false;
    memset(&a, 0, sizeof(a));
    a.qp_state = QSW_QPS_SQD;
    CHECK_EQ(qsw_qp_modify(p.a, &a, QSW_QP_STATE), 0);
    qsw_engine_poll(p.na->eng, 64);
    CHECK_EQ(p.na->events[QSW_EV_SQ_DRAINED], 0);
    /* b READs 32 packets from a: a's responder has more than one turn of work */
    wr = tb_wr(2, QSW_WR_RDMA_READ, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(65536), 8192, p.kb);
    wr.rdma.remote_addr = tb_va(65536);
    wr.rdma.rkey = p.ka;
    CHECK_EQ(qsw_post_send(p.b, &wr), 0);
    memset(&g, 0, sizeof(g));
    p.tb->tap = grab1_fn;
    p.tb->tap_arg = &g;
    qsw_engine_poll(p.nb->eng, 64);
    p.tb->tap = NULL;
    CHECK_EQ(g.n, 1);
    qsw_rx_frame(p.na->eng, g.f[0], g.len[0]);
    p.tb->now += 1000000000ull;             /* a's retransmit timer is due: a go-back */
    qsw_engine_poll(p.na->eng, 64);
    CHECK_EQ(p.na->events[QSW_EV_SQ_DRAINED], 0);
    CHECK(tb_run_wcs(p.tb, 0, 1, DAY_NS));
    CHECK(tb_run_idle(p.tb, DAY_NS));
    wc = tb_find_wc(p.na, 1, false);
    CHECK(wc && wc->status == QSW_WC_SUCCESS);
    CHECK_EQ(p.na->events[QSW_EV_SQ_DRAINED], 1);   /* once, when it really is */
    wc = tb_find_wc(p.nb, 2, false);
    CHECK(wc && wc->status == QSW_WC_SUCCESS);
    tb_free(p.tb);
}

/*
 * The path MTU changed while messages are unacknowledged, then a go-back:
 * the rewind set every WQE after the one holding comp.psn back to "not
 * started", so the requester started them again at the new MTU with new
 * PSN ranges (a 700-byte SEND took one PSN instead of three). The WQE at
 * the send cursor, half sent when the MTU changed, is not reset by the
 * rewind and kept its first PSN; the requester reached it two PSNs early
 * and computed its packet index from a PSN before its first: an offset of
 * 2^32 - 512 into its SGE list (fuzz_sw_rx, "gather of 256 bytes at
 * offset 4294967040").
 */
static void test_mtu_change_go_back_keeps_psns(void)
{
    struct pair p;
    struct qsw_send_wr wr;
    static const uint32_t len[3] = { 300, 700, 3000 };
    uint64_t off = 0;
    const struct qsw_wc *wc;

    pair_setup(&p, QSW_MTU_256, 16);
    tb_fill(p.na, 0, 4000, 21);
    for (unsigned i = 0; i < 3; i++) {
        tb_post_recv(p.b, 1 + i, tb_va(65536 + off), len[i], p.kb);
        wr = tb_wr(1 + i, QSW_WR_SEND, QSW_SEND_SIGNALED);
        tb_wr_sge(&wr, tb_va(off), len[i], p.ka);
        CHECK_EQ(qsw_post_send(p.a, &wr), 0);
        off += len[i];
    }
    p.tb->drop_all = true;
    /* PSNs 100-101 (300 bytes), 102-104 (700), then 105-106 of the 3000-byte SEND: all lost */
    qsw_engine_poll(p.na->eng, 7);
    set_mtu(p.a, QSW_MTU_1024);
    p.tb->drop_all = false;
    p.tb->now += 1000000000ull;             /* the retransmit timer: back to PSN 100 */
    CHECK(tb_run_wcs(p.tb, 0, 3, DAY_NS));
    CHECK(tb_run_wcs(p.tb, 1, 3, DAY_NS));
    off = 0;
    for (unsigned i = 0; i < 3; i++) {
        wc = tb_find_wc(p.na, 1 + i, false);
        CHECK(wc && wc->status == QSW_WC_SUCCESS);
        wc = tb_find_wc(p.nb, 1 + i, true);
        CHECK(wc && wc->status == QSW_WC_SUCCESS && wc->byte_len == len[i]);
        off += len[i];
    }
    CHECK(memcmp(p.nb->mem + 65536, p.na->mem, off) == 0);
    CHECK_EQ(qsw_qp_state(p.a), QSW_QPS_RTS);
    CHECK_EQ(qsw_qp_state(p.b), QSW_QPS_RTS);
    tb_free(p.tb);
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_mtu_change_resend_inline),
    UNIT_TEST(test_mtu_change_resend_sge),
    UNIT_TEST(test_mtu_change_read_responses),
    UNIT_TEST(test_sq_psn_after_go_back),
    UNIT_TEST(test_sq_drained_after_go_back),
    UNIT_TEST(test_mtu_change_go_back_keeps_psns),
};

int main(void)
{
    return unit_run("test_sw_fuzz", tests, sizeof(tests) / sizeof(tests[0]));
}
