/*
 * qrdma device core: objects. The working copies of QPs, CQs, SRQs, MRs
 * and AHs (one array per type, sized by the committed FPM layout), what
 * every object command shares (IDs, HMC contexts, PBLEs, rings, address
 * vectors), the object counters, and the CQ, SRQ and AH commands. QPs are
 * in qrdma_qp.c, MRs in qrdma_mr.c. See docs/hw-spec.md, sections 13-16.
 *
 * Every command checks all of its arguments before it changes anything:
 * the working copy, the counters and references change only after the
 * object's HMC context was written, so a refused command leaves the device
 * as it was. The HMC contexts are written, never read back.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qrdma_core_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING_PAGE_SIZE 4096u
#define CTX_SIZE 64u            /* CQ, SRQ, AH contexts */
#define SHADOW_SIZE 64u

_Static_assert(QRDMA_REG_OBJ_COUNT(QRDMA_HMC_AH) == QRDMA_REG_OBJ_COUNT_AH,
               "one OBJ_COUNT register per type QP..AH");
/*
 * The largest CQ the limits allow fits a ring (2^n <= max_cqe + 1, max_cqe <=
 * 2^18).
 */
_Static_assert((QRDMA_CQE_SIZE << QRDMA_CQ_SIZE_LOG2_MAX) <=
                   QRDMA_QUEUE_MAX_BYTES,
               "CQ_SIZE_LOG2_MAX within QRDMA_QUEUE_MAX_BYTES");

static const char *const obj_name[QRDMA_HMC_NUM_TYPES] = {
    [QRDMA_HMC_QP] = "QP",
    [QRDMA_HMC_CQ] = "CQ",
    [QRDMA_HMC_SRQ] = "SRQ",
    [QRDMA_HMC_MR] = "MR",
    [QRDMA_HMC_AH] = "AH",
    [QRDMA_HMC_PBLE] = "PBLE",
};

_Static_assert(QRDMA_CQE_SIZE == 1u << 5, "CQ rings have a stride of 2^5");

static const struct cqp_result cqp_ok;

static struct cqp_result bad_arg(unsigned which)
{
    return (struct cqp_result){ .major = QRDMA_CQP_ERR_INVALID_ARG,
                                .minor = which };
}

struct cqp_result qrdma_cqp_fail(struct qrdma_core *core,
                                 enum qrdma_cqp_major major, unsigned minor,
                                 const char *fmt, ...)
{
    char msg[224];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    qrdma_guest_error(core, "%s", msg);
    return (struct cqp_result){ .major = major, .minor = minor };
}

/* ---- the arrays ---------------------------------------------------------- */

void qrdma_obj_reset(struct qrdma_core *core)
{
    struct qrdma_objs *o = &core->obj;

    free(o->ah);
    free(o->mr);
    free(o->srq);
    free(o->cq);
    free(o->qp);
    memset(o, 0, sizeof(*o));
    /* The QPs attached to groups are gone with the rest. */
    qrdma_mcast_reset(core);
}

/*
 * count zeroed entries of size bytes; none for count 0 (no index reaches them).
 */
static void *obj_calloc(uint32_t count, size_t size)
{
    return count ? calloc(count, size) : NULL;
}

unsigned qrdma_obj_alloc(struct qrdma_core *core, const uint32_t *count)
{
    struct qrdma_objs *o = &core->obj;
    enum qrdma_hmc_type failed;

    qrdma_obj_reset(core);
    o->qp = obj_calloc(count[QRDMA_HMC_QP], sizeof(*o->qp));
    o->cq = obj_calloc(count[QRDMA_HMC_CQ], sizeof(*o->cq));
    o->srq = obj_calloc(count[QRDMA_HMC_SRQ], sizeof(*o->srq));
    o->mr = obj_calloc(count[QRDMA_HMC_MR], sizeof(*o->mr));
    o->ah = obj_calloc(count[QRDMA_HMC_AH], sizeof(*o->ah));
    if (count[QRDMA_HMC_QP] && !o->qp) {
        failed = QRDMA_HMC_QP;
    } else if (count[QRDMA_HMC_CQ] && !o->cq) {
        failed = QRDMA_HMC_CQ;
    } else if (count[QRDMA_HMC_SRQ] && !o->srq) {
        failed = QRDMA_HMC_SRQ;
    } else if (count[QRDMA_HMC_MR] && !o->mr) {
        failed = QRDMA_HMC_MR;
    } else if (count[QRDMA_HMC_AH] && !o->ah) {
        failed = QRDMA_HMC_AH;
    } else {
        return 0;
    }
    /* Frees what was allocated (free(NULL) for the rest). */
    qrdma_obj_reset(core);
    return 1 + failed;
}

/* ---- counters and lookups ------------------------------------------------ */

uint32_t qrdma_core_obj_count(struct qrdma_core *core, enum qrdma_hmc_type t)
{
    return (unsigned)t < QRDMA_HMC_PBLE ? core->obj.in_use[t] : 0;
}

void qrdma_obj_count_inc(struct qrdma_core *core, enum qrdma_hmc_type t)
{
    core->obj.in_use[t]++;
}

void qrdma_obj_count_dec(struct qrdma_core *core, enum qrdma_hmc_type t)
{
    core->obj.in_use[t]--;
}

static bool obj_in_layout(struct qrdma_core *core, enum qrdma_hmc_type t,
                          uint32_t id)
{
    return core->hmc.committed && id < core->hmc.count[t];
}

struct qrdma_qp *qrdma_qp_get(struct qrdma_core *core, uint32_t qp_id)
{
    return obj_in_layout(core, QRDMA_HMC_QP, qp_id) && core->obj.qp[qp_id].valid
           ? &core->obj.qp[qp_id] : NULL;
}

struct qrdma_cq *qrdma_cq_get(struct qrdma_core *core, uint32_t cq_id)
{
    return obj_in_layout(core, QRDMA_HMC_CQ, cq_id) && core->obj.cq[cq_id].valid
           ? &core->obj.cq[cq_id] : NULL;
}

struct qrdma_srq *qrdma_srq_get(struct qrdma_core *core, uint32_t srq_id)
{
    return obj_in_layout(core, QRDMA_HMC_SRQ, srq_id) &&
                   core->obj.srq[srq_id].valid
               ? &core->obj.srq[srq_id]
               : NULL;
}

struct qrdma_ah *qrdma_ah_get(struct qrdma_core *core, uint32_t ah_id)
{
    return obj_in_layout(core, QRDMA_HMC_AH, ah_id) && core->obj.ah[ah_id].valid
           ? &core->obj.ah[ah_id] : NULL;
}

/* ---- helpers of every object command ------------------------------------- */

struct cqp_result qrdma_obj_id_check(struct qrdma_core *core,
                                     enum qrdma_hmc_type type, uint64_t id,
                                     const char *what)
{
    if (!core->hmc.committed) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_HMC,
                              QRDMA_HMC_ERR_NOT_COMMITTED,
                              "%s: %s %" PRIu64 ": no FPM layout is committed "
                              "(COMMIT_FPM_VAL first)",
                              what, obj_name[type], id);
    }
    if (id >= core->hmc.count[type]) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_COUNT,
                              "%s: %s %" PRIu64 " is beyond the %u committed",
                              what, obj_name[type], id, core->hmc.count[type]);
    }
    return cqp_ok;
}

struct cqp_result qrdma_obj_ctx_write(struct qrdma_core *core,
                                      enum qrdma_hmc_type type, uint32_t index,
                                      const uint8_t *ctx, size_t len,
                                      const char *what)
{
    uint64_t gpa;
    int err = qrdma_core_hmc_object(core, type, index, &gpa);

    if (err) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_HMC, err,
                              "%s: %s %u: its HMC context is not backed", what,
                              obj_name[type], index);
    }
    if (core->env.dma_write(core->env.opaque, gpa, ctx, len)) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_NOT_RAM,
                              "%s: %s %u: its HMC context at 0x%" PRIx64
                              " is not guest RAM",
                              what, obj_name[type], index, gpa);
    }
    return cqp_ok;
}

/*
 * A destroy clears the context, and goes ahead even if it cannot: an object
 * that could never be destroyed because the driver took its HMC page away
 * first would be worse than a stale context in a page the device no longer
 * uses. The failure is still a guest error.
 */
static void obj_ctx_clear(struct qrdma_core *core, enum qrdma_hmc_type type,
                          uint32_t index, size_t len, const char *what)
{
    uint8_t zero[QRDMA_QP_CTX_SIZE];

    memset(zero, 0, sizeof(zero));
    qrdma_obj_ctx_write(core, type, index, zero, len, what);
}

int qrdma_pble_get(struct qrdma_core *core, uint64_t index, uint64_t *val,
                   const char *what)
{
    uint8_t raw[8];
    uint64_t gpa;

    if (!core->hmc.committed || index >= core->hmc.count[QRDMA_HMC_PBLE]) {
        qrdma_guest_error(core,
                          "%s: PBLE %" PRIu64 " is beyond the %u committed",
                          what, index,
                          core->hmc.committed ? core->hmc.count[QRDMA_HMC_PBLE]
                                              : 0);
        return QRDMA_PBLE_ERR_RANGE;
    }
    if (qrdma_core_hmc_object(core, QRDMA_HMC_PBLE, (uint32_t)index, &gpa)) {
        qrdma_guest_error(core,
                          "%s: PBLE %" PRIu64 ": its HMC page is not backed",
                          what, index);
        return QRDMA_PBLE_ERR_HMC;
    }
    core->stats.guest_lookups++;
    if (core->env.dma_read(core->env.opaque, gpa, raw, sizeof(raw))) {
        qrdma_guest_error(core,
                          "%s: PBLE %" PRIu64 " at 0x%" PRIx64
                          " is not guest RAM",
                          what, index, gpa);
        return QRDMA_PBLE_ERR_HMC;
    }
    *val = qrdma_ld_le64(raw);
    return 0;
}

/* Is [addr, addr + len) guest RAM? Probes both ends, as qrdma_ring_in_ram. */
static bool span_in_ram(struct qrdma_core *core, uint64_t addr, uint64_t len)
{
    uint8_t probe;

    core->stats.guest_lookups += 2;
    return len && addr + len - 1 >= addr &&
           !core->env.dma_read(core->env.opaque, addr, &probe, 1) &&
           !core->env.dma_read(core->env.opaque, addr + len - 1, &probe, 1);
}

static uint64_t queue_bytes(const struct qrdma_queue *q)
{
    return (uint64_t)1 << (q->size_log2 + q->stride_log2);
}

struct cqp_result qrdma_queue_check(struct qrdma_core *core,
                                    const struct qrdma_queue *q,
                                    struct cqp_result bad_addr,
                                    const char *what)
{
    uint64_t bytes = queue_bytes(q);
    uint64_t pages = (bytes + RING_PAGE_SIZE - 1) / RING_PAGE_SIZE;
    uint32_t pble_count = core->hmc.count[QRDMA_HMC_PBLE];
    uint64_t i;

    if (!q->virtmap) {
        if (!qrdma_ring_in_ram(core, q->addr, bytes)) {
            qrdma_guest_error(core,
                              "%s: ring at 0x%" PRIx64 " (%" PRIu64
                              " bytes) is not "
                              "4 KB aligned guest RAM",
                              what, q->addr, bytes);
            return bad_addr;
        }
        return cqp_ok;
    }
    /* Callers keep rings within QRDMA_QUEUE_MAX_BYTES: at most 2048 pages. */
    if (q->addr >= pble_count || pages > pble_count - q->addr) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_RANGE,
                              "%s: ring PBLEs %" PRIu64 "..%" PRIu64
                              " are beyond the %u "
                              "committed",
                              what, q->addr, q->addr + pages - 1, pble_count);
    }
    for (i = 0; i < pages; i++) {
        uint64_t page, len = bytes - i * RING_PAGE_SIZE;
        int err = qrdma_pble_get(core, q->addr + i, &page, what);

        if (err) {
            return (struct cqp_result){ .major = QRDMA_CQP_ERR_PBLE,
                                        .minor = err };
        }
        if (page & (RING_PAGE_SIZE - 1)) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_PBLE,
                                  QRDMA_PBLE_ERR_ALIGN,
                                  "%s: ring page %" PRIu64 " (PBLE %" PRIu64
                                  ") at 0x%" PRIx64 " is not 4 KB aligned",
                                  what, i, q->addr + i, page);
        }
        if (!span_in_ram(core, page,
                         len < RING_PAGE_SIZE ? len : RING_PAGE_SIZE)) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_PBLE,
                                  QRDMA_PBLE_ERR_NOT_RAM,
                                  "%s: ring page %" PRIu64 " (PBLE %" PRIu64
                                  ") at 0x%" PRIx64 " is not guest RAM",
                                  what, i, q->addr + i, page);
        }
    }
    return cqp_ok;
}

int qrdma_queue_addr(struct qrdma_core *core, const struct qrdma_queue *q,
                     uint64_t offset, uint64_t *gpa)
{
    return qrdma_queue_addr_of(core, q, "ring", 0, offset, gpa);
}

int qrdma_queue_addr_of(struct qrdma_core *core, const struct qrdma_queue *q,
                        const char *kind, uint32_t id, uint64_t offset,
                        uint64_t *gpa)
{
    uint64_t page;
    int err;

    if (offset >= queue_bytes(q)) {
        qrdma_guest_error(core,
                          "%s %u: ring offset %" PRIu64
                          " is beyond its %" PRIu64 " bytes",
                          kind, id, offset, queue_bytes(q));
        return QRDMA_PBLE_ERR_RANGE;
    }
    if (!q->virtmap) {
        *gpa = q->addr + offset;
        return 0;
    }
    /*
     * Read on every use: the driver may not change it, but the device never
     * trusts that.
     */
    err = qrdma_pble_get(core, q->addr + offset / RING_PAGE_SIZE, &page, kind);
    if (err) {
        return err;
    }
    if (page & (RING_PAGE_SIZE - 1)) {
        qrdma_guest_error(core, "%s %u: ring PBLE %" PRIu64 " holds 0x%" PRIx64
                          ", not a 4 KB aligned page", kind, id,
                          q->addr + offset / RING_PAGE_SIZE, page);
        return QRDMA_PBLE_ERR_ALIGN;
    }
    *gpa = page + (offset & (RING_PAGE_SIZE - 1));
    return 0;
}

/*
 * Where struct qrdma_av keeps each field (the minor of an INFO error names it).
 */
#define AV_OFF(f) offsetof(struct qrdma_av, f)

unsigned qrdma_av_parse(struct qrdma_core *core, const uint8_t *raw,
                        struct qrdma_av_info *av, const char *what)
{
    static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0,    0,
                                           0, 0, 0, 0, 0xff, 0xff };
    const struct qrdma_gid_entry *sgid;
    bool dgid_v4;

    memcpy(av->dgid, raw + AV_OFF(dgid), sizeof(av->dgid));
    memcpy(av->dmac, raw + AV_OFF(dmac), sizeof(av->dmac));
    av->sgid_index = raw[AV_OFF(sgid_index)];
    av->hop_limit = raw[AV_OFF(hop_limit)];
    av->traffic_class = raw[AV_OFF(traffic_class)];
    av->flow_label = qrdma_ld_le32(raw + AV_OFF(flow_label));

    if (raw[AV_OFF(reserved)] | raw[AV_OFF(reserved) + 1] |
        raw[AV_OFF(reserved) + 2]) {
        qrdma_guest_error(core, "%s: address vector: reserved bytes are not 0",
                          what);
        return 1 + AV_OFF(reserved);
    }
    if (av->sgid_index >= core->cfg.gid_table_len ||
        !core->gids[av->sgid_index].valid) {
        qrdma_guest_error(
            core,
            "%s: address vector: SGID index %u names no GID (table of %u)",
            what, av->sgid_index, core->cfg.gid_table_len);
        return 1 + AV_OFF(sgid_index);
    }
    if (av->flow_label > 0xfffff) {
        qrdma_guest_error(core,
                          "%s: address vector: flow label 0x%x is over 20 bits",
                          what, av->flow_label);
        return 1 + AV_OFF(flow_label);
    }
    /* RoCEv2 over IPv4 or IPv6: both ends must speak the same. */
    sgid = &core->gids[av->sgid_index];
    if (qrdma_dp_host_port(core) && !qrdma_dp_host_gid(core, sgid->gid)) {
        char g[QRDMA_GID_STR_LEN];

        /* ADD_GID took it from the host, which has dropped it since. */
        qrdma_gid_str(sgid->gid, g, sizeof(g));
        qrdma_guest_error(core,
                          "%s: address vector: SGID %u (%s) is not a GID of "
                          "the host port any more",
                          what, av->sgid_index, g);
        return 1 + AV_OFF(sgid_index);
    }
    dgid_v4 = !memcmp(av->dgid, v4_prefix, sizeof(v4_prefix));
    if (dgid_v4 != (sgid->type == QRDMA_GID_TYPE_ROCE_V2_IPV4)) {
        qrdma_guest_error(
            core, "%s: address vector: DGID is %s but SGID %u is %s", what,
            dgid_v4 ? "IPv4-mapped" : "IPv6", av->sgid_index,
            sgid->type == QRDMA_GID_TYPE_ROCE_V2_IPV4 ? "IPv4-mapped" : "IPv6");
        return 1 + AV_OFF(dgid);
    }
    return 0;
}

void qrdma_av_store(uint8_t *raw, const struct qrdma_av_info *av)
{
    memset(raw, 0, sizeof(struct qrdma_av));
    memcpy(raw + AV_OFF(dgid), av->dgid, sizeof(av->dgid));
    memcpy(raw + AV_OFF(dmac), av->dmac, sizeof(av->dmac));
    raw[AV_OFF(sgid_index)] = av->sgid_index;
    raw[AV_OFF(hop_limit)] = av->hop_limit;
    raw[AV_OFF(traffic_class)] = av->traffic_class;
    qrdma_st_le32(raw + AV_OFF(flow_label), av->flow_label);
}

/* A 2^log2-entry work or completion queue the limits allow? */
static bool wq_size_ok(unsigned log2, unsigned min, unsigned max,
                       uint32_t max_entries)
{
    return log2 >= min && log2 <= max &&
           (1ull << log2) <= (uint64_t)max_entries + 1;
}

/* ---- CQs ----------------------------------------------------------------- */

#define CQ_ARG0_FIELDS (QRDMA_CQ_ARG0_ID_MASK | QRDMA_CQ_ARG0_CEQ_MASK | \
                        QRDMA_CQ_ARG0_SIZE_MASK | QRDMA_CQ_ARG0_CEQ_ENABLE | \
                        QRDMA_CQ_ARG0_VIRTMAP | QRDMA_CQ_ARG0_DB_PAGE_MASK)
#define CQ_ARG0_EVENTS (QRDMA_CQ_ARG0_CEQ_MASK | QRDMA_CQ_ARG0_CEQ_ENABLE | \
                        QRDMA_CQ_ARG0_DB_PAGE_MASK)

static uint64_t cq_arg0(const struct qrdma_cq *cq, uint32_t id)
{
    return id | (uint64_t)cq->ceq_id << QRDMA_CQ_ARG0_CEQ_SHIFT |
           (uint64_t)cq->ring.size_log2 << QRDMA_CQ_ARG0_SIZE_SHIFT |
           (cq->ceq_enable ? QRDMA_CQ_ARG0_CEQ_ENABLE : 0) |
           (cq->ring.virtmap ? QRDMA_CQ_ARG0_VIRTMAP : 0) |
           (uint64_t)cq->db_page << QRDMA_CQ_ARG0_DB_PAGE_SHIFT;
}

static void cq_ctx_render(const struct qrdma_cq *cq, uint32_t id, uint8_t *ctx)
{
    memset(ctx, 0, CTX_SIZE);
    qrdma_st_le64(ctx,
                  (cq_arg0(cq, id) & ~QRDMA_CQ_CTX_VALID) | QRDMA_CQ_CTX_VALID);
    qrdma_st_le64(ctx + 8, cq->cq_ctx);
    qrdma_st_le64(ctx + 16, cq->ring.addr);
    qrdma_st_le64(ctx + 24, cq->shadow);
    qrdma_st_le64(ctx + 32, cq->tail);
    qrdma_st_le64(ctx + 40, cq->polarity);
}

/* arg0 of CREATE_CQ / MODIFY_CQ: reserved bits, ID in the layout. */
static struct cqp_result cq_arg0_check(struct qrdma_core *core, uint64_t arg0,
                                       const char *cmd)
{
    if (arg0 & ~CQ_ARG0_FIELDS) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: arg0 0x%" PRIx64
                              " sets reserved bits 0x%" PRIx64,
                              cmd, arg0, (uint64_t)(arg0 & ~CQ_ARG0_FIELDS));
    }
    return qrdma_obj_id_check(core, QRDMA_HMC_CQ, arg0 & QRDMA_CQ_ARG0_ID_MASK,
                              cmd);
}

/* The size in arg0 of CREATE_CQ / MODIFY_CQ. */
static struct cqp_result cq_size_check(struct qrdma_core *core, uint64_t arg0,
                                       const char *cmd)
{
    unsigned log2 = (arg0 & QRDMA_CQ_ARG0_SIZE_MASK) >>
                    QRDMA_CQ_ARG0_SIZE_SHIFT;

    if (!wq_size_ok(log2, QRDMA_CQ_SIZE_LOG2_MIN, QRDMA_CQ_SIZE_LOG2_MAX,
                    core->cfg.max_cqe)) {
        return qrdma_cqp_fail(
            core, QRDMA_CQP_ERR_INVALID_ARG, 0,
            "%s: CQ %u: SIZE_LOG2 %u is outside %u..%u or above CAP_MAX_CQE %u",
            cmd, (uint32_t)(arg0 & QRDMA_CQ_ARG0_ID_MASK), log2,
            QRDMA_CQ_SIZE_LOG2_MIN, QRDMA_CQ_SIZE_LOG2_MAX, core->cfg.max_cqe);
    }
    return cqp_ok;
}

/* The new ring of CREATE_CQ / MODIFY_CQ (its size checked): its placement. */
static struct cqp_result cq_ring_check(struct qrdma_core *core,
                                       const uint64_t *arg, uint32_t id,
                                       struct qrdma_queue *ring,
                                       const char *cmd)
{
    char what[48];

    ring->addr = arg[2];
    ring->size_log2 = (arg[0] & QRDMA_CQ_ARG0_SIZE_MASK) >>
                      QRDMA_CQ_ARG0_SIZE_SHIFT;
    ring->stride_log2 = 5;      /* QRDMA_CQE_SIZE */
    ring->virtmap = !!(arg[0] & QRDMA_CQ_ARG0_VIRTMAP);
    snprintf(what, sizeof(what), "%s: CQ %u", cmd, id);
    return qrdma_queue_check(core, ring, bad_arg(2), what);
}

struct cqp_result qrdma_cqp_create_cq(struct qrdma_core *core,
                                      const uint64_t *arg)
{
    static const char cmd[] = "CREATE_CQ";
    uint32_t id = arg[0] & QRDMA_CQ_ARG0_ID_MASK;
    uint8_t ctx[CTX_SIZE], shadow[SHADOW_SIZE];
    struct cqp_result res;
    struct qrdma_cq cq;

    res = cq_arg0_check(core, arg[0], cmd);
    if (res.major) {
        return res;
    }
    if (core->obj.cq[id].valid) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_EXISTS,
                              "%s: CQ %u exists", cmd, id);
    }
    res = cq_size_check(core, arg[0], cmd);
    if (res.major) {
        return res;
    }
    memset(&cq, 0, sizeof(cq));
    cq.ceq_id = (arg[0] & QRDMA_CQ_ARG0_CEQ_MASK) >> QRDMA_CQ_ARG0_CEQ_SHIFT;
    cq.ceq_enable = !!(arg[0] & QRDMA_CQ_ARG0_CEQ_ENABLE);
    cq.db_page = (arg[0] & QRDMA_CQ_ARG0_DB_PAGE_MASK) >>
                 QRDMA_CQ_ARG0_DB_PAGE_SHIFT;
    if (cq.ceq_id >= core->cfg.max_ceq) {
        return qrdma_cqp_fail(
            core, QRDMA_CQP_ERR_INVALID_ARG, 0,
            "%s: CQ %u: CEQ %u is beyond the %u the device has", cmd, id,
            cq.ceq_id, core->cfg.max_ceq);
    }
    if (cq.db_page >= core->cfg.db_pages) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: CQ %u: doorbell page %u is beyond the %u the device has",
                              cmd, id, cq.db_page, core->cfg.db_pages);
    }
    if (cq.ceq_enable && !core->ceq[cq.ceq_id].created) {
        return qrdma_cqp_fail(
            core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND,
            "%s: CQ %u: its events go to CEQ %u, which does not exist", cmd, id,
            cq.ceq_id);
    }
    if (arg[1] & ~QRDMA_CEQE_CQ_CTX_MASK) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: CQ %u: CQ_CTX 0x%" PRIx64 " has bit 63 set",
                              cmd, id, arg[1]);
    }
    if ((arg[3] & (SHADOW_SIZE - 1)) ||
        core->env.dma_read(core->env.opaque, arg[3], shadow, sizeof(shadow))) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 3,
                              "%s: CQ %u: shadow area 0x%" PRIx64
                              " is not 64 bytes of "
                              "64-byte aligned guest RAM",
                              cmd, id, arg[3]);
    }
    res = cq_ring_check(core, arg, id, &cq.ring, cmd);
    if (res.major) {
        return res;
    }
    cq.cq_ctx = arg[1];
    cq.shadow = arg[3];
    cq.polarity = true;
    cq.valid = true;

    cq_ctx_render(&cq, id, ctx);
    res = qrdma_obj_ctx_write(core, QRDMA_HMC_CQ, id, ctx, sizeof(ctx), cmd);
    if (res.major) {
        return res;
    }
    core->obj.cq[id] = cq;
    qrdma_obj_count_inc(core, QRDMA_HMC_CQ);
    return cqp_ok;
}

struct cqp_result qrdma_cqp_modify_cq(struct qrdma_core *core,
                                      const uint64_t *arg)
{
    static const char cmd[] = "MODIFY_CQ";
    uint32_t id = arg[0] & QRDMA_CQ_ARG0_ID_MASK;
    struct qrdma_cq *cq, next;
    uint8_t ctx[CTX_SIZE];
    struct cqp_result res;

    res = cq_arg0_check(core, arg[0], cmd);
    if (res.major) {
        return res;
    }
    cq = &core->obj.cq[id];
    if (!cq->valid) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE,
                              QRDMA_STATE_ERR_NOT_FOUND,
                              "%s: CQ %u does not exist", cmd, id);
    }
    /* A resize moves the ring only: where events and doorbells go stays. */
    if ((arg[0] & CQ_ARG0_EVENTS) != (cq_arg0(cq, id) & CQ_ARG0_EVENTS)) {
        return qrdma_cqp_fail(
            core, QRDMA_CQP_ERR_INVALID_ARG, 0,
            "%s: CQ %u: CEQ_ID, CEQ_ENABLE and DB_PAGE must not change", cmd,
            id);
    }
    res = cq_size_check(core, arg[0], cmd);
    if (res.major) {
        return res;
    }
    next = *cq;
    res = cq_ring_check(core, arg, id, &next.ring, cmd);
    if (res.major) {
        return res;
    }
    /*
     * CQEs written before this completion are in the old ring; later ones start
     * the new.
     */
    next.tail = 0;
    next.head_seen = 0;
    next.polarity = true;

    cq_ctx_render(&next, id, ctx);
    res = qrdma_obj_ctx_write(core, QRDMA_HMC_CQ, id, ctx, sizeof(ctx), cmd);
    if (res.major) {
        return res;
    }
    *cq = next;
    return cqp_ok;
}

struct cqp_result qrdma_cqp_destroy_cq(struct qrdma_core *core,
                                       const uint64_t *arg)
{
    static const char cmd[] = "DESTROY_CQ";
    uint32_t id = arg[0] & QRDMA_CQ_ARG0_ID_MASK;
    struct cqp_result res;
    struct qrdma_cq *cq;

    if (arg[0] & ~QRDMA_CQ_ARG0_ID_MASK) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: arg0 0x%" PRIx64 " is not a CQ_ID", cmd,
                              arg[0]);
    }
    res = qrdma_obj_id_check(core, QRDMA_HMC_CQ, id, cmd);
    if (res.major) {
        return res;
    }
    cq = &core->obj.cq[id];
    if (!cq->valid) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE,
                              QRDMA_STATE_ERR_NOT_FOUND,
                              "%s: CQ %u does not exist", cmd, id);
    }
    if (cq->refs) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_BUSY,
                              "%s: CQ %u is still used by QPs (%u references)",
                              cmd, id, cq->refs);
    }
    obj_ctx_clear(core, QRDMA_HMC_CQ, id, CTX_SIZE, cmd);
    qrdma_dp_cq_destroy(core, id);
    memset(cq, 0, sizeof(*cq));
    qrdma_obj_count_dec(core, QRDMA_HMC_CQ);
    return cqp_ok;
}

/* ---- SRQs ---------------------------------------------------------------- */

#define SRQ_ARG0_FIELDS (QRDMA_SRQ_ARG0_ID_MASK | QRDMA_SRQ_ARG0_SIZE_MASK | \
                         QRDMA_SRQ_ARG0_WQE_MASK | QRDMA_SRQ_ARG0_VIRTMAP)
#define SRQ_ARG1_FIELDS (QRDMA_SRQ_ARG1_PD_MASK | QRDMA_SRQ_ARG1_LIMIT_MASK)

static void srq_ctx_render(const struct qrdma_srq *srq, uint32_t id,
                           uint8_t *ctx)
{
    uint64_t arg0 = id |
                    (uint64_t)srq->ring.size_log2 << QRDMA_SRQ_ARG0_SIZE_SHIFT |
                    (uint64_t)srq->ring.stride_log2
                        << QRDMA_SRQ_ARG0_WQE_SHIFT |
                    (srq->ring.virtmap ? QRDMA_SRQ_ARG0_VIRTMAP : 0);

    memset(ctx, 0, CTX_SIZE);
    qrdma_st_le64(ctx, arg0 | QRDMA_SRQ_CTX_VALID);
    qrdma_st_le64(ctx + 8,
                  srq->pd | (uint64_t)srq->limit << QRDMA_SRQ_ARG1_LIMIT_SHIFT);
    qrdma_st_le64(ctx + 16, srq->ring.addr);
    qrdma_st_le64(ctx + 24, srq->shadow);
    qrdma_st_le64(ctx + 32, srq->srq_ctx);
}

/* arg0 of the SRQ commands that name an existing SRQ and nothing else there. */
static struct cqp_result srq_lookup(struct qrdma_core *core, uint64_t arg0,
                                    const char *cmd, struct qrdma_srq **srqp)
{
    uint32_t id = arg0 & QRDMA_SRQ_ARG0_ID_MASK;
    struct cqp_result res;

    if (arg0 & ~QRDMA_SRQ_ARG0_ID_MASK) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: arg0 0x%" PRIx64 " is not an SRQ_ID", cmd,
                              arg0);
    }
    res = qrdma_obj_id_check(core, QRDMA_HMC_SRQ, id, cmd);
    if (res.major) {
        return res;
    }
    if (!core->obj.srq[id].valid) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE,
                              QRDMA_STATE_ERR_NOT_FOUND,
                              "%s: SRQ %u does not exist", cmd, id);
    }
    *srqp = &core->obj.srq[id];
    return cqp_ok;
}

struct cqp_result qrdma_cqp_create_srq(struct qrdma_core *core,
                                       const uint64_t *arg)
{
    static const char cmd[] = "CREATE_SRQ";
    uint32_t id = arg[0] & QRDMA_SRQ_ARG0_ID_MASK;
    uint8_t ctx[CTX_SIZE], shadow[SHADOW_SIZE];
    struct qrdma_srq srq;
    struct cqp_result res;
    char what[48];
    int ret;

    if (arg[0] & ~SRQ_ARG0_FIELDS) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: arg0 0x%" PRIx64 " sets reserved bits", cmd,
                              arg[0]);
    }
    if (arg[1] & ~SRQ_ARG1_FIELDS) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: arg1 0x%" PRIx64 " sets reserved bits", cmd,
                              arg[1]);
    }
    res = qrdma_obj_id_check(core, QRDMA_HMC_SRQ, id, cmd);
    if (res.major) {
        return res;
    }
    if (core->obj.srq[id].valid) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_EXISTS,
                              "%s: SRQ %u exists", cmd, id);
    }
    memset(&srq, 0, sizeof(srq));
    srq.ring.size_log2 = (arg[0] & QRDMA_SRQ_ARG0_SIZE_MASK) >>
                         QRDMA_SRQ_ARG0_SIZE_SHIFT;
    srq.ring.stride_log2 = (arg[0] & QRDMA_SRQ_ARG0_WQE_MASK) >>
                           QRDMA_SRQ_ARG0_WQE_SHIFT;
    srq.ring.virtmap = !!(arg[0] & QRDMA_SRQ_ARG0_VIRTMAP);
    srq.ring.addr = arg[2];
    srq.pd = arg[1] & QRDMA_SRQ_ARG1_PD_MASK;
    srq.limit = (arg[1] & QRDMA_SRQ_ARG1_LIMIT_MASK) >>
                QRDMA_SRQ_ARG1_LIMIT_SHIFT;
    if (!wq_size_ok(srq.ring.size_log2, QRDMA_WQ_SIZE_LOG2_MIN,
                    QRDMA_WQ_SIZE_LOG2_MAX, core->cfg.max_srq_wr)) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: SRQ %u: SIZE_LOG2 %u is outside %u..%u or above "
                              "CAP_MAX_SRQ_WR %u", cmd, id, srq.ring.size_log2,
                              QRDMA_WQ_SIZE_LOG2_MIN, QRDMA_WQ_SIZE_LOG2_MAX,
                              core->cfg.max_srq_wr);
    }
    if (srq.ring.stride_log2 < QRDMA_WQE_LOG2_MIN ||
        srq.ring.stride_log2 > QRDMA_WQE_LOG2_MAX) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: SRQ %u: WQE_LOG2 %u is outside %u..%u", cmd,
                              id, srq.ring.stride_log2, QRDMA_WQE_LOG2_MIN,
                              QRDMA_WQE_LOG2_MAX);
    }
    if (queue_bytes(&srq.ring) > QRDMA_QUEUE_MAX_BYTES) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: SRQ %u: a ring of %" PRIu64
                              " bytes is over %u",
                              cmd, id, queue_bytes(&srq.ring),
                              QRDMA_QUEUE_MAX_BYTES);
    }
    if (srq.pd >= core->cfg.max_pd) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: SRQ %u: PD %u is beyond CAP_MAX_PD %u", cmd,
                              id, srq.pd, core->cfg.max_pd);
    }
    if (srq.limit >> srq.ring.size_log2) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: SRQ %u: LIMIT %u is not below its %u WQEs",
                              cmd, id, srq.limit, 1u << srq.ring.size_log2);
    }
    if ((arg[3] & (SHADOW_SIZE - 1)) ||
        core->env.dma_read(core->env.opaque, arg[3], shadow, sizeof(shadow))) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 3,
                              "%s: SRQ %u: shadow area 0x%" PRIx64
                              " is not 64 bytes of "
                              "64-byte aligned guest RAM",
                              cmd, id, arg[3]);
    }
    if (arg[4] & ~QRDMA_CEQE_CQ_CTX_MASK) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 4,
                              "%s: SRQ %u: SRQ_CTX 0x%" PRIx64
                              " has bit 63 set",
                              cmd, id, arg[4]);
    }
    snprintf(what, sizeof(what), "%s: SRQ %u", cmd, id);
    res = qrdma_queue_check(core, &srq.ring, bad_arg(2), what);
    if (res.major) {
        return res;
    }
    srq.shadow = arg[3];
    srq.srq_ctx = arg[4];
    srq.valid = true;

    srq_ctx_render(&srq, id, ctx);
    res = qrdma_obj_ctx_write(core, QRDMA_HMC_SRQ, id, ctx, sizeof(ctx), cmd);
    if (res.major) {
        return res;
    }
    core->obj.srq[id] = srq;
    qrdma_obj_count_inc(core, QRDMA_HMC_SRQ);
    ret = qrdma_dp_srq_create(core, id);
    if (ret) {
        /* The backend could not make its SRQ: undo, as if never created. */
        obj_ctx_clear(core, QRDMA_HMC_SRQ, id, CTX_SIZE, cmd);
        memset(&core->obj.srq[id], 0, sizeof(core->obj.srq[id]));
        qrdma_obj_count_dec(core, QRDMA_HMC_SRQ);
        if (ret == -ENOMEM) {
            return qrdma_cqp_fail(
                core, QRDMA_CQP_ERR_NO_RESOURCE, QRDMA_RESOURCE_ERR_HOST,
                "%s: SRQ %u: the device is out of host resources", cmd, id);
        }
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: SRQ %u: the backend refuses it", cmd, id);
    }
    return cqp_ok;
}

struct cqp_result qrdma_cqp_modify_srq(struct qrdma_core *core,
                                       const uint64_t *arg)
{
    static const char cmd[] = "MODIFY_SRQ";
    uint32_t id = arg[0] & QRDMA_SRQ_ARG0_ID_MASK;
    uint32_t limit = (arg[1] & QRDMA_SRQ_ARG1_LIMIT_MASK) >>
                     QRDMA_SRQ_ARG1_LIMIT_SHIFT;
    struct qrdma_srq *srq, next;
    uint8_t ctx[CTX_SIZE];
    struct cqp_result res;
    int ret;

    res = srq_lookup(core, arg[0], cmd, &srq);
    if (res.major) {
        return res;
    }
    if (arg[1] & ~QRDMA_SRQ_ARG1_LIMIT_MASK) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: SRQ %u: arg1 0x%" PRIx64
                              " sets bits other than LIMIT",
                              cmd, id, arg[1]);
    }
    if (limit >> srq->ring.size_log2) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: SRQ %u: LIMIT %u is not below its %u WQEs",
                              cmd, id, limit, 1u << srq->ring.size_log2);
    }
    ret = qrdma_dp_srq_modify(core, id, limit);
    if (ret) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: SRQ %u: the backend cannot set LIMIT %u",
                              cmd, id, limit);
    }
    next = *srq;
    next.limit = limit;
    srq_ctx_render(&next, id, ctx);
    res = qrdma_obj_ctx_write(core, QRDMA_HMC_SRQ, id, ctx, sizeof(ctx), cmd);
    if (res.major) {
        return res;
    }
    *srq = next;
    return cqp_ok;
}

struct cqp_result qrdma_cqp_query_srq(struct qrdma_core *core,
                                      const uint64_t *arg)
{
    struct qrdma_srq *srq;
    struct cqp_result res;

    res = srq_lookup(core, arg[0], "QUERY_SRQ", &srq);
    if (res.major) {
        return res;
    }
    res.retval = srq->limit | (uint64_t)srq->outstanding << 32;
    return res;
}

struct cqp_result qrdma_cqp_destroy_srq(struct qrdma_core *core,
                                        const uint64_t *arg)
{
    static const char cmd[] = "DESTROY_SRQ";
    uint32_t id = arg[0] & QRDMA_SRQ_ARG0_ID_MASK;
    struct qrdma_srq *srq;
    struct cqp_result res;

    res = srq_lookup(core, arg[0], cmd, &srq);
    if (res.major) {
        return res;
    }
    if (srq->refs) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_BUSY,
                              "%s: SRQ %u is still used by %u QPs", cmd, id,
                              srq->refs);
    }
    qrdma_dp_srq_destroy(core, id);
    obj_ctx_clear(core, QRDMA_HMC_SRQ, id, CTX_SIZE, cmd);
    memset(srq, 0, sizeof(*srq));
    qrdma_obj_count_dec(core, QRDMA_HMC_SRQ);
    return cqp_ok;
}

/* ---- AHs ----------------------------------------------------------------- */

#define AH_ARG0_FIELDS (QRDMA_AH_ARG0_ID_MASK | QRDMA_AH_ARG0_PD_MASK)

/* CREATE_AH and MODIFY_AH: the same arguments, for a new or an existing AH. */
static struct cqp_result ah_set(struct qrdma_core *core, const uint64_t *arg,
                                bool create)
{
    const char *cmd = create ? "CREATE_AH" : "MODIFY_AH";
    uint32_t id = arg[0] & QRDMA_AH_ARG0_ID_MASK;
    uint8_t raw[sizeof(struct qrdma_av)], ctx[CTX_SIZE];
    struct cqp_result res;
    struct qrdma_ah ah;
    unsigned bad;
    char what[32];

    if (arg[0] & ~AH_ARG0_FIELDS) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: arg0 0x%" PRIx64 " sets reserved bits", cmd,
                              arg[0]);
    }
    res = qrdma_obj_id_check(core, QRDMA_HMC_AH, id, cmd);
    if (res.major) {
        return res;
    }
    if (create && core->obj.ah[id].valid) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_EXISTS,
                              "%s: AH %u exists", cmd, id);
    }
    if (!create && !core->obj.ah[id].valid) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE,
                              QRDMA_STATE_ERR_NOT_FOUND,
                              "%s: AH %u does not exist", cmd, id);
    }
    memset(&ah, 0, sizeof(ah));
    ah.pd = (arg[0] & QRDMA_AH_ARG0_PD_MASK) >> QRDMA_AH_ARG0_PD_SHIFT;
    if (ah.pd >= core->cfg.max_pd) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: AH %u: PD %u is beyond CAP_MAX_PD %u", cmd,
                              id, ah.pd, core->cfg.max_pd);
    }
    if ((arg[1] & 7) ||
        core->env.dma_read(core->env.opaque, arg[1], raw, sizeof(raw))) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: AH %u: address vector 0x%" PRIx64
                              " is not 8-byte aligned "
                              "guest RAM",
                              cmd, id, arg[1]);
    }
    snprintf(what, sizeof(what), "%s: AH %u", cmd, id);
    bad = qrdma_av_parse(core, raw, &ah.av, what);
    if (bad) {
        return (struct cqp_result){ .major = QRDMA_CQP_ERR_INFO,
                                    .minor = bad - 1 };
    }
    ah.valid = true;

    memset(ctx, 0, sizeof(ctx));
    qrdma_st_le64(ctx, (arg[0] & AH_ARG0_FIELDS) | QRDMA_AH_CTX_VALID);
    qrdma_av_store(ctx + 8, &ah.av);
    res = qrdma_obj_ctx_write(core, QRDMA_HMC_AH, id, ctx, sizeof(ctx), cmd);
    if (res.major) {
        return res;
    }
    core->obj.ah[id] = ah;
    if (create) {
        qrdma_obj_count_inc(core, QRDMA_HMC_AH);
    }
    return cqp_ok;
}

struct cqp_result qrdma_cqp_create_ah(struct qrdma_core *core,
                                      const uint64_t *arg)
{
    return ah_set(core, arg, true);
}

struct cqp_result qrdma_cqp_modify_ah(struct qrdma_core *core,
                                      const uint64_t *arg)
{
    return ah_set(core, arg, false);
}

struct cqp_result qrdma_cqp_destroy_ah(struct qrdma_core *core,
                                       const uint64_t *arg)
{
    static const char cmd[] = "DESTROY_AH";
    uint32_t id = arg[0] & QRDMA_AH_ARG0_ID_MASK;
    struct cqp_result res;

    if (arg[0] & ~QRDMA_AH_ARG0_ID_MASK) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: arg0 0x%" PRIx64 " is not an AH_ID", cmd,
                              arg[0]);
    }
    res = qrdma_obj_id_check(core, QRDMA_HMC_AH, id, cmd);
    if (res.major) {
        return res;
    }
    if (!core->obj.ah[id].valid) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE,
                              QRDMA_STATE_ERR_NOT_FOUND,
                              "%s: AH %u does not exist", cmd, id);
    }
    obj_ctx_clear(core, QRDMA_HMC_AH, id, CTX_SIZE, cmd);
    memset(&core->obj.ah[id], 0, sizeof(core->obj.ah[id]));
    qrdma_obj_count_dec(core, QRDMA_HMC_AH);
    return cqp_ok;
}
