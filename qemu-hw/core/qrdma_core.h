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
    /*
     * Guest memory. Return 0, or -1 when [addr, addr+len) is not all guest
     * RAM; then nothing was transferred and the core reports a guest error.
     */
    int (*dma_read)(void *opaque, uint64_t addr, void *buf, size_t len);
    int (*dma_write)(void *opaque, uint64_t addr, const void *buf, size_t len);
    /* Raise MSI-X vector (the core has checked it is below msix_vectors). */
    void (*msix_notify)(void *opaque, unsigned vector);
    /* Put one Ethernet frame on the wire. */
    void (*send_frame)(void *opaque, const uint8_t *frame, size_t len);
    /*
     * Ask for work outside the MMIO handler: the embedding calls
     * qrdma_core_run(core, what) soon, from its main loop.
     */
    void (*kick)(void *opaque, unsigned what);
    /* Receive buffers were posted: frames held back may be delivered now. */
    void (*rx_ready)(void *opaque);
};

/* What a kick asks for. */
enum qrdma_core_work {
    QRDMA_WORK_LAN_TX = 1u << 0,
    QRDMA_WORK_CQP = 1u << 1,
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
    uint64_t cqp_commands;
};

/* One LAN descriptor ring: the device's view. */
struct qrdma_lan_ring {
    uint64_t base;
    uint32_t len;               /* descriptors; 0 = not configured */
    uint32_t head;              /* next descriptor the device consumes */
    uint32_t tail;              /* first descriptor the driver has not posted */
    bool discard_to_eop;        /* TX: dropping the rest of an over-long frame */
};

/* Number of LAN counters, QRDMA_REG_LAN_STAT_FIRST..LAST. */
#define QRDMA_LAN_NUM_STATS \
    ((QRDMA_REG_LAN_STAT_LAST - QRDMA_REG_LAN_STAT_FIRST) / 4 + 1)
/* LAN registers kept as plain storage: the block up to the counters. */
#define QRDMA_LAN_NUM_REGS (QRDMA_REG_LAN_STAT_FIRST - QRDMA_REG_LAN_BASE) / 4

struct qrdma_lan {
    uint32_t regs[QRDMA_LAN_NUM_REGS];  /* by (offset - LAN_BASE) / 4 */
    struct qrdma_lan_ring tx;
    struct qrdma_lan_ring rx;
    uint32_t pending;           /* QRDMA_LAN_INT_CAUSE_* written back, not yet signalled */
    uint32_t stats[QRDMA_LAN_NUM_STATS];
    uint8_t frame[QRDMA_LAN_MTU_MAX + QRDMA_LAN_FRAME_OVERHEAD];
};

/* The control QP: the device's copy of what the context said. */
struct qrdma_cqp {
    uint32_t ctx_low, ctx_high;         /* CCQP_CTX_LOW/HIGH as written */
    uint32_t status;                    /* CCQP_STATUS */
    uint32_t errcodes;                  /* CQP_ERRCODES */
    bool created;
    uint64_t sq_addr, ccq_addr, shadow_addr;
    uint32_t sq_len, ccq_len;
    uint32_t sq_head;                   /* next WQE to run (CQP_TAIL) */
    uint32_t db;                        /* last doorbell: index after the last WQE */
    bool sq_valid;                      /* VALID expected on this lap */
    uint32_t ccq_tail;                  /* next CQE to write */
    bool ccq_valid;                     /* VALID to write on this lap */
    uint64_t ccq_ceq;                   /* context qword 4: CCQ_CEQ_ID, CCQ_CEQ_ENABLE */
    uint64_t ccq_ctx;                   /* context qword 5 */
};

struct qrdma_gid_entry {
    bool valid;
    uint8_t type;                       /* QRDMA_GID_TYPE_* */
    uint8_t gid[16];
};

#define QRDMA_GID_TABLE_MAX 256

/* PBLE entries the FPM layout may hold (the other maxima are properties). */
#define QRDMA_HMC_PBLE_MAX              (1u << 21)
/* Page descriptors the device caches: direct-mapped, a power of two. */
#define QRDMA_HMC_PD_CACHE_SIZE         64u

/* One cached page descriptor: PD (tag % 512) of SD (tag / 512). */
struct qrdma_hmc_pd_cache_entry {
    bool valid;
    uint32_t tag;                       /* sd_index * QRDMA_HMC_PDS_PER_SD + pd_index */
    uint64_t pd;                        /* the PD as read from guest memory */
};

/* The host memory cache: FPM layout, SD table, PD cache (qrdma_hmc.c). */
struct qrdma_hmc {
    /* Per enum qrdma_hmc_type: what QUERY_FPM_VAL reports. */
    uint32_t max_count[QRDMA_HMC_NUM_TYPES];
    uint8_t obj_size_log2[QRDMA_HMC_NUM_TYPES];
    /* What COMMIT_FPM_VAL fixed; meaningful only while committed. */
    uint32_t count[QRDMA_HMC_NUM_TYPES];
    uint64_t base[QRDMA_HMC_NUM_TYPES];  /* FPM byte address */
    bool committed;
    uint32_t sd_needed;                 /* SDs the committed layout spans */
    uint64_t sd[QRDMA_HMC_MAX_SDS];     /* SD entries as accepted */
    uint32_t sd_data_low, sd_data_high; /* HMC_SD_DATA_LOW/HIGH */
    uint32_t sd_cmd;                    /* HMC_SD_CMD as last written */
    struct qrdma_hmc_pd_cache_entry pd_cache[QRDMA_HMC_PD_CACHE_SIZE];
};

/* An event queue (a CEQ or the AEQ): the device's copy of its shape. */
struct qrdma_eq {
    bool created;
    uint64_t addr;
    uint32_t len;                       /* entries, a power of two */
    uint32_t tail;                      /* next entry the device writes */
    bool valid;                         /* VALID to write on this lap */
    uint32_t avail;                     /* entries the driver has handed back */
};

/* Interrupt registers (block 0x3000). */
struct qrdma_intr {
    uint32_t dyn_ctl[QRDMA_MAX_VECTORS];
    uint32_t ceqctl[QRDMA_MAX_CEQS];
    uint32_t aeqctl;
    uint64_t pending;                   /* vectors with an event not yet signalled */
    uint32_t overflows;                 /* EQ_OVERFLOWS */
};

struct qrdma_core {
    struct qrdma_core_config cfg;
    struct qrdma_core_env env;
    struct qrdma_core_stats stats;
    /* The plain register file, indexed by offset / 4. */
    uint32_t regs[QRDMA_REG_FILE_END / 4];
    bool pe_ready;
    struct qrdma_lan lan;
    struct qrdma_cqp cqp;
    struct qrdma_gid_entry gids[QRDMA_GID_TABLE_MAX];
    struct qrdma_eq ceq[QRDMA_MAX_CEQS];
    struct qrdma_eq aeq;
    struct qrdma_intr intr;
    struct qrdma_hmc hmc;
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

/* Do the work a kick asked for (QRDMA_WORK_* bits). */
void qrdma_core_run(struct qrdma_core *core, unsigned what);

/*
 * LAN receive (qrdma_lan.c). can_receive is false only while receive is on
 * and no buffer is posted; receive then returns 0 and the embedding holds
 * the frame until rx_ready. Otherwise receive consumes the frame (stored,
 * steered to the RDMA engine, or dropped and counted) and returns len.
 */
bool qrdma_core_lan_can_receive(struct qrdma_core *core);
/* Is gid (16 bytes, network order) in the GID table the driver programmed? */
bool qrdma_core_gid_is_own(struct qrdma_core *core, const uint8_t gid[16]);
size_t qrdma_core_lan_receive(struct qrdma_core *core, const uint8_t *frame, size_t len);

/*
 * HMC translation (qrdma_hmc.c): the guest-physical address of object
 * (type, index) in the committed FPM layout, through its SD and, for a
 * paged SD, its page descriptor (from the PD cache, or read from guest
 * memory and cached). Returns 0 and *gpa, or a positive enum
 * qrdma_hmc_error after logging a guest error. An object never crosses a
 * 4 KB page, so *gpa covers all of it; whether that page is guest RAM is
 * for the caller's dma_read/dma_write to find out (map a failure there to
 * QRDMA_HMC_ERR_NOT_RAM).
 */
int qrdma_core_hmc_object(struct qrdma_core *core, enum qrdma_hmc_type type, uint32_t index,
                          uint64_t *gpa);

#endif /* QRDMA_CORE_H */
