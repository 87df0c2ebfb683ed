/*
 * The rdma_cm model (verbs_cm_model.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "verbs_cm_model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "test_eventfd.h"

enum mid_state {
    MS_IDLE,
    MS_ADDR,            /* address resolved */
    MS_ROUTE,           /* route resolved */
    MS_LISTEN,
    MS_CONNECTING,      /* active: REQ sent */
    MS_REQ_RCVD,        /* passive: CONNECT_REQUEST given */
    MS_REP_RCVD,        /* active: CONNECT_RESPONSE given */
    MS_ACCEPTED,        /* passive: REP sent */
    MS_CONNECTED,
    MS_DISCONNECTING,   /* DREQ sent */
    MS_DREQ_RCVD,
    MS_DONE,
};

struct mid {
    bool live;
    struct cmm_host *h;
    void *context;
    bool udp;
    enum mid_state state;
    uint8_t local[16], peer[16];
    uint16_t local_port, peer_port;
    struct mid *remote;
    struct vb_cmh_conn param;   /* what this side sent in its REQ or REP */
    uint32_t psn;
};

struct cmm_host {
    struct cmm_world *w;
    char ibdev[32];
    uint8_t gid[16];
    struct vb_cmh_event ev[CMM_MAX_EVENTS];
    unsigned ev_head, ev_n;
    bool acked;                 /* the last event given was acked */
    unsigned nids;              /* its live IDs (cmm_host_ids) */
    bool has_fd;                /* cmm_host_use_fd: efd readable while ev_n */
    int efd;
    enum cmm_call fail_call;
    int fail_err;
};

#define CMM_MAX_HOSTS 4

struct cmm_world {
    uint32_t rng;
    unsigned nhosts;
    struct cmm_host *hosts[CMM_MAX_HOSTS];
    struct cmm_host host_store[CMM_MAX_HOSTS];
    struct mid ids[CMM_MAX_IDS];
    uint16_t next_port;
};

/*
 * The last world freed, kept for the next: a fuzzer makes one per input,
 * and fresh pages for each would be most of its time.
 */
static struct cmm_world *spare_world;

static uint32_t rnd(struct cmm_world *w)
{
    w->rng = w->rng * 1103515245u + 12345u;
    return w->rng >> 8;
}

static bool fail(struct cmm_host *h, enum cmm_call call, int *err)
{
    if (h->fail_err && h->fail_call == call) {
        *err = h->fail_err;
        h->fail_err = 0;
        return true;
    }
    return false;
}

static void post(struct cmm_host *h, struct mid *id, enum vb_cmh_event_type t,
                 int status, const struct vb_cmh_conn *conn, void *context)
{
    struct vb_cmh_event *e;

    if (h->ev_n == CMM_MAX_EVENTS) {
        fprintf(stderr, "cm model: event queue full\n");
        abort();
    }
    e = &h->ev[(h->ev_head + h->ev_n++) % CMM_MAX_EVENTS];
    if (h->has_fd) {
        fd_signal(h->efd);
    }
    memset(e, 0, sizeof(*e));
    e->type = t;
    e->id = id;
    e->context = context ? context : id->context;
    e->status = status;
    if (conn) {
        e->conn = *conn;
    }
}

static struct cmm_host *host_of_gid(struct cmm_world *w, const uint8_t gid[16])
{
    for (unsigned i = 0; i < w->nhosts; i++) {
        if (!memcmp(w->hosts[i]->gid, gid, 16)) {
            return w->hosts[i];
        }
    }
    return NULL;
}

static struct mid *mid_new(struct cmm_host *h, void *context, bool udp)
{
    for (unsigned i = 0; i < CMM_MAX_IDS; i++) {
        struct mid *m = &h->w->ids[i];

        if (!m->live) {
            memset(m, 0, sizeof(*m));
            m->live = true;
            m->h = h;
            h->nids++;
            m->context = context;
            m->udp = udp;
            m->psn = rnd(h->w) & 0xffffff;
            return m;
        }
    }
    return NULL;
}

static int m_fd(void *host)
{
    struct cmm_host *h = host;

    return h->has_fd ? h->efd : -1;
}

static int m_get_event(void *host, struct vb_cmh_event *ev)
{
    struct cmm_host *h = host;

    if (!h->acked) {
        fprintf(stderr, "cm model: get_event before the last was acked\n");
        abort();
    }
    if (!h->ev_n) {
        if (h->has_fd) {
            fd_clear(h->efd);
        }
        return -EAGAIN;
    }
    *ev = h->ev[h->ev_head];
    h->ev_head = (h->ev_head + 1) % CMM_MAX_EVENTS;
    h->ev_n--;
    h->acked = false;
    return 0;
}

static void m_ack_event(void *host, struct vb_cmh_event *ev)
{
    struct cmm_host *h = host;

    h->acked = true;
}

static int m_create_id(void *host, void *context, bool udp, void **id)
{
    struct cmm_host *h = host;
    int err;

    if (fail(h, CMM_CREATE_ID, &err)) {
        return err;
    }
    *id = mid_new(h, context, udp);
    return *id ? 0 : -ENOMEM;
}

static void m_set_context(void *id, void *context)
{
    ((struct mid *)id)->context = context;
}

/* Drop the events queued for id (the kernel's ucma does at destroy). */
static void purge(struct cmm_host *h, struct mid *id)
{
    unsigned n = h->ev_n, kept = 0;

    /* in place, oldest first: a kept event moves only towards the head */
    for (unsigned i = 0; i < n; i++) {
        struct vb_cmh_event *e = &h->ev[(h->ev_head + i) % CMM_MAX_EVENTS];

        if (e->id != id) {
            h->ev[(h->ev_head + kept++) % CMM_MAX_EVENTS] = *e;
        }
    }
    h->ev_n = kept;
}

static int m_destroy_id(void *id);

/*
 * A listener goes: the requests queued on it that nobody took go too, as
 * the kernel's ucma destroys their new IDs with the listener's events.
 */
static void purge_requests(struct cmm_host *h, struct mid *listener)
{
    struct mid *orphans[CMM_MAX_EVENTS];
    unsigned n = 0;

    for (unsigned i = 0; i < h->ev_n; i++) {
        struct vb_cmh_event *e = &h->ev[(h->ev_head + i) % CMM_MAX_EVENTS];

        if (e->type == VB_CMH_CONNECT_REQUEST && e->context == listener->context &&
            e->id != listener) {
            orphans[n++] = e->id;
        }
    }
    for (unsigned i = 0; i < n; i++) {
        if (orphans[i]->live) {
            m_destroy_id(orphans[i]);
        }
    }
}

static int m_destroy_id(void *id)
{
    struct mid *m = id;

    if (!m->h->acked) {
        /* librdmacm's rdma_destroy_id would wait for the ack forever */
        fprintf(stderr, "cm model: destroy_id with an event not acked\n");
        abort();
    }
    if (m->remote && m->remote->live && m->remote->remote == m) {
        struct mid *r = m->remote;

        /* a connected ID destroyed sends a DREQ; a pending one a REJ */
        if (m->state == MS_CONNECTED && r->state == MS_CONNECTED) {
            r->state = MS_DREQ_RCVD;
            post(r->h, r, VB_CMH_DISCONNECTED, 0, NULL, NULL);
        } else if (m->state == MS_DISCONNECTING && r->state == MS_DREQ_RCVD) {
            /* nothing more: the peer answers into the void */
        } else if (r->state == MS_CONNECTING || r->state == MS_ACCEPTED ||
                   r->state == MS_REQ_RCVD || r->state == MS_REP_RCVD) {
            post(r->h, r, VB_CMH_REJECTED, VB_CM_REJ_TIMEOUT, NULL, NULL);
            r->state = MS_DONE;
        }
        r->remote = NULL;
    }
    purge(m->h, m);
    if (m->state == MS_LISTEN) {
        purge_requests(m->h, m);
    }
    m->live = false;
    m->h->nids--;
    return 0;
}

static int m_resolve_addr(void *id, const uint8_t src[16], uint16_t src_port,
                          const uint8_t dst[16], uint16_t dst_port,
                          int timeout_ms)
{
    struct mid *m = id;
    int err;

    if (fail(m->h, CMM_RESOLVE_ADDR, &err)) {
        return err;
    }
    if (memcmp(src, m->h->gid, 16)) {
        return -EADDRNOTAVAIL;
    }
    memcpy(m->local, src, 16);
    memcpy(m->peer, dst, 16);
    m->local_port = src_port ? src_port : ++m->h->w->next_port;
    m->peer_port = dst_port;
    if (!host_of_gid(m->h->w, dst)) {
        post(m->h, m, VB_CMH_ADDR_ERROR, -EHOSTUNREACH, NULL, NULL);
        return 0;
    }
    m->state = MS_ADDR;
    post(m->h, m, VB_CMH_ADDR_RESOLVED, 0, NULL, NULL);
    return 0;
}

static int m_resolve_route(void *id, int timeout_ms)
{
    struct mid *m = id;

    if (m->state != MS_ADDR) {
        return -EINVAL;
    }
    m->state = MS_ROUTE;
    post(m->h, m, VB_CMH_ROUTE_RESOLVED, 0, NULL, NULL);
    return 0;
}

static int m_device(void *id, char *ibdev, size_t len, uint8_t *port)
{
    struct mid *m = id;

    snprintf(ibdev, len, "%s", m->h->ibdev);
    *port = 1;
    return 0;
}

static int m_addrs(void *id, uint8_t local[16], uint16_t *local_port,
                   uint8_t peer[16], uint16_t *peer_port)
{
    struct mid *m = id;

    memcpy(local, m->local, 16);
    memcpy(peer, m->peer, 16);
    *local_port = m->local_port;
    *peer_port = m->peer_port;
    return 0;
}

static struct mid *listener_of(struct cmm_world *w, const uint8_t gid[16],
                               uint16_t port, bool udp)
{
    for (unsigned i = 0; i < CMM_MAX_IDS; i++) {
        struct mid *m = &w->ids[i];

        if (m->live && m->state == MS_LISTEN && m->udp == udp &&
            m->local_port == port && !memcmp(m->local, gid, 16)) {
            return m;
        }
    }
    return NULL;
}

/*
 * What the peer's CONNECT_REQUEST or CONNECT_RESPONSE reports of a REQ or
 * REP sent with param: as the kernel's ib_cm and rdma_cm report it, from
 * the receiver's side (the sender's responder resources are the
 * receiver's initiator depth, and the other way round).
 */
static struct vb_cmh_conn seen_by_peer(const struct vb_cmh_conn *param)
{
    struct vb_cmh_conn p = *param;

    p.responder_resources = param->initiator_depth;
    p.initiator_depth = param->responder_resources;
    return p;
}

static int m_connect(void *id, const struct vb_cmh_conn *param)
{
    struct vb_cmh_conn seen;
    struct mid *m = id, *l, *n;
    struct cmm_host *peer_host;
    int err;

    if (fail(m->h, CMM_CONNECT, &err)) {
        return err;
    }
    if (m->state != MS_ROUTE) {
        return -EINVAL;
    }
    m->param = *param;
    m->state = MS_CONNECTING;
    peer_host = host_of_gid(m->h->w, m->peer);
    l = listener_of(m->h->w, m->peer, m->peer_port, m->udp);
    if (!l) {
        /* the peer's CM: no such service */
        post(m->h, m, VB_CMH_REJECTED, VB_CM_REJ_INVALID_SERVICE_ID, NULL,
             NULL);
        m->state = MS_DONE;
        return 0;
    }
    n = mid_new(peer_host, l->context, m->udp);
    if (!n) {
        return -ENOMEM;
    }
    memcpy(n->local, m->peer, 16);
    memcpy(n->peer, m->local, 16);
    n->local_port = m->peer_port;
    n->peer_port = m->local_port;
    n->remote = m;
    m->remote = n;
    n->state = MS_REQ_RCVD;
    seen = seen_by_peer(param);
    post(peer_host, n, VB_CMH_CONNECT_REQUEST, 0, &seen, l->context);
    return 0;
}

static int m_accept(void *id, const struct vb_cmh_conn *param)
{
    struct vb_cmh_conn seen;
    struct mid *m = id, *r = m->remote;
    int err;

    if (fail(m->h, CMM_ACCEPT, &err)) {
        return err;
    }
    if (m->state != MS_REQ_RCVD || !r) {
        return -EINVAL;
    }
    m->param = *param;
    if (m->udp) {
        /* SIDR_REP: the active side's ID is done, with the UD QP */
        post(r->h, r, VB_CMH_ESTABLISHED, 0, param, NULL);
        r->state = MS_DONE;
        m->state = MS_DONE;
        r->remote = NULL;
        m->remote = NULL;
        return 0;
    }
    m->state = MS_ACCEPTED;
    r->state = MS_REP_RCVD;
    seen = seen_by_peer(param);
    post(r->h, r, VB_CMH_CONNECT_RESPONSE, 0, &seen, NULL);
    return 0;
}

static int m_reject(void *id, const void *pdata, uint8_t len)
{
    struct mid *m = id, *r = m->remote;
    struct vb_cmh_conn p = { 0 };

    if (r && r->live) {
        p.pdata_len = len;
        if (pdata) {
            memcpy(p.pdata, pdata, len);
        }
        post(r->h, r, VB_CMH_REJECTED, VB_CM_REJ_CONSUMER_DEFINED, &p, NULL);
        r->state = MS_DONE;
        r->remote = NULL;
    }
    m->remote = NULL;
    m->state = MS_DONE;
    return 0;
}

static int m_establish(void *id)
{
    struct mid *m = id, *r = m->remote;

    if (m->state != MS_REP_RCVD || !r) {
        return -EINVAL;
    }
    m->state = MS_CONNECTED;
    r->state = MS_CONNECTED;
    post(r->h, r, VB_CMH_ESTABLISHED, 0, NULL, NULL);
    return 0;
}

static int m_disconnect(void *id)
{
    struct mid *m = id, *r = m->remote;

    if (m->state == MS_CONNECTED) {
        m->state = MS_DISCONNECTING;
        if (r && r->live) {
            r->state = MS_DREQ_RCVD;
            post(r->h, r, VB_CMH_DISCONNECTED, 0, NULL, NULL);
        } else {
            /* no DREP will come: the DREQ times out */
            post(m->h, m, VB_CMH_DISCONNECTED, 0, NULL, NULL);
        }
        return 0;
    }
    if (m->state == MS_DREQ_RCVD) {
        m->state = MS_DONE;
        if (r && r->live && r->state == MS_DISCONNECTING) {
            r->state = MS_DONE;
            post(r->h, r, VB_CMH_DISCONNECTED, 0, NULL, NULL);
        }
        return 0;
    }
    return -EINVAL;
}

static int m_listen(void *id, const uint8_t addr[16], uint16_t port)
{
    struct mid *m = id;

    if (listener_of(m->h->w, addr, port, m->udp)) {
        return -EADDRINUSE;
    }
    memcpy(m->local, addr, 16);
    m->local_port = port;
    m->state = MS_LISTEN;
    return 0;
}

static int m_qp_attrs(void *id, struct vb_cmh_qp_attrs *out)
{
    struct mid *m = id, *r = m->remote;

    if (!r) {
        return -EINVAL;
    }
    memset(out, 0, sizeof(*out));
    /*
     * As the kernel's: RTR receives from this ID's own PSN (rdma_cm puts
     * its seq_num there), RTS sends from the peer's (its REQ's or REP's
     * starting PSN, the PSN the peer expects).
     */
    out->dest_qpn = r->param.qpn;
    out->rq_psn = m->psn;
    out->sq_psn = r->psn;
    out->path_mtu = 3;          /* IBV_MTU_1024 */
    out->timeout = 14;
    out->retry_cnt = 7;
    out->rnr_retry = 7;
    return 0;
}

const struct vb_cmh_ops cmm_ops = {
    .fd = m_fd,
    .get_event = m_get_event,
    .ack_event = m_ack_event,
    .create_id = m_create_id,
    .set_context = m_set_context,
    .destroy_id = m_destroy_id,
    .resolve_addr = m_resolve_addr,
    .resolve_route = m_resolve_route,
    .device = m_device,
    .addrs = m_addrs,
    .connect = m_connect,
    .accept = m_accept,
    .reject = m_reject,
    .establish = m_establish,
    .disconnect = m_disconnect,
    .listen = m_listen,
    .qp_attrs = m_qp_attrs,
};

/* The live IDs of h, counted over the whole table. */
static unsigned ids_counted(const struct cmm_host *h)
{
    unsigned n = 0;

    for (unsigned i = 0; i < CMM_MAX_IDS; i++) {
        n += h->w->ids[i].live && h->w->ids[i].h == h;
    }
    return n;
}

struct cmm_world *cmm_world_new(uint32_t seed)
{
    struct cmm_world *w = spare_world ? spare_world : malloc(sizeof(*w));

    spare_world = NULL;
    memset(w, 0, sizeof(*w));

    w->rng = seed;
    w->next_port = 40000;
    return w;
}

void cmm_world_free(struct cmm_world *w)
{
    for (unsigned i = 0; i < w->nhosts; i++) {
        if (w->hosts[i]->nids != ids_counted(w->hosts[i])) {
            fprintf(stderr, "cm model: host %s counted %u IDs, holds %u\n",
                    w->hosts[i]->ibdev, w->hosts[i]->nids,
                    ids_counted(w->hosts[i]));
            abort();
        }
        if (w->hosts[i]->has_fd) {
            close(w->hosts[i]->efd);
            w->hosts[i]->has_fd = false;
        }
    }
    free(spare_world);
    spare_world = w;
}

struct cmm_host *cmm_host_new(struct cmm_world *w, const char *ibdev,
                              const uint8_t gid[16])
{
    struct cmm_host *h;

    if (w->nhosts == CMM_MAX_HOSTS) {
        fprintf(stderr, "cm model: more than %d hosts\n", CMM_MAX_HOSTS);
        abort();
    }
    h = &w->host_store[w->nhosts];
    memset(h, 0, sizeof(*h));
    h->w = w;
    snprintf(h->ibdev, sizeof(h->ibdev), "%s", ibdev);
    memcpy(h->gid, gid, 16);
    h->acked = true;
    w->hosts[w->nhosts++] = h;
    return h;
}

void cmm_host_use_fd(struct cmm_host *h)
{
    h->efd = eventfd(h->ev_n, EFD_CLOEXEC | EFD_NONBLOCK);
    if (h->efd < 0) {
        perror("cm model: eventfd");
        abort();
    }
    h->has_fd = true;
}

/*
 * A count kept as IDs come and go: the fuzzer asks after every action,
 * and counting the table each time was most of its time.
 * cmm_world_free checks it against the table.
 */
unsigned cmm_host_ids(const struct cmm_host *h)
{
    return h->nids;
}

unsigned cmm_host_events(const struct cmm_host *h)
{
    return h->ev_n;
}

void cmm_fail_next(struct cmm_host *h, enum cmm_call call, int err)
{
    h->fail_call = call;
    h->fail_err = err;
}

bool cmm_host_psn(const struct cmm_host *h, uint32_t qpn, uint32_t *psn)
{
    for (unsigned i = 0; i < CMM_MAX_IDS; i++) {
        const struct mid *m = &h->w->ids[i];

        if (m->live && m->h == h && !m->udp && m->param.qpn == qpn &&
            m->state != MS_LISTEN) {
            *psn = m->psn;
            return true;
        }
    }
    return false;
}
