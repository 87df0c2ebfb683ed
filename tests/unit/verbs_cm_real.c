/*
 * qrdma-verbs-cm: the CM proxy (host-backend/verbs/vb_cm.c) on the real
 * rdma_cm (vb_librdmacm.c) of a real RDMA device, as one process:
 * tests/vm/test-verbs-rxe.sh runs it in a guest with soft-RoCE (rxe0).
 *
 * Two proxies, A (no listener) and B (listening on port PORT), each on its
 * own event channel and both on the device's IPv4 GID, stand for two VMs'
 * devices; this program plays both guests' kernel CM, sending the MADs
 * ib_cm would and checking the ones the proxies give back, and each
 * "guest QP" is a host RC QP it makes itself, as the backend does. Then:
 *
 *   1. A's REQ to B's port: B's guest gets a REQ with A's QPN and private
 *      data; it takes its QP to RTR (the RQ PSN from vb_cm_rtr_psn, as
 *      the backend does) and RTS, and answers with a REP; A's guest gets
 *      the REP with B's QPN and private data, takes its QP to RTR and RTS
 *      the same way and sends the RTU; B's guest gets the RTU.
 *   2. Data both ways on the two QPs, every byte checked: with a PSN
 *      either side got wrong, rxe drops the packets and the sends fail.
 *   3. A's DREQ: B's guest gets the DREQ, answers DREP, A's gets the DREP;
 *      neither proxy holds a connection afterwards.
 *   4. A REQ to a port nobody listens on: A's guest gets a REJ with the
 *      peer CM's reason (invalid service ID).
 *
 *   qrdma-verbs-cm DEVICE GID_INDEX
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vb_cm.h"
#include "vb_cm_mad.h"

#define PORT        18515
#define DEAD_PORT   18516
#define MSG         4096

static int failures;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            printf("FAIL: " __VA_ARGS__);                                      \
            printf(" (%s, line %d)\n", #cond, __LINE__);                       \
            failures++;                                                        \
        }                                                                      \
    } while (0)

struct guest {
    const char *name;
    struct vb_cm *cm;
    void *host;
    uint8_t mads[16][VB_MAD_BYTES];
    unsigned n;
    unsigned errors;
};

static void deliver(void *opaque, const uint8_t peer[16],
                    const uint8_t local[16], const uint8_t mad[VB_MAD_BYTES])
{
    struct guest *g = opaque;

    if (g->n < 16) {
        memcpy(g->mads[g->n++], mad, VB_MAD_BYTES);
    }
}

static void on_error(void *opaque, const char *msg)
{
    struct guest *g = opaque;

    g->errors++;
    printf("  %s's proxy, guest error: %s\n", g->name, msg);
}

static uint64_t now_ns(void *opaque)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void guest_init(struct guest *g, const char *name, const char *ibdev,
                       const uint8_t gid[16], bool listen)
{
    struct vb_cm_env env = { g, deliver, on_error, now_ns };
    struct vb_cm_config cfg = { .ibdev = ibdev, .ibport = 1, .ngids = 1 };
    char err[200];

    memset(g, 0, sizeof(*g));
    g->name = name;
    memcpy(cfg.gid[0], gid, 16);
    if (listen) {
        cfg.nlisten = 1;
        cfg.listen[0] = PORT;
    }
    g->host = qrdma_vb_rdmacm_open(err, sizeof(err));
    if (!g->host) {
        printf("FAIL: %s: %s\n", name, err);
        exit(1);
    }
    g->cm = vb_cm_create(&qrdma_vb_rdmacm_ops, g->host, &env, &cfg, err,
                         sizeof(err));
    if (!g->cm) {
        printf("FAIL: %s: vb_cm_create: %s\n", name, err);
        exit(1);
    }
}

/* Poll both proxies until guest g has been given a MAD: decode it (false: none in 10 s). */
static bool await(struct guest *a, struct guest *b, struct guest *g,
                  struct vb_cm_msg *m)
{
    uint64_t end = now_ns(NULL) + 10000000000ull;
    unsigned seen = g->n;

    while (g->n == seen && now_ns(NULL) < end) {
        struct pollfd p[2] = { { vb_cm_fd(a->cm), POLLIN, 0 },
                               { vb_cm_fd(b->cm), POLLIN, 0 } };

        poll(p, 2, 100);
        vb_cm_poll(a->cm);
        vb_cm_poll(b->cm);
    }
    if (g->n == seen) {
        return false;
    }
    return vb_cm_decode(g->mads[seen], VB_MAD_BYTES, m) == 0;
}

static void send_mad(struct guest *g, const uint8_t gid[16],
                     const struct vb_cm_msg *m)
{
    uint8_t mad[VB_MAD_BYTES];

    vb_cm_encode(m, mad);
    vb_cm_guest_mad(g->cm, gid, gid, mad, sizeof(mad));
}

/* ---- the "guest QPs": host RC QPs on the device -------------------------- */

struct side {
    struct ibv_qp *qp;
    struct ibv_cq *cq;
    struct ibv_mr *mr;
    uint8_t *buf;
};

static void side_init(struct side *s, struct ibv_context *ctx, struct ibv_pd *pd)
{
    struct ibv_qp_init_attr ia = { 0 };
    struct ibv_qp_attr a = { 0 };

    s->buf = calloc(1, 2 * MSG);
    s->cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
    s->mr = ibv_reg_mr(pd, s->buf, 2 * MSG, IBV_ACCESS_LOCAL_WRITE);
    ia.send_cq = ia.recv_cq = s->cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    s->qp = ibv_create_qp(pd, &ia);
    if (!s->buf || !s->cq || !s->mr || !s->qp) {
        printf("FAIL: host objects: %s\n", strerror(errno));
        exit(1);
    }
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        printf("FAIL: INIT: %s\n", strerror(errno));
        exit(1);
    }
}

/* RTR and RTS toward the peer QP dest_qpn at gid, as the guest's CM would. */
static bool side_connect(struct side *s, int gid_index, const uint8_t gid[16],
                         uint32_t dest_qpn, uint32_t rq_psn, uint32_t sq_psn)
{
    struct ibv_qp_attr a = { 0 };

    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = dest_qpn;
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
    memcpy(a.ah_attr.grh.dgid.raw, gid, 16);
    if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
        return false;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = sq_psn;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    return !ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
                          IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                          IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* One completion of s within 10 s: its status, or -1. */
static int side_wait(struct side *s)
{
    uint64_t end = now_ns(NULL) + 10000000000ull;
    struct ibv_wc wc;

    while (now_ns(NULL) < end) {
        if (ibv_poll_cq(s->cq, 1, &wc) == 1) {
            return wc.status;
        }
    }
    return -1;
}

/* MSG bytes from one side to the other, checked byte for byte. */
static void transfer(struct side *from, struct side *to, unsigned seed,
                     const char *what)
{
    struct ibv_sge rs = { (uintptr_t)(to->buf + MSG), MSG, to->mr->lkey };
    struct ibv_sge ss = { (uintptr_t)from->buf, MSG, from->mr->lkey };
    struct ibv_recv_wr rw = { .sg_list = &rs, .num_sge = 1 }, *rbad;
    struct ibv_send_wr sw = { .sg_list = &ss, .num_sge = 1,
                              .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED }, *sbad;
    int st_send, st_recv;

    for (unsigned i = 0; i < MSG; i++) {
        from->buf[i] = (uint8_t)(i * 7 + seed);
    }
    memset(to->buf + MSG, 0, MSG);
    CHECK(!ibv_post_recv(to->qp, &rw, &rbad), "%s: post_recv", what);
    CHECK(!ibv_post_send(from->qp, &sw, &sbad), "%s: post_send", what);
    st_send = side_wait(from);
    st_recv = side_wait(to);
    CHECK(st_send == IBV_WC_SUCCESS, "%s: send completion %d", what, st_send);
    CHECK(st_recv == IBV_WC_SUCCESS, "%s: receive completion %d", what,
          st_recv);
    CHECK(!memcmp(from->buf, to->buf + MSG, MSG), "%s: %d bytes arrived as sent",
          what, MSG);
    if (st_send == IBV_WC_SUCCESS && st_recv == IBV_WC_SUCCESS &&
        !memcmp(from->buf, to->buf + MSG, MSG)) {
        printf("ok: %s: %d bytes, every byte checked\n", what, MSG);
    }
}

static void make_req(struct vb_cm_msg *m, const uint8_t gid[16], uint32_t id,
                     uint32_t qpn, uint16_t port, const char *pdata)
{
    struct vb_cma_hdr h = { .ip_version = 4, .src_port = 40001 };

    memset(m, 0, sizeof(*m));
    m->attr = VB_CM_REQ;
    m->tid = 0x5100 + id;
    m->local_comm_id = id;
    m->service_id = VB_CMA_SID_TCP | port;
    m->qpn = qpn;
    m->starting_psn = 0x111111;       /* the guest's own: the proxy must not pass it on */
    /* not alike, so that one turned around shows */
    m->responder_resources = 4;
    m->initiator_depth = 2;
    m->transport_type = VB_CM_TRANSPORT_RC;
    m->retry_count = m->rnr_retry_count = 7;
    m->path_mtu = IBV_MTU_1024;
    memcpy(m->primary.local_gid, gid, 16);
    memcpy(m->primary.remote_gid, gid, 16);
    memcpy(h.src, gid, 16);
    memcpy(h.dst, gid, 16);
    vb_cma_hdr_put(&h, m->pdata);
    snprintf((char *)m->pdata + VB_CMA_HDR_BYTES, 20, "%s", pdata);
}

int main(int argc, char **argv)
{
    struct ibv_device **list;
    struct ibv_context *ctx = NULL;
    struct ibv_pd *pd;
    union ibv_gid gid;
    struct guest a, b;
    struct side qa, qb;
    struct vb_cm_msg req, m, rep = { .attr = VB_CM_REP };
    uint32_t a_peer_id = 0, b_peer_id = 0, rq;
    int gid_index, n;

    if (argc != 3) {
        fprintf(stderr, "usage: qrdma-verbs-cm DEVICE GID_INDEX\n");
        return 2;
    }
    gid_index = atoi(argv[2]);
    list = ibv_get_device_list(&n);
    for (int i = 0; list && i < n; i++) {
        if (!strcmp(ibv_get_device_name(list[i]), argv[1])) {
            ctx = ibv_open_device(list[i]);
        }
    }
    if (!ctx || ibv_query_gid(ctx, 1, gid_index, &gid)) {
        printf("FAIL: %s GID %d: %s\n", argv[1], gid_index, strerror(errno));
        return 1;
    }
    pd = ibv_alloc_pd(ctx);
    side_init(&qa, ctx, pd);
    side_init(&qb, ctx, pd);
    guest_init(&a, "A", argv[1], gid.raw, false);
    guest_init(&b, "B", argv[1], gid.raw, true);

    /* 1. connect */
    make_req(&req, gid.raw, 0x1001, qa.qp->qp_num, PORT, "from-a");
    send_mad(&a, gid.raw, &req);
    CHECK(await(&a, &b, &b, &m), "B's guest got no MAD for A's REQ");
    CHECK(m.attr == VB_CM_REQ, "B's guest got %s, not a REQ",
          vb_cm_attr_name(m.attr));
    CHECK(m.qpn == qa.qp->qp_num, "the REQ's QPN 0x%x is A's QP 0x%x", m.qpn,
          qa.qp->qp_num);
    CHECK(m.service_id == (VB_CMA_SID_TCP | PORT), "the REQ's service ID");
    CHECK(!strcmp((char *)m.pdata + VB_CMA_HDR_BYTES, "from-a"),
          "the REQ's private data after rdma_cm's header");
    CHECK(m.responder_resources == 4 && m.initiator_depth == 2,
          "the REQ's responder resources %u and initiator depth %u are A's "
          "(4, 2): the wire's, not the host CM's view of them",
          m.responder_resources, m.initiator_depth);
    b_peer_id = m.local_comm_id;
    CHECK(vb_cm_rtr_psn(b.cm, qb.qp->qp_num, gid.raw, m.qpn, &rq),
          "B's QP is a proxied connection's at RTR");
    CHECK(side_connect(&qb, gid_index, gid.raw, m.qpn, rq, m.starting_psn),
          "B's QP to RTS: %s", strerror(errno));
    rep.tid = m.tid;
    rep.local_comm_id = 0x2002;
    rep.remote_comm_id = b_peer_id;
    rep.qpn = qb.qp->qp_num;
    rep.starting_psn = 0x222222;        /* the guest's own, again */
    rep.responder_resources = 2;
    rep.initiator_depth = 4;
    rep.rnr_retry_count = 7;
    strcpy((char *)rep.pdata, "from-b");
    send_mad(&b, gid.raw, &rep);
    CHECK(await(&a, &b, &a, &m), "A's guest got no MAD for B's REP");
    CHECK(m.attr == VB_CM_REP, "A's guest got %s, not a REP",
          vb_cm_attr_name(m.attr));
    CHECK(m.remote_comm_id == 0x1001, "the REP names A's REQ");
    CHECK(m.qpn == qb.qp->qp_num, "the REP's QPN 0x%x is B's QP 0x%x", m.qpn,
          qb.qp->qp_num);
    CHECK(!strcmp((char *)m.pdata, "from-b"), "the REP's private data");
    CHECK(m.responder_resources == 2 && m.initiator_depth == 4,
          "the REP's responder resources %u and initiator depth %u are B's "
          "(2, 4)", m.responder_resources, m.initiator_depth);
    a_peer_id = m.local_comm_id;
    CHECK(vb_cm_rtr_psn(a.cm, qa.qp->qp_num, gid.raw, m.qpn, &rq),
          "A's QP is a proxied connection's at RTR");
    CHECK(side_connect(&qa, gid_index, gid.raw, m.qpn, rq, m.starting_psn),
          "A's QP to RTS: %s", strerror(errno));
    memset(&m, 0, sizeof(m));
    m.attr = VB_CM_RTU;
    m.local_comm_id = 0x1001;
    m.remote_comm_id = a_peer_id;
    send_mad(&a, gid.raw, &m);
    CHECK(await(&a, &b, &b, &m), "B's guest got no RTU");
    CHECK(m.attr == VB_CM_RTU && m.remote_comm_id == 0x2002, "B's RTU");
    if (!failures) {
        printf("ok: connected through the host's rdma_cm: A's QP 0x%x, B's "
               "QP 0x%x\n", qa.qp->qp_num, qb.qp->qp_num);
    }

    /* 2. data both ways */
    transfer(&qa, &qb, 1, "A to B");
    transfer(&qb, &qa, 2, "B to A");

    /* 3. disconnect */
    memset(&m, 0, sizeof(m));
    m.attr = VB_CM_DREQ;
    m.local_comm_id = 0x1001;
    m.remote_comm_id = a_peer_id;
    m.qpn = qb.qp->qp_num;
    send_mad(&a, gid.raw, &m);
    CHECK(await(&a, &b, &b, &m), "B's guest got no DREQ");
    CHECK(m.attr == VB_CM_DREQ && m.remote_comm_id == 0x2002, "B's DREQ");
    memset(&m, 0, sizeof(m));
    m.attr = VB_CM_DREP;
    m.local_comm_id = 0x2002;
    m.remote_comm_id = b_peer_id;
    send_mad(&b, gid.raw, &m);
    CHECK(await(&a, &b, &a, &m), "A's guest got no DREP");
    CHECK(m.attr == VB_CM_DREP && m.remote_comm_id == 0x1001, "A's DREP");
    CHECK(vb_cm_conns(a.cm) == 0 && vb_cm_conns(b.cm) == 0,
          "connections left: %u and %u", vb_cm_conns(a.cm), vb_cm_conns(b.cm));
    if (!failures) {
        printf("ok: disconnected; neither proxy holds a connection\n");
    }

    /* 4. nobody listens */
    make_req(&req, gid.raw, 0x1003, qa.qp->qp_num, DEAD_PORT, "x");
    send_mad(&a, gid.raw, &req);
    CHECK(await(&a, &b, &a, &m), "A's guest got no answer from a dead port");
    CHECK(m.attr == VB_CM_REJ && m.remote_comm_id == 0x1003,
          "A's guest got %s for 0x%x", vb_cm_attr_name(m.attr),
          m.remote_comm_id);
    CHECK(m.reason == VB_CM_REJ_INVALID_SERVICE_ID,
          "the REJ's reason %u is invalid service ID", m.reason);
    if (m.attr == VB_CM_REJ && m.reason == VB_CM_REJ_INVALID_SERVICE_ID) {
        printf("ok: a REQ to a port nobody listens on: REJ, invalid service "
               "ID\n");
    }
    CHECK(a.errors == 0 && b.errors == 0, "no guest errors");

    vb_cm_destroy(a.cm);
    vb_cm_destroy(b.cm);
    qrdma_vb_rdmacm_close(a.host);
    qrdma_vb_rdmacm_close(b.host);
    ibv_destroy_qp(qa.qp);
    ibv_destroy_qp(qb.qp);
    ibv_dereg_mr(qa.mr);
    ibv_dereg_mr(qb.mr);
    ibv_destroy_cq(qa.cq);
    ibv_destroy_cq(qb.cq);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    printf("qrdma-verbs-cm: %s\n", failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}
