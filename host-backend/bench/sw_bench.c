/*
 * sw_bench: message rate and bandwidth of the software RoCEv2 engine, two
 * engines in one process over an in-memory wire (a ring of frame slots,
 * no allocation per frame), flat memory without key checks, the real
 * clock. RDMA WRITE and SEND of 64 B and 64 KB at a path MTU of 1024 and
 * 4096, one RC QP pair, 128 WRs in flight; and the latency of 8-byte RDMA
 * WRITE and SEND ping-pongs (one way: half a round trip, median and 99th
 * percentile).
 *
 *   make build/bench/sw_bench
 *   (or: cc -std=gnu11 -O2 -Ihost-backend/include -Ihost-backend/sw \
 *      host-backend/bench/sw_bench.c host-backend/sw/sw_*.c -o sw_bench)
 *   ./build/bench/sw_bench [seconds per case, default 1]
 *
 * After the table, one line per case for bench/report.py (make bench-native):
 *   native sw <test> <size> <mtu> <msgs/s> <GB/s> <lat median us> <lat p99 us>
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qrdma_sw.h"
#include "bench_clock.h"

#define MEM_SIZE   (8u << 20)
#define RING       1024
#define SLOT       4400
#define INFLIGHT   128

struct node {
    struct qsw_engine *eng;
    struct qsw_qp *qp;
    int idx;
    uint8_t *mem;
    uint64_t send_wcs, recv_wcs;
    uint64_t recv_posted;
};

static struct node nodes[2];

/* Machine-readable lines, printed at the end. */
static char lines[32][128];
static int n_lines;
static uint8_t ring[RING][SLOT];
static size_t ring_len[RING];
static int ring_to[RING];
static unsigned ring_head, ring_tail;
static uint64_t dropped;

static uint64_t now_ns(void *o)
{
    return bench_wall_ns();
}

static int sge_rw(struct node *n, const struct qsw_sge *sge, unsigned nsge,
                  uint64_t off, uint8_t *buf, uint32_t len, int write)
{
    for (unsigned i = 0; i < nsge && len; i++) {
        uint32_t c;

        if (off >= sge[i].length) {
            off -= sge[i].length;
            continue;
        }
        c = sge[i].length - (uint32_t)off < len ? sge[i].length - (uint32_t)off
                                                : len;
        if (sge[i].addr + off + c > MEM_SIZE) {
            return -QSW_WC_LOC_PROT_ERR;
        }
        if (write) {
            memcpy(n->mem + sge[i].addr + off, buf, c);
        } else {
            memcpy(buf, n->mem + sge[i].addr + off, c);
        }
        buf += c;
        len -= c;
        off = 0;
    }
    return len ? -QSW_WC_LOC_LEN_ERR : 0;
}

static int sge_read(void *o, struct qsw_qp *qp, const struct qsw_sge *s,
                    unsigned n, uint64_t off, void *dst, uint32_t len)
{
    return sge_rw(o, s, n, off, dst, len, 0);
}

static int sge_write(void *o, struct qsw_qp *qp, const struct qsw_sge *s,
                     unsigned n, uint64_t off, const void *src, uint32_t len)
{
    return sge_rw(o, s, n, off, (uint8_t *)src, len, 1);
}

static int rkey_read(void *o, struct qsw_qp *qp, uint32_t pd, uint32_t rkey,
                     uint64_t va, void *dst, uint32_t len)
{
    struct node *n = o;

    if (va + len > MEM_SIZE) {
        return -1;
    }
    memcpy(dst, n->mem + va, len);
    return 0;
}

static int rkey_write(void *o, struct qsw_qp *qp, uint32_t pd, uint32_t rkey,
                      uint64_t va, const void *src, uint32_t len)
{
    struct node *n = o;

    if (va + len > MEM_SIZE) {
        return -1;
    }
    memcpy(n->mem + va, src, len);
    return 0;
}

static int rkey_atomic(void *o, struct qsw_qp *qp, uint32_t pd, uint32_t rkey,
                       uint64_t va, enum qsw_atomic_op op,
                       uint64_t a, uint64_t b, uint64_t *orig)
{
    return -1;
}

static int get_recv(void *o, struct qsw_qp *qp, struct qsw_recv_wr *out)
{
    struct node *n = o;

    if (!n->recv_posted) {
        return -QSW_ENOENT;
    }
    n->recv_posted--;
    memset(out, 0, sizeof(*out));
    out->num_sge = 1;
    out->sg_list[0].addr = 4u << 20;
    out->sg_list[0].length = 1u << 20;
    return 0;
}

static void complete(void *o, struct qsw_qp *qp, const struct qsw_wc *wc)
{
    struct node *n = o;

    if (wc->status) {
        fprintf(stderr, "completion error: %s\n",
                qsw_wc_status_str(wc->status));
        exit(1);
    }
    if (wc->opcode >= QSW_WC_RECV) {
        n->recv_wcs++;
    } else {
        n->send_wcs++;
    }
}

static int send_frame(void *o, const void *frame, size_t len)
{
    struct node *n = o;
    unsigned slot;

    if (ring_tail - ring_head == RING || len > SLOT) {
        dropped++;                  /* a full wire drops, as a real one would */
        return 0;
    }
    slot = ring_tail++ % RING;
    memcpy(ring[slot], frame, len);
    ring_len[slot] = len;
    ring_to[slot] = 1 - n->idx;
    return 0;
}

static const struct qsw_ops ops = {
    .sge_read = sge_read, .sge_write = sge_write, .rkey_read = rkey_read,
    .rkey_write = rkey_write, .rkey_atomic = rkey_atomic, .get_recv = get_recv,
    .complete = complete, .send_frame = send_frame, .now_ns = now_ns,
};

static const uint8_t gid0[16] = {
    [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 1
};
static const uint8_t gid1[16] = {
    [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 2
};

static void setup(enum qsw_mtu mtu)
{
    static const uint8_t mac[2][6] = { { 2, 0, 0, 0, 0, 1 },
                                       { 2, 0, 0, 0, 0, 2 } };

    for (int i = 0; i < 2; i++) {
        struct qsw_qp_attr a;
        struct qsw_qp_cap cap = { .max_send_wr = 512, .max_inline = 64 };
        struct node *n = &nodes[i];

        memset(n, 0, sizeof(*n));
        n->idx = i;
        n->mem = calloc(1, MEM_SIZE);
        n->eng = qsw_engine_new(&ops, n, mac[i]);
        n->qp = qsw_qp_create(n->eng, 0x10 + i, QSW_QPT_RC, 1, &cap, NULL);
        memset(&a, 0, sizeof(a));
        a.qp_state = QSW_QPS_INIT;
        a.qp_access_flags = QSW_ACCESS_REMOTE_WRITE | QSW_ACCESS_REMOTE_READ;
        qsw_qp_modify(n->qp, &a, QSW_QP_STATE | QSW_QP_ACCESS_FLAGS);
        a.qp_state = QSW_QPS_RTR;
        a.path_mtu = mtu;
        a.dest_qp_num = 0x10 + (1 - i);
        a.rq_psn = 0;
        a.max_dest_rd_atomic = 16;
        a.min_rnr_timer = 1;
        memcpy(a.av.dmac, mac[1 - i], 6);
        memcpy(a.av.dgid, i ? gid0 : gid1, 16);
        memcpy(a.av.sgid, i ? gid1 : gid0, 16);
        qsw_qp_modify(n->qp, &a,
                      QSW_QP_STATE | QSW_QP_AV | QSW_QP_PATH_MTU |
                          QSW_QP_DEST_QPN | QSW_QP_RQ_PSN |
                          QSW_QP_MAX_DEST_RD_ATOMIC | QSW_QP_MIN_RNR_TIMER);
        a.qp_state = QSW_QPS_RTS;
        a.sq_psn = 0;
        a.timeout = 14;
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.max_rd_atomic = 16;
        qsw_qp_modify(n->qp, &a,
                      QSW_QP_STATE | QSW_QP_SQ_PSN | QSW_QP_TIMEOUT |
                          QSW_QP_RETRY_CNT | QSW_QP_RNR_RETRY |
                          QSW_QP_MAX_QP_RD_ATOMIC);
    }
}

static void teardown(void)
{
    for (int i = 0; i < 2; i++) {
        qsw_engine_free(nodes[i].eng);
        free(nodes[i].mem);
    }
    ring_head = ring_tail = 0;
}

static void run_case(const char *name, enum qsw_wr_opcode op, uint32_t len,
                     enum qsw_mtu mtu, double seconds)
{
    struct qsw_send_wr wr;
    uint64_t posted = 0, t0, t1, done;
    struct node *a = &nodes[0], *b = &nodes[1];
    struct qsw_stats st;

    setup(mtu);
    memset(&wr, 0, sizeof(wr));
    wr.opcode = op;
    wr.send_flags = QSW_SEND_SIGNALED;
    wr.num_sge = 1;
    wr.sg_list[0].addr = 0;
    wr.sg_list[0].length = len;
    wr.rdma.remote_addr = 0;
    t0 = bench_bw_ns();
    do {
        for (int k = 0; k < 64; k++) {
            while (posted - a->send_wcs < INFLIGHT) {
                if (op == QSW_WR_SEND) {
                    b->recv_posted++;
                }
                wr.wr_id = posted++;
                if (qsw_post_send(a->qp, &wr)) {
                    fprintf(stderr, "post failed\n");
                    exit(1);
                }
            }
            qsw_engine_poll(a->eng, 256);
            while (ring_head != ring_tail) {
                unsigned slot = ring_head++ % RING;

                qsw_rx_frame(nodes[ring_to[slot]].eng, ring[slot],
                             ring_len[slot]);
            }
            qsw_engine_poll(b->eng, 256);
            while (ring_head != ring_tail) {
                unsigned slot = ring_head++ % RING;

                qsw_rx_frame(nodes[ring_to[slot]].eng, ring[slot],
                             ring_len[slot]);
            }
        }
        t1 = bench_bw_ns();
    } while (t1 - t0 < (uint64_t)(seconds * 1e9));
    done = a->send_wcs;
    qsw_engine_stats(a->eng, &st);
    printf("%-22s mtu %4u  %10.0f msg/s  %7.3f GB/s  (%" PRIu64
           " frames, %" PRIu64 " retransmits)\n",
           name, qsw_mtu_bytes(mtu), done / ((t1 - t0) / 1e9),
           (double)done * len / ((t1 - t0) / 1e9) / 1e9, st.tx_frames,
           st.retransmits);
    if (n_lines < 32) {
        snprintf(lines[n_lines++], sizeof(lines[0]),
                 "native sw %s %u %u %.0f %.4f - -",
                 op == QSW_WR_RDMA_WRITE ? "write_bw"
                 : op == QSW_WR_SEND     ? "send_bw"
                                         : "read_bw",
                 len, qsw_mtu_bytes(mtu), done / ((t1 - t0) / 1e9),
                 (double)done * len / ((t1 - t0) / 1e9) / 1e9);
    }
    teardown();
}

static void deliver(void)
{
    while (ring_head != ring_tail) {
        unsigned slot = ring_head++ % RING;

        qsw_rx_frame(nodes[ring_to[slot]].eng, ring[slot], ring_len[slot]);
    }
}

static void pump_both(void)
{
    qsw_engine_poll(nodes[0].eng, 256);
    deliver();
    qsw_engine_poll(nodes[1].eng, 256);
    deliver();
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

#define PING_SRC    (2u << 20)
#define PING_DST    (3u << 20)
#define LAT_SAMPLES 1000000

/*
 * Ping-pong of 8-byte WRITEs (each side polls the memory the peer's WRITE
 * lands in) or SENDs (each side waits for its receive completion).
 */
static void run_lat(const char *name, enum qsw_wr_opcode op, enum qsw_mtu mtu,
                    double seconds)
{
    static uint64_t rtt[LAT_SAMPLES];
    uint64_t t0, end, n = 0, v;

    setup(mtu);
    t0 = now_ns(NULL);
    end = t0 + (uint64_t)(seconds * 1e9);
    for (v = 1; n < LAT_SAMPLES; v++) {
        uint64_t start = now_ns(NULL);

        if (start >= end) {
            break;
        }
        for (int dir = 0; dir < 2; dir++) {
            struct node *s = &nodes[dir], *d = &nodes[1 - dir];
            uint64_t recvd = d->recv_wcs, got;
            struct qsw_send_wr wr;

            memset(&wr, 0, sizeof(wr));
            wr.opcode = op;
            wr.send_flags = QSW_SEND_SIGNALED;
            wr.num_sge = 1;
            wr.sg_list[0].addr = PING_SRC;
            wr.sg_list[0].length = 8;
            wr.rdma.remote_addr = PING_DST;
            wr.wr_id = v;
            memcpy(s->mem + PING_SRC, &v, 8);
            if (op == QSW_WR_SEND) {
                d->recv_posted++;
            }
            if (qsw_post_send(s->qp, &wr)) {
                fprintf(stderr, "post failed\n");
                exit(1);
            }
            for (;;) {
                pump_both();
                if (op == QSW_WR_SEND) {
                    if (d->recv_wcs != recvd) {
                        break;
                    }
                } else {
                    memcpy(&got, d->mem + PING_DST, 8);
                    if (got == v) {
                        break;
                    }
                }
            }
        }
        rtt[n++] = now_ns(NULL) - start;
    }
    qsort(rtt, n, sizeof(rtt[0]), cmp_u64);
    printf("%-22s mtu %4u  %8.2f us median  %8.2f us p99 one way  (%" PRIu64
           " round trips)\n",
           name, qsw_mtu_bytes(mtu), rtt[n / 2] / 2e3, rtt[n * 99 / 100] / 2e3,
           n);
    if (n_lines < 32) {
        snprintf(lines[n_lines++], sizeof(lines[0]),
                 "native sw %s 8 %u - - %.3f %.3f",
                 op == QSW_WR_RDMA_WRITE ? "write_lat" : "send_lat",
                 qsw_mtu_bytes(mtu), rtt[n / 2] / 2e3, rtt[n * 99 / 100] / 2e3);
    }
    teardown();
}

int main(int argc, char **argv)
{
    double s = argc > 1 ? atof(argv[1]) : 1.0;

    for (enum qsw_mtu m = QSW_MTU_1024; m <= QSW_MTU_4096; m += 2) {
        run_case("RDMA WRITE 64 B", QSW_WR_RDMA_WRITE, 64, m, s);
        run_case("RDMA WRITE 64 KB", QSW_WR_RDMA_WRITE, 65536, m, s);
        run_case("SEND 64 B", QSW_WR_SEND, 64, m, s);
        run_case("SEND 64 KB", QSW_WR_SEND, 65536, m, s);
        run_case("RDMA READ 64 KB", QSW_WR_RDMA_READ, 65536, m, s);
    }
    run_lat("RDMA WRITE 8 B latency", QSW_WR_RDMA_WRITE, QSW_MTU_4096, s);
    run_lat("SEND 8 B latency", QSW_WR_SEND, QSW_MTU_4096, s);
    if (dropped) {
        printf("(%" PRIu64 " frames dropped by a full wire ring)\n", dropped);
    }
    for (int i = 0; i < n_lines; i++) {
        printf("%s\n", lines[i]);
    }
    return 0;
}
