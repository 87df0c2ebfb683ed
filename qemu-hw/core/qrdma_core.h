/*
 * qrdma device core: the device model on a plain struct, with no QEMU
 * types, so unit tests and fuzzers drive it directly. The embedding (the
 * QEMU glue in qrdma.c, or a test) supplies a qrdma_core_env with the few
 * services the core needs and calls the entry points below.
 *
 * Threading: every entry point runs under the embedding's one lock (the
 * BQL in QEMU); the core keeps no locks of its own.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_CORE_H
#define QRDMA_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qrdma/qrdma_hw.h"

/* What the embedding provides. Every callback is mandatory. */
struct qrdma_core_env {
    void *opaque;
    /* A guest did something the interface forbids; msg says what. */
    void (*guest_error)(void *opaque, const char *msg);
    /*
     * Arm (or re-arm) the one-shot timer that calls qrdma_core_pe_ready()
     * after delay_ns of guest time.
     */
    void (*schedule_pe_ready)(void *opaque, uint64_t delay_ns);
    /* Is the Ethernet link of the backing netdev up? */
    bool (*link_up)(void *opaque);
};

/* Default limits; the QEMU properties and unit tests start from these. */
#define QRDMA_DEFAULT_MAX_QP            1024
#define QRDMA_DEFAULT_MAX_CQ            2048
#define QRDMA_DEFAULT_MAX_MR            16384
#define QRDMA_DEFAULT_MAX_PD            1024
#define QRDMA_DEFAULT_MAX_SRQ           256
#define QRDMA_DEFAULT_MAX_AH            4096
#define QRDMA_DEFAULT_MAX_QP_WR         4096
#define QRDMA_DEFAULT_MAX_SRQ_WR        4096
#define QRDMA_DEFAULT_MAX_CQE           65536
#define QRDMA_DEFAULT_MAX_SEND_SGE      13
#define QRDMA_DEFAULT_MAX_RECV_SGE      13
#define QRDMA_DEFAULT_MAX_INLINE        256
#define QRDMA_DEFAULT_MAX_RD_ATOM       16
#define QRDMA_DEFAULT_MAX_MTU           4096
#define QRDMA_DEFAULT_GID_TABLE_LEN     32
#define QRDMA_DEFAULT_DB_PAGES          256
#define QRDMA_DEFAULT_MSIX_VECTORS      9
#define QRDMA_DEFAULT_MAX_CEQ           8
#define QRDMA_DEFAULT_LINK_SPEED_MBPS   100000
#define QRDMA_DEFAULT_PE_READY_DELAY_US 1000
#define QRDMA_DEFAULT_BOARD_ID          "QEMU-QRDMA"

/* Device properties, fixed for the device's life. */
struct qrdma_core_config {
    uint8_t mac[6];
    char board_id[QRDMA_BOARD_ID_LEN];
    uint32_t max_qp;
    uint32_t max_cq;
    uint32_t max_mr;
    uint32_t max_pd;
    uint32_t max_srq;
    uint32_t max_ah;
    uint32_t max_qp_wr;
    uint32_t max_srq_wr;
    uint32_t max_cqe;
    uint32_t max_send_sge;
    uint32_t max_recv_sge;
    uint32_t max_inline;
    uint32_t max_rd_atom;
    uint32_t max_mtu;
    uint32_t gid_table_len;
    uint32_t db_pages;
    uint32_t msix_vectors;
    uint32_t max_ceq;
    uint32_t link_speed_mbps;
    /* Time from reset to PE ready; QRDMA_PE_READY_NEVER keeps it down. */
    uint32_t pe_ready_delay_us;
};

#define QRDMA_PE_READY_NEVER UINT32_MAX

/* Device counters, for tests and for the GUEST_ERRORS register. */
struct qrdma_core_stats {
    uint64_t guest_errors;
    uint64_t resets;
    uint64_t reg_reads;
    uint64_t reg_writes;
    uint64_t doorbells;
};

struct qrdma_core {
    struct qrdma_core_config cfg;
    struct qrdma_core_env env;
    struct qrdma_core_stats stats;
    /* The plain register file, indexed by offset / 4. */
    uint32_t regs[QRDMA_REG_FILE_END / 4];
    bool pe_ready;
};

/* Defaults for every limit; the QEMU properties start from these. */
void qrdma_core_config_defaults(struct qrdma_core_config *cfg);

/*
 * Check cfg and bind the core to env. Returns 0, or -EINVAL with a reason
 * in err. Leaves the device in reset; call qrdma_core_reset() next.
 */
int qrdma_core_init(struct qrdma_core *core, const struct qrdma_core_config *cfg,
                    const struct qrdma_core_env *env, char *err, size_t err_len);

/* Power-on or function-level reset: all state back to its reset value. */
void qrdma_core_reset(struct qrdma_core *core);

/* The PE-ready timer fired. */
void qrdma_core_pe_ready(struct qrdma_core *core);

/* BAR0. Any size and offset is accepted here and checked by the core. */
uint32_t qrdma_core_reg_read(struct qrdma_core *core, uint64_t offset, unsigned size);
void qrdma_core_reg_write(struct qrdma_core *core, uint64_t offset, unsigned size,
                          uint64_t value);

/* The doorbell BAR. */
uint32_t qrdma_core_db_read(struct qrdma_core *core, uint64_t offset, unsigned size);
void qrdma_core_db_write(struct qrdma_core *core, uint64_t offset, unsigned size,
                         uint64_t value);

/* Name of a BAR0 register, or NULL for a hole. For traces and tests. */
const char *qrdma_core_reg_name(uint64_t offset);

#endif /* QRDMA_CORE_H */
