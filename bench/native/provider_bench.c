/*
 * provider_bench: the instructions libqrdma's fast path spends per message,
 * the part of every message a guest pays on its own (emulated) CPU.
 *
 * Built by bench/native/count-provider.sh inside the guest root, with the
 * guest's compiler and the exact flags rdma-core's build gives
 * providers/qrdma/qrdma_dp.c, linked statically with that file, and run
 * under callgrind on the host. No device and no kernel: the program builds
 * a context, a CQ and an RC QP in RTS as create_cq and create_qp would
 * (rings in ordinary memory, the doorbell page a page of memory), posts
 * through qrdma_post_send and qrdma_post_recv, plays the device by writing
 * each WQE's CQE (VALID polarity, WQE index, QP ID, opcode, length) into
 * the CQ ring, and polls it back through qrdma_poll_cq, one message at a
 * time (a latency test's pattern) and in bursts of 16 (a bandwidth test's).
 * It checks what it polls (wr_id, opcode, status, byte_len) and that each
 * WQE carries what was posted, so a broken fast path fails here rather than
 * being counted.
 *
 * usage: provider_bench single|burst MESSAGES
 * callgrind's inclusive counts of qrdma_post_send, qrdma_post_recv and
 * qrdma_poll_cq divided by MESSAGES (nothing else calls them) are the
 * figures: "single" posts and polls one at a time, sends and receives;
 * "burst" posts 16 chained send WRs and polls 16 CQEs a call.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <config.h>

#include <endian.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qrdma.h"

#define SQ_LOG2		7	/* perftest-like: 128 SQ WQEs of 128 bytes */
#define SQ_WQE_LOG2	7
#define RQ_LOG2		8
#define RQ_WQE_LOG2	6
#define CQ_LOG2		9
#define QP_ID		5
#define BURST		16	/* WRs per post and CQEs per poll in the burst pattern */
#define MSG_LEN		64

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("provider_bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void *page_alloc(size_t bytes)
{
	void *p = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);

	if (!p)
		die("out of memory");
	memset(p, 0, (bytes + 4095) & ~(size_t)4095);
	return p;
}

static void wq_init(struct qrdma_wq *wq, uint8_t size_log2, uint8_t wqe_log2)
{
	wq->size_log2 = size_log2;
	wq->wqe_log2 = wqe_log2;
	wq->ring.bytes = (size_t)1 << (size_log2 + wqe_log2);
	wq->ring.va = page_alloc(wq->ring.bytes);
	wq->max_wr = 1u << size_log2;
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
}

static struct qrdma_context ctx;
static struct qrdma_cq cq;
static struct qrdma_cq_ring cq_ring;
static struct qrdma_qp qp;
static uint32_t cq_tail;		/* the "device's" next CQE */
static uint8_t payload[MSG_LEN];

static void setup(void)
{
	ctx.db_page = page_alloc(QRDMA_DB_PAGE_SIZE);
	ctx.max_inline_data = 256;
	ctx.max_send_sge = 4;
	ctx.max_recv_sge = 4;
	pthread_mutex_init(&ctx.qp_table_mutex, NULL);

	cq.ctx = &ctx;
	pthread_spin_init(&cq.lock, PTHREAD_PROCESS_PRIVATE);
	cq_ring.size_log2 = CQ_LOG2;
	cq_ring.buf.bytes = (size_t)QRDMA_CQE_SIZE << CQ_LOG2;
	cq_ring.buf.va = page_alloc(cq_ring.buf.bytes);
	cq.rings = cq.poll_ring = cq.dev_ring = &cq_ring;
	cq.shadow_page.bytes = 4096;
	cq.shadow_page.va = page_alloc(4096);
	cq.shadow = cq.shadow_page.va;
	cq.cq_id = 1;

	qp.vqp.qp.qp_type = IBV_QPT_RC;
	qp.vqp.qp.state = IBV_QPS_RTS;
	qp.vqp.qp.qp_num = QP_ID;
	qp.qp_id = QP_ID;
	wq_init(&qp.sq, SQ_LOG2, SQ_WQE_LOG2);
	wq_init(&qp.rq, RQ_LOG2, RQ_WQE_LOG2);
	qp.cap.max_send_wr = 1u << SQ_LOG2;
	qp.cap.max_recv_wr = 1u << RQ_LOG2;
	qp.cap.max_send_sge = 4;
	qp.cap.max_recv_sge = 4;
	qp.cap.max_inline_data = 256;
	qp.send_cq = qp.recv_cq = &cq;
	qp.sq_wrid = calloc(1u << SQ_LOG2, sizeof(*qp.sq_wrid));
	qp.rq_wrid = calloc(1u << RQ_LOG2, sizeof(*qp.rq_wrid));
	if (!qp.sq_wrid || !qp.rq_wrid)
		die("out of memory");
	qp.db_sq = (uint8_t *)ctx.db_page + QRDMA_DB_SQ;
	qp.db_rq = (uint8_t *)ctx.db_page + QRDMA_DB_RQ;
	if (qrdma_qp_table_insert(&ctx, &qp))
		die("qp table insert failed");
}

/* The device's part: a CQE for WQE index idx of the SQ or RQ, success. */
static void device_complete(uint32_t idx, bool sq, uint8_t wc_opcode, uint32_t len)
{
	__le64 *cqe = (__le64 *)((uint8_t *)cq_ring.buf.va +
				 (size_t)(cq_tail & ((1u << CQ_LOG2) - 1)) * QRDMA_CQE_SIZE);
	uint64_t flags = sq ? QRDMA_CQE_FLAG_SQ : 0;

	cqe[0] = htole64(len);
	cqe[1] = htole64(QP_ID);
	cqe[2] = htole64(idx | (uint64_t)wc_opcode << QRDMA_CQE_OPCODE_SHIFT |
			 flags << QRDMA_CQE_FLAGS_SHIFT);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	cqe[3] = htole64((cq_tail >> CQ_LOG2) & 1 ? 0 : QRDMA_CQE_VALID);
	cq_tail++;
}

/* The device's part of a send: the WQE it would fetch must be what was posted. */
static void device_take_sq(uint32_t t, uint64_t wr_id)
{
	const struct qrdma_sq_wqe_hdr *wqe = (const void *)((uint8_t *)qp.sq.ring.va +
		((size_t)(t & ((1u << SQ_LOG2) - 1)) << SQ_WQE_LOG2));
	const struct qrdma_sge *sge = (const void *)(wqe + 1);
	uint64_t hdr = le64toh(wqe->hdr);

	if ((hdr & QRDMA_SQ_HDR_OPCODE_MASK) != QRDMA_SQ_OP_SEND ||
	    !(hdr & QRDMA_SQ_HDR_SIGNALED) ||
	    ((hdr & QRDMA_SQ_HDR_NUM_SGE_MASK) >> QRDMA_SQ_HDR_NUM_SGE_SHIFT) != 1 ||
	    !!(hdr & QRDMA_SQ_HDR_VALID) != !((t >> SQ_LOG2) & 1) ||
	    le64toh(sge->addr) != (uintptr_t)payload || le32toh(sge->length) != MSG_LEN ||
	    le32toh(sge->lkey) != (uint32_t)wr_id)
		die("SQ WQE %u (wr_id %" PRIu64 ") is not what was posted: header %#" PRIx64, t,
		    wr_id, hdr);
}

static void check_wc(const struct ibv_wc *wc, uint64_t wr_id, enum ibv_wc_opcode op)
{
	if (wc->wr_id != wr_id || wc->status != IBV_WC_SUCCESS || wc->opcode != op ||
	    wc->byte_len != MSG_LEN || wc->qp_num != QP_ID)
		die("polled wr_id %" PRIu64 " status %d opcode %d len %u qp %u, expected wr_id %"
		    PRIu64 " opcode %d", wc->wr_id, wc->status, wc->opcode, wc->byte_len,
		    wc->qp_num, wr_id, op);
}

/* n sends, one WR per post, one CQE per poll; then the same for receives. */
static void one_by_one(uint64_t n)
{
	struct ibv_sge sge = { .addr = (uintptr_t)payload, .length = MSG_LEN };
	struct ibv_send_wr swr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 };
	struct ibv_send_wr *sbad;
	struct ibv_recv_wr *rbad;
	struct ibv_wc wc;
	uint64_t i;

	for (i = 0; i < n; i++) {
		uint32_t t = qp.sq.tail;

		swr.wr_id = sge.lkey = (uint32_t)i;
		if (qrdma_post_send(&qp.vqp.qp, &swr, &sbad))
			die("post_send %" PRIu64 " failed", i);
		device_take_sq(t, i);
		device_complete(t & ((1u << SQ_LOG2) - 1), true, IBV_WC_SEND, MSG_LEN);
		if (qrdma_poll_cq(&cq.vcq.cq, 1, &wc) != 1)
			die("send %" PRIu64 ": no completion", i);
		check_wc(&wc, i, IBV_WC_SEND);

		t = qp.rq.tail;
		rwr.wr_id = i;
		if (qrdma_post_recv(&qp.vqp.qp, &rwr, &rbad))
			die("post_recv %" PRIu64 " failed", i);
		device_complete(t & ((1u << RQ_LOG2) - 1), false, IBV_WC_RECV, MSG_LEN);
		if (qrdma_poll_cq(&cq.vcq.cq, 1, &wc) != 1)
			die("receive %" PRIu64 ": no completion", i);
		check_wc(&wc, i, IBV_WC_RECV);
	}
}

/* n sends in posts of BURST chained WRs, their CQEs polled BURST at a time. */
static void bursts(uint64_t n)
{
	struct ibv_sge sge[BURST];
	struct ibv_send_wr swr[BURST], *sbad;
	struct ibv_wc wc[BURST];
	uint64_t i;
	int k;

	for (i = 0; i < n; i += BURST) {
		uint32_t t = qp.sq.tail;

		for (k = 0; k < BURST; k++) {
			sge[k] = (struct ibv_sge){ .addr = (uintptr_t)payload, .length = MSG_LEN,
						   .lkey = (uint32_t)(i + k) };
			swr[k] = (struct ibv_send_wr){ .wr_id = i + k, .sg_list = &sge[k],
						       .num_sge = 1, .opcode = IBV_WR_SEND,
						       .send_flags = IBV_SEND_SIGNALED,
						       .next = k + 1 < BURST ? &swr[k + 1] : NULL };
		}
		if (qrdma_post_send(&qp.vqp.qp, swr, &sbad))
			die("post_send burst at %" PRIu64 " failed", i);
		for (k = 0; k < BURST; k++) {
			device_take_sq(t + k, i + k);
			device_complete((t + k) & ((1u << SQ_LOG2) - 1), true, IBV_WC_SEND, MSG_LEN);
		}
		if (qrdma_poll_cq(&cq.vcq.cq, BURST, wc) != BURST)
			die("burst at %" PRIu64 ": fewer than %d completions", i, BURST);
		for (k = 0; k < BURST; k++)
			check_wc(&wc[k], i + k, IBV_WC_SEND);
	}
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 0) : 0;
	bool single = argc > 2 && !strcmp(argv[1], "single");

	if (!n || n % BURST || (!single && (argc < 2 || strcmp(argv[1], "burst"))))
		die("usage: provider_bench single|burst MESSAGES (a multiple of %d)", BURST);
	setup();
	if (single)
		one_by_one(n);
	else
		bursts(n);
	if (le64toh(cq.shadow->head) != cq_tail)
		die("CQ HEAD %" PRIu64 " after %u CQEs", (uint64_t)le64toh(cq.shadow->head), cq_tail);
	printf("provider_bench: %" PRIu64 " messages %s, all checked\n", n,
	       single ? "one by one" : "in bursts of 16");
	return 0;
}
