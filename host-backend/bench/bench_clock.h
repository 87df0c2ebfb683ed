/*
 * Clocks of the native benchmarks (host-backend/bench/sw_bench.c and
 * bench/native/core_bench.c), one definition for both.
 */
#ifndef QRDMA_BENCH_CLOCK_H
#define QRDMA_BENCH_CLOCK_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline uint64_t bench_clock_read(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wall time, for latencies, deadlines and anything that waits. */
static inline uint64_t bench_wall_ns(void)
{
    return bench_clock_read(CLOCK_MONOTONIC);
}

/*
 * The clock of the bandwidth runs: wall time, or with QRDMA_BENCH_CLOCK=cpu
 * this thread's CPU time, so that a machine shared with other work still
 * gives the rate of one core (only for runs whose one thread never waits).
 */
static inline uint64_t bench_bw_ns(void)
{
    static int cpu = -1;

    if (cpu < 0) {
        const char *c = getenv("QRDMA_BENCH_CLOCK");

        cpu = c && strcmp(c, "cpu") == 0;
    }
    return bench_clock_read(cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC);
}

#endif /* QRDMA_BENCH_CLOCK_H */
