/*
 * The saved-state layout guard (docs/migration.md, "Changing the saved
 * state"): every section of the stream has a recorded fingerprint of the
 * fields it saves, next to the section version it was recorded with. A
 * change to what a section saves (a field added, removed, moved, renamed
 * or resized) or to a constant it saves by value changes the fingerprint;
 * the test then fails until the section's version (QRDMA_MIG_V_* in
 * include/qrdma/qrdma_mig.h) is bumped and the row below is recorded
 * again, so that a destination of the old build refuses the new layout
 * by name instead of misreading it.
 *
 * The fields come from a real save (qrdma_core_save_walk) of a device
 * whose state reaches every branch of the walks: an RC pair with
 * WRITEs, READs, atomics and inline SENDs in flight, an SRQ, a UD QP
 * with an AH in a multicast group, a memory window, a QP looped back to
 * its own device with frames queued, a kick FIFO entry and a frame in
 * the Ethernet function's receive backlog. Per section, the fingerprint
 * is the CRC-32 of its distinct fields (name and width) in the order they
 * first appear, then of the constants it stores by value that the
 * hardware interface version does not already cover (the stream header
 * carries that version and a loader refuses any other).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/qrdma_core.h"
#include "dp_testbed.h"
#include "qrdma_mig_stream.h"
#include "../../host-backend/sw/sw_int.h"
#include "unit.h"

int unit_failures;

/*
 * The recorded layout: one row per section, in stream order. To change a
 * section's layout: bump its QRDMA_MIG_V_* (and let its loader read the
 * older version or refuse it, as docs/migration.md says), run this test,
 * and copy the row it prints here. A rename alone changes the
 * fingerprint too; a loader names fields only in messages, so there the
 * row may take the new fingerprint under the same version (say so in the
 * commit).
 */
static const struct layout_row {
    uint32_t tag;
    unsigned version;
    uint32_t fingerprint;
} recorded[] = {
    { QRDMA_MIG_TAG('C', 'F', 'G', ' '), 1, 0x5bdbe6d3 },
    { QRDMA_MIG_TAG('R', 'E', 'G', 'S'), 1, 0x783243f2 },
    { QRDMA_MIG_TAG('L', 'A', 'N', ' '), 1, 0xa5962084 },
    { QRDMA_MIG_TAG('C', 'Q', 'P', ' '), 1, 0xe26be4f7 },
    { QRDMA_MIG_TAG('E', 'Q', 'S', ' '), 1, 0x854f33fb },
    { QRDMA_MIG_TAG('H', 'M', 'C', ' '), 1, 0x9f6090c5 },
    { QRDMA_MIG_TAG('O', 'B', 'J', 'S'), 1, 0xe8389790 },
    { QRDMA_MIG_TAG('M', 'C', 'S', 'T'), 1, 0x2b2f415a },
    { QRDMA_MIG_TAG('D', 'P', ' ', ' '), 1, 0xc4e454e4 },
    { QRDMA_MIG_TAG('S', 'W', 'E', 'N'), 1, 0x441ff26c },
    { QRDMA_MIG_TAG('S', 'W', 'Q', 'P'), 1, 0x725a9413 },
    { QRDMA_MIG_TAG('E', 'N', 'D', ' '), 1, 0x00000000 },
};

/* Constants stored by value, outside the hardware interface. */
struct layout_const {
    uint32_t tag;
    const char *name;
    uint64_t value;
};

#define C(tag, x) { QRDMA_MIG_SEC_##tag, #x, (uint64_t)(x) }

static const struct layout_const consts[] = {
    /* the core's enum of backends (config.backend) */
    C(CONFIG, QRDMA_BACKEND_SW),
    C(CONFIG, QRDMA_BACKEND_VERBS),
    /* bounds the loaders check */
    C(LAN, QRDMA_LAN_BACKLOG_FRAMES),
    C(DP, QRDMA_DP_LOOPBACK_MAX),
    /* the counters the engine saves: those before tx_busy (sw_mig.c) */
    C(SW_ENGINE, offsetof(struct qsw_stats, tx_busy)),
    /* the software transport's QP: states, MTUs, types, opcodes, WQE and resource states */
    C(SW_QP, QSW_QPS_RESET), C(SW_QP, QSW_QPS_INIT), C(SW_QP, QSW_QPS_RTR),
    C(SW_QP, QSW_QPS_RTS), C(SW_QP, QSW_QPS_SQD), C(SW_QP, QSW_QPS_SQE),
    C(SW_QP, QSW_QPS_ERR),
    C(SW_QP, QSW_MTU_256), C(SW_QP, QSW_MTU_4096),
    C(SW_QP, QSW_QPT_RC), C(SW_QP, QSW_QPT_UC), C(SW_QP, QSW_QPT_UD),
    C(SW_QP, QSW_WR_RDMA_WRITE), C(SW_QP, QSW_WR_RDMA_WRITE_WITH_IMM),
    C(SW_QP, QSW_WR_SEND), C(SW_QP, QSW_WR_SEND_WITH_IMM), C(SW_QP, QSW_WR_RDMA_READ),
    C(SW_QP, QSW_WR_ATOMIC_CMP_AND_SWP), C(SW_QP, QSW_WR_ATOMIC_FETCH_AND_ADD),
    C(SW_QP, QSW_WR_LOCAL_INV), C(SW_QP, QSW_WR_BIND_MW), C(SW_QP, QSW_WR_SEND_WITH_INV),
    C(SW_QP, QSW_WR_REG_MR),
    C(SW_QP, QSW_SEND_FENCE), C(SW_QP, QSW_SEND_SIGNALED), C(SW_QP, QSW_SEND_SOLICITED),
    C(SW_QP, QSW_SEND_INLINE),
    C(SW_QP, WQE_PENDING), C(SW_QP, WQE_INFLIGHT), C(SW_QP, WQE_SENT),
    C(SW_QP, WQE_RESEND), C(SW_QP, WQE_DONE),
    C(SW_QP, RES_NONE), C(SW_QP, RES_READ), C(SW_QP, RES_ATOMIC),
    C(SW_QP, QSW_MAX_SGE), C(SW_QP, QSW_MAX_UNACKED),
    C(SW_QP, sizeof(struct qsw_res)), C(SW_QP, sizeof(struct qsw_wqe)),
};

/* ---- collecting the fields of a save ---- */

#define MAX_SECTIONS    16
#define MAX_FIELDS      160

struct seen_section {
    uint32_t tag;
    unsigned version;
    unsigned nfields;
    const char *field[MAX_FIELDS];
    unsigned width[MAX_FIELDS];
    bool overflow;
};

static struct seen_section seen[MAX_SECTIONS];
static unsigned nseen;

static struct seen_section *section_of(uint32_t tag)
{
    unsigned i;

    for (i = 0; i < nseen; i++) {
        if (seen[i].tag == tag) {
            return &seen[i];
        }
    }
    return NULL;
}

static void on_field(void *opaque, uint32_t tag, unsigned version, const char *field,
                     unsigned width)
{
    struct seen_section *s = section_of(tag);
    unsigned i;

    if (!s) {
        if (nseen == MAX_SECTIONS) {
            CHECK(!"more sections than MAX_SECTIONS");
            return;
        }
        s = &seen[nseen++];
        s->tag = tag;
        s->version = version;
    }
    if (!field) {
        return;
    }
    for (i = 0; i < s->nfields; i++) {
        if (s->width[i] == width && !strcmp(s->field[i], field)) {
            return;
        }
    }
    if (s->nfields == MAX_FIELDS) {
        s->overflow = true;
        return;
    }
    s->field[s->nfields] = field;
    s->width[s->nfields++] = width;
}

static uint32_t fingerprint(const struct seen_section *s)
{
    uint32_t crc = 0;
    char buf[128];
    unsigned i;

    for (i = 0; i < s->nfields; i++) {
        int n = snprintf(buf, sizeof(buf), "%s/%u;", s->field[i], s->width[i]);

        crc = qrdma_mig_crc32(crc, (const uint8_t *)buf, (size_t)n);
    }
    for (i = 0; i < sizeof(consts) / sizeof(consts[0]); i++) {
        if (consts[i].tag == s->tag) {
            int n = snprintf(buf, sizeof(buf), "%s=%" PRIu64 ";", consts[i].name,
                             consts[i].value);

            crc = qrdma_mig_crc32(crc, (const uint8_t *)buf, (size_t)n);
        }
    }
    return crc;
}

static void tag_name(uint32_t tag, char out[5])
{
    qrdma_mig_put_le((uint8_t *)out, tag, 4);
    out[4] = 0;
}

/* ---- a device in every state the walks branch on ---- */

#define UDQP        5
#define LOOPQ_A     6           /* QPs 6 and 7 of A, connected to each other */
#define LOOPQ_B     7
#define SRQ_ID      1
#define SRQQP       3
#define AH_ID       1
#define MW_INDEX    4

/* A non-RoCE broadcast frame for the Ethernet function. */
static void lan_frame(struct side *s)
{
    uint8_t f[64] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 0x99, 0x88, 0xb5 };

    CHECK_EQ(qrdma_core_lan_receive(&s->core, f, sizeof(f)), sizeof(f));
}

static void rich_state(void)
{
    static const uint8_t group[16] = { [10] = 0xff, [11] = 0xff, 239, 1, 1, 1 };
    static const char inl[] = "inline bytes in a WQE";
    struct qp_spec srq_spec = rc_spec;
    struct wqe w;
    unsigned i;

    setup();
    create_cq(SA, 1);
    create_cq(SA, 2);
    create_cq(SB, 1);
    create_cq(SB, 2);
    /* A: an SRQ behind QP 3. */
    CQP_OK(cqp(SA, QRDMA_CQP_OP_CREATE_SRQ,
               SRQ_ID | 2ull << QRDMA_SRQ_ARG0_SIZE_SHIFT | 5ull << QRDMA_SRQ_ARG0_WQE_SHIFT,
               PD | 2ull << QRDMA_SRQ_ARG1_LIMIT_SHIFT, SRQ_RING, SRQ_SHADOW, 0x5e0, 0));
    srq_spec.flags = QRDMA_QP_CREATE_SRQ;
    srq_spec.srq = SRQ_ID;
    create_qp(SA, SRQQP, &srq_spec);
    create_qp(SA, QPN, &rc_spec);
    create_qp(SB, QPN, &rc_spec);
    rc_to_rts(SA, QPN, SB, QPN, 7);
    rc_to_rts(SB, QPN, SA, QPN, 7);
    /* A: a UD QP with an AH, attached to a multicast group; a memory window. */
    create_qp(SA, UDQP, &ud_spec);
    ud_to_rts(SA, UDQP);
    write_av(SA, AV_BUF, SB);
    CQP_OK(cqp(SA, QRDMA_CQP_OP_CREATE_AH, AH_ID | (uint64_t)PD << QRDMA_AH_ARG0_PD_SHIFT,
               AV_BUF, 0, 0, 0, 0));
    CQP_OK(cqp(SA, QRDMA_CQP_OP_MCAST_ATTACH, UDQP, gid_word(group), gid_word(group + 8), 0, 0,
               0));
    CQP_OK(cqp(SA, QRDMA_CQP_OP_ALLOC_STAG, MW_INDEX << QRDMA_STAG_INDEX_SHIFT | 1,
               PD | (uint64_t)QRDMA_MW_TYPE_2 << QRDMA_MR_ARG1_MW_TYPE_SHIFT, 0, 0, 0, 0));
    /* A: two QPs connected to each other, through the device's loopback. */
    create_qp(SA, LOOPQ_A, &rc_spec);
    create_qp(SA, LOOPQ_B, &rc_spec);
    rc_to_rts(SA, LOOPQ_A, SA, LOOPQ_B, 7);
    rc_to_rts(SA, LOOPQ_B, SA, LOOPQ_A, 7);
    /* A's Ethernet function receiving into a ring without buffers: a backlog. */
    reg_w(SA, QRDMA_REG_LAN_RXQ_BASE_LOW, (uint32_t)(DATA + 0x80000));
    reg_w(SA, QRDMA_REG_LAN_RXQ_BASE_HIGH, (uint32_t)((DATA + 0x80000) >> 32));
    reg_w(SA, QRDMA_REG_LAN_RXQ_LEN, 8);
    reg_w(SA, QRDMA_REG_LAN_CTRL, reg_r(SA, QRDMA_REG_LAN_CTRL) | QRDMA_LAN_CTRL_RX_ENABLE |
                                      QRDMA_LAN_CTRL_BROADCAST);
    lan_frame(SA);

    /* Traffic of every kind A -> B, some of it in flight. */
    for (i = 0; i < 2; i++) {
        fill(SA, 0x10000 + 0x4000 * i, 0x4000, 3 + i);
        w = (struct wqe){ .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x40000 + 0x4000 * i,
                          .nsge = 1, .sge = { { 0x10000 + 0x4000 * i, 0x4000, 0 } } };
        post_send(SA, QPN, &w);
    }
    w = (struct wqe){ .op = QRDMA_SQ_OP_RDMA_READ, .remote_off = 0x40000, .nsge = 1,
                      .sge = { { 0x20000, 0x4000, 0 } } };
    post_send(SA, QPN, &w);
    w = (struct wqe){ .op = QRDMA_SQ_OP_ATOMIC_FETCH_AND_ADD, .remote_off = 0x50000,
                      .compare_add = 1, .nsge = 1, .sge = { { 0x28000, 8, 0 } } };
    post_send(SA, QPN, &w);
    post_recv(SB, QPN, 0x60000, 4096);
    w = (struct wqe){ .op = QRDMA_SQ_OP_SEND, .inl = inl, .inl_len = sizeof(inl) };
    post_send(SA, QPN, &w);
    ring_sq(SA, QPN);
    /* B -> A too, so that B's READ responder and A's receiver both hold state. */
    w = (struct wqe){ .op = QRDMA_SQ_OP_RDMA_READ, .remote_off = 0x10000, .nsge = 1,
                      .sge = { { 0x70000, 0x4000, 0 } } };
    post_send(SB, QPN, &w);
    ring_sq(SB, QPN);
    pump_some(6);
    /* The loopback pair: frames queued inside A, not yet taken. */
    fill(SA, 0x30000, 0x2000, 9);
    w = (struct wqe){ .op = QRDMA_SQ_OP_RDMA_WRITE, .remote_off = 0x34000, .nsge = 1,
                      .sge = { { 0x30000, 0x2000, 0 } } };
    post_send(SA, LOOPQ_A, &w);
    ring_sq(SA, LOOPQ_A);
    SA->kicks = 0;
    qrdma_core_run(&SA->core, QRDMA_WORK_DP);
    /* A doorbell not yet run: a kick FIFO entry. */
    post_send(SA, LOOPQ_B, &w);
    ring_sq(SA, LOOPQ_B);
}

static void test_layout_recorded(void)
{
    char err[256] = "", name[5];
    uint8_t *buf = NULL;
    size_t len = 0;
    unsigned i, j, stale = 0;
    bool printed = false;

    rich_state();
    CHECK(SA->core.lan.backlog.count > 0);
    CHECK(SA->core.dp.loop_len > 0);
    CHECK(SA->core.dp.fifo_len > 0);
    CHECK(SA->core.mcast.ngrp > 0);
    nseen = 0;
    memset(seen, 0, sizeof(seen));
    CHECK_EQ(qrdma_core_save_walk(&SA->core, on_field, NULL, &buf, &len, err, sizeof(err)), 0);
    free(buf);

    for (i = 0; i < nseen; i++) {
        const struct seen_section *s = &seen[i];
        const struct layout_row *r = NULL;
        uint32_t fp = fingerprint(s);

        CHECK(!s->overflow);
        for (j = 0; j < sizeof(recorded) / sizeof(recorded[0]); j++) {
            if (recorded[j].tag == s->tag) {
                r = &recorded[j];
            }
        }
        tag_name(s->tag, name);
        if (r && r->version == s->version && r->fingerprint == fp) {
            continue;
        }
        stale++;
        if (!r) {
            fprintf(stderr, "  section '%s': not in the table\n", name);
        } else if (r->version == s->version) {
            fprintf(stderr,
                    "  section '%s': what it saves changed (fingerprint 0x%08" PRIx32
                    ", recorded 0x%08" PRIx32 " at version %u): bump its version in "
                    "include/qrdma/qrdma_mig.h, then record the row below\n",
                    name, fp, r->fingerprint, r->version);
        } else {
            fprintf(stderr, "  section '%s': version %u, recorded %u: record the row below\n",
                    name, s->version, r->version);
        }
        printed = true;
    }
    for (j = 0; j < sizeof(recorded) / sizeof(recorded[0]); j++) {
        if (!section_of(recorded[j].tag)) {
            tag_name(recorded[j].tag, name);
            fprintf(stderr, "  section '%s' is in the table but not in the stream\n", name);
            stale++;
            printed = true;
        }
    }
    if (printed) {
        fprintf(stderr, "  the table as this build saves (tests/unit/test_core_mig_layout.c):\n");
        for (i = 0; i < nseen; i++) {
            tag_name(seen[i].tag, name);
            fprintf(stderr, "    { QRDMA_MIG_TAG('%c', '%c', '%c', '%c'), %u, 0x%08" PRIx32
                    " },\n", name[0], name[1], name[2], name[3], seen[i].version,
                    fingerprint(&seen[i]));
        }
    }
    CHECK_EQ(stale, 0);
}

/*
 * The files whose walks write the stream. A walk in another file must be
 * added here, or its fields are not checked below.
 */
static const char *const walk_files[] = {
    "qemu-hw/core/qrdma_mig.c",
    "qemu-hw/core/qrdma_dp.c",
    "host-backend/sw/sw_mig.c",
    "host-backend/sw/sw_backend.c",
};

static bool field_seen(const char *name)
{
    unsigned i, j;

    for (i = 0; i < nseen; i++) {
        for (j = 0; j < seen[i].nfields; j++) {
            if (!strcmp(seen[i].field[j], name)) {
                return true;
            }
        }
    }
    return false;
}

/*
 * A fingerprint is only as good as the state it is taken from: every
 * field a walk names in its source (qrdma_mig_<kind>(m, "name", ...))
 * must have been written by the save above, or a change to it would go
 * unnoticed. One not written: extend rich_state() until it is.
 */
static void test_layout_covers_every_field(void)
{
    const char *top = getenv("QRDMA_TOP") ? getenv("QRDMA_TOP") : ".";
    char err[256] = "";
    uint8_t *buf = NULL;
    size_t len = 0;
    unsigned f, names = 0, missing = 0;

    rich_state();
    nseen = 0;
    memset(seen, 0, sizeof(seen));
    CHECK_EQ(qrdma_core_save_walk(&SA->core, on_field, NULL, &buf, &len, err, sizeof(err)), 0);
    free(buf);
    for (f = 0; f < sizeof(walk_files) / sizeof(walk_files[0]); f++) {
        char path[512], *text, *p;
        FILE *fp;
        long size;

        snprintf(path, sizeof(path), "%s/%s", top, walk_files[f]);
        fp = fopen(path, "r");
        if (!fp) {
            fprintf(stderr, "  cannot read %s (run from the top of the tree, as make unit "
                    "does, or set QRDMA_TOP)\n", path);
            CHECK(fp != NULL);
            continue;
        }
        fseek(fp, 0, SEEK_END);
        size = ftell(fp);
        rewind(fp);
        text = calloc(1, (size_t)size + 1);
        CHECK_EQ(fread(text, 1, (size_t)size, fp), (size_t)size);
        fclose(fp);
        for (p = strstr(text, "qrdma_mig_"); p; p = strstr(p + 1, "qrdma_mig_")) {
            const char *args = strstr(p, "(m, \""), *name, *end;
            char field[96];

            /* a call whose first argument is the stream and whose second a name */
            if (!args || strcspn(p, "(") != (size_t)(args - p) ||
                !strncmp(p, "qrdma_mig_fail", 14) || !strncmp(p, "qrdma_mig_section", 17)) {
                continue;
            }
            name = args + 5;
            end = strchr(name, '"');
            if (!end || (size_t)(end - name) >= sizeof(field)) {
                continue;
            }
            memcpy(field, name, (size_t)(end - name));
            field[end - name] = 0;
            names++;
            if (!field_seen(field)) {
                fprintf(stderr, "  %s: field \"%s\" is not written by the save of "
                        "rich_state(): extend it\n", walk_files[f], field);
                missing++;
            }
        }
        free(text);
    }
    printf("# %u field names in the walks' sources, every one written by the save\n", names);
    CHECK(names > 200);
    CHECK_EQ(missing, 0);
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_layout_recorded),
    UNIT_TEST(test_layout_covers_every_field),
};

int main(void)
{
    int ret = unit_run("core-mig-layout", tests, sizeof(tests) / sizeof(tests[0]));

    teardown();
    return ret;
}
