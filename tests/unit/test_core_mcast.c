/*
 * UD multicast (interface 0.10, docs/hw-spec.md section 16.1) on the
 * data-path test bed of dp_testbed.[ch]: two device cores back to back
 * over the software transport. A sends UD datagrams to a multicast group;
 * B has UD QPs attached to it with MCAST_ATTACH. Each rule has a case
 * that fails without it: the commands' status codes and log lines, the
 * group limits, the frame's multicast MAC and IP destination, the copy
 * every attached QP gets (a receive WQE each, the payload compared),
 * none for a detached QP or a wrong Q_Key, and the drops and counters.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/qrdma_core.h"
#include "dp_testbed.h"
#include "unit.h"

int unit_failures;

#define UDQP   3                    /* A's sender, B's first member */
#define UDQP2  4                    /* B's second member */
#define UDQP3  5                    /* B: attached, then detached */
#define RCQP   2
#define AH_ID  1
#define MC_QPN 0xffffffu

/* 239.1.1.1 as an IPv4-mapped GID, and its Ethernet address. */
static const uint8_t group[16] = { [10] = 0xff, [11] = 0xff, 239, 1, 1, 1 };
static const uint8_t group_mac[6] = { 0x01, 0x00, 0x5e, 0x01, 0x01, 0x01 };

static uint64_t attach(struct side *s, uint32_t qp, const uint8_t *gid)
{
    return cqp(s, QRDMA_CQP_OP_MCAST_ATTACH, qp, gid_word(gid), gid_word(gid + 8), 0, 0, 0);
}

static uint64_t detach(struct side *s, uint32_t qp, const uint8_t *gid)
{
    return cqp(s, QRDMA_CQP_OP_MCAST_DETACH, qp, gid_word(gid), gid_word(gid + 8), 0, 0, 0);
}

static unsigned minor_of(uint64_t st)
{
    return (unsigned)(st & QRDMA_CCQ_CQE_MINOR_MASK);
}

static struct qsw_stats sw_stats(struct side *s)
{
    struct qsw_stats st;

    qsw_engine_stats(qrdma_be_sw_engine(s->core.dp.be), &st);
    return st;
}

/*
 * A: UD QP 3 and an AH toward the group (the AV's DMAC is B's unicast
 * address on purpose: the device must use the group's). B: UD QPs 3, 4, 5
 * in RTS, RC QP 2 in RESET.
 */
static void mcast_setup(void)
{
    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq(SB, 2);
    create_qp(SA, UDQP, &ud_spec);
    ud_to_rts(SA, UDQP);
    create_qp(SB, UDQP, &ud_spec);
    create_qp(SB, UDQP2, &ud_spec);
    create_qp(SB, UDQP3, &ud_spec);
    ud_to_rts(SB, UDQP);
    ud_to_rts(SB, UDQP2);
    ud_to_rts(SB, UDQP3);
    create_qp(SB, RCQP, &rc_spec);
    write_av(SA, AV_BUF, SB);
    memcpy(mem(SA, AV_BUF + offsetof(struct qrdma_av, dgid)), group, 16);
    CQP_OK(cqp(SA, QRDMA_CQP_OP_CREATE_AH, AH_ID | (uint64_t)PD << QRDMA_AH_ARG0_PD_SHIFT,
               AV_BUF, 0, 0, 0, 0));
}

/* One SEND of len bytes from A's data area at off to the group, Q_Key qkey, QPN qpn. */
static void send_to_group(uint64_t off, uint32_t len, uint32_t qkey, uint32_t qpn)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .ah = AH_ID, .dest_qpn = qpn, .qkey = qkey,
                     .nsge = 1, .sge = { { off, len, 0 } } };

    post_send(SA, UDQP, &w);
    ring_sq(SA, UDQP);
    pump();
}

static void test_mcast_caps(void)
{
    setup();
    CHECK(reg_r(SA, QRDMA_REG_CAP_FEATURES) & QRDMA_FEATURE_MCAST);
    CHECK_EQ(reg_r(SA, QRDMA_REG_CAP_MAX_MCAST_GRP), QRDMA_DEFAULT_MAX_MCAST_GRP);
    CHECK_EQ(reg_r(SA, QRDMA_REG_CAP_MAX_MCAST_QP_ATTACH), QRDMA_DEFAULT_MAX_MCAST_QP_ATTACH);

    /*
     * No room for a group (max_mcast_grp 0, which the bed reads as "the
     * default": set on the core, then a reset): no multicast, and the
     * commands are refused as unknown.
     */
    SA->core.cfg.max_mcast_grp = 0;
    qrdma_core_reset(&SA->core);
    side_bringup(SA);
    CHECK(!(reg_r(SA, QRDMA_REG_CAP_FEATURES) & QRDMA_FEATURE_MCAST));
    CHECK_EQ(reg_r(SA, QRDMA_REG_CAP_MAX_MCAST_GRP), 0);
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_qp(SA, UDQP, &ud_spec);
    CHECK_EQ(major_of(attach(SA, UDQP, group)), QRDMA_CQP_ERR_BAD_OPCODE);
    CHECK(logged(SA, "offers no multicast"));
}

static void test_mcast_commands(void)
{
    static const uint8_t unicast[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 };
    static const uint8_t group6[16] = { 0xff, 0x0e, [15] = 0x42 };
    uint64_t st;

    mcast_setup();
    log_clear(SB);

    /* Not a UD QP; a GID that is not multicast; no such QP; reserved bits of arg0. */
    st = attach(SB, RCQP, group);
    CHECK_EQ(major_of(st), QRDMA_CQP_ERR_INVALID_ARG);
    CHECK_EQ(minor_of(st), 0);
    CHECK(logged(SB, "MCAST_ATTACH: QP 2 is not a UD QP"));
    st = attach(SB, UDQP, unicast);
    CHECK_EQ(major_of(st), QRDMA_CQP_ERR_INVALID_ARG);
    CHECK_EQ(minor_of(st), 1);
    CHECK(logged(SB, "not a multicast address"));
    st = attach(SB, 9, group);
    CHECK_EQ(major_of(st), QRDMA_CQP_ERR_STATE);
    CHECK_EQ(minor_of(st), QRDMA_STATE_ERR_NOT_FOUND);
    st = cqp(SB, QRDMA_CQP_OP_MCAST_ATTACH, UDQP | 1ull << 40, gid_word(group),
             gid_word(group + 8), 0, 0, 0);
    CHECK_EQ(major_of(st), QRDMA_CQP_ERR_INVALID_ARG);
    CHECK_EQ(SB->core.mcast.ngrp, 0);

    /* Attach, twice; an IPv6 group too. */
    CQP_OK(attach(SB, UDQP, group));
    st = attach(SB, UDQP, group);
    CHECK_EQ(major_of(st), QRDMA_CQP_ERR_STATE);
    CHECK_EQ(minor_of(st), QRDMA_STATE_ERR_EXISTS);
    CHECK(logged(SB, "already attached"));
    CQP_OK(attach(SB, UDQP2, group));
    CQP_OK(attach(SB, UDQP, group6));
    CHECK_EQ(SB->core.mcast.ngrp, 2);
    CHECK_EQ(SB->core.mcast.grp[0].nqp, 2);

    /* Detach of a QP not attached, of a group nobody joined. */
    st = detach(SB, UDQP3, group);
    CHECK_EQ(major_of(st), QRDMA_CQP_ERR_STATE);
    CHECK_EQ(minor_of(st), QRDMA_STATE_ERR_NOT_FOUND);
    CHECK(logged(SB, "MCAST_DETACH: QP 5 is not attached"));
    st = detach(SB, UDQP, unicast);
    CHECK_EQ(major_of(st), QRDMA_CQP_ERR_INVALID_ARG);

    /* The last QP out takes the group with it; destroying a QP detaches it. */
    CQP_OK(detach(SB, UDQP, group6));
    CHECK_EQ(SB->core.mcast.ngrp, 1);
    CQP_OK(cqp(SB, QRDMA_CQP_OP_DESTROY_QP, UDQP2, 0, 0, 0, 0, 0));
    CHECK_EQ(SB->core.mcast.grp[0].nqp, 1);
    CHECK_EQ(SB->core.mcast.grp[0].qp_id[0], UDQP);
    CQP_OK(detach(SB, UDQP, group));
    CHECK_EQ(SB->core.mcast.ngrp, 0);
}

static void test_mcast_limits(void)
{
    uint8_t gid[16];
    uint64_t st, errors;
    unsigned i;

    dev_max_mcast_grp = 3;
    dev_max_mcast_qp_attach = 2;
    mcast_setup();
    dev_max_mcast_grp = dev_max_mcast_qp_attach = 0;
    CHECK_EQ(reg_r(SB, QRDMA_REG_CAP_MAX_MCAST_GRP), 3);
    CHECK_EQ(reg_r(SB, QRDMA_REG_CAP_MAX_MCAST_QP_ATTACH), 2);

    /* Three groups fit, a fourth does not: ENOMEM's status, logged and counted. */
    memcpy(gid, group, 16);
    for (i = 0; i < 3; i++) {
        gid[15] = (uint8_t)(10 + i);
        CQP_OK(attach(SB, UDQP, gid));
    }
    errors = reg_r(SB, QRDMA_REG_GUEST_ERRORS);
    gid[15] = 20;
    st = attach(SB, UDQP, gid);
    CHECK_EQ(major_of(st), QRDMA_CQP_ERR_NO_RESOURCE);
    CHECK_EQ(minor_of(st), QRDMA_RESOURCE_ERR_MCAST_GRP);
    CHECK(logged(SB, "CAP_MAX_MCAST_GRP"));
    /* Two lines: the command's reason, then the CQP's "failed: major minor". */
    CHECK_EQ(reg_r(SB, QRDMA_REG_GUEST_ERRORS), errors + 2);

    /* Two QPs per group fit, a third does not. */
    gid[15] = 10;
    CQP_OK(attach(SB, UDQP2, gid));
    st = attach(SB, UDQP3, gid);
    CHECK_EQ(major_of(st), QRDMA_CQP_ERR_NO_RESOURCE);
    CHECK_EQ(minor_of(st), QRDMA_RESOURCE_ERR_MCAST_QP_ATTACH);
    CHECK(logged(SB, "CAP_MAX_MCAST_QP_ATTACH"));
    CHECK_EQ(reg_r(SB, QRDMA_REG_GUEST_ERRORS), errors + 4);

    /* A group freed makes room again. */
    gid[15] = 11;
    CQP_OK(detach(SB, UDQP, gid));
    gid[15] = 20;
    CQP_OK(attach(SB, UDQP, gid));
    CHECK_EQ(SB->core.mcast.ngrp, 3);
}

/* The frames A sends, captured instead of delivered. */
static uint8_t cap_frame[2048];
static size_t cap_len;
static int cap_count;

static int capture(struct side *from, const uint8_t *frame, size_t len)
{
    if (len <= sizeof(cap_frame)) {
        memcpy(cap_frame, frame, len);
        cap_len = len;
    }
    cap_count++;
    return 0;
}

static void deliver_to_b(const uint8_t *frame, size_t len)
{
    qrdma_core_lan_receive(&SB->core, frame, len);
    pump();
}

static void test_mcast_frame(void)
{
    uint64_t dropped;
    uint8_t bad[2048];

    mcast_setup();
    CQP_OK(attach(SB, UDQP, group));
    fill(SA, 0x1000, 300, 3);
    post_recv(SB, UDQP, 0x6000, 40 + 1024);

    /* The frame: the group's MAC (not the AV's DMAC), the group's IP, QPN 0xffffff. */
    dp_tb_wire = capture;
    cap_count = 0;
    send_to_group(0x1000, 300, QKEY, MC_QPN);
    dp_tb_wire = NULL;
    CHECK_EQ(cap_count, 1);
    CHECK(!memcmp(cap_frame, group_mac, 6));
    CHECK(!memcmp(cap_frame + 6, SA->mac, 6));
    CHECK_EQ(cap_frame[12] << 8 | cap_frame[13], 0x0800);
    CHECK(!memcmp(cap_frame + 14 + 16, group + 12, 4));             /* IPv4 destination */
    CHECK_EQ(cap_frame[14 + 20 + 2] << 8 | cap_frame[14 + 20 + 3], 4791);
    CHECK_EQ(cap_frame[14 + 28] , 0x64);                              /* UD SEND_ONLY */
    CHECK_EQ((uint32_t)cap_frame[14 + 28 + 5] << 16 | cap_frame[14 + 28 + 6] << 8 |
             cap_frame[14 + 28 + 7], MC_QPN);
    EXPECT_CQE(SA, 1, UDQP, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);

    /* The same frame to another group address: not the group's filter entry, dropped. */
    memcpy(bad, cap_frame, cap_len);
    bad[5] = 0x02;
    dropped = SB->core.stats.mcast_rx_dropped;
    deliver_to_b(bad, cap_len);
    CHECK_EQ(SB->core.stats.mcast_rx_dropped, dropped + 1);
    expect_no_cqe(SB, 2);

    /* As sent, it reaches the attached QP. */
    deliver_to_b(cap_frame, cap_len);
    EXPECT_CQE(SB, 2, UDQP, 0, QSW_WC_RECV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_GRH, 40 + 300);
    CHECK(!memcmp(dbuf(SB, 0x6000 + 40), dbuf(SA, 0x1000), 300));
    CHECK(!memcmp(dbuf(SB, 0x6000 + 36), group + 12, 4));           /* GRH destination */
    CHECK_EQ(SB->core.stats.mcast_rx_dropped, dropped + 1);
    no_errors(SB);
}

static void test_mcast_delivery(void)
{
    struct qsw_stats st0, st1;
    struct cqe e;
    bool got3 = false, got4 = false;
    unsigned i;
    uint64_t dropped, oob, drops;

    mcast_setup();
    oob = port_stat(SB, QRDMA_STAT_OUT_OF_BUFFER);
    drops = port_stat(SB, QRDMA_STAT_RX_DROPS);
    CQP_OK(attach(SB, UDQP, group));
    CQP_OK(attach(SB, UDQP2, group));
    CQP_OK(attach(SB, UDQP3, group));
    CQP_OK(detach(SB, UDQP3, group));
    fill(SA, 0x1000, 700, 5);
    memset(dbuf(SB, 0x6000), 0xee, 0x3000);
    post_recv(SB, UDQP, 0x6000, 40 + 1024);
    post_recv(SB, UDQP2, 0x7000, 40 + 1024);
    post_recv(SB, UDQP3, 0x8000, 40 + 1024);

    /* Every attached QP gets a copy, the detached one none. */
    send_to_group(0x1000, 700, QKEY, MC_QPN);
    EXPECT_CQE(SA, 1, UDQP, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    for (i = 0; i < 2; i++) {
        CHECK(poll_cq(SB, 2, &e));
        CHECK_EQ(e.status, QSW_WC_SUCCESS);
        CHECK_EQ(e.opcode, QSW_WC_RECV);
        CHECK_EQ(e.byte_len, 40 + 700);
        CHECK_EQ(e.src_qp, UDQP);
        got3 |= e.qp == UDQP;
        got4 |= e.qp == UDQP2;
    }
    CHECK(got3 && got4);
    expect_no_cqe(SB, 2);
    CHECK(!memcmp(dbuf(SB, 0x6000 + 40), dbuf(SA, 0x1000), 700));
    CHECK(!memcmp(dbuf(SB, 0x7000 + 40), dbuf(SA, 0x1000), 700));
    CHECK_EQ(dbuf(SB, 0x8000)[0], 0xee);                            /* QP 5 untouched */

    /* Each copy took a receive WQE: with none left, the next datagram is lost to both. */
    st0 = sw_stats(SB);
    send_to_group(0x1000, 700, QKEY, MC_QPN);
    st1 = sw_stats(SB);
    CHECK_EQ(st1.drop_no_recv, st0.drop_no_recv + 2);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_OUT_OF_BUFFER), oob + 2);   /* out_of_buffer */
    CHECK_EQ(port_stat(SB, QRDMA_STAT_RX_DROPS), drops);
    expect_no_cqe(SB, 2);

    /* A wrong Q_Key: no copy, the receive WQEs stay for the next. */
    post_recv(SB, UDQP, 0x6000, 40 + 1024);
    post_recv(SB, UDQP2, 0x7000, 40 + 1024);
    st0 = sw_stats(SB);
    send_to_group(0x1000, 700, QKEY + 1, MC_QPN);
    st1 = sw_stats(SB);
    CHECK_EQ(st1.drop_qkey, st0.drop_qkey + 2);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_RX_DROPS), drops + 2);      /* rx_drops */
    expect_no_cqe(SB, 2);

    /* Not to the multicast QPN: dropped by the transport. */
    st0 = sw_stats(SB);
    send_to_group(0x1000, 700, QKEY, UDQP);
    st1 = sw_stats(SB);
    CHECK_EQ(st1.drop_mcast, st0.drop_mcast + 1);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_RX_DROPS), drops + 3);
    expect_no_cqe(SB, 2);

    /* The right one again: both WQEs (index 1 of each RQ) used now. */
    send_to_group(0x1000, 64, QKEY, MC_QPN);
    got3 = got4 = false;
    for (i = 0; i < 2; i++) {
        CHECK(poll_cq(SB, 2, &e));
        CHECK_EQ(e.status, QSW_WC_SUCCESS);
        CHECK_EQ(e.wqe_index, 1);
        CHECK_EQ(e.byte_len, 40 + 64);
        got3 |= e.qp == UDQP;
        got4 |= e.qp == UDQP2;
    }
    CHECK(got3 && got4);

    /* Nobody attached any more: the frame is dropped and counted, nothing completes. */
    CQP_OK(detach(SB, UDQP, group));
    CQP_OK(detach(SB, UDQP2, group));
    post_recv(SB, UDQP, 0x6000, 40 + 1024);
    dropped = SB->core.stats.mcast_rx_dropped;
    st0 = sw_stats(SB);
    send_to_group(0x1000, 64, QKEY, MC_QPN);
    st1 = sw_stats(SB);
    CHECK_EQ(SB->core.stats.mcast_rx_dropped, dropped + 1);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_RX_DROPS), drops + 4);      /* the device's drop */
    CHECK_EQ(port_stat(SB, QRDMA_STAT_OUT_OF_BUFFER), oob + 2);
    CHECK_EQ(st1.rx_frames, st0.rx_frames);
    expect_no_cqe(SB, 2);
    CHECK_EQ(reg_r(SB, QRDMA_REG_LAN_STAT_RX_FILTERED) + reg_r(SB, QRDMA_REG_LAN_STAT_RX_DROPPED),
             0);
    no_errors(SB);
}

/*
 * The groups move with the device (docs/migration.md): B saved with QPs 3
 * and 4 attached, a fresh core loaded from the stream, and a datagram to
 * the group reaches both, QP 5 (detached before the save) none; a detach
 * after the load finds the attachment.
 */
/*
 * Multicast to a group with QPs of the sending device attached loops back
 * to them, the sender's own QP included, as well as going to the wire; a
 * frame sent in pieces (zero-copy transmit, payloads of 1 KB and more) as
 * well as whole.
 */
static void mcast_loopback_sizes(void)
{
    static const uint32_t sizes[] = { 300, 1024 };     /* the UD path MTU */
    bool got_self = false, got_other = false;
    struct cqe e;
    uint64_t drops;
    unsigned k;

    mcast_setup();
    create_qp(SA, UDQP2, &ud_spec);
    ud_to_rts(SA, UDQP2);
    CQP_OK(attach(SA, UDQP2, group));
    CQP_OK(attach(SB, UDQP, group));
    for (k = 0; k < 2; k++) {
        uint32_t len = sizes[k];

        fill(SA, 0x1000, len, 7 + k);
        memset(dbuf(SA, 0x7000), 0xee, 0x1000);
        memset(dbuf(SB, 0x6000), 0xee, 0x1000);
        post_recv(SA, UDQP2, 0x7000, 40 + 2048);
        post_recv(SB, UDQP, 0x6000, 40 + 2048);
        send_to_group(0x1000, len, QKEY, MC_QPN);
        EXPECT_CQE(SA, 1, UDQP, k, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
        /* The other QP of the sending device, through the loopback... */
        EXPECT_CQE(SA, 2, UDQP2, k, QSW_WC_RECV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_GRH,
                   40 + len);
        CHECK(!memcmp(dbuf(SA, 0x7000 + 40), dbuf(SA, 0x1000), len));
        CHECK_EQ(dbuf(SA, 0x7000 + 40 + len)[0], 0xee);
        /* ...and the peer's, through the wire. */
        EXPECT_CQE(SB, 2, UDQP, k, QSW_WC_RECV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_GRH, 40 + len);
        CHECK(!memcmp(dbuf(SB, 0x6000 + 40), dbuf(SA, 0x1000), len));
        expect_no_cqe(SA, 2);
        expect_no_cqe(SB, 2);
    }

    /* The sender attached too: it gets its own datagram. */
    CQP_OK(attach(SA, UDQP, group));
    post_recv(SA, UDQP, 0x8000, 40 + 2048);
    post_recv(SA, UDQP2, 0x7000, 40 + 2048);
    post_recv(SB, UDQP, 0x6000, 40 + 2048);
    send_to_group(0x1000, 64, QKEY, MC_QPN);
    EXPECT_CQE(SA, 1, UDQP, 2, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    for (k = 0; k < 2; k++) {
        CHECK(poll_cq(SA, 2, &e));
        CHECK_EQ(e.status, QSW_WC_SUCCESS);
        CHECK_EQ(e.byte_len, 40 + 64);
        CHECK_EQ(e.src_qp, UDQP);
        got_self |= e.qp == UDQP;
        got_other |= e.qp == UDQP2;
    }
    CHECK(got_self && got_other);
    expect_no_cqe(SA, 2);
    CHECK(!memcmp(dbuf(SA, 0x8000 + 40), dbuf(SA, 0x1000), 64));
    CHECK(!memcmp(dbuf(SA, 0x7000 + 40), dbuf(SA, 0x1000), 64));
    EXPECT_CQE(SB, 2, UDQP, 2, QSW_WC_RECV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_GRH, 40 + 64);

    /* Nobody of A's attached: nothing loops back, and nothing is a drop. */
    CQP_OK(detach(SA, UDQP, group));
    CQP_OK(detach(SA, UDQP2, group));
    drops = port_stat(SA, QRDMA_STAT_RX_DROPS);
    post_recv(SB, UDQP, 0x6000, 40 + 2048);
    send_to_group(0x1000, 64, QKEY, MC_QPN);
    EXPECT_CQE(SA, 1, UDQP, 3, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, UDQP, 3, QSW_WC_RECV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_GRH, 40 + 64);
    expect_no_cqe(SA, 2);
    CHECK_EQ(port_stat(SA, QRDMA_STAT_RX_DROPS), drops);
    no_errors(SA);
    no_errors(SB);
}

static void test_mcast_loopback(void)
{
    mcast_loopback_sizes();
}

/* The same without zero-copy transmit: every frame whole. */
static void test_mcast_loopback_copy_tx(void)
{
    dp_tb_copy_tx = true;
    mcast_loopback_sizes();
    dp_tb_copy_tx = false;
}

static void test_mcast_migrates(void)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    char err[256] = "";
    struct cqe e;
    bool got3 = false, got4 = false;
    unsigned i;

    mcast_setup();
    CQP_OK(attach(SB, UDQP, group));
    CQP_OK(attach(SB, UDQP2, group));
    CQP_OK(attach(SB, UDQP3, group));
    CQP_OK(detach(SB, UDQP3, group));
    CHECK_EQ(qrdma_core_save(&SB->core, &buf, &len, err, sizeof(err)), 0);
    qrdma_core_fini(&SB->core);
    memset(&SB->core, 0, sizeof(SB->core));
    SB->kicks = 0;
    SB->timer = UINT64_MAX;
    side_core_init(SB);
    CHECK_EQ(qrdma_core_load(&SB->core, buf, len, err, sizeof(err)), 0);
    free(buf);
    CHECK_EQ(SB->core.mcast.ngrp, 1);

    fill(SA, 0x1000, 500, 9);
    post_recv(SB, UDQP, 0x6000, 40 + 1024);
    post_recv(SB, UDQP2, 0x7000, 40 + 1024);
    post_recv(SB, UDQP3, 0x8000, 40 + 1024);
    send_to_group(0x1000, 500, QKEY, MC_QPN);
    for (i = 0; i < 2; i++) {
        CHECK(poll_cq(SB, 2, &e));
        CHECK_EQ(e.status, QSW_WC_SUCCESS);
        CHECK_EQ(e.byte_len, 40 + 500);
        got3 |= e.qp == UDQP;
        got4 |= e.qp == UDQP2;
    }
    CHECK(got3 && got4);
    expect_no_cqe(SB, 2);
    CHECK(!memcmp(dbuf(SB, 0x7000 + 40), dbuf(SA, 0x1000), 500));
    CQP_OK(detach(SB, UDQP, group));
    no_errors(SB);
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_mcast_caps),
    UNIT_TEST(test_mcast_commands),
    UNIT_TEST(test_mcast_limits),
    UNIT_TEST(test_mcast_frame),
    UNIT_TEST(test_mcast_delivery),
    UNIT_TEST(test_mcast_loopback),
    UNIT_TEST(test_mcast_loopback_copy_tx),
    UNIT_TEST(test_mcast_migrates),
};

int main(void)
{
    int ret = unit_run("core-mcast", tests, sizeof(tests) / sizeof(tests[0]));

    teardown();
    return ret;
}
