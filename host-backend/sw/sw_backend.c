/*
 * The sw backend: the device core's backend contract (qrdma_backend.h)
 * over the software RoCEv2 engine (qrdma_sw.h). Frames go out and come
 * in on the device's own wire; data moves through the core's MR table at
 * each access (the mr_* callbacks), so there is nothing to register.
 *
 * Why here and not in qemu-hw/core/: this file knows the engine and the
 * contract and nothing of the core (no qrdma_core struct, no guest
 * rings), like the verbs backend will know libibverbs and the contract.
 * The core then names no qsw function or type at all, and the engine
 * stays usable on its own (its unit tests and benchmark use it directly).
 *
 * Translation: the contract's numbering is the engine's (both mirror
 * libibverbs; the checks below hold it), so values pass through; structs
 * are copied field by field, SGEs only as many as a WR has.
 *
 * Threading: the engine's (docs/transport.md): every op runs on the
 * core's thread, and the engine's callbacks, forwarded to the core's,
 * run inside those ops.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qrdma_backend_sw.h"
#include "qrdma_mig_stream.h"
#include "sw_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " is " #b)
SAME(QRDMA_BE_MAX_SGE, QSW_MAX_SGE);
SAME(QRDMA_BE_MAX_INLINE, QSW_MAX_INLINE);
SAME(QRDMA_BE_WC_SUCCESS, QSW_WC_SUCCESS);
SAME(QRDMA_BE_WC_LOC_PROT_ERR, QSW_WC_LOC_PROT_ERR);
SAME(QRDMA_BE_WC_WR_FLUSH_ERR, QSW_WC_WR_FLUSH_ERR);
SAME(QRDMA_BE_WC_GENERAL_ERR, QSW_WC_GENERAL_ERR);
SAME(QRDMA_BE_WC_SEND, QSW_WC_SEND);
SAME(QRDMA_BE_WC_LOCAL_INV, QSW_WC_LOCAL_INV);
SAME(QRDMA_BE_WC_FAST_REG, QSW_WC_REG_MR);
SAME(QRDMA_BE_WC_RECV, QSW_WC_RECV);
SAME(QRDMA_BE_WC_RECV_RDMA_WITH_IMM, QSW_WC_RECV_RDMA_WITH_IMM);
SAME(QRDMA_BE_WC_GRH, QSW_WC_GRH);
SAME(QRDMA_BE_WC_WITH_IMM, QSW_WC_WITH_IMM);
SAME(QRDMA_BE_WC_WITH_INV, QSW_WC_WITH_INV);
SAME(QRDMA_BE_WC_SOLICITED, QSW_WC_SOLICITED);
SAME(QRDMA_BE_WR_RDMA_WRITE, QSW_WR_RDMA_WRITE);
SAME(QRDMA_BE_WR_RDMA_WRITE_WITH_IMM, QSW_WR_RDMA_WRITE_WITH_IMM);
SAME(QRDMA_BE_WR_SEND, QSW_WR_SEND);
SAME(QRDMA_BE_WR_SEND_WITH_IMM, QSW_WR_SEND_WITH_IMM);
SAME(QRDMA_BE_WR_RDMA_READ, QSW_WR_RDMA_READ);
SAME(QRDMA_BE_WR_ATOMIC_CMP_AND_SWP, QSW_WR_ATOMIC_CMP_AND_SWP);
SAME(QRDMA_BE_WR_ATOMIC_FETCH_AND_ADD, QSW_WR_ATOMIC_FETCH_AND_ADD);
SAME(QRDMA_BE_WR_LOCAL_INV, QSW_WR_LOCAL_INV);
SAME(QRDMA_BE_WR_SEND_WITH_INV, QSW_WR_SEND_WITH_INV);
SAME(QRDMA_BE_WR_FAST_REG, QSW_WR_REG_MR);
SAME(QRDMA_BE_WR_BIND_MW, QSW_WR_BIND_MW);
SAME(QRDMA_BE_WC_BIND_MW, QSW_WC_BIND_MW);
SAME(QRDMA_BE_WC_MW_BIND_ERR, QSW_WC_MW_BIND_ERR);
SAME(QRDMA_BE_SEND_FENCE, QSW_SEND_FENCE);
SAME(QRDMA_BE_SEND_SIGNALED, QSW_SEND_SIGNALED);
SAME(QRDMA_BE_SEND_SOLICITED, QSW_SEND_SOLICITED);
SAME(QRDMA_BE_SEND_INLINE, QSW_SEND_INLINE);
SAME(QRDMA_BE_ACCESS_LOCAL_WRITE, QSW_ACCESS_LOCAL_WRITE);
SAME(QRDMA_BE_ACCESS_REMOTE_WRITE, QSW_ACCESS_REMOTE_WRITE);
SAME(QRDMA_BE_ACCESS_REMOTE_READ, QSW_ACCESS_REMOTE_READ);
SAME(QRDMA_BE_ACCESS_REMOTE_ATOMIC, QSW_ACCESS_REMOTE_ATOMIC);
SAME(QRDMA_BE_QPT_RC, QSW_QPT_RC);
SAME(QRDMA_BE_QPT_UC, QSW_QPT_UC);
SAME(QRDMA_BE_QPT_UD, QSW_QPT_UD);
SAME(QRDMA_BE_QPS_RESET, QSW_QPS_RESET);
SAME(QRDMA_BE_QPS_RTS, QSW_QPS_RTS);
SAME(QRDMA_BE_QPS_SQE, QSW_QPS_SQE);
SAME(QRDMA_BE_QPS_ERR, QSW_QPS_ERR);
SAME(QRDMA_BE_MTU_256, QSW_MTU_256);
SAME(QRDMA_BE_MTU_4096, QSW_MTU_4096);
SAME(QRDMA_BE_QP_ATTR_STATE, QSW_QP_STATE);
SAME(QRDMA_BE_QP_ATTR_ACCESS_FLAGS, QSW_QP_ACCESS_FLAGS);
SAME(QRDMA_BE_QP_ATTR_QKEY, QSW_QP_QKEY);
SAME(QRDMA_BE_QP_ATTR_AV, QSW_QP_AV);
SAME(QRDMA_BE_QP_ATTR_PATH_MTU, QSW_QP_PATH_MTU);
SAME(QRDMA_BE_QP_ATTR_TIMEOUT, QSW_QP_TIMEOUT);
SAME(QRDMA_BE_QP_ATTR_RETRY_CNT, QSW_QP_RETRY_CNT);
SAME(QRDMA_BE_QP_ATTR_RNR_RETRY, QSW_QP_RNR_RETRY);
SAME(QRDMA_BE_QP_ATTR_RQ_PSN, QSW_QP_RQ_PSN);
SAME(QRDMA_BE_QP_ATTR_MAX_QP_RD_ATOMIC, QSW_QP_MAX_QP_RD_ATOMIC);
SAME(QRDMA_BE_QP_ATTR_MIN_RNR_TIMER, QSW_QP_MIN_RNR_TIMER);
SAME(QRDMA_BE_QP_ATTR_SQ_PSN, QSW_QP_SQ_PSN);
SAME(QRDMA_BE_QP_ATTR_MAX_DEST_RD_ATOMIC, QSW_QP_MAX_DEST_RD_ATOMIC);
SAME(QRDMA_BE_QP_ATTR_DEST_QPN, QSW_QP_DEST_QPN);
SAME(QRDMA_BE_EV_QP_FATAL, QSW_EV_QP_FATAL);
SAME(QRDMA_BE_EV_QP_REQ_ERR, QSW_EV_QP_REQ_ERR);
SAME(QRDMA_BE_EV_QP_ACCESS_ERR, QSW_EV_QP_ACCESS_ERR);
SAME(QRDMA_BE_EV_COMM_EST, QSW_EV_COMM_EST);
SAME(QRDMA_BE_EV_SQ_DRAINED, QSW_EV_SQ_DRAINED);
SAME(QRDMA_BE_EV_QP_LAST_WQE_REACHED, QSW_EV_QP_LAST_WQE_REACHED);
SAME(QRDMA_BE_ATOMIC_CMP_SWP, QSW_ATOMIC_CMP_SWP);
SAME(QRDMA_BE_ATOMIC_FETCH_ADD, QSW_ATOMIC_FETCH_ADD);
#undef SAME

/* The backend of one device. */
struct sw_be {
    struct qrdma_be_callbacks cb;
    void *opaque;
    struct qrdma_be_params params;
    struct qsw_engine *eng;
    /* every QP, so that reset and destroy free them */
    struct sw_be_qp *qps;
};

/*
 * A QP: the engine's, and what it takes to make it again at RESET (the
 * core's QP ID names it in callbacks; its PD goes with every memory access).
 */
struct sw_be_qp {
    struct sw_be_qp *next, **prev;
    /* NULL only after a failed RESET, until qp_destroy */
    struct qsw_qp *tp;
    uint32_t qp_id, type, pd;
    struct qsw_qp_cap cap;
};

static struct sw_be *sw_of(struct qrdma_be *be)
{
    return (struct sw_be *)be;
}

static struct sw_be_qp *qp_of(struct qrdma_be_qp *qp)
{
    return (struct sw_be_qp *)qp;
}

static struct sw_be_qp *qp_of_tp(struct qsw_qp *tp)
{
    return qsw_qp_user(tp);
}

/* ---- the engine's callbacks, onto the core's ----------------------------- */

/*
 * Gather (dst) or scatter (src) len bytes at byte offset off of an SGE
 * list, piece by piece through the core's MR table; 0 or minus the
 * completion status.
 */
static int sge_copy(struct sw_be *sw, struct qsw_qp *tp,
                    const struct qsw_sge *sge, unsigned nsge, uint64_t off,
                    uint8_t *dst, const uint8_t *src, uint32_t len)
{
    struct sw_be_qp *qp = qp_of_tp(tp);
    uint32_t done = 0;
    unsigned i;

    for (i = 0; i < nsge && done < len; i++) {
        uint64_t n;
        int err;

        if (off >= sge[i].length) {
            off -= sge[i].length;
            continue;
        }
        n = sge[i].length - off;
        if (n > len - done) {
            n = len - done;
        }
        err = dst ? sw->cb.mr_read(sw->opaque, qp->pd, qp->qp_id, sge[i].lkey,
                                   sge[i].addr + off, dst + done, (uint32_t)n,
                                   0)
                  : sw->cb.mr_write(sw->opaque, qp->pd, qp->qp_id, sge[i].lkey,
                                    sge[i].addr + off, src + done, (uint32_t)n,
                                    QRDMA_BE_ACCESS_LOCAL_WRITE);
        if (err) {
            return -QSW_WC_LOC_PROT_ERR;
        }
        done += n;
        off = 0;
    }
    return done == len ? 0 : -QSW_WC_LOC_LEN_ERR;
}

static int cb_sge_read(void *opaque, struct qsw_qp *tp,
                       const struct qsw_sge *sge, unsigned nsge, uint64_t off,
                       void *dst, uint32_t len)
{
    return sge_copy(opaque, tp, sge, nsge, off, dst, NULL, len);
}

/*
 * The payload of one packet mapped where it lies, SGE piece by piece
 * (zero-copy transmit, qsw_ops.sge_map): the number of pieces; 0 to copy
 * with sge_read instead (which reports any fault the map met); or minus
 * the completion status of an access the MR refuses.
 */
static int cb_sge_map(void *opaque, struct qsw_qp *tp,
                      const struct qsw_sge *sge, unsigned nsge, uint64_t off,
                      uint32_t len, struct iovec *iov, unsigned max)
{
    struct sw_be *sw = opaque;
    struct sw_be_qp *qp = qp_of_tp(tp);
    uint32_t done = 0;
    unsigned i, cnt = 0;

    for (i = 0; i < nsge && done < len; i++) {
        uint64_t n;
        int r = 0;

        if (off >= sge[i].length) {
            off -= sge[i].length;
            continue;
        }
        n = sge[i].length - off;
        if (n > len - done) {
            n = len - done;
        }
        if (cnt < max) {
            r = sw->cb.mr_map_read(sw->opaque, qp->pd, qp->qp_id, sge[i].lkey,
                                   sge[i].addr + off, (uint32_t)n, 0, iov + cnt,
                                   max - cnt);
        }
        if (r <= 0) {
            sw->cb.mr_unmap_read(sw->opaque, iov, cnt);
            return r < 0 ? -QSW_WC_LOC_PROT_ERR : 0;
        }
        cnt += (unsigned)r;
        done += n;
        off = 0;
    }
    if (done != len) {
        sw->cb.mr_unmap_read(sw->opaque, iov, cnt);
        /* the copy names the short SGE list */
        return 0;
    }
    return (int)cnt;
}

static void cb_sge_unmap(void *opaque, struct qsw_qp *tp,
                         const struct iovec *iov, unsigned n)
{
    struct sw_be *sw = opaque;

    sw->cb.mr_unmap_read(sw->opaque, iov, n);
}

static int cb_sge_write(void *opaque, struct qsw_qp *tp,
                        const struct qsw_sge *sge, unsigned nsge, uint64_t off,
                        const void *src, uint32_t len)
{
    return sge_copy(opaque, tp, sge, nsge, off, NULL, src, len);
}

/*
 * The responder's accesses through an rkey: the QP goes along (type 2 windows).
 */
static int cb_rkey_check(void *opaque, struct qsw_qp *tp, uint32_t pd,
                         uint32_t rkey, uint64_t va, uint64_t len,
                         uint32_t access)
{
    struct sw_be *sw = opaque;

    return sw->cb.mr_check(sw->opaque, pd, qp_of_tp(tp)->qp_id, rkey, va, len,
                           access)
               ? -QSW_EACCES
               : 0;
}

static int cb_rkey_read(void *opaque, struct qsw_qp *tp, uint32_t pd,
                        uint32_t rkey, uint64_t va, void *dst, uint32_t len)
{
    struct sw_be *sw = opaque;

    return sw->cb.mr_read(sw->opaque, pd, qp_of_tp(tp)->qp_id, rkey, va, dst,
                          len, QRDMA_BE_ACCESS_REMOTE_READ)
               ? -QSW_EACCES
               : 0;
}

static int cb_rkey_write(void *opaque, struct qsw_qp *tp, uint32_t pd,
                         uint32_t rkey, uint64_t va, const void *src,
                         uint32_t len)
{
    struct sw_be *sw = opaque;

    return sw->cb.mr_write(sw->opaque, pd, qp_of_tp(tp)->qp_id, rkey, va, src,
                           len, QRDMA_BE_ACCESS_REMOTE_WRITE)
               ? -QSW_EACCES
               : 0;
}

static int cb_rkey_atomic(void *opaque, struct qsw_qp *tp, uint32_t pd,
                          uint32_t rkey, uint64_t va, enum qsw_atomic_op op,
                          uint64_t compare_add, uint64_t swap, uint64_t *orig)
{
    struct sw_be *sw = opaque;

    return sw->cb.mr_atomic(sw->opaque, pd, qp_of_tp(tp)->qp_id, rkey, va,
                            (enum qrdma_be_atomic_op)op, compare_add, swap,
                            orig)
               ? -QSW_EACCES
               : 0;
}

static int cb_invalidate(void *opaque, struct qsw_qp *tp, uint32_t pd,
                         uint32_t key)
{
    struct sw_be *sw = opaque;

    return sw->cb.invalidate(sw->opaque, pd, qp_of_tp(tp)->qp_id, key)
               ? -QSW_EINVAL
               : 0;
}

static int cb_bind_mw(void *opaque, struct qsw_qp *tp, uint32_t pd,
                      const struct qsw_bind_mw *b)
{
    struct sw_be *sw = opaque;
    const struct qrdma_be_bind_mw bind = {
        .mw_stag = b->mw_key,
        .new_stag = b->new_key,
        .mr_stag = b->mr_key,
        .access = b->access,
        .addr = b->addr,
        .length = b->length,
    };

    return sw->cb.bind_mw(sw->opaque, pd, qp_of_tp(tp)->qp_id, &bind)
               ? -QSW_EINVAL
               : 0;
}

static int cb_reg_mr(void *opaque, uint32_t pd, const struct qsw_reg_mr *reg)
{
    struct sw_be *sw = opaque;
    const struct qrdma_be_fast_reg fr = {
        .stag = reg->key,
        .access = reg->access,
        .iova = reg->iova,
        .length = reg->length,
        .first = reg->page_list,
        .fbo = reg->fbo,
        .page_log2 = reg->page_shift,
        .levels = reg->levels,
    };

    return sw->cb.fast_reg(sw->opaque, pd, &fr) ? -QSW_EINVAL : 0;
}

static int cb_get_recv(void *opaque, struct qsw_qp *tp, struct qsw_recv_wr *out)
{
    struct sw_be *sw = opaque;
    struct qrdma_be_recv_wr wr;
    unsigned i;
    int ret;

    ret = sw->cb.get_recv(sw->opaque, qp_of_tp(tp)->qp_id, &wr);
    if (ret == -EIO) {
        return -QSW_EIO;
    }
    if (ret || wr.num_sge > QSW_MAX_SGE) {
        return -QSW_ENOENT;
    }
    out->wr_id = wr.wr_id;
    out->num_sge = wr.num_sge;
    for (i = 0; i < wr.num_sge; i++) {
        out->sg_list[i].addr = wr.sg_list[i].addr;
        out->sg_list[i].length = wr.sg_list[i].length;
        out->sg_list[i].lkey = wr.sg_list[i].lkey;
    }
    return 0;
}

static void cb_complete(void *opaque, struct qsw_qp *tp,
                        const struct qsw_wc *wc)
{
    struct sw_be *sw = opaque;
    const struct qrdma_be_wc be_wc = {
        .wr_id = wc->wr_id,
        .status = wc->status,
        .opcode = wc->opcode,
        .byte_len = wc->byte_len,
        .imm_data = wc->imm_data,
        .invalidated_stag = wc->invalidated_rkey,
        .src_qp = wc->src_qp,
        .wc_flags = wc->wc_flags,
        .vendor_err = wc->vendor_err,
    };

    sw->cb.complete(sw->opaque, qp_of_tp(tp)->qp_id, &be_wc);
}

static void cb_qp_event(void *opaque, struct qsw_qp *tp, enum qsw_event ev)
{
    struct sw_be *sw = opaque;

    sw->cb.event(sw->opaque, (enum qrdma_be_event)ev, qp_of_tp(tp)->qp_id);
}

static void cb_trace(void *opaque, struct qsw_qp *tp, enum qsw_trace ev,
                     uint32_t psn, uint32_t detail)
{
    struct sw_be *sw = opaque;

    sw->cb.tp_event(sw->opaque, qp_of_tp(tp)->qp_id, (enum qrdma_be_tp_event)ev,
                    psn, detail);
}

/* The core's answer to a frame, in the engine's terms. */
static int tx_status(int be_status)
{
    return be_status == QRDMA_BE_TX_BUSY ? QSW_TX_BUSY : QSW_TX_SENT;
}

static int cb_send_frame(void *opaque, const void *frame, size_t len)
{
    struct sw_be *sw = opaque;

    return tx_status(sw->cb.frame_out(sw->opaque, frame, len));
}

static int cb_send_frame_iov(void *opaque, const struct iovec *iov, unsigned n)
{
    struct sw_be *sw = opaque;

    return tx_status(sw->cb.frame_out_iov(sw->opaque, iov, n));
}

static uint64_t cb_now_ns(void *opaque)
{
    struct sw_be *sw = opaque;

    return sw->cb.now_ns(sw->opaque);
}

static void cb_sq_space(void *opaque, struct qsw_qp *tp)
{
    struct sw_be *sw = opaque;

    sw->cb.sq_space(sw->opaque, qp_of_tp(tp)->qp_id);
}

static const struct qsw_ops sw_engine_ops = {
    .sge_read = cb_sge_read,
    .sge_write = cb_sge_write,
    .rkey_check = cb_rkey_check,
    .rkey_read = cb_rkey_read,
    .rkey_write = cb_rkey_write,
    .rkey_atomic = cb_rkey_atomic,
    .get_recv = cb_get_recv,
    .complete = cb_complete,
    .qp_event = cb_qp_event,
    .send_frame = cb_send_frame,
    .sge_map = cb_sge_map,
    .sge_unmap = cb_sge_unmap,
    .send_frame_iov = cb_send_frame_iov,
    .now_ns = cb_now_ns,
    .invalidate = cb_invalidate,
    .reg_mr = cb_reg_mr,
    .bind_mw = cb_bind_mw,
    .sq_space = cb_sq_space,
    .trace = cb_trace,
};

/* ---- lifecycle ----------------------------------------------------------- */

/*
 * An engine as the params say: the power-on MAC, faults (all zero: off), the
 * stall floor.
 */
static struct qsw_engine *engine_new(struct sw_be *sw)
{
    const struct qrdma_be_params *p = &sw->params;
    const struct qsw_fault fault = {
        .loss_ppm = p->fault.loss_ppm,
        .dup_ppm = p->fault.dup_ppm,
        .reorder_ppm = p->fault.reorder_ppm,
        .corrupt_ppm = p->fault.corrupt_ppm,
        .delay_ns = p->fault.delay_ns,
        .seed = p->fault.seed,
    };
    struct qsw_ops ops = sw_engine_ops;
    struct qsw_engine *eng;

    /*
     * An embedding that cannot map guest memory: every payload is copied,
     * without asking.
     */
    if (!sw->cb.mr_map_read) {
        ops.sge_map = NULL;
        ops.sge_unmap = NULL;
        ops.send_frame_iov = NULL;
    }
    eng = qsw_engine_new(&ops, sw, p->mac);

    if (eng) {
        qsw_engine_set_fault(eng, &fault);
        qsw_engine_set_stall_floor(eng, p->stall_floor_ns);
    }
    return eng;
}

static void qps_free(struct sw_be *sw)
{
    while (sw->qps) {
        struct sw_be_qp *qp = sw->qps;

        sw->qps = qp->next;
        free(qp);
    }
}

static struct qrdma_be *sw_create(const struct qrdma_be_callbacks *cb,
                                  void *opaque,
                                  const struct qrdma_be_params *params,
                                  char *err, size_t err_len)
{
    struct sw_be *sw = calloc(1, sizeof(*sw));

    if (!sw) {
        goto fail;
    }
    sw->cb = *cb;
    sw->opaque = opaque;
    sw->params = *params;
    sw->eng = engine_new(sw);
    if (!sw->eng) {
        goto fail_sw;
    }
    return (struct qrdma_be *)sw;

fail_sw:
    free(sw);
fail:
    snprintf(err, err_len, "out of memory for the RoCEv2 transport");
    return NULL;
}

/*
 * The engine frees its QPs without completions; a new one starts from the
 * params.
 */
static int sw_reset(struct qrdma_be *be)
{
    struct sw_be *sw = sw_of(be);

    qsw_engine_free(sw->eng);
    qps_free(sw);
    sw->eng = engine_new(sw);
    return sw->eng ? 0 : -ENOMEM;
}

static void sw_destroy(struct qrdma_be *be)
{
    struct sw_be *sw = sw_of(be);

    if (sw->eng) {
        qsw_engine_free(sw->eng);
    }
    qps_free(sw);
    free(sw);
}

/* ---- QPs ----------------------------------------------------------------- */

static int sw_qp_create(struct qrdma_be *be,
                        const struct qrdma_be_qp_init *init,
                        struct qrdma_be_qp **out, uint32_t *qpn)
{
    struct sw_be *sw = sw_of(be);
    struct sw_be_qp *qp = calloc(1, sizeof(*qp));

    if (!qp) {
        return -ENOMEM;
    }
    qp->qp_id = init->qp_id;
    qp->type = init->type;
    qp->pd = init->pd;
    qp->cap.max_send_wr = init->max_send_wr;
    qp->cap.max_inline = init->max_inline;
    /*
     * The engine's QPN is the core's QP ID: peers address the guest's QP by it.
     */
    qp->tp = qsw_qp_create(sw->eng, init->qp_id, (enum qsw_qp_type)qp->type,
                           qp->pd, &qp->cap, qp);
    if (!qp->tp) {
        free(qp);
        return -ENOMEM;
    }
    qp->next = sw->qps;
    qp->prev = &sw->qps;
    if (sw->qps) {
        sw->qps->prev = &qp->next;
    }
    sw->qps = qp;
    *out = (struct qrdma_be_qp *)qp;
    *qpn = qsw_qp_num(qp->tp);
    return 0;
}

static void av_to_qsw(const struct qrdma_be_av *av, struct qsw_av *out)
{
    memcpy(out->dmac, av->dmac, 6);
    memcpy(out->smac, av->smac, 6);
    memcpy(out->dgid, av->dgid, 16);
    memcpy(out->sgid, av->sgid, 16);
    out->traffic_class = av->traffic_class;
    out->hop_limit = av->hop_limit;
    out->flow_label = av->flow_label;
}

static int sw_qp_modify(struct qrdma_be *be, struct qrdma_be_qp *handle,
                        const struct qrdma_be_qp_attr *attr, uint32_t mask)
{
    struct sw_be *sw = sw_of(be);
    struct sw_be_qp *qp = qp_of(handle);
    struct qsw_qp_attr a;

    if ((mask & QRDMA_BE_QP_ATTR_STATE) &&
        attr->qp_state == QRDMA_BE_QPS_RESET) {
        /*
         * A new engine QP: nothing of the old one's queue, PSNs, timers or
         * responder resources survives, and the QPN (the QP ID) stays.
         */
        if (qp->tp) {
            qsw_qp_destroy(qp->tp);
        }
        qp->tp = qsw_qp_create(sw->eng, qp->qp_id, (enum qsw_qp_type)qp->type,
                               qp->pd, &qp->cap, qp);
        return qp->tp ? 0 : -ENOMEM;
    }
    if (!qp->tp) {
        return -EINVAL;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = attr->qp_state;
    a.path_mtu = attr->path_mtu;
    a.qkey = attr->qkey;
    a.rq_psn = attr->rq_psn;
    a.sq_psn = attr->sq_psn;
    a.dest_qp_num = attr->dest_qp_num;
    a.qp_access_flags = attr->qp_access_flags;
    if (mask & QRDMA_BE_QP_ATTR_AV) {
        av_to_qsw(&attr->av, &a.av);
    }
    a.max_rd_atomic = attr->max_rd_atomic;
    a.max_dest_rd_atomic = attr->max_dest_rd_atomic;
    a.min_rnr_timer = attr->min_rnr_timer;
    a.timeout = attr->timeout;
    a.retry_cnt = attr->retry_cnt;
    a.rnr_retry = attr->rnr_retry;
    return qsw_qp_modify(qp->tp, &a, mask & QRDMA_BE_QP_ATTR_ALL) ? -EINVAL : 0;
}

static void sw_qp_fail(struct qrdma_be *be, struct qrdma_be_qp *handle)
{
    struct sw_be_qp *qp = qp_of(handle);

    if (qp->tp) {
        qsw_qp_fail(qp->tp);
    }
}

static enum qrdma_be_qp_state sw_qp_state(struct qrdma_be *be,
                                          struct qrdma_be_qp *handle)
{
    struct sw_be_qp *qp = qp_of(handle);

    return qp->tp ? (enum qrdma_be_qp_state)qsw_qp_state(qp->tp)
                  : QRDMA_BE_QPS_ERR;
}

static void sw_qp_destroy(struct qrdma_be *be, struct qrdma_be_qp *handle)
{
    struct sw_be_qp *qp = qp_of(handle);

    if (qp->tp) {
        qsw_qp_destroy(qp->tp);
    }
    *qp->prev = qp->next;
    if (qp->next) {
        qp->next->prev = qp->prev;
    }
    free(qp);
}

/* ---- work ---------------------------------------------------------------- */

static int sw_post_send(struct qrdma_be *be, struct qrdma_be_qp *handle,
                        const struct qrdma_be_send_wr *wr)
{
    struct sw_be_qp *qp = qp_of(handle);
    struct qsw_send_wr w;
    unsigned i;
    int ret;

    if (!qp->tp || wr->num_sge > QSW_MAX_SGE) {
        return -EINVAL;
    }
    /*
     * Every field but the SGEs past num_sge and, off UD, the UD part: the
     * engine reads neither.
     */
    w.wr_id = wr->wr_id;
    w.opcode = wr->opcode;
    w.send_flags = wr->send_flags;
    w.num_sge = wr->num_sge;
    for (i = 0; i < wr->num_sge; i++) {
        w.sg_list[i].addr = wr->sg_list[i].addr;
        w.sg_list[i].length = wr->sg_list[i].length;
        w.sg_list[i].lkey = wr->sg_list[i].lkey;
    }
    w.inline_data = wr->inline_data;
    w.inline_len = wr->inline_len;
    w.imm_data = wr->imm_data;
    w.invalidate_rkey = wr->invalidate_stag;
    w.rdma.remote_addr = wr->rdma.remote_addr;
    w.rdma.rkey = wr->rdma.rkey;
    w.atomic.remote_addr = wr->atomic.remote_addr;
    w.atomic.rkey = wr->atomic.rkey;
    w.atomic.compare_add = wr->atomic.compare_add;
    w.atomic.swap = wr->atomic.swap;
    w.reg.key = wr->fast_reg.stag;
    w.reg.access = wr->fast_reg.access;
    w.reg.iova = wr->fast_reg.iova;
    w.reg.length = wr->fast_reg.length;
    w.reg.page_list = wr->fast_reg.first;
    w.reg.page_shift = wr->fast_reg.page_log2;
    w.reg.levels = wr->fast_reg.levels;
    w.reg.fbo = wr->fast_reg.fbo;
    w.bind_mw.mw_key = wr->bind_mw.mw_stag;
    w.bind_mw.new_key = wr->bind_mw.new_stag;
    w.bind_mw.mr_key = wr->bind_mw.mr_stag;
    w.bind_mw.access = wr->bind_mw.access;
    w.bind_mw.addr = wr->bind_mw.addr;
    w.bind_mw.length = wr->bind_mw.length;
    if (qp->type == QRDMA_BE_QPT_UD) {
        av_to_qsw(&wr->ud.av, &w.ud.av);
        w.ud.remote_qpn = wr->ud.remote_qpn;
        w.ud.remote_qkey = wr->ud.remote_qkey;
    }
    ret = qsw_post_send(qp->tp, &w);
    if (ret == -QSW_ENOMEM) {
        return -ENOSPC;     /* cb_sq_space tells the core when to go on */
    }
    return ret ? -EINVAL : 0;
}

static void sw_set_mac(struct qrdma_be *be, const uint8_t mac[6])
{
    qsw_engine_set_mac(sw_of(be)->eng, mac);
}

static void sw_rx_frame(struct qrdma_be *be, const void *frame, size_t len)
{
    qsw_rx_frame(sw_of(be)->eng, frame, len);
}

static void sw_rx_mcast(struct qrdma_be *be, const void *frame, size_t len,
                        struct qrdma_be_qp *const *qps, unsigned n)
{
    struct qsw_qp *tp[QRDMA_BE_MCAST_MAX_QPS];
    unsigned i, ntp = 0;

    for (i = 0; i < n && i < QRDMA_BE_MCAST_MAX_QPS; i++) {
        if (qps[i] && qp_of(qps[i])->tp) {
            tp[ntp++] = qp_of(qps[i])->tp;
        }
    }
    qsw_rx_mcast(sw_of(be)->eng, frame, len, tp, ntp);
}

static void sw_tx_ready(struct qrdma_be *be)
{
    qsw_engine_tx_ready(sw_of(be)->eng);
}

static uint64_t sw_poll(struct qrdma_be *be, unsigned budget)
{
    return qsw_engine_poll(sw_of(be)->eng, budget);
}

_Static_assert((int)QRDMA_BE_TP_RETRANSMIT == (int)QSW_TRACE_RETRANSMIT &&
                   (int)QRDMA_BE_TP_NAK_SENT == (int)QSW_TRACE_NAK_SENT &&
                   (int)QRDMA_BE_TP_NAK_RCVD == (int)QSW_TRACE_NAK_RCVD &&
                   (int)QRDMA_BE_RETRANSMIT_TIMEOUT ==
                       (int)QSW_RETRANSMIT_TIMEOUT &&
                   (int)QRDMA_BE_RETRANSMIT_NAK == (int)QSW_RETRANSMIT_NAK &&
                   (int)QRDMA_BE_RETRANSMIT_RNR == (int)QSW_RETRANSMIT_RNR,
               "the contract's transport events are the engine's");

/*
 * The engine's counters under the device's names (docs/hw-spec.md section 20).
 */
/* ---- saved state (sw_mig.c, docs/migration.md) --------------------------- */

/*
 * The engine's section, then one section per QP (its core QP ID first).
 * Loading finds each QP among those the core made again, by that ID, and
 * wants every one of them in the stream exactly once.
 */
static int sw_mig(struct qrdma_be *be, struct qrdma_mig *m)
{
    struct sw_be *sw = sw_of(be);
    struct sw_be_qp *qp;
    uint32_t n = 0, i;

    for (qp = sw->qps; qp; qp = qp->next) {
        n++;
    }
    qrdma_mig_section(m, QRDMA_MIG_SEC_SW_ENGINE, "sw.engine",
                      QRDMA_MIG_V_SW_ENGINE);
    qsw_engine_mig(sw->eng, m);
    qrdma_mig_u32_same(m, "engine.qps", n);
    qrdma_mig_section_end(m);
    qp = sw->qps;
    for (i = 0; i < n && !m->error; i++) {
        uint32_t qp_id = m->loading ? 0 : qp->qp_id;

        qrdma_mig_section(m, QRDMA_MIG_SEC_SW_QP, "sw.qp", QRDMA_MIG_V_SW_QP);
        qrdma_mig_u32(m, "qp_id", &qp_id);
        if (m->error) {
            break;
        }
        if (m->loading) {
            qp = sw->qps;
            while (qp && qp->qp_id != qp_id) {
                qp = qp->next;
            }
            if (!qp || !qp->tp) {
                qrdma_mig_fail(m, -EINVAL, "qp_id", "QP %u does not exist here",
                               qp_id);
                break;
            }
        } else if (!qp->tp) {
            qrdma_mig_fail(m, -EIO, "qp_id",
                           "QP %u lost its transport at a reset", qp_id);
            break;
        }
        qsw_qp_mig(qp->tp, m);
        qrdma_mig_section_end(m);
        qp = qp->next;
    }
    return m->error;
}

static void sw_stats(struct qrdma_be *be, struct qrdma_be_stats *out)
{
    struct qsw_engine *eng = sw_of(be)->eng;
    struct qsw_stats st;

    memset(out, 0, sizeof(*out));
    if (!eng) {
        return;
    }
    qsw_engine_stats(eng, &st);
    out->tx_pkts = st.tx_frames;
    out->tx_bytes = st.tx_bytes;
    out->rx_pkts = st.rx_frames;
    out->rx_bytes = st.rx_bytes;
    out->retrans_pkts = st.retransmits;
    out->local_ack_timeouts = st.timeouts;
    out->seq_naks_rcvd = st.rx_naks_seq;
    out->rnr_naks_rcvd = st.rx_rnr_naks;
    out->rnr_naks_sent = st.tx_rnr_naks;
    out->duplicate_requests = st.duplicates;
    out->out_of_sequence = st.drop_out_of_seq;
    out->icrc_errors = st.drop_icrc;
    out->rx_read_requests = st.rx_read_requests;
    out->rx_write_requests = st.rx_write_requests;
    out->rx_atomic_requests = st.rx_atomic_requests;
    out->out_of_buffer = st.drop_no_recv;
    out->rx_drops = st.drop_not_roce + st.drop_malformed + st.drop_unknown_qp +
                    st.drop_bad_state + st.drop_addr + st.drop_qkey +
                    st.drop_uc + st.drop_mcast;
}

const struct qrdma_be_ops qrdma_be_sw_ops = {
    .name = "sw",
    .carries = QRDMA_BE_CARRIES_SRQ | QRDMA_BE_CARRIES_FAST_REG |
               QRDMA_BE_CARRIES_MW | QRDMA_BE_CARRIES_STATS |
               QRDMA_BE_CARRIES_GSI,
    .create = sw_create,
    .reset = sw_reset,
    .destroy = sw_destroy,
    .qp_create = sw_qp_create,
    .qp_modify = sw_qp_modify,
    .qp_fail = sw_qp_fail,
    .qp_state = sw_qp_state,
    .qp_destroy = sw_qp_destroy,
    .post_send = sw_post_send,
    /* Receive WQEs are pulled (get_recv) when a message needs one. */
    .recv_doorbell = NULL,
    /*
     * Memory goes through the core's MR table at each access: nothing to
     * mirror.
     */
    .mr_register = NULL,
    .mr_alloc_stag = NULL,
    .mr_deregister = NULL,
    .save = sw_mig,
    .load = sw_mig,
    .set_mac = sw_set_mac,
    .rx_frame = sw_rx_frame,
    .rx_mcast = sw_rx_mcast,
    .tx_ready = sw_tx_ready,
    .poll = sw_poll,
    .stats = sw_stats,
};

/* ---- for tests and benchmarks -------------------------------------------- */

struct qsw_engine *qrdma_be_sw_engine(struct qrdma_be *be)
{
    return be ? sw_of(be)->eng : NULL;
}

struct qsw_qp *qrdma_be_sw_qp(struct qrdma_be_qp *qp)
{
    return qp ? qp_of(qp)->tp : NULL;
}
