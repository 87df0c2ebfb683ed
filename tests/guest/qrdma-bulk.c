// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Bulk data integrity over one RC QP between two hosts (server and client).
 *
 * The client streams N MB (default 1024) of a deterministic pseudo-random
 * pattern to the server, one chunk (default 64 MB, one registered buffer
 * reused) at a time, each chunk with its own seed:
 *   1. fill the chunk and fold it into the client's running checksum;
 *   2. RDMA WRITE it into the server's registered buffer as WR-size (default
 *      1 MB) WRs, several in flight, every few signaled;
 *   3. RDMA READ it back from the server into a second buffer the same way
 *      and compare byte for byte (proves READ);
 *   4. SEND with immediate (the chunk number) tells the server the chunk is
 *      complete; the server checks the immediate, folds its buffer into its
 *      own running checksum and answers over TCP with the chunk's checksum,
 *      which the client compares with its own (proves WRITE, per chunk);
 * and at the end both sides compare the checksum of the whole stream.
 * QPN, PSN, rkey, address and GID are exchanged over plain TCP, so no
 * rdma_cm is involved. The checksum is FNV-1a 64 applied to 64-bit
 * little-endian words (one xor and one multiply per word: a byte-wise FNV is
 * too slow under TCG); each step is a bijection of the state, so any single
 * corrupted word always changes the result.
 *
 * Completions are waited for through a completion channel (no busy polling:
 * under TCG that would steal the CPU the device emulation needs), with a
 * one-second rescan of the CQ; any wait without progress for the timeout
 * (default 120 s) fails the run, as does every error completion, a mismatch,
 * or a TCP failure. Exit status 0 only when all checks passed.
 *
 * An error completion is reported for tests of a vanished peer: its status,
 * the time without any completion before it against the QP's retry budget
 * ((retry_cnt + 1) local ACK timeouts, IBTA 9.7.5.1), the CLOCK_BOOTTIME
 * second it was seen (comparable with /proc/uptime), the QP state the
 * device reports afterwards, and the statuses of the completions that
 * follow within 2 s (the rest of the outstanding WRs, flushed).
 *
 * usage: qrdma-bulk [options]            server
 *        qrdma-bulk [options] SERVER     client
 *   -d DEV   RDMA device (default qrdma0)   -g IDX  GID index (default 1)
 *   -p PORT  TCP port (default 19875)       -m MB   total size (default 1024)
 *   -c MB    chunk size (default 64)        -w KB   WR size (default 1024)
 *   -q N     WRs in flight (default 16)     -s N    signal every N WRs (default 4)
 *   -t SEC   timeout without progress (default 120)
 *   -S SEED  pattern seed (default 0x51d3a2b7)
 *   -T N     QP local ACK timeout, 4.096 us * 2^N (default 14 = 67 ms)
 *   -r N     QP retry count (default 7)
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
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <infiniband/verbs.h>

#define MAGIC_HELLO 0x71626c6bu	/* "qblk" */
#define MAGIC_ACK 0x71616b21u
#define MAGIC_END 0x71656e64u
#define MB ((uint64_t)1024 * 1024)
#define FNV_BASIS 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull
#define MSG_SIZE 64
#define BUF_SKEW (37 * 4096)
#define WRID_SEND (1ull << 62)
#define WRID_RECV (1ull << 63)

static struct {
	const char *dev, *server;
	int gid_index, port, timeout, depth, sig_every, ack_timeout, retry_cnt;
	uint64_t total, chunk, wr_size, seed;
} opt = {
	.dev = "qrdma0", .gid_index = 1, .port = 19875, .timeout = 120, .depth = 16,
	.sig_every = 4, .ack_timeout = 14, .retry_cnt = 7, .total = 1024 * MB, .chunk = 64 * MB, .wr_size = MB, .seed = 0x51d3a2b7,
};

static const char *role = "bulk";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stdout, "%s: FAIL: ", role);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fprintf(stdout, "\n");
	fflush(stdout);
	exit(1);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- Pattern and checksum ------------------------------------------------------ */

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t chunk_seed(uint64_t chunk)
{
	uint64_t s = splitmix64(opt.seed ^ splitmix64(chunk));

	return s ? s : 1;	/* xorshift must not start at 0 */
}

/* xorshift64* words, stored little-endian; @len is a multiple of 8. */
static void fill_pattern(uint64_t *p, size_t len, uint64_t seed)
{
	uint64_t x = seed;
	size_t i;

	for (i = 0; i < len / 8; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		p[i] = htole64(x * 0x2545f4914f6cdd1dull);
	}
}

/*
 * Folds @len bytes into two FNV-1a states at once: the chunk's own checksum
 * and the running checksum of the whole stream.
 */
static void fnv1a64_words(uint64_t *chunk, uint64_t *stream, const uint64_t *p, size_t len)
{
	uint64_t a = *chunk, b = *stream, w;
	size_t i;

	for (i = 0; i < len / 8; i++) {
		w = le64toh(p[i]);
		a = (a ^ w) * FNV_PRIME;
		b = (b ^ w) * FNV_PRIME;
	}
	*chunk = a;
	*stream = b;
}

/*
 * Not memcmp, and not vectorized: TCG runs plain 64-bit loads several times
 * faster than the SSE/AVX code glibc or the vectorizer would use.
 */
__attribute__((noinline, optimize("no-tree-vectorize")))
static bool same_words(const uint64_t *a, const uint64_t *b, size_t len)
{
	uint64_t diff = 0;
	size_t i;

	for (i = 0; i < len / 8; i++)
		diff |= a[i] ^ b[i];
	return !diff;
}

/* ---- TCP ----------------------------------------------------------------------- */

struct hello {			/* big-endian on the wire */
	uint32_t magic, qpn, psn, rkey;
	uint64_t addr, len;
	uint64_t total, chunk;
	uint32_t mtu, rd_atom;
	uint8_t gid[16];
};

struct ack {
	uint32_t magic, chunk;
	uint64_t sum, bytes;
};

static void set_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = opt.timeout };
	int one = 1;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void tcp_write(int fd, const void *buf, size_t len, const char *what)
{
	const char *p = buf;
	ssize_t r;

	while (len) {
		r = write(fd, p, len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("TCP send of %s failed: %s", what, r ? strerror(errno) : "closed");
		p += r;
		len -= r;
	}
}

static void tcp_read(int fd, void *buf, size_t len, const char *what)
{
	char *p = buf;
	ssize_t r;

	while (len) {
		r = read(fd, p, len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			die("TCP receive of %s: no data for %d s", what, opt.timeout);
		if (r <= 0)
			die("TCP receive of %s failed: %s", what, r ? strerror(errno) : "peer closed");
		p += r;
		len -= r;
	}
}

static int tcp_listen_accept(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(opt.port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	struct pollfd pfd;
	int ls, fd, one = 1;

	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0)
		die("socket: %s", strerror(errno));
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1))
		die("bind/listen on port %d: %s", opt.port, strerror(errno));
	say("listening on TCP port %d", opt.port);
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

static int tcp_connect(void)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	char port[16];
	double end = now() + opt.timeout;
	int fd, err;

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

static void send_hello(int fd, const struct hello *h)
{
	struct hello w = *h;

	w.magic = htobe32(h->magic);
	w.qpn = htobe32(h->qpn);
	w.psn = htobe32(h->psn);
	w.rkey = htobe32(h->rkey);
	w.addr = htobe64(h->addr);
	w.len = htobe64(h->len);
	w.total = htobe64(h->total);
	w.chunk = htobe64(h->chunk);
	w.mtu = htobe32(h->mtu);
	w.rd_atom = htobe32(h->rd_atom);
	tcp_write(fd, &w, sizeof(w), "connection data");
}

static void recv_hello(int fd, struct hello *h)
{
	tcp_read(fd, h, sizeof(*h), "connection data");
	h->magic = be32toh(h->magic);
	h->qpn = be32toh(h->qpn);
	h->psn = be32toh(h->psn);
	h->rkey = be32toh(h->rkey);
	h->addr = be64toh(h->addr);
	h->len = be64toh(h->len);
	h->total = be64toh(h->total);
	h->chunk = be64toh(h->chunk);
	h->mtu = be32toh(h->mtu);
	h->rd_atom = be32toh(h->rd_atom);
	if (h->magic != MAGIC_HELLO)
		die("peer sent bad connection data (magic %#x)", h->magic);
}

static void send_ack(int fd, uint32_t magic, uint32_t chunk, uint64_t sum, uint64_t bytes)
{
	struct ack a = { htobe32(magic), htobe32(chunk), htobe64(sum), htobe64(bytes) };

	tcp_write(fd, &a, sizeof(a), "checksum");
}

static void recv_ack(int fd, uint32_t magic, struct ack *a)
{
	tcp_read(fd, a, sizeof(*a), "checksum");
	a->magic = be32toh(a->magic);
	a->chunk = be32toh(a->chunk);
	a->sum = be64toh(a->sum);
	a->bytes = be64toh(a->bytes);
	if (a->magic != magic)
		die("peer sent bad checksum message (magic %#x, expected %#x)", a->magic, magic);
}

/* ---- RDMA ---------------------------------------------------------------------- */

struct rdma {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_port_attr port;
	union ibv_gid gid;
	uint32_t psn;
	int rd_atom;
	unsigned long missed_events;
	double last_wc;		/* when the last good completion (or the connection) was seen */
	uint64_t outstanding;	/* WRs posted and not yet seen complete */
};

static void rdma_open(struct rdma *r, int max_send_wr, int max_recv_wr)
{
	struct ibv_device **list = ibv_get_device_list(NULL), *dev = NULL;
	struct ibv_device_attr da;
	int i;

	if (!list)
		die("ibv_get_device_list: %s", strerror(errno));
	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), opt.dev))
			dev = list[i];
	if (!dev)
		die("no RDMA device %s", opt.dev);
	r->ctx = ibv_open_device(dev);
	if (!r->ctx)
		die("ibv_open_device(%s): %s", opt.dev, strerror(errno));
	ibv_free_device_list(list);
	if (ibv_query_device(r->ctx, &da) || ibv_query_port(r->ctx, 1, &r->port))
		die("ibv_query_device/port: %s", strerror(errno));
	if (r->port.state != IBV_PORT_ACTIVE)
		die("%s port 1 is not active (state %d)", opt.dev, r->port.state);
	if (ibv_query_gid(r->ctx, 1, opt.gid_index, &r->gid))
		die("ibv_query_gid(%d): %s", opt.gid_index, strerror(errno));
	r->rd_atom = da.max_qp_rd_atom < 16 ? da.max_qp_rd_atom : 16;
	if (r->rd_atom < 1)
		r->rd_atom = 1;
	r->pd = ibv_alloc_pd(r->ctx);
	r->ch = ibv_create_comp_channel(r->ctx);
	if (!r->pd || !r->ch)
		die("ibv_alloc_pd/ibv_create_comp_channel: %s", strerror(errno));
	r->cq = ibv_create_cq(r->ctx, max_send_wr + max_recv_wr + 8, NULL, r->ch, 0);
	if (!r->cq)
		die("ibv_create_cq: %s", strerror(errno));
	struct ibv_qp_init_attr ia = {
		.send_cq = r->cq, .recv_cq = r->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = max_send_wr, .max_recv_wr = max_recv_wr,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	r->qp = ibv_create_qp(r->pd, &ia);
	if (!r->qp)
		die("ibv_create_qp: %s", strerror(errno));
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	if (ibv_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					IBV_QP_ACCESS_FLAGS))
		die("QP to INIT: %s", strerror(errno));
	srand48(getpid() ^ (long)(now() * 1e6));
	r->psn = lrand48() & 0xffffff;
}

static void rdma_connect(struct rdma *r, const struct hello *peer)
{
	enum ibv_mtu mtu = r->port.active_mtu < peer->mtu ? r->port.active_mtu :
							     (enum ibv_mtu)peer->mtu;
	int rd_atom = r->rd_atom < (int)peer->rd_atom ? r->rd_atom : (int)peer->rd_atom;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = mtu,
		.dest_qp_num = peer->qpn,
		.rq_psn = peer->psn,
		.max_dest_rd_atomic = rd_atom,
		.min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .sgid_index = opt.gid_index, .hop_limit = 64 } },
	};
	char gid[INET6_ADDRSTRLEN];

	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	if (ibv_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("QP to RTR: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = opt.ack_timeout;
	a.retry_cnt = opt.retry_cnt;
	a.rnr_retry = 7;
	a.sq_psn = r->psn;
	a.max_rd_atomic = rd_atom;
	if (ibv_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("QP to RTS: %s", strerror(errno));
	inet_ntop(AF_INET6, peer->gid, gid, sizeof(gid));
	r->last_wc = now();
	say("connected: local QPN %#x PSN %#x, remote QPN %#x PSN %#x GID %s, MTU %d, rd_atomic %d",
	    r->qp->qp_num, r->psn, peer->qpn, peer->psn, gid, 128 << mtu, rd_atom);
}

static void *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);

	if (p == MAP_FAILED)
		die("mmap %zu bytes: %s", len, strerror(errno));
	return p;
}

static struct ibv_mr *reg(struct rdma *r, void *buf, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(r->pd, buf, len, access);

	if (!mr)
		die("ibv_reg_mr %zu bytes: %s", len, strerror(errno));
	return mr;
}

static const char *qp_state_name(enum ibv_qp_state s)
{
	static const char *const names[] = {
		[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
		[IBV_QPS_RTS] = "RTS", [IBV_QPS_SQD] = "SQD", [IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
	};

	return (unsigned int)s < sizeof(names) / sizeof(names[0]) && names[s] ? names[s] : "?";
}

static void count_after_error(const struct ibv_wc *wc, int n, unsigned int *flushed,
			      unsigned int *other)
{
	int i;

	for (i = 0; i < n; i++) {
		if (wc[i].status == IBV_WC_WR_FLUSH_ERR) {
			(*flushed)++;
			continue;
		}
		(*other)++;
		say("then: %s (status %d, opcode %d, wr_id %#" PRIx64 ")",
		    ibv_wc_status_str(wc[i].status), wc[i].status, wc[i].opcode, wc[i].wr_id);
	}
}

/*
 * The report described at the top of the file; then the run fails. @rest
 * are the @nrest completions polled in the same batch after the error.
 */
static void error_completion(struct rdma *r, const struct ibv_wc *wc, const struct ibv_wc *rest,
			     int nrest, const char *what)
{
	double budget = (opt.retry_cnt + 1) * 4.096e-6 * (double)(1ull << opt.ack_timeout);
	double quiet = now() - r->last_wc, end;
	struct ibv_qp_init_attr qia;
	unsigned int flushed = 0, other = 0;
	struct ibv_wc more[16];
	struct ibv_qp_attr qa;
	struct timespec boot;
	int n;

	clock_gettime(CLOCK_BOOTTIME, &boot);
	say("%s: completion with error: %s (status %d, vendor_err %#x, opcode %d, wr_id %#" PRIx64
	    ", qp %#x)", what, ibv_wc_status_str(wc->status), wc->status, wc->vendor_err,
	    wc->opcode, wc->wr_id, wc->qp_num);
	say("error completion at uptime %.3f s, after %.3f s without a completion; retry budget "
	    "%.3f s (retry_cnt %d + 1 times the local ACK timeout %d = %.1f ms); %" PRIu64
	    " WR(s) were outstanding", boot.tv_sec + boot.tv_nsec / 1e9, quiet, budget,
	    opt.retry_cnt, opt.ack_timeout, 4.096e-3 * (double)(1ull << opt.ack_timeout),
	    r->outstanding);
	if (ibv_query_qp(r->qp, &qa, IBV_QP_STATE, &qia))
		say("ibv_query_qp after the error: %s", strerror(errno));
	else
		say("QP state after the error: %s (%d)", qp_state_name(qa.qp_state), qa.qp_state);
	count_after_error(rest, nrest, &flushed, &other);
	for (end = now() + 2; now() < end;) {
		n = ibv_poll_cq(r->cq, 16, more);
		if (n < 0)
			break;
		count_after_error(more, n, &flushed, &other);
		if (!n)
			usleep(50000);
	}
	say("after it within 2 s: %u flushed completion(s) (WR_FLUSH_ERR), %u other(s)",
	    flushed, other);
	die("%s: completion with error: %s (status %d, vendor_err %#x, opcode %d, wr_id %#" PRIx64
	    ", qp %#x)", what, ibv_wc_status_str(wc->status), wc->status, wc->vendor_err,
	    wc->opcode, wc->wr_id, wc->qp_num);
}

/*
 * Waits for at least one completion and returns how many were read into @wc.
 * Sleeps on the completion channel; a one-second rescan covers a lost event
 * (counted and reported). Fails after opt.timeout seconds without one, and on
 * any error completion.
 */
static int wait_wc(struct rdma *r, struct ibv_wc *wc, int max, const char *what)
{
	double end = now() + opt.timeout;
	bool armed = false, after_timeout = false;
	struct pollfd pfd = { .fd = r->ch->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int n, i, ms;

	for (;;) {
		n = ibv_poll_cq(r->cq, max, wc);
		if (n < 0)
			die("ibv_poll_cq failed while waiting for %s", what);
		if (n > 0) {
			/* Found by the rescan: did the armed CQ raise its event at all? */
			if (armed && after_timeout && poll(&pfd, 1, 200) != 1)
				r->missed_events++;
			break;
		}
		if (!armed) {
			if (ibv_req_notify_cq(r->cq, 0))
				die("ibv_req_notify_cq: %s", strerror(errno));
			armed = true;
			continue;	/* poll again: a CQE may have raced the arming */
		}
		if (now() > end)
			die("no completion for %d s while waiting for %s", opt.timeout, what);
		ms = (int)((end - now()) * 1000);
		ms = ms > 1000 ? 1000 : ms < 1 ? 1 : ms;
		i = poll(&pfd, 1, ms);
		after_timeout = i == 0;
		if (i < 0 && errno != EINTR)
			die("poll on the completion channel: %s", strerror(errno));
		if (i == 1) {
			if (ibv_get_cq_event(r->ch, &ev_cq, &ev_ctx))
				die("ibv_get_cq_event: %s", strerror(errno));
			ibv_ack_cq_events(ev_cq, 1);
			armed = false;
		}
	}
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			error_completion(r, &wc[i], &wc[i + 1], n - i - 1, what);
		r->last_wc = now();
	}
	return n;
}

/*
 * Moves @len bytes between @local and the peer's @raddr with RDMA WRITE or
 * READ, in opt.wr_size WRs, at most opt.depth in flight, every opt.sig_every-th
 * and the last signaled. Returns when all are complete.
 */
static void rdma_xfer(struct rdma *r, enum ibv_wr_opcode op, char *local, uint32_t lkey,
		      uint64_t raddr, uint32_t rkey, uint64_t len, const char *what)
{
	uint64_t nwr = (len + opt.wr_size - 1) / opt.wr_size, posted = 0, done = 0;
	struct ibv_wc wc[16];
	int n, i;

	while (done < nwr) {
		while (posted < nwr && posted - done < (uint64_t)opt.depth) {
			uint64_t off = posted * opt.wr_size;
			uint32_t l = len - off < opt.wr_size ? len - off : opt.wr_size;
			struct ibv_sge sge = { (uintptr_t)local + off, l, lkey };
			struct ibv_send_wr wr = {
				.wr_id = posted, .sg_list = &sge, .num_sge = 1, .opcode = op,
				.wr.rdma = { .remote_addr = raddr + off, .rkey = rkey },
			}, *bad;

			if ((posted + 1) % opt.sig_every == 0 || posted + 1 == nwr ||
			    posted + 1 - done == (uint64_t)opt.depth)
				wr.send_flags = IBV_SEND_SIGNALED;
			if (ibv_post_send(r->qp, &wr, &bad))
				die("%s: ibv_post_send of WR %" PRIu64 ": %s", what, posted,
				    strerror(errno));
			posted++;
		}
		r->outstanding = posted - done;
		n = wait_wc(r, wc, 16, what);
		for (i = 0; i < n; i++) {
			enum ibv_wc_opcode want = op == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE :
									    IBV_WC_RDMA_READ;
			if (wc[i].opcode != want || wc[i].wr_id >= posted || wc[i].wr_id < done)
				die("%s: unexpected completion (opcode %d, wr_id %#" PRIx64
				    ", %" PRIu64 " WRs done of %" PRIu64 " posted)", what,
				    wc[i].opcode, wc[i].wr_id, done, posted);
			done = wc[i].wr_id + 1;	/* RC completes in order */
		}
	}
}

/* ---- Server -------------------------------------------------------------------- */

static void post_msg_recv(struct rdma *r, void *msg, struct ibv_mr *mr)
{
	struct ibv_sge sge = { (uintptr_t)msg, MSG_SIZE, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = WRID_RECV, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(r->qp, &wr, &bad))
		die("ibv_post_recv: %s", strerror(errno));
}

static int run_server(void)
{
	struct rdma r = { 0 };
	struct hello me = { 0 }, peer;
	struct ibv_mr *mr, *msg_mr;
	struct ibv_wc wc;
	uint64_t sum = FNV_BASIS, bytes = 0, nchunks, c;
	void *buf, *msg;
	struct ack end;
	double t0, t_sum = 0;
	int fd;

	role = "server";
	fd = tcp_listen_accept();
	recv_hello(fd, &peer);
	if (!peer.chunk || peer.chunk % 8 || peer.total % 8 || peer.chunk > (1ull << 32))
		die("client asked for a bad size (total %" PRIu64 ", chunk %" PRIu64 ")",
		    peer.total, peer.chunk);
	nchunks = (peer.total + peer.chunk - 1) / peer.chunk;
	say("client will send %" PRIu64 " MB in %" PRIu64 " chunk(s) of %" PRIu64 " MB",
	    peer.total / MB, nchunks, peer.chunk / MB);

	rdma_open(&r, 4, 4);
	buf = map(peer.chunk);
	msg = map(4096);
	mr = reg(&r, buf, peer.chunk, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				      IBV_ACCESS_REMOTE_READ);
	msg_mr = reg(&r, msg, 4096, IBV_ACCESS_LOCAL_WRITE);
	post_msg_recv(&r, msg, msg_mr);
	rdma_connect(&r, &peer);
	me = (struct hello){ .magic = MAGIC_HELLO, .qpn = r.qp->qp_num, .psn = r.psn,
			     .rkey = mr->rkey, .addr = (uintptr_t)buf, .len = peer.chunk,
			     .mtu = r.port.active_mtu, .rd_atom = r.rd_atom };
	memcpy(me.gid, r.gid.raw, 16);
	send_hello(fd, &me);

	for (c = 0; c < nchunks; c++) {
		uint64_t len = peer.total - c * peer.chunk < peer.chunk ?
			       peer.total - c * peer.chunk : peer.chunk, s;
		uint64_t m[3];
		char what[64];

		snprintf(what, sizeof(what), "chunk %" PRIu64 " notification", c);
		wait_wc(&r, &wc, 1, what);
		if (wc.wr_id != WRID_RECV || wc.opcode != IBV_WC_RECV)
			die("%s: unexpected completion (opcode %d, wr_id %#" PRIx64 ")", what,
			    wc.opcode, wc.wr_id);
		if (!(wc.wc_flags & IBV_WC_WITH_IMM) || be32toh(wc.imm_data) != c)
			die("%s: immediate %s%u, expected %" PRIu64, what,
			    wc.wc_flags & IBV_WC_WITH_IMM ? "" : "(none) ",
			    be32toh(wc.imm_data), c);
		memcpy(m, msg, sizeof(m));
		if (wc.byte_len != sizeof(m) || be64toh(m[0]) != c || be64toh(m[1]) != len)
			die("%s: payload of %u bytes says chunk %" PRIu64 " length %" PRIu64
			    ", expected %zu bytes, chunk %" PRIu64 " length %" PRIu64, what,
			    wc.byte_len, be64toh(m[0]), be64toh(m[1]), sizeof(m), c, len);
		post_msg_recv(&r, msg, msg_mr);
		t0 = now();
		s = FNV_BASIS;
		fnv1a64_words(&s, &sum, buf, len);
		t_sum += now() - t0;
		bytes += len;
		send_ack(fd, MAGIC_ACK, c, s, bytes);
		say("chunk %" PRIu64 "/%" PRIu64 ": %" PRIu64 " MB received, fnv %016" PRIx64,
		    c + 1, nchunks, len / MB, s);
	}
	recv_ack(fd, MAGIC_END, &end);
	send_ack(fd, MAGIC_END, (uint32_t)nchunks, sum, bytes);
	say("checksumming took %.1f s; %lu completion(s) were found without an event",
	    t_sum, r.missed_events);
	if (end.sum != sum || end.bytes != bytes)
		die("WRITE stream checksum MISMATCH: server %016" PRIx64 " over %" PRIu64
		    " bytes, client %016" PRIx64 " over %" PRIu64 " bytes", sum, bytes,
		    end.sum, end.bytes);
	say("PASS: WRITE stream checksum %016" PRIx64 " over %" PRIu64 " MB matches the client's",
	    sum, bytes / MB);
	return 0;
}

/* ---- Client -------------------------------------------------------------------- */

static void report_mismatch(const char *a, const char *b, uint64_t len, uint64_t chunk)
{
	uint64_t i, first = len, count = 0;

	for (i = 0; i < len; i++)
		if (a[i] != b[i]) {
			if (first == len)
				first = i;
			count++;
		}
	die("READ back of chunk %" PRIu64 " differs from what was written: %" PRIu64
	    " byte(s) differ, the first at offset %" PRIu64 " (stream offset %" PRIu64
	    "): wrote %#04x, read %#04x", chunk, count, first, chunk * opt.chunk + first,
	    (unsigned char)a[first], (unsigned char)b[first]);
}

static int run_client(void)
{
	struct rdma r = { 0 };
	struct hello me = { 0 }, peer;
	struct ibv_mr *mr_w, *mr_r, *msg_mr;
	uint64_t sum = FNV_BASIS, bytes = 0, nchunks, c;
	double t_write = 0, t_read = 0, t_fill = 0, t_cmp = 0, t_ack = 0, t_all, t0;
	void *wbuf, *rbuf, *msg;
	struct ibv_wc wc;
	struct ack a;
	int fd;

	role = "client";
	nchunks = (opt.total + opt.chunk - 1) / opt.chunk;
	rdma_open(&r, opt.depth + 4, 1);
	/*
	 * Both buffers in one mapping, 37 pages apart beyond the chunk: at a
	 * power-of-two distance the compare loop's two streams would evict each
	 * other from TCG's direct-mapped software TLB on every load.
	 */
	wbuf = map(2 * opt.chunk + BUF_SKEW);
	rbuf = (char *)wbuf + opt.chunk + BUF_SKEW;
	msg = map(4096);
	mr_w = reg(&r, wbuf, opt.chunk, IBV_ACCESS_LOCAL_WRITE);
	mr_r = reg(&r, rbuf, opt.chunk, IBV_ACCESS_LOCAL_WRITE);
	msg_mr = reg(&r, msg, 4096, IBV_ACCESS_LOCAL_WRITE);
	fd = tcp_connect();
	me = (struct hello){ .magic = MAGIC_HELLO, .qpn = r.qp->qp_num, .psn = r.psn,
			     .total = opt.total, .chunk = opt.chunk, .mtu = r.port.active_mtu,
			     .rd_atom = r.rd_atom };
	memcpy(me.gid, r.gid.raw, 16);
	send_hello(fd, &me);
	recv_hello(fd, &peer);
	if (peer.len < opt.chunk)
		die("server buffer is %" PRIu64 " bytes, need %" PRIu64, peer.len, opt.chunk);
	rdma_connect(&r, &peer);
	say("sending %" PRIu64 " MB in %" PRIu64 " chunk(s) of %" PRIu64 " MB, %" PRIu64
	    " KB WRs, %d in flight, every %d signaled", opt.total / MB, nchunks, opt.chunk / MB,
	    opt.wr_size / 1024, opt.depth, opt.sig_every);

	t_all = now();
	for (c = 0; c < nchunks; c++) {
		uint64_t len = opt.total - c * opt.chunk < opt.chunk ?
			       opt.total - c * opt.chunk : opt.chunk, s;
		uint64_t m[3] = { htobe64(c), htobe64(len), htobe64(chunk_seed(c)) };
		double tw, tr;
		char what[64];

		t0 = now();
		fill_pattern(wbuf, len, chunk_seed(c));
		s = FNV_BASIS;
		fnv1a64_words(&s, &sum, wbuf, len);
		t_fill += now() - t0;

		snprintf(what, sizeof(what), "RDMA WRITE of chunk %" PRIu64, c);
		t0 = now();
		rdma_xfer(&r, IBV_WR_RDMA_WRITE, wbuf, mr_w->lkey, peer.addr, peer.rkey, len, what);
		tw = now() - t0;
		t_write += tw;

		snprintf(what, sizeof(what), "RDMA READ of chunk %" PRIu64, c);
		t0 = now();
		rdma_xfer(&r, IBV_WR_RDMA_READ, rbuf, mr_r->lkey, peer.addr, peer.rkey, len, what);
		tr = now() - t0;
		t_read += tr;
		t0 = now();
		if (!same_words(wbuf, rbuf, len))
			report_mismatch(wbuf, rbuf, len, c);
		t_cmp += now() - t0;

		/* Tell the server the chunk is complete; it answers with its checksum. */
		t0 = now();
		memcpy(msg, m, sizeof(m));
		struct ibv_sge sge = { (uintptr_t)msg, sizeof(m), msg_mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = WRID_SEND, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
			.imm_data = htobe32((uint32_t)c),
		}, *bad;
		snprintf(what, sizeof(what), "SEND with immediate after chunk %" PRIu64, c);
		if (ibv_post_send(r.qp, &wr, &bad))
			die("%s: ibv_post_send: %s", what, strerror(errno));
		r.outstanding = 1;
		wait_wc(&r, &wc, 1, what);
		if (wc.wr_id != WRID_SEND || wc.opcode != IBV_WC_SEND)
			die("%s: unexpected completion (opcode %d, wr_id %#" PRIx64 ")", what,
			    wc.opcode, wc.wr_id);
		recv_ack(fd, MAGIC_ACK, &a);
		t_ack += now() - t0;
		bytes += len;
		if (a.chunk != c || a.bytes != bytes)
			die("server acknowledged chunk %u at %" PRIu64 " bytes, expected chunk %"
			    PRIu64 " at %" PRIu64, a.chunk, a.bytes, c, bytes);
		if (a.sum != s)
			die("WRITE of chunk %" PRIu64 ": the server's checksum %016" PRIx64
			    " differs from the client's %016" PRIx64, c, a.sum, s);
		say("chunk %" PRIu64 "/%" PRIu64 ": %" PRIu64 " MB, WRITE %.2f s (%.1f MB/s), "
		    "READ %.2f s (%.1f MB/s), read-back and server checksum %016" PRIx64 " match",
		    c + 1, nchunks, len / MB, tw, len / MB / tw, tr, len / MB / tr, s);
	}
	t_all = now() - t_all;
	send_ack(fd, MAGIC_END, (uint32_t)nchunks, sum, bytes);
	recv_ack(fd, MAGIC_END, &a);
	say("WRITE: %" PRIu64 " MB in %.1f s = %.1f MB/s", bytes / MB, t_write,
	    bytes / MB / t_write);
	say("READ:  %" PRIu64 " MB in %.1f s = %.1f MB/s", bytes / MB, t_read,
	    bytes / MB / t_read);
	say("total %.1f s (pattern+checksum %.1f s, compare %.1f s, notify+server checksum %.1f s); "
	    "%lu completion(s) were found without an event", t_all, t_fill, t_cmp, t_ack,
	    r.missed_events);
	if (a.sum != sum || a.bytes != bytes)
		die("WRITE stream checksum MISMATCH: client %016" PRIx64 " over %" PRIu64
		    " bytes, server %016" PRIx64 " over %" PRIu64 " bytes", sum, bytes, a.sum,
		    a.bytes);
	say("PASS: %" PRIu64 " MB written and read back intact; stream checksum %016" PRIx64
	    " matches the server's", bytes / MB, sum);
	return 0;
}

static uint64_t num(const char *s, const char *name)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || end == s)
		die("bad %s '%s'", name, s);
	return v;
}

int main(int argc, char **argv)
{
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "d:g:p:m:c:w:q:s:t:S:T:r:h")) != -1) {
		switch (c) {
		case 'd': opt.dev = optarg; break;
		case 'g': opt.gid_index = num(optarg, "GID index"); break;
		case 'p': opt.port = num(optarg, "port"); break;
		case 'm': opt.total = num(optarg, "size") * MB; break;
		case 'c': opt.chunk = num(optarg, "chunk size") * MB; break;
		case 'w': opt.wr_size = num(optarg, "WR size") * 1024; break;
		case 'q': opt.depth = num(optarg, "depth"); break;
		case 's': opt.sig_every = num(optarg, "signal interval"); break;
		case 't': opt.timeout = num(optarg, "timeout"); break;
		case 'S': opt.seed = num(optarg, "seed"); break;
		case 'T': opt.ack_timeout = num(optarg, "local ACK timeout"); break;
		case 'r': opt.retry_cnt = num(optarg, "retry count"); break;
		default:
			fprintf(stderr, "usage: %s [-d DEV] [-g GID_INDEX] [-p PORT] [-m MB] [-c MB] "
				"[-w KB] [-q DEPTH] [-s SIGNAL_EVERY] [-t SEC] [-S SEED] [-T ACK_TIMEOUT] "
				"[-r RETRY_CNT] [SERVER]\n",
				argv[0]);
			return 2;
		}
	}
	if (optind < argc)
		opt.server = argv[optind];
	if (!opt.total || !opt.chunk || !opt.wr_size || opt.wr_size > (1ull << 31) ||
	    opt.depth < 1 || opt.depth > 1024 || opt.sig_every < 1 || opt.timeout < 1 ||
	    opt.ack_timeout < 1 || opt.ack_timeout > 31 || opt.retry_cnt < 0 || opt.retry_cnt > 7)
		die("bad options");
	if (opt.chunk > opt.total)
		opt.chunk = opt.total;
	return opt.server ? run_client() : run_server();
}
