/*
 * A test bed for the software RoCEv2 engine: two engines in one process
 * joined by an in-memory wire (a FIFO of frames), a fake clock that jumps
 * to the next deadline when the wire is idle, and per node a fake memory
 * with a small key table behind the engine's memory callbacks.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_SW_TESTBED_H
#define QRDMA_SW_TESTBED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qrdma_sw.h"

#define TB_MEM_SIZE  (24u << 20)
#define TB_MEM_BASE  0x7f0000000000ull   /* va of memory offset 0 */
#define TB_MAX_MR    64
#define TB_RQ_DEPTH  8192

struct tb;

struct tb_mr {
    uint32_t key, pd, access;
    uint64_t va, len;
    bool valid;
};

/* Per QP context (qsw_qp_user): its PD and receive queue. */
struct tb_qpctx {
    struct tb_node *node;
    uint32_t pd;
    struct qsw_recv_wr *rq;
    unsigned rq_head, rq_tail;
};

struct tb_node {
    struct tb *tb;
    int idx;
    struct qsw_engine *eng;
    uint8_t mac[6];
    uint8_t gid[16];
    uint8_t *mem;
    struct tb_mr mr[TB_MAX_MR];
    unsigned nmr;
    struct qsw_wc *wc;
    size_t nwc, cap_wc;
    unsigned events[32];
    unsigned sq_space;      /* sq_space callbacks */
    uint64_t atomics;       /* atomics executed by rkey_atomic */
    struct tb_qpctx *ctx[16];
    unsigned nctx;
    /*
     * A wire that fills up, as QEMU's net queue with a full socket: with
     * tx_room set, a frame that leaves tx_room or more of this node's
     * frames waiting on the wire is answered QSW_TX_BUSY (it is still
     * carried), and once the wire has delivered all of them the node's
     * engine gets qsw_engine_tx_ready(). hold: the wire delivers none of
     * this node's frames (a netdev that does not drain).
     */
    unsigned tx_room;
    bool hold;
    unsigned waiting;       /* this node's frames on the wire */
    unsigned max_waiting;   /* the most there ever were */
    bool told_busy;
    unsigned busy_answers, ready_calls;
};

/* Returns true to drop the frame; may modify it (len may shrink). */
typedef bool (*tb_tap_fn)(struct tb *tb, int from, uint8_t *frame, size_t *len, void *arg);

struct tb_frame;

struct tb {
    struct tb_node node[2];
    uint64_t now;
    struct tb_frame *qhead, *qtail;
    bool drop_all;
    tb_tap_fn tap;
    void *tap_arg;
    uint64_t frames;        /* carried by the wire */
    unsigned budget;        /* per poll */
    /* zero-copy transmit (tb_new_zero_copy) */
    unsigned map_refuse_every, map_calls;
    int maps_out;           /* pieces mapped and not yet given back */
    uint64_t maps, frames_iov;
};

/* Two nodes; ipv6 selects IPv6 GIDs (fd00::1, fd00::2) instead of 10.0.0.1/2. */
struct tb *tb_new(bool ipv6);
/*
 * The same with zero-copy transmit (qsw_ops.sge_map, sge_unmap,
 * send_frame_iov): payloads are mapped in pieces that end at every
 * TB_MAP_SPLIT-aligned address (odd, so pieces of odd length and position
 * occur), every map_refuse_every-th map is refused (0: none) so that the
 * engine copies that payload instead. Frames are joined on the wire.
 */
#define TB_MAP_SPLIT 1001
struct tb *tb_new_zero_copy(bool ipv6, unsigned map_refuse_every);
void tb_free(struct tb *tb);

uint32_t tb_reg_mr(struct tb_node *n, uint32_t pd, uint64_t off, uint64_t len, uint32_t access);
static inline uint64_t tb_va(uint64_t off) { return TB_MEM_BASE + off; }
void tb_fill(struct tb_node *n, uint64_t off, uint64_t len, uint32_t seed);

struct qsw_qp *tb_qp(struct tb_node *n, uint32_t qpn, enum qsw_qp_type type, uint32_t pd,
                     uint32_t sq_depth);

struct tb_conn {
    enum qsw_mtu mtu;
    uint32_t psn_a, psn_b;      /* a's sq_psn (= b's rq_psn) and b's */
    uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
    uint8_t max_rd_atomic;
    uint32_t access;
};
/* RESET -> INIT -> RTR -> RTS for a on node 0 and b on node 1 (RC or UC); 0 or error. */
int tb_connect(struct tb *tb, struct qsw_qp *a, struct qsw_qp *b, const struct tb_conn *c);
/* UD: RESET -> RTS with the Q_Key. */
int tb_ud_up(struct qsw_qp *qp, uint32_t qkey, enum qsw_mtu mtu);

void tb_post_recv(struct qsw_qp *qp, uint64_t wr_id, uint64_t va, uint32_t len, uint32_t lkey);
void tb_post_recv_wr(struct qsw_qp *qp, const struct qsw_recv_wr *wr);
unsigned tb_rq_count(struct qsw_qp *qp);

/* Delivers the frames queued so far, without polling either engine. */
bool tb_deliver(struct tb *tb);
/* Delivers frames and polls until cond(arg) holds or the clock passes now + max_ns. */
bool tb_run(struct tb *tb, bool (*cond)(struct tb *tb, void *arg), void *arg, uint64_t max_ns);
/* Runs until node n has at least count completions. */
bool tb_run_wcs(struct tb *tb, int n, size_t count, uint64_t max_ns);
/* Runs until both engines are idle (no frames, no deadlines) or max_ns. */
bool tb_run_idle(struct tb *tb, uint64_t max_ns);

/* Completions of node n with the given wr_id (the first), or NULL. */
const struct qsw_wc *tb_find_wc(struct tb_node *n, uint64_t wr_id, bool recv);
void tb_clear_wcs(struct tb_node *n);

/* Builds an SGE-less send WR. */
struct qsw_send_wr tb_wr(uint64_t wr_id, enum qsw_wr_opcode op, uint32_t flags);
void tb_wr_sge(struct qsw_send_wr *wr, uint64_t va, uint32_t len, uint32_t lkey);

#endif /* QRDMA_SW_TESTBED_H */
