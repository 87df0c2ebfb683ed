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
#include <sys/uio.h>

#include "qrdma/qrdma_hw.h"
#include "qrdma_dp.h"

/*
 * What the device lets its embedding trace (QEMU's qrdma_* trace events,
 * qemu-hw/trace-events): what a guest or the wire caused, with the queue
 * and the field named. Fields a..d by kind; names are static strings.
 */
enum qrdma_trace_kind {
    /* a WQE index, b opcode, c major, d minor; name: the command */
    QRDMA_TRACE_CQP_CMD,
    /*
     * a QP ID; name: old state, name2: new state; b 1 if the transport moved it
     */
    QRDMA_TRACE_QP_STATE,
    QRDMA_TRACE_CEQ_POST,       /* a CEQ ID, d the CQ context */
    /* a the object's ID, b code, c source, d context */
    QRDMA_TRACE_AEQ_POST,
    QRDMA_TRACE_CQ_OVERFLOW,    /* a CQ ID, b the ring's size */
    QRDMA_TRACE_BAD_DOORBELL,   /* a page, b offset, c value; name: why */
    /* a page: an SQ notification (qrdma_core_db_notify) found no QP there */
    QRDMA_TRACE_SQ_NOTIFY_IDLE,
    /* a QPN, b the first PSN sent again; name: why (timeout, nak, rnr) */
    QRDMA_TRACE_TP_RETRANSMIT,
    /* a QPN, b PSN, c AETH syndrome; name: kind, name2: sent or received */
    QRDMA_TRACE_TP_NAK,
};

struct qrdma_trace_ev {
    enum qrdma_trace_kind kind;
    uint32_t a, b, c;
    uint64_t d;
    const char *name, *name2;
};

/*
 * What the embedding provides. Every callback is mandatory, except trace
 * and the zero-copy transmit trio (dma_map_read, dma_unmap_read,
 * send_frame_iov).
 */
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
    /*
     * Put one Ethernet frame on the wire: QRDMA_TX_SENT, or QRDMA_TX_QUEUED
     * when the netdev kept it (it is full): the embedding then calls
     * qrdma_core_tx_ready() once for that frame when it has left (or was
     * purged), and until then the device sends nothing more.
     */
    int (*send_frame)(void *opaque, const uint8_t *frame, size_t len);
    /*
     * Optional, both or neither (NULL: payloads are copied into the frame):
     * guest memory [addr, addr+len) mapped for the device to read, through
     * the embedding's DMA API (a read: no page becomes dirty); NULL when
     * the whole range cannot be mapped at once. Every mapping goes back
     * with dma_unmap_read as soon as the frame carrying it is sent.
     */
    const void *(*dma_map_read)(void *opaque, uint64_t addr, size_t len);
    void (*dma_unmap_read)(void *opaque, const void *p, size_t len);
    /*
     * Optional (NULL: the core joins the pieces and calls send_frame): one
     * Ethernet frame in n pieces, valid during the call; returns as
     * send_frame.
     */
    int (*send_frame_iov)(void *opaque, const struct iovec *iov, unsigned n);
    /*
     * Ask for work outside the MMIO handler: the embedding calls
     * qrdma_core_run(core, what) soon, from its main loop.
     */
    void (*kick)(void *opaque, unsigned what);
    /* Receive buffers were posted: frames held back may be delivered now. */
    void (*rx_ready)(void *opaque);
    /* Monotonic time in ns (guest time: it stops while the VM is stopped). */
    uint64_t (*now_ns)(void *opaque);
    /*
     * Arm the one data-path timer to call qrdma_core_timer() at deadline_ns
     * of now_ns's clock (UINT64_MAX: nothing due). Re-arming replaces it.
     */
    void (*timer_mod)(void *opaque, uint64_t deadline_ns);
    /* Optional (NULL: nothing traced): one event of enum qrdma_trace_kind. */
    void (*trace)(void *opaque, const struct qrdma_trace_ev *ev);
};

/* What send_frame and send_frame_iov return. */
enum qrdma_tx_status {
    QRDMA_TX_SENT = 0,          /* on the wire, or dropped for good */
    /* kept by a full netdev: qrdma_core_tx_ready() follows when it left */
    QRDMA_TX_QUEUED = 1,
};

/* What a kick asks for. */
enum qrdma_core_work {
    QRDMA_WORK_LAN_TX = 1u << 0,
    QRDMA_WORK_CQP = 1u << 1,
    /* queues named by doorbells, the transport */
    QRDMA_WORK_DP = 1u << 2,
    /* an AEQE asking the driver to announce (qrdma_core_announce) */
    QRDMA_WORK_ANNOUNCE = 1u << 3,
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
#define QRDMA_DEFAULT_MAX_RD_ATOM       128
#define QRDMA_DEFAULT_MAX_MTU           4096
#define QRDMA_DEFAULT_GID_TABLE_LEN     32
#define QRDMA_DEFAULT_DB_PAGES          256
#define QRDMA_DEFAULT_MSIX_VECTORS      9
#define QRDMA_DEFAULT_MAX_CEQ           8
#define QRDMA_DEFAULT_MAX_MCAST_GRP     32
#define QRDMA_DEFAULT_MAX_MCAST_QP_ATTACH 16
#define QRDMA_DEFAULT_LINK_SPEED_MBPS   100000
#define QRDMA_DEFAULT_PE_READY_DELAY_US 1000
#define QRDMA_DEFAULT_STALL_FLOOR_MS    2000
#define QRDMA_DEFAULT_BOARD_ID          "QEMU-QRDMA"

/* The backends a device can use (its backend= property, docs/backends.md). */
enum qrdma_core_backend {
    /* the software RoCEv2 transport on the device's own wire */
    QRDMA_BACKEND_SW = 0,
    /* a host RDMA NIC through libibverbs (built with QRDMA_HAVE_VERBS) */
    QRDMA_BACKEND_VERBS = 1,
};

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
    uint32_t max_mcast_grp;         /* 0: no multicast */
    uint32_t max_mcast_qp_attach;
    uint32_t link_speed_mbps;
    /* Time from reset to PE ready; QRDMA_PE_READY_NEVER keeps it down. */
    uint32_t pe_ready_delay_us;
    /*
     * An RC requester reports RETRY_EXC_ERR only after its retry_cnt
     * retries *and* at least this long without progress (0: retries alone,
     * IBTA's rule). The peer of a virtual device is a process that a busy
     * host may not run for a while; short guest ACK timeouts would read
     * that as a dead link (the backend's stall_floor_ns, qrdma_backend.h).
     */
    uint32_t stall_floor_ms;
    /*
     * Test hook: faults the RDMA transport injects into the frames it sends
     * (parts per million; all zero = none). The Ethernet function's frames
     * are never touched. Same seed, same faults.
     */
    struct qrdma_core_fault_cfg {
        uint32_t loss_ppm;
        uint32_t dup_ppm;
        uint32_t reorder_ppm;
        uint32_t corrupt_ppm;
        uint32_t delay_us;
        uint64_t seed;
    } fault;
    /*
     * Test hook: the control QP stops at the first WQE with this opcode
     * (QRDMA_CQP_STALL_NEVER: never): that WQE and every later one are
     * neither run nor completed, as if the engine's firmware had hung. A
     * device reset clears the stall; the hook stays armed.
     */
    uint32_t cqp_stall_opcode;
    /*
     * What carries the RDMA traffic (enum qrdma_core_backend; init refuses
     * one that is not built). backend_ops, when not NULL, is used instead:
     * a test's own backend behind the same contract (qrdma_backend.h).
     */
    uint32_t backend;
    const struct qrdma_be_ops *backend_ops;
    /*
     * What only the chosen backend understands, handed to its create
     * (qrdma_be_params.backend_config): verbs takes struct
     * qrdma_be_verbs_config. NULL for sw.
     */
    const void *backend_config;
};

#define QRDMA_PE_READY_NEVER UINT32_MAX
#define QRDMA_CQP_STALL_NEVER UINT32_MAX

/* Device counters, for tests and for the GUEST_ERRORS register. */
struct qrdma_core_stats {
    uint64_t guest_errors;
    uint64_t resets;
    uint64_t reg_reads;
    uint64_t reg_writes;
    uint64_t doorbells;
    /*
     * SQ doorbells: written to the BAR (the QP ID seen), and notified
     * (qrdma_core_db_notify: only the page known); the QPs the
     * notifications kicked, and the notifications that found no QP.
     */
    uint64_t sq_doorbells, sq_notifications, sq_notify_kicks, sq_notify_idle;
    uint64_t cqp_commands;
    /* BAR accesses and frames refused while busy */
    uint64_t reentries_refused;
    uint64_t resets_deferred;       /* resets asked for from inside the core */
    /*
     * Lookups in guest-held tables: HMC translations, PBLE reads and page
     * probes, and a few per CQP command. What the CQP's work budget per
     * run counts (qrdma_cqp_process()).
     */
    uint64_t guest_lookups;
    /*
     * RoCEv2 frames to a multicast group no QP of this device is attached to:
     * dropped.
     */
    uint64_t mcast_rx_dropped;
    /*
     * Transmit backpressure: frames the netdev queued (each stopped the
     * device's transmit until it left); frames a backend sent though told
     * its wire was busy (dropped).
     */
    uint64_t tx_queued;
    uint64_t tx_busy_drops;
};

/*
 * The port counters (qrdma_stats.c, docs/hw-spec.md section 20): those the
 * core counts itself (the CQE ones; the others stay 0 here, the backend
 * counts them), and the snapshot the STAT_LO/HI registers read. Zeroed by
 * every reset.
 */
struct qrdma_port_stats {
    uint64_t live[QRDMA_STAT_NUM];
    uint64_t snapshot[QRDMA_STAT_NUM];
};

/* One LAN descriptor ring: the device's view. */
struct qrdma_lan_ring {
    uint64_t base;
    uint32_t len;               /* descriptors; 0 = not configured */
    uint32_t head;              /* next descriptor the device consumes */
    uint32_t tail;              /* first descriptor the driver has not posted */
    /* TX: dropping the rest of an over-long frame */
    bool discard_to_eop;
};

/* Number of LAN counters, QRDMA_REG_LAN_STAT_FIRST..LAST. */
#define QRDMA_LAN_NUM_STATS \
    ((QRDMA_REG_LAN_STAT_LAST - QRDMA_REG_LAN_STAT_FIRST) / 4 + 1)
/* LAN registers kept as plain storage: the block up to the counters. */
#define QRDMA_LAN_NUM_REGS ((QRDMA_REG_LAN_STAT_FIRST - QRDMA_REG_LAN_BASE) / 4)

/* LAN frames the device holds while no receive buffer is posted. */
#define QRDMA_LAN_BACKLOG_FRAMES 32

struct qrdma_lan {
    uint32_t regs[QRDMA_LAN_NUM_REGS];  /* by (offset - LAN_BASE) / 4 */
    struct qrdma_lan_ring tx;
    struct qrdma_lan_ring rx;
    /* QRDMA_LAN_INT_CAUSE_* written back, not yet signalled */
    uint32_t pending;
    uint32_t stats[QRDMA_LAN_NUM_STATS];
    uint8_t frame[QRDMA_LAN_MTU_MAX + QRDMA_LAN_FRAME_OVERHEAD];
    /*
     * Frames for the LAN that found no receive buffer wait here, not in
     * QEMU's queue, so RoCE frames behind them still reach the engine.
     */
    struct qrdma_lan_backlog {
        uint32_t head, count;
        uint16_t len[QRDMA_LAN_BACKLOG_FRAMES];
        uint8_t data[QRDMA_LAN_BACKLOG_FRAMES]
                    [QRDMA_LAN_MTU_MAX + QRDMA_LAN_FRAME_OVERHEAD];
    } backlog;
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
    /* last doorbell: index after the last WQE */
    uint32_t db;
    bool sq_valid;                      /* VALID expected on this lap */
    uint32_t ccq_tail;                  /* next CQE to write */
    bool ccq_valid;                     /* VALID to write on this lap */
    /* context qword 4: CCQ_CEQ_ID, CCQ_CEQ_ENABLE */
    uint64_t ccq_ceq;
    uint64_t ccq_ctx;                   /* context qword 5 */
    /* cfg.cqp_stall_opcode met: runs nothing more */
    bool stalled;
};

struct qrdma_gid_entry {
    bool valid;
    uint8_t type;                       /* QRDMA_GID_TYPE_* */
    uint8_t gid[16];
};

#define QRDMA_GID_TABLE_MAX 256

/*
 * UD multicast (qrdma_mcast.c, docs/hw-spec.md section 16.1): the groups
 * at least one QP is attached to, packed in grp[0..ngrp). The table is
 * the device's receive filter for RoCEv2 multicast.
 */
#define QRDMA_MCAST_GRP_MAX       256
#define QRDMA_MCAST_QP_ATTACH_MAX QRDMA_BE_MCAST_MAX_QPS
struct qrdma_mcast_grp {
    uint8_t gid[16];
    uint32_t nqp;
    uint32_t qp_id[QRDMA_MCAST_QP_ATTACH_MAX];
};
struct qrdma_mcast {
    uint32_t ngrp;
    struct qrdma_mcast_grp grp[QRDMA_MCAST_GRP_MAX];
};

/* PBLE entries the FPM layout may hold (the other maxima are properties). */
#define QRDMA_HMC_PBLE_MAX              (1u << 21)
/* Page descriptors the device caches: direct-mapped, a power of two. */
#define QRDMA_HMC_PD_CACHE_SIZE         64u

/* One cached page descriptor: PD (tag % 512) of SD (tag / 512). */
struct qrdma_hmc_pd_cache_entry {
    bool valid;
    /* sd_index * QRDMA_HMC_PDS_PER_SD + pd_index */
    uint32_t tag;
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
    /* vectors with an event not yet signalled */
    uint64_t pending;
    uint32_t overflows;                 /* EQ_OVERFLOWS */
};

/*
 * Objects (qrdma_obj.c, qrdma_qp.c, qrdma_mr.c): the engine's working
 * copies, one array per HMC type sized by the committed count (allocated by
 * COMMIT_FPM_VAL, freed by reset and qrdma_core_fini). The contexts in HMC
 * memory are written from these and never read back: the guest may scribble
 * on them without changing what the device does. Entries are kept small: a
 * committed layout may hold 10^5 MRs.
 */

/* Where a ring lives: contiguous guest memory, or 4 KB pages in PBLEs. */
struct qrdma_queue {
    /* ring address, or the first PBLE index with virtmap */
    uint64_t addr;
    uint8_t size_log2;          /* 2^size_log2 entries */
    uint8_t stride_log2;        /* of 2^stride_log2 bytes each */
    bool virtmap;
};

/* An address vector after its checks (struct qrdma_av, host order). */
struct qrdma_av_info {
    uint8_t dgid[16];
    uint8_t dmac[6];
    uint8_t sgid_index;
    uint8_t hop_limit;
    uint8_t traffic_class;
    uint32_t flow_label;
};

struct qrdma_cq {
    bool valid;
    bool ceq_enable;
    uint8_t ceq_id;
    uint16_t db_page;
    /* QPs naming it, once as send and once as receive CQ */
    uint32_t refs;
    uint64_t cq_ctx;            /* what CEQEs and AEQEs about it carry */
    uint64_t shadow;            /* struct qrdma_cq_shadow */
    struct qrdma_queue ring;
    /* The data path's: where the next CQE goes. */
    uint32_t tail;
    /*
     * The consumer's HEAD as last read from the shadow area. HEAD only
     * moves forward, so the ring has at least as much room as this says;
     * cq_post reads the shadow area again only when it looks full.
     */
    uint32_t head_seen;
    bool polarity;              /* VALID of the current lap */
    bool error;                 /* overflowed or unusable; no more CQEs */
};

struct qrdma_srq {
    bool valid;
    uint32_t pd;
    uint32_t limit;             /* 0: the limit event is not armed */
    uint32_t refs;              /* QPs using it */
    uint64_t srq_ctx;
    uint64_t shadow;
    struct qrdma_queue ring;
    /* The data path's. */
    uint32_t head;              /* next WQE the device takes */
    /* posted and not yet taken, as QUERY_SRQ reports */
    uint32_t outstanding;
    /* the backend's, with srq_create; NULL otherwise */
    struct qrdma_be_srq *be_srq;
};

struct qrdma_ah {
    bool valid;
    uint32_t pd;
    struct qrdma_av_info av;
};

/* What MODIFY_QP set; QUERY_QP reports it. */
struct qrdma_qp_attrs {
    /* QRDMA_QP_ATTR_* given since the QP left RESET */
    uint32_t set;
    uint32_t sq_psn, rq_psn, dest_qpn, qkey, access_flags;
    uint16_t pkey_index;
    uint8_t path_mtu, timeout, retry_cnt, rnr_retry, min_rnr_timer;
    uint8_t max_rd_atomic, max_dest_rd_atomic, port_num;
    struct qrdma_av_info av;
};

struct qrdma_qp {
    bool valid;
    uint8_t type;               /* enum qrdma_qp_type */
    uint8_t flags;              /* QRDMA_QP_CREATE_* */
    uint8_t state;              /* enum qrdma_qp_state */
    bool sq_draining;           /* in SQD with sends in flight */
    /* EN_SQD_ASYNC: raise SQ_DRAINED when they are done */
    bool sqd_async;
    uint16_t db_page;
    uint32_t pd, send_cq, recv_cq, srq;
    uint64_t qp_ctx;
    struct qrdma_queue sq, rq;  /* rq unused with an SRQ */
    struct qrdma_qp_attrs attr;
    /* The data path's: the next WQE the device takes from each ring. */
    uint32_t sq_head, rq_head;
};

struct qrdma_mr {
    uint64_t iova;
    uint64_t length;
    union {
        /* first PBLE (LEVELS 1, 2) or address of byte 0 (LEVELS 0) */
        uint64_t first;
        uint32_t mw_mr;         /* a bound window: the MR's STag */
    };
    uint32_t pd;
    uint32_t fbo;
    union {
        uint32_t max_pages;     /* fast-register MRs: PBLEs reserved */
        /* a bound type 2 window: the QP ID it is bound to */
        uint32_t mw_qp;
    };
    /*
     * MRs: windows bound to it; DEALLOC_STAG and REREG refuse it while
     * non-zero.
     */
    uint32_t mw_bound;
    uint8_t state;              /* enum qrdma_mr_state */
    uint8_t key;
    uint8_t type;               /* enum qrdma_mr_type */
    uint8_t access;             /* QRDMA_ACCESS_* */
    uint8_t levels;
    uint8_t page_log2;
    /*
     * Windows (type QRDMA_MR_TYPE_MW): iova, length, access and pd are the
     * binding's.
     */
    uint8_t mw_type;            /* QRDMA_MW_TYPE_1 or _2 */
};

struct qrdma_objs {
    /*
     * Arrays of hmc.count[type] entries while a layout is committed, else NULL.
     */
    struct qrdma_qp *qp;
    struct qrdma_cq *cq;
    struct qrdma_srq *srq;
    struct qrdma_mr *mr;
    struct qrdma_ah *ah;
    /* Objects that exist, per type QP..AH: the OBJ_COUNT registers. */
    uint32_t in_use[QRDMA_HMC_PBLE];
};

/*
 * Page sizes MRs may use (CAP_PAGE_SIZES) and the largest MR (CAP_MAX_MR_SIZE).
 */
#define QRDMA_CORE_PAGE_SIZES \
    (QRDMA_PAGE_SIZE_4K | QRDMA_PAGE_SIZE_2M | QRDMA_PAGE_SIZE_1G)
#define QRDMA_CORE_MAX_MR_SIZE  (1ull << 40)

/*
 * Re-entrancy and reset lifetime (qrdma_core.c). Every entry point the
 * embedding calls runs inside this guard. A callback the core makes (a
 * DMA, a frame sent, an interrupt) can come back into the device: an MSI-X
 * message aimed at BAR0 DEV_CTRL or at our own config space (FLR), at a
 * bridge's control register (secondary bus reset) or a slot's power
 * control (unplug), or a frame looped back by another device in the same
 * process. So:
 *  - interrupts raised while inside are delivered when the outermost call
 *    ends, never with the core's own work on the stack;
 *  - a reset or a teardown asked for while inside is done there too, after
 *    the work in progress stops; nothing the work uses is freed under it;
 *  - a BAR access that arrives while inside is refused (as QEMU's own
 *    re-entrancy guard refuses it), except DEV_CTRL.RESET, which is
 *    deferred like any reset; a frame is held by the embedding (can_receive
 *    is false) and asked for again with rx_ready.
 */
struct qrdma_core_guard {
    unsigned depth;             /* entry points on the stack */
    uint64_t irq_pending;       /* vectors raised inside, not yet delivered */
    bool reset_pending;
    bool fini_pending;
    bool rx_held;               /* a frame was refused while inside */
};

struct qrdma_core {
    struct qrdma_core_config cfg;
    struct qrdma_core_env env;
    struct qrdma_core_stats stats;
    struct qrdma_port_stats port_stats;
    /* The plain register file, indexed by offset / 4. */
    uint32_t regs[QRDMA_REG_FILE_END / 4];
    bool pe_ready;
    struct qrdma_lan lan;
    struct qrdma_cqp cqp;
    struct qrdma_gid_entry gids[QRDMA_GID_TABLE_MAX];
    struct qrdma_mcast mcast;
    struct qrdma_eq ceq[QRDMA_MAX_CEQS];
    struct qrdma_eq aeq;
    struct qrdma_intr intr;
    struct qrdma_hmc hmc;
    struct qrdma_objs obj;
    struct qrdma_dp dp;
    struct qrdma_core_guard guard;
    /*
     * Frames the netdev holds for us (QRDMA_TX_QUEUED answers not yet
     * followed by qrdma_core_tx_ready()): while there are any, the device
     * transmits nothing, as a NIC stops at a full TX ring. It mirrors the
     * netdev, not the device, so no reset clears it.
     */
    uint32_t tx_queued;
};

/* Defaults for every limit; the QEMU properties start from these. */
void qrdma_core_config_defaults(struct qrdma_core_config *cfg);

/*
 * The fd the embedding watches for the backend (readable: run the data
 * path, QRDMA_WORK_DP), or -1 when the backend has none (sw: its timer is
 * enough). The same fd from init to fini.
 */
int qrdma_core_backend_wait_fd(struct qrdma_core *core);

/* The enum qrdma_core_backend a backend= value names, or -1. */
int qrdma_core_backend_from_name(const char *name);

/*
 * Check cfg and bind the core to env. Returns 0, or -EINVAL with a reason
 * in err. Leaves the device in reset; call qrdma_core_reset() next.
 */
int qrdma_core_init(struct qrdma_core *core,
                    const struct qrdma_core_config *cfg,
                    const struct qrdma_core_env *env, char *err,
                    size_t err_len);

/*
 * Power-on, function-level or bus reset: all state back to its reset
 * value. Safe from any context: called from inside one of the core's own
 * callbacks, it is done when the core's outermost call returns (see
 * struct qrdma_core_guard); otherwise at once.
 */
void qrdma_core_reset(struct qrdma_core *core);

/*
 * Free what the core allocated (the object arrays, the transport). The
 * embedding calls it when the device goes away; the core may be
 * initialised again afterwards. Safe on a core that was never initialised,
 * if it was zeroed. Called from inside a callback, it is done when the
 * outermost call returns; the embedding must keep the core's memory until
 * then, and its callbacks must do nothing (the device is gone) meanwhile.
 */
void qrdma_core_fini(struct qrdma_core *core);

/* Is the core inside one of its entry points (a callback's caller may ask)? */
bool qrdma_core_busy(const struct qrdma_core *core);

/*
 * Live migration (qrdma_mig.c, docs/migration.md). qrdma_core_save()
 * writes the whole device's state to a malloc'd stream (*buf, *len; the
 * caller frees it) with the VM stopped; the core is left as it was.
 * qrdma_core_load() resets the core, reads a stream into it and restarts
 * its work; on failure the core is left reset, never half restored. Both
 * return 0 or -errno with the reason in err, naming the section and the
 * field. can_save says whether save would run at all (a backend without
 * save/load ops, such as verbs, blocks migration).
 */
bool qrdma_core_can_save(struct qrdma_core *core, char *err, size_t err_len);
int qrdma_core_save(struct qrdma_core *core, uint8_t **buf, size_t *len,
                    char *err, size_t err_len);
int qrdma_core_load(struct qrdma_core *core, const uint8_t *buf, size_t len,
                    char *err, size_t err_len);

/*
 * qrdma_core_save() that also tells on_field of every section opened
 * (field NULL) and every field written in it, in stream order (struct
 * qrdma_mig's on_field). For the layout guard
 * (tests/unit/test_core_mig_layout.c).
 */
typedef void qrdma_core_mig_field_fn(void *opaque, uint32_t tag,
                                     unsigned version, const char *field,
                                     unsigned width);
int qrdma_core_save_walk(struct qrdma_core *core,
                         qrdma_core_mig_field_fn *on_field, void *opaque,
                         uint8_t **buf, size_t *len, char *err,
                         size_t err_len);

/* The data-path timer (env.timer_mod) fired. */
void qrdma_core_timer(struct qrdma_core *core);

/* The PE-ready timer fired. */
void qrdma_core_pe_ready(struct qrdma_core *core);

/*
 * The embedding asks the guest to announce the Ethernet function's
 * addresses (after an incoming migration, once per round of QEMU's
 * announcement): an AEQE QRDMA_AE_ANNOUNCE, posted from the work it kicks
 * (QRDMA_WORK_ANNOUNCE), so a VM not yet running gets it when it runs.
 * Without an AEQ (the driver has not brought the device up) there is no
 * one to ask, and nothing is posted.
 */
void qrdma_core_announce(struct qrdma_core *core);

/* BAR0. Any size and offset is accepted here and checked by the core. */
uint32_t qrdma_core_reg_read(struct qrdma_core *core, uint64_t offset,
                             unsigned size);
void qrdma_core_reg_write(struct qrdma_core *core, uint64_t offset,
                          unsigned size, uint64_t value);

/* The doorbell BAR. */
uint32_t qrdma_core_db_read(struct qrdma_core *core, uint64_t offset,
                            unsigned size);
void qrdma_core_db_write(struct qrdma_core *core, uint64_t offset,
                         unsigned size, uint64_t value);
/*
 * An SQ doorbell (offset QRDMA_DB_SQ) of @page was rung and its value not
 * seen: the embedding's notification of a write it did not dispatch (an
 * ioeventfd, which carries no data). Every QP of the page is looked at;
 * each finds its new SQ WQEs by their VALID bits (docs/hw-spec.md, "SQ
 * notifications"). Called from any thread, the device's lock held.
 */
void qrdma_core_db_notify(struct qrdma_core *core, uint32_t page);

/* Name of a BAR0 register, or NULL for a hole. For traces and tests. */
const char *qrdma_core_reg_name(uint64_t offset);

/* Do the work a kick asked for (QRDMA_WORK_* bits). */
void qrdma_core_run(struct qrdma_core *core, unsigned what);
/*
 * A frame send_frame answered with QRDMA_TX_QUEUED has left the netdev (or
 * was purged): once none is left, transmit resumes where it stopped (the
 * LAN ring and the RDMA transport, from a kick). Safe from anywhere,
 * inside the core's own calls too.
 */
void qrdma_core_tx_ready(struct qrdma_core *core);

/*
 * LAN receive (qrdma_lan.c). can_receive is false only while receive is on
 * and no buffer is posted; receive then returns 0 and the embedding holds
 * the frame until rx_ready. Otherwise receive consumes the frame (stored,
 * steered to the RDMA engine, or dropped and counted) and returns len.
 */
bool qrdma_core_lan_can_receive(struct qrdma_core *core);
/* Is gid (16 bytes, network order) in the GID table the driver programmed? */
bool qrdma_core_gid_is_own(struct qrdma_core *core, const uint8_t gid[16]);
size_t qrdma_core_lan_receive(struct qrdma_core *core, const uint8_t *frame,
                              size_t len);

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
int qrdma_core_hmc_object(struct qrdma_core *core, enum qrdma_hmc_type type,
                          uint32_t index, uint64_t *gpa);

/* ---- objects: what the data path uses ------------------------------------ */

/*
 * How many objects of type t (QRDMA_HMC_QP..AH) exist; OBJ_COUNT(t) reads it.
 */
uint32_t qrdma_core_obj_count(struct qrdma_core *core, enum qrdma_hmc_type t);

/*
 * The working copy of an object that exists, or NULL (no layout, an ID
 * beyond the committed count, or no such object). Never logs: a miss is
 * the caller's to report (BAD_DOORBELL, a CQE with an error status...).
 */
struct qrdma_qp *qrdma_qp_get(struct qrdma_core *core, uint32_t qp_id);
struct qrdma_cq *qrdma_cq_get(struct qrdma_core *core, uint32_t cq_id);
struct qrdma_srq *qrdma_srq_get(struct qrdma_core *core, uint32_t srq_id);
struct qrdma_ah *qrdma_ah_get(struct qrdma_core *core, uint32_t ah_id);

/*
 * Guest-physical address of byte offset of ring q: offset < the ring's
 * size, and an entry never crosses a 4 KB page (strides are powers of two
 * of at most 1 KB), so the address covers a whole entry. For a VIRTMAP
 * ring the PBLE is read through the HMC on every call. Returns 0, or a
 * positive enum qrdma_pble_error after logging a guest error (RANGE also
 * for an offset beyond the ring). Whether the page is guest RAM is for the
 * caller's dma_read/dma_write to find out.
 */
int qrdma_queue_addr(struct qrdma_core *core, const struct qrdma_queue *q,
                     uint64_t offset, uint64_t *gpa);
/*
 * The same, its guest errors naming the queue: kind ("QP SQ", "CQ"...) and ID.
 */
int qrdma_queue_addr_of(struct qrdma_core *core, const struct qrdma_queue *q,
                        const char *kind, uint32_t id, uint64_t offset,
                        uint64_t *gpa);

/*
 * MR translation. qrdma_mr_translate() checks an access of len bytes at
 * iova through STag stag by a QP of PD pd wanting the rights in access
 * (QRDMA_ACCESS_LOCAL_WRITE, _REMOTE_WRITE, _REMOTE_READ, _REMOTE_ATOMIC;
 * 0 for a local read, which every MR allows): the whole STag (index within
 * the committed MRs, an MR in state VALID, its key byte), the PD, the
 * bounds (iova..iova+len-1 inside the MR, no wrap) and the rights. On
 * success it fills walk; qrdma_mr_walk_next() then yields the access
 * piece by piece, each piece inside one page of the MR, reading PBLEs and
 * checking each page (aligned to the MR's page size, guest RAM) as it
 * goes. A zero len passes the checks with nothing to walk.
 *
 *   struct qrdma_mr_walk w;
 *   uint64_t gpa, n;
 *   int err = qrdma_mr_translate(core, lkey, qp->pd, addr, len, 0, &w);
 *   while (!err && w.left) {
 *       err = qrdma_mr_walk_next(core, &w, &gpa, &n);
 *       if (!err) { ...DMA n bytes at gpa... }
 *   }
 *
 * Every failure logs one guest error naming the STag and the cause and
 * returns its own code, so the caller can pick the completion status.
 */
enum qrdma_mr_error {
    /* STag index beyond the committed MRs (or no layout) */
    QRDMA_MR_ERR_INDEX = 1,
    QRDMA_MR_ERR_INVALID = 2,   /* no MR in state VALID at that index */
    QRDMA_MR_ERR_KEY = 3,       /* the STag's key byte is not the MR's */
    QRDMA_MR_ERR_PD = 4,        /* the MR belongs to another PD */
    QRDMA_MR_ERR_BOUNDS = 5,    /* the access is not inside the MR, or wraps */
    /* the MR does not grant a right the access needs */
    QRDMA_MR_ERR_ACCESS = 6,
    /* a PBLE beyond the committed count or not HMC-backed */
    QRDMA_MR_ERR_PBLE = 7,
    /* a page address not aligned to the MR's page size */
    QRDMA_MR_ERR_ALIGN = 8,
    /* a page (or a piece of it) outside guest RAM */
    QRDMA_MR_ERR_NOT_RAM = 9,
    QRDMA_MR_ERR_QP = 10,       /* a type 2 window bound to another QP */
};

/* qp_id for an access that no QP makes: a type 2 window refuses it. */
#define QRDMA_MR_NO_QP UINT32_MAX

struct qrdma_mr_walk {
    uint32_t stag;              /* the MR, checked again at every step */
    /* offset of the next byte from the MR's first page */
    uint64_t pos;
    uint64_t left;              /* bytes still to yield */
};

/* A fast-register WQE's new translation (docs/hw-spec.md, section 19). */
struct qrdma_fast_reg {
    uint32_t stag;              /* MR index and its new key byte */
    uint32_t access;            /* QRDMA_ACCESS_* */
    uint64_t iova;
    uint64_t length;
    uint64_t first;             /* first PBLE: the MR's own (ALLOC_STAG arg4) */
    uint64_t fbo;
    unsigned page_log2;
    unsigned levels;            /* 1 */
};

int qrdma_mr_fast_reg(struct qrdma_core *core, uint32_t pd,
                      const struct qrdma_fast_reg *fr);

int qrdma_mr_translate(struct qrdma_core *core, uint32_t stag, uint32_t pd,
                       uint64_t iova, uint64_t len, unsigned access,
                       struct qrdma_mr_walk *walk);
/*
 * The same for an access QP qp_id makes (QRDMA_MR_NO_QP: none). stag may
 * name a bound memory window (interface 0.7): only remote accesses may
 * use one; its PD, its QP (type 2), its bounds and its rights are checked,
 * then the access walks the MR it is bound to, whose own remote rights do
 * not matter (IBTA 10.6.7). qrdma_mr_translate() is this with no QP.
 */
int qrdma_mr_translate_qp(struct qrdma_core *core, uint32_t stag, uint32_t pd,
                          uint32_t qp_id, uint64_t iova, uint64_t len,
                          unsigned access, struct qrdma_mr_walk *walk);

/*
 * Memory windows, in SQ order (docs/hw-spec.md section 18.4). A bind or
 * an invalidate that breaks a rule returns -1 with the reason logged; the
 * WQE then completes with MW_BIND_ERR (bind) or LOC_QP_OP_ERR (LOCAL_INV),
 * and a SEND_WITH_INV is refused by the responder.
 */
struct qrdma_mw_bind {
    uint32_t mw_stag;           /* the window's STag now */
    uint32_t new_stag;          /* its index with the new key byte */
    /* the MR (unused when a type 1 window is unbound) */
    uint32_t mr_stag;
    uint32_t access;            /* QRDMA_ACCESS_REMOTE_* */
    uint64_t addr;
    uint64_t length;
};

int qrdma_mw_bind(struct qrdma_core *core, uint32_t pd, uint32_t qp_id,
                  const struct qrdma_mw_bind *bind);
/*
 * LOCAL_INV, SEND_WITH_INV: a fast-register MR or a bound type 2 window of PD
 * pd.
 */
int qrdma_mr_invalidate(struct qrdma_core *core, uint32_t pd, uint32_t stag);
/*
 * DESTROY_QP: type 2 windows bound to the QP become unbound, so no later
 * QP with its ID can use them.
 */
void qrdma_mw_qp_gone(struct qrdma_core *core, uint32_t qp_id);
int qrdma_mr_walk_next(struct qrdma_core *core, struct qrdma_mr_walk *walk,
                       uint64_t *gpa, uint64_t *len);

/*
 * Translate and copy in one go: guest memory behind (stag, iova) to buf
 * (qrdma_mr_read) or buf to it (qrdma_mr_write), piece by piece. The same
 * checks and codes; a piece that fails the DMA is QRDMA_MR_ERR_NOT_RAM.
 * A failure may leave part of the copy done.
 */
int qrdma_mr_read(struct qrdma_core *core, uint32_t stag, uint32_t pd,
                  uint64_t iova, void *buf, uint64_t len, unsigned access);
int qrdma_mr_write(struct qrdma_core *core, uint32_t stag, uint32_t pd,
                   uint64_t iova, const void *buf, uint64_t len,
                   unsigned access);
int qrdma_mr_read_qp(struct qrdma_core *core, uint32_t stag, uint32_t pd,
                     uint32_t qp_id, uint64_t iova, void *buf, uint64_t len,
                     unsigned access);
int qrdma_mr_write_qp(struct qrdma_core *core, uint32_t stag, uint32_t pd,
                      uint32_t qp_id, uint64_t iova, const void *buf,
                      uint64_t len, unsigned access);
/*
 * The same checks, then the pieces mapped for reading (env.dma_map_read)
 * into iov, at most max: their number; 0 when they cannot all be mapped
 * (no dma_map_read, a piece the embedding cannot map, more than max
 * pieces; nothing stays mapped and nothing is reported: a copy with
 * qrdma_mr_read_qp names the fault); or minus a QRDMA_MR_ERR_* code.
 * Give the pieces back with qrdma_mr_unmap_read.
 */
int qrdma_mr_map_read_qp(struct qrdma_core *core, uint32_t stag, uint32_t pd,
                         uint32_t qp_id, uint64_t iova, uint64_t len,
                         unsigned access, struct iovec *iov, unsigned max);
void qrdma_mr_unmap_read(struct qrdma_core *core, const struct iovec *iov,
                         unsigned n);

#endif /* QRDMA_CORE_H */
