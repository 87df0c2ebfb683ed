/*
 * core_bench: the device core and the software RoCEv2 transport end to
 * end, without a VM. Two device cores (struct qrdma_core) with fake guest
 * memories, brought up and driven through the test bed of the core-dp unit
 * suite (tests/unit/dp_testbed.[ch]): HMC, CQP, CQs and an RC QP created
 * through CQP commands, an MR over the data area, WQEs written into the SQ
 * ring in guest memory, doorbells through the doorbell BAR, CQEs read back
 * by their VALID bit. The driver side behaves as a fast-path provider
 * (perftest over libqrdma) does: it keeps the SQ full up to a depth, polls
 * CQEs in batches of 16, publishes the CQ head once per batch, re-posts,
 * rings one doorbell per batch of WQEs, and keeps the RQ full.
 *
 * Two wirings:
 *
 *   (default) both cores in this process, one thread: frames one core sends
 *   are copied into an in-memory ring and delivered to the other's frame
 *   receive entry (qrdma_core_lan_receive), as host-backend/bench/sw_bench
 *   does for two bare engines, so the two benchmarks differ by the device.
 *
 *   --dgram: two processes (this one and a child forked from it), one core
 *   each, connected as the VM tests connect two QEMUs (scripts/vm-run:
 *   -netdev dgram with local and remote Unix socket paths): an unconnected
 *   AF_UNIX datagram socket per process, sendto() per frame from the
 *   frame-send callback, a frame that meets EAGAIN held in a queue (as
 *   QEMU's net queue holds a frame sent with qemu_send_packet_async: the
 *   device hears QRDMA_TX_QUEUED and waits for qrdma_core_tx_ready(),
 *   called when the frame has gone) and sent again, non-blocking recvmmsg()
 *   of up to 16 frames a call, as QEMU's dgram netdev reads them
 *   (qemu-patches/0003), up to 64 frames in a row into the core's receive
 *   entry, ppoll() when idle with the data-path timer as the timeout. One more
 *   case, wire_bw, sends 4 KB frames through the same path without the
 *   devices: the ceiling the wire itself sets.
 *
 * Tests: RDMA WRITE and SEND of 64 B and 64 KB (RC, path MTU 4096, 128
 * WRs in flight, one SGE each), messages/s and GB/s (1e9 bytes) of
 * payload; 8-byte RDMA WRITE and SEND ping-pong, median and 99th
 * percentile of the one-way latency, that is half of each round trip (as
 * perftest's *_lat report). Every case checks its completions, the data
 * that arrived and that neither core logged a guest error.
 *
 *   make build/bench/core_bench && build/bench/core_bench [options]
 *     --dgram          two processes over Unix datagram sockets
 *     -s SECONDS       per case (default 1; 0.1 more for warm-up)
 *     -t TEST[:SIZE]   only this case: write_bw, send_bw, write_lat, send_lat, wire_bw
 *     -n MESSAGES      (b) only, bandwidth cases: exactly that many messages (and the
 *                      few still in flight), no warm-up, on a virtual clock that
 *                      advances 1 us per pass of the loop, so that two runs do the
 *                      same work: the mode bench/native/count-instr.sh runs under
 *                      callgrind to count instructions per message at each end
 *     --copy-tx        no zero-copy transmit: each payload copied into its frame (the
 *                      cores' embedding without dma_map_read and send_frame_iov), as
 *                      before it, for comparisons in one build
 *   QRDMA_BENCH_DEBUG=1 in the environment: the engines' counters per case on stderr.
 *
 * Prints a table, then one line per case for bench/report.py:
 *   native <bench> <test> <size> <mtu> <msgs/s> <GB/s> <lat median us> <lat p99 us>
 * with "-" where a column does not apply; bench is "core" or "core-dgram".
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/qrdma_core.h"
#include "dp_testbed.h"
#include "qrdma_sw.h"
#include "bench_clock.h"

int unit_failures;                  /* the bed's CHECKs count here */

/* ---- parameters ----------------------------------------------------------------------- */

#define DEPTH       128             /* WRs in flight (perftest's default tx_depth) */
#define SQ_LOG2     7               /* 128 SQ WQEs ... */
#define SQ_WQE_LOG2 7               /* ... of 128 bytes: header and up to 4 SGEs */
#define RQ_LOG2     8               /* 256 RQ WQEs ... */
#define RQ_WQE_LOG2 6               /* ... of 64 bytes */
#define CQ_LOG2     9               /* 512 CQEs (the bed's rings hold no more) */
#define SCQ         1
#define RCQ         2
#define POLL_BATCH  16              /* CQEs per poll, as perftest polls */
#define PATH_MTU    QSW_MTU_4096
#define MAX_MSG     65536u

/* Offsets in each side's data area (the MR, 1 MB). */
#define SRC_OFF     0x00000u        /* what a side sends: up to 64 KB */
#define WDST_OFF    0x40000u        /* where the peer's bandwidth WRITEs land */
#define RBUF_OFF    0x80000u        /* the buffer of every RQ WQE: 64 KB */
#define PING_SRC    0xc0000u        /* latency: the 8 bytes a side sends */
#define PING_DST    0xc1000u        /* where the peer's ping WRITE lands */

static const struct qp_spec bench_spec = {
    .type = QRDMA_QP_TYPE_RC, .send_cq = SCQ, .recv_cq = RCQ,
    .sq_log2 = SQ_LOG2, .sq_wqe_log2 = SQ_WQE_LOG2,
    .rq_log2 = RQ_LOG2, .rq_wqe_log2 = RQ_WQE_LOG2,
};

enum test { WRITE_BW, SEND_BW, WRITE_LAT, SEND_LAT, WIRE_BW, N_TESTS };
static const char *const test_name[] = { "write_bw", "send_bw", "write_lat", "send_lat",
                                         "wire_bw" };

static const struct bench_case {
    enum test test;
    uint32_t size;
} cases[] = {
    { WRITE_BW, 64 }, { WRITE_BW, 65536 }, { SEND_BW, 64 }, { SEND_BW, 65536 },
    { WRITE_LAT, 8 }, { SEND_LAT, 8 },
    /*
     * --dgram only, no device: the wire's ceiling for frames of a full 4 KB
     * WRITE MIDDLE packet, and for those of a 64 B WRITE ONLY (the frame
     * rate that bounds small messages, one frame each)
     */
    { WIRE_BW, 4154 }, { WIRE_BW, 138 },
};
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

static double seconds = 1.0;
static uint64_t count_msgs;         /* -n: messages per bandwidth case, 0 for timed runs */
static uint64_t virtual_ns;         /* -n: the clock, advanced by local_progress() */
static const char *bench_name = "core";
static const char *me_name = "";    /* "A: " / "B: " in the two-process run */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "core_bench: %s", me_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static uint64_t fnv1a(const uint8_t *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;

    while (len--) {
        h = (h ^ *p++) * 0x100000001b3ull;
    }
    return h;
}

/* ---- the device: one side's work, as the embedding's main loop runs it ----------------- */

/*
 * Every call into side A's device (doorbell writes, bottom half, timer,
 * frame receive) runs inside device_end_a, side B's inside device_end_b,
 * and nothing else does: callgrind's inclusive cost of each is what that
 * end of the device spent (bench/native/count-instr.sh). The bed's driver
 * work (WQEs written, CQEs polled) and the wire's copy stay outside.
 */
typedef void device_call(struct side *s, uintptr_t arg);

static __attribute__((noinline)) void device_end_a(device_call *fn, struct side *s,
                                                   uintptr_t arg)
{
    fn(s, arg);
    __asm__ volatile("" ::: "memory");     /* not a tail call: keep the frame */
}

static __attribute__((noinline)) void device_end_b(device_call *fn, struct side *s,
                                                   uintptr_t arg)
{
    fn(s, arg);
    __asm__ volatile("" ::: "memory");
}

static inline void on_device(device_call *fn, struct side *s, uintptr_t arg)
{
    (s->idx ? device_end_b : device_end_a)(fn, s, arg);
}

static void call_run(struct side *s, uintptr_t what)
{
    qrdma_core_run(&s->core, (unsigned)what);
}

static void call_timer(struct side *s, uintptr_t unused)
{
    qrdma_core_timer(&s->core);
}

static void call_ring_sq(struct side *s, uintptr_t qp)
{
    ring_sq(s, (uint32_t)qp);
}

static void call_ring_rq(struct side *s, uintptr_t qp)
{
    ring_rq(s, (uint32_t)qp);
}

/* The clock the cores and the timer see: the wall, or with -n the virtual one. */
static uint64_t bench_now_ns(void)
{
    return count_msgs ? virtual_ns : bench_wall_ns();
}

/* Run kicked work once (QEMU's bottom half) and the data-path timer if due. */
static bool device_step(struct side *s)
{
    unsigned what = s->kicks;
    bool did = false;

    if (what) {
        s->kicks = 0;
        on_device(call_run, s, what);
        did = true;
    }
    if (s->timer != UINT64_MAX && s->timer <= bench_now_ns()) {
        s->timer = UINT64_MAX;
        on_device(call_timer, s, 0);
        did = true;
    }
    return did;
}

/* With QRDMA_BENCH_DEBUG set: the engine's counters of side s on stderr. */
static void debug_stats(struct side *s, const char *when)
{
    struct qsw_stats st;

    if (!getenv("QRDMA_BENCH_DEBUG")) {
        return;
    }
    qsw_engine_stats(qrdma_be_sw_engine(s->core.dp.be), &st);
    fprintf(stderr, "[%c %s] tx %" PRIu64 " rx %" PRIu64 " acks tx %" PRIu64 " rx %" PRIu64
            " rnr naks tx %" PRIu64 " rx %" PRIu64
            " naks seq tx %" PRIu64 " rx %" PRIu64 " retx %" PRIu64 " timeouts %" PRIu64
            " dups %" PRIu64 " dup_resp %" PRIu64 " drops: malformed %" PRIu64 " icrc %" PRIu64
            " qp %" PRIu64 " state %" PRIu64 " addr %" PRIu64 " seq %" PRIu64 "\n",
            'A' + s->idx, when, st.tx_frames, st.rx_frames, st.tx_acks, st.rx_acks,
            st.tx_rnr_naks, st.rx_rnr_naks,
            st.tx_naks_seq, st.rx_naks_seq, st.retransmits, st.timeouts, st.duplicates,
            st.dup_responses, st.drop_malformed, st.drop_icrc, st.drop_unknown_qp,
            st.drop_bad_state, st.drop_addr, st.drop_out_of_seq);
}

static void check_side(struct side *s, const char *when)
{
    int i;

    if (!unit_failures && !s->guest_errors) {
        return;
    }
    for (i = 0; i < s->log_n && i < LOG_N; i++) {
        fprintf(stderr, "  side %c: guest error: %s\n", 'A' + s->idx, s->log[i]);
    }
    die("%s: %d guest errors, %d failed checks", when, s->guest_errors, unit_failures);
}

/* ---- the provider ------------------------------------------------------------------- */

struct drv {
    uint64_t posted, completed;     /* SQ WQEs posted, their CQEs polled */
    uint64_t received;              /* receive CQEs polled */
    uint32_t last_len;              /* byte_len of the last receive CQE */
};

static struct drv drvs[2];

/*
 * Poll send CQEs in batches of POLL_BATCH until none is left (a provider
 * busy-polling on its own CPU keeps up with the device); a CQE in error
 * ends the benchmark.
 */
static unsigned reap_send_batch(struct side *s)
{
    struct drv *d = &drvs[s->idx];
    struct cqe e;
    unsigned n = 0;

    while (n < POLL_BATCH && cq_take(s, SCQ, &e)) {
        if (e.status != QSW_WC_SUCCESS) {
            die("send CQE of WQE %u: status %u (%s), vendor error %u", e.wqe_index, e.status,
                qsw_wc_status_str(e.status), e.vendor_err);
        }
        n++;
    }
    if (n) {
        cq_publish(s, SCQ);
        d->completed += n;
    }
    return n;
}

static unsigned reap_send(struct side *s)
{
    unsigned n, total = 0;

    do {
        total += n = reap_send_batch(s);
    } while (n == POLL_BATCH);
    return total;
}

/* Poll a batch of receive CQEs and post as many receive WQEs again (one RQ doorbell). */
static unsigned reap_recv_batch(struct side *s)
{
    struct drv *d = &drvs[s->idx];
    struct cqe e;
    unsigned n = 0, i;

    while (n < POLL_BATCH && cq_take(s, RCQ, &e)) {
        if (e.status != QSW_WC_SUCCESS || e.opcode != QSW_WC_RECV) {
            die("receive CQE of WQE %u: status %u (%s), opcode %u", e.wqe_index, e.status,
                qsw_wc_status_str(e.status), e.opcode);
        }
        d->last_len = e.byte_len;
        n++;
    }
    if (n) {
        cq_publish(s, RCQ);
        d->received += n;
        for (i = 0; i < n; i++) {
            post_recv(s, QPN, RBUF_OFF, MAX_MSG);
        }
        on_device(call_ring_rq, s, QPN);
    }
    return n;
}

/* The same until the receive CQ is empty. */
static unsigned reap_recv(struct side *s)
{
    unsigned n, total = 0;

    do {
        total += n = reap_recv_batch(s);
    } while (n == POLL_BATCH);
    return total;
}

/* Post WQEs like w until DEPTH are in flight; one doorbell. */
static unsigned fill_sq(struct side *s, const struct wqe *w)
{
    struct drv *d = &drvs[s->idx];
    unsigned n = 0;

    while (d->posted - d->completed < DEPTH) {
        post_send(s, QPN, w);
        d->posted++;
        n++;
    }
    if (n) {
        on_device(call_ring_sq, s, QPN);
    }
    return n;
}

static struct wqe bw_wqe(enum test t, uint32_t size)
{
    struct wqe w = {
        .op = t == WRITE_BW ? QRDMA_SQ_OP_RDMA_WRITE : QRDMA_SQ_OP_SEND,
        .remote_off = WDST_OFF,
        .nsge = 1,
        .sge = { { SRC_OFF, size, 0 } },
    };

    return w;
}

/* One ping: value v in the 8 bytes at PING_SRC, WRITTEN to the peer's PING_DST or SENT. */
static void ping_post(struct side *s, enum test t, uint64_t v)
{
    struct wqe w = {
        .op = t == WRITE_LAT ? QRDMA_SQ_OP_RDMA_WRITE : QRDMA_SQ_OP_SEND,
        .remote_off = PING_DST,
        .nsge = 1,
        .sge = { { PING_SRC, 8, 0 } },
    };
    struct drv *d = &drvs[s->idx];

    if (d->posted - d->completed >= DEPTH) {
        die("ping: SQ full");
    }
    w64(s, DATA + PING_SRC, v);
    post_send(s, QPN, &w);
    d->posted++;
    on_device(call_ring_sq, s, QPN);
}

/* Did ping v arrive at s? Polls its receive CQ (SEND) or the memory it lands in (WRITE). */
static bool ping_arrived(struct side *s, enum test t, uint64_t v)
{
    struct drv *d = &drvs[s->idx];
    uint64_t before = d->received;

    if (t == WRITE_LAT) {
        return r64(s, DATA + PING_DST) == v;
    }
    reap_recv(s);
    if (d->received == before) {
        return false;
    }
    if (d->received != before + 1 || d->last_len != 8 || r64(s, DATA + RBUF_OFF) != v) {
        die("ping %" PRIu64 ": %" PRIu64 " receives of %u bytes holding %" PRIu64, v,
            d->received - before, d->last_len, r64(s, DATA + RBUF_OFF));
    }
    return true;
}

/* A side brought up as the driver does, its QP in RTS toward the other side, RQ full. */
static void node_up(int me)
{
    struct side *s = &sides[me], *peer = &sides[1 - me];
    unsigned i;

    side_ident(peer, 1 - me);
    side_up(s, me);
    create_cq_ex(s, SCQ, CQ_LOG2, false);
    create_cq_ex(s, RCQ, CQ_LOG2, false);
    create_qp(s, QPN, &bench_spec);
    rc_to_rts_mtu(s, QPN, peer, QPN, 7, PATH_MTU);
    for (i = 0; i < 1u << RQ_LOG2; i++) {
        post_recv(s, QPN, RBUF_OFF, MAX_MSG);
    }
    ring_rq(s, QPN);
    memset(&drvs[me], 0, sizeof(drvs[me]));
    check_side(s, "bring-up");
}

/* ---- results -------------------------------------------------------------------------- */

struct result {
    const struct bench_case *c;
    double msgs, gbps;              /* bandwidth tests */
    double lat_med, lat_p99;        /* latency tests, us one way */
    uint64_t samples;
};

static struct result results[N_CASES];
static unsigned n_results;

static void print_head(const char *title)
{
    printf("%s\n", title);
    printf("RC, path MTU 4096, %u WRs in flight for bandwidth; latency one way (half a round "
           "trip)\n", DEPTH);
    printf("%-10s %6s %12s %8s %14s %14s\n", "test", "size", "msgs/s", "GB/s", "lat med (us)",
           "lat p99 (us)");
    fflush(stdout);
}

static void print_row(const struct result *r)
{
    char m[32] = "-", g[32] = "-", l1[32] = "-", l2[32] = "-";

    if (r->msgs > 0) {
        snprintf(m, sizeof(m), "%.0f", r->msgs);
        snprintf(g, sizeof(g), "%.3f", r->gbps);
    }
    if (r->samples) {
        snprintf(l1, sizeof(l1), "%.2f", r->lat_med);
        snprintf(l2, sizeof(l2), "%.2f", r->lat_p99);
    }
    printf("%-10s %6u %12s %8s %14s %14s\n", test_name[r->c->test], r->c->size, m, g, l1, l2);
    fflush(stdout);
}

static void print_machine_lines(void)
{
    unsigned i;

    for (i = 0; i < n_results; i++) {
        const struct result *r = &results[i];

        printf("native %s %s %u %u ", bench_name, test_name[r->c->test], r->c->size,
               qsw_mtu_bytes(PATH_MTU));
        if (r->msgs > 0) {
            printf("%.0f %.4f ", r->msgs, r->gbps);
        } else {
            printf("- - ");
        }
        if (r->samples) {
            printf("%.3f %.3f\n", r->lat_med, r->lat_p99);
        } else {
            printf("- -\n");
        }
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Round trips in ns -> one-way median and p99 in us. */
static void lat_stats(struct result *r, uint64_t *rtt, uint64_t n)
{
    if (!n) {
        die("no round trip completed");
    }
    qsort(rtt, n, sizeof(*rtt), cmp_u64);
    r->samples = n;
    r->lat_med = rtt[n / 2] / 2e3;
    r->lat_p99 = rtt[n * 99 / 100] / 2e3;
}

#define MAX_SAMPLES 2000000u
static uint64_t *rtt_buf;

/* ---- (b): both cores in this process ---------------------------------------------------- */

#define WIRE_SLOTS  1024u
#define WIRE_SLOT   (QRDMA_LAN_MTU_MAX + QRDMA_LAN_FRAME_OVERHEAD)
#define WIRE_SLOT_MAX WIRE_SLOT

static uint8_t *wire_buf;
static uint32_t wire_len[WIRE_SLOTS];
static uint8_t wire_to[WIRE_SLOTS];
static unsigned wire_head, wire_tail;
static uint64_t wire_frames, wire_drops;

/* The frame-send callback: a copy into the ring (a full ring drops, as a wire would). */
static int mem_wire(struct side *from, const uint8_t *frame, size_t len)
{
    unsigned slot;

    if (wire_tail - wire_head == WIRE_SLOTS || len > WIRE_SLOT) {
        wire_drops++;
        return 0;
    }
    slot = wire_tail++ % WIRE_SLOTS;
    memcpy(wire_buf + (size_t)slot * WIRE_SLOT, frame, len);
    wire_len[slot] = (uint32_t)len;
    wire_to[slot] = (uint8_t)(1 - from->idx);
    wire_frames++;
    return 0;
}

/* A frame in pieces (zero-copy transmit): the same one copy into the ring, piece by piece. */
static int mem_wire_iov(struct side *from, const struct iovec *iov, unsigned n)
{
    size_t len = 0;
    unsigned slot, i;
    uint8_t *dst;

    for (i = 0; i < n; i++) {
        len += iov[i].iov_len;
    }
    if (wire_tail - wire_head == WIRE_SLOTS || len > WIRE_SLOT) {
        wire_drops++;
        return 0;
    }
    slot = wire_tail++ % WIRE_SLOTS;
    dst = wire_buf + (size_t)slot * WIRE_SLOT;
    for (i = 0; i < n; i++) {
        memcpy(dst, iov[i].iov_base, iov[i].iov_len);
        dst += iov[i].iov_len;
    }
    wire_len[slot] = (uint32_t)len;
    wire_to[slot] = (uint8_t)(1 - from->idx);
    wire_frames++;
    return 0;
}

static void call_receive(struct side *s, uintptr_t slot)
{
    qrdma_core_lan_receive(&s->core, wire_buf + (size_t)slot * WIRE_SLOT, wire_len[slot]);
}

static bool mem_wire_deliver(void)
{
    bool did = wire_head != wire_tail;

    while (wire_head != wire_tail) {
        unsigned slot = wire_head++ % WIRE_SLOTS;

        on_device(call_receive, &sides[wire_to[slot]], slot);
    }
    /* Empty: the next burst reuses the first (cache-warm) slots. */
    wire_head = wire_tail = 0;
    return did;
}

static bool local_progress(void)
{
    bool did;

    virtual_ns += 1000;
    did = device_step(SA);

    did |= mem_wire_deliver();
    did |= device_step(SB);
    did |= mem_wire_deliver();
    return did;
}

/* Pump until both sides are quiet and every posted WQE completed (or die after 10 s). */
static void local_drain(void)
{
    uint64_t t0 = bench_wall_ns();

    for (;;) {
        bool did = local_progress();

        did |= reap_send(SA) | reap_send(SB) | reap_recv(SA) | reap_recv(SB);
        if (!did && drvs[0].posted == drvs[0].completed && drvs[1].posted == drvs[1].completed) {
            return;
        }
        if (bench_wall_ns() - t0 > 10000000000ull) {
            die("drain: %" PRIu64 " of %" PRIu64 " WQEs completed after 10 s",
                drvs[0].completed, drvs[0].posted);
        }
    }
}

/* noinline: a profiler can collect just this (valgrind --toggle-collect=local_bw). */
static __attribute__((noinline)) void local_bw(struct result *r, enum test t, uint32_t size)
{
    const struct wqe w = bw_wqe(t, size);
    uint64_t t0, t1, c0 = 0, end, warm, p0 = drvs[0].posted, r0 = drvs[1].received;
    bool measuring = false;

    fill(SA, SRC_OFF, size, size + t);
    memset(dbuf(SB, t == WRITE_BW ? WDST_OFF : RBUF_OFF), 0, MAX_MSG);
    if (count_msgs) {
        /* -n: a fixed amount of work, the same in every run; its cost is what counts. */
        while (drvs[0].completed - p0 < count_msgs) {
            reap_send(SA);
            if (t == SEND_BW) {
                reap_recv(SB);
            }
            if (drvs[0].posted - p0 < count_msgs) {
                fill_sq(SA, &w);
            }
            local_progress();
        }
        goto done;
    }
    t0 = bench_bw_ns();
    warm = t0 + 100000000ull;
    end = warm + (uint64_t)(seconds * 1e9);
    for (;;) {
        for (int k = 0; k < 64; k++) {
            reap_send(SA);
            if (t == SEND_BW) {
                reap_recv(SB);
            }
            fill_sq(SA, &w);
            local_progress();
        }
        t1 = bench_bw_ns();
        if (!measuring && t1 >= warm) {
            measuring = true;
            t0 = t1;
            c0 = drvs[0].completed;
        } else if (t1 >= end) {
            break;
        }
    }
    r->msgs = (drvs[0].completed - c0) / ((t1 - t0) / 1e9);
    r->gbps = r->msgs * size / 1e9;
done:
    local_drain();
    if (count_msgs) {
        /* What count-instr.sh divides by: every message of the case, those in flight too. */
        printf("count %s %u %" PRIu64 "\n", test_name[t], size, drvs[0].posted - p0);
    }
    if (t == SEND_BW && drvs[1].received - r0 != drvs[0].posted - p0) {
        die("%" PRIu64 " SENDs completed, %" PRIu64 " received", drvs[0].posted - p0,
            drvs[1].received - r0);
    }
    if (memcmp(dbuf(SA, SRC_OFF), dbuf(SB, t == WRITE_BW ? WDST_OFF : RBUF_OFF), size)) {
        die("%s %u: the data that arrived is not what was sent", test_name[t], size);
    }
}

static void local_lat(struct result *r, enum test t)
{
    uint64_t t0 = bench_wall_ns(), warm = t0 + 100000000ull, end, n = 0, v;

    end = warm + (uint64_t)(seconds * 1e9);
    w64(SA, DATA + PING_DST, 0);
    w64(SB, DATA + PING_DST, 0);
    for (v = 1; n < MAX_SAMPLES; v++) {
        uint64_t start = bench_wall_ns();

        if (start >= end) {
            break;
        }
        ping_post(SA, t, v);
        while (!ping_arrived(SB, t, v)) {
            local_progress();
            reap_send(SA);
        }
        ping_post(SB, t, v);
        while (!ping_arrived(SA, t, v)) {
            local_progress();
            reap_send(SB);
        }
        if (start >= warm) {
            rtt_buf[n++] = bench_wall_ns() - start;
        }
    }
    local_drain();
    lat_stats(r, rtt_buf, n);
}

static int run_local(const struct bench_case *only)
{
    const struct bench_case *list = cases;
    size_t n_list = N_CASES, i;

    if (count_msgs && only && only->size) {
        list = only;        /* -n takes any size, listed or not */
        n_list = 1;
    }

    wire_buf = malloc((size_t)WIRE_SLOTS * WIRE_SLOT);
    if (!wire_buf) {
        die("out of memory");
    }
    dp_tb_wire = mem_wire;
    dp_tb_wire_iov = mem_wire_iov;
    dp_tb_clock = bench_now_ns;
    node_up(0);
    node_up(1);
    local_drain();
    print_head("core_bench (b): two device cores in one process, in-memory wire (one copy "
               "per frame)");
    for (i = 0; i < n_list; i++) {
        const struct bench_case *c = &list[i];
        struct result *r = &results[n_results];

        if ((only && (only->test != c->test || (only->size && only->size != c->size))) ||
            c->test == WIRE_BW || (count_msgs && c->test != WRITE_BW && c->test != SEND_BW)) {
            continue;
        }
        memset(r, 0, sizeof(*r));
        r->c = c;
        if (c->test == WRITE_BW || c->test == SEND_BW) {
            local_bw(r, c->test, c->size);
        } else {
            local_lat(r, c->test);
        }
        check_side(SA, test_name[c->test]);
        check_side(SB, test_name[c->test]);
        n_results++;
        print_row(r);
    }
    {
        struct qsw_stats st;

        qsw_engine_stats(qrdma_be_sw_engine(SA->core.dp.be), &st);
        printf("(%" PRIu64 " frames on the wire, %" PRIu64 " dropped; A retransmitted %" PRIu64
               " packets)\n", wire_frames, wire_drops, st.retransmits);
    }
    if (!count_msgs) {
        print_machine_lines();
    }
    return 0;
}

/* ---- (c): one core per process, Unix datagram sockets ----------------------------------- */

#define RX_BATCH    64              /* frames received per pass before running the device */
#define RX_MMSG     16              /* frames one recvmmsg() reads, as QEMU's dgram netdev */
#define BACKLOG_MAX 10000u          /* QEMU's net queue holds as many before dropping */
#define NET_BUFSIZE (4096 + 65536)  /* QEMU's receive buffer */

struct held {
    struct held *next;
    struct side *from;              /* the device to tell when it has left, or NULL */
    size_t len;
    uint8_t data[];
};

static int data_fd = -1, ctl_fd = -1;
static struct sockaddr_un peer_addr;
static struct held *bl_head, **bl_tail = &bl_head;
static unsigned bl_len;
static uint8_t rx_bufs[RX_MMSG][NET_BUFSIZE];

struct wire_stats {
    uint64_t tx, rx, eagain, drops, queued;
};
static struct wire_stats ws;

/* 1: sent (or dropped for good), 0: EAGAIN, try again later. */
static int try_send(const uint8_t *frame, size_t len)
{
    ssize_t r;

    do {
        r = sendto(data_fd, frame, len, 0, (const struct sockaddr *)&peer_addr,
                   sizeof(peer_addr));
    } while (r < 0 && errno == EINTR);
    if (r >= 0) {
        ws.tx++;
        return 1;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
        ws.eagain++;
        return 0;
    }
    ws.drops++;
    return 1;
}

/*
 * A frame into the backlog, as QEMU's net queue keeps a frame sent with a
 * completion callback (qemu_send_packet_async): the device hears
 * QRDMA_TX_QUEUED and stops transmitting until backlog_flush() has sent
 * it and called qrdma_core_tx_ready(). from NULL: the wire test's frames,
 * no device to tell.
 */
static int backlog_add(struct side *from, const struct iovec *iov, unsigned n)
{
    size_t len = 0;
    struct held *h;
    unsigned i;

    for (i = 0; i < n; i++) {
        len += iov[i].iov_len;
    }
    if (bl_len >= BACKLOG_MAX || !(h = malloc(sizeof(*h) + len))) {
        ws.drops++;
        return QRDMA_TX_SENT;
    }
    h->next = NULL;
    h->from = from;
    h->len = 0;
    for (i = 0; i < n; i++) {
        memcpy(h->data + h->len, iov[i].iov_base, iov[i].iov_len);
        h->len += iov[i].iov_len;
    }
    *bl_tail = h;
    bl_tail = &h->next;
    bl_len++;
    if (!from) {
        return QRDMA_TX_SENT;
    }
    ws.queued++;
    return QRDMA_TX_QUEUED;
}

/* The frame-send callback: sendto(), or into the backlog behind frames already held. */
static int dgram_wire(struct side *from, const uint8_t *frame, size_t len)
{
    struct iovec one = { .iov_base = (void *)frame, .iov_len = len };

    if (!bl_head && try_send(frame, len)) {
        return QRDMA_TX_SENT;
    }
    return backlog_add(from, &one, 1);
}

/*
 * A frame in pieces: one sendmsg() gathers them, so the payload goes from
 * the (fake) guest memory straight into the socket, as a netdev with
 * receive_iov (QEMU's tap: writev) takes it. EAGAIN: joined into the backlog.
 */
static int dgram_wire_iov(struct side *from, const struct iovec *iov, unsigned n)
{
    struct msghdr mh = { .msg_name = &peer_addr, .msg_namelen = sizeof(peer_addr),
                         .msg_iov = (struct iovec *)iov, .msg_iovlen = n };
    ssize_t r;

    if (!bl_head) {
        do {
            r = sendmsg(data_fd, &mh, 0);
        } while (r < 0 && errno == EINTR);
        if (r >= 0) {
            ws.tx++;
            return QRDMA_TX_SENT;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            ws.drops++;
            return QRDMA_TX_SENT;
        }
        ws.eagain++;
    }
    return backlog_add(from, iov, n);
}

static bool backlog_flush(void)
{
    bool did = false;

    while (bl_head && try_send(bl_head->data, bl_head->len)) {
        struct held *h = bl_head;

        bl_head = h->next;
        if (!bl_head) {
            bl_tail = &bl_head;
        }
        bl_len--;
        if (h->from) {
            qrdma_core_tx_ready(&h->from->core);
        }
        free(h);
        did = true;
    }
    return did;
}

/* Up to RX_MMSG waiting frames in one system call, their lengths in len: how many. */
static unsigned rx_read(size_t *len)
{
    struct mmsghdr m[RX_MMSG];
    struct iovec iov[RX_MMSG];
    int i, n;

    memset(m, 0, sizeof(m));
    for (i = 0; i < RX_MMSG; i++) {
        iov[i].iov_base = rx_bufs[i];
        iov[i].iov_len = NET_BUFSIZE;
        m[i].msg_hdr.msg_iov = &iov[i];
        m[i].msg_hdr.msg_iovlen = 1;
    }
    do {
        n = recvmmsg(data_fd, m, RX_MMSG, MSG_DONTWAIT, NULL);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            die("recvmmsg: %s", strerror(errno));
        }
        return 0;
    }
    for (i = 0; i < n; i++) {
        len[i] = m[i].msg_len;
    }
    return (unsigned)n;
}

/* One pass of the process's main loop, the driver aside: frames in, device work, frames out. */
static bool dgram_progress(struct side *s)
{
    size_t len[RX_MMSG];
    bool did = false;
    unsigned total, n, i;

    for (total = 0; total < RX_BATCH; total += n) {
        n = rx_read(len);
        if (!n) {
            break;
        }
        for (i = 0; i < n; i++) {
            qrdma_core_lan_receive(&s->core, rx_bufs[i], len[i]);
        }
        ws.rx += n;
        did = true;
    }
    did |= device_step(s);
    did |= backlog_flush();
    return did;
}

/* The wire test's receiver: frames are counted, not handed to the device. */
static bool sink_progress(void)
{
    size_t len[RX_MMSG];
    bool did = false;
    unsigned total, n;

    for (total = 0; total < RX_BATCH; total += n) {
        n = rx_read(len);
        if (!n) {
            break;
        }
        ws.rx += n;
        did = true;
    }
    return did;
}

/*
 * Nothing to do: sleep until a frame, a control message or the data-path
 * timer. With frames held back there is no sleeping: on an unconnected
 * Unix datagram socket POLLOUT does not wait for room at the receiver, so
 * QEMU's write poll fires at once too and its main loop retries the same
 * way.
 */
static void dgram_wait(struct side *s, bool with_ctl)
{
    struct pollfd p[2] = { { data_fd, POLLIN, 0 }, { ctl_fd, POLLIN, 0 } };
    uint64_t now = bench_wall_ns(), left = 100000000ull;
    struct timespec ts;

    if (s->kicks) {
        return;
    }
    if (bl_head) {
        /* Alone on its CPU this returns at once; on a busy machine it lets the peer drain. */
        sched_yield();
        return;
    }
    if (s->timer != UINT64_MAX) {
        left = s->timer > now ? s->timer - now : 0;
        if (left > 100000000ull) {
            left = 100000000ull;
        }
    }
    ts.tv_sec = (time_t)(left / 1000000000ull);
    ts.tv_nsec = (long)(left % 1000000000ull);
    if (ppoll(p, with_ctl ? 2 : 1, &ts, NULL) < 0 && errno != EINTR) {
        die("ppoll: %s", strerror(errno));
    }
}

/* Control messages between the parent (side A) and the child (side B). */
enum ctl_cmd { CTL_READY, CTL_CASE, CTL_OK, CTL_STOP, CTL_RESULT, CTL_QUIT };

struct ctl {
    uint32_t cmd;
    uint32_t test, size;
    int32_t errors;
    uint64_t received, sum;
    struct wire_stats ws;
    uint64_t retransmits;
};

static void ctl_send(const struct ctl *m)
{
    if (send(ctl_fd, m, sizeof(*m), 0) != sizeof(*m)) {
        die("control send: %s", strerror(errno));
    }
}

/* The next control message; with wait, block for up to 30 s. False if none yet. */
static bool ctl_recv(struct ctl *m, bool wait)
{
    ssize_t r;

    if (wait) {
        struct pollfd p = { ctl_fd, POLLIN, 0 };

        if (poll(&p, 1, 30000) <= 0) {
            die("no word from the other process in 30 s");
        }
    }
    r = recv(ctl_fd, m, sizeof(*m), MSG_DONTWAIT);
    if (r == 0) {
        die("the other process went away");
    }
    if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            return false;
        }
        die("control recv: %s", strerror(errno));
    }
    if (r != sizeof(*m)) {
        die("short control message");
    }
    return true;
}

static struct ctl ctl_wait(uint32_t cmd)
{
    struct ctl m;

    ctl_recv(&m, true);
    if (m.cmd != cmd) {
        die("control message %u, expected %u", m.cmd, cmd);
    }
    return m;
}

/* The child: side B serves whatever case the parent runs until told to quit. */
static void serve(void)
{
    struct side *s = SB;
    enum test t = WRITE_BW;
    uint32_t size = 0;
    uint64_t seen = 0, r0 = 0, iter = 0;
    bool running = false;

    for (;;) {
        bool did = false;
        struct ctl m;

        if (running && t == WIRE_BW) {
            did = sink_progress();
        } else {
            did = dgram_progress(s);
        }
        did |= reap_send(s) > 0;
        if (running && t == WRITE_LAT) {
            uint64_t v = r64(s, DATA + PING_DST);

            if (v != seen) {
                seen = v;
                ping_post(s, t, v);
                did = true;
            }
        } else if (running && t == SEND_LAT) {
            uint64_t before = drvs[1].received;

            if (reap_recv(s)) {
                if (drvs[1].received != before + 1) {
                    die("%" PRIu64 " pings at once", drvs[1].received - before);
                }
                ping_post(s, t, r64(s, DATA + RBUF_OFF));
                did = true;
            }
        } else {
            did |= reap_recv(s) > 0;
        }
        if ((++iter & 63) && did) {
            continue;
        }
        if (!ctl_recv(&m, false)) {
            if (!did) {
                dgram_wait(s, true);
            }
            continue;
        }
        switch (m.cmd) {
        case CTL_CASE:
            t = m.test;
            size = m.size;
            seen = 0;
            w64(s, DATA + PING_DST, 0);
            memset(dbuf(s, t == WRITE_BW ? WDST_OFF : RBUF_OFF), 0, MAX_MSG);
            r0 = t == WIRE_BW ? ws.rx : drvs[1].received;
            running = true;
            memset(&m, 0, sizeof(m));
            m.cmd = CTL_OK;
            ctl_send(&m);
            break;
        case CTL_STOP: {
            struct qsw_stats st;
            uint64_t t0 = bench_wall_ns();

            /* The parent has all its completions: ours are written, reap them. */
            while (t == WIRE_BW ? sink_progress()
                                : reap_recv(s) || reap_send(s) ||
                                  drvs[1].posted != drvs[1].completed) {
                dgram_progress(s);
                if (bench_wall_ns() - t0 > 10000000000ull) {
                    die("stop: own WQEs still in flight after 10 s");
                }
            }
            running = false;
            qsw_engine_stats(qrdma_be_sw_engine(s->core.dp.be), &st);
            memset(&m, 0, sizeof(m));
            m.cmd = CTL_RESULT;
            m.errors = s->guest_errors + unit_failures;
            m.received = t == WIRE_BW ? ws.rx - r0 : drvs[1].received - r0;
            if (t == WRITE_BW || t == SEND_BW) {
                m.sum = fnv1a(dbuf(s, t == WRITE_BW ? WDST_OFF : RBUF_OFF), size);
            } else if (t == WIRE_BW) {
                m.sum = size;
            }
            m.ws = ws;
            m.retransmits = st.retransmits;
            ctl_send(&m);
            check_side(s, test_name[t]);
            debug_stats(s, test_name[t]);
            break;
        }
        case CTL_QUIT:
            exit(0);
        default:
            die("unexpected control message %u", m.cmd);
        }
    }
}

static struct ctl child_res;        /* the child's last CTL_RESULT */

/* The case is over for A: stop the child, get its findings. */
static struct ctl remote_stop(void)
{
    struct ctl m = { .cmd = CTL_STOP };

    ctl_send(&m);
    /* Keep our side going while the child finishes: it may still need our ACKs. */
    for (;;) {
        struct pollfd p = { ctl_fd, POLLIN, 0 };

        dgram_progress(SA);
        reap_send(SA);
        if (poll(&p, 1, 0) > 0) {
            child_res = ctl_wait(CTL_RESULT);
            if (child_res.errors) {
                die("the child saw %d errors", child_res.errors);
            }
            return child_res;
        }
    }
}

static void remote_case(const struct bench_case *c)
{
    struct ctl m = { .cmd = CTL_CASE, .test = c->test, .size = c->size };

    ctl_send(&m);
    ctl_wait(CTL_OK);
}

/* Run until every posted WQE of A completed (or die after 10 s). */
static void remote_drain(void)
{
    uint64_t t0 = bench_wall_ns();

    while (drvs[0].posted != drvs[0].completed) {
        bool did = dgram_progress(SA);

        did |= reap_send(SA) > 0;
        did |= reap_recv(SA) > 0;
        if (!did) {
            dgram_wait(SA, false);
        }
        if (bench_wall_ns() - t0 > 10000000000ull) {
            die("drain: %" PRIu64 " of %" PRIu64 " WQEs completed after 10 s",
                drvs[0].completed, drvs[0].posted);
        }
    }
}

static void remote_bw(struct result *r, enum test t, uint32_t size)
{
    const struct wqe w = bw_wqe(t, size);
    uint64_t t0, t1, c0 = 0, end, warm, p0 = drvs[0].posted;
    bool measuring = false;
    struct ctl res;

    fill(SA, SRC_OFF, size, size + t);
    t0 = bench_wall_ns();
    warm = t0 + 100000000ull;
    end = warm + (uint64_t)(seconds * 1e9);
    for (;;) {
        bool did = reap_send(SA) > 0;

        did |= fill_sq(SA, &w) > 0;
        did |= dgram_progress(SA);
        if (!did) {
            dgram_wait(SA, false);
        }
        t1 = bench_wall_ns();
        if (!measuring && t1 >= warm) {
            measuring = true;
            t0 = t1;
            c0 = drvs[0].completed;
        } else if (measuring && t1 >= end) {
            break;
        }
    }
    r->msgs = (drvs[0].completed - c0) / ((t1 - t0) / 1e9);
    r->gbps = r->msgs * size / 1e9;
    remote_drain();
    res = remote_stop();
    if (t == SEND_BW && res.received != drvs[0].posted - p0) {
        die("%" PRIu64 " SENDs completed, %" PRIu64 " received", drvs[0].posted - p0,
            res.received);
    }
    if (res.sum != fnv1a(dbuf(SA, SRC_OFF), size)) {
        die("%s %u: the data that arrived is not what was sent", test_name[t], size);
    }
}

/*
 * The wire alone: frames of size bytes from A to B through the same sockets,
 * the same sendto()/EAGAIN/backlog path and the same recv() loop, without
 * the devices: what the dgram netdev can carry at most.
 */
static void remote_wire(struct result *r, uint32_t size)
{
    static uint8_t frame[WIRE_SLOT_MAX];
    uint64_t t0 = bench_wall_ns(), warm = t0 + 100000000ull, end, t1, n0 = 0, sent0 = ws.tx;
    bool measuring = false;
    struct ctl res;

    memset(frame, 0x5a, size);
    end = warm + (uint64_t)(seconds * 1e9);
    for (;;) {
        if (!bl_head) {
            dgram_wire(NULL, frame, size);
        } else if (!backlog_flush()) {
            dgram_wait(SA, false);
        }
        t1 = bench_wall_ns();
        if (!measuring && t1 >= warm) {
            measuring = true;
            t0 = t1;
            n0 = ws.tx;
        } else if (measuring && t1 >= end) {
            break;
        }
    }
    r->msgs = (ws.tx - n0) / ((t1 - t0) / 1e9);
    r->gbps = r->msgs * size / 1e9;
    while (bl_head) {
        backlog_flush();
    }
    res = remote_stop();
    if (res.received != ws.tx - sent0 || res.sum != size) {
        die("wire: %" PRIu64 " frames sent, %" PRIu64 " received", ws.tx - sent0, res.received);
    }
}

static void remote_lat(struct result *r, enum test t)
{
    uint64_t t0 = bench_wall_ns(), warm = t0 + 100000000ull, end, n = 0, v;

    end = warm + (uint64_t)(seconds * 1e9);
    w64(SA, DATA + PING_DST, 0);
    for (v = 1; n < MAX_SAMPLES; v++) {
        uint64_t start = bench_wall_ns();

        if (start >= end) {
            break;
        }
        ping_post(SA, t, v);
        for (;;) {
            bool did = reap_send(SA) > 0;

            if (ping_arrived(SA, t, v)) {
                break;
            }
            did |= dgram_progress(SA);
            if (!did) {
                dgram_wait(SA, false);
            }
        }
        if (start >= warm) {
            rtt_buf[n++] = bench_wall_ns() - start;
        }
    }
    remote_drain();
    remote_stop();
    lat_stats(r, rtt_buf, n);
}

static char sock_dir[64];

static void cleanup_socks(void)
{
    char p[128];

    if (!sock_dir[0]) {
        return;
    }
    snprintf(p, sizeof(p), "%s/g0.sock", sock_dir);
    unlink(p);
    snprintf(p, sizeof(p), "%s/g1.sock", sock_dir);
    unlink(p);
    rmdir(sock_dir);
    sock_dir[0] = 0;
}

/* An unconnected, non-blocking Unix datagram socket bound to dir/g<i>.sock (vm-run's names). */
static int dgram_socket(int i, struct sockaddr_un *addr)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        die("socket: %s", strerror(errno));
    }
    memset(addr, 0, sizeof(*addr));
    addr->sun_family = AF_UNIX;
    snprintf(addr->sun_path, sizeof(addr->sun_path), "%s/g%d.sock", sock_dir, i);
    if (bind(fd, (struct sockaddr *)addr, sizeof(*addr))) {
        die("bind %s: %s", addr->sun_path, strerror(errno));
    }
    return fd;
}

static int run_dgram(const struct bench_case *only)
{
    struct sockaddr_un addr[2];
    int fds[2], sv[2], status;
    pid_t pid;
    unsigned i;

    snprintf(sock_dir, sizeof(sock_dir), "%s/qrdma-bench.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (strlen(sock_dir) > 80 || !mkdtemp(sock_dir)) {
        die("cannot make a socket directory");
    }
    atexit(cleanup_socks);
    fds[0] = dgram_socket(0, &addr[0]);
    fds[1] = dgram_socket(1, &addr[1]);
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
        die("socketpair: %s", strerror(errno));
    }
    dp_tb_wire = dgram_wire;
    dp_tb_wire_iov = dgram_wire_iov;
    dp_tb_clock = bench_wall_ns;
    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        die("fork: %s", strerror(errno));
    }
    if (pid == 0) {
        struct ctl m = { .cmd = CTL_READY };

        sock_dir[0] = 0;            /* the parent removes the sockets */
        me_name = "B: ";
        close(fds[0]);
        close(sv[0]);
        data_fd = fds[1];
        ctl_fd = sv[1];
        peer_addr = addr[0];
        node_up(1);
        ctl_send(&m);
        serve();
    }
    me_name = "A: ";
    close(fds[1]);
    close(sv[1]);
    data_fd = fds[0];
    ctl_fd = sv[0];
    peer_addr = addr[1];
    node_up(0);
    ctl_wait(CTL_READY);
    print_head("core_bench (c): two processes, one device core each, Unix datagram sockets "
               "as QEMU's dgram netdev");
    for (i = 0; i < N_CASES; i++) {
        const struct bench_case *c = &cases[i];
        struct result *r = &results[n_results];

        if (only && (only->test != c->test || (only->size && only->size != c->size))) {
            continue;
        }
        memset(r, 0, sizeof(*r));
        r->c = c;
        remote_case(c);
        if (c->test == WRITE_BW || c->test == SEND_BW) {
            remote_bw(r, c->test, c->size);
        } else if (c->test == WIRE_BW) {
            remote_wire(r, c->size);
        } else {
            remote_lat(r, c->test);
        }
        check_side(SA, test_name[c->test]);
        debug_stats(SA, test_name[c->test]);
        n_results++;
        print_row(r);
    }
    {
        struct ctl m = { .cmd = CTL_QUIT };
        struct qsw_stats st;

        ctl_send(&m);
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status)) {
            die("the child failed");
        }
        qsw_engine_stats(qrdma_be_sw_engine(SA->core.dp.be), &st);
        printf("(A: %" PRIu64 " frames sent, %" PRIu64 " received, %" PRIu64 " sendto EAGAIN, "
               "%" PRIu64 " queued (the device waited), %" PRIu64 " dropped, %" PRIu64
               " retransmitted; B: %" PRIu64 " sent, %" PRIu64 " received, %" PRIu64
               " EAGAIN, %" PRIu64 " queued, %" PRIu64 " dropped, %" PRIu64
               " retransmitted)\n", ws.tx, ws.rx, ws.eagain, ws.queued, ws.drops,
               st.retransmits, child_res.ws.tx, child_res.ws.rx, child_res.ws.eagain,
               child_res.ws.queued, child_res.ws.drops, child_res.retransmits);
    }
    print_machine_lines();
    return 0;
}

/* ---- main ------------------------------------------------------------------------------ */

static void usage(void)
{
    fprintf(stderr, "usage: core_bench [--dgram] [--copy-tx] [-s SECONDS] [-t TEST[:SIZE]]\n"
                    "       core_bench [--copy-tx] -n MESSAGES [-t TEST[:SIZE]]\n"
                    "  TEST: write_bw send_bw write_lat send_lat (-n: write_bw send_bw, any SIZE\n"
                    "  up to 65536)\n");
    exit(2);
}

/*
 * Whether -t selects a case that the run's loop will measure (the same
 * filters as run_local and run_dgram): a size not in the list, wire_bw
 * without --dgram, or a latency case with -n would otherwise run nothing
 * and exit 0.
 */
static bool selects_any(const struct bench_case *only, bool dgram)
{
    size_t i;

    if (count_msgs && only->size) {
        return only->test == WRITE_BW || only->test == SEND_BW;
    }
    for (i = 0; i < N_CASES; i++) {
        const struct bench_case *c = &cases[i];

        if (only->test != c->test || (only->size && only->size != c->size) ||
            (!dgram && c->test == WIRE_BW) ||
            (count_msgs && c->test != WRITE_BW && c->test != SEND_BW)) {
            continue;
        }
        return true;
    }
    return false;
}

int main(int argc, char **argv)
{
    struct bench_case only_case;
    const struct bench_case *only = NULL;
    bool dgram = false;
    int i;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dgram")) {
            dgram = true;
        } else if (!strcmp(argv[i], "--copy-tx")) {
            dp_tb_copy_tx = true;
        } else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            seconds = atof(argv[++i]);
            if (!(seconds > 0)) {
                usage();
            }
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            count_msgs = strtoull(argv[++i], NULL, 0);
            if (!count_msgs) {
                usage();
            }
        } else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            const char *a = argv[++i], *colon = strchr(a, ':');
            size_t n = colon ? (size_t)(colon - a) : strlen(a);
            unsigned t;

            for (t = 0; t < N_TESTS; t++) {
                if (strlen(test_name[t]) == n && !strncmp(a, test_name[t], n)) {
                    break;
                }
            }
            if (t == N_TESTS) {
                usage();
            }
            only_case.test = t;
            only_case.size = colon ? (uint32_t)strtoul(colon + 1, NULL, 0) : 0;
            only = &only_case;
        } else {
            usage();
        }
    }
    if (only && !selects_any(only, dgram)) {
        fprintf(stderr, "core_bench: -t %s:%" PRIu32 " selects no case of this run\n",
                test_name[only->test], only->size);
        usage();
    }
    rtt_buf = malloc(MAX_SAMPLES * sizeof(*rtt_buf));
    if (!rtt_buf) {
        die("out of memory");
    }
    signal(SIGPIPE, SIG_IGN);
    if (count_msgs && dgram) {
        usage();
    }
    if (dgram) {
        bench_name = "core-dgram";
        return run_dgram(only);
    }
    return run_local(only);
}
