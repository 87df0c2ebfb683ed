/*
 * The CM proxy (vb_cm.h): guest CM MADs to the host's rdma_cm and back.
 *
 * Every connection the proxy carries is one host rdma_cm ID with no QP
 * (the guest's QP is the host QP the backend made for it; the ID names
 * its QPN) and one entry of a fixed table, so a guest can hold at most
 * VB_CM_MAX_CONNS host IDs. The entry's index and a generation make the
 * communication ID the guest sees for its peer.
 *
 * States, and what moves a connection on (G: a MAD from the guest; H: a
 * host rdma_cm event; T: the guest's deadline passed):
 *
 *   active (the guest's REQ; SIDR_REQ alike up to CONNECT)
 *     ADDR       --H ADDR_RESOLVED-->     ROUTE
 *     ROUTE      --H ROUTE_RESOLVED-->    CONNECT        (rdma_connect)
 *     CONNECT    --H CONNECT_RESPONSE-->  REP_GIVEN      (REP to the guest)
 *     CONNECT    --H ESTABLISHED (UD)-->  gone       (SIDR_REP to the guest)
 *     REP_GIVEN  --G RTU-->               ESTABLISHED    (rdma_establish)
 *   passive (a host listener's CONNECT_REQUEST)
 *     REQ_GIVEN  --G REP-->               ACCEPTED       (rdma_accept)
 *     REQ_GIVEN  --G SIDR_REP-->          gone       (rdma_accept, _reject)
 *     ACCEPTED   --H ESTABLISHED-->       ESTABLISHED    (RTU to the guest)
 *   both
 *     ESTABLISHED --G DREQ-->             DREQ_SENT      (rdma_disconnect)
 *     DREQ_SENT  --H DISCONNECTED-->      gone           (DREP to the guest)
 *     ESTABLISHED --H DISCONNECTED-->     DREQ_GIVEN     (DREQ to the guest)
 *     DREQ_GIVEN --G DREP-->              gone           (rdma_disconnect)
 *     before ESTABLISHED: H REJECTED, UNREACHABLE, *_ERROR: REJ (SIDR_REP)
 *       to the guest, gone; G REJ: rdma_reject, gone
 *     REP_GIVEN, REQ_GIVEN, DREQ_GIVEN --T--> gone (the host ID rejected
 *       or disconnected; the guest told with a REJ where it waits)
 *
 * PSNs: a CM message's starting PSN is the PSN its sender expects to
 * receive. The host's CM tells the peer its own (rdma_init_qp_attr's RTR
 * rq_psn), so the guest QP's RTR takes that one (vb_cm_rtr_psn); the
 * REQ or REP the proxy gives the guest carries the peer's (the RTS
 * sq_psn the host's CM learnt), which the guest's CM then uses as is.
 *
 * A MAD the guest sends again (its CM retries when an answer is slow) is
 * answered with the last MAD the proxy gave it for that connection, or
 * ignored while the host is still working.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "vb_cm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CM_RESOLVE_MS           2000
/* the timing fields of the MADs the proxy makes: 4.096 us * 2^20 */
#define CM_RESPONSE_TIMEOUT     20
#define CM_MAX_RETRIES          15
#define CM_DEFAULT_GUEST_NS     (60ull * 1000000000ull)
#define CM_PKEY_DEFAULT         0xffff
#define CM_LID_PERMISSIVE       0xffff

enum conn_state {
    CS_NEW = 0,              /* made, not yet in a state */
    CS_ADDR,
    CS_ROUTE,
    CS_CONNECT,
    CS_REP_GIVEN,
    CS_REQ_GIVEN,
    CS_ACCEPTED,
    CS_ESTABLISHED,
    CS_DREQ_SENT,
    CS_DREQ_GIVEN,
};

static const char *const state_names[] = {
    [CS_NEW] = "new", [CS_ADDR] = "ADDR", [CS_ROUTE] = "ROUTE",
    [CS_CONNECT] = "CONNECT", [CS_REP_GIVEN] = "REP_GIVEN",
    [CS_REQ_GIVEN] = "REQ_GIVEN", [CS_ACCEPTED] = "ACCEPTED",
    [CS_ESTABLISHED] = "ESTABLISHED", [CS_DREQ_SENT] = "DREQ_SENT",
    [CS_DREQ_GIVEN] = "DREQ_GIVEN",
};

/* What a host ID's context points at: both start with their kind. */
enum ctx_kind { CTX_CONN = 1, CTX_LISTENER = 2 };

struct conn {
    enum ctx_kind kind;
    enum conn_state state;
    bool passive, udp;
    unsigned index;             /* in struct vb_cm's table */
    void *id;
    /* the proxy's: the peer's ID as the guest sees it */
    uint32_t local_comm_id;
    uint32_t guest_comm_id;
    uint64_t tid;
    uint64_t service_id;
    uint8_t guest_gid[16], peer_gid[16];
    /* the guest QP's wire QPN (passive: known at its RTR or REP), the peer's */
    uint32_t guest_qpn, peer_qpn;
    /* the PSN the peer receives from; the one it sends from (the host's) */
    uint32_t peer_psn, host_psn;
    bool host_psn_known;
    struct vb_cm_msg req;       /* active: the guest's REQ or SIDR_REQ */
    bool have_last;
    uint8_t last[VB_MAD_BYTES]; /* the last MAD given to the guest */
    uint64_t deadline;          /* 0: not waiting for the guest */
};

struct listener {
    enum ctx_kind kind;
    bool udp;
    uint16_t port;
    uint8_t gid[16];
    void *id;
};

struct vb_cm {
    const struct vb_cmh_ops *ops;
    void *host;
    struct vb_cm_env env;
    struct vb_cm_config cfg;
    char ibdev[64];
    uint64_t next_tid;
    unsigned nconns;
    /*
     * Allocated as connections come (a device whose guest makes none holds
     * none), and each slot's last generation, which outlives its connection.
     */
    struct conn *conns[VB_CM_MAX_CONNS];
    uint32_t gens[VB_CM_MAX_CONNS];
    unsigned nlisteners;
    struct listener listeners[2 * VB_CM_MAX_LISTEN * 8];
    /* a host ID to destroy once the event being handled is acknowledged */
    void *doomed;
    /*
     * No connection's deadline is earlier (0 at create: look): deadlines()
     * walks the connections only once it has passed, not at every poll.
     */
    uint64_t earliest;
};

/* The proxy's communication IDs keep a connection's index in their low byte. */
_Static_assert(VB_CM_MAX_CONNS == 256,
               "conn_of_id takes the index from 8 bits");

static void guest_error(struct vb_cm *cm, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void guest_error(struct vb_cm *cm, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cm->env.guest_error(cm->env.opaque, msg);
}

static uint64_t now(struct vb_cm *cm)
{
    return cm->env.now_ns(cm->env.opaque);
}

/* The guest has guest_timeout_ns from now to answer on connection c. */
static void deadline_set(struct vb_cm *cm, struct conn *c)
{
    c->deadline = now(cm) + cm->cfg.guest_timeout_ns;
    if (c->deadline < cm->earliest) {
        cm->earliest = c->deadline;
    }
}

/* ---- the table ---------------------------------------------------------- */

static struct conn *conn_new(struct vb_cm *cm)
{
    for (unsigned i = 0; i < VB_CM_MAX_CONNS; i++) {
        struct conn *c;

        if (cm->conns[i]) {
            continue;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
            return NULL;
        }
        /* 24 bits of generation, never 0, so no ID is 0 */
        cm->gens[i] = (cm->gens[i] + 1) & 0xffffff;
        if (!cm->gens[i]) {
            cm->gens[i] = 1;
        }
        c->kind = CTX_CONN;
        c->index = i;
        c->local_comm_id = cm->gens[i] << 8 | i;
        cm->conns[i] = c;
        cm->nconns++;
        return c;
    }
    return NULL;
}

/* The connection a guest MAD names by the proxy's communication ID. */
static struct conn *conn_of_id(struct vb_cm *cm, uint32_t comm_id)
{
    struct conn *c = cm->conns[comm_id & 0xff];

    return c && c->local_comm_id == comm_id ? c : NULL;
}

/* An active connection by the guest's own communication ID and GID. */
static struct conn *conn_of_guest(struct vb_cm *cm, uint32_t guest_comm_id,
                                  const uint8_t gid[16], bool udp)
{
    for (unsigned i = 0; i < VB_CM_MAX_CONNS; i++) {
        struct conn *c = cm->conns[i];

        if (c && !c->passive && c->udp == udp &&
            c->guest_comm_id == guest_comm_id &&
            !memcmp(c->guest_gid, gid, 16)) {
            return c;
        }
    }
    return NULL;
}

/*
 * The connection is over and freed: its host ID goes now, or once the
 * event being handled is acknowledged (librdmacm's rdma_destroy_id waits
 * for that). Destroying an ID drops the events still queued for it, so
 * none names the freed connection afterwards.
 */
static void conn_end(struct vb_cm *cm, struct conn *c, bool in_event)
{
    if (c->id && in_event) {
        cm->doomed = c->id;
    } else if (c->id) {
        cm->ops->destroy_id(c->id);
    }
    cm->conns[c->index] = NULL;
    cm->nconns--;
    free(c);
}

static bool gid_is_guests(const struct vb_cm *cm, const uint8_t gid[16])
{
    for (unsigned i = 0; i < cm->cfg.ngids; i++) {
        if (!memcmp(cm->cfg.gid[i], gid, 16)) {
            return true;
        }
    }
    return false;
}

/* The CA GUID the guest sees for a peer: its GID's low 64 bits. */
static uint64_t peer_guid(const uint8_t gid[16])
{
    uint64_t g = 0;

    for (int i = 8; i < 16; i++) {
        g = g << 8 | gid[i];
    }
    return g;
}

/* ---- MADs to the guest -------------------------------------------------- */

static void give(struct vb_cm *cm, struct conn *c, const struct vb_cm_msg *m)
{
    uint8_t mad[VB_MAD_BYTES];

    vb_cm_encode(m, mad);
    memcpy(c->last, mad, sizeof(mad));
    c->have_last = true;
    cm->env.deliver(cm->env.opaque, c->peer_gid, c->guest_gid, mad);
}

static void give_again(struct vb_cm *cm, struct conn *c)
{
    if (c->have_last) {
        cm->env.deliver(cm->env.opaque, c->peer_gid, c->guest_gid, c->last);
    }
}

/* The DREP for the guest's DREQ. */
static void give_drep(struct vb_cm *cm, struct conn *c)
{
    struct vb_cm_msg m = { .attr = VB_CM_DREP };

    m.local_comm_id = c->local_comm_id;
    m.remote_comm_id = c->guest_comm_id;
    give(cm, c, &m);
}

/* A REJ (SIDR: a SIDR_REP with a status) for the guest's request. */
static void give_rej(struct vb_cm *cm, struct conn *c, uint16_t reason,
                     uint8_t message, const void *pdata, size_t len)
{
    struct vb_cm_msg m = { 0 };

    m.tid = c->tid;
    if (c->udp) {
        m.attr = VB_CM_SIDR_REP;
        m.local_comm_id = c->guest_comm_id;
        m.service_id = c->service_id;
        m.status = reason == VB_CM_REJ_INVALID_SERVICE_ID
                   ? VB_CM_SIDR_UNSUPPORTED : VB_CM_SIDR_REJECT;
    } else {
        m.attr = VB_CM_REJ;
        m.local_comm_id = c->local_comm_id;
        m.remote_comm_id = c->guest_comm_id;
        m.message = message;
        m.reason = reason;
    }
    if (pdata) {
        size_t max = vb_cm_pdata_len(m.attr);

        memcpy(m.pdata, pdata, len < max ? len : max);
    }
    give(cm, c, &m);
}

/* A REJ for a request the proxy holds no connection for (table full, bad). */
static void give_rej_unheld(struct vb_cm *cm, const struct vb_cm_msg *req,
                            const uint8_t sgid[16], const uint8_t dgid[16],
                            uint16_t reason)
{
    struct vb_cm_msg m = { 0 };
    uint8_t mad[VB_MAD_BYTES];

    m.tid = req->tid;
    if (req->attr == VB_CM_SIDR_REQ) {
        m.attr = VB_CM_SIDR_REP;
        m.local_comm_id = req->local_comm_id;
        m.service_id = req->service_id;
        m.status = reason == VB_CM_REJ_INVALID_SERVICE_ID
                   ? VB_CM_SIDR_UNSUPPORTED : VB_CM_SIDR_REJECT;
    } else {
        m.attr = VB_CM_REJ;
        m.remote_comm_id = req->local_comm_id;
        m.message = VB_CM_MSG_REQ;
        m.reason = reason;
    }
    vb_cm_encode(&m, mad);
    cm->env.deliver(cm->env.opaque, dgid, sgid, mad);
}

/* ---- the guest's MADs --------------------------------------------------- */

static void guest_req(struct vb_cm *cm, const struct vb_cm_msg *m,
                      const uint8_t sgid[16], const uint8_t dgid[16])
{
    bool udp = m->attr == VB_CM_SIDR_REQ;
    uint64_t ps = m->service_id & VB_CMA_SID_PS_MASK;
    struct vb_cma_hdr h;
    struct conn *c;
    int rc;

    c = conn_of_guest(cm, m->local_comm_id, sgid, udp);
    if (c) {
        give_again(cm, c);      /* a retry: answer it again, or wait */
        return;
    }
    if (ps != (udp ? VB_CMA_SID_UDP : VB_CMA_SID_TCP)) {
        guest_error(cm, "CM %s for service ID 0x%016llx: the proxy carries "
                    "rdma_cm's %s port space only", vb_cm_attr_name(m->attr),
                    (unsigned long long)m->service_id, udp ? "UDP" : "TCP");
        give_rej_unheld(cm, m, sgid, dgid, VB_CM_REJ_INVALID_SERVICE_ID);
        return;
    }
    if (!udp && m->transport_type != VB_CM_TRANSPORT_RC) {
        guest_error(cm, "CM REQ for transport type %u: only RC is carried",
                    m->transport_type);
        give_rej_unheld(cm, m, sgid, dgid, VB_CM_REJ_UNSUPPORTED_REQ);
        return;
    }
    if (vb_cma_hdr_get(m->pdata, &h) || !gid_is_guests(cm, h.src) ||
        !gid_is_guests(cm, sgid)) {
        guest_error(cm, "CM %s: its rdma_cm header is malformed or names a "
                    "source that is not one of the port's GIDs",
                    vb_cm_attr_name(m->attr));
        give_rej_unheld(cm, m, sgid, dgid, VB_CM_REJ_INVALID_GID);
        return;
    }
    c = conn_new(cm);
    if (!c) {
        guest_error(cm, "CM %s refused: %u connections are already proxied",
                    vb_cm_attr_name(m->attr), VB_CM_MAX_CONNS);
        give_rej_unheld(cm, m, sgid, dgid, VB_CM_REJ_NO_RESOURCES);
        return;
    }
    c->udp = udp;
    c->guest_comm_id = m->local_comm_id;
    c->tid = m->tid;
    c->service_id = m->service_id;
    c->req = *m;
    c->guest_qpn = udp ? 0 : m->qpn;
    memcpy(c->guest_gid, h.src, 16);
    memcpy(c->peer_gid, h.dst, 16);
    rc = cm->ops->create_id(cm->host, c, udp, &c->id);
    if (!rc) {
        c->state = CS_ADDR;
        rc = cm->ops->resolve_addr(c->id, h.src, h.src_port, h.dst,
                                   (uint16_t)m->service_id, CM_RESOLVE_MS);
    }
    if (rc) {
        give_rej(cm, c, rc == -ENOMEM ? VB_CM_REJ_NO_RESOURCES
                                      : VB_CM_REJ_TIMEOUT, VB_CM_MSG_REQ,
                 NULL, 0);
        conn_end(cm, c, false);
    }
}

/* The guest's REP or SIDR_REP to a request the proxy gave it. */
static void guest_rep(struct vb_cm *cm, struct conn *c,
                      const struct vb_cm_msg *m)
{
    struct vb_cmh_conn p = { 0 };
    size_t len = vb_cm_pdata_len(m->attr);
    int rc;

    if (c->state == CS_ACCEPTED || c->state == CS_ESTABLISHED) {
        give_again(cm, c);      /* a REP again: the RTU, if given */
        return;
    }
    if (c->state != CS_REQ_GIVEN || c->udp != (m->attr == VB_CM_SIDR_REP)) {
        guest_error(cm, "CM %s for a connection in state %s dropped",
                    vb_cm_attr_name(m->attr), state_names[c->state]);
        return;
    }
    c->deadline = 0;
    if (!c->udp) {
        c->guest_comm_id = m->local_comm_id;
    }
    if (c->udp && m->status != VB_CM_SIDR_SUCCESS) {
        cm->ops->reject(c->id, m->pdata, (uint8_t)len);
        conn_end(cm, c, false);
        return;
    }
    p.qpn = m->qpn;
    p.qkey = m->qkey;
    p.responder_resources = m->responder_resources;
    p.initiator_depth = m->initiator_depth;
    p.rnr_retry_count = m->rnr_retry_count;
    p.srq = m->srq;
    p.pdata_len = (uint8_t)len;
    memcpy(p.pdata, m->pdata, len);
    rc = cm->ops->accept(c->id, &p);
    if (rc || c->udp) {
        if (rc) {
            guest_error(cm, "CM %s: the host's rdma_accept failed (%s); the "
                        "peer is rejected", vb_cm_attr_name(m->attr),
                        strerror(-rc));
            cm->ops->reject(c->id, NULL, 0);
            if (!c->udp) {
                give_rej(cm, c, VB_CM_REJ_NO_RESOURCES, VB_CM_MSG_REP, NULL, 0);
            }
        }
        conn_end(cm, c, false);
        return;
    }
    c->guest_qpn = m->qpn;
    c->state = CS_ACCEPTED;
}

static void guest_rtu(struct vb_cm *cm, struct conn *c)
{
    if (c->state == CS_ESTABLISHED) {
        return;
    }
    if (c->state != CS_REP_GIVEN) {
        guest_error(cm, "CM RTU for a connection in state %s dropped",
                    state_names[c->state]);
        return;
    }
    c->deadline = 0;
    if (cm->ops->establish(c->id)) {
        /* the peer gets no RTU and gives up; the guest hears of it then */
        guest_error(cm, "CM RTU: the host's rdma_establish failed");
    }
    c->state = CS_ESTABLISHED;
}

static void guest_rej(struct vb_cm *cm, struct conn *c,
                      const struct vb_cm_msg *m)
{
    switch (c->state) {
    case CS_REQ_GIVEN:
    case CS_REP_GIVEN:
        cm->ops->reject(c->id, m->pdata, VB_CM_REJ_PDATA);
        conn_end(cm, c, false);
        return;
    case CS_ADDR:
    case CS_ROUTE:
    case CS_CONNECT:
    case CS_ACCEPTED:
        /* the guest gave up first: the host ID goes, the peer times out */
        conn_end(cm, c, false);
        return;
    default:
        guest_error(cm, "CM REJ for a connection in state %s dropped",
                    state_names[c->state]);
        return;
    }
}

static void guest_dreq(struct vb_cm *cm, struct conn *c)
{
    switch (c->state) {
    case CS_ESTABLISHED:
        c->state = CS_DREQ_SENT;
        if (cm->ops->disconnect(c->id)) {
            /* nothing will come from the host: answer at once */
            give_drep(cm, c);
            conn_end(cm, c, false);
        }
        return;
    case CS_DREQ_SENT:
        return;
    case CS_DREQ_GIVEN:
        /* both ends asked at once: answer the guest, finish on the host */
        give_drep(cm, c);
        cm->ops->disconnect(c->id);
        conn_end(cm, c, false);
        return;
    default:
        guest_error(cm, "CM DREQ for a connection in state %s dropped",
                    state_names[c->state]);
        return;
    }
}

static void guest_drep(struct vb_cm *cm, struct conn *c)
{
    if (c->state != CS_DREQ_GIVEN) {
        guest_error(cm, "CM DREP for a connection in state %s dropped",
                    state_names[c->state]);
        return;
    }
    cm->ops->disconnect(c->id);     /* the host's ib_cm sends the DREP */
    conn_end(cm, c, false);
}

/* A DREQ for no connection: answered with a DREP, as IBTA 12.9.8.4 has it. */
static void drep_unheld(struct vb_cm *cm, const struct vb_cm_msg *dreq,
                        const uint8_t sgid[16], const uint8_t dgid[16])
{
    struct vb_cm_msg m = { .attr = VB_CM_DREP };
    uint8_t mad[VB_MAD_BYTES];

    m.tid = dreq->tid;
    m.local_comm_id = dreq->remote_comm_id;
    m.remote_comm_id = dreq->local_comm_id;
    vb_cm_encode(&m, mad);
    cm->env.deliver(cm->env.opaque, dgid, sgid, mad);
}

void vb_cm_guest_mad(struct vb_cm *cm, const uint8_t sgid[16],
                     const uint8_t dgid[16], const uint8_t *mad, size_t len)
{
    struct vb_cm_msg m;
    struct conn *c;
    uint32_t ours;
    int rc;

    rc = vb_cm_decode(mad, len, &m);
    if (rc == -EPROTO || rc == -EINVAL) {
        guest_error(cm, "GSI MAD of class 0x%02x version %u dropped: in verbs "
                    "mode only connection management (class 0x07 version 2) "
                    "is carried", len > 2 ? mad[1] : 0, len > 2 ? mad[2] : 0);
        return;
    }
    if (rc) {
        guest_error(cm, "CM %s (attribute 0x%04x) dropped: not carried in "
                    "verbs mode", vb_cm_attr_name(m.attr), m.attr);
        return;
    }
    if (m.method != VB_MAD_METHOD_SEND) {
        guest_error(cm, "CM %s with method 0x%02x dropped",
                    vb_cm_attr_name(m.attr), m.method);
        return;
    }
    if (m.attr == VB_CM_REQ || m.attr == VB_CM_SIDR_REQ) {
        guest_req(cm, &m, sgid, dgid);
        return;
    }
    /*
     * Every other message names the proxy's ID: SIDR_REP's request ID in
     * the first field, the others' remote ID in the second.
     */
    ours = m.attr == VB_CM_SIDR_REP ? m.local_comm_id : m.remote_comm_id;
    c = conn_of_id(cm, ours);
    if (!c) {
        if (m.attr == VB_CM_DREQ) {
            drep_unheld(cm, &m, sgid, dgid);
            return;
        }
        if (m.attr != VB_CM_REJ && m.attr != VB_CM_MRA) {
            guest_error(cm, "CM %s for communication ID 0x%08x, which the "
                        "proxy does not hold, dropped", vb_cm_attr_name(m.attr),
                        ours);
        }
        return;
    }
    switch (m.attr) {
    case VB_CM_REP:
    case VB_CM_SIDR_REP:
        guest_rep(cm, c, &m);
        return;
    case VB_CM_RTU:
        guest_rtu(cm, c);
        return;
    case VB_CM_REJ:
        guest_rej(cm, c, &m);
        return;
    case VB_CM_MRA:
        /* the guest asks for time: give it, the host's CM keeps the peer */
        if (c->deadline) {
            deadline_set(cm, c);
        }
        return;
    case VB_CM_DREQ:
        guest_dreq(cm, c);
        return;
    case VB_CM_DREP:
        guest_drep(cm, c);
        return;
    default:
        guest_error(cm, "CM %s dropped", vb_cm_attr_name(m.attr));
        return;
    }
}

/* ---- the host's events -------------------------------------------------- */

/* The guest's request could not be carried: tell it, end the connection. */
static void active_failed(struct vb_cm *cm, struct conn *c, uint16_t reason,
                          const struct vb_cmh_conn *peer)
{
    give_rej(cm, c, reason, VB_CM_MSG_REQ, peer ? peer->pdata : NULL,
             peer ? peer->pdata_len : 0);
    conn_end(cm, c, true);
}

static void host_addr_resolved(struct vb_cm *cm, struct conn *c)
{
    char dev[64] = "";
    uint8_t port = 0;

    if (cm->ops->device(c->id, dev, sizeof(dev), &port) ||
        strcmp(dev, cm->ibdev) || port != cm->cfg.ibport) {
        guest_error(cm, "CM %s: the host reaches the peer through %s port %u, "
                    "not the device's %s port %u", vb_cm_attr_name(c->req.attr),
                    dev[0] ? dev : "no RDMA device", port, cm->ibdev,
                    cm->cfg.ibport);
        active_failed(cm, c, VB_CM_REJ_INVALID_GID, NULL);
        return;
    }
    c->state = CS_ROUTE;
    if (cm->ops->resolve_route(c->id, CM_RESOLVE_MS)) {
        active_failed(cm, c, VB_CM_REJ_TIMEOUT, NULL);
    }
}

static void host_route_resolved(struct vb_cm *cm, struct conn *c)
{
    struct vb_cmh_conn p = { 0 };
    size_t len = vb_cm_pdata_len(c->req.attr) - VB_CMA_HDR_BYTES;

    /*
     * The guest's private data after its rdma_cm header: the host's CM
     * writes its own header, with the same addresses.
     */
    p.qpn = c->req.qpn;
    p.responder_resources = c->req.responder_resources;
    p.initiator_depth = c->req.initiator_depth;
    p.retry_count = c->req.retry_count;
    p.rnr_retry_count = c->req.rnr_retry_count;
    p.srq = c->req.srq;
    p.pdata_len = (uint8_t)len;
    memcpy(p.pdata, c->req.pdata + VB_CMA_HDR_BYTES, len);
    c->state = CS_CONNECT;
    if (cm->ops->connect(c->id, &p)) {
        active_failed(cm, c, VB_CM_REJ_NO_RESOURCES, NULL);
    }
}

static void host_connect_response(struct vb_cm *cm, struct conn *c,
                                  const struct vb_cmh_event *ev)
{
    struct vb_cmh_qp_attrs a;
    struct vb_cm_msg m = { .attr = VB_CM_REP };

    if (cm->ops->qp_attrs(c->id, &a)) {
        cm->ops->reject(c->id, NULL, 0);
        active_failed(cm, c, VB_CM_REJ_NO_RESOURCES, NULL);
        return;
    }
    c->peer_qpn = ev->conn.qpn;
    c->peer_psn = a.sq_psn;
    c->host_psn = a.rq_psn;
    c->host_psn_known = true;
    m.tid = c->tid;
    m.local_comm_id = c->local_comm_id;
    m.remote_comm_id = c->guest_comm_id;
    m.qpn = c->peer_qpn;
    m.starting_psn = c->peer_psn;
    /* the wire's, from the peer's side (the event's are from ours) */
    m.responder_resources = ev->conn.initiator_depth;
    m.initiator_depth = ev->conn.responder_resources;
    m.target_ack_delay = 0;
    m.e2e_flow_control = true;
    m.rnr_retry_count = ev->conn.rnr_retry_count;
    m.srq = ev->conn.srq;
    m.ca_guid = peer_guid(c->peer_gid);
    memcpy(m.pdata, ev->conn.pdata, ev->conn.pdata_len);
    give(cm, c, &m);
    c->state = CS_REP_GIVEN;
    deadline_set(cm, c);
}

/* A UD service resolved (SIDR): the SIDR_REP for the guest, done. */
static void host_sidr_done(struct vb_cm *cm, struct conn *c,
                           const struct vb_cmh_event *ev)
{
    struct vb_cm_msg m = { .attr = VB_CM_SIDR_REP };

    m.tid = c->tid;
    m.local_comm_id = c->guest_comm_id;
    m.status = VB_CM_SIDR_SUCCESS;
    m.qpn = ev->conn.qpn;
    m.qkey = ev->conn.qkey;
    m.service_id = c->service_id;
    memcpy(m.pdata, ev->conn.pdata, ev->conn.pdata_len);
    give(cm, c, &m);
    conn_end(cm, c, true);
}

/* A peer connects to a port the proxy listens on: its REQ for the guest. */
static void host_connect_request(struct vb_cm *cm, struct listener *l,
                                 const struct vb_cmh_event *ev)
{
    struct vb_cmh_qp_attrs a = { 0 };
    struct vb_cm_msg m = { 0 };
    struct vb_cma_hdr h = { 0 };
    uint16_t local_port = 0, peer_port = 0;
    size_t room;
    struct conn *c = conn_new(cm);

    if (!c) {
        guest_error(cm, "a peer's connection to port %u refused: %u "
                    "connections are already proxied", l->port,
                    VB_CM_MAX_CONNS);
        cm->ops->reject(ev->id, NULL, 0);
        cm->doomed = ev->id;
        return;
    }
    c->passive = true;
    c->udp = l->udp;
    c->id = ev->id;
    cm->ops->set_context(c->id, c);
    if (cm->ops->addrs(c->id, c->guest_gid, &local_port, c->peer_gid,
                       &peer_port) ||
        (!c->udp && cm->ops->qp_attrs(c->id, &a))) {
        cm->ops->reject(c->id, NULL, 0);
        conn_end(cm, c, true);
        return;
    }
    c->tid = ++cm->next_tid;
    c->service_id = (l->udp ? VB_CMA_SID_UDP : VB_CMA_SID_TCP) | l->port;
    h.ip_version = vb_gid_is_v4(c->peer_gid) ? 4 : 6;
    h.src_port = peer_port;
    memcpy(h.src, c->peer_gid, 16);
    memcpy(h.dst, c->guest_gid, 16);
    m.tid = c->tid;
    m.local_comm_id = c->local_comm_id;
    m.service_id = c->service_id;
    if (c->udp) {
        m.attr = VB_CM_SIDR_REQ;
        m.pkey = CM_PKEY_DEFAULT;
    } else {
        c->peer_qpn = ev->conn.qpn;
        c->peer_psn = a.sq_psn;
        c->host_psn = a.rq_psn;
        c->host_psn_known = true;
        m.attr = VB_CM_REQ;
        m.ca_guid = peer_guid(c->peer_gid);
        m.qpn = c->peer_qpn;
        /* the wire's, from the peer's side (the event's are from ours) */
        m.responder_resources = ev->conn.initiator_depth;
        m.initiator_depth = ev->conn.responder_resources;
        m.remote_cm_response_timeout = CM_RESPONSE_TIMEOUT;
        m.transport_type = VB_CM_TRANSPORT_RC;
        m.e2e_flow_control = true;
        m.starting_psn = c->peer_psn;
        m.local_cm_response_timeout = CM_RESPONSE_TIMEOUT;
        m.retry_count = ev->conn.retry_count;
        m.pkey = CM_PKEY_DEFAULT;
        m.path_mtu = a.path_mtu;
        m.rnr_retry_count = ev->conn.rnr_retry_count;
        m.max_cm_retries = CM_MAX_RETRIES;
        m.srq = ev->conn.srq;
        m.primary.local_lid = CM_LID_PERMISSIVE;
        m.primary.remote_lid = CM_LID_PERMISSIVE;
        memcpy(m.primary.local_gid, c->peer_gid, 16);
        memcpy(m.primary.remote_gid, c->guest_gid, 16);
        m.primary.hop_limit = 64;
        m.primary.subnet_local = true;
        m.primary.local_ack_timeout = a.timeout;
    }
    vb_cma_hdr_put(&h, m.pdata);
    room = vb_cm_pdata_len(m.attr) - VB_CMA_HDR_BYTES;
    memcpy(m.pdata + VB_CMA_HDR_BYTES, ev->conn.pdata,
           ev->conn.pdata_len < room ? ev->conn.pdata_len : room);
    give(cm, c, &m);
    c->state = CS_REQ_GIVEN;
    deadline_set(cm, c);
}

static void host_established(struct vb_cm *cm, struct conn *c,
                             const struct vb_cmh_event *ev)
{
    struct vb_cm_msg m = { .attr = VB_CM_RTU };

    if (c->udp && c->state == CS_CONNECT) {
        host_sidr_done(cm, c, ev);
        return;
    }
    if (c->state != CS_ACCEPTED) {
        return;
    }
    m.local_comm_id = c->local_comm_id;
    m.remote_comm_id = c->guest_comm_id;
    give(cm, c, &m);
    c->state = CS_ESTABLISHED;
}

static void host_disconnected(struct vb_cm *cm, struct conn *c)
{
    struct vb_cm_msg m = { 0 };

    m.local_comm_id = c->local_comm_id;
    m.remote_comm_id = c->guest_comm_id;
    switch (c->state) {
    case CS_DREQ_SENT:
        give_drep(cm, c);
        conn_end(cm, c, true);
        return;
    case CS_ESTABLISHED:
        m.attr = VB_CM_DREQ;
        m.tid = ++cm->next_tid;
        m.qpn = c->guest_qpn;
        give(cm, c, &m);
        c->state = CS_DREQ_GIVEN;
        deadline_set(cm, c);
        return;
    case CS_REP_GIVEN:
    case CS_ACCEPTED:
        give_rej(cm, c, VB_CM_REJ_TIMEOUT, VB_CM_MSG_OTHER, NULL, 0);
        conn_end(cm, c, true);
        return;
    default:
        return;
    }
}

/* A host failure of a connection's setup. */
static void host_failed(struct vb_cm *cm, struct conn *c,
                        const struct vb_cmh_event *ev)
{
    switch (c->state) {
    case CS_ADDR:
    case CS_ROUTE:
    case CS_CONNECT:
        if (ev->type == VB_CMH_REJECTED) {
            active_failed(cm, c, (uint16_t)ev->status, &ev->conn);
        } else {
            active_failed(cm, c, ev->type == VB_CMH_ADDR_ERROR ||
                          ev->type == VB_CMH_ROUTE_ERROR
                          ? VB_CM_REJ_INVALID_GID : VB_CM_REJ_TIMEOUT, NULL);
        }
        return;
    case CS_REQ_GIVEN:
    case CS_ACCEPTED:
    case CS_REP_GIVEN:
        give_rej(cm, c, ev->type == VB_CMH_REJECTED ? (uint16_t)ev->status
                                                    : VB_CM_REJ_TIMEOUT,
                 VB_CM_MSG_OTHER, NULL, 0);
        conn_end(cm, c, true);
        return;
    default:
        /* established or closing: the data path reports what broke */
        return;
    }
}

static void host_event(struct vb_cm *cm, const struct vb_cmh_event *ev)
{
    enum ctx_kind *kind = ev->context;
    struct conn *c;

    if (!kind) {
        return;
    }
    if (*kind == CTX_LISTENER) {
        if (ev->type == VB_CMH_CONNECT_REQUEST) {
            host_connect_request(cm, (struct listener *)kind, ev);
        }
        return;
    }
    c = (struct conn *)kind;
    switch (ev->type) {
    case VB_CMH_ADDR_RESOLVED:
        if (c->state == CS_ADDR) {
            host_addr_resolved(cm, c);
        }
        return;
    case VB_CMH_ROUTE_RESOLVED:
        if (c->state == CS_ROUTE) {
            host_route_resolved(cm, c);
        }
        return;
    case VB_CMH_CONNECT_RESPONSE:
        if (c->state == CS_CONNECT && !c->udp) {
            host_connect_response(cm, c, ev);
        }
        return;
    case VB_CMH_ESTABLISHED:
        host_established(cm, c, ev);
        return;
    case VB_CMH_DISCONNECTED:
        host_disconnected(cm, c);
        return;
    case VB_CMH_ADDR_ERROR:
    case VB_CMH_ROUTE_ERROR:
    case VB_CMH_CONNECT_ERROR:
    case VB_CMH_UNREACHABLE:
    case VB_CMH_REJECTED:
    case VB_CMH_DEVICE_REMOVAL:
        host_failed(cm, c, ev);
        return;
    default:
        return;
    }
}

static void deadlines(struct vb_cm *cm)
{
    uint64_t t = now(cm);

    if (t < cm->earliest) {
        return;
    }
    /* recomputed by the walk, and lowered by any deadline set during it */
    cm->earliest = UINT64_MAX;
    for (unsigned i = 0; i < VB_CM_MAX_CONNS; i++) {
        struct conn *c = cm->conns[i];

        if (!c || !c->deadline) {
            continue;
        }
        if (t < c->deadline) {
            if (c->deadline < cm->earliest) {
                cm->earliest = c->deadline;
            }
            continue;
        }
        guest_error(cm, "CM connection 0x%08x: no answer from the guest in "
                    "state %s within %llu s; ended", c->local_comm_id,
                    state_names[c->state],
                    (unsigned long long)(cm->cfg.guest_timeout_ns /
                                         1000000000ull));
        switch (c->state) {
        case CS_REQ_GIVEN:
        case CS_REP_GIVEN:
            cm->ops->reject(c->id, NULL, 0);
            give_rej(cm, c, VB_CM_REJ_TIMEOUT, VB_CM_MSG_OTHER, NULL, 0);
            break;
        case CS_DREQ_GIVEN:
            cm->ops->disconnect(c->id);
            break;
        default:
            break;
        }
        conn_end(cm, c, false);
    }
}

void vb_cm_poll(struct vb_cm *cm)
{
    struct vb_cmh_event ev;

    /* bounded: at most one event per connection and listener a call */
    for (unsigned n = 0; n < VB_CM_MAX_CONNS + cm->nlisteners; n++) {
        if (cm->ops->get_event(cm->host, &ev)) {
            break;
        }
        cm->doomed = NULL;
        host_event(cm, &ev);
        cm->ops->ack_event(cm->host, &ev);
        if (cm->doomed) {
            cm->ops->destroy_id(cm->doomed);
            cm->doomed = NULL;
        }
    }
    deadlines(cm);
}

void vb_cm_poll_deadlines(struct vb_cm *cm)
{
    deadlines(cm);
}

bool vb_cm_rtr_psn(struct vb_cm *cm, uint32_t qpn, const uint8_t dgid[16],
                   uint32_t dest_qpn, uint32_t *rq_psn)
{
    for (unsigned i = 0; i < VB_CM_MAX_CONNS; i++) {
        struct conn *c = cm->conns[i];

        if (!c || c->udp || !c->host_psn_known ||
            c->peer_qpn != dest_qpn || memcmp(c->peer_gid, dgid, 16)) {
            continue;
        }
        if (c->guest_qpn && c->guest_qpn != qpn) {
            continue;
        }
        c->guest_qpn = qpn;
        *rq_psn = c->host_psn;
        return true;
    }
    return false;
}

uint64_t vb_cm_deadline(const struct vb_cm *cm)
{
    return cm->earliest;
}

unsigned vb_cm_conns(const struct vb_cm *cm)
{
    return cm->nconns;
}

int vb_cm_fd(struct vb_cm *cm)
{
    return cm->ops->fd(cm->host);
}

/* ---- life --------------------------------------------------------------- */

static void conns_drop(struct vb_cm *cm)
{
    for (unsigned i = 0; i < VB_CM_MAX_CONNS; i++) {
        struct conn *c = cm->conns[i];

        if (c) {
            conn_end(cm, c, false);
        }
    }
}

static void listeners_drop(struct vb_cm *cm)
{
    for (unsigned i = 0; i < cm->nlisteners; i++) {
        cm->ops->destroy_id(cm->listeners[i].id);
    }
    cm->nlisteners = 0;
}

struct vb_cm *vb_cm_create(const struct vb_cmh_ops *ops, void *host,
                           const struct vb_cm_env *env,
                           const struct vb_cm_config *cfg, char *err,
                           size_t err_len)
{
    struct vb_cm *cm = calloc(1, sizeof(*cm));
    int rc;

    if (!cm) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    cm->ops = ops;
    cm->host = host;
    cm->env = *env;
    cm->cfg = *cfg;
    snprintf(cm->ibdev, sizeof(cm->ibdev), "%s", cfg->ibdev ? cfg->ibdev : "");
    cm->cfg.ibdev = cm->ibdev;
    if (!cm->cfg.guest_timeout_ns) {
        cm->cfg.guest_timeout_ns = CM_DEFAULT_GUEST_NS;
    }
    if (cm->cfg.ngids > 8 || cm->cfg.nlisten > VB_CM_MAX_LISTEN) {
        snprintf(err, err_len, "too many GIDs or listening ports");
        free(cm);
        return NULL;
    }
    for (unsigned g = 0; g < cm->cfg.ngids; g++) {
        for (unsigned p = 0; p < cm->cfg.nlisten; p++) {
            for (int udp = 0; udp < 2; udp++) {
                struct listener *l = &cm->listeners[cm->nlisteners];

                l->kind = CTX_LISTENER;
                l->udp = udp;
                l->port = cm->cfg.listen[p];
                memcpy(l->gid, cm->cfg.gid[g], 16);
                rc = ops->create_id(host, l, udp, &l->id);
                if (rc) {
                    goto fail;
                }
                cm->nlisteners++;
                rc = ops->listen(l->id, l->gid, l->port);
                if (rc) {
                    goto fail;
                }
            }
        }
    }
    return cm;

fail:
    snprintf(err, err_len, "the host's rdma_cm cannot listen on port %u: %s",
             cm->listeners[cm->nlisteners ? cm->nlisteners - 1 : 0].port,
             strerror(-rc));
    listeners_drop(cm);
    free(cm);
    return NULL;
}

void vb_cm_reset(struct vb_cm *cm)
{
    conns_drop(cm);
}

void vb_cm_destroy(struct vb_cm *cm)
{
    if (!cm) {
        return;
    }
    conns_drop(cm);
    listeners_drop(cm);
    free(cm);
}
