// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma.ko: completion queues. Create, resize and destroy through the CQP;
 * kernel CQs live in DMA-coherent memory, user CQs in pinned memory listed
 * in PBLEs (VIRTMAP). Every CQ reports to CEQ 0 with its ID as CQ_CTX, so
 * the CEQ handler finds the ib_cq in the CQ table (the CCQ's context value
 * lies above every 24-bit ID). Kernel CQs are polled here: CQEs by VALID
 * polarity, each matched to its QP's work queue for the wr_id, and HEAD
 * (CQEs consumed, free running) written back to the shadow area.
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
	/* One old ring at a time: the poller has not drained the last one yet. */
	if (!cq->user && READ_ONCE(cq->old_active))
		return -EBUSY;

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
		cq->ring = ring;
		cq->size_log2 = size_log2;
	} else {
		struct qrdma_cq_shadow *sh = cq->shadow.va;
		struct qrdma_qmem drained = cq->old_ring;
		unsigned long flags;

		/*
		 * The device writes the new ring from index 0 now: the
		 * poller finishes the old ring first (old_head), then counts
		 * the new one from 0, which is what HEAD says from here on.
		 */
		spin_lock_irqsave(&cq->lock, flags);
		cq->old_ring = cq->ring;
		cq->old_head = cq->head;
		cq->old_size_log2 = cq->size_log2;
		cq->old_active = true;
		cq->ring = ring;
		cq->size_log2 = size_log2;
		cq->head = 0;
		WRITE_ONCE(sh->head, 0);
		spin_unlock_irqrestore(&cq->lock, flags);
		qrdma_qmem_free(dev, &drained);
	}
	ibcq->cqe = 1 << size_log2;
	return 0;
}

/*
 * The CQE at consumer index head of a ring of 2^log2 CQEs if the device
 * has written it on head's lap (VALID is 1 on even laps), else NULL.
 */
static __le64 *qrdma_cqe_ready(void *ring, u32 head, u8 log2)
{
	__le64 *cqe = ring + (size_t)(head & ((1u << log2) - 1)) * QRDMA_CQE_SIZE;
	u64 q3 = le64_to_cpu(READ_ONCE(cqe[3]));

	return !!(q3 & QRDMA_CQE_VALID) == !((head >> log2) & 1) ? cqe : NULL;
}

/* CQEs the poller has not read yet? Lock held. */
static bool qrdma_cq_pending(struct qrdma_cq *cq)
{
	if (cq->old_active && qrdma_cqe_ready(cq->old_ring.va, cq->old_head, cq->old_size_log2))
		return true;
	return qrdma_cqe_ready(cq->ring.va, cq->head, cq->size_log2);
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
	unsigned long irqflags;
	int ret = 0;
	u64 arm;

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

	/*
	 * A CQE written before the doorbell raises no event: the caller must
	 * poll again if one is waiting (checked after arming, so none is lost).
	 */
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && qrdma_cq_pending(cq))
		ret = 1;
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

/* Retire SQ WQEs up to the one at index idx (and every unsignaled one before it). */
static bool qrdma_cq_retire_sq(struct qrdma_qp *qp, u32 idx, struct ib_wc *wc)
{
	struct qrdma_kwq *sq = &qp->ksq;
	u32 mask = (1u << sq->size_log2) - 1;
	bool ok = false;
	u32 pos;

	spin_lock(&sq->lock);
	pos = sq->tail + ((idx - sq->tail) & mask);
	/* Only a WQE that is outstanding can complete. */
	if (pos - sq->tail < sq->head - sq->tail) {
		wc->wr_id = sq->wr_id[pos & mask];
		wc->opcode = sq->wc_opcode[pos & mask];
		sq->tail = pos + 1;
		ok = true;
	}
	spin_unlock(&sq->lock);
	return ok;
}

static bool qrdma_cq_retire_rq(struct qrdma_qp *qp, u32 idx, struct ib_wc *wc)
{
	struct qrdma_kwq *rq = &qp->krq;
	u32 mask = (1u << rq->size_log2) - 1;
	bool ok = false;
	u32 pos;

	spin_lock(&rq->lock);
	pos = rq->tail + ((idx - rq->tail) & mask);
	if (pos - rq->tail < rq->head - rq->tail) {
		wc->wr_id = rq->wr_id[pos & mask];
		rq->tail = pos + 1;
		ok = true;
	}
	spin_unlock(&rq->lock);
	return ok;
}

static bool qrdma_cq_retire_srq(struct qrdma_srq *srq, u32 idx, struct ib_wc *wc)
{
	bool ok = false;

	if (srq->user || !srq->wr_id || idx >= 1u << srq->size_log2)
		return false;
	spin_lock(&srq->lock);
	if (test_bit(idx, srq->busy)) {
		wc->wr_id = srq->wr_id[idx];
		__clear_bit(idx, srq->busy);
		ok = true;
	}
	spin_unlock(&srq->lock);
	return ok;
}

/*
 * Turn one CQE into a work completion. False if it produces none: its QP
 * is gone (or never was: destroy zeroes the QP field of CQEs left behind),
 * it belongs to another CQ, or it names no outstanding WQE.
 */
static bool qrdma_cqe_to_wc(struct qrdma_dev *dev, struct qrdma_cq *cq, const __le64 *cqe,
			    struct ib_wc *wc)
{
	u64 q0 = le64_to_cpu(cqe[0]), q1 = le64_to_cpu(cqe[1]), q2 = le64_to_cpu(cqe[2]);
	u32 qp_id = q1 & QRDMA_CQE_QP_MASK;
	u32 idx = q2 & QRDMA_CQE_WQE_INDEX_MASK;
	u32 flags = (q2 & QRDMA_CQE_FLAGS_MASK) >> QRDMA_CQE_FLAGS_SHIFT;
	u32 status = (q2 & QRDMA_CQE_STATUS_MASK) >> QRDMA_CQE_STATUS_SHIFT;
	u32 opcode = (q2 & QRDMA_CQE_OPCODE_MASK) >> QRDMA_CQE_OPCODE_SHIFT;
	struct ib_qp *ibqp;
	struct qrdma_qp *qp;
	bool ok;

	qp = qrdma_obj_get(&dev->qps, qp_id, offsetof(struct qrdma_qp, ref));
	if (!qp) {
		dev_dbg_ratelimited(&dev->pdev->dev, "CQ %u: CQE for QP %u, which does not exist\n",
				    cq->id, qp_id);
		return false;
	}
	ibqp = &qp->ibqp;
	memset(wc, 0, sizeof(*wc));
	if (qp->user)
		ok = false;
	else if (flags & QRDMA_CQE_FLAG_SQ)
		ok = ibqp->send_cq == &cq->ibcq && qrdma_cq_retire_sq(qp, idx, wc);
	else if (flags & QRDMA_CQE_FLAG_SRQ)
		ok = ibqp->recv_cq == &cq->ibcq && ibqp->srq &&
		     qrdma_cq_retire_srq(to_qsrq(ibqp->srq), idx, wc);
	else
		ok = ibqp->recv_cq == &cq->ibcq && !ibqp->srq && qrdma_cq_retire_rq(qp, idx, wc);
	if (!ok) {
		dev_warn_ratelimited(&dev->pdev->dev,
				     "CQ %u: CQE for QP %u index %u flags 0x%x names no outstanding WQE; skipped\n",
				     cq->id, qp_id, idx, flags);
		qrdma_obj_put(&qp->ref);
		return false;
	}

	wc->qp = ibqp;
	/* The device reports ibv_wc_status values, which ib_wc_status shares. */
	wc->status = status <= IB_WC_GENERAL_ERR ? status : IB_WC_GENERAL_ERR;
	wc->vendor_err = (q2 & QRDMA_CQE_VENDOR_ERR_MASK) >> QRDMA_CQE_VENDOR_ERR_SHIFT;
	wc->byte_len = q0 & QRDMA_CQE_BYTE_LEN_MASK;
	wc->port_num = 1;
	wc->pkey_index = 0;
	if (!(flags & QRDMA_CQE_FLAG_SQ)) {
		/* Send completions took their opcode from the WR that was posted. */
		wc->opcode = opcode == IB_WC_RECV_RDMA_WITH_IMM ? IB_WC_RECV_RDMA_WITH_IMM
							       : IB_WC_RECV;
		wc->src_qp = (q1 & QRDMA_CQE_SRC_QP_MASK) >> QRDMA_CQE_SRC_QP_SHIFT;
		if (ibqp->qp_type != IB_QPT_UD && ibqp->qp_type != IB_QPT_GSI)
			wc->src_qp = 0;
	}
	if (flags & QRDMA_CQE_FLAG_WITH_IMM) {
		/* Network byte order, unchanged (qrdma_hw.h "Completion rules"). */
		wc->ex.imm_data = (__force __be32)(u32)(q0 >> QRDMA_CQE_IMM_SHIFT);
		wc->wc_flags |= IB_WC_WITH_IMM;
	} else if (flags & QRDMA_CQE_FLAG_WITH_INV) {
		wc->ex.invalidate_rkey = q0 >> QRDMA_CQE_IMM_SHIFT;
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
	}
	/*
	 * RoCE v2 UD: the first 40 bytes are the GRH room, holding the IPv6
	 * header or, for IPv4, the IPv4 header in its last 20 bytes. ib_core
	 * (ib_init_ah_attr_from_wc) tells the two apart from those bytes when
	 * IB_WC_WITH_NETWORK_HDR_TYPE is clear, which it is here: the CQE
	 * does not say, and a kernel buffer is known only by its DMA address.
	 */
	if (flags & QRDMA_CQE_FLAG_GRH)
		wc->wc_flags |= IB_WC_GRH;
	qrdma_obj_put(&qp->ref);
	return true;
}

int qrdma_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct qrdma_dev *dev = to_qdev(ibcq->device);
	struct qrdma_cq *cq = to_qcq(ibcq);
	struct qrdma_cq_shadow *sh = cq->shadow.va;
	unsigned long flags;
	bool consumed = false;
	int n = 0;

	if (cq->user || !sh)
		return -EINVAL;
	spin_lock_irqsave(&cq->lock, flags);
	while (n < num_entries) {
		__le64 *cqe;

		if (cq->old_active) {
			/* After a resize: the old ring first, until it runs dry. */
			cqe = qrdma_cqe_ready(cq->old_ring.va, cq->old_head, cq->old_size_log2);
			if (!cqe) {
				cq->old_active = false;
				continue;
			}
			cq->old_head++;
		} else {
			cqe = qrdma_cqe_ready(cq->ring.va, cq->head, cq->size_log2);
			if (!cqe)
				break;
			cq->head++;
			consumed = true;
		}
		/* The body only after VALID. */
		dma_rmb();
		if (qrdma_cqe_to_wc(dev, cq, cqe, &wc[n]))
			n++;
	}
	if (consumed) {
		/* Every read of the CQEs is done before HEAD frees their slots. */
		mb();
		WRITE_ONCE(sh->head, cpu_to_le64(cq->head));
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

/*
 * A kernel QP using this CQ was destroyed: its CQEs still in the ring name
 * an ID that a new QP may soon carry. Point them at QP 0, which never
 * exists, so the poller skips them.
 */
void qrdma_cq_clean(struct qrdma_cq *cq, u32 qp_id)
{
	unsigned long flags;
	__le64 *cqe;
	u32 i;

	if (cq->user)
		return;
	spin_lock_irqsave(&cq->lock, flags);
	for (i = 0; cq->old_active && i < 1u << cq->old_size_log2; i++) {
		cqe = qrdma_cqe_ready(cq->old_ring.va, cq->old_head + i, cq->old_size_log2);
		if (!cqe)
			break;
		dma_rmb();
		if ((le64_to_cpu(cqe[1]) & QRDMA_CQE_QP_MASK) == qp_id)
			cqe[1] = cpu_to_le64(le64_to_cpu(cqe[1]) & ~QRDMA_CQE_QP_MASK);
	}
	for (i = 0; i < 1u << cq->size_log2; i++) {
		cqe = qrdma_cqe_ready(cq->ring.va, cq->head + i, cq->size_log2);
		if (!cqe)
			break;
		dma_rmb();
		if ((le64_to_cpu(cqe[1]) & QRDMA_CQE_QP_MASK) == qp_id)
			cqe[1] = cpu_to_le64(le64_to_cpu(cqe[1]) & ~QRDMA_CQE_QP_MASK);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
}
