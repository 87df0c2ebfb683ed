/*
 * Private to the device core's files: register descriptors, the guest
 * error helper, and the hooks each block of the core provides.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_CORE_INT_H
#define QRDMA_CORE_INT_H

#include "qrdma_core.h"

enum qrdma_reg_access {
    QRDMA_REG_RO,
    QRDMA_REG_RW,
};

/*
 * One BAR0 register. Without a read hook the value is the block's
 * storage; without a write hook a valid write is stored there. A write
 * hook gets only values that passed the write mask.
 */
struct qrdma_reg_desc {
    const char *name;
    enum qrdma_reg_access access;
    uint32_t write_mask;        /* RW: the bits a write may set */
    uint32_t (*read)(struct qrdma_core *core, uint32_t offset);
    void (*write)(struct qrdma_core *core, uint32_t offset, uint32_t value);
};

#define QRDMA_REG_RO_DESC(off, base, nm) \
    [((off) - (base)) / 4] = { .name = (nm), .access = QRDMA_REG_RO }
#define QRDMA_REG_RO_LIVE_DESC(off, base, nm, fn) \
    [((off) - (base)) / 4] = { .name = (nm), .access = QRDMA_REG_RO, .read = (fn) }
#define QRDMA_REG_RW_DESC(off, base, nm, mask, fn) \
    [((off) - (base)) / 4] = { .name = (nm), .access = QRDMA_REG_RW, \
                               .write_mask = (mask), .write = (fn) }
#define QRDMA_REG_RW_LIVE_DESC(off, base, nm, mask, rd, wr) \
    [((off) - (base)) / 4] = { .name = (nm), .access = QRDMA_REG_RW, \
                               .write_mask = (mask), .read = (rd), .write = (wr) }

/* Little-endian qwords of guest descriptors, byte by byte (no alignment). */
static inline uint64_t qrdma_ld_le64(const uint8_t *p)
{
    uint64_t v = 0;
    int i;

    for (i = 7; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

static inline void qrdma_st_le64(uint8_t *p, uint64_t v)
{
    int i;

    for (i = 0; i < 8; i++) {
        p[i] = v >> (8 * i);
    }
}

void qrdma_guest_error(struct qrdma_core *core, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Is a ring of len bytes at addr 4 KB aligned with both ends in guest RAM?
 * Checked when a ring is created; every later access is checked again.
 */
bool qrdma_ring_in_ram(struct qrdma_core *core, uint64_t addr, uint64_t len);

/* What a CQP command returns: the completion's status and return value. */
struct cqp_result {
    enum qrdma_cqp_major major;
    uint16_t minor;
    uint64_t retval;
};

/* qrdma_cqp.c */
extern const struct qrdma_reg_desc qrdma_cqp_reg_table[QRDMA_REG_BLOCK_SIZE / 4];
void qrdma_cqp_reset(struct qrdma_core *core);
void qrdma_cqp_process(struct qrdma_core *core);

/* qrdma_eq.c */
extern const struct qrdma_reg_desc qrdma_intr_reg_table[QRDMA_REG_BLOCK_SIZE / 4];
void qrdma_eq_reset(struct qrdma_core *core);
/* Write an event; false (counted or logged) if the queue is absent or full. */
bool qrdma_ceq_post(struct qrdma_core *core, unsigned ceq_id, uint64_t cq_ctx);
bool qrdma_aeq_post(struct qrdma_core *core, uint64_t ctx, uint32_t id, uint16_t code,
                    uint8_t source);
struct cqp_result qrdma_cqp_create_ceq(struct qrdma_core *core, const uint64_t *arg);
struct cqp_result qrdma_cqp_destroy_ceq(struct qrdma_core *core, const uint64_t *arg);
struct cqp_result qrdma_cqp_create_aeq(struct qrdma_core *core, const uint64_t *arg);
struct cqp_result qrdma_cqp_destroy_aeq(struct qrdma_core *core, const uint64_t *arg);

/* qrdma_lan.c */
extern const struct qrdma_reg_desc qrdma_lan_reg_table[QRDMA_REG_BLOCK_SIZE / 4];
void qrdma_lan_reset(struct qrdma_core *core);
void qrdma_lan_tx_process(struct qrdma_core *core);

/* qrdma_hmc.c: registers, reset, and the HMC commands of qrdma_cqp_ops[] */
extern const struct qrdma_reg_desc qrdma_hmc_reg_table[QRDMA_REG_BLOCK_SIZE / 4];
void qrdma_hmc_reset(struct qrdma_core *core);
struct cqp_result qrdma_hmc_update_pe_sds(struct qrdma_core *core, const uint64_t *arg);
struct cqp_result qrdma_hmc_query_fpm_val(struct qrdma_core *core, const uint64_t *arg);
struct cqp_result qrdma_hmc_commit_fpm_val(struct qrdma_core *core, const uint64_t *arg);

#endif /* QRDMA_CORE_INT_H */
