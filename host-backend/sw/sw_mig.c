/*
 * Saved state of the software RoCEv2 engine (docs/migration.md): what the
 * requester, the completer and the responder of each QP know, and the
 * engine-wide counters. Frames the fault hook holds back are frames on
 * the wire and are not saved: after a load the peers recover them as any
 * loss, by retransmission from the oldest unacknowledged PSN. Timers
 * travel as the time left on them (qrdma_mig_deadline()).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sw_int.h"
#include "qrdma_mig_stream.h"

void qsw_engine_mig(struct qsw_engine *eng, struct qrdma_mig *m)
{
    uint64_t *st = (uint64_t *)&eng->st;
    /*
     * The counters up to the backpressure ones (a later addition, outside
     * the stream so that it stays the same: they start from 0 after a load).
     */
    unsigned i, n = offsetof(struct qsw_stats, tx_busy) / sizeof(uint64_t);

    _Static_assert(sizeof(struct qsw_stats) % sizeof(uint64_t) == 0,
                   "qsw_stats is all 64-bit counters");
    qrdma_mig_bytes(m, "engine.mac", eng->mac, 6);
    qrdma_mig_u16(m, "engine.ip_id", &eng->ip_id);
    /* The fault hook's generator: the same faults follow after the load. */
    qrdma_mig_u64(m, "engine.rng", &eng->rng);
    qrdma_mig_u32_same(m, "engine.stats.count", n);
    for (i = 0; i < n; i++) {
        qrdma_mig_u64(m, "engine.stats", &st[i]);
    }
}

static void mig_sge(struct qrdma_mig *m, struct qsw_sge *s)
{
    qrdma_mig_u64(m, "sge.addr", &s->addr);
    qrdma_mig_u32(m, "sge.length", &s->length);
    qrdma_mig_u32(m, "sge.lkey", &s->lkey);
}

static void mig_av(struct qrdma_mig *m, struct qsw_av *av)
{
    qrdma_mig_bytes(m, "av.dmac", av->dmac, 6);
    qrdma_mig_bytes(m, "av.smac", av->smac, 6);
    qrdma_mig_bytes(m, "av.dgid", av->dgid, 16);
    qrdma_mig_bytes(m, "av.sgid", av->sgid, 16);
    qrdma_mig_u8(m, "av.traffic_class", &av->traffic_class);
    qrdma_mig_u8(m, "av.hop_limit", &av->hop_limit);
    qrdma_mig_u32(m, "av.flow_label", &av->flow_label);
}

/* A send WQE still on the queue (posted, in flight or awaiting its ACK). */
static void mig_wqe(struct qsw_qp *qp, struct qrdma_mig *m, struct qsw_wqe *w)
{
    struct qsw_send_wr *wr = &w->wr;
    unsigned i;

    qrdma_mig_u64(m, "wqe.wr_id", &wr->wr_id);
    qrdma_mig_u32(m, "wqe.opcode", &wr->opcode);
    qrdma_mig_u32(m, "wqe.send_flags", &wr->send_flags);
    qrdma_mig_u32_max(m, "wqe.num_sge", &wr->num_sge, QSW_MAX_SGE);
    for (i = 0; i < wr->num_sge && !m->error; i++) {
        mig_sge(m, &wr->sg_list[i]);
    }
    qrdma_mig_u32_max(m, "wqe.inline_len", &wr->inline_len, qp->max_inline);
    if (wr->send_flags & QSW_SEND_INLINE) {
        qrdma_mig_bytes(m, "wqe.inline", w->inl, wr->inline_len);
    }
    /* the payload is in w->inl, as post_send left it */
    wr->inline_data = NULL;
    qrdma_mig_u32(m, "wqe.imm_data", &wr->imm_data);
    qrdma_mig_u32(m, "wqe.invalidate_rkey", &wr->invalidate_rkey);
    qrdma_mig_u64(m, "wqe.rdma.remote_addr", &wr->rdma.remote_addr);
    qrdma_mig_u32(m, "wqe.rdma.rkey", &wr->rdma.rkey);
    qrdma_mig_u64(m, "wqe.atomic.remote_addr", &wr->atomic.remote_addr);
    qrdma_mig_u32(m, "wqe.atomic.rkey", &wr->atomic.rkey);
    qrdma_mig_u64(m, "wqe.atomic.compare_add", &wr->atomic.compare_add);
    qrdma_mig_u64(m, "wqe.atomic.swap", &wr->atomic.swap);
    qrdma_mig_u32(m, "wqe.reg.key", &wr->reg.key);
    qrdma_mig_u32(m, "wqe.reg.access", &wr->reg.access);
    qrdma_mig_u64(m, "wqe.reg.iova", &wr->reg.iova);
    qrdma_mig_u64(m, "wqe.reg.length", &wr->reg.length);
    qrdma_mig_u64(m, "wqe.reg.page_list", &wr->reg.page_list);
    qrdma_mig_u32(m, "wqe.reg.page_shift", &wr->reg.page_shift);
    qrdma_mig_u32(m, "wqe.reg.levels", &wr->reg.levels);
    qrdma_mig_u64(m, "wqe.reg.fbo", &wr->reg.fbo);
    qrdma_mig_u32(m, "wqe.bind_mw.mw_key", &wr->bind_mw.mw_key);
    qrdma_mig_u32(m, "wqe.bind_mw.new_key", &wr->bind_mw.new_key);
    qrdma_mig_u32(m, "wqe.bind_mw.mr_key", &wr->bind_mw.mr_key);
    qrdma_mig_u32(m, "wqe.bind_mw.access", &wr->bind_mw.access);
    qrdma_mig_u64(m, "wqe.bind_mw.addr", &wr->bind_mw.addr);
    qrdma_mig_u64(m, "wqe.bind_mw.length", &wr->bind_mw.length);
    mig_av(m, &wr->ud.av);
    qrdma_mig_u32(m, "wqe.ud.remote_qpn", &wr->ud.remote_qpn);
    qrdma_mig_u32(m, "wqe.ud.remote_qkey", &wr->ud.remote_qkey);
    qrdma_mig_u32(m, "wqe.len", &w->len);
    qrdma_mig_u32(m, "wqe.first_psn", &w->first_psn);
    qrdma_mig_u32(m, "wqe.last_psn", &w->last_psn);
    qrdma_mig_u32(m, "wqe.npkts", &w->npkts);
    qrdma_mig_u32(m, "wqe.mtu", &w->mtu);
    qrdma_mig_u32(m, "wqe.mask", &w->mask);
    qrdma_mig_u8_max(m, "wqe.state", &w->state, WQE_DONE);
    qrdma_mig_u8(m, "wqe.status", &w->status);
}

static void mig_res(struct qrdma_mig *m, struct qsw_res *r)
{
    qrdma_mig_u8_max(m, "res.type", &r->type, RES_ATOMIC);
    qrdma_mig_bool(m, "res.active", &r->active);
    qrdma_mig_u32(m, "res.first_psn", &r->first_psn);
    qrdma_mig_u32(m, "res.last_psn", &r->last_psn);
    qrdma_mig_u32(m, "res.start_psn", &r->start_psn);
    qrdma_mig_u32(m, "res.cur_psn", &r->cur_psn);
    qrdma_mig_u64(m, "res.va", &r->va);
    qrdma_mig_u32(m, "res.rkey", &r->rkey);
    qrdma_mig_u32(m, "res.len", &r->len);
    qrdma_mig_u32(m, "res.mtu", &r->mtu);
    qrdma_mig_u64(m, "res.orig", &r->orig);
}

static const uint32_t mtu_bytes[] = { 0, 256, 512, 1024, 2048, 4096 };

/*
 * One QP, both ways. Loading fills a QP that qsw_qp_create() just made with
 * the same QPN, type, PD and capacities (the embedder makes it again), then
 * puts it back on the engine's active and timer lists.
 */
void qsw_qp_mig(struct qsw_qp *qp, struct qrdma_mig *m)
{
    struct qsw_qp_attr *a = &qp->attr;
    bool on_active = qp->on_active;
    uint64_t real_now;
    uint32_t i, nres = qp->resp.nres, res_next = qp->resp.res_next;

    qrdma_mig_u32_same(m, "qp.qpn", qp->qpn);
    qrdma_mig_u32_same(m, "qp.type", qp->type);
    qrdma_mig_u32_same(m, "qp.pd", qp->pd);
    qrdma_mig_u32_same(m, "qp.sq_mask", qp->sq_mask);
    qrdma_mig_u32_same(m, "qp.max_inline", qp->max_inline);
    qrdma_mig_u8_max(m, "qp.state", &qp->state, QSW_QPS_ERR);
    qrdma_mig_u32_max(m, "attr.qp_state", &a->qp_state, QSW_QPS_ERR);
    qrdma_mig_u32(m, "attr.cur_qp_state", &a->cur_qp_state);
    qrdma_mig_u32_max(m, "attr.path_mtu", &a->path_mtu, QSW_MTU_4096);
    qrdma_mig_u32(m, "attr.qkey", &a->qkey);
    qrdma_mig_u32(m, "attr.rq_psn", &a->rq_psn);
    qrdma_mig_u32(m, "attr.sq_psn", &a->sq_psn);
    qrdma_mig_u32(m, "attr.dest_qp_num", &a->dest_qp_num);
    qrdma_mig_u32(m, "attr.qp_access_flags", &a->qp_access_flags);
    mig_av(m, &a->av);
    qrdma_mig_u8(m, "attr.max_rd_atomic", &a->max_rd_atomic);
    qrdma_mig_u8(m, "attr.max_dest_rd_atomic", &a->max_dest_rd_atomic);
    qrdma_mig_u8(m, "attr.min_rnr_timer", &a->min_rnr_timer);
    qrdma_mig_u8(m, "attr.timeout", &a->timeout);
    qrdma_mig_u8(m, "attr.retry_cnt", &a->retry_cnt);
    qrdma_mig_u8(m, "attr.rnr_retry", &a->rnr_retry);
    qrdma_mig_u32(m, "qp.mtu", &qp->mtu);
    if (m->loading && !m->error) {
        bool ok = false;

        for (i = 1; i < sizeof(mtu_bytes) / sizeof(mtu_bytes[0]); i++) {
            ok |= qp->mtu == mtu_bytes[i];
        }
        if (!ok) {
            qrdma_mig_fail(m, -EINVAL, "qp.mtu", "%u is not a path MTU",
                           qp->mtu);
        }
    }
    qrdma_mig_u16(m, "qp.sport", &qp->sport);
    qrdma_mig_bool(m, "qp.ipv6", &qp->ipv6);
    qrdma_mig_bool(m, "qp.comm_est", &qp->comm_est);

    /*
     * Send queue: every WQE from the oldest not completed to the newest posted.
     */
    qrdma_mig_u32(m, "sq.head", &qp->sq_head);
    qrdma_mig_u32(m, "sq.cur", &qp->sq_cur);
    qrdma_mig_u32(m, "sq.tail", &qp->sq_tail);
    if (m->loading && !m->error &&
        (qp->sq_tail - qp->sq_head > qp->sq_mask + 1 ||
         qp->sq_cur - qp->sq_head > qp->sq_tail - qp->sq_head)) {
        qrdma_mig_fail(m, -EINVAL, "sq.tail",
                       "head %u, cur %u, tail %u do not fit %u slots",
                       qp->sq_head, qp->sq_cur, qp->sq_tail, qp->sq_mask + 1);
    }
    qrdma_mig_bool(m, "sq.waiting", &qp->sq_waiting);
    for (i = qp->sq_head; i != qp->sq_tail && !m->error; i++) {
        mig_wqe(qp, m, &qp->sq[i & qp->sq_mask]);
    }

    /* Requester. */
    qrdma_mig_u32(m, "req.psn", &qp->req.psn);
    qrdma_mig_u32(m, "req.noack", &qp->req.noack);
    qrdma_mig_u32(m, "req.hi_psn", &qp->req.hi_psn);
    qrdma_mig_bool(m, "req.stopped", &qp->req.stopped);
    qrdma_mig_u32(m, "req.rd_atomic", &qp->req.rd_atomic);
    qrdma_mig_bool(m, "req.drained_sent", &qp->req.drained_sent);
    qrdma_mig_u32_max(m, "req.cwnd", &qp->req.cwnd, QSW_MAX_UNACKED);
    qrdma_mig_u32(m, "req.ssthresh", &qp->req.ssthresh);
    qrdma_mig_u32(m, "req.ca_acc", &qp->req.ca_acc);

    /* Completer: the oldest unacknowledged PSN, retries, timers. */
    qrdma_mig_u32(m, "comp.psn", &qp->comp.psn);
    qrdma_mig_u32(m, "comp.retry_left", &qp->comp.retry_left);
    qrdma_mig_u32(m, "comp.rnr_left", &qp->comp.rnr_left);
    /*
     * The deadlines are on the transport's clock, which stands still while
     * the wire is busy: the time left on them is measured on it. A load
     * starts with the wire free (the destination's netdev holds nothing of
     * ours) and the two clocks equal.
     */
    real_now = m->now_ns;
    if (!m->loading) {
        m->now_ns = qsw_clock(qp->eng, real_now);
    }
    qrdma_mig_deadline(m, "comp.rto_deadline", &qp->comp.rto_deadline, false);
    qrdma_mig_deadline(m, "comp.rnr_deadline", &qp->comp.rnr_deadline, false);
    qrdma_mig_u32(m, "comp.rnr_psn", &qp->comp.rnr_psn);
    qrdma_mig_bool(m, "comp.rewound", &qp->comp.rewound);
    qrdma_mig_bool(m, "comp.stalled", &qp->comp.stalled);
    qrdma_mig_deadline(m, "comp.stall_since", &qp->comp.stall_since, true);
    m->now_ns = real_now;

    /* Responder. */
    qrdma_mig_u32(m, "resp.psn", &qp->resp.psn);
    qrdma_mig_u32(m, "resp.msn", &qp->resp.msn);
    qrdma_mig_bool(m, "resp.nak_sent", &qp->resp.nak_sent);
    qrdma_mig_u32(m, "resp.in_msg", &qp->resp.in_msg);
    qrdma_mig_bool(m, "resp.have_wr", &qp->resp.have_wr);
    qrdma_mig_bool(m, "resp.uc_drop", &qp->resp.uc_drop);
    qrdma_mig_u64(m, "resp.wr.wr_id", &qp->resp.wr.wr_id);
    qrdma_mig_u32_max(m, "resp.wr.num_sge", &qp->resp.wr.num_sge, QSW_MAX_SGE);
    for (i = 0; i < qp->resp.wr.num_sge && !m->error; i++) {
        mig_sge(m, &qp->resp.wr.sg_list[i]);
    }
    qrdma_mig_u32(m, "resp.wr_len", &qp->resp.wr_len);
    qrdma_mig_u32(m, "resp.offset", &qp->resp.offset);
    qrdma_mig_u64(m, "resp.va", &qp->resp.va);
    qrdma_mig_u32(m, "resp.rkey", &qp->resp.rkey);
    qrdma_mig_u32(m, "resp.resid", &qp->resp.resid);
    qrdma_mig_u32(m, "resp.wlen", &qp->resp.wlen);
    qrdma_mig_u8(m, "resp.ack_type", &qp->resp.ack_type);
    qrdma_mig_u8(m, "resp.ack_syn", &qp->resp.ack_syn);
    qrdma_mig_u32(m, "resp.ack_psn", &qp->resp.ack_psn);
    qrdma_mig_u32(m, "resp.since_ack", &qp->resp.since_ack);
    qrdma_mig_bool(m, "resp.fatal", &qp->resp.fatal);
    qrdma_mig_u8(m, "resp.fatal_syn", &qp->resp.fatal_syn);
    qrdma_mig_u8(m, "resp.fatal_ev", &qp->resp.fatal_ev);
    qrdma_mig_u32(m, "resp.fatal_psn", &qp->resp.fatal_psn);
    /* The READ responder queue and the atomic replay cache (IBTA 9.7). */
    qrdma_mig_u32_max(m, "resp.nres", &nres, 256);
    qrdma_mig_u32_max(m, "resp.res_next", &res_next, nres ? nres - 1 : 0);
    if (m->loading && !m->error && qsw_res_alloc(qp, nres)) {
        qrdma_mig_fail(m, -ENOMEM, "resp.nres",
                       "out of memory for %u resources", nres);
    }
    if (m->loading && !m->error && qp->resp.nres != nres) {
        qrdma_mig_fail(m, -EINVAL, "resp.nres", "%u resources", nres);
    }
    for (i = 0; i < qp->resp.nres && !m->error; i++) {
        mig_res(m, &qp->resp.res[i]);
    }
    qrdma_mig_bool(m, "on_active", &on_active);
    if (m->loading && !m->error) {
        qp->resp.res_next = res_next;
        if (on_active) {
            qsw_qp_activate(qp);
        }
        qsw_qp_timer_update(qp);
    }
}
