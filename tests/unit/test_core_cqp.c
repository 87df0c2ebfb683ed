/*
 * Unit tests of the device core's control QP: creation from the context
 * and every context check, the WQE ring with VALID polarity over several
 * laps, completions on the CCQ with their polarity, the commands (NOP,
 * ADD_GID, DEL_GID) and their error codes, the CCQ-full guard, and the
 * GID table steering RoCEv2 frames away from the LAN.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdbool.h>
#include <stdlib.h>

#include "core/qrdma_core.h"
#include "fake_env.h"
#include "unit.h"

int unit_failures;

#define CTX_ADDR    (FAKE_RAM_BASE + 0x0000)
#define SHADOW_ADDR (FAKE_RAM_BASE + 0x0040)
#define SQ_ADDR     (FAKE_RAM_BASE + 0x1000)
#define CCQ_ADDR    (FAKE_RAM_BASE + 0x10000)

static void put64(uint64_t addr, uint64_t v)
{
    uint8_t *p = gpa(addr);
    int i;

    for (i = 0; i < 8; i++) {
        p[i] = v >> (8 * i);
    }
}

static uint64_t get64(uint64_t addr)
{
    uint8_t *p = gpa(addr);
    uint64_t v = 0;
    int i;

    for (i = 7; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

static void write_ctx(unsigned sq_log2, unsigned ccq_log2, uint64_t sq, uint64_t ccq,
                      uint64_t shadow)
{
    put64(CTX_ADDR, sq_log2 | (uint64_t)ccq_log2 << QRDMA_CQP_CTX_CCQ_SIZE_SHIFT);
    put64(CTX_ADDR + 8, sq);
    put64(CTX_ADDR + 16, ccq);
    put64(CTX_ADDR + 24, shadow);
}

static void create_at(uint64_t ctx)
{
    wr(QRDMA_REG_CCQP_CTX_HIGH, (uint32_t)(ctx >> 32));
    wr(QRDMA_REG_CCQP_CTX_LOW, (uint32_t)ctx);
}

/* The driver's side of the rings. */
static struct {
    unsigned sq_len, ccq_len, sq_next, ccq_head;
    bool sq_valid, ccq_valid;
} drv;

static void setup_cqp(unsigned sq_log2, unsigned ccq_log2)
{
    fake_setup_ready(NULL);
    write_ctx(sq_log2, ccq_log2, SQ_ADDR, CCQ_ADDR, SHADOW_ADDR);
    create_at(CTX_ADDR);
    CHECK_EQ(rd(QRDMA_REG_CCQP_STATUS), QRDMA_CCQP_STATUS_DONE);
    memset(&drv, 0, sizeof(drv));
    drv.sq_len = 1u << sq_log2;
    drv.ccq_len = 1u << ccq_log2;
    drv.sq_valid = drv.ccq_valid = true;
}

/* Post one WQE (header last), return its index. */
static unsigned post(uint8_t opcode, const uint64_t *args, uint64_t scratch, bool valid)
{
    unsigned idx = drv.sq_next;
    uint64_t w = SQ_ADDR + idx * 64ull;
    int i;

    for (i = 0; i < 6; i++) {
        put64(w + 8 * i, args ? args[i] : 0);
    }
    put64(w + 48, scratch);
    put64(w + 56, opcode | (valid ? QRDMA_CQP_WQE_VALID : 0));
    drv.sq_next = (idx + 1) % drv.sq_len;
    if (!drv.sq_next) {
        drv.sq_valid = !drv.sq_valid;
    }
    return idx;
}

static void ring(void)
{
    wr(QRDMA_REG_CQP_DB, drv.sq_next);
    CHECK(fake.kicks & QRDMA_WORK_CQP);
    fake.kicks = 0;
    qrdma_core_run(&core, QRDMA_WORK_CQP);
}

/* Poll one CQE the way the driver does; false if none is valid. */
static bool poll(uint64_t *scratch, uint64_t *status, uint64_t *retval)
{
    uint64_t c = CCQ_ADDR + drv.ccq_head * 32ull;

    if (!!(get64(c + 24) & QRDMA_CCQ_CQE_VALID) != drv.ccq_valid) {
        return false;
    }
    *scratch = get64(c);
    *retval = get64(c + 8);
    *status = get64(c + 16);
    drv.ccq_head = (drv.ccq_head + 1) % drv.ccq_len;
    if (!drv.ccq_head) {
        drv.ccq_valid = !drv.ccq_valid;
    }
    put64(SHADOW_ADDR, drv.ccq_head);
    return true;
}

static unsigned major_of(uint64_t status)
{
    return (status & QRDMA_CCQ_CQE_MAJOR_MASK) >> QRDMA_CCQ_CQE_MAJOR_SHIFT;
}

static unsigned minor_of(uint64_t status)
{
    return status & QRDMA_CCQ_CQE_MINOR_MASK;
}

/* Run one command and return its CQE status. */
static uint64_t run1(uint8_t opcode, const uint64_t *args)
{
    uint64_t scratch, status = ~0ull, retval;
    static uint64_t cookie = 1000;
    unsigned idx;

    idx = post(opcode, args, ++cookie, drv.sq_valid);
    ring();
    CHECK(poll(&scratch, &status, &retval));
    CHECK_EQ(scratch, cookie);
    CHECK_EQ((status & QRDMA_CCQ_CQE_OPCODE_MASK) >> QRDMA_CCQ_CQE_OPCODE_SHIFT, opcode);
    CHECK_EQ((status & QRDMA_CCQ_CQE_WQE_INDEX_MASK) >> QRDMA_CCQ_CQE_WQE_INDEX_SHIFT, idx);
    return status;
}

static void test_create_ok(void)
{
    setup_cqp(4, 5);
    CHECK_EQ(rd(QRDMA_REG_CQP_TAIL), 0);
    CHECK_EQ(rd(QRDMA_REG_CQP_ERRCODES), 0);
    CHECK_EQ(rd(QRDMA_REG_CCQP_CTX_LOW), (uint32_t)CTX_ADDR);
    CHECK_EQ(fake.guest_errors, 0);
    /* A second creation is refused while the CQP exists. */
    create_at(CTX_ADDR);
    CHECK_STR_CONTAINS(fake.last_error, "while the CQP exists");
    CHECK_EQ(rd(QRDMA_REG_CCQP_STATUS), QRDMA_CCQP_STATUS_DONE);
}

static void expect_create_error(unsigned minor, const char *msg)
{
    create_at(CTX_ADDR);
    CHECK_EQ(rd(QRDMA_REG_CCQP_STATUS), QRDMA_CCQP_STATUS_ERR);
    CHECK_EQ(rd(QRDMA_REG_CQP_ERRCODES),
             QRDMA_CQP_ERR_CONTEXT << QRDMA_CQP_ERRCODES_MAJOR_SHIFT | minor);
    CHECK_STR_CONTAINS(fake.last_error, msg);
}

static void test_create_errors(void)
{
    fake_setup_ready(NULL);
    write_ctx(3, 5, SQ_ADDR, CCQ_ADDR, SHADOW_ADDR);
    expect_create_error(QRDMA_CQP_CTX_ERR_SQ_SIZE, "SQ size");
    write_ctx(12, 12, SQ_ADDR, CCQ_ADDR, SHADOW_ADDR);
    expect_create_error(QRDMA_CQP_CTX_ERR_SQ_SIZE, "SQ size");
    write_ctx(5, 4, SQ_ADDR, CCQ_ADDR, SHADOW_ADDR);
    expect_create_error(QRDMA_CQP_CTX_ERR_CCQ_SIZE, "CCQ smaller");
    write_ctx(4, 4, SQ_ADDR + 64, CCQ_ADDR, SHADOW_ADDR);
    expect_create_error(QRDMA_CQP_CTX_ERR_SQ_ADDR, "SQ not");
    write_ctx(4, 4, 0x1000, CCQ_ADDR, SHADOW_ADDR);              /* not RAM */
    expect_create_error(QRDMA_CQP_CTX_ERR_SQ_ADDR, "SQ not");
    write_ctx(4, 4, FAKE_RAM_BASE + FAKE_RAM_SIZE - 512, CCQ_ADDR, SHADOW_ADDR); /* runs off RAM */
    expect_create_error(QRDMA_CQP_CTX_ERR_SQ_ADDR, "SQ not");
    write_ctx(4, 4, SQ_ADDR, CCQ_ADDR + 32, SHADOW_ADDR);
    expect_create_error(QRDMA_CQP_CTX_ERR_CCQ_ADDR, "CCQ not");
    write_ctx(4, 4, SQ_ADDR, CCQ_ADDR, SHADOW_ADDR + 4);
    expect_create_error(QRDMA_CQP_CTX_ERR_SHADOW_ADDR, "shadow");
    write_ctx(4, 4, SQ_ADDR, CCQ_ADDR, SHADOW_ADDR);
    put64(CTX_ADDR, 4 | 4 << 8 | 1 << 20);
    expect_create_error(QRDMA_CQP_CTX_ERR_RESERVED, "reserved bits");
    put64(CTX_ADDR, 4 | 4 << 8);
    put64(CTX_ADDR + 40, 1);
    expect_create_error(QRDMA_CQP_CTX_ERR_RESERVED, "reserved qwords");
    put64(CTX_ADDR + 40, 0);
    wr(QRDMA_REG_CCQP_CTX_HIGH, 0);
    wr(QRDMA_REG_CCQP_CTX_LOW, 0x20);                            /* unaligned, not RAM */
    CHECK_EQ(rd(QRDMA_REG_CQP_ERRCODES),
             QRDMA_CQP_ERR_CONTEXT << QRDMA_CQP_ERRCODES_MAJOR_SHIFT |
             QRDMA_CQP_CTX_ERR_UNREADABLE);
    /* After all that, a good context still creates the CQP. */
    create_at(CTX_ADDR);
    CHECK_EQ(rd(QRDMA_REG_CCQP_STATUS), QRDMA_CCQP_STATUS_DONE);
}

static void test_create_needs_ready_engine(void)
{
    fake_setup(NULL);
    write_ctx(4, 4, SQ_ADDR, CCQ_ADDR, SHADOW_ADDR);
    create_at(CTX_ADDR);
    CHECK_EQ(rd(QRDMA_REG_CCQP_STATUS), 0);
    CHECK_STR_CONTAINS(fake.last_error, "before the engine is ready");
}

static void test_doorbell_checks(void)
{
    fake_setup_ready(NULL);
    wr(QRDMA_REG_CQP_DB, 1);
    CHECK_STR_CONTAINS(fake.last_error, "before the CQP exists");
    CHECK_EQ(fake.kicks, 0);
    setup_cqp(4, 4);
    wr(QRDMA_REG_CQP_DB, 16);
    CHECK_STR_CONTAINS(fake.last_error, "outside a ring of 16");
    CHECK_EQ(fake.kicks, 0);
}

static void test_nop_laps(void)
{
    unsigned i;

    setup_cqp(4, 4);
    /* Five laps of a 16-entry ring: polarity flips on both rings. */
    for (i = 0; i < 80; i++) {
        uint64_t status = run1(QRDMA_CQP_OP_NOP, NULL);

        CHECK_EQ(major_of(status), QRDMA_CQP_OK);
    }
    CHECK_EQ(rd(QRDMA_REG_CQP_TAIL), 80 % 16);
    CHECK_EQ(core.stats.cqp_commands, 80);
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_batch(void)
{
    uint64_t scratch, status, retval;
    unsigned i;

    setup_cqp(5, 6);
    for (i = 0; i < 20; i++) {
        post(QRDMA_CQP_OP_NOP, NULL, 500 + i, drv.sq_valid);
    }
    ring();
    for (i = 0; i < 20; i++) {
        CHECK(poll(&scratch, &status, &retval));
        CHECK_EQ(scratch, 500 + i);
    }
    CHECK(!poll(&scratch, &status, &retval));
}

static void test_bad_wqes(void)
{
    uint64_t scratch, status, retval;
    uint64_t args[6] = { 0 };

    setup_cqp(4, 4);
    status = run1(0x7f, NULL);
    CHECK_EQ(major_of(status), QRDMA_CQP_ERR_BAD_OPCODE);
    CHECK_STR_CONTAINS(fake.last_error, "unknown opcode 0x7f");
    CHECK_EQ(rd(QRDMA_REG_CQP_ERRCODES), QRDMA_CQP_ERR_BAD_OPCODE << 16);

    /* Header with reserved bits. */
    post(QRDMA_CQP_OP_NOP, args, 1, true);
    put64(SQ_ADDR + ((drv.sq_next - 1) % 16) * 64ull + 56,
          QRDMA_CQP_OP_NOP | QRDMA_CQP_WQE_VALID | 1ull << 40);
    ring();
    CHECK(poll(&scratch, &status, &retval));
    CHECK_EQ(major_of(status), QRDMA_CQP_ERR_INVALID_ARG);
    CHECK_EQ(minor_of(status), 7);

    /* A doorbell over a WQE still carrying last lap's (wrong) VALID. */
    post(QRDMA_CQP_OP_NOP, NULL, 2, false);
    ring();
    CHECK(poll(&scratch, &status, &retval));
    CHECK_EQ(major_of(status), QRDMA_CQP_ERR_NOT_VALID);
    CHECK_STR_CONTAINS(fake.last_error, "without VALID=1");

    /* The ring keeps working. */
    CHECK_EQ(major_of(run1(QRDMA_CQP_OP_NOP, NULL)), QRDMA_CQP_OK);
}

static void test_ccq_full(void)
{
    uint64_t scratch, status, retval;
    unsigned i;

    setup_cqp(4, 4);
    /* Never consume: the 16-entry CCQ takes 15 CQEs, then must stop. */
    for (i = 0; i < 15; i++) {
        post(QRDMA_CQP_OP_NOP, NULL, i, drv.sq_valid);
    }
    ring();
    CHECK_EQ(rd(QRDMA_REG_CQP_TAIL), 15);
    post(QRDMA_CQP_OP_NOP, NULL, 15, drv.sq_valid);
    ring();
    CHECK_EQ(rd(QRDMA_REG_CQP_TAIL), 15);
    CHECK_STR_CONTAINS(fake.last_error, "no room in the CCQ");
    CHECK_EQ(rd(QRDMA_REG_CQP_ERRCODES) >> 16, QRDMA_CQP_ERR_CCQ_FULL);
    /* Consume everything; the next doorbell runs the waiting WQE. */
    for (i = 0; i < 15; i++) {
        CHECK(poll(&scratch, &status, &retval));
        CHECK_EQ(scratch, i);
    }
    ring();
    CHECK(poll(&scratch, &status, &retval));
    CHECK_EQ(scratch, 15);
    /* A shadow head outside the CCQ is refused too: logged, and nothing runs. */
    i = fake.guest_errors;
    put64(SHADOW_ADDR, 99);
    post(QRDMA_CQP_OP_NOP, NULL, 16, drv.sq_valid);
    ring();
    CHECK_EQ(fake.guest_errors, i + 2);
    CHECK_STR_CONTAINS(fake.last_error, "no room in the CCQ");
    CHECK_EQ(rd(QRDMA_REG_CQP_TAIL), 0);
}

static uint64_t gid_word(const uint8_t *g)
{
    uint64_t v = 0;
    int i;

    for (i = 7; i >= 0; i--) {
        v = v << 8 | g[i];
    }
    return v;
}

static uint64_t add_gid(unsigned index, unsigned type, const uint8_t gid[16])
{
    uint64_t args[6] = { index | type << QRDMA_CQP_GID_TYPE_SHIFT, gid_word(gid),
                         gid_word(gid + 8) };

    return run1(QRDMA_CQP_OP_ADD_GID, args);
}

static const uint8_t gid_v4[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 };
static const uint8_t gid_v6[16] = { 0xfd, 0, [14] = 0x12, [15] = 0x34 };

static void test_gid_commands(void)
{
    uint64_t args[6] = { 0 };

    setup_cqp(4, 4);
    CHECK(!qrdma_core_gid_is_own(&core, gid_v4));
    CHECK_EQ(major_of(add_gid(0, QRDMA_GID_TYPE_ROCE_V2_IPV4, gid_v4)), QRDMA_CQP_OK);
    CHECK_EQ(major_of(add_gid(31, QRDMA_GID_TYPE_ROCE_V2_IPV6, gid_v6)), QRDMA_CQP_OK);
    CHECK(qrdma_core_gid_is_own(&core, gid_v4));
    CHECK(qrdma_core_gid_is_own(&core, gid_v6));

    /* index beyond the table, bad type, type not matching the address */
    CHECK_EQ(major_of(add_gid(32, QRDMA_GID_TYPE_ROCE_V2_IPV4, gid_v4)),
             QRDMA_CQP_ERR_INVALID_ARG);
    CHECK_EQ(minor_of(add_gid(1, 3, gid_v4)), 0);
    CHECK_EQ(major_of(add_gid(1, 0, gid_v4)), QRDMA_CQP_ERR_INVALID_ARG);
    CHECK_EQ(minor_of(add_gid(1, QRDMA_GID_TYPE_ROCE_V2_IPV6, gid_v4)), 1);
    CHECK_EQ(minor_of(add_gid(1, QRDMA_GID_TYPE_ROCE_V2_IPV4, gid_v6)), 1);
    CHECK_EQ(major_of(add_gid(1, QRDMA_GID_TYPE_ROCE_V2_IPV4, gid_v6)),
             QRDMA_CQP_ERR_INVALID_ARG);
    args[0] = 1 | 1 << QRDMA_CQP_GID_TYPE_SHIFT | 1ull << 12;    /* reserved bit */
    CHECK_EQ(major_of(run1(QRDMA_CQP_OP_ADD_GID, args)), QRDMA_CQP_ERR_INVALID_ARG);

    /* delete */
    args[0] = 0;
    CHECK_EQ(major_of(run1(QRDMA_CQP_OP_DEL_GID, args)), QRDMA_CQP_OK);
    CHECK(!qrdma_core_gid_is_own(&core, gid_v4));
    CHECK_EQ(major_of(run1(QRDMA_CQP_OP_DEL_GID, args)), QRDMA_CQP_ERR_INVALID_ARG);
    args[0] = 200;
    CHECK_EQ(major_of(run1(QRDMA_CQP_OP_DEL_GID, args)), QRDMA_CQP_ERR_INVALID_ARG);
    CHECK(qrdma_core_gid_is_own(&core, gid_v6));

    /* reset forgets the table and the CQP */
    wr(QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    CHECK(!qrdma_core_gid_is_own(&core, gid_v6));
    CHECK_EQ(rd(QRDMA_REG_CCQP_STATUS), 0);
}

/* A RoCEv2 frame (IPv4, UDP 4791) to our MAC and the given address. */
static size_t roce_frame(uint8_t *f, const uint8_t ip[4])
{
    static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

    memset(f, 0, 80);
    memcpy(f, mac, 6);
    f[12] = 0x08;
    f[14] = 0x45;                       /* IPv4, IHL 5 */
    f[23] = 17;                         /* UDP */
    memcpy(f + 30, ip, 4);
    f[36] = 4791 >> 8;
    f[37] = 4791 & 0xff;
    return 80;
}

static void test_gid_steers_roce(void)
{
    static const uint8_t ours[4] = { 10, 0, 0, 1 }, other[4] = { 10, 0, 0, 2 };
    uint8_t f[80];

    setup_cqp(4, 4);
    CHECK_EQ(major_of(add_gid(0, QRDMA_GID_TYPE_ROCE_V2_IPV4, gid_v4)), QRDMA_CQP_OK);
    /* Receive is off: LAN traffic would be dropped, RoCE to our GID is steered. */
    CHECK_EQ(qrdma_core_lan_receive(&core, f, roce_frame(f, ours)), 80);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_ROCE_FRAMES), 1);
    CHECK_EQ(qrdma_core_lan_receive(&core, f, roce_frame(f, other)), 80);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_ROCE_FRAMES), 1);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_DROPPED), 1);
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_create_ok),
    UNIT_TEST(test_create_errors),
    UNIT_TEST(test_create_needs_ready_engine),
    UNIT_TEST(test_doorbell_checks),
    UNIT_TEST(test_nop_laps),
    UNIT_TEST(test_batch),
    UNIT_TEST(test_bad_wqes),
    UNIT_TEST(test_ccq_full),
    UNIT_TEST(test_gid_commands),
    UNIT_TEST(test_gid_steers_roce),
};

int main(void)
{
    return unit_run("core-cqp", tests, sizeof(tests) / sizeof(tests[0]));
}
