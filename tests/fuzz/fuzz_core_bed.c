/*
 * The device-core data-path fuzzers' bed (see fuzz_core_bed.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fuzz_core_bed.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/qrdma_core_int.h"
#include "qrdma_sw.h"
#include "sw_int.h"
#include "fuzz_frame.h"

int unit_failures;                      /* the test bed's CHECKs count here */
struct fzb_wire fzb_wire;
struct fzb_reenter fzb_reenter[2];
bool fzb_reenter_on = true;
bool fzb_trace;
void (*fzb_capture)(int from, const uint8_t *frame, size_t len);

const uint32_t fzb_qps[FZB_NQPS] = { FZB_QP_RC, FZB_QP_UC, FZB_QP_UD, FZB_QP_SRQ,
                                     FZB_QP_LOOP_A, FZB_QP_LOOP_B, FZB_QP_VIRT };

static struct fzb_count count;
static int reenter_depth;
static struct qsw_engine *checker;      /* parses every frame the transport sends */

static void __attribute__((noreturn, format(printf, 1, 2))) bug(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "fuzz_core: device bug: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

/* ---- the embedding ------------------------------------------------------------------------ */

static void env_guest_error(void *opaque, const char *msg)
{
    struct side *s = opaque;

    s->guest_errors++;
    if (fzb_trace) {
        fprintf(stderr, "  side %c: guest error: %s\n", 'A' + s->idx, msg);
    }
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

static void dma_count(struct side *s, uint64_t addr, size_t len, bool read)
{
    if (len > RAM_SIZE) {
        bug("side %c: a DMA %s of %zu bytes at 0x%llx, more than all of guest RAM",
            'A' + s->idx, read ? "read" : "write", len, (unsigned long long)addr);
    }
    count.dma_bytes += len;
    if (read && ++count.dma_reads > FZB_MAX_DMA_READS) {
        bug("side %c: more than %u guest reads in one call (unbounded work?)", 'A' + s->idx,
            FZB_MAX_DMA_READS);
    }
    if (count.dma_bytes > FZB_MAX_DMA_BYTES) {
        bug("side %c: more than %llu bytes of DMA in one call (unbounded work?)", 'A' + s->idx,
            (unsigned long long)FZB_MAX_DMA_BYTES);
    }
}

static int env_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    struct side *s = opaque;

    dma_count(s, addr, len, true);
    if (!in_ram(addr, len)) {
        return -1;
    }
    memcpy(buf, s->ram + (addr - RAM_BASE), len);
    return 0;
}

/*
 * Guest RAM is cleared between inputs only where the last one wrote or
 * looked: 4 KB pages marked by the device's DMA writes, by the bed's
 * accessors (dp_tb_touch) and by fzb_dirty() (clearing all of RAM took a
 * third of an input's time, the driver's areas alone a sixth). The
 * driver's areas are cleared at every bring-up (dp_tb_clear_ram), the data
 * area [DATA, HMC_RAM) at the start of an input only.
 */
#define DIRTY_SHIFT 12
#define DIRTY_DATA ((DATA - RAM_BASE) >> DIRTY_SHIFT)
#define DIRTY_HMC ((HMC_RAM - RAM_BASE) >> DIRTY_SHIFT)
#define DIRTY_PAGES (RAM_SIZE >> DIRTY_SHIFT)

static bool dirty[2][DIRTY_PAGES];

void fzb_dirty(struct side *s, uint64_t addr, size_t len)
{
    uint64_t c;

    if (!len || !in_ram(addr, len)) {
        return;
    }
    for (c = (addr - RAM_BASE) >> DIRTY_SHIFT; c <= (addr - RAM_BASE + len - 1) >> DIRTY_SHIFT;
         c++) {
        dirty[s->idx][c] = true;
    }
}

static void clear_pages(struct side *s, unsigned first, unsigned end)
{
    unsigned c;

    for (c = first; c < end; c++) {
        if (dirty[s->idx][c]) {
            memset(s->ram + ((size_t)c << DIRTY_SHIFT), 0, 1u << DIRTY_SHIFT);
            dirty[s->idx][c] = false;
        }
    }
}

/*
 * QRDMA_FUZZ_CHECK_CLEAR=1: after clearing, check that the pages really are
 * zero, i.e. that no write escaped the marking (run over a corpus after a
 * change to the bed or the programs).
 */
static bool check_clear;

static void check_zero(struct side *s, unsigned first, unsigned end)
{
    size_t off;

    for (off = (size_t)first << DIRTY_SHIFT; off < (size_t)end << DIRTY_SHIFT; off++) {
        if (s->ram[off]) {
            bug("side %c: RAM at 0x%llx written without being marked dirty", 'A' + s->idx,
                (unsigned long long)(RAM_BASE + off));
        }
    }
}

static void clear_data(struct side *s)
{
    clear_pages(s, DIRTY_DATA, DIRTY_HMC);
    if (check_clear) {
        check_zero(s, DIRTY_DATA, DIRTY_HMC);
    }
}

static void clear_driver_areas(struct side *s)
{
    clear_pages(s, 0, DIRTY_DATA);
    clear_pages(s, DIRTY_HMC, DIRTY_PAGES);
    if (check_clear) {
        check_zero(s, 0, DIRTY_DATA);
        check_zero(s, DIRTY_HMC, DIRTY_PAGES);
    }
}

static int env_dma_write(void *opaque, uint64_t addr, const void *buf, size_t len)
{
    struct side *s = opaque;

    dma_count(s, addr, len, false);
    if (!in_ram(addr, len)) {
        return -1;
    }
    fzb_dirty(s, addr, len);
    memcpy(s->ram + (addr - RAM_BASE), buf, len);
    return 0;
}

/* The armed action, from inside the callback, into the same core. */
static void reenter(struct side *s)
{
    struct fzb_reenter *r = &fzb_reenter[s->idx];
    struct fzb_reenter act = *r;

    if (act.kind == FZB_RE_NONE || reenter_depth) {
        return;
    }
    r->kind = FZB_RE_NONE;
    if (!fzb_reenter_on) {
        return;
    }
    reenter_depth++;
    switch (act.kind) {
    case FZB_RE_REG:
        qrdma_core_reg_write(&s->core, act.offset, 4, act.value);
        break;
    case FZB_RE_DB:
        qrdma_core_db_write(&s->core, act.offset, 4, act.value);
        break;
    case FZB_RE_RESET:
        qrdma_core_reset(&s->core);
        break;
    case FZB_RE_RUN:
        qrdma_core_run(&s->core, (unsigned)act.value & 7);
        break;
    default:
        break;
    }
    reenter_depth--;
}

static void env_msix_notify(void *opaque, unsigned vector)
{
    struct side *s = opaque;

    if (vector >= s->core.cfg.msix_vectors) {
        bug("side %c: MSI-X vector %u of %u", 'A' + s->idx, vector, s->core.cfg.msix_vectors);
    }
    s->irqs++;
    reenter(s);
}

/* What the transport sends must be what it accepts itself. */
static void check_frame(struct side *s, const uint8_t *f, size_t len)
{
    struct qsw_pkt pkt;

    if (len < ETH_HLEN || len > QRDMA_LAN_MTU_MAX + QRDMA_LAN_FRAME_OVERHEAD) {
        bug("side %c: a frame of %zu bytes sent", 'A' + s->idx, len);
    }
    if (s->core.lan.tx.len) {
        return;                     /* the guest may send any frame through the LAN ring */
    }
    if (len > QSW_MAX_FRAME) {
        bug("side %c: a RoCE frame of %zu bytes sent", 'A' + s->idx, len);
    }
    qsw_engine_set_mac(checker, f);
    if (qsw_parse(checker, f, len, &pkt)) {
        bug("side %c: a frame of %zu bytes sent that the transport's parser drops",
            'A' + s->idx, len);
    }
}

static int env_send_frame(void *opaque, const uint8_t *data, size_t len)
{
    struct side *s = opaque;
    struct fzb_frame *f;

    check_frame(s, data, len);
    if (++count.frames > FZB_MAX_FRAMES) {
        bug("side %c: more than %u frames sent in one call", 'A' + s->idx, FZB_MAX_FRAMES);
    }
    s->frames_sent++;
    if (fzb_capture) {
        fzb_capture(s->idx, data, len);
    }
    if (fzb_wire.count == FZB_WIRE_MAX) {
        fzb_wire.dropped++;
        return 0;
    }
    f = &fzb_wire.f[(fzb_wire.head + fzb_wire.count++) % FZB_WIRE_MAX];
    f->from = s->idx;
    f->len = len;
    memcpy(f->data, data, len);
    return 0;
}

static void env_kick(void *opaque, unsigned what)
{
    struct side *s = opaque;

    if (what & ~(unsigned)(QRDMA_WORK_LAN_TX | QRDMA_WORK_CQP | QRDMA_WORK_DP)) {
        bug("side %c: kick for work 0x%x", 'A' + s->idx, what);
    }
    s->kicks |= what;
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

/* ---- calls into the core --------------------------------------------------------------------- */

void fzb_enter(void)
{
    memset(&count, 0, sizeof(count));
}

void fzb_run(struct side *s, unsigned what)
{
    fzb_enter();
    qrdma_core_run(&s->core, what);
}

void fzb_timer(struct side *s)
{
    fzb_enter();
    s->timer = UINT64_MAX;
    qrdma_core_timer(&s->core);
}

size_t fzb_receive(struct side *s, const uint8_t *frame, size_t len)
{
    size_t r;

    fzb_enter();
    if (!qrdma_core_lan_can_receive(&s->core)) {
        return 0;
    }
    r = qrdma_core_lan_receive(&s->core, frame, len);
    if (r != len) {
        bug("side %c: lan_receive of %zu bytes returned %zu", 'A' + s->idx, len, r);
    }
    return r;
}

void fzb_reset(struct side *s)
{
    fzb_enter();
    qrdma_core_reset(&s->core);
    s->kicks = 0;
}

/* ---- the wire ---------------------------------------------------------------------------------- */

struct side *fzb_dest(int from, const uint8_t *frame, size_t len)
{
    int i;

    for (i = 0; i < 2 && len >= 6; i++) {
        if (!memcmp(frame, sides[i].mac, 6)) {
            return &sides[i];
        }
    }
    return &sides[1 - from];
}

void fzb_frame_copy(struct fzb_frame *dst, const struct fzb_frame *src)
{
    dst->from = src->from;
    dst->len = src->len;
    memcpy(dst->data, src->data, src->len);
}

bool fzb_deliver_one(void)
{
    /* A copy: the receiver may send (and so append to the wire) while it runs. */
    static struct fzb_frame f;

    if (!fzb_wire.count) {
        return false;
    }
    fzb_frame_copy(&f, &fzb_wire.f[fzb_wire.head]);
    fzb_wire.head = (fzb_wire.head + 1) % FZB_WIRE_MAX;
    fzb_wire.count--;
    fzb_receive(fzb_dest(f.from, f.data, f.len), f.data, f.len);
    return true;
}

void fzb_pump(unsigned steps)
{
    while (steps--) {
        bool busy = false;
        int i;

        for (i = 0; i < 2; i++) {
            unsigned what = sides[i].kicks;

            if (what) {
                sides[i].kicks = 0;
                fzb_run(&sides[i], what);
                busy = true;
            }
        }
        if (fzb_deliver_one()) {
            busy = true;
        }
        if (!busy) {
            return;
        }
    }
}

void fzb_advance(uint64_t delta_ns)
{
    int i;

    now_ns += delta_ns;
    for (i = 0; i < 2; i++) {
        if (sides[i].timer <= now_ns) {
            fzb_timer(&sides[i]);
        }
    }
}

void fzb_settle(uint64_t limit_ns, unsigned rounds)
{
    const uint64_t limit = now_ns + limit_ns;

    while (rounds--) {
        struct side *t = NULL;
        int i;

        fzb_pump(256);
        for (i = 0; i < 2; i++) {
            if (sides[i].timer != UINT64_MAX && (!t || sides[i].timer < t->timer)) {
                t = &sides[i];
            }
        }
        if (!t || t->timer > limit) {
            if (!fzb_wire.count && !sides[0].kicks && !sides[1].kicks) {
                return;
            }
            continue;
        }
        if (t->timer > now_ns) {
            now_ns = t->timer;
        }
        fzb_timer(t);
    }
}

void fzb_fixup(uint8_t *f, size_t len, size_t l3len, bool lens, bool icrc)
{
    fuzz_frame_fixup(f, len, l3len, lens, icrc);
}

/* ---- the driver ---------------------------------------------------------------------------------- */

uint64_t fzb_cqp(struct side *s, uint8_t op, const uint64_t args[6])
{
    uint64_t w = CQP_SQ + 64ull * s->cqp_next, c, st;
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
    fzb_enter();
    qrdma_core_reg_write(&s->core, QRDMA_REG_CQP_DB, 4, s->cqp_next);
    s->kicks &= ~QRDMA_WORK_CQP;
    fzb_run(s, QRDMA_WORK_CQP);

    c = CCQ + 32ull * s->ccq_head;
    if (!!(r64(s, c + 24) & QRDMA_CCQ_CQE_VALID) != s->ccq_valid) {
        return ~0ull;
    }
    st = r64(s, c + 16);
    s->ccq_head = (s->ccq_head + 1) & ((1u << CQP_LOG2) - 1);
    if (!s->ccq_head) {
        s->ccq_valid = !s->ccq_valid;
    }
    w64(s, CQP_SHADOW, s->ccq_head);
    return st;
}

uint64_t fzb_pble_addr(struct side *s, uint32_t i)
{
    /* The PBLE base of the committed layout (COMMIT_FPM_VAL wrote it back). */
    return HMC_RAM + s->core.hmc.base[QRDMA_HMC_PBLE] + 8ull * i;
}

/* ---- bring-up ------------------------------------------------------------------------------------ */

static int dummy_sge(void *o, struct qsw_qp *qp, const struct qsw_sge *sge, unsigned nsge,
                     uint64_t off, void *dst, uint32_t len)
{
    abort();
}

static int dummy_sge_w(void *o, struct qsw_qp *qp, const struct qsw_sge *sge, unsigned nsge,
                       uint64_t off, const void *src, uint32_t len)
{
    abort();
}

static int dummy_rkey_read(void *o, struct qsw_qp *qp, uint32_t pd, uint32_t rkey, uint64_t va,
                           void *dst, uint32_t len)
{
    abort();
}

static int dummy_rkey_write(void *o, struct qsw_qp *qp, uint32_t pd, uint32_t rkey, uint64_t va,
                            const void *src, uint32_t len)
{
    abort();
}

static int dummy_rkey_atomic(void *o, struct qsw_qp *qp, uint32_t pd, uint32_t rkey, uint64_t va,
                             enum qsw_atomic_op op, uint64_t ca, uint64_t sw, uint64_t *orig)
{
    abort();
}

static int dummy_get_recv(void *o, struct qsw_qp *qp, struct qsw_recv_wr *out)
{
    abort();
}

static void dummy_complete(void *o, struct qsw_qp *qp, const struct qsw_wc *wc)
{
    abort();
}

static int dummy_send(void *o, const void *frame, size_t len)
{
    abort();
}

static uint64_t dummy_now(void *o)
{
    return 0;
}

void fzb_init(void)
{
    static const struct qsw_ops ops = {
        .sge_read = dummy_sge, .sge_write = dummy_sge_w, .rkey_read = dummy_rkey_read,
        .rkey_write = dummy_rkey_write, .rkey_atomic = dummy_rkey_atomic,
        .get_recv = dummy_get_recv, .complete = dummy_complete, .send_frame = dummy_send,
        .now_ns = dummy_now,
    };
    static const uint8_t mac[6] = { 0x02 };
    const char *e;
    int i;

    if (checker) {
        return;
    }
    e = getenv("QRDMA_FUZZ_REENTER");
    fzb_reenter_on = !(e && e[0] == '0');
    e = getenv("QRDMA_FUZZ_TRACE");
    fzb_trace = e && e[0] == '1';
    e = getenv("QRDMA_FUZZ_CHECK_CLEAR");
    check_clear = e && e[0] == '1';
    dp_tb_touch = fzb_dirty;
    dp_tb_clear_ram = clear_driver_areas;
    checker = qsw_engine_new(&ops, NULL, mac);
    if (!checker) {
        abort();
    }
    for (i = 0; i < 2; i++) {
        sides[i].ram = calloc(1, RAM_SIZE);
        if (!sides[i].ram) {
            abort();
        }
    }
}

static void side_init(struct side *s, int idx, unsigned variant)
{
    struct qrdma_core_config cfg;
    const struct qrdma_core_env env = {
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

    qrdma_core_fini(&s->core);
    /* All but the core (412 KB), which qrdma_core_init() clears itself. */
    memset(s, 0, offsetof(struct side, core));
    memset((uint8_t *)(&s->core + 1), 0,
           sizeof(*s) - offsetof(struct side, core) - sizeof(s->core));
    s->ram = ram;
    s->idx = idx;
    clear_data(s);                  /* side_bringup() clears the rest */
    side_ident(s, idx);
    s->timer = UINT64_MAX;
    qrdma_core_config_defaults(&cfg);
    memcpy(cfg.mac, s->mac, 6);
    cfg.pe_ready_delay_us = QRDMA_PE_READY_NEVER;
    if (variant & FZB_FAULTS) {
        /* The transport's own loss, duplication, reordering and delay (not corruption). */
        cfg.fault.loss_ppm = 20000;
        cfg.fault.dup_ppm = 20000;
        cfg.fault.reorder_ppm = 20000;
        cfg.fault.delay_us = 50;
        cfg.fault.seed = 1 + idx;
    }
    if (qrdma_core_init(&s->core, &cfg, &env, err, sizeof(err))) {
        bug("qrdma_core_init: %s", err);
    }
    qrdma_core_reset(&s->core);
}

static void cqp_must(struct side *s, uint8_t op, uint64_t a0, uint64_t a1, uint64_t a2,
                     uint64_t a3, uint64_t a4, uint64_t a5, bool must)
{
    const uint64_t args[6] = { a0, a1, a2, a3, a4, a5 };
    uint64_t st = fzb_cqp(s, op, args);

    if (must && (st & (QRDMA_CCQ_CQE_MAJOR_MASK | QRDMA_CCQ_CQE_MINOR_MASK))) {
        bug("bring-up of side %c: CQP opcode 0x%x failed: status 0x%llx", 'A' + s->idx, op,
            (unsigned long long)st);
    }
}

/* Post receive WQEs to every RQ and the SRQ, 4 KB buffers in the data area. */
static void post_receives(struct side *s)
{
    unsigned i, j;

    for (i = 0; i < FZB_NQPS; i++) {
        uint32_t q = fzb_qps[i];

        if (q == FZB_QP_SRQ) {
            continue;
        }
        for (j = 0; j < 4; j++) {
            post_recv(s, q, FZB_RECV_BUF(q) + 0x1000 * (j & 3), 0x1000);
        }
        db(s, 0, QRDMA_DB_RQ, q);
    }
    for (j = 0; j < 4; j++) {
        const struct sge sge = { FZB_RECV_BUF(FZB_QP_SRQ) + 0x1000 * j, 0x1000, 0 };
        uint32_t n = s->srq_posted++;

        write_rq_wqe(s, SRQ_RING + ((uint64_t)(n & ((1u << s->srq_log2) - 1))
                                    << s->srq_stride_log2),
                     !((n >> s->srq_log2) & 1), 1, &sge, 0);
    }
    w64(s, SRQ_SHADOW, s->srq_posted);
}

void fzb_gid6(const struct side *s, uint8_t gid[16])
{
    memset(gid, 0, 16);
    gid[0] = 0xfd;
    gid[15] = 1 + s->idx;
}

void fzb_write_av6(struct side *s, uint64_t addr, const struct side *peer)
{
    write_av(s, addr, peer);
    fzb_gid6(peer, mem(s, addr + offsetof(struct qrdma_av, dgid)));
    w8(s, addr + offsetof(struct qrdma_av, sgid_index), FZB_GID6_INDEX);
}

/* Every object of the bed on side s (its peer's identity for the connections). */
static void objects(struct side *s, struct side *peer, bool must)
{
    struct qp_spec spec = rc_spec;
    uint8_t gid6[16];
    uint64_t lo = 0, hi = 0;
    unsigned i;

    /* GID 1: IPv6, arg1 bytes 0..7 and arg2 bytes 8..15, little-endian. */
    fzb_gid6(s, gid6);
    for (i = 8; i-- > 0;) {
        lo = lo << 8 | gid6[i];
        hi = hi << 8 | gid6[8 + i];
    }
    cqp_must(s, QRDMA_CQP_OP_ADD_GID, FZB_GID6_INDEX | QRDMA_GID_TYPE_ROCE_V2_IPV6 << 8, lo, hi,
             0, 0, 0, must);

    /* MRs: fast-register (ALLOC_STAG, 4 PBLEs), LEVELS 1 (8 PBLEs), DMA. */
    cqp_must(s, QRDMA_CQP_OP_ALLOC_STAG, FZB_MR_FR_STAG,
             PD | (uint64_t)MR_ACCESS << QRDMA_MR_ARG1_ACCESS_SHIFT, 4, 0, FZB_MR_FR_PBLE, 0,
             must);
    for (i = 0; i < 4; i++) {
        w64(s, fzb_pble_addr(s, FZB_MR_FR_PBLE + i), DATA + FZB_MR_FR_DATA + 0x1000 * (3 - i));
    }
    for (i = 0; i < 8; i++) {
        w64(s, fzb_pble_addr(s, FZB_MR_L1_PBLE + i), DATA + FZB_MR_L1_DATA + 0x1000 * i);
    }
    cqp_must(s, QRDMA_CQP_OP_REG_MR, FZB_MR_L1_STAG,
             PD | (uint64_t)MR_ACCESS << QRDMA_MR_ARG1_ACCESS_SHIFT |
             1ull << QRDMA_MR_ARG1_LEVELS_SHIFT | 12ull << QRDMA_MR_ARG1_PAGE_SHIFT,
             FZB_MR_L1_IOVA, 8 * 4096 - 0x100, FZB_MR_L1_PBLE, 0x100, must);
    cqp_must(s, QRDMA_CQP_OP_REG_MR, FZB_MR_DMA_STAG,
             PD | (uint64_t)QRDMA_ACCESS_LOCAL_WRITE << QRDMA_MR_ARG1_ACCESS_SHIFT |
             QRDMA_MR_ARG1_DMA, 0, 0, 0, 0, must);

    /* CQs; TINY overflows easily. */
    create_cq(s, FZB_CQ_SEND);
    create_cq(s, FZB_CQ_RECV);
    create_cq_ex(s, FZB_CQ_TINY, 2, true);
    create_cq_ex(s, FZB_CQ_CEQ, 6, true);

    /* SRQ: 8 WQEs of 64 bytes, limit 2. */
    cqp_must(s, QRDMA_CQP_OP_CREATE_SRQ,
             FZB_SRQ_ID | (uint64_t)FZB_SRQ_LOG2 << QRDMA_SRQ_ARG0_SIZE_SHIFT |
             (uint64_t)FZB_SRQ_WQE_LOG2 << QRDMA_SRQ_ARG0_WQE_SHIFT,
             PD | 2ull << QRDMA_SRQ_ARG1_LIMIT_SHIFT, SRQ_RING, SRQ_SHADOW, 0x5e0, 0, must);
    s->srq_log2 = FZB_SRQ_LOG2;
    s->srq_stride_log2 = FZB_SRQ_WQE_LOG2;

    /* AH toward the peer. */
    write_av(s, AV_BUF, peer);
    cqp_must(s, QRDMA_CQP_OP_CREATE_AH, FZB_AH_ID | (uint64_t)PD << QRDMA_AH_ARG0_PD_SHIFT,
             AV_BUF, 0, 0, 0, 0, must);

    /* QPs */
    create_qp(s, FZB_QP_RC, &rc_spec);
    spec.type = QRDMA_QP_TYPE_UC;
    create_qp(s, FZB_QP_UC, &spec);
    spec = rc_spec;
    spec.type = QRDMA_QP_TYPE_UD;
    spec.recv_cq = FZB_CQ_TINY;
    spec.rq_wqe_log2 = 6;
    create_qp(s, FZB_QP_UD, &spec);
    spec = rc_spec;
    spec.flags = QRDMA_QP_CREATE_SRQ;
    spec.srq = FZB_SRQ_ID;
    spec.recv_cq = FZB_CQ_CEQ;
    create_qp(s, FZB_QP_SRQ, &spec);
    spec = rc_spec;
    spec.send_cq = spec.recv_cq = FZB_CQ_CEQ;
    create_qp(s, FZB_QP_LOOP_A, &spec);
    create_qp(s, FZB_QP_LOOP_B, &spec);

    /* VIRTMAP rings: the SQ and RQ pages through PBLEs. */
    w64(s, fzb_pble_addr(s, FZB_VIRT_PBLE), SQ_RING(FZB_QP_VIRT));
    w64(s, fzb_pble_addr(s, FZB_VIRT_PBLE + 1), RQ_RING(FZB_QP_VIRT));
    memset(mem(s, INFO), 0, 64);
    w32(s, INFO + offsetof(struct qrdma_qp_create_info, pd), PD);
    w8(s, INFO + offsetof(struct qrdma_qp_create_info, type), QRDMA_QP_TYPE_RC);
    w8(s, INFO + offsetof(struct qrdma_qp_create_info, flags),
       QRDMA_QP_CREATE_SQ_VIRTMAP | QRDMA_QP_CREATE_RQ_VIRTMAP);
    w32(s, INFO + offsetof(struct qrdma_qp_create_info, send_cq), FZB_CQ_RECV);
    w32(s, INFO + offsetof(struct qrdma_qp_create_info, recv_cq), FZB_CQ_RECV);
    w8(s, INFO + offsetof(struct qrdma_qp_create_info, sq_size_log2), rc_spec.sq_log2);
    w8(s, INFO + offsetof(struct qrdma_qp_create_info, sq_wqe_log2), rc_spec.sq_wqe_log2);
    w8(s, INFO + offsetof(struct qrdma_qp_create_info, rq_size_log2), rc_spec.rq_log2);
    w8(s, INFO + offsetof(struct qrdma_qp_create_info, rq_wqe_log2), rc_spec.rq_wqe_log2);
    w64(s, INFO + offsetof(struct qrdma_qp_create_info, sq_addr), FZB_VIRT_PBLE);
    w64(s, INFO + offsetof(struct qrdma_qp_create_info, rq_addr), FZB_VIRT_PBLE + 1);
    w64(s, INFO + offsetof(struct qrdma_qp_create_info, qp_ctx), QPCTX(FZB_QP_VIRT));
    cqp_must(s, QRDMA_CQP_OP_CREATE_QP, FZB_QP_VIRT, INFO, 0, 0, 0, 0, must);
    memset(&s->qp[FZB_QP_VIRT], 0, sizeof(s->qp[FZB_QP_VIRT]));
    s->qp[FZB_QP_VIRT].sq_log2 = rc_spec.sq_log2;
    s->qp[FZB_QP_VIRT].sq_stride_log2 = rc_spec.sq_wqe_log2;
    s->qp[FZB_QP_VIRT].rq_log2 = rc_spec.rq_log2;
    s->qp[FZB_QP_VIRT].rq_stride_log2 = rc_spec.rq_wqe_log2;

    rc_to_rts(s, FZB_QP_RC, peer, FZB_QP_RC, 7);
    uc_to_rts(s, FZB_QP_UC, peer, FZB_QP_UC);
    ud_to_rts(s, FZB_QP_UD);
    rc_to_rts(s, FZB_QP_SRQ, peer, FZB_QP_SRQ, 7);
    rc_to_rts(s, FZB_QP_LOOP_A, s, FZB_QP_LOOP_B, 7);
    rc_to_rts(s, FZB_QP_LOOP_B, s, FZB_QP_LOOP_A, 7);
    rc_to_rts(s, FZB_QP_VIRT, peer, FZB_QP_VIRT, 7);
    post_receives(s);
}

/* The FAST_REG WQE that makes the fast-register MR valid, on the RC QP. */
static void fast_register(struct side *s)
{
    uint32_t n = s->qp[FZB_QP_RC].sq_posted++;
    uint32_t index = n & ((1u << s->qp[FZB_QP_RC].sq_log2) - 1);
    bool valid = !((n >> s->qp[FZB_QP_RC].sq_log2) & 1);
    uint64_t a = SQ_RING(FZB_QP_RC) + ((uint64_t)index << s->qp[FZB_QP_RC].sq_stride_log2);

    memset(mem(s, a), 0, 56);
    w64(s, a + 0, FZB_MR_FR_IOVA);
    w64(s, a + 16, 4 * 4096);
    w64(s, a + 24, FZB_MR_FR_PBLE);
    w64(s, a + 32, FZB_MR_FR_STAG | (uint64_t)MR_ACCESS << QRDMA_SQ_FR_ACCESS_SHIFT |
                   12ull << QRDMA_SQ_FR_PAGE_SHIFT | 1ull << QRDMA_SQ_FR_LEVELS_SHIFT);
    w64(s, a + 48, 0);
    w64(s, a + 56, QRDMA_SQ_OP_FAST_REG | QRDMA_SQ_HDR_SIGNALED |
                   (valid ? QRDMA_SQ_HDR_VALID : 0));
    db(s, 0, QRDMA_DB_SQ, FZB_QP_RC);
}

void fzb_irq_enable(struct side *s)
{
    unsigned v;

    for (v = 0; v < 2; v++) {
        qrdma_core_reg_write(&s->core, QRDMA_REG_DYN_CTL(v), 4, QRDMA_DYN_CTL_INTENA);
    }
}

/* Interrupts as the driver routes them: the AEQ on vector 0, CEQ 0 on vector 1. */
static void irq_setup(struct side *s)
{
    qrdma_core_reg_write(&s->core, QRDMA_REG_AEQCTL, 4, 0 | QRDMA_EQCTL_CAUSE_ENA);
    qrdma_core_reg_write(&s->core, QRDMA_REG_CEQCTL(0), 4, 1 | QRDMA_EQCTL_CAUSE_ENA);
    fzb_irq_enable(s);
}

/*
 * Side B's FPM through a paged SD instead: a PD page in the unused RAM above
 * the data area, its 256 PDs naming the same 1 MB of HMC_RAM page by page.
 */
static void paged_sd(struct side *s)
{
    unsigned i;

    fzb_dirty(s, FZB_PD_PAGE, QRDMA_HMC_PD_SIZE);
    for (i = 0; i < QRDMA_HMC_PDS_PER_SD; i++) {
        w64(s, FZB_PD_PAGE + 8 * i, i < 256 ? (HMC_RAM + 4096ull * i) | QRDMA_HMC_PD_VALID : 0);
    }
    qrdma_core_reg_write(&s->core, QRDMA_REG_HMC_SD_DATA_LOW, 4,
                         (uint32_t)(FZB_PD_PAGE | QRDMA_HMC_SD_VALID |
                                    (uint64_t)QRDMA_HMC_PDS_PER_SD << QRDMA_HMC_SD_BP_COUNT_SHIFT));
    qrdma_core_reg_write(&s->core, QRDMA_REG_HMC_SD_DATA_HIGH, 4, (uint32_t)(FZB_PD_PAGE >> 32));
    qrdma_core_reg_write(&s->core, QRDMA_REG_HMC_SD_CMD, 4, QRDMA_HMC_SD_CMD_WRITE | 0);
}

void fzb_up(unsigned variant)
{
    int i;

    fzb_down();
    unit_failures = 0;
    now_ns = 1000000000ull;
    memset(fzb_reenter, 0, sizeof(fzb_reenter));
    for (i = 0; i < 2; i++) {
        side_init(&sides[i], i, variant);
    }
    for (i = 0; i < 2; i++) {
        fzb_enter();
        side_bringup(&sides[i]);
    }
    if (variant & FZB_PAGED_SD) {
        paged_sd(&sides[1]);
    }
    for (i = 0; i < 2; i++) {
        irq_setup(&sides[i]);
        objects(&sides[i], &sides[1 - i], true);
        fast_register(&sides[i]);
    }
    fzb_pump(64);
    for (i = 0; i < 2; i++) {
        if (sides[i].guest_errors || unit_failures) {
            bug("bring-up of side %c: %d guest errors, %d failed checks", 'A' + i,
                sides[i].guest_errors, unit_failures);
        }
    }
}

void fzb_rebringup(struct side *s)
{
    fzb_enter();
    side_bringup(s);
    irq_setup(s);
    objects(s, &sides[1 - s->idx], false);
    fast_register(s);
}

void fzb_down(void)
{
    memset(&fzb_wire, 0, offsetof(struct fzb_wire, f));
    fzb_wire.dropped = 0;
}

void fzb_free(void)
{
    int i;

    fzb_down();
    for (i = 0; i < 2; i++) {
        qrdma_core_fini(&sides[i].core);    /* (a second fini is harmless) */
    }
}
