/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libqrdma: provider state. One qrdma_context per ibv_context, holding the
 * doorbell page this process was given by the kernel and the limits the
 * provider checks requests against; one struct per verbs object, holding
 * the queue memory the provider allocated for it.
 */
#ifndef QRDMA_PROVIDER_H
#define QRDMA_PROVIDER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/driver.h>

#include "qrdma/qrdma_hw.h"
#include "qrdma/qrdma_abi.h"

struct qrdma_device {
	struct verbs_device ibv_dev;
};

struct qrdma_context {
	struct verbs_context ibv_ctx;
	void *db_page;			/* mmapped, uncached; QRDMA_DB_PAGE_SIZE */
	uint32_t db_page_index;
	uint32_t if_version;
	uint32_t max_inline_data;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	/* From query_device when the context opened. */
	uint32_t max_cqe;
	uint32_t max_qp_wr;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
};

struct qrdma_pd {
	struct ibv_pd ibv_pd;
	uint32_t pdn;
};

/* Page-aligned, zeroed memory the device reads or writes (rings, shadow areas). */
struct qrdma_buf {
	void *va;
	size_t bytes;			/* a multiple of the page size */
};

/* A work queue ring: 2^size_log2 WQEs of 2^wqe_log2 bytes. */
struct qrdma_wq {
	struct qrdma_buf ring;
	uint8_t size_log2;
	uint8_t wqe_log2;
};

struct qrdma_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;	/* ring and size: resize against polling */
	struct qrdma_buf ring;		/* 2^size_log2 CQEs */
	struct qrdma_buf shadow_page;	/* the shadow area, alone in its page */
	struct qrdma_cq_shadow *shadow;
	uint32_t cq_id;
	uint8_t size_log2;
};

struct qrdma_qp {
	struct verbs_qp vqp;
	struct qrdma_wq sq;
	struct qrdma_wq rq;		/* no ring with an SRQ */
	struct ibv_qp_cap cap;		/* what the rings hold */
	uint32_t qp_id;
};

struct qrdma_srq {
	struct verbs_srq vsrq;
	struct qrdma_wq wq;
	struct qrdma_buf shadow_page;	/* qword 0: WQEs posted */
	uint32_t srq_id;
	uint32_t max_wr;
	uint32_t max_sge;
};

struct qrdma_ah {
	struct ibv_ah ibv_ah;
	uint32_t ah_id;			/* what UD send WQEs name */
};

struct qrdma_mr {
	struct verbs_mr vmr;
};

/* Kernel command and response layouts: the core part, then ours. */
struct qrdma_get_context_resp {
	struct ib_uverbs_get_context_resp ibv_resp;
	struct qrdma_alloc_ucontext_resp drv;
};

struct qrdma_alloc_pd_resp_cmd {
	struct ib_uverbs_alloc_pd_resp ibv_resp;
	struct qrdma_alloc_pd_resp drv;
};

struct qrdma_create_cq_cmd {
	struct ibv_create_cq ibv_cmd;
	struct qrdma_create_cq_req drv;
};

struct qrdma_create_cq_ex_cmd {
	struct ibv_create_cq_ex ibv_cmd;
	struct qrdma_create_cq_req drv;
};

struct qrdma_create_cq_resp_cmd {
	struct ib_uverbs_create_cq_resp ibv_resp;
	struct qrdma_create_cq_resp drv;
};

struct qrdma_create_cq_ex_resp_cmd {
	struct ib_uverbs_ex_create_cq_resp ibv_resp;
	struct qrdma_create_cq_resp drv;
};

struct qrdma_resize_cq_cmd {
	struct ibv_resize_cq ibv_cmd;
	struct qrdma_resize_cq_req drv;
};

struct qrdma_create_qp_cmd {
	struct ibv_create_qp ibv_cmd;
	struct qrdma_create_qp_req drv;
};

struct qrdma_create_qp_resp_cmd {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct qrdma_create_qp_resp drv;
};

struct qrdma_create_srq_cmd {
	struct ibv_create_srq ibv_cmd;
	struct qrdma_create_srq_req drv;
};

struct qrdma_create_srq_resp_cmd {
	struct ib_uverbs_create_srq_resp ibv_resp;
	struct qrdma_create_srq_resp drv;
};

struct qrdma_create_ah_resp_cmd {
	struct ib_uverbs_create_ah_resp ibv_resp;
	struct qrdma_create_ah_resp drv;
};

static inline struct qrdma_context *to_qctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct qrdma_context, ibv_ctx.context);
}

static inline struct qrdma_pd *to_qpd(struct ibv_pd *ibpd)
{
	return container_of(ibpd, struct qrdma_pd, ibv_pd);
}

static inline struct qrdma_cq *to_qcq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct qrdma_cq, vcq.cq);
}

static inline struct qrdma_qp *to_qqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct qrdma_qp, vqp.qp);
}

static inline struct qrdma_srq *to_qsrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct qrdma_srq, vsrq.srq);
}

static inline struct qrdma_ah *to_qah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct qrdma_ah, ibv_ah);
}

static inline struct qrdma_mr *to_qmr(struct verbs_mr *vmr)
{
	return container_of(vmr, struct qrdma_mr, vmr);
}

/* qrdma_verbs.c: the object verbs. */
struct ibv_cq *qrdma_create_cq(struct ibv_context *context, int cqe,
			       struct ibv_comp_channel *channel, int comp_vector);
struct ibv_cq_ex *qrdma_create_cq_ex(struct ibv_context *context,
				     struct ibv_cq_init_attr_ex *attr);
int qrdma_resize_cq(struct ibv_cq *ibcq, int cqe);
int qrdma_destroy_cq(struct ibv_cq *ibcq);
struct ibv_qp *qrdma_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *qrdma_create_qp_ex(struct ibv_context *context,
				  struct ibv_qp_init_attr_ex *attr);
int qrdma_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask);
int qrdma_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		   struct ibv_qp_init_attr *init_attr);
int qrdma_destroy_qp(struct ibv_qp *ibqp);
struct ibv_srq *qrdma_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
int qrdma_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int attr_mask);
int qrdma_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int qrdma_destroy_srq(struct ibv_srq *ibsrq);
struct ibv_ah *qrdma_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int qrdma_destroy_ah(struct ibv_ah *ibah);
struct ibv_mr *qrdma_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
			    int access);
struct ibv_mr *qrdma_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
				   uint64_t iova, int fd, int access);
int qrdma_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd, void *addr,
		   size_t length, int access);
int qrdma_dereg_mr(struct verbs_mr *vmr);

#endif /* QRDMA_PROVIDER_H */
