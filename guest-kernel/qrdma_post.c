// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma.ko: posting work requests on kernel QPs and SRQs (the producer
 * half of the data path; polling is in qrdma_cq.c). WQE layouts are in
 * qrdma_hw.h "Work queues". Every WQE is written body first, then, after
 * dma_wmb(), the qword holding VALID with the current lap's polarity; the
 * doorbell on the kernel's doorbell page follows the last WQE of a call.
 * ULPs post from any context: per-queue spinlocks, irqsave, no allocation.
 */
#include "qrdma.h"

static_assert(QRDMA_ACCESS_LOCAL_WRITE == IB_ACCESS_LOCAL_WRITE);
static_assert(QRDMA_ACCESS_REMOTE_WRITE == IB_ACCESS_REMOTE_WRITE);
static_assert(QRDMA_ACCESS_REMOTE_READ == IB_ACCESS_REMOTE_READ);
static_assert(QRDMA_ACCESS_MW_BIND == IB_ACCESS_MW_BIND);
static_assert(QRDMA_ACCESS_ZERO_BASED == IB_ZERO_BASED);

/* IB: a UD send whose Q_Key has bit 31 set uses the QP's own Q_Key. */
#define QRDMA_QKEY_USE_QP	0x80000000u

int qrdma_kwq_init(struct qrdma_kwq *wq, u8 size_log2, u8 wqe_log2, bool sq)
{
	memset(wq, 0, sizeof(*wq));
	spin_lock_init(&wq->lock);
	wq->size_log2 = size_log2;
	wq->wqe_log2 = wqe_log2;
	wq->wr_id = kvcalloc(1u << size_log2, sizeof(*wq->wr_id), GFP_KERNEL);
	if (!wq->wr_id)
		return -ENOMEM;
	if (sq) {
		wq->wc_opcode = kvcalloc(1u << size_log2, sizeof(*wq->wc_opcode), GFP_KERNEL);
		if (!wq->wc_opcode) {
			qrdma_kwq_free(wq);
			return -ENOMEM;
		}
	}
	return 0;
}

void qrdma_kwq_free(struct qrdma_kwq *wq)
{
	kvfree(wq->wr_id);
	kvfree(wq->wc_opcode);
	wq->wr_id = NULL;
	wq->wc_opcode = NULL;
}

/*
 * The QP went to RESET: the device starts its queues over at index 0 with
 * VALID polarity 1, so the driver does too, on a zeroed ring.
 */
void qrdma_kwq_reset(struct qrdma_kwq *wq, struct qrdma_qmem *ring)
{
	unsigned long flags;

	if (!wq->wr_id || !ring->va)
		return;
	spin_lock_irqsave(&wq->lock, flags);
	memset(ring->va, 0, ring->size);
	wq->head = 0;
	wq->tail = 0;
	spin_unlock_irqrestore(&wq->lock, flags);
}

static inline void *qrdma_kwq_slot(struct qrdma_kwq *wq, struct qrdma_qmem *ring)
{
	return ring->va + ((size_t)(wq->head & ((1u << wq->size_log2) - 1)) << wq->wqe_log2);
}

/* VALID is 1 on the first lap and flips each time the index wraps. */
static inline bool qrdma_kwq_polarity(struct qrdma_kwq *wq)
{
	return !((wq->head >> wq->size_log2) & 1);
}

static inline bool qrdma_kwq_full(struct qrdma_kwq *wq)
{
	return wq->head - wq->tail >= (1u << wq->size_log2);
}

static void qrdma_write_sges(struct qrdma_sge *dst, const struct ib_sge *sg, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		dst[i].addr = cpu_to_le64(sg[i].addr);
		dst[i].length = cpu_to_le32(sg[i].length);
		dst[i].lkey = cpu_to_le32(sg[i].lkey);
	}
}

/* Copy the SGEs' bytes (kernel virtual addresses, as IB_SEND_INLINE has them). */
static int qrdma_write_inline(void *dst, const struct ib_send_wr *wr, u32 max, u32 *len)
{
	u32 total = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *sg = &wr->sg_list[i];

		if (sg->length > max - total)
			return -EINVAL;
		memcpy(dst + total, (void *)(uintptr_t)sg->addr, sg->length);
		total += sg->length;
	}
	*len = total;
	return 0;
}

/* The SQ opcode and the completion opcode of a send WR; -EINVAL if none. */
static int qrdma_sq_opcode(const struct qrdma_dev *dev, const struct qrdma_qp *qp,
			   enum ib_wr_opcode op, u8 *hw, u8 *wc)
{
	enum ib_qp_type type = qp->ibqp.qp_type;
	bool ud = type == IB_QPT_UD || type == IB_QPT_GSI;
	/* In ERR everything is flushed: ib_drain_sq posts an RDMA WRITE to any QP. */
	bool any = qp->state == IB_QPS_ERR;

	switch (op) {
	case IB_WR_SEND:
		*hw = QRDMA_SQ_OP_SEND;
		*wc = IB_WC_SEND;
		return 0;
	case IB_WR_SEND_WITH_IMM:
		*hw = QRDMA_SQ_OP_SEND_WITH_IMM;
		*wc = IB_WC_SEND;
		return 0;
	default:
		break;
	}
	if (ud && !any)
		return -EINVAL;
	switch (op) {
	case IB_WR_RDMA_WRITE:
		*hw = QRDMA_SQ_OP_RDMA_WRITE;
		*wc = IB_WC_RDMA_WRITE;
		return 0;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		*hw = QRDMA_SQ_OP_RDMA_WRITE_WITH_IMM;
		*wc = IB_WC_RDMA_WRITE;
		return 0;
	case IB_WR_LOCAL_INV:
		*hw = QRDMA_SQ_OP_LOCAL_INV;
		*wc = IB_WC_LOCAL_INV;
		return 0;
	case IB_WR_REG_MR:
		*hw = QRDMA_SQ_OP_FAST_REG;
		*wc = IB_WC_REG_MR;
		return 0;
	default:
		break;
	}
	/* UC carries no reads, atomics or invalidating sends. */
	if (type != IB_QPT_RC && !any)
		return -EINVAL;
	switch (op) {
	case IB_WR_SEND_WITH_INV:
		*hw = QRDMA_SQ_OP_SEND_WITH_INV;
		*wc = IB_WC_SEND;
		return 0;
	case IB_WR_RDMA_READ:
		*hw = QRDMA_SQ_OP_RDMA_READ;
		*wc = IB_WC_RDMA_READ;
		return 0;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		if (!(dev->caps.features & QRDMA_FEATURE_ATOMIC) && !any)
			return -EINVAL;
		*hw = op == IB_WR_ATOMIC_CMP_AND_SWP ? QRDMA_SQ_OP_ATOMIC_CMP_AND_SWP
						     : QRDMA_SQ_OP_ATOMIC_FETCH_AND_ADD;
		*wc = op == IB_WR_ATOMIC_CMP_AND_SWP ? IB_WC_COMP_SWAP : IB_WC_FETCH_ADD;
		return 0;
	default:
		return -EINVAL;
	}
}

/*
 * Fast register: copy the page list map_mr_sg built into the MR's
 * reserved PBLEs (one level), then describe the new translation.
 */
/*
 * LOCAL_INV names the MR by its STag (hw-spec 19.2); a ULP gives the lkey
 * (the STag) or the rkey, which with WIRE_IDS may be another number: then
 * the STag of the fast-register MR whose current rkey it is. A key equal
 * to both one MR's STag and another's rkey is taken as the rkey.
 */
static u32 qrdma_local_inv_stag(struct qrdma_dev *dev, u32 key)
{
	struct qrdma_mr *mr;

	if (xa_empty(&dev->wire_mrs))
		return key;
	mr = xa_load(&dev->wire_mrs, key >> QRDMA_STAG_INDEX_SHIFT);
	if (!mr || mr->ibmr.rkey != key)
		return key;
	return mr->index << QRDMA_STAG_INDEX_SHIFT | (key & QRDMA_STAG_KEY_MASK);
}

static int qrdma_fill_fast_reg(struct qrdma_dev *dev, const struct ib_reg_wr *reg,
			       struct qrdma_sq_wqe_hdr *h)
{
	struct qrdma_mr *mr = to_qmr(reg->mr);
	u32 stag = mr->index << QRDMA_STAG_INDEX_SHIFT | (reg->key & QRDMA_STAG_KEY_MASK);
	u32 i;

	if (!mr->pages || mr->pbles.levels != 1 || !mr->npages || mr->npages > mr->max_pages ||
	    !is_power_of_2(mr->ibmr.page_size) ||
	    (reg->access & ~IB_ACCESS_OPTIONAL & ~QRDMA_ACCESS_VALID_MASK))
		return -EINVAL;
	/*
	 * The key is the MR's lkey or rkey (ib_update_fast_reg_key changed
	 * both key bytes); only its key byte may change, and the WQE names
	 * the STag whichever the ULP gave.
	 */
	if (reg->key >> QRDMA_STAG_INDEX_SHIFT != mr->index &&
	    reg->key >> QRDMA_STAG_INDEX_SHIFT != mr->ibmr.rkey >> QRDMA_STAG_INDEX_SHIFT)
		return -EINVAL;
	for (i = 0; i < mr->npages; i++)
		qrdma_pble_set(dev, &mr->pbles, i, mr->pages[i]);
	/*
	 * The device takes the new key byte when it runs the WQE, and later
	 * commands (DEALLOC_STAG) must name the MR by it. Should the WQE fail,
	 * the device keeps the old key and a dealloc fails safely (the pages
	 * stay lent until the next reset).
	 */
	mr->stag = stag;
	/* The device reads the PBLEs when it runs the WQE (ordered by dma_wmb later). */
	h->remote_addr = cpu_to_le64(mr->ibmr.iova);
	h->compare_add = cpu_to_le64(mr->ibmr.length);
	h->swap = cpu_to_le64(qrdma_pble_first(&mr->pbles));
	h->ud_dest = cpu_to_le64(stag |
				 (u64)(reg->access & QRDMA_ACCESS_VALID_MASK) <<
					QRDMA_SQ_FR_ACCESS_SHIFT |
				 (u64)ilog2(mr->ibmr.page_size) << QRDMA_SQ_FR_PAGE_SHIFT |
				 1ULL << QRDMA_SQ_FR_LEVELS_SHIFT);
	h->fbo = cpu_to_le64(mr->fbo);
	return 0;
}

/* Build one send WQE in the slot at the SQ's head; the caller makes it valid. */
static int qrdma_write_send_wqe(struct qrdma_dev *dev, struct qrdma_qp *qp,
				const struct ib_send_wr *wr, void *slot, u64 *hdr, u8 *wc_op)
{
	struct qrdma_sq_wqe_hdr h = {};
	void *payload = slot + QRDMA_SQ_WQE_HDR_BYTES;
	u32 inline_len = 0;
	u8 op;
	int ret;

	ret = qrdma_sq_opcode(dev, qp, wr->opcode, &op, wc_op);
	if (ret)
		return ret;
	if (wr->num_sge < 0 || wr->num_sge > qp->cap.max_send_sge)
		return -EINVAL;

	switch (wr->opcode) {
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		/* Network byte order as the WR carries it, unchanged. */
		h.rkey_imm = cpu_to_le64((u64)(__force u32)wr->ex.imm_data << QRDMA_SQ_IMM_SHIFT);
		break;
	case IB_WR_SEND_WITH_INV:
		/* The peer's rkey, as the peer's device handed it out. */
		h.rkey_imm = cpu_to_le64((u64)wr->ex.invalidate_rkey << QRDMA_SQ_IMM_SHIFT);
		break;
	case IB_WR_LOCAL_INV:
		h.rkey_imm = cpu_to_le64((u64)qrdma_local_inv_stag(dev, wr->ex.invalidate_rkey)
					 << QRDMA_SQ_IMM_SHIFT);
		break;
	default:
		break;
	}

	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		h.remote_addr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		h.rkey_imm |= cpu_to_le64(rdma_wr(wr)->rkey);
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		h.remote_addr = cpu_to_le64(atomic_wr(wr)->remote_addr);
		h.rkey_imm = cpu_to_le64(atomic_wr(wr)->rkey);
		h.compare_add = cpu_to_le64(atomic_wr(wr)->compare_add);
		h.swap = cpu_to_le64(atomic_wr(wr)->swap);
		break;
	case IB_WR_REG_MR:
		ret = qrdma_fill_fast_reg(dev, reg_wr(wr), &h);
		if (ret)
			return ret;
		break;
	default:
		break;
	}

	if ((qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI) &&
	    (wr->opcode == IB_WR_SEND || wr->opcode == IB_WR_SEND_WITH_IMM)) {
		const struct ib_ud_wr *ud = ud_wr(wr);
		struct qrdma_ah *ah = ud->ah ? to_qah(ud->ah) : NULL;
		u32 qkey = ud->remote_qkey;

		if (!ah || !ah->ctx || ud->remote_qpn > QRDMA_SQ_UD_QPN_MASK)
			return -EINVAL;
		if (qkey & QRDMA_QKEY_USE_QP)
			qkey = qp->qkey;
		h.ud_dest = cpu_to_le64(ud->remote_qpn | (u64)ah->id << QRDMA_SQ_UD_AH_SHIFT);
		h.ud_qkey = cpu_to_le64(qkey);
	}

	if ((wr->send_flags & IB_SEND_INLINE) &&
	    (op == QRDMA_SQ_OP_SEND || op == QRDMA_SQ_OP_SEND_WITH_IMM ||
	     op == QRDMA_SQ_OP_SEND_WITH_INV || op == QRDMA_SQ_OP_RDMA_WRITE ||
	     op == QRDMA_SQ_OP_RDMA_WRITE_WITH_IMM)) {
		ret = qrdma_write_inline(payload, wr,
					 min_t(u32, qp->cap.max_inline_data,
					       QRDMA_SQ_HDR_INLINE_LEN_MASK >>
						QRDMA_SQ_HDR_INLINE_LEN_SHIFT),
					 &inline_len);
		if (ret)
			return ret;
		*hdr = QRDMA_SQ_HDR_INLINE |
		       (u64)inline_len << QRDMA_SQ_HDR_INLINE_LEN_SHIFT;
	} else if (op == QRDMA_SQ_OP_LOCAL_INV || op == QRDMA_SQ_OP_FAST_REG) {
		*hdr = 0;	/* local operations move no data */
	} else {
		qrdma_write_sges(payload, wr->sg_list, wr->num_sge);
		*hdr = (u64)wr->num_sge << QRDMA_SQ_HDR_NUM_SGE_SHIFT;
	}
	/* qwords 0..6 now; the header qword after the barrier. */
	memcpy(slot, &h, offsetof(struct qrdma_sq_wqe_hdr, hdr));

	*hdr |= op;
	if ((wr->send_flags & IB_SEND_SIGNALED) || qp->sq_sig_type == IB_SIGNAL_ALL_WR)
		*hdr |= QRDMA_SQ_HDR_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		*hdr |= QRDMA_SQ_HDR_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		*hdr |= QRDMA_SQ_HDR_READ_FENCE;
	return 0;
}

int qrdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct qrdma_dev *dev = to_qdev(ibqp->device);
	struct qrdma_qp *qp = to_qqp(ibqp);
	struct qrdma_kwq *sq = &qp->ksq;
	unsigned long flags;
	u32 posted = 0;
	int ret = 0;

	if (qp->user || !sq->wr_id) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&sq->lock, flags);
	/* IB: sends before RTS are an immediate error. */
	switch (READ_ONCE(qp->state)) {
	case IB_QPS_RESET:
	case IB_QPS_INIT:
	case IB_QPS_RTR:
		ret = -EINVAL;
		break;
	default:
		break;
	}
	for (; wr && !ret; wr = wr->next) {
		u32 slot_idx = sq->head & ((1u << sq->size_log2) - 1);
		void *slot;
		u64 hdr;
		u8 wc_op;

		if (qrdma_kwq_full(sq)) {
			ret = -ENOMEM;
			break;
		}
		slot = qrdma_kwq_slot(sq, &qp->sq);
		ret = qrdma_write_send_wqe(dev, qp, wr, slot, &hdr, &wc_op);
		if (ret)
			break;
		sq->wr_id[slot_idx] = wr->wr_id;
		sq->wc_opcode[slot_idx] = wc_op;
		if (qrdma_kwq_polarity(sq))
			hdr |= QRDMA_SQ_HDR_VALID;
		/* Body (and fast-register PBLEs) before the qword that makes it valid. */
		dma_wmb();
		WRITE_ONCE(((struct qrdma_sq_wqe_hdr *)slot)->hdr, cpu_to_le64(hdr));
		sq->head++;
		posted++;
	}
	/* writel orders the WQEs before the doorbell. */
	if (posted)
		writel(qp->id, dev->db_kernel + QRDMA_DB_SQ);
	spin_unlock_irqrestore(&sq->lock, flags);
	if (ret)
		*bad_wr = wr;
	return ret;
}

/* One receive WQE (RQ or SRQ): SGEs, barrier, header with VALID. */
static void qrdma_write_recv_wqe(void *slot, const struct ib_recv_wr *wr, bool valid)
{
	struct qrdma_rq_wqe_hdr *h = slot;

	qrdma_write_sges(slot + QRDMA_RQ_WQE_HDR_BYTES, wr->sg_list, wr->num_sge);
	h->reserved = 0;
	dma_wmb();
	WRITE_ONCE(h->hdr, cpu_to_le64((u64)wr->num_sge | (valid ? QRDMA_RQ_HDR_VALID : 0)));
}

int qrdma_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct qrdma_dev *dev = to_qdev(ibqp->device);
	struct qrdma_qp *qp = to_qqp(ibqp);
	struct qrdma_kwq *rq = &qp->krq;
	unsigned long flags;
	u32 posted = 0;
	int ret = 0;

	if (qp->user || ibqp->srq || !rq->wr_id) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&rq->lock, flags);
	if (READ_ONCE(qp->state) == IB_QPS_RESET)
		ret = -EINVAL;
	for (; wr && !ret; wr = wr->next) {
		if (wr->num_sge < 0 || wr->num_sge > qp->cap.max_recv_sge) {
			ret = -EINVAL;
			break;
		}
		if (qrdma_kwq_full(rq)) {
			ret = -ENOMEM;
			break;
		}
		rq->wr_id[rq->head & ((1u << rq->size_log2) - 1)] = wr->wr_id;
		qrdma_write_recv_wqe(qrdma_kwq_slot(rq, &qp->rq), wr, qrdma_kwq_polarity(rq));
		rq->head++;
		posted++;
	}
	if (posted)
		writel(qp->id, dev->db_kernel + QRDMA_DB_RQ);
	spin_unlock_irqrestore(&rq->lock, flags);
	if (ret)
		*bad_wr = wr;
	return ret;
}

/*
 * SRQ WQEs are taken by the device in ring order but complete in any
 * order (on several QPs' CQs), so a slot is reusable only once its own
 * CQE was polled (busy bit). The count of WQEs posted in the shadow area
 * tells the device how many are outstanding; there is no SRQ doorbell.
 */
int qrdma_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct qrdma_srq *srq = to_qsrq(ibsrq);
	__le64 *shadow = srq->shadow.va;
	u32 mask = (1u << srq->size_log2) - 1;
	unsigned long flags;
	u32 posted = 0;
	int ret = 0;

	if (srq->user || !srq->wr_id) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&srq->lock, flags);
	for (; wr; wr = wr->next) {
		u32 i = srq->head & mask;

		if (wr->num_sge < 0 || wr->num_sge > srq->max_sge) {
			ret = -EINVAL;
			break;
		}
		if (test_bit(i, srq->busy)) {
			ret = -ENOMEM;
			break;
		}
		srq->wr_id[i] = wr->wr_id;
		__set_bit(i, srq->busy);
		qrdma_write_recv_wqe(srq->ring.va + ((size_t)i << srq->wqe_log2), wr,
				     !((srq->head >> srq->size_log2) & 1));
		srq->head++;
		posted++;
	}
	if (posted) {
		/* The WQEs are valid before the count that offers them. */
		dma_wmb();
		WRITE_ONCE(shadow[0], cpu_to_le64(srq->head));
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	if (ret)
		*bad_wr = wr;
	return ret;
}
