// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma.ko: queue pairs. RC and UD (UC when the device says it carries
 * it), kernel and user. Create, modify, query and destroy go through the
 * CQP with a struct qrdma_qp_create_info / qrdma_qp_modify_info in a
 * DMA-able buffer; the device keeps the state machine, the driver checks
 * what ib_core expects checked first (ib_modify_qp_is_ok, the limits).
 *
 * QP1 (GSI): ib_core's MAD layer asks for it with IB_QPT_GSI at
 * registration. It is created as QP ID 1 (outside the ID allocator's
 * range), type UD with QRDMA_QP_CREATE_GSI, with kernel rings, and is
 * modified and destroyed as a UD QP. Kernel QPs carry the producer state
 * and wr_id arrays of qrdma_post.c.
 */
#include "qrdma.h"

static_assert(sizeof(struct qrdma_qp_modify_info) <= QRDMA_CTL_BLOCK);
static_assert(sizeof(struct qrdma_qp_create_info) <= QRDMA_CTL_BLOCK);
static_assert(QRDMA_QP_ATTR_DEST_QPN == IB_QP_DEST_QPN);
static_assert(QRDMA_QP_ATTR_AV == IB_QP_AV);
static_assert(QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC == IB_QP_MAX_DEST_RD_ATOMIC);
static_assert(QRDMA_ACCESS_REMOTE_ATOMIC == IB_ACCESS_REMOTE_ATOMIC);

/* IB's fixed Q_Key of QP1 (IBTA 14.2.5.7). */
#define QRDMA_GSI_QKEY		0x80010000u

/* Attribute bits the device takes (the IB values, see qrdma_hw.h). */
#define QRDMA_QP_ATTR_SUPPORTED	(IB_QP_ATTR_STANDARD_BITS & ~(IB_QP_ALT_PATH | \
				 IB_QP_PATH_MIG_STATE | IB_QP_CAP))

/* Stride of a WQE holding hdr bytes and payload bytes after it, as log2. */
static u32 qrdma_wqe_log2(u32 hdr, u32 payload)
{
	return max_t(u32, QRDMA_WQE_LOG2_MIN, order_base_2(hdr + payload));
}

static bool qrdma_wq_depth_ok(struct qrdma_dev *dev, u32 size_log2, u32 wqe_log2, u32 wr)
{
	return size_log2 >= QRDMA_WQ_SIZE_LOG2_MIN && size_log2 <= QRDMA_WQ_SIZE_LOG2_MAX &&
	       (1u << size_log2) >= wr && (1u << size_log2) <= dev->caps.max_qp_wr + 1 &&
	       wqe_log2 >= QRDMA_WQE_LOG2_MIN && wqe_log2 <= QRDMA_WQE_LOG2_MAX &&
	       (u64)1 << (size_log2 + wqe_log2) <= QRDMA_QUEUE_MAX_BYTES;
}

static int qrdma_qp_check_caps(struct qrdma_dev *dev, const struct ib_qp_init_attr *init)
{
	const struct ib_qp_cap *cap = &init->cap;
	const struct qrdma_caps *c = &dev->caps;

	if (cap->max_send_wr > c->max_qp_wr || cap->max_send_sge > c->max_send_sge ||
	    cap->max_inline_data > c->max_inline)
		return -EINVAL;
	if (!init->srq && (cap->max_recv_wr > c->max_qp_wr || cap->max_recv_sge > c->max_recv_sge))
		return -EINVAL;
	return 0;
}

/* Ring geometry for a kernel QP, from the requested capabilities. */
static int qrdma_qp_kernel_geometry(struct qrdma_dev *dev, struct qrdma_qp *qp,
				    const struct ib_qp_init_attr *init)
{
	const struct ib_qp_cap *cap = &init->cap;

	qp->sq_size_log2 = max_t(u32, QRDMA_WQ_SIZE_LOG2_MIN,
				 order_base_2(max_t(u32, cap->max_send_wr, 1)));
	qp->sq_wqe_log2 = qrdma_wqe_log2(QRDMA_SQ_WQE_HDR_BYTES,
					 max(cap->max_send_sge * QRDMA_SGE_BYTES,
					     cap->max_inline_data));
	if (!qrdma_wq_depth_ok(dev, qp->sq_size_log2, qp->sq_wqe_log2, cap->max_send_wr))
		return -EINVAL;
	if (init->srq)
		return 0;
	qp->rq_size_log2 = max_t(u32, QRDMA_WQ_SIZE_LOG2_MIN,
				 order_base_2(max_t(u32, cap->max_recv_wr, 1)));
	qp->rq_wqe_log2 = qrdma_wqe_log2(QRDMA_RQ_WQE_HDR_BYTES,
					 max_t(u32, cap->max_recv_sge, 1) * QRDMA_SGE_BYTES);
	if (!qrdma_wq_depth_ok(dev, qp->rq_size_log2, qp->rq_wqe_log2, cap->max_recv_wr))
		return -EINVAL;
	return 0;
}

/* Ring geometry for a user QP: the provider's, checked against the request. */
static int qrdma_qp_user_geometry(struct qrdma_dev *dev, struct qrdma_qp *qp,
				  const struct ib_qp_init_attr *init,
				  const struct qrdma_create_qp_req *req)
{
	const struct ib_qp_cap *cap = &init->cap;

	if (req->reserved)
		return -EINVAL;
	qp->sq_size_log2 = req->sq_size_log2;
	qp->sq_wqe_log2 = req->sq_wqe_log2;
	if (!qrdma_wq_depth_ok(dev, qp->sq_size_log2, qp->sq_wqe_log2, cap->max_send_wr) ||
	    QRDMA_SQ_WQE_HDR_BYTES + cap->max_send_sge * QRDMA_SGE_BYTES > 1u << qp->sq_wqe_log2 ||
	    QRDMA_SQ_WQE_HDR_BYTES + cap->max_inline_data > 1u << qp->sq_wqe_log2)
		return -EINVAL;
	if (init->srq) {
		if (req->rq_va || req->rq_size_log2 || req->rq_wqe_log2)
			return -EINVAL;
		return 0;
	}
	qp->rq_size_log2 = req->rq_size_log2;
	qp->rq_wqe_log2 = req->rq_wqe_log2;
	if (!qrdma_wq_depth_ok(dev, qp->rq_size_log2, qp->rq_wqe_log2, cap->max_recv_wr) ||
	    QRDMA_RQ_WQE_HDR_BYTES + cap->max_recv_sge * QRDMA_SGE_BYTES > 1u << qp->rq_wqe_log2)
		return -EINVAL;
	return 0;
}

/* What the rings really hold, reported back through init->cap. */
static void qrdma_qp_fill_cap(struct qrdma_dev *dev, struct qrdma_qp *qp, bool has_srq)
{
	const struct qrdma_caps *c = &dev->caps;
	struct ib_qp_cap *cap = &qp->cap;
	u32 sq_room = (1u << qp->sq_wqe_log2) - QRDMA_SQ_WQE_HDR_BYTES;

	cap->max_send_wr = min(1u << qp->sq_size_log2, c->max_qp_wr);
	cap->max_send_sge = min3(sq_room / QRDMA_SGE_BYTES, c->max_send_sge,
				 QRDMA_MAX_WQE_SGES);
	cap->max_inline_data = min(sq_room, c->max_inline);
	if (has_srq) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	} else {
		cap->max_recv_wr = min(1u << qp->rq_size_log2, c->max_qp_wr);
		cap->max_recv_sge = min3(((1u << qp->rq_wqe_log2) - QRDMA_RQ_WQE_HDR_BYTES) /
					 QRDMA_SGE_BYTES, c->max_recv_sge, QRDMA_MAX_WQE_SGES);
	}
}

static int qrdma_qp_type(struct qrdma_dev *dev, enum ib_qp_type type, u8 *hw)
{
	switch (type) {
	case IB_QPT_RC:
		*hw = QRDMA_QP_TYPE_RC;
		return 0;
	case IB_QPT_UD:
	case IB_QPT_GSI:
		*hw = QRDMA_QP_TYPE_UD;
		return 0;
	case IB_QPT_UC:
		if (!(dev->caps.features & QRDMA_FEATURE_UC))
			return -EOPNOTSUPP;
		*hw = QRDMA_QP_TYPE_UC;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

int qrdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibqp->device);
	struct qrdma_qp *qp = to_qqp(ibqp);
	struct qrdma_create_qp_resp resp = {};
	struct qrdma_qp_create_info *info;
	struct qrdma_create_qp_req req;
	dma_addr_t info_dma;
	u64 args[6] = {}, retval = 0;
	u8 hw_type;
	int ret;

	ret = qrdma_qp_type(dev, init->qp_type, &hw_type);
	if (ret)
		return ret;
	if (init->create_flags)
		return -EOPNOTSUPP;
	if (!init->send_cq || !init->recv_cq)
		return -EINVAL;
	ret = qrdma_qp_check_caps(dev, init);
	if (ret)
		return ret;

	qp->user = !!udata;
	mutex_init(&qp->lock);
	qp->state = IB_QPS_RESET;
	qp->sq_sig_type = init->sq_sig_type;
	qp->gsi = init->qp_type == IB_QPT_GSI;
	if (qp->gsi) {
		if (udata)
			return -EINVAL;
		/* ib_core asks only when the port offers MADs; refuse anyway. */
		if (!qrdma_has_gsi(dev))
			return -EOPNOTSUPP;
		qp->qkey = QRDMA_GSI_QKEY;
	}
	if (udata) {
		if (udata->inlen < sizeof(req))
			return -EINVAL;
		ret = ib_copy_from_udata(&req, udata, sizeof(req));
		if (ret)
			return ret;
		ret = qrdma_qp_user_geometry(dev, qp, init, &req);
	} else {
		ret = qrdma_qp_kernel_geometry(dev, qp, init);
	}
	if (ret)
		return ret;
	qrdma_qp_fill_cap(dev, qp, !!init->srq);

	if (qp->gsi) {
		qp->id = QRDMA_QP_GSI;
		ret = qrdma_obj_id_claim(&dev->qps, qp->id);
	} else {
		ret = qrdma_obj_id_alloc(&dev->qps, &qp->id);
	}
	if (ret)
		return ret;
	ret = qrdma_hmc_get(dev, QRDMA_HMC_QP, qp->id, 1);
	if (ret)
		goto err_id;
	if (!udata) {
		ret = qrdma_kwq_init(&qp->ksq, qp->sq_size_log2, qp->sq_wqe_log2, true);
		if (!ret && !init->srq)
			ret = qrdma_kwq_init(&qp->krq, qp->rq_size_log2, qp->rq_wqe_log2, false);
		if (ret)
			goto err_kwq;
	}

	if (udata)
		ret = qrdma_qmem_user(dev, &qp->sq, req.sq_va,
				      (size_t)1 << (qp->sq_size_log2 + qp->sq_wqe_log2));
	else
		ret = qrdma_qmem_kernel(dev, &qp->sq,
					(size_t)1 << (qp->sq_size_log2 + qp->sq_wqe_log2));
	if (ret)
		goto err_kwq;
	if (!init->srq) {
		if (udata)
			ret = qrdma_qmem_user(dev, &qp->rq, req.rq_va,
					      (size_t)1 << (qp->rq_size_log2 + qp->rq_wqe_log2));
		else
			ret = qrdma_qmem_kernel(dev, &qp->rq,
						(size_t)1 << (qp->rq_size_log2 + qp->rq_wqe_log2));
		if (ret)
			goto err_sq;
	}

	info = dma_pool_zalloc(dev->ctl_pool, GFP_KERNEL, &info_dma);
	if (!info) {
		ret = -ENOMEM;
		goto err_rq;
	}
	info->pd = cpu_to_le32(to_qpd(ibqp->pd)->pdn);
	info->type = hw_type;
	info->db_page = cpu_to_le16(qrdma_udata_db_page(udata));
	info->send_cq = cpu_to_le32(to_qcq(init->send_cq)->id);
	info->recv_cq = cpu_to_le32(to_qcq(init->recv_cq)->id);
	if (init->srq) {
		info->flags |= QRDMA_QP_CREATE_SRQ;
		info->srq = cpu_to_le32(to_qsrq(init->srq)->id);
	}
	if (init->sq_sig_type == IB_SIGNAL_ALL_WR)
		info->flags |= QRDMA_QP_CREATE_SIG_ALL;
	if (qp->gsi)
		info->flags |= QRDMA_QP_CREATE_GSI;
	if (udata) {
		info->flags |= QRDMA_QP_CREATE_SQ_VIRTMAP;
		if (!init->srq)
			info->flags |= QRDMA_QP_CREATE_RQ_VIRTMAP;
	}
	info->sq_size_log2 = qp->sq_size_log2;
	info->sq_wqe_log2 = qp->sq_wqe_log2;
	info->rq_size_log2 = init->srq ? 0 : qp->rq_size_log2;
	info->rq_wqe_log2 = init->srq ? 0 : qp->rq_wqe_log2;
	info->sq_addr = cpu_to_le64(qrdma_qmem_addr(&qp->sq));
	info->rq_addr = cpu_to_le64(init->srq ? 0 : qrdma_qmem_addr(&qp->rq));
	info->qp_ctx = cpu_to_le64(qp->id);
	args[0] = qp->id;
	args[1] = info_dma;
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_CREATE_QP, args, &retval);
	dma_pool_free(dev->ctl_pool, info, info_dma);
	if (ret)
		goto err_rq;

	/*
	 * Peers address the QP by its wire QPN; the device and this driver
	 * keep naming it by qp->id (doorbells, commands, CQEs). ib_core
	 * requires the GSI QP to be QP 1 whatever the device says.
	 */
	ibqp->qp_num = qp->gsi ? QRDMA_QP_GSI : qrdma_wire_id(dev, retval, qp->id);
	init->cap = qp->cap;
	if (udata) {
		resp.qp_id = qp->id;
		resp.max_inline_data = qp->cap.max_inline_data;
		ret = ib_copy_to_udata(udata, &resp, min_t(size_t, udata->outlen, sizeof(resp)));
		if (ret)
			goto err_destroy;
	}
	qrdma_obj_publish(&dev->qps, qp->id, qp, &qp->ref);
	return 0;

err_destroy:
	args[0] = qp->id;
	args[1] = 0;
	if (qrdma_cqp_exec(dev, QRDMA_CQP_OP_DESTROY_QP, args, NULL)) {
		atomic64_inc(&dev->hw_errors);
		qrdma_retire(dev, &qp->sq, NULL);
		qrdma_retire(dev, &qp->rq, NULL);
		qrdma_kwq_free(&qp->ksq);
		qrdma_kwq_free(&qp->krq);
		goto err_id;
	}
err_rq:
	qrdma_qmem_free(dev, &qp->rq);
err_sq:
	qrdma_qmem_free(dev, &qp->sq);
err_kwq:
	qrdma_kwq_free(&qp->ksq);
	qrdma_kwq_free(&qp->krq);
	qrdma_hmc_put(dev, QRDMA_HMC_QP, qp->id, 1);
err_id:
	xa_erase_irq(&dev->qps.xa, qp->id);
	return ret;
}

int qrdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibqp->device);
	struct qrdma_qp *qp = to_qqp(ibqp);
	u64 args[6] = { qp->id };

	/* From here the poller finds no QP for this ID and skips its CQEs. */
	qrdma_obj_unpublish(&dev->qps, qp->id, &qp->ref);
	qrdma_kwq_free(&qp->ksq);
	qrdma_kwq_free(&qp->krq);
	if (qrdma_cqp_exec(dev, QRDMA_CQP_OP_DESTROY_QP, args, NULL)) {
		dev_err(&dev->pdev->dev, "QP %u: destroy failed; memory kept until reset\n",
			qp->id);
		atomic64_inc(&dev->hw_errors);
		qrdma_retire(dev, &qp->sq, NULL);
		qrdma_retire(dev, &qp->rq, NULL);
		return 0;
	}
	/* The device writes no more CQEs for it: hide those left from the ID's next owner. */
	if (!qp->user) {
		qrdma_cq_clean(to_qcq(ibqp->send_cq), qp->id);
		if (ibqp->recv_cq != ibqp->send_cq)
			qrdma_cq_clean(to_qcq(ibqp->recv_cq), qp->id);
	}
	qrdma_qmem_free(dev, &qp->sq);
	qrdma_qmem_free(dev, &qp->rq);
	qrdma_hmc_put(dev, QRDMA_HMC_QP, qp->id, 1);
	return 0;
}

static int qrdma_qp_check_attr(struct qrdma_dev *dev, const struct ib_qp_attr *attr, int mask)
{
	const struct qrdma_caps *c = &dev->caps;

	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index)
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > ib_mtu_int_to_enum(c->max_mtu)))
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > c->max_rd_atom)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) && attr->max_dest_rd_atomic > c->max_resp_res)
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > QRDMA_OBJ_ID_MASK)
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_ACCESS_FLAGS) && (attr->qp_access_flags & IB_ACCESS_REMOTE_ATOMIC) &&
	    !(c->features & QRDMA_FEATURE_ATOMIC))
		return -EOPNOTSUPP;
	return 0;
}

int qrdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibqp->device);
	struct qrdma_qp *qp = to_qqp(ibqp);
	struct qrdma_qp_modify_info *info;
	enum ib_qp_state cur, next;
	dma_addr_t info_dma;
	u64 args[6] = {};
	int ret;

	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	if (mask & IB_QP_ALT_PATH)
		return -EOPNOTSUPP;	/* alternate paths: RoCE has no APM here */
	/*
	 * Without an alternate path the QP is always MIGRATED (IB path migration),
	 * which query_qp reports: setting that is allowed wherever IB lists
	 * the attribute (ib_modify_qp_is_ok checks where) and changes
	 * nothing, so the device never sees it. REARM and ARMED need an
	 * alternate path loaded.
	 */
	if ((mask & IB_QP_PATH_MIG_STATE) && attr->path_mig_state != IB_MIG_MIGRATED)
		return -EINVAL;

	mutex_lock(&qp->lock);
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask)) {
		ret = -EINVAL;
		goto out;
	}
	ret = qrdma_qp_check_attr(dev, attr, mask);
	if (ret)
		goto out;

	info = dma_pool_zalloc(dev->ctl_pool, GFP_KERNEL, &info_dma);
	if (!info) {
		ret = -ENOMEM;
		goto out;
	}
	/* QP1 follows IB's GSI rules (no PORT), which ib_modify_qp_is_ok checked. */
	info->port_num = attr->port_num;
	info->attr_mask = cpu_to_le32(mask & QRDMA_QP_ATTR_SUPPORTED);
	info->state = next;
	info->cur_state = cur;
	if (mask & IB_QP_AV) {
		ret = qrdma_av_from_ah_attr(dev, &attr->ah_attr, &info->av);
		if (ret)
			goto out_free;
	}
	info->path_mtu = attr->path_mtu;
	info->timeout = attr->timeout;
	info->sq_psn = cpu_to_le32(attr->sq_psn & 0xffffff);
	info->rq_psn = cpu_to_le32(attr->rq_psn & 0xffffff);
	info->dest_qpn = cpu_to_le32(attr->dest_qp_num);
	info->qkey = cpu_to_le32(attr->qkey);
	info->access_flags = cpu_to_le32(attr->qp_access_flags &
					 (QRDMA_ACCESS_REMOTE_WRITE | QRDMA_ACCESS_REMOTE_READ |
					  QRDMA_ACCESS_REMOTE_ATOMIC));
	info->pkey_index = cpu_to_le16(attr->pkey_index);
	info->retry_cnt = attr->retry_cnt;
	info->rnr_retry = attr->rnr_retry;
	info->min_rnr_timer = attr->min_rnr_timer;
	info->max_rd_atomic = attr->max_rd_atomic;
	info->max_dest_rd_atomic = attr->max_dest_rd_atomic;

	args[0] = qp->id;
	args[1] = info_dma;
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_MODIFY_QP, args, NULL);
	if (ret)
		goto out_free;
	if (mask & IB_QP_QKEY)
		qp->qkey = attr->qkey;
	/* RESET starts the device's queues over at index 0, polarity 1. */
	if (next == IB_QPS_RESET && cur != IB_QPS_RESET && !qp->user) {
		qrdma_kwq_reset(&qp->ksq, &qp->sq);
		qrdma_kwq_reset(&qp->krq, &qp->rq);
	}
	/* Posting reads it without qp->lock. */
	WRITE_ONCE(qp->state, next);
out_free:
	dma_pool_free(dev->ctl_pool, info, info_dma);
out:
	mutex_unlock(&qp->lock);
	return ret;
}

int qrdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init)
{
	struct qrdma_dev *dev = to_qdev(ibqp->device);
	struct qrdma_qp *qp = to_qqp(ibqp);
	struct qrdma_qp_modify_info *info;
	dma_addr_t info_dma;
	u64 args[6] = {};
	int ret;

	info = dma_pool_zalloc(dev->ctl_pool, GFP_KERNEL, &info_dma);
	if (!info)
		return -ENOMEM;
	args[0] = qp->id;
	args[1] = info_dma;
	mutex_lock(&qp->lock);
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_QUERY_QP, args, NULL);
	if (ret)
		goto out;

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = info->state;
	attr->cur_qp_state = info->state;
	WRITE_ONCE(qp->state, info->state);
	attr->path_mtu = info->path_mtu;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = le32_to_cpu(info->qkey);
	if (le32_to_cpu(info->attr_mask) & QRDMA_QP_ATTR_QKEY)
		qp->qkey = attr->qkey;
	attr->rq_psn = le32_to_cpu(info->rq_psn);
	attr->sq_psn = le32_to_cpu(info->sq_psn);
	attr->dest_qp_num = le32_to_cpu(info->dest_qpn);
	attr->qp_access_flags = le32_to_cpu(info->access_flags);
	attr->pkey_index = le16_to_cpu(info->pkey_index);
	attr->port_num = info->port_num ?: 1;
	attr->timeout = info->timeout;
	attr->retry_cnt = info->retry_cnt;
	attr->rnr_retry = info->rnr_retry;
	attr->min_rnr_timer = info->min_rnr_timer;
	attr->max_rd_atomic = info->max_rd_atomic;
	attr->max_dest_rd_atomic = info->max_dest_rd_atomic;
	attr->sq_draining = info->sq_draining;
	attr->cap = qp->cap;
	if (le32_to_cpu(info->attr_mask) & QRDMA_QP_ATTR_AV) {
		const struct qrdma_av *av = &info->av;
		union ib_gid dgid;

		memcpy(dgid.raw, av->dgid, sizeof(dgid.raw));
		attr->ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
		rdma_ah_set_port_num(&attr->ah_attr, 1);
		rdma_ah_set_grh(&attr->ah_attr, &dgid,
				le32_to_cpu(av->flow_label) & 0xfffff, av->sgid_index,
				av->hop_limit, av->traffic_class);
		memcpy(attr->ah_attr.roce.dmac, av->dmac, ETH_ALEN);
	}

	memset(init, 0, sizeof(*init));
	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = qp->cap;
	init->sq_sig_type = qp->sq_sig_type;
	init->event_handler = ibqp->event_handler;
	init->qp_context = ibqp->qp_context;
out:
	mutex_unlock(&qp->lock);
	dma_pool_free(dev->ctl_pool, info, info_dma);
	return ret;
}
