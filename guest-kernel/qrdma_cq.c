// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma.ko: completion queues. Create, resize and destroy through the CQP;
 * kernel CQs live in DMA-coherent memory, user CQs in pinned memory listed
 * in PBLEs (VIRTMAP). Every CQ reports to CEQ 0 with its ID as CQ_CTX, so
 * the CEQ handler finds the ib_cq in the CQ table (the CCQ's context value
 * lies above every 24-bit ID). Polling is the data path's.
 */
#include "qrdma.h"

static int qrdma_cq_size_ok(struct qrdma_dev *dev, u32 size_log2, int entries)
{
	if (size_log2 < QRDMA_CQ_SIZE_LOG2_MIN || size_log2 > QRDMA_CQ_SIZE_LOG2_MAX)
		return -EINVAL;
	if ((1ULL << size_log2) < (u64)entries ||
	    (1ULL << size_log2) > (u64)dev->caps.max_cqe + 1)
		return -EINVAL;
	if ((u64)QRDMA_CQE_SIZE << size_log2 > QRDMA_QUEUE_MAX_BYTES)
		return -EINVAL;
	return 0;
}

/* The smallest ring of 2^n CQEs that holds entries completions. */
static u32 qrdma_cq_kernel_log2(int entries)
{
	return max_t(u32, QRDMA_CQ_SIZE_LOG2_MIN, order_base_2(entries));
}

static u64 qrdma_cq_arg0(struct qrdma_cq *cq, u32 size_log2)
{
	u64 arg0 = cq->id | (u64)0 << QRDMA_CQ_ARG0_CEQ_SHIFT |
		   (u64)size_log2 << QRDMA_CQ_ARG0_SIZE_SHIFT | QRDMA_CQ_ARG0_CEQ_ENABLE |
		   (u64)cq->db_page << QRDMA_CQ_ARG0_DB_PAGE_SHIFT;

	if (cq->user)
		arg0 |= QRDMA_CQ_ARG0_VIRTMAP;
	return arg0;
}

int qrdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibcq->device);
	struct qrdma_cq *cq = to_qcq(ibcq);
	struct qrdma_create_cq_resp resp = {};
	struct qrdma_create_cq_req req;
	u64 args[6] = {};
	u32 size_log2;
	int ret;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > dev->caps.max_cqe)
		return -EINVAL;
	/* Every CQ reports on CEQ 0; comp_vector only spreads load elsewhere. */
	if (attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;

	cq->user = !!udata;
	spin_lock_init(&cq->lock);
	if (udata) {
		if (udata->inlen < sizeof(req))
			return -EINVAL;
		ret = ib_copy_from_udata(&req, udata, sizeof(req));
		if (ret)
			return ret;
		if (req.reserved)
			return -EINVAL;
		size_log2 = req.size_log2;
	} else {
		size_log2 = qrdma_cq_kernel_log2(attr->cqe);
	}
	ret = qrdma_cq_size_ok(dev, size_log2, attr->cqe);
	if (ret)
		return ret;
	cq->size_log2 = size_log2;
	cq->db_page = qrdma_udata_db_page(udata);

	ret = qrdma_obj_id_alloc(&dev->cqs, &cq->id);
	if (ret)
		return ret;
	ret = qrdma_hmc_get(dev, QRDMA_HMC_CQ, cq->id, 1);
	if (ret)
		goto err_id;

	if (udata) {
		ret = qrdma_qmem_user(dev, &cq->ring, req.ring_va,
				      (size_t)QRDMA_CQE_SIZE << size_log2);
		if (ret)
			goto err_hmc;
		ret = qrdma_shadow_user(dev, &cq->shadow, req.shadow_va);
	} else {
		ret = qrdma_qmem_kernel(dev, &cq->ring, (size_t)QRDMA_CQE_SIZE << size_log2);
		if (ret)
			goto err_hmc;
		ret = qrdma_shadow_kernel(dev, &cq->shadow);
	}
	if (ret)
		goto err_ring;

	args[0] = qrdma_cq_arg0(cq, size_log2);
	args[1] = cq->id;			/* CQ_CTX */
	args[2] = qrdma_qmem_addr(&cq->ring);
	args[3] = cq->shadow.dma;
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_CREATE_CQ, args, NULL);
	if (ret)
		goto err_shadow;

	ibcq->cqe = 1 << size_log2;
	if (udata) {
		resp.cq_id = cq->id;
		resp.size_log2 = size_log2;
		ret = ib_copy_to_udata(udata, &resp, min_t(size_t, udata->outlen, sizeof(resp)));
		if (ret)
			goto err_destroy;
	}
	qrdma_obj_publish(&dev->cqs, cq->id, cq, &cq->ref);
	return 0;

err_destroy:
	args[0] = cq->id;
	if (qrdma_cqp_exec(dev, QRDMA_CQP_OP_DESTROY_CQ, args, NULL)) {
		atomic64_inc(&dev->hw_errors);
		qrdma_retire(dev, &cq->ring, &cq->shadow);
		goto err_id;	/* the HMC page stays with the device until remove */
	}
err_shadow:
	qrdma_shadow_free(dev, &cq->shadow);
err_ring:
	qrdma_qmem_free(dev, &cq->ring);
err_hmc:
	qrdma_hmc_put(dev, QRDMA_HMC_CQ, cq->id, 1);
err_id:
	xa_erase_irq(&dev->cqs.xa, cq->id);
	return ret;
}

int qrdma_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibcq->device);
	struct qrdma_cq *cq = to_qcq(ibcq);
	u64 args[6] = { cq->id };

	/* No comp_handler call may start or still run once this returns. */
	qrdma_obj_unpublish(&dev->cqs, cq->id, &cq->ref);
	if (qrdma_cqp_exec(dev, QRDMA_CQP_OP_DESTROY_CQ, args, NULL)) {
		/*
		 * ib_core cannot keep the CQ, and on unregister must not fail:
		 * report success, keep the memory until the reset at remove.
		 */
		dev_err(&dev->pdev->dev, "CQ %u: destroy failed; memory kept until reset\n",
			cq->id);
		atomic64_inc(&dev->hw_errors);
		qrdma_retire(dev, &cq->ring, &cq->shadow);
		qrdma_retire(dev, &cq->old_ring, NULL);
		return 0;
	}
	qrdma_shadow_free(dev, &cq->shadow);
	qrdma_qmem_free(dev, &cq->ring);
	qrdma_qmem_free(dev, &cq->old_ring);
	qrdma_hmc_put(dev, QRDMA_HMC_CQ, cq->id, 1);
	return 0;
}

/*
 * MODIFY_CQ moves the device to a new ring; CQEs written before the
 * command completed stay in the old one, which the consumer drains first.
 * User CQs: the provider drains; the old ring is unpinned here because the
 * device no longer writes it. Kernel CQs: the old ring is kept for the
 * poller (old_ring) until the next resize or destroy.
 */
int qrdma_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibcq->device);
	struct qrdma_cq *cq = to_qcq(ibcq);
	struct qrdma_resize_cq_req req;
	struct qrdma_qmem ring;
	u64 args[6] = {};
	u32 size_log2;
	int ret;

	if (cqe < 1 || cqe > dev->caps.max_cqe)
		return -EINVAL;
	if (cq->user) {
		if (!udata || udata->inlen < sizeof(req))
			return -EINVAL;
		ret = ib_copy_from_udata(&req, udata, sizeof(req));
		if (ret)
			return ret;
		if (req.reserved)
			return -EINVAL;
		size_log2 = req.size_log2;
	} else {
		size_log2 = qrdma_cq_kernel_log2(cqe);
	}
	ret = qrdma_cq_size_ok(dev, size_log2, cqe);
	if (ret)
		return ret;

	if (cq->user)
		ret = qrdma_qmem_user(dev, &ring, req.ring_va, (size_t)QRDMA_CQE_SIZE << size_log2);
	else
		ret = qrdma_qmem_kernel(dev, &ring, (size_t)QRDMA_CQE_SIZE << size_log2);
	if (ret)
		return ret;

	args[0] = qrdma_cq_arg0(cq, size_log2);
	args[1] = cq->id;
	args[2] = qrdma_qmem_addr(&ring);
	args[3] = cq->shadow.dma;
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_MODIFY_CQ, args, NULL);
	if (ret) {
		qrdma_qmem_free(dev, &ring);
		return ret;
	}
	if (cq->user) {
		qrdma_qmem_free(dev, &cq->ring);
	} else {
		qrdma_qmem_free(dev, &cq->old_ring);
		cq->old_ring = cq->ring;
	}
	cq->ring = ring;
	cq->size_log2 = size_log2;
	ibcq->cqe = 1 << size_log2;
	return 0;
}

/*
 * Arm a kernel CQ: bump ARM_SEQ with the kind of request in the shadow
 * area, then ring CQ_ARM on the kernel's doorbell page.
 */
int qrdma_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct qrdma_dev *dev = to_qdev(ibcq->device);
	struct qrdma_cq *cq = to_qcq(ibcq);
	struct qrdma_cq_shadow *sh = cq->shadow.va;
	__le64 *ring = cq->ring.va;
	unsigned long irqflags;
	u64 arm, hdr;
	u32 head;
	int ret = 0;

	if (cq->user || !sh)
		return -EINVAL;
	spin_lock_irqsave(&cq->lock, irqflags);
	cq->arm_seq++;
	arm = cq->arm_seq & QRDMA_CQ_ARM_SEQ_MASK;
	arm |= (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ? QRDMA_CQ_ARM_SOLICITED
								   : QRDMA_CQ_ARM_NEXT;
	WRITE_ONCE(sh->arm, cpu_to_le64(arm));
	/* The device reads the shadow area when the doorbell arrives. */
	writel(cq->id, dev->db_kernel + QRDMA_DB_CQ_ARM);

	if (flags & IB_CQ_REPORT_MISSED_EVENTS) {
		/*
		 * A CQE at the consumer's head is one the poller has not seen:
		 * its VALID matches the lap the head index is on (1 on even laps).
		 */
		head = le64_to_cpu(READ_ONCE(sh->head));
		hdr = le64_to_cpu(READ_ONCE(ring[(head & ((1u << cq->size_log2) - 1)) *
						 (QRDMA_CQE_SIZE / 8) + 3]));
		if (!!(hdr & QRDMA_CQE_VALID) == !((head >> cq->size_log2) & 1))
			ret = 1;
	}
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/* A CEQE named CQ_CTX ctx (a CQ ID): tell its owner. Interrupt context. */
void qrdma_cq_event(struct qrdma_dev *dev, u32 ctx)
{
	struct qrdma_cq *cq = qrdma_obj_get(&dev->cqs, ctx, offsetof(struct qrdma_cq, ref));

	if (!cq) {
		dev_dbg(&dev->pdev->dev, "CEQ event for CQ %u, which does not exist\n", ctx);
		return;
	}
	if (cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	qrdma_obj_put(&cq->ref);
}
