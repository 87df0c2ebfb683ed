/*
 * The Internet checksum (RFC 1071): the one's complement sum of 16-bit
 * big-endian words, folded and complemented. One copy for every part that
 * writes or checks one: the software transport (IPv4 headers, UDP over
 * IPv6), the device core's LAN checksum offload and the verbs backend's
 * GRH for MADs it hands the guest. Header-only, so the QEMU-free core and
 * both backends take it without linking each other.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_INET_CSUM_H
#define QRDMA_INET_CSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Add LEN bytes at P to SUM. A datagram summed in pieces keeps *odd across
 * them: a piece that ended inside a 16-bit word leaves the next piece's
 * first byte the low byte of that word. Pass odd = NULL for a whole buffer.
 * The 64-bit sum cannot carry out below 2^48 bytes.
 */
static inline uint64_t qrdma_csum_add(uint64_t sum, const void *buf, size_t len,
                                      bool *odd)
{
    const uint8_t *p = buf;

    if (odd && *odd && len) {
        sum += p[0];
        p++;
        len--;
        *odd = false;
    }
    for (; len > 1; p += 2, len -= 2) {
        sum += (uint32_t)p[0] << 8 | p[1];
    }
    if (len) {
        sum += (uint32_t)p[0] << 8;
        if (odd) {
            *odd = true;
        }
    }
    return sum;
}

/* The checksum of what SUM holds: folded to 16 bits and complemented. */
static inline uint16_t qrdma_csum_fold(uint64_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)~sum;
}

/*
 * The checksum of LEN bytes at BUF on top of SUM (a pseudo-header's, or
 * 0). Over a header whose checksum field is filled in, 0 means it is
 * right.
 */
static inline uint16_t qrdma_inet_csum(const void *buf, size_t len,
                                       uint64_t sum)
{
    return qrdma_csum_fold(qrdma_csum_add(sum, buf, len, NULL));
}

#endif
