/*
 * The host-verbs backend: the contract of qrdma_backend.h over a host RDMA
 * device through libibverbs (the calls in vb_verbs.h), with no copy of
 * payload. docs/backends.md, "The verbs backend", is the prose.
 *
 * What it owns:
 * - one host device context, one completion channel, one epoll fd that
 *   watches the channel and the async-event fd (wait_fd);
 * - a host PD per guest PD number, made when first needed;
 * - per guest QP: a host QP and two host CQs of its own (send, receive),
 *   sized to its queues, so a host CQ never overflows and a destroyed QP
 *   leaves no completions behind in a CQ another QP uses;
 * - per guest MR (by STag index): a host MR registered with the guest's
 *   IOVA on the host-virtual address of its guest pages, or of an alias
 *   that maps scattered pages contiguously from the RAM's fd; per guest
 *   PD, host MRs over each RAM range with iova = guest-physical address
 *   for the guest's DMA MR;
 * - per guest SRQ: a host SRQ of the ring's depth, filled from the
 *   guest's ring whenever it has room (the guest rings no doorbell for an
 *   SRQ, so poll looks again every VB_SRQ_POLL_NS while one has room);
 *   the host SRQ's limit is the guest's;
 * - per guest fast-register MR (ALLOC_STAG): a host type 2 memory window;
 *   FAST_REG binds it (IBV_WR_BIND_MW, in SQ order) with the guest's key
 *   byte to the PD's whole-RAM host MR when the pages are guest-physically
 *   contiguous at iova = guest-physical address, else to a host MR of
 *   those pages of its own (struct vb_fr_reg), released once the window
 *   is known to be off it; LOCAL_INV and a peer's SEND_WITH_INV
 *   invalidate it;
 * - a small cache of host AHs for UD sends.
 *
 * Identifiers: the host QPN and the host rkey are the wire identifiers
 * (qp_create's *qpn, mr_register's *rkey). Work requests name the guest's
 * memory by STag, which becomes the host MR's lkey here; addresses stay
 * the guest's IOVA (the host MR was registered with it).
 *
 * Threading: none of its own. Every op runs in the core's context; host
 * completions and async events are read in poll, without blocking (the
 * channel and async fds are non-blocking), and the embedding learns that
 * there is something to read from wait_fd becoming readable. Callbacks
 * are therefore made only from inside the ops, as the contract wants.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "qrdma_backend_verbs.h"
#include "qrdma_inet_csum.h"
#include "vb_cm.h"
#include "vb_verbs.h"

/*
 * The contract numbers things as libibverbs does: checked, so values pass
 * unchanged.
 */
#define SAME(a, b) _Static_assert((long)(a) == (long)(b), #a " is not " #b)
SAME(QRDMA_BE_WC_SUCCESS, IBV_WC_SUCCESS);
SAME(QRDMA_BE_WC_LOC_PROT_ERR, IBV_WC_LOC_PROT_ERR);
SAME(QRDMA_BE_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR);
SAME(QRDMA_BE_WC_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR);
SAME(QRDMA_BE_WC_RETRY_EXC_ERR, IBV_WC_RETRY_EXC_ERR);
SAME(QRDMA_BE_WC_RNR_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR);
SAME(QRDMA_BE_WC_GENERAL_ERR, IBV_WC_GENERAL_ERR);
SAME(QRDMA_BE_WC_SEND, IBV_WC_SEND);
SAME(QRDMA_BE_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE);
SAME(QRDMA_BE_WC_RDMA_READ, IBV_WC_RDMA_READ);
SAME(QRDMA_BE_WC_COMP_SWAP, IBV_WC_COMP_SWAP);
SAME(QRDMA_BE_WC_FETCH_ADD, IBV_WC_FETCH_ADD);
SAME(QRDMA_BE_WC_LOCAL_INV, IBV_WC_LOCAL_INV);
SAME(QRDMA_BE_WC_RECV, IBV_WC_RECV);
SAME(QRDMA_BE_WC_RECV_RDMA_WITH_IMM, IBV_WC_RECV_RDMA_WITH_IMM);
SAME(QRDMA_BE_WC_GRH, IBV_WC_GRH);
SAME(QRDMA_BE_WC_WITH_IMM, IBV_WC_WITH_IMM);
SAME(QRDMA_BE_WC_WITH_INV, IBV_WC_WITH_INV);
SAME(QRDMA_BE_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE);
SAME(QRDMA_BE_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM);
SAME(QRDMA_BE_WR_SEND, IBV_WR_SEND);
SAME(QRDMA_BE_WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM);
SAME(QRDMA_BE_WR_RDMA_READ, IBV_WR_RDMA_READ);
SAME(QRDMA_BE_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP);
SAME(QRDMA_BE_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD);
SAME(QRDMA_BE_WR_SEND_WITH_INV, IBV_WR_SEND_WITH_INV);
SAME(QRDMA_BE_WR_LOCAL_INV, IBV_WR_LOCAL_INV);
SAME(QRDMA_BE_SEND_FENCE, IBV_SEND_FENCE);
SAME(QRDMA_BE_SEND_SIGNALED, IBV_SEND_SIGNALED);
SAME(QRDMA_BE_SEND_SOLICITED, IBV_SEND_SOLICITED);
SAME(QRDMA_BE_SEND_INLINE, IBV_SEND_INLINE);
SAME(QRDMA_BE_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE);
SAME(QRDMA_BE_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE);
SAME(QRDMA_BE_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_READ);
SAME(QRDMA_BE_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC);
SAME(QRDMA_BE_QPT_RC, IBV_QPT_RC);
SAME(QRDMA_BE_QPT_UC, IBV_QPT_UC);
SAME(QRDMA_BE_QPT_UD, IBV_QPT_UD);
SAME(QRDMA_BE_QPS_RESET, IBV_QPS_RESET);
SAME(QRDMA_BE_QPS_INIT, IBV_QPS_INIT);
SAME(QRDMA_BE_QPS_RTS, IBV_QPS_RTS);
SAME(QRDMA_BE_QPS_SQD, IBV_QPS_SQD);
SAME(QRDMA_BE_QPS_ERR, IBV_QPS_ERR);
SAME(QRDMA_BE_MTU_256, IBV_MTU_256);
SAME(QRDMA_BE_MTU_4096, IBV_MTU_4096);
SAME(QRDMA_BE_QP_ATTR_STATE, IBV_QP_STATE);
SAME(QRDMA_BE_QP_ATTR_ACCESS_FLAGS, IBV_QP_ACCESS_FLAGS);
SAME(QRDMA_BE_QP_ATTR_QKEY, IBV_QP_QKEY);
SAME(QRDMA_BE_QP_ATTR_AV, IBV_QP_AV);
SAME(QRDMA_BE_QP_ATTR_PATH_MTU, IBV_QP_PATH_MTU);
SAME(QRDMA_BE_QP_ATTR_TIMEOUT, IBV_QP_TIMEOUT);
SAME(QRDMA_BE_QP_ATTR_RETRY_CNT, IBV_QP_RETRY_CNT);
SAME(QRDMA_BE_QP_ATTR_RNR_RETRY, IBV_QP_RNR_RETRY);
SAME(QRDMA_BE_QP_ATTR_RQ_PSN, IBV_QP_RQ_PSN);
SAME(QRDMA_BE_QP_ATTR_MAX_QP_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC);
SAME(QRDMA_BE_QP_ATTR_MIN_RNR_TIMER, IBV_QP_MIN_RNR_TIMER);
SAME(QRDMA_BE_QP_ATTR_SQ_PSN, IBV_QP_SQ_PSN);
SAME(QRDMA_BE_QP_ATTR_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC);
SAME(QRDMA_BE_QP_ATTR_DEST_QPN, IBV_QP_DEST_QPN);
SAME(QRDMA_BE_EV_CQ_ERR, IBV_EVENT_CQ_ERR);
SAME(QRDMA_BE_EV_QP_FATAL, IBV_EVENT_QP_FATAL);
SAME(QRDMA_BE_EV_QP_REQ_ERR, IBV_EVENT_QP_REQ_ERR);
SAME(QRDMA_BE_EV_QP_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
SAME(QRDMA_BE_EV_COMM_EST, IBV_EVENT_COMM_EST);
SAME(QRDMA_BE_EV_SQ_DRAINED, IBV_EVENT_SQ_DRAINED);
SAME(QRDMA_BE_EV_QP_LAST_WQE_REACHED, IBV_EVENT_QP_LAST_WQE_REACHED);
SAME(QRDMA_BE_EV_SRQ_LIMIT, IBV_EVENT_SRQ_LIMIT_REACHED);

#define VB_MAX_PD       (1u << 16)      /* guest PD numbers the backend takes */
#define VB_MAX_ID       (1u << 24)      /* QP IDs and MR indexes */
#define VB_POLL_BATCH   16
/* the fds behind wait_fd, as their epoll data says (fds_ready) */
#define VB_READY_CHANNEL 1u     /* the completion channel */
#define VB_READY_ASYNC   2u     /* the device's async events */
#define VB_READY_CM      4u     /* the CM proxy's rdma_cm channel */
#define VB_AH_CACHE     64
/* a DMA-MR SGE may split at a RAM range's end */
#define VB_MAX_HOST_SGE (2 * QRDMA_BE_MAX_SGE)
/*
 * How often poll looks for SRQ WQEs the guest posted while a host SRQ has
 * room: the guest rings no SRQ doorbell, so this bounds how long a peer
 * may see RNR NAKs for WQEs the guest has posted (1 ms, well under the
 * smallest RNR timer a consumer picks in practice).
 */
#define VB_SRQ_POLL_NS  1000000ull
/*
 * Host MRs one fast-register MR may hold for binds whose window may still
 * be on them (struct vb_fr_reg): a FAST_REG past this many completes in
 * error. A consumer that invalidates and re-registers as verbs wants
 * holds one or two; the bound keeps a guest that never lets a bind
 * complete from pinning host MRs without end.
 */
#define VB_FR_MAX_REGS  8

struct vb_pd {
    struct ibv_pd *pd;
    /*
     * iova = gpa, made for a DMA MR or a window to bind to (MW_BIND); never
     * remote
     */
    struct ibv_mr *dma[QRDMA_BE_VERBS_MAX_RAM];
};

/*
 * What a FAST_REG or LOCAL_INV WR means for its fast-register MR's host
 * MRs once it has run (fr_retire): a bind at number seq puts the window
 * on that bind's host MR (or a whole-RAM one), off every earlier one; an
 * invalidation takes it off every bind numbered below seq. The MR is
 * named by STag index and generation: the slot may be reused meanwhile.
 */
enum vb_fr_kind { VB_FR_NONE, VB_FR_BIND, VB_FR_INV };

struct vb_fr_note {
    uint8_t kind;               /* enum vb_fr_kind */
    uint32_t index, gen;
    uint64_t seq;
};

/* One send WR the host holds: what its completion needs. */
struct vb_sq_entry {
    uint64_t wr_id;
    /* for an error completion, whose opcode verbs leaves undefined */
    uint32_t wc_opcode;
    struct vb_fr_note fr;
};

/* A guest SRQ on a host SRQ. */
struct qrdma_be_srq {
    uint32_t srq_id, pd;
    /* the guest ring's depth, the host SRQ's max_wr */
    uint32_t size;
    uint32_t posted;            /* WQEs the host SRQ holds */
    uint32_t max_sge;           /* the host SRQ's SGEs per WR */
    struct ibv_srq *srq;
};

/* A CM MAD for the GSI QP's next receive, with its GRH's addresses. */
struct vb_gsi_mad {
    uint8_t peer[16], local[16];
    uint8_t mad[VB_MAD_BYTES];
};

/*
 * MADs the GSI QP holds for receives the guest has not posted yet; more
 * are dropped (the CM retries, as over a lossy wire).
 */
#define VB_GSI_RX_QUEUE 64

/*
 * The GSI QP: the device's own, with no host QP (docs/backends.md,
 * "rdma_cm in verbs mode"). Sends go to the CM proxy; what the proxy
 * gives the guest waits in rx until a receive WQE takes it.
 */
struct vb_gsi {
    struct vb_gsi_mad rx[VB_GSI_RX_QUEUE];
    unsigned rx_head, rx_n;
    uint64_t rx_dropped;
    /* send completions owed, in SQ order: wr_id and status */
    struct {
        uint64_t wr_id;
        uint32_t status;
    } *tx;
    unsigned tx_head, tx_n;
};

struct qrdma_be_qp {
    struct qrdma_be *be;
    uint32_t qp_id, type, pd;
    uint32_t send_cq_id, recv_cq_id;
    /* enum qrdma_be_qp_state as the backend knows it */
    uint32_t state;
    uint32_t qkey;
    struct ibv_qp *qp;
    struct ibv_cq *scq, *rcq;
    /* Send WRs the host holds, oldest first: a ring of max_send_wr. */
    struct vb_sq_entry *sq;
    uint32_t sq_size, sq_head, sq_tail;
    bool sq_refused;            /* post_send said -ENOSPC: sq_space owed */
    uint32_t rq_size, rq_posted;
    struct qrdma_be_srq *srq;   /* receives come from this SRQ (rq_size 0) */
    uint32_t max_send_sge, max_recv_sge;
    bool due;                   /* a completion event came: poll its CQs */
    struct vb_gsi *gsi;         /* the GSI QP (no host QP); else NULL */
};

/*
 * A host MR made for one FAST_REG whose pages the PD's whole-RAM MRs
 * cannot cover as one run at iova = guest-physical (scattered pages, or
 * another iova): the window binds to it. It is released once the window
 * is known to be off it (a later bind or an invalidation has run), or
 * with the window.
 */
struct vb_fr_reg {
    struct vb_fr_reg *next;
    uint64_t seq;               /* the bind's number (vb_mr.next_seq) */
    struct ibv_mr *mr;
    void *alias;                /* the alias mapping, or NULL */
    size_t alias_len;
};

struct vb_mr {
    bool live;
    uint32_t stag, pd, type;
    /* NULL for a DMA MR (vb_pd.dma) and a fast-register MR */
    struct ibv_mr *mr;
    void *alias;                /* the alias mapping, or NULL */
    size_t alias_len;
    struct ibv_mw *mw;          /* a fast-register MR's host window */
    /* its rkey now: the host window's index, the guest's key byte */
    uint32_t wire_rkey;
    /*
     * A fast-register MR's binds are numbered from 1 (next_seq); its
     * per-bind host MRs (newest first, nregs of them) numbered below
     * free_below are off the window. gen tells this ALLOC_STAG of the
     * slot from a later one.
     */
    struct vb_fr_reg *regs;
    unsigned nregs;
    uint64_t next_seq, free_below;
    uint32_t gen;
};

struct vb_ah {
    bool live;
    uint32_t pd;
    struct qrdma_be_av av;
    struct ibv_ah *ah;
};

struct qrdma_be {
    struct qrdma_be_callbacks cbs;
    void *opaque;
    const struct qrdma_vb_verbs *v;
    struct qrdma_be_verbs_config cfg;
    char ibdev[64];
    struct ibv_context *ctx;
    struct ibv_comp_channel *ch;
    int epfd;
    long page;
    struct vb_pd **pds;         /* by guest PD number, VB_MAX_PD */
    struct qrdma_be_qp **qps;   /* by QP ID */
    uint32_t nqps;
    struct vb_mr *mrs;          /* by STag index */
    uint32_t nmrs;
    struct qrdma_be_srq **srqs; /* by SRQ ID */
    uint32_t nsrqs;
    struct vb_ah ahs[VB_AH_CACHE];
    unsigned ah_next;
    /* the host GID indexes the guest may use, and the port as last read */
    unsigned ngids;
    uint8_t gid_indexes[QRDMA_BE_PORT_MAX_GIDS];
    struct qrdma_be_port port;
    uint32_t mr_gen;            /* the last vb_mr.gen handed out */
    /* the CM proxy and its host rdma_cm (cm_host_owned: ours to close) */
    struct vb_cm *cm;
    void *cm_host;
    bool cm_host_owned;
};

/* -errno of a failed host call. */
static int host_err(void)
{
    return errno ? -errno : -EIO;
}

/*
 * -errno of a failed host create or register call, where the ways a host
 * says "no more" all become -ENOMEM: the core completes the CQP command
 * with NO_RESOURCE, the guest's ENOMEM, rather than blame the guest's
 * arguments. Providers differ: ENOMEM (memory, pinning past
 * RLIMIT_MEMLOCK), ENOSPC or ENOBUFS (a table full), EAGAIN (try later),
 * EMFILE/ENFILE (out of fds). rxe says EINVAL at its object limits,
 * which cannot be told from a bad argument and stays EINVAL.
 */
static int host_res_err(void)
{
    switch (errno) {
    case ENOMEM:
    case ENOSPC:
    case ENOBUFS:
    case EAGAIN:
    case EMFILE:
    case ENFILE:
        return -ENOMEM;
    default:
        return host_err();
    }
}

/*
 * A libibverbs call that returns an errno value (ibv_modify_qp,
 * ibv_post_send ...; some providers return -1 with errno instead) as a
 * -errno.
 */
static int rc_err(int rc)
{
    if (rc > 0) {
        return -rc;
    }
    return rc ? host_err() : 0;
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

/* ---- PDs ----------------------------------------------------------------- */

static struct vb_pd *pd_get(struct qrdma_be *be, uint32_t pd)
{
    struct vb_pd *p;

    if (pd >= VB_MAX_PD) {
        errno = EINVAL;
        return NULL;
    }
    if (be->pds[pd]) {
        return be->pds[pd];
    }
    p = calloc(1, sizeof(*p));
    if (!p) {
        errno = ENOMEM;
        return NULL;
    }
    p->pd = be->v->alloc_pd(be->ctx);
    if (!p->pd) {
        free(p);
        return NULL;
    }
    be->pds[pd] = p;
    return p;
}

/* ---- guest memory -------------------------------------------------------- */

static const struct qrdma_be_verbs_ram *ram_of(struct qrdma_be *be,
                                               uint64_t gpa, uint64_t len)
{
    unsigned i;

    for (i = 0; i < be->cfg.nram; i++) {
        const struct qrdma_be_verbs_ram *r = &be->cfg.ram[i];

        if (gpa >= r->gpa && gpa - r->gpa < r->size &&
            len <= r->size - (gpa - r->gpa)) {
            return r;
        }
    }
    return NULL;
}

static void *hva_of(const struct qrdma_be_verbs_ram *r, uint64_t gpa)
{
    return (uint8_t *)r->hva + (gpa - r->gpa);
}

/* The guest-physical pieces of an MR, in order, adjacent ones merged. */
struct vb_pieces {
    uint64_t *gpa, *len;
    unsigned n, cap;
};

static int piece_add(void *arg, uint64_t gpa, uint64_t len)
{
    struct vb_pieces *p = arg;

    if (p->n && p->gpa[p->n - 1] + p->len[p->n - 1] == gpa) {
        p->len[p->n - 1] += len;
        return 0;
    }
    if (p->n == p->cap) {
        unsigned cap = p->cap ? 2 * p->cap : 16;
        uint64_t *g = realloc(p->gpa, cap * sizeof(*g));
        uint64_t *l;

        if (!g) {
            return -ENOMEM;
        }
        p->gpa = g;
        l = realloc(p->len, cap * sizeof(*l));
        if (!l) {
            return -ENOMEM;
        }
        p->len = l;
        p->cap = cap;
    }
    p->gpa[p->n] = gpa;
    p->len[p->n] = len;
    p->n++;
    return 0;
}

/*
 * Where the host NIC can reach an MR's pieces as one virtually contiguous
 * range: *addr, and *alias and *alias_len when an alias had to be built.
 * Pieces already contiguous in this process's mapping need nothing; the
 * others are mapped one after another from the RAM's fd (shared, so the
 * alias and guest RAM are the same pages), which needs every piece but
 * the first to start, and every piece but the last to end, on a host
 * page. -EFAULT: a piece outside guest RAM; -EINVAL: not mappable.
 */
static int mr_place(struct qrdma_be *be, const struct vb_pieces *p, void **addr,
                    void **alias, size_t *alias_len)
{
    const uint64_t pmask = (uint64_t)be->page - 1;
    const struct qrdma_be_verbs_ram *r;
    uint64_t span, off;
    uint8_t *base;
    bool contiguous = true;
    unsigned i;

    *alias = NULL;
    *alias_len = 0;
    if (!p->n) {
        return -EINVAL;
    }
    for (i = 0; i < p->n; i++) {
        r = ram_of(be, p->gpa[i], p->len[i]);
        if (!r) {
            return -EFAULT;
        }
        if (i &&
            hva_of(ram_of(be, p->gpa[i - 1], p->len[i - 1]), p->gpa[i - 1]) +
                    p->len[i - 1] !=
                hva_of(r, p->gpa[i])) {
            contiguous = false;
        }
    }
    r = ram_of(be, p->gpa[0], p->len[0]);
    if (contiguous) {
        *addr = hva_of(r, p->gpa[0]);
        return 0;
    }

    span = p->gpa[0] & pmask;
    for (i = 0; i < p->n; i++) {
        r = ram_of(be, p->gpa[i], p->len[i]);
        if (r->fd < 0 || (i && (p->gpa[i] & pmask)) ||
            (i + 1 < p->n && ((p->gpa[i] + p->len[i]) & pmask)) ||
            ((r->fd_offset + (p->gpa[i] - r->gpa)) & pmask) !=
                (p->gpa[i] & pmask)) {
            return -EINVAL;
        }
        span += p->len[i];
    }
    span = (span + pmask) & ~pmask;
    base = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        return -ENOMEM;
    }
    off = 0;
    for (i = 0; i < p->n; i++) {
        uint64_t first = p->gpa[i] & ~pmask;
        uint64_t len = ((p->gpa[i] + p->len[i] + pmask) & ~pmask) - first;

        r = ram_of(be, p->gpa[i], p->len[i]);
        if (mmap(base + off, len, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_FIXED, r->fd,
                 (off_t)(r->fd_offset + (first - r->gpa))) == MAP_FAILED) {
            munmap(base, span);
            return -ENOMEM;
        }
        off += len;
    }
    *alias = base;
    *alias_len = span;
    *addr = base + (p->gpa[0] & pmask);
    return 0;
}

/*
 * Deregister a per-bind host MR and unmap its alias. false if the host
 * refuses (rxe does while a window is bound to the MR): it stays listed,
 * unless force (the window is gone: nothing can use it any more).
 */
static bool fr_reg_free(struct qrdma_be *be, struct vb_fr_reg *r, bool force)
{
    if (r->mr && be->v->dereg_mr(r->mr) && !force) {
        return false;
    }
    if (r->alias) {
        munmap(r->alias, r->alias_len);
    }
    free(r);
    return true;
}

/*
 * Release m's per-bind host MRs that the window is off: those numbered
 * below free_below, and (all) every one when the window is gone.
 */
static void fr_regs_reap(struct qrdma_be *be, struct vb_mr *m, bool all)
{
    struct vb_fr_reg **pp = &m->regs;

    while (*pp) {
        struct vb_fr_reg *r = *pp, *next = r->next;

        if ((all || r->seq < m->free_below) && fr_reg_free(be, r, all)) {
            *pp = next;
            m->nregs--;
        } else {
            pp = &r->next;
        }
    }
}

/* The window has run past every bind numbered below seq: release their MRs. */
static void fr_off_below(struct qrdma_be *be, struct vb_mr *m, uint64_t seq)
{
    if (seq > m->free_below) {
        m->free_below = seq;
    }
    fr_regs_reap(be, m, false);
}

static void mr_release(struct qrdma_be *be, struct vb_mr *m)
{
    if (m->mw) {
        /* unbinds it: before the RAM MR it may be bound to */
        be->v->dealloc_mw(m->mw);
    }
    fr_regs_reap(be, m, true);
    if (m->mr) {
        be->v->dereg_mr(m->mr);
    }
    if (m->alias) {
        munmap(m->alias, m->alias_len);
    }
    memset(m, 0, sizeof(*m));
}

static struct vb_mr *mr_slot(struct qrdma_be *be, uint32_t stag, bool grow)
{
    uint32_t index = stag >> 8;

    if (index >= VB_MAX_ID) {
        return NULL;
    }
    if (index >= be->nmrs) {
        uint32_t n = be->nmrs ? be->nmrs : 64;
        struct vb_mr *m;

        if (!grow) {
            return NULL;
        }
        while (n <= index) {
            n *= 2;
        }
        m = realloc(be->mrs, n * sizeof(*m));
        if (!m) {
            return NULL;
        }
        memset(m + be->nmrs, 0, (n - be->nmrs) * sizeof(*m));
        be->mrs = m;
        be->nmrs = n;
    }
    return &be->mrs[index];
}

/*
 * The guest's DMA MR: host MRs over every RAM range of the PD, iova =
 * guest-physical.
 */
static int dma_mrs(struct qrdma_be *be, struct vb_pd *p)
{
    unsigned i;

    for (i = 0; i < be->cfg.nram; i++) {
        const struct qrdma_be_verbs_ram *r = &be->cfg.ram[i];

        if (p->dma[i]) {
            continue;
        }
        /*
         * Local access only: a peer reaches this memory through a window
         * bound to it (MW_BIND), never through this MR's own rkey.
         * LOCAL_WRITE lets a window grant remote write (IBTA 10.6.7.2.1).
         */
        p->dma[i] = be->v->reg_mr_iova2(p->pd, r->hva, r->size, r->gpa,
                                        IBV_ACCESS_LOCAL_WRITE |
                                            IBV_ACCESS_MW_BIND);
        if (!p->dma[i]) {
            return host_res_err();
        }
    }
    return 0;
}

static int vb_mr_register(struct qrdma_be *be, const struct qrdma_be_mr *mr,
                          uint32_t *rkey)
{
    struct vb_pieces pieces = { 0 };
    struct vb_mr *slot = mr_slot(be, mr->stag, true), next;
    struct vb_pd *p;
    void *addr;
    int ret;

    if (!slot) {
        return -ENOMEM;
    }
    p = pd_get(be, mr->pd);
    if (!p) {
        return host_res_err();
    }
    memset(&next, 0, sizeof(next));
    next.live = true;
    next.stag = mr->stag;
    next.pd = mr->pd;
    next.type = mr->type;
    if (mr->type == QRDMA_BE_MR_DMA) {
        ret = dma_mrs(be, p);
        if (ret) {
            return ret;
        }
        *rkey = mr->stag;       /* local only: no peer uses it */
        goto install;
    }
    ret = be->cbs.mr_gpa_walk(be->opaque, mr->pd, mr->stag, mr->iova,
                              mr->length, piece_add, &pieces);
    if (!ret) {
        ret = mr_place(be, &pieces, &addr, &next.alias, &next.alias_len);
    }
    free(pieces.gpa);
    free(pieces.len);
    if (ret) {
        return ret == -EACCES || ret == -EFAULT ? -EINVAL : ret;
    }
    /*
     * The four rights verbs and the guest share; nothing optional the host may
     * lack.
     */
    next.mr = be->v->reg_mr_iova2(p->pd, addr, mr->length, mr->iova,
                                  mr->access & (IBV_ACCESS_LOCAL_WRITE |
                                                IBV_ACCESS_REMOTE_WRITE |
                                                IBV_ACCESS_REMOTE_READ |
                                                IBV_ACCESS_REMOTE_ATOMIC));
    if (!next.mr) {
        ret = host_res_err();
        if (next.alias) {
            munmap(next.alias, next.alias_len);
        }
        return ret;
    }
    *rkey = next.mr->rkey;
install:
    /*
     * A REREG replaces the old registration only now that the new one exists.
     */
    if (slot->live) {
        mr_release(be, slot);
    }
    *slot = next;
    return 0;
}

/*
 * ALLOC_STAG: a host type 2 memory window, unbound (its rkey works for
 * nothing until a FAST_REG binds it). The wire rkey is the window's with
 * the STag's key byte in bits 7:0, as the contract wants: a type 2
 * window's key byte is the consumer's to choose at each bind, so a
 * FAST_REG that changes the guest's key byte changes the host's alike.
 * The PD's whole-RAM MRs, which windows bind to, are made now, so a bind
 * never has to register memory in the data path.
 */
static int vb_mr_alloc_stag(struct qrdma_be *be, const struct qrdma_be_mr *mr,
                            uint32_t *rkey)
{
    struct vb_mr *slot = mr_slot(be, mr->stag, true);
    struct vb_pd *p;
    struct ibv_mw *mw;
    int ret;

    if (!slot) {
        return -ENOMEM;
    }
    p = pd_get(be, mr->pd);
    if (!p) {
        return host_res_err();
    }
    ret = dma_mrs(be, p);
    if (ret) {
        return ret;
    }
    mw = be->v->alloc_mw(p->pd, IBV_MW_TYPE_2);
    if (!mw) {
        return host_res_err();
    }
    if (slot->live) {
        mr_release(be, slot);
    }
    memset(slot, 0, sizeof(*slot));
    slot->live = true;
    slot->stag = mr->stag;
    slot->pd = mr->pd;
    slot->type = mr->type;
    slot->mw = mw;
    slot->wire_rkey = (mw->rkey & ~0xffu) | (mr->stag & 0xffu);
    slot->next_seq = 1;
    slot->gen = ++be->mr_gen;
    *rkey = slot->wire_rkey;
    return 0;
}

static void vb_mr_deregister(struct qrdma_be *be, uint32_t stag)
{
    struct vb_mr *m = mr_slot(be, stag, false);

    if (m && m->live) {
        mr_release(be, m);
    }
}

/*
 * One guest SGE as host SGEs: the same address (the host MR has the
 * guest's IOVA) with the host MR's lkey; a DMA MR's SGE is split where a
 * RAM range ends. -EACCES: no MR of this STag (index and key byte) in the
 * QP's PD, or a DMA address outside guest RAM; -EINVAL: too many pieces.
 */
static int sge_to_host(struct qrdma_be *be, uint32_t pd,
                       const struct qrdma_be_sge *s, struct ibv_sge *out,
                       unsigned *n, unsigned max)
{
    struct vb_mr *m = mr_slot(be, s->lkey, false);
    uint64_t addr = s->addr, left = s->length;

    /*
     * A fast-register MR's lkey in a local SGE is not carried: its window
     * serves peers only (NVMe over RDMA and rdma_rw use the PD's DMA lkey
     * locally).
     */
    if (!m || !m->live || m->stag != s->lkey || m->pd != pd ||
        m->type == QRDMA_BE_MR_FAST_REG) {
        return -EACCES;
    }
    if (m->type != QRDMA_BE_MR_DMA) {
        if (*n >= max) {
            return -EINVAL;
        }
        out[(*n)++] = (struct ibv_sge){ .addr = addr,
                                        .length = s->length,
                                        .lkey = m->mr->lkey };
        return 0;
    }
    do {
        const struct qrdma_be_verbs_ram *r = ram_of(be, addr, 1);
        uint64_t run;

        if (!r) {
            return -EACCES;
        }
        run = r->gpa + r->size - addr;
        if (run > left) {
            run = left;
        }
        if (*n >= max) {
            return -EINVAL;
        }
        out[(*n)++] =
            (struct ibv_sge){ .addr = addr,
                              .length = (uint32_t)run,
                              .lkey = be->pds[pd]->dma[r - be->cfg.ram]->lkey };
        addr += run;
        left -= run;
    } while (left);
    return 0;
}

/* ---- address vectors ----------------------------------------------------- */

/*
 * The host AV of a guest AV: the source GID is the host GID with the same
 * bytes (the guest's GID table holds only host GIDs: ADD_GID accepts no
 * other), at its host index. -EINVAL when the host no longer has it: never
 * another GID in its place.
 */
static int av_to_ah_attr(struct qrdma_be *be, const struct qrdma_be_av *av,
                         struct ibv_ah_attr *a)
{
    unsigned i;

    memset(a, 0, sizeof(*a));
    for (i = 0; i < be->port.ngids; i++) {
        if (!memcmp(be->port.gid[i], av->sgid, 16)) {
            break;
        }
    }
    if (i == be->port.ngids) {
        return -EINVAL;
    }
    a->is_global = 1;
    memcpy(a->grh.dgid.raw, av->dgid, 16);
    a->grh.flow_label = av->flow_label;
    a->grh.sgid_index = be->port.gid_index[i];
    a->grh.hop_limit = av->hop_limit ? av->hop_limit : 64;
    a->grh.traffic_class = av->traffic_class;
    a->port_num = be->cfg.ibport;
    return 0;
}

static bool av_same(const struct qrdma_be_av *a, const struct qrdma_be_av *b)
{
    return !memcmp(a->dgid, b->dgid, 16) && !memcmp(a->sgid, b->sgid, 16) &&
           a->flow_label == b->flow_label && a->hop_limit == b->hop_limit &&
           a->traffic_class == b->traffic_class;
}

/* A host AH for a UD send, from a small cache (round-robin replacement). */
static struct ibv_ah *ah_get(struct qrdma_be *be, uint32_t pd,
                             const struct qrdma_be_av *av)
{
    struct ibv_ah_attr attr;
    struct vb_ah *slot;
    unsigned i;

    for (i = 0; i < VB_AH_CACHE; i++) {
        if (be->ahs[i].live && be->ahs[i].pd == pd &&
            av_same(&be->ahs[i].av, av)) {
            return be->ahs[i].ah;
        }
    }
    if (av_to_ah_attr(be, av, &attr)) {
        errno = EINVAL;
        return NULL;
    }
    slot = &be->ahs[be->ah_next];
    /*
     * A replaced AH may still be named by a send the host has not
     * completed: the UD send WR has taken what it needs at post time on
     * every provider we know, but keep the cache large enough that this
     * stays rare.
     */
    if (slot->live) {
        be->v->destroy_ah(slot->ah);
        slot->live = false;
    }
    slot->ah = be->v->create_ah(be->pds[pd]->pd, &attr);
    if (!slot->ah) {
        return NULL;
    }
    slot->live = true;
    slot->pd = pd;
    slot->av = *av;
    be->ah_next = (be->ah_next + 1) % VB_AH_CACHE;
    return slot->ah;
}

/* ---- QPs ----------------------------------------------------------------- */

/*
 * Grows a table of object pointers indexed by a guest object ID (QP or
 * SRQ) so that `id` fits: doubling from `first` entries, new entries NULL.
 */
static int id_table_fit(void **table, uint32_t *len, uint32_t id,
                        uint32_t first)
{
    uint32_t n = *len ? *len : first;
    char *t;

    if (id >= VB_MAX_ID) {
        return -EINVAL;
    }
    if (id < *len) {
        return 0;
    }
    while (n <= id) {
        n *= 2;
    }
    t = realloc(*table, n * sizeof(void *));
    if (!t) {
        return -ENOMEM;
    }
    memset(t + *len * sizeof(void *), 0, (n - *len) * sizeof(void *));
    *table = t;
    *len = n;
    return 0;
}

static int qp_table_put(struct qrdma_be *be, uint32_t qp_id,
                        struct qrdma_be_qp *q)
{
    void *t = be->qps;
    int ret = id_table_fit(&t, &be->nqps, qp_id, 64);

    be->qps = t;
    if (!ret) {
        be->qps[qp_id] = q;
    }
    return ret;
}

static int srq_table_put(struct qrdma_be *be, uint32_t srq_id,
                         struct qrdma_be_srq *srq)
{
    void *t = be->srqs;
    int ret = id_table_fit(&t, &be->nsrqs, srq_id, 16);

    be->srqs = t;
    if (!ret) {
        be->srqs[srq_id] = srq;
    }
    return ret;
}

static void qp_free(struct qrdma_be *be, struct qrdma_be_qp *q)
{
    if (q->gsi) {
        free(q->gsi->tx);
        free(q->gsi);
    }
    if (q->qp) {
        be->v->destroy_qp(q->qp);
    }
    if (q->scq) {
        be->v->destroy_cq(q->scq);
    }
    if (q->rcq) {
        be->v->destroy_cq(q->rcq);
    }
    free(q->sq);
    free(q);
}

/* ---- the GSI QP and the CM proxy ---------------------------------------- */

/* 40 bytes of GRH room as RoCE v2 fills it (IPv6, or IPv4 in its last 20). */
static void gsi_grh(uint8_t grh[40], const uint8_t src[16],
                    const uint8_t dst[16])
{
    /* UDP, BTH, DETH, the MAD, ICRC: what follows the IP header */
    const uint32_t udp_len = 8 + 12 + 8 + VB_MAD_BYTES + 4;

    memset(grh, 0, 40);
    if (vb_gid_is_v4(src) && vb_gid_is_v4(dst)) {
        uint8_t *ip = grh + 20;
        uint16_t sum;

        ip[0] = 0x45;
        ip[2] = (uint8_t)((20 + udp_len) >> 8);
        ip[3] = (uint8_t)(20 + udp_len);
        ip[6] = 0x40;                   /* don't fragment */
        ip[8] = 64;
        ip[9] = 17;                     /* UDP */
        memcpy(ip + 12, src + 12, 4);
        memcpy(ip + 16, dst + 12, 4);
        sum = qrdma_inet_csum(ip, 20, 0);
        ip[10] = (uint8_t)(sum >> 8);
        ip[11] = (uint8_t)sum;
        return;
    }
    grh[0] = 0x60;
    grh[4] = (uint8_t)(udp_len >> 8);
    grh[5] = (uint8_t)udp_len;
    grh[6] = 17;
    grh[7] = 64;
    memcpy(grh + 8, src, 16);
    memcpy(grh + 24, dst, 16);
}

/* What every QP of the backend starts from, the GSI QP's included. */
static void qp_init(struct qrdma_be *be, struct qrdma_be_qp *q,
                    const struct qrdma_be_qp_init *init)
{
    q->be = be;
    q->qp_id = init->qp_id;
    q->type = init->type;
    q->pd = init->pd;
    q->send_cq_id = init->send_cq;
    q->recv_cq_id = init->recv_cq;
    q->state = QRDMA_BE_QPS_RESET;
    q->sq_size = init->max_send_wr;
    q->rq_size = init->has_srq ? 0 : init->max_recv_wr;
    q->srq = init->has_srq ? be->srqs[init->srq] : NULL;
}

static int gsi_create(struct qrdma_be *be, const struct qrdma_be_qp_init *init,
                      struct qrdma_be_qp **qpp, uint32_t *qpn)
{
    struct qrdma_be_qp *q;
    int ret;

    if (!be->cm || init->type != QRDMA_BE_QPT_UD || init->has_srq) {
        return -EINVAL;
    }
    q = calloc(1, sizeof(*q));
    if (!q) {
        return -ENOMEM;
    }
    q->gsi = calloc(1, sizeof(*q->gsi));
    if (q->gsi) {
        q->gsi->tx = calloc(init->max_send_wr, sizeof(*q->gsi->tx));
    }
    if (!q->gsi || !q->gsi->tx) {
        qp_free(be, q);
        return -ENOMEM;
    }
    qp_init(be, q, init);
    ret = qp_table_put(be, init->qp_id, q);
    if (ret) {
        qp_free(be, q);
        return ret;
    }
    *qpp = q;
    *qpn = QRDMA_BE_GSI_QP_ID;
    return 0;
}

static int gsi_modify(struct qrdma_be *be, struct qrdma_be_qp *q,
                      const struct qrdma_be_qp_attr *a, uint32_t mask)
{
    if (mask & QRDMA_BE_QP_ATTR_QKEY) {
        q->qkey = a->qkey;
    }
    q->state = a->qp_state;
    if (a->qp_state == QRDMA_BE_QPS_RESET) {
        q->gsi->rx_n = 0;
        q->gsi->tx_n = 0;
        q->sq_refused = false;
    }
    return 0;
}

/*
 * A MAD the guest sends: read it from guest memory and hand it to the CM
 * proxy. It completes when poll next runs, as if it had gone on the wire.
 */
static int gsi_post_send(struct qrdma_be *be, struct qrdma_be_qp *q,
                         const struct qrdma_be_send_wr *wr)
{
    struct vb_gsi *g = q->gsi;
    uint8_t mad[VB_MAD_BYTES];
    uint32_t len = 0, status = QRDMA_BE_WC_SUCCESS;

    if (wr->opcode != QRDMA_BE_WR_SEND) {
        return -EOPNOTSUPP;
    }
    if (g->tx_n >= q->sq_size) {
        q->sq_refused = true;
        return -ENOSPC;
    }
    if (wr->send_flags & QRDMA_BE_SEND_INLINE) {
        len = wr->inline_len < sizeof(mad) ? wr->inline_len : sizeof(mad);
        memcpy(mad, wr->inline_data, len);
    } else {
        for (uint32_t i = 0; i < wr->num_sge && i < QRDMA_BE_MAX_SGE &&
                             len < sizeof(mad); i++) {
            const struct qrdma_be_sge *sge = &wr->sg_list[i];
            uint32_t n = sge->length < sizeof(mad) - len ? sge->length
                                                         : sizeof(mad) - len;

            if (be->cbs.mr_read(be->opaque, q->pd, q->qp_id, sge->lkey,
                                sge->addr, mad + len, n, 0)) {
                return -EACCES;
            }
            len += n;
        }
    }
    if (q->state == QRDMA_BE_QPS_ERR) {
        status = QRDMA_BE_WC_WR_FLUSH_ERR;
    } else if (wr->ud.remote_qpn != QRDMA_BE_GSI_QP_ID) {
        char msg[96];

        snprintf(msg, sizeof(msg), "GSI QP: a MAD to QPN %u dropped: MADs "
                 "go to QP 1", wr->ud.remote_qpn);
        be->cbs.guest_error(be->opaque, msg);
    } else {
        vb_cm_guest_mad(be->cm, wr->ud.av.sgid, wr->ud.av.dgid, mad, len);
    }
    if ((wr->send_flags & QRDMA_BE_SEND_SIGNALED) ||
        status != QRDMA_BE_WC_SUCCESS) {
        unsigned slot = (g->tx_head + g->tx_n++) % q->sq_size;

        g->tx[slot].wr_id = wr->wr_id;
        g->tx[slot].status = status;
    }
    return 0;
}

/* len bytes of data into a receive WQE's SGEs: 0, -EACCES or -EMSGSIZE. */
static int gsi_scatter(struct qrdma_be *be, struct qrdma_be_qp *q,
                       const struct qrdma_be_recv_wr *rw, const uint8_t *data,
                       uint32_t len)
{
    uint32_t off = 0;

    for (uint32_t i = 0; i < rw->num_sge && i < QRDMA_BE_MAX_SGE && off < len;
         i++) {
        const struct qrdma_be_sge *sge = &rw->sg_list[i];
        uint32_t n = sge->length < len - off ? sge->length : len - off;

        if (be->cbs.mr_write(be->opaque, q->pd, q->qp_id, sge->lkey,
                             sge->addr, data + off, n,
                             QRDMA_BE_ACCESS_LOCAL_WRITE)) {
            return -EACCES;
        }
        off += n;
    }
    return off < len ? -EMSGSIZE : 0;
}

/* Give the guest the MADs that wait, as far as it has receive WQEs. */
static void gsi_deliver(struct qrdma_be *be, struct qrdma_be_qp *q)
{
    struct vb_gsi *g = q->gsi;

    while (g->rx_n && q->state != QRDMA_BE_QPS_RESET &&
           q->state != QRDMA_BE_QPS_ERR) {
        struct vb_gsi_mad *m = &g->rx[g->rx_head];
        uint8_t buf[40 + VB_MAD_BYTES];
        struct qrdma_be_recv_wr rw;
        struct qrdma_be_wc wc = { .opcode = QRDMA_BE_WC_RECV };
        int ret = be->cbs.get_recv(be->opaque, q->qp_id, &rw);

        if (ret == -ENOENT) {
            return;
        }
        if (ret) {
            q->state = QRDMA_BE_QPS_ERR;
            be->cbs.event(be->opaque, QRDMA_BE_EV_QP_FATAL, q->qp_id);
            return;
        }
        gsi_grh(buf, m->peer, m->local);
        memcpy(buf + 40, m->mad, VB_MAD_BYTES);
        ret = gsi_scatter(be, q, &rw, buf, sizeof(buf));
        g->rx_head = (g->rx_head + 1) % VB_GSI_RX_QUEUE;
        g->rx_n--;
        wc.wr_id = rw.wr_id;
        wc.status = ret == -EACCES     ? QRDMA_BE_WC_LOC_PROT_ERR
                    : ret == -EMSGSIZE ? QRDMA_BE_WC_LOC_LEN_ERR
                                       : QRDMA_BE_WC_SUCCESS;
        wc.byte_len = ret ? 0 : sizeof(buf);
        wc.src_qp = QRDMA_BE_GSI_QP_ID;
        wc.wc_flags = QRDMA_BE_WC_GRH;
        be->cbs.complete(be->opaque, q->qp_id, &wc);
    }
}

/* poll's turn of the GSI QP: owed send completions, MADs, a flush in ERR. */
static void gsi_run(struct qrdma_be *be, struct qrdma_be_qp *q)
{
    struct vb_gsi *g = q->gsi;

    while (g->tx_n) {
        struct qrdma_be_wc wc = { .opcode = QRDMA_BE_WC_SEND };

        wc.wr_id = g->tx[g->tx_head].wr_id;
        wc.status = g->tx[g->tx_head].status;
        g->tx_head = (g->tx_head + 1) % q->sq_size;
        g->tx_n--;
        be->cbs.complete(be->opaque, q->qp_id, &wc);
    }
    if (q->sq_refused) {
        q->sq_refused = false;
        be->cbs.sq_space(be->opaque, q->qp_id);
    }
    if (q->state == QRDMA_BE_QPS_ERR) {
        /* no host QP flushes them: the receives the guest posted, bounded */
        struct qrdma_be_recv_wr rw;

        for (uint32_t i = 0;
             i <= q->rq_size && !be->cbs.get_recv(be->opaque, q->qp_id, &rw);
             i++) {
            struct qrdma_be_wc wc = { .wr_id = rw.wr_id,
                                      .status = QRDMA_BE_WC_WR_FLUSH_ERR,
                                      .opcode = QRDMA_BE_WC_RECV };

            be->cbs.complete(be->opaque, q->qp_id, &wc);
        }
        g->rx_n = 0;
        return;
    }
    gsi_deliver(be, q);
}

/* The CM proxy's MAD for the guest: queued on the GSI QP for poll. */
static void cm_deliver(void *opaque, const uint8_t peer[16],
                       const uint8_t local[16], const uint8_t mad[VB_MAD_BYTES])
{
    struct qrdma_be *be = opaque;
    struct qrdma_be_qp *q = QRDMA_BE_GSI_QP_ID < be->nqps
                            ? be->qps[QRDMA_BE_GSI_QP_ID] : NULL;
    struct vb_gsi *g = q ? q->gsi : NULL;
    struct vb_gsi_mad *m;

    if (!g || q->state == QRDMA_BE_QPS_RESET || q->state == QRDMA_BE_QPS_ERR ||
        g->rx_n == VB_GSI_RX_QUEUE) {
        if (g) {
            g->rx_dropped++;
        }
        return;
    }
    m = &g->rx[(g->rx_head + g->rx_n++) % VB_GSI_RX_QUEUE];
    memcpy(m->peer, peer, 16);
    memcpy(m->local, local, 16);
    memcpy(m->mad, mad, VB_MAD_BYTES);
}

static void cm_guest_error(void *opaque, const char *msg)
{
    struct qrdma_be *be = opaque;

    be->cbs.guest_error(be->opaque, msg);
}

static uint64_t cm_now(void *opaque)
{
    struct qrdma_be *be = opaque;

    return be->cbs.now_ns(be->opaque);
}

/* The CM proxy on the host's rdma_cm, listening on the guest's GIDs. */
static int cm_start(struct qrdma_be *be, char *err, size_t err_len)
{
    const struct qrdma_be_verbs_config *cfg = &be->cfg;
    const struct vb_cm_env env = { be, cm_deliver, cm_guest_error, cm_now };
    const struct vb_cmh_ops *ops = cfg->cm_ops;
    struct vb_cm_config cc = { 0 };
    struct epoll_event ev = { .events = EPOLLIN };
    char why[160];
    int fd;

    be->cm_host = cfg->cm_host;
    if (!ops) {
#ifdef QRDMA_HAVE_RDMACM
        ops = &qrdma_vb_rdmacm_ops;
        be->cm_host = qrdma_vb_rdmacm_open(why, sizeof(why));
        if (!be->cm_host) {
            snprintf(err, err_len, "backend=verbs: cm=proxy: %s", why);
            return -1;
        }
        be->cm_host_owned = true;
#else
        snprintf(err, err_len,
                 "backend=verbs: cm=proxy needs librdmacm, which this program "
                 "was built without; use cm=off (the guest then has no "
                 "rdma_cm)");
        return -1;
#endif
    }
    if (cfg->ncm_listen > QRDMA_BE_VERBS_MAX_LISTEN) {
        snprintf(err, err_len, "backend=verbs: more than %d cm-listen ports",
                 QRDMA_BE_VERBS_MAX_LISTEN);
        return -1;
    }
    cc.ibdev = be->ibdev;
    cc.ibport = be->cfg.ibport;
    cc.ngids = be->port.ngids;
    memcpy(cc.gid, be->port.gid, sizeof(cc.gid));
    cc.nlisten = cfg->ncm_listen;
    memcpy(cc.listen, cfg->cm_listen, sizeof(cc.listen));
    cc.guest_timeout_ns = cfg->cm_guest_timeout_ns;
    be->cm = vb_cm_create(ops, be->cm_host, &env, &cc, why, sizeof(why));
    if (!be->cm) {
        snprintf(err, err_len, "backend=verbs: cm=proxy: %s", why);
        return -1;
    }
    fd = vb_cm_fd(be->cm);
    ev.data.u32 = VB_READY_CM;
    if (fd >= 0 && epoll_ctl(be->epfd, EPOLL_CTL_ADD, fd, &ev)) {
        snprintf(err, err_len, "backend=verbs: epoll: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* Undo cm_start, whatever part of it was done. */
static void cm_stop(struct qrdma_be *be)
{
    vb_cm_destroy(be->cm);
    be->cm = NULL;
#ifdef QRDMA_HAVE_RDMACM
    if (be->cm_host_owned) {
        qrdma_vb_rdmacm_close(be->cm_host);
    }
#endif
    be->cm_host = NULL;
    be->cm_host_owned = false;
}

/* What the backend can carry (its ops' carries): GSI only with the proxy. */
#define VB_CARRIES                                                             \
    (QRDMA_BE_CARRIES_SRQ | QRDMA_BE_CARRIES_FAST_REG | QRDMA_BE_CARRIES_GSI)

static uint32_t vb_carried(struct qrdma_be *be)
{
    return be->cm ? VB_CARRIES : VB_CARRIES & ~QRDMA_BE_CARRIES_GSI;
}

static int vb_qp_create(struct qrdma_be *be,
                        const struct qrdma_be_qp_init *init,
                        struct qrdma_be_qp **qpp, uint32_t *qpn)
{
    struct ibv_qp_init_attr attr;
    struct qrdma_be_qp *q;
    struct vb_pd *p;
    int ret;

    if (!init->max_send_wr || init->qp_id >= VB_MAX_ID) {
        return -EINVAL;
    }
    if (init->has_srq && (init->srq >= be->nsrqs || !be->srqs[init->srq])) {
        return -EINVAL;         /* the core made the SRQ first: srq_create */
    }
    if (init->qp_id == QRDMA_BE_GSI_QP_ID) {
        return gsi_create(be, init, qpp, qpn);  /* no host QP, no host PD */
    }
    p = pd_get(be, init->pd);
    if (!p) {
        return host_res_err();
    }
    q = calloc(1, sizeof(*q));
    if (!q) {
        return -ENOMEM;
    }
    qp_init(be, q, init);
    q->max_send_sge = init->max_send_sge;
    q->max_recv_sge = init->max_recv_sge;
    q->sq = calloc(q->sq_size, sizeof(*q->sq));
    if (!q->sq) {
        ret = -ENOMEM;
        goto err_free;
    }
    q->scq = be->v->create_cq(be->ctx, (int)q->sq_size, q, be->ch, 0);
    if (!q->scq) {
        ret = host_res_err();
        goto err_free;
    }
    /* With an SRQ, at most the SRQ's WQEs complete here. */
    q->rcq = be->v->create_cq(be->ctx,
                              (int)(q->srq       ? q->srq->size
                                    : q->rq_size ? q->rq_size
                                                 : 1),
                              q, be->ch, 0);
    if (!q->rcq) {
        ret = host_res_err();
        goto err_free;
    }
    ret = rc_err(be->v->req_notify_cq(q->scq, 0));
    if (!ret) {
        ret = rc_err(be->v->req_notify_cq(q->rcq, 0));
    }
    if (ret) {
        goto err_free;
    }
    memset(&attr, 0, sizeof(attr));
    attr.qp_context = q;
    attr.send_cq = q->scq;
    attr.recv_cq = q->rcq;
    attr.qp_type = (enum ibv_qp_type)init->type;
    /* the guest's SIGNALED flag decides, WR by WR */
    attr.sq_sig_all = 0;
    attr.cap.max_send_wr = init->max_send_wr;
    attr.srq = q->srq ? q->srq->srq : NULL;
    attr.cap.max_recv_wr = q->srq ? 0 : init->max_recv_wr;
    /* A DMA-MR SGE may become two host SGEs; ask for the room. */
    attr.cap.max_send_sge = init->max_send_sge ? 2 * init->max_send_sge : 1;
    attr.cap.max_recv_sge = q->srq               ? 0
                            : init->max_recv_sge ? 2 * init->max_recv_sge
                                                 : 1;
    if (attr.cap.max_send_sge > VB_MAX_HOST_SGE) {
        attr.cap.max_send_sge = VB_MAX_HOST_SGE;
    }
    if (attr.cap.max_recv_sge > VB_MAX_HOST_SGE) {
        attr.cap.max_recv_sge = VB_MAX_HOST_SGE;
    }
    attr.cap.max_inline_data = init->max_inline;
    q->qp = be->v->create_qp(p->pd, &attr);
    if (!q->qp) {
        ret = host_res_err();
        goto err_free;
    }
    q->max_send_sge = attr.cap.max_send_sge;
    q->max_recv_sge = attr.cap.max_recv_sge;
    if (q->qp->qp_num >= VB_MAX_ID) {
        ret = -EINVAL;
        goto err_free;
    }
    ret = qp_table_put(be, init->qp_id, q);
    if (ret) {
        goto err_free;
    }
    *qpp = q;
    *qpn = q->qp->qp_num;
    return 0;

err_free:
    qp_free(be, q);
    return ret;
}

/* Throw away what the QP's host CQs hold (a QP to RESET forgets its work). */
static void qp_drain_cqs(struct qrdma_be *be, struct qrdma_be_qp *q)
{
    struct ibv_wc wc[VB_POLL_BATCH];
    unsigned rounds = 0;

    /* Bounded: the CQs are sized to the queues. */
    while (q->qp && rounds++ < q->sq_size + q->rq_size + 2) {
        if (be->v->poll_cq(q->scq, VB_POLL_BATCH, wc) <= 0 &&
            be->v->poll_cq(q->rcq, VB_POLL_BATCH, wc) <= 0) {
            break;
        }
    }
}

static int vb_qp_modify(struct qrdma_be *be, struct qrdma_be_qp *q,
                        const struct qrdma_be_qp_attr *a, uint32_t mask)
{
    struct ibv_qp_attr attr;
    int hmask = (int)(mask & QRDMA_BE_QP_ATTR_ALL), ret;

    if (q->gsi) {
        return gsi_modify(be, q, a, mask);
    }
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = (enum ibv_qp_state)a->qp_state;
    attr.path_mtu = (enum ibv_mtu)a->path_mtu;
    attr.qkey = a->qkey;
    attr.rq_psn = a->rq_psn;
    attr.sq_psn = a->sq_psn;
    attr.dest_qp_num = a->dest_qp_num;
    attr.qp_access_flags = a->qp_access_flags;
    attr.max_rd_atomic = a->max_rd_atomic;
    attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
    attr.min_rnr_timer = a->min_rnr_timer;
    attr.timeout = a->timeout;
    attr.retry_cnt = a->retry_cnt;
    attr.rnr_retry = a->rnr_retry;
    if ((hmask & IBV_QP_AV) && av_to_ah_attr(be, &a->av, &attr.ah_attr)) {
        return -EINVAL;
    }
    if (q->type == QRDMA_BE_QPT_UD) {
        /* the core adds it for its own transport; IB has none for UD */
        hmask &= ~IBV_QP_PATH_MTU;
    }
    if (be->cm && q->type == QRDMA_BE_QPT_RC &&
        a->qp_state == QRDMA_BE_QPS_RTR && (mask & QRDMA_BE_QP_ATTR_RQ_PSN)) {
        /*
         * A connection the CM proxy made: the peer sends from the PSN the
         * host's CM told it, not from the one the guest's CM chose. RC's
         * INIT to RTR names the peer too (the core requires AV and DEST_QPN).
         */
        vb_cm_rtr_psn(be->cm, q->qp->qp_num, a->av.dgid, a->dest_qp_num,
                      &attr.rq_psn);
    }
    if (q->state == QRDMA_BE_QPS_RESET && a->qp_state == QRDMA_BE_QPS_INIT) {
        /*
         * The port and P_Key index are the device's, not the guest's to choose.
         */
        attr.port_num = be->cfg.ibport;
        attr.pkey_index = 0;
        hmask |= IBV_QP_PORT | IBV_QP_PKEY_INDEX;
    }
    ret = rc_err(be->v->modify_qp(q->qp, &attr, hmask));
    if (ret) {
        return ret;
    }
    if (mask & QRDMA_BE_QP_ATTR_QKEY) {
        q->qkey = a->qkey;
    }
    q->state = a->qp_state;
    if (a->qp_state == QRDMA_BE_QPS_RESET) {
        qp_drain_cqs(be, q);
        q->sq_head = q->sq_tail = 0;
        q->sq_refused = false;
        q->rq_posted = 0;
        q->due = false;
    }
    return 0;
}

static enum qrdma_be_qp_state vb_qp_state(struct qrdma_be *be,
                                          struct qrdma_be_qp *q)
{
    return (enum qrdma_be_qp_state)q->state;
}

static void vb_qp_destroy(struct qrdma_be *be, struct qrdma_be_qp *q)
{
    if (q->qp_id < be->nqps && be->qps[q->qp_id] == q) {
        be->qps[q->qp_id] = NULL;
    }
    qp_free(be, q);
}

/* The host QP to ERR: every WR it holds then completes with WR_FLUSH_ERR. */
static void qp_error(struct qrdma_be *be, struct qrdma_be_qp *q)
{
    struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

    if (q->gsi) {
        q->state = QRDMA_BE_QPS_ERR;
        return;
    }
    if (q->state != QRDMA_BE_QPS_ERR) {
        be->v->modify_qp(q->qp, &attr, IBV_QP_STATE);
        q->state = QRDMA_BE_QPS_ERR;
    }
}

/* ---- posting ------------------------------------------------------------- */

static uint32_t wc_opcode_of(uint32_t wr_opcode)
{
    switch (wr_opcode) {
    case QRDMA_BE_WR_RDMA_WRITE:
    case QRDMA_BE_WR_RDMA_WRITE_WITH_IMM:
        return QRDMA_BE_WC_RDMA_WRITE;
    case QRDMA_BE_WR_RDMA_READ:
        return QRDMA_BE_WC_RDMA_READ;
    case QRDMA_BE_WR_ATOMIC_CMP_AND_SWP:
        return QRDMA_BE_WC_COMP_SWAP;
    case QRDMA_BE_WR_ATOMIC_FETCH_AND_ADD:
        return QRDMA_BE_WC_FETCH_ADD;
    case QRDMA_BE_WR_FAST_REG:
        return QRDMA_BE_WC_FAST_REG;    /* the host says BIND_MW */
    case QRDMA_BE_WR_LOCAL_INV:
        return QRDMA_BE_WC_LOCAL_INV;
    default:
        return QRDMA_BE_WC_SEND;
    }
}

/*
 * The fast-register MR of QP q's PD that stag names (index, and key byte if
 * exact).
 */
static struct vb_mr *fr_mr(struct qrdma_be *be, struct qrdma_be_qp *q,
                           uint32_t stag, bool exact)
{
    struct vb_mr *m = mr_slot(be, stag, false);

    if (!m || !m->live || m->type != QRDMA_BE_MR_FAST_REG || m->pd != q->pd ||
        (exact && m->stag != stag)) {
        return NULL;
    }
    return m;
}

/*
 * A FAST_REG WR as a host bind of the MR's window, in SQ order. The core
 * takes the new translation first (its table is the truth; the guest's
 * QUERY_STAG and later walks see it). When its guest-physical pieces are
 * one run at iova = guest-physical address inside one RAM range (what a
 * guest kernel's ib_map_mr_sg gives for physically contiguous pages
 * without a vIOMMU), the window covers them on the PD's whole-RAM MR of
 * that range. Otherwise (scattered pages, or another iova) the pages are
 * placed as REG_MR places them (an alias from the RAM's fd if need be)
 * and registered as a host MR of their own with the guest's iova, and the
 * window binds to that: a host registration per such FAST_REG, released
 * once the window is off it (fr_retire). *note says what the WR does to
 * the MR's host MRs when it has run; on -errno nothing is left behind.
 */
static int fast_reg_to_host(struct qrdma_be *be, struct qrdma_be_qp *q,
                            const struct qrdma_be_fast_reg *fr,
                            struct ibv_send_wr *hw, struct vb_fr_note *note)
{
    struct vb_mr *m = fr_mr(be, q, fr->stag, false);
    struct vb_pieces pieces = { 0 };
    const struct qrdma_be_verbs_ram *r = NULL;
    struct vb_fr_reg *reg = NULL;
    struct ibv_mr *target;
    void *addr;
    int ret;

    if (!m || !fr->length) {
        return -EINVAL;
    }
    ret = be->cbs.fast_reg(be->opaque, q->pd, fr);
    if (!ret) {
        ret = be->cbs.mr_gpa_walk(be->opaque, q->pd, fr->stag, fr->iova,
                                  fr->length, piece_add, &pieces);
    }
    if (!ret && pieces.n == 1 && pieces.gpa[0] == fr->iova) {
        r = ram_of(be, pieces.gpa[0], pieces.len[0]);
    }
    if (!ret && !r) {
        fr_regs_reap(be, m, false);
        if (m->nregs >= VB_FR_MAX_REGS) {
            char msg[160];

            snprintf(msg, sizeof(msg), "FAST_REG of STag 0x%08x refused: "
                     "%u host MRs of its earlier binds may still be in use "
                     "(their binds or invalidations have not completed)",
                     fr->stag, m->nregs);
            if (be->cbs.guest_error) {
                be->cbs.guest_error(be->opaque, msg);
            }
            ret = -EBUSY;
        } else {
            reg = calloc(1, sizeof(*reg));
            ret = reg ? mr_place(be, &pieces, &addr, &reg->alias,
                                 &reg->alias_len)
                      : -ENOMEM;
        }
        if (!ret) {
            /* bindable and never remote itself, as the whole-RAM MRs */
            reg->mr = be->v->reg_mr_iova2(be->pds[q->pd]->pd, addr,
                                          fr->length, fr->iova,
                                          IBV_ACCESS_LOCAL_WRITE |
                                              IBV_ACCESS_MW_BIND);
            ret = reg->mr ? 0 : host_res_err();
        }
    }
    free(pieces.gpa);
    free(pieces.len);
    if (ret) {
        if (reg) {
            fr_reg_free(be, reg, true);     /* never bound */
        }
        return -EINVAL;
    }
    if (reg) {
        reg->seq = m->next_seq;
        reg->next = m->regs;
        m->regs = reg;
        m->nregs++;
        target = reg->mr;
    } else {
        target = be->pds[q->pd]->dma[r - be->cfg.ram];
    }
    *note = (struct vb_fr_note){ .kind = VB_FR_BIND,
                                 .index = fr->stag >> 8,
                                 .gen = m->gen,
                                 .seq = m->next_seq++ };
    m->stag = fr->stag;
    m->wire_rkey = (m->wire_rkey & ~0xffu) | (fr->stag & 0xffu);
    hw->opcode = IBV_WR_BIND_MW;
    hw->bind_mw.mw = m->mw;
    hw->bind_mw.rkey = m->wire_rkey;
    hw->bind_mw.bind_info.mr = target;
    hw->bind_mw.bind_info.addr = fr->iova;
    hw->bind_mw.bind_info.length = fr->length;
    hw->bind_mw.bind_info.mw_access_flags =
        fr->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                      IBV_ACCESS_REMOTE_ATOMIC);
    return 0;
}

/*
 * A FAST_REG or LOCAL_INV WR has left the host's queue (fr_note of its
 * ring entry): ran says whether it ran. A bind that ran leaves its window
 * off every earlier bind's host MR, an invalidation that ran off every
 * bind's before it; a bind that did not run leaves its own host MR
 * unused. Nothing is concluded from an invalidation that did not run.
 */
static void fr_retire(struct qrdma_be *be, const struct vb_fr_note *n, bool ran)
{
    struct vb_mr *m;
    struct vb_fr_reg **pp;

    if (n->kind == VB_FR_NONE || n->index >= be->nmrs) {
        return;
    }
    m = &be->mrs[n->index];
    if (!m->live || !m->mw || m->gen != n->gen) {
        return;                 /* released with its window meanwhile */
    }
    if (ran) {
        fr_off_below(be, m, n->seq);
        return;
    }
    if (n->kind != VB_FR_BIND) {
        return;
    }
    for (pp = &m->regs; *pp; pp = &(*pp)->next) {
        if ((*pp)->seq == n->seq) {
            struct vb_fr_reg *r = *pp, *next = r->next;

            if (fr_reg_free(be, r, false)) {
                *pp = next;
                m->nregs--;
            }
            return;
        }
    }
}

/*
 * A LOCAL_INV WR (the guest names its STag) as the host's, by the window's wire
 * rkey.
 */
static int local_inv_to_host(struct qrdma_be *be, struct qrdma_be_qp *q,
                             uint32_t stag, struct ibv_send_wr *hw,
                             struct vb_fr_note *note)
{
    struct vb_mr *m = fr_mr(be, q, stag, true);

    if (!m || be->cbs.invalidate(be->opaque, q->pd, q->qp_id, stag)) {
        return -EINVAL;
    }
    *note = (struct vb_fr_note){ .kind = VB_FR_INV,
                                 .index = stag >> 8,
                                 .gen = m->gen,
                                 .seq = m->next_seq };
    hw->opcode = IBV_WR_LOCAL_INV;
    hw->invalidate_rkey = m->wire_rkey;
    return 0;
}

/*
 * The fast-register MR of QP q's PD whose window has wire rkey rkey now, or
 * NULL.
 */
static struct vb_mr *window_of(struct qrdma_be *be, struct qrdma_be_qp *q,
                               uint32_t rkey)
{
    uint32_t i;

    for (i = 0; i < be->nmrs; i++) {
        struct vb_mr *m = &be->mrs[i];

        if (m->live && m->mw && m->pd == q->pd && m->wire_rkey == rkey) {
            return m;
        }
    }
    return NULL;
}

/*
 * Did this successful receive invalidate one of our windows (a peer's
 * SEND_WITH_INV)? IBV_WC_WITH_INV says so; but rxe (Linux 6.12) writes
 * the kernel's IB_WC_WITH_INVALIDATE, bit 2, into the CQE its provider
 * copies as is, where libibverbs reads IBV_WC_IP_CSUM_OK. A checksum flag
 * means nothing on an RC or UC QP: there, with an rkey that is one of
 * our windows, it is the invalidation.
 */
static struct vb_mr *recv_invalidated(struct qrdma_be *be,
                                      struct qrdma_be_qp *q,
                                      const struct ibv_wc *hw)
{
    if (hw->status != IBV_WC_SUCCESS || (hw->wc_flags & IBV_WC_WITH_IMM)) {
        return NULL;
    }
    if ((hw->wc_flags & IBV_WC_WITH_INV) ||
        ((hw->wc_flags & IBV_WC_IP_CSUM_OK) && q->type != QRDMA_BE_QPT_UD)) {
        return window_of(be, q, hw->invalidated_rkey);
    }
    return NULL;
}

static int vb_post_send(struct qrdma_be *be, struct qrdma_be_qp *q,
                        const struct qrdma_be_send_wr *wr)
{
    struct ibv_sge sge[VB_MAX_HOST_SGE];
    struct ibv_send_wr hw, *bad = NULL;
    struct vb_fr_note note = { .kind = VB_FR_NONE };
    unsigned i, n = 0;
    int ret;

    if (q->gsi) {
        return gsi_post_send(be, q, wr);
    }
    switch (wr->opcode) {
    case QRDMA_BE_WR_RDMA_WRITE:
    case QRDMA_BE_WR_RDMA_WRITE_WITH_IMM:
    case QRDMA_BE_WR_SEND:
    case QRDMA_BE_WR_SEND_WITH_IMM:
    case QRDMA_BE_WR_RDMA_READ:
    case QRDMA_BE_WR_ATOMIC_CMP_AND_SWP:
    case QRDMA_BE_WR_ATOMIC_FETCH_AND_ADD:
    case QRDMA_BE_WR_SEND_WITH_INV:
    case QRDMA_BE_WR_FAST_REG:
    case QRDMA_BE_WR_LOCAL_INV:
        break;
    default:
        /* BIND_MW: no guest windows (CARRIES_MW clear) */
        return -EOPNOTSUPP;
    }
    if (q->sq_tail - q->sq_head >= q->sq_size) {
        q->sq_refused = true;
        return -ENOSPC;
    }
    memset(&hw, 0, sizeof(hw));
    hw.wr_id = wr->wr_id;
    hw.opcode = (enum ibv_wr_opcode)wr->opcode;
    hw.send_flags = wr->send_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED |
                                      IBV_SEND_SOLICITED | IBV_SEND_INLINE);
    if (wr->opcode == QRDMA_BE_WR_FAST_REG ||
        wr->opcode == QRDMA_BE_WR_LOCAL_INV) {
        hw.send_flags &= ~(unsigned)(IBV_SEND_INLINE | IBV_SEND_SOLICITED);
        ret = wr->opcode == QRDMA_BE_WR_FAST_REG
              ? fast_reg_to_host(be, q, &wr->fast_reg, &hw, &note)
              : local_inv_to_host(be, q, wr->invalidate_stag, &hw, &note);
        if (ret) {
            return ret;
        }
        goto post;
    }
    if (wr->send_flags & QRDMA_BE_SEND_INLINE) {
        /*
         * The host copies inline data at post time; the core's buffer lives
         * that long.
         */
        sge[n++] = (struct ibv_sge){ .addr = (uintptr_t)wr->inline_data,
                                     .length = wr->inline_len };
    } else {
        if (wr->num_sge > QRDMA_BE_MAX_SGE) {
            return -EINVAL;
        }
        for (i = 0; i < wr->num_sge; i++) {
            ret = sge_to_host(be, q->pd, &wr->sg_list[i], sge, &n,
                              q->max_send_sge);
            if (ret) {
                return ret;
            }
        }
    }
    hw.sg_list = n ? sge : NULL;
    hw.num_sge = (int)n;
    switch (wr->opcode) {
    case QRDMA_BE_WR_RDMA_WRITE_WITH_IMM:
    case QRDMA_BE_WR_SEND_WITH_IMM:
        hw.imm_data = wr->imm_data;     /* network order both sides */
        break;
    case QRDMA_BE_WR_SEND_WITH_INV:
        /* the peer's wire rkey */
        hw.invalidate_rkey = wr->invalidate_stag;
        break;
    }
    switch (wr->opcode) {
    case QRDMA_BE_WR_RDMA_WRITE:
    case QRDMA_BE_WR_RDMA_WRITE_WITH_IMM:
    case QRDMA_BE_WR_RDMA_READ:
        hw.wr.rdma.remote_addr = wr->rdma.remote_addr;
        hw.wr.rdma.rkey = wr->rdma.rkey;
        break;
    case QRDMA_BE_WR_ATOMIC_CMP_AND_SWP:
    case QRDMA_BE_WR_ATOMIC_FETCH_AND_ADD:
        hw.wr.atomic.remote_addr = wr->atomic.remote_addr;
        hw.wr.atomic.rkey = wr->atomic.rkey;
        hw.wr.atomic.compare_add = wr->atomic.compare_add;
        hw.wr.atomic.swap = wr->atomic.swap;
        break;
    }
    if (q->type == QRDMA_BE_QPT_UD) {
        hw.wr.ud.ah = ah_get(be, q->pd, &wr->ud.av);
        if (!hw.wr.ud.ah) {
            return host_res_err();
        }
        hw.wr.ud.remote_qpn = wr->ud.remote_qpn;
        hw.wr.ud.remote_qkey = (wr->ud.remote_qkey & 0x80000000u)
                                   ? q->qkey
                                   : wr->ud.remote_qkey;
    }
post:
    ret = rc_err(be->v->post_send(q->qp, &hw, &bad));
    if (ret) {
        fr_retire(be, &note, false);   /* a bind's own host MR goes unused */
    }
    if (ret == -ENOMEM && q->sq_tail != q->sq_head) {
        /* The host's queue is full after all: a completion will free a slot. */
        q->sq_refused = true;
        return -ENOSPC;
    }
    if (ret) {
        return ret;
    }
    if (hw.opcode == IBV_WR_BIND_MW) {
        /*
         * A type 2 window's rkey is the caller's to keep (ibv_post_send(3)):
         * the next bind names the window by it.
         */
        hw.bind_mw.mw->rkey = hw.bind_mw.rkey;
    }
    q->sq[q->sq_tail % q->sq_size] = (struct vb_sq_entry){
        .wr_id = wr->wr_id, .wc_opcode = wc_opcode_of(wr->opcode), .fr = note
    };
    q->sq_tail++;
    return 0;
}

/*
 * Take the guest's new receive WQEs onto the host RQ, as many as it has
 * room for. A WQE whose SGE cannot be translated completes in error and
 * takes the QP to ERR, as a bad receive WQE does in sw mode.
 */
static void rq_fill(struct qrdma_be *be, struct qrdma_be_qp *q)
{
    /* IB takes receives from INIT on; a QP in RESET or ERR takes none. */
    while (q->state != QRDMA_BE_QPS_RESET && q->state != QRDMA_BE_QPS_ERR &&
           q->rq_posted < q->rq_size) {
        struct qrdma_be_recv_wr rw;
        struct ibv_sge sge[VB_MAX_HOST_SGE];
        struct ibv_recv_wr hw, *bad = NULL;
        unsigned i, n = 0;
        int ret = be->cbs.get_recv(be->opaque, q->qp_id, &rw);

        if (ret == -ENOENT) {
            return;
        }
        if (ret) {
            /* The core completed the unusable WQE; the QP fails. */
            qp_error(be, q);
            be->cbs.event(be->opaque, QRDMA_BE_EV_QP_FATAL, q->qp_id);
            return;
        }
        for (i = 0; !ret && i < rw.num_sge && i < QRDMA_BE_MAX_SGE; i++) {
            ret = sge_to_host(be, q->pd, &rw.sg_list[i], sge, &n,
                              q->max_recv_sge);
        }
        memset(&hw, 0, sizeof(hw));
        hw.wr_id = rw.wr_id;
        hw.sg_list = n ? sge : NULL;
        hw.num_sge = (int)n;
        if (ret || be->v->post_recv(q->qp, &hw, &bad)) {
            struct qrdma_be_wc wc = {
                .wr_id = rw.wr_id,
                .opcode = QRDMA_BE_WC_RECV,
                .status = ret == -EACCES ? QRDMA_BE_WC_LOC_PROT_ERR
                                         : QRDMA_BE_WC_LOC_QP_OP_ERR,
            };

            qp_error(be, q);
            be->cbs.complete(be->opaque, q->qp_id, &wc);
            return;
        }
        q->rq_posted++;
    }
}

static void vb_recv_doorbell(struct qrdma_be *be, struct qrdma_be_qp *q)
{
    if (q->gsi) {
        gsi_deliver(be, q);
        return;
    }
    rq_fill(be, q);
}

/* ---- SRQs ---------------------------------------------------------------- */

/*
 * Take the guest's new SRQ WQEs onto the host SRQ, as many as it has room
 * for. The wr_id the core gave names the SRQ WQE in the completion of
 * whichever QP takes it. A WQE that cannot be translated (a bad lkey)
 * has no QP to complete in error yet: the SRQ raises SRQ_ERR and the WQE
 * is dropped, as a malformed SRQ WQE is (hw-spec section 19.3).
 */
static void srq_fill(struct qrdma_be *be, struct qrdma_be_srq *srq)
{
    uint32_t tries = 0;

    while (srq->posted < srq->size && tries++ < srq->size) {
        struct qrdma_be_recv_wr rw;
        struct ibv_sge sge[VB_MAX_HOST_SGE];
        struct ibv_recv_wr hw, *bad = NULL;
        unsigned i, n = 0;
        int ret = be->cbs.get_srq_recv(be->opaque, srq->srq_id, &rw);

        if (ret == -ENOENT) {
            return;
        }
        if (ret) {
            /* unusable: the core raised SRQ_ERROR and skipped it */
            continue;
        }
        for (i = 0; !ret && i < rw.num_sge && i < QRDMA_BE_MAX_SGE; i++) {
            ret = sge_to_host(be, srq->pd, &rw.sg_list[i], sge, &n,
                              srq->max_sge);
        }
        memset(&hw, 0, sizeof(hw));
        hw.wr_id = rw.wr_id;
        hw.sg_list = n ? sge : NULL;
        hw.num_sge = (int)n;
        if (ret || be->v->post_srq_recv(srq->srq, &hw, &bad)) {
            be->cbs.event(be->opaque, QRDMA_BE_EV_SRQ_ERR, srq->srq_id);
            continue;
        }
        srq->posted++;
    }
}

/* Arm (limit > 0) or disarm the host SRQ's limit event. */
static int srq_arm(struct qrdma_be *be, struct qrdma_be_srq *srq,
                   uint32_t limit)
{
    struct ibv_srq_attr attr = { .srq_limit = limit };

    return rc_err(be->v->modify_srq(srq->srq, &attr, IBV_SRQ_LIMIT));
}

static void srq_free(struct qrdma_be *be, struct qrdma_be_srq *srq)
{
    if (srq->srq) {
        be->v->destroy_srq(srq->srq);
    }
    free(srq);
}

static int vb_srq_create(struct qrdma_be *be,
                         const struct qrdma_be_srq_init *init,
                         struct qrdma_be_srq **srqp)
{
    struct ibv_srq_init_attr attr;
    struct qrdma_be_srq *srq;
    struct vb_pd *p;
    int ret;

    if (!init->max_wr || init->srq_id >= VB_MAX_ID) {
        return -EINVAL;
    }
    p = pd_get(be, init->pd);
    if (!p) {
        return host_res_err();
    }
    srq = calloc(1, sizeof(*srq));
    if (!srq) {
        return -ENOMEM;
    }
    srq->srq_id = init->srq_id;
    srq->pd = init->pd;
    srq->size = init->max_wr;
    memset(&attr, 0, sizeof(attr));
    attr.srq_context = srq;
    attr.attr.max_wr = init->max_wr;
    /*
     * A DMA-MR SGE may become two host SGEs: ask for the room, or make do
     * without.
     */
    attr.attr.max_sge = init->max_sge ? 2 * init->max_sge : 1;
    if (attr.attr.max_sge > VB_MAX_HOST_SGE) {
        attr.attr.max_sge = VB_MAX_HOST_SGE;
    }
    srq->srq = be->v->create_srq(p->pd, &attr);
    if (!srq->srq && errno == EINVAL && init->max_sge &&
        attr.attr.max_sge > init->max_sge) {
        attr.attr.max_sge = init->max_sge;
        srq->srq = be->v->create_srq(p->pd, &attr);
    }
    if (!srq->srq) {
        ret = host_res_err();
        goto err_free;
    }
    srq->max_sge = attr.attr.max_sge;
    if (init->limit) {
        ret = srq_arm(be, srq, init->limit);
        if (ret) {
            goto err_free;
        }
    }
    ret = srq_table_put(be, init->srq_id, srq);
    if (ret) {
        goto err_free;
    }
    *srqp = srq;
    return 0;

err_free:
    srq_free(be, srq);
    return ret;
}

static int vb_srq_modify(struct qrdma_be *be, struct qrdma_be_srq *srq,
                         uint32_t limit)
{
    /* Fill first: the host counts only the WQEs it holds against the limit. */
    srq_fill(be, srq);
    return srq_arm(be, srq, limit);
}

static void vb_srq_destroy(struct qrdma_be *be, struct qrdma_be_srq *srq)
{
    if (srq->srq_id < be->nsrqs && be->srqs[srq->srq_id] == srq) {
        be->srqs[srq->srq_id] = NULL;
    }
    srq_free(be, srq);
}

/* ---- completions and events ---------------------------------------------- */

/*
 * One host completion of QP q, from its send CQ or its receive CQ, to the core.
 */
static void complete_one(struct qrdma_be *be, struct qrdma_be_qp *q,
                         const struct ibv_wc *hw, bool recv)
{
    struct qrdma_be_wc wc;
    struct vb_mr *m;

    memset(&wc, 0, sizeof(wc));
    wc.wr_id = hw->wr_id;
    wc.status = hw->status;
    wc.vendor_err = hw->vendor_err;
    if (recv) {
        /*
         * verbs leaves opcode undefined on an error: the receive side says it
         * all.
         */
        wc.opcode = hw->status == IBV_WC_SUCCESS ? hw->opcode
                                                 : QRDMA_BE_WC_RECV;
        wc.byte_len = hw->byte_len;
        wc.src_qp = hw->src_qp;
        wc.wc_flags = hw->wc_flags &
                      (IBV_WC_GRH | IBV_WC_WITH_IMM | IBV_WC_WITH_INV);
        /*
         * ibv_wc does not say whether the message was solicited; say it
         * was, so an ARM_SOLICITED CQ never misses one (it may wake for
         * an unsolicited one, which consumers tolerate).
         */
        wc.wc_flags |= QRDMA_BE_WC_SOLICITED;
        m = recv_invalidated(be, q, hw);    /* NULL with immediate data */
        if (hw->wc_flags & IBV_WC_WITH_IMM) {
            wc.imm_data = hw->imm_data;
        } else if (m) {
            /*
             * The host invalidated the window; the core's table follows, by
             * STag.
             */
            be->cbs.invalidate(be->opaque, m->pd, q->qp_id, m->stag);
            /* every bind of it ran: the peer had the rkey of the last */
            fr_off_below(be, m, m->next_seq);
            wc.wc_flags |= QRDMA_BE_WC_WITH_INV;
            wc.invalidated_stag = hw->invalidated_rkey;
        } else if (hw->wc_flags & IBV_WC_WITH_INV) {
            wc.invalidated_stag = hw->invalidated_rkey;
        }
        if (q->srq) {
            if (q->srq->posted) {
                q->srq->posted--;
            }
        } else if (q->rq_posted) {
            q->rq_posted--;
        }
    } else {
        uint32_t found = 0;

        /*
         * Retire the WR and the unsignaled ones before it (the host reports
         * none of those).
         */
        wc.opcode = QRDMA_BE_WC_SEND;
        while (q->sq_head != q->sq_tail && found++ < q->sq_size) {
            struct vb_sq_entry *e = &q->sq[q->sq_head % q->sq_size];

            q->sq_head++;
            if (e->wr_id == hw->wr_id) {
                /*
                 * The WR's own: verbs leaves it undefined on errors, and a
                 * FAST_REG ran as a bind.
                 */
                wc.opcode = e->wc_opcode;
                fr_retire(be, &e->fr, hw->status == IBV_WC_SUCCESS);
                break;
            }
            /*
             * An unsignaled WR before it ran, unless this one is flushed:
             * the WR that failed first is reported first, and those before
             * it ran; after it, every WR is flushed.
             */
            fr_retire(be, &e->fr, hw->status != IBV_WC_WR_FLUSH_ERR);
        }
        wc.byte_len = hw->byte_len;
    }
    if (hw->status != IBV_WC_SUCCESS) {
        /* An error completion leaves the host QP in ERR (flushes follow). */
        q->state = QRDMA_BE_QPS_ERR;
    }
    be->cbs.complete(be->opaque, q->qp_id, &wc);
}

/*
 * Read the channel's events: each marks its QP due and re-arms the CQ before it
 * is drained.
 */
static void channel_events(struct qrdma_be *be)
{
    struct ibv_cq *cq;
    void *ctx;
    unsigned guard = 0;

    while (guard++ < 4096 && !be->v->get_cq_event(be->ch, &cq, &ctx)) {
        struct qrdma_be_qp *q = ctx;

        be->v->ack_cq_events(cq, 1);
        be->v->req_notify_cq(cq, 0);
        q->due = true;
    }
}

static void async_events(struct qrdma_be *be)
{
    struct ibv_async_event ev;
    unsigned guard = 0;

    while (guard++ < 1024 && !be->v->get_async_event(be->ctx, &ev)) {
        struct qrdma_be_qp *q;

        switch (ev.event_type) {
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
            q = ev.element.qp->qp_context;
            q->state = QRDMA_BE_QPS_ERR;
            be->cbs.event(be->opaque, (enum qrdma_be_event)ev.event_type,
                          q->qp_id);
            break;
        case IBV_EVENT_COMM_EST:
        case IBV_EVENT_SQ_DRAINED:
        case IBV_EVENT_QP_LAST_WQE_REACHED:
            q = ev.element.qp->qp_context;
            be->cbs.event(be->opaque, (enum qrdma_be_event)ev.event_type,
                          q->qp_id);
            break;
        case IBV_EVENT_SRQ_LIMIT_REACHED:
        case IBV_EVENT_SRQ_ERR: {
            struct qrdma_be_srq *srq = ev.element.srq->srq_context;

            be->cbs.event(be->opaque,
                          ev.event_type == IBV_EVENT_SRQ_ERR
                              ? QRDMA_BE_EV_SRQ_ERR
                              : QRDMA_BE_EV_SRQ_LIMIT,
                          srq->srq_id);
            break;
        }
        case IBV_EVENT_CQ_ERR:
            q = ev.element.cq->cq_context;
            be->cbs.event(be->opaque, QRDMA_BE_EV_CQ_ERR,
                          ev.element.cq == q->scq ? q->send_cq_id
                                                  : q->recv_cq_id);
            break;
        case IBV_EVENT_PORT_ACTIVE:
        case IBV_EVENT_PORT_ERR:
        case IBV_EVENT_GID_CHANGE:
            if (ev.element.port_num != be->cfg.ibport) {
                break;
            }
            /* fall through */
        case IBV_EVENT_DEVICE_FATAL:
            /* The guest's port follows the host's: the core reads it again. */
            be->cbs.event(be->opaque, QRDMA_BE_EV_PORT_CHANGE, 0);
            break;
        default:
            break;
        }
        be->v->ack_async_event(&ev);
    }
}

/*
 * Take what the guest posted to its SRQs; the deadline to look again
 * while a host SRQ has room (the guest may post without a doorbell).
 */
static uint64_t srqs_fill(struct qrdma_be *be)
{
    bool room = false;
    uint32_t i;

    for (i = 0; i < be->nsrqs; i++) {
        struct qrdma_be_srq *srq = be->srqs[i];

        if (srq) {
            srq_fill(be, srq);
            room |= srq->posted < srq->size;
        }
    }
    return room ? be->cbs.now_ns(be->opaque) + VB_SRQ_POLL_NS : UINT64_MAX;
}

/*
 * Which of the fds behind wait_fd have something to read (VB_READY_*):
 * one epoll_wait in place of a read that finds nothing on each of them at
 * every pass of the data path. A CM proxy without an fd is always read.
 */
static unsigned fds_ready(struct qrdma_be *be)
{
    struct epoll_event ev[3];
    unsigned ready = 0;
    int i, n;

    n = epoll_wait(be->epfd, ev, sizeof(ev) / sizeof(ev[0]), 0);
    if (n < 0) {
        return VB_READY_CHANNEL | VB_READY_ASYNC | VB_READY_CM;
    }
    for (i = 0; i < n; i++) {
        ready |= ev[i].data.u32;
    }
    if (be->cm && vb_cm_fd(be->cm) < 0) {
        ready |= VB_READY_CM;
    }
    return ready;
}

static uint64_t vb_poll(struct qrdma_be *be, unsigned budget)
{
    struct ibv_wc wc[VB_POLL_BATCH];
    unsigned done = 0, ready = fds_ready(be);
    uint64_t deadline, cm_deadline;
    uint32_t i;

    if (ready & VB_READY_ASYNC) {
        async_events(be);
    }
    if (ready & VB_READY_CHANNEL) {
        channel_events(be);
    }
    if (be->cm && (ready & VB_READY_CM)) {
        vb_cm_poll(be->cm);
    } else if (be->cm) {
        vb_cm_poll_deadlines(be->cm);   /* its guest deadlines still run */
    }
    for (i = 0; i < be->nqps; i++) {
        struct qrdma_be_qp *q = be->qps[i];
        int n, k;

        if (q && q->gsi) {
            gsi_run(be, q);
            continue;
        }
        if (!q || !q->due) {
            continue;
        }
        q->due = false;
        while (done < budget &&
               (n = be->v->poll_cq(q->scq, VB_POLL_BATCH, wc)) > 0) {
            for (k = 0; k < n; k++) {
                complete_one(be, q, &wc[k], false);
            }
            done += n;
        }
        while (done < budget &&
               (n = be->v->poll_cq(q->rcq, VB_POLL_BATCH, wc)) > 0) {
            for (k = 0; k < n; k++) {
                complete_one(be, q, &wc[k], true);
            }
            done += n;
        }
        if (done >= budget) {
            q->due = true;      /* maybe more: come back */
            return be->cbs.now_ns(be->opaque);
        }
        if (q->sq_refused && q->sq_tail - q->sq_head < q->sq_size) {
            q->sq_refused = false;
            be->cbs.sq_space(be->opaque, q->qp_id);
        }
        rq_fill(be, q);
    }
    deadline = srqs_fill(be);
    cm_deadline = be->cm ? vb_cm_deadline(be->cm) : UINT64_MAX;
    return cm_deadline < deadline ? cm_deadline : deadline;
}

static int vb_wait_fd(struct qrdma_be *be)
{
    return be->epfd;
}

int qrdma_be_verbs_wait_fd(struct qrdma_be *be)
{
    return be ? be->epfd : -1;
}

/* ---- the backend --------------------------------------------------------- */

/* Every host object but the device, the channel and the fds. */
static void drop_objects(struct qrdma_be *be)
{
    uint32_t i;
    unsigned k;

    for (i = 0; i < be->nqps; i++) {
        if (be->qps[i]) {
            qp_free(be, be->qps[i]);
            be->qps[i] = NULL;
        }
    }
    for (i = 0; i < be->nsrqs; i++) {
        if (be->srqs[i]) {
            srq_free(be, be->srqs[i]);
            be->srqs[i] = NULL;
        }
    }
    for (i = 0; i < be->nmrs; i++) {
        if (be->mrs[i].live) {
            mr_release(be, &be->mrs[i]);
        }
    }
    for (k = 0; k < VB_AH_CACHE; k++) {
        if (be->ahs[k].live) {
            be->v->destroy_ah(be->ahs[k].ah);
        }
    }
    memset(be->ahs, 0, sizeof(be->ahs));
    be->ah_next = 0;
    for (i = 0; i < VB_MAX_PD; i++) {
        struct vb_pd *p = be->pds[i];

        if (!p) {
            continue;
        }
        for (k = 0; k < QRDMA_BE_VERBS_MAX_RAM; k++) {
            if (p->dma[k]) {
                be->v->dereg_mr(p->dma[k]);
            }
        }
        be->v->dealloc_pd(p->pd);
        free(p);
        be->pds[i] = NULL;
    }
}

static void vb_destroy(struct qrdma_be *be)
{
    if (!be) {
        return;
    }
    if (be->pds) {
        drop_objects(be);
    }
    cm_stop(be);
    if (be->epfd >= 0) {
        close(be->epfd);
    }
    if (be->ch) {
        be->v->destroy_comp_channel(be->ch);
    }
    if (be->ctx) {
        be->v->close_device(be->ctx);
    }
    free(be->pds);
    free(be->qps);
    free(be->srqs);
    free(be->mrs);
    free(be);
}

static int vb_reset(struct qrdma_be *be)
{
    drop_objects(be);
    if (be->cm) {
        vb_cm_reset(be->cm);
    }
    return 0;
}

/* Mb/s of a host port: per-lane rate times lanes (IBTA vol. 1 14.2.5.6). */
static uint32_t port_mbps(const struct ibv_port_attr *a)
{
    static const struct {
        uint8_t speed;
        uint32_t mbps;
    } lane[] = {
        { 1, 2500 },  { 2, 5000 },   { 4, 10000 },   { 8, 10000 },
        { 16, 14000 }, { 32, 25000 }, { 64, 50000 }, { 128, 100000 },
    };
    static const struct {
        uint8_t width;
        uint32_t lanes;
    } width[] = { { 1, 1 }, { 2, 4 }, { 4, 8 }, { 8, 12 }, { 16, 2 } };
    uint32_t mbps = 0, lanes = 0;
    unsigned i;

    for (i = 0; i < sizeof(lane) / sizeof(lane[0]); i++) {
        if (a->active_speed == lane[i].speed) {
            mbps = lane[i].mbps;
        }
    }
    for (i = 0; i < sizeof(width) / sizeof(width[0]); i++) {
        if (a->active_width == width[i].width) {
            lanes = width[i].lanes;
        }
    }
    return mbps * lanes;
}

/*
 * Read the host port: its state and speed, and which of the configured
 * GID indexes hold a GID now (a host address removed leaves its entry
 * empty, and the guest then cannot use it).
 */
static int port_read(struct qrdma_be *be, struct qrdma_be_port *out)
{
    static const uint8_t zero_gid[16];
    struct ibv_port_attr attr;
    unsigned i;

    memset(out, 0, sizeof(*out));
    if (be->v->query_port(be->ctx, be->cfg.ibport, &attr)) {
        return host_err();
    }
    out->active = attr.state == IBV_PORT_ACTIVE;
    out->speed_mbps = port_mbps(&attr);
    for (i = 0; i < be->ngids; i++) {
        union ibv_gid gid;

        if (be->v->query_gid(be->ctx, be->cfg.ibport, be->gid_indexes[i],
                             &gid) ||
            !memcmp(gid.raw, zero_gid, 16)) {
            continue;
        }
        memcpy(out->gid[out->ngids], gid.raw, 16);
        out->gid_index[out->ngids++] = be->gid_indexes[i];
    }
    return 0;
}

static int vb_port(struct qrdma_be *be, struct qrdma_be_port *out)
{
    int ret = port_read(be, &be->port);

    *out = be->port;
    return ret;
}

/*
 * The configured GID indexes at create: each must hold a GID, and one of
 * RoCE v2 (the guest's only kind) where the host says which.
 */
static bool gids_check(struct qrdma_be *be, char *err, size_t err_len)
{
    static const uint8_t zero_gid[16];
    unsigned i, k;

    for (i = 0; i < be->ngids; i++) {
        uint8_t index = be->gid_indexes[i];
        union ibv_gid gid;
        uint32_t type;

        for (k = 0; k < i; k++) {
            if (be->gid_indexes[k] == index) {
                snprintf(err, err_len,
                         "backend=verbs: host GID index %u is named twice",
                         index);
                return false;
            }
        }
        if (be->v->query_gid(be->ctx, be->cfg.ibport, index, &gid) ||
            !memcmp(gid.raw, zero_gid, 16)) {
            snprintf(err, err_len,
                     "backend=verbs: %s port %u has no GID at index %u",
                     be->ibdev, be->cfg.ibport, index);
            return false;
        }
        if (!be->v->query_gid_type(be->ctx, be->cfg.ibport, index, &type) &&
            type != IBV_GID_TYPE_ROCE_V2) {
            snprintf(err, err_len,
                     "backend=verbs: %s port %u GID index %u is not RoCE v2 "
                     "(type %u), which is all the guest speaks; name a RoCE "
                     "v2 GID (ibv_devinfo -v lists them)",
                     be->ibdev, be->cfg.ibport, index, type);
            return false;
        }
    }
    return true;
}

static struct qrdma_be *vb_create(const struct qrdma_be_callbacks *cb,
                                  void *opaque,
                                  const struct qrdma_be_params *params,
                                  char *err, size_t err_len)
{
    const struct qrdma_be_verbs_config *cfg = params->backend_config;
    const struct qrdma_be_fault *f = &params->fault;
    struct ibv_port_attr port;
    struct epoll_event ev = { .events = EPOLLIN };
    struct qrdma_be *be;

    if (!cfg || !cfg->ibdev || !cfg->ibdev[0]) {
        snprintf(err, err_len,
                 "backend=verbs needs a host RDMA device (ibdev=)");
        return NULL;
    }
    if (f->loss_ppm || f->dup_ppm || f->reorder_ppm || f->corrupt_ppm ||
        f->delay_ns) {
        snprintf(
            err, err_len,
            "backend=verbs: fault injection (x-fault-*) is the sw backend's");
        return NULL;
    }
    if (cfg->ngids > QRDMA_BE_PORT_MAX_GIDS) {
        snprintf(err, err_len,
                 "backend=verbs: more than %d host GID indexes",
                 QRDMA_BE_PORT_MAX_GIDS);
        return NULL;
    }
    if (cfg->nram > QRDMA_BE_VERBS_MAX_RAM) {
        snprintf(err, err_len,
                 "backend=verbs: guest RAM in more than %d ranges",
                 QRDMA_BE_VERBS_MAX_RAM);
        return NULL;
    }
    be = calloc(1, sizeof(*be));
    if (!be) {
        snprintf(err, err_len, "backend=verbs: out of memory");
        return NULL;
    }
    be->epfd = -1;
    be->cbs = *cb;
    be->opaque = opaque;
    be->cfg = *cfg;
    snprintf(be->ibdev, sizeof(be->ibdev), "%s", cfg->ibdev);
    be->cfg.ibdev = be->ibdev;
    be->cfg.ibport = cfg->ibport ? cfg->ibport : 1;
    be->v = cfg->verbs ? cfg->verbs : &qrdma_vb_libibverbs;
    if (cfg->ngids) {
        be->ngids = cfg->ngids;
        memcpy(be->gid_indexes, cfg->gid_indexes, cfg->ngids);
    } else {
        be->ngids = 1;
        be->gid_indexes[0] = cfg->gid_index;
    }
    be->page = sysconf(_SC_PAGESIZE);
    be->pds = calloc(VB_MAX_PD, sizeof(*be->pds));
    if (!be->pds) {
        snprintf(err, err_len, "backend=verbs: out of memory");
        goto fail;
    }
    be->ctx = be->v->open_device(be->ibdev);
    if (!be->ctx) {
        snprintf(err, err_len, "backend=verbs: host RDMA device '%s' not found",
                 be->ibdev);
        goto fail;
    }
    if (be->v->query_port(be->ctx, be->cfg.ibport, &port)) {
        snprintf(err, err_len, "backend=verbs: %s has no port %u", be->ibdev,
                 be->cfg.ibport);
        goto fail;
    }
    /*
     * A port that is not ACTIVE is taken: the guest sees it down until the
     * host's PORT_ACTIVE event.
     */
    if (!gids_check(be, err, err_len)) {
        goto fail;
    }
    if (port_read(be, &be->port)) {
        snprintf(err, err_len, "backend=verbs: %s port %u: %s", be->ibdev,
                 be->cfg.ibport, strerror(errno));
        goto fail;
    }
    be->ch = be->v->create_comp_channel(be->ctx);
    if (!be->ch || set_nonblock(be->ch->fd) ||
        set_nonblock(be->ctx->async_fd)) {
        snprintf(err, err_len, "backend=verbs: %s: no completion channel (%s)",
                 be->ibdev, strerror(errno));
        goto fail;
    }
    be->epfd = epoll_create1(EPOLL_CLOEXEC);
    ev.data.u32 = VB_READY_CHANNEL;
    if (be->epfd < 0 || epoll_ctl(be->epfd, EPOLL_CTL_ADD, be->ch->fd, &ev)) {
        snprintf(err, err_len, "backend=verbs: epoll: %s", strerror(errno));
        goto fail;
    }
    ev.data.u32 = VB_READY_ASYNC;
    if (epoll_ctl(be->epfd, EPOLL_CTL_ADD, be->ctx->async_fd, &ev)) {
        snprintf(err, err_len, "backend=verbs: epoll: %s", strerror(errno));
        goto fail;
    }
    if (cfg->cm_proxy && cm_start(be, err, err_len)) {
        if (!cfg->cm_optional) {
            goto fail;
        }
        /* no GSI QP then (carried); the embedding reports why */
        if (cfg->cm_off_why && cfg->cm_off_why_len) {
            snprintf(cfg->cm_off_why, cfg->cm_off_why_len, "%s", err);
        }
        cm_stop(be);
        err[0] = 0;
    }
    return be;

fail:
    vb_destroy(be);
    return NULL;
}

const struct qrdma_be_ops qrdma_be_verbs_ops = {
    .name = "verbs",
    /* No guest memory windows yet, no transport counters (docs/backends.md). */
    .carries = VB_CARRIES,
    .carried = vb_carried,
    .create = vb_create,
    .reset = vb_reset,
    .destroy = vb_destroy,
    .qp_create = vb_qp_create,
    .qp_modify = vb_qp_modify,
    .qp_state = vb_qp_state,
    .qp_destroy = vb_qp_destroy,
    .post_send = vb_post_send,
    .recv_doorbell = vb_recv_doorbell,
    .srq_create = vb_srq_create,
    .srq_modify = vb_srq_modify,
    .srq_destroy = vb_srq_destroy,
    .mr_register = vb_mr_register,
    .mr_alloc_stag = vb_mr_alloc_stag,
    .mr_deregister = vb_mr_deregister,
    .wait_fd = vb_wait_fd,
    .poll = vb_poll,
    .port = vb_port,
};
