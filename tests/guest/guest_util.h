/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the guest test programs share (qrdma-datapath, qrdma-mw,
 * qrdma-objects, qrdma-mcast): TAP checks and their counters, a
 * monotonic clock, completion polling with a deadline, the choice of the
 * port's GID, and the loopback setup: one device with a PD, a registered
 * buffer and a GID, whose RC, UC and UD QPs are connected to QPs of the
 * same device through that GID (the device delivers RoCEv2 frames
 * addressed to itself, so one guest exercises both ends of the wire).
 *
 * Each program is one .c file built on its own (tests/guest/Makefile), so
 * this is a header of static inline functions: a program takes what it
 * uses and the compiler keeps quiet about the rest.
 */
#ifndef QRDMA_GUEST_UTIL_H
#define QRDMA_GUEST_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

/* ---- TAP output ---------------------------------------------------------- */

static int checks, failures;

/* One TAP line; a failed check counts, the program's exit status says so. */
static inline void check(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void check(bool cond, const char *fmt, ...)
{
	va_list ap;

	checks++;
	if (!cond)
		failures++;
	printf("%sok %d - ", cond ? "" : "not ", checks);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* A TAP comment: information, never a verdict. */
static inline void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void note(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static inline const char *err_name(int e)
{
	return e ? strerror(e) : "success";
}

static inline double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Polls until @n completions arrived or 5 s passed; returns how many (-1: poll error). */
static inline int wait_wc(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	double end = now() + 5;
	int got = 0, r;

	while (got < n && now() < end) {
		r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			return -1;
		got += r;
		if (!r)
			usleep(100);
	}
	return got;
}

/* ---- The port's GID ------------------------------------------------------- */

enum gid_pref {
	GID_PREFER_IPV4,	/* the last IPv4-mapped GID (RoCEv2 over IPv4) */
	GID_PREFER_LINK_LOCAL,	/* the first fe80:: GID */
};

/*
 * Index of a GID in use on port 1 (else the first one in use), or -1 when
 * the table is empty; the GID goes to @gid.
 */
static inline int find_gid(struct ibv_context *ctx, const struct ibv_port_attr *port,
			   enum gid_pref pref, union ibv_gid *gid)
{
	int i, found = -1;

	for (i = 0; i < port->gid_tbl_len; i++) {
		union ibv_gid g;
		bool preferred;

		if (ibv_query_gid(ctx, 1, i, &g))
			continue;
		if (!g.global.subnet_prefix && !g.global.interface_id)
			continue;
		preferred = pref == GID_PREFER_IPV4 ? !g.global.subnet_prefix && g.raw[10] == 0xff
						    : g.raw[0] == 0xfe;
		if (found < 0 || preferred) {
			*gid = g;
			found = i;
			if (preferred && pref == GID_PREFER_LINK_LOCAL)
				break;
		}
	}
	return found;
}

/* ---- Loopback QPs on one device -------------------------------------------- */

#define LOOP_BUF_SIZE 65536
#define LOOP_QKEY 0x11111111u

struct loop_env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_port_attr port;
	union ibv_gid gid;
	int gid_index;
	char *buf;		/* LOOP_BUF_SIZE, registered with every access right */
	struct ibv_mr *mr;
};

/* Reads and atomics in flight that loop_to_rts() asks for, both directions. */
static uint8_t loop_rd_atom = 4;

static inline struct ibv_qp *loop_make_qp(struct loop_env *e, enum ibv_qp_type type,
					  struct ibv_cq *scq, struct ibv_cq *rcq,
					  struct ibv_srq *srq, uint32_t wr, uint64_t send_ops)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = type,
		.send_cq = scq,
		.recv_cq = rcq,
		.srq = srq,
		.cap = { .max_send_wr = wr, .max_recv_wr = srq ? 0 : wr, .max_send_sge = 2,
			 .max_recv_sge = 2, .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = e->pd,
	};

	if (send_ops) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = send_ops;
	}
	return ibv_create_qp_ex(e->ctx, &a);
}

static inline int loop_to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
		.qkey = LOOP_QKEY,
	};

	if (qp->qp_type == IBV_QPT_UD)
		return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					     IBV_QP_QKEY);
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     IBV_QP_ACCESS_FLAGS);
}

/*
 * INIT -> RTR -> RTS towards QP @dest_qpn at GID @dgid (UD: to RTS only;
 * the destination goes in each WR).
 */
static inline int loop_connect(struct loop_env *e, struct ibv_qp *qp, uint32_t dest_qpn,
			       const union ibv_gid *dgid)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest_qpn,
		.rq_psn = 0,
		.max_dest_rd_atomic = loop_rd_atom,
		.min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *dgid, .sgid_index = e->gid_index, .hop_limit = 64 } },
	};
	int ret;

	if (qp->qp_type == IBV_QPT_UD) {
		ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);
		if (ret)
			return ret;
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 0;
		return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				    IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = loop_rd_atom;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* The loopback case: towards @dest_qpn of this device, through the env's own GID. */
static inline int loop_to_rts(struct loop_env *e, struct ibv_qp *qp, uint32_t dest_qpn)
{
	return loop_connect(e, qp, dest_qpn, &e->gid);
}

/*
 * Opens device @name with a PD, a buffer registered with every access
 * right and the port's GID (an IPv4-mapped one preferred: RoCEv2). False
 * when something is missing; loop_close() releases what was made.
 */
static inline bool loop_open(struct loop_env *e, const char *name)
{
	struct ibv_device **list;
	int i, n;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			e->ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	check(e->ctx != NULL, "open %s", name);
	if (!e->ctx || ibv_query_port(e->ctx, 1, &e->port))
		return false;
	e->pd = ibv_alloc_pd(e->ctx);
	e->buf = aligned_alloc(4096, LOOP_BUF_SIZE);
	if (!e->pd || !e->buf)
		return false;
	e->mr = ibv_reg_mr(e->pd, e->buf, LOOP_BUF_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	check(e->mr != NULL, "register %d bytes: %s", LOOP_BUF_SIZE,
	      e->mr ? "ok" : strerror(errno));

	e->gid_index = find_gid(e->ctx, &e->port, GID_PREFER_IPV4, &e->gid);
	check(e->gid_index >= 0, "port 1 has a GID (index %d)", e->gid_index);
	return e->gid_index >= 0;
}

static inline void loop_close(struct loop_env *e)
{
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->ctx)
		ibv_close_device(e->ctx);
	free(e->buf);
}

#endif /* QRDMA_GUEST_UTIL_H */
