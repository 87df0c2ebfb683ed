/*
 * Unit tests of the device core's object commands: CQs, SRQs, AHs and QPs
 * (create, modify, query, destroy, every refusal with its major and minor
 * and its guest error), the QP state machine against IB's table, the HMC
 * contexts in guest memory, references (BUSY), the object counters, ring
 * placement (contiguous and VIRTMAP) with qrdma_queue_addr(), objects whose
 * HMC page is not backed, and reset. MRs are in test_core_mr.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "core/qrdma_core.h"
#include "qrdma_backend_sw.h"
#include "fake_cqp.h"
#include "fake_env.h"
#include "unit.h"

int unit_failures;

/*
 * Fake RAM is [1 MB, 5 MB). The CQP sits at its start (fake_cqp.h), the
 * buffers below follow, rings lie in [1.125 MB, 2 MB), and HMC memory is
 * one direct SD at 4 MB: FPM [0, 1 MB) is guest RAM, the rest of the SD
 * is not (which the "not backed" tests use).
 */
#define CEQ_RING    (FAKE_RAM_BASE + 0x11000)
#define FPM_BUF     (FAKE_RAM_BASE + 0x12000)
#define INFO        (FAKE_RAM_BASE + 0x13000)   /* create or modify info */
#define QUERY_BUF   (FAKE_RAM_BASE + 0x13400)
#define AV_ADDR     (FAKE_RAM_BASE + 0x13800)
#define SHADOW      (FAKE_RAM_BASE + 0x14000)
#define PD_PAGE     (FAKE_RAM_BASE + 0x15000)   /* a paged SD's page descriptors */
#define RING        (FAKE_RAM_BASE + 0x20000)   /* rings may overlap: no data path reads them */
#define RING2       (FAKE_RAM_BASE + 0x40000)
#define PAGES       (FAKE_RAM_BASE + 0x80000)   /* 4 KB pages for VIRTMAP rings */
#define HMC_RAM     0x400000ull
#define NOT_RAM     0x10000000ull
#define RAM_END     (FAKE_RAM_BASE + FAKE_RAM_SIZE)

#define N_QP        64
#define N_CQ        64
#define N_SRQ       16
#define N_MR        256
#define N_AH        64
#define N_PBLE      4096

static const uint64_t counts[QRDMA_HMC_NUM_TYPES] = { N_QP, N_CQ, N_SRQ, N_MR, N_AH, N_PBLE };

static uint64_t last_retval;

static uint64_t cmd(uint8_t op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
                    uint64_t a4, uint64_t a5)
{
    uint64_t args[6] = { a0, a1, a2, a3, a4, a5 };

    return cqp_run1(op, args, &last_retval);
}

static void put8(uint64_t addr, uint8_t v)
{
    *(uint8_t *)gpa(addr) = v;
}

static void put16(uint64_t addr, uint16_t v)
{
    put8(addr, v);
    put8(addr + 1, v >> 8);
}

static void put32(uint64_t addr, uint32_t v)
{
    put16(addr, v);
    put16(addr + 2, v >> 16);
}

static uint8_t get8(uint64_t addr)
{
    return *(uint8_t *)gpa(addr);
}

static uint32_t get32(uint64_t addr)
{
    return (uint32_t)get64(addr);
}

static bool all_zero(uint64_t addr, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        if (get8(addr + i)) {
            return false;
        }
    }
    return true;
}

static uint64_t direct_sd(uint64_t page)
{
    return page | QRDMA_HMC_SD_TYPE_DIRECT | QRDMA_HMC_SD_VALID;
}

/* The GIDs every test has: 0 is ::ffff:10.0.0.1 (RoCEv2 IPv4), 1 is fe80::1 (IPv6). */
static void add_gids(void)
{
    CHECK_RESULT(cmd(QRDMA_CQP_OP_ADD_GID, 0 | QRDMA_GID_TYPE_ROCE_V2_IPV4 << 8, 0,
                     0x0100000affff0000ull, 0, 0, 0), QRDMA_CQP_OK, 0);
    CHECK_RESULT(cmd(QRDMA_CQP_OP_ADD_GID, 1 | QRDMA_GID_TYPE_ROCE_V2_IPV6 << 8, 0x80fe,
                     0x0100000000000000ull, 0, 0, 0), QRDMA_CQP_OK, 0);
}

/* A ready core with a CQP, the GIDs, CEQ 0; with commit, the layout above, backed. */
static void setup_with(const struct qrdma_core_config *cfg, bool commit)
{
    fake_setup_ready(cfg);
    cqp_setup(6, 6);
    add_gids();
    CHECK_RESULT(cmd(QRDMA_CQP_OP_CREATE_CEQ, 6 << QRDMA_EQ_SIZE_SHIFT, CEQ_RING, 0, 0, 0, 0),
                 QRDMA_CQP_OK, 0);
    if (commit) {
        CHECK_RESULT(cqp_commit(counts, FPM_BUF, NULL), QRDMA_CQP_OK, 0);
        hmc_sd_write(0, direct_sd(HMC_RAM));
    }
    fake_log_mark();
}

static void setup(void)
{
    setup_with(NULL, true);
}

/* One guest error for the command's reason, one for the CQP's failure line. */
#define CHECK_REFUSED(status, maj, min, needle)                                    \
    do {                                                                           \
        int errs_ = fake.guest_errors;                                             \
        fake_log_mark();                                                           \
        CHECK_RESULT((status), (maj), (min));                                      \
        CHECK(fake.guest_errors >= errs_ + 2);                                     \
        CHECK(fake_logged(needle));                                                \
    } while (0)

/* ---- CQs ------------------------------------------------------------------------ */

static uint64_t cq_arg0(uint32_t id, unsigned log2)
{
    return id | (uint64_t)log2 << QRDMA_CQ_ARG0_SIZE_SHIFT;
}

static uint64_t create_cq_at(uint32_t id, unsigned log2, uint64_t ring)
{
    return cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(id, log2), 0xc000 + id, ring, SHADOW + 64 * id,
               0, 0);
}

static uint64_t create_cq(uint32_t id)
{
    return create_cq_at(id, 7, RING);
}

static uint64_t destroy_cq(uint32_t id)
{
    return cmd(QRDMA_CQP_OP_DESTROY_CQ, id, 0, 0, 0, 0, 0);
}

static void test_counters_registers(void)
{
    static const uint32_t regs[] = {
        QRDMA_REG_OBJ_COUNT_QP, QRDMA_REG_OBJ_COUNT_CQ, QRDMA_REG_OBJ_COUNT_SRQ,
        QRDMA_REG_OBJ_COUNT_MR, QRDMA_REG_OBJ_COUNT_AH,
    };
    static const char *const names[] = {
        "OBJ_COUNT_QP", "OBJ_COUNT_CQ", "OBJ_COUNT_SRQ", "OBJ_COUNT_MR", "OBJ_COUNT_AH",
    };
    unsigned i;

    setup();
    for (i = 0; i < 5; i++) {
        CHECK_EQ(regs[i], QRDMA_REG_OBJ_COUNT(i));
        CHECK_EQ(rd(regs[i]), 0);
        CHECK(qrdma_core_reg_name(regs[i]) && !strcmp(qrdma_core_reg_name(regs[i]), names[i]));
        wr(regs[i], 5);
        CHECK_STR_CONTAINS(fake.last_error, "read-only register");
        CHECK_EQ(rd(regs[i]), 0);
    }
    /* Live: they follow creates and destroys. */
    CHECK_RESULT(create_cq(3), QRDMA_CQP_OK, 0);
    CHECK_RESULT(create_cq(4), QRDMA_CQP_OK, 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_CQ), 2);
    CHECK_EQ(qrdma_core_obj_count(&core, QRDMA_HMC_CQ), 2);
    CHECK_EQ(qrdma_core_obj_count(&core, QRDMA_HMC_PBLE), 0);
    CHECK_RESULT(destroy_cq(3), QRDMA_CQP_OK, 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_CQ), 1);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_QP), 0);
    /* The next register is still a hole. */
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_AH + 4), 0);
    CHECK_STR_CONTAINS(fake.last_error, "no register there");
}

static void test_cq_create(void)
{
    uint64_t ctx;
    struct qrdma_cq *cq;

    setup();
    CHECK_RESULT(create_cq(5), QRDMA_CQP_OK, 0);
    CHECK_EQ(fake.guest_errors, 0);
    cq = qrdma_cq_get(&core, 5);
    CHECK(cq != NULL);
    if (cq) {
        CHECK_EQ(cq->ring.addr, RING);
        CHECK_EQ(cq->ring.size_log2, 7);
        CHECK_EQ(cq->ring.stride_log2, 5);
        CHECK_EQ(cq->cq_ctx, 0xc005);
        CHECK_EQ(cq->shadow, SHADOW + 5 * 64);
        CHECK_EQ(cq->tail, 0);
        CHECK(cq->polarity);
        CHECK_EQ(cq->refs, 0);
    }
    CHECK(qrdma_cq_get(&core, 4) == NULL);
    CHECK(qrdma_cq_get(&core, N_CQ) == NULL);
    /* The context: VALID | arg0, CQ_CTX, ring, shadow, tail, polarity. */
    ctx = hmc_obj_addr(QRDMA_HMC_CQ, 5);
    CHECK_EQ(ctx, HMC_RAM + core.hmc.base[QRDMA_HMC_CQ] + 5 * 64);
    CHECK_EQ(get64(ctx), cq_arg0(5, 7) | QRDMA_CQ_CTX_VALID);
    CHECK_EQ(get64(ctx + 8), 0xc005);
    CHECK_EQ(get64(ctx + 16), RING);
    CHECK_EQ(get64(ctx + 24), SHADOW + 5 * 64);
    CHECK_EQ(get64(ctx + 32), 0);
    CHECK_EQ(get64(ctx + 40), 1);
    CHECK(all_zero(ctx + 48, 16));

    /* Events to CEQ 0, a user doorbell page, the largest and smallest sizes. */
    CHECK_RESULT(cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(6, 16) | QRDMA_CQ_ARG0_CEQ_ENABLE |
                     7ull << QRDMA_CQ_ARG0_DB_PAGE_SHIFT, 0x7fffffffffffffffull, RING, SHADOW,
                     0, 0), QRDMA_CQP_OK, 0);
    cq = qrdma_cq_get(&core, 6);
    CHECK(cq && cq->ceq_enable && cq->ceq_id == 0 && cq->db_page == 7);
    CHECK_EQ(get64(hmc_obj_addr(QRDMA_HMC_CQ, 6)) & QRDMA_CQ_ARG0_DB_PAGE_MASK,
             7ull << QRDMA_CQ_ARG0_DB_PAGE_SHIFT);
    CHECK_RESULT(create_cq_at(7, QRDMA_CQ_SIZE_LOG2_MIN, RING), QRDMA_CQP_OK, 0);
    /* CQ 0 and the last one in the layout. */
    CHECK_RESULT(create_cq(0), QRDMA_CQP_OK, 0);
    CHECK_RESULT(create_cq(N_CQ - 1), QRDMA_CQP_OK, 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_CQ), 5);
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_cq_create_errors(void)
{
    struct qrdma_core_config cfg;
    uint64_t ctx;

    setup();
    CHECK_RESULT(create_cq(1), QRDMA_CQP_OK, 0);
    ctx = hmc_obj_addr(QRDMA_HMC_CQ, 2);
    /* arg0: reserved bits, an ID beyond the layout, an ID in use. */
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(2, 7) | 1ull << 37, 0, RING, SHADOW, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 0, "CREATE_CQ: arg0 0x");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(2, 7) | 1ull << 42, 0, RING, SHADOW, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 0, "reserved bits");
    CHECK_REFUSED(create_cq(N_CQ), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_COUNT,
                  "CREATE_CQ: CQ 64 is beyond the 64 committed");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(0xffffff, 7), 0, RING, SHADOW, 0, 0),
                  QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_COUNT, "beyond the 64 committed");
    CHECK_REFUSED(create_cq(1), QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_EXISTS,
                  "CREATE_CQ: CQ 1 exists");
    /* Sizes. */
    CHECK_REFUSED(create_cq_at(2, QRDMA_CQ_SIZE_LOG2_MIN - 1, RING), QRDMA_CQP_ERR_INVALID_ARG, 0,
                  "CREATE_CQ: CQ 2: SIZE_LOG2 1 is outside 2..18");
    CHECK_REFUSED(create_cq_at(2, 17, RING), QRDMA_CQP_ERR_INVALID_ARG, 0,
                  "above CAP_MAX_CQE 65536");
    CHECK_REFUSED(create_cq_at(2, 31, RING), QRDMA_CQP_ERR_INVALID_ARG, 0, "SIZE_LOG2 31");
    /* Events and doorbells. */
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(2, 7) | 8ull << QRDMA_CQ_ARG0_CEQ_SHIFT,
                      0, RING, SHADOW, 0, 0), QRDMA_CQP_ERR_INVALID_ARG, 0,
                  "CQ 2: CEQ 8 is beyond the 8 the device has");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(2, 7) | 1ull << QRDMA_CQ_ARG0_CEQ_SHIFT |
                      QRDMA_CQ_ARG0_CEQ_ENABLE, 0, RING, SHADOW, 0, 0),
                  QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND,
                  "its events go to CEQ 1, which does not exist");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(2, 7) |
                      (uint64_t)QRDMA_DEFAULT_DB_PAGES << QRDMA_CQ_ARG0_DB_PAGE_SHIFT,
                      0, RING, SHADOW, 0, 0), QRDMA_CQP_ERR_INVALID_ARG, 0,
                  "doorbell page 256 is beyond the 256");
    /* CQ_CTX, shadow area, ring. */
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(2, 7), 1ull << 63, RING, SHADOW, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "CQ_CTX 0x8000000000000000 has bit 63 set");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(2, 7), 0, RING, SHADOW + 8, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 3, "shadow area");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(2, 7), 0, RING, NOT_RAM, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 3, "shadow area 0x10000000");
    CHECK_REFUSED(create_cq_at(2, 7, RING + 0x800), QRDMA_CQP_ERR_INVALID_ARG, 2,
                  "CREATE_CQ: CQ 2: ring at 0x120800 (4096 bytes) is not 4 KB aligned guest RAM");
    CHECK_REFUSED(create_cq_at(2, 7, NOT_RAM), QRDMA_CQP_ERR_INVALID_ARG, 2, "ring at");
    CHECK_REFUSED(create_cq_at(2, 8, RAM_END - 0x1000), QRDMA_CQP_ERR_INVALID_ARG, 2, "ring at");
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_CQ), 1);
    CHECK(qrdma_cq_get(&core, 2) == NULL);
    CHECK(all_zero(ctx, 64));                   /* refusals write no context */

    /* A device with fewer CQEs: 2^n may be CAP_MAX_CQE + 1, not more. */
    qrdma_core_config_defaults(&cfg);
    cfg.max_cqe = 255;
    setup_with(&cfg, true);
    CHECK_RESULT(create_cq_at(1, 8, RING), QRDMA_CQP_OK, 0);
    CHECK_REFUSED(create_cq_at(2, 9, RING), QRDMA_CQP_ERR_INVALID_ARG, 0, "CAP_MAX_CQE 255");
}

/* ---- VIRTMAP rings and PBLEs --------------------------------------------------------- */

static void pble_set(uint32_t index, uint64_t value)
{
    put64(hmc_obj_addr(QRDMA_HMC_PBLE, index), value);
}

static void test_cq_virtmap(void)
{
    const uint64_t arg0 = cq_arg0(9, 8) | QRDMA_CQ_ARG0_VIRTMAP;   /* 8 KB: two pages */
    struct qrdma_cq *cq;
    uint64_t addr;

    setup();
    pble_set(100, PAGES + 0x3000);
    pble_set(101, PAGES);
    CHECK_RESULT(cmd(QRDMA_CQP_OP_CREATE_CQ, arg0, 0, 100, SHADOW, 0, 0), QRDMA_CQP_OK, 0);
    CHECK_EQ(get64(hmc_obj_addr(QRDMA_HMC_CQ, 9)), arg0 | QRDMA_CQ_CTX_VALID);
    CHECK_EQ(get64(hmc_obj_addr(QRDMA_HMC_CQ, 9) + 16), 100);
    cq = qrdma_cq_get(&core, 9);
    CHECK(cq && cq->ring.virtmap);
    /* Entries through qrdma_queue_addr(): page by page, through the PBLEs. */
    if (cq) {
        CHECK_EQ(qrdma_queue_addr(&core, &cq->ring, 0, &addr), 0);
        CHECK_EQ(addr, PAGES + 0x3000);
        CHECK_EQ(qrdma_queue_addr(&core, &cq->ring, 127 * 32, &addr), 0);
        CHECK_EQ(addr, PAGES + 0x3000 + 127 * 32);
        CHECK_EQ(qrdma_queue_addr(&core, &cq->ring, 128 * 32, &addr), 0);
        CHECK_EQ(addr, PAGES);
        CHECK_EQ(qrdma_queue_addr(&core, &cq->ring, 255 * 32 + 31, &addr), 0);
        CHECK_EQ(addr, PAGES + 0xfff);
        /* PBLEs are read at every use: a rewritten one is seen, a bad one refused. */
        pble_set(101, PAGES + 0x5000);
        CHECK_EQ(qrdma_queue_addr(&core, &cq->ring, 128 * 32, &addr), 0);
        CHECK_EQ(addr, PAGES + 0x5000);
        pble_set(101, PAGES + 0x5008);
        fake_log_mark();
        CHECK_EQ(qrdma_queue_addr(&core, &cq->ring, 128 * 32, &addr), QRDMA_PBLE_ERR_ALIGN);
        CHECK(fake_logged("not a 4 KB aligned page"));
        CHECK_EQ(qrdma_queue_addr(&core, &cq->ring, 256 * 32, &addr), QRDMA_PBLE_ERR_RANGE);
        CHECK(fake_logged("is beyond its 8192 bytes"));
    }
    /* A contiguous ring: plain offsets. */
    CHECK_RESULT(create_cq(10), QRDMA_CQP_OK, 0);
    cq = qrdma_cq_get(&core, 10);
    if (cq) {
        CHECK_EQ(qrdma_queue_addr(&core, &cq->ring, 0x1000 - 32, &addr), 0);
        CHECK_EQ(addr, RING + 0x1000 - 32);
    }

    /* Refusals: PBLEs beyond the layout, a page misaligned, not RAM, not HMC-backed. */
    pble_set(101, PAGES);
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(11, 8) | QRDMA_CQ_ARG0_VIRTMAP, 0,
                      N_PBLE - 1, SHADOW, 0, 0), QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_RANGE,
                  "CREATE_CQ: CQ 11: ring PBLEs 4095..4096 are beyond the 4096 committed");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(11, 8) | QRDMA_CQ_ARG0_VIRTMAP, 0,
                      UINT64_MAX, SHADOW, 0, 0), QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_RANGE,
                  "beyond the 4096 committed");
    pble_set(101, PAGES + 0x800);
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(11, 8) | QRDMA_CQ_ARG0_VIRTMAP, 0, 100,
                      SHADOW, 0, 0), QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_ALIGN,
                  "ring page 1 (PBLE 101) at 0x180800 is not 4 KB aligned");
    pble_set(101, NOT_RAM);
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(11, 8) | QRDMA_CQ_ARG0_VIRTMAP, 0, 100,
                      SHADOW, 0, 0), QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_NOT_RAM,
                  "ring page 1 (PBLE 101) at 0x10000000 is not guest RAM");
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_CQ), 2);
}

/* PBLEs whose HMC page is not backed: a layout with PBLEs past FPM 1 MB. */
static void test_virtmap_pble_not_backed(void)
{
    uint64_t big[QRDMA_HMC_NUM_TYPES] = { N_QP, N_CQ, N_SRQ, N_MR, N_AH, 0x40000 };
    uint32_t first;

    fake_setup_ready(NULL);
    cqp_setup(6, 6);
    CHECK_RESULT(cqp_commit(big, FPM_BUF, NULL), QRDMA_CQP_OK, 0);
    hmc_sd_write(0, direct_sd(HMC_RAM));
    /* The first PBLE at FPM 1 MB, where the direct SD leaves guest RAM. */
    first = (0x100000 - core.hmc.base[QRDMA_HMC_PBLE]) / 8;
    pble_set(first - 1, PAGES);
    fake_log_mark();
    CHECK_RESULT(cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(1, 8) | QRDMA_CQ_ARG0_VIRTMAP, 0,
                     first - 1, SHADOW, 0, 0), QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_HMC);
    CHECK(fake_logged("is not guest RAM"));
    /* PBLEs in SD 1, which was never loaded. */
    first = (QRDMA_HMC_SD_SIZE - core.hmc.base[QRDMA_HMC_PBLE]) / 8;
    fake_log_mark();
    CHECK_RESULT(cmd(QRDMA_CQP_OP_CREATE_CQ, cq_arg0(1, 7) | QRDMA_CQ_ARG0_VIRTMAP, 0, first,
                     SHADOW, 0, 0), QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_HMC);
    CHECK(fake_logged("its HMC page is not backed"));
    CHECK(fake_logged("SD 1 is not valid"));
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_CQ), 0);
}

static void test_cq_modify(void)
{
    uint64_t ctx, arg0 = cq_arg0(3, 7) | QRDMA_CQ_ARG0_CEQ_ENABLE |
                           2ull << QRDMA_CQ_ARG0_DB_PAGE_SHIFT;
    struct qrdma_cq *cq;

    setup();
    CHECK_RESULT(cmd(QRDMA_CQP_OP_CREATE_CQ, arg0, 0xabc, RING, SHADOW, 0, 0), QRDMA_CQP_OK, 0);
    cq = qrdma_cq_get(&core, 3);
    if (cq) {
        cq->tail = 17;          /* as if the data path had written CQEs */
        cq->polarity = false;
    }
    ctx = hmc_obj_addr(QRDMA_HMC_CQ, 3);
    /* Resize to 2^10 in another ring: the ring moves, tail and polarity start again. */
    arg0 = cq_arg0(3, 10) | QRDMA_CQ_ARG0_CEQ_ENABLE | 2ull << QRDMA_CQ_ARG0_DB_PAGE_SHIFT;
    CHECK_RESULT(cmd(QRDMA_CQP_OP_MODIFY_CQ, arg0, 0, RING2, 0, 0, 0), QRDMA_CQP_OK, 0);
    CHECK_EQ(fake.guest_errors, 0);
    if (cq) {
        CHECK_EQ(cq->ring.addr, RING2);
        CHECK_EQ(cq->ring.size_log2, 10);
        CHECK_EQ(cq->tail, 0);
        CHECK(cq->polarity);
        CHECK_EQ(cq->cq_ctx, 0xabc);            /* kept */
        CHECK_EQ(cq->shadow, SHADOW);           /* kept */
    }
    CHECK_EQ(get64(ctx), arg0 | QRDMA_CQ_CTX_VALID);
    CHECK_EQ(get64(ctx + 16), RING2);
    CHECK_EQ(get64(ctx + 32), 0);
    CHECK_EQ(get64(ctx + 40), 1);
    /* Into a VIRTMAP ring and back. */
    pble_set(7, PAGES);
    CHECK_RESULT(cmd(QRDMA_CQP_OP_MODIFY_CQ, (arg0 & ~QRDMA_CQ_ARG0_SIZE_MASK) |
                     7ull << QRDMA_CQ_ARG0_SIZE_SHIFT | QRDMA_CQ_ARG0_VIRTMAP, 0, 7, 0, 0, 0),
                 QRDMA_CQP_OK, 0);
    CHECK(cq && cq->ring.virtmap && cq->ring.addr == 7);

    /* Refusals change nothing. */
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_CQ, cq_arg0(4, 7), 0, RING, 0, 0, 0),
                  QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND, "MODIFY_CQ: CQ 4 does not exist");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_CQ, cq_arg0(3, 7) | 2ull << QRDMA_CQ_ARG0_DB_PAGE_SHIFT,
                      0, RING, 0, 0, 0), QRDMA_CQP_ERR_INVALID_ARG, 0,
                  "CEQ_ID, CEQ_ENABLE and DB_PAGE must not change");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_CQ, cq_arg0(3, 7) | QRDMA_CQ_ARG0_CEQ_ENABLE, 0, RING,
                      0, 0, 0), QRDMA_CQP_ERR_INVALID_ARG, 0, "must not change");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_CQ, cq_arg0(3, 7) | QRDMA_CQ_ARG0_CEQ_ENABLE |
                      2ull << QRDMA_CQ_ARG0_DB_PAGE_SHIFT | 1ull << QRDMA_CQ_ARG0_CEQ_SHIFT,
                      0, RING, 0, 0, 0), QRDMA_CQP_ERR_INVALID_ARG, 0, "must not change");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_CQ, (arg0 & ~QRDMA_CQ_ARG0_SIZE_MASK) |
                      19ull << QRDMA_CQ_ARG0_SIZE_SHIFT, 0, RING, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 0, "SIZE_LOG2 19");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_CQ, arg0, 0, RING + 64, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 2, "MODIFY_CQ: CQ 3: ring at");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_CQ, arg0 | 1ull << 38, 0, RING, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 0, "reserved bits");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_CQ, cq_arg0(N_CQ, 7), 0, RING, 0, 0, 0),
                  QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_COUNT, "beyond the 64 committed");
    CHECK(cq && cq->ring.virtmap && cq->ring.addr == 7 && cq->ring.size_log2 == 7);
    CHECK_EQ(get64(ctx + 16), 7);
}

/* ---- QPs: helpers ------------------------------------------------------------------ */

struct qp_spec {
    uint32_t pd;
    uint8_t type, flags;
    uint16_t db_page;
    uint32_t send_cq, recv_cq, srq;
    uint8_t sq_log2, sq_wqe, rq_log2, rq_wqe;
    uint64_t sq_addr, rq_addr, qp_ctx;
};

static struct qp_spec qp_spec(uint8_t type)
{
    struct qp_spec s = {
        .pd = 3, .type = type, .db_page = 1, .send_cq = 1, .recv_cq = 2,
        .sq_log2 = 6, .sq_wqe = 7, .rq_log2 = 6, .rq_wqe = 6,
        .sq_addr = RING, .rq_addr = RING2, .qp_ctx = 0x5000,
    };
    return s;
}

#define CI(f) (INFO + offsetof(struct qrdma_qp_create_info, f))
#define MI(f) (INFO + offsetof(struct qrdma_qp_modify_info, f))
#define QI(f) (QUERY_BUF + offsetof(struct qrdma_qp_modify_info, f))

static void put_create_info(const struct qp_spec *s)
{
    memset(gpa(INFO), 0, 64);
    put32(CI(pd), s->pd);
    put8(CI(type), s->type);
    put8(CI(flags), s->flags);
    put16(CI(db_page), s->db_page);
    put32(CI(send_cq), s->send_cq);
    put32(CI(recv_cq), s->recv_cq);
    put32(CI(srq), s->srq);
    put8(CI(sq_size_log2), s->sq_log2);
    put8(CI(sq_wqe_log2), s->sq_wqe);
    put8(CI(rq_size_log2), s->rq_log2);
    put8(CI(rq_wqe_log2), s->rq_wqe);
    put64(CI(sq_addr), s->sq_addr);
    put64(CI(rq_addr), s->rq_addr);
    put64(CI(qp_ctx), s->qp_ctx);
}

static uint64_t create_qp_spec(uint32_t id, const struct qp_spec *s)
{
    put_create_info(s);
    return cmd(QRDMA_CQP_OP_CREATE_QP, id, INFO, 0, 0, 0, 0);
}

/* Create with the info as it stands at INFO. */
static uint64_t create_qp_info(uint32_t id)
{
    return cmd(QRDMA_CQP_OP_CREATE_QP, id, INFO, 0, 0, 0, 0);
}

static uint64_t destroy_qp(uint32_t id)
{
    return cmd(QRDMA_CQP_OP_DESTROY_QP, id, 0, 0, 0, 0, 0);
}

/* CQs 1 and 2 for the QPs of a test. */
static void qp_cqs(void)
{
    CHECK_RESULT(create_cq(1), QRDMA_CQP_OK, 0);
    CHECK_RESULT(create_cq(2), QRDMA_CQP_OK, 0);
}

#define A(x) QRDMA_QP_ATTR_##x
#define ALL_SUPPORTED (A(STATE) | A(CUR_STATE) | A(EN_SQD_ASYNC) | A(ACCESS_FLAGS) | \
                       A(PKEY_INDEX) | A(PORT) | A(QKEY) | A(AV) | A(PATH_MTU) | A(TIMEOUT) | \
                       A(RETRY_CNT) | A(RNR_RETRY) | A(RQ_PSN) | A(MAX_QP_RD_ATOMIC) | \
                       A(MIN_RNR_TIMER) | A(SQ_PSN) | A(MAX_DEST_RD_ATOMIC) | A(DEST_QPN))

/* A modify info with valid values in every field; the mask says which count. */
static void put_modify_info(uint32_t mask, uint8_t state, uint8_t cur)
{
    static const uint8_t dgid[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2 };
    static const uint8_t dmac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
    uint64_t av = MI(av);

    memset(gpa(INFO), 0, 128);
    put32(MI(attr_mask), mask);
    put8(MI(state), state);
    put8(MI(cur_state), cur);
    put8(MI(path_mtu), 3);
    put8(MI(timeout), 14);
    put32(MI(sq_psn), 0x100);
    put32(MI(rq_psn), 0x200);
    put32(MI(dest_qpn), 0x33);
    put32(MI(qkey), 0x11111111);
    put32(MI(access_flags), QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE |
                            QRDMA_ACCESS_REMOTE_READ);
    put16(MI(pkey_index), 0);
    put8(MI(retry_cnt), 7);
    put8(MI(rnr_retry), 6);
    put8(MI(min_rnr_timer), 12);
    put8(MI(max_rd_atomic), 4);
    put8(MI(max_dest_rd_atomic), 5);
    put8(MI(port_num), 1);
    memcpy(gpa(av), dgid, 16);
    memcpy(gpa(av + 16), dmac, 6);
    put8(av + 22, 0);                           /* SGID 0: IPv4-mapped */
    put8(av + 23, 64);
    put8(av + 24, 0x10);
    put32(av + 28, 0x12345);
}

static uint64_t modify_qp(uint32_t id)
{
    return cmd(QRDMA_CQP_OP_MODIFY_QP, id, INFO, 0, 0, 0, 0);
}

static uint64_t modify(uint32_t id, uint32_t mask, uint8_t state)
{
    put_modify_info(mask, state, core.obj.qp[id].state);
    return modify_qp(id);
}

static uint64_t query_qp(uint32_t id)
{
    memset(gpa(QUERY_BUF), 0xee, 128);
    return cmd(QRDMA_CQP_OP_QUERY_QP, id, QUERY_BUF, 0, 0, 0, 0);
}

/* ---- QPs: create -------------------------------------------------------------------- */

static void test_qp_create(void)
{
    struct qp_spec s = qp_spec(QRDMA_QP_TYPE_RC);
    struct qrdma_qp *qp;
    uint64_t ctx;

    setup();
    qp_cqs();
    CHECK_RESULT(create_qp_spec(2, &s), QRDMA_CQP_OK, 0);
    CHECK_EQ(fake.guest_errors, 0);
    qp = qrdma_qp_get(&core, 2);
    CHECK(qp != NULL);
    if (qp) {
        CHECK_EQ(qp->state, QRDMA_QPS_RESET);
        CHECK_EQ(qp->type, QRDMA_QP_TYPE_RC);
        CHECK_EQ(qp->pd, 3);
        CHECK_EQ(qp->db_page, 1);
        CHECK_EQ(qp->send_cq, 1);
        CHECK_EQ(qp->recv_cq, 2);
        CHECK_EQ(qp->sq.addr, RING);
        CHECK_EQ(qp->sq.size_log2, 6);
        CHECK_EQ(qp->sq.stride_log2, 7);
        CHECK_EQ(qp->rq.addr, RING2);
        CHECK_EQ(qp->qp_ctx, 0x5000);
    }
    CHECK_EQ(core.obj.cq[1].refs, 1);
    CHECK_EQ(core.obj.cq[2].refs, 1);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_QP), 1);
    /* Context: the create info with VALID in bit 63, then what QUERY_QP reports. */
    ctx = hmc_obj_addr(QRDMA_HMC_QP, 2);
    CHECK_EQ(ctx, HMC_RAM + 2 * 256);
    CHECK_EQ(get64(ctx), (get64(INFO) | QRDMA_QP_CTX_VALID));
    CHECK(!memcmp(gpa(ctx + 8), gpa(INFO + 8), 56));
    CHECK_EQ(get32(ctx + 64), A(STATE));
    CHECK_EQ(get8(ctx + 64 + 4), QRDMA_QPS_RESET);
    CHECK(all_zero(ctx + 64 + 5, 128 - 5 + 64));

    /* The same CQ for both directions counts twice. */
    s.recv_cq = 1;
    CHECK_RESULT(create_qp_spec(3, &s), QRDMA_CQP_OK, 0);
    CHECK_EQ(core.obj.cq[1].refs, 3);
    /* UC, UD; the last QP of the layout; VIRTMAP SQ and RQ. */
    s = qp_spec(QRDMA_QP_TYPE_UC);
    CHECK_RESULT(create_qp_spec(4, &s), QRDMA_CQP_OK, 0);
    s = qp_spec(QRDMA_QP_TYPE_UD);
    CHECK_RESULT(create_qp_spec(N_QP - 1, &s), QRDMA_CQP_OK, 0);
    pble_set(10, PAGES);
    pble_set(11, PAGES + 0x1000);
    pble_set(20, PAGES + 0x2000);
    s = qp_spec(QRDMA_QP_TYPE_RC);
    s.flags = QRDMA_QP_CREATE_SQ_VIRTMAP | QRDMA_QP_CREATE_RQ_VIRTMAP | QRDMA_QP_CREATE_SIG_ALL;
    s.sq_addr = 10;                 /* 2^6 x 128 bytes: two pages */
    s.rq_addr = 20;                 /* 2^6 x 64 bytes: one page */
    CHECK_RESULT(create_qp_spec(5, &s), QRDMA_CQP_OK, 0);
    qp = qrdma_qp_get(&core, 5);
    CHECK(qp && qp->sq.virtmap && qp->rq.virtmap && qp->flags == s.flags);
    if (qp) {
        uint64_t addr;

        CHECK_EQ(qrdma_queue_addr(&core, &qp->sq, 32 * 128, &addr), 0);
        CHECK_EQ(addr, PAGES + 0x1000);
        CHECK_EQ(qrdma_queue_addr(&core, &qp->rq, 63 * 64, &addr), 0);
        CHECK_EQ(addr, PAGES + 0x2000 + 63 * 64);
    }
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_QP), 5);
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_qp_create_srq(void)
{
    struct qp_spec s = qp_spec(QRDMA_QP_TYPE_UD);
    uint64_t srq_arg0 = 4 | 6ull << QRDMA_SRQ_ARG0_SIZE_SHIFT | 6ull << QRDMA_SRQ_ARG0_WQE_SHIFT;

    setup();
    qp_cqs();
    CHECK_RESULT(cmd(QRDMA_CQP_OP_CREATE_SRQ, srq_arg0, 3, RING, SHADOW, 0x99, 0),
                 QRDMA_CQP_OK, 0);
    s.flags = QRDMA_QP_CREATE_SRQ;
    s.srq = 4;
    s.rq_log2 = s.rq_wqe = 0;
    s.rq_addr = 0;
    CHECK_RESULT(create_qp_spec(2, &s), QRDMA_CQP_OK, 0);
    CHECK_EQ(core.obj.srq[4].refs, 1);
    CHECK_RESULT(create_qp_spec(3, &s), QRDMA_CQP_OK, 0);
    CHECK_EQ(core.obj.srq[4].refs, 2);
    /* DESTROY_SRQ is BUSY while a QP uses it. */
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_DESTROY_SRQ, 4, 0, 0, 0, 0, 0), QRDMA_CQP_ERR_STATE,
                  QRDMA_STATE_ERR_BUSY, "DESTROY_SRQ: SRQ 4 is still used by 2 QPs");
    CHECK_RESULT(destroy_qp(2), QRDMA_CQP_OK, 0);
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_DESTROY_SRQ, 4, 0, 0, 0, 0, 0), QRDMA_CQP_ERR_STATE,
                  QRDMA_STATE_ERR_BUSY, "still used by 1 QPs");
    CHECK_RESULT(destroy_qp(3), QRDMA_CQP_OK, 0);
    CHECK_EQ(core.obj.srq[4].refs, 0);
    CHECK_RESULT(cmd(QRDMA_CQP_OP_DESTROY_SRQ, 4, 0, 0, 0, 0, 0), QRDMA_CQP_OK, 0);

    /* Refusals around the SRQ: none there, another PD, RQ fields with an SRQ, SRQ without flag. */
    CHECK_REFUSED(create_qp_spec(2, &s), QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND,
                  "CREATE_QP: QP 2: SRQ 4 does not exist");
    CHECK_RESULT(cmd(QRDMA_CQP_OP_CREATE_SRQ, srq_arg0, 7, RING, SHADOW, 0, 0), QRDMA_CQP_OK, 0);
    CHECK_REFUSED(create_qp_spec(2, &s), QRDMA_CQP_ERR_INFO,
                  offsetof(struct qrdma_qp_create_info, srq), "SRQ 4 is in PD 7, the QP in PD 3");
    s.pd = 7;
    s.srq = N_SRQ;
    CHECK_REFUSED(create_qp_spec(2, &s), QRDMA_CQP_ERR_INFO,
                  offsetof(struct qrdma_qp_create_info, srq), "SRQ 16 is beyond the 16 committed");
    s.srq = 4;
    s.rq_log2 = 6;
    CHECK_REFUSED(create_qp_spec(2, &s), QRDMA_CQP_ERR_INFO,
                  offsetof(struct qrdma_qp_create_info, rq_size_log2), "an RQ size with SRQ");
    s.rq_log2 = 0;
    s.rq_wqe = 6;
    CHECK_REFUSED(create_qp_spec(2, &s), QRDMA_CQP_ERR_INFO,
                  offsetof(struct qrdma_qp_create_info, rq_wqe_log2), "an RQ size with SRQ");
    s.rq_wqe = 0;
    s.rq_addr = RING;
    CHECK_REFUSED(create_qp_spec(2, &s), QRDMA_CQP_ERR_INFO,
                  offsetof(struct qrdma_qp_create_info, rq_addr), "an RQ address with SRQ");
    s.rq_addr = 0;
    s.flags |= QRDMA_QP_CREATE_RQ_VIRTMAP;
    CHECK_REFUSED(create_qp_spec(2, &s), QRDMA_CQP_ERR_INFO,
                  offsetof(struct qrdma_qp_create_info, flags), "RQ_VIRTMAP with SRQ");
    s = qp_spec(QRDMA_QP_TYPE_UD);
    s.srq = 4;
    CHECK_REFUSED(create_qp_spec(2, &s), QRDMA_CQP_ERR_INFO,
                  offsetof(struct qrdma_qp_create_info, srq), "an SRQ without the SRQ flag");
    CHECK_EQ(core.obj.srq[4].refs, 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_QP), 0);
}

/* QP 1 is the GSI QP: UD with flag GSI, and only QP 1 is. */
static void test_qp_gsi(void)
{
    struct qp_spec s = qp_spec(QRDMA_QP_TYPE_RC);

    setup();
    qp_cqs();
    s.flags = QRDMA_QP_CREATE_GSI;
    CHECK_REFUSED(create_qp_spec(1, &s), QRDMA_CQP_ERR_INFO,
                  offsetof(struct qrdma_qp_create_info, type), "QP 1: info byte 4: the GSI QP is UD");
    s.type = QRDMA_QP_TYPE_UC;
    CHECK_REFUSED(create_qp_spec(1, &s), QRDMA_CQP_ERR_INFO,
                  offsetof(struct qrdma_qp_create_info, type), "the GSI QP is UD");
    s.type = QRDMA_QP_TYPE_UD;
    CHECK_RESULT(create_qp_spec(1, &s), QRDMA_CQP_OK, 0);
    CHECK(qrdma_qp_get(&core, 1) && qrdma_qp_get(&core, 1)->flags == QRDMA_QP_CREATE_GSI);
    /* ib_mad's sequence: INIT with P_Key index and Q_Key (no port), RTR, RTS with SQ PSN. */
    CHECK_RESULT(modify(1, A(STATE) | A(PKEY_INDEX) | A(QKEY), QRDMA_QPS_INIT), QRDMA_CQP_OK, 0);
    CHECK_RESULT(modify(1, A(STATE), QRDMA_QPS_RTR), QRDMA_CQP_OK, 0);
    CHECK_RESULT(modify(1, A(STATE) | A(SQ_PSN), QRDMA_QPS_RTS), QRDMA_CQP_OK, 0);
    CHECK_RESULT(query_qp(1), QRDMA_CQP_OK, 0);
    CHECK_EQ(get8(QI(state)), QRDMA_QPS_RTS);
    CHECK_EQ(get32(QI(attr_mask)), A(STATE) | A(PKEY_INDEX) | A(QKEY) | A(SQ_PSN));
    /* A port on a GSI QP is one attribute too many, as in IB's table. */
    CHECK_RESULT(modify(1, A(STATE), QRDMA_QPS_RESET), QRDMA_CQP_OK, 0);
    CHECK_REFUSED(modify(1, A(STATE) | A(PKEY_INDEX) | A(QKEY) | A(PORT), QRDMA_QPS_INIT),
                  QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_ATTR,
                  "GSI RESET -> INIT does not take attributes 0x20");
    CHECK_REFUSED(create_qp_spec(1, &s), QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_EXISTS,
                  "CREATE_QP: QP 1 exists");
    CHECK_RESULT(destroy_qp(1), QRDMA_CQP_OK, 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_QP), 0);
}

/* Every field of the create info refused on its own, with its offset. */
static void test_qp_create_errors(void)
{
    const size_t o_pd = offsetof(struct qrdma_qp_create_info, pd);
    const size_t o_type = offsetof(struct qrdma_qp_create_info, type);
    const size_t o_flags = offsetof(struct qrdma_qp_create_info, flags);
    const size_t o_db = offsetof(struct qrdma_qp_create_info, db_page);
    const size_t o_scq = offsetof(struct qrdma_qp_create_info, send_cq);
    const size_t o_rcq = offsetof(struct qrdma_qp_create_info, recv_cq);
    const size_t o_sqs = offsetof(struct qrdma_qp_create_info, sq_size_log2);
    const size_t o_sqw = offsetof(struct qrdma_qp_create_info, sq_wqe_log2);
    const size_t o_rqs = offsetof(struct qrdma_qp_create_info, rq_size_log2);
    const size_t o_rqw = offsetof(struct qrdma_qp_create_info, rq_wqe_log2);
    const size_t o_sqa = offsetof(struct qrdma_qp_create_info, sq_addr);
    const size_t o_rqa = offsetof(struct qrdma_qp_create_info, rq_addr);
    const size_t o_ctx = offsetof(struct qrdma_qp_create_info, qp_ctx);
    const size_t o_res = offsetof(struct qrdma_qp_create_info, reserved);
    const struct qp_spec good = qp_spec(QRDMA_QP_TYPE_RC);
    struct qrdma_core_config cfg;
    struct qp_spec s;
    uint64_t ctx;

    setup();
    qp_cqs();
    ctx = hmc_obj_addr(QRDMA_HMC_QP, 2);
#define BAD(field, value, off, needle)                                             \
    do {                                                                           \
        s = good;                                                                  \
        s.field = (value);                                                         \
        CHECK_REFUSED(create_qp_spec(2, &s), QRDMA_CQP_ERR_INFO, (off), (needle)); \
    } while (0)
    BAD(pd, QRDMA_DEFAULT_MAX_PD, o_pd, "CREATE_QP: QP 2: info byte 0: PD 1024 is beyond");
    BAD(type, 1, o_type, "info byte 4: type 1 is not RC (2), UC (3) or UD (4)");
    BAD(type, 5, o_type, "type 5");
    BAD(flags, 0x20, o_flags, "flags 0x20 set reserved bits");
    BAD(flags, QRDMA_QP_CREATE_GSI, o_flags, "flag GSI on a QP other than QP 1");
    BAD(db_page, QRDMA_DEFAULT_DB_PAGES, o_db, "doorbell page 256");
    BAD(sq_log2, 0, o_sqs, "SIZE_LOG2 0 is outside 1..15");
    BAD(sq_log2, 13, o_sqs, "above CAP_MAX_QP_WR 4096");
    BAD(sq_wqe, 4, o_sqw, "WQE_LOG2 4 is outside 5..10");
    BAD(sq_wqe, 11, o_sqw, "WQE_LOG2 11");
    /* 32 bytes is a valid RQ stride but less than an SQ WQE's header (issue 11). */
    BAD(sq_wqe, 5, o_sqw, "info byte 21: SQ WQE_LOG2 5: an SQ WQE is at least its 64-byte header");
    BAD(rq_log2, 0, o_rqs, "SIZE_LOG2 0");
    BAD(rq_wqe, 0, o_rqw, "WQE_LOG2 0");
    BAD(qp_ctx, 1ull << 63, o_ctx, "QP_CTX has bit 63 set");
    BAD(send_cq, N_CQ, o_scq, "send CQ 64 is beyond the 64 committed");
    BAD(recv_cq, 0xffffffffu, o_rcq, "receive CQ 4294967295 is beyond");
    BAD(sq_addr, RING + 0x100, o_sqa, "CREATE_QP: QP 2 SQ: ring at 0x120100");
    BAD(sq_addr, NOT_RAM, o_sqa, "not 4 KB aligned guest RAM");
    BAD(rq_addr, RAM_END - 0x800, o_rqa, "CREATE_QP: QP 2 RQ: ring at");
    /* 2^12 WQEs of 1 KB are 4 MB: within a ring's 8 MB, so the placement is what fails. */
    s = good;
    s.sq_log2 = 12;
    s.sq_wqe = 10;
    s.sq_addr = NOT_RAM;
    CHECK_REFUSED(create_qp_spec(2, &s), QRDMA_CQP_ERR_INFO, o_sqa, "SQ: ring at");
#undef BAD
    /* CQs that do not exist. */
    s = good;
    s.send_cq = 5;
    CHECK_REFUSED(create_qp_spec(2, &s), QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND,
                  "CREATE_QP: QP 2: send CQ 5 does not exist");
    s = good;
    s.recv_cq = 6;
    CHECK_REFUSED(create_qp_spec(2, &s), QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND,
                  "receive CQ 6 does not exist");
    /* The reserved qwords. */
    put_create_info(&good);
    put64(INFO + o_res, 1);
    CHECK_REFUSED(create_qp_info(2), QRDMA_CQP_ERR_INFO, o_res, "info byte 48: reserved");
    put_create_info(&good);
    put64(INFO + o_res + 8, 1ull << 63);
    CHECK_REFUSED(create_qp_info(2), QRDMA_CQP_ERR_INFO, o_res + 8, "info byte 56: reserved");
    /* The arguments: QP 0 and 1, beyond the layout, reserved bits, the info buffer. */
    put_create_info(&good);
    CHECK_REFUSED(create_qp_info(0), QRDMA_CQP_ERR_INVALID_ARG, 0,
                  "CREATE_QP: QP 0 (IB's SMI QP) does not exist on RoCE");
    CHECK_REFUSED(create_qp_info(1), QRDMA_CQP_ERR_INFO, o_flags,
                  "QP 1 is created only as the GSI QP");
    CHECK_REFUSED(create_qp_info(N_QP), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_COUNT,
                  "CREATE_QP: QP 64 is beyond the 64 committed");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_QP, 2 | 1ull << 24, INFO, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 0, "is not a QP_ID");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_QP, 2, INFO + 32, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "info 0x113020 is not 64-byte aligned");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_QP, 2, NOT_RAM, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "guest RAM");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_QP, 2, RAM_END, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "guest RAM");
    /* Nothing of that created anything, took a reference or wrote a context. */
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_QP), 0);
    CHECK_EQ(core.obj.cq[1].refs, 0);
    CHECK_EQ(core.obj.cq[2].refs, 0);
    CHECK(all_zero(ctx, 256));
    /* It exists: EXISTS. */
    CHECK_RESULT(create_qp_spec(2, &good), QRDMA_CQP_OK, 0);
    CHECK_REFUSED(create_qp_spec(2, &good), QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_EXISTS,
                  "CREATE_QP: QP 2 exists");
    CHECK_EQ(core.obj.cq[1].refs, 1);

    /* A smaller max_qp_wr: 2^n may be max_qp_wr + 1. */
    qrdma_core_config_defaults(&cfg);
    cfg.max_qp_wr = 63;
    setup_with(&cfg, true);
    qp_cqs();
    CHECK_RESULT(create_qp_spec(2, &good), QRDMA_CQP_OK, 0);       /* 2^6 = 64 */
    s = good;
    s.rq_log2 = 7;
    CHECK_REFUSED(create_qp_spec(3, &s), QRDMA_CQP_ERR_INFO, o_rqs, "CAP_MAX_QP_WR 63");

    /* The most WQEs with the widest stride is a ring over 8 MB. */
    qrdma_core_config_defaults(&cfg);
    cfg.max_qp_wr = 1u << 15;
    setup_with(&cfg, true);
    qp_cqs();
    s = good;
    s.sq_log2 = 14;
    s.sq_wqe = 10;
    CHECK_REFUSED(create_qp_spec(2, &s), QRDMA_CQP_ERR_INFO, o_sqs,
                  "a ring of 2^24 bytes is over 8388608");
    s.sq_wqe = 9;                               /* 8 MB exactly: its placement is checked */
    CHECK_REFUSED(create_qp_spec(2, &s), QRDMA_CQP_ERR_INFO, o_sqa, "SQ: ring at");
    s.sq_wqe = 8;                               /* 4 MB: all of fake RAM */
    s.sq_addr = FAKE_RAM_BASE;
    CHECK_RESULT(create_qp_spec(2, &s), QRDMA_CQP_OK, 0);
}

/* ---- QPs: the state machine ---------------------------------------------------------- */

enum { K_RC, K_UC, K_UD, K_GSI, K_NUM };
static const uint8_t kind_type[K_NUM] = { QRDMA_QP_TYPE_RC, QRDMA_QP_TYPE_UC, QRDMA_QP_TYPE_UD,
                                          QRDMA_QP_TYPE_UD };

/* The QP a state test uses: QP 1 is the only GSI QP. */
static uint32_t kind_qp(int kind)
{
    return kind == K_GSI ? 1 : 7;
}

/*
 * IB's legal transitions (IBTA vol. 1, 11.2.4.2 and the state diagram of
 * 10.3.1), written out again here independently of the device's table:
 * required and optional attributes per type (RC, UC, UD, GSI: IB's GSI
 * column is UD's without PORT). SQE is only for UC, UD and GSI.
 */
struct legal {
    uint8_t cur, next;
    bool uc_ud_only;
    uint32_t req[K_NUM], opt[K_NUM];
};

#define RTS_OPT_RC (A(CUR_STATE) | A(ACCESS_FLAGS) | A(MIN_RNR_TIMER) | A(ALT_PATH) | \
                    A(PATH_MIG_STATE))
#define RTS_OPT_UC (A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) | A(PATH_MIG_STATE))
#define RTS_OPT_UD (A(CUR_STATE) | A(QKEY))
#define RTS_OPT { RTS_OPT_RC, RTS_OPT_UC, RTS_OPT_UD, RTS_OPT_UD }

static const struct legal legal[] = {
    { QRDMA_QPS_RESET, QRDMA_QPS_RESET, false, { 0 }, { 0 } },
    { QRDMA_QPS_RESET, QRDMA_QPS_INIT, false,
      { A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS), A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
        A(PKEY_INDEX) | A(PORT) | A(QKEY), A(PKEY_INDEX) | A(QKEY) }, { 0 } },
    { QRDMA_QPS_INIT, QRDMA_QPS_RESET, false, { 0 }, { 0 } },
    { QRDMA_QPS_INIT, QRDMA_QPS_ERR, false, { 0 }, { 0 } },
    { QRDMA_QPS_INIT, QRDMA_QPS_INIT, false, { 0 },
      { A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS), A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
        A(PKEY_INDEX) | A(PORT) | A(QKEY), A(PKEY_INDEX) | A(QKEY) } },
    { QRDMA_QPS_INIT, QRDMA_QPS_RTR, false,
      { A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) | A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
        A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN), 0 },
      { A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX), A(ALT_PATH) | A(ACCESS_FLAGS) |
        A(PKEY_INDEX), A(PKEY_INDEX) | A(QKEY), A(PKEY_INDEX) | A(QKEY) } },
    { QRDMA_QPS_RTR, QRDMA_QPS_RESET, false, { 0 }, { 0 } },
    { QRDMA_QPS_RTR, QRDMA_QPS_ERR, false, { 0 }, { 0 } },
    { QRDMA_QPS_RTR, QRDMA_QPS_RTS, false,
      { A(SQ_PSN) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) | A(MAX_QP_RD_ATOMIC), A(SQ_PSN),
        A(SQ_PSN), A(SQ_PSN) }, RTS_OPT },
    { QRDMA_QPS_RTS, QRDMA_QPS_RESET, false, { 0 }, { 0 } },
    { QRDMA_QPS_RTS, QRDMA_QPS_ERR, false, { 0 }, { 0 } },
    { QRDMA_QPS_RTS, QRDMA_QPS_RTS, false, { 0 }, RTS_OPT },
    { QRDMA_QPS_RTS, QRDMA_QPS_SQD, false, { 0 },
      { A(EN_SQD_ASYNC), A(EN_SQD_ASYNC), A(EN_SQD_ASYNC), A(EN_SQD_ASYNC) } },
    { QRDMA_QPS_SQD, QRDMA_QPS_RESET, false, { 0 }, { 0 } },
    { QRDMA_QPS_SQD, QRDMA_QPS_ERR, false, { 0 }, { 0 } },
    { QRDMA_QPS_SQD, QRDMA_QPS_RTS, false, { 0 }, RTS_OPT },
    { QRDMA_QPS_SQD, QRDMA_QPS_SQD, false, { 0 },
      { A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) | A(MAX_QP_RD_ATOMIC) |
        A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) |
        A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
        A(AV) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) | A(PATH_MIG_STATE),
        A(PKEY_INDEX) | A(QKEY), A(PKEY_INDEX) | A(QKEY) } },
    { QRDMA_QPS_SQE, QRDMA_QPS_RESET, false, { 0 }, { 0 } },
    { QRDMA_QPS_SQE, QRDMA_QPS_ERR, false, { 0 }, { 0 } },
    { QRDMA_QPS_SQE, QRDMA_QPS_RTS, true, { 0 },
      { 0, A(CUR_STATE) | A(ACCESS_FLAGS), A(CUR_STATE) | A(QKEY), A(CUR_STATE) | A(QKEY) } },
    { QRDMA_QPS_ERR, QRDMA_QPS_RESET, false, { 0 }, { 0 } },
    { QRDMA_QPS_ERR, QRDMA_QPS_ERR, false, { 0 }, { 0 } },
};
#define N_LEGAL (sizeof(legal) / sizeof(legal[0]))

static const struct legal *find_legal(int kind, uint8_t cur, uint8_t next)
{
    size_t i;

    for (i = 0; i < N_LEGAL; i++) {
        if (legal[i].cur == cur && legal[i].next == next &&
            (!legal[i].uc_ud_only || kind != K_RC)) {
            return &legal[i];
        }
    }
    return NULL;
}

/* A fresh QP of kind in state target, reached by legal modifies (SQE: by the data path). */
static void qp_in_state(uint32_t id, int kind, uint8_t target)
{
    static const uint8_t path[] = { QRDMA_QPS_INIT, QRDMA_QPS_RTR, QRDMA_QPS_RTS,
                                    QRDMA_QPS_SQD };
    struct qp_spec s = qp_spec(kind_type[kind]);
    uint8_t want = target;
    size_t i;

    if (kind == K_GSI) {
        s.flags = QRDMA_QP_CREATE_GSI;
    }
    CHECK_RESULT(create_qp_spec(id, &s), QRDMA_CQP_OK, 0);
    if (target == QRDMA_QPS_ERR) {
        want = QRDMA_QPS_INIT;
    } else if (target == QRDMA_QPS_SQE) {
        want = QRDMA_QPS_RTS;
    }
    for (i = 0; i < sizeof(path) && core.obj.qp[id].state != want && want != QRDMA_QPS_RESET;
         i++) {
        const struct legal *l = find_legal(kind, core.obj.qp[id].state, path[i]);

        CHECK(l != NULL);
        if (l) {
            CHECK_RESULT(modify(id, A(STATE) | l->req[kind], path[i]), QRDMA_CQP_OK, 0);
        }
    }
    if (target == QRDMA_QPS_ERR) {
        CHECK_RESULT(modify(id, A(STATE), QRDMA_QPS_ERR), QRDMA_CQP_OK, 0);
    }
    if (target == QRDMA_QPS_SQE) {
        core.obj.qp[id].state = QRDMA_QPS_SQE;  /* only a send error gets it there */
    }
    CHECK_EQ(core.obj.qp[id].state, target);
}

static void test_qp_state_matrix(void)
{
    unsigned legal_ok = 0, refused = 0;
    int kind;
    uint8_t cur, next;

    setup();
    qp_cqs();
    for (kind = 0; kind < K_NUM; kind++) {
        for (cur = QRDMA_QPS_RESET; cur <= QRDMA_QPS_ERR; cur++) {
            for (next = QRDMA_QPS_RESET; next <= QRDMA_QPS_ERR; next++) {
                const struct legal *l = find_legal(kind, cur, next);
                const uint32_t id = kind_qp(kind);
                uint64_t st;

                qp_in_state(id, kind, cur);
                st = modify(id, A(STATE) | (l ? l->req[kind] : 0), next);
                if (l) {
                    CHECK_RESULT(st, QRDMA_CQP_OK, 0);
                    CHECK_RESULT(query_qp(id), QRDMA_CQP_OK, 0);
                    CHECK_EQ(get8(QI(state)), next);
                    legal_ok++;
                } else {
                    CHECK_RESULT(st, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_TRANSITION);
                    CHECK_EQ(core.obj.qp[id].state, cur);
                    refused++;
                }
                CHECK_RESULT(destroy_qp(id), QRDMA_CQP_OK, 0);
            }
        }
    }
    /* 22 legal pairs for UC, UD and GSI, 21 for RC (no SQE -> RTS). */
    CHECK_EQ(legal_ok, 21 + 22 + 22 + 22);
    CHECK_EQ(refused, K_NUM * 49 - legal_ok);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_QP), 0);
    CHECK_EQ(core.obj.cq[1].refs, 0);
}

/* Put QP 7 (of kind) in state cur without the commands: the attribute checks only look at it. */
static void poke_state(int kind, uint8_t cur)
{
    core.obj.qp[7].state = cur;
    core.obj.qp[7].type = kind_type[kind];
    core.obj.qp[7].flags = kind == K_GSI ? QRDMA_QP_CREATE_GSI : 0;
}

static void test_qp_state_attrs(void)
{
    const uint32_t unsupported = A(ALT_PATH) | A(PATH_MIG_STATE) | A(CAP);
    unsigned missing = 0, extra = 0, full = 0;
    struct qp_spec s = qp_spec(QRDMA_QP_TYPE_RC);
    int kind;
    size_t i;

    setup();
    qp_cqs();
    CHECK_RESULT(create_qp_spec(7, &s), QRDMA_CQP_OK, 0);
    for (kind = 0; kind < K_NUM; kind++) {
        for (i = 0; i < N_LEGAL; i++) {
            const struct legal *l = &legal[i];
            uint32_t req = l->req[kind], allowed = A(STATE) | req | l->opt[kind], bit;

            if (l->uc_ud_only && kind == K_RC) {
                continue;
            }
            /* Every required attribute left out on its own: ATTR. */
            for (bit = 1; bit; bit <<= 1) {
                if (!(req & bit)) {
                    continue;
                }
                poke_state(kind, l->cur);
                fake_log_mark();
                CHECK_RESULT(modify(7, (A(STATE) | req) & ~bit, l->next), QRDMA_CQP_ERR_STATE,
                             QRDMA_STATE_ERR_ATTR);
                CHECK(fake_logged("requires attributes"));
                CHECK_EQ(core.obj.qp[7].state, l->cur);
                missing++;
            }
            /* Every attribute the transition does not take, added on its own: ATTR. */
            for (bit = 1; bit <= A(DEST_QPN); bit <<= 1) {
                if (allowed & bit || unsupported & bit) {
                    continue;
                }
                poke_state(kind, l->cur);
                fake_log_mark();
                CHECK_RESULT(modify(7, A(STATE) | req | bit, l->next), QRDMA_CQP_ERR_STATE,
                             QRDMA_STATE_ERR_ATTR);
                CHECK(fake_logged("does not take attributes"));
                CHECK_EQ(core.obj.qp[7].state, l->cur);
                extra++;
            }
            /* Required plus every optional one the device implements: accepted. */
            poke_state(kind, l->cur);
            CHECK_RESULT(modify(7, A(STATE) | req | (l->opt[kind] & ~unsupported), l->next),
                         QRDMA_CQP_OK, 0);
            CHECK_EQ(core.obj.qp[7].state, l->next);
            /* And each optional attribute on its own. */
            for (bit = 1; bit <= A(DEST_QPN); bit <<= 1) {
                if (!(l->opt[kind] & bit) || unsupported & bit) {
                    continue;
                }
                poke_state(kind, l->cur);
                CHECK_RESULT(modify(7, A(STATE) | req | bit, l->next), QRDMA_CQP_OK, 0);
            }
            full++;
        }
    }
    CHECK_EQ(full, 21 + 22 + 22 + 22);
    CHECK_EQ(missing, 14 + 8 + 4 + 3);          /* RC, UC, UD, GSI required attributes in all */
    CHECK(extra > 300);
    /* Without STATE the QP stays where it is: allowed where cur -> cur is (RTS), not in RTR. */
    poke_state(K_RC, QRDMA_QPS_RTS);
    CHECK_RESULT(modify(7, A(MIN_RNR_TIMER), 0), QRDMA_CQP_OK, 0);
    CHECK_EQ(core.obj.qp[7].state, QRDMA_QPS_RTS);
    poke_state(K_RC, QRDMA_QPS_RTR);
    CHECK_RESULT(modify(7, A(MIN_RNR_TIMER), 0), QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_TRANSITION);
    CHECK(fake_logged("RC RTR -> RTR is not a transition IB allows"));
}

/* CUR_STATE, unknown and unimplemented attributes, reserved fields. */
static void test_qp_modify_mask(void)
{
    const uint32_t to_rts = A(STATE) | A(SQ_PSN) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
                            A(MAX_QP_RD_ATOMIC);
    unsigned i;

    setup();
    qp_cqs();
    qp_in_state(2, K_RC, QRDMA_QPS_RTR);
    /* CUR_STATE right: accepted where IB allows it; wrong: TRANSITION; not a state: INFO. */
    put_modify_info(to_rts | A(CUR_STATE), QRDMA_QPS_RTS, QRDMA_QPS_INIT);
    CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_TRANSITION,
                  "MODIFY_QP: QP 2: the driver expects INIT, the QP is in RTR");
    put_modify_info(to_rts | A(CUR_STATE), QRDMA_QPS_RTS, 7);
    CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO, offsetof(struct qrdma_qp_modify_info, cur_state),
                  "current state 7 is not a QP state");
    put_modify_info(to_rts, 7, QRDMA_QPS_RTR);
    CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO, offsetof(struct qrdma_qp_modify_info, state),
                  "state 7 is not a QP state");
    /* Unknown bits, and what the device does not implement (APM, resizing). */
    put_modify_info(to_rts | 1u << 21, QRDMA_QPS_RTS, 0);
    CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO, 0, "has unknown bits 0x200000");
    put_modify_info(to_rts | 1u << 31, QRDMA_QPS_RTS, 0);
    CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO, 0, "unknown bits 0x80000000");
    put_modify_info(to_rts | A(ALT_PATH), QRDMA_QPS_RTS, 0);
    CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO, 0, "does not implement");
    put_modify_info(to_rts | A(PATH_MIG_STATE), QRDMA_QPS_RTS, 0);
    CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO, 0, "does not implement");
    put_modify_info(to_rts | A(CAP), QRDMA_QPS_RTS, 0);
    CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO, 0, "does not implement");
    /* Reserved bytes, each region. */
    for (i = 0; i < 7; i++) {
        put_modify_info(to_rts, QRDMA_QPS_RTS, 0);
        put8(MI(reserved0) + i, 1);
        CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO,
                      offsetof(struct qrdma_qp_modify_info, reserved0) + i, "reserved0");
    }
    put_modify_info(to_rts, QRDMA_QPS_RTS, 0);
    put32(MI(reserved1), 0x100);
    CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO,
                  offsetof(struct qrdma_qp_modify_info, reserved1), "reserved1");
    for (i = 0; i < 6; i++) {
        put_modify_info(to_rts, QRDMA_QPS_RTS, 0);
        put64(MI(reserved2) + 8 * i, 1ull << 40);
        CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO,
                      offsetof(struct qrdma_qp_modify_info, reserved2) + 8 * i, "reserved2");
    }
    /* sq_draining is QUERY_QP's: a modify ignores it (a buffer reused from a query works). */
    put_modify_info(to_rts, QRDMA_QPS_RTS, 0);
    put8(MI(sq_draining), 1);
    /* The arguments. */
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_QP, 2, INFO + 8, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "not 64-byte aligned");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_QP, 2, RAM_END - 64, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "guest RAM");
    CHECK_REFUSED(modify_qp(3), QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND,
                  "MODIFY_QP: QP 3 does not exist");
    CHECK_REFUSED(modify_qp(N_QP), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_COUNT, "beyond");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_QP, 2 | 1ull << 32, INFO, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 0, "not a QP_ID");
    CHECK_EQ(core.obj.qp[2].state, QRDMA_QPS_RTR);
    CHECK_RESULT(modify_qp(2), QRDMA_CQP_OK, 0);
    CHECK_EQ(core.obj.qp[2].state, QRDMA_QPS_RTS);
}

/* Each value check, with the field's offset as minor; a refused modify changes nothing. */
static void test_qp_modify_values(void)
{
    struct qrdma_core_config cfg;
    const uint32_t rtr = A(STATE) | A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
                         A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER) | A(ACCESS_FLAGS) |
                         A(PKEY_INDEX);
    const uint32_t rts = A(STATE) | A(SQ_PSN) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
                         A(MAX_QP_RD_ATOMIC);
    const uint32_t init = A(STATE) | A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS);
    uint8_t ctx_before[256];
    uint64_t ctx;

    qrdma_core_config_defaults(&cfg);
    cfg.max_mtu = 1024;
    cfg.max_rd_atom = 8;
    setup_with(&cfg, true);
    qp_cqs();
    qp_in_state(2, K_RC, QRDMA_QPS_INIT);
    ctx = hmc_obj_addr(QRDMA_HMC_QP, 2);
    memcpy(ctx_before, gpa(ctx), sizeof(ctx_before));

#define BAD8(mask, state, field, value, needle)                                    \
    do {                                                                           \
        put_modify_info((mask), (state), 0);                                       \
        put8(MI(field), (value));                                                  \
        CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO,                            \
                      offsetof(struct qrdma_qp_modify_info, field), (needle));     \
    } while (0)
#define BAD32(mask, state, field, value, needle)                                   \
    do {                                                                           \
        put_modify_info((mask), (state), 0);                                       \
        put32(MI(field), (value));                                                 \
        CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO,                            \
                      offsetof(struct qrdma_qp_modify_info, field), (needle));     \
    } while (0)
    BAD8(rtr, QRDMA_QPS_RTR, path_mtu, 0, "path MTU 0 is not 1 (256) .. 3 (CAP_MAX_MTU 1024)");
    BAD8(rtr, QRDMA_QPS_RTR, path_mtu, 4, "path MTU 4");       /* 2048 > CAP_MAX_MTU */
    BAD8(rtr, QRDMA_QPS_RTR, path_mtu, 6, "path MTU 6");
    BAD8(rtr, QRDMA_QPS_RTR, min_rnr_timer, 32, "minimum RNR timer 32 is over 31");
    BAD8(rtr, QRDMA_QPS_RTR, max_dest_rd_atomic, 9, "max_dest_rd_atomic 9 is over "
         "CAP_MAX_RESP_RES 8");
    BAD32(rtr, QRDMA_QPS_RTR, dest_qpn, 1u << 24, "destination QPN 0x1000000 is over 24 bits");
    BAD32(rtr, QRDMA_QPS_RTR, rq_psn, 0xffffffffu, "RQ PSN 0xffffffff");
    BAD32(rtr, QRDMA_QPS_RTR, access_flags, 0x40, "access flags 0x40 are not within 0x3f");
    put_modify_info(rtr, QRDMA_QPS_RTR, 0);
    put16(MI(pkey_index), 1);
    CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO,
                  offsetof(struct qrdma_qp_modify_info, pkey_index), "P_Key index 1");
    BAD8(init, QRDMA_QPS_INIT, port_num, 2, "port 2: the device has port 1 only");
    BAD8(init, QRDMA_QPS_INIT, port_num, 0, "port 0");
    /* The AV: offsets inside it. */
    put_modify_info(rtr, QRDMA_QPS_RTR, 0);
    put8(MI(av) + 22, 5);                                       /* SGID 5: empty */
    CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO,
                  offsetof(struct qrdma_qp_modify_info, av) + 22, "SGID index 5 names no GID");
    put_modify_info(rtr, QRDMA_QPS_RTR, 0);
    put8(MI(av) + 22, 200);                                     /* beyond the table */
    CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO,
                  offsetof(struct qrdma_qp_modify_info, av) + 22, "SGID index 200");
    put_modify_info(rtr, QRDMA_QPS_RTR, 0);
    put32(MI(av) + 28, 0x100000);
    CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO,
                  offsetof(struct qrdma_qp_modify_info, av) + 28, "flow label 0x100000");
    put_modify_info(rtr, QRDMA_QPS_RTR, 0);
    put8(MI(av) + 26, 1);
    CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO,
                  offsetof(struct qrdma_qp_modify_info, av) + 25, "reserved bytes");
    put_modify_info(rtr, QRDMA_QPS_RTR, 0);
    put8(MI(av) + 22, 1);                                       /* IPv6 SGID, IPv4 DGID */
    CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_INFO,
                  offsetof(struct qrdma_qp_modify_info, av), "DGID is IPv4-mapped but SGID 1");
    /* None of that moved the QP or touched its context. */
    CHECK_EQ(core.obj.qp[2].state, QRDMA_QPS_INIT);
    CHECK(!memcmp(gpa(ctx), ctx_before, sizeof(ctx_before)));
    /* The largest values are fine; the QP goes on to RTS. */
    put_modify_info(rtr, QRDMA_QPS_RTR, 0);
    put8(MI(path_mtu), 3);
    put8(MI(min_rnr_timer), 31);
    put8(MI(max_dest_rd_atomic), 8);
    put32(MI(dest_qpn), 0xffffff);
    put32(MI(rq_psn), 0xffffff);
    put32(MI(access_flags), QRDMA_ACCESS_VALID_MASK);
    put32(MI(av) + 28, 0xfffff);
    CHECK_RESULT(modify_qp(2), QRDMA_CQP_OK, 0);
    BAD8(rts, QRDMA_QPS_RTS, timeout, 32, "timeout 32 is over 31");
    BAD8(rts, QRDMA_QPS_RTS, retry_cnt, 8, "retry count 8 is over 7");
    BAD8(rts, QRDMA_QPS_RTS, rnr_retry, 8, "RNR retry 8 is over 7");
    BAD8(rts, QRDMA_QPS_RTS, max_rd_atomic, 9, "max_rd_atomic 9 is over CAP_MAX_RD_ATOM 8");
    BAD32(rts, QRDMA_QPS_RTS, sq_psn, 1u << 24, "SQ PSN 0x1000000");
    CHECK_EQ(core.obj.qp[2].state, QRDMA_QPS_RTR);
    put_modify_info(rts, QRDMA_QPS_RTS, 0);
    put8(MI(timeout), 31);
    put8(MI(max_rd_atomic), 8);
    CHECK_RESULT(modify_qp(2), QRDMA_CQP_OK, 0);
#undef BAD8
#undef BAD32
}

/* QUERY_QP reports what the device holds, and the context says the same. */
static void test_qp_query(void)
{
    static const uint8_t dgid[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2 };
    struct qp_spec s = qp_spec(QRDMA_QP_TYPE_RC);
    uint64_t ctx;

    setup();
    qp_cqs();
    CHECK_RESULT(create_qp_spec(2, &s), QRDMA_CQP_OK, 0);
    ctx = hmc_obj_addr(QRDMA_HMC_QP, 2);
    CHECK_RESULT(query_qp(2), QRDMA_CQP_OK, 0);
    CHECK_EQ(get32(QI(attr_mask)), A(STATE));
    CHECK_EQ(get8(QI(state)), QRDMA_QPS_RESET);
    CHECK(all_zero(QUERY_BUF + 5, 123));

    CHECK_RESULT(modify(2, A(STATE) | A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                        QRDMA_QPS_INIT), QRDMA_CQP_OK, 0);
    put_modify_info(A(STATE) | A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
                    A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER), QRDMA_QPS_RTR, 0);
    put32(MI(dest_qpn), 0xabcdef);
    put32(MI(rq_psn), 0x777777);
    put8(MI(path_mtu), 5);
    put8(MI(timeout), 30);                      /* not in the mask: not taken */
    CHECK_RESULT(modify_qp(2), QRDMA_CQP_OK, 0);
    CHECK_RESULT(modify(2, A(STATE) | A(SQ_PSN) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
                        A(MAX_QP_RD_ATOMIC) | A(MIN_RNR_TIMER), QRDMA_QPS_RTS), QRDMA_CQP_OK, 0);

    CHECK_RESULT(query_qp(2), QRDMA_CQP_OK, 0);
    CHECK_EQ(get32(QI(attr_mask)), A(STATE) | A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS) |
             A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) | A(MAX_DEST_RD_ATOMIC) |
             A(MIN_RNR_TIMER) | A(SQ_PSN) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
             A(MAX_QP_RD_ATOMIC));
    CHECK_EQ(get8(QI(state)), QRDMA_QPS_RTS);
    CHECK_EQ(get8(QI(cur_state)), QRDMA_QPS_RTS);
    CHECK_EQ(get8(QI(path_mtu)), 5);
    CHECK_EQ(get8(QI(timeout)), 14);
    CHECK_EQ(get32(QI(sq_psn)), 0x100);
    CHECK_EQ(get32(QI(rq_psn)), 0x777777);
    CHECK_EQ(get32(QI(dest_qpn)), 0xabcdef);
    CHECK_EQ(get32(QI(qkey)), 0);               /* never set on an RC QP */
    CHECK_EQ(get32(QI(access_flags)), 7);
    CHECK_EQ(get8(QI(retry_cnt)), 7);
    CHECK_EQ(get8(QI(rnr_retry)), 6);
    CHECK_EQ(get8(QI(min_rnr_timer)), 12);
    CHECK_EQ(get8(QI(max_rd_atomic)), 4);
    CHECK_EQ(get8(QI(max_dest_rd_atomic)), 5);
    CHECK_EQ(get8(QI(port_num)), 1);
    CHECK_EQ(get8(QI(sq_draining)), 0);
    CHECK(!memcmp(gpa(QI(av)), dgid, 16));
    CHECK_EQ(get8(QI(av) + 16), 0x02);
    CHECK_EQ(get8(QI(av) + 23), 64);
    CHECK_EQ(get8(QI(av) + 24), 0x10);
    CHECK_EQ(get32(QI(av) + 28), 0x12345);
    CHECK(all_zero(QI(reserved0), 7));
    CHECK(all_zero(QI(reserved1), 4 + 48));
    /* The context holds the same 128 bytes after the create info. */
    CHECK(!memcmp(gpa(ctx + 64), gpa(QUERY_BUF), 128));
    CHECK(get64(ctx) & QRDMA_QP_CTX_VALID);
    CHECK(all_zero(ctx + 192, 64));

    /* SQD, then back: EN_SQD_ASYNC is kept for the data path. */
    CHECK_RESULT(modify(2, A(STATE) | A(EN_SQD_ASYNC), QRDMA_QPS_SQD), QRDMA_CQP_OK, 0);
    CHECK(core.obj.qp[2].sqd_async);
    CHECK_RESULT(modify(2, A(STATE) | A(TIMEOUT), QRDMA_QPS_SQD), QRDMA_CQP_OK, 0);
    CHECK_RESULT(query_qp(2), QRDMA_CQP_OK, 0);
    CHECK_EQ(get8(QI(state)), QRDMA_QPS_SQD);
    CHECK_RESULT(modify(2, A(STATE), QRDMA_QPS_RTS), QRDMA_CQP_OK, 0);
    CHECK(!core.obj.qp[2].sqd_async);
    /* ERR keeps the attributes; RESET forgets them. */
    CHECK_RESULT(modify(2, A(STATE), QRDMA_QPS_ERR), QRDMA_CQP_OK, 0);
    CHECK_RESULT(query_qp(2), QRDMA_CQP_OK, 0);
    CHECK_EQ(get8(QI(state)), QRDMA_QPS_ERR);
    CHECK_EQ(get32(QI(dest_qpn)), 0xabcdef);
    CHECK_RESULT(modify(2, A(STATE), QRDMA_QPS_RESET), QRDMA_CQP_OK, 0);
    CHECK_RESULT(query_qp(2), QRDMA_CQP_OK, 0);
    CHECK_EQ(get32(QI(attr_mask)), A(STATE));
    CHECK(all_zero(QUERY_BUF + 4, 124));
    CHECK(!memcmp(gpa(ctx + 64), gpa(QUERY_BUF), 128));
    /* The create info is unchanged by all of it. */
    put_create_info(&s);
    CHECK(!memcmp(gpa(ctx + 8), gpa(INFO + 8), 56));

    /* A UD QP reports its Q_Key. */
    s = qp_spec(QRDMA_QP_TYPE_UD);
    CHECK_RESULT(create_qp_spec(3, &s), QRDMA_CQP_OK, 0);
    CHECK_RESULT(modify(3, A(STATE) | A(PKEY_INDEX) | A(PORT) | A(QKEY), QRDMA_QPS_INIT),
                 QRDMA_CQP_OK, 0);
    CHECK_RESULT(query_qp(3), QRDMA_CQP_OK, 0);
    CHECK_EQ(get32(QI(qkey)), 0x11111111);

    /* Refusals. */
    CHECK_REFUSED(query_qp(4), QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND,
                  "QUERY_QP: QP 4 does not exist");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_QUERY_QP, 2, QUERY_BUF + 16, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "QUERY_QP: QP 2: buffer");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_QUERY_QP, 2, RAM_END - 64, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "guest RAM");
    CHECK_REFUSED(query_qp(N_QP), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_COUNT, "beyond");
}

/*
 * The host memory behind one QP at its largest (issue 11): 4096 SQ WQEs of
 * 1 KB, which a guest may ask for at the default properties, each with
 * 960 bytes of inline room. The transport held a slot and an inline buffer
 * per ring entry, about 6 MB per QP; the data path now gives it at most
 * 128 WRs at a time. This fails if the allocation grows back.
 */
#define QP_HOST_BYTES_MAX (192u << 10)

static void test_qp_host_memory(void)
{
    struct qp_spec s = qp_spec(QRDMA_QP_TYPE_RC);
    size_t bytes;
    unsigned i;

    setup();
    qp_cqs();
    /* A 4 MB SQ: 1024 ring pages, every PBLE naming the same guest page. */
    for (i = 0; i < 1024; i++) {
        put64(hmc_obj_addr(QRDMA_HMC_PBLE, i), PAGES);
    }
    s.flags = QRDMA_QP_CREATE_SQ_VIRTMAP;
    s.sq_log2 = 12;
    s.sq_wqe = QRDMA_WQE_LOG2_MAX;
    s.sq_addr = 0;
    CHECK_RESULT(create_qp_spec(2, &s), QRDMA_CQP_OK, 0);
    CHECK(core.dp.qp && qrdma_be_sw_qp(core.dp.qp[2].be_qp));
    if (!core.dp.qp || !qrdma_be_sw_qp(core.dp.qp[2].be_qp)) {
        return;
    }
    bytes = qsw_qp_host_bytes(qrdma_be_sw_qp(core.dp.qp[2].be_qp));
    printf("# transport memory of a QP of 4096 SQ WQEs of 1 KB: %zu bytes; "
           "%u such QPs (max-qp default): %zu bytes\n", bytes, QRDMA_DEFAULT_MAX_QP,
           bytes * QRDMA_DEFAULT_MAX_QP);
    CHECK(bytes <= QP_HOST_BYTES_MAX);
    CHECK_RESULT(destroy_qp(2), QRDMA_CQP_OK, 0);
}

/*
 * A batch whose commands each cost thousands of guest lookups (issue 11):
 * 20 CREATE_QPs with a 4 MB VIRTMAP SQ (1024 PBLEs read and their pages
 * probed each), a CREATE_QP that fails, and a NOP, in one doorbell. The
 * CQP ran the whole ring in one run under the embedding's lock; now a run
 * stops starting commands after its budget and kicks itself, and the
 * batch completes over several runs, in order, with the right results.
 */
static void test_cqp_budget(void)
{
    struct qp_spec s = qp_spec(QRDMA_QP_TYPE_RC);
    uint64_t most = 0, scratch, status, retval;
    unsigned i, first, runs = 0, n = 20;

    setup();
    qp_cqs();
    for (i = 0; i < 1024; i++) {
        put64(hmc_obj_addr(QRDMA_HMC_PBLE, i), PAGES);
    }
    s.flags = QRDMA_QP_CREATE_SQ_VIRTMAP;
    s.sq_log2 = 12;
    s.sq_wqe = QRDMA_WQE_LOG2_MAX;
    s.sq_addr = 0;
    put_create_info(&s);
    first = drv.sq_next;
    for (i = 0; i < n; i++) {
        cqp_post(QRDMA_CQP_OP_CREATE_QP, (const uint64_t[6]){ 2 + i, INFO }, 100 + i,
                 drv.sq_valid);
    }
    cqp_post(QRDMA_CQP_OP_CREATE_QP, (const uint64_t[6]){ 2, INFO }, 100 + n, drv.sq_valid);
    cqp_post(QRDMA_CQP_OP_NOP, NULL, 101 + n, drv.sq_valid);
    wr(QRDMA_REG_CQP_DB, drv.sq_next);
    while (fake.kicks & QRDMA_WORK_CQP) {
        uint64_t before = core.stats.guest_lookups;

        fake.kicks = 0;
        qrdma_core_run(&core, QRDMA_WORK_CQP);
        if (core.stats.guest_lookups - before > most) {
            most = core.stats.guest_lookups - before;
        }
        if (++runs == 1) {
            CHECK(rd(QRDMA_REG_CQP_TAIL) != drv.sq_next);   /* not all in the first run */
        }
        CHECK(runs < 100);
        if (runs >= 100) {
            break;
        }
    }
    printf("# %u CQP commands of about 4,100 guest lookups each: %u runs, at most %" PRIu64
           " lookups in one\n", n + 2, runs, most);
    CHECK(runs > 1);
    CHECK(most < 2 * 4096 + 64);                /* the budget and one more command */
    CHECK_EQ(rd(QRDMA_REG_CQP_TAIL), drv.sq_next);
    for (i = 0; i < n + 2; i++) {
        CHECK(cqp_poll(&scratch, &status, &retval));
        CHECK_EQ(scratch, 100 + i);
        CHECK_EQ((status & QRDMA_CCQ_CQE_WQE_INDEX_MASK) >> QRDMA_CCQ_CQE_WQE_INDEX_SHIFT,
                 (first + i) % drv.sq_len);
        if (i == n) {
            CHECK_RESULT(status, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_EXISTS);
        } else {
            CHECK_RESULT(status, QRDMA_CQP_OK, 0);
        }
    }
    CHECK(!cqp_poll(&scratch, &status, &retval));
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_QP), n);
    for (i = 0; i < n; i++) {
        CHECK(core.obj.qp[2 + i].valid);
        CHECK_RESULT(destroy_qp(2 + i), QRDMA_CQP_OK, 0);
    }
}

static void test_qp_destroy(void)
{
    struct qp_spec s = qp_spec(QRDMA_QP_TYPE_RC);
    uint64_t ctx;

    setup();
    qp_cqs();
    CHECK_RESULT(create_qp_spec(2, &s), QRDMA_CQP_OK, 0);
    qp_in_state(3, K_RC, QRDMA_QPS_RTS);
    ctx = hmc_obj_addr(QRDMA_HMC_QP, 3);
    CHECK(!all_zero(ctx, 256));
    CHECK_EQ(core.obj.cq[1].refs, 2);
    /* DESTROY_CQ is BUSY while QPs use it, as send or as receive CQ. */
    CHECK_REFUSED(destroy_cq(1), QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_BUSY,
                  "DESTROY_CQ: CQ 1 is still used by QPs (2 references)");
    CHECK_REFUSED(destroy_cq(2), QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_BUSY, "still used");
    /* Any state: the context goes (all 256 bytes), the references too. */
    CHECK_RESULT(destroy_qp(3), QRDMA_CQP_OK, 0);
    CHECK(all_zero(ctx, 256));
    CHECK(qrdma_qp_get(&core, 3) == NULL);
    CHECK_EQ(core.obj.cq[1].refs, 1);
    CHECK_REFUSED(destroy_qp(3), QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND,
                  "DESTROY_QP: QP 3 does not exist");
    CHECK_REFUSED(destroy_qp(N_QP), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_COUNT, "beyond");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_DESTROY_QP, 2 | 1ull << 40, 0, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 0, "not a QP_ID");
    CHECK_RESULT(destroy_qp(2), QRDMA_CQP_OK, 0);
    CHECK_RESULT(destroy_cq(1), QRDMA_CQP_OK, 0);
    CHECK_RESULT(destroy_cq(2), QRDMA_CQP_OK, 0);
    CHECK(all_zero(hmc_obj_addr(QRDMA_HMC_CQ, 1), 64));
    CHECK_REFUSED(destroy_cq(1), QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND,
                  "DESTROY_CQ: CQ 1 does not exist");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_DESTROY_CQ, 1 | 1ull << 24, 0, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 0, "is not a CQ_ID");
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_QP), 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_CQ), 0);
    /* The IDs can be used again. */
    CHECK_RESULT(create_cq(1), QRDMA_CQP_OK, 0);
    CHECK_RESULT(create_cq(2), QRDMA_CQP_OK, 0);
    CHECK_RESULT(create_qp_spec(3, &s), QRDMA_CQP_OK, 0);
}

/* ---- SRQs ------------------------------------------------------------------------- */

static uint64_t srq_arg0(uint32_t id, unsigned log2, unsigned wqe)
{
    return id | (uint64_t)log2 << QRDMA_SRQ_ARG0_SIZE_SHIFT |
           (uint64_t)wqe << QRDMA_SRQ_ARG0_WQE_SHIFT;
}

static uint64_t srq_arg1(uint32_t pd, uint32_t limit)
{
    return pd | (uint64_t)limit << QRDMA_SRQ_ARG1_LIMIT_SHIFT;
}

static void test_srq(void)
{
    struct qrdma_core_config cfg;
    struct qrdma_srq *srq;
    uint64_t ctx;

    setup();
    CHECK_RESULT(cmd(QRDMA_CQP_OP_CREATE_SRQ, srq_arg0(3, 8, 7), srq_arg1(9, 16), RING,
                     SHADOW + 64, 0x1234, 0), QRDMA_CQP_OK, 0);
    CHECK_EQ(fake.guest_errors, 0);
    srq = qrdma_srq_get(&core, 3);
    CHECK(srq && srq->pd == 9 && srq->limit == 16 && srq->srq_ctx == 0x1234 &&
          srq->ring.size_log2 == 8 && srq->ring.stride_log2 == 7 && srq->ring.addr == RING &&
          srq->shadow == SHADOW + 64);
    ctx = hmc_obj_addr(QRDMA_HMC_SRQ, 3);
    CHECK_EQ(get64(ctx), srq_arg0(3, 8, 7) | QRDMA_SRQ_CTX_VALID);
    CHECK_EQ(get64(ctx + 8), srq_arg1(9, 16));
    CHECK_EQ(get64(ctx + 16), RING);
    CHECK_EQ(get64(ctx + 24), SHADOW + 64);
    CHECK_EQ(get64(ctx + 32), 0x1234);
    CHECK(all_zero(ctx + 40, 24));
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_SRQ), 1);
    /* QUERY_SRQ: LIMIT and the outstanding WQEs. */
    CHECK_RESULT(cmd(QRDMA_CQP_OP_QUERY_SRQ, 3, 0, 0, 0, 0, 0), QRDMA_CQP_OK, 0);
    CHECK_EQ(last_retval, 16);
    if (srq) {
        srq->outstanding = 5;
    }
    CHECK_RESULT(cmd(QRDMA_CQP_OP_QUERY_SRQ, 3, 0, 0, 0, 0, 0), QRDMA_CQP_OK, 0);
    CHECK_EQ(last_retval, 16 | 5ull << 32);
    /* MODIFY_SRQ re-arms the limit. */
    CHECK_RESULT(cmd(QRDMA_CQP_OP_MODIFY_SRQ, 3, srq_arg1(0, 255), 0, 0, 0, 0), QRDMA_CQP_OK, 0);
    CHECK_EQ(get64(ctx + 8), srq_arg1(9, 255));
    CHECK_RESULT(cmd(QRDMA_CQP_OP_QUERY_SRQ, 3, 0, 0, 0, 0, 0), QRDMA_CQP_OK, 0);
    CHECK_EQ(last_retval & 0xffffff, 255);
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_SRQ, 3, srq_arg1(0, 256), 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "MODIFY_SRQ: SRQ 3: LIMIT 256 is not below its "
                  "256 WQEs");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_SRQ, 3, srq_arg1(9, 1), 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "sets bits other than LIMIT");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_SRQ, 4, 0, 0, 0, 0, 0), QRDMA_CQP_ERR_STATE,
                  QRDMA_STATE_ERR_NOT_FOUND, "MODIFY_SRQ: SRQ 4 does not exist");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_SRQ, 3 | 1ull << 30, 0, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 0, "is not an SRQ_ID");
    CHECK_EQ(get64(ctx + 8), srq_arg1(9, 255));
    /* VIRTMAP. */
    pble_set(0, PAGES);
    pble_set(1, PAGES + 0x1000);
    CHECK_RESULT(cmd(QRDMA_CQP_OP_CREATE_SRQ, srq_arg0(4, 7, 6) | QRDMA_SRQ_ARG0_VIRTMAP,
                     srq_arg1(0, 0), 0, SHADOW, 0, 0), QRDMA_CQP_OK, 0);
    CHECK(qrdma_srq_get(&core, 4) && qrdma_srq_get(&core, 4)->ring.virtmap);

    /* CREATE_SRQ refusals. */
#define SRQ(a0, a1, a2, a3, a4) cmd(QRDMA_CQP_OP_CREATE_SRQ, a0, a1, a2, a3, a4, 0)
    CHECK_REFUSED(SRQ(srq_arg0(5, 8, 7) | 1ull << 24, 0, RING, SHADOW, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 0, "CREATE_SRQ: arg0");
    CHECK_REFUSED(SRQ(srq_arg0(5, 8, 7), 1ull << 24, RING, SHADOW, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "CREATE_SRQ: arg1");
    CHECK_REFUSED(SRQ(srq_arg0(N_SRQ, 8, 7), 0, RING, SHADOW, 0), QRDMA_CQP_ERR_HMC,
                  QRDMA_HMC_ERR_COUNT, "CREATE_SRQ: SRQ 16 is beyond the 16 committed");
    CHECK_REFUSED(SRQ(srq_arg0(3, 8, 7), 0, RING, SHADOW, 0), QRDMA_CQP_ERR_STATE,
                  QRDMA_STATE_ERR_EXISTS, "CREATE_SRQ: SRQ 3 exists");
    CHECK_REFUSED(SRQ(srq_arg0(5, 0, 7), 0, RING, SHADOW, 0), QRDMA_CQP_ERR_INVALID_ARG, 0,
                  "SIZE_LOG2 0 is outside 1..15");
    CHECK_REFUSED(SRQ(srq_arg0(5, 13, 5), 0, RING, SHADOW, 0), QRDMA_CQP_ERR_INVALID_ARG, 0,
                  "CAP_MAX_SRQ_WR 4096");
    CHECK_REFUSED(SRQ(srq_arg0(5, 8, 4), 0, RING, SHADOW, 0), QRDMA_CQP_ERR_INVALID_ARG, 0,
                  "WQE_LOG2 4 is outside 5..10");
    CHECK_REFUSED(SRQ(srq_arg0(5, 8, 11), 0, RING, SHADOW, 0), QRDMA_CQP_ERR_INVALID_ARG, 0,
                  "WQE_LOG2 11");
    CHECK_REFUSED(SRQ(srq_arg0(5, 8, 7), srq_arg1(QRDMA_DEFAULT_MAX_PD, 0), RING, SHADOW, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "PD 1024 is beyond CAP_MAX_PD 1024");
    CHECK_REFUSED(SRQ(srq_arg0(5, 8, 7), srq_arg1(0, 256), RING, SHADOW, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "LIMIT 256 is not below its 256 WQEs");
    CHECK_REFUSED(SRQ(srq_arg0(5, 8, 7), 0, RING, SHADOW + 32, 0), QRDMA_CQP_ERR_INVALID_ARG,
                  3, "shadow area");
    CHECK_REFUSED(SRQ(srq_arg0(5, 8, 7), 0, RING, NOT_RAM, 0), QRDMA_CQP_ERR_INVALID_ARG, 3,
                  "shadow area");
    CHECK_REFUSED(SRQ(srq_arg0(5, 8, 7), 0, RING, SHADOW, 1ull << 63),
                  QRDMA_CQP_ERR_INVALID_ARG, 4, "SRQ_CTX");
    CHECK_REFUSED(SRQ(srq_arg0(5, 8, 7), 0, RING + 4, SHADOW, 0), QRDMA_CQP_ERR_INVALID_ARG, 2,
                  "CREATE_SRQ: SRQ 5: ring at");
    CHECK_REFUSED(SRQ(srq_arg0(5, 8, 7) | QRDMA_SRQ_ARG0_VIRTMAP, 0, N_PBLE, SHADOW, 0),
                  QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_RANGE, "beyond the 4096 committed");
    CHECK(all_zero(hmc_obj_addr(QRDMA_HMC_SRQ, 5), 64));
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_SRQ), 2);
#undef SRQ
    /* QUERY_SRQ and DESTROY_SRQ of what is not there. */
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_QUERY_SRQ, 5, 0, 0, 0, 0, 0), QRDMA_CQP_ERR_STATE,
                  QRDMA_STATE_ERR_NOT_FOUND, "QUERY_SRQ: SRQ 5 does not exist");
    CHECK_RESULT(cmd(QRDMA_CQP_OP_DESTROY_SRQ, 3, 0, 0, 0, 0, 0), QRDMA_CQP_OK, 0);
    CHECK(all_zero(ctx, 64));
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_DESTROY_SRQ, 3, 0, 0, 0, 0, 0), QRDMA_CQP_ERR_STATE,
                  QRDMA_STATE_ERR_NOT_FOUND, "DESTROY_SRQ: SRQ 3 does not exist");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_DESTROY_SRQ, N_SRQ, 0, 0, 0, 0, 0), QRDMA_CQP_ERR_HMC,
                  QRDMA_HMC_ERR_COUNT, "beyond");
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_SRQ), 1);

    /* A device without SRQs commits none: every SRQ ID is beyond the layout. */
    qrdma_core_config_defaults(&cfg);
    cfg.max_srq = 0;
    setup_with(&cfg, false);
    {
        uint64_t c[QRDMA_HMC_NUM_TYPES] = { N_QP, N_CQ, 0, N_MR, N_AH, N_PBLE };

        CHECK_RESULT(cqp_commit(c, FPM_BUF, NULL), QRDMA_CQP_OK, 0);
        hmc_sd_write(0, direct_sd(HMC_RAM));
    }
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_SRQ, srq_arg0(0, 8, 7), 0, RING, SHADOW, 0, 0),
                  QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_COUNT, "SRQ 0 is beyond the 0 committed");
    CHECK(qrdma_srq_get(&core, 0) == NULL);
}

/* ---- AHs -------------------------------------------------------------------------- */

static void put_av(uint64_t at, uint8_t sgid_index, const uint8_t *dgid)
{
    memset(gpa(at), 0, 32);
    memcpy(gpa(at), dgid, 16);
    put8(at + 16, 0x02);
    put8(at + 21, 0x07);
    put8(at + 22, sgid_index);
    put8(at + 23, 0xff);
    put8(at + 24, 0xb8);
    put32(at + 28, 0xabcde);
}

static void test_ah(void)
{
    static const uint8_t v4[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 1, 9 };
    static const uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5 };
    const uint64_t arg0 = 6 | 12ull << QRDMA_AH_ARG0_PD_SHIFT;
    struct qrdma_ah *ah;
    uint64_t ctx;

    setup();
    put_av(AV_ADDR, 0, v4);
    CHECK_RESULT(cmd(QRDMA_CQP_OP_CREATE_AH, arg0, AV_ADDR, 0, 0, 0, 0), QRDMA_CQP_OK, 0);
    CHECK_EQ(fake.guest_errors, 0);
    ah = qrdma_ah_get(&core, 6);
    CHECK(ah && ah->pd == 12 && ah->av.sgid_index == 0 && ah->av.hop_limit == 0xff &&
          ah->av.traffic_class == 0xb8 && ah->av.flow_label == 0xabcde &&
          ah->av.dmac[0] == 2 && ah->av.dmac[5] == 7 && !memcmp(ah->av.dgid, v4, 16));
    ctx = hmc_obj_addr(QRDMA_HMC_AH, 6);
    CHECK_EQ(get64(ctx), arg0 | QRDMA_AH_CTX_VALID);
    CHECK(!memcmp(gpa(ctx + 8), gpa(AV_ADDR), 32));
    CHECK(all_zero(ctx + 40, 24));
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_AH), 1);
    /* MODIFY_AH: another AV (IPv6 through SGID 1), another PD. */
    put_av(AV_ADDR, 1, v6);
    CHECK_RESULT(cmd(QRDMA_CQP_OP_MODIFY_AH, 6 | 13ull << 32, AV_ADDR, 0, 0, 0, 0),
                 QRDMA_CQP_OK, 0);
    CHECK(ah && ah->pd == 13 && ah->av.sgid_index == 1 && !memcmp(ah->av.dgid, v6, 16));
    CHECK(!memcmp(gpa(ctx + 8), gpa(AV_ADDR), 32));
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_AH), 1);
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_AH, 7, AV_ADDR, 0, 0, 0, 0), QRDMA_CQP_ERR_STATE,
                  QRDMA_STATE_ERR_NOT_FOUND, "MODIFY_AH: AH 7 does not exist");

    /* Refusals: arguments, then the AV field by field (INFO, offset inside the AV). */
    put_av(AV_ADDR, 0, v4);
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_AH, 7 | 1ull << 60, AV_ADDR, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 0, "CREATE_AH: arg0");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_AH, 7 | (uint64_t)QRDMA_DEFAULT_MAX_PD << 32, AV_ADDR,
                      0, 0, 0, 0), QRDMA_CQP_ERR_INVALID_ARG, 0, "PD 1024");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_AH, N_AH, AV_ADDR, 0, 0, 0, 0), QRDMA_CQP_ERR_HMC,
                  QRDMA_HMC_ERR_COUNT, "CREATE_AH: AH 64 is beyond the 64 committed");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_AH, 6, AV_ADDR, 0, 0, 0, 0), QRDMA_CQP_ERR_STATE,
                  QRDMA_STATE_ERR_EXISTS, "CREATE_AH: AH 6 exists");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_AH, 7, AV_ADDR + 4, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "not 8-byte aligned guest RAM");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_AH, 7, RAM_END - 16, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "guest RAM");
    put_av(AV_ADDR, 2, v4);
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_AH, 7, AV_ADDR, 0, 0, 0, 0), QRDMA_CQP_ERR_INFO, 22,
                  "CREATE_AH: AH 7: address vector: SGID index 2 names no GID");
    put_av(AV_ADDR, QRDMA_DEFAULT_GID_TABLE_LEN, v4);
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_AH, 7, AV_ADDR, 0, 0, 0, 0), QRDMA_CQP_ERR_INFO, 22,
                  "SGID index 32");
    put_av(AV_ADDR, 0, v4);
    put32(AV_ADDR + 28, 0x100000);
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_AH, 7, AV_ADDR, 0, 0, 0, 0), QRDMA_CQP_ERR_INFO, 28,
                  "flow label 0x100000 is over 20 bits");
    put_av(AV_ADDR, 0, v4);
    put8(AV_ADDR + 27, 1);
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_AH, 7, AV_ADDR, 0, 0, 0, 0), QRDMA_CQP_ERR_INFO, 25,
                  "reserved bytes are not 0");
    put_av(AV_ADDR, 0, v6);
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_AH, 7, AV_ADDR, 0, 0, 0, 0), QRDMA_CQP_ERR_INFO, 0,
                  "DGID is IPv6 but SGID 0 is IPv4-mapped");
    /* A refused MODIFY_AH keeps the old AV. */
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_MODIFY_AH, 6, AV_ADDR, 0, 0, 0, 0), QRDMA_CQP_ERR_INFO, 0,
                  "MODIFY_AH: AH 6");
    CHECK(ah && ah->av.sgid_index == 1 && ah->pd == 13);
    CHECK(qrdma_ah_get(&core, 7) == NULL);
    CHECK(all_zero(hmc_obj_addr(QRDMA_HMC_AH, 7), 64));
    /* Any hop limit, the largest flow label. */
    put_av(AV_ADDR, 0, v4);
    put8(AV_ADDR + 23, 0);
    put32(AV_ADDR + 28, 0xfffff);
    CHECK_RESULT(cmd(QRDMA_CQP_OP_CREATE_AH, 7, AV_ADDR, 0, 0, 0, 0), QRDMA_CQP_OK, 0);
    /* DESTROY_AH. */
    CHECK_RESULT(cmd(QRDMA_CQP_OP_DESTROY_AH, 6, 0, 0, 0, 0, 0), QRDMA_CQP_OK, 0);
    CHECK(all_zero(ctx, 64));
    CHECK(qrdma_ah_get(&core, 6) == NULL);
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_DESTROY_AH, 6, 0, 0, 0, 0, 0), QRDMA_CQP_ERR_STATE,
                  QRDMA_STATE_ERR_NOT_FOUND, "DESTROY_AH: AH 6 does not exist");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_DESTROY_AH, 7 | 12ull << 32, 0, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 0, "is not an AH_ID");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_DESTROY_AH, N_AH, 0, 0, 0, 0, 0), QRDMA_CQP_ERR_HMC,
                  QRDMA_HMC_ERR_COUNT, "beyond");
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_AH), 1);
}

/* ---- the layout: before commit, not backed ---------------------------------------------- */

static void test_before_commit(void)
{
    struct qp_spec s = qp_spec(QRDMA_QP_TYPE_RC);

    setup_with(NULL, false);
    hmc_sd_write(0, direct_sd(HMC_RAM));
    CHECK_REFUSED(create_cq(1), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_NOT_COMMITTED,
                  "CREATE_CQ: CQ 1: no FPM layout is committed");
    CHECK_REFUSED(create_qp_spec(2, &s), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_NOT_COMMITTED,
                  "CREATE_QP: QP 2: no FPM layout");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_SRQ, srq_arg0(0, 8, 7), 0, RING, SHADOW, 0, 0),
                  QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_NOT_COMMITTED, "CREATE_SRQ");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_CREATE_AH, 0, AV_ADDR, 0, 0, 0, 0), QRDMA_CQP_ERR_HMC,
                  QRDMA_HMC_ERR_NOT_COMMITTED, "CREATE_AH");
    CHECK_REFUSED(destroy_cq(1), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_NOT_COMMITTED, "DESTROY_CQ");
    CHECK_REFUSED(modify_qp(2), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_NOT_COMMITTED, "MODIFY_QP");
    CHECK_REFUSED(query_qp(2), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_NOT_COMMITTED, "QUERY_QP");
    CHECK(qrdma_qp_get(&core, 2) == NULL);
    CHECK(qrdma_cq_get(&core, 1) == NULL);
    CHECK(qrdma_srq_get(&core, 0) == NULL);
    CHECK(qrdma_ah_get(&core, 0) == NULL);
    CHECK(core.obj.qp == NULL && core.obj.cq == NULL && core.obj.mr == NULL);
}

/* Contexts in pages the driver did not back: HMC errors, nothing created. */
static void test_hmc_not_backed(void)
{
    static const uint64_t big[QRDMA_HMC_NUM_TYPES] = { N_QP, 20000, N_SRQ, N_MR, N_AH, N_PBLE };
    struct qp_spec s = qp_spec(QRDMA_QP_TYPE_RC);
    struct qrdma_core_config cfg;
    uint32_t cq_out;

    /* No SD loaded at all. */
    setup_with(NULL, false);
    CHECK_RESULT(cqp_commit(counts, FPM_BUF, NULL), QRDMA_CQP_OK, 0);
    CHECK_REFUSED(create_cq(1), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_SD_INVALID,
                  "CREATE_CQ: CQ 1: its HMC context is not backed");
    CHECK(fake_logged("SD 0 is not valid"));
    CHECK(qrdma_cq_get(&core, 1) == NULL);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_CQ), 0);
    /* A paged SD whose page descriptors are not valid. */
    memset(gpa(PD_PAGE), 0, 4096);
    hmc_sd_write(0, PD_PAGE | (uint64_t)QRDMA_HMC_PDS_PER_SD << QRDMA_HMC_SD_BP_COUNT_SHIFT |
                    QRDMA_HMC_SD_VALID);
    CHECK_REFUSED(create_cq(1), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_PD_INVALID,
                  "its HMC context is not backed");
    /* Back the CQ page only: CQs work, QPs (page 0) do not. */
    put64(PD_PAGE + 8 * (core.hmc.base[QRDMA_HMC_CQ] / 4096), PAGES | QRDMA_HMC_PD_VALID);
    CHECK_RESULT(create_cq(1), QRDMA_CQP_OK, 0);
    CHECK_RESULT(create_cq(2), QRDMA_CQP_OK, 0);
    CHECK_REFUSED(create_qp_spec(2, &s), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_PD_INVALID,
                  "CREATE_QP: QP 2: its HMC context is not backed");
    CHECK_EQ(core.obj.cq[1].refs, 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_QP), 0);
    /* Destroy goes ahead when the context cannot be cleared (a guest error all the same). */
    hmc_sd_write(0, 0);
    fake_log_mark();
    CHECK_RESULT(destroy_cq(1), QRDMA_CQP_OK, 0);
    CHECK(fake_logged("DESTROY_CQ: CQ 1: its HMC context is not backed"));
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_CQ), 1);

    /* A direct SD whose 2 MB page is only half guest RAM: CQ 16128 is at FPM 1 MB. */
    qrdma_core_config_defaults(&cfg);
    cfg.max_cq = 20000;
    setup_with(&cfg, false);
    CHECK_RESULT(cqp_commit(big, FPM_BUF, NULL), QRDMA_CQP_OK, 0);
    hmc_sd_write(0, direct_sd(HMC_RAM));
    cq_out = (0x100000 - core.hmc.base[QRDMA_HMC_CQ]) / 64;
    CHECK_EQ(cq_out, 16128);
    CHECK_RESULT(create_cq(cq_out - 1), QRDMA_CQP_OK, 0);
    CHECK_REFUSED(create_cq(cq_out), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_NOT_RAM,
                  "CREATE_CQ: CQ 16128: its HMC context at 0x500000 is not guest RAM");
    CHECK(qrdma_cq_get(&core, cq_out) == NULL);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_CQ), 1);
}

/* ---- reset, teardown, scale ------------------------------------------------------------ */

static void test_reset_frees_everything(void)
{
    struct qp_spec s = qp_spec(QRDMA_QP_TYPE_RC);
    uint64_t c[QRDMA_HMC_NUM_TYPES] = { 10, 10, 10, 10, 10, 10 };

    setup();
    qp_cqs();
    CHECK_RESULT(create_qp_spec(2, &s), QRDMA_CQP_OK, 0);
    CHECK_RESULT(cmd(QRDMA_CQP_OP_CREATE_SRQ, srq_arg0(1, 4, 6), 0, RING, SHADOW, 0, 0),
                 QRDMA_CQP_OK, 0);
    put_av(AV_ADDR, 0, (const uint8_t[16]){ [10] = 0xff, [11] = 0xff, [15] = 1 });
    CHECK_RESULT(cmd(QRDMA_CQP_OP_CREATE_AH, 1, AV_ADDR, 0, 0, 0, 0), QRDMA_CQP_OK, 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_QP) + rd(QRDMA_REG_OBJ_COUNT_CQ) +
             rd(QRDMA_REG_OBJ_COUNT_SRQ) + rd(QRDMA_REG_OBJ_COUNT_AH), 5);

    wr(QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    CHECK(core.obj.qp == NULL && core.obj.cq == NULL && core.obj.srq == NULL &&
          core.obj.mr == NULL && core.obj.ah == NULL);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_QP), 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_CQ), 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_SRQ), 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_AH), 0);
    CHECK(qrdma_qp_get(&core, 2) == NULL);
    CHECK(qrdma_cq_get(&core, 1) == NULL);

    /* A new layout of another size: new arrays, all empty. */
    qrdma_core_pe_ready(&core);
    cqp_setup(6, 6);
    CHECK_RESULT(cqp_commit(c, FPM_BUF, NULL), QRDMA_CQP_OK, 0);
    hmc_sd_write(0, direct_sd(HMC_RAM));
    CHECK(core.obj.qp != NULL && core.obj.ah != NULL);
    CHECK(qrdma_cq_get(&core, 1) == NULL);
    CHECK_RESULT(create_cq(9), QRDMA_CQP_OK, 0);
    CHECK_RESULT(create_cq(10), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_COUNT);

    /* A refused commit allocates nothing. */
    wr(QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    qrdma_core_pe_ready(&core);
    cqp_setup(6, 6);
    CHECK_RESULT(cmd(QRDMA_CQP_OP_COMMIT_FPM_VAL, RAM_END, 0, 0, 0, 0, 0), QRDMA_CQP_ERR_HMC,
                 QRDMA_HMC_ERR_NOT_RAM);
    CHECK(core.obj.qp == NULL && !core.hmc.committed);

    /* Teardown frees the arrays, and a core can be set up again after it. */
    CHECK_RESULT(cqp_commit(c, FPM_BUF, NULL), QRDMA_CQP_OK, 0);
    qrdma_core_fini(&core);
    CHECK(core.obj.qp == NULL && core.obj.mr == NULL);
    qrdma_core_fini(&core);                     /* twice is harmless */
}

/* Big layouts cost little: a compact entry per object. */
static void test_scale(void)
{
    struct qrdma_core_config cfg;
    uint64_t c[QRDMA_HMC_NUM_TYPES] = { 4096, 8192, 1024, 100000, 16384, QRDMA_HMC_PBLE_MAX };

    CHECK(sizeof(struct qrdma_mr) <= 48);
    CHECK(sizeof(struct qrdma_cq) <= 64);
    CHECK(sizeof(struct qrdma_ah) <= 40);
    CHECK(sizeof(struct qrdma_qp) <= 160);
    qrdma_core_config_defaults(&cfg);
    cfg.max_qp = 4096;
    cfg.max_cq = 8192;
    cfg.max_srq = 1024;
    cfg.max_mr = 100000;
    cfg.max_ah = 16384;
    setup_with(&cfg, false);
    CHECK_RESULT(cqp_commit(c, FPM_BUF, NULL), QRDMA_CQP_OK, 0);
    CHECK(core.obj.mr != NULL && core.obj.qp != NULL);
    CHECK(qrdma_qp_get(&core, 4095) == NULL);
    CHECK_EQ(core.hmc.count[QRDMA_HMC_MR], 100000);
    wr(QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    CHECK(core.obj.mr == NULL);
}

/* ---- random commands: nothing crashes, the bookkeeping stays true ------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Any argument: sometimes one that gets past a check, often not. */
static uint64_t rnd_arg(void)
{
    switch (rnd() % 6) {
    case 0:
        return rnd() % 70;
    case 1:
        return RING + (rnd() % 16) * 0x1000;
    case 2:
        return rnd();
    case 3:
        return rnd() % 40;
    case 4:
        return 0;
    default:
        return 1ull << (rnd() % 64);
    }
}

/* A modify info along a legal transition of QP id, or (sometimes) not. */
static void rnd_modify_info(uint32_t id)
{
    const uint32_t unsupported = A(ALT_PATH) | A(PATH_MIG_STATE) | A(CAP);
    uint8_t cur = id < N_QP ? core.obj.qp[id].state : 0;
    int kind = id < N_QP && core.obj.qp[id].type ? core.obj.qp[id].type - QRDMA_QP_TYPE_RC : 0;
    const struct legal *l = &legal[rnd() % N_LEGAL];
    unsigned tries;

    if (id < N_QP && (core.obj.qp[id].flags & QRDMA_QP_CREATE_GSI)) {
        kind = K_GSI;
    }
    for (tries = 0; tries < 16 && (l->cur != cur || (l->uc_ud_only && kind == K_RC)); tries++) {
        l = &legal[rnd() % N_LEGAL];
    }
    put_modify_info(A(STATE) | l->req[kind] | (l->opt[kind] & ~unsupported & (uint32_t)rnd()),
                    l->next, cur);
}

/* A command of op that is mostly well formed. */
static void rnd_command(uint8_t op, uint64_t *a)
{
    uint32_t id = rnd() % 70;
    struct qp_spec qs;

    memset(a, 0, 6 * sizeof(*a));
    switch (op) {
    case QRDMA_CQP_OP_CREATE_QP:
        qs = qp_spec(QRDMA_QP_TYPE_RC + rnd() % 3);
        qs.send_cq = rnd() % 6;
        qs.recv_cq = rnd() % 6;
        qs.flags = rnd() % 16;
        qs.srq = rnd() % 3;
        qs.pd = rnd() % 2 ? 3 : 7;
        if (qs.flags & QRDMA_QP_CREATE_SRQ) {
            qs.rq_log2 = qs.rq_wqe = 0;
            qs.rq_addr = 0;
            qs.flags &= ~QRDMA_QP_CREATE_RQ_VIRTMAP;
        } else {
            qs.srq = 0;
        }
        if (qs.flags & QRDMA_QP_CREATE_SQ_VIRTMAP) {
            qs.sq_addr = rnd() % 40;
        }
        if (qs.flags & QRDMA_QP_CREATE_RQ_VIRTMAP) {
            qs.rq_addr = rnd() % 40;
        }
        if (id == QRDMA_QP_GSI && rnd() % 4) {
            qs.type = QRDMA_QP_TYPE_UD;
            qs.flags |= QRDMA_QP_CREATE_GSI;
        }
        put_create_info(&qs);
        a[0] = id;
        a[1] = INFO;
        break;
    case QRDMA_CQP_OP_MODIFY_QP:
        rnd_modify_info(id);
        a[0] = id;
        a[1] = INFO;
        break;
    case QRDMA_CQP_OP_QUERY_QP:
        a[0] = id;
        a[1] = QUERY_BUF;
        break;
    case QRDMA_CQP_OP_CREATE_CQ:
    case QRDMA_CQP_OP_MODIFY_CQ:
        a[0] = cq_arg0(id, 2 + rnd() % 8);
        a[2] = RING;
        if (rnd() & 1) {
            a[0] |= QRDMA_CQ_ARG0_VIRTMAP;
            a[2] = rnd() % 40;
        }
        a[1] = id;
        a[3] = SHADOW + 64 * (rnd() % 8);
        break;
    case QRDMA_CQP_OP_CREATE_SRQ:
        a[0] = srq_arg0(id % 20, 1 + rnd() % 8, 5 + rnd() % 4) |
               (rnd() & 1 ? QRDMA_SRQ_ARG0_VIRTMAP : 0);
        a[1] = srq_arg1(rnd() % 2 ? 3 : 7, rnd() % 3);
        a[2] = a[0] & QRDMA_SRQ_ARG0_VIRTMAP ? rnd() % 40 : RING;
        a[3] = SHADOW;
        a[4] = id;
        break;
    case QRDMA_CQP_OP_MODIFY_SRQ:
        a[0] = id % 20;
        a[1] = srq_arg1(0, rnd() % 4);
        break;
    case QRDMA_CQP_OP_CREATE_AH:
    case QRDMA_CQP_OP_MODIFY_AH:
        put_av(AV_ADDR, rnd() % 3, (const uint8_t[16]){ [10] = 0xff, [11] = 0xff });
        a[0] = id | (uint64_t)(rnd() % 8) << 32;
        a[1] = AV_ADDR;
        break;
    case QRDMA_CQP_OP_REG_MR:
        a[0] = id << 8 | (rnd() % 2);
        a[1] = (rnd() % 4) | (uint64_t)(rnd() % 16) << 32 | (rnd() % 3) << 40 |
               (rnd() % 2 ? 12ull : 21ull) << 48;
        if (rnd() % 8 == 0) {
            a[1] = (rnd() % 4) | QRDMA_MR_ARG1_DMA;
        }
        a[2] = rnd() % 0x10000;
        a[3] = 1 + rnd() % 0x8000;
        a[4] = (a[1] & QRDMA_MR_ARG1_LEVELS_MASK) ? rnd() % 40 : PAGES;
        break;
    case QRDMA_CQP_OP_ALLOC_STAG:
        a[0] = id << 8 | (rnd() % 2);
        a[1] = rnd() % 4;
        a[2] = 1 + rnd() % 16;
        a[4] = rnd() % 40;
        break;
    case QRDMA_CQP_OP_QUERY_STAG:
    case QRDMA_CQP_OP_DEALLOC_STAG:
        a[0] = id << 8 | (rnd() % 2);
        a[1] = QUERY_BUF;
        break;
    default:                            /* the destroys and QUERY_SRQ */
        a[0] = id;
        break;
    }
    /* One field broken in a quarter of them. */
    if (rnd() % 4 == 0) {
        unsigned which = rnd() % 6;

        a[which] = rnd() & 1 ? rnd_arg() : a[which] ^ 1ull << (rnd() % 64);
    }
    if (rnd() % 16 == 0) {
        put8(INFO + rnd() % 128, (uint8_t)rnd());
    }
}

/* A translation, mostly through an MR that exists (its key, PD and range), walked a little. */
static void rnd_translate(unsigned *translated, unsigned *walked)
{
    const uint32_t idx = rnd() % 70;            /* where rnd_command puts MRs */
    const struct qrdma_mr *mr = &core.obj.mr[idx];
    const bool aim = rnd() % 4 != 0;
    uint64_t off = mr->length ? rnd() % mr->length : 0, addr, len;
    uint32_t key = aim ? mr->key : rnd() % 2, pd = aim ? mr->pd : rnd() % 4;
    uint64_t iova = mr->type == QRDMA_MR_TYPE_DMA ? PAGES : mr->iova + off;
    uint64_t bytes = (rnd() % (mr->length - off + 1)) % 0x3000;
    unsigned access = rnd() % 4 ? 0 : rnd() % 16, pieces = 0;
    struct qrdma_mr_walk w;

    if (!aim) {
        iova = rnd_arg();
        bytes = rnd() % 0x3000;
    }
    if (qrdma_mr_translate(&core, idx << 8 | key, pd, iova, bytes, access, &w)) {
        return;
    }
    (*translated)++;
    while (w.left && pieces++ < 8 && !qrdma_mr_walk_next(&core, &w, &addr, &len)) {
        (*walked)++;
    }
}

static void test_random_commands(void)
{
    static const uint8_t ops[] = {
        QRDMA_CQP_OP_CREATE_QP, QRDMA_CQP_OP_MODIFY_QP, QRDMA_CQP_OP_DESTROY_QP,
        QRDMA_CQP_OP_QUERY_QP, QRDMA_CQP_OP_CREATE_CQ, QRDMA_CQP_OP_MODIFY_CQ,
        QRDMA_CQP_OP_DESTROY_CQ, QRDMA_CQP_OP_ALLOC_STAG, QRDMA_CQP_OP_REG_MR,
        QRDMA_CQP_OP_QUERY_STAG, QRDMA_CQP_OP_DEALLOC_STAG, QRDMA_CQP_OP_CREATE_AH,
        QRDMA_CQP_OP_MODIFY_AH, QRDMA_CQP_OP_DESTROY_AH, QRDMA_CQP_OP_CREATE_SRQ,
        QRDMA_CQP_OP_MODIFY_SRQ, QRDMA_CQP_OP_DESTROY_SRQ, QRDMA_CQP_OP_QUERY_SRQ,
    };
    unsigned n, t, i, ok = 0, translated = 0, walked = 0;

    setup();
    for (i = 0; i < 40; i++) {
        pble_set(i, rnd() % 4 ? PAGES + (rnd() % 64) * 0x1000 : rnd());
    }
    for (n = 0; n < 40000; n++) {
        /* A third are MODIFY_QP, so that QPs get beyond RESET between the destroys. */
        uint8_t op = rnd() % 3 ? ops[rnd() % sizeof(ops)] : QRDMA_CQP_OP_MODIFY_QP;
        uint64_t a[6];

        rnd_command(op, a);
        ok += !cqp_major(cmd(op, a[0], a[1], a[2], a[3], a[4], a[5]));
        if (n % 8 == 0) {
            rnd_translate(&translated, &walked);
        }
    }
    CHECK(ok > 5000);                   /* the commands got somewhere */
    CHECK(translated > 300);
    CHECK(walked > 200);

    /* Every counter matches the objects; every reference is a QP's. */
    for (t = QRDMA_HMC_QP; t <= QRDMA_HMC_AH; t++) {
        uint32_t valid = 0;

        for (i = 0; i < core.hmc.count[t]; i++) {
            switch (t) {
            case QRDMA_HMC_QP:
                valid += core.obj.qp[i].valid;
                CHECK(core.obj.qp[i].state <= QRDMA_QPS_ERR);
                break;
            case QRDMA_HMC_CQ:
                valid += core.obj.cq[i].valid;
                break;
            case QRDMA_HMC_SRQ:
                valid += core.obj.srq[i].valid;
                break;
            case QRDMA_HMC_MR:
                valid += core.obj.mr[i].state != QRDMA_MR_STATE_NONE;
                break;
            default:
                valid += core.obj.ah[i].valid;
                break;
            }
        }
        CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT(t)), valid);
    }
    for (i = 0; i < N_CQ; i++) {
        uint32_t refs = 0, q;

        for (q = 0; q < N_QP; q++) {
            const struct qrdma_qp *qp = &core.obj.qp[q];

            refs += qp->valid && qp->send_cq == i;
            refs += qp->valid && qp->recv_cq == i;
        }
        CHECK_EQ(core.obj.cq[i].refs, refs);
        CHECK(!refs || core.obj.cq[i].valid);
    }
    for (i = 0; i < N_SRQ; i++) {
        uint32_t refs = 0, q;

        for (q = 0; q < N_QP; q++) {
            const struct qrdma_qp *qp = &core.obj.qp[q];

            refs += qp->valid && (qp->flags & QRDMA_QP_CREATE_SRQ) && qp->srq == i;
        }
        CHECK_EQ(core.obj.srq[i].refs, refs);
        CHECK(!refs || core.obj.srq[i].valid);
    }
    /* Everything can be torn down, QPs first, to all counters 0. */
    for (i = 0; i < N_QP; i++) {
        if (core.obj.qp[i].valid) {
            CHECK_RESULT(destroy_qp(i), QRDMA_CQP_OK, 0);
        }
    }
    for (i = 0; i < N_CQ; i++) {
        if (core.obj.cq[i].valid) {
            CHECK_RESULT(destroy_cq(i), QRDMA_CQP_OK, 0);
        }
    }
    for (i = 0; i < N_SRQ; i++) {
        if (core.obj.srq[i].valid) {
            CHECK_RESULT(cmd(QRDMA_CQP_OP_DESTROY_SRQ, i, 0, 0, 0, 0, 0), QRDMA_CQP_OK, 0);
        }
    }
    for (i = 0; i < N_AH; i++) {
        if (core.obj.ah[i].valid) {
            CHECK_RESULT(cmd(QRDMA_CQP_OP_DESTROY_AH, i, 0, 0, 0, 0, 0), QRDMA_CQP_OK, 0);
        }
    }
    for (i = 0; i < N_MR; i++) {
        if (core.obj.mr[i].state != QRDMA_MR_STATE_NONE) {
            CHECK_RESULT(cmd(QRDMA_CQP_OP_DEALLOC_STAG, i << 8 | core.obj.mr[i].key, 0, 0, 0, 0,
                             0), QRDMA_CQP_OK, 0);
        }
    }
    for (t = QRDMA_HMC_QP; t <= QRDMA_HMC_AH; t++) {
        CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT(t)), 0);
    }
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_counters_registers),
    UNIT_TEST(test_cq_create),
    UNIT_TEST(test_cq_create_errors),
    UNIT_TEST(test_cq_virtmap),
    UNIT_TEST(test_virtmap_pble_not_backed),
    UNIT_TEST(test_cq_modify),
    UNIT_TEST(test_qp_create),
    UNIT_TEST(test_qp_create_srq),
    UNIT_TEST(test_qp_gsi),
    UNIT_TEST(test_qp_create_errors),
    UNIT_TEST(test_qp_host_memory),
    UNIT_TEST(test_cqp_budget),
    UNIT_TEST(test_qp_state_matrix),
    UNIT_TEST(test_qp_state_attrs),
    UNIT_TEST(test_qp_modify_mask),
    UNIT_TEST(test_qp_modify_values),
    UNIT_TEST(test_qp_query),
    UNIT_TEST(test_qp_destroy),
    UNIT_TEST(test_srq),
    UNIT_TEST(test_ah),
    UNIT_TEST(test_before_commit),
    UNIT_TEST(test_hmc_not_backed),
    UNIT_TEST(test_reset_frees_everything),
    UNIT_TEST(test_scale),
    UNIT_TEST(test_random_commands),
};

int main(void)
{
    return unit_run("core-obj", tests, sizeof(tests) / sizeof(tests[0]));
}
