/*
 * libFuzzer harness for the device core's data path: two cores brought up
 * as the driver would (fuzz_core_bed.h: HMC, CQP, EQs, MRs incl. a fast-
 * register one, CQs, an SRQ, QPs of each type in RTS, an RC pair between
 * the cores and one in loopback), then the input is a program of guest and
 * wire actions against them. Built with ASan and UBSan; the bed's callbacks
 * abort on what the device must never do.
 *
 * Input: a variant byte (fzb_up: side B's FPM behind a paged SD, the
 * transport's fault injection), then a program of ops, one byte each (bit 7: side B, else side A; the
 * rest modulo OP_NUM), then the operands the op takes from the input
 * (missing bytes read as 0). The program ends with the input, after at
 * most MAX_STEPS ops; then the cores settle (work, frames, timers).
 *
 *   SEND      SQ WQE from a template: QP, opcode, flags, SGEs through the
 *             bed's MRs or raw keys, remote key and offset, inline data,
 *             UD address, FAST_REG fields; some fields raw; doorbell or not
 *   RECV      RQ or SRQ WQE from a template, doorbell or not
 *   RAW_WQE   raw bytes over the next SQ / RQ / SRQ slot (VALID kept or not)
 *   DB        doorbell: a real QP or CQ, or any page, offset and value;
 *             or an SQ notification (qrdma_core_db_notify) of page 0 or any
 *   CQP       a CQP command from a template (modify QP with any attributes,
 *             destroy and re-create, CQ resize and destroy, SRQ limit, MR
 *             register / allocate / deallocate / query, AH) or raw
 *   CQ_ARM    the shadow ARM word and the CQ_ARM doorbell
 *   CQ_POLL   take CQEs and publish HEAD, or store any HEAD
 *   POKE      bytes into contexts, PBLEs, rings, shadows, data, anywhere
 *   RUN       the kicked work of a side, or any work bits
 *   WIRE      deliver, drop, duplicate, swap, misdeliver or corrupt (with or
 *             without fixing lengths and ICRC) the oldest frame on the wire
 *   TIMER     advance the clock (2^n ns) and fire due timers
 *   RESET     device reset, then (maybe) the bring-up again
 *   REENTER   arm an action (register write, doorbell, reset, run) that
 *             runs from inside the side's next interrupt (QRDMA_FUZZ_REENTER)
 *   REG       register write or read, any offset
 *   FRAME     raw bytes in from the wire (optionally fixed up)
 *   EQ        drain the AEQ and the CEQ as the driver does
 *   PUMP      work and frames until quiet (bounded)
 *
 * QRDMA_FUZZ_TRACE=1 prints each op.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/qrdma_core_int.h"
#include "fuzz_core_bed.h"
#include "sw_int.h"

#define MAX_STEPS 192

enum {
    OP_SEND, OP_RECV, OP_RAW_WQE, OP_DB, OP_CQP, OP_CQ_ARM, OP_CQ_POLL, OP_POKE, OP_RUN,
    OP_WIRE, OP_TIMER, OP_RESET, OP_REENTER, OP_REG, OP_FRAME, OP_EQ, OP_PUMP, OP_NUM
};

static const char *const op_name[OP_NUM] = {
    "SEND", "RECV", "RAW_WQE", "DB", "CQP", "CQ_ARM", "CQ_POLL", "POKE", "RUN", "WIRE",
    "TIMER", "RESET", "REENTER", "REG", "FRAME", "EQ", "PUMP",
};

struct input {
    const uint8_t *p;
    size_t n;
};

static uint64_t take(struct input *in, unsigned bytes)
{
    uint64_t v = 0;
    unsigned i;

    for (i = 0; i < bytes && in->n; i++, in->p++, in->n--) {
        v |= (uint64_t)in->p[0] << (8 * i);
    }
    return v;
}

/* A QP of the bed mostly, any QP ID sometimes. */
static uint32_t pick_qp(uint8_t b)
{
    return b < 0xf0 ? fzb_qps[b % FZB_NQPS] : b & (N_QP - 1);
}

/* A key: one of the bed's MRs, with the wrong key byte, or raw. */
static uint32_t pick_key(struct input *in, uint64_t *base, uint32_t *span)
{
    uint8_t b = take(in, 1);

    switch (b & 7) {
    case 0:
    case 1:
        *base = IOVA;
        *span = DATA_LEN;
        return MR_STAG;
    case 2:
        *base = FZB_MR_FR_IOVA;
        *span = 4 * 4096;
        return FZB_MR_FR_STAG;
    case 3:
        *base = FZB_MR_L1_IOVA;
        *span = 8 * 4096;
        return FZB_MR_L1_STAG;
    case 4:
        *base = DATA;
        *span = DATA_LEN;
        return FZB_MR_DMA_STAG;
    case 5:
        *base = IOVA;
        *span = DATA_LEN;
        return MR_STAG ^ (1u + (b >> 3));
    default:
        *base = take(in, 8);
        *span = 0;
        return take(in, 4);
    }
}

/* An address in a key's range, near its ends often. */
static uint64_t pick_addr(struct input *in, uint64_t base, uint32_t span)
{
    uint32_t v = take(in, 3);

    if (!span) {
        return base + v;
    }
    if (v & 0x800000) {
        return base + span - (v & 0xfff);
    }
    return base + v % span;
}

static uint32_t pick_len(struct input *in)
{
    uint16_t v = take(in, 2);

    switch (v >> 14) {
    case 0:
        return v & 0xff;
    case 1:
        return v & 0x1fff;
    case 2:
        return 1u << (v & 31);
    default:
        return 0x10000u * (v & 0x3fff) + (v & 0xfff);
    }
}

static uint64_t sq_slot(struct side *s, uint32_t q, bool *valid)
{
    uint32_t n = s->qp[q].sq_posted++;
    uint32_t index = n & ((1u << s->qp[q].sq_log2) - 1);

    *valid = !((n >> s->qp[q].sq_log2) & 1);
    return SQ_RING(q) + ((uint64_t)index << s->qp[q].sq_stride_log2);
}

static uint64_t rq_slot(struct side *s, uint32_t q, bool *valid)
{
    uint32_t n = s->qp[q].rq_posted++;
    uint32_t index = n & ((1u << s->qp[q].rq_log2) - 1);

    *valid = !((n >> s->qp[q].rq_log2) & 1);
    return RQ_RING(q) + ((uint64_t)index << s->qp[q].rq_stride_log2);
}

static uint64_t srq_slot(struct side *s, bool *valid)
{
    uint32_t n = s->srq_posted++;

    *valid = !((n >> s->srq_log2) & 1);
    return SRQ_RING + ((uint64_t)(n & ((1u << s->srq_log2) - 1)) << s->srq_stride_log2);
}

static void op_send(struct side *s, struct input *in)
{
    const uint32_t q = pick_qp(take(in, 1));
    const uint8_t op = take(in, 1);
    const uint8_t fl = take(in, 1);
    uint64_t a, base, hdr, remote;
    uint32_t span, rkey, stride;
    unsigned nsge, i;
    bool valid;

    if (!s->qp[q].sq_log2) {
        return;                         /* no SQ of the bed's there */
    }
    stride = 1u << s->qp[q].sq_stride_log2;
    a = sq_slot(s, q, &valid);
    memset(mem(s, a), 0, stride);
    hdr = op < 0xe0 ? op % 13 : op;
    rkey = pick_key(in, &base, &span);
    remote = pick_addr(in, base, span);
    if ((hdr == QRDMA_SQ_OP_ATOMIC_CMP_AND_SWP || hdr == QRDMA_SQ_OP_ATOMIC_FETCH_AND_ADD) &&
        !(fl & 0x80)) {
        remote &= ~7ull;
    }
    w64(s, a + 0, remote);
    w64(s, a + 8, rkey | take(in, 4) << QRDMA_SQ_IMM_SHIFT);
    w64(s, a + 16, take(in, 8));
    w64(s, a + 24, take(in, 8));
    if (hdr == QRDMA_SQ_OP_FAST_REG) {
        uint8_t f = take(in, 1);

        w64(s, a + 0, f & 1 ? take(in, 8) : FZB_MR_FR_IOVA);
        w64(s, a + 16, f & 2 ? pick_len(in) : 4 * 4096);
        w64(s, a + 24, f & 4 ? take(in, 4) : FZB_MR_FR_PBLE);
        w64(s, a + 32, (f & 8 ? (uint32_t)take(in, 4) : (FZB_MR_FR_STAG & ~0xffu) |
                                                         (uint8_t)take(in, 1)) |
                       (uint64_t)(f & 16 ? (uint8_t)take(in, 1) : MR_ACCESS)
                       << QRDMA_SQ_FR_ACCESS_SHIFT |
                       (uint64_t)(f & 32 ? take(in, 1) & 63 : 12) << QRDMA_SQ_FR_PAGE_SHIFT |
                       (uint64_t)(f & 64 ? take(in, 1) & 3 : 1) << QRDMA_SQ_FR_LEVELS_SHIFT);
        w64(s, a + 48, f & 128 ? take(in, 4) : 0);
    } else if (hdr == QRDMA_SQ_OP_LOCAL_INV || hdr == QRDMA_SQ_OP_SEND_WITH_INV) {
        uint8_t k = take(in, 1);

        w64(s, a + 8, rkey | (uint64_t)(k & 1 ? FZB_MR_FR_STAG : rkey) << QRDMA_SQ_IMM_SHIFT);
    } else {
        uint8_t u = take(in, 1);

        w64(s, a + 32, (u & 1 ? take(in, 3) : FZB_QP_UD) |
                       (uint64_t)(u & 2 ? take(in, 3) : FZB_AH_ID) << QRDMA_SQ_UD_AH_SHIFT);
        w64(s, a + 40, u & 4 ? take(in, 4) : QKEY);
    }
    if (fl & 1) {
        /* Inline: the length field from the input, the bytes as far as the slot goes. */
        unsigned len = take(in, 2) & 0x3ff;

        for (i = 0; i < len && 64 + i < stride && in->n; i++) {
            w8(s, a + 64 + i, take(in, 1));
        }
        hdr |= QRDMA_SQ_HDR_INLINE | (uint64_t)len << QRDMA_SQ_HDR_INLINE_LEN_SHIFT;
    } else {
        nsge = take(in, 1);
        for (i = 0; i < (nsge & 15) && 64 + 16 * (i + 1) <= stride; i++) {
            uint32_t k = pick_key(in, &base, &span);

            w64(s, a + 64 + 16 * i, pick_addr(in, base, span));
            w32(s, a + 72 + 16 * i, pick_len(in));
            w32(s, a + 76 + 16 * i, k);
        }
        hdr |= (uint64_t)(nsge & 0x10 ? nsge >> 3 : i) << QRDMA_SQ_HDR_NUM_SGE_SHIFT;
    }
    hdr |= (fl & 2 ? 0 : QRDMA_SQ_HDR_SIGNALED) | (fl & 4 ? QRDMA_SQ_HDR_SOLICITED : 0) |
           (fl & 8 ? QRDMA_SQ_HDR_READ_FENCE : 0) | (fl & 16 ? QRDMA_SQ_HDR_LOCAL_FENCE : 0);
    if (valid != !!(fl & 32)) {
        hdr |= QRDMA_SQ_HDR_VALID;
    }
    w64(s, a + 56, hdr);
    if (!(fl & 64)) {
        db(s, 0, QRDMA_DB_SQ, q);
    }
}

static void write_sges(struct side *s, struct input *in, uint64_t a, unsigned stride,
                       unsigned n)
{
    unsigned i;

    for (i = 0; i < n && 16 + 16 * (i + 1) <= stride; i++) {
        uint64_t base;
        uint32_t span, k = pick_key(in, &base, &span);

        w64(s, a + 16 + 16 * i, pick_addr(in, base, span));
        w32(s, a + 24 + 16 * i, pick_len(in));
        w32(s, a + 28 + 16 * i, k);
    }
}

static void op_recv(struct side *s, struct input *in)
{
    const uint32_t q = pick_qp(take(in, 1));
    const uint8_t fl = take(in, 1);
    unsigned stride, n = fl & 7;
    uint64_t a;
    bool valid, srq = q == FZB_QP_SRQ || (fl & 0x40);

    if (srq) {
        stride = 1u << s->srq_stride_log2;
        a = srq_slot(s, &valid);
    } else {
        if (!s->qp[q].rq_log2) {
            return;
        }
        stride = 1u << s->qp[q].rq_stride_log2;
        a = rq_slot(s, q, &valid);
    }
    memset(mem(s, a), 0, stride);
    write_sges(s, in, a, stride, n);
    w64(s, a + 8, (fl & 8 ? take(in, 1) & 31 : n) | (valid != !!(fl & 16) ? QRDMA_RQ_HDR_VALID : 0));
    if (srq) {
        w64(s, SRQ_SHADOW, fl & 0x20 ? take(in, 4) : s->srq_posted);
    } else if (!(fl & 0x20)) {
        db(s, 0, QRDMA_DB_RQ, q);
    }
}

static void op_raw_wqe(struct side *s, struct input *in)
{
    const uint32_t q = pick_qp(take(in, 1));
    const uint8_t fl = take(in, 1);
    unsigned stride, len, i;
    uint64_t a;
    bool valid;

    switch (fl & 3) {
    case 0:
        if (!s->qp[q].sq_log2) {
            return;
        }
        stride = 1u << s->qp[q].sq_stride_log2;
        a = sq_slot(s, q, &valid);
        break;
    case 1:
        if (!s->qp[q].rq_log2) {
            return;
        }
        stride = 1u << s->qp[q].rq_stride_log2;
        a = rq_slot(s, q, &valid);
        break;
    default:
        stride = 1u << s->srq_stride_log2;
        a = srq_slot(s, &valid);
        break;
    }
    len = take(in, 1) % (stride + 1);
    for (i = 0; i < len; i++) {
        w8(s, a + i, take(in, 1));
    }
    if (fl & 4) {
        /* The VALID bit of the lap, whatever the bytes said. */
        uint64_t h = (fl & 3) == 0 ? a + 56 : a + 8;
        uint64_t v = r64(s, h) & ~(1ull << 63);

        w64(s, h, v | (valid ? 1ull << 63 : 0));
    }
    if ((fl & 3) == 0) {
        db(s, 0, QRDMA_DB_SQ, q);
    } else if ((fl & 3) == 1) {
        db(s, 0, QRDMA_DB_RQ, q);
    } else {
        w64(s, SRQ_SHADOW, s->srq_posted);
    }
}

static void op_db(struct side *s, struct input *in)
{
    const uint8_t k = take(in, 1);

    fzb_enter();
    switch (k & 3) {
    case 0:
        if (k & 4) {
            /* the SQ doorbell as an ioeventfd delivers it: the page only */
            qrdma_core_db_notify(&s->core, 0);
        } else {
            db(s, 0, QRDMA_DB_SQ, pick_qp(take(in, 1)));
        }
        break;
    case 1:
        db(s, 0, QRDMA_DB_RQ, pick_qp(take(in, 1)));
        break;
    case 2:
        db(s, 0, QRDMA_DB_CQ_ARM, take(in, 1) % (N_CQ + 1));
        break;
    default: {
        static const unsigned sizes[] = { 4, 1, 2, 8 };
        uint64_t off = take(in, 4) % (2ull * QRDMA_DEFAULT_DB_PAGES * QRDMA_DB_PAGE_SIZE);

        if (k & 0x10) {
            qrdma_core_db_notify(&s->core, off / QRDMA_DB_PAGE_SIZE);
        } else {
            qrdma_core_db_write(&s->core, off, sizes[(k >> 2) & 3], take(in, 4));
        }
        break;
    }
    }
}

/* A modify of QP q with the attributes and mask from the input. */
static uint64_t modify(struct side *s, uint32_t q, struct input *in)
{
    const uint8_t f = take(in, 1);
    uint32_t mask = f & 1 ? (uint32_t)take(in, 4) : (uint32_t)take(in, 1) << 7;
    struct side *peer = &sides[1 - s->idx];
    uint8_t t;

    mod_begin(s, mask, take(in, 1) % 8);
    w8(s, MI(cur_state), take(in, 1) % 8);
    w8(s, MI(path_mtu), f & 2 ? take(in, 1) : 3);
    t = take(in, 1);                    /* TIMEOUT; bit 7: the AV over IPv6 */
    w8(s, MI(timeout), t & 31);
    w32(s, MI(sq_psn), f & 4 ? take(in, 4) : PSN(s));
    w32(s, MI(rq_psn), f & 8 ? take(in, 4) : PSN(peer));
    w32(s, MI(dest_qpn), f & 16 ? take(in, 4) : q);
    w32(s, MI(qkey), f & 32 ? take(in, 4) : QKEY);
    w32(s, MI(access_flags), take(in, 1));
    w8(s, MI(retry_cnt), take(in, 1) & 7);
    w8(s, MI(rnr_retry), take(in, 1) & 7);
    w8(s, MI(min_rnr_timer), take(in, 1) & 31);
    w8(s, MI(max_rd_atomic), take(in, 1) & 31);
    w8(s, MI(max_dest_rd_atomic), take(in, 1) & 31);
    w8(s, MI(port_num), 1);
    if (t & 0x80) {
        fzb_write_av6(s, MI(av), peer);
    } else {
        write_av(s, MI(av), f & 64 ? s : peer);
    }
    if (f & 128) {
        w8(s, MI(av) + take(in, 1) % 32, take(in, 1));
    }
    {
        const uint64_t args[6] = { q, INFO };

        return fzb_cqp(s, QRDMA_CQP_OP_MODIFY_QP, args);
    }
}

static void op_cqp(struct side *s, struct input *in)
{
    const uint8_t k = take(in, 1);
    uint64_t args[6] = { 0 };
    uint8_t opcode;
    unsigned i;

    switch (k % 12) {
    case 0:
    case 1:
    case 2:
        modify(s, pick_qp(take(in, 1)), in);
        return;
    case 3: {
        /* Destroy a QP and create it again as the bed had it. */
        const uint32_t q = pick_qp(take(in, 1));

        args[0] = q;
        fzb_cqp(s, QRDMA_CQP_OP_DESTROY_QP, args);
        if (k & 0x80 && q < N_QP && s->qp[q].sq_log2) {
            struct qp_spec spec = rc_spec;

            spec.type = take(in, 1) % 6;
            spec.flags = take(in, 1) & (QRDMA_QP_CREATE_SRQ | QRDMA_QP_CREATE_SIG_ALL);
            spec.srq = FZB_SRQ_ID;
            create_qp(s, q, &spec);
        }
        return;
    }
    case 4: {
        /* CQ: resize (MODIFY_CQ), destroy, create; id and size from the input. */
        const uint32_t id = take(in, 1) % (N_CQ + 1);
        const unsigned log2 = take(in, 1) % 10;

        args[0] = id | (uint64_t)log2 << QRDMA_CQ_ARG0_SIZE_SHIFT |
                  (k & 0x20 ? QRDMA_CQ_ARG0_CEQ_ENABLE : 0);
        args[1] = 0xc0000 + id;
        args[2] = CQ_RING(id % N_CQ);
        args[3] = CQ_SHADOW(id % N_CQ);
        opcode = (k >> 6) == 0 ? QRDMA_CQP_OP_MODIFY_CQ :
                 (k >> 6) == 1 ? QRDMA_CQP_OP_DESTROY_CQ : QRDMA_CQP_OP_CREATE_CQ;
        if (!(fzb_cqp(s, opcode, args) & (QRDMA_CCQ_CQE_MAJOR_MASK | QRDMA_CCQ_CQE_MINOR_MASK)) &&
            opcode != QRDMA_CQP_OP_DESTROY_CQ && id < N_CQ) {
            s->cq[id].log2 = log2;
            if (opcode == QRDMA_CQP_OP_CREATE_CQ) {
                s->cq[id].head = 0;
            }
        }
        return;
    }
    case 5:
        /* SRQ: limit, query, destroy, create. */
        args[0] = FZB_SRQ_ID | (uint64_t)FZB_SRQ_LOG2 << QRDMA_SRQ_ARG0_SIZE_SHIFT |
                  (uint64_t)FZB_SRQ_WQE_LOG2 << QRDMA_SRQ_ARG0_WQE_SHIFT;
        args[1] = PD | (take(in, 3) << QRDMA_SRQ_ARG1_LIMIT_SHIFT);
        args[2] = SRQ_RING;
        args[3] = SRQ_SHADOW;
        args[4] = 0x5e0;
        opcode = (k >> 6) == 0 ? QRDMA_CQP_OP_MODIFY_SRQ :
                 (k >> 6) == 1 ? QRDMA_CQP_OP_QUERY_SRQ :
                 (k >> 6) == 2 ? QRDMA_CQP_OP_DESTROY_SRQ : QRDMA_CQP_OP_CREATE_SRQ;
        if (opcode == QRDMA_CQP_OP_CREATE_SRQ) {
            s->srq_posted = 0;
        }
        fzb_cqp(s, opcode, args);
        return;
    case 6:
        /* MR: deallocate, allocate a fast-register MR, query. */
        args[0] = (take(in, 1) % N_MR) << QRDMA_STAG_INDEX_SHIFT | take(in, 1);
        args[1] = PD | (uint64_t)take(in, 1) << QRDMA_MR_ARG1_ACCESS_SHIFT;
        args[2] = take(in, 1) % 16;
        args[4] = take(in, 1) % N_PBLE;
        opcode = (k >> 6) == 0 ? QRDMA_CQP_OP_DEALLOC_STAG :
                 (k >> 6) == 1 ? QRDMA_CQP_OP_ALLOC_STAG : QRDMA_CQP_OP_QUERY_STAG;
        if (opcode == QRDMA_CQP_OP_QUERY_STAG) {
            args[1] = FPM_BUF + 0x200;
        }
        fzb_cqp(s, opcode, args);
        return;
    case 7: {
        /* REG_MR over PBLEs or data, fields from the input. */
        const uint8_t f = take(in, 1);

        args[0] = (take(in, 1) % N_MR) << QRDMA_STAG_INDEX_SHIFT | take(in, 1);
        args[1] = PD | (uint64_t)take(in, 1) << QRDMA_MR_ARG1_ACCESS_SHIFT |
                  (uint64_t)(f & 3) << QRDMA_MR_ARG1_LEVELS_SHIFT |
                  (uint64_t)(f & 4 ? take(in, 1) & 63 : 12) << QRDMA_MR_ARG1_PAGE_SHIFT |
                  (f & 8 ? QRDMA_MR_ARG1_DMA : 0);
        args[2] = f & 16 ? take(in, 8) : 0x80000000ull;
        args[3] = pick_len(in);
        args[4] = (f & 3) ? take(in, 1) % (N_PBLE + 4) : DATA + take(in, 3) % DATA_LEN;
        args[5] = f & 32 ? take(in, 4) : args[4] & 0xfff;
        fzb_cqp(s, QRDMA_CQP_OP_REG_MR, args);
        return;
    }
    case 8:
        /* AH: create, modify (toward either side or raw bytes), destroy. */
        {
            const uint8_t w = take(in, 1);

            if (w & 2) {
                fzb_write_av6(s, AV_BUF, &sides[w & 1]);
            } else {
                write_av(s, AV_BUF, &sides[w & 1]);
            }
        }
        if (k & 0x10) {
            w8(s, AV_BUF + take(in, 1) % 32, take(in, 1));
        }
        args[0] = (take(in, 1) % (N_AH + 1)) | (uint64_t)PD << QRDMA_AH_ARG0_PD_SHIFT;
        args[1] = AV_BUF;
        opcode = (k >> 6) == 0 ? QRDMA_CQP_OP_CREATE_AH :
                 (k >> 6) == 1 ? QRDMA_CQP_OP_MODIFY_AH : QRDMA_CQP_OP_DESTROY_AH;
        fzb_cqp(s, opcode, args);
        return;
    case 9:
        args[0] = pick_qp(take(in, 1));
        args[1] = FPM_BUF + 0x200;
        fzb_cqp(s, QRDMA_CQP_OP_QUERY_QP, args);
        return;
    default:
        opcode = take(in, 1);
        for (i = 0; i < 6; i++) {
            args[i] = take(in, 8);
        }
        if (k & 0x80) {
            /* Buffers inside RAM, IDs small: deeper into the handlers. */
            args[0] &= 0xff0000ffull;
            args[1] = RAM_BASE + args[1] % (RAM_SIZE - 4096);
        }
        fzb_cqp(s, opcode, args);
        return;
    }
}

static void op_cq_arm(struct side *s, struct input *in)
{
    const uint32_t cq = 1 + take(in, 1) % (FZB_NCQ - 1);
    const uint8_t f = take(in, 1);

    w64(s, CQ_SHADOW(cq) + 8, (f & 1 ? take(in, 2) : (uint16_t)(r64(s, CQ_SHADOW(cq) + 8) + 1)) |
                              (f & 2 ? QRDMA_CQ_ARM_NEXT : 0) |
                              (f & 4 ? QRDMA_CQ_ARM_SOLICITED : 0));
    if (!(f & 8)) {
        db(s, 0, QRDMA_DB_CQ_ARM, cq);
    }
}

static void op_cq_poll(struct side *s, struct input *in)
{
    const uint32_t cq = 1 + take(in, 1) % (FZB_NCQ - 1);
    const uint8_t f = take(in, 1);
    struct cqe e;
    unsigned n = f & 31;

    if (f & 0x80) {
        w64(s, CQ_SHADOW(cq), take(in, 4));
        return;
    }
    if (!s->cq[cq].log2) {
        return;
    }
    while (n-- && cq_take(s, cq, &e)) {
        if (fzb_trace) {
            fprintf(stderr, "  side %c CQ %u: QP %u WQE %u opcode %u status %u len %u\n",
                    'A' + s->idx, cq, e.qp, e.wqe_index, e.opcode, e.status, e.byte_len);
        }
    }
    cq_publish(s, cq);
}

static void op_poke(struct side *s, struct input *in)
{
    const uint8_t r = take(in, 1);
    uint32_t off = take(in, 3);
    uint64_t a;
    unsigned len = 1 + take(in, 1) % 32, i;

    switch (r & 7) {
    case 0:                             /* HMC: contexts */
        a = HMC_RAM + off % (RAM_BASE + RAM_SIZE - HMC_RAM);
        break;
    case 1:                             /* PBLEs */
        a = fzb_pble_addr(s, off % N_PBLE);
        break;
    case 2:                             /* SQ and RQ rings */
        a = SQ_RING(0) + off % (0x8000 * N_QP);
        break;
    case 3:                             /* CQ rings */
        a = CQ_RING(0) + off % (0x4000 * N_CQ);
        break;
    case 4:                             /* shadows, SRQ ring */
        a = r & 8 ? SRQ_RING + off % 0x1000 : CQ_SHADOW(0) + off % 0x2000;
        break;
    case 5:                             /* CQP, CCQ, EQs, buffers */
        a = RAM_BASE + off % 0x6000;
        break;
    case 6:                             /* the data area */
        a = DATA + off % DATA_LEN;
        break;
    default:
        a = RAM_BASE + off % RAM_SIZE;
        break;
    }
    fzb_dirty(s, a, a + len <= RAM_BASE + RAM_SIZE ? len : RAM_BASE + RAM_SIZE - a);
    for (i = 0; i < len && a + i < RAM_BASE + RAM_SIZE; i++) {
        w8(s, a + i, take(in, 1));
    }
}

static void op_wire(struct input *in)
{
    const uint8_t k = take(in, 1);
    struct fzb_frame *f;

    if (!fzb_wire.count) {
        return;
    }
    f = &fzb_wire.f[fzb_wire.head];
    switch (k & 7) {
    case 0:
    case 1:
        fzb_deliver_one();
        break;
    case 2:                             /* drop */
        fzb_wire.head = (fzb_wire.head + 1) % FZB_WIRE_MAX;
        fzb_wire.count--;
        break;
    case 3:                             /* duplicate */
        fzb_receive(fzb_dest(f->from, f->data, f->len), f->data, f->len);
        break;
    case 4:                             /* swap the two oldest */
        if (fzb_wire.count > 1) {
            static struct fzb_frame t;
            struct fzb_frame *g = &fzb_wire.f[(fzb_wire.head + 1) % FZB_WIRE_MAX];

            fzb_frame_copy(&t, f);
            fzb_frame_copy(f, g);
            fzb_frame_copy(g, &t);
        }
        fzb_deliver_one();
        break;
    case 5:                             /* to the sender (or the other side) */
        fzb_receive(&sides[f->from ^ (k >> 7)], f->data, f->len);
        fzb_wire.head = (fzb_wire.head + 1) % FZB_WIRE_MAX;
        fzb_wire.count--;
        break;
    default: {                          /* corrupt, then deliver */
        unsigned n = 1 + take(in, 1) % 8;

        while (n-- && f->len) {
            f->data[take(in, 2) % f->len] ^= (uint8_t)take(in, 1);
        }
        if (k & 0x40 && f->len > 1) {
            f->len = 1 + take(in, 2) % f->len;
        }
        if (k & 0x80) {
            fzb_fixup(f->data, f->len, f->len - ETH_HLEN, true, true);
        }
        fzb_deliver_one();
        break;
    }
    }
}

static void op_reset(struct side *s, struct input *in)
{
    const uint8_t k = take(in, 1);

    if (k & 1) {
        fzb_enter();
        qrdma_core_reg_write(&s->core, QRDMA_REG_DEV_CTRL, 4, QRDMA_DEV_CTRL_RESET);
    } else {
        fzb_reset(s);
    }
    if (k & 2) {
        fzb_rebringup(s);
    }
}

static void op_reenter(struct side *s, struct input *in)
{
    struct fzb_reenter *r = &fzb_reenter[s->idx];
    const uint8_t k = take(in, 1);

    r->kind = 1 + k % 4;
    switch (r->kind) {
    case FZB_RE_REG:
        r->offset = k & 0x80 ? take(in, 2) & ~3u : QRDMA_REG_CQP_DB;
        r->value = take(in, 4);
        break;
    case FZB_RE_DB:
        r->offset = (k & 0x80 ? take(in, 1) % 4 : 0) * QRDMA_DB_PAGE_SIZE +
                    (take(in, 1) % 3) * 0x40;
        r->value = pick_qp(take(in, 1));
        break;
    default:
        r->value = take(in, 1);
        break;
    }
}

static void op_reg(struct side *s, struct input *in)
{
    static const uint32_t regs[] = {
        QRDMA_REG_CQP_DB, QRDMA_REG_AEQALLOC, QRDMA_REG_CEQALLOC(0), QRDMA_REG_DEV_CTRL,
        QRDMA_REG_CCQP_CTX_LOW, QRDMA_REG_HMC_SD_CMD, QRDMA_REG_HMC_SD_DATA_LOW,
        QRDMA_REG_HMC_PDINV, QRDMA_REG_HMC_SD_DATA_HIGH, QRDMA_REG_DYN_CTL(0),
        QRDMA_REG_DYN_CTL(1), QRDMA_REG_CEQCTL(0), QRDMA_REG_AEQCTL,
    };
    const uint8_t k = take(in, 1);
    uint64_t off = k & 0x80 ? take(in, 2) : regs[k % (sizeof(regs) / sizeof(regs[0]))];

    fzb_enter();
    if (k & 0x40) {
        qrdma_core_reg_read(&s->core, off, 4);
    } else {
        qrdma_core_reg_write(&s->core, off, 4, take(in, 4));
    }
}

static void op_frame(struct side *s, struct input *in)
{
    static uint8_t f[QRDMA_LAN_MTU_MAX + QRDMA_LAN_FRAME_OVERHEAD];
    const uint8_t k = take(in, 1);
    size_t len = take(in, 2) % sizeof(f), i;

    for (i = 0; i < len; i++) {
        f[i] = take(in, 1);
    }
    if (k & 1 && len >= 6) {
        memcpy(f, s->mac, 6);
    }
    if (k & 2) {
        fzb_fixup(f, len, len - (len > ETH_HLEN ? ETH_HLEN : 0), true, true);
    }
    fzb_receive(s, f, len);
}

static void op_eq(struct side *s)
{
    uint64_t ctx;
    unsigned n = 0;

    fzb_enter();
    aeq_drain(s);
    while (n++ < 128 && poll_ceq(s, &ctx)) {
    }
    fzb_irq_enable(s);
}

static void run_program(struct input *in)
{
    unsigned steps;

    for (steps = 0; in->n && steps < MAX_STEPS; steps++) {
        const uint8_t b = take(in, 1);
        struct side *s = &sides[b >> 7];
        const unsigned op = (b & 0x7f) % OP_NUM;

        if (fzb_trace) {
            fprintf(stderr, "op %u: %s side %c (wire %u)\n", steps, op_name[op], 'A' + s->idx,
                    fzb_wire.count);
        }
        fzb_enter();
        switch (op) {
        case OP_SEND:
            op_send(s, in);
            break;
        case OP_RECV:
            op_recv(s, in);
            break;
        case OP_RAW_WQE:
            op_raw_wqe(s, in);
            break;
        case OP_DB:
            op_db(s, in);
            break;
        case OP_CQP:
            op_cqp(s, in);
            break;
        case OP_CQ_ARM:
            op_cq_arm(s, in);
            break;
        case OP_CQ_POLL:
            op_cq_poll(s, in);
            break;
        case OP_POKE:
            op_poke(s, in);
            break;
        case OP_RUN: {
            const uint8_t w = take(in, 1);

            if (w & 0x80) {
                fzb_run(s, w & 7);
            } else if (s->kicks) {
                const unsigned what = s->kicks;

                s->kicks = 0;
                fzb_run(s, what);
            }
            break;
        }
        case OP_WIRE:
            op_wire(in);
            break;
        case OP_TIMER: {
            const uint8_t t = take(in, 1);

            fzb_advance(1ull << (t % 40));
            break;
        }
        case OP_RESET:
            op_reset(s, in);
            break;
        case OP_REENTER:
            op_reenter(s, in);
            break;
        case OP_REG:
            op_reg(s, in);
            break;
        case OP_FRAME:
            op_frame(s, in);
            break;
        case OP_EQ:
            op_eq(s);
            break;
        case OP_PUMP:
            fzb_pump(1 + take(in, 1));
            break;
        }
    }
    /* Settle: what is in flight completes, retries run out (10 s of guest time). */
    fzb_settle(10000000000ull, 4096);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct input in = { data, size };

    fzb_init();
    fzb_up(take(&in, 1));
    run_program(&in);
    fzb_free();
    return 0;
}

#ifdef FUZZ_CORE_SEEDGEN
/* ---- the seed corpus generator: a few programs of real traffic ---------------------- */

#include <errno.h>
#include <sys/stat.h>

static uint8_t prog[4096];
static size_t plen;

static void e8(unsigned v)
{
    prog[plen++] = (uint8_t)v;
}

static void en(uint64_t v, unsigned bytes)
{
    while (bytes--) {
        e8((uint8_t)v);
        v >>= 8;
    }
}

/* SEND op: qp index into fzb_qps, SQ opcode, flags; key choice 0 (MR 1); one SGE. */
static void e_variant(unsigned v)
{
    plen = 0;
    e8(v);
}

static void e_send(int side, unsigned qpi, unsigned opcode, unsigned fl, uint32_t off,
                   uint16_t len)
{
    e8(side << 7 | OP_SEND);
    e8(qpi);
    e8(opcode);
    e8(fl);
    e8(0);                              /* remote key: MR 1 */
    en(off, 3);                         /* remote offset */
    en(0x12345678, 4);                  /* imm */
    en(1, 8);                           /* compare_add */
    en(2, 8);                           /* swap */
    if (opcode == QRDMA_SQ_OP_FAST_REG) {
        e8(0);
    } else if (opcode == QRDMA_SQ_OP_LOCAL_INV || opcode == QRDMA_SQ_OP_SEND_WITH_INV) {
        e8(1);
    } else {
        e8(0);
    }
    if (!(fl & 1)) {
        e8(1);                          /* one SGE */
        e8(0);                          /* MR 1 */
        en(off + 0x1000, 3);
        en(0x4000u | (len & 0x1fff), 2);
    }
}

static void e_op(int side, unsigned op)
{
    e8(side << 7 | op);
}

/* CQP op: modify QP fzb_qps[qpi] to state with the attribute mask; t: TIMEOUT | IPv6. */
static void e_modify(int side, unsigned qpi, uint32_t mask, unsigned state, unsigned t)
{
    e_op(side, OP_CQP);
    e8(0);                              /* modify */
    e8(qpi);
    e8(1);                              /* the whole mask from the program */
    en(mask, 4);
    e8(state);
    e8(0);                              /* cur_state */
    e8(t);
    e8(QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE | QRDMA_ACCESS_REMOTE_READ);
    e8(3);                              /* retry_cnt */
    e8(7);                              /* rnr_retry */
    e8(1);                              /* min_rnr_timer */
    e8(4);                              /* max_rd_atomic */
    e8(4);                              /* max_dest_rd_atomic */
}

static void write_seed(const char *dir, const char *name)
{
    char path[512];
    FILE *f;

    /* Run it once: a seed must not crash, and its traffic is worth a look. */
    LLVMFuzzerTestOneInput(prog, plen);
    printf("%-24s %4zu bytes  frames A %d B %d  guest errors A %d B %d\n", name, plen,
           sides[0].frames_sent, sides[1].frames_sent, sides[0].guest_errors,
           sides[1].guest_errors);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (!f || fwrite(prog, 1, plen, f) != plen || fclose(f)) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    plen = 0;
}

int main(int argc, char **argv)
{
    static const unsigned ops[] = {
        QRDMA_SQ_OP_SEND, QRDMA_SQ_OP_SEND_WITH_IMM, QRDMA_SQ_OP_RDMA_WRITE,
        QRDMA_SQ_OP_RDMA_WRITE_WITH_IMM, QRDMA_SQ_OP_RDMA_READ, QRDMA_SQ_OP_ATOMIC_CMP_AND_SWP,
        QRDMA_SQ_OP_ATOMIC_FETCH_AND_ADD, QRDMA_SQ_OP_SEND_WITH_INV, QRDMA_SQ_OP_LOCAL_INV,
        QRDMA_SQ_OP_FAST_REG, QRDMA_SQ_OP_NOP,
    };
    const char *dir = argc > 1 ? argv[1] : "seeds-core-dp";
    char name[64];
    unsigned q, o;

    if (mkdir(dir, 0777) && errno != EEXIST) {
        perror(dir);
        return 1;
    }
    for (q = 0; q < FZB_NQPS; q++) {
        for (o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
            unsigned c;

            e_variant((q + o) % 4 == 3 ? FZB_PAGED_SD : 0);
            e_send(0, q, ops[o], 0, 0x100 * o, fzb_qps[q] == FZB_QP_UD ? 500 : 3000);
            e_op(0, OP_PUMP);
            e8(255);
            for (c = 1; c < FZB_NCQ; c++) {
                e_op(1, OP_CQ_POLL);
                e8(c - 1);
                e8(8);
                e_op(0, OP_CQ_POLL);
                e8(c - 1);
                e8(8);
            }
            snprintf(name, sizeof(name), "qp%u-op%u", fzb_qps[q], ops[o]);
            write_seed(dir, name);
        }
    }
    /* Inline, unsignaled, lost frames and timers, CQ overflow, re-entry, reset. */
    e_variant(0);
    e_send(0, 0, QRDMA_SQ_OP_SEND, 1, 0, 0);
    e_op(0, OP_PUMP);
    e8(16);
    write_seed(dir, "inline");
    e_variant(0);
    for (o = 0; o < 4; o++) {
        e_send(0, 0, QRDMA_SQ_OP_RDMA_WRITE, 0, 0, 5000);
        e_op(0, OP_WIRE);
        e8(2);
        e_op(0, OP_TIMER);
        e8(27);
    }
    write_seed(dir, "loss-timer");
    e_variant(FZB_FAULTS);
    for (o = 0; o < 6; o++) {
        e_send(0, o % 2 ? 0 : 6, o % 3 ? QRDMA_SQ_OP_RDMA_WRITE : QRDMA_SQ_OP_RDMA_READ, 0,
               0x1000 * o, 5000);
        e_op(0, OP_PUMP);
        e8(64);
        e_op(0, OP_TIMER);
        e8(26);
    }
    write_seed(dir, "faults");
    e_variant(FZB_PAGED_SD);
    for (o = 0; o < 8; o++) {
        e_send(1, o % FZB_NQPS, QRDMA_SQ_OP_SEND, 0, 0, 100);
    }
    e_op(0, OP_PUMP);
    e8(255);
    write_seed(dir, "paged-sd");
    e_variant(0);
    for (o = 0; o < 8; o++) {
        e_send(0, 2, QRDMA_SQ_OP_SEND, 0, 0, 100);
    }
    e_op(0, OP_PUMP);
    e8(255);
    write_seed(dir, "ud-overflow");
    e_variant(0);
    e_op(1, OP_REENTER);
    e8(2);                              /* reset from the next interrupt */
    e8(0);
    e_op(1, OP_CQ_ARM);
    e8(FZB_CQ_CEQ - 1);
    e8(2);
    e_send(0, 3, QRDMA_SQ_OP_SEND, 0, 0, 100);
    e_op(0, OP_PUMP);
    e8(255);
    write_seed(dir, "reenter-reset");
    /* The VIRTMAP RC pair reconnected over IPv6 (GID index 1), then traffic. */
    e_variant(0);
    for (o = 0; o < 2; o++) {
        e_modify(o, 6, 0, QRDMA_QPS_RESET, 0);
        e_modify(o, 6, QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_PORT | QRDMA_QP_ATTR_ACCESS_FLAGS,
                 QRDMA_QPS_INIT, 0);
        e_modify(o, 6, QRDMA_QP_ATTR_AV | QRDMA_QP_ATTR_PATH_MTU | QRDMA_QP_ATTR_DEST_QPN |
                 QRDMA_QP_ATTR_RQ_PSN | QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC |
                 QRDMA_QP_ATTR_MIN_RNR_TIMER, QRDMA_QPS_RTR, 0x80 | 14);
        e_modify(o, 6, QRDMA_QP_ATTR_SQ_PSN | QRDMA_QP_ATTR_TIMEOUT | QRDMA_QP_ATTR_RETRY_CNT |
                 QRDMA_QP_ATTR_RNR_RETRY | QRDMA_QP_ATTR_MAX_QP_RD_ATOMIC, QRDMA_QPS_RTS, 14);
    }
    e_send(0, 6, QRDMA_SQ_OP_SEND, 0, 0, 2000);
    e_send(0, 6, QRDMA_SQ_OP_RDMA_READ, 0, 0, 2000);
    e_op(0, OP_PUMP);
    e8(255);
    write_seed(dir, "ipv6");
    e_variant(0);
    e_op(0, OP_RESET);
    e8(2);
    e_send(0, 0, QRDMA_SQ_OP_SEND, 0, 0, 100);
    e_op(0, OP_PUMP);
    e8(255);
    write_seed(dir, "reset-rebringup");
    e_variant(0);
    e_send(0, 0, QRDMA_SQ_OP_RDMA_READ, 0, 0, 8000);
    e_op(0, OP_WIRE);
    e8(0x86);                           /* corrupt, fixed up */
    e8(0);
    en(40, 2);
    e8(0xff);
    e_op(0, OP_PUMP);
    e8(255);
    write_seed(dir, "corrupt-fixed");
    return 0;
}
#endif
