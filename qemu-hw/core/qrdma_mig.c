/*
 * qrdma device core: saving the whole device's state to a stream and
 * loading it into a fresh core (docs/migration.md; the framing in
 * include/qrdma/qrdma_mig.h). Like a hardware context save: the register
 * file, the control QP, the HMC, the event queues, the Ethernet function's
 * cursors, the objects and the data path (qrdma_dp_mig()), then whatever
 * the backend keeps (its save/load ops). Guest memory is not in the
 * stream: it is the embedding's (QEMU migrates RAM).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qrdma_core_int.h"
#include "qrdma_mig_stream.h"

/* Properties the saved state depends on: the destination must have the same. */
static void mig_config(struct qrdma_core *core, struct qrdma_mig *m)
{
    const struct qrdma_core_config *c = &core->cfg;
    uint8_t mac[6];

    qrdma_mig_section(m, QRDMA_MIG_SEC_CONFIG, "config", QRDMA_MIG_V_CONFIG);
    memcpy(mac, c->mac, 6);
    qrdma_mig_bytes(m, "mac", mac, 6);
    if (m->loading && !m->error && memcmp(mac, c->mac, 6)) {
        qrdma_mig_fail(m, -EINVAL, "mac",
                       "the stream's station address is not this device's");
    }
    qrdma_mig_u32_same(m, "backend", c->backend);
    qrdma_mig_u32_same(m, "max_qp", c->max_qp);
    qrdma_mig_u32_same(m, "max_cq", c->max_cq);
    qrdma_mig_u32_same(m, "max_mr", c->max_mr);
    qrdma_mig_u32_same(m, "max_pd", c->max_pd);
    qrdma_mig_u32_same(m, "max_srq", c->max_srq);
    qrdma_mig_u32_same(m, "max_ah", c->max_ah);
    qrdma_mig_u32_same(m, "max_qp_wr", c->max_qp_wr);
    qrdma_mig_u32_same(m, "max_srq_wr", c->max_srq_wr);
    qrdma_mig_u32_same(m, "max_cqe", c->max_cqe);
    qrdma_mig_u32_same(m, "max_send_sge", c->max_send_sge);
    qrdma_mig_u32_same(m, "max_recv_sge", c->max_recv_sge);
    qrdma_mig_u32_same(m, "max_inline", c->max_inline);
    qrdma_mig_u32_same(m, "max_rd_atom", c->max_rd_atom);
    qrdma_mig_u32_same(m, "max_mtu", c->max_mtu);
    qrdma_mig_u32_same(m, "gid_table_len", c->gid_table_len);
    qrdma_mig_u32_same(m, "db_pages", c->db_pages);
    qrdma_mig_u32_same(m, "msix_vectors", c->msix_vectors);
    qrdma_mig_u32_same(m, "max_ceq", c->max_ceq);
    qrdma_mig_u32_same(m, "max_mcast_grp", c->max_mcast_grp);
    qrdma_mig_u32_same(m, "max_mcast_qp_attach", c->max_mcast_qp_attach);
    qrdma_mig_section_end(m);
}

static void mig_regs(struct qrdma_core *core, struct qrdma_mig *m)
{
    struct qrdma_core_stats *s = &core->stats;
    unsigned i;

    qrdma_mig_section(m, QRDMA_MIG_SEC_REGS, "regs", QRDMA_MIG_V_REGS);
    qrdma_mig_u32_same(m, "regs.count", QRDMA_REG_FILE_END / 4);
    for (i = 0; i < QRDMA_REG_FILE_END / 4; i++) {
        qrdma_mig_u32(m, "regs", &core->regs[i]);
    }
    qrdma_mig_bool(m, "pe_ready", &core->pe_ready);
    qrdma_mig_u64(m, "stats.guest_errors", &s->guest_errors);
    qrdma_mig_u64(m, "stats.resets", &s->resets);
    qrdma_mig_u64(m, "stats.reg_reads", &s->reg_reads);
    qrdma_mig_u64(m, "stats.reg_writes", &s->reg_writes);
    qrdma_mig_u64(m, "stats.doorbells", &s->doorbells);
    qrdma_mig_u64(m, "stats.cqp_commands", &s->cqp_commands);
    qrdma_mig_u64(m, "stats.reentries_refused", &s->reentries_refused);
    qrdma_mig_u64(m, "stats.resets_deferred", &s->resets_deferred);
    qrdma_mig_u64(m, "stats.guest_lookups", &s->guest_lookups);
    qrdma_mig_u32_same(m, "port_stats.count", QRDMA_STAT_NUM);
    for (i = 0; i < QRDMA_STAT_NUM; i++) {
        qrdma_mig_u64(m, "port_stats.live", &core->port_stats.live[i]);
        qrdma_mig_u64(m, "port_stats.snapshot", &core->port_stats.snapshot[i]);
    }
    qrdma_mig_section_end(m);
}

static void mig_lan_ring(struct qrdma_mig *m, struct qrdma_lan_ring *r)
{
    qrdma_mig_u64(m, "ring.base", &r->base);
    qrdma_mig_u32(m, "ring.len", &r->len);
    qrdma_mig_u32(m, "ring.head", &r->head);
    qrdma_mig_u32(m, "ring.tail", &r->tail);
    qrdma_mig_bool(m, "ring.discard_to_eop", &r->discard_to_eop);
}

static void mig_lan(struct qrdma_core *core, struct qrdma_mig *m)
{
    struct qrdma_lan *lan = &core->lan;
    struct qrdma_lan_backlog *b = &lan->backlog;
    uint32_t count = b->count;
    unsigned i;

    qrdma_mig_section(m, QRDMA_MIG_SEC_LAN, "lan", QRDMA_MIG_V_LAN);
    qrdma_mig_u32_same(m, "regs.count", QRDMA_LAN_NUM_REGS);
    for (i = 0; i < QRDMA_LAN_NUM_REGS; i++) {
        qrdma_mig_u32(m, "regs", &lan->regs[i]);
    }
    mig_lan_ring(m, &lan->tx);
    mig_lan_ring(m, &lan->rx);
    qrdma_mig_u32(m, "pending", &lan->pending);
    qrdma_mig_u32_same(m, "stats.count", QRDMA_LAN_NUM_STATS);
    for (i = 0; i < QRDMA_LAN_NUM_STATS; i++) {
        qrdma_mig_u32(m, "stats", &lan->stats[i]);
    }
    /*
     * The frames waiting for a receive buffer, oldest first; loaded from slot
     * 0.
     */
    qrdma_mig_u32_max(m, "backlog.count", &count, QRDMA_LAN_BACKLOG_FRAMES);
    for (i = 0; i < count && !m->error; i++) {
        unsigned slot = m->loading ? i
                                   : (b->head + i) % QRDMA_LAN_BACKLOG_FRAMES;
        uint32_t len = b->len[slot];

        qrdma_mig_u32_max(m, "backlog.len", &len, sizeof(b->data[slot]));
        qrdma_mig_bytes(m, "backlog.data", b->data[slot], len);
        b->len[slot] = (uint16_t)len;
    }
    if (m->loading && !m->error) {
        b->head = 0;
        b->count = count;
    }
    qrdma_mig_section_end(m);
}

static void mig_cqp(struct qrdma_core *core, struct qrdma_mig *m)
{
    struct qrdma_cqp *c = &core->cqp;

    qrdma_mig_section(m, QRDMA_MIG_SEC_CQP, "cqp", QRDMA_MIG_V_CQP);
    qrdma_mig_u32(m, "ctx_low", &c->ctx_low);
    qrdma_mig_u32(m, "ctx_high", &c->ctx_high);
    qrdma_mig_u32(m, "status", &c->status);
    qrdma_mig_u32(m, "errcodes", &c->errcodes);
    qrdma_mig_bool(m, "created", &c->created);
    qrdma_mig_u64(m, "sq_addr", &c->sq_addr);
    qrdma_mig_u64(m, "ccq_addr", &c->ccq_addr);
    qrdma_mig_u64(m, "shadow_addr", &c->shadow_addr);
    qrdma_mig_u32(m, "sq_len", &c->sq_len);
    qrdma_mig_u32(m, "ccq_len", &c->ccq_len);
    qrdma_mig_u32(m, "sq_head", &c->sq_head);
    qrdma_mig_u32(m, "db", &c->db);
    qrdma_mig_bool(m, "sq_valid", &c->sq_valid);
    qrdma_mig_u32(m, "ccq_tail", &c->ccq_tail);
    qrdma_mig_bool(m, "ccq_valid", &c->ccq_valid);
    qrdma_mig_u64(m, "ccq_ceq", &c->ccq_ceq);
    qrdma_mig_u64(m, "ccq_ctx", &c->ccq_ctx);
    qrdma_mig_bool(m, "stalled", &c->stalled);
    if (m->loading && !m->error && c->created &&
        (c->sq_len == 0 || c->ccq_len == 0 || c->sq_head >= c->sq_len ||
         c->ccq_tail >= c->ccq_len)) {
        qrdma_mig_fail(m, -EINVAL, "sq_head", "cursor outside its ring");
    }
    qrdma_mig_section_end(m);
}

static void mig_eq(struct qrdma_mig *m, struct qrdma_eq *q)
{
    qrdma_mig_bool(m, "eq.created", &q->created);
    qrdma_mig_u64(m, "eq.addr", &q->addr);
    qrdma_mig_u32(m, "eq.len", &q->len);
    qrdma_mig_u32(m, "eq.tail", &q->tail);
    qrdma_mig_bool(m, "eq.valid", &q->valid);
    qrdma_mig_u32(m, "eq.avail", &q->avail);
    if (m->loading && !m->error && q->created &&
        (q->len == 0 || (q->len & (q->len - 1)) || q->tail >= q->len ||
         q->avail > q->len)) {
        qrdma_mig_fail(m, -EINVAL, "eq.tail", "cursor outside its ring");
    }
}

static void mig_eqs(struct qrdma_core *core, struct qrdma_mig *m)
{
    struct qrdma_intr *in = &core->intr;
    unsigned i;

    qrdma_mig_section(m, QRDMA_MIG_SEC_EQ, "eq", QRDMA_MIG_V_EQ);
    qrdma_mig_u32_same(m, "gids.count", QRDMA_GID_TABLE_MAX);
    for (i = 0; i < QRDMA_GID_TABLE_MAX; i++) {
        qrdma_mig_bool(m, "gid.valid", &core->gids[i].valid);
        qrdma_mig_u8(m, "gid.type", &core->gids[i].type);
        qrdma_mig_bytes(m, "gid.gid", core->gids[i].gid, 16);
    }
    qrdma_mig_u32_same(m, "ceq.count", QRDMA_MAX_CEQS);
    for (i = 0; i < QRDMA_MAX_CEQS; i++) {
        mig_eq(m, &core->ceq[i]);
    }
    mig_eq(m, &core->aeq);
    qrdma_mig_u32_same(m, "vectors.count", QRDMA_MAX_VECTORS);
    for (i = 0; i < QRDMA_MAX_VECTORS; i++) {
        qrdma_mig_u32(m, "intr.dyn_ctl", &in->dyn_ctl[i]);
    }
    for (i = 0; i < QRDMA_MAX_CEQS; i++) {
        qrdma_mig_u32(m, "intr.ceqctl", &in->ceqctl[i]);
    }
    qrdma_mig_u32(m, "intr.aeqctl", &in->aeqctl);
    qrdma_mig_u64(m, "intr.pending", &in->pending);
    qrdma_mig_u32(m, "intr.overflows", &in->overflows);
    qrdma_mig_section_end(m);
}

static void mig_hmc(struct qrdma_core *core, struct qrdma_mig *m)
{
    struct qrdma_hmc *h = &core->hmc;
    unsigned i;

    qrdma_mig_section(m, QRDMA_MIG_SEC_HMC, "hmc", QRDMA_MIG_V_HMC);
    qrdma_mig_u32_same(m, "types", QRDMA_HMC_NUM_TYPES);
    for (i = 0; i < QRDMA_HMC_NUM_TYPES; i++) {
        /* The maxima come from the properties (CFG); the stream must agree. */
        qrdma_mig_u32_same(m, "max_count", h->max_count[i]);
        qrdma_mig_u8(m, "obj_size_log2", &h->obj_size_log2[i]);
        qrdma_mig_u32_max(m, "count", &h->count[i], h->max_count[i]);
        qrdma_mig_u64(m, "base", &h->base[i]);
    }
    qrdma_mig_bool(m, "committed", &h->committed);
    qrdma_mig_u32_max(m, "sd_needed", &h->sd_needed, QRDMA_HMC_MAX_SDS);
    qrdma_mig_u32_same(m, "sd.count", QRDMA_HMC_MAX_SDS);
    for (i = 0; i < QRDMA_HMC_MAX_SDS; i++) {
        qrdma_mig_u64(m, "sd", &h->sd[i]);
    }
    qrdma_mig_u32(m, "sd_data_low", &h->sd_data_low);
    qrdma_mig_u32(m, "sd_data_high", &h->sd_data_high);
    qrdma_mig_u32(m, "sd_cmd", &h->sd_cmd);
    qrdma_mig_u32_same(m, "pd_cache.count", QRDMA_HMC_PD_CACHE_SIZE);
    for (i = 0; i < QRDMA_HMC_PD_CACHE_SIZE; i++) {
        qrdma_mig_bool(m, "pd_cache.valid", &h->pd_cache[i].valid);
        qrdma_mig_u32(m, "pd_cache.tag", &h->pd_cache[i].tag);
        qrdma_mig_u64(m, "pd_cache.pd", &h->pd_cache[i].pd);
        if (m->loading && !m->error && h->pd_cache[i].valid &&
            (h->pd_cache[i].tag & (QRDMA_HMC_PD_CACHE_SIZE - 1)) != i) {
            qrdma_mig_fail(m, -EINVAL, "pd_cache.tag", "entry %u holds tag %u",
                           i, h->pd_cache[i].tag);
        }
    }
    qrdma_mig_section_end(m);
}

static void mig_queue(struct qrdma_mig *m, struct qrdma_queue *q)
{
    qrdma_mig_u64(m, "queue.addr", &q->addr);
    /*
     * A ring of 2^31 entries of 1 KB would be far beyond any limit: 31 bounds
     * the shifts.
     */
    qrdma_mig_u8_max(m, "queue.size_log2", &q->size_log2, 31);
    qrdma_mig_u8_max(m, "queue.stride_log2", &q->stride_log2, 12);
    qrdma_mig_bool(m, "queue.virtmap", &q->virtmap);
}

static void mig_av(struct qrdma_mig *m, struct qrdma_av_info *av)
{
    qrdma_mig_bytes(m, "av.dgid", av->dgid, 16);
    qrdma_mig_bytes(m, "av.dmac", av->dmac, 6);
    qrdma_mig_u8(m, "av.sgid_index", &av->sgid_index);
    qrdma_mig_u8(m, "av.hop_limit", &av->hop_limit);
    qrdma_mig_u8(m, "av.traffic_class", &av->traffic_class);
    qrdma_mig_u32(m, "av.flow_label", &av->flow_label);
}

static void mig_qp(struct qrdma_mig *m, struct qrdma_qp *qp)
{
    struct qrdma_qp_attrs *a = &qp->attr;

    qrdma_mig_bool(m, "qp.valid", &qp->valid);
    if (!qp->valid) {
        return;
    }
    qrdma_mig_u8(m, "qp.type", &qp->type);
    qrdma_mig_u8(m, "qp.flags", &qp->flags);
    qrdma_mig_u8_max(m, "qp.state", &qp->state, QRDMA_QPS_ERR);
    qrdma_mig_bool(m, "qp.sq_draining", &qp->sq_draining);
    qrdma_mig_bool(m, "qp.sqd_async", &qp->sqd_async);
    qrdma_mig_u16(m, "qp.db_page", &qp->db_page);
    qrdma_mig_u32(m, "qp.pd", &qp->pd);
    qrdma_mig_u32(m, "qp.send_cq", &qp->send_cq);
    qrdma_mig_u32(m, "qp.recv_cq", &qp->recv_cq);
    qrdma_mig_u32(m, "qp.srq", &qp->srq);
    qrdma_mig_u64(m, "qp.qp_ctx", &qp->qp_ctx);
    mig_queue(m, &qp->sq);
    mig_queue(m, &qp->rq);
    qrdma_mig_u32(m, "qp.attr.set", &a->set);
    qrdma_mig_u32(m, "qp.attr.sq_psn", &a->sq_psn);
    qrdma_mig_u32(m, "qp.attr.rq_psn", &a->rq_psn);
    qrdma_mig_u32(m, "qp.attr.dest_qpn", &a->dest_qpn);
    qrdma_mig_u32(m, "qp.attr.qkey", &a->qkey);
    qrdma_mig_u32(m, "qp.attr.access_flags", &a->access_flags);
    qrdma_mig_u16(m, "qp.attr.pkey_index", &a->pkey_index);
    qrdma_mig_u8(m, "qp.attr.path_mtu", &a->path_mtu);
    qrdma_mig_u8(m, "qp.attr.timeout", &a->timeout);
    qrdma_mig_u8(m, "qp.attr.retry_cnt", &a->retry_cnt);
    qrdma_mig_u8(m, "qp.attr.rnr_retry", &a->rnr_retry);
    qrdma_mig_u8(m, "qp.attr.min_rnr_timer", &a->min_rnr_timer);
    qrdma_mig_u8(m, "qp.attr.max_rd_atomic", &a->max_rd_atomic);
    qrdma_mig_u8(m, "qp.attr.max_dest_rd_atomic", &a->max_dest_rd_atomic);
    qrdma_mig_u8(m, "qp.attr.port_num", &a->port_num);
    mig_av(m, &a->av);
    qrdma_mig_u32(m, "qp.sq_head", &qp->sq_head);
    qrdma_mig_u32(m, "qp.rq_head", &qp->rq_head);
}

static void mig_cq(struct qrdma_mig *m, struct qrdma_cq *cq)
{
    qrdma_mig_bool(m, "cq.valid", &cq->valid);
    if (!cq->valid) {
        return;
    }
    qrdma_mig_bool(m, "cq.ceq_enable", &cq->ceq_enable);
    qrdma_mig_u8(m, "cq.ceq_id", &cq->ceq_id);
    qrdma_mig_u16(m, "cq.db_page", &cq->db_page);
    qrdma_mig_u32(m, "cq.refs", &cq->refs);
    qrdma_mig_u64(m, "cq.cq_ctx", &cq->cq_ctx);
    qrdma_mig_u64(m, "cq.shadow", &cq->shadow);
    mig_queue(m, &cq->ring);
    qrdma_mig_u32(m, "cq.tail", &cq->tail);
    qrdma_mig_u32(m, "cq.head_seen", &cq->head_seen);
    qrdma_mig_bool(m, "cq.polarity", &cq->polarity);
    qrdma_mig_bool(m, "cq.error", &cq->error);
}

static void mig_srq(struct qrdma_mig *m, struct qrdma_srq *s)
{
    qrdma_mig_bool(m, "srq.valid", &s->valid);
    if (!s->valid) {
        return;
    }
    qrdma_mig_u32(m, "srq.pd", &s->pd);
    qrdma_mig_u32(m, "srq.limit", &s->limit);
    qrdma_mig_u32(m, "srq.refs", &s->refs);
    qrdma_mig_u64(m, "srq.srq_ctx", &s->srq_ctx);
    qrdma_mig_u64(m, "srq.shadow", &s->shadow);
    mig_queue(m, &s->ring);
    qrdma_mig_u32(m, "srq.head", &s->head);
    qrdma_mig_u32(m, "srq.outstanding", &s->outstanding);
}

static void mig_mr(struct qrdma_mig *m, struct qrdma_mr *mr)
{
    qrdma_mig_u8(m, "mr.state", &mr->state);
    if (!mr->state) {
        /* never used since the layout was committed: all zero */
        return;
    }
    qrdma_mig_u64(m, "mr.iova", &mr->iova);
    qrdma_mig_u64(m, "mr.length", &mr->length);
    /* or mw_mr: the same bytes */
    qrdma_mig_u64(m, "mr.first", &mr->first);
    qrdma_mig_u32(m, "mr.pd", &mr->pd);
    qrdma_mig_u32(m, "mr.fbo", &mr->fbo);
    qrdma_mig_u32(m, "mr.max_pages", &mr->max_pages);   /* or mw_qp */
    qrdma_mig_u32(m, "mr.mw_bound", &mr->mw_bound);
    qrdma_mig_u8(m, "mr.key", &mr->key);
    qrdma_mig_u8(m, "mr.type", &mr->type);
    qrdma_mig_u8(m, "mr.access", &mr->access);
    qrdma_mig_u8(m, "mr.levels", &mr->levels);
    qrdma_mig_u8_max(m, "mr.page_log2", &mr->page_log2, 63);
    qrdma_mig_u8(m, "mr.mw_type", &mr->mw_type);
}

static void mig_ah(struct qrdma_mig *m, struct qrdma_ah *ah)
{
    qrdma_mig_bool(m, "ah.valid", &ah->valid);
    if (!ah->valid) {
        return;
    }
    qrdma_mig_u32(m, "ah.pd", &ah->pd);
    mig_av(m, &ah->av);
}

static void mig_objs(struct qrdma_core *core, struct qrdma_mig *m)
{
    struct qrdma_objs *o = &core->obj;
    const uint32_t *n = core->hmc.count;
    uint32_t i;

    qrdma_mig_section(m, QRDMA_MIG_SEC_OBJ, "objects", QRDMA_MIG_V_OBJ);
    if (m->loading && !m->error && core->hmc.committed) {
        unsigned failed = qrdma_obj_alloc(core, n);

        if (failed) {
            qrdma_mig_fail(m, -ENOMEM, "count",
                           "out of memory for objects of type %u", failed - 1);
        }
    }
    if (core->hmc.committed) {
        for (i = 0; i < n[QRDMA_HMC_QP] && !m->error; i++) {
            mig_qp(m, &o->qp[i]);
        }
        for (i = 0; i < n[QRDMA_HMC_CQ] && !m->error; i++) {
            mig_cq(m, &o->cq[i]);
        }
        for (i = 0; i < n[QRDMA_HMC_SRQ] && !m->error; i++) {
            mig_srq(m, &o->srq[i]);
        }
        for (i = 0; i < n[QRDMA_HMC_MR] && !m->error; i++) {
            mig_mr(m, &o->mr[i]);
        }
        for (i = 0; i < n[QRDMA_HMC_AH] && !m->error; i++) {
            mig_ah(m, &o->ah[i]);
        }
    }
    qrdma_mig_u32_same(m, "in_use.count", QRDMA_HMC_PBLE);
    for (i = 0; i < QRDMA_HMC_PBLE; i++) {
        qrdma_mig_u32(m, "in_use", &o->in_use[i]);
    }
    qrdma_mig_section_end(m);
}

bool qrdma_core_can_save(struct qrdma_core *core, char *err, size_t err_len)
{
    struct qrdma_dp *dp = &core->dp;

    if (!dp->ops || !dp->ops->save || !dp->ops->load) {
        snprintf(err, err_len,
                 "backend %s cannot save its state: migration is blocked",
                 dp->ops ? dp->ops->name : "(none)");
        return false;
    }
    if (!dp->be) {
        snprintf(err, err_len,
                 "the backend is down (it failed to restart at a reset)");
        return false;
    }
    /*
     * A reset or teardown asked for from inside the device's own work is
     * done when that work ends (struct qrdma_core_guard): a save now would
     * carry the state the reset is about to discard, a load would be
     * discarded by it. Neither half: refuse until it is done.
     */
    if (core->guard.reset_pending || core->guard.fini_pending) {
        snprintf(err, err_len,
                 "a device %s is pending (asked for from inside the device's "
                 "own work): refused until it is done",
                 core->guard.fini_pending ? "teardown" : "reset");
        return false;
    }
    if (core->guard.depth) {
        snprintf(err, err_len,
                 "the device is inside one of its own entry points");
        return false;
    }
    return true;
}

/* Every section in stream order; the backend's after the core's. */
/*
 * The multicast groups (the device's receive filter for them): each
 * group's GID and attached QP IDs, bounded by the properties the config
 * section checked, every QP ID below max_qp.
 */
static void mig_mcast(struct qrdma_core *core, struct qrdma_mig *m)
{
    struct qrdma_mcast *mc = &core->mcast;
    uint32_t g, i;

    qrdma_mig_section(m, QRDMA_MIG_SEC_MCAST, "mcast", QRDMA_MIG_V_MCAST);
    qrdma_mig_u32_max(m, "ngrp", &mc->ngrp, core->cfg.max_mcast_grp);
    for (g = 0; g < mc->ngrp && !m->error; g++) {
        struct qrdma_mcast_grp *grp = &mc->grp[g];

        qrdma_mig_bytes(m, "grp.gid", grp->gid, sizeof(grp->gid));
        qrdma_mig_u32_max(m, "grp.nqp", &grp->nqp,
                          core->cfg.max_mcast_qp_attach);
        for (i = 0; i < grp->nqp && !m->error; i++) {
            qrdma_mig_u32_max(m, "grp.qp_id", &grp->qp_id[i],
                              core->cfg.max_qp - 1);
        }
    }
    qrdma_mig_section_end(m);
}

static void mig_all(struct qrdma_core *core, struct qrdma_mig *m)
{
    struct qrdma_dp *dp = &core->dp;

    qrdma_mig_header(m, QRDMA_IF_VERSION_MAJOR, QRDMA_IF_VERSION_MINOR);
    mig_config(core, m);
    mig_regs(core, m);
    mig_lan(core, m);
    mig_cqp(core, m);
    mig_eqs(core, m);
    mig_hmc(core, m);
    mig_objs(core, m);
    mig_mcast(core, m);
    qrdma_dp_mig(core, m);
    if (!m->error) {
        int ret = m->loading ? dp->ops->load(dp->be, m)
                             : dp->ops->save(dp->be, m);

        if (ret && !m->error) {
            qrdma_mig_fail(m, ret, "-", "backend %s failed (%d)", dp->ops->name,
                           ret);
        }
    }
    qrdma_mig_section(m, QRDMA_MIG_SEC_END, "end", QRDMA_MIG_V_END);
    qrdma_mig_section_end(m);
    if (m->loading && !m->error && m->pos != m->in_len) {
        qrdma_mig_fail(m, -EINVAL, "-", "%zu bytes after the END section",
                       m->in_len - m->pos);
    }
}

int qrdma_core_save_walk(struct qrdma_core *core,
                         qrdma_core_mig_field_fn *on_field, void *opaque,
                         uint8_t **buf, size_t *len, char *err,
                         size_t err_len)
{
    struct qrdma_mig m;

    *buf = NULL;
    *len = 0;
    if (!qrdma_core_can_save(core, err, err_len)) {
        return -ENOTSUP;
    }
    qrdma_mig_init_save(&m, core->env.now_ns(core->env.opaque));
    m.on_field = on_field;
    m.on_field_opaque = opaque;
    mig_all(core, &m);
    if (m.error) {
        snprintf(err, err_len, "%s", m.msg);
        free(m.buf);
        return m.error;
    }
    *buf = m.buf;
    *len = m.len;
    return 0;
}

int qrdma_core_save(struct qrdma_core *core, uint8_t **buf, size_t *len,
                    char *err, size_t err_len)
{
    return qrdma_core_save_walk(core, NULL, NULL, buf, len, err, err_len);
}

int qrdma_core_load(struct qrdma_core *core, const uint8_t *buf, size_t len,
                    char *err, size_t err_len)
{
    struct qrdma_dp *dp = &core->dp;
    struct qrdma_mig m;

    if (!qrdma_core_can_save(core, err, err_len)) {
        return -ENOTSUP;
    }
    /*
     * Load into a device just reset, so that a failure can leave it reset
     * again.
     */
    qrdma_core_reset(core);
    if (!dp->be) {
        snprintf(err, err_len, "the backend did not restart");
        return -EIO;
    }
    qrdma_mig_init_load(&m, buf, len, core->env.now_ns(core->env.opaque));
    mig_all(core, &m);
    if (m.error) {
        snprintf(err, err_len, "%s", m.msg);
        qrdma_core_reset(core);
        return m.error;
    }
    /*
     * Restart what ran on timers and kicks: PE ready (its timer started
     * over: only a device still coming up waits again), the backend's
     * station address, the CQP, the LAN and the data path.
     */
    if (!core->pe_ready &&
        core->cfg.pe_ready_delay_us != QRDMA_PE_READY_NEVER) {
        core->env.schedule_pe_ready(core->env.opaque,
                                    (uint64_t)core->cfg.pe_ready_delay_us *
                                        1000);
    }
    if (dp->ops->set_mac && memcmp(dp->be_mac, core->cfg.mac, 6)) {
        dp->ops->set_mac(dp->be, dp->be_mac);
    }
    core->env.kick(core->env.opaque,
                   QRDMA_WORK_CQP | QRDMA_WORK_LAN_TX | QRDMA_WORK_DP);
    return 0;
}
