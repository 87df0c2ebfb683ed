// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libqrdma: the data path. Posting send, receive and SRQ WQEs (ibv_post_*
 * and the ibv_wr_* builder), polling CQs (ibv_poll_cq and ibv_cq_ex),
 * arming them, and the per-context QP table that lets a CQE find its QP.
 * Layouts and completion rules are qrdma_hw.h's "Work queues" section.
 *
 * No system call and no allocation here: WQEs go to rings in process
 * memory, doorbells are stores to the mmapped doorbell page, consumption
 * is reported through the CQ and SRQ shadow areas.
 *
 * Concurrency: each work queue has a spinlock its producers hold; each CQ
 * has one its pollers (and arming, resize) hold. What crosses between the
 * two sides is the queues' tail (producer -> poller) and head (poller ->
 * producer), and the SRQ's busy flags, all through atomics with
 * release/acquire pairing: the producer writes a slot's wr_id before it
 * publishes the WQE, the poller reads it before it gives the slot back.
 */
#include <config.h>

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ccan/array_size.h>
#include <util/mmio.h>
#include <util/udma_barrier.h>
#include <util/util.h>

#include "qrdma.h"

/* CQEs of a QP that was destroyed or reset are renamed to this QP, which RoCE never has. */
#define QRDMA_CQE_QP_FORGOTTEN	0u

/* ---- Words the device shares ---------------------------------------------- */

/* One untorn 64-bit store: the device may read the word at any moment. */
static inline void qrdma_store_qword(__le64 *p, uint64_t v)
{
	__atomic_store_n((uint64_t *)p, htole64(v), __ATOMIC_RELAXED);
}

static inline uint64_t qrdma_load_qword(const __le64 *p)
{
	return le64toh(__atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED));
}

/* VALID of entry number t of a 2^size_log2 ring: 1 on even laps, 0 on odd. */
static inline uint64_t qrdma_valid(uint32_t t, uint8_t size_log2, uint64_t valid_bit)
{
	return (t >> size_log2) & 1 ? 0 : valid_bit;
}

static inline uint32_t qrdma_wq_mask(const struct qrdma_wq *wq)
{
	return (1u << wq->size_log2) - 1;
}

static inline void *qrdma_wq_slot(const struct qrdma_wq *wq, uint32_t t)
{
	return (uint8_t *)wq->ring.va + ((size_t)(t & qrdma_wq_mask(wq)) << wq->wqe_log2);
}

/* Called with wq->lock held: tail is ours, head the pollers'. */
static inline bool qrdma_wq_full(struct qrdma_wq *wq)
{
	return wq->tail - __atomic_load_n(&wq->head, __ATOMIC_ACQUIRE) >= wq->max_wr;
}

static inline void qrdma_wq_set_tail(struct qrdma_wq *wq, uint32_t tail)
{
	__atomic_store_n(&wq->tail, tail, __ATOMIC_RELEASE);
}

static void qrdma_write_sges(struct qrdma_sge *dst, const struct ibv_sge *sg, int num_sge)
{
	int i;

	for (i = 0; i < num_sge; i++) {
		dst[i].addr = htole64(sg[i].addr);
		dst[i].length = htole32(sg[i].length);
		dst[i].lkey = htole32(sg[i].lkey);
	}
}

/* ---- QP table --------------------------------------------------------------- */

static struct qrdma_qp *qrdma_qp_lookup(struct qrdma_context *ctx, uint32_t qp_id)
{
	struct qrdma_qp **leaf;

	leaf = __atomic_load_n(&ctx->qp_table[qp_id >> QRDMA_QP_TABLE_LEAF_SHIFT],
			       __ATOMIC_ACQUIRE);
	if (!leaf)
		return NULL;
	return __atomic_load_n(&leaf[qp_id & (QRDMA_QP_TABLE_LEAF_SIZE - 1)], __ATOMIC_ACQUIRE);
}

int qrdma_qp_table_insert(struct qrdma_context *ctx, struct qrdma_qp *qp)
{
	uint32_t top = qp->qp_id >> QRDMA_QP_TABLE_LEAF_SHIFT;
	uint32_t low = qp->qp_id & (QRDMA_QP_TABLE_LEAF_SIZE - 1);
	struct qrdma_qp **leaf;
	int ret = 0;

	if (qp->qp_id > QRDMA_OBJ_ID_MASK || qp->qp_id == QRDMA_CQE_QP_FORGOTTEN)
		return EPROTO;
	pthread_mutex_lock(&ctx->qp_table_mutex);
	leaf = ctx->qp_table[top];
	if (!leaf) {
		leaf = calloc(QRDMA_QP_TABLE_LEAF_SIZE, sizeof(*leaf));
		if (!leaf) {
			ret = ENOMEM;
			goto out;
		}
		__atomic_store_n(&ctx->qp_table[top], leaf, __ATOMIC_RELEASE);
	}
	if (leaf[low]) {
		ret = EEXIST;
		goto out;
	}
	__atomic_store_n(&leaf[low], qp, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&ctx->qp_table_mutex);
	return ret;
}

static void qrdma_qp_table_remove(struct qrdma_context *ctx, struct qrdma_qp *qp)
{
	struct qrdma_qp **leaf;

	pthread_mutex_lock(&ctx->qp_table_mutex);
	leaf = ctx->qp_table[qp->qp_id >> QRDMA_QP_TABLE_LEAF_SHIFT];
	if (leaf && leaf[qp->qp_id & (QRDMA_QP_TABLE_LEAF_SIZE - 1)] == qp)
		__atomic_store_n(&leaf[qp->qp_id & (QRDMA_QP_TABLE_LEAF_SIZE - 1)], NULL,
				 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctx->qp_table_mutex);
}

/* ---- Send queue: one WQE writer for ibv_post_send and ibv_wr_* -------------- */

enum qrdma_sq_payload {
	QRDMA_PAYLOAD_NONE,	/* LOCAL_INV, BIND_MW */
	QRDMA_PAYLOAD_DATA,	/* SGEs or inline data */
	QRDMA_PAYLOAD_SGES,	/* SGEs only: RDMA READ writes into them */
	QRDMA_PAYLOAD_ATOMIC,	/* one SGE of 8 bytes for the original value */
};

#define QRDMA_OP_RC	(1u << 0)
#define QRDMA_OP_UD	(1u << 1)
#define QRDMA_OP_UC	(1u << 2)	/* IBTA: SEND and WRITE, no READ or atomics */

struct qrdma_sq_op {
	uint8_t supported;
	uint8_t hw_opcode;	/* enum qrdma_sq_opcode */
	uint8_t wc_opcode;	/* enum ibv_wc_opcode */
	uint8_t qp_types;	/* QRDMA_OP_* */
	uint8_t payload;	/* enum qrdma_sq_payload */
};

/* Indexed by enum ibv_wr_opcode. */
static const struct qrdma_sq_op qrdma_sq_ops[] = {
	[IBV_WR_RDMA_WRITE] = { 1, QRDMA_SQ_OP_RDMA_WRITE, IBV_WC_RDMA_WRITE,
				QRDMA_OP_RC | QRDMA_OP_UC, QRDMA_PAYLOAD_DATA },
	[IBV_WR_RDMA_WRITE_WITH_IMM] = { 1, QRDMA_SQ_OP_RDMA_WRITE_WITH_IMM, IBV_WC_RDMA_WRITE,
					 QRDMA_OP_RC | QRDMA_OP_UC, QRDMA_PAYLOAD_DATA },
	[IBV_WR_SEND] = { 1, QRDMA_SQ_OP_SEND, IBV_WC_SEND,
			  QRDMA_OP_RC | QRDMA_OP_UC | QRDMA_OP_UD, QRDMA_PAYLOAD_DATA },
	[IBV_WR_SEND_WITH_IMM] = { 1, QRDMA_SQ_OP_SEND_WITH_IMM, IBV_WC_SEND,
				   QRDMA_OP_RC | QRDMA_OP_UC | QRDMA_OP_UD, QRDMA_PAYLOAD_DATA },
	[IBV_WR_RDMA_READ] = { 1, QRDMA_SQ_OP_RDMA_READ, IBV_WC_RDMA_READ, QRDMA_OP_RC,
			       QRDMA_PAYLOAD_SGES },
	[IBV_WR_ATOMIC_CMP_AND_SWP] = { 1, QRDMA_SQ_OP_ATOMIC_CMP_AND_SWP, IBV_WC_COMP_SWAP,
					QRDMA_OP_RC, QRDMA_PAYLOAD_ATOMIC },
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = { 1, QRDMA_SQ_OP_ATOMIC_FETCH_AND_ADD, IBV_WC_FETCH_ADD,
					  QRDMA_OP_RC, QRDMA_PAYLOAD_ATOMIC },
	[IBV_WR_LOCAL_INV] = { 1, QRDMA_SQ_OP_LOCAL_INV, IBV_WC_LOCAL_INV,
			       QRDMA_OP_RC | QRDMA_OP_UC, QRDMA_PAYLOAD_NONE },
	[IBV_WR_SEND_WITH_INV] = { 1, QRDMA_SQ_OP_SEND_WITH_INV, IBV_WC_SEND, QRDMA_OP_RC,
				   QRDMA_PAYLOAD_DATA },
	/* Interface 0.8: the device checks the window, the MR and the rights when it runs. */
	[IBV_WR_BIND_MW] = { 1, QRDMA_SQ_OP_BIND_MW, IBV_WC_BIND_MW, QRDMA_OP_RC | QRDMA_OP_UC,
			     QRDMA_PAYLOAD_NONE },
};

/* The ibv_wr_* entry points each opcode needs, for create_qp's send_ops_flags. */
#define QRDMA_SEND_OPS_UD (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define QRDMA_SEND_OPS_UC                                                               \
	(QRDMA_SEND_OPS_UD | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
	 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)
#define QRDMA_SEND_OPS_RC                                                               \
	(QRDMA_SEND_OPS_UD | IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE |  \
	 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |                 \
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |        \
	 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)

static const struct qrdma_sq_op *qrdma_sq_op(const struct qrdma_qp *qp, enum ibv_wr_opcode opcode)
{
	const struct qrdma_sq_op *op;
	unsigned int type;

	switch (qp->vqp.qp.qp_type) {
	case IBV_QPT_UD:
		type = QRDMA_OP_UD;
		break;
	case IBV_QPT_UC:
		type = QRDMA_OP_UC;
		break;
	default:
		type = QRDMA_OP_RC;
		break;
	}

	if ((unsigned int)opcode >= ARRAY_SIZE(qrdma_sq_ops))
		return NULL;
	op = &qrdma_sq_ops[opcode];
	return op->supported && (op->qp_types & type) ? op : NULL;
}

/*
 * Claims the SQ slot at tail for a WQE of @op: zeroes header qwords 0..6
 * (the caller writes those its opcode uses), records wr_id beside the ring
 * and returns qword 7 without NUM_SGE, INLINE and VALID.
 */
static struct qrdma_sq_wqe_hdr *qrdma_sq_begin(struct qrdma_qp *qp, const struct qrdma_sq_op *op,
					       uint64_t wr_id, unsigned int send_flags,
					       uint64_t *hdr)
{
	struct qrdma_sq_wqe_hdr *wqe = qrdma_wq_slot(&qp->sq, qp->sq.tail);
	struct qrdma_sq_wrid *wrid = &qp->sq_wrid[qp->sq.tail & qrdma_wq_mask(&qp->sq)];
	bool signaled = qp->sq_sig_all || (send_flags & IBV_SEND_SIGNALED);

	wqe->remote_addr = 0;
	wqe->rkey_imm = 0;
	wqe->compare_add = 0;
	wqe->swap = 0;
	wqe->ud_dest = 0;
	wqe->ud_qkey = 0;
	wqe->fbo = 0;

	wrid->wr_id = wr_id;
	wrid->wc_opcode = op->wc_opcode;
	wrid->signaled = signaled;

	*hdr = op->hw_opcode;
	if (signaled)
		*hdr |= QRDMA_SQ_HDR_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		*hdr |= QRDMA_SQ_HDR_SOLICITED;
	/* IB's fence waits for earlier RDMA READs and atomics: the READ_FENCE bit. */
	if (send_flags & IBV_SEND_FENCE)
		*hdr |= QRDMA_SQ_HDR_READ_FENCE;
	return wqe;
}

static inline void qrdma_wqe_rdma(struct qrdma_sq_wqe_hdr *wqe, uint32_t rkey, uint64_t addr)
{
	wqe->remote_addr = htole64(addr);
	wqe->rkey_imm = htole64(rkey);
}

/* imm_data and invalidate keys travel as the 32-bit value of the verbs structs. */
static inline void qrdma_wqe_imm(struct qrdma_sq_wqe_hdr *wqe, uint32_t imm_or_key)
{
	wqe->rkey_imm = htole64((le64toh(wqe->rkey_imm) & QRDMA_SQ_RKEY_MASK) |
				(uint64_t)imm_or_key << QRDMA_SQ_IMM_SHIFT);
}

/*
 * BIND_MW (docs/hw-spec.md 18.4): the window's STag now and the one it
 * gets, the MR (none when a type 1 window is unbound), range and rights.
 */
static inline void qrdma_wqe_bind(struct qrdma_sq_wqe_hdr *wqe, const struct ibv_mw *mw,
				  uint32_t new_rkey, const struct ibv_mw_bind_info *bind)
{
	uint32_t mr_stag = bind->mr && bind->length ? bind->mr->lkey : 0;

	wqe->remote_addr = htole64(bind->addr);
	wqe->rkey_imm = htole64((new_rkey & QRDMA_SQ_MW_NEW_STAG_MASK) |
				(uint64_t)mr_stag << QRDMA_SQ_MW_MR_STAG_SHIFT);
	wqe->compare_add = htole64(bind->length);
	wqe->ud_dest = htole64((mw->rkey & QRDMA_SQ_MW_STAG_MASK) |
			       (((uint64_t)bind->mw_access_flags << QRDMA_SQ_MW_ACCESS_SHIFT) &
				QRDMA_SQ_MW_ACCESS_MASK));
}

static inline void qrdma_wqe_atomic(struct qrdma_sq_wqe_hdr *wqe, uint64_t compare_add,
				    uint64_t swap)
{
	wqe->compare_add = htole64(compare_add);
	wqe->swap = htole64(swap);
}

static inline void qrdma_wqe_ud(struct qrdma_sq_wqe_hdr *wqe, struct ibv_ah *ah,
				uint32_t remote_qpn, uint32_t remote_qkey)
{
	wqe->ud_dest = htole64((remote_qpn & QRDMA_SQ_UD_QPN_MASK) |
			       (((uint64_t)to_qah(ah)->ah_id << QRDMA_SQ_UD_AH_SHIFT) &
				QRDMA_SQ_UD_AH_MASK));
	wqe->ud_qkey = htole64(remote_qkey);
}

static inline uint64_t qrdma_hdr_inline(uint64_t hdr, uint32_t len)
{
	hdr &= ~(QRDMA_SQ_HDR_NUM_SGE_MASK | QRDMA_SQ_HDR_INLINE_LEN_MASK);
	return hdr | QRDMA_SQ_HDR_INLINE | ((uint64_t)len << QRDMA_SQ_HDR_INLINE_LEN_SHIFT);
}

static inline uint64_t qrdma_hdr_sges(uint64_t hdr, uint32_t num_sge)
{
	hdr &= ~(QRDMA_SQ_HDR_NUM_SGE_MASK | QRDMA_SQ_HDR_INLINE_LEN_MASK | QRDMA_SQ_HDR_INLINE);
	return hdr | ((uint64_t)num_sge << QRDMA_SQ_HDR_NUM_SGE_SHIFT);
}

/* The device rings: after the WQEs are in memory (uncached doorbell page, cached rings). */
static inline void qrdma_ring_doorbell(void *db, uint32_t qp_id)
{
	udma_to_device_barrier();
	mmio_write32_le(db, htole32(qp_id));
}

/* Everything a send WR must satisfy before its WQE is written. */
static int qrdma_send_wr_check(const struct qrdma_qp *qp, const struct ibv_send_wr *wr,
			       const struct qrdma_sq_op **opp)
{
	const struct qrdma_sq_op *op = qrdma_sq_op(qp, wr->opcode);
	bool is_inline = wr->send_flags & IBV_SEND_INLINE;
	uint64_t bytes = 0;
	int i;

	if (!op || wr->num_sge < 0)
		return EINVAL;
	switch (op->payload) {
	case QRDMA_PAYLOAD_DATA:
		if (is_inline) {
			for (i = 0; i < wr->num_sge; i++)
				bytes += wr->sg_list[i].length;
			if (bytes > qp->cap.max_inline_data)
				return EINVAL;
			break;
		}
		/* fallthrough */
	case QRDMA_PAYLOAD_SGES:
		if (is_inline || (uint32_t)wr->num_sge > qp->cap.max_send_sge)
			return EINVAL;
		break;
	case QRDMA_PAYLOAD_ATOMIC:
		/* IB atomics return the 8-byte original value into one local buffer. */
		if (is_inline || wr->num_sge != 1 || wr->sg_list[0].length != 8)
			return EINVAL;
		break;
	case QRDMA_PAYLOAD_NONE:
		if (is_inline)
			return EINVAL;
		break;
	}
	if (qp->vqp.qp.qp_type == IBV_QPT_UD && !wr->wr.ud.ah)
		return EINVAL;
	/* A window binds to an MR's range: no MR only when a type 1 window is unbound. */
	if (wr->opcode == IBV_WR_BIND_MW &&
	    (!wr->bind_mw.mw || (!wr->bind_mw.bind_info.mr && wr->bind_mw.bind_info.length)))
		return EINVAL;
	*opp = op;
	return 0;
}

static void qrdma_copy_inline(uint8_t *dst, const struct ibv_sge *sg, int num_sge)
{
	int i;

	for (i = 0; i < num_sge; i++) {
		memcpy(dst, (const void *)(uintptr_t)sg[i].addr, sg[i].length);
		dst += sg[i].length;
	}
}

/* One send WR into the SQ slot at tail, published (VALID) but not rung. */
static int qrdma_post_send_one(struct qrdma_qp *qp, const struct ibv_send_wr *wr)
{
	const struct qrdma_sq_op *op;
	struct qrdma_sq_wqe_hdr *wqe;
	uint32_t t = qp->sq.tail;
	uint64_t hdr;
	int ret, i;

	ret = qrdma_send_wr_check(qp, wr, &op);
	if (ret)
		return ret;
	if (qrdma_wq_full(&qp->sq))
		return ENOMEM;

	wqe = qrdma_sq_begin(qp, op, wr->wr_id, wr->send_flags, &hdr);
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_READ:
		qrdma_wqe_rdma(wqe, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		qrdma_wqe_rdma(wqe, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
		qrdma_wqe_imm(wqe, (uint32_t)wr->imm_data);
		break;
	case IBV_WR_SEND_WITH_IMM:
		qrdma_wqe_imm(wqe, (uint32_t)wr->imm_data);
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		qrdma_wqe_imm(wqe, wr->invalidate_rkey);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		qrdma_wqe_rdma(wqe, wr->wr.atomic.rkey, wr->wr.atomic.remote_addr);
		qrdma_wqe_atomic(wqe, wr->wr.atomic.compare_add, wr->wr.atomic.swap);
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		qrdma_wqe_rdma(wqe, wr->wr.atomic.rkey, wr->wr.atomic.remote_addr);
		qrdma_wqe_atomic(wqe, wr->wr.atomic.compare_add, 0);
		break;
	case IBV_WR_BIND_MW:
		qrdma_wqe_bind(wqe, wr->bind_mw.mw, wr->bind_mw.rkey, &wr->bind_mw.bind_info);
		break;
	default:
		break;
	}
	if (qp->vqp.qp.qp_type == IBV_QPT_UD)
		qrdma_wqe_ud(wqe, wr->wr.ud.ah, wr->wr.ud.remote_qpn, wr->wr.ud.remote_qkey);

	if (op->payload == QRDMA_PAYLOAD_NONE) {
		hdr = qrdma_hdr_sges(hdr, 0);
	} else if (wr->send_flags & IBV_SEND_INLINE) {
		uint32_t len = 0;

		for (i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		qrdma_copy_inline((uint8_t *)(wqe + 1), wr->sg_list, wr->num_sge);
		hdr = qrdma_hdr_inline(hdr, len);
	} else {
		qrdma_write_sges((struct qrdma_sge *)(wqe + 1), wr->sg_list, wr->num_sge);
		hdr = qrdma_hdr_sges(hdr, wr->num_sge);
	}

	/* A poller may see this WQE's CQE only after it sees the new tail. */
	qrdma_wq_set_tail(&qp->sq, t + 1);
	/* The device fetches the WQE once VALID matches its lap: the body first. */
	udma_to_device_barrier();
	qrdma_store_qword(&wqe->hdr, hdr | qrdma_valid(t, qp->sq.size_log2, QRDMA_SQ_HDR_VALID));
	return 0;
}

/*
 * IB: a send WR posted before RTS, or a receive WR posted in RESET, is an
 * immediate error (IBTA 10.8.2), as in the kernel driver (qrdma_post.c).
 * libibverbs keeps ibqp->state as the last modify set it; states the device
 * moves the QP to by itself (ERR, SQE) take WRs and flush them.
 */
static inline bool qrdma_sq_postable(const struct ibv_qp *ibqp)
{
	switch (ibqp->state) {
	case IBV_QPS_RESET:
	case IBV_QPS_INIT:
	case IBV_QPS_RTR:
		return false;
	default:
		return true;
	}
}

int qrdma_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct qrdma_qp *qp = to_qqp(ibqp);
	unsigned int posted = 0;
	int ret = 0;

	if (!qrdma_sq_postable(ibqp)) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->sq.lock);
	for (; wr; wr = wr->next, posted++) {
		ret = qrdma_post_send_one(qp, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
	}
	if (posted)
		qrdma_ring_doorbell(qp->db_sq, qp->qp_id);
	pthread_spin_unlock(&qp->sq.lock);
	return ret;
}

/* ---- ibv_wr_*: the same WQEs, built in pieces ------------------------------ */

/*
 * WQEs of a batch stay invisible to the device until wr_complete: each
 * one's qword 7 is written with last lap's VALID polarity (what the slot
 * already held), and wr_complete flips them all after one barrier. So
 * wr_abort, or an error anywhere in the batch, only has to move the tail
 * back.
 */
static inline struct qrdma_qp *qpx_to_qqp(struct ibv_qp_ex *qpx)
{
	return to_qqp(&qpx->qp_base);
}

static void qrdma_wr_close(struct qrdma_qp *qp)
{
	struct qrdma_sq_wqe_hdr *wqe = qp->wr.wqe;
	uint32_t t = qp->sq.tail - 1;	/* the slot wr_begin claimed */

	if (!wqe)
		return;
	qp->wr.wqe = NULL;
	if (qp->wr.payload == QRDMA_PAYLOAD_ATOMIC) {
		const struct qrdma_sge *sge = (const struct qrdma_sge *)(wqe + 1);

		if ((qp->wr.hdr & (QRDMA_SQ_HDR_INLINE | QRDMA_SQ_HDR_NUM_SGE_MASK)) !=
			    (1ULL << QRDMA_SQ_HDR_NUM_SGE_SHIFT) ||
		    le32toh(sge->length) != 8) {
			qp->wr.err = EINVAL;
			return;
		}
	}
	qrdma_store_qword(&wqe->hdr, qp->wr.hdr |
			  (qrdma_valid(t, qp->sq.size_log2, QRDMA_SQ_HDR_VALID) ^ QRDMA_SQ_HDR_VALID));
}

static struct qrdma_sq_wqe_hdr *qrdma_wr_begin(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode)
{
	struct qrdma_qp *qp = qpx_to_qqp(qpx);
	const struct qrdma_sq_op *op = qrdma_sq_op(qp, opcode);
	struct qrdma_sq_wqe_hdr *wqe;

	qrdma_wr_close(qp);
	if (qp->wr.err)
		return NULL;
	if (!op) {
		qp->wr.err = EINVAL;
		return NULL;
	}
	if (qrdma_wq_full(&qp->sq)) {
		qp->wr.err = ENOMEM;
		return NULL;
	}
	wqe = qrdma_sq_begin(qp, op, qpx->wr_id, qpx->wr_flags, &qp->wr.hdr);
	qp->wr.hdr = qrdma_hdr_sges(qp->wr.hdr, 0);
	qp->wr.payload = op->payload;
	qp->wr.wqe = wqe;
	qrdma_wq_set_tail(&qp->sq, qp->sq.tail + 1);
	return wqe;
}

static void qrdma_wr_start(struct ibv_qp_ex *qpx)
{
	struct qrdma_qp *qp = qpx_to_qqp(qpx);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr.start = qp->sq.tail;
	/* Before RTS the whole batch fails at wr_complete, posting nothing. */
	qp->wr.err = qrdma_sq_postable(&qpx->qp_base) ? 0 : EINVAL;
	qp->wr.wqe = NULL;
}

static void qrdma_wr_rewind(struct qrdma_qp *qp)
{
	qp->wr.wqe = NULL;
	qp->wr.err = 0;
	qrdma_wq_set_tail(&qp->sq, qp->wr.start);
}

static int qrdma_wr_complete(struct ibv_qp_ex *qpx)
{
	struct qrdma_qp *qp = qpx_to_qqp(qpx);
	uint32_t t, tail;
	int ret;

	qrdma_wr_close(qp);
	ret = qp->wr.err;
	if (ret) {
		qrdma_wr_rewind(qp);
		pthread_spin_unlock(&qp->sq.lock);
		return ret;
	}
	tail = qp->sq.tail;
	if (tail != qp->wr.start) {
		/* Every body and header before the first VALID flips. */
		udma_to_device_barrier();
		for (t = qp->wr.start; t != tail; t++) {
			struct qrdma_sq_wqe_hdr *wqe = qrdma_wq_slot(&qp->sq, t);
			uint64_t hdr = qrdma_load_qword(&wqe->hdr) & ~QRDMA_SQ_HDR_VALID;

			qrdma_store_qword(&wqe->hdr, hdr | qrdma_valid(t, qp->sq.size_log2,
								       QRDMA_SQ_HDR_VALID));
		}
		qrdma_ring_doorbell(qp->db_sq, qp->qp_id);
	}
	pthread_spin_unlock(&qp->sq.lock);
	return 0;
}

static void qrdma_wr_abort(struct ibv_qp_ex *qpx)
{
	struct qrdma_qp *qp = qpx_to_qqp(qpx);

	qrdma_wr_rewind(qp);
	pthread_spin_unlock(&qp->sq.lock);
}

static void qrdma_wr_send(struct ibv_qp_ex *qpx)
{
	qrdma_wr_begin(qpx, IBV_WR_SEND);
}

static void qrdma_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct qrdma_sq_wqe_hdr *wqe = qrdma_wr_begin(qpx, IBV_WR_SEND_WITH_IMM);

	if (wqe)
		qrdma_wqe_imm(wqe, (uint32_t)imm_data);
}

static void qrdma_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct qrdma_sq_wqe_hdr *wqe = qrdma_wr_begin(qpx, IBV_WR_SEND_WITH_INV);

	if (wqe)
		qrdma_wqe_imm(wqe, invalidate_rkey);
}

static void qrdma_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct qrdma_sq_wqe_hdr *wqe = qrdma_wr_begin(qpx, IBV_WR_LOCAL_INV);

	if (wqe)
		qrdma_wqe_imm(wqe, invalidate_rkey);
}

static void qrdma_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
			     const struct ibv_mw_bind_info *bind_info)
{
	struct qrdma_qp *qp = qpx_to_qqp(qpx);
	struct qrdma_sq_wqe_hdr *wqe;

	if (!mw || (!bind_info->mr && bind_info->length)) {
		qrdma_wr_close(qp);
		if (!qp->wr.err)
			qp->wr.err = EINVAL;
		return;
	}
	wqe = qrdma_wr_begin(qpx, IBV_WR_BIND_MW);
	if (wqe)
		qrdma_wqe_bind(wqe, mw, rkey, bind_info);
}

static void qrdma_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	struct qrdma_sq_wqe_hdr *wqe = qrdma_wr_begin(qpx, IBV_WR_RDMA_WRITE);

	if (wqe)
		qrdma_wqe_rdma(wqe, rkey, remote_addr);
}

static void qrdma_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
				    __be32 imm_data)
{
	struct qrdma_sq_wqe_hdr *wqe = qrdma_wr_begin(qpx, IBV_WR_RDMA_WRITE_WITH_IMM);

	if (!wqe)
		return;
	qrdma_wqe_rdma(wqe, rkey, remote_addr);
	qrdma_wqe_imm(wqe, (uint32_t)imm_data);
}

static void qrdma_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	struct qrdma_sq_wqe_hdr *wqe = qrdma_wr_begin(qpx, IBV_WR_RDMA_READ);

	if (wqe)
		qrdma_wqe_rdma(wqe, rkey, remote_addr);
}

static void qrdma_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
				    uint64_t compare, uint64_t swap)
{
	struct qrdma_sq_wqe_hdr *wqe = qrdma_wr_begin(qpx, IBV_WR_ATOMIC_CMP_AND_SWP);

	if (!wqe)
		return;
	qrdma_wqe_rdma(wqe, rkey, remote_addr);
	qrdma_wqe_atomic(wqe, compare, swap);
}

static void qrdma_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
				      uint64_t add)
{
	struct qrdma_sq_wqe_hdr *wqe = qrdma_wr_begin(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD);

	if (!wqe)
		return;
	qrdma_wqe_rdma(wqe, rkey, remote_addr);
	qrdma_wqe_atomic(wqe, add, 0);
}

static void qrdma_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t remote_qpn,
				 uint32_t remote_qkey)
{
	struct qrdma_qp *qp = qpx_to_qqp(qpx);

	if (!qp->wr.wqe)
		return;
	if (qp->vqp.qp.qp_type != IBV_QPT_UD || !ah) {
		qp->wr.err = EINVAL;
		return;
	}
	qrdma_wqe_ud(qp->wr.wqe, ah, remote_qpn, remote_qkey);
}

static void qrdma_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				  const struct ibv_sge *sg_list)
{
	struct qrdma_qp *qp = qpx_to_qqp(qpx);

	if (!qp->wr.wqe)
		return;
	if (qp->wr.payload == QRDMA_PAYLOAD_NONE || num_sge > qp->cap.max_send_sge) {
		qp->wr.err = EINVAL;
		return;
	}
	qrdma_write_sges((struct qrdma_sge *)(qp->wr.wqe + 1), sg_list, (int)num_sge);
	qp->wr.hdr = qrdma_hdr_sges(qp->wr.hdr, num_sge);
}

static void qrdma_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	qrdma_wr_set_sge_list(qpx, 1, &sge);
}

static void qrdma_wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
					  const struct ibv_data_buf *buf_list)
{
	struct qrdma_qp *qp = qpx_to_qqp(qpx);
	uint8_t *dst;
	size_t bytes = 0, i;

	if (!qp->wr.wqe)
		return;
	for (i = 0; i < num_buf; i++)
		bytes += buf_list[i].length;
	if (qp->wr.payload != QRDMA_PAYLOAD_DATA || bytes > qp->cap.max_inline_data) {
		qp->wr.err = EINVAL;
		return;
	}
	dst = (uint8_t *)(qp->wr.wqe + 1);
	for (i = 0; i < num_buf; i++) {
		memcpy(dst, buf_list[i].addr, buf_list[i].length);
		dst += buf_list[i].length;
	}
	qp->wr.hdr = qrdma_hdr_inline(qp->wr.hdr, bytes);
}

static void qrdma_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	qrdma_wr_set_inline_data_list(qpx, 1, &buf);
}

int qrdma_qp_send_ops_check(enum ibv_qp_type type, uint64_t send_ops_flags)
{
	uint64_t supported = type == IBV_QPT_UD ? QRDMA_SEND_OPS_UD :
			     type == IBV_QPT_UC ? QRDMA_SEND_OPS_UC : QRDMA_SEND_OPS_RC;

	return send_ops_flags & ~supported ? EOPNOTSUPP : 0;
}

void qrdma_qp_set_send_ops(struct qrdma_qp *qp, uint64_t flags)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;

	if (flags & IBV_QP_EX_WITH_SEND)
		qpx->wr_send = qrdma_wr_send;
	if (flags & IBV_QP_EX_WITH_SEND_WITH_IMM)
		qpx->wr_send_imm = qrdma_wr_send_imm;
	if (flags & IBV_QP_EX_WITH_SEND_WITH_INV)
		qpx->wr_send_inv = qrdma_wr_send_inv;
	if (flags & IBV_QP_EX_WITH_RDMA_WRITE)
		qpx->wr_rdma_write = qrdma_wr_rdma_write;
	if (flags & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		qpx->wr_rdma_write_imm = qrdma_wr_rdma_write_imm;
	if (flags & IBV_QP_EX_WITH_RDMA_READ)
		qpx->wr_rdma_read = qrdma_wr_rdma_read;
	if (flags & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		qpx->wr_atomic_cmp_swp = qrdma_wr_atomic_cmp_swp;
	if (flags & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		qpx->wr_atomic_fetch_add = qrdma_wr_atomic_fetch_add;
	if (flags & IBV_QP_EX_WITH_LOCAL_INV)
		qpx->wr_local_inv = qrdma_wr_local_inv;
	if (flags & IBV_QP_EX_WITH_BIND_MW)
		qpx->wr_bind_mw = qrdma_wr_bind_mw;

	qpx->wr_set_sge = qrdma_wr_set_sge;
	qpx->wr_set_sge_list = qrdma_wr_set_sge_list;
	qpx->wr_set_inline_data = qrdma_wr_set_inline_data;
	qpx->wr_set_inline_data_list = qrdma_wr_set_inline_data_list;
	if (qp->vqp.qp.qp_type == IBV_QPT_UD)
		qpx->wr_set_ud_addr = qrdma_wr_set_ud_addr;
	qpx->wr_start = qrdma_wr_start;
	qpx->wr_complete = qrdma_wr_complete;
	qpx->wr_abort = qrdma_wr_abort;
	qp->vqp.comp_mask |= VERBS_QP_EX;
}

/* ---- Receive queues ---------------------------------------------------------- */

/* RQ and SRQ WQEs: SGEs and qword 0, then (after a barrier) qword 1 with VALID. */
static void qrdma_recv_wqe_write(struct qrdma_wq *wq, uint32_t t, const struct ibv_recv_wr *wr)
{
	struct qrdma_rq_wqe_hdr *wqe = qrdma_wq_slot(wq, t);

	qrdma_write_sges((struct qrdma_sge *)(wqe + 1), wr->sg_list, wr->num_sge);
	wqe->reserved = 0;
	udma_to_device_barrier();
	qrdma_store_qword(&wqe->hdr, ((uint64_t)wr->num_sge & QRDMA_RQ_HDR_NUM_SGE_MASK) |
			  qrdma_valid(t, wq->size_log2, QRDMA_RQ_HDR_VALID));
}

int qrdma_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct qrdma_qp *qp = to_qqp(ibqp);
	struct qrdma_wq *rq = &qp->rq;
	unsigned int posted = 0;
	int ret = 0;

	if (qp->srq || ibqp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&rq->lock);
	for (; wr; wr = wr->next, posted++) {
		uint32_t t = rq->tail;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_recv_sge) {
			ret = EINVAL;
		} else if (qrdma_wq_full(rq)) {
			ret = ENOMEM;
		}
		if (ret) {
			*bad_wr = wr;
			break;
		}
		qp->rq_wrid[t & qrdma_wq_mask(rq)] = wr->wr_id;
		qrdma_wq_set_tail(rq, t + 1);
		qrdma_recv_wqe_write(rq, t, wr);
	}
	/*
	 * The device also looks for receive WQEs when a message arrives; the
	 * doorbell is what gets WQEs posted to a QP in error flushed.
	 */
	if (posted)
		qrdma_ring_doorbell(qp->db_rq, qp->qp_id);
	pthread_spin_unlock(&rq->lock);
	return ret;
}

int qrdma_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	struct qrdma_srq *srq = to_qsrq(ibsrq);
	struct qrdma_wq *wq = &srq->wq;
	unsigned int posted = 0;
	int ret = 0;

	pthread_spin_lock(&wq->lock);
	for (; wr; wr = wr->next, posted++) {
		uint32_t t = wq->tail, slot = t & qrdma_wq_mask(wq);

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > srq->max_sge) {
			ret = EINVAL;
		} else if (t - __atomic_load_n(&srq->completed, __ATOMIC_ACQUIRE) >= srq->max_wr ||
			   __atomic_load_n(&srq->busy[slot], __ATOMIC_ACQUIRE)) {
			/* The device takes WQEs in ring order: the next slot must be free. */
			ret = ENOMEM;
		}
		if (ret) {
			*bad_wr = wr;
			break;
		}
		srq->wrid[slot] = wr->wr_id;
		__atomic_store_n(&srq->busy[slot], 1, __ATOMIC_RELEASE);
		wq->tail = t + 1;
		qrdma_recv_wqe_write(wq, t, wr);
	}
	if (posted) {
		/* The device counts outstanding WQEs from the posted count: WQEs first. */
		udma_to_device_barrier();
		qrdma_store_qword((__le64 *)srq->shadow_page.va, wq->tail);
	}
	pthread_spin_unlock(&wq->lock);
	return ret;
}

/* ---- Completions ------------------------------------------------------------- */

/*
 * A CQE for slot @idx of @wq: the number of WQEs it retires (in ring order
 * every earlier outstanding WQE goes with it), or 0 if no outstanding WQE
 * sits there. Called by the queue's one CQ poller.
 */
static uint32_t qrdma_wq_retiring(struct qrdma_wq *wq, uint32_t idx)
{
	uint32_t head = wq->head;
	uint32_t outstanding = __atomic_load_n(&wq->tail, __ATOMIC_ACQUIRE) - head;
	uint32_t n = ((idx - head) & qrdma_wq_mask(wq)) + 1;

	return idx <= qrdma_wq_mask(wq) && n <= outstanding ? n : 0;
}

/* The slot goes back to the producer only after its wr_id was read. */
static inline void qrdma_wq_retire(struct qrdma_wq *wq, uint32_t n)
{
	__atomic_store_n(&wq->head, wq->head + n, __ATOMIC_RELEASE);
}

static int qrdma_srq_complete(struct qrdma_srq *srq, uint32_t idx, uint64_t *wr_id)
{
	if (idx > qrdma_wq_mask(&srq->wq) || !__atomic_load_n(&srq->busy[idx], __ATOMIC_ACQUIRE))
		return ENOENT;
	*wr_id = srq->wrid[idx];
	__atomic_store_n(&srq->busy[idx], 0, __ATOMIC_RELEASE);
	__atomic_fetch_add(&srq->completed, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Fills @wc from one CQE; ENOENT if the CQE names nothing outstanding here. */
static int qrdma_cqe_decode(struct qrdma_cq *cq, uint64_t q0, uint64_t q1, uint64_t q2,
			    struct qrdma_cqe_info *wc)
{
	uint32_t qp_id = q1 & QRDMA_CQE_QP_MASK;
	uint32_t idx = q2 & QRDMA_CQE_WQE_INDEX_MASK;
	unsigned int flags = (q2 & QRDMA_CQE_FLAGS_MASK) >> QRDMA_CQE_FLAGS_SHIFT;
	struct qrdma_qp *qp;
	uint32_t n;

	qp = qrdma_qp_lookup(cq->ctx, qp_id);
	if (!qp)
		return ENOENT;
	wc->status = (q2 & QRDMA_CQE_STATUS_MASK) >> QRDMA_CQE_STATUS_SHIFT;
	wc->opcode = (q2 & QRDMA_CQE_OPCODE_MASK) >> QRDMA_CQE_OPCODE_SHIFT;

	if (flags & QRDMA_CQE_FLAG_SQ) {
		struct qrdma_sq_wrid *wrid;

		if (qp->send_cq != cq)
			return ENOENT;
		n = qrdma_wq_retiring(&qp->sq, idx);
		if (!n)
			return ENOENT;
		wrid = &qp->sq_wrid[idx];
		wc->wr_id = wrid->wr_id;
		/* An error CQE's opcode is not defined by IB: report what was posted. */
		if (wc->status != IBV_WC_SUCCESS)
			wc->opcode = wrid->wc_opcode;
		qrdma_wq_retire(&qp->sq, n);
	} else if (flags & QRDMA_CQE_FLAG_SRQ) {
		if (!qp->srq || qp->recv_cq != cq ||
		    qrdma_srq_complete(qp->srq, idx, &wc->wr_id))
			return ENOENT;
		if (wc->status != IBV_WC_SUCCESS)
			wc->opcode = IBV_WC_RECV;
	} else {
		if (qp->srq || qp->recv_cq != cq)
			return ENOENT;
		n = qrdma_wq_retiring(&qp->rq, idx);
		if (!n)
			return ENOENT;
		wc->wr_id = qp->rq_wrid[idx];
		if (wc->status != IBV_WC_SUCCESS)
			wc->opcode = IBV_WC_RECV;
		qrdma_wq_retire(&qp->rq, n);
	}

	wc->byte_len = q0 & QRDMA_CQE_BYTE_LEN_MASK;
	wc->imm_or_inv = q0 >> QRDMA_CQE_IMM_SHIFT;
	/*
	 * The QP's number as the application knows it (CREATE_QP's QPN, the
	 * wire's), not the QP ID the CQE names it by: the two differ when the
	 * backend has its own QPNs (verbs).
	 */
	wc->qp_num = qp->vqp.qp.qp_num;
	wc->src_qp = (q1 & QRDMA_CQE_SRC_QP_MASK) >> QRDMA_CQE_SRC_QP_SHIFT;
	wc->vendor_err = (q2 & QRDMA_CQE_VENDOR_ERR_MASK) >> QRDMA_CQE_VENDOR_ERR_SHIFT;
	wc->wc_flags = 0;
	if (flags & QRDMA_CQE_FLAG_GRH)
		wc->wc_flags |= IBV_WC_GRH;
	if (flags & QRDMA_CQE_FLAG_WITH_IMM)
		wc->wc_flags |= IBV_WC_WITH_IMM;
	if (flags & QRDMA_CQE_FLAG_WITH_INV)
		wc->wc_flags |= IBV_WC_WITH_INV;
	return 0;
}

static inline __le64 *qrdma_cqe_at(const struct qrdma_cq_ring *ring, uint32_t t)
{
	return (__le64 *)((uint8_t *)ring->buf.va +
			  (size_t)(t & ((1u << ring->size_log2) - 1)) * QRDMA_CQE_SIZE);
}

/*
 * The next CQE, decoded, or ENOENT when the CQ is empty. CQEs naming no
 * QP of ours (or nothing outstanding) are consumed and counted. A ring a
 * resize left behind is read until its next entry is not VALID: the
 * device wrote all it ever will there before MODIFY_CQ completed.
 */
static int qrdma_cq_next(struct qrdma_cq *cq, struct qrdma_cqe_info *wc)
{
	for (;;) {
		struct qrdma_cq_ring *ring = cq->poll_ring;
		__le64 *cqe = qrdma_cqe_at(ring, cq->head);
		uint64_t q0, q1, q2, q3;

		q3 = qrdma_load_qword(&cqe[3]);
		if ((q3 & QRDMA_CQE_VALID) != qrdma_valid(cq->head, ring->size_log2,
							  QRDMA_CQE_VALID)) {
			if (ring == cq->dev_ring)
				return ENOENT;
			cq->poll_ring = ring->newer;
			cq->head = 0;
			cq->head_dirty = true;
			continue;
		}
		/* The body is read only after VALID was seen. */
		udma_from_device_barrier();
		q0 = qrdma_load_qword(&cqe[0]);
		q1 = qrdma_load_qword(&cqe[1]);
		q2 = qrdma_load_qword(&cqe[2]);
		cq->head++;
		cq->head_dirty = true;
		if ((q1 & QRDMA_CQE_QP_MASK) == QRDMA_CQE_QP_FORGOTTEN)
			continue;
		if (!qrdma_cqe_decode(cq, q0, q1, q2, wc))
			return 0;
		cq->stray_cqes++;
	}
}

/*
 * HEAD tells the device how far the ring it writes was read. While an old
 * ring is being drained the device's ring is unread: HEAD stays 0, as the
 * resize left it.
 */
static void qrdma_cq_publish_head(struct qrdma_cq *cq)
{
	if (!cq->head_dirty || cq->poll_ring != cq->dev_ring)
		return;
	cq->head_dirty = false;
	/* The CQEs were read before the device may overwrite them. */
	udma_to_device_barrier();
	qrdma_store_qword(&cq->shadow->head, cq->head);
}

int qrdma_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct qrdma_cq *cq = to_qcq(ibcq);
	struct qrdma_cqe_info info;
	int n;

	pthread_spin_lock(&cq->lock);
	for (n = 0; n < ne; n++) {
		if (qrdma_cq_next(cq, &info))
			break;
		wc[n] = (struct ibv_wc){
			.wr_id = info.wr_id,
			.status = info.status,
			.opcode = info.opcode,
			.vendor_err = info.vendor_err,
			.byte_len = info.byte_len,
			.imm_data = (__be32)info.imm_or_inv,
			.qp_num = info.qp_num,
			.src_qp = info.src_qp,
			.wc_flags = info.wc_flags,
		};
	}
	qrdma_cq_publish_head(cq);
	pthread_spin_unlock(&cq->lock);
	return n;
}

int qrdma_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct qrdma_cq *cq = to_qcq(ibcq);
	uint64_t arm;

	pthread_spin_lock(&cq->lock);
	cq->arm_seq++;
	arm = (cq->arm_seq & QRDMA_CQ_ARM_SEQ_MASK) |
	      (solicited_only ? QRDMA_CQ_ARM_SOLICITED : QRDMA_CQ_ARM_NEXT);
	qrdma_store_qword(&cq->shadow->arm, arm);
	/* The doorbell makes the device read ARM: ARM first. */
	udma_to_device_barrier();
	mmio_write32_le((uint8_t *)cq->ctx->db_page + QRDMA_DB_CQ_ARM, htole32(cq->cq_id));
	pthread_spin_unlock(&cq->lock);
	return 0;
}

/* ---- ibv_cq_ex ------------------------------------------------------------------ */

static inline struct qrdma_cq *cqx_to_qcq(struct ibv_cq_ex *cqx)
{
	return to_qcq(ibv_cq_ex_to_cq(cqx));
}

static int qrdma_start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
	struct qrdma_cq *cq = cqx_to_qcq(cqx);

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	if (qrdma_cq_next(cq, &cq->cur)) {
		/* ENOENT: no end_poll follows, so let go here. */
		qrdma_cq_publish_head(cq);
		pthread_spin_unlock(&cq->lock);
		return ENOENT;
	}
	cqx->wr_id = cq->cur.wr_id;
	cqx->status = cq->cur.status;
	return 0;
}

static int qrdma_next_poll(struct ibv_cq_ex *cqx)
{
	struct qrdma_cq *cq = cqx_to_qcq(cqx);

	if (qrdma_cq_next(cq, &cq->cur))
		return ENOENT;
	cqx->wr_id = cq->cur.wr_id;
	cqx->status = cq->cur.status;
	return 0;
}

static void qrdma_end_poll(struct ibv_cq_ex *cqx)
{
	struct qrdma_cq *cq = cqx_to_qcq(cqx);

	qrdma_cq_publish_head(cq);
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode qrdma_read_opcode(struct ibv_cq_ex *cqx)
{
	return cqx_to_qcq(cqx)->cur.opcode;
}

static uint32_t qrdma_read_vendor_err(struct ibv_cq_ex *cqx)
{
	return cqx_to_qcq(cqx)->cur.vendor_err;
}

static uint32_t qrdma_read_byte_len(struct ibv_cq_ex *cqx)
{
	return cqx_to_qcq(cqx)->cur.byte_len;
}

static __be32 qrdma_read_imm_data(struct ibv_cq_ex *cqx)
{
	return (__be32)cqx_to_qcq(cqx)->cur.imm_or_inv;
}

static uint32_t qrdma_read_qp_num(struct ibv_cq_ex *cqx)
{
	return cqx_to_qcq(cqx)->cur.qp_num;
}

static uint32_t qrdma_read_src_qp(struct ibv_cq_ex *cqx)
{
	return cqx_to_qcq(cqx)->cur.src_qp;
}

static unsigned int qrdma_read_wc_flags(struct ibv_cq_ex *cqx)
{
	return cqx_to_qcq(cqx)->cur.wc_flags;
}

/* RoCE: no LIDs, no SL in the CQE. */
static uint32_t qrdma_read_slid(struct ibv_cq_ex *cqx)
{
	return 0;
}

static uint8_t qrdma_read_sl(struct ibv_cq_ex *cqx)
{
	return 0;
}

static uint8_t qrdma_read_dlid_path_bits(struct ibv_cq_ex *cqx)
{
	return 0;
}

void qrdma_cq_ex_set_ops(struct qrdma_cq *cq)
{
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;

	cqx->start_poll = qrdma_start_poll;
	cqx->next_poll = qrdma_next_poll;
	cqx->end_poll = qrdma_end_poll;
	cqx->read_opcode = qrdma_read_opcode;
	cqx->read_vendor_err = qrdma_read_vendor_err;
	cqx->read_wc_flags = qrdma_read_wc_flags;
	cqx->read_byte_len = qrdma_read_byte_len;
	cqx->read_imm_data = qrdma_read_imm_data;
	cqx->read_qp_num = qrdma_read_qp_num;
	cqx->read_src_qp = qrdma_read_src_qp;
	cqx->read_slid = qrdma_read_slid;
	cqx->read_sl = qrdma_read_sl;
	cqx->read_dlid_path_bits = qrdma_read_dlid_path_bits;
}

/* ---- QP teardown and RESET -------------------------------------------------- */

/* A QP's send and receive CQs, locked in address order (pollers hold one at a time). */
static void qrdma_qp_lock_cqs(struct qrdma_qp *qp)
{
	struct qrdma_cq *a = qp->send_cq, *b = qp->recv_cq;

	if (a == b || !b) {
		if (a)
			pthread_spin_lock(&a->lock);
		return;
	}
	if (!a) {
		pthread_spin_lock(&b->lock);
		return;
	}
	if (a > b) {
		struct qrdma_cq *tmp = a;

		a = b;
		b = tmp;
	}
	pthread_spin_lock(&a->lock);
	pthread_spin_lock(&b->lock);
}

static void qrdma_qp_unlock_cqs(struct qrdma_qp *qp)
{
	if (qp->send_cq)
		pthread_spin_unlock(&qp->send_cq->lock);
	if (qp->recv_cq && qp->recv_cq != qp->send_cq)
		pthread_spin_unlock(&qp->recv_cq->lock);
}

/*
 * Unread CQEs of @qp in @cq (the device no longer writes any: the QP was
 * destroyed or reset) get QP_ID QRDMA_CQE_QP_FORGOTTEN, so that a later
 * QP with the same ID does not inherit them. SRQ WQEs they completed go
 * back to the SRQ. Called with cq->lock held.
 */
static void qrdma_cq_forget_qp(struct qrdma_cq *cq, struct qrdma_qp *qp)
{
	struct qrdma_cq_ring *ring;
	uint32_t t = cq->head, i;
	uint64_t wr_id;

	for (ring = cq->poll_ring; ring; ring = ring->newer, t = 0) {
		for (i = 0; i < 1u << ring->size_log2; i++, t++) {
			__le64 *cqe = qrdma_cqe_at(ring, t);
			uint64_t q1, q2;

			if ((qrdma_load_qword(&cqe[3]) & QRDMA_CQE_VALID) !=
			    qrdma_valid(t, ring->size_log2, QRDMA_CQE_VALID))
				break;
			udma_from_device_barrier();
			q1 = qrdma_load_qword(&cqe[1]);
			if ((q1 & QRDMA_CQE_QP_MASK) != qp->qp_id)
				continue;
			q2 = qrdma_load_qword(&cqe[2]);
			if (qp->srq && (((q2 & QRDMA_CQE_FLAGS_MASK) >> QRDMA_CQE_FLAGS_SHIFT) &
					QRDMA_CQE_FLAG_SRQ))
				qrdma_srq_complete(qp->srq, q2 & QRDMA_CQE_WQE_INDEX_MASK, &wr_id);
			qrdma_store_qword(&cqe[1], (q1 & ~QRDMA_CQE_QP_MASK) |
					  QRDMA_CQE_QP_FORGOTTEN);
		}
	}
}

static void qrdma_qp_forget_cqes(struct qrdma_qp *qp)
{
	if (qp->send_cq)
		qrdma_cq_forget_qp(qp->send_cq, qp);
	if (qp->recv_cq && qp->recv_cq != qp->send_cq)
		qrdma_cq_forget_qp(qp->recv_cq, qp);
}

/* After the kernel destroyed the QP: no poller may find it any more. */
void qrdma_qp_detach(struct qrdma_qp *qp)
{
	qrdma_qp_lock_cqs(qp);
	qrdma_qp_table_remove(to_qctx(qp->vqp.qp.context), qp);
	qrdma_qp_forget_cqes(qp);
	qrdma_qp_unlock_cqs(qp);
}

/*
 * After a move to RESET: the device starts the QP's queues over at index
 * 0 with VALID polarity 1, and its completions so far are gone (IB).
 */
void qrdma_qp_restart(struct qrdma_qp *qp)
{
	qrdma_qp_lock_cqs(qp);
	qrdma_qp_forget_cqes(qp);
	pthread_spin_lock(&qp->sq.lock);
	memset(qp->sq.ring.va, 0, qp->sq.ring.bytes);
	qp->sq.head = 0;
	qrdma_wq_set_tail(&qp->sq, 0);
	pthread_spin_unlock(&qp->sq.lock);
	if (qp->rq.ring.va) {
		pthread_spin_lock(&qp->rq.lock);
		memset(qp->rq.ring.va, 0, qp->rq.ring.bytes);
		qp->rq.head = 0;
		qrdma_wq_set_tail(&qp->rq, 0);
		pthread_spin_unlock(&qp->rq.lock);
	}
	qrdma_qp_unlock_cqs(qp);
}

/*
 * ibv_bind_mw: a type 1 window bound through the SQ as a BIND_MW WQE under
 * the next key (ibv_inc_rkey). mw->rkey takes the new key at once; a bind
 * that then completes in error leaves the window as it was, and the
 * consumer must put the old rkey back (as with every rdma-core provider).
 */
int qrdma_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {}, *bad_wr;
	int ret;

	if (mw->type != IBV_MW_TYPE_1 || mw->pd != ibqp->pd)
		return EINVAL;
	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	ret = qrdma_post_send(ibqp, &wr, &bad_wr);
	if (ret)
		return ret;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}
