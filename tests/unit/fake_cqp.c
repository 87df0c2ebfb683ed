/*
 * The fake driver side of the control QP (see fake_cqp.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fake_cqp.h"

#include <string.h>

#include "unit.h"

struct fake_cqp_driver drv;

void cqp_write_ctx(unsigned sq_log2, unsigned ccq_log2, uint64_t sq, uint64_t ccq,
                   uint64_t shadow)
{
    put64(CQP_CTX_ADDR, sq_log2 | (uint64_t)ccq_log2 << QRDMA_CQP_CTX_CCQ_SIZE_SHIFT);
    put64(CQP_CTX_ADDR + 8, sq);
    put64(CQP_CTX_ADDR + 16, ccq);
    put64(CQP_CTX_ADDR + 24, shadow);
}

void cqp_create_at(uint64_t ctx)
{
    wr(QRDMA_REG_CCQP_CTX_HIGH, (uint32_t)(ctx >> 32));
    wr(QRDMA_REG_CCQP_CTX_LOW, (uint32_t)ctx);
}

void cqp_setup(unsigned sq_log2, unsigned ccq_log2)
{
    cqp_write_ctx(sq_log2, ccq_log2, CQP_SQ_ADDR, CQP_CCQ_ADDR, CQP_SHADOW_ADDR);
    put64(CQP_SHADOW_ADDR, 0);
    cqp_create_at(CQP_CTX_ADDR);
    CHECK_EQ(rd(QRDMA_REG_CCQP_STATUS), QRDMA_CCQP_STATUS_DONE);
    memset(&drv, 0, sizeof(drv));
    drv.sq_len = 1u << sq_log2;
    drv.ccq_len = 1u << ccq_log2;
    drv.sq_valid = drv.ccq_valid = true;
}

unsigned cqp_post(uint8_t opcode, const uint64_t *args, uint64_t scratch, bool valid)
{
    unsigned idx = drv.sq_next;
    uint64_t w = CQP_SQ_ADDR + idx * 64ull;
    int i;

    for (i = 0; i < 6; i++) {
        put64(w + 8 * i, args ? args[i] : 0);
    }
    put64(w + 48, scratch);
    put64(w + 56, opcode | (valid ? QRDMA_CQP_WQE_VALID : 0));
    drv.sq_next = (idx + 1) % drv.sq_len;
    if (!drv.sq_next) {
        drv.sq_valid = !drv.sq_valid;
    }
    return idx;
}

void cqp_ring(void)
{
    wr(QRDMA_REG_CQP_DB, drv.sq_next);
    CHECK(fake.kicks & QRDMA_WORK_CQP);
    fake.kicks = 0;
    qrdma_core_run(&core, QRDMA_WORK_CQP);
}

bool cqp_poll(uint64_t *scratch, uint64_t *status, uint64_t *retval)
{
    uint64_t c = CQP_CCQ_ADDR + drv.ccq_head * 32ull;

    if (!!(get64(c + 24) & QRDMA_CCQ_CQE_VALID) != drv.ccq_valid) {
        return false;
    }
    *scratch = get64(c);
    *retval = get64(c + 8);
    *status = get64(c + 16);
    drv.ccq_head = (drv.ccq_head + 1) % drv.ccq_len;
    if (!drv.ccq_head) {
        drv.ccq_valid = !drv.ccq_valid;
    }
    put64(CQP_SHADOW_ADDR, drv.ccq_head);
    return true;
}

uint64_t cqp_run1(uint8_t opcode, const uint64_t *args, uint64_t *retval)
{
    uint64_t scratch = 0, status = ~0ull, rv = ~0ull;
    static uint64_t cookie = 1000;
    unsigned idx;

    idx = cqp_post(opcode, args, ++cookie, drv.sq_valid);
    cqp_ring();
    CHECK(cqp_poll(&scratch, &status, &rv));
    CHECK_EQ(scratch, cookie);
    CHECK_EQ((status & QRDMA_CCQ_CQE_OPCODE_MASK) >> QRDMA_CCQ_CQE_OPCODE_SHIFT, opcode);
    CHECK_EQ((status & QRDMA_CCQ_CQE_WQE_INDEX_MASK) >> QRDMA_CCQ_CQE_WQE_INDEX_SHIFT, idx);
    if (retval) {
        *retval = rv;
    }
    return status;
}

unsigned cqp_major(uint64_t status)
{
    return (status & QRDMA_CCQ_CQE_MAJOR_MASK) >> QRDMA_CCQ_CQE_MAJOR_SHIFT;
}

unsigned cqp_minor(uint64_t status)
{
    return status & QRDMA_CCQ_CQE_MINOR_MASK;
}

uint64_t cqp_commit(const uint64_t *counts, uint64_t buf, uint64_t *retval)
{
    uint64_t args[6] = { buf };
    unsigned t;

    memset(gpa(buf), 0, sizeof(struct qrdma_fpm_buf));
    for (t = 0; t < QRDMA_HMC_NUM_TYPES; t++) {
        put64(buf + 8 * (1 + t), counts[t]);
    }
    return cqp_run1(QRDMA_CQP_OP_COMMIT_FPM_VAL, args, retval);
}

void hmc_sd_write(uint32_t index, uint64_t entry)
{
    wr(QRDMA_REG_HMC_SD_DATA_LOW, (uint32_t)entry);
    wr(QRDMA_REG_HMC_SD_DATA_HIGH, (uint32_t)(entry >> 32));
    wr(QRDMA_REG_HMC_SD_CMD, QRDMA_HMC_SD_CMD_WRITE | index);
}

uint64_t hmc_obj_addr(enum qrdma_hmc_type type, uint32_t index)
{
    uint64_t addr = 0;

    CHECK_EQ(qrdma_core_hmc_object(&core, type, index, &addr), 0);
    return addr;
}
