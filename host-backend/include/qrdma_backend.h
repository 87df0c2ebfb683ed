/*
 * The contract between the qrdma device core (qemu-hw/core/) and a host
 * backend, the part that carries the device's RDMA traffic:
 * host-backend/sw (the software RoCEv2 transport, sw_backend.c over the
 * qsw engine) and, later, host-backend/verbs (a host RDMA NIC through
 * libibverbs). docs/backends.md is the prose of this header.
 *
 * The core owns the guest's side: rings, WQE parsing and checks, CQEs,
 * CEQEs and AEQEs, the MR table and its translation. A backend owns the
 * transport. The core hands it neutral objects and work requests through
 * struct qrdma_be_ops; the backend answers through struct
 * qrdma_be_callbacks. Plain C: no QEMU types, no qsw, no libibverbs.
 *
 * Identifiers: the core names QPs, CQs and SRQs by their HMC index (the
 * guest's QP ID, CQ ID, SRQ ID) and the guest's memory by STag
 * (MR_INDEX[31:8] | KEY[7:0], docs/hw-spec.md section 18). Wire
 * identifiers, the QPN and the rkey a peer uses, are the backend's: it
 * returns them at QP creation and MR registration (the sw backend returns
 * the core's own; a host NIC its own), and the device hands them to the
 * guest (CAP_FEATURES.WIRE_IDS, hw-spec section 18.4). So in a WR an SGE
 * lkey, a LOCAL_INV's and a FAST_REG's key are STags; an RDMA or atomic
 * rkey, a SEND_WITH_INV's key, a UD remote_qpn and dest_qp_num are the
 * peer's wire numbers, passed through. Callbacks name the QP by QP ID and
 * memory by STag: a backend whose wire numbers differ translates its own
 * back before it calls them.
 *
 * Threading (docs/backends.md, "Threading"): the core calls every op from
 * its one context (the BQL in QEMU), inside one of its entry points, one
 * at a time. A backend calls the callbacks only synchronously, from inside
 * the op that caused them, on the thread that called the op. From inside
 * a callback the core may call post_send and qp_state, nothing else. reset
 * and destroy are never called from inside a callback: the core's
 * re-entrancy guard (struct qrdma_core_guard) defers a reset asked for
 * there until its outermost entry point returns; they make no callbacks.
 *
 * Numbering: statuses, opcodes, flags, states, attribute masks, MTUs and
 * events use the numeric values of the libibverbs enums they mirror
 * (ibv_wc_status, ibv_wc_opcode, ibv_wc_flags, ibv_wr_opcode,
 * ibv_send_flags, ibv_access_flags, ibv_qp_type, ibv_qp_state,
 * ibv_qp_attr_mask, ibv_mtu, ibv_event_type), as the hardware interface's
 * CQE fields and the qsw engine do, so values pass through unchanged.
 * Return values are 0 or a negative errno (<errno.h>).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_BACKEND_H
#define QRDMA_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* SGEs per send or receive work request */
#define QRDMA_BE_MAX_SGE        16
#define QRDMA_BE_MAX_INLINE     4096    /* inline bytes per send work request */
#define QRDMA_BE_MCAST_MAX_QPS  64      /* QPs rx_mcast names for one frame */

/* Completion status: the values of enum ibv_wc_status. */
enum qrdma_be_wc_status {
    QRDMA_BE_WC_SUCCESS            = 0,
    QRDMA_BE_WC_LOC_LEN_ERR        = 1,
    QRDMA_BE_WC_LOC_QP_OP_ERR      = 2,
    QRDMA_BE_WC_LOC_EEC_OP_ERR     = 3,
    QRDMA_BE_WC_LOC_PROT_ERR       = 4,
    QRDMA_BE_WC_WR_FLUSH_ERR       = 5,
    QRDMA_BE_WC_MW_BIND_ERR        = 6,
    QRDMA_BE_WC_BAD_RESP_ERR       = 7,
    QRDMA_BE_WC_LOC_ACCESS_ERR     = 8,
    QRDMA_BE_WC_REM_INV_REQ_ERR    = 9,
    QRDMA_BE_WC_REM_ACCESS_ERR     = 10,
    QRDMA_BE_WC_REM_OP_ERR         = 11,
    QRDMA_BE_WC_RETRY_EXC_ERR      = 12,
    QRDMA_BE_WC_RNR_RETRY_EXC_ERR  = 13,
    QRDMA_BE_WC_LOC_RDD_VIOL_ERR   = 14,
    QRDMA_BE_WC_REM_INV_RD_REQ_ERR = 15,
    QRDMA_BE_WC_REM_ABORT_ERR      = 16,
    QRDMA_BE_WC_INV_EECN_ERR       = 17,
    QRDMA_BE_WC_INV_EEC_STATE_ERR  = 18,
    QRDMA_BE_WC_FATAL_ERR          = 19,
    QRDMA_BE_WC_RESP_TIMEOUT_ERR   = 20,
    QRDMA_BE_WC_GENERAL_ERR        = 21,
};

/*
 * Completion opcode: the values of enum ibv_wc_opcode; >= RECV: receive side.
 */
enum qrdma_be_wc_opcode {
    QRDMA_BE_WC_SEND               = 0,
    QRDMA_BE_WC_RDMA_WRITE         = 1,
    QRDMA_BE_WC_RDMA_READ          = 2,
    QRDMA_BE_WC_COMP_SWAP          = 3,
    QRDMA_BE_WC_FETCH_ADD          = 4,
    QRDMA_BE_WC_BIND_MW            = 5,
    QRDMA_BE_WC_LOCAL_INV          = 6,
    QRDMA_BE_WC_FAST_REG           = 10,    /* the kernel's IB_WC_REG_MR */
    QRDMA_BE_WC_RECV               = 128,
    QRDMA_BE_WC_RECV_RDMA_WITH_IMM = 129,
};

/*
 * struct qrdma_be_wc.wc_flags: the values of enum ibv_wc_flags, and one of
 * ours.
 */
#define QRDMA_BE_WC_GRH         (1u << 0)
#define QRDMA_BE_WC_WITH_IMM    (1u << 1)
#define QRDMA_BE_WC_WITH_INV    (1u << 3)
/* the message had the solicited-event bit */
#define QRDMA_BE_WC_SOLICITED   (1u << 16)

/*
 * Send opcode: the values of enum ibv_wr_opcode (FAST_REG: the kernel's
 * IB_WR_REG_MR).
 */
enum qrdma_be_wr_opcode {
    QRDMA_BE_WR_RDMA_WRITE           = 0,
    QRDMA_BE_WR_RDMA_WRITE_WITH_IMM  = 1,
    QRDMA_BE_WR_SEND                 = 2,
    QRDMA_BE_WR_SEND_WITH_IMM        = 3,
    QRDMA_BE_WR_RDMA_READ            = 4,
    QRDMA_BE_WR_ATOMIC_CMP_AND_SWP   = 5,
    QRDMA_BE_WR_ATOMIC_FETCH_AND_ADD = 6,
    QRDMA_BE_WR_LOCAL_INV            = 7,
    QRDMA_BE_WR_BIND_MW              = 8,
    QRDMA_BE_WR_SEND_WITH_INV        = 9,
    QRDMA_BE_WR_FAST_REG             = 0x20,
};

/* struct qrdma_be_send_wr.send_flags: the values of enum ibv_send_flags. */
#define QRDMA_BE_SEND_FENCE     (1u << 0)
#define QRDMA_BE_SEND_SIGNALED  (1u << 1)
#define QRDMA_BE_SEND_SOLICITED (1u << 2)
#define QRDMA_BE_SEND_INLINE    (1u << 3)

/*
 * Access rights: the values of enum ibv_access_flags (and of QRDMA_ACCESS_*).
 */
#define QRDMA_BE_ACCESS_LOCAL_WRITE   (1u << 0)
#define QRDMA_BE_ACCESS_REMOTE_WRITE  (1u << 1)
#define QRDMA_BE_ACCESS_REMOTE_READ   (1u << 2)
#define QRDMA_BE_ACCESS_REMOTE_ATOMIC (1u << 3)

enum qrdma_be_qp_type {
    QRDMA_BE_QPT_RC = 2,
    QRDMA_BE_QPT_UC = 3,
    QRDMA_BE_QPT_UD = 4,
};

/* The values of enum ibv_qp_state (and of enum qrdma_qp_state). */
enum qrdma_be_qp_state {
    QRDMA_BE_QPS_RESET = 0,
    QRDMA_BE_QPS_INIT  = 1,
    QRDMA_BE_QPS_RTR   = 2,
    QRDMA_BE_QPS_RTS   = 3,
    QRDMA_BE_QPS_SQD   = 4,
    QRDMA_BE_QPS_SQE   = 5,
    QRDMA_BE_QPS_ERR   = 6,
};

/* Path MTU: the values of enum ibv_mtu (1 = 256 ... 5 = 4096). */
enum qrdma_be_mtu {
    QRDMA_BE_MTU_256 = 1,
    QRDMA_BE_MTU_512,
    QRDMA_BE_MTU_1024,
    QRDMA_BE_MTU_2048,
    QRDMA_BE_MTU_4096,
};

/*
 * qp_modify mask: the values of enum ibv_qp_attr_mask (and of QRDMA_QP_ATTR_*).
 */
#define QRDMA_BE_QP_ATTR_STATE              (1u << 0)
#define QRDMA_BE_QP_ATTR_ACCESS_FLAGS       (1u << 3)
#define QRDMA_BE_QP_ATTR_QKEY               (1u << 6)
#define QRDMA_BE_QP_ATTR_AV                 (1u << 7)
#define QRDMA_BE_QP_ATTR_PATH_MTU           (1u << 8)
#define QRDMA_BE_QP_ATTR_TIMEOUT            (1u << 9)
#define QRDMA_BE_QP_ATTR_RETRY_CNT          (1u << 10)
#define QRDMA_BE_QP_ATTR_RNR_RETRY          (1u << 11)
#define QRDMA_BE_QP_ATTR_RQ_PSN             (1u << 12)
#define QRDMA_BE_QP_ATTR_MAX_QP_RD_ATOMIC   (1u << 13)
#define QRDMA_BE_QP_ATTR_MIN_RNR_TIMER      (1u << 15)
#define QRDMA_BE_QP_ATTR_SQ_PSN             (1u << 16)
#define QRDMA_BE_QP_ATTR_MAX_DEST_RD_ATOMIC (1u << 17)
#define QRDMA_BE_QP_ATTR_DEST_QPN           (1u << 20)
/* Every attribute a backend is given; the core passes no other bit. */
#define QRDMA_BE_QP_ATTR_ALL                                                   \
    (QRDMA_BE_QP_ATTR_STATE | QRDMA_BE_QP_ATTR_ACCESS_FLAGS |                  \
     QRDMA_BE_QP_ATTR_QKEY | QRDMA_BE_QP_ATTR_AV | QRDMA_BE_QP_ATTR_PATH_MTU | \
     QRDMA_BE_QP_ATTR_TIMEOUT | QRDMA_BE_QP_ATTR_RETRY_CNT |                   \
     QRDMA_BE_QP_ATTR_RNR_RETRY | QRDMA_BE_QP_ATTR_RQ_PSN |                    \
     QRDMA_BE_QP_ATTR_MAX_QP_RD_ATOMIC | QRDMA_BE_QP_ATTR_MIN_RNR_TIMER |      \
     QRDMA_BE_QP_ATTR_SQ_PSN | QRDMA_BE_QP_ATTR_MAX_DEST_RD_ATOMIC |           \
     QRDMA_BE_QP_ATTR_DEST_QPN)

/*
 * Asynchronous events: the values of enum ibv_event_type. The event says
 * what id names: a CQ ID, a QP ID or an SRQ ID of the core.
 */
enum qrdma_be_event {
    /* CQ: the backend cannot complete into it */
    QRDMA_BE_EV_CQ_ERR              = 0,
    /* QP: a transport error with no WR to report it; QP in ERR */
    QRDMA_BE_EV_QP_FATAL            = 1,
    /* QP: the responder saw an invalid request; QP in ERR */
    QRDMA_BE_EV_QP_REQ_ERR          = 2,
    /* QP: the responder saw a remote access violation; QP in ERR */
    QRDMA_BE_EV_QP_ACCESS_ERR       = 3,
    /* QP: first packet received in RTR */
    QRDMA_BE_EV_COMM_EST            = 4,
    /* QP: SQD reached with nothing outstanding */
    QRDMA_BE_EV_SQ_DRAINED          = 5,
    /* SRQ: the backend cannot use it any more */
    QRDMA_BE_EV_SRQ_ERR             = 9,
    /* SRQ: its WQEs fell below the armed limit (srq_create/srq_modify) */
    QRDMA_BE_EV_SRQ_LIMIT           = 15,
    QRDMA_BE_EV_QP_LAST_WQE_REACHED = 16,   /* QP of an SRQ entered ERR */
    /*
     * The port (id 0): its state, speed or GIDs changed; the core asks
     * the port op again (libibverbs' PORT_ACTIVE, PORT_ERR, GID_CHANGE).
     */
    QRDMA_BE_EV_PORT_CHANGE         = 18,
};

/*
 * tp_event's events and the causes of a retransmission (the sw engine's
 * numbering).
 */
enum qrdma_be_tp_event {
    QRDMA_BE_TP_RETRANSMIT = 0,
    QRDMA_BE_TP_NAK_SENT = 1,
    QRDMA_BE_TP_NAK_RCVD = 2,
};

enum qrdma_be_retransmit {
    QRDMA_BE_RETRANSMIT_TIMEOUT = 0,
    QRDMA_BE_RETRANSMIT_NAK = 1,
    QRDMA_BE_RETRANSMIT_RNR = 2,
};

/* mr_atomic's operation. */
enum qrdma_be_atomic_op {
    QRDMA_BE_ATOMIC_CMP_SWP   = 0,
    QRDMA_BE_ATOMIC_FETCH_ADD = 1,
};

/* ---- work requests and completions --------------------------------------- */

/*
 * A scatter/gather element as the guest wrote it: an address in the MR of lkey.
 */
struct qrdma_be_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

/*
 * Where the frames of an RC/UC QP (qrdma_be_qp_attr.av) or of one UD send
 * (qrdma_be_send_wr.ud.av) go. GIDs are 16-byte IPv6 addresses (an
 * IPv4-mapped GID for RoCEv2 over IPv4).
 */
struct qrdma_be_av {
    uint8_t dmac[6];
    uint8_t smac[6];            /* the port's station address */
    uint8_t dgid[16];
    /* the entry sgid_index names in the guest's GID table */
    uint8_t sgid[16];
    uint8_t sgid_index;
    uint8_t traffic_class;
    uint8_t hop_limit;          /* 0 means 64 */
    uint32_t flow_label;        /* 20 bits */
};

/*
 * A fast-register WQE's new translation for an MR ALLOC_STAG made
 * (docs/hw-spec.md section 19.2). The backend does not interpret it: it
 * hands it back to the fast_reg callback when the WR runs, in SQ order.
 */
struct qrdma_be_fast_reg {
    uint32_t stag;              /* the MR's index and its new key byte */
    uint32_t access;            /* QRDMA_BE_ACCESS_* */
    uint64_t iova;
    uint64_t length;
    uint64_t first;             /* the first PBLE of the page list */
    uint64_t fbo;               /* offset of byte 0 in the first page */
    uint32_t page_log2;
    uint32_t levels;
};

/*
 * A BIND_MW WQE (docs/hw-spec.md section 18.4), handed back to the bind_mw
 * callback when the WR runs, in SQ order; the backend does not interpret it.
 */
struct qrdma_be_bind_mw {
    uint32_t mw_stag;           /* the window's STag now */
    uint32_t new_stag;          /* its index with the new key byte */
    uint32_t mr_stag;           /* the MR it is bound to */
    uint32_t access;            /* QRDMA_BE_ACCESS_REMOTE_* */
    uint64_t addr;
    uint64_t length;
};

/*
 * One send WQE. wr_id is the core's (the SQ WQE index); the backend gives it
 * back.
 */
struct qrdma_be_send_wr {
    uint64_t wr_id;
    uint32_t opcode;            /* enum qrdma_be_wr_opcode */
    uint32_t send_flags;        /* QRDMA_BE_SEND_* */
    uint32_t num_sge;           /* 0 with INLINE */
    struct qrdma_be_sge sg_list[QRDMA_BE_MAX_SGE];
    const void *inline_data;    /* INLINE: valid only during post_send */
    uint32_t inline_len;
    /* *_WITH_IMM: as the guest wrote it (network order, as verbs) */
    uint32_t imm_data;
    uint32_t invalidate_stag;   /* SEND_WITH_INV, LOCAL_INV */
    struct {
        uint64_t remote_addr;
        uint32_t rkey;
    } rdma;                     /* RDMA_WRITE*, RDMA_READ */
    struct {
        uint64_t remote_addr;
        uint32_t rkey;
        uint64_t compare_add;   /* CMP_AND_SWP: compare; FETCH_AND_ADD: add */
        uint64_t swap;
    } atomic;
    struct qrdma_be_fast_reg fast_reg;  /* FAST_REG */
    struct qrdma_be_bind_mw bind_mw;    /* BIND_MW */
    struct {
        struct qrdma_be_av av;
        uint32_t remote_qpn;
        /* high bit set: the QP's own Q_Key (IBTA 10.2) */
        uint32_t remote_qkey;
    } ud;                       /* sends on a UD QP */
};

/*
 * One receive WQE. wr_id is the core's (the RQ or SRQ WQE index); the backend
 * gives it back.
 */
struct qrdma_be_recv_wr {
    uint64_t wr_id;
    uint32_t num_sge;
    struct qrdma_be_sge sg_list[QRDMA_BE_MAX_SGE];
};

/* One work completion of a WR the core posted or handed over. */
struct qrdma_be_wc {
    uint64_t wr_id;             /* as the core gave it */
    uint32_t status;            /* enum qrdma_be_wc_status */
    uint32_t opcode;            /* enum qrdma_be_wc_opcode */
    /* receive: payload bytes (UD: plus the 40 GRH bytes, as verbs) */
    uint32_t byte_len;
    uint32_t imm_data;          /* WITH_IMM */
    /* WITH_INV: the wire rkey the peer sent (the guest's ib_mr.rkey) */
    uint32_t invalidated_stag;
    uint32_t src_qp;            /* UD receive: the sender's wire QPN */
    /* QRDMA_BE_WC_GRH, _WITH_IMM, _WITH_INV, _SOLICITED */
    uint32_t wc_flags;
    uint32_t vendor_err;        /* backend detail, 0 normally */
};

/* ---- objects ------------------------------------------------------------- */

/* Handles: each backend defines its own; the core only passes them back. */
struct qrdma_be;
struct qrdma_be_qp;
struct qrdma_be_srq;
struct qrdma_mig;               /* qrdma_mig_stream.h */

/*
 * What the core knows at creation; the frame-carrying parts only matter to a
 * backend that sends frames.
 */
struct qrdma_be_params {
    /* the port's station address at power-on (set_mac changes it) */
    uint8_t mac[6];
    /*
     * RC: report RETRY_EXC_ERR only after the retries *and* this long
     * without progress (0: the retries alone, IBTA's rule).
     */
    uint64_t stall_floor_ns;
    /*
     * What only one backend understands (verbs: struct
     * qrdma_be_verbs_config, qrdma_backend_verbs.h); NULL for sw. Valid
     * during create; the backend copies what it keeps.
     */
    const void *backend_config;
    /* Test hook: damage to the frames the backend sends (all zero: none). */
    struct qrdma_be_fault {
        uint32_t loss_ppm, dup_ppm, reorder_ppm, corrupt_ppm;
        uint64_t delay_ns;
        uint64_t seed;
    } fault;
};

struct qrdma_be_qp_init {
    uint32_t qp_id;             /* the core's: callbacks name the QP by it */
    uint32_t type;              /* enum qrdma_be_qp_type */
    uint32_t pd;
    uint32_t send_cq, recv_cq;  /* the core's CQ IDs */
    bool has_srq;
    uint32_t srq;               /* the core's SRQ ID, with has_srq */
    /* Send WRs the core hands over before it waits for sq_space. */
    uint32_t max_send_wr;
    uint32_t max_recv_wr;       /* the RQ ring's depth; 0 with an SRQ */
    uint32_t max_send_sge, max_recv_sge, max_inline;
};

/*
 * A shared receive queue for a backend that posts receives ahead (srq_create).
 */
struct qrdma_be_srq_init {
    /* the core's: get_srq_recv and events name the SRQ by it */
    uint32_t srq_id;
    uint32_t pd;
    uint32_t max_wr;            /* the SRQ ring's depth */
    uint32_t max_sge;           /* SGEs per WQE */
    uint32_t limit;             /* the limit event's threshold; 0: not armed */
};

/* qp_modify's attributes; only those in the mask are meaningful. */
struct qrdma_be_qp_attr {
    uint32_t qp_state;          /* enum qrdma_be_qp_state */
    uint32_t path_mtu;          /* enum qrdma_be_mtu */
    uint32_t qkey;
    uint32_t rq_psn, sq_psn;
    uint32_t dest_qp_num;       /* the peer's wire QPN */
    /* QRDMA_BE_ACCESS_REMOTE_* the responder accepts */
    uint32_t qp_access_flags;
    struct qrdma_be_av av;
    uint8_t max_rd_atomic, max_dest_rd_atomic;
    uint8_t min_rnr_timer;      /* 5-bit code, IBTA table 45 */
    uint8_t timeout;            /* 4.096 us * 2^timeout, 0: infinite */
    uint8_t retry_cnt, rnr_retry;
};

/* An MR as a CQP command made it (REG_MR, ALLOC_STAG). */
enum qrdma_be_mr_type {
    QRDMA_BE_MR_MEM = 0,        /* REG_MR: pages in PBLEs or contiguous */
    /* ALLOC_STAG: no translation until a FAST_REG WR */
    QRDMA_BE_MR_FAST_REG = 1,
    /* REG_MR DMA: all of guest RAM, iova = guest-physical address */
    QRDMA_BE_MR_DMA = 2,
};

struct qrdma_be_mr {
    uint32_t stag;
    uint32_t pd;
    uint32_t access;            /* QRDMA_BE_ACCESS_* */
    uint32_t type;              /* enum qrdma_be_mr_type */
    uint64_t iova, length;      /* MEM */
    uint32_t max_pages;         /* FAST_REG */
};

/*
 * The transport's port counters since create or the last reset (the
 * device's hardware counters, docs/hw-spec.md section 20). A backend fills
 * what it knows and leaves the rest 0.
 */
struct qrdma_be_stats {
    /* RoCEv2 frames sent, Ethernet header to ICRC */
    uint64_t tx_pkts, tx_bytes;
    /* RoCEv2 frames handed to the transport */
    uint64_t rx_pkts, rx_bytes;
    uint64_t retrans_pkts;              /* request packets sent again */
    uint64_t local_ack_timeouts;        /* retransmit timer expiries */
    uint64_t seq_naks_rcvd;             /* PSN sequence error NAKs received */
    uint64_t rnr_naks_rcvd, rnr_naks_sent;
    /* responder: requests with an old PSN */
    uint64_t duplicate_requests;
    /* responder: requests past the expected PSN */
    uint64_t out_of_sequence;
    uint64_t icrc_errors;               /* frames dropped for a bad ICRC */
    uint64_t rx_read_requests, rx_write_requests, rx_atomic_requests;
    /* UD datagrams dropped for want of a receive WQE */
    uint64_t out_of_buffer;
    /*
     * RoCE frames dropped for any other reason than a bad ICRC or a request
     * past the expected PSN (each counted above): malformed, for an unknown
     * QP or one in the wrong state or of another address, a bad Q_Key, a UC
     * message broken by a gap, a multicast frame not to QPN 0xffffff
     */
    uint64_t rx_drops;
};

/* ---- the core's side: callbacks ------------------------------------------ */

/*
 * What the core provides; `opaque` is the value given to create. Every
 * callback is always present.
 *
 * Memory (a backend that moves the data itself, sw): every access goes
 * through the core's MR table, which checks the whole STag, the PD, the
 * bounds and the rights in `access` (QRDMA_BE_ACCESS_*; 0 for a local
 * read, LOCAL_WRITE for a local write, REMOTE_* for a peer's access).
 * qp_id is the core's ID of the QP making the access: an rkey may name a
 * type 2 memory window, which only the QP it is bound to may use.
 * They return 0 or -EACCES; a refused access may have copied part.
 * mr_map_read, mr_unmap_read and frame_out_iov are the exception: all
 * three are NULL when the embedding cannot map guest memory.
 */
struct qrdma_be_callbacks {
    int (*mr_read)(void *opaque, uint32_t pd, uint32_t qp_id, uint32_t stag,
                   uint64_t iova, void *dst, uint32_t len, uint32_t access);
    int (*mr_write)(void *opaque, uint32_t pd, uint32_t qp_id, uint32_t stag,
                    uint64_t iova, const void *src, uint32_t len,
                    uint32_t access);
    /* The checks alone, for a whole range before any data moves. */
    int (*mr_check)(void *opaque, uint32_t pd, uint32_t qp_id, uint32_t stag,
                    uint64_t iova, uint64_t len, uint32_t access);
    /*
     * One 8-byte atomic at iova (8-byte aligned) through an rkey
     * (REMOTE_ATOMIC); *orig gets the old value.
     */
    int (*mr_atomic)(void *opaque, uint32_t pd, uint32_t qp_id, uint32_t stag,
                     uint64_t iova, enum qrdma_be_atomic_op op,
                     uint64_t compare_add, uint64_t swap, uint64_t *orig);
    /*
     * Where [iova, iova+len) of MR stag lies in guest-physical memory: fn
     * for each piece in order (a backend that registers guest memory with
     * a host NIC builds its mapping from them). 0, the first non-zero fn
     * returned, or -EACCES when the MR refuses the range.
     */
    int (*mr_gpa_walk)(void *opaque, uint32_t pd, uint32_t stag, uint64_t iova,
                       uint64_t len,
                       int (*fn)(void *arg, uint64_t gpa, uint64_t len),
                       void *arg);
    /*
     * A FAST_REG WR runs (in SQ order): the MR gets its new translation. 0 or
     * -EINVAL.
     */
    int (*fast_reg)(void *opaque, uint32_t pd,
                    const struct qrdma_be_fast_reg *fr);
    /*
     * LOCAL_INV at the requester, SEND_WITH_INV at the responder, by QP
     * qp_id: a fast-register MR or a type 2 window. 0 or -EINVAL.
     */
    int (*invalidate)(void *opaque, uint32_t pd, uint32_t qp_id, uint32_t stag);
    /*
     * A BIND_MW WR of QP qp_id runs (in SQ order). 0 or -EINVAL (the WR fails
     * with MW_BIND_ERR).
     */
    int (*bind_mw)(void *opaque, uint32_t pd, uint32_t qp_id,
                   const struct qrdma_be_bind_mw *bind);

    /*
     * The next receive WQE of QP qp_id (from its RQ, or from its SRQ):
     * 0; -ENOENT when none is posted; -EIO when the next one is unusable
     * and the core has completed it in error (the backend then moves the
     * QP to ERR with QRDMA_BE_EV_QP_FATAL; an RC responder NAKs).
     */
    int (*get_recv)(void *opaque, uint32_t qp_id, struct qrdma_be_recv_wr *out);
    /*
     * The next receive WQE of SRQ srq_id, for a backend with srq_create
     * (one that posts receives ahead to a host SRQ): 0; -ENOENT when none
     * is posted; -EIO when the next one is unusable (the core has raised
     * SRQ_ERROR and skipped it). Its wr_id, given back in the receive
     * completion of whichever QP takes it, names the SRQ WQE.
     */
    int (*get_srq_recv)(void *opaque, uint32_t srq_id,
                        struct qrdma_be_recv_wr *out);
    /*
     * A completion of QP qp_id: send side (opcode < QRDMA_BE_WC_RECV) in
     * SQ order; a signaled one also retires the earlier unsignaled WRs.
     * Errors always complete.
     */
    void (*complete)(void *opaque, uint32_t qp_id,
                     const struct qrdma_be_wc *wc);
    void (*event)(void *opaque, enum qrdma_be_event ev, uint32_t id);
    /*
     * post_send refused a WR of qp_id with -ENOSPC and a slot is free again
     * (once per refusal streak).
     */
    void (*sq_space)(void *opaque, uint32_t qp_id);

    /*
     * One Ethernet frame (no FCS) onto the device's wire; the buffer is valid
     * during the call. Returns QRDMA_BE_TX_SENT, or QRDMA_BE_TX_BUSY: the
     * frame was taken but the wire is full (the device's transmit path
     * waits for the netdev to drain), and the backend sends no frame until
     * the core calls its tx_ready op; meanwhile it keeps its work and its
     * place, and its timers should not count the wait (docs/backends.md).
     * A frame handed over while busy anyway is dropped.
     */
    int (*frame_out)(void *opaque, const void *frame, size_t len);
    /*
     * Zero-copy transmit (docs/backends.md): the host memory behind
     * [iova, iova+len) of MR stag, checked as mr_read checks the access,
     * mapped for reading as at most max pieces in iov: their number (> 0);
     * 0 when the range cannot be mapped (the embedding has no mapping, a
     * piece is not guest RAM, more than max pieces): the backend then
     * copies with mr_read, which reports what is wrong; -EACCES when the
     * MR refuses the access. Reading does not dirty guest memory. Every
     * mapping goes back with mr_unmap_read once the frame is out.
     */
    int (*mr_map_read)(void *opaque, uint32_t pd, uint32_t qp_id, uint32_t stag,
                       uint64_t iova, uint32_t len, uint32_t access,
                       struct iovec *iov, unsigned max);
    void (*mr_unmap_read)(void *opaque, const struct iovec *iov, unsigned n);
    /*
     * frame_out for a frame in n pieces (headers, mapped payload, ICRC), valid
     * during the call; the same return values.
     */
    int (*frame_out_iov)(void *opaque, const struct iovec *iov, unsigned n);
    /*
     * Guest time in ns (stops while the VM is stopped), the clock of poll's
     * deadlines.
     */
    uint64_t (*now_ns)(void *opaque);
    /*
     * A transport event of QP qp_id, for the device's trace points: a
     * go-back-N retransmission from psn (detail: enum qrdma_be_retransmit),
     * a NAK or RNR NAK for psn sent or received (detail: its AETH
     * syndrome). Rare events only.
     */
    void (*tp_event)(void *opaque, uint32_t qp_id, enum qrdma_be_tp_event ev,
                     uint32_t psn, uint32_t detail);
    /*
     * Something the guest did that the backend refuses without a WR or
     * an event to report it by (a MAD the verbs backend's CM proxy cannot
     * carry): one line for the device's guest-error log.
     */
    void (*guest_error)(void *opaque, const char *msg);
};

/* What frame_out and frame_out_iov return. */
#define QRDMA_BE_TX_SENT    0   /* on the wire (or dropped: link down) */
/* taken, but the wire is full: no more frames until tx_ready */
#define QRDMA_BE_TX_BUSY    1

/* ---- the backend's side: ops --------------------------------------------- */

/*
 * Optional ops may be NULL; the core then does without (see each). Every
 * QP handle is valid from qp_create until qp_destroy, reset or destroy.
 */
/*
 * The optional features a backend carries (qrdma_be_ops.carries): the
 * core advertises only these in CAP_FEATURES, so the driver never offers
 * the guest what the backend would refuse (docs/hw-spec.md section 4.4).
 * RC, UD, UC, atomics and wire identifiers every backend carries.
 */
#define QRDMA_BE_CARRIES_SRQ        0x01u   /* shared receive queues */
/* FAST_REG, LOCAL_INV, SEND_WITH_INV */
#define QRDMA_BE_CARRIES_FAST_REG   0x02u
/* memory windows (bind_mw, window rkeys) */
#define QRDMA_BE_CARRIES_MW         0x04u
/* the transport's port counters (stats) */
#define QRDMA_BE_CARRIES_STATS      0x08u
/*
 * QP1, the GSI QP: MADs (rdma_cm's connection manager) on Q_Key 0x80010000
 * to and from QPN 1 of the peer. Without it CREATE_QP of the GSI QP fails.
 */
#define QRDMA_BE_CARRIES_GSI        0x10u

/* The GSI QP's QP ID (and the QPN peers send MADs to): QP 1, always. */
#define QRDMA_BE_GSI_QP_ID          1u

/*
 * The port of a backend on a host RDMA NIC (the port op): its state and
 * speed, and the host GIDs the guest may use (network order), in the
 * order the configuration named them.
 */
#define QRDMA_BE_PORT_MAX_GIDS 8
struct qrdma_be_port {
    bool active;                /* the host port is ACTIVE */
    uint32_t speed_mbps;        /* 0: unknown */
    unsigned ngids;
    uint8_t gid[QRDMA_BE_PORT_MAX_GIDS][16];
    /* the host's GID table index of each */
    uint8_t gid_index[QRDMA_BE_PORT_MAX_GIDS];
};

struct qrdma_be_ops {
    const char *name;           /* the device's backend= value */
    uint32_t carries;           /* QRDMA_BE_CARRIES_* */
    /*
     * Optional: what this backend carries as it was configured, a subset
     * of carries (the verbs backend carries GSI only with its CM proxy).
     * NULL: carries.
     */
    uint32_t (*carried)(struct qrdma_be *be);

    /*
     * A backend for one device. NULL with a reason in err (at most
     * err_len bytes with the NUL) when it cannot be made.
     */
    struct qrdma_be *(*create)(const struct qrdma_be_callbacks *cb,
                               void *opaque,
                               const struct qrdma_be_params *params, char *err,
                               size_t err_len);
    /*
     * Device reset: forget every QP (handles become invalid) and MR, with
     * no completions and no callbacks, and start over with create's
     * params. 0, or negative when the backend cannot go on: the core
     * then destroys it and the data path stays off until the next reset.
     */
    int (*reset)(struct qrdma_be *be);
    /* Free everything, with no callbacks. */
    void (*destroy)(struct qrdma_be *be);

    /*
     * A QP in RESET. 0 with *qp and *qpn (the QPN peers address it by on
     * the wire, below 2^24; CREATE_QP returns it to the guest), or
     * negative (-ENOMEM, -EINVAL).
     */
    int (*qp_create)(struct qrdma_be *be, const struct qrdma_be_qp_init *init,
                     struct qrdma_be_qp **qp, uint32_t *qpn);
    /*
     * The core's MODIFY_QP has checked the transition and attributes
     * (the IB state machine); mask holds QRDMA_BE_QP_ATTR_STATE and bits
     * of QRDMA_BE_QP_ATTR_ALL. To RESET: the QP forgets its work and
     * position with no completions and keeps its QPN. To RESET or ERR: an
     * acknowledgement the transport owes for messages it completed leaves
     * first (the consumer may act on those completions at once: iSER's
     * logout disconnects). 0 or negative.
     */
    int (*qp_modify)(struct qrdma_be *be, struct qrdma_be_qp *qp,
                     const struct qrdma_be_qp_attr *attr, uint32_t mask);
    /*
     * The core moves the QP to ERR for an error of its own (a completion
     * it could not write, a WQE it cannot execute): as a modify to ERR,
     * except that an owed acknowledgement is dropped, since it may cover
     * a message whose completion was lost. Optional: without it the core
     * modifies to ERR.
     */
    void (*qp_fail)(struct qrdma_be *be, struct qrdma_be_qp *qp);
    /* The QP's state now: a backend moves a QP to ERR or SQE by itself. */
    enum qrdma_be_qp_state (*qp_state)(struct qrdma_be *be,
                                       struct qrdma_be_qp *qp);
    /* No completions: the core flushes its own rings. */
    void (*qp_destroy)(struct qrdma_be *be, struct qrdma_be_qp *qp);

    /*
     * Queue one send WR (the backend copies what it keeps, inline data
     * included). 0; -ENOSPC when the backend's send queue is full (it
     * calls sq_space when a slot frees); another negative value refuses
     * the WR (the core completes it in error: LOC_PROT_ERR for -EACCES, a
     * local key the backend cannot resolve; LOC_QP_OP_ERR for the rest,
     * and the QP goes to ERR). On a QP in ERR a WR is
     * accepted and completes with WR_FLUSH_ERR.
     */
    int (*post_send)(struct qrdma_be *be, struct qrdma_be_qp *qp,
                     const struct qrdma_be_send_wr *wr);
    /*
     * Optional: the guest rang the RQ doorbell of this QP (not in ERR):
     * new receive WQEs may be posted. A backend that posts receives ahead
     * to a host QP takes them here with get_recv until -ENOENT, and
     * completes every one it took (WR_FLUSH_ERR once in ERR): the core
     * flushes the QP's remaining RQ WQEs only after those. NULL (sw):
     * receive WQEs are pulled with get_recv when a message needs one.
     */
    void (*recv_doorbell)(struct qrdma_be *be, struct qrdma_be_qp *qp);

    /*
     * Optional, all three or none, for a backend that posts receives ahead
     * to host SRQs (verbs): CREATE_SRQ made the SRQ (0 with *srq, or
     * negative: the command fails and the core forgets the SRQ; -ENOMEM:
     * out of host resources); MODIFY_SRQ set its limit (0: disarmed);
     * DESTROY_SRQ (no QP uses it; no completions). Such a backend takes
     * the guest's SRQ WQEs with get_srq_recv whenever it has room (the
     * guest rings no doorbell for an SRQ: it polls, see poll), and owns
     * the limit: it raises QRDMA_BE_EV_SRQ_LIMIT once per arming when
     * the WQEs it and the ring hold fall below it, and the core then
     * disarms the SRQ's limit and raises AEQE SRQ_LIMIT. A QP of the SRQ
     * comes to qp_create with has_srq and the SRQ ID. NULL (sw): the core
     * reads SRQ WQEs with get_recv when a message needs one and checks
     * the limit itself.
     */
    int (*srq_create)(struct qrdma_be *be, const struct qrdma_be_srq_init *init,
                      struct qrdma_be_srq **srq);
    int (*srq_modify)(struct qrdma_be *be, struct qrdma_be_srq *srq,
                      uint32_t limit);
    void (*srq_destroy)(struct qrdma_be *be, struct qrdma_be_srq *srq);

    /*
     * Optional MR hooks, after the core's CQP command has checked and
     * recorded the MR: REG_MR (mr_register), ALLOC_STAG (mr_alloc_stag),
     * DEALLOC_STAG (mr_deregister). A backend that registers guest memory
     * with a host NIC mirrors MRs here (mr_gpa_walk gives the pages). 0
     * with the rkey peers will use, or negative: the command fails and
     * the core forgets the MR (-ENOMEM: out of host resources). The rkey
     * is what the command returns to the guest (WIRE_IDS); mr_alloc_stag's
     * must carry the STag's key byte in bits 7:0, as a FAST_REG changes
     * that byte alone (the core refuses one without it). A REG_MR.REREG
     * (interface 0.6) comes to
     * mr_register again for an index the backend already holds: it
     * replaces that registration in one step (ibv_rereg_mr, say), or fails
     * and keeps it, and so does the core. NULL (sw): memory goes through
     * the core's table at each access (the mr_* callbacks). A FAST_REG or
     * LOCAL_INV re-registers or invalidates in SQ order as a send WR.
     */
    int (*mr_register)(struct qrdma_be *be, const struct qrdma_be_mr *mr,
                       uint32_t *rkey);
    int (*mr_alloc_stag)(struct qrdma_be *be, const struct qrdma_be_mr *mr,
                         uint32_t *rkey);
    void (*mr_deregister)(struct qrdma_be *be, uint32_t stag);

    /*
     * Optional, both or neither, for a backend that carries frames on the
     * device's wire: the port's station address changed; one received
     * frame (no FCS, valid during the call) for it. NULL: the backend has
     * no frames.
     */
    void (*set_mac)(struct qrdma_be *be, const uint8_t mac[6]);
    void (*rx_frame)(struct qrdma_be *be, const void *frame, size_t len);
    /*
     * Optional, for a backend that carries frames: the wire has room again
     * after frame_out said QRDMA_BE_TX_BUSY; the core polls next. Called
     * from the core's data-path run, never from inside frame_out.
     */
    void (*tx_ready)(struct qrdma_be *be);

    /*
     * Optional: a file descriptor the embedding watches in its event
     * loop; when it is readable the core's data path runs (and so poll).
     * A backend whose work arrives from outside the core's calls (a host
     * NIC's completions and async events) returns it; -1 or NULL: none,
     * poll's deadline is enough (sw). The fd stays the same from create
     * to destroy, across reset.
     */
    int (*wait_fd)(struct qrdma_be *be);

    /*
     * Do pending work (timers, ACKs, responses, queued completions),
     * sending at most `budget` frames. Returns the now_ns time of the next
     * deadline, the current time when work is left, or UINT64_MAX when
     * idle; the core calls it again then and after every batch of posts
     * and frames.
     */
    uint64_t (*poll)(struct qrdma_be *be, unsigned budget);

    /*
     * Optional: one received frame (no FCS, valid during the call) for a
     * multicast group the QPs qps[0..n) are attached to, n at most
     * QRDMA_BE_MCAST_MAX_QPS (docs/hw-spec.md section 16.1). It must be
     * a UD SEND to QPN 0xffffff; each of those QPs that can receive and
     * whose Q_Key matches takes a copy, with a receive WQE of its own.
     * NULL: the device offers no multicast (CAP_FEATURES.MCAST clear).
     */
    void (*rx_mcast)(struct qrdma_be *be, const void *frame, size_t len,
                     struct qrdma_be_qp *const *qps, unsigned n);

    /*
     * Optional: the counters (NULL: the device reports the transport's as 0).
     */
    void (*stats)(struct qrdma_be *be, struct qrdma_be_stats *out);

    /*
     * Optional, for a backend on a host RDMA NIC: the host port now (0, or
     * negative when it cannot be read: the port then reads as down with
     * no GIDs). The core asks at create, at every reset and after
     * QRDMA_BE_EV_PORT_CHANGE; the device's PORT_STATUS, PORT_SPEED and
     * host GID registers show it, and ADD_GID and address vectors accept
     * only its GIDs (docs/hw-spec.md section 4.5). NULL (sw): the port is
     * the netdev's, the GIDs whatever the driver adds.
     */
    int (*port)(struct qrdma_be *be, struct qrdma_be_port *out);

    /*
     * Optional: live migration (docs/migration.md; the stream in
     * qrdma_mig_stream.h). save appends the backend's sections with the
     * VM stopped and changes nothing; load reads them into a backend just
     * reset, whose QPs the core has made again with qp_create (same QP
     * IDs, same init), and restarts its timers from the time left. Both
     * return 0 or -errno, the reason recorded with qrdma_mig_fail(); the
     * core resets the device after a failed load. NULL (verbs: its state
     * is in a host NIC): the device refuses to be migrated.
     */
    int (*save)(struct qrdma_be *be, struct qrdma_mig *m);
    int (*load)(struct qrdma_be *be, struct qrdma_mig *m);
};

/* The backends built into this program. */
extern const struct qrdma_be_ops qrdma_be_sw_ops;

#ifdef __cplusplus
}
#endif

#endif /* QRDMA_BACKEND_H */
