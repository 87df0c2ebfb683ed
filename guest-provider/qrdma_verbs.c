// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libqrdma: the object verbs, i.e. the control path. CQs, QPs, SRQs, AHs
 * and MRs are created by qrdma.ko through the device's control QP; what the
 * provider adds is the queue memory: each ring (and shadow area) lives in
 * its own page-aligned, zeroed allocation sized by qrdma_hw.h's geometry
 * rules, whose address travels to the kernel in the qrdma_abi.h request.
 * The kernel pins it and lists its pages in PBLEs (VIRTMAP).
 *
 * Besides the rings, each object gets the bookkeeping the data path
 * (qrdma_dp.c) needs: locks, wr_id arrays, the QP table entry.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ccan/minmax.h>
#include <util/util.h>

#include "qrdma.h"

/* Driver data must start exactly where the kernel's udata does. */
#define QRDMA_ASSERT_NO_GAP(type, core, drv)                                    \
	_Static_assert(offsetof(struct type, drv) == sizeof(((struct type *)0)->core), \
		       #type ": driver data must follow the core part without padding")

QRDMA_ASSERT_NO_GAP(qrdma_create_cq_cmd, ibv_cmd, drv);
QRDMA_ASSERT_NO_GAP(qrdma_create_cq_ex_cmd, ibv_cmd, drv);
QRDMA_ASSERT_NO_GAP(qrdma_create_cq_resp_cmd, ibv_resp, drv);
QRDMA_ASSERT_NO_GAP(qrdma_create_cq_ex_resp_cmd, ibv_resp, drv);
QRDMA_ASSERT_NO_GAP(qrdma_resize_cq_cmd, ibv_cmd, drv);
QRDMA_ASSERT_NO_GAP(qrdma_create_qp_cmd, ibv_cmd, drv);
QRDMA_ASSERT_NO_GAP(qrdma_create_qp_resp_cmd, ibv_resp, drv);
QRDMA_ASSERT_NO_GAP(qrdma_create_srq_cmd, ibv_cmd, drv);
QRDMA_ASSERT_NO_GAP(qrdma_create_srq_resp_cmd, ibv_resp, drv);
QRDMA_ASSERT_NO_GAP(qrdma_create_ah_resp_cmd, ibv_resp, drv);

/* Largest SGE count a WQE header's NUM_SGE field can carry. */
#define QRDMA_WQE_MAX_SGE						\
	((uint32_t)(QRDMA_SQ_HDR_NUM_SGE_MASK >> QRDMA_SQ_HDR_NUM_SGE_SHIFT))
#define QRDMA_SQ_MAX_INLINE						\
	((uint32_t)(QRDMA_SQ_HDR_INLINE_LEN_MASK >> QRDMA_SQ_HDR_INLINE_LEN_SHIFT))
/* The shadow areas and ring pages the device sees are 4 KB pages. */
#define QRDMA_HW_PAGE_SIZE	4096u

static unsigned int qrdma_log2_ceil(uint64_t v)
{
	unsigned int n = 0;

	while (n < 63 && (1ULL << n) < v)
		n++;
	return n;
}

static uint32_t qrdma_min3(uint32_t a, uint32_t b, uint32_t c)
{
	uint32_t ab = min(a, b);

	return min(ab, c);
}

/* ---- Queue memory -------------------------------------------------------- */

/*
 * Page aligned (the kernel pins whole pages and the device wants 4 KB
 * aligned rings), zeroed (VALID is 1 on the first lap, so a zeroed ring is
 * empty) and kept out of fork children, as every provider does for memory
 * the device writes.
 */
static int qrdma_buf_alloc(struct qrdma_buf *buf, size_t bytes)
{
	size_t page = sysconf(_SC_PAGESIZE);
	int ret;

	if (page < QRDMA_HW_PAGE_SIZE)
		page = QRDMA_HW_PAGE_SIZE;
	bytes = align(bytes, page);
	ret = posix_memalign(&buf->va, page, bytes);
	if (ret) {
		buf->va = NULL;
		return ret;
	}
	memset(buf->va, 0, bytes);
	if (ibv_dontfork_range(buf->va, bytes)) {
		ret = errno ? errno : ENOMEM;
		free(buf->va);
		buf->va = NULL;
		return ret;
	}
	buf->bytes = bytes;
	return 0;
}

static void qrdma_buf_free(struct qrdma_buf *buf)
{
	if (!buf->va)
		return;
	ibv_dofork_range(buf->va, buf->bytes);
	free(buf->va);
	buf->va = NULL;
	buf->bytes = 0;
}

/*
 * A work queue of at least @wr WQEs of @wqe_bytes: 2^n WQEs (every slot
 * usable: the producer tracks the device's progress through completions
 * and VALID polarity tells a new lap from an old one) of a power-of-two
 * stride, within the header's bounds; the device takes 2^n <= @dev_max_wr
 * + 1.
 */
static int qrdma_wq_geometry(struct qrdma_wq *wq, uint32_t wr, uint32_t wqe_bytes,
			     uint32_t dev_max_wr)
{
	unsigned int n = max_t(unsigned int, QRDMA_WQ_SIZE_LOG2_MIN, qrdma_log2_ceil(wr ? wr : 1));
	unsigned int s = max_t(unsigned int, QRDMA_WQE_LOG2_MIN, qrdma_log2_ceil(wqe_bytes));

	if (n > QRDMA_WQ_SIZE_LOG2_MAX || s > QRDMA_WQE_LOG2_MAX ||
	    (1ULL << n) > (uint64_t)dev_max_wr + 1 ||
	    (1ULL << (n + s)) > QRDMA_QUEUE_MAX_BYTES)
		return EINVAL;
	wq->size_log2 = n;
	wq->wqe_log2 = s;
	return 0;
}

static int qrdma_wq_alloc(struct qrdma_wq *wq)
{
	return qrdma_buf_alloc(&wq->ring, (size_t)1 << (wq->size_log2 + wq->wqe_log2));
}

/* SGEs an RQ or SRQ WQE of the queue's stride holds. */
static uint32_t qrdma_rq_sge_cap(const struct qrdma_wq *wq, uint32_t dev_max)
{
	uint32_t n = ((1u << wq->wqe_log2) - QRDMA_RQ_WQE_HDR_BYTES) / QRDMA_SGE_BYTES;

	return qrdma_min3(n, dev_max, QRDMA_WQE_MAX_SGE);
}

/* ---- CQs ------------------------------------------------------------------ */

/*
 * A CQ of at least @cqe entries: 2^n CQEs, all of them usable (HEAD in
 * the shadow area and the device's tail are free-running indexes, so a
 * full ring is told from an empty one), as qrdma.ko sizes its own CQs.
 * The CQ reports 2^n. The device takes 2^n <= max_cqe + 1, so max_cqe
 * itself is always reachable when it is a power of two.
 */
static int qrdma_cq_size_log2(struct qrdma_context *ctx, int cqe, uint8_t *size_log2)
{
	unsigned int n;

	if (cqe < 1 || (uint32_t)cqe > ctx->max_cqe)
		return EINVAL;
	n = max_t(unsigned int, QRDMA_CQ_SIZE_LOG2_MIN, qrdma_log2_ceil(cqe));
	if (n > QRDMA_CQ_SIZE_LOG2_MAX || (1ULL << n) > (uint64_t)ctx->max_cqe + 1 ||
	    ((uint64_t)QRDMA_CQE_SIZE << n) > QRDMA_QUEUE_MAX_BYTES)
		return EINVAL;
	*size_log2 = n;
	return 0;
}

static struct qrdma_cq_ring *qrdma_cq_ring_alloc(uint8_t size_log2, int *err)
{
	struct qrdma_cq_ring *ring = calloc(1, sizeof(*ring));

	if (!ring) {
		*err = ENOMEM;
		return NULL;
	}
	*err = qrdma_buf_alloc(&ring->buf, (size_t)QRDMA_CQE_SIZE << size_log2);
	if (*err) {
		free(ring);
		return NULL;
	}
	ring->size_log2 = size_log2;
	return ring;
}

/* Frees the rings older than @keep (all of them if @keep is NULL). */
static void qrdma_cq_free_rings(struct qrdma_cq *cq, struct qrdma_cq_ring *keep)
{
	while (cq->rings && cq->rings != keep) {
		struct qrdma_cq_ring *ring = cq->rings;

		cq->rings = ring->newer;
		qrdma_buf_free(&ring->buf);
		free(ring);
	}
}

static void qrdma_cq_free(struct qrdma_cq *cq)
{
	qrdma_cq_free_rings(cq, NULL);
	qrdma_buf_free(&cq->shadow_page);
	pthread_spin_destroy(&cq->lock);
	free(cq);
}

/* Allocates the CQ with its ring and shadow area and fills the request. */
static struct qrdma_cq *qrdma_cq_alloc(struct ibv_context *context, int cqe,
				       struct qrdma_create_cq_req *req)
{
	struct qrdma_cq *cq;
	uint8_t size_log2;
	int ret;

	ret = qrdma_cq_size_log2(to_qctx(context), cqe, &size_log2);
	if (ret) {
		errno = ret;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	if (pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE)) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->ctx = to_qctx(context);
	cq->rings = qrdma_cq_ring_alloc(size_log2, &ret);
	if (cq->rings)
		ret = qrdma_buf_alloc(&cq->shadow_page, sizeof(struct qrdma_cq_shadow));
	if (ret) {
		qrdma_cq_free(cq);
		errno = ret;
		return NULL;
	}
	cq->poll_ring = cq->dev_ring = cq->rings;
	cq->shadow = cq->shadow_page.va;

	req->ring_va = (uintptr_t)cq->rings->buf.va;
	req->shadow_va = (uintptr_t)cq->shadow;
	req->size_log2 = size_log2;
	return cq;
}

/*
 * After the kernel created the CQ: it must have built the ring we
 * described, or the device and the provider would disagree on where CQEs
 * go.
 */
static int qrdma_cq_created(struct qrdma_cq *cq, const struct qrdma_create_cq_resp *resp)
{
	struct ibv_cq *ibcq = &cq->vcq.cq;

	if (resp->size_log2 != cq->dev_ring->size_log2) {
		verbs_err(verbs_get_ctx(ibcq->context),
			  "qrdma: kernel built a CQ of 2^%u CQEs, asked for 2^%u\n",
			  resp->size_log2, cq->dev_ring->size_log2);
		ibv_cmd_destroy_cq(ibcq);
		return EPROTO;
	}
	cq->cq_id = resp->cq_id;
	ibcq->cqe = 1 << cq->dev_ring->size_log2;
	return 0;
}

struct ibv_cq *qrdma_create_cq(struct ibv_context *context, int cqe,
			       struct ibv_comp_channel *channel, int comp_vector)
{
	struct qrdma_create_cq_resp_cmd resp = {};
	struct qrdma_create_cq_cmd cmd = {};
	struct qrdma_cq *cq;
	int ret;

	cq = qrdma_cq_alloc(context, cqe, &cmd.drv);
	if (!cq)
		return NULL;
	ret = ibv_cmd_create_cq(context, cqe, channel, comp_vector, &cq->vcq.cq, &cmd.ibv_cmd,
				sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (!ret)
		ret = qrdma_cq_created(cq, &resp.drv);
	if (ret) {
		qrdma_cq_free(cq);
		errno = ret;
		return NULL;
	}
	return &cq->vcq.cq;
}

struct ibv_cq_ex *qrdma_create_cq_ex(struct ibv_context *context,
				     struct ibv_cq_init_attr_ex *attr)
{
	struct qrdma_create_cq_ex_resp_cmd resp = {};
	struct qrdma_create_cq_ex_cmd cmd = {};
	struct qrdma_cq *cq;
	int ret;

	/*
	 * Plain attributes only: no parent domain, and WC fields the CQE has
	 * (no completion timestamps). Of the creation flags, SINGLE_THREADED
	 * is a hint that the CQ's lock may be dropped: keeping it is always
	 * right, so the CQ is made as usual (other providers accept it too);
	 * IGNORE_OVERRUN would need a device that drops CQEs on overflow.
	 */
	if ((attr->comp_mask & ~IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) ||
	    (attr->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->cqe > INT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	cq = qrdma_cq_alloc(context, (int)attr->cqe, &cmd.drv);
	if (!cq)
		return NULL;
	ret = ibv_cmd_create_cq_ex(context, attr, &cq->vcq, &cmd.ibv_cmd, sizeof(cmd),
				   &resp.ibv_resp, sizeof(resp), 0);
	if (!ret)
		ret = qrdma_cq_created(cq, &resp.drv);
	if (ret) {
		qrdma_cq_free(cq);
		errno = ret;
		return NULL;
	}
	qrdma_cq_ex_set_ops(cq);
	return &cq->vcq.cq_ex;
}

/*
 * The device writes CQEs from index 0 of the new ring (VALID 1) once
 * MODIFY_CQ completes; CQEs written before that stay in the old ring. The
 * old ring is kept, and polled first, until the poller finds it drained
 * (qrdma_dp.c); rings drained by then are freed here. HEAD in the shadow
 * area counts what was read of the ring the device writes: 0 for the new
 * one until the poller reaches it.
 */
int qrdma_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct qrdma_cq *cq = to_qcq(ibcq);
	struct ib_uverbs_resize_cq_resp resp = {};
	struct qrdma_resize_cq_cmd cmd = {};
	struct qrdma_cq_ring *ring;
	uint8_t size_log2;
	int ret;

	ret = qrdma_cq_size_log2(to_qctx(ibcq->context), cqe, &size_log2);
	if (ret)
		return ret;
	ring = qrdma_cq_ring_alloc(size_log2, &ret);
	if (!ring)
		return ret;
	cmd.drv.ring_va = (uintptr_t)ring->buf.va;
	cmd.drv.size_log2 = size_log2;

	pthread_spin_lock(&cq->lock);
	if (size_log2 == cq->dev_ring->size_log2) {
		pthread_spin_unlock(&cq->lock);
		qrdma_buf_free(&ring->buf);
		free(ring);
		return 0;
	}
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd.ibv_cmd, sizeof(cmd), &resp,
				sizeof(resp));
	if (ret) {
		pthread_spin_unlock(&cq->lock);
		qrdma_buf_free(&ring->buf);
		free(ring);
		return ret;
	}
	cq->dev_ring->newer = ring;
	cq->dev_ring = ring;
	__atomic_store_n(&cq->shadow->head, 0, __ATOMIC_RELAXED);
	ibcq->cqe = 1 << size_log2;
	qrdma_cq_free_rings(cq, cq->poll_ring);
	pthread_spin_unlock(&cq->lock);
	return 0;
}

int qrdma_destroy_cq(struct ibv_cq *ibcq)
{
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	qrdma_cq_free(to_qcq(ibcq));
	return 0;
}

/* ---- QPs ------------------------------------------------------------------ */

/*
 * Ring geometry from the requested caps, checked against the context's
 * limits (EINVAL beyond them), and the caps the rings really hold.
 */
static int qrdma_qp_geometry(struct qrdma_context *ctx, const struct ibv_qp_init_attr_ex *attr,
			     struct qrdma_qp *qp)
{
	const struct ibv_qp_cap *req = &attr->cap;
	uint32_t sq_payload, sq_stride;
	int ret;

	if (req->max_send_wr > ctx->max_qp_wr || req->max_send_sge > ctx->max_send_sge ||
	    req->max_inline_data > ctx->max_inline_data)
		return EINVAL;
	if (!attr->srq && (req->max_recv_wr > ctx->max_qp_wr ||
			   req->max_recv_sge > ctx->max_recv_sge))
		return EINVAL;

	/* SQ WQE: the 64-byte header, then the SGEs or the inline data. */
	sq_payload = max_t(uint32_t, req->max_send_sge * QRDMA_SGE_BYTES, req->max_inline_data);
	ret = qrdma_wq_geometry(&qp->sq, req->max_send_wr, QRDMA_SQ_WQE_HDR_BYTES + sq_payload,
				ctx->max_qp_wr);
	if (ret)
		return ret;
	sq_stride = 1u << qp->sq.wqe_log2;
	qp->cap.max_send_wr = min(1u << qp->sq.size_log2, ctx->max_qp_wr);
	qp->cap.max_send_sge = qrdma_min3((sq_stride - QRDMA_SQ_WQE_HDR_BYTES) / QRDMA_SGE_BYTES,
					  ctx->max_send_sge, QRDMA_WQE_MAX_SGE);
	qp->cap.max_inline_data = qrdma_min3(sq_stride - QRDMA_SQ_WQE_HDR_BYTES,
					     ctx->max_inline_data, QRDMA_SQ_MAX_INLINE);

	if (attr->srq)
		return 0;
	/* RQ WQE: the 16-byte header, then the SGEs. */
	ret = qrdma_wq_geometry(&qp->rq, req->max_recv_wr,
				QRDMA_RQ_WQE_HDR_BYTES + req->max_recv_sge * QRDMA_SGE_BYTES,
				ctx->max_qp_wr);
	if (ret)
		return ret;
	qp->cap.max_recv_wr = min(1u << qp->rq.size_log2, ctx->max_qp_wr);
	qp->cap.max_recv_sge = qrdma_rq_sge_cap(&qp->rq, ctx->max_recv_sge);
	return 0;
}

static void qrdma_qp_free(struct qrdma_qp *qp)
{
	qrdma_buf_free(&qp->sq.ring);
	qrdma_buf_free(&qp->rq.ring);
	free(qp->sq_wrid);
	free(qp->rq_wrid);
	pthread_spin_destroy(&qp->sq.lock);
	pthread_spin_destroy(&qp->rq.lock);
	free(qp);
}

/* What the data path keeps beside the rings, once the geometry is known. */
static int qrdma_qp_dp_alloc(struct qrdma_qp *qp, const struct ibv_qp_init_attr_ex *attr)
{
	qp->sq_wrid = calloc(1u << qp->sq.size_log2, sizeof(*qp->sq_wrid));
	if (!qp->sq_wrid)
		return ENOMEM;
	qp->sq.max_wr = qp->cap.max_send_wr;
	if (attr->srq)
		return 0;
	qp->rq_wrid = calloc(1u << qp->rq.size_log2, sizeof(*qp->rq_wrid));
	if (!qp->rq_wrid)
		return ENOMEM;
	qp->rq.max_wr = qp->cap.max_recv_wr;
	return 0;
}

struct ibv_qp *qrdma_create_qp_ex(struct ibv_context *context,
				  struct ibv_qp_init_attr_ex *attr)
{
	struct qrdma_context *ctx = to_qctx(context);
	struct qrdma_create_qp_resp_cmd resp = {};
	struct qrdma_create_qp_cmd cmd = {};
	struct ibv_qp_init_attr_ex kattr;
	struct qrdma_qp *qp;
	int ret;

	/*
	 * Plain QPs and ibv_wr_* send ops: no XRC domain, creation flags, TSO
	 * or RSS. A field present in comp_mask but asking for nothing (creation
	 * flags 0, TSO header 0) is what generic code passes: accept it.
	 */
	if ((attr->comp_mask & ~(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
				 IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_MAX_TSO_HEADER)) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER) && attr->max_tso_header)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}
	/*
	 * RC, UC and UD (the kernel refuses UC on a device without
	 * CAP_FEATURES.UC); XRC, raw packet and driver QPs are not qrdma's.
	 */
	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
	    attr->qp_type != IBV_QPT_UD) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    qrdma_qp_send_ops_check(attr->qp_type, attr->send_ops_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
	ret = qrdma_qp_geometry(ctx, attr, qp);
	if (!ret)
		ret = qrdma_wq_alloc(&qp->sq);
	if (!ret && !attr->srq)
		ret = qrdma_wq_alloc(&qp->rq);
	if (!ret)
		ret = qrdma_qp_dp_alloc(qp, attr);
	if (ret)
		goto err_free;

	cmd.drv.sq_va = (uintptr_t)qp->sq.ring.va;
	cmd.drv.sq_size_log2 = qp->sq.size_log2;
	cmd.drv.sq_wqe_log2 = qp->sq.wqe_log2;
	if (!attr->srq) {
		cmd.drv.rq_va = (uintptr_t)qp->rq.ring.va;
		cmd.drv.rq_size_log2 = qp->rq.size_log2;
		cmd.drv.rq_wqe_log2 = qp->rq.wqe_log2;
	}
	/* The empty optional fields stay here: the command takes none of them. */
	kattr = *attr;
	kattr.comp_mask &= ~(IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_MAX_TSO_HEADER);
	ret = ibv_cmd_create_qp_ex(context, &qp->vqp, &kattr, &cmd.ibv_cmd, sizeof(cmd),
				   &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;

	qp->qp_id = resp.drv.qp_id;
	/* The kernel knows the device's inline limit for this stride. */
	if (resp.drv.max_inline_data < qp->cap.max_inline_data)
		qp->cap.max_inline_data = resp.drv.max_inline_data;
	qp->sq_sig_all = attr->sq_sig_all;
	qp->send_cq = attr->send_cq ? to_qcq(attr->send_cq) : NULL;
	qp->recv_cq = attr->recv_cq ? to_qcq(attr->recv_cq) : NULL;
	qp->srq = attr->srq ? to_qsrq(attr->srq) : NULL;
	qp->db_sq = (uint8_t *)ctx->db_page + QRDMA_DB_SQ;
	qp->db_rq = (uint8_t *)ctx->db_page + QRDMA_DB_RQ;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		qrdma_qp_set_send_ops(qp, attr->send_ops_flags);
	ret = qrdma_qp_table_insert(ctx, qp);
	if (ret) {
		verbs_err(&ctx->ibv_ctx, "qrdma: cannot track QP %u: %s\n", qp->qp_id,
			  strerror(ret));
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		goto err_free;
	}
	attr->cap = qp->cap;
	return &qp->vqp.qp;

err_free:
	qrdma_qp_free(qp);
	errno = ret;
	return NULL;
}

struct ibv_qp *qrdma_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {};
	struct ibv_qp *qp;

	memcpy(&attr_ex, attr, sizeof(*attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = pd;
	qp = qrdma_create_qp_ex(pd->context, &attr_ex);
	if (qp)
		attr->cap = attr_ex.cap;
	return qp;
}

int qrdma_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct qrdma_qp *qp = to_qqp(ibqp);
	struct ibv_modify_qp cmd = {};
	int ret;

	ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	/*
	 * RESET starts the device's queues over at index 0 with VALID
	 * polarity 1: start the rings over too.
	 */
	if ((attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET)
		qrdma_qp_restart(qp);
	return 0;
}

int qrdma_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		   struct ibv_qp_init_attr *init_attr)
{
	struct qrdma_qp *qp = to_qqp(ibqp);
	struct ibv_query_qp cmd = {};
	int ret;

	ret = ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	/* The rings' capacity is the provider's to report, as at create. */
	attr->cap = qp->cap;
	init_attr->cap = qp->cap;
	return 0;
}

int qrdma_destroy_qp(struct ibv_qp *ibqp)
{
	struct qrdma_qp *qp = to_qqp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	qrdma_qp_detach(qp);
	qrdma_qp_free(qp);
	return 0;
}

/* ---- SRQs ----------------------------------------------------------------- */

static void qrdma_srq_free(struct qrdma_srq *srq)
{
	qrdma_buf_free(&srq->wq.ring);
	qrdma_buf_free(&srq->shadow_page);
	free(srq->wrid);
	free(srq->busy);
	pthread_spin_destroy(&srq->wq.lock);
	free(srq);
}

struct ibv_srq *qrdma_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct qrdma_context *ctx = to_qctx(pd->context);
	struct qrdma_create_srq_resp_cmd resp = {};
	struct qrdma_create_srq_cmd cmd = {};
	struct qrdma_srq *srq;
	int ret;

	if (!attr->attr.max_wr || attr->attr.max_wr > ctx->max_srq_wr ||
	    attr->attr.max_sge > ctx->max_srq_sge || attr->attr.srq_limit > attr->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_spin_init(&srq->wq.lock, PTHREAD_PROCESS_PRIVATE);
	ret = qrdma_wq_geometry(&srq->wq, attr->attr.max_wr,
				QRDMA_RQ_WQE_HDR_BYTES + attr->attr.max_sge * QRDMA_SGE_BYTES,
				ctx->max_srq_wr);
	if (!ret)
		ret = qrdma_wq_alloc(&srq->wq);
	if (!ret)
		ret = qrdma_buf_alloc(&srq->shadow_page, 64);
	if (!ret) {
		srq->wrid = calloc(1u << srq->wq.size_log2, sizeof(*srq->wrid));
		srq->busy = calloc(1u << srq->wq.size_log2, sizeof(*srq->busy));
		if (!srq->wrid || !srq->busy)
			ret = ENOMEM;
	}
	if (ret)
		goto err_free;

	cmd.drv.ring_va = (uintptr_t)srq->wq.ring.va;
	cmd.drv.shadow_va = (uintptr_t)srq->shadow_page.va;
	cmd.drv.size_log2 = srq->wq.size_log2;
	cmd.drv.wqe_log2 = srq->wq.wqe_log2;
	ret = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd.ibv_cmd, sizeof(cmd),
				 &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;

	srq->srq_id = resp.drv.srq_id;
	srq->max_wr = min(1u << srq->wq.size_log2, ctx->max_srq_wr);
	srq->wq.max_wr = srq->max_wr;
	srq->max_sge = qrdma_rq_sge_cap(&srq->wq, ctx->max_srq_sge);
	attr->attr.max_wr = srq->max_wr;
	attr->attr.max_sge = srq->max_sge;
	return &srq->vsrq.srq;

err_free:
	qrdma_srq_free(srq);
	errno = ret;
	return NULL;
}

int qrdma_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int attr_mask)
{
	struct ibv_modify_srq cmd = {};

	/* MODIFY_SRQ re-arms the limit; the ring cannot be resized. */
	if (attr_mask & IBV_SRQ_MAX_WR)
		return EOPNOTSUPP;
	return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd, sizeof(cmd));
}

int qrdma_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct qrdma_srq *srq = to_qsrq(ibsrq);
	struct ibv_query_srq cmd = {};
	int ret;

	ret = ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	return 0;
}

int qrdma_destroy_srq(struct ibv_srq *ibsrq)
{
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;
	qrdma_srq_free(to_qsrq(ibsrq));
	return 0;
}

/* ---- AHs ------------------------------------------------------------------ */

struct ibv_ah *qrdma_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct qrdma_create_ah_resp_cmd resp = {};
	struct qrdma_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp, sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	ah->ah_id = resp.drv.ah_id;
	return &ah->ibv_ah;
}

int qrdma_destroy_ah(struct ibv_ah *ibah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;
	free(to_qah(ibah));
	return 0;
}

/* ---- UD multicast ----------------------------------------------------------- */

/*
 * The kernel issues MCAST_ATTACH / MCAST_DETACH through the control QP
 * (hw-spec 16.1) and checks the QP type and the GID; the data path needs
 * nothing more: the device copies a group's datagrams into each attached
 * QP's receive queue. Errors come back as errno values (ENOMEM when the
 * device's group limits are reached), as libibverbs expects of this verb.
 */
int qrdma_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return ibv_cmd_attach_mcast(qp, gid, lid);
}

int qrdma_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return ibv_cmd_detach_mcast(qp, gid, lid);
}

/* ---- MRs ------------------------------------------------------------------ */

struct ibv_mr *qrdma_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
			    int access)
{
	struct ib_uverbs_reg_mr_resp resp = {};
	struct ibv_reg_mr cmd = {};
	struct qrdma_mr *mr;
	int ret;

	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, &mr->vmr, &cmd, sizeof(cmd),
			     &resp, sizeof(resp));
	if (ret) {
		free(mr);
		errno = ret;
		return NULL;
	}
	return &mr->vmr.ibv_mr;
}

/* The kernel driver does not import dma-bufs. */
struct ibv_mr *qrdma_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
				   uint64_t iova, int fd, int access)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/*
 * The device has no command that changes a registered MR, so the kernel
 * registers it anew: lkey and rkey change (the kernel's response carries
 * them and libibverbs stores them in the ibv_mr).
 */
int qrdma_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd, void *addr,
		   size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp = {};
	struct ibv_rereg_mr cmd = {};
	int ret;

	ret = ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr, access, pd, &cmd,
			       sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		errno = ret;
		return ret;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		vmr->access = access;
	return 0;
}

int qrdma_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;
	free(to_qmr(vmr));
	return 0;
}

/* Memory windows (interface 0.8): the kernel allocates the STag; binds go through the SQ. */
struct ibv_mw *qrdma_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp = {};
	struct ibv_alloc_mw cmd = {};
	struct ibv_mw *mw;
	int ret;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

int qrdma_dealloc_mw(struct ibv_mw *mw)
{
	int ret = ibv_cmd_dealloc_mw(mw);

	if (ret)
		return ret;
	free(mw);
	return 0;
}
