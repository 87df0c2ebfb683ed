/*
 * libFuzzer harness for the receive path of the software RoCEv2 transport
 * (host-backend/sw): arbitrary incoming frames against live QPs.
 *
 * Each input starts two engines joined by an in-memory wire, the target
 * (node 0) and a well-behaved peer (node 1), with a fake clock and per
 * node seven memory regions, each its own heap buffer of the exact size
 * (so ASan sees any access past one). Per node eight QPs, paired across
 * the wire: RC in RTS over IPv4 (MTU from the config byte) and over IPv6
 * (PSNs about to wrap), UC, UD, RC in RTR, RC in ERR, RC in RESET and a
 * UC QP with the largest QPN; receive WRs posted on each; unless the
 * config byte says otherwise, the target has a SEND, WRITE, READ,
 * CMP_SWAP, FETCH_ADD and more outstanding on the wire, so that ACKs and
 * responses have something to match. The rest of the input is a program:
 *
 *   config byte: bits 0-2 MTU of QP 0 (0: 256), bit 3 QP 0 over IPv6,
 *     bits 4-5 posts the callbacks may make (0, 1, 4, 16), bit 6 no
 *     initial traffic
 *   callback byte: which callbacks post a send WR (and query a QP), as
 *     the API allows from inside a callback: bit 0 complete, 1 send_frame,
 *     2 get_recv, 3 qp_event, 4 sge_read/sge_write; bit 5 onto another
 *     QP of the engine rather than the callback's own
 *   then up to 256 ops, one byte each (low 4 bits pick from op_table):
 *   FRAME   ctl, then a template (qp, opcode, PSN delta, BTH flags, the
 *           opcode's extended headers, payload length and fill, length
 *           tweak) or raw bytes (u16 length, bytes); ctl picks template or
 *           raw, the target node, mutations (count, then offset and xor
 *           each) and whether to recompute the IP/UDP lengths and IPv4
 *           checksum, and the ICRC, after mutating
 *   REPLAY  one of the last 16 frames a node sent, to the other node,
 *           with a ctl byte as FRAME (mutations, recomputing)
 *   POLL    node and budget
 *   RUN     deliver the wire and poll both engines, some rounds, the clock
 *           jumping to the next deadline when allowed
 *   CLOCK   advance the fake clock, or jump to the next deadline
 *   POST_SEND  a send WR of any opcode on any QP of either node
 *   POST_RECV  receive WRs
 *   MODIFY  ERR, RESET, reconnect both ends, SQD, back to RTS, a raw
 *           modify with every attribute from the input, destroy and
 *           re-create, RESET to RTR
 *   MR      invalidate, re-register with a new key, change access
 *   WIRE    deliver, drop, reorder or duplicate frames on the wire; drop them
 *           all; turn a node's fault injection (loss, duplication,
 *           reordering, corruption, delay) on or off
 *
 * and the input ends with a settling run, every QP moved to ERR and the
 * checks below.
 *
 * The callbacks behave as an embedder does: they validate keys, PDs,
 * bounds and access and return an error for what a hostile peer can ask
 * for. They abort (the fuzzer's finding) on what the engine itself must
 * never do: a callback for a QP that is not live; gathering or scattering
 * through an SGE list that is not one the engine holds (a posted send WR
 * not yet completed, the receive WR it popped), or in the wrong direction
 * (a receive into a SEND's buffers), or past the end of the list; moving
 * data through an rkey outside a range rkey_check accepted; a misaligned
 * atomic; popping a second receive WR while holding one; a completion
 * for a WR not outstanding, out of order, reported twice, or a success
 * for an unsignaled WR; a frame it emits that it would not accept itself
 * (lengths, checksums, ICRC); SQ_DRAINED while a WQE is outstanding; a
 * poll that keeps saying work is left and does none; after ERR, a receive WR not flushed, a signaled send WR
 * never completed, or an engine that is not idle. ASan and UBSan catch
 * the rest, LeakSanitizer what an input leaves allocated.
 *
 * Built with -DFUZZ_SW_SEEDGEN and a plain compiler, the same file is the
 * generator of the seed corpus (tests/fuzz/seeds-sw/): it runs real
 * traffic between the two engines and writes programs that inject the
 * captured frames.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sw_int.h"
#include "fuzz_frame.h"

#define FZ_NQP        8
#define FZ_NMR        7
#define FZ_RQ         32        /* receive WRs the harness keeps per QP */
#define FZ_SQ_TRACK   64        /* send WRs tracked per QP */
#define FZ_WIRE_MAX   512       /* frames on the wire; more are lost */
#define FZ_RECENT     16        /* frames each node sent, kept for REPLAY */
#define FZ_APPROVALS  1024
#define FZ_MAX_STEPS  256
#define FZ_SPINS      4         /* polls in a row that claim work and do none */
#define FZ_BUF        (QSW_MAX_FRAME + 512)   /* the longest template, with trailing bytes */

#define BUG(...)                                                                   \
    do {                                                                           \
        fprintf(stderr, "fuzz_sw_rx: engine bug: " __VA_ARGS__);                   \
        fputc('\n', stderr);                                                       \
        abort();                                                                   \
    } while (0)

/* ---- state ---------------------------------------------------------------------- */

enum { MR_RECV, MR_LOCAL, MR_RW, MR_ATOM, MR_RO, MR_OTHERPD, MR_INV };

struct fz_mr {
    uint32_t key, pd, access;
    uint64_t va;
    uint32_t len;
    uint8_t gen;
    bool valid;
    uint8_t *buf;               /* exactly len bytes */
};

/* A send WR posted and not known to be finished. */
struct fz_swr {
    uint64_t wr_id;
    uint32_t opcode;
    bool signaled, inl;
    uint32_t num_sge;
    struct qsw_sge sg[QSW_MAX_SGE];
};

struct fz_node;

struct fz_qp {
    struct fz_node *node;
    struct qsw_qp *qp;
    unsigned idx;
    uint32_t qpn, pd;
    enum qsw_qp_type type;
    /* the receive queue, which belongs to the embedder */
    struct qsw_recv_wr rq[FZ_RQ];
    unsigned rq_head, rq_tail;
    bool held;                  /* the engine popped held_wr and has not completed it */
    struct qsw_recv_wr held_wr;
    uint64_t recv_seq, send_seq;
    /* posted send WRs: [sq_head, sq_tail), in posting order */
    struct fz_swr sq[FZ_SQ_TRACK];
    unsigned sq_head, sq_tail;
};

struct fz_approval {
    uint32_t pd, rkey, access;
    uint64_t va, len;
};

struct fz_node {
    int idx;
    struct qsw_engine *eng;
    uint8_t mac[6];
    uint8_t gid4[16], gid6[16];
    struct fz_mr mr[FZ_NMR];
    struct fz_qp qp[FZ_NQP];
    struct fz_approval appr[FZ_APPROVALS];
    unsigned nappr;
    bool appr_overflow;
    uint64_t next;              /* what the last poll returned */
    bool corrupting;            /* fault injection flips bits in what it sends */
    uint64_t progress;          /* frames sent, completions and events so far */
    unsigned spins;
    unsigned nrecent;
};

struct fz_frame {
    struct fz_frame *next;
    int to;
    size_t len;
    uint8_t data[];
};

static struct {
    struct fz_node node[2];
    uint64_t now;
    struct fz_frame *qhead, *qtail;
    unsigned qlen;
    unsigned reposts;           /* posts the callbacks may still make */
    uint8_t cb_plan;            /* CB_*: which callbacks post */
    unsigned in_cb;
    uint8_t cfg;
#ifdef FUZZ_SW_SEEDGEN
    int capture_to;             /* frames sent towards this node are captured, not queued */
    void (*capture)(const uint8_t *f, size_t len);
#endif
} fz;

/* The callback byte: which callbacks post a send WR. */
#define CB_COMPLETE   0x01
#define CB_SEND_FRAME 0x02
#define CB_GET_RECV   0x04
#define CB_EVENT      0x08
#define CB_SGE        0x10
#define CB_OTHER_QP   0x20

static void cb_post(struct fz_node *n, struct fz_qp *q, unsigned where);
static bool trace;              /* FUZZ_SW_TRACE=1: ops and polls on stderr, to read a finding */

/* Outside fz: kept across inputs. */
static struct qsw_engine *checker;          /* parses every frame the engines emit */
static uint8_t recent[2][FZ_RECENT][QSW_MAX_FRAME];
static size_t recent_len[2][FZ_RECENT];

/* ---- what the QPs are ------------------------------------------------------------- */

struct qp_spec {
    uint32_t qpn[2];
    enum qsw_qp_type type;
    bool v6;
    enum qsw_mtu mtu;
    uint32_t access;
    uint8_t rd_atomic, timeout, retry, rnr_retry, min_rnr;
    uint32_t psn[2];            /* sq_psn of node 0's QP, of node 1's */
    uint8_t state;              /* node 0's QP ends in this state; node 1's in RTS */
};

#define ACC_ALL (QSW_ACCESS_REMOTE_WRITE | QSW_ACCESS_REMOTE_READ | QSW_ACCESS_REMOTE_ATOMIC)
#define UD_QKEY 0x11111111u

static const struct qp_spec specs[FZ_NQP] = {
    { { 0x11, 0x21 }, QSW_QPT_RC, false, QSW_MTU_256, ACC_ALL, 4, 8, 3, 2, 1, { 100, 5000 }, QSW_QPS_RTS },
    { { 0x12, 0x22 }, QSW_QPT_RC, true, QSW_MTU_1024,
      QSW_ACCESS_REMOTE_WRITE | QSW_ACCESS_REMOTE_READ, 1, 0, 7, 7, 0, { 0xfffff0, 0xfffffd }, QSW_QPS_RTS },
    { { 0x13, 0x23 }, QSW_QPT_UC, false, QSW_MTU_512, QSW_ACCESS_REMOTE_WRITE, 0, 0, 0, 0, 0, { 10, 20 }, QSW_QPS_RTS },
    { { 0x14, 0x24 }, QSW_QPT_UD, false, QSW_MTU_1024, 0, 0, 0, 0, 0, 0, { 0, 0 }, QSW_QPS_RTS },
    { { 0x15, 0x25 }, QSW_QPT_RC, false, QSW_MTU_4096, ACC_ALL, 2, 10, 1, 0, 3, { 300, 400 }, QSW_QPS_RTR },
    { { 0x16, 0x26 }, QSW_QPT_RC, false, QSW_MTU_256, ACC_ALL, 1, 4, 7, 7, 1, { 1, 2 }, QSW_QPS_ERR },
    { { 0x17, 0x27 }, QSW_QPT_RC, true, QSW_MTU_512, ACC_ALL, 1, 4, 7, 7, 1, { 3, 4 }, QSW_QPS_RESET },
    { { 0xfffffe, 0x800001 }, QSW_QPT_UC, true, QSW_MTU_256, ACC_ALL, 0, 0, 0, 0, 0, { 0xffffff, 0 }, QSW_QPS_RTS },
};

static const struct { uint32_t pd, access, len; } mr_specs[FZ_NMR] = {
    [MR_RECV] = { 1, QSW_ACCESS_LOCAL_WRITE, 8192 },
    [MR_LOCAL] = { 1, QSW_ACCESS_LOCAL_WRITE, 8192 },
    [MR_RW] = { 1, QSW_ACCESS_LOCAL_WRITE | QSW_ACCESS_REMOTE_WRITE | QSW_ACCESS_REMOTE_READ, 16384 },
    [MR_ATOM] = { 1, QSW_ACCESS_LOCAL_WRITE | QSW_ACCESS_REMOTE_ATOMIC | QSW_ACCESS_REMOTE_READ, 64 },
    [MR_RO] = { 1, QSW_ACCESS_REMOTE_READ, 4096 },
    [MR_OTHERPD] = { 2, QSW_ACCESS_LOCAL_WRITE | ACC_ALL, 4096 },
    [MR_INV] = { 1, QSW_ACCESS_LOCAL_WRITE | ACC_ALL, 4096 },
};

static enum qsw_mtu spec_mtu(unsigned i)
{
    if (i == 0 && (fz.cfg & 7)) {
        return (enum qsw_mtu)(1 + ((fz.cfg & 7) - 1) % 5);
    }
    return specs[i].mtu;
}

static bool spec_v6(unsigned i)
{
    return i == 0 ? (fz.cfg & 8) != 0 : specs[i].v6;
}

/* ---- input ---------------------------------------------------------------------------- */

struct input {
    const uint8_t *p;
    size_t n;
};

static uint64_t take(struct input *in, unsigned bytes)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < bytes && in->n; i++, in->p++, in->n--) {
        v |= (uint64_t)in->p[0] << (8 * i);
    }
    return v;
}

/* ---- memory behind the callbacks ---------------------------------------------------- */

static struct fz_mr *mr_find(struct fz_node *n, uint32_t key, uint32_t pd)
{
    for (unsigned i = 0; i < FZ_NMR; i++) {
        if (n->mr[i].valid && n->mr[i].key == key && n->mr[i].pd == pd) {
            return &n->mr[i];
        }
    }
    return NULL;
}

/* The bytes of [va, va + len) through key, or NULL when the key does not allow it. */
static uint8_t *mr_range(struct fz_node *n, uint32_t key, uint32_t pd, uint64_t va, uint64_t len,
                         uint32_t access)
{
    struct fz_mr *mr = mr_find(n, key, pd);

    if (!mr || (mr->access & access) != access || va < mr->va || len > mr->len ||
        va - mr->va > mr->len - len) {
        return NULL;
    }
    return mr->buf + (va - mr->va);
}

static struct fz_qp *live(struct fz_node *n, struct qsw_qp *qp)
{
    struct fz_qp *q = qp ? qsw_qp_user(qp) : NULL;

    if (!q || q < n->qp || q >= n->qp + FZ_NQP || q->qp != qp) {
        BUG("node %d: callback for a QP that is not live on this engine", n->idx);
    }
    return q;
}

static bool sge_eq(const struct qsw_sge *a, const struct qsw_sge *b, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        if (a[i].addr != b[i].addr || a[i].length != b[i].length || a[i].lkey != b[i].lkey) {
            return false;
        }
    }
    return true;
}

static bool is_atomic(uint32_t op)
{
    return op == QSW_WR_ATOMIC_CMP_AND_SWP || op == QSW_WR_ATOMIC_FETCH_AND_ADD;
}

/* A posted send WR whose SGE list this is and that may be accessed this way. */
static const struct fz_swr *swr_match(struct fz_qp *q, const struct qsw_sge *sge, unsigned nsge,
                                      bool write)
{
    for (unsigned i = q->sq_head; i != q->sq_tail; i++) {
        const struct fz_swr *w = &q->sq[i % FZ_SQ_TRACK];
        bool reads = w->opcode == QSW_WR_RDMA_READ || is_atomic(w->opcode);

        if (w->num_sge == nsge && !w->inl && reads == write && sge_eq(w->sg, sge, nsge)) {
            return w;
        }
    }
    return NULL;
}

static int sge_io(struct fz_node *n, struct qsw_qp *qp, const struct qsw_sge *sge, unsigned nsge,
                  uint64_t off, uint8_t *buf, uint32_t len, bool write)
{
    struct fz_qp *q = live(n, qp);
    const struct fz_swr *w = NULL;
    uint64_t total = 0;

    if (nsge > QSW_MAX_SGE) {
        BUG("QP %#x: %u SGEs", q->qpn, nsge);
    }
    if (!(write && q->held && q->held_wr.num_sge == nsge && sge_eq(q->held_wr.sg_list, sge, nsge))) {
        w = swr_match(q, sge, nsge, write);
        if (!w) {
            BUG("QP %#x: %s through an SGE list the engine does not hold (or the wrong way)",
                q->qpn, write ? "scatter" : "gather");
        }
    }
    for (unsigned i = 0; i < nsge; i++) {
        total += sge[i].length;
    }
    /* an ATOMIC's 8 bytes may meet a shorter list: the callback reports it */
    if (off + len > total && !(w && is_atomic(w->opcode) && off == 0 && len == 8)) {
        BUG("QP %#x: %s of %u bytes at offset %llu of a %llu-byte SGE list", q->qpn,
            write ? "scatter" : "gather", len, (unsigned long long)off, (unsigned long long)total);
    }
    for (unsigned i = 0; i < nsge && len; i++) {
        uint64_t l = sge[i].length;
        uint32_t chunk;
        uint8_t *p;

        if (off >= l) {
            off -= l;
            continue;
        }
        chunk = (uint32_t)(l - off < len ? l - off : len);
        p = mr_range(n, sge[i].lkey, q->pd, sge[i].addr + off, chunk,
                     write ? QSW_ACCESS_LOCAL_WRITE : 0);
        if (!p) {
            return -QSW_WC_LOC_PROT_ERR;
        }
        if (write) {
            memcpy(p, buf, chunk);
        } else {
            memcpy(buf, p, chunk);
        }
        buf += chunk;
        len -= chunk;
        off = 0;
    }
    cb_post(n, q, CB_SGE);
    return len ? -QSW_WC_LOC_LEN_ERR : 0;
}

/* ---- callbacks --------------------------------------------------------------------------- */

static int cb_sge_read(void *o, struct qsw_qp *qp, const struct qsw_sge *sge, unsigned nsge,
                       uint64_t off, void *dst, uint32_t len)
{
    return sge_io(o, qp, sge, nsge, off, dst, len, false);
}

static int cb_sge_write(void *o, struct qsw_qp *qp, const struct qsw_sge *sge, unsigned nsge,
                        uint64_t off, const void *src, uint32_t len)
{
    return sge_io(o, qp, sge, nsge, off, (uint8_t *)src, len, true);
}

static int cb_rkey_check(void *o, struct qsw_qp *qp, uint32_t pd, uint32_t rkey,
                         uint64_t va, uint64_t len,
                         uint32_t access)
{
    struct fz_node *n = o;

    if (!mr_range(n, rkey, pd, va, len, access)) {
        return -QSW_EACCES;
    }
    if (n->nappr == FZ_APPROVALS) {
        n->appr_overflow = true;
    } else {
        n->appr[n->nappr++] = (struct fz_approval){ pd, rkey, access, va, len };
    }
    return 0;
}

/* Data moves through an rkey only inside a range rkey_check accepted. */
static void approved(struct fz_node *n, uint32_t pd, uint32_t rkey, uint64_t va, uint64_t len,
                     uint32_t access, const char *what)
{
    if (n->appr_overflow) {
        return;
    }
    for (unsigned i = 0; i < n->nappr; i++) {
        const struct fz_approval *a = &n->appr[i];

        if (a->pd == pd && a->rkey == rkey && (a->access & access) == access && va >= a->va &&
            len <= a->len && va - a->va <= a->len - len) {
            return;
        }
    }
    BUG("node %d: %s of %llu bytes at %#llx through rkey %#x that rkey_check never accepted",
        n->idx, what, (unsigned long long)len, (unsigned long long)va, rkey);
}

static int cb_rkey_read(void *o, struct qsw_qp *qp, uint32_t pd, uint32_t rkey,
                        uint64_t va, void *dst, uint32_t len)
{
    struct fz_node *n = o;
    uint8_t *p;

    approved(n, pd, rkey, va, len, QSW_ACCESS_REMOTE_READ, "rkey_read");
    p = mr_range(n, rkey, pd, va, len, QSW_ACCESS_REMOTE_READ);
    if (!p) {
        return -QSW_EACCES;
    }
    memcpy(dst, p, len);
    return 0;
}

static int cb_rkey_write(void *o, struct qsw_qp *qp, uint32_t pd, uint32_t rkey,
                         uint64_t va, const void *src,
                         uint32_t len)
{
    struct fz_node *n = o;
    uint8_t *p;

    approved(n, pd, rkey, va, len, QSW_ACCESS_REMOTE_WRITE, "rkey_write");
    p = mr_range(n, rkey, pd, va, len, QSW_ACCESS_REMOTE_WRITE);
    if (!p) {
        return -QSW_EACCES;
    }
    memcpy(p, src, len);
    return 0;
}

static int cb_rkey_atomic(void *o, struct qsw_qp *qp, uint32_t pd, uint32_t rkey,
                          uint64_t va, enum qsw_atomic_op op,
                          uint64_t compare_add, uint64_t swap, uint64_t *orig)
{
    struct fz_node *n = o;
    uint8_t *p;
    uint64_t v;

    if (va & 7) {
        BUG("node %d: misaligned atomic at %#llx", n->idx, (unsigned long long)va);
    }
    if (op != QSW_ATOMIC_CMP_SWP && op != QSW_ATOMIC_FETCH_ADD) {
        BUG("node %d: atomic op %d", n->idx, (int)op);
    }
    approved(n, pd, rkey, va, 8, QSW_ACCESS_REMOTE_ATOMIC, "rkey_atomic");
    p = mr_range(n, rkey, pd, va, 8, QSW_ACCESS_REMOTE_ATOMIC);
    if (!p) {
        return -QSW_EACCES;
    }
    memcpy(&v, p, 8);
    *orig = v;
    if (op == QSW_ATOMIC_FETCH_ADD) {
        v += compare_add;
    } else if (v == compare_add) {
        v = swap;
    }
    memcpy(p, &v, 8);
    return 0;
}

static int cb_get_recv(void *o, struct qsw_qp *qp, struct qsw_recv_wr *out)
{
    struct fz_qp *q = live(o, qp);

    cb_post(o, q, CB_GET_RECV);
    if (q->held) {
        BUG("QP %#x: a receive WR popped while WR %#llx is held and not completed", q->qpn,
            (unsigned long long)q->held_wr.wr_id);
    }
    if (q->rq_head == q->rq_tail) {
        return -QSW_ENOENT;
    }
    *out = q->rq[q->rq_head++ % FZ_RQ];
    q->held = true;
    q->held_wr = *out;
    return 0;
}

static uint32_t wc_opcode_of(uint32_t wr_opcode)
{
    switch (wr_opcode) {
    case QSW_WR_RDMA_WRITE:
    case QSW_WR_RDMA_WRITE_WITH_IMM:
        return QSW_WC_RDMA_WRITE;
    case QSW_WR_RDMA_READ:
        return QSW_WC_RDMA_READ;
    case QSW_WR_ATOMIC_CMP_AND_SWP:
        return QSW_WC_COMP_SWAP;
    case QSW_WR_ATOMIC_FETCH_AND_ADD:
        return QSW_WC_FETCH_ADD;
    case QSW_WR_LOCAL_INV:
        return QSW_WC_LOCAL_INV;
    case QSW_WR_BIND_MW:
        return QSW_WC_BIND_MW;
    case QSW_WR_REG_MR:
        return QSW_WC_REG_MR;
    default:
        return QSW_WC_SEND;
    }
}

static void simple_send(struct fz_qp *q, uint32_t seed);

/* From inside a callback the API allows qsw_post_send() and qsw_qp_query(), on any QP. */
static void cb_post(struct fz_node *n, struct fz_qp *q, unsigned where)
{
    struct qsw_qp_attr attr;

    if (!fz.reposts || !(fz.cb_plan & where)) {
        return;
    }
    fz.reposts--;
    if (!q || (fz.cb_plan & CB_OTHER_QP)) {
        q = &n->qp[((q ? q->idx : 0) + 1 + fz.reposts % (FZ_NQP - 1)) % FZ_NQP];
    }
    qsw_qp_query(q->qp, &attr);
    simple_send(q, fz.reposts * 37 + where);
}

static void cb_complete(void *o, struct qsw_qp *qp, const struct qsw_wc *wc)
{
    struct fz_node *n = o;
    struct fz_qp *q = live(n, qp);

    n->progress++;
    if (wc->qp_num != q->qpn || wc->status > QSW_WC_GENERAL_ERR) {
        BUG("QP %#x: completion with qp_num %#x, status %u", q->qpn, wc->qp_num, wc->status);
    }
    if (wc->opcode >= QSW_WC_RECV) {
        uint64_t cap = 0;

        if (wc->opcode != QSW_WC_RECV && wc->opcode != QSW_WC_RECV_RDMA_WITH_IMM) {
            BUG("QP %#x: receive completion opcode %u", q->qpn, wc->opcode);
        }
        if (!q->held || wc->wr_id != q->held_wr.wr_id) {
            BUG("QP %#x: receive completion of WR %#llx, which the engine does not hold", q->qpn,
                (unsigned long long)wc->wr_id);
        }
        for (unsigned i = 0; i < q->held_wr.num_sge; i++) {
            cap += q->held_wr.sg_list[i].length;
        }
        if (wc->status == QSW_WC_SUCCESS && wc->opcode == QSW_WC_RECV && wc->byte_len > cap) {
            BUG("QP %#x: %u bytes received into a %llu-byte WR", q->qpn, wc->byte_len,
                (unsigned long long)cap);
        }
        q->held = false;
        cb_post(n, q, CB_COMPLETE);
        return;
    }
    for (unsigned i = q->sq_head; i != q->sq_tail; i++) {
        const struct fz_swr *w = &q->sq[i % FZ_SQ_TRACK];

        if (w->wr_id != wc->wr_id) {
            continue;
        }
        if (wc->opcode != wc_opcode_of(w->opcode)) {
            BUG("QP %#x: WR %#llx of opcode %u completed as %u", q->qpn,
                (unsigned long long)w->wr_id, w->opcode, wc->opcode);
        }
        if (wc->status == QSW_WC_SUCCESS && !w->signaled) {
            BUG("QP %#x: unsignaled WR %#llx reported", q->qpn, (unsigned long long)w->wr_id);
        }
        q->sq_head = i + 1;         /* in order: everything before it is finished */
        cb_post(n, q, CB_COMPLETE);
        return;
    }
    BUG("QP %#x: send completion of WR %#llx, not outstanding (twice or out of order)", q->qpn,
        (unsigned long long)wc->wr_id);
}

static void cb_qp_event(void *o, struct qsw_qp *qp, enum qsw_event ev)
{
    struct fz_node *n = o;
    struct fz_qp *q = live(n, qp);

    n->progress++;
    switch (ev) {
    case QSW_EV_QP_FATAL:
    case QSW_EV_QP_REQ_ERR:
    case QSW_EV_QP_ACCESS_ERR:
    case QSW_EV_COMM_EST:
    case QSW_EV_SQ_DRAINED:
    case QSW_EV_QP_LAST_WQE_REACHED:
        break;
    default:
        BUG("QP %#x: event %d", q->qpn, (int)ev);
    }
    if (ev == QSW_EV_SQ_DRAINED &&
        (qp->state != QSW_QPS_SQD || qp->sq_head != qp->sq_cur || qp->req.psn != qp->comp.psn ||
         (qp->sq_cur != qp->sq_tail && qp->sq[qp->sq_cur & qp->sq_mask].state != WQE_PENDING))) {
        BUG("QP %#x: SQ_DRAINED in state %u with work outstanding (sq %u/%u/%u, psn %#x/%#x)",
            q->qpn, qp->state, qp->sq_head, qp->sq_cur, qp->sq_tail, qp->comp.psn, qp->req.psn);
    }
    cb_post(n, q, CB_EVENT);
}

/* What the engine sends must be what it accepts: lengths, checksums, ICRC. */
static void check_frame(const uint8_t *f, size_t len)
{
    struct qsw_pkt pkt;
    struct qsw_stats st;

    if (len < 60 || len > QSW_MAX_FRAME) {
        BUG("a frame of %zu bytes sent", len);
    }
    qsw_engine_set_mac(checker, f);
    if (qsw_parse(checker, f, len, &pkt)) {
        qsw_engine_stats(checker, &st);
        BUG("a frame of %zu bytes sent that the parser drops (not RoCE %llu, malformed %llu, "
            "ICRC %llu)", len, (unsigned long long)st.drop_not_roce,
            (unsigned long long)st.drop_malformed, (unsigned long long)st.drop_icrc);
    }
}

static int cb_send_frame(void *o, const void *frame, size_t len)
{
    struct fz_node *n = o;
    struct fz_frame *f;
    unsigned slot = n->nrecent++ % FZ_RECENT;

    if (!n->corrupting) {
        check_frame(frame, len);
    }
    n->progress++;
    memcpy(recent[n->idx][slot], frame, len);
    recent_len[n->idx][slot] = len;
    cb_post(n, NULL, CB_SEND_FRAME);
#ifdef FUZZ_SW_SEEDGEN
    if (fz.capture && fz.capture_to == 1 - n->idx) {
        fz.capture(frame, len);
        return 0;
    }
#endif
    if (fz.qlen >= FZ_WIRE_MAX) {
        return 0;
    }
    f = malloc(sizeof(*f) + len);
    if (!f) {
        abort();
    }
    f->next = NULL;
    f->to = 1 - n->idx;
    f->len = len;
    memcpy(f->data, frame, len);
    if (fz.qtail) {
        fz.qtail->next = f;
    } else {
        fz.qhead = f;
    }
    fz.qtail = f;
    fz.qlen++;
    return 0;
}

static uint64_t cb_now(void *o)
{
    return fz.now;
}

static int cb_invalidate(void *o, struct qsw_qp *qp, uint32_t pd, uint32_t key)
{
    struct fz_mr *mr = mr_find(o, key, pd);

    if (!mr) {
        return -QSW_EINVAL;
    }
    mr->valid = false;
    return 0;
}

static const struct qsw_ops fz_ops = {
    .sge_read = cb_sge_read,
    .sge_write = cb_sge_write,
    .rkey_check = cb_rkey_check,
    .rkey_read = cb_rkey_read,
    .rkey_write = cb_rkey_write,
    .rkey_atomic = cb_rkey_atomic,
    .get_recv = cb_get_recv,
    .complete = cb_complete,
    .qp_event = cb_qp_event,
    .send_frame = cb_send_frame,
    .now_ns = cb_now,
    .invalidate = cb_invalidate,
};

/* ---- posting ------------------------------------------------------------------------------ */

/* Tracked before the engine sees it: in ERR it completes inside qsw_post_send(). */
static int post_send(struct fz_qp *q, const struct qsw_send_wr *wr)
{
    struct fz_swr *t;
    int ret;

    if (q->sq_tail - q->sq_head >= FZ_SQ_TRACK) {
        return -QSW_ENOMEM;
    }
    t = &q->sq[q->sq_tail % FZ_SQ_TRACK];
    t->wr_id = wr->wr_id;
    t->opcode = wr->opcode;
    t->signaled = wr->send_flags & QSW_SEND_SIGNALED;
    t->inl = wr->send_flags & QSW_SEND_INLINE;
    t->num_sge = wr->num_sge;
    memcpy(t->sg, wr->sg_list, sizeof(t->sg));
    q->sq_tail++;
    ret = qsw_post_send(q->qp, wr);
    if (ret) {
        q->sq_tail--;               /* refused before any callback */
    }
    return ret;
}

static uint64_t next_wr_id(struct fz_qp *q)
{
    return (uint64_t)q->node->idx << 60 | (uint64_t)q->idx << 56 | ++q->send_seq;
}

static void sge_set(struct qsw_sge *s, const struct fz_mr *mr, uint64_t off, uint32_t len)
{
    s->addr = mr->va + off;
    s->length = len;
    s->lkey = mr->key;
}

static struct fz_node *peer_of(struct fz_qp *q)
{
    return &fz.node[1 - q->node->idx];
}

static void ud_av(struct qsw_send_wr *wr, struct fz_qp *q, bool v6)
{
    struct fz_node *self = q->node, *peer = peer_of(q);

    memcpy(wr->ud.av.dmac, peer->mac, 6);
    memcpy(wr->ud.av.sgid, v6 ? self->gid6 : self->gid4, 16);
    memcpy(wr->ud.av.dgid, v6 ? peer->gid6 : peer->gid4, 16);
    wr->ud.remote_qpn = peer->qp[q->idx].qpn;
    wr->ud.remote_qkey = UD_QKEY;
}

/* A small signaled SEND: what the completion callback posts. */
static void simple_send(struct fz_qp *q, uint32_t seed)
{
    struct qsw_send_wr wr;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id = next_wr_id(q);
    wr.opcode = QSW_WR_SEND;
    wr.send_flags = QSW_SEND_SIGNALED;
    wr.num_sge = 1;
    sge_set(&wr.sg_list[0], &q->node->mr[MR_LOCAL], seed % 64, 1 + seed % 300);
    if (q->type == QSW_QPT_UD) {
        ud_av(&wr, q, seed & 1);
    }
    post_send(q, &wr);
}

static void post_recv(struct fz_qp *q, const struct qsw_sge *sg, unsigned nsge)
{
    struct qsw_recv_wr *r;

    if (q->rq_tail - q->rq_head >= FZ_RQ) {
        return;
    }
    r = &q->rq[q->rq_tail++ % FZ_RQ];
    memset(r, 0, sizeof(*r));
    r->wr_id = (uint64_t)q->node->idx << 60 | (uint64_t)q->idx << 56 | 1ull << 55 | ++q->recv_seq;
    r->num_sge = nsge;
    memcpy(r->sg_list, sg, nsge * sizeof(*sg));
}

static void post_recv1(struct fz_qp *q, uint64_t off, uint32_t len)
{
    struct qsw_sge s;

    sge_set(&s, &q->node->mr[MR_RECV], off, len);
    post_recv(q, &s, 1);
}

/* ---- set-up --------------------------------------------------------------------------------- */

static int qp_bring_up(struct fz_qp *q, uint8_t state, enum qsw_mtu mtu, bool v6, uint32_t rq_psn,
                       uint32_t sq_psn)
{
    const struct qp_spec *s = &specs[q->idx];
    struct fz_node *self = q->node, *peer = peer_of(q);
    struct qsw_qp_attr a;
    int ret;

    if (state == QSW_QPS_RESET) {
        return 0;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = QSW_QPS_INIT;
    a.qp_access_flags = s->access;
    a.qkey = UD_QKEY;
    ret = qsw_qp_modify(q->qp, &a, QSW_QP_STATE | QSW_QP_ACCESS_FLAGS | QSW_QP_QKEY);
    if (ret || state == QSW_QPS_INIT) {
        return ret;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = QSW_QPS_RTR;
    a.path_mtu = mtu;
    if (q->type == QSW_QPT_UD) {
        ret = qsw_qp_modify(q->qp, &a, QSW_QP_STATE | QSW_QP_PATH_MTU);
    } else {
        a.dest_qp_num = peer->qp[q->idx].qpn;
        a.rq_psn = rq_psn;
        a.max_dest_rd_atomic = s->rd_atomic;
        a.min_rnr_timer = s->min_rnr;
        memcpy(a.av.dmac, peer->mac, 6);
        memcpy(a.av.sgid, v6 ? self->gid6 : self->gid4, 16);
        memcpy(a.av.dgid, v6 ? peer->gid6 : peer->gid4, 16);
        a.av.hop_limit = 64;
        a.av.flow_label = q->idx == 1 ? 0x12345 : 0;
        ret = qsw_qp_modify(q->qp, &a, QSW_QP_STATE | QSW_QP_AV | QSW_QP_PATH_MTU |
                                           QSW_QP_DEST_QPN | QSW_QP_RQ_PSN |
                                           QSW_QP_MAX_DEST_RD_ATOMIC | QSW_QP_MIN_RNR_TIMER);
    }
    if (ret || state == QSW_QPS_RTR) {
        return ret;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = QSW_QPS_RTS;
    a.sq_psn = sq_psn;
    a.timeout = s->timeout;
    a.retry_cnt = s->retry;
    a.rnr_retry = s->rnr_retry;
    a.max_rd_atomic = s->rd_atomic;
    ret = qsw_qp_modify(q->qp, &a, QSW_QP_STATE | QSW_QP_SQ_PSN | QSW_QP_TIMEOUT |
                                       QSW_QP_RETRY_CNT | QSW_QP_RNR_RETRY |
                                       QSW_QP_MAX_QP_RD_ATOMIC);
    if (ret || state == QSW_QPS_RTS) {
        return ret;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = state;
    return qsw_qp_modify(q->qp, &a, QSW_QP_STATE);
}

/* The engine dropped everything the QP held, without completions. */
static void qp_forget(struct fz_qp *q)
{
    q->sq_head = q->sq_tail;
    q->held = false;
}

static void qp_create(struct fz_qp *q)
{
    /* small queues: cheap to allocate per input, and "send queue full" is reachable */
    struct qsw_qp_cap cap = { .max_send_wr = q->idx ? 8 : 32, .max_inline = 256 };

    q->qp = qsw_qp_create(q->node->eng, q->qpn, q->type, q->pd, &cap, q);
    if (!q->qp) {
        abort();
    }
    qp_forget(q);
}

static void initial_recvs(struct fz_qp *q)
{
    struct qsw_sge sg[3];

    post_recv1(q, 0, 1024);
    sge_set(&sg[0], &q->node->mr[MR_RECV], 1024, 100);
    sge_set(&sg[1], &q->node->mr[MR_RECV], 2048, 1000);
    sge_set(&sg[2], &q->node->mr[MR_RECV], 4096, 4096);
    post_recv(q, sg, 3);
    post_recv1(q, 512, 16);
    post_recv1(q, 0, 8192);
}

static void node_setup(struct fz_node *n, int idx)
{
    n->idx = idx;
    memset(n->mac, 0, 6);
    n->mac[0] = 0x02;
    n->mac[5] = (uint8_t)(idx + 1);
    memset(n->gid4, 0, 16);
    n->gid4[10] = n->gid4[11] = 0xff;
    n->gid4[12] = 10;
    n->gid4[15] = (uint8_t)(idx + 1);
    memset(n->gid6, 0, 16);
    n->gid6[0] = 0xfd;
    n->gid6[15] = (uint8_t)(idx + 1);
    n->eng = qsw_engine_new(&fz_ops, n, n->mac);
    if (!n->eng) {
        abort();
    }
    for (unsigned i = 0; i < FZ_NMR; i++) {
        struct fz_mr *mr = &n->mr[i];

        mr->pd = mr_specs[i].pd;
        mr->access = mr_specs[i].access;
        mr->len = mr_specs[i].len;
        mr->va = 0x100000000000ull * (uint64_t)(idx + 1) + 0x10000000ull * i + 0x40 * i;
        mr->key = (uint32_t)(idx + 1) << 24 | (i + 1) << 8;
        mr->valid = true;
        mr->buf = malloc(mr->len);
        if (!mr->buf) {
            abort();
        }
        memset(mr->buf, i == MR_ATOM ? 0 : 0x11 * (i + 1) + idx, mr->len);
    }
    for (unsigned i = 0; i < FZ_NQP; i++) {
        struct fz_qp *q = &n->qp[i];

        memset(q, 0, sizeof(*q));
        q->node = n;
        q->idx = i;
        q->qpn = specs[i].qpn[idx];
        q->type = specs[i].type;
        q->pd = 1;
        qp_create(q);
    }
}

/* Both nodes' QPs connected; node 0's in their spec's state, node 1's in RTS. */
static void setup(uint8_t cfg, uint8_t cb_plan)
{
    memset(&fz, 0, sizeof(fz));
    fz.cfg = cfg;
    fz.cb_plan = cb_plan;
    fz.now = 1000000000ull;
    fz.reposts = (unsigned[]){ 0, 1, 4, 16 }[(cfg >> 4) & 3];
    for (int i = 0; i < 2; i++) {
        node_setup(&fz.node[i], i);
    }
    for (unsigned i = 0; i < FZ_NQP; i++) {
        const struct qp_spec *s = &specs[i];
        struct fz_qp *a = &fz.node[0].qp[i], *b = &fz.node[1].qp[i];

        if (qp_bring_up(a, s->state, spec_mtu(i), spec_v6(i), s->psn[1], s->psn[0]) ||
            qp_bring_up(b, QSW_QPS_RTS, spec_mtu(i), spec_v6(i), s->psn[0], s->psn[1])) {
            abort();
        }
        initial_recvs(a);               /* in RESET too: they wait for a reconnect */
        initial_recvs(b);
    }
    if (!(cfg & 0x40)) {
        /* requests of the target in flight, so that responses have something to match */
        struct fz_node *n0 = &fz.node[0], *n1 = &fz.node[1];
        struct fz_qp *q = &n0->qp[0];
        struct qsw_send_wr wr;

        memset(&wr, 0, sizeof(wr));
        wr.wr_id = next_wr_id(q);
        wr.opcode = QSW_WR_SEND;
        wr.send_flags = QSW_SEND_SIGNALED;
        wr.num_sge = 1;
        sge_set(&wr.sg_list[0], &n0->mr[MR_LOCAL], 0, 300);
        post_send(q, &wr);
        wr.wr_id = next_wr_id(q);
        wr.opcode = QSW_WR_RDMA_WRITE;
        wr.send_flags = 0;
        sge_set(&wr.sg_list[0], &n0->mr[MR_LOCAL], 0, 100);
        wr.rdma.remote_addr = n1->mr[MR_RW].va;
        wr.rdma.rkey = n1->mr[MR_RW].key;
        post_send(q, &wr);
        wr.wr_id = next_wr_id(q);
        wr.opcode = QSW_WR_RDMA_READ;
        wr.send_flags = QSW_SEND_SIGNALED;
        sge_set(&wr.sg_list[0], &n0->mr[MR_LOCAL], 1024, 700);
        wr.rdma.remote_addr = n1->mr[MR_RW].va + 512;
        post_send(q, &wr);
        wr.wr_id = next_wr_id(q);
        wr.opcode = QSW_WR_ATOMIC_CMP_AND_SWP;
        sge_set(&wr.sg_list[0], &n0->mr[MR_LOCAL], 2048, 8);
        wr.atomic.remote_addr = n1->mr[MR_ATOM].va;
        wr.atomic.rkey = n1->mr[MR_ATOM].key;
        wr.atomic.compare_add = 0;
        wr.atomic.swap = 0x1122334455667788ull;
        post_send(q, &wr);
        wr.wr_id = next_wr_id(q);
        wr.opcode = QSW_WR_ATOMIC_FETCH_AND_ADD;
        sge_set(&wr.sg_list[0], &n0->mr[MR_LOCAL], 2056, 8);
        wr.atomic.remote_addr = n1->mr[MR_ATOM].va + 8;
        wr.atomic.compare_add = 3;
        post_send(q, &wr);
        wr.wr_id = next_wr_id(q);
        wr.opcode = QSW_WR_SEND_WITH_IMM;
        wr.num_sge = 0;
        wr.imm_data = 0x04030201;
        post_send(q, &wr);

        q = &n0->qp[1];                 /* a READ of 3 responses over IPv6 */
        memset(&wr, 0, sizeof(wr));
        wr.wr_id = next_wr_id(q);
        wr.opcode = QSW_WR_RDMA_READ;
        wr.send_flags = QSW_SEND_SIGNALED;
        wr.num_sge = 1;
        sge_set(&wr.sg_list[0], &n0->mr[MR_LOCAL], 4096, 3000);
        wr.rdma.remote_addr = n1->mr[MR_RW].va + 100;
        wr.rdma.rkey = n1->mr[MR_RW].key;
        post_send(q, &wr);
        wr.wr_id = next_wr_id(q);
        wr.opcode = QSW_WR_SEND;
        sge_set(&wr.sg_list[0], &n0->mr[MR_LOCAL], 0, 2500);
        post_send(q, &wr);

        simple_send(&n0->qp[2], 700);   /* UC */
        simple_send(&n0->qp[3], 40);    /* UD */
        simple_send(&n1->qp[0], 200);   /* and a request towards the target */
        n0->next = qsw_engine_poll(n0->eng, 64);
        n1->next = qsw_engine_poll(n1->eng, 64);
    }
}

static void teardown(void)
{
    while (fz.qhead) {
        struct fz_frame *f = fz.qhead;

        fz.qhead = f->next;
        free(f);
    }
    fz.qtail = NULL;
    fz.qlen = 0;
    for (int i = 0; i < 2; i++) {
        struct fz_node *n = &fz.node[i];

        qsw_engine_free(n->eng);
        n->eng = NULL;
        for (unsigned k = 0; k < FZ_NMR; k++) {
            free(n->mr[k].buf);
            n->mr[k].buf = NULL;
        }
    }
}

/* ---- running ----------------------------------------------------------------------------------- */

static uint64_t do_poll(struct fz_node *n, unsigned budget)
{
    uint64_t before = n->progress;
    struct qsw_stats st0, st;

    qsw_engine_stats(n->eng, &st0);
    n->next = qsw_engine_poll(n->eng, budget);
    qsw_engine_stats(n->eng, &st);
    before -= st.tx_frames - st0.tx_frames;     /* frames held back by fault injection are work */
    if (trace) {
        struct qsw_engine *e = n->eng;

        fprintf(stderr, "  poll node %d budget %u -> %llu, %llu callbacks;", n->idx, budget,
                (unsigned long long)n->next, (unsigned long long)(n->progress - before));
        for (struct qsw_qp *a = e->active.head; a; a = a->anext) {
            fprintf(stderr, " active %#x (state %u sq %u/%u/%u psn %#x/%#x rnr %llu)", a->qpn,
                    a->state, a->sq_head, a->sq_cur, a->sq_tail, a->comp.psn, a->req.psn,
                    (unsigned long long)a->comp.rnr_deadline);
        }
        for (struct qsw_qp *t = e->timers; t; t = t->tnext) {
            fprintf(stderr, " timer %#x (rto %llu rnr %llu)", t->qpn,
                    (unsigned long long)t->comp.rto_deadline,
                    (unsigned long long)t->comp.rnr_deadline);
        }
        fputc('\n', stderr);
    }
    /* "the current time when work is left": then the next poll must do some */
    if (budget && n->next <= fz.now && n->progress == before) {
        if (++n->spins >= FZ_SPINS) {
            BUG("node %d: poll returns %llu (now %llu) %u times in a row and does nothing",
                n->idx, (unsigned long long)n->next, (unsigned long long)fz.now, n->spins);
        }
    } else {
        n->spins = 0;
    }
    return n->next;
}

static void rx(int node, const uint8_t *frame, size_t len)
{
    /* exactly len bytes on the heap: ASan sees any read past the frame */
    uint8_t *b = malloc(len ? len : 1);

    if (!b) {
        abort();
    }
    memcpy(b, frame, len);
    qsw_rx_frame(fz.node[node].eng, b, len);
    free(b);
}

static void deliver_one(void)
{
    struct fz_frame *f = fz.qhead;

    fz.qhead = f->next;
    if (!fz.qhead) {
        fz.qtail = NULL;
    }
    fz.qlen--;
    qsw_rx_frame(fz.node[f->to].eng, f->data, f->len);
    free(f);
}

/* Deliver what is on the wire now (not what it causes), then poll both. */
static void run(unsigned rounds, bool time)
{
    for (unsigned r = 0; r < rounds; r++) {
        uint64_t next;

        for (unsigned k = fz.qlen; k && fz.qhead; k--) {
            deliver_one();
        }
        do_poll(&fz.node[0], 64);
        do_poll(&fz.node[1], 64);
        if (fz.qhead) {
            continue;
        }
        next = fz.node[0].next < fz.node[1].next ? fz.node[0].next : fz.node[1].next;
        if (next == UINT64_MAX || (next > fz.now && !time)) {
            return;
        }
        if (next > fz.now) {
            fz.now = next;
        }
    }
}

/* ---- frames from the input --------------------------------------------------------------------- */

#define F_RAW     0x01      /* raw bytes, not a template */
#define F_LENS    0x02      /* recompute IP/UDP lengths and the IPv4 checksum after mutating */
#define F_ICRC    0x04      /* recompute the ICRC after mutating */
#define F_NODE1   0x08      /* to the peer, not the target */
#define F_MUT     0x10      /* mutations follow */
#define F_RAWQPN  0x20      /* template: destination QPN from the input */
#define F_RAWPSN  0x40      /* template: PSN from the input */
#define F_V6      0x80      /* template for UD: IPv6 addresses */

static const uint8_t rc_ops[] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c,
    0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17,
};

static uint8_t pick_opcode(struct input *in, enum qsw_qp_type type)
{
    uint8_t b = (uint8_t)take(in, 1);

    if (b >= 0xf0) {
        return (uint8_t)take(in, 1);
    }
    switch (type) {
    case QSW_QPT_RC:
        return rc_ops[b % sizeof(rc_ops)];
    case QSW_QPT_UC:
        return OP_UC + b % 12;
    default:
        return OP_UD + OP_SEND_ONLY + (b & 1);
    }
}

/* An rkey and VA at one of the node's MRs, or raw. */
static void remote_ref(struct input *in, struct fz_node *n, uint32_t *key, uint64_t *va, bool align)
{
    uint8_t s = (uint8_t)take(in, 1);
    const struct fz_mr *mr = &n->mr[s % FZ_NMR];
    uint64_t off = take(in, 2);

    *key = s & 0x80 ? (uint32_t)take(in, 4) : mr->key;
    *va = s & 0x40 ? mr->va - off : mr->va + off;
    if (align && !(s & 0x20)) {
        *va &= ~7ull;
    }
}

static void put_eth_ip_udp(uint8_t *f, const uint8_t *dmac, const uint8_t *smac, bool v6,
                           const uint8_t *sgid, const uint8_t *dgid, size_t l3len)
{
    uint8_t *l3 = f + ETH_HLEN, *udp;

    memcpy(f, dmac, 6);
    memcpy(f + 6, smac, 6);
    st16(f + 12, v6 ? ETHERTYPE_IPV6 : ETHERTYPE_IPV4);
    if (v6) {
        st32(l3, 6u << 28);
        st16(l3 + 4, (uint16_t)(l3len - IPV6_HLEN));
        l3[6] = 17;
        l3[7] = 64;
        memcpy(l3 + 8, sgid, 16);
        memcpy(l3 + 24, dgid, 16);
        udp = l3 + IPV6_HLEN;
    } else {
        l3[0] = 0x45;
        l3[1] = 0;
        st16(l3 + 2, (uint16_t)l3len);
        st16(l3 + 4, 0x1234);
        st16(l3 + 6, 0x4000);
        l3[8] = 64;
        l3[9] = 17;
        st16(l3 + 10, 0);
        memcpy(l3 + 12, sgid + 12, 4);
        memcpy(l3 + 16, dgid + 12, 4);
        st16(l3 + 10, qrdma_inet_csum(l3, IPV4_HLEN, 0));
        udp = l3 + IPV4_HLEN;
    }
    st16(udp, 0xc123);
    st16(udp + 2, QSW_UDP_PORT);
    st16(udp + 4, (uint16_t)(l3len - (v6 ? IPV6_HLEN : IPV4_HLEN)));
    st16(udp + 6, 0);
}

static void mutate(struct input *in, uint8_t *f, size_t len)
{
    unsigned n = 1 + (unsigned)take(in, 1) % 8;

    while (n-- && len) {
        size_t pos = take(in, 2) % len;

        f[pos] ^= (uint8_t)take(in, 1);
    }
}

/* A valid frame for one of the node's QPs from its peer; returns its length, *l3len its IP part. */
static size_t build_template(struct input *in, uint8_t ctl, struct fz_node *n, uint8_t *f,
                             size_t *l3len)
{
    struct fz_node *peer = &fz.node[1 - n->idx];
    struct fz_qp *q = &n->qp[take(in, 1) % FZ_NQP];
    struct qsw_qp_attr attr;
    uint8_t opcode = pick_opcode(in, q->type);
    uint32_t m = qsw_opmask[opcode], psn, dqpn, mtu;
    uint8_t flags, *bth, *h;
    const uint8_t *sgid, *dgid;
    bool v6;
    unsigned pad;
    size_t plen, iphl, tp, flen;
    uint16_t pl;
    uint8_t extra, fill;

    qsw_qp_query(q->qp, &attr);
    mtu = qsw_mtu_bytes(attr.path_mtu);
    if (q->type == QSW_QPT_UD) {
        v6 = ctl & F_V6;
        sgid = v6 ? peer->gid6 : peer->gid4;
        dgid = v6 ? n->gid6 : n->gid4;
    } else {
        v6 = !qsw_gid_is_v4(attr.av.dgid);
        sgid = attr.av.dgid;
        dgid = attr.av.sgid;
    }
    iphl = v6 ? IPV6_HLEN : IPV4_HLEN;
    dqpn = ctl & F_RAWQPN ? (uint32_t)take(in, 3) : q->qpn;
    if (ctl & F_RAWPSN) {
        psn = (uint32_t)take(in, 3);
    } else {
        int8_t d = (int8_t)take(in, 1);

        /* requests near the expected PSN; responses near the oldest unacknowledged */
        psn = psn_add(m & M_RESP ? q->qp->comp.psn : attr.rq_psn, (uint32_t)(int32_t)d);
    }
    flags = (uint8_t)take(in, 1);
    bth = f + ETH_HLEN + iphl + UDP_HLEN;
    h = bth + BTH_LEN;
    if (m & M_DETH) {
        uint8_t s = (uint8_t)take(in, 1);

        st32(h, s & 1 ? (uint32_t)take(in, 4) : attr.qkey);
        st32(h + 4, s & 2 ? (uint32_t)take(in, 3) : peer->qp[q->idx].qpn);
        h += DETH_LEN;
    }
    if (m & M_RETH) {
        uint32_t key, len;
        uint64_t va;

        remote_ref(in, n, &key, &va, false);
        len = (uint32_t)take(in, 2);
        if (flags & 0x80) {
            len |= (uint32_t)take(in, 2) << 16;
        }
        st64(h, va);
        st32(h + 8, key);
        st32(h + 12, len);
        h += RETH_LEN;
    }
    if (m & M_ATMETH) {
        uint32_t key;
        uint64_t va;

        remote_ref(in, n, &key, &va, true);
        st64(h, va);
        st32(h + 8, key);
        st64(h + 12, take(in, 2));
        st64(h + 20, take(in, 2));
        h += ATMETH_LEN;
    }
    if (m & M_AETH) {
        h[0] = (uint8_t)take(in, 1);
        st24(h + 1, (uint32_t)take(in, 3));
        h += AETH_LEN;
    }
    if (m & M_ATMACK) {
        st64(h, take(in, 2));
        h += ATMACK_LEN;
    }
    if (m & M_IMM) {
        st32(h, (uint32_t)take(in, 4));
        h += IMM_LEN;
    }
    if (m & M_IETH) {
        uint8_t s = (uint8_t)take(in, 1);

        st32(h, s & 0x80 ? (uint32_t)take(in, 4) : n->mr[s % FZ_NMR].key);
        h += IETH_LEN;
    }
    pl = (uint16_t)take(in, 2);
    switch (pl >> 14) {
    case 0:
        plen = pl & 0x1fff;
        break;
    case 1:
        plen = mtu;
        break;
    case 2:
        plen = mtu > (pl & 0xff) ? mtu - (pl & 0xff) : 0;
        break;
    default:
        plen = mtu + (pl & 0xff);
        break;
    }
    if (!(m & M_PAYLOAD) && !(pl & 0x2000)) {
        plen = 0;
    }
    if (plen > 4096 + 64) {
        plen = 4096 + 64;
    }
    fill = (uint8_t)take(in, 1);
    for (size_t i = 0; i < plen; i++) {
        h[i] = (uint8_t)(fill + i * 7);
    }
    pad = flags & 0x08 ? (flags >> 4) & 3 : (unsigned)(-plen & 3);
    memset(h + plen, 0, pad);
    qsw_tx_bth(bth, opcode, flags & 1, pad, dqpn, flags & 2, psn);
    if (flags & 4) {
        bth[1] |= BTH_MIG;
    }
    tp = (size_t)(h - bth) + plen + pad;
    *l3len = iphl + UDP_HLEN + tp + ICRC_LEN;
    put_eth_ip_udp(f, n->mac, peer->mac, v6, sgid, dgid, *l3len);
    fuzz_frame_fixup(f, ETH_HLEN + *l3len, *l3len, false, true);
    flen = ETH_HLEN + *l3len;
    if (flen < 60) {
        memset(f + flen, 0, 60 - flen);
        flen = 60;
    }
    extra = (uint8_t)take(in, 1);
    if (extra & 0x80) {
        size_t cut = extra & 0x3f;

        flen = cut < flen ? flen - cut : 0;
    } else {
        memset(f + flen, 0, extra & 0x3f);
        flen += extra & 0x3f;
    }
    return flen;
}

static uint8_t fbuf[FZ_BUF];

static void op_frame(struct input *in)
{
    uint8_t ctl = (uint8_t)take(in, 1);
    struct fz_node *n = &fz.node[ctl & F_NODE1 ? 1 : 0];
    size_t len, l3len;

    if (ctl & F_RAW) {
        size_t avail;

        len = take(in, 2) % (QSW_MAX_FRAME + 64 + 1);
        avail = len < in->n ? len : in->n;
        memcpy(fbuf, in->p, avail);
        memset(fbuf + avail, 0, len - avail);
        in->p += avail;
        in->n -= avail;
        l3len = len > ETH_HLEN ? len - ETH_HLEN : 0;
    } else {
        len = build_template(in, ctl, n, fbuf, &l3len);
    }
    if (ctl & F_MUT) {
        mutate(in, fbuf, len);
    }
    fuzz_frame_fixup(fbuf, len, l3len, ctl & F_LENS, ctl & F_ICRC);
    rx(n->idx, fbuf, len);
}

static void op_replay(struct input *in)
{
    uint8_t b = (uint8_t)take(in, 1), ctl = (uint8_t)take(in, 1);
    int src = b & 1;
    unsigned back = (b >> 1) & (FZ_RECENT - 1), have = fz.node[src].nrecent;
    size_t len, l3len;

    if (back >= have || back >= FZ_RECENT) {
        return;
    }
    len = recent_len[src][(have - 1 - back) % FZ_RECENT];
    memcpy(fbuf, recent[src][(have - 1 - back) % FZ_RECENT], len);
    l3len = ld16(fbuf + 12) == ETHERTYPE_IPV6 ? IPV6_HLEN + (size_t)ld16(fbuf + ETH_HLEN + 4)
                                                : ld16(fbuf + ETH_HLEN + 2);
    if (ctl & F_MUT) {
        mutate(in, fbuf, len);
    }
    fuzz_frame_fixup(fbuf, len, l3len, ctl & F_LENS, ctl & F_ICRC);
    rx(1 - src, fbuf, len);
}

/* ---- other ops ----------------------------------------------------------------------------------- */

static struct fz_qp *pick_qp(uint8_t b)
{
    return &fz.node[b >> 7].qp[b & 7];
}

static void op_post_send(struct input *in)
{
    static const uint32_t ops[] = {
        QSW_WR_SEND, QSW_WR_SEND_WITH_IMM, QSW_WR_SEND_WITH_INV, QSW_WR_RDMA_WRITE,
        QSW_WR_RDMA_WRITE_WITH_IMM, QSW_WR_RDMA_READ, QSW_WR_ATOMIC_CMP_AND_SWP,
        QSW_WR_ATOMIC_FETCH_AND_ADD, QSW_WR_LOCAL_INV,
    };
    static uint8_t inl[300];
    uint8_t b0 = (uint8_t)take(in, 1), b1 = (uint8_t)take(in, 1), b2 = (uint8_t)take(in, 1);
    struct fz_qp *q = pick_qp(b0);
    struct fz_node *self = q->node, *peer = peer_of(q);
    struct qsw_send_wr wr;
    unsigned nsge = (b2 >> 4) & 3;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id = next_wr_id(q);
    wr.opcode = b1 >= 0xf8 ? b1 & 0xf : ops[b1 % 9];
    wr.send_flags = (b2 & 1 ? 0 : QSW_SEND_SIGNALED) | (b2 & 2 ? QSW_SEND_SOLICITED : 0) |
                    (b2 & 4 ? QSW_SEND_FENCE : 0) | (b2 & 8 ? QSW_SEND_INLINE : 0);
    if (b2 & 0x40) {
        /* the most SGEs, small pieces of the local region */
        wr.num_sge = QSW_MAX_SGE;
        for (unsigned i = 0; i < QSW_MAX_SGE; i++) {
            sge_set(&wr.sg_list[i], &self->mr[MR_LOCAL], 64 * i, 1 + 7 * i);
        }
    } else {
        wr.num_sge = nsge;
        for (unsigned i = 0; i < nsge; i++) {
            uint8_t s = (uint8_t)take(in, 1);
            uint64_t off = take(in, 2);
            uint32_t len = (uint32_t)take(in, 2);

            if (s & 0x40) {
                len |= (uint32_t)take(in, 2) << 16;     /* messages up to 2^31 and past */
            }
            sge_set(&wr.sg_list[i], &self->mr[s % FZ_NMR], off, len);
            if (s & 0x80) {
                wr.sg_list[i].lkey = (uint32_t)take(in, 4);
            }
        }
    }
    if (b2 & 8) {
        wr.inline_len = (uint32_t)take(in, 2) % sizeof(inl);
        memset(inl, b1, wr.inline_len);
        wr.inline_data = inl;
    }
    if (wr.opcode == QSW_WR_ATOMIC_CMP_AND_SWP || wr.opcode == QSW_WR_ATOMIC_FETCH_AND_ADD) {
        remote_ref(in, peer, &wr.atomic.rkey, &wr.atomic.remote_addr, true);
        wr.atomic.compare_add = take(in, 2);
        wr.atomic.swap = take(in, 2);
    } else if (wr.opcode == QSW_WR_LOCAL_INV) {
        uint8_t s = (uint8_t)take(in, 1);

        wr.invalidate_rkey = self->mr[s % FZ_NMR].key ^ (s & 0x80 ? 1 : 0);
    } else if (wr.opcode != QSW_WR_SEND && wr.opcode != QSW_WR_SEND_WITH_IMM) {
        remote_ref(in, peer, &wr.rdma.rkey, &wr.rdma.remote_addr, false);
        wr.invalidate_rkey = wr.rdma.rkey;
    }
    wr.imm_data = (uint32_t)wr.wr_id;
    if (q->type == QSW_QPT_UD) {
        ud_av(&wr, q, b0 & 8);
        if (b0 & 0x10) {
            wr.ud.remote_qpn = (uint32_t)take(in, 3);
        }
        switch ((b0 >> 5) & 3) {
        case 0:
            wr.ud.remote_qkey = 0x80000000u;        /* the QP's own Q_Key */
            break;
        case 1:
            break;
        default:
            wr.ud.remote_qkey = (uint32_t)take(in, 4);
            break;
        }
    }
    post_send(q, &wr);
}

static void op_post_recv(struct input *in)
{
    uint8_t b0 = (uint8_t)take(in, 1), b1 = (uint8_t)take(in, 1);
    struct fz_qp *q = pick_qp(b0);
    unsigned count = 1 + (b1 & 3);

    for (unsigned k = 0; k < count; k++) {
        struct qsw_sge sg[QSW_MAX_SGE];
        unsigned nsge;

        if (b1 & 0x80) {
            nsge = QSW_MAX_SGE;
            for (unsigned i = 0; i < nsge; i++) {
                sge_set(&sg[i], &q->node->mr[MR_RECV], 100 * i, 16 + i);
            }
        } else {
            nsge = (b1 >> 2) & 3;
            for (unsigned i = 0; i < nsge; i++) {
                uint8_t s = (uint8_t)take(in, 1);
                uint64_t off = take(in, 2);
                uint32_t len = (uint32_t)take(in, 2);

                if (s & 0x40) {
                    len |= (uint32_t)take(in, 2) << 16;
                }
                sge_set(&sg[i], &q->node->mr[s % FZ_NMR], off, len);
                if (s & 0x80) {
                    sg[i].lkey = (uint32_t)take(in, 4);
                }
            }
        }
        post_recv(q, sg, nsge);
    }
}

static void modify_state(struct fz_qp *q, uint8_t state)
{
    struct qsw_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = state;
    qsw_qp_modify(q->qp, &a, QSW_QP_STATE);
}

static void op_modify(struct input *in)
{
    uint8_t b0 = (uint8_t)take(in, 1), kind = (uint8_t)take(in, 1);
    struct fz_qp *q = pick_qp(b0);

    switch (kind & 7) {
    case 0:
        modify_state(q, QSW_QPS_ERR);
        break;
    case 1:
        modify_state(q, QSW_QPS_RESET);
        break;
    case 2: {
        /* both ends again from RESET, with PSNs and MTU from the input */
        struct fz_qp *a = &fz.node[0].qp[q->idx], *b = &fz.node[1].qp[q->idx];
        uint32_t pa = (uint32_t)take(in, 3), pb = (uint32_t)take(in, 3);
        enum qsw_mtu mtu = (enum qsw_mtu)(1 + (kind >> 3) % 5);
        bool v6 = kind & 0x80;

        modify_state(a, QSW_QPS_RESET);
        modify_state(b, QSW_QPS_RESET);
        qp_forget(a);
        qp_forget(b);
        qp_bring_up(a, QSW_QPS_RTS, mtu, v6, pb, pa);
        qp_bring_up(b, QSW_QPS_RTS, mtu, v6, pa, pb);
        break;
    }
    case 3:
        modify_state(q, QSW_QPS_SQD);
        break;
    case 4:
        modify_state(q, QSW_QPS_RTS);
        break;
    case 5: {
        /* any mask, any values */
        struct qsw_qp_attr a;
        uint32_t mask = (uint32_t)take(in, 3);

        qsw_qp_query(q->qp, &a);
        a.qp_state = (uint32_t)take(in, 1) % 8;
        a.cur_qp_state = (uint32_t)take(in, 1) % 8;
        a.path_mtu = (uint32_t)take(in, 1) % 7;
        a.qkey = (uint32_t)take(in, 4);
        a.rq_psn = (uint32_t)take(in, 3);
        a.sq_psn = (uint32_t)take(in, 3);
        a.dest_qp_num = (uint32_t)take(in, 3);
        a.qp_access_flags = (uint32_t)take(in, 1);
        a.max_rd_atomic = (uint8_t)take(in, 1);
        a.max_dest_rd_atomic = (uint8_t)take(in, 1) % 32;
        a.min_rnr_timer = (uint8_t)take(in, 1);
        a.timeout = (uint8_t)take(in, 1);
        a.retry_cnt = (uint8_t)take(in, 1);
        a.rnr_retry = (uint8_t)take(in, 1);
        if (kind & 0x80) {
            struct fz_node *self = q->node, *peer = peer_of(q);
            bool v6 = qsw_gid_is_v4(a.av.dgid);         /* switch family */

            memcpy(a.av.sgid, v6 ? self->gid6 : self->gid4, 16);
            memcpy(a.av.dgid, v6 ? peer->gid6 : peer->gid4, 16);
        }
        qsw_qp_modify(q->qp, &a, mask);
        break;
    }
    case 6:
        qsw_qp_destroy(q->qp);
        q->qp = NULL;
        qp_create(q);
        break;
    default:
        modify_state(q, QSW_QPS_RESET);
        qp_forget(q);
        qp_bring_up(q, QSW_QPS_RTR, spec_mtu(q->idx), spec_v6(q->idx), (uint32_t)take(in, 3), 0);
        break;
    }
    if (qsw_qp_state(q->qp) == QSW_QPS_RESET) {
        qp_forget(q);
    }
}

static void op_mr(struct input *in)
{
    uint8_t b0 = (uint8_t)take(in, 1), kind = (uint8_t)take(in, 1);
    struct fz_mr *mr = &fz.node[b0 >> 7].mr[(b0 & 0x7f) % FZ_NMR];

    switch (kind & 3) {
    case 0:
        mr->valid = false;
        break;
    case 1:
        mr->gen++;
        mr->key = (mr->key & ~0xffu) | mr->gen;
        mr->valid = true;
        break;
    default:
        mr->access ^= 1u << ((kind >> 2) & 3);
        break;
    }
}

static void op_wire(struct input *in)
{
    uint8_t b = (uint8_t)take(in, 1);
    unsigned k = 1 + (b >> 3);

    switch (b & 7) {
    case 0:
        while (k-- && fz.qhead) {
            deliver_one();
        }
        break;
    case 1:
        while (k-- && fz.qhead) {
            struct fz_frame *f = fz.qhead;

            fz.qhead = f->next;
            if (!fz.qhead) {
                fz.qtail = NULL;
            }
            fz.qlen--;
            free(f);
        }
        break;
    case 2: {
        /* the k-th frame first */
        struct fz_frame **pp = &fz.qhead, *f, *prev = NULL;

        while (*pp && --k) {
            prev = *pp;
            pp = &(*pp)->next;
        }
        f = *pp;
        if (f && f != fz.qhead) {
            *pp = f->next;
            if (fz.qtail == f) {
                fz.qtail = prev;
            }
            f->next = fz.qhead;
            fz.qhead = f;
        }
        break;
    }
    case 3:
        if (fz.qhead) {
            rx(fz.qhead->to, fz.qhead->data, fz.qhead->len);     /* a duplicate */
        }
        break;
    case 5:
    case 6: {
        /* the engine's own fault injection on what a node sends */
        struct fz_node *n = &fz.node[(b & 7) - 5];
        uint8_t r = (uint8_t)take(in, 1);
        struct qsw_fault f;

        memset(&f, 0, sizeof(f));
        f.loss_ppm = r & 1 ? 50000 : 0;
        f.dup_ppm = r & 2 ? 50000 : 0;
        f.reorder_ppm = r & 4 ? 200000 : 0;
        f.corrupt_ppm = r & 8 ? 20000 : 0;
        f.delay_ns = r & 0x10 ? take(in, 2) * 100 : 0;
        f.reorder_window_ns = r & 0x20 ? take(in, 2) * 1000 : 0;
        f.seed = take(in, 2);
        /* frames corrupted earlier may still be held back: until faults are off */
        n->corrupting |= f.corrupt_ppm != 0;
        qsw_engine_set_fault(n->eng, &f);
        break;
    }
    case 7:
        for (int i = 0; i < 2; i++) {
            qsw_engine_set_fault(fz.node[i].eng, NULL);
            fz.node[i].corrupting = false;
        }
        break;
    default:
        while (fz.qhead) {
            struct fz_frame *f = fz.qhead;

            fz.qhead = f->next;
            free(f);
        }
        fz.qtail = NULL;
        fz.qlen = 0;
        break;
    }
}

static void op_clock(struct input *in)
{
    uint8_t b = (uint8_t)take(in, 1);

    if (b >= 0xf0) {
        uint64_t next = fz.node[0].next < fz.node[1].next ? fz.node[0].next : fz.node[1].next;

        if (next != UINT64_MAX && next > fz.now) {
            fz.now = next;
        }
    } else {
        fz.now += (uint64_t)((b & 15) + 1) << (2 * (b >> 4) + 6);
    }
}

enum { P_FRAME, P_REPLAY, P_POLL, P_RUN, P_CLOCK, P_POST_SEND, P_POST_RECV, P_MODIFY, P_MR, P_WIRE };

static const uint8_t op_table[16] = {
    P_FRAME, P_FRAME, P_FRAME, P_FRAME, P_REPLAY, P_REPLAY, P_POLL, P_POLL,
    P_RUN, P_RUN, P_CLOCK, P_POST_SEND, P_POST_RECV, P_MODIFY, P_MR, P_WIRE,
};


static void run_program(struct input *in)
{
    static const char *const names[] = {
        "FRAME", "REPLAY", "POLL", "RUN", "CLOCK", "POST_SEND", "POST_RECV", "MODIFY", "MR", "WIRE",
    };

    for (unsigned steps = 0; in->n && steps < FZ_MAX_STEPS; steps++) {
        uint8_t b = (uint8_t)take(in, 1);

        if (trace) {
            fprintf(stderr, "op %3u %-9s next %02x %02x %02x %02x  now %llu  QP states %u%u%u%u%u%u%u%u/"
                    "%u%u%u%u%u%u%u%u\n", steps, names[op_table[b & 15]], in->n > 0 ? in->p[0] : 0,
                    in->n > 1 ? in->p[1] : 0, in->n > 2 ? in->p[2] : 0, in->n > 3 ? in->p[3] : 0,
                    (unsigned long long)fz.now,
                    qsw_qp_state(fz.node[0].qp[0].qp), qsw_qp_state(fz.node[0].qp[1].qp),
                    qsw_qp_state(fz.node[0].qp[2].qp), qsw_qp_state(fz.node[0].qp[3].qp),
                    qsw_qp_state(fz.node[0].qp[4].qp), qsw_qp_state(fz.node[0].qp[5].qp),
                    qsw_qp_state(fz.node[0].qp[6].qp), qsw_qp_state(fz.node[0].qp[7].qp),
                    qsw_qp_state(fz.node[1].qp[0].qp), qsw_qp_state(fz.node[1].qp[1].qp),
                    qsw_qp_state(fz.node[1].qp[2].qp), qsw_qp_state(fz.node[1].qp[3].qp),
                    qsw_qp_state(fz.node[1].qp[4].qp), qsw_qp_state(fz.node[1].qp[5].qp),
                    qsw_qp_state(fz.node[1].qp[6].qp), qsw_qp_state(fz.node[1].qp[7].qp));
        }
        switch (op_table[b & 15]) {
        case P_FRAME:
            op_frame(in);
            break;
        case P_REPLAY:
            op_replay(in);
            break;
        case P_POLL: {
            uint8_t p = (uint8_t)take(in, 1);

            do_poll(&fz.node[p & 1], p >> 1);
            break;
        }
        case P_RUN: {
            uint8_t r = (uint8_t)take(in, 1);

            run(1 + (r & 15), r & 0x10);
            break;
        }
        case P_CLOCK:
            op_clock(in);
            break;
        case P_POST_SEND:
            op_post_send(in);
            break;
        case P_POST_RECV:
            op_post_recv(in);
            break;
        case P_MODIFY:
            op_modify(in);
            break;
        case P_MR:
            op_mr(in);
            break;
        default:
            op_wire(in);
            break;
        }
    }
}

/* Settle, then every QP to ERR: everything the engine holds must come back. */
static void finish(void)
{
    for (int i = 0; i < 2; i++) {
        qsw_engine_set_fault(fz.node[i].eng, NULL);     /* held frames leave now */
        fz.node[i].corrupting = false;
    }
    run(8, true);
    for (int i = 0; i < 2; i++) {
        for (unsigned k = 0; k < FZ_NQP; k++) {
            struct fz_qp *q = &fz.node[i].qp[k];

            if (qsw_qp_state(q->qp) == QSW_QPS_RESET) {
                continue;
            }
            modify_state(q, QSW_QPS_ERR);
        }
    }
    for (int i = 0; i < 2; i++) {
        struct fz_node *n = &fz.node[i];

        for (unsigned k = 0; k < FZ_NQP; k++) {
            struct fz_qp *q = &n->qp[k];

            if (q->held) {
                BUG("QP %#x in ERR still holds receive WR %#llx", q->qpn,
                    (unsigned long long)q->held_wr.wr_id);
            }
            for (unsigned j = q->sq_head; j != q->sq_tail; j++) {
                if (q->sq[j % FZ_SQ_TRACK].signaled) {
                    BUG("QP %#x in ERR: signaled WR %#llx never completed", q->qpn,
                        (unsigned long long)q->sq[j % FZ_SQ_TRACK].wr_id);
                }
            }
        }
        if (qsw_engine_poll(n->eng, 64) != UINT64_MAX) {
            BUG("node %d: not idle with every QP in ERR or RESET", i);
        }
    }
}

#ifdef FUZZ_SW_SEEDGEN
static struct qsw_stats seed_stats;     /* the target's, at the end of the program */
#endif

static void run_input(const uint8_t *data, size_t size)
{
    struct input in = { data, size };

    uint8_t cfg = (uint8_t)take(&in, 1);

    setup(cfg, (uint8_t)take(&in, 1));
    run_program(&in);
#ifdef FUZZ_SW_SEEDGEN
    qsw_engine_stats(fz.node[0].eng, &seed_stats);
#endif
    finish();
    teardown();
}

static void init_once(void)
{
    static const uint8_t mac[6] = { 0x02 };

    if (checker) {
        return;
    }
    trace = getenv("FUZZ_SW_TRACE") != NULL;
    checker = qsw_engine_new(&fz_ops, NULL, mac);
    if (!checker) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init_once();
    run_input(data, size);
    return 0;
}


#ifdef FUZZ_SW_SEEDGEN
/* ---- the seed corpus generator -------------------------------------------------------------------- */

#include <sys/stat.h>

static struct {
    uint8_t b[1 << 17];
    size_t n;
} prog;

static void e1(unsigned v)
{
    if (prog.n == sizeof(prog.b)) {
        abort();
    }
    prog.b[prog.n++] = (uint8_t)v;
}

static void en(uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++) {
        e1((unsigned)(v >> (8 * i)));
    }
}

static void eop(unsigned op)
{
    for (unsigned i = 0; i < 16; i++) {
        if (op_table[i] == op) {
            e1(i);
            return;
        }
    }
    abort();
}

/* Frames node 1 sends towards node 0, caught in send_frame instead of going on the wire. */
#define CAUGHT_MAX 256
static struct {
    size_t len;
    uint8_t f[QSW_MAX_FRAME];
} caught[CAUGHT_MAX];
static unsigned ncaught;

static void catch_frame(const uint8_t *f, size_t len)
{
    if (ncaught < CAUGHT_MAX) {
        memcpy(caught[ncaught].f, f, len);
        caught[ncaught++].len = len;
    }
}

/* Each caught frame becomes a raw FRAME op (ICRC recomputed after the fuzzer's mutations). */
static void flush_caught(void)
{
    for (unsigned i = 0; i < ncaught; i++) {
        eop(P_FRAME);
        e1(F_RAW | F_ICRC);
        en(caught[i].len, 2);
        for (size_t k = 0; k < caught[i].len; k++) {
            e1(caught[i].f[k]);
        }
        eop(P_POLL);
        e1(64 << 1);                    /* node 0, budget 64 */
        eop(P_WIRE);
        e1(4);                          /* what node 0 answers is not part of the seed */
        rx(0, caught[i].f, caught[i].len);
    }
    ncaught = 0;
}

/* The program starts with the config byte and an empty wire; node 1 hears what node 0 sent. */
static void begin_plan(uint8_t cfg, uint8_t cb_plan)
{
    prog.n = 0;
    e1(cfg);
    e1(cb_plan);
    eop(P_WIRE);
    e1(4);
    setup(cfg, cb_plan);
    while (fz.qhead) {
        if (fz.qhead->to == 1) {
            deliver_one();
        } else {
            struct fz_frame *f = fz.qhead;

            fz.qhead = f->next;
            fz.qlen--;
            free(f);
        }
    }
    fz.qtail = NULL;
    fz.capture = catch_frame;
    fz.capture_to = 0;
    ncaught = 0;
    flush_caught();
}

static void begin(uint8_t cfg)
{
    begin_plan(cfg, 0);                 /* no posts from callbacks */
}

/* Node 1 talks, node 0 answers, the clock stands still; node 1's frames go into the program. */
static void converse(void)
{
    for (int round = 0; round < 64; round++) {
        bool any;

        do_poll(&fz.node[1], 64);
        any = ncaught != 0;
        flush_caught();
        do_poll(&fz.node[0], 64);
        any |= fz.qhead != NULL;
        while (fz.qhead) {
            deliver_one();
            flush_caught();
        }
        if (!any) {
            break;
        }
    }
}

static unsigned nseeds;

static void end(const char *dir, const char *name)
{
    char path[512];
    FILE *f;

    eop(P_RUN);
    e1(0x10 | 7);                       /* 8 rounds, the clock may move */
    fz.capture = NULL;
    teardown();
    snprintf(path, sizeof(path), "%s/%02u-%s", dir, ++nseeds, name);
    f = fopen(path, "wb");
    if (!f || fwrite(prog.b, 1, prog.n, f) != prog.n || fclose(f)) {
        perror(path);
        exit(1);
    }
    /* the harness must run it; what the target dropped says whether the frames were valid */
    run_input(prog.b, prog.n);
    printf("%-32s %6zu bytes  rx %3llu  drops: malformed %llu icrc %llu qp %llu state %llu "
           "addr %llu seq %llu\n", path + strlen(dir) + 1, prog.n,
           (unsigned long long)seed_stats.rx_frames, (unsigned long long)seed_stats.drop_malformed,
           (unsigned long long)seed_stats.drop_icrc, (unsigned long long)seed_stats.drop_unknown_qp,
           (unsigned long long)seed_stats.drop_bad_state, (unsigned long long)seed_stats.drop_addr,
           (unsigned long long)seed_stats.drop_out_of_seq);
}

#define V6 0x1000u          /* b_post: UD over IPv6 */

/* A WR on node 1's QP qi towards node 0's MR amr at aoff. */
static void b_post(unsigned qi, uint32_t op, uint32_t len, unsigned amr, uint64_t aoff,
                   uint32_t flags)
{
    struct fz_qp *q = &fz.node[1].qp[qi];
    const struct fz_mr *mr = &fz.node[0].mr[amr];
    struct qsw_send_wr wr;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id = next_wr_id(q);
    wr.opcode = op;
    wr.send_flags = QSW_SEND_SIGNALED | (flags & 0xff);
    if (is_atomic(op)) {
        wr.num_sge = 1;
        sge_set(&wr.sg_list[0], &q->node->mr[MR_LOCAL], 64, 8);
        wr.atomic.remote_addr = mr->va + aoff;
        wr.atomic.rkey = mr->key;
        wr.atomic.compare_add = op == QSW_WR_ATOMIC_CMP_AND_SWP ? 0 : 5;
        wr.atomic.swap = 0x0102030405060708ull;
    } else {
        if (len) {
            wr.num_sge = 1;
            sge_set(&wr.sg_list[0], &q->node->mr[MR_LOCAL], 0, len);
        }
        wr.rdma.remote_addr = mr->va + aoff;
        wr.rdma.rkey = mr->key;
        wr.invalidate_rkey = fz.node[0].mr[MR_INV].key;
        wr.imm_data = 0x0d0c0b0a;
    }
    if (q->type == QSW_QPT_UD) {
        ud_av(&wr, q, flags & V6);
    }
    if (post_send(q, &wr)) {
        fprintf(stderr, "seed: post on QP %#x refused\n", q->qpn);
        exit(1);
    }
}

/* Template FRAME op for node 0's QP qi, as build_template reads it. */
struct tmpl {
    uint8_t ctl, qi, opcode;
    int8_t psn_delta;
    uint8_t flags;
    uint8_t mr;                 /* RETH, AtomicETH, IETH: node 0's MR */
    uint16_t off;
    uint32_t rlen;              /* RETH length */
    uint8_t syn;                /* AETH */
    uint32_t msn;
    uint16_t pl;                /* payload selector (see build_template) */
};

static void e_tmpl(const struct tmpl *t)
{
    uint32_t m = qsw_opmask[t->opcode];
    enum qsw_qp_type type = specs[t->qi].type;
    unsigned sel = 0;

    eop(P_FRAME);
    e1(t->ctl | F_LENS | F_ICRC);
    e1(t->qi);
    if (type == QSW_QPT_RC) {
        while (rc_ops[sel] != t->opcode) {
            sel++;
        }
    } else {
        sel = type == QSW_QPT_UC ? t->opcode - OP_UC : t->opcode & 1;
    }
    e1(sel);
    e1((uint8_t)t->psn_delta);
    e1(t->flags);
    if (m & M_DETH) {
        e1(0);
    }
    if (m & M_RETH) {
        e1(t->mr);
        en(t->off, 2);
        en(t->rlen, 2);
    }
    if (m & M_ATMETH) {
        e1(t->mr);
        en(t->off, 2);
        en(9, 2);
        en(0, 2);
    }
    if (m & M_AETH) {
        e1(t->syn);
        en(t->msn, 3);
    }
    if (m & M_ATMACK) {
        en(0x55, 2);
    }
    if (m & M_IMM) {
        en(0x11223344, 4);
    }
    if (m & M_IETH) {
        e1(MR_INV);
    }
    en(t->pl, 2);
    e1(0x30);                           /* payload fill */
    e1(0);                              /* no length tweak */
    eop(P_POLL);
    e1(64 << 1);
}

#define MTU_PL 0x4000               /* payload of exactly the path MTU */

static void tmpl_seed(const char *dir, const char *name, uint8_t cfg, const struct tmpl *t,
                      unsigned n)
{
    prog.n = 0;
    e1(cfg);
    e1(0);
    for (unsigned i = 0; i < n; i++) {
        e_tmpl(&t[i]);
    }
    setup(cfg, 0);
    end(dir, name);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "tests/fuzz/seeds-sw";
    const uint8_t Q = 0x40;         /* config: no initial traffic */

    mkdir(dir, 0777);
    init_once();

    /* requests from node 1, frames captured in the order they left */
    begin(Q); b_post(0, QSW_WR_SEND, 100, 0, 0, 0); converse(); end(dir, "rc-send");
    begin(Q); b_post(0, QSW_WR_SEND, 700, 0, 0, QSW_SEND_SOLICITED); converse(); end(dir, "rc-send-3pkt-se");
    begin(Q); b_post(0, QSW_WR_SEND_WITH_IMM, 40, 0, 0, 0); converse(); end(dir, "rc-send-imm");
    begin(Q); b_post(0, QSW_WR_SEND_WITH_INV, 10, 0, 0, 0); converse(); end(dir, "rc-send-inv");
    begin(Q); b_post(0, QSW_WR_SEND, 0, 0, 0, 0); converse(); end(dir, "rc-send-empty");
    begin(Q); b_post(0, QSW_WR_SEND, 2000, 0, 0, 0); converse(); end(dir, "rc-send-too-long");
    begin(Q);
    for (int i = 0; i < 6; i++) {
        b_post(0, QSW_WR_SEND, 10, 0, 0, 0);    /* 4 receive WRs: the fifth gets an RNR NAK */
    }
    converse(); end(dir, "rc-send-rnr");
    begin(Q); b_post(0, QSW_WR_RDMA_WRITE, 100, MR_RW, 0x10, 0); converse(); end(dir, "rc-write");
    begin(Q); b_post(0, QSW_WR_RDMA_WRITE, 600, MR_RW, 0, 0); converse(); end(dir, "rc-write-3pkt");
    begin(Q); b_post(0, QSW_WR_RDMA_WRITE_WITH_IMM, 300, MR_RW, 0, 0); converse(); end(dir, "rc-write-imm");
    begin(Q); b_post(0, QSW_WR_RDMA_WRITE, 0, MR_RW, 0, 0); converse(); end(dir, "rc-write-empty");
    begin(Q); b_post(0, QSW_WR_RDMA_WRITE, 100, MR_RO, 0, 0); converse(); end(dir, "rc-write-no-access");
    begin(Q); b_post(0, QSW_WR_RDMA_WRITE, 100, MR_RW, 16380, 0); converse(); end(dir, "rc-write-out-of-bounds");
    begin(Q); b_post(0, QSW_WR_RDMA_READ, 100, MR_RW, 0, 0); converse(); end(dir, "rc-read");
    begin(Q); b_post(0, QSW_WR_RDMA_READ, 1000, MR_RO, 0, 0); converse(); end(dir, "rc-read-4pkt");
    begin(Q); b_post(0, QSW_WR_ATOMIC_CMP_AND_SWP, 8, MR_ATOM, 0, 0); converse(); end(dir, "rc-cmp-swap");
    begin(Q); b_post(0, QSW_WR_ATOMIC_FETCH_AND_ADD, 8, MR_ATOM, 8, 0); converse(); end(dir, "rc-fetch-add");
    begin(Q); b_post(0, QSW_WR_ATOMIC_FETCH_AND_ADD, 8, MR_ATOM, 4, 0); converse(); end(dir, "rc-atomic-misaligned");
    begin(Q);
    b_post(0, QSW_WR_SEND, 300, 0, 0, 0);
    b_post(0, QSW_WR_RDMA_WRITE, 300, MR_RW, 0, 0);
    b_post(0, QSW_WR_RDMA_READ, 300, MR_RW, 0, 0);
    b_post(0, QSW_WR_ATOMIC_FETCH_AND_ADD, 8, MR_ATOM, 0, 0);
    b_post(0, QSW_WR_RDMA_READ, 20, MR_RW, 64, QSW_SEND_FENCE);
    b_post(0, QSW_WR_ATOMIC_CMP_AND_SWP, 8, MR_ATOM, 16, 0);
    converse(); end(dir, "rc-mixed");
    /* the first receive WR holds 1 KB, the second 5 KB */
    begin(Q | 0x0b); b_post(0, QSW_WR_SEND, 1000, 0, 0, 0); b_post(0, QSW_WR_SEND, 3000, 0, 0, 0);
    converse(); end(dir, "rc-v6-mtu1024-send");
    begin(Q | 0x05); b_post(0, QSW_WR_RDMA_WRITE, 6000, MR_RW, 0, 0); converse(); end(dir, "rc-mtu4096-write");
    begin(Q); b_post(1, QSW_WR_SEND, 1000, 0, 0, 0); b_post(1, QSW_WR_SEND, 3000, 0, 0, 0);
    converse(); end(dir, "rc-v6-psn-wrap-send");
    begin(Q); b_post(1, QSW_WR_RDMA_WRITE, 2000, MR_RW, 0, 0); converse(); end(dir, "rc-v6-write");
    begin(Q); b_post(1, QSW_WR_RDMA_READ, 2500, MR_RW, 0, 0); b_post(1, QSW_WR_RDMA_READ, 10, MR_RW, 0, 0);
    converse(); end(dir, "rc-v6-read-overrun");
    begin(Q); b_post(2, QSW_WR_SEND, 1200, 0, 0, 0); converse(); end(dir, "uc-send-3pkt");
    begin(Q); b_post(2, QSW_WR_RDMA_WRITE_WITH_IMM, 100, MR_RW, 0, 0); converse(); end(dir, "uc-write-imm");
    begin(Q); b_post(7, QSW_WR_SEND, 300, 0, 0, 0); converse(); end(dir, "uc-v6-big-qpn");
    begin(Q); b_post(3, QSW_WR_SEND_WITH_IMM, 100, 0, 0, 0); converse(); end(dir, "ud-send-imm");
    begin(Q); b_post(3, QSW_WR_SEND, 984, 0, 0, V6); converse(); end(dir, "ud-v6-send");
    begin(Q); b_post(4, QSW_WR_SEND, 50, 0, 0, 0); converse(); end(dir, "rc-to-rtr");
    begin(Q); b_post(5, QSW_WR_SEND, 50, 0, 0, 0); converse(); end(dir, "rc-to-err");

    /* responses to node 0's requests in flight (config without bit 6) */
    begin(0x00); converse(); end(dir, "responses-mtu256");
    begin(0x0c); converse(); end(dir, "responses-v6-mtu2048");
    begin_plan(0x35, CB_COMPLETE | CB_OTHER_QP); converse(); end(dir, "responses-mtu4096-repost");

    /* templates */
    {
        const struct tmpl send = { .qi = 0, .opcode = OP_SEND_ONLY, .flags = 2, .pl = 100 };
        const struct tmpl write = { .qi = 0, .opcode = OP_WRITE_ONLY, .flags = 2, .mr = MR_RW,
                                    .off = 0x100, .rlen = 200, .pl = 200 };
        const struct tmpl read = { .qi = 0, .opcode = OP_READ_REQ, .mr = MR_RW, .rlen = 600 };
        const struct tmpl atomics[] = {
            { .qi = 0, .opcode = OP_CMP_SWAP, .mr = MR_ATOM, .off = 8 },
            { .qi = 0, .opcode = OP_FETCH_ADD, .mr = MR_ATOM, .off = 16 },
            { .qi = 0, .opcode = OP_CMP_SWAP, .psn_delta = -2, .mr = MR_ATOM, .off = 8 },
        };
        const struct tmpl ud = { .qi = 3, .opcode = OP_UD + OP_SEND_ONLY_IMM, .pl = 64 };
        const struct tmpl uc[] = {
            { .qi = 2, .opcode = OP_UC + OP_SEND_FIRST, .pl = MTU_PL },
            { .qi = 2, .opcode = OP_UC + OP_SEND_LAST, .pl = 10 },
        };
        const struct tmpl rc_msg[] = {
            { .qi = 0, .opcode = OP_SEND_FIRST, .pl = MTU_PL },
            { .qi = 0, .opcode = OP_SEND_MIDDLE, .pl = MTU_PL },
            { .qi = 0, .opcode = OP_SEND_LAST_IMM, .flags = 3, .pl = 33 },
        };
        /* node 0 in flight at set-up: SEND 100-101, WRITE 102, READ 103-105, CMP_SWAP 106,
           FETCH_ADD 107, SEND_WITH_IMM 108; PSN deltas count from the oldest unacknowledged */
        const struct tmpl resp[] = {
            { .qi = 0, .opcode = OP_ACK, .psn_delta = 2, .syn = 0x1f, .msn = 2 },
            { .qi = 0, .opcode = OP_READ_RESP_FIRST, .syn = 0x1f, .msn = 3, .pl = MTU_PL },
            { .qi = 0, .opcode = OP_READ_RESP_MIDDLE, .pl = MTU_PL },
            { .qi = 0, .opcode = OP_READ_RESP_LAST, .syn = 0x1f, .msn = 3, .pl = 188 },
            { .qi = 0, .opcode = OP_ATOMIC_ACK, .syn = 0x1f, .msn = 4 },
            { .qi = 0, .opcode = OP_ATOMIC_ACK, .syn = 0x1f, .msn = 5 },
            { .qi = 0, .opcode = OP_ACK, .syn = 0x1f, .msn = 6 },
        };
        const struct tmpl naks[] = {
            { .qi = 0, .opcode = OP_ACK, .psn_delta = 1, .syn = 0x60, .msn = 0 },
            { .qi = 0, .opcode = OP_ACK, .psn_delta = 0, .syn = 0x21, .msn = 0 },
            { .qi = 0, .opcode = OP_ACK, .psn_delta = 3, .syn = 0x62, .msn = 1 },
        };

        tmpl_seed(dir, "t-rc-send", Q, &send, 1);
        tmpl_seed(dir, "t-rc-write", Q, &write, 1);
        tmpl_seed(dir, "t-rc-read", Q, &read, 1);
        tmpl_seed(dir, "t-rc-atomics-dup", Q, atomics, 3);
        tmpl_seed(dir, "t-ud-send-imm", Q, &ud, 1);
        tmpl_seed(dir, "t-uc-send", Q, uc, 2);
        tmpl_seed(dir, "t-rc-send-3pkt", Q, rc_msg, 3);
        tmpl_seed(dir, "t-responses", 0x00, resp, 7);
        tmpl_seed(dir, "t-naks", 0x00, naks, 3);
    }

    /* programs of ops only */
    prog.n = 0;
    e1(0x10);
    e1(CB_COMPLETE | CB_SEND_FRAME);
    eop(P_RUN); e1(0x10 | 3);
    eop(P_REPLAY); e1(1); e1(F_ICRC);                            /* node 1's last frame again */
    eop(P_REPLAY); e1(1 | 2 << 1); e1(F_MUT | F_ICRC); e1(0); en(60, 2); e1(0x01);
    eop(P_RUN); e1(0x10 | 15);
    setup(0x10, CB_COMPLETE | CB_SEND_FRAME);
    end(dir, "ops-replay");

    prog.n = 0;
    e1(0x40 | 0x20);                    /* 4 posts from callbacks, onto other QPs */
    e1(CB_GET_RECV | CB_SGE | CB_EVENT | CB_OTHER_QP);
    eop(P_POST_SEND); e1(0x80); e1(0); e1(0x10); e1(MR_LOCAL); en(0, 2); en(500, 2);
    eop(P_POST_SEND); e1(0x80); e1(5); e1(0x10); e1(MR_LOCAL); en(0, 2); en(900, 2); e1(MR_RW); en(0, 2);
    eop(P_POST_SEND); e1(0x80); e1(7); e1(0x10); e1(MR_LOCAL); en(8, 2); en(8, 2); e1(MR_ATOM); en(0, 2); en(1, 2); en(0, 2);
    eop(P_POST_SEND); e1(0x00); e1(3); e1(0x08); en(200, 2); e1(MR_RW); en(0, 2);
    eop(P_POST_SEND); e1(0x83); e1(1); e1(0x40);
    eop(P_RUN); e1(0x10 | 15);
    eop(P_CLOCK); e1(0xf0);
    eop(P_RUN); e1(0x10 | 15);
    setup(0x40 | 0x20, CB_GET_RECV | CB_SGE | CB_EVENT | CB_OTHER_QP);
    end(dir, "ops-post");

    prog.n = 0;
    e1(0x30);                           /* 16 posts from completions */
    e1(CB_COMPLETE);
    eop(P_MODIFY); e1(0x00); e1(3);                               /* node 0 QP 0 to SQD */
    eop(P_RUN); e1(0x10 | 7);
    eop(P_MODIFY); e1(0x00); e1(4);                               /* back to RTS */
    eop(P_MODIFY); e1(0x01); e1(2 | 2 << 3); en(0xfffffe, 3); en(0xfffffa, 3);   /* reconnect QP 1 */
    eop(P_MR); e1(0x80 | MR_RW); e1(0);                           /* node 1 invalidates its RW MR */
    eop(P_RUN); e1(0x10 | 15);
    eop(P_MODIFY); e1(0x04); e1(7); en(300, 3);                   /* QP 4 to RTR again */
    eop(P_MODIFY); e1(0x06); e1(6);                               /* destroy and re-create QP 6 */
    eop(P_WIRE); e1(2 | 3 << 3);
    eop(P_RUN); e1(0x10 | 15);
    setup(0x30, CB_COMPLETE);
    end(dir, "ops-modify");
    return 0;
}
#endif
