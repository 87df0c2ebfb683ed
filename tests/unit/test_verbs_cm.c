/*
 * The verbs backend's CM proxy (host-backend/verbs/vb_cm.c) and its MAD
 * codec (vb_cm_mad.c): the codec against MAD bytes laid out by hand from
 * IBTA volume 1 chapter 12's tables, then two proxies, one per "guest",
 * over a model of the host's rdma_cm (verbs_cm_model.c). Each test plays
 * the guests' kernel CM: it sends the MADs ib_cm would and checks the
 * MADs the proxy gives back, field by field.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "vb_cm.h"
#include "vb_cm_mad.h"
#include "verbs_cm_model.h"

int unit_failures;

/* ---- the codec ----------------------------------------------------------- */

/* A REQ laid out byte by byte from IBTA table 106. */
static void golden_req(uint8_t mad[VB_MAD_BYTES])
{
    uint8_t *d = mad + VB_MAD_HDR_BYTES;

    memset(mad, 0, VB_MAD_BYTES);
    mad[0] = 1; mad[1] = 0x07; mad[2] = 2; mad[3] = 0x03;
    mad[8] = 0x11; mad[15] = 0x88;              /* TID 0x1100000000000088 */
    mad[16] = 0x00; mad[17] = 0x10;             /* attribute REQ */
    d[0] = 0xde; d[1] = 0xad; d[2] = 0xbe; d[3] = 0xef;     /* local comm ID */
    d[8] = 0x00; d[9] = 0x00; d[10] = 0x00; d[11] = 0x00;   /* service ID */
    d[12] = 0x01; d[13] = 0x06; d[14] = 0x48; d[15] = 0x7e; /* TCP, 18558 */
    d[16] = 0x0a; d[23] = 0x0b;                 /* CA GUID */
    d[32] = 0x12; d[33] = 0x34; d[34] = 0x56;   /* local QPN 0x123456 */
    d[35] = 4;                                  /* responder resources */
    d[39] = 3;                                  /* initiator depth */
    d[43] = (20 << 3) | (0 << 1) | 1;           /* remote timeout, RC, e2e */
    d[44] = 0xab; d[45] = 0xcd; d[46] = 0xef;   /* starting PSN */
    d[47] = (18 << 3) | 7;                      /* local timeout, retry 7 */
    d[48] = 0xff; d[49] = 0xff;                 /* P_Key */
    d[50] = (3 << 4) | (0 << 3) | 6;            /* MTU 1024, RNR retry 6 */
    d[51] = (15 << 4) | (1 << 3);               /* max CM retries, SRQ */
    d[52] = 0xff; d[53] = 0xff; d[54] = 0xff; d[55] = 0xff; /* LIDs */
    d[66] = 0xff; d[67] = 0xff; d[68] = 10; d[69] = 0; d[70] = 0; d[71] = 1;
    d[82] = 0xff; d[83] = 0xff; d[84] = 10; d[85] = 0; d[86] = 0; d[87] = 2;
    d[88] = 0x12; d[89] = 0x34; d[90] = 0x50;   /* flow label 0x12345 */
    d[91] = 0x2a;                               /* packet rate 42 */
    d[92] = 0x60;                               /* traffic class */
    d[93] = 64;                                 /* hop limit */
    d[94] = (5 << 4) | (1 << 3);                /* SL 5, subnet local */
    d[95] = 19 << 3;                            /* local ACK timeout */
    d[140] = 0x00; d[141] = 0x40;               /* rdma_cm header: v0, IPv4 */
    d[142] = 0x9c; d[143] = 0x40;               /* its source port 40000 */
    d[140 + 16] = 10; d[140 + 19] = 1;          /* source 10.0.0.1 */
    d[140 + 32] = 10; d[140 + 35] = 2;          /* destination 10.0.0.2 */
    memcpy(d + 140 + 36, "hello", 5);
}

static const uint8_t gid_a[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 };
static const uint8_t gid_b[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 };
static const uint8_t gid_c[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 3 };

static void test_cm_codec_req(void)
{
    uint8_t mad[VB_MAD_BYTES], again[VB_MAD_BYTES];
    struct vb_cm_msg m;
    struct vb_cma_hdr h;

    golden_req(mad);
    CHECK_EQ(vb_cm_decode(mad, sizeof(mad), &m), 0);
    CHECK_EQ(m.attr, VB_CM_REQ);
    CHECK_EQ(m.method, VB_MAD_METHOD_SEND);
    CHECK_EQ(m.tid, 0x1100000000000088ull);
    CHECK_EQ(m.local_comm_id, 0xdeadbeef);
    CHECK_EQ(m.service_id, 0x000000000106487eull);
    CHECK_EQ(m.ca_guid, 0x0a0000000000000bull);
    CHECK_EQ(m.qpn, 0x123456);
    CHECK_EQ(m.responder_resources, 4);
    CHECK_EQ(m.initiator_depth, 3);
    CHECK_EQ(m.remote_cm_response_timeout, 20);
    CHECK_EQ(m.transport_type, VB_CM_TRANSPORT_RC);
    CHECK(m.e2e_flow_control);
    CHECK_EQ(m.starting_psn, 0xabcdef);
    CHECK_EQ(m.local_cm_response_timeout, 18);
    CHECK_EQ(m.retry_count, 7);
    CHECK_EQ(m.pkey, 0xffff);
    CHECK_EQ(m.path_mtu, 3);
    CHECK_EQ(m.rnr_retry_count, 6);
    CHECK_EQ(m.max_cm_retries, 15);
    CHECK(m.srq);
    CHECK_EQ(m.primary.local_lid, 0xffff);
    CHECK_EQ(m.primary.remote_lid, 0xffff);
    CHECK(!memcmp(m.primary.local_gid, gid_a, 16));
    CHECK(!memcmp(m.primary.remote_gid, gid_b, 16));
    CHECK_EQ(m.primary.flow_label, 0x12345);
    CHECK_EQ(m.primary.packet_rate, 42);
    CHECK_EQ(m.primary.traffic_class, 0x60);
    CHECK_EQ(m.primary.hop_limit, 64);
    CHECK_EQ(m.primary.sl, 5);
    CHECK(m.primary.subnet_local);
    CHECK_EQ(m.primary.local_ack_timeout, 19);
    CHECK_EQ(vb_cma_hdr_get(m.pdata, &h), 0);
    CHECK_EQ(h.ip_version, 4);
    CHECK_EQ(h.src_port, 40000);
    CHECK(!memcmp(h.src, gid_a, 16));
    CHECK(!memcmp(h.dst, gid_b, 16));
    CHECK(!memcmp(m.pdata + VB_CMA_HDR_BYTES, "hello", 5));

    /* Encoding the decoded message gives the same bytes back. */
    vb_cm_encode(&m, again);
    CHECK(!memcmp(mad, again, VB_MAD_BYTES));

    /* And the rdma_cm header alone. */
    {
        uint8_t pd[VB_CMA_HDR_BYTES];

        vb_cma_hdr_put(&h, pd);
        CHECK(!memcmp(pd, mad + VB_MAD_HDR_BYTES + 140, VB_CMA_HDR_BYTES));
    }
}

/* REP, REJ, DREQ and SIDR_REP: fields at their table's places. */
static void test_cm_codec_others(void)
{
    uint8_t mad[VB_MAD_BYTES];
    uint8_t *d = mad + VB_MAD_HDR_BYTES;
    struct vb_cm_msg m = { 0 };

    m.attr = VB_CM_REP;
    m.local_comm_id = 0x01020304;
    m.remote_comm_id = 0x05060708;
    m.qkey = 0x11223344;
    m.qpn = 0xa1b2c3;
    m.starting_psn = 0x0d0e0f;
    m.responder_resources = 8;
    m.initiator_depth = 9;
    m.target_ack_delay = 17;
    m.failover_accepted = 2;
    m.e2e_flow_control = true;
    m.rnr_retry_count = 5;
    m.srq = true;
    m.ca_guid = 0x1122334455667788ull;
    memcpy(m.pdata, "rep-data", 8);
    vb_cm_encode(&m, mad);
    CHECK_EQ(mad[1], 0x07);
    CHECK_EQ(mad[17], 0x13);
    CHECK_EQ(d[0], 0x01); CHECK_EQ(d[3], 0x04);
    CHECK_EQ(d[4], 0x05); CHECK_EQ(d[7], 0x08);
    CHECK_EQ(d[8], 0x11); CHECK_EQ(d[11], 0x44);
    CHECK_EQ(d[12], 0xa1); CHECK_EQ(d[13], 0xb2); CHECK_EQ(d[14], 0xc3);
    CHECK_EQ(d[15], 0);
    CHECK_EQ(d[20], 0x0d); CHECK_EQ(d[22], 0x0f);
    CHECK_EQ(d[24], 8); CHECK_EQ(d[25], 9);
    CHECK_EQ(d[26], (17 << 3) | (2 << 1) | 1);
    CHECK_EQ(d[27], (5 << 5) | (1 << 4));
    CHECK_EQ(d[28], 0x11); CHECK_EQ(d[35], 0x88);
    CHECK(!memcmp(d + 36, "rep-data", 8));

    memset(&m, 0, sizeof(m));
    m.attr = VB_CM_REJ;
    m.local_comm_id = 7;
    m.remote_comm_id = 8;
    m.message = VB_CM_MSG_REP;
    m.ari_len = 3;
    m.reason = VB_CM_REJ_CONSUMER_DEFINED;
    memcpy(m.pdata, "no", 2);
    vb_cm_encode(&m, mad);
    CHECK_EQ(mad[17], 0x12);
    CHECK_EQ(d[3], 7); CHECK_EQ(d[7], 8);
    CHECK_EQ(d[8], 1 << 6);
    CHECK_EQ(d[9], 3 << 1);
    CHECK_EQ(d[10], 0); CHECK_EQ(d[11], 28);
    CHECK(!memcmp(d + 84, "no", 2));

    memset(&m, 0, sizeof(m));
    m.attr = VB_CM_DREQ;
    m.qpn = 0x654321;
    vb_cm_encode(&m, mad);
    CHECK_EQ(d[8], 0x65); CHECK_EQ(d[10], 0x21); CHECK_EQ(d[11], 0);

    memset(&m, 0, sizeof(m));
    m.attr = VB_CM_SIDR_REP;
    m.local_comm_id = 0x99;
    m.status = VB_CM_SIDR_REJECT;
    m.qpn = 0x000102;
    m.service_id = VB_CMA_SID_UDP | 7174;
    m.qkey = 0x80000000u;
    vb_cm_encode(&m, mad);
    CHECK_EQ(mad[17], 0x18);
    CHECK_EQ(d[3], 0x99); CHECK_EQ(d[4], 2);
    CHECK_EQ(d[9], 0x01); CHECK_EQ(d[10], 0x02);
    CHECK_EQ(d[16], 0x01); CHECK_EQ(d[17], 0x11);
    CHECK_EQ(d[18], 7174 >> 8); CHECK_EQ(d[19], 7174 & 0xff);
    CHECK_EQ(d[20], 0x80); CHECK_EQ(d[23], 0);

    /* Decoding every encoded message gives its fields back. */
    {
        struct vb_cm_msg back;

        CHECK_EQ(vb_cm_decode(mad, sizeof(mad), &back), 0);
        CHECK_EQ(back.qkey, 0x80000000u);
        CHECK_EQ(back.service_id, VB_CMA_SID_UDP | 7174);
        CHECK_EQ(back.status, VB_CM_SIDR_REJECT);
    }
}

static void test_cm_codec_refusals(void)
{
    uint8_t mad[VB_MAD_BYTES];
    struct vb_cm_msg m;

    golden_req(mad);
    CHECK_EQ(vb_cm_decode(mad, VB_MAD_BYTES - 1, &m), -EINVAL);
    mad[1] = 0x04;                      /* performance management */
    CHECK_EQ(vb_cm_decode(mad, VB_MAD_BYTES, &m), -EPROTO);
    golden_req(mad);
    mad[2] = 1;                         /* CM class version 1 */
    CHECK_EQ(vb_cm_decode(mad, VB_MAD_BYTES, &m), -EPROTO);
    golden_req(mad);
    mad[17] = 0x19;                     /* LAP */
    CHECK_EQ(vb_cm_decode(mad, VB_MAD_BYTES, &m), -EOPNOTSUPP);
    mad[17] = 0x01;                     /* ClassPortInfo */
    CHECK_EQ(vb_cm_decode(mad, VB_MAD_BYTES, &m), -EOPNOTSUPP);
    CHECK_EQ(vb_cma_hdr_get((const uint8_t[VB_CMA_HDR_BYTES]){ 1, 0x40 }, &(struct vb_cma_hdr){ 0 }),
             -EPROTO);
    CHECK_EQ(vb_cma_hdr_get((const uint8_t[VB_CMA_HDR_BYTES]){ 0, 0x50 }, &(struct vb_cma_hdr){ 0 }),
             -EPROTO);
}

/* ---- two guests' proxies over the model ---------------------------------- */

#define GUEST_MADS 512

struct given {
    uint8_t peer[16], local[16];
    uint8_t mad[VB_MAD_BYTES];
};

struct guest {
    struct vb_cm *cm;
    struct cmm_host *host;
    uint8_t gid[16];
    struct given q[GUEST_MADS];
    unsigned head, n;
    unsigned errors;
    char last_error[256];
};

static uint64_t clock_ns;

static void deliver(void *opaque, const uint8_t peer[16],
                    const uint8_t local[16], const uint8_t mad[VB_MAD_BYTES])
{
    struct guest *g = opaque;
    struct given *e;

    CHECK(g->n < GUEST_MADS);
    if (g->n == GUEST_MADS) {
        return;
    }
    e = &g->q[(g->head + g->n++) % GUEST_MADS];
    memcpy(e->peer, peer, 16);
    memcpy(e->local, local, 16);
    memcpy(e->mad, mad, VB_MAD_BYTES);
}

static void on_guest_error(void *opaque, const char *msg)
{
    struct guest *g = opaque;

    g->errors++;
    snprintf(g->last_error, sizeof(g->last_error), "%s", msg);
}

static uint64_t now_ns(void *opaque)
{
    return clock_ns;
}

static void guest_init(struct guest *g, struct cmm_world *w, const char *ibdev,
                       const char *cfg_ibdev, const uint8_t gid[16],
                       const uint16_t *listen, unsigned nlisten)
{
    struct vb_cm_env env = { g, deliver, on_guest_error, now_ns };
    struct vb_cm_config cfg = { 0 };
    char err[128] = "";

    memset(g, 0, sizeof(*g));
    memcpy(g->gid, gid, 16);
    g->host = cmm_host_new(w, ibdev, gid);
    cfg.ibdev = cfg_ibdev;
    cfg.ibport = 1;
    cfg.ngids = 1;
    memcpy(cfg.gid[0], gid, 16);
    cfg.nlisten = nlisten;
    if (nlisten) {
        memcpy(cfg.listen, listen, nlisten * sizeof(*listen));
    }
    cfg.guest_timeout_ns = 5000000000ull;
    g->cm = vb_cm_create(&cmm_ops, g->host, &env, &cfg, err, sizeof(err));
    CHECK(g->cm != NULL);
    if (!g->cm) {
        fprintf(stderr, "  vb_cm_create: %s\n", err);
        abort();
    }
}

/* The next MAD the proxy gave guest g, decoded; false when none. */
static bool take(struct guest *g, struct vb_cm_msg *m, struct given *raw)
{
    struct given *e;

    if (!g->n) {
        return false;
    }
    e = &g->q[g->head];
    g->head = (g->head + 1) % GUEST_MADS;
    g->n--;
    if (raw) {
        *raw = *e;
    }
    /* what it gave comes from the peer, to this guest's GID */
    CHECK(!memcmp(e->local, g->gid, 16));
    CHECK_EQ(vb_cm_decode(e->mad, VB_MAD_BYTES, m), 0);
    return true;
}

static void send_msg(struct guest *g, const uint8_t dgid[16],
                     const struct vb_cm_msg *m)
{
    uint8_t mad[VB_MAD_BYTES];

    vb_cm_encode(m, mad);
    vb_cm_guest_mad(g->cm, g->gid, dgid, mad, sizeof(mad));
}

static void pump(struct guest *a, struct guest *b)
{
    for (int i = 0; i < 8; i++) {
        vb_cm_poll(a->cm);
        if (b) {
            vb_cm_poll(b->cm);
        }
    }
}

/* A REQ as the guest kernel's ib_cm and rdma_cm make it. */
static void make_req(struct vb_cm_msg *m, const uint8_t src[16],
                     const uint8_t dst[16], uint32_t comm_id, uint32_t qpn,
                     uint32_t psn, uint16_t dport, const char *user)
{
    struct vb_cma_hdr h = { .ip_version = 4, .src_port = 40001 };

    memset(m, 0, sizeof(*m));
    m->attr = VB_CM_REQ;
    m->tid = 0x4242000000000000ull | comm_id;
    m->local_comm_id = comm_id;
    m->service_id = VB_CMA_SID_TCP | dport;
    m->ca_guid = 0xaaaa;
    m->qpn = qpn;
    m->responder_resources = 16;
    m->initiator_depth = 8;
    m->remote_cm_response_timeout = 20;
    m->transport_type = VB_CM_TRANSPORT_RC;
    m->e2e_flow_control = true;
    m->starting_psn = psn;
    m->local_cm_response_timeout = 20;
    m->retry_count = 7;
    m->pkey = 0xffff;
    m->path_mtu = 3;
    m->rnr_retry_count = 7;
    m->max_cm_retries = 15;
    m->primary.local_lid = m->primary.remote_lid = 0xffff;
    memcpy(m->primary.local_gid, src, 16);
    memcpy(m->primary.remote_gid, dst, 16);
    m->primary.hop_limit = 64;
    memcpy(h.src, src, 16);
    memcpy(h.dst, dst, 16);
    vb_cma_hdr_put(&h, m->pdata);
    snprintf((char *)m->pdata + VB_CMA_HDR_BYTES,
             VB_CM_REQ_PDATA - VB_CMA_HDR_BYTES, "%s", user);
}

struct pair {
    struct cmm_world *w;
    struct guest a, b;
};

static const uint16_t port_7174[] = { 7174 };

static void pair_init(struct pair *p)
{
    p->w = cmm_world_new(1);
    guest_init(&p->a, p->w, "mock0", "mock0", gid_a, NULL, 0);
    guest_init(&p->b, p->w, "mock1", "mock1", gid_b, port_7174, 1);
}

static void pair_fini(struct pair *p)
{
    vb_cm_destroy(p->a.cm);
    vb_cm_destroy(p->b.cm);
    CHECK_EQ(cmm_host_ids(p->a.host), 0);
    CHECK_EQ(cmm_host_ids(p->b.host), 0);
    cmm_world_free(p->w);
}

/*
 * A connects to B's port 7174 and both QPs go to RTS: returns B's view of
 * the proxy's communication IDs in *a_peer_id (what A's guest calls B)
 * and *b_peer_id.
 */
static void connect_pair(struct pair *p, uint32_t qpn_a, uint32_t qpn_b,
                         uint32_t *a_peer_id, uint32_t *b_peer_id)
{
    struct vb_cm_msg req, m, rep = { 0 }, rtu = { 0 };
    struct vb_cma_hdr h;
    uint32_t psn_a_host = 0, psn_b_host = 0, rq;

    make_req(&req, gid_a, gid_b, 0x1000, qpn_a, 0x111111, 7174, "from-a");
    send_msg(&p->a, gid_b, &req);
    pump(&p->a, &p->b);

    /* B's guest gets a REQ with A's QPN, the PSN A's host receives from, A's address. */
    CHECK(take(&p->b, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_REQ);
    CHECK_EQ(m.service_id, VB_CMA_SID_TCP | 7174);
    CHECK_EQ(m.qpn, qpn_a);
    CHECK(cmm_host_psn(p->a.host, qpn_a, &psn_a_host));
    CHECK_EQ(m.starting_psn, psn_a_host);
    CHECK(m.starting_psn != 0x111111);
    CHECK_EQ(m.transport_type, VB_CM_TRANSPORT_RC);
    /* the sender's, as the wire has them (the host's CM saw them the other way round) */
    CHECK_EQ(m.responder_resources, 16);
    CHECK_EQ(m.initiator_depth, 8);
    CHECK_EQ(m.retry_count, 7);
    CHECK_EQ(m.path_mtu, 3);
    CHECK(!memcmp(m.primary.local_gid, gid_a, 16));
    CHECK(!memcmp(m.primary.remote_gid, gid_b, 16));
    CHECK_EQ(vb_cma_hdr_get(m.pdata, &h), 0);
    CHECK_EQ(h.ip_version, 4);
    CHECK_EQ(h.src_port, 40001);
    CHECK(!memcmp(h.src, gid_a, 16));
    CHECK(!memcmp(h.dst, gid_b, 16));
    CHECK(!strcmp((char *)m.pdata + VB_CMA_HDR_BYTES, "from-a"));
    *b_peer_id = m.local_comm_id;

    /*
     * B's guest moves its QP to RTR (rdma_accept does before the REP): it
     * receives from the PSN B's host will tell A, not from its own.
     */
    CHECK(vb_cm_rtr_psn(p->b.cm, qpn_b, gid_a, qpn_a, &rq));
    CHECK(!vb_cm_rtr_psn(p->b.cm, qpn_b, gid_a, qpn_a + 1, &rq));
    CHECK(!vb_cm_rtr_psn(p->b.cm, qpn_b, gid_c, qpn_a, &rq));
    CHECK(!vb_cm_rtr_psn(p->b.cm, qpn_b + 1, gid_a, qpn_a, &rq));

    rep.attr = VB_CM_REP;
    rep.tid = m.tid;
    rep.local_comm_id = 0x2000;
    rep.remote_comm_id = m.local_comm_id;
    rep.qpn = qpn_b;
    rep.starting_psn = 0x222222;
    rep.responder_resources = 4;
    rep.initiator_depth = 2;
    rep.rnr_retry_count = 6;
    memcpy(rep.pdata, "from-b", 7);
    send_msg(&p->b, gid_a, &rep);
    pump(&p->a, &p->b);

    /* A's guest gets a REP with B's QPN and the PSN B's host receives from. */
    CHECK(take(&p->a, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_REP);
    CHECK_EQ(m.remote_comm_id, 0x1000);
    CHECK_EQ(m.tid, req.tid);
    CHECK_EQ(m.qpn, qpn_b);
    CHECK(cmm_host_psn(p->b.host, qpn_b, &psn_b_host));
    CHECK_EQ(m.starting_psn, psn_b_host);
    CHECK_EQ(m.responder_resources, 4);
    CHECK_EQ(m.initiator_depth, 2);
    CHECK_EQ(m.rnr_retry_count, 6);
    CHECK(!memcmp(m.pdata, "from-b", 7));
    *a_peer_id = m.local_comm_id;
    /*
     * Each guest receives from the PSN its host told the peer, and sends
     * from the one the peer's host told its own (the REQ's and REP's).
     */
    CHECK(vb_cm_rtr_psn(p->b.cm, qpn_b, gid_a, qpn_a, &rq));
    CHECK_EQ(rq, psn_b_host);
    CHECK(vb_cm_rtr_psn(p->a.cm, qpn_a, gid_b, qpn_b, &rq));
    CHECK_EQ(rq, psn_a_host);

    rtu.attr = VB_CM_RTU;
    rtu.local_comm_id = 0x1000;
    rtu.remote_comm_id = m.local_comm_id;
    send_msg(&p->a, gid_b, &rtu);
    pump(&p->a, &p->b);
    CHECK(take(&p->b, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_RTU);
    CHECK_EQ(m.remote_comm_id, 0x2000);
    CHECK_EQ(m.local_comm_id, *b_peer_id);
    CHECK_EQ(vb_cm_conns(p->a.cm), 1);
    CHECK_EQ(vb_cm_conns(p->b.cm), 1);
    CHECK_EQ(p->a.errors + p->b.errors, 0);
}

static void test_cm_connect_and_disconnect(void)
{
    struct pair p;
    struct vb_cm_msg m, dreq = { .attr = VB_CM_DREQ }, drep = { .attr = VB_CM_DREP };
    uint32_t a_peer, b_peer;

    pair_init(&p);
    connect_pair(&p, 0x11, 0x22, &a_peer, &b_peer);

    /* A's guest disconnects: B's gets the DREQ, answers, A's the DREP. */
    dreq.local_comm_id = 0x1000;
    dreq.remote_comm_id = a_peer;
    dreq.qpn = 0x22;
    send_msg(&p.a, gid_b, &dreq);
    pump(&p.a, &p.b);
    CHECK(take(&p.b, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_DREQ);
    CHECK_EQ(m.remote_comm_id, 0x2000);
    CHECK_EQ(m.qpn, 0x22);
    CHECK(!take(&p.a, &m, NULL));
    drep.local_comm_id = 0x2000;
    drep.remote_comm_id = b_peer;
    send_msg(&p.b, gid_a, &drep);
    pump(&p.a, &p.b);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_DREP);
    CHECK_EQ(m.remote_comm_id, 0x1000);
    CHECK_EQ(vb_cm_conns(p.a.cm), 0);
    CHECK_EQ(vb_cm_conns(p.b.cm), 0);
    /* only B's two listeners (TCP and UDP) are left on the hosts */
    CHECK_EQ(cmm_host_ids(p.a.host), 0);
    CHECK_EQ(cmm_host_ids(p.b.host), 2);
    CHECK_EQ(p.a.errors + p.b.errors, 0);
    pair_fini(&p);
}

/* The passive guest disconnects first; then a DREQ again gets a DREP. */
static void test_cm_passive_disconnects(void)
{
    struct pair p;
    struct vb_cm_msg m, dreq = { .attr = VB_CM_DREQ }, drep = { .attr = VB_CM_DREP };
    uint32_t a_peer, b_peer;

    pair_init(&p);
    connect_pair(&p, 0x31, 0x32, &a_peer, &b_peer);
    dreq.local_comm_id = 0x2000;
    dreq.remote_comm_id = b_peer;
    send_msg(&p.b, gid_a, &dreq);
    pump(&p.a, &p.b);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_DREQ);
    CHECK_EQ(m.qpn, 0x31);
    drep.local_comm_id = 0x1000;
    drep.remote_comm_id = a_peer;
    send_msg(&p.a, gid_b, &drep);
    pump(&p.a, &p.b);
    CHECK(take(&p.b, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_DREP);
    CHECK_EQ(vb_cm_conns(p.a.cm) + vb_cm_conns(p.b.cm), 0);

    /* B's guest sends its DREQ again (the DREP was slow): a DREP back. */
    send_msg(&p.b, gid_a, &dreq);
    CHECK(take(&p.b, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_DREP);
    CHECK_EQ(m.local_comm_id, b_peer);
    CHECK_EQ(m.remote_comm_id, 0x2000);
    pair_fini(&p);
}

/* Nobody listens on the port: A's guest gets a REJ, invalid service ID. */
static void test_cm_no_listener(void)
{
    struct pair p;
    struct vb_cm_msg req, m;

    pair_init(&p);
    make_req(&req, gid_a, gid_b, 0x77, 0x10, 1, 9999, "x");
    send_msg(&p.a, gid_b, &req);
    pump(&p.a, &p.b);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_REJ);
    CHECK_EQ(m.reason, VB_CM_REJ_INVALID_SERVICE_ID);
    CHECK_EQ(m.remote_comm_id, 0x77);
    CHECK_EQ(m.message, VB_CM_MSG_REQ);
    CHECK(!take(&p.b, &m, NULL));
    CHECK_EQ(vb_cm_conns(p.a.cm), 0);
    CHECK_EQ(cmm_host_ids(p.a.host), 0);
    pair_fini(&p);
}

/* B's guest refuses with private data; A's guest gets both. */
static void test_cm_guest_rejects(void)
{
    struct pair p;
    struct vb_cm_msg req, m, rej = { .attr = VB_CM_REJ };

    pair_init(&p);
    make_req(&req, gid_a, gid_b, 0x78, 0x10, 1, 7174, "x");
    send_msg(&p.a, gid_b, &req);
    pump(&p.a, &p.b);
    CHECK(take(&p.b, &m, NULL));
    rej.local_comm_id = 0x99;
    rej.remote_comm_id = m.local_comm_id;
    rej.message = VB_CM_MSG_REQ;
    rej.reason = VB_CM_REJ_CONSUMER_DEFINED;
    memcpy(rej.pdata, "go away", 8);
    send_msg(&p.b, gid_a, &rej);
    pump(&p.a, &p.b);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_REJ);
    CHECK_EQ(m.reason, VB_CM_REJ_CONSUMER_DEFINED);
    CHECK(!memcmp(m.pdata, "go away", 8));
    CHECK_EQ(vb_cm_conns(p.a.cm) + vb_cm_conns(p.b.cm), 0);
    CHECK_EQ(cmm_host_ids(p.a.host), 0);
    CHECK_EQ(cmm_host_ids(p.b.host), 2);
    CHECK_EQ(p.a.errors + p.b.errors, 0);
    pair_fini(&p);
}

/* ib_cm sends its REQ again when the answer is slow: one connection, the same REP. */
static void test_cm_retries_answered_again(void)
{
    struct pair p;
    struct vb_cm_msg req, m, rep = { .attr = VB_CM_REP };
    struct given first, second;

    pair_init(&p);
    make_req(&req, gid_a, gid_b, 0x55, 0x10, 1, 7174, "x");
    send_msg(&p.a, gid_b, &req);
    send_msg(&p.a, gid_b, &req);        /* before the host answered */
    pump(&p.a, &p.b);
    CHECK_EQ(vb_cm_conns(p.a.cm), 1);
    CHECK(take(&p.b, &m, NULL));
    CHECK(!take(&p.b, &m, NULL));       /* one REQ reached B */
    rep.local_comm_id = 0x66;
    rep.remote_comm_id = m.local_comm_id;
    rep.qpn = 0x20;
    send_msg(&p.b, gid_a, &rep);
    pump(&p.a, &p.b);
    CHECK(take(&p.a, &m, &first));
    send_msg(&p.a, gid_b, &req);        /* the REP was lost on its way */
    CHECK(take(&p.a, &m, &second));
    CHECK(!memcmp(first.mad, second.mad, VB_MAD_BYTES));
    CHECK_EQ(vb_cm_conns(p.a.cm), 1);
    /* B's REP again, after the accept: nothing new, no error */
    send_msg(&p.b, gid_a, &rep);
    CHECK_EQ(p.b.errors, 0);
    pair_fini(&p);
}

static void test_cm_bad_input(void)
{
    struct pair p;
    struct vb_cm_msg req, m, rtu = { .attr = VB_CM_RTU };
    uint8_t mad[VB_MAD_BYTES];
    unsigned errs;

    pair_init(&p);

    /* Not a CM MAD: dropped, said. */
    golden_req(mad);
    mad[1] = 0x04;
    vb_cm_guest_mad(p.a.cm, gid_a, gid_b, mad, sizeof(mad));
    CHECK_EQ(p.a.errors, 1);
    CHECK_STR_CONTAINS(p.a.last_error, "class 0x04");
    vb_cm_guest_mad(p.a.cm, gid_a, gid_b, mad, 10);
    CHECK_EQ(p.a.errors, 2);
    /* LAP: not carried. */
    golden_req(mad);
    mad[17] = 0x19;
    vb_cm_guest_mad(p.a.cm, gid_a, gid_b, mad, sizeof(mad));
    CHECK_EQ(p.a.errors, 3);
    CHECK_STR_CONTAINS(p.a.last_error, "LAP");
    /* A response method. */
    golden_req(mad);
    mad[3] = 0x81;
    vb_cm_guest_mad(p.a.cm, gid_a, gid_b, mad, sizeof(mad));
    CHECK_EQ(p.a.errors, 4);
    CHECK(!take(&p.a, &m, NULL));

    /* A service ID outside rdma_cm's TCP port space. */
    make_req(&req, gid_a, gid_b, 0x81, 0x10, 1, 7174, "x");
    req.service_id = 0x1000000000000001ull;
    send_msg(&p.a, gid_b, &req);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_REJ);
    CHECK_EQ(m.reason, VB_CM_REJ_INVALID_SERVICE_ID);
    CHECK_EQ(m.remote_comm_id, 0x81);
    CHECK_STR_CONTAINS(p.a.last_error, "service ID");
    /* UC. */
    make_req(&req, gid_a, gid_b, 0x82, 0x10, 1, 7174, "x");
    req.transport_type = VB_CM_TRANSPORT_UC;
    send_msg(&p.a, gid_b, &req);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.reason, VB_CM_REJ_UNSUPPORTED_REQ);
    /* A source address that is not the guest's. */
    make_req(&req, gid_c, gid_b, 0x83, 0x10, 1, 7174, "x");
    send_msg(&p.a, gid_b, &req);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.reason, VB_CM_REJ_INVALID_GID);
    /* A broken rdma_cm header. */
    make_req(&req, gid_a, gid_b, 0x84, 0x10, 1, 7174, "x");
    req.pdata[1] = 0x70;
    send_msg(&p.a, gid_b, &req);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.reason, VB_CM_REJ_INVALID_GID);
    CHECK_EQ(vb_cm_conns(p.a.cm), 0);
    CHECK_EQ(cmm_host_ids(p.a.host), 0);

    /* An RTU for a communication ID the proxy never gave. */
    errs = p.a.errors;
    rtu.remote_comm_id = 0x12345678;
    send_msg(&p.a, gid_b, &rtu);
    CHECK_EQ(p.a.errors, errs + 1);
    CHECK_STR_CONTAINS(p.a.last_error, "does not hold");
    CHECK(!take(&p.a, &m, NULL));
    CHECK(!take(&p.b, &m, NULL));
    pair_fini(&p);
}

/* A guest can hold at most VB_CM_MAX_CONNS host IDs. */
static void test_cm_table_full(void)
{
    struct pair p;
    struct vb_cm_msg req, m;

    pair_init(&p);
    for (uint32_t i = 0; i < VB_CM_MAX_CONNS; i++) {
        make_req(&req, gid_a, gid_b, 0x10000 + i, 0x100 + i, 1, 7174, "x");
        send_msg(&p.a, gid_b, &req);
    }
    CHECK_EQ(vb_cm_conns(p.a.cm), VB_CM_MAX_CONNS);
    CHECK_EQ(cmm_host_ids(p.a.host), VB_CM_MAX_CONNS);
    CHECK(!take(&p.a, &m, NULL));
    make_req(&req, gid_a, gid_b, 0x20000, 0x900, 1, 7174, "x");
    send_msg(&p.a, gid_b, &req);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_REJ);
    CHECK_EQ(m.reason, VB_CM_REJ_NO_RESOURCES);
    CHECK_EQ(m.remote_comm_id, 0x20000);
    CHECK_STR_CONTAINS(p.a.last_error, "already proxied");
    CHECK_EQ(cmm_host_ids(p.a.host), VB_CM_MAX_CONNS);
    pair_fini(&p);
}

/*
 * B's guest never answers the REQ: after the guest timeout B's proxy
 * rejects the peer (A's guest gets a REJ) and tells B's guest too. The
 * proxies have polled with nothing waiting first, so B's earliest
 * deadline is "none" when the REQ arrives: the REQ's must lower it.
 */
static void test_cm_guest_timeout(void)
{
    struct pair p;
    struct vb_cm_msg req, m;

    clock_ns = 0;
    pair_init(&p);
    pump(&p.a, &p.b);
    CHECK_EQ(vb_cm_deadline(p.b.cm), UINT64_MAX);
    make_req(&req, gid_a, gid_b, 0x91, 0x10, 1, 7174, "x");
    send_msg(&p.a, gid_b, &req);
    pump(&p.a, &p.b);
    CHECK(take(&p.b, &m, NULL));
    CHECK_EQ(vb_cm_deadline(p.b.cm), 5000000000ull);
    clock_ns = 4000000000ull;
    pump(&p.a, &p.b);
    CHECK_EQ(vb_cm_conns(p.b.cm), 1);
    clock_ns = 5000000001ull;
    pump(&p.a, &p.b);
    CHECK_EQ(vb_cm_conns(p.b.cm), 0);
    CHECK(take(&p.b, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_REJ);
    CHECK_EQ(m.reason, VB_CM_REJ_TIMEOUT);
    CHECK_STR_CONTAINS(p.b.last_error, "no answer from the guest");
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_REJ);
    CHECK_EQ(vb_cm_conns(p.a.cm), 0);
    CHECK_EQ(cmm_host_ids(p.a.host), 0);
    CHECK_EQ(cmm_host_ids(p.b.host), 2);
    clock_ns = 0;
    pair_fini(&p);
}

/* UD: SIDR both ways, success and refusal. */
static void test_cm_sidr(void)
{
    struct pair p;
    struct vb_cm_msg req = { .attr = VB_CM_SIDR_REQ }, m, rep = { .attr = VB_CM_SIDR_REP };
    struct vb_cma_hdr h = { .ip_version = 4, .src_port = 40100 };

    pair_init(&p);
    req.local_comm_id = 0xabc;
    req.tid = 0x77;
    req.pkey = 0xffff;
    req.service_id = VB_CMA_SID_UDP | 7174;
    memcpy(h.src, gid_a, 16);
    memcpy(h.dst, gid_b, 16);
    vb_cma_hdr_put(&h, req.pdata);
    memcpy(req.pdata + VB_CMA_HDR_BYTES, "ud?", 4);
    send_msg(&p.a, gid_b, &req);
    pump(&p.a, &p.b);
    CHECK(take(&p.b, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_SIDR_REQ);
    CHECK_EQ(m.service_id, VB_CMA_SID_UDP | 7174);
    CHECK(!memcmp(m.pdata + VB_CMA_HDR_BYTES, "ud?", 4));
    rep.local_comm_id = m.local_comm_id;
    rep.status = VB_CM_SIDR_SUCCESS;
    rep.qpn = 0x4321;
    rep.qkey = 0x11111111;
    rep.service_id = m.service_id;
    send_msg(&p.b, gid_a, &rep);
    pump(&p.a, &p.b);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_SIDR_REP);
    CHECK_EQ(m.local_comm_id, 0xabc);
    CHECK_EQ(m.tid, 0x77);
    CHECK_EQ(m.status, VB_CM_SIDR_SUCCESS);
    CHECK_EQ(m.qpn, 0x4321);
    CHECK_EQ(m.qkey, 0x11111111);
    CHECK_EQ(vb_cm_conns(p.a.cm) + vb_cm_conns(p.b.cm), 0);
    CHECK_EQ(cmm_host_ids(p.a.host), 0);

    /* B's guest refuses. */
    req.local_comm_id = 0xabd;
    send_msg(&p.a, gid_b, &req);
    pump(&p.a, &p.b);
    CHECK(take(&p.b, &m, NULL));
    rep.local_comm_id = m.local_comm_id;
    rep.status = VB_CM_SIDR_REJECT;
    send_msg(&p.b, gid_a, &rep);
    pump(&p.a, &p.b);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_SIDR_REP);
    CHECK_EQ(m.local_comm_id, 0xabd);
    CHECK_EQ(m.status, VB_CM_SIDR_REJECT);
    CHECK_EQ(vb_cm_conns(p.a.cm) + vb_cm_conns(p.b.cm), 0);
    CHECK_EQ(p.a.errors + p.b.errors, 0);
    pair_fini(&p);
}

/* A reset mid-connection drops every host ID but the listeners. */
static void test_cm_reset(void)
{
    struct pair p;
    struct vb_cm_msg m, dreq = { .attr = VB_CM_DREQ };
    uint32_t a_peer, b_peer;

    pair_init(&p);
    connect_pair(&p, 0x41, 0x42, &a_peer, &b_peer);
    vb_cm_reset(p.a.cm);
    CHECK_EQ(vb_cm_conns(p.a.cm), 0);
    CHECK_EQ(cmm_host_ids(p.a.host), 0);
    /* the peer's host saw the connection go (its DREQ), B's guest hears */
    pump(&p.a, &p.b);
    CHECK(take(&p.b, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_DREQ);
    /* an old DREQ from A's guest after the reset: a DREP, nothing held */
    dreq.local_comm_id = 0x1000;
    dreq.remote_comm_id = a_peer;
    send_msg(&p.a, gid_b, &dreq);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_DREP);
    CHECK_EQ(vb_cm_conns(p.a.cm), 0);
    pair_fini(&p);
}

/* The host's failures reach the guest as REJs, and nothing is held. */
static void test_cm_host_failures(void)
{
    struct pair p;
    struct cmm_world *w;
    struct guest odd;
    struct vb_cm_msg req, m;

    pair_init(&p);
    cmm_fail_next(p.a.host, CMM_CREATE_ID, -ENOMEM);
    make_req(&req, gid_a, gid_b, 0xa1, 0x10, 1, 7174, "x");
    send_msg(&p.a, gid_b, &req);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.reason, VB_CM_REJ_NO_RESOURCES);

    cmm_fail_next(p.a.host, CMM_RESOLVE_ADDR, -EINVAL);
    make_req(&req, gid_a, gid_b, 0xa2, 0x10, 1, 7174, "x");
    send_msg(&p.a, gid_b, &req);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.reason, VB_CM_REJ_TIMEOUT);

    /* an address no host has */
    make_req(&req, gid_a, gid_c, 0xa3, 0x10, 1, 7174, "x");
    send_msg(&p.a, gid_c, &req);
    pump(&p.a, &p.b);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.reason, VB_CM_REJ_INVALID_GID);

    cmm_fail_next(p.a.host, CMM_CONNECT, -EIO);
    make_req(&req, gid_a, gid_b, 0xa4, 0x10, 1, 7174, "x");
    send_msg(&p.a, gid_b, &req);
    pump(&p.a, &p.b);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.reason, VB_CM_REJ_NO_RESOURCES);

    /* B's host cannot accept: B's guest is told, A's gets the REJ */
    make_req(&req, gid_a, gid_b, 0xa5, 0x10, 1, 7174, "x");
    send_msg(&p.a, gid_b, &req);
    pump(&p.a, &p.b);
    CHECK(take(&p.b, &m, NULL));
    {
        struct vb_cm_msg rep = { .attr = VB_CM_REP };

        rep.local_comm_id = 0x5;
        rep.remote_comm_id = m.local_comm_id;
        rep.qpn = 0x20;
        cmm_fail_next(p.b.host, CMM_ACCEPT, -EIO);
        send_msg(&p.b, gid_a, &rep);
    }
    CHECK(take(&p.b, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_REJ);
    CHECK_STR_CONTAINS(p.b.last_error, "rdma_accept failed");
    pump(&p.a, &p.b);
    CHECK(take(&p.a, &m, NULL));
    CHECK_EQ(m.attr, VB_CM_REJ);
    CHECK_EQ(vb_cm_conns(p.a.cm) + vb_cm_conns(p.b.cm), 0);
    CHECK_EQ(cmm_host_ids(p.a.host), 0);
    CHECK_EQ(cmm_host_ids(p.b.host), 2);
    pair_fini(&p);

    /* The host routes to the peer through another device than the guest's. */
    w = cmm_world_new(2);
    guest_init(&odd, w, "other0", "mock0", gid_a, NULL, 0);
    cmm_host_new(w, "mock1", gid_b);
    make_req(&req, gid_a, gid_b, 0xa6, 0x10, 1, 7174, "x");
    send_msg(&odd, gid_b, &req);
    pump(&odd, NULL);
    CHECK(take(&odd, &m, NULL));
    CHECK_EQ(m.reason, VB_CM_REJ_INVALID_GID);
    CHECK_STR_CONTAINS(odd.last_error, "through other0 port 1");
    CHECK_EQ(cmm_host_ids(odd.host), 0);
    vb_cm_destroy(odd.cm);
    cmm_world_free(w);
}

/* Both guests ask to disconnect at once. */
static void test_cm_simultaneous_disconnect(void)
{
    struct pair p;
    struct vb_cm_msg m, da = { .attr = VB_CM_DREQ }, db = { .attr = VB_CM_DREQ };
    uint32_t a_peer, b_peer;
    int drep_a = 0, drep_b = 0;

    pair_init(&p);
    connect_pair(&p, 0x51, 0x52, &a_peer, &b_peer);
    da.local_comm_id = 0x1000;
    da.remote_comm_id = a_peer;
    db.local_comm_id = 0x2000;
    db.remote_comm_id = b_peer;
    send_msg(&p.a, gid_b, &da);
    send_msg(&p.b, gid_a, &db);
    pump(&p.a, &p.b);
    while (take(&p.a, &m, NULL)) {
        drep_a += m.attr == VB_CM_DREP;
    }
    while (take(&p.b, &m, NULL)) {
        drep_b += m.attr == VB_CM_DREP;
    }
    CHECK_EQ(drep_a, 1);
    CHECK_EQ(drep_b, 1);
    CHECK_EQ(vb_cm_conns(p.a.cm) + vb_cm_conns(p.b.cm), 0);
    CHECK_EQ(cmm_host_ids(p.a.host), 0);
    pair_fini(&p);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_cm_codec_req),
        UNIT_TEST(test_cm_codec_others),
        UNIT_TEST(test_cm_codec_refusals),
        UNIT_TEST(test_cm_connect_and_disconnect),
        UNIT_TEST(test_cm_passive_disconnects),
        UNIT_TEST(test_cm_no_listener),
        UNIT_TEST(test_cm_guest_rejects),
        UNIT_TEST(test_cm_retries_answered_again),
        UNIT_TEST(test_cm_bad_input),
        UNIT_TEST(test_cm_table_full),
        UNIT_TEST(test_cm_guest_timeout),
        UNIT_TEST(test_cm_sidr),
        UNIT_TEST(test_cm_reset),
        UNIT_TEST(test_cm_host_failures),
        UNIT_TEST(test_cm_simultaneous_disconnect),
    };

    return unit_run("test_verbs_cm", tests, sizeof(tests) / sizeof(tests[0]));
}
