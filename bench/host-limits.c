/*
 * The machine's own limits, next to which `make bench` puts its numbers:
 * single-core memcpy bandwidth (in cache and out of it) and the round trip
 * and frame rate of a Unix datagram socket pair, which is what QEMU's
 * dgram netdev (the one vm-run uses) costs per frame before any device.
 *
 * Prints "limit <name> <value> <unit>" lines.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* GB/s of memcpy over len-byte buffers, repeated for about half a second. */
static double memcpy_gbps(size_t len)
{
    char *src = malloc(len), *dst = malloc(len);
    double t0, t;
    uint64_t bytes = 0;

    if (!src || !dst) {
        perror("malloc");
        exit(1);
    }
    memset(src, 0x5a, len);
    memset(dst, 0, len);
    t0 = now();
    do {
        for (int i = 0; i < 16; i++) {
            memcpy(dst, src, len);
            /* Keep the copy from being optimised away. */
            __asm__ volatile("" : : "r"(dst) : "memory");
            bytes += len;
        }
        t = now() - t0;
    } while (t < 0.5);
    free(src);
    free(dst);
    return bytes / t / 1e9;
}

/* Ping-pong of len-byte datagrams between two processes: microseconds per round trip. */
static double dgram_rtt_us(size_t len, int rounds)
{
    int sv[2];
    char buf[65536];
    pid_t pid;
    double t0, t;

    if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv)) {
        perror("socketpair");
        exit(1);
    }
    memset(buf, 1, sizeof(buf));
    pid = fork();
    if (pid == 0) {
        close(sv[0]);
        for (int i = 0; i < rounds; i++) {
            if (recv(sv[1], buf, sizeof(buf), 0) < 0 || send(sv[1], buf, len, 0) < 0) {
                _exit(1);
            }
        }
        _exit(0);
    }
    close(sv[1]);
    t0 = now();
    for (int i = 0; i < rounds; i++) {
        if (send(sv[0], buf, len, 0) < 0 || recv(sv[0], buf, sizeof(buf), 0) < 0) {
            perror("dgram ping-pong");
            exit(1);
        }
    }
    t = now() - t0;
    close(sv[0]);
    waitpid(pid, NULL, 0);
    return t / rounds * 1e6;
}

/* One-way stream of len-byte datagrams: frames per second the receiver gets. */
static double dgram_fps(size_t len, int frames)
{
    int sv[2];
    char buf[65536];
    pid_t pid;
    double t0, t;
    int got = 0;

    if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv)) {
        perror("socketpair");
        exit(1);
    }
    memset(buf, 2, sizeof(buf));
    pid = fork();
    if (pid == 0) {
        close(sv[0]);
        for (int i = 0; i < frames; i++) {
            if (send(sv[1], buf, len, 0) < 0) {
                _exit(1);
            }
        }
        /* A zero-length datagram marks the end. */
        send(sv[1], buf, 0, 0);
        _exit(0);
    }
    close(sv[1]);
    t0 = now();
    for (;;) {
        ssize_t n = recv(sv[0], buf, sizeof(buf), 0);

        if (n <= 0) {
            break;
        }
        got++;
    }
    t = now() - t0;
    close(sv[0]);
    waitpid(pid, NULL, 0);
    return got / t;
}

int main(void)
{
    printf("limit memcpy_64KiB %.2f GB/s\n", memcpy_gbps(64 << 10));
    printf("limit memcpy_64MiB %.2f GB/s\n", memcpy_gbps(64 << 20));
    printf("limit dgram_rtt_64B %.2f us\n", dgram_rtt_us(64, 20000));
    printf("limit dgram_rtt_1500B %.2f us\n", dgram_rtt_us(1500, 20000));
    printf("limit dgram_fps_1500B %.0f frames/s\n", dgram_fps(1500, 200000));
    printf("limit dgram_fps_9000B %.0f frames/s\n", dgram_fps(9000, 100000));
    return 0;
}
