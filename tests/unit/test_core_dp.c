/*
 * End-to-end tests of the device core's data path (qrdma_dp.c) with the
 * software RoCEv2 transport, no VM: two device cores in one process, each
 * with its own fake guest RAM and embedding, wired back to back, on the
 * test bed of dp_testbed.[ch] (which says how the sides are brought up,
 * how WQEs are posted and CQEs polled, and how frames and timers move).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/qrdma_core.h"
#include "dp_testbed.h"
#include "unit.h"

int unit_failures;

/* ---- SEND / RECV ------------------------------------------------------------------------ */

static void test_send_recv(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x1000, 2500, 0 } } };

    rc_pair();
    fill(SA, 0x1000, 2500, 1);
    memset(dbuf(SB, 0x8000), 0xee, 4096);
    CHECK_EQ(post_recv(SB, QPN, 0x8000, 4000), 0);
    CHECK_EQ(post_send(SA, QPN, &w), 0);
    /* Nothing moves before the doorbell. */
    pump();
    CHECK_EQ(SA->frames_sent, 0);
    ring_sq(SA, QPN);
    pump();

    CHECK(!memcmp(dbuf(SA, 0x1000), dbuf(SB, 0x8000), 2500));
    CHECK_EQ(*dbuf(SB, 0x8000 + 2500), 0xee);   /* nothing past the message */
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 2500);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SA, 1);
    expect_no_cqe(SA, 2);
    expect_no_cqe(SB, 1);
    expect_no_cqe(SB, 2);
    /* 2500 bytes at MTU 1024: three packets and at least one ACK. */
    CHECK(SA->frames_sent >= 3);
    CHECK(SB->frames_sent >= 1);
    CHECK_EQ(reg_r(SB, QRDMA_REG_LAN_STAT_ROCE_FRAMES), SA->frames_sent);
    CHECK_EQ(SA->core.dp.sq_wqes, 1);
    CHECK_EQ(SB->core.dp.rq_wqes, 1);
    CHECK_EQ(aeq_drain(SA), 0);
    CHECK_EQ(aeq_drain(SB), 0);
    no_errors(SA);
    no_errors(SB);
    /* Every timer was disarmed: nothing left in flight. */
    CHECK_EQ(SA->timer == UINT64_MAX || SA->core.dp.deadline == UINT64_MAX, 1);
}

/* More WQEs than the rings hold, over time: indexes wrap, VALID flips every lap. */
static void test_ring_wrap(void)
{
    unsigned round, k, total = 0;

    rc_pair();
    /* SQ and RQ of 8, CQs of 16: 60 messages are 7.5 SQ laps and 3.75 CQ laps. */
    for (round = 0; round < 20; round++) {
        uint32_t sidx[3], ridx[3];

        for (k = 0; k < 3; k++) {
            unsigned len = 1 + (total + k) * 37 % 3000;
            struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1,
                             .sge = { { 0x10000 * k, len, 0 } } };

            fill(SA, 0x10000 * k, len, total + k);
            ridx[k] = post_recv(SB, QPN, 0x40000 + 0x10000 * k, 4096);
            sidx[k] = post_send(SA, QPN, &w);
            CHECK_EQ(sidx[k], (total + k) % 8);
            CHECK_EQ(ridx[k], (total + k) % 8);
        }
        /* The slot after the last CQE still holds last lap's VALID. */
        ring_sq(SA, QPN);
        pump();
        for (k = 0; k < 3; k++) {
            unsigned len = 1 + (total + k) * 37 % 3000;
            uint32_t h = SB->cq[2].head;
            uint64_t raw = r64(SB, CQ_RING(2) + 32ull * (h % 16) + 24);

            /* VALID is 1 on even laps of the CQ, 0 on odd ones. */
            CHECK_EQ(!!(raw & QRDMA_CQE_VALID), !((h / 16) & 1));
            EXPECT_CQE(SB, 2, QPN, ridx[k], QSW_WC_RECV, QSW_WC_SUCCESS, 0, len);
            EXPECT_CQE(SA, 1, QPN, sidx[k], QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ,
                       ~0u);
            CHECK(!memcmp(dbuf(SA, 0x10000 * k), dbuf(SB, 0x40000 + 0x10000 * k), len));
        }
        expect_no_cqe(SA, 1);
        expect_no_cqe(SB, 2);
        total += 3;
    }
    CHECK_EQ(SB->cq[2].head, 60);
    CHECK_EQ(SA->qp[QPN].sq_posted, 60);
    no_errors(SA);
    no_errors(SB);
}

static void test_send_with_imm(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND_WITH_IMM, .imm = 0x78563412, .nsge = 1,
                     .sge = { { 0x100, 64, 0 } } };

    rc_pair();
    fill(SA, 0x100, 64, 3);
    post_recv(SB, QPN, 0x2000, 256);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    {
        struct cqe e;

        CHECK(poll_cq(SB, 2, &e));
        CHECK_EQ(e.opcode, QSW_WC_RECV);
        CHECK_EQ(e.status, QSW_WC_SUCCESS);
        CHECK_EQ(e.flags, QRDMA_CQE_FLAG_WITH_IMM);
        CHECK_EQ(e.imm, 0x78563412);
        CHECK_EQ(e.byte_len, 64);
        CHECK_EQ(e.wqe_index, 0);
    }
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x100), dbuf(SB, 0x2000), 64));
    no_errors(SA);
    no_errors(SB);
}

/* ---- RDMA ------------------------------------------------------------------------------ */

static void test_rdma_write(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x30010, .nsge = 1,
                     .sge = { { 0x5000, 3000, 0 } } };

    rc_pair();
    fill(SA, 0x5000, 3000, 9);
    memset(dbuf(SB, 0x30000), 0xcc, 0x2000);
    post_recv(SB, QPN, 0x8000, 4096);      /* must stay unused */
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x5000), dbuf(SB, 0x30010), 3000));
    CHECK_EQ(*dbuf(SB, 0x3000f), 0xcc);
    CHECK_EQ(*dbuf(SB, 0x30010 + 3000), 0xcc);
    expect_no_cqe(SB, 2);
    CHECK_EQ(SB->core.dp.rq_wqes, 0);
    CHECK_EQ(SB->core.obj.qp[QPN].rq_head, 0);
    no_errors(SA);
    no_errors(SB);
}

static void test_rdma_write_with_imm(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE_WITH_IMM, .remote_off = 0x30000,
                     .imm = 0xdeadbeef, .nsge = 1, .sge = { { 0x5000, 1500, 0 } } };
    struct cqe e;

    rc_pair();
    fill(SA, 0x5000, 1500, 4);
    memset(dbuf(SB, 0x8000), 0xcc, 64);
    post_recv(SB, QPN, 0x8000, 64);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x5000), dbuf(SB, 0x30000), 1500));
    /* The receive WQE is consumed, its buffer untouched. */
    CHECK(poll_cq(SB, 2, &e));
    CHECK_EQ(e.opcode, QSW_WC_RECV_RDMA_WITH_IMM);
    CHECK_EQ(e.status, QSW_WC_SUCCESS);
    CHECK_EQ(e.flags, QRDMA_CQE_FLAG_WITH_IMM);
    CHECK_EQ(e.imm, 0xdeadbeef);
    CHECK_EQ(e.byte_len, 1500);
    CHECK_EQ(e.wqe_index, 0);
    CHECK_EQ(e.qp, QPN);
    CHECK_EQ(*dbuf(SB, 0x8000), 0xcc);
    CHECK_EQ(SB->core.dp.rq_wqes, 1);
    no_errors(SA);
    no_errors(SB);
}

static void test_rdma_read(void)
{
    /* 2500 bytes from B, scattered over two local SGEs of A. */
    struct wqe w = { .op = QRDMA_SQ_OP_RDMA_READ, .remote_off = 0x20000, .nsge = 2,
                     .sge = { { 0x6000, 1000, 0 }, { 0x9000, 1500, 0 } } };

    rc_pair();
    fill(SB, 0x20000, 2500, 5);
    memset(dbuf(SA, 0x6000), 0, 0x4000);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_READ, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x6000), dbuf(SB, 0x20000), 1000));
    CHECK(!memcmp(dbuf(SA, 0x9000), dbuf(SB, 0x20000 + 1000), 1500));
    CHECK_EQ(*dbuf(SA, 0x6000 + 1000), 0);
    CHECK_EQ(*dbuf(SA, 0x9000 + 1500), 0);
    expect_no_cqe(SB, 1);
    expect_no_cqe(SB, 2);
    no_errors(SA);
    no_errors(SB);
}

static uint64_t ld64_at(struct side *s, uint64_t off)
{
    return r64(s, DATA + off);
}

static void test_atomics(void)
{
    struct wqe fa = { .op = QRDMA_SQ_OP_ATOMIC_FETCH_AND_ADD, .remote_off = 0x40008,
                      .compare_add = 5, .nsge = 1, .sge = { { 0x100, 8, 0 } } };
    struct wqe cs = { .op = QRDMA_SQ_OP_ATOMIC_CMP_AND_SWP, .remote_off = 0x40008,
                      .compare_add = 0x1000000000000069ull, .swap = 0x7777,
                      .nsge = 1, .sge = { { 0x108, 8, 0 } } };
    struct wqe miss = cs;

    rc_pair();
    w64(SB, DATA + 0x40000, 0x1111);
    w64(SB, DATA + 0x40008, 0x1000000000000064ull);
    w64(SB, DATA + 0x40010, 0x2222);
    miss.compare_add = 1;
    miss.swap = 9;
    miss.sge[0].off = 0x110;
    post_send(SA, QPN, &fa);
    post_send(SA, QPN, &cs);
    post_send(SA, QPN, &miss);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_FETCH_ADD, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_COMP_SWAP, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 2, QSW_WC_COMP_SWAP, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    /* The original values land in the local buffers. */
    CHECK_EQ(ld64_at(SA, 0x100), 0x1000000000000064ull);
    CHECK_EQ(ld64_at(SA, 0x108), 0x1000000000000069ull);
    CHECK_EQ(ld64_at(SA, 0x110), 0x7777);
    /* The remote qword: +5, then swapped, then left alone; its neighbours untouched. */
    CHECK_EQ(ld64_at(SB, 0x40008), 0x7777);
    CHECK_EQ(ld64_at(SB, 0x40000), 0x1111);
    CHECK_EQ(ld64_at(SB, 0x40010), 0x2222);
    expect_no_cqe(SB, 2);
    no_errors(SA);
    no_errors(SB);
}

/* ---- WQE forms ---------------------------------------------------------------------- */

static void test_inline(void)
{
    uint8_t data[192];
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .inl = data, .inl_len = sizeof(data) };
    unsigned i;

    for (i = 0; i < sizeof(data); i++) {
        data[i] = (uint8_t)(0x5a ^ i * 3);
    }
    rc_pair();
    post_recv(SB, QPN, 0x3000, 1024);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, sizeof(data));
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SB, 0x3000), data, sizeof(data)));
    no_errors(SA);
    no_errors(SB);
}

static void test_multi_sge(void)
{
    /* Gather 100 + 0 + 700 + 300 + 12 bytes, scatter into 500 + 0 + 800. */
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 5,
                     .sge = { { 0x1000, 100, 0 }, { 0x1800, 0, 0 }, { 0x2000, 700, 0 },
                              { 0x3000, 300, 0 }, { 0x3800, 12, 0 } } };
    const struct sge rsge[3] = { { 0x10000, 500, 0 }, { 0x11000, 0, 0 }, { 0x12000, 800, 0 } };
    uint8_t expect[1112];

    rc_pair();
    fill(SA, 0x1000, 100, 1);
    fill(SA, 0x2000, 700, 2);
    fill(SA, 0x3000, 300, 3);
    fill(SA, 0x3800, 12, 4);
    memcpy(expect, dbuf(SA, 0x1000), 100);
    memcpy(expect + 100, dbuf(SA, 0x2000), 700);
    memcpy(expect + 800, dbuf(SA, 0x3000), 300);
    memcpy(expect + 1100, dbuf(SA, 0x3800), 12);
    memset(dbuf(SB, 0x10000), 0xab, 0x3000);
    post_recv_n(SB, QPN, 3, rsge);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, sizeof(expect));
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SB, 0x10000), expect, 500));
    CHECK(!memcmp(dbuf(SB, 0x12000), expect + 500, 612));
    CHECK_EQ(*dbuf(SB, 0x11000), 0xab);
    CHECK_EQ(*dbuf(SB, 0x12000 + 612), 0xab);
    no_errors(SA);
    no_errors(SB);
}

/*
 * Zero-copy transmit (env.dma_map_read, env.send_frame_iov): a gathered
 * SEND and a multi-packet WRITE leave A as frames in pieces whose payload
 * is mapped guest memory, every mapping given back; B's engine takes them
 * (no ICRC drop, no retransmission) and the data is what A holds. With
 * the map refused, and with an embedding that has no zero-copy at all,
 * the same work goes by copy.
 */
static void zc_write_and_send(void)
{
    struct wqe send = { .op = QRDMA_SQ_OP_SEND, .nsge = 3,
                        .sge = { { 0x1001, 999, 0 }, { 0x2000, 3000, 0 }, { 0x3801, 7, 0 } } };
    struct wqe write = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x30001, .nsge = 1,
                         .sge = { { 0x5003, 9000, 0 } } };
    struct qsw_stats st;
    uint8_t expect[4006];

    fill(SA, 0x1000, 0x3000, 11);
    fill(SA, 0x5000, 9100, 12);
    memcpy(expect, dbuf(SA, 0x1001), 999);
    memcpy(expect + 999, dbuf(SA, 0x2000), 3000);
    memcpy(expect + 3999, dbuf(SA, 0x3801), 7);
    memset(dbuf(SB, 0x10000), 0xab, 0x2000);
    memset(dbuf(SB, 0x30000), 0xcc, 0x3000);
    post_recv(SB, QPN, 0x10000, 0x2000);
    post_send(SA, QPN, &send);
    post_send(SA, QPN, &write);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, sizeof(expect));
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SB, 0x10000), expect, sizeof(expect)));
    CHECK_EQ(*dbuf(SB, 0x10000 + sizeof(expect)), 0xab);
    CHECK(!memcmp(dbuf(SB, 0x30001), dbuf(SA, 0x5003), 9000));
    CHECK_EQ(*dbuf(SB, 0x30000), 0xcc);
    CHECK_EQ(*dbuf(SB, 0x30001 + 9000), 0xcc);
    qsw_engine_stats(qrdma_be_sw_engine(SB->core.dp.be), &st);
    CHECK_EQ(st.drop_icrc, 0);
    CHECK_EQ(st.drop_malformed, 0);
    qsw_engine_stats(qrdma_be_sw_engine(SA->core.dp.be), &st);
    CHECK_EQ(st.retransmits, 0);
    CHECK_EQ(SA->maps_out, 0);
    CHECK_EQ(SB->maps_out, 0);
    no_errors(SA);
    no_errors(SB);
}

/* rc_pair() at path MTU 4096: payloads long enough to be mapped. */
static void rc_pair_4096(void)
{
    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq(SB, 2);
    create_qp(SA, QPN, &rc_spec);
    create_qp(SB, QPN, &rc_spec);
    rc_to_rts_mtu(SA, QPN, SB, QPN, 7, 5);
    rc_to_rts_mtu(SB, QPN, SA, QPN, 7, 5);
    pump();
    no_errors(SA);
    no_errors(SB);
}

static void test_zero_copy_tx(void)
{
    /*
     * The SEND is one packet of 4006 bytes from 3 SGEs, the WRITE 4096 +
     * 4096 + 808: three payloads are mapped, the WRITE's last (below
     * QSW_TX_MAP_MIN) is copied.
     */
    rc_pair_4096();
    zc_write_and_send();
    CHECK_EQ(SA->frames_iov, 3);
    CHECK(SA->maps >= 3 + 2 + 2);           /* the SEND's 3 SGEs, the WRITE's page crossings */
    CHECK_EQ(SB->frames_iov, 0);            /* B sends ACKs only: nothing to map */

    rc_pair_4096();
    SA->map_off = true;
    zc_write_and_send();
    CHECK_EQ(SA->frames_iov, 0);
    CHECK_EQ(SA->maps, 0);

    dp_tb_copy_tx = true;
    rc_pair_4096();
    zc_write_and_send();
    CHECK_EQ(SA->frames_iov, 0);
    CHECK_EQ(SA->maps, 0);
    dp_tb_copy_tx = false;

    /*
     * A map that fails halfway: the WRITE's first packet spans two pages;
     * the second piece is refused, the first is given back, and the packet
     * goes by copy, the rest mapped as before.
     */
    rc_pair_4096();
    {
        struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x30000, .nsge = 1,
                         .sge = { { 0x5003, 8192, 0 } } };

        fill(SA, 0x5000, 8200, 13);
        SA->map_fail_at = 2;
        post_send(SA, QPN, &w);
        ring_sq(SA, QPN);
        pump();
        EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
        CHECK(!memcmp(dbuf(SB, 0x30000), dbuf(SA, 0x5003), 8192));
        CHECK_EQ(SA->map_calls, 1 + 1 + 2); /* packet 1: mapped, refused; packet 2: two */
        CHECK_EQ(SA->maps, 1 + 2);
        CHECK_EQ(SA->frames_iov, 1);
        CHECK_EQ(SA->maps_out, 0);
        no_errors(SA);
        no_errors(SB);
    }
}

static void test_unsignaled(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .unsignaled = true, .nsge = 1,
                     .sge = { { 0x1000, 100, 0 } } };
    unsigned i;

    rc_pair();
    for (i = 0; i < 3; i++) {
        post_recv(SB, QPN, 0x4000 + 0x1000 * i, 256);
    }
    post_send(SA, QPN, &w);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    /* Done, but no CQE for them. */
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 100);
    EXPECT_CQE(SB, 2, QPN, 1, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 100);
    expect_no_cqe(SA, 1);
    w.unsignaled = false;
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SB, 2, QPN, 2, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 100);
    /* One CQE, for index 2: it retires 0 and 1 too. */
    EXPECT_CQE(SA, 1, QPN, 2, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SA, 1);
    no_errors(SA);
    no_errors(SB);
}

static void test_sig_all(void)
{
    struct qp_spec sa = rc_spec;
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .unsignaled = true, .nsge = 1,
                     .sge = { { 0x1000, 10, 0 } } };

    sa.flags = QRDMA_QP_CREATE_SIG_ALL;
    rc_pair_spec(&sa, &rc_spec, 7);
    post_recv(SB, QPN, 0x4000, 256);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 10);
}

/* A NOP WQE is skipped without a CQE; the next one runs. */
static void test_nop(void)
{
    struct wqe nop = { .op = QRDMA_SQ_OP_NOP };
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x1000, 10, 0 } } };

    rc_pair();
    post_recv(SB, QPN, 0x4000, 256);
    post_send(SA, QPN, &nop);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SA, 1);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 10);
    no_errors(SA);
}

/* ---- UD and SRQ ----------------------------------------------------------------------- */

#define UDQP 3
#define AH_ID 1

static void test_ud(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND_WITH_IMM, .imm = 0x01020304, .ah = AH_ID,
                     .dest_qpn = UDQP, .qkey = QKEY, .nsge = 1,
                     .sge = { { 0x1000, 900, 0 } } };
    const uint8_t *grh;
    struct cqe e;

    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq(SB, 2);
    create_qp(SA, UDQP, &ud_spec);
    create_qp(SB, UDQP, &ud_spec);
    ud_to_rts(SA, UDQP);
    ud_to_rts(SB, UDQP);
    write_av(SA, AV_BUF, SB);
    CQP_OK(cqp(SA, QRDMA_CQP_OP_CREATE_AH, AH_ID | (uint64_t)PD << QRDMA_AH_ARG0_PD_SHIFT,
               AV_BUF, 0, 0, 0, 0));
    fill(SA, 0x1000, 900, 8);
    memset(dbuf(SB, 0x6000), 0xee, 2048);
    post_recv(SB, UDQP, 0x6000, 40 + 1024);
    post_send(SA, UDQP, &w);
    ring_sq(SA, UDQP);
    pump();

    EXPECT_CQE(SA, 1, UDQP, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(poll_cq(SB, 2, &e));
    CHECK_EQ(e.opcode, QSW_WC_RECV);
    CHECK_EQ(e.status, QSW_WC_SUCCESS);
    CHECK_EQ(e.byte_len, 40 + 900);
    CHECK_EQ(e.flags, QRDMA_CQE_FLAG_GRH | QRDMA_CQE_FLAG_WITH_IMM);
    CHECK_EQ(e.imm, 0x01020304);
    CHECK_EQ(e.src_qp, UDQP);
    CHECK_EQ(e.qp, UDQP);
    CHECK_EQ(e.wqe_index, 0);
    /* The GRH room: IPv4, so the IPv4 header in its last 20 bytes. */
    grh = dbuf(SB, 0x6000);
    CHECK_EQ(grh[20], 0x45);
    CHECK_EQ(grh[29], 17);                              /* UDP */
    CHECK(!memcmp(grh + 32, SA->gid + 12, 4));          /* source 10.0.0.1 */
    CHECK(!memcmp(grh + 36, SB->gid + 12, 4));          /* destination 10.0.0.2 */
    CHECK(!memcmp(grh + 40, dbuf(SA, 0x1000), 900));
    CHECK_EQ(grh[40 + 900], 0xee);

    /* A wrong Q_Key is dropped silently; the receive WQE stays for the next. */
    w.qkey = QKEY + 1;
    post_recv(SB, UDQP, 0x8000, 40 + 1024);
    post_send(SA, UDQP, &w);
    ring_sq(SA, UDQP);
    pump();
    EXPECT_CQE(SA, 1, UDQP, 1, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SB, 2);
    w.qkey = QKEY;
    w.op = QRDMA_SQ_OP_SEND;
    post_send(SA, UDQP, &w);
    ring_sq(SA, UDQP);
    pump();
    EXPECT_CQE(SA, 1, UDQP, 2, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, UDQP, 1, QSW_WC_RECV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_GRH, 940);
    CHECK(!memcmp(dbuf(SB, 0x8000 + 40), dbuf(SA, 0x1000), 900));
    no_errors(SA);
    no_errors(SB);

    /*
     * A malformed receive WQE at the receiver: its error CQE, and the QP to
     * error by the transport (not from inside the callback that found it).
     * The sender's UD send completes as usual.
     */
    {
        const struct sge sge = { 0x6000, 1024, 0 };
        uint32_t n = SB->qp[UDQP].rq_posted++;
        uint32_t index = n & ((1u << SB->qp[UDQP].rq_log2) - 1);

        write_rq_wqe(SB, RQ_RING(UDQP) + ((uint64_t)index << SB->qp[UDQP].rq_stride_log2),
                     !((n >> SB->qp[UDQP].rq_log2) & 1), 1, &sge, 4);   /* 4 SGEs claimed */
        post_send(SA, UDQP, &w);
        ring_sq(SA, UDQP);
        pump();
        EXPECT_CQE(SA, 1, UDQP, 3, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
        EXPECT_CQE(SB, 2, UDQP, index, QSW_WC_RECV, QSW_WC_LOC_QP_OP_ERR, 0, ~0u);
        CHECK(logged(SB, "RQ WQE 2: malformed or unreadable"));
        CHECK(aeq_has(SB, QRDMA_AE_QP_FATAL, UDQP, QRDMA_AE_SRC_QP, QPCTX(UDQP)));
        CHECK_EQ(qp_state(SB, UDQP), QRDMA_QPS_ERR);
    }

    /* RDMA opcodes are refused on UD, as is an AH that does not exist. */
    w.op = QRDMA_SQ_OP_RDMA_WRITE;
    post_send(SA, UDQP, &w);
    ring_sq(SA, UDQP);
    pump();
    EXPECT_CQE(SA, 1, UDQP, 4, QSW_WC_SEND, QSW_WC_LOC_QP_OP_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(logged(SA, "opcode not allowed on a UD QP"));
    CHECK(aeq_has(SA, QRDMA_AE_QP_FATAL, UDQP, QRDMA_AE_SRC_QP, QPCTX(UDQP)));
}

static void test_ud_bad_ah(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .ah = 5, .dest_qpn = UDQP, .qkey = QKEY,
                     .nsge = 1, .sge = { { 0x1000, 9, 0 } } };

    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_qp(SA, UDQP, &ud_spec);
    ud_to_rts(SA, UDQP);
    post_send(SA, UDQP, &w);
    ring_sq(SA, UDQP);
    pump();
    EXPECT_CQE(SA, 1, UDQP, 0, QSW_WC_SEND, QSW_WC_LOC_QP_OP_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(logged(SA, "names no AH of the QP's PD"));
    CHECK_EQ(SA->frames_sent, 0);
}

#define SRQ_ID 1
#define SRQQP 4

static uint32_t post_srq(struct side *s, uint64_t off, uint32_t len)
{
    const struct sge sge = { off, len, 0 };
    uint32_t n = s->srq_posted++;
    uint32_t index = n & ((1u << s->srq_log2) - 1);

    write_rq_wqe(s, SRQ_RING + ((uint64_t)index << s->srq_stride_log2),
                 !((n >> s->srq_log2) & 1), 1, &sge, 0);
    w64(s, SRQ_SHADOW, s->srq_posted);
    return index;
}

static void test_srq(void)
{
    struct qp_spec sb = rc_spec;
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x1000, 700, 0 } } };
    unsigned i;

    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq(SB, 2);
    /* SRQ 1 of 4 WQEs of 32 bytes, limit 2. */
    CQP_OK(cqp(SB, QRDMA_CQP_OP_CREATE_SRQ,
               SRQ_ID | 2ull << QRDMA_SRQ_ARG0_SIZE_SHIFT | 5ull << QRDMA_SRQ_ARG0_WQE_SHIFT,
               PD | 2ull << QRDMA_SRQ_ARG1_LIMIT_SHIFT, SRQ_RING, SRQ_SHADOW, 0x5e0, 0));
    SB->srq_log2 = 2;
    SB->srq_stride_log2 = 5;
    sb.flags = QRDMA_QP_CREATE_SRQ;
    sb.srq = SRQ_ID;
    create_qp(SA, QPN, &rc_spec);
    create_qp(SB, SRQQP, &sb);
    rc_to_rts(SA, QPN, SB, SRQQP, 7);
    rc_to_rts(SB, SRQQP, SA, QPN, 7);
    for (i = 0; i < 3; i++) {
        post_srq(SB, 0x20000 + 0x1000 * i, 1024);
    }
    /* Six messages over two rounds: the SRQ ring (4) wraps. */
    for (i = 0; i < 6; i++) {
        if (i == 3) {
            post_srq(SB, 0x20000 + 0x1000 * 3, 1024);
            post_srq(SB, 0x20000, 1024);
            post_srq(SB, 0x20000 + 0x1000, 1024);
        }
        fill(SA, 0x1000, 700, i);
        post_send(SA, QPN, &w);
        ring_sq(SA, QPN);
        pump();
        EXPECT_CQE(SA, 1, QPN, i % 8, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
        EXPECT_CQE(SB, 2, SRQQP, i % 4, QSW_WC_RECV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SRQ, 700);
        CHECK(!memcmp(dbuf(SA, 0x1000), dbuf(SB, 0x20000 + 0x1000 * (i % 4)), 700));
    }
    CHECK_EQ(SB->core.obj.srq[SRQ_ID].head, 6);
    /* 3 posted, 1 taken: 2 outstanding is not below the limit 2; 2 taken is. */
    CHECK(aeq_has(SB, QRDMA_AE_SRQ_LIMIT, SRQ_ID, QRDMA_AE_SRC_SRQ, 0x5e0));
    no_errors(SA);
    no_errors(SB);
}

/* ---- CQ arming ------------------------------------------------------------------------ */

static void arm(struct side *s, uint32_t cq, uint64_t how)
{
    static uint16_t seq;

    w64(s, CQ_SHADOW(cq) + 8, ++seq | how);
    db(s, 0, QRDMA_DB_CQ_ARM, cq);
}

static void send_one(uint32_t len)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x1000, len, 0 } } };

    post_recv(SB, QPN, 0x4000, 4096);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
}

static void test_cq_arm(void)
{
    uint64_t ctx;
    struct cqe e;

    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq_ex(SB, 2, 4, true);           /* events to CEQ 0 */
    create_qp(SA, QPN, &rc_spec);
    create_qp(SB, QPN, &rc_spec);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    pump();
    while (poll_ceq(SB, &ctx)) {
        ;                                   /* nothing the CQP wrote is of interest */
    }

    /* Not armed: a CQE, no CEQE. */
    send_one(10);
    CHECK(poll_cq(SB, 2, &e));
    CHECK(!poll_ceq(SB, &ctx));

    /* Armed for the next completion: one CEQE, then disarmed. */
    arm(SB, 2, QRDMA_CQ_ARM_NEXT);
    CHECK(!poll_ceq(SB, &ctx));
    send_one(11);
    CHECK(poll_ceq(SB, &ctx));
    CHECK_EQ(ctx, 0xc0002);
    CHECK(!poll_ceq(SB, &ctx));
    send_one(12);
    CHECK(!poll_ceq(SB, &ctx));
    CHECK(poll_cq(SB, 2, &e));
    CHECK(poll_cq(SB, 2, &e));

    /* Armed again: the next one fires again. */
    arm(SB, 2, QRDMA_CQ_ARM_NEXT);
    send_one(13);
    CHECK(poll_ceq(SB, &ctx));
    CHECK_EQ(ctx, 0xc0002);
    CHECK(poll_cq(SB, 2, &e));

    /* Armed for solicited only: an unsolicited success does not fire. */
    arm(SB, 2, QRDMA_CQ_ARM_SOLICITED);
    send_one(14);
    CHECK(poll_cq(SB, 2, &e));
    CHECK(!poll_ceq(SB, &ctx));
    /* A solicited one does, and its CQE says so. */
    {
        struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .solicited = true,
                         .sge = { { 0x1000, 15, 0 } } };

        post_recv(SB, QPN, 0x4000, 4096);
        post_send(SA, QPN, &w);
        ring_sq(SA, QPN);
        pump();
        CHECK(poll_cq(SB, 2, &e));
        CHECK(e.flags & QRDMA_CQE_FLAG_SOLICITED);
        CHECK(poll_ceq(SB, &ctx));
        CHECK_EQ(ctx, 0xc0002);
    }
    /* ... but an error completion does (a receive buffer behind a bad lkey). */
    {
        const struct sge bad = { 0x4000, 256, MR_STAG ^ 0x40 };
        struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x1000, 16, 0 } } };

        arm(SB, 2, QRDMA_CQ_ARM_SOLICITED);
        post_recv_n(SB, QPN, 1, &bad);
        post_send(SA, QPN, &w);
        ring_sq(SA, QPN);
        pump();
        CHECK(poll_cq(SB, 2, &e));
        CHECK_EQ(e.status, QSW_WC_LOC_PROT_ERR);
        CHECK(poll_ceq(SB, &ctx));
        CHECK_EQ(ctx, 0xc0002);
        CHECK(!poll_ceq(SB, &ctx));
        CHECK(logged(SB, "STag 0x00000151"));
        log_clear(SB);
        aeq_drain(SB);
        while (poll_cq(SA, 1, &e)) {
            ;
        }
        /* Fresh QPs for the rest (CQs stay). */
        CQP_OK(cqp(SA, QRDMA_CQP_OP_DESTROY_QP, QPN, 0, 0, 0, 0, 0));
        CQP_OK(cqp(SB, QRDMA_CQP_OP_DESTROY_QP, QPN, 0, 0, 0, 0, 0));
        create_qp(SA, QPN, &rc_spec);
        create_qp(SB, QPN, &rc_spec);
        rc_to_rts(SA, QPN, SB, QPN, 7);
        rc_to_rts(SB, QPN, SA, QPN, 7);
        memset(mem(SA, SQ_RING(QPN)), 0, 0x8000);
        memset(mem(SB, SQ_RING(QPN)), 0, 0x8000);
    }
    /* A CQ without CEQ_ENABLE never writes one (CQ 1 of A, armed). */
    arm(SA, 1, QRDMA_CQ_ARM_NEXT);
    send_one(15);
    CHECK(!poll_ceq(SA, &ctx));
    no_errors(SA);
    no_errors(SB);

    /* The arm doorbell of a CQ that does not exist, or of another page. */
    db(SB, 0, QRDMA_DB_CQ_ARM, 9);
    CHECK(logged(SB, "no CQ of this page has that ID"));
    CHECK(aeq_has(SB, QRDMA_AE_BAD_DOORBELL, 0, QRDMA_AE_SRC_DOORBELL, 0));
    log_clear(SB);
    db(SB, 3, QRDMA_DB_CQ_ARM, 2);
    CHECK(logged(SB, "no CQ of this page has that ID"));
    CHECK(aeq_has(SB, QRDMA_AE_BAD_DOORBELL, 3, QRDMA_AE_SRC_DOORBELL, 0));
}

/* ---- errors --------------------------------------------------------------------------- */

static void test_bad_rkey(void)
{
    struct wqe wr = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x30000,
                      .rkey = MR_STAG ^ 0x01, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };
    struct wqe snd = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };
    struct wqe quiet = snd;

    rc_pair();
    quiet.unsignaled = true;
    memset(dbuf(SB, 0x30000), 0xcc, 256);
    post_recv(SA, QPN, 0x9000, 256);        /* flushed when A's QP fails */
    post_recv(SA, QPN, 0xa000, 256);
    post_recv(SB, QPN, 0x9000, 256);
    post_send(SA, QPN, &wr);
    post_send(SA, QPN, &snd);
    post_send(SA, QPN, &quiet);
    ring_sq(SA, QPN);
    pump();

    /* The requester: the WRITE fails, the later WQEs (signaled or not) are flushed. */
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_REM_ACCESS_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 2, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SA, 1);
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);
    /* Its RQ is flushed too. */
    EXPECT_CQE(SA, 2, QPN, 0, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);
    EXPECT_CQE(SA, 2, QPN, 1, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);
    expect_no_cqe(SA, 2);
    /* Nothing was written; the responder logged the STag and raised an access error. */
    CHECK_EQ(*dbuf(SB, 0x30000), 0xcc);
    CHECK(logged(SB, "STag 0x"));
    CHECK(aeq_has(SB, QRDMA_AE_QP_ACCESS_ERR, QPN, QRDMA_AE_SRC_QP, QPCTX(QPN)));
    CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_ERR);
    /* B's receive WQE was never used for the WRITE: flushed with B's error. */
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);

    /* WQEs posted after the error: flushed at the doorbell. */
    post_send(SA, QPN, &quiet);
    post_send(SA, QPN, &snd);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 3, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 4, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SA, 1);
}

static void test_remote_access_rights(void)
{
    /* An MR without REMOTE_WRITE: a WRITE through it is a remote access error. */
    struct wqe wr = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x30000,
                      .rkey = 2 << 8 | 0x22, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };

    rc_pair();
    CQP_OK(cqp(SB, QRDMA_CQP_OP_REG_MR, 2 << 8 | 0x22,
               PD | (uint64_t)(QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_READ)
               << QRDMA_MR_ARG1_ACCESS_SHIFT | 12ull << QRDMA_MR_ARG1_PAGE_SHIFT,
               IOVA, DATA_LEN, DATA, 0));
    post_send(SA, QPN, &wr);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_REM_ACCESS_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(logged(SB, "STag 0x00000222"));
    /* But a READ through it works (on a fresh pair). */
    rc_pair();
    CQP_OK(cqp(SB, QRDMA_CQP_OP_REG_MR, 2 << 8 | 0x22,
               PD | (uint64_t)(QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_READ)
               << QRDMA_MR_ARG1_ACCESS_SHIFT | 12ull << QRDMA_MR_ARG1_PAGE_SHIFT,
               IOVA, DATA_LEN, DATA, 0));
    fill(SB, 0x30000, 100, 7);
    wr.op = QRDMA_SQ_OP_RDMA_READ;
    post_send(SA, QPN, &wr);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_READ, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x5000), dbuf(SB, 0x30000), 100));
    no_errors(SB);
}

static void test_bad_lkey(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1,
                     .sge = { { 0x5000, 100, MR_STAG + 1 } } };
    struct wqe ok = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };

    rc_pair();
    post_recv(SB, QPN, 0x9000, 256);
    post_send(SA, QPN, &w);
    post_send(SA, QPN, &ok);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_LOC_PROT_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);
    CHECK(logged(SA, "STag 0x00000112"));
    /* Nothing reached B. */
    expect_no_cqe(SB, 2);
    CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_RTS);

    /* At the responder: a receive buffer behind a bad lkey fails the receive. */
    rc_pair();
    {
        const struct sge bad = { 0x9000, 256, MR_STAG ^ 0x80 };

        post_recv_n(SB, QPN, 1, &bad);
    }
    post_send(SA, QPN, &ok);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_LOC_PROT_ERR, 0, ~0u);
    CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_ERR);
    CHECK(logged(SB, "STag 0x00000191"));
    {
        struct cqe e;

        CHECK(poll_cq(SA, 1, &e));
        CHECK_EQ(e.wqe_index, 0);
        CHECK_EQ(e.status, QSW_WC_REM_OP_ERR);
    }
}

static void test_bad_opcode(void)
{
    struct wqe bad = { .op = 0x0b, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };
    struct wqe ok = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };
    struct cqe e;

    rc_pair();
    post_recv(SB, QPN, 0x9000, 256);
    post_send(SA, QPN, &bad);
    post_send(SA, QPN, &ok);
    ring_sq(SA, QPN);
    pump();
    CHECK(poll_cq(SA, 1, &e));
    CHECK_EQ(e.wqe_index, 0);
    CHECK_EQ(e.status, QSW_WC_LOC_QP_OP_ERR);
    CHECK_EQ(e.opcode, QSW_WC_SEND);
    CHECK_EQ(e.flags, QRDMA_CQE_FLAG_SQ);
    CHECK_EQ(e.vendor_err, 1);
    CHECK_EQ(e.qp, QPN);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SA, 1);
    CHECK(logged(SA, "QP 2: SQ WQE 0: unknown opcode"));
    CHECK(aeq_has(SA, QRDMA_AE_QP_FATAL, QPN, QRDMA_AE_SRC_QP, QPCTX(QPN)));
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);
    CHECK_EQ(SA->core.dp.bad_wqes, 1);
    expect_no_cqe(SB, 2);
    CHECK_EQ(SA->frames_sent, 0);
}

/* A bad WQE behind good ones still in flight: CQEs stay in SQ order. */
static void test_bad_wqe_order(void)
{
    struct wqe ok = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };
    struct wqe bad = { .op = 0x0b, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };

    rc_pair();
    post_recv(SB, QPN, 0x9000, 256);
    post_recv(SB, QPN, 0xa000, 256);
    post_send(SA, QPN, &ok);
    post_send(SA, QPN, &ok);
    post_send(SA, QPN, &bad);
    ring_sq(SA, QPN);
    pump();
    {
        struct cqe e[4];
        unsigned n = 0, i;

        while (n < 4 && poll_cq(SA, 1, &e[n])) {
            n++;
        }
        CHECK_EQ(n, 3);
        for (i = 0; i < n; i++) {
            CHECK_EQ(e[i].wqe_index, i);
        }
        if (n == 3) {
            CHECK_EQ(e[2].status, QSW_WC_LOC_QP_OP_ERR);
            CHECK(e[0].status == QSW_WC_SUCCESS || e[0].status == QSW_WC_WR_FLUSH_ERR);
        }
    }
    CHECK(logged(SA, "SQ WQE 2: unknown opcode"));
}

static void test_too_many_sges(void)
{
    /* A 256-byte SQ WQE holds 12 SGEs; an 64-byte RQ WQE holds 3. */
    struct wqe bad = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .nsge_field = 13,
                       .sge = { { 0x5000, 100, 0 } } };
    struct wqe ok = { .op = QRDMA_SQ_OP_SEND, .nsge = 12 };
    unsigned i;

    rc_pair();
    for (i = 0; i < 12; i++) {
        ok.sge[i] = (struct sge){ 0x1000 + 0x100 * i, 10, 0 };
    }
    fill(SA, 0x1000, 0x1000, 2);
    post_recv(SB, QPN, 0x9000, 256);
    post_send(SA, QPN, &ok);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 120);
    for (i = 0; i < 12; i++) {
        CHECK(!memcmp(dbuf(SB, 0x9000 + 10 * i), dbuf(SA, 0x1000 + 0x100 * i), 10));
    }
    no_errors(SA);

    post_send(SA, QPN, &bad);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_SEND, QSW_WC_LOC_QP_OP_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(logged(SA, "more SGEs than the WQE holds"));
    CHECK(aeq_has(SA, QRDMA_AE_QP_FATAL, QPN, QRDMA_AE_SRC_QP, QPCTX(QPN)));
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);

    /* Inline data longer than the WQE. */
    rc_pair();
    {
        uint8_t big[200] = { 0 };
        struct wqe w = { .op = QRDMA_SQ_OP_SEND, .inl = big, .inl_len = 192 };
        uint64_t a = SQ_RING(QPN);

        post_send(SA, QPN, &w);
        /* Claim 200 bytes in the header. */
        w64(SA, a + 56, (r64(SA, a + 56) & ~QRDMA_SQ_HDR_INLINE_LEN_MASK) |
                        200ull << QRDMA_SQ_HDR_INLINE_LEN_SHIFT);
        ring_sq(SA, QPN);
        pump();
        EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_LOC_QP_OP_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
        CHECK(logged(SA, "inline data beyond the WQE"));
    }

    /* A receive WQE with more SGEs than its stride holds. */
    rc_pair();
    {
        const struct sge sge = { 0x9000, 256, 0 };
        uint64_t a = RQ_RING(QPN);
        struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };

        write_rq_wqe(SB, a, true, 1, &sge, 4);
        SB->qp[QPN].rq_posted = 1;
        post_send(SA, QPN, &w);
        ring_sq(SA, QPN);
        pump_ms(2000);
        EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_LOC_QP_OP_ERR, 0, ~0u);
        CHECK(logged(SB, "RQ WQE 0: malformed or unreadable"));
        CHECK(aeq_has(SB, QRDMA_AE_QP_FATAL, QPN, QRDMA_AE_SRC_QP, QPCTX(QPN)));
        CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_ERR);
        /* The responder's NAK tells the sender why (IBTA 9.7.5.2.4). */
        EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_REM_OP_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
        CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);
    }
}

static void test_bad_doorbell(void)
{
    struct qp_spec sa = rc_spec;
    struct wqe ok = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };

    sa.db_page = 2;
    rc_pair_spec(&sa, &rc_spec, 7);
    post_recv(SB, QPN, 0x9000, 256);
    post_send(SA, QPN, &ok);
    /* QP 2 belongs to page 2: its SQ doorbell on page 0 is refused. */
    db(SA, 0, QRDMA_DB_SQ, QPN);
    pump();
    CHECK(logged(SA, "doorbell 0x2 at page 0 offset 0x0: no QP of this page has that ID"));
    CHECK(aeq_has(SA, QRDMA_AE_BAD_DOORBELL, 0, QRDMA_AE_SRC_DOORBELL, 0));
    CHECK_EQ(SA->frames_sent, 0);
    expect_no_cqe(SA, 1);
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_RTS);
    /* Nor does an RQ doorbell of another page, or a QP that does not exist. */
    log_clear(SA);
    db(SA, 5, QRDMA_DB_RQ, QPN);
    CHECK(aeq_has(SA, QRDMA_AE_BAD_DOORBELL, 5, QRDMA_AE_SRC_DOORBELL, 0));
    db(SA, 2, QRDMA_DB_SQ, 7);
    CHECK(aeq_has(SA, QRDMA_AE_BAD_DOORBELL, 2, QRDMA_AE_SRC_DOORBELL, 0));
    CHECK_EQ(SA->guest_errors, 2);
    /* An offset with no doorbell. */
    db(SA, 2, 0x20, QPN);
    CHECK(logged(SA, "no doorbell at that offset"));
    CHECK(aeq_has(SA, QRDMA_AE_BAD_DOORBELL, 2, QRDMA_AE_SRC_DOORBELL, 0));
    /* The right page works. */
    log_clear(SA);
    db(SA, 2, QRDMA_DB_SQ, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 10);
    no_errors(SA);
}

/*
 * SQ notifications (qrdma_core_db_notify): an SQ doorbell whose value the
 * embedding did not see (an ioeventfd) names only its page, and every QP of
 * that page is kicked, each finding its new WQEs by their VALID bits. The
 * pages' lists follow CREATE_QP, DESTROY_QP (head and middle of a list),
 * the device's reset; a page without QPs is only counted (the QP may have
 * been destroyed since the doorbell), a page beyond the BAR and a
 * notification before the engine is ready are guest errors.
 */
static uint64_t notify(struct side *s, uint32_t page)
{
    uint64_t kicks = s->core.stats.sq_notify_kicks;

    qrdma_core_db_notify(&s->core, page);
    return s->core.stats.sq_notify_kicks - kicks;
}

static void test_sq_notify(void)
{
    struct qp_spec on2 = rc_spec, on5 = rc_spec;
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };

    on2.db_page = 2;
    on5.db_page = 5;
    rc_pair_spec(&on2, &rc_spec, 7);
    create_qp(SA, 3, &on2);
    create_qp(SA, 4, &on5);
    create_qp(SA, 6, &on2);             /* page 2's list: 6, 3, 2 */
    post_recv(SB, QPN, 0x9000, 256);
    post_send(SA, QPN, &w);
    /* Page 0 has no QP: counted, not an error; nothing moves. */
    CHECK_EQ(notify(SA, 0), 0);
    CHECK_EQ(SA->core.stats.sq_notify_idle, 1);
    /* Page 5 has QP 4 only, which has no WQE. */
    CHECK_EQ(notify(SA, 5), 1);
    pump();
    CHECK_EQ(SA->frames_sent, 0);
    expect_no_cqe(SA, 1);
    /* Page 2: QP 2's SEND goes, with its QPs 3 and 6 looked at too. */
    CHECK_EQ(notify(SA, 2), 3);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 10);
    CHECK_EQ(SA->core.stats.sq_notifications, 3);
    CHECK_EQ(SA->core.stats.sq_doorbells, 0);
    /* Off the lists with their QPs: the middle one, then the first. */
    CQP_OK(cqp(SA, QRDMA_CQP_OP_DESTROY_QP, 3, 0, 0, 0, 0, 0));
    CHECK_EQ(notify(SA, 2), 2);
    CQP_OK(cqp(SA, QRDMA_CQP_OP_DESTROY_QP, 6, 0, 0, 0, 0, 0));
    post_recv(SB, QPN, 0x9000, 256);
    post_send(SA, QPN, &w);
    CHECK_EQ(notify(SA, 2), 1);
    pump();
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 1, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 10);
    /* A QP made again on another page leaves page 5 for it. */
    CQP_OK(cqp(SA, QRDMA_CQP_OP_DESTROY_QP, 4, 0, 0, 0, 0, 0));
    create_qp(SA, 4, &on2);
    CHECK_EQ(notify(SA, 5), 0);
    CHECK_EQ(notify(SA, 2), 2);
    no_errors(SA);
    /* A page beyond the BAR. */
    CHECK_EQ(notify(SA, SA->core.cfg.db_pages), 0);
    CHECK(logged(SA, "SQ doorbell notification of page 256, beyond the doorbell BAR"));
    /* After a reset no page has a QP, and before PE ready it is too early. */
    log_clear(SA);
    reg_w(SA, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    CHECK_EQ(notify(SA, 2), 0);
    CHECK(logged(SA, "SQ doorbell on page 2 before the engine is ready"));
    log_clear(SA);
    side_bringup(SA);
    CHECK_EQ(notify(SA, 2), 0);
    no_errors(SA);
}

/*
 * A CQ whose consumer reads nothing overflows (IBTA vol. 1 11.6.3): the
 * device writes the CQEs that fit and then nothing more, not even after
 * the consumer made room, so the unread CQEs stay as they were; it raises
 * CQ_OVERFLOW, and the QP whose completion was lost goes to ERR with
 * QP_FATAL, once. The QP's other CQ keeps working; destroying the QP and
 * the CQ and creating them again brings the pair back.
 */
static void test_cq_overflow(void)
{
    struct qp_spec sb = rc_spec;
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };
    uint8_t ring[4 * QRDMA_CQE_SIZE], guard[256];
    struct aeqe ev[2] = { { 0 } };
    struct cqe e;
    unsigned i;

    sb.recv_cq = 3;
    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq_ex(SB, 3, 2, false);          /* 4 CQEs */
    create_qp(SA, QPN, &rc_spec);
    create_qp(SB, QPN, &sb);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    /* Whatever follows the ring in guest memory must stay untouched. */
    memset(guard, 0xa5, sizeof(guard));
    memcpy(mem(SB, CQ_RING(3) + sizeof(ring)), guard, sizeof(guard));
    /* Four completions fill it; the consumer reads none. */
    for (i = 0; i < 5; i++) {
        post_recv(SB, QPN, 0x9000 + 0x100 * i, 256);
        post_send(SA, QPN, &w);
    }
    ring_sq(SA, QPN);
    pump();
    CHECK_EQ(SB->core.dp.cqes, 4);
    CHECK_EQ(SB->core.dp.cq_overflows, 1);
    CHECK(logged(SB, "CQ 3: overflow"));
    CHECK(logged(SB, "QP 2: a completion could not be written"));
    CHECK(SB->core.obj.cq[3].error);
    CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_ERR);
    /* The CQ's event, then the QP's, and nothing else. */
    CHECK(poll_aeq(SB, &ev[0]));
    CHECK(poll_aeq(SB, &ev[1]));
    CHECK_EQ(ev[0].code, QRDMA_AE_CQ_OVERFLOW);
    CHECK_EQ(ev[0].id, 3);
    CHECK_EQ(ev[0].source, QRDMA_AE_SRC_CQ);
    CHECK_EQ(ev[0].ctx, 0xc0003);
    CHECK_EQ(ev[1].code, QRDMA_AE_QP_FATAL);
    CHECK_EQ(ev[1].id, QPN);
    CHECK_EQ(ev[1].source, QRDMA_AE_SRC_QP);
    CHECK_EQ(ev[1].ctx, QPCTX(QPN));
    CHECK_EQ(aeq_drain(SB), 0);
    memcpy(ring, mem(SB, CQ_RING(3)), sizeof(ring));

    /* The QP in error flushes new receive WQEs: the CQ takes none, no second event. */
    post_recv(SB, QPN, 0x9000, 256);
    post_recv(SB, QPN, 0x9100, 256);
    db(SB, 0, QRDMA_DB_RQ, QPN);
    pump();
    CHECK(!memcmp(ring, mem(SB, CQ_RING(3)), sizeof(ring)));
    CHECK(!memcmp(guard, mem(SB, CQ_RING(3) + sizeof(ring)), sizeof(guard)));
    CHECK_EQ(SB->core.dp.cqes, 4);
    CHECK_EQ(aeq_drain(SB), 0);
    /* Its send CQ is fine: a send WQE flushes there. */
    post_send(SB, QPN, &w);
    ring_sq(SB, QPN);
    pump();
    EXPECT_CQE(SB, 1, QPN, 0, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SB, 1);
    /* A malformed WQE now fails as usual, but the QP already reported its QP_FATAL. */
    {
        struct wqe bad = { .op = 0x0b, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };

        post_send(SB, QPN, &bad);
        ring_sq(SB, QPN);
        pump();
        EXPECT_CQE(SB, 1, QPN, 1, QSW_WC_SEND, QSW_WC_LOC_QP_OP_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
        CHECK_EQ(SB->core.dp.bad_wqes, 1);
        CHECK_EQ(aeq_drain(SB), 0);
    }

    /* The four unread CQEs are intact, in order. */
    for (i = 0; i < 4; i++) {
        CHECK(poll_cq(SB, 3, &e));
        CHECK_EQ(e.wqe_index, i);
        CHECK_EQ(e.status, QSW_WC_SUCCESS);
        CHECK_EQ(e.byte_len, 10);
    }
    /* In error: no CQE is written any more, even with room. */
    CHECK(!poll_cq(SB, 3, &e));
    post_recv(SB, QPN, 0x9000, 256);
    db(SB, 0, QRDMA_DB_RQ, QPN);
    pump();
    CHECK(!poll_cq(SB, 3, &e));
    CHECK_EQ(SB->core.dp.cq_overflows, 1);
    CHECK(!memcmp(guard, mem(SB, CQ_RING(3) + sizeof(ring)), sizeof(guard)));
    /*
     * The responder's QP failed before it acknowledged the messages: the
     * requester retries into a QP in error and gives up (IBTA 9.7.5.1.1).
     */
    pump_ms(5000);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_RETRY_EXC_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    for (i = 1; i < 5; i++) {
        EXPECT_CQE(SA, 1, QPN, i, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    }
    expect_no_cqe(SA, 1);
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);
    CHECK(!memcmp(ring, mem(SB, CQ_RING(3)), sizeof(ring)));

    /* Destroy and create again: the pair works, the new CQ takes CQEs. */
    CQP_OK(cqp(SB, QRDMA_CQP_OP_DESTROY_QP, QPN, 0, 0, 0, 0, 0));
    CQP_OK(cqp(SB, QRDMA_CQP_OP_DESTROY_CQ, 3, 0, 0, 0, 0, 0));
    memset(mem(SB, CQ_RING(3)), 0, sizeof(ring));
    memset(mem(SB, SQ_RING(QPN)), 0, 0x8000);
    create_cq_ex(SB, 3, 2, false);
    create_qp(SB, QPN, &sb);
    modify_state(SA, QPN, QRDMA_QPS_RESET);
    SA->qp[QPN].sq_posted = SA->qp[QPN].rq_posted = 0;
    memset(mem(SA, SQ_RING(QPN)), 0, 0x8000);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    log_clear(SB);
    for (i = 0; i < 3; i++) {
        post_recv(SB, QPN, 0x9000 + 0x100 * i, 256);
        post_send(SA, QPN, &w);
    }
    ring_sq(SA, QPN);
    pump();
    for (i = 0; i < 3; i++) {
        EXPECT_CQE(SB, 3, QPN, i, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 10);
        EXPECT_CQE(SA, 1, QPN, i, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    }
    CHECK(!SB->core.obj.cq[3].error);
    CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_RTS);
    CHECK_EQ(SB->core.dp.cq_overflows, 1);
    CHECK_EQ(aeq_drain(SB), 0);
    no_errors(SB);
}

/*
 * Two QPs share a receive CQ that overflows: only the QP whose completion
 * was lost goes to ERR; the other one keeps working until it, too, has a
 * completion for the CQ, and then gets its own QP_FATAL.
 */
static void test_cq_overflow_shared(void)
{
    struct qp_spec sb = rc_spec;
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };
    struct aeqe ev = { 0 };
    struct cqe e;
    unsigned i;

    sb.recv_cq = 3;
    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq_ex(SB, 3, 2, false);          /* 4 CQEs */
    for (i = 2; i <= 3; i++) {
        create_qp(SA, i, &rc_spec);
        create_qp(SB, i, &sb);
        rc_to_rts(SA, i, SB, i, 7);
        rc_to_rts(SB, i, SA, i, 7);
    }
    for (i = 0; i < 5; i++) {
        post_recv(SB, 2, 0x9000 + 0x100 * i, 256);
        post_send(SA, 2, &w);
    }
    post_recv(SB, 3, 0xa000, 256);
    ring_sq(SA, 2);
    pump();
    CHECK_EQ(qp_state(SB, 2), QRDMA_QPS_ERR);
    CHECK_EQ(qp_state(SB, 3), QRDMA_QPS_RTS);
    CHECK(aeq_has(SB, QRDMA_AE_QP_FATAL, 2, QRDMA_AE_SRC_QP, QPCTX(2)));
    /* QP 3's message: its completion has nowhere to go either. */
    post_send(SA, 3, &w);
    ring_sq(SA, 3);
    pump();
    CHECK_EQ(qp_state(SB, 3), QRDMA_QPS_ERR);
    CHECK(poll_aeq(SB, &ev));
    CHECK_EQ(ev.code, QRDMA_AE_QP_FATAL);
    CHECK_EQ(ev.id, 3);
    CHECK_EQ(ev.ctx, QPCTX(3));
    CHECK_EQ(aeq_drain(SB), 0);
    CHECK_EQ(SB->core.dp.cq_overflows, 1);
    CHECK_EQ(SB->core.dp.cqes, 4);
    for (i = 0; i < 4; i++) {
        CHECK(poll_cq(SB, 3, &e));
        CHECK_EQ(e.qp, 2);
        CHECK_EQ(e.wqe_index, i);
    }
    CHECK(!poll_cq(SB, 3, &e));
}

/*
 * The consumer moves its QP to ERR (MODIFY_QP) right after it saw a
 * message's completion, before the device's next data-path pass would send
 * the coalesced ACK for it: the ACK leaves with the modify, and the
 * requester's SEND completes with success. iSER's logout does this: the
 * initiator disconnects as soon as it has the logout response, and a
 * target whose response was never acknowledged flushed it when the
 * disconnect arrived (a kernel WARN in iscsit_release_cmd). The device's
 * own error (test_cq_overflow) still acknowledges nothing.
 */
static void test_ack_before_consumer_error(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };

    rc_pair();
    post_recv(SB, QPN, 0x9000, 256);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    /* A sends the SEND; B takes it and completes it; B's data path has not run since. */
    pump_some(1);
    CHECK(SB->kicks & QRDMA_WORK_DP);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 10);
    modify_state(SB, QPN, QRDMA_QPS_ERR);
    CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_ERR);
    pump_ms(5000);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SA, 1);
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_RTS);
    no_errors(SA);
    no_errors(SB);
}

/* HEAD advances: the same small CQ takes any number of CQEs. */
static void test_cq_head(void)
{
    struct qp_spec sb = rc_spec;
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };
    unsigned i;

    sb.recv_cq = 3;
    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq_ex(SB, 3, 2, false);
    create_qp(SA, QPN, &rc_spec);
    create_qp(SB, QPN, &sb);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    for (i = 0; i < 22; i++) {
        post_recv(SB, QPN, 0x9000, 256);
        post_send(SA, QPN, &w);
        ring_sq(SA, QPN);
        pump();
        EXPECT_CQE(SB, 3, QPN, i % 8, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 10);
        EXPECT_CQE(SA, 1, QPN, i % 8, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    }
    CHECK_EQ(SB->core.dp.cq_overflows, 0);
    no_errors(SB);
}

static void test_rq_flush(void)
{
    unsigned i;

    rc_pair();
    for (i = 0; i < 3; i++) {
        post_recv(SB, QPN, 0x9000 + 0x100 * i, 256);
    }
    modify_state(SB, QPN, QRDMA_QPS_ERR);
    pump();
    for (i = 0; i < 3; i++) {
        EXPECT_CQE(SB, 2, QPN, i, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);
    }
    expect_no_cqe(SB, 2);
    /* Posted in error: nothing until the RQ doorbell, then flushed. */
    post_recv(SB, QPN, 0x9000, 256);
    post_recv(SB, QPN, 0x9100, 256);
    pump();
    expect_no_cqe(SB, 2);
    db(SB, 0, QRDMA_DB_RQ, QPN);
    pump();
    EXPECT_CQE(SB, 2, QPN, 3, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);
    EXPECT_CQE(SB, 2, QPN, 4, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);
    expect_no_cqe(SB, 2);
    /* Many, over the ring's laps: 8 more. */
    for (i = 0; i < 8; i++) {
        post_recv(SB, QPN, 0x9000, 256);
    }
    db(SB, 0, QRDMA_DB_RQ, QPN);
    pump();
    for (i = 0; i < 8; i++) {
        EXPECT_CQE(SB, 2, QPN, (5 + i) % 8, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);
    }
    expect_no_cqe(SB, 2);
    /* SQ WQEs of a QP in error are flushed too. */
    {
        struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };

        post_send(SB, QPN, &w);
        ring_sq(SB, QPN);
        pump();
        EXPECT_CQE(SB, 1, QPN, 0, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    }
    CHECK_EQ(SB->frames_sent, 0);
    no_errors(SB);

    /* Back through RESET to RTS: the rings start again from index 0. */
    modify_state(SB, QPN, QRDMA_QPS_RESET);
    SB->qp[QPN].sq_posted = SB->qp[QPN].rq_posted = 0;
    memset(mem(SB, SQ_RING(QPN)), 0, 0x8000);
    modify_state(SA, QPN, QRDMA_QPS_RESET);
    SA->qp[QPN].sq_posted = SA->qp[QPN].rq_posted = 0;
    memset(mem(SA, SQ_RING(QPN)), 0, 0x8000);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    send_one(33);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 33);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    no_errors(SA);
    no_errors(SB);
}

/* No receive WQE: RNR NAK; the sender retries after the RNR timer and completes. */
static void test_rnr(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 1800, 0 } } };
    uint64_t t0;

    rc_pair();
    fill(SA, 0x5000, 1800, 6);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    expect_no_cqe(SA, 1);
    expect_no_cqe(SB, 2);
    /* The requester waits on a timer. */
    CHECK(SA->timer != UINT64_MAX);
    t0 = now_ns;
    /* Firing timers without a WQE: more RNR NAKs, still nothing. */
    pump_ms(1);
    expect_no_cqe(SA, 1);
    CHECK(SA->timer != UINT64_MAX);
    /* Post the receive (no doorbell needed outside error) and let the timer fire. */
    post_recv(SB, QPN, 0x9000, 2048);
    pump_ms(100);
    CHECK(now_ns > t0);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 1800);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x5000), dbuf(SB, 0x9000), 1800));
    no_errors(SA);
    no_errors(SB);
}

/*
 * MODIFY_QP to RESET while the QP waits on the data path's kick FIFO
 * (issue 11): the QP was queued again at the next kick, and enough such
 * rounds overflowed the FIFO over another QP's entry, which then never
 * ran (its flag said queued, so later doorbells did not queue it again).
 */
static void test_reset_while_kicked(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x1000, 40, 0 } } };
    const uint32_t other = 3;
    unsigned i;

    rc_pair();
    create_qp(SA, other, &rc_spec);
    create_qp(SB, other, &rc_spec);
    rc_to_rts(SA, other, SB, other, 7);
    rc_to_rts(SB, other, SA, other, 7);
    pump();
    post_recv(SB, other, 0x4000, 4096);
    post_send(SA, other, &w);
    ring_sq(SA, other);                     /* QP 3 waits on the FIFO */
    for (i = 0; i < N_QP + 1; i++) {
        ring_sq(SA, QPN);
        modify_state(SA, QPN, QRDMA_QPS_RESET);
        CHECK(SA->core.dp.fifo_len <= 2);   /* each QP at most once */
    }
    pump();
    EXPECT_CQE(SB, 2, other, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 40);
    EXPECT_CQE(SA, 1, other, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK_EQ(SA->core.dp.fifo_len, 0);
    /* And the next doorbell of either QP is heard. */
    post_recv(SB, other, 0x4000, 4096);
    post_send(SA, other, &w);
    ring_sq(SA, other);
    pump();
    EXPECT_CQE(SB, 2, other, 1, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 40);
    EXPECT_CQE(SA, 1, other, 1, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    no_errors(SA);
    no_errors(SB);
}

/* Run s's kicked work at most rounds times (no frames move): did it go quiet? */
static bool settles(struct side *s, unsigned rounds)
{
    while (rounds-- && s->kicks) {
        unsigned what = s->kicks;

        s->kicks = 0;
        qrdma_core_run(&s->core, what);
    }
    return !s->kicks;
}

/*
 * A QP in ERR whose rings cannot be read (issue 11): bus mastering off,
 * then an RQ page behind a PBLE that is not guest RAM. The flush used to
 * complete 256 "WQEs" a pass and kick itself again for ever; now it stops
 * at the unreadable slot with a guest error (and QP_FATAL), and the next
 * doorbell, with the ring readable again, flushes what is really posted.
 */
static void test_flush_unreadable(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x1000, 40, 0 } } };
    struct qp_spec spec = rc_spec;
    const uint32_t pble = 4;
    uint64_t pble_gpa;
    unsigned i;

    /* Bus mastering cleared: no DMA at all. */
    rc_pair();
    for (i = 0; i < 3; i++) {
        post_recv(SB, QPN, 0x9000 + 0x100 * i, 256);
    }
    post_send(SB, QPN, &w);
    modify_state(SB, QPN, QRDMA_QPS_ERR);  /* the flush is kicked, not yet run */
    SB->dma_off = true;
    ring_sq(SB, QPN);
    ring_rq(SB, QPN);
    CHECK(settles(SB, 16));
    CHECK(logged(SB, "QP 2: RQ WQE 0 is unreadable; the flush stops"));
    CHECK(logged(SB, "QP 2: SQ WQE 0: SQ page is not usable; fetching stops"));
    SB->dma_off = false;
    expect_no_cqe(SB, 1);
    expect_no_cqe(SB, 2);
    /* Readable again: the doorbells flush exactly what was posted. */
    ring_rq(SB, QPN);
    ring_sq(SB, QPN);
    pump();
    for (i = 0; i < 3; i++) {
        EXPECT_CQE(SB, 2, QPN, i, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);
    }
    expect_no_cqe(SB, 2);
    EXPECT_CQE(SB, 1, QPN, 0, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SB, 1);

    /* An RQ behind a PBLE that the driver points outside guest RAM. */
    setup();
    create_cq(SB, 1);
    create_cq(SB, 2);
    CHECK_EQ(qrdma_core_hmc_object(&SB->core, QRDMA_HMC_PBLE, pble, &pble_gpa), 0);
    w64(SB, pble_gpa, RQ_RING(QPN));
    spec.flags = QRDMA_QP_CREATE_RQ_VIRTMAP;
    spec.rq_addr = pble;
    create_qp(SB, QPN, &spec);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    for (i = 0; i < 3; i++) {
        post_recv(SB, QPN, 0x9000 + 0x100 * i, 256);
    }
    modify_state(SB, QPN, QRDMA_QPS_ERR);
    w64(SB, pble_gpa, 0x7fff0000000ull);
    CHECK(settles(SB, 16));
    CHECK(logged(SB, "QP 2: RQ WQE 0 is unreadable; the flush stops"));
    CHECK(aeq_has(SB, QRDMA_AE_QP_FATAL, QPN, QRDMA_AE_SRC_QP, QPCTX(QPN)));
    expect_no_cqe(SB, 2);
    /* Still broken: one more doorbell is one more guest error, no loop. */
    log_clear(SB);
    ring_rq(SB, QPN);
    CHECK(settles(SB, 16));
    CHECK_EQ(SB->guest_errors, 1);
    w64(SB, pble_gpa, RQ_RING(QPN));
    ring_rq(SB, QPN);
    CHECK(settles(SB, 16));
    for (i = 0; i < 3; i++) {
        EXPECT_CQE(SB, 2, QPN, i, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);
    }
    expect_no_cqe(SB, 2);
}

/*
 * A send queue deeper than the transport's (128 WRs): 200 unsignaled
 * WRITEs and a signaled one in one doorbell. The transport completes the
 * unsignaled ones silently; the data path must still learn that it has
 * room and fetch the rest of the ring (cb_sq_space).
 */
static void test_sq_deeper_than_engine(void)
{
    struct qp_spec spec = rc_spec;
    struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .unsignaled = true, .nsge = 1 };
    unsigned i, n = 200;

    spec.sq_log2 = 8;
    spec.sq_wqe_log2 = 7;                   /* 256 WQEs of 128 bytes: 32 KB ... */
    spec.rq_addr = RAM_BASE + 0xf0000;      /* ... over RQ_RING's place: the RQ elsewhere */
    rc_pair_spec(&spec, &rc_spec, 7);
    fill(SA, 0, 8 * (n + 1), 21);
    for (i = 0; i <= n; i++) {
        w.unsignaled = i < n;
        w.remote_off = 0x40000 + 8 * i;
        w.sge[0] = (struct sge){ 8 * i, 8, 0 };
        post_send(SA, QPN, &w);
    }
    ring_sq(SA, QPN);
    /* Nothing delivered yet: the transport is full and the fetch waits. */
    CHECK(settles(SA, 64));
    CHECK_EQ(SA->core.dp.sq_wqes, 128);
    pump();
    EXPECT_CQE(SA, 1, QPN, n, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SA, 1);
    CHECK(!memcmp(dbuf(SA, 0), dbuf(SB, 0x40000), 8 * (n + 1)));
    CHECK_EQ(SA->core.dp.sq_wqes, n + 1);
    no_errors(SA);
    no_errors(SB);
}

/* RNR retries exhausted: RNR_RETRY_EXC_ERR and the QP in error. */
static void test_rnr_exceeded(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };

    rc_pair_spec(&rc_spec, &rc_spec, 1);
    post_send(SA, QPN, &w);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump_ms(100);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_RNR_RETRY_EXC_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);
}

/*
 * UC (IBTA 9.8.3, no ACKs, no retries): a SEND of three packets and a
 * WRITE_WITH_IMM land and complete on both sides; a message that lost its
 * first packet is dropped whole by the receiver, which delivers the next
 * message into the receive WQE the lost one never used; the sender
 * completes every message it sent. A READ on UC is refused at the WQE.
 */
static void test_uc(void)
{
    struct qp_spec uc = rc_spec;
    struct wqe send = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x1000, 3000, 0 } } };
    struct wqe wimm = { .op = QRDMA_SQ_OP_RDMA_WRITE_WITH_IMM, .imm = 0x12345678,
                        .remote_off = 0x20000, .nsge = 1, .sge = { { 0x4000, 2048, 0 } } };
    struct wqe small = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x6000, 100, 0 } } };
    struct wqe rd = { .op = QRDMA_SQ_OP_RDMA_READ, .remote_off = 0x20000, .nsge = 1,
                      .sge = { { 0x7000, 64, 0 } } };

    uc.type = QRDMA_QP_TYPE_UC;
    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq(SB, 2);
    create_qp(SA, QPN, &uc);
    create_qp(SB, QPN, &uc);
    CHECK(uc_to_rts(SA, QPN, SB, QPN));
    CHECK(uc_to_rts(SB, QPN, SA, QPN));
    fill(SA, 0x1000, 3000, 21);
    fill(SA, 0x4000, 2048, 22);
    fill(SA, 0x6000, 100, 23);
    memset(dbuf(SB, 0x8000), 0xee, 3 * 4096);

    CHECK_EQ(post_recv(SB, QPN, 0x8000, 4096), 0);
    CHECK_EQ(post_recv(SB, QPN, 0x9000, 4096), 1);
    CHECK_EQ(post_recv(SB, QPN, 0xa000, 4096), 2);
    post_send(SA, QPN, &send);
    post_send(SA, QPN, &wimm);
    ring_sq(SA, QPN);
    pump();
    CHECK(!memcmp(dbuf(SA, 0x1000), dbuf(SB, 0x8000), 3000));
    CHECK(!memcmp(dbuf(SA, 0x4000), dbuf(SB, 0x20000), 2048));
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 3000);
    EXPECT_CQE(SB, 2, QPN, 1, QSW_WC_RECV_RDMA_WITH_IMM, QSW_WC_SUCCESS,
               QRDMA_CQE_FLAG_WITH_IMM, 2048);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK_EQ(SB->frames_sent, 0);           /* no ACKs */

    /* The first packet of a SEND lost: its other two are dropped too. */
    post_send(SA, QPN, &send);
    post_send(SA, QPN, &small);
    drop_frames = 1;
    ring_sq(SA, QPN);
    pump_ms(100);
    EXPECT_CQE(SA, 1, QPN, 2, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 3, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 2, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 100);
    expect_no_cqe(SB, 2);
    CHECK(!memcmp(dbuf(SA, 0x6000), dbuf(SB, 0xa000), 100));
    CHECK_EQ(*dbuf(SB, 0xa000 + 100), 0xee);
    CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_RTS);
    no_errors(SB);

    /* IBTA: UC carries no READ or atomic. */
    post_send(SA, QPN, &rd);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 4, QSW_WC_SEND, QSW_WC_LOC_QP_OP_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);
    CHECK(logged(SA, "the transport refused the work request"));
}

/* A lost frame: the retransmit timer recovers it. */
static void test_retransmit(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 3000, 0 } } };

    rc_pair();
    fill(SA, 0x5000, 3000, 12);
    post_recv(SB, QPN, 0x9000, 4096);
    post_send(SA, QPN, &w);
    drop_frames = 1;                        /* the first packet of the SEND */
    ring_sq(SA, QPN);
    pump_ms(1000);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 3000);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x5000), dbuf(SB, 0x9000), 3000));
    no_errors(SA);
    no_errors(SB);
}

/* Destroying a QP with work in flight, then its CQs: nothing dangles. */
static void test_destroy_in_flight(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 3000, 0 } } };

    rc_pair();
    post_recv(SB, QPN, 0x9000, 4096);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    /* The doorbell queued the QP; destroy before the work runs. */
    CQP_OK(cqp(SA, QRDMA_CQP_OP_DESTROY_QP, QPN, 0, 0, 0, 0, 0));
    CQP_OK(cqp(SA, QRDMA_CQP_OP_DESTROY_CQ, 1, 0, 0, 0, 0, 0));
    pump_ms(1000);
    CHECK_EQ(SA->frames_sent, 0);
    expect_no_cqe(SB, 2);
    /* A doorbell for it now is a bad doorbell. */
    ring_sq(SA, QPN);
    CHECK(logged(SA, "no QP of this page has that ID"));
}

/*
 * The device's fault hook: with loss, duplication, reordering and
 * corruption on both sides' transmitters, rounds of WRITEs, READs and SENDs
 * still complete in order with every byte right; corrupted frames die at
 * the ICRC check.
 */
static void test_fault_hook(void)
{
    struct qsw_stats st[2];
    unsigned round, i;

    memset(&dev_fault, 0, sizeof(dev_fault));
    dev_fault.loss_ppm = 50000;
    dev_fault.dup_ppm = 10000;
    dev_fault.reorder_ppm = 20000;
    dev_fault.corrupt_ppm = 10000;
    dev_fault.seed = 7;
    rc_retry_cnt = 7;
    rc_pair();
    dev_fault.seed = 0;
    dev_fault.loss_ppm = dev_fault.dup_ppm = dev_fault.reorder_ppm = 0;
    dev_fault.corrupt_ppm = 0;
    rc_retry_cnt = 3;

    for (round = 0; round < 12; round++) {
        const uint32_t len = 0x2000 - 8 * round;

        /* 8 WRITEs A -> B, then 8 READs of them back into A elsewhere. */
        for (i = 0; i < 8; i++) {
            struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x40000 + i * 0x2000,
                             .nsge = 1, .sge = { { 0x10000 + i * 0x2000, len, 0 } } };

            fill(SA, 0x10000 + i * 0x2000, len, round * 8 + i);
            post_send(SA, QPN, &w);
        }
        ring_sq(SA, QPN);
        pump_ms(20000);
        for (i = 0; i < 8; i++) {
            EXPECT_CQE(SA, 1, QPN, (round * 16 + i) & 7, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS,
                       QRDMA_CQE_FLAG_SQ, ~0u);
            CHECK(!memcmp(dbuf(SA, 0x10000 + i * 0x2000), dbuf(SB, 0x40000 + i * 0x2000), len));
        }
        memset(dbuf(SA, 0x80000), 0, 0x10000);
        for (i = 0; i < 8; i++) {
            struct wqe w = { .op = QRDMA_SQ_OP_RDMA_READ, .remote_off = 0x40000 + i * 0x2000,
                             .nsge = 1, .sge = { { 0x80000 + i * 0x2000, len, 0 } } };

            post_send(SA, QPN, &w);
        }
        ring_sq(SA, QPN);
        pump_ms(20000);
        for (i = 0; i < 8; i++) {
            EXPECT_CQE(SA, 1, QPN, (round * 16 + 8 + i) & 7, QSW_WC_RDMA_READ, QSW_WC_SUCCESS,
                       QRDMA_CQE_FLAG_SQ, ~0u);
            CHECK(!memcmp(dbuf(SA, 0x80000 + i * 0x2000), dbuf(SA, 0x10000 + i * 0x2000), len));
        }
        /* A SEND B -> A: the other direction's requester under faults too. */
        {
            struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0xa0000, 3000, 0 } } };

            fill(SB, 0xa0000, 3000, 100 + round);
            post_recv(SA, QPN, 0xb0000, 4096);
            post_send(SB, QPN, &w);
            ring_sq(SB, QPN);
            pump_ms(20000);
            EXPECT_CQE(SB, 1, QPN, round & 7, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ,
                       ~0u);
            EXPECT_CQE(SA, 2, QPN, round & 7, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 3000);
            CHECK(!memcmp(dbuf(SB, 0xa0000), dbuf(SA, 0xb0000), 3000));
        }
    }
    CHECK_EQ(qrdma_qp_get(&SA->core, QPN)->state, QRDMA_QPS_RTS);
    CHECK_EQ(qrdma_qp_get(&SB->core, QPN)->state, QRDMA_QPS_RTS);
    qsw_engine_stats(qrdma_be_sw_engine(SA->core.dp.be), &st[0]);
    qsw_engine_stats(qrdma_be_sw_engine(SB->core.dp.be), &st[1]);
    /* The faults did happen, and the transport recovered from them. */
    CHECK(st[0].fault_lost + st[1].fault_lost > 0);
    CHECK(st[0].fault_dup + st[1].fault_dup > 0);
    CHECK(st[0].fault_corrupted + st[1].fault_corrupted > 0);
    CHECK(st[0].drop_icrc + st[1].drop_icrc > 0);
    CHECK(st[0].retransmits + st[1].retransmits > 0);
    no_errors(SA);
    no_errors(SB);
}

/*
 * ---- transmit backpressure ---------------------------------------------------------
 *
 * A netdev that fills (QEMU's net queue behind a full socket) keeps a
 * frame and answers QRDMA_TX_QUEUED: the device sends nothing more until
 * that frame has left (qrdma_core_tx_ready), and the transport neither
 * times out nor retransmits meanwhile, however long the wait.
 */
static void engine_stats(struct side *s, struct qsw_stats *st)
{
    qsw_engine_stats(qrdma_be_sw_engine(s->core.dp.be), st);
}

static void test_tx_backpressure(void)
{
    const uint32_t len = 0x8000;            /* 32 packets at path MTU 1024 */
    struct qsw_stats st;
    unsigned i, rounds;

    rc_pair();
    fill(SA, 0x10000, 4 * len, 31);
    for (i = 0; i < 4; i++) {
        struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x80000 + i * len,
                         .nsge = 1, .sge = { { 0x10000 + i * len, len, 0 } } };

        post_send(SA, QPN, &w);
    }
    SA->tx_limit = true;
    SA->tx_room = 10;
    ring_sq(SA, QPN);
    /* Half a second: seven of the QP's 67 ms timeouts, more than its 3 retries. */
    pump();
    now_ns += 500000000ull;
    pump_ms(1);
    CHECK_EQ(SA->frames_sent, 11);          /* ten on the wire, one kept, then nothing */
    CHECK_EQ(SA->tx_kept, 1);
    CHECK_EQ(SA->core.tx_queued, 1);
    CHECK(SA->core.dp.be_tx_busy);
    expect_no_cqe(SA, 1);
    engine_stats(SA, &st);
    CHECK_EQ(st.timeouts, 0);
    CHECK_EQ(st.retransmits, 0);
    /* The netdev drains, a few frames at a time, then for good. */
    for (rounds = 0; rounds < 40 && SA->tx_limit; rounds++) {
        dp_tb_tx_drain(SA, rounds < 30 ? 7 : UINT_MAX);
        pump();
    }
    pump_ms(100);
    for (i = 0; i < 4; i++) {
        EXPECT_CQE(SA, 1, QPN, i, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    }
    CHECK(!memcmp(dbuf(SA, 0x10000), dbuf(SB, 0x80000), 4 * len));
    engine_stats(SA, &st);
    CHECK_EQ(st.timeouts, 0);
    CHECK_EQ(st.retransmits, 0);
    CHECK_EQ(SA->frames_sent, 4 * 32);      /* each packet once */
    CHECK(SA->core.stats.tx_queued >= 10);
    CHECK_EQ(SA->tx_kept_max, 1);           /* it stopped at every kept frame */
    CHECK_EQ(SA->core.tx_queued, 0);
    CHECK(!SA->core.dp.be_tx_busy);
    CHECK_EQ(SA->core.stats.tx_busy_drops, 0);
    no_errors(SA);
    no_errors(SB);
}

/*
 * A reset while the netdev holds a frame: the transport's state goes
 * (ASan), the device stays stopped until the netdev lets the frame go (it
 * mirrors the netdev, which the reset does not empty: QEMU's glue purges
 * it, and the purge's callback is that tx_ready), then a QP made again
 * carries traffic.
 */
static void test_tx_backpressure_reset(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 3000, 0 } } };
    struct qsw_stats st;

    rc_pair();
    fill(SA, 0x5000, 3000, 33);
    post_recv(SB, QPN, 0x9000, 4096);
    post_send(SA, QPN, &w);
    SA->tx_limit = true;
    SA->tx_room = 1;
    ring_sq(SA, QPN);
    pump_ms(10);
    CHECK_EQ(SA->frames_sent, 2);
    CHECK_EQ(SA->core.tx_queued, 1);
    qrdma_core_reset(&SA->core);
    CHECK_EQ(SA->core.tx_queued, 1);
    CHECK(!SA->core.dp.be_tx_busy);
    engine_stats(SA, &st);
    CHECK_EQ(st.tx_frames, 0);              /* a new engine */
    /* what was kept goes (QEMU would have purged it), and the device may send again */
    dp_tb_tx_drain(SA, UINT_MAX);
    CHECK_EQ(SA->core.tx_queued, 0);
    fq_clear();
    pump();
    side_bringup(SA);
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_qp(SA, QPN, &rc_spec);
    CQP_OK(cqp(SB, QRDMA_CQP_OP_DESTROY_QP, QPN, 0, 0, 0, 0, 0));
    memset(mem(SB, SQ_RING(QPN)), 0, 0x8000);
    create_qp(SB, QPN, &rc_spec);
    SB->qp[QPN].rq_posted = 0;
    rc_to_rts(SA, QPN, SB, QPN, 7);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    log_clear(SB);
    fill(SA, 0x5000, 3000, 34);
    post_recv(SB, QPN, 0x20000, 4096);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump_ms(1000);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x5000), dbuf(SB, 0x20000), 3000));
    no_errors(SA);
}

/* Fault settings outside their limits are refused at init. */
static void test_fault_limits(void)
{
    struct qrdma_core_config cfg;
    struct qrdma_core core;
    struct qrdma_core_env env = { 0 };
    char err[128] = "";

    memset(&core, 0, sizeof(core));
    qrdma_core_config_defaults(&cfg);
    cfg.fault.loss_ppm = 500001;
    CHECK_EQ(qrdma_core_init(&core, &cfg, &env, err, sizeof(err)), -EINVAL);
    CHECK(strstr(err, "fault.loss_ppm") != NULL);
}

/* ---- fast register ------------------------------------------------------------------- */

#define FR_INDEX    2
#define FR_IOVA     0x60000000ull
#define FR_FIRST    8               /* the MR's reserved PBLEs: 8..11 */

static uint64_t pble_addr(struct side *s, uint32_t i)
{
    return HMC_RAM + r64(s, FPM_BUF + 8 * (1 + QRDMA_HMC_PBLE)) + 8ull * i;
}

/* A FAST_REG WQE (one-level list at `first`); returns its index. */
static uint32_t post_fast_reg(struct side *s, uint32_t qp, uint32_t stag, uint32_t access,
                              uint64_t iova, uint64_t len, uint64_t first, uint64_t fbo)
{
    uint32_t index;
    bool valid;
    uint64_t a = sq_next_slot(s, qp, &index, &valid);

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

/* B: ALLOC_STAG of MR 2 (key 0x20, 4 pages at PBLE 8), its pages out of order. */
static void fast_reg_mr_alloc(void)
{
    CQP_OK(cqp(SB, QRDMA_CQP_OP_ALLOC_STAG, FR_INDEX << QRDMA_STAG_INDEX_SHIFT | 0x20,
               PD | (uint64_t)MR_ACCESS << QRDMA_MR_ARG1_ACCESS_SHIFT, 4, 0, FR_FIRST, 0));
    w64(SB, pble_addr(SB, FR_FIRST + 0), DATA + 0xc3000);
    w64(SB, pble_addr(SB, FR_FIRST + 1), DATA + 0xc1000);
    w64(SB, pble_addr(SB, FR_FIRST + 2), DATA + 0xc5000);
}

/*
 * Kernel fast registration: B registers its MR with a new key through a
 * FAST_REG WQE; A writes and reads through the new rkey into the pages of
 * the list; the old key is dead; LOCAL_INV ends it all.
 */
static void test_fast_reg(void)
{
    const uint32_t fr_stag = FR_INDEX << QRDMA_STAG_INDEX_SHIFT | 0x21;
    struct wqe wr = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = FR_IOVA - IOVA,
                      .rkey = fr_stag, .nsge = 1, .sge = { { 0x5000, 8192, 0 } } };
    struct wqe rd = { .op = QRDMA_SQ_OP_RDMA_READ, .remote_off = FR_IOVA - IOVA + 0xe00,
                      .rkey = fr_stag, .nsge = 1, .sge = { { 0x9000, 0x400, 0 } } };
    struct wqe inv = { .op = QRDMA_SQ_OP_LOCAL_INV, .imm = fr_stag };
    uint8_t ctx[64];

    rc_pair();
    fast_reg_mr_alloc();
    memset(dbuf(SB, 0xc0000), 0xcc, 0x8000);
    fill(SA, 0x5000, 8192, 21);

    post_fast_reg(SB, QPN, fr_stag, QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE |
                  QRDMA_ACCESS_REMOTE_READ, FR_IOVA, 8192, FR_FIRST, 0x100);
    ring_sq(SB, QPN);
    pump();
    EXPECT_CQE(SB, 1, QPN, 0, QSW_WC_REG_MR, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    /* QUERY_STAG: device truth, with the new key. */
    CQP_OK(cqp(SB, QRDMA_CQP_OP_QUERY_STAG, fr_stag, INFO, 0, 0, 0, 0));
    memcpy(ctx, mem(SB, INFO), 64);
    CHECK_EQ(ctx[0] & 3, QRDMA_MR_STATE_VALID);
    CHECK_EQ(ctx[1], 0x21);
    CHECK_EQ(r64(SB, INFO + 16), FR_IOVA);
    CHECK_EQ(r64(SB, INFO + 24), 8192);

    post_send(SA, QPN, &wr);
    post_send(SA, QPN, &rd);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_RDMA_READ, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    /* IOVA + x is page (0x100 + x) / 4K of the list at offset (0x100 + x) % 4K. */
    CHECK(!memcmp(dbuf(SA, 0x5000), dbuf(SB, 0xc3100), 0xf00));
    CHECK(!memcmp(dbuf(SA, 0x5f00), dbuf(SB, 0xc1000), 0x1000));
    CHECK(!memcmp(dbuf(SA, 0x6f00), dbuf(SB, 0xc5000), 0x100));
    CHECK_EQ(*dbuf(SB, 0xc30ff), 0xcc);
    CHECK_EQ(*dbuf(SB, 0xc5100), 0xcc);
    CHECK_EQ(*dbuf(SB, 0xc2000), 0xcc);
    /* The READ crossed the first page boundary of the list. */
    CHECK(!memcmp(dbuf(SA, 0x9000), dbuf(SA, 0x5000 + 0xe00), 0x400));

    /* LOCAL_INV, then a WRITE through the dead rkey: remote access error. */
    post_send(SB, QPN, &inv);
    ring_sq(SB, QPN);
    pump();
    EXPECT_CQE(SB, 1, QPN, 1, QSW_WC_LOCAL_INV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK_EQ(SB->core.obj.mr[FR_INDEX].state, QRDMA_MR_STATE_FREE);
    post_send(SA, QPN, &wr);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 2, QSW_WC_RDMA_WRITE, QSW_WC_REM_ACCESS_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(logged(SB, "STag 0x00000221"));
    no_errors(SA);
}

/* Re-registering with another key: the old key stops working at once. */
static void test_fast_reg_rekey(void)
{
    const uint32_t k1 = FR_INDEX << QRDMA_STAG_INDEX_SHIFT | 0x21;
    const uint32_t k2 = FR_INDEX << QRDMA_STAG_INDEX_SHIFT | 0x22;
    struct wqe inv = { .op = QRDMA_SQ_OP_LOCAL_INV, .imm = k1 };
    struct wqe wr = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = FR_IOVA - IOVA,
                      .rkey = k2, .nsge = 1, .sge = { { 0x5000, 64, 0 } } };
    struct wqe old = wr;

    rc_pair();
    fast_reg_mr_alloc();
    old.rkey = k1;
    post_fast_reg(SB, QPN, k1, QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE, FR_IOVA,
                  4096, FR_FIRST, 0);
    post_send(SB, QPN, &inv);
    post_fast_reg(SB, QPN, k2, QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE, FR_IOVA,
                  4096, FR_FIRST, 0);
    ring_sq(SB, QPN);
    pump();
    EXPECT_CQE(SB, 1, QPN, 0, QSW_WC_REG_MR, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 1, QPN, 1, QSW_WC_LOCAL_INV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 1, QPN, 2, QSW_WC_REG_MR, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    fill(SA, 0x5000, 64, 3);
    post_send(SA, QPN, &wr);
    post_send(SA, QPN, &old);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_RDMA_WRITE, QSW_WC_REM_ACCESS_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x5000), dbuf(SB, 0xc3000), 64));
}

/*
 * Bad fast registrations complete with LOC_QP_OP_ERR, flush what follows,
 * and leave the MR as it was: a MEM MR, a VALID one, more pages than
 * reserved, another PBLE range, bad ACCESS.
 */
static void test_fast_reg_bad(void)
{
    const uint32_t k = FR_INDEX << QRDMA_STAG_INDEX_SHIFT | 0x21;
    const uint32_t rw = QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE;
    static const struct {
        const char *log;
        uint32_t stag, access;
        uint64_t len, first, fbo;
        bool make_valid;
    } cases[] = {
        { "not a free fast-register MR", MR_STAG, rw, 4096, FR_FIRST, 0, false },
        { "not a free fast-register MR", k, rw, 4096, FR_FIRST, 0, true },
        { "5 pages, but the MR has room for 4", k, rw, 4 * 4096, FR_FIRST, 0x10, false },
        { "must be one level at the MR's own PBLE", k, rw, 4096, FR_FIRST + 1, 0, false },
        { "ACCESS 0x2 is not valid", k, QRDMA_ACCESS_REMOTE_WRITE, 4096, FR_FIRST, 0, false },
        { "do not make a region", k, rw, 0, FR_FIRST, 0, false },
        { "do not make a region", k, rw, 4096, FR_FIRST, 4096, false },
        { "no such MR", 500u << QRDMA_STAG_INDEX_SHIFT, rw, 4096, FR_FIRST, 0, false },
    };
    struct wqe snd = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 16, 0 } } };
    unsigned c;

    for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        uint32_t idx = 0;

        rc_pair();
        fast_reg_mr_alloc();
        if (cases[c].make_valid) {
            post_fast_reg(SB, QPN, k, rw, FR_IOVA, 4096, FR_FIRST, 0);
            ring_sq(SB, QPN);
            pump();
            EXPECT_CQE(SB, 1, QPN, idx++, QSW_WC_REG_MR, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
        }
        log_clear(SB);
        post_fast_reg(SB, QPN, cases[c].stag, cases[c].access, FR_IOVA, cases[c].len,
                      cases[c].first, cases[c].fbo);
        post_send(SB, QPN, &snd);
        ring_sq(SB, QPN);
        pump();
        EXPECT_CQE(SB, 1, QPN, idx, QSW_WC_REG_MR, QSW_WC_LOC_QP_OP_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
        EXPECT_CQE(SB, 1, QPN, idx + 1, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ,
                   ~0u);
        CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_ERR);
        if (!logged(SB, cases[c].log)) {
            fprintf(stderr, "  case %u: no log line with '%s'\n", c, cases[c].log);
            unit_failures++;
        }
        CHECK_EQ(SB->core.obj.mr[FR_INDEX].state,
                 cases[c].make_valid ? QRDMA_MR_STATE_VALID : QRDMA_MR_STATE_FREE);
        CHECK_EQ(SB->core.obj.mr[MR_INDEX].state, QRDMA_MR_STATE_VALID);
    }
}

/* ---- device reset with traffic in flight ------------------------------------------------ */

/* A's loopback pair: QP 3 <-> QP 4 on A itself, through A's loopback queue. */
#define LB_QP1      3
#define LB_QP2      4

/*
 * DEV_CTRL RESET on A (the reset an FLR or a system reset also runs:
 * qrdma_core_reset) while RC traffic is everywhere at once: WRITEs, a
 * READ and SENDs both ways between A and B, barely begun: frames on the
 * wire both ways, A's retransmit timer armed, A's loopback pair with
 * frames in A's loopback queue and, with `held`, every frame A sent held
 * back in its engine by the fault hook. After the reset: A is empty (no
 * objects, no transport QPs, no queued or held frames), it sends nothing
 * and writes nothing into its guest RAM however long B retransmits at it
 * and its stale timer and kicks fire (the driver frees that memory right
 * after the reset), B's QP fails with RETRY_EXC_ERR as a peer that
 * vanished makes it, and A brought up again carries traffic with B.
 * Under ASan this is also the check that nothing freed at the reset is
 * used later.
 */
static void reset_in_flight(bool held)
{
    struct qsw_stats st;
    uint8_t *snap = malloc(RAM_SIZE);
    int sent_at_reset, n, retry_exc, flushed, ok;
    struct cqe e;
    unsigned i;

    rc_pair();
    create_qp(SA, LB_QP1, &rc_spec);
    create_qp(SA, LB_QP2, &rc_spec);
    rc_to_rts(SA, LB_QP1, SA, LB_QP2, 7);
    rc_to_rts(SA, LB_QP2, SA, LB_QP1, 7);
    if (held) {
        const struct qsw_fault f = { .delay_ns = 500000, .seed = 1 };

        qsw_engine_set_fault(qrdma_be_sw_engine(SA->core.dp.be), &f);
    }

    /* A -> B: 4 WRITEs of 16 KB, a READ of 16 KB, a SEND; B -> A: a WRITE, a READ, a SEND. */
    for (i = 0; i < 4; i++) {
        struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x40000 + i * 0x4000,
                         .nsge = 1, .sge = { { 0x10000 + i * 0x4000, 0x4000, 0 } } };

        fill(SA, 0x10000 + i * 0x4000, 0x4000, i);
        post_send(SA, QPN, &w);
    }
    {
        struct wqe r = { .op = QRDMA_SQ_OP_RDMA_READ, .remote_off = 0x60000, .nsge = 1,
                         .sge = { { 0x80000, 0x4000, 0 } } };
        struct wqe snd = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x90000, 3000, 0 } } };
        struct wqe bw = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0xa0000, .nsge = 1,
                          .sge = { { 0x10000, 0x4000, 0 } } };
        struct wqe br = { .op = QRDMA_SQ_OP_RDMA_READ, .remote_off = 0x10000, .nsge = 1,
                          .sge = { { 0x20000, 0x4000, 0 } } };

        post_send(SA, QPN, &r);
        post_recv(SB, QPN, 0x90000, 4096);
        post_send(SA, QPN, &snd);
        post_recv(SA, QPN, 0x98000, 4096);
        post_send(SB, QPN, &bw);
        post_send(SB, QPN, &br);
        post_send(SB, QPN, &snd);
        /* The loopback pair: 3 WRITEs of 64 KB and a SEND from QP 3 to QP 4. */
        for (i = 0; i < 3; i++) {
            bw.remote_off = 0x100000 - 0x10000 * (i + 1);
            bw.sge[0].len = 0x10000;
            post_send(SA, LB_QP1, &bw);
        }
        post_recv(SA, LB_QP2, 0xd0000, 4096);
        post_send(SA, LB_QP1, &snd);
    }
    ring_sq(SA, QPN);
    ring_sq(SB, QPN);
    ring_sq(SA, LB_QP1);

    /*
     * A little of it: one frame delivered (with `held`, a few of B's), the
     * rest wherever it is.
     */
    pump_some(held ? 8 : 1);
    qsw_engine_stats(qrdma_be_sw_engine(SA->core.dp.be), &st);
    CHECK(st.tx_frames > 0);
    CHECK(frames_in_flight > 0);
    if (held) {
        CHECK_EQ(SA->frames_sent, 0);               /* every frame of A's is held */
        CHECK(SA->core.dp.deadline != UINT64_MAX);  /* their release, retransmits */
    } else {
        CHECK(SA->frames_sent > 0);
        CHECK(SA->core.dp.loop_len > 0);
    }
    CHECK_EQ(reg_r(SA, QRDMA_REG_OBJ_COUNT_QP), 3);

    reg_w(SA, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    sent_at_reset = SA->frames_sent;
    CHECK_EQ(reg_r(SA, QRDMA_REG_PE_STATUS), 0);
    CHECK_EQ(reg_r(SA, QRDMA_REG_OBJ_COUNT_QP), 0);
    CHECK_EQ(reg_r(SA, QRDMA_REG_OBJ_COUNT_CQ), 0);
    CHECK_EQ(reg_r(SA, QRDMA_REG_OBJ_COUNT_MR), 0);
    CHECK(SA->core.dp.be != NULL);
    CHECK(SA->core.dp.qp == NULL);
    CHECK(SA->core.dp.loop_head == NULL);
    CHECK_EQ(SA->core.dp.loop_len, 0);
    CHECK_EQ(SA->core.dp.fifo_len, 0);
    CHECK_EQ(SA->core.dp.deadline, UINT64_MAX);
    qsw_engine_stats(qrdma_be_sw_engine(SA->core.dp.be), &st);
    CHECK_EQ(st.tx_frames, 0);
    CHECK(snap != NULL);
    if (!snap) {
        return;
    }
    memcpy(snap, SA->ram, RAM_SIZE);

    /*
     * B retransmits at A until it gives up; A's stale timer and kicks
     * (the glue does not cancel them for a DEV_CTRL reset) fire too.
     */
    CHECK(SA->timer != UINT64_MAX || SA->kicks);
    pump_ms(5000);
    CHECK_EQ(SA->frames_sent, sent_at_reset);
    CHECK(!memcmp(snap, SA->ram, RAM_SIZE));
    free(snap);
    CHECK_EQ(frames_in_flight, 0);
    no_errors(SA);

    /* B: what A had not acknowledged fails, the rest is flushed; the QP is in error. */
    n = retry_exc = flushed = ok = 0;
    while (poll_cq(SB, 1, &e)) {
        n++;
        retry_exc += e.status == QSW_WC_RETRY_EXC_ERR;
        flushed += e.status == QSW_WC_WR_FLUSH_ERR;
        ok += e.status == QSW_WC_SUCCESS;
    }
    CHECK_EQ(n, 3);
    CHECK_EQ(retry_exc, 1);
    CHECK_EQ(ok + retry_exc + flushed, 3);
    CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_ERR);
    CHECK_EQ(SB->timer == UINT64_MAX || SB->core.dp.deadline == UINT64_MAX, 1);

    /* A again, as the driver brings it up after a reset; B a new QP. */
    side_bringup(SA);
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_qp(SA, QPN, &rc_spec);
    CQP_OK(cqp(SB, QRDMA_CQP_OP_DESTROY_QP, QPN, 0, 0, 0, 0, 0));
    memset(mem(SB, SQ_RING(QPN)), 0, 0x8000);
    while (poll_cq(SB, 2, &e)) {
    }
    create_qp(SB, QPN, &rc_spec);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    log_clear(SB);
    {
        struct wqe snd = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x90000, 3000, 0 } } };
        struct wqe bw = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0xe0000, .nsge = 1,
                          .sge = { { 0x30000, 0x4000, 0 } } };

        fill(SA, 0x90000, 3000, 40);
        fill(SB, 0x30000, 0x4000, 41);
        post_recv(SB, QPN, 0x70000, 4096);
        post_send(SA, QPN, &snd);
        post_send(SB, QPN, &bw);
        ring_sq(SA, QPN);
        ring_sq(SB, QPN);
        pump_ms(1000);
        EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
        EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 3000);
        EXPECT_CQE(SB, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
        CHECK(!memcmp(dbuf(SA, 0x90000), dbuf(SB, 0x70000), 3000));
        CHECK(!memcmp(dbuf(SB, 0x30000), dbuf(SA, 0xe0000), 0x4000));
    }
    no_errors(SA);
    no_errors(SB);
}

static void test_reset_in_flight(void)
{
    reset_in_flight(false);
}

static void test_reset_in_flight_held(void)
{
    reset_in_flight(true);
}

/*
 * ---- interrupts that come back into the device ------------------------------------
 *
 * A guest may aim an MSI-X vector at a register: BAR0 DEV_CTRL, its own
 * config space (FLR), a bridge's Secondary Bus Reset or a slot's power
 * control. Then delivering the interrupt resets or removes the device,
 * or writes its BARs, from inside its own work. The hook below does that
 * on A's first interrupt (a completion on A's armed send CQ); ASan would
 * see the engine or the object arrays freed under the work that raised it.
 */
enum irq_action { IRQ_RESET, IRQ_DEV_CTRL, IRQ_UNPLUG, IRQ_MMIO, IRQ_FRAME, IRQ_FRAME_ASK };

static enum irq_action irq_action;
static int irq_hook_runs;
static bool irq_hook_saw_busy;
static size_t irq_frame_taken;
static bool irq_frame_can;

static void irq_hook(struct side *s, unsigned vector)
{
    static const uint8_t runt[64] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

    if (s != SA || irq_hook_runs++) {
        return;
    }
    irq_hook_saw_busy = qrdma_core_busy(&s->core);
    switch (irq_action) {
    case IRQ_RESET:                         /* FLR or bus reset through the embedding */
        qrdma_core_reset(&s->core);
        break;
    case IRQ_DEV_CTRL:
        qrdma_core_reg_write(&s->core, QRDMA_REG_DEV_CTRL, 4, QRDMA_DEV_CTRL_RESET);
        break;
    case IRQ_UNPLUG:
        qrdma_core_fini(&s->core);
        break;
    case IRQ_MMIO:
        qrdma_core_reg_write(&s->core, QRDMA_REG_SCRATCH, 4, 0x5a5a);
        qrdma_core_db_write(&s->core, QRDMA_DB_SQ, 4, QPN);
        break;
    case IRQ_FRAME:                         /* handed over without asking */
        irq_frame_taken = qrdma_core_lan_receive(&s->core, runt, sizeof(runt));
        break;
    case IRQ_FRAME_ASK:                     /* as QEMU's net layer: ask, then queue */
        irq_frame_can = qrdma_core_lan_can_receive(&s->core);
        break;
    }
}

/* A and B connected, A's send CQ armed to raise vector 1 through CEQ 0. */
static void irq_pair(void)
{
    setup();
    create_cq_ex(SA, 1, 4, true);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq(SB, 2);
    create_qp(SA, QPN, &rc_spec);
    create_qp(SB, QPN, &rc_spec);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    pump();
    reg_w(SA, QRDMA_REG_CEQCTL(0), QRDMA_EQCTL_CAUSE_ENA | 1);
    reg_w(SA, QRDMA_REG_DYN_CTL(1), QRDMA_DYN_CTL_INTENA);
    arm(SA, 1, QRDMA_CQ_ARM_NEXT);
    irq_hook_runs = 0;
    irq_hook_saw_busy = false;
    dp_tb_irq_hook = irq_hook;
}

/* Four 16 KB WRITEs A -> B; with deliver, run until the hook has run. */
static void irq_traffic(void)
{
    unsigned i;

    for (i = 0; i < 4; i++) {
        struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x40000 + i * 0x4000,
                         .nsge = 1, .sge = { { 0x10000 + i * 0x4000, 0x4000, 0 } } };

        fill(SA, 0x10000 + i * 0x4000, 0x4000, 50 + i);
        post_send(SA, QPN, &w);
    }
    ring_sq(SA, QPN);
    while (!irq_hook_runs && (SA->kicks || SB->kicks || frames_in_flight)) {
        pump_some(1);
    }
    CHECK_EQ(irq_hook_runs, 1);
    CHECK(irq_hook_saw_busy);
}

/* After a reset from an interrupt: A is quiet for good, B's QP fails over. */
static void expect_reset_quiet(void)
{
    uint8_t *snap = malloc(RAM_SIZE);
    int sent;

    CHECK_EQ(SA->core.stats.resets_deferred, 1);
    CHECK_EQ(reg_r(SA, QRDMA_REG_PE_STATUS), 0);
    CHECK_EQ(reg_r(SA, QRDMA_REG_OBJ_COUNT_QP), 0);
    CHECK_EQ(reg_r(SA, QRDMA_REG_OBJ_COUNT_CQ), 0);
    CHECK(snap != NULL);
    if (!snap) {
        return;
    }
    memcpy(snap, SA->ram, RAM_SIZE);
    sent = SA->frames_sent;
    pump_ms(5000);
    CHECK_EQ(SA->frames_sent, sent);
    CHECK(!memcmp(snap, SA->ram, RAM_SIZE));
    free(snap);
    CHECK_EQ(frames_in_flight, 0);
}

static void test_irq_resets_device(void)
{
    irq_action = IRQ_RESET;
    irq_pair();
    irq_traffic();
    dp_tb_irq_hook = NULL;
    expect_reset_quiet();
}

static void test_irq_writes_dev_ctrl(void)
{
    irq_action = IRQ_DEV_CTRL;
    irq_pair();
    irq_traffic();
    dp_tb_irq_hook = NULL;
    expect_reset_quiet();
}

/* The same from the retransmit timer: B hears nothing, A's WRITE fails from the timer. */
static void test_irq_from_timer_resets_device(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x40000, .nsge = 1,
                     .sge = { { 0x10000, 0x1000, 0 } } };

    rc_retry_cnt = 1;
    irq_action = IRQ_RESET;
    irq_pair();
    post_send(SA, QPN, &w);
    drop_frames = 1000;
    ring_sq(SA, QPN);
    pump_ms(30000);
    dp_tb_irq_hook = NULL;
    rc_retry_cnt = 3;
    CHECK_EQ(irq_hook_runs, 1);
    CHECK(irq_hook_saw_busy);
    drop_frames = 0;
    expect_reset_quiet();
}

/* Hot-unplug from an interrupt: the teardown waits for the work to return. */
static void test_irq_unplugs_device(void)
{
    irq_action = IRQ_UNPLUG;
    irq_pair();
    irq_traffic();
    dp_tb_irq_hook = NULL;
    CHECK(SA->core.dp.be == NULL);
    CHECK(SA->core.obj.qp == NULL);
    /* The device is gone: nothing more reaches it; B's retries run out. */
    fq_clear();
    SA->kicks = 0;
    SA->timer = UINT64_MAX;
    side_up(SA, 0);
}

/* BAR writes from an interrupt are refused and change nothing; the traffic goes on. */
static void test_irq_mmio_refused(void)
{
    struct cqe e;
    unsigned i;

    irq_action = IRQ_MMIO;
    irq_pair();
    log_clear(SA);
    irq_traffic();
    dp_tb_irq_hook = NULL;
    CHECK_EQ(SA->core.stats.reentries_refused, 2);
    CHECK(logged(SA, "BAR0 write at 0x"));
    CHECK(logged(SA, "doorbell write at 0x"));
    CHECK_EQ(reg_r(SA, QRDMA_REG_SCRATCH), 0);
    pump_ms(1000);
    for (i = 0; i < 4; i++) {
        CHECK(poll_cq(SA, 1, &e));
        CHECK_EQ(e.status, QSW_WC_SUCCESS);
        CHECK(!memcmp(dbuf(SA, 0x10000 + i * 0x4000), dbuf(SB, 0x40000 + i * 0x4000), 0x4000));
    }
    CHECK_EQ(SA->core.stats.resets, 1);
}

/* A frame handed in from an interrupt is held back, then asked for again. */
static void test_irq_frame_held(void)
{
    struct cqe e;
    int ready;

    irq_action = IRQ_FRAME;
    irq_pair();
    irq_frame_taken = 1;
    ready = SA->rx_ready_calls;
    irq_traffic();
    dp_tb_irq_hook = NULL;
    CHECK_EQ(irq_frame_taken, 0);
    CHECK_EQ(SA->rx_ready_calls, ready + 1);
    CHECK_EQ(SA->core.stats.reentries_refused, 1);
    CHECK(qrdma_core_lan_can_receive(&SA->core));
    pump_ms(1000);
    CHECK(poll_cq(SA, 1, &e));
    CHECK_EQ(e.status, QSW_WC_SUCCESS);
}

/* Asked from an interrupt whether it can receive: no, and it asks for the frame later. */
static void test_irq_frame_asked(void)
{
    int ready;

    irq_action = IRQ_FRAME_ASK;
    irq_pair();
    irq_frame_can = true;
    ready = SA->rx_ready_calls;
    irq_traffic();
    dp_tb_irq_hook = NULL;
    CHECK(!irq_frame_can);
    CHECK_EQ(SA->rx_ready_calls, ready + 1);
    CHECK(qrdma_core_lan_can_receive(&SA->core));
}


/* ---- port counters (block 0x5000, docs/hw-spec.md section 20) ----------------------- */

static uint8_t icrc_frame[2048];
static size_t icrc_frame_len;

static int icrc_wire(struct side *from, const uint8_t *frame, size_t len)
{
    if (!icrc_frame_len && len <= sizeof(icrc_frame)) {
        memcpy(icrc_frame, frame, len);
        icrc_frame_len = len;
    }
    return 0;
}

/*
 * Each counted event, provoked once, moves its counter on the side where it
 * happens, and only there; a device reset zeroes them all.
 */
static void test_port_counters(void)
{
    struct wqe snd = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 3000, 0 } } };
    struct wqe one = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };
    struct wqe wr = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x30000, .nsge = 1,
                      .sge = { { 0x5000, 100, 0 } } };
    struct wqe rd = { .op = QRDMA_SQ_OP_RDMA_READ, .remote_off = 0x20000, .nsge = 1,
                      .sge = { { 0x6000, 100, 0 } } };
    struct wqe fa = { .op = QRDMA_SQ_OP_ATOMIC_FETCH_AND_ADD, .remote_off = 0x40008,
                      .compare_add = 1, .nsge = 1, .sge = { { 0x100, 8, 0 } } };
    struct wqe bad = wr;
    uint64_t v;
    unsigned i;

    rc_pair();
    CHECK_EQ(reg_r(SA, QRDMA_REG_STATS_NUM), QRDMA_STAT_NUM);
    for (i = 0; i < QRDMA_STAT_NUM; i++) {
        CHECK_EQ(port_stat(SA, i), 0);
    }

    /* A clean SEND of 3 packets: packets and bytes agree across the wire. */
    post_recv(SB, QPN, 0x9000, 4096);
    post_send(SA, QPN, &snd);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 3000);
    CHECK(port_stat(SA, QRDMA_STAT_TX_PKTS) >= 3);
    CHECK_EQ(port_stat(SA, QRDMA_STAT_TX_PKTS), port_stat(SB, QRDMA_STAT_RX_PKTS));
    CHECK_EQ(port_stat(SA, QRDMA_STAT_TX_BYTES), port_stat(SB, QRDMA_STAT_RX_BYTES));
    CHECK_EQ(port_stat(SB, QRDMA_STAT_TX_PKTS), port_stat(SA, QRDMA_STAT_RX_PKTS));
    CHECK(port_stat(SA, QRDMA_STAT_TX_BYTES) > 3000);
    CHECK_EQ(port_stat(SA, QRDMA_STAT_RETRANS_PKTS), 0);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_OUT_OF_SEQUENCE), 0);

    /* The first packet lost: B sees the others out of sequence and NAKs; A resends. */
    post_recv(SB, QPN, 0x9000, 4096);
    post_send(SA, QPN, &snd);
    drop_frames = 1;
    ring_sq(SA, QPN);
    pump_ms(1000);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 1, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 3000);
    CHECK(port_stat(SB, QRDMA_STAT_OUT_OF_SEQUENCE) >= 1);
    CHECK_EQ(port_stat(SA, QRDMA_STAT_PACKET_SEQ_ERR), 1);
    CHECK(port_stat(SA, QRDMA_STAT_RETRANS_PKTS) >= 3);
    CHECK_EQ(port_stat(SA, QRDMA_STAT_OUT_OF_SEQUENCE), 0);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_PACKET_SEQ_ERR), 0);

    /* The ACK lost: A's timer expires, it resends, B sees a duplicate. */
    post_recv(SB, QPN, 0x9000, 4096);
    post_send(SA, QPN, &one);
    ring_sq(SA, QPN);
    pump_some(1);
    drop_frames = 1;
    pump_ms(1000);
    EXPECT_CQE(SA, 1, QPN, 2, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 2, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 100);
    CHECK(port_stat(SA, QRDMA_STAT_LOCAL_ACK_TIMEOUT) >= 1);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_LOCAL_ACK_TIMEOUT), 0);
    CHECK(port_stat(SB, QRDMA_STAT_DUPLICATE_REQUEST) >= 1);
    CHECK_EQ(port_stat(SA, QRDMA_STAT_DUPLICATE_REQUEST), 0);

    /* No receive posted: B sends RNR NAKs, A receives them. */
    CHECK_EQ(port_stat(SB, QRDMA_STAT_RNR_NAK_SENT), 0);
    post_send(SA, QPN, &one);
    ring_sq(SA, QPN);
    pump();
    CHECK(port_stat(SB, QRDMA_STAT_RNR_NAK_SENT) >= 1);
    CHECK_EQ(port_stat(SA, QRDMA_STAT_RNR_NAK_RCVD), port_stat(SB, QRDMA_STAT_RNR_NAK_SENT));
    CHECK_EQ(port_stat(SA, QRDMA_STAT_RNR_NAK_SENT), 0);
    post_recv(SB, QPN, 0x9000, 4096);
    pump_ms(100);
    EXPECT_CQE(SA, 1, QPN, 3, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 3, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 100);

    /* Requests by kind, counted at the responder. */
    post_send(SA, QPN, &wr);
    post_send(SA, QPN, &wr);
    post_send(SA, QPN, &rd);
    post_send(SA, QPN, &fa);
    ring_sq(SA, QPN);
    pump();
    for (i = 4; i < 8; i++) {
        struct cqe e;

        CHECK(poll_cq(SA, 1, &e) && e.status == QSW_WC_SUCCESS);
    }
    CHECK_EQ(port_stat(SB, QRDMA_STAT_RX_WRITE_REQUESTS), 2);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_RX_READ_REQUESTS), 1);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_RX_ATOMIC_REQUESTS), 1);
    CHECK_EQ(port_stat(SA, QRDMA_STAT_RX_WRITE_REQUESTS), 0);
    CHECK_EQ(port_stat(SA, QRDMA_STAT_REQ_CQE_ERROR), 0);

    /* A frame with a bad ICRC is dropped and counted. */
    dp_tb_wire = icrc_wire;
    post_send(SA, QPN, &wr);
    ring_sq(SA, QPN);
    pump();
    dp_tb_wire = NULL;
    CHECK(icrc_frame_len > 4);
    icrc_frame[icrc_frame_len - 1] ^= 0x40;
    v = port_stat(SB, QRDMA_STAT_RX_PKTS);
    qrdma_core_lan_receive(&SB->core, icrc_frame, icrc_frame_len);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_ICRC_ERR), 1);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_RX_PKTS), v + 1);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_RX_WRITE_REQUESTS), 2);
    /* The real one (the ICRC fixed back) goes through. */
    icrc_frame[icrc_frame_len - 1] ^= 0x40;
    qrdma_core_lan_receive(&SB->core, icrc_frame, icrc_frame_len);
    pump_ms(100);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_RX_WRITE_REQUESTS), 3);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);

    /* A bad rkey: one error CQE and flushes on A's send side, flushes on both receive sides. */
    bad.rkey = MR_STAG ^ 0x01;
    post_recv(SA, QPN, 0x9000, 256);
    post_send(SA, QPN, &bad);
    post_send(SA, QPN, &one);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_RDMA_WRITE, QSW_WC_REM_ACCESS_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 2, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 2, QPN, 0, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);
    CHECK_EQ(port_stat(SA, QRDMA_STAT_REQ_CQE_ERROR), 1);
    CHECK_EQ(port_stat(SA, QRDMA_STAT_REQ_CQE_FLUSH), 1);
    CHECK_EQ(port_stat(SA, QRDMA_STAT_RESP_CQE_FLUSH), 1);
    CHECK_EQ(port_stat(SA, QRDMA_STAT_RESP_CQE_ERROR), 0);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_REQ_CQE_ERROR), 0);
    aeq_drain(SB);
    log_clear(SB);

    /* A receive too short for the message: an error CQE on B's receive side. */
    rc_pair();
    post_recv(SB, QPN, 0x9000, 10);
    post_send(SA, QPN, &one);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_LOC_LEN_ERR, 0, ~0u);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_RESP_CQE_ERROR), 1);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_REQ_CQE_ERROR), 0);

    /* The snapshot holds still until the next one; halves come from one 64-bit value. */
    SB->core.port_stats.live[QRDMA_STAT_REQ_CQE_FLUSH] = 0x100000002ull;
    CHECK_EQ(reg_r(SB, QRDMA_REG_STAT_LO(QRDMA_STAT_REQ_CQE_FLUSH)), 0);
    CHECK_EQ(reg_r(SB, QRDMA_REG_STAT_HI(QRDMA_STAT_REQ_CQE_FLUSH)), 0);
    CHECK_EQ(port_stat(SB, QRDMA_STAT_REQ_CQE_FLUSH), 0x100000002ull);
    CHECK_EQ(reg_r(SB, QRDMA_REG_STATS_CTRL), 0);
    no_errors(SB);
    /* Reserved bits of STATS_CTRL and a write to a counter are guest errors. */
    reg_w(SB, QRDMA_REG_STATS_CTRL, 2);
    CHECK(logged(SB, "STATS_CTRL"));
    reg_w(SB, QRDMA_REG_STAT_LO(0), 1);
    CHECK(logged(SB, "STAT_TX_PKTS_LO"));
    reg_r(SB, QRDMA_REG_STAT_LO(QRDMA_STAT_NUM));
    CHECK(logged(SB, "no register there"));
    log_clear(SB);

    /* A device reset zeroes every counter and the snapshot. */
    CHECK(port_stat(SB, QRDMA_STAT_RX_PKTS) > 0);
    reg_w(SB, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    for (i = 0; i < QRDMA_STAT_NUM; i++) {
        CHECK_EQ(reg_r(SB, QRDMA_REG_STAT_LO(i)), 0);
        CHECK_EQ(port_stat(SB, i), 0);
    }
    fq_clear();
}

/* ---- trace events (struct qrdma_trace_ev through env.trace) --------------------------- */

#define TRACE_N 256
static struct qrdma_trace_ev traced[TRACE_N];
static int traced_n;

static void record_trace(void *opaque, const struct qrdma_trace_ev *ev)
{
    if (traced_n < TRACE_N) {
        traced[traced_n++] = *ev;
    }
}

/* Was an event of kind traced whose name (and name2, unless NULL) are these? */
static bool was_traced(enum qrdma_trace_kind kind, const char *name, const char *name2)
{
    int i;

    for (i = 0; i < traced_n; i++) {
        if (traced[i].kind == kind && (!name || (traced[i].name && !strcmp(traced[i].name, name))) &&
            (!name2 || (traced[i].name2 && !strcmp(traced[i].name2, name2)))) {
            return true;
        }
    }
    fprintf(stderr, "  no trace event of kind %d (%s, %s)\n", kind, name ? name : "-",
            name2 ? name2 : "-");
    return false;
}

/*
 * The core's trace points fire where their events happen, with the queue
 * and the field: CQP commands with their status, QP state changes by
 * MODIFY_QP and by the transport, CEQ and AEQ posts, CQ overflow, bad
 * doorbells, retransmissions and NAKs.
 */
static void test_trace_events(void)
{
    struct wqe snd = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 3000, 0 } } };
    struct wqe bad = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x30000,
                       .rkey = MR_STAG ^ 0x01, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };
    int i;

    setup();
    SA->core.env.trace = record_trace;
    SB->core.env.trace = record_trace;
    traced_n = 0;
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq_ex(SB, 2, 4, true);           /* events to CEQ 0 */
    create_qp(SA, QPN, &rc_spec);
    create_qp(SB, QPN, &rc_spec);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    pump();
    CHECK(was_traced(QRDMA_TRACE_CQP_CMD, "CREATE_QP", NULL));
    for (i = 0; i < traced_n; i++) {
        if (traced[i].kind == QRDMA_TRACE_CQP_CMD && !strcmp(traced[i].name, "CREATE_QP")) {
            CHECK_EQ(traced[i].b, QRDMA_CQP_OP_CREATE_QP);
            CHECK_EQ(traced[i].c, 0);       /* major: success */
        }
    }
    CHECK(was_traced(QRDMA_TRACE_QP_STATE, "RESET", "INIT"));
    CHECK(was_traced(QRDMA_TRACE_QP_STATE, "RTR", "RTS"));

    /* A failing command is traced with its status. */
    traced_n = 0;
    CHECK(major_of(cqp(SA, QRDMA_CQP_OP_DESTROY_QP, 77, 0, 0, 0, 0, 0)) != 0);
    CHECK(was_traced(QRDMA_TRACE_CQP_CMD, "DESTROY_QP", NULL) && traced_n >= 1);
    for (i = 0; i < traced_n; i++) {
        if (traced[i].kind == QRDMA_TRACE_CQP_CMD) {
            CHECK(traced[i].c != 0);
        }
    }
    log_clear(SA);

    /* The first packet lost: B NAKs the sequence, A goes back. */
    traced_n = 0;
    arm(SB, 2, QRDMA_CQ_ARM_NEXT);
    post_recv(SB, QPN, 0x9000, 4096);
    post_send(SA, QPN, &snd);
    drop_frames = 1;
    ring_sq(SA, QPN);
    pump_ms(1000);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 3000);
    CHECK(was_traced(QRDMA_TRACE_CEQ_POST, NULL, NULL));    /* B's armed CQ */
    CHECK(was_traced(QRDMA_TRACE_TP_NAK, "seq", "sent"));
    CHECK(was_traced(QRDMA_TRACE_TP_NAK, "seq", "received"));
    CHECK(was_traced(QRDMA_TRACE_TP_RETRANSMIT, "nak", NULL));

    /* No receive: RNR NAKs, then the resend when the wait is over. */
    traced_n = 0;
    snd.sge[0].len = 100;
    post_send(SA, QPN, &snd);
    ring_sq(SA, QPN);
    pump();
    post_recv(SB, QPN, 0x9000, 4096);
    pump_ms(100);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 1, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 100);
    CHECK(was_traced(QRDMA_TRACE_TP_NAK, "rnr", "sent"));
    CHECK(was_traced(QRDMA_TRACE_TP_NAK, "rnr", "received"));
    CHECK(was_traced(QRDMA_TRACE_TP_RETRANSMIT, "rnr", NULL));

    /* A bad rkey: an access NAK, both QPs to ERR by the transport, B's AEQE. */
    traced_n = 0;
    post_send(SA, QPN, &bad);
    ring_sq(SA, QPN);
    pump();
    CHECK(was_traced(QRDMA_TRACE_TP_NAK, "access", "sent"));
    CHECK(was_traced(QRDMA_TRACE_QP_STATE, "RTS", "ERR"));
    CHECK(was_traced(QRDMA_TRACE_AEQ_POST, NULL, NULL));
    for (i = 0; i < traced_n; i++) {
        if (traced[i].kind == QRDMA_TRACE_QP_STATE) {
            CHECK_EQ(traced[i].a, QPN);
            CHECK_EQ(traced[i].b, 1);       /* moved by the transport */
        }
    }
    aeq_drain(SB);
    log_clear(SB);

    /* A doorbell naming no QP. */
    traced_n = 0;
    db(SA, 0, QRDMA_DB_SQ, 9);
    pump();
    CHECK(was_traced(QRDMA_TRACE_BAD_DOORBELL, NULL, NULL));
    CHECK_EQ(traced[0].a, 0);
    CHECK_EQ(traced[0].c, 9);
    log_clear(SA);
    aeq_drain(SA);

    /* Without a tracer nothing is called (env.trace is optional). */
    SA->core.env.trace = NULL;
    traced_n = 0;
    db(SA, 0, QRDMA_DB_SQ, 9);
    pump();
    CHECK_EQ(traced_n, 0);
    SB->core.env.trace = NULL;
    log_clear(SA);
    fq_clear();
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_send_recv),
    UNIT_TEST(test_uc),
    UNIT_TEST(test_ring_wrap),
    UNIT_TEST(test_send_with_imm),
    UNIT_TEST(test_rdma_write),
    UNIT_TEST(test_rdma_write_with_imm),
    UNIT_TEST(test_rdma_read),
    UNIT_TEST(test_atomics),
    UNIT_TEST(test_inline),
    UNIT_TEST(test_multi_sge),
    UNIT_TEST(test_unsignaled),
    UNIT_TEST(test_sig_all),
    UNIT_TEST(test_nop),
    UNIT_TEST(test_ud),
    UNIT_TEST(test_ud_bad_ah),
    UNIT_TEST(test_srq),
    UNIT_TEST(test_cq_arm),
    UNIT_TEST(test_bad_rkey),
    UNIT_TEST(test_remote_access_rights),
    UNIT_TEST(test_bad_lkey),
    UNIT_TEST(test_zero_copy_tx),
    UNIT_TEST(test_bad_opcode),
    UNIT_TEST(test_bad_wqe_order),
    UNIT_TEST(test_too_many_sges),
    UNIT_TEST(test_bad_doorbell),
    UNIT_TEST(test_sq_notify),
    UNIT_TEST(test_cq_overflow),
    UNIT_TEST(test_cq_overflow_shared),
    UNIT_TEST(test_ack_before_consumer_error),
    UNIT_TEST(test_cq_head),
    UNIT_TEST(test_rq_flush),
    UNIT_TEST(test_reset_while_kicked),
    UNIT_TEST(test_flush_unreadable),
    UNIT_TEST(test_sq_deeper_than_engine),
    UNIT_TEST(test_rnr),
    UNIT_TEST(test_rnr_exceeded),
    UNIT_TEST(test_retransmit),
    UNIT_TEST(test_port_counters),
    UNIT_TEST(test_trace_events),
    UNIT_TEST(test_destroy_in_flight),
    UNIT_TEST(test_fast_reg),
    UNIT_TEST(test_fast_reg_rekey),
    UNIT_TEST(test_fast_reg_bad),
    UNIT_TEST(test_fault_hook),
    UNIT_TEST(test_tx_backpressure),
    UNIT_TEST(test_tx_backpressure_reset),
    UNIT_TEST(test_fault_limits),
    UNIT_TEST(test_reset_in_flight),
    UNIT_TEST(test_reset_in_flight_held),
    UNIT_TEST(test_irq_resets_device),
    UNIT_TEST(test_irq_writes_dev_ctrl),
    UNIT_TEST(test_irq_from_timer_resets_device),
    UNIT_TEST(test_irq_unplugs_device),
    UNIT_TEST(test_irq_mmio_refused),
    UNIT_TEST(test_irq_frame_held),
    UNIT_TEST(test_irq_frame_asked),
};

int main(void)
{
    int ret = unit_run("core-dp", tests, sizeof(tests) / sizeof(tests[0]));

    teardown();
    return ret;
}
