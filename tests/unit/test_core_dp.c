/*
 * End-to-end tests of the device core's data path (qrdma_dp.c) with the
 * software RoCEv2 transport, no VM: two device cores in one process, each
 * with its own fake guest RAM and embedding, wired back to back. Frames one
 * core sends are delivered to the other through qrdma_core_lan_receive()
 * (so the LAN function's RoCE steering is on the path), kicks run
 * qrdma_core_run(), and one fake clock drives now_ns and the data-path
 * timers (qrdma_core_timer). Each side is brought up as a driver would:
 * CQP, GID table (IPv4-mapped GIDs), CEQ 0, AEQ, FPM layout backed by one
 * direct SD, an MR over a data area (REG_MR LEVELS 0); CQs and QPs are
 * created and moved to RTS through the CQP, WQEs are written into the rings
 * in fake RAM as a provider writes them (VALID last, polarity per lap) and
 * doorbells are rung through the doorbell BAR.
 *
 * The suite has its own small embedding (struct side) rather than
 * fake_env.c's single global core; it shares only unit.h with the others.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/qrdma_core.h"
#include "unit.h"

int unit_failures;

/* ---- the two sides' embedding ------------------------------------------------------- */

#define RAM_BASE    0x100000ull             /* guest-physical address of each side's RAM */
#define RAM_SIZE    (4u << 20)

/* Guest memory layout, the same on both sides. */
#define CQP_CTX     (RAM_BASE + 0x0000)
#define CQP_SHADOW  (RAM_BASE + 0x0040)
#define CQP_SQ      (RAM_BASE + 0x1000)     /* 64 WQEs of 64 bytes */
#define CCQ         (RAM_BASE + 0x2000)     /* 64 CQEs of 32 bytes */
#define FPM_BUF     (RAM_BASE + 0x3000)
#define INFO        (RAM_BASE + 0x3400)     /* QP create / modify info */
#define AV_BUF      (RAM_BASE + 0x3c00)
#define CEQ_RING    (RAM_BASE + 0x4000)     /* 64 CEQEs of 8 bytes */
#define AEQ_RING    (RAM_BASE + 0x5000)     /* 64 AEQEs of 16 bytes */
#define CQ_SHADOW(c) (RAM_BASE + 0x6000 + 64ull * (c))
#define SRQ_SHADOW  (RAM_BASE + 0x7000)
#define SQ_RING(q)  (RAM_BASE + 0x10000 + 0x8000ull * (q))
#define RQ_RING(q)  (SQ_RING(q) + 0x4000)
#define CQ_RING(c)  (RAM_BASE + 0x90000 + 0x4000ull * (c))
#define SRQ_RING    (RAM_BASE + 0xd0000)
#define DATA        (RAM_BASE + 0x100000)   /* 1 MB covered by MR_STAG */
#define DATA_LEN    (1u << 20)
#define HMC_RAM     0x400000ull             /* one direct SD: FPM [0, 1 MB) is RAM */

#define EQ_LOG2     6
#define CQP_LOG2    6

#define N_QP        16
#define N_CQ        16
#define N_SRQ       4
#define N_MR        16
#define N_AH        8
#define N_PBLE      64

#define PD          1
#define MR_INDEX    1
#define MR_KEY      0x11
#define MR_STAG     ((uint32_t)MR_INDEX << QRDMA_STAG_INDEX_SHIFT | MR_KEY)
#define IOVA        0x50000000ull           /* the MR's IOVA for DATA: not the address */
#define MR_ACCESS   (QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE | \
                     QRDMA_ACCESS_REMOTE_READ | QRDMA_ACCESS_REMOTE_ATOMIC)

#define LOG_N       32

struct side {
    struct qrdma_core core;
    uint8_t *ram;
    int idx;
    uint8_t mac[6];
    uint8_t gid[16];
    /* the embedding */
    unsigned kicks;
    uint64_t timer;                 /* UINT64_MAX: not armed */
    int guest_errors;
    char log[LOG_N][256];
    int log_n;
    int frames_sent;
    int irqs;
    /* the driver: CQP */
    unsigned cqp_next, ccq_head;
    bool cqp_valid, ccq_valid;
    unsigned aeq_head, ceq_head;
    /* the provider: ring geometry and counts (free running) */
    struct {
        unsigned sq_log2, sq_stride_log2, rq_log2, rq_stride_log2;
        uint32_t sq_posted, rq_posted;
    } qp[N_QP];
    struct {
        unsigned log2;
        uint32_t head;
    } cq[N_CQ];
    unsigned srq_log2, srq_stride_log2;
    uint32_t srq_posted;
};

static struct side sides[2];
#define SA (&sides[0])
#define SB (&sides[1])

static uint64_t now_ns = 1000000000ull;

/* The device's fault-injection hook (cfg.fault) for the sides set up next. */
static typeof(((struct qrdma_core_config *)0)->fault) dev_fault;
static unsigned rc_retry_cnt = 3;

struct frame {
    struct frame *next;
    struct side *dst;
    size_t len;
    uint8_t data[];
};

static struct frame *fq_head, **fq_tail = &fq_head;
static int frames_in_flight;
static int drop_frames;             /* frames to drop (both directions) before delivering */

static void fq_clear(void)
{
    while (fq_head) {
        struct frame *f = fq_head;

        fq_head = f->next;
        free(f);
    }
    fq_tail = &fq_head;
    frames_in_flight = 0;
}

static void env_guest_error(void *opaque, const char *msg)
{
    struct side *s = opaque;

    if (s->log_n < LOG_N) {
        snprintf(s->log[s->log_n], sizeof(s->log[0]), "%s", msg);
    }
    s->log_n++;
    s->guest_errors++;
}

static void env_schedule_pe_ready(void *opaque, uint64_t delay_ns)
{
}

static bool env_link_up(void *opaque)
{
    return true;
}

static bool in_ram(uint64_t addr, size_t len)
{
    return addr >= RAM_BASE && len <= RAM_SIZE && addr - RAM_BASE <= RAM_SIZE - len;
}

static int env_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    struct side *s = opaque;

    if (!in_ram(addr, len)) {
        return -1;
    }
    memcpy(buf, s->ram + (addr - RAM_BASE), len);
    return 0;
}

static int env_dma_write(void *opaque, uint64_t addr, const void *buf, size_t len)
{
    struct side *s = opaque;

    if (!in_ram(addr, len)) {
        return -1;
    }
    memcpy(s->ram + (addr - RAM_BASE), buf, len);
    return 0;
}

static void env_msix_notify(void *opaque, unsigned vector)
{
    ((struct side *)opaque)->irqs++;
}

static void env_send_frame(void *opaque, const uint8_t *data, size_t len)
{
    struct side *s = opaque;
    struct frame *f;

    s->frames_sent++;
    if (drop_frames > 0) {
        drop_frames--;
        return;
    }
    f = malloc(sizeof(*f) + len);
    CHECK(f != NULL);
    if (!f) {
        return;
    }
    f->next = NULL;
    f->dst = s == SA ? SB : SA;
    f->len = len;
    memcpy(f->data, data, len);
    *fq_tail = f;
    fq_tail = &f->next;
    frames_in_flight++;
}

static void env_kick(void *opaque, unsigned what)
{
    ((struct side *)opaque)->kicks |= what;
}

static void env_rx_ready(void *opaque)
{
}

static uint64_t env_now_ns(void *opaque)
{
    return now_ns;
}

static void env_timer_mod(void *opaque, uint64_t deadline_ns)
{
    ((struct side *)opaque)->timer = deadline_ns;
}

/* ---- guest memory of one side ------------------------------------------------------ */

static uint8_t *mem(struct side *s, uint64_t addr)
{
    CHECK(in_ram(addr, 1));
    return s->ram + (addr - RAM_BASE);
}

static void w8(struct side *s, uint64_t a, uint8_t v)
{
    *mem(s, a) = v;
}

static void w16(struct side *s, uint64_t a, uint16_t v)
{
    w8(s, a, v);
    w8(s, a + 1, v >> 8);
}

static void w32(struct side *s, uint64_t a, uint32_t v)
{
    w16(s, a, v);
    w16(s, a + 2, v >> 16);
}

static void w64(struct side *s, uint64_t a, uint64_t v)
{
    w32(s, a, (uint32_t)v);
    w32(s, a + 4, (uint32_t)(v >> 32));
}

static uint64_t r64(struct side *s, uint64_t a)
{
    const uint8_t *p = mem(s, a);
    uint64_t v = 0;
    int i;

    for (i = 7; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

/* Host pointer to byte off of the data area (the MR). */
static uint8_t *dbuf(struct side *s, uint64_t off)
{
    return mem(s, DATA + off);
}

static void fill(struct side *s, uint64_t off, size_t len, unsigned seed)
{
    uint8_t *p = dbuf(s, off);
    size_t i;

    for (i = 0; i < len; i++) {
        p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
    }
}

static void reg_w(struct side *s, uint32_t off, uint32_t v)
{
    qrdma_core_reg_write(&s->core, off, 4, v);
}

static uint32_t reg_r(struct side *s, uint32_t off)
{
    return qrdma_core_reg_read(&s->core, off, 4);
}

static bool logged(struct side *s, const char *needle)
{
    int i;

    for (i = 0; i < s->log_n && i < LOG_N; i++) {
        if (strstr(s->log[i], needle)) {
            return true;
        }
    }
    fprintf(stderr, "  side %c: no guest error containing \"%s\" among %d\n", 'A' + s->idx,
            needle, s->log_n);
    for (i = 0; i < s->log_n && i < LOG_N; i++) {
        fprintf(stderr, "    %s\n", s->log[i]);
    }
    return false;
}

static void no_errors(struct side *s)
{
    int i;

    CHECK_EQ(s->guest_errors, 0);
    for (i = 0; i < s->log_n && i < LOG_N; i++) {
        fprintf(stderr, "  side %c: guest error: %s\n", 'A' + s->idx, s->log[i]);
    }
}

static void log_clear(struct side *s)
{
    s->log_n = 0;
    s->guest_errors = 0;
}

/* ---- running ------------------------------------------------------------------------ */

/*
 * Run kicked work and deliver frames until both sides are quiet. With
 * timers, then fire the earliest data-path timer (moving the clock to it)
 * and go on, as long as one is due before limit.
 */
static void pump_until(bool timers, uint64_t limit)
{
    unsigned iter;

    for (iter = 0; iter < 200000; iter++) {
        bool busy = false;
        struct side *t = NULL;
        int i;

        for (i = 0; i < 2; i++) {
            struct side *s = &sides[i];
            unsigned what = s->kicks;

            if (what) {
                s->kicks = 0;
                qrdma_core_run(&s->core, what);
                busy = true;
            }
        }
        while (fq_head) {
            struct frame *f = fq_head;

            fq_head = f->next;
            if (!fq_head) {
                fq_tail = &fq_head;
            }
            frames_in_flight--;
            CHECK_EQ(qrdma_core_lan_receive(&f->dst->core, f->data, f->len), f->len);
            free(f);
            busy = true;
        }
        if (busy) {
            continue;
        }
        if (!timers) {
            return;
        }
        for (i = 0; i < 2; i++) {
            if (sides[i].timer != UINT64_MAX && (!t || sides[i].timer < t->timer)) {
                t = &sides[i];
            }
        }
        if (!t || t->timer > limit) {
            return;
        }
        if (t->timer > now_ns) {
            now_ns = t->timer;
        }
        t->timer = UINT64_MAX;
        qrdma_core_timer(&t->core);
    }
    CHECK(!"pump did not settle");
}

static void pump(void)
{
    pump_until(false, 0);
}

/* Pump, firing timers up to ms milliseconds from now. */
static void pump_ms(unsigned ms)
{
    pump_until(true, now_ns + ms * 1000000ull);
}

/* ---- the driver's CQP ---------------------------------------------------------------- */

static uint64_t last_status;

static unsigned major_of(uint64_t st)
{
    return (st & QRDMA_CCQ_CQE_MAJOR_MASK) >> QRDMA_CCQ_CQE_MAJOR_SHIFT;
}

/* Run one CQP command on side s; returns its status qword. */
static uint64_t cqp(struct side *s, uint8_t op, uint64_t a0, uint64_t a1, uint64_t a2,
                    uint64_t a3, uint64_t a4, uint64_t a5)
{
    const uint64_t args[6] = { a0, a1, a2, a3, a4, a5 };
    uint64_t w = CQP_SQ + 64ull * s->cqp_next, c;
    int i;

    for (i = 0; i < 6; i++) {
        w64(s, w + 8 * i, args[i]);
    }
    w64(s, w + 48, 0x5c00 + s->cqp_next);
    w64(s, w + 56, op | (s->cqp_valid ? QRDMA_CQP_WQE_VALID : 0));
    s->cqp_next = (s->cqp_next + 1) & ((1u << CQP_LOG2) - 1);
    if (!s->cqp_next) {
        s->cqp_valid = !s->cqp_valid;
    }
    reg_w(s, QRDMA_REG_CQP_DB, s->cqp_next);
    s->kicks &= ~QRDMA_WORK_CQP;
    qrdma_core_run(&s->core, QRDMA_WORK_CQP);

    c = CCQ + 32ull * s->ccq_head;
    if (!!(r64(s, c + 24) & QRDMA_CCQ_CQE_VALID) != s->ccq_valid) {
        CHECK(!"no CCQ completion");
        return ~0ull;
    }
    last_status = r64(s, c + 16);
    CHECK_EQ((last_status & QRDMA_CCQ_CQE_OPCODE_MASK) >> QRDMA_CCQ_CQE_OPCODE_SHIFT, op);
    s->ccq_head = (s->ccq_head + 1) & ((1u << CQP_LOG2) - 1);
    if (!s->ccq_head) {
        s->ccq_valid = !s->ccq_valid;
    }
    w64(s, CQP_SHADOW, s->ccq_head);
    return last_status;
}

#define CQP_OK(expr)                                                               \
    do {                                                                           \
        uint64_t st_ = (expr);                                                     \
        if (st_ & (QRDMA_CCQ_CQE_MAJOR_MASK | QRDMA_CCQ_CQE_MINOR_MASK)) {         \
            fprintf(stderr, "  %s:%d: CQP command failed: major %u minor %u\n",   \
                    __FILE__, __LINE__, major_of(st_),                             \
                    (unsigned)(st_ & QRDMA_CCQ_CQE_MINOR_MASK));                   \
            unit_failures++;                                                       \
        }                                                                          \
    } while (0)

/* ---- bring-up ---------------------------------------------------------------------- */

static void side_up(struct side *s, int idx)
{
    static const uint64_t counts[QRDMA_HMC_NUM_TYPES] = { N_QP, N_CQ, N_SRQ, N_MR, N_AH,
                                                          N_PBLE };
    struct qrdma_core_config cfg;
    struct qrdma_core_env env = {
        .opaque = s,
        .guest_error = env_guest_error,
        .schedule_pe_ready = env_schedule_pe_ready,
        .link_up = env_link_up,
        .dma_read = env_dma_read,
        .dma_write = env_dma_write,
        .msix_notify = env_msix_notify,
        .send_frame = env_send_frame,
        .kick = env_kick,
        .rx_ready = env_rx_ready,
        .now_ns = env_now_ns,
        .timer_mod = env_timer_mod,
    };
    uint8_t *ram = s->ram;
    char err[128] = "";
    unsigned t;

    qrdma_core_fini(&s->core);
    memset(s, 0, sizeof(*s));
    s->ram = ram ? ram : malloc(RAM_SIZE);
    memset(s->ram, 0, RAM_SIZE);
    s->idx = idx;
    s->timer = UINT64_MAX;
    s->cqp_valid = s->ccq_valid = true;
    /* 02:00:00:00:00:0a / 0b, GID ::ffff:10.0.0.1 / 2 */
    s->mac[0] = 0x02;
    s->mac[5] = 0x0a + idx;
    s->gid[10] = s->gid[11] = 0xff;
    s->gid[12] = 10;
    s->gid[15] = 1 + idx;

    qrdma_core_config_defaults(&cfg);
    memcpy(cfg.mac, s->mac, 6);
    cfg.pe_ready_delay_us = QRDMA_PE_READY_NEVER;
    cfg.fault = dev_fault;
    CHECK_EQ(qrdma_core_init(&s->core, &cfg, &env, err, sizeof(err)), 0);
    qrdma_core_reset(&s->core);
    qrdma_core_pe_ready(&s->core);
    /* The LAN station address is the RoCE MAC (reset loads the permanent one). */
    CHECK_EQ(reg_r(s, QRDMA_REG_LAN_MAC_LOW), 0x02);
    CHECK_EQ(reg_r(s, QRDMA_REG_LAN_MAC_HIGH), (0x0au + idx) << 8);

    /* CQP */
    w64(s, CQP_CTX, CQP_LOG2 | (uint64_t)CQP_LOG2 << QRDMA_CQP_CTX_CCQ_SIZE_SHIFT);
    w64(s, CQP_CTX + 8, CQP_SQ);
    w64(s, CQP_CTX + 16, CCQ);
    w64(s, CQP_CTX + 24, CQP_SHADOW);
    reg_w(s, QRDMA_REG_CCQP_CTX_HIGH, (uint32_t)(CQP_CTX >> 32));
    reg_w(s, QRDMA_REG_CCQP_CTX_LOW, (uint32_t)CQP_CTX);
    CHECK_EQ(reg_r(s, QRDMA_REG_CCQP_STATUS), QRDMA_CCQP_STATUS_DONE);

    /* GID 0: ::ffff:10.0.0.x, arg1 bytes 0..7 and arg2 bytes 8..15, little-endian. */
    {
        uint64_t hi = 0;
        int i;

        for (i = 15; i >= 8; i--) {
            hi = hi << 8 | s->gid[i];
        }
        CQP_OK(cqp(s, QRDMA_CQP_OP_ADD_GID, 0 | QRDMA_GID_TYPE_ROCE_V2_IPV4 << 8, 0, hi, 0, 0,
                   0));
    }
    CQP_OK(cqp(s, QRDMA_CQP_OP_CREATE_CEQ, 0 | EQ_LOG2 << QRDMA_EQ_SIZE_SHIFT, CEQ_RING, 0, 0,
               0, 0));
    CQP_OK(cqp(s, QRDMA_CQP_OP_CREATE_AEQ, EQ_LOG2 << QRDMA_EQ_SIZE_SHIFT, AEQ_RING, 0, 0, 0,
               0));
    for (t = 0; t < QRDMA_HMC_NUM_TYPES; t++) {
        w64(s, FPM_BUF + 8 * (1 + t), counts[t]);
    }
    CQP_OK(cqp(s, QRDMA_CQP_OP_COMMIT_FPM_VAL, FPM_BUF, 0, 0, 0, 0, 0));
    reg_w(s, QRDMA_REG_HMC_SD_DATA_LOW, (uint32_t)(HMC_RAM | QRDMA_HMC_SD_TYPE_DIRECT |
                                                   QRDMA_HMC_SD_VALID));
    reg_w(s, QRDMA_REG_HMC_SD_DATA_HIGH, (uint32_t)(HMC_RAM >> 32));
    reg_w(s, QRDMA_REG_HMC_SD_CMD, QRDMA_HMC_SD_CMD_WRITE | 0);

    /* The data MR: LEVELS 0, 4 KB pages, IOVA != address. */
    CQP_OK(cqp(s, QRDMA_CQP_OP_REG_MR, MR_STAG,
               PD | (uint64_t)MR_ACCESS << QRDMA_MR_ARG1_ACCESS_SHIFT |
               12ull << QRDMA_MR_ARG1_PAGE_SHIFT, IOVA, DATA_LEN, DATA, 0));
}

/* Both sides fresh; nothing on the wire, no timers. */
static void setup(void)
{
    fq_clear();
    drop_frames = 0;
    side_up(SA, 0);
    side_up(SB, 1);
    no_errors(SA);
    no_errors(SB);
}

/* ---- objects ------------------------------------------------------------------------- */

static void create_cq_ex(struct side *s, uint32_t id, unsigned log2, bool ceq)
{
    CQP_OK(cqp(s, QRDMA_CQP_OP_CREATE_CQ,
               id | (uint64_t)log2 << QRDMA_CQ_ARG0_SIZE_SHIFT |
               (ceq ? QRDMA_CQ_ARG0_CEQ_ENABLE : 0), 0xc0000 + id, CQ_RING(id), CQ_SHADOW(id),
               0, 0));
    s->cq[id].log2 = log2;
    s->cq[id].head = 0;
    w64(s, CQ_SHADOW(id), 0);
    w64(s, CQ_SHADOW(id) + 8, 0);
}

static void create_cq(struct side *s, uint32_t id)
{
    create_cq_ex(s, id, 4, false);
}

struct qp_spec {
    uint8_t type;
    uint8_t flags;
    uint16_t db_page;
    uint32_t send_cq, recv_cq, srq;
    unsigned sq_log2, sq_wqe_log2, rq_log2, rq_wqe_log2;
};

static const struct qp_spec rc_spec = {
    .type = QRDMA_QP_TYPE_RC, .send_cq = 1, .recv_cq = 2,
    .sq_log2 = 3, .sq_wqe_log2 = 8, .rq_log2 = 3, .rq_wqe_log2 = 6,
};

#define QPCTX(id) (0xa0000ull + (id))

static void create_qp(struct side *s, uint32_t id, const struct qp_spec *p)
{
    const bool srq = p->flags & QRDMA_QP_CREATE_SRQ;

    memset(mem(s, INFO), 0, 64);
    w32(s, INFO + offsetof(struct qrdma_qp_create_info, pd), PD);
    w8(s, INFO + offsetof(struct qrdma_qp_create_info, type), p->type);
    w8(s, INFO + offsetof(struct qrdma_qp_create_info, flags), p->flags);
    w16(s, INFO + offsetof(struct qrdma_qp_create_info, db_page), p->db_page);
    w32(s, INFO + offsetof(struct qrdma_qp_create_info, send_cq), p->send_cq);
    w32(s, INFO + offsetof(struct qrdma_qp_create_info, recv_cq), p->recv_cq);
    w32(s, INFO + offsetof(struct qrdma_qp_create_info, srq), p->srq);
    w8(s, INFO + offsetof(struct qrdma_qp_create_info, sq_size_log2), p->sq_log2);
    w8(s, INFO + offsetof(struct qrdma_qp_create_info, sq_wqe_log2), p->sq_wqe_log2);
    w8(s, INFO + offsetof(struct qrdma_qp_create_info, rq_size_log2), srq ? 0 : p->rq_log2);
    w8(s, INFO + offsetof(struct qrdma_qp_create_info, rq_wqe_log2), srq ? 0 : p->rq_wqe_log2);
    w64(s, INFO + offsetof(struct qrdma_qp_create_info, sq_addr), SQ_RING(id));
    w64(s, INFO + offsetof(struct qrdma_qp_create_info, rq_addr), srq ? 0 : RQ_RING(id));
    w64(s, INFO + offsetof(struct qrdma_qp_create_info, qp_ctx), QPCTX(id));
    CQP_OK(cqp(s, QRDMA_CQP_OP_CREATE_QP, id, INFO, 0, 0, 0, 0));
    memset(&s->qp[id], 0, sizeof(s->qp[id]));
    s->qp[id].sq_log2 = p->sq_log2;
    s->qp[id].sq_stride_log2 = p->sq_wqe_log2;
    s->qp[id].rq_log2 = p->rq_log2;
    s->qp[id].rq_stride_log2 = p->rq_wqe_log2;
}

#define MI(f) (INFO + offsetof(struct qrdma_qp_modify_info, f))

/* Start a modify info: the mask and new state, everything else 0. */
static void mod_begin(struct side *s, uint32_t mask, uint8_t state)
{
    memset(mem(s, INFO), 0, sizeof(struct qrdma_qp_modify_info));
    w32(s, MI(attr_mask), mask | QRDMA_QP_ATTR_STATE);
    w8(s, MI(state), state);
}

static uint64_t mod_run(struct side *s, uint32_t id)
{
    return cqp(s, QRDMA_CQP_OP_MODIFY_QP, id, INFO, 0, 0, 0, 0);
}

static void modify_state(struct side *s, uint32_t id, uint8_t state)
{
    mod_begin(s, 0, state);
    CQP_OK(mod_run(s, id));
}

/* An AV at addr toward side peer (its GID and MAC), source GID 0. */
static void write_av(struct side *s, uint64_t addr, const struct side *peer)
{
    memset(mem(s, addr), 0, sizeof(struct qrdma_av));
    memcpy(mem(s, addr + offsetof(struct qrdma_av, dgid)), peer->gid, 16);
    memcpy(mem(s, addr + offsetof(struct qrdma_av, dmac)), peer->mac, 6);
    w8(s, addr + offsetof(struct qrdma_av, hop_limit), 64);
}

#define PSN(s) (0x100u + 0x100u * (s)->idx)

/* RC QP id on s, RESET -> RTS, connected to QP peer_id of side peer. */
static void rc_to_rts(struct side *s, uint32_t id, struct side *peer, uint32_t peer_id,
                      unsigned rnr_retry)
{
    mod_begin(s, QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_PORT | QRDMA_QP_ATTR_ACCESS_FLAGS,
              QRDMA_QPS_INIT);
    w8(s, MI(port_num), 1);
    w32(s, MI(access_flags), QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE |
                             QRDMA_ACCESS_REMOTE_READ | QRDMA_ACCESS_REMOTE_ATOMIC);
    CQP_OK(mod_run(s, id));

    mod_begin(s, QRDMA_QP_ATTR_AV | QRDMA_QP_ATTR_PATH_MTU | QRDMA_QP_ATTR_DEST_QPN |
              QRDMA_QP_ATTR_RQ_PSN | QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC |
              QRDMA_QP_ATTR_MIN_RNR_TIMER, QRDMA_QPS_RTR);
    w8(s, MI(path_mtu), 3);                 /* 1024: larger messages take several packets */
    w32(s, MI(dest_qpn), peer_id);
    w32(s, MI(rq_psn), PSN(peer));
    w8(s, MI(max_dest_rd_atomic), 4);
    w8(s, MI(min_rnr_timer), 1);            /* 10 us */
    write_av(s, MI(av), peer);
    CQP_OK(mod_run(s, id));

    mod_begin(s, QRDMA_QP_ATTR_SQ_PSN | QRDMA_QP_ATTR_TIMEOUT | QRDMA_QP_ATTR_RETRY_CNT |
              QRDMA_QP_ATTR_RNR_RETRY | QRDMA_QP_ATTR_MAX_QP_RD_ATOMIC, QRDMA_QPS_RTS);
    w32(s, MI(sq_psn), PSN(s));
    w8(s, MI(timeout), 14);                 /* 67 ms */
    w8(s, MI(retry_cnt), rc_retry_cnt);
    w8(s, MI(rnr_retry), rnr_retry);
    w8(s, MI(max_rd_atomic), 4);
    CQP_OK(mod_run(s, id));
    CHECK_EQ(qrdma_qp_get(&s->core, id)->state, QRDMA_QPS_RTS);
}

#define QKEY 0x11110000u

static void ud_to_rts(struct side *s, uint32_t id)
{
    mod_begin(s, QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_PORT | QRDMA_QP_ATTR_QKEY,
              QRDMA_QPS_INIT);
    w8(s, MI(port_num), 1);
    w32(s, MI(qkey), QKEY);
    CQP_OK(mod_run(s, id));
    modify_state(s, id, QRDMA_QPS_RTR);
    mod_begin(s, QRDMA_QP_ATTR_SQ_PSN, QRDMA_QPS_RTS);
    w32(s, MI(sq_psn), PSN(s));
    CQP_OK(mod_run(s, id));
    CHECK_EQ(qrdma_qp_get(&s->core, id)->state, QRDMA_QPS_RTS);
}

/* The usual pair: CQs 1 (send) and 2 (receive) on both sides, RC QP 2 <-> QP 2. */
#define QPN 2

static void rc_pair_spec(const struct qp_spec *sa, const struct qp_spec *sb, unsigned rnr_retry)
{
    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq(SB, 2);
    create_qp(SA, QPN, sa);
    create_qp(SB, QPN, sb);
    rc_to_rts(SA, QPN, SB, QPN, rnr_retry);
    rc_to_rts(SB, QPN, SA, QPN, rnr_retry);
    pump();
    no_errors(SA);
    no_errors(SB);
}

static void rc_pair(void)
{
    rc_pair_spec(&rc_spec, &rc_spec, 7);
}

/* ---- the provider: WQEs and CQEs ---------------------------------------------------- */

struct sge {
    uint64_t off;                   /* in the data area; the SGE carries IOVA + off */
    uint32_t len;
    uint32_t lkey;                  /* 0: MR_STAG */
};

struct wqe {
    uint8_t op;
    bool unsignaled, solicited;
    uint64_t remote_off;            /* remote IOVA + off */
    uint32_t rkey;                  /* 0: MR_STAG */
    uint32_t imm;
    uint64_t compare_add, swap;
    uint32_t ah, dest_qpn, qkey;    /* UD */
    const void *inl;                /* inline data */
    unsigned inl_len;
    unsigned nsge;
    unsigned nsge_field;            /* NUM_SGE to write if not nsge (malformed WQEs) */
    struct sge sge[QSW_MAX_SGE];
};

/* Write one SQ WQE (VALID last) and return its index; no doorbell. */
static uint32_t post_send(struct side *s, uint32_t qp, const struct wqe *w)
{
    uint32_t n = s->qp[qp].sq_posted++;
    uint32_t index = n & ((1u << s->qp[qp].sq_log2) - 1);
    bool valid = !((n >> s->qp[qp].sq_log2) & 1);
    uint64_t a = SQ_RING(qp) + ((uint64_t)index << s->qp[qp].sq_stride_log2);
    uint64_t hdr = w->op;
    unsigned i;

    memset(mem(s, a), 0, 56);
    w64(s, a + 0, IOVA + w->remote_off);
    w64(s, a + 8, (w->rkey ? w->rkey : MR_STAG) | (uint64_t)w->imm << QRDMA_SQ_IMM_SHIFT);
    w64(s, a + 16, w->compare_add);
    w64(s, a + 24, w->swap);
    w64(s, a + 32, w->dest_qpn | (uint64_t)w->ah << QRDMA_SQ_UD_AH_SHIFT);
    w64(s, a + 40, w->qkey);
    if (w->inl) {
        memcpy(mem(s, a + 64), w->inl, w->inl_len);
        hdr |= QRDMA_SQ_HDR_INLINE | (uint64_t)w->inl_len << QRDMA_SQ_HDR_INLINE_LEN_SHIFT;
    } else {
        for (i = 0; i < w->nsge; i++) {
            w64(s, a + 64 + 16 * i, IOVA + w->sge[i].off);
            w32(s, a + 72 + 16 * i, w->sge[i].len);
            w32(s, a + 76 + 16 * i, w->sge[i].lkey ? w->sge[i].lkey : MR_STAG);
        }
        hdr |= (uint64_t)(w->nsge_field ? w->nsge_field : w->nsge)
               << QRDMA_SQ_HDR_NUM_SGE_SHIFT;
    }
    if (!w->unsignaled) {
        hdr |= QRDMA_SQ_HDR_SIGNALED;
    }
    if (w->solicited) {
        hdr |= QRDMA_SQ_HDR_SOLICITED;
    }
    if (valid) {
        hdr |= QRDMA_SQ_HDR_VALID;
    }
    w64(s, a + 56, hdr);
    return index;
}

static void write_rq_wqe(struct side *s, uint64_t a, bool valid, unsigned nsge,
                         const struct sge *sge, unsigned nsge_field)
{
    unsigned i;

    w64(s, a, 0);
    for (i = 0; i < nsge; i++) {
        w64(s, a + 16 + 16 * i, IOVA + sge[i].off);
        w32(s, a + 24 + 16 * i, sge[i].len);
        w32(s, a + 28 + 16 * i, sge[i].lkey ? sge[i].lkey : MR_STAG);
    }
    w64(s, a + 8, (nsge_field ? nsge_field : nsge) | (valid ? QRDMA_RQ_HDR_VALID : 0));
}

static uint32_t post_recv_n(struct side *s, uint32_t qp, unsigned nsge, const struct sge *sge)
{
    uint32_t n = s->qp[qp].rq_posted++;
    uint32_t index = n & ((1u << s->qp[qp].rq_log2) - 1);

    write_rq_wqe(s, RQ_RING(qp) + ((uint64_t)index << s->qp[qp].rq_stride_log2),
                 !((n >> s->qp[qp].rq_log2) & 1), nsge, sge, 0);
    return index;
}

static uint32_t post_recv(struct side *s, uint32_t qp, uint64_t off, uint32_t len)
{
    const struct sge sge = { off, len, 0 };

    return post_recv_n(s, qp, 1, &sge);
}

static void db(struct side *s, uint32_t page, uint32_t which, uint32_t value)
{
    qrdma_core_db_write(&s->core, (uint64_t)page * QRDMA_DB_PAGE_SIZE + which, 4, value);
}

static void ring_sq(struct side *s, uint32_t qp)
{
    db(s, 0, QRDMA_DB_SQ, qp);
}

struct cqe {
    uint32_t byte_len, imm, qp, src_qp;
    uint16_t wqe_index, vendor_err;
    uint8_t opcode, status, flags;
};

/* Take the next CQE of CQ cq if the device wrote it (VALID of the current lap). */
static bool poll_cq(struct side *s, uint32_t cq, struct cqe *e)
{
    uint32_t head = s->cq[cq].head, log2 = s->cq[cq].log2;
    uint64_t a = CQ_RING(cq) + 32ull * (head & ((1u << log2) - 1)), q0, q1, q2;
    bool lap_valid = !((head >> log2) & 1);

    if (!!(r64(s, a + 24) & QRDMA_CQE_VALID) != lap_valid) {
        return false;
    }
    q0 = r64(s, a);
    q1 = r64(s, a + 8);
    q2 = r64(s, a + 16);
    e->byte_len = q0 & QRDMA_CQE_BYTE_LEN_MASK;
    e->imm = q0 >> QRDMA_CQE_IMM_SHIFT;
    e->qp = q1 & QRDMA_CQE_QP_MASK;
    e->src_qp = (q1 & QRDMA_CQE_SRC_QP_MASK) >> QRDMA_CQE_SRC_QP_SHIFT;
    e->wqe_index = q2 & QRDMA_CQE_WQE_INDEX_MASK;
    e->opcode = (q2 & QRDMA_CQE_OPCODE_MASK) >> QRDMA_CQE_OPCODE_SHIFT;
    e->status = (q2 & QRDMA_CQE_STATUS_MASK) >> QRDMA_CQE_STATUS_SHIFT;
    e->vendor_err = (q2 & QRDMA_CQE_VENDOR_ERR_MASK) >> QRDMA_CQE_VENDOR_ERR_SHIFT;
    e->flags = (q2 & QRDMA_CQE_FLAGS_MASK) >> QRDMA_CQE_FLAGS_SHIFT;
    s->cq[cq].head = head + 1;
    w64(s, CQ_SHADOW(cq), s->cq[cq].head);
    return true;
}

/* The next CQE of cq must exist and match; byte_len ~0u: not checked. */
#define EXPECT_CQE(s, cq, qpn, idx, op, st, fl, len)                               \
    do {                                                                           \
        struct cqe e_;                                                             \
        if (!poll_cq((s), (cq), &e_)) {                                            \
            fprintf(stderr, "  %s:%d: no CQE on CQ %u\n", __FILE__, __LINE__,      \
                    (unsigned)(cq));                                               \
            unit_failures++;                                                       \
            break;                                                                 \
        }                                                                          \
        CHECK_EQ(e_.qp, (qpn));                                                    \
        CHECK_EQ(e_.wqe_index, (idx));                                             \
        CHECK_EQ(e_.opcode, (op));                                                 \
        CHECK_EQ(e_.status, (st));                                                 \
        CHECK_EQ(e_.flags, (fl));                                                  \
        if ((uint32_t)(len) != ~0u) {                                              \
            CHECK_EQ(e_.byte_len, (len));                                          \
        }                                                                          \
    } while (0)

static void expect_no_cqe(struct side *s, uint32_t cq)
{
    struct cqe e;

    if (poll_cq(s, cq, &e)) {
        fprintf(stderr, "  side %c CQ %u: unexpected CQE qp %u index %u opcode %u status %u\n",
                'A' + s->idx, cq, e.qp, e.wqe_index, e.opcode, e.status);
        unit_failures++;
    }
}

struct aeqe {
    uint64_t ctx;
    uint32_t id;
    uint16_t code;
    uint8_t source;
};

static bool poll_aeq(struct side *s, struct aeqe *e)
{
    uint64_t a = AEQ_RING + 16ull * (s->aeq_head & ((1u << EQ_LOG2) - 1)), info;

    info = r64(s, a + 8);
    if (!!(info & QRDMA_AEQE_VALID) != !((s->aeq_head >> EQ_LOG2) & 1)) {
        return false;
    }
    e->ctx = r64(s, a);
    e->id = info & QRDMA_AEQE_ID_MASK;
    e->code = (info & QRDMA_AEQE_CODE_MASK) >> QRDMA_AEQE_CODE_SHIFT;
    e->source = (info & QRDMA_AEQE_SOURCE_MASK) >> QRDMA_AEQE_SOURCE_SHIFT;
    s->aeq_head++;
    reg_w(s, QRDMA_REG_AEQALLOC, 1);
    return true;
}

/* Drain the AEQ; was there an event (code, id, source) with context ctx? */
static bool aeq_has(struct side *s, uint16_t code, uint32_t id, uint8_t source, uint64_t ctx)
{
    struct aeqe e;
    bool found = false;

    while (poll_aeq(s, &e)) {
        if (e.code == code && e.id == id && e.source == source && e.ctx == ctx) {
            found = true;
        }
    }
    if (!found) {
        fprintf(stderr, "  side %c: no AEQE code 0x%x id %u source %u ctx 0x%llx\n",
                'A' + s->idx, code, id, source, (unsigned long long)ctx);
    }
    return found;
}

static unsigned aeq_drain(struct side *s)
{
    struct aeqe e;
    unsigned n = 0;

    while (poll_aeq(s, &e)) {
        n++;
    }
    return n;
}

static bool poll_ceq(struct side *s, uint64_t *ctx)
{
    uint64_t v = r64(s, CEQ_RING + 8ull * (s->ceq_head & ((1u << EQ_LOG2) - 1)));

    if (!!(v & QRDMA_CEQE_VALID) != !((s->ceq_head >> EQ_LOG2) & 1)) {
        return false;
    }
    *ctx = v & QRDMA_CEQE_CQ_CTX_MASK;
    s->ceq_head++;
    reg_w(s, QRDMA_REG_CEQALLOC(0), 1);
    return true;
}

static uint8_t qp_state(struct side *s, uint32_t id)
{
    struct qrdma_qp *qp = qrdma_qp_get(&s->core, id);

    return qp ? qp->state : 0xff;
}

/* ---- SEND / RECV ------------------------------------------------------------------------ */

static void test_send_recv(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x1000, 2500, 0 } } };

    rc_pair();
    fill(SA, 0x1000, 2500, 1);
    memset(dbuf(SB, 0x8000), 0xee, 4096);
    CHECK_EQ(post_recv(SB, QPN, 0x8000, 4000), 0);
    CHECK_EQ(post_send(SA, QPN, &w), 0);
    /* Nothing moves before the doorbell. */
    pump();
    CHECK_EQ(SA->frames_sent, 0);
    ring_sq(SA, QPN);
    pump();

    CHECK(!memcmp(dbuf(SA, 0x1000), dbuf(SB, 0x8000), 2500));
    CHECK_EQ(*dbuf(SB, 0x8000 + 2500), 0xee);   /* nothing past the message */
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 2500);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SA, 1);
    expect_no_cqe(SA, 2);
    expect_no_cqe(SB, 1);
    expect_no_cqe(SB, 2);
    /* 2500 bytes at MTU 1024: three packets and at least one ACK. */
    CHECK(SA->frames_sent >= 3);
    CHECK(SB->frames_sent >= 1);
    CHECK_EQ(reg_r(SB, QRDMA_REG_LAN_STAT_ROCE_FRAMES), SA->frames_sent);
    CHECK_EQ(SA->core.dp.sq_wqes, 1);
    CHECK_EQ(SB->core.dp.rq_wqes, 1);
    CHECK_EQ(aeq_drain(SA), 0);
    CHECK_EQ(aeq_drain(SB), 0);
    no_errors(SA);
    no_errors(SB);
    /* Every timer was disarmed: nothing left in flight. */
    CHECK_EQ(SA->timer == UINT64_MAX || SA->core.dp.deadline == UINT64_MAX, 1);
}

/* More WQEs than the rings hold, over time: indexes wrap, VALID flips every lap. */
static void test_ring_wrap(void)
{
    unsigned round, k, total = 0;

    rc_pair();
    /* SQ and RQ of 8, CQs of 16: 60 messages are 7.5 SQ laps and 3.75 CQ laps. */
    for (round = 0; round < 20; round++) {
        uint32_t sidx[3], ridx[3];

        for (k = 0; k < 3; k++) {
            unsigned len = 1 + (total + k) * 37 % 3000;
            struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1,
                             .sge = { { 0x10000 * k, len, 0 } } };

            fill(SA, 0x10000 * k, len, total + k);
            ridx[k] = post_recv(SB, QPN, 0x40000 + 0x10000 * k, 4096);
            sidx[k] = post_send(SA, QPN, &w);
            CHECK_EQ(sidx[k], (total + k) % 8);
            CHECK_EQ(ridx[k], (total + k) % 8);
        }
        /* The slot after the last CQE still holds last lap's VALID. */
        ring_sq(SA, QPN);
        pump();
        for (k = 0; k < 3; k++) {
            unsigned len = 1 + (total + k) * 37 % 3000;
            uint32_t h = SB->cq[2].head;
            uint64_t raw = r64(SB, CQ_RING(2) + 32ull * (h % 16) + 24);

            /* VALID is 1 on even laps of the CQ, 0 on odd ones. */
            CHECK_EQ(!!(raw & QRDMA_CQE_VALID), !((h / 16) & 1));
            EXPECT_CQE(SB, 2, QPN, ridx[k], QSW_WC_RECV, QSW_WC_SUCCESS, 0, len);
            EXPECT_CQE(SA, 1, QPN, sidx[k], QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ,
                       ~0u);
            CHECK(!memcmp(dbuf(SA, 0x10000 * k), dbuf(SB, 0x40000 + 0x10000 * k), len));
        }
        expect_no_cqe(SA, 1);
        expect_no_cqe(SB, 2);
        total += 3;
    }
    CHECK_EQ(SB->cq[2].head, 60);
    CHECK_EQ(SA->qp[QPN].sq_posted, 60);
    no_errors(SA);
    no_errors(SB);
}

static void test_send_with_imm(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND_WITH_IMM, .imm = 0x78563412, .nsge = 1,
                     .sge = { { 0x100, 64, 0 } } };

    rc_pair();
    fill(SA, 0x100, 64, 3);
    post_recv(SB, QPN, 0x2000, 256);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    {
        struct cqe e;

        CHECK(poll_cq(SB, 2, &e));
        CHECK_EQ(e.opcode, QSW_WC_RECV);
        CHECK_EQ(e.status, QSW_WC_SUCCESS);
        CHECK_EQ(e.flags, QRDMA_CQE_FLAG_WITH_IMM);
        CHECK_EQ(e.imm, 0x78563412);
        CHECK_EQ(e.byte_len, 64);
        CHECK_EQ(e.wqe_index, 0);
    }
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x100), dbuf(SB, 0x2000), 64));
    no_errors(SA);
    no_errors(SB);
}

/* ---- RDMA ------------------------------------------------------------------------------ */

static void test_rdma_write(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x30010, .nsge = 1,
                     .sge = { { 0x5000, 3000, 0 } } };

    rc_pair();
    fill(SA, 0x5000, 3000, 9);
    memset(dbuf(SB, 0x30000), 0xcc, 0x2000);
    post_recv(SB, QPN, 0x8000, 4096);      /* must stay unused */
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x5000), dbuf(SB, 0x30010), 3000));
    CHECK_EQ(*dbuf(SB, 0x3000f), 0xcc);
    CHECK_EQ(*dbuf(SB, 0x30010 + 3000), 0xcc);
    expect_no_cqe(SB, 2);
    CHECK_EQ(SB->core.dp.rq_wqes, 0);
    CHECK_EQ(SB->core.obj.qp[QPN].rq_head, 0);
    no_errors(SA);
    no_errors(SB);
}

static void test_rdma_write_with_imm(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE_WITH_IMM, .remote_off = 0x30000,
                     .imm = 0xdeadbeef, .nsge = 1, .sge = { { 0x5000, 1500, 0 } } };
    struct cqe e;

    rc_pair();
    fill(SA, 0x5000, 1500, 4);
    memset(dbuf(SB, 0x8000), 0xcc, 64);
    post_recv(SB, QPN, 0x8000, 64);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x5000), dbuf(SB, 0x30000), 1500));
    /* The receive WQE is consumed, its buffer untouched. */
    CHECK(poll_cq(SB, 2, &e));
    CHECK_EQ(e.opcode, QSW_WC_RECV_RDMA_WITH_IMM);
    CHECK_EQ(e.status, QSW_WC_SUCCESS);
    CHECK_EQ(e.flags, QRDMA_CQE_FLAG_WITH_IMM);
    CHECK_EQ(e.imm, 0xdeadbeef);
    CHECK_EQ(e.byte_len, 1500);
    CHECK_EQ(e.wqe_index, 0);
    CHECK_EQ(e.qp, QPN);
    CHECK_EQ(*dbuf(SB, 0x8000), 0xcc);
    CHECK_EQ(SB->core.dp.rq_wqes, 1);
    no_errors(SA);
    no_errors(SB);
}

static void test_rdma_read(void)
{
    /* 2500 bytes from B, scattered over two local SGEs of A. */
    struct wqe w = { .op = QRDMA_SQ_OP_RDMA_READ, .remote_off = 0x20000, .nsge = 2,
                     .sge = { { 0x6000, 1000, 0 }, { 0x9000, 1500, 0 } } };

    rc_pair();
    fill(SB, 0x20000, 2500, 5);
    memset(dbuf(SA, 0x6000), 0, 0x4000);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_READ, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x6000), dbuf(SB, 0x20000), 1000));
    CHECK(!memcmp(dbuf(SA, 0x9000), dbuf(SB, 0x20000 + 1000), 1500));
    CHECK_EQ(*dbuf(SA, 0x6000 + 1000), 0);
    CHECK_EQ(*dbuf(SA, 0x9000 + 1500), 0);
    expect_no_cqe(SB, 1);
    expect_no_cqe(SB, 2);
    no_errors(SA);
    no_errors(SB);
}

static uint64_t ld64_at(struct side *s, uint64_t off)
{
    return r64(s, DATA + off);
}

static void test_atomics(void)
{
    struct wqe fa = { .op = QRDMA_SQ_OP_ATOMIC_FETCH_AND_ADD, .remote_off = 0x40008,
                      .compare_add = 5, .nsge = 1, .sge = { { 0x100, 8, 0 } } };
    struct wqe cs = { .op = QRDMA_SQ_OP_ATOMIC_CMP_AND_SWP, .remote_off = 0x40008,
                      .compare_add = 0x1000000000000069ull, .swap = 0x7777,
                      .nsge = 1, .sge = { { 0x108, 8, 0 } } };
    struct wqe miss = cs;

    rc_pair();
    w64(SB, DATA + 0x40000, 0x1111);
    w64(SB, DATA + 0x40008, 0x1000000000000064ull);
    w64(SB, DATA + 0x40010, 0x2222);
    miss.compare_add = 1;
    miss.swap = 9;
    miss.sge[0].off = 0x110;
    post_send(SA, QPN, &fa);
    post_send(SA, QPN, &cs);
    post_send(SA, QPN, &miss);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_FETCH_ADD, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_COMP_SWAP, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 2, QSW_WC_COMP_SWAP, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    /* The original values land in the local buffers. */
    CHECK_EQ(ld64_at(SA, 0x100), 0x1000000000000064ull);
    CHECK_EQ(ld64_at(SA, 0x108), 0x1000000000000069ull);
    CHECK_EQ(ld64_at(SA, 0x110), 0x7777);
    /* The remote qword: +5, then swapped, then left alone; its neighbours untouched. */
    CHECK_EQ(ld64_at(SB, 0x40008), 0x7777);
    CHECK_EQ(ld64_at(SB, 0x40000), 0x1111);
    CHECK_EQ(ld64_at(SB, 0x40010), 0x2222);
    expect_no_cqe(SB, 2);
    no_errors(SA);
    no_errors(SB);
}

/* ---- WQE forms ---------------------------------------------------------------------- */

static void test_inline(void)
{
    uint8_t data[192];
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .inl = data, .inl_len = sizeof(data) };
    unsigned i;

    for (i = 0; i < sizeof(data); i++) {
        data[i] = (uint8_t)(0x5a ^ i * 3);
    }
    rc_pair();
    post_recv(SB, QPN, 0x3000, 1024);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, sizeof(data));
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SB, 0x3000), data, sizeof(data)));
    no_errors(SA);
    no_errors(SB);
}

static void test_multi_sge(void)
{
    /* Gather 100 + 0 + 700 + 300 + 12 bytes, scatter into 500 + 0 + 800. */
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 5,
                     .sge = { { 0x1000, 100, 0 }, { 0x1800, 0, 0 }, { 0x2000, 700, 0 },
                              { 0x3000, 300, 0 }, { 0x3800, 12, 0 } } };
    const struct sge rsge[3] = { { 0x10000, 500, 0 }, { 0x11000, 0, 0 }, { 0x12000, 800, 0 } };
    uint8_t expect[1112];

    rc_pair();
    fill(SA, 0x1000, 100, 1);
    fill(SA, 0x2000, 700, 2);
    fill(SA, 0x3000, 300, 3);
    fill(SA, 0x3800, 12, 4);
    memcpy(expect, dbuf(SA, 0x1000), 100);
    memcpy(expect + 100, dbuf(SA, 0x2000), 700);
    memcpy(expect + 800, dbuf(SA, 0x3000), 300);
    memcpy(expect + 1100, dbuf(SA, 0x3800), 12);
    memset(dbuf(SB, 0x10000), 0xab, 0x3000);
    post_recv_n(SB, QPN, 3, rsge);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, sizeof(expect));
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SB, 0x10000), expect, 500));
    CHECK(!memcmp(dbuf(SB, 0x12000), expect + 500, 612));
    CHECK_EQ(*dbuf(SB, 0x11000), 0xab);
    CHECK_EQ(*dbuf(SB, 0x12000 + 612), 0xab);
    no_errors(SA);
    no_errors(SB);
}

static void test_unsignaled(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .unsignaled = true, .nsge = 1,
                     .sge = { { 0x1000, 100, 0 } } };
    unsigned i;

    rc_pair();
    for (i = 0; i < 3; i++) {
        post_recv(SB, QPN, 0x4000 + 0x1000 * i, 256);
    }
    post_send(SA, QPN, &w);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    /* Done, but no CQE for them. */
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 100);
    EXPECT_CQE(SB, 2, QPN, 1, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 100);
    expect_no_cqe(SA, 1);
    w.unsignaled = false;
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SB, 2, QPN, 2, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 100);
    /* One CQE, for index 2: it retires 0 and 1 too. */
    EXPECT_CQE(SA, 1, QPN, 2, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SA, 1);
    no_errors(SA);
    no_errors(SB);
}

static void test_sig_all(void)
{
    struct qp_spec sa = rc_spec;
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .unsignaled = true, .nsge = 1,
                     .sge = { { 0x1000, 10, 0 } } };

    sa.flags = QRDMA_QP_CREATE_SIG_ALL;
    rc_pair_spec(&sa, &rc_spec, 7);
    post_recv(SB, QPN, 0x4000, 256);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 10);
}

/* A NOP WQE is skipped without a CQE; the next one runs. */
static void test_nop(void)
{
    struct wqe nop = { .op = QRDMA_SQ_OP_NOP };
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x1000, 10, 0 } } };

    rc_pair();
    post_recv(SB, QPN, 0x4000, 256);
    post_send(SA, QPN, &nop);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SA, 1);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 10);
    no_errors(SA);
}

/* ---- UD and SRQ ----------------------------------------------------------------------- */

#define UDQP 3
#define AH_ID 1

static const struct qp_spec ud_spec = {
    .type = QRDMA_QP_TYPE_UD, .send_cq = 1, .recv_cq = 2,
    .sq_log2 = 3, .sq_wqe_log2 = 7, .rq_log2 = 3, .rq_wqe_log2 = 5,
};

static void test_ud(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND_WITH_IMM, .imm = 0x01020304, .ah = AH_ID,
                     .dest_qpn = UDQP, .qkey = QKEY, .nsge = 1,
                     .sge = { { 0x1000, 900, 0 } } };
    const uint8_t *grh;
    struct cqe e;

    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq(SB, 2);
    create_qp(SA, UDQP, &ud_spec);
    create_qp(SB, UDQP, &ud_spec);
    ud_to_rts(SA, UDQP);
    ud_to_rts(SB, UDQP);
    write_av(SA, AV_BUF, SB);
    CQP_OK(cqp(SA, QRDMA_CQP_OP_CREATE_AH, AH_ID | (uint64_t)PD << QRDMA_AH_ARG0_PD_SHIFT,
               AV_BUF, 0, 0, 0, 0));
    fill(SA, 0x1000, 900, 8);
    memset(dbuf(SB, 0x6000), 0xee, 2048);
    post_recv(SB, UDQP, 0x6000, 40 + 1024);
    post_send(SA, UDQP, &w);
    ring_sq(SA, UDQP);
    pump();

    EXPECT_CQE(SA, 1, UDQP, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(poll_cq(SB, 2, &e));
    CHECK_EQ(e.opcode, QSW_WC_RECV);
    CHECK_EQ(e.status, QSW_WC_SUCCESS);
    CHECK_EQ(e.byte_len, 40 + 900);
    CHECK_EQ(e.flags, QRDMA_CQE_FLAG_GRH | QRDMA_CQE_FLAG_WITH_IMM);
    CHECK_EQ(e.imm, 0x01020304);
    CHECK_EQ(e.src_qp, UDQP);
    CHECK_EQ(e.qp, UDQP);
    CHECK_EQ(e.wqe_index, 0);
    /* The GRH room: IPv4, so the IPv4 header in its last 20 bytes. */
    grh = dbuf(SB, 0x6000);
    CHECK_EQ(grh[20], 0x45);
    CHECK_EQ(grh[29], 17);                              /* UDP */
    CHECK(!memcmp(grh + 32, SA->gid + 12, 4));          /* source 10.0.0.1 */
    CHECK(!memcmp(grh + 36, SB->gid + 12, 4));          /* destination 10.0.0.2 */
    CHECK(!memcmp(grh + 40, dbuf(SA, 0x1000), 900));
    CHECK_EQ(grh[40 + 900], 0xee);

    /* A wrong Q_Key is dropped silently; the receive WQE stays for the next. */
    w.qkey = QKEY + 1;
    post_recv(SB, UDQP, 0x8000, 40 + 1024);
    post_send(SA, UDQP, &w);
    ring_sq(SA, UDQP);
    pump();
    EXPECT_CQE(SA, 1, UDQP, 1, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SB, 2);
    w.qkey = QKEY;
    w.op = QRDMA_SQ_OP_SEND;
    post_send(SA, UDQP, &w);
    ring_sq(SA, UDQP);
    pump();
    EXPECT_CQE(SA, 1, UDQP, 2, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, UDQP, 1, QSW_WC_RECV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_GRH, 940);
    CHECK(!memcmp(dbuf(SB, 0x8000 + 40), dbuf(SA, 0x1000), 900));
    no_errors(SA);
    no_errors(SB);

    /* RDMA opcodes are refused on UD, as is an AH that does not exist. */
    w.op = QRDMA_SQ_OP_RDMA_WRITE;
    post_send(SA, UDQP, &w);
    ring_sq(SA, UDQP);
    pump();
    EXPECT_CQE(SA, 1, UDQP, 3, QSW_WC_SEND, QSW_WC_LOC_QP_OP_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(logged(SA, "opcode not allowed on a UD QP"));
    CHECK(aeq_has(SA, QRDMA_AE_QP_FATAL, UDQP, QRDMA_AE_SRC_QP, QPCTX(UDQP)));
}

static void test_ud_bad_ah(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .ah = 5, .dest_qpn = UDQP, .qkey = QKEY,
                     .nsge = 1, .sge = { { 0x1000, 9, 0 } } };

    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_qp(SA, UDQP, &ud_spec);
    ud_to_rts(SA, UDQP);
    post_send(SA, UDQP, &w);
    ring_sq(SA, UDQP);
    pump();
    EXPECT_CQE(SA, 1, UDQP, 0, QSW_WC_SEND, QSW_WC_LOC_QP_OP_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(logged(SA, "names no AH of the QP's PD"));
    CHECK_EQ(SA->frames_sent, 0);
}

#define SRQ_ID 1
#define SRQQP 4

static uint32_t post_srq(struct side *s, uint64_t off, uint32_t len)
{
    const struct sge sge = { off, len, 0 };
    uint32_t n = s->srq_posted++;
    uint32_t index = n & ((1u << s->srq_log2) - 1);

    write_rq_wqe(s, SRQ_RING + ((uint64_t)index << s->srq_stride_log2),
                 !((n >> s->srq_log2) & 1), 1, &sge, 0);
    w64(s, SRQ_SHADOW, s->srq_posted);
    return index;
}

static void test_srq(void)
{
    struct qp_spec sb = rc_spec;
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x1000, 700, 0 } } };
    unsigned i;

    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq(SB, 2);
    /* SRQ 1 of 4 WQEs of 32 bytes, limit 2. */
    CQP_OK(cqp(SB, QRDMA_CQP_OP_CREATE_SRQ,
               SRQ_ID | 2ull << QRDMA_SRQ_ARG0_SIZE_SHIFT | 5ull << QRDMA_SRQ_ARG0_WQE_SHIFT,
               PD | 2ull << QRDMA_SRQ_ARG1_LIMIT_SHIFT, SRQ_RING, SRQ_SHADOW, 0x5e0, 0));
    SB->srq_log2 = 2;
    SB->srq_stride_log2 = 5;
    sb.flags = QRDMA_QP_CREATE_SRQ;
    sb.srq = SRQ_ID;
    create_qp(SA, QPN, &rc_spec);
    create_qp(SB, SRQQP, &sb);
    rc_to_rts(SA, QPN, SB, SRQQP, 7);
    rc_to_rts(SB, SRQQP, SA, QPN, 7);
    for (i = 0; i < 3; i++) {
        post_srq(SB, 0x20000 + 0x1000 * i, 1024);
    }
    /* Six messages over two rounds: the SRQ ring (4) wraps. */
    for (i = 0; i < 6; i++) {
        if (i == 3) {
            post_srq(SB, 0x20000 + 0x1000 * 3, 1024);
            post_srq(SB, 0x20000, 1024);
            post_srq(SB, 0x20000 + 0x1000, 1024);
        }
        fill(SA, 0x1000, 700, i);
        post_send(SA, QPN, &w);
        ring_sq(SA, QPN);
        pump();
        EXPECT_CQE(SA, 1, QPN, i % 8, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
        EXPECT_CQE(SB, 2, SRQQP, i % 4, QSW_WC_RECV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SRQ, 700);
        CHECK(!memcmp(dbuf(SA, 0x1000), dbuf(SB, 0x20000 + 0x1000 * (i % 4)), 700));
    }
    CHECK_EQ(SB->core.obj.srq[SRQ_ID].head, 6);
    /* 3 posted, 1 taken: 2 outstanding is not below the limit 2; 2 taken is. */
    CHECK(aeq_has(SB, QRDMA_AE_SRQ_LIMIT, SRQ_ID, QRDMA_AE_SRC_SRQ, 0x5e0));
    no_errors(SA);
    no_errors(SB);
}

/* ---- CQ arming ------------------------------------------------------------------------ */

static void arm(struct side *s, uint32_t cq, uint64_t how)
{
    static uint16_t seq;

    w64(s, CQ_SHADOW(cq) + 8, ++seq | how);
    db(s, 0, QRDMA_DB_CQ_ARM, cq);
}

static void send_one(uint32_t len)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x1000, len, 0 } } };

    post_recv(SB, QPN, 0x4000, 4096);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
}

static void test_cq_arm(void)
{
    uint64_t ctx;
    struct cqe e;

    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq_ex(SB, 2, 4, true);           /* events to CEQ 0 */
    create_qp(SA, QPN, &rc_spec);
    create_qp(SB, QPN, &rc_spec);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    pump();
    while (poll_ceq(SB, &ctx)) {
        ;                                   /* nothing the CQP wrote is of interest */
    }

    /* Not armed: a CQE, no CEQE. */
    send_one(10);
    CHECK(poll_cq(SB, 2, &e));
    CHECK(!poll_ceq(SB, &ctx));

    /* Armed for the next completion: one CEQE, then disarmed. */
    arm(SB, 2, QRDMA_CQ_ARM_NEXT);
    CHECK(!poll_ceq(SB, &ctx));
    send_one(11);
    CHECK(poll_ceq(SB, &ctx));
    CHECK_EQ(ctx, 0xc0002);
    CHECK(!poll_ceq(SB, &ctx));
    send_one(12);
    CHECK(!poll_ceq(SB, &ctx));
    CHECK(poll_cq(SB, 2, &e));
    CHECK(poll_cq(SB, 2, &e));

    /* Armed again: the next one fires again. */
    arm(SB, 2, QRDMA_CQ_ARM_NEXT);
    send_one(13);
    CHECK(poll_ceq(SB, &ctx));
    CHECK_EQ(ctx, 0xc0002);
    CHECK(poll_cq(SB, 2, &e));

    /* Armed for solicited only: an unsolicited success does not fire. */
    arm(SB, 2, QRDMA_CQ_ARM_SOLICITED);
    send_one(14);
    CHECK(poll_cq(SB, 2, &e));
    CHECK(!poll_ceq(SB, &ctx));
    /* A solicited one does, and its CQE says so. */
    {
        struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .solicited = true,
                         .sge = { { 0x1000, 15, 0 } } };

        post_recv(SB, QPN, 0x4000, 4096);
        post_send(SA, QPN, &w);
        ring_sq(SA, QPN);
        pump();
        CHECK(poll_cq(SB, 2, &e));
        CHECK(e.flags & QRDMA_CQE_FLAG_SOLICITED);
        CHECK(poll_ceq(SB, &ctx));
        CHECK_EQ(ctx, 0xc0002);
    }
    /* ... but an error completion does (a receive buffer behind a bad lkey). */
    {
        const struct sge bad = { 0x4000, 256, MR_STAG ^ 0x40 };
        struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x1000, 16, 0 } } };

        arm(SB, 2, QRDMA_CQ_ARM_SOLICITED);
        post_recv_n(SB, QPN, 1, &bad);
        post_send(SA, QPN, &w);
        ring_sq(SA, QPN);
        pump();
        CHECK(poll_cq(SB, 2, &e));
        CHECK_EQ(e.status, QSW_WC_LOC_PROT_ERR);
        CHECK(poll_ceq(SB, &ctx));
        CHECK_EQ(ctx, 0xc0002);
        CHECK(!poll_ceq(SB, &ctx));
        CHECK(logged(SB, "STag 0x00000151"));
        log_clear(SB);
        aeq_drain(SB);
        while (poll_cq(SA, 1, &e)) {
            ;
        }
        /* Fresh QPs for the rest (CQs stay). */
        CQP_OK(cqp(SA, QRDMA_CQP_OP_DESTROY_QP, QPN, 0, 0, 0, 0, 0));
        CQP_OK(cqp(SB, QRDMA_CQP_OP_DESTROY_QP, QPN, 0, 0, 0, 0, 0));
        create_qp(SA, QPN, &rc_spec);
        create_qp(SB, QPN, &rc_spec);
        rc_to_rts(SA, QPN, SB, QPN, 7);
        rc_to_rts(SB, QPN, SA, QPN, 7);
        memset(mem(SA, SQ_RING(QPN)), 0, 0x8000);
        memset(mem(SB, SQ_RING(QPN)), 0, 0x8000);
    }
    /* A CQ without CEQ_ENABLE never writes one (CQ 1 of A, armed). */
    arm(SA, 1, QRDMA_CQ_ARM_NEXT);
    send_one(15);
    CHECK(!poll_ceq(SA, &ctx));
    no_errors(SA);
    no_errors(SB);

    /* The arm doorbell of a CQ that does not exist, or of another page. */
    db(SB, 0, QRDMA_DB_CQ_ARM, 9);
    CHECK(logged(SB, "no CQ of this page has that ID"));
    CHECK(aeq_has(SB, QRDMA_AE_BAD_DOORBELL, 0, QRDMA_AE_SRC_DOORBELL, 0));
    log_clear(SB);
    db(SB, 3, QRDMA_DB_CQ_ARM, 2);
    CHECK(logged(SB, "no CQ of this page has that ID"));
    CHECK(aeq_has(SB, QRDMA_AE_BAD_DOORBELL, 3, QRDMA_AE_SRC_DOORBELL, 0));
}

/* ---- errors --------------------------------------------------------------------------- */

static void test_bad_rkey(void)
{
    struct wqe wr = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x30000,
                      .rkey = MR_STAG ^ 0x01, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };
    struct wqe snd = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };
    struct wqe quiet = snd;

    rc_pair();
    quiet.unsignaled = true;
    memset(dbuf(SB, 0x30000), 0xcc, 256);
    post_recv(SA, QPN, 0x9000, 256);        /* flushed when A's QP fails */
    post_recv(SA, QPN, 0xa000, 256);
    post_recv(SB, QPN, 0x9000, 256);
    post_send(SA, QPN, &wr);
    post_send(SA, QPN, &snd);
    post_send(SA, QPN, &quiet);
    ring_sq(SA, QPN);
    pump();

    /* The requester: the WRITE fails, the later WQEs (signaled or not) are flushed. */
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_REM_ACCESS_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 2, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SA, 1);
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);
    /* Its RQ is flushed too. */
    EXPECT_CQE(SA, 2, QPN, 0, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);
    EXPECT_CQE(SA, 2, QPN, 1, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);
    expect_no_cqe(SA, 2);
    /* Nothing was written; the responder logged the STag and raised an access error. */
    CHECK_EQ(*dbuf(SB, 0x30000), 0xcc);
    CHECK(logged(SB, "STag 0x"));
    CHECK(aeq_has(SB, QRDMA_AE_QP_ACCESS_ERR, QPN, QRDMA_AE_SRC_QP, QPCTX(QPN)));
    CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_ERR);
    /* B's receive WQE was never used for the WRITE: flushed with B's error. */
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);

    /* WQEs posted after the error: flushed at the doorbell. */
    post_send(SA, QPN, &quiet);
    post_send(SA, QPN, &snd);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 3, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 4, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SA, 1);
}

static void test_remote_access_rights(void)
{
    /* An MR without REMOTE_WRITE: a WRITE through it is a remote access error. */
    struct wqe wr = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x30000,
                      .rkey = 2 << 8 | 0x22, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };

    rc_pair();
    CQP_OK(cqp(SB, QRDMA_CQP_OP_REG_MR, 2 << 8 | 0x22,
               PD | (uint64_t)(QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_READ)
               << QRDMA_MR_ARG1_ACCESS_SHIFT | 12ull << QRDMA_MR_ARG1_PAGE_SHIFT,
               IOVA, DATA_LEN, DATA, 0));
    post_send(SA, QPN, &wr);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_REM_ACCESS_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(logged(SB, "STag 0x00000222"));
    /* But a READ through it works (on a fresh pair). */
    rc_pair();
    CQP_OK(cqp(SB, QRDMA_CQP_OP_REG_MR, 2 << 8 | 0x22,
               PD | (uint64_t)(QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_READ)
               << QRDMA_MR_ARG1_ACCESS_SHIFT | 12ull << QRDMA_MR_ARG1_PAGE_SHIFT,
               IOVA, DATA_LEN, DATA, 0));
    fill(SB, 0x30000, 100, 7);
    wr.op = QRDMA_SQ_OP_RDMA_READ;
    post_send(SA, QPN, &wr);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_READ, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x5000), dbuf(SB, 0x30000), 100));
    no_errors(SB);
}

static void test_bad_lkey(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1,
                     .sge = { { 0x5000, 100, MR_STAG + 1 } } };
    struct wqe ok = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };

    rc_pair();
    post_recv(SB, QPN, 0x9000, 256);
    post_send(SA, QPN, &w);
    post_send(SA, QPN, &ok);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_LOC_PROT_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);
    CHECK(logged(SA, "STag 0x00000112"));
    /* Nothing reached B. */
    expect_no_cqe(SB, 2);
    CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_RTS);

    /* At the responder: a receive buffer behind a bad lkey fails the receive. */
    rc_pair();
    {
        const struct sge bad = { 0x9000, 256, MR_STAG ^ 0x80 };

        post_recv_n(SB, QPN, 1, &bad);
    }
    post_send(SA, QPN, &ok);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_LOC_PROT_ERR, 0, ~0u);
    CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_ERR);
    CHECK(logged(SB, "STag 0x00000191"));
    {
        struct cqe e;

        CHECK(poll_cq(SA, 1, &e));
        CHECK_EQ(e.wqe_index, 0);
        CHECK_EQ(e.status, QSW_WC_REM_OP_ERR);
    }
}

static void test_bad_opcode(void)
{
    struct wqe bad = { .op = 0x0b, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };
    struct wqe ok = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };
    struct cqe e;

    rc_pair();
    post_recv(SB, QPN, 0x9000, 256);
    post_send(SA, QPN, &bad);
    post_send(SA, QPN, &ok);
    ring_sq(SA, QPN);
    pump();
    CHECK(poll_cq(SA, 1, &e));
    CHECK_EQ(e.wqe_index, 0);
    CHECK_EQ(e.status, QSW_WC_LOC_QP_OP_ERR);
    CHECK_EQ(e.opcode, QSW_WC_SEND);
    CHECK_EQ(e.flags, QRDMA_CQE_FLAG_SQ);
    CHECK_EQ(e.vendor_err, 1);
    CHECK_EQ(e.qp, QPN);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    expect_no_cqe(SA, 1);
    CHECK(logged(SA, "QP 2: SQ WQE 0: unknown opcode"));
    CHECK(aeq_has(SA, QRDMA_AE_QP_FATAL, QPN, QRDMA_AE_SRC_QP, QPCTX(QPN)));
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);
    CHECK_EQ(SA->core.dp.bad_wqes, 1);
    expect_no_cqe(SB, 2);
    CHECK_EQ(SA->frames_sent, 0);
}

/* A bad WQE behind good ones still in flight: CQEs stay in SQ order. */
static void test_bad_wqe_order(void)
{
    struct wqe ok = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };
    struct wqe bad = { .op = 0x0a, .nsge = 1, .sge = { { 0x5000, 100, 0 } } };

    rc_pair();
    post_recv(SB, QPN, 0x9000, 256);
    post_recv(SB, QPN, 0xa000, 256);
    post_send(SA, QPN, &ok);
    post_send(SA, QPN, &ok);
    post_send(SA, QPN, &bad);
    ring_sq(SA, QPN);
    pump();
    {
        struct cqe e[4];
        unsigned n = 0, i;

        while (n < 4 && poll_cq(SA, 1, &e[n])) {
            n++;
        }
        CHECK_EQ(n, 3);
        for (i = 0; i < n; i++) {
            CHECK_EQ(e[i].wqe_index, i);
        }
        if (n == 3) {
            CHECK_EQ(e[2].status, QSW_WC_LOC_QP_OP_ERR);
            CHECK(e[0].status == QSW_WC_SUCCESS || e[0].status == QSW_WC_WR_FLUSH_ERR);
        }
    }
    CHECK(logged(SA, "SQ WQE 2: unknown opcode"));
}

static void test_too_many_sges(void)
{
    /* A 256-byte SQ WQE holds 12 SGEs; an 64-byte RQ WQE holds 3. */
    struct wqe bad = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .nsge_field = 13,
                       .sge = { { 0x5000, 100, 0 } } };
    struct wqe ok = { .op = QRDMA_SQ_OP_SEND, .nsge = 12 };
    unsigned i;

    rc_pair();
    for (i = 0; i < 12; i++) {
        ok.sge[i] = (struct sge){ 0x1000 + 0x100 * i, 10, 0 };
    }
    fill(SA, 0x1000, 0x1000, 2);
    post_recv(SB, QPN, 0x9000, 256);
    post_send(SA, QPN, &ok);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 120);
    for (i = 0; i < 12; i++) {
        CHECK(!memcmp(dbuf(SB, 0x9000 + 10 * i), dbuf(SA, 0x1000 + 0x100 * i), 10));
    }
    no_errors(SA);

    post_send(SA, QPN, &bad);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_SEND, QSW_WC_LOC_QP_OP_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(logged(SA, "more SGEs than the WQE holds"));
    CHECK(aeq_has(SA, QRDMA_AE_QP_FATAL, QPN, QRDMA_AE_SRC_QP, QPCTX(QPN)));
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);

    /* Inline data longer than the WQE. */
    rc_pair();
    {
        uint8_t big[200] = { 0 };
        struct wqe w = { .op = QRDMA_SQ_OP_SEND, .inl = big, .inl_len = 192 };
        uint64_t a = SQ_RING(QPN);

        post_send(SA, QPN, &w);
        /* Claim 200 bytes in the header. */
        w64(SA, a + 56, (r64(SA, a + 56) & ~QRDMA_SQ_HDR_INLINE_LEN_MASK) |
                        200ull << QRDMA_SQ_HDR_INLINE_LEN_SHIFT);
        ring_sq(SA, QPN);
        pump();
        EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_LOC_QP_OP_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
        CHECK(logged(SA, "inline data beyond the WQE"));
    }

    /* A receive WQE with more SGEs than its stride holds. */
    rc_pair();
    {
        const struct sge sge = { 0x9000, 256, 0 };
        uint64_t a = RQ_RING(QPN);
        struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };

        write_rq_wqe(SB, a, true, 1, &sge, 4);
        SB->qp[QPN].rq_posted = 1;
        post_send(SA, QPN, &w);
        ring_sq(SA, QPN);
        pump_ms(2000);
        EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_LOC_QP_OP_ERR, 0, ~0u);
        CHECK(logged(SB, "RQ WQE 0: malformed or unreadable"));
        CHECK(aeq_has(SB, QRDMA_AE_QP_FATAL, QPN, QRDMA_AE_SRC_QP, QPCTX(QPN)));
        CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_ERR);
        /* The sender gets an error in the end, whatever it is. */
        {
            struct cqe e;

            CHECK(poll_cq(SA, 1, &e));
            CHECK(e.status != QSW_WC_SUCCESS);
        }
    }
}

static void test_bad_doorbell(void)
{
    struct qp_spec sa = rc_spec;
    struct wqe ok = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };

    sa.db_page = 2;
    rc_pair_spec(&sa, &rc_spec, 7);
    post_recv(SB, QPN, 0x9000, 256);
    post_send(SA, QPN, &ok);
    /* QP 2 belongs to page 2: its SQ doorbell on page 0 is refused. */
    db(SA, 0, QRDMA_DB_SQ, QPN);
    pump();
    CHECK(logged(SA, "doorbell 0x2 at page 0 offset 0x0: no QP of this page has that ID"));
    CHECK(aeq_has(SA, QRDMA_AE_BAD_DOORBELL, 0, QRDMA_AE_SRC_DOORBELL, 0));
    CHECK_EQ(SA->frames_sent, 0);
    expect_no_cqe(SA, 1);
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_RTS);
    /* Nor does an RQ doorbell of another page, or a QP that does not exist. */
    log_clear(SA);
    db(SA, 5, QRDMA_DB_RQ, QPN);
    CHECK(aeq_has(SA, QRDMA_AE_BAD_DOORBELL, 5, QRDMA_AE_SRC_DOORBELL, 0));
    db(SA, 2, QRDMA_DB_SQ, 7);
    CHECK(aeq_has(SA, QRDMA_AE_BAD_DOORBELL, 2, QRDMA_AE_SRC_DOORBELL, 0));
    CHECK_EQ(SA->guest_errors, 2);
    /* An offset with no doorbell. */
    db(SA, 2, 0x20, QPN);
    CHECK(logged(SA, "no doorbell at that offset"));
    CHECK(aeq_has(SA, QRDMA_AE_BAD_DOORBELL, 2, QRDMA_AE_SRC_DOORBELL, 0));
    /* The right page works. */
    log_clear(SA);
    db(SA, 2, QRDMA_DB_SQ, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 10);
    no_errors(SA);
}

static void test_cq_overflow(void)
{
    struct qp_spec sb = rc_spec;
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };
    struct cqe e;
    unsigned i;

    sb.recv_cq = 3;
    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq_ex(SB, 3, 2, false);          /* 4 CQEs */
    create_qp(SA, QPN, &rc_spec);
    create_qp(SB, QPN, &sb);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    /* Four completions fill it; the consumer reads none. */
    for (i = 0; i < 5; i++) {
        post_recv(SB, QPN, 0x9000 + 0x100 * i, 256);
        post_send(SA, QPN, &w);
    }
    ring_sq(SA, QPN);
    pump();
    CHECK_EQ(SB->core.dp.cqes, 4);
    CHECK_EQ(SB->core.dp.cq_overflows, 1);
    CHECK(logged(SB, "CQ 3: overflow"));
    CHECK(aeq_has(SB, QRDMA_AE_CQ_OVERFLOW, 3, QRDMA_AE_SRC_CQ, 0xc0003));
    CHECK(SB->core.obj.cq[3].error);
    for (i = 0; i < 4; i++) {
        CHECK(poll_cq(SB, 3, &e));
        CHECK_EQ(e.wqe_index, i);
    }
    /* In error: no CQE is written any more, even with room. */
    CHECK(!poll_cq(SB, 3, &e));
    post_recv(SB, QPN, 0x9000, 256);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    CHECK(!poll_cq(SB, 3, &e));
    CHECK_EQ(SB->core.dp.cq_overflows, 1);
    /* The sender's side is fine. */
    for (i = 0; i < 6; i++) {
        EXPECT_CQE(SA, 1, QPN, i, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    }
}

/* HEAD advances: the same small CQ takes any number of CQEs. */
static void test_cq_head(void)
{
    struct qp_spec sb = rc_spec;
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };
    unsigned i;

    sb.recv_cq = 3;
    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq_ex(SB, 3, 2, false);
    create_qp(SA, QPN, &rc_spec);
    create_qp(SB, QPN, &sb);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    for (i = 0; i < 22; i++) {
        post_recv(SB, QPN, 0x9000, 256);
        post_send(SA, QPN, &w);
        ring_sq(SA, QPN);
        pump();
        EXPECT_CQE(SB, 3, QPN, i % 8, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 10);
        EXPECT_CQE(SA, 1, QPN, i % 8, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    }
    CHECK_EQ(SB->core.dp.cq_overflows, 0);
    no_errors(SB);
}

static void test_rq_flush(void)
{
    unsigned i;

    rc_pair();
    for (i = 0; i < 3; i++) {
        post_recv(SB, QPN, 0x9000 + 0x100 * i, 256);
    }
    modify_state(SB, QPN, QRDMA_QPS_ERR);
    pump();
    for (i = 0; i < 3; i++) {
        EXPECT_CQE(SB, 2, QPN, i, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);
    }
    expect_no_cqe(SB, 2);
    /* Posted in error: nothing until the RQ doorbell, then flushed. */
    post_recv(SB, QPN, 0x9000, 256);
    post_recv(SB, QPN, 0x9100, 256);
    pump();
    expect_no_cqe(SB, 2);
    db(SB, 0, QRDMA_DB_RQ, QPN);
    pump();
    EXPECT_CQE(SB, 2, QPN, 3, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);
    EXPECT_CQE(SB, 2, QPN, 4, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);
    expect_no_cqe(SB, 2);
    /* Many, over the ring's laps: 8 more. */
    for (i = 0; i < 8; i++) {
        post_recv(SB, QPN, 0x9000, 256);
    }
    db(SB, 0, QRDMA_DB_RQ, QPN);
    pump();
    for (i = 0; i < 8; i++) {
        EXPECT_CQE(SB, 2, QPN, (5 + i) % 8, QSW_WC_RECV, QSW_WC_WR_FLUSH_ERR, 0, ~0u);
    }
    expect_no_cqe(SB, 2);
    /* SQ WQEs of a QP in error are flushed too. */
    {
        struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };

        post_send(SB, QPN, &w);
        ring_sq(SB, QPN);
        pump();
        EXPECT_CQE(SB, 1, QPN, 0, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    }
    CHECK_EQ(SB->frames_sent, 0);
    no_errors(SB);

    /* Back through RESET to RTS: the rings start again from index 0. */
    modify_state(SB, QPN, QRDMA_QPS_RESET);
    SB->qp[QPN].sq_posted = SB->qp[QPN].rq_posted = 0;
    memset(mem(SB, SQ_RING(QPN)), 0, 0x8000);
    modify_state(SA, QPN, QRDMA_QPS_RESET);
    SA->qp[QPN].sq_posted = SA->qp[QPN].rq_posted = 0;
    memset(mem(SA, SQ_RING(QPN)), 0, 0x8000);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    send_one(33);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 33);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    no_errors(SA);
    no_errors(SB);
}

/* No receive WQE: RNR NAK; the sender retries after the RNR timer and completes. */
static void test_rnr(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 1800, 0 } } };
    uint64_t t0;

    rc_pair();
    fill(SA, 0x5000, 1800, 6);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump();
    expect_no_cqe(SA, 1);
    expect_no_cqe(SB, 2);
    /* The requester waits on a timer. */
    CHECK(SA->timer != UINT64_MAX);
    t0 = now_ns;
    /* Firing timers without a WQE: more RNR NAKs, still nothing. */
    pump_ms(1);
    expect_no_cqe(SA, 1);
    CHECK(SA->timer != UINT64_MAX);
    /* Post the receive (no doorbell needed outside error) and let the timer fire. */
    post_recv(SB, QPN, 0x9000, 2048);
    pump_ms(100);
    CHECK(now_ns > t0);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 1800);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x5000), dbuf(SB, 0x9000), 1800));
    no_errors(SA);
    no_errors(SB);
}

/* RNR retries exhausted: RNR_RETRY_EXC_ERR and the QP in error. */
static void test_rnr_exceeded(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 10, 0 } } };

    rc_pair_spec(&rc_spec, &rc_spec, 1);
    post_send(SA, QPN, &w);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    pump_ms(100);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_RNR_RETRY_EXC_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK_EQ(qp_state(SA, QPN), QRDMA_QPS_ERR);
}

/* A lost frame: the retransmit timer recovers it. */
static void test_retransmit(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 3000, 0 } } };

    rc_pair();
    fill(SA, 0x5000, 3000, 12);
    post_recv(SB, QPN, 0x9000, 4096);
    post_send(SA, QPN, &w);
    drop_frames = 1;                        /* the first packet of the SEND */
    ring_sq(SA, QPN);
    pump_ms(1000);
    EXPECT_CQE(SB, 2, QPN, 0, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 3000);
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x5000), dbuf(SB, 0x9000), 3000));
    no_errors(SA);
    no_errors(SB);
}

/* Destroying a QP with work in flight, then its CQs: nothing dangles. */
static void test_destroy_in_flight(void)
{
    struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 3000, 0 } } };

    rc_pair();
    post_recv(SB, QPN, 0x9000, 4096);
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    /* The doorbell queued the QP; destroy before the work runs. */
    CQP_OK(cqp(SA, QRDMA_CQP_OP_DESTROY_QP, QPN, 0, 0, 0, 0, 0));
    CQP_OK(cqp(SA, QRDMA_CQP_OP_DESTROY_CQ, 1, 0, 0, 0, 0, 0));
    pump_ms(1000);
    CHECK_EQ(SA->frames_sent, 0);
    expect_no_cqe(SB, 2);
    /* A doorbell for it now is a bad doorbell. */
    ring_sq(SA, QPN);
    CHECK(logged(SA, "no QP of this page has that ID"));
}

/*
 * The device's fault hook: with loss, duplication, reordering and
 * corruption on both sides' transmitters, rounds of WRITEs, READs and SENDs
 * still complete in order with every byte right; corrupted frames die at
 * the ICRC check.
 */
static void test_fault_hook(void)
{
    struct qsw_stats st[2];
    unsigned round, i;

    memset(&dev_fault, 0, sizeof(dev_fault));
    dev_fault.loss_ppm = 50000;
    dev_fault.dup_ppm = 10000;
    dev_fault.reorder_ppm = 20000;
    dev_fault.corrupt_ppm = 10000;
    dev_fault.seed = 7;
    rc_retry_cnt = 7;
    rc_pair();
    dev_fault.seed = 0;
    dev_fault.loss_ppm = dev_fault.dup_ppm = dev_fault.reorder_ppm = 0;
    dev_fault.corrupt_ppm = 0;
    rc_retry_cnt = 3;

    for (round = 0; round < 12; round++) {
        const uint32_t len = 0x2000 - 8 * round;

        /* 8 WRITEs A -> B, then 8 READs of them back into A elsewhere. */
        for (i = 0; i < 8; i++) {
            struct wqe w = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x40000 + i * 0x2000,
                             .nsge = 1, .sge = { { 0x10000 + i * 0x2000, len, 0 } } };

            fill(SA, 0x10000 + i * 0x2000, len, round * 8 + i);
            post_send(SA, QPN, &w);
        }
        ring_sq(SA, QPN);
        pump_ms(20000);
        for (i = 0; i < 8; i++) {
            EXPECT_CQE(SA, 1, QPN, (round * 16 + i) & 7, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS,
                       QRDMA_CQE_FLAG_SQ, ~0u);
            CHECK(!memcmp(dbuf(SA, 0x10000 + i * 0x2000), dbuf(SB, 0x40000 + i * 0x2000), len));
        }
        memset(dbuf(SA, 0x80000), 0, 0x10000);
        for (i = 0; i < 8; i++) {
            struct wqe w = { .op = QRDMA_SQ_OP_RDMA_READ, .remote_off = 0x40000 + i * 0x2000,
                             .nsge = 1, .sge = { { 0x80000 + i * 0x2000, len, 0 } } };

            post_send(SA, QPN, &w);
        }
        ring_sq(SA, QPN);
        pump_ms(20000);
        for (i = 0; i < 8; i++) {
            EXPECT_CQE(SA, 1, QPN, (round * 16 + 8 + i) & 7, QSW_WC_RDMA_READ, QSW_WC_SUCCESS,
                       QRDMA_CQE_FLAG_SQ, ~0u);
            CHECK(!memcmp(dbuf(SA, 0x80000 + i * 0x2000), dbuf(SA, 0x10000 + i * 0x2000), len));
        }
        /* A SEND B -> A: the other direction's requester under faults too. */
        {
            struct wqe w = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0xa0000, 3000, 0 } } };

            fill(SB, 0xa0000, 3000, 100 + round);
            post_recv(SA, QPN, 0xb0000, 4096);
            post_send(SB, QPN, &w);
            ring_sq(SB, QPN);
            pump_ms(20000);
            EXPECT_CQE(SB, 1, QPN, round & 7, QSW_WC_SEND, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ,
                       ~0u);
            EXPECT_CQE(SA, 2, QPN, round & 7, QSW_WC_RECV, QSW_WC_SUCCESS, 0, 3000);
            CHECK(!memcmp(dbuf(SB, 0xa0000), dbuf(SA, 0xb0000), 3000));
        }
    }
    CHECK_EQ(qrdma_qp_get(&SA->core, QPN)->state, QRDMA_QPS_RTS);
    CHECK_EQ(qrdma_qp_get(&SB->core, QPN)->state, QRDMA_QPS_RTS);
    qsw_engine_stats(SA->core.dp.eng, &st[0]);
    qsw_engine_stats(SB->core.dp.eng, &st[1]);
    /* The faults did happen, and the transport recovered from them. */
    CHECK(st[0].fault_lost + st[1].fault_lost > 0);
    CHECK(st[0].fault_dup + st[1].fault_dup > 0);
    CHECK(st[0].fault_corrupted + st[1].fault_corrupted > 0);
    CHECK(st[0].drop_icrc + st[1].drop_icrc > 0);
    CHECK(st[0].retransmits + st[1].retransmits > 0);
    no_errors(SA);
    no_errors(SB);
}

/* Fault settings outside their limits are refused at init. */
static void test_fault_limits(void)
{
    struct qrdma_core_config cfg;
    struct qrdma_core core;
    struct qrdma_core_env env = { 0 };
    char err[128] = "";

    memset(&core, 0, sizeof(core));
    qrdma_core_config_defaults(&cfg);
    cfg.fault.loss_ppm = 500001;
    CHECK_EQ(qrdma_core_init(&core, &cfg, &env, err, sizeof(err)), -EINVAL);
    CHECK(strstr(err, "fault.loss_ppm") != NULL);
}

/* ---- fast register ------------------------------------------------------------------- */

#define FR_INDEX    2
#define FR_IOVA     0x60000000ull
#define FR_FIRST    8               /* the MR's reserved PBLEs: 8..11 */

static uint64_t pble_addr(struct side *s, uint32_t i)
{
    return HMC_RAM + r64(s, FPM_BUF + 8 * (1 + QRDMA_HMC_PBLE)) + 8ull * i;
}

/* A FAST_REG WQE (one-level list at `first`); returns its index. */
static uint32_t post_fast_reg(struct side *s, uint32_t qp, uint32_t stag, uint32_t access,
                              uint64_t iova, uint64_t len, uint64_t first, uint64_t fbo)
{
    uint32_t n = s->qp[qp].sq_posted++;
    uint32_t index = n & ((1u << s->qp[qp].sq_log2) - 1);
    bool valid = !((n >> s->qp[qp].sq_log2) & 1);
    uint64_t a = SQ_RING(qp) + ((uint64_t)index << s->qp[qp].sq_stride_log2);

    memset(mem(s, a), 0, 56);
    w64(s, a + 0, iova);
    w64(s, a + 16, len);
    w64(s, a + 24, first);
    w64(s, a + 32, stag | (uint64_t)access << QRDMA_SQ_FR_ACCESS_SHIFT |
                   12ull << QRDMA_SQ_FR_PAGE_SHIFT | 1ull << QRDMA_SQ_FR_LEVELS_SHIFT);
    w64(s, a + 48, fbo);
    w64(s, a + 56, QRDMA_SQ_OP_FAST_REG | QRDMA_SQ_HDR_SIGNALED |
                   (valid ? QRDMA_SQ_HDR_VALID : 0));
    return index;
}

/* B: ALLOC_STAG of MR 2 (key 0x20, 4 pages at PBLE 8), its pages out of order. */
static void fast_reg_mr_alloc(void)
{
    CQP_OK(cqp(SB, QRDMA_CQP_OP_ALLOC_STAG, FR_INDEX << QRDMA_STAG_INDEX_SHIFT | 0x20,
               PD | (uint64_t)MR_ACCESS << QRDMA_MR_ARG1_ACCESS_SHIFT, 4, 0, FR_FIRST, 0));
    w64(SB, pble_addr(SB, FR_FIRST + 0), DATA + 0xc3000);
    w64(SB, pble_addr(SB, FR_FIRST + 1), DATA + 0xc1000);
    w64(SB, pble_addr(SB, FR_FIRST + 2), DATA + 0xc5000);
}

/*
 * Kernel fast registration: B registers its MR with a new key through a
 * FAST_REG WQE; A writes and reads through the new rkey into the pages of
 * the list; the old key is dead; LOCAL_INV ends it all.
 */
static void test_fast_reg(void)
{
    const uint32_t fr_stag = FR_INDEX << QRDMA_STAG_INDEX_SHIFT | 0x21;
    struct wqe wr = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = FR_IOVA - IOVA,
                      .rkey = fr_stag, .nsge = 1, .sge = { { 0x5000, 8192, 0 } } };
    struct wqe rd = { .op = QRDMA_SQ_OP_RDMA_READ, .remote_off = FR_IOVA - IOVA + 0xe00,
                      .rkey = fr_stag, .nsge = 1, .sge = { { 0x9000, 0x400, 0 } } };
    struct wqe inv = { .op = QRDMA_SQ_OP_LOCAL_INV, .imm = fr_stag };
    uint8_t ctx[64];

    rc_pair();
    fast_reg_mr_alloc();
    memset(dbuf(SB, 0xc0000), 0xcc, 0x8000);
    fill(SA, 0x5000, 8192, 21);

    post_fast_reg(SB, QPN, fr_stag, QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE |
                  QRDMA_ACCESS_REMOTE_READ, FR_IOVA, 8192, FR_FIRST, 0x100);
    ring_sq(SB, QPN);
    pump();
    EXPECT_CQE(SB, 1, QPN, 0, QSW_WC_REG_MR, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    /* QUERY_STAG: device truth, with the new key. */
    CQP_OK(cqp(SB, QRDMA_CQP_OP_QUERY_STAG, fr_stag, INFO, 0, 0, 0, 0));
    memcpy(ctx, mem(SB, INFO), 64);
    CHECK_EQ(ctx[0] & 3, QRDMA_MR_STATE_VALID);
    CHECK_EQ(ctx[1], 0x21);
    CHECK_EQ(r64(SB, INFO + 16), FR_IOVA);
    CHECK_EQ(r64(SB, INFO + 24), 8192);

    post_send(SA, QPN, &wr);
    post_send(SA, QPN, &rd);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_RDMA_READ, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    /* IOVA + x is page (0x100 + x) / 4K of the list at offset (0x100 + x) % 4K. */
    CHECK(!memcmp(dbuf(SA, 0x5000), dbuf(SB, 0xc3100), 0xf00));
    CHECK(!memcmp(dbuf(SA, 0x5f00), dbuf(SB, 0xc1000), 0x1000));
    CHECK(!memcmp(dbuf(SA, 0x6f00), dbuf(SB, 0xc5000), 0x100));
    CHECK_EQ(*dbuf(SB, 0xc30ff), 0xcc);
    CHECK_EQ(*dbuf(SB, 0xc5100), 0xcc);
    CHECK_EQ(*dbuf(SB, 0xc2000), 0xcc);
    /* The READ crossed the first page boundary of the list. */
    CHECK(!memcmp(dbuf(SA, 0x9000), dbuf(SA, 0x5000 + 0xe00), 0x400));

    /* LOCAL_INV, then a WRITE through the dead rkey: remote access error. */
    post_send(SB, QPN, &inv);
    ring_sq(SB, QPN);
    pump();
    EXPECT_CQE(SB, 1, QPN, 1, QSW_WC_LOCAL_INV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK_EQ(SB->core.obj.mr[FR_INDEX].state, QRDMA_MR_STATE_FREE);
    post_send(SA, QPN, &wr);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 2, QSW_WC_RDMA_WRITE, QSW_WC_REM_ACCESS_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(logged(SB, "STag 0x00000221"));
    no_errors(SA);
}

/* Re-registering with another key: the old key stops working at once. */
static void test_fast_reg_rekey(void)
{
    const uint32_t k1 = FR_INDEX << QRDMA_STAG_INDEX_SHIFT | 0x21;
    const uint32_t k2 = FR_INDEX << QRDMA_STAG_INDEX_SHIFT | 0x22;
    struct wqe inv = { .op = QRDMA_SQ_OP_LOCAL_INV, .imm = k1 };
    struct wqe wr = { .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = FR_IOVA - IOVA,
                      .rkey = k2, .nsge = 1, .sge = { { 0x5000, 64, 0 } } };
    struct wqe old = wr;

    rc_pair();
    fast_reg_mr_alloc();
    old.rkey = k1;
    post_fast_reg(SB, QPN, k1, QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE, FR_IOVA,
                  4096, FR_FIRST, 0);
    post_send(SB, QPN, &inv);
    post_fast_reg(SB, QPN, k2, QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE, FR_IOVA,
                  4096, FR_FIRST, 0);
    ring_sq(SB, QPN);
    pump();
    EXPECT_CQE(SB, 1, QPN, 0, QSW_WC_REG_MR, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 1, QPN, 1, QSW_WC_LOCAL_INV, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SB, 1, QPN, 2, QSW_WC_REG_MR, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    fill(SA, 0x5000, 64, 3);
    post_send(SA, QPN, &wr);
    post_send(SA, QPN, &old);
    ring_sq(SA, QPN);
    pump();
    EXPECT_CQE(SA, 1, QPN, 0, QSW_WC_RDMA_WRITE, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
    EXPECT_CQE(SA, 1, QPN, 1, QSW_WC_RDMA_WRITE, QSW_WC_REM_ACCESS_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
    CHECK(!memcmp(dbuf(SA, 0x5000), dbuf(SB, 0xc3000), 64));
}

/*
 * Bad fast registrations complete with LOC_QP_OP_ERR, flush what follows,
 * and leave the MR as it was: a MEM MR, a VALID one, more pages than
 * reserved, another PBLE range, bad ACCESS.
 */
static void test_fast_reg_bad(void)
{
    const uint32_t k = FR_INDEX << QRDMA_STAG_INDEX_SHIFT | 0x21;
    const uint32_t rw = QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE;
    static const struct {
        const char *log;
        uint32_t stag, access;
        uint64_t len, first, fbo;
        bool make_valid;
    } cases[] = {
        { "not a free fast-register MR", MR_STAG, rw, 4096, FR_FIRST, 0, false },
        { "not a free fast-register MR", k, rw, 4096, FR_FIRST, 0, true },
        { "5 pages, but the MR has room for 4", k, rw, 4 * 4096, FR_FIRST, 0x10, false },
        { "must be one level at the MR's own PBLE", k, rw, 4096, FR_FIRST + 1, 0, false },
        { "ACCESS 0x2 is not valid", k, QRDMA_ACCESS_REMOTE_WRITE, 4096, FR_FIRST, 0, false },
        { "do not make a region", k, rw, 0, FR_FIRST, 0, false },
        { "do not make a region", k, rw, 4096, FR_FIRST, 4096, false },
        { "no such MR", 500u << QRDMA_STAG_INDEX_SHIFT, rw, 4096, FR_FIRST, 0, false },
    };
    struct wqe snd = { .op = QRDMA_SQ_OP_SEND, .nsge = 1, .sge = { { 0x5000, 16, 0 } } };
    unsigned c;

    for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        uint32_t idx = 0;

        rc_pair();
        fast_reg_mr_alloc();
        if (cases[c].make_valid) {
            post_fast_reg(SB, QPN, k, rw, FR_IOVA, 4096, FR_FIRST, 0);
            ring_sq(SB, QPN);
            pump();
            EXPECT_CQE(SB, 1, QPN, idx++, QSW_WC_REG_MR, QSW_WC_SUCCESS, QRDMA_CQE_FLAG_SQ, ~0u);
        }
        log_clear(SB);
        post_fast_reg(SB, QPN, cases[c].stag, cases[c].access, FR_IOVA, cases[c].len,
                      cases[c].first, cases[c].fbo);
        post_send(SB, QPN, &snd);
        ring_sq(SB, QPN);
        pump();
        EXPECT_CQE(SB, 1, QPN, idx, QSW_WC_REG_MR, QSW_WC_LOC_QP_OP_ERR, QRDMA_CQE_FLAG_SQ, ~0u);
        EXPECT_CQE(SB, 1, QPN, idx + 1, QSW_WC_SEND, QSW_WC_WR_FLUSH_ERR, QRDMA_CQE_FLAG_SQ,
                   ~0u);
        CHECK_EQ(qp_state(SB, QPN), QRDMA_QPS_ERR);
        if (!logged(SB, cases[c].log)) {
            fprintf(stderr, "  case %u: no log line with '%s'\n", c, cases[c].log);
            unit_failures++;
        }
        CHECK_EQ(SB->core.obj.mr[FR_INDEX].state,
                 cases[c].make_valid ? QRDMA_MR_STATE_VALID : QRDMA_MR_STATE_FREE);
        CHECK_EQ(SB->core.obj.mr[MR_INDEX].state, QRDMA_MR_STATE_VALID);
    }
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_send_recv),
    UNIT_TEST(test_ring_wrap),
    UNIT_TEST(test_send_with_imm),
    UNIT_TEST(test_rdma_write),
    UNIT_TEST(test_rdma_write_with_imm),
    UNIT_TEST(test_rdma_read),
    UNIT_TEST(test_atomics),
    UNIT_TEST(test_inline),
    UNIT_TEST(test_multi_sge),
    UNIT_TEST(test_unsignaled),
    UNIT_TEST(test_sig_all),
    UNIT_TEST(test_nop),
    UNIT_TEST(test_ud),
    UNIT_TEST(test_ud_bad_ah),
    UNIT_TEST(test_srq),
    UNIT_TEST(test_cq_arm),
    UNIT_TEST(test_bad_rkey),
    UNIT_TEST(test_remote_access_rights),
    UNIT_TEST(test_bad_lkey),
    UNIT_TEST(test_bad_opcode),
    UNIT_TEST(test_bad_wqe_order),
    UNIT_TEST(test_too_many_sges),
    UNIT_TEST(test_bad_doorbell),
    UNIT_TEST(test_cq_overflow),
    UNIT_TEST(test_cq_head),
    UNIT_TEST(test_rq_flush),
    UNIT_TEST(test_rnr),
    UNIT_TEST(test_rnr_exceeded),
    UNIT_TEST(test_retransmit),
    UNIT_TEST(test_destroy_in_flight),
    UNIT_TEST(test_fast_reg),
    UNIT_TEST(test_fast_reg_rekey),
    UNIT_TEST(test_fast_reg_bad),
    UNIT_TEST(test_fault_hook),
    UNIT_TEST(test_fault_limits),
};

int main(void)
{
    int ret = unit_run("core-dp", tests, sizeof(tests) / sizeof(tests[0]));
    int i;

    fq_clear();
    for (i = 0; i < 2; i++) {
        qrdma_core_fini(&sides[i].core);
        free(sides[i].ram);
        sides[i].ram = NULL;
    }
    return ret;
}
