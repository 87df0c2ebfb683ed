/*
 * Unit tests of the device core's backend contract (qrdma_backend.h): one
 * core on the core-dp suite's bed (dp_testbed.h) with a fake backend that
 * records every op the core calls and answers through the core's
 * callbacks as a backend would. A QP is created, brought to RTS, posts a
 * WRITE and receives a SEND; the CQEs the core writes come only from what
 * the fake reported, so a core that went around the ops table (to the sw
 * engine, say) fails here. Also: memory through the callbacks, events,
 * a full send queue, frames, the MR hooks, reset and teardown, wire
 * QPNs and rkeys of the backend's own (WIRE_IDS: returned by the CQP,
 * never confused with the guest's IDs and STags), and backend=verbs
 * refused.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/qrdma_core_int.h"
#include "dp_testbed.h"
#include "unit.h"

int unit_failures;

/* ---- the fake backend ------------------------------------------------------------ */

#define FAKE_MAX_WR 16
#define FAKE_MAX_MR 8
/* The QP ID the memory callbacks are called with: an MR, unlike a type 2 window, ignores it. */
#define QP_ANY 0

struct fake_qp {
    bool live;
    struct qrdma_be_qp_init init;
    uint32_t state;             /* as the last qp_modify set it */
    unsigned modifies, resets;
    uint32_t mask[8];           /* of the first modifies */
    struct qrdma_be_qp_attr attr[8];
    unsigned recv_doorbells;
};

static struct fake {
    /* what create was given */
    struct qrdma_be_callbacks cb;
    void *opaque;
    struct qrdma_be_params params;
    bool live;
    unsigned creates, resets, destroys, polls;
    struct fake_qp qp[N_QP];
    /* send WRs posted, and whether each was completed yet */
    struct qrdma_be_send_wr wr[FAKE_MAX_WR];
    uint32_t wr_qp[FAKE_MAX_WR];
    unsigned n_wr, n_wr_done;
    int post_ret;               /* what post_send answers (0, or -ENOSPC...) */
    /* receive WRs taken at recv_doorbell */
    struct qrdma_be_recv_wr recv[FAKE_MAX_WR];
    unsigned n_recv;
    /* frames */
    unsigned rx_frames, set_macs;
    size_t rx_len;
    uint8_t mac[6];
    /* MR hooks */
    struct qrdma_be_mr mr[FAKE_MAX_MR];
    unsigned n_mr, n_alloc, n_dereg;
    uint32_t dereg[FAKE_MAX_MR];
    uint32_t rkey_xor;          /* non-zero: hand out an rkey other than the STag */
    uint32_t alloc_rkey_xor;    /* ALLOC_STAG only, applied after rkey_xor */
    bool mr_refuse;             /* mr_register answers -ENOMEM */
    uint32_t qpn_xor;           /* non-zero: hand out a QPN other than the QP ID */
    /* what the next poll reports */
    struct qrdma_be_wc recv_wc;
    bool recv_due;
    void (*on_poll)(void);
} fk;

static struct fake_qp *fqp(struct qrdma_be_qp *qp)
{
    return (struct fake_qp *)qp;
}

static uint32_t fqp_id(struct fake_qp *q)
{
    return (uint32_t)(q - fk.qp);
}

static struct qrdma_be *fake_create(const struct qrdma_be_callbacks *cb, void *opaque,
                                    const struct qrdma_be_params *params, char *err,
                                    size_t err_len)
{
    fk.cb = *cb;
    fk.opaque = opaque;
    fk.params = *params;
    fk.live = true;
    fk.creates++;
    memcpy(fk.mac, params->mac, 6);
    return (struct qrdma_be *)&fk;
}

static int fake_reset(struct qrdma_be *be)
{
    CHECK(be == (struct qrdma_be *)&fk);
    fk.resets++;
    memset(fk.qp, 0, sizeof(fk.qp));
    fk.n_wr = fk.n_wr_done = fk.n_recv = 0;
    memcpy(fk.mac, fk.params.mac, 6);
    return 0;
}

static void fake_destroy(struct qrdma_be *be)
{
    CHECK(be == (struct qrdma_be *)&fk);
    fk.destroys++;
    fk.live = false;
}

static int fake_qp_create(struct qrdma_be *be, const struct qrdma_be_qp_init *init,
                          struct qrdma_be_qp **qp, uint32_t *qpn)
{
    struct fake_qp *q;

    CHECK(init->qp_id < N_QP);
    if (init->qp_id >= N_QP) {
        return -EINVAL;
    }
    q = &fk.qp[init->qp_id];
    CHECK(!q->live);
    memset(q, 0, sizeof(*q));
    q->live = true;
    q->init = *init;
    q->state = QRDMA_BE_QPS_RESET;
    *qp = (struct qrdma_be_qp *)q;
    *qpn = init->qp_id ^ fk.qpn_xor;
    return 0;
}

static int fake_qp_modify(struct qrdma_be *be, struct qrdma_be_qp *qp,
                          const struct qrdma_be_qp_attr *attr, uint32_t mask)
{
    struct fake_qp *q = fqp(qp);

    CHECK(q->live);
    CHECK(mask & QRDMA_BE_QP_ATTR_STATE);
    CHECK_EQ(mask & ~QRDMA_BE_QP_ATTR_ALL, 0);
    if (q->modifies < 8) {
        q->mask[q->modifies] = mask;
        q->attr[q->modifies] = *attr;
    }
    q->modifies++;
    if (attr->qp_state == QRDMA_BE_QPS_RESET) {
        q->resets++;
    }
    q->state = attr->qp_state;
    return 0;
}

static enum qrdma_be_qp_state fake_qp_state(struct qrdma_be *be, struct qrdma_be_qp *qp)
{
    CHECK(fqp(qp)->live);
    return fqp(qp)->state;
}

static void fake_qp_destroy(struct qrdma_be *be, struct qrdma_be_qp *qp)
{
    CHECK(fqp(qp)->live);
    fqp(qp)->live = false;
}

static int fake_post_send(struct qrdma_be *be, struct qrdma_be_qp *qp,
                          const struct qrdma_be_send_wr *wr)
{
    CHECK(fqp(qp)->live);
    if (fk.post_ret) {
        return fk.post_ret;
    }
    CHECK(fk.n_wr < FAKE_MAX_WR);
    if (fk.n_wr >= FAKE_MAX_WR) {
        return -ENOSPC;
    }
    fk.wr[fk.n_wr] = *wr;
    fk.wr_qp[fk.n_wr] = fqp_id(fqp(qp));
    fk.n_wr++;
    return 0;
}

/* Posts receives ahead, as a backend over a host QP would: every new WQE, now. */
static void fake_recv_doorbell(struct qrdma_be *be, struct qrdma_be_qp *qp)
{
    struct fake_qp *q = fqp(qp);

    CHECK(q->live);
    q->recv_doorbells++;
    while (fk.n_recv < FAKE_MAX_WR &&
           !fk.cb.get_recv(fk.opaque, fqp_id(q), &fk.recv[fk.n_recv])) {
        fk.n_recv++;
    }
}

static int fake_mr_hook(const struct qrdma_be_mr *mr, uint32_t *rkey)
{
    CHECK(fk.n_mr < FAKE_MAX_MR);
    if (fk.n_mr >= FAKE_MAX_MR) {
        return -ENOMEM;
    }
    fk.mr[fk.n_mr++] = *mr;
    *rkey = mr->stag ^ fk.rkey_xor;
    return 0;
}

static int fake_mr_register(struct qrdma_be *be, const struct qrdma_be_mr *mr, uint32_t *rkey)
{
    return fk.mr_refuse ? -ENOMEM : fake_mr_hook(mr, rkey);
}

static int fake_mr_alloc_stag(struct qrdma_be *be, const struct qrdma_be_mr *mr,
                              uint32_t *rkey)
{
    int ret;

    fk.n_alloc++;
    ret = fake_mr_hook(mr, rkey);
    *rkey ^= fk.alloc_rkey_xor;
    return ret;
}

static void fake_mr_deregister(struct qrdma_be *be, uint32_t stag)
{
    if (fk.n_dereg < FAKE_MAX_MR) {
        fk.dereg[fk.n_dereg] = stag;
    }
    fk.n_dereg++;
}

static void fake_set_mac(struct qrdma_be *be, const uint8_t mac[6])
{
    fk.set_macs++;
    memcpy(fk.mac, mac, 6);
}

static void fake_rx_frame(struct qrdma_be *be, const void *frame, size_t len)
{
    fk.rx_frames++;
    fk.rx_len = len;
}

/* Completes every WR posted so far, then a receive if one is due, then the test's action. */
static uint64_t fake_poll(struct qrdma_be *be, unsigned budget)
{
    fk.polls++;
    while (fk.n_wr_done < fk.n_wr) {
        const struct qrdma_be_send_wr *wr = &fk.wr[fk.n_wr_done];
        struct qrdma_be_wc wc = {
            .wr_id = wr->wr_id,
            .status = QRDMA_BE_WC_SUCCESS,
            .opcode = wr->opcode == QRDMA_BE_WR_RDMA_WRITE ? QRDMA_BE_WC_RDMA_WRITE
                                                           : QRDMA_BE_WC_SEND,
        };

        fk.n_wr_done++;
        if (wr->send_flags & QRDMA_BE_SEND_SIGNALED) {
            fk.cb.complete(fk.opaque, fk.wr_qp[fk.n_wr_done - 1], &wc);
        }
    }
    if (fk.recv_due && fk.n_recv) {
        fk.recv_due = false;
        fk.recv_wc.wr_id = fk.recv[0].wr_id;
        fk.cb.complete(fk.opaque, QPN, &fk.recv_wc);
    }
    if (fk.on_poll) {
        void (*fn)(void) = fk.on_poll;

        fk.on_poll = NULL;
        fn();
    }
    return UINT64_MAX;
}

static const struct qrdma_be_ops fake_ops = {
    .name = "fake",
    .carries = QRDMA_BE_CARRIES_SRQ | QRDMA_BE_CARRIES_FAST_REG | QRDMA_BE_CARRIES_MW |
               QRDMA_BE_CARRIES_STATS | QRDMA_BE_CARRIES_GSI,
    .create = fake_create,
    .reset = fake_reset,
    .destroy = fake_destroy,
    .qp_create = fake_qp_create,
    .qp_modify = fake_qp_modify,
    .qp_state = fake_qp_state,
    .qp_destroy = fake_qp_destroy,
    .post_send = fake_post_send,
    .recv_doorbell = fake_recv_doorbell,
    .mr_register = fake_mr_register,
    .mr_alloc_stag = fake_mr_alloc_stag,
    .mr_deregister = fake_mr_deregister,
    .set_mac = fake_set_mac,
    .rx_frame = fake_rx_frame,
    .poll = fake_poll,
};

/* SA on the fake backend, SB (only a peer's identity here) on the sw one; CQs 1 and 2 on SA. */
static void fake_setup(void)
{
    fq_clear();
    drop_frames = 0;
    memset(&fk, 0, sizeof(fk));
    dev_backend_ops = &fake_ops;
    side_up(SA, 0);
    dev_backend_ops = NULL;
    side_up(SB, 1);
    create_cq(SA, 1);
    create_cq(SA, 2);
    no_errors(SA);
}

/* Run the data path of SA (doorbells queued work; the fake's poll completes it). */
static void run_dp(void)
{
    qrdma_core_run(&SA->core, QRDMA_WORK_DP);
    pump();
}

/* ---- tests ------------------------------------------------------------------------ */

/* The device makes its backend with the core's callbacks and its config. */
static void test_create_params(void)
{
    fake_setup();
    CHECK_EQ(fk.creates, 1);
    CHECK(fk.live);
    CHECK(fk.opaque == &SA->core);
    CHECK(!memcmp(fk.params.mac, SA->mac, 6));
    CHECK_EQ(fk.params.stall_floor_ns, 0);
    CHECK_EQ(fk.params.fault.loss_ppm, 0);
    CHECK(fk.cb.mr_read && fk.cb.mr_write && fk.cb.mr_check && fk.cb.mr_atomic &&
          fk.cb.mr_gpa_walk && fk.cb.fast_reg && fk.cb.invalidate && fk.cb.get_recv &&
          fk.cb.complete && fk.cb.event && fk.cb.sq_space && fk.cb.frame_out &&
          fk.cb.now_ns);
    CHECK_EQ(fk.cb.now_ns ? fk.cb.now_ns(fk.opaque) : 0, now_ns);
    CHECK(SA->core.dp.ops == &fake_ops);
    CHECK(SA->core.dp.be == (struct qrdma_be *)&fk);
}

/*
 * CREATE_QP, the modifies to RTS, a WRITE: each reaches the fake as the
 * contract says, and the CQE the guest sees is what the fake completed.
 */
static void test_qp_post_complete(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x2000, .nsge = 1,
                     .sge = { { 0x100, 300, 0 } } };
    const struct qrdma_be_send_wr *wr;
    struct fake_qp *q = &fk.qp[QPN];
    struct cqe e;

    fake_setup();
    create_qp(SA, QPN, &rc_spec);
    CHECK(q->live);
    CHECK_EQ(q->init.qp_id, QPN);
    CHECK_EQ(q->init.type, QRDMA_BE_QPT_RC);
    CHECK_EQ(q->init.pd, PD);
    CHECK_EQ(q->init.send_cq, 1);
    CHECK_EQ(q->init.recv_cq, 2);
    CHECK(!q->init.has_srq);
    CHECK_EQ(q->init.max_send_wr, 8);
    CHECK_EQ(q->init.max_recv_wr, 8);
    CHECK_EQ(q->init.max_inline, 256 - QRDMA_SQ_WQE_HDR_BYTES);
    CHECK_EQ(q->init.max_send_sge, 12);
    CHECK_EQ(q->init.max_recv_sge, 3);
    CHECK_EQ(SA->core.dp.qp[QPN].wire_qpn, QPN);
    CHECK_EQ(last_retval, QPN);         /* the sw numbering: the QPN is the QP ID */

    rc_to_rts(SA, QPN, SB, QPN, 7);
    CHECK_EQ(q->modifies, 3);
    CHECK_EQ(q->state, QRDMA_BE_QPS_RTS);
    CHECK_EQ(q->attr[0].qp_state, QRDMA_BE_QPS_INIT);
    CHECK(q->mask[0] & QRDMA_BE_QP_ATTR_ACCESS_FLAGS);
    CHECK_EQ(q->attr[1].qp_state, QRDMA_BE_QPS_RTR);
    CHECK(q->mask[1] & QRDMA_BE_QP_ATTR_AV);
    CHECK_EQ(q->attr[1].dest_qp_num, QPN);
    CHECK_EQ(q->attr[1].path_mtu, QRDMA_BE_MTU_1024);
    CHECK_EQ(q->attr[1].rq_psn, PSN(SB));
    CHECK(!memcmp(q->attr[1].av.dgid, SB->gid, 16));
    CHECK(!memcmp(q->attr[1].av.sgid, SA->gid, 16));
    CHECK(!memcmp(q->attr[1].av.smac, SA->mac, 6));
    CHECK_EQ(q->attr[1].av.sgid_index, 0);
    CHECK_EQ(q->attr[2].qp_state, QRDMA_BE_QPS_RTS);
    CHECK_EQ(q->attr[2].sq_psn, PSN(SA));
    CHECK_EQ(q->attr[2].retry_cnt, 3);
    CHECK_EQ(q->attr[2].rnr_retry, 7);

    CHECK_EQ(post_send(SA, QPN, &w), 0);
    CHECK_EQ(post_send(SA, QPN, &w), 1);
    ring_sq(SA, QPN);
    run_dp();
    CHECK_EQ(fk.n_wr, 2);
    wr = &fk.wr[0];
    CHECK_EQ(fk.wr_qp[0], QPN);
    CHECK_EQ(wr->wr_id, 0);
    CHECK_EQ(fk.wr[1].wr_id, 1);
    CHECK_EQ(wr->opcode, QRDMA_BE_WR_RDMA_WRITE);
    CHECK_EQ(wr->send_flags, QRDMA_BE_SEND_SIGNALED);
    CHECK_EQ(wr->num_sge, 1);
    CHECK_EQ(wr->sg_list[0].addr, IOVA + 0x100);
    CHECK_EQ(wr->sg_list[0].length, 300);
    CHECK_EQ(wr->sg_list[0].lkey, MR_STAG);
    CHECK_EQ(wr->rdma.remote_addr, IOVA + 0x2000);
    CHECK_EQ(wr->rdma.rkey, MR_STAG);
    /* The two CQEs are the fake's completions, in order; nothing else. */
    EXPECT_CQE(SA, 1, QPN, 0, QRDMA_BE_WC_RDMA_WRITE, QRDMA_BE_WC_SUCCESS, QRDMA_CQE_FLAG_SQ,
               ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QRDMA_BE_WC_RDMA_WRITE, QRDMA_BE_WC_SUCCESS, QRDMA_CQE_FLAG_SQ,
               ~0u);
    CHECK(!poll_cq(SA, 1, &e));
    CHECK(fk.polls > 0);
    no_errors(SA);

    CQP_OK(cqp(SA, QRDMA_CQP_OP_DESTROY_QP, QPN, 0, 0, 0, 0, 0));
    CHECK(!q->live);
}

/*
 * Receives: the RQ doorbell reaches recv_doorbell, which takes the WQE
 * through get_recv (as a backend that posts ahead does); the completion it
 * reports later becomes the receive CQE with its flags and immediate.
 */
static void test_recv_doorbell_and_complete(void)
{
    struct fake_qp *q = &fk.qp[QPN];

    fake_setup();
    create_qp(SA, QPN, &rc_spec);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    CHECK_EQ(post_recv(SA, QPN, 0x4000, 2048), 0);
    ring_rq(SA, QPN);
    CHECK_EQ(q->recv_doorbells, 1);
    CHECK_EQ(fk.n_recv, 1);
    CHECK_EQ(fk.recv[0].wr_id, 0);
    CHECK_EQ(fk.recv[0].num_sge, 1);
    CHECK_EQ(fk.recv[0].sg_list[0].addr, IOVA + 0x4000);
    CHECK_EQ(fk.recv[0].sg_list[0].length, 2048);
    CHECK_EQ(fk.recv[0].sg_list[0].lkey, MR_STAG);
    CHECK_EQ(SA->core.dp.rq_wqes, 1);
    expect_no_cqe(SA, 2);

    fk.recv_wc = (struct qrdma_be_wc){ .status = QRDMA_BE_WC_SUCCESS,
                                       .opcode = QRDMA_BE_WC_RECV, .byte_len = 100,
                                       .imm_data = 0x12345678, .src_qp = 0x77,
                                       .wc_flags = QRDMA_BE_WC_WITH_IMM |
                                                   QRDMA_BE_WC_SOLICITED };
    fk.recv_due = true;
    run_dp();
    {
        struct cqe e;

        CHECK(poll_cq(SA, 2, &e));
        CHECK_EQ(e.qp, QPN);
        CHECK_EQ(e.wqe_index, 0);
        CHECK_EQ(e.opcode, QRDMA_BE_WC_RECV);
        CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
        CHECK_EQ(e.byte_len, 100);
        CHECK_EQ(e.imm, 0x12345678);
        CHECK_EQ(e.src_qp, 0x77);
        CHECK_EQ(e.flags, QRDMA_CQE_FLAG_WITH_IMM | QRDMA_CQE_FLAG_SOLICITED);
    }
    /* Nothing more posted: get_recv says so. */
    {
        struct qrdma_be_recv_wr wr;

        CHECK_EQ(fk.cb.get_recv(fk.opaque, QPN, &wr), -ENOENT);
    }
    no_errors(SA);
}

/* The fake's host-side flush: every receive it took, in order, with WR_FLUSH_ERR. */
static void flush_held_receives(void)
{
    unsigned i;

    for (i = 0; i < fk.n_recv; i++) {
        struct qrdma_be_wc wc = { .wr_id = fk.recv[i].wr_id, .opcode = QRDMA_BE_WC_RECV,
                                  .status = QRDMA_BE_WC_WR_FLUSH_ERR };

        fk.cb.complete(fk.opaque, QPN, &wc);
    }
}

/*
 * A push backend holds receive WQEs it took at the doorbell. When the QP
 * goes to ERR the core flushes the WQEs it still has only after the
 * backend's flushes of those it holds, so the receive CQEs stay in ring
 * order (the driver and provider retire RQ WQEs in order: a CQE for a
 * later index first would lose the earlier ones).
 */
static void test_rq_flush_after_held(void)
{
    struct cqe e;

    fake_setup();
    create_qp(SA, QPN, &rc_spec);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    CHECK_EQ(post_recv(SA, QPN, 0x4000, 256), 0);
    CHECK_EQ(post_recv(SA, QPN, 0x4100, 256), 1);
    ring_rq(SA, QPN);
    CHECK_EQ(fk.n_recv, 2);
    CHECK_EQ(post_recv(SA, QPN, 0x4200, 256), 2);       /* not rung: the core still has it */
    CHECK_EQ(SA->core.dp.qp[QPN].rq_held, 2);

    modify_state(SA, QPN, QRDMA_QPS_ERR);
    run_dp();
    CHECK(!poll_cq(SA, 2, &e));         /* nothing yet: WQE 2 waits for 0 and 1 */
    fk.on_poll = flush_held_receives;
    run_dp();
    run_dp();
    CHECK(poll_cq(SA, 2, &e));
    CHECK_EQ(e.wqe_index, 0);
    CHECK_EQ(e.status, QRDMA_BE_WC_WR_FLUSH_ERR);
    CHECK(poll_cq(SA, 2, &e));
    CHECK_EQ(e.wqe_index, 1);
    CHECK(poll_cq(SA, 2, &e));
    CHECK_EQ(e.wqe_index, 2);
    CHECK_EQ(e.status, QRDMA_BE_WC_WR_FLUSH_ERR);
    CHECK(!poll_cq(SA, 2, &e));
    CHECK_EQ(SA->core.dp.qp[QPN].rq_held, 0);
}

/* mr_gpa_walk's fn: the pieces of a range. */
struct gpa_pieces {
    uint64_t gpa, len;          /* the first piece */
    unsigned pieces;
};

static int gpa_piece(void *arg, uint64_t gpa, uint64_t len)
{
    struct gpa_pieces *p = arg;

    if (!p->pieces++) {
        p->gpa = gpa;
        p->len = len;
    }
    return 0;
}

/* Guest memory through the callbacks: the MR table decides, the bytes are the guest's. */
static void test_memory_callbacks(void)
{
    static const uint8_t hello[5] = "hello";
    struct gpa_pieces walk = { 0, 0, 0 };
    uint64_t orig = 0;
    uint8_t buf[5];

    fake_setup();
    CHECK_EQ(fk.cb.mr_write(fk.opaque, PD, QP_ANY, MR_STAG, IOVA + 0x100, hello, 5,
                            QRDMA_BE_ACCESS_LOCAL_WRITE), 0);
    CHECK(!memcmp(dbuf(SA, 0x100), hello, 5));
    CHECK_EQ(fk.cb.mr_read(fk.opaque, PD, QP_ANY, MR_STAG, IOVA + 0x100, buf, 5, 0), 0);
    CHECK(!memcmp(buf, hello, 5));
    CHECK_EQ(fk.cb.mr_check(fk.opaque, PD, QP_ANY, MR_STAG, IOVA, DATA_LEN,
                            QRDMA_BE_ACCESS_REMOTE_READ), 0);
    /* Another PD, a range beyond the MR: refused. */
    CHECK_EQ(fk.cb.mr_read(fk.opaque, PD + 1, QP_ANY, MR_STAG, IOVA + 0x100, buf, 5, 0), -EACCES);
    CHECK_EQ(fk.cb.mr_check(fk.opaque, PD, QP_ANY, MR_STAG, IOVA + DATA_LEN - 4, 8,
                            QRDMA_BE_ACCESS_REMOTE_READ), -EACCES);
    CHECK(logged(SA, "PD"));
    log_clear(SA);
    /* An 8-byte fetch-and-add. */
    w64(SA, DATA + 0x200, 40);
    CHECK_EQ(fk.cb.mr_atomic(fk.opaque, PD, QP_ANY, MR_STAG, IOVA + 0x200, QRDMA_BE_ATOMIC_FETCH_ADD, 2,
                             0, &orig), 0);
    CHECK_EQ(orig, 40);
    CHECK_EQ(r64(SA, DATA + 0x200), 42);
    /* Where a range lies: one piece of the contiguous data area. */
    CHECK_EQ(fk.cb.mr_gpa_walk(fk.opaque, PD, MR_STAG, IOVA + 0x100, 0x100, gpa_piece, &walk),
             0);
    CHECK_EQ(walk.pieces, 1);
    CHECK_EQ(walk.gpa, DATA + 0x100);
    CHECK_EQ(walk.len, 0x100);
    CHECK_EQ(fk.cb.mr_gpa_walk(fk.opaque, PD, MR_STAG, IOVA + DATA_LEN, 1, gpa_piece, &walk),
             -EACCES);
    log_clear(SA);
    no_errors(SA);
}

/* Events, raised from inside poll as a backend raises them: AEQEs naming the object. */
static void raise_comm_est(void)
{
    fk.cb.event(fk.opaque, QRDMA_BE_EV_COMM_EST, QPN);
}

static void raise_cq_err(void)
{
    fk.cb.event(fk.opaque, QRDMA_BE_EV_CQ_ERR, 1);
}

static void raise_qp_fatal(void)
{
    fk.qp[QPN].state = QRDMA_BE_QPS_ERR;
    fk.cb.event(fk.opaque, QRDMA_BE_EV_QP_FATAL, QPN);
}

static void test_events(void)
{
    fake_setup();
    create_qp(SA, QPN, &rc_spec);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    fk.on_poll = raise_comm_est;
    run_dp();
    CHECK(aeq_has(SA, QRDMA_AE_QP_COMM_EST, QPN, QRDMA_AE_SRC_QP, QPCTX(QPN)));
    fk.on_poll = raise_cq_err;
    run_dp();
    CHECK(aeq_has(SA, QRDMA_AE_CQ_ERROR, 1, QRDMA_AE_SRC_CQ, 0xc0000 + 1));
    CHECK(qrdma_cq_get(&SA->core, 1)->error);
    CHECK(logged(SA, "the backend cannot complete into it"));
    log_clear(SA);
    /* QP_FATAL: the AEQE, and the core follows the backend's QP to ERR. */
    fk.on_poll = raise_qp_fatal;
    run_dp();
    CHECK(aeq_has(SA, QRDMA_AE_QP_FATAL, QPN, QRDMA_AE_SRC_QP, QPCTX(QPN)));
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);
}

/*
 * A full send queue (-ENOSPC): the WQE stays in the ring, and sq_space
 * brings it to the backend again.
 */
static void test_send_queue_full(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x100, 64, 0 } } };

    fake_setup();
    create_qp(SA, QPN, &rc_spec);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    post_send(SA, QPN, &w);
    fk.post_ret = -ENOSPC;
    ring_sq(SA, QPN);
    run_dp();
    CHECK_EQ(fk.n_wr, 0);
    CHECK_EQ(SA->core.dp.sq_wqes, 0);
    expect_no_cqe(SA, 1);
    fk.post_ret = 0;
    fk.cb.sq_space(fk.opaque, QPN);
    run_dp();
    CHECK_EQ(fk.n_wr, 1);
    CHECK_EQ(fk.wr[0].opcode, QRDMA_BE_WR_SEND);
    EXPECT_CQE(SA, 1, QPN, 0, QRDMA_BE_WC_SEND, QRDMA_BE_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    /* Another refusal completes the WQE in error and the QP goes to ERR. */
    fk.post_ret = -EINVAL;
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    run_dp();
    EXPECT_CQE(SA, 1, QPN, 1, QRDMA_BE_WC_SEND, QRDMA_BE_WC_LOC_QP_OP_ERR, QRDMA_CQE_FLAG_SQ,
               ~0u);
    CHECK_EQ(fk.qp[QPN].state, QRDMA_BE_QPS_ERR);
    CHECK(logged(SA, "the transport refused the work request"));
}

/*
 * Frames: one the backend sends to the device's own MAC loops back into
 * its rx_frame; one to another MAC leaves on the wire. The station address
 * reaches set_mac when the driver changed it.
 */
static uint8_t frame[64];

static void send_frames(void)
{
    memcpy(frame, SA->mac, 6);
    fk.cb.frame_out(fk.opaque, frame, sizeof(frame));
    memcpy(frame, SB->mac, 6);
    fk.cb.frame_out(fk.opaque, frame, 60);
}

static void test_frames(void)
{
    fake_setup();
    fk.on_poll = send_frames;
    SA->frames_sent = 0;
    run_dp();
    CHECK_EQ(SA->frames_sent, 1);
    CHECK_EQ(fk.rx_frames, 1);
    CHECK_EQ(fk.rx_len, sizeof(frame));
    CHECK_EQ(fk.set_macs, 0);
    /* A new station address: the next frame in goes with it. */
    reg_w(SA, QRDMA_REG_LAN_MAC_LOW, 0x44332202);
    memcpy(frame, SA->mac, 6);
    qrdma_dp_rx_frame(&SA->core, frame, sizeof(frame));
    CHECK_EQ(fk.set_macs, 1);
    CHECK_EQ(fk.mac[1], 0x22);
    CHECK_EQ(fk.mac[3], 0x44);
    CHECK_EQ(fk.rx_frames, 2);
    qrdma_dp_rx_frame(&SA->core, frame, sizeof(frame));
    CHECK_EQ(fk.set_macs, 1);
    fq_clear();
}

/* REG_MR, ALLOC_STAG and DEALLOC_STAG reach the MR hooks with what the command recorded. */
static void test_mr_hooks(void)
{
    const uint32_t fr_stag = 2u << QRDMA_STAG_INDEX_SHIFT | 0x22;

    fake_setup();
    /* The bed's bring-up registered the data MR. */
    CHECK_EQ(fk.n_mr, 1);
    CHECK_EQ(fk.mr[0].stag, MR_STAG);
    CHECK_EQ(fk.mr[0].type, QRDMA_BE_MR_MEM);
    CHECK_EQ(fk.mr[0].pd, PD);
    CHECK_EQ(fk.mr[0].access, MR_ACCESS);
    CHECK_EQ(fk.mr[0].iova, IOVA);
    CHECK_EQ(fk.mr[0].length, DATA_LEN);
    CQP_OK(cqp(SA, QRDMA_CQP_OP_ALLOC_STAG, fr_stag,
               PD | (uint64_t)QRDMA_ACCESS_LOCAL_WRITE << QRDMA_MR_ARG1_ACCESS_SHIFT, 4, 0, 8,
               0));
    CHECK_EQ(last_retval, fr_stag);     /* the rkey, the STag itself here */
    CHECK_EQ(fk.n_alloc, 1);
    CHECK_EQ(fk.mr[1].stag, fr_stag);
    CHECK_EQ(fk.mr[1].type, QRDMA_BE_MR_FAST_REG);
    CHECK_EQ(fk.mr[1].max_pages, 4);
    CQP_OK(cqp(SA, QRDMA_CQP_OP_DEALLOC_STAG, fr_stag, 0, 0, 0, 0, 0));
    CHECK_EQ(fk.n_dereg, 1);
    CHECK_EQ(fk.dereg[0], fr_stag);
    CHECK_EQ(reg_r(SA, QRDMA_REG_OBJ_COUNT_MR), 1);

    /*
     * A backend whose rkey is its own (WIRE_IDS): ALLOC_STAG returns it.
     * Its key byte must be the STag's, as FAST_REG changes that byte
     * alone: one without is refused and leaves no MR (and no backend MR).
     */
    fk.rkey_xor = 0x4a0100;
    CQP_OK(cqp(SA, QRDMA_CQP_OP_ALLOC_STAG, fr_stag,
               PD | (uint64_t)QRDMA_ACCESS_LOCAL_WRITE << QRDMA_MR_ARG1_ACCESS_SHIFT, 4, 0, 8,
               0));
    CHECK_EQ(last_retval, fr_stag ^ 0x4a0100);
    CHECK_EQ(SA->core.obj.mr[2].state, QRDMA_MR_STATE_FREE);
    CQP_OK(cqp(SA, QRDMA_CQP_OP_DEALLOC_STAG, fr_stag, 0, 0, 0, 0, 0));
    CHECK_EQ(fk.n_dereg, 2);
    fk.alloc_rkey_xor = 0x01;
    cqp(SA, QRDMA_CQP_OP_ALLOC_STAG, fr_stag,
        PD | (uint64_t)QRDMA_ACCESS_LOCAL_WRITE << QRDMA_MR_ARG1_ACCESS_SHIFT, 4, 0, 8, 0);
    CHECK_EQ(major_of(last_status), QRDMA_CQP_ERR_INVALID_ARG);
    CHECK(logged(SA, "its rkey lacks the STag's key byte"));
    CHECK_EQ(fk.n_dereg, 3);
    CHECK_EQ(reg_r(SA, QRDMA_REG_OBJ_COUNT_MR), 1);
    CHECK_EQ(SA->core.obj.mr[2].state, QRDMA_MR_STATE_NONE);
    fk.alloc_rkey_xor = 0;
    /* REG_MR's rkey may be anything the backend likes: the key byte too. */
    fk.rkey_xor = 0x5a5a5a5a;
    CQP_OK(cqp(SA, QRDMA_CQP_OP_REG_MR, fr_stag,
               PD | (uint64_t)QRDMA_ACCESS_LOCAL_WRITE << QRDMA_MR_ARG1_ACCESS_SHIFT |
               12ull << QRDMA_MR_ARG1_PAGE_SHIFT, 0x1000, 0x1000, DATA, 0));
    CHECK_EQ(last_retval, fr_stag ^ 0x5a5a5a5a);
    fk.rkey_xor = 0;
}

/*
 * REG_MR.REREG comes to mr_register again for the index; a refusal keeps
 * the old registration in the core (its rights still work, the count
 * stays); an accepted one returns the new registration's rkey, which may
 * differ from the old (a host NIC's ibv_rereg_mr may change it).
 */
static void test_mr_rereg_hook(void)
{
    const uint64_t page = 12ull << QRDMA_MR_ARG1_PAGE_SHIFT;
    const uint64_t lw = (uint64_t)QRDMA_ACCESS_LOCAL_WRITE << QRDMA_MR_ARG1_ACCESS_SHIFT | page;
    const uint64_t rw = (uint64_t)(QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE)
                        << QRDMA_MR_ARG1_ACCESS_SHIFT | page;
    const uint32_t stag = 3u << QRDMA_STAG_INDEX_SHIFT | 0x33;
    struct qrdma_mr_walk w;

    fake_setup();
    CQP_OK(cqp(SA, QRDMA_CQP_OP_REG_MR, stag, PD | lw, 0x1000, 0x1000, DATA, 0));
    CHECK_EQ(fk.n_mr, 2);
    CQP_OK(cqp(SA, QRDMA_CQP_OP_REG_MR, stag, PD | rw | QRDMA_MR_ARG1_REREG, 0x1000, 0x1000,
               DATA, 0));
    CHECK_EQ(last_retval, stag);
    CHECK_EQ(fk.n_mr, 3);
    CHECK_EQ(fk.mr[2].stag, stag);
    CHECK_EQ(fk.mr[2].access, QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE);
    CHECK_EQ(reg_r(SA, QRDMA_REG_OBJ_COUNT_MR), 2);

    fk.mr_refuse = true;
    cqp(SA, QRDMA_CQP_OP_REG_MR, stag, PD | lw | QRDMA_MR_ARG1_REREG, 0x1000, 0x1000, DATA, 0);
    CHECK_EQ(major_of(last_status), QRDMA_CQP_ERR_NO_RESOURCE);     /* -ENOMEM: out of host resources */
    CHECK(logged(SA, "the old registration stays"));
    CHECK_EQ(qrdma_mr_translate(&SA->core, stag, PD, 0x1000, 8, QRDMA_ACCESS_REMOTE_WRITE, &w),
             0);
    CHECK_EQ(reg_r(SA, QRDMA_REG_OBJ_COUNT_MR), 2);
    fk.mr_refuse = false;

    fk.rkey_xor = 0x300100;
    CQP_OK(cqp(SA, QRDMA_CQP_OP_REG_MR, stag, PD | lw | QRDMA_MR_ARG1_REREG, 0x1000, 0x1000,
               DATA, 0));
    CHECK_EQ(last_retval, stag ^ 0x300100);
    CHECK_EQ(SA->core.obj.mr[3].state, QRDMA_MR_STATE_VALID);
    CHECK_EQ(reg_r(SA, QRDMA_REG_OBJ_COUNT_MR), 2);
    fk.rkey_xor = 0;
}

/*
 * WIRE_IDS: a backend whose QPNs and rkeys are its own (a host NIC's).
 * CREATE_QP returns the wire QPN; the guest names its QP by the QP ID
 * everywhere else (doorbells, CQP, CQEs), the peer by the peer's wire
 * QPN (MODIFY_QP's dest_qpn, reaching the backend unchanged), its own
 * memory by STag (SGE lkeys) and the peer's by the peer's rkey (reaching
 * the backend unchanged). Completions the backend reports by QP ID
 * become CQEs naming the QP ID; a UD source QPN passes through. A QPN
 * over 24 bits is refused.
 */
static void test_wire_ids(void)
{
    const uint32_t peer_qpn = 0x5a5a5, peer_rkey = 0x1234567;
    struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x2000, .rkey = peer_rkey,
                     .nsge = 1, .sge = { { 0x100, 300, 0 } } };
    struct fake_qp *q = &fk.qp[QPN];
    struct cqe e;

    fake_setup();
    CHECK(reg_r(SA, QRDMA_REG_CAP_FEATURES) & QRDMA_FEATURE_WIRE_IDS);
    fk.qpn_xor = 0x3c0000;
    create_qp(SA, QPN, &rc_spec);
    CHECK_EQ(last_retval, QPN ^ 0x3c0000);
    CHECK_EQ(SA->core.dp.qp[QPN].wire_qpn, QPN ^ 0x3c0000);
    CHECK_EQ(q->init.qp_id, QPN);
    rc_to_rts(SA, QPN, SB, peer_qpn, 7);
    CHECK_EQ(q->attr[1].dest_qp_num, peer_qpn);

    CHECK_EQ(post_send(SA, QPN, &w), 0);
    ring_sq(SA, QPN);
    run_dp();
    CHECK_EQ(fk.n_wr, 1);
    CHECK_EQ(fk.wr[0].sg_list[0].lkey, MR_STAG);
    CHECK_EQ(fk.wr[0].rdma.rkey, peer_rkey);
    EXPECT_CQE(SA, 1, QPN, 0, QRDMA_BE_WC_RDMA_WRITE, QRDMA_BE_WC_SUCCESS, QRDMA_CQE_FLAG_SQ,
               ~0u);

    CHECK_EQ(post_recv(SA, QPN, 0x4000, 2048), 0);
    ring_rq(SA, QPN);
    CHECK_EQ(fk.recv[0].sg_list[0].lkey, MR_STAG);
    fk.recv_wc = (struct qrdma_be_wc){ .status = QRDMA_BE_WC_SUCCESS,
                                       .opcode = QRDMA_BE_WC_RECV, .byte_len = 8,
                                       .src_qp = peer_qpn };
    fk.recv_due = true;
    run_dp();
    CHECK(poll_cq(SA, 2, &e));
    CHECK_EQ(e.qp, QPN);
    CHECK_EQ(e.src_qp, peer_qpn);
    CHECK(!poll_cq(SA, 2, &e));
    no_errors(SA);
    CQP_OK(cqp(SA, QRDMA_CQP_OP_DESTROY_QP, QPN, 0, 0, 0, 0, 0));
    CHECK(!q->live);

    /* A QPN that does not fit the BTH's 24 bits is the backend's bug: refused, nothing left. */
    fk.qpn_xor = 0x1000000;
    CHECK_EQ(major_of(create_qp_status(SA, QPN, &rc_spec)), QRDMA_CQP_ERR_INVALID_ARG);
    CHECK_EQ(reg_r(SA, QRDMA_REG_OBJ_COUNT_QP), 0);
    CHECK(logged(SA, "the backend's QPN does not fit 24 bits"));
    CHECK(!fk.qp[QPN].live);
    CHECK(qrdma_qp_get(&SA->core, QPN) == NULL);
    fk.qpn_xor = 0;
}

/*
 * A QP to RESET keeps its backend QP (qp_modify to RESET); a device reset
 * is the backend's reset; teardown its destroy. No callbacks come back.
 */
static void test_reset_and_teardown(void)
{
    unsigned resets, destroys;

    fake_setup();
    /* side_up() tore the last core down and reset the new one. */
    resets = fk.resets;
    destroys = fk.destroys;
    CHECK_EQ(resets, 1);
    create_qp(SA, QPN, &rc_spec);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    modify_state(SA, QPN, QRDMA_QPS_RESET);
    CHECK(fk.qp[QPN].live);
    CHECK_EQ(fk.qp[QPN].resets, 1);
    CHECK_EQ(fk.qp[QPN].state, QRDMA_BE_QPS_RESET);

    reg_w(SA, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    CHECK_EQ(fk.resets, resets + 1);
    CHECK_EQ(fk.destroys, destroys);
    CHECK(SA->core.dp.be == (struct qrdma_be *)&fk);
    CHECK(SA->core.dp.qp == NULL);
    CHECK_EQ(SA->core.dp.deadline, UINT64_MAX);
    qrdma_core_fini(&SA->core);
    CHECK_EQ(fk.destroys, destroys + 1);
    CHECK(SA->core.dp.be == NULL);
    CHECK(!fk.live);
}

/* backend=verbs is refused with a reason; names map to the enum. */
static void test_backend_choice(void)
{
    struct qrdma_core_config cfg;
    struct qrdma_core core;
    struct qrdma_core_env env;
    char err[160] = "";

    CHECK_EQ(qrdma_core_backend_from_name("sw"), QRDMA_BACKEND_SW);
    CHECK_EQ(qrdma_core_backend_from_name("verbs"), QRDMA_BACKEND_VERBS);
    CHECK_EQ(qrdma_core_backend_from_name("rxe"), -1);
    qrdma_core_config_defaults(&cfg);
    CHECK_EQ(cfg.backend, QRDMA_BACKEND_SW);
    CHECK(cfg.backend_ops == NULL);
    cfg.backend = QRDMA_BACKEND_VERBS;
    memset(&core, 0, sizeof(core));
    env = SA->core.env;
    CHECK_EQ(qrdma_core_init(&core, &cfg, &env, err, sizeof(err)), -ENOTSUP);
    CHECK_STR_CONTAINS(err, "backend=verbs");
    CHECK_STR_CONTAINS(err, "not built into this program");
    cfg.backend = 7;
    CHECK_EQ(qrdma_core_init(&core, &cfg, &env, err, sizeof(err)), -ENOTSUP);
    /* A backend table without the ops the core needs is refused too. */
    {
        struct qrdma_be_ops half = fake_ops;

        half.poll = NULL;
        cfg.backend = QRDMA_BACKEND_SW;
        cfg.backend_ops = &half;
        CHECK_EQ(qrdma_core_init(&core, &cfg, &env, err, sizeof(err)), -EINVAL);
        CHECK_STR_CONTAINS(err, "lacks an op");
    }
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_create_params),
    UNIT_TEST(test_qp_post_complete),
    UNIT_TEST(test_recv_doorbell_and_complete),
    UNIT_TEST(test_rq_flush_after_held),
    UNIT_TEST(test_memory_callbacks),
    UNIT_TEST(test_events),
    UNIT_TEST(test_send_queue_full),
    UNIT_TEST(test_frames),
    UNIT_TEST(test_mr_hooks),
    UNIT_TEST(test_mr_rereg_hook),
    UNIT_TEST(test_wire_ids),
    UNIT_TEST(test_reset_and_teardown),
    UNIT_TEST(test_backend_choice),
};

int main(void)
{
    int ret = unit_run("core-backend", tests, sizeof(tests) / sizeof(tests[0]));

    teardown();
    return ret;
}
