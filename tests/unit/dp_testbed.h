/*
 * The two-core test bed of the core-dp suite (tests/unit/test_core_dp.c),
 * also linked by the native benchmarks (bench/native/): two device cores
 * in one process, each with its own fake guest RAM and embedding (struct
 * side), wired back to back. Frames one core sends are delivered to the
 * other through qrdma_core_lan_receive() (so the LAN function's RoCE
 * steering is on the path), kicks run qrdma_core_run(), and one fake clock
 * drives now_ns and the data-path timers (qrdma_core_timer). Each side is
 * brought up as a driver would: CQP, GID table (IPv4-mapped GIDs), CEQ 0,
 * AEQ, FPM layout backed by one direct SD, an MR over a data area (REG_MR
 * LEVELS 0); CQs and QPs are created and moved to RTS through the CQP,
 * WQEs are written into the rings in fake RAM as a provider writes them
 * (VALID last, polarity per lap) and doorbells are rung through the
 * doorbell BAR.
 *
 * The bed has its own small embedding rather than fake_env.c's single
 * global core; it shares only unit.h with the other suites. An embedder
 * other than the suite (a benchmark, one side per process) may replace the
 * wire and the clock through dp_tb_wire and dp_tb_clock.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_DP_TESTBED_H
#define QRDMA_DP_TESTBED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/qrdma_core.h"
/* The sides run the sw backend: CQEs are checked by its (ibv) numbering, its stats read. */
#include "qrdma_backend_sw.h"
#include "unit.h"

/* ---- layout ------------------------------------------------------------------------- */

#define RAM_BASE    0x100000ull             /* guest-physical address of each side's RAM */
#define RAM_SIZE    (4u << 20)

/* Guest memory layout, the same on both sides. */
#define CQP_CTX     (RAM_BASE + 0x0000)
#define CQP_SHADOW  (RAM_BASE + 0x0040)
#define CQP_SQ      (RAM_BASE + 0x1000)     /* 64 WQEs of 64 bytes */
#define CCQ         (RAM_BASE + 0x2000)     /* 64 CQEs of 32 bytes */
#define FPM_BUF     (RAM_BASE + 0x3000)
#define INFO        (RAM_BASE + 0x3400)     /* QP create / modify info */
#define AV_BUF      (RAM_BASE + 0x3c00)
#define CEQ_RING    (RAM_BASE + 0x4000)     /* 64 CEQEs of 8 bytes */
#define AEQ_RING    (RAM_BASE + 0x5000)     /* 64 AEQEs of 16 bytes */
#define CQ_SHADOW(c) (RAM_BASE + 0x6000 + 64ull * (c))
#define SRQ_SHADOW  (RAM_BASE + 0x7000)
#define SQ_RING(q)  (RAM_BASE + 0x10000 + 0x8000ull * (q))    /* 16 KB each */
#define RQ_RING(q)  (SQ_RING(q) + 0x4000)                     /* 16 KB each */
#define CQ_RING(c)  (RAM_BASE + 0x90000 + 0x4000ull * (c))    /* 512 CQEs at most */
#define SRQ_RING    (RAM_BASE + 0xd0000)
#define DATA        (RAM_BASE + 0x100000)   /* 1 MB covered by MR_STAG */
#define DATA_LEN    (1u << 20)
#define HMC_RAM     0x400000ull             /* one direct SD: FPM [0, 1 MB) is RAM */

#define EQ_LOG2     6
#define CQP_LOG2    6

#define N_QP        16
#define N_CQ        16
#define N_SRQ       4
#define N_MR        16
#define N_AH        8
#define N_PBLE      64

#define PD          1
#define MR_INDEX    1
#define MR_KEY      0x11
#define MR_STAG     ((uint32_t)MR_INDEX << QRDMA_STAG_INDEX_SHIFT | MR_KEY)
#define IOVA        0x50000000ull           /* the MR's IOVA for DATA: not the address */
#define MR_ACCESS   (QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE | \
                     QRDMA_ACCESS_REMOTE_READ | QRDMA_ACCESS_REMOTE_ATOMIC)

#define LOG_N       32

/* ---- the two sides ------------------------------------------------------------------ */

struct side {
    struct qrdma_core core;
    uint8_t *ram;
    int idx;
    uint8_t mac[6];
    uint8_t gid[16];
    /* the embedding */
    unsigned kicks;
    uint64_t timer;                 /* UINT64_MAX: not armed */
    int guest_errors;
    char log[LOG_N][256];
    int log_n;
    int frames_sent;
    int irqs;
    int rx_ready_calls;
    bool dma_off;                   /* every DMA fails, as with bus mastering cleared */
    /* zero-copy transmit (env.dma_map_read, env.send_frame_iov) */
    bool map_off;                   /* dma_map_read refuses: payloads are copied */
    unsigned map_fail_at;           /* non-zero: the map_fail_at-th dma_map_read call refuses */
    unsigned map_calls;
    int maps_out;                   /* mappings not yet given back: 0 between frames */
    uint64_t maps, frames_iov;
    /* the driver: CQP */
    unsigned cqp_next, ccq_head;
    bool cqp_valid, ccq_valid;
    unsigned aeq_head, ceq_head;
    /* the provider: ring geometry and counts (free running) */
    struct {
        unsigned sq_log2, sq_stride_log2, rq_log2, rq_stride_log2;
        uint32_t sq_posted, rq_posted;
    } qp[N_QP];
    struct {
        unsigned log2;
        uint32_t head;
    } cq[N_CQ];
    unsigned srq_log2, srq_stride_log2;
    uint32_t srq_posted;
    /*
     * A netdev that fills up, as QEMU's net queue behind a full socket
     * (qemu_send_packet_async): with tx_limit set it takes tx_room more
     * frames onto the wire; the next one, and every one after it while
     * any is kept, it keeps and answers QRDMA_TX_QUEUED. dp_tb_tx_drain()
     * lets them go.
     */
    bool tx_limit;
    unsigned tx_room;
    unsigned tx_kept, tx_kept_max;
};

extern struct side sides[2];
#define SA (&sides[0])
#define SB (&sides[1])

/* The fake clock (env.now_ns unless dp_tb_clock is set). */
extern uint64_t now_ns;
extern struct qrdma_core_fault_cfg dev_fault;  /* cfg.fault of the sides set up next */
extern uint32_t dev_stall_floor_ms;             /* cfg.stall_floor_ms of the sides set up next */
/* cfg.cqp_stall_opcode of the sides set up next (QRDMA_CQP_STALL_NEVER by default). */
extern uint32_t dev_cqp_stall_opcode;
/* cfg.max_mcast_grp and max_mcast_qp_attach of the sides set up next (0: the defaults). */
extern uint32_t dev_max_mcast_grp, dev_max_mcast_qp_attach;
/* cfg.backend_ops of the sides set up next: NULL, the sw backend; a test's own otherwise. */
extern const struct qrdma_be_ops *dev_backend_ops;
extern const void *dev_backend_config;     /* its qrdma_be_params.backend_config */
/* The GID side_ident gives a side (its ADD_GID at bring-up); NULL: ::ffff:10.0.0.(1 + idx). */
extern const uint8_t *dev_gid;
extern unsigned rc_retry_cnt;                  /* retry_cnt rc_to_rts sets (default 3) */
/*
 * Called from a side's env.msix_notify, after counting: a test's way to make
 * an interrupt come back into the device (reset, unplug, MMIO), as an MSI-X
 * message aimed at a register would. NULL: nothing.
 */
extern void (*dp_tb_irq_hook)(struct side *s, unsigned vector);
/* The in-process wire: frames queued, frames to drop (both directions) before delivering. */
extern int frames_in_flight;
extern int drop_frames;
void fq_clear(void);
/*
 * Side s's netdev sends the frames it kept, in order, calling
 * qrdma_core_tx_ready() for each as QEMU's completion callback does, and
 * takes room frames more before it fills again (UINT_MAX: no limit).
 */
void dp_tb_tx_drain(struct side *s, unsigned room);

/*
 * Another wire: every frame a side sends goes to dp_tb_wire instead of the
 * bed's queue (pump() then delivers nothing), and dp_tb_clock replaces the
 * fake clock. NULL: the bed's own. It returns what env.send_frame does
 * (QRDMA_TX_SENT, or QRDMA_TX_QUEUED and a qrdma_core_tx_ready() later).
 */
extern int (*dp_tb_wire)(struct side *from, const uint8_t *frame, size_t len);
extern uint64_t (*dp_tb_clock)(void);
/*
 * Frames in pieces (env.send_frame_iov): to dp_tb_wire_iov when set, else
 * joined and sent as any other. dp_tb_copy_tx: the sides set up next have
 * no zero-copy transmit (no dma_map_read, no send_frame_iov), as an
 * embedding without them.
 */
extern int (*dp_tb_wire_iov)(struct side *from, const struct iovec *iov, unsigned n);
extern bool dp_tb_copy_tx;

/*
 * For a harness that clears only what an input touched (the fuzzers):
 * dp_tb_touch sees every range the bed's accessors hand out (reads too),
 * and dp_tb_clear_ram replaces side_bringup()'s clearing of the driver's
 * areas, [RAM_BASE, DATA) and [HMC_RAM, RAM end). NULL: no tracking, and
 * side_bringup() clears both areas whole.
 */
extern void (*dp_tb_touch)(struct side *s, uint64_t addr, size_t len);
extern void (*dp_tb_clear_ram)(struct side *s);

/* ---- guest memory of one side --------------------------------------------------------- */

uint8_t *mem(struct side *s, uint64_t addr);
void w8(struct side *s, uint64_t a, uint8_t v);
void w16(struct side *s, uint64_t a, uint16_t v);
void w32(struct side *s, uint64_t a, uint32_t v);
void w64(struct side *s, uint64_t a, uint64_t v);
uint64_t r64(struct side *s, uint64_t a);
/* Host pointer to byte off of the data area (the MR). */
uint8_t *dbuf(struct side *s, uint64_t off);
void fill(struct side *s, uint64_t off, size_t len, unsigned seed);
void reg_w(struct side *s, uint32_t off, uint32_t v);
uint32_t reg_r(struct side *s, uint32_t off);
/* Port counter i (docs/hw-spec.md section 20) as the driver reads it: a snapshot, then LO and HI. */
uint64_t port_stat(struct side *s, unsigned i);
/* Guest errors: did one contain needle (says on stderr if not); none at all; forget them. */
bool logged(struct side *s, const char *needle);
void no_errors(struct side *s);
void log_clear(struct side *s);

/* ---- running -------------------------------------------------------------------------- */

/*
 * Run kicked work and deliver frames until both sides are quiet. With
 * timers, then fire the earliest data-path timer (moving the clock to it)
 * and go on, as long as one is due before limit.
 */
void pump_until(bool timers, uint64_t limit);
void pump(void);
/*
 * Run kicked work and deliver frames, but stop after delivering `frames`
 * of them (or when quiet): traffic left in every stage of flight.
 */
void pump_some(int frames);
/* Pump, firing timers up to ms milliseconds from now. */
void pump_ms(unsigned ms);

/* ---- the driver's CQP ------------------------------------------------------------------ */

extern uint64_t last_status;
extern uint64_t last_retval;    /* the last CCQ CQE's return value */
unsigned major_of(uint64_t st);
/* Run one CQP command on side s; returns its status qword. */
uint64_t cqp(struct side *s, uint8_t op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
             uint64_t a4, uint64_t a5);

#define CQP_OK(expr)                                                               \
    do {                                                                           \
        uint64_t st_ = (expr);                                                     \
        if (st_ & (QRDMA_CCQ_CQE_MAJOR_MASK | QRDMA_CCQ_CQE_MINOR_MASK)) {         \
            fprintf(stderr, "  %s:%d: CQP command failed: major %u minor %u\n",   \
                    __FILE__, __LINE__, major_of(st_),                             \
                    (unsigned)(st_ & QRDMA_CCQ_CQE_MINOR_MASK));                   \
            unit_failures++;                                                       \
        }                                                                          \
    } while (0)

/* ---- bring-up and objects ---------------------------------------------------------------- */

/* Side idx's identity (MAC 02:00:00:00:00:0a + idx, GID ::ffff:10.0.0.1 + idx), nothing else. */
void side_ident(struct side *s, int idx);
/* A fresh core for side idx, brought up as the driver does (see the top of this file). */
void side_up(struct side *s, int idx);
/* Only the core: made again from the dev_* settings and reset; RAM and the driver's view kept. */
void side_core_init(struct side *s);
/*
 * The same bring-up on side s's existing core just after a reset (its
 * identity and RAM kept; the driver's rings zeroed, the data area kept).
 */
void side_bringup(struct side *s);
/* Both sides fresh; nothing on the wire, no timers. */
void setup(void);
/* At the end of a suite: both cores and their RAM freed, the wire empty. */
void teardown(void);

void create_cq_ex(struct side *s, uint32_t id, unsigned log2, bool ceq);
/* 16 CQEs, no CEQ. */
void create_cq(struct side *s, uint32_t id);

struct qp_spec {
    uint8_t type;
    uint8_t flags;
    uint16_t db_page;
    uint32_t send_cq, recv_cq, srq;
    unsigned sq_log2, sq_wqe_log2, rq_log2, rq_wqe_log2;
    uint64_t rq_addr;               /* 0: RQ_RING(id); with RQ_VIRTMAP, the first PBLE */
};

/* RC, send CQ 1, receive CQ 2, SQ of 8 WQEs of 256 bytes, RQ of 8 of 64. */
extern const struct qp_spec rc_spec;
extern const struct qp_spec ud_spec;
/* Eight bytes of a GID as the little-endian word a CQP argument takes. */
uint64_t gid_word(const uint8_t *gid);

#define QPCTX(id) (0xa0000ull + (id))

void create_qp(struct side *s, uint32_t id, const struct qp_spec *p);
/* The same, returning the command's status qword instead of requiring success. */
uint64_t create_qp_status(struct side *s, uint32_t id, const struct qp_spec *p);

#define MI(f) (INFO + offsetof(struct qrdma_qp_modify_info, f))

/* Start a modify info: the mask and new state, everything else 0. */
void mod_begin(struct side *s, uint32_t mask, uint8_t state);
uint64_t mod_run(struct side *s, uint32_t id);
void modify_state(struct side *s, uint32_t id, uint8_t state);
/* An AV at addr toward side peer (its GID and MAC), source GID 0. */
void write_av(struct side *s, uint64_t addr, const struct side *peer);
/* The same toward any GID; dmac NULL: zero (a backend on a host NIC resolves it). */
void write_av_to(struct side *s, uint64_t addr, const uint8_t *dgid, const uint8_t *dmac);

#define PSN(s) (0x100u + 0x100u * (s)->idx)

/*
 * RC QP id on s, RESET -> RTS, connected to QP peer_id of side peer, at
 * path MTU path_mtu (enum qsw_mtu: 3 is 1024, 5 is 4096). Only peer's
 * identity (side_ident) is used.
 */
void rc_to_rts_mtu(struct side *s, uint32_t id, struct side *peer, uint32_t peer_id,
                   unsigned rnr_retry, unsigned path_mtu);
/* The same at path MTU 1024: larger messages take several packets. */
void rc_to_rts(struct side *s, uint32_t id, struct side *peer, uint32_t peer_id,
               unsigned rnr_retry);
/*
 * The same toward any peer (a stock tool's QP on a host NIC): its GID,
 * MAC (NULL: zero), QPN and first PSN, and this QP's first PSN.
 */
void rc_connect(struct side *s, uint32_t id, const uint8_t *dgid, const uint8_t *dmac,
                uint32_t dest_qpn, uint32_t rq_psn, uint32_t sq_psn, unsigned rnr_retry,
                unsigned path_mtu);

#define QKEY 0x11110000u

void ud_to_rts(struct side *s, uint32_t id);
/* The same with another Q_Key and first PSN. */
void ud_to_rts_qkey(struct side *s, uint32_t id, uint32_t qkey, uint32_t sq_psn);

/* The usual pair: CQs 1 (send) and 2 (receive) on both sides, RC QP 2 <-> QP 2. */
#define QPN 2

/*
 * UC QP id on s, RESET -> RTS toward QP peer_id of side peer (MTU 1024,
 * local and remote write); false if a step failed (nothing checked here).
 */
bool uc_to_rts(struct side *s, uint32_t id, struct side *peer, uint32_t peer_id);
void rc_pair_spec(const struct qp_spec *sa, const struct qp_spec *sb, unsigned rnr_retry);
void rc_pair(void);

/* ---- the provider: WQEs and CQEs ------------------------------------------------------- */

struct sge {
    uint64_t off;                   /* in the data area; the SGE carries IOVA + off */
    uint32_t len;
    uint32_t lkey;                  /* 0: MR_STAG */
};

struct wqe {
    uint8_t op;
    bool unsignaled, solicited;
    uint64_t remote_off;            /* remote IOVA + off */
    uint32_t rkey;                  /* 0: MR_STAG */
    uint32_t imm;
    uint64_t compare_add, swap;
    uint32_t ah, dest_qpn, qkey;    /* UD */
    const void *inl;                /* inline data */
    unsigned inl_len;
    unsigned nsge;
    unsigned nsge_field;            /* NUM_SGE to write if not nsge (malformed WQEs) */
    struct sge sge[QSW_MAX_SGE];
};

/* Claims `qp`'s next SQ slot: its guest address, its index and the valid bit its WQE needs. */
uint64_t sq_next_slot(struct side *s, uint32_t qp, uint32_t *index, bool *valid);
/* Write one SQ WQE (VALID last) and return its index; no doorbell. */
uint32_t post_send(struct side *s, uint32_t qp, const struct wqe *w);
void write_rq_wqe(struct side *s, uint64_t a, bool valid, unsigned nsge, const struct sge *sge,
                  unsigned nsge_field);
uint32_t post_recv_n(struct side *s, uint32_t qp, unsigned nsge, const struct sge *sge);
uint32_t post_recv(struct side *s, uint32_t qp, uint64_t off, uint32_t len);
void db(struct side *s, uint32_t page, uint32_t which, uint32_t value);
void ring_sq(struct side *s, uint32_t qp);
void ring_rq(struct side *s, uint32_t qp);

struct cqe {
    uint32_t byte_len, imm, qp, src_qp;
    uint16_t wqe_index, vendor_err;
    uint8_t opcode, status, flags;
};

/*
 * Take the next CQE of CQ cq if the device wrote it (VALID of the current
 * lap). cq_take leaves the shadow area's HEAD alone, for cq_publish to
 * store once after a batch (as the provider does per poll); poll_cq does
 * both.
 */
bool cq_take(struct side *s, uint32_t cq, struct cqe *e);
void cq_publish(struct side *s, uint32_t cq);
bool poll_cq(struct side *s, uint32_t cq, struct cqe *e);

/* The next CQE of cq must exist and match; byte_len ~0u: not checked. */
#define EXPECT_CQE(s, cq, qpn, idx, op, st, fl, len)                               \
    do {                                                                           \
        struct cqe e_;                                                             \
        if (!poll_cq((s), (cq), &e_)) {                                            \
            fprintf(stderr, "  %s:%d: no CQE on CQ %u\n", __FILE__, __LINE__,      \
                    (unsigned)(cq));                                               \
            unit_failures++;                                                       \
            break;                                                                 \
        }                                                                          \
        CHECK_EQ(e_.qp, (qpn));                                                    \
        CHECK_EQ(e_.wqe_index, (idx));                                             \
        CHECK_EQ(e_.opcode, (op));                                                 \
        CHECK_EQ(e_.status, (st));                                                 \
        CHECK_EQ(e_.flags, (fl));                                                  \
        if ((uint32_t)(len) != ~0u) {                                              \
            CHECK_EQ(e_.byte_len, (len));                                          \
        }                                                                          \
    } while (0)

void expect_no_cqe(struct side *s, uint32_t cq);

/* ---- event queues ------------------------------------------------------------------------ */

struct aeqe {
    uint64_t ctx;
    uint32_t id;
    uint16_t code;
    uint8_t source;
};

bool poll_aeq(struct side *s, struct aeqe *e);
/* Drain the AEQ; was there an event (code, id, source) with context ctx? */
bool aeq_has(struct side *s, uint16_t code, uint32_t id, uint8_t source, uint64_t ctx);
unsigned aeq_drain(struct side *s);
bool poll_ceq(struct side *s, uint64_t *ctx);
/* The QP's state in the core's working copy, 0xff if there is no such QP. */
uint8_t qp_state(struct side *s, uint32_t id);

#endif /* QRDMA_DP_TESTBED_H */
