// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Guest-side check of libqrdma's data path on one qrdma device.
 *
 * Part 1 needs no traffic: what the provider itself must refuse or
 * accept (a full SQ is ENOMEM, too many SGEs or too much inline data is
 * EINVAL with bad_wr set, UD refuses RDMA opcodes, ibv_wr_* abort and
 * errors post nothing, an empty CQ polls 0, arming works).
 * Part 2 moves data between QPs of this one device through its own GID
 * (the device must deliver RoCEv2 frames addressed to itself): RC send
 * with and without immediate, inline, RDMA write (with immediate) and
 * read, both atomics, unsignaled WQEs across several SQ laps, an
 * ibv_wr_* batch, an SRQ, UD with its GRH, a CQ resized with CQEs still
 * unread, and a completion channel.
 *
 * Prints TAP lines and exits non-zero if any check failed.
 * --counters instead runs only the events the port counters count (for
 * tests/vm/guest-counters.sh).
 *
 * usage: qrdma-datapath [--dev NAME] [--no-traffic | --counters]
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <poll.h>
#include <arpa/inet.h>

#include "guest_util.h"

#define BUF_SIZE LOOP_BUF_SIZE
#define QKEY LOOP_QKEY

/* ---- Helpers -------------------------------------------------------------------- */

static int post_recv(struct ibv_qp *qp, struct ibv_srq *srq, struct loop_env *e, uint64_t wr_id,
		     size_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + off, len, e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return srq ? ibv_post_srq_recv(srq, &wr, &bad) : ibv_post_recv(qp, &wr, &bad);
}

static int post_send(struct ibv_qp *qp, struct loop_env *e, enum ibv_wr_opcode op, uint64_t wr_id,
		     size_t off, uint32_t len, unsigned int flags)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + off, len, e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = flags }, *bad;

	/* RDMA ops target the upper half of the same buffer, through the MR's rkey. */
	wr.wr.rdma.remote_addr = (uintptr_t)e->buf + BUF_SIZE / 2 + off;
	wr.wr.rdma.rkey = e->mr->rkey;
	return ibv_post_send(qp, &wr, &bad);
}

/* ---- Part 1: the provider alone ---------------------------------------------- */

/*
 * A QP in RESET or INIT: ibv_post_send, and an ibv_wr_* batch at
 * ibv_wr_complete, fail with EINVAL and post nothing; ibv_post_recv fails
 * in RESET only.
 */
static void state_checks(struct ibv_qp *qp, struct ibv_qp_ex *qpx, struct ibv_send_wr *wr,
			 const char *state)
{
	struct ibv_sge sge = { (uintptr_t)wr->sg_list[0].addr, 8, wr->sg_list[0].lkey };
	struct ibv_recv_wr rwr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *rbad = NULL;
	struct ibv_send_wr *bad = NULL;
	int ret;

	ret = ibv_post_send(qp, wr, &bad);
	check(ret == EINVAL && bad == wr, "post_send in %s: EINVAL, bad_wr set (%d)", state, ret);
	if (qpx) {
		ibv_wr_start(qpx);
		qpx->wr_id = 8;
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, sge.lkey, sge.addr, 8);
		ret = ibv_wr_complete(qpx);
		check(ret == EINVAL, "ibv_wr_complete in %s: EINVAL (%d)", state, ret);
	}
	ret = ibv_post_recv(qp, &rwr, &rbad);
	if (!strcmp(state, "RESET"))
		check(ret == EINVAL && rbad == &rwr, "post_recv in RESET: EINVAL, bad_wr set (%d)",
		      ret);
	else
		check(ret == 0, "post_recv in %s: accepted (%d)", state, ret);
}

static void provider_checks(struct loop_env *e)
{
	uint32_t lkey = e->mr ? e->mr->lkey : 0;	/* nothing executes here */
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	struct ibv_qp *rc, *ud;
	struct ibv_sge sge[8];
	struct ibv_send_wr wr, *bad;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_qp_ex *qpx;
	struct ibv_wc wc;
	char big[4096];
	int i, ret, posted;

	check(cq != NULL, "create CQ");
	if (!cq)
		return;
	check(ibv_poll_cq(cq, 1, &wc) == 0, "an empty CQ polls 0");
	check(ibv_req_notify_cq(cq, 0) == 0 && ibv_req_notify_cq(cq, 1) == 0, "arm a CQ");

	/*
	 * Only what the spec requires: type, PD, CQs; every cap 0, no send
	 * ops. Then the optional fields present in comp_mask but empty (send
	 * ops 0, creation flags 0, TSO header 0), as generic code passes them.
	 */
	for (i = 0; i < 4; i++) {
		struct ibv_qp_init_attr_ex min = {
			.qp_type = i & 1 ? IBV_QPT_UD : IBV_QPT_RC,
			.send_cq = cq,
			.recv_cq = cq,
			.comp_mask = IBV_QP_INIT_ATTR_PD,
			.pd = e->pd,
		};
		struct ibv_qp *q;

		if (i >= 2)
			min.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
					 IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_MAX_TSO_HEADER;
		q = ibv_create_qp_ex(e->ctx, &min);
		check(q != NULL, "create_qp_ex %s with the required attributes only%s: %s",
		      i & 1 ? "UD" : "RC", i >= 2 ? ", empty optional ones" : "",
		      q ? "ok" : strerror(errno));
		if (q)
			ibv_destroy_qp(q);
	}

	rc = loop_make_qp(e, IBV_QPT_RC, cq, cq, NULL, 16,
			  IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE);
	ud = loop_make_qp(e, IBV_QPT_UD, cq, cq, NULL, 16, 0);
	check(rc && ud, "create RC (with ibv_wr_* send ops) and UD QPs");
	if (!rc || !ud)
		goto out;
	ibv_query_qp(rc, &qa, IBV_QP_CAP, &ia);

	memset(sge, 0, sizeof(sge));
	for (i = 0; i < 8; i++) {
		sge[i].addr = (uintptr_t)e->buf;
		sge[i].length = 8;
		sge[i].lkey = lkey;
	}
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = sge;
	wr.num_sge = 1;
	qpx = ibv_qp_to_qp_ex(rc);
	/* IB: sends before RTS and receives in RESET are an immediate error. */
	state_checks(rc, qpx, &wr, "RESET");
	check(loop_to_init(rc) == 0 && loop_to_init(ud) == 0, "QPs to INIT");
	state_checks(rc, qpx, &wr, "INIT");
	/*
	 * In RTS toward the UD QP, which drops RC requests: the device sends
	 * and retries, and no WQE completes for seconds, so the SQ fills up.
	 * The argument checks run here, past the state check.
	 */
	check(loop_to_rts(e, rc, ud->qp_num) == 0 && loop_to_rts(e, ud, 0) == 0, "QPs to RTS");
	wr.num_sge = (int)ia.cap.max_send_sge + 1;
	bad = NULL;
	ret = ibv_post_send(rc, &wr, &bad);
	check(ret == EINVAL && bad == &wr, "one SGE over max_send_sge (%u): EINVAL, bad_wr set (%d)",
	      ia.cap.max_send_sge, ret);
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE;
	sge[1].addr = (uintptr_t)big;
	sge[1].length = ia.cap.max_inline_data + 1;
	wr.sg_list = &sge[1];
	bad = NULL;
	ret = ibv_post_send(rc, &wr, &bad);
	check(ret == EINVAL && bad == &wr, "inline one byte over max_inline_data (%u): EINVAL (%d)",
	      ia.cap.max_inline_data, ret);
	wr.sg_list = sge;
	wr.send_flags = 0;
	wr.opcode = IBV_WR_RDMA_WRITE;
	bad = NULL;
	ret = ibv_post_send(ud, &wr, &bad);
	check(ret == EINVAL && bad == &wr, "RDMA WRITE on a UD QP: EINVAL (%d)", ret);
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	sge[0].length = 4;
	bad = NULL;
	ret = ibv_post_send(rc, &wr, &bad);
	check(ret == EINVAL, "an atomic with a 4-byte SGE: EINVAL (%d)", ret);
	sge[0].length = 8;

	/* ibv_wr_*: an aborted batch and a failing one post nothing. */
	check(qpx && qpx->wr_send && qpx->wr_rdma_write && !qpx->wr_rdma_read,
	      "ibv_qp_ex has the send ops asked for, and only those");
	if (qpx) {
		ibv_wr_start(qpx);
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, lkey, (uintptr_t)e->buf, 8);
		ibv_wr_abort(qpx);
		ibv_wr_start(qpx);
		ibv_wr_send(qpx);
		ibv_wr_set_sge_list(qpx, ia.cap.max_send_sge + 1, sge);
		ret = ibv_wr_complete(qpx);
		check(ret == EINVAL, "ibv_wr_complete with too many SGEs: EINVAL (%d)", ret);
	}

	wr.opcode = IBV_WR_SEND;
	wr.next = NULL;
	posted = 0;
	for (i = 0; i < 4096; i++) {
		wr.wr_id = i;
		if (ibv_post_send(rc, &wr, &bad))
			break;
		posted++;
	}
	ret = ibv_post_send(rc, &wr, &bad);
	check(posted == (int)ia.cap.max_send_wr && ret == ENOMEM,
	      "SQ takes max_send_wr (%u) WQEs (posted %d), then ENOMEM (%d)", ia.cap.max_send_wr,
	      posted, ret);
	if (qpx) {
		ibv_wr_start(qpx);
		ibv_wr_send(qpx);
		ret = ibv_wr_complete(qpx);
		check(ret == ENOMEM, "ibv_wr_complete on a full SQ: ENOMEM (%d)", ret);
	}
	/* RESET empties the SQ and drops its CQEs. */
	qa.qp_state = IBV_QPS_RESET;
	wr.wr_id = 1;
	check(ibv_modify_qp(rc, &qa, IBV_QP_STATE) == 0 && loop_to_init(rc) == 0 &&
	      loop_to_rts(e, rc, ud->qp_num) == 0 && ibv_post_send(rc, &wr, &bad) == 0,
	      "after RESET and back to RTS the SQ takes WQEs again");
	qa.qp_state = IBV_QPS_RESET;
	check(ibv_modify_qp(rc, &qa, IBV_QP_STATE) == 0 && ibv_poll_cq(cq, 1, &wc) == 0,
	      "after RESET no CQE of the QP is left");
out:
	if (rc)
		ibv_destroy_qp(rc);
	if (ud)
		ibv_destroy_qp(ud);
	ibv_destroy_cq(cq);
}

/* ---- Part 2: traffic ----------------------------------------------------------------- */

static void rc_checks(struct loop_env *e)
{
	struct ibv_cq *scq = ibv_create_cq(e->ctx, 256, NULL, NULL, 0);
	struct ibv_cq_init_attr_ex cxa = {
		.cqe = 256,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM,
	};
	struct ibv_cq_ex *rcqx = ibv_create_cq_ex(e->ctx, &cxa);
	struct ibv_cq *rcq = rcqx ? ibv_cq_ex_to_cq(rcqx) : NULL;
	uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		       IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ;
	struct ibv_qp *a = NULL, *b = NULL;
	struct ibv_poll_cq_attr pa = {};
	struct ibv_wc wc[64];
	struct ibv_qp_ex *qpx;
	uint64_t *word;
	int i, n, lap_ok;

	check(scq && rcq, "create a CQ and an extended CQ");
	if (!scq || !rcq)
		goto out;
	a = loop_make_qp(e, IBV_QPT_RC, scq, rcq, NULL, 16, ops);
	b = loop_make_qp(e, IBV_QPT_RC, scq, rcq, NULL, 16, ops);
	check(a && b && !loop_to_init(a) && !loop_to_init(b) && !loop_to_rts(e, a, b->qp_num) &&
	      !loop_to_rts(e, b, a->qp_num), "RC QPs %u and %u connected", a ? a->qp_num : 0,
	      b ? b->qp_num : 0);

	/* Send with immediate: both sides' completions, read through ibv_cq_ex on b. */
	memset(e->buf, 0, BUF_SIZE);
	strcpy(e->buf, "hello qrdma");
	post_recv(b, NULL, e, 100, 4096, 64);
	{
		struct ibv_sge sge = { (uintptr_t)e->buf, 12, e->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND_WITH_IMM,
					  .send_flags = IBV_SEND_SIGNALED,
					  .imm_data = htonl(0x1234abcd) }, *bad;

		check(ibv_post_send(a, &wr, &bad) == 0, "post SEND_WITH_IMM");
	}
	n = wait_wc(scq, 1, wc);
	check(n == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 7 &&
	      wc[0].opcode == IBV_WC_SEND && wc[0].qp_num == a->qp_num,
	      "send CQE: status %d wr_id %" PRIu64 " opcode %d", n ? (int)wc[0].status : -1,
	      n ? wc[0].wr_id : 0, n ? (int)wc[0].opcode : -1);
	{
		double end = now() + 5;
		int ret;

		while ((ret = ibv_start_poll(rcqx, &pa)) == ENOENT && now() < end)
			usleep(100);
		check(ret == 0 && rcqx->status == IBV_WC_SUCCESS && rcqx->wr_id == 100 &&
		      ibv_wc_read_opcode(rcqx) == IBV_WC_RECV && ibv_wc_read_byte_len(rcqx) == 12 &&
		      (ibv_wc_read_wc_flags(rcqx) & IBV_WC_WITH_IMM) &&
		      ibv_wc_read_imm_data(rcqx) == htonl(0x1234abcd) &&
		      ibv_wc_read_qp_num(rcqx) == b->qp_num &&
		      !strcmp(e->buf + 4096, "hello qrdma"),
		      "receive CQE through ibv_cq_ex: start_poll %d, byte_len, imm, qp_num, data", ret);
		if (!ret) {
			check(ibv_next_poll(rcqx) == ENOENT, "next_poll: nothing more");
			ibv_end_poll(rcqx);
		}
	}

	/* Inline send. */
	post_recv(b, NULL, e, 101, 4096, 64);
	{
		char msg[] = "inline!";
		struct ibv_sge sge = { (uintptr_t)msg, sizeof(msg), 0 };
		struct ibv_send_wr wr = { .wr_id = 8, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE }, *bad;

		check(ibv_post_send(a, &wr, &bad) == 0, "post an inline SEND");
		memset(msg, 'x', sizeof(msg) - 1);	/* inline: the buffer is free at once */
	}
	n = wait_wc(scq, 1, wc) + wait_wc(rcq, 1, wc + 1);
	check(n == 2 && wc[0].wr_id == 8 && wc[1].wr_id == 101 && wc[1].byte_len == 8 &&
	      !strcmp(e->buf + 4096, "inline!"), "inline SEND delivered");

	/* RDMA WRITE then READ back; WRITE_WITH_IMM consumes a receive. */
	for (i = 0; i < 256; i++)
		e->buf[i] = (char)i;
	{
		struct ibv_sge sge = { (uintptr_t)e->buf, 256, e->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		wr.wr.rdma.remote_addr = (uintptr_t)e->buf + 8192;
		wr.wr.rdma.rkey = e->mr->rkey;
		check(ibv_post_send(a, &wr, &bad) == 0, "post RDMA WRITE");
		sge.addr = (uintptr_t)e->buf + 16384;
		wr.wr_id = 10;
		wr.opcode = IBV_WR_RDMA_READ;
		check(ibv_post_send(a, &wr, &bad) == 0, "post RDMA READ");
		n = wait_wc(scq, 2, wc);
		check(n == 2 && wc[0].wr_id == 9 && wc[0].opcode == IBV_WC_RDMA_WRITE &&
		      wc[1].wr_id == 10 && wc[1].opcode == IBV_WC_RDMA_READ &&
		      wc[1].byte_len == 256 && !memcmp(e->buf, e->buf + 8192, 256) &&
		      !memcmp(e->buf, e->buf + 16384, 256),
		      "RDMA WRITE and READ: %d CQEs, data in place", n);

		post_recv(b, NULL, e, 102, 4096, 64);
		sge.addr = (uintptr_t)e->buf;
		wr.wr_id = 13;
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl(0xfeed);
		wr.wr.rdma.remote_addr = (uintptr_t)e->buf + 12288;
		check(ibv_post_send(a, &wr, &bad) == 0, "post RDMA WRITE_WITH_IMM");
		n = wait_wc(scq, 1, wc) + wait_wc(rcq, 1, wc + 1);
		check(n == 2 && wc[0].wr_id == 13 && wc[1].wr_id == 102 &&
		      wc[1].opcode == IBV_WC_RECV_RDMA_WITH_IMM && (wc[1].wc_flags & IBV_WC_WITH_IMM) &&
		      wc[1].imm_data == htonl(0xfeed) && wc[1].byte_len == 256 &&
		      !memcmp(e->buf, e->buf + 12288, 256),
		      "WRITE_WITH_IMM: receive CQE with the immediate, data in place");
	}

	/* Atomics on a word of the MR. */
	word = (uint64_t *)(e->buf + 24576);
	*word = 40;
	{
		struct ibv_sge sge = { (uintptr_t)e->buf + 24584, 8, e->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 11, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		wr.wr.atomic.remote_addr = (uintptr_t)word;
		wr.wr.atomic.rkey = e->mr->rkey;
		wr.wr.atomic.compare_add = 2;
		check(ibv_post_send(a, &wr, &bad) == 0, "post FETCH_AND_ADD");
		n = wait_wc(scq, 1, wc);
		check(n == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_FETCH_ADD &&
		      *word == 42 && *(uint64_t *)(e->buf + 24584) == 40,
		      "FETCH_AND_ADD: 40 + 2, original value returned");
		wr.wr_id = 12;
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.compare_add = 42;
		wr.wr.atomic.swap = 7;
		check(ibv_post_send(a, &wr, &bad) == 0, "post CMP_AND_SWP");
		n = wait_wc(scq, 1, wc);
		check(n == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_COMP_SWAP &&
		      *word == 7, "CMP_AND_SWP: 42 swapped for 7");
	}

	/* Unsignaled WQEs: one signaled in four, over several SQ laps. */
	lap_ok = 1;
	for (i = 0; i < 256 && lap_ok; i += 4) {
		int j;

		for (j = 0; j < 4; j++)
			lap_ok &= !post_send(a, e, IBV_WR_RDMA_WRITE, 1000 + i + j, 0, 64,
					     j == 3 ? IBV_SEND_SIGNALED : 0);
		n = wait_wc(scq, 1, wc);
		if (n != 1 || wc[0].wr_id != (uint64_t)(1003 + i) || wc[0].status != IBV_WC_SUCCESS) {
			printf("# lap %d: %d CQE(s), wr_id %" PRIu64 " status %s (%d), expected %d\n",
			       i, n, n == 1 ? wc[0].wr_id : 0,
			       ibv_wc_status_str(n == 1 ? wc[0].status : 0), n == 1 ? wc[0].status : 0,
			       1003 + i);
			lap_ok = 0;
		}
	}
	check(lap_ok, "256 WRITEs, one signaled in four: each CQE names the signaled WR");

	/* ibv_wr_*: three sends in one batch. */
	qpx = ibv_qp_to_qp_ex(a);
	for (i = 0; i < 3; i++)
		post_recv(b, NULL, e, 200 + i, 4096 + 64 * i, 64);
	ibv_wr_start(qpx);
	for (i = 0; i < 3; i++) {
		qpx->wr_id = 300 + i;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, e->mr->lkey, (uintptr_t)e->buf, 16);
	}
	check(ibv_wr_complete(qpx) == 0, "ibv_wr_complete of three sends");
	n = wait_wc(scq, 3, wc);
	check(n == 3 && wc[0].wr_id == 300 && wc[2].wr_id == 302, "three send CQEs in order");
	n = wait_wc(rcq, 3, wc);
	check(n == 3 && wc[0].wr_id == 200 && wc[2].wr_id == 202 && wc[1].byte_len == 16,
	      "three receive CQEs in order");
out:
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	if (scq)
		ibv_destroy_cq(scq);
	if (rcq)
		ibv_destroy_cq(rcq);
}

/*
 * ibv_rereg_mr(IBV_REREG_MR_CHANGE_ACCESS) that adds remote write and
 * remote atomic to a local-only MR: a WRITE and a FETCH_ADD through the
 * rkey the peer was given before the rereg (keys stay when only access
 * changes, as on other devices) then succeed and land. Before the rereg
 * the WRITE fails REM_ACCESS_ERR.
 */
static void rereg_access_checks(struct loop_env *e)
{
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct ibv_device_attr da;
	struct ibv_qp *a = NULL, *b = NULL;
	uint64_t *target = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_wc wc;
	uint32_t rkey = 0;
	int pass, n;

	if (posix_memalign((void **)&target, 4096, 4096) || !cq) {
		check(false, "memory and a CQ for the rereg checks");
		goto out;
	}
	memset(target, 0, 4096);
	mr = ibv_reg_mr(e->pd, target, 4096, IBV_ACCESS_LOCAL_WRITE);
	a = loop_make_qp(e, IBV_QPT_RC, cq, cq, NULL, 16, 0);
	b = loop_make_qp(e, IBV_QPT_RC, cq, cq, NULL, 16, 0);
	check(mr && a && b && !loop_to_init(a) && !loop_to_init(b) && !loop_to_rts(e, a, b->qp_num) &&
	      !loop_to_rts(e, b, a->qp_num), "a local-only MR and an RC pair for rereg");
	if (!mr || !a || !b)
		goto out;
	rkey = mr->rkey;		/* what a peer would hold */
	for (pass = 0; pass < 2; pass++) {
		struct ibv_sge sge = { (uintptr_t)e->buf, 8, e->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		enum ibv_wc_status want = pass ? IBV_WC_SUCCESS : IBV_WC_REM_ACCESS_ERR;

		if (pass) {
			int ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
					       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_ATOMIC);

			check(ret == 0 && mr->rkey == rkey,
			      "rereg_mr(access: + remote write and atomic): %d, rkey 0x%x -> 0x%x",
			      ret, rkey, mr->rkey);
			/*
			 * The error above took the pair to ERR: connect it again,
			 * with as many reads and atomics in flight as the device
			 * offers (rxe offers 128, and perftest asks the peer's).
			 */
			if (ibv_query_device(e->ctx, &da))
				memset(&da, 0, sizeof(da));
			check(da.max_qp_rd_atom >= 128 && da.max_qp_init_rd_atom >= 128,
			      "max_qp_rd_atom %d, max_qp_init_rd_atom %d: at least 128",
			      da.max_qp_rd_atom, da.max_qp_init_rd_atom);
			loop_rd_atom = da.max_qp_rd_atom < da.max_qp_init_rd_atom ? da.max_qp_rd_atom
									     : da.max_qp_init_rd_atom;
			check(!ibv_modify_qp(a, &reset, IBV_QP_STATE) &&
			      !ibv_modify_qp(b, &reset, IBV_QP_STATE) && !loop_to_init(a) && !loop_to_init(b) &&
			      !loop_to_rts(e, a, b->qp_num) && !loop_to_rts(e, b, a->qp_num),
			      "the RC pair connected again, %u reads/atomics in flight", loop_rd_atom);
			loop_rd_atom = 4;
		}
		*(uint64_t *)e->buf = 0x1122334455667788ull;
		wr.wr.rdma.remote_addr = (uintptr_t)target;
		wr.wr.rdma.rkey = rkey;
		n = ibv_post_send(a, &wr, &bad) ? 0 : wait_wc(cq, 1, &wc);
		check(n == 1 && wc.status == want && (!pass || target[0] == 0x1122334455667788ull),
		      "WRITE through the rkey %s the rereg: status %d (want %d), target 0x%" PRIx64,
		      pass ? "after" : "before", n == 1 ? (int)wc.status : -1, (int)want, target[0]);
		if (!pass)
			continue;
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = (uintptr_t)&target[1];
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 5;
		target[1] = 10;
		n = ibv_post_send(a, &wr, &bad) ? 0 : wait_wc(cq, 1, &wc);
		check(n == 1 && wc.status == IBV_WC_SUCCESS && target[1] == 15 &&
		      *(uint64_t *)e->buf == 10,
		      "FETCH_ADD through the rkey after the rereg: status %d, target %" PRIu64
		      ", fetched %" PRIu64, n == 1 ? (int)wc.status : -1, target[1],
		      *(uint64_t *)e->buf);
	}
out:
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
	free(target);
}

/*
 * UC in loopback: a SEND and a WRITE_WITH_IMM land byte for byte and
 * complete on both sides; READ and atomics are refused at post (IBTA: UC
 * carries neither), and so are their ibv_wr_* send ops at create.
 */
static void uc_checks(struct loop_env *e)
{
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	struct ibv_qp *a = NULL, *b = NULL;
	struct ibv_wc wc[2];
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	struct ibv_qp_init_attr_ex xa = {
		.qp_type = IBV_QPT_UC, .send_cq = cq, .recv_cq = cq,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, .pd = e->pd,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_READ,
	};
	int i, n, ok = 1;

	if (!cq) {
		check(false, "a CQ for UC");
		return;
	}
	errno = 0;
	a = ibv_create_qp_ex(e->ctx, &xa);
	check(!a && errno == EOPNOTSUPP, "UC create_qp_ex with the READ send op: EOPNOTSUPP (%s)",
	      strerror(errno));
	if (a)
		ibv_destroy_qp(a);
	a = loop_make_qp(e, IBV_QPT_UC, cq, cq, NULL, 16, 0);
	b = loop_make_qp(e, IBV_QPT_UC, cq, cq, NULL, 16, 0);
	check(a && b, "create two UC QPs: %s", a && b ? "ok" : strerror(errno));
	if (!a || !b)
		goto out;
	for (i = 0; i < 2; i++) {
		struct ibv_qp *q = i ? b : a;
		struct ibv_qp_attr r = {
			.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .rq_psn = 0,
			.dest_qp_num = (i ? a : b)->qp_num,
			.ah_attr = { .is_global = 1, .port_num = 1,
				     .grh = { .dgid = e->gid, .sgid_index = e->gid_index,
					      .hop_limit = 64 } },
		};

		ok = ok && !ibv_modify_qp(q, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						    IBV_QP_ACCESS_FLAGS) &&
		     !ibv_modify_qp(q, &r, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
		r.qp_state = IBV_QPS_RTS;
		r.sq_psn = 0;
		ok = ok && !ibv_modify_qp(q, &r, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	check(ok, "UC QPs %u and %u to RTS", a->qp_num, b->qp_num);

	for (i = 0; i < 3000; i++)
		e->buf[i] = (char)(i * 7 + 3);
	memset(e->buf + 8192, 0, 8192);
	memset(e->buf + BUF_SIZE / 2 + 4096, 0, 4096);
	post_recv(b, NULL, e, 30, 8192, 4096);
	post_recv(b, NULL, e, 31, 12288, 4096);
	n = !post_send(a, e, IBV_WR_SEND, 40, 0, 3000, IBV_SEND_SIGNALED) &&
	    !post_send(a, e, IBV_WR_RDMA_WRITE_WITH_IMM, 41, 4096, 2048, IBV_SEND_SIGNALED);
	n = n ? wait_wc(cq, 4, (struct ibv_wc[4]){}) : 0;
	check(n == 4, "UC: 2 send and 2 receive completions (%d)", n);
	check(!memcmp(e->buf, e->buf + 8192, 3000), "UC SEND: 3000 bytes landed");
	check(!memcmp(e->buf + 4096, e->buf + BUF_SIZE / 2 + 4096, 2048) &&
	      e->buf[BUF_SIZE / 2 + 4096 + 2048] == 0, "UC WRITE_WITH_IMM: 2048 bytes landed");
	{
		struct ibv_sge sge = { (uintptr_t)e->buf, 8, e->mr->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_READ }, *bad = NULL;
		int ret = ibv_post_send(a, &wr, &bad);

		check(ret == EINVAL && bad == &wr, "UC RDMA READ at post: EINVAL (%d)", ret);
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		bad = NULL;
		ret = ibv_post_send(a, &wr, &bad);
		check(ret == EINVAL && bad == &wr, "UC FETCH_ADD at post: EINVAL (%d)", ret);
	}
	check(ibv_poll_cq(cq, 2, wc) == 0, "nothing more completed on UC");
out:
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	ibv_destroy_cq(cq);
}

static void srq_ud_resize_checks(struct loop_env *e)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(e->ctx);
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 16, NULL, ch, 0);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 32, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(e->pd, &sa);
	struct ibv_qp *a = NULL, *b = NULL, *ua = NULL, *ub = NULL;
	struct ibv_ah *ah = NULL;
	struct ibv_wc wc[64];
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	struct pollfd pfd;
	bool seen[8] = {};
	int i, n, ok;

	check(ch && cq && srq, "completion channel, CQ and SRQ");
	if (!ch || !cq || !srq)
		goto out;

	/* SRQ: b takes its receives from it. */
	a = loop_make_qp(e, IBV_QPT_RC, cq, cq, NULL, 16, 0);
	b = loop_make_qp(e, IBV_QPT_RC, cq, cq, srq, 16, 0);
	check(a && b && !loop_to_init(a) && !loop_to_init(b) && !loop_to_rts(e, a, b->qp_num) &&
	      !loop_to_rts(e, b, a->qp_num), "RC pair with an SRQ on the receive side");
	if (!a || !b)
		goto out;
	for (i = 0; i < 8; i++)
		post_recv(NULL, srq, e, 500 + i, 4096 + 64 * i, 64);
	for (i = 0; i < 8; i++)
		post_send(a, e, IBV_WR_SEND, 600 + i, 0, 32, IBV_SEND_SIGNALED);
	n = wait_wc(cq, 16, wc);
	ok = n == 16;
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			ok = 0;
		else if (wc[i].opcode == IBV_WC_RECV && wc[i].wr_id >= 500 && wc[i].wr_id < 508)
			seen[wc[i].wr_id - 500] = true;
	}
	for (i = 0; i < 8; i++)
		ok &= seen[i];
	check(ok, "8 sends into the SRQ: %d CQEs, every SRQ wr_id once", n);
	/* The SRQ's slots came back: it takes a full ring again. */
	for (i = 0, ok = 1; i < (int)sa.attr.max_wr; i++)
		ok &= !post_recv(NULL, srq, e, 700 + i, 4096, 64);
	check(ok, "SRQ takes max_wr (%u) WQEs again", sa.attr.max_wr);

	/* Resize with CQEs unread: 8 sends complete into the 16-entry ring, then grow it. */
	for (i = 0; i < 4; i++)
		post_send(a, e, IBV_WR_SEND, 800 + i, 0, 8, IBV_SEND_SIGNALED);
	usleep(200000);
	check(ibv_resize_cq(cq, 64) == 0, "resize the CQ to 64 with CQEs unread (cqe %d)", cq->cqe);
	for (i = 4; i < 8; i++)
		post_send(a, e, IBV_WR_SEND, 800 + i, 0, 8, IBV_SEND_SIGNALED);
	n = wait_wc(cq, 16, wc);
	ok = n == 16;
	{
		int next = 800;

		for (i = 0; i < n; i++)
			if (wc[i].opcode == IBV_WC_SEND && wc[i].wr_id == (uint64_t)next)
				next++;
		ok &= next == 808;
	}
	check(ok, "across the resize: %d CQEs, the sends' in order", n);

	/* Completion channel. */
	check(ibv_req_notify_cq(cq, 0) == 0, "arm the CQ");
	post_send(a, e, IBV_WR_SEND, 900, 0, 8, IBV_SEND_SIGNALED);
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	ok = poll(&pfd, 1, 5000) == 1 && !ibv_get_cq_event(ch, &ev_cq, &ev_ctx) && ev_cq == cq;
	check(ok, "completion event on the channel");
	if (ok)
		ibv_ack_cq_events(cq, 1);
	n = wait_wc(cq, 2, wc);
	check(n == 2, "and its CQEs (%d)", n);

	/* UD: a pair of UD QPs, an AH to our own GID. */
	ua = loop_make_qp(e, IBV_QPT_UD, cq, cq, NULL, 16, 0);
	ub = loop_make_qp(e, IBV_QPT_UD, cq, cq, NULL, 16, 0);
	{
		struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
					  .grh = { .dgid = e->gid, .sgid_index = e->gid_index,
						   .hop_limit = 64 } };

		ah = ibv_create_ah(e->pd, &aa);
	}
	check(ua && ub && ah && !loop_to_init(ua) && !loop_to_init(ub) && !loop_to_rts(e, ua, 0) &&
	      !loop_to_rts(e, ub, 0), "UD QPs and an AH");
	if (!ua || !ub || !ah)
		goto out;
	post_recv(ub, NULL, e, 1100, 32768, 40 + 64);
	{
		struct ibv_sge sge = { (uintptr_t)e->buf, 32, e->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 1000, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = ub->qp_num;
		wr.wr.ud.remote_qkey = QKEY;
		check(ibv_post_send(ua, &wr, &bad) == 0, "post a UD SEND");
	}
	n = wait_wc(cq, 2, wc);
	ok = n == 2;
	for (i = 0; i < n; i++)
		if (wc[i].wr_id == 1100)
			ok &= wc[i].status == IBV_WC_SUCCESS && (wc[i].wc_flags & IBV_WC_GRH) &&
			      wc[i].byte_len == 40 + 32 && wc[i].src_qp == ua->qp_num &&
			      !memcmp(e->buf + 32768 + 40, e->buf, 32);
	check(ok, "UD receive: GRH flag, byte_len 40 + 32, src_qp, data");
out:
	if (ua)
		ibv_destroy_qp(ua);
	if (ub)
		ibv_destroy_qp(ub);
	if (ah)
		ibv_destroy_ah(ah);
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	if (srq)
		ibv_destroy_srq(srq);
	if (cq)
		ibv_destroy_cq(cq);
	if (ch)
		ibv_destroy_comp_channel(ch);
}

/* ---- --counters: each event the port counters count, once ------------------- */

/*
 * For tests/vm/guest-counters.sh, which reads the hw_counters around this
 * run: on one RC pair of this device, a SEND that finds no receive posted
 * for 300 ms (RNR NAKs sent and received, then success once one is
 * posted), an RDMA WRITE, READ and FETCH_ADD (requests by kind at the
 * responder), then a WRITE through a bad rkey (REM_ACCESS_ERR: a
 * requester error CQE) with a SEND behind it and a receive posted on the
 * requester (both flushed); on a second pair, a receive too short for its
 * SEND (a responder error CQE, and a requester one).
 */
static void counters_checks(struct loop_env *e)
{
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	struct ibv_qp *a = NULL, *b = NULL;
	struct ibv_wc wc[4];
	int n, i;

	a = cq ? loop_make_qp(e, IBV_QPT_RC, cq, cq, NULL, 16, 0) : NULL;
	b = cq ? loop_make_qp(e, IBV_QPT_RC, cq, cq, NULL, 16, 0) : NULL;
	check(a && b && !loop_to_init(a) && !loop_to_init(b) && !loop_to_rts(e, a, b->qp_num) &&
	      !loop_to_rts(e, b, a->qp_num), "an RC pair for the counted events");
	if (!a || !b)
		goto out;

	/* RNR: rnr_retry 7 retries for ever; the receive comes late. */
	check(!post_send(a, e, IBV_WR_SEND, 1, 0, 64, IBV_SEND_SIGNALED), "post a SEND, no receive");
	usleep(300000);
	n = ibv_poll_cq(cq, 1, wc);
	check(n == 0, "the SEND waits for a receive (%d completions)", n);
	check(!post_recv(b, NULL, e, 2, 4096, 4096), "post the receive late");
	n = wait_wc(cq, 2, wc);
	check(n == 2 && wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS,
	      "SEND after RNR: %d completions, status %s, %s", n,
	      n > 0 ? ibv_wc_status_str(wc[0].status) : "-",
	      n > 1 ? ibv_wc_status_str(wc[1].status) : "-");

	/* One request of each kind. */
	check(!post_send(a, e, IBV_WR_RDMA_WRITE, 3, 0, 256, IBV_SEND_SIGNALED) &&
	      !post_send(a, e, IBV_WR_RDMA_READ, 4, 8192, 256, IBV_SEND_SIGNALED),
	      "post a WRITE and a READ");
	{
		struct ibv_sge sge = { (uintptr_t)e->buf + 16384, 8, e->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		wr.wr.atomic.remote_addr = (uintptr_t)e->buf + BUF_SIZE / 2 + 16384;
		wr.wr.atomic.rkey = e->mr->rkey;
		wr.wr.atomic.compare_add = 1;
		check(!ibv_post_send(a, &wr, &bad), "post a FETCH_ADD");
	}
	n = wait_wc(cq, 3, wc);
	for (i = 0; i < n; i++)
		if (wc[i].status != IBV_WC_SUCCESS)
			break;
	check(n == 3 && i == 3, "WRITE, READ, FETCH_ADD: %d of 3 succeeded", i);

	/* A bad rkey: the WRITE fails, the SEND behind it and A's receive are flushed. */
	{
		struct ibv_sge sge = { (uintptr_t)e->buf, 64, e->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 6, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		wr.wr.rdma.remote_addr = (uintptr_t)e->buf + BUF_SIZE / 2;
		wr.wr.rdma.rkey = e->mr->rkey ^ 0x80;	/* another key byte */
		check(!post_recv(a, NULL, e, 8, 4096, 4096) && !ibv_post_send(a, &wr, &bad) &&
		      !post_send(a, e, IBV_WR_SEND, 7, 0, 64, IBV_SEND_SIGNALED),
		      "post a receive, a WRITE through a bad rkey and a SEND");
	}
	n = wait_wc(cq, 3, wc);
	{
		int err = 0, flush = 0;

		for (i = 0; i < n; i++) {
			if (wc[i].wr_id == 6 && wc[i].status == IBV_WC_REM_ACCESS_ERR)
				err++;
			else if (wc[i].status == IBV_WC_WR_FLUSH_ERR)
				flush++;
		}
		check(err == 1 && flush == 2, "bad rkey: %d REM_ACCESS_ERR, %d flushed, of %d CQEs",
		      err, flush, n);
	}

	/*
	 * A second pair: a receive too short for the SEND. The responder's
	 * receive completes LOC_LEN_ERR, the requester's SEND REM_INV_REQ_ERR.
	 */
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	a = loop_make_qp(e, IBV_QPT_RC, cq, cq, NULL, 16, 0);
	b = loop_make_qp(e, IBV_QPT_RC, cq, cq, NULL, 16, 0);
	check(a && b && !loop_to_init(a) && !loop_to_init(b) && !loop_to_rts(e, a, b->qp_num) &&
	      !loop_to_rts(e, b, a->qp_num), "a second RC pair");
	if (!a || !b)
		goto out;
	check(!post_recv(b, NULL, e, 9, 4096, 16) &&
	      !post_send(a, e, IBV_WR_SEND, 10, 0, 64, IBV_SEND_SIGNALED),
	      "post a 16-byte receive and a 64-byte SEND");
	n = wait_wc(cq, 2, wc);
	{
		int len_err = 0, inv_req = 0;

		for (i = 0; i < n; i++) {
			len_err += wc[i].wr_id == 9 && wc[i].status == IBV_WC_LOC_LEN_ERR;
			inv_req += wc[i].wr_id == 10 && wc[i].status == IBV_WC_REM_INV_REQ_ERR;
		}
		check(len_err == 1 && inv_req == 1,
		      "short receive: %d LOC_LEN_ERR, %d REM_INV_REQ_ERR, of %d CQEs",
		      len_err, inv_req, n);
	}
out:
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	if (cq)
		ibv_destroy_cq(cq);
}

int main(int argc, char **argv)
{
	const char *dev = "qrdma0";
	bool traffic = true, counters = false;
	struct loop_env e = {};
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dev") && i + 1 < argc)
			dev = argv[++i];
		else if (!strcmp(argv[i], "--no-traffic"))
			traffic = false;
		else if (!strcmp(argv[i], "--counters"))
			counters = true;
		else {
			fprintf(stderr, "usage: %s [--dev NAME] [--no-traffic | --counters]\n", argv[0]);
			return 2;
		}
	}
	if (counters) {
		if (loop_open(&e, dev) && e.mr)
			counters_checks(&e);
	} else if (loop_open(&e, dev)) {
		provider_checks(&e);
		if (traffic && e.mr) {
			rc_checks(&e);
			rereg_access_checks(&e);
			uc_checks(&e);
			srq_ud_resize_checks(&e);
		}
	}
	loop_close(&e);
	printf("1..%d\n# %d of %d checks failed\n", checks, failures, checks);
	return failures ? 1 : 0;
}
