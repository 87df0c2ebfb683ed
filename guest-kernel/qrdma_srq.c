// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma.ko: shared receive queues. Create, modify (the limit), query and
 * destroy through the CQP; the ring is kernel DMA-coherent memory or user
 * memory listed in PBLEs, plus a 64-byte shadow area whose qword 0 counts
 * the WQEs posted. The SRQ's ID is its SRQ_CTX, for limit events. Kernel
 * SRQs keep their wr_ids and a busy bit per slot for qrdma_post.c.
 */
#include "qrdma.h"

static int qrdma_srq_kernel_init(struct qrdma_srq *srq)
{
	spin_lock_init(&srq->lock);
	srq->head = 0;
	srq->wr_id = kvcalloc(1u << srq->size_log2, sizeof(*srq->wr_id), GFP_KERNEL);
	srq->busy = bitmap_zalloc(1u << srq->size_log2, GFP_KERNEL);
	return srq->wr_id && srq->busy ? 0 : -ENOMEM;
}

static void qrdma_srq_kernel_free(struct qrdma_srq *srq)
{
	kvfree(srq->wr_id);
	bitmap_free(srq->busy);
	srq->wr_id = NULL;
	srq->busy = NULL;
}

int qrdma_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibsrq->device);
	struct qrdma_srq *srq = to_qsrq(ibsrq);
	struct ib_srq_attr *attr = &init->attr;
	struct qrdma_create_srq_resp resp = {};
	struct qrdma_create_srq_req req;
	u64 args[6] = {};
	int ret;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (!attr->max_wr || attr->max_wr > dev->caps.max_srq_wr ||
	    attr->max_sge > dev->caps.max_recv_sge || attr->srq_limit > attr->max_wr)
		return -EINVAL;

	srq->user = !!udata;
	if (udata) {
		if (udata->inlen < sizeof(req))
			return -EINVAL;
		ret = ib_copy_from_udata(&req, udata, sizeof(req));
		if (ret)
			return ret;
		if (memchr_inv(req.reserved, 0, sizeof(req.reserved)))
			return -EINVAL;
		srq->size_log2 = req.size_log2;
		srq->wqe_log2 = req.wqe_log2;
	} else {
		srq->size_log2 = max_t(u32, QRDMA_WQ_SIZE_LOG2_MIN, order_base_2(attr->max_wr));
		srq->wqe_log2 = max_t(u32, QRDMA_WQE_LOG2_MIN,
				      order_base_2(QRDMA_RQ_WQE_HDR_BYTES +
						   max_t(u32, attr->max_sge, 1) * QRDMA_SGE_BYTES));
	}
	if (srq->size_log2 < QRDMA_WQ_SIZE_LOG2_MIN || srq->size_log2 > QRDMA_WQ_SIZE_LOG2_MAX ||
	    (1u << srq->size_log2) < attr->max_wr ||
	    (1u << srq->size_log2) > dev->caps.max_srq_wr + 1 ||
	    srq->wqe_log2 < QRDMA_WQE_LOG2_MIN || srq->wqe_log2 > QRDMA_WQE_LOG2_MAX ||
	    QRDMA_RQ_WQE_HDR_BYTES + attr->max_sge * QRDMA_SGE_BYTES > 1u << srq->wqe_log2 ||
	    (u64)1 << (srq->size_log2 + srq->wqe_log2) > QRDMA_QUEUE_MAX_BYTES ||
	    attr->srq_limit >= 1u << srq->size_log2)
		return -EINVAL;
	srq->max_sge = min3(((1u << srq->wqe_log2) - QRDMA_RQ_WQE_HDR_BYTES) / QRDMA_SGE_BYTES,
			    dev->caps.max_recv_sge, QRDMA_MAX_WQE_SGES);
	srq->limit = attr->srq_limit;

	ret = qrdma_obj_id_alloc(&dev->srqs, &srq->id);
	if (ret)
		return ret;
	ret = qrdma_hmc_get(dev, QRDMA_HMC_SRQ, srq->id, 1);
	if (ret)
		goto err_id;
	if (udata) {
		ret = qrdma_qmem_user(dev, &srq->ring, req.ring_va,
				      (size_t)1 << (srq->size_log2 + srq->wqe_log2));
		if (ret)
			goto err_hmc;
		ret = qrdma_shadow_user(dev, &srq->shadow, req.shadow_va);
	} else {
		ret = qrdma_srq_kernel_init(srq);
		if (ret)
			goto err_hmc;
		ret = qrdma_qmem_kernel(dev, &srq->ring,
					(size_t)1 << (srq->size_log2 + srq->wqe_log2));
		if (ret)
			goto err_hmc;
		ret = qrdma_shadow_kernel(dev, &srq->shadow);
	}
	if (ret)
		goto err_ring;

	args[0] = srq->id | (u64)srq->size_log2 << QRDMA_SRQ_ARG0_SIZE_SHIFT |
		  (u64)srq->wqe_log2 << QRDMA_SRQ_ARG0_WQE_SHIFT;
	if (udata)
		args[0] |= QRDMA_SRQ_ARG0_VIRTMAP;
	args[1] = to_qpd(ibsrq->pd)->pdn | (u64)srq->limit << QRDMA_SRQ_ARG1_LIMIT_SHIFT;
	args[2] = qrdma_qmem_addr(&srq->ring);
	args[3] = srq->shadow.dma;
	args[4] = srq->id;			/* SRQ_CTX */
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_CREATE_SRQ, args, NULL);
	if (ret)
		goto err_shadow;

	attr->max_wr = min(1u << srq->size_log2, dev->caps.max_srq_wr);
	attr->max_sge = srq->max_sge;
	if (udata) {
		resp.srq_id = srq->id;
		ret = ib_copy_to_udata(udata, &resp, min_t(size_t, udata->outlen, sizeof(resp)));
		if (ret)
			goto err_destroy;
	}
	qrdma_obj_publish(&dev->srqs, srq->id, srq, &srq->ref);
	return 0;

err_destroy:
	memset(args, 0, sizeof(args));
	args[0] = srq->id;
	if (qrdma_cqp_exec(dev, QRDMA_CQP_OP_DESTROY_SRQ, args, NULL)) {
		atomic64_inc(&dev->hw_errors);
		qrdma_retire(dev, &srq->ring, &srq->shadow);
		goto err_id;
	}
err_shadow:
	qrdma_shadow_free(dev, &srq->shadow);
err_ring:
	qrdma_qmem_free(dev, &srq->ring);
err_hmc:
	qrdma_srq_kernel_free(srq);
	qrdma_hmc_put(dev, QRDMA_HMC_SRQ, srq->id, 1);
err_id:
	xa_erase_irq(&dev->srqs.xa, srq->id);
	return ret;
}

int qrdma_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibsrq->device);
	struct qrdma_srq *srq = to_qsrq(ibsrq);
	u64 args[6] = {};
	int ret;

	/* The ring cannot be resized. */
	if (mask & ~IB_SRQ_LIMIT)
		return -EOPNOTSUPP;
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit >= (1u << srq->size_log2) ||
	    attr->srq_limit > (QRDMA_SRQ_ARG1_LIMIT_MASK >> QRDMA_SRQ_ARG1_LIMIT_SHIFT))
		return -EINVAL;
	args[0] = srq->id;
	args[1] = (u64)attr->srq_limit << QRDMA_SRQ_ARG1_LIMIT_SHIFT;
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_MODIFY_SRQ, args, NULL);
	if (!ret)
		srq->limit = attr->srq_limit;
	return ret;
}

int qrdma_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct qrdma_dev *dev = to_qdev(ibsrq->device);
	struct qrdma_srq *srq = to_qsrq(ibsrq);
	u64 args[6] = { srq->id }, retval = 0;
	int ret;

	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_QUERY_SRQ, args, &retval);
	if (ret)
		return ret;
	attr->max_wr = min(1u << srq->size_log2, dev->caps.max_srq_wr);
	attr->max_sge = srq->max_sge;
	/* The device's LIMIT: 0 once the limit event has fired. */
	attr->srq_limit = retval & 0xffffff;
	return 0;
}

int qrdma_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibsrq->device);
	struct qrdma_srq *srq = to_qsrq(ibsrq);
	u64 args[6] = { srq->id };

	qrdma_obj_unpublish(&dev->srqs, srq->id, &srq->ref);
	/* ib_core destroyed every QP using it first: no poller reads these. */
	qrdma_srq_kernel_free(srq);
	if (qrdma_cqp_exec(dev, QRDMA_CQP_OP_DESTROY_SRQ, args, NULL)) {
		dev_err(&dev->pdev->dev, "SRQ %u: destroy failed; memory kept until reset\n",
			srq->id);
		atomic64_inc(&dev->hw_errors);
		qrdma_retire(dev, &srq->ring, &srq->shadow);
		return 0;
	}
	qrdma_shadow_free(dev, &srq->shadow);
	qrdma_qmem_free(dev, &srq->ring);
	qrdma_hmc_put(dev, QRDMA_HMC_SRQ, srq->id, 1);
	return 0;
}
