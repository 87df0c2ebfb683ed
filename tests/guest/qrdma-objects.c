// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Guest-side check of the object verbs (the control path) on one qrdma
 * device: CQs, QPs, SRQs, AHs and MRs at scale, the QP state machine for
 * RC and UD, CQ resize, MR re-registration, running out of CQs, and bad
 * input. Prints TAP lines ("ok N - ...", "not ok N - ...", "# ..." for
 * notes) and exits non-zero if any check failed.
 *
 * usage: qrdma-objects [--dev NAME] [--cqs N] [--qps N] [--mrs N] [--no-exhaust]
 *        qrdma-objects [--dev NAME] --hold
 *        qrdma-objects [--dev NAME] --limits
 * --hold creates a mix of objects, prints "# holding", and sleeps until it
 * is killed: the VM test kills it with objects open.
 * --limits runs only the resource-limit checks: a CQ overflow (the async
 * events, the CQEs left intact, the QP in error, recovery), then QPs,
 * SRQs, AHs, MRs and PBLEs each created until the first failure (ENOMEM,
 * at the advertised maximum less what is in use), freed, and created
 * again; after each, the driver's and the device's object counts in sysfs
 * must be back where they were.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sys/mman.h>

#include "guest_util.h"

#define MB (1024ul * 1024)
#define HUGE_2M (2 * MB)

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

struct env {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr dev;
	struct ibv_port_attr port;
	union ibv_gid gid;
	int gid_index;
	long idle[16];		/* object counts before the limit tests (res_names) */
};

/* ---- Memory for MRs ------------------------------------------------------- */

struct pool {
	char *va;
	size_t bytes;
	const char *kind;
	bool hugetlb;
};

static long meminfo(const char *key)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)) && line[strlen(key)] == ':')
			v = strtol(line + strlen(key) + 1, NULL, 10);
	fclose(f);
	return v;
}

/* 2 MB pages from hugetlbfs when the test script reserved some. */
static bool pool_hugetlb(struct pool *p, size_t bytes)
{
	long free_pages = meminfo("HugePages_Free"), page_kb = meminfo("Hugepagesize");

	if (free_pages <= 0 || page_kb != 2048 || (size_t)free_pages * HUGE_2M < bytes)
		return false;
	p->va = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (p->va == MAP_FAILED)
		return false;
	p->bytes = bytes;
	p->kind = "hugetlb 2 MB pages";
	p->hugetlb = true;
	memset(p->va, 0x5a, bytes);
	return true;
}

/* Anonymous memory, 2 MB aligned; huge asks for transparent huge pages. */
static bool pool_anon(struct pool *p, size_t bytes, bool huge)
{
	size_t map_bytes = bytes + HUGE_2M;
	char *raw, *start;

	raw = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return false;
	start = (char *)(((uintptr_t)raw + HUGE_2M - 1) & ~(HUGE_2M - 1));
	if (start > raw)
		munmap(raw, start - raw);
	if (start + bytes < raw + map_bytes)
		munmap(start + bytes, raw + map_bytes - (start + bytes));
	madvise(start, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	memset(start, 0xa5, bytes);
	p->va = start;
	p->bytes = bytes;
	p->kind = huge ? "anonymous, MADV_HUGEPAGE" : "anonymous, 4 KB pages";
	p->hugetlb = false;
	return true;
}

static void pool_free(struct pool *p)
{
	if (p->va)
		munmap(p->va, p->bytes);
	p->va = NULL;
}

/* ---- Helpers -------------------------------------------------------------- */

static struct ibv_qp *make_qp(struct env *e, enum ibv_qp_type type, struct ibv_cq *scq,
			      struct ibv_cq *rcq, struct ibv_srq *srq, uint32_t send_wr,
			      uint32_t recv_wr, uint32_t send_sge, uint32_t recv_sge,
			      uint32_t inline_data, struct ibv_qp_cap *cap_out)
{
	struct ibv_qp_init_attr a = {
		.send_cq = scq,
		.recv_cq = rcq,
		.srq = srq,
		.qp_type = type,
		.cap = {
			.max_send_wr = send_wr,
			.max_recv_wr = recv_wr,
			.max_send_sge = send_sge,
			.max_recv_sge = recv_sge,
			.max_inline_data = inline_data,
		},
	};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &a);

	if (qp && cap_out)
		*cap_out = a.cap;
	return qp;
}

static bool caps_cover(const struct ibv_qp_cap *got, const struct ibv_qp_cap *want, bool srq)
{
	if (got->max_send_wr < want->max_send_wr || got->max_send_sge < want->max_send_sge ||
	    got->max_inline_data < want->max_inline_data)
		return false;
	return srq || (got->max_recv_wr >= want->max_recv_wr &&
		       got->max_recv_sge >= want->max_recv_sge);
}

static int modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	return ibv_modify_qp(qp, a, mask);
}

static void expect_modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, int want,
			  const char *what)
{
	int ret = modify(qp, a, mask);

	check(ret == want, "%s: %s (expected %s)", what, err_name(ret), err_name(want));
}

static bool query(struct ibv_qp *qp, struct ibv_qp_attr *a, struct ibv_qp_init_attr *ia)
{
	memset(a, 0, sizeof(*a));
	memset(ia, 0, sizeof(*ia));
	return ibv_query_qp(qp, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS | IBV_QP_QKEY | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER |
			    IBV_QP_SQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_DEST_QPN |
			    IBV_QP_CAP, ia) == 0;
}

static const char *state_name(enum ibv_qp_state s)
{
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return (unsigned int)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

static void expect_state(struct ibv_qp *qp, enum ibv_qp_state want, const char *type)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	bool ok = query(qp, &a, &ia);

	check(ok && a.qp_state == want, "%s: ibv_query_qp reports %s (expected %s)", type,
	      ok ? state_name(a.qp_state) : "an error", state_name(want));
}

/* ---- Objects at scale ----------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void test_scale(struct env *e, int ncq, int nqp, int nmr)
{
	int nsrq = e->dev.max_srq < 16 ? e->dev.max_srq : 16;
	struct ibv_cq **cqs = calloc(ncq, sizeof(*cqs));
	struct ibv_qp **qps = calloc(nqp, sizeof(*qps));
	struct ibv_srq **srqs = calloc(nsrq ? nsrq : 1, sizeof(*srqs));
	struct ibv_mr **mrs = calloc(nmr, sizeof(*mrs));
	uint32_t *keys = calloc(nmr, sizeof(*keys));
	struct pool huge = {}, thp = {}, small = {};
	int i, made, bad, bad_err = 0, bad_at = -1;
	size_t pinned = 0, sizes_seen[4] = {};
	double t0;

	/* CQs: mixed sizes; each reports a power of two >= what was asked. */
	t0 = now();
	bad = 0;
	for (i = 0; i < ncq; i++) {
		int want = 1 + (i * 37) % 300;

		cqs[i] = ibv_create_cq(e->ctx, want, NULL, NULL, 0);
		if (!cqs[i] || cqs[i]->cqe < want || !is_pow2(cqs[i]->cqe)) {
			if (!bad++) {
				bad_at = i;
				bad_err = cqs[i] ? 0 : errno;
			}
			if (!cqs[i])
				break;
		}
	}
	made = i;
	check(!bad, "created %d of %d CQs, each with cqe >= asked and a power of two%s%s",
	      made, ncq, bad ? ", first bad at " : "", bad ? err_name(bad_err) : "");
	if (bad)
		note("first bad CQ: #%d", bad_at);
	note("%d CQs in %.1f s", made, now() - t0);
	ncq = made;
	if (!ncq)
		goto free_cqs;

	for (i = 0; i < nsrq; i++) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 2 } };

		srqs[i] = ibv_create_srq(e->pd, &sa);
		if (!srqs[i])
			break;
	}
	check(i == nsrq, "created %d of %d SRQs (%s)", i, nsrq, i == nsrq ? "ok" : err_name(errno));
	nsrq = i;

	/* QPs: RC and UD alternating, every fourth on an SRQ, mixed caps. */
	t0 = now();
	bad = 0;
	for (i = 0; i < nqp; i++) {
		enum ibv_qp_type type = (i & 1) ? IBV_QPT_UD : IBV_QPT_RC;
		struct ibv_srq *srq = (nsrq && i % 4 == 3) ? srqs[(i / 4) % nsrq] : NULL;
		struct ibv_qp_cap want = {
			.max_send_wr = 1 + i % 64,
			.max_recv_wr = 1 + i % 32,
			.max_send_sge = 1 + i % 4,
			.max_recv_sge = 1 + i % 3,
			.max_inline_data = i % 3 ? 0 : 64,
		}, got;

		qps[i] = make_qp(e, type, cqs[i % ncq], cqs[(i + 1) % ncq], srq, want.max_send_wr,
				 want.max_recv_wr, want.max_send_sge, want.max_recv_sge,
				 want.max_inline_data, &got);
		if (!qps[i] || !caps_cover(&got, &want, srq)) {
			if (!bad++) {
				bad_at = i;
				bad_err = qps[i] ? 0 : errno;
			}
			if (!qps[i])
				break;
		}
	}
	made = i;
	check(!bad, "created %d of %d QPs (RC and UD, %d on SRQs), caps cover what was asked%s%s",
	      made, nqp, nsrq ? (made + 1) / 4 : 0, bad ? ", first bad: " : "",
	      bad ? err_name(bad_err) : "");
	if (bad)
		note("first bad QP: #%d", bad_at);
	note("%d QPs in %.1f s", made, now() - t0);
	nqp = made;

	/*
	 * MRs, all alive at once, over three pools: hugetlb 2 MB pages (if
	 * reserved), anonymous memory the kernel may back with transparent
	 * huge pages, and 4 KB pages. Every 250th is big (4..64 MB), every
	 * 10th medium (256 KB..2 MB), the rest 4..64 KB, some starting
	 * inside a page.
	 */
	if (!pool_hugetlb(&huge, 64 * MB))
		note("no hugetlb pages reserved: big MRs use the THP pool only");
	if (!pool_anon(&thp, 64 * MB, true) || !pool_anon(&small, 16 * MB, false)) {
		check(false, "allocate the MR pools: %s", strerror(errno));
		nmr = 0;
		goto free_objects;
	}
	note("MR pools: %s%s%s, %s, %s", huge.va ? "64 MB " : "", huge.va ? huge.kind : "",
	     huge.va ? "" : "(no hugetlb)", thp.kind, small.kind);
	t0 = now();
	bad = 0;
	for (i = 0; i < nmr; i++) {
		static const size_t big[] = { 4 * MB, 8 * MB, 16 * MB, 32 * MB, 64 * MB };
		int access = IBV_ACCESS_LOCAL_WRITE;
		struct pool *p;
		size_t len, off;
		int cls;

		if (i % 250 == 0) {
			cls = 3;
			p = (huge.va && i % 500 == 0) ? &huge : &thp;
			len = big[(i / 250) % 5];
			off = 0;
		} else if (i % 10 == 0) {
			cls = 2;
			p = &thp;
			len = 256 * 1024 << ((i / 10) % 4);
			off = ((size_t)i * 7 * 4096) % (p->bytes - len);
		} else {
			cls = (i % 10) & 1;
			p = &small;
			len = 4096ul << (i % 5);
			off = ((size_t)i * 13 * 4096) % (p->bytes - len - 4096);
			if (i % 7 == 0)
				off += 64 * (i % 63);	/* starts inside a page */
		}
		if (i % 3 == 0)
			access |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
		mrs[i] = ibv_reg_mr(e->pd, p->va + off, len, access);
		if (!mrs[i]) {
			if (!bad++) {
				bad_at = i;
				bad_err = errno;
			}
			break;
		}
		keys[i] = mrs[i]->lkey;
		pinned += len;
		sizes_seen[cls]++;
	}
	made = i;
	check(!bad, "registered %d of %d MRs (%zu big, %zu medium, %zu small), %zu MB in all%s%s",
	      made, nmr, sizes_seen[3], sizes_seen[2], sizes_seen[0] + sizes_seen[1],
	      pinned / MB, bad ? ", first failure: " : "", bad ? err_name(bad_err) : "");
	if (bad)
		note("first failed MR: #%d", bad_at);
	note("%d MRs in %.1f s", made, now() - t0);
	nmr = made;

	/* lkeys are STags: no two live MRs share one. */
	qsort(keys, nmr, sizeof(*keys), cmp_u32);
	bad = 0;
	for (i = 1; i < nmr; i++)
		if (keys[i] == keys[i - 1] && !bad++)
			note("two MRs share lkey 0x%x", keys[i]);
	check(!bad, "%d live MRs have distinct lkeys", nmr);

free_objects:
	t0 = now();
	bad = 0;
	for (i = 0; i < nmr; i++) {
		int ret = ibv_dereg_mr(mrs[i]);

		if (ret && !bad++)
			bad_err = ret;
	}
	check(!bad, "deregistered %d MRs%s%s", nmr, bad ? ": " : "", bad ? err_name(bad_err) : "");
	bad = 0;
	for (i = 0; i < nqp; i++) {
		int ret = ibv_destroy_qp(qps[i]);

		if (ret && !bad++)
			bad_err = ret;
	}
	check(!bad, "destroyed %d QPs%s%s", nqp, bad ? ": " : "", bad ? err_name(bad_err) : "");
	bad = 0;
	for (i = 0; i < nsrq; i++) {
		int ret = ibv_destroy_srq(srqs[i]);

		if (ret && !bad++)
			bad_err = ret;
	}
	check(!bad, "destroyed %d SRQs%s%s", nsrq, bad ? ": " : "", bad ? err_name(bad_err) : "");
free_cqs:
	bad = 0;
	for (i = 0; i < ncq; i++) {
		int ret = ibv_destroy_cq(cqs[i]);

		if (ret && !bad++)
			bad_err = ret;
	}
	check(!bad, "destroyed %d CQs%s%s", ncq, bad ? ": " : "", bad ? err_name(bad_err) : "");
	note("freed everything in %.1f s", now() - t0);
	pool_free(&huge);
	pool_free(&thp);
	pool_free(&small);
	free(keys);
	free(mrs);
	free(srqs);
	free(qps);
	free(cqs);
}

/* ---- QP state machine ----------------------------------------------------- */

static void test_rc_states(struct env *e, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a, q;
	struct ibv_qp *qp;
	bool ok;

	qp = make_qp(e, IBV_QPT_RC, cq, cq, NULL, 16, 16, 1, 1, 0, NULL);
	check(qp, "RC QP for the state walk: %s", qp ? "created" : strerror(errno));
	if (!qp)
		return;
	expect_state(qp, IBV_QPS_RESET, "RC new");

	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 1, .timeout = 14,
				  .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1 };
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC, EINVAL, "RC RESET->RTS refused");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR };
	expect_modify(qp, &a, IBV_QP_STATE, EINVAL, "RC RESET->RTR refused");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .pkey_index = 0,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS, EINVAL,
		      "RC RESET->INIT without PORT refused");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				  .qp_access_flags = 0, .qkey = 0x1234 };
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		      IBV_QP_ACCESS_FLAGS | IBV_QP_QKEY, EINVAL, "RC RESET->INIT with a QKEY refused");
	expect_state(qp, IBV_QPS_RESET, "RC after refused modifies");

	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		      IBV_QP_ACCESS_FLAGS, 0, "RC RESET->INIT");
	ok = query(qp, &q, &ia);
	check(ok && q.qp_state == IBV_QPS_INIT && q.port_num == 1 && q.pkey_index == 0 &&
	      q.qp_access_flags == IBV_ACCESS_REMOTE_WRITE,
	      "RC INIT: query reports state %s port %u pkey_index %u access 0x%x",
	      state_name(q.qp_state), q.port_num, q.pkey_index, q.qp_access_flags);

	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, 0, "RC INIT->INIT (access flags)");
	ok = query(qp, &q, &ia);
	check(ok && q.qp_access_flags == (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ),
	      "RC INIT->INIT: query reports access 0x%x", q.qp_access_flags);

	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 1, .timeout = 14,
				  .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1 };
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC, EINVAL, "RC INIT->RTS refused");

	/* INIT->RTR: the path to ourselves, by the port's own GID. */
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = qp->qp_num,
		.rq_psn = 0x1234,
		.max_dest_rd_atomic = 4,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1,
			.port_num = 1,
			.grh = { .dgid = e->gid, .sgid_index = e->gid_index, .hop_limit = 64 },
		},
	};
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, EINVAL,
		      "RC INIT->RTR without an AV refused");
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, 0,
		      "RC INIT->RTR");
	ok = query(qp, &q, &ia);
	check(ok && q.qp_state == IBV_QPS_RTR && q.path_mtu == IBV_MTU_1024 &&
	      q.dest_qp_num == qp->qp_num && q.rq_psn == 0x1234 && q.max_dest_rd_atomic == 4 &&
	      q.min_rnr_timer == 12,
	      "RC RTR: query reports state %s mtu %d dest_qpn 0x%x rq_psn 0x%x max_dest_rd_atomic %u min_rnr_timer %u",
	      state_name(q.qp_state), q.path_mtu, q.dest_qp_num, q.rq_psn, q.max_dest_rd_atomic,
	      q.min_rnr_timer);
	check(ok && q.ah_attr.is_global && !memcmp(&q.ah_attr.grh.dgid, &e->gid, sizeof(e->gid)) &&
	      q.ah_attr.grh.sgid_index == e->gid_index && q.ah_attr.grh.hop_limit == 64,
	      "RC RTR: query reports the AV (DGID, SGID index %u, hop limit %u)",
	      q.ah_attr.grh.sgid_index, q.ah_attr.grh.hop_limit);

	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0x4321, .retry_cnt = 6,
				  .rnr_retry = 5, .max_rd_atomic = 2 };
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		      IBV_QP_MAX_QP_RD_ATOMIC, EINVAL, "RC RTR->RTS without TIMEOUT refused");
	a.timeout = 14;
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC, 0, "RC RTR->RTS");
	ok = query(qp, &q, &ia);
	check(ok && q.qp_state == IBV_QPS_RTS && q.sq_psn == 0x4321 && q.timeout == 14 &&
	      q.retry_cnt == 6 && q.rnr_retry == 5 && q.max_rd_atomic == 2,
	      "RC RTS: query reports state %s sq_psn 0x%x timeout %u retry %u rnr_retry %u max_rd_atomic %u",
	      state_name(q.qp_state), q.sq_psn, q.timeout, q.retry_cnt, q.rnr_retry,
	      q.max_rd_atomic);
	check(ok && q.rq_psn == 0x1234 && q.dest_qp_num == qp->qp_num,
	      "RC RTS: RTR's attributes kept (rq_psn 0x%x)", q.rq_psn);

	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .min_rnr_timer = 20 };
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER, 0, "RC RTS->RTS (min_rnr_timer)");
	ok = query(qp, &q, &ia);
	check(ok && q.min_rnr_timer == 20, "RC RTS->RTS: query reports min_rnr_timer %u",
	      q.min_rnr_timer);

	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_SQD };
	expect_modify(qp, &a, IBV_QP_STATE, 0, "RC RTS->SQD");
	expect_state(qp, IBV_QPS_SQD, "RC SQD");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS };
	expect_modify(qp, &a, IBV_QP_STATE, 0, "RC SQD->RTS");
	expect_state(qp, IBV_QPS_RTS, "RC RTS again");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR };
	expect_modify(qp, &a, IBV_QP_STATE, 0, "RC RTS->ERR");
	expect_state(qp, IBV_QPS_ERR, "RC ERR");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS };
	expect_modify(qp, &a, IBV_QP_STATE, EINVAL, "RC ERR->RTS refused");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET };
	expect_modify(qp, &a, IBV_QP_STATE, 0, "RC ERR->RESET");
	expect_state(qp, IBV_QPS_RESET, "RC RESET again");

	/* A reset QP is as good as new. */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				  .qp_access_flags = 0 };
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		      IBV_QP_ACCESS_FLAGS, 0, "RC RESET->INIT after a reset");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR };
	expect_modify(qp, &a, IBV_QP_STATE, 0, "RC INIT->ERR");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET };
	expect_modify(qp, &a, IBV_QP_STATE, 0, "RC ERR->RESET");
	check(ibv_destroy_qp(qp) == 0, "RC QP destroyed");
}

static void test_ud_states(struct env *e, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a, q;
	struct ibv_qp *qp;
	bool ok;

	qp = make_qp(e, IBV_QPT_UD, cq, cq, NULL, 16, 16, 1, 1, 0, NULL);
	check(qp, "UD QP for the state walk: %s", qp ? "created" : strerror(errno));
	if (!qp)
		return;
	expect_state(qp, IBV_QPS_RESET, "UD new");

	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 1 };
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, EINVAL, "UD RESET->RTS refused");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1 };
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT, EINVAL,
		      "UD RESET->INIT without QKEY refused");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				  .qkey = 0x11111111, .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY |
		      IBV_QP_ACCESS_FLAGS, EINVAL, "UD RESET->INIT with access flags refused");
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0,
		      "UD RESET->INIT");
	ok = query(qp, &q, &ia);
	check(ok && q.qp_state == IBV_QPS_INIT && q.qkey == 0x11111111 && q.port_num == 1,
	      "UD INIT: query reports state %s qkey 0x%x port %u", state_name(q.qp_state), q.qkey,
	      q.port_num);

	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 1 };
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, EINVAL, "UD INIT->RTS refused");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR };
	expect_modify(qp, &a, IBV_QP_STATE, 0, "UD INIT->RTR");
	expect_state(qp, IBV_QPS_RTR, "UD RTR");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS };
	expect_modify(qp, &a, IBV_QP_STATE, EINVAL, "UD RTR->RTS without SQ_PSN refused");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0x777 };
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, 0, "UD RTR->RTS");
	ok = query(qp, &q, &ia);
	check(ok && q.qp_state == IBV_QPS_RTS && q.sq_psn == 0x777 && q.qkey == 0x11111111,
	      "UD RTS: query reports state %s sq_psn 0x%x qkey 0x%x", state_name(q.qp_state),
	      q.sq_psn, q.qkey);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .qkey = 0x22222222 };
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_QKEY, 0, "UD RTS->RTS (qkey)");
	ok = query(qp, &q, &ia);
	check(ok && q.qkey == 0x22222222, "UD RTS->RTS: query reports qkey 0x%x", q.qkey);

	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_SQD };
	expect_modify(qp, &a, IBV_QP_STATE, 0, "UD RTS->SQD");
	expect_state(qp, IBV_QPS_SQD, "UD SQD");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS };
	expect_modify(qp, &a, IBV_QP_STATE, 0, "UD SQD->RTS");
	expect_state(qp, IBV_QPS_RTS, "UD RTS again");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR };
	expect_modify(qp, &a, IBV_QP_STATE, 0, "UD RTS->ERR");
	expect_state(qp, IBV_QPS_ERR, "UD ERR");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				  .qkey = 1 };
	expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
		      EINVAL, "UD ERR->INIT refused");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET };
	expect_modify(qp, &a, IBV_QP_STATE, 0, "UD ERR->RESET");
	expect_state(qp, IBV_QPS_RESET, "UD RESET again");
	check(ibv_destroy_qp(qp) == 0, "UD QP destroyed");
}

/* ---- CQ resize and the extended CQ ---------------------------------------- */

static void test_cq(struct env *e)
{
	struct ibv_cq_init_attr_ex ax = { .cqe = 100, .wc_flags = IBV_WC_STANDARD_FLAGS };
	int max = e->dev.max_cqe, largest, ret, before;
	int64_t ring;
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cq;

	cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	check(cq && cq->cqe == 16, "create_cq(16): cqe %d (expected 16: 2^n, all usable)",
	      cq ? cq->cqe : -1);
	if (!cq)
		return;
	ret = ibv_resize_cq(cq, 1000);
	check(ret == 0 && cq->cqe == 1024, "resize_cq up to 1000: %s, cqe %d (expected 1024)",
	      err_name(ret), cq->cqe);
	ret = ibv_resize_cq(cq, 10);
	check(ret == 0 && cq->cqe == 16, "resize_cq down to 10: %s, cqe %d (expected 16)",
	      err_name(ret), cq->cqe);
	before = cq->cqe;
	ret = ibv_resize_cq(cq, max + 1);
	check(ret == EINVAL && cq->cqe == before, "resize_cq to max_cqe + 1 refused: %s, cqe %d",
	      err_name(ret), cq->cqe);
	ret = ibv_resize_cq(cq, 0);
	check(ret == EINVAL && cq->cqe == before, "resize_cq to 0 refused: %s", err_name(ret));
	ret = ibv_resize_cq(cq, 3000);
	check(ret == 0 && cq->cqe == 4096, "resize_cq up again to 3000: %s, cqe %d", err_name(ret),
	      cq->cqe);
	check(ibv_destroy_cq(cq) == 0, "resized CQ destroyed");

	/*
	 * The largest CQ: the device takes rings of 2^n <= max_cqe + 1, so
	 * max_cqe itself when that is a power of two (the default).
	 */
	for (ring = 4; ring * 2 <= (int64_t)max + 1; ring *= 2)
		;
	largest = ring < max ? (int)ring : max;
	cq = ibv_create_cq(e->ctx, largest, NULL, NULL, 0);
	check(cq && cq->cqe == ring, "create_cq(%d) with max_cqe %d: %s, cqe %d", largest, max,
	      cq ? "created" : strerror(errno), cq ? cq->cqe : -1);
	if (cq)
		ibv_destroy_cq(cq);
	if (largest != max)
		note("max_cqe %d is not a power of two: CQs of more than %d entries need a ring the device refuses",
		     max, largest);

	cqx = ibv_create_cq_ex(e->ctx, &ax);
	check(cqx && cqx->cqe == 128, "create_cq_ex(100, standard wc_flags): %s, cqe %d",
	      cqx ? "created" : strerror(errno), cqx ? cqx->cqe : -1);
	if (cqx)
		check(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)) == 0, "extended CQ destroyed");
	ax.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	errno = 0;
	cqx = ibv_create_cq_ex(e->ctx, &ax);
	check(!cqx && errno == EOPNOTSUPP, "create_cq_ex with a completion timestamp: %s",
	      cqx ? "created" : strerror(errno));
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
}

/* ---- SRQs and AHs ---------------------------------------------------------- */

static void test_srq_ah(struct env *e)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 100, .max_sge = 2, .srq_limit = 10 } };
	struct ibv_srq_attr q = {};
	struct ibv_ah *ahs[64];
	struct ibv_srq *srq;
	int ret, i, n;

	srq = ibv_create_srq(e->pd, &sa);
	check(srq && sa.attr.max_wr >= 100 && sa.attr.max_sge >= 2,
	      "create_srq(100 WRs, 2 SGEs): %s, max_wr %u max_sge %u",
	      srq ? "created" : strerror(errno), sa.attr.max_wr, sa.attr.max_sge);
	if (srq) {
		ret = ibv_query_srq(srq, &q);
		check(ret == 0 && q.max_wr == sa.attr.max_wr && q.srq_limit == 10,
		      "query_srq: %s, max_wr %u srq_limit %u", err_name(ret), q.max_wr, q.srq_limit);
		q = (struct ibv_srq_attr){ .srq_limit = 20 };
		ret = ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT);
		check(ret == 0, "modify_srq(limit 20): %s", err_name(ret));
		memset(&q, 0, sizeof(q));
		ret = ibv_query_srq(srq, &q);
		check(ret == 0 && q.srq_limit == 20, "query_srq after modify: srq_limit %u",
		      q.srq_limit);
		q = (struct ibv_srq_attr){ .max_wr = 200 };
		ret = ibv_modify_srq(srq, &q, IBV_SRQ_MAX_WR);
		check(ret == EOPNOTSUPP, "modify_srq(max_wr) refused: %s", err_name(ret));
		check(ibv_destroy_srq(srq) == 0, "SRQ destroyed");
	}
	sa.attr.max_wr = e->dev.max_srq_wr + 1;
	sa.attr.srq_limit = 0;
	errno = 0;
	srq = ibv_create_srq(e->pd, &sa);
	check(!srq && errno == EINVAL, "create_srq beyond max_srq_wr: %s",
	      srq ? "created" : strerror(errno));
	if (srq)
		ibv_destroy_srq(srq);

	/* AHs to our own GID. */
	for (n = 0; n < 64; n++) {
		struct ibv_ah_attr aa = {
			.is_global = 1,
			.port_num = 1,
			.grh = { .dgid = e->gid, .sgid_index = e->gid_index, .hop_limit = 64,
				 .flow_label = n },
		};

		ahs[n] = ibv_create_ah(e->pd, &aa);
		if (!ahs[n])
			break;
	}
	check(n == 64, "created %d of 64 AHs%s%s", n, n < 64 ? ": " : "",
	      n < 64 ? strerror(errno) : "");
	for (i = 0; i < n; i++)
		if (ibv_destroy_ah(ahs[i]))
			break;
	check(i == n, "destroyed %d AHs", n);
}

/* ---- Conformance: what IB and libibverbs allow (docs/conformance.md) ------- */

/*
 * Attributes the spec and libibverbs allow and other providers accept,
 * each found refused or misreported in the review of docs/conformance.md
 * (the first three failed before their fixes), and the verbs the review
 * found right, so that they stay so.
 */
static void test_conformance(struct env *e)
{
	struct ibv_cq_init_attr_ex ax = { .cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS,
					  .comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
					  .flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED };
	struct ibv_srq_init_attr_ex sx = { .attr = { .max_wr = 16, .max_sge = 1 },
					   .comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE,
					   .srq_type = IBV_SRQT_BASIC, .pd = e->pd };
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = 1, .sl = 3, .static_rate = IBV_RATE_10_GBPS,
		.grh = { .dgid = e->gid, .sgid_index = e->gid_index, .hop_limit = 17,
			 .traffic_class = 0x28, .flow_label = 0xabcde },
	};
	const unsigned int caps = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT |
				  IBV_DEVICE_SYS_IMAGE_GUID;
	struct ibv_gid_entry ent, table[64];
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a, q;
	struct ibv_cq_ex *cqx;
	union ibv_gid g;
	struct ibv_srq *srq;
	struct ibv_ah *ah;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	ssize_t n;
	int ret;
	bool ok;

	/* create_cq_ex: SINGLE_THREADED is a hint (was EOPNOTSUPP). */
	cqx = ibv_create_cq_ex(e->ctx, &ax);
	check(cqx, "create_cq_ex with the SINGLE_THREADED hint: %s",
	      cqx ? "created" : strerror(errno));
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
	ax.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	errno = 0;
	cqx = ibv_create_cq_ex(e->ctx, &ax);
	check(!cqx && errno == EOPNOTSUPP, "create_cq_ex with IGNORE_OVERRUN refused: %s",
	      cqx ? "created" : strerror(errno));
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));

	/* query_device: the capabilities every qrdma device has (were 0). */
	check((e->dev.device_cap_flags & caps) == caps,
	      "device_cap_flags 0x%x has RC_RNR_NAK_GEN, PORT_ACTIVE_EVENT, SYS_IMAGE_GUID",
	      e->dev.device_cap_flags);
	check(e->dev.sys_image_guid && e->dev.sys_image_guid == e->dev.node_guid,
	      "sys_image_guid 0x%llx is the node GUID",
	      (unsigned long long)be64toh(e->dev.sys_image_guid));

	/* PATH_MIG_STATE: MIGRATED is what a QP without alternate path is (was EOPNOTSUPP). */
	cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	qp = cq ? make_qp(e, IBV_QPT_RC, cq, cq, NULL, 16, 16, 1, 1, 0, NULL) : NULL;
	check(qp, "RC QP for PATH_MIG_STATE: %s", qp ? "created" : strerror(errno));
	if (qp) {
		a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1 };
		ok = !modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS);
		a = (struct ibv_qp_attr){
			.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
			.dest_qp_num = qp->qp_num, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
			.ah_attr = { .is_global = 1, .port_num = 1,
				     .grh = { .dgid = e->gid, .sgid_index = e->gid_index,
					      .hop_limit = 64 } },
		};
		ok = ok && !modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER);
		check(ok, "RC QP to RTR");
		a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
					  .rnr_retry = 7, .max_rd_atomic = 1,
					  .path_mig_state = IBV_MIG_REARM };
		expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |
			      IBV_QP_PATH_MIG_STATE, EINVAL,
			      "RTR->RTS with PATH_MIG_STATE REARM refused (no alternate path)");
		expect_state(qp, IBV_QPS_RTR, "RC after the refused REARM");
		a.path_mig_state = IBV_MIG_MIGRATED;
		expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |
			      IBV_QP_PATH_MIG_STATE, 0, "RTR->RTS with PATH_MIG_STATE MIGRATED");
		a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .min_rnr_timer = 14,
					  .path_mig_state = IBV_MIG_MIGRATED };
		expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
			      0, "RTS->RTS with PATH_MIG_STATE MIGRATED and MIN_RNR_TIMER");
		memset(&q, 0, sizeof(q));
		ret = ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_PATH_MIG_STATE |
				   IBV_QP_MIN_RNR_TIMER, &ia);
		check(!ret && q.qp_state == IBV_QPS_RTS && q.path_mig_state == IBV_MIG_MIGRATED &&
		      q.min_rnr_timer == 14,
		      "query_qp: %s, state %s path_mig_state %d min_rnr_timer %u", err_name(ret),
		      state_name(q.qp_state), q.path_mig_state, q.min_rnr_timer);
		/* The RDMA core bans alternate paths on RoCE before the driver sees them. */
		a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .alt_port_num = 1,
					  .alt_timeout = 14,
					  .alt_ah_attr = { .is_global = 1, .port_num = 1,
							   .grh = { .dgid = e->gid,
								    .sgid_index = e->gid_index,
								    .hop_limit = 64 } } };
		expect_modify(qp, &a, IBV_QP_STATE | IBV_QP_ALT_PATH, EINVAL,
			      "RTS->RTS with ALT_PATH refused (no alternate paths on RoCE)");
		ibv_destroy_qp(qp);
	}
	if (cq)
		ibv_destroy_cq(cq);

	/* GIDs through the extended verbs: the same GIDs, RoCE v2, on the netdev. */
	ret = ibv_query_gid_ex(e->ctx, 1, e->gid_index, &ent, 0);
	ok = !ibv_query_gid(e->ctx, 1, e->gid_index, &g);
	check(!ret && ok && !memcmp(&ent.gid, &g, sizeof(g)) && ent.gid_index == (uint32_t)e->gid_index &&
	      ent.port_num == 1 && ent.gid_type == IBV_GID_TYPE_ROCE_V2 && ent.ndev_ifindex,
	      "query_gid_ex(%d): %s, type %u ifindex %u, the GID query_gid gives", e->gid_index,
	      err_name(ret), ent.gid_type, ent.ndev_ifindex);
	n = ibv_query_gid_table(e->ctx, table, 64, 0);
	ok = n > 0;
	for (ret = 0; ok && ret < n; ret++)
		ok = table[ret].port_num == 1 && table[ret].gid_type == IBV_GID_TYPE_ROCE_V2 &&
		     table[ret].ndev_ifindex == ent.ndev_ifindex;
	check(ok, "query_gid_table: %zd entries, every one RoCE v2 on port 1's netdev", n);

	/* An AH with every field set (SL, rate, traffic class, flow label, hop limit). */
	ah = ibv_create_ah(e->pd, &aa);
	check(ah, "create_ah with every field: %s", ah ? "created" : strerror(errno));
	if (ah)
		ibv_destroy_ah(ah);

	/* ibv_create_srq_ex with a basic SRQ: libibverbs takes it to create_srq. */
	srq = ibv_create_srq_ex(e->ctx, &sx);
	check(srq && sx.attr.max_wr >= 16, "create_srq_ex(BASIC): %s",
	      srq ? "created" : strerror(errno));
	if (srq)
		ibv_destroy_srq(srq);
}

/* ---- MR re-registration ---------------------------------------------------- */

static void test_rereg(struct env *e)
{
	struct pool a = {}, b = {};
	struct ibv_pd *pd2;
	struct ibv_mr *mr;
	uint32_t lkey, rkey;
	void *gone;
	int ret;

	pd2 = ibv_alloc_pd(e->ctx);
	if (!pool_anon(&a, 2 * MB, false) || !pool_anon(&b, 4 * MB, false) || !pd2) {
		check(false, "memory and a second PD for rereg");
		return;
	}
	mr = ibv_reg_mr(e->pd, a.va, 64 * 1024, IBV_ACCESS_LOCAL_WRITE);
	check(mr, "reg_mr(64 KB) for rereg: %s", mr ? "ok" : strerror(errno));
	if (!mr)
		goto out;

	lkey = mr->lkey;
	rkey = mr->rkey;
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b.va + 4096, 1 * MB, 0);
	check(ret == 0 && mr->addr == b.va + 4096 && mr->length == 1 * MB,
	      "rereg_mr(translation): %d (%s), addr and length follow", ret,
	      ret ? strerror(errno) : "ok");
	check(mr->lkey != lkey && mr->rkey != rkey,
	      "rereg_mr(translation): keys change (lkey 0x%x -> 0x%x)", lkey, mr->lkey);

	lkey = mr->lkey;
	rkey = mr->rkey;
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	check(ret == 0, "rereg_mr(access: + remote read and write): %d (%s)", ret,
	      ret ? strerror(errno) : "ok");
	check(mr->lkey == lkey && mr->rkey == rkey,
	      "rereg_mr(access): keys stay (lkey 0x%x -> 0x%x)", lkey, mr->lkey);

	lkey = mr->lkey;
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	check(ret == 0 && mr->pd == pd2, "rereg_mr(PD): %d (%s)", ret, ret ? strerror(errno) : "ok");
	check(mr->lkey == lkey, "rereg_mr(PD): keys stay (lkey 0x%x -> 0x%x)", lkey, mr->lkey);

	lkey = mr->lkey;
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS |
			   IBV_REREG_MR_CHANGE_PD, e->pd, a.va, 2 * MB, IBV_ACCESS_LOCAL_WRITE);
	check(ret == 0 && mr->pd == e->pd && mr->addr == a.va && mr->length == 2 * MB &&
	      mr->lkey != lkey, "rereg_mr(translation, access and PD at once): %d (%s)", ret,
	      ret ? strerror(errno) : "ok");
	ret = ibv_dereg_mr(mr);
	check(ret == 0, "dereg_mr after rereg: %s", err_name(ret));

	/* A failed rereg leaves an MR that can still be deregistered. */
	mr = ibv_reg_mr(e->pd, a.va, 64 * 1024, IBV_ACCESS_LOCAL_WRITE);
	gone = mmap(NULL, 64 * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(gone, 64 * 1024);
	if (mr) {
		errno = 0;
		ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, gone, 64 * 1024, 0);
		check(ret == IBV_REREG_MR_ERR_CMD && errno == EFAULT,
		      "rereg_mr onto unmapped memory fails: %d (%s)", ret, strerror(errno));
		ret = ibv_dereg_mr(mr);
		check(ret == 0, "dereg_mr after a failed rereg: %s", err_name(ret));
	} else {
		check(false, "reg_mr for the failed rereg: %s", strerror(errno));
	}
out:
	if (pd2)
		ibv_dealloc_pd(pd2);
	pool_free(&a);
	pool_free(&b);
}

/* ---- Resource limits ------------------------------------------------------------ */

/*
 * The driver's and the device's object counts in sysfs: what is in use
 * before a limit test, and what must be back after it.
 */
static const char *const res_names[] = {
	"res_qps", "res_cqs", "res_srqs", "res_mrs", "res_ahs", "res_pbles",
	"hw_qps", "hw_cqs", "hw_srqs", "hw_mrs", "hw_ahs",
};
#define N_RES (sizeof(res_names) / sizeof(res_names[0]))
_Static_assert(N_RES <= sizeof(((struct env *)0)->idle) / sizeof(long), "env.idle");

static long read_sys(const struct env *e, const char *name)
{
	char path[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/%s", e->name, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static void res_read(const struct env *e, long *v)
{
	size_t i;

	for (i = 0; i < N_RES; i++)
		v[i] = read_sys(e, res_names[i]);
}

/* Every count back at the limit tests' starting point (destroys are synchronous; allow 5 s). */
static void expect_idle(const struct env *e, const char *after)
{
	long now_v[N_RES];
	size_t i, bad = N_RES;
	double t0 = now();

	do {
		res_read(e, now_v);
		for (i = 0; i < N_RES && now_v[i] == e->idle[i]; i++)
			;
		if (i == N_RES)
			break;
		bad = i;
		usleep(50 * 1000);
	} while (now() - t0 < 5);
	check(i == N_RES, "after %s every object count is back where it was%s%s", after,
	      i == N_RES ? "" : ": ", i == N_RES ? "" : res_names[bad]);
	if (i != N_RES)
		note("%s is %ld, was %ld", res_names[bad], now_v[bad], e->idle[bad]);
}

static struct ibv_qp *small_qp(struct env *e, struct ibv_cq *cq)
{
	return make_qp(e, IBV_QPT_UD, cq, cq, NULL, 1, 1, 1, 1, 0, NULL);
}

/*
 * QPs until the first failure: ENOMEM, exactly at max_qp less the QPs in
 * use. QP 1, the MAD layer's GSI QP, has its own ID outside max_qp.
 */
static void test_limit_qps(struct env *e)
{
	long in_use = read_sys(e, "res_qps");
	int limit = e->dev.max_qp + 16, n, i, err = 0, bad = 0;
	struct ibv_qp **qps = calloc(limit, sizeof(*qps));
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	long want = e->dev.max_qp - (in_use > 0 ? in_use - 1 : 0);
	struct ibv_qp *extra;
	double t0 = now();

	if (!cq || !qps || in_use < 0) {
		check(false, "a CQ and the QP count for the QP limit: %s", strerror(errno));
		goto out;
	}
	for (n = 0; n < limit; n++) {
		errno = 0;
		qps[n] = small_qp(e, cq);
		if (!qps[n]) {
			err = errno;
			break;
		}
	}
	note("%d QPs before the first failure, max_qp %d, %ld in use before, in %.1f s", n,
	     e->dev.max_qp, in_use, now() - t0);
	check(n < limit && err == ENOMEM, "creating QPs until failure ends in ENOMEM (got %s)",
	      n < limit ? err_name(err) : "no failure");
	check(n == want, "the failure comes at max_qp less the QPs in use: %d QPs, expected %ld", n,
	      want);
	errno = 0;
	extra = small_qp(e, cq);
	check(!extra && errno == ENOMEM, "one more QP still fails with ENOMEM: %s",
	      extra ? "created" : strerror(errno));
	if (extra)
		qps[n++] = extra;
	if (n > 0) {
		ibv_destroy_qp(qps[--n]);
		extra = small_qp(e, cq);
		check(extra, "after freeing one QP, create_qp works again: %s",
		      extra ? "ok" : strerror(errno));
		if (extra)
			qps[n++] = extra;
	}
	for (i = 0; i < n; i++)
		if (ibv_destroy_qp(qps[i]))
			bad++;
	check(!bad, "destroyed all %d QPs", n);
	ibv_destroy_cq(cq);
	cq = NULL;
	expect_idle(e, "the QP limit");
	cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	extra = cq ? make_qp(e, IBV_QPT_RC, cq, cq, NULL, 64, 64, 2, 2, 0, NULL) : NULL;
	check(extra, "after freeing them all, a new RC QP: %s", extra ? "ok" : strerror(errno));
	if (extra)
		ibv_destroy_qp(extra);
out:
	if (cq)
		ibv_destroy_cq(cq);
	free(qps);
}

/* SRQs until the first failure: ENOMEM at max_srq less the SRQs in use. */
static void test_limit_srqs(struct env *e)
{
	long in_use = read_sys(e, "res_srqs");
	int limit = e->dev.max_srq + 16, n, i, err = 0, bad = 0;
	struct ibv_srq **srqs = calloc(limit, sizeof(*srqs));
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1, .max_sge = 1 } };
	struct ibv_srq *extra;
	double t0 = now();

	if (!srqs || in_use < 0) {
		check(false, "memory and the SRQ count for the SRQ limit");
		free(srqs);
		return;
	}
	for (n = 0; n < limit; n++) {
		errno = 0;
		srqs[n] = ibv_create_srq(e->pd, &sa);
		if (!srqs[n]) {
			err = errno;
			break;
		}
	}
	note("%d SRQs before the first failure, max_srq %d, %ld in use before, in %.1f s", n,
	     e->dev.max_srq, in_use, now() - t0);
	check(n < limit && err == ENOMEM, "creating SRQs until failure ends in ENOMEM (got %s)",
	      n < limit ? err_name(err) : "no failure");
	check(n == e->dev.max_srq - in_use,
	      "the failure comes at max_srq less the SRQs in use: %d SRQs, expected %ld", n,
	      e->dev.max_srq - in_use);
	if (n > 0) {
		ibv_destroy_srq(srqs[--n]);
		extra = ibv_create_srq(e->pd, &sa);
		check(extra, "after freeing one SRQ, create_srq works again: %s",
		      extra ? "ok" : strerror(errno));
		if (extra)
			srqs[n++] = extra;
	}
	for (i = 0; i < n; i++)
		if (ibv_destroy_srq(srqs[i]))
			bad++;
	check(!bad, "destroyed all %d SRQs", n);
	expect_idle(e, "the SRQ limit");
	sa.attr.max_wr = 1000;
	extra = ibv_create_srq(e->pd, &sa);
	check(extra, "after freeing them all, create_srq(1000 WRs): %s",
	      extra ? "ok" : strerror(errno));
	if (extra)
		ibv_destroy_srq(extra);
	free(srqs);
}

static struct ibv_ah *own_ah(struct env *e, unsigned flow_label)
{
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.port_num = 1,
		.grh = { .dgid = e->gid, .sgid_index = e->gid_index, .hop_limit = 64,
			 .flow_label = flow_label },
	};

	return ibv_create_ah(e->pd, &aa);
}

/* AHs until the first failure: ENOMEM at max_ah less the AHs in use. */
static void test_limit_ahs(struct env *e)
{
	long in_use = read_sys(e, "res_ahs");
	int limit = e->dev.max_ah + 16, n, i, err = 0, bad = 0;
	struct ibv_ah **ahs = calloc(limit, sizeof(*ahs));
	struct ibv_ah *extra;
	double t0 = now();

	if (!ahs || in_use < 0) {
		check(false, "memory and the AH count for the AH limit");
		free(ahs);
		return;
	}
	for (n = 0; n < limit; n++) {
		errno = 0;
		ahs[n] = own_ah(e, n & 0xfffff);
		if (!ahs[n]) {
			err = errno;
			break;
		}
	}
	note("%d AHs before the first failure, max_ah %d, %ld in use before, in %.1f s", n,
	     e->dev.max_ah, in_use, now() - t0);
	check(n < limit && err == ENOMEM, "creating AHs until failure ends in ENOMEM (got %s)",
	      n < limit ? err_name(err) : "no failure");
	check(n == e->dev.max_ah - in_use,
	      "the failure comes at max_ah less the AHs in use: %d AHs, expected %ld", n,
	      e->dev.max_ah - in_use);
	if (n > 0) {
		ibv_destroy_ah(ahs[--n]);
		extra = own_ah(e, 1);
		check(extra, "after freeing one AH, create_ah works again: %s",
		      extra ? "ok" : strerror(errno));
		if (extra)
			ahs[n++] = extra;
	}
	for (i = 0; i < n; i++)
		if (ibv_destroy_ah(ahs[i]))
			bad++;
	check(!bad, "destroyed all %d AHs", n);
	expect_idle(e, "the AH limit");
	extra = own_ah(e, 2);
	check(extra, "after freeing them all, create_ah: %s", extra ? "ok" : strerror(errno));
	if (extra)
		ibv_destroy_ah(extra);
	free(ahs);
}

/*
 * MRs until the first failure: ENOMEM at max_mr less the MRs in use. All
 * of them register the same page, so this costs no memory beyond the MRs.
 */
static void test_limit_mrs(struct env *e)
{
	long in_use = read_sys(e, "res_mrs");
	int limit = e->dev.max_mr + 16, n, i, err = 0, bad = 0;
	struct ibv_mr **mrs = calloc(limit, sizeof(*mrs));
	struct pool page = {};
	struct ibv_mr *extra;
	double t0 = now();

	if (!mrs || in_use < 0 || !pool_anon(&page, 4096, false)) {
		check(false, "memory and the MR count for the MR limit");
		free(mrs);
		return;
	}
	for (n = 0; n < limit; n++) {
		errno = 0;
		mrs[n] = ibv_reg_mr(e->pd, page.va, 4096, IBV_ACCESS_LOCAL_WRITE);
		if (!mrs[n]) {
			err = errno;
			break;
		}
	}
	note("%d MRs before the first failure, max_mr %d, %ld in use before, in %.1f s", n,
	     e->dev.max_mr, in_use, now() - t0);
	check(n < limit && err == ENOMEM, "registering MRs until failure ends in ENOMEM (got %s)",
	      n < limit ? err_name(err) : "no failure");
	check(n == e->dev.max_mr - in_use,
	      "the failure comes at max_mr less the MRs in use: %d MRs, expected %ld", n,
	      e->dev.max_mr - in_use);
	if (n > 0) {
		ibv_dereg_mr(mrs[--n]);
		extra = ibv_reg_mr(e->pd, page.va, 4096, IBV_ACCESS_LOCAL_WRITE);
		check(extra, "after freeing one MR, reg_mr works again: %s",
		      extra ? "ok" : strerror(errno));
		if (extra)
			mrs[n++] = extra;
	}
	t0 = now();
	for (i = 0; i < n; i++)
		if (ibv_dereg_mr(mrs[i]))
			bad++;
	check(!bad, "deregistered all %d MRs", n);
	note("deregistered them in %.1f s", now() - t0);
	expect_idle(e, "the MR limit");
	extra = ibv_reg_mr(e->pd, page.va, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	check(extra, "after freeing them all, reg_mr: %s", extra ? "ok" : strerror(errno));
	if (extra)
		ibv_dereg_mr(extra);
	pool_free(&page);
	free(mrs);
}

/*
 * PBLEs until the pool runs out: one buffer of 4 KB pages (no huge pages,
 * so the pages are scattered and every page needs its own PBLE) is
 * registered over and over; the pins share the pages, so the guest spends
 * the buffer once plus the PBLEs. The failure is ENOMEM when the PBLEs
 * left are fewer than a registration takes; freeing every other MR leaves
 * the pool fragmented, and exactly as many registrations fit again.
 */
#define PBLE_BUF (64 * MB)

static void test_limit_pbles(struct env *e)
{
	long count = read_sys(e, "pble_count"), before = read_sys(e, "res_pbles"), used, each = 0;
	int limit, n, i, err = 0, bad = 0, freed, again;
	struct pool buf = {};
	struct ibv_mr **mrs;
	double t0 = now();

	if (count <= 0 || before < 0) {
		check(false, "the driver reports its PBLE pool (pble_count %ld, res_pbles %ld)", count,
		      before);
		return;
	}
	/* Each registration takes at least one PBLE per page of the buffer. */
	limit = count / (PBLE_BUF / 4096) + 16;
	mrs = calloc(limit, sizeof(*mrs));
	if (!mrs || !pool_anon(&buf, PBLE_BUF, false)) {
		check(false, "memory for the PBLE limit");
		free(mrs);
		return;
	}
	used = before;
	for (n = 0; n < limit; n++) {
		long now_used;

		errno = 0;
		mrs[n] = ibv_reg_mr(e->pd, buf.va, PBLE_BUF, IBV_ACCESS_LOCAL_WRITE);
		if (!mrs[n]) {
			err = errno;
			break;
		}
		now_used = read_sys(e, "res_pbles");
		if (now_used - used > each)
			each = now_used - used;
		used = now_used;
	}
	note("%d MRs of %lu MB before the first failure, %ld PBLEs each, %ld of %ld PBLEs in use, in %.1f s",
	     n, PBLE_BUF / MB, each, used, count, now() - t0);
	check(n < limit && err == ENOMEM,
	      "registering %lu MB MRs until the PBLEs run out ends in ENOMEM (got %s)",
	      PBLE_BUF / MB, n < limit ? err_name(err) : "no failure");
	check(each >= (long)(PBLE_BUF / 4096), "a %lu MB MR of 4 KB pages takes a PBLE per page (%ld)",
	      PBLE_BUF / MB, each);
	check(n > 0 && count - used < each,
	      "the failure comes when the pool is out: %ld PBLEs free, a registration takes %ld",
	      count - used, each);
	check(read_sys(e, "res_pbles") == used, "the failed registration kept no PBLEs");

	/* Every other MR goes: holes all over the pool. */
	freed = 0;
	for (i = 0; i < n; i += 2) {
		if (ibv_dereg_mr(mrs[i]))
			bad++;
		mrs[i] = NULL;
		freed++;
	}
	check(!bad, "deregistered every other MR (%d)", freed);
	again = 0;
	for (i = 0; i < n; i += 2) {
		mrs[i] = ibv_reg_mr(e->pd, buf.va, PBLE_BUF, IBV_ACCESS_LOCAL_WRITE);
		if (!mrs[i]) {
			err = errno;
			break;
		}
		again++;
	}
	check(again == freed, "in the fragmented pool the same number registers again: %d of %d%s%s",
	      again, freed, again == freed ? "" : ", then ", again == freed ? "" : err_name(err));
	errno = 0;
	{
		struct ibv_mr *extra = ibv_reg_mr(e->pd, buf.va, PBLE_BUF, IBV_ACCESS_LOCAL_WRITE);

		check(!extra && errno == ENOMEM, "and one more fails with ENOMEM again: %s",
		      extra ? "registered" : strerror(errno));
		if (extra)
			ibv_dereg_mr(extra);
	}
	bad = 0;
	for (i = 0; i < n; i++)
		if (mrs[i] && ibv_dereg_mr(mrs[i]))
			bad++;
	check(!bad, "deregistered all of them");
	expect_idle(e, "the PBLE limit");
	mrs[0] = ibv_reg_mr(e->pd, buf.va, PBLE_BUF, IBV_ACCESS_LOCAL_WRITE);
	check(mrs[0], "after freeing them all, a %lu MB MR: %s", PBLE_BUF / MB,
	      mrs[0] ? "ok" : strerror(errno));
	if (mrs[0])
		ibv_dereg_mr(mrs[0]);
	pool_free(&buf);
	free(mrs);
}

/* ---- CQ overflow ------------------------------------------------------------- */

static bool ud_to_rts(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				 .qkey = qkey };

	if (modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return false;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR };
	if (modify(qp, &a, IBV_QP_STATE))
		return false;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 1 };
	return modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0;
}

/* n signaled inline UD SENDs of 32 bytes from qp to QP dqpn, wr_id base + i. */
static int ud_send(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t dqpn, uint32_t qkey,
		   uint64_t base, int n)
{
	char msg[32];
	int i, ret;

	for (i = 0; i < n; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)msg, .length = sizeof(msg) };
		struct ibv_send_wr wr = {
			.wr_id = base + i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
			.wr = { .ud = { .ah = ah, .remote_qpn = dqpn, .remote_qkey = qkey } },
		}, *badwr;

		memset(msg, 'a' + i % 26, sizeof(msg));
		ret = ibv_post_send(qp, &wr, &badwr);
		if (ret)
			return ret;
	}
	return 0;
}

/* Poll cq for up to 10 s until n completions arrived (or more would not fit wc). */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	double t0 = now();
	int got = 0, r;

	while (got < n && now() - t0 < 10) {
		r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			return r;
		got += r;
		if (!r)
			usleep(1000);
	}
	return got;
}

/* Wait up to 10 s for async event type about obj (a CQ or a QP); acks what it reads. */
static bool wait_async(struct env *e, enum ibv_event_type type, void *obj, int *others)
{
	double t0 = now();

	while (now() - t0 < 10) {
		struct pollfd pfd = { .fd = e->ctx->async_fd, .events = POLLIN };
		struct ibv_async_event ev;
		bool hit;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if (ibv_get_async_event(e->ctx, &ev))
			continue;
		hit = ev.event_type == type &&
		      (type == IBV_EVENT_CQ_ERR ? (void *)ev.element.cq : (void *)ev.element.qp) == obj;
		if (!hit) {
			note("async event %s (%d)", ibv_event_type_str(ev.event_type), ev.event_type);
			(*others)++;
		}
		ibv_ack_async_event(&ev);
		if (hit)
			return true;
	}
	return false;
}

/*
 * A UD QP completes more sends than its send CQ holds, and nobody polls:
 * the device reports the overflow (IBV_EVENT_CQ_ERR for that CQ), the QP
 * goes to error (IBV_EVENT_QP_FATAL), the CQEs already in the CQ are
 * intact and in order, the QP's other CQ and another QP are untouched,
 * and a new CQ and QP in their place work.
 */
static void test_cq_overflow(struct env *e)
{
	const uint32_t qkey = 0x51515151;
	struct ibv_cq *scq = NULL, *rcq = NULL, *cq2 = NULL;
	struct ibv_qp *qp = NULL, *qp2 = NULL;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_wc wc[64];
	struct ibv_ah *ah;
	struct pool rbuf = {};
	struct ibv_mr *mr = NULL;
	int flags, others = 0, n, i, cqe, ok;

	flags = fcntl(e->ctx->async_fd, F_GETFL);
	fcntl(e->ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
	ah = own_ah(e, 0);
	scq = ibv_create_cq(e->ctx, 4, NULL, NULL, 0);
	rcq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	cq2 = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	qp = scq && rcq ? make_qp(e, IBV_QPT_UD, scq, rcq, NULL, 32, 4, 1, 1, 64, NULL) : NULL;
	qp2 = cq2 ? make_qp(e, IBV_QPT_UD, cq2, cq2, NULL, 4, 4, 1, 1, 64, NULL) : NULL;
	if (!ah || !qp || !qp2 || !ud_to_rts(qp, qkey) || !ud_to_rts(qp2, qkey) ||
	    !pool_anon(&rbuf, 64 * 1024, false) ||
	    !(mr = ibv_reg_mr(e->pd, rbuf.va, rbuf.bytes, IBV_ACCESS_LOCAL_WRITE))) {
		check(false, "objects for the CQ overflow: %s", strerror(errno));
		goto out;
	}
	cqe = scq->cqe;
	note("send CQ of %d CQEs; %d sends", cqe, cqe + 4);
	/* To itself with the wrong Q_Key: the receiver drops them, only the sends complete. */
	check(ud_send(qp, ah, qp->qp_num, qkey + 1, 1000, cqe + 4) == 0,
	      "posted %d signaled sends on a QP whose send CQ holds %d", cqe + 4, cqe);
	check(wait_async(e, IBV_EVENT_CQ_ERR, scq, &others),
	      "ibv_get_async_event: IBV_EVENT_CQ_ERR for the overflowed CQ");
	check(wait_async(e, IBV_EVENT_QP_FATAL, qp, &others),
	      "ibv_get_async_event: IBV_EVENT_QP_FATAL for the QP that lost a completion");
	ok = query(qp, &qa, &ia);
	check(ok && qa.qp_state == IBV_QPS_ERR, "the QP is in ERR: %s",
	      ok ? state_name(qa.qp_state) : "query failed");

	/* What the CQ held is intact: the first cqe sends, in order; then nothing. */
	n = poll_n(scq, wc, cqe);
	for (i = 0, ok = n == cqe; i < n; i++)
		if (wc[i].wr_id != 1000u + i || wc[i].status != IBV_WC_SUCCESS ||
		    wc[i].opcode != IBV_WC_SEND || wc[i].qp_num != qp->qp_num)
			ok = 0;
	check(ok, "the overflowed CQ holds its %d CQEs intact: %d polled, wr_id %" PRIu64 "..%" PRIu64,
	      cqe, n, n ? wc[0].wr_id : 0, n ? wc[n - 1].wr_id : 0);
	usleep(200 * 1000);
	n = ibv_poll_cq(scq, 64, wc);
	check(n == 0, "nothing more in it after the overflow (%d polled)", n);

	/* The QP's receive CQ still works: receives posted now flush there. */
	for (i = 0; i < 2; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)rbuf.va, .length = 4096, .lkey = mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 2000 + i, .sg_list = &sge, .num_sge = 1 }, *bad;

		ibv_post_recv(qp, &wr, &bad);
	}
	n = poll_n(rcq, wc, 2);
	check(n == 2 && wc[0].wr_id == 2000 && wc[1].wr_id == 2001 &&
	      wc[0].status == IBV_WC_WR_FLUSH_ERR && wc[1].status == IBV_WC_WR_FLUSH_ERR,
	      "its receive CQ takes the flushes of receives posted in ERR (%d)", n);

	/* Another QP: a datagram to itself arrives intact. */
	memset(rbuf.va, 0, 8192);
	{
		struct ibv_sge sge = { .addr = (uintptr_t)rbuf.va, .length = 4096, .lkey = mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 3000, .sg_list = &sge, .num_sge = 1 }, *bad;

		ibv_post_recv(qp2, &wr, &bad);
	}
	check(ud_send(qp2, ah, qp2->qp_num, qkey, 4000, 1) == 0, "another QP sends to itself");
	n = poll_n(cq2, wc, 2);
	for (i = 0, ok = n == 2; i < n; i++)
		if (wc[i].status != IBV_WC_SUCCESS ||
		    !(wc[i].wr_id == 3000 ? wc[i].byte_len == 40 + 32 : wc[i].wr_id == 4000))
			ok = 0;
	for (i = 0; i < 32; i++)
		if (rbuf.va[40 + i] != 'a')
			ok = 0;
	check(ok, "another QP and its CQ are untouched: a datagram to itself, data intact (%d)", n);
	check(others == 0, "no other async event (%d)", others);

	/* Destroy and create again: a CQ of the same size in its place works. */
	check(ibv_destroy_qp(qp) == 0, "the failed QP destroyed");
	qp = NULL;
	check(ibv_destroy_cq(scq) == 0, "the overflowed CQ destroyed");
	scq = ibv_create_cq(e->ctx, 4, NULL, NULL, 0);
	qp = scq ? make_qp(e, IBV_QPT_UD, scq, rcq, NULL, 32, 4, 1, 1, 64, NULL) : NULL;
	check(qp && ud_to_rts(qp, qkey), "a new CQ and QP in their place: %s",
	      qp ? "ok" : strerror(errno));
	if (qp && ud_send(qp, ah, qp->qp_num, qkey + 1, 5000, cqe - 1) == 0) {
		n = poll_n(scq, wc, cqe - 1);
		for (i = 0, ok = n == cqe - 1; i < n; i++)
			if (wc[i].wr_id != 5000u + i || wc[i].status != IBV_WC_SUCCESS)
				ok = 0;
		check(ok, "the new CQ takes %d completions (%d)", cqe - 1, n);
		ok = query(qp, &qa, &ia);
		check(ok && qa.qp_state == IBV_QPS_RTS, "the new QP stays in RTS: %s",
		      ok ? state_name(qa.qp_state) : "query failed");
	}
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (qp2)
		ibv_destroy_qp(qp2);
	if (mr)
		ibv_dereg_mr(mr);
	if (ah)
		ibv_destroy_ah(ah);
	if (scq)
		ibv_destroy_cq(scq);
	if (rcq)
		ibv_destroy_cq(rcq);
	if (cq2)
		ibv_destroy_cq(cq2);
	pool_free(&rbuf);
	fcntl(e->ctx->async_fd, F_SETFL, flags);
	expect_idle(e, "the CQ overflow");
}

static void test_limits(struct env *e)
{
	res_read(e, e->idle);
	test_cq_overflow(e);
	test_limit_qps(e);
	test_limit_srqs(e);
	test_limit_ahs(e);
	test_limit_mrs(e);
	test_limit_pbles(e);
}

/* ---- Running out ------------------------------------------------------------ */

static void test_exhaust(struct env *e)
{
	int limit = e->dev.max_cq + 64, n, i, err = 0, bad = 0;
	struct ibv_cq **cqs = calloc(limit, sizeof(*cqs));
	long in_use = read_sys(e, "res_cqs");
	struct ibv_cq *extra;
	double t0 = now();

	for (n = 0; n < limit; n++) {
		cqs[n] = ibv_create_cq(e->ctx, 1, NULL, NULL, 0);
		if (!cqs[n]) {
			err = errno;
			break;
		}
	}
	note("%d CQs before the first failure, max_cq %d, %ld in use before, in %.1f s", n,
	     e->dev.max_cq, in_use, now() - t0);
	check(n < limit && err == ENOMEM, "creating CQs until failure ends in ENOMEM (got %s)",
	      n < limit ? err_name(err) : "no failure");
	check(in_use >= 0 && n == e->dev.max_cq - in_use,
	      "the failure comes at max_cq less the CQs in use: %d CQs, expected %ld", n,
	      e->dev.max_cq - in_use);
	if (n > 0) {
		ibv_destroy_cq(cqs[--n]);
		extra = ibv_create_cq(e->ctx, 1, NULL, NULL, 0);
		check(extra, "after freeing one CQ, create_cq works again: %s",
		      extra ? "ok" : strerror(errno));
		if (extra)
			cqs[n++] = extra;
	}
	for (i = 0; i < n; i++)
		if (ibv_destroy_cq(cqs[i]))
			bad++;
	check(!bad, "destroyed all %d CQs", n);
	extra = ibv_create_cq(e->ctx, 1000, NULL, NULL, 0);
	check(extra, "after freeing them all, create_cq(1000) works: %s",
	      extra ? "ok" : strerror(errno));
	if (extra)
		ibv_destroy_cq(extra);
	free(cqs);
}

/* ---- Bad input ----------------------------------------------------------------- */

static void expect_no_qp(struct env *e, struct ibv_qp_init_attr *a, int want, const char *what)
{
	struct ibv_qp *qp;

	errno = 0;
	qp = ibv_create_qp(e->pd, a);
	check(!qp && errno == want, "%s: %s (expected %s)", what, qp ? "created" : strerror(errno),
	      strerror(want));
	if (qp)
		ibv_destroy_qp(qp);
}

static void test_bad_input(struct env *e)
{
	struct ibv_qp_init_attr base, a;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	void *gone;
	int ret;

	errno = 0;
	mr = ibv_reg_mr(e->pd, NULL, 4096, IBV_ACCESS_LOCAL_WRITE);
	check(!mr && errno == EFAULT, "reg_mr(NULL): %s", mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	gone = mmap(NULL, 1 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(gone, 1 * MB);
	errno = 0;
	mr = ibv_reg_mr(e->pd, gone, 1 * MB, IBV_ACCESS_LOCAL_WRITE);
	check(!mr && errno == EFAULT, "reg_mr(unmapped memory): %s",
	      mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	errno = 0;
	mr = ibv_reg_dmabuf_mr(e->pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE);
	check(!mr && errno == EOPNOTSUPP, "reg_dmabuf_mr: %s", mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);

	errno = 0;
	cq = ibv_create_cq(e->ctx, e->dev.max_cqe + 1, NULL, NULL, 0);
	check(!cq && errno == EINVAL, "create_cq(max_cqe + 1 = %d): %s", e->dev.max_cqe + 1,
	      cq ? "created" : strerror(errno));
	if (cq)
		ibv_destroy_cq(cq);
	errno = 0;
	cq = ibv_create_cq(e->ctx, 0, NULL, NULL, 0);
	check(!cq && errno == EINVAL, "create_cq(0): %s", cq ? "created" : strerror(errno));
	if (cq)
		ibv_destroy_cq(cq);

	cq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	if (!cq) {
		check(false, "a CQ for the bad QP requests: %s", strerror(errno));
		return;
	}
	base = (struct ibv_qp_init_attr){
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	a = base;
	a.cap.max_send_sge = e->dev.max_sge + 1;
	expect_no_qp(e, &a, EINVAL, "create_qp with max_send_sge beyond max");
	a = base;
	a.cap.max_recv_sge = e->dev.max_sge + 1;
	expect_no_qp(e, &a, EINVAL, "create_qp with max_recv_sge beyond max");
	a = base;
	a.cap.max_send_wr = e->dev.max_qp_wr + 1;
	expect_no_qp(e, &a, EINVAL, "create_qp with max_send_wr beyond max_qp_wr");
	a = base;
	a.cap.max_recv_wr = e->dev.max_qp_wr + 1;
	expect_no_qp(e, &a, EINVAL, "create_qp with max_recv_wr beyond max_qp_wr");
	a = base;
	a.cap.max_inline_data = 1 << 20;
	expect_no_qp(e, &a, EINVAL, "create_qp with 1 MB of inline data");
	a = base;
	a.qp_type = IBV_QPT_RAW_PACKET;
	expect_no_qp(e, &a, EOPNOTSUPP, "create_qp(raw packet)");

	/* Objects in use cannot go. */
	srq = ibv_create_srq(e->pd, &sa);
	a = base;
	a.srq = srq;
	qp = srq ? ibv_create_qp(e->pd, &a) : NULL;
	check(qp, "a QP on an SRQ: %s", qp ? "created" : strerror(errno));
	if (qp) {
		ret = ibv_destroy_cq(cq);
		check(ret == EBUSY, "destroy_cq while a QP uses it: %s", err_name(ret));
		ret = ibv_destroy_srq(srq);
		check(ret == EBUSY, "destroy_srq while a QP uses it: %s", err_name(ret));
		ret = ibv_dealloc_pd(e->pd);
		check(ret == EBUSY, "dealloc_pd while objects use it: %s", err_name(ret));
		check(ibv_destroy_qp(qp) == 0, "QP on the SRQ destroyed");
	}
	if (srq)
		check(ibv_destroy_srq(srq) == 0, "SRQ destroyed once unused");
	check(ibv_destroy_cq(cq) == 0, "CQ destroyed once unused");
}

/* ---- Held objects, for the kill -9 test ------------------------------------ */

static int hold(struct env *e)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(e->pd, &sa);
	struct ibv_cq *cqs[32];
	struct pool big = {};
	int i, n = 0;

	for (i = 0; i < 32; i++) {
		cqs[i] = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
		n += !!cqs[i];
	}
	for (i = 0; i < 32 && cqs[i]; i++) {
		struct ibv_qp *qp = make_qp(e, i & 1 ? IBV_QPT_UD : IBV_QPT_RC, cqs[i], cqs[i],
					    i % 4 == 3 ? srq : NULL, 16, 16, 1, 1, 0, NULL);
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 1 };

		if (qp) {
			n++;
			modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			       (i & 1 ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS));
		}
	}
	if (pool_anon(&big, 64 * MB, true)) {
		for (i = 0; i < 64; i++)
			n += !!ibv_reg_mr(e->pd, big.va + (i % 16 ? i * 4096 : 0),
					  i % 16 ? 64 * 1024 : 64 * MB, IBV_ACCESS_LOCAL_WRITE);
	}
	for (i = 0; i < 8; i++) {
		struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
					  .grh = { .dgid = e->gid, .sgid_index = e->gid_index,
						   .hop_limit = 64 } };

		n += !!ibv_create_ah(e->pd, &aa);
	}
	note("holding %d objects (CQs, QPs, an SRQ, MRs, AHs) until killed", n + !!srq);
	for (;;)
		pause();
	return 0;
}

/* ---- Setup ------------------------------------------------------------------- */

static bool open_env(struct env *e, const char *name)
{
	struct ibv_device **list;
	int i, n;
	bool ok;

	e->name = name;
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			e->ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	check(e->ctx, "open %s: %s", name, e->ctx ? "ok" : "not found or cannot open");
	if (!e->ctx)
		return false;
	/* Query first: the arguments of check() are read before it runs. */
	ok = !ibv_query_device(e->ctx, &e->dev) && !ibv_query_port(e->ctx, 1, &e->port);
	check(ok, "query device and port: max_cq %d max_cqe %d max_qp %d max_qp_wr %d max_sge %d max_srq %d max_mr %d max_ah %d",
	      e->dev.max_cq, e->dev.max_cqe, e->dev.max_qp, e->dev.max_qp_wr, e->dev.max_sge,
	      e->dev.max_srq, e->dev.max_mr, e->dev.max_ah);
	e->pd = ibv_alloc_pd(e->ctx);
	check(e->pd, "alloc_pd: %s", e->pd ? "ok" : strerror(errno));

	/* The port's first GID in use, preferring the link-local one. */
	e->gid_index = find_gid(e->ctx, &e->port, GID_PREFER_LINK_LOCAL, &e->gid);
	check(e->gid_index >= 0, "port 1 has a GID (index %d)", e->gid_index);
	return e->pd && e->gid_index >= 0;
}

int main(int argc, char **argv)
{
	const char *dev = "qrdma0";
	int ncq = 1000, nqp = 1000, nmr = 10000, i;
	bool exhaust = true, holding = false, limits = false;
	struct env e = {};
	struct ibv_cq *cq;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dev") && i + 1 < argc)
			dev = argv[++i];
		else if (!strcmp(argv[i], "--cqs") && i + 1 < argc)
			ncq = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--qps") && i + 1 < argc)
			nqp = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--mrs") && i + 1 < argc)
			nmr = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-exhaust"))
			exhaust = false;
		else if (!strcmp(argv[i], "--hold"))
			holding = true;
		else if (!strcmp(argv[i], "--limits"))
			limits = true;
		else {
			fprintf(stderr, "usage: %s [--dev NAME] [--cqs N] [--qps N] [--mrs N] [--no-exhaust] [--hold] [--limits]\n",
				argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (!open_env(&e, dev))
		goto out;
	if (holding)
		return hold(&e);
	if (limits) {
		test_limits(&e);
		goto close;
	}

	test_scale(&e, ncq, nqp, nmr);
	cq = ibv_create_cq(e.ctx, 64, NULL, NULL, 0);
	check(cq, "a CQ for the state walks: %s", cq ? "ok" : strerror(errno));
	if (cq) {
		test_rc_states(&e, cq);
		test_ud_states(&e, cq);
		ibv_destroy_cq(cq);
	}
	test_cq(&e);
	test_srq_ah(&e);
	test_conformance(&e);
	test_rereg(&e);
	test_bad_input(&e);
	if (exhaust)
		test_exhaust(&e);

close:
	check(ibv_dealloc_pd(e.pd) == 0, "dealloc_pd");
	check(ibv_close_device(e.ctx) == 0, "close_device");
out:
	printf("1..%d\n# qrdma-objects: %d failure(s)\n", checks, failures);
	return failures ? 1 : 0;
}
