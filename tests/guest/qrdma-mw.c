// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Guest-side check of memory windows (interface 0.7) on one qrdma device:
 * an owner QP and a peer QP of this device, connected through its own GID
 * (the device delivers RoCEv2 frames addressed to itself). The owner
 * binds windows on an MR with MW_BIND; the peer WRITEs, READs and does an
 * atomic through the window's rkey (bytes compared); LOCAL_INV ends the
 * window and the peer is refused (REM_ACCESS_ERR, nothing written). Bad
 * binds (beyond the MR, an MR without MW_BIND, remote write on an MR
 * without LOCAL_WRITE, a window of another PD) complete with MW_BIND_ERR
 * and put the QP in ERR; invalidating twice is LOC_QP_OP_ERR. Type 1:
 * ibv_bind_mw, then access. An MR with a bound window: dereg is EBUSY.
 * The loopback helpers are guest_util.h's.
 *
 * --owner DIR / --peer DIR: the same window across two guests
 * (tests/vm/test-mw-remote.sh), meeting through files in DIR, which both
 * share: the owner binds a type 2 window, the peer READs it and WRITEs
 * into it through its rkey (both compared byte for byte in the guest that
 * holds the bytes), the owner invalidates it (LOCAL_INV) and the peer's
 * next WRITE fails with REM_ACCESS_ERR, nothing written.
 *
 * Prints TAP lines and exits non-zero if any check failed.
 * usage: qrdma-mw [--dev NAME] [--owner DIR | --peer DIR]
 */
#define _GNU_SOURCE
#include <inttypes.h>

#include "guest_util.h"

#define BUF_SIZE LOOP_BUF_SIZE
#define QKEY LOOP_QKEY
#define WIN_OFF 0x4000		/* the window: BUF_SIZE/2 + WIN_OFF, WIN_LEN bytes */
#define WIN_LEN 0x2000
#define SENTINEL 0xcc

/* A connected pair on fresh CQs: the peer (a) and the owner (b). */
struct pair {
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *a, *b;
};

static bool pair_up(struct loop_env *e, struct pair *p)
{
	memset(p, 0, sizeof(*p));
	p->cqa = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	p->cqb = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	if (!p->cqa || !p->cqb)
		return false;
	p->a = loop_make_qp(e, IBV_QPT_RC, p->cqa, p->cqa, NULL, 32, 0);
	p->b = loop_make_qp(e, IBV_QPT_RC, p->cqb, p->cqb, NULL, 32,
		       IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND);
	if (!p->a || !p->b)
		return false;
	return !loop_to_init(p->a) && !loop_to_init(p->b) && !loop_to_rts(e, p->a, p->b->qp_num) &&
	       !loop_to_rts(e, p->b, p->a->qp_num);
}

static void pair_down(struct pair *p)
{
	if (p->a)
		ibv_destroy_qp(p->a);
	if (p->b)
		ibv_destroy_qp(p->b);
	if (p->cqa)
		ibv_destroy_cq(p->cqa);
	if (p->cqb)
		ibv_destroy_cq(p->cqb);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	return ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) ? (enum ibv_qp_state)-1 : a.qp_state;
}

/* BIND_MW through ibv_post_send; returns the completion's status (-1: none). */
static int bind(struct pair *p, struct ibv_mw *mw, uint32_t new_rkey, struct ibv_mr *mr,
		uint64_t addr, uint64_t len, unsigned int access)
{
	struct ibv_send_wr wr = { .wr_id = 7, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = new_rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	if (ibv_post_send(p->b, &wr, &bad))
		return -2;
	if (wait_wc(p->cqb, 1, &wc) != 1)
		return -1;
	return wc.opcode == IBV_WC_BIND_MW || wc.status ? (int)wc.status : -3;
}

/* One RDMA op from the peer through @rkey at @raddr; the completion's status. */
static int peer_op(struct loop_env *e, struct pair *p, enum ibv_wr_opcode op, uint32_t rkey,
		   uint64_t raddr, size_t loff, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + loff, len, e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 5;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	if (ibv_post_send(p->a, &wr, &bad))
		return -2;
	if (wait_wc(p->cqa, 1, &wc) != 1)
		return -1;
	return wc.status;
}

static int local_inv(struct pair *p, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = 9, .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey }, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(p->b, &wr, &bad))
		return -2;
	if (wait_wc(p->cqb, 1, &wc) != 1)
		return -1;
	return wc.status;
}

static bool all_sentinel(const char *b, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((uint8_t)b[i] != SENTINEL)
			return false;
	return true;
}

static void type2_checks(struct loop_env *e, struct ibv_mr *mr)
{
	char *win = e->buf + BUF_SIZE / 2 + WIN_OFF;
	uint64_t waddr = (uintptr_t)win;
	struct ibv_mw *mw;
	struct pair p;
	uint32_t rkey;
	int st;

	if (!pair_up(e, &p)) {
		check(false, "type 2: a connected pair");
		pair_down(&p);
		return;
	}
	mw = ibv_alloc_mw(e->pd, IBV_MW_TYPE_2);
	check(mw != NULL, "ibv_alloc_mw(TYPE_2): %s", mw ? "ok" : strerror(errno));
	if (!mw)
		goto out;
	memset(e->buf + BUF_SIZE / 2, SENTINEL, BUF_SIZE / 2);
	rkey = ibv_inc_rkey(mw->rkey);
	st = bind(&p, mw, rkey, mr, waddr, WIN_LEN,
		  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	check(st == IBV_WC_SUCCESS, "type 2 bind through ibv_post_send: status %d", st);
	mw->rkey = rkey;

	for (int i = 0; i < WIN_LEN; i++)
		e->buf[i] = (char)(i * 7 + 3);
	st = peer_op(e, &p, IBV_WR_RDMA_WRITE, rkey, waddr, 0, WIN_LEN);
	check(st == IBV_WC_SUCCESS && !memcmp(win, e->buf, WIN_LEN) &&
	      all_sentinel(e->buf + BUF_SIZE / 2, WIN_OFF) &&
	      all_sentinel(win + WIN_LEN, BUF_SIZE / 2 - WIN_OFF - WIN_LEN),
	      "peer WRITE of %d bytes through the window: status %d, bytes %s", WIN_LEN, st,
	      !memcmp(win, e->buf, WIN_LEN) ? "equal" : "differ");
	memset(e->buf + 0x3000, 0, 1024);
	st = peer_op(e, &p, IBV_WR_RDMA_READ, rkey, waddr + 0x100, 0x3000, 1024);
	check(st == IBV_WC_SUCCESS && !memcmp(e->buf + 0x3000, win + 0x100, 1024),
	      "peer READ through the window: status %d", st);
	memcpy(win + 0x800, &(uint64_t){ 100 }, 8);
	st = peer_op(e, &p, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, waddr + 0x800, 0x3800, 8);
	check(st == IBV_WC_SUCCESS && *(uint64_t *)(win + 0x800) == 105 &&
	      *(uint64_t *)(e->buf + 0x3800) == 100, "peer fetch-and-add through the window: %d",
	      st);
	/* An MR with a bound window cannot be deregistered. */
	errno = 0;
	st = ibv_dereg_mr(mr);
	check(st == EBUSY, "dereg of an MR with a bound window: %s", strerror(st));

	st = local_inv(&p, rkey);
	check(st == IBV_WC_SUCCESS, "LOCAL_INV of the window: status %d", st);
	memset(win, SENTINEL, WIN_LEN);
	st = peer_op(e, &p, IBV_WR_RDMA_WRITE, rkey, waddr, 0, 64);
	check(st == IBV_WC_REM_ACCESS_ERR && all_sentinel(e->buf + BUF_SIZE / 2, BUF_SIZE / 2),
	      "peer WRITE after the invalidation: REM_ACCESS_ERR (%d), nothing written", st);
	check(qp_state(p.a) == IBV_QPS_ERR, "the peer's QP is in ERR");
	check(ibv_dealloc_mw(mw) == 0, "ibv_dealloc_mw");
out:
	pair_down(&p);
}

/* Invalidating a window twice: LOC_QP_OP_ERR, the QP in ERR. */
static void inv_twice_checks(struct loop_env *e, struct ibv_mr *mr)
{
	struct ibv_mw *mw = ibv_alloc_mw(e->pd, IBV_MW_TYPE_2);
	struct pair p;
	uint32_t rkey;
	int st1, st2, st3;

	if (!mw || !pair_up(e, &p)) {
		check(false, "invalidate twice: set-up");
		return;
	}
	rkey = ibv_inc_rkey(mw->rkey);
	st1 = bind(&p, mw, rkey, mr, (uintptr_t)e->buf + BUF_SIZE / 2, 64,
		   IBV_ACCESS_REMOTE_READ);
	st2 = local_inv(&p, rkey);
	st3 = local_inv(&p, rkey);
	check(st1 == IBV_WC_SUCCESS && st2 == IBV_WC_SUCCESS && st3 == IBV_WC_LOC_QP_OP_ERR &&
	      qp_state(p.b) == IBV_QPS_ERR,
	      "invalidate twice: bind %d, first %d, second %d (LOC_QP_OP_ERR), QP in ERR", st1,
	      st2, st3);
	pair_down(&p);
	ibv_dealloc_mw(mw);
}

/* Binds the IB rules forbid: MW_BIND_ERR, the QP in ERR, nothing bound. */
static void bad_bind_checks(struct loop_env *e, struct ibv_mr *mr)
{
	const uint64_t base = (uintptr_t)e->buf + BUF_SIZE / 2;
	struct ibv_pd *pd2 = ibv_alloc_pd(e->ctx);
	struct ibv_mr *nolw = ibv_reg_mr(e->pd, e->buf + BUF_SIZE / 2, BUF_SIZE / 2,
					 IBV_ACCESS_MW_BIND);
	const struct {
		const char *what;
		struct ibv_mr *mr;
		bool other_pd;
		uint64_t addr, len;
		unsigned int access;
	} cases[] = {
		{ "beyond the MR", mr, false, base + BUF_SIZE / 2 - 64, 128, IBV_ACCESS_REMOTE_READ },
		{ "an MR without MW_BIND", e->mr, false, base, 64, IBV_ACCESS_REMOTE_READ },
		{ "remote write on an MR without LOCAL_WRITE", nolw, false, base, 64,
		  IBV_ACCESS_REMOTE_WRITE },
		{ "a window of another PD", mr, true, base, 64, IBV_ACCESS_REMOTE_READ },
	};
	unsigned int c;

	check(nolw != NULL && pd2 != NULL, "an MR with MW_BIND only, a second PD");
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct ibv_mw *mw;
		struct pair p;
		int st;

		if (!cases[c].mr || !pd2)
			break;
		mw = ibv_alloc_mw(cases[c].other_pd ? pd2 : e->pd, IBV_MW_TYPE_2);
		if (!mw || !pair_up(e, &p)) {
			check(false, "bad bind %s: set-up", cases[c].what);
			continue;
		}
		st = bind(&p, mw, ibv_inc_rkey(mw->rkey), cases[c].mr, cases[c].addr, cases[c].len,
			  cases[c].access);
		check(st == IBV_WC_MW_BIND_ERR && qp_state(p.b) == IBV_QPS_ERR,
		      "bind %s: MW_BIND_ERR (%d), QP in ERR", cases[c].what, st);
		pair_down(&p);
		check(ibv_dealloc_mw(mw) == 0, "dealloc the window of case %u", c);
	}
	if (nolw)
		ibv_dereg_mr(nolw);
	if (pd2)
		ibv_dealloc_pd(pd2);
}

/* Type 1: ibv_bind_mw, access, then unbound by dealloc; the MR is free again. */
static void type1_checks(struct loop_env *e, struct ibv_mr *mr)
{
	char *win = e->buf + BUF_SIZE / 2 + WIN_OFF;
	struct ibv_mw_bind b = { .wr_id = 3, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_mw *mw = ibv_alloc_mw(e->pd, IBV_MW_TYPE_1);
	struct ibv_wc wc;
	struct pair p;
	int ret, st;

	check(mw != NULL, "ibv_alloc_mw(TYPE_1): %s", mw ? "ok" : strerror(errno));
	if (!mw || !pair_up(e, &p))
		return;
	b.bind_info.mr = mr;
	b.bind_info.addr = (uintptr_t)win;
	b.bind_info.length = 256;
	b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	ret = ibv_bind_mw(p.b, mw, &b);
	st = wait_wc(p.cqb, 1, &wc) == 1 ? (int)wc.status : -1;
	check(!ret && st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW,
	      "ibv_bind_mw (type 1): %d, status %d", ret, st);
	for (int i = 0; i < 256; i++)
		e->buf[i] = (char)(i ^ 0x5a);
	st = peer_op(e, &p, IBV_WR_RDMA_WRITE, mw->rkey, (uintptr_t)win, 0, 256);
	check(st == IBV_WC_SUCCESS && !memcmp(win, e->buf, 256),
	      "peer WRITE through the type 1 window: status %d", st);
	pair_down(&p);
	check(ibv_dealloc_mw(mw) == 0, "ibv_dealloc_mw (bound type 1)");
}

/* ---- Two guests: the window in the owner's guest, the peer in another ---------- */

/*
 * The two sides meet through files in a directory both guests share
 * (vm-run's /job): each file is written whole under a temporary name and
 * renamed, the other side waits for it (120 s at most, TCG boots slowly).
 */
static bool put(const char *dir, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static bool put(const char *dir, const char *name, const char *fmt, ...)
{
	char path[512], tmp[520];
	va_list ap;
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s/mw-%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return false;
	va_start(ap, fmt);
	ret = vfprintf(f, fmt, ap);
	va_end(ap);
	if (fclose(f) || ret < 0)
		return false;
	return rename(tmp, path) == 0;
}

/* Waits for the file and reads one line of it into @line; false after 120 s. */
static bool get(const char *dir, const char *name, char *line, size_t len)
{
	double end = now() + 120;
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/mw-%s", dir, name);
	while (!(f = fopen(path, "r"))) {
		if (now() > end) {
			check(false, "%s appeared within 120 s", path);
			return false;
		}
		usleep(20000);
	}
	line[0] = 0;
	if (!fgets(line, len, f))
		line[0] = 0;
	fclose(f);
	return true;
}

static void gid_hex(const union ibv_gid *g, char *out)
{
	for (int i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", g->raw[i]);
}

static bool gid_parse(const char *hex, union ibv_gid *g)
{
	for (int i = 0; i < 16; i++)
		if (sscanf(hex + 2 * i, "%2hhx", &g->raw[i]) != 1)
			return false;
	return true;
}

/* The bytes each side writes into the window; both compute them. */
static uint8_t pattern(int which, uint32_t i)
{
	return which ? (uint8_t)(i * 13 + 5) : (uint8_t)(i * 7 + 3);
}

/* One RC QP on its own CQ, connected to the QP the other side published. */
static struct ibv_qp *remote_qp(struct loop_env *e, const char *dir, const char *me,
				const char *other, struct ibv_cq **cq, uint64_t send_ops)
{
	char line[128], hex[33];
	union ibv_gid dgid;
	struct ibv_qp *qp;
	unsigned int dqpn;

	*cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	qp = *cq ? loop_make_qp(e, IBV_QPT_RC, *cq, *cq, NULL, 16, send_ops) : NULL;
	check(qp && !loop_to_init(qp), "%s: an RC QP in INIT", me);
	if (!qp)
		return NULL;
	gid_hex(&e->gid, hex);
	check(put(dir, me, "%u %s\n", qp->qp_num, hex), "%s: QPN %u and GID published", me,
	      qp->qp_num);
	if (!get(dir, other, line, sizeof(line)) || sscanf(line, "%u %32s", &dqpn, hex) != 2 ||
	    !gid_parse(hex, &dgid)) {
		check(false, "%s: the %s's QPN and GID read", me, other);
		return qp;
	}
	check(!loop_connect(e, qp, dqpn, &dgid), "%s: connected to QP %u at %s", me, dqpn, hex);
	return qp;
}

static int post_one(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	if (ibv_post_send(qp, wr, &bad))
		return -2;
	if (wait_wc(cq, 1, &wc) != 1)
		return -1;
	return wc.status;
}

static bool window_is(const char *win, int which)
{
	for (uint32_t i = 0; i < WIN_LEN; i++)
		if ((uint8_t)win[i] != pattern(which, i))
			return false;
	return true;
}

/*
 * The owner: binds a type 2 window on its MR (pattern 0 inside, the
 * sentinel around it), publishes its rkey, address and length, finds the
 * peer's WRITE (pattern 1) in it byte for byte and nothing outside, then
 * invalidates the window locally and finds that the peer's next WRITE
 * changed nothing.
 */
static void owner(struct loop_env *e, struct ibv_mr *mr, const char *dir)
{
	char *win = e->buf + BUF_SIZE / 2 + WIN_OFF, line[128];
	struct ibv_send_wr wr = { .wr_id = 7, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_mw *mw = NULL;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	uint32_t rkey;
	int st;

	qp = remote_qp(e, dir, "owner", "peer", &cq,
		       IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND);
	if (!qp)
		goto out;
	memset(e->buf + BUF_SIZE / 2, SENTINEL, BUF_SIZE / 2);
	for (uint32_t i = 0; i < WIN_LEN; i++)
		win[i] = (char)pattern(0, i);
	mw = ibv_alloc_mw(e->pd, IBV_MW_TYPE_2);
	check(mw != NULL, "owner: ibv_alloc_mw(TYPE_2): %s", mw ? "ok" : strerror(errno));
	if (!mw)
		goto out;
	rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = mr, .addr = (uintptr_t)win, .length = WIN_LEN,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	st = post_one(qp, cq, &wr);
	check(st == IBV_WC_SUCCESS, "owner: window of %d bytes bound, rkey 0x%x: status %d",
	      WIN_LEN, rkey, st);
	mw->rkey = rkey;
	if (st != IBV_WC_SUCCESS)
		goto out;
	check(put(dir, "window", "%u %" PRIu64 " %u\n", rkey, (uint64_t)(uintptr_t)win, WIN_LEN),
	      "owner: window published");

	if (!get(dir, "peer-wrote", line, sizeof(line)))
		goto out;
	check(window_is(win, 1) && all_sentinel(e->buf + BUF_SIZE / 2, WIN_OFF) &&
	      all_sentinel(win + WIN_LEN, BUF_SIZE / 2 - WIN_OFF - WIN_LEN),
	      "owner: the peer's WRITE is in the window byte for byte, nothing around it");

	wr = (struct ibv_send_wr){ .wr_id = 9, .opcode = IBV_WR_LOCAL_INV,
				   .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey };
	st = post_one(qp, cq, &wr);
	check(st == IBV_WC_SUCCESS, "owner: LOCAL_INV of the window: status %d", st);
	check(put(dir, "invalidated", "%d\n", st), "owner: invalidation published");

	if (!get(dir, "peer-refused", line, sizeof(line)))
		goto out;
	check(window_is(win, 1) && all_sentinel(e->buf + BUF_SIZE / 2, WIN_OFF) &&
	      all_sentinel(win + WIN_LEN, BUF_SIZE / 2 - WIN_OFF - WIN_LEN),
	      "owner: nothing written after the invalidation");
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (mw)
		check(ibv_dealloc_mw(mw) == 0, "owner: ibv_dealloc_mw");
	if (cq)
		ibv_destroy_cq(cq);
}

/*
 * The peer: READs the window through its rkey (pattern 0, byte for byte),
 * WRITEs pattern 1 into it, and once the owner has invalidated it, WRITEs
 * again: REM_ACCESS_ERR, its QP in ERR.
 */
static void peer(struct loop_env *e, const char *dir)
{
	struct ibv_sge sge = { (uintptr_t)e->buf, WIN_LEN, e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED };
	unsigned int rkey, len;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	char line[128];
	uint64_t addr;
	int st;

	qp = remote_qp(e, dir, "peer", "owner", &cq, 0);
	if (!qp)
		goto out;
	if (!get(dir, "window", line, sizeof(line)) ||
	    sscanf(line, "%u %" SCNu64 " %u", &rkey, &addr, &len) != 3 || len != WIN_LEN) {
		check(false, "peer: the window's rkey, address and length read");
		goto out;
	}
	memset(e->buf, 0, WIN_LEN);
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	st = post_one(qp, cq, &wr);
	check(st == IBV_WC_SUCCESS && window_is(e->buf, 0),
	      "peer: READ of %u bytes through rkey 0x%x: status %d, bytes %s", len, rkey, st,
	      window_is(e->buf, 0) ? "equal" : "differ");

	for (uint32_t i = 0; i < WIN_LEN; i++)
		e->buf[i] = (char)pattern(1, i);
	wr.opcode = IBV_WR_RDMA_WRITE;
	st = post_one(qp, cq, &wr);
	check(st == IBV_WC_SUCCESS, "peer: WRITE of %u bytes through the window: status %d", len,
	      st);
	check(put(dir, "peer-wrote", "%d\n", st), "peer: WRITE published");

	if (!get(dir, "invalidated", line, sizeof(line)))
		goto out;
	sge.length = 64;
	st = post_one(qp, cq, &wr);
	check(st == IBV_WC_REM_ACCESS_ERR,
	      "peer: WRITE after the invalidation: status %d (REM_ACCESS_ERR is %d)", st,
	      IBV_WC_REM_ACCESS_ERR);
	check(qp_state(qp) == IBV_QPS_ERR, "peer: its QP is in ERR");
	check(put(dir, "peer-refused", "%d\n", st), "peer: refusal published");
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
}

int main(int argc, char **argv)
{
	const char *dev = "qrdma0", *role = NULL, *dir = NULL;
	struct ibv_device_attr attr;
	struct ibv_mr *mr = NULL;
	struct loop_env e = {};
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dev") && i + 1 < argc) {
			dev = argv[++i];
		} else if ((!strcmp(argv[i], "--owner") || !strcmp(argv[i], "--peer")) &&
			   i + 1 < argc) {
			role = argv[i] + 2;
			dir = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--dev NAME] [--owner DIR | --peer DIR]\n",
				argv[0]);
			return 2;
		}
	}
	if (role && loop_open(&e, dev)) {
		if (!strcmp(role, "peer")) {
			peer(&e, dir);
		} else {
			mr = ibv_reg_mr(e.pd, e.buf + BUF_SIZE / 2, BUF_SIZE / 2,
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
			check(mr != NULL, "owner: an MR with MW_BIND: %s",
			      mr ? "ok" : strerror(errno));
			if (mr) {
				owner(&e, mr, dir);
				check(ibv_dereg_mr(mr) == 0, "owner: dereg once the window is gone");
			}
		}
		goto out;
	}
	if (role)
		goto out;
	if (loop_open(&e, dev) && e.mr && !ibv_query_device(e.ctx, &attr)) {
		check((attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
		      (attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) && attr.max_mw > 0,
		      "the device advertises memory windows (type 2B), max_mw %d", attr.max_mw);
		/* The owner's MR: the upper half of the buffer, with MW_BIND. */
		mr = ibv_reg_mr(e.pd, e.buf + BUF_SIZE / 2, BUF_SIZE / 2,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
		check(mr != NULL, "register an MR with MW_BIND: %s", mr ? "ok" : strerror(errno));
		if (mr) {
			type2_checks(&e, mr);
			inv_twice_checks(&e, mr);
			bad_bind_checks(&e, mr);
			type1_checks(&e, mr);
			check(ibv_dereg_mr(mr) == 0, "dereg of the MR once its windows are gone");
		}
	}
out:
	loop_close(&e);
	printf("1..%d\n# %d of %d checks failed\n", checks, failures, checks);
	return failures ? 1 : 0;
}
