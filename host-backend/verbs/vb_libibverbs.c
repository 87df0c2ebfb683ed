/*
 * The verbs backend's table of libibverbs calls (vb_verbs.h), the real
 * one: each entry is the libibverbs function, or a wrapper where that
 * function is a static inline or a macro in <infiniband/verbs.h>.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <string.h>

#include "vb_verbs.h"

static struct ibv_context *lib_open_device(const char *name)
{
    struct ibv_device **list;
    struct ibv_context *ctx = NULL;
    int i, n = 0;

    list = ibv_get_device_list(&n);
    if (!list) {
        return NULL;
    }
    errno = ENODEV;
    for (i = 0; i < n; i++) {
        if (!strcmp(ibv_get_device_name(list[i]), name)) {
            ctx = ibv_open_device(list[i]);
            break;
        }
    }
    ibv_free_device_list(list);
    return ctx;
}

static int lib_query_port(struct ibv_context *ctx, uint8_t port,
                          struct ibv_port_attr *attr)
{
    return ibv_query_port(ctx, port, attr);
}

static int lib_query_gid_type(struct ibv_context *ctx, uint8_t port,
                              int index, uint32_t *type)
{
    struct ibv_gid_entry entry;
    int ret = ibv_query_gid_ex(ctx, port, (uint32_t)index, &entry, 0);

    if (ret) {
        errno = ret > 0 ? ret : EOPNOTSUPP;
        return -1;
    }
    *type = entry.gid_type;
    return 0;
}

static int lib_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
    return ibv_req_notify_cq(cq, solicited_only);
}

static int lib_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
    return ibv_poll_cq(cq, num_entries, wc);
}

static int lib_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                         struct ibv_send_wr **bad)
{
    return ibv_post_send(qp, wr, bad);
}

static int lib_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                         struct ibv_recv_wr **bad)
{
    return ibv_post_recv(qp, wr, bad);
}

static int lib_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
                             struct ibv_recv_wr **bad)
{
    return ibv_post_srq_recv(srq, wr, bad);
}

static struct ibv_mw *lib_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
    return ibv_alloc_mw(pd, type);
}

static int lib_dealloc_mw(struct ibv_mw *mw)
{
    return ibv_dealloc_mw(mw);
}

const struct qrdma_vb_verbs qrdma_vb_libibverbs = {
    .open_device = lib_open_device,
    .close_device = ibv_close_device,
    .query_port = lib_query_port,
    .query_gid = ibv_query_gid,
    .query_gid_type = lib_query_gid_type,
    .alloc_pd = ibv_alloc_pd,
    .dealloc_pd = ibv_dealloc_pd,
    .create_comp_channel = ibv_create_comp_channel,
    .destroy_comp_channel = ibv_destroy_comp_channel,
    .create_cq = ibv_create_cq,
    .destroy_cq = ibv_destroy_cq,
    .req_notify_cq = lib_req_notify_cq,
    .get_cq_event = ibv_get_cq_event,
    .ack_cq_events = ibv_ack_cq_events,
    .poll_cq = lib_poll_cq,
    .create_qp = ibv_create_qp,
    .modify_qp = ibv_modify_qp,
    .destroy_qp = ibv_destroy_qp,
    .post_send = lib_post_send,
    .post_recv = lib_post_recv,
    .create_srq = ibv_create_srq,
    .modify_srq = ibv_modify_srq,
    .destroy_srq = ibv_destroy_srq,
    .post_srq_recv = lib_post_srq_recv,
    .reg_mr_iova2 = ibv_reg_mr_iova2,
    .dereg_mr = ibv_dereg_mr,
    .alloc_mw = lib_alloc_mw,
    .dealloc_mw = lib_dealloc_mw,
    .create_ah = ibv_create_ah,
    .destroy_ah = ibv_destroy_ah,
    .get_async_event = ibv_get_async_event,
    .ack_async_event = ibv_ack_async_event,
};
