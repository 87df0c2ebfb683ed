/*
 * The bed the device-core data-path fuzzers (fuzz_core_dp.c, fuzz_core_rx.c)
 * share: the two cores of the core-dp suite's test bed (dp_testbed.h: the
 * same guest-memory layout, bring-up and provider helpers) behind an
 * embedding of our own whose callbacks check what the device asks for and
 * abort() on what it must never do, so that libFuzzer reports it:
 *
 *   - a DMA longer than all of guest RAM, or more than FZB_MAX_DMA_READS
 *     guest reads (or FZB_MAX_DMA_BYTES bytes) in one call into the core
 *     (unbounded work);
 *   - more than FZB_MAX_FRAMES frames sent in one call, a frame shorter
 *     than an Ethernet header or longer than the LAN's largest, and (while
 *     the guest has no LAN transmit ring, so that every frame is the
 *     transport's) a frame the transport's own parser would drop;
 *   - an interrupt on a vector the device does not have, a kick for work
 *     that does not exist.
 *
 * A DMA outside guest RAM is refused (-1) as QEMU refuses it: the guest
 * chooses the addresses. Frames go on an in-process wire of our own, so a
 * program can deliver, drop, duplicate, reorder and corrupt them.
 *
 * Each side is brought up as the driver and a provider would (fzb_up):
 * CQP, GIDs (IPv4-mapped, and IPv6 at index 1), CEQ, AEQ (on MSI-X vectors 0 and 1, enabled), FPM layout and SD (direct, or paged on side B), MRs (a LEVELS 0 MR, a fast-
 * register MR filled by a FAST_REG WQE, a LEVELS 1 MR, the DMA MR), CQs
 * (one of 4 CQEs to overflow, two on the CEQ), an SRQ, an AH, and QPs in
 * RTS: RC, UC and UD toward the other side, RC on the SRQ, an RC pair in
 * loopback, an RC QP with PBLE-mapped (VIRTMAP) rings; receive WQEs posted.
 *
 * Re-entrancy: an armed action (FZB_RE_*) runs from inside the msix_notify
 * callback, into the same core, once; QRDMA_FUZZ_REENTER=0 in the
 * environment turns that off (the program is read the same way).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_FUZZ_CORE_BED_H
#define QRDMA_FUZZ_CORE_BED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dp_testbed.h"

#define FZB_MAX_DMA_READS   (1u << 20)
#define FZB_MAX_DMA_BYTES   (256ull << 20)
#define FZB_MAX_FRAMES      (1u << 16)

/* Objects of fzb_up(), the same on both sides. */
enum {
    FZB_CQ_SEND = 1, FZB_CQ_RECV = 2, FZB_CQ_TINY = 3 /* 4 CQEs, CEQ */, FZB_CQ_CEQ = 4,
    FZB_NCQ = 5,
};
enum {
    FZB_QP_RC = 2, FZB_QP_UC = 3, FZB_QP_UD = 4, FZB_QP_SRQ = 5, FZB_QP_LOOP_A = 6,
    FZB_QP_LOOP_B = 7, FZB_QP_VIRT = 8,
};
#define FZB_NQPS 7
extern const uint32_t fzb_qps[FZB_NQPS];

#define FZB_SRQ_ID      1
#define FZB_SRQ_LOG2    3
#define FZB_SRQ_WQE_LOG2 6
#define FZB_AH_ID       1

/* MRs: index << 8 | key */
#define FZB_MR_FR_INDEX 2
#define FZB_MR_FR_KEY   0x20
#define FZB_MR_FR_STAG  (FZB_MR_FR_INDEX << QRDMA_STAG_INDEX_SHIFT | FZB_MR_FR_KEY)
#define FZB_MR_FR_IOVA  0x60000000ull
#define FZB_MR_FR_PBLE  8           /* 4 PBLEs */
#define FZB_MR_FR_DATA  0xc0000u    /* its pages in the data area */
#define FZB_MR_L1_INDEX 3
#define FZB_MR_L1_STAG  (FZB_MR_L1_INDEX << QRDMA_STAG_INDEX_SHIFT | 0x33)
#define FZB_MR_L1_IOVA  0x70000000ull
#define FZB_MR_L1_PBLE  16          /* 8 PBLEs */
#define FZB_MR_L1_DATA  0x80000u
#define FZB_MR_DMA_INDEX 4
#define FZB_MR_DMA_STAG (FZB_MR_DMA_INDEX << QRDMA_STAG_INDEX_SHIFT | 0x44)
#define FZB_VIRT_PBLE   32          /* the VIRTMAP QP's SQ page, then its RQ page */

/* GID index 1 of side s: fd00::(1 + idx), RoCEv2 over IPv6. */
#define FZB_GID6_INDEX  1
void fzb_gid6(const struct side *s, uint8_t gid[16]);
/* An AV at addr toward side peer over IPv6 (source GID index 1). */
void fzb_write_av6(struct side *s, uint64_t addr, const struct side *peer);

/* Where receive buffers of QP q start in the data area. */
#define FZB_RECV_BUF(q) (0x10000u + 0x4000u * (q))

/* Re-entrant actions from msix_notify. */
enum fzb_reenter_kind { FZB_RE_NONE, FZB_RE_REG, FZB_RE_DB, FZB_RE_RESET, FZB_RE_RUN };

struct fzb_reenter {
    enum fzb_reenter_kind kind;
    uint64_t offset, value;
};

/* What the embedding counted. */
struct fzb_count {
    uint64_t dma_reads, dma_bytes, frames;
};

/* One frame on the wire. */
struct fzb_frame {
    int from;
    size_t len;
    uint8_t data[QRDMA_LAN_MTU_MAX + QRDMA_LAN_FRAME_OVERHEAD];
};

#define FZB_WIRE_MAX 48

/* Copy a frame: its header and its len bytes, not the whole 9 KB slot. */
void fzb_frame_copy(struct fzb_frame *dst, const struct fzb_frame *src);

struct fzb_wire {
    unsigned head, count;
    struct fzb_frame f[FZB_WIRE_MAX];
    uint64_t dropped;               /* the wire was full */
};

extern struct fzb_wire fzb_wire;
extern struct fzb_reenter fzb_reenter[2];
extern bool fzb_reenter_on;         /* QRDMA_FUZZ_REENTER (default 1) */
extern bool fzb_trace;              /* QRDMA_FUZZ_TRACE=1: say what happens */
/* Called with each frame a side sends (the seed generators capture them). */
extern void (*fzb_capture)(int from, const uint8_t *frame, size_t len);

/* Once per process: environment, the frame checker, both sides' RAM. */
void fzb_init(void);
/*
 * Both sides fresh and brought up, with every object above; the wire empty.
 * variant: FZB_PAGED_SD puts side B's FPM behind a paged SD (a PD page at
 * FZB_PD_PAGE); FZB_FAULTS turns on the transport's fault injection (loss,
 * duplication, reordering, delay) on both sides.
 */
#define FZB_PAGED_SD    1u
#define FZB_FAULTS      2u
#define FZB_PD_PAGE     (DATA + DATA_LEN)
void fzb_up(unsigned variant);
/* After a reset of side s: bring it up again (objects and connections). */
void fzb_rebringup(struct side *s);
/* The driver's interrupt handler is done: DYN_CTL.INTENA again on vectors 0 and 1. */
void fzb_irq_enable(struct side *s);
/* Empty the wire. */
void fzb_down(void);
/*
 * The end of an input: the wire emptied, both cores freed, so that every
 * input frees what it allocated and LeakSanitizer can tell a leak.
 */
void fzb_free(void);

/* Calls into a core, with the per-call bounds reset. */
void fzb_enter(void);
void fzb_run(struct side *s, unsigned what);
void fzb_timer(struct side *s);
size_t fzb_receive(struct side *s, const uint8_t *frame, size_t len);
void fzb_reset(struct side *s);

/* The side a frame goes to: by destination MAC, else the other one. */
struct side *fzb_dest(int from, const uint8_t *frame, size_t len);
/* Deliver the wire's oldest frame; false if the wire is empty. */
bool fzb_deliver_one(void);
/* Run kicked work and deliver frames, at most steps rounds. */
void fzb_pump(unsigned steps);
/* Move the clock by delta_ns and fire the timers now due. */
void fzb_advance(uint64_t delta_ns);
/* Pump and fire timers until quiet or until the clock passes limit_ns from now. */
void fzb_settle(uint64_t limit_ns, unsigned rounds);

/*
 * Fix up a (possibly mutated) RoCEv2 frame: IP/UDP lengths for an IP
 * packet of l3len bytes and the IPv4 checksum (lens), the ICRC (icrc), as
 * far as the frame allows.
 */
void fzb_fixup(uint8_t *f, size_t len, size_t l3len, bool lens, bool icrc);

/* The harness wrote [addr, addr + len) of side s's RAM outside the driver's areas. */
void fzb_dirty(struct side *s, uint64_t addr, size_t len);

/* A quiet CQP command (no checks): its status qword, ~0 if none completed. */
uint64_t fzb_cqp(struct side *s, uint8_t op, const uint64_t args[6]);
/* The guest-physical address of PBLE i of side s. */
uint64_t fzb_pble_addr(struct side *s, uint32_t i);

#endif /* QRDMA_FUZZ_CORE_BED_H */
