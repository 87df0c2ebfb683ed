/*
 * qrdma device core: event queues and interrupts. CEQs and the AEQ (rings
 * the device writes by VALID polarity), their CQP commands, the consumed-
 * entry registers that keep the device from overwriting unread events, and
 * the E810-style interrupt registers (CEQCTL, AEQCTL, DYN_CTL). See
 * docs/hw-spec.md, "Event queues and interrupts".
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qrdma_core_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define CEQE_SIZE 8u
#define AEQE_SIZE 16u

/* ---- interrupts ---------------------------------------------------------- */

static void vector_fire(struct qrdma_core *core, unsigned v)
{
    struct qrdma_intr *in = &core->intr;

    if (!(in->pending & (1ull << v)) ||
        !(in->dyn_ctl[v] & QRDMA_DYN_CTL_INTENA)) {
        return;
    }
    /* One interrupt per enable: the driver re-enables after handling. */
    in->dyn_ctl[v] &= ~QRDMA_DYN_CTL_INTENA;
    in->pending &= ~(1ull << v);
    qrdma_irq_raise(core, v);
}

/* An event was written to a queue routed by ctl (CEQCTL or AEQCTL). */
static void eq_signal(struct qrdma_core *core, uint32_t ctl)
{
    unsigned v = ctl & QRDMA_EQCTL_MSIX_MASK;

    if (!(ctl & QRDMA_EQCTL_CAUSE_ENA)) {
        return;
    }
    core->intr.pending |= 1ull << v;
    vector_fire(core, v);
}

/* ---- writing events ------------------------------------------------------ */

/* Write one entry (len bytes, VALID in its last qword) at the tail of eq. */
static bool eq_write(struct qrdma_core *core, struct qrdma_eq *eq,
                     const char *name, uint8_t *entry, unsigned len)
{
    uint64_t addr = eq->addr + (uint64_t)eq->tail * len;

    if (!eq->avail) {
        core->intr.overflows++;
        qrdma_guest_error(
            core,
            "%s full: event dropped (the driver returns entries with "
            "its ALLOC register)",
            name);
        return false;
    }
    /* Body first, then the qword holding VALID: the driver polls on it. */
    if ((len > 8 &&
         core->env.dma_write(core->env.opaque, addr, entry, len - 8)) ||
        core->env.dma_write(core->env.opaque, addr + len - 8, entry + len - 8,
                            8)) {
        qrdma_guest_error(core, "%s entry %u at 0x%" PRIx64 " is not guest RAM",
                          name, eq->tail, addr);
        return false;
    }
    eq->avail--;
    eq->tail = (eq->tail + 1) & (eq->len - 1);
    if (!eq->tail) {
        eq->valid = !eq->valid;
    }
    return true;
}

bool qrdma_ceq_post(struct qrdma_core *core, unsigned ceq_id, uint64_t cq_ctx)
{
    struct qrdma_eq *eq;
    uint8_t e[CEQE_SIZE];
    char name[24];

    if (ceq_id >= core->cfg.max_ceq || !core->ceq[ceq_id].created) {
        return false;
    }
    eq = &core->ceq[ceq_id];
    qrdma_st_le64(e, (cq_ctx & QRDMA_CEQE_CQ_CTX_MASK) |
                         (eq->valid ? QRDMA_CEQE_VALID : 0));
    snprintf(name, sizeof(name), "CEQ %u", ceq_id);
    if (!eq_write(core, eq, name, e, sizeof(e))) {
        return false;
    }
    qrdma_trace(core, QRDMA_TRACE_CEQ_POST, ceq_id, 0, 0, cq_ctx, NULL, NULL);
    eq_signal(core, core->intr.ceqctl[ceq_id]);
    return true;
}

bool qrdma_aeq_post(struct qrdma_core *core, uint64_t ctx, uint32_t id,
                    uint16_t code, uint8_t source)
{
    struct qrdma_eq *eq = &core->aeq;
    uint8_t e[AEQE_SIZE];

    if (!eq->created) {
        return false;
    }
    qrdma_st_le64(e, ctx);
    qrdma_st_le64(e + 8, id | (uint64_t)code << QRDMA_AEQE_CODE_SHIFT |
                         (uint64_t)(source & 0xf) << QRDMA_AEQE_SOURCE_SHIFT |
                         (eq->valid ? QRDMA_AEQE_VALID : 0));
    if (!eq_write(core, eq, "AEQ", e, sizeof(e))) {
        return false;
    }
    qrdma_trace(core, QRDMA_TRACE_AEQ_POST, id, code, source, ctx, NULL, NULL);
    eq_signal(core, core->intr.aeqctl);
    return true;
}

/* ---- CQP commands -------------------------------------------------------- */

static struct cqp_result eq_create(struct qrdma_core *core, struct qrdma_eq *eq,
                                   const uint64_t *arg, unsigned entry_size)
{
    unsigned log2 = (arg[0] & QRDMA_EQ_SIZE_MASK) >> QRDMA_EQ_SIZE_SHIFT;

    if (eq->created) {
        return (struct cqp_result){ .major = QRDMA_CQP_ERR_STATE };
    }
    if (log2 < QRDMA_EQ_SIZE_LOG2_MIN || log2 > QRDMA_EQ_SIZE_LOG2_MAX) {
        return (struct cqp_result){ .major = QRDMA_CQP_ERR_INVALID_ARG,
                                    .minor = 0 };
    }
    if (!qrdma_ring_in_ram(core, arg[1], (uint64_t)entry_size << log2)) {
        return (struct cqp_result){ .major = QRDMA_CQP_ERR_INVALID_ARG,
                                    .minor = 1 };
    }
    eq->created = true;
    eq->addr = arg[1];
    eq->len = 1u << log2;
    eq->tail = 0;
    eq->valid = true;
    eq->avail = eq->len;
    return (struct cqp_result){ 0 };
}

struct cqp_result qrdma_cqp_create_ceq(struct qrdma_core *core,
                                       const uint64_t *arg)
{
    uint32_t id = arg[0] & QRDMA_EQ_ID_MASK;

    if (arg[0] & ~(QRDMA_EQ_ID_MASK | QRDMA_EQ_SIZE_MASK) ||
        id >= core->cfg.max_ceq) {
        return (struct cqp_result){ .major = QRDMA_CQP_ERR_INVALID_ARG,
                                    .minor = 0 };
    }
    return eq_create(core, &core->ceq[id], arg, CEQE_SIZE);
}

struct cqp_result qrdma_cqp_destroy_ceq(struct qrdma_core *core,
                                        const uint64_t *arg)
{
    uint32_t id = arg[0] & QRDMA_EQ_ID_MASK;

    if (arg[0] & ~QRDMA_EQ_ID_MASK || id >= core->cfg.max_ceq) {
        return (struct cqp_result){ .major = QRDMA_CQP_ERR_INVALID_ARG,
                                    .minor = 0 };
    }
    if (!core->ceq[id].created) {
        return (struct cqp_result){ .major = QRDMA_CQP_ERR_STATE };
    }
    memset(&core->ceq[id], 0, sizeof(core->ceq[id]));
    return (struct cqp_result){ 0 };
}

struct cqp_result qrdma_cqp_create_aeq(struct qrdma_core *core,
                                       const uint64_t *arg)
{
    if (arg[0] & ~QRDMA_EQ_SIZE_MASK) {
        return (struct cqp_result){ .major = QRDMA_CQP_ERR_INVALID_ARG,
                                    .minor = 0 };
    }
    return eq_create(core, &core->aeq, arg, AEQE_SIZE);
}

struct cqp_result qrdma_cqp_destroy_aeq(struct qrdma_core *core,
                                        const uint64_t *arg)
{
    if (!core->aeq.created) {
        return (struct cqp_result){ .major = QRDMA_CQP_ERR_STATE };
    }
    memset(&core->aeq, 0, sizeof(core->aeq));
    return (struct cqp_result){ 0 };
}

/* ---- registers ----------------------------------------------------------- */

static uint32_t reg_index(uint32_t offset, uint32_t base)
{
    return (offset - base) / 4;
}

static uint32_t reg_read_intr(struct qrdma_core *core, uint32_t offset)
{
    struct qrdma_intr *in = &core->intr;

    if (offset < QRDMA_REG_CEQCTL(0)) {
        return in->dyn_ctl[reg_index(offset, QRDMA_REG_DYN_CTL(0))];
    }
    if (offset < QRDMA_REG_CEQALLOC(0)) {
        return in->ceqctl[reg_index(offset, QRDMA_REG_CEQCTL(0))];
    }
    if (offset == QRDMA_REG_AEQCTL) {
        return in->aeqctl;
    }
    if (offset == QRDMA_REG_EQ_OVERFLOWS) {
        return in->overflows;
    }
    return 0;   /* the ALLOC registers read 0 */
}

static void reg_write_dyn_ctl(struct qrdma_core *core, uint32_t offset,
                              uint32_t value)
{
    uint32_t v = reg_index(offset, QRDMA_REG_DYN_CTL(0));

    if (v >= core->cfg.msix_vectors) {
        qrdma_guest_error(
            core, "DYN_CTL(%u) written: the device has %u MSI-X vectors", v,
            core->cfg.msix_vectors);
        return;
    }
    core->intr.dyn_ctl[v] = value;
    vector_fire(core, v);
}

static bool eqctl_ok(struct qrdma_core *core, const char *name, uint32_t value)
{
    if ((value & QRDMA_EQCTL_MSIX_MASK) >= core->cfg.msix_vectors) {
        qrdma_guest_error(core, "%s=0x%x routes to vector %u of %u; ignored",
                          name, value, value & QRDMA_EQCTL_MSIX_MASK,
                          core->cfg.msix_vectors);
        return false;
    }
    return true;
}

static void reg_write_ceqctl(struct qrdma_core *core, uint32_t offset,
                             uint32_t value)
{
    uint32_t i = reg_index(offset, QRDMA_REG_CEQCTL(0));
    char name[24];

    snprintf(name, sizeof(name), "CEQCTL(%u)", i);
    if (i >= core->cfg.max_ceq) {
        qrdma_guest_error(core, "%s written: the device has %u CEQs", name,
                          core->cfg.max_ceq);
        return;
    }
    if (eqctl_ok(core, name, value)) {
        core->intr.ceqctl[i] = value;
    }
}

static void reg_write_aeqctl(struct qrdma_core *core, uint32_t offset,
                             uint32_t value)
{
    if (eqctl_ok(core, "AEQCTL", value)) {
        core->intr.aeqctl = value;
    }
}

/* The driver hands back n consumed entries: never more than were written. */
static void eq_alloc(struct qrdma_core *core, struct qrdma_eq *eq,
                     const char *name, uint32_t n)
{
    if (!eq->created) {
        qrdma_guest_error(core,
                          "%s ALLOC written while the queue does not exist",
                          name);
        return;
    }
    if (n > eq->len - eq->avail) {
        qrdma_guest_error(
            core, "%s ALLOC returns %u entries but only %u are outstanding",
            name, n, eq->len - eq->avail);
        n = eq->len - eq->avail;
    }
    eq->avail += n;
}

static void reg_write_ceqalloc(struct qrdma_core *core, uint32_t offset,
                               uint32_t value)
{
    uint32_t i = reg_index(offset, QRDMA_REG_CEQALLOC(0));
    char name[24];

    snprintf(name, sizeof(name), "CEQ %u", i);
    if (i >= core->cfg.max_ceq) {
        qrdma_guest_error(core, "CEQALLOC(%u) written: the device has %u CEQs",
                          i, core->cfg.max_ceq);
        return;
    }
    eq_alloc(core, &core->ceq[i], name, value);
}

static void reg_write_aeqalloc(struct qrdma_core *core, uint32_t offset,
                               uint32_t value)
{
    eq_alloc(core, &core->aeq, "AEQ", value);
}

#define B QRDMA_REG_INTR_BASE
#define IDX(off) (((off) - B) / 4)
const struct qrdma_reg_desc qrdma_intr_reg_table[QRDMA_REG_BLOCK_SIZE / 4] = {
    [IDX(QRDMA_REG_DYN_CTL(0)) ...
     IDX(QRDMA_REG_DYN_CTL(QRDMA_MAX_VECTORS - 1))] = {
        "DYN_CTL", QRDMA_REG_RW, QRDMA_DYN_CTL_INTENA, reg_read_intr,
        reg_write_dyn_ctl
    },
    [IDX(QRDMA_REG_CEQCTL(0)) ... IDX(QRDMA_REG_CEQCTL(QRDMA_MAX_CEQS - 1))] = {
        "CEQCTL", QRDMA_REG_RW, QRDMA_EQCTL_VALID_MASK, reg_read_intr,
        reg_write_ceqctl
    },
    [IDX(QRDMA_REG_CEQALLOC(0)) ...
     IDX(QRDMA_REG_CEQALLOC(QRDMA_MAX_CEQS - 1))] = {
        "CEQALLOC", QRDMA_REG_RW, QRDMA_EQALLOC_MASK, reg_read_intr,
        reg_write_ceqalloc
    },
    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_AEQCTL, B, "AEQCTL",
                           QRDMA_EQCTL_VALID_MASK, reg_read_intr,
                           reg_write_aeqctl),
    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_AEQALLOC, B, "AEQALLOC",
                           QRDMA_EQALLOC_MASK, reg_read_intr,
                           reg_write_aeqalloc),
    QRDMA_REG_RO_LIVE_DESC(QRDMA_REG_EQ_OVERFLOWS, B, "EQ_OVERFLOWS",
                           reg_read_intr),
};
#undef IDX
#undef B

void qrdma_eq_reset(struct qrdma_core *core)
{
    memset(core->ceq, 0, sizeof(core->ceq));
    memset(&core->aeq, 0, sizeof(core->aeq));
    memset(&core->intr, 0, sizeof(core->intr));
}
