/*
 * The mock host RDMA device of verbs_mock.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "test_eventfd.h"
#include "verbs_mock.h"

struct verbs_mock vmock;

/* Fail this call with errno e when the test asked for it (once). */
static bool failing(int *knob)
{
    if (!*knob) {
        return false;
    }
    errno = *knob;
    *knob = 0;
    return true;
}

void verbs_mock_reset(void)
{
    unsigned i;

    for (i = 0; i < vmock.nqps; i++) {
        free(vmock.qps[i]);
    }
    for (i = 0; i < vmock.ncqs; i++) {
        free(vmock.cqs[i]);
    }
    for (i = 0; i < vmock.nmrs; i++) {
        free(vmock.mrs[i]);
    }
    for (i = 0; i < vmock.nahs; i++) {
        free(vmock.ahs[i]);
    }
    for (i = 0; i < vmock.nsrqs; i++) {
        free(vmock.srqs[i]);
    }
    for (i = 0; i < vmock.nmws; i++) {
        free(vmock.mws[i]);
    }
    memset(&vmock, 0, sizeof(vmock));
    vmock.name = "mock0";
    vmock.port_state = IBV_PORT_ACTIVE;
    for (i = 0; i < 8; i++) {
        vmock.gid_type[i] = IBV_GID_TYPE_ROCE_V2;
    }
    /* Numbers unlike any QP ID or STag a test uses. */
    vmock.next_qpn = 0x3a001;
    vmock.next_key = 0x7b0001;
}

static struct ibv_context *m_open_device(const char *name)
{
    struct ibv_context *ctx;

    if (strcmp(name, vmock.name)) {
        errno = ENODEV;
        return NULL;
    }
    ctx = calloc(1, sizeof(*ctx));
    ctx->async_fd = eventfd(0, EFD_CLOEXEC);
    vmock.ctx = ctx;
    vmock.live_ctx++;
    return ctx;
}

static int m_close_device(struct ibv_context *ctx)
{
    close(ctx->async_fd);
    free(ctx);
    vmock.ctx = NULL;
    vmock.live_ctx--;
    return 0;
}

static int m_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
    if (port != 1) {
        errno = EINVAL;
        return -1;
    }
    memset(attr, 0, sizeof(*attr));
    attr->state = vmock.port_state;
    attr->active_mtu = IBV_MTU_1024;
    attr->active_speed = vmock.active_speed;
    attr->active_width = vmock.active_width;
    return 0;
}

static int m_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
    memset(gid, 0, sizeof(*gid));
    if (index < 0 || index > 7) {
        errno = EINVAL;
        return -1;
    }
    if (!vmock.gid_zero && !vmock.gid_gone[index]) {
        gid->raw[10] = gid->raw[11] = 0xff;
        gid->raw[12] = 10;
        gid->raw[15] = (uint8_t)(1 + index + vmock.gid_shift);
    }
    return 0;
}

static int m_query_gid_type(struct ibv_context *ctx, uint8_t port, int index, uint32_t *type)
{
    if (vmock.fail_query_gid_type) {
        errno = vmock.fail_query_gid_type;
        return -1;
    }
    if (index < 0 || index > 7) {
        errno = EINVAL;
        return -1;
    }
    *type = vmock.gid_type[index];
    return 0;
}

static struct ibv_pd *m_alloc_pd(struct ibv_context *ctx)
{
    struct ibv_pd *pd = calloc(1, sizeof(*pd));

    pd->context = ctx;
    vmock.live_pd++;
    return pd;
}

static int m_dealloc_pd(struct ibv_pd *pd)
{
    free(pd);
    vmock.live_pd--;
    return 0;
}

static struct ibv_comp_channel *m_create_comp_channel(struct ibv_context *ctx)
{
    struct ibv_comp_channel *ch = calloc(1, sizeof(*ch));

    ch->context = ctx;
    ch->fd = eventfd(0, EFD_CLOEXEC);
    vmock.ch = ch;
    vmock.live_ch++;
    return ch;
}

static int m_destroy_comp_channel(struct ibv_comp_channel *ch)
{
    close(ch->fd);
    free(ch);
    vmock.ch = NULL;
    vmock.live_ch--;
    return 0;
}

static struct ibv_cq *m_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
                                  struct ibv_comp_channel *ch, int comp_vector)
{
    struct vm_cq *c;

    if (failing(&vmock.fail_create_cq) || vmock.ncqs == VM_MAX_OBJ) {
        return NULL;
    }
    c = calloc(1, sizeof(*c));
    c->cq.context = ctx;
    c->cq.channel = ch;
    c->cq.cq_context = cq_context;
    c->cq.cqe = cqe;
    c->cqe = cqe;
    vmock.cqs[vmock.ncqs++] = c;
    vmock.live_cq++;
    return &c->cq;
}

static struct vm_cq *vcq(struct ibv_cq *cq)
{
    return (struct vm_cq *)cq;
}

static int m_destroy_cq(struct ibv_cq *cq)
{
    unsigned i;

    /* Events not read yet go with the CQ, as the kernel drops them. */
    for (i = vmock.cq_ev_head; i != vmock.cq_ev_tail; i++) {
        if (vmock.cq_ev[i % (VM_MAX_EV * 4)] == cq) {
            vmock.cq_ev[i % (VM_MAX_EV * 4)] = NULL;
        }
    }
    vcq(cq)->cq.context = NULL;     /* dead; the record stays for the test */
    vmock.live_cq--;
    return 0;
}

static int m_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
    vcq(cq)->armed = true;
    return 0;
}

static int m_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context)
{
    vmock.get_cq_event_calls++;
    while (vmock.cq_ev_head != vmock.cq_ev_tail) {
        struct ibv_cq *c = vmock.cq_ev[vmock.cq_ev_head++ % (VM_MAX_EV * 4)];

        if (c) {
            *cq = c;
            *cq_context = c->cq_context;
            return 0;
        }
    }
    fd_clear(ch->fd);
    errno = EAGAIN;
    return -1;
}

static void m_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
    vmock.acked_cq += n;
}

static int m_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
    struct vm_cq *c = vcq(cq);
    int k = 0;

    while (k < n && c->head != c->tail) {
        wc[k++] = c->wc[c->head++ % VM_MAX_WC];
    }
    return k;
}

void verbs_mock_cq_push(struct ibv_cq *cq, const struct ibv_wc *wc)
{
    struct vm_cq *c = vcq(cq);

    c->wc[c->tail++ % VM_MAX_WC] = *wc;
    if (c->armed) {
        c->armed = false;
        vmock.cq_ev[vmock.cq_ev_tail++ % (VM_MAX_EV * 4)] = cq;
        fd_signal(cq->channel->fd);
    }
}

void verbs_mock_send_done(struct vm_qp *q, uint64_t wr_id, enum ibv_wc_status status,
                          enum ibv_wc_opcode opcode)
{
    struct ibv_wc wc;

    memset(&wc, 0, sizeof(wc));
    wc.wr_id = wr_id;
    wc.status = status;
    wc.opcode = opcode;
    verbs_mock_cq_push(q->qp.send_cq, &wc);
}

static struct ibv_qp *m_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
    struct vm_qp *q;

    if (failing(&vmock.fail_create_qp) || vmock.nqps == VM_MAX_OBJ) {
        return NULL;
    }
    q = calloc(1, sizeof(*q));
    q->init = *attr;
    q->qp.context = pd->context;
    q->qp.pd = pd;
    q->qp.qp_context = attr->qp_context;
    q->qp.send_cq = attr->send_cq;
    q->qp.recv_cq = attr->recv_cq;
    q->qp.qp_type = attr->qp_type;
    q->qp.state = IBV_QPS_RESET;
    q->qp.qp_num = vmock.next_qpn++;
    vmock.qps[vmock.nqps++] = q;
    vmock.live_qp++;
    return &q->qp;
}

static struct vm_qp *vqp(struct ibv_qp *qp)
{
    return (struct vm_qp *)qp;
}

static int m_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
    struct vm_qp *q = vqp(qp);

    if (q->modifies < 8) {
        q->attr[q->modifies] = *attr;
        q->mask[q->modifies] = mask;
    }
    q->modifies++;
    if (mask & IBV_QP_STATE) {
        qp->state = attr->qp_state;
    }
    return 0;
}

static int m_destroy_qp(struct ibv_qp *qp)
{
    qp->context = NULL;
    vmock.live_qp--;
    return 0;
}

static int m_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    struct vm_qp *q = vqp(qp);
    unsigned i = q->nsend;
    int k;

    if (failing(&vmock.fail_post_send) || i == VM_MAX_WR || wr->num_sge > 32) {
        *bad = wr;
        return errno ? errno : ENOMEM;
    }
    q->send[i] = *wr;
    for (k = 0; k < wr->num_sge; k++) {
        q->send_sge[i][k] = wr->sg_list[k];
    }
    /* Inline data is copied at post time: the caller's buffer may go right after. */
    if ((wr->send_flags & IBV_SEND_INLINE) && wr->num_sge == 1 && wr->sg_list[0].length <= 64) {
        memcpy(q->inline_copy[i], (void *)(uintptr_t)wr->sg_list[0].addr, wr->sg_list[0].length);
    }
    q->send[i].sg_list = q->send_sge[i];
    q->send[i].next = NULL;
    q->nsend++;
    return 0;
}

static int m_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct vm_qp *q = vqp(qp);
    unsigned i = q->nrecv;
    int k;

    if (i == VM_MAX_WR || wr->num_sge > 32) {
        *bad = wr;
        return ENOMEM;
    }
    q->recv[i] = *wr;
    for (k = 0; k < wr->num_sge; k++) {
        q->recv_sge[i][k] = wr->sg_list[k];
    }
    q->recv[i].sg_list = q->recv_sge[i];
    q->recv[i].next = NULL;
    q->nrecv++;
    return 0;
}

static struct ibv_srq *m_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
    struct vm_srq *q;

    if (failing(&vmock.fail_create_srq) || vmock.nsrqs == VM_MAX_OBJ) {
        return NULL;
    }
    q = calloc(1, sizeof(*q));
    q->init = *attr;
    q->srq.context = pd->context;
    q->srq.pd = pd;
    q->srq.srq_context = attr->srq_context;
    vmock.srqs[vmock.nsrqs++] = q;
    vmock.live_srq++;
    return &q->srq;
}

static int m_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
    struct vm_srq *q = (struct vm_srq *)srq;

    q->modifies++;
    if (mask & IBV_SRQ_LIMIT) {
        q->limit = attr->srq_limit;
    }
    return 0;
}

static int m_destroy_srq(struct ibv_srq *srq)
{
    srq->context = NULL;
    vmock.live_srq--;
    return 0;
}

static int m_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct vm_srq *q = (struct vm_srq *)srq;
    unsigned i = q->nrecv;
    int k;

    if (i == VM_MAX_WR || wr->num_sge > (int)q->init.attr.max_sge) {
        *bad = wr;
        return ENOMEM;
    }
    q->recv[i] = *wr;
    for (k = 0; k < wr->num_sge; k++) {
        q->recv_sge[i][k] = wr->sg_list[k];
    }
    q->recv[i].sg_list = q->recv_sge[i];
    q->recv[i].next = NULL;
    q->nrecv++;
    return 0;
}

static struct ibv_mr *m_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                     unsigned int access)
{
    struct vm_mr *m;

    if (failing(&vmock.fail_reg_mr) || vmock.nmrs == VM_MAX_OBJ) {
        return NULL;
    }
    m = calloc(1, sizeof(*m));
    m->mr.context = pd->context;
    m->mr.pd = pd;
    m->mr.addr = addr;
    m->mr.length = length;
    m->mr.lkey = vmock.next_key++;
    m->mr.rkey = vmock.next_key++ | 0x80000000u;
    m->iova = iova;
    m->access = access;
    vmock.mrs[vmock.nmrs++] = m;
    vmock.live_mr++;
    return &m->mr;
}

static int m_dereg_mr(struct ibv_mr *mr)
{
    if (((struct vm_mr *)mr)->bound_mw) {
        vmock.dereg_busy++;
        errno = EBUSY;
        return EBUSY;
    }
    mr->context = NULL;
    vmock.live_mr--;
    return 0;
}

static struct ibv_mw *m_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
    struct ibv_mw *mw;

    if (failing(&vmock.fail_alloc_mw) || vmock.nmws == VM_MAX_OBJ) {
        return NULL;
    }
    mw = calloc(1, sizeof(*mw));
    mw->context = pd->context;
    mw->pd = pd;
    mw->type = type;
    /* A key byte of the host's own, which the backend must replace with the guest's. */
    mw->rkey = (vmock.next_key++ << 8) | 0xc3;
    vmock.mws[vmock.nmws++] = mw;
    vmock.live_mw++;
    return mw;
}

static int m_dealloc_mw(struct ibv_mw *mw)
{
    unsigned i;

    for (i = 0; i < vmock.nmrs; i++) {
        if (vmock.mrs[i]->bound_mw == mw) {
            vmock.mrs[i]->bound_mw = NULL;
        }
    }
    mw->context = NULL;
    vmock.live_mw--;
    return 0;
}

struct vm_mr *verbs_mock_last_mr(void)
{
    return vmock.nmrs ? vmock.mrs[vmock.nmrs - 1] : NULL;
}

bool verbs_mock_mr_live(const struct vm_mr *m)
{
    return m && m->mr.context != NULL;     /* dereg clears it */
}

static struct ibv_ah *m_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
    struct vm_ah *a;

    vmock.create_ah_calls++;
    if (failing(&vmock.fail_create_ah) || vmock.nahs == VM_MAX_OBJ) {
        return NULL;
    }
    a = calloc(1, sizeof(*a));
    a->ah.context = pd->context;
    a->ah.pd = pd;
    a->attr = *attr;
    vmock.ahs[vmock.nahs++] = a;
    vmock.live_ah++;
    return &a->ah;
}

static int m_destroy_ah(struct ibv_ah *ah)
{
    ah->context = NULL;
    vmock.live_ah--;
    return 0;
}

void verbs_mock_async_push(enum ibv_event_type type, void *element)
{
    struct ibv_async_event *ev = &vmock.async_ev[vmock.async_tail++ % VM_MAX_EV];

    memset(ev, 0, sizeof(*ev));
    ev->event_type = type;
    switch (type) {
    case IBV_EVENT_CQ_ERR:
        ev->element.cq = element;
        break;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_GID_CHANGE:
        ev->element.port_num = 1;
        break;
    case IBV_EVENT_SRQ_LIMIT_REACHED:
    case IBV_EVENT_SRQ_ERR:
        ev->element.srq = element;
        break;
    default:
        ev->element.qp = element;
        break;
    }
    fd_signal(vmock.ctx->async_fd);
}

static int m_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
    vmock.get_async_event_calls++;
    if (vmock.async_head == vmock.async_tail) {
        fd_clear(ctx->async_fd);
        errno = EAGAIN;
        return -1;
    }
    *ev = vmock.async_ev[vmock.async_head++ % VM_MAX_EV];
    return 0;
}

static void m_ack_async_event(struct ibv_async_event *ev)
{
    vmock.acked_async++;
}

struct vm_qp *verbs_mock_qp(uint32_t qpn)
{
    unsigned i;

    for (i = 0; i < vmock.nqps; i++) {
        if (vmock.qps[i]->qp.qp_num == qpn) {
            return vmock.qps[i];
        }
    }
    return NULL;
}

const struct qrdma_vb_verbs verbs_mock_table = {
    .open_device = m_open_device,
    .close_device = m_close_device,
    .query_port = m_query_port,
    .query_gid = m_query_gid,
    .query_gid_type = m_query_gid_type,
    .alloc_pd = m_alloc_pd,
    .dealloc_pd = m_dealloc_pd,
    .create_comp_channel = m_create_comp_channel,
    .destroy_comp_channel = m_destroy_comp_channel,
    .create_cq = m_create_cq,
    .destroy_cq = m_destroy_cq,
    .req_notify_cq = m_req_notify_cq,
    .get_cq_event = m_get_cq_event,
    .ack_cq_events = m_ack_cq_events,
    .poll_cq = m_poll_cq,
    .create_qp = m_create_qp,
    .modify_qp = m_modify_qp,
    .destroy_qp = m_destroy_qp,
    .post_send = m_post_send,
    .post_recv = m_post_recv,
    .create_srq = m_create_srq,
    .modify_srq = m_modify_srq,
    .destroy_srq = m_destroy_srq,
    .post_srq_recv = m_post_srq_recv,
    .reg_mr_iova2 = m_reg_mr_iova2,
    .dereg_mr = m_dereg_mr,
    .alloc_mw = m_alloc_mw,
    .dealloc_mw = m_dealloc_mw,
    .create_ah = m_create_ah,
    .destroy_ah = m_destroy_ah,
    .get_async_event = m_get_async_event,
    .ack_async_event = m_ack_async_event,
};
