/*
 * UD multicast between two guests (tests/vm/guest-mcast.sh), through
 * libibverbs and the qrdma provider: ibv_attach_mcast / ibv_detach_mcast,
 * the device's group limits, and the data.
 *
 *   qrdma-mcast recv A.B.C.D COUNT READY_FILE
 *       Three UD QPs: two attached to the group, one attached and then
 *       detached. Attaching one QP to more groups than max_mcast_grp
 *       allows must fail with ENOMEM at exactly the limit. Posts COUNT
 *       receives on each QP, creates READY_FILE, then waits (30 s at most)
 *       for COUNT datagrams on each attached QP, checks every byte and
 *       that each sequence number arrived once, and that the detached QP
 *       received nothing.
 *   qrdma-mcast send A.B.C.D COUNT
 *       One UD QP sends COUNT datagrams to the group (DGID ::ffff:A.B.C.D,
 *       QPN 0xffffff); every send must complete successfully.
 *
 * Exit status 0 only when every check passed.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <arpa/inet.h>
#include <fcntl.h>

#include "guest_util.h"

#define QKEY      0x11223344u
#define MSG       512                /* payload bytes per datagram */
#define GRH       40
#define SLOT      (GRH + MSG)
#define MAX_COUNT 64
#define NRQP      3                  /* receivers: 0 and 1 attached, 2 detached */
#define MC_QPN    0xffffffu

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fputc('\n', stderr); failures++; } while (0)

struct ctx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	int gid_index;
};

static uint8_t pattern(uint32_t seq, unsigned i)
{
	return (uint8_t)(seq * 7 + i * 13 + 1);
}

static void gid_of(const char *ip, union ibv_gid *gid)
{
	struct in_addr a;

	if (inet_pton(AF_INET, ip, &a) != 1) {
		fprintf(stderr, "bad address %s\n", ip);
		exit(2);
	}
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], &a, 4);
}

static void open_dev(struct ctx *c, size_t buf_len)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;
	int i;

	if (!list || !list[0]) {
		fprintf(stderr, "no RDMA device\n");
		exit(2);
	}
	c->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!c->ctx || ibv_query_port(c->ctx, 1, &pa)) {
		fprintf(stderr, "cannot open the device\n");
		exit(2);
	}
	/* The RoCE v2 GID of the interface's IPv4 address. */
	c->gid_index = -1;
	for (i = 0; i < pa.gid_tbl_len && c->gid_index < 0; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(c->ctx, 1, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && e.gid.raw[10] == 0xff &&
		    e.gid.raw[11] == 0xff && e.gid.raw[12])
			c->gid_index = i;
	}
	if (c->gid_index < 0) {
		fprintf(stderr, "no RoCE v2 IPv4 GID\n");
		exit(2);
	}
	c->pd = ibv_alloc_pd(c->ctx);
	c->cq = ibv_create_cq(c->ctx, 4 * MAX_COUNT, NULL, NULL, 0);
	c->buf = calloc(1, buf_len);
	if (!c->pd || !c->cq || !c->buf) {
		fprintf(stderr, "cannot create PD/CQ\n");
		exit(2);
	}
	c->mr = ibv_reg_mr(c->pd, c->buf, buf_len, IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr) {
		fprintf(stderr, "ibv_reg_mr: %s\n", strerror(errno));
		exit(2);
	}
}

static struct ibv_qp *ud_qp(struct ctx *c)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = c->cq, .recv_cq = c->cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = MAX_COUNT, .max_recv_wr = MAX_COUNT,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };
	struct ibv_qp *qp = ibv_create_qp(c->pd, &ia);

	if (!qp) {
		fprintf(stderr, "ibv_create_qp: %s\n", strerror(errno));
		exit(2);
	}
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		goto bad;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		goto bad;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		goto bad;
	return qp;
bad:
	fprintf(stderr, "ibv_modify_qp: %s\n", strerror(errno));
	exit(2);
}

/* Attach qp to ever more groups 239.2.x.y until the device refuses: ENOMEM at the limit. */
static void check_limit(struct ctx *c, struct ibv_qp *qp, int groups_in_use)
{
	struct ibv_device_attr da;
	union ibv_gid g;
	int n, ret = 0, max;

	if (ibv_query_device(c->ctx, &da)) {
		FAIL("ibv_query_device");
		return;
	}
	max = da.max_mcast_grp;
	printf("max_mcast_grp %d max_mcast_qp_attach %d max_total_mcast_qp_attach %d\n",
	       da.max_mcast_grp, da.max_mcast_qp_attach, da.max_total_mcast_qp_attach);
	if (max <= groups_in_use || max > 4096 || da.max_mcast_qp_attach < 2 ||
	    da.max_total_mcast_qp_attach != max * da.max_mcast_qp_attach) {
		FAIL("device limits %d/%d/%d", max, da.max_mcast_qp_attach,
		     da.max_total_mcast_qp_attach);
		return;
	}
	gid_of("239.2.0.0", &g);
	for (n = 0; n < max; n++) {
		g.raw[14] = (uint8_t)((n + 1) >> 8);
		g.raw[15] = (uint8_t)(n + 1);
		ret = ibv_attach_mcast(qp, &g, 0);
		if (ret)
			break;
	}
	if (n != max - groups_in_use || ret != ENOMEM)
		FAIL("extra groups: %d attached, then %d (%s); expected %d, then ENOMEM", n, ret,
		     strerror(ret), max - groups_in_use);
	else
		printf("ok: %d more groups attached, the next refused with ENOMEM\n", n);
	while (n-- > 0) {
		g.raw[14] = (uint8_t)((n + 1) >> 8);
		g.raw[15] = (uint8_t)(n + 1);
		if (ibv_detach_mcast(qp, &g, 0))
			FAIL("detach of extra group %d", n + 1);
	}
}

static int do_recv(const char *group, int count, const char *ready)
{
	int got[NRQP] = { 0 }, seen[NRQP][MAX_COUNT] = { { 0 } };
	struct ibv_qp *qp[NRQP];
	struct ctx c;
	union ibv_gid g;
	double deadline;
	int i, j, fd, ret;

	open_dev(&c, (size_t)NRQP * MAX_COUNT * SLOT);
	gid_of(group, &g);
	for (i = 0; i < NRQP; i++)
		qp[i] = ud_qp(&c);
	for (i = 0; i < NRQP; i++) {
		ret = ibv_attach_mcast(qp[i], &g, 0);
		if (ret)
			FAIL("ibv_attach_mcast QP %u: %s", qp[i]->qp_num, strerror(ret));
	}
	ret = ibv_detach_mcast(qp[2], &g, 0);
	if (ret)
		FAIL("ibv_detach_mcast QP %u: %s", qp[2]->qp_num, strerror(ret));
	check_limit(&c, qp[0], 1);

	memset(c.buf, 0xee, (size_t)NRQP * MAX_COUNT * SLOT);
	for (i = 0; i < NRQP; i++) {
		for (j = 0; j < count; j++) {
			size_t off = ((size_t)i * MAX_COUNT + j) * SLOT;
			struct ibv_sge sge = { (uintptr_t)(c.buf + off), SLOT, c.mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = off, .sg_list = &sge, .num_sge = 1 }, *bad;

			if (ibv_post_recv(qp[i], &wr, &bad)) {
				FAIL("ibv_post_recv");
				return 1;
			}
		}
	}
	fd = open(ready, O_CREAT | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
	printf("ready: QPs %u %u attached, %u detached\n", qp[0]->qp_num, qp[1]->qp_num,
	       qp[2]->qp_num);
	fflush(stdout);

	/* Until both attached QPs have everything, and 2 s more for stray copies. */
	deadline = now() + 30;
	while (now() < deadline) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(c.cq, 1, &wc);

		if (n < 0) {
			FAIL("ibv_poll_cq");
			break;
		}
		if (!n) {
			if (got[0] >= count && got[1] >= count && deadline > now() + 2)
				deadline = now() + 2;
			usleep(1000);
			continue;
		}
		for (i = 0; i < NRQP && qp[i]->qp_num != wc.qp_num; i++)
			;
		if (i == NRQP || wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
		    wc.byte_len != SLOT || !(wc.wc_flags & IBV_WC_GRH)) {
			FAIL("CQE qp %u status %d opcode %d len %u flags 0x%x", wc.qp_num, wc.status,
			     wc.opcode, wc.byte_len, wc.wc_flags);
			continue;
		}
		got[i]++;
		{
			const uint8_t *p = c.buf + wc.wr_id + GRH;
			uint32_t seq = (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];

			if (seq >= (uint32_t)count) {
				FAIL("QP %u: sequence %u", wc.qp_num, seq);
				continue;
			}
			seen[i][seq]++;
			for (j = 4; j < MSG; j++) {
				if (p[j] != pattern(seq, j)) {
					FAIL("QP %u datagram %u: byte %d is 0x%02x, expected 0x%02x",
					     wc.qp_num, seq, j, p[j], pattern(seq, j));
					break;
				}
			}
		}
	}
	for (i = 0; i < 2; i++) {
		for (j = 0; j < count; j++) {
			if (seen[i][j] != 1)
				FAIL("QP %u: datagram %d arrived %d times", qp[i]->qp_num, j, seen[i][j]);
		}
	}
	if (got[2])
		FAIL("detached QP %u received %d datagrams", qp[2]->qp_num, got[2]);
	printf("received: %d, %d; detached QP: %d\n", got[0], got[1], got[2]);
	ret = ibv_detach_mcast(qp[0], &g, 0) | ibv_detach_mcast(qp[1], &g, 0);
	if (ret)
		FAIL("final detach");
	for (i = 0; i < NRQP; i++)
		ibv_destroy_qp(qp[i]);
	return failures ? 1 : 0;
}

static int do_send(const char *group, int count)
{
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ctx c;
	int i, j, done = 0;
	double deadline;

	open_dev(&c, (size_t)MAX_COUNT * MSG);
	qp = ud_qp(&c);
	gid_of(group, &aa.grh.dgid);
	aa.grh.sgid_index = (uint8_t)c.gid_index;
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(c.pd, &aa);
	if (!ah) {
		fprintf(stderr, "ibv_create_ah: %s\n", strerror(errno));
		return 2;
	}
	for (i = 0; i < count; i++) {
		uint8_t *p = c.buf + (size_t)i * MSG;
		struct ibv_sge sge = { (uintptr_t)p, MSG, c.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.ud = { .ah = ah, .remote_qpn = MC_QPN, .remote_qkey = QKEY },
		}, *bad;

		p[0] = (uint8_t)(i >> 24);
		p[1] = (uint8_t)(i >> 16);
		p[2] = (uint8_t)(i >> 8);
		p[3] = (uint8_t)i;
		for (j = 4; j < MSG; j++)
			p[j] = pattern(i, j);
		if (ibv_post_send(qp, &wr, &bad)) {
			FAIL("ibv_post_send %d", i);
			return 1;
		}
		usleep(2000);           /* the receiver has no flow control */
	}
	deadline = now() + 30;
	while (done < count && now() < deadline) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(c.cq, 1, &wc);

		if (n < 0)
			break;
		if (!n) {
			usleep(1000);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_SEND)
			FAIL("send %llu: status %d", (unsigned long long)wc.wr_id, wc.status);
		done++;
	}
	if (done != count)
		FAIL("%d of %d sends completed", done, count);
	printf("sent %d datagrams to %s\n", done, group);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(qp);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	int count = argc > 3 ? atoi(argv[3]) : 0;

	if (argc >= 5 && !strcmp(argv[1], "recv") && count > 0 && count <= MAX_COUNT)
		return do_recv(argv[2], count, argv[4]);
	if (argc >= 4 && !strcmp(argv[1], "send") && count > 0 && count <= MAX_COUNT)
		return do_send(argv[2], count);
	fprintf(stderr, "usage: %s recv GROUP COUNT READY_FILE | send GROUP COUNT\n", argv[0]);
	return 2;
}
