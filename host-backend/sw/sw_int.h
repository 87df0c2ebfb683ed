/*
 * Internals of the software RoCEv2 engine: wire layouts (offsets of the
 * IB transport headers, IBTA vol. 1 ch. 9.2-9.4 and Annex A17), the opcode
 * table, the engine and QP structures shared by sw_engine.c (engine, QPs,
 * receive dispatch, poll), sw_proto.c (frames, CRC), sw_req.c (requester
 * and completer), sw_resp.c (responder) and sw_fault.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_SW_INT_H
#define QRDMA_SW_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "qrdma_inet_csum.h"
#include "qrdma_sw.h"

/* ---- byte order ---------------------------------------------------------- */

static inline uint16_t ld16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}
static inline uint32_t ld24(const uint8_t *p)
{
    return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}
static inline uint32_t ld32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}
static inline uint64_t ld64(const uint8_t *p)
{
    return (uint64_t)ld32(p) << 32 | ld32(p + 4);
}
static inline void st16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = (uint8_t)v;
}
static inline void st24(uint8_t *p, uint32_t v)
{
    p[0] = v >> 16;
    p[1] = v >> 8;
    p[2] = (uint8_t)v;
}
static inline void st32(uint8_t *p, uint32_t v)
{
    p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = (uint8_t)v;
}
static inline void st64(uint8_t *p, uint64_t v)
{
    st32(p, v >> 32);
    st32(p + 4, (uint32_t)v);
}

/* ---- PSN arithmetic: 24 bits, compared in a half window (IBTA 9.7.1) ----- */

#define PSN_MASK 0xffffffu
static inline uint32_t psn_add(uint32_t a, uint32_t n)
{
    return (a + n) & PSN_MASK;
}
static inline uint32_t psn_sub(uint32_t a, uint32_t b)
{
    return (a - b) & PSN_MASK;
}
/* <0, 0, >0 as a is before, equal to, after b */
static inline int32_t psn_cmp(uint32_t a, uint32_t b)
{
    return (int32_t)((a - b) << 8);
}

/* ---- wire layouts -------------------------------------------------------- */

#define ETH_HLEN        14
#define ETHERTYPE_IPV4  0x0800
#define ETHERTYPE_IPV6  0x86dd
#define IPV4_HLEN       20
#define IPV6_HLEN       40
#define UDP_HLEN        8
#define ICRC_LEN        4

#define BTH_LEN         12
#define RETH_LEN        16
#define AETH_LEN        4
#define DETH_LEN        8
#define IMM_LEN         4
#define IETH_LEN        4
#define ATMETH_LEN      28
#define ATMACK_LEN      8

/* BTH byte 1 */
#define BTH_SE          0x80
#define BTH_MIG         0x40
#define BTH_PAD_SHIFT   4
#define BTH_TVER_MASK   0x0f
/* BTH byte 8 */
#define BTH_ACKREQ      0x80

/* AETH syndrome (IBTA 9.3) */
#define AETH_TYPE_MASK  0xe0
#define AETH_ACK        0x00
#define AETH_RNR_NAK    0x20
#define AETH_NAK        0x60
/* ACK without end-to-end credit information */
#define AETH_CREDIT_INVALID 0x1f
#define NAK_PSN_SEQ     0
#define NAK_INV_REQ     1
#define NAK_REM_ACCESS  2
#define NAK_REM_OP      3

/* Opcodes (IBTA 9.2): RC 0x00-0x17, UC 0x20-0x2b, UD 0x64-0x65. */
enum {
    OP_SEND_FIRST = 0x00,
    OP_SEND_MIDDLE,
    OP_SEND_LAST,
    OP_SEND_LAST_IMM,
    OP_SEND_ONLY,
    OP_SEND_ONLY_IMM,
    OP_WRITE_FIRST,
    OP_WRITE_MIDDLE,
    OP_WRITE_LAST,
    OP_WRITE_LAST_IMM,
    OP_WRITE_ONLY,
    OP_WRITE_ONLY_IMM,
    OP_READ_REQ,
    OP_READ_RESP_FIRST,
    OP_READ_RESP_MIDDLE,
    OP_READ_RESP_LAST,
    OP_READ_RESP_ONLY,
    OP_ACK,
    OP_ATOMIC_ACK,
    OP_CMP_SWAP,
    OP_FETCH_ADD,
    OP_SEND_LAST_INV = 0x16,
    OP_SEND_ONLY_INV = 0x17,
};
#define OP_UC   0x20
#define OP_UD   0x60

/* What an opcode carries: headers in wire order, then role bits. */
#define M_DETH     (1u << 0)
#define M_RETH     (1u << 1)
#define M_ATMETH   (1u << 2)
#define M_AETH     (1u << 3)
#define M_ATMACK   (1u << 4)
#define M_IMM      (1u << 5)
#define M_IETH     (1u << 6)
#define M_PAYLOAD  (1u << 7)
#define M_FIRST    (1u << 8)
#define M_MIDDLE   (1u << 9)
#define M_LAST     (1u << 10)
#define M_REQ      (1u << 11)
#define M_RESP     (1u << 12)
#define M_SEND     (1u << 13)
#define M_WRITE    (1u << 14)
#define M_READ     (1u << 15)
#define M_ATOMIC   (1u << 16)
#define M_ACK      (1u << 17)

extern const uint32_t qsw_opmask[256];      /* 0: invalid opcode */

/* Transport header bytes after the BTH for a mask. */
static inline unsigned hdr_len(uint32_t m)
{
    return BTH_LEN + (m & M_DETH ? DETH_LEN : 0) + (m & M_RETH ? RETH_LEN : 0) +
           (m & M_ATMETH ? ATMETH_LEN : 0) + (m & M_AETH ? AETH_LEN : 0) +
           (m & M_ATMACK ? ATMACK_LEN : 0) + (m & M_IMM ? IMM_LEN : 0) +
           (m & M_IETH ? IETH_LEN : 0);
}

/* Offset (from the BTH) of header bit `h`: the sum of the headers before it. */
static inline unsigned hdr_off(uint32_t m, uint32_t h)
{
    return hdr_len(m & (h - 1) & 0x7f);
}

/* ---- CRC32 (the IEEE 802.3 polynomial, reflected), ICRC, checksums ------- */

void qsw_crc32_init(uint32_t tab[8][256]);
/* The process's tables, built on first use (thread-safe). */
const uint32_t (*qsw_crc32_tables(void))[256];
/* No pre- or post-inversion; any length, any alignment. */
uint32_t qsw_crc32_update(const uint32_t tab[8][256], uint32_t crc,
                          const void *buf, size_t len);
/*
 * The implementations, chosen once per process: the widest carry-less
 * multiply this CPU has (x86-64), else tables. Tests force each one.
 */
enum qsw_crc_impl {
    QSW_CRC_TABLE,          /* slicing by 8, any host */
    QSW_CRC_CLMUL,          /* PCLMULQDQ, SSE4.1 */
    QSW_CRC_VPCLMUL256,     /* VPCLMULQDQ on AVX2 registers */
    QSW_CRC_VPCLMUL512,     /* VPCLMULQDQ on AVX-512 registers */
    QSW_CRC_NIMPL
};
extern const char *const qsw_crc_impl_name[QSW_CRC_NIMPL];
bool qsw_crc32_supported(enum qsw_crc_impl impl);
enum qsw_crc_impl qsw_crc32_impl(void);
/*
 * For tests and benchmarks: switch the whole process; -ENOTSUP if this CPU or
 * build lacks it.
 */
int qsw_crc32_select(enum qsw_crc_impl impl);
/*
 * The folding constants x^n mod P(x), as the code uses them (see sw_proto.c).
 */
struct qsw_crc_xpow {
    unsigned n;
    uint64_t k;
};
extern const struct qsw_crc_xpow qsw_crc_xpow[];
extern const size_t qsw_crc_nxpow;
/*
 * ICRC of a RoCEv2 packet starting at its IP header (l3) and ending before
 * the ICRC (l3_len bytes), per Annex A17: 64 one-bits for the absent
 * LRH, then the IP/UDP/BTH headers with the variant fields set to ones,
 * then the rest unchanged; the result goes on the wire little-endian.
 */
uint32_t qsw_icrc(const uint32_t tab[8][256], const uint8_t *l3, size_t l3_len,
                  bool ipv6);

/* ---- engine and QP ------------------------------------------------------- */

/*
 * Payload pieces of one frame sent mapped (qsw_ops.sge_map); more: the payload
 * is copied.
 */
#define QSW_TX_IOV_MAX  16
/*
 * Payloads shorter than this are copied into the frame even when they
 * could be mapped: the map, the split ICRC and the unmap cost about 290
 * instructions more per frame than a copy of a few bytes (callgrind,
 * bench/native/count-instr.sh: +262 at 64 B, +157 at 1 KB, -131 at 4 KB,
 * docs/performance.md). 1 KB, not the 3 KB where the counts break even,
 * because the copy also moves the bytes through the cache, which the
 * counts do not see, and because path MTU 1024 (a 1500-byte netdev, the
 * VM tests' default) would otherwise never send a frame mapped.
 */
#define QSW_TX_MAP_MIN  1024
#define QSW_MAX_FRAME                                                    \
    (ETH_HLEN + IPV6_HLEN + UDP_HLEN + BTH_LEN + ATMETH_LEN + 4096 + 4 + \
     ICRC_LEN)
/* request PSNs in flight before the requester waits */
#define QSW_MAX_UNACKED 256
/* AckReq at least this often within long messages */
#define QSW_ACKREQ_EVERY 32
#define QSW_MIN_CWND    8       /* the send window never shrinks below this */
/* responder ACKs unprompted after this many packets */
#define QSW_ACK_EVERY   16
/* frames a QP sends before the next QP's turn */
#define QSW_QP_QUANTUM  16

/*
 * PENDING: not started, PSNs and MTU assigned when it starts. INFLIGHT: its
 * packets are being sent (req.psn lies in its PSN range). SENT: all sent,
 * waiting for the ACK or responses. RESEND: started before a go-back that
 * rewound to an earlier WQE; it is sent again from its first PSN with the
 * PSNs and MTU it started with, behind the same gates as a new WQE
 * (fence, max_rd_atomic, the window). DONE: completes in order.
 */
enum wqe_state { WQE_PENDING, WQE_INFLIGHT, WQE_SENT, WQE_RESEND, WQE_DONE };

struct qsw_wqe {
    struct qsw_send_wr wr;
    uint8_t *inl;               /* inline payload (QSW_SEND_INLINE) */
    uint32_t len;               /* message bytes */
    uint32_t first_psn, last_psn, npkts;
    /*
     * path MTU when it started: its packets keep this size even when a
     * modify changes the MTU before they are all acked
     */
    uint32_t mtu;
    /* M_SEND / M_WRITE / M_READ / M_ATOMIC, 0: local */
    uint32_t mask;
    uint8_t state;
    uint8_t status;
};

/* A responder resource: one READ or ATOMIC kept for replay (IBTA 9.7). */
struct qsw_res {
    uint8_t type;               /* RES_* */
    bool active;                /* responses still to send */
    uint32_t first_psn, last_psn;
    /* this run of responses: from start_psn, next cur_psn */
    uint32_t start_psn, cur_psn;
    uint64_t va;
    uint32_t rkey, len;
    /* READ: response size, the path MTU when it was accepted */
    uint32_t mtu;
    uint64_t orig;              /* ATOMIC: the value returned */
};
#define RES_NONE   0
#define RES_READ   1
#define RES_ATOMIC 2

struct qsw_list { struct qsw_qp *head, *tail; };

struct qsw_qp {
    struct qsw_engine *eng;
    struct qsw_qp *hnext;
    struct qsw_qp *anext;       /* active list (work to transmit) */
    struct qsw_qp *tnext, *tprev; /* timer list */
    bool on_active, on_timer;
    uint32_t qpn, pd;
    uint8_t type, state;
    void *user;
    struct qsw_qp_attr attr;
    uint32_t mtu;
    uint16_t sport;
    bool ipv6;
    bool comm_est;

    struct qsw_wqe *sq;
    uint8_t *inl_pool;
    uint32_t max_inline;
    uint32_t sq_mask, sq_head, sq_cur, sq_tail;     /* free-running */
    /* a post found the queue full: ops.sq_space when not */
    bool sq_waiting;

    struct {
        uint32_t psn;           /* next PSN to send */
        uint32_t noack;         /* packets since the last AckReq */
        /* first PSN never sent: below it, a send is a retransmit */
        uint32_t hi_psn;
        /* a local error: send nothing more, let the completer finish */
        bool stopped;
        unsigned rd_atomic;     /* outstanding READ/ATOMIC */
        bool drained_sent;
        /*
         * Send window in packets (QSW_MIN_CWND..QSW_MAX_UNACKED): halved on
         * a NAK or a gap, down to the minimum on a timeout, grown again by
         * acknowledgements (doubling below ssthresh, then one packet per
         * window). Go-back-N resends everything after a loss, so a lossy
         * path is cheaper with fewer packets in flight.
         */
        uint32_t cwnd, ssthresh, ca_acc;
    } req;
    struct {
        uint32_t psn;           /* oldest PSN not yet acknowledged */
        unsigned retry_left, rnr_left;
        uint64_t rto_deadline;  /* 0: not armed */
        uint64_t rnr_deadline;  /* 0: not waiting */
        uint32_t rnr_psn;
        /*
         * resent from comp.psn, no progress since: missing responses, stale
         * ACKs and NAKs for it do not rewind again
         */
        bool rewound;
        bool stalled;           /* a retry since the last progress */
        /* then: when the requester last saw progress, about */
        uint64_t stall_since;
    } comp;
    struct {
        uint32_t psn;           /* expected PSN */
        uint32_t msn;
        bool nak_sent;          /* NAK (seq or RNR) sent for psn */
        /* 0, M_SEND or M_WRITE: a multi-packet message in progress */
        uint32_t in_msg;
        bool have_wr;
        bool uc_drop;           /* UC: drop until the next FIRST/ONLY */
        struct qsw_recv_wr wr;
        uint32_t wr_len, offset;
        uint64_t va;
        uint32_t rkey, resid, wlen;
        uint8_t ack_type;       /* 0 none, else AETH type to send */
        uint8_t ack_syn;
        uint32_t ack_psn;
        uint32_t since_ack;
        /* a fatal NAK waits for earlier responses to leave */
        bool fatal;
        uint8_t fatal_syn, fatal_ev;
        uint32_t fatal_psn;
        struct qsw_res *res;
        unsigned nres, res_next;
    } resp;
};

struct qsw_held;

struct qsw_engine {
    struct qsw_ops ops;
    void *opaque;
    uint8_t mac[6];
    uint16_t ip_id;
    struct qsw_qp **htab;
    uint32_t hmask;
    struct qsw_list active;
    struct qsw_qp *timers;
    struct qsw_stats st;
    /* fault injection */
    bool fault_on;
    struct qsw_fault fault;
    uint64_t rng;
    /* held for the delay alone, in release order (sw_fault.c) */
    struct qsw_held *held;
    /* its last frame (valid while held is not NULL) */
    struct qsw_held *held_tail;
    struct qsw_held *held_late; /* the others, sorted by release time */
    uint64_t held_seq;          /* frames held so far */
    uint64_t now;               /* cached for the current call */
    uint64_t stall_floor_ns;    /* qsw_engine_set_stall_floor() */
    const uint32_t (*crc_tab)[256];   /* qsw_crc32_tables() */
    /*
     * frames whose payload went out mapped (qsw_ops.sge_map), not copied into
     * tx
     */
    uint64_t tx_mapped;
    /*
     * Transmit backpressure: send_frame said QSW_TX_BUSY and no
     * qsw_engine_tx_ready() has come since. The transport's clock (now)
     * is the embedder's minus clock_off, minus the time since busy_since
     * (the embedder's clock) while busy, up to QSW_TX_PAUSE_MAX_NS.
     */
    bool tx_busy;
    uint64_t busy_since;
    uint64_t clock_off;
    /* frames sent from outside poll while busy, in order (QSW_TX_HOLD) */
    unsigned txq_head, txq_len;
    struct qsw_txq_slot {
        size_t len;
        uint8_t data[QSW_MAX_FRAME];
    } txq[QSW_TX_HOLD];
    /*
     * a mapped frame: tx holds the headers, tx_iov the headers, payload pieces
     * and trailer
     */
    struct iovec tx_iov[QSW_TX_IOV_MAX + 2];
    uint8_t tx_trailer[4 + ICRC_LEN];       /* pad, then the ICRC */
    uint8_t tx[QSW_MAX_FRAME] __attribute__((aligned(8)));
};

/* Packet parsed from the wire. */
struct qsw_pkt {
    const uint8_t *l3;
    const uint8_t *bth;
    const uint8_t *payload;
    uint32_t paylen;
    uint32_t mask;
    uint8_t opcode;
    bool ipv6, ackreq, se;
    uint32_t psn, dqpn;
    const uint8_t *smac;
    uint8_t sgid[16], dgid[16];
};

/* sw_engine.c */
/* The transport's clock (eng->now), from the embedder's (qsw_ops.now_ns). */
uint64_t qsw_now(struct qsw_engine *eng);
uint64_t qsw_clock(const struct qsw_engine *eng, uint64_t real);
/*
 * One finished frame onto the wire, or into the hold queue while the wire
 * is busy (or frames wait there); notes a QSW_TX_BUSY answer.
 */
void qsw_tx_emit(struct qsw_engine *eng, const uint8_t *frame, size_t len);
void qsw_tx_emit_iov(struct qsw_engine *eng, const struct iovec *iov,
                     unsigned n);

/*
 * A transport event for the embedder's tracer, if it has one (qsw_ops.trace).
 */
static inline void qsw_trace(struct qsw_qp *qp, enum qsw_trace ev, uint32_t psn,
                             uint32_t detail)
{
    if (qp->eng->ops.trace) {
        qp->eng->ops.trace(qp->eng->opaque, qp, ev, psn, detail);
    }
}
void qsw_qp_activate(struct qsw_qp *qp);
void qsw_qp_timer_update(struct qsw_qp *qp);
void qsw_qp_to_error(struct qsw_qp *qp, enum qsw_event ev);
void qsw_qp_to_sqe(struct qsw_qp *qp);
void qsw_complete(struct qsw_qp *qp, const struct qsw_wc *wc);
/* Send queue slots were freed: tell an embedder that found the queue full. */
void qsw_sq_freed(struct qsw_qp *qp);

/* sw_proto.c: build a frame in eng->tx. */
uint8_t *qsw_tx_begin(struct qsw_engine *eng, const struct qsw_av *av,
                      bool ipv6);
void qsw_tx_bth(uint8_t *bth, uint8_t opcode, bool se, unsigned pad,
                uint32_t dqpn, bool ackreq, uint32_t psn);
void qsw_tx_finish(struct qsw_engine *eng, const struct qsw_av *av, bool ipv6,
                   uint16_t sport, unsigned tp_len);
/*
 * The same for a frame whose payload is not in eng->tx: hdr_len bytes of
 * BTH and extension headers there, then the n pieces of iov (paylen bytes
 * in all, n >= 1), then pad zero bytes; sent through send_frame_iov.
 */
void qsw_tx_finish_iov(struct qsw_engine *eng, const struct qsw_av *av,
                       bool ipv6, uint16_t sport, unsigned hdr_len,
                       const struct iovec *iov, unsigned n, uint32_t paylen,
                       unsigned pad);
/*
 * The ICRC in three steps, for a frame in pieces: the headers (l3 on, hdr_len
 * >= IP+UDP+BTH)...
 */
uint32_t qsw_icrc_begin(const uint32_t tab[8][256], const uint8_t *l3,
                        size_t hdr_len, bool ipv6);
/*
 * ...each further piece with qsw_crc32_update, then the complement is the ICRC.
 */
int qsw_parse(struct qsw_engine *eng, const uint8_t *frame, size_t len,
              struct qsw_pkt *pkt);
/* The same for a frame to a multicast Ethernet address (qsw_rx_mcast). */
int qsw_parse_mcast(struct qsw_engine *eng, const uint8_t *frame, size_t len,
                    struct qsw_pkt *pkt);
/*
 * Is gid a multicast GID (::ffff:224.0.0.0/100, ff00::/8)? Then mac gets its
 * Ethernet address.
 */
bool qsw_mcast_mac(const uint8_t gid[16], uint8_t mac[6]);
bool qsw_gid_is_v4(const uint8_t gid[16]);
uint16_t qsw_udp_sport(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn);

/* sw_mig.c: saved state, both ways (qrdma_mig_stream.h) */
struct qrdma_mig;
void qsw_engine_mig(struct qsw_engine *eng, struct qrdma_mig *m);
void qsw_qp_mig(struct qsw_qp *qp, struct qrdma_mig *m);
/*
 * The responder's resources: n entries (0 counts as 1), kept when already so
 * many.
 */
int qsw_res_alloc(struct qsw_qp *qp, unsigned n);

/* sw_fault.c */
void qsw_fault_tx(struct qsw_engine *eng, const uint8_t *frame, size_t len);
static inline bool qsw_fault_holding(const struct qsw_engine *eng)
{
    return eng->held || eng->held_late;
}
uint64_t qsw_fault_poll(struct qsw_engine *eng, uint64_t now);
void qsw_fault_flush(struct qsw_engine *eng, bool send);

/* sw_req.c: requester and completer */
unsigned qsw_req_run(struct qsw_qp *qp, unsigned budget);
void qsw_comp_rx(struct qsw_qp *qp, const struct qsw_pkt *pkt);
void qsw_req_timeout(struct qsw_qp *qp, uint64_t now);
void qsw_req_flush(struct qsw_qp *qp);
void qsw_req_reset(struct qsw_qp *qp);

/* sw_resp.c: responder */
void qsw_resp_rx(struct qsw_qp *qp, const struct qsw_pkt *pkt);
unsigned qsw_resp_run(struct qsw_qp *qp, unsigned budget);
void qsw_resp_flush(struct qsw_qp *qp);
void qsw_resp_stop(struct qsw_qp *qp);
void qsw_resp_reset(struct qsw_qp *qp);
void qsw_ud_rx(struct qsw_qp *qp, const struct qsw_pkt *pkt);

#endif /* QRDMA_SW_INT_H */
