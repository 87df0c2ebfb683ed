/*
 * Memory windows (interface 0.7, docs/hw-spec.md section 18.4) on the
 * data-path test bed of dp_testbed.[ch]: two device cores back to back
 * over the software transport. B owns the memory: an MR with MW_BIND and
 * windows on it, bound through BIND_MW WQEs on its SQ; A is the peer that
 * WRITEs, READs and does atomics through the window's rkey. Each rule of
 * bind, access, invalidation and dealloc has a case that fails if the
 * rule is removed: the completion status, the QP state, the log line,
 * and the bytes around the target.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/qrdma_core.h"
#include "dp_testbed.h"
#include "unit.h"

int unit_failures;

#define MWMR_INDEX  5
#define MWMR_KEY    0x50
#define MWMR_STAG   ((uint32_t)MWMR_INDEX << QRDMA_STAG_INDEX_SHIFT | MWMR_KEY)
#define MWMR_OFF    0x40000         /* its bytes: DATA + MWMR_OFF, 64 KB */
#define MWMR_LEN    0x10000u
#define MWMR_IOVA   0x70000000ull

#define MW_INDEX    6
#define MW_STAG(k)  ((uint32_t)MW_INDEX << QRDMA_STAG_INDEX_SHIFT | (k))
#define MW_OFF      0x1000          /* the window: MWMR_IOVA + 0x1000, 8 KB */
#define MW_LEN      0x2000u

#define RW          (QRDMA_ACCESS_REMOTE_WRITE | QRDMA_ACCESS_REMOTE_READ)
#define SENTINEL    0xcc

/* B: the MR windows are bound to, with `access`, in PD `pd`. */
static void mwmr_reg(uint32_t pd, uint32_t access)
{
    CQP_OK(cqp(SB, QRDMA_CQP_OP_REG_MR, MWMR_STAG,
               pd | (uint64_t)access << QRDMA_MR_ARG1_ACCESS_SHIFT |
               12ull << QRDMA_MR_ARG1_PAGE_SHIFT, MWMR_IOVA, MWMR_LEN, DATA + MWMR_OFF, 0));
    memset(dbuf(SB, MWMR_OFF), SENTINEL, MWMR_LEN);
}

static uint64_t mw_alloc(struct side *s, uint32_t stag, uint32_t pd, unsigned type)
{
    return cqp(s, QRDMA_CQP_OP_ALLOC_STAG, stag,
               pd | (uint64_t)type << QRDMA_MR_ARG1_MW_TYPE_SHIFT, 0, 0, 0, 0);
}

/* A BIND_MW WQE (section 18.4); returns its index. */
static uint32_t post_bind(struct side *s, uint32_t qp, uint32_t mw_stag, uint32_t new_stag,
                          uint32_t mr_stag, uint32_t access, uint64_t addr, uint64_t len)
{
    uint32_t index;
    bool valid;
    uint64_t a = sq_next_slot(s, qp, &index, &valid);

    memset(mem(s, a), 0, 56);
    w64(s, a + 0, addr);
    w64(s, a + 8, new_stag | (uint64_t)mr_stag << QRDMA_SQ_MW_MR_STAG_SHIFT);
    w64(s, a + 16, len);
    w64(s, a + 32, mw_stag | (uint64_t)access << QRDMA_SQ_MW_ACCESS_SHIFT);
    w64(s, a + 56, QRDMA_SQ_OP_BIND_MW | QRDMA_SQ_HDR_SIGNALED |
                   (valid ? QRDMA_SQ_HDR_VALID : 0));
    return index;
}

/* A fresh pair; B: the MR (LOCAL_WRITE | MW_BIND), a window of `type` with key 0x40. */
static void mw_setup(unsigned type)
{
    rc_pair();
    mwmr_reg(PD, QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_MW_BIND);
    CQP_OK(mw_alloc(SB, MW_STAG(0x40), PD, type));
}

/* B binds the window (key 0x40 -> 0x41) over its 8 KB with `access`; CQE `idx` says so. */
static void mw_bind_ok(uint32_t access, uint32_t idx)
{
    post_bind(SB, QPN, MW_STAG(0x40), MW_STAG(0x41), MWMR_STAG, access, MWMR_IOVA + MW_OFF,
              MW_LEN);
    ring_sq(SB, QPN);
    pump();
    EXPECT_CQE(SB, 1, QPN, idx, QSW_WC_BIND_MW, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
}

/* Every byte of the MR outside [off, off + len) is still the sentinel. */
static bool untouched_outside(uint64_t off, uint64_t len)
{
    const uint8_t *p = dbuf(SB, MWMR_OFF);
    uint64_t i;

    for (i = 0; i < MWMR_LEN; i++) {
        if ((i < off || i >= off + len) && p[i] != SENTINEL) {
            return false;
        }
    }
    return true;
}

/* A WQE from A through the window's rkey (key 0x41) at window offset `off`. */
static struct wqe through_window(uint8_t op, uint64_t off, uint32_t len)
{
    struct wqe w = { .op = op, .remote_off = MWMR_IOVA + MW_OFF + off - IOVA,
                     .rkey = MW_STAG(0x41), .nsge = 1, .sge = { { 0x5000, len, 0 } } };

    return w;
}

/* ---- type 2: bind, remote access, invalidation ---------------------------------------- */

/*
 * The whole life of a type 2 window: bound through B's SQ, A WRITEs and
 * READs through it (bytes compared, nothing outside written), an atomic
 * where it grants one; LOCAL_INV ends it and the rkey is refused; bound
 * again with a new key after the invalidation.
 */
static void test_mw_type2(void)
{
    struct wqe wr = through_window(QRDMA_SQ_OP_RDMA_WRITE, 0, MW_LEN);
    struct wqe rd = through_window(QRDMA_SQ_OP_RDMA_READ, 0x100, 0x400);
    struct wqe inv = { .op = QRDMA_SQ_OP_LOCAL_INV, .imm = MW_STAG(0x41) };
    const uint64_t win = DATA + MWMR_OFF + MW_OFF;

    rd.sge[0].off = 0x9000;
    mw_setup(QRDMA_MW_TYPE_2);
    fill(SA, 0x5000, MW_LEN, 9);
    mw_bind_ok(RW, 0);
    /* The device's truth: the window VALID with the new key, bound to the MR and QP. */
    CQP_OK(cqp(SB, QRDMA_CQP_OP_QUERY_STAG, MW_STAG(0x41), INFO, 0, 0, 0, 0));
    CHECK_EQ(r64(SB, INFO) & QRDMA_MR_CTX_STATE_MASK, QRDMA_MR_STATE_VALID);
    CHECK_EQ((r64(SB, INFO) & QRDMA_MR_CTX_TYPE_MASK) >> QRDMA_MR_CTX_TYPE_SHIFT,
             QRDMA_MR_TYPE_MW);
    CHECK_EQ((r64(SB, INFO + 8) & QRDMA_MR_CTX1_MW_TYPE_MASK) >> QRDMA_MR_CTX1_MW_TYPE_SHIFT,
             QRDMA_MW_TYPE_2);
    CHECK_EQ(r64(SB, INFO + 16), MWMR_IOVA + MW_OFF);
    CHECK_EQ(r64(SB, INFO + 24), MW_LEN);
    CHECK_EQ(r64(SB, INFO + 32), MWMR_STAG);
    CHECK_EQ(r64(SB, INFO + 48), QPN);
    CQP_OK(cqp(SB, QRDMA_CQP_OP_QUERY_STAG, MWMR_STAG, INFO, 0, 0, 0, 0));
    CHECK_EQ(r64(SB, INFO + 56), 1);            /* one window bound to the MR */

    post_send(SA, QPN, &wr);
    post_send(SA, QPN, &rd);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_RDMA_READ, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(mem(SB, win), dbuf(SA, 0x5000), MW_LEN));
    CHECK(untouched_outside(MW_OFF, MW_LEN));
    CHECK(!memcmp(dbuf(SA, 0x9000), mem(SB, win + 0x100), 0x400));

    /* LOCAL_INV: the window is FREE, the MR holds no window any more. */
    post_send(SB, QPN, &inv);
    ring_sq(SB, QPN);
    pump();
    EXPECT_CQE(SB, 1, QPN, 1, QSW_WC_LOCAL_INV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK_EQ(SB->core.obj.mr[MW_INDEX].state, QRDMA_MR_STATE_FREE);
    CHECK_EQ(SB->core.obj.mr[MWMR_INDEX].mw_bound, 0);

    /* A type 2 window is bound again after its invalidation, with a new key. */
    post_bind(SB, QPN, MW_STAG(0x41), MW_STAG(0x42), MWMR_STAG,
              RW | QRDMA_ACCESS_REMOTE_ATOMIC, MWMR_IOVA + MW_OFF, MW_LEN);
    ring_sq(SB, QPN);
    pump();
    EXPECT_CQE(SB, 1, QPN, 2, QSW_WC_BIND_MW, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    {
        struct wqe fa = { .op = QRDMA_SQ_OP_ATOMIC_FETCH_AND_ADD,
                          .remote_off = MWMR_IOVA + MW_OFF + 0x40 - IOVA,
                          .rkey = MW_STAG(0x42), .compare_add = 5, .nsge = 1,
                          .sge = { { 0x7000, 8, 0 } } };

        w64(SB, win + 0x40, 100);
        post_send(SA, QPN, &fa);
        ring_sq(SA, QPN);
        pump();
        EXPECT_CQE(SA, 1, QPN, 2, QSW_WC_FETCH_ADD, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
        CHECK_EQ(r64(SB, win + 0x40), 105);
        CHECK_EQ(r64(SA, DATA + 0x7000), 100);
    }
    /* The old key (0x41) is dead: a WRITE through it is a remote access error. */
    memset(mem(SB, win), SENTINEL, MW_LEN);
    post_send(SA, QPN, &wr);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 3, QSW_WC_RDMA_WRITE, QSW_WC_REM_ACCESS_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);
    CHECK(untouched_outside(0, 0));
    CHECK(logged(SB, "STag 0x00000641"));
    no_errors(SA);
}

/* After LOCAL_INV the window's rkey is refused and nothing is written. */
static void test_mw_refused_after_inv(void)
{
    struct wqe wr = through_window(QRDMA_SQ_OP_RDMA_WRITE, 0, 64);
    struct wqe inv = { .op = QRDMA_SQ_OP_LOCAL_INV, .imm = MW_STAG(0x41) };

    mw_setup(QRDMA_MW_TYPE_2);
    mw_bind_ok(RW, 0);
    post_send(SB, QPN, &inv);
    ring_sq(SB, QPN);
    pump();
    EXPECT_CQE(SB, 1, QPN, 1, QSW_WC_LOCAL_INV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    fill(SA, 0x5000, 64, 4);
    post_send(SA, QPN, &wr);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_REM_ACCESS_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);
    CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_ERR);
    CHECK(untouched_outside(0, 0));
    CHECK(logged(SB, "an unbound window"));
}

/* Invalidating twice: the second LOCAL_INV fails (LOC_QP_OP_ERR), the QP goes to ERR. */
static void test_mw_invalidate_twice(void)
{
    struct wqe inv = { .op = QRDMA_SQ_OP_LOCAL_INV, .imm = MW_STAG(0x41) };
    struct wqe snd = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 16, 0 } } };

    mw_setup(QRDMA_MW_TYPE_2);
    mw_bind_ok(RW, 0);
    log_clear(SB);
    post_send(SB, QPN, &inv);
    post_send(SB, QPN, &inv);
    post_send(SB, QPN, &snd);
    ring_sq(SB, QPN);
    pump();
    EXPECT_CQE(SB, 1, QPN, 1, QSW_WC_LOCAL_INV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 1, QPN, 2, QSW_WC_LOCAL_INV, QSW_WC_LOC_QP_OP_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 1, QPN, 3, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_ERR);
    CHECK(logged(SB, "already invalid"));
    CHECK_EQ(SB->core.obj.mr[MWMR_INDEX].mw_bound, 0);   /* not dropped twice */
}

/*
 * Remote invalidation: A's SEND_WITH_INV names the window; B's receive
 * completes WITH_INV and the window is FREE. A second one finds it invalid:
 * the responder refuses it (REM_INV_REQ_ERR on both sides, both QPs in ERR).
 */
static void test_mw_send_with_inv(void)
{
    struct wqe si = { .op = QRDMA_SQ_OP_SEND_WITH_INV, .imm = MW_STAG(0x41), .nsge = 1,
                      .sge = { { 0x5000, 32, 0 } } };

    mw_setup(QRDMA_MW_TYPE_2);
    mw_bind_ok(RW, 0);
    post_recv(SB, QPN, 0x9000, 64);
    post_recv(SB, QPN, 0x9100, 64);
    post_send(SA, QPN, &si);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_WITH_INV, 32);
    CHECK_EQ(SB->core.obj.mr[MW_INDEX].state, QRDMA_MR_STATE_FREE);
    CHECK_EQ(SB->core.obj.mr[MWMR_INDEX].mw_bound, 0);

    post_send(SA, QPN, &si);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_SEND, QSW_WC_REM_INV_REQ_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 1, QSW_WC_RECV, QSW_WC_REM_INV_REQ_ERR, 0, ~0u);
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);
    CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_ERR);
}

/*
 * Accesses the window does not allow, each on a fresh pair: beyond its
 * end, a right it does not grant, the window's STag as an lkey. The peer's
 * WR fails with REM_ACCESS_ERR (the lkey: LOC_PROT_ERR), the QP goes to
 * ERR, and no byte of the MR changes.
 */
static void test_mw_access_bad(void)
{
    static const struct {
        const char *log;
        uint32_t access;            /* the window's */
        uint8_t op;
        uint64_t off;
        uint32_t len;
    } cases[] = {
        { "not inside window", RW, QRDMA_SQ_OP_RDMA_WRITE, MW_LEN - 8, 16 },
        { "not inside window", RW, QRDMA_SQ_OP_RDMA_READ, MW_LEN - 8, 16 },
        { "window 6 grants 0x4", QRDMA_ACCESS_REMOTE_READ, QRDMA_SQ_OP_RDMA_WRITE, 0, 16 },
        { "window 6 grants 0x2", QRDMA_ACCESS_REMOTE_WRITE, QRDMA_SQ_OP_RDMA_READ, 0, 16 },
        { "window 6 grants 0x6", RW, QRDMA_SQ_OP_ATOMIC_CMP_AND_SWP, 0, 8 },
    };
    unsigned c;

    for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct wqe w = through_window(cases[c].op, cases[c].off, cases[c].len);
        uint8_t op = cases[c].op == QRDMA_SQ_OP_RDMA_WRITE ? QSW_WC_RDMA_WRITE :
                     cases[c].op == QRDMA_SQ_OP_RDMA_READ ? QSW_WC_RDMA_READ : QSW_WC_COMP_SWAP;

        mw_setup(QRDMA_MW_TYPE_2);
        mw_bind_ok(cases[c].access, 0);
        fill(SA, 0x5000, 64, 5);
        memset(dbuf(SA, 0x5000 + 64), 0x77, 64);
        post_send(SA, QPN, &w);
        ring_sq(SA, QPN);
        pump();
        EXPECT_CQE(SA, 1, QPN, 0, op, QSW_WC_REM_ACCESS_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
        CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);
        CHECK(untouched_outside(0, 0));
        CHECK_EQ(*dbuf(SA, 0x5000 + 64), 0x77);   /* a refused READ wrote nothing here */
        if (!logged(SB, cases[c].log)) {
            fprintf(stderr, "  case %u: no log line with '%s'\n", c, cases[c].log);
            unit_failures++;
        }
    }

    /* A window's STag is no lkey: B's own SEND from it fails locally. */
    {
        struct wqe snd = { .op = QRDMA_SQ_OP_SEND, .nsge = 1,
                           .sge = { { MWMR_IOVA + MW_OFF - IOVA, 16, MW_STAG(0x41) } } };

        mw_setup(QRDMA_MW_TYPE_2);
        mw_bind_ok(RW, 0);
        post_recv(SA, QPN, 0x9000, 64);
        post_send(SB, QPN, &snd);
        ring_sq(SB, QPN);
        pump();
        EXPECT_CQE(SB, 1, QPN, 1, QSW_WC_SEND, QSW_WC_LOC_PROT_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
        CHECK(logged(SB, "remote access only"));
    }
}

/*
 * Type 2B association, at the translation: the QP the window is bound to
 * passes; another QP of the same PD, and an access with no QP, are refused.
 */
static void test_mw_qp_association(void)
{
    struct qrdma_mr_walk w;

    mw_setup(QRDMA_MW_TYPE_2);
    mw_bind_ok(RW, 0);
    CHECK_EQ(qrdma_mr_translate_qp(&SB->core, MW_STAG(0x41), PD, QPN, MWMR_IOVA + MW_OFF, 16,
                                   QRDMA_ACCESS_REMOTE_WRITE, &w), 0);
    CHECK_EQ(w.stag, MWMR_STAG);
    CHECK_EQ(w.pos, MW_OFF);
    CHECK_EQ(qrdma_mr_translate_qp(&SB->core, MW_STAG(0x41), PD, QPN + 1, MWMR_IOVA + MW_OFF,
                                   16, QRDMA_ACCESS_REMOTE_WRITE, &w), QRDMA_MR_ERR_QP);
    CHECK_EQ(qrdma_mr_translate(&SB->core, MW_STAG(0x41), PD, MWMR_IOVA + MW_OFF, 16,
                                QRDMA_ACCESS_REMOTE_WRITE, &w), QRDMA_MR_ERR_QP);
    CHECK_EQ(qrdma_mr_translate_qp(&SB->core, MW_STAG(0x41), PD + 1, QPN, MWMR_IOVA + MW_OFF,
                                   16, QRDMA_ACCESS_REMOTE_WRITE, &w), QRDMA_MR_ERR_PD);
    /* The MR's own remote rights do not matter (it has none): the window's do. */
    CHECK_EQ(qrdma_mr_translate(&SB->core, MWMR_STAG, PD, MWMR_IOVA, 16,
                                QRDMA_ACCESS_REMOTE_WRITE, &w), QRDMA_MR_ERR_ACCESS);
    /* DESTROY_QP unbinds it: a later QP with the same ID finds it unbound. */
    CQP_OK(cqp(SB, QRDMA_CQP_OP_DESTROY_QP, QPN, 0, 0, 0, 0, 0));
    CHECK_EQ(SB->core.obj.mr[MW_INDEX].state, QRDMA_MR_STATE_FREE);
    CHECK_EQ(SB->core.obj.mr[MWMR_INDEX].mw_bound, 0);
    CHECK_EQ(qrdma_mr_translate_qp(&SB->core, MW_STAG(0x41), PD, QPN, MWMR_IOVA + MW_OFF, 16,
                                   QRDMA_ACCESS_REMOTE_WRITE, &w), QRDMA_MR_ERR_INVALID);
}

/* ---- bad binds ------------------------------------------------------------------------- */

/*
 * Binds that break a rule, each on a fresh pair: MW_BIND_ERR, the next WQE
 * flushed, the QP in ERR, the window and the MR as they were.
 */
static void test_mw_bind_bad(void)
{
    enum { NONE, MR_NO_BIND, MR_NO_LW, MW_OTHER_PD, MR_OTHER_PD, BOUND };
    static const struct {
        const char *log;
        int setup;
        uint32_t mw_key, new_stag, mr_stag, access;
        uint64_t addr, len;
    } cases[] = {
        /* C10-73: the MR lacks MW_BIND (the bed's data MR has every right but that). */
        { "lacks MW_BIND access", NONE, 0x40, MW_STAG(0x41), MR_STAG, RW, IOVA, 64 },
        /* C10-75: beyond the MR's end, and before its start. */
        { "are not inside MR", NONE, 0x40, MW_STAG(0x41), MWMR_STAG, RW,
          MWMR_IOVA + MWMR_LEN - 32, 64 },
        { "are not inside MR", NONE, 0x40, MW_STAG(0x41), MWMR_STAG, RW, MWMR_IOVA - 1, 64 },
        /* C10-74: remote write (or atomic) through a window of an MR without LOCAL_WRITE. */
        { "lacks LOCAL_WRITE", MR_NO_LW, 0x40, MW_STAG(0x41), MWMR_STAG, RW, MWMR_IOVA, 64 },
        { "lacks LOCAL_WRITE", MR_NO_LW, 0x40, MW_STAG(0x41), MWMR_STAG,
          QRDMA_ACCESS_REMOTE_ATOMIC, MWMR_IOVA, 64 },
        /* C10-72: the window in another PD than the QP; the MR in another PD. */
        { "bound from a QP of PD 1", MW_OTHER_PD, 0x40, MW_STAG(0x41), MWMR_STAG, RW,
          MWMR_IOVA, 64 },
        { "is in PD 2, the QP in PD 1", MR_OTHER_PD, 0x40, MW_STAG(0x41), MWMR_STAG, RW,
          MWMR_IOVA, 64 },
        /* A type 2 window is bound once until invalidated. */
        { "type 2 window is bound already", BOUND, 0x41, MW_STAG(0x42), MWMR_STAG, RW,
          MWMR_IOVA, 64 },
        /* The window's STag must be its own, the new one of the same index. */
        { "not a window with that key", NONE, 0x3f, MW_STAG(0x41), MWMR_STAG, RW, MWMR_IOVA,
          64 },
        { "names another index", NONE, 0x40, MW_STAG(0x41) + (1u << 8), MWMR_STAG, RW,
          MWMR_IOVA, 64 },
        { "not a window with that key", NONE, 0x50, MWMR_STAG + 1, MWMR_STAG, RW, MWMR_IOVA,
          64 },
        { "type 2 window with LENGTH 0", NONE, 0x40, MW_STAG(0x41), MWMR_STAG, RW, MWMR_IOVA,
          0 },
        { "zero-based windows", NONE, 0x40, MW_STAG(0x41), MWMR_STAG,
          RW | QRDMA_ACCESS_ZERO_BASED, MWMR_IOVA, 64 },
        { "names no valid registered MR", NONE, 0x40, MW_STAG(0x41), MWMR_STAG + 1, RW,
          MWMR_IOVA, 64 },
    };
    struct wqe snd = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 16, 0 } } };
    unsigned c;

    for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        uint32_t idx = 0, mw_index = cases[c].mw_key == 0x50 ? MWMR_INDEX : MW_INDEX;
        uint32_t bound_before;
        uint8_t state_before;

        rc_pair();
        mwmr_reg(cases[c].setup == MR_OTHER_PD ? PD + 1 : PD,
                 cases[c].setup == MR_NO_LW ? QRDMA_ACCESS_MW_BIND
                                            : QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_MW_BIND);
        CQP_OK(mw_alloc(SB, MW_STAG(0x40), cases[c].setup == MW_OTHER_PD ? PD + 1 : PD,
                        QRDMA_MW_TYPE_2));
        if (cases[c].setup == BOUND) {
            mw_bind_ok(RW, idx++);
        }
        state_before = SB->core.obj.mr[MW_INDEX].state;
        bound_before = SB->core.obj.mr[MWMR_INDEX].mw_bound;
        log_clear(SB);
        post_bind(SB, QPN, (uint32_t)mw_index << QRDMA_STAG_INDEX_SHIFT | cases[c].mw_key,
                  cases[c].new_stag, cases[c].mr_stag, cases[c].access, cases[c].addr,
                  cases[c].len);
        post_send(SB, QPN, &snd);
        ring_sq(SB, QPN);
        pump();
        EXPECT_CQE(SB, 1, QPN, idx, QSW_WC_BIND_MW, QSW_WC_MW_BIND_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
        EXPECT_CQE(SB, 1, QPN, idx + 1, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ,
                   ~0u);
        CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_ERR);
        if (!logged(SB, cases[c].log)) {
            fprintf(stderr, "  case %u: no log line with '%s'\n", c, cases[c].log);
            unit_failures++;
        }
        CHECK_EQ(SB->core.obj.mr[MW_INDEX].state, state_before);
        CHECK_EQ(SB->core.obj.mr[MWMR_INDEX].mw_bound, bound_before);
        CHECK(untouched_outside(0, 0));
    }
}

/* ---- type 1 ---------------------------------------------------------------------------- */

/*
 * A type 1 window, bound through the SQ as ibv_bind_mw does: usable at
 * once, bound again elsewhere with a new key (the old key dead), never
 * invalidated by LOCAL_INV, unbound by a bind of LENGTH 0.
 */
static void test_mw_type1(void)
{
    struct wqe wr = through_window(QRDMA_SQ_OP_RDMA_WRITE, 0, 256);
    struct wqe inv = { .op = QRDMA_SQ_OP_LOCAL_INV, .imm = MW_STAG(0x42) };
    const uint64_t second = MWMR_IOVA + 0x8000;

    mw_setup(QRDMA_MW_TYPE_1);
    mw_bind_ok(RW, 0);
    fill(SA, 0x5000, 256, 6);
    post_send(SA, QPN, &wr);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SB, MWMR_OFF + MW_OFF), dbuf(SA, 0x5000), 256));
    /* A type 1 window has no QP: an access that names none passes. */
    {
        struct qrdma_mr_walk w;

        CHECK_EQ(qrdma_mr_translate(&SB->core, MW_STAG(0x41), PD, MWMR_IOVA + MW_OFF, 16,
                                    QRDMA_ACCESS_REMOTE_WRITE, &w), 0);
    }

    /* Bound again, elsewhere, with key 0x42: no invalidation needed. */
    post_bind(SB, QPN, MW_STAG(0x41), MW_STAG(0x42), MWMR_STAG, QRDMA_ACCESS_REMOTE_READ,
              second, 0x1000);
    ring_sq(SB, QPN);
    pump();
    EXPECT_CQE(SB, 1, QPN, 1, QSW_WC_BIND_MW, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK_EQ(SB->core.obj.mr[MWMR_INDEX].mw_bound, 1);   /* counted once */
    {
        struct wqe rd = { .op = QRDMA_SQ_OP_RDMA_READ, .remote_off = second - IOVA,
                          .rkey = MW_STAG(0x42), .nsge = 1, .sge = { { 0x6000, 64, 0 } } };

        fill(SB, MWMR_OFF + 0x8000, 64, 8);
        post_send(SA, QPN, &rd);
        ring_sq(SA, QPN);
        pump();
        EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_RDMA_READ, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
        CHECK(!memcmp(dbuf(SA, 0x6000), dbuf(SB, MWMR_OFF + 0x8000), 64));
    }

    /* Unbound by a bind of LENGTH 0 (no MR): FREE, the MR released. */
    post_bind(SB, QPN, MW_STAG(0x42), MW_STAG(0x43), 0, 0, 0, 0);
    ring_sq(SB, QPN);
    pump();
    EXPECT_CQE(SB, 1, QPN, 2, QSW_WC_BIND_MW, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK_EQ(SB->core.obj.mr[MW_INDEX].state, QRDMA_MR_STATE_FREE);
    CHECK_EQ(SB->core.obj.mr[MW_INDEX].key, 0x43);
    CHECK_EQ(SB->core.obj.mr[MWMR_INDEX].mw_bound, 0);

    /* Bound once more, then LOCAL_INV of a type 1 window fails (LOC_QP_OP_ERR, QP to ERR). */
    post_bind(SB, QPN, MW_STAG(0x43), MW_STAG(0x42), MWMR_STAG, RW, MWMR_IOVA, 64);
    post_send(SB, QPN, &inv);
    ring_sq(SB, QPN);
    pump();
    EXPECT_CQE(SB, 1, QPN, 3, QSW_WC_BIND_MW, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 1, QPN, 4, QSW_WC_LOCAL_INV, QSW_WC_LOC_QP_OP_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_ERR);
    CHECK_EQ(SB->core.obj.mr[MW_INDEX].state, QRDMA_MR_STATE_VALID);
    CHECK(logged(SB, "not a fast-register MR or a type 2 window"));
}

/* ---- CQP: alloc, dealloc, and the MR a window holds ---------------------------------- */

static void test_mw_alloc_dealloc(void)
{
    uint64_t st;

    mw_setup(QRDMA_MW_TYPE_2);
    /* ALLOC_STAG of a window: MW_TYPE 3, ACCESS, MAX_PAGES are refused. */
    st = mw_alloc(SB, 7u << 8 | 1, PD, 3);
    CHECK_EQ(major_of(st), QRDMA_CQP_ERR_INVALID_ARG);
    st = cqp(SB, QRDMA_CQP_OP_ALLOC_STAG, 7u << 8 | 1,
             PD | (uint64_t)QRDMA_MW_TYPE_1 << QRDMA_MR_ARG1_MW_TYPE_SHIFT |
             (uint64_t)QRDMA_ACCESS_REMOTE_READ << QRDMA_MR_ARG1_ACCESS_SHIFT, 0, 0, 0, 0);
    CHECK_EQ(major_of(st), QRDMA_CQP_ERR_INVALID_ARG);
    st = cqp(SB, QRDMA_CQP_OP_ALLOC_STAG, 7u << 8 | 1,
             PD | (uint64_t)QRDMA_MW_TYPE_1 << QRDMA_MR_ARG1_MW_TYPE_SHIFT, 4, 0, 0, 0);
    CHECK_EQ(major_of(st), QRDMA_CQP_ERR_INVALID_ARG);
    CHECK_EQ(SB->core.obj.mr[7].state, QRDMA_MR_STATE_NONE);

    mw_bind_ok(RW, 0);
    /* The MR has a window bound: neither DEALLOC_STAG nor REREG. */
    st = cqp(SB, QRDMA_CQP_OP_DEALLOC_STAG, MWMR_STAG, 0, 0, 0, 0, 0);
    CHECK_EQ(major_of(st), QRDMA_CQP_ERR_STATE);
    CHECK_EQ(st & QRDMA_CCQ_CQE_MINOR_MASK, QRDMA_STATE_ERR_BUSY);
    st = cqp(SB, QRDMA_CQP_OP_REG_MR, MWMR_STAG,
             PD | (uint64_t)QRDMA_ACCESS_LOCAL_WRITE << QRDMA_MR_ARG1_ACCESS_SHIFT |
             12ull << QRDMA_MR_ARG1_PAGE_SHIFT | QRDMA_MR_ARG1_REREG, MWMR_IOVA, MWMR_LEN,
             DATA + MWMR_OFF, 0);
    CHECK_EQ(major_of(st), QRDMA_CQP_ERR_STATE);
    CHECK_EQ(st & QRDMA_CCQ_CQE_MINOR_MASK, QRDMA_STATE_ERR_BUSY);
    CHECK_EQ(SB->core.obj.mr[MWMR_INDEX].state, QRDMA_MR_STATE_VALID);
    /* An MR's STag is checked whole: a wrong key byte frees nothing. */
    st = cqp(SB, QRDMA_CQP_OP_DEALLOC_STAG, MWMR_STAG + 1, 0, 0, 0, 0, 0);
    CHECK_EQ(major_of(st), QRDMA_CQP_ERR_STATE);
    CHECK_EQ(st & QRDMA_CCQ_CQE_MINOR_MASK, QRDMA_STATE_ERR_KEY);
    /*
     * DEALLOC_STAG of the bound window releases the MR. The driver knows
     * the window's key from ALLOC_STAG only (0x40; the bind made it 0x41):
     * a window is freed by its index.
     */
    CQP_OK(cqp(SB, QRDMA_CQP_OP_DEALLOC_STAG, MW_STAG(0x40), 0, 0, 0, 0, 0));
    CHECK_EQ(SB->core.obj.mr[MW_INDEX].state, QRDMA_MR_STATE_NONE);
    CHECK_EQ(SB->core.obj.mr[MWMR_INDEX].mw_bound, 0);
    /* Twice: there is no window any more. */
    st = cqp(SB, QRDMA_CQP_OP_DEALLOC_STAG, MW_STAG(0x41), 0, 0, 0, 0, 0);
    CHECK_EQ(major_of(st), QRDMA_CQP_ERR_STATE);
    CHECK_EQ(st & QRDMA_CCQ_CQE_MINOR_MASK, QRDMA_STATE_ERR_NOT_FOUND);
    CQP_OK(cqp(SB, QRDMA_CQP_OP_DEALLOC_STAG, MWMR_STAG, 0, 0, 0, 0, 0));
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_mw_type2),
    UNIT_TEST(test_mw_refused_after_inv),
    UNIT_TEST(test_mw_invalidate_twice),
    UNIT_TEST(test_mw_send_with_inv),
    UNIT_TEST(test_mw_access_bad),
    UNIT_TEST(test_mw_qp_association),
    UNIT_TEST(test_mw_bind_bad),
    UNIT_TEST(test_mw_type1),
    UNIT_TEST(test_mw_alloc_dealloc),
};

int main(void)
{
    int ret = unit_run("core-mw", tests, sizeof(tests) / sizeof(tests[0]));

    teardown();
    return ret;
}
