/*
 * Unit tests of the device core's MRs and STags: REG_MR with LEVELS 0, 1
 * and 2, 4 KB, 2 MB and 1 GB pages and FBOs, DMA MRs, ALLOC_STAG,
 * DEALLOC_STAG and QUERY_STAG with every refusal, the MR context in HMC,
 * and the translation the data path uses (qrdma_mr_translate and its walk,
 * qrdma_mr_read/write): pieces across page and root boundaries, and every
 * error it reports.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "core/qrdma_core.h"
#include "fake_cqp.h"
#include "fake_env.h"
#include "unit.h"

int unit_failures;

/* Fake RAM is [1 MB, 5 MB); as in test_core_obj.c, HMC memory is a direct SD at 4 MB. */
#define FPM_BUF     (FAKE_RAM_BASE + 0x12000)
#define QUERY_BUF   (FAKE_RAM_BASE + 0x13400)
#define DATA        (FAKE_RAM_BASE + 0x80000)   /* 128 pages of 4 KB for page lists */
#define DATA_PAGES  128u
#define BIG_PAGE    0x200000ull                 /* the one 2 MB page inside fake RAM */
#define HMC_RAM     0x400000ull
#define NOT_RAM     0x10000000ull
#define RAM_END     (FAKE_RAM_BASE + FAKE_RAM_SIZE)

#define N_MR        256
#define N_PBLE      4096

static const uint64_t counts[QRDMA_HMC_NUM_TYPES] = { 8, 8, 8, N_MR, 8, N_PBLE };

#define LW QRDMA_ACCESS_LOCAL_WRITE
#define RW QRDMA_ACCESS_REMOTE_WRITE
#define RR QRDMA_ACCESS_REMOTE_READ
#define RA QRDMA_ACCESS_REMOTE_ATOMIC

static uint64_t cmd(uint8_t op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
                    uint64_t a4, uint64_t a5)
{
    uint64_t args[6] = { a0, a1, a2, a3, a4, a5 };

    return cqp_run1(op, args, NULL);
}

static uint64_t direct_sd(uint64_t page)
{
    return page | QRDMA_HMC_SD_TYPE_DIRECT | QRDMA_HMC_SD_VALID;
}

static void setup_with(const struct qrdma_core_config *cfg, bool commit)
{
    fake_setup_ready(cfg);
    cqp_setup(6, 6);
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

#define CHECK_REFUSED(status, maj, min, needle)                                    \
    do {                                                                           \
        int errs_ = fake.guest_errors;                                             \
        fake_log_mark();                                                           \
        CHECK_RESULT((status), (maj), (min));                                      \
        CHECK(fake.guest_errors >= errs_ + 2);                                     \
        CHECK(fake_logged(needle));                                                \
    } while (0)

static uint32_t stag(uint32_t index, uint8_t key)
{
    return index << QRDMA_STAG_INDEX_SHIFT | key;
}

static uint64_t arg1(uint32_t pd, unsigned access, unsigned levels, unsigned page_log2)
{
    return pd | (uint64_t)access << QRDMA_MR_ARG1_ACCESS_SHIFT |
           (uint64_t)levels << QRDMA_MR_ARG1_LEVELS_SHIFT |
           (uint64_t)page_log2 << QRDMA_MR_ARG1_PAGE_SHIFT;
}

static uint64_t reg_mr(uint64_t st, uint64_t a1, uint64_t iova, uint64_t len, uint64_t first,
                       uint64_t fbo)
{
    return cmd(QRDMA_CQP_OP_REG_MR, st, a1, iova, len, first, fbo);
}

static uint64_t dealloc(uint32_t st)
{
    return cmd(QRDMA_CQP_OP_DEALLOC_STAG, st, 0, 0, 0, 0, 0);
}

static void pble_set(uint32_t index, uint64_t value)
{
    put64(hmc_obj_addr(QRDMA_HMC_PBLE, index), value);
}

static uint64_t mr_ctx(uint32_t index)
{
    return hmc_obj_addr(QRDMA_HMC_MR, index);
}

static bool all_zero(uint64_t addr, size_t len)
{
    const uint8_t *p = gpa(addr);
    size_t i;

    for (i = 0; i < len; i++) {
        if (p[i]) {
            return false;
        }
    }
    return true;
}

/*
 * Walk an access that must translate into n pieces; unless want is NULL they
 * must be want[i] = { address, length }.
 */
static void expect_pieces(uint32_t st, uint32_t pd, uint64_t iova, uint64_t len,
                          unsigned access, const uint64_t (*want)[2], unsigned n)
{
    struct qrdma_mr_walk w;
    uint64_t addr, plen, total = 0;
    unsigned i = 0;
    int err;

    CHECK_EQ(qrdma_mr_translate(&core, st, pd, iova, len, access, &w), 0);
    while (w.left && i < 64) {
        err = qrdma_mr_walk_next(&core, &w, &addr, &plen);
        CHECK_EQ(err, 0);
        if (err) {
            return;
        }
        if (want && i < n) {
            CHECK_EQ(addr, want[i][0]);
            CHECK_EQ(plen, want[i][1]);
        }
        total += plen;
        i++;
    }
    CHECK_EQ(i, n);
    CHECK_EQ(total, len);
    /* A finished walk yields nothing more. */
    CHECK_EQ(qrdma_mr_walk_next(&core, &w, &addr, &plen), 0);
    CHECK_EQ(plen, 0);
}

/* Translation (or the walk) must fail with err and say so. */
static void expect_fail(uint32_t st, uint32_t pd, uint64_t iova, uint64_t len, unsigned access,
                        int err, const char *needle)
{
    struct qrdma_mr_walk w;
    uint64_t addr, plen;
    int got;

    fake_log_mark();
    got = qrdma_mr_translate(&core, st, pd, iova, len, access, &w);
    while (!got && w.left) {
        got = qrdma_mr_walk_next(&core, &w, &addr, &plen);
    }
    CHECK_EQ(got, err);
    CHECK(fake_logged(needle));
}

/* ---- registration -------------------------------------------------------------------- */

static void test_caps(void)
{
    setup();
    CHECK(rd(QRDMA_REG_CAP_PAGE_SIZES) & QRDMA_PAGE_SIZE_4K);
    CHECK(rd(QRDMA_REG_CAP_PAGE_SIZES) & QRDMA_PAGE_SIZE_2M);
    CHECK_EQ(rd(QRDMA_REG_CAP_PAGE_SIZES), QRDMA_CORE_PAGE_SIZES);
    CHECK_EQ((uint64_t)rd(QRDMA_REG_CAP_MAX_MR_SIZE_HI) << 32 | rd(QRDMA_REG_CAP_MAX_MR_SIZE_LO),
             QRDMA_CORE_MAX_MR_SIZE);
}

static void test_level0(void)
{
    const uint32_t st = stag(5, 0x42);
    const uint64_t iova = 0x700000001234ull;
    static const uint64_t pieces[][2] = {
        { DATA + 0x234, 0xdcc }, { DATA + 0x1000, 0x1000 }, { DATA + 0x2000, 0x1000 },
        { DATA + 0x3000, 0x234 },
    };
    const struct qrdma_mr *mr;
    uint64_t ctx;

    setup();
    CHECK_RESULT(reg_mr(st, arg1(3, LW | RR, 0, 12), iova, 0x3000, DATA + 0x234, 0x234),
                 QRDMA_CQP_OK, 0);
    CHECK_EQ(fake.guest_errors, 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_MR), 1);
    mr = &core.obj.mr[5];
    CHECK(mr->state == QRDMA_MR_STATE_VALID && mr->key == 0x42 && mr->pd == 3 &&
          mr->type == QRDMA_MR_TYPE_MEM && mr->levels == 0 && mr->page_log2 == 12 &&
          mr->iova == iova && mr->length == 0x3000 && mr->first == DATA + 0x234 &&
          mr->fbo == 0x234);
    /* The context, as the header lays it out. */
    ctx = mr_ctx(5);
    CHECK_EQ(ctx, HMC_RAM + core.hmc.base[QRDMA_HMC_MR] + 5 * 64);
    CHECK_EQ(get64(ctx), QRDMA_MR_STATE_VALID | 0x42ull << QRDMA_MR_CTX_KEY_SHIFT |
             (uint64_t)QRDMA_MR_TYPE_MEM << QRDMA_MR_CTX_TYPE_SHIFT |
             3ull << QRDMA_MR_CTX_PD_SHIFT);
    CHECK_EQ(get64(ctx + 8), (LW | RR) | 0ull << QRDMA_MR_CTX1_LEVELS_SHIFT |
             12ull << QRDMA_MR_CTX1_PAGE_SHIFT);
    CHECK_EQ(get64(ctx + 16), iova);
    CHECK_EQ(get64(ctx + 24), 0x3000);
    CHECK_EQ(get64(ctx + 32), DATA + 0x234);
    CHECK_EQ(get64(ctx + 40), 0x234);
    CHECK_EQ(get64(ctx + 48), 0);
    CHECK_EQ(get64(ctx + 56), 0);
    /* QUERY_STAG returns the same 64 bytes. */
    memset(gpa(QUERY_BUF), 0xee, 64);
    CHECK_RESULT(cmd(QRDMA_CQP_OP_QUERY_STAG, st, QUERY_BUF, 0, 0, 0, 0), QRDMA_CQP_OK, 0);
    CHECK(!memcmp(gpa(QUERY_BUF), gpa(ctx), 64));

    /* The whole MR: four pieces, split at the 4 KB pages. */
    expect_pieces(st, 3, iova, 0x3000, 0, pieces, 4);
    expect_pieces(st, 3, iova, 0x3000, LW, pieces, 4);
    expect_pieces(st, 3, iova + 0x2ffe, 2, RR, (const uint64_t[][2]){ { DATA + 0x3232, 2 } }, 1);
    expect_pieces(st, 3, iova + 0xdcb, 2, 0,
                  (const uint64_t[][2]){ { DATA + 0xfff, 1 }, { DATA + 0x1000, 1 } }, 2);
    /* Zero bytes anywhere in it, even at its end: nothing to walk. */
    expect_pieces(st, 3, iova + 0x3000, 0, 0, NULL, 0);

    /* LEVELS 0 refusals: the address must sit FBO into a page, and be guest RAM. */
    CHECK_REFUSED(reg_mr(stag(6, 0), arg1(3, 0, 0, 12), 0, 0x3000, DATA + 0x234, 0x100),
                  QRDMA_CQP_ERR_INVALID_ARG, 4,
                  "REG_MR: STag 0x00000600: address 0x180234 is not FBO 0x100 into a page");
    CHECK_REFUSED(reg_mr(stag(6, 0), arg1(3, 0, 0, 12), 0, 0x3000, NOT_RAM + 0x10, 0x10),
                  QRDMA_CQP_ERR_INVALID_ARG, 4, "0x10000010..+0x3000 is not guest RAM");
    CHECK_REFUSED(reg_mr(stag(6, 0), arg1(3, 0, 0, 12), 0, 0x2000, RAM_END - 0x1000, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 4, "is not guest RAM");
    CHECK_REFUSED(reg_mr(stag(6, 0), arg1(3, 0, 0, 12), 0, 0x2000, UINT64_MAX - 0xfff, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 4, "is not guest RAM");
    CHECK_EQ(core.obj.mr[6].state, QRDMA_MR_STATE_NONE);
    CHECK(all_zero(mr_ctx(6), 64));
}

/* A one-level list of 4 KB pages in reverse order; data written and read through it. */
static void test_level1_4k(void)
{
    const uint32_t st = stag(7, 0x99);
    const uint64_t iova = 0x10000, len = 8 * 4096 - 0x300 - 0x100;
    uint8_t *buf = malloc(len), *back = malloc(len);
    uint64_t i;

    setup();
    /* Page k of the MR is DATA page 7 - k. */
    for (i = 0; i < 8; i++) {
        pble_set(40 + i, DATA + (7 - i) * 4096);
    }
    CHECK_RESULT(reg_mr(st, arg1(1, LW | RW | RR, 1, 12), iova, len, 40, 0x300), QRDMA_CQP_OK, 0);
    CHECK_EQ(fake.guest_errors, 0);
    CHECK_EQ(get64(mr_ctx(7) + 8), (LW | RW | RR) | 1ull << QRDMA_MR_CTX1_LEVELS_SHIFT |
             12ull << QRDMA_MR_CTX1_PAGE_SHIFT);
    /* Across the boundary of pages 0 and 1 (FBO 0x300: page 0 holds 0xd00 bytes). */
    expect_pieces(st, 1, iova + 0xcf0, 0x20, LW,
                  (const uint64_t[][2]){ { DATA + 7 * 4096 + 0xff0, 0x10 },
                                         { DATA + 6 * 4096, 0x10 } }, 2);
    /* Three pages touched by one access in the middle. */
    expect_pieces(st, 1, iova + 0xd00 + 0xfff, 0x1002, RW,
                  (const uint64_t[][2]){ { DATA + 6 * 4096 + 0xfff, 1 },
                                         { DATA + 5 * 4096, 0x1000 },
                                         { DATA + 4 * 4096, 1 } }, 3);
    /* The last byte. */
    expect_pieces(st, 1, iova + len - 1, 1, RR,
                  (const uint64_t[][2]){ { DATA + 0 * 4096 + 0xeff, 1 } }, 1);

    /* Write a pattern through the MR; each page holds its part; read it back. */
    for (i = 0; i < len; i++) {
        buf[i] = (uint8_t)(i * 7 + 3);
    }
    memset(gpa(DATA), 0, 8 * 4096);
    CHECK_EQ(qrdma_mr_write(&core, st, 1, iova, buf, len, LW), 0);
    CHECK(!memcmp(gpa(DATA + 7 * 4096 + 0x300), buf, 0xd00));
    CHECK(!memcmp(gpa(DATA + 6 * 4096), buf + 0xd00, 0x1000));
    CHECK(!memcmp(gpa(DATA + 0 * 4096), buf + 0xd00 + 6 * 0x1000, 0xf00));
    CHECK(all_zero(DATA + 7 * 4096, 0x300));     /* before the FBO */
    CHECK(all_zero(DATA + 0xf00, 0x100));        /* after the end */
    memset(back, 0, len);
    CHECK_EQ(qrdma_mr_read(&core, st, 1, iova, back, len, 0), 0);
    CHECK(!memcmp(back, buf, len));
    /* A read with a right the MR does not grant fails before copying anything. */
    memset(back, 0, len);
    fake_log_mark();
    CHECK_EQ(qrdma_mr_read(&core, st, 1, iova, back, 16, RA), QRDMA_MR_ERR_ACCESS);
    CHECK(all_zero(DATA + 0, 0) && back[0] == 0);
    /* A PBLE moved outside RAM: the copy stops there with NOT_RAM. */
    pble_set(41, NOT_RAM);
    CHECK_EQ(qrdma_mr_write(&core, st, 1, iova, buf, len, LW), QRDMA_MR_ERR_NOT_RAM);
    free(buf);
    free(back);
}

/* 2 MB pages: both PBLEs name the one 2 MB page of fake RAM. */
static void test_level1_2m_1g(void)
{
    const uint32_t st = stag(8, 1);
    const uint64_t two_mb = 2ull << 20, iova = 0x40000000ull;

    setup();
    pble_set(0, BIG_PAGE);
    pble_set(1, BIG_PAGE);
    CHECK_RESULT(reg_mr(st, arg1(2, LW, 1, 21), iova, 3ull << 20, 0, 0x1000), QRDMA_CQP_OK, 0);
    /* Across the 2 MB boundary (page 0 holds 2 MB - 4 KB from the FBO). */
    expect_pieces(st, 2, iova + two_mb - 0x1000 - 16, 32, 0,
                  (const uint64_t[][2]){ { BIG_PAGE + two_mb - 16, 16 }, { BIG_PAGE, 16 } }, 2);
    /* A long run inside one page is one piece. */
    expect_pieces(st, 2, iova, two_mb - 0x1000, LW,
                  (const uint64_t[][2]){ { BIG_PAGE + 0x1000, two_mb - 0x1000 } }, 1);
    /* FBO must be inside the 2 MB page; a PBLE must be 2 MB aligned at use. */
    CHECK_REFUSED(reg_mr(stag(9, 0), arg1(2, 0, 1, 21), iova, 0x1000, 0, two_mb),
                  QRDMA_CQP_ERR_INVALID_ARG, 5, "FBO 0x200000 is not inside a page of 2^21 bytes");
    pble_set(1, BIG_PAGE + 0x1000);
    expect_fail(st, 2, iova + two_mb, 16, 0, QRDMA_MR_ERR_ALIGN,
                "STag 0x00000801: page 1 at 0x201000 is not aligned to its 0x200000 bytes");

    /* 1 GB pages are in CAP_PAGE_SIZES: registration takes them. No 1 GB page is RAM here. */
    pble_set(2, 0x40000000ull);
    CHECK_RESULT(reg_mr(stag(9, 0), arg1(2, 0, 1, 30), 0, 0x1000, 2, 0x3fffffff - 0xfff),
                 QRDMA_CQP_OK, 0);
    expect_fail(stag(9, 0), 2, 0, 0x1000, 0, QRDMA_MR_ERR_NOT_RAM, "are not guest RAM");
    pble_set(2, 0x1000);
    expect_fail(stag(9, 0), 2, 0, 0x1000, 0, QRDMA_MR_ERR_ALIGN, "is not aligned");
    /* 8 KB pages are not. */
    CHECK_REFUSED(reg_mr(stag(10, 0), arg1(2, 0, 1, 13), 0, 0x1000, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "pages of 2^13 bytes are not in CAP_PAGE_SIZES");
}

/* Two levels: roots naming leaf runs of 512; across the root boundary. */
static void test_level2(void)
{
    const uint32_t st = stag(11, 0x5a);
    const uint64_t iova = 0x9000000000ull, pages = 600;
    uint64_t i;

    setup();
    pble_set(100, 1000);            /* root 0: leaves 1000..1511 */
    pble_set(101, 2000);            /* root 1: leaves 2000..2087 */
    for (i = 0; i < pages; i++) {
        pble_set(i < 512 ? 1000 + i : 2000 + i - 512, DATA + (i % DATA_PAGES) * 4096);
    }
    CHECK_RESULT(reg_mr(st, arg1(4, LW, 2, 12), iova, pages * 4096, 100, 0), QRDMA_CQP_OK, 0);
    CHECK_EQ(fake.guest_errors, 0);
    CHECK_EQ(get64(mr_ctx(11) + 8), LW | 2ull << QRDMA_MR_CTX1_LEVELS_SHIFT |
             12ull << QRDMA_MR_CTX1_PAGE_SHIFT);
    /* Page 511 is the last leaf of root 0, page 512 the first of root 1. */
    expect_pieces(st, 4, iova + 512 * 4096 - 8, 16, 0,
                  (const uint64_t[][2]){ { DATA + (511 % DATA_PAGES) * 4096 + 0xff8, 8 },
                                         { DATA + (512 % DATA_PAGES) * 4096, 8 } }, 2);
    expect_pieces(st, 4, iova + 599 * 4096 + 0xfff, 1, LW,
                  (const uint64_t[][2]){ { DATA + (599 % DATA_PAGES) * 4096 + 0xfff, 1 } }, 1);
    /* The roots are read at every use: a root rewritten to run off the layout is refused. */
    pble_set(101, N_PBLE);
    expect_fail(st, 4, iova + 512 * 4096, 8, 0, QRDMA_MR_ERR_PBLE,
                "root PBLE 101 names PBLE 4096, beyond the 4096 committed");
    pble_set(101, N_PBLE - 10);     /* leaf 512 + 88 is beyond, leaf 512 + 5 is not */
    expect_fail(st, 4, iova + (512 + 20) * 4096, 8, 0, QRDMA_MR_ERR_PBLE,
                "PBLE 4106 is beyond the 4096 committed");

    /* Two levels of 2 MB pages, one root. */
    pble_set(200, 300);
    pble_set(300, BIG_PAGE);
    pble_set(301, BIG_PAGE);
    CHECK_RESULT(reg_mr(stag(12, 0), arg1(4, 0, 2, 21), 0, 4ull << 20, 200, 0), QRDMA_CQP_OK, 0);
    expect_pieces(stag(12, 0), 4, (2ull << 20) - 4, 8, 0,
                  (const uint64_t[][2]){ { BIG_PAGE + (2ull << 20) - 4, 4 }, { BIG_PAGE, 4 } },
                  2);

    /* Registration refusals: roots beyond the layout, a root whose run is beyond it. */
    CHECK_REFUSED(reg_mr(stag(13, 0), arg1(4, 0, 2, 12), 0, pages * 4096, N_PBLE - 1, 0),
                  QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_RANGE,
                  "REG_MR: STag 0x00000d00: PBLEs 4095..4096 are beyond the 4096 committed");
    pble_set(101, N_PBLE - 87);     /* 88 leaves from 4009: the last is 4096 */
    CHECK_REFUSED(reg_mr(stag(13, 0), arg1(4, 0, 2, 12), 0, pages * 4096, 100, 0),
                  QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_RANGE, "PBLEs 4009..4096 are beyond");
    pble_set(101, UINT64_MAX);
    CHECK_REFUSED(reg_mr(stag(13, 0), arg1(4, 0, 2, 12), 0, pages * 4096, 100, 0),
                  QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_RANGE, "beyond the 4096 committed");
    CHECK_REFUSED(reg_mr(stag(13, 0), arg1(4, 0, 2, 12), 0, (N_PBLE + 1) * 4096ull, 100, 0),
                  QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_RANGE,
                  "4097 pages need more leaves than the 4096 PBLEs committed");
    CHECK_REFUSED(reg_mr(stag(13, 0), arg1(4, 0, 2, 12), 0, QRDMA_CORE_MAX_MR_SIZE, 100, 0),
                  QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_RANGE, "pages need more leaves");
    pble_set(101, N_PBLE - 88);     /* exactly fits */
    CHECK_RESULT(reg_mr(stag(13, 0), arg1(4, 0, 2, 12), 0, pages * 4096, 100, 0), QRDMA_CQP_OK,
                 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_MR), 3);
}

/* Roots and leaves whose HMC pages are not backed. */
static void test_pble_not_backed(void)
{
    static const uint64_t big[QRDMA_HMC_NUM_TYPES] = { 8, 8, 8, N_MR, 8, 0x60000 };
    uint32_t sd1;

    setup_with(NULL, false);
    CHECK_RESULT(cqp_commit(big, FPM_BUF, NULL), QRDMA_CQP_OK, 0);
    hmc_sd_write(0, direct_sd(HMC_RAM));
    sd1 = (QRDMA_HMC_SD_SIZE - core.hmc.base[QRDMA_HMC_PBLE]) / 8;     /* first PBLE in SD 1 */
    /* One level: a list running into SD 1. */
    CHECK_REFUSED(reg_mr(stag(1, 0), arg1(0, 0, 1, 12), 0, 8 * 4096, sd1 - 4, 0),
                  QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_HMC,
                  "REG_MR: STag 0x00000100: PBLE");
    CHECK(fake_logged("its HMC page is not backed"));
    /* Two levels: a root in SD 1; a root naming leaves in SD 1. */
    CHECK_REFUSED(reg_mr(stag(1, 0), arg1(0, 0, 2, 12), 0, 8 * 4096, sd1, 0),
                  QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_HMC, "its HMC page is not backed");
    pble_set(10, sd1);
    CHECK_REFUSED(reg_mr(stag(1, 0), arg1(0, 0, 2, 12), 0, 8 * 4096, 10, 0),
                  QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_HMC, "its HMC page is not backed");
    /* A list that fits SD 0, then SD 0 taken away: the walk reports PBLE. */
    pble_set(20, DATA);
    CHECK_RESULT(reg_mr(stag(2, 0), arg1(0, 0, 1, 12), 0, 4096, 20, 0), QRDMA_CQP_OK, 0);
    expect_pieces(stag(2, 0), 0, 0, 4096, 0, (const uint64_t[][2]){ { DATA, 4096 } }, 1);
    hmc_sd_write(0, 0);
    expect_fail(stag(2, 0), 0, 0, 4096, 0, QRDMA_MR_ERR_PBLE,
                "STag 0x00000200: PBLE 20: its HMC page is not backed");
    /* ALLOC_STAG checks its reserved range the same way. */
    hmc_sd_write(0, direct_sd(HMC_RAM));
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_ALLOC_STAG, stag(3, 0), 0, 16, 0, sd1 - 8, 0),
                  QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_HMC, "ALLOC_STAG: STag 0x00000300: PBLE");
    /* And the MR context itself, when its page is not backed. */
    hmc_sd_write(0, 0);
    CHECK_REFUSED(reg_mr(stag(4, 0), QRDMA_MR_ARG1_DMA, 0, 0, 0, 0), QRDMA_CQP_ERR_HMC,
                  QRDMA_HMC_ERR_SD_INVALID, "REG_MR: MR 4: its HMC context is not backed");
    CHECK_EQ(core.obj.mr[4].state, QRDMA_MR_STATE_NONE);
}

static void test_dma_mr(void)
{
    const uint32_t st = stag(0, 0x77);

    setup();
    CHECK_RESULT(reg_mr(st, arg1(9, LW, 0, 0) | QRDMA_MR_ARG1_DMA, 0, 0, 0, 0), QRDMA_CQP_OK, 0);
    CHECK_EQ(core.obj.mr[0].type, QRDMA_MR_TYPE_DMA);
    CHECK_EQ(get64(mr_ctx(0)), QRDMA_MR_STATE_VALID | 0x77ull << QRDMA_MR_CTX_KEY_SHIFT |
             (uint64_t)QRDMA_MR_TYPE_DMA << QRDMA_MR_CTX_TYPE_SHIFT |
             9ull << QRDMA_MR_CTX_PD_SHIFT);
    CHECK_EQ(get64(mr_ctx(0) + 8), LW | QRDMA_MR_CTX1_DMA);
    /* iova is the guest-physical address; pieces end at 4 KB boundaries. */
    expect_pieces(st, 9, DATA + 0xff0, 0x1020, LW,
                  (const uint64_t[][2]){ { DATA + 0xff0, 0x10 }, { DATA + 0x1000, 0x1000 },
                                         { DATA + 0x2000, 0x10 } }, 3);
    expect_fail(st, 9, NOT_RAM, 8, 0, QRDMA_MR_ERR_NOT_RAM,
                "STag 0x00000077: 0x8 bytes at 0x10000000 are not guest RAM");
    expect_fail(st, 9, RAM_END - 8, 16, 0, QRDMA_MR_ERR_NOT_RAM, "are not guest RAM");
    /* Local access only. */
    expect_fail(st, 9, DATA, 8, RR, QRDMA_MR_ERR_ACCESS, "the access needs rights 0x4");
    expect_fail(st, 9, DATA, 8, RW, QRDMA_MR_ERR_ACCESS, "MR 0 grants 0x1");
    expect_fail(st, 9, UINT64_MAX - 3, 8, 0, QRDMA_MR_ERR_BOUNDS, "wrap");
    CHECK_REFUSED(reg_mr(stag(1, 0), arg1(9, LW | RR, 0, 0) | QRDMA_MR_ARG1_DMA, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "a DMA MR takes local access only");
    CHECK_REFUSED(reg_mr(stag(1, 0), arg1(9, QRDMA_ACCESS_MW_BIND, 0, 0) | QRDMA_MR_ARG1_DMA,
                         0, 0, 0, 0), QRDMA_CQP_ERR_INVALID_ARG, 1, "local access only");
    CHECK_REFUSED(reg_mr(stag(1, 0), arg1(9, LW, 1, 0) | QRDMA_MR_ARG1_DMA, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "a DMA MR has no LEVELS or PAGE_SIZE_LOG2");
    CHECK_REFUSED(reg_mr(stag(1, 0), arg1(9, LW, 0, 12) | QRDMA_MR_ARG1_DMA, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "no LEVELS");
}

static void test_reg_mr_errors(void)
{
    const uint64_t ok1 = arg1(0, LW, 1, 12);
    struct qrdma_core_config cfg;

    setup();
    pble_set(0, DATA);
    /* The STag: 32 bits, an index of the layout, free. */
    CHECK_REFUSED(reg_mr(1ull << 32 | stag(1, 0), ok1, 0, 4096, 0, 0), QRDMA_CQP_ERR_INVALID_ARG,
                  0, "REG_MR: arg0 0x100000100 is not a 32-bit STag");
    CHECK_REFUSED(reg_mr(stag(N_MR, 0), ok1, 0, 4096, 0, 0), QRDMA_CQP_ERR_HMC,
                  QRDMA_HMC_ERR_COUNT, "REG_MR: MR 256 is beyond the 256 committed");
    CHECK_REFUSED(reg_mr(0xffffffffu, ok1, 0, 4096, 0, 0), QRDMA_CQP_ERR_HMC,
                  QRDMA_HMC_ERR_COUNT, "MR 16777215 is beyond");
    CHECK_RESULT(reg_mr(stag(1, 0), ok1, 0, 4096, 0, 0), QRDMA_CQP_OK, 0);
    CHECK_REFUSED(reg_mr(stag(1, 0), ok1, 0, 4096, 0, 0), QRDMA_CQP_ERR_STATE,
                  QRDMA_STATE_ERR_EXISTS, "REG_MR: STag 0x00000100: MR 1 is in use");
    CHECK_REFUSED(reg_mr(stag(1, 9), ok1, 0, 4096, 0, 0), QRDMA_CQP_ERR_STATE,
                  QRDMA_STATE_ERR_EXISTS, "MR 1 is in use");
    /* arg1: reserved bits, PD, ACCESS, LEVELS, page size. */
    CHECK_REFUSED(reg_mr(stag(2, 0), ok1 | 1ull << 60, 0, 4096, 0, 0), QRDMA_CQP_ERR_INVALID_ARG,
                  1, "sets reserved bits");
    CHECK_REFUSED(reg_mr(stag(2, 0), ok1 | 1ull << 24, 0, 4096, 0, 0), QRDMA_CQP_ERR_INVALID_ARG,
                  1, "sets reserved bits");
    CHECK_REFUSED(reg_mr(stag(2, 0), arg1(QRDMA_DEFAULT_MAX_PD, LW, 1, 12), 0, 4096, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "PD 1024 is beyond CAP_MAX_PD 1024");
    CHECK_REFUSED(reg_mr(stag(2, 0), arg1(0, 0x40, 1, 12), 0, 4096, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "ACCESS 0x40 is not within 0x3f");
    CHECK_REFUSED(reg_mr(stag(2, 0), arg1(0, RW, 1, 12), 0, 4096, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "remote write or atomic without local write");
    CHECK_REFUSED(reg_mr(stag(2, 0), arg1(0, RA | RR, 1, 12), 0, 4096, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "without local write");
    CHECK_REFUSED(reg_mr(stag(2, 0), arg1(0, LW, 3, 12), 0, 4096, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "LEVELS 3");
    CHECK_REFUSED(reg_mr(stag(2, 0), arg1(0, LW, 1, 11), 0, 4096, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "pages of 2^11 bytes");
    CHECK_REFUSED(reg_mr(stag(2, 0), arg1(0, LW, 1, 40), 0, 4096, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "pages of 2^40 bytes");
    CHECK_REFUSED(reg_mr(stag(2, 0), arg1(0, LW, 1, 0), 0, 4096, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "pages of 2^0 bytes");
    /* IOVA, LENGTH, FBO. */
    CHECK_REFUSED(reg_mr(stag(2, 0), ok1, 0, 0, 0, 0), QRDMA_CQP_ERR_INVALID_ARG, 3,
                  "LENGTH 0x0 is not 1..0x10000000000");
    CHECK_REFUSED(reg_mr(stag(2, 0), ok1, 0, QRDMA_CORE_MAX_MR_SIZE + 1, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 3, "LENGTH 0x10000000001");
    CHECK_REFUSED(reg_mr(stag(2, 0), ok1, UINT64_MAX - 0xff, 0x200, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 2, "IOVA 0xffffffffffffff00 + LENGTH wraps");
    CHECK_REFUSED(reg_mr(stag(2, 0), ok1, 0, 4096, 0, 4096), QRDMA_CQP_ERR_INVALID_ARG, 5,
                  "FBO 0x1000 is not inside a page of 2^12 bytes");
    CHECK_REFUSED(reg_mr(stag(2, 0), ok1, 0, 4096, 0, 1ull << 40), QRDMA_CQP_ERR_INVALID_ARG, 5,
                  "FBO");
    /* The PBLE range: pages = (FBO + LENGTH) rounded up. */
    CHECK_REFUSED(reg_mr(stag(2, 0), ok1, 0, 4096, N_PBLE, 0), QRDMA_CQP_ERR_PBLE,
                  QRDMA_PBLE_ERR_RANGE, "PBLEs 4096..4096 are beyond the 4096 committed");
    CHECK_REFUSED(reg_mr(stag(2, 0), ok1, 0, 4096, N_PBLE - 1, 1), QRDMA_CQP_ERR_PBLE,
                  QRDMA_PBLE_ERR_RANGE, "PBLEs 4095..4096");
    CHECK_RESULT(reg_mr(stag(2, 0), ok1, 0, 4096, N_PBLE - 1, 0), QRDMA_CQP_OK, 0);
    CHECK_REFUSED(reg_mr(stag(3, 0), ok1, 0, QRDMA_CORE_MAX_MR_SIZE, 0, 0), QRDMA_CQP_ERR_PBLE,
                  QRDMA_PBLE_ERR_RANGE, "beyond the 4096 committed");
    CHECK_REFUSED(reg_mr(stag(3, 0), ok1, 0, 4096, UINT64_MAX, 0), QRDMA_CQP_ERR_PBLE,
                  QRDMA_PBLE_ERR_RANGE, "beyond the 4096 committed");
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_MR), 2);
    CHECK(all_zero(mr_ctx(3), 64));

    /* Before COMMIT_FPM_VAL. */
    qrdma_core_config_defaults(&cfg);
    setup_with(&cfg, false);
    CHECK_REFUSED(reg_mr(stag(1, 0), ok1, 0, 4096, 0, 0), QRDMA_CQP_ERR_HMC,
                  QRDMA_HMC_ERR_NOT_COMMITTED, "REG_MR: MR 1: no FPM layout is committed");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_ALLOC_STAG, stag(1, 0), 0, 1, 0, 0, 0), QRDMA_CQP_ERR_HMC,
                  QRDMA_HMC_ERR_NOT_COMMITTED, "ALLOC_STAG");
    CHECK_REFUSED(dealloc(stag(1, 0)), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_NOT_COMMITTED,
                  "DEALLOC_STAG");
    expect_fail(stag(1, 0), 0, 0, 8, 0, QRDMA_MR_ERR_INDEX,
                "STag 0x00000100: MR index 1 is beyond the 0 committed");
}

/* ---- ALLOC_STAG, DEALLOC_STAG, QUERY_STAG ------------------------------------------------- */

static void test_alloc_stag(void)
{
    const uint32_t st = stag(20, 0xab);
    uint64_t ctx;

    setup();
    CHECK_RESULT(cmd(QRDMA_CQP_OP_ALLOC_STAG, st, 6 | (uint64_t)(LW | RW) << 32, 64, 0, 500, 0),
                 QRDMA_CQP_OK, 0);
    CHECK_EQ(fake.guest_errors, 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_MR), 1);
    ctx = mr_ctx(20);
    CHECK_EQ(get64(ctx), QRDMA_MR_STATE_FREE | 0xabull << QRDMA_MR_CTX_KEY_SHIFT |
             (uint64_t)QRDMA_MR_TYPE_FAST_REG << QRDMA_MR_CTX_TYPE_SHIFT |
             6ull << QRDMA_MR_CTX_PD_SHIFT);
    CHECK_EQ(get64(ctx + 8), LW | RW);
    CHECK_EQ(get64(ctx + 32), 500);
    CHECK_EQ(get64(ctx + 48), 64);
    /* Not valid until a fast-register fills it. */
    expect_fail(st, 6, 0, 8, 0, QRDMA_MR_ERR_INVALID,
                "STag 0x000014ab: MR 20 is not valid (fast-register MR)");
    /* QUERY_STAG and DEALLOC_STAG work on it. */
    CHECK_RESULT(cmd(QRDMA_CQP_OP_QUERY_STAG, st, QUERY_BUF, 0, 0, 0, 0), QRDMA_CQP_OK, 0);
    CHECK(!memcmp(gpa(QUERY_BUF), gpa(ctx), 64));
    /* Refusals. */
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_ALLOC_STAG, st, 6, 64, 0, 500, 0), QRDMA_CQP_ERR_STATE,
                  QRDMA_STATE_ERR_EXISTS, "ALLOC_STAG: STag 0x000014ab: MR 20 is in use");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_ALLOC_STAG, stag(21, 0), 6 | 1ull << 40, 64, 0, 500, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "sets bits other than PD and ACCESS");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_ALLOC_STAG, stag(21, 0), (uint64_t)RW << 32, 64, 0, 500, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "without local write");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_ALLOC_STAG, stag(21, 0), QRDMA_DEFAULT_MAX_PD, 64, 0, 500, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "PD 1024");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_ALLOC_STAG, stag(21, 0), 6, 0, 0, 500, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 2, "MAX_PAGES 0 is not 1..4096");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_ALLOC_STAG, stag(21, 0), 6, N_PBLE + 1, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 2, "MAX_PAGES 4097");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_ALLOC_STAG, stag(21, 0), 6, 64, 0, N_PBLE - 63, 0),
                  QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_RANGE, "PBLEs 4033..4096 are beyond");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_ALLOC_STAG, stag(N_MR, 0), 6, 64, 0, 0, 0),
                  QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_COUNT, "beyond the 256 committed");
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_MR), 1);
    CHECK_RESULT(dealloc(st), QRDMA_CQP_OK, 0);
    CHECK(all_zero(ctx, 64));
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_MR), 0);
}

static void test_dealloc_and_reuse(void)
{
    const uint64_t a1 = arg1(5, LW | RR, 0, 12);

    setup();
    CHECK_RESULT(reg_mr(stag(30, 0x11), a1, 0x1000, 0x1000, DATA, 0), QRDMA_CQP_OK, 0);
    expect_pieces(stag(30, 0x11), 5, 0x1000, 8, 0, (const uint64_t[][2]){ { DATA, 8 } }, 1);
    /* A wrong key byte: STATE/KEY, the MR stays. */
    CHECK_REFUSED(dealloc(stag(30, 0x12)), QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_KEY,
                  "DEALLOC_STAG: STag 0x00001e12: MR 30 has key 0x11");
    CHECK_EQ(core.obj.mr[30].state, QRDMA_MR_STATE_VALID);
    CHECK_RESULT(dealloc(stag(30, 0x11)), QRDMA_CQP_OK, 0);
    CHECK(all_zero(mr_ctx(30), 64));
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_MR), 0);
    expect_fail(stag(30, 0x11), 5, 0x1000, 8, 0, QRDMA_MR_ERR_INVALID,
                "STag 0x00001e11: MR 30 is not registered");
    CHECK_REFUSED(dealloc(stag(30, 0x11)), QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND,
                  "DEALLOC_STAG: STag 0x00001e11: no MR at index 30");
    /* The index again, with the next key: the old STag is stale. */
    CHECK_RESULT(reg_mr(stag(30, 0x12), a1, 0x1000, 0x1000, DATA + 0x1000, 0), QRDMA_CQP_OK, 0);
    expect_fail(stag(30, 0x11), 5, 0x1000, 8, 0, QRDMA_MR_ERR_KEY,
                "STag 0x00001e11: MR 30 has key 0x12");
    expect_pieces(stag(30, 0x12), 5, 0x1000, 8, 0,
                  (const uint64_t[][2]){ { DATA + 0x1000, 8 } }, 1);
    /* The walk checks the STag at every step: a dealloc in the middle ends it. */
    {
        struct qrdma_mr_walk w;
        uint64_t addr, len;

        CHECK_EQ(qrdma_mr_translate(&core, stag(30, 0x12), 5, 0x1000, 16, 0, &w), 0);
        CHECK_RESULT(dealloc(stag(30, 0x12)), QRDMA_CQP_OK, 0);
        fake_log_mark();
        CHECK_EQ(qrdma_mr_walk_next(&core, &w, &addr, &len), QRDMA_MR_ERR_INVALID);
        CHECK(fake_logged("the MR went away during the access"));
    }
    /* DEALLOC arguments. */
    CHECK_REFUSED(dealloc(stag(N_MR, 0)), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_COUNT, "beyond");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_DEALLOC_STAG, 1ull << 33, 0, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 0, "is not a 32-bit STag");
}

/*
 * REG_MR.REREG: the registration of a valid MR replaced in one step, every
 * argument checked as for a new MR, the old one kept on any error; access,
 * PD, translation and key may all change; the MR count stays.
 */
static void test_rereg(void)
{
    const uint64_t a1 = arg1(5, LW, 0, 12);

    setup();
    /* Only a valid MR of REG_MR can be re-registered. */
    CHECK_REFUSED(reg_mr(stag(30, 0x11), a1 | QRDMA_MR_ARG1_REREG, 0x1000, 0x1000, DATA, 0),
                  QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND,
                  "REG_MR: STag 0x00001e11: REREG of MR 30, which is not a valid registered MR");
    CHECK_RESULT(reg_mr(stag(30, 0x11), a1, 0x1000, 0x1000, DATA, 0), QRDMA_CQP_OK, 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_MR), 1);
    expect_fail(stag(30, 0x11), 5, 0x1000, 8, RW, QRDMA_MR_ERR_ACCESS, "the access needs rights");

    /* Access: same key, remote write granted at once, still one MR. */
    CHECK_RESULT(reg_mr(stag(30, 0x11), arg1(5, LW | RW | RA, 0, 12) | QRDMA_MR_ARG1_REREG,
                        0x1000, 0x1000, DATA, 0), QRDMA_CQP_OK, 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_MR), 1);
    expect_pieces(stag(30, 0x11), 5, 0x1000, 8, RW, (const uint64_t[][2]){ { DATA, 8 } }, 1);
    CHECK_EQ(get64(mr_ctx(30) + 8) & 0xff, LW | RW | RA);

    /* A bad argument: refused, the old registration stays in use. */
    CHECK_REFUSED(reg_mr(stag(30, 0x11), arg1(5, RW, 0, 12) | QRDMA_MR_ARG1_REREG, 0x1000,
                         0x1000, DATA, 0), QRDMA_CQP_ERR_INVALID_ARG, 1, "without local write");
    CHECK_REFUSED(reg_mr(stag(30, 0x11), a1 | QRDMA_MR_ARG1_REREG, 0x1000, 0x1000, NOT_RAM, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 4, "");
    CHECK_REFUSED(reg_mr(stag(30, 0x11), a1 | QRDMA_MR_ARG1_REREG | QRDMA_MR_ARG1_DMA, 0, 0, 0,
                         0), QRDMA_CQP_ERR_INVALID_ARG, 1, "REREG with DMA");
    expect_pieces(stag(30, 0x11), 5, 0x1000, 8, RW, (const uint64_t[][2]){ { DATA, 8 } }, 1);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_MR), 1);

    /* Translation, PD and key at once: the old STag is stale from then on. */
    CHECK_RESULT(reg_mr(stag(30, 0x12), arg1(6, LW | RR, 0, 12) | QRDMA_MR_ARG1_REREG, 0x9000,
                        0x2000, DATA + 0x4000, 0), QRDMA_CQP_OK, 0);
    expect_fail(stag(30, 0x11), 5, 0x1000, 8, 0, QRDMA_MR_ERR_KEY,
                "STag 0x00001e11: MR 30 has key 0x12");
    expect_fail(stag(30, 0x12), 5, 0x9000, 8, 0, QRDMA_MR_ERR_PD, "");
    expect_pieces(stag(30, 0x12), 6, 0x9000, 8, RR, (const uint64_t[][2]){ { DATA + 0x4000, 8 } },
                  1);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_MR), 1);

    /* Not a fast-register MR. */
    pble_set(0, DATA);
    CHECK_RESULT(cmd(QRDMA_CQP_OP_ALLOC_STAG, stag(31, 1), arg1(5, LW, 0, 0), 4, 0, 0, 0),
                 QRDMA_CQP_OK, 0);
    CHECK_REFUSED(reg_mr(stag(31, 1), a1 | QRDMA_MR_ARG1_REREG, 0x1000, 0x1000, DATA, 0),
                  QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND, "not a valid registered MR");
    CHECK_RESULT(dealloc(stag(30, 0x12)), QRDMA_CQP_OK, 0);
    CHECK_RESULT(dealloc(stag(31, 1)), QRDMA_CQP_OK, 0);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_MR), 0);
}

static void test_query_stag(void)
{
    setup();
    pble_set(0, DATA);
    CHECK_RESULT(reg_mr(stag(3, 7), arg1(1, LW | RW | RA, 1, 12), 0x5000, 0x800, 0, 0x10),
                 QRDMA_CQP_OK, 0);
    memset(gpa(QUERY_BUF), 0xee, 64);
    CHECK_RESULT(cmd(QRDMA_CQP_OP_QUERY_STAG, stag(3, 7), QUERY_BUF, 0, 0, 0, 0), QRDMA_CQP_OK, 0);
    CHECK_EQ(get64(QUERY_BUF + 8), (LW | RW | RA) | 1ull << QRDMA_MR_CTX1_LEVELS_SHIFT |
             12ull << QRDMA_MR_CTX1_PAGE_SHIFT);
    CHECK_EQ(get64(QUERY_BUF + 16), 0x5000);
    CHECK_EQ(get64(QUERY_BUF + 24), 0x800);
    CHECK_EQ(get64(QUERY_BUF + 40), 0x10);
    /* The device's copy, not the context: a scribbled context changes nothing. */
    put64(mr_ctx(3) + 16, 0xdead);
    CHECK_RESULT(cmd(QRDMA_CQP_OP_QUERY_STAG, stag(3, 7), QUERY_BUF, 0, 0, 0, 0), QRDMA_CQP_OK, 0);
    CHECK_EQ(get64(QUERY_BUF + 16), 0x5000);
    expect_pieces(stag(3, 7), 1, 0x5000, 4, RA, (const uint64_t[][2]){ { DATA + 0x10, 4 } }, 1);
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_QUERY_STAG, stag(3, 8), QUERY_BUF, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_KEY, "QUERY_STAG: STag 0x00000308");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_QUERY_STAG, stag(4, 7), QUERY_BUF, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND, "no MR at index 4");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_QUERY_STAG, stag(3, 7), QUERY_BUF + 8, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "not 64-byte aligned guest RAM");
    CHECK_REFUSED(cmd(QRDMA_CQP_OP_QUERY_STAG, stag(3, 7), RAM_END, 0, 0, 0, 0),
                  QRDMA_CQP_ERR_INVALID_ARG, 1, "guest RAM");
}

/* ---- translation errors ---------------------------------------------------------------- */

static void test_translate_errors(void)
{
    const uint32_t st = stag(40, 0x3c);
    const uint64_t iova = 0x100000, len = 4 * 4096;
    struct qrdma_mr_walk w;
    unsigned i;

    setup();
    for (i = 0; i < 4; i++) {
        pble_set(60 + i, DATA + i * 4096);
    }
    CHECK_RESULT(reg_mr(st, arg1(8, LW | RR, 1, 12), iova, len, 60, 0), QRDMA_CQP_OK, 0);
    CHECK_RESULT(reg_mr(stag(41, 0), arg1(8, 0, 1, 12), iova, len, 60, 0), QRDMA_CQP_OK, 0);
    /* The STag. */
    expect_fail(stag(N_MR, 0x3c), 8, iova, 8, 0, QRDMA_MR_ERR_INDEX,
                "STag 0x0001003c: MR index 256 is beyond the 256 committed");
    expect_fail(0xffffffffu, 8, iova, 8, 0, QRDMA_MR_ERR_INDEX, "MR index 16777215");
    expect_fail(stag(42, 0x3c), 8, iova, 8, 0, QRDMA_MR_ERR_INVALID, "MR 42 is not registered");
    expect_fail(stag(40, 0x3d), 8, iova, 8, 0, QRDMA_MR_ERR_KEY,
                "STag 0x0000283d: MR 40 has key 0x3c");
    /* The PD. */
    expect_fail(st, 9, iova, 8, 0, QRDMA_MR_ERR_PD,
                "STag 0x0000283c: MR 40 is in PD 8, the access from PD 9");
    /* Bounds, at both ends, past the length, and wrapping. */
    expect_fail(st, 8, iova - 1, 8, 0, QRDMA_MR_ERR_BOUNDS,
                "0x8 bytes at 0xfffff are not inside MR 0x100000..+0x4000");
    expect_fail(st, 8, iova - 1, 1, 0, QRDMA_MR_ERR_BOUNDS, "not inside");
    expect_fail(st, 8, iova + len - 7, 8, 0, QRDMA_MR_ERR_BOUNDS, "not inside");
    expect_fail(st, 8, iova + len, 1, 0, QRDMA_MR_ERR_BOUNDS, "not inside");
    expect_fail(st, 8, iova, len + 1, 0, QRDMA_MR_ERR_BOUNDS, "not inside");
    expect_fail(st, 8, iova + 8, UINT64_MAX - 4, 0, QRDMA_MR_ERR_BOUNDS, "wrap");
    expect_fail(st, 8, 0, UINT64_MAX, 0, QRDMA_MR_ERR_BOUNDS, "not inside");
    expect_fail(st, 8, iova + len + 1, 0, 0, QRDMA_MR_ERR_BOUNDS, "not inside");
    expect_pieces(st, 8, iova, len, 0, NULL, 4);
    expect_pieces(st, 8, iova + len - 8, 8, 0,
                  (const uint64_t[][2]){ { DATA + 3 * 4096 + 0xff8, 8 } }, 1);
    /* Access rights: what the MR does not grant, rights that do not exist. */
    expect_fail(st, 8, iova, 8, RW, QRDMA_MR_ERR_ACCESS,
                "the access needs rights 0x2, MR 40 grants 0x5");
    expect_fail(st, 8, iova, 8, RA, QRDMA_MR_ERR_ACCESS, "needs rights 0x8");
    expect_fail(st, 8, iova, 8, QRDMA_ACCESS_MW_BIND, QRDMA_MR_ERR_ACCESS, "needs rights 0x10");
    expect_fail(stag(41, 0), 8, iova, 8, LW, QRDMA_MR_ERR_ACCESS, "grants 0x0");
    expect_fail(stag(41, 0), 8, iova, 8, RR, QRDMA_MR_ERR_ACCESS, "grants 0x0");
    expect_pieces(stag(41, 0), 8, iova, 8, 0, (const uint64_t[][2]){ { DATA, 8 } }, 1);
    /* Pages, checked at use: misaligned, outside RAM, partly outside RAM. */
    pble_set(62, DATA + 2 * 4096 + 8);
    expect_fail(st, 8, iova + 2 * 4096, 8, 0, QRDMA_MR_ERR_ALIGN,
                "STag 0x0000283c: page 2 at 0x182008 is not aligned to its 0x1000 bytes");
    pble_set(62, NOT_RAM);
    expect_fail(st, 8, iova + 2 * 4096 - 4, 8, 0, QRDMA_MR_ERR_NOT_RAM,
                "STag 0x0000283c: 0x4 bytes at 0x10000000 are not guest RAM");
    pble_set(62, RAM_END - 4096);
    expect_pieces(st, 8, iova + 2 * 4096, 4096, 0,
                  (const uint64_t[][2]){ { RAM_END - 4096, 4096 } }, 1);
    pble_set(62, RAM_END);
    expect_fail(st, 8, iova + 2 * 4096 + 4095, 1, 0, QRDMA_MR_ERR_NOT_RAM, "not guest RAM");
    /* The first pieces came out before the bad page: a walk is piece by piece. */
    CHECK_EQ(qrdma_mr_translate(&core, st, 8, iova, len, 0, &w), 0);
    {
        uint64_t addr, plen;

        CHECK_EQ(qrdma_mr_walk_next(&core, &w, &addr, &plen), 0);
        CHECK_EQ(qrdma_mr_walk_next(&core, &w, &addr, &plen), 0);
        CHECK_EQ(qrdma_mr_walk_next(&core, &w, &addr, &plen), QRDMA_MR_ERR_NOT_RAM);
        CHECK_EQ(w.left, 2 * 4096);
    }
}

static void test_reset_frees_mrs(void)
{
    unsigned i;

    setup();
    pble_set(0, DATA);
    for (i = 0; i < 50; i++) {
        CHECK_RESULT(reg_mr(stag(i, i), arg1(0, 0, 1, 12), 0, 4096, 0, 0), QRDMA_CQP_OK, 0);
    }
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_MR), 50);
    wr(QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    CHECK_EQ(rd(QRDMA_REG_OBJ_COUNT_MR), 0);
    CHECK(core.obj.mr == NULL);
    expect_fail(stag(1, 1), 0, 0, 8, 0, QRDMA_MR_ERR_INDEX, "beyond the 0 committed");
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_caps),
    UNIT_TEST(test_level0),
    UNIT_TEST(test_level1_4k),
    UNIT_TEST(test_level1_2m_1g),
    UNIT_TEST(test_level2),
    UNIT_TEST(test_pble_not_backed),
    UNIT_TEST(test_dma_mr),
    UNIT_TEST(test_reg_mr_errors),
    UNIT_TEST(test_alloc_stag),
    UNIT_TEST(test_dealloc_and_reuse),
    UNIT_TEST(test_rereg),
    UNIT_TEST(test_query_stag),
    UNIT_TEST(test_translate_errors),
    UNIT_TEST(test_reset_frees_mrs),
};

int main(void)
{
    return unit_run("core-mr", tests, sizeof(tests) / sizeof(tests[0]));
}
