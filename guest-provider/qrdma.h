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
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/driver.h>

#include "qrdma/qrdma_hw.h"
#include "qrdma/qrdma_abi.h"

/* QP table geometry: 24-bit IDs, 4096 leaves of 4096 entries. */
#define QRDMA_QP_TABLE_LEAF_SHIFT	12
#define QRDMA_QP_TABLE_LEAF_SIZE	(1u << QRDMA_QP_TABLE_LEAF_SHIFT)
#define QRDMA_QP_TABLE_LEAVES		(1u << (24 - QRDMA_QP_TABLE_LEAF_SHIFT))

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
	/*
	 * QP ID -> qrdma_qp, for poll_cq: CQEs name their QP by ID. Two
	 * levels over the 24-bit ID space; a leaf is allocated at the first
	 * create_qp that needs it and kept until the context goes. Writers
	 * hold qp_table_mutex; pollers read entries with atomic loads.
	 */
	pthread_mutex_t qp_table_mutex;
	struct qrdma_qp **qp_table[QRDMA_QP_TABLE_LEAVES];
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

/*
 * A work queue ring: 2^size_log2 WQEs of 2^wqe_log2 bytes, with the
 * producer's free-running indexes. WQE number t sits at slot t mod 2^n
 * and carries VALID polarity 1 on even laps (t >> n even), 0 on odd ones.
 */
struct qrdma_wq {
	struct qrdma_buf ring;
	uint8_t size_log2;
	uint8_t wqe_log2;
	pthread_spinlock_t lock;	/* producers: post_send / post_recv / ibv_wr_* */
	uint32_t max_wr;		/* WQEs that may be outstanding */
	/* WQEs posted; written under lock, read by pollers (atomic). */
	uint32_t tail;
	/* WQEs retired by completions; written by the CQ's poller (atomic). */
	uint32_t head;
};

/* What the SQ keeps per WQE beside the ring. */
struct qrdma_sq_wrid {
	uint64_t wr_id;
	uint8_t wc_opcode;		/* enum ibv_wc_opcode, for error completions */
	uint8_t signaled;
};

/*
 * A CQ ring. MODIFY_CQ moves the device to a new ring while CQEs may
 * still sit unread in the old one: rings form a list, oldest first, and
 * the poller reads the oldest one it has not drained.
 */
struct qrdma_cq_ring {
	struct qrdma_buf buf;		/* 2^size_log2 CQEs */
	uint8_t size_log2;
	struct qrdma_cq_ring *newer;
};

/* One completion, decoded: what poll_cq and the ibv_cq_ex readers report. */
struct qrdma_cqe_info {
	uint64_t wr_id;
	uint32_t byte_len;
	uint32_t imm_or_inv;		/* as the verbs structs carry it */
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t vendor_err;
	unsigned int wc_flags;		/* IBV_WC_GRH, IBV_WC_WITH_IMM, IBV_WC_WITH_INV */
	uint8_t status;			/* enum ibv_wc_status */
	uint8_t opcode;			/* enum ibv_wc_opcode */
};

struct qrdma_cq {
	struct verbs_cq vcq;
	struct qrdma_context *ctx;
	pthread_spinlock_t lock;	/* polling, arming, resize */
	struct qrdma_cq_ring *rings;	/* oldest kept; freed up to poll_ring at resize */
	struct qrdma_cq_ring *poll_ring;	/* the ring being read */
	struct qrdma_cq_ring *dev_ring;	/* the ring the device writes (newest) */
	uint32_t head;			/* CQEs consumed from poll_ring, free running */
	bool head_dirty;		/* head moved since HEAD was last written */
	struct qrdma_buf shadow_page;	/* the shadow area, alone in its page */
	struct qrdma_cq_shadow *shadow;
	uint32_t cq_id;
	uint16_t arm_seq;
	/* CQEs skipped: naming no QP of this context, or no WQE outstanding. */
	uint64_t stray_cqes;
	struct qrdma_cqe_info cur;	/* ibv_cq_ex: the CQE start/next_poll read */
};

struct qrdma_srq;

struct qrdma_qp {
	struct verbs_qp vqp;
	struct qrdma_wq sq;
	struct qrdma_wq rq;		/* no ring with an SRQ */
	struct ibv_qp_cap cap;		/* what the rings hold */
	uint32_t qp_id;
	bool sq_sig_all;
	struct qrdma_cq *send_cq;
	struct qrdma_cq *recv_cq;
	struct qrdma_srq *srq;
	struct qrdma_sq_wrid *sq_wrid;	/* 2^sq.size_log2 */
	uint64_t *rq_wrid;		/* 2^rq.size_log2; NULL with an SRQ */
	void *db_sq;			/* this context's SQ and RQ doorbells */
	void *db_rq;
	/* ibv_wr_* batch, between wr_start and wr_complete / wr_abort (sq.lock held). */
	struct {
		uint32_t start;		/* sq.tail at wr_start */
		int err;		/* first error of the batch */
		struct qrdma_sq_wqe_hdr *wqe;	/* the WQE being built, NULL if none */
		uint64_t hdr;		/* its qword 7, without VALID */
		uint8_t payload;	/* what it may carry (enum qrdma_sq_payload) */
	} wr;
};

struct qrdma_srq {
	struct verbs_srq vsrq;
	struct qrdma_wq wq;		/* head unused: see completed */
	struct qrdma_buf shadow_page;	/* qword 0: WQEs posted */
	uint32_t srq_id;
	uint32_t max_wr;
	uint32_t max_sge;
	uint64_t *wrid;			/* 2^wq.size_log2 */
	/*
	 * The device takes SRQ WQEs in ring order but QPs (and CQs) complete
	 * them in any order: a slot is reused only once its own CQE was
	 * polled (busy clear), and completed counts those CQEs (atomic).
	 */
	uint8_t *busy;
	uint32_t completed;
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

/* qrdma_dp.c: the data path. */
int qrdma_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int qrdma_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int qrdma_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);
int qrdma_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc);
int qrdma_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
void qrdma_cq_ex_set_ops(struct qrdma_cq *cq);
int qrdma_qp_send_ops_check(enum ibv_qp_type type, uint64_t send_ops_flags);
void qrdma_qp_set_send_ops(struct qrdma_qp *qp, uint64_t send_ops_flags);
int qrdma_qp_table_insert(struct qrdma_context *ctx, struct qrdma_qp *qp);
void qrdma_qp_detach(struct qrdma_qp *qp);
void qrdma_qp_restart(struct qrdma_qp *qp);

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
int qrdma_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
int qrdma_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
struct ibv_mr *qrdma_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
			    int access);
struct ibv_mr *qrdma_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
				   uint64_t iova, int fd, int access);
int qrdma_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd, void *addr,
		   size_t length, int access);
int qrdma_dereg_mr(struct verbs_mr *vmr);
struct ibv_mw *qrdma_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int qrdma_dealloc_mw(struct ibv_mw *mw);
int qrdma_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);

#endif /* QRDMA_PROVIDER_H */
