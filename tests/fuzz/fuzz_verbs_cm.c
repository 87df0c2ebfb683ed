/*
 * libFuzzer harness for the verbs backend's CM proxy
 * (host-backend/verbs/vb_cm.c, vb_cm_mad.c): what a guest can send on its
 * GSI QP is guest input, so two proxies over the rdma_cm model
 * (tests/unit/verbs_cm_model.c), guest A with no listener and guest B
 * listening on port 7174, take a program of actions:
 *
 *   0  guest A or B sends a CM message built from the input: its kind, the
 *      IDs it names picked from those the proxies gave out (or raw), its
 *      QPN, PSN, service ID and private data
 *   1  guest A or B sends raw bytes as a MAD (any length up to 300)
 *   2  poll A, B or both (host events, deadlines)
 *   3  the clock moves on (up to 100 s)
 *   4  the next host call of a kind fails (the model's fault hook)
 *   5  reset A or B
 *   6, 7  poll both
 *
 * Checked after every action: the model's own checks (an event taken
 * before the last was acknowledged, an ID destroyed with an event pending:
 * abort), a proxy holding more than VB_CM_MAX_CONNS connections or a host
 * more IDs than those plus its listeners; at the end every proxy is
 * destroyed and no host ID may be left (a leak). ASan and UBSan catch the
 * rest.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vb_cm.h"
#include "vb_cm_mad.h"
#include "verbs_cm_model.h"

#define IDS 16

struct fguest {
    struct vb_cm *cm;
    struct cmm_host *host;
    uint8_t gid[16];
    /* communication IDs and TIDs from MADs the proxy gave this guest */
    uint32_t ids[IDS];
    uint64_t tids[IDS];
    unsigned nids;
};

static uint64_t fclock;

static const uint8_t gid_a[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 };
static const uint8_t gid_b[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 };

static void fdeliver(void *opaque, const uint8_t peer[16],
                     const uint8_t local[16], const uint8_t mad[VB_MAD_BYTES])
{
    struct fguest *g = opaque;
    struct vb_cm_msg m;

    if (vb_cm_decode(mad, VB_MAD_BYTES, &m)) {
        fprintf(stderr, "fuzz_verbs_cm: proxy bug: it gave the guest a MAD "
                "it cannot decode\n");
        abort();
    }
    g->ids[g->nids % IDS] = m.local_comm_id;
    g->tids[g->nids % IDS] = m.tid;
    g->nids++;
}

static void fguest_error(void *opaque, const char *msg)
{
}

static uint64_t fnow(void *opaque)
{
    return fclock;
}

/* The input, consumed from the front; zeros once it runs out. */
struct in {
    const uint8_t *p;
    size_t n;
};

static uint8_t u8(struct in *in)
{
    if (!in->n) {
        return 0;
    }
    in->n--;
    return *in->p++;
}

static uint32_t u32(struct in *in)
{
    uint32_t v = 0;

    for (int i = 0; i < 4; i++) {
        v = v << 8 | u8(in);
    }
    return v;
}

static void guest_init(struct fguest *g, struct cmm_world *w,
                       const char *ibdev, const uint8_t gid[16], bool listen)
{
    static const uint16_t port = 7174;
    struct vb_cm_env env = { g, fdeliver, fguest_error, fnow };
    struct vb_cm_config cfg = { .ibdev = ibdev, .ibport = 1, .ngids = 1,
                                .guest_timeout_ns = 5000000000ull };
    char err[128];

    memset(g, 0, sizeof(*g));
    memcpy(g->gid, gid, 16);
    g->host = cmm_host_new(w, ibdev, gid);
    memcpy(cfg.gid[0], gid, 16);
    if (listen) {
        cfg.nlisten = 1;
        cfg.listen[0] = port;
    }
    g->cm = vb_cm_create(&cmm_ops, g->host, &env, &cfg, err, sizeof(err));
    if (!g->cm) {
        fprintf(stderr, "fuzz_verbs_cm: vb_cm_create: %s\n", err);
        abort();
    }
}

static const uint16_t kinds[] = {
    VB_CM_REQ, VB_CM_MRA, VB_CM_REJ, VB_CM_REP, VB_CM_RTU, VB_CM_DREQ,
    VB_CM_DREP, VB_CM_SIDR_REQ, VB_CM_SIDR_REP, VB_CM_LAP, 0x0001,
};

/* A CM message from the input, its IDs from what the guest was given. */
static void send_built(struct fguest *g, const uint8_t *dgid, struct in *in)
{
    struct vb_cm_msg m = { 0 };
    struct vb_cma_hdr h = { .ip_version = 4 };
    uint8_t mad[VB_MAD_BYTES];
    uint8_t sel = u8(in);
    uint8_t pick = u8(in);

    m.attr = kinds[sel % (sizeof(kinds) / sizeof(kinds[0]))];
    m.local_comm_id = 0x1000 + (u8(in) & 7);
    m.remote_comm_id = g->nids && (pick & 0x80)
                       ? g->ids[pick % (g->nids < IDS ? g->nids : IDS)]
                       : u32(in);
    m.tid = g->nids && (pick & 0x40) ? g->tids[pick % (g->nids < IDS ? g->nids : IDS)]
                                     : u8(in);
    if (m.attr == VB_CM_SIDR_REP && g->nids && (pick & 0x80)) {
        m.local_comm_id = m.remote_comm_id;
    }
    m.qpn = 0x100 + u8(in);
    m.starting_psn = u32(in) & 0xffffff;
    m.service_id = (pick & 0x20 ? VB_CMA_SID_UDP : VB_CMA_SID_TCP) |
                   (pick & 0x10 ? u8(in) : 7174);
    if (pick & 0x08) {
        m.service_id = (uint64_t)u32(in) << 32 | u32(in);
    }
    m.transport_type = u8(in) & 3;
    m.status = u8(in) & 3;
    m.reason = u8(in);
    m.responder_resources = u8(in);
    m.initiator_depth = u8(in);
    m.retry_count = u8(in) & 7;
    m.rnr_retry_count = u8(in) & 7;
    memcpy(m.primary.local_gid, g->gid, 16);
    memcpy(m.primary.remote_gid, dgid, 16);
    memcpy(h.src, u8(in) & 1 ? dgid : g->gid, 16);
    memcpy(h.dst, dgid, 16);
    h.src_port = 40000 + u8(in);
    vb_cma_hdr_put(&h, m.pdata);
    for (int i = 0; i < 8; i++) {
        m.pdata[VB_CMA_HDR_BYTES + i] = u8(in);
    }
    if (u8(in) == 0xff) {
        m.pdata[0] = u8(in);            /* a damaged rdma_cm header */
        m.pdata[1] = u8(in);
    }
    vb_cm_encode(&m, mad);
    if (u8(in) == 0xfe) {
        mad[3] = u8(in);                /* another method */
    }
    vb_cm_guest_mad(g->cm, g->gid, dgid, mad, sizeof(mad));
}

static void send_raw(struct fguest *g, const uint8_t *dgid, struct in *in)
{
    uint8_t mad[300];
    size_t len = u8(in) + u8(in) / 4;

    if (len > sizeof(mad)) {
        len = sizeof(mad);
    }
    for (size_t i = 0; i < len; i++) {
        mad[i] = u8(in);
    }
    if (len >= 3 && (mad[0] & 0x80)) {
        mad[0] = 1;                     /* often a CM MAD at least */
        mad[1] = 0x07;
        mad[2] = 2;
    }
    vb_cm_guest_mad(g->cm, g->gid, dgid, mad, len);
}

static void check(const struct fguest *g)
{
    if (vb_cm_conns(g->cm) > VB_CM_MAX_CONNS ||
        cmm_host_ids(g->host) > VB_CM_MAX_CONNS + 2) {
        fprintf(stderr, "fuzz_verbs_cm: proxy bug: %u connections, %u host "
                "IDs\n", vb_cm_conns(g->cm), cmm_host_ids(g->host));
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct in in = { data, size };
    struct cmm_world *w = cmm_world_new(size);
    struct fguest a, b;
    unsigned steps = 0;

    fclock = 0;
    guest_init(&a, w, "mock0", gid_a, false);
    guest_init(&b, w, "mock1", gid_b, true);
    while (in.n && steps++ < 400) {
        uint8_t op = u8(&in);
        struct fguest *g = op & 0x80 ? &b : &a;
        const uint8_t *peer = g == &a ? gid_b : gid_a;

        switch (op & 7) {
        case 0:
            send_built(g, peer, &in);
            break;
        case 1:
            send_raw(g, peer, &in);
            break;
        case 2:
            vb_cm_poll(a.cm);
            if (op & 0x40) {
                vb_cm_poll(b.cm);
            }
            break;
        case 3:
            fclock += (uint64_t)u8(&in) * 400000000ull;
            break;
        case 4: {
            static const int errs[] = { -ENOMEM, -EINVAL, -EIO };

            cmm_fail_next(g->host, (enum cmm_call)(u8(&in) % 4),
                          errs[u8(&in) % 3]);
            break;
        }
        case 5:
            vb_cm_reset(g->cm);
            break;
        default:
            /* a poll of both, so that exchanges make progress */
            vb_cm_poll(a.cm);
            vb_cm_poll(b.cm);
            break;
        }
        check(&a);
        check(&b);
    }
    vb_cm_destroy(a.cm);
    vb_cm_destroy(b.cm);
    if (cmm_host_ids(a.host) || cmm_host_ids(b.host)) {
        fprintf(stderr, "fuzz_verbs_cm: proxy bug: host IDs left after "
                "destroy (%u, %u)\n", cmm_host_ids(a.host),
                cmm_host_ids(b.host));
        abort();
    }
    cmm_world_free(w);
    return 0;
}
