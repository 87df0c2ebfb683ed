/*
 * The CM proxy's host rdma_cm (struct vb_cmh_ops, vb_cm.h) on librdmacm:
 * one event channel per device, non-blocking, and IDs with no QP (the
 * guest QP's host QP is named by its QPN in the connection parameters,
 * rdma_connect(3), rdma_accept(3)). Addresses cross as GIDs: an
 * IPv4-mapped GID is an AF_INET address, any other an AF_INET6 one.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "vb_cm.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The event numbering is librdmacm's own (vb_cm.h says so). */
#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " is not " #b)
SAME(VB_CMH_ADDR_RESOLVED, RDMA_CM_EVENT_ADDR_RESOLVED);
SAME(VB_CMH_ADDR_ERROR, RDMA_CM_EVENT_ADDR_ERROR);
SAME(VB_CMH_ROUTE_RESOLVED, RDMA_CM_EVENT_ROUTE_RESOLVED);
SAME(VB_CMH_ROUTE_ERROR, RDMA_CM_EVENT_ROUTE_ERROR);
SAME(VB_CMH_CONNECT_REQUEST, RDMA_CM_EVENT_CONNECT_REQUEST);
SAME(VB_CMH_CONNECT_RESPONSE, RDMA_CM_EVENT_CONNECT_RESPONSE);
SAME(VB_CMH_CONNECT_ERROR, RDMA_CM_EVENT_CONNECT_ERROR);
SAME(VB_CMH_UNREACHABLE, RDMA_CM_EVENT_UNREACHABLE);
SAME(VB_CMH_REJECTED, RDMA_CM_EVENT_REJECTED);
SAME(VB_CMH_ESTABLISHED, RDMA_CM_EVENT_ESTABLISHED);
SAME(VB_CMH_DISCONNECTED, RDMA_CM_EVENT_DISCONNECTED);
SAME(VB_CMH_DEVICE_REMOVAL, RDMA_CM_EVENT_DEVICE_REMOVAL);
SAME(VB_CMH_ADDR_CHANGE, RDMA_CM_EVENT_ADDR_CHANGE);
SAME(VB_CMH_TIMEWAIT_EXIT, RDMA_CM_EVENT_TIMEWAIT_EXIT);

/* The host handle: the channel, and the event get_event handed out last. */
struct lcm {
    struct rdma_event_channel *ch;
    struct rdma_cm_event *pending;
};

static int neg_errno(void)
{
    return errno ? -errno : -EIO;
}

static int to_sockaddr(const uint8_t gid[16], uint16_t port,
                       struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (vb_gid_is_v4(gid)) {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;

        in->sin_family = AF_INET;
        in->sin_port = htons(port);
        memcpy(&in->sin_addr, gid + 12, 4);
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        memcpy(&in6->sin6_addr, gid, 16);
    }
    return 0;
}

static void from_sockaddr(const struct sockaddr *sa, uint8_t gid[16],
                          uint16_t *port)
{
    memset(gid, 0, 16);
    *port = 0;
    if (!sa) {
        return;
    }
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

        gid[10] = gid[11] = 0xff;
        memcpy(gid + 12, &in->sin_addr, 4);
        *port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

        memcpy(gid, &in6->sin6_addr, 16);
        *port = ntohs(in6->sin6_port);
    }
}

static void conn_to_param(const struct vb_cmh_conn *p,
                          struct rdma_conn_param *cp)
{
    memset(cp, 0, sizeof(*cp));
    cp->private_data = p->pdata_len ? p->pdata : NULL;
    cp->private_data_len = p->pdata_len;
    cp->responder_resources = p->responder_resources;
    cp->initiator_depth = p->initiator_depth;
    cp->flow_control = 1;
    cp->retry_count = p->retry_count;
    cp->rnr_retry_count = p->rnr_retry_count;
    cp->srq = p->srq;
    cp->qp_num = p->qpn;
}

static void copy_pdata(struct vb_cmh_conn *c, const void *data, uint8_t len)
{
    c->pdata_len = len < VB_CM_PDATA_MAX ? len : VB_CM_PDATA_MAX;
    if (data) {
        memcpy(c->pdata, data, c->pdata_len);
    }
}

static int l_fd(void *host)
{
    return ((struct lcm *)host)->ch->fd;
}

static int l_get_event(void *host, struct vb_cmh_event *ev)
{
    struct lcm *h = host;
    struct rdma_cm_event *e;

    if (rdma_get_cm_event(h->ch, &e)) {
        return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : neg_errno();
    }
    h->pending = e;
    memset(ev, 0, sizeof(*ev));
    ev->type = (enum vb_cmh_event_type)e->event;
    ev->id = e->id;
    /*
     * A CONNECT_REQUEST's ID is new: its context is the listener's until
     * the proxy sets its own (librdmacm copies the listener's).
     */
    ev->context = e->event == RDMA_CM_EVENT_CONNECT_REQUEST && e->listen_id
                  ? e->listen_id->context : e->id->context;
    ev->status = e->status;
    if (e->id->ps == RDMA_PS_UDP && e->event == RDMA_CM_EVENT_ESTABLISHED) {
        ev->conn.qpn = e->param.ud.qp_num;
        ev->conn.qkey = e->param.ud.qkey;
        copy_pdata(&ev->conn, e->param.ud.private_data,
                   e->param.ud.private_data_len);
        return 0;
    }
    ev->conn.qpn = e->param.conn.qp_num;
    ev->conn.responder_resources = e->param.conn.responder_resources;
    ev->conn.initiator_depth = e->param.conn.initiator_depth;
    ev->conn.retry_count = e->param.conn.retry_count;
    ev->conn.rnr_retry_count = e->param.conn.rnr_retry_count;
    ev->conn.srq = e->param.conn.srq;
    copy_pdata(&ev->conn, e->param.conn.private_data,
               e->param.conn.private_data_len);
    return 0;
}

static void l_ack_event(void *host, struct vb_cmh_event *ev)
{
    struct lcm *h = host;

    if (h->pending) {
        rdma_ack_cm_event(h->pending);
        h->pending = NULL;
    }
}

static int l_create_id(void *host, void *context, bool udp, void **id)
{
    struct lcm *h = host;
    struct rdma_cm_id *cid;

    if (rdma_create_id(h->ch, &cid, context, udp ? RDMA_PS_UDP : RDMA_PS_TCP)) {
        return neg_errno();
    }
    *id = cid;
    return 0;
}

static void l_set_context(void *id, void *context)
{
    ((struct rdma_cm_id *)id)->context = context;
}

static int l_destroy_id(void *id)
{
    return rdma_destroy_id(id) ? neg_errno() : 0;
}

static int l_resolve_addr(void *id, const uint8_t src[16], uint16_t src_port,
                          const uint8_t dst[16], uint16_t dst_port,
                          int timeout_ms)
{
    struct sockaddr_storage s, d;

    to_sockaddr(src, src_port, &s);
    to_sockaddr(dst, dst_port, &d);
    /*
     * The guest's source port, when the host has it free: the peer's
     * rdma_cm reports it (rdma_get_dst_port); else one the host picks.
     */
    if (src_port && rdma_bind_addr(id, (struct sockaddr *)&s)) {
        ((struct sockaddr_in *)&s)->sin_port = 0;   /* same place in both */
    }
    return rdma_resolve_addr(id, (struct sockaddr *)&s, (struct sockaddr *)&d,
                             timeout_ms)
           ? neg_errno() : 0;
}

static int l_resolve_route(void *id, int timeout_ms)
{
    return rdma_resolve_route(id, timeout_ms) ? neg_errno() : 0;
}

static int l_device(void *id, char *ibdev, size_t len, uint8_t *port)
{
    struct rdma_cm_id *cid = id;

    if (!cid->verbs) {
        return -ENODEV;
    }
    snprintf(ibdev, len, "%s", ibv_get_device_name(cid->verbs->device));
    *port = cid->port_num;
    return 0;
}

static int l_addrs(void *id, uint8_t local[16], uint16_t *local_port,
                   uint8_t peer[16], uint16_t *peer_port)
{
    from_sockaddr(rdma_get_local_addr(id), local, local_port);
    from_sockaddr(rdma_get_peer_addr(id), peer, peer_port);
    return 0;
}

static int l_connect(void *id, const struct vb_cmh_conn *p)
{
    struct rdma_conn_param cp;

    conn_to_param(p, &cp);
    return rdma_connect(id, &cp) ? neg_errno() : 0;
}

static int l_accept(void *id, const struct vb_cmh_conn *p)
{
    struct rdma_conn_param cp;

    /*
     * UD: the guest's QPN goes out in the SIDR_REP; its Q_Key is rdma_cm's
     * own for an IP port space (RDMA_UDP_QKEY), whatever the guest said.
     */
    conn_to_param(p, &cp);
    return rdma_accept(id, &cp) ? neg_errno() : 0;
}

static int l_reject(void *id, const void *pdata, uint8_t len)
{
    return rdma_reject(id, pdata, len) ? neg_errno() : 0;
}

static int l_establish(void *id)
{
    return rdma_establish(id) ? neg_errno() : 0;
}

static int l_disconnect(void *id)
{
    return rdma_disconnect(id) ? neg_errno() : 0;
}

static int l_listen(void *id, const uint8_t addr[16], uint16_t port)
{
    struct sockaddr_storage s;

    to_sockaddr(addr, port, &s);
    if (rdma_bind_addr(id, (struct sockaddr *)&s)) {
        return neg_errno();
    }
    return rdma_listen(id, 64) ? neg_errno() : 0;
}

static int l_qp_attrs(void *id, struct vb_cmh_qp_attrs *out)
{
    struct ibv_qp_attr a;
    int mask;

    memset(out, 0, sizeof(*out));
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    if (rdma_init_qp_attr(id, &a, &mask)) {
        return neg_errno();
    }
    out->dest_qpn = a.dest_qp_num;
    out->rq_psn = a.rq_psn;
    out->path_mtu = a.path_mtu;
    out->max_dest_rd_atomic = a.max_dest_rd_atomic;
    out->min_rnr_timer = a.min_rnr_timer;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    if (rdma_init_qp_attr(id, &a, &mask)) {
        return neg_errno();
    }
    out->sq_psn = a.sq_psn;
    out->timeout = a.timeout;
    out->retry_cnt = a.retry_cnt;
    out->rnr_retry = a.rnr_retry;
    out->max_rd_atomic = a.max_rd_atomic;
    return 0;
}

const struct vb_cmh_ops qrdma_vb_rdmacm_ops = {
    .fd = l_fd,
    .get_event = l_get_event,
    .ack_event = l_ack_event,
    .create_id = l_create_id,
    .set_context = l_set_context,
    .destroy_id = l_destroy_id,
    .resolve_addr = l_resolve_addr,
    .resolve_route = l_resolve_route,
    .device = l_device,
    .addrs = l_addrs,
    .connect = l_connect,
    .accept = l_accept,
    .reject = l_reject,
    .establish = l_establish,
    .disconnect = l_disconnect,
    .listen = l_listen,
    .qp_attrs = l_qp_attrs,
};

void *qrdma_vb_rdmacm_open(char *err, size_t err_len)
{
    struct lcm *h = calloc(1, sizeof(*h));
    int flags;

    if (!h) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    h->ch = rdma_create_event_channel();
    if (!h->ch) {
        snprintf(err, err_len, "the host's rdma_cm cannot be opened (%s; is "
                 "rdma_ucm loaded?)", strerror(errno));
        free(h);
        return NULL;
    }
    flags = fcntl(h->ch->fd, F_GETFL);
    if (flags < 0 || fcntl(h->ch->fd, F_SETFL, flags | O_NONBLOCK)) {
        snprintf(err, err_len, "rdma_cm event channel: %s", strerror(errno));
        rdma_destroy_event_channel(h->ch);
        free(h);
        return NULL;
    }
    return h;
}

void qrdma_vb_rdmacm_close(void *host)
{
    struct lcm *h = host;

    if (!h) {
        return;
    }
    if (h->pending) {
        rdma_ack_cm_event(h->pending);
    }
    rdma_destroy_event_channel(h->ch);
    free(h);
}
