/*
 * qrdma device core: the data path. Doorbells name queues; this file
 * fetches their WQEs from guest rings and hands the work to the device's
 * backend through its ops table alone (host-backend/include/
 * qrdma_backend.h: the software RoCEv2 transport, or later a host NIC),
 * gives it receive WQEs when it asks, serves its memory accesses through
 * the MR checks of qrdma_mr.c, and turns what it reports into CQEs, CEQEs
 * and AEQEs. See docs/hw-spec.md, "Data path", and docs/backends.md.
 *
 * Threading: everything here runs where the rest of the core runs (the
 * QEMU main loop, under the BQL): doorbells only queue the QP and kick;
 * the work happens in qrdma_dp_process(), bounded per call, and the
 * backend's timers come back through env.timer_mod / qrdma_core_timer().
 * The backend's callbacks (cb_* below) run inside its ops, so inside the
 * core's entry points; they call back into it only for qp_state.
 *
 * Every guest-written value (WQE fields, SGE counts, ring contents, shadow
 * areas) is checked against the device's own copy of the queue's geometry;
 * a bad WQE completes in error and moves its QP to the error state.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qrdma_core_int.h"
#include "qrdma_mig_stream.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The backend contract keeps the IB numbering the hardware interface uses,
 * so QP states and types, attribute masks and access rights pass between
 * the guest's view and the backend unchanged; a CQE's OPCODE and STATUS
 * are the ibv_wc values (qrdma_hw.h, "CQE"), which the contract's are.
 */
#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " is " #b)
SAME(QRDMA_BE_QPS_RESET, QRDMA_QPS_RESET);
SAME(QRDMA_BE_QPS_INIT, QRDMA_QPS_INIT);
SAME(QRDMA_BE_QPS_RTR, QRDMA_QPS_RTR);
SAME(QRDMA_BE_QPS_RTS, QRDMA_QPS_RTS);
SAME(QRDMA_BE_QPS_SQD, QRDMA_QPS_SQD);
SAME(QRDMA_BE_QPS_SQE, QRDMA_QPS_SQE);
SAME(QRDMA_BE_QPS_ERR, QRDMA_QPS_ERR);
SAME(QRDMA_BE_QPT_RC, QRDMA_QP_TYPE_RC);
SAME(QRDMA_BE_QPT_UC, QRDMA_QP_TYPE_UC);
SAME(QRDMA_BE_QPT_UD, QRDMA_QP_TYPE_UD);
SAME(QRDMA_BE_QP_ATTR_STATE, QRDMA_QP_ATTR_STATE);
SAME(QRDMA_BE_QP_ATTR_ACCESS_FLAGS, QRDMA_QP_ATTR_ACCESS_FLAGS);
SAME(QRDMA_BE_QP_ATTR_QKEY, QRDMA_QP_ATTR_QKEY);
SAME(QRDMA_BE_QP_ATTR_AV, QRDMA_QP_ATTR_AV);
SAME(QRDMA_BE_QP_ATTR_PATH_MTU, QRDMA_QP_ATTR_PATH_MTU);
SAME(QRDMA_BE_QP_ATTR_TIMEOUT, QRDMA_QP_ATTR_TIMEOUT);
SAME(QRDMA_BE_QP_ATTR_RETRY_CNT, QRDMA_QP_ATTR_RETRY_CNT);
SAME(QRDMA_BE_QP_ATTR_RNR_RETRY, QRDMA_QP_ATTR_RNR_RETRY);
SAME(QRDMA_BE_QP_ATTR_RQ_PSN, QRDMA_QP_ATTR_RQ_PSN);
SAME(QRDMA_BE_QP_ATTR_MAX_QP_RD_ATOMIC, QRDMA_QP_ATTR_MAX_QP_RD_ATOMIC);
SAME(QRDMA_BE_QP_ATTR_MIN_RNR_TIMER, QRDMA_QP_ATTR_MIN_RNR_TIMER);
SAME(QRDMA_BE_QP_ATTR_SQ_PSN, QRDMA_QP_ATTR_SQ_PSN);
SAME(QRDMA_BE_QP_ATTR_MAX_DEST_RD_ATOMIC, QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC);
SAME(QRDMA_BE_QP_ATTR_DEST_QPN, QRDMA_QP_ATTR_DEST_QPN);
SAME(QRDMA_BE_ACCESS_LOCAL_WRITE, QRDMA_ACCESS_LOCAL_WRITE);
SAME(QRDMA_BE_ACCESS_REMOTE_WRITE, QRDMA_ACCESS_REMOTE_WRITE);
SAME(QRDMA_BE_ACCESS_REMOTE_READ, QRDMA_ACCESS_REMOTE_READ);
SAME(QRDMA_BE_ACCESS_REMOTE_ATOMIC, QRDMA_ACCESS_REMOTE_ATOMIC);
SAME(QRDMA_BE_MR_MEM, QRDMA_MR_TYPE_MEM);
SAME(QRDMA_BE_MR_FAST_REG, QRDMA_MR_TYPE_FAST_REG);
SAME(QRDMA_BE_MR_DMA, QRDMA_MR_TYPE_DMA);
#undef SAME

/* WQEs taken from one SQ per pass, frames the backend may send per pass. */
#define DP_SQ_BUDGET        64u
#define DP_ENGINE_BUDGET    256u
#define DP_QP_BUDGET        256u
/*
 * SQ WQEs of one QP the backend holds at a time. The guest's ring may
 * be far deeper (4096 WQEs at the default CAP_MAX_QP_WR), and the sw
 * transport keeps a slot and an inline buffer of the ring's inline size
 * per WR it holds: a slot per ring entry cost about 6 MB per QP of 4096
 * WQEs of 1 KB (6 GB for the default 1024 QPs).
 * The rest of the ring waits in guest memory until the backend frees a
 * slot (cb_sq_space). 128 is perftest's default send depth.
 */
#define DP_ENGINE_SQ_DEPTH  128u

/* wr_id of a receive WQE taken from an SRQ: the WQE index plus this bit. */
#define DP_WRID_SRQ         (1ull << 32)

static bool ring_polarity(const struct qrdma_queue *q, uint32_t count)
{
    /* VALID is 1 on lap 0, 0 on lap 1, and so on. */
    return !((count >> q->size_log2) & 1);
}

/* The station address the LAN function filters on is also RoCE's. */
static void lan_mac(struct qrdma_core *core, uint8_t mac[6])
{
    uint32_t lo =
        core->lan.regs[(QRDMA_REG_LAN_MAC_LOW - QRDMA_REG_LAN_BASE) / 4];
    uint32_t hi =
        core->lan.regs[(QRDMA_REG_LAN_MAC_HIGH - QRDMA_REG_LAN_BASE) / 4];

    mac[0] = lo;
    mac[1] = lo >> 8;
    mac[2] = lo >> 16;
    mac[3] = lo >> 24;
    mac[4] = hi;
    mac[5] = hi >> 8;
}

/* ---- arrays beside the objects ------------------------------------------- */

static bool dp_sized(struct qrdma_core *core)
{
    struct qrdma_dp *dp = &core->dp;
    uint32_t nqp = core->hmc.count[QRDMA_HMC_QP],
             ncq = core->hmc.count[QRDMA_HMC_CQ];

    if (dp->qp && dp->nqp == nqp && dp->ncq == ncq) {
        return true;
    }
    free(dp->qp);
    free(dp->cq);
    free(dp->fifo);
    free(dp->page_first);
    dp->qp = calloc(nqp ? nqp : 1, sizeof(*dp->qp));
    dp->cq = calloc(ncq ? ncq : 1, sizeof(*dp->cq));
    dp->fifo = calloc(nqp ? nqp : 1, sizeof(*dp->fifo));
    dp->page_first = malloc(core->cfg.db_pages * sizeof(*dp->page_first));
    dp->nqp = nqp;
    dp->ncq = ncq;
    dp->fifo_head = dp->fifo_len = 0;
    if (!dp->qp || !dp->cq || !dp->fifo || !dp->page_first) {
        free(dp->qp);
        free(dp->cq);
        free(dp->fifo);
        free(dp->page_first);
        dp->qp = NULL;
        dp->cq = NULL;
        dp->fifo = NULL;
        dp->page_first = NULL;
        dp->nqp = dp->ncq = 0;
        return false;
    }
    /* no backend QP yet, so no page has one */
    for (uint32_t p = 0; p < core->cfg.db_pages; p++) {
        dp->page_first[p] = QRDMA_DP_NO_QP;
    }
    return true;
}

static struct qrdma_dp_qp *dp_qp(struct qrdma_core *core, uint32_t id)
{
    return core->dp.qp && id < core->dp.nqp ? &core->dp.qp[id] : NULL;
}

/*
 * The doorbell pages' lists of QPs, which an SQ notification walks
 * (qrdma_dp_sq_notify). A QP is on its page's list exactly while its
 * backend QP exists: dp_qp_set_be is the one place be_qp changes.
 */
static void dp_page_unlink(struct qrdma_dp *dp, struct qrdma_dp_qp *dq)
{
    if (!dq->on_page) {
        return;
    }
    if (dq->page_prev != QRDMA_DP_NO_QP) {
        dp->qp[dq->page_prev].page_next = dq->page_next;
    } else {
        dp->page_first[dq->page] = dq->page_next;
    }
    if (dq->page_next != QRDMA_DP_NO_QP) {
        dp->qp[dq->page_next].page_prev = dq->page_prev;
    }
    dq->on_page = false;
}

static void dp_qp_set_be(struct qrdma_core *core, uint32_t id,
                         struct qrdma_be_qp *be_qp)
{
    struct qrdma_dp *dp = &core->dp;
    struct qrdma_dp_qp *dq = &dp->qp[id];
    struct qrdma_qp *qp = qrdma_qp_get(core, id);

    dp_page_unlink(dp, dq);
    dq->be_qp = be_qp;
    if (!be_qp || !qp || qp->db_page >= core->cfg.db_pages) {
        /* (CREATE_QP checked the page: a QP without one is not notified) */
        return;
    }
    dq->page = qp->db_page;
    dq->page_prev = QRDMA_DP_NO_QP;
    dq->page_next = dp->page_first[dq->page];
    if (dq->page_next != QRDMA_DP_NO_QP) {
        dp->qp[dq->page_next].page_prev = id;
    }
    dp->page_first[dq->page] = id;
    dq->on_page = true;
}

static void dp_kick_qp(struct qrdma_core *core, uint32_t id)
{
    struct qrdma_dp *dp = &core->dp;
    struct qrdma_dp_qp *dq = dp_qp(core, id);

    if (!dq) {
        return;
    }
    if (!dq->kicked) {
        /* Each QP is queued at most once, so nqp slots are enough. */
        dq->kicked = true;
        dp->fifo[(dp->fifo_head + dp->fifo_len) % dp->nqp] = id;
        dp->fifo_len++;
    }
    core->env.kick(core->env.opaque, QRDMA_WORK_DP);
}

/* ---- CQEs ---------------------------------------------------------------- */

struct dp_cqe {
    uint32_t byte_len;
    uint32_t imm;               /* imm_data or the invalidated STag */
    uint32_t qp_id, src_qp;
    uint32_t wqe_index;
    uint8_t opcode, status, flags;
    uint16_t vendor_err;
};

/* The CEQE for an armed CQ, if this completion is what it waits for. */
static void cq_event(struct qrdma_core *core, uint32_t cq_id,
                     struct qrdma_cq *cq, const struct dp_cqe *e)
{
    struct qrdma_dp_cq *dc = &core->dp.cq[cq_id];

    if (!dc->armed) {
        return;
    }
    if (!(dc->armed & QRDMA_CQ_ARM_NEXT) &&
        !(e->flags & QRDMA_CQE_FLAG_SOLICITED) &&
        e->status == QRDMA_BE_WC_SUCCESS) {
        return;
    }
    dc->armed = 0;
    if (cq->ceq_enable) {
        qrdma_ceq_post(core, cq->ceq_id, cq->cq_ctx);
    }
}

static void cq_fail(struct qrdma_core *core, uint32_t cq_id,
                    struct qrdma_cq *cq, uint16_t code, const char *why)
{
    qrdma_guest_error(core, "CQ %u: %s; the CQ is in error", cq_id, why);
    cq->error = true;
    qrdma_aeq_post(core, cq->cq_ctx, cq_id, code, QRDMA_AE_SRC_CQ);
}

/*
 * QP id had a completion its CQ could not take. IBTA vol. 1 11.6.3: the
 * CQ reports CQ Error, and a work queue that then tries to use it gets a
 * Local Work Queue Catastrophic Error (QP_FATAL) and enters Error, so a
 * consumer never loses completions silently. This may run inside a
 * backend callback, where the QP cannot be modified: mark it, and
 * qrdma_dp_process() moves it.
 */
static void cq_lost(struct qrdma_core *core, uint32_t id)
{
    struct qrdma_dp_qp *dq = dp_qp(core, id);

    if (!dq || !dq->be_qp || dq->cq_lost) {
        return;
    }
    dq->cq_lost = true;
    dp_kick_qp(core, id);
}

/*
 * CQEs of cq written and not yet consumed, by the HEAD last read from its
 * shadow area. Right after a resize the consumer may still count CQEs of
 * the old ring; until it moves, HEAD is ahead of the new ring's tail.
 */
static uint32_t cq_in_use(const struct qrdma_cq *cq)
{
    uint32_t used = cq->tail - cq->head_seen;

    return (int32_t)used < 0 ? cq->tail : used;
}

/* Write one CQE to CQ cq_id; false if it could not be written (CQ in error). */
static bool cq_write(struct qrdma_core *core, uint32_t cq_id,
                     const struct dp_cqe *e)
{
    struct qrdma_cq *cq = qrdma_cq_get(core, cq_id);
    uint8_t raw[QRDMA_CQE_SIZE], shadow[8];
    uint32_t size = 1u << (cq ? cq->ring.size_log2 : 0), used;
    uint64_t gpa;

    if (!cq || cq->error || cq_id >= core->dp.ncq) {
        return false;
    }
    used = cq_in_use(cq);
    if (used >= size) {
        /*
         * Full as last seen: where is the consumer now? (One DMA read per CQE
         * saved.)
         */
        if (core->env.dma_read(core->env.opaque, cq->shadow, shadow,
                               sizeof(shadow))) {
            cq_fail(core, cq_id, cq, QRDMA_AE_CQ_ERROR,
                    "shadow area is not guest RAM");
            return false;
        }
        cq->head_seen = qrdma_ld_le32(shadow);
        used = cq_in_use(cq);
    }
    if (used >= size) {
        core->dp.cq_overflows++;
        qrdma_trace(core, QRDMA_TRACE_CQ_OVERFLOW, cq_id, size, 0, 0, NULL,
                    NULL);
        cq_fail(core, cq_id, cq, QRDMA_AE_CQ_OVERFLOW,
                "overflow: all CQEs are unread");
        return false;
    }
    if (qrdma_queue_addr_of(core, &cq->ring, "CQ", cq_id,
                            (uint64_t)(cq->tail & (size - 1)) * QRDMA_CQE_SIZE,
                            &gpa)) {
        cq_fail(core, cq_id, cq, QRDMA_AE_CQ_ERROR, "ring page is not usable");
        return false;
    }
    qrdma_st_le64(raw, e->byte_len | (uint64_t)e->imm << QRDMA_CQE_IMM_SHIFT);
    qrdma_st_le64(raw + 8, (e->qp_id & QRDMA_CQE_QP_MASK) |
                               (uint64_t)(e->src_qp & 0xffffff)
                                   << QRDMA_CQE_SRC_QP_SHIFT);
    qrdma_st_le64(raw + 16,
                  (e->wqe_index & QRDMA_CQE_WQE_INDEX_MASK) |
                      (uint64_t)e->opcode << QRDMA_CQE_OPCODE_SHIFT |
                      (uint64_t)e->status << QRDMA_CQE_STATUS_SHIFT |
                      (uint64_t)e->vendor_err << QRDMA_CQE_VENDOR_ERR_SHIFT |
                      (uint64_t)e->flags << QRDMA_CQE_FLAGS_SHIFT);
    qrdma_st_le64(raw + 24,
                  ring_polarity(&cq->ring, cq->tail) ? QRDMA_CQE_VALID : 0);
    /* The qword with VALID goes last: a consumer never sees half a CQE. */
    if (core->env.dma_write(core->env.opaque, gpa, raw, 24) ||
        core->env.dma_write(core->env.opaque, gpa + 24, raw + 24, 8)) {
        cq_fail(core, cq_id, cq, QRDMA_AE_CQ_ERROR,
                "ring page is not guest RAM");
        return false;
    }
    cq->tail++;
    core->dp.cqes++;
    if (e->status != QRDMA_BE_WC_SUCCESS) {
        /* an error CQE's opcode means little */
        bool recv = !(e->flags & QRDMA_CQE_FLAG_SQ);

        if (e->status == QRDMA_BE_WC_WR_FLUSH_ERR) {
            core->port_stats.live[recv ? QRDMA_STAT_RESP_CQE_FLUSH
                                       : QRDMA_STAT_REQ_CQE_FLUSH]++;
        } else {
            core->port_stats.live[recv ? QRDMA_STAT_RESP_CQE_ERROR
                                       : QRDMA_STAT_REQ_CQE_ERROR]++;
        }
    }
    cq_event(core, cq_id, cq, e);
    return true;
}

/*
 * A completion of QP e->qp_id for CQ cq_id: written, or the QP learns it was
 * lost.
 */
static bool cq_post(struct qrdma_core *core, uint32_t cq_id,
                    const struct dp_cqe *e)
{
    if (!cq_write(core, cq_id, e)) {
        cq_lost(core, e->qp_id);
        return false;
    }
    return true;
}

/* ---- QP errors ----------------------------------------------------------- */

/*
 * The backend moved the QP (or we did): follow it and flush what it does not
 * own.
 */
static void qp_follow_state(struct qrdma_core *core, uint32_t id)
{
    struct qrdma_qp *qp = qrdma_qp_get(core, id);
    struct qrdma_dp_qp *dq = dp_qp(core, id);
    uint8_t old;

    if (!qp || !dq || !dq->be_qp) {
        return;
    }
    old = qp->state;
    qp->state = core->dp.ops->qp_state(core->dp.be, dq->be_qp);
    if (qp->state != old) {
        qrdma_trace(core, QRDMA_TRACE_QP_STATE, id, 1, 0, 0,
                    qrdma_qp_state_name(old), qrdma_qp_state_name(qp->state));
    }
    if (qp->state == QRDMA_QPS_ERR && !(qp->flags & QRDMA_QP_CREATE_SRQ)) {
        dq->rq_flush = true;
    }
    if (qp->state == QRDMA_QPS_ERR || qp->state == QRDMA_QPS_SQE) {
        dp_kick_qp(core, id);
    }
}

/*
 * The device's own error, not the consumer's modify: the transport drops
 * the ACK it owes (qp_fail), which may cover a message whose completion
 * was lost.
 */
static void qp_to_error(struct qrdma_core *core, uint32_t id)
{
    struct qrdma_dp_qp *dq = dp_qp(core, id);
    struct qrdma_be_qp_attr attr = { .qp_state = QRDMA_BE_QPS_ERR };
    const struct qrdma_be_ops *ops = core->dp.ops;

    if (dq && dq->be_qp) {
        if (ops->qp_fail) {
            ops->qp_fail(core->dp.be, dq->be_qp);
        } else {
            ops->qp_modify(core->dp.be, dq->be_qp, &attr,
                           QRDMA_BE_QP_ATTR_STATE);
        }
        qp_follow_state(core, id);
    }
}

/*
 * AEQE QP_FATAL, once per QP until it is reset: one catastrophe is enough to
 * report.
 */
static void qp_fatal(struct qrdma_core *core, uint32_t id, struct qrdma_qp *qp)
{
    struct qrdma_dp_qp *dq = dp_qp(core, id);

    if (dq && dq->fatal_raised) {
        return;
    }
    if (dq) {
        dq->fatal_raised = true;
    }
    qrdma_aeq_post(core, qp->qp_ctx, id, QRDMA_AE_QP_FATAL, QRDMA_AE_SRC_QP);
}

/* A WQE the device cannot execute: an error CQE for it, and the QP to error. */
static void bad_wqe(struct qrdma_core *core, uint32_t id, bool sq,
                    uint32_t index, uint8_t status, const char *why)
{
    struct qrdma_qp *qp = qrdma_qp_get(core, id);
    struct dp_cqe e = {
        .qp_id = id, .wqe_index = index, .status = status,
        .opcode = sq ? QRDMA_BE_WC_SEND : QRDMA_BE_WC_RECV,
        .flags = sq ? QRDMA_CQE_FLAG_SQ : 0,
        .vendor_err = 1,
    };

    qrdma_guest_error(core, "QP %u: %s WQE %u: %s", id, sq ? "SQ" : "RQ", index,
                      why);
    core->dp.bad_wqes++;
    /*
     * Error first: the backend flushes the WQEs it holds, all earlier in
     * the ring than this one, so their CQEs come before this one's
     * (completions in ring order).
     */
    qp_to_error(core, id);
    if (qp) {
        cq_post(core, sq ? qp->send_cq : qp->recv_cq, &e);
        qp_fatal(core, id, qp);
    }
}

/*
 * A QP whose completion was lost (cq_lost): to ERR, and QP_FATAL if not raised
 * yet.
 */
static void qp_cq_lost(struct qrdma_core *core, uint32_t id,
                       struct qrdma_qp *qp, struct qrdma_dp_qp *dq)
{
    dq->cq_lost = false;
    if (qp->state != QRDMA_QPS_ERR) {
        qrdma_guest_error(core,
                          "QP %u: a completion could not be written to its CQ; "
                          "the QP is in error",
                          id);
    }
    qp_to_error(core, id);
    qp_fatal(core, id, qp);
}

/* ---- backend callbacks: memory ------------------------------------------- */

/*
 * Every access a backend makes to guest memory goes through the MR table:
 * the whole STag, the PD, the bounds and the rights (a local read needs
 * none, so access 0).
 */
static int cb_mr_read(void *opaque, uint32_t pd, uint32_t qp_id, uint32_t stag,
                      uint64_t iova, void *dst, uint32_t len, uint32_t access)
{
    return qrdma_mr_read_qp(opaque, stag, pd, qp_id, iova, dst, len, access)
               ? -EACCES
               : 0;
}

static int cb_mr_write(void *opaque, uint32_t pd, uint32_t qp_id, uint32_t stag,
                       uint64_t iova, const void *src, uint32_t len,
                       uint32_t access)
{
    return qrdma_mr_write_qp(opaque, stag, pd, qp_id, iova, src, len, access)
               ? -EACCES
               : 0;
}

static int cb_mr_map_read(void *opaque, uint32_t pd, uint32_t qp_id,
                          uint32_t stag, uint64_t iova, uint32_t len,
                          uint32_t access, struct iovec *iov, unsigned max)
{
    int n = qrdma_mr_map_read_qp(opaque, stag, pd, qp_id, iova, len, access,
                                 iov, max);

    return n < 0 ? -EACCES : n;
}

static void cb_mr_unmap_read(void *opaque, const struct iovec *iov, unsigned n)
{
    qrdma_mr_unmap_read(opaque, iov, n);
}

static int cb_mr_check(void *opaque, uint32_t pd, uint32_t qp_id, uint32_t stag,
                       uint64_t iova, uint64_t len, uint32_t access)
{
    struct qrdma_mr_walk walk;

    return qrdma_mr_translate_qp(opaque, stag, pd, qp_id, iova, len, access,
                                 &walk)
               ? -EACCES
               : 0;
}

static int cb_mr_atomic(void *opaque, uint32_t pd, uint32_t qp_id,
                        uint32_t stag, uint64_t iova,
                        enum qrdma_be_atomic_op op, uint64_t compare_add,
                        uint64_t swap, uint64_t *orig)
{
    struct qrdma_core *core = opaque;
    uint8_t raw[8];
    uint64_t old, new;

    /*
     * The core runs one thing at a time, so read-modify-write is atomic to
     * peers.
     */
    if (qrdma_mr_read_qp(core, stag, pd, qp_id, iova, raw, 8,
                         QRDMA_ACCESS_REMOTE_ATOMIC)) {
        return -EACCES;
    }
    old = qrdma_ld_le64(raw);
    if (op == QRDMA_BE_ATOMIC_CMP_SWP) {
        new = old == compare_add ? swap : old;
    } else {
        new = old + compare_add;
    }
    qrdma_st_le64(raw, new);
    if (new != old && qrdma_mr_write_qp(core, stag, pd, qp_id, iova, raw, 8,
                                        QRDMA_ACCESS_REMOTE_ATOMIC)) {
        return -EACCES;
    }
    *orig = old;
    return 0;
}

/*
 * The guest-physical pieces of an MR's range, for a backend that maps guest
 * memory itself.
 */
static int cb_mr_gpa_walk(void *opaque, uint32_t pd, uint32_t stag,
                          uint64_t iova, uint64_t len,
                          int (*fn)(void *arg, uint64_t gpa, uint64_t len),
                          void *arg)
{
    struct qrdma_core *core = opaque;
    struct qrdma_mr_walk walk;
    int err = qrdma_mr_translate(core, stag, pd, iova, len, 0, &walk);

    while (!err && walk.left) {
        uint64_t gpa, n;

        if (qrdma_mr_walk_next(core, &walk, &gpa, &n)) {
            return -EACCES;
        }
        err = fn(arg, gpa, n);
        if (err) {
            return err;
        }
    }
    return err ? -EACCES : 0;
}

/*
 * LOCAL_INV and SEND_WITH_INV: a fast-register MR or a type 2 window of
 * this PD goes back to FREE (qrdma_mr_invalidate).
 */
static int cb_invalidate(void *opaque, uint32_t pd, uint32_t qp_id,
                         uint32_t stag)
{
    return qrdma_mr_invalidate(opaque, pd, stag) ? -EINVAL : 0;
}

/* BIND_MW WQEs, run by the backend in SQ order. */
static int cb_bind_mw(void *opaque, uint32_t pd, uint32_t qp_id,
                      const struct qrdma_be_bind_mw *bind)
{
    const struct qrdma_mw_bind b = {
        .mw_stag = bind->mw_stag,
        .new_stag = bind->new_stag,
        .mr_stag = bind->mr_stag,
        .access = bind->access,
        .addr = bind->addr,
        .length = bind->length,
    };

    return qrdma_mw_bind(opaque, pd, qp_id, &b) ? -EINVAL : 0;
}

/* FAST_REG WQEs, run by the backend in SQ order. */
static int cb_fast_reg(void *opaque, uint32_t pd,
                       const struct qrdma_be_fast_reg *reg)
{
    const struct qrdma_fast_reg fr = {
        .stag = reg->stag,
        .access = reg->access,
        .iova = reg->iova,
        .length = reg->length,
        .first = reg->first,
        .fbo = reg->fbo,
        .page_log2 = reg->page_log2,
        .levels = reg->levels,
    };

    return qrdma_mr_fast_reg(opaque, pd, &fr) ? -EINVAL : 0;
}

/* ---- backend callbacks: receive WQEs ------------------------------------- */

/* What read_rq_wqe() found at a ring's next slot. */
enum rq_wqe_read {
    RQ_WQE_OK,
    RQ_WQE_NONE,                /* not posted yet: VALID is the last lap's */
    /* posted (VALID seen), but NUM_SGE or its SGEs are bad */
    RQ_WQE_MALFORMED,
    /* the slot cannot be read: whether it is posted is unknown */
    RQ_WQE_UNREADABLE,
};

static enum rq_wqe_read read_rq_wqe(struct qrdma_core *core, uint32_t id,
                                    const char *kind,
                                    const struct qrdma_queue *q, uint32_t count,
                                    struct qrdma_be_recv_wr *out)
{
    uint32_t stride = 1u << q->stride_log2,
             index = count & ((1u << q->size_log2) - 1);
    uint8_t raw[QRDMA_RQ_WQE_HDR_BYTES + QRDMA_BE_MAX_SGE * QRDMA_SGE_BYTES];
    uint64_t gpa, hdr;
    unsigned n, i, max_sge;

    if (qrdma_queue_addr_of(core, q, kind, id,
                            (uint64_t)index << q->stride_log2, &gpa) ||
        core->env.dma_read(core->env.opaque, gpa, raw,
                           QRDMA_RQ_WQE_HDR_BYTES)) {
        return RQ_WQE_UNREADABLE;
    }
    hdr = qrdma_ld_le64(raw + 8);
    if (!!(hdr & QRDMA_RQ_HDR_VALID) != ring_polarity(q, count)) {
        return RQ_WQE_NONE;
    }
    n = hdr & QRDMA_RQ_HDR_NUM_SGE_MASK;
    max_sge = (stride - QRDMA_RQ_WQE_HDR_BYTES) / QRDMA_SGE_BYTES;
    if (max_sge > QRDMA_BE_MAX_SGE) {
        max_sge = QRDMA_BE_MAX_SGE;
    }
    if (n > max_sge ||
        (n && core->env.dma_read(core->env.opaque, gpa + QRDMA_RQ_WQE_HDR_BYTES,
                                 raw + QRDMA_RQ_WQE_HDR_BYTES,
                                 n * QRDMA_SGE_BYTES))) {
        return RQ_WQE_MALFORMED;
    }
    out->wr_id = index;
    out->num_sge = n;
    for (i = 0; i < n; i++) {
        const uint8_t *s = raw + QRDMA_RQ_WQE_HDR_BYTES + i * QRDMA_SGE_BYTES;

        out->sg_list[i].addr = qrdma_ld_le64(s);
        out->sg_list[i].length = qrdma_ld_le32(s + 8);
        out->sg_list[i].lkey = qrdma_ld_le32(s + 12);
    }
    return RQ_WQE_OK;
}

/*
 * The SRQ's WQEs posted and not yet taken by the device, from its shadow's
 * posted count.
 */
static void srq_outstanding(struct qrdma_core *core, struct qrdma_srq *srq)
{
    uint8_t shadow[8];
    uint32_t posted;

    if (core->env.dma_read(core->env.opaque, srq->shadow, shadow, 8)) {
        return;
    }
    posted = qrdma_ld_le32(shadow);
    srq->outstanding = posted - srq->head;
    if (srq->outstanding > (1u << srq->ring.size_log2)) {
        srq->outstanding = 0;   /* a count the consumer cannot have posted */
    }
}

static void srq_limit_check(struct qrdma_core *core, uint32_t srq_id,
                            struct qrdma_srq *srq)
{
    /*
     * A backend that posts SRQ WQEs ahead to a host SRQ holds most of the
     * outstanding ones: its host SRQ watches the limit (QRDMA_BE_EV_SRQ_LIMIT).
     */
    if (!srq->limit || core->dp.ops->srq_create) {
        return;
    }
    srq_outstanding(core, srq);
    if (srq->outstanding < srq->limit) {
        srq->limit = 0;         /* one event per arming, as IB says */
        qrdma_aeq_post(core, srq->srq_ctx, srq_id, QRDMA_AE_SRQ_LIMIT,
                       QRDMA_AE_SRC_SRQ);
    }
}

/*
 * The next WQE of an SRQ for a backend that posts ahead (srq_create): a
 * malformed one raises SRQ_ERROR and is skipped, as there is no QP yet
 * whose receive could complete in error.
 */
static int cb_get_srq_recv(void *opaque, uint32_t srq_id,
                           struct qrdma_be_recv_wr *out)
{
    struct qrdma_core *core = opaque;
    struct qrdma_srq *srq = qrdma_srq_get(core, srq_id);
    enum rq_wqe_read r;

    if (!srq) {
        return -ENOENT;
    }
    r = read_rq_wqe(core, srq_id, "SRQ", &srq->ring, srq->head, out);
    if (r == RQ_WQE_NONE) {
        return -ENOENT;
    }
    if (r != RQ_WQE_OK) {
        qrdma_guest_error(core, "SRQ %u: WQE %u is malformed or unreadable",
                          srq_id,
                          srq->head & ((1u << srq->ring.size_log2) - 1));
        qrdma_aeq_post(core, srq->srq_ctx, srq_id, QRDMA_AE_SRQ_ERROR,
                       QRDMA_AE_SRC_SRQ);
        core->dp.bad_wqes++;
        srq->head++;
        return -EIO;
    }
    out->wr_id |= DP_WRID_SRQ;
    srq->head++;
    core->dp.rq_wqes++;
    return 0;
}

static int cb_get_recv(void *opaque, uint32_t id, struct qrdma_be_recv_wr *out)
{
    struct qrdma_core *core = opaque;
    struct qrdma_qp *qp = qrdma_qp_get(core, id);
    enum rq_wqe_read r;

    if (!qp) {
        return -ENOENT;
    }
    if (qp->flags & QRDMA_QP_CREATE_SRQ) {
        struct qrdma_srq *srq = qrdma_srq_get(core, qp->srq);

        r = srq ? read_rq_wqe(core, id, "SRQ of QP", &srq->ring, srq->head, out)
                : RQ_WQE_NONE;
        if (r != RQ_WQE_OK) {
            if (r != RQ_WQE_NONE) {
                qrdma_guest_error(core,
                                  "SRQ %u: WQE %u is malformed or unreadable",
                                  qp->srq,
                                  srq->head &
                                      ((1u << srq->ring.size_log2) - 1));
                qrdma_aeq_post(core, srq->srq_ctx, qp->srq, QRDMA_AE_SRQ_ERROR,
                               QRDMA_AE_SRC_SRQ);
            }
            return -ENOENT;
        }
        out->wr_id |= DP_WRID_SRQ;
        srq->head++;
        core->dp.rq_wqes++;
        srq_limit_check(core, qp->srq, srq);
        return 0;
    }
    r = read_rq_wqe(core, id, "RQ of QP", &qp->rq, qp->rq_head, out);
    if (r != RQ_WQE_OK) {
        struct dp_cqe e = {
            .qp_id = id,
            .wqe_index = qp->rq_head & ((1u << qp->rq.size_log2) - 1),
            .opcode = QRDMA_BE_WC_RECV,
            .status = QRDMA_BE_WC_LOC_QP_OP_ERR,
            .vendor_err = 1,
        };

        if (r == RQ_WQE_NONE) {
            return -ENOENT;
        }
        /*
         * Not bad_wqe(): a callback may not change the QP's state (the
         * backend contract's threading rule). -EIO has the backend move
         * the QP to error itself, with the QP_FATAL event and, for RC, a
         * NAK that tells the requester; the backend holds no receive WR
         * of this QP, so this error CQE is the RQ's next completion.
         */
        qrdma_guest_error(core, "QP %u: RQ WQE %u: malformed or unreadable", id,
                          e.wqe_index);
        core->dp.bad_wqes++;
        qp->rq_head++;
        cq_post(core, qp->recv_cq, &e);
        return -EIO;
    }
    qp->rq_head++;
    core->dp.rq_wqes++;
    if (core->dp.ops->recv_doorbell && dp_qp(core, id)) {
        dp_qp(core, id)->rq_held++;
    }
    return 0;
}

/*
 * RQ WQEs of a QP in error complete with WR_FLUSH_ERR. A slot that cannot
 * be read (a bad PBLE, bus mastering off) ends the flush: whether a WQE is
 * posted there is unknown, and flushing on regardless would complete
 * WQEs that do not exist, lap after lap, without end. The next RQ doorbell
 * tries again (qrdma_dp_doorbell).
 */
static void rq_flush(struct qrdma_core *core, uint32_t id, struct qrdma_qp *qp,
                     struct qrdma_dp_qp *dq)
{
    struct qrdma_be_recv_wr wr;
    unsigned n;

    for (n = 0; n < DP_QP_BUDGET; n++) {
        struct dp_cqe e = { .qp_id = id, .opcode = QRDMA_BE_WC_RECV,
                            .status = QRDMA_BE_WC_WR_FLUSH_ERR };
        enum rq_wqe_read r = read_rq_wqe(core, id, "RQ of QP", &qp->rq,
                                         qp->rq_head, &wr);

        e.wqe_index = qp->rq_head & ((1u << qp->rq.size_log2) - 1);
        if (r == RQ_WQE_NONE) {
            return;
        }
        if (r == RQ_WQE_UNREADABLE) {
            qrdma_guest_error(
                core,
                "QP %u: RQ WQE %u is unreadable; the flush stops until "
                "the next RQ doorbell",
                id, e.wqe_index);
            dq->rq_flush = false;
            qp_fatal(core, id, qp);
            return;
        }
        qp->rq_head++;
        cq_post(core, qp->recv_cq, &e);
    }
    /* More left: come back. */
    dp_kick_qp(core, id);
}

/* ---- backend callbacks: completions and events --------------------------- */

static void cb_complete(void *opaque, uint32_t id, const struct qrdma_be_wc *wc)
{
    struct qrdma_core *core = opaque;
    struct qrdma_qp *qp = qrdma_qp_get(core, id);
    bool recv = wc->opcode >= QRDMA_BE_WC_RECV;
    struct dp_cqe e = {
        .byte_len = wc->byte_len,
        .imm = (wc->wc_flags & QRDMA_BE_WC_WITH_INV) ? wc->invalidated_stag
                                                     : wc->imm_data,
        .qp_id = id,
        .src_qp = wc->src_qp,
        .wqe_index = (uint32_t)(wc->wr_id & 0xffff),
        .opcode = wc->opcode,
        .status = wc->status,
        .vendor_err = wc->vendor_err,
    };

    if (!qp) {
        return;
    }
    if (!recv) {
        e.flags |= QRDMA_CQE_FLAG_SQ;
    } else if (wc->wr_id & DP_WRID_SRQ) {
        e.flags |= QRDMA_CQE_FLAG_SRQ;
    }
    if (wc->wc_flags & QRDMA_BE_WC_WITH_IMM) {
        e.flags |= QRDMA_CQE_FLAG_WITH_IMM;
    }
    if (wc->wc_flags & QRDMA_BE_WC_WITH_INV) {
        e.flags |= QRDMA_CQE_FLAG_WITH_INV;
    }
    if (wc->wc_flags & QRDMA_BE_WC_GRH) {
        e.flags |= QRDMA_CQE_FLAG_GRH;
    }
    if (wc->wc_flags & QRDMA_BE_WC_SOLICITED) {
        e.flags |= QRDMA_CQE_FLAG_SOLICITED;
    }
    cq_post(core, recv ? qp->recv_cq : qp->send_cq, &e);
    if (recv && !(wc->wr_id & DP_WRID_SRQ) && dp_qp(core, id) &&
        dp_qp(core, id)->rq_held && !--dp_qp(core, id)->rq_held &&
        dp_qp(core, id)->rq_flush) {
        /* the last one the backend held: flush the rest now */
        dp_kick_qp(core, id);
    }
    if (wc->status != QRDMA_BE_WC_SUCCESS) {
        qp_follow_state(core, id);
        /*
         * The backend may move the QP to ERR only after reporting the
         * error completion, and without an event (a receive error at the
         * responder): look again when the kicked QP is processed.
         */
        dp_kick_qp(core, id);
    } else if (!recv) {
        /* A slot of the backend's send queue is free again: fetch more. */
        dp_kick_qp(core, id);
    }
}

static void qp_event(struct qrdma_core *core, uint32_t id,
                     enum qrdma_be_event ev)
{
    struct qrdma_qp *qp = qrdma_qp_get(core, id);
    uint16_t code;

    if (!qp) {
        return;
    }
    switch (ev) {
    case QRDMA_BE_EV_QP_FATAL:
        qp_fatal(core, id, qp);
        qp_follow_state(core, id);
        return;
    case QRDMA_BE_EV_QP_REQ_ERR:
        code = QRDMA_AE_QP_REQ_ERR;
        break;
    case QRDMA_BE_EV_QP_ACCESS_ERR:
        code = QRDMA_AE_QP_ACCESS_ERR;
        break;
    case QRDMA_BE_EV_COMM_EST:
        code = QRDMA_AE_QP_COMM_EST;
        break;
    case QRDMA_BE_EV_SQ_DRAINED:
        qp->sq_draining = false;
        if (!qp->sqd_async) {
            return;
        }
        code = QRDMA_AE_SQ_DRAINED;
        break;
    case QRDMA_BE_EV_QP_LAST_WQE_REACHED:
        code = QRDMA_AE_QP_LAST_WQE;
        break;
    default:
        return;
    }
    qrdma_aeq_post(core, qp->qp_ctx, id, code, QRDMA_AE_SRC_QP);
    qp_follow_state(core, id);
}

/*
 * Asynchronous events; the event says whose ID id is. A CQ the backend
 * cannot complete into is in error as one that overflowed (its QPs learn
 * it at their next completion, cq_lost); an SRQ it cannot use raises
 * SRQ_ERROR as a malformed SRQ WQE does.
 */
static void cb_event(void *opaque, enum qrdma_be_event ev, uint32_t id)
{
    struct qrdma_core *core = opaque;

    switch (ev) {
    case QRDMA_BE_EV_CQ_ERR: {
        struct qrdma_cq *cq = qrdma_cq_get(core, id);

        if (cq && !cq->error) {
            cq_fail(core, id, cq, QRDMA_AE_CQ_ERROR,
                    "the backend cannot complete into it");
        }
        return;
    }
    case QRDMA_BE_EV_SRQ_ERR: {
        struct qrdma_srq *srq = qrdma_srq_get(core, id);

        if (srq) {
            qrdma_guest_error(core, "SRQ %u: the backend cannot use it", id);
            qrdma_aeq_post(core, srq->srq_ctx, id, QRDMA_AE_SRQ_ERROR,
                           QRDMA_AE_SRC_SRQ);
        }
        return;
    }
    case QRDMA_BE_EV_PORT_CHANGE:
        /*
         * Read in the next pass, outside the backend's op (a callback may
         * not call back into it); poll runs in that pass.
         */
        core->dp.port_stale = true;
        core->env.kick(core->env.opaque, QRDMA_WORK_DP);
        return;
    case QRDMA_BE_EV_SRQ_LIMIT: {
        struct qrdma_srq *srq = qrdma_srq_get(core, id);

        /* One event per arming, as IB says; MODIFY_SRQ arms it again. */
        if (srq && srq->limit) {
            srq->limit = 0;
            qrdma_aeq_post(core, srq->srq_ctx, id, QRDMA_AE_SRQ_LIMIT,
                           QRDMA_AE_SRC_SRQ);
        }
        return;
    }
    default:
        qp_event(core, id, ev);
    }
}

/*
 * A frame to our own MAC (a QP talking to a QP of this device, rdma_cm on
 * one host) never comes back from the wire: it loops inside the device.
 * So does a copy of a multicast frame whose group has QPs of this device
 * attached (every QP attached to a group receives what is sent to it, as
 * on a NIC that loops multicast back, the sender's own QP included when
 * it is attached); the frame itself goes to the wire as well.
 * The backend may not be re-entered from a callback, so the frame waits in
 * a bounded queue for qrdma_dp_process(); beyond the bound it is dropped
 * and counted, as a full wire would drop it (RC retransmits it).
 */
static void loopback_queue(struct qrdma_core *core, const void *frame,
                           size_t len)
{
    struct qrdma_dp *dp = &core->dp;
    struct qrdma_dp_frame *f;

    f = dp->loop_len < QRDMA_DP_LOOPBACK_MAX ? malloc(sizeof(*f) + len) : NULL;
    if (!f) {
        dp->loop_drops++;
        return;
    }
    f->next = NULL;
    f->len = len;
    memcpy(f->data, frame, len);
    if (dp->loop_tail) {
        dp->loop_tail->next = f;
    } else {
        dp->loop_head = f;
    }
    dp->loop_tail = f;
    dp->loop_len++;
    core->env.kick(core->env.opaque, QRDMA_WORK_DP);
}

static void loopback_drain(struct qrdma_core *core, unsigned budget)
{
    struct qrdma_dp *dp = &core->dp;

    while (dp->loop_head && budget--) {
        struct qrdma_dp_frame *f = dp->loop_head;

        dp->loop_head = f->next;
        if (!dp->loop_head) {
            dp->loop_tail = NULL;
        }
        dp->loop_len--;
        if (f->data[0] & 1) {
            qrdma_mcast_rx_own(core, f->data, f->len);
        } else {
            dp->ops->rx_frame(dp->be, f->data, f->len);
        }
        free(f);
    }
}

static void loopback_free(struct qrdma_dp *dp)
{
    while (dp->loop_head) {
        struct qrdma_dp_frame *f = dp->loop_head;

        dp->loop_head = f->next;
        free(f);
    }
    dp->loop_tail = NULL;
    dp->loop_len = 0;
}

/*
 * A frame of the backend's to the netdev. Once the netdev holds a frame of
 * ours (this one, or the Ethernet function's), the backend hears
 * QRDMA_BE_TX_BUSY and sends nothing until its tx_ready; a frame it sends
 * meanwhile is dropped, so the netdev never holds more than one frame of
 * the backend's and one of the Ethernet function's.
 */
static int dp_wire_out(struct qrdma_core *core, const void *frame, size_t len,
                       const struct iovec *iov, unsigned n)
{
    struct qrdma_dp *dp = &core->dp;

    if (!core->env.link_up(core->env.opaque)) {
        return QRDMA_BE_TX_SENT;        /* lost on a wire that is down */
    }
    if (dp->be_tx_busy) {
        core->stats.tx_busy_drops++;
        return QRDMA_BE_TX_BUSY;
    }
    if (qrdma_tx_frame(core, frame, len, iov, n)) {
        dp->be_tx_busy = true;
        return QRDMA_BE_TX_BUSY;
    }
    return QRDMA_BE_TX_SENT;
}

static int cb_frame_out(void *opaque, const void *frame, size_t len)
{
    struct qrdma_core *core = opaque;
    uint8_t mac[6];

    lan_mac(core, mac);
    if (len >= 6 && !memcmp(frame, mac, 6)) {
        loopback_queue(core, frame, len);
        return QRDMA_BE_TX_SENT;
    }
    if (qrdma_mcast_has_own(core, frame, len)) {
        loopback_queue(core, frame, len);
    }
    return dp_wire_out(core, frame, len, NULL, 0);
}

/* A frame in pieces into one buffer; 0 when it does not fit. */
static size_t iov_join(uint8_t *dst, size_t cap, const struct iovec *iov,
                       unsigned n)
{
    size_t len = 0;

    for (unsigned i = 0; i < n; i++) {
        if (iov[i].iov_len > cap - len) {
            return 0;
        }
        memcpy(dst + len, iov[i].iov_base, iov[i].iov_len);
        len += iov[i].iov_len;
    }
    return len;
}

/*
 * A frame whose payload is still in guest memory (zero-copy transmit):
 * handed on in pieces when the embedding takes them; joined into one
 * buffer for the loopback queue (which keeps it past the mapping) and
 * for an embedding that takes whole frames only.
 */
static int cb_frame_out_iov(void *opaque, const struct iovec *iov, unsigned n)
{
    struct qrdma_core *core = opaque;
    struct qrdma_dp *dp = &core->dp;
    uint8_t mac[6];
    size_t len;

    lan_mac(core, mac);
    if (core->env.send_frame_iov && n && iov[0].iov_len >= 6 &&
        memcmp(iov[0].iov_base, mac, 6)) {
        /* The headers are in the first piece. */
        if (qrdma_mcast_has_own(core, iov[0].iov_base, iov[0].iov_len)) {
            len = iov_join(dp->tx_join, sizeof(dp->tx_join), iov, n);
            if (len) {
                loopback_queue(core, dp->tx_join, len);
            } else {
                dp->tx_join_drops++;
            }
        }
        return dp_wire_out(core, NULL, 0, iov, n);
    }
    len = iov_join(dp->tx_join, sizeof(dp->tx_join), iov, n);
    if (!len) {
        dp->tx_join_drops++;
        return QRDMA_BE_TX_SENT;
    }
    return cb_frame_out(core, dp->tx_join, len);
}

/*
 * The backend's send queue, full at a post, has room: fetch the rest of the
 * ring.
 */
static void cb_sq_space(void *opaque, uint32_t id)
{
    dp_kick_qp(opaque, id);
}

static uint64_t cb_now_ns(void *opaque)
{
    struct qrdma_core *core = opaque;

    return core->env.now_ns(core->env.opaque);
}

/* AETH syndromes (IBTA 9.7.5.2) as the trace names them. */
static const char *nak_name(uint32_t syn)
{
    switch (syn >> 5 & 3) {
    case 1:
        return "rnr";
    case 3:
        switch (syn & 0x1f) {
        case 0:
            return "seq";
        case 1:
            return "inv";
        case 2:
            return "access";
        case 3:
            return "op";
        case 4:
            return "inv_rd";
        }
    }
    return "?";
}

static void cb_tp_event(void *opaque, uint32_t qp_id, enum qrdma_be_tp_event ev,
                        uint32_t psn, uint32_t detail)
{
    static const char *const cause[] = {
        [QRDMA_BE_RETRANSMIT_TIMEOUT] = "timeout",
        [QRDMA_BE_RETRANSMIT_NAK] = "nak",
        [QRDMA_BE_RETRANSMIT_RNR] = "rnr",
    };
    struct qrdma_core *core = opaque;

    if (ev == QRDMA_BE_TP_RETRANSMIT) {
        qrdma_trace(core, QRDMA_TRACE_TP_RETRANSMIT, qp_id, psn, 0, 0,
                    detail < sizeof(cause) / sizeof(cause[0]) ? cause[detail]
                                                              : "?",
                    NULL);
    } else {
        qrdma_trace(core, QRDMA_TRACE_TP_NAK, qp_id, psn, detail, 0,
                    nak_name(detail),
                    ev == QRDMA_BE_TP_NAK_SENT ? "sent" : "received");
    }
}

static void cb_guest_error(void *opaque, const char *msg)
{
    qrdma_guest_error(opaque, "%s", msg);
}

static const struct qrdma_be_callbacks dp_callbacks = {
    .mr_read = cb_mr_read,
    .mr_write = cb_mr_write,
    .mr_check = cb_mr_check,
    .mr_atomic = cb_mr_atomic,
    .mr_gpa_walk = cb_mr_gpa_walk,
    .fast_reg = cb_fast_reg,
    .invalidate = cb_invalidate,
    .bind_mw = cb_bind_mw,
    .get_recv = cb_get_recv,
    .get_srq_recv = cb_get_srq_recv,
    .complete = cb_complete,
    .event = cb_event,
    .sq_space = cb_sq_space,
    .tp_event = cb_tp_event,
    .guest_error = cb_guest_error,
    .frame_out = cb_frame_out,
    .mr_map_read = cb_mr_map_read,
    .mr_unmap_read = cb_mr_unmap_read,
    .frame_out_iov = cb_frame_out_iov,
    .now_ns = cb_now_ns,
};

/* ---- address vectors ----------------------------------------------------- */

/*
 * An AV of the guest's (a QP's path, an AH) as the backend takes it; false if
 * its source GID is gone.
 */
static bool av_to_be(struct qrdma_core *core, const struct qrdma_av_info *av,
                     struct qrdma_be_av *out)
{
    const struct qrdma_gid_entry *sgid;

    if (av->sgid_index >= core->cfg.gid_table_len) {
        return false;
    }
    sgid = &core->gids[av->sgid_index];
    if (!sgid->valid) {
        return false;
    }
    memset(out, 0, sizeof(*out));
    memcpy(out->dmac, av->dmac, 6);
    lan_mac(core, out->smac);
    memcpy(out->dgid, av->dgid, 16);
    memcpy(out->sgid, sgid->gid, 16);
    out->sgid_index = av->sgid_index;
    out->traffic_class = av->traffic_class;
    out->hop_limit = av->hop_limit;
    out->flow_label = av->flow_label;
    return true;
}

/* ---- SQ WQEs ------------------------------------------------------------- */

static const struct {
    uint32_t wr;                /* enum qrdma_be_wr_opcode */
    bool remote;                /* qwords 0..1 name remote memory */
    bool atomic;
    bool ud_ok;                 /* allowed on UD QPs */
} sq_opcodes[] = {
    [QRDMA_SQ_OP_RDMA_WRITE] = { QRDMA_BE_WR_RDMA_WRITE, true, false, false },
    [QRDMA_SQ_OP_RDMA_WRITE_WITH_IMM] = { QRDMA_BE_WR_RDMA_WRITE_WITH_IMM, true,
                                          false, false },
    [QRDMA_SQ_OP_SEND] = { QRDMA_BE_WR_SEND, false, false, true },
    [QRDMA_SQ_OP_SEND_WITH_IMM] = { QRDMA_BE_WR_SEND_WITH_IMM, false, false,
                                    true },
    [QRDMA_SQ_OP_SEND_WITH_INV] = { QRDMA_BE_WR_SEND_WITH_INV, false, false,
                                    false },
    [QRDMA_SQ_OP_RDMA_READ] = { QRDMA_BE_WR_RDMA_READ, true, false, false },
    [QRDMA_SQ_OP_ATOMIC_CMP_AND_SWP] = { QRDMA_BE_WR_ATOMIC_CMP_AND_SWP, true,
                                         true, false },
    [QRDMA_SQ_OP_ATOMIC_FETCH_AND_ADD] = { QRDMA_BE_WR_ATOMIC_FETCH_AND_ADD,
                                           true, true, false },
    [QRDMA_SQ_OP_LOCAL_INV] = { QRDMA_BE_WR_LOCAL_INV, false, false, false },
    [QRDMA_SQ_OP_FAST_REG] = { QRDMA_BE_WR_FAST_REG, false, false, false },
    [QRDMA_SQ_OP_BIND_MW] = { QRDMA_BE_WR_BIND_MW, false, false, false },
};
#define SQ_OP_VALID(op) \
    ((op) < sizeof(sq_opcodes) / sizeof(sq_opcodes[0]) && \
     ((op) == QRDMA_SQ_OP_RDMA_WRITE || sq_opcodes[op].wr))

/*
 * Parse SQ WQE `index` (raw bytes, the whole stride) into wr. NULL, or why
 * it is bad.
 */
static const char *sq_parse(struct qrdma_core *core, struct qrdma_qp *qp,
                            const uint8_t *raw, uint32_t stride, uint32_t index,
                            struct qrdma_be_send_wr *wr)
{
    uint64_t hdr = qrdma_ld_le64(raw + 56);
    unsigned op = hdr & QRDMA_SQ_HDR_OPCODE_MASK;
    unsigned nsge = (hdr & QRDMA_SQ_HDR_NUM_SGE_MASK) >>
                    QRDMA_SQ_HDR_NUM_SGE_SHIFT;
    unsigned ilen = (hdr & QRDMA_SQ_HDR_INLINE_LEN_MASK) >>
                    QRDMA_SQ_HDR_INLINE_LEN_SHIFT;
    uint64_t rkey_imm = qrdma_ld_le64(raw + 8);
    unsigned i, max_sge;

    if (!SQ_OP_VALID(op)) {
        return "unknown opcode";
    }
    if (qp->type == QRDMA_QP_TYPE_UD && !sq_opcodes[op].ud_ok) {
        return "opcode not allowed on a UD QP";
    }
    memset(wr, 0, offsetof(struct qrdma_be_send_wr, sg_list));
    wr->wr_id = index;
    wr->opcode = sq_opcodes[op].wr;
    if ((hdr & QRDMA_SQ_HDR_SIGNALED) ||
        (qp->flags & QRDMA_QP_CREATE_SIG_ALL)) {
        wr->send_flags |= QRDMA_BE_SEND_SIGNALED;
    }
    if (hdr & QRDMA_SQ_HDR_SOLICITED) {
        wr->send_flags |= QRDMA_BE_SEND_SOLICITED;
    }
    if (hdr & QRDMA_SQ_HDR_READ_FENCE) {
        wr->send_flags |= QRDMA_BE_SEND_FENCE;
    }
    wr->imm_data = rkey_imm >> QRDMA_SQ_IMM_SHIFT;
    wr->invalidate_stag = rkey_imm >> QRDMA_SQ_IMM_SHIFT;
    if (sq_opcodes[op].atomic) {
        wr->atomic.remote_addr = qrdma_ld_le64(raw);
        wr->atomic.rkey = rkey_imm & QRDMA_SQ_RKEY_MASK;
        wr->atomic.compare_add = qrdma_ld_le64(raw + 16);
        wr->atomic.swap = qrdma_ld_le64(raw + 24);
    } else if (sq_opcodes[op].remote) {
        wr->rdma.remote_addr = qrdma_ld_le64(raw);
        wr->rdma.rkey = rkey_imm & QRDMA_SQ_RKEY_MASK;
    }
    if (op == QRDMA_SQ_OP_FAST_REG) {
        uint64_t q4 = qrdma_ld_le64(raw + 32);

        /*
         * A local operation: no SGEs, no inline data; the MR checks come when
         * it runs.
         */
        wr->fast_reg.iova = qrdma_ld_le64(raw);
        wr->fast_reg.length = qrdma_ld_le64(raw + 16);
        wr->fast_reg.first = qrdma_ld_le64(raw + 24);
        wr->fast_reg.stag = q4 & QRDMA_SQ_FR_STAG_MASK;
        wr->fast_reg.access = (q4 & QRDMA_SQ_FR_ACCESS_MASK) >>
                              QRDMA_SQ_FR_ACCESS_SHIFT;
        wr->fast_reg.page_log2 = (q4 & QRDMA_SQ_FR_PAGE_MASK) >>
                                 QRDMA_SQ_FR_PAGE_SHIFT;
        wr->fast_reg.levels = (q4 & QRDMA_SQ_FR_LEVELS_MASK) >>
                              QRDMA_SQ_FR_LEVELS_SHIFT;
        wr->fast_reg.fbo = qrdma_ld_le64(raw + 48);
        wr->num_sge = 0;
        return NULL;
    }
    if (op == QRDMA_SQ_OP_BIND_MW) {
        uint64_t q4 = qrdma_ld_le64(raw + 32);

        /*
         * A local operation too; the window checks come when it runs, in SQ
         * order.
         */
        wr->bind_mw.addr = qrdma_ld_le64(raw);
        wr->bind_mw.new_stag = rkey_imm & QRDMA_SQ_MW_NEW_STAG_MASK;
        wr->bind_mw.mr_stag = rkey_imm >> QRDMA_SQ_MW_MR_STAG_SHIFT;
        wr->bind_mw.length = qrdma_ld_le64(raw + 16);
        wr->bind_mw.mw_stag = q4 & QRDMA_SQ_MW_STAG_MASK;
        wr->bind_mw.access = (q4 & QRDMA_SQ_MW_ACCESS_MASK) >>
                             QRDMA_SQ_MW_ACCESS_SHIFT;
        wr->num_sge = 0;
        return NULL;
    }
    if (qp->type == QRDMA_QP_TYPE_UD) {
        uint64_t dest = qrdma_ld_le64(raw + 32);
        uint32_t ah_id = (dest & QRDMA_SQ_UD_AH_MASK) >> QRDMA_SQ_UD_AH_SHIFT;
        struct qrdma_ah *ah = qrdma_ah_get(core, ah_id);

        if (!ah || ah->pd != qp->pd) {
            return "UD WQE names no AH of the QP's PD";
        }
        if (!av_to_be(core, &ah->av, &wr->ud.av)) {
            return "the AH's source GID is not in the GID table";
        }
        wr->ud.remote_qpn = dest & QRDMA_SQ_UD_QPN_MASK;
        wr->ud.remote_qkey = (uint32_t)qrdma_ld_le64(raw + 40);
    }
    if (hdr & QRDMA_SQ_HDR_INLINE) {
        if (ilen > stride - QRDMA_SQ_WQE_HDR_BYTES ||
            ilen > QRDMA_BE_MAX_INLINE) {
            return "inline data beyond the WQE";
        }
        wr->send_flags |= QRDMA_BE_SEND_INLINE;
        wr->inline_data = raw + QRDMA_SQ_WQE_HDR_BYTES;
        wr->inline_len = ilen;
        wr->num_sge = 0;
        return NULL;
    }
    max_sge = (stride - QRDMA_SQ_WQE_HDR_BYTES) / QRDMA_SGE_BYTES;
    if (max_sge > QRDMA_BE_MAX_SGE) {
        max_sge = QRDMA_BE_MAX_SGE;
    }
    if (nsge > max_sge) {
        return "more SGEs than the WQE holds";
    }
    wr->num_sge = nsge;
    for (i = 0; i < nsge; i++) {
        const uint8_t *s = raw + QRDMA_SQ_WQE_HDR_BYTES + i * QRDMA_SGE_BYTES;

        wr->sg_list[i].addr = qrdma_ld_le64(s);
        wr->sg_list[i].length = qrdma_ld_le32(s + 8);
        wr->sg_list[i].lkey = qrdma_ld_le32(s + 12);
    }
    return NULL;
}

/*
 * SQ WQE index cannot be read (a bad PBLE, bus mastering off). A QP not
 * in error yet completes it in error and moves to ERR (bad_wqe); one
 * already in ERR stops fetching until the next SQ doorbell, since its
 * error would kick it again and again to read the same slot.
 */
static void sq_unreadable(struct qrdma_core *core, uint32_t id,
                          struct qrdma_qp *qp, struct qrdma_dp_qp *dq,
                          uint32_t index, const char *why)
{
    if (qp->state != QRDMA_QPS_ERR) {
        dq->sq_fetched++;
        bad_wqe(core, id, true, index, QRDMA_BE_WC_LOC_QP_OP_ERR, why);
        return;
    }
    qrdma_guest_error(
        core, "QP %u: SQ WQE %u: %s; fetching stops until the next SQ doorbell",
        id, index, why);
    qp_fatal(core, id, qp);
}

/* Hand the SQ's new WQEs to the backend. */
static void sq_fetch(struct qrdma_core *core, uint32_t id, struct qrdma_qp *qp,
                     struct qrdma_dp_qp *dq)
{
    /*
     * Each WQE is copied in here whole. Cache-line aligned, the copy
     * touches no more lines than the WQE spans; a buffer inside struct
     * qrdma_dp sat wherever the fields before it put it, and an 8-byte
     * aligned one cost a 64-byte WRITE's message rate about 3%.
     */
    _Alignas(64) uint8_t raw[1u << QRDMA_WQE_LOG2_MAX];
    struct qrdma_be_send_wr *wr = &core->dp.wr;
    uint32_t stride = 1u << qp->sq.stride_log2,
             mask = (1u << qp->sq.size_log2) - 1;
    unsigned n;

    for (n = 0; n < DP_SQ_BUDGET; n++) {
        uint32_t index = dq->sq_fetched & mask;
        const char *why;
        uint64_t gpa;
        int ret;

        if (qrdma_queue_addr_of(core, &qp->sq, "SQ of QP", id,
                                (uint64_t)index << qp->sq.stride_log2, &gpa) ||
            core->env.dma_read(core->env.opaque, gpa + 56, raw + 56, 8)) {
            sq_unreadable(core, id, qp, dq, index, "SQ page is not usable");
            return;
        }
        if (!!(qrdma_ld_le64(raw + 56) & QRDMA_SQ_HDR_VALID) !=
            ring_polarity(&qp->sq, dq->sq_fetched)) {
            return;             /* nothing new */
        }
        /* VALID seen: the rest of the WQE was written before it. */
        if (core->env.dma_read(core->env.opaque, gpa, raw, stride)) {
            sq_unreadable(core, id, qp, dq, index, "SQ page is not guest RAM");
            return;
        }
        if ((qrdma_ld_le64(raw + 56) & QRDMA_SQ_HDR_OPCODE_MASK) ==
            QRDMA_SQ_OP_NOP) {
            dq->sq_fetched++;
            continue;
        }
        why = sq_parse(core, qp, raw, stride, index, wr);
        if (why) {
            dq->sq_fetched++;
            bad_wqe(core, id, true, index, QRDMA_BE_WC_LOC_QP_OP_ERR, why);
            return;
        }
        ret = core->dp.ops->post_send(core->dp.be, dq->be_qp, wr);
        if (ret == -ENOSPC) {
            /* the backend's queue is full: cb_sq_space kicks us */
            return;
        }
        dq->sq_fetched++;
        if (ret) {
            /*
             * -EACCES: a key the backend cannot resolve, as the MR checks would
             * report it.
             */
            bad_wqe(core, id, true, index,
                    ret == -EACCES ? QRDMA_BE_WC_LOC_PROT_ERR
                                   : QRDMA_BE_WC_LOC_QP_OP_ERR,
                    "the transport refused the work request");
            return;
        }
        core->dp.sq_wqes++;
    }
    /* Budget used up with WQEs maybe left: come back after the others. */
    dp_kick_qp(core, id);
}

/* ---- object hooks -------------------------------------------------------- */

/* Bytes of an IB path MTU (enum qrdma_be_mtu, 1 = 256 ... 5 = 4096). */
static uint32_t mtu_bytes(uint32_t mtu)
{
    return 128u << mtu;
}

/*
 * The port's active MTU (enum qrdma_be_mtu), the largest UD datagram: what the
 * driver reports, Linux's iboe_get_mtu() of the LAN MTU (less 96 bytes of
 * GRH, UDP, BTH, XRC and atomic extended headers and ICRC) within
 * CAP_MAX_MTU, and at least 256.
 */
static uint32_t port_mtu(struct qrdma_core *core)
{
    uint32_t lan = core->lan.regs[(QRDMA_REG_LAN_MTU - QRDMA_REG_LAN_BASE) / 4];
    uint32_t room = lan > 96 ? lan - 96 : 0;
    uint32_t mtu = QRDMA_BE_MTU_4096;

    while (mtu > QRDMA_BE_MTU_256 &&
           (mtu_bytes(mtu) > room || mtu_bytes(mtu) > core->cfg.max_mtu)) {
        mtu--;
    }
    return mtu;
}

/*
 * What the core keeps of a QP between its RESETs: nothing but its place on
 * the kick FIFO and its backend QP. A QP reset (or destroyed and created
 * again) while on the FIFO keeps its entry there: forgetting it would let
 * the next kick queue it a second time, and more entries than nqp slots
 * overwrite other QPs' entries, which are then never run again.
 */
static void dp_qp_forget(struct qrdma_dp_qp *dq)
{
    struct qrdma_dp_qp kept = *dq;

    memset(dq, 0, sizeof(*dq));
    dq->kicked = kept.kicked;
    dq->be_qp = kept.be_qp;
    dq->wire_qpn = kept.wire_qpn;
    /* and its place on the doorbell page's list, which goes with be_qp */
    dq->on_page = kept.on_page;
    dq->page = kept.page;
    dq->page_prev = kept.page_prev;
    dq->page_next = kept.page_next;
}

int qrdma_dp_qp_create(struct qrdma_core *core, uint32_t qp_id,
                       uint32_t *wire_qpn)
{
    struct qrdma_qp *qp = qrdma_qp_get(core, qp_id);
    struct qrdma_dp *dp = &core->dp;
    struct qrdma_be_qp_init init;
    struct qrdma_be_qp *be_qp = NULL;
    struct qrdma_dp_qp *dq;
    uint32_t stride, qpn;
    int ret;

    if (!qp || !dp->be || !dp_sized(core)) {
        return -ENOMEM;
    }
    dq = dp_qp(core, qp_id);
    if (!dq) {
        return -ENOMEM;
    }
    memset(&init, 0, sizeof(init));
    init.qp_id = qp_id;
    init.type = qp->type;
    init.pd = qp->pd;
    init.send_cq = qp->send_cq;
    init.recv_cq = qp->recv_cq;
    init.has_srq = !!(qp->flags & QRDMA_QP_CREATE_SRQ);
    init.srq = init.has_srq ? qp->srq : 0;
    stride = 1u << qp->sq.stride_log2;
    init.max_send_wr = 1u << qp->sq.size_log2;
    if (init.max_send_wr > DP_ENGINE_SQ_DEPTH) {
        init.max_send_wr = DP_ENGINE_SQ_DEPTH;
    }
    init.max_inline = stride > QRDMA_SQ_WQE_HDR_BYTES
                          ? stride - QRDMA_SQ_WQE_HDR_BYTES
                          : 0;
    if (init.max_inline > QRDMA_BE_MAX_INLINE) {
        init.max_inline = QRDMA_BE_MAX_INLINE;
    }
    init.max_send_sge = stride > QRDMA_SQ_WQE_HDR_BYTES
                            ? (stride - QRDMA_SQ_WQE_HDR_BYTES) /
                                  QRDMA_SGE_BYTES
                            : 0;
    if (init.max_send_sge > QRDMA_BE_MAX_SGE) {
        init.max_send_sge = QRDMA_BE_MAX_SGE;
    }
    if (!init.has_srq) {
        uint32_t rq_stride = 1u << qp->rq.stride_log2;

        init.max_recv_wr = 1u << qp->rq.size_log2;
        init.max_recv_sge = rq_stride > QRDMA_RQ_WQE_HDR_BYTES
                                ? (rq_stride - QRDMA_RQ_WQE_HDR_BYTES) /
                                      QRDMA_SGE_BYTES
                                : 0;
        if (init.max_recv_sge > QRDMA_BE_MAX_SGE) {
            init.max_recv_sge = QRDMA_BE_MAX_SGE;
        }
    }
    if (dq->be_qp) {
        dp->ops->qp_destroy(dp->be, dq->be_qp);
        dp_qp_set_be(core, qp_id, NULL);
    }
    dp_qp_forget(dq);
    ret = dp->ops->qp_create(dp->be, &init, &be_qp, &qpn);
    if (ret) {
        return ret;
    }
    if (qpn > QRDMA_OBJ_ID_MASK) {
        /*
         * Peers address the QP by this number in a 24-bit BTH field, and
         * the guest learns it from CREATE_QP's return value (WIRE_IDS,
         * docs/hw-spec.md section 17.1): one that does not fit is the
         * backend's bug, and the command fails rather than hand it out.
         */
        dp->ops->qp_destroy(dp->be, be_qp);
        return -ENOTSUP;
    }
    dp_qp_set_be(core, qp_id, be_qp);
    dq->wire_qpn = qpn;
    *wire_qpn = qpn;
    return 0;
}

void qrdma_dp_qp_modify(struct qrdma_core *core, uint32_t qp_id, uint32_t mask)
{
    struct qrdma_qp *qp = qrdma_qp_get(core, qp_id);
    struct qrdma_dp_qp *dq = dp_qp(core, qp_id);
    struct qrdma_dp *dp = &core->dp;
    const struct qrdma_qp_attrs *a;
    struct qrdma_be_qp_attr attr;
    uint32_t qmask;

    if (!qp || !dq || !dq->be_qp) {
        return;
    }
    a = &qp->attr;
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = qp->state;
    attr.path_mtu = a->path_mtu;
    attr.qkey = a->qkey;
    attr.rq_psn = a->rq_psn;
    attr.sq_psn = a->sq_psn;
    attr.dest_qp_num = a->dest_qpn;
    attr.qp_access_flags = a->access_flags;
    attr.max_rd_atomic = a->max_rd_atomic;
    attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
    attr.min_rnr_timer = a->min_rnr_timer;
    attr.timeout = a->timeout;
    attr.retry_cnt = a->retry_cnt;
    attr.rnr_retry = a->rnr_retry;
    /*
     * The masks share the IB numbering; the backend gets the attributes it
     * carries.
     */
    qmask = (mask & QRDMA_BE_QP_ATTR_ALL) | QRDMA_BE_QP_ATTR_STATE;
    if (qp->type == QRDMA_QP_TYPE_UD) {
        /*
         * UD has no PATH_MTU attribute; without one the transport would use
         * 256.
         */
        attr.path_mtu = port_mtu(core);
        qmask |= QRDMA_BE_QP_ATTR_PATH_MTU;
    }
    if ((qmask & QRDMA_BE_QP_ATTR_AV) && !av_to_be(core, &a->av, &attr.av)) {
        /*
         * MODIFY_QP checked the GID index; a GID deleted since is the guest's
         * loss.
         */
        qrdma_guest_error(core, "QP %u: the path's source GID is gone", qp_id);
        qmask &= ~QRDMA_BE_QP_ATTR_AV;
    }
    if (qp->state == QRDMA_QPS_RESET) {
        /*
         * RESET forgets everything, the rings' positions included; the
         * backend's QP starts over with the same QPN. One that cannot is
         * gone, as if the QP could not be created.
         */
        dp_qp_forget(dq);
        if (dp->ops->qp_modify(dp->be, dq->be_qp, &attr, qmask)) {
            dp->ops->qp_destroy(dp->be, dq->be_qp);
            dp_qp_set_be(core, qp_id, NULL);
        }
        qp->sq_head = qp->rq_head = 0;
        return;
    }
    if (dp->ops->qp_modify(dp->be, dq->be_qp, &attr, qmask)) {
        qrdma_guest_error(core,
                          "QP %u: the transport refused the modify to state %s",
                          qp_id, qrdma_qp_state_name(qp->state));
    }
    if (qp->state == QRDMA_QPS_ERR && !(qp->flags & QRDMA_QP_CREATE_SRQ)) {
        dq->rq_flush = true;
    }
    if (qp->state == QRDMA_QPS_SQD) {
        qp->sq_draining = true;
    }
    /* WQEs posted before RTS (or before the error) are due now. */
    dp_kick_qp(core, qp_id);
}

void qrdma_dp_qp_destroy(struct qrdma_core *core, uint32_t qp_id)
{
    struct qrdma_dp_qp *dq = dp_qp(core, qp_id);

    if (dq && dq->be_qp) {
        core->dp.ops->qp_destroy(core->dp.be, dq->be_qp);
        dp_qp_set_be(core, qp_id, NULL);
        dq->rq_flush = false;
        /* A stale FIFO entry finds no QP and is dropped. */
    }
}

/*
 * An MR REG_MR or ALLOC_STAG has just recorded: the backend's hook, for a
 * backend that mirrors MRs (one with none, sw, has nothing to do, and the
 * rkey is the STag). *rkey gets the rkey peers will use, which the command
 * returns to the driver (WIRE_IDS, docs/hw-spec.md section 18.1). A
 * fast-register MR's rkey must carry the STag's key byte: a FAST_REG WQE
 * changes that byte alone (ib_update_fast_reg_key in the guest), so the
 * guest's rkey and the backend's stay in step only if they start equal.
 */
int qrdma_dp_srq_create(struct qrdma_core *core, uint32_t srq_id)
{
    struct qrdma_srq *srq = qrdma_srq_get(core, srq_id);
    struct qrdma_dp *dp = &core->dp;
    struct qrdma_be_srq_init init;
    uint32_t stride;
    int ret;

    if (!srq) {
        return -EINVAL;
    }
    srq->be_srq = NULL;
    if (!dp->ops->srq_create) {
        /* the core reads SRQ WQEs when messages need them */
        return 0;
    }
    if (!dp->be) {
        return -ENOMEM;
    }
    stride = 1u << srq->ring.stride_log2;
    memset(&init, 0, sizeof(init));
    init.srq_id = srq_id;
    init.pd = srq->pd;
    init.max_wr = 1u << srq->ring.size_log2;
    init.max_sge = stride > QRDMA_RQ_WQE_HDR_BYTES
                   ? (stride - QRDMA_RQ_WQE_HDR_BYTES) / QRDMA_SGE_BYTES : 0;
    if (init.max_sge > QRDMA_BE_MAX_SGE) {
        init.max_sge = QRDMA_BE_MAX_SGE;
    }
    init.limit = srq->limit;
    ret = dp->ops->srq_create(dp->be, &init, &srq->be_srq);
    if (ret) {
        srq->be_srq = NULL;
        return ret;
    }
    /*
     * The guest rings no SRQ doorbell: the backend's poll looks for WQEs from
     * now on.
     */
    core->env.kick(core->env.opaque, QRDMA_WORK_DP);
    return 0;
}

int qrdma_dp_srq_modify(struct qrdma_core *core, uint32_t srq_id,
                        uint32_t limit)
{
    struct qrdma_srq *srq = qrdma_srq_get(core, srq_id);
    struct qrdma_dp *dp = &core->dp;

    if (!srq || !dp->be || !dp->ops->srq_modify || !srq->be_srq) {
        return 0;
    }
    return dp->ops->srq_modify(dp->be, srq->be_srq, limit);
}

void qrdma_dp_srq_destroy(struct qrdma_core *core, uint32_t srq_id)
{
    struct qrdma_srq *srq = qrdma_srq_get(core, srq_id);
    struct qrdma_dp *dp = &core->dp;

    if (srq && srq->be_srq && dp->be && dp->ops->srq_destroy) {
        dp->ops->srq_destroy(dp->be, srq->be_srq);
    }
    if (srq) {
        srq->be_srq = NULL;
    }
}

int qrdma_dp_mr_register(struct qrdma_core *core, uint32_t stag, uint32_t *rkey)
{
    struct qrdma_dp *dp = &core->dp;
    const struct qrdma_mr *mr = &core->obj.mr[stag >> QRDMA_STAG_INDEX_SHIFT];
    int (*hook)(struct qrdma_be *be, const struct qrdma_be_mr *m,
                uint32_t *rkey) = mr->type == QRDMA_MR_TYPE_FAST_REG ?
                                  dp->ops->mr_alloc_stag :
                                  dp->ops->mr_register;
    struct qrdma_be_mr m;
    int ret;

    *rkey = stag;
    if (!dp->be || !hook) {
        return 0;
    }
    /*
     * A backend that mirrors MRs to a host NIC has no way to carry windows yet.
     */
    if (mr->type == QRDMA_MR_TYPE_MW) {
        return -ENOTSUP;
    }
    memset(&m, 0, sizeof(m));
    m.stag = stag;
    m.pd = mr->pd;
    m.access = mr->access;
    m.type = mr->type;
    m.iova = mr->iova;
    m.length = mr->length;
    m.max_pages = mr->max_pages;
    ret = hook(dp->be, &m, rkey);
    if (ret) {
        *rkey = stag;
        return ret;
    }
    if (mr->type == QRDMA_MR_TYPE_FAST_REG &&
        (*rkey & QRDMA_STAG_KEY_MASK) != (stag & QRDMA_STAG_KEY_MASK)) {
        qrdma_dp_mr_deregister(core, stag);
        *rkey = stag;
        return -ENOTSUP;
    }
    return 0;
}

void qrdma_dp_mr_deregister(struct qrdma_core *core, uint32_t stag)
{
    struct qrdma_dp *dp = &core->dp;

    if (dp->be && dp->ops->mr_deregister) {
        dp->ops->mr_deregister(dp->be, stag);
    }
}

void qrdma_dp_cq_destroy(struct qrdma_core *core, uint32_t cq_id)
{
    if (core->dp.cq && cq_id < core->dp.ncq) {
        core->dp.cq[cq_id].armed = 0;
    }
}

/* ---- doorbells, frames, work --------------------------------------------- */

static void bad_doorbell(struct qrdma_core *core, uint32_t page,
                         uint32_t offset, uint32_t value, const char *what)
{
    qrdma_trace(core, QRDMA_TRACE_BAD_DOORBELL, page, offset, value, 0, what,
                NULL);
    qrdma_aeq_post(core, 0, page, QRDMA_AE_BAD_DOORBELL, QRDMA_AE_SRC_DOORBELL);
    qrdma_guest_error(core, "doorbell 0x%x at page %u offset 0x%x: %s", value,
                      page, offset, what);
}

void qrdma_dp_doorbell(struct qrdma_core *core, uint32_t page, uint32_t offset,
                       uint32_t value)
{
    switch (offset) {
    case QRDMA_DB_SQ:
    case QRDMA_DB_RQ: {
        struct qrdma_qp *qp = qrdma_qp_get(core, value);
        struct qrdma_dp_qp *dq = dp_qp(core, value);

        if (!qp || !dq || !dq->be_qp || qp->db_page != page) {
            bad_doorbell(core, page, offset, value,
                         "no QP of this page has that ID");
            return;
        }
        if (offset == QRDMA_DB_RQ && qp->state != QRDMA_QPS_ERR) {
            /*
             * A backend that posts receives ahead takes the new WQEs now;
             * the others read them when messages arrive (get_recv).
             */
            if (core->dp.ops->recv_doorbell) {
                core->dp.ops->recv_doorbell(core->dp.be, dq->be_qp);
            }
            return;
        }
        if (offset == QRDMA_DB_RQ && !(qp->flags & QRDMA_QP_CREATE_SRQ)) {
            /* again, if an unreadable slot stopped it */
            dq->rq_flush = true;
        }
        dp_kick_qp(core, value);
        return;
    }
    case QRDMA_DB_CQ_ARM: {
        struct qrdma_cq *cq = qrdma_cq_get(core, value);
        uint8_t raw[8];
        uint64_t arm;

        if (!cq || cq->db_page != page || !dp_sized(core) ||
            value >= core->dp.ncq) {
            bad_doorbell(core, page, offset, value,
                         "no CQ of this page has that ID");
            return;
        }
        if (core->env.dma_read(core->env.opaque, cq->shadow + 8, raw, 8)) {
            cq_fail(core, value, cq, QRDMA_AE_CQ_ERROR,
                    "shadow area is not guest RAM");
            return;
        }
        arm = qrdma_ld_le64(raw);
        core->dp.cq[value].armed = arm &
                                   (QRDMA_CQ_ARM_NEXT | QRDMA_CQ_ARM_SOLICITED);
        return;
    }
    default:
        bad_doorbell(core, page, offset, value, "no doorbell at that offset");
    }
}

void qrdma_dp_sq_notify(struct qrdma_core *core, uint32_t page)
{
    struct qrdma_dp *dp = &core->dp;
    uint64_t kicked = 0;
    uint32_t id;

    if (!dp->page_first || page >= core->cfg.db_pages) {
        id = QRDMA_DP_NO_QP;
    } else {
        id = dp->page_first[page];
    }
    /* each QP of the page is on its list once: at most nqp kicks */
    for (; id != QRDMA_DP_NO_QP; id = dp->qp[id].page_next) {
        dp_kick_qp(core, id);
        kicked++;
    }
    core->stats.sq_notify_kicks += kicked;
    if (!kicked) {
        /*
         * Not the guest's error as far as the device can tell: the QP the
         * doorbell was for may have been destroyed (by a CQP command that
         * overtook the notification) since. The value, which would say,
         * was not seen.
         */
        core->stats.sq_notify_idle++;
        qrdma_trace(core, QRDMA_TRACE_SQ_NOTIFY_IDLE, page, 0, 0, 0, NULL,
                    NULL);
    }
}

void qrdma_dp_rx_frame(struct qrdma_core *core, const uint8_t *frame,
                       size_t len)
{
    struct qrdma_dp *dp = &core->dp;
    uint8_t mac[6];

    if (!dp->be || !dp->ops->rx_frame) {
        /* a backend without frames has no RoCE on this wire */
        return;
    }
    /*
     * The driver may change the station address at any time: the frame is for
     * the one now.
     */
    lan_mac(core, mac);
    if (memcmp(mac, dp->be_mac, 6) && dp->ops->set_mac) {
        dp->ops->set_mac(dp->be, mac);
        memcpy(dp->be_mac, mac, 6);
    }
    dp->ops->rx_frame(dp->be, frame, len);
    /*
     * ACKs, responses and completions follow from the poll in the bottom half.
     */
    core->env.kick(core->env.opaque, QRDMA_WORK_DP);
}

void qrdma_dp_rx_mcast(struct qrdma_core *core, const uint8_t *frame,
                       size_t len, const uint32_t *qp_id, uint32_t n)
{
    struct qrdma_be_qp *qps[QRDMA_BE_MCAST_MAX_QPS];
    struct qrdma_dp *dp = &core->dp;
    unsigned i, nqp = 0;

    if (!dp->be || !dp->ops->rx_mcast) {
        /* no multicast without it (CAP_FEATURES.MCAST clear) */
        return;
    }
    /* A QP whose backend side a failed RESET took away receives nothing. */
    for (i = 0; i < n && nqp < QRDMA_BE_MCAST_MAX_QPS; i++) {
        struct qrdma_dp_qp *dq = dp_qp(core, qp_id[i]);

        if (dq && dq->be_qp) {
            qps[nqp++] = dq->be_qp;
        }
    }
    if (!nqp) {
        core->stats.mcast_rx_dropped++;
        core->port_stats.live[QRDMA_STAT_RX_DROPS]++;
        return;
    }
    dp->ops->rx_mcast(dp->be, frame, len, qps, nqp);
    core->env.kick(core->env.opaque, QRDMA_WORK_DP);
}

void qrdma_dp_process(struct qrdma_core *core)
{
    struct qrdma_dp *dp = &core->dp;
    uint32_t n, todo = dp->fifo_len;
    uint64_t next;

    if (!dp->be) {
        return;
    }
    for (n = 0; n < todo && dp->fifo_len; n++) {
        uint32_t id = dp->fifo[dp->fifo_head];
        struct qrdma_dp_qp *dq = &dp->qp[id];
        struct qrdma_qp *qp = qrdma_qp_get(core, id);

        dp->fifo_head = (dp->fifo_head + 1) % dp->nqp;
        dp->fifo_len--;
        dq->kicked = false;
        if (!qp || !dq->be_qp) {
            continue;
        }
        if (dq->cq_lost) {
            qp_cq_lost(core, id, qp, dq);
        }
        if (dp->ops->qp_state(dp->be, dq->be_qp) == QRDMA_BE_QPS_ERR &&
            qp->state != QRDMA_QPS_ERR) {
            qp_follow_state(core, id);  /* see cb_complete() */
        }
        if (qp->state == QRDMA_QPS_RTS || qp->state == QRDMA_QPS_SQD ||
            qp->state == QRDMA_QPS_SQE || qp->state == QRDMA_QPS_ERR) {
            sq_fetch(core, id, qp, dq);
        }
        /*
         * After the backend's own flushes of the WQEs it holds (cb_complete
         * kicks).
         */
        if (dq->rq_flush && qp->state == QRDMA_QPS_ERR && !dq->rq_held) {
            rq_flush(core, id, qp, dq);
        }
    }
    if (dp->be_tx_busy && !qrdma_tx_blocked(core)) {
        /* the netdev has sent what it held: the backend goes on */
        dp->be_tx_busy = false;
        if (dp->ops->tx_ready) {
            dp->ops->tx_ready(dp->be);
        }
    }
    loopback_drain(core, DP_ENGINE_BUDGET);
    next = dp->ops->poll(dp->be, DP_ENGINE_BUDGET);
    if (dp->port_stale) {
        dp->port_stale = false;
        qrdma_dp_port_refresh(core);
    }
    if (dp->fifo_len || dp->loop_head ||
        next <= core->env.now_ns(core->env.opaque)) {
        core->env.kick(core->env.opaque, QRDMA_WORK_DP);
    } else if (next != dp->deadline) {
        dp->deadline = next;
        core->env.timer_mod(core->env.opaque, next);
    }
}

/* ---- lifetime ------------------------------------------------------------ */

/*
 * What the backend is told at creation; every reset starts it over from the
 * same.
 */
static void be_params(const struct qrdma_core *core, struct qrdma_be_params *p)
{
    const struct qrdma_core_fault_cfg *f = &core->cfg.fault;

    memset(p, 0, sizeof(*p));
    memcpy(p->mac, core->cfg.mac, 6);
    p->stall_floor_ns = (uint64_t)core->cfg.stall_floor_ms * 1000000;
    p->backend_config = core->cfg.backend_config;
    /* All zero (the default) leaves fault injection off. */
    p->fault.loss_ppm = f->loss_ppm;
    p->fault.dup_ppm = f->dup_ppm;
    p->fault.reorder_ppm = f->reorder_ppm;
    p->fault.corrupt_ppm = f->corrupt_ppm;
    p->fault.delay_ns = (uint64_t)f->delay_us * 1000;
    p->fault.seed = f->seed;
}

int qrdma_core_backend_wait_fd(struct qrdma_core *core)
{
    struct qrdma_dp *dp = &core->dp;

    return dp->be && dp->ops->wait_fd ? dp->ops->wait_fd(dp->be) : -1;
}

int qrdma_dp_init(struct qrdma_core *core, const struct qrdma_be_ops *ops,
                  char *err, size_t err_len)
{
    struct qrdma_dp *dp = &core->dp;
    struct qrdma_be_params params;
    struct qrdma_be_callbacks cbs;

    if (!ops->create || !ops->reset || !ops->destroy || !ops->qp_create ||
        !ops->qp_modify || !ops->qp_state || !ops->qp_destroy ||
        !ops->post_send || !ops->poll || !ops->rx_frame != !ops->set_mac) {
        snprintf(err, err_len, "backend %s lacks an op the core needs",
                 ops->name);
        return -EINVAL;
    }
    be_params(core, &params);
    dp->ops = ops;
    dp->deadline = UINT64_MAX;
    memcpy(dp->be_mac, params.mac, 6);
    cbs = dp_callbacks;
    if (!core->env.dma_map_read) {
        /*
         * An embedding that cannot map guest memory: without the map
         * callbacks the backend copies payloads into frames.
         */
        cbs.mr_map_read = NULL;
        cbs.mr_unmap_read = NULL;
        cbs.frame_out_iov = NULL;
    }
    dp->be = ops->create(&cbs, core, &params, err, err_len);
    return dp->be ? 0 : -ENOMEM;
}

/*
 * Everything but the backend and its ops: per-object state, kicks, loopback,
 * counters.
 */
static void dp_forget(struct qrdma_dp *dp)
{
    const struct qrdma_be_ops *ops = dp->ops;
    struct qrdma_be *be = dp->be;

    loopback_free(dp);
    free(dp->qp);
    free(dp->cq);
    free(dp->fifo);
    free(dp->page_first);
    memset(dp, 0, sizeof(*dp));
    dp->ops = ops;
    dp->be = be;
}

void qrdma_dp_fini(struct qrdma_core *core)
{
    struct qrdma_dp *dp = &core->dp;

    if (dp->be) {
        dp->ops->destroy(dp->be);
    }
    dp->be = NULL;
    dp_forget(dp);
    dp->ops = NULL;
}

/*
 * Device reset. The core calls it only from its outermost entry point
 * (struct qrdma_core_guard), never with a backend op on the stack, so the
 * backend may free everything it has. A backend that cannot start again
 * is dropped: the data path stays off until the device goes away.
 */
void qrdma_dp_reset(struct qrdma_core *core)
{
    struct qrdma_dp *dp = &core->dp;

    if (dp->be && dp->ops->reset(dp->be)) {
        dp->ops->destroy(dp->be);
        dp->be = NULL;
    }
    dp_forget(dp);
    if (dp->be) {
        dp->deadline = UINT64_MAX;
        memcpy(dp->be_mac, core->cfg.mac, 6);
    }
}

/* ---- the host port (a backend on a host NIC) ----------------------------- */

bool qrdma_dp_host_port(const struct qrdma_core *core)
{
    return core->dp.ops && core->dp.ops->port;
}

bool qrdma_dp_host_gid(const struct qrdma_core *core, const uint8_t gid[16])
{
    unsigned i;

    for (i = 0; i < core->dp.port.ngids; i++) {
        if (!memcmp(core->dp.port.gid[i], gid, 16)) {
            return true;
        }
    }
    return false;
}

void qrdma_dp_host_gids_str(const struct qrdma_core *core, char *buf,
                            size_t len)
{
    const struct qrdma_be_port *port = &core->dp.port;
    size_t used = 0;
    unsigned i;

    snprintf(buf, len, "none");
    for (i = 0; i < port->ngids && used < len; i++) {
        char g[QRDMA_GID_STR_LEN];

        qrdma_gid_str(port->gid[i], g, sizeof(g));
        used += snprintf(buf + used, len - used, "%s%s (host index %u)",
                         i ? ", " : "", g, port->gid_index[i]);
    }
}

void qrdma_dp_port_refresh(struct qrdma_core *core)
{
    struct qrdma_dp *dp = &core->dp;
    struct qrdma_be_port *port = &dp->port;
    unsigned i, w;

    if (!qrdma_dp_host_port(core)) {
        return;
    }
    memset(port, 0, sizeof(*port));
    if (!dp->be || dp->ops->port(dp->be, port)) {
        memset(port, 0, sizeof(*port));     /* down, no GIDs */
    }
    if (port->ngids > QRDMA_HOST_GIDS_MAX) {
        port->ngids = QRDMA_HOST_GIDS_MAX;
    }
    if (port->speed_mbps) {
        core->regs[QRDMA_REG_PORT_SPEED / 4] = port->speed_mbps;
    }
    core->regs[QRDMA_REG_HOST_GID_COUNT / 4] = port->ngids;
    for (i = 0; i < QRDMA_HOST_GIDS_MAX; i++) {
        for (w = 0; w < 4; w++) {
            core->regs[QRDMA_REG_HOST_GID(i) / 4 + w] =
                i < port->ngids ? qrdma_ld_le32(port->gid[i] + 4 * w) : 0;
        }
    }
}

/* ---- saved state (qrdma_mig.c, docs/migration.md) ------------------------ */

/*
 * The data path's part of the stream. Loading runs after the objects: it
 * makes each QP's backend QP again (qp_create, as CREATE_QP did) so the
 * backend's own sections find them. The timer deadline is not saved: the
 * kick after the load asks the backend again.
 */
void qrdma_dp_mig(struct qrdma_core *core, struct qrdma_mig *m)
{
    struct qrdma_dp *dp = &core->dp;
    bool sized = dp->qp && dp->nqp == core->hmc.count[QRDMA_HMC_QP] &&
                 dp->ncq == core->hmc.count[QRDMA_HMC_CQ];
    uint32_t i, n, fifo_len = dp->fifo_len, loop_len = dp->loop_len;
    struct qrdma_dp_frame *f = dp->loop_head;

    qrdma_mig_section(m, QRDMA_MIG_SEC_DP, "dp", QRDMA_MIG_V_DP);
    qrdma_mig_bytes(m, "be_mac", dp->be_mac, 6);
    qrdma_mig_bool(m, "sized", &sized);
    if (m->loading && !m->error && sized && !dp_sized(core)) {
        qrdma_mig_fail(m, -ENOMEM, "sized",
                       "out of memory for the data path's arrays");
    }
    for (i = 0; sized && i < dp->nqp && !m->error; i++) {
        struct qrdma_qp *qp = qrdma_qp_get(core, i);
        struct qrdma_dp_qp *dq = &dp->qp[i];

        if (!qp) {
            continue;
        }
        if (m->loading) {
            uint32_t wire_qpn;
            int ret = qrdma_dp_qp_create(core, i, &wire_qpn);

            if (ret) {
                qrdma_mig_fail(m, ret, "qp",
                               "QP %u: the backend cannot make it again (%d)",
                               i, ret);
                break;
            }
        }
        qrdma_mig_u32_same(m, "qp.wire_qpn", dq->wire_qpn);
        qrdma_mig_bool(m, "qp.kicked", &dq->kicked);
        qrdma_mig_bool(m, "qp.rq_flush", &dq->rq_flush);
        qrdma_mig_bool(m, "qp.cq_lost", &dq->cq_lost);
        qrdma_mig_bool(m, "qp.fatal_raised", &dq->fatal_raised);
        qrdma_mig_u32(m, "qp.sq_fetched", &dq->sq_fetched);
        qrdma_mig_u32(m, "qp.rq_held", &dq->rq_held);
    }
    for (i = 0; sized && i < dp->ncq && !m->error; i++) {
        qrdma_mig_u32(m, "cq.armed", &dp->cq[i].armed);
    }
    /* The kick FIFO, oldest first; loaded from slot 0. */
    qrdma_mig_u32_max(m, "fifo_len", &fifo_len, sized ? dp->nqp : 0);
    for (i = 0; i < fifo_len && !m->error; i++) {
        uint32_t *slot =
            &dp->fifo[m->loading ? i : (dp->fifo_head + i) % dp->nqp];

        qrdma_mig_u32_max(m, "fifo", slot, dp->nqp - 1);
    }
    if (m->loading && !m->error) {
        dp->fifo_head = 0;
        dp->fifo_len = fifo_len;
    }
    /*
     * Frames looping back to our own MAC: on the wire, but kept (it is cheap).
     */
    qrdma_mig_u32_max(m, "loop_len", &loop_len, QRDMA_DP_LOOPBACK_MAX);
    for (n = 0; n < loop_len && !m->error; n++) {
        uint32_t len = m->loading ? 0 : (uint32_t)f->len;

        qrdma_mig_u32_max(m, "loop.len", &len, 65536);
        if (m->loading) {
            f = m->error ? NULL : malloc(sizeof(*f) + len);
            if (!f) {
                qrdma_mig_fail(m, -ENOMEM, "loop.len", "out of memory");
                break;
            }
            f->next = NULL;
            f->len = len;
            if (dp->loop_tail) {
                dp->loop_tail->next = f;
            } else {
                dp->loop_head = f;
            }
            dp->loop_tail = f;
            dp->loop_len++;
        }
        qrdma_mig_bytes(m, "loop.data", f->data, len);
        f = f->next;
    }
    qrdma_mig_u64(m, "loop_drops", &dp->loop_drops);
    qrdma_mig_u64(m, "sq_wqes", &dp->sq_wqes);
    qrdma_mig_u64(m, "rq_wqes", &dp->rq_wqes);
    qrdma_mig_u64(m, "cqes", &dp->cqes);
    qrdma_mig_u64(m, "bad_wqes", &dp->bad_wqes);
    qrdma_mig_u64(m, "cq_overflows", &dp->cq_overflows);
    qrdma_mig_section_end(m);
}
