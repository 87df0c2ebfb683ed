/*
 * qrdma-verbs-stock: one device core with the verbs backend on a real host
 * RDMA device (verbs_host.h), as an ordinary process, driven as the guest
 * driver drives it, acting as the client of a stock rdma-core pingpong
 * server on the same device, or (no SERVER given) as the server of a stock
 * client (rdma_rxe in a guest: tests/vm/test-verbs-rxe.sh runs
 * ibv_rc_pingpong, ibv_ud_pingpong and ibv_srq_pingpong both ways round).
 *
 * The stock tools' out-of-band exchange (TCP, port 18515 by default): the
 * client writes one fixed-size string per QP, "LID:QPN:PSN:GID" as
 * %04x:%06x:%06x: and the GID's 16 bytes in 32 hex digits, with its NUL
 * (52 bytes); the server answers with as many of its own (having moved its
 * QPs to RTR first, so that the client's first SEND finds them ready); the
 * client writes "done" and its NUL. ibv_srq_pingpong always sends 256
 * strings, those past its QPs all zero. Our strings name the core's host
 * QPNs (the wire identifiers in verbs mode) and the host GID.
 *
 * Then the ping-pong, as the stock client runs it: a SEND on each QP,
 * another on a QP only when its last SEND completed and its answer came,
 * until ITERS messages went each way (ITERS in all over the QPs of srq).
 * The stock server answers each message with its one buffer, into which
 * it receives: it echoes what we sent, over the rest of its buffer as it
 * was (0x7b bytes for rc and ud, zeros for srq, when nothing longer came
 * yet). So our first message is shorter than SIZE and the later ones of
 * rc and ud differ from each other; every byte of every answer is
 * compared with that model in our memfd guest RAM, the bytes after it
 * must be untouched, and a UD answer must have its GRH (IPv4) and the
 * server's QPN. With -c, as the stock client does, the first byte of each
 * page of our messages is 0 (the stock server with -c prints "invalid
 * data" if the last one's are not; it exits 0 all the same, so the guest
 * script reads its output).
 *
 * As the server we answer each message once it came and our last SEND on
 * its QP completed, as the stock server does. The stock client sends the
 * buffer it receives into, so the same model holds the other way round:
 * its first message is its buffer as it filled it (0x7b for rc and ud,
 * zeros for srq; with -c the first byte of each page 0), each later one
 * our last message over the rest. With srq the client sends its first
 * message on every QP at once and rxe reads them when it sends them, which
 * may be after our first answer landed in that buffer: each byte of the
 * first message on each QP may be either the buffer as it began or as it
 * is. They need not be the first NUM_QP to arrive: a QP's second message
 * can overtake another QP's first.
 *
 * Usage: qrdma-verbs-stock [-p PORT] [-s SIZE] [-n ITERS] [-q NUM_QP]
 *                          [-m MTU] [-c] IBDEV GID_INDEX rc|ud|srq [SERVER]
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/qrdma_core_int.h"
#include "unit.h"
#include "verbs_host.h"

int unit_failures;

enum mode { MODE_RC, MODE_UD, MODE_SRQ };

/* ibv_srq_pingpong's MAX_QP: the strings it always exchanges. */
#define STOCK_SRQ_STRINGS   256
#define STOCK_MSG_LEN       52          /* "0000:000000:000000:" + 32 hex digits + NUL */
#define STOCK_UD_QKEY       0x11111111u
#define UD_GRH              40

#define MAX_QPS     8                   /* our QP IDs FIRST_QP.. (the bed's rings) */
#define FIRST_QP    2
#define CQ_ID       1                   /* sends and receives, as the stock tools do */
#define SRQ_ID      1
#define SRQ_LOG2    5                   /* 32 WQEs of 32 bytes */
#define SRQ_DEPTH   16                  /* receives kept posted on the SRQ */
#define RQ_DEPTH    4                   /* ... on an RQ (8 slots) */
#define AH_ID       1
#define SEND_OFF    0                   /* our messages, one buffer per QP, in the MR's data */
#define RECV_OFF    0x10000             /* receive buffers: one per ring slot */
#define POISON      0xe5
#define SLACK       64                  /* bytes after each receive that stay POISON */

static enum mode mode;
static const char *server;
static unsigned port = 18515, size = 4096, iters = 100, nqp = 1, mtu = 1024;
static bool validate;
static long page_size;

struct dest {
    uint32_t lid, qpn, psn;
    uint8_t gid[16];
};

static struct dest mine[MAX_QPS], theirs[MAX_QPS];
static uint32_t host_qpn[MAX_QPS];

/* The stock peer's buffer as we expect it: what it sends next; and as it began. */
static uint8_t *model, *model_start;
static unsigned send_stride, recv_stride;
static uint32_t srq_posted, srq_out;
static bool srq_busy[1u << SRQ_LOG2];

/* ---- the exchange ------------------------------------------------------------------- */

static void dest_string(const struct dest *d, char out[STOCK_MSG_LEN])
{
    char *p = out;
    int i;

    memset(out, 0, STOCK_MSG_LEN);
    p += sprintf(p, "%04x:%06x:%06x:", d->lid, d->qpn, d->psn);
    for (i = 0; i < 16; i++) {
        p += sprintf(p, "%02x", d->gid[i]);
    }
}

static bool dest_parse(const char *msg, struct dest *d)
{
    char hex[33];
    unsigned i, v;

    if (sscanf(msg, "%x:%x:%x:%32s", &d->lid, &d->qpn, &d->psn, hex) != 4 ||
        strlen(hex) != 32) {
        return false;
    }
    for (i = 0; i < 16; i++) {
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
            return false;
        }
        d->gid[i] = (uint8_t)v;
    }
    return true;
}

static bool io_all(int fd, void *buf, size_t len, bool wr)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = wr ? write(fd, (char *)buf + done, len - done)
                       : read(fd, (char *)buf + done, len - done);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        done += n;
    }
    return true;
}

/* Connect to the server (it may not listen yet: 30 s of tries). */
static int connect_server(void)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    char service[16];
    int tries;

    snprintf(service, sizeof(service), "%u", port);
    for (tries = 0; tries < 300; tries++) {
        struct addrinfo *res, *t;
        int fd = -1;

        if (!getaddrinfo(server, service, &hints, &res)) {
            for (t = res; t && fd < 0; t = t->ai_next) {
                fd = socket(t->ai_family, t->ai_socktype, t->ai_protocol);
                if (fd >= 0 && connect(fd, t->ai_addr, t->ai_addrlen)) {
                    close(fd);
                    fd = -1;
                }
            }
            freeaddrinfo(res);
        }
        if (fd >= 0) {
            return fd;
        }
        usleep(100000);
    }
    fprintf(stderr, "  cannot connect to %s:%u\n", server, port);
    return -1;
}

/* Accept the stock client (it is started once we listen: 60 s for it to come). */
static int accept_client(void)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE };
    struct addrinfo *res, *t;
    struct pollfd pfd = { .events = POLLIN };
    char service[16];
    int one = 1, fd = -1, conn;

    snprintf(service, sizeof(service), "%u", port);
    if (getaddrinfo(NULL, service, &hints, &res)) {
        fprintf(stderr, "  getaddrinfo for port %u failed\n", port);
        return -1;
    }
    for (t = res; t && fd < 0; t = t->ai_next) {
        fd = socket(t->ai_family, t->ai_socktype, t->ai_protocol);
        if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
                        bind(fd, t->ai_addr, t->ai_addrlen) || listen(fd, 1))) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "  cannot listen on port %u\n", port);
        return -1;
    }
    pfd.fd = fd;
    conn = poll(&pfd, 1, 60000) == 1 ? accept(fd, NULL, NULL) : -1;
    close(fd);
    if (conn < 0) {
        fprintf(stderr, "  no client came to port %u\n", port);
    }
    return conn;
}

static bool send_strings(int fd, unsigned n)
{
    char msg[STOCK_MSG_LEN];
    struct dest zero = { 0 };
    unsigned i;

    for (i = 0; i < n; i++) {
        dest_string(i < nqp ? &mine[i] : &zero, msg);
        if (!io_all(fd, msg, sizeof(msg), true)) {
            return false;
        }
    }
    return true;
}

/* The peer's strings: as many QPs as we have, then (srq) all zero. */
static bool receive_strings(int fd, unsigned n)
{
    char msg[STOCK_MSG_LEN];
    struct dest d;
    unsigned i;

    for (i = 0; i < n; i++) {
        if (!io_all(fd, msg, sizeof(msg), false) || msg[STOCK_MSG_LEN - 1] != 0 ||
            !dest_parse(msg, &d)) {
            return false;
        }
        if (i < nqp) {
            theirs[i] = d;
            if (!d.qpn) {
                return false;
            }
        } else if (d.qpn || d.psn) {
            return false;
        }
    }
    return true;
}

static void connect_qps(void);

/*
 * As the stock client: our strings, theirs, "done". As the stock server:
 * theirs, our QPs to RTR with receives posted, ours, their "done".
 */
static bool exchange(void)
{
    const unsigned n = mode == MODE_SRQ ? STOCK_SRQ_STRINGS : 1;
    char done[sizeof("done")];
    bool ok;
    int fd = server ? connect_server() : accept_client();

    if (fd < 0) {
        return false;
    }
    if (server) {
        ok = send_strings(fd, n) && receive_strings(fd, n) &&
             io_all(fd, "done", sizeof("done"), true);
    } else {
        ok = receive_strings(fd, n);
        if (ok) {
            connect_qps();
        }
        ok = ok && send_strings(fd, n) && io_all(fd, done, sizeof(done), false) &&
             !memcmp(done, "done", sizeof(done));
    }
    close(fd);
    if (!ok) {
        fprintf(stderr, "  the exchange with the stock %s failed\n", server ? "server" : "client");
    }
    return ok;
}

/* ---- our messages ------------------------------------------------------------------- */

/* Message k's length: the first one shorter, to see the server's buffer beyond it. */
static unsigned msg_len(unsigned k)
{
    unsigned tail = size / 2 < 64 ? size / 2 : 64;

    return k == 0 || mode == MODE_SRQ ? size - tail : size;
}

/* Message k's bytes (srq: all the same, the server's QPs share its buffer). */
static void msg_fill(uint8_t *p, unsigned k)
{
    unsigned i, len = msg_len(k), kk = mode == MODE_SRQ ? 0 : k;

    for (i = 0; i < len; i++) {
        p[i] = (uint8_t)(i * 7 + kk * 31 + 0x11);
    }
    if (validate) {
        /* the stock client's -c: buf[i] = i / page_size % sizeof(char), that is 0 */
        for (i = 0; i < len; i += page_size) {
            p[i] = 0;
        }
    }
}

static unsigned sent;

/*
 * The next message on QP q, from q's own buffer: another QP's SEND may be
 * reading its own while this one is written.
 */
static void send_next(uint32_t q)
{
    const uint64_t off = SEND_OFF + (uint64_t)(q - FIRST_QP) * send_stride;
    uint8_t *buf = dbuf(SA, off);
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { off, 0, 0 } } };

    msg_fill(buf, sent);
    w.sge[0].len = msg_len(sent);
    /* the server receives it into its buffer, and answers with that buffer */
    memcpy(model, buf, msg_len(sent));
    if (mode == MODE_UD) {
        w.ah = AH_ID;
        w.dest_qpn = theirs[0].qpn;
        w.qkey = STOCK_UD_QKEY;
    }
    post_send(SA, q, &w);
    ring_sq(SA, q);
    sent++;
}

/* ---- our receives ------------------------------------------------------------------- */

static unsigned recv_len(void)
{
    return mode == MODE_UD ? UD_GRH + size : size;
}

static uint64_t recv_buf(unsigned slot)
{
    return RECV_OFF + (uint64_t)slot * recv_stride;
}

static void post_rq(uint32_t q)
{
    unsigned slot = SA->qp[q].rq_posted & ((1u << SA->qp[q].rq_log2) - 1);

    memset(dbuf(SA, recv_buf(slot)), POISON, recv_len() + SLACK);
    post_recv(SA, q, recv_buf(slot), recv_len());
    ring_rq(SA, q);
}

/* Post SRQ WQEs, in ring order, while the next slot is free and fewer than SRQ_DEPTH are out. */
static void post_srq(void)
{
    bool any = false;

    while (srq_out < SRQ_DEPTH) {
        const unsigned slot = srq_posted & ((1u << SRQ_LOG2) - 1);
        const struct sge sge = { recv_buf(slot), recv_len(), 0 };

        if (srq_busy[slot]) {
            break;
        }
        memset(dbuf(SA, recv_buf(slot)), POISON, recv_len() + SLACK);
        write_rq_wqe(SA, SRQ_RING + ((uint64_t)slot << 5), !((srq_posted >> SRQ_LOG2) & 1), 1,
                     &sge, 0);
        srq_busy[slot] = true;
        srq_posted++;
        srq_out++;
        any = true;
    }
    if (any) {
        w64(SA, SRQ_SHADOW, srq_posted);
    }
}

/*
 * Check message k from the peer, the first on its QP q or not, against the
 * model, byte for byte; false on the first difference.
 */
static bool check_answer(const struct cqe *e, unsigned k, uint32_t q, bool first_on_qp)
{
    const unsigned slot = e->wqe_index;
    const uint8_t *p = dbuf(SA, recv_buf(slot));
    const uint8_t *payload = p + (mode == MODE_UD ? UD_GRH : 0);
    /* srq as the server: the client's first message on a QP, read by rxe while ours land */
    const bool either = mode == MODE_SRQ && !server && first_on_qp;
    unsigned i;

    if (e->byte_len != recv_len()) {
        fprintf(stderr, "  message %u on QP %u: %u bytes, expected %u\n", k, q, e->byte_len,
                recv_len());
        return false;
    }
    if (mode == MODE_UD &&
        (!(e->flags & QRDMA_CQE_FLAG_GRH) || e->src_qp != theirs[0].qpn || p[20] != 0x45)) {
        fprintf(stderr, "  message %u: flags 0x%x, source QPN 0x%x (expected 0x%x), GRH byte "
                "20 0x%02x (expected the IPv4 header's 0x45)\n", k, e->flags, e->src_qp,
                theirs[0].qpn, p[20]);
        return false;
    }
    for (i = 0; i < size; i++) {
        if (payload[i] != model[i] && !(either && payload[i] == model_start[i])) {
            fprintf(stderr, "  message %u on QP %u: byte %u is 0x%02x, expected 0x%02x\n", k, q,
                    i, payload[i], model[i]);
            return false;
        }
    }
    for (i = recv_len(); i < recv_len() + SLACK; i++) {
        if (p[i] != POISON) {
            fprintf(stderr, "  message %u on QP %u: byte %u past the receive written\n", k, q,
                    i);
            return false;
        }
    }
    return true;
}

/* ---- the run ------------------------------------------------------------------------ */

static void setup_qps(void)
{
    struct qp_spec spec = mode == MODE_UD ? ud_spec : rc_spec;
    unsigned i;

    spec.send_cq = spec.recv_cq = CQ_ID;
    if (mode == MODE_SRQ) {
        CQP_OK(cqp(SA, QRDMA_CQP_OP_CREATE_SRQ,
                   SRQ_ID | (uint64_t)SRQ_LOG2 << QRDMA_SRQ_ARG0_SIZE_SHIFT |
                   5ull << QRDMA_SRQ_ARG0_WQE_SHIFT, PD, SRQ_RING, SRQ_SHADOW, 0x5e0, 0));
        spec.flags = QRDMA_QP_CREATE_SRQ;
        spec.srq = SRQ_ID;
    }
    for (i = 0; i < nqp; i++) {
        create_qp(SA, FIRST_QP + i, &spec);
        host_qpn[i] = (uint32_t)last_retval;
        mine[i] = (struct dest){ .lid = 0, .qpn = host_qpn[i], .psn = lrand48() & 0xffffff };
        memcpy(mine[i].gid, vh_host_gid, 16);
        printf("QP ID %u: host QPN 0x%06x, PSN 0x%06x\n", FIRST_QP + i, host_qpn[i],
               mine[i].psn);
    }
    if (mode == MODE_UD) {
        ud_to_rts_qkey(SA, FIRST_QP, STOCK_UD_QKEY, mine[0].psn);
    }
}

static void connect_qps(void)
{
    unsigned i, mtu_enum = 0;

    while ((128u << mtu_enum) < mtu) {
        mtu_enum++;
    }
    for (i = 0; i < nqp; i++) {
        printf("%s QP %u: QPN 0x%06x, PSN 0x%06x\n", server ? "server" : "client", i,
               theirs[i].qpn, theirs[i].psn);
        if (mode == MODE_UD) {
            write_av_to(SA, AV_BUF, theirs[0].gid, NULL);
            CQP_OK(cqp(SA, QRDMA_CQP_OP_CREATE_AH,
                       AH_ID | (uint64_t)PD << QRDMA_AH_ARG0_PD_SHIFT, AV_BUF, 0, 0, 0, 0));
        } else {
            rc_connect(SA, FIRST_QP + i, theirs[i].gid, NULL, theirs[i].qpn, theirs[i].psn,
                       mine[i].psn, 7, mtu_enum);
        }
    }
    if (mode == MODE_SRQ) {
        post_srq();
    } else {
        for (i = 0; i < RQ_DEPTH; i++) {
            post_rq(FIRST_QP);
        }
    }
}

enum { PEND_SEND = 1, PEND_RECV = 2 };

static void test_pingpong(void)
{
    unsigned pending[MAX_QPS] = { 0 }, heard[MAX_QPS] = { 0 }, scnt = 0, rcnt = 0, i;
    struct timespec t0, t1;
    struct cqe e;
    double s;

    setup_qps();
    if (!exchange()) {
        unit_failures++;
        return;
    }
    if (server) {
        connect_qps();
    }
    no_errors(SA);

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < nqp; i++) {
        if (server && sent < iters) {
            /* the client sends first on each QP */
            send_next(FIRST_QP + i);
            pending[i] = PEND_SEND | PEND_RECV;
        } else if (!server) {
            /* the server answers */
            pending[i] = PEND_RECV;
        }
    }
    while (rcnt < iters || scnt < iters) {
        uint32_t q;

        if (!vh_wait_cqe(SA, CQ_ID, &e, 1, 20)) {
            fprintf(stderr, "  stuck after %u sends and %u answers\n", scnt, rcnt);
            unit_failures++;
            break;
        }
        q = e.qp - FIRST_QP;
        if (e.status != QRDMA_BE_WC_SUCCESS || q >= nqp) {
            fprintf(stderr, "  CQE on QP %u: status %u, opcode %u\n", e.qp, e.status,
                    e.opcode);
            unit_failures++;
            break;
        }
        if (e.flags & QRDMA_CQE_FLAG_SQ) {
            CHECK_EQ(e.opcode, QRDMA_BE_WC_SEND);
            scnt++;
            pending[q] &= ~PEND_SEND;
        } else {
            CHECK_EQ(e.opcode, QRDMA_BE_WC_RECV);
            if (!check_answer(&e, rcnt, e.qp, !heard[q])) {
                unit_failures++;
                break;
            }
            heard[q]++;
            rcnt++;
            pending[q] &= ~PEND_RECV;
            if (mode == MODE_SRQ) {
                CHECK(e.flags & QRDMA_CQE_FLAG_SRQ);
                srq_busy[e.wqe_index & ((1u << SRQ_LOG2) - 1)] = false;
                srq_out--;
                post_srq();
            } else {
                post_rq(e.qp);
            }
        }
        /*
         * Never more than ITERS messages. The stock server answers each
         * and stops; the stock client stops once ITERS of its own SENDs
         * completed and ITERS answers came, and can send a few more over
         * srq's QPs, which our receives take.
         */
        if (!pending[q] && sent < iters) {
            send_next(e.qp);
            pending[q] = PEND_SEND | PEND_RECV;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%s as the %s: %u messages of %u bytes sent and %u received over %u QP(s) in "
           "%.2f s, every byte of every message from the stock %s checked\n",
           mode == MODE_RC ? "rc" : mode == MODE_UD ? "ud" : "srq",
           server ? "client" : "server", scnt, size, rcnt, nqp, s, server ? "server" : "client");
    if (server || mode != MODE_SRQ) {
        CHECK_EQ(rcnt, iters);
    } else {
        /* the stock srq client's extra SENDs (see above): one per other QP at most */
        CHECK(rcnt >= iters && rcnt < iters + nqp);
    }
    CHECK_EQ(scnt, iters);
    no_errors(SA);
    for (i = 0; i < nqp; i++) {
        CQP_OK(cqp(SA, QRDMA_CQP_OP_DESTROY_QP, FIRST_QP + i, 0, 0, 0, 0, 0));
    }
    if (mode == MODE_SRQ) {
        CQP_OK(cqp(SA, QRDMA_CQP_OP_DESTROY_SRQ, SRQ_ID, 0, 0, 0, 0, 0));
    }
}

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [-p PORT] [-s SIZE] [-n ITERS] [-q NUM_QP] [-m MTU] [-c] "
            "IBDEV GID_INDEX rc|ud|srq [SERVER]\n", argv0);
}

int main(int argc, char **argv)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_pingpong),
    };
    unsigned max_size;
    int c, ret;

    while ((c = getopt(argc, argv, "p:s:n:q:m:c")) != -1) {
        switch (c) {
        case 'p':
            port = strtoul(optarg, NULL, 0);
            break;
        case 's':
            size = strtoul(optarg, NULL, 0);
            break;
        case 'n':
            iters = strtoul(optarg, NULL, 0);
            break;
        case 'q':
            nqp = strtoul(optarg, NULL, 0);
            break;
        case 'm':
            mtu = strtoul(optarg, NULL, 0);
            break;
        case 'c':
            validate = true;
            break;
        default:
            usage(argv[0]);
            return 2;
        }
    }
    if (argc - optind != 3 && argc - optind != 4) {
        usage(argv[0]);
        return 2;
    }
    mode = !strcmp(argv[optind + 2], "rc") ? MODE_RC : !strcmp(argv[optind + 2], "ud") ?
           MODE_UD : !strcmp(argv[optind + 2], "srq") ? MODE_SRQ : (enum mode)-1;
    server = argv[optind + 3];         /* NULL: we are the server */
    if (mode != MODE_SRQ) {
        nqp = 1;
    }
    if ((int)mode < 0 || !nqp || nqp > MAX_QPS) {
        usage(argv[0]);
        return 2;
    }
    send_stride = (size + 63) & ~63u;
    recv_stride = (recv_len() + SLACK + 63) & ~63u;
    max_size = (DATA_LEN - RECV_OFF) / (mode == MODE_SRQ ? 1u << SRQ_LOG2 : 8) - UD_GRH - 128;
    if (max_size > RECV_OFF / nqp) {
        max_size = (RECV_OFF / nqp) & ~63u;
    }
    if (!size || size > max_size || !iters || nqp > iters || mtu < 256 || mtu > 4096 ||
        (mtu & (mtu - 1))) {
        usage(argv[0]);
        fprintf(stderr, "  (SIZE 1..%u, NUM_QP 1..%u and at most ITERS, MTU 256..4096)\n",
                max_size, MAX_QPS);
        return 2;
    }
    page_size = sysconf(_SC_PAGESIZE);
    srand48(getpid() * time(NULL));
    if (vh_host(argv[optind], argv[optind + 1])) {
        return 1;
    }
    model = malloc(size);
    model_start = malloc(size);
    /* the stock peer's buffer before anything came: ud and rc fill it with 0x7b, srq zeroes it */
    memset(model_start, mode == MODE_SRQ ? 0 : 0x7b, size);
    if (validate && !server) {
        /* the stock client's -c, before its first SEND: buf[i] = i / page_size % sizeof(char) */
        for (c = 0; c < (int)size; c += page_size) {
            model_start[c] = 0;
        }
    }
    memcpy(model, model_start, size);
    vh_memfd_ram(SA, 0);
    vh_side_up(SA, 0);
    create_cq_ex(SA, CQ_ID, 8, false);
    ret = unit_run("verbs-stock", tests, sizeof(tests) / sizeof(tests[0]));
    vh_fini(1);
    free(model_start);
    free(model);
    return ret;
}
