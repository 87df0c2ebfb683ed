/*
 * Unit tests of the software RoCEv2 engine's reliability under faults
 * injected on both transmit sides (loss, duplication, reordering,
 * corruption, delay; fixed seeds): thousands of RC messages of every
 * opcode and size verified byte for byte, completing in order, with every
 * atomic executed exactly once; every path MTU; UC delivering whole
 * messages or nothing; and the same seed giving the same run.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdlib.h>

#include "sw_int.h"
#include "sw_testbed.h"
#include "unit.h"

int unit_failures;

#define SLOTS     128
#define SLOT_SIZE (32u << 10)               /* SLOTS * SLOT_SIZE: 4 MB regions */
#define A_SRC     0                         /* node 0: sources, READ targets, atomic results */
#define A_DST     (4u << 20)
#define A_ATOMIC  (8u << 20)
#define B_DST     0                         /* node 1: WRITE targets */
#define B_SRC     (4u << 20)                /* READ sources */
#define B_RECV    (8u << 20)                /* receive buffers */
#define B_COUNTER (12u << 20)

struct run {
    struct tb *tb;
    struct tb_node *na, *nb;
    struct qsw_qp *a, *b;
    uint32_t ka, kb;
    uint64_t rng;
    uint32_t max_len;
    bool uc;
    /* per message */
    uint8_t *op;
    uint32_t *len;
    uint32_t *recv_of;          /* message index of the k-th receive completion */
    unsigned nrecv_expected;
    uint64_t atomics;           /* FETCH_ADDs posted so far */
    uint64_t *atomic_seq;       /* for each message, the atomic sequence number */
};

static uint32_t rnd(struct run *r)
{
    r->rng ^= r->rng << 13;
    r->rng ^= r->rng >> 7;
    r->rng ^= r->rng << 17;
    return (uint32_t)(r->rng >> 11);
}

static void pattern(uint8_t *buf, uint32_t len, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;

    for (uint32_t i = 0; i < len; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
}

static void setup(struct run *r, enum qsw_mtu mtu, const struct qsw_fault *f, bool uc,
                  uint32_t max_len, unsigned n)
{
    struct tb_conn c = { .mtu = mtu, .psn_a = 0xfff000, .psn_b = 77, .retry_cnt = 7,
                         .rnr_retry = 7, .timeout = 8, .min_rnr_timer = 1 };
    struct qsw_fault fb;

    memset(r, 0, sizeof(*r));
    r->tb = tb_new(false);
    r->na = &r->tb->node[0];
    r->nb = &r->tb->node[1];
    r->uc = uc;
    r->a = tb_qp(r->na, 0x100, uc ? QSW_QPT_UC : QSW_QPT_RC, 1, 1024);
    r->b = tb_qp(r->nb, 0x200, uc ? QSW_QPT_UC : QSW_QPT_RC, 1, 1024);
    r->ka = tb_reg_mr(r->na, 1, 0, TB_MEM_SIZE, 0xf);
    r->kb = tb_reg_mr(r->nb, 1, 0, TB_MEM_SIZE, 0xf);
    CHECK_EQ(tb_connect(r->tb, r->a, r->b, &c), 0);
    if (f) {
        qsw_engine_set_fault(r->na->eng, f);
        fb = *f;
        fb.seed = f->seed * 31 + 7;
        qsw_engine_set_fault(r->nb->eng, &fb);
    }
    r->rng = 0x9e3779b97f4a7c15ull ^ (f ? f->seed : 1);
    r->max_len = max_len;
    r->op = calloc(n, 1);
    r->len = calloc(n, sizeof(*r->len));
    r->recv_of = calloc(n, sizeof(*r->recv_of));
    r->atomic_seq = calloc(n, sizeof(*r->atomic_seq));
}

static void teardown(struct run *r)
{
    free(r->op);
    free(r->len);
    free(r->recv_of);
    free(r->atomic_seq);
    tb_free(r->tb);
}

static const enum qsw_wr_opcode rc_ops[] = {
    QSW_WR_SEND, QSW_WR_SEND_WITH_IMM, QSW_WR_RDMA_WRITE, QSW_WR_RDMA_WRITE_WITH_IMM,
    QSW_WR_RDMA_READ, QSW_WR_ATOMIC_FETCH_AND_ADD, QSW_WR_ATOMIC_CMP_AND_SWP,
};
/* UC: the immediate data names the message, so each arrival can be checked */
static const enum qsw_wr_opcode uc_ops[] = {
    QSW_WR_SEND_WITH_IMM, QSW_WR_SEND_WITH_IMM, QSW_WR_RDMA_WRITE, QSW_WR_RDMA_WRITE_WITH_IMM,
};

static void post_one(struct run *r, unsigned i)
{
    unsigned slot = i % SLOTS;
    enum qsw_wr_opcode op = r->uc ? uc_ops[rnd(r) % 4] : rc_ops[rnd(r) % 7];
    uint32_t len = rnd(r) % (r->max_len + 1);
    struct qsw_send_wr wr = tb_wr(i, op, QSW_SEND_SIGNALED);

    if (rnd(r) % 8 == 0) {
        len = rnd(r) % 3;                           /* plenty of tiny and empty messages */
    }
    wr.imm_data = i;
    r->op[i] = (uint8_t)op;
    switch (op) {
    case QSW_WR_SEND:
    case QSW_WR_SEND_WITH_IMM:
        pattern(r->na->mem + A_SRC + slot * SLOT_SIZE, len, i);
        tb_wr_sge(&wr, tb_va(A_SRC + slot * SLOT_SIZE), len, r->ka);
        r->recv_of[r->nrecv_expected++] = i;
        break;
    case QSW_WR_RDMA_WRITE:
    case QSW_WR_RDMA_WRITE_WITH_IMM:
        pattern(r->na->mem + A_SRC + slot * SLOT_SIZE, len, i);
        /* two SGEs when long enough */
        if (len > 100) {
            tb_wr_sge(&wr, tb_va(A_SRC + slot * SLOT_SIZE), 100, r->ka);
            tb_wr_sge(&wr, tb_va(A_SRC + slot * SLOT_SIZE + 100), len - 100, r->ka);
        } else {
            tb_wr_sge(&wr, tb_va(A_SRC + slot * SLOT_SIZE), len, r->ka);
        }
        wr.rdma.remote_addr = tb_va(B_DST + slot * SLOT_SIZE);
        wr.rdma.rkey = r->kb;
        if (op == QSW_WR_RDMA_WRITE_WITH_IMM) {
            r->recv_of[r->nrecv_expected++] = i;
        }
        break;
    case QSW_WR_RDMA_READ:
        pattern(r->nb->mem + B_SRC + slot * SLOT_SIZE, len, i);
        memset(r->na->mem + A_DST + slot * SLOT_SIZE, 0, len);
        tb_wr_sge(&wr, tb_va(A_DST + slot * SLOT_SIZE), len, r->ka);
        wr.rdma.remote_addr = tb_va(B_SRC + slot * SLOT_SIZE);
        wr.rdma.rkey = r->kb;
        break;
    default:
        len = 8;
        tb_wr_sge(&wr, tb_va(A_ATOMIC + slot * 8), 8, r->ka);
        wr.atomic.remote_addr = tb_va(B_COUNTER);
        wr.atomic.rkey = r->kb;
        /* the counter only grows by one per atomic: CMP_SWAP(seq, seq + 1) always hits */
        wr.atomic.compare_add = op == QSW_WR_ATOMIC_FETCH_AND_ADD ? 1 : r->atomics;
        wr.atomic.swap = r->atomics + 1;
        r->atomic_seq[i] = r->atomics++;
        break;
    }
    r->len[i] = len;
    CHECK_EQ(qsw_post_send(r->a, &wr), 0);
}

static void check_send_wc(struct run *r, const struct qsw_wc *wc, unsigned i)
{
    unsigned slot = i % SLOTS;
    static uint8_t exp[SLOT_SIZE];
    uint32_t len = r->len[i];

    if (wc->wr_id != i || wc->status != QSW_WC_SUCCESS) {
        fprintf(stderr, "  send wc %u: wr_id %" PRIu64 " status %s\n", i, wc->wr_id,
                qsw_wc_status_str(wc->status));
        unit_failures++;
        return;
    }
    switch (r->op[i]) {
    case QSW_WR_RDMA_WRITE:
    case QSW_WR_RDMA_WRITE_WITH_IMM:
        if (!r->uc) {
            pattern(exp, len, i);
            if (memcmp(r->nb->mem + B_DST + slot * SLOT_SIZE, exp, len)) {
                fprintf(stderr, "  WRITE %u (%u bytes) mismatch\n", i, len);
                unit_failures++;
            }
        }
        break;
    case QSW_WR_RDMA_READ:
        pattern(exp, len, i);
        if (memcmp(r->na->mem + A_DST + slot * SLOT_SIZE, exp, len)) {
            fprintf(stderr, "  READ %u (%u bytes) mismatch\n", i, len);
            unit_failures++;
        }
        break;
    case QSW_WR_ATOMIC_FETCH_AND_ADD:
    case QSW_WR_ATOMIC_CMP_AND_SWP: {
        uint64_t v;

        memcpy(&v, r->na->mem + A_ATOMIC + slot * 8, 8);
        if (v != r->atomic_seq[i]) {
            fprintf(stderr, "  atomic %u returned %" PRIu64 ", expected %" PRIu64 "\n", i, v,
                    r->atomic_seq[i]);
            unit_failures++;
        }
        break;
    }
    default:
        break;
    }
}

static void check_recv_wc(struct run *r, const struct qsw_wc *wc, unsigned k)
{
    unsigned i = r->recv_of[k];
    unsigned slot = i % SLOTS;
    static uint8_t exp[SLOT_SIZE];
    bool imm = r->op[i] == QSW_WR_SEND_WITH_IMM || r->op[i] == QSW_WR_RDMA_WRITE_WITH_IMM;

    if (wc->status != QSW_WC_SUCCESS || wc->byte_len != r->len[i] ||
        !!(wc->wc_flags & QSW_WC_WITH_IMM) != imm || (imm && wc->imm_data != i)) {
        fprintf(stderr, "  recv %u of message %u: status %s len %u/%u\n", k, i,
                qsw_wc_status_str(wc->status), wc->byte_len, r->len[i]);
        unit_failures++;
        return;
    }
    pattern(exp, r->len[i], i);
    if (r->op[i] == QSW_WR_SEND || r->op[i] == QSW_WR_SEND_WITH_IMM) {
        if (memcmp(r->nb->mem + B_RECV + (wc->wr_id % SLOTS) * SLOT_SIZE, exp,
                   r->len[i])) {
            fprintf(stderr, "  SEND %u data mismatch\n", i);
            unit_failures++;
        }
    } else if (memcmp(r->nb->mem + B_DST + slot * SLOT_SIZE, exp, r->len[i])) {
        fprintf(stderr, "  WRITE_WITH_IMM %u data mismatch at its receive\n", i);
        unit_failures++;
    }
}

/* UC: a message that arrives is whole and in its place. */
static unsigned uc_good;

static void check_uc_recv(struct run *r, const struct qsw_wc *wc)
{
    unsigned i = wc->imm_data;
    static uint8_t exp[SLOT_SIZE];
    const uint8_t *at;

    if (wc->status != QSW_WC_SUCCESS || !(wc->wc_flags & QSW_WC_WITH_IMM) ||
        wc->byte_len != r->len[i]) {
        fprintf(stderr, "  UC receive of %u: status %s len %u/%u\n", i,
                qsw_wc_status_str(wc->status), wc->byte_len, r->len[i]);
        unit_failures++;
        return;
    }
    at = wc->opcode == QSW_WC_RECV ? r->nb->mem + B_RECV + (wc->wr_id % SLOTS) * SLOT_SIZE :
                                     r->nb->mem + B_DST + (i % SLOTS) * SLOT_SIZE;
    pattern(exp, r->len[i], i);
    if (memcmp(at, exp, r->len[i])) {
        fprintf(stderr, "  UC message %u torn\n", i);
        unit_failures++;
        return;
    }
    uc_good++;
}

/* Posts n messages with at most `depth` outstanding; checks every completion in order. */
static void drive(struct run *r, unsigned n, unsigned depth)
{
    unsigned posted = 0, done = 0, recvd = 0, rposted = 0;

    while (done < n) {
        /* keep receive WRs posted: each into its own slot of node 1's upper half */
        while (rposted - recvd < SLOTS / 2) {
            tb_post_recv(r->b, rposted, tb_va(B_RECV + (rposted % SLOTS) * SLOT_SIZE),
                         SLOT_SIZE, r->kb);
            rposted++;
        }
        while (posted < n && posted - done < depth) {
            post_one(r, posted++);
        }
        if (!tb_run(r->tb, NULL, NULL, 0) && r->na->nwc == done) {
            tb_run_wcs(r->tb, 0, done + 1, 60ull * 1000000000);
        }
        if (r->na->nwc == done && r->nb->nwc == recvd) {
            if (!tb_run_wcs(r->tb, 0, done + 1, 60ull * 1000000000)) {
                fprintf(stderr, "  stuck at %u of %u\n", done, n);
                unit_failures++;
                return;
            }
        }
        for (; done < r->na->nwc; done++) {
            check_send_wc(r, &r->na->wc[done], done);
        }
        for (; recvd < r->nb->nwc; recvd++) {
            if (r->uc) {
                check_uc_recv(r, &r->nb->wc[recvd]);
            } else {
                check_recv_wc(r, &r->nb->wc[recvd], recvd);
            }
        }
        if (unit_failures > 20) {
            return;
        }
    }
    CHECK(tb_run_idle(r->tb, 10ull * 1000000000));
    for (; recvd < r->nb->nwc; recvd++) {
        if (r->uc) {
            check_uc_recv(r, &r->nb->wc[recvd]);
        } else {
            check_recv_wc(r, &r->nb->wc[recvd], recvd);
        }
    }
    if (!r->uc) {
        CHECK_EQ(recvd, r->nrecv_expected);
    }
}

static void test_rc_clean(void)
{
    struct run r;
    struct qsw_stats st;

    setup(&r, QSW_MTU_1024, NULL, false, 20000, 2000);
    drive(&r, 2000, 64);
    qsw_engine_stats(r.na->eng, &st);
    CHECK_EQ(st.retransmits, 0);
    CHECK_EQ(st.timeouts, 0);
    CHECK_EQ(r.nb->atomics, r.atomics);
    teardown(&r);
}

static void test_rc_lossy_mixed(void)
{
    struct qsw_fault f = { .loss_ppm = 50000, .dup_ppm = 10000, .reorder_ppm = 10000,
                           .corrupt_ppm = 5000, .seed = 42 };
    struct run r;
    struct qsw_stats sa, sb;

    setup(&r, QSW_MTU_1024, &f, false, 6000, 3000);
    drive(&r, 3000, 32);
    qsw_engine_stats(r.na->eng, &sa);
    qsw_engine_stats(r.nb->eng, &sb);
    CHECK(sa.fault_lost > 100 && sb.fault_lost > 100);
    CHECK(sa.fault_dup > 10 && sa.fault_reordered > 10 && sa.fault_corrupted > 5);
    CHECK(sb.drop_icrc > 5);
    CHECK(sa.retransmits > 100);
    CHECK(sb.tx_naks_seq > 10);
    CHECK(sb.duplicates > 10);
    CHECK(sa.timeouts > 0);
    CHECK_EQ(r.nb->atomics, r.atomics);             /* each atomic executed exactly once */
    {
        uint64_t v;

        memcpy(&v, r.nb->mem + B_COUNTER, 8);
        CHECK_EQ(v, r.atomics);
    }
    CHECK_EQ(qsw_qp_state(r.a), QSW_QPS_RTS);
    CHECK_EQ(qsw_qp_state(r.b), QSW_QPS_RTS);
    teardown(&r);
}

static void test_rc_lossy_mtus(void)
{
    for (enum qsw_mtu m = QSW_MTU_256; m <= QSW_MTU_4096; m++) {
        struct qsw_fault f = { .loss_ppm = 20000, .dup_ppm = 5000, .reorder_ppm = 20000,
                               .corrupt_ppm = 2000, .seed = 1000 + m };
        struct run r;

        setup(&r, m, &f, false, 3 * qsw_mtu_bytes(m) + 1, 500);
        drive(&r, 500, 16);
        CHECK_EQ(r.nb->atomics, r.atomics);
        teardown(&r);
    }
}

static void test_rc_delay_reorder(void)
{
    struct qsw_fault f = { .delay_ns = 20000, .reorder_ppm = 100000, .reorder_window_ns = 30000,
                           .seed = 7 };
    struct run r;
    struct qsw_stats st;

    setup(&r, QSW_MTU_2048, &f, false, 10000, 1000);
    drive(&r, 1000, 32);
    qsw_engine_stats(r.na->eng, &st);
    CHECK(st.fault_reordered > 50);
    CHECK_EQ(r.nb->atomics, r.atomics);
    teardown(&r);
}

/*
 * Messages far longer than the send window under 5% loss, 1% duplication
 * and 2% reordering: 1 MB WRITEs then READs (MTU 1024, 1024 packets each,
 * 4 in flight) complete with every byte right, and go-back-N resends stay
 * bounded because the window shrinks on loss: fewer than 2.5 frames per
 * packet of data (a fixed 256-packet window sent about 11).
 */
static void test_rc_lossy_large(void)
{
    struct tb_conn c = { .mtu = QSW_MTU_1024, .psn_a = 0xffff00, .psn_b = 77, .retry_cnt = 7,
                         .rnr_retry = 7, .timeout = 14, .min_rnr_timer = 1 };
    struct qsw_fault f = { .loss_ppm = 50000, .dup_ppm = 10000, .reorder_ppm = 20000, .seed = 3 };
    const uint32_t len = 1u << 20;
    struct tb *tb = tb_new(false);
    struct tb_node *na = &tb->node[0], *nb = &tb->node[1];
    struct qsw_qp *a = tb_qp(na, 0x100, QSW_QPT_RC, 1, 1024);
    struct qsw_qp *b = tb_qp(nb, 0x200, QSW_QPT_RC, 1, 1024);
    uint32_t ka = tb_reg_mr(na, 1, 0, TB_MEM_SIZE, 0xf);
    uint32_t kb = tb_reg_mr(nb, 1, 0, TB_MEM_SIZE, 0xf);
    struct qsw_stats st;
    unsigned posted = 0, n = 16, i;

    CHECK_EQ(tb_connect(tb, a, b, &c), 0);
    qsw_engine_set_fault(na->eng, &f);
    f.seed = 99;
    qsw_engine_set_fault(nb->eng, &f);
    tb_fill(na, 0, 4 * len, 5);
    /* WRITEs of A's 4 MB into B, four times over, then READs of B's back into A's upper half. */
    while (na->nwc < 2 * n) {
        while (posted < 2 * n && posted - na->nwc < 4) {
            bool rd = posted >= n;
            uint64_t off = (posted % 4) * len;
            struct qsw_send_wr wr = tb_wr(posted, rd ? QSW_WR_RDMA_READ : QSW_WR_RDMA_WRITE,
                                          QSW_SEND_SIGNALED);

            if (posted == n) {
                qsw_engine_stats(na->eng, &st);
                CHECK(st.tx_frames < 5 * n * 1024 / 2);
            }
            if (rd && na->nwc < n) {
                break;                              /* the WRITEs first */
            }
            tb_wr_sge(&wr, tb_va((rd ? 8 * len : 0) + off), len, ka);
            wr.rdma.remote_addr = tb_va(off);
            wr.rdma.rkey = kb;
            CHECK_EQ(qsw_post_send(a, &wr), 0);
            posted++;
        }
        if (!tb_run_wcs(tb, 0, na->nwc + 1, 600ull * 1000000000)) {
            fprintf(stderr, "  stuck at %zu of %u\n", na->nwc, 2 * n);
            unit_failures++;
            break;
        }
    }
    for (i = 0; i < na->nwc; i++) {
        CHECK_EQ(na->wc[i].status, QSW_WC_SUCCESS);
        CHECK_EQ(na->wc[i].wr_id, i);
    }
    CHECK(!memcmp(na->mem, nb->mem, 4 * len));
    CHECK(!memcmp(na->mem, na->mem + 8 * len, 4 * len));
    qsw_engine_stats(na->eng, &st);
    CHECK(st.fault_lost > 500 && st.retransmits > 500);
    CHECK_EQ(qsw_qp_state(a), QSW_QPS_RTS);
    tb_free(tb);
}

/* UC under loss: whole messages or nothing, never a torn or misplaced one. */
static void test_uc_lossy(void)
{
    struct qsw_fault f = { .loss_ppm = 30000, .seed = 99 };
    struct run r;
    struct qsw_stats st;

    uc_good = 0;
    setup(&r, QSW_MTU_512, &f, true, 3000, 1500);
    drive(&r, 1500, 32);
    qsw_engine_stats(r.nb->eng, &st);
    CHECK(st.drop_uc > 10);
    CHECK(r.nb->nwc < r.nrecv_expected);            /* some were lost ... */
    CHECK(uc_good > r.nrecv_expected / 2);          /* ... most arrived, all of them whole */
    CHECK_EQ(uc_good, r.nb->nwc);
    CHECK_EQ(qsw_qp_state(r.b), QSW_QPS_RTS);
    teardown(&r);
}

static void run_stats(uint64_t seed, struct qsw_stats *st)
{
    struct qsw_fault f = { .loss_ppm = 30000, .dup_ppm = 10000, .reorder_ppm = 10000, .seed = seed };
    struct run r;

    setup(&r, QSW_MTU_1024, &f, false, 5000, 300);
    drive(&r, 300, 16);
    qsw_engine_stats(r.na->eng, st);
    teardown(&r);
}

static void test_fault_determinism(void)
{
    struct qsw_stats s1, s2, s3;

    run_stats(5, &s1);
    run_stats(5, &s2);
    run_stats(6, &s3);
    CHECK(memcmp(&s1, &s2, sizeof(s1)) == 0);
    CHECK(memcmp(&s1, &s3, sizeof(s1)) != 0);
}

/*
 * Held frames leave in release-time order, frames due at the same time in
 * the order they were sent: whether a frame queues behind the others (the
 * constant-time path) or is due before the last one queued (the sorted
 * list), and after both lists have emptied.
 */
static uint8_t hold_out[256];
static unsigned hold_nout;

static int hold_send(void *o, const void *frame, size_t len)
{
    if (hold_nout < sizeof(hold_out)) {
        hold_out[hold_nout++] = ((const uint8_t *)frame)[ETH_HLEN];
    }
    return 0;
}

static void test_fault_hold_order(void)
{
    const struct qsw_fault f = { .delay_ns = 1, .seed = 1 };
    struct tb *tb = tb_new(false);
    struct qsw_engine *eng = tb->node[0].eng;
    uint64_t at[128];
    unsigned batch, i, j, n, expect;

    eng->ops.send_frame = hold_send;     /* straight to the list above, not the wire */
    qsw_engine_set_fault(eng, &f);
    for (batch = 0; batch < 2; batch++) {
        hold_nout = 0;
        for (i = 0; i < 128; i++) {
            uint8_t frame[ETH_HLEN + 4] = { 0 };

            /* Mostly the same delay (appended), some shorter (inserted), some none. */
            eng->fault.delay_ns = i % 7 == 3 ? 1 + (i * 37) % 900 : i % 11 == 5 ? 0 : 1000;
            eng->now = 10ull * i;
            at[i] = eng->now + eng->fault.delay_ns;
            frame[ETH_HLEN] = (uint8_t)i;
            qsw_fault_tx(eng, frame, sizeof(frame));
        }
        /*
         * Each send also releases what is due by its own time (the last at
         * 1270); then a poll at 1500: exactly the frames due by then.
         */
        eng->now = 1500;
        qsw_fault_poll(eng, eng->now);
        for (i = 0, expect = 0; i < 128; i++) {
            expect += at[i] <= 1500;
        }
        CHECK(expect > 0 && expect < 128);
        CHECK_EQ(hold_nout, expect);
        qsw_fault_poll(eng, UINT64_MAX);
        CHECK_EQ(hold_nout, 128);
        /* Sorted by release time, stable: frame i before j if at[i] < at[j], or equal and i < j. */
        for (n = 0; n + 1 < hold_nout; n++) {
            i = hold_out[n];
            j = hold_out[n + 1];
            CHECK(at[i] < at[j] || (at[i] == at[j] && i < j));
        }
        CHECK(!qsw_fault_holding(eng));
    }
    tb_free(tb);
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_rc_clean),
    UNIT_TEST(test_rc_lossy_mixed),
    UNIT_TEST(test_rc_lossy_mtus),
    UNIT_TEST(test_rc_delay_reorder),
    UNIT_TEST(test_rc_lossy_large),
    UNIT_TEST(test_uc_lossy),
    UNIT_TEST(test_fault_determinism),
    UNIT_TEST(test_fault_hold_order),
};

int main(void)
{
    return unit_run("test_sw_lossy", tests, sizeof(tests) / sizeof(tests[0]));
}
