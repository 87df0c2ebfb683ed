/*
 * qrdma-verbs-bench: RDMA WRITE bandwidth of the device core and the verbs
 * backend on a real host RDMA device, as an ordinary process (no QEMU, no
 * guest driver): the two cores of qrdma-verbs-rxe (verbs_host.h), each with
 * the verbs backend on the same host device, an RC QP of one writing into
 * the other's guest RAM through the host NIC, driven as the provider
 * drives the device: WQEs written into the SQ ring, a doorbell, CQEs
 * polled, at most `depth` WRITEs outstanding. bench/run-verbs-bench.sh runs
 * it beside perftest's ib_write_bw on the same device and sizes, in the
 * same guest, for the device's overhead as a ratio.
 *
 * Every completion must succeed, and the last WRITE's bytes must be in the
 * other side's RAM, or it fails (exit 1) instead of printing a figure.
 *
 * Usage: qrdma-verbs-bench IBDEV GID_INDEX SIZE ITERS
 * Prints one line: "verbs-bench: SIZE bytes, ITERS WRITEs, depth D: B MiB/s, R msg/s".
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/qrdma_core_int.h"
#include "unit.h"
#include "verbs_host.h"

int unit_failures;

/* The SQ of rc_spec holds 8 WQEs; the send CQ 16 CQEs. */
enum { BENCH_DEPTH = 8 };
/* The source in A's data area, the destination in B's: 512 KB apart. */
enum { SRC_OFF = 0, DST_OFF = 0x80000, MAX_SIZE = 0x80000 };

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void post_write(uint32_t rkey, uint32_t size)
{
    struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = DST_OFF, .rkey = rkey,
                     .nsge = 1, .sge = { { SRC_OFF, size, 0 } } };

    post_send(SA, QPN, &w);
}

/* Run iters WRITEs of size, depth at a time; false at the first failure. */
static bool write_run(uint32_t rkey, uint32_t size, unsigned iters)
{
    unsigned posted = 0, done = 0;
    struct cqe e;

    while (done < iters) {
        unsigned batch = 0;

        while (posted < iters && posted - done < BENCH_DEPTH) {
            post_write(rkey, size);
            posted++;
            batch++;
        }
        if (batch) {
            ring_sq(SA, QPN);
        }
        if (!vh_wait_cqe(SA, 1, &e, 2, 20)) {
            return false;
        }
        if (e.status != QRDMA_BE_WC_SUCCESS || e.opcode != QRDMA_BE_WC_RDMA_WRITE) {
            fprintf(stderr, "verbs-bench: WRITE %u completed with status %u opcode %u\n",
                    done, e.status, e.opcode);
            return false;
        }
        done++;
    }
    return true;
}

int main(int argc, char **argv)
{
    const uint32_t stag_b = 3u << QRDMA_STAG_INDEX_SHIFT | 0x33;
    unsigned long size, iters;
    uint32_t qpn[2], rkey_b;
    struct timespec t0;
    uint8_t *a, *b;
    double s;
    unsigned i;

    if (argc != 5) {
        fprintf(stderr, "usage: %s IBDEV GID_INDEX SIZE ITERS\n", argv[0]);
        return 2;
    }
    size = strtoul(argv[3], NULL, 0);
    iters = strtoul(argv[4], NULL, 0);
    if (!size || size > MAX_SIZE || !iters || iters > 100000000) {
        fprintf(stderr, "verbs-bench: SIZE 1..%u, ITERS 1..100000000\n", MAX_SIZE);
        return 2;
    }
    if (vh_host(argv[1], argv[2])) {
        return 1;
    }
    vh_memfd_ram(SA, 0);
    vh_memfd_ram(SB, 1);
    vh_side_up(SA, 0);
    vh_side_up(SB, 1);
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq(SB, 2);
    CQP_OK(cqp(SB, QRDMA_CQP_OP_REG_MR, stag_b,
               PD | (uint64_t)MR_ACCESS << QRDMA_MR_ARG1_ACCESS_SHIFT |
               12ull << QRDMA_MR_ARG1_PAGE_SHIFT, IOVA, DATA_LEN, DATA, 0));
    rkey_b = (uint32_t)last_retval;
    vh_rc_pair(QPN, qpn);
    if (unit_failures) {
        fprintf(stderr, "verbs-bench: bring-up failed\n");
        vh_fini(2);
        return 1;
    }

    a = dbuf(SA, 0);
    b = dbuf(SB, 0);
    for (i = 0; i < size; i++) {
        a[SRC_OFF + i] = (uint8_t)(i * 13 + 5);
    }
    memset(b + DST_OFF, 0, size);
    /* A few first, outside the clock: the host QPs' first packets. */
    if (!write_run(rkey_b, (uint32_t)size, BENCH_DEPTH)) {
        vh_fini(2);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!write_run(rkey_b, (uint32_t)size, (unsigned)iters)) {
        vh_fini(2);
        return 1;
    }
    s = seconds_since(&t0);
    if (memcmp(b + DST_OFF, a + SRC_OFF, size) || unit_failures) {
        fprintf(stderr, "verbs-bench: the written bytes are not in B's RAM\n");
        vh_fini(2);
        return 1;
    }
    printf("verbs-bench: %lu bytes, %lu WRITEs, depth %u: %.2f MiB/s, %.0f msg/s\n", size,
           iters, BENCH_DEPTH, size * (double)iters / s / 1048576.0, iters / s);
    vh_fini(2);
    return 0;
}
