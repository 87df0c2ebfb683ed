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
#include "verbs_mock.h"

int unit_failures;

static struct qrdma_be_verbs_config vcfg;

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

/*
 * Fast registration through the device core on the verbs backend:
 * ALLOC_STAG returns the host window's rkey with the STag's key byte; a
 * FAST_REG WQE over guest-physically contiguous pages at iova = their
 * address updates the core's MR (QUERY_STAG) and becomes a host bind of
 * the window with the new key byte, completing as a FAST_REG CQE;
 * LOCAL_INV by STag becomes the host's by the wire rkey and frees the
 * core's MR; a FAST_REG over scattered pages completes in error; a
 * DEALLOC_STAG frees the host window.
 */
static void test_fast_reg(void)
{
    const uint32_t fr_stag = FR_INDEX << QRDMA_STAG_INDEX_SHIFT | 0x20;
    const uint32_t fr_new = FR_INDEX << QRDMA_STAG_INDEX_SHIFT | 0x21;
    const uint64_t fr_iova = DATA + 0xc1000;
    struct wqe inv = { .op = QRDMA_SQ_OP_LOCAL_INV, .imm = fr_new };
    uint32_t qpn, rkey, base;
    struct ibv_mw *mw;
    struct vm_qp *h;
    struct ibv_wc wc;
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
    memset(&wc, 0, sizeof(wc));
    wc.wr_id = h->send[0].wr_id;
    wc.opcode = IBV_WC_BIND_MW;
    verbs_mock_cq_push(h->qp.send_cq, &wc);
    run_dp();
    EXPECT_CQE(SA, 1, QPN, 0, QRDMA_BE_WC_FAST_REG, QRDMA_BE_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);

    /* LOCAL_INV by the STag: the host's by the wire rkey; the core's MR is free again. */
    CHECK_EQ(post_send(SA, QPN, &inv), 1);
    ring_sq(SA, QPN);
    run_dp();
    CHECK_EQ(h->nsend, 2);
    CHECK_EQ(h->send[1].opcode, IBV_WR_LOCAL_INV);
    CHECK_EQ(h->send[1].invalidate_rkey, base | 0x21);
    CHECK_EQ(SA->core.obj.mr[FR_INDEX].state, QRDMA_MR_STATE_FREE);
    wc.wr_id = h->send[1].wr_id;
    wc.opcode = IBV_WC_LOCAL_INV;
    verbs_mock_cq_push(h->qp.send_cq, &wc);
    run_dp();
    EXPECT_CQE(SA, 1, QPN, 1, QRDMA_BE_WC_LOCAL_INV, QRDMA_BE_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    no_errors(SA);

    /* Scattered pages: not carried; the WQE completes in error, nothing reaches the host. */
    w64(SA, pble_addr(SA, FR_FIRST + 1), fr_iova + 0x3000);
    post_fast_reg(SA, QPN, fr_stag, QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE,
                  fr_iova, 8192, FR_FIRST, 0);
    ring_sq(SA, QPN);
    run_dp();
    CHECK_EQ(h->nsend, 2);
    CHECK(poll_cq(SA, 1, &e));
    CHECK_EQ(e.wqe_index, 2);
    CHECK(e.status != QRDMA_BE_WC_SUCCESS);

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
