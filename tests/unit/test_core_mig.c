/*
 * Live migration, unit step (docs/migration.md): two device cores back to
 * back with loss on the wire and a mix of WRITEs, READs, SENDs and atomics
 * in flight; at many points one core is saved, destroyed, made again over
 * the same guest memory and loaded, and the traffic carries on. Then the
 * stream's refusals: truncated, flipped, foreign, unknown sections, and a
 * backend that cannot save.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/qrdma_core.h"
#include "dp_testbed.h"
#include "qrdma_mig_stream.h"
#include "unit.h"

/* the harness counts CHECK failures here */
int unit_failures;

/* Save s, destroy its core, make a fresh one over the same RAM, load. */
static void migrate(struct side *s, bool drop_wire)
{
    uint8_t *buf;
    size_t len;
    char err[256] = "";
    int ret = qrdma_core_save(&s->core, &buf, &len, err, sizeof(err));

    if (ret) {
        fprintf(stderr, "  save: %s\n", err);
    }
    CHECK_EQ(ret, 0);
    if (ret) {
        return;
    }
    qrdma_core_fini(&s->core);
    memset(&s->core, 0, sizeof(s->core));
    s->kicks = 0;
    s->timer = UINT64_MAX;
    if (drop_wire) {
        fq_clear();             /* frames on the wire during the switchover are lost */
    }
    side_core_init(s);
    ret = qrdma_core_load(&s->core, buf, len, err, sizeof(err));
    if (ret) {
        fprintf(stderr, "  load: %s\n", err);
    }
    CHECK_EQ(ret, 0);
    free(buf);
}

/* Is s's core as a reset leaves it: no layout, no objects, no CQP, PE not ready? */
static bool is_reset(struct side *s)
{
    struct qrdma_core *c = &s->core;

    return !c->hmc.committed && !c->obj.qp && !c->obj.mr && !c->cqp.created && !c->pe_ready &&
           !c->aeq.created && c->dp.be && !c->dp.qp && !c->dp.loop_head &&
           qrdma_core_obj_count(c, QRDMA_HMC_QP) == 0;
}

#define W_SRC(i)    (0x00000 + 0x8000 * (i))    /* A: WRITE sources */
#define W_DST(i)    (0x30000 + 0x8000 * (i))    /* B: WRITE targets, READ sources */
#define R_DST(i)    (0x60000 + 0x8000 * (i))    /* A: READ targets */
#define S_AB_SRC    0x90000
#define S_AB_DST    0xa0000
#define S_BA_SRC    0xb0000
#define S_BA_DST    0xc0000
#define W_BA_SRC    0xd0000
#define W_BA_DST    0xe0000
#define ATOM        0xf0000                     /* B: the counter */
#define ATOM_RES(r) (0xf8000 + 16 * (r))        /* A: the values returned */
#define ATOM_START  1000ull

static void expect_sq(struct side *s, uint8_t op, uint32_t *n)
{
    EXPECT_CQE(s, 1, QPN, *n & 7, op, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    ++*n;
}

/*
 * Rounds of traffic with loss, duplication and reordering on both
 * transmitters; in each, some frames go by, then a core is migrated
 * (A or B, sometimes both, sometimes twice), then the rest completes.
 */
static void test_migrate_mid_traffic(void)
{
    uint32_t a_sq = 0, b_sq = 0, a_rq = 0, b_rq = 0;
    unsigned round, i, migrations = 0;
    struct qsw_stats st[2];

    memset(&dev_fault, 0, sizeof(dev_fault));
    dev_fault.loss_ppm = 30000;
    dev_fault.dup_ppm = 10000;
    dev_fault.reorder_ppm = 20000;
    dev_fault.seed = 11;
    rc_retry_cnt = 7;
    rc_pair();
    rc_retry_cnt = 3;
    w64(SB, DATA + ATOM, ATOM_START);

    for (round = 0; round < 24; round++) {
        uint32_t wlen[3], slen = 100 + 331 * round % 3900, blen = 64 + 997 * round % 0x7000;
        struct wqe w;

        for (i = 0; i < 3; i++) {
            wlen[i] = 1 + (0x1234 * (round + 1) * (i + 3)) % 0x8000;
            fill(SA, W_SRC(i), wlen[i], round * 16 + i);
            memset(dbuf(SA, R_DST(i)), 0, 0x8000);
            w = (struct wqe){ .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = W_DST(i), .nsge = 1,
                              .sge = { { W_SRC(i), wlen[i], 0 } } };
            post_send(SA, QPN, &w);
        }
        for (i = 0; i < 2; i++) {
            w = (struct wqe){ .op = QRDMA_SQ_OP_RDMA_READ, .remote_off = W_DST(i), .nsge = 1,
                              .sge = { { R_DST(i), wlen[i], 0 } } };
            post_send(SA, QPN, &w);
        }
        w = (struct wqe){ .op = QRDMA_SQ_OP_ATOMIC_FETCH_AND_ADD, .remote_off = ATOM,
                          .compare_add = 1, .nsge = 1, .sge = { { ATOM_RES(round), 8, 0 } } };
        post_send(SA, QPN, &w);
        w = (struct wqe){ .op = QRDMA_SQ_OP_ATOMIC_CMP_AND_SWP, .remote_off = ATOM,
                          .compare_add = ATOM_START + 2 * round + 1,
                          .swap = ATOM_START + 2 * round + 2, .nsge = 1,
                          .sge = { { ATOM_RES(round) + 8, 8, 0 } } };
        post_send(SA, QPN, &w);
        fill(SA, S_AB_SRC, slen, 500 + round);
        post_recv(SB, QPN, S_AB_DST, 4096);
        b_rq++;
        w = (struct wqe){ .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { S_AB_SRC, slen, 0 } } };
        post_send(SA, QPN, &w);
        /* B -> A: a SEND and a WRITE the other way. */
        fill(SB, S_BA_SRC, slen + 7, 700 + round);
        post_recv(SA, QPN, S_BA_DST, 4096);
        a_rq++;
        w = (struct wqe){ .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { S_BA_SRC, slen + 7, 0 } } };
        post_send(SB, QPN, &w);
        fill(SB, W_BA_SRC, blen, 900 + round);
        w = (struct wqe){ .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = W_BA_DST, .nsge = 1,
                          .sge = { { W_BA_SRC, blen, 0 } } };
        post_send(SB, QPN, &w);
        if (round & 1) {
            /*
             * An SQ notification (an ioeventfd: the page only) to a core
             * loaded in the round before: the loaded QP is on its page's
             * list again.
             */
            uint64_t kicks = SA->core.stats.sq_notify_kicks;

            qrdma_core_db_notify(&SA->core, 0);
            CHECK_EQ(SA->core.stats.sq_notify_kicks - kicks, 1);
        } else {
            ring_sq(SA, QPN);
        }
        ring_sq(SB, QPN);

        /* Mid-traffic: some frames go by, then the switchover. */
        pump_some(1 + (round * 7) % 40);
        migrate(round & 1 ? SB : SA, round % 3 != 0);
        migrations++;
        if (round % 4 == 2) {
            pump_some(3);
            migrate(SA, true);
            migrate(SB, false);
            migrations += 2;
        }
        pump_ms(20000);

        /* Every completion, in order, and every byte. */
        expect_sq(SA, QSW_WC_RDMA_WRITE, &a_sq);
        expect_sq(SA, QSW_WC_RDMA_WRITE, &a_sq);
        expect_sq(SA, QSW_WC_RDMA_WRITE, &a_sq);
        expect_sq(SA, QSW_WC_RDMA_READ, &a_sq);
        expect_sq(SA, QSW_WC_RDMA_READ, &a_sq);
        expect_sq(SA, QSW_WC_FETCH_ADD, &a_sq);
        expect_sq(SA, QSW_WC_COMP_SWAP, &a_sq);
        expect_sq(SA, QSW_WC_SEND, &a_sq);
        expect_sq(SB, QSW_WC_SEND, &b_sq);
        expect_sq(SB, QSW_WC_RDMA_WRITE, &b_sq);
        EXPECT_CQE(SB, 2, QPN, (b_rq - 1) & 7, QSW_WC_RECV, QSW_WC_SUCCESS, 0, slen);
        EXPECT_CQE(SA, 2, QPN, (a_rq - 1) & 7, QSW_WC_RECV, QSW_WC_SUCCESS, 0, slen + 7);
        expect_no_cqe(SA, 1);
        expect_no_cqe(SA, 2);
        expect_no_cqe(SB, 1);
        expect_no_cqe(SB, 2);
        for (i = 0; i < 3; i++) {
            CHECK(!memcmp(dbuf(SA, W_SRC(i)), dbuf(SB, W_DST(i)), wlen[i]));
        }
        for (i = 0; i < 2; i++) {
            CHECK(!memcmp(dbuf(SA, W_SRC(i)), dbuf(SA, R_DST(i)), wlen[i]));
        }
        CHECK(!memcmp(dbuf(SA, S_AB_SRC), dbuf(SB, S_AB_DST), slen));
        CHECK(!memcmp(dbuf(SB, S_BA_SRC), dbuf(SA, S_BA_DST), slen + 7));
        CHECK(!memcmp(dbuf(SB, W_BA_SRC), dbuf(SA, W_BA_DST), blen));
        CHECK_EQ(r64(SA, DATA + ATOM_RES(round)), ATOM_START + 2 * round);
        CHECK_EQ(r64(SA, DATA + ATOM_RES(round) + 8), ATOM_START + 2 * round + 1);
        CHECK_EQ(r64(SB, DATA + ATOM), ATOM_START + 2 * round + 2);
        if (unit_failures) {
            fprintf(stderr, "  (round %u)\n", round);
            break;
        }
    }
    CHECK_EQ(qrdma_qp_get(&SA->core, QPN)->state, QRDMA_QPS_RTS);
    CHECK_EQ(qrdma_qp_get(&SB->core, QPN)->state, QRDMA_QPS_RTS);
    CHECK(migrations >= 30);
    qsw_engine_stats(qrdma_be_sw_engine(SA->core.dp.be), &st[0]);
    qsw_engine_stats(qrdma_be_sw_engine(SB->core.dp.be), &st[1]);
    /* The loss happened (the counters travel with the state) and was recovered from. */
    CHECK(st[0].fault_lost + st[1].fault_lost > 0);
    CHECK(st[0].retransmits + st[1].retransmits > 0);
    no_errors(SA);
    no_errors(SB);
    memset(&dev_fault, 0, sizeof(dev_fault));
}

/*
 * Migrated while its netdev is full and the transport waits for it: the
 * destination starts with the wire free (its netdev holds nothing of
 * ours; the frame the source's kept is lost with it) and carries on. The
 * retransmit timer travels as the time left on the transport's clock,
 * which stood still while the source waited: half a second of waiting,
 * seven of the QP's timeouts, costs no timeout after the load.
 */
static void test_migrate_while_blocked(void)
{
    const uint32_t len = 0x8000;
    struct qsw_stats st;
    unsigned i;

    rc_pair();
    for (i = 0; i < 3; i++) {
        struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = W_DST(i), .nsge = 1,
                         .sge = { { W_SRC(i), len, 0 } } };

        fill(SA, W_SRC(i), len, 50 + i);
        post_send(SA, QPN, &w);
    }
    SA->tx_limit = true;
    SA->tx_room = 12;
    ring_sq(SA, QPN);
    pump();
    now_ns += 500000000ull;                 /* the wait: no timer falls due in it */
    pump_ms(1);
    CHECK_EQ(SA->frames_sent, 13);
    CHECK_EQ(SA->core.tx_queued, 1);
    CHECK(SA->core.dp.be_tx_busy);
    fq_clear();                             /* the source's netdev goes, with its frame */
    SA->tx_limit = false;
    migrate(SA, false);
    CHECK_EQ(SA->core.tx_queued, 0);
    CHECK(!SA->core.dp.be_tx_busy);
    pump_ms(5000);
    for (i = 0; i < 3; i++) {
        EXPECT_CQE(SA, 1, QPN, i, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
        CHECK(!memcmp(dbuf(SA, W_SRC(i)), dbuf(SB, W_DST(i)), len));
    }
    qsw_engine_stats(qrdma_be_sw_engine(SA->core.dp.be), &st);
    CHECK_EQ(st.timeouts, 0);
    CHECK(st.retransmits > 0);              /* the lost frame, recovered by a NAK */
    no_errors(SA);
    no_errors(SB);
}

/* A stream saved mid-traffic, for the refusal tests. */
static uint8_t *saved_mid_traffic(size_t *len)
{
    struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = W_DST(0), .nsge = 1,
                     .sge = { { W_SRC(0), 0x6000, 0 } } };
    char err[256];
    uint8_t *buf = NULL;

    rc_pair();
    fill(SA, W_SRC(0), 0x6000, 3);
    post_send(SA, QPN, &w);
    w.op = QRDMA_SQ_OP_RDMA_READ;
    w.sge[0].off = R_DST(0);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump_some(9);
    CHECK_EQ(qrdma_core_save(&SA->core, &buf, len, err, sizeof(err)), 0);
    return buf;
}

/* Load what must fail: an error naming something, and the device left reset. */
static bool load_fails(const uint8_t *buf, size_t len, const char *needle)
{
    char err[256] = "";
    int ret = qrdma_core_load(&SA->core, buf, len, err, sizeof(err));
    bool ok = ret < 0 && err[0] && is_reset(SA) && (!needle || strstr(err, needle));

    if (!ok) {
        fprintf(stderr, "  load of %zu bytes: ret %d, \"%s\", reset %d\n", len, ret, err,
                is_reset(SA));
    }
    return ok;
}

/* After the refusals, the good stream still loads and the transfer completes. */
static void finish_good(const uint8_t *buf, size_t len)
{
    char err[256] = "";

    CHECK_EQ(qrdma_core_load(&SA->core, buf, len, err, sizeof(err)), 0);
    pump_ms(20000);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_RDMA_READ, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, W_SRC(0)), dbuf(SB, W_DST(0)), 0x6000));
    CHECK(!memcmp(dbuf(SA, W_SRC(0)), dbuf(SA, R_DST(0)), 0x6000));
}

/* Sample positions: every one near the ends and the section headers, a stride elsewhere. */
static bool sampled(size_t pos, size_t len)
{
    return pos < 300 || pos + 300 > len || pos % 97 == 0;
}

static void test_truncated(void)
{
    size_t len, n, tried = 0;
    uint8_t *buf = saved_mid_traffic(&len);

    for (n = 0; buf && n < len; n++) {
        if (sampled(n, len)) {
            CHECK(load_fails(buf, n, "section"));
            tried++;
            if (unit_failures) {
                break;
            }
        }
    }
    CHECK(tried > 600);
    if (buf) {
        finish_good(buf, len);
    }
    free(buf);
}

static void test_flipped(void)
{
    size_t len, n, tried = 0;
    uint8_t *buf = saved_mid_traffic(&len);

    for (n = 0; buf && n < len; n++) {
        if (sampled(n, len)) {
            buf[n] ^= 1u << (n % 8);
            CHECK(load_fails(buf, len, "section"));
            buf[n] ^= 1u << (n % 8);
            tried++;
            if (unit_failures) {
                break;
            }
        }
    }
    CHECK(tried > 600);
    if (buf) {
        finish_good(buf, len);
    }
    free(buf);
}

/* Fix a section's CRC after a test edits it (its header at off). */
static void reseal(uint8_t *sec)
{
    uint32_t len = (uint32_t)qrdma_mig_get_le(sec + 8, 4);

    qrdma_mig_put_le(sec + 12, qrdma_mig_crc32(qrdma_mig_crc32(0, sec, 12),
                                               sec + QRDMA_MIG_SEC_HDR_LEN, len), 4);
}

/*
 * Versions and sections: another interface version, a newer section
 * version, an unknown section (refused unless marked optional, then
 * skipped), a property that differs, bytes after the end.
 */
static void test_foreign(void)
{
    size_t len;
    uint8_t *buf = saved_mid_traffic(&len);
    uint8_t *big, *end, extra[QRDMA_MIG_SEC_HDR_LEN + 4] = { 0 };
    char err[256];

    if (!buf) {
        return;
    }
    buf[12] ^= 1;                               /* interface minor */
    CHECK(load_fails(buf, len, "interface"));
    buf[12] ^= 1;
    buf[QRDMA_MIG_HDR_LEN + 4] = 9;             /* CFG section version 9 */
    reseal(buf + QRDMA_MIG_HDR_LEN);
    CHECK(load_fails(buf, len, "version 9"));
    buf[QRDMA_MIG_HDR_LEN + 4] = QRDMA_MIG_V_CONFIG;
    reseal(buf + QRDMA_MIG_HDR_LEN);
    /* max_qp, the second u32 after the 6 MAC bytes and the backend */
    buf[QRDMA_MIG_HDR_LEN + QRDMA_MIG_SEC_HDR_LEN + 10] ^= 0x40;
    reseal(buf + QRDMA_MIG_HDR_LEN);
    CHECK(load_fails(buf, len, "field max_qp"));
    buf[QRDMA_MIG_HDR_LEN + QRDMA_MIG_SEC_HDR_LEN + 10] ^= 0x40;
    reseal(buf + QRDMA_MIG_HDR_LEN);

    /* A section from a later version, before END: mandatory, then optional. */
    big = malloc(len + sizeof(extra));
    end = big + len - QRDMA_MIG_SEC_HDR_LEN;
    memcpy(big, buf, len - QRDMA_MIG_SEC_HDR_LEN);
    qrdma_mig_put_le(extra, QRDMA_MIG_TAG('N', 'E', 'W', '!'), 4);
    qrdma_mig_put_le(extra + 4, 1, 2);
    qrdma_mig_put_le(extra + 8, 4, 4);
    memcpy(extra + QRDMA_MIG_SEC_HDR_LEN, "abcd", 4);
    reseal(extra);
    memcpy(end, extra, sizeof(extra));
    memcpy(end + sizeof(extra), buf + len - QRDMA_MIG_SEC_HDR_LEN, QRDMA_MIG_SEC_HDR_LEN);
    CHECK(load_fails(big, len + sizeof(extra), "'NEW!'"));
    qrdma_mig_put_le(end + 6, QRDMA_MIG_SEC_OPTIONAL, 2);
    reseal(end);
    CHECK_EQ(qrdma_core_load(&SA->core, big, len + sizeof(extra), err, sizeof(err)), 0);
    free(big);

    /* Bytes after END. */
    big = malloc(len + 1);
    memcpy(big, buf, len);
    big[len] = 0;
    CHECK(load_fails(big, len + 1, "after the END"));
    free(big);
    finish_good(buf, len);
    free(buf);
}

/* A backend without save/load (as verbs): save and load refuse, naming it. */
static void test_backend_cannot_save(void)
{
    static struct qrdma_be_ops ops;
    uint8_t *buf = (uint8_t *)1;
    size_t len = 1;
    char err[256] = "";

    ops = qrdma_be_sw_ops;
    ops.name = "nosave";
    ops.save = NULL;
    ops.load = NULL;
    dev_backend_ops = &ops;
    rc_pair();
    CHECK_EQ(qrdma_core_save(&SA->core, &buf, &len, err, sizeof(err)), -ENOTSUP);
    CHECK(buf == NULL && len == 0);
    CHECK_STR_CONTAINS(err, "backend nosave cannot save its state: migration is blocked");
    CHECK(!qrdma_core_can_save(&SA->core, err, sizeof(err)));
    dev_backend_ops = NULL;
    setup();
}

/* ---- the driver's CQP without waiting (batches that run over several runs) ---- */

/* Write one CQP WQE (VALID last) at the driver's next slot; no doorbell. */
static uint32_t cqp_post_only(struct side *s, uint8_t op, uint64_t a0, uint64_t a1,
                              uint64_t scratch)
{
    uint64_t w = CQP_SQ + 64ull * s->cqp_next;
    uint32_t index = s->cqp_next;

    memset(mem(s, w), 0, 48);
    w64(s, w, a0);
    w64(s, w + 8, a1);
    w64(s, w + 48, scratch);
    w64(s, w + 56, op | (s->cqp_valid ? QRDMA_CQP_WQE_VALID : 0));
    s->cqp_next = (s->cqp_next + 1) & ((1u << CQP_LOG2) - 1);
    if (!s->cqp_next) {
        s->cqp_valid = !s->cqp_valid;
    }
    return index;
}

/* Take the next CCQ CQE if the device wrote one; the shadow HEAD follows. */
static bool ccq_take(struct side *s, uint64_t *scratch, uint64_t *status)
{
    uint64_t c = CCQ + 32ull * s->ccq_head;

    if (!!(r64(s, c + 24) & QRDMA_CCQ_CQE_VALID) != s->ccq_valid) {
        return false;
    }
    *scratch = r64(s, c);
    *status = r64(s, c + 16);
    s->ccq_head = (s->ccq_head + 1) & ((1u << CQP_LOG2) - 1);
    if (!s->ccq_head) {
        s->ccq_valid = !s->ccq_valid;
    }
    w64(s, CQP_SHADOW, s->ccq_head);
    return true;
}

static unsigned cqe_wqe_index(uint64_t status)
{
    return (unsigned)((status & QRDMA_CCQ_CQE_WQE_INDEX_MASK) >> QRDMA_CCQ_CQE_WQE_INDEX_SHIFT);
}

#define CUT_QPS     14                  /* QPs 2..15 */
#define CUT_PAGES   N_PBLE              /* each QP's RQ: every PBLE, one page each */

/*
 * Migration during a CQP batch that the per-run work budget cut: 14
 * CREATE_QPs whose SQ and RQ are each behind 64 PBLEs (each PBLE read and
 * its page probed, some 520 guest lookups a command), a CREATE_QP of an ID just
 * made (must fail EXISTS) and a NOP, in one doorbell. One run does part of
 * it and asks for another (a bottom half); the core is migrated before
 * that runs (the source's pending bottom half is lost with the source).
 * On the destination the rest runs: every command completes exactly
 * once, in ring order, with its own result; none done before the save
 * runs again (a second CREATE_QP of an ID would fail EXISTS, and the CCQ
 * would hold more CQEs).
 */
static void test_migrate_cqp_batch_cut(void)
{
    uint64_t gpa, scratch, status;
    uint32_t first, done, i, n = CUT_QPS + 2;

    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    for (i = 0; i < CUT_PAGES; i++) {
        CHECK_EQ(qrdma_core_hmc_object(&SA->core, QRDMA_HMC_PBLE, i, &gpa), 0);
        w64(SA, gpa, DATA + 0x1000ull * i);
    }
    /* The create info every command of the batch reads (create_qp_status's). */
    memset(mem(SA, INFO), 0, 64);
    w32(SA, INFO + offsetof(struct qrdma_qp_create_info, pd), PD);
    w8(SA, INFO + offsetof(struct qrdma_qp_create_info, type), QRDMA_QP_TYPE_RC);
    w8(SA, INFO + offsetof(struct qrdma_qp_create_info, flags),
       QRDMA_QP_CREATE_SQ_VIRTMAP | QRDMA_QP_CREATE_RQ_VIRTMAP);
    w32(SA, INFO + offsetof(struct qrdma_qp_create_info, send_cq), 1);
    w32(SA, INFO + offsetof(struct qrdma_qp_create_info, recv_cq), 2);
    w8(SA, INFO + offsetof(struct qrdma_qp_create_info, sq_size_log2), 10);
    w8(SA, INFO + offsetof(struct qrdma_qp_create_info, sq_wqe_log2), 8);
    w8(SA, INFO + offsetof(struct qrdma_qp_create_info, rq_size_log2), 12);
    w8(SA, INFO + offsetof(struct qrdma_qp_create_info, rq_wqe_log2), 6);
    w64(SA, INFO + offsetof(struct qrdma_qp_create_info, sq_addr), 0);
    w64(SA, INFO + offsetof(struct qrdma_qp_create_info, rq_addr), 0);
    w64(SA, INFO + offsetof(struct qrdma_qp_create_info, qp_ctx), QPCTX(0));

    first = SA->cqp_next;
    for (i = 0; i < CUT_QPS; i++) {
        cqp_post_only(SA, QRDMA_CQP_OP_CREATE_QP, 2 + i, INFO, 0x700 + i);
    }
    cqp_post_only(SA, QRDMA_CQP_OP_CREATE_QP, 2, INFO, 0x700 + CUT_QPS);
    cqp_post_only(SA, QRDMA_CQP_OP_NOP, 0, 0, 0x700 + CUT_QPS + 1);
    reg_w(SA, QRDMA_REG_CQP_DB, SA->cqp_next);
    SA->kicks = 0;
    qrdma_core_run(&SA->core, QRDMA_WORK_CQP);
    done = (reg_r(SA, QRDMA_REG_CQP_TAIL) - first) & ((1u << CQP_LOG2) - 1);
    printf("# the first run did %u of %u CQP commands\n", done, n);
    CHECK(done > 0 && done < n);
    CHECK(SA->kicks & QRDMA_WORK_CQP);          /* the rest asked for */

    migrate(SA, false);
    pump();
    for (i = 0; i < n; i++) {
        if (!ccq_take(SA, &scratch, &status)) {
            fprintf(stderr, "  CCQ CQE %u of %u missing\n", i, n);
            CHECK(!"CCQ CQE missing");
            break;
        }
        CHECK_EQ(scratch, 0x700 + i);
        CHECK_EQ(cqe_wqe_index(status), (first + i) & ((1u << CQP_LOG2) - 1));
        CHECK_EQ((status & QRDMA_CCQ_CQE_OPCODE_MASK) >> QRDMA_CCQ_CQE_OPCODE_SHIFT,
                 i == n - 1 ? QRDMA_CQP_OP_NOP : QRDMA_CQP_OP_CREATE_QP);
        if (i == CUT_QPS) {
            CHECK_EQ(major_of(status), QRDMA_CQP_ERR_STATE);
        } else {
            CHECK_EQ(status & (QRDMA_CCQ_CQE_MAJOR_MASK | QRDMA_CCQ_CQE_MINOR_MASK), 0);
        }
    }
    CHECK(!ccq_take(SA, &scratch, &status));    /* each exactly once */
    CHECK_EQ(reg_r(SA, QRDMA_REG_CQP_TAIL), SA->cqp_next);
    CHECK_EQ(reg_r(SA, QRDMA_REG_OBJ_COUNT_QP), CUT_QPS);
    for (i = 0; i < CUT_QPS; i++) {
        CHECK_EQ(qp_state(SA, 2 + i), QRDMA_QPS_RESET);
    }
    /* The duplicate's failure, once (two lines: the reason, then the command). */
    CHECK(logged(SA, "CREATE_QP: QP 2 exists"));
    CHECK_EQ(SA->guest_errors, 2);
}

/*
 * Migration with the CQP stalled by its test hook (x-cqp-stall-opcode):
 * the engine hangs at the WQE until a reset, as a CQP that stopped
 * answering. The stall is state (cqp.stalled) and travels: the
 * destination answers nothing either, as the source would not have, also
 * when it was started without the property; its doorbells run nothing;
 * a device reset (the driver's way out after its CQP timeout) brings the
 * CQP back, as on the source.
 */
static void test_migrate_cqp_stalled(void)
{
    static const uint32_t dest_opcode[2] = { QRDMA_CQP_OP_CREATE_SRQ, QRDMA_CQP_STALL_NEVER };
    uint64_t scratch, status;
    uint32_t tail, v, ccq_before;
    int before = unit_failures;

    for (v = 0; v < 2; v++) {
        dev_cqp_stall_opcode = QRDMA_CQP_OP_CREATE_SRQ;
        setup();
        cqp_post_only(SA, QRDMA_CQP_OP_NOP, 0, 0, 0x801);
        tail = cqp_post_only(SA, QRDMA_CQP_OP_CREATE_SRQ, 1, INFO, 0x802);
        cqp_post_only(SA, QRDMA_CQP_OP_NOP, 0, 0, 0x803);
        reg_w(SA, QRDMA_REG_CQP_DB, SA->cqp_next);
        pump();
        CHECK(ccq_take(SA, &scratch, &status));
        CHECK_EQ(scratch, 0x801);
        CHECK(!ccq_take(SA, &scratch, &status));
        CHECK_EQ(reg_r(SA, QRDMA_REG_CQP_TAIL), tail);
        CHECK(logged(SA, "CQP stalled at WQE"));
        ccq_before = SA->ccq_head;

        dev_cqp_stall_opcode = dest_opcode[v];
        migrate(SA, false);
        pump();
        CHECK(SA->core.cqp.stalled);
        CHECK(!ccq_take(SA, &scratch, &status));
        CHECK_EQ(reg_r(SA, QRDMA_REG_CQP_TAIL), tail);
        /* The driver rings again: still nothing. */
        cqp_post_only(SA, QRDMA_CQP_OP_NOP, 0, 0, 0x804);
        reg_w(SA, QRDMA_REG_CQP_DB, SA->cqp_next);
        pump();
        CHECK(!ccq_take(SA, &scratch, &status));
        CHECK_EQ(SA->ccq_head, ccq_before);
        CHECK_EQ(reg_r(SA, QRDMA_REG_CQP_TAIL), tail);
        /* Its way out, as the driver's CQP timeout takes: reset, bring-up. */
        reg_w(SA, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
        CHECK(is_reset(SA));
        side_bringup(SA);
        CHECK(!SA->core.cqp.stalled);
        CQP_OK(cqp(SA, QRDMA_CQP_OP_NOP, 0, 0, 0, 0, 0, 0));
        if (unit_failures != before) {
            fprintf(stderr, "  (destination's stall opcode %u)\n", dest_opcode[v]);
            break;
        }
    }
    dev_cqp_stall_opcode = QRDMA_CQP_STALL_NEVER;
    setup();
}

/*
 * Migration with the CQP waiting for CCQ room: the driver has read no
 * CCQ entry, the CCQ is full, and two more NOPs wait (CCQ_FULL). The
 * source would run them at the doorbell after the driver makes room;
 * the destination's load tries once at once (one more "no room" line,
 * nothing run), then the driver reads the CCQ and rings: both complete,
 * each once.
 */
static void test_migrate_cqp_ccq_full(void)
{
    uint64_t scratch, status;
    uint32_t i, done = 0;
    int errors;

    setup();
    for (i = 0; i < (1u << CQP_LOG2) - 1; i++) {
        cqp_post_only(SA, QRDMA_CQP_OP_NOP, 0, 0, 0x900 + i);
    }
    reg_w(SA, QRDMA_REG_CQP_DB, SA->cqp_next);
    pump();
    cqp_post_only(SA, QRDMA_CQP_OP_NOP, 0, 0, 0x9a0);
    cqp_post_only(SA, QRDMA_CQP_OP_NOP, 0, 0, 0x9a1);
    reg_w(SA, QRDMA_REG_CQP_DB, SA->cqp_next);
    pump();
    CHECK(logged(SA, "no room in the CCQ"));
    CHECK(reg_r(SA, QRDMA_REG_CQP_TAIL) != SA->cqp_next);
    errors = SA->guest_errors;

    migrate(SA, false);
    pump();
    CHECK_EQ(SA->guest_errors, errors + 1);     /* the load's one try */
    CHECK(reg_r(SA, QRDMA_REG_CQP_TAIL) != SA->cqp_next);
    while (ccq_take(SA, &scratch, &status)) {
        CHECK_EQ(scratch, 0x900 + done);
        done++;
    }
    CHECK_EQ(done, (1u << CQP_LOG2) - 1);
    reg_w(SA, QRDMA_REG_CQP_DB, SA->cqp_next);
    pump();
    CHECK(ccq_take(SA, &scratch, &status));
    CHECK_EQ(scratch, 0x9a0);
    CHECK(ccq_take(SA, &scratch, &status));
    CHECK_EQ(scratch, 0x9a1);
    CHECK(!ccq_take(SA, &scratch, &status));
    CHECK_EQ(reg_r(SA, QRDMA_REG_CQP_TAIL), SA->cqp_next);
}

/* ---- a reset asked for from inside the device's own work ---- */

static uint8_t *reset_good_buf;
static size_t reset_good_len;
static int reset_hook_runs;
static int reset_hook_save_ret, reset_hook_load_ret;
static char reset_hook_save_err[256], reset_hook_load_err[256];
static uint32_t reset_hook_qps;

/*
 * On A's first interrupt, with the device's work on the stack: the guest
 * resets it (DEV_CTRL.RESET through an MSI-X message aimed at BAR0, so
 * deferred), then a save and a load are tried.
 */
static void reset_hook(struct side *s, unsigned vector)
{
    if (s != SA || reset_hook_runs++) {
        return;
    }
    qrdma_core_reg_write(&s->core, QRDMA_REG_DEV_CTRL, 4, QRDMA_DEV_CTRL_RESET);
    CHECK(s->core.guard.reset_pending);
    reset_hook_save_ret = qrdma_core_save(&s->core, &(uint8_t *){ NULL }, &(size_t){ 0 },
                                          reset_hook_save_err, sizeof(reset_hook_save_err));
    reset_hook_load_ret = qrdma_core_load(&s->core, reset_good_buf, reset_good_len,
                                          reset_hook_load_err, sizeof(reset_hook_load_err));
    reset_hook_qps = qrdma_core_obj_count(&s->core, QRDMA_HMC_QP);
}

/*
 * Migration with a device reset asked for but not done: a reset from
 * inside the device's own work (an interrupt aimed back at DEV_CTRL) is
 * deferred to the end of the work in progress (the re-entrancy guard).
 * Until then a save and a load are refused with a message saying why,
 * and change nothing (the load does not reset or fill the device under
 * the work); once the work ends the reset is done, and a save then
 * carries a device just reset: the destination is reset, not half of
 * the old state, and the driver's bring-up on it works.
 */
static void test_migrate_reset_pending(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x40000, .nsge = 1,
                     .sge = { { 0x10000, 0x4000, 0 } } };
    char err[256];

    setup();
    /* A good stream of A without the QP: what a load that was let through would leave. */
    CHECK_EQ(qrdma_core_save(&SA->core, &reset_good_buf, &reset_good_len, err, sizeof(err)), 0);
    create_cq_ex(SA, 1, 4, true);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq(SB, 2);
    create_qp(SA, QPN, &rc_spec);
    create_qp(SB, QPN, &rc_spec);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    pump();
    reg_w(SA, QRDMA_REG_CEQCTL(0), QRDMA_EQCTL_CAUSE_ENA | 1);
    reg_w(SA, QRDMA_REG_DYN_CTL(1), QRDMA_DYN_CTL_INTENA);
    w64(SA, CQ_SHADOW(1) + 8, 1 | QRDMA_CQ_ARM_NEXT);
    db(SA, 0, QRDMA_DB_CQ_ARM, 1);
    reset_hook_runs = 0;
    dp_tb_irq_hook = reset_hook;
    fill(SA, 0x10000, 0x4000, 9);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    while (!reset_hook_runs && (SA->kicks || SB->kicks || frames_in_flight)) {
        pump_some(1);
    }
    dp_tb_irq_hook = NULL;
    CHECK_EQ(reset_hook_runs, 1);
    CHECK_EQ(reset_hook_save_ret, -ENOTSUP);
    CHECK_STR_CONTAINS(reset_hook_save_err, "reset");
    CHECK_EQ(reset_hook_load_ret, -ENOTSUP);
    CHECK_STR_CONTAINS(reset_hook_load_err, "reset");
    CHECK_EQ(reset_hook_qps, 1);                /* the refused load touched nothing */
    free(reset_good_buf);
    reset_good_buf = NULL;

    /* The work ended: the reset is done, and what migrates is a device just reset. */
    CHECK(!SA->core.guard.reset_pending);
    CHECK(is_reset(SA));
    migrate(SA, true);
    CHECK(is_reset(SA));
    CHECK_EQ(reg_r(SA, QRDMA_REG_PE_STATUS), 0);
    CHECK_EQ(SA->core.stats.resets_deferred, 1);
    pump_ms(2000);
    CHECK(is_reset(SA));
    log_clear(SA);
    side_bringup(SA);
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_qp(SA, QPN, &rc_spec);
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_RESET);
    no_errors(SA);
}

/* ---- a CQ in overflow ---- */

/*
 * What the overflow left on B, compared between a run without migration
 * and one migrated at each point: CQ 3's ring and the bytes after it, the
 * AEQEs, the QP's state, the counters, and A's send completions.
 */
struct ovf_outcome {
    uint8_t ring[4 * QRDMA_CQE_SIZE + 256];
    struct aeqe aeqe[8];
    unsigned n_aeqe;
    uint8_t qp_state;
    bool cq_error;
    uint64_t cqes, cq_overflows;
    struct cqe a_cqe[8];
    unsigned n_a_cqe;
    int b_sent;
};

/* The overflow of test_core_dp's test_cq_overflow: B's receive CQ 3 of 4 CQEs, 5 SENDs. */
static void ovf_start(void)
{
    struct qp_spec sb = rc_spec;
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };
    unsigned i;

    sb.recv_cq = 3;
    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq_ex(SB, 3, 2, false);
    create_qp(SA, QPN, &rc_spec);
    create_qp(SB, QPN, &sb);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    memset(mem(SB, CQ_RING(3) + 4 * QRDMA_CQE_SIZE), 0xa5, 256);
    for (i = 0; i < 5; i++) {
        post_recv(SB, QPN, 0x9000 + 0x100 * i, 256);
        post_send(SA, QPN, &w);
    }
    ring_sq(SA, QPN);
}

/* One step of the exchange: kicked work, then one frame delivered. */
static bool ovf_step(void)
{
    if (!SA->kicks && !SB->kicks && !frames_in_flight) {
        return false;
    }
    pump_some(1);
    return true;
}

/*
 * The exchange, B migrated after `at` steps (never if at is UINT32_MAX);
 * then the rest in the same steps, a receive WQE that flushes, and time
 * for A to give up. Returns the steps the exchange took.
 */
static unsigned ovf_run(unsigned at, struct ovf_outcome *o, bool *in_window)
{
    struct cqe e;
    unsigned steps = 0;

    ovf_start();
    while (steps < at && ovf_step()) {
        steps++;
    }
    if (at != UINT32_MAX) {
        /* The CQ in error, its QP not yet moved: the QP_FATAL owed. */
        *in_window = SB->core.obj.cq[3].error && qp_state(SB, QPN) != QRDMA_QPS_ERR;
        migrate(SB, false);
    }
    while (ovf_step()) {
        steps++;
    }
    post_recv(SB, QPN, 0x9000, 256);
    db(SB, 0, QRDMA_DB_RQ, QPN);
    pump_ms(5000);
    memset(o, 0, sizeof(*o));
    memcpy(o->ring, mem(SB, CQ_RING(3)), sizeof(o->ring));
    while (o->n_aeqe < 8 && poll_aeq(SB, &o->aeqe[o->n_aeqe])) {
        o->n_aeqe++;
    }
    o->qp_state = qp_state(SB, QPN);
    o->cq_error = SB->core.obj.cq[3].error;
    o->cqes = SB->core.dp.cqes;
    o->cq_overflows = SB->core.dp.cq_overflows;
    while (o->n_a_cqe < 8 && poll_cq(SA, 1, &e)) {
        o->a_cqe[o->n_a_cqe++] = e;
    }
    o->b_sent = SB->frames_sent;
    return steps;
}

/*
 * Migration with a CQ in overflow (IBTA vol. 1 11.6.3; test_core_dp's
 * test_cq_overflow says what the device does): B's receive CQ of 4 CQEs
 * takes 5 SENDs. B is migrated after each step of the exchange (frames
 * kept on the wire, the same steps after): before the overflow, where the
 * CQ is in error and its QP not yet moved to ERR (the QP_FATAL owed),
 * and after it. Each time the destination ends exactly as the source
 * does without a migration: the same bytes in the CQ's ring and none past
 * it, the same AEQEs (CQ_OVERFLOW then QP_FATAL, none twice), the QP in
 * ERR, the CQ still in error (a receive WQE posted later flushes and
 * writes no CQE), the same counters, and A's completions the same.
 */
static void test_migrate_cq_overflow(void)
{
    struct ovf_outcome ref, got;
    unsigned k, i, steps, in_window = 0;
    int before = unit_failures;
    bool win = false;

    steps = ovf_run(UINT32_MAX, &ref, &win);
    CHECK_EQ(ref.n_aeqe, 2);
    CHECK_EQ(ref.aeqe[0].code, QRDMA_AE_CQ_OVERFLOW);
    CHECK_EQ(ref.aeqe[0].id, 3);
    CHECK_EQ(ref.aeqe[1].code, QRDMA_AE_QP_FATAL);
    CHECK_EQ(ref.aeqe[1].id, QPN);
    CHECK_EQ(ref.qp_state, QRDMA_QPS_ERR);
    CHECK(ref.cq_error);
    CHECK_EQ(ref.cqes, 4);
    CHECK_EQ(ref.cq_overflows, 1);
    CHECK_EQ(ref.n_a_cqe, 5);
    for (i = 0; i < 256; i++) {
        CHECK_EQ(ref.ring[4 * QRDMA_CQE_SIZE + i], 0xa5);
    }

    for (k = 0; k <= steps; k++) {
        ovf_run(k, &got, &win);
        in_window += win;
        CHECK(!memcmp(got.ring, ref.ring, sizeof(ref.ring)));
        CHECK_EQ(got.n_aeqe, ref.n_aeqe);
        for (i = 0; i < ref.n_aeqe && i < got.n_aeqe; i++) {
            CHECK_EQ(got.aeqe[i].code, ref.aeqe[i].code);
            CHECK_EQ(got.aeqe[i].id, ref.aeqe[i].id);
            CHECK_EQ(got.aeqe[i].source, ref.aeqe[i].source);
            CHECK_EQ(got.aeqe[i].ctx, ref.aeqe[i].ctx);
        }
        CHECK_EQ(got.qp_state, ref.qp_state);
        CHECK_EQ(got.cq_error, ref.cq_error);
        CHECK_EQ(got.cqes, ref.cqes);
        CHECK_EQ(got.cq_overflows, ref.cq_overflows);
        CHECK_EQ(got.n_a_cqe, ref.n_a_cqe);
        for (i = 0; i < ref.n_a_cqe && i < got.n_a_cqe; i++) {
            CHECK_EQ(got.a_cqe[i].wqe_index, ref.a_cqe[i].wqe_index);
            CHECK_EQ(got.a_cqe[i].opcode, ref.a_cqe[i].opcode);
            CHECK_EQ(got.a_cqe[i].status, ref.a_cqe[i].status);
        }
        if (unit_failures != before) {
            fprintf(stderr, "  (B migrated after %u of %u steps)\n", k, steps);
            break;
        }
    }
    printf("# B migrated at %u points; at %u the CQ was in error and its QP not yet in ERR\n",
           k, in_window);
    CHECK(in_window > 0);
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_migrate_mid_traffic),
    UNIT_TEST(test_migrate_while_blocked),
    UNIT_TEST(test_truncated),
    UNIT_TEST(test_flipped),
    UNIT_TEST(test_foreign),
    UNIT_TEST(test_backend_cannot_save),
    UNIT_TEST(test_migrate_cqp_batch_cut),
    UNIT_TEST(test_migrate_cqp_stalled),
    UNIT_TEST(test_migrate_cqp_ccq_full),
    UNIT_TEST(test_migrate_reset_pending),
    UNIT_TEST(test_migrate_cq_overflow),
};

int main(void)
{
    int ret = unit_run("core-mig", tests, sizeof(tests) / sizeof(tests[0]));

    teardown();
    return ret;
}
