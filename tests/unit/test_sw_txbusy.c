/*
 * Unit tests of the software RoCEv2 engine's transmit backpressure: a wire
 * that answers QSW_TX_BUSY (a netdev whose queue is full) stops the engine
 * after the frame it took, the engine resumes where it stopped after
 * qsw_engine_tx_ready(), nothing is lost or sent twice, the time spent
 * waiting burns no retry (the transport's clock stands still, up to
 * QSW_TX_PAUSE_MAX_NS), frames the engine must send from outside its poll
 * wait in its small hold queue, in order, and a reset or a free while
 * busy leaves nothing behind (ASan).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdlib.h>

#include "sw_testbed.h"
#include "unit.h"

int unit_failures;

#define SRC   0                 /* per node memory layout */
#define DST   (8u << 20)
#define MS    1000000ull

struct pair {
    struct tb *tb;
    struct tb_node *na, *nb;
    struct qsw_qp *a, *b;
    uint32_t ka, kb;
};

/* RC QPs a (node 0) and b (node 1), path MTU 1024, timeout 10 (4.2 ms). */
static void pair_setup(struct pair *p, struct tb *tb, uint32_t qpn, uint8_t retry_cnt)
{
    struct tb_conn c = { .mtu = QSW_MTU_1024, .psn_a = 100, .psn_b = 7000, .timeout = 10,
                         .retry_cnt = retry_cnt, .rnr_retry = 7 };

    p->tb = tb;
    p->na = &tb->node[0];
    p->nb = &tb->node[1];
    p->a = tb_qp(p->na, qpn, QSW_QPT_RC, 1, 1024);
    p->b = tb_qp(p->nb, qpn + 0x100, QSW_QPT_RC, 1, 1024);
    CHECK(p->a && p->b);
    CHECK_EQ(tb_connect(tb, p->a, p->b, &c), 0);
}

static void post(struct qsw_qp *qp, uint64_t wr_id, enum qsw_wr_opcode op, uint64_t va,
                 uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
    struct qsw_send_wr wr = tb_wr(wr_id, op, QSW_SEND_SIGNALED);

    tb_wr_sge(&wr, va, len, lkey);
    wr.rdma.remote_addr = raddr;
    wr.rdma.rkey = rkey;
    CHECK_EQ(qsw_post_send(qp, &wr), 0);
}

static struct qsw_stats stats_of(struct tb_node *n)
{
    struct qsw_stats st;

    qsw_engine_stats(n->eng, &st);
    return st;
}

/* Polls both engines and delivers what the wire lets through, count times, on a still clock. */
static void spin(struct tb *tb, int count)
{
    while (count--) {
        tb_deliver(tb);
        qsw_engine_poll(tb->node[0].eng, tb->budget);
        qsw_engine_poll(tb->node[1].eng, tb->budget);
    }
}

/*
 * 16 SENDs of 8 KB (128 packets) into a wire that takes 8 frames and then
 * does not drain for 200 ms, 50 retransmit timeouts: the engine stops at
 * the 8th frame, sends nothing more, and neither times out nor retransmits
 * while it waits. Then the wire drains: every message arrives intact, in
 * order, and no packet is ever sent twice.
 */
static void test_busy_stops_and_resumes(void)
{
    struct pair p;
    struct qsw_stats st;
    uint64_t start, next;
    const unsigned n = 16, len = 8192;

    pair_setup(&p, tb_new(false), 0x11, 7);
    p.ka = tb_reg_mr(p.na, 1, 0, TB_MEM_SIZE, 0xf);
    p.kb = tb_reg_mr(p.nb, 1, 0, TB_MEM_SIZE, 0xf);
    tb_fill(p.na, SRC, n * len, 7);
    for (unsigned i = 0; i < n; i++) {
        tb_post_recv(p.b, 0x500 + i, tb_va(DST + i * len), len, p.kb);
        post(p.a, 0x100 + i, QSW_WR_SEND, tb_va(SRC + i * len), len, p.ka, 0, 0);
    }
    p.na->tx_room = 8;
    p.na->hold = true;
    next = qsw_engine_poll(p.na->eng, 64);
    CHECK_EQ(p.tb->qhead != NULL, true);
    CHECK_EQ(p.na->waiting, 8);
    CHECK_EQ(p.na->busy_answers, 1);
    CHECK(qsw_engine_tx_busy(p.na->eng));
    /* nothing is due before the clock may run again */
    CHECK(next >= p.tb->now + QSW_TX_PAUSE_MAX_NS);
    start = p.tb->now;
    for (int step = 0; step < 50; step++) {
        p.tb->now += 4 * MS;
        spin(p.tb, 2);
    }
    st = stats_of(p.na);
    CHECK_EQ(p.na->waiting, 8);             /* not one frame more */
    CHECK_EQ(st.timeouts, 0);
    CHECK_EQ(st.retransmits, 0);
    CHECK_EQ(st.tx_frames, 8);
    CHECK_EQ(p.nb->nwc, 0);

    /* the netdev drains */
    p.na->hold = false;
    CHECK(tb_run_wcs(p.tb, 1, n, 10 * MS));
    CHECK(tb_run_wcs(p.tb, 0, n, 10 * MS));
    tb_run_idle(p.tb, 100 * MS);
    st = stats_of(p.na);
    CHECK_EQ(st.timeouts, 0);
    CHECK_EQ(st.retransmits, 0);
    CHECK_EQ(st.tx_frames, n * len / 1024);
    CHECK_EQ(st.tx_paused_ns, 200 * MS);
    CHECK(p.na->ready_calls >= 1);
    CHECK_EQ(p.nb->nwc, n);
    for (unsigned i = 0; i < n && i < p.nb->nwc; i++) {
        const struct qsw_wc *wc = &p.nb->wc[i];

        CHECK_EQ(wc->wr_id, 0x500 + i);     /* in order */
        CHECK_EQ(wc->status, QSW_WC_SUCCESS);
        CHECK_EQ(wc->byte_len, len);
    }
    for (unsigned i = 0; i < n && i < p.na->nwc; i++) {
        CHECK_EQ(p.na->wc[i].wr_id, 0x100 + i);
        CHECK_EQ(p.na->wc[i].status, QSW_WC_SUCCESS);
    }
    CHECK(memcmp(p.na->mem + SRC, p.nb->mem + DST, n * len) == 0);
    CHECK(p.tb->now - start >= 200 * MS);
    tb_free(p.tb);
}

/*
 * Both wires busy every few frames, the whole time: WRITE, READ (the
 * responder stops between its responses), SEND and atomics, large and
 * small. Everything completes, byte for byte, with no retransmission:
 * a frame reordered or lost by the stop would have caused one.
 */
static void run_steady(struct tb *tb, unsigned room)
{
    struct pair p;
    struct qsw_stats sa, sb;
    unsigned i, nwr = 0;

    pair_setup(&p, tb, 0x21, 7);
    p.ka = tb_reg_mr(p.na, 1, 0, TB_MEM_SIZE, 0xf);
    p.kb = tb_reg_mr(p.nb, 1, 0, TB_MEM_SIZE, 0xf);
    tb_fill(p.na, SRC, 1u << 20, 11);
    tb_fill(p.nb, SRC, 1u << 20, 12);
    p.na->tx_room = room;
    p.nb->tx_room = room;
    for (i = 0; i < 24; i++) {
        uint32_t len = i % 3 == 0 ? 20000 + i : i % 3 == 1 ? 3000 + i * 7 : 64 + i;
        uint64_t off = (uint64_t)i * 32768;

        switch (i % 4) {
        case 0:
            post(p.a, i, QSW_WR_RDMA_WRITE, tb_va(SRC + off), len, p.ka,
                 tb_va(DST + off), p.kb);
            break;
        case 1:
            /* B's SRC into A's DST: the responder's READ responses meet the busy wire */
            post(p.a, i, QSW_WR_RDMA_READ, tb_va(DST + off), len, p.ka,
                 tb_va(SRC + off), p.kb);
            break;
        case 2:
            tb_post_recv(p.b, 0x900 + i, tb_va(DST + off), len, p.kb);
            post(p.a, i, QSW_WR_SEND, tb_va(SRC + off), len, p.ka, 0, 0);
            break;
        default: {
            struct qsw_send_wr wr = tb_wr(i, QSW_WR_ATOMIC_FETCH_AND_ADD, QSW_SEND_SIGNALED);

            tb_wr_sge(&wr, tb_va(DST + off), 8, p.ka);
            wr.atomic.remote_addr = tb_va(DST + (4u << 20) + 8 * i);
            wr.atomic.rkey = p.kb;
            wr.atomic.compare_add = 5;
            CHECK_EQ(qsw_post_send(p.a, &wr), 0);
            break;
        }
        }
        nwr++;
    }
    /* and B sends too, so both directions carry requests and ACKs */
    for (i = 0; i < 8; i++) {
        tb_post_recv(p.a, 0xa00 + i, tb_va(DST + (6u << 20) + i * 8192), 8192, p.ka);
        post(p.b, 0xb00 + i, QSW_WR_SEND, tb_va(SRC + (512u << 10) + i * 8192), 8192, p.kb, 0, 0);
    }
    CHECK(tb_run_wcs(tb, 0, nwr + 8, 5000 * MS));
    CHECK(tb_run_wcs(tb, 1, 6 + 8, 5000 * MS));
    tb_run_idle(tb, 100 * MS);
    for (i = 0; i < p.na->nwc; i++) {
        CHECK_EQ(p.na->wc[i].status, QSW_WC_SUCCESS);
    }
    for (i = 0; i < p.nb->nwc; i++) {
        CHECK_EQ(p.nb->wc[i].status, QSW_WC_SUCCESS);
    }
    for (i = 0; i < 24; i++) {
        uint32_t len = i % 3 == 0 ? 20000 + i : i % 3 == 1 ? 3000 + i * 7 : 64 + i;
        uint64_t off = (uint64_t)i * 32768;

        if (i % 4 == 0 || i % 4 == 2) {
            CHECK(memcmp(p.na->mem + SRC + off, p.nb->mem + DST + off, len) == 0);
        } else if (i % 4 == 1) {
            CHECK(memcmp(p.nb->mem + SRC + off, p.na->mem + DST + off, len) == 0);
        } else {
            uint64_t v;

            memcpy(&v, p.nb->mem + DST + (4u << 20) + 8 * i, 8);
            CHECK_EQ(v, 5);                 /* executed once */
        }
    }
    CHECK(memcmp(p.nb->mem + SRC + (512u << 10), p.na->mem + DST + (6u << 20), 8 * 8192) == 0);
    sa = stats_of(p.na);
    sb = stats_of(p.nb);
    CHECK(sa.tx_busy > 10 && sb.tx_busy > 10);
    /* the engines stopped at every busy answer: never more than room on the wire */
    CHECK_EQ(p.na->max_waiting, room);
    CHECK_EQ(p.nb->max_waiting, room);
    CHECK_EQ(sa.retransmits + sb.retransmits, 0);
    CHECK_EQ(sa.timeouts + sb.timeouts, 0);
    CHECK_EQ(sb.duplicates + sa.duplicates, 0);
    CHECK_EQ(sa.tx_hold_drops + sb.tx_hold_drops, 0);
    CHECK_EQ(tb->maps_out, 0);
    tb_free(tb);
}

static void test_busy_steady(void)
{
    run_steady(tb_new(false), 1);
    run_steady(tb_new(true), 3);
}

/* The same with zero-copy transmit: a mapped frame the wire keeps is given back as any other. */
static void test_busy_steady_zero_copy(void)
{
    struct tb *tb = tb_new_zero_copy(false, 5);

    run_steady(tb, 2);
}

/*
 * Frames the engine must send from outside its poll while the wire is
 * busy: the ACK a destroyed responder owes (qsw_resp_stop) waits in the
 * hold queue, QSW_TX_HOLD of them; one more is dropped and counted. When
 * the wire drains they leave first, in the order they were made, before
 * anything the poll sends.
 */
static uint8_t order_op[64];
static unsigned order_n;

static bool tap_order(struct tb *tb, int from, uint8_t *frame, size_t *len, void *arg)
{
    if (from == 1 && order_n < sizeof(order_op)) {
        /* BTH opcode, IPv4 */
        order_op[order_n++] = frame[14 + 20 + 8];
    }
    return false;
}

static void test_busy_hold_queue(void)
{
    struct tb *tb = tb_new(false);
    struct pair blk, p[QSW_TX_HOLD + 1];
    struct qsw_stats st;
    uint32_t ka, kb;
    unsigned i;

    pair_setup(&blk, tb, 0x30, 7);
    for (i = 0; i <= QSW_TX_HOLD; i++) {
        pair_setup(&p[i], tb, 0x31 + i, 7);
    }
    ka = tb_reg_mr(&tb->node[0], 1, 0, TB_MEM_SIZE, 0xf);
    kb = tb_reg_mr(&tb->node[1], 1, 0, TB_MEM_SIZE, 0xf);
    /* B's wire fills with one frame: a SEND of blk's, which it then holds */
    tb->node[1].tx_room = 1;
    tb->node[1].hold = true;
    tb_post_recv(blk.a, 1, tb_va(DST), 64, ka);
    post(blk.b, 2, QSW_WR_SEND, tb_va(SRC), 64, kb, 0, 0);
    spin(tb, 1);
    CHECK(qsw_engine_tx_busy(tb->node[1].eng));
    /* each A QP's SEND reaches B, whose ACK cannot leave */
    for (i = 0; i <= QSW_TX_HOLD; i++) {
        tb_post_recv(p[i].b, 0x10 + i, tb_va(DST + 4096 * (i + 1)), 64, kb);
        post(p[i].a, 0x20 + i, QSW_WR_SEND, tb_va(SRC + 64 * i), 64, ka, 0, 0);
    }
    spin(tb, 3);
    CHECK_EQ(tb->node[1].nwc, QSW_TX_HOLD + 1);
    CHECK_EQ(tb->node[1].waiting, 1);
    tb->tap = tap_order;
    order_n = 0;
    /* the consumer destroys B's QPs: each owes its ACK */
    for (i = 0; i <= QSW_TX_HOLD; i++) {
        qsw_qp_destroy(p[i].b);
    }
    st = stats_of(&tb->node[1]);
    CHECK_EQ(st.tx_held, QSW_TX_HOLD);
    CHECK_EQ(st.tx_hold_drops, 1);
    CHECK_EQ(order_n, 0);                   /* not one on the wire yet */
    /* and blk's responder owes an ACK too, sent by the poll, after them */
    post(blk.a, 3, QSW_WR_SEND, tb_va(SRC), 64, ka, 0, 0);
    tb_post_recv(blk.b, 4, tb_va(DST), 64, kb);
    spin(tb, 2);
    CHECK_EQ(order_n, 0);

    tb->node[1].hold = false;
    tb->node[1].tx_room = 0;
    spin(tb, 4);
    CHECK(order_n >= QSW_TX_HOLD + 1);
    for (i = 0; i < QSW_TX_HOLD && i < order_n; i++) {
        CHECK_EQ(order_op[i], 0x11);        /* the held ACKs first */
    }
    for (i = 0; i < QSW_TX_HOLD; i++) {
        const struct qsw_wc *wc = tb_find_wc(&tb->node[0], 0x20 + i, false);

        CHECK(wc && wc->status == QSW_WC_SUCCESS);
    }
    CHECK(tb_find_wc(&tb->node[0], 3, false) != NULL);
    st = stats_of(&tb->node[0]);
    CHECK_EQ(st.retransmits, 0);
    tb->tap = NULL;
    tb_free(tb);
}

/*
 * A wire that never drains is a broken link: QSW_TX_PAUSE_MAX_NS into the
 * busy spell the clock runs again, and the requester's retries end in
 * RETRY_EXC_ERR, not in a QP that waits for ever.
 */
static void test_busy_forever(void)
{
    struct pair p;
    uint64_t start;

    pair_setup(&p, tb_new(false), 0x41, 1);
    p.ka = tb_reg_mr(p.na, 1, 0, TB_MEM_SIZE, 0xf);
    p.kb = tb_reg_mr(p.nb, 1, 0, TB_MEM_SIZE, 0xf);
    tb_post_recv(p.b, 1, tb_va(DST), 4096, p.kb);
    post(p.a, 2, QSW_WR_SEND, tb_va(SRC), 4096, p.ka, 0, 0);
    p.na->tx_room = 2;
    p.na->hold = true;
    start = p.tb->now;
    CHECK(tb_run_wcs(p.tb, 0, 1, 10000 * MS));
    CHECK_EQ(p.na->nwc, 1);
    if (p.na->nwc) {
        CHECK_EQ(p.na->wc[0].status, QSW_WC_RETRY_EXC_ERR);
    }
    CHECK(p.tb->now - start >= QSW_TX_PAUSE_MAX_NS);
    CHECK(p.tb->now - start < QSW_TX_PAUSE_MAX_NS + 100 * MS);
    CHECK_EQ(p.na->waiting, 2);
    tb_free(p.tb);
}

/*
 * Reset, destroy and free while busy, with frames in the hold queue and
 * in the fault hook's delay line: nothing leaks (ASan), and a QP made
 * again after its RESET runs once the wire drains.
 */
static void test_busy_reset_and_free(void)
{
    struct tb *tb = tb_new(false);
    const struct qsw_fault f = { .delay_ns = 2 * MS, .seed = 3 };
    struct pair p, q, r;
    struct qsw_qp_attr a;
    struct qsw_stats st;

    pair_setup(&p, tb, 0x51, 7);
    pair_setup(&q, tb, 0x61, 7);
    pair_setup(&r, tb, 0x71, 7);
    p.ka = tb_reg_mr(p.na, 1, 0, TB_MEM_SIZE, 0xf);
    p.kb = tb_reg_mr(p.nb, 1, 0, TB_MEM_SIZE, 0xf);
    qsw_engine_set_fault(p.na->eng, &f);
    tb_post_recv(q.b, 9, tb_va(DST), 64, p.kb);
    post(q.a, 10, QSW_WR_SEND, tb_va(SRC), 64, p.ka, 0, 0);
    for (unsigned i = 0; i < 8; i++) {
        tb_post_recv(p.b, 0x70 + i, tb_va(DST + i * 8192), 8192, p.kb);
        post(p.a, 0x80 + i, QSW_WR_SEND, tb_va(SRC + i * 8192), 8192, p.ka, 0, 0);
    }
    p.na->tx_room = 3;
    p.na->hold = true;
    /* the delay line releases into a busy wire: the rest stays in the hook */
    for (int step = 0; step < 10; step++) {
        tb->now += MS;
        spin(tb, 1);
    }
    CHECK(qsw_engine_tx_busy(p.na->eng));
    CHECK_EQ(p.na->waiting, 3);
    /* RESET and destroy while busy: their work is forgotten, the engine stays busy */
    memset(&a, 0, sizeof(a));
    a.qp_state = QSW_QPS_RESET;
    CHECK_EQ(qsw_qp_modify(p.a, &a, QSW_QP_STATE), 0);
    qsw_qp_destroy(q.a);
    CHECK(qsw_engine_tx_busy(p.na->eng));
    /* the wire drains, and the engine is free again */
    p.na->hold = false;
    p.na->tx_room = 0;
    tb_run_idle(tb, 100 * MS);
    CHECK(!qsw_engine_tx_busy(p.na->eng));
    CHECK_EQ(p.na->waiting, 0);

    /*
     * Busy again, with a frame in the delay line and one in the hold
     * queue, and the engine freed as it is.
     */
    p.na->tx_room = 1;
    p.na->hold = true;
    tb_post_recv(r.b, 20, tb_va(DST), 64, p.kb);
    post(r.a, 21, QSW_WR_SEND, tb_va(SRC), 64, p.ka, 0, 0);
    spin(tb, 1);                            /* into the delay line */
    tb->now += 3 * MS;
    spin(tb, 1);                            /* out of it, into a busy wire */
    CHECK(qsw_engine_tx_busy(p.na->eng));
    tb_post_recv(r.a, 22, tb_va(DST), 64, p.ka);
    post(r.b, 23, QSW_WR_SEND, tb_va(SRC), 64, p.kb, 0, 0);
    spin(tb, 2);
    CHECK(tb_find_wc(p.na, 22, true) != NULL);
    qsw_qp_destroy(r.a);                    /* its ACK: into the delay line */
    qsw_engine_set_fault(p.na->eng, NULL);  /* which empties into the hold queue */
    st = stats_of(p.na);
    CHECK_EQ(st.tx_held, 1);
    CHECK_EQ(p.na->waiting, 1);
    tb_free(tb);
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_busy_stops_and_resumes),
    UNIT_TEST(test_busy_steady),
    UNIT_TEST(test_busy_steady_zero_copy),
    UNIT_TEST(test_busy_hold_queue),
    UNIT_TEST(test_busy_forever),
    UNIT_TEST(test_busy_reset_and_free),
};

int main(void)
{
    return unit_run("test_sw_txbusy", tests, sizeof(tests) / sizeof(tests[0]));
}
