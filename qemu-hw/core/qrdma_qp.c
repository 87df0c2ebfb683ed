/*
 * qrdma device core: QPs. CREATE_QP, MODIFY_QP, QUERY_QP and DESTROY_QP,
 * the IB QP state machine as one table, and the QP context in HMC. See
 * docs/hw-spec.md, section 17.
 *
 * The device is the truth about a QP: MODIFY_QP is checked against the
 * state the device holds (not the one the driver believes), applies every
 * attribute or none, and QUERY_QP reports what the device holds.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qrdma_core_int.h"
#include "qrdma/qrdma_qp_sm.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define CREATE_INFO_SIZE sizeof(struct qrdma_qp_create_info)
#define MODIFY_INFO_SIZE sizeof(struct qrdma_qp_modify_info)
#define CI(f) offsetof(struct qrdma_qp_create_info, f)
#define MI(f) offsetof(struct qrdma_qp_modify_info, f)

_Static_assert(CREATE_INFO_SIZE + MODIFY_INFO_SIZE <= QRDMA_QP_CTX_SIZE,
               "the QP context holds both infos");

static const struct cqp_result cqp_ok;

static const char *const qp_state_name[] = {
    [QRDMA_QPS_RESET] = "RESET",
    [QRDMA_QPS_INIT] = "INIT",
    [QRDMA_QPS_RTR] = "RTR",
    [QRDMA_QPS_RTS] = "RTS",
    [QRDMA_QPS_SQD] = "SQD",
    [QRDMA_QPS_SQE] = "SQE",
    [QRDMA_QPS_ERR] = "ERR",
};
_Static_assert(sizeof(qp_state_name) / sizeof(qp_state_name[0]) ==
                   QRDMA_QP_NUM_STATES,
               "a name for every state");

const char *qrdma_qp_state_name(unsigned s)
{
    return s < QRDMA_QP_NUM_STATES ? qp_state_name[s] : "?";
}

/* ---- the state machine --------------------------------------------------- */

static const char *const qp_kind_name[QRDMA_QPK_NUM] = { "RC", "UC", "UD",
                                                         "GSI" };

static int qp_kind(uint8_t type, uint8_t flags)
{
    switch (type) {
    case QRDMA_QP_TYPE_RC:
        return QRDMA_QPK_RC;
    case QRDMA_QP_TYPE_UC:
        return QRDMA_QPK_UC;
    case QRDMA_QP_TYPE_UD:
        return flags & QRDMA_QP_CREATE_GSI ? QRDMA_QPK_GSI : QRDMA_QPK_UD;
    default:
        return -1;
    }
}

/*
 * Which transitions exist is qrdma_qp_transitions[] (qrdma/qrdma_qp_sm.h),
 * the table the transport checks too. Per transition and QP type, this
 * adds the attributes IB requires and those it allows besides (STATE
 * itself is always allowed), from IBTA vol. 1 section 11.2.4.2 (Modify
 * QP), as Linux's ib_modify_qp_is_ok() has them; an absent entry takes
 * no attribute but STATE. The GSI QP is a UD QP without PORT (its port
 * is implied), as ib_mad drives it.
 */
struct qp_transition_attrs {
    uint32_t req[QRDMA_QPK_NUM];
    uint32_t opt[QRDMA_QPK_NUM];
};

#define A(x) QRDMA_QP_ATTR_##x
#define K(x) QRDMA_QPK_##x

/* What RTR -> RTS, RTS -> RTS, SQD -> RTS (and SQE -> RTS) allow. */
#define TO_RTS_OPT_RC                                                   \
    (A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) | A(PATH_MIG_STATE) | \
     A(MIN_RNR_TIMER))
#define TO_RTS_OPT_UC \
    (A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) | A(PATH_MIG_STATE))
#define TO_RTS_OPT_UD (A(CUR_STATE) | A(QKEY))
#define TO_RTS_OPT { [K(RC)] = TO_RTS_OPT_RC, [K(UC)] = TO_RTS_OPT_UC, \
                     [K(UD)] = TO_RTS_OPT_UD, [K(GSI)] = TO_RTS_OPT_UD }

static const struct qp_transition_attrs
qp_transition_attrs[QRDMA_QP_NUM_STATES][QRDMA_QP_NUM_STATES] = {
    [QRDMA_QPS_RESET] = {
        [QRDMA_QPS_INIT] = {
            .req = {
                [K(RC)] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                [K(UC)] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                [K(UD)] = A(PKEY_INDEX) | A(PORT) | A(QKEY),
                [K(GSI)] = A(PKEY_INDEX) | A(QKEY),
            },
        },
    },
    [QRDMA_QPS_INIT] = {
        [QRDMA_QPS_INIT] = {
            .opt = {
                [K(RC)] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                [K(UC)] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                [K(UD)] = A(PKEY_INDEX) | A(PORT) | A(QKEY),
                [K(GSI)] = A(PKEY_INDEX) | A(QKEY),
            },
        },
        [QRDMA_QPS_RTR] = {
            .req = {
                [K(RC)] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
                          A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
                [K(UC)] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN),
            },
            .opt = {
                [K(RC)] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
                [K(UC)] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
                [K(UD)] = A(PKEY_INDEX) | A(QKEY),
                [K(GSI)] = A(PKEY_INDEX) | A(QKEY),
            },
        },
    },
    [QRDMA_QPS_RTR] = {
        [QRDMA_QPS_RTS] = {
            .req = {
                [K(RC)] = A(SQ_PSN) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
                          A(MAX_QP_RD_ATOMIC),
                [K(UC)] = A(SQ_PSN),
                [K(UD)] = A(SQ_PSN),
                [K(GSI)] = A(SQ_PSN),
            },
            .opt = TO_RTS_OPT,
        },
    },
    [QRDMA_QPS_RTS] = {
        [QRDMA_QPS_RTS] = { .opt = TO_RTS_OPT },
        [QRDMA_QPS_SQD] = {
            .opt = { [K(RC)] = A(EN_SQD_ASYNC), [K(UC)] = A(EN_SQD_ASYNC),
                     [K(UD)] = A(EN_SQD_ASYNC), [K(GSI)] = A(EN_SQD_ASYNC) },
        },
    },
    [QRDMA_QPS_SQD] = {
        [QRDMA_QPS_RTS] = { .opt = TO_RTS_OPT },
        /* A drained SQ is where a connected QP's path may be changed. */
        [QRDMA_QPS_SQD] = {
            .opt = {
                [K(RC)] = A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) |
                          A(RNR_RETRY) | A(MAX_QP_RD_ATOMIC) |
                          A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH) |
                          A(ACCESS_FLAGS) | A(PKEY_INDEX) | A(MIN_RNR_TIMER) |
                          A(PATH_MIG_STATE),
                [K(UC)] = A(AV) | A(ALT_PATH) | A(ACCESS_FLAGS) |
                          A(PKEY_INDEX) | A(PATH_MIG_STATE),
                [K(UD)] = A(PKEY_INDEX) | A(QKEY),
                [K(GSI)] = A(PKEY_INDEX) | A(QKEY),
            },
        },
    },
    [QRDMA_QPS_SQE] = {
        [QRDMA_QPS_RTS] = {
            .opt = { [K(UC)] = A(CUR_STATE) | A(ACCESS_FLAGS),
                     [K(UD)] = A(CUR_STATE) | A(QKEY),
                     [K(GSI)] = A(CUR_STATE) | A(QKEY) },
        },
    },
};

/* Bits of ATTR_MASK the device knows; of those, what it does not implement. */
#define QP_ATTR_KNOWN ((QRDMA_QP_ATTR_DEST_QPN << 1) - 1)
#define QP_ATTR_UNSUPPORTED (A(ALT_PATH) | A(PATH_MIG_STATE) | A(CAP))
/* Attributes kept and reported (the others are part of a transition only). */
#define QP_ATTR_STORED \
    (QP_ATTR_KNOWN & ~(A(STATE) | A(CUR_STATE) | A(EN_SQD_ASYNC)))

/* ---- contexts ------------------------------------------------------------ */

static void qp_create_info_render(const struct qrdma_qp *qp, uint8_t *p)
{
    memset(p, 0, CREATE_INFO_SIZE);
    qrdma_st_le32(p + CI(pd), qp->pd);
    p[CI(type)] = qp->type;
    p[CI(flags)] = qp->flags;
    qrdma_st_le16(p + CI(db_page), qp->db_page);
    qrdma_st_le32(p + CI(send_cq), qp->send_cq);
    qrdma_st_le32(p + CI(recv_cq), qp->recv_cq);
    qrdma_st_le32(p + CI(srq), qp->srq);
    p[CI(sq_size_log2)] = qp->sq.size_log2;
    p[CI(sq_wqe_log2)] = qp->sq.stride_log2;
    p[CI(rq_size_log2)] = qp->rq.size_log2;
    p[CI(rq_wqe_log2)] = qp->rq.stride_log2;
    qrdma_st_le64(p + CI(sq_addr), qp->sq.addr);
    qrdma_st_le64(p + CI(rq_addr), qp->rq.addr);
    qrdma_st_le64(p + CI(qp_ctx), qp->qp_ctx);
}

/* What QUERY_QP reports: the state, and every attribute set since RESET. */
static void qp_modify_info_render(const struct qrdma_qp *qp, uint8_t *p)
{
    const struct qrdma_qp_attrs *a = &qp->attr;

    memset(p, 0, MODIFY_INFO_SIZE);
    qrdma_st_le32(p + MI(attr_mask), a->set | QRDMA_QP_ATTR_STATE);
    p[MI(state)] = qp->state;
    p[MI(cur_state)] = qp->state;
    p[MI(path_mtu)] = a->path_mtu;
    p[MI(timeout)] = a->timeout;
    qrdma_st_le32(p + MI(sq_psn), a->sq_psn);
    qrdma_st_le32(p + MI(rq_psn), a->rq_psn);
    qrdma_st_le32(p + MI(dest_qpn), a->dest_qpn);
    qrdma_st_le32(p + MI(qkey), a->qkey);
    qrdma_st_le32(p + MI(access_flags), a->access_flags);
    qrdma_st_le16(p + MI(pkey_index), a->pkey_index);
    p[MI(retry_cnt)] = a->retry_cnt;
    p[MI(rnr_retry)] = a->rnr_retry;
    p[MI(min_rnr_timer)] = a->min_rnr_timer;
    p[MI(max_rd_atomic)] = a->max_rd_atomic;
    p[MI(max_dest_rd_atomic)] = a->max_dest_rd_atomic;
    p[MI(port_num)] = a->port_num;
    p[MI(sq_draining)] = qp->sq_draining;
    if (a->set & QRDMA_QP_ATTR_AV) {
        qrdma_av_store(p + MI(av), &a->av);
    }
}

/* The 256-byte context: create info (VALID in bit 63), then the modify info. */
static void qp_ctx_render(const struct qrdma_qp *qp, uint8_t *ctx)
{
    memset(ctx, 0, QRDMA_QP_CTX_SIZE);
    qp_create_info_render(qp, ctx);
    qrdma_st_le64(ctx, qrdma_ld_le64(ctx) | QRDMA_QP_CTX_VALID);
    qp_modify_info_render(qp, ctx + CREATE_INFO_SIZE);
}

/* ---- CREATE_QP ----------------------------------------------------------- */

static struct cqp_result info_fail(struct qrdma_core *core, size_t offset,
                                   const char *cmd, uint32_t id,
                                   const char *why)
{
    return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INFO, offset,
                          "%s: QP %u: info byte %zu: %s", cmd, id, offset, why);
}

/* arg0 of every QP command: reserved bits, an ID in the layout. */
static struct cqp_result qp_id_check(struct qrdma_core *core, uint64_t arg0,
                                     const char *cmd)
{
    if (arg0 & ~QRDMA_OBJ_ID_MASK) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: arg0 0x%" PRIx64 " is not a QP_ID", cmd,
                              arg0);
    }
    return qrdma_obj_id_check(core, QRDMA_HMC_QP, arg0, cmd);
}

static struct cqp_result qp_lookup(struct qrdma_core *core, uint64_t arg0,
                                   const char *cmd, struct qrdma_qp **qpp)
{
    struct cqp_result res = qp_id_check(core, arg0, cmd);

    if (res.major) {
        return res;
    }
    if (!core->obj.qp[arg0].valid) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE,
                              QRDMA_STATE_ERR_NOT_FOUND,
                              "%s: QP %u does not exist", cmd, (uint32_t)arg0);
    }
    *qpp = &core->obj.qp[arg0];
    return cqp_ok;
}

/* A work queue's size and stride (offsets of the two bytes for errors). */
static struct cqp_result wq_check(struct qrdma_core *core,
                                  const struct qrdma_queue *q, size_t size_off,
                                  size_t wqe_off, uint32_t id)
{
    static const char cmd[] = "CREATE_QP";
    char why[96];

    if (q->size_log2 < QRDMA_WQ_SIZE_LOG2_MIN ||
        q->size_log2 > QRDMA_WQ_SIZE_LOG2_MAX ||
        (1ull << q->size_log2) > (uint64_t)core->cfg.max_qp_wr + 1) {
        snprintf(why, sizeof(why),
                 "SIZE_LOG2 %u is outside %u..%u or above CAP_MAX_QP_WR %u",
                 q->size_log2, QRDMA_WQ_SIZE_LOG2_MIN, QRDMA_WQ_SIZE_LOG2_MAX,
                 core->cfg.max_qp_wr);
        return info_fail(core, size_off, cmd, id, why);
    }
    if (q->stride_log2 < QRDMA_WQE_LOG2_MIN ||
        q->stride_log2 > QRDMA_WQE_LOG2_MAX) {
        snprintf(why, sizeof(why), "WQE_LOG2 %u is outside %u..%u",
                 q->stride_log2, QRDMA_WQE_LOG2_MIN, QRDMA_WQE_LOG2_MAX);
        return info_fail(core, wqe_off, cmd, id, why);
    }
    if ((1ull << (q->size_log2 + q->stride_log2)) > QRDMA_QUEUE_MAX_BYTES) {
        snprintf(why, sizeof(why), "a ring of 2^%u bytes is over %u",
                 q->size_log2 + q->stride_log2, QRDMA_QUEUE_MAX_BYTES);
        return info_fail(core, size_off, cmd, id, why);
    }
    return cqp_ok;
}

/*
 * A CQ or SRQ ID field: within the layout (else INFO), existing (else
 * NOT_FOUND).
 */
static struct cqp_result qp_ref_check(struct qrdma_core *core,
                                      enum qrdma_hmc_type t, uint32_t ref,
                                      size_t off, const char *field,
                                      uint32_t id)
{
    bool exists;

    if (ref >= core->hmc.count[t]) {
        return qrdma_cqp_fail(
            core, QRDMA_CQP_ERR_INFO, off,
            "CREATE_QP: QP %u: info byte %zu: %s %u is beyond the %u "
            "committed",
            id, off, field, ref, core->hmc.count[t]);
    }
    exists = t == QRDMA_HMC_CQ ? core->obj.cq[ref].valid
                               : core->obj.srq[ref].valid;
    if (!exists) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE,
                              QRDMA_STATE_ERR_NOT_FOUND,
                              "CREATE_QP: QP %u: %s %u does not exist", id,
                              field, ref);
    }
    return cqp_ok;
}

/* Parse and check a create info into qp; nothing is changed. */
static struct cqp_result qp_create_parse(struct qrdma_core *core,
                                         const uint8_t *p, uint32_t id,
                                         struct qrdma_qp *qp)
{
    static const char cmd[] = "CREATE_QP";
    bool with_srq;
    struct cqp_result res;
    char why[96];

    memset(qp, 0, sizeof(*qp));
    qp->pd = qrdma_ld_le32(p + CI(pd));
    qp->type = p[CI(type)];
    qp->flags = p[CI(flags)];
    qp->db_page = qrdma_ld_le16(p + CI(db_page));
    qp->send_cq = qrdma_ld_le32(p + CI(send_cq));
    qp->recv_cq = qrdma_ld_le32(p + CI(recv_cq));
    qp->srq = qrdma_ld_le32(p + CI(srq));
    qp->sq.size_log2 = p[CI(sq_size_log2)];
    qp->sq.stride_log2 = p[CI(sq_wqe_log2)];
    qp->rq.size_log2 = p[CI(rq_size_log2)];
    qp->rq.stride_log2 = p[CI(rq_wqe_log2)];
    qp->sq.addr = qrdma_ld_le64(p + CI(sq_addr));
    qp->rq.addr = qrdma_ld_le64(p + CI(rq_addr));
    qp->qp_ctx = qrdma_ld_le64(p + CI(qp_ctx));
    qp->sq.virtmap = !!(qp->flags & QRDMA_QP_CREATE_SQ_VIRTMAP);
    qp->rq.virtmap = !!(qp->flags & QRDMA_QP_CREATE_RQ_VIRTMAP);
    with_srq = !!(qp->flags & QRDMA_QP_CREATE_SRQ);

    if (qp->pd >= core->cfg.max_pd) {
        snprintf(why, sizeof(why), "PD %u is beyond CAP_MAX_PD %u", qp->pd,
                 core->cfg.max_pd);
        return info_fail(core, CI(pd), cmd, id, why);
    }
    if (qp_kind(qp->type, qp->flags) < 0) {
        snprintf(why, sizeof(why), "type %u is not RC (2), UC (3) or UD (4)",
                 qp->type);
        return info_fail(core, CI(type), cmd, id, why);
    }
    if (qp->flags & ~QRDMA_QP_CREATE_FLAGS_MASK) {
        snprintf(why, sizeof(why), "flags 0x%x set reserved bits", qp->flags);
        return info_fail(core, CI(flags), cmd, id, why);
    }
    if (with_srq && (qp->flags & QRDMA_QP_CREATE_RQ_VIRTMAP)) {
        return info_fail(core, CI(flags), cmd, id,
                         "RQ_VIRTMAP with SRQ: there is no RQ");
    }
    /* QP 1 exists only as the GSI QP, and only QP 1 may be it. */
    if ((id == QRDMA_QP_GSI) != !!(qp->flags & QRDMA_QP_CREATE_GSI)) {
        return info_fail(core, CI(flags), cmd, id, id == QRDMA_QP_GSI
                         ? "QP 1 is created only as the GSI QP (flag GSI)"
                         : "flag GSI on a QP other than QP 1");
    }
    if ((qp->flags & QRDMA_QP_CREATE_GSI) && qp->type != QRDMA_QP_TYPE_UD) {
        return info_fail(core, CI(type), cmd, id, "the GSI QP is UD");
    }
    if ((qp->flags & QRDMA_QP_CREATE_GSI) &&
        !(core->regs[QRDMA_REG_CAP_FEATURES / 4] & QRDMA_FEATURE_GSI)) {
        /*
         * A host NIC's backend has no QP1 to give the guest: its MADs would
         * reach the host's own connection manager (docs/backends.md).
         */
        return info_fail(core, CI(flags), cmd, id,
                         "this device's backend carries no GSI QP (QP1, "
                         "MADs, rdma_cm): CAP_FEATURES.GSI is clear");
    }
    if (qp->db_page >= core->cfg.db_pages) {
        snprintf(why, sizeof(why),
                 "doorbell page %u is beyond the %u the device has",
                 qp->db_page, core->cfg.db_pages);
        return info_fail(core, CI(db_page), cmd, id, why);
    }
    res = wq_check(core, &qp->sq, CI(sq_size_log2), CI(sq_wqe_log2), id);
    if (res.major) {
        return res;
    }
    /*
     * The data path parses the 64-byte header and what follows it in one
     * stride.
     */
    if (qp->sq.stride_log2 < QRDMA_SQ_WQE_LOG2_MIN) {
        snprintf(why, sizeof(why),
                 "SQ WQE_LOG2 %u: an SQ WQE is at least its %u-byte header",
                 qp->sq.stride_log2, QRDMA_SQ_WQE_HDR_BYTES);
        return info_fail(core, CI(sq_wqe_log2), cmd, id, why);
    }
    if (with_srq) {
        if (qp->rq.size_log2 || qp->rq.stride_log2) {
            return info_fail(core,
                             qp->rq.size_log2 ? CI(rq_size_log2)
                                              : CI(rq_wqe_log2),
                             cmd, id,
                             "an RQ size with SRQ: receives come from the SRQ");
        }
        if (qp->rq.addr) {
            return info_fail(core, CI(rq_addr), cmd, id,
                             "an RQ address with SRQ");
        }
    } else {
        if (qp->srq) {
            return info_fail(core, CI(srq), cmd, id,
                             "an SRQ without the SRQ flag");
        }
        res = wq_check(core, &qp->rq, CI(rq_size_log2), CI(rq_wqe_log2), id);
        if (res.major) {
            return res;
        }
    }
    if (qp->qp_ctx & ~QRDMA_CEQE_CQ_CTX_MASK) {
        return info_fail(core, CI(qp_ctx), cmd, id, "QP_CTX has bit 63 set");
    }
    if (qrdma_ld_le64(p + CI(reserved))) {
        return info_fail(core, CI(reserved), cmd, id, "reserved, must be 0");
    }
    if (qrdma_ld_le64(p + CI(reserved) + 8)) {
        return info_fail(core, CI(reserved) + 8, cmd, id,
                         "reserved, must be 0");
    }

    res = qp_ref_check(core, QRDMA_HMC_CQ, qp->send_cq, CI(send_cq), "send CQ",
                       id);
    if (res.major) {
        return res;
    }
    res = qp_ref_check(core, QRDMA_HMC_CQ, qp->recv_cq, CI(recv_cq),
                       "receive CQ", id);
    if (res.major) {
        return res;
    }
    if (with_srq) {
        res = qp_ref_check(core, QRDMA_HMC_SRQ, qp->srq, CI(srq), "SRQ", id);
        if (res.major) {
            return res;
        }
        if (core->obj.srq[qp->srq].pd != qp->pd) {
            snprintf(why, sizeof(why), "SRQ %u is in PD %u, the QP in PD %u",
                     qp->srq, core->obj.srq[qp->srq].pd, qp->pd);
            return info_fail(core, CI(srq), cmd, id, why);
        }
    }

    snprintf(why, sizeof(why), "%s: QP %u SQ", cmd, id);
    res = qrdma_queue_check(core, &qp->sq,
                            (struct cqp_result){ .major = QRDMA_CQP_ERR_INFO,
                                                 .minor = CI(sq_addr) }, why);
    if (res.major) {
        return res;
    }
    if (!with_srq) {
        snprintf(why, sizeof(why), "%s: QP %u RQ", cmd, id);
        res =
            qrdma_queue_check(core, &qp->rq,
                              (struct cqp_result){ .major = QRDMA_CQP_ERR_INFO,
                                                   .minor = CI(rq_addr) },
                              why);
        if (res.major) {
            return res;
        }
    }
    return cqp_ok;
}

struct cqp_result qrdma_cqp_create_qp(struct qrdma_core *core,
                                      const uint64_t *arg)
{
    static const char cmd[] = "CREATE_QP";
    uint8_t info[CREATE_INFO_SIZE], ctx[QRDMA_QP_CTX_SIZE];
    uint32_t id = arg[0] & QRDMA_OBJ_ID_MASK;
    struct cqp_result res;
    struct qrdma_qp qp;
    uint32_t wire_qpn;
    int ret;

    res = qp_id_check(core, arg[0], cmd);
    if (res.major) {
        return res;
    }
    if (id < QRDMA_QP_GSI) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: QP 0 (IB's SMI QP) does not exist on RoCE",
                              cmd);
    }
    if (core->obj.qp[id].valid) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_EXISTS,
                              "%s: QP %u exists", cmd, id);
    }
    if ((arg[1] & 63) ||
        core->env.dma_read(core->env.opaque, arg[1], info, sizeof(info))) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: QP %u: info 0x%" PRIx64
                              " is not 64-byte aligned guest RAM",
                              cmd, id, arg[1]);
    }
    res = qp_create_parse(core, info, id, &qp);
    if (res.major) {
        return res;
    }
    qp.state = QRDMA_QPS_RESET;
    qp.valid = true;

    qp_ctx_render(&qp, ctx);
    res = qrdma_obj_ctx_write(core, QRDMA_HMC_QP, id, ctx, sizeof(ctx), cmd);
    if (res.major) {
        return res;
    }
    core->obj.qp[id] = qp;
    core->obj.cq[qp.send_cq].refs++;
    core->obj.cq[qp.recv_cq].refs++;
    if (qp.flags & QRDMA_QP_CREATE_SRQ) {
        core->obj.srq[qp.srq].refs++;
    }
    qrdma_obj_count_inc(core, QRDMA_HMC_QP);
    ret = qrdma_dp_qp_create(core, id, &wire_qpn);
    if (ret) {
        /* The backend could not make its QP: undo, as if never created. */
        core->obj.cq[qp.send_cq].refs--;
        core->obj.cq[qp.recv_cq].refs--;
        if (qp.flags & QRDMA_QP_CREATE_SRQ) {
            core->obj.srq[qp.srq].refs--;
        }
        memset(&core->obj.qp[id], 0, sizeof(core->obj.qp[id]));
        qrdma_obj_count_dec(core, QRDMA_HMC_QP);
        memset(ctx, 0, sizeof(ctx));
        qrdma_obj_ctx_write(core, QRDMA_HMC_QP, id, ctx, sizeof(ctx), cmd);
        if (ret == -ENOMEM) {
            /*
             * Not the guest's fault: NO_RESOURCE, which the driver reports as
             * ENOMEM.
             */
            return qrdma_cqp_fail(
                core, QRDMA_CQP_ERR_NO_RESOURCE, QRDMA_RESOURCE_ERR_HOST,
                "%s: QP %u: the device is out of host resources", cmd, id);
        }
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: QP %u: %s", cmd, id,
                              ret == -ENOTSUP
                                  ? "the backend's QPN does not fit 24 bits"
                                  : "the backend refuses it");
    }
    /*
     * The QPN peers address the QP by (WIRE_IDS, docs/hw-spec.md section 17.1).
     */
    res = cqp_ok;
    res.retval = wire_qpn;
    return res;
}

/* ---- MODIFY_QP ----------------------------------------------------------- */

/* Log why a modify failed and return its result. */
static struct cqp_result modify_fail(struct qrdma_core *core,
                                     enum qrdma_cqp_major major, unsigned minor,
                                     uint32_t id, const char *why)
{
    return qrdma_cqp_fail(core, major, minor, "MODIFY_QP: QP %u: %s", id, why);
}

/*
 * Check the values of the attributes in mask and write them to attr;
 * 0, or 1 + the info offset of the first bad one. Only attributes in the
 * mask are looked at: IB leaves the others' fields undefined.
 */
static unsigned qp_attr_values(struct qrdma_core *core, const uint8_t *p,
                               uint32_t mask, struct qrdma_qp_attrs *attr,
                               uint32_t id)
{
    char what[32];
    unsigned bad;

#define REFUSE(field, fmt, ...)                                              \
    do {                                                                     \
        qrdma_guest_error(core, "MODIFY_QP: QP %u: info byte %zu: " fmt, id, \
                          MI(field), __VA_ARGS__);                           \
        return 1 + MI(field);                                                \
    } while (0)

    if (mask & A(PATH_MTU)) {
        attr->path_mtu = p[MI(path_mtu)];
        if (attr->path_mtu < 1 || attr->path_mtu > 5 ||
            (128u << attr->path_mtu) > core->cfg.max_mtu) {
            REFUSE(path_mtu,
                   "path MTU %u is not 1 (256) .. %u (CAP_MAX_MTU %u)",
                   attr->path_mtu, __builtin_ctz(core->cfg.max_mtu) - 7,
                   core->cfg.max_mtu);
        }
    }
    if (mask & A(TIMEOUT)) {
        attr->timeout = p[MI(timeout)];
        if (attr->timeout > 31) {
            REFUSE(timeout, "timeout %u is over 31", attr->timeout);
        }
    }
    if (mask & A(SQ_PSN)) {
        attr->sq_psn = qrdma_ld_le32(p + MI(sq_psn));
        if (attr->sq_psn >> 24) {
            REFUSE(sq_psn, "SQ PSN 0x%x is over 24 bits", attr->sq_psn);
        }
    }
    if (mask & A(RQ_PSN)) {
        attr->rq_psn = qrdma_ld_le32(p + MI(rq_psn));
        if (attr->rq_psn >> 24) {
            REFUSE(rq_psn, "RQ PSN 0x%x is over 24 bits", attr->rq_psn);
        }
    }
    if (mask & A(DEST_QPN)) {
        attr->dest_qpn = qrdma_ld_le32(p + MI(dest_qpn));
        if (attr->dest_qpn >> 24) {
            REFUSE(dest_qpn, "destination QPN 0x%x is over 24 bits",
                   attr->dest_qpn);
        }
    }
    if (mask & A(QKEY)) {
        attr->qkey = qrdma_ld_le32(p + MI(qkey));     /* any 32 bits */
    }
    if (mask & A(ACCESS_FLAGS)) {
        attr->access_flags = qrdma_ld_le32(p + MI(access_flags));
        if (attr->access_flags & ~QRDMA_ACCESS_VALID_MASK) {
            REFUSE(access_flags, "access flags 0x%x are not within 0x%x",
                   attr->access_flags, QRDMA_ACCESS_VALID_MASK);
        }
    }
    if (mask & A(PKEY_INDEX)) {
        attr->pkey_index = qrdma_ld_le16(p + MI(pkey_index));
        if (attr->pkey_index) {
            REFUSE(pkey_index,
                   "P_Key index %u: the port has one P_Key, index 0",
                   attr->pkey_index);
        }
    }
    if (mask & A(RETRY_CNT)) {
        attr->retry_cnt = p[MI(retry_cnt)];
        if (attr->retry_cnt > 7) {
            REFUSE(retry_cnt, "retry count %u is over 7", attr->retry_cnt);
        }
    }
    if (mask & A(RNR_RETRY)) {
        attr->rnr_retry = p[MI(rnr_retry)];
        if (attr->rnr_retry > 7) {
            REFUSE(rnr_retry, "RNR retry %u is over 7", attr->rnr_retry);
        }
    }
    if (mask & A(MIN_RNR_TIMER)) {
        attr->min_rnr_timer = p[MI(min_rnr_timer)];
        if (attr->min_rnr_timer > 31) {
            REFUSE(min_rnr_timer, "minimum RNR timer %u is over 31",
                   attr->min_rnr_timer);
        }
    }
    if (mask & A(MAX_QP_RD_ATOMIC)) {
        attr->max_rd_atomic = p[MI(max_rd_atomic)];
        if (attr->max_rd_atomic > core->cfg.max_rd_atom) {
            REFUSE(max_rd_atomic, "max_rd_atomic %u is over CAP_MAX_RD_ATOM %u",
                   attr->max_rd_atomic, core->cfg.max_rd_atom);
        }
    }
    if (mask & A(MAX_DEST_RD_ATOMIC)) {
        attr->max_dest_rd_atomic = p[MI(max_dest_rd_atomic)];
        if (attr->max_dest_rd_atomic > core->cfg.max_rd_atom) {
            REFUSE(max_dest_rd_atomic,
                   "max_dest_rd_atomic %u is over CAP_MAX_RESP_RES %u",
                   attr->max_dest_rd_atomic, core->cfg.max_rd_atom);
        }
    }
    if (mask & A(PORT)) {
        attr->port_num = p[MI(port_num)];
        if (attr->port_num != 1) {
            REFUSE(port_num, "port %u: the device has port 1 only",
                   attr->port_num);
        }
    }
    if (mask & A(AV)) {
        snprintf(what, sizeof(what), "MODIFY_QP: QP %u", id);
        bad = qrdma_av_parse(core, p + MI(av), &attr->av, what);
        if (bad) {
            return MI(av) + bad;
        }
    }
#undef REFUSE
    return 0;
}

struct cqp_result qrdma_cqp_modify_qp(struct qrdma_core *core,
                                      const uint64_t *arg)
{
    static const char cmd[] = "MODIFY_QP";
    uint8_t info[MODIFY_INFO_SIZE], ctx[QRDMA_QP_CTX_SIZE];
    uint32_t id = arg[0] & QRDMA_OBJ_ID_MASK;
    const struct qp_transition_attrs *tr;
    uint32_t mask, allowed, missing;
    uint8_t cur, next_state;
    struct qrdma_qp *qp, next;
    struct cqp_result res;
    unsigned bad, i;
    int kind;
    char why[160];

    res = qp_lookup(core, arg[0], cmd, &qp);
    if (res.major) {
        return res;
    }
    if ((arg[1] & 63) ||
        core->env.dma_read(core->env.opaque, arg[1], info, sizeof(info))) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: QP %u: info 0x%" PRIx64
                              " is not 64-byte aligned guest RAM",
                              cmd, id, arg[1]);
    }
    mask = qrdma_ld_le32(info + MI(attr_mask));
    if (mask & ~QP_ATTR_KNOWN) {
        snprintf(why, sizeof(why), "ATTR_MASK 0x%x has unknown bits 0x%x", mask,
                 mask & ~QP_ATTR_KNOWN);
        return modify_fail(core, QRDMA_CQP_ERR_INFO, MI(attr_mask), id, why);
    }
    if (mask & QP_ATTR_UNSUPPORTED) {
        snprintf(why, sizeof(why),
                 "ATTR_MASK 0x%x asks for ALT_PATH, PATH_MIG_STATE or CAP "
                 "(0x%x), which the device does not implement",
                 mask, mask & QP_ATTR_UNSUPPORTED);
        return modify_fail(core, QRDMA_CQP_ERR_INFO, MI(attr_mask), id, why);
    }
    for (i = 0; i < sizeof(((struct qrdma_qp_modify_info *)0)->reserved0);
         i++) {
        if (info[MI(reserved0) + i]) {
            return modify_fail(core, QRDMA_CQP_ERR_INFO, MI(reserved0) + i, id,
                               "reserved0 is not 0");
        }
    }
    if (qrdma_ld_le32(info + MI(reserved1))) {
        return modify_fail(core, QRDMA_CQP_ERR_INFO, MI(reserved1), id,
                           "reserved1 is not 0");
    }
    for (i = 0; i < 6; i++) {
        if (qrdma_ld_le64(info + MI(reserved2) + 8 * i)) {
            return modify_fail(core, QRDMA_CQP_ERR_INFO, MI(reserved2) + 8 * i,
                               id, "reserved2 is not 0");
        }
    }

    cur = qp->state;
    /* IB: without STATE, attributes change in place */
    next_state = cur;
    if (mask & A(STATE)) {
        next_state = info[MI(state)];
        if (next_state >= QRDMA_QP_NUM_STATES) {
            snprintf(why, sizeof(why), "state %u is not a QP state",
                     next_state);
            return modify_fail(core, QRDMA_CQP_ERR_INFO, MI(state), id, why);
        }
    }
    if (mask & A(CUR_STATE)) {
        uint8_t expected = info[MI(cur_state)];

        if (expected >= QRDMA_QP_NUM_STATES) {
            snprintf(why, sizeof(why), "current state %u is not a QP state",
                     expected);
            return modify_fail(core, QRDMA_CQP_ERR_INFO, MI(cur_state), id,
                               why);
        }
        if (expected != cur) {
            snprintf(why, sizeof(why), "the driver expects %s, the QP is in %s",
                     qp_state_name[expected], qp_state_name[cur]);
            return modify_fail(core, QRDMA_CQP_ERR_STATE,
                               QRDMA_STATE_ERR_TRANSITION, id, why);
        }
    }
    kind = qp_kind(qp->type, qp->flags);
    tr = &qp_transition_attrs[cur][next_state];
    if (!(qrdma_qp_transitions[cur][next_state] & QRDMA_QPK_BIT(kind))) {
        snprintf(why, sizeof(why), "%s %s -> %s is not a transition IB allows",
                 qp_kind_name[kind], qp_state_name[cur],
                 qp_state_name[next_state]);
        return modify_fail(core, QRDMA_CQP_ERR_STATE,
                           QRDMA_STATE_ERR_TRANSITION, id, why);
    }
    missing = tr->req[kind] & ~mask;
    if (missing) {
        snprintf(why, sizeof(why),
                 "%s %s -> %s requires attributes 0x%x; ATTR_MASK 0x%x "
                 "lacks 0x%x",
                 qp_kind_name[kind], qp_state_name[cur],
                 qp_state_name[next_state], tr->req[kind], mask, missing);
        return modify_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_ATTR, id,
                           why);
    }
    allowed = A(STATE) | tr->req[kind] | tr->opt[kind];
    if (mask & ~allowed) {
        snprintf(why, sizeof(why), "%s %s -> %s does not take attributes 0x%x",
                 qp_kind_name[kind], qp_state_name[cur],
                 qp_state_name[next_state], mask & ~allowed);
        return modify_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_ATTR, id,
                           why);
    }

    next = *qp;
    bad = qp_attr_values(core, info, mask, &next.attr, id);
    if (bad) {
        return (struct cqp_result){ .major = QRDMA_CQP_ERR_INFO,
                                    .minor = bad - 1 };
    }
    next.attr.set |= mask & QP_ATTR_STORED;
    next.state = next_state;
    if (next_state == QRDMA_QPS_RESET) {
        /*
         * RESET empties the queues and forgets the attributes: INIT must give
         * them again.
         */
        memset(&next.attr, 0, sizeof(next.attr));
        next.sq_head = next.rq_head = 0;
    }
    if (next_state == QRDMA_QPS_SQD && cur != QRDMA_QPS_SQD) {
        next.sqd_async = !!(mask & A(EN_SQD_ASYNC));
        /* Sends in flight keep it draining; the control path has none. */
        next.sq_draining = false;
    }
    if (next_state != QRDMA_QPS_SQD) {
        next.sqd_async = false;
        next.sq_draining = false;
    }

    qp_ctx_render(&next, ctx);
    res = qrdma_obj_ctx_write(core, QRDMA_HMC_QP, id, ctx, sizeof(ctx), cmd);
    if (res.major) {
        return res;
    }
    *qp = next;
    qrdma_trace(core, QRDMA_TRACE_QP_STATE, id, 0, 0, 0, qp_state_name[cur],
                qp_state_name[next_state]);
    qrdma_dp_qp_modify(core, id, mask);
    return cqp_ok;
}

/* ---- QUERY_QP and DESTROY_QP --------------------------------------------- */

struct cqp_result qrdma_cqp_query_qp(struct qrdma_core *core,
                                     const uint64_t *arg)
{
    static const char cmd[] = "QUERY_QP";
    uint8_t info[MODIFY_INFO_SIZE];
    struct cqp_result res;
    struct qrdma_qp *qp;

    res = qp_lookup(core, arg[0], cmd, &qp);
    if (res.major) {
        return res;
    }
    qp_modify_info_render(qp, info);
    if ((arg[1] & 63) ||
        core->env.dma_write(core->env.opaque, arg[1], info, sizeof(info))) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: QP %u: buffer 0x%" PRIx64
                              " is not 64-byte aligned guest RAM",
                              cmd, (uint32_t)arg[0], arg[1]);
    }
    return cqp_ok;
}

struct cqp_result qrdma_cqp_destroy_qp(struct qrdma_core *core,
                                       const uint64_t *arg)
{
    static const char cmd[] = "DESTROY_QP";
    uint8_t zero[QRDMA_QP_CTX_SIZE];
    uint32_t id = arg[0] & QRDMA_OBJ_ID_MASK;
    struct cqp_result res;
    struct qrdma_qp *qp;

    res = qp_lookup(core, arg[0], cmd, &qp);
    if (res.major) {
        return res;
    }
    /*
     * As every destroy: a context that cannot be cleared does not keep the QP
     * alive.
     */
    memset(zero, 0, sizeof(zero));
    qrdma_obj_ctx_write(core, QRDMA_HMC_QP, id, zero, sizeof(zero), cmd);
    core->obj.cq[qp->send_cq].refs--;
    core->obj.cq[qp->recv_cq].refs--;
    if (qp->flags & QRDMA_QP_CREATE_SRQ) {
        core->obj.srq[qp->srq].refs--;
    }
    qrdma_dp_qp_destroy(core, id);
    qrdma_mw_qp_gone(core, id);
    qrdma_mcast_qp_gone(core, id);
    memset(qp, 0, sizeof(*qp));
    qrdma_obj_count_dec(core, QRDMA_HMC_QP);
    return cqp_ok;
}
