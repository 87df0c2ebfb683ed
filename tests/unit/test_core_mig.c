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
        ring_sq(SA, QPN);
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

static const struct unit_test tests[] = {
    UNIT_TEST(test_migrate_mid_traffic),
    UNIT_TEST(test_migrate_while_blocked),
    UNIT_TEST(test_truncated),
    UNIT_TEST(test_flipped),
    UNIT_TEST(test_foreign),
    UNIT_TEST(test_backend_cannot_save),
};

int main(void)
{
    int ret = unit_run("core-mig", tests, sizeof(tests) / sizeof(tests[0]));

    teardown();
    return ret;
}
