/*
 * The device core and the verbs backend together, over the mock host
 * device (verbs_mock.h): one core on the core-dp suite's bed
 * (dp_testbed.h) driven as the guest driver drives it, its backend the
 * real host-backend/verbs/ on the mock. What the guest sees is checked
 * end to end: CREATE_QP and REG_MR return the host's QPN and rkey
 * (WIRE_IDS), a WRITE WQE becomes a host WR with the host lkey and the
 * guest's IOVA, a receive WQE is posted on the host at the RQ doorbell,
 * and host completions become the guest's CQEs once the backend's wait
 * fd has fired and the data path ran. A device reset leaves no host
 * object behind.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "core/qrdma_core_int.h"
#include "dp_testbed.h"
#include "qrdma_backend_verbs.h"
#include "unit.h"
#include "vb_cm.h"
#include "vb_cm_mad.h"
#include "verbs_cm_model.h"
#include "verbs_mock.h"

int unit_failures;

static struct qrdma_be_verbs_config vcfg;
/* verbs_setup's CM proxy: the rdma_cm model's host and SA's handle on it (NULL: cm off) */
static void *setup_cm_host;

/* SA on the verbs backend over the mock, its guest RAM the bed's; SB (a peer's identity only) on sw. */
static void verbs_setup(void)
{
    fq_clear();
    drop_frames = 0;
    verbs_mock_reset();
    dev_backend_ops = NULL;
    dev_backend_config = NULL;
    side_up(SA, 0);                     /* the first time: SA's RAM exists from here on */
    memset(&vcfg, 0, sizeof(vcfg));
    vcfg.ibdev = "mock0";
    vcfg.ibport = 1;
    vcfg.nram = 1;
    vcfg.ram[0] = (struct qrdma_be_verbs_ram){ RAM_BASE, RAM_SIZE, SA->ram, -1, 0 };
    vcfg.verbs = &verbs_mock_table;
    if (setup_cm_host) {
        vcfg.cm_proxy = true;
        vcfg.cm_ops = &cmm_ops;
        vcfg.cm_host = setup_cm_host;
    }
    dev_backend_ops = &qrdma_be_verbs_ops;
    dev_backend_config = &vcfg;
    side_up(SA, 0);
    dev_backend_ops = NULL;
    dev_backend_config = NULL;
    side_up(SB, 1);
    create_cq(SA, 1);
    create_cq(SA, 2);
    no_errors(SA);
}

static bool wait_fd_ready(void)
{
    struct epoll_event ev;
    int fd = qrdma_core_backend_wait_fd(&SA->core);

    return fd >= 0 && epoll_wait(fd, &ev, 1, 0) == 1;
}

static void run_dp(void)
{
    qrdma_core_run(&SA->core, QRDMA_WORK_DP);
    pump();
}

/*
 * The identifiers the guest is handed are the host's; the guest keeps
 * naming its objects by QP ID and STag; work and completions cross over.
 */
static void test_end_to_end(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x2000, .rkey = 0x80aabbcc,
                     .nsge = 1, .sge = { { 0x100, 300, 0 } } };
    const uint32_t stag2 = 3u << QRDMA_STAG_INDEX_SHIFT | 0x33;
    struct vm_mr *data_mr;
    struct vm_qp *h;
    struct ibv_wc wc;
    struct cqe e;
    uint32_t qpn;

    verbs_setup();
    CHECK(qrdma_core_backend_wait_fd(&SA->core) >= 0);
    CHECK_EQ(qrdma_core_backend_wait_fd(&SB->core), -1);    /* sw: its timer is enough */
    /* The bed's bring-up registered the data MR with the host, at its guest IOVA, directly. */
    CHECK_EQ(vmock.nmrs, 1);
    data_mr = vmock.mrs[0];
    CHECK(data_mr->mr.addr == SA->ram + (DATA - RAM_BASE));
    CHECK_EQ(data_mr->iova, IOVA);
    CHECK_EQ(data_mr->mr.length, DATA_LEN);
    /* Another REG_MR returns the host's rkey. */
    CQP_OK(cqp(SA, QRDMA_CQP_OP_REG_MR, stag2,
               PD | (uint64_t)(QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE)
                    << QRDMA_MR_ARG1_ACCESS_SHIFT | 12ull << QRDMA_MR_ARG1_PAGE_SHIFT,
               0x1000, 0x1000, DATA, 0));
    CHECK_EQ(last_retval, verbs_mock_last_mr()->mr.rkey);
    CHECK(last_retval != stag2);

    create_qp(SA, QPN, &rc_spec);
    qpn = (uint32_t)last_retval;
    CHECK_EQ(qpn, 0x3a001);             /* the mock's, not QP ID 2 */
    CHECK_EQ(SA->core.dp.qp[QPN].wire_qpn, qpn);
    h = verbs_mock_qp(qpn);
    CHECK(h != NULL);
    if (!h) {
        return;
    }
    rc_to_rts(SA, QPN, SB, 0x5a5a5, 7);
    CHECK_EQ(h->qp.state, IBV_QPS_RTS);
    CHECK_EQ(h->attr[1].dest_qp_num, 0x5a5a5);
    CHECK(!memcmp(h->attr[1].ah_attr.grh.dgid.raw, SB->gid, 16));

    /* A WRITE: the host WR has the guest's address, the host lkey, the peer's rkey. */
    CHECK_EQ(post_send(SA, QPN, &w), 0);
    ring_sq(SA, QPN);
    run_dp();
    CHECK_EQ(h->nsend, 1);
    CHECK_EQ(h->send[0].wr_id, 0);
    CHECK_EQ(h->send[0].opcode, IBV_WR_RDMA_WRITE);
    CHECK_EQ(h->send[0].send_flags, IBV_SEND_SIGNALED);
    CHECK_EQ(h->send_sge[0][0].addr, IOVA + 0x100);
    CHECK_EQ(h->send_sge[0][0].length, 300);
    CHECK_EQ(h->send_sge[0][0].lkey, data_mr->mr.lkey);
    CHECK_EQ(h->send[0].wr.rdma.rkey, 0x80aabbcc);
    CHECK_EQ(h->send[0].wr.rdma.remote_addr, IOVA + 0x2000);
    CHECK(!poll_cq(SA, 1, &e));

    /* A receive: posted on the host at the doorbell. */
    CHECK_EQ(post_recv(SA, QPN, 0x4000, 2048), 0);
    ring_rq(SA, QPN);
    CHECK_EQ(h->nrecv, 1);
    CHECK_EQ(h->recv_sge[0][0].addr, IOVA + 0x4000);
    CHECK_EQ(h->recv_sge[0][0].lkey, data_mr->mr.lkey);

    /* The host completes both; the fd fires; the data path turns them into CQEs. */
    memset(&wc, 0, sizeof(wc));
    wc.wr_id = 0;
    wc.status = IBV_WC_SUCCESS;
    wc.opcode = IBV_WC_RDMA_WRITE;
    wc.qp_num = qpn;
    verbs_mock_cq_push(h->qp.send_cq, &wc);
    wc.opcode = IBV_WC_RECV;
    wc.byte_len = 77;
    wc.src_qp = 0x5a5a5;
    wc.wc_flags = IBV_WC_WITH_IMM;
    wc.imm_data = 0x01020304;
    verbs_mock_cq_push(h->qp.recv_cq, &wc);
    CHECK(wait_fd_ready());
    run_dp();
    CHECK(!wait_fd_ready());
    EXPECT_CQE(SA, 1, QPN, 0, QRDMA_BE_WC_RDMA_WRITE, QRDMA_BE_WC_SUCCESS, QRDMA_CQE_FLAG_SQ,
               ~0u);
    CHECK(poll_cq(SA, 2, &e));
    CHECK_EQ(e.qp, QPN);
    CHECK_EQ(e.wqe_index, 0);
    CHECK_EQ(e.opcode, QRDMA_BE_WC_RECV);
    CHECK_EQ(e.byte_len, 77);
    CHECK_EQ(e.src_qp, 0x5a5a5);
    CHECK_EQ(e.imm, 0x01020304);
    CHECK_EQ(e.flags, QRDMA_CQE_FLAG_WITH_IMM | QRDMA_CQE_FLAG_SOLICITED);
    no_errors(SA);

    /* A bad lkey: the WQE completes LOC_PROT_ERR, as the MR checks would say in sw mode. */
    w.sge[0].lkey = MR_STAG ^ 0x01;
    CHECK_EQ(post_send(SA, QPN, &w), 1);
    ring_sq(SA, QPN);
    run_dp();
    CHECK(poll_cq(SA, 1, &e));
    CHECK_EQ(e.wqe_index, 1);
    CHECK_EQ(e.status, QRDMA_BE_WC_LOC_PROT_ERR);
    CHECK_EQ(h->nsend, 1);
    CHECK_EQ(h->qp.state, IBV_QPS_ERR);     /* the core took the QP to ERR, the host's too */

    /* Device reset: every host object goes; the device stays. */
    reg_w(SA, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    CHECK_EQ(vmock.live_qp, 0);
    CHECK_EQ(vmock.live_cq, 0);
    CHECK_EQ(vmock.live_mr, 0);
    CHECK_EQ(vmock.live_pd, 0);
    CHECK_EQ(vmock.live_ctx, 1);
    qrdma_core_fini(&SA->core);
    CHECK_EQ(vmock.live_ctx, 0);
    CHECK_EQ(vmock.live_ch, 0);
}

/*
 * Host resource exhaustion is the guest's ENOMEM: CREATE_QP (its host QP
 * or either host CQ) and REG_MR (the host MR, or a REREG's new one) fail
 * with NO_RESOURCE / HOST, which the driver maps to ENOMEM, whichever
 * errno the host said "no more" with; nothing is left behind, and the
 * next try works. A host refusal that is not exhaustion stays INVALID_ARG.
 */
static void test_host_enomem(void)
{
    const uint64_t page = 12ull << QRDMA_MR_ARG1_PAGE_SHIFT;
    const uint64_t lw = (uint64_t)QRDMA_ACCESS_LOCAL_WRITE << QRDMA_MR_ARG1_ACCESS_SHIFT | page;
    const uint32_t stag2 = 3u << QRDMA_STAG_INDEX_SHIFT | 0x33;
    struct qrdma_mr_walk w;
    int mr_before;

    verbs_setup();
    vmock.fail_create_qp = ENOMEM;
    last_status = create_qp_status(SA, QPN, &rc_spec);
    CHECK_EQ(major_of(last_status), QRDMA_CQP_ERR_NO_RESOURCE);
    CHECK_EQ(last_status & QRDMA_CCQ_CQE_MINOR_MASK, QRDMA_RESOURCE_ERR_HOST);
    CHECK(logged(SA, "out of host resources"));
    CHECK(qrdma_qp_get(&SA->core, QPN) == NULL);
    CHECK_EQ(reg_r(SA, QRDMA_REG_OBJ_COUNT_QP), 0);
    CHECK_EQ(vmock.live_cq, 0);
    CHECK_EQ(vmock.live_qp, 0);
    /* A host CQ table full (ENOSPC) is exhaustion too. */
    vmock.fail_create_cq = ENOSPC;
    CHECK_EQ(major_of(create_qp_status(SA, QPN, &rc_spec)), QRDMA_CQP_ERR_NO_RESOURCE);
    CHECK_EQ(vmock.live_cq, 0);
    /* A refusal that is not exhaustion: the guest's arguments, as before. */
    vmock.fail_create_qp = EINVAL;
    CHECK_EQ(major_of(create_qp_status(SA, QPN, &rc_spec)), QRDMA_CQP_ERR_INVALID_ARG);
    CHECK(logged(SA, "the backend refuses it"));
    CHECK_EQ(vmock.live_cq, 0);
    /* And then it works. */
    create_qp(SA, QPN, &rc_spec);
    CHECK_EQ(vmock.live_qp, 1);

    /* REG_MR: the host out of MRs (or of pinnable memory). */
    mr_before = vmock.live_mr;
    vmock.fail_reg_mr = ENOMEM;
    last_status = cqp(SA, QRDMA_CQP_OP_REG_MR, stag2, PD | lw, 0x1000, 0x1000, DATA, 0);
    CHECK_EQ(major_of(last_status), QRDMA_CQP_ERR_NO_RESOURCE);
    CHECK_EQ(last_status & QRDMA_CCQ_CQE_MINOR_MASK, QRDMA_RESOURCE_ERR_HOST);
    CHECK_EQ(SA->core.obj.mr[3].state, QRDMA_MR_STATE_NONE);
    CHECK_EQ(vmock.live_mr, mr_before);
    CQP_OK(cqp(SA, QRDMA_CQP_OP_REG_MR, stag2, PD | lw, 0x1000, 0x1000, DATA, 0));
    CHECK_EQ(vmock.live_mr, mr_before + 1);
    /* A REREG the host cannot make: NO_RESOURCE, the old registration stays, here and there. */
    vmock.fail_reg_mr = EAGAIN;
    last_status = cqp(SA, QRDMA_CQP_OP_REG_MR, stag2, PD | lw | QRDMA_MR_ARG1_REREG, 0x2000,
                      0x1000, DATA, 0);
    CHECK_EQ(major_of(last_status), QRDMA_CQP_ERR_NO_RESOURCE);
    CHECK(logged(SA, "the old registration stays"));
    CHECK_EQ(qrdma_mr_translate(&SA->core, stag2, PD, 0x1000, 8, 0, &w), 0);
    CHECK_EQ(vmock.live_mr, mr_before + 1);
    qrdma_core_fini(&SA->core);
    CHECK_EQ(vmock.live_mr, 0);
    CHECK_EQ(vmock.live_qp, 0);
}

/*
 * CAP_FEATURES over the verbs backend: what it carries (SRQs,
 * fast-register MRs), not the sw backend's list, so the driver never
 * offers windows or the transport's counters that the backend would refuse.
 */
static void test_features(void)
{
    uint32_t f;

    verbs_setup();
    f = reg_r(SA, QRDMA_REG_CAP_FEATURES);
    CHECK_EQ(f & (QRDMA_FEATURE_RC | QRDMA_FEATURE_UD | QRDMA_FEATURE_UC | QRDMA_FEATURE_ATOMIC |
                  QRDMA_FEATURE_WIRE_IDS),
             QRDMA_FEATURE_RC | QRDMA_FEATURE_UD | QRDMA_FEATURE_UC | QRDMA_FEATURE_ATOMIC |
             QRDMA_FEATURE_WIRE_IDS);
    CHECK_EQ(f & (QRDMA_FEATURE_SRQ | QRDMA_FEATURE_FAST_REG),
             QRDMA_FEATURE_SRQ | QRDMA_FEATURE_FAST_REG);
    CHECK_EQ(f & (QRDMA_FEATURE_MW | QRDMA_FEATURE_STATS), 0);
    qrdma_core_fini(&SA->core);
}

/* ADD_GID of gid at index on side s; its status qword. */
static uint64_t add_gid(struct side *s, unsigned index, const uint8_t gid[16])
{
    uint64_t lo = 0, hi = 0;
    int i;

    for (i = 7; i >= 0; i--) {
        lo = lo << 8 | gid[i];
        hi = hi << 8 | gid[8 + i];
    }
    return cqp(s, QRDMA_CQP_OP_ADD_GID, index | QRDMA_GID_TYPE_ROCE_V2_IPV4 << 8, lo, hi, 0,
               0, 0);
}

/* ::ffff:10.0.0.x, the mock's host GID at index x - 1. */
static void gid_v4(uint8_t gid[16], uint8_t x)
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    gid[12] = 10;
    gid[15] = x;
}

/*
 * The port's GIDs are the host's: CAP_FEATURES.HOST_GIDS, the host GIDs
 * in HOST_GID_COUNT and HOST_GID(i) as ADD_GID's bytes; an ADD_GID of any
 * other GID fails (INVALID_ARG minor NOT_HOST, a guest error naming it
 * and the host's); a host GID the host drops (GID_CHANGE) leaves the
 * registers and is refused in an address vector (CREATE_AH) from then on.
 */
static void test_host_gids(void)
{
    uint8_t g[16];

    verbs_setup();      /* host GID index 0: ::ffff:10.0.0.1, SA's GID 0 */
    CHECK(reg_r(SA, QRDMA_REG_CAP_FEATURES) & QRDMA_FEATURE_HOST_GIDS);
    CHECK(!(reg_r(SB, QRDMA_REG_CAP_FEATURES) & QRDMA_FEATURE_HOST_GIDS));
    CHECK_EQ(reg_r(SA, QRDMA_REG_HOST_GID_COUNT), 1);
    CHECK_EQ(reg_r(SA, QRDMA_REG_HOST_GID(0)), 0);
    CHECK_EQ(reg_r(SA, QRDMA_REG_HOST_GID(0) + 8), 0xffff0000u);
    CHECK_EQ(reg_r(SA, QRDMA_REG_HOST_GID(0) + 12), 0x0100000au);
    CHECK_EQ(reg_r(SA, QRDMA_REG_HOST_GID(1) + 12), 0);
    CHECK_EQ(reg_r(SB, QRDMA_REG_HOST_GID_COUNT), 0);

    /* A guest address the host lacks: refused, the table unchanged. */
    gid_v4(g, 9);
    add_gid(SA, 3, g);
    CHECK_EQ(major_of(last_status), QRDMA_CQP_ERR_INVALID_ARG);
    CHECK_EQ(last_status & QRDMA_CCQ_CQE_MINOR_MASK, QRDMA_ADD_GID_ERR_NOT_HOST);
    CHECK(logged(SA, "ADD_GID: index 3: ::ffff:10.0.0.9 is not a GID of the host port"));
    CHECK(logged(SA, "::ffff:10.0.0.1 (host index 0)"));
    CHECK(!SA->core.gids[3].valid);
    log_clear(SA);
    /* The host's own, at another guest index: taken. */
    gid_v4(g, 1);
    CQP_OK(add_gid(SA, 3, g));
    CHECK(SA->core.gids[3].valid);
    /* sw: any address */
    gid_v4(g, 9);
    CQP_OK(add_gid(SB, 3, g));
    no_errors(SA);

    /* An AH from the host's GID: made. */
    write_av(SA, AV_BUF, SB);
    CQP_OK(cqp(SA, QRDMA_CQP_OP_CREATE_AH, 1 | (uint64_t)PD << 32, AV_BUF, 0, 0, 0, 0));
    /* The host drops the address: after its event the device has no host GID... */
    vmock.gid_gone[0] = true;
    verbs_mock_async_push(IBV_EVENT_GID_CHANGE, NULL);
    CHECK(wait_fd_ready());
    run_dp();
    CHECK_EQ(reg_r(SA, QRDMA_REG_HOST_GID_COUNT), 0);
    CHECK_EQ(reg_r(SA, QRDMA_REG_HOST_GID(0) + 12), 0);
    /* ... and an address vector from it is refused with the reason. */
    cqp(SA, QRDMA_CQP_OP_CREATE_AH, 2 | (uint64_t)PD << 32, AV_BUF, 0, 0, 0, 0);
    CHECK_EQ(major_of(last_status), QRDMA_CQP_ERR_INFO);
    CHECK_EQ(last_status & QRDMA_CCQ_CQE_MINOR_MASK, offsetof(struct qrdma_av, sgid_index));
    CHECK(logged(SA, "SGID 0 (::ffff:10.0.0.1) is not a GID of the host port any more"));
    qrdma_core_fini(&SA->core);
}

/*
 * The port follows the host's: PORT_STATUS is the host port's state
 * (the bed's netdev link is always up), PORT_SPEED the host's speed, both
 * read at reset and after the host's PORT_ERR / PORT_ACTIVE events; the
 * driver polls PORT_STATUS and raises the guest's port events from it.
 */
static void test_port_follows_host(void)
{
    verbs_setup();
    CHECK_EQ(reg_r(SA, QRDMA_REG_PORT_STATUS), QRDMA_PORT_STATUS_LINK_UP);
    /* the mock's speed unknown: the link-speed property's */
    CHECK_EQ(reg_r(SA, QRDMA_REG_PORT_SPEED), 100000);

    vmock.port_state = IBV_PORT_DOWN;
    verbs_mock_async_push(IBV_EVENT_PORT_ERR, NULL);
    CHECK_EQ(reg_r(SA, QRDMA_REG_PORT_STATUS), QRDMA_PORT_STATUS_LINK_UP);  /* not read yet */
    CHECK(wait_fd_ready());
    run_dp();
    CHECK_EQ(reg_r(SA, QRDMA_REG_PORT_STATUS), 0);
    CHECK_EQ(reg_r(SB, QRDMA_REG_PORT_STATUS), QRDMA_PORT_STATUS_LINK_UP);   /* sw: the netdev's */

    vmock.port_state = IBV_PORT_ACTIVE;
    vmock.active_speed = 32;            /* EDR, 1X: 25 Gb/s */
    vmock.active_width = 1;
    verbs_mock_async_push(IBV_EVENT_PORT_ACTIVE, NULL);
    CHECK(wait_fd_ready());
    run_dp();
    CHECK_EQ(reg_r(SA, QRDMA_REG_PORT_STATUS), QRDMA_PORT_STATUS_LINK_UP);
    CHECK_EQ(reg_r(SA, QRDMA_REG_PORT_SPEED), 25000);

    /* A device reset reads the port again. */
    vmock.port_state = IBV_PORT_DOWN;
    vmock.active_width = 2;             /* 4X */
    qrdma_core_reset(&SA->core);
    CHECK_EQ(reg_r(SA, QRDMA_REG_PORT_STATUS), 0);
    CHECK_EQ(reg_r(SA, QRDMA_REG_PORT_SPEED), 100000);
    CHECK_EQ(reg_r(SA, QRDMA_REG_HOST_GID_COUNT), 1);
    no_errors(SA);
    qrdma_core_fini(&SA->core);
}

/*
 * QP1: the verbs backend carries no GSI QP (its MADs would go to the
 * host's own connection manager), so CAP_FEATURES.GSI is clear and
 * CREATE_QP of the GSI QP fails at once with a guest error naming why:
 * no host QP is made, nothing waits.
 */
static void test_gsi_refused(void)
{
    struct qp_spec gsi = rc_spec;
    unsigned qps;

    verbs_setup();
    CHECK(!(reg_r(SA, QRDMA_REG_CAP_FEATURES) & QRDMA_FEATURE_GSI));
    CHECK(reg_r(SB, QRDMA_REG_CAP_FEATURES) & QRDMA_FEATURE_GSI);
    gsi.type = QRDMA_QP_TYPE_UD;
    gsi.flags = QRDMA_QP_CREATE_GSI;
    qps = vmock.nqps;
    CHECK_EQ(major_of(create_qp_status(SA, QRDMA_QP_GSI, &gsi)), QRDMA_CQP_ERR_INFO);
    CHECK_EQ(last_status & QRDMA_CCQ_CQE_MINOR_MASK,
             offsetof(struct qrdma_qp_create_info, flags));
    CHECK(logged(SA, "carries no GSI QP"));
    CHECK_EQ(vmock.nqps, qps);
    CHECK_EQ(reg_r(SA, QRDMA_REG_OBJ_COUNT_QP), 0);
    /* sw carries it */
    create_cq(SB, 1);
    create_cq(SB, 2);
    create_qp(SB, QRDMA_QP_GSI, &gsi);
    CHECK_EQ(reg_r(SB, QRDMA_REG_OBJ_COUNT_QP), 1);
    qrdma_core_fini(&SA->core);
}


/* ---- rdma_cm in verbs mode: the GSI QP and the CM proxy ------------------------------------ */

#define GSI_QKEY 0x80010000u
#define CM_RC_QP 4
#define CM_PEER_QPN 0x777

/* The peer: a CM proxy of its own on the model's second host, its "guest" this queue. */
static uint8_t peer_mads[8][VB_MAD_BYTES];
static unsigned peer_nmads;

static void peer_deliver(void *o, const uint8_t peer[16], const uint8_t local[16],
                         const uint8_t mad[VB_MAD_BYTES])
{
    if (peer_nmads < 8) {
        memcpy(peer_mads[peer_nmads++], mad, VB_MAD_BYTES);
    }
}

static void peer_error(void *o, const char *msg)
{
    fprintf(stderr, "  peer proxy: %s\n", msg);
    unit_failures++;
}

static uint64_t peer_now(void *o)
{
    return 0;
}

/* The GSI QP (QP 1) to RTS as ib_mad brings it up: no port, Q_Key 0x80010000. */
static void gsi_up(struct side *s)
{
    struct qp_spec gsi = ud_spec;

    gsi.flags = QRDMA_QP_CREATE_GSI;
    create_qp(s, QRDMA_QP_GSI, &gsi);
    CHECK_EQ(last_retval, 1);           /* QP 1 on the wire too */
    mod_begin(s, QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_QKEY, QRDMA_QPS_INIT);
    w32(s, MI(qkey), GSI_QKEY);
    CQP_OK(mod_run(s, QRDMA_QP_GSI));
    modify_state(s, QRDMA_QP_GSI, QRDMA_QPS_RTR);
    mod_begin(s, QRDMA_QP_ATTR_SQ_PSN, QRDMA_QPS_RTS);
    CQP_OK(mod_run(s, QRDMA_QP_GSI));
}

/* A MAD of 256 bytes at data offset off, sent on the GSI QP to QPN qpn through AH 1. */
static void gsi_send(struct side *s, uint64_t off, const struct vb_cm_msg *m, uint32_t qpn)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .ah = 1, .dest_qpn = qpn, .qkey = GSI_QKEY,
                     .nsge = 1, .sge = { { off, VB_MAD_BYTES, 0 } } };

    vb_cm_encode(m, dbuf(s, off));
    post_send(s, QRDMA_QP_GSI, &w);
    ring_sq(s, QRDMA_QP_GSI);
    run_dp();
}

/* The IPv4 header in a GRH room's last 20 bytes checks out (ib_core verifies it). */
static bool ipv4_ok(const uint8_t *ip)
{
    uint32_t sum = 0;

    for (int i = 0; i < 20; i += 2) {
        sum += (uint32_t)ip[i] << 8 | ip[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ip[0] == 0x45 && sum == 0xffff;
}

/*
 * With the CM proxy the device has a GSI QP in verbs mode (CAP_FEATURES.GSI):
 * a REQ the guest sends on QP 1 reaches the peer's CM through the host's
 * rdma_cm (here the model), with the guest RC QP's host QPN; the peer's
 * REP comes back as a receive on QP 1 (GRH, source QP 1, the MAD); the
 * guest QP's RTR receives from the PSN the host's CM told the peer; the
 * RTU goes through; MADs the proxy cannot carry are dropped with a guest
 * error; a device reset ends the host's rdma_cm IDs.
 */
static void test_gsi_cm_proxy(void)
{
    static const uint8_t gid_a[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 };
    static const uint8_t gid_b[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 };
    static const uint16_t port[] = { 7174 };
    struct cmm_world *w = cmm_world_new(7);
    struct cmm_host *host_a = cmm_host_new(w, "mock0", gid_a);
    struct cmm_host *host_b = cmm_host_new(w, "mock1", gid_b);
    struct vb_cm_env penv = { NULL, peer_deliver, peer_error, peer_now };
    struct vb_cm_config pcfg = { .ibdev = "mock1", .ibport = 1, .ngids = 1, .nlisten = 1 };
    struct vb_cm_msg req = { .attr = VB_CM_REQ }, m, rep = { .attr = VB_CM_REP };
    struct vb_cma_hdr h = { .ip_version = 4, .src_port = 40001 };
    char err[128];
    struct vm_qp *hq;
    struct vb_cm *peer;
    struct cqe e;
    uint32_t rc_qpn, psn_a;
    const uint8_t *grh;

    memcpy(pcfg.gid[0], gid_b, 16);
    memcpy(pcfg.listen, port, sizeof(port));
    peer_nmads = 0;
    peer = vb_cm_create(&cmm_ops, host_b, &penv, &pcfg, err, sizeof(err));
    CHECK(peer != NULL);
    /*
     * The guest's host has an fd, readable while it has events, as
     * rdma_cm's channel: the backend reads the proxy's events only when
     * its epoll says that fd is (fds_ready), so the REP below arrives
     * only if that works.
     */
    cmm_host_use_fd(host_a);
    setup_cm_host = host_a;
    verbs_setup();
    setup_cm_host = NULL;
    CHECK(reg_r(SA, QRDMA_REG_CAP_FEATURES) & QRDMA_FEATURE_GSI);
    gsi_up(SA);
    create_qp(SA, CM_RC_QP, &rc_spec);
    rc_qpn = (uint32_t)last_retval;
    write_av_to(SA, AV_BUF, gid_b, NULL);
    CQP_OK(cqp(SA, QRDMA_CQP_OP_CREATE_AH, 1 | (uint64_t)PD << QRDMA_AH_ARG0_PD_SHIFT, AV_BUF,
               0, 0, 0, 0));
    memset(dbuf(SA, 0x6000), 0xee, 1024);
    post_recv(SA, QRDMA_QP_GSI, 0x6000, 40 + VB_MAD_BYTES);
    ring_rq(SA, QRDMA_QP_GSI);

    /* The guest's REQ, as its kernel's ib_cm and rdma_cm make it. */
    req.tid = 0x1234;
    req.local_comm_id = 0xc0ffee;
    req.service_id = VB_CMA_SID_TCP | 7174;
    req.qpn = rc_qpn;
    req.starting_psn = 0x123;
    req.responder_resources = req.initiator_depth = 4;
    req.transport_type = VB_CM_TRANSPORT_RC;
    req.retry_count = req.rnr_retry_count = 7;
    req.path_mtu = 3;
    memcpy(req.primary.local_gid, gid_a, 16);
    memcpy(req.primary.remote_gid, gid_b, 16);
    memcpy(h.src, gid_a, 16);
    memcpy(h.dst, gid_b, 16);
    vb_cma_hdr_put(&h, req.pdata);
    memcpy(req.pdata + VB_CMA_HDR_BYTES, "guest-a", 8);
    gsi_send(SA, 0x1000, &req, 1);
    EXPECT_CQE(SA, 1, QRDMA_QP_GSI, 0, QRDMA_BE_WC_SEND, QRDMA_BE_WC_SUCCESS, QRDMA_CQE_FLAG_SQ,
               ~0u);
    vb_cm_poll(peer);
    CHECK_EQ(peer_nmads, 1);
    CHECK_EQ(vb_cm_decode(peer_mads[0], VB_MAD_BYTES, &m), 0);
    CHECK_EQ(m.attr, VB_CM_REQ);
    CHECK_EQ(m.qpn, rc_qpn);            /* the host QPN the guest was given */
    CHECK(!memcmp(m.pdata + VB_CMA_HDR_BYTES, "guest-a", 8));

    /* The peer accepts: its REP reaches the guest's GSI QP. */
    rep.local_comm_id = 0xbeef;
    rep.remote_comm_id = m.local_comm_id;
    rep.qpn = CM_PEER_QPN;
    rep.responder_resources = rep.initiator_depth = 4;
    memcpy(rep.pdata, "peer-b", 7);
    peer_nmads = 0;
    {
        uint8_t mad[VB_MAD_BYTES];

        vb_cm_encode(&rep, mad);
        vb_cm_guest_mad(peer, gid_b, gid_a, mad, sizeof(mad));
    }
    run_dp();
    CHECK(poll_cq(SA, 2, &e));
    CHECK_EQ(e.qp, QRDMA_QP_GSI);
    CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
    CHECK_EQ(e.opcode, QRDMA_BE_WC_RECV);
    CHECK_EQ(e.byte_len, 40 + VB_MAD_BYTES);
    CHECK_EQ(e.src_qp, 1);
    CHECK_EQ(e.flags & QRDMA_CQE_FLAG_GRH, QRDMA_CQE_FLAG_GRH);
    grh = dbuf(SA, 0x6000);
    CHECK(!memcmp(grh, (uint8_t[20]){ 0 }, 20));
    CHECK(ipv4_ok(grh + 20));
    CHECK_EQ(grh[29], 17);
    CHECK(!memcmp(grh + 32, gid_b + 12, 4));    /* from the peer */
    CHECK(!memcmp(grh + 36, gid_a + 12, 4));    /* to the guest */
    CHECK_EQ(grh[40 + VB_MAD_BYTES], 0xee);
    CHECK_EQ(vb_cm_decode(grh + 40, VB_MAD_BYTES, &m), 0);
    CHECK_EQ(m.attr, VB_CM_REP);
    CHECK_EQ(m.remote_comm_id, 0xc0ffee);
    CHECK_EQ(m.tid, 0x1234);
    CHECK_EQ(m.qpn, CM_PEER_QPN);
    CHECK(!memcmp(m.pdata, "peer-b", 7));

    /*
     * The guest's QP to RTR/RTS with what the REP said: the host QP receives
     * from the PSN SA's host told the peer, not the guest's 0x123.
     */
    CHECK(cmm_host_psn(host_a, rc_qpn, &psn_a));
    rc_connect(SA, CM_RC_QP, gid_b, NULL, CM_PEER_QPN, 0x123, m.starting_psn, 7, 3);
    hq = verbs_mock_qp(rc_qpn);
    CHECK(hq != NULL);
    if (hq) {
        CHECK_EQ(hq->attr[1].qp_state, IBV_QPS_RTR);
        CHECK_EQ(hq->attr[1].dest_qp_num, CM_PEER_QPN);
        CHECK_EQ(hq->attr[1].rq_psn, psn_a);
        CHECK(psn_a != 0x123);
        CHECK_EQ(hq->attr[2].sq_psn, m.starting_psn);
    }

    /* The RTU: the peer's CM sees the connection established. */
    memset(&m, 0, sizeof(m));
    m.attr = VB_CM_RTU;
    m.local_comm_id = 0xc0ffee;
    CHECK_EQ(vb_cm_decode(grh + 40, VB_MAD_BYTES, &rep), 0);
    m.remote_comm_id = rep.local_comm_id;
    gsi_send(SA, 0x1400, &m, 1);
    vb_cm_poll(peer);
    CHECK_EQ(peer_nmads, 1);
    CHECK_EQ(vb_cm_decode(peer_mads[0], VB_MAD_BYTES, &m), 0);
    CHECK_EQ(m.attr, VB_CM_RTU);
    CHECK_EQ(m.remote_comm_id, 0xbeef);
    CHECK_EQ(cmm_host_ids(host_a), 1);
    no_errors(SA);

    /* What the proxy cannot carry: dropped, said, the send still completes. */
    gsi_send(SA, 0x1800, &m, 5);
    CHECK(logged(SA, "a MAD to QPN 5 dropped"));
    memset(dbuf(SA, 0x1c00), 0, VB_MAD_BYTES);
    {
        struct wqe wq = { .op = QRDMA_SQ_OP_SEND, .ah = 1, .dest_qpn = 1, .qkey = GSI_QKEY,
                          .nsge = 1, .sge = { { 0x1c00, VB_MAD_BYTES, 0 } } };

        dbuf(SA, 0x1c00)[0] = 1;
        dbuf(SA, 0x1c00)[1] = 0x04;     /* performance management */
        dbuf(SA, 0x1c00)[2] = 1;
        post_send(SA, QRDMA_QP_GSI, &wq);
        ring_sq(SA, QRDMA_QP_GSI);
        run_dp();
    }
    CHECK(logged(SA, "only connection management"));
    EXPECT_CQE(SA, 1, QRDMA_QP_GSI, 1, QRDMA_BE_WC_SEND, QRDMA_BE_WC_SUCCESS,
               QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QRDMA_QP_GSI, 2, QRDMA_BE_WC_SEND, QRDMA_BE_WC_SUCCESS,
               QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QRDMA_QP_GSI, 3, QRDMA_BE_WC_SEND, QRDMA_BE_WC_SUCCESS,
               QRDMA_CQE_FLAG_SQ, ~0u);

    /* A device reset ends the proxied connection: no host rdma_cm ID is left. */
    reg_w(SA, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    CHECK_EQ(cmm_host_ids(host_a), 0);
    CHECK_EQ(vmock.live_qp, 0);
    qrdma_core_fini(&SA->core);
    vb_cm_destroy(peer);
    cmm_world_free(w);
}

#define SRQ_ID  1
#define SRQ_QP  4

/* One SRQ WQE into the bed's SRQ ring (4 WQEs of 32 bytes), and the shadow's posted count. */
static uint32_t post_srq(struct side *s, uint64_t off, uint32_t len, uint32_t lkey)
{
    const struct sge sge = { off, len, lkey };
    uint32_t n = s->srq_posted++;
    uint32_t index = n & ((1u << s->srq_log2) - 1);

    write_rq_wqe(s, SRQ_RING + ((uint64_t)index << s->srq_stride_log2),
                 !((n >> s->srq_log2) & 1), 1, &sge, 0);
    w64(s, SRQ_SHADOW, s->srq_posted);
    return index;
}

/*
 * An SRQ through the device core on the verbs backend: CREATE_SRQ makes a
 * host SRQ; the guest's SRQ WQEs (no doorbell) reach it with host lkeys
 * when the data path runs; a QP of the SRQ is a host QP on it; a host
 * receive completion becomes a CQE with the SRQ flag and the SRQ WQE's
 * index; MODIFY_SRQ arms the host's limit and the host's limit event
 * becomes AEQE SRQ_LIMIT, once; a WQE with a bad lkey raises SRQ_ERROR;
 * host ENOMEM at CREATE_SRQ is NO_RESOURCE; DESTROY_SRQ and reset release it.
 */
static void test_srq(void)
{
    const uint64_t srq_arg0 = SRQ_ID | 2ull << QRDMA_SRQ_ARG0_SIZE_SHIFT |
                              5ull << QRDMA_SRQ_ARG0_WQE_SHIFT;
    struct qp_spec spec = rc_spec;
    struct vm_srq *h;
    struct vm_qp *hq;
    struct ibv_wc wc;
    struct cqe e;
    uint32_t qpn;

    verbs_setup();
    vmock.fail_create_srq = ENOMEM;
    last_status = cqp(SA, QRDMA_CQP_OP_CREATE_SRQ, srq_arg0, PD, SRQ_RING, SRQ_SHADOW, 0x5e0, 0);
    CHECK_EQ(major_of(last_status), QRDMA_CQP_ERR_NO_RESOURCE);
    CHECK_EQ(reg_r(SA, QRDMA_REG_OBJ_COUNT_SRQ), 0);
    CHECK(qrdma_srq_get(&SA->core, SRQ_ID) == NULL);
    log_clear(SA);
    CQP_OK(cqp(SA, QRDMA_CQP_OP_CREATE_SRQ, srq_arg0, PD, SRQ_RING, SRQ_SHADOW, 0x5e0, 0));
    SA->srq_log2 = 2;
    SA->srq_stride_log2 = 5;
    CHECK_EQ(vmock.live_srq, 1);
    h = vmock.srqs[vmock.nsrqs - 1];
    CHECK_EQ(h->init.attr.max_wr, 4);
    spec.flags = QRDMA_QP_CREATE_SRQ;
    spec.srq = SRQ_ID;
    create_qp(SA, SRQ_QP, &spec);
    qpn = (uint32_t)last_retval;
    hq = verbs_mock_qp(qpn);
    CHECK(hq != NULL);
    if (!hq) {
        return;
    }
    CHECK(hq->init.srq == &h->srq);
    rc_to_rts(SA, SRQ_QP, SB, 0x5a5a5, 7);

    /* Three WQEs, no doorbell: the next data-path run takes them onto the host SRQ. */
    post_srq(SA, 0x4000, 1024, 0);
    post_srq(SA, 0x5000, 1024, 0);
    post_srq(SA, 0x6000, 1024, 0);
    run_dp();
    CHECK_EQ(h->nrecv, 3);
    CHECK_EQ(h->recv_sge[2][0].addr, IOVA + 0x6000);
    CHECK_EQ(h->recv_sge[2][0].length, 1024);
    CHECK_EQ(h->recv_sge[2][0].lkey, vmock.mrs[0]->mr.lkey);
    /* The limit: armed on the host now that the host holds the WQEs. */
    CQP_OK(cqp(SA, QRDMA_CQP_OP_MODIFY_SRQ, SRQ_ID, 2ull << QRDMA_SRQ_ARG1_LIMIT_SHIFT, 0, 0, 0,
               0));
    CHECK_EQ(h->limit, 2);

    /* The host completes the second SRQ WQE on the QP: a CQE with the SRQ's index. */
    memset(&wc, 0, sizeof(wc));
    wc.wr_id = h->recv[1].wr_id;
    wc.opcode = IBV_WC_RECV;
    wc.byte_len = 600;
    wc.qp_num = qpn;
    verbs_mock_cq_push(hq->qp.recv_cq, &wc);
    verbs_mock_async_push(IBV_EVENT_SRQ_LIMIT_REACHED, &h->srq);
    CHECK(wait_fd_ready());
    run_dp();
    CHECK(poll_cq(SA, 2, &e));
    CHECK_EQ(e.qp, SRQ_QP);
    CHECK_EQ(e.wqe_index, 1);
    CHECK_EQ(e.opcode, QRDMA_BE_WC_RECV);
    CHECK_EQ(e.byte_len, 600);
    CHECK(e.flags & QRDMA_CQE_FLAG_SRQ);
    CHECK(aeq_has(SA, QRDMA_AE_SRQ_LIMIT, SRQ_ID, QRDMA_AE_SRC_SRQ, 0x5e0));
    CHECK_EQ(SA->core.obj.srq[SRQ_ID].limit, 0);        /* disarmed, as IB says */
    /* Once per arming: a second host event raises nothing. */
    verbs_mock_async_push(IBV_EVENT_SRQ_LIMIT_REACHED, &h->srq);
    run_dp();
    CHECK(!aeq_has(SA, QRDMA_AE_SRQ_LIMIT, SRQ_ID, QRDMA_AE_SRC_SRQ, 0x5e0));
    no_errors(SA);

    /* A WQE with a bad lkey: SRQ_ERROR, and nothing made up reaches the host. */
    post_srq(SA, 0x7000, 64, MR_STAG ^ 1);
    run_dp();
    CHECK_EQ(h->nrecv, 3);
    CHECK(aeq_has(SA, QRDMA_AE_SRQ_ERROR, SRQ_ID, QRDMA_AE_SRC_SRQ, 0x5e0));

    /* DESTROY_QP then DESTROY_SRQ release the host's. */
    CQP_OK(cqp(SA, QRDMA_CQP_OP_DESTROY_QP, SRQ_QP, 0, 0, 0, 0, 0));
    CQP_OK(cqp(SA, QRDMA_CQP_OP_DESTROY_SRQ, SRQ_ID, 0, 0, 0, 0, 0));
    CHECK_EQ(vmock.live_srq, 0);
    CQP_OK(cqp(SA, QRDMA_CQP_OP_CREATE_SRQ, srq_arg0, PD, SRQ_RING, SRQ_SHADOW, 0x5e0, 0));
    CHECK_EQ(vmock.live_srq, 1);
    reg_w(SA, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    CHECK_EQ(vmock.live_srq, 0);
    qrdma_core_fini(&SA->core);
}

#define FR_INDEX    2
#define FR_FIRST    8               /* the MR's reserved PBLEs */

static uint64_t pble_addr(struct side *s, uint32_t i)
{
    return HMC_RAM + r64(s, FPM_BUF + 8 * (1 + QRDMA_HMC_PBLE)) + 8ull * i;
}

/* A FAST_REG WQE (one-level list at `first`, 4 KB pages); returns its index. */
static uint32_t post_fast_reg(struct side *s, uint32_t qp, uint32_t stag, uint32_t access,
                              uint64_t iova, uint64_t len, uint64_t first, uint64_t fbo)
{
    uint32_t n = s->qp[qp].sq_posted++;
    uint32_t index = n & ((1u << s->qp[qp].sq_log2) - 1);
    bool valid = !((n >> s->qp[qp].sq_log2) & 1);
    uint64_t a = SQ_RING(qp) + ((uint64_t)index << s->qp[qp].sq_stride_log2);

    memset(mem(s, a), 0, 56);
    w64(s, a + 0, iova);
    w64(s, a + 16, len);
    w64(s, a + 24, first);
    w64(s, a + 32, stag | (uint64_t)access << QRDMA_SQ_FR_ACCESS_SHIFT |
                   12ull << QRDMA_SQ_FR_PAGE_SHIFT | 1ull << QRDMA_SQ_FR_LEVELS_SHIFT);
    w64(s, a + 48, fbo);
    w64(s, a + 56, QRDMA_SQ_OP_FAST_REG | QRDMA_SQ_HDR_SIGNALED |
                   (valid ? QRDMA_SQ_HDR_VALID : 0));
    return index;
}

/* The host ran the k-th send WR of mock QP h: its completion, and the data path runs. */
static void host_ran(struct vm_qp *h, unsigned k, enum ibv_wc_opcode opcode)
{
    verbs_mock_send_done(h, h->send[k].wr_id, IBV_WC_SUCCESS, opcode);
    run_dp();
}

/*
 * Fast registration through the device core on the verbs backend:
 * ALLOC_STAG returns the host window's rkey with the STag's key byte; a
 * FAST_REG WQE over guest-physically contiguous pages at iova = their
 * address updates the core's MR (QUERY_STAG) and becomes a host bind of
 * the window with the new key byte, completing as a FAST_REG CQE;
 * LOCAL_INV by STag becomes the host's by the wire rkey and frees the
 * core's MR; a FAST_REG at an iova that is not its pages' guest-physical
 * address binds the window to a host MR of its own at that iova, released
 * once a later invalidation has run; a FAST_REG over scattered pages of a
 * RAM the host cannot alias (no fd) completes in error; a DEALLOC_STAG
 * frees the host window.
 */
static void test_fast_reg(void)
{
    const uint32_t fr_stag = FR_INDEX << QRDMA_STAG_INDEX_SHIFT | 0x20;
    const uint32_t fr_new = FR_INDEX << QRDMA_STAG_INDEX_SHIFT | 0x21;
    const uint64_t fr_iova = DATA + 0xc1000, other_iova = 0x7000000000ull;
    struct wqe inv = { .op = QRDMA_SQ_OP_LOCAL_INV, .imm = fr_new };
    struct vm_mr *own;
    uint32_t qpn, rkey, base;
    struct ibv_mw *mw;
    struct vm_qp *h;
    struct cqe e;
    uint8_t ctx[64];

    verbs_setup();
    CQP_OK(cqp(SA, QRDMA_CQP_OP_ALLOC_STAG, fr_stag,
               PD | (uint64_t)QRDMA_ACCESS_LOCAL_WRITE << QRDMA_MR_ARG1_ACCESS_SHIFT, 4, 0,
               FR_FIRST, 0));
    rkey = (uint32_t)last_retval;
    CHECK_EQ(vmock.live_mw, 1);
    mw = vmock.mws[0];
    base = mw->rkey & ~0xffu;
    CHECK_EQ(rkey, base | 0x20);
    w64(SA, pble_addr(SA, FR_FIRST + 0), fr_iova);
    w64(SA, pble_addr(SA, FR_FIRST + 1), fr_iova + 0x1000);

    create_qp(SA, QPN, &rc_spec);
    qpn = (uint32_t)last_retval;
    h = verbs_mock_qp(qpn);
    if (!h) {
        CHECK(!"no host QP");
        return;
    }
    rc_to_rts(SA, QPN, SB, 0x5a5a5, 7);

    post_fast_reg(SA, QPN, fr_new, QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE,
                  fr_iova, 8192, FR_FIRST, 0);
    ring_sq(SA, QPN);
    run_dp();
    CHECK_EQ(h->nsend, 1);
    CHECK_EQ(h->send[0].opcode, IBV_WR_BIND_MW);
    CHECK(h->send[0].bind_mw.mw == mw);
    CHECK_EQ(h->send[0].bind_mw.rkey, base | 0x21);
    CHECK_EQ(h->send[0].bind_mw.bind_info.addr, fr_iova);
    CHECK_EQ(h->send[0].bind_mw.bind_info.length, 8192);
    CHECK_EQ(h->send[0].bind_mw.bind_info.mw_access_flags, IBV_ACCESS_REMOTE_WRITE);
    CHECK(h->send[0].bind_mw.bind_info.mr->addr == SA->ram);    /* the whole-RAM MR */
    CQP_OK(cqp(SA, QRDMA_CQP_OP_QUERY_STAG, fr_new, INFO, 0, 0, 0, 0));
    memcpy(ctx, mem(SA, INFO), 64);
    CHECK_EQ(ctx[0] & 3, QRDMA_MR_STATE_VALID);
    CHECK_EQ(ctx[1], 0x21);
    host_ran(h, 0, IBV_WC_BIND_MW);
    EXPECT_CQE(SA, 1, QPN, 0, QRDMA_BE_WC_FAST_REG, QRDMA_BE_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);

    /* LOCAL_INV by the STag: the host's by the wire rkey; the core's MR is free again. */
    CHECK_EQ(post_send(SA, QPN, &inv), 1);
    ring_sq(SA, QPN);
    run_dp();
    CHECK_EQ(h->nsend, 2);
    CHECK_EQ(h->send[1].opcode, IBV_WR_LOCAL_INV);
    CHECK_EQ(h->send[1].invalidate_rkey, base | 0x21);
    CHECK_EQ(SA->core.obj.mr[FR_INDEX].state, QRDMA_MR_STATE_FREE);
    host_ran(h, 1, IBV_WC_LOCAL_INV);
    EXPECT_CQE(SA, 1, QPN, 1, QRDMA_BE_WC_LOCAL_INV, QRDMA_BE_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    no_errors(SA);

    /* Another iova: a host MR of its own over the same pages, at that iova. */
    post_fast_reg(SA, QPN, fr_stag, QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE,
                  other_iova, 8192, FR_FIRST, 0);
    ring_sq(SA, QPN);
    run_dp();
    CHECK_EQ(h->nsend, 3);
    own = verbs_mock_last_mr();
    CHECK(h->send[2].bind_mw.bind_info.mr == &own->mr);
    CHECK_EQ(h->send[2].bind_mw.bind_info.addr, other_iova);
    CHECK_EQ(own->iova, other_iova);
    CHECK(own->mr.addr == SA->ram + (fr_iova - RAM_BASE));
    CHECK_EQ(own->mr.length, 8192);
    own->bound_mw = mw;
    host_ran(h, 2, IBV_WC_BIND_MW);
    EXPECT_CQE(SA, 1, QPN, 2, QRDMA_BE_WC_FAST_REG, QRDMA_BE_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    inv.imm = fr_stag;
    CHECK_EQ(post_send(SA, QPN, &inv), 3);
    ring_sq(SA, QPN);
    run_dp();
    CHECK(verbs_mock_mr_live(own));     /* until the host has run the invalidation */
    own->bound_mw = NULL;
    host_ran(h, 3, IBV_WC_LOCAL_INV);
    EXPECT_CQE(SA, 1, QPN, 3, QRDMA_BE_WC_LOCAL_INV, QRDMA_BE_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!verbs_mock_mr_live(own));
    no_errors(SA);

    /*
     * Scattered pages of a RAM without an fd to alias them from: not
     * carried; the WQE completes in error, nothing reaches the host.
     */
    w64(SA, pble_addr(SA, FR_FIRST + 1), fr_iova + 0x3000);
    post_fast_reg(SA, QPN, fr_stag, QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE,
                  fr_iova, 8192, FR_FIRST, 0);
    ring_sq(SA, QPN);
    run_dp();
    CHECK_EQ(h->nsend, 4);
    CHECK(poll_cq(SA, 1, &e));
    CHECK_EQ(e.wqe_index, 4);
    CHECK(e.status != QRDMA_BE_WC_SUCCESS);
    CHECK_EQ(vmock.dereg_busy, 0);

    CQP_OK(cqp(SA, QRDMA_CQP_OP_DEALLOC_STAG, fr_stag, 0, 0, 0, 0, 0));
    CHECK_EQ(vmock.live_mw, 0);
    qrdma_core_fini(&SA->core);
    CHECK_EQ(vmock.live_mr, 0);
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_end_to_end),
    UNIT_TEST(test_host_enomem),
    UNIT_TEST(test_features),
    UNIT_TEST(test_host_gids),
    UNIT_TEST(test_port_follows_host),
    UNIT_TEST(test_gsi_refused),
    UNIT_TEST(test_gsi_cm_proxy),
    UNIT_TEST(test_srq),
    UNIT_TEST(test_fast_reg),
};

int main(void)
{
    int ret = unit_run("verbs-core", tests, sizeof(tests) / sizeof(tests[0]));

    teardown();
    verbs_mock_reset();
    return ret;
}
