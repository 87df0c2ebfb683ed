/*
 * The two-core test bed of the core-dp suite (see dp_testbed.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "dp_testbed.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/qrdma_core_int.h"
#include "unit.h"

/* ---- the two sides' embedding ------------------------------------------------------- */

struct side sides[2];
uint64_t now_ns = 1000000000ull;
/* The device's fault-injection hook (cfg.fault) and retry_cnt for the sides set up next. */
struct qrdma_core_fault_cfg dev_fault;
uint32_t dev_stall_floor_ms;
uint32_t dev_cqp_stall_opcode = QRDMA_CQP_STALL_NEVER;
uint32_t dev_max_mcast_grp, dev_max_mcast_qp_attach;
const struct qrdma_be_ops *dev_backend_ops;
const void *dev_backend_config;
const uint8_t *dev_gid;
unsigned rc_retry_cnt = 3;
int (*dp_tb_wire)(struct side *from, const uint8_t *frame, size_t len);
int (*dp_tb_wire_iov)(struct side *from, const struct iovec *iov, unsigned n);
bool dp_tb_copy_tx;
uint64_t (*dp_tb_clock)(void);

struct frame {
    struct frame *next;
    struct side *dst;
    size_t len;
    uint8_t data[];
};

static struct frame *fq_head, **fq_tail = &fq_head;
int frames_in_flight;
int drop_frames;

/* Frames each side's netdev keeps (struct side's tx_limit). */
static struct frame *kq_head[2], **kq_tail[2] = { &kq_head[0], &kq_head[1] };

void fq_clear(void)
{
    while (fq_head) {
        struct frame *f = fq_head;

        fq_head = f->next;
        free(f);
    }
    fq_tail = &fq_head;
    frames_in_flight = 0;
    for (int i = 0; i < 2; i++) {
        while (kq_head[i]) {
            struct frame *f = kq_head[i];

            kq_head[i] = f->next;
            free(f);
        }
        kq_tail[i] = &kq_head[i];
        sides[i].tx_kept = 0;
    }
}

void dp_tb_tx_drain(struct side *s, unsigned room)
{
    struct frame *f;

    while ((f = kq_head[s->idx])) {
        kq_head[s->idx] = f->next;
        if (!kq_head[s->idx]) {
            kq_tail[s->idx] = &kq_head[s->idx];
        }
        f->next = NULL;
        *fq_tail = f;
        fq_tail = &f->next;
        frames_in_flight++;
        s->tx_kept--;
        qrdma_core_tx_ready(&s->core);
    }
    s->tx_room = room;
    if (room == UINT_MAX) {
        s->tx_limit = false;
    }
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

    if (s->dma_off || !in_ram(addr, len)) {
        return -1;
    }
    memcpy(buf, s->ram + (addr - RAM_BASE), len);
    return 0;
}

static int env_dma_write(void *opaque, uint64_t addr, const void *buf, size_t len)
{
    struct side *s = opaque;

    if (s->dma_off || !in_ram(addr, len)) {
        return -1;
    }
    memcpy(s->ram + (addr - RAM_BASE), buf, len);
    return 0;
}

void (*dp_tb_irq_hook)(struct side *s, unsigned vector);

static void env_msix_notify(void *opaque, unsigned vector)
{
    struct side *s = opaque;

    s->irqs++;
    if (dp_tb_irq_hook) {
        dp_tb_irq_hook(s, vector);
    }
}

static int env_send_frame(void *opaque, const uint8_t *data, size_t len)
{
    struct side *s = opaque;
    struct frame *f;

    s->frames_sent++;
    if (s->tx_limit && (s->tx_kept || !s->tx_room)) {
        f = malloc(sizeof(*f) + len);
        CHECK(f != NULL);
        if (!f) {
            return QRDMA_TX_SENT;
        }
        f->next = NULL;
        f->dst = s == SA ? SB : SA;
        f->len = len;
        memcpy(f->data, data, len);
        *kq_tail[s->idx] = f;
        kq_tail[s->idx] = &f->next;
        if (++s->tx_kept > s->tx_kept_max) {
            s->tx_kept_max = s->tx_kept;
        }
        return QRDMA_TX_QUEUED;
    }
    if (s->tx_limit) {
        s->tx_room--;
    }
    if (dp_tb_wire) {
        return dp_tb_wire(s, data, len);
    }
    if (drop_frames > 0) {
        drop_frames--;
        return 0;
    }
    f = malloc(sizeof(*f) + len);
    CHECK(f != NULL);
    if (!f) {
        return 0;
    }
    f->next = NULL;
    f->dst = s == SA ? SB : SA;
    f->len = len;
    memcpy(f->data, data, len);
    *fq_tail = f;
    fq_tail = &f->next;
    frames_in_flight++;
    return 0;
}

/* Guest RAM is one host buffer: a mapping is a pointer into it, counted until given back. */
static const void *env_dma_map_read(void *opaque, uint64_t addr, size_t len)
{
    struct side *s = opaque;

    if (s->dma_off || s->map_off || !in_ram(addr, len) || ++s->map_calls == s->map_fail_at) {
        return NULL;
    }
    s->maps_out++;
    s->maps++;
    return s->ram + (addr - RAM_BASE);
}

static void env_dma_unmap_read(void *opaque, const void *p, size_t len)
{
    struct side *s = opaque;
    const uint8_t *b = p;

    CHECK(s->maps_out > 0);
    CHECK(b >= s->ram && len <= RAM_SIZE && (size_t)(b - s->ram) <= RAM_SIZE - len);
    s->maps_out--;
}

static int env_send_frame_iov(void *opaque, const struct iovec *iov, unsigned n)
{
    struct side *s = opaque;
    static uint8_t joined[16384];
    size_t len = 0;

    s->frames_iov++;
    CHECK(s->maps_out > 0);                 /* the payload is still mapped while it is sent */
    if (dp_tb_wire_iov) {
        s->frames_sent++;
        return dp_tb_wire_iov(s, iov, n);
    }
    for (unsigned i = 0; i < n; i++) {
        CHECK(iov[i].iov_len <= sizeof(joined) - len);
        if (iov[i].iov_len > sizeof(joined) - len) {
            return 0;
        }
        memcpy(joined + len, iov[i].iov_base, iov[i].iov_len);
        len += iov[i].iov_len;
    }
    return env_send_frame(s, joined, len);
}

static void env_kick(void *opaque, unsigned what)
{
    ((struct side *)opaque)->kicks |= what;
}

static void env_rx_ready(void *opaque)
{
    ((struct side *)opaque)->rx_ready_calls++;
}

static uint64_t env_now_ns(void *opaque)
{
    return dp_tb_clock ? dp_tb_clock() : now_ns;
}

static void env_timer_mod(void *opaque, uint64_t deadline_ns)
{
    ((struct side *)opaque)->timer = deadline_ns;
}

/* ---- guest memory of one side ------------------------------------------------------ */

void (*dp_tb_touch)(struct side *s, uint64_t addr, size_t len);
void (*dp_tb_clear_ram)(struct side *s);

uint8_t *mem(struct side *s, uint64_t addr)
{
    CHECK(in_ram(addr, 1));
    if (dp_tb_touch) {
        dp_tb_touch(s, addr, 1);
    }
    return s->ram + (addr - RAM_BASE);
}

/*
 * n bytes at a, all checked to be in RAM. The accessors below use the
 * device core's own little-endian helpers, one load or store each (the
 * benchmarks post WQEs and poll CQEs through them).
 */
static uint8_t *span(struct side *s, uint64_t a, size_t n)
{
    CHECK(in_ram(a, n));
    if (dp_tb_touch) {
        dp_tb_touch(s, a, n);
    }
    return s->ram + (a - RAM_BASE);
}

void w8(struct side *s, uint64_t a, uint8_t v)
{
    *mem(s, a) = v;
}

void w16(struct side *s, uint64_t a, uint16_t v)
{
    qrdma_st_le16(span(s, a, 2), v);
}

void w32(struct side *s, uint64_t a, uint32_t v)
{
    qrdma_st_le32(span(s, a, 4), v);
}

void w64(struct side *s, uint64_t a, uint64_t v)
{
    qrdma_st_le64(span(s, a, 8), v);
}

uint64_t r64(struct side *s, uint64_t a)
{
    return qrdma_ld_le64(span(s, a, 8));
}

/* Host pointer to byte off of the data area (the MR). */
uint8_t *dbuf(struct side *s, uint64_t off)
{
    return mem(s, DATA + off);
}

void fill(struct side *s, uint64_t off, size_t len, unsigned seed)
{
    uint8_t *p = dbuf(s, off);
    size_t i;

    for (i = 0; i < len; i++) {
        p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
    }
}

void reg_w(struct side *s, uint32_t off, uint32_t v)
{
    qrdma_core_reg_write(&s->core, off, 4, v);
}

uint32_t reg_r(struct side *s, uint32_t off)
{
    return qrdma_core_reg_read(&s->core, off, 4);
}

uint64_t port_stat(struct side *s, unsigned i)
{
    reg_w(s, QRDMA_REG_STATS_CTRL, QRDMA_STATS_CTRL_SNAPSHOT);
    return reg_r(s, QRDMA_REG_STAT_LO(i)) | (uint64_t)reg_r(s, QRDMA_REG_STAT_HI(i)) << 32;
}

bool logged(struct side *s, const char *needle)
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

void no_errors(struct side *s)
{
    int i;

    CHECK_EQ(s->guest_errors, 0);
    for (i = 0; i < s->log_n && i < LOG_N; i++) {
        fprintf(stderr, "  side %c: guest error: %s\n", 'A' + s->idx, s->log[i]);
    }
}

void log_clear(struct side *s)
{
    s->log_n = 0;
    s->guest_errors = 0;
}

/* ---- running ------------------------------------------------------------------------ */

/* Hand the oldest frame on the wire to its receiver; false when there is none. */
static bool deliver_one(void)
{
    struct frame *f = fq_head;

    if (!f) {
        return false;
    }
    fq_head = f->next;
    if (!fq_head) {
        fq_tail = &fq_head;
    }
    frames_in_flight--;
    CHECK_EQ(qrdma_core_lan_receive(&f->dst->core, f->data, f->len), f->len);
    free(f);
    return true;
}

/*
 * Run kicked work and deliver frames until both sides are quiet. With
 * timers, then fire the earliest data-path timer (moving the clock to it)
 * and go on, as long as one is due before limit.
 */
void pump_until(bool timers, uint64_t limit)
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
        while (deliver_one()) {
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

void pump(void)
{
    pump_until(false, 0);
}

void pump_some(int frames)
{
    while (frames > 0) {
        bool busy = false;
        int i;

        for (i = 0; i < 2; i++) {
            unsigned what = sides[i].kicks;

            if (what) {
                sides[i].kicks = 0;
                qrdma_core_run(&sides[i].core, what);
                busy = true;
            }
        }
        if (deliver_one()) {
            frames--;
            busy = true;
        }
        if (!busy) {
            return;
        }
    }
}

/* Pump, firing timers up to ms milliseconds from now. */
void pump_ms(unsigned ms)
{
    pump_until(true, now_ns + ms * 1000000ull);
}

/* ---- the driver's CQP ---------------------------------------------------------------- */

uint64_t last_status;
uint64_t last_retval;

unsigned major_of(uint64_t st)
{
    return (st & QRDMA_CCQ_CQE_MAJOR_MASK) >> QRDMA_CCQ_CQE_MAJOR_SHIFT;
}

/* Run one CQP command on side s; returns its status qword. */
uint64_t cqp(struct side *s, uint8_t op, uint64_t a0, uint64_t a1, uint64_t a2,
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
    last_retval = r64(s, c + 8);
    CHECK_EQ((last_status & QRDMA_CCQ_CQE_OPCODE_MASK) >> QRDMA_CCQ_CQE_OPCODE_SHIFT, op);
    s->ccq_head = (s->ccq_head + 1) & ((1u << CQP_LOG2) - 1);
    if (!s->ccq_head) {
        s->ccq_valid = !s->ccq_valid;
    }
    w64(s, CQP_SHADOW, s->ccq_head);
    return last_status;
}

/* ---- bring-up ---------------------------------------------------------------------- */

void side_ident(struct side *s, int idx)
{
    s->idx = idx;
    /* 02:00:00:00:00:0a / 0b, GID ::ffff:10.0.0.1 / 2 */
    memset(s->mac, 0, sizeof(s->mac));
    memset(s->gid, 0, sizeof(s->gid));
    s->mac[0] = 0x02;
    s->mac[5] = 0x0a + idx;
    s->gid[10] = s->gid[11] = 0xff;
    s->gid[12] = 10;
    s->gid[15] = 1 + idx;
    if (dev_gid) {
        memcpy(s->gid, dev_gid, sizeof(s->gid));
    }
}

/* Make s's core from the current dev_* settings, in reset (no bring-up). */
void side_core_init(struct side *s)
{
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
    char err[128] = "";

    if (!dp_tb_copy_tx) {
        env.dma_map_read = env_dma_map_read;
        env.dma_unmap_read = env_dma_unmap_read;
        env.send_frame_iov = env_send_frame_iov;
    }

    qrdma_core_config_defaults(&cfg);
    memcpy(cfg.mac, s->mac, 6);
    cfg.pe_ready_delay_us = QRDMA_PE_READY_NEVER;
    cfg.fault = dev_fault;
    /* IBTA's retry rule alone unless a test asks for the floor. */
    cfg.stall_floor_ms = dev_stall_floor_ms;
    cfg.cqp_stall_opcode = dev_cqp_stall_opcode;
    if (dev_max_mcast_grp) {
        cfg.max_mcast_grp = dev_max_mcast_grp;
    }
    if (dev_max_mcast_qp_attach) {
        cfg.max_mcast_qp_attach = dev_max_mcast_qp_attach;
    }
    cfg.backend_ops = dev_backend_ops;
    cfg.backend_config = dev_backend_config;
    CHECK_EQ(qrdma_core_init(&s->core, &cfg, &env, err, sizeof(err)), 0);
    qrdma_core_reset(&s->core);
}

void side_up(struct side *s, int idx)
{
    uint8_t *ram = s->ram;

    qrdma_core_fini(&s->core);
    memset(s, 0, sizeof(*s));
    s->ram = ram ? ram : malloc(RAM_SIZE);
    memset(s->ram, 0, RAM_SIZE);
    side_ident(s, idx);
    s->timer = UINT64_MAX;
    s->cqp_valid = s->ccq_valid = true;
    side_core_init(s);
    side_bringup(s);
}

void side_bringup(struct side *s)
{
    static const uint64_t counts[QRDMA_HMC_NUM_TYPES] = { N_QP, N_CQ, N_SRQ, N_MR, N_AH,
                                                          N_PBLE };
    const int idx = s->idx;
    unsigned t;

    /* The driver's view starts over; its rings (not the data area) are zeroed. */
    s->cqp_next = s->ccq_head = 0;
    s->cqp_valid = s->ccq_valid = true;
    s->aeq_head = s->ceq_head = 0;
    memset(s->qp, 0, sizeof(s->qp));
    memset(s->cq, 0, sizeof(s->cq));
    s->srq_log2 = s->srq_stride_log2 = 0;
    s->srq_posted = 0;
    if (dp_tb_clear_ram) {
        dp_tb_clear_ram(s);
    } else {
        memset(s->ram, 0, DATA - RAM_BASE);
        memset(s->ram + (HMC_RAM - RAM_BASE), 0, RAM_SIZE - (HMC_RAM - RAM_BASE));
    }
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
void setup(void)
{
    fq_clear();
    drop_frames = 0;
    side_up(SA, 0);
    side_up(SB, 1);
    no_errors(SA);
    no_errors(SB);
}

/* At the end of a suite: both cores and their RAM freed, the wire empty (LeakSanitizer). */
void teardown(void)
{
    int i;

    fq_clear();
    for (i = 0; i < 2; i++) {
        CHECK(sides[i].maps_out == 0);      /* every mapping given back */
        qrdma_core_fini(&sides[i].core);
        free(sides[i].ram);
        sides[i].ram = NULL;
    }
}

/* ---- objects ------------------------------------------------------------------------- */

void create_cq_ex(struct side *s, uint32_t id, unsigned log2, bool ceq)
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

void create_cq(struct side *s, uint32_t id)
{
    create_cq_ex(s, id, 4, false);
}

const struct qp_spec rc_spec = {
    .type = QRDMA_QP_TYPE_RC, .send_cq = 1, .recv_cq = 2,
    .sq_log2 = 3, .sq_wqe_log2 = 8, .rq_log2 = 3, .rq_wqe_log2 = 6,
};

const struct qp_spec ud_spec = {
    .type = QRDMA_QP_TYPE_UD, .send_cq = 1, .recv_cq = 2,
    .sq_log2 = 3, .sq_wqe_log2 = 7, .rq_log2 = 3, .rq_wqe_log2 = 5,
};

uint64_t gid_word(const uint8_t *gid)
{
    uint64_t v = 0;
    int i;

    for (i = 7; i >= 0; i--) {
        v = v << 8 | gid[i];
    }
    return v;
}

uint64_t create_qp_status(struct side *s, uint32_t id, const struct qp_spec *p)
{
    const bool srq = p->flags & QRDMA_QP_CREATE_SRQ;
    uint64_t st;

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
    w64(s, INFO + offsetof(struct qrdma_qp_create_info, rq_addr),
        srq ? 0 : p->rq_addr ? p->rq_addr : RQ_RING(id));
    w64(s, INFO + offsetof(struct qrdma_qp_create_info, qp_ctx), QPCTX(id));
    st = cqp(s, QRDMA_CQP_OP_CREATE_QP, id, INFO, 0, 0, 0, 0);
    memset(&s->qp[id], 0, sizeof(s->qp[id]));
    s->qp[id].sq_log2 = p->sq_log2;
    s->qp[id].sq_stride_log2 = p->sq_wqe_log2;
    s->qp[id].rq_log2 = p->rq_log2;
    s->qp[id].rq_stride_log2 = p->rq_wqe_log2;
    return st;
}

void create_qp(struct side *s, uint32_t id, const struct qp_spec *p)
{
    CQP_OK(create_qp_status(s, id, p));
}

/* Start a modify info: the mask and new state, everything else 0. */
void mod_begin(struct side *s, uint32_t mask, uint8_t state)
{
    memset(mem(s, INFO), 0, sizeof(struct qrdma_qp_modify_info));
    w32(s, MI(attr_mask), mask | QRDMA_QP_ATTR_STATE);
    w8(s, MI(state), state);
}

uint64_t mod_run(struct side *s, uint32_t id)
{
    return cqp(s, QRDMA_CQP_OP_MODIFY_QP, id, INFO, 0, 0, 0, 0);
}

void modify_state(struct side *s, uint32_t id, uint8_t state)
{
    mod_begin(s, 0, state);
    CQP_OK(mod_run(s, id));
}

void write_av_to(struct side *s, uint64_t addr, const uint8_t *dgid, const uint8_t *dmac)
{
    memset(mem(s, addr), 0, sizeof(struct qrdma_av));
    memcpy(mem(s, addr + offsetof(struct qrdma_av, dgid)), dgid, 16);
    if (dmac) {
        memcpy(mem(s, addr + offsetof(struct qrdma_av, dmac)), dmac, 6);
    }
    w8(s, addr + offsetof(struct qrdma_av, hop_limit), 64);
}

/* An AV at addr toward side peer (its GID and MAC), source GID 0. */
void write_av(struct side *s, uint64_t addr, const struct side *peer)
{
    write_av_to(s, addr, peer->gid, peer->mac);
}

void rc_connect(struct side *s, uint32_t id, const uint8_t *dgid, const uint8_t *dmac,
                uint32_t dest_qpn, uint32_t rq_psn, uint32_t sq_psn, unsigned rnr_retry,
                unsigned path_mtu)
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
    w8(s, MI(path_mtu), path_mtu);
    w32(s, MI(dest_qpn), dest_qpn);
    w32(s, MI(rq_psn), rq_psn);
    w8(s, MI(max_dest_rd_atomic), 4);
    w8(s, MI(min_rnr_timer), 1);            /* 10 us */
    write_av_to(s, MI(av), dgid, dmac);
    CQP_OK(mod_run(s, id));

    mod_begin(s, QRDMA_QP_ATTR_SQ_PSN | QRDMA_QP_ATTR_TIMEOUT | QRDMA_QP_ATTR_RETRY_CNT |
              QRDMA_QP_ATTR_RNR_RETRY | QRDMA_QP_ATTR_MAX_QP_RD_ATOMIC, QRDMA_QPS_RTS);
    w32(s, MI(sq_psn), sq_psn);
    w8(s, MI(timeout), 14);                 /* 67 ms */
    w8(s, MI(retry_cnt), rc_retry_cnt);
    w8(s, MI(rnr_retry), rnr_retry);
    w8(s, MI(max_rd_atomic), 4);
    CQP_OK(mod_run(s, id));
    CHECK_EQ(qrdma_qp_get(&s->core, id)->state, QRDMA_QPS_RTS);
}

void rc_to_rts_mtu(struct side *s, uint32_t id, struct side *peer, uint32_t peer_id,
                   unsigned rnr_retry, unsigned path_mtu)
{
    rc_connect(s, id, peer->gid, peer->mac, peer_id, PSN(peer), PSN(s), rnr_retry, path_mtu);
}

void rc_to_rts(struct side *s, uint32_t id, struct side *peer, uint32_t peer_id,
               unsigned rnr_retry)
{
    rc_to_rts_mtu(s, id, peer, peer_id, rnr_retry, 3);
}

bool uc_to_rts(struct side *s, uint32_t id, struct side *peer, uint32_t peer_id)
{
    bool ok;

    mod_begin(s, QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_PORT | QRDMA_QP_ATTR_ACCESS_FLAGS,
              QRDMA_QPS_INIT);
    w8(s, MI(port_num), 1);
    w32(s, MI(access_flags), QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE);
    ok = !major_of(mod_run(s, id));
    mod_begin(s, QRDMA_QP_ATTR_AV | QRDMA_QP_ATTR_PATH_MTU | QRDMA_QP_ATTR_DEST_QPN |
              QRDMA_QP_ATTR_RQ_PSN, QRDMA_QPS_RTR);
    w8(s, MI(path_mtu), 3);
    w32(s, MI(dest_qpn), peer_id);
    w32(s, MI(rq_psn), PSN(peer));
    write_av(s, MI(av), peer);
    ok = !major_of(mod_run(s, id)) && ok;
    mod_begin(s, QRDMA_QP_ATTR_SQ_PSN, QRDMA_QPS_RTS);
    w32(s, MI(sq_psn), PSN(s));
    return !major_of(mod_run(s, id)) && ok;
}

void ud_to_rts(struct side *s, uint32_t id)
{
    ud_to_rts_qkey(s, id, QKEY, PSN(s));
}

void ud_to_rts_qkey(struct side *s, uint32_t id, uint32_t qkey, uint32_t sq_psn)
{
    mod_begin(s, QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_PORT | QRDMA_QP_ATTR_QKEY,
              QRDMA_QPS_INIT);
    w8(s, MI(port_num), 1);
    w32(s, MI(qkey), qkey);
    CQP_OK(mod_run(s, id));
    modify_state(s, id, QRDMA_QPS_RTR);
    mod_begin(s, QRDMA_QP_ATTR_SQ_PSN, QRDMA_QPS_RTS);
    w32(s, MI(sq_psn), sq_psn);
    CQP_OK(mod_run(s, id));
    CHECK_EQ(qrdma_qp_get(&s->core, id)->state, QRDMA_QPS_RTS);
}

void rc_pair_spec(const struct qp_spec *sa, const struct qp_spec *sb, unsigned rnr_retry)
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

void rc_pair(void)
{
    rc_pair_spec(&rc_spec, &rc_spec, 7);
}

/* ---- the provider: WQEs and CQEs ---------------------------------------------------- */

/* Write one SQ WQE (VALID last) and return its index; no doorbell. */
uint64_t sq_next_slot(struct side *s, uint32_t qp, uint32_t *index, bool *valid)
{
    uint32_t n = s->qp[qp].sq_posted++;

    *index = n & ((1u << s->qp[qp].sq_log2) - 1);
    *valid = !((n >> s->qp[qp].sq_log2) & 1);   /* the valid bit flips each ring pass */
    return SQ_RING(qp) + ((uint64_t)*index << s->qp[qp].sq_stride_log2);
}

uint32_t post_send(struct side *s, uint32_t qp, const struct wqe *w)
{
    uint32_t index;
    bool valid;
    uint64_t a = sq_next_slot(s, qp, &index, &valid);
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

void write_rq_wqe(struct side *s, uint64_t a, bool valid, unsigned nsge,
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

uint32_t post_recv_n(struct side *s, uint32_t qp, unsigned nsge, const struct sge *sge)
{
    uint32_t n = s->qp[qp].rq_posted++;
    uint32_t index = n & ((1u << s->qp[qp].rq_log2) - 1);

    write_rq_wqe(s, RQ_RING(qp) + ((uint64_t)index << s->qp[qp].rq_stride_log2),
                 !((n >> s->qp[qp].rq_log2) & 1), nsge, sge, 0);
    return index;
}

uint32_t post_recv(struct side *s, uint32_t qp, uint64_t off, uint32_t len)
{
    const struct sge sge = { off, len, 0 };

    return post_recv_n(s, qp, 1, &sge);
}

void db(struct side *s, uint32_t page, uint32_t which, uint32_t value)
{
    qrdma_core_db_write(&s->core, (uint64_t)page * QRDMA_DB_PAGE_SIZE + which, 4, value);
}

void ring_sq(struct side *s, uint32_t qp)
{
    db(s, 0, QRDMA_DB_SQ, qp);
}

void ring_rq(struct side *s, uint32_t qp)
{
    db(s, 0, QRDMA_DB_RQ, qp);
}

bool cq_take(struct side *s, uint32_t cq, struct cqe *e)
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
    return true;
}

void cq_publish(struct side *s, uint32_t cq)
{
    w64(s, CQ_SHADOW(cq), s->cq[cq].head);
}

bool poll_cq(struct side *s, uint32_t cq, struct cqe *e)
{
    if (!cq_take(s, cq, e)) {
        return false;
    }
    cq_publish(s, cq);
    return true;
}

void expect_no_cqe(struct side *s, uint32_t cq)
{
    struct cqe e;

    if (poll_cq(s, cq, &e)) {
        fprintf(stderr, "  side %c CQ %u: unexpected CQE qp %u index %u opcode %u status %u\n",
                'A' + s->idx, cq, e.qp, e.wqe_index, e.opcode, e.status);
        unit_failures++;
    }
}

bool poll_aeq(struct side *s, struct aeqe *e)
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
bool aeq_has(struct side *s, uint16_t code, uint32_t id, uint8_t source, uint64_t ctx)
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

unsigned aeq_drain(struct side *s)
{
    struct aeqe e;
    unsigned n = 0;

    while (poll_aeq(s, &e)) {
        n++;
    }
    return n;
}

bool poll_ceq(struct side *s, uint64_t *ctx)
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

uint8_t qp_state(struct side *s, uint32_t id)
{
    struct qrdma_qp *qp = qrdma_qp_get(&s->core, id);

    return qp ? qp->state : 0xff;
}

