/*
 * The software RoCEv2 engine: engine and QP objects, the QP state machine
 * (IBTA vol. 1, 10.3), posting, receive dispatch and the poll loop that
 * runs timers and transmits for QPs with work, in round robin.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdlib.h>

#include "sw_int.h"
#include "qrdma/qrdma_qp_sm.h"

#define HASH_BUCKETS 1024u

static uint32_t qpn_hash(uint32_t qpn) { return (qpn * 0x9e3779b1u) >> 22; }

/*
 * Time the clock has stood still in the current busy spell, at the
 * embedder's time real.
 */
static uint64_t busy_pause(const struct qsw_engine *eng, uint64_t real)
{
    uint64_t held;

    if (!eng->tx_busy) {
        return 0;
    }
    held = real > eng->busy_since ? real - eng->busy_since : 0;
    return held < QSW_TX_PAUSE_MAX_NS ? held : QSW_TX_PAUSE_MAX_NS;
}

/*
 * The transport's clock stands still while the wire is busy: a packet
 * that has not left this port cannot have been lost in the fabric, which
 * is what the Local ACK Timeout and the retry count are for (IBTA vol. 1,
 * 9.7.6.1), so the time it waits here must not burn the requester's
 * retries. Every deadline the engine keeps is on this clock.
 */
uint64_t qsw_clock(const struct qsw_engine *eng, uint64_t real)
{
    uint64_t off = eng->clock_off + busy_pause(eng, real);

    return real > off ? real - off : 0;
}

uint64_t qsw_now(struct qsw_engine *eng)
{
    eng->now = qsw_clock(eng, eng->ops.now_ns(eng->opaque));
    return eng->now;
}

/* A transport deadline (on qsw_clock) on the embedder's clock. */
static uint64_t real_deadline(const struct qsw_engine *eng, uint64_t t,
                              uint64_t real_now)
{
    if (t == UINT64_MAX) {
        return t;
    }
    if (t <= eng->now) {
        return real_now;
    }
    /*
     * Busy, the clock runs again QSW_TX_PAUSE_MAX_NS into the spell: t
     * comes that much later than the offset so far says.
     */
    return t + eng->clock_off + (eng->tx_busy ? QSW_TX_PAUSE_MAX_NS : 0);
}

/* ---- transmit ------------------------------------------------------------ */

static void tx_mark_busy(struct qsw_engine *eng)
{
    eng->st.tx_busy++;
    if (!eng->tx_busy) {
        eng->busy_since = eng->ops.now_ns(eng->opaque);
        eng->tx_busy = true;
    }
}

static void txq_put(struct qsw_engine *eng, const struct iovec *iov,
                    unsigned n)
{
    struct qsw_txq_slot *slot;
    size_t len = 0;

    if (eng->txq_len == QSW_TX_HOLD) {
        /* lost as on a wire; the peers recover it as any loss */
        eng->st.tx_hold_drops++;
        return;
    }
    slot = &eng->txq[(eng->txq_head + eng->txq_len) % QSW_TX_HOLD];
    for (unsigned i = 0; i < n; i++) {
        if (iov[i].iov_len > sizeof(slot->data) - len) {
            eng->st.tx_hold_drops++;        /* never: frames fit tx */
            return;
        }
        memcpy(slot->data + len, iov[i].iov_base, iov[i].iov_len);
        len += iov[i].iov_len;
    }
    slot->len = len;
    eng->txq_len++;
    eng->st.tx_held++;
}

void qsw_tx_emit(struct qsw_engine *eng, const uint8_t *frame, size_t len)
{
    if (eng->tx_busy || eng->txq_len) {
        struct iovec one = { .iov_base = (void *)frame, .iov_len = len };

        txq_put(eng, &one, 1);
    } else if (eng->ops.send_frame(eng->opaque, frame, len) == QSW_TX_BUSY) {
        tx_mark_busy(eng);
    }
}

void qsw_tx_emit_iov(struct qsw_engine *eng, const struct iovec *iov,
                     unsigned n)
{
    if (eng->tx_busy || eng->txq_len) {
        txq_put(eng, iov, n);
    } else if (eng->ops.send_frame_iov(eng->opaque, iov, n) == QSW_TX_BUSY) {
        tx_mark_busy(eng);
    }
}

/* The frames kept while the wire was busy leave first, in order. */
static void txq_drain(struct qsw_engine *eng)
{
    while (eng->txq_len && !eng->tx_busy) {
        struct qsw_txq_slot *slot = &eng->txq[eng->txq_head];
        int ret = eng->ops.send_frame(eng->opaque, slot->data, slot->len);

        eng->txq_head = (eng->txq_head + 1) % QSW_TX_HOLD;
        eng->txq_len--;
        if (ret == QSW_TX_BUSY) {
            tx_mark_busy(eng);
        }
    }
}

void qsw_engine_tx_ready(struct qsw_engine *eng)
{
    uint64_t paused;

    if (!eng->tx_busy) {
        return;
    }
    paused = busy_pause(eng, eng->ops.now_ns(eng->opaque));
    eng->clock_off += paused;
    eng->st.tx_paused_ns += paused;
    eng->tx_busy = false;
}

bool qsw_engine_tx_busy(const struct qsw_engine *eng)
{
    return eng->tx_busy;
}

/* ---- helpers of general use ---------------------------------------------- */

uint32_t qsw_mtu_bytes(enum qsw_mtu mtu)
{
    return mtu >= QSW_MTU_256 && mtu <= QSW_MTU_4096 ? 128u << mtu : 0;
}

/* IBTA vol. 1 table 45: RNR NAK timer field encoding, in us. */
static const uint32_t rnr_us[32] = {
    655360, 10,    20,    30,     40,     60,     80,     120,
    160,    240,   320,   480,    640,    960,    1280,   1920,
    2560,   3840,  5120,  7680,   10240,  15360,  20480,  30720,
    40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

uint64_t qsw_rnr_timer_ns(unsigned code)
{
    return (uint64_t)rnr_us[code & 31] * 1000;
}

const char *qsw_wc_status_str(enum qsw_wc_status st)
{
    static const char *const names[] = {
        "success",
        "local length error",
        "local QP operation error",
        "local EE context operation error",
        "local protection error",
        "WR flushed",
        "memory window bind error",
        "bad response error",
        "local access error",
        "remote invalid request error",
        "remote access error",
        "remote operation error",
        "transport retry counter exceeded",
        "RNR retry counter exceeded",
        "local RDD violation error",
        "remote invalid RD request",
        "operation aborted",
        "invalid EE context number",
        "invalid EE context state",
        "fatal error",
        "response timeout error",
        "general error",
    };

    return (unsigned)st < sizeof(names) / sizeof(names[0]) ? names[st]
                                                           : "unknown";
}

/* ---- engine -------------------------------------------------------------- */

struct qsw_engine *qsw_engine_new(const struct qsw_ops *ops, void *opaque,
                                  const uint8_t mac[6])
{
    struct qsw_engine *eng;

    if (!ops || !ops->send_frame || !ops->now_ns || !ops->complete ||
        !ops->sge_read || !ops->sge_write || !ops->get_recv ||
        !ops->rkey_read || !ops->rkey_write || !ops->rkey_atomic ||
        !ops->sge_map != !ops->sge_unmap ||
        !ops->sge_map != !ops->send_frame_iov) {
        return NULL;
    }
    eng = calloc(1, sizeof(*eng));
    if (!eng) {
        return NULL;
    }
    eng->htab = calloc(HASH_BUCKETS, sizeof(*eng->htab));
    if (!eng->htab) {
        free(eng);
        return NULL;
    }
    eng->hmask = HASH_BUCKETS - 1;
    eng->ops = *ops;
    eng->opaque = opaque;
    memcpy(eng->mac, mac, 6);
    eng->crc_tab = qsw_crc32_tables();
    return eng;
}

static void qp_free(struct qsw_qp *qp)
{
    free(qp->sq);
    free(qp->inl_pool);
    free(qp->resp.res);
    free(qp);
}

void qsw_engine_free(struct qsw_engine *eng)
{
    if (!eng) {
        return;
    }
    for (uint32_t b = 0; b <= eng->hmask; b++) {
        struct qsw_qp *qp = eng->htab[b], *n;

        for (; qp; qp = n) {
            n = qp->hnext;
            qp_free(qp);
        }
    }
    eng->fault_on = false;
    qsw_fault_flush(eng, false);
    free(eng->htab);
    free(eng);
}

void qsw_engine_set_mac(struct qsw_engine *eng, const uint8_t mac[6])
{
    memcpy(eng->mac, mac, 6);
}

void qsw_engine_set_stall_floor(struct qsw_engine *eng, uint64_t floor_ns)
{
    eng->stall_floor_ns = floor_ns;
}

void qsw_engine_set_fault(struct qsw_engine *eng, const struct qsw_fault *f)
{
    if (!f || !(f->loss_ppm || f->dup_ppm || f->reorder_ppm || f->corrupt_ppm ||
                f->delay_ns)) {
        eng->fault_on = false;
        memset(&eng->fault, 0, sizeof(eng->fault));
        qsw_fault_flush(eng, true);
        return;
    }
    eng->fault = *f;
    if (!eng->fault.reorder_window_ns) {
        eng->fault.reorder_window_ns = 50000;
    }
    eng->rng = f->seed ? f->seed : 0x9e3779b97f4a7c15ull;
    eng->fault_on = true;
}

void qsw_engine_stats(struct qsw_engine *eng, struct qsw_stats *stats)
{
    *stats = eng->st;
}

/* ---- lists --------------------------------------------------------------- */

void qsw_qp_activate(struct qsw_qp *qp)
{
    struct qsw_engine *eng = qp->eng;

    if (qp->on_active) {
        return;
    }
    qp->on_active = true;
    qp->anext = NULL;
    if (eng->active.tail) {
        eng->active.tail->anext = qp;
    } else {
        eng->active.head = qp;
    }
    eng->active.tail = qp;
}

static struct qsw_qp *active_pop(struct qsw_engine *eng)
{
    struct qsw_qp *qp = eng->active.head;

    if (qp) {
        eng->active.head = qp->anext;
        if (!eng->active.head) {
            eng->active.tail = NULL;
        }
        qp->on_active = false;
        qp->anext = NULL;
    }
    return qp;
}

static void active_remove(struct qsw_qp *qp)
{
    struct qsw_engine *eng = qp->eng;
    struct qsw_qp **pp = &eng->active.head, *prev = NULL;

    if (!qp->on_active) {
        return;
    }
    while (*pp && *pp != qp) {
        prev = *pp;
        pp = &(*pp)->anext;
    }
    if (*pp) {
        *pp = qp->anext;
        if (eng->active.tail == qp) {
            eng->active.tail = prev;
        }
    }
    qp->on_active = false;
    qp->anext = NULL;
}

/*
 * Keeps the QP on the timer list exactly while one of its deadlines is armed.
 */
void qsw_qp_timer_update(struct qsw_qp *qp)
{
    struct qsw_engine *eng = qp->eng;
    bool armed = qp->comp.rto_deadline || qp->comp.rnr_deadline;

    if (armed && !qp->on_timer) {
        qp->tprev = NULL;
        qp->tnext = eng->timers;
        if (eng->timers) {
            eng->timers->tprev = qp;
        }
        eng->timers = qp;
        qp->on_timer = true;
    } else if (!armed && qp->on_timer) {
        if (qp->tprev) {
            qp->tprev->tnext = qp->tnext;
        } else {
            eng->timers = qp->tnext;
        }
        if (qp->tnext) {
            qp->tnext->tprev = qp->tprev;
        }
        qp->tnext = qp->tprev = NULL;
        qp->on_timer = false;
    }
}

/* ---- QPs ----------------------------------------------------------------- */

struct qsw_qp *qsw_qp_lookup(struct qsw_engine *eng, uint32_t qpn)
{
    struct qsw_qp *qp = eng->htab[qpn_hash(qpn) & eng->hmask];

    while (qp && qp->qpn != qpn) {
        qp = qp->hnext;
    }
    return qp;
}

int qsw_res_alloc(struct qsw_qp *qp, unsigned n)
{
    struct qsw_res *r;

    n = n ? n : 1;
    if (qp->resp.res && qp->resp.nres == n) {
        return 0;
    }
    r = calloc(n, sizeof(*r));
    if (!r) {
        return -QSW_ENOMEM;
    }
    free(qp->resp.res);
    qp->resp.res = r;
    qp->resp.nres = n;
    qp->resp.res_next = 0;
    return 0;
}

struct qsw_qp *qsw_qp_create(struct qsw_engine *eng, uint32_t qpn,
                             enum qsw_qp_type type, uint32_t pd,
                             const struct qsw_qp_cap *cap, void *user)
{
    uint32_t depth = cap && cap->max_send_wr ? cap->max_send_wr : 256;
    uint32_t inl = cap ? cap->max_inline : QSW_DEFAULT_INLINE;
    uint32_t n = 1, b;
    struct qsw_qp *qp;

    if ((type != QSW_QPT_RC && type != QSW_QPT_UC && type != QSW_QPT_UD) ||
        qpn > PSN_MASK || depth > QSW_MAX_SQ_DEPTH || inl > QSW_MAX_INLINE ||
        qsw_qp_lookup(eng, qpn)) {
        return NULL;
    }
    while (n < depth) {
        n <<= 1;
    }
    qp = calloc(1, sizeof(*qp));
    if (!qp) {
        return NULL;
    }
    qp->sq = calloc(n, sizeof(*qp->sq));
    qp->inl_pool = inl ? malloc((size_t)n * inl) : NULL;
    if (!qp->sq || (inl && !qp->inl_pool) || qsw_res_alloc(qp, 1)) {
        qp_free(qp);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        qp->sq[i].inl = inl ? qp->inl_pool + (size_t)i * inl : NULL;
    }
    qp->eng = eng;
    qp->qpn = qpn;
    qp->pd = pd;
    qp->type = (uint8_t)type;
    qp->user = user;
    qp->max_inline = inl;
    qp->sq_mask = n - 1;
    qp->state = QSW_QPS_RESET;
    qp->req.cwnd = qp->req.ssthresh = QSW_MAX_UNACKED;
    qp->mtu = 256;
    qp->attr.path_mtu = QSW_MTU_256;
    qp->attr.retry_cnt = 7;
    qp->attr.rnr_retry = 7;
    qp->attr.timeout = 14;
    b = qpn_hash(qpn) & eng->hmask;
    qp->hnext = eng->htab[b];
    eng->htab[b] = qp;
    return qp;
}

void qsw_qp_destroy(struct qsw_qp *qp)
{
    struct qsw_engine *eng;
    struct qsw_qp **pp;

    if (!qp) {
        return;
    }
    eng = qp->eng;
    qsw_resp_stop(qp);
    active_remove(qp);
    qp->comp.rto_deadline = qp->comp.rnr_deadline = 0;
    qsw_qp_timer_update(qp);
    for (pp = &eng->htab[qpn_hash(qp->qpn) & eng->hmask]; *pp;
         pp = &(*pp)->hnext) {
        if (*pp == qp) {
            *pp = qp->hnext;
            break;
        }
    }
    qp_free(qp);
}

size_t qsw_qp_host_bytes(const struct qsw_qp *qp)
{
    size_t slots = (size_t)qp->sq_mask + 1;

    return sizeof(*qp) + slots * (sizeof(*qp->sq) + qp->max_inline) +
           (size_t)qp->resp.nres * sizeof(*qp->resp.res);
}

void *qsw_qp_user(const struct qsw_qp *qp) { return qp->user; }
uint32_t qsw_qp_num(const struct qsw_qp *qp) { return qp->qpn; }
enum qsw_qp_state qsw_qp_state(const struct qsw_qp *qp)
{
    return (enum qsw_qp_state)qp->state;
}

static void qp_reset(struct qsw_qp *qp)
{
    active_remove(qp);
    qsw_req_reset(qp);
    qsw_resp_reset(qp);
    qsw_qp_timer_update(qp);
    qp->comm_est = false;
}

void qsw_complete(struct qsw_qp *qp, const struct qsw_wc *wc)
{
    qp->eng->st.completions++;
    qp->eng->ops.complete(qp->eng->opaque, qp, wc);
}

void qsw_sq_freed(struct qsw_qp *qp)
{
    if (qp->sq_waiting && qp->sq_tail - qp->sq_head <= qp->sq_mask) {
        qp->sq_waiting = false;
        if (qp->eng->ops.sq_space) {
            qp->eng->ops.sq_space(qp->eng->opaque, qp);
        }
    }
}

static void qp_event(struct qsw_qp *qp, enum qsw_event ev)
{
    if (qp->eng->ops.qp_event) {
        qp->eng->ops.qp_event(qp->eng->opaque, qp, ev);
    }
}

/* IBTA 10.3: the QP stops, every outstanding WR completes (flushed). */
void qsw_qp_to_error(struct qsw_qp *qp, enum qsw_event ev)
{
    if (qp->state == QSW_QPS_ERR || qp->state == QSW_QPS_RESET) {
        return;
    }
    qp->state = QSW_QPS_ERR;
    active_remove(qp);
    qp->comp.rto_deadline = qp->comp.rnr_deadline = 0;
    qsw_qp_timer_update(qp);
    qsw_req_flush(qp);
    qsw_resp_flush(qp);
    if (ev) {
        qp_event(qp, ev);
    }
}

void qsw_qp_fail(struct qsw_qp *qp)
{
    qsw_qp_to_error(qp, 0);
}

/* UC/UD send queue error: the receive side keeps working (IBTA 10.3). */
void qsw_qp_to_sqe(struct qsw_qp *qp)
{
    if (qp->state != QSW_QPS_RTS && qp->state != QSW_QPS_SQD) {
        return;
    }
    qp->state = QSW_QPS_SQE;
    qsw_req_flush(qp);
}

/*
 * The transport's states and QP types are the verbs values the table is indexed
 * by.
 */
#define SAME_STATE(s) ((int)QSW_QPS_##s == (int)QRDMA_QPS_##s)
_Static_assert(SAME_STATE(RESET) && SAME_STATE(INIT) && SAME_STATE(RTR) &&
                   SAME_STATE(RTS) && SAME_STATE(SQD) && SAME_STATE(SQE) &&
                   SAME_STATE(ERR),
               "QP states are ibv_qp_state");
#undef SAME_STATE

/*
 * IBTA 10.3.1: the transitions of qrdma_qp_transitions[], the device's table
 * too.
 */
static bool transition_ok(uint8_t type, unsigned cur, unsigned next)
{
    unsigned kind = type == QSW_QPT_RC ? QRDMA_QPK_RC
                  : type == QSW_QPT_UC ? QRDMA_QPK_UC : QRDMA_QPK_UD;

    return cur < QRDMA_QP_NUM_STATES && next < QRDMA_QP_NUM_STATES &&
           (qrdma_qp_transitions[cur][next] & QRDMA_QPK_BIT(kind));
}

/*
 * No WQE owns PSNs: the send PSN may move, and an SQD QP is drained
 * (pending WQEs wait for RTS). sq_cur == sq_head and
 * req.psn == comp.psn are not enough: right after a go-back (a timer that
 * fired in a poll with no budget left to resend) they hold while the WQE
 * at sq_cur is in flight with its PSNs, and moving req.psn under it would
 * make its packet index (req.psn - first_psn) wrap.
 */
static bool sq_unstarted(const struct qsw_qp *qp)
{
    return qp->sq_head == qp->sq_cur && qp->req.psn == qp->comp.psn &&
           (qp->sq_cur == qp->sq_tail ||
            qp->sq[qp->sq_cur & qp->sq_mask].state == WQE_PENDING);
}

int qsw_qp_modify(struct qsw_qp *qp, const struct qsw_qp_attr *a, uint32_t mask)
{
    unsigned cur = qp->state, next = mask & QSW_QP_STATE ? a->qp_state : cur;
    bool connected = qp->type != QSW_QPT_UD;
    int ret;

    if (next > QSW_QPS_ERR || !transition_ok(qp->type, cur, next) ||
        ((mask & QSW_QP_CUR_STATE) && a->cur_qp_state != cur)) {
        return -QSW_EINVAL;
    }
    if (connected && cur == QSW_QPS_INIT && next == QSW_QPS_RTR &&
        (mask &
         (QSW_QP_AV | QSW_QP_PATH_MTU | QSW_QP_DEST_QPN | QSW_QP_RQ_PSN)) !=
            (QSW_QP_AV | QSW_QP_PATH_MTU | QSW_QP_DEST_QPN | QSW_QP_RQ_PSN)) {
        return -QSW_EINVAL;
    }
    if (connected && cur == QSW_QPS_RTR && next == QSW_QPS_RTS &&
        !(mask & QSW_QP_SQ_PSN)) {
        return -QSW_EINVAL;
    }
    if (((mask & QSW_QP_PATH_MTU) && !qsw_mtu_bytes(a->path_mtu)) ||
        ((mask & QSW_QP_RETRY_CNT) && a->retry_cnt > 7) ||
        ((mask & QSW_QP_RNR_RETRY) && a->rnr_retry > 7) ||
        ((mask & QSW_QP_TIMEOUT) && a->timeout > 31) ||
        ((mask & QSW_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31) ||
        ((mask & QSW_QP_DEST_QPN) && a->dest_qp_num > PSN_MASK)) {
        return -QSW_EINVAL;
    }
    if (mask & QSW_QP_MAX_DEST_RD_ATOMIC) {
        ret = qsw_res_alloc(qp, a->max_dest_rd_atomic);
        if (ret) {
            return ret;
        }
        qp->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
    }
    if (mask & QSW_QP_ACCESS_FLAGS) {
        qp->attr.qp_access_flags = a->qp_access_flags;
    }
    if (mask & QSW_QP_QKEY) {
        qp->attr.qkey = a->qkey;
    }
    if (mask & QSW_QP_AV) {
        qp->attr.av = a->av;
        qp->attr.av.flow_label &= 0xfffff;
        qp->ipv6 = !qsw_gid_is_v4(a->av.dgid);
    }
    if (mask & QSW_QP_PATH_MTU) {
        qp->attr.path_mtu = a->path_mtu;
        qp->mtu = qsw_mtu_bytes(a->path_mtu);
    }
    if (mask & QSW_QP_TIMEOUT) {
        qp->attr.timeout = a->timeout;
    }
    if (mask & QSW_QP_RETRY_CNT) {
        qp->attr.retry_cnt = a->retry_cnt;
        qp->comp.retry_left = a->retry_cnt;
    }
    if (mask & QSW_QP_RNR_RETRY) {
        qp->attr.rnr_retry = a->rnr_retry;
        qp->comp.rnr_left = a->rnr_retry;
    }
    if (mask & QSW_QP_RQ_PSN) {
        qp->attr.rq_psn = a->rq_psn & PSN_MASK;
        qp->resp.psn = qp->attr.rq_psn;
    }
    if (mask & QSW_QP_SQ_PSN) {
        qp->attr.sq_psn = a->sq_psn & PSN_MASK;
        if (sq_unstarted(qp)) {
            qp->req.psn = qp->comp.psn = qp->req.hi_psn = qp->attr.sq_psn;
        }
    }
    if (mask & QSW_QP_MAX_QP_RD_ATOMIC) {
        qp->attr.max_rd_atomic = a->max_rd_atomic;
    }
    if (mask & QSW_QP_MIN_RNR_TIMER) {
        qp->attr.min_rnr_timer = a->min_rnr_timer;
    }
    if (mask & QSW_QP_DEST_QPN) {
        qp->attr.dest_qp_num = a->dest_qp_num;
    }
    if (mask & (QSW_QP_AV | QSW_QP_DEST_QPN)) {
        qp->sport = qsw_udp_sport(qp->attr.av.flow_label, qp->qpn,
                                  qp->attr.dest_qp_num);
    }
    if (next == cur) {
        return 0;
    }
    switch (next) {
    case QSW_QPS_RESET:
        qsw_resp_stop(qp);
        qp_reset(qp);
        qp->state = QSW_QPS_RESET;
        break;
    case QSW_QPS_ERR:
        qsw_resp_stop(qp);
        qsw_qp_to_error(qp, 0);
        break;
    case QSW_QPS_SQD:
        qp->state = QSW_QPS_SQD;
        qp->req.drained_sent = false;
        qsw_qp_activate(qp);        /* the requester reports SQ_DRAINED */
        break;
    default:
        qp->state = (uint8_t)next;
        if (next == QSW_QPS_RTS) {
            qsw_qp_activate(qp);
        }
        break;
    }
    qp->attr.qp_state = qp->state;
    return 0;
}

int qsw_qp_query(struct qsw_qp *qp, struct qsw_qp_attr *attr)
{
    *attr = qp->attr;
    attr->qp_state = attr->cur_qp_state = qp->state;
    attr->sq_psn = qp->req.psn;
    attr->rq_psn = qp->resp.psn;
    return 0;
}

/* ---- posting ------------------------------------------------------------- */

static uint32_t wr_kind(uint32_t opcode)
{
    switch (opcode) {
    case QSW_WR_SEND:
    case QSW_WR_SEND_WITH_IMM:
    case QSW_WR_SEND_WITH_INV:
        return M_SEND;
    case QSW_WR_RDMA_WRITE:
    case QSW_WR_RDMA_WRITE_WITH_IMM:
        return M_WRITE;
    case QSW_WR_RDMA_READ:
        return M_READ;
    case QSW_WR_ATOMIC_CMP_AND_SWP:
    case QSW_WR_ATOMIC_FETCH_AND_ADD:
        return M_ATOMIC;
    default:
        return 0;
    }
}

int qsw_post_send(struct qsw_qp *qp, const struct qsw_send_wr *wr)
{
    struct qsw_wqe *w;
    uint32_t kind = wr_kind(wr->opcode);
    uint64_t len = 0;

    if (qp->state == QSW_QPS_RESET || wr->num_sge > QSW_MAX_SGE) {
        return -QSW_EINVAL;
    }
    if (!kind && wr->opcode != QSW_WR_LOCAL_INV &&
        wr->opcode != QSW_WR_REG_MR && wr->opcode != QSW_WR_BIND_MW) {
        return -QSW_EINVAL;
    }
    /* IBTA ch. 10: which operations each service type carries */
    if ((qp->type == QSW_QPT_UD && kind != M_SEND) ||
        (qp->type == QSW_QPT_UC && (kind == M_READ || kind == M_ATOMIC)) ||
        (qp->type != QSW_QPT_RC && wr->opcode == QSW_WR_SEND_WITH_INV) ||
        (qp->type == QSW_QPT_UD && (wr->opcode == QSW_WR_REG_MR ||
                                    wr->opcode == QSW_WR_BIND_MW))) {
        return -QSW_EINVAL;
    }
    if (wr->send_flags & QSW_SEND_INLINE) {
        if (wr->inline_len > qp->max_inline || kind == M_READ ||
            kind == M_ATOMIC || (wr->inline_len && !wr->inline_data)) {
            return -QSW_EINVAL;
        }
        len = wr->inline_len;
    } else {
        for (uint32_t i = 0; i < wr->num_sge; i++) {
            len += wr->sg_list[i].length;
        }
        /* IBTA: messages up to 2^31 bytes */
        if (len > 0x80000000ull) {
            return -QSW_EINVAL;
        }
    }
    if (qp->sq_tail - qp->sq_head > qp->sq_mask) {
        qp->sq_waiting = true;
        return -QSW_ENOMEM;
    }
    w = &qp->sq[qp->sq_tail & qp->sq_mask];
    w->wr = *wr;
    w->wr.inline_data = NULL;
    if (wr->send_flags & QSW_SEND_INLINE) {
        memcpy(w->inl, wr->inline_data, wr->inline_len);
        w->wr.num_sge = 0;
    }
    w->len = (uint32_t)len;
    w->mask = kind;
    w->state = WQE_PENDING;
    w->status = QSW_WC_SUCCESS;
    w->npkts = 0;
    if (kind == M_ATOMIC) {
        w->len = 8;
    }
    qp->sq_tail++;
    if (qp->state == QSW_QPS_ERR || qp->state == QSW_QPS_SQE) {
        qsw_req_flush(qp);
    } else if (qp->state == QSW_QPS_RTS) {
        qsw_qp_activate(qp);
    }
    return 0;
}

/* ---- receive ------------------------------------------------------------- */

void qsw_rx_frame(struct qsw_engine *eng, const void *frame, size_t len)
{
    struct qsw_pkt pkt;
    struct qsw_qp *qp;
    unsigned svc;

    eng->st.rx_frames++;
    eng->st.rx_bytes += len;
    if (qsw_parse(eng, frame, len, &pkt)) {
        return;
    }
    qp = qsw_qp_lookup(eng, pkt.dqpn);
    if (!qp) {
        eng->st.drop_unknown_qp++;
        return;
    }
    svc = pkt.opcode >> 5;                  /* 0 RC, 1 UC, 3 UD */
    if ((svc == 0 && qp->type != QSW_QPT_RC) ||
        (svc == 1 && qp->type != QSW_QPT_UC) ||
        (svc == 3 && qp->type != QSW_QPT_UD) || qp->state < QSW_QPS_RTR ||
        qp->state == QSW_QPS_ERR ||
        ((pkt.mask & M_RESP) && qp->state == QSW_QPS_RTR)) {
        eng->st.drop_bad_state++;
        return;
    }
    if (qp->type != QSW_QPT_UD &&
        (memcmp(pkt.sgid, qp->attr.av.dgid, 16) != 0 ||
         memcmp(pkt.dgid, qp->attr.av.sgid, 16) != 0)) {
        eng->st.drop_addr++;
        return;
    }
    qsw_now(eng);
    if (qp->state == QSW_QPS_RTR && !qp->comm_est) {
        qp->comm_est = true;
        qp_event(qp, QSW_EV_COMM_EST);
    }
    if (qp->type == QSW_QPT_UD) {
        qsw_ud_rx(qp, &pkt);
    } else if (pkt.mask & M_REQ) {
        qsw_resp_rx(qp, &pkt);
    } else {
        qsw_comp_rx(qp, &pkt);
    }
}

/*
 * IBTA 10.5 / A17: a multicast datagram is a UD SEND to the multicast QPN,
 * delivered to each member.
 */
#define QPN_MULTICAST 0xffffffu

void qsw_rx_mcast(struct qsw_engine *eng, const void *frame, size_t len,
                  struct qsw_qp *const *qps, unsigned n)
{
    struct qsw_pkt pkt;
    unsigned i;

    eng->st.rx_frames++;
    eng->st.rx_bytes += len;
    if (qsw_parse_mcast(eng, frame, len, &pkt)) {
        return;
    }
    if (pkt.opcode >> 5 != 3 || !(pkt.mask & M_SEND) ||
        pkt.dqpn != QPN_MULTICAST) {
        eng->st.drop_mcast++;
        return;
    }
    qsw_now(eng);
    for (i = 0; i < n; i++) {
        struct qsw_qp *qp = qps[i];

        if (!qp || qp->type != QSW_QPT_UD || qp->state < QSW_QPS_RTR ||
            qp->state == QSW_QPS_ERR) {
            eng->st.drop_bad_state++;
            continue;
        }
        if (qp->state == QSW_QPS_RTR && !qp->comm_est) {
            qp->comm_est = true;
            qp_event(qp, QSW_EV_COMM_EST);
        }
        eng->st.rx_mcast_copies++;
        qsw_ud_rx(qp, &pkt);
    }
}

/* ---- poll ---------------------------------------------------------------- */

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

uint64_t qsw_engine_poll(struct qsw_engine *eng, unsigned budget)
{
    uint64_t real = eng->ops.now_ns(eng->opaque), next = UINT64_MAX, now;
    unsigned sent = 0;
    struct qsw_qp *qp, *n;

    eng->now = now = qsw_clock(eng, real);
    txq_drain(eng);
    if (qsw_fault_holding(eng) && !eng->tx_busy) {
        qsw_fault_poll(eng, now);
    }
    for (qp = eng->timers; qp; qp = n) {
        n = qp->tnext;
        if ((qp->comp.rto_deadline && qp->comp.rto_deadline <= now) ||
            (qp->comp.rnr_deadline && qp->comp.rnr_deadline <= now)) {
            qsw_req_timeout(qp, now);
        }
    }
    /* a busy wire takes nothing: the QPs keep their place and their work */
    while (!eng->tx_busy && sent < budget && (qp = active_pop(eng))) {
        unsigned quantum = min64(QSW_QP_QUANTUM, budget - sent), used;

        used = qsw_resp_run(qp, quantum);
        if (used < quantum && !eng->tx_busy) {
            used += qsw_req_run(qp, quantum - used);
        }
        sent += used;
        if (used == quantum || eng->tx_busy) {
            /* more to do (or perhaps, the wire stopped it): back of the line */
            qsw_qp_activate(qp);
        }
        /*
         * not right after a go-back whose resend has not started (see
         * sq_unstarted)
         */
        if (qp->state == QSW_QPS_SQD && !qp->req.drained_sent &&
            sq_unstarted(qp)) {
            qp->req.drained_sent = true;
            qp_event(qp, QSW_EV_SQ_DRAINED);
        }
    }
    if ((eng->active.head || eng->txq_len) && !eng->tx_busy) {
        return real;
    }
    for (qp = eng->timers; qp; qp = qp->tnext) {
        if (qp->comp.rto_deadline) {
            next = min64(next, qp->comp.rto_deadline);
        }
        if (qp->comp.rnr_deadline) {
            next = min64(next, qp->comp.rnr_deadline);
        }
    }
    /* held fault frames wait for the wire as the rest does */
    if (qsw_fault_holding(eng) && !eng->tx_busy) {
        next = min64(next, qsw_fault_poll(eng, now));
    }
    return real_deadline(eng, next, real);
}
