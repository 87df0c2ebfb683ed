/*
 * The responder of the software engine: request packets of RC and UC QPs
 * (PSN checks, duplicates, SEND/WRITE placement, READ and ATOMIC through
 * the responder resources, ACK/NAK generation) and UD receives.
 *
 * ACKs are coalesced: a request with AckReq (or every QSW_ACK_EVERY
 * packets) leaves one pending ACK per QP carrying the newest PSN, sent by
 * the next poll after any READ/ATOMIC responses for earlier PSNs, so the
 * requester never sees an ACK overtake a response (IBTA 9.7).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "sw_int.h"

/* ---- packets the responder sends ----------------------------------------- */

static void send_ack(struct qsw_qp *qp, uint8_t syn, uint32_t psn)
{
    struct qsw_engine *eng = qp->eng;
    uint8_t *bth = qsw_tx_begin(eng, &qp->attr.av, qp->ipv6);

    qsw_tx_bth(bth, OP_ACK, false, 0, qp->attr.dest_qp_num, false, psn);
    bth[BTH_LEN] = syn;
    st24(bth + BTH_LEN + 1, qp->resp.msn);
    switch (syn & AETH_TYPE_MASK) {
    case AETH_ACK:
        eng->st.tx_acks++;
        break;
    case AETH_RNR_NAK:
        eng->st.tx_rnr_naks++;
        qsw_trace(qp, QSW_TRACE_NAK_SENT, psn, syn);
        break;
    default:
        if ((syn & 0x1f) == NAK_PSN_SEQ) {
            eng->st.tx_naks_seq++;
        } else {
            eng->st.tx_naks_err++;
        }
        qsw_trace(qp, QSW_TRACE_NAK_SENT, psn, syn);
    }
    qsw_tx_finish(eng, &qp->attr.av, qp->ipv6, qp->sport, BTH_LEN + AETH_LEN);
}

static void queue_ack(struct qsw_qp *qp, uint8_t syn, uint32_t psn)
{
    /*
     * A NAK replaces a pending ACK (it acknowledges all before it); an ACK
     * never replaces a NAK.
     */
    if (qp->resp.ack_type && (qp->resp.ack_syn & AETH_TYPE_MASK) != AETH_ACK &&
        (syn & AETH_TYPE_MASK) == AETH_ACK) {
        return;
    }
    qp->resp.ack_type = 1;
    qp->resp.ack_syn = syn;
    qp->resp.ack_psn = psn;
    qp->resp.since_ack = 0;
    qsw_qp_activate(qp);
}

static void flush_ack(struct qsw_qp *qp)
{
    if (qp->resp.ack_type) {
        qp->resp.ack_type = 0;
        send_ack(qp, qp->resp.ack_syn, qp->resp.ack_psn);
    }
}

static bool res_active(const struct qsw_qp *qp)
{
    for (unsigned i = 0; i < qp->resp.nres; i++) {
        if (qp->resp.res[i].active) {
            return true;
        }
    }
    return false;
}

/*
 * A READ/ATOMIC was accepted: a pending ACK for earlier PSNs leaves now,
 * unless responses are still queued, in which case it is dropped: the new
 * response, sent after them, acknowledges everything before it.
 */
static void ack_before_response(struct qsw_qp *qp)
{
    if (!res_active(qp)) {
        flush_ack(qp);
    } else if (qp->resp.ack_type &&
               (qp->resp.ack_syn & AETH_TYPE_MASK) == AETH_ACK) {
        qp->resp.ack_type = 0;
    }
}

/*
 * A request the responder cannot carry out (IBTA 9.7
 * errors): NAK it at once and move the QP to ERR.
 */
static void fatal(struct qsw_qp *qp, const struct qsw_pkt *pkt, uint8_t nak,
                  enum qsw_event ev)
{
    if (qp->type == QSW_QPT_UC) {
        /* UC: no NAKs; the message is dropped */
        qp->eng->st.drop_uc++;
        qp->resp.in_msg = 0;
        qp->resp.offset = 0;
        qp->resp.uc_drop = true;
        return;
    }
    qp->resp.ack_type = 0;
    if (res_active(qp)) {
        /*
         * responses to earlier READ/ATOMICs go first; poll sends the NAK after
         * them
         */
        qp->resp.fatal = true;
        qp->resp.fatal_syn = AETH_NAK | nak;
        qp->resp.fatal_psn = pkt->psn;
        qp->resp.fatal_ev = (uint8_t)ev;
        qsw_qp_activate(qp);
        return;
    }
    send_ack(qp, AETH_NAK | nak, pkt->psn);
    qsw_qp_to_error(qp, ev);
}

static void recv_error(struct qsw_qp *qp, uint32_t status)
{
    struct qsw_wc wc;

    memset(&wc, 0, sizeof(wc));
    wc.wr_id = qp->resp.wr.wr_id;
    wc.status = status;
    wc.opcode = QSW_WC_RECV;
    wc.qp_num = qp->qpn;
    qp->resp.have_wr = false;
    qsw_complete(qp, &wc);
}

/* The receive WR for the message starting now: 0, -QSW_ENOENT or -QSW_EIO. */
static int get_recv(struct qsw_qp *qp)
{
    struct qsw_engine *eng = qp->eng;
    int ret;

    if (qp->resp.have_wr) {
        return 0;
    }
    ret = eng->ops.get_recv(eng->opaque, qp, &qp->resp.wr);
    if (ret) {
        return ret == -QSW_EIO ? -QSW_EIO : -QSW_ENOENT;
    }
    if (qp->resp.wr.num_sge > QSW_MAX_SGE) {
        qp->resp.wr.num_sge = QSW_MAX_SGE;
    }
    qp->resp.wr_len = 0;
    for (uint32_t i = 0; i < qp->resp.wr.num_sge; i++) {
        uint64_t l = (uint64_t)qp->resp.wr_len + qp->resp.wr.sg_list[i].length;

        qp->resp.wr_len = l > UINT32_MAX ? UINT32_MAX : (uint32_t)l;
    }
    qp->resp.have_wr = true;
    qp->resp.offset = 0;
    return 0;
}

/*
 * No receive WR for a message that needs one. None posted (IBTA 9.7): RNR
 * NAK, the requester waits min_rnr_timer and resends. The RQ is broken:
 * a local QP error, already completed by the embedder; Remote Operational
 * Error NAK, and the QP to error.
 */
static void no_recv(struct qsw_qp *qp, const struct qsw_pkt *pkt, int why)
{
    if (why == -QSW_EIO) {
        if (qp->type == QSW_QPT_UC) {
            qsw_qp_to_error(qp, QSW_EV_QP_FATAL);
        } else {
            fatal(qp, pkt, NAK_REM_OP, QSW_EV_QP_FATAL);
        }
        return;
    }
    if (qp->type == QSW_QPT_UC) {
        qp->eng->st.drop_uc++;
        qp->resp.uc_drop = true;
        return;
    }
    qp->resp.nak_sent = true;
    queue_ack(qp, AETH_RNR_NAK | (qp->attr.min_rnr_timer & 0x1f), pkt->psn);
}

static struct qsw_res *res_alloc(struct qsw_qp *qp)
{
    struct qsw_res *r = &qp->resp.res[qp->resp.res_next];

    if (r->active) {
        /* more READ/ATOMIC than max_dest_rd_atomic outstanding */
        return NULL;
    }
    qp->resp.res_next = (qp->resp.res_next + 1) % qp->resp.nres;
    return r;
}

/* ---- SEND, WRITE, READ, ATOMIC ------------------------------------------- */

static uint32_t access_needed(uint32_t m)
{
    return m & M_WRITE    ? QSW_ACCESS_REMOTE_WRITE
           : m & M_READ   ? QSW_ACCESS_REMOTE_READ
           : m & M_ATOMIC ? QSW_ACCESS_REMOTE_ATOMIC
                          : 0;
}

/* An expected request; returns true when it was consumed (the PSN advances). */
static bool execute(struct qsw_qp *qp, const struct qsw_pkt *pkt)
{
    struct qsw_engine *eng = qp->eng;
    uint32_t m = pkt->mask, need = access_needed(m);
    const uint8_t *bth = pkt->bth;
    int ret;

    /* IBTA 9.7: the opcode must continue the message in progress */
    if (qp->resp.in_msg ? !(m & qp->resp.in_msg) || !(m & (M_MIDDLE | M_LAST)) :
                          !(m & M_FIRST)) {
        fatal(qp, pkt, NAK_INV_REQ, QSW_EV_QP_REQ_ERR);
        return false;
    }
    /*
     * The port counters count requests as they arrive, refused ones too (as
     * mlx5's).
     */
    if (m & M_FIRST) {
        if (m & M_WRITE) {
            eng->st.rx_write_requests++;
        } else if (m & M_READ) {
            eng->st.rx_read_requests++;
        } else if (m & M_ATOMIC) {
            eng->st.rx_atomic_requests++;
        }
    }
    if (need && !(qp->attr.qp_access_flags & need)) {
        fatal(qp, pkt, NAK_REM_ACCESS, QSW_EV_QP_ACCESS_ERR);
        return false;
    }
    if ((m & M_PAYLOAD) &&
        (pkt->paylen > qp->mtu || ((m & (M_FIRST | M_MIDDLE)) &&
                                   !(m & M_LAST) && pkt->paylen != qp->mtu))) {
        fatal(qp, pkt, NAK_INV_REQ, QSW_EV_QP_REQ_ERR);
        return false;
    }

    if (m & M_SEND) {
        if (m & M_FIRST) {
            ret = get_recv(qp);
            if (ret) {
                no_recv(qp, pkt, ret);
                return false;
            }
        }
        if ((uint64_t)qp->resp.offset + pkt->paylen > qp->resp.wr_len) {
            /* 9.7.5.1.4: class B, invalid request */
            recv_error(qp, QSW_WC_LOC_LEN_ERR);
            if (qp->type == QSW_QPT_UC) {
                qsw_qp_to_error(qp, 0);
                return false;
            }
            fatal(qp, pkt, NAK_INV_REQ, 0);
            return false;
        }
        if (pkt->paylen) {
            ret = eng->ops.sge_write(eng->opaque, qp, qp->resp.wr.sg_list,
                                     qp->resp.wr.num_sge, qp->resp.offset,
                                     pkt->payload, pkt->paylen);
            if (ret) {
                recv_error(qp, ret < 0 ? (uint32_t)-ret : QSW_WC_LOC_PROT_ERR);
                if (qp->type == QSW_QPT_UC) {
                    qsw_qp_to_error(qp, 0);
                    return false;
                }
                fatal(qp, pkt, NAK_REM_OP, 0);
                return false;
            }
        }
        qp->resp.offset += pkt->paylen;
        if (m & M_LAST) {
            struct qsw_wc wc;

            memset(&wc, 0, sizeof(wc));
            wc.wr_id = qp->resp.wr.wr_id;
            wc.opcode = QSW_WC_RECV;
            wc.byte_len = qp->resp.offset;
            wc.qp_num = qp->qpn;
            wc.src_qp = qp->attr.dest_qp_num;
            if (m & M_IMM) {
                memcpy(&wc.imm_data, bth + hdr_off(m, M_IMM), 4);
                wc.wc_flags |= QSW_WC_WITH_IMM;
            }
            if (m & M_IETH) {
                uint32_t rkey = ld32(bth + hdr_off(m, M_IETH));

                /* IBTA 9.4, 10.6: invalidate before reporting */
                if (!eng->ops.invalidate ||
                    eng->ops.invalidate(eng->opaque, qp, qp->pd, rkey)) {
                    recv_error(qp, QSW_WC_REM_INV_REQ_ERR);
                    fatal(qp, pkt, NAK_INV_REQ, 0);
                    return false;
                }
                wc.invalidated_rkey = rkey;
                wc.wc_flags |= QSW_WC_WITH_INV;
            }
            if (pkt->se) {
                wc.wc_flags |= QSW_WC_SOLICITED;
            }
            qp->resp.have_wr = false;
            qp->resp.in_msg = 0;
            qp->resp.msn = psn_add(qp->resp.msn, 1);
            qsw_complete(qp, &wc);
        } else {
            qp->resp.in_msg = M_SEND;
        }
        return true;
    }

    if (m & M_WRITE) {
        if (m & M_IMM) {
            /* before any side effect of this packet */
            ret = get_recv(qp);
            if (ret) {
                no_recv(qp, pkt, ret);
                return false;
            }
        }
        if (m & M_RETH) {
            const uint8_t *reth = bth + hdr_off(m, M_RETH);

            qp->resp.va = ld64(reth);
            qp->resp.rkey = ld32(reth + 8);
            qp->resp.resid = qp->resp.wlen = ld32(reth + 12);
            if (qp->resp.resid && eng->ops.rkey_check &&
                eng->ops.rkey_check(eng->opaque, qp, qp->pd, qp->resp.rkey,
                                    qp->resp.va, qp->resp.resid,
                                    QSW_ACCESS_REMOTE_WRITE)) {
                fatal(qp, pkt, NAK_REM_ACCESS, QSW_EV_QP_ACCESS_ERR);
                return false;
            }
        }
        if (pkt->paylen > qp->resp.resid ||
            ((m & M_LAST) && pkt->paylen != qp->resp.resid)) {
            fatal(qp, pkt, NAK_INV_REQ, QSW_EV_QP_REQ_ERR);
            return false;
        }
        if (pkt->paylen &&
            eng->ops.rkey_write(eng->opaque, qp, qp->pd, qp->resp.rkey,
                                qp->resp.va, pkt->payload, pkt->paylen)) {
            fatal(qp, pkt, NAK_REM_ACCESS, QSW_EV_QP_ACCESS_ERR);
            return false;
        }
        qp->resp.va += pkt->paylen;
        qp->resp.resid -= pkt->paylen;
        if (m & M_LAST) {
            qp->resp.in_msg = 0;
            qp->resp.msn = psn_add(qp->resp.msn, 1);
            if (m & M_IMM) {
                struct qsw_wc wc;

                memset(&wc, 0, sizeof(wc));
                wc.wr_id = qp->resp.wr.wr_id;
                wc.opcode = QSW_WC_RECV_RDMA_WITH_IMM;
                wc.byte_len = qp->resp.wlen;
                wc.qp_num = qp->qpn;
                wc.src_qp = qp->attr.dest_qp_num;
                memcpy(&wc.imm_data, bth + hdr_off(m, M_IMM), 4);
                wc.wc_flags = QSW_WC_WITH_IMM |
                              (pkt->se ? QSW_WC_SOLICITED : 0);
                qp->resp.have_wr = false;
                qsw_complete(qp, &wc);
            }
        } else {
            qp->resp.in_msg = M_WRITE;
        }
        return true;
    }

    if (m & M_READ) {
        const uint8_t *reth = bth + hdr_off(m, M_RETH);
        uint64_t va = ld64(reth);
        uint32_t rkey = ld32(reth + 8), len = ld32(reth + 12);
        uint32_t npkts =
            len ? (uint32_t)(((uint64_t)len + qp->mtu - 1) / qp->mtu) : 1;
        struct qsw_res *r;

        if (len > 0x80000000u) {
            fatal(qp, pkt, NAK_INV_REQ, QSW_EV_QP_REQ_ERR);
            return false;
        }
        if (len && eng->ops.rkey_check &&
            eng->ops.rkey_check(eng->opaque, qp, qp->pd, rkey, va, len,
                                QSW_ACCESS_REMOTE_READ)) {
            fatal(qp, pkt, NAK_REM_ACCESS, QSW_EV_QP_ACCESS_ERR);
            return false;
        }
        r = res_alloc(qp);
        if (!r) {
            fatal(qp, pkt, NAK_INV_REQ, QSW_EV_QP_REQ_ERR);
            return false;
        }
        ack_before_response(qp);
        r->type = RES_READ;
        r->first_psn = r->start_psn = r->cur_psn = pkt->psn;
        r->last_psn = psn_add(pkt->psn, npkts - 1);
        r->va = va;
        r->rkey = rkey;
        r->len = len;
        r->mtu = qp->mtu;
        r->active = true;
        qp->resp.msn = psn_add(qp->resp.msn, 1);
        qp->resp.psn = psn_add(r->last_psn, 1);
        qsw_qp_activate(qp);
        return false;                   /* the PSN moved already */
    }

    if (m & M_ATOMIC) {
        const uint8_t *ae = bth + hdr_off(m, M_ATMETH);
        uint64_t va = ld64(ae), orig = 0;
        uint32_t rkey = ld32(ae + 8);
        bool cas = pkt->opcode == OP_CMP_SWAP;
        struct qsw_res *r;

        /* IBTA 9.4: atomics are naturally aligned */
        if (va & 7) {
            fatal(qp, pkt, NAK_INV_REQ, QSW_EV_QP_REQ_ERR);
            return false;
        }
        r = res_alloc(qp);
        if (!r) {
            fatal(qp, pkt, NAK_INV_REQ, QSW_EV_QP_REQ_ERR);
            return false;
        }
        if ((eng->ops.rkey_check &&
             eng->ops.rkey_check(eng->opaque, qp, qp->pd, rkey, va, 8,
                                 QSW_ACCESS_REMOTE_ATOMIC)) ||
            eng->ops.rkey_atomic(eng->opaque, qp, qp->pd, rkey, va,
                                 cas ? QSW_ATOMIC_CMP_SWP
                                     : QSW_ATOMIC_FETCH_ADD,
                                 cas ? ld64(ae + 20) : ld64(ae + 12),
                                 cas ? ld64(ae + 12) : 0, &orig)) {
            fatal(qp, pkt, NAK_REM_ACCESS, QSW_EV_QP_ACCESS_ERR);
            return false;
        }
        ack_before_response(qp);
        r->type = RES_ATOMIC;
        r->first_psn = r->last_psn = r->start_psn = r->cur_psn = pkt->psn;
        r->orig = orig;
        r->active = true;
        qp->resp.msn = psn_add(qp->resp.msn, 1);
        qp->resp.psn = psn_add(pkt->psn, 1);
        qsw_qp_activate(qp);
        return false;
    }
    fatal(qp, pkt, NAK_INV_REQ, QSW_EV_QP_REQ_ERR);
    return false;
}

/* IBTA 9.7: a duplicate request gets the response it got the first time. */
static void duplicate(struct qsw_qp *qp, const struct qsw_pkt *pkt)
{
    qp->eng->st.duplicates++;
    if (pkt->mask & (M_SEND | M_WRITE)) {
        if (pkt->ackreq) {
            queue_ack(qp, AETH_ACK | AETH_CREDIT_INVALID,
                      psn_sub(qp->resp.psn, 1));
        }
        return;
    }
    for (unsigned i = 0; i < qp->resp.nres; i++) {
        struct qsw_res *r = &qp->resp.res[i];

        if ((pkt->mask & M_READ) && r->type == RES_READ &&
            psn_cmp(pkt->psn, r->first_psn) >= 0 &&
            psn_cmp(pkt->psn, r->last_psn) <= 0) {
            /*
             * re-execute from the PSN asked for, with the original request's
             * parameters
             */
            r->start_psn = r->cur_psn = pkt->psn;
            r->active = true;
            qsw_qp_activate(qp);
            return;
        }
        if ((pkt->mask & M_ATOMIC) && r->type == RES_ATOMIC &&
            pkt->psn == r->first_psn) {
            r->start_psn = r->cur_psn = pkt->psn;
            /* replay the saved result, never execute again */
            r->active = true;
            qsw_qp_activate(qp);
            return;
        }
    }
    /* too old to be in the resources: dropped, the requester will time out */
}

static void uc_rx(struct qsw_qp *qp, const struct qsw_pkt *pkt)
{
    /*
     * IBTA 9.8: a PSN gap loses the message in progress; resynchronise on the
     * PSN
     */
    if (pkt->psn != qp->resp.psn) {
        if (qp->resp.in_msg) {
            qp->eng->st.drop_uc++;
        }
        qp->resp.in_msg = 0;
        qp->resp.offset = 0;
        qp->resp.uc_drop = true;
        qp->resp.psn = pkt->psn;
    }
    qp->resp.psn = psn_add(pkt->psn, 1);
    if (qp->resp.uc_drop) {
        if (!(pkt->mask & M_FIRST)) {
            qp->eng->st.drop_uc++;
            return;
        }
        qp->resp.uc_drop = false;
    }
    execute(qp, pkt);
}

void qsw_resp_rx(struct qsw_qp *qp, const struct qsw_pkt *pkt)
{
    int32_t d;

    if (qp->type == QSW_QPT_UC) {
        uc_rx(qp, pkt);
        return;
    }
    if (qp->resp.fatal) {
        /* on the way to ERR: nothing more is executed */
        qp->eng->st.drop_bad_state++;
        return;
    }
    d = psn_cmp(pkt->psn, qp->resp.psn);
    if (d < 0) {
        duplicate(qp, pkt);
        return;
    }
    if (d > 0) {
        /* IBTA 9.7: one NAK per gap, not one per packet */
        qp->eng->st.drop_out_of_seq++;
        if (!qp->resp.nak_sent) {
            qp->resp.nak_sent = true;
            queue_ack(qp, AETH_NAK | NAK_PSN_SEQ, qp->resp.psn);
        }
        return;
    }
    qp->resp.nak_sent = false;
    if (!execute(qp, pkt)) {
        return;
    }
    qp->resp.psn = psn_add(pkt->psn, 1);
    if (pkt->ackreq || ++qp->resp.since_ack >= QSW_ACK_EVERY) {
        queue_ack(qp, AETH_ACK | AETH_CREDIT_INVALID, pkt->psn);
    }
}

/* ---- responses from poll ------------------------------------------------- */

static bool send_response(struct qsw_qp *qp, struct qsw_res *r)
{
    struct qsw_engine *eng = qp->eng;
    uint8_t *bth = qsw_tx_begin(eng, &qp->attr.av, qp->ipv6),
            *h = bth + BTH_LEN;
    uint32_t psn = r->cur_psn, paylen = 0;
    unsigned pad = 0;
    uint8_t opcode;
    bool aeth;

    if (r->type == RES_ATOMIC) {
        opcode = OP_ATOMIC_ACK;
        h[0] = AETH_ACK | AETH_CREDIT_INVALID;
        st24(h + 1, qp->resp.msn);
        st64(h + AETH_LEN, r->orig);
        h += AETH_LEN + ATMACK_LEN;
        eng->st.tx_atomic_acks++;
    } else {
        uint64_t off = (uint64_t)psn_sub(psn, r->first_psn) * r->mtu;
        bool first = psn == r->start_psn, last = psn == r->last_psn;

        opcode = first && last ? OP_READ_RESP_ONLY
                 : first       ? OP_READ_RESP_FIRST
                 : last        ? OP_READ_RESP_LAST
                               : OP_READ_RESP_MIDDLE;
        aeth = first || last;
        if (aeth) {
            h[0] = AETH_ACK | AETH_CREDIT_INVALID;
            st24(h + 1, qp->resp.msn);
            h += AETH_LEN;
        }
        paylen = r->len - (uint32_t)off;
        if (paylen > r->mtu) {
            paylen = r->mtu;
        }
        if (paylen && eng->ops.rkey_read(eng->opaque, qp, qp->pd, r->rkey,
                                         r->va + off, h, paylen)) {
            struct qsw_pkt p = { .psn = psn };

            r->active = false;
            fatal(qp, &p, NAK_REM_ACCESS, QSW_EV_QP_ACCESS_ERR);
            return false;
        }
        pad = -paylen & 3;
        memset(h + paylen, 0, pad);
        eng->st.tx_read_resp++;
    }
    qsw_tx_bth(bth, opcode, false, pad, qp->attr.dest_qp_num, false, psn);
    qsw_tx_finish(eng, &qp->attr.av, qp->ipv6, qp->sport,
                  (unsigned)(h - bth) + paylen + pad);
    if (psn == r->last_psn) {
        r->active = false;
    } else {
        r->cur_psn = psn_add(psn, 1);
    }
    return true;
}

unsigned qsw_resp_run(struct qsw_qp *qp, unsigned budget)
{
    struct qsw_engine *eng = qp->eng;
    unsigned n = 0;

    if (qp->type == QSW_QPT_UD || qp->state < QSW_QPS_RTR ||
        qp->state == QSW_QPS_ERR || eng->tx_busy) {
        return 0;
    }
    qsw_now(eng);
    /*
     * responder resources in arrival order, the oldest first; a busy wire
     * stops after the response it took, the rest (and the ACK) wait
     */
    for (unsigned k = 0; k < qp->resp.nres && n < budget; k++) {
        struct qsw_res *r =
            &qp->resp.res[(qp->resp.res_next + k) % qp->resp.nres];

        while (r->active && n < budget) {
            if (eng->tx_busy) {
                return n;
            }
            if (!send_response(qp, r)) {
                return n;
            }
            n++;
        }
    }
    if (eng->tx_busy) {
        return n;
    }
    if (n < budget && qp->resp.fatal && !res_active(qp)) {
        qp->resp.fatal = false;
        send_ack(qp, qp->resp.fatal_syn, qp->resp.fatal_psn);
        qsw_qp_to_error(qp, (enum qsw_event)qp->resp.fatal_ev);
        return n + 1;
    }
    if (n < budget && qp->resp.ack_type && !res_active(qp)) {
        flush_ack(qp);
        n++;
    }
    return n;
}

/*
 * The consumer stops the QP (destroy, RESET, a modify to ERR): a pending
 * ACK covers messages whose completions the consumer may already hold, so
 * it leaves now rather than with the QP (the requester would retry them
 * into RETRY_EXC_ERR, or flush them when the consumer's disconnect reaches
 * it first: iSER's logout); not if READ/ATOMIC responses for earlier PSNs
 * are still queued, which it must not overtake. Not when the engine moves
 * the QP to ERR by itself, nor at qsw_qp_fail(): those follow errors where
 * the newest message the ACK would cover was not delivered.
 */
void qsw_resp_stop(struct qsw_qp *qp)
{
    if (qp->type == QSW_QPT_RC && qp->resp.ack_type && !res_active(qp) &&
        (qp->state == QSW_QPS_RTR || qp->state == QSW_QPS_RTS ||
         qp->state == QSW_QPS_SQD || qp->state == QSW_QPS_SQE)) {
        flush_ack(qp);
    }
}

void qsw_resp_flush(struct qsw_qp *qp)
{
    if (qp->resp.have_wr) {
        recv_error(qp, QSW_WC_WR_FLUSH_ERR);
    }
    qp->resp.in_msg = 0;
    qp->resp.ack_type = 0;
    qp->resp.fatal = false;
    for (unsigned i = 0; i < qp->resp.nres; i++) {
        qp->resp.res[i].active = false;
    }
}

void qsw_resp_reset(struct qsw_qp *qp)
{
    struct qsw_res *res = qp->resp.res;
    unsigned nres = qp->resp.nres;

    memset(&qp->resp, 0, sizeof(qp->resp));
    memset(res, 0, nres * sizeof(*res));
    qp->resp.res = res;
    qp->resp.nres = nres;
    qp->resp.psn = qp->attr.rq_psn;
}

/* ---- UD ------------------------------------------------------------------ */

void qsw_ud_rx(struct qsw_qp *qp, const struct qsw_pkt *pkt)
{
    struct qsw_engine *eng = qp->eng;
    const uint8_t *deth = pkt->bth + hdr_off(pkt->mask, M_DETH);
    uint8_t grh[QSW_GRH_BYTES];
    struct qsw_wc wc;
    int ret;

    /*
     * IBTA 10.2: the Q_Key must match, otherwise the message is silently
     * dropped
     */
    if (ld32(deth) != qp->attr.qkey) {
        eng->st.drop_qkey++;
        return;
    }
    ret = get_recv(qp);
    if (ret == -QSW_EIO) {
        qsw_qp_to_error(qp, QSW_EV_QP_FATAL);
        return;
    }
    if (ret) {
        eng->st.drop_no_recv++;         /* UD has no RNR: the message is lost */
        return;
    }
    memset(&wc, 0, sizeof(wc));
    wc.wr_id = qp->resp.wr.wr_id;
    wc.opcode = QSW_WC_RECV;
    wc.qp_num = qp->qpn;
    wc.src_qp = ld24(deth + 5);
    wc.byte_len = QSW_GRH_BYTES + pkt->paylen;
    wc.wc_flags = QSW_WC_GRH | (pkt->se ? QSW_WC_SOLICITED : 0);
    wc.network_hdr_type = pkt->ipv6 ? QSW_NET_IPV6 : QSW_NET_IPV4;
    memcpy(wc.smac, pkt->smac, 6);
    memcpy(wc.sgid, pkt->sgid, 16);
    memcpy(wc.dgid, pkt->dgid, 16);
    if (pkt->mask & M_IMM) {
        memcpy(&wc.imm_data, pkt->bth + hdr_off(pkt->mask, M_IMM), 4);
        wc.wc_flags |= QSW_WC_WITH_IMM;
    }
    qp->resp.have_wr = false;
    if ((uint64_t)QSW_GRH_BYTES + pkt->paylen > qp->resp.wr_len) {
        wc.status = QSW_WC_LOC_LEN_ERR;
        qsw_complete(qp, &wc);
        return;
    }
    /*
     * The GRH room: the IPv6 header, or for IPv4 the IPv4 header in its last 20
     * bytes.
     */
    if (pkt->ipv6) {
        memcpy(grh, pkt->l3, IPV6_HLEN);
    } else {
        memset(grh, 0, QSW_GRH_BYTES - IPV4_HLEN);
        memcpy(grh + QSW_GRH_BYTES - IPV4_HLEN, pkt->l3, IPV4_HLEN);
    }
    ret = eng->ops.sge_write(eng->opaque, qp, qp->resp.wr.sg_list,
                             qp->resp.wr.num_sge, 0, grh, QSW_GRH_BYTES);
    if (!ret && pkt->paylen) {
        ret = eng->ops.sge_write(eng->opaque, qp, qp->resp.wr.sg_list,
                                 qp->resp.wr.num_sge, QSW_GRH_BYTES,
                                 pkt->payload, pkt->paylen);
    }
    if (ret) {
        wc.status = ret < 0 ? (uint32_t)-ret : QSW_WC_LOC_PROT_ERR;
    }
    qsw_complete(qp, &wc);
}
