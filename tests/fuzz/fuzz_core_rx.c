/*
 * libFuzzer harness for the receive path on the device's own callbacks:
 * RoCEv2 frames into a brought-up device core (side B of fuzz_core_bed.h)
 * through qrdma_core_lan_receive(), so that the transport works through the
 * core's real get_recv (RQ and SRQ WQEs from guest rings), completion (CQEs,
 * CQ overflow, CEQ), MR translation (rkeys of every kind of MR: LEVELS 0 and
 * 1, fast-register, DMA) and invalidation callbacks. Side A is a live peer.
 *
 * Before the program runs, B has requests in flight on its RC QP (an RDMA
 * READ of three packets, a FETCH_ADD, a SEND) whose frames never reached
 * A, so that ACKs, NAKs and responses in the input have something to match.
 *
 * Input: a variant byte (fzb_up: B's FPM behind a paged SD, the transport's
 * fault injection), then a program of ops (one byte each, modulo OP_NUM,
 * then operands):
 *
 *   TEMPLATE  a frame built from a template (IPv4, or IPv6 to GID index 1): a QP of B (or any QPN), any
 *             opcode or one of the QP's transport, a PSN near the expected
 *             one (or the next in a per-QP sequence, or raw), the extended
 *             headers the opcode carries with keys and addresses of B's MRs
 *             or raw, a payload of any length; then maybe mutated; lengths,
 *             IPv4 checksum and ICRC recomputed or not
 *   RAW       raw bytes as a frame (the seeds are captured frames), maybe
 *             with lengths and ICRC fixed
 *   MUTATE    the last frame again, bytes flipped, maybe truncated, fixed up
 *   PUMP      both sides' work and the wire (B's answers reach A or are
 *             dropped)
 *   TIMER     advance the clock, fire timers
 *   POLL      take CQEs from a CQ of B and publish HEAD
 *   RECV      post a receive WQE to an RQ of B (or the SRQ)
 *   REQUEST   B posts a request on a QP (its frames are dropped)
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
#include "qrdma_sw.h"
#include "sw_int.h"

#define MAX_STEPS 128
#define FRAME_MAX (QRDMA_LAN_MTU_MAX + QRDMA_LAN_FRAME_OVERHEAD)

enum { OP_TEMPLATE, OP_RAW, OP_MUTATE, OP_PUMP, OP_TIMER, OP_POLL, OP_RECV, OP_REQUEST, OP_NUM };

static const char *const op_name[OP_NUM] = {
    "TEMPLATE", "RAW", "MUTATE", "PUMP", "TIMER", "POLL", "RECV", "REQUEST",
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

static uint8_t last[FRAME_MAX];
static size_t last_len;
static uint32_t next_psn[N_QP];

#define TARGET (&sides[1])
#define PEER (&sides[0])

static void deliver(const uint8_t *f, size_t len)
{
    if (len > sizeof(last)) {
        len = sizeof(last);
    }
    memcpy(last, f, len);
    last_len = len;
    fzb_receive(TARGET, f, len);
}

static uint8_t qp_type(uint32_t q)
{
    struct qrdma_qp *qp = qrdma_qp_get(&TARGET->core, q);

    return qp ? qp->type : QRDMA_QP_TYPE_RC;
}

/* A key of B's MRs (or a bad or raw one) and an address inside it. */
static uint32_t pick_rkey(struct input *in, uint64_t *va, uint32_t len)
{
    const uint8_t b = take(in, 1);
    uint32_t off = take(in, 2), key;
    uint64_t base, span;

    switch (b & 7) {
    case 0:
    case 1:
        key = MR_STAG, base = IOVA, span = DATA_LEN;
        break;
    case 2:
        key = FZB_MR_FR_STAG, base = FZB_MR_FR_IOVA, span = 4 * 4096;
        break;
    case 3:
        key = FZB_MR_L1_STAG, base = FZB_MR_L1_IOVA, span = 8 * 4096 - 0x100;
        break;
    case 4:
        key = FZB_MR_DMA_STAG, base = DATA, span = DATA_LEN;
        break;
    case 5:
        key = MR_STAG ^ (1u + (b >> 3)), base = IOVA, span = DATA_LEN;
        break;
    default:
        *va = take(in, 8);
        return take(in, 4);
    }
    if (b & 0x80) {
        /* At the end of the MR: the last byte, or just past it. */
        *va = base + span - len + ((b >> 6) & 1);
    } else {
        *va = base + off % span;
    }
    return key;
}

/*
 * A RoCEv2 frame for B's QP q: Ethernet, IPv4 (A to B), UDP, BTH, the
 * extended headers of the opcode, payload, ICRC. Returns its length.
 */
static size_t build(struct input *in, uint8_t *f)
{
    const uint8_t ip = take(in, 1), qb = take(in, 1), ob = take(in, 1), fl = take(in, 1);
    const bool v6 = ip & 1;
    const uint32_t q = qb < 0xf0 ? fzb_qps[qb % FZB_NQPS] : take(in, 3);
    const uint8_t type = qp_type(q < N_QP ? q : 0);
    uint32_t m, psn, plen;
    uint8_t opcode, *l3 = f + ETH_HLEN, *udp = l3 + (v6 ? IPV6_HLEN : IPV4_HLEN);
    uint8_t *bth = udp + UDP_HLEN, *h;
    unsigned pad, i;
    size_t l3len;

    if (ob >= 0xe0) {
        opcode = take(in, 1);
    } else if (type == QRDMA_QP_TYPE_UD) {
        opcode = OP_UD | (OP_SEND_ONLY + (ob & 1));
    } else if (type == QRDMA_QP_TYPE_UC) {
        opcode = OP_UC | (ob % 12);
    } else {
        opcode = ob % 24;
    }
    m = qsw_opmask[opcode];
    switch ((fl >> 1) & 3) {
    case 0:
        plen = take(in, 1);
        break;
    case 1:
        plen = 1024;                    /* the path MTU */
        break;
    case 2:
        plen = take(in, 2) % 4200;
        break;
    default:
        plen = 4 * (take(in, 1) & 7);
        break;
    }
    if (!(m & M_PAYLOAD) && !(fl & 0x80)) {
        plen = 0;
    }
    pad = (4 - (plen & 3)) & 3;

    /* Ethernet and IPv4 (A 10.0.0.1 to B 10.0.0.2) or IPv6 (GID index 1). */
    memcpy(f, TARGET->mac, 6);
    memcpy(f + 6, PEER->mac, 6);
    if (v6) {
        st16(f + 12, ETHERTYPE_IPV6);
        memset(l3, 0, IPV6_HLEN);
        l3[0] = 0x60;
        l3[6] = 17;
        l3[7] = 64;
        fzb_gid6(PEER, l3 + 8);
        fzb_gid6(TARGET, l3 + 24);
    } else {
        st16(f + 12, ETHERTYPE_IPV4);
        memset(l3, 0, IPV4_HLEN);
        l3[0] = 0x45;
        st16(l3 + 6, 0x4000);
        l3[8] = 64;
        l3[9] = 17;
        memcpy(l3 + 12, PEER->gid + 12, 4);
        memcpy(l3 + 16, TARGET->gid + 12, 4);
    }
    st16(udp, 0xc000 | (uint16_t)take(in, 1));
    st16(udp + 2, QSW_UDP_PORT);
    st16(udp + 6, 0);

    /* BTH */
    switch ((fl >> 3) & 3) {
    case 0:
        psn = PSN(PEER) + (int8_t)take(in, 1);
        break;
    case 1:
        psn = PSN(TARGET) + (int8_t)take(in, 1);
        break;
    case 2:
        psn = q < N_QP ? next_psn[q]++ : 0;
        break;
    default:
        psn = take(in, 3);
        break;
    }
    bth[0] = opcode;
    bth[1] = (fl & 1 ? BTH_SE : 0) | pad << BTH_PAD_SHIFT;
    st16(bth + 2, fl & 0x40 ? (uint16_t)take(in, 2) : 0xffff);
    bth[4] = 0;
    st24(bth + 5, q);
    bth[8] = fl & 0x20 ? BTH_ACKREQ : 0;
    st24(bth + 9, psn);

    /* Extended headers in wire order. */
    h = bth + BTH_LEN;
    if (m & M_DETH) {
        const uint8_t d = take(in, 1);

        st32(h, d & 1 ? (uint32_t)take(in, 4) : QKEY);
        st32(h + 4, d & 2 ? (uint32_t)take(in, 3) : FZB_QP_UD);
        h += DETH_LEN;
    }
    if (m & M_RETH) {
        uint64_t va;
        const uint8_t d = take(in, 1);
        uint32_t len = d & 1 ? (uint32_t)take(in, 4) : d & 2 ? 3 * 1024 : plen;
        uint32_t key = pick_rkey(in, &va, len);

        st64(h, va);
        st32(h + 8, key);
        st32(h + 12, len);
        h += RETH_LEN;
    }
    if (m & M_ATMETH) {
        uint64_t va;
        uint32_t key = pick_rkey(in, &va, 8);

        st64(h, take(in, 1) & 1 ? va : va & ~7ull);
        st32(h + 8, key);
        st64(h + 12, take(in, 8));
        st64(h + 20, take(in, 8));
        h += ATMETH_LEN;
    }
    if (m & M_AETH) {
        const uint8_t syn = take(in, 1);

        /* Mostly an ACK without credits; NAKs and RNR NAKs sometimes. */
        h[0] = syn < 0x80 ? AETH_ACK | AETH_CREDIT_INVALID : syn;
        st24(h + 1, take(in, 3));
        h += AETH_LEN;
    }
    if (m & M_ATMACK) {
        st64(h, take(in, 8));
        h += ATMACK_LEN;
    }
    if (m & M_IMM) {
        st32(h, take(in, 4));
        h += 4;
    }
    if (m & M_IETH) {
        uint64_t va;

        st32(h, pick_rkey(in, &va, 0));
        h += IETH_LEN;
    }
    if (h + plen + pad + ICRC_LEN > f + FRAME_MAX) {
        plen = f + FRAME_MAX - h - pad - ICRC_LEN;
    }
    for (i = 0; i < plen + pad; i++) {
        h[i] = (uint8_t)(i * 7 + psn);
    }
    h += plen + pad + ICRC_LEN;
    l3len = h - l3;
    fzb_fixup(f, h - f, l3len, true, true);
    return h - f;
}

static void mutate(struct input *in, uint8_t *f, size_t *len)
{
    const uint8_t k = take(in, 1);
    unsigned n = k & 7;

    while (n-- && *len) {
        f[take(in, 2) % *len] ^= (uint8_t)take(in, 1);
    }
    if (k & 0x08 && *len > 1) {
        *len = 1 + take(in, 2) % *len;
    }
    if (k & 0x10) {
        fzb_fixup(f, *len, *len - (*len > ETH_HLEN ? ETH_HLEN : 0), true, false);
    }
    if (k & 0x20) {
        fzb_fixup(f, *len, 0, false, true);
    }
}

static void post_request(struct side *s, uint32_t q, uint8_t op, uint32_t len, uint32_t off)
{
    struct wqe w = { .op = op, .nsge = 1, .remote_off = off,
                     .sge = { { 0x30000 + off, len, 0 } } };

    if (op == QRDMA_SQ_OP_ATOMIC_CMP_AND_SWP || op == QRDMA_SQ_OP_ATOMIC_FETCH_AND_ADD) {
        w.sge[0].len = 8;
        w.remote_off &= ~7u;
        w.compare_add = 5;
    }
    if (q == FZB_QP_UD) {
        w.ah = FZB_AH_ID;
        w.dest_qpn = FZB_QP_UD;
        w.qkey = QKEY;
    }
    post_send(s, q, &w);
    db(s, 0, QRDMA_DB_SQ, q);
}

#ifdef FUZZ_CORE_SEEDGEN
/* B's requests in flight; their frames are taken off the wire into held. */
static struct fzb_wire held;
#endif

static void rx_setup(unsigned variant)
{
    unsigned i;

    fzb_up(variant);
    for (i = 0; i < N_QP; i++) {
        next_psn[i] = PSN(PEER);
    }
    last_len = 0;
    post_request(TARGET, FZB_QP_RC, QRDMA_SQ_OP_RDMA_READ, 3 * 1024, 0x2000);
    post_request(TARGET, FZB_QP_RC, QRDMA_SQ_OP_ATOMIC_FETCH_AND_ADD, 8, 0x3000);
    post_request(TARGET, FZB_QP_RC, QRDMA_SQ_OP_SEND, 2000, 0x4000);
    fzb_run(TARGET, TARGET->kicks);
    TARGET->kicks = 0;
#ifdef FUZZ_CORE_SEEDGEN
    held = fzb_wire;                    /* 450 KB: only the seed generator replays them */
#endif
    fzb_down();
}

static void run_program(struct input *in)
{
    static uint8_t f[FRAME_MAX];
    unsigned steps;

    for (steps = 0; in->n && steps < MAX_STEPS; steps++) {
        const unsigned op = take(in, 1) % OP_NUM;
        size_t len, i;

        if (fzb_trace) {
            fprintf(stderr, "op %u: %s (wire %u)\n", steps, op_name[op], fzb_wire.count);
        }
        fzb_enter();
        switch (op) {
        case OP_TEMPLATE: {
            const uint8_t k = take(in, 1);

            len = build(in, f);
            if (k & 1) {
                mutate(in, f, &len);
            }
            deliver(f, len);
            break;
        }
        case OP_RAW: {
            const uint8_t k = take(in, 1);

            len = take(in, 2) % FRAME_MAX;
            for (i = 0; i < len; i++) {
                f[i] = take(in, 1);
            }
            if (k & 1 && len >= 6) {
                memcpy(f, TARGET->mac, 6);
            }
            if (k & 2) {
                fzb_fixup(f, len, len - (len > ETH_HLEN ? ETH_HLEN : 0), true, true);
            }
            deliver(f, len);
            break;
        }
        case OP_MUTATE:
            len = last_len;
            memcpy(f, last, len);
            mutate(in, f, &len);
            deliver(f, len);
            break;
        case OP_PUMP: {
            const uint8_t k = take(in, 1);

            if (k & 1) {
                fzb_down();             /* B's answers are lost */
            }
            fzb_pump(1 + (k >> 1));
            break;
        }
        case OP_TIMER:
            fzb_advance(1ull << (take(in, 1) % 40));
            break;
        case OP_POLL: {
            const uint32_t cq = 1 + take(in, 1) % (FZB_NCQ - 1);
            struct cqe e;
            unsigned n = 16;

            while (n-- && cq_take(TARGET, cq, &e)) {
                if (fzb_trace) {
                    fprintf(stderr, "  CQ %u: QP %u WQE %u opcode %u status %u len %u\n", cq,
                            e.qp, e.wqe_index, e.opcode, e.status, e.byte_len);
                }
            }
            cq_publish(TARGET, cq);
            aeq_drain(TARGET);
            fzb_irq_enable(TARGET);
            break;
        }
        case OP_RECV: {
            const uint32_t q = fzb_qps[take(in, 1) % FZB_NQPS];
            const uint32_t off = take(in, 2);
            const struct sge sge = { FZB_RECV_BUF(q) + off % 0x3000, take(in, 2), 0 };

            if (q == FZB_QP_SRQ) {
                uint32_t n = TARGET->srq_posted++;

                write_rq_wqe(TARGET, SRQ_RING + ((uint64_t)(n & ((1u << TARGET->srq_log2) - 1))
                                                 << TARGET->srq_stride_log2),
                             !((n >> TARGET->srq_log2) & 1), 1, &sge, 0);
                w64(TARGET, SRQ_SHADOW, TARGET->srq_posted);
            } else {
                post_recv_n(TARGET, q, 1, &sge);
                db(TARGET, 0, QRDMA_DB_RQ, q);
            }
            break;
        }
        case OP_REQUEST: {
            static const uint8_t ops[] = {
                QRDMA_SQ_OP_RDMA_READ, QRDMA_SQ_OP_ATOMIC_CMP_AND_SWP, QRDMA_SQ_OP_SEND,
                QRDMA_SQ_OP_RDMA_WRITE,
            };
            const uint8_t k = take(in, 1);

            post_request(TARGET, fzb_qps[(k >> 2) % FZB_NQPS], ops[k & 3],
                         (uint32_t)take(in, 2) % 8192, 0x1000);
            fzb_run(TARGET, TARGET->kicks);
            TARGET->kicks = 0;
            fzb_down();
            break;
        }
        }
    }
    fzb_settle(10000000000ull, 1024);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct input in = { data, size };

    fzb_init();
    rx_setup(take(&in, 1));
    run_program(&in);
    fzb_free();
    return 0;
}

#ifdef FUZZ_CORE_SEEDGEN
/* ---- the seed corpus generator: frames A sends to B in real traffic, as RAW ops --------- */

#include <errno.h>
#include <sys/stat.h>

static uint8_t prog[1 << 17];
static size_t plen;

static unsigned seed_variant;

static void capture(int from, const uint8_t *frame, size_t len)
{
    if (!plen) {
        prog[plen++] = (uint8_t)seed_variant;
    }
    if (from != 0 || plen + 4 + len > sizeof(prog)) {
        return;
    }
    prog[plen++] = OP_RAW;
    prog[plen++] = 0;
    prog[plen++] = (uint8_t)len;
    prog[plen++] = (uint8_t)(len >> 8);
    memcpy(prog + plen, frame, len);
    plen += len;
}

static void write_seed(const char *dir, const char *name)
{
    char path[512];
    FILE *f;

    fzb_capture = NULL;
    if (!plen) {
        printf("%-24s no frames\n", name);
        return;
    }
    LLVMFuzzerTestOneInput(prog, plen);
    printf("%-24s %6zu bytes  guest errors B %d\n", name, plen, TARGET->guest_errors);
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
    static const uint8_t ops[] = {
        QRDMA_SQ_OP_SEND, QRDMA_SQ_OP_SEND_WITH_IMM, QRDMA_SQ_OP_RDMA_WRITE,
        QRDMA_SQ_OP_RDMA_WRITE_WITH_IMM, QRDMA_SQ_OP_RDMA_READ, QRDMA_SQ_OP_ATOMIC_CMP_AND_SWP,
        QRDMA_SQ_OP_ATOMIC_FETCH_AND_ADD, QRDMA_SQ_OP_SEND_WITH_INV,
    };
    static const uint32_t qps[] = { FZB_QP_RC, FZB_QP_UC, FZB_QP_UD, FZB_QP_SRQ, FZB_QP_VIRT };
    const char *dir = argc > 1 ? argv[1] : "seeds-core-rx";
    char name[64];
    unsigned q, o, i;

    if (mkdir(dir, 0777) && errno != EEXIST) {
        perror(dir);
        return 1;
    }
    fzb_init();

    /* A's answers to B's requests in flight. */
    rx_setup(seed_variant);
    fzb_capture = capture;
    for (i = 0; i < held.count; i++) {
        const struct fzb_frame *f = &held.f[(held.head + i) % FZB_WIRE_MAX];

        fzb_receive(PEER, f->data, f->len);
    }
    fzb_settle(1000000000ull, 256);
    write_seed(dir, "responses");

    /* Template frames over IPv6: a UD SEND_ONLY, an RC SEND_ONLY. */
    {
        static const uint8_t ud6[] = { 0, OP_TEMPLATE, 0, 1, 2, 0, 0, 64, 0, 0, 0,
                                       OP_POLL, FZB_CQ_TINY - 1 };
        static const uint8_t rc6[] = { 0, OP_TEMPLATE, 0, 1, 0, OP_SEND_ONLY, 0, 64, 0, 0,
                                       OP_POLL, FZB_CQ_RECV - 1 };

        memcpy(prog, ud6, sizeof(ud6));
        plen = sizeof(ud6);
        write_seed(dir, "template-ud-ipv6");
        memcpy(prog, rc6, sizeof(rc6));
        plen = sizeof(rc6);
        write_seed(dir, "template-rc-ipv6");
    }

    /* Every opcode on every QP type, one packet and several. */
    for (q = 0; q < sizeof(qps) / sizeof(qps[0]); q++) {
        for (o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
            for (i = 0; i < 2; i++) {
                uint32_t len = qps[q] == FZB_QP_UD ? (i ? 1000 : 60) : (i ? 3000 : 100);

                seed_variant = (q + o + i) % 4 == 3 ? FZB_PAGED_SD : 0;
                rx_setup(seed_variant);
                fzb_capture = capture;
                post_request(PEER, qps[q], ops[o], len, 0x800 * o);
                fzb_settle(1000000000ull, 256);
                snprintf(name, sizeof(name), "qp%u-op%u-%u", qps[q], ops[o], len);
                write_seed(dir, name);
            }
        }
    }
    return 0;
}
#endif
