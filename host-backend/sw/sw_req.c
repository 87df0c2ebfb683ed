/*
 * The requester (send queue to request packets) and the completer
 * (acknowledgements and responses to completions) of the software engine.
 *
 * Send queue indices are free running: [sq_head, sq_cur) are WQEs started
 * and not yet completed, [sq_cur, sq_tail) WQEs not started (or to resend
 * after a rewind). PSNs: req.psn is the next PSN to send, comp.psn the
 * oldest not yet acknowledged. Reliability (IBTA vol. 1, 9.7) is
 * go-back-N: a NAK sequence error, a timeout, a missing read response or
 * the end of an RNR wait rewinds req.psn to comp.psn and sends again; a
 * WQE keeps the PSN range and MTU it started with, so resent packets carry
 * the same PSNs and bytes as the first time, whatever a modify changed.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "sw_int.h"

static inline struct qsw_wqe *wqe_at(struct qsw_qp *qp, uint32_t i)
{
    return &qp->sq[i & qp->sq_mask];
}

static uint64_t rto_ns(const struct qsw_qp *qp)
{
    /* IBTA 9.7: Local ACK Timeout is 4.096 us * 2^timeout; 0 disables it. */
    return qp->attr.timeout ? 4096ull << qp->attr.timeout : 0;
}

/*
 * Packets sent await their ACK: every one before hi_psn, also those a
 * go-back-N has not sent again yet. Their timer runs from the rewind, not
 * from the resend: the same time when the resend follows at once, and
 * when a busy wire holds it back, a wire that never drains still ends in
 * the retry budget (QSW_TX_PAUSE_MAX_NS), not in a QP that waits for ever.
 */
static bool unacked(const struct qsw_qp *qp)
{
    return qp->comp.psn != qp->req.hi_psn;
}

static void arm_rto(struct qsw_qp *qp, bool restart)
{
    if (qp->type != QSW_QPT_RC || !unacked(qp) || !rto_ns(qp)) {
        qp->comp.rto_deadline = 0;
    } else if (restart || !qp->comp.rto_deadline) {
        qp->comp.rto_deadline = qp->eng->now + rto_ns(qp);
    }
    qsw_qp_timer_update(qp);
}

static uint32_t wc_opcode(uint32_t wr_opcode)
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
    case QSW_WR_REG_MR:
        return QSW_WC_REG_MR;
    case QSW_WR_BIND_MW:
        return QSW_WC_BIND_MW;
    default:
        return QSW_WC_SEND;
    }
}

static void wqe_complete(struct qsw_qp *qp, struct qsw_wqe *w, uint32_t status)
{
    struct qsw_wc wc;

    if (status == QSW_WC_SUCCESS && !(w->wr.send_flags & QSW_SEND_SIGNALED)) {
        return;
    }
    memset(&wc, 0, sizeof(wc));
    wc.wr_id = w->wr.wr_id;
    wc.status = status;
    wc.opcode = wc_opcode(w->wr.opcode);
    wc.byte_len = w->len;
    wc.qp_num = qp->qpn;
    qsw_complete(qp, &wc);
}

/* Completes finished WQEs in order from the head; an error stops the QP. */
static void comp_run(struct qsw_qp *qp)
{
    while (qp->sq_head != qp->sq_cur) {
        struct qsw_wqe *w = wqe_at(qp, qp->sq_head);
        uint8_t status = w->status;

        if (w->state != WQE_DONE) {
            break;
        }
        if (qp->type == QSW_QPT_RC && (w->mask & (M_READ | M_ATOMIC)) &&
            qp->req.rd_atomic) {
            qp->req.rd_atomic--;
        }
        qp->sq_head++;
        wqe_complete(qp, w, status);
        qsw_sq_freed(qp);
        if (status != QSW_WC_SUCCESS) {
            if (qp->type == QSW_QPT_RC) {
                qsw_qp_to_error(qp, 0);
            } else {
                qsw_qp_to_sqe(qp);
            }
            return;
        }
    }
    if (qp->state == QSW_QPS_SQD && qp->sq_head == qp->sq_cur) {
        qsw_qp_activate(qp);        /* poll reports SQ_DRAINED */
    }
}

/* The WQE at the head fails with status; the QP goes to ERR (RC). */
static void req_fail(struct qsw_qp *qp, uint32_t status)
{
    uint32_t i;

    /*
     * Blame the oldest WQE not done yet if it has started. The cursor is no
     * guide: a long message that filled the send window leaves sq_cur on
     * its own WQE, the oldest, though its packets are on the wire.
     */
    i = qp->sq_head;
    while (i != qp->sq_tail && wqe_at(qp, i)->state == WQE_DONE) {
        i++;
    }
    if (i != qp->sq_tail && wqe_at(qp, i)->state != WQE_PENDING) {
        struct qsw_wqe *w = wqe_at(qp, i);

        w->state = WQE_DONE;
        w->status = (uint8_t)status;
        /* reports the error and moves the QP to ERR */
        comp_run(qp);
        qsw_qp_to_error(qp, 0);
    } else {
        qsw_qp_to_error(qp, QSW_EV_QP_FATAL);   /* no WR to report it on */
    }
}

/*
 * Go back to psn: everything from the WQE holding it is sent again. Every
 * WQE started keeps the PSN range and MTU it started with (RESEND, not
 * PENDING): started again, a WQE after the one holding psn would take the
 * path MTU of now, so after a modify of PATH_MTU its new range would no
 * longer end where the next WQE's begins, and the requester would reach
 * that one at a PSN outside its range. The WQE at sq_cur counts too: it
 * may be half sent (the window or the poll budget stopped it).
 */
static void rewind_to(struct qsw_qp *qp, uint32_t psn)
{
    struct qsw_wqe *c;
    uint32_t i;

    qp->req.rd_atomic = 0;
    for (i = qp->sq_head; i != qp->sq_tail; i++) {
        struct qsw_wqe *w = wqe_at(qp, i);

        if (w->state == WQE_DONE || w->state == WQE_PENDING) {
            continue;
        }
        if (psn_cmp(w->first_psn, psn) <= 0 && psn_cmp(psn, w->last_psn) <= 0) {
            w->state = WQE_INFLIGHT;
            if (w->mask & (M_READ | M_ATOMIC)) {
                qp->req.rd_atomic++;
            }
        } else {
            w->state = WQE_RESEND;
        }
    }
    /* the new cursor: the first WQE that is not done */
    i = qp->sq_head;
    while (i != qp->sq_cur && wqe_at(qp, i)->state == WQE_DONE) {
        i++;
    }
    qp->sq_cur = i;
    /*
     * psn is comp.psn, which lies in the first WQE not done; should it not
     * (no WQE holds it), the resend starts where that WQE starts, never
     * at a PSN outside it.
     */
    c = i != qp->sq_tail ? wqe_at(qp, i) : NULL;
    qp->req.psn = c && c->state == WQE_RESEND ? c->first_psn : psn;
    qp->req.noack = 0;
    qp->comp.rnr_deadline = 0;
    qp->comp.rewound = true;
    arm_rto(qp, true);
    qsw_qp_activate(qp);
}

/* Acknowledged packets open the send window again. */
static void cwnd_grow(struct qsw_qp *qp, uint32_t acked)
{
    if (qp->req.cwnd < qp->req.ssthresh) {
        qp->req.cwnd += acked;
    } else {
        qp->req.ca_acc += acked;
        while (qp->req.ca_acc >= qp->req.cwnd) {
            qp->req.ca_acc -= qp->req.cwnd;
            qp->req.cwnd++;
        }
    }
    if (qp->req.cwnd > QSW_MAX_UNACKED) {
        qp->req.cwnd = QSW_MAX_UNACKED;
    }
}

/*
 * AckReq every quarter window (at most every QSW_ACKREQ_EVERY packets): in
 * a small window one lost ACK must not stall it until the timeout.
 */
static uint32_t ackreq_every(const struct qsw_qp *qp)
{
    uint32_t n = qp->req.cwnd / 4;

    return n < 1 ? 1 : n > QSW_ACKREQ_EVERY ? QSW_ACKREQ_EVERY : n;
}

/*
 * A loss: half the window (a timeout: the minimum) goes on; the rest is resent
 * later.
 */
static void cwnd_cut(struct qsw_qp *qp, bool timeout)
{
    uint32_t half = qp->req.cwnd / 2;

    qp->req.ssthresh = half > QSW_MIN_CWND ? half : QSW_MIN_CWND;
    qp->req.cwnd = timeout ? QSW_MIN_CWND : qp->req.ssthresh;
    qp->req.ca_acc = 0;
}

/* Forward progress: counters refill (IBTA 9.7). */
static void progress(struct qsw_qp *qp, uint32_t psn)
{
    if (psn_cmp(psn, qp->comp.psn) > 0) {
        cwnd_grow(qp, psn_sub(psn, qp->comp.psn));
        qp->comp.psn = psn;
        qp->comp.retry_left = qp->attr.retry_cnt;
        qp->comp.rnr_left = qp->attr.rnr_retry;
        qp->comp.rewound = false;
        qp->comp.stalled = false;
        arm_rto(qp, true);
        qsw_qp_activate(qp);
    }
}

/*
 * Marks done the started SEND/WRITE WQEs whose packets all lie before
 * `limit`. Returns true when a READ/ATOMIC before limit still misses its
 * responses (the responder went past it: they were lost).
 */
static bool ack_before(struct qsw_qp *qp, uint32_t limit)
{
    for (uint32_t i = qp->sq_head; i != qp->sq_cur; i++) {
        struct qsw_wqe *w = wqe_at(qp, i);

        if (w->state == WQE_DONE) {
            continue;
        }
        if (psn_cmp(w->last_psn, limit) >= 0 || w->state == WQE_PENDING ||
            w->state == WQE_RESEND) {
            break;
        }
        if (w->mask & (M_READ | M_ATOMIC)) {
            return true;
        }
        w->state = WQE_DONE;
    }
    return false;
}

static void retry(struct qsw_qp *qp, bool timeout)
{
    struct qsw_engine *eng = qp->eng;

    if (!qp->comp.stalled) {
        /*
         * The first retry since progress: the timer (or the NAK's PSN) was
         * armed one RTO ago.
         */
        qp->comp.stalled = true;
        qp->comp.stall_since = eng->now -
                               (eng->now < rto_ns(qp) ? eng->now : rto_ns(qp));
    }
    if (!qp->comp.retry_left) {
        if (!timeout ||
            eng->now - qp->comp.stall_since >= eng->stall_floor_ns) {
            req_fail(qp, QSW_WC_RETRY_EXC_ERR);
            return;
        }
        eng->st.stall_retries++;        /* within the stall floor: once more */
        cwnd_cut(qp, timeout);
        qsw_trace(qp, QSW_TRACE_RETRANSMIT, qp->comp.psn,
                  timeout ? QSW_RETRANSMIT_TIMEOUT : QSW_RETRANSMIT_NAK);
        rewind_to(qp, qp->comp.psn);
        return;
    }
    qp->comp.retry_left--;
    cwnd_cut(qp, timeout);
    qsw_trace(qp, QSW_TRACE_RETRANSMIT, qp->comp.psn,
              timeout ? QSW_RETRANSMIT_TIMEOUT : QSW_RETRANSMIT_NAK);
    rewind_to(qp, qp->comp.psn);
}

/* ---- requester ----------------------------------------------------------- */

static uint32_t npkts_of(const struct qsw_qp *qp, const struct qsw_wqe *w)
{
    if (w->mask == M_ATOMIC || qp->type == QSW_QPT_UD || !w->len) {
        return 1;
    }
    return (w->len + w->mtu - 1) / w->mtu;
}

static uint8_t send_opcode(const struct qsw_wqe *w, bool first, bool last)
{
    uint32_t op = w->wr.opcode;

    if (w->mask == M_WRITE) {
        if (first && last) {
            return op == QSW_WR_RDMA_WRITE_WITH_IMM ? OP_WRITE_ONLY_IMM
                                                    : OP_WRITE_ONLY;
        }
        if (last) {
            return op == QSW_WR_RDMA_WRITE_WITH_IMM ? OP_WRITE_LAST_IMM
                                                    : OP_WRITE_LAST;
        }
        return first ? OP_WRITE_FIRST : OP_WRITE_MIDDLE;
    }
    if (first && last) {
        return op == QSW_WR_SEND_WITH_IMM ? OP_SEND_ONLY_IMM :
               op == QSW_WR_SEND_WITH_INV ? OP_SEND_ONLY_INV : OP_SEND_ONLY;
    }
    if (last) {
        return op == QSW_WR_SEND_WITH_IMM ? OP_SEND_LAST_IMM :
               op == QSW_WR_SEND_WITH_INV ? OP_SEND_LAST_INV : OP_SEND_LAST;
    }
    return first ? OP_SEND_FIRST : OP_SEND_MIDDLE;
}

/*
 * The payload of one packet as pieces of the embedder's memory
 * (qsw_ops.sge_map), so that it goes into the frame without a copy: their
 * number, 0 to copy instead (no sge_map, fault injection on: it keeps
 * frames, a payload below QSW_TX_MAP_MIN, or the embedder cannot map),
 * or minus a wc status.
 */
static int map_payload(struct qsw_qp *qp, struct qsw_wqe *w, uint64_t off,
                       uint32_t paylen, struct iovec *iov)
{
    struct qsw_engine *eng = qp->eng;
    uint64_t total = 0;
    int n;

    if (!eng->ops.sge_map || eng->fault_on || paylen < QSW_TX_MAP_MIN) {
        return 0;
    }
    n = eng->ops.sge_map(eng->opaque, qp, w->wr.sg_list, w->wr.num_sge, off,
                         paylen, iov, QSW_TX_IOV_MAX);
    if (n <= 0) {
        return n;
    }
    for (int i = 0; i < n && i < QSW_TX_IOV_MAX; i++) {
        total += iov[i].iov_len;
    }
    /*
     * An embedder's slip must not put a frame on the wire whose lengths lie:
     * copy instead.
     */
    if (n > QSW_TX_IOV_MAX || total != paylen) {
        eng->ops.sge_unmap(eng->opaque, qp, iov,
                           n > QSW_TX_IOV_MAX ? QSW_TX_IOV_MAX : n);
        return 0;
    }
    return n;
}

/* Builds and sends the packet of w at req.psn; 0 or minus a wc status. */
static int send_pkt(struct qsw_qp *qp, struct qsw_wqe *w)
{
    struct qsw_engine *eng = qp->eng;
    const struct qsw_av *av = qp->type == QSW_QPT_UD ? &w->wr.ud.av
                                                     : &qp->attr.av;
    bool ipv6 = qp->type == QSW_QPT_UD ? !qsw_gid_is_v4(av->dgid) : qp->ipv6;
    uint32_t dqpn = qp->type == QSW_QPT_UD ? w->wr.ud.remote_qpn & PSN_MASK
                                           : qp->attr.dest_qp_num;
    uint16_t sport = qp->type == QSW_QPT_UD ?
                     qsw_udp_sport(av->flow_label, qp->qpn, dqpn) : qp->sport;
    uint32_t psn = qp->req.psn, idx = psn_sub(psn, w->first_psn);
    uint64_t off = (uint64_t)idx * w->mtu;
    uint8_t *bth = qsw_tx_begin(eng, av, ipv6), *h = bth + BTH_LEN;
    uint32_t paylen = 0, m;
    unsigned pad = 0, nmap = 0;
    struct iovec iov[QSW_TX_IOV_MAX];
    uint8_t opcode;
    bool ackreq, se = false, last = true;

    /*
     * req.psn lies in the WQE's range by construction (PSN ranges are fixed
     * when a WQE starts and follow one another); should a sequence of
     * modifies and frames ever break that, the WQE fails rather than send
     * from an offset outside its message.
     */
    if (idx >= w->npkts) {
        return -QSW_WC_LOC_QP_OP_ERR;
    }
    if (w->mask == M_READ) {
        opcode = OP_READ_REQ;
        st64(h, w->wr.rdma.remote_addr + off);
        st32(h + 8, w->wr.rdma.rkey);
        st32(h + 12, (uint32_t)(w->len - off));
        h += RETH_LEN;
        qp->req.psn = psn_add(w->last_psn, 1);
    } else if (w->mask == M_ATOMIC) {
        bool cas = w->wr.opcode == QSW_WR_ATOMIC_CMP_AND_SWP;

        opcode = cas ? OP_CMP_SWAP : OP_FETCH_ADD;
        st64(h, w->wr.atomic.remote_addr);
        st32(h + 8, w->wr.atomic.rkey);
        st64(h + 12, cas ? w->wr.atomic.swap : w->wr.atomic.compare_add);
        st64(h + 20, cas ? w->wr.atomic.compare_add : 0);
        h += ATMETH_LEN;
        qp->req.psn = psn_add(psn, 1);
    } else {
        bool first = idx == 0;

        last = idx + 1 == w->npkts;
        opcode = send_opcode(w, first, last);
        if (qp->type == QSW_QPT_UC) {
            opcode += OP_UC;
        } else if (qp->type == QSW_QPT_UD) {
            opcode += OP_UD;
        }
        m = qsw_opmask[opcode];
        if (m & M_DETH) {
            uint32_t qkey = w->wr.ud.remote_qkey & 0x80000000u
                                ? qp->attr.qkey
                                : w->wr.ud.remote_qkey;

            st32(h, qkey);
            st32(h + 4, qp->qpn & PSN_MASK);    /* reserved byte, then SrcQP */
            h += DETH_LEN;
        }
        if (m & M_RETH) {
            st64(h, w->wr.rdma.remote_addr);
            st32(h + 8, w->wr.rdma.rkey);
            st32(h + 12, w->len);
            h += RETH_LEN;
        }
        if (m & M_IMM) {
            memcpy(h, &w->wr.imm_data, 4);      /* already in network order */
            h += IMM_LEN;
        }
        if (m & M_IETH) {
            st32(h, w->wr.invalidate_rkey);
            h += IETH_LEN;
        }
        paylen = w->len - (uint32_t)off;
        if (paylen > w->mtu) {
            paylen = w->mtu;
        }
        if (paylen) {
            if (w->wr.send_flags & QSW_SEND_INLINE) {
                memcpy(h, w->inl + off, paylen);
            } else {
                int ret = map_payload(qp, w, off, paylen, iov);

                if (ret < 0) {
                    return ret;
                }
                nmap = (unsigned)ret;
                ret = nmap ? 0
                           : eng->ops.sge_read(eng->opaque, qp, w->wr.sg_list,
                                               w->wr.num_sge, off, h, paylen);
                if (ret) {
                    return ret < 0 ? ret : -QSW_WC_LOC_PROT_ERR;
                }
            }
        }
        pad = -paylen & 3;
        if (!nmap) {
            memset(h + paylen, 0, pad);
        }
        se = last && (w->wr.send_flags & QSW_SEND_SOLICITED) &&
             (w->mask == M_SEND || w->wr.opcode == QSW_WR_RDMA_WRITE_WITH_IMM);
        qp->req.psn = psn_add(psn, 1);
    }
    /*
     * IBTA 9.7.2: AckReq on the last packet, and now and then in long messages
     */
    /*
     * AckReq also on the packet that fills the window and on the last one
     * of a resend: their ACKs are what reopen the window.
     */
    ackreq = qp->type == QSW_QPT_RC &&
             (last || ++qp->req.noack >= ackreq_every(qp) ||
              psn_sub(psn, qp->comp.psn) + 1 == qp->req.cwnd ||
              psn_add(psn, 1) == qp->req.hi_psn);
    if (ackreq) {
        qp->req.noack = 0;
    }
    qsw_tx_bth(bth, opcode, se, pad, dqpn, ackreq, psn);
    if (psn_cmp(psn, qp->req.hi_psn) < 0) {
        eng->st.retransmits++;
    } else {
        qp->req.hi_psn = qp->req.psn;
    }
    if (nmap) {
        qsw_tx_finish_iov(eng, av, ipv6, sport, (unsigned)(h - bth), iov, nmap,
                          paylen, pad);
        eng->ops.sge_unmap(eng->opaque, qp, iov, nmap);
    } else {
        qsw_tx_finish(eng, av, ipv6, sport, (unsigned)(h - bth) + paylen + pad);
    }
    return 0;
}

static void local_op(struct qsw_qp *qp, struct qsw_wqe *w)
{
    /*
     * The local operations (IBTA 10.6, 11.4.1.2): LOCAL_INV, fast register
     * and memory window bind. A failed bind is a Memory Window Bind Error
     * (IBTA 11.6.2), the others a local QP operation error.
     */
    struct qsw_engine *eng = qp->eng;
    uint32_t status = QSW_WC_LOC_QP_OP_ERR;
    int ret;

    if (w->wr.opcode == QSW_WR_REG_MR) {
        ret = eng->ops.reg_mr ? eng->ops.reg_mr(eng->opaque, qp->pd, &w->wr.reg)
                              : -1;
    } else if (w->wr.opcode == QSW_WR_BIND_MW) {
        ret = eng->ops.bind_mw
                  ? eng->ops.bind_mw(eng->opaque, qp, qp->pd, &w->wr.bind_mw)
                  : -1;
        status = QSW_WC_MW_BIND_ERR;
    } else {
        ret = eng->ops.invalidate ? eng->ops.invalidate(eng->opaque, qp, qp->pd,
                                                        w->wr.invalidate_rkey)
                                  : -1;
    }
    if (ret) {
        w->status = status;
        qp->req.stopped = true;
    }
    w->state = WQE_DONE;
}

unsigned qsw_req_run(struct qsw_qp *qp, unsigned budget)
{
    unsigned n = 0;
    unsigned max_rd = qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1;

    if ((qp->state != QSW_QPS_RTS && qp->state != QSW_QPS_SQD) ||
        qp->comp.rnr_deadline || qp->req.stopped || qp->eng->tx_busy) {
        return 0;
    }
    qsw_now(qp->eng);
    /*
     * A busy wire stops the loop after the packet it took: everything from
     * the next one on waits, with its PSNs unassigned or as they were.
     */
    while (n < budget && qp->sq_cur != qp->sq_tail && !qp->req.stopped &&
           !qp->eng->tx_busy) {
        struct qsw_wqe *w = wqe_at(qp, qp->sq_cur);
        int ret;

        /* a local operation done before a rewind */
        if (w->state == WQE_DONE) {
            qp->sq_cur++;
            continue;
        }
        if (w->state == WQE_PENDING || w->state == WQE_RESEND) {
            bool resend = w->state == WQE_RESEND;
            uint32_t mtu = resend ? w->mtu : qp->mtu;

            if (qp->state == QSW_QPS_SQD && !resend) {
                /* SQD: finish what started, start nothing */
                break;
            }
            if (!w->mask) {
                local_op(qp, w);
                qp->sq_cur++;
                comp_run(qp);
                continue;
            }
            if (qp->type == QSW_QPT_RC) {
                /* IBTA 10.8: FENCE waits for earlier READ/ATOMIC */
                if ((w->wr.send_flags & QSW_SEND_FENCE) && qp->req.rd_atomic) {
                    break;
                }
                if ((w->mask & (M_READ | M_ATOMIC)) &&
                    qp->req.rd_atomic >= max_rd) {
                    break;
                }
                /*
                 * A READ's responses count against the window too: with
                 * others outstanding, it waits until its whole response
                 * fits. A lost response then restarts one READ's stream,
                 * not those of every READ queued behind it.
                 */
                if ((w->mask & M_READ) && qp->comp.psn != qp->req.psn &&
                    psn_sub(qp->req.psn, qp->comp.psn) +
                            (w->len + mtu - 1) / mtu >
                        qp->req.cwnd) {
                    break;
                }
            } else if (qp->type == QSW_QPT_UD && w->len > qp->mtu) {
                /* UD: one packet per message */
                w->status = QSW_WC_LOC_LEN_ERR;
                w->state = WQE_DONE;
                qp->sq_cur++;
                comp_run(qp);
                break;
            }
            if (!resend) {
                w->first_psn = qp->req.psn;
                w->mtu = qp->mtu;
                w->npkts = npkts_of(qp, w);
                w->last_psn = psn_add(w->first_psn, w->npkts - 1);
            }
            w->state = WQE_INFLIGHT;
            if (w->mask & (M_READ | M_ATOMIC)) {
                qp->req.rd_atomic++;
            }
        }
        /*
         * The window limits new packets; a go-back-N resend goes up to
         * what was sent before (the responder may have it all, and its
         * ACK for it is only taken once the resend is there).
         */
        if (qp->type == QSW_QPT_RC &&
            psn_cmp(qp->req.psn, qp->req.hi_psn) >= 0 &&
            psn_sub(qp->req.psn, qp->comp.psn) >= qp->req.cwnd) {
            break;                          /* window full: wait for ACKs */
        }
        ret = send_pkt(qp, w);
        if (ret) {
            w->status = (uint8_t)-ret;
            w->state = WQE_DONE;
            qp->req.stopped = true;
            qp->sq_cur++;
            comp_run(qp);
            break;
        }
        n++;
        if (psn_cmp(qp->req.psn, w->last_psn) > 0) {
            qp->sq_cur++;
            if (qp->type == QSW_QPT_RC) {
                w->state = WQE_SENT;
            } else {
                w->state = WQE_DONE;        /* UC/UD: complete once sent */
                comp_run(qp);
            }
        }
        arm_rto(qp, false);
    }
    return n;
}

void qsw_req_timeout(struct qsw_qp *qp, uint64_t now)
{
    qp->eng->now = now;
    if (qp->comp.rnr_deadline && qp->comp.rnr_deadline <= now) {
        qp->comp.rnr_deadline = 0;
        qsw_trace(qp, QSW_TRACE_RETRANSMIT, qp->comp.psn, QSW_RETRANSMIT_RNR);
        rewind_to(qp, qp->comp.psn);
    } else if (qp->comp.rto_deadline && qp->comp.rto_deadline <= now) {
        qp->comp.rto_deadline = 0;
        qp->eng->st.timeouts++;
        if (unacked(qp)) {
            retry(qp, true);
        }
    }
    qsw_qp_timer_update(qp);
}

void qsw_req_flush(struct qsw_qp *qp)
{
    while (qp->sq_head != qp->sq_tail) {
        struct qsw_wqe *w = wqe_at(qp, qp->sq_head++);

        wqe_complete(qp, w,
                     w->state == WQE_DONE && w->status ? w->status
                                                       : QSW_WC_WR_FLUSH_ERR);
    }
    qp->sq_cur = qp->sq_head;
    qp->req.rd_atomic = 0;
    qp->comp.psn = qp->req.psn;
    qp->comp.rto_deadline = qp->comp.rnr_deadline = 0;
    qsw_qp_timer_update(qp);
    qsw_sq_freed(qp);
}

void qsw_req_reset(struct qsw_qp *qp)
{
    qp->sq_head = qp->sq_cur = qp->sq_tail = 0;
    /* RESET empties the queue; the embedder knows */
    qp->sq_waiting = false;
    memset(&qp->req, 0, sizeof(qp->req));
    memset(&qp->comp, 0, sizeof(qp->comp));
    qp->req.psn = qp->comp.psn = qp->req.hi_psn = qp->attr.sq_psn;
    qp->req.cwnd = qp->req.ssthresh = QSW_MAX_UNACKED;
    qp->comp.retry_left = qp->attr.retry_cnt;
    qp->comp.rnr_left = qp->attr.rnr_retry;
}

/* ---- completer ----------------------------------------------------------- */

static void read_resp(struct qsw_qp *qp, const struct qsw_pkt *pkt)
{
    struct qsw_engine *eng = qp->eng;
    struct qsw_wqe *w;
    uint32_t idx;
    uint64_t off;

    if (qp->sq_head == qp->sq_cur) {
        eng->st.dup_responses++;
        return;
    }
    w = wqe_at(qp, qp->sq_head);
    while (w->state == WQE_DONE) {          /* local ops ahead of it */
        comp_run(qp);
        if (qp->state == QSW_QPS_ERR || qp->sq_head == qp->sq_cur) {
            return;
        }
        w = wqe_at(qp, qp->sq_head);
    }
    if (!(pkt->mask & w->mask) || psn_cmp(pkt->psn, w->first_psn) < 0 ||
        psn_cmp(pkt->psn, w->last_psn) > 0) {
        req_fail(qp, QSW_WC_BAD_RESP_ERR);  /* a response of the wrong kind */
        return;
    }
    idx = psn_sub(pkt->psn, w->first_psn);
    off = (uint64_t)idx * w->mtu;
    if (w->mask == M_ATOMIC) {
        uint8_t orig[8];

        memcpy(orig, pkt->bth + hdr_off(pkt->mask, M_ATMACK), 8);
        {
            uint64_t v = ld64(orig);
            /*
             * the local buffer receives the value in host order, as verbs
             * returns it
             */
            int ret = eng->ops.sge_write(eng->opaque, qp, w->wr.sg_list,
                                         w->wr.num_sge, 0, &v, 8);

            if (ret) {
                req_fail(qp, ret < 0 ? (uint32_t)-ret : QSW_WC_LOC_PROT_ERR);
                return;
            }
        }
    } else {
        bool last = pkt->mask & M_LAST;

        /* IBTA 9.7: only the last response may be short */
        if (off + pkt->paylen > w->len || (!last && pkt->paylen != w->mtu) ||
            (last &&
             (pkt->psn != w->last_psn || off + pkt->paylen != w->len))) {
            req_fail(qp, QSW_WC_BAD_RESP_ERR);
            return;
        }
        if (pkt->paylen) {
            int ret = eng->ops.sge_write(eng->opaque, qp, w->wr.sg_list,
                                         w->wr.num_sge, off, pkt->payload,
                                         pkt->paylen);
            if (ret) {
                req_fail(qp, ret < 0 ? (uint32_t)-ret : QSW_WC_LOC_PROT_ERR);
                return;
            }
        }
    }
    if (pkt->psn == w->last_psn) {
        w->state = WQE_DONE;
    }
    progress(qp, psn_add(pkt->psn, 1));
    comp_run(qp);
}

/*
 * Acknowledges everything before limit: done WQEs complete, comp.psn moves
 * up, but never past the start of a READ/ATOMIC still missing responses.
 * Returns true when such a READ/ATOMIC lies wholly before limit.
 */
static bool ack_upto(struct qsw_qp *qp, uint32_t limit)
{
    bool missing = ack_before(qp, limit);

    for (uint32_t i = qp->sq_head; i != qp->sq_cur; i++) {
        struct qsw_wqe *w = wqe_at(qp, i);

        if (w->state == WQE_DONE) {
            continue;
        }
        if ((w->mask & (M_READ | M_ATOMIC)) &&
            psn_cmp(limit, w->first_psn) > 0) {
            limit = w->first_psn;
        }
        break;
    }
    progress(qp, limit);
    comp_run(qp);
    return missing;
}

void qsw_comp_rx(struct qsw_qp *qp, const struct qsw_pkt *pkt)
{
    struct qsw_engine *eng = qp->eng;
    uint32_t psn = pkt->psn;
    uint8_t syn = 0;

    /* responses to PSNs not in flight are stale duplicates or bogus */
    if (psn_cmp(psn, qp->comp.psn) < 0 || psn_cmp(psn, qp->req.psn) >= 0) {
        eng->st.dup_responses++;
        return;
    }
    if (pkt->mask & M_AETH) {
        syn = pkt->bth[hdr_off(pkt->mask, M_AETH)];
    }
    if (!(pkt->mask & M_ACK)) {
        /*
         * READ response or ATOMIC ACK: implicitly acknowledges the requests
         * before it
         */
        if ((pkt->mask & M_AETH) && (syn & AETH_TYPE_MASK) != AETH_ACK) {
            eng->st.drop_malformed++;
            return;
        }
        if (ack_upto(qp, psn) ||
            (qp->state != QSW_QPS_ERR && psn != qp->comp.psn)) {
            /*
             * responses missing before this one: resend from comp.psn, once per
             * gap
             */
            eng->st.dup_responses++;
            if (qp->state != QSW_QPS_ERR && !qp->comp.rewound) {
                retry(qp, false);
            }
            return;
        }
        if (qp->state != QSW_QPS_ERR) {
            read_resp(qp, pkt);
        }
        return;
    }
    switch (syn & AETH_TYPE_MASK) {
    case AETH_ACK:
        eng->st.rx_acks++;
        if (ack_upto(qp, psn_add(psn, 1)) && qp->state != QSW_QPS_ERR &&
            !qp->comp.rewound) {
            /* the responder is past a READ we lack */
            retry(qp, false);
        }
        return;
    case AETH_RNR_NAK:
        eng->st.rx_rnr_naks++;
        qsw_trace(qp, QSW_TRACE_NAK_RCVD, psn, syn);
        if (ack_upto(qp, psn)) {
            if (qp->state != QSW_QPS_ERR && !qp->comp.rewound) {
                retry(qp, false);
            }
            return;
        }
        if (qp->state == QSW_QPS_ERR) {
            return;
        }
        /* IBTA 9.7: wait the time the responder asks, then resend */
        if (qp->attr.rnr_retry != 7) {
            if (!qp->comp.rnr_left) {
                req_fail(qp, QSW_WC_RNR_RETRY_EXC_ERR);
                return;
            }
            qp->comp.rnr_left--;
        }
        qp->comp.rnr_deadline = eng->now + qsw_rnr_timer_ns(syn & 0x1f);
        if (!qp->comp.rnr_deadline) {
            qp->comp.rnr_deadline = 1;
        }
        qp->comp.rto_deadline = 0;
        qsw_qp_timer_update(qp);
        return;
    case AETH_NAK:
        if ((syn & 0x1f) == NAK_PSN_SEQ) {
            eng->st.rx_naks_seq++;
        } else {
            eng->st.rx_naks_err++;
        }
        qsw_trace(qp, QSW_TRACE_NAK_RCVD, psn, syn);
        if (ack_upto(qp, psn)) {
            if (qp->state != QSW_QPS_ERR && !qp->comp.rewound) {
                retry(qp, false);
            }
            return;
        }
        if (qp->state == QSW_QPS_ERR) {
            return;
        }
        switch (syn & 0x1f) {
        case NAK_PSN_SEQ:
            /*
             * IBTA 9.7: resend from psn, unless a resend from there is under
             * way
             */
            if (!qp->comp.rewound) {
                retry(qp, false);
            }
            break;
        case NAK_INV_REQ:
            req_fail(qp, QSW_WC_REM_INV_REQ_ERR);
            break;
        case NAK_REM_ACCESS:
            req_fail(qp, QSW_WC_REM_ACCESS_ERR);
            break;
        case NAK_REM_OP:
            req_fail(qp, QSW_WC_REM_OP_ERR);
            break;
        default:
            req_fail(qp, QSW_WC_BAD_RESP_ERR);
            break;
        }
        return;
    default:
        eng->st.drop_malformed++;       /* reserved syndrome */
        return;
    }
}
