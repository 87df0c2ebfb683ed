// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * SEND ping-pong between two hosts with every byte of every message
 * checked, over RC, UC, UD or RC QPs sharing an SRQ: what the rdma-core
 * pingpongs' -c does not do (they compare one byte per page with a constant
 * the receive buffer already holds, and on a mismatch print "invalid data"
 * and still exit 0).
 *
 * Each iteration i: the client sends message i (SEND_WITH_IMM, immediate i)
 * on QP i % QPS; the server checks the completion (status, opcode, the
 * immediate, the length, the local QP it arrived on, for UD the GRH flag
 * and the source QP) and every byte against the pattern of (client, i),
 * then answers with message (server, i) on the same QP, which the client
 * checks the same way. Receive buffers are poisoned before they are posted,
 * so a completion whose data never arrived fails as well. Any error
 * completion, mismatch or wait without a completion for the timeout fails
 * the run; exit status 0 only when every check passed.
 *
 * QPNs, PSN and GID are exchanged over TCP (no rdma_cm), then a second
 * exchange once both sides are in RTS, so no message meets a QP that is not
 * ready for it.
 *
 * usage: qrdma-pingpong [options]            server
 *        qrdma-pingpong [options] SERVER     client
 *   -d DEV   RDMA device (default qrdma0)    -g IDX  GID index (default 1)
 *   -p PORT  TCP port (default 19876)        -t rc|uc|ud|srq  (default rc)
 *   -s SIZE  message bytes (default 4096; UD: at most the path MTU)
 *   -n N     iterations (default 100)        -q QPS  QPs for srq (default 4)
 *   -w SEC   timeout without progress (default 30)
 *   -S SEED  pattern seed (default 0x51d3a2b7; not exchanged: two sides with
 *            different seeds must fail the byte check, which shows it works)
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <infiniband/verbs.h>

#define MAGIC_HELLO 0x71707067u	/* "qppg" */
#define MAGIC_READY 0x71707279u
#define MAX_QPS 16
#define SLOTS 8			/* receive buffers per QP, or in the SRQ */
#define GRH_BYTES 40		/* in front of every UD receive */
#define QKEY 0x11111111u
#define POISON 0xa5
#define WRID_SEND (1ull << 63)

/* UC: no ACKs and no retries, so the run needs a wire that loses nothing. */
enum mode { MODE_RC, MODE_UC, MODE_UD, MODE_SRQ };
static const char *const mode_names[] = { "rc", "uc", "ud", "srq" };

static struct {
	const char *dev, *server;	/* server: set on the client only */
	int gid_index, port, timeout, qps;
	enum mode mode;
	uint32_t size, iters;
	uint64_t seed;
} opt = {
	.dev = "qrdma0", .gid_index = 1, .port = 19876, .timeout = 30, .qps = 1,
	.mode = MODE_RC, .size = 4096, .iters = 100, .seed = 0x51d3a2b7,
};

static const char *role = "pingpong";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	printf("%s: FAIL: ", role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- Pattern ------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * Message i from the client (from_server 0) or the server: every byte
 * depends on both, so a message delivered twice, out of order or in the
 * wrong direction fails the byte check even where the immediate would not.
 */
static void fill_pattern(uint8_t *p, uint32_t len, int from_server, uint32_t i)
{
	uint64_t x = splitmix64(((uint64_t)from_server << 32 | i) ^ opt.seed) | 1;
	uint32_t k;

	for (k = 0; k < len; k++) {
		if (k % 8 == 0) {
			x ^= x >> 12;
			x ^= x << 25;
			x ^= x >> 27;
		}
		p[k] = (x * 0x2545f4914f6cdd1dull) >> (8 * (k % 8));
	}
}

/* ---- TCP ----------------------------------------------------------------------- */

struct hello {			/* 32-bit words big-endian on the wire */
	uint32_t magic, mode, qps, size, iters, psn;
	uint32_t qpn[MAX_QPS];
	uint8_t gid[16];
};

static void tcp_io(int fd, void *buf, size_t len, bool out, const char *what)
{
	char *p = buf;
	ssize_t r;

	while (len) {
		r = out ? write(fd, p, len) : read(fd, p, len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			die("TCP %s of %s: nothing for %d s", out ? "send" : "receive", what, opt.timeout);
		if (r <= 0)
			die("TCP %s of %s failed: %s", out ? "send" : "receive", what,
			    r ? strerror(errno) : "peer closed");
		p += r;
		len -= r;
	}
}

static void set_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = opt.timeout };
	int one = 1;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int tcp_open(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(opt.port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	double end = now() + opt.timeout;
	struct pollfd pfd;
	int ls, fd, one = 1, err;
	char port[16];

	if (!opt.server) {
		ls = socket(AF_INET, SOCK_STREAM, 0);
		if (ls < 0)
			die("socket: %s", strerror(errno));
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1))
			die("bind/listen on port %d: %s", opt.port, strerror(errno));
		pfd = (struct pollfd){ .fd = ls, .events = POLLIN };
		if (poll(&pfd, 1, opt.timeout * 1000) != 1)
			die("no client connected within %d s", opt.timeout);
		fd = accept(ls, NULL, NULL);
		if (fd < 0)
			die("accept: %s", strerror(errno));
		close(ls);
		set_timeouts(fd);
		return fd;
	}
	snprintf(port, sizeof(port), "%d", opt.port);
	err = getaddrinfo(opt.server, port, &hints, &ai);
	if (err)
		die("%s: %s", opt.server, gai_strerror(err));
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket: %s", strerror(errno));
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		err = errno;
		close(fd);
		if (now() > end)
			die("cannot connect to %s:%d: %s", opt.server, opt.port, strerror(err));
		usleep(200000);	/* the server may not listen yet */
	}
	freeaddrinfo(ai);
	set_timeouts(fd);
	return fd;
}

static void exchange(int fd, const struct hello *mine, struct hello *peer)
{
	struct hello w = *mine;
	uint32_t *words = (uint32_t *)&w;
	size_t i, n = offsetof(struct hello, gid) / 4;

	for (i = 0; i < n; i++)
		words[i] = htobe32(words[i]);
	tcp_io(fd, &w, sizeof(w), true, "connection data");
	tcp_io(fd, peer, sizeof(*peer), false, "connection data");
	words = (uint32_t *)peer;
	for (i = 0; i < n; i++)
		words[i] = be32toh(words[i]);
	if (peer->magic != MAGIC_HELLO)
		die("peer sent bad connection data (magic %#x)", peer->magic);
	if (peer->mode != mine->mode || peer->qps != mine->qps || peer->size != mine->size ||
	    peer->iters != mine->iters)
		die("peer runs %s, %u QP(s), %u bytes, %u iterations; this side %s, %u, %u, %u",
		    peer->mode < 4 ? mode_names[peer->mode] : "?", peer->qps, peer->size,
		    peer->iters, mode_names[mine->mode], mine->qps, mine->size, mine->iters);
}

/* ---- RDMA ---------------------------------------------------------------------- */

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp[MAX_QPS];
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	struct ibv_port_attr port;
	union ibv_gid gid;
	uint8_t *buf;		/* receive slots, then the send buffer */
	uint8_t *expect;
	uint32_t slot_size, nslots;
} r;

static uint8_t *slot(uint32_t s) { return r.buf + (size_t)s * r.slot_size; }
static uint8_t *send_buf(void) { return slot(r.nslots); }

/* Slot s belongs to the SRQ, or to QP s / SLOTS. */
static void post_recv(uint32_t s)
{
	struct ibv_sge sge = { .addr = (uintptr_t)slot(s), .length = r.slot_size, .lkey = r.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = s, .sg_list = &sge, .num_sge = 1 }, *bad;
	int err;

	memset(slot(s), POISON, r.slot_size);
	err = r.srq ? ibv_post_srq_recv(r.srq, &wr, &bad) : ibv_post_recv(r.qp[s / SLOTS], &wr, &bad);
	if (err)
		die("post_recv of slot %u: %s", s, strerror(err));
}

static void rdma_open(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL), *dev = NULL;
	int i;

	if (!list)
		die("ibv_get_device_list: %s", strerror(errno));
	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), opt.dev))
			dev = list[i];
	if (!dev)
		die("no RDMA device %s", opt.dev);
	r.ctx = ibv_open_device(dev);
	if (!r.ctx)
		die("ibv_open_device(%s): %s", opt.dev, strerror(errno));
	ibv_free_device_list(list);
	if (ibv_query_port(r.ctx, 1, &r.port) || ibv_query_gid(r.ctx, 1, opt.gid_index, &r.gid))
		die("ibv_query_port/gid: %s", strerror(errno));
	if (r.port.state != IBV_PORT_ACTIVE)
		die("%s port 1 is not active (state %d)", opt.dev, r.port.state);
	if (opt.mode == MODE_UD && opt.size > (128u << r.port.active_mtu))
		die("a UD message of %u bytes is larger than the path MTU %u", opt.size,
		    128u << r.port.active_mtu);

	r.slot_size = opt.size + (opt.mode == MODE_UD ? GRH_BYTES : 0);
	r.nslots = opt.mode == MODE_SRQ ? SLOTS : SLOTS * opt.qps;
	r.buf = aligned_alloc(4096, ((size_t)(r.nslots + 1) * r.slot_size + 4095) / 4096 * 4096);
	r.expect = malloc(opt.size);
	if (!r.buf || !r.expect)
		die("out of memory");
	r.pd = ibv_alloc_pd(r.ctx);
	r.ch = ibv_create_comp_channel(r.ctx);
	if (!r.pd || !r.ch)
		die("ibv_alloc_pd/ibv_create_comp_channel: %s", strerror(errno));
	r.mr = ibv_reg_mr(r.pd, r.buf, (size_t)(r.nslots + 1) * r.slot_size, IBV_ACCESS_LOCAL_WRITE);
	if (!r.mr)
		die("ibv_reg_mr: %s", strerror(errno));
	r.cq = ibv_create_cq(r.ctx, r.nslots + 2 * opt.qps + 8, NULL, r.ch, 0);
	if (!r.cq)
		die("ibv_create_cq: %s", strerror(errno));
	if (opt.mode == MODE_SRQ) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = SLOTS, .max_sge = 1 } };

		r.srq = ibv_create_srq(r.pd, &sa);
		if (!r.srq)
			die("ibv_create_srq: %s", strerror(errno));
	}
	for (i = 0; i < opt.qps; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = r.cq, .recv_cq = r.cq, .srq = r.srq,
			.qp_type = opt.mode == MODE_UD ? IBV_QPT_UD :
				   opt.mode == MODE_UC ? IBV_QPT_UC : IBV_QPT_RC,
			.cap = { .max_send_wr = 2, .max_recv_wr = r.srq ? 0 : SLOTS,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };

		r.qp[i] = ibv_create_qp(r.pd, &ia);
		if (!r.qp[i])
			die("ibv_create_qp %d: %s", i, strerror(errno));
		if (ibv_modify_qp(r.qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  (opt.mode == MODE_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)))
			die("QP %d to INIT: %s", i, strerror(errno));
	}
	for (i = 0; i < (int)r.nslots; i++)
		post_recv(i);
	if (ibv_req_notify_cq(r.cq, 0))
		die("ibv_req_notify_cq: %s", strerror(errno));
}

static void rdma_connect(const struct hello *mine, const struct hello *peer)
{
	struct ibv_ah_attr ah = {
		.is_global = 1, .port_num = 1,
		.grh = { .sgid_index = opt.gid_index, .hop_limit = 64 },
	};
	int i;

	memcpy(ah.grh.dgid.raw, peer->gid, 16);
	if (opt.mode == MODE_UD) {
		r.ah = ibv_create_ah(r.pd, &ah);
		if (!r.ah)
			die("ibv_create_ah: %s", strerror(errno));
	}
	for (i = 0; i < opt.qps; i++) {
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_RTR, .path_mtu = r.port.active_mtu, .ah_attr = ah,
			.dest_qp_num = peer->qpn[i], .rq_psn = peer->psn,
			.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		};

		int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN;
		int rts = IBV_QP_STATE | IBV_QP_SQ_PSN;

		/* IBTA 11.2.5: what each transition takes, by service type. */
		if (opt.mode == MODE_UD)
			rtr = IBV_QP_STATE;
		else if (opt.mode != MODE_UC)
			rtr |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		if (opt.mode == MODE_RC || opt.mode == MODE_SRQ)
			rts |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			       IBV_QP_MAX_QP_RD_ATOMIC;
		if (ibv_modify_qp(r.qp[i], &a, rtr))
			die("QP %d to RTR: %s", i, strerror(errno));
		a = (struct ibv_qp_attr){
			.qp_state = IBV_QPS_RTS, .sq_psn = mine->psn, .timeout = 14,
			.retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1,
		};
		if (ibv_modify_qp(r.qp[i], &a, rts))
			die("QP %d to RTS: %s", i, strerror(errno));
	}
}

/*
 * The next completion, waited for through the completion channel (no busy
 * polling: under TCG it would steal the CPU the device emulation needs),
 * with a rescan every second in case an event was missed.
 */
static void next_wc(struct ibv_wc *wc, const char *waiting_for)
{
	double end = now() + opt.timeout;
	struct pollfd pfd = { .fd = r.ch->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int n;

	for (;;) {
		n = ibv_poll_cq(r.cq, 1, wc);
		if (n < 0)
			die("ibv_poll_cq: %d", n);
		if (n)
			return;
		if (now() > end)
			die("no completion for %d s while waiting for %s", opt.timeout, waiting_for);
		if (poll(&pfd, 1, 1000) == 1) {
			if (ibv_get_cq_event(r.ch, &ev_cq, &ev_ctx))
				die("ibv_get_cq_event: %s", strerror(errno));
			ibv_ack_cq_events(ev_cq, 1);
			if (ibv_req_notify_cq(r.cq, 0))
				die("ibv_req_notify_cq: %s", strerror(errno));
		}
	}
}

static void post_send(uint32_t i, const struct hello *peer)
{
	int q = i % opt.qps;
	struct ibv_sge sge = { .addr = (uintptr_t)send_buf(), .length = opt.size, .lkey = r.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = WRID_SEND | i, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
		.imm_data = htobe32(i),
	}, *bad;
	int err;

	if (opt.mode == MODE_UD) {
		wr.wr.ud.ah = r.ah;
		wr.wr.ud.remote_qpn = peer->qpn[q];
		wr.wr.ud.remote_qkey = QKEY;
	}
	fill_pattern(send_buf(), opt.size, !opt.server, i);
	err = ibv_post_send(r.qp[q], &wr, &bad);
	if (err)
		die("post_send of message %u: %s", i, strerror(err));
}

/* Checks a receive completion for message i of the peer, then reposts its slot. */
static void check_recv(const struct ibv_wc *wc, uint32_t i, const struct hello *peer)
{
	uint32_t q = i % opt.qps, want_len = r.slot_size, k, bad = 0, first = 0;
	const uint8_t *data = slot(wc->wr_id) + (opt.mode == MODE_UD ? GRH_BYTES : 0);

	if (wc->opcode != IBV_WC_RECV || !(wc->wc_flags & IBV_WC_WITH_IMM))
		die("message %u: opcode %d, flags %#x: expected a receive with immediate", i,
		    wc->opcode, wc->wc_flags);
	if (be32toh(wc->imm_data) != i)
		die("message %u arrived with immediate %u", i, be32toh(wc->imm_data));
	if (wc->byte_len != want_len)
		die("message %u: %u bytes, expected %u", i, wc->byte_len, want_len);
	if (wc->qp_num != r.qp[q]->qp_num)
		die("message %u arrived on QP %#x, expected QP %#x", i, wc->qp_num, r.qp[q]->qp_num);
	if (opt.mode == MODE_UD && (!(wc->wc_flags & IBV_WC_GRH) || wc->src_qp != peer->qpn[q]))
		die("message %u: flags %#x, source QP %#x: expected a GRH from QP %#x", i,
		    wc->wc_flags, wc->src_qp, peer->qpn[q]);
	fill_pattern(r.expect, opt.size, !!opt.server, i);
	for (k = 0; k < opt.size; k++) {
		if (data[k] != r.expect[k] && !bad++)
			first = k;
	}
	if (bad)
		die("message %u: %u of %u bytes wrong, the first at offset %u (%#04x, expected %#04x)",
		    i, bad, opt.size, first, data[first], r.expect[first]);
	post_recv(wc->wr_id);
}

/*
 * Message i one way: the client sends and then waits for the answer; the
 * server waits for the message and then answers. Both wait for their own
 * send's completion before the send buffer is reused. Completions of the
 * send and the receive queue come in no fixed order (IBTA), so the peer's
 * next message may arrive before this side's send completes (soft-RoCE
 * reports sends late): it is kept for the next iteration, unchecked and
 * its slot not yet reposted.
 */
static struct ibv_wc early;
static bool have_early;

static void round_trip(uint32_t i, const struct hello *peer)
{
	bool sent = false, received = false, posted = false;
	struct ibv_wc wc;

	if (opt.server) {
		post_send(i, peer);
		posted = true;
	}
	while (!sent || !received) {
		if (have_early && !received) {
			wc = early;
			have_early = false;
		} else {
			next_wc(&wc, received ? "a send completion" : "the peer's message");
		}
		if (wc.status != IBV_WC_SUCCESS)
			die("message %u: %s completion with error: %s (status %d)", i,
			    wc.wr_id & WRID_SEND ? "send" : "receive", ibv_wc_status_str(wc.status),
			    wc.status);
		if (wc.wr_id & WRID_SEND) {
			if (!posted || wc.wr_id != (WRID_SEND | i))
				die("send completion for wr_id %#" PRIx64 " in iteration %u", wc.wr_id, i);
			sent = true;
			continue;
		}
		if (received) {
			if (have_early || !(wc.wc_flags & IBV_WC_WITH_IMM) ||
			    be32toh(wc.imm_data) != i + 1)
				die("a second receive in iteration %u", i);
			early = wc;
			have_early = true;
			continue;
		}
		check_recv(&wc, i, peer);
		received = true;
		if (!posted) {
			post_send(i, peer);
			posted = true;
		}
	}
}

int main(int argc, char **argv)
{
	struct hello mine = { .magic = MAGIC_HELLO }, peer;
	uint32_t i, ready = htobe32(MAGIC_READY);
	int c, fd, qps = 0;
	double t0, longest = 0;
	uint32_t longest_i = 0;

	while ((c = getopt(argc, argv, "d:g:p:t:s:n:q:w:S:")) != -1) {
		switch (c) {
		case 'd': opt.dev = optarg; break;
		case 'g': opt.gid_index = atoi(optarg); break;
		case 'p': opt.port = atoi(optarg); break;
		case 't':
			for (i = 0; i < 4 && strcmp(optarg, mode_names[i]); i++)
				;
			if (i == 4)
				goto usage;
			opt.mode = i;
			break;
		case 's': opt.size = strtoul(optarg, NULL, 0); break;
		case 'n': opt.iters = strtoul(optarg, NULL, 0); break;
		case 'q': qps = atoi(optarg); break;
		case 'w': opt.timeout = atoi(optarg); break;
		case 'S': opt.seed = strtoull(optarg, NULL, 0); break;
		default: goto usage;
		}
	}
	if (optind < argc)
		opt.server = argv[optind++];
	opt.qps = qps ? qps : opt.mode == MODE_SRQ ? 4 : 1;
	if (optind != argc || !opt.size || opt.qps < 1 || opt.qps > MAX_QPS ||
	    (opt.mode != MODE_SRQ && opt.qps != 1) || opt.timeout < 1)
		goto usage;
	role = opt.server ? "client" : "server";

	rdma_open();
	mine.mode = opt.mode;
	mine.qps = opt.qps;
	mine.size = opt.size;
	mine.iters = opt.iters;
	srand48(getpid() ^ (long)(now() * 1e6));
	mine.psn = lrand48() & 0xffffff;
	for (c = 0; c < opt.qps; c++)
		mine.qpn[c] = r.qp[c]->qp_num;
	memcpy(mine.gid, r.gid.raw, 16);
	fd = tcp_open();
	exchange(fd, &mine, &peer);
	rdma_connect(&mine, &peer);
	tcp_io(fd, &ready, sizeof(ready), true, "ready");
	tcp_io(fd, &ready, sizeof(ready), false, "ready");
	if (be32toh(ready) != MAGIC_READY)
		die("peer sent a bad ready message");

	/*
	 * The longest round trip is the longest stall this side saw: what a
	 * peer of a guest that live-migrates meanwhile measures
	 * (tests/vm/guest-migrate.sh).
	 */
	t0 = now();
	for (i = 0; i < opt.iters; i++) {
		double t1 = now(), dt;

		round_trip(i, &peer);
		dt = now() - t1;
		if (dt > longest) {
			longest = dt;
			longest_i = i;
		}
	}
	printf("%s: %u messages of %u bytes each way over %s (%d QP(s)), every byte checked, in %.2f s; longest round trip %.0f ms (message %u)\n",
	       role, opt.iters, opt.size, mode_names[opt.mode], opt.qps, now() - t0,
	       longest * 1e3, longest_i);
	fflush(stdout);
	close(fd);
	return 0;

usage:
	fprintf(stderr, "usage: %s [-d DEV] [-g IDX] [-p PORT] [-t rc|ud|srq] [-s SIZE] [-n N] [-q QPS] [-w SEC] [-S SEED] [SERVER]\n",
		argv[0]);
	return 2;
}
