/*
 * Unit tests of the verbs backend (host-backend/verbs/) against the mock
 * host device of verbs_mock.h, driven through the backend contract as the
 * device core drives it, with a stand-in for the core's callbacks. Guest
 * RAM is a memfd mapped twice, as QEMU's memory-backend-memfd,share=on
 * would be, in two ranges that are not contiguous in this process.
 *
 * What is checked: refusals at create (device, port, GID, faults), the
 * host's QPNs and rkeys handed out as wire identifiers, QP attributes,
 * MR placement (direct, or an alias whose bytes are guest RAM's: zero
 * copy), SGE translation to host lkeys (DMA-MR SGEs split at a RAM
 * range's end), UD address handles, send-queue space, completion mapping
 * (WQE index, opcode on errors, byte count, immediate, source QP, flags),
 * receives pulled at the doorbell, async events, host ENOMEM as -ENOMEM,
 * SRQs (a host SRQ filled from the guest ring at poll, limit and events),
 * and reset and destroy releasing every host object.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "qrdma_backend_verbs.h"
#include "unit.h"
#include "verbs_cm_model.h"
#include "verbs_mock.h"

int unit_failures;

/* ---- guest RAM: two ranges of one memfd, far apart in gpa and in hva ------------ */

#define RAM0_GPA    0x100000ull
#define RAM1_GPA    0x300000ull         /* right after RAM0 in gpa: a DMA SGE may cross */
#define RAM_SIZE    0x200000ull
#define PAGE        4096ull

static int ram_fd = -1;
static uint8_t *ram0, *ram1;

static void ram_setup(void)
{
    uint8_t *gap;

    if (ram_fd >= 0) {
        return;
    }
    ram_fd = memfd_create("qrdma-test-ram", MFD_CLOEXEC);
    CHECK(ram_fd >= 0);
    CHECK(!ftruncate(ram_fd, 2 * RAM_SIZE));
    ram0 = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, ram_fd, 0);
    gap = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ram1 = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, ram_fd, RAM_SIZE);
    CHECK(ram0 != MAP_FAILED && ram1 != MAP_FAILED && gap != MAP_FAILED);
    CHECK(ram0 + RAM_SIZE != ram1);     /* not contiguous in hva, or the alias test proves nothing */
}

static uint8_t *gpa_hva(uint64_t gpa)
{
    return gpa < RAM1_GPA ? ram0 + (gpa - RAM0_GPA) : ram1 + (gpa - RAM1_GPA);
}

/* ---- the core's side ------------------------------------------------------------------ */

#define PD          3
#define QP_ID       5
#define QP_ID2      6
#define SCQ_ID      1
#define RCQ_ID      2
#define STAG        (7u << 8 | 0x42)    /* an MR of PD */
#define STAG_DMA    (8u << 8 | 0x11)    /* the DMA MR of PD */
#define IOVA        0x7f0000001000ull

static struct core {
    /* mr_gpa_walk answers with these pieces for any MR */
    uint64_t piece_gpa[4], piece_len[4];
    unsigned npieces;
    int walk_ret;
    /* get_recv hands these out, then -ENOENT */
    struct qrdma_be_recv_wr recv[8];
    unsigned nrecv, recv_next;
    int recv_err;
    /* fast_reg and invalidate calls */
    struct qrdma_be_fast_reg fr[4];
    unsigned nfr;
    int fr_ret;
    uint32_t inv_stag[4], inv_qp[4];
    unsigned ninv;
    /* get_srq_recv hands these out (for SRQ srq_recv_id), then -ENOENT */
    struct qrdma_be_recv_wr srq_recv[8];
    unsigned nsrq_recv, srq_recv_next;
    uint32_t srq_recv_id;
    /* what the backend reported */
    struct qrdma_be_wc wc[32];
    uint32_t wc_qp[32];
    unsigned nwc;
    enum qrdma_be_event ev[8];
    uint32_t ev_id[8];
    unsigned nev;
    unsigned sq_space;
    uint32_t sq_space_qp;
} core;

static int cb_mr_gpa_walk(void *opaque, uint32_t pd, uint32_t stag, uint64_t iova, uint64_t len,
                          int (*fn)(void *arg, uint64_t gpa, uint64_t len), void *arg)
{
    unsigned i;
    int ret;

    CHECK(opaque == &core);
    if (core.walk_ret) {
        return core.walk_ret;
    }
    for (i = 0; i < core.npieces; i++) {
        ret = fn(arg, core.piece_gpa[i], core.piece_len[i]);
        if (ret) {
            return ret;
        }
    }
    return 0;
}

static int cb_get_recv(void *opaque, uint32_t qp_id, struct qrdma_be_recv_wr *out)
{
    if (core.recv_err) {
        return core.recv_err;
    }
    if (core.recv_next == core.nrecv) {
        return -ENOENT;
    }
    *out = core.recv[core.recv_next++];
    return 0;
}

static int cb_fast_reg(void *opaque, uint32_t pd, const struct qrdma_be_fast_reg *fr)
{
    CHECK_EQ(pd, PD);
    if (core.nfr < 4) {
        core.fr[core.nfr] = *fr;
    }
    core.nfr++;
    return core.fr_ret;
}

static int cb_invalidate(void *opaque, uint32_t pd, uint32_t qp_id, uint32_t stag)
{
    CHECK_EQ(pd, PD);
    if (core.ninv < 4) {
        core.inv_stag[core.ninv] = stag;
        core.inv_qp[core.ninv] = qp_id;
    }
    core.ninv++;
    return 0;
}

static int cb_get_srq_recv(void *opaque, uint32_t srq_id, struct qrdma_be_recv_wr *out)
{
    CHECK_EQ(srq_id, core.srq_recv_id);
    if (core.srq_recv_next == core.nsrq_recv) {
        return -ENOENT;
    }
    *out = core.srq_recv[core.srq_recv_next++];
    return 0;
}

static void cb_complete(void *opaque, uint32_t qp_id, const struct qrdma_be_wc *wc)
{
    if (core.nwc < 32) {
        core.wc[core.nwc] = *wc;
        core.wc_qp[core.nwc] = qp_id;
    }
    core.nwc++;
}

static unsigned guest_errors;

static void cb_guest_error(void *opaque, const char *msg)
{
    CHECK(opaque == &core);
    CHECK(msg[0] != 0);
    guest_errors++;
}

static void cb_event(void *opaque, enum qrdma_be_event ev, uint32_t id)
{
    if (core.nev < 8) {
        core.ev[core.nev] = ev;
        core.ev_id[core.nev] = id;
    }
    core.nev++;
}

static void cb_sq_space(void *opaque, uint32_t qp_id)
{
    core.sq_space++;
    core.sq_space_qp = qp_id;
}

static uint64_t cb_now_ns(void *opaque)
{
    return 12345;
}

/* The sw-only callbacks: the verbs backend must never call them. */
static int cb_mr_read(void *o, uint32_t pd, uint32_t qp_id, uint32_t stag, uint64_t iova,
                      void *dst, uint32_t len, uint32_t access)
{
    CHECK(!"mr_read called");
    return -EACCES;
}

static int cb_mr_write(void *o, uint32_t pd, uint32_t qp_id, uint32_t stag, uint64_t iova,
                       const void *src, uint32_t len, uint32_t access)
{
    CHECK(!"mr_write called");
    return -EACCES;
}

static int cb_frame_out(void *o, const void *frame, size_t len)
{
    CHECK(!"frame_out called");
    return 0;
}

static const struct qrdma_be_callbacks cbs = {
    .mr_read = cb_mr_read,
    .mr_write = cb_mr_write,
    .mr_gpa_walk = cb_mr_gpa_walk,
    .get_recv = cb_get_recv,
    .get_srq_recv = cb_get_srq_recv,
    .fast_reg = cb_fast_reg,
    .invalidate = cb_invalidate,
    .complete = cb_complete,
    .event = cb_event,
    .sq_space = cb_sq_space,
    .frame_out = cb_frame_out,
    .now_ns = cb_now_ns,
    .guest_error = cb_guest_error,
};

static const struct qrdma_be_ops *ops = &qrdma_be_verbs_ops;
static struct qrdma_be_verbs_config vcfg;
static struct qrdma_be_params params;
static char err[200];

/* make()'s list of host GID indexes (ibgid-indexes), or NULL: gid_index 1 alone. */
static const uint8_t *vcfg_gids;
static unsigned vcfg_ngids;

/* The mock's GID at host index i: ::ffff:10.0.0.(1 + i). */
static void mock_gid(unsigned i, uint8_t gid[16])
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    gid[12] = 10;
    gid[15] = (uint8_t)(1 + i);
}

static struct qrdma_be *make(void)
{
    ram_setup();
    memset(&vcfg, 0, sizeof(vcfg));
    vcfg.ibdev = "mock0";
    vcfg.ibport = 1;
    vcfg.gid_index = 1;
    if (vcfg_gids) {
        vcfg.ngids = vcfg_ngids;
        memcpy(vcfg.gid_indexes, vcfg_gids, vcfg_ngids < 8 ? vcfg_ngids : 8);
    }
    vcfg.nram = 2;
    vcfg.ram[0] = (struct qrdma_be_verbs_ram){ RAM0_GPA, RAM_SIZE, ram0, ram_fd, 0 };
    vcfg.ram[1] = (struct qrdma_be_verbs_ram){ RAM1_GPA, RAM_SIZE, ram1, ram_fd, RAM_SIZE };
    vcfg.verbs = &verbs_mock_table;
    memset(&params, 0, sizeof(params));
    params.backend_config = &vcfg;
    err[0] = 0;
    return ops->create(&cbs, &core, &params, err, sizeof(err));
}

static void fresh(void)
{
    verbs_mock_reset();
    memset(&core, 0, sizeof(core));
}

static const struct qrdma_be_qp_init rc_init = {
    .qp_id = QP_ID, .type = QRDMA_BE_QPT_RC, .pd = PD, .send_cq = SCQ_ID, .recv_cq = RCQ_ID,
    .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 3, .max_recv_sge = 2, .max_inline = 64,
};

static struct qrdma_be_qp *make_qp(struct qrdma_be *be, const struct qrdma_be_qp_init *init,
                                   uint32_t *qpn)
{
    struct qrdma_be_qp *qp = NULL;

    CHECK_EQ(ops->qp_create(be, init, &qp, qpn), 0);
    return qp;
}

/* An MR of PD over pieces (gpa, len) pairs; returns its rkey. */
static uint32_t make_mr(struct qrdma_be *be, uint32_t stag, uint64_t iova, uint64_t len,
                        uint32_t access)
{
    struct qrdma_be_mr mr = { .stag = stag, .pd = PD, .access = access,
                              .type = QRDMA_BE_MR_MEM, .iova = iova, .length = len };
    uint32_t rkey = 0;

    CHECK_EQ(ops->mr_register(be, &mr, &rkey), 0);
    return rkey;
}

static void one_piece(uint64_t gpa, uint64_t len)
{
    core.npieces = 1;
    core.piece_gpa[0] = gpa;
    core.piece_len[0] = len;
}

/* The backend's wait fd is readable: the embedding would run poll now. */
static bool fd_ready(struct qrdma_be *be)
{
    struct epoll_event ev;

    return epoll_wait(ops->wait_fd(be), &ev, 1, 0) == 1;
}

/* ---- tests --------------------------------------------------------------------------- */

/* A missing device, a port down, a missing GID, fault settings: refused with a reason. */
static void test_create_refusals(void)
{
    struct qrdma_be *be;

    fresh();
    params.backend_config = NULL;
    CHECK(ops->create(&cbs, &core, &(struct qrdma_be_params){ 0 }, err, sizeof(err)) == NULL);
    CHECK_STR_CONTAINS(err, "ibdev=");

    vmock.name = "rxe7";
    CHECK(make() == NULL);
    CHECK_STR_CONTAINS(err, "host RDMA device 'mock0' not found");
    vmock.name = "mock0";

    vmock.gid_zero = true;
    CHECK(make() == NULL);
    CHECK_STR_CONTAINS(err, "no GID at index 1");
    vmock.gid_zero = false;

    /* The list of host GIDs: each must be there, RoCE v2, named once, at most 8. */
    vcfg_gids = (const uint8_t[]){ 2, 5 };
    vcfg_ngids = 2;
    vmock.gid_gone[5] = true;
    CHECK(make() == NULL);
    CHECK_STR_CONTAINS(err, "mock0 port 1 has no GID at index 5");
    vmock.gid_gone[5] = false;
    vmock.gid_type[5] = IBV_GID_TYPE_ROCE_V1;
    CHECK(make() == NULL);
    CHECK_STR_CONTAINS(err, "GID index 5 is not RoCE v2");
    vmock.gid_type[5] = IBV_GID_TYPE_ROCE_V2;
    vcfg_gids = (const uint8_t[]){ 2, 5, 2 };
    vcfg_ngids = 3;
    CHECK(make() == NULL);
    CHECK_STR_CONTAINS(err, "host GID index 2 is named twice");
    vcfg_gids = (const uint8_t[]){ 0, 1, 2, 3, 4, 5, 6, 7, 0 };
    vcfg_ngids = 9;
    CHECK(make() == NULL);
    CHECK_STR_CONTAINS(err, "more than 8 host GID indexes");
    vcfg_gids = NULL;
    vcfg_ngids = 0;

    /* A host that cannot say a GID's type: taken. */
    vmock.fail_query_gid_type = EOPNOTSUPP;
    be = make();
    CHECK(be != NULL);
    ops->destroy(be);
    vmock.fail_query_gid_type = 0;

    ram_setup();
    vcfg.verbs = &verbs_mock_table;
    params.backend_config = &vcfg;
    params.fault.loss_ppm = 10;
    CHECK(ops->create(&cbs, &core, &params, err, sizeof(err)) == NULL);
    CHECK_STR_CONTAINS(err, "fault injection");

    /* Every refusal released what it had opened. */
    CHECK_EQ(vmock.live_ctx, 0);
    CHECK_EQ(vmock.live_ch, 0);

    be = make();
    CHECK(be != NULL);
    CHECK(ops->wait_fd(be) >= 0);
    CHECK_EQ(qrdma_be_verbs_wait_fd(be), ops->wait_fd(be));
    CHECK(!fd_ready(be));
    CHECK(ops->rx_frame == NULL && ops->set_mac == NULL);   /* no frames on the device's wire */
    ops->destroy(be);
    CHECK_EQ(vmock.live_ctx, 0);
    CHECK_EQ(vmock.live_ch, 0);
}

/*
 * The QPN handed out is the host's (the wire identifier), not the QP ID;
 * the host QP gets its own two CQs on the channel, armed, and the
 * capacities (SGEs doubled for DMA-MR splits, inline, no sq_sig_all).
 */
static void test_qp_create_ids(void)
{
    struct qrdma_be *be;
    struct qrdma_be_qp *qp, *qp2;
    struct qrdma_be_qp_init init = rc_init;
    uint32_t qpn = 0, qpn2 = 0;
    struct vm_qp *h;

    fresh();
    be = make();
    qp = make_qp(be, &rc_init, &qpn);
    CHECK_EQ(qpn, 0x3a001);
    CHECK(qpn != QP_ID);
    h = verbs_mock_qp(qpn);
    CHECK(h != NULL);
    if (!h) {
        ops->destroy(be);
        return;
    }
    CHECK_EQ(h->init.qp_type, IBV_QPT_RC);
    CHECK_EQ(h->init.sq_sig_all, 0);
    CHECK_EQ(h->init.cap.max_send_wr, 4);
    CHECK_EQ(h->init.cap.max_recv_wr, 4);
    CHECK_EQ(h->init.cap.max_send_sge, 6);
    CHECK_EQ(h->init.cap.max_recv_sge, 4);
    CHECK_EQ(h->init.cap.max_inline_data, 64);
    CHECK(h->init.send_cq != h->init.recv_cq);
    CHECK(h->init.send_cq->channel == vmock.ch);
    CHECK(((struct vm_cq *)h->init.send_cq)->armed);
    CHECK(((struct vm_cq *)h->init.recv_cq)->armed);
    CHECK_EQ(vmock.live_pd, 1);
    CHECK_EQ(ops->qp_state(be, qp), QRDMA_BE_QPS_RESET);

    /* A second QP: another host QPN; the same PD. */
    init.qp_id = QP_ID2;
    qp2 = make_qp(be, &init, &qpn2);
    CHECK(qpn2 != qpn && qpn2 != QP_ID2);
    CHECK_EQ(vmock.live_pd, 1);

    /* Host out of memory: -ENOMEM (the guest's out of resources), nothing left behind. */
    init.qp_id = 9;
    vmock.fail_create_qp = ENOMEM;
    {
        struct qrdma_be_qp *none = NULL;
        int cqs = vmock.live_cq;

        CHECK_EQ(ops->qp_create(be, &init, &none, &qpn2), -ENOMEM);
        CHECK_EQ(vmock.live_cq, cqs);
        vmock.fail_create_cq = ENOMEM;
        CHECK_EQ(ops->qp_create(be, &init, &none, &qpn2), -ENOMEM);
        CHECK_EQ(vmock.live_cq, cqs);
        /* Other ways a host says "no more" are the same -ENOMEM; a bad argument is not. */
        vmock.fail_create_qp = ENOSPC;
        CHECK_EQ(ops->qp_create(be, &init, &none, &qpn2), -ENOMEM);
        vmock.fail_create_cq = EAGAIN;
        CHECK_EQ(ops->qp_create(be, &init, &none, &qpn2), -ENOMEM);
        vmock.fail_create_qp = EINVAL;
        CHECK_EQ(ops->qp_create(be, &init, &none, &qpn2), -EINVAL);
        CHECK_EQ(vmock.live_cq, cqs);
    }
    /* An SRQ the backend was never given: refused, not half-made. */
    init.has_srq = true;
    init.srq = 4;
    {
        struct qrdma_be_qp *none = NULL;
        int cqs = vmock.live_cq;

        CHECK_EQ(ops->qp_create(be, &init, &none, &qpn2), -EINVAL);
        CHECK_EQ(vmock.live_cq, cqs);
    }
    ops->qp_destroy(be, qp2);
    ops->qp_destroy(be, qp);
    CHECK_EQ(vmock.live_qp, 0);
    CHECK_EQ(vmock.live_cq, 0);
    ops->destroy(be);
    CHECK_EQ(vmock.live_pd, 0);
}

/* Modifies: port and P_Key index added at INIT, the AV on the host GID, UD without PATH_MTU. */
static void test_qp_modify(void)
{
    struct qrdma_be *be;
    struct qrdma_be_qp *qp, *ud;
    struct qrdma_be_qp_init init = rc_init;
    struct qrdma_be_qp_attr a;
    uint32_t qpn, udqpn;
    struct vm_qp *h;
    struct ibv_wc wc = { .wr_id = 1, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND };

    fresh();
    be = make();
    qp = make_qp(be, &rc_init, &qpn);
    h = verbs_mock_qp(qpn);

    memset(&a, 0, sizeof(a));
    a.qp_state = QRDMA_BE_QPS_INIT;
    a.qp_access_flags = QRDMA_BE_ACCESS_REMOTE_WRITE;
    CHECK_EQ(ops->qp_modify(be, qp, &a, QRDMA_BE_QP_ATTR_STATE | QRDMA_BE_QP_ATTR_ACCESS_FLAGS), 0);
    CHECK_EQ(h->mask[0], IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PORT | IBV_QP_PKEY_INDEX);
    CHECK_EQ(h->attr[0].port_num, 1);
    CHECK_EQ(h->attr[0].qp_access_flags, IBV_ACCESS_REMOTE_WRITE);

    memset(&a, 0, sizeof(a));
    a.qp_state = QRDMA_BE_QPS_RTR;
    a.path_mtu = QRDMA_BE_MTU_1024;
    a.dest_qp_num = 0x5a5a5;            /* the peer's wire QPN: unchanged */
    a.rq_psn = 0x123;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 12;
    memset(a.av.dgid, 0xab, 16);
    a.av.sgid_index = 0;                /* the guest's index: the host's is the GID's own */
    mock_gid(1, a.av.sgid);
    a.av.traffic_class = 3;
    a.av.flow_label = 0x12345;
    CHECK_EQ(ops->qp_modify(be, qp, &a,
                            QRDMA_BE_QP_ATTR_STATE | QRDMA_BE_QP_ATTR_AV |
                            QRDMA_BE_QP_ATTR_PATH_MTU | QRDMA_BE_QP_ATTR_DEST_QPN |
                            QRDMA_BE_QP_ATTR_RQ_PSN | QRDMA_BE_QP_ATTR_MAX_DEST_RD_ATOMIC |
                            QRDMA_BE_QP_ATTR_MIN_RNR_TIMER), 0);
    CHECK_EQ(h->mask[1], IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                         IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    CHECK_EQ(h->attr[1].dest_qp_num, 0x5a5a5);
    CHECK_EQ(h->attr[1].path_mtu, IBV_MTU_1024);
    CHECK_EQ(h->attr[1].rq_psn, 0x123);
    CHECK_EQ(h->attr[1].ah_attr.is_global, 1);
    CHECK_EQ(h->attr[1].ah_attr.grh.sgid_index, 1);
    CHECK_EQ(h->attr[1].ah_attr.grh.hop_limit, 64);
    CHECK_EQ(h->attr[1].ah_attr.grh.traffic_class, 3);
    CHECK_EQ(h->attr[1].ah_attr.grh.flow_label, 0x12345);
    CHECK_EQ(h->attr[1].ah_attr.grh.dgid.raw[7], 0xab);
    CHECK_EQ(h->attr[1].ah_attr.port_num, 1);
    CHECK_EQ(ops->qp_state(be, qp), QRDMA_BE_QPS_RTR);

    /* To RESET: the host QP keeps its QPN; what its CQs held is thrown away, not reported. */
    verbs_mock_cq_push(h->qp.send_cq, &wc);
    memset(&a, 0, sizeof(a));
    a.qp_state = QRDMA_BE_QPS_RESET;
    CHECK_EQ(ops->qp_modify(be, qp, &a, QRDMA_BE_QP_ATTR_STATE), 0);
    CHECK_EQ(h->qp.state, IBV_QPS_RESET);
    ops->poll(be, 64);
    CHECK_EQ(core.nwc, 0);

    /* UD: the core's PATH_MTU does not reach the host (IB has none for UD); Q_Key does. */
    init.qp_id = QP_ID2;
    init.type = QRDMA_BE_QPT_UD;
    ud = make_qp(be, &init, &udqpn);
    memset(&a, 0, sizeof(a));
    a.qp_state = QRDMA_BE_QPS_INIT;
    a.qkey = 0x11111111;
    a.path_mtu = QRDMA_BE_MTU_4096;
    CHECK_EQ(ops->qp_modify(be, ud, &a, QRDMA_BE_QP_ATTR_STATE | QRDMA_BE_QP_ATTR_QKEY |
                                         QRDMA_BE_QP_ATTR_PATH_MTU), 0);
    h = verbs_mock_qp(udqpn);
    CHECK_EQ(h->mask[0], IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_PORT | IBV_QP_PKEY_INDEX);
    CHECK_EQ(h->attr[0].qkey, 0x11111111);
    ops->destroy(be);
    CHECK_EQ(vmock.live_qp, 0);
}

/*
 * An MR whose pages are contiguous in this process is registered where
 * they are, with the guest's IOVA; the rkey handed out is the host's.
 */
static void test_mr_direct(void)
{
    struct qrdma_be *be;
    struct vm_mr *m;
    uint32_t rkey;

    fresh();
    be = make();
    one_piece(RAM0_GPA + 0x10100, 0x3000);
    rkey = make_mr(be, STAG, IOVA + 0x100, 0x3000,
                   QRDMA_BE_ACCESS_LOCAL_WRITE | QRDMA_BE_ACCESS_REMOTE_READ);
    m = verbs_mock_last_mr();
    CHECK(m != NULL);
    CHECK_EQ(rkey, m->mr.rkey);
    CHECK(rkey != STAG);
    CHECK(m->mr.addr == ram0 + 0x10100);
    CHECK_EQ(m->mr.length, 0x3000);
    CHECK_EQ(m->iova, IOVA + 0x100);
    CHECK_EQ(m->access, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);

    /* REREG: a new registration replaces the old in one step. */
    {
        int before = vmock.live_mr;
        uint32_t rkey2 = make_mr(be, STAG, IOVA, 0x1000, QRDMA_BE_ACCESS_LOCAL_WRITE);

        CHECK(rkey2 != rkey);
        CHECK_EQ(vmock.live_mr, before);
        /* A failed one keeps the old. */
        vmock.fail_reg_mr = ENOMEM;
        {
            struct qrdma_be_mr mr = { .stag = STAG, .pd = PD, .type = QRDMA_BE_MR_MEM,
                                      .iova = IOVA, .length = 0x1000 };

            CHECK_EQ(ops->mr_register(be, &mr, &rkey), -ENOMEM);
            vmock.fail_reg_mr = ENOBUFS;
            CHECK_EQ(ops->mr_register(be, &mr, &rkey), -ENOMEM);
        }
        CHECK_EQ(vmock.live_mr, before);
    }
    ops->mr_deregister(be, STAG);
    CHECK_EQ(vmock.live_mr, 0);
    ops->destroy(be);
}

/*
 * Scattered guest pages: one alias maps them contiguously from the RAM's
 * fd, and it is guest RAM itself (what the NIC writes through it the
 * guest sees, and the other way): zero copy.
 */
static void test_mr_alias(void)
{
    struct qrdma_be *be;
    struct vm_mr *m;
    uint8_t *alias;
    uint32_t rkey;

    fresh();
    be = make();
    /* 0x100 into a page of RAM0, to its end; a whole page of RAM1; 0x80 bytes of RAM0 again. */
    core.npieces = 3;
    core.piece_gpa[0] = RAM0_GPA + 0x5100;
    core.piece_len[0] = 0xf00;
    core.piece_gpa[1] = RAM1_GPA + 0x20000;
    core.piece_len[1] = 0x1000;
    core.piece_gpa[2] = RAM0_GPA + 0x9000;
    core.piece_len[2] = 0x80;
    memset(gpa_hva(RAM0_GPA + 0x5100), 0x11, 0xf00);
    memset(gpa_hva(RAM1_GPA + 0x20000), 0x22, 0x1000);
    memset(gpa_hva(RAM0_GPA + 0x9000), 0x33, 0x80);
    rkey = make_mr(be, STAG, IOVA + 0x100, 0xf00 + 0x1000 + 0x80,
                   QRDMA_BE_ACCESS_LOCAL_WRITE | QRDMA_BE_ACCESS_REMOTE_WRITE);
    m = verbs_mock_last_mr();
    CHECK(m && rkey == m->mr.rkey);
    alias = m ? m->mr.addr : NULL;
    CHECK(alias && alias != gpa_hva(RAM0_GPA + 0x5100));
    if (alias) {
        CHECK_EQ(m->mr.length, 0x1f80);
        CHECK_EQ(m->iova, IOVA + 0x100);
        CHECK_EQ(alias[0], 0x11);
        CHECK_EQ(alias[0xeff], 0x11);
        CHECK_EQ(alias[0xf00], 0x22);
        CHECK_EQ(alias[0x1eff], 0x22);
        CHECK_EQ(alias[0x1f00], 0x33);
        CHECK_EQ(alias[0x1f7f], 0x33);
        /* A write through the alias (the NIC's RDMA WRITE) lands in guest RAM. */
        alias[0xf10] = 0x5e;
        CHECK_EQ(*gpa_hva(RAM1_GPA + 0x20010), 0x5e);
        *gpa_hva(RAM0_GPA + 0x9040) = 0x77;
        CHECK_EQ(alias[0x1f40], 0x77);
    }
    ops->mr_deregister(be, STAG);
    CHECK_EQ(vmock.live_mr, 0);

    /* A middle piece that does not start on a page cannot be aliased: refused. */
    core.piece_gpa[1] = RAM1_GPA + 0x20010;
    {
        struct qrdma_be_mr mr = { .stag = STAG, .pd = PD, .type = QRDMA_BE_MR_MEM,
                                  .iova = IOVA, .length = 0x1f80 };

        CHECK_EQ(ops->mr_register(be, &mr, &rkey), -EINVAL);
        /* A piece outside guest RAM: refused too. */
        one_piece(0x40000000, 0x1000);
        CHECK_EQ(ops->mr_register(be, &mr, &rkey), -EINVAL);
    }
    CHECK_EQ(vmock.live_mr, 0);
    ops->destroy(be);
}

static struct qrdma_be *rts_qp(struct qrdma_be_qp **qp, uint32_t *qpn,
                               const struct qrdma_be_qp_init *init)
{
    struct qrdma_be *be = make();
    struct qrdma_be_qp_attr a = { .qp_state = QRDMA_BE_QPS_INIT };

    *qp = make_qp(be, init, qpn);
    CHECK_EQ(ops->qp_modify(be, *qp, &a, QRDMA_BE_QP_ATTR_STATE), 0);
    a.qp_state = QRDMA_BE_QPS_RTR;
    CHECK_EQ(ops->qp_modify(be, *qp, &a, QRDMA_BE_QP_ATTR_STATE), 0);
    a.qp_state = QRDMA_BE_QPS_RTS;
    CHECK_EQ(ops->qp_modify(be, *qp, &a, QRDMA_BE_QP_ATTR_STATE), 0);
    return be;
}

/*
 * Send WRs: SGE addresses unchanged (the host MR has the guest's IOVA),
 * lkeys the host's; the peer's rkey and address, immediate, flags and
 * wr_id unchanged; a DMA-MR SGE that crosses a RAM range's end is split;
 * a key the backend does not hold is -EACCES; inline data is the
 * caller's buffer at post time.
 */
static void test_post_send(void)
{
    struct qrdma_be *be;
    struct qrdma_be_qp *qp;
    struct qrdma_be_send_wr wr;
    struct vm_qp *h;
    struct vm_mr *m;
    uint32_t qpn;

    fresh();
    be = rts_qp(&qp, &qpn, &rc_init);
    h = verbs_mock_qp(qpn);
    one_piece(RAM0_GPA, 0x4000);
    make_mr(be, STAG, IOVA, 0x4000, QRDMA_BE_ACCESS_LOCAL_WRITE);
    m = verbs_mock_last_mr();

    memset(&wr, 0, sizeof(wr));
    wr.wr_id = 17;
    wr.opcode = QRDMA_BE_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = QRDMA_BE_SEND_SIGNALED | QRDMA_BE_SEND_SOLICITED;
    wr.num_sge = 2;
    wr.sg_list[0] = (struct qrdma_be_sge){ IOVA + 0x10, 100, STAG };
    wr.sg_list[1] = (struct qrdma_be_sge){ IOVA + 0x2000, 0x1000, STAG };
    wr.imm_data = 0x78563412;
    wr.rdma.remote_addr = 0xabcdef0000ull;
    wr.rdma.rkey = 0x99887766;
    CHECK_EQ(ops->post_send(be, qp, &wr), 0);
    CHECK_EQ(h->nsend, 1);
    CHECK_EQ(h->send[0].wr_id, 17);
    CHECK_EQ(h->send[0].opcode, IBV_WR_RDMA_WRITE_WITH_IMM);
    CHECK_EQ(h->send[0].send_flags, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
    CHECK_EQ(h->send[0].num_sge, 2);
    CHECK_EQ(h->send_sge[0][0].addr, IOVA + 0x10);
    CHECK_EQ(h->send_sge[0][0].length, 100);
    CHECK_EQ(h->send_sge[0][0].lkey, m->mr.lkey);
    CHECK_EQ(h->send_sge[0][1].addr, IOVA + 0x2000);
    CHECK_EQ(h->send_sge[0][1].lkey, m->mr.lkey);
    CHECK_EQ(h->send[0].imm_data, 0x78563412);
    CHECK_EQ(h->send[0].wr.rdma.remote_addr, 0xabcdef0000ull);
    CHECK_EQ(h->send[0].wr.rdma.rkey, 0x99887766);

    /* A wrong key byte, an unknown index, another PD's MR: -EACCES, nothing posted. */
    wr.num_sge = 1;
    wr.sg_list[0].lkey = STAG ^ 1;
    CHECK_EQ(ops->post_send(be, qp, &wr), -EACCES);
    wr.sg_list[0].lkey = 99u << 8;
    CHECK_EQ(ops->post_send(be, qp, &wr), -EACCES);
    {
        struct qrdma_be_mr other = { .stag = 9u << 8, .pd = PD + 1,
                                     .type = QRDMA_BE_MR_MEM, .iova = IOVA, .length = 0x1000 };
        uint32_t rk;

        CHECK_EQ(ops->mr_register(be, &other, &rk), 0);
        wr.sg_list[0].lkey = 9u << 8;
        CHECK_EQ(ops->post_send(be, qp, &wr), -EACCES);
    }
    CHECK_EQ(h->nsend, 1);

    /* The DMA MR: addresses are guest-physical; an SGE across RAM0's end becomes two. */
    {
        struct qrdma_be_mr dma = { .stag = STAG_DMA, .pd = PD, .type = QRDMA_BE_MR_DMA,
                                   .access = QRDMA_BE_ACCESS_LOCAL_WRITE };
        uint32_t rk;
        int mrs = vmock.live_mr;

        CHECK_EQ(ops->mr_register(be, &dma, &rk), 0);
        CHECK_EQ(vmock.live_mr, mrs + 2);       /* one host MR per RAM range, iova = gpa */
        CHECK_EQ(vmock.mrs[vmock.nmrs - 2]->iova, RAM0_GPA);
        CHECK(vmock.mrs[vmock.nmrs - 2]->mr.addr == ram0);
        CHECK_EQ(vmock.mrs[vmock.nmrs - 1]->iova, RAM1_GPA);
        CHECK(vmock.mrs[vmock.nmrs - 1]->mr.addr == ram1);
        wr.opcode = QRDMA_BE_WR_SEND;
        wr.sg_list[0] = (struct qrdma_be_sge){ RAM1_GPA - 0x100, 0x300, STAG_DMA };
        CHECK_EQ(ops->post_send(be, qp, &wr), 0);
        CHECK_EQ(h->send[1].num_sge, 2);
        CHECK_EQ(h->send_sge[1][0].addr, RAM1_GPA - 0x100);
        CHECK_EQ(h->send_sge[1][0].length, 0x100);
        CHECK_EQ(h->send_sge[1][0].lkey, vmock.mrs[vmock.nmrs - 2]->mr.lkey);
        CHECK_EQ(h->send_sge[1][1].addr, RAM1_GPA);
        CHECK_EQ(h->send_sge[1][1].length, 0x200);
        CHECK_EQ(h->send_sge[1][1].lkey, vmock.mrs[vmock.nmrs - 1]->mr.lkey);
        /* Beyond guest RAM: -EACCES. */
        wr.sg_list[0] = (struct qrdma_be_sge){ RAM1_GPA + RAM_SIZE - 0x10, 0x20, STAG_DMA };
        CHECK_EQ(ops->post_send(be, qp, &wr), -EACCES);
    }

    /* Inline: the caller's bytes, copied by the host at post time. */
    {
        char data[] = "inline payload";

        memset(&wr, 0, sizeof(wr));
        wr.wr_id = 3;
        wr.opcode = QRDMA_BE_WR_SEND;
        wr.send_flags = QRDMA_BE_SEND_INLINE;
        wr.inline_data = data;
        wr.inline_len = sizeof(data);
        CHECK_EQ(ops->post_send(be, qp, &wr), 0);
        CHECK_EQ(h->send[2].send_flags, IBV_SEND_INLINE);
        CHECK_EQ(h->send[2].num_sge, 1);
        CHECK(!memcmp(h->inline_copy[2], data, sizeof(data)));
    }
    /* Guest windows are not carried; FAST_REG and LOCAL_INV of an MR the backend lacks fail. */
    wr.opcode = QRDMA_BE_WR_BIND_MW;
    CHECK_EQ(ops->post_send(be, qp, &wr), -EOPNOTSUPP);
    wr.opcode = QRDMA_BE_WR_FAST_REG;
    wr.fast_reg.stag = 0x3300 | 0x11;
    wr.fast_reg.length = 0x1000;
    CHECK_EQ(ops->post_send(be, qp, &wr), -EINVAL);
    wr.opcode = QRDMA_BE_WR_LOCAL_INV;
    wr.invalidate_stag = 0x3300 | 0x11;
    CHECK_EQ(ops->post_send(be, qp, &wr), -EINVAL);
    ops->destroy(be);
}

/* UD sends: a host AH on the host GID, cached; the QP's own Q_Key when the high bit says so. */
static void test_post_send_ud(void)
{
    struct qrdma_be_qp_init init = rc_init;
    struct qrdma_be *be;
    struct qrdma_be_qp *qp;
    struct qrdma_be_send_wr wr;
    struct qrdma_be_qp_attr a = { .qp_state = QRDMA_BE_QPS_INIT, .qkey = 0x1234 };
    struct vm_qp *h;
    uint32_t qpn;

    fresh();
    be = make();
    init.type = QRDMA_BE_QPT_UD;
    qp = make_qp(be, &init, &qpn);
    h = verbs_mock_qp(qpn);
    CHECK_EQ(ops->qp_modify(be, qp, &a, QRDMA_BE_QP_ATTR_STATE | QRDMA_BE_QP_ATTR_QKEY), 0);
    one_piece(RAM0_GPA, 0x1000);
    make_mr(be, STAG, IOVA, 0x1000, 0);

    memset(&wr, 0, sizeof(wr));
    wr.opcode = QRDMA_BE_WR_SEND;
    wr.num_sge = 1;
    wr.sg_list[0] = (struct qrdma_be_sge){ IOVA, 64, STAG };
    memset(wr.ud.av.dgid, 0xcd, 16);
    mock_gid(1, wr.ud.av.sgid);
    wr.ud.av.hop_limit = 9;
    wr.ud.remote_qpn = 0x4321;
    wr.ud.remote_qkey = 0x80000000u;
    CHECK_EQ(ops->post_send(be, qp, &wr), 0);
    wr.wr_id = 1;
    wr.ud.remote_qkey = 0x777;
    CHECK_EQ(ops->post_send(be, qp, &wr), 0);
    CHECK_EQ(vmock.create_ah_calls, 1);
    CHECK_EQ(vmock.ahs[0]->attr.grh.dgid.raw[0], 0xcd);
    CHECK_EQ(vmock.ahs[0]->attr.grh.hop_limit, 9);
    CHECK_EQ(vmock.ahs[0]->attr.grh.sgid_index, 1);
    CHECK(h->send[0].wr.ud.ah == &vmock.ahs[0]->ah);
    CHECK_EQ(h->send[0].wr.ud.remote_qpn, 0x4321);
    CHECK_EQ(h->send[0].wr.ud.remote_qkey, 0x1234);
    CHECK_EQ(h->send[1].wr.ud.remote_qkey, 0x777);
    /* Another destination: another AH. A host out of AHs: -ENOMEM. */
    wr.ud.av.dgid[0] = 0xce;
    vmock.fail_create_ah = ENOMEM;
    CHECK_EQ(ops->post_send(be, qp, &wr), -ENOMEM);
    CHECK_EQ(ops->post_send(be, qp, &wr), 0);
    CHECK_EQ(vmock.live_ah, 2);
    ops->destroy(be);
    CHECK_EQ(vmock.live_ah, 0);
}

/*
 * Send completions: nothing is delivered before the channel fires; then
 * each host completion becomes the core's with its wr_id, opcode and
 * bytes; a signaled completion retires the unsignaled WRs before it, so a
 * full send queue gets its sq_space; an error completion carries the
 * WR's own opcode (verbs leaves it undefined) and leaves the QP in ERR.
 */
static void test_send_completions(void)
{
    struct qrdma_be *be;
    struct qrdma_be_qp *qp;
    struct qrdma_be_send_wr wr;
    struct ibv_wc wc;
    struct vm_qp *h;
    uint32_t qpn;
    unsigned i;

    fresh();
    be = rts_qp(&qp, &qpn, &rc_init);
    h = verbs_mock_qp(qpn);
    one_piece(RAM0_GPA, 0x4000);
    make_mr(be, STAG, IOVA, 0x4000, QRDMA_BE_ACCESS_LOCAL_WRITE);
    memset(&wr, 0, sizeof(wr));
    wr.opcode = QRDMA_BE_WR_RDMA_WRITE;
    wr.num_sge = 1;
    wr.sg_list[0] = (struct qrdma_be_sge){ IOVA, 8, STAG };
    for (i = 0; i < 4; i++) {
        wr.wr_id = i;
        wr.send_flags = i == 1 || i == 3 ? QRDMA_BE_SEND_SIGNALED : 0;
        wr.opcode = i == 3 ? QRDMA_BE_WR_RDMA_READ : QRDMA_BE_WR_RDMA_WRITE;
        CHECK_EQ(ops->post_send(be, qp, &wr), 0);
    }
    wr.wr_id = 4;
    CHECK_EQ(ops->post_send(be, qp, &wr), -ENOSPC);     /* 4 held: the ring is full */

    /* Nothing on the fds: a poll reads neither (fds_ready). */
    vmock.get_cq_event_calls = vmock.get_async_event_calls = 0;
    CHECK_EQ(ops->poll(be, 64), UINT64_MAX);
    CHECK_EQ(core.nwc, 0);
    CHECK_EQ(vmock.get_cq_event_calls, 0);
    CHECK_EQ(vmock.get_async_event_calls, 0);
    memset(&wc, 0, sizeof(wc));
    wc.wr_id = 1;
    wc.status = IBV_WC_SUCCESS;
    wc.opcode = IBV_WC_RDMA_WRITE;
    wc.byte_len = 8;
    wc.qp_num = qpn;
    verbs_mock_cq_push(h->qp.send_cq, &wc);
    CHECK(fd_ready(be));
    CHECK_EQ(ops->poll(be, 64), UINT64_MAX);
    CHECK(!fd_ready(be));
    CHECK_EQ(core.nwc, 1);
    CHECK(vmock.get_cq_event_calls > 0);
    CHECK_EQ(vmock.get_async_event_calls, 0);
    CHECK_EQ(core.wc_qp[0], QP_ID);
    CHECK_EQ(core.wc[0].wr_id, 1);
    CHECK_EQ(core.wc[0].opcode, QRDMA_BE_WC_RDMA_WRITE);
    CHECK_EQ(core.wc[0].status, QRDMA_BE_WC_SUCCESS);
    CHECK_EQ(core.wc[0].byte_len, 8);
    CHECK_EQ(vmock.acked_cq, 1);
    CHECK(((struct vm_cq *)h->qp.send_cq)->armed);      /* re-armed before the drain */
    /* WRs 0 and 1 retired: room again, said once. */
    CHECK_EQ(core.sq_space, 1);
    CHECK_EQ(core.sq_space_qp, QP_ID);
    CHECK_EQ(ops->post_send(be, qp, &wr), 0);

    /* An error: the opcode is the WR's (READ), whatever the host left in the field. */
    wc.wr_id = 3;
    wc.status = IBV_WC_REM_ACCESS_ERR;
    wc.opcode = 0x55;
    wc.vendor_err = 0x81;
    verbs_mock_cq_push(h->qp.send_cq, &wc);
    ops->poll(be, 64);
    CHECK_EQ(core.nwc, 2);
    CHECK_EQ(core.wc[1].wr_id, 3);
    CHECK_EQ(core.wc[1].opcode, QRDMA_BE_WC_RDMA_READ);
    CHECK_EQ(core.wc[1].status, QRDMA_BE_WC_REM_ACCESS_ERR);
    CHECK_EQ(core.wc[1].vendor_err, 0x81);
    CHECK_EQ(ops->qp_state(be, qp), QRDMA_BE_QPS_ERR);

    /* The budget bounds one poll; the rest comes at the next, which says so. */
    for (i = 0; i < 20; i++) {
        wc.wr_id = 4;
        wc.status = IBV_WC_WR_FLUSH_ERR;
        verbs_mock_cq_push(h->qp.send_cq, &wc);
    }
    CHECK_EQ(ops->poll(be, 16), 12345);
    CHECK_EQ(core.nwc, 2 + 16);
    CHECK_EQ(ops->poll(be, 16), UINT64_MAX);
    CHECK_EQ(core.nwc, 2 + 20);
    ops->destroy(be);
}

/*
 * Receives: the RQ doorbell pulls the guest's WQEs onto the host RQ (as
 * many as it holds), SGEs translated; completions carry the WQE index,
 * bytes, immediate, source QP and flags; each frees a slot that the
 * next WQE fills. A WQE with a bad key completes in error, QP to ERR.
 */
static void test_receives(void)
{
    struct qrdma_be *be;
    struct qrdma_be_qp *qp;
    struct ibv_wc wc;
    struct vm_qp *h;
    struct vm_mr *m;
    uint32_t qpn;
    unsigned i;

    fresh();
    be = rts_qp(&qp, &qpn, &rc_init);
    h = verbs_mock_qp(qpn);
    one_piece(RAM0_GPA, 0x4000);
    make_mr(be, STAG, IOVA, 0x4000, QRDMA_BE_ACCESS_LOCAL_WRITE);
    m = verbs_mock_last_mr();
    for (i = 0; i < 7; i++) {
        core.recv[i].wr_id = 10 + i;
        core.recv[i].num_sge = 1;
        core.recv[i].sg_list[0] = (struct qrdma_be_sge){ IOVA + i * 0x400, 0x400, STAG };
    }
    core.nrecv = 7;
    ops->recv_doorbell(be, qp);
    CHECK_EQ(h->nrecv, 4);              /* the host RQ holds 4 */
    CHECK_EQ(core.recv_next, 4);
    CHECK_EQ(h->recv[2].wr_id, 12);
    CHECK_EQ(h->recv_sge[2][0].addr, IOVA + 0x800);
    CHECK_EQ(h->recv_sge[2][0].length, 0x400);
    CHECK_EQ(h->recv_sge[2][0].lkey, m->mr.lkey);

    memset(&wc, 0, sizeof(wc));
    wc.wr_id = 10;
    wc.status = IBV_WC_SUCCESS;
    wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
    wc.byte_len = 0;
    wc.imm_data = 0xdeadbeef;
    wc.wc_flags = IBV_WC_WITH_IMM;
    wc.src_qp = 0x5a5a5;
    verbs_mock_cq_push(h->qp.recv_cq, &wc);
    ops->poll(be, 64);
    CHECK_EQ(core.nwc, 1);
    CHECK_EQ(core.wc[0].wr_id, 10);
    CHECK_EQ(core.wc[0].opcode, QRDMA_BE_WC_RECV_RDMA_WITH_IMM);
    CHECK_EQ(core.wc[0].imm_data, 0xdeadbeef);
    CHECK_EQ(core.wc[0].src_qp, 0x5a5a5);
    CHECK_EQ(core.wc[0].wc_flags, QRDMA_BE_WC_WITH_IMM | QRDMA_BE_WC_SOLICITED);
    /* The freed slot took the next WQE. */
    CHECK_EQ(h->nrecv, 5);
    CHECK_EQ(h->recv[4].wr_id, 14);

    /* UD-style: GRH flag and byte count pass; an invalidated rkey passes as the wire rkey. */
    wc.wr_id = 11;
    wc.opcode = IBV_WC_RECV;
    wc.byte_len = 40 + 64;
    wc.wc_flags = IBV_WC_GRH | IBV_WC_WITH_INV;
    wc.invalidated_rkey = 0x80112233;
    verbs_mock_cq_push(h->qp.recv_cq, &wc);
    ops->poll(be, 64);
    CHECK_EQ(core.wc[1].byte_len, 104);
    CHECK_EQ(core.wc[1].wc_flags,
             QRDMA_BE_WC_GRH | QRDMA_BE_WC_WITH_INV | QRDMA_BE_WC_SOLICITED);
    CHECK_EQ(core.wc[1].invalidated_stag, 0x80112233);
    CHECK_EQ(h->nrecv, 6);

    /* A receive error: opcode RECV whatever the host wrote; QP in ERR; no more pulled. */
    wc.wr_id = 12;
    wc.status = IBV_WC_LOC_LEN_ERR;
    wc.opcode = 0;
    wc.wc_flags = 0;
    verbs_mock_cq_push(h->qp.recv_cq, &wc);
    ops->poll(be, 64);
    CHECK_EQ(core.wc[2].opcode, QRDMA_BE_WC_RECV);
    CHECK_EQ(core.wc[2].status, QRDMA_BE_WC_LOC_LEN_ERR);
    CHECK_EQ(ops->qp_state(be, qp), QRDMA_BE_QPS_ERR);
    CHECK_EQ(h->nrecv, 6);              /* WQE 16 stays in the guest's ring for the core's flush */
    CHECK_EQ(core.recv_next, 6);
    ops->destroy(be);

    /* A receive WQE with a key the backend does not hold: LOC_PROT_ERR, QP to ERR. */
    fresh();
    be = rts_qp(&qp, &qpn, &rc_init);
    h = verbs_mock_qp(qpn);
    core.recv[0].wr_id = 7;
    core.recv[0].num_sge = 1;
    core.recv[0].sg_list[0] = (struct qrdma_be_sge){ IOVA, 0x100, STAG };
    core.nrecv = 1;
    ops->recv_doorbell(be, qp);
    CHECK_EQ(h->nrecv, 0);
    CHECK_EQ(core.nwc, 1);
    CHECK_EQ(core.wc[0].wr_id, 7);
    CHECK_EQ(core.wc[0].status, QRDMA_BE_WC_LOC_PROT_ERR);
    CHECK_EQ(ops->qp_state(be, qp), QRDMA_BE_QPS_ERR);
    CHECK_EQ(h->qp.state, IBV_QPS_ERR);
    ops->destroy(be);

    /* get_recv's -EIO (the core completed a malformed WQE): QP to ERR with QP_FATAL. */
    fresh();
    be = rts_qp(&qp, &qpn, &rc_init);
    core.recv_err = -EIO;
    ops->recv_doorbell(be, qp);
    CHECK_EQ(core.nev, 1);
    CHECK_EQ(core.ev[0], QRDMA_BE_EV_QP_FATAL);
    CHECK_EQ(core.ev_id[0], QP_ID);
    CHECK_EQ(ops->qp_state(be, qp), QRDMA_BE_QPS_ERR);
    ops->destroy(be);
}

/*
 * Host async events become the core's, by QP ID or CQ ID; a port event is
 * PORT_CHANGE (test_port_follows_host).
 */
static void test_async_events(void)
{
    struct qrdma_be *be;
    struct qrdma_be_qp *qp;
    struct vm_qp *h;
    uint32_t qpn;

    fresh();
    be = rts_qp(&qp, &qpn, &rc_init);
    h = verbs_mock_qp(qpn);
    verbs_mock_async_push(IBV_EVENT_COMM_EST, &h->qp);
    verbs_mock_async_push(IBV_EVENT_CQ_ERR, h->qp.recv_cq);
    verbs_mock_async_push(IBV_EVENT_PORT_ERR, NULL);
    verbs_mock_async_push(IBV_EVENT_QP_FATAL, &h->qp);
    CHECK(fd_ready(be));
    ops->poll(be, 64);
    CHECK(!fd_ready(be));
    CHECK_EQ(core.nev, 4);
    CHECK_EQ(core.ev[0], QRDMA_BE_EV_COMM_EST);
    CHECK_EQ(core.ev_id[0], QP_ID);
    CHECK_EQ(core.ev[1], QRDMA_BE_EV_CQ_ERR);
    CHECK_EQ(core.ev_id[1], RCQ_ID);
    CHECK_EQ(core.ev[2], QRDMA_BE_EV_PORT_CHANGE);
    CHECK_EQ(core.ev[3], QRDMA_BE_EV_QP_FATAL);
    CHECK_EQ(core.ev_id[3], QP_ID);
    CHECK_EQ(vmock.acked_async, 4);
    CHECK_EQ(ops->qp_state(be, qp), QRDMA_BE_QPS_ERR);
    ops->destroy(be);
}

/*
 * The host GIDs the guest may use (ibgid-indexes): the port op lists them
 * in the configured order with their host indexes; an AV's source GID
 * picks its own host index; a GID the host lacks is refused, never
 * replaced by another; a host GID that disappears is refused from the
 * next port read on.
 */
static void test_host_gids(void)
{
    struct qrdma_be_qp_init ud = rc_init;
    struct qrdma_be *be;
    struct qrdma_be_qp *qp, *uqp;
    struct qrdma_be_qp_attr a;
    struct qrdma_be_send_wr wr;
    struct qrdma_be_port port;
    uint8_t g[16];
    struct vm_qp *h;
    uint32_t qpn;

    fresh();
    vcfg_gids = (const uint8_t[]){ 3, 1 };
    vcfg_ngids = 2;
    be = make();
    vcfg_gids = NULL;
    vcfg_ngids = 0;
    CHECK(be != NULL);
    if (!be) {
        return;
    }
    CHECK_EQ(ops->port(be, &port), 0);
    CHECK_EQ(port.ngids, 2);
    mock_gid(3, g);
    CHECK(!memcmp(port.gid[0], g, 16));
    CHECK_EQ(port.gid_index[0], 3);
    mock_gid(1, g);
    CHECK(!memcmp(port.gid[1], g, 16));
    CHECK_EQ(port.gid_index[1], 1);

    qp = make_qp(be, &rc_init, &qpn);
    h = verbs_mock_qp(qpn);
    memset(&a, 0, sizeof(a));
    a.qp_state = QRDMA_BE_QPS_INIT;
    CHECK_EQ(ops->qp_modify(be, qp, &a, QRDMA_BE_QP_ATTR_STATE), 0);
    a.qp_state = QRDMA_BE_QPS_RTR;
    a.path_mtu = QRDMA_BE_MTU_1024;
    a.dest_qp_num = 0x5a5a5;
    memset(a.av.dgid, 0xab, 16);
    /* a guest GID the host lacks: refused, the host QP untouched */
    mock_gid(9, a.av.sgid);
    CHECK_EQ(ops->qp_modify(be, qp, &a, QRDMA_BE_QP_ATTR_STATE | QRDMA_BE_QP_ATTR_AV |
                                           QRDMA_BE_QP_ATTR_PATH_MTU |
                                           QRDMA_BE_QP_ATTR_DEST_QPN), -EINVAL);
    CHECK_EQ(h->modifies, 1);
    /* each host GID by its own host index */
    mock_gid(3, a.av.sgid);
    CHECK_EQ(ops->qp_modify(be, qp, &a, QRDMA_BE_QP_ATTR_STATE | QRDMA_BE_QP_ATTR_AV |
                                           QRDMA_BE_QP_ATTR_PATH_MTU |
                                           QRDMA_BE_QP_ATTR_DEST_QPN), 0);
    CHECK_EQ(h->modifies, 2);
    CHECK_EQ(h->attr[1].ah_attr.grh.sgid_index, 3);

    ud.qp_id = QP_ID2;
    ud.type = QRDMA_BE_QPT_UD;
    uqp = make_qp(be, &ud, &qpn);
    memset(&wr, 0, sizeof(wr));
    wr.opcode = QRDMA_BE_WR_SEND;
    mock_gid(1, wr.ud.av.sgid);
    CHECK_EQ(ops->post_send(be, uqp, &wr), 0);
    CHECK_EQ(vmock.create_ah_calls, 1);
    CHECK_EQ(vmock.ahs[0]->attr.grh.sgid_index, 1);
    /* the same destination from the other GID: another AH, not the cached one */
    mock_gid(3, wr.ud.av.sgid);
    CHECK_EQ(ops->post_send(be, uqp, &wr), 0);
    CHECK_EQ(vmock.create_ah_calls, 2);
    CHECK_EQ(vmock.ahs[1]->attr.grh.sgid_index, 3);
    mock_gid(9, wr.ud.av.sgid);
    CHECK_EQ(ops->post_send(be, uqp, &wr), -EINVAL);
    CHECK_EQ(vmock.create_ah_calls, 2);

    /* The host drops index 3's address: the next read lists index 1 alone. */
    vmock.gid_gone[3] = true;
    CHECK_EQ(ops->port(be, &port), 0);
    CHECK_EQ(port.ngids, 1);
    CHECK_EQ(port.gid_index[0], 1);
    mock_gid(3, a.av.sgid);
    CHECK_EQ(ops->qp_modify(be, qp, &a, QRDMA_BE_QP_ATTR_AV), -EINVAL);
    wr.ud.av.dgid[0] = 0x11;
    CHECK_EQ(ops->post_send(be, uqp, &wr), -EINVAL);
    ops->destroy(be);
    CHECK_EQ(vmock.live_ah, 0);
}

/*
 * The port follows the host's: a port down at create is taken (and read
 * as down), its speed is the host's lanes times width, and PORT_ACTIVE,
 * PORT_ERR and GID_CHANGE of this port become PORT_CHANGE (another
 * port's do not).
 */
static void test_port_follows_host(void)
{
    struct qrdma_be_port port;
    struct qrdma_be *be;

    fresh();
    vmock.port_state = IBV_PORT_DOWN;
    vmock.active_speed = 32;            /* EDR: 25 Gb/s a lane */
    vmock.active_width = 2;             /* 4X */
    be = make();
    CHECK(be != NULL);
    if (!be) {
        return;
    }
    CHECK_EQ(ops->port(be, &port), 0);
    CHECK(!port.active);
    CHECK_EQ(port.speed_mbps, 100000);
    CHECK_EQ(port.ngids, 1);
    CHECK_EQ(port.gid_index[0], 1);

    vmock.port_state = IBV_PORT_ACTIVE;
    vmock.active_speed = 64;            /* HDR */
    vmock.active_width = 1;             /* 1X */
    verbs_mock_async_push(IBV_EVENT_PORT_ACTIVE, NULL);
    CHECK(fd_ready(be));
    ops->poll(be, 64);
    CHECK_EQ(core.nev, 1);
    CHECK_EQ(core.ev[0], QRDMA_BE_EV_PORT_CHANGE);
    CHECK_EQ(core.ev_id[0], 0);
    CHECK_EQ(ops->port(be, &port), 0);
    CHECK(port.active);
    CHECK_EQ(port.speed_mbps, 50000);

    vmock.port_state = IBV_PORT_DOWN;
    verbs_mock_async_push(IBV_EVENT_PORT_ERR, NULL);
    verbs_mock_async_push(IBV_EVENT_GID_CHANGE, NULL);
    verbs_mock_async_push(IBV_EVENT_PORT_ACTIVE, NULL);
    vmock.async_ev[(vmock.async_tail - 1) % VM_MAX_EV].element.port_num = 2;
    ops->poll(be, 64);
    CHECK_EQ(core.nev, 3);              /* port 2's event is not ours */
    CHECK_EQ(core.ev[1], QRDMA_BE_EV_PORT_CHANGE);
    CHECK_EQ(core.ev[2], QRDMA_BE_EV_PORT_CHANGE);
    CHECK_EQ(vmock.acked_async, 4);
    CHECK_EQ(ops->port(be, &port), 0);
    CHECK(!port.active);
    ops->destroy(be);
}

/* Reset releases every host object (QPs, CQs, MRs and aliases, AHs, PDs); the backend goes on. */
static void test_reset_releases(void)
{
    struct qrdma_be_qp_init ud = rc_init;
    struct qrdma_be *be;
    struct qrdma_be_qp *qp, *uqp;
    struct qrdma_be_send_wr wr;
    struct qrdma_be_mr dma = { .stag = STAG_DMA, .pd = PD, .type = QRDMA_BE_MR_DMA };
    uint32_t qpn, rk;

    fresh();
    be = make();
    qp = make_qp(be, &rc_init, &qpn);
    ud.qp_id = QP_ID2;
    ud.type = QRDMA_BE_QPT_UD;
    uqp = make_qp(be, &ud, &qpn);
    core.npieces = 2;
    core.piece_gpa[0] = RAM0_GPA;
    core.piece_len[0] = 0x1000;
    core.piece_gpa[1] = RAM1_GPA + 0x4000;
    core.piece_len[1] = 0x1000;
    make_mr(be, STAG, IOVA, 0x2000, QRDMA_BE_ACCESS_LOCAL_WRITE);     /* an alias */
    CHECK_EQ(ops->mr_register(be, &dma, &rk), 0);
    memset(&wr, 0, sizeof(wr));
    wr.opcode = QRDMA_BE_WR_SEND;
    mock_gid(1, wr.ud.av.sgid);
    CHECK_EQ(ops->post_send(be, uqp, &wr), 0);
    CHECK_EQ(vmock.live_qp, 2);
    CHECK_EQ(vmock.live_cq, 4);
    CHECK_EQ(vmock.live_mr, 3);
    CHECK_EQ(vmock.live_ah, 1);
    CHECK_EQ(vmock.live_pd, 1);
    (void)qp;

    CHECK_EQ(ops->reset(be), 0);
    CHECK_EQ(vmock.live_qp, 0);
    CHECK_EQ(vmock.live_cq, 0);
    CHECK_EQ(vmock.live_mr, 0);
    CHECK_EQ(vmock.live_ah, 0);
    CHECK_EQ(vmock.live_pd, 0);
    CHECK_EQ(vmock.live_ctx, 1);
    /* It works on after the reset. */
    qp = make_qp(be, &rc_init, &qpn);
    CHECK(qp != NULL);
    ops->destroy(be);
    CHECK_EQ(vmock.live_qp, 0);
    CHECK_EQ(vmock.live_cq, 0);
    CHECK_EQ(vmock.live_pd, 0);
    CHECK_EQ(vmock.live_ctx, 0);
    CHECK_EQ(vmock.live_ch, 0);
}

/*
 * SRQs: a host SRQ of the ring's depth; the guest's SRQ WQEs taken at
 * poll onto it (host lkeys, the core's wr_id), as many as it has room
 * for, and poll asks to come back while it has room (no SRQ doorbell); a
 * QP of the SRQ on the host SRQ, its receive completions carrying the SRQ
 * WQE's wr_id and freeing room; the limit armed on the host; the host's
 * limit and error events passed by SRQ ID; a WQE with a bad lkey raising
 * SRQ_ERR instead of reaching the host; host ENOMEM; reset releasing it.
 */
static void test_srq(void)
{
    const struct qrdma_be_srq_init sinit = { .srq_id = 4, .pd = PD, .max_wr = 4, .max_sge = 2 };
    struct qrdma_be_qp_init init = rc_init;
    struct qrdma_be_srq *srq = NULL, *none = NULL;
    struct qrdma_be_qp *qp;
    struct vm_srq *h;
    struct vm_qp *hq;
    struct ibv_wc wc;
    struct qrdma_be *be;
    uint32_t qpn, lkey;
    unsigned i;

    fresh();
    be = make();
    CHECK(be != NULL);
    CHECK(ops->carries & QRDMA_BE_CARRIES_SRQ);
    one_piece(RAM0_GPA + 0x10000, 0x4000);
    make_mr(be, STAG, IOVA, 0x4000, QRDMA_BE_ACCESS_LOCAL_WRITE);
    lkey = verbs_mock_last_mr()->mr.lkey;

    /* Host out of SRQs: -ENOMEM, nothing left. */
    vmock.fail_create_srq = ENOMEM;
    CHECK_EQ(ops->srq_create(be, &sinit, &none), -ENOMEM);
    CHECK_EQ(vmock.live_srq, 0);
    CHECK_EQ(ops->srq_create(be, &sinit, &srq), 0);
    CHECK_EQ(vmock.live_srq, 1);
    h = vmock.srqs[vmock.nsrqs - 1];
    CHECK_EQ(h->init.attr.max_wr, 4);
    CHECK_EQ(h->init.attr.max_sge, 4);      /* room for DMA-MR splits */
    CHECK_EQ(h->modifies, 0);               /* no limit asked: none armed */

    init.has_srq = true;
    init.srq = 4;
    init.max_recv_wr = 0;
    init.max_recv_sge = 0;
    qp = make_qp(be, &init, &qpn);
    hq = verbs_mock_qp(qpn);
    CHECK(hq != NULL);
    if (!qp || !hq) {
        return;
    }
    CHECK(hq->init.srq == &h->srq);
    CHECK_EQ(hq->init.cap.max_recv_wr, 0);
    CHECK_EQ(((struct vm_cq *)hq->qp.recv_cq)->cqe, 4);

    /* Two WQEs posted: poll takes them, and asks to look again (room left). */
    core.srq_recv_id = 4;
    for (i = 0; i < 2; i++) {
        core.srq_recv[i] = (struct qrdma_be_recv_wr){
            .wr_id = (1ull << 32) | i, .num_sge = 1,
            .sg_list = { { IOVA + 0x1000 * i, 0x800, STAG } } };
    }
    core.nsrq_recv = 2;
    CHECK_EQ(ops->poll(be, 64), 12345 + 1000000);
    CHECK_EQ(h->nrecv, 2);
    CHECK_EQ(h->recv[1].wr_id, (1ull << 32) | 1);
    CHECK_EQ(h->recv_sge[1][0].addr, IOVA + 0x1000);
    CHECK_EQ(h->recv_sge[1][0].length, 0x800);
    CHECK_EQ(h->recv_sge[1][0].lkey, lkey);

    /* Two more fill it: poll is idle again. */
    for (i = 2; i < 4; i++) {
        core.srq_recv[i] = (struct qrdma_be_recv_wr){
            .wr_id = (1ull << 32) | i, .num_sge = 1,
            .sg_list = { { IOVA + 0x1000 * i, 0x800, STAG } } };
    }
    core.srq_recv[4] = core.srq_recv[0];
    core.nsrq_recv = 5;
    CHECK_EQ(ops->poll(be, 64), UINT64_MAX);
    CHECK_EQ(h->nrecv, 4);
    CHECK_EQ(core.srq_recv_next, 4);        /* the fifth waits: no room */

    /* A receive on the QP: the SRQ WQE's wr_id comes back; its slot is free again. */
    memset(&wc, 0, sizeof(wc));
    wc.wr_id = (1ull << 32) | 1;
    wc.opcode = IBV_WC_RECV;
    wc.byte_len = 99;
    wc.qp_num = qpn;
    verbs_mock_cq_push(hq->qp.recv_cq, &wc);
    CHECK(fd_ready(be));
    ops->poll(be, 64);
    CHECK_EQ(core.nwc, 1);
    CHECK_EQ(core.wc_qp[0], QP_ID);
    CHECK_EQ(core.wc[0].wr_id, (1ull << 32) | 1);
    CHECK_EQ(core.wc[0].opcode, QRDMA_BE_WC_RECV);
    CHECK_EQ(core.wc[0].byte_len, 99);
    CHECK_EQ(h->nrecv, 5);

    /* The limit: armed on the host; its event comes back by SRQ ID. */
    CHECK_EQ(ops->srq_modify(be, srq, 2), 0);
    CHECK_EQ(h->limit, 2);
    verbs_mock_async_push(IBV_EVENT_SRQ_LIMIT_REACHED, &h->srq);
    verbs_mock_async_push(IBV_EVENT_SRQ_ERR, &h->srq);
    ops->poll(be, 64);
    CHECK_EQ(core.nev, 2);
    CHECK_EQ(core.ev[0], QRDMA_BE_EV_SRQ_LIMIT);
    CHECK_EQ(core.ev_id[0], 4);
    CHECK_EQ(core.ev[1], QRDMA_BE_EV_SRQ_ERR);
    CHECK_EQ(vmock.acked_async, 2);

    /* A WQE with a lkey the backend does not hold: SRQ_ERR, never a made-up key on the host. */
    wc.wr_id = (1ull << 32) | 2;
    verbs_mock_cq_push(hq->qp.recv_cq, &wc);
    core.srq_recv[5] = core.srq_recv[0];
    core.srq_recv[5].sg_list[0].lkey = STAG ^ 1;
    core.nsrq_recv = 6;
    ops->poll(be, 64);
    CHECK_EQ(h->nrecv, 5);
    CHECK_EQ(core.nev, 3);
    CHECK_EQ(core.ev[2], QRDMA_BE_EV_SRQ_ERR);
    CHECK_EQ(core.ev_id[2], 4);

    /* Reset: the QP, its CQs and the SRQ go. */
    CHECK_EQ(ops->reset(be), 0);
    CHECK_EQ(vmock.live_srq, 0);
    CHECK_EQ(vmock.live_qp, 0);
    CHECK_EQ(vmock.live_cq, 0);
    /* After a reset an SRQ can be made again and destroyed on its own. */
    CHECK_EQ(ops->srq_create(be, &sinit, &srq), 0);
    CHECK_EQ(vmock.live_srq, 1);
    ops->srq_destroy(be, srq);
    CHECK_EQ(vmock.live_srq, 0);
    CHECK_EQ(ops->poll(be, 64), UINT64_MAX);    /* no SRQ: nothing to look for */
    ops->destroy(be);
    CHECK_EQ(vmock.live_ctx, 0);
}

/*
 * Fast-register MRs on host type 2 windows: ALLOC_STAG allocates one and
 * hands out its rkey with the STag's key byte (the PD's whole-RAM MRs,
 * local and bindable, made then); a FAST_REG WR tells the core first,
 * then becomes a host BIND_MW of that window on the RAM MR at the
 * guest's iova with the new key byte and the remote rights, completing
 * as FAST_REG; LOCAL_INV by STag becomes the host's by wire rkey; a
 * peer's SEND_WITH_INV reaches the core's table by STag; pages that are
 * not one run at iova = guest-physical, a wrong key byte, the MR's lkey
 * in an SGE, and host ENOMEM are refused; DEALLOC frees the window.
 */
static void test_fast_reg(void)
{
    const uint32_t fr_stag = 9u << 8 | 0x42, fr_new = 9u << 8 | 0x43;
    const uint64_t fr_iova = RAM0_GPA + 0x20000;
    struct qrdma_be_mr mr = { .stag = fr_stag, .pd = PD, .type = QRDMA_BE_MR_FAST_REG,
                              .access = QRDMA_BE_ACCESS_LOCAL_WRITE, .max_pages = 4 };
    struct qrdma_be_send_wr wr;
    struct qrdma_be_qp *qp;
    struct ibv_mw *mw;
    struct vm_qp *h;
    struct ibv_wc wc;
    struct qrdma_be *be;
    uint32_t qpn, rkey = 0, base;
    unsigned i;

    fresh();
    be = make();
    CHECK(be != NULL);
    CHECK(ops->carries & QRDMA_BE_CARRIES_FAST_REG);
    CHECK(!(ops->carries & QRDMA_BE_CARRIES_MW));
    qp = make_qp(be, &rc_init, &qpn);
    h = verbs_mock_qp(qpn);
    if (!qp || !h) {
        CHECK(!"no QP");
        return;
    }

    vmock.fail_alloc_mw = ENOMEM;
    CHECK_EQ(ops->mr_alloc_stag(be, &mr, &rkey), -ENOMEM);
    CHECK_EQ(vmock.live_mw, 0);
    CHECK_EQ(ops->mr_alloc_stag(be, &mr, &rkey), 0);
    CHECK_EQ(vmock.live_mw, 1);
    mw = vmock.mws[vmock.nmws - 1];
    base = mw->rkey & ~0xffu;
    CHECK_EQ(rkey, base | 0x42);
    /* The PD's whole-RAM MRs: bindable, never remote. */
    CHECK_EQ(vmock.live_mr, 2);
    for (i = 0; i < 2; i++) {
        CHECK_EQ(vmock.mrs[i]->access, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
        CHECK_EQ(vmock.mrs[i]->iova, i ? RAM1_GPA : RAM0_GPA);
    }

    /* FAST_REG with a new key byte: the core first, then a host bind. */
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = 7;
    wr.opcode = QRDMA_BE_WR_FAST_REG;
    wr.send_flags = QRDMA_BE_SEND_SIGNALED;
    wr.fast_reg = (struct qrdma_be_fast_reg){
        .stag = fr_new, .access = QRDMA_BE_ACCESS_LOCAL_WRITE | QRDMA_BE_ACCESS_REMOTE_WRITE |
                                  QRDMA_BE_ACCESS_REMOTE_READ,
        .iova = fr_iova, .length = 0x3000, .page_log2 = 12, .levels = 1 };
    one_piece(fr_iova, 0x3000);
    CHECK_EQ(ops->post_send(be, qp, &wr), 0);
    CHECK_EQ(core.nfr, 1);
    CHECK_EQ(core.fr[0].stag, fr_new);
    CHECK_EQ(h->nsend, 1);
    CHECK_EQ(h->send[0].opcode, IBV_WR_BIND_MW);
    CHECK_EQ(h->send[0].send_flags, IBV_SEND_SIGNALED);
    CHECK(h->send[0].bind_mw.mw == mw);
    CHECK_EQ(h->send[0].bind_mw.rkey, base | 0x43);
    CHECK_EQ(mw->rkey, base | 0x43);        /* kept for the next bind, which names the window by it */
    CHECK(h->send[0].bind_mw.bind_info.mr == &vmock.mrs[0]->mr);
    CHECK_EQ(h->send[0].bind_mw.bind_info.addr, fr_iova);
    CHECK_EQ(h->send[0].bind_mw.bind_info.length, 0x3000);
    CHECK_EQ(h->send[0].bind_mw.bind_info.mw_access_flags,
             IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    memset(&wc, 0, sizeof(wc));
    wc.wr_id = 7;
    wc.opcode = IBV_WC_BIND_MW;
    verbs_mock_cq_push(h->qp.send_cq, &wc);
    ops->poll(be, 64);
    CHECK_EQ(core.nwc, 1);
    CHECK_EQ(core.wc[0].opcode, QRDMA_BE_WC_FAST_REG);
    CHECK_EQ(core.wc[0].status, QRDMA_BE_WC_SUCCESS);

    /* The MR's lkey in a local SGE: not carried, never a made-up host key. */
    wr.opcode = QRDMA_BE_WR_SEND;
    wr.num_sge = 1;
    wr.sg_list[0] = (struct qrdma_be_sge){ fr_iova, 64, fr_new };
    CHECK_EQ(ops->post_send(be, qp, &wr), -EACCES);
    wr.num_sge = 0;

    /* LOCAL_INV by the old key byte: refused; by the STag now: the host's by wire rkey. */
    wr.opcode = QRDMA_BE_WR_LOCAL_INV;
    wr.wr_id = 8;
    wr.invalidate_stag = fr_stag;
    CHECK_EQ(ops->post_send(be, qp, &wr), -EINVAL);
    CHECK_EQ(core.ninv, 0);
    wr.invalidate_stag = fr_new;
    CHECK_EQ(ops->post_send(be, qp, &wr), 0);
    CHECK_EQ(core.ninv, 1);
    CHECK_EQ(core.inv_stag[0], fr_new);
    CHECK_EQ(h->send[1].opcode, IBV_WR_LOCAL_INV);
    CHECK_EQ(h->send[1].invalidate_rkey, base | 0x43);
    wc.wr_id = 8;
    wc.opcode = IBV_WC_LOCAL_INV;
    verbs_mock_cq_push(h->qp.send_cq, &wc);
    ops->poll(be, 64);
    CHECK_EQ(core.wc[1].opcode, QRDMA_BE_WC_LOCAL_INV);

    /* One the core refuses never reaches the host (scattered pages: test_fast_reg_scattered). */
    wr.opcode = QRDMA_BE_WR_FAST_REG;
    wr.fast_reg.stag = fr_stag;
    one_piece(fr_iova, 0x3000);
    core.fr_ret = -EINVAL;
    CHECK_EQ(ops->post_send(be, qp, &wr), -EINVAL);
    core.fr_ret = 0;
    CHECK_EQ(h->nsend, 2);
    /* Bound again with 0x42: a peer's SEND_WITH_INV of that rkey reaches the core by STag. */
    wr.wr_id = 9;
    CHECK_EQ(ops->post_send(be, qp, &wr), 0);
    CHECK_EQ(h->send[2].bind_mw.rkey, base | 0x42);
    wc.wr_id = 0;
    wc.opcode = IBV_WC_RECV;
    wc.wc_flags = IBV_WC_WITH_INV;
    wc.invalidated_rkey = base | 0x42;
    core.nrecv = 1;
    core.recv[0] = (struct qrdma_be_recv_wr){ .wr_id = 0 };
    ops->recv_doorbell(be, qp);
    verbs_mock_cq_push(h->qp.recv_cq, &wc);
    ops->poll(be, 64);
    CHECK_EQ(core.ninv, 2);
    CHECK_EQ(core.inv_stag[1], fr_stag);
    CHECK_EQ(core.inv_qp[1], QP_ID);
    CHECK_EQ(core.wc[core.nwc - 1].invalidated_stag, base | 0x42);
    CHECK(core.wc[core.nwc - 1].wc_flags & QRDMA_BE_WC_WITH_INV);

    /*
     * rxe's way: the kernel's WITH_INVALIDATE bit, which libibverbs reads
     * as IP_CSUM_OK, on an RC receive whose rkey is our window: the same.
     */
    wr.wr_id = 10;
    wr.fast_reg.stag = fr_new;
    CHECK_EQ(ops->post_send(be, qp, &wr), 0);
    wc.wr_id = 1;
    wc.wc_flags = IBV_WC_GRH | IBV_WC_IP_CSUM_OK;
    wc.invalidated_rkey = base | 0x43;
    core.nrecv = 2;
    core.recv[1] = (struct qrdma_be_recv_wr){ .wr_id = 1 };
    ops->recv_doorbell(be, qp);
    verbs_mock_cq_push(h->qp.recv_cq, &wc);
    ops->poll(be, 64);
    CHECK_EQ(core.ninv, 3);
    CHECK_EQ(core.inv_stag[2], fr_new);
    CHECK(core.wc[core.nwc - 1].wc_flags & QRDMA_BE_WC_WITH_INV);
    CHECK_EQ(core.wc[core.nwc - 1].invalidated_stag, base | 0x43);
    /* ... but not with an rkey that is none of ours: only the checksum flag, dropped. */
    wc.wr_id = 2;
    wc.invalidated_rkey = 0x1234;
    core.nrecv = 3;
    core.recv[2] = (struct qrdma_be_recv_wr){ .wr_id = 2 };
    ops->recv_doorbell(be, qp);
    verbs_mock_cq_push(h->qp.recv_cq, &wc);
    ops->poll(be, 64);
    CHECK_EQ(core.ninv, 3);
    CHECK(!(core.wc[core.nwc - 1].wc_flags & QRDMA_BE_WC_WITH_INV));

    /* DEALLOC_STAG frees the window, before the RAM MRs go with the PD. */
    ops->mr_deregister(be, fr_stag);
    CHECK_EQ(vmock.live_mw, 0);
    ops->destroy(be);
    CHECK_EQ(vmock.live_mr, 0);
    CHECK_EQ(vmock.live_ctx, 0);
}

/* The host ran WR wr_id of the mock QP, with status and opcode; the backend polls. */
static void send_done(struct qrdma_be *be, struct vm_qp *h, uint64_t wr_id,
                      enum ibv_wc_status status, enum ibv_wc_opcode opcode)
{
    verbs_mock_send_done(h, wr_id, status, opcode);
    ops->poll(be, 64);
}

/*
 * FAST_REG over pages the whole-RAM MRs cannot cover as one run at iova =
 * guest-physical: a host MR of their own (an alias when scattered), the
 * window bound to it, released once the window is off it: after a later
 * bind or an invalidation has run, at once if its own bind did not run,
 * with the window at DEALLOC; never while the host may still have the
 * window on it (the mock refuses that dereg, as rxe does). A guest that
 * never lets its binds complete is held to VB_FR_MAX_REGS.
 */
static void test_fast_reg_scattered(void)
{
    const uint32_t stag = 9u << 8 | 0x42;
    const uint64_t iova = 0x7000000000ull;      /* not guest-physical */
    struct qrdma_be_qp_init init = rc_init;
    struct qrdma_be_mr mr = { .stag = stag, .pd = PD, .type = QRDMA_BE_MR_FAST_REG,
                              .access = QRDMA_BE_ACCESS_LOCAL_WRITE, .max_pages = 4 };
    struct qrdma_be_send_wr fr, inv;
    struct vm_mr *a, *b, *c;
    struct qrdma_be_qp *qp;
    struct ibv_mw *mw;
    struct vm_qp *h;
    struct qrdma_be *be;
    uint32_t qpn, rkey = 0;
    unsigned i, live;
    uint8_t *alias;

    fresh();
    guest_errors = 0;
    be = make();
    CHECK(be != NULL);
    init.max_send_wr = 32;
    qp = make_qp(be, &init, &qpn);
    h = verbs_mock_qp(qpn);
    if (!qp || !h) {
        CHECK(!"no QP");
        return;
    }
    CHECK_EQ(ops->mr_alloc_stag(be, &mr, &rkey), 0);
    mw = vmock.mws[vmock.nmws - 1];
    live = vmock.live_mr;                       /* the PD's two whole-RAM MRs */

    memset(&fr, 0, sizeof(fr));
    fr.opcode = QRDMA_BE_WR_FAST_REG;
    fr.fast_reg = (struct qrdma_be_fast_reg){
        .stag = stag, .access = QRDMA_BE_ACCESS_LOCAL_WRITE | QRDMA_BE_ACCESS_REMOTE_WRITE,
        .iova = iova, .length = 0x3000, .page_log2 = 12, .levels = 1 };
    memset(&inv, 0, sizeof(inv));
    inv.opcode = QRDMA_BE_WR_LOCAL_INV;
    inv.invalidate_stag = stag;
    /* a page of RAM0, then two of RAM1: scattered in gpa and in this process */
    core.npieces = 2;
    core.piece_gpa[0] = RAM0_GPA + 0x40000;
    core.piece_len[0] = 0x1000;
    core.piece_gpa[1] = RAM1_GPA + 0x8000;
    core.piece_len[1] = 0x2000;

    /* A: its own host MR at the guest's iova, bindable only; the window on it. */
    fr.wr_id = 1;
    CHECK_EQ(ops->post_send(be, qp, &fr), 0);
    a = verbs_mock_last_mr();
    CHECK_EQ(vmock.live_mr, live + 1);
    CHECK_EQ(a->iova, iova);
    CHECK_EQ(a->mr.length, 0x3000);
    CHECK_EQ(a->access, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
    CHECK_EQ(h->send[0].opcode, IBV_WR_BIND_MW);
    CHECK(h->send[0].bind_mw.mw == mw);
    CHECK(h->send[0].bind_mw.bind_info.mr == &a->mr);
    CHECK_EQ(h->send[0].bind_mw.bind_info.addr, iova);
    CHECK_EQ(h->send[0].bind_mw.bind_info.length, 0x3000);
    CHECK_EQ(h->send[0].bind_mw.bind_info.mw_access_flags, IBV_ACCESS_REMOTE_WRITE);
    /* zero copy: the MR's bytes are the guest's pages, in iova order */
    alias = a->mr.addr;
    alias[0] = 0x5a;
    alias[0x1000] = 0xa5;
    alias[0x2fff] = 0x3c;
    CHECK_EQ(ram0[0x40000], 0x5a);
    CHECK_EQ(ram1[0x8000], 0xa5);
    CHECK_EQ(ram1[0x9fff], 0x3c);
    a->bound_mw = mw;                           /* the host ran the bind */
    send_done(be, h, 1, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
    CHECK(verbs_mock_mr_live(a));
    CHECK_EQ(core.wc[core.nwc - 1].opcode, QRDMA_BE_WC_FAST_REG);

    /* LOCAL_INV, then B: A stays until the invalidation has run. */
    inv.wr_id = 2;
    CHECK_EQ(ops->post_send(be, qp, &inv), 0);
    fr.wr_id = 3;
    CHECK_EQ(ops->post_send(be, qp, &fr), 0);
    b = verbs_mock_last_mr();
    CHECK(b != a && verbs_mock_mr_live(a) && verbs_mock_mr_live(b));
    CHECK(h->send[2].bind_mw.bind_info.mr == &b->mr);
    a->bound_mw = NULL;                         /* the host ran the invalidation */
    send_done(be, h, 2, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
    CHECK(!verbs_mock_mr_live(a));
    CHECK(verbs_mock_mr_live(b));
    b->bound_mw = mw;
    send_done(be, h, 3, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
    CHECK(verbs_mock_mr_live(b));
    CHECK_EQ(vmock.live_mr, live + 1);

    /*
     * A bind that never ran, flushed behind its unsignaled invalidation,
     * whose flush the host does not report: its own MR goes; B, which the
     * window is still on, stays.
     */
    inv.wr_id = 4;
    CHECK_EQ(ops->post_send(be, qp, &inv), 0);
    fr.wr_id = 5;
    CHECK_EQ(ops->post_send(be, qp, &fr), 0);
    c = verbs_mock_last_mr();
    CHECK(c != b && verbs_mock_mr_live(c));
    send_done(be, h, 5, IBV_WC_WR_FLUSH_ERR, IBV_WC_BIND_MW);
    CHECK(!verbs_mock_mr_live(c));
    CHECK(verbs_mock_mr_live(b));
    CHECK_EQ(vmock.live_mr, live + 1);
    CHECK_EQ(core.wc[core.nwc - 1].status, QRDMA_BE_WC_WR_FLUSH_ERR);

    /* A host post that fails leaves no MR behind. */
    vmock.fail_post_send = EINVAL;
    fr.wr_id = 6;
    CHECK(ops->post_send(be, qp, &fr) != 0);
    CHECK_EQ(vmock.live_mr, live + 1);

    /*
     * Binds that never complete (unsignaled, nothing signaled after): B and
     * seven more at most, then a FAST_REG is refused with a guest error.
     */
    for (i = 0; i < 7; i++) {
        inv.wr_id = 10 + 2 * i;
        fr.wr_id = 11 + 2 * i;
        CHECK_EQ(ops->post_send(be, qp, &inv), 0);
        CHECK_EQ(ops->post_send(be, qp, &fr), 0);
    }
    CHECK_EQ(vmock.live_mr, live + 8);
    inv.wr_id = 30;
    CHECK_EQ(ops->post_send(be, qp, &inv), 0);
    fr.wr_id = 31;
    CHECK_EQ(guest_errors, 0);
    CHECK_EQ(ops->post_send(be, qp, &fr), -EINVAL);
    CHECK_EQ(guest_errors, 1);
    CHECK_EQ(vmock.live_mr, live + 8);

    /* DEALLOC: the window first, then every MR it may have been on. */
    ops->mr_deregister(be, stag);
    CHECK_EQ(vmock.live_mw, 0);
    CHECK_EQ(vmock.live_mr, live);
    /* never a dereg of an MR the host may still have the window on */
    CHECK_EQ(vmock.dereg_busy, 0);
    ops->destroy(be);
    CHECK_EQ(vmock.live_mr, 0);
}

/*
 * The CM proxy when it cannot start (here: the host's rdma_cm cannot
 * make the listener cm-listen asks for): create fails, saying so, unless
 * cm_optional, which leaves the device without a GSI QP (carried says
 * so) and puts the reason in cm_off_why; the host IDs made on the way
 * are gone either way. Started, it is carried.
 */
static void test_cm_optional(void)
{
    static const uint8_t gid[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 };
    struct cmm_world *w = cmm_world_new(3);
    struct cmm_host *host = cmm_host_new(w, "mock0", gid);
    char why[160];
    struct qrdma_be *be;

    for (int optional = 0; optional < 3; optional++) {
        fresh();
        memset(&vcfg, 0, sizeof(vcfg));
        vcfg.ibdev = "mock0";
        vcfg.ibport = 1;
        vcfg.gid_index = 1;
        vcfg.nram = 1;
        vcfg.ram[0] = (struct qrdma_be_verbs_ram){ RAM0_GPA, RAM_SIZE, ram0, ram_fd, 0 };
        vcfg.verbs = &verbs_mock_table;
        vcfg.cm_proxy = true;
        vcfg.cm_ops = &cmm_ops;
        vcfg.cm_host = host;
        vcfg.ncm_listen = 1;
        vcfg.cm_listen[0] = 7174;
        vcfg.cm_optional = optional > 0;
        vcfg.cm_off_why = why;
        vcfg.cm_off_why_len = sizeof(why);
        why[0] = 0;
        if (optional < 2) {
            cmm_fail_next(host, CMM_CREATE_ID, -EADDRINUSE);
        }
        memset(&params, 0, sizeof(params));
        params.backend_config = &vcfg;
        err[0] = 0;
        be = ops->create(&cbs, &core, &params, err, sizeof(err));
        CHECK_EQ(cmm_host_ids(host), optional == 2 ? 2 : 0);
        if (optional == 0) {
            CHECK(be == NULL);
            CHECK(strstr(err, "cm=proxy") && strstr(err, "7174"));
            CHECK_EQ(vmock.live_ctx, 0);
            continue;
        }
        CHECK(be != NULL);
        if (!be) {
            continue;
        }
        if (optional == 1) {
            CHECK(strstr(why, "cm=proxy") && strstr(why, "7174"));
            CHECK(!(ops->carried(be) & QRDMA_BE_CARRIES_GSI));
        } else {
            CHECK_EQ(why[0], 0);
            CHECK(ops->carried(be) & QRDMA_BE_CARRIES_GSI);
        }
        CHECK(ops->carried(be) & QRDMA_BE_CARRIES_FAST_REG);
        ops->destroy(be);
        CHECK_EQ(cmm_host_ids(host), 0);
        CHECK_EQ(vmock.live_ctx, 0);
    }
    cmm_world_free(w);
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_create_refusals),
    UNIT_TEST(test_qp_create_ids),
    UNIT_TEST(test_qp_modify),
    UNIT_TEST(test_mr_direct),
    UNIT_TEST(test_mr_alias),
    UNIT_TEST(test_post_send),
    UNIT_TEST(test_post_send_ud),
    UNIT_TEST(test_send_completions),
    UNIT_TEST(test_receives),
    UNIT_TEST(test_async_events),
    UNIT_TEST(test_host_gids),
    UNIT_TEST(test_port_follows_host),
    UNIT_TEST(test_reset_releases),
    UNIT_TEST(test_srq),
    UNIT_TEST(test_fast_reg),
    UNIT_TEST(test_fast_reg_scattered),
    UNIT_TEST(test_cm_optional),
};

int main(void)
{
    int ret = unit_run("verbs-backend", tests, sizeof(tests) / sizeof(tests[0]));

    verbs_mock_reset();
    return ret;
}
