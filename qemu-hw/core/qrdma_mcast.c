/*
 * qrdma device core: UD multicast (docs/hw-spec.md section 16.1). The
 * table of multicast groups with the UD QPs attached to each, bounded by
 * CAP_MAX_MCAST_GRP and CAP_MAX_MCAST_QP_ATTACH; the MCAST_ATTACH and
 * MCAST_DETACH commands; and the receive side: a RoCEv2 frame to a
 * group goes to the transport with the group's QPs (which copy it into
 * each QP whose Q_Key matches), one to a group without QPs is dropped.
 *
 * The table is also the device's receive filter for RoCEv2 multicast: like
 * unicast RoCE frames, these are steered before the LAN address filter,
 * so attaching a QP is all it takes for its group's frames to arrive.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qrdma_core_int.h"

#include <inttypes.h>
#include <string.h>

void qrdma_mcast_reset(struct qrdma_core *core)
{
    memset(&core->mcast, 0, sizeof(core->mcast));
}

/*
 * RoCEv2 multicast GIDs: an IPv4-mapped ::ffff:224.0.0.0/4 address or an
 * IPv6 ff00::/8 one. Their frames go to the Ethernet multicast address
 * IP maps the group to: 01:00:5e and the low 23 bits of the IPv4 address
 * (RFC 1112 section 6.4), 33:33 and the low 32 bits of the IPv6 address
 * (RFC 2464 section 7).
 */
bool qrdma_mcast_gid(const uint8_t gid[16], uint8_t mac[6])
{
    static const uint8_t v4_prefix[12] = { [10] = 0xff, [11] = 0xff };

    if (!memcmp(gid, v4_prefix, sizeof(v4_prefix)) &&
        (gid[12] & 0xf0) == 0xe0) {
        if (mac) {
            mac[0] = 0x01;
            mac[1] = 0x00;
            mac[2] = 0x5e;
            mac[3] = gid[13] & 0x7f;
            mac[4] = gid[14];
            mac[5] = gid[15];
        }
        return true;
    }
    if (gid[0] == 0xff) {
        if (mac) {
            mac[0] = 0x33;
            mac[1] = 0x33;
            memcpy(mac + 2, gid + 12, 4);
        }
        return true;
    }
    return false;
}

/*
 * CAP_FEATURES.MCAST: the backend delivers groups' frames and the device has
 * room for a group.
 */
static bool mcast_offered(const struct qrdma_core *core)
{
    return core->regs[QRDMA_REG_CAP_FEATURES / 4] & QRDMA_FEATURE_MCAST;
}

static struct qrdma_mcast_grp *grp_find(struct qrdma_core *core,
                                        const uint8_t gid[16])
{
    uint32_t i;

    for (i = 0; i < core->mcast.ngrp; i++) {
        if (!memcmp(core->mcast.grp[i].gid, gid, 16)) {
            return &core->mcast.grp[i];
        }
    }
    return NULL;
}

/* The slot of qp_id in grp, or grp->nqp when it is not attached. */
static uint32_t grp_slot(const struct qrdma_mcast_grp *grp, uint32_t qp_id)
{
    uint32_t i;

    for (i = 0; i < grp->nqp; i++) {
        if (grp->qp_id[i] == qp_id) {
            break;
        }
    }
    return i;
}

/*
 * Take slot i out of grp, and grp out of the table once it has no QP (both stay
 * packed).
 */
static void grp_remove(struct qrdma_core *core, struct qrdma_mcast_grp *grp,
                       uint32_t i)
{
    struct qrdma_mcast *mc = &core->mcast;

    grp->qp_id[i] = grp->qp_id[--grp->nqp];
    if (!grp->nqp) {
        *grp = mc->grp[--mc->ngrp];
        memset(&mc->grp[mc->ngrp], 0, sizeof(mc->grp[0]));
    }
}

void qrdma_mcast_qp_gone(struct qrdma_core *core, uint32_t qp_id)
{
    struct qrdma_mcast *mc = &core->mcast;
    uint32_t g = 0, i;

    /* grp_remove moves the last group into g: look at g again then. */
    while (g < mc->ngrp) {
        struct qrdma_mcast_grp *grp = &mc->grp[g];
        uint32_t ngrp = mc->ngrp;

        i = grp_slot(grp, qp_id);
        if (i < grp->nqp) {
            grp_remove(core, grp, i);
        }
        if (mc->ngrp == ngrp) {
            g++;
        }
    }
}

/*
 * The checks both commands share: arg0 names a UD QP that exists, arg1 and
 * arg2 a multicast GID. *gid gets the GID.
 */
static struct cqp_result mcast_args(struct qrdma_core *core,
                                    const uint64_t *arg, const char *cmd,
                                    uint8_t gid[16])
{
    uint32_t qp_id = arg[0] & QRDMA_CQP_MCAST_QP_ID_MASK;
    struct qrdma_qp *qp;

    if (arg[0] & ~QRDMA_CQP_MCAST_QP_ID_MASK) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: arg0 0x%" PRIx64 " is not a QP_ID", cmd,
                              arg[0]);
    }
    qrdma_st_le64(gid, arg[1]);
    qrdma_st_le64(gid + 8, arg[2]);
    if (!qrdma_mcast_gid(gid, NULL)) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: QP %u: the GID is not a multicast address",
                              cmd, qp_id);
    }
    qp = qrdma_qp_get(core, qp_id);
    if (!qp) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE,
                              QRDMA_STATE_ERR_NOT_FOUND,
                              "%s: QP %u does not exist", cmd, qp_id);
    }
    /* IBTA 10.5: only unreliable datagram QPs join multicast groups. */
    if (qp->type != QRDMA_QP_TYPE_UD) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: QP %u is not a UD QP", cmd, qp_id);
    }
    return (struct cqp_result){ 0 };
}

struct cqp_result qrdma_cqp_mcast_attach(struct qrdma_core *core,
                                         const uint64_t *arg)
{
    static const char cmd[] = "MCAST_ATTACH";
    struct qrdma_mcast *mc = &core->mcast;
    uint32_t qp_id = arg[0] & QRDMA_CQP_MCAST_QP_ID_MASK;
    struct qrdma_mcast_grp *grp;
    struct cqp_result res;
    uint8_t gid[16];

    if (!mcast_offered(core)) {
        return qrdma_cqp_fail(
            core, QRDMA_CQP_ERR_BAD_OPCODE, 0,
            "%s: the device offers no multicast (CAP_FEATURES.MCAST)", cmd);
    }
    res = mcast_args(core, arg, cmd, gid);
    if (res.major) {
        return res;
    }
    grp = grp_find(core, gid);
    if (grp && grp_slot(grp, qp_id) < grp->nqp) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_EXISTS,
                              "%s: QP %u is already attached to the group", cmd,
                              qp_id);
    }
    if (!grp && mc->ngrp >= core->cfg.max_mcast_grp) {
        return qrdma_cqp_fail(
            core, QRDMA_CQP_ERR_NO_RESOURCE, QRDMA_RESOURCE_ERR_MCAST_GRP,
            "%s: QP %u: all %u groups of CAP_MAX_MCAST_GRP are in use", cmd,
            qp_id, core->cfg.max_mcast_grp);
    }
    if (grp && grp->nqp >= core->cfg.max_mcast_qp_attach) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_NO_RESOURCE,
                              QRDMA_RESOURCE_ERR_MCAST_QP_ATTACH,
                              "%s: QP %u: the group has CAP_MAX_MCAST_QP_ATTACH (%u) QPs",
                              cmd, qp_id, core->cfg.max_mcast_qp_attach);
    }
    if (!grp) {
        grp = &mc->grp[mc->ngrp++];
        memcpy(grp->gid, gid, 16);
        grp->nqp = 0;
    }
    grp->qp_id[grp->nqp++] = qp_id;
    return (struct cqp_result){ 0 };
}

struct cqp_result qrdma_cqp_mcast_detach(struct qrdma_core *core,
                                         const uint64_t *arg)
{
    static const char cmd[] = "MCAST_DETACH";
    uint32_t qp_id = arg[0] & QRDMA_CQP_MCAST_QP_ID_MASK;
    struct qrdma_mcast_grp *grp;
    struct cqp_result res;
    uint8_t gid[16];
    uint32_t i;

    if (!mcast_offered(core)) {
        return qrdma_cqp_fail(
            core, QRDMA_CQP_ERR_BAD_OPCODE, 0,
            "%s: the device offers no multicast (CAP_FEATURES.MCAST)", cmd);
    }
    res = mcast_args(core, arg, cmd, gid);
    if (res.major) {
        return res;
    }
    grp = grp_find(core, gid);
    i = grp ? grp_slot(grp, qp_id) : 0;
    if (!grp || i == grp->nqp) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE,
                              QRDMA_STATE_ERR_NOT_FOUND,
                              "%s: QP %u is not attached to the group", cmd,
                              qp_id);
    }
    grp_remove(core, grp, i);
    return (struct cqp_result){ 0 };
}

bool qrdma_mcast_has_own(struct qrdma_core *core, const uint8_t *frame,
                         size_t hdr_len)
{
    const struct qrdma_mcast_grp *grp;
    uint8_t dgid[16];

    if (!core->mcast.ngrp || hdr_len < 6 || !(frame[0] & 1) ||
        !qrdma_lan_roce_dgid(frame, hdr_len, dgid)) {
        return false;
    }
    grp = grp_find(core, dgid);
    return grp && grp->nqp;
}

void qrdma_mcast_rx_own(struct qrdma_core *core, const uint8_t *frame,
                        size_t len)
{
    const struct qrdma_mcast_grp *grp;
    uint8_t dgid[16];

    if (!qrdma_lan_roce_dgid(frame, len, dgid)) {
        return;
    }
    grp = grp_find(core, dgid);
    if (grp && grp->nqp) {
        qrdma_dp_rx_mcast(core, frame, len, grp->qp_id, grp->nqp);
    }
}

void qrdma_mcast_rx(struct qrdma_core *core, const uint8_t *frame, size_t len,
                    const uint8_t dgid[16])
{
    const struct qrdma_mcast_grp *grp = grp_find(core, dgid);
    uint8_t mac[6];

    /*
     * The group's own Ethernet address only, as a NIC's multicast filter has
     * it.
     */
    if (!grp || !qrdma_mcast_gid(dgid, mac) || memcmp(frame, mac, 6)) {
        core->stats.mcast_rx_dropped++;
        core->port_stats.live[QRDMA_STAT_RX_DROPS]++;
        return;
    }
    qrdma_dp_rx_mcast(core, frame, len, grp->qp_id, grp->nqp);
}
