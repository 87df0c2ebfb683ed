/*
 * The two-node test bed of the software RoCEv2 engine (sw_testbed.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sw_testbed.h"

struct tb_frame {
    struct tb_frame *next;
    int to;
    size_t len;
    uint8_t data[];
};

/* ---- fake memory ------------------------------------------------------------------ */

static struct tb_mr *mr_find(struct tb_node *n, uint32_t key, uint32_t pd)
{
    for (unsigned i = 0; i < n->nmr; i++) {
        if (n->mr[i].valid && n->mr[i].key == key && n->mr[i].pd == pd) {
            return &n->mr[i];
        }
    }
    return NULL;
}

static uint8_t *mr_ptr(struct tb_node *n, uint32_t key, uint32_t pd, uint64_t va, uint64_t len,
                       uint32_t access)
{
    struct tb_mr *mr = mr_find(n, key, pd);

    if (!mr || (mr->access & access) != access || va < mr->va || len > mr->len ||
        va - mr->va > mr->len - len) {
        return NULL;
    }
    return n->mem + (va - TB_MEM_BASE);
}

static int sge_walk(struct tb_node *n, struct qsw_qp *qp, const struct qsw_sge *sge, unsigned nsge,
                    uint64_t off, uint8_t *buf, uint32_t len, bool write)
{
    struct tb_qpctx *ctx = qsw_qp_user(qp);

    for (unsigned i = 0; i < nsge && len; i++) {
        uint64_t l = sge[i].length;
        uint8_t *p;
        uint32_t chunk;

        if (off >= l) {
            off -= l;
            continue;
        }
        chunk = (uint32_t)(l - off < len ? l - off : len);
        p = mr_ptr(n, sge[i].lkey, ctx->pd, sge[i].addr + off, chunk,
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
    return len ? -QSW_WC_LOC_LEN_ERR : 0;
}

static int op_sge_read(void *o, struct qsw_qp *qp, const struct qsw_sge *sge, unsigned nsge,
                       uint64_t off, void *dst, uint32_t len)
{
    return sge_walk(o, qp, sge, nsge, off, dst, len, false);
}

static int op_sge_write(void *o, struct qsw_qp *qp, const struct qsw_sge *sge, unsigned nsge,
                        uint64_t off, const void *src, uint32_t len)
{
    return sge_walk(o, qp, sge, nsge, off, (uint8_t *)src, len, true);
}

static int op_rkey_check(void *o, struct qsw_qp *qp, uint32_t pd, uint32_t rkey,
                         uint64_t va, uint64_t len,
                         uint32_t access)
{
    return mr_ptr(o, rkey, pd, va, len, access) ? 0 : -QSW_EACCES;
}

static int op_rkey_read(void *o, struct qsw_qp *qp, uint32_t pd, uint32_t rkey,
                        uint64_t va, void *dst, uint32_t len)
{
    uint8_t *p = mr_ptr(o, rkey, pd, va, len, QSW_ACCESS_REMOTE_READ);

    if (!p) {
        return -QSW_EACCES;
    }
    memcpy(dst, p, len);
    return 0;
}

static int op_rkey_write(void *o, struct qsw_qp *qp, uint32_t pd, uint32_t rkey,
                         uint64_t va, const void *src,
                         uint32_t len)
{
    uint8_t *p = mr_ptr(o, rkey, pd, va, len, QSW_ACCESS_REMOTE_WRITE);

    if (!p) {
        return -QSW_EACCES;
    }
    memcpy(p, src, len);
    return 0;
}

static int op_rkey_atomic(void *o, struct qsw_qp *qp, uint32_t pd, uint32_t rkey,
                          uint64_t va, enum qsw_atomic_op op,
                          uint64_t compare_add, uint64_t swap, uint64_t *orig)
{
    struct tb_node *n = o;
    uint8_t *p = mr_ptr(n, rkey, pd, va, 8, QSW_ACCESS_REMOTE_ATOMIC);
    uint64_t v;

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
    n->atomics++;
    return 0;
}

static int op_get_recv(void *o, struct qsw_qp *qp, struct qsw_recv_wr *out)
{
    struct tb_qpctx *ctx = qsw_qp_user(qp);

    if (ctx->rq_head == ctx->rq_tail) {
        return -QSW_ENOENT;
    }
    *out = ctx->rq[ctx->rq_head++ % TB_RQ_DEPTH];
    return 0;
}

static void op_complete(void *o, struct qsw_qp *qp, const struct qsw_wc *wc)
{
    struct tb_node *n = o;

    if (n->nwc == n->cap_wc) {
        n->cap_wc = n->cap_wc ? n->cap_wc * 2 : 256;
        n->wc = realloc(n->wc, n->cap_wc * sizeof(*n->wc));
        if (!n->wc) {
            abort();
        }
    }
    n->wc[n->nwc++] = *wc;
}

static void op_qp_event(void *o, struct qsw_qp *qp, enum qsw_event ev)
{
    struct tb_node *n = o;

    n->events[ev & 31]++;
}

static int op_send_frame(void *o, const void *frame, size_t len)
{
    struct tb_node *n = o;
    struct tb *tb = n->tb;
    struct tb_frame *f;

    if (tb->drop_all) {
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
    if (tb->tap && tb->tap(tb, n->idx, f->data, &f->len, tb->tap_arg)) {
        free(f);
        return 0;
    }
    if (tb->qtail) {
        tb->qtail->next = f;
    } else {
        tb->qhead = f;
    }
    tb->qtail = f;
    n->waiting++;
    if (n->waiting > n->max_waiting) {
        n->max_waiting = n->waiting;
    }
    if (n->tx_room && n->waiting >= n->tx_room) {
        n->told_busy = true;
        n->busy_answers++;
        return QSW_TX_BUSY;
    }
    return QSW_TX_SENT;
}

/* Zero-copy transmit: the pieces point into the node's memory, cut at TB_MAP_SPLIT. */
static int op_sge_map(void *o, struct qsw_qp *qp, const struct qsw_sge *sge, unsigned nsge,
                      uint64_t off, uint32_t len, struct iovec *iov, unsigned max)
{
    struct tb_node *n = o;
    struct tb *tb = n->tb;
    struct tb_qpctx *ctx = qsw_qp_user(qp);
    unsigned cnt = 0;

    if (tb->map_refuse_every && ++tb->map_calls % tb->map_refuse_every == 0) {
        return 0;
    }
    for (unsigned i = 0; i < nsge && len; i++) {
        uint64_t l = sge[i].length, va;
        uint32_t chunk;

        if (off >= l) {
            off -= l;
            continue;
        }
        chunk = (uint32_t)(l - off < len ? l - off : len);
        va = sge[i].addr + off;
        if (!mr_ptr(n, sge[i].lkey, ctx->pd, va, chunk, 0)) {
            tb->maps_out -= (int)cnt;
            return -QSW_WC_LOC_PROT_ERR;
        }
        while (chunk) {
            uint32_t piece = TB_MAP_SPLIT - (uint32_t)(va % TB_MAP_SPLIT);

            if (piece > chunk) {
                piece = chunk;
            }
            if (cnt == max) {
                tb->maps_out -= (int)cnt;
                return 0;
            }
            iov[cnt].iov_base = n->mem + (va - TB_MEM_BASE);
            iov[cnt++].iov_len = piece;
            tb->maps_out++;
            tb->maps++;
            va += piece;
            chunk -= piece;
            len -= piece;
        }
        off = 0;
    }
    if (len) {
        tb->maps_out -= (int)cnt;
        return 0;
    }
    return (int)cnt;
}

static void op_sge_unmap(void *o, struct qsw_qp *qp, const struct iovec *iov, unsigned cnt)
{
    struct tb_node *n = o;

    for (unsigned i = 0; i < cnt; i++) {
        const uint8_t *b = iov[i].iov_base;

        if (b < n->mem || b + iov[i].iov_len > n->mem + TB_MEM_SIZE) {
            abort();                        /* not a piece op_sge_map gave */
        }
    }
    n->tb->maps_out -= (int)cnt;
    if (n->tb->maps_out < 0) {
        abort();
    }
}

static int op_send_frame_iov(void *o, const struct iovec *iov, unsigned cnt)
{
    struct tb_node *n = o;
    static uint8_t joined[16384];
    size_t len = 0;

    if (n->tb->maps_out <= 0) {
        abort();                            /* the payload must still be mapped */
    }
    n->tb->frames_iov++;
    for (unsigned i = 0; i < cnt; i++) {
        if (iov[i].iov_len > sizeof(joined) - len) {
            abort();
        }
        memcpy(joined + len, iov[i].iov_base, iov[i].iov_len);
        len += iov[i].iov_len;
    }
    return op_send_frame(o, joined, len);
}

static uint64_t op_now(void *o)
{
    struct tb_node *n = o;

    return n->tb->now;
}

static int op_invalidate(void *o, struct qsw_qp *qp, uint32_t pd, uint32_t key)
{
    struct tb_mr *mr = mr_find(o, key, pd);

    if (!mr) {
        return -QSW_EINVAL;
    }
    mr->valid = false;
    return 0;
}

static void op_sq_space(void *o, struct qsw_qp *qp)
{
    struct tb_node *n = o;

    n->sq_space++;
}

static const struct qsw_ops tb_ops = {
    .sge_read = op_sge_read,
    .sge_write = op_sge_write,
    .rkey_check = op_rkey_check,
    .rkey_read = op_rkey_read,
    .rkey_write = op_rkey_write,
    .rkey_atomic = op_rkey_atomic,
    .get_recv = op_get_recv,
    .complete = op_complete,
    .qp_event = op_qp_event,
    .send_frame = op_send_frame,
    .now_ns = op_now,
    .invalidate = op_invalidate,
    .sq_space = op_sq_space,
};

static const struct qsw_ops tb_ops_zero_copy = {
    .sge_read = op_sge_read,
    .sge_write = op_sge_write,
    .rkey_check = op_rkey_check,
    .rkey_read = op_rkey_read,
    .rkey_write = op_rkey_write,
    .rkey_atomic = op_rkey_atomic,
    .get_recv = op_get_recv,
    .complete = op_complete,
    .qp_event = op_qp_event,
    .send_frame = op_send_frame,
    .now_ns = op_now,
    .invalidate = op_invalidate,
    .sq_space = op_sq_space,
    .sge_map = op_sge_map,
    .sge_unmap = op_sge_unmap,
    .send_frame_iov = op_send_frame_iov,
};

/* ---- set-up -------------------------------------------------------------------------- */

static struct tb *tb_new_ops(bool ipv6, const struct qsw_ops *ops)
{
    struct tb *tb = calloc(1, sizeof(*tb));

    if (!tb) {
        abort();
    }
    tb->now = 1000000;
    tb->budget = 64;
    for (int i = 0; i < 2; i++) {
        struct tb_node *n = &tb->node[i];
        uint8_t mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, (uint8_t)(i + 1) };

        n->tb = tb;
        n->idx = i;
        memcpy(n->mac, mac, 6);
        memset(n->gid, 0, 16);
        if (ipv6) {
            n->gid[0] = 0xfd;
            n->gid[15] = (uint8_t)(i + 1);
        } else {
            n->gid[10] = n->gid[11] = 0xff;
            n->gid[12] = 10;
            n->gid[15] = (uint8_t)(i + 1);
        }
        n->mem = calloc(1, TB_MEM_SIZE);
        n->eng = qsw_engine_new(ops, n, mac);
        if (!n->mem || !n->eng) {
            abort();
        }
    }
    return tb;
}

struct tb *tb_new(bool ipv6)
{
    return tb_new_ops(ipv6, &tb_ops);
}

struct tb *tb_new_zero_copy(bool ipv6, unsigned map_refuse_every)
{
    struct tb *tb = tb_new_ops(ipv6, &tb_ops_zero_copy);

    tb->map_refuse_every = map_refuse_every;
    return tb;
}

void tb_free(struct tb *tb)
{
    while (tb->qhead) {
        struct tb_frame *f = tb->qhead;

        tb->qhead = f->next;
        free(f);
    }
    for (int i = 0; i < 2; i++) {
        struct tb_node *n = &tb->node[i];

        qsw_engine_free(n->eng);
        free(n->mem);
        free(n->wc);
        for (unsigned k = 0; k < n->nctx; k++) {
            free(n->ctx[k]->rq);
            free(n->ctx[k]);
        }
    }
    free(tb);
}

uint32_t tb_reg_mr(struct tb_node *n, uint32_t pd, uint64_t off, uint64_t len, uint32_t access)
{
    struct tb_mr *mr = &n->mr[n->nmr];

    if (n->nmr == TB_MAX_MR || off + len > TB_MEM_SIZE) {
        abort();
    }
    mr->key = 0x1000 + n->nmr * 0x101 + (uint32_t)n->idx * 0x10000;
    mr->pd = pd;
    mr->access = access;
    mr->va = TB_MEM_BASE + off;
    mr->len = len;
    mr->valid = true;
    n->nmr++;
    return mr->key;
}

void tb_fill(struct tb_node *n, uint64_t off, uint64_t len, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;

    for (uint64_t i = 0; i < len; i++) {
        x = x * 1103515245u + 12345u;
        n->mem[off + i] = (uint8_t)(x >> 16);
    }
}

struct qsw_qp *tb_qp(struct tb_node *n, uint32_t qpn, enum qsw_qp_type type, uint32_t pd,
                     uint32_t sq_depth)
{
    struct tb_qpctx *ctx = calloc(1, sizeof(*ctx));
    struct qsw_qp_cap cap = { .max_send_wr = sq_depth ? sq_depth : 256, .max_inline = 512 };
    struct qsw_qp *qp;

    if (!ctx || n->nctx == 16) {
        abort();
    }
    ctx->node = n;
    ctx->pd = pd;
    ctx->rq = calloc(TB_RQ_DEPTH, sizeof(*ctx->rq));
    n->ctx[n->nctx++] = ctx;
    qp = qsw_qp_create(n->eng, qpn, type, pd, &cap, ctx);
    return qp;
}

static int to_init(struct qsw_qp *qp, uint32_t access)
{
    struct qsw_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = QSW_QPS_INIT;
    a.qp_access_flags = access;
    return qsw_qp_modify(qp, &a, QSW_QP_STATE | QSW_QP_ACCESS_FLAGS);
}

static int to_rtr_rts(struct tb_node *self, struct tb_node *peer, struct qsw_qp *qp,
                      uint32_t dqpn, uint32_t rq_psn, uint32_t sq_psn, const struct tb_conn *c)
{
    struct qsw_qp_attr a;
    int ret;

    memset(&a, 0, sizeof(a));
    a.qp_state = QSW_QPS_RTR;
    a.path_mtu = c->mtu ? c->mtu : QSW_MTU_1024;
    a.dest_qp_num = dqpn;
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = 16;
    a.min_rnr_timer = c->min_rnr_timer ? c->min_rnr_timer : 1;
    memcpy(a.av.dmac, peer->mac, 6);
    memcpy(a.av.dgid, peer->gid, 16);
    memcpy(a.av.sgid, self->gid, 16);
    a.av.hop_limit = 64;
    ret = qsw_qp_modify(qp, &a, QSW_QP_STATE | QSW_QP_AV | QSW_QP_PATH_MTU | QSW_QP_DEST_QPN |
                                    QSW_QP_RQ_PSN | QSW_QP_MAX_DEST_RD_ATOMIC |
                                    QSW_QP_MIN_RNR_TIMER);
    if (ret) {
        return ret;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = QSW_QPS_RTS;
    a.sq_psn = sq_psn;
    a.timeout = c->timeout ? c->timeout : 10;
    a.retry_cnt = c->retry_cnt;
    a.rnr_retry = c->rnr_retry;
    a.max_rd_atomic = c->max_rd_atomic ? c->max_rd_atomic : 16;
    return qsw_qp_modify(qp, &a, QSW_QP_STATE | QSW_QP_SQ_PSN | QSW_QP_TIMEOUT |
                                     QSW_QP_RETRY_CNT | QSW_QP_RNR_RETRY |
                                     QSW_QP_MAX_QP_RD_ATOMIC);
}

int tb_connect(struct tb *tb, struct qsw_qp *a, struct qsw_qp *b, const struct tb_conn *c)
{
    uint32_t access = c->access ? c->access :
                      QSW_ACCESS_REMOTE_WRITE | QSW_ACCESS_REMOTE_READ | QSW_ACCESS_REMOTE_ATOMIC;
    int ret;

    ret = to_init(a, access);
    ret = ret ? ret : to_init(b, access);
    ret = ret ? ret : to_rtr_rts(&tb->node[0], &tb->node[1], a, qsw_qp_num(b), c->psn_b, c->psn_a, c);
    ret = ret ? ret : to_rtr_rts(&tb->node[1], &tb->node[0], b, qsw_qp_num(a), c->psn_a, c->psn_b, c);
    return ret;
}

int tb_ud_up(struct qsw_qp *qp, uint32_t qkey, enum qsw_mtu mtu)
{
    struct qsw_qp_attr a;
    int ret;

    memset(&a, 0, sizeof(a));
    a.qp_state = QSW_QPS_INIT;
    a.qkey = qkey;
    ret = qsw_qp_modify(qp, &a, QSW_QP_STATE | QSW_QP_QKEY);
    a.qp_state = QSW_QPS_RTR;
    a.path_mtu = mtu;
    ret = ret ? ret : qsw_qp_modify(qp, &a, QSW_QP_STATE | QSW_QP_PATH_MTU);
    a.qp_state = QSW_QPS_RTS;
    ret = ret ? ret : qsw_qp_modify(qp, &a, QSW_QP_STATE);
    return ret;
}

void tb_post_recv_wr(struct qsw_qp *qp, const struct qsw_recv_wr *wr)
{
    struct tb_qpctx *ctx = qsw_qp_user(qp);

    if (ctx->rq_tail - ctx->rq_head >= TB_RQ_DEPTH) {
        abort();
    }
    ctx->rq[ctx->rq_tail++ % TB_RQ_DEPTH] = *wr;
}

void tb_post_recv(struct qsw_qp *qp, uint64_t wr_id, uint64_t va, uint32_t len, uint32_t lkey)
{
    struct qsw_recv_wr wr;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id = wr_id;
    wr.num_sge = 1;
    wr.sg_list[0].addr = va;
    wr.sg_list[0].length = len;
    wr.sg_list[0].lkey = lkey;
    tb_post_recv_wr(qp, &wr);
}

unsigned tb_rq_count(struct qsw_qp *qp)
{
    struct tb_qpctx *ctx = qsw_qp_user(qp);

    return ctx->rq_tail - ctx->rq_head;
}

/* ---- running ----------------------------------------------------------------------- */

/* Frames of a node whose wire holds them stay, in order; the others go. */
static bool tb_deliverable(const struct tb *tb)
{
    for (const struct tb_frame *f = tb->qhead; f; f = f->next) {
        if (!tb->node[1 - f->to].hold) {
            return true;
        }
    }
    return false;
}

bool tb_deliver(struct tb *tb)
{
    struct tb_frame *f, *end = tb->qtail, **pp = &tb->qhead, *prev = NULL;
    bool any = false;

    /* only the frames queued so far: responses wait for the next round */
    while ((f = *pp)) {
        bool last = f == end;
        struct tb_node *from = &tb->node[1 - f->to];

        if (from->hold) {
            prev = f;
            pp = &f->next;
        } else {
            *pp = f->next;
            if (tb->qtail == f) {
                tb->qtail = prev;
            }
            tb->frames++;
            from->waiting--;
            qsw_rx_frame(tb->node[f->to].eng, f->data, f->len);
            free(f);
            any = true;
        }
        if (last) {
            break;
        }
    }
    /* the wire drained: the netdev's completion callback */
    for (int i = 0; i < 2; i++) {
        struct tb_node *n = &tb->node[i];

        if (n->told_busy && !n->waiting) {
            n->told_busy = false;
            n->ready_calls++;
            qsw_engine_tx_ready(n->eng);
        }
    }
    return any;
}

bool tb_run(struct tb *tb, bool (*cond)(struct tb *tb, void *arg), void *arg, uint64_t max_ns)
{
    uint64_t limit = tb->now + max_ns;

    for (;;) {
        uint64_t d0, d1, next;

        tb_deliver(tb);
        d0 = qsw_engine_poll(tb->node[0].eng, tb->budget);
        d1 = qsw_engine_poll(tb->node[1].eng, tb->budget);
        if (cond && cond(tb, arg)) {
            return true;
        }
        if (tb_deliverable(tb)) {
            continue;
        }
        next = d0 < d1 ? d0 : d1;
        if (next == UINT64_MAX) {
            return cond ? cond(tb, arg) : true;
        }
        if (next > tb->now) {
            if (next > limit) {
                tb->now = limit;
                return cond ? cond(tb, arg) : false;
            }
            tb->now = next;
        }
    }
}

struct wcs_arg {
    int n;
    size_t count;
};

static bool wcs_cond(struct tb *tb, void *arg)
{
    struct wcs_arg *w = arg;

    return tb->node[w->n].nwc >= w->count;
}

bool tb_run_wcs(struct tb *tb, int n, size_t count, uint64_t max_ns)
{
    struct wcs_arg w = { n, count };

    return tb_run(tb, wcs_cond, &w, max_ns);
}

bool tb_run_idle(struct tb *tb, uint64_t max_ns)
{
    return tb_run(tb, NULL, NULL, max_ns);
}

const struct qsw_wc *tb_find_wc(struct tb_node *n, uint64_t wr_id, bool recv)
{
    for (size_t i = 0; i < n->nwc; i++) {
        if (n->wc[i].wr_id == wr_id && (n->wc[i].opcode >= QSW_WC_RECV) == recv) {
            return &n->wc[i];
        }
    }
    return NULL;
}

void tb_clear_wcs(struct tb_node *n)
{
    n->nwc = 0;
}

struct qsw_send_wr tb_wr(uint64_t wr_id, enum qsw_wr_opcode op, uint32_t flags)
{
    struct qsw_send_wr wr;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id = wr_id;
    wr.opcode = op;
    wr.send_flags = flags;
    return wr;
}

void tb_wr_sge(struct qsw_send_wr *wr, uint64_t va, uint32_t len, uint32_t lkey)
{
    wr->sg_list[wr->num_sge].addr = va;
    wr->sg_list[wr->num_sge].length = len;
    wr->sg_list[wr->num_sge].lkey = lkey;
    wr->num_sge++;
}
