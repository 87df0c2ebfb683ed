/*
 * The verbs backend's connection-manager proxy (docs/backends.md, "rdma_cm
 * in verbs mode"): the guest's CM MADs, sent on its GSI QP, become calls
 * of the host's rdma_cm on QP-less IDs, and the host's CM events become
 * MADs on the guest's GSI QP. The guest's kernel keeps its own ib_cm and
 * rdma_cm unchanged; the host keeps its ib_cm loaded (pvrdma needed it
 * unloaded). Peers see the host's CM, with the guest QP's wire QPN.
 *
 * Plain C: the host's rdma_cm is a table of calls (struct vb_cm_host),
 * librdmacm in QEMU (vb_librdmacm.c), a model of it in the unit tests.
 * Called from the backend's one context, like the rest of it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_VB_CM_H
#define QRDMA_VB_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vb_cm_mad.h"

/*
 * The host rdma_cm events the proxy handles: enum rdma_cm_event_type's
 * values.
 */
enum vb_cmh_event_type {
    VB_CMH_ADDR_RESOLVED    = 0,
    VB_CMH_ADDR_ERROR       = 1,
    VB_CMH_ROUTE_RESOLVED   = 2,
    VB_CMH_ROUTE_ERROR      = 3,
    VB_CMH_CONNECT_REQUEST  = 4,
    VB_CMH_CONNECT_RESPONSE = 5,
    VB_CMH_CONNECT_ERROR    = 6,
    VB_CMH_UNREACHABLE      = 7,
    VB_CMH_REJECTED         = 8,
    VB_CMH_ESTABLISHED      = 9,
    VB_CMH_DISCONNECTED     = 10,
    VB_CMH_DEVICE_REMOVAL   = 11,
    VB_CMH_ADDR_CHANGE      = 14,
    VB_CMH_TIMEWAIT_EXIT    = 15,
};

/*
 * struct rdma_conn_param's parts (UD: qpn and qkey of an ESTABLISHED),
 * always from the local side: what connect and accept are given, and what
 * a CONNECT_REQUEST or CONNECT_RESPONSE reports, where the kernel has
 * turned the wire's REQ or REP around (the peer's responder resources are
 * our initiator depth, its initiator depth our responder resources).
 */
struct vb_cmh_conn {
    uint32_t qpn;
    uint32_t qkey;
    uint8_t responder_resources, initiator_depth;
    uint8_t retry_count, rnr_retry_count;
    bool srq;
    uint8_t pdata_len;
    uint8_t pdata[VB_CM_PDATA_MAX];
};

struct vb_cmh_event {
    enum vb_cmh_event_type type;
    void *id;                   /* the host ID the event is for */
    /* its context (CONNECT_REQUEST: the listener's) */
    void *context;
    /* REJECTED: the REJ reason; *_ERROR, UNREACHABLE: an errno */
    int status;
    struct vb_cmh_conn conn;
};

/* rdma_init_qp_attr's answer for RTR and RTS. */
struct vb_cmh_qp_attrs {
    /* RTR: the peer's QPN; the PSN this end receives from (rdma_cm's own) */
    uint32_t dest_qpn, rq_psn;
    /* RTS: the PSN this end sends from (the peer's, from its REQ or REP) */
    uint32_t sq_psn;
    uint8_t path_mtu;           /* enum ibv_mtu */
    uint8_t max_dest_rd_atomic, max_rd_atomic;
    uint8_t min_rnr_timer, timeout, retry_cnt, rnr_retry;
};

/*
 * The host's rdma_cm. Addresses are GIDs (IPv6, or IPv4-mapped) and ports;
 * every call returns 0 or a negative errno.
 */
struct vb_cmh_ops {
    int (*fd)(void *host);      /* readable: get_event has one */
    /* the next event, -EAGAIN when none; ack it with ack_event */
    int (*get_event)(void *host, struct vb_cmh_event *ev);
    void (*ack_event)(void *host, struct vb_cmh_event *ev);
    int (*create_id)(void *host, void *context, bool udp, void **id);
    void (*set_context)(void *id, void *context);
    int (*destroy_id)(void *id);
    int (*resolve_addr)(void *id, const uint8_t src[16], uint16_t src_port,
                        const uint8_t dst[16], uint16_t dst_port,
                        int timeout_ms);
    int (*resolve_route)(void *id, int timeout_ms);
    /* the host device and port an ID resolved to */
    int (*device)(void *id, char *ibdev, size_t len, uint8_t *port);
    int (*addrs)(void *id, uint8_t local[16], uint16_t *local_port,
                 uint8_t peer[16], uint16_t *peer_port);
    int (*connect)(void *id, const struct vb_cmh_conn *param);
    int (*accept)(void *id, const struct vb_cmh_conn *param);
    int (*reject)(void *id, const void *pdata, uint8_t len);
    int (*establish)(void *id);
    int (*disconnect)(void *id);
    int (*listen)(void *id, const uint8_t addr[16], uint16_t port);
    int (*qp_attrs)(void *id, struct vb_cmh_qp_attrs *out);
};

/* What the proxy needs of the backend. */
struct vb_cm_env {
    void *opaque;
    /* A MAD for the guest's GSI QP, from peer (its GID) to local (ours). */
    void (*deliver)(void *opaque, const uint8_t peer[16],
                    const uint8_t local[16], const uint8_t mad[VB_MAD_BYTES]);
    /* A line for the guest-error log (what the guest did wrong). */
    void (*guest_error)(void *opaque, const char *msg);
    uint64_t (*now_ns)(void *opaque);
};

#define VB_CM_MAX_CONNS     256     /* connections at once, per device */
#define VB_CM_MAX_LISTEN    16      /* ports in cm-listen */

struct vb_cm_config {
    const char *ibdev;          /* the host device the backend uses */
    uint8_t ibport;
    /* the guest's GIDs (the host's it may use) */
    unsigned ngids;
    uint8_t gid[8][16];
    /* TCP port-space ports to listen on, on every guest GID */
    unsigned nlisten;
    uint16_t listen[VB_CM_MAX_LISTEN];
    /* how long a connection waits for the guest's next MAD */
    uint64_t guest_timeout_ns;
};

struct vb_cm;

/* NULL with a reason in err when the host's rdma_cm refuses. */
struct vb_cm *vb_cm_create(const struct vb_cmh_ops *ops, void *host,
                           const struct vb_cm_env *env,
                           const struct vb_cm_config *cfg, char *err,
                           size_t err_len);
/* Forget every connection (their host IDs destroyed), listeners kept. */
void vb_cm_reset(struct vb_cm *cm);
void vb_cm_destroy(struct vb_cm *cm);
int vb_cm_fd(struct vb_cm *cm);

/*
 * A MAD the guest sent on its GSI QP from GID sgid to dgid. CM MADs drive
 * the host's rdma_cm; others are dropped with a guest error. The send
 * completes either way, as a MAD lost on the wire would.
 */
void vb_cm_guest_mad(struct vb_cm *cm, const uint8_t sgid[16],
                     const uint8_t dgid[16], const uint8_t *mad, size_t len);

/* The host's events and the connections' deadlines. */
void vb_cm_poll(struct vb_cm *cm);
/* The deadlines alone, when vb_cm_fd() has nothing to read. */
void vb_cm_poll_deadlines(struct vb_cm *cm);

/*
 * A guest's RTR of the QP with wire QPN qpn, naming the peer QP dest_qpn
 * at GID dgid: when it belongs to a proxied connection, *rq_psn becomes
 * the PSN the peer will send from, the one the host's CM told it to
 * (a CM message's starting PSN is the PSN its sender expects to receive;
 * the guest's own went only to the proxy), and true is returned. The
 * other direction the guest already has right: the proxy's REQ or REP
 * gave it the peer's.
 */
bool vb_cm_rtr_psn(struct vb_cm *cm, uint32_t qpn, const uint8_t dgid[16],
                   uint32_t dest_qpn, uint32_t *rq_psn);

/*
 * No deadline of a connection waiting on the guest is earlier (UINT64_MAX:
 * none); exact after a vb_cm_poll or vb_cm_poll_deadlines that found it
 * passed, otherwise at most early (then the next poll looks again).
 */
uint64_t vb_cm_deadline(const struct vb_cm *cm);

/* Connections now (tests, counters). */
unsigned vb_cm_conns(const struct vb_cm *cm);

/*
 * librdmacm itself (vb_librdmacm.c, in a build with QRDMA_HAVE_RDMACM):
 * open makes a non-blocking event channel, the host handle of the ops.
 */
extern const struct vb_cmh_ops qrdma_vb_rdmacm_ops;
void *qrdma_vb_rdmacm_open(char *err, size_t err_len);
void qrdma_vb_rdmacm_close(void *host);

#endif /* QRDMA_VB_CM_H */
