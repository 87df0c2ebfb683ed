/*
 * qsw: the software RoCEv2 transport engine of qrdma.
 *
 * A single-threaded library that carries the RDMA traffic of one port as
 * standard RoCEv2 frames (IBTA vol. 1 and Annex A17): Ethernet II, IPv4 or
 * IPv6, UDP port 4791, the IB transport headers and the ICRC. The embedder
 * (the device core, or a test) hands it send work requests and received
 * frames; the engine calls back to move data through local and remote
 * keys, to pop receive work requests, to report completions and events,
 * and to emit frames. Plain C: no QEMU types, no dependency on the device.
 *
 * Threading: every entry point of one engine (and of its QPs) must be
 * called from one thread at a time; the embedder serialises. Callbacks run
 * synchronously inside those calls. From inside a callback the embedder may
 * call qsw_post_send(), qsw_qp_query() and qsw_engine_tx_ready(), nothing
 * else of this API.
 *
 * Numbering: statuses, opcodes, flags, states and attribute masks use the
 * numeric values of the libibverbs enums they mirror (ibv_wc_status,
 * ibv_wc_opcode, ibv_wr_opcode, ibv_send_flags, ibv_access_flags,
 * ibv_qp_state, ibv_qp_attr_mask, ibv_mtu, ibv_event_type), so an embedder
 * speaking verbs can pass them through unchanged. docs/transport.md is the
 * prose of this header.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_SW_H
#define QRDMA_SW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QSW_MAX_SGE         16      /* SGEs per send or receive WR */
/* inline bytes per send WR unless qsw_qp_cap says */
#define QSW_DEFAULT_INLINE  256
#define QSW_MAX_INLINE      4096
#define QSW_MAX_SQ_DEPTH    32768
#define QSW_UDP_PORT        4791
/* UD: header room at the start of a receive buffer */
#define QSW_GRH_BYTES       40

/* Return codes of the API: 0 or a negative errno-like value. */
enum qsw_err {
    QSW_OK      = 0,
    QSW_EINVAL  = 22,   /* bad argument or state transition */
    QSW_ENOMEM  = 12,   /* allocation failed or the send queue is full */
    QSW_EEXIST  = 17,   /* QPN already in use */
    /* get_recv: no receive WR (the responder sends RNR NAK) */
    QSW_ENOENT  = 2,
    /* get_recv: the receive queue is broken (a local QP error) */
    QSW_EIO     = 5,
    QSW_EACCES  = 13,   /* a key callback refused the access */
};

/* Completion status: the values of enum ibv_wc_status. */
enum qsw_wc_status {
    QSW_WC_SUCCESS            = 0,
    QSW_WC_LOC_LEN_ERR        = 1,
    QSW_WC_LOC_QP_OP_ERR      = 2,
    QSW_WC_LOC_EEC_OP_ERR     = 3,
    QSW_WC_LOC_PROT_ERR       = 4,
    QSW_WC_WR_FLUSH_ERR       = 5,
    QSW_WC_MW_BIND_ERR        = 6,
    QSW_WC_BAD_RESP_ERR       = 7,
    QSW_WC_LOC_ACCESS_ERR     = 8,
    QSW_WC_REM_INV_REQ_ERR    = 9,
    QSW_WC_REM_ACCESS_ERR     = 10,
    QSW_WC_REM_OP_ERR         = 11,
    QSW_WC_RETRY_EXC_ERR      = 12,
    QSW_WC_RNR_RETRY_EXC_ERR  = 13,
    QSW_WC_LOC_RDD_VIOL_ERR   = 14,
    QSW_WC_REM_INV_RD_REQ_ERR = 15,
    QSW_WC_REM_ABORT_ERR      = 16,
    QSW_WC_INV_EECN_ERR       = 17,
    QSW_WC_INV_EEC_STATE_ERR  = 18,
    QSW_WC_FATAL_ERR          = 19,
    QSW_WC_RESP_TIMEOUT_ERR   = 20,
    QSW_WC_GENERAL_ERR        = 21,
};

/* Completion opcode: the values of enum ibv_wc_opcode. */
enum qsw_wc_opcode {
    QSW_WC_SEND               = 0,
    QSW_WC_RDMA_WRITE         = 1,
    QSW_WC_RDMA_READ          = 2,
    QSW_WC_COMP_SWAP          = 3,
    QSW_WC_FETCH_ADD          = 4,
    QSW_WC_BIND_MW            = 5,
    QSW_WC_LOCAL_INV          = 6,
    /* the kernel's IB_WC_REG_MR; not in ibv_wc_opcode */
    QSW_WC_REG_MR             = 10,
    QSW_WC_RECV               = 128,
    QSW_WC_RECV_RDMA_WITH_IMM = 129,
};

/* wc_flags: the values of enum ibv_wc_flags. */
#define QSW_WC_GRH       (1u << 0)
#define QSW_WC_WITH_IMM  (1u << 1)
#define QSW_WC_WITH_INV  (1u << 3)
/* Not an ibv_wc_flags value: the message had the solicited-event bit set. */
#define QSW_WC_SOLICITED (1u << 16)

/* Send opcode: the values of enum ibv_wr_opcode. */
enum qsw_wr_opcode {
    QSW_WR_RDMA_WRITE           = 0,
    QSW_WR_RDMA_WRITE_WITH_IMM  = 1,
    QSW_WR_SEND                 = 2,
    QSW_WR_SEND_WITH_IMM        = 3,
    QSW_WR_RDMA_READ            = 4,
    QSW_WR_ATOMIC_CMP_AND_SWP   = 5,
    QSW_WR_ATOMIC_FETCH_AND_ADD = 6,
    QSW_WR_LOCAL_INV            = 7,
    QSW_WR_BIND_MW              = 8,
    QSW_WR_SEND_WITH_INV        = 9,
    /* the kernel's IB_WR_REG_MR (fast register) */
    QSW_WR_REG_MR               = 0x20,
};

/* send_flags: the values of enum ibv_send_flags. */
#define QSW_SEND_FENCE      (1u << 0)
#define QSW_SEND_SIGNALED   (1u << 1)
#define QSW_SEND_SOLICITED  (1u << 2)
#define QSW_SEND_INLINE     (1u << 3)

/* Access flags: the values of enum ibv_access_flags. */
#define QSW_ACCESS_LOCAL_WRITE    (1u << 0)
#define QSW_ACCESS_REMOTE_WRITE   (1u << 1)
#define QSW_ACCESS_REMOTE_READ    (1u << 2)
#define QSW_ACCESS_REMOTE_ATOMIC  (1u << 3)

/* ibv_qp_type */
enum qsw_qp_type { QSW_QPT_RC = 2, QSW_QPT_UC = 3, QSW_QPT_UD = 4 };

/* QP state: the values of enum ibv_qp_state. */
enum qsw_qp_state {
    QSW_QPS_RESET = 0,
    QSW_QPS_INIT  = 1,
    QSW_QPS_RTR   = 2,
    QSW_QPS_RTS   = 3,
    QSW_QPS_SQD   = 4,
    QSW_QPS_SQE   = 5,
    QSW_QPS_ERR   = 6,
};

/* Path MTU: the values of enum ibv_mtu. */
enum qsw_mtu {
    QSW_MTU_256 = 1,
    QSW_MTU_512,
    QSW_MTU_1024,
    QSW_MTU_2048,
    QSW_MTU_4096
};

/* Asynchronous events: the values of enum ibv_event_type. */
enum qsw_event {
    /* transport error not tied to a WR; QP is in ERR */
    QSW_EV_QP_FATAL          = 1,
    /* responder saw an invalid request; QP is in ERR */
    QSW_EV_QP_REQ_ERR        = 2,
    /* responder saw a remote access violation; QP is in ERR */
    QSW_EV_QP_ACCESS_ERR     = 3,
    QSW_EV_COMM_EST          = 4,   /* first packet received in RTR */
    QSW_EV_SQ_DRAINED        = 5,   /* SQD reached with nothing outstanding */
    QSW_EV_QP_LAST_WQE_REACHED = 16,
};

/* qsw_qp_modify() mask: the values of enum ibv_qp_attr_mask. */
#define QSW_QP_STATE               (1u << 0)
#define QSW_QP_CUR_STATE           (1u << 1)
#define QSW_QP_ACCESS_FLAGS        (1u << 3)
#define QSW_QP_PKEY_INDEX          (1u << 4)
#define QSW_QP_PORT                (1u << 5)
#define QSW_QP_QKEY                (1u << 6)
#define QSW_QP_AV                  (1u << 7)
#define QSW_QP_PATH_MTU            (1u << 8)
#define QSW_QP_TIMEOUT             (1u << 9)
#define QSW_QP_RETRY_CNT           (1u << 10)
#define QSW_QP_RNR_RETRY           (1u << 11)
#define QSW_QP_RQ_PSN              (1u << 12)
#define QSW_QP_MAX_QP_RD_ATOMIC    (1u << 13)
#define QSW_QP_MIN_RNR_TIMER       (1u << 15)
#define QSW_QP_SQ_PSN              (1u << 16)
#define QSW_QP_MAX_DEST_RD_ATOMIC  (1u << 17)
#define QSW_QP_DEST_QPN            (1u << 20)

struct qsw_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

/*
 * An address vector: where frames of an RC/UC QP (qsw_qp_attr.av) or of one
 * UD send (qsw_send_wr.ud.av) go. GIDs are 16-byte IPv6 addresses; an
 * IPv4-mapped GID (::ffff:a.b.c.d) selects an IPv4 frame. The source MAC
 * defaults to the engine's when all zero.
 */
struct qsw_av {
    uint8_t dmac[6];
    uint8_t smac[6];
    uint8_t dgid[16];
    uint8_t sgid[16];
    /* IPv4 TOS / IPv6 traffic class (DSCP << 2 | ECN) */
    uint8_t traffic_class;
    uint8_t hop_limit;      /* IPv4 TTL / IPv6 hop limit; 0 means 64 */
    uint32_t flow_label;    /* 20 bits; also chooses the UDP source port */
};

/*
 * REG_MR (fast register): a new translation for a memory region the
 * embedder allocated for it. The engine does not interpret it; it hands it
 * to the reg_mr callback in send-queue order, like LOCAL_INV.
 */
struct qsw_reg_mr {
    uint32_t key;           /* the region's new key */
    uint32_t access;        /* QSW_ACCESS_* */
    uint64_t iova;
    uint64_t length;
    uint64_t page_list;     /* the embedder's: where the page list is */
    uint32_t page_shift;
    uint32_t levels;        /* the embedder's: how the page list is laid out */
    uint64_t fbo;           /* offset of byte 0 in the first page */
};

/*
 * BIND_MW: a memory window bound to a region, handed to the bind_mw
 * callback in send-queue order like REG_MR; the engine does not interpret it.
 */
struct qsw_bind_mw {
    uint32_t mw_key;        /* the window's key now */
    uint32_t new_key;       /* its new key */
    uint32_t mr_key;        /* the region it is bound to */
    uint32_t access;        /* QSW_ACCESS_REMOTE_* */
    uint64_t addr;
    uint64_t length;
};

struct qsw_send_wr {
    uint64_t wr_id;
    uint32_t opcode;        /* enum qsw_wr_opcode */
    uint32_t send_flags;    /* QSW_SEND_* */
    uint32_t num_sge;
    struct qsw_sge sg_list[QSW_MAX_SGE];
    /* QSW_SEND_INLINE: the payload, copied at post */
    const void *inline_data;
    uint32_t inline_len;
    uint32_t imm_data;          /* network byte order, as ibv_send_wr */
    uint32_t invalidate_rkey;   /* SEND_WITH_INV, LOCAL_INV */
    struct {
        uint64_t remote_addr;
        uint32_t rkey;
    } rdma;
    struct {
        uint64_t remote_addr;
        uint32_t rkey;
        uint64_t compare_add;   /* CMP_AND_SWP: compare; FETCH_AND_ADD: add */
        uint64_t swap;
    } atomic;
    struct qsw_reg_mr reg;      /* REG_MR */
    struct qsw_bind_mw bind_mw; /* BIND_MW */
    struct {
        struct qsw_av av;
        uint32_t remote_qpn;
        /* high bit set: use the QP's own Q_Key (IBTA 10.2) */
        uint32_t remote_qkey;
    } ud;
};

struct qsw_recv_wr {
    uint64_t wr_id;
    uint32_t num_sge;
    struct qsw_sge sg_list[QSW_MAX_SGE];
};

struct qsw_wc {
    uint64_t wr_id;
    uint32_t status;            /* enum qsw_wc_status */
    /* enum qsw_wc_opcode; >= QSW_WC_RECV: receive side */
    uint32_t opcode;
    /* receive: payload bytes (UD: plus the 40 GRH bytes, as verbs) */
    uint32_t byte_len;
    uint32_t imm_data;          /* network byte order */
    uint32_t invalidated_rkey;
    uint32_t qp_num;
    uint32_t src_qp;
    uint32_t wc_flags;          /* QSW_WC_GRH / WITH_IMM / WITH_INV */
    /* UD receive: where the message came from */
    uint8_t network_hdr_type;   /* QSW_NET_IPV4 or QSW_NET_IPV6 */
    uint8_t smac[6];
    uint8_t sgid[16];           /* IPv4-mapped for IPv4 */
    uint8_t dgid[16];
    uint32_t vendor_err;        /* engine detail, 0 normally */
};

#define QSW_NET_IPV4 1
#define QSW_NET_IPV6 2

/* Atomic operations for the rkey_atomic callback. */
enum qsw_atomic_op { QSW_ATOMIC_CMP_SWP = 0, QSW_ATOMIC_FETCH_ADD = 1 };

struct qsw_qp;

/*
 * Callbacks supplied by the embedder; `opaque` is passed back.
 *
 * Local memory (sge_read/sge_write): the engine does not look at keys; the
 * callback validates each SGE's lkey (in the QP's PD, LOCAL_WRITE for
 * sge_write), gathers or scatters `len` bytes at byte offset `off` of the
 * SGE list, and returns 0 or minus a qsw_wc_status (for example
 * -QSW_WC_LOC_PROT_ERR), which becomes the WR's completion status.
 *
 * Remote memory (rkey_*): the responder's access through an rkey in the
 * QP's PD; the callback checks key, PD, bounds and the MR's remote access
 * rights, returning 0 or a negative value (remote access error). rkey_check
 * is optional: when given, the responder validates a whole RDMA WRITE or
 * READ range once at its first packet before moving any data.
 */
/* Transport events the engine reports to qsw_ops.trace. */
enum qsw_trace {
    /* go-back-N from psn; detail: enum qsw_retransmit_cause */
    QSW_TRACE_RETRANSMIT,
    /* a NAK or RNR NAK for psn; detail: the AETH syndrome */
    QSW_TRACE_NAK_SENT,
    QSW_TRACE_NAK_RCVD,     /* the same, received */
};

enum qsw_retransmit_cause {
    QSW_RETRANSMIT_TIMEOUT, /* the retransmit timer expired */
    QSW_RETRANSMIT_NAK,     /* a sequence NAK, or a response that implied one */
    QSW_RETRANSMIT_RNR,     /* the RNR wait is over */
};

struct qsw_ops {
    int (*sge_read)(void *opaque, struct qsw_qp *qp, const struct qsw_sge *sge,
                    unsigned nsge, uint64_t off, void *dst, uint32_t len);
    int (*sge_write)(void *opaque, struct qsw_qp *qp, const struct qsw_sge *sge,
                     unsigned nsge, uint64_t off, const void *src,
                     uint32_t len);
    int (*rkey_check)(void *opaque, struct qsw_qp *qp, uint32_t pd,
                      uint32_t rkey, uint64_t va, uint64_t len,
                      uint32_t access);
    int (*rkey_read)(void *opaque, struct qsw_qp *qp, uint32_t pd,
                     uint32_t rkey, uint64_t va, void *dst, uint32_t len);
    int (*rkey_write)(void *opaque, struct qsw_qp *qp, uint32_t pd,
                      uint32_t rkey, uint64_t va, const void *src,
                      uint32_t len);
    /*
     * 8 bytes at va (8-byte aligned, checked by the engine); *orig gets the old
     * value.
     */
    int (*rkey_atomic)(void *opaque, struct qsw_qp *qp, uint32_t pd,
                       uint32_t rkey, uint64_t va, enum qsw_atomic_op op,
                       uint64_t compare_add, uint64_t swap, uint64_t *orig);
    /*
     * Pop the next receive WR of the QP (its RQ or SRQ): 0; -QSW_ENOENT when
     * there is none; -QSW_EIO when the next one cannot be used (the embedder
     * has completed it in error): the engine then moves the QP to ERR with
     * QSW_EV_QP_FATAL, and an RC responder NAKs with Remote Operational
     * Error (IBTA 9.7.5.2.4) so the requester learns why.
     */
    int (*get_recv)(void *opaque, struct qsw_qp *qp, struct qsw_recv_wr *out);
    void (*complete)(void *opaque, struct qsw_qp *qp, const struct qsw_wc *wc);
    void (*qp_event)(void *opaque, struct qsw_qp *qp, enum qsw_event ev);
    /*
     * One Ethernet frame, without FCS; the buffer is only valid during the
     * call. Returns QSW_TX_SENT, or QSW_TX_BUSY: the frame was taken but
     * the wire is full, and the engine sends nothing more until
     * qsw_engine_tx_ready() (send_frame_iov returns the same).
     */
    int (*send_frame)(void *opaque, const void *frame, size_t len);
    uint64_t (*now_ns)(void *opaque);
    /*
     * Invalidate an rkey (SEND_WITH_INV at the responder) or a key (LOCAL_INV):
     * 0 or error.
     */
    int (*invalidate)(void *opaque, struct qsw_qp *qp, uint32_t pd,
                      uint32_t key);
    /*
     * REG_MR at the requester, in send-queue order: 0 or error (optional;
     * without it REG_MR fails).
     */
    int (*reg_mr)(void *opaque, uint32_t pd, const struct qsw_reg_mr *reg);
    /*
     * BIND_MW at the requester, in send-queue order: 0, or an error that
     * completes the WR with MW_BIND_ERR (optional; without it BIND_MW fails).
     */
    int (*bind_mw)(void *opaque, struct qsw_qp *qp, uint32_t pd,
                   const struct qsw_bind_mw *bind);
    /*
     * Optional: qsw_post_send() refused a WR of qp because its send queue
     * was full, and a slot is free again. Called once per refusal streak,
     * also for WRs that completed silently (unsignaled), so an embedder
     * feeding a deeper queue of its own knows when to go on.
     */
    void (*sq_space)(void *opaque, struct qsw_qp *qp);
    /*
     * Optional: a transport event, for tracing (enum qsw_trace says what
     * psn and detail hold). Rare events only: never per packet sent.
     */
    void (*trace)(void *opaque, struct qsw_qp *qp, enum qsw_trace ev,
                  uint32_t psn, uint32_t detail);
    /*
     * Optional, all three or none: zero-copy transmit. sge_map gives the
     * host memory behind len bytes at byte offset off of an SGE list, for
     * reading, as at most max pieces in iov: their number (> 0); 0 when it
     * cannot (a piece not directly addressable, more pieces than max), and
     * the engine then copies with sge_read; or minus a completion status,
     * as sge_read. The engine puts the pieces into one frame between its
     * headers and its ICRC, hands that frame to send_frame_iov (valid
     * during the call) and gives the pieces back with sge_unmap, in every
     * case once it is done. send_frame alone carries the frames that have
     * no mapped payload.
     */
    int (*sge_map)(void *opaque, struct qsw_qp *qp, const struct qsw_sge *sge,
                   unsigned nsge, uint64_t off, uint32_t len, struct iovec *iov,
                   unsigned max);
    void (*sge_unmap)(void *opaque, struct qsw_qp *qp, const struct iovec *iov,
                      unsigned n);
    int (*send_frame_iov)(void *opaque, const struct iovec *iov, unsigned n);
};

/* What send_frame and send_frame_iov return. */
#define QSW_TX_SENT 0       /* on the wire (or lost on it) */
/*
 * Taken, but the wire is full (a NIC's TX ring with no free slot): the
 * engine stops transmitting until qsw_engine_tx_ready().
 */
#define QSW_TX_BUSY 1

/*
 * Frames the engine keeps while the wire is busy: those it must send from
 * outside qsw_engine_poll() (an ACK of a QP being destroyed, a NAK that
 * ends a QP, frames the fault hook releases). More are dropped
 * (qsw_stats.tx_hold_drops); poll itself just stops.
 */
#define QSW_TX_HOLD 4
/*
 * While the wire is busy the transport's clock stands still (no
 * retransmit timer, RNR wait or stall floor counts the time), for at most
 * this long per busy spell: a wire that stays full longer is taken for a
 * broken link, and the timers and the retry budget run again.
 */
#define QSW_TX_PAUSE_MAX_NS 1000000000ull

/* Capacities chosen at QP creation (NULL: defaults). */
struct qsw_qp_cap {
    /* send queue slots, rounded up to a power of two; default 256 */
    uint32_t max_send_wr;
    /* inline bytes per WR; default QSW_DEFAULT_INLINE */
    uint32_t max_inline;
};

struct qsw_qp_attr {
    uint32_t qp_state;          /* enum qsw_qp_state */
    uint32_t cur_qp_state;
    uint32_t path_mtu;          /* enum qsw_mtu */
    uint32_t qkey;
    uint32_t rq_psn;
    uint32_t sq_psn;
    uint32_t dest_qp_num;
    /* QSW_ACCESS_REMOTE_* accepted by the responder */
    uint32_t qp_access_flags;
    struct qsw_av av;
    /* outstanding READ/ATOMIC as requester (0 counts as 1) */
    uint8_t max_rd_atomic;
    uint8_t max_dest_rd_atomic; /* responder resources (0 counts as 1) */
    uint8_t min_rnr_timer;      /* 5-bit RNR NAK timer code (IBTA table 45) */
    uint8_t timeout;            /* 4.096 us * 2^timeout, 0: infinite */
    uint8_t retry_cnt;          /* 0..7 */
    uint8_t rnr_retry;          /* 0..7, 7: infinite */
};

/*
 * Fault injection on the engine's transmit side (tests, and a debug knob of the
 * device).
 */
struct qsw_fault {
    uint32_t loss_ppm;          /* drop a frame */
    uint32_t dup_ppm;           /* send it twice */
    uint32_t reorder_ppm;       /* hold it back by up to reorder_window_ns */
    uint32_t corrupt_ppm;       /* flip one byte after the Ethernet header */
    uint64_t delay_ns;          /* fixed delay for every frame */
    uint64_t reorder_window_ns; /* default 50 us */
    /* PRNG seed: the same seed gives the same faults */
    uint64_t seed;
};

struct qsw_stats {
    uint64_t tx_frames, tx_bytes, rx_frames, rx_bytes;
    uint64_t tx_acks, tx_naks_seq, tx_naks_err, tx_rnr_naks, tx_read_resp,
        tx_atomic_acks;
    uint64_t rx_acks, rx_naks_seq, rx_naks_err, rx_rnr_naks;
    uint64_t retransmits;       /* packets sent again by go-back-N */
    uint64_t timeouts;          /* retransmit timer expiries */
    /* timeouts retried past retry_cnt, within the stall floor */
    uint64_t stall_retries;
    uint64_t duplicates;        /* duplicate requests seen by the responder */
    /* duplicate or stale responses seen by the requester */
    uint64_t dup_responses;
    uint64_t completions;
    /* requests the responder began to execute (the first packet of each) */
    uint64_t rx_read_requests, rx_write_requests, rx_atomic_requests;
    /* receive drops by reason */
    /* not Ethernet II / IP / UDP 4791, or not our MAC */
    uint64_t drop_not_roce;
    /* truncated, bad lengths, bad IP checksum, TVer, pad, opcode */
    uint64_t drop_malformed;
    uint64_t drop_icrc;
    uint64_t drop_unknown_qp;
    /* QP not in a state to receive, type/opcode mismatch */
    uint64_t drop_bad_state;
    /* RC/UC: source or destination address not the QP's */
    uint64_t drop_addr;
    /* requests past the expected PSN (after the one NAK) */
    uint64_t drop_out_of_seq;
    uint64_t drop_qkey;         /* UD: Q_Key mismatch */
    uint64_t drop_no_recv;      /* UD: no receive WR */
    /* UC: packet of a message broken by a PSN gap */
    uint64_t drop_uc;
    uint64_t drop_mcast;        /* multicast: not a UD SEND to QPN 0xffffff */
    /* multicast: copies handed to attached QPs (Q_Key still checked) */
    uint64_t rx_mcast_copies;
    /* fault injection */
    uint64_t fault_lost, fault_dup, fault_reordered, fault_corrupted;
    /*
     * Transmit backpressure (not in the saved state: these start from 0
     * after a migration). tx_busy: times send_frame said QSW_TX_BUSY;
     * tx_held: frames kept while it was (QSW_TX_HOLD); tx_hold_drops:
     * frames dropped for want of room there; tx_paused_ns: time the
     * transport's clock stood still.
     */
    uint64_t tx_busy, tx_held, tx_hold_drops, tx_paused_ns;
};

struct qsw_engine;

struct qsw_engine *qsw_engine_new(const struct qsw_ops *ops, void *opaque,
                                  const uint8_t mac[6]);
/* Frees all QPs too, without completions. */
void qsw_engine_free(struct qsw_engine *eng);
void qsw_engine_set_mac(struct qsw_engine *eng, const uint8_t mac[6]);
/*
 * NULL or all rates zero turns fault injection off; frames held back are then
 * sent.
 */
void qsw_engine_set_fault(struct qsw_engine *eng,
                          const struct qsw_fault *fault);
/*
 * Stall floor: an RC requester reports RETRY_EXC_ERR only when its
 * retry_cnt retries have run out *and* it has gone at least floor_ns
 * without progress; until then a timeout resends once more. 0 (the
 * default) is IBTA's rule alone: retry_cnt + 1 timeouts. Hardware does the
 * like (firmware floors under the ACK timeout, total retransmission time
 * limits); for the device it keeps a peer whose host is briefly starved of
 * CPU from looking dead.
 */
void qsw_engine_set_stall_floor(struct qsw_engine *eng, uint64_t floor_ns);

/*
 * A QP in RESET; NULL for a bad argument, a QPN in use (24-bit, unique per
 * engine) or no memory.
 */
struct qsw_qp *qsw_qp_create(struct qsw_engine *eng, uint32_t qpn,
                             enum qsw_qp_type type, uint32_t pd,
                             const struct qsw_qp_cap *cap, void *user);
/* Destroys without completions (the embedder flushes its own queues). */
void qsw_qp_destroy(struct qsw_qp *qp);
/*
 * The consumer's modify. To RESET or ERR, the ACK the responder owes for
 * messages it has completed leaves first, as at destroy (docs/transport.md).
 */
int qsw_qp_modify(struct qsw_qp *qp, const struct qsw_qp_attr *attr,
                  uint32_t mask);
/*
 * The embedder moves the QP to ERR for an error of its own (a completion
 * it could not deliver): as a modify to ERR, but the ACK the responder owes
 * is dropped, since it may cover the message whose completion was lost.
 */
void qsw_qp_fail(struct qsw_qp *qp);
int qsw_qp_query(struct qsw_qp *qp, struct qsw_qp_attr *attr);
void *qsw_qp_user(const struct qsw_qp *qp);
uint32_t qsw_qp_num(const struct qsw_qp *qp);
enum qsw_qp_state qsw_qp_state(const struct qsw_qp *qp);
struct qsw_qp *qsw_qp_lookup(struct qsw_engine *eng, uint32_t qpn);
/*
 * Host memory the QP holds: its structure, its send queue (one slot per
 * WR, max_send_wr rounded up to a power of two), each slot's inline
 * buffer (max_inline) and its responder resources. For accounting.
 */
size_t qsw_qp_host_bytes(const struct qsw_qp *qp);

/*
 * Queue one send WR (copied, inline data included). 0, -QSW_ENOMEM when
 * the send queue is full, -QSW_EINVAL for a bad WR or a QP in RESET. In
 * ERR the WR is accepted and completed with WR_FLUSH_ERR at once.
 */
int qsw_post_send(struct qsw_qp *qp, const struct qsw_send_wr *wr);

/* Hand one received Ethernet frame (without FCS) to the engine. */
void qsw_rx_frame(struct qsw_engine *eng, const void *frame, size_t len);
/*
 * One received frame for a multicast group, which the UD QPs qps[0..n)
 * are attached to: a UD SEND to QPN 0xffffff (IBTA 10.5), addressed to a
 * multicast Ethernet address. Each QP that can receive gets a copy, as
 * a unicast datagram (Q_Key check, a receive WR of its own).
 */
void qsw_rx_mcast(struct qsw_engine *eng, const void *frame, size_t len,
                  struct qsw_qp *const *qps, unsigned n);

/*
 * Do pending work: expired timers, ACKs, read responses, request packets,
 * held-back fault frames; at most `budget` frames are sent. Returns the
 * absolute time (now_ns) of the next deadline, the current time when work
 * is left, or UINT64_MAX when idle. Call it after a batch of qsw_rx_frame()
 * and qsw_post_send() and when the returned time is reached. While the
 * wire is busy it sends nothing and the time it returns is a timer's
 * only (none falls due before QSW_TX_PAUSE_MAX_NS into the busy spell):
 * call it again after qsw_engine_tx_ready().
 */
uint64_t qsw_engine_poll(struct qsw_engine *eng, unsigned budget);

void qsw_engine_stats(struct qsw_engine *eng, struct qsw_stats *stats);

/*
 * The wire has room again after send_frame said QSW_TX_BUSY (the frame it
 * took has left): the transport's clock runs again, and the next
 * qsw_engine_poll() sends the frames kept meanwhile, then goes on where
 * it stopped. Nothing when the wire was not busy.
 */
void qsw_engine_tx_ready(struct qsw_engine *eng);
/* Is the engine waiting for qsw_engine_tx_ready()? */
bool qsw_engine_tx_busy(const struct qsw_engine *eng);

/* Helpers of general use. */
/* 0 for an invalid value */
uint32_t qsw_mtu_bytes(enum qsw_mtu mtu);
uint64_t qsw_rnr_timer_ns(unsigned code);              /* IBTA table 45 */
const char *qsw_wc_status_str(enum qsw_wc_status st);

#ifdef __cplusplus
}
#endif

#endif /* QRDMA_SW_H */
