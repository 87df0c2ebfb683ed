/*
 * The driver's side of the control QP, for device-core unit tests: build a
 * CQP context in fake RAM, post WQEs with the right VALID polarity, ring,
 * and poll CCQ completions the way qrdma.ko does.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_FAKE_CQP_H
#define QRDMA_FAKE_CQP_H

#include <stdbool.h>
#include <stdint.h>

#include "fake_env.h"

/* Where the fake driver keeps the CQP in fake RAM. */
#define CQP_CTX_ADDR    (FAKE_RAM_BASE + 0x0000)
#define CQP_SHADOW_ADDR (FAKE_RAM_BASE + 0x0040)
#define CQP_SQ_ADDR     (FAKE_RAM_BASE + 0x1000)
#define CQP_CCQ_ADDR    (FAKE_RAM_BASE + 0x10000)

struct fake_cqp_driver {
    unsigned sq_len, ccq_len, sq_next, ccq_head;
    bool sq_valid, ccq_valid;       /* VALID of the current lap */
};

extern struct fake_cqp_driver drv;

void cqp_write_ctx(unsigned sq_log2, unsigned ccq_log2, uint64_t sq, uint64_t ccq,
                   uint64_t shadow);
void cqp_create_at(uint64_t ctx);
/* Create a CQP at the addresses above on the current (ready) core. */
void cqp_setup(unsigned sq_log2, unsigned ccq_log2);
/* Post one WQE, header last; returns its index. No doorbell. */
unsigned cqp_post(uint8_t opcode, const uint64_t *args, uint64_t scratch, bool valid);
/* Ring the doorbell and run the kicked work as the embedding would. */
void cqp_ring(void);
/* Take one CQE if the next one is valid. */
bool cqp_poll(uint64_t *scratch, uint64_t *status, uint64_t *retval);
/* Run one command, check its CQE echoes it; return the status qword. */
uint64_t cqp_run1(uint8_t opcode, const uint64_t *args, uint64_t *retval);
unsigned cqp_major(uint64_t status);
unsigned cqp_minor(uint64_t status);

/* COMMIT_FPM_VAL of counts[QRDMA_HMC_NUM_TYPES] through a 64-byte buffer; the CQE status. */
uint64_t cqp_commit(const uint64_t *counts, uint64_t buf, uint64_t *retval);
/* Load SD index with entry through HMC_SD_DATA/HMC_SD_CMD. */
void hmc_sd_write(uint32_t index, uint64_t entry);
/* The guest-physical address of HMC object (type, index); it must translate. */
uint64_t hmc_obj_addr(enum qrdma_hmc_type type, uint32_t index);

/* A command must complete with (major, minor). */
#define CHECK_RESULT(status, maj, min)                                             \
    do {                                                                           \
        uint64_t st_ = (status);                                                   \
        CHECK_EQ(cqp_major(st_), (maj));                                           \
        CHECK_EQ(cqp_minor(st_), (min));                                           \
    } while (0)

#endif /* QRDMA_FAKE_CQP_H */
