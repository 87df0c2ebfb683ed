/*
 * qrdma device core: BAR0 register file, reset and PE bring-up, doorbell
 * BAR decoding. See docs/hw-spec.md for the interface this implements.
 *
 * Every guest access is checked here, not in the glue: size, alignment,
 * offset, access type and reserved bits. A bad access is logged as a guest
 * error, counted, and ignored; it never aborts the host.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qrdma_core_int.h"
#ifdef QRDMA_HAVE_VERBS
#include "qrdma_backend_verbs.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static uint32_t reg_read_guest_errors(struct qrdma_core *core, uint32_t offset);
static uint32_t reg_read_port_status(struct qrdma_core *core, uint32_t offset);
static uint32_t reg_read_obj_count(struct qrdma_core *core, uint32_t offset);
static void reg_write_dev_ctrl(struct qrdma_core *core, uint32_t offset,
                               uint32_t value);

#define RO(off, nm)             QRDMA_REG_RO_DESC(off, 0, nm)
#define RO_LIVE(off, nm, fn)    QRDMA_REG_RO_LIVE_DESC(off, 0, nm, fn)
#define RW(off, nm, mask, fn)   QRDMA_REG_RW_DESC(off, 0, nm, mask, fn)

static const struct qrdma_reg_desc qrdma_reg_table[QRDMA_REG_FILE_END / 4] = {
    RO(QRDMA_REG_SIGNATURE, "SIGNATURE"),
    RO(QRDMA_REG_IF_VERSION, "IF_VERSION"),
    RO(QRDMA_REG_HW_REV, "HW_REV"),
    RO(QRDMA_REG_FW_VERSION, "FW_VERSION"),
    RO(QRDMA_REG_MAC_LOW, "MAC_LOW"),
    RO(QRDMA_REG_MAC_HIGH, "MAC_HIGH"),
    RO(QRDMA_REG_BOARD_ID + 0, "BOARD_ID0"),
    RO(QRDMA_REG_BOARD_ID + 4, "BOARD_ID1"),
    RO(QRDMA_REG_BOARD_ID + 8, "BOARD_ID2"),
    RO(QRDMA_REG_BOARD_ID + 12, "BOARD_ID3"),

    RW(QRDMA_REG_DEV_CTRL, "DEV_CTRL", QRDMA_DEV_CTRL_VALID_MASK,
       reg_write_dev_ctrl),
    RO(QRDMA_REG_PE_STATUS, "PE_STATUS"),
    RO_LIVE(QRDMA_REG_GUEST_ERRORS, "GUEST_ERRORS", reg_read_guest_errors),
    RW(QRDMA_REG_SCRATCH, "SCRATCH", 0xffffffffu, NULL),
    RO_LIVE(QRDMA_REG_OBJ_COUNT_QP, "OBJ_COUNT_QP", reg_read_obj_count),
    RO_LIVE(QRDMA_REG_OBJ_COUNT_CQ, "OBJ_COUNT_CQ", reg_read_obj_count),
    RO_LIVE(QRDMA_REG_OBJ_COUNT_SRQ, "OBJ_COUNT_SRQ", reg_read_obj_count),
    RO_LIVE(QRDMA_REG_OBJ_COUNT_MR, "OBJ_COUNT_MR", reg_read_obj_count),
    RO_LIVE(QRDMA_REG_OBJ_COUNT_AH, "OBJ_COUNT_AH", reg_read_obj_count),

    RO(QRDMA_REG_CAP_MAX_QP, "CAP_MAX_QP"),
    RO(QRDMA_REG_CAP_MAX_CQ, "CAP_MAX_CQ"),
    RO(QRDMA_REG_CAP_MAX_MR, "CAP_MAX_MR"),
    RO(QRDMA_REG_CAP_MAX_PD, "CAP_MAX_PD"),
    RO(QRDMA_REG_CAP_MAX_SRQ, "CAP_MAX_SRQ"),
    RO(QRDMA_REG_CAP_MAX_AH, "CAP_MAX_AH"),
    RO(QRDMA_REG_CAP_MAX_QP_WR, "CAP_MAX_QP_WR"),
    RO(QRDMA_REG_CAP_MAX_SRQ_WR, "CAP_MAX_SRQ_WR"),
    RO(QRDMA_REG_CAP_MAX_CQE, "CAP_MAX_CQE"),
    RO(QRDMA_REG_CAP_MAX_SEND_SGE, "CAP_MAX_SEND_SGE"),
    RO(QRDMA_REG_CAP_MAX_RECV_SGE, "CAP_MAX_RECV_SGE"),
    RO(QRDMA_REG_CAP_MAX_INLINE, "CAP_MAX_INLINE"),
    RO(QRDMA_REG_CAP_PAGE_SIZES, "CAP_PAGE_SIZES"),
    RO(QRDMA_REG_CAP_MAX_MR_SIZE_LO, "CAP_MAX_MR_SIZE_LO"),
    RO(QRDMA_REG_CAP_MAX_MR_SIZE_HI, "CAP_MAX_MR_SIZE_HI"),
    RO(QRDMA_REG_CAP_MAX_RD_ATOM, "CAP_MAX_RD_ATOM"),
    RO(QRDMA_REG_CAP_MAX_RESP_RES, "CAP_MAX_RESP_RES"),
    RO(QRDMA_REG_CAP_MAX_MTU, "CAP_MAX_MTU"),
    RO(QRDMA_REG_CAP_GID_TABLE_LEN, "CAP_GID_TABLE_LEN"),
    RO(QRDMA_REG_CAP_DB_PAGES, "CAP_DB_PAGES"),
    RO(QRDMA_REG_CAP_MSIX_VECTORS, "CAP_MSIX_VECTORS"),
    RO(QRDMA_REG_CAP_MAX_CEQ, "CAP_MAX_CEQ"),
    RO(QRDMA_REG_CAP_FEATURES, "CAP_FEATURES"),
    RO(QRDMA_REG_CAP_MAX_MCAST_GRP, "CAP_MAX_MCAST_GRP"),
    RO(QRDMA_REG_CAP_MAX_MCAST_QP_ATTACH, "CAP_MAX_MCAST_QP_ATTACH"),

    RO_LIVE(QRDMA_REG_PORT_STATUS, "PORT_STATUS", reg_read_port_status),
    RO(QRDMA_REG_PORT_SPEED, "PORT_SPEED"),
    RO(QRDMA_REG_HOST_GID_COUNT, "HOST_GID_COUNT"),
    RO(QRDMA_REG_HOST_GID(0) + 0, "HOST_GID0_0"),
    RO(QRDMA_REG_HOST_GID(0) + 4, "HOST_GID0_1"),
    RO(QRDMA_REG_HOST_GID(0) + 8, "HOST_GID0_2"),
    RO(QRDMA_REG_HOST_GID(0) + 12, "HOST_GID0_3"),
    RO(QRDMA_REG_HOST_GID(1) + 0, "HOST_GID1_0"),
    RO(QRDMA_REG_HOST_GID(1) + 4, "HOST_GID1_1"),
    RO(QRDMA_REG_HOST_GID(1) + 8, "HOST_GID1_2"),
    RO(QRDMA_REG_HOST_GID(1) + 12, "HOST_GID1_3"),
    RO(QRDMA_REG_HOST_GID(2) + 0, "HOST_GID2_0"),
    RO(QRDMA_REG_HOST_GID(2) + 4, "HOST_GID2_1"),
    RO(QRDMA_REG_HOST_GID(2) + 8, "HOST_GID2_2"),
    RO(QRDMA_REG_HOST_GID(2) + 12, "HOST_GID2_3"),
    RO(QRDMA_REG_HOST_GID(3) + 0, "HOST_GID3_0"),
    RO(QRDMA_REG_HOST_GID(3) + 4, "HOST_GID3_1"),
    RO(QRDMA_REG_HOST_GID(3) + 8, "HOST_GID3_2"),
    RO(QRDMA_REG_HOST_GID(3) + 12, "HOST_GID3_3"),
    RO(QRDMA_REG_HOST_GID(4) + 0, "HOST_GID4_0"),
    RO(QRDMA_REG_HOST_GID(4) + 4, "HOST_GID4_1"),
    RO(QRDMA_REG_HOST_GID(4) + 8, "HOST_GID4_2"),
    RO(QRDMA_REG_HOST_GID(4) + 12, "HOST_GID4_3"),
    RO(QRDMA_REG_HOST_GID(5) + 0, "HOST_GID5_0"),
    RO(QRDMA_REG_HOST_GID(5) + 4, "HOST_GID5_1"),
    RO(QRDMA_REG_HOST_GID(5) + 8, "HOST_GID5_2"),
    RO(QRDMA_REG_HOST_GID(5) + 12, "HOST_GID5_3"),
    RO(QRDMA_REG_HOST_GID(6) + 0, "HOST_GID6_0"),
    RO(QRDMA_REG_HOST_GID(6) + 4, "HOST_GID6_1"),
    RO(QRDMA_REG_HOST_GID(6) + 8, "HOST_GID6_2"),
    RO(QRDMA_REG_HOST_GID(6) + 12, "HOST_GID6_3"),
    RO(QRDMA_REG_HOST_GID(7) + 0, "HOST_GID7_0"),
    RO(QRDMA_REG_HOST_GID(7) + 4, "HOST_GID7_1"),
    RO(QRDMA_REG_HOST_GID(7) + 8, "HOST_GID7_2"),
    RO(QRDMA_REG_HOST_GID(7) + 12, "HOST_GID7_3"),
};
_Static_assert(QRDMA_HOST_GIDS_MAX == 8 &&
               QRDMA_HOST_GIDS_MAX == QRDMA_BE_PORT_MAX_GIDS,
               "one HOST_GID row per host GID");

#undef RO
#undef RO_LIVE
#undef RW

static uint32_t *storage_file(struct qrdma_core *core, uint32_t offset)
{
    return &core->regs[offset / 4];
}

static uint32_t *storage_lan(struct qrdma_core *core, uint32_t offset)
{
    uint32_t idx = (offset - QRDMA_REG_LAN_BASE) / 4;

    /* Counters and live registers have read hooks; only these are stored. */
    return idx < QRDMA_LAN_NUM_REGS ? &core->lan.regs[idx] : NULL;
}

/*
 * BAR0 decoding: the register file and the 4 KB blocks above it. A block
 * without a table is reserved for a later interface version.
 */
static const struct qrdma_reg_block {
    uint32_t base;
    uint32_t size;
    const char *name;
    const struct qrdma_reg_desc *table;
    uint32_t *(*storage)(struct qrdma_core *core, uint32_t offset);
} qrdma_reg_blocks[] = {
    { 0, QRDMA_REG_FILE_END, "register file", qrdma_reg_table, storage_file },
    { QRDMA_REG_CQP_BASE, QRDMA_REG_BLOCK_SIZE, "CQP", qrdma_cqp_reg_table,
      NULL },
    { QRDMA_REG_HMC_BASE, QRDMA_REG_BLOCK_SIZE, "HMC", qrdma_hmc_reg_table,
      NULL },
    { QRDMA_REG_INTR_BASE, QRDMA_REG_BLOCK_SIZE, "interrupt",
      qrdma_intr_reg_table, NULL },
    { QRDMA_REG_LAN_BASE, QRDMA_REG_BLOCK_SIZE, "LAN", qrdma_lan_reg_table,
      storage_lan },
    { QRDMA_REG_STATS_BASE, QRDMA_REG_BLOCK_SIZE, "counter",
      qrdma_stats_reg_table, NULL },
};

/* Firmware version reported by this model: 0.1.0. */
#define QRDMA_MODEL_FW_VERSION ((0u << QRDMA_FW_VERSION_MAJOR_SHIFT) | \
                                (1u << QRDMA_FW_VERSION_MINOR_SHIFT) | 0u)

void qrdma_guest_error(struct qrdma_core *core, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    core->stats.guest_errors++;
    core->env.guest_error(core->env.opaque, msg);
}

/* The register file's storage, for reset and hooks. */
bool qrdma_ring_in_ram(struct qrdma_core *core, uint64_t addr, uint64_t len)
{
    uint8_t probe;

    return !(addr & 4095) && len &&
           !core->env.dma_read(core->env.opaque, addr, &probe, 1) &&
           !core->env.dma_read(core->env.opaque, addr + len - 1, &probe, 1);
}

static uint32_t *reg(struct qrdma_core *core, uint32_t offset)
{
    return &core->regs[offset / 4];
}

void qrdma_core_config_defaults(struct qrdma_core_config *cfg)
{
    static const uint8_t default_mac[6] = {
        0x52, 0x54, 0x00, 0x12, 0x34, 0x56
    };

    memset(cfg, 0, sizeof(*cfg));
    cfg->backend = QRDMA_BACKEND_SW;
    memcpy(cfg->mac, default_mac, sizeof(cfg->mac));
    snprintf(cfg->board_id, sizeof(cfg->board_id), "%s",
             QRDMA_DEFAULT_BOARD_ID);
    cfg->max_qp = QRDMA_DEFAULT_MAX_QP;
    cfg->max_cq = QRDMA_DEFAULT_MAX_CQ;
    cfg->max_mr = QRDMA_DEFAULT_MAX_MR;
    cfg->max_pd = QRDMA_DEFAULT_MAX_PD;
    cfg->max_srq = QRDMA_DEFAULT_MAX_SRQ;
    cfg->max_ah = QRDMA_DEFAULT_MAX_AH;
    cfg->max_qp_wr = QRDMA_DEFAULT_MAX_QP_WR;
    cfg->max_srq_wr = QRDMA_DEFAULT_MAX_SRQ_WR;
    cfg->max_cqe = QRDMA_DEFAULT_MAX_CQE;
    cfg->max_send_sge = QRDMA_DEFAULT_MAX_SEND_SGE;
    cfg->max_recv_sge = QRDMA_DEFAULT_MAX_RECV_SGE;
    cfg->max_inline = QRDMA_DEFAULT_MAX_INLINE;
    cfg->max_rd_atom = QRDMA_DEFAULT_MAX_RD_ATOM;
    cfg->max_mtu = QRDMA_DEFAULT_MAX_MTU;
    cfg->gid_table_len = QRDMA_DEFAULT_GID_TABLE_LEN;
    cfg->db_pages = QRDMA_DEFAULT_DB_PAGES;
    cfg->msix_vectors = QRDMA_DEFAULT_MSIX_VECTORS;
    cfg->max_ceq = QRDMA_DEFAULT_MAX_CEQ;
    cfg->max_mcast_grp = QRDMA_DEFAULT_MAX_MCAST_GRP;
    cfg->max_mcast_qp_attach = QRDMA_DEFAULT_MAX_MCAST_QP_ATTACH;
    cfg->link_speed_mbps = QRDMA_DEFAULT_LINK_SPEED_MBPS;
    cfg->pe_ready_delay_us = QRDMA_DEFAULT_PE_READY_DELAY_US;
    cfg->stall_floor_ms = QRDMA_DEFAULT_STALL_FLOOR_MS;
    cfg->cqp_stall_opcode = QRDMA_CQP_STALL_NEVER;
}

static bool is_pow2(uint32_t v)
{
    return v && !(v & (v - 1));
}

/*
 * The backends by enum qrdma_core_backend: what backend= names, and why
 * one that is not in this build cannot be had.
 */
#define QRDMA_BACKEND_COUNT 2u
static const struct {
    const char *name;
    const struct qrdma_be_ops *ops;
    const char *missing;
} backends[QRDMA_BACKEND_COUNT] = {
    [QRDMA_BACKEND_SW] = { "sw", &qrdma_be_sw_ops, NULL },
#ifdef QRDMA_HAVE_VERBS
    [QRDMA_BACKEND_VERBS] = { "verbs", &qrdma_be_verbs_ops, NULL },
#else
    [QRDMA_BACKEND_VERBS] = {
        "verbs", NULL,
        "the host-verbs backend is not built into this program (it needs "
        "libibverbs at build time); use backend=sw"
    },
#endif
};

int qrdma_core_backend_from_name(const char *name)
{
    unsigned i;

    for (i = 0; i < QRDMA_BACKEND_COUNT; i++) {
        if (!strcmp(name, backends[i].name)) {
            return (int)i;
        }
    }
    return -1;
}

int qrdma_core_init(struct qrdma_core *core,
                    const struct qrdma_core_config *cfg,
                    const struct qrdma_core_env *env, char *err, size_t err_len)
{
    /*
     * Each limit must fit what the descriptor fields of later interfaces hold.
     */
    static const struct {
        const char *name;
        size_t offset;
        uint32_t min, max;
    } limits[] = {
#define LIMIT(field, lo, hi) \
    { #field, offsetof(struct qrdma_core_config, field), lo, hi }
        LIMIT(max_qp, 2, 1u << 18),
        LIMIT(max_cq, 2, 1u << 18),
        LIMIT(max_mr, 1, 1u << 24),
        LIMIT(max_pd, 1, 1u << 18),
        LIMIT(max_srq, 0, 1u << 18),
        LIMIT(max_ah, 0, 1u << 20),
        LIMIT(max_qp_wr, 2, 1u << 15),
        LIMIT(max_srq_wr, 0, 1u << 15),
        /*
         * The largest CQ (2^n <= max_cqe + 1) must fit QRDMA_QUEUE_MAX_BYTES.
         */
        LIMIT(max_cqe, 2, QRDMA_QUEUE_MAX_BYTES / QRDMA_CQE_SIZE),
        LIMIT(max_send_sge, 1, QRDMA_BE_MAX_SGE),
        LIMIT(max_recv_sge, 1, QRDMA_BE_MAX_SGE),
        LIMIT(max_inline, 0, 1024),
        LIMIT(max_rd_atom, 1, 128),
        LIMIT(max_mtu, 256, 4096),
        LIMIT(gid_table_len, 1, QRDMA_GID_TABLE_MAX),
        LIMIT(db_pages, 2, 4096),
        LIMIT(msix_vectors, 1, 64),
        LIMIT(max_ceq, 1, 64),
        LIMIT(max_mcast_grp, 0, QRDMA_MCAST_GRP_MAX),
        LIMIT(max_mcast_qp_attach, 1, QRDMA_MCAST_QP_ATTACH_MAX),
        LIMIT(link_speed_mbps, 10, 800000),
        LIMIT(stall_floor_ms, 0, 600000),
        /*
         * Faults: at most half of the frames, so a test still makes progress.
         */
        LIMIT(fault.loss_ppm, 0, 500000),
        LIMIT(fault.dup_ppm, 0, 500000),
        LIMIT(fault.reorder_ppm, 0, 500000),
        LIMIT(fault.corrupt_ppm, 0, 500000),
        LIMIT(fault.delay_us, 0, 1000000),
#undef LIMIT
    };
    size_t i;
    int ret;

    for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
        uint32_t v;

        memcpy(&v, (const char *)cfg + limits[i].offset, sizeof(v));
        if (v < limits[i].min || v > limits[i].max) {
            snprintf(err, err_len, "%s=%u is outside %u..%u", limits[i].name, v,
                     limits[i].min, limits[i].max);
            return -EINVAL;
        }
    }
    if (!is_pow2(cfg->max_mtu)) {
        snprintf(err, err_len, "max_mtu=%u is not a power of two",
                 cfg->max_mtu);
        return -EINVAL;
    }
    if (!is_pow2(cfg->db_pages)) {
        /*
         * The doorbell BAR is db_pages * 4 KB and a BAR must be a power of two.
         */
        snprintf(err, err_len, "db_pages=%u is not a power of two",
                 cfg->db_pages);
        return -EINVAL;
    }
    if (cfg->cqp_stall_opcode != QRDMA_CQP_STALL_NEVER &&
        cfg->cqp_stall_opcode > QRDMA_CQP_WQE_OPCODE_MASK) {
        snprintf(err, err_len, "cqp_stall_opcode=%u is not an opcode (0..%u)",
                 cfg->cqp_stall_opcode, (unsigned)QRDMA_CQP_WQE_OPCODE_MASK);
        return -EINVAL;
    }
    if (cfg->mac[0] & 1) {
        snprintf(err, err_len, "mac is a multicast address");
        return -EINVAL;
    }
    if (!env->guest_error || !env->schedule_pe_ready || !env->link_up ||
        !env->dma_read || !env->dma_write || !env->msix_notify ||
        !env->send_frame || !env->kick || !env->rx_ready || !env->now_ns ||
        !env->timer_mod || !env->dma_map_read != !env->dma_unmap_read) {
        snprintf(err, err_len, "incomplete core environment");
        return -EINVAL;
    }

    if (!cfg->backend_ops && (cfg->backend >= QRDMA_BACKEND_COUNT ||
                              !backends[cfg->backend].ops)) {
        snprintf(err, err_len, "backend=%s: %s",
                 cfg->backend < QRDMA_BACKEND_COUNT
                     ? backends[cfg->backend].name
                     : "?",
                 cfg->backend < QRDMA_BACKEND_COUNT
                     ? backends[cfg->backend].missing
                     : "no such backend");
        return -ENOTSUP;
    }

    memset(core, 0, sizeof(*core));
    core->cfg = *cfg;
    core->cfg.board_id[QRDMA_BOARD_ID_LEN - 1] = '\0';
    core->env = *env;
    ret = qrdma_dp_init(core,
                        cfg->backend_ops ? cfg->backend_ops
                                         : backends[cfg->backend].ops,
                        err, err_len);
    if (ret) {
        memset(core, 0, sizeof(*core));
        return ret;
    }
    return 0;
}

/*
 * CAP_FEATURES: what the data path carries end to end, qrdma_dp.c over
 * this device's backend; the optional features only if the backend has them.
 */
static uint32_t core_features(const struct qrdma_core *core)
{
    const struct qrdma_be_ops *ops = core->dp.ops;
    uint32_t carries = ops ? ops->carries : 0;

    /* A backend that says per instance, and has none now, carries nothing. */
    if (ops && ops->carried) {
        carries &= core->dp.be ? ops->carried(core->dp.be) : 0;
    }
    uint32_t f = QRDMA_FEATURE_RC | QRDMA_FEATURE_UD | QRDMA_FEATURE_UC |
                 QRDMA_FEATURE_ATOMIC | QRDMA_FEATURE_WIRE_IDS |
                 QRDMA_FEATURE_ANNOUNCE;

    if (carries & QRDMA_BE_CARRIES_SRQ) {
        f |= QRDMA_FEATURE_SRQ;
    }
    if (carries & QRDMA_BE_CARRIES_FAST_REG) {
        f |= QRDMA_FEATURE_FAST_REG;
    }
    if (carries & QRDMA_BE_CARRIES_MW) {
        f |= QRDMA_FEATURE_MW;
    }
    if (carries & QRDMA_BE_CARRIES_STATS) {
        f |= QRDMA_FEATURE_STATS;
    }
    if (carries & QRDMA_BE_CARRIES_GSI) {
        f |= QRDMA_FEATURE_GSI;
    }
    if (qrdma_dp_host_port(core)) {
        f |= QRDMA_FEATURE_HOST_GIDS;
    }
    return f;
}

static void core_reset_now(struct qrdma_core *core)
{
    const struct qrdma_core_config *cfg = &core->cfg;
    const uint64_t max_mr_size = QRDMA_CORE_MAX_MR_SIZE;
    unsigned i;

    memset(core->regs, 0, sizeof(core->regs));
    core->pe_ready = false;
    core->stats.resets++;
    /* Interrupts not yet delivered die with the state that raised them. */
    core->guard.irq_pending = 0;

    *reg(core, QRDMA_REG_SIGNATURE) = QRDMA_SIGNATURE;
    *reg(core, QRDMA_REG_IF_VERSION) = (QRDMA_IF_VERSION_MAJOR
                                        << QRDMA_IF_VERSION_MAJOR_SHIFT) |
                                       QRDMA_IF_VERSION_MINOR;
    *reg(core, QRDMA_REG_HW_REV) = QRDMA_PCI_REVISION;
    *reg(core, QRDMA_REG_FW_VERSION) = QRDMA_MODEL_FW_VERSION;
    *reg(core, QRDMA_REG_MAC_LOW) = cfg->mac[0] | cfg->mac[1] << 8 |
                                    cfg->mac[2] << 16 |
                                    (uint32_t)cfg->mac[3] << 24;
    *reg(core, QRDMA_REG_MAC_HIGH) = cfg->mac[4] | cfg->mac[5] << 8;
    for (i = 0; i < QRDMA_BOARD_ID_LEN; i++) {
        *reg(core, QRDMA_REG_BOARD_ID + (i & ~3u)) |=
            (uint32_t)(uint8_t)cfg->board_id[i] << (8 * (i & 3));
    }

    *reg(core, QRDMA_REG_CAP_MAX_QP) = cfg->max_qp;
    *reg(core, QRDMA_REG_CAP_MAX_CQ) = cfg->max_cq;
    *reg(core, QRDMA_REG_CAP_MAX_MR) = cfg->max_mr;
    *reg(core, QRDMA_REG_CAP_MAX_PD) = cfg->max_pd;
    *reg(core, QRDMA_REG_CAP_MAX_SRQ) = cfg->max_srq;
    *reg(core, QRDMA_REG_CAP_MAX_AH) = cfg->max_ah;
    *reg(core, QRDMA_REG_CAP_MAX_QP_WR) = cfg->max_qp_wr;
    *reg(core, QRDMA_REG_CAP_MAX_SRQ_WR) = cfg->max_srq_wr;
    *reg(core, QRDMA_REG_CAP_MAX_CQE) = cfg->max_cqe;
    *reg(core, QRDMA_REG_CAP_MAX_SEND_SGE) = cfg->max_send_sge;
    *reg(core, QRDMA_REG_CAP_MAX_RECV_SGE) = cfg->max_recv_sge;
    *reg(core, QRDMA_REG_CAP_MAX_INLINE) = cfg->max_inline;
    *reg(core, QRDMA_REG_CAP_PAGE_SIZES) = QRDMA_CORE_PAGE_SIZES;
    *reg(core, QRDMA_REG_CAP_MAX_MR_SIZE_LO) = (uint32_t)max_mr_size;
    *reg(core, QRDMA_REG_CAP_MAX_MR_SIZE_HI) = (uint32_t)(max_mr_size >> 32);
    *reg(core, QRDMA_REG_CAP_MAX_RD_ATOM) = cfg->max_rd_atom;
    *reg(core, QRDMA_REG_CAP_MAX_RESP_RES) = cfg->max_rd_atom;
    *reg(core, QRDMA_REG_CAP_MAX_MTU) = cfg->max_mtu;
    *reg(core, QRDMA_REG_CAP_GID_TABLE_LEN) = cfg->gid_table_len;
    *reg(core, QRDMA_REG_CAP_DB_PAGES) = cfg->db_pages;
    *reg(core, QRDMA_REG_CAP_MSIX_VECTORS) = cfg->msix_vectors;
    *reg(core, QRDMA_REG_CAP_MAX_CEQ) = cfg->max_ceq;
    *reg(core, QRDMA_REG_CAP_FEATURES) = core_features(core);
    /*
     * Multicast needs a backend that delivers a group's frames (rx_mcast) and
     * room for a group.
     */
    if (core->dp.ops && core->dp.ops->rx_mcast && cfg->max_mcast_grp) {
        *reg(core, QRDMA_REG_CAP_FEATURES) |= QRDMA_FEATURE_MCAST;
        *reg(core, QRDMA_REG_CAP_MAX_MCAST_GRP) = cfg->max_mcast_grp;
        *reg(core, QRDMA_REG_CAP_MAX_MCAST_QP_ATTACH) =
            cfg->max_mcast_qp_attach;
    }
    *reg(core, QRDMA_REG_PORT_SPEED) = cfg->link_speed_mbps;

    qrdma_lan_reset(core);
    qrdma_cqp_reset(core);
    qrdma_eq_reset(core);
    /*
     * The transport's QPs, then the objects, then the layout that sized them.
     */
    qrdma_dp_reset(core);
    qrdma_obj_reset(core);
    qrdma_hmc_reset(core);
    qrdma_stats_reset(core);
    /* A backend on a host NIC: its port as it is now (PORT_SPEED, GIDs). */
    qrdma_dp_port_refresh(core);

    /* PE_STATUS stays 0 until the engine has "booted", as on the E810. */
    if (cfg->pe_ready_delay_us != QRDMA_PE_READY_NEVER) {
        core->env.schedule_pe_ready(core->env.opaque,
                                    (uint64_t)cfg->pe_ready_delay_us * 1000);
    }
}

/* ---- re-entrancy guard (struct qrdma_core_guard) ------------------------- */

static void core_enter(struct qrdma_core *core)
{
    core->guard.depth++;
}

static bool core_nested(const struct qrdma_core *core)
{
    return core->guard.depth > 1;
}

static void core_fini_now(struct qrdma_core *core)
{
    qrdma_dp_fini(core);
    qrdma_obj_reset(core);
}

/*
 * Leave an entry point. The outermost one delivers the interrupts its work
 * raised, then does the teardown or reset asked for meanwhile. Depth stays
 * 1 until the end, so whatever a callback does to the device here is itself
 * guarded: a BAR access is refused, a reset only marked. Every loop is
 * bounded: one pass per vector, and nothing marked during it adds one.
 */
static void core_exit(struct qrdma_core *core)
{
    struct qrdma_core_guard *g = &core->guard;
    bool rx_held;
    unsigned n;

    if (core_nested(core)) {
        g->depth--;
        return;
    }
    for (n = 0; n < QRDMA_MAX_VECTORS && g->irq_pending && !g->reset_pending &&
                !g->fini_pending; n++) {
        unsigned v = (unsigned)__builtin_ctzll(g->irq_pending);

        g->irq_pending &= ~(1ull << v);
        core->env.msix_notify(core->env.opaque, v);
    }
    if (g->fini_pending) {
        core_fini_now(core);
    } else if (g->reset_pending) {
        core_reset_now(core);
    }
    rx_held = g->rx_held && !g->fini_pending;
    g->irq_pending = 0;
    g->reset_pending = g->fini_pending = g->rx_held = false;
    g->depth = 0;
    /* Frames refused while busy: the embedding may hand them over now. */
    if (rx_held) {
        core->env.rx_ready(core->env.opaque);
    }
}

/* A guest access that came back in from one of the core's own callbacks. */
static void core_refuse(struct qrdma_core *core, const char *what,
                        uint64_t offset)
{
    core->stats.reentries_refused++;
    qrdma_guest_error(core,
                      "%s at 0x%" PRIx64
                      " while the device is busy with its own "
                      "work (an interrupt or DMA aimed at the device): refused",
                      what, offset);
}

void qrdma_irq_raise(struct qrdma_core *core, unsigned v)
{
    if (!core->guard.depth) {
        /* Outside any entry point (a unit test driving a block directly). */
        core->env.msix_notify(core->env.opaque, v);
        return;
    }
    core->guard.irq_pending |= 1ull << v;
}

bool qrdma_core_busy(const struct qrdma_core *core)
{
    return core->guard.depth > 0;
}

void qrdma_core_reset(struct qrdma_core *core)
{
    if (core->guard.depth) {
        core->guard.reset_pending = true;
        core->stats.resets_deferred++;
        return;
    }
    core_enter(core);
    core_reset_now(core);
    core_exit(core);
}

void qrdma_core_fini(struct qrdma_core *core)
{
    if (core->guard.depth) {
        core->guard.fini_pending = true;
        return;
    }
    core_fini_now(core);
}

void qrdma_core_pe_ready(struct qrdma_core *core)
{
    core_enter(core);
    core->pe_ready = true;
    *reg(core, QRDMA_REG_PE_STATUS) = QRDMA_PE_STATUS_READY;
    core_exit(core);
}

static uint32_t reg_read_guest_errors(struct qrdma_core *core, uint32_t offset)
{
    return core->stats.guest_errors > UINT32_MAX
               ? UINT32_MAX
               : (uint32_t)core->stats.guest_errors;
}

/*
 * The netdev's link, or with a backend on a host NIC the host port's
 * state: RDMA traffic then goes through the host port, not the netdev.
 */
static uint32_t reg_read_port_status(struct qrdma_core *core, uint32_t offset)
{
    bool up = qrdma_dp_host_port(core) ? core->dp.port.active
                                       : core->env.link_up(core->env.opaque);

    return up ? QRDMA_PORT_STATUS_LINK_UP : 0;
}

/* OBJ_COUNT(t): the register's type is its index in the row. */
static uint32_t reg_read_obj_count(struct qrdma_core *core, uint32_t offset)
{
    return qrdma_core_obj_count(core, (offset - QRDMA_REG_OBJ_COUNT(0)) / 4);
}

static void reg_write_dev_ctrl(struct qrdma_core *core, uint32_t offset,
                               uint32_t value)
{
    if (value & QRDMA_DEV_CTRL_RESET) {
        /*
         * RESET is self-clearing: the register file reset stores 0 here.
         * It is done as this write returns (core_exit), not under the
         * caller's feet.
         */
        core->guard.reset_pending = true;
    }
}

static const struct qrdma_reg_block *reg_block(uint64_t offset)
{
    size_t i;

    for (i = 0; i < sizeof(qrdma_reg_blocks) / sizeof(qrdma_reg_blocks[0]);
         i++) {
        if (offset - qrdma_reg_blocks[i].base < qrdma_reg_blocks[i].size) {
            return &qrdma_reg_blocks[i];
        }
    }
    return NULL;
}

const char *qrdma_core_reg_name(uint64_t offset)
{
    const struct qrdma_reg_block *block = reg_block(offset);

    if (!block || !block->table || (offset & 3)) {
        return NULL;
    }
    return block->table[(offset - block->base) / 4].name;
}

/*
 * The one gate for BAR0 accesses: returns the register's descriptor, or
 * NULL after logging why the access is refused.
 */
static const struct qrdma_reg_desc *reg_lookup(
    struct qrdma_core *core, const char *what, uint64_t offset, unsigned size,
    const struct qrdma_reg_block **blockp)
{
    const struct qrdma_reg_block *block;
    const struct qrdma_reg_desc *desc;

    if (size != 4) {
        qrdma_guest_error(core,
                          "BAR0 %s of %u bytes at 0x%" PRIx64
                          ": registers take 32-bit accesses",
                          what, size, offset);
        return NULL;
    }
    if (offset & 3) {
        qrdma_guest_error(core, "BAR0 %s at unaligned offset 0x%" PRIx64, what,
                          offset);
        return NULL;
    }
    if (offset >= QRDMA_BAR_REGS_SIZE) {
        qrdma_guest_error(core,
                          "BAR0 %s at 0x%" PRIx64 " beyond the register BAR",
                          what, offset);
        return NULL;
    }
    block = reg_block(offset);
    if (block && !block->table) {
        qrdma_guest_error(core,
                          "BAR0 %s at 0x%" PRIx64
                          ": the %s register block is not "
                          "implemented by interface %u.%u",
                          what, offset, block->name, QRDMA_IF_VERSION_MAJOR,
                          QRDMA_IF_VERSION_MINOR);
        return NULL;
    }
    desc = block ? &block->table[(offset - block->base) / 4] : NULL;
    if (!desc || !desc->name) {
        qrdma_guest_error(core, "BAR0 %s at 0x%" PRIx64 ": no register there",
                          what, offset);
        return NULL;
    }
    *blockp = block;
    return desc;
}

static uint32_t reg_read(struct qrdma_core *core, uint64_t offset,
                         unsigned size)
{
    const struct qrdma_reg_block *block;
    const struct qrdma_reg_desc *desc;

    core->stats.reg_reads++;
    desc = reg_lookup(core, "read", offset, size, &block);
    if (!desc) {
        return 0;
    }
    return desc->read ? desc->read(core, (uint32_t)offset)
                      : *block->storage(core, (uint32_t)offset);
}

uint32_t qrdma_core_reg_read(struct qrdma_core *core, uint64_t offset,
                             unsigned size)
{
    uint32_t value = 0;

    core_enter(core);
    if (core_nested(core)) {
        core_refuse(core, "BAR0 read", offset);
    } else {
        value = reg_read(core, offset, size);
    }
    core_exit(core);
    return value;
}

static void reg_write(struct qrdma_core *core, uint64_t offset, unsigned size,
                      uint64_t value64)
{
    const struct qrdma_reg_block *block;
    const struct qrdma_reg_desc *desc;
    uint32_t value = (uint32_t)value64;

    core->stats.reg_writes++;
    desc = reg_lookup(core, "write", offset, size, &block);
    if (!desc) {
        return;
    }
    if (desc->access == QRDMA_REG_RO) {
        qrdma_guest_error(core, "write of 0x%x to read-only register %s", value,
                          desc->name);
        return;
    }
    if (value & ~desc->write_mask) {
        qrdma_guest_error(
            core, "write of 0x%x to %s sets reserved bits 0x%x; ignored", value,
            desc->name, value & ~desc->write_mask);
        return;
    }
    if (desc->write) {
        desc->write(core, (uint32_t)offset, value);
    } else {
        *block->storage(core, (uint32_t)offset) = value;
    }
}

void qrdma_core_reg_write(struct qrdma_core *core, uint64_t offset,
                          unsigned size, uint64_t value)
{
    core_enter(core);
    if (!core_nested(core)) {
        reg_write(core, offset, size, value);
    } else if (offset == QRDMA_REG_DEV_CTRL && size == 4 &&
               (uint32_t)value == QRDMA_DEV_CTRL_RESET) {
        /* A reset is honoured from anywhere, after the work in progress. */
        core->stats.resets_deferred++;
        core->guard.reset_pending = true;
    } else {
        core_refuse(core, "BAR0 write", offset);
    }
    core_exit(core);
}

void qrdma_core_run(struct qrdma_core *core, unsigned what)
{
    core_enter(core);
    if (core_nested(core)) {
        /* Not under the work in progress: ask again for later. */
        core->env.kick(core->env.opaque, what);
        core_exit(core);
        return;
    }
    if (what & QRDMA_WORK_CQP) {
        qrdma_cqp_process(core);
    }
    if (what & QRDMA_WORK_LAN_TX) {
        qrdma_lan_tx_process(core);
    }
    if (what & QRDMA_WORK_DP) {
        qrdma_dp_process(core);
    }
    if (what & QRDMA_WORK_ANNOUNCE) {
        qrdma_aeq_post(core, 0, 0, QRDMA_AE_ANNOUNCE, 0);
    }
    core_exit(core);
}

void qrdma_core_announce(struct qrdma_core *core)
{
    core->env.kick(core->env.opaque, QRDMA_WORK_ANNOUNCE);
}

/* ---- transmit backpressure ----------------------------------------------- */

bool qrdma_tx_frame(struct qrdma_core *core, const uint8_t *frame, size_t len,
                    const struct iovec *iov, unsigned n)
{
    int ret = iov ? core->env.send_frame_iov(core->env.opaque, iov, n)
                  : core->env.send_frame(core->env.opaque, frame, len);

    if (ret == QRDMA_TX_QUEUED) {
        core->tx_queued++;
        core->stats.tx_queued++;
    }
    return qrdma_tx_blocked(core);
}

/*
 * Only a count and a kick: the embedding may call this from inside the
 * core's own calls (a netdev purged at a reset asked for by an interrupt),
 * and the work it unblocks runs from the kick, under the guard.
 */
void qrdma_core_tx_ready(struct qrdma_core *core)
{
    if (!core->tx_queued || --core->tx_queued) {
        return;
    }
    core->env.kick(core->env.opaque, QRDMA_WORK_LAN_TX | QRDMA_WORK_DP);
}

void qrdma_core_timer(struct qrdma_core *core)
{
    core_enter(core);
    if (core_nested(core)) {
        core->env.kick(core->env.opaque, QRDMA_WORK_DP);
    } else {
        core->dp.deadline = UINT64_MAX;
        qrdma_dp_process(core);
    }
    core_exit(core);
}

uint32_t qrdma_core_db_read(struct qrdma_core *core, uint64_t offset,
                            unsigned size)
{
    core_enter(core);
    qrdma_guest_error(core,
                      "doorbell read of %u bytes at page %" PRIu64
                      " offset 0x%" PRIx64 ": doorbells are write-only",
                      size, offset / QRDMA_DB_PAGE_SIZE,
                      offset % QRDMA_DB_PAGE_SIZE);
    core_exit(core);
    return 0;
}

static void db_write(struct qrdma_core *core, uint64_t offset, unsigned size,
                     uint64_t value)
{
    uint64_t page = offset / QRDMA_DB_PAGE_SIZE;

    core->stats.doorbells++;
    if (size != 4 || (offset & 3)) {
        qrdma_guest_error(core, "doorbell write of %u bytes at 0x%" PRIx64
                    ": doorbells take aligned 32-bit writes", size, offset);
        return;
    }
    if (page >= core->cfg.db_pages) {
        qrdma_guest_error(core,
                          "doorbell write at 0x%" PRIx64
                          " beyond the doorbell BAR",
                          offset);
        return;
    }
    if (!core->pe_ready) {
        qrdma_guest_error(core,
                          "doorbell 0x%x on page %" PRIu64
                          " before the engine is ready",
                          (uint32_t)value, page);
        return;
    }
    if (offset % QRDMA_DB_PAGE_SIZE == QRDMA_DB_SQ) {
        core->stats.sq_doorbells++;
    }
    qrdma_dp_doorbell(core, page, offset % QRDMA_DB_PAGE_SIZE, value);
}

void qrdma_core_db_write(struct qrdma_core *core, uint64_t offset,
                         unsigned size, uint64_t value)
{
    core_enter(core);
    if (core_nested(core)) {
        core_refuse(core, "doorbell write", offset);
    } else {
        db_write(core, offset, size, value);
    }
    core_exit(core);
}

void qrdma_core_db_notify(struct qrdma_core *core, uint32_t page)
{
    core_enter(core);
    if (core_nested(core)) {
        core_refuse(core, "SQ doorbell notification", page);
    } else if (page >= core->cfg.db_pages) {
        /* the embedding watches only the BAR's pages */
        qrdma_guest_error(core, "SQ doorbell notification of page %u, "
                          "beyond the doorbell BAR", page);
    } else if (!core->pe_ready) {
        /*
         * The embedding drops notifications at a reset (they were for the
         * device before it): this one was rung after it, too early.
         */
        qrdma_guest_error(core, "SQ doorbell on page %u before the engine "
                          "is ready", page);
    } else {
        core->stats.sq_notifications++;
        qrdma_dp_sq_notify(core, page);
    }
    core_exit(core);
}

/* ---- LAN receive (qrdma_lan.c), inside the guard ------------------------- */

bool qrdma_core_lan_can_receive(struct qrdma_core *core)
{
    if (core->guard.depth) {
        /* The embedding queues the frame: ask for it when this call ends. */
        core->guard.rx_held = true;
        return false;
    }
    return qrdma_lan_can_receive(core);
}

size_t qrdma_core_lan_receive(struct qrdma_core *core, const uint8_t *frame,
                              size_t len)
{
    size_t taken = 0;

    core_enter(core);
    if (core_nested(core)) {
        /* Held by the embedding (0 taken) and asked for again by rx_ready. */
        core->stats.reentries_refused++;
        core->guard.rx_held = true;
    } else {
        taken = qrdma_lan_receive(core, frame, len);
    }
    core_exit(core);
    return taken;
}
