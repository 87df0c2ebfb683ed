/*
 * Unit tests of the device core's HMC: QUERY_FPM_VAL and COMMIT_FPM_VAL
 * with every check, SD entries loaded by register and by UPDATE_PE_SDS
 * (inline, from a list, all or nothing), translation of objects through
 * direct and paged SDs, the page-descriptor cache and the rules that
 * flush it (HMC_PDINV, rewriting the SD), translation errors, and reset.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdbool.h>
#include <stdlib.h>

#include "core/qrdma_core.h"
#include "fake_cqp.h"
#include "fake_env.h"
#include "unit.h"

int unit_failures;

/* Fake RAM is [1 MB, 5 MB): rings and buffers low, a 2 MB page at 2 MB. */
#define FPM_BUF     (FAKE_RAM_BASE + 0x3000)
#define PAIRS_ADDR  (FAKE_RAM_BASE + 0x4000)
#define PD_PAGE_A   (FAKE_RAM_BASE + 0x5000)
#define PD_PAGE_B   (FAKE_RAM_BASE + 0x6000)
#define OBJ_PAGES   (FAKE_RAM_BASE + 0x40000)    /* 4 KB pages the PDs name */
#define DIRECT_PAGE 0x200000ull                  /* 2 MB aligned, inside fake RAM */
#define NOT_RAM     0x10000000ull

#define SD_SIZE     QRDMA_HMC_SD_SIZE
#define WRITE       QRDMA_HMC_SD_CMD_WRITE

/* Layout with the default maxima committed in full (see test_commit_ok). */
#define QP_BASE     0x0ull
#define CQ_BASE     0x40000ull
#define SRQ_BASE    0x60000ull
#define MR_BASE     0x64000ull
#define AH_BASE     0x164000ull
#define PBLE_BASE   0x1a4000ull
#define FULL_SDS    9u

/* ---- guest memory ---------------------------------------------------------- */

/* ---- the CQP (driver side in fake_cqp.c) --------------------------------- */

/* Create a CQP of 32 WQEs on the current core (engine ready). */
/* A fresh core with these properties (defaults for NULL), a CQP, the error log. */
static void setup(const struct qrdma_core_config *cfg)
{
    fake_setup_ready(cfg);
    cqp_setup(5, 5);
    fake_log_mark();
}

static uint64_t last_retval;

/* Run one command; return its CQE status (the return value in last_retval). */
static uint64_t run1(uint8_t opcode, const uint64_t *args)
{
    return cqp_run1(opcode, args, &last_retval);
}

/* ---- HMC helpers ------------------------------------------------------------ */

static uint64_t paged_sd(uint64_t pd_page)
{
    return pd_page | (uint64_t)QRDMA_HMC_PDS_PER_SD << QRDMA_HMC_SD_BP_COUNT_SHIFT |
           QRDMA_HMC_SD_VALID;
}

static uint64_t direct_sd(uint64_t page)
{
    return page | QRDMA_HMC_SD_TYPE_DIRECT | QRDMA_HMC_SD_VALID;
}

static void sd_write_reg(uint32_t index, uint64_t entry)
{
    wr(QRDMA_REG_HMC_SD_DATA_LOW, (uint32_t)entry);
    wr(QRDMA_REG_HMC_SD_DATA_HIGH, (uint32_t)(entry >> 32));
    wr(QRDMA_REG_HMC_SD_CMD, WRITE | index);
}

static uint64_t sd_read_reg(uint32_t index)
{
    wr(QRDMA_REG_HMC_SD_CMD, index);
    return (uint64_t)rd(QRDMA_REG_HMC_SD_DATA_HIGH) << 32 | rd(QRDMA_REG_HMC_SD_DATA_LOW);
}

static void pdinv(uint32_t sd_index, uint32_t pd_index)
{
    wr(QRDMA_REG_HMC_PDINV, sd_index | pd_index << QRDMA_HMC_PDINV_PD_INDEX_SHIFT);
}

static const uint64_t full_counts[QRDMA_HMC_NUM_TYPES] = {
    QRDMA_DEFAULT_MAX_QP, QRDMA_DEFAULT_MAX_CQ, QRDMA_DEFAULT_MAX_SRQ,
    QRDMA_DEFAULT_MAX_MR, QRDMA_DEFAULT_MAX_AH, QRDMA_HMC_PBLE_MAX,
};

/* COMMIT_FPM_VAL of these counts through FPM_BUF; returns the CQE status. */
static uint64_t commit(const uint64_t *counts)
{
    uint64_t args[6] = { FPM_BUF };
    unsigned t;

    memset(gpa(FPM_BUF), 0, sizeof(struct qrdma_fpm_buf));
    for (t = 0; t < QRDMA_HMC_NUM_TYPES; t++) {
        put64(FPM_BUF + 8 * (1 + t), counts[t]);
    }
    return run1(QRDMA_CQP_OP_COMMIT_FPM_VAL, args);
}

/* Translate, expecting success. */
static uint64_t xlate(enum qrdma_hmc_type type, uint32_t index)
{
    uint64_t addr = ~0ull;

    CHECK_EQ(qrdma_core_hmc_object(&core, type, index, &addr), 0);
    return addr;
}

/* Translate, expecting failure with why, and no address written. */
static void xlate_fails(enum qrdma_hmc_type type, uint32_t index, int why)
{
    uint64_t addr = 0x5a5a;
    int errors = fake.guest_errors;

    CHECK_EQ(qrdma_core_hmc_object(&core, type, index, &addr), why);
    CHECK_EQ(addr, 0x5a5a);
    CHECK_EQ(fake.guest_errors, errors + 1);
}

/* ---- QUERY_FPM_VAL --------------------------------------------------------- */

static void test_query_fpm(void)
{
    static const unsigned log2[QRDMA_HMC_NUM_TYPES] = { 8, 6, 6, 6, 6, 3 };
    struct qrdma_core_config cfg;
    uint64_t args[6] = { FPM_BUF };
    uint64_t want[QRDMA_HMC_NUM_TYPES];
    unsigned t;

    qrdma_core_config_defaults(&cfg);
    cfg.max_qp = 100;
    cfg.max_cq = 200;
    cfg.max_srq = 0;
    cfg.max_mr = 300;
    cfg.max_ah = 7;
    want[0] = 100, want[1] = 200, want[2] = 0, want[3] = 300, want[4] = 7;
    want[5] = QRDMA_HMC_PBLE_MAX;
    setup(&cfg);

    memset(gpa(FPM_BUF), 0xff, 64);
    CHECK_RESULT(run1(QRDMA_CQP_OP_QUERY_FPM_VAL, args), QRDMA_CQP_OK, 0);
    CHECK_EQ(last_retval, 0);
    CHECK_EQ(get64(FPM_BUF), QRDMA_HMC_MAX_SDS);
    for (t = 0; t < QRDMA_HMC_NUM_TYPES; t++) {
        uint64_t v = get64(FPM_BUF + 8 * (1 + t));

        CHECK_EQ(v & QRDMA_FPM_MAX_COUNT_MASK, want[t]);
        CHECK_EQ((v & QRDMA_FPM_OBJ_SIZE_LOG2_MASK) >> QRDMA_FPM_OBJ_SIZE_LOG2_SHIFT, log2[t]);
        CHECK_EQ(v >> 40, 0);
    }
    CHECK_EQ(get64(FPM_BUF + 56), 0);           /* the reserved qword */
    CHECK_EQ(fake.guest_errors, 0);

    /* Misaligned, outside RAM, straddling the end of RAM. */
    args[0] = FPM_BUF + 32;
    CHECK_RESULT(run1(QRDMA_CQP_OP_QUERY_FPM_VAL, args), QRDMA_CQP_ERR_INVALID_ARG, 0);
    CHECK(fake_logged("not 64-byte aligned"));
    fake_log_mark();
    args[0] = NOT_RAM;
    CHECK_RESULT(run1(QRDMA_CQP_OP_QUERY_FPM_VAL, args), QRDMA_CQP_ERR_HMC,
                 QRDMA_HMC_ERR_NOT_RAM);
    CHECK(fake_logged("QUERY_FPM_VAL: buffer 0x10000000 is not guest RAM"));
    CHECK_EQ(rd(QRDMA_REG_CQP_ERRCODES),
             QRDMA_CQP_ERR_HMC << QRDMA_CQP_ERRCODES_MAJOR_SHIFT | QRDMA_HMC_ERR_NOT_RAM);
    args[0] = FAKE_RAM_BASE + FAKE_RAM_SIZE - 64;
    CHECK_RESULT(run1(QRDMA_CQP_OP_QUERY_FPM_VAL, args), QRDMA_CQP_OK, 0);
    args[0] = FAKE_RAM_BASE + FAKE_RAM_SIZE;
    CHECK_RESULT(run1(QRDMA_CQP_OP_QUERY_FPM_VAL, args), QRDMA_CQP_ERR_HMC,
                 QRDMA_HMC_ERR_NOT_RAM);
}

/* ---- COMMIT_FPM_VAL --------------------------------------------------------- */

static void test_commit_ok(void)
{
    static const unsigned log2[QRDMA_HMC_NUM_TYPES] = { 8, 6, 6, 6, 6, 3 };
    static const uint64_t counts[QRDMA_HMC_NUM_TYPES] = { 1000, 2047, 1, 16384, 0, 100 };
    static const uint64_t full_bases[QRDMA_HMC_NUM_TYPES] = {
        QP_BASE, CQ_BASE, SRQ_BASE, MR_BASE, AH_BASE, PBLE_BASE,
    };
    uint64_t end = 0, base;
    unsigned t;

    /* Odd counts: every base rounds up to 4 KB after the previous type. */
    setup(NULL);
    CHECK_EQ(rd(QRDMA_REG_HMC_SD_COUNT), 0);
    CHECK_RESULT(commit(counts), QRDMA_CQP_OK, 0);
    for (t = 0; t < QRDMA_HMC_NUM_TYPES; t++) {
        base = get64(FPM_BUF + 8 * (1 + t));
        CHECK_EQ(base & 4095, 0);
        CHECK(base >= end);                 /* no overlap with the type before */
        CHECK(base - end < 4096);           /* and no gap beyond the alignment */
        CHECK_EQ(core.hmc.base[t], base);
        CHECK_EQ(core.hmc.count[t], counts[t]);
        end = base + (counts[t] << log2[t]);
    }
    CHECK_EQ(get64(FPM_BUF + 8 * (1 + QRDMA_HMC_CQ)), 0x3f000);  /* 1000 * 256 = 0x3e800 */
    CHECK_EQ(get64(FPM_BUF + 8 * (1 + QRDMA_HMC_SRQ)), 0x5f000);
    CHECK_EQ(get64(FPM_BUF + 8 * (1 + QRDMA_HMC_MR)), 0x60000);
    /* An empty type takes no room: AH and PBLE start at the same place. */
    CHECK_EQ(get64(FPM_BUF + 8 * (1 + QRDMA_HMC_AH)), 0x160000);
    CHECK_EQ(get64(FPM_BUF + 8 * (1 + QRDMA_HMC_PBLE)), 0x160000);
    CHECK_EQ(get64(FPM_BUF), 1);                    /* 0x160320 bytes: one SD */
    CHECK_EQ(last_retval, 1);
    CHECK_EQ(rd(QRDMA_REG_HMC_SD_COUNT), 1);
    CHECK_EQ(get64(FPM_BUF + 56), 0);
    CHECK_EQ(fake.guest_errors, 0);

    /* Everything the device offers (what the driver commits). */
    setup(NULL);
    CHECK_RESULT(commit(full_counts), QRDMA_CQP_OK, 0);
    for (t = 0; t < QRDMA_HMC_NUM_TYPES; t++) {
        CHECK_EQ(get64(FPM_BUF + 8 * (1 + t)), full_bases[t]);
    }
    /* PBLEs end at 0x11a4000: 8.8 SDs, so 9. */
    CHECK_EQ(get64(FPM_BUF), FULL_SDS);
    CHECK_EQ(last_retval, FULL_SDS);
    CHECK_EQ(rd(QRDMA_REG_HMC_SD_COUNT), FULL_SDS);

    /* Nothing at all is a layout too: no SDs. */
    setup(NULL);
    {
        static const uint64_t none[QRDMA_HMC_NUM_TYPES];

        CHECK_RESULT(commit(none), QRDMA_CQP_OK, 0);
    }
    CHECK_EQ(last_retval, 0);
    CHECK_EQ(rd(QRDMA_REG_HMC_SD_COUNT), 0);
    CHECK(core.hmc.committed);
    xlate_fails(QRDMA_HMC_QP, 0, QRDMA_HMC_ERR_COUNT);
}

static void test_commit_errors(void)
{
    uint64_t counts[QRDMA_HMC_NUM_TYPES];
    uint64_t args[6] = { 0 };
    unsigned t;

    setup(NULL);
    /* One type over its maximum at a time: minor 1 + type. */
    for (t = 0; t < QRDMA_HMC_NUM_TYPES; t++) {
        memcpy(counts, full_counts, sizeof(counts));
        counts[t]++;
        fake_log_mark();
        CHECK_RESULT(commit(counts), QRDMA_CQP_ERR_INVALID_ARG, 1 + t);
        CHECK(fake_logged("at most"));
        /* A count with bits 63:32 set is over the maximum too. */
        counts[t] = full_counts[t] | 1ull << 32;
        CHECK_RESULT(commit(counts), QRDMA_CQP_ERR_INVALID_ARG, 1 + t);
    }
    /* The reserved qword. */
    memset(gpa(FPM_BUF), 0, 64);
    put64(FPM_BUF + 56, 1);
    args[0] = FPM_BUF;
    fake_log_mark();
    CHECK_RESULT(run1(QRDMA_CQP_OP_COMMIT_FPM_VAL, args), QRDMA_CQP_ERR_INVALID_ARG, 7);
    /* Two guest errors: the command's reason, then the CQP's failure line. */
    CHECK_EQ(fake.log_n, 2);
    CHECK(fake_logged("COMMIT_FPM_VAL: reserved qword 7 is not 0"));
    CHECK_STR_CONTAINS(fake.last_error, "CQP COMMIT_FPM_VAL (WQE");
    CHECK_STR_CONTAINS(fake.last_error, "failed: major 2 minor 7");
    /* Misaligned and unmapped buffers. */
    args[0] = FPM_BUF + 8;
    CHECK_RESULT(run1(QRDMA_CQP_OP_COMMIT_FPM_VAL, args), QRDMA_CQP_ERR_INVALID_ARG, 0);
    args[0] = NOT_RAM;
    CHECK_RESULT(run1(QRDMA_CQP_OP_COMMIT_FPM_VAL, args), QRDMA_CQP_ERR_HMC,
                 QRDMA_HMC_ERR_NOT_RAM);
    args[0] = FAKE_RAM_BASE + FAKE_RAM_SIZE;
    CHECK_RESULT(run1(QRDMA_CQP_OP_COMMIT_FPM_VAL, args), QRDMA_CQP_ERR_HMC,
                 QRDMA_HMC_ERR_NOT_RAM);
    /* None of that committed anything. */
    CHECK(!core.hmc.committed);
    CHECK_EQ(rd(QRDMA_REG_HMC_SD_COUNT), 0);
    xlate_fails(QRDMA_HMC_QP, 0, QRDMA_HMC_ERR_NOT_COMMITTED);

    /* The first good commit sticks; a second is refused and changes nothing. */
    CHECK_RESULT(commit(full_counts), QRDMA_CQP_OK, 0);
    counts[0] = 1, counts[1] = 1, counts[2] = 0, counts[3] = 1, counts[4] = 0, counts[5] = 0;
    fake_log_mark();
    CHECK_RESULT(commit(counts), QRDMA_CQP_ERR_HMC, QRDMA_HMC_ERR_ALREADY_COMMITTED);
    CHECK(fake_logged("already committed"));
    CHECK_EQ(get64(FPM_BUF + 8), 1);            /* the buffer was not written */
    CHECK_EQ(core.hmc.count[QRDMA_HMC_QP], QRDMA_DEFAULT_MAX_QP);
    CHECK_EQ(core.hmc.base[QRDMA_HMC_PBLE], PBLE_BASE);
    CHECK_EQ(rd(QRDMA_REG_HMC_SD_COUNT), FULL_SDS);
}

/* ---- SDs by register ------------------------------------------------------- */

static void test_sd_registers(void)
{
    const uint64_t paged = paged_sd(0x123456789000ull);
    const uint64_t direct = direct_sd(0x7fe00000ull);
    int errors;

    /* The registers work before the engine is ready, as the E810's PFHMC ones. */
    fake_setup(NULL);
    fake_log_mark();
    CHECK_EQ(rd(QRDMA_REG_HMC_SD_COUNT), 0);
    sd_write_reg(5, paged);
    CHECK_EQ(core.hmc.sd[5], paged);
    CHECK_EQ(rd(QRDMA_REG_HMC_SD_CMD), WRITE | 5);
    sd_write_reg(QRDMA_HMC_MAX_SDS - 1, direct);
    CHECK_EQ(core.hmc.sd[QRDMA_HMC_MAX_SDS - 1], direct);
    CHECK_EQ(fake.guest_errors, 0);

    /* Read back: WRITE clear loads SD_DATA with the SD. */
    wr(QRDMA_REG_HMC_SD_DATA_LOW, 0);
    wr(QRDMA_REG_HMC_SD_DATA_HIGH, 0);
    CHECK_EQ(sd_read_reg(5), paged);
    CHECK_EQ(rd(QRDMA_REG_HMC_SD_CMD), 5);
    CHECK_EQ(sd_read_reg(QRDMA_HMC_MAX_SDS - 1), direct);
    CHECK_EQ(sd_read_reg(6), 0);
    /*
     * A write of 1 is a read of SD 1 (what qrdma-mmio-abuse does): no
     * guest error, and SD_DATA now holds SD 1 (0).
     */
    wr(QRDMA_REG_HMC_SD_DATA_LOW, 0xdead0000);
    wr(QRDMA_REG_HMC_SD_CMD, 1);
    CHECK_EQ(rd(QRDMA_REG_HMC_SD_DATA_LOW), 0);
    CHECK_EQ(fake.guest_errors, 0);

    /* An index beyond INDEX[11:0], or bits 30:12: reserved bits, ignored. */
    wr(QRDMA_REG_HMC_SD_DATA_LOW, (uint32_t)paged);
    wr(QRDMA_REG_HMC_SD_DATA_HIGH, (uint32_t)(paged >> 32));
    wr(QRDMA_REG_HMC_SD_CMD, WRITE | QRDMA_HMC_MAX_SDS);
    CHECK_STR_CONTAINS(fake.last_error, "HMC_SD_CMD sets reserved bits 0x1000");
    wr(QRDMA_REG_HMC_SD_CMD, WRITE | 0x40000000u | 6);
    CHECK_STR_CONTAINS(fake.last_error, "reserved bits 0x40000000");
    CHECK_EQ(core.hmc.sd[6], 0);
    CHECK_EQ(core.hmc.sd[0], 0);
    CHECK_EQ(rd(QRDMA_REG_HMC_SD_CMD), 1);      /* refused writes change nothing */

    /* Malformed entries: refused, the SD keeps its old value. */
    errors = fake.guest_errors;
    sd_write_reg(5, direct_sd(DIRECT_PAGE + 0x1000));
    CHECK_STR_CONTAINS(fake.last_error, "not 2 MB aligned");
    CHECK_STR_CONTAINS(fake.last_error, "HMC_SD_CMD: SD 5 entry");
    sd_write_reg(5, direct_sd(DIRECT_PAGE) | 512 << QRDMA_HMC_SD_BP_COUNT_SHIFT);
    CHECK_STR_CONTAINS(fake.last_error, "BP_COUNT 0");
    sd_write_reg(5, paged - (1 << QRDMA_HMC_SD_BP_COUNT_SHIFT));        /* BP_COUNT 511 */
    CHECK_STR_CONTAINS(fake.last_error, "BP_COUNT 512");
    sd_write_reg(5, (paged & ~QRDMA_HMC_SD_BP_COUNT_MASK));             /* BP_COUNT 0 */
    CHECK_STR_CONTAINS(fake.last_error, "BP_COUNT 512");
    sd_write_reg(5, paged & ~QRDMA_HMC_SD_VALID);                       /* junk, not VALID */
    CHECK_STR_CONTAINS(fake.last_error, "VALID is clear");
    CHECK_EQ(fake.guest_errors, errors + 5);
    CHECK_EQ(core.hmc.sd[5], paged);
    CHECK_EQ(rd(QRDMA_REG_HMC_SD_CMD), 1);

    /* 0 is how an SD is invalidated. */
    sd_write_reg(5, 0);
    CHECK_EQ(core.hmc.sd[5], 0);
    CHECK_EQ(fake.guest_errors, errors + 5);

    /* PDINV: reserved bits refused; reads 0. SD_COUNT is read-only. */
    wr(QRDMA_REG_HMC_PDINV, 0x8000);
    CHECK_STR_CONTAINS(fake.last_error, "HMC_PDINV sets reserved bits 0x8000");
    wr(QRDMA_REG_HMC_PDINV, 0x02000000u);
    CHECK_STR_CONTAINS(fake.last_error, "reserved bits 0x2000000");
    pdinv(3, 511);
    CHECK_EQ(rd(QRDMA_REG_HMC_PDINV), 0);
    wr(QRDMA_REG_HMC_SD_COUNT, 1);
    CHECK_STR_CONTAINS(fake.last_error, "read-only register HMC_SD_COUNT");
    CHECK_EQ(fake.guest_errors, errors + 8);
    /* Holes in the block. */
    CHECK_EQ(rd(QRDMA_REG_HMC_BASE + 0x14), 0);
    CHECK_STR_CONTAINS(fake.last_error, "no register there");
    CHECK(qrdma_core_reg_name(QRDMA_REG_HMC_SD_CMD) &&
          !strcmp(qrdma_core_reg_name(QRDMA_REG_HMC_SD_CMD), "HMC_SD_CMD"));
}

/* ---- UPDATE_PE_SDS ---------------------------------------------------------- */

static void put_pair(unsigned i, uint64_t cmd, uint64_t data)
{
    put64(PAIRS_ADDR + 16 * i, cmd);
    put64(PAIRS_ADDR + 16 * i + 8, data);
}

static void test_update_pe_sds(void)
{
    uint64_t args[6] = { 0 };
    unsigned i;

    setup(NULL);
    /* One pair inline. */
    args[0] = 1;
    args[1] = WRITE | 3;
    args[2] = direct_sd(DIRECT_PAGE);
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_OK, 0);
    CHECK_EQ(core.hmc.sd[3], direct_sd(DIRECT_PAGE));
    /* Two inline; the second clears SD 3. */
    args[0] = 2;
    args[1] = WRITE | 4;
    args[2] = paged_sd(PD_PAGE_A);
    args[3] = WRITE | 3;
    args[4] = 0;
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_OK, 0);
    CHECK_EQ(core.hmc.sd[4], paged_sd(PD_PAGE_A));
    CHECK_EQ(core.hmc.sd[3], 0);
    CHECK_EQ(sd_read_reg(4), paged_sd(PD_PAGE_A));      /* the registers see it */
    /* Five from a list. */
    for (i = 0; i < 5; i++) {
        put_pair(i, WRITE | (100 + i), paged_sd(PD_PAGE_A + 0x1000 * i));
    }
    memset(args, 0, sizeof(args));
    args[0] = 5;
    args[5] = PAIRS_ADDR;
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_OK, 0);
    for (i = 0; i < 5; i++) {
        CHECK_EQ(core.hmc.sd[100 + i], paged_sd(PD_PAGE_A + 0x1000 * i));
    }
    /* Sixty-four, the most, with the same SD twice: the later pair wins. */
    for (i = 0; i < QRDMA_UPDATE_SDS_MAX; i++) {
        put_pair(i, WRITE | (200 + i), direct_sd(DIRECT_PAGE));
    }
    put_pair(63, WRITE | 200, 0);
    args[0] = QRDMA_UPDATE_SDS_MAX;
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_OK, 0);
    CHECK_EQ(core.hmc.sd[200], 0);
    CHECK_EQ(core.hmc.sd[262], direct_sd(DIRECT_PAGE));
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_update_pe_sds_errors(void)
{
    uint64_t args[6] = { 0 };
    unsigned i;

    setup(NULL);
    /* COUNT 0, 65, or bits above COUNT: minor 0. */
    args[0] = 0;
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_ERR_INVALID_ARG, 0);
    CHECK(fake_logged("is not a COUNT of 1..64"));
    args[0] = QRDMA_UPDATE_SDS_MAX + 1;
    args[5] = PAIRS_ADDR;
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_ERR_INVALID_ARG, 0);
    args[0] = 0x101;
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_ERR_INVALID_ARG, 0);
    /* The list: misaligned (minor 5), outside RAM, running off the end of RAM. */
    args[0] = 3;
    args[5] = PAIRS_ADDR + 8;
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_ERR_INVALID_ARG, 5);
    args[5] = NOT_RAM;
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_ERR_HMC,
                 QRDMA_HMC_ERR_NOT_RAM);
    args[5] = FAKE_RAM_BASE + FAKE_RAM_SIZE - 32;
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_ERR_HMC,
                 QRDMA_HMC_ERR_NOT_RAM);

    /* Five good pairs, then one bad one among them: nothing is applied. */
    for (i = 0; i < 5; i++) {
        put_pair(i, WRITE | (10 + i), paged_sd(PD_PAGE_A));
    }
    args[0] = 5;
    args[5] = PAIRS_ADDR;
    put_pair(3, WRITE | 13, direct_sd(DIRECT_PAGE + 0x1000));   /* pair 4: bad entry */
    fake_log_mark();
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_ERR_HMC,
                 QRDMA_HMC_ERR_BAD_SD);
    CHECK(fake_logged("UPDATE_PE_SDS: pair 4: SD 13 entry"));
    CHECK(fake_logged("not 2 MB aligned"));
    put_pair(3, 13, paged_sd(PD_PAGE_A));                        /* pair 4: no WRITE */
    fake_log_mark();
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_ERR_INVALID_ARG, 4);
    CHECK(fake_logged("pair 4: cmd 0xd"));
    put_pair(3, WRITE | 13, paged_sd(PD_PAGE_A));
    put_pair(4, WRITE | 0x1000 | 14, paged_sd(PD_PAGE_A));       /* pair 5: reserved bit */
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_ERR_INVALID_ARG, 5);
    put_pair(4, (uint64_t)1 << 32 | WRITE | 14, paged_sd(PD_PAGE_A));
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_ERR_INVALID_ARG, 5);
    put_pair(4, WRITE | 14, paged_sd(PD_PAGE_A) | 1 << 2);        /* BP_COUNT 513 */
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_ERR_HMC,
                 QRDMA_HMC_ERR_BAD_SD);
    for (i = 0; i < 5; i++) {
        CHECK_EQ(core.hmc.sd[10 + i], 0);
    }
    /* The same checks inline: pair 2 bad, pair 1 not applied. */
    memset(args, 0, sizeof(args));
    args[0] = 2;
    args[1] = WRITE | 1;
    args[2] = paged_sd(PD_PAGE_A);
    args[3] = WRITE | 2;
    args[4] = QRDMA_HMC_SD_TYPE_DIRECT;                          /* not VALID, not 0 */
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_ERR_HMC,
                 QRDMA_HMC_ERR_BAD_SD);
    args[4] = 0;
    args[3] = 2;                                                 /* no WRITE */
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_ERR_INVALID_ARG, 2);
    CHECK_EQ(core.hmc.sd[1], 0);
    /* Fixed, the whole batch goes in. */
    for (i = 0; i < 5; i++) {
        put_pair(i, WRITE | (10 + i), paged_sd(PD_PAGE_A));
    }
    memset(args, 0, sizeof(args));
    args[0] = 5;
    args[5] = PAIRS_ADDR;
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_OK, 0);
    for (i = 0; i < 5; i++) {
        CHECK_EQ(core.hmc.sd[10 + i], paged_sd(PD_PAGE_A));
    }
}

/* ---- translation ------------------------------------------------------------ */

/* Default maxima committed in full: SD 0 direct, SD 1 paged through PD_PAGE_A. */
static void setup_translation(void)
{
    setup(NULL);
    CHECK_RESULT(commit(full_counts), QRDMA_CQP_OK, 0);
    sd_write_reg(0, direct_sd(DIRECT_PAGE));
    sd_write_reg(1, paged_sd(PD_PAGE_A));
    put64(PD_PAGE_A + 0 * 8, (OBJ_PAGES + 0x0000) | QRDMA_HMC_PD_VALID);
    put64(PD_PAGE_A + 1 * 8, (OBJ_PAGES + 0x5000) | QRDMA_HMC_PD_VALID);
    put64(PD_PAGE_A + 511 * 8, (OBJ_PAGES + 0x9000) | QRDMA_HMC_PD_VALID);
}

/* PBLE index whose FPM address is fpm (PBLEs are 8 bytes). */
static uint32_t pble_at(uint64_t fpm)
{
    return (fpm - PBLE_BASE) / 8;
}

static void test_translate_direct(void)
{
    setup_translation();
    CHECK_EQ(xlate(QRDMA_HMC_QP, 0), DIRECT_PAGE + QP_BASE);
    CHECK_EQ(xlate(QRDMA_HMC_QP, 5), DIRECT_PAGE + QP_BASE + 5 * 256);
    CHECK_EQ(xlate(QRDMA_HMC_QP, 1023), DIRECT_PAGE + QP_BASE + 1023 * 256);
    CHECK_EQ(xlate(QRDMA_HMC_CQ, 3), DIRECT_PAGE + CQ_BASE + 3 * 64);
    CHECK_EQ(xlate(QRDMA_HMC_SRQ, 255), DIRECT_PAGE + SRQ_BASE + 255 * 64);
    CHECK_EQ(xlate(QRDMA_HMC_MR, 100), DIRECT_PAGE + MR_BASE + 100 * 64);
    CHECK_EQ(xlate(QRDMA_HMC_AH, 4095), DIRECT_PAGE + AH_BASE + 4095 * 64);
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, 5), DIRECT_PAGE + PBLE_BASE + 5 * 8);
    /* The last PBLE of SD 0 and the first of SD 1. */
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble_at(SD_SIZE - 8)), DIRECT_PAGE + SD_SIZE - 8);
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble_at(SD_SIZE)), OBJ_PAGES);
    /* Direct SDs read no PD: nothing is cached for them. */
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_translate_paged(void)
{
    unsigned i, cached = 0;

    setup_translation();
    /* SD 1: PD 0, PD 1 (the second PD page), PD 511 (the last). */
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble_at(SD_SIZE + 16)), OBJ_PAGES + 16);
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble_at(SD_SIZE + 0x1000)), OBJ_PAGES + 0x5000);
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble_at(SD_SIZE + 0x1ff8)), OBJ_PAGES + 0x5ff8);
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble_at(2 * SD_SIZE - 8)), OBJ_PAGES + 0x9ff8);

    /* SD 0 paged too (through PD_PAGE_B): QPs, CQs and MRs in several pages. */
    sd_write_reg(0, paged_sd(PD_PAGE_B));
    for (i = 0; i < 0x70; i++) {
        put64(PD_PAGE_B + 8 * i, (OBJ_PAGES + 0x100000 + 0x1000 * (uint64_t)i) | 1);
    }
    /* QP 17: FPM 0x1100, PD 1. */
    CHECK_EQ(xlate(QRDMA_HMC_QP, 17), OBJ_PAGES + 0x101100);
    /* CQ 70: FPM 0x40000 + 0x1180, PD 0x41. */
    CHECK_EQ(xlate(QRDMA_HMC_CQ, 70), OBJ_PAGES + 0x100000 + 0x41000 + 0x180);
    /* SRQ 64: FPM 0x61000, PD 0x61, offset 0. */
    CHECK_EQ(xlate(QRDMA_HMC_SRQ, 64), OBJ_PAGES + 0x100000 + 0x61000);
    /* MR 191: FPM 0x64000 + 0x2fc0, PD 0x66. */
    CHECK_EQ(xlate(QRDMA_HMC_MR, 191), OBJ_PAGES + 0x100000 + 0x66fc0);
    CHECK_EQ(fake.guest_errors, 0);
    for (i = 0; i < QRDMA_HMC_PD_CACHE_SIZE; i++) {
        cached += core.hmc.pd_cache[i].valid;
    }
    CHECK(cached >= 4);
}

/* The rule docs/hw-spec.md states: a changed PD is not seen before HMC_PDINV. */
static void test_pd_cache_needs_pdinv(void)
{
    const uint32_t pble = pble_at(SD_SIZE + 0x1000 + 24);  /* SD 1, PD 1, byte 24 */
    uint64_t args[6] = { 0 };

    setup_translation();
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble), OBJ_PAGES + 0x5000 + 24);   /* PD 1 cached */

    /* The driver points PD 1 elsewhere without telling the device. */
    put64(PD_PAGE_A + 8, (OBJ_PAGES + 0x7000) | QRDMA_HMC_PD_VALID);
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble), OBJ_PAGES + 0x5000 + 24);   /* not seen */
    /* Invalidating other PDs (one of them in the same cache slot) is not enough. */
    pdinv(1, 2);
    pdinv(0, 1);
    pdinv(2, 1);
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble), OBJ_PAGES + 0x5000 + 24);
    /* PDINV for (SD 1, PD 1): now it is. */
    pdinv(1, 1);
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble), OBJ_PAGES + 0x7000 + 24);   /* seen */

    /* Rewriting the SD (even with the same entry) flushes its PDs. */
    put64(PD_PAGE_A + 8, (OBJ_PAGES + 0x8000) | QRDMA_HMC_PD_VALID);
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble), OBJ_PAGES + 0x7000 + 24);
    sd_write_reg(1, paged_sd(PD_PAGE_A));
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble), OBJ_PAGES + 0x8000 + 24);
    /* Writing another SD does not. */
    put64(PD_PAGE_A + 8, (OBJ_PAGES + 0x9000) | QRDMA_HMC_PD_VALID);
    sd_write_reg(2, paged_sd(PD_PAGE_B));
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble), OBJ_PAGES + 0x8000 + 24);
    /* UPDATE_PE_SDS flushes as well. */
    args[0] = 1;
    args[1] = WRITE | 1;
    args[2] = paged_sd(PD_PAGE_A);
    CHECK_RESULT(run1(QRDMA_CQP_OP_UPDATE_PE_SDS, args), QRDMA_CQP_OK, 0);
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble), OBJ_PAGES + 0x9000 + 24);

    /* A PD not valid yet is not cached: once the driver fills it in, it works. */
    CHECK_EQ(get64(PD_PAGE_A + 2 * 8), 0);
    xlate_fails(QRDMA_HMC_PBLE, pble_at(SD_SIZE + 0x2000), QRDMA_HMC_ERR_PD_INVALID);
    put64(PD_PAGE_A + 2 * 8, (OBJ_PAGES + 0xa000) | QRDMA_HMC_PD_VALID);
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble_at(SD_SIZE + 0x2000)), OBJ_PAGES + 0xa000);

    /* An invalidated SD stops translation at once, cache or not. */
    sd_write_reg(1, 0);
    xlate_fails(QRDMA_HMC_PBLE, pble, QRDMA_HMC_ERR_SD_INVALID);
}

static void test_translate_errors(void)
{
    struct qrdma_core_config cfg;

    /* Before commit. */
    setup(NULL);
    sd_write_reg(0, direct_sd(DIRECT_PAGE));
    fake_log_mark();
    xlate_fails(QRDMA_HMC_QP, 0, QRDMA_HMC_ERR_NOT_COMMITTED);
    CHECK(fake_logged("QP 0 used before COMMIT_FPM_VAL"));

    setup_translation();
    /* Beyond the committed count, and a type that does not exist. */
    fake_log_mark();
    xlate_fails(QRDMA_HMC_QP, QRDMA_DEFAULT_MAX_QP, QRDMA_HMC_ERR_COUNT);
    CHECK(fake_logged("QP 1024 is beyond the 1024 committed"));
    xlate_fails(QRDMA_HMC_PBLE, QRDMA_HMC_PBLE_MAX, QRDMA_HMC_ERR_COUNT);
    xlate_fails(QRDMA_HMC_PBLE, UINT32_MAX, QRDMA_HMC_ERR_COUNT);
    xlate_fails(QRDMA_HMC_NUM_TYPES, 0, QRDMA_HMC_ERR_COUNT);
    /* An SD never written (SD 2), and one invalidated. */
    fake_log_mark();
    xlate_fails(QRDMA_HMC_PBLE, pble_at(2 * SD_SIZE), QRDMA_HMC_ERR_SD_INVALID);
    CHECK(fake_logged("SD 2 is not valid"));
    sd_write_reg(0, 0);
    xlate_fails(QRDMA_HMC_QP, 0, QRDMA_HMC_ERR_SD_INVALID);
    /* PDs: not valid, reserved bits set. */
    fake_log_mark();
    xlate_fails(QRDMA_HMC_PBLE, pble_at(SD_SIZE + 0x3000), QRDMA_HMC_ERR_PD_INVALID);
    CHECK(fake_logged("PD 3 of SD 1 is 0x0000000000000000, not a valid page descriptor"));
    put64(PD_PAGE_A + 3 * 8, (OBJ_PAGES + 0x3000) | QRDMA_HMC_PD_VALID | 0x10);
    xlate_fails(QRDMA_HMC_PBLE, pble_at(SD_SIZE + 0x3000), QRDMA_HMC_ERR_PD_INVALID);
    /* A PD page outside guest RAM, and one whose last PDs run off its end. */
    sd_write_reg(1, paged_sd(NOT_RAM));
    fake_log_mark();
    xlate_fails(QRDMA_HMC_PBLE, pble_at(SD_SIZE), QRDMA_HMC_ERR_NOT_RAM);
    CHECK(fake_logged("PD 0 of SD 1 at 0x10000000 is not guest RAM"));
    sd_write_reg(1, paged_sd(FAKE_RAM_BASE + FAKE_RAM_SIZE));
    xlate_fails(QRDMA_HMC_PBLE, pble_at(2 * SD_SIZE - 8), QRDMA_HMC_ERR_NOT_RAM);
    sd_write_reg(1, paged_sd(FAKE_RAM_BASE + FAKE_RAM_SIZE - 0x1000));
    put64(FAKE_RAM_BASE + FAKE_RAM_SIZE - 8, OBJ_PAGES | QRDMA_HMC_PD_VALID);
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble_at(2 * SD_SIZE - 8)), OBJ_PAGES + 0xff8);

    /* A type with no objects committed: every index is beyond the count. */
    qrdma_core_config_defaults(&cfg);
    cfg.max_srq = 0;
    setup(&cfg);
    {
        uint64_t counts[QRDMA_HMC_NUM_TYPES];

        memcpy(counts, full_counts, sizeof(counts));
        counts[QRDMA_HMC_SRQ] = 0;
        CHECK_RESULT(commit(counts), QRDMA_CQP_OK, 0);
    }
    xlate_fails(QRDMA_HMC_SRQ, 0, QRDMA_HMC_ERR_COUNT);
}

static void test_reset_clears_hmc(void)
{
    unsigned i;

    setup_translation();
    CHECK_EQ(xlate(QRDMA_HMC_PBLE, pble_at(SD_SIZE)), OBJ_PAGES);     /* one PD cached */
    wr(QRDMA_REG_HMC_SD_DATA_LOW, 0x1234);
    wr(QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);

    CHECK(!core.hmc.committed);
    CHECK_EQ(rd(QRDMA_REG_HMC_SD_COUNT), 0);
    CHECK_EQ(rd(QRDMA_REG_HMC_SD_DATA_LOW), 0);
    CHECK_EQ(rd(QRDMA_REG_HMC_SD_CMD), 0);
    CHECK_EQ(sd_read_reg(0), 0);
    CHECK_EQ(sd_read_reg(1), 0);
    for (i = 0; i < QRDMA_HMC_PD_CACHE_SIZE; i++) {
        CHECK(!core.hmc.pd_cache[i].valid);
    }
    xlate_fails(QRDMA_HMC_QP, 0, QRDMA_HMC_ERR_NOT_COMMITTED);
    /* The maxima survive (they are properties), and a new layout commits. */
    CHECK_EQ(core.hmc.max_count[QRDMA_HMC_PBLE], QRDMA_HMC_PBLE_MAX);
    qrdma_core_pe_ready(&core);
    cqp_setup(5, 5);
    CHECK_RESULT(commit(full_counts), QRDMA_CQP_OK, 0);
    CHECK_EQ(rd(QRDMA_REG_HMC_SD_COUNT), FULL_SDS);
    /* The SDs are gone with the reset, so the layout has no backing yet. */
    xlate_fails(QRDMA_HMC_QP, 0, QRDMA_HMC_ERR_SD_INVALID);
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_query_fpm),
    UNIT_TEST(test_commit_ok),
    UNIT_TEST(test_commit_errors),
    UNIT_TEST(test_sd_registers),
    UNIT_TEST(test_update_pe_sds),
    UNIT_TEST(test_update_pe_sds_errors),
    UNIT_TEST(test_translate_direct),
    UNIT_TEST(test_translate_paged),
    UNIT_TEST(test_pd_cache_needs_pdinv),
    UNIT_TEST(test_translate_errors),
    UNIT_TEST(test_reset_clears_hmc),
};

int main(void)
{
    return unit_run("core-hmc", tests, sizeof(tests) / sizeof(tests[0]));
}
