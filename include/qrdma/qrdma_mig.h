/*
 * The device's saved state: the stream qrdma_core_save() writes and
 * qrdma_core_load() reads (docs/migration.md). Data only, like the rest of
 * include/qrdma/: the layout of the stream header and of every section
 * header, and the section tags with the highest version of each that this
 * build writes and reads.
 *
 * A stream is, all little-endian:
 *   header:  magic "QRDMAMIG" (8 bytes), u16 format version, u16 interface
 *            major, u16 interface minor, u16 reserved (0)
 *   sections, each: u32 tag, u16 version, u16 flags, u32 length (of the
 *            payload), u32 CRC-32 (IEEE) over the 12 bytes before it and
 *            the payload, then the payload: fields in a fixed order, each
 *            a little-endian integer or a byte string of known length
 *   the END section (no payload) closes the stream.
 * A loader skips a section it does not know only when its flags carry
 * QRDMA_MIG_SEC_OPTIONAL; any other unknown section, or a known one of a
 * newer version than it reads, refuses the stream.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_MIG_H
#define QRDMA_MIG_H

#define QRDMA_MIG_MAGIC         "QRDMAMIG"
#define QRDMA_MIG_MAGIC_LEN     8
#define QRDMA_MIG_FORMAT        1       /* the header and section framing above */
#define QRDMA_MIG_HDR_LEN       16
#define QRDMA_MIG_SEC_HDR_LEN   16

/* Section flags. */
#define QRDMA_MIG_SEC_OPTIONAL  (1u << 0)   /* a loader that does not know the tag may skip it */
#define QRDMA_MIG_SEC_FLAGS     QRDMA_MIG_SEC_OPTIONAL

/* Tags: four ASCII characters, first in the low byte. */
#define QRDMA_MIG_TAG(a, b, c, d) \
    ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

/* Device core (qemu-hw/core/qrdma_mig.c), in this order. */
#define QRDMA_MIG_SEC_CONFIG    QRDMA_MIG_TAG('C', 'F', 'G', ' ')  /* properties the state depends on */
#define QRDMA_MIG_SEC_REGS      QRDMA_MIG_TAG('R', 'E', 'G', 'S')  /* register file, counters, port counters */
#define QRDMA_MIG_SEC_LAN       QRDMA_MIG_TAG('L', 'A', 'N', ' ')  /* Ethernet function: rings' cursors, backlog */
#define QRDMA_MIG_SEC_CQP       QRDMA_MIG_TAG('C', 'Q', 'P', ' ')  /* control QP */
#define QRDMA_MIG_SEC_EQ        QRDMA_MIG_TAG('E', 'Q', 'S', ' ')  /* GID table, CEQs, AEQ, interrupt registers */
#define QRDMA_MIG_SEC_HMC       QRDMA_MIG_TAG('H', 'M', 'C', ' ')  /* FPM layout, SD table, PD cache */
#define QRDMA_MIG_SEC_OBJ       QRDMA_MIG_TAG('O', 'B', 'J', 'S')  /* QPs, CQs, SRQs, MRs, AHs */
#define QRDMA_MIG_SEC_DP        QRDMA_MIG_TAG('D', 'P', ' ', ' ')  /* data path: cursors, kicks, loopback */
#define QRDMA_MIG_SEC_MCAST     QRDMA_MIG_TAG('M', 'C', 'S', 'T')  /* UD multicast groups and their QPs */
/* Software transport (host-backend/sw/sw_mig.c). */
#define QRDMA_MIG_SEC_SW_ENGINE QRDMA_MIG_TAG('S', 'W', 'E', 'N')  /* engine-wide */
#define QRDMA_MIG_SEC_SW_QP     QRDMA_MIG_TAG('S', 'W', 'Q', 'P')  /* one per QP */
#define QRDMA_MIG_SEC_END       QRDMA_MIG_TAG('E', 'N', 'D', ' ')

/* The version of each section this build writes (and the newest it reads). */
#define QRDMA_MIG_V_CONFIG      1
#define QRDMA_MIG_V_REGS        1
#define QRDMA_MIG_V_LAN         1
#define QRDMA_MIG_V_CQP         1
#define QRDMA_MIG_V_EQ          1
#define QRDMA_MIG_V_HMC         1
#define QRDMA_MIG_V_OBJ         1
#define QRDMA_MIG_V_DP          1
#define QRDMA_MIG_V_MCAST       1
#define QRDMA_MIG_V_SW_ENGINE   1
#define QRDMA_MIG_V_SW_QP       1
#define QRDMA_MIG_V_END         1

#endif /* QRDMA_MIG_H */
