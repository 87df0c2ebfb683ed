/*
 * qrdma-verbs-rxe: the device core and the verbs backend on a real host
 * RDMA device, as an ordinary process (no QEMU): two device cores on the
 * core-dp suite's bed (dp_testbed.h), driven as the guest driver drives
 * them, each with the verbs backend on the same host device (rdma_rxe in
 * a guest: tests/vm/test-verbs-rxe.sh), their "guest RAM" a memfd each.
 * An RC QP of one talks to an RC QP of the other through the host NIC,
 * addressed by the QPNs and rkeys the cores returned from CREATE_QP and
 * REG_MR. Checked byte for byte in the other side's guest RAM: a WRITE,
 * a READ, a SEND with immediate (and its receive CQE), a FETCH_ADD and a
 * CMP_SWP, and a WRITE with a bad rkey completing in error; then UD: a
 * SEND with immediate through a host AH, GRH and source QPN checked;
 * then an SRQ: three SENDs received from B's SRQ byte for byte, and its
 * limit event; then fast registration: a WRITE through a fast-registered
 * rkey checked, and REM_ACCESS_ERR after LOCAL_INV and SEND_WITH_INV;
 * then fast registration of scattered pages at another iova (a host MR
 * of their own): WRITE and READ through it checked page by page, twice;
 * last, the cost of registering guest memory on the host NIC (printed).
 * First, the port: the host GID and state in the device's registers, an
 * ADD_GID of another address refused, no GSI QP.
 *
 * Usage: qrdma-verbs-rxe IBDEV GID_INDEX
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/qrdma_core_int.h"
#include "unit.h"
#include "verbs_host.h"

int unit_failures;

static void side_up_verbs(struct side *s, int idx)
{
    vh_side_up(s, idx);
    create_cq(s, 1);
    create_cq(s, 2);
}

/* Run both sides' data paths, waking on their backends' fds, until a CQE is on s's CQ cq. */
static bool wait_cqe(struct side *s, uint32_t cq, struct cqe *e)
{
    return vh_wait_cqe(s, cq, e, 2, 20);
}

/*
 * The port on the host NIC (interface 0.12): the host GID in HOST_GID(0),
 * the port up at the host's speed, an ADD_GID of another address refused
 * (NOT_HOST), and no GSI QP (CAP_FEATURES.GSI clear, CREATE_QP of QP1
 * refused at once).
 */
static void test_port_over_host_nic(void)
{
    struct qp_spec gsi = rc_spec;
    uint32_t w;
    unsigned i;

    vh_memfd_ram(SA, 0);
    side_up_verbs(SA, 0);
    CHECK(reg_r(SA, QRDMA_REG_CAP_FEATURES) & QRDMA_FEATURE_HOST_GIDS);
    CHECK(!(reg_r(SA, QRDMA_REG_CAP_FEATURES) & QRDMA_FEATURE_GSI));
    CHECK_EQ(reg_r(SA, QRDMA_REG_HOST_GID_COUNT), 1);
    for (i = 0; i < 4; i++) {
        memcpy(&w, vh_host_gid + 4 * i, 4);
        CHECK_EQ(reg_r(SA, QRDMA_REG_HOST_GID(0) + 4 * i), le32toh(w));
    }
    CHECK_EQ(reg_r(SA, QRDMA_REG_PORT_STATUS), QRDMA_PORT_STATUS_LINK_UP);
    printf("port: up, PORT_SPEED %u Mb/s\n", reg_r(SA, QRDMA_REG_PORT_SPEED));
    CHECK(reg_r(SA, QRDMA_REG_PORT_SPEED) != 0);
    /* an address the host's rxe0 does not have */
    cqp(SA, QRDMA_CQP_OP_ADD_GID, 1 | QRDMA_GID_TYPE_ROCE_V2_IPV4 << 8, 0,
        0xffff0000ull | 0x0900a8c0ull << 32, 0, 0, 0);
    CHECK_EQ(major_of(last_status), QRDMA_CQP_ERR_INVALID_ARG);
    CHECK_EQ(last_status & QRDMA_CCQ_CQE_MINOR_MASK, QRDMA_ADD_GID_ERR_NOT_HOST);
    CHECK(logged(SA, "is not a GID of the host port"));
    log_clear(SA);
    gsi.type = QRDMA_QP_TYPE_UD;
    gsi.flags = QRDMA_QP_CREATE_GSI;
    CHECK_EQ(major_of(create_qp_status(SA, QRDMA_QP_GSI, &gsi)), QRDMA_CQP_ERR_INFO);
    CHECK(logged(SA, "carries no GSI QP"));
    log_clear(SA);
    qrdma_core_fini(&SA->core);
    munmap(SA->ram, RAM_SIZE);
    SA->ram = NULL;
}

static void test_rc_over_host_nic(void)
{
    const uint32_t stag_b = 3u << QRDMA_STAG_INDEX_SHIFT | 0x33;
    uint32_t qpn_a, qpn_b, rkey_b;
    struct cqe e;
    uint8_t *a = dbuf(SA, 0), *b = dbuf(SB, 0);
    uint64_t v;
    unsigned i;

    vh_memfd_ram(SA, 0);
    vh_memfd_ram(SB, 1);
    side_up_verbs(SA, 0);
    side_up_verbs(SB, 1);
    a = dbuf(SA, 0);
    b = dbuf(SB, 0);
    /* B's data MR again under another STag: REG_MR returns the host rkey A will use. */
    CQP_OK(cqp(SB, QRDMA_CQP_OP_REG_MR, stag_b,
               PD | (uint64_t)MR_ACCESS << QRDMA_MR_ARG1_ACCESS_SHIFT |
               12ull << QRDMA_MR_ARG1_PAGE_SHIFT, IOVA, DATA_LEN, DATA, 0));
    rkey_b = (uint32_t)last_retval;
    printf("B's MR: STag 0x%08x, host rkey 0x%08x\n", stag_b, rkey_b);

    create_qp(SA, QPN, &rc_spec);
    qpn_a = (uint32_t)last_retval;
    create_qp(SB, QPN, &rc_spec);
    qpn_b = (uint32_t)last_retval;
    printf("QP ID %u: host QPN 0x%x on A, 0x%x on B\n", QPN, qpn_a, qpn_b);
    CHECK(qpn_a != qpn_b);
    rc_to_rts(SA, QPN, SB, qpn_b, 7);
    rc_to_rts(SB, QPN, SA, qpn_a, 7);
    no_errors(SA);
    no_errors(SB);

    /* WRITE 64 KB from A's RAM into B's, through the host NIC. */
    for (i = 0; i < 0x10000; i++) {
        a[0x1000 + i] = (uint8_t)(i * 7 + 3);
    }
    {
        struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x40000, .rkey = rkey_b,
                         .nsge = 1, .sge = { { 0x1000, 0x10000, 0 } } };

        CHECK_EQ(post_send(SA, QPN, &w), 0);
        ring_sq(SA, QPN);
    }
    CHECK(wait_cqe(SA, 1, &e));
    CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
    CHECK_EQ(e.opcode, QRDMA_BE_WC_RDMA_WRITE);
    CHECK(!memcmp(b + 0x40000, a + 0x1000, 0x10000));

    /* READ it back into another place of A's RAM. */
    {
        struct wqe w = { .op = QRDMA_SQ_OP_RDMA_READ, .remote_off = 0x40000, .rkey = rkey_b,
                         .nsge = 1, .sge = { { 0x60000, 0x10000, 0 } } };

        CHECK_EQ(post_send(SA, QPN, &w), 1);
        ring_sq(SA, QPN);
    }
    CHECK(wait_cqe(SA, 1, &e));
    CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
    CHECK_EQ(e.opcode, QRDMA_BE_WC_RDMA_READ);
    CHECK(!memcmp(a + 0x60000, a + 0x1000, 0x10000));

    /* SEND with immediate into a receive B posted. */
    CHECK_EQ(post_recv(SB, QPN, 0x80000, 4096), 0);
    ring_rq(SB, QPN);
    memset(a + 0x2000, 0x5a, 1000);
    {
        struct wqe w = { .op = QRDMA_SQ_OP_SEND_WITH_IMM, .imm = 0x11223344, .nsge = 1,
                         .sge = { { 0x2000, 1000, 0 } } };

        CHECK_EQ(post_send(SA, QPN, &w), 2);
        ring_sq(SA, QPN);
    }
    CHECK(wait_cqe(SB, 2, &e));
    CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
    CHECK_EQ(e.qp, QPN);
    CHECK_EQ(e.byte_len, 1000);
    CHECK_EQ(e.imm, 0x11223344);
    CHECK(e.flags & QRDMA_CQE_FLAG_WITH_IMM);
    CHECK(!memcmp(b + 0x80000, a + 0x2000, 1000));
    CHECK(wait_cqe(SA, 1, &e));
    CHECK_EQ(e.opcode, QRDMA_BE_WC_SEND);

    /* FETCH_ADD and CMP_SWP on B's memory; the old values land in A's. */
    v = 1000;
    memcpy(b + 0x90000, &v, 8);
    {
        struct wqe w = { .op = QRDMA_SQ_OP_ATOMIC_FETCH_AND_ADD, .remote_off = 0x90000,
                         .rkey = rkey_b, .compare_add = 24, .nsge = 1,
                         .sge = { { 0x3000, 8, 0 } } };

        CHECK_EQ(post_send(SA, QPN, &w), 3);
        ring_sq(SA, QPN);
    }
    CHECK(wait_cqe(SA, 1, &e));
    CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
    memcpy(&v, a + 0x3000, 8);
    CHECK_EQ(v, 1000);
    memcpy(&v, b + 0x90000, 8);
    CHECK_EQ(v, 1024);
    {
        struct wqe w = { .op = QRDMA_SQ_OP_ATOMIC_CMP_AND_SWP, .remote_off = 0x90000,
                         .rkey = rkey_b, .compare_add = 1024, .swap = 0xabcdef, .nsge = 1,
                         .sge = { { 0x3008, 8, 0 } } };

        CHECK_EQ(post_send(SA, QPN, &w), 4);
        ring_sq(SA, QPN);
    }
    CHECK(wait_cqe(SA, 1, &e));
    CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
    memcpy(&v, a + 0x3008, 8);
    CHECK_EQ(v, 1024);
    memcpy(&v, b + 0x90000, 8);
    CHECK_EQ(v, 0xabcdef);

    /* A wrong rkey: the host NIC refuses the WRITE; the guest sees an error CQE. */
    {
        struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x40000,
                         .rkey = rkey_b ^ 0x100, .nsge = 1, .sge = { { 0x1000, 64, 0 } } };

        CHECK_EQ(post_send(SA, QPN, &w), 5);
        ring_sq(SA, QPN);
    }
    CHECK(wait_cqe(SA, 1, &e));
    printf("WRITE with a bad rkey: CQE status %u\n", e.status);
    CHECK(e.status != QRDMA_BE_WC_SUCCESS);
}

/*
 * UD on the same two cores (left up by the RC test): a SEND with
 * immediate through a host AH made from the guest's AH, to the peer's
 * host QPN; the receive has the GRH room filled (IPv4: the header in its
 * last 20 bytes), the payload after it, and the sender's host QPN.
 */
static void test_ud_over_host_nic(void)
{
    const uint32_t ud_id = 3, ah_id = 1;
    uint32_t qpn_a, qpn_b;
    uint8_t *a = dbuf(SA, 0), *b = dbuf(SB, 0);
    struct cqe e;
    unsigned i;

    create_qp(SA, ud_id, &ud_spec);
    qpn_a = (uint32_t)last_retval;
    create_qp(SB, ud_id, &ud_spec);
    qpn_b = (uint32_t)last_retval;
    printf("UD QP ID %u: host QPN 0x%x on A, 0x%x on B\n", ud_id, qpn_a, qpn_b);
    ud_to_rts(SA, ud_id);
    ud_to_rts(SB, ud_id);
    write_av(SA, AV_BUF, SB);
    CQP_OK(cqp(SA, QRDMA_CQP_OP_CREATE_AH, ah_id | (uint64_t)PD << QRDMA_AH_ARG0_PD_SHIFT,
               AV_BUF, 0, 0, 0, 0));
    for (i = 0; i < 900; i++) {
        a[0xa000 + i] = (uint8_t)(i ^ 0xa5);
    }
    memset(b + 0xb000, 0xee, 2048);
    CHECK_EQ(post_recv(SB, ud_id, 0xb000, 40 + 1024), 0);
    ring_rq(SB, ud_id);
    {
        struct wqe w = { .op = QRDMA_SQ_OP_SEND_WITH_IMM, .imm = 0x01020304, .ah = ah_id,
                         .dest_qpn = qpn_b, .qkey = QKEY, .nsge = 1,
                         .sge = { { 0xa000, 900, 0 } } };

        CHECK_EQ(post_send(SA, ud_id, &w), 0);
        ring_sq(SA, ud_id);
    }
    CHECK(wait_cqe(SB, 2, &e));
    CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
    CHECK_EQ(e.qp, ud_id);
    CHECK_EQ(e.byte_len, 40 + 900);
    CHECK(e.flags & QRDMA_CQE_FLAG_GRH);
    CHECK(e.flags & QRDMA_CQE_FLAG_WITH_IMM);
    CHECK_EQ(e.imm, 0x01020304);
    CHECK_EQ(e.src_qp, qpn_a);
    CHECK_EQ(b[0xb000 + 20], 0x45);
    CHECK(!memcmp(b + 0xb000 + 40, a + 0xa000, 900));
    CHECK_EQ(b[0xb000 + 40 + 900], 0xee);
    CHECK(wait_cqe(SA, 1, &e));
    CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
    CHECK_EQ(e.opcode, QRDMA_BE_WC_SEND);
}

/* Run both data paths until side s's AEQ has the event (code, id); false after 20 s. */
static bool wait_aeqe(struct side *s, uint16_t code, uint32_t id, uint8_t source, uint64_t ctx)
{
    struct timespec t0, t;
    struct aeqe ae;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        qrdma_core_run(&SA->core, QRDMA_WORK_DP);
        qrdma_core_run(&SB->core, QRDMA_WORK_DP);
        while (poll_aeq(s, &ae)) {
            if (ae.code == code && ae.id == id && ae.source == source && ae.ctx == ctx) {
                return true;
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 20) {
            fprintf(stderr, "  no AEQE 0x%x for %u on side %d in 20 s\n", code, id, s->idx);
            return false;
        }
        usleep(10000);
    }
}

/*
 * An SRQ on the host NIC (the same two cores): B's RC QP receives from
 * B's SRQ, whose WQEs the guest posts without a doorbell and the verbs
 * backend moves onto a host SRQ; A sends three messages of their own
 * bytes; each lands byte for byte at the SRQ WQE the CQE names (SRQ
 * flag, index); the host's limit event comes back as AEQE SRQ_LIMIT; a
 * WQE posted after traffic started is found without a doorbell.
 */
static void test_srq_over_host_nic(void)
{
    const uint32_t srq_id = 1, qa = 5, qb = 5;
    struct qp_spec sb = rc_spec;
    uint8_t *a = dbuf(SA, 0), *b = dbuf(SB, 0);
    uint32_t qpn_a, qpn_b;
    struct cqe e;
    unsigned i, k;

    /* SRQ 1 of B: 4 WQEs of 32 bytes, no limit yet. */
    CQP_OK(cqp(SB, QRDMA_CQP_OP_CREATE_SRQ,
               srq_id | 2ull << QRDMA_SRQ_ARG0_SIZE_SHIFT | 5ull << QRDMA_SRQ_ARG0_WQE_SHIFT,
               PD, SRQ_RING, SRQ_SHADOW, 0x5e0, 0));
    SB->srq_log2 = 2;
    SB->srq_stride_log2 = 5;
    SB->srq_posted = 0;
    sb.flags = QRDMA_QP_CREATE_SRQ;
    sb.srq = srq_id;
    create_qp(SA, qa, &rc_spec);
    qpn_a = (uint32_t)last_retval;
    create_qp(SB, qb, &sb);
    qpn_b = (uint32_t)last_retval;
    printf("SRQ: QP ID %u: host QPN 0x%x on A, 0x%x on B (on SRQ %u)\n", qa, qpn_a, qpn_b,
           srq_id);
    rc_to_rts(SA, qa, SB, qpn_b, 7);
    rc_to_rts(SB, qb, SA, qpn_a, 7);
    memset(b + 0xc0000, 0xee, 0x4000);
    for (k = 0; k < 3; k++) {
        const struct sge sge = { 0xc0000 + 0x1000 * k, 1024, 0 };
        uint32_t n = SB->srq_posted++;

        write_rq_wqe(SB, SRQ_RING + ((uint64_t)(n & 3) << 5), !((n >> 2) & 1), 1, &sge, 0);
    }
    w64(SB, SRQ_SHADOW, SB->srq_posted);
    /* Arm the limit at 2 of the 3: the host counts what it holds (MODIFY takes them first). */
    CQP_OK(cqp(SB, QRDMA_CQP_OP_MODIFY_SRQ, srq_id, 2ull << QRDMA_SRQ_ARG1_LIMIT_SHIFT, 0, 0, 0,
               0));
    no_errors(SB);

    for (k = 0; k < 3; k++) {
        struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1,
                         .sge = { { 0xd000 + 0x400 * k, 600 + 100 * k, 0 } } };

        for (i = 0; i < 600 + 100 * k; i++) {
            a[0xd000 + 0x400 * k + i] = (uint8_t)(i * 13 + k * 101 + 1);
        }
        if (k == 2) {
            /* Posted after traffic started, still without a doorbell. */
            const struct sge sge = { 0xc3000, 1024, 0 };
            uint32_t n = SB->srq_posted++;

            write_rq_wqe(SB, SRQ_RING + ((uint64_t)(n & 3) << 5), !((n >> 2) & 1), 1, &sge, 0);
            w64(SB, SRQ_SHADOW, SB->srq_posted);
        }
        post_send(SA, qa, &w);
        ring_sq(SA, qa);
        CHECK(wait_cqe(SB, 2, &e));
        CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
        CHECK_EQ(e.qp, qb);
        CHECK(e.flags & QRDMA_CQE_FLAG_SRQ);
        CHECK_EQ(e.wqe_index, k);
        CHECK_EQ(e.byte_len, 600 + 100 * k);
        CHECK(!memcmp(b + 0xc0000 + 0x1000 * e.wqe_index, a + 0xd000 + 0x400 * k,
                      600 + 100 * k));
        CHECK_EQ(b[0xc0000 + 0x1000 * e.wqe_index + 600 + 100 * k], 0xee);
        printf("SRQ receive %u: WQE %u, %u bytes, checked\n", k, e.wqe_index, e.byte_len);
        CHECK(wait_cqe(SA, 1, &e));
        CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
        if (k == 1) {
            /* 3 held, 2 taken: 1 below the limit 2. */
            CHECK(wait_aeqe(SB, QRDMA_AE_SRQ_LIMIT, srq_id, QRDMA_AE_SRC_SRQ, 0x5e0));
            CHECK_EQ(SB->core.obj.srq[srq_id].limit, 0);
            printf("SRQ limit event: AEQE SRQ_LIMIT\n");
        }
    }
    no_errors(SA);
    no_errors(SB);
    CQP_OK(cqp(SB, QRDMA_CQP_OP_DESTROY_QP, qb, 0, 0, 0, 0, 0));
    CQP_OK(cqp(SB, QRDMA_CQP_OP_DESTROY_SRQ, srq_id, 0, 0, 0, 0, 0));
}

/* A FAST_REG WQE on side s's QP (one-level list at `first`, 4 KB pages); no doorbell. */
static void post_fast_reg(struct side *s, uint32_t qp, uint32_t stag, uint32_t access,
                          uint64_t iova, uint64_t len, uint64_t first)
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
    w64(s, a + 48, 0);
    w64(s, a + 56, QRDMA_SQ_OP_FAST_REG | QRDMA_SQ_HDR_SIGNALED |
                   (valid ? QRDMA_SQ_HDR_VALID : 0));
}

/* A WRITE of len bytes from A's data area at a_off to B's guest-physical gpa through rkey; its CQE status. */
static unsigned write_to(uint32_t qa, uint64_t a_off, uint64_t gpa, uint32_t rkey, uint32_t len)
{
    struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = gpa - IOVA, .rkey = rkey,
                     .nsge = 1, .sge = { { a_off, len, 0 } } };
    struct cqe e;

    post_send(SA, qa, &w);
    ring_sq(SA, qa);
    if (!wait_cqe(SA, 1, &e)) {
        return ~0u;
    }
    CHECK_EQ(e.qp, qa);
    CHECK_EQ(e.opcode, QRDMA_BE_WC_RDMA_WRITE);
    return e.status;
}

/* B's LOCAL_INV of stag on its QP q, completed. */
static void local_inv_b(uint32_t q, uint32_t stag)
{
    struct wqe inv = { .op = QRDMA_SQ_OP_LOCAL_INV, .imm = stag };
    struct cqe e;

    post_send(SB, q, &inv);
    ring_sq(SB, q);
    CHECK(wait_cqe(SB, 1, &e));
    CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
    CHECK_EQ(e.opcode, QRDMA_BE_WC_LOCAL_INV);
}

/*
 * Fast registration on the host NIC (the same two cores, fresh QPs): B
 * allocates a fast-register MR (a host type 2 window), registers two
 * contiguous pages at iova = their guest-physical address with a new key
 * byte by a FAST_REG WQE on its QP; A WRITEs 8 KB through that rkey,
 * checked byte for byte in B's RAM; after B's LOCAL_INV the same WRITE
 * fails with REM_ACCESS_ERR. Again on a second QP pair with another key
 * byte, ended by A's SEND_WITH_INV: B's CQE says WITH_INV with the rkey,
 * B's MR is free in the core, and the next WRITE fails with REM_ACCESS_ERR.
 */
static void test_fast_reg_over_host_nic(void)
{
    const uint32_t fr_index = 4, first = 8;
    const uint64_t fr_gpa = DATA + 0xe0000;
    const uint32_t rights = QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE |
                            QRDMA_ACCESS_REMOTE_READ;
    uint8_t *a = dbuf(SA, 0), *b = dbuf(SB, 0);
    uint32_t rkey, wire, qpn[2][2];
    unsigned i, round, status;
    struct cqe e;

    CQP_OK(cqp(SB, QRDMA_CQP_OP_ALLOC_STAG, fr_index << QRDMA_STAG_INDEX_SHIFT | 0x20,
               PD | (uint64_t)QRDMA_ACCESS_LOCAL_WRITE << QRDMA_MR_ARG1_ACCESS_SHIFT, 4, 0,
               first, 0));
    rkey = (uint32_t)last_retval;
    printf("fast-register MR: STag 0x%08x, host window rkey 0x%08x\n",
           fr_index << QRDMA_STAG_INDEX_SHIFT | 0x20, rkey);
    CHECK_EQ(rkey & 0xff, 0x20);
    w64(SB, HMC_RAM + r64(SB, FPM_BUF + 8 * (1 + QRDMA_HMC_PBLE)) + 8ull * first, fr_gpa);
    w64(SB, HMC_RAM + r64(SB, FPM_BUF + 8 * (1 + QRDMA_HMC_PBLE)) + 8ull * (first + 1),
        fr_gpa + 0x1000);

    for (round = 0; round < 2; round++) {
        const uint32_t q = 7 + round, key = 0x21 + round;
        const uint32_t stag = fr_index << QRDMA_STAG_INDEX_SHIFT | key;

        vh_rc_pair(q, qpn[round]);

        post_fast_reg(SB, q, stag, rights, fr_gpa, 8192, first);
        ring_sq(SB, q);
        CHECK(wait_cqe(SB, 1, &e));
        CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
        CHECK_EQ(e.opcode, QRDMA_BE_WC_FAST_REG);
        wire = (rkey & ~0xffu) | key;

        memset(b + (fr_gpa - DATA), 0xcc, 0x3000);
        for (i = 0; i < 8192; i++) {
            a[0x20000 + i] = (uint8_t)(i * 31 + round * 7 + 5);
        }
        CHECK_EQ(write_to(q, 0x20000, fr_gpa, wire, 8192), QRDMA_BE_WC_SUCCESS);
        CHECK(!memcmp(b + (fr_gpa - DATA), a + 0x20000, 8192));
        CHECK_EQ(b[fr_gpa - DATA + 8192], 0xcc);
        printf("round %u: WRITE of 8 KB through rkey 0x%08x, checked\n", round, wire);

        if (round == 0) {
            local_inv_b(q, stag);
        } else {
            struct wqe si = { .op = QRDMA_SQ_OP_SEND_WITH_INV, .imm = wire, .nsge = 1,
                              .sge = { { 0x20000, 64, 0 } } };

            CHECK_EQ(post_recv(SB, q, 0x30000, 256), 0);
            ring_rq(SB, q);
            post_send(SA, q, &si);
            ring_sq(SA, q);
            CHECK(wait_cqe(SB, 2, &e));
            CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
            CHECK(e.flags & QRDMA_CQE_FLAG_WITH_INV);
            CHECK_EQ(e.imm, wire);
            CHECK(!memcmp(b + 0x30000, a + 0x20000, 64));
            CHECK(wait_cqe(SA, 1, &e));
            CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
        }
        CHECK_EQ(SB->core.obj.mr[fr_index].state, QRDMA_MR_STATE_FREE);
        memset(b + (fr_gpa - DATA), 0xcc, 0x3000);
        status = write_to(q, 0x20000, fr_gpa, wire, 8192);
        printf("round %u: after %s, WRITE through 0x%08x: CQE status %u\n", round,
               round ? "SEND_WITH_INV" : "LOCAL_INV", wire, status);
        CHECK_EQ(status, QRDMA_BE_WC_REM_ACCESS_ERR);
        CHECK_EQ(b[fr_gpa - DATA], 0xcc);
    }
    CQP_OK(cqp(SB, QRDMA_CQP_OP_DEALLOC_STAG, fr_index << QRDMA_STAG_INDEX_SHIFT | 0x22, 0, 0,
               0, 0, 0));
}

/*
 * Fast registration of scattered pages on the host NIC (fresh QPs): B's
 * FAST_REG names three pages out of order at an iova that is none of
 * their addresses, so the backend binds the window to a host MR of their
 * own (an alias of the pages, mapped from the RAM's memfd); A WRITEs 12
 * KB through the rkey, each 4 KB checked in its page of B's RAM and the
 * pages around them untouched, and READs it back. After B's LOCAL_INV, B
 * registers three other pages under another key byte and the same
 * happens there; a WRITE through the first rkey then fails with
 * REM_ACCESS_ERR.
 */
static void test_fast_reg_scattered_over_host_nic(void)
{
    const uint32_t fr_index = 5, first = 12, q = 9;
    const uint64_t iova = 0x7000000000ull;
    const uint64_t page[2][3] = {
        { DATA + 0xf5000, DATA + 0xf1000, DATA + 0xf3000 },
        { DATA + 0xf2000, DATA + 0xf6000, DATA + 0xf0000 },
    };
    const uint32_t rights = QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE |
                            QRDMA_ACCESS_REMOTE_READ;
    const uint64_t pble = HMC_RAM + r64(SB, FPM_BUF + 8 * (1 + QRDMA_HMC_PBLE)) + 8ull * first;
    uint8_t *a = dbuf(SA, 0), *b = dbuf(SB, 0);
    uint32_t rkey, wire = 0, first_wire = 0, qpn[2], stag = 0;
    unsigned round, k, i, untouched, status;
    struct cqe e;

    CQP_OK(cqp(SB, QRDMA_CQP_OP_ALLOC_STAG, fr_index << QRDMA_STAG_INDEX_SHIFT | 0x30,
               PD | (uint64_t)QRDMA_ACCESS_LOCAL_WRITE << QRDMA_MR_ARG1_ACCESS_SHIFT, 4, 0,
               first, 0));
    rkey = (uint32_t)last_retval;
    vh_rc_pair(q, qpn);

    for (round = 0; round < 2; round++) {
        stag = fr_index << QRDMA_STAG_INDEX_SHIFT | (0x31 + round);
        for (k = 0; k < 3; k++) {
            w64(SB, pble + 8 * k, page[round][k]);
        }
        post_fast_reg(SB, q, stag, rights, iova, 3 * 4096, first);
        ring_sq(SB, q);
        CHECK(wait_cqe(SB, 1, &e));
        CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
        CHECK_EQ(e.opcode, QRDMA_BE_WC_FAST_REG);
        wire = (rkey & ~0xffu) | (0x31 + round);
        if (!round) {
            first_wire = wire;
        }

        memset(b + 0xf0000, 0xcc, 0x7000);
        for (i = 0; i < 3 * 4096; i++) {
            a[0x20000 + i] = (uint8_t)(i * 13 + i / 4096 * 101 + round * 3 + 1);
        }
        CHECK_EQ(write_to(q, 0x20000, iova, wire, 3 * 4096), QRDMA_BE_WC_SUCCESS);
        for (k = 0; k < 3; k++) {
            CHECK(!memcmp(b + (page[round][k] - DATA), a + 0x20000 + k * 4096, 4096));
        }
        /* the four pages between them are as they were */
        for (i = 0, untouched = 0; i < 0x7000; i++) {
            uint64_t pg = DATA + 0xf0000 + (i & ~0xfffu);

            if (pg != page[round][0] && pg != page[round][1] && pg != page[round][2]) {
                untouched += b[0xf0000 + i] == 0xcc;
            }
        }
        CHECK_EQ(untouched, 0x7000 - 3 * 4096);
        {
            struct wqe w = { .op = QRDMA_SQ_OP_RDMA_READ, .remote_off = iova - IOVA,
                             .rkey = wire, .nsge = 1, .sge = { { 0x28000, 3 * 4096, 0 } } };

            memset(a + 0x28000, 0, 3 * 4096);
            post_send(SA, q, &w);
            ring_sq(SA, q);
            CHECK(wait_cqe(SA, 1, &e));
            CHECK_EQ(e.status, QRDMA_BE_WC_SUCCESS);
            CHECK_EQ(e.opcode, QRDMA_BE_WC_RDMA_READ);
            CHECK(!memcmp(a + 0x28000, a + 0x20000, 3 * 4096));
        }
        printf("round %u: 12 KB over 3 scattered pages at iova 0x%" PRIx64
               " through rkey 0x%08x: WRITE and READ checked\n", round, iova, wire);

        /* The invalidation before the next FAST_REG, as verbs wants. */
        local_inv_b(q, stag);
    }
    memset(b + 0xf0000, 0xcc, 0x7000);
    status = write_to(q, 0x20000, iova, first_wire, 4096);
    printf("after LOCAL_INV, WRITE through the first rkey 0x%08x: CQE status %u\n",
           first_wire, status);
    CHECK_EQ(status, QRDMA_BE_WC_REM_ACCESS_ERR);
    CHECK_EQ(b[page[0][0] - DATA], 0xcc);
    CQP_OK(cqp(SB, QRDMA_CQP_OP_DEALLOC_STAG, stag, 0, 0, 0, 0, 0));
}

static double us_since(const struct timespec *t0)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1e6 + (t.tv_nsec - t0->tv_nsec) / 1e3;
}

/*
 * What a guest MR costs on the host NIC, printed, not asserted (a TCG
 * guest's numbers say little about hardware): REG_MR + DEALLOC_STAG
 * through the CQP, which is the host's ibv_reg_mr_iova2 and ibv_dereg_mr
 * plus the device's command, for 2 MB of contiguous guest RAM (registered
 * where it is) and for 48 scattered pages (an alias mapped from the
 * memfd first), in microseconds per MB.
 */
static void test_registration_cost(void)
{
    const uint32_t stag = 5u << QRDMA_STAG_INDEX_SHIFT | 0x55, first = 16, npages = 48;
    const uint64_t lw = (uint64_t)(QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE)
                        << QRDMA_MR_ARG1_ACCESS_SHIFT | 12ull << QRDMA_MR_ARG1_PAGE_SHIFT;
    const uint64_t len = 2u << 20;      /* [DATA, DATA + 2 MB): guest RAM below the HMC's */
    const uint64_t pbles = HMC_RAM + r64(SA, FPM_BUF + 8 * (1 + QRDMA_HMC_PBLE));
    const unsigned reps = 10;
    struct timespec t0;
    double us;
    unsigned i;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < reps; i++) {
        CQP_OK(cqp(SA, QRDMA_CQP_OP_REG_MR, stag, PD | lw, 0x70000000ull, len, DATA, 0));
        CQP_OK(cqp(SA, QRDMA_CQP_OP_DEALLOC_STAG, stag, 0, 0, 0, 0, 0));
    }
    us = us_since(&t0) / reps;
    printf("registration cost: %u KB contiguous: %.0f us per REG_MR+DEALLOC, %.0f us per MB\n",
           (unsigned)(len >> 10), us, us / (len / 1048576.0));

    /* Pages in reverse order: not contiguous, so an alias is mapped for each registration. */
    for (i = 0; i < npages; i++) {
        w64(SA, pbles + 8ull * (first + i), DATA + 0x100000 + 0x1000ull * (npages - 1 - i));
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < reps; i++) {
        CQP_OK(cqp(SA, QRDMA_CQP_OP_REG_MR, stag,
                   PD | lw | 1ull << QRDMA_MR_ARG1_LEVELS_SHIFT, 0x70000000ull,
                   npages * 0x1000ull, first, 0));
        CQP_OK(cqp(SA, QRDMA_CQP_OP_DEALLOC_STAG, stag, 0, 0, 0, 0, 0));
    }
    us = us_since(&t0) / reps;
    printf("registration cost: %u KB in %u scattered pages (aliased): %.0f us per "
           "REG_MR+DEALLOC, %.0f us per MB\n", npages * 4, npages, us,
           us / (npages * 4096 / 1048576.0));
    no_errors(SA);
}

int main(int argc, char **argv)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_port_over_host_nic),
        UNIT_TEST(test_rc_over_host_nic),
        UNIT_TEST(test_ud_over_host_nic),
        UNIT_TEST(test_srq_over_host_nic),
        UNIT_TEST(test_fast_reg_over_host_nic),
        UNIT_TEST(test_fast_reg_scattered_over_host_nic),
        UNIT_TEST(test_registration_cost),
    };
    int ret;

    if (argc != 3) {
        fprintf(stderr, "usage: %s IBDEV GID_INDEX\n", argv[0]);
        return 2;
    }
    if (vh_host(argv[1], argv[2])) {
        return 1;
    }
    ret = unit_run("verbs-rxe", tests, sizeof(tests) / sizeof(tests[0]));
    vh_fini(2);
    return ret;
}
