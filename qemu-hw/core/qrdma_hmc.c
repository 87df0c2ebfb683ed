/*
 * qrdma device core: the host memory cache (HMC). The FPM layout the
 * driver commits (QUERY_FPM_VAL, COMMIT_FPM_VAL), the SD table it loads
 * through the HMC registers or UPDATE_PE_SDS, the page-descriptor cache
 * and its invalidation (HMC_PDINV), and the translation of an object
 * (type, index) to a guest-physical address. See docs/hw-spec.md, "HMC".
 *
 * The device keeps its own copy of everything the driver commits or
 * loads; guest memory is read only for page descriptors (and then cached,
 * as the E810 does, so a PD changed behind the device's back is not seen
 * until HMC_PDINV) and for command buffers. Every SD entry is checked
 * before it is stored, so translation can trust the table.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qrdma_core_int.h"

#include <inttypes.h>
#include <string.h>

_Static_assert((QRDMA_HMC_PD_CACHE_SIZE & (QRDMA_HMC_PD_CACHE_SIZE - 1)) == 0,
               "the PD cache is indexed by masking");
_Static_assert(QRDMA_HMC_SD_CMD_INDEX_MASK + 1 == QRDMA_HMC_MAX_SDS,
               "HMC_SD_CMD.INDEX spans the SD table");
_Static_assert((QRDMA_HMC_PDINV_PD_INDEX_MASK >>
                QRDMA_HMC_PDINV_PD_INDEX_SHIFT) +
                       1 ==
                   QRDMA_HMC_PDS_PER_SD,
               "HMC_PDINV.PD_INDEX spans an SD");

#define FPM_BUF_SIZE sizeof(struct qrdma_fpm_buf)
#define FPM_RESERVED_QWORD (1 + QRDMA_HMC_NUM_TYPES)
#define SDS_PAIR_SIZE 16u

static const char *const hmc_type_name[QRDMA_HMC_NUM_TYPES] = {
    [QRDMA_HMC_QP] = "QP",
    [QRDMA_HMC_CQ] = "CQ",
    [QRDMA_HMC_SRQ] = "SRQ",
    [QRDMA_HMC_MR] = "MR",
    [QRDMA_HMC_AH] = "AH",
    [QRDMA_HMC_PBLE] = "PBLE",
};

/*
 * Object sizes: powers of two no larger than a page, so no object crosses one.
 */
static const uint8_t hmc_obj_size_log2[QRDMA_HMC_NUM_TYPES] = {
    [QRDMA_HMC_QP] = 8,
    [QRDMA_HMC_CQ] = 6,
    [QRDMA_HMC_SRQ] = 6,
    [QRDMA_HMC_MR] = 6,
    [QRDMA_HMC_AH] = 6,
    [QRDMA_HMC_PBLE] = 3,
};

static struct cqp_result hmc_bad_arg(unsigned which)
{
    return (struct cqp_result){ .major = QRDMA_CQP_ERR_INVALID_ARG,
                                .minor = which };
}

static struct cqp_result hmc_fail(enum qrdma_hmc_error why)
{
    return (struct cqp_result){ .major = QRDMA_CQP_ERR_HMC, .minor = why };
}

/* ---- SD entries and the PD cache ----------------------------------------- */

/*
 * Why e is not an SD entry the device accepts, or NULL. An invalid SD is
 * written as 0, so a driver that forgot VALID on a real entry is caught
 * here rather than at the first object it uses.
 */
static const char *sd_entry_problem(uint64_t e)
{
    uint64_t bp_count = (e & QRDMA_HMC_SD_BP_COUNT_MASK) >>
                        QRDMA_HMC_SD_BP_COUNT_SHIFT;

    if (!(e & QRDMA_HMC_SD_VALID)) {
        return e ? "VALID is clear but other bits are set (an invalid SD is 0)"
                 : NULL;
    }
    if (e & QRDMA_HMC_SD_TYPE_DIRECT) {
        if (bp_count) {
            return "a direct SD must have BP_COUNT 0";
        }
        if (e & QRDMA_HMC_SD_ADDR_MASK & (QRDMA_HMC_SD_SIZE - 1)) {
            return "a direct SD's address is not 2 MB aligned";
        }
        return NULL;
    }
    /* ADDR[63:12] makes a paged SD's PD page 4 KB aligned by construction. */
    if (bp_count != QRDMA_HMC_PDS_PER_SD) {
        return "a paged SD must have BP_COUNT 512";
    }
    return NULL;
}

static uint32_t pd_tag(uint32_t sd_index, uint32_t pd_index)
{
    return sd_index * QRDMA_HMC_PDS_PER_SD + pd_index;
}

static struct qrdma_hmc_pd_cache_entry *pd_slot(struct qrdma_hmc *hmc,
                                                uint32_t tag)
{
    return &hmc->pd_cache[tag & (QRDMA_HMC_PD_CACHE_SIZE - 1)];
}

static void pd_cache_drop(struct qrdma_hmc *hmc, uint32_t tag)
{
    struct qrdma_hmc_pd_cache_entry *e = pd_slot(hmc, tag);

    if (e->valid && e->tag == tag) {
        e->valid = false;
    }
}

/* A new SD entry makes every PD cached through the old one stale. */
static void pd_cache_drop_sd(struct qrdma_hmc *hmc, uint32_t sd_index)
{
    unsigned i;

    for (i = 0; i < QRDMA_HMC_PD_CACHE_SIZE; i++) {
        if (hmc->pd_cache[i].valid &&
            hmc->pd_cache[i].tag / QRDMA_HMC_PDS_PER_SD == sd_index) {
            hmc->pd_cache[i].valid = false;
        }
    }
}

/* Store an entry sd_entry_problem() accepted. */
static void sd_store(struct qrdma_hmc *hmc, uint32_t sd_index, uint64_t entry)
{
    hmc->sd[sd_index] = entry;
    pd_cache_drop_sd(hmc, sd_index);
}

/* ---- translation --------------------------------------------------------- */

int qrdma_core_hmc_object(struct qrdma_core *core, enum qrdma_hmc_type type,
                          uint32_t index, uint64_t *gpa)
{
    struct qrdma_hmc *hmc = &core->hmc;
    struct qrdma_hmc_pd_cache_entry *slot;
    uint64_t fpm, sd, pd, pd_addr;
    uint32_t sd_index, pd_index, tag;
    uint8_t raw[8];

    core->stats.guest_lookups++;
    if ((unsigned)type >= QRDMA_HMC_NUM_TYPES) {
        /*
         * A caller's bug, not the guest's; refuse it the same way all the same.
         */
        qrdma_guest_error(core, "HMC: object of unknown type %u",
                          (unsigned)type);
        return QRDMA_HMC_ERR_COUNT;
    }
    if (!hmc->committed) {
        qrdma_guest_error(core, "HMC: %s %u used before COMMIT_FPM_VAL",
                          hmc_type_name[type], index);
        return QRDMA_HMC_ERR_NOT_COMMITTED;
    }
    if (index >= hmc->count[type]) {
        qrdma_guest_error(core, "HMC: %s %u is beyond the %u committed",
                          hmc_type_name[type], index, hmc->count[type]);
        return QRDMA_HMC_ERR_COUNT;
    }
    fpm = hmc->base[type] + ((uint64_t)index << hmc->obj_size_log2[type]);
    if (fpm / QRDMA_HMC_SD_SIZE >= QRDMA_HMC_MAX_SDS) {
        /* COMMIT_FPM_VAL keeps the layout inside the table; belt and braces. */
        qrdma_guest_error(core,
                          "HMC: %s %u at FPM 0x%" PRIx64
                          " is beyond the SD table",
                          hmc_type_name[type], index, fpm);
        return QRDMA_HMC_ERR_COUNT;
    }
    sd_index = fpm / QRDMA_HMC_SD_SIZE;
    sd = hmc->sd[sd_index];
    if (!(sd & QRDMA_HMC_SD_VALID)) {
        qrdma_guest_error(core, "HMC: %s %u: SD %u is not valid",
                          hmc_type_name[type], index, sd_index);
        return QRDMA_HMC_ERR_SD_INVALID;
    }
    if (sd & QRDMA_HMC_SD_TYPE_DIRECT) {
        *gpa = (sd & QRDMA_HMC_SD_ADDR_MASK) + (fpm & (QRDMA_HMC_SD_SIZE - 1));
        return 0;
    }

    pd_index = (fpm / QRDMA_HMC_PD_SIZE) & (QRDMA_HMC_PDS_PER_SD - 1);
    tag = pd_tag(sd_index, pd_index);
    slot = pd_slot(hmc, tag);
    if (slot->valid && slot->tag == tag) {
        pd = slot->pd;
    } else {
        pd_addr = (sd & QRDMA_HMC_SD_ADDR_MASK) +
                  (uint64_t)pd_index * sizeof(uint64_t);
        if (core->env.dma_read(core->env.opaque, pd_addr, raw, sizeof(raw))) {
            qrdma_guest_error(core,
                              "HMC: %s %u: PD %u of SD %u at 0x%" PRIx64
                              " is not guest RAM",
                              hmc_type_name[type], index, pd_index, sd_index,
                              pd_addr);
            return QRDMA_HMC_ERR_NOT_RAM;
        }
        pd = qrdma_ld_le64(raw);
        /*
         * Bits 11:1 are reserved: a PD that sets them is not one the driver
         * meant.
         */
        if (!(pd & QRDMA_HMC_PD_VALID) ||
            (pd & ~(QRDMA_HMC_PD_ADDR_MASK | QRDMA_HMC_PD_VALID))) {
            qrdma_guest_error(core,
                              "HMC: %s %u: PD %u of SD %u is 0x%016" PRIx64
                              ", not a valid page descriptor",
                              hmc_type_name[type], index, pd_index, sd_index,
                              pd);
            return QRDMA_HMC_ERR_PD_INVALID;
        }
        /*
         * Only valid PDs are cached, so a PD the driver fills in later is seen.
         */
        slot->valid = true;
        slot->tag = tag;
        slot->pd = pd;
    }
    *gpa = (pd & QRDMA_HMC_PD_ADDR_MASK) + (fpm & (QRDMA_HMC_PD_SIZE - 1));
    return 0;
}

/* ---- CQP commands -------------------------------------------------------- */

struct cqp_result qrdma_hmc_query_fpm_val(struct qrdma_core *core,
                                          const uint64_t *arg)
{
    struct qrdma_hmc *hmc = &core->hmc;
    uint8_t buf[FPM_BUF_SIZE];
    unsigned t;

    if (arg[0] & 63) {
        qrdma_guest_error(core,
                          "QUERY_FPM_VAL: buffer 0x%" PRIx64
                          " is not 64-byte aligned",
                          arg[0]);
        return hmc_bad_arg(0);
    }
    memset(buf, 0, sizeof(buf));
    qrdma_st_le64(buf, QRDMA_HMC_MAX_SDS);
    for (t = 0; t < QRDMA_HMC_NUM_TYPES; t++) {
        qrdma_st_le64(buf + 8 * (1 + t),
                      hmc->max_count[t] | (uint64_t)hmc->obj_size_log2[t]
                                              << QRDMA_FPM_OBJ_SIZE_LOG2_SHIFT);
    }
    if (core->env.dma_write(core->env.opaque, arg[0], buf, sizeof(buf))) {
        qrdma_guest_error(core,
                          "QUERY_FPM_VAL: buffer 0x%" PRIx64
                          " is not guest RAM",
                          arg[0]);
        return hmc_fail(QRDMA_HMC_ERR_NOT_RAM);
    }
    return (struct cqp_result){ 0 };
}

struct cqp_result qrdma_hmc_commit_fpm_val(struct qrdma_core *core,
                                           const uint64_t *arg)
{
    struct qrdma_hmc *hmc = &core->hmc;
    const uint64_t fpm_limit = (uint64_t)QRDMA_HMC_MAX_SDS * QRDMA_HMC_SD_SIZE;
    uint32_t count[QRDMA_HMC_NUM_TYPES];
    uint64_t base[QRDMA_HMC_NUM_TYPES];
    uint8_t buf[FPM_BUF_SIZE];
    uint64_t end = 0, sds;
    unsigned t;

    if (hmc->committed) {
        qrdma_guest_error(
            core,
            "COMMIT_FPM_VAL: a layout is already committed (until reset)");
        return hmc_fail(QRDMA_HMC_ERR_ALREADY_COMMITTED);
    }
    if (arg[0] & 63) {
        qrdma_guest_error(core,
                          "COMMIT_FPM_VAL: buffer 0x%" PRIx64
                          " is not 64-byte aligned",
                          arg[0]);
        return hmc_bad_arg(0);
    }
    if (core->env.dma_read(core->env.opaque, arg[0], buf, sizeof(buf))) {
        qrdma_guest_error(core,
                          "COMMIT_FPM_VAL: buffer 0x%" PRIx64
                          " is not guest RAM",
                          arg[0]);
        return hmc_fail(QRDMA_HMC_ERR_NOT_RAM);
    }
    if (qrdma_ld_le64(buf + 8 * FPM_RESERVED_QWORD)) {
        qrdma_guest_error(core, "COMMIT_FPM_VAL: reserved qword %u is not 0",
                          FPM_RESERVED_QWORD);
        return hmc_bad_arg(FPM_RESERVED_QWORD);
    }
    for (t = 0; t < QRDMA_HMC_NUM_TYPES; t++) {
        uint64_t v = qrdma_ld_le64(buf + 8 * (1 + t));

        /* max_count fits 32 bits, so this also refuses bits 63:32. */
        if (v > hmc->max_count[t]) {
            qrdma_guest_error(core,
                              "COMMIT_FPM_VAL: %" PRIu64
                              " %s objects, at most %u",
                              v, hmc_type_name[t], hmc->max_count[t]);
            return hmc_bad_arg(1 + t);
        }
        count[t] = v;
    }
    for (t = 0; t < QRDMA_HMC_NUM_TYPES; t++) {
        base[t] = (end + QRDMA_HMC_PD_SIZE - 1) &
                  ~(uint64_t)(QRDMA_HMC_PD_SIZE - 1);
        end = base[t] + ((uint64_t)count[t] << hmc->obj_size_log2[t]);
        /* Unreachable with today's property limits (about 1.2 GB at most). */
        if (end > fpm_limit) {
            qrdma_guest_error(
                core,
                "COMMIT_FPM_VAL: the %s objects end at FPM 0x%" PRIx64
                ", beyond %u SDs",
                hmc_type_name[t], end, QRDMA_HMC_MAX_SDS);
            return hmc_bad_arg(1 + t);
        }
    }
    sds = (end + QRDMA_HMC_SD_SIZE - 1) / QRDMA_HMC_SD_SIZE;

    /*
     * The working copies, one entry per object the layout holds (qrdma_obj.c).
     */
    t = qrdma_obj_alloc(core, count);
    if (t) {
        qrdma_guest_error(
            core, "COMMIT_FPM_VAL: the host has no memory for %u %s objects",
            count[t - 1], hmc_type_name[t - 1]);
        return hmc_bad_arg(t);
    }
    qrdma_st_le64(buf, sds);
    for (t = 0; t < QRDMA_HMC_NUM_TYPES; t++) {
        qrdma_st_le64(buf + 8 * (1 + t), base[t]);
    }
    if (core->env.dma_write(core->env.opaque, arg[0], buf, sizeof(buf))) {
        qrdma_guest_error(core,
                          "COMMIT_FPM_VAL: buffer 0x%" PRIx64
                          " is not guest RAM",
                          arg[0]);
        qrdma_obj_reset(core);
        return hmc_fail(QRDMA_HMC_ERR_NOT_RAM);
    }
    memcpy(hmc->count, count, sizeof(count));
    memcpy(hmc->base, base, sizeof(base));
    hmc->sd_needed = sds;
    hmc->committed = true;
    return (struct cqp_result){ .retval = sds };
}

struct cqp_result qrdma_hmc_update_pe_sds(struct qrdma_core *core,
                                          const uint64_t *arg)
{
    uint8_t raw[QRDMA_UPDATE_SDS_MAX * SDS_PAIR_SIZE];
    uint32_t sd_index[QRDMA_UPDATE_SDS_MAX];
    uint64_t entry[QRDMA_UPDATE_SDS_MAX];
    uint64_t count = arg[0] & QRDMA_UPDATE_SDS_COUNT_MASK;
    unsigned i;

    if ((arg[0] & ~QRDMA_UPDATE_SDS_COUNT_MASK) || !count ||
        count > QRDMA_UPDATE_SDS_MAX) {
        qrdma_guest_error(core,
                          "UPDATE_PE_SDS: arg0 0x%" PRIx64
                          " is not a COUNT of 1..%u",
                          arg[0], QRDMA_UPDATE_SDS_MAX);
        return hmc_bad_arg(0);
    }
    if (count <= 2) {
        for (i = 0; i < count; i++) {
            qrdma_st_le64(raw + SDS_PAIR_SIZE * i, arg[1 + 2 * i]);
            qrdma_st_le64(raw + SDS_PAIR_SIZE * i + 8, arg[2 + 2 * i]);
        }
    } else {
        if (arg[5] & (SDS_PAIR_SIZE - 1)) {
            qrdma_guest_error(core, "UPDATE_PE_SDS: pair list 0x%" PRIx64
                              " is not 16-byte aligned", arg[5]);
            return hmc_bad_arg(5);
        }
        if (core->env.dma_read(core->env.opaque, arg[5], raw,
                               count * SDS_PAIR_SIZE)) {
            qrdma_guest_error(core,
                              "UPDATE_PE_SDS: %" PRIu64 " pairs at 0x%" PRIx64
                              " are not guest RAM",
                              count, arg[5]);
            return hmc_fail(QRDMA_HMC_ERR_NOT_RAM);
        }
    }

    /* All or nothing: check every pair before the first is applied. */
    for (i = 0; i < count; i++) {
        uint64_t cmd = qrdma_ld_le64(raw + SDS_PAIR_SIZE * i);
        uint64_t data = qrdma_ld_le64(raw + SDS_PAIR_SIZE * i + 8);
        const char *why;

        if ((cmd & ~(uint64_t)QRDMA_HMC_SD_CMD_VALID_MASK) ||
            !(cmd & QRDMA_HMC_SD_CMD_WRITE)) {
            qrdma_guest_error(core, "UPDATE_PE_SDS: pair %u: cmd 0x%" PRIx64
                              " is not WRITE plus an SD index", i + 1, cmd);
            return hmc_bad_arg(i + 1);
        }
        sd_index[i] = cmd & QRDMA_HMC_SD_CMD_INDEX_MASK;
        if (sd_index[i] >= QRDMA_HMC_MAX_SDS) {
            qrdma_guest_error(
                core, "UPDATE_PE_SDS: pair %u: SD %u is beyond the table",
                i + 1, sd_index[i]);
            return hmc_fail(QRDMA_HMC_ERR_BAD_SD);
        }
        why = sd_entry_problem(data);
        if (why) {
            qrdma_guest_error(
                core,
                "UPDATE_PE_SDS: pair %u: SD %u entry 0x%016" PRIx64
                " refused: %s",
                i + 1, sd_index[i], data, why);
            return hmc_fail(QRDMA_HMC_ERR_BAD_SD);
        }
        entry[i] = data;
    }
    /* In list order, so a later pair for the same SD wins. */
    for (i = 0; i < count; i++) {
        sd_store(&core->hmc, sd_index[i], entry[i]);
    }
    return (struct cqp_result){ 0 };
}

/* ---- registers ----------------------------------------------------------- */

static uint32_t reg_read_hmc(struct qrdma_core *core, uint32_t offset)
{
    switch (offset) {
    case QRDMA_REG_HMC_SD_DATA_LOW:
        return core->hmc.sd_data_low;
    case QRDMA_REG_HMC_SD_DATA_HIGH:
        return core->hmc.sd_data_high;
    case QRDMA_REG_HMC_SD_CMD:
        return core->hmc.sd_cmd;
    case QRDMA_REG_HMC_SD_COUNT:
        return core->hmc.sd_needed;
    default: /* QRDMA_REG_HMC_PDINV: a command, nothing to read back */
        return 0;
    }
}

static void reg_write_sd_data(struct qrdma_core *core, uint32_t offset,
                              uint32_t value)
{
    if (offset == QRDMA_REG_HMC_SD_DATA_LOW) {
        core->hmc.sd_data_low = value;
    } else {
        core->hmc.sd_data_high = value;
    }
}

/* Reserved bits never get here: the write mask refused them. */
static void reg_write_sd_cmd(struct qrdma_core *core, uint32_t offset,
                             uint32_t value)
{
    struct qrdma_hmc *hmc = &core->hmc;
    uint32_t sd_index = value & QRDMA_HMC_SD_CMD_INDEX_MASK;
    uint64_t entry;
    const char *why;

    if (sd_index >= QRDMA_HMC_MAX_SDS) {
        qrdma_guest_error(core,
                          "HMC_SD_CMD: SD %u is beyond the table; ignored",
                          sd_index);
        return;
    }
    if (!(value & QRDMA_HMC_SD_CMD_WRITE)) {
        hmc->sd_data_low = (uint32_t)hmc->sd[sd_index];
        hmc->sd_data_high = (uint32_t)(hmc->sd[sd_index] >> 32);
        hmc->sd_cmd = value;
        return;
    }
    entry = (uint64_t)hmc->sd_data_high << 32 | hmc->sd_data_low;
    why = sd_entry_problem(entry);
    if (why) {
        qrdma_guest_error(core,
                          "HMC_SD_CMD: SD %u entry 0x%016" PRIx64
                          " refused: %s; ignored",
                          sd_index, entry, why);
        return;
    }
    sd_store(hmc, sd_index, entry);
    hmc->sd_cmd = value;
}

static void reg_write_pdinv(struct qrdma_core *core, uint32_t offset,
                            uint32_t value)
{
    uint32_t sd_index = value & QRDMA_HMC_PDINV_SD_INDEX_MASK;
    uint32_t pd_index = (value & QRDMA_HMC_PDINV_PD_INDEX_MASK) >>
                        QRDMA_HMC_PDINV_PD_INDEX_SHIFT;

    pd_cache_drop(&core->hmc, pd_tag(sd_index, pd_index));
}

#define B QRDMA_REG_HMC_BASE
const struct qrdma_reg_desc qrdma_hmc_reg_table[QRDMA_REG_BLOCK_SIZE / 4] = {
    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_HMC_SD_DATA_LOW, B, "HMC_SD_DATA_LOW",
                           0xffffffffu, reg_read_hmc, reg_write_sd_data),
    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_HMC_SD_DATA_HIGH, B, "HMC_SD_DATA_HIGH",
                           0xffffffffu, reg_read_hmc, reg_write_sd_data),
    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_HMC_SD_CMD, B, "HMC_SD_CMD",
                           QRDMA_HMC_SD_CMD_VALID_MASK, reg_read_hmc,
                           reg_write_sd_cmd),
    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_HMC_PDINV, B, "HMC_PDINV",
                           QRDMA_HMC_PDINV_VALID_MASK, reg_read_hmc,
                           reg_write_pdinv),
    QRDMA_REG_RO_LIVE_DESC(QRDMA_REG_HMC_SD_COUNT, B, "HMC_SD_COUNT",
                           reg_read_hmc),
};
#undef B

void qrdma_hmc_reset(struct qrdma_core *core)
{
    struct qrdma_hmc *hmc = &core->hmc;
    unsigned t;

    memset(hmc, 0, sizeof(*hmc));
    hmc->max_count[QRDMA_HMC_QP] = core->cfg.max_qp;
    hmc->max_count[QRDMA_HMC_CQ] = core->cfg.max_cq;
    hmc->max_count[QRDMA_HMC_SRQ] = core->cfg.max_srq;
    hmc->max_count[QRDMA_HMC_MR] = core->cfg.max_mr;
    hmc->max_count[QRDMA_HMC_AH] = core->cfg.max_ah;
    hmc->max_count[QRDMA_HMC_PBLE] = QRDMA_HMC_PBLE_MAX;
    for (t = 0; t < QRDMA_HMC_NUM_TYPES; t++) {
        hmc->obj_size_log2[t] = hmc_obj_size_log2[t];
    }
}
