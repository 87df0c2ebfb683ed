/*
 * The libibverbs calls the verbs backend makes, as a table: the real one
 * (vb_libibverbs.c) calls libibverbs; the unit tests' mock
 * (tests/unit/verbs_mock.c) stands in for a host NIC. Several of these
 * are static inlines in <infiniband/verbs.h> that jump through the
 * provider's context ops, which a mock could not intercept otherwise.
 * Each entry has its libibverbs function's arguments and return value.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_VB_VERBS_H
#define QRDMA_VB_VERBS_H

#include <infiniband/verbs.h>

struct qrdma_vb_verbs {
    /*
     * ibv_get_device_list + ibv_get_device_name + ibv_open_device; NULL, errno
     * ENODEV if absent.
     */
    struct ibv_context *(*open_device)(const char *name);
    int (*close_device)(struct ibv_context *ctx);
    int (*query_port)(struct ibv_context *ctx, uint8_t port,
                      struct ibv_port_attr *attr);
    int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index,
                     union ibv_gid *gid);
    /*
     * ibv_query_gid_ex's gid_type (enum ibv_gid_type): 0, or -1 with errno
     * (EOPNOTSUPP where the host cannot say).
     */
    int (*query_gid_type)(struct ibv_context *ctx, uint8_t port, int index,
                          uint32_t *type);

    struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
    int (*dealloc_pd)(struct ibv_pd *pd);

    struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *ctx);
    int (*destroy_comp_channel)(struct ibv_comp_channel *ch);
    struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe,
                                void *cq_context, struct ibv_comp_channel *ch,
                                int comp_vector);
    int (*destroy_cq)(struct ibv_cq *cq);
    int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
    int (*get_cq_event)(struct ibv_comp_channel *ch, struct ibv_cq **cq,
                        void **cq_context);
    void (*ack_cq_events)(struct ibv_cq *cq, unsigned int nevents);
    int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);

    struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
                                struct ibv_qp_init_attr *attr);
    int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
    int (*destroy_qp)(struct ibv_qp *qp);
    int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
                     struct ibv_send_wr **bad);
    int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                     struct ibv_recv_wr **bad);

    struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
                                  struct ibv_srq_init_attr *attr);
    int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
    int (*destroy_srq)(struct ibv_srq *srq);
    int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
                         struct ibv_recv_wr **bad);

    struct ibv_mr *(*reg_mr_iova2)(struct ibv_pd *pd, void *addr, size_t length,
                                   uint64_t iova, unsigned int access);
    int (*dereg_mr)(struct ibv_mr *mr);
    struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
    int (*dealloc_mw)(struct ibv_mw *mw);

    struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
    int (*destroy_ah)(struct ibv_ah *ah);

    int (*get_async_event)(struct ibv_context *ctx, struct ibv_async_event *ev);
    void (*ack_async_event)(struct ibv_async_event *ev);
};

/* libibverbs itself. */
extern const struct qrdma_vb_verbs qrdma_vb_libibverbs;

#endif /* QRDMA_VB_VERBS_H */
