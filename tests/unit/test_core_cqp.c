/*
 * Unit tests of the device core's control QP: creation from the context
 * and every context check, the WQE ring with VALID polarity over several
 * laps, completions on the CCQ with their polarity, the commands (NOP,
 * ADD_GID, DEL_GID) and their error codes, the CCQ-full guard, and the
 * GID table steering RoCEv2 frames away from the LAN.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/qrdma_core.h"
#include "fake_cqp.h"
#include "fake_env.h"
#include "unit.h"

int unit_failures;


static void setup_cqp(unsigned sq_log2, unsigned ccq_log2)
{
    fake_setup_ready(NULL);
    cqp_setup(sq_log2, ccq_log2);
}

static uint64_t run1(uint8_t opcode, const uint64_t *args)
{
    return cqp_run1(opcode, args, NULL);
}

static void test_create_ok(void)
{
    setup_cqp(4, 5);
    CHECK_EQ(rd(QRDMA_REG_CQP_TAIL), 0);
    CHECK_EQ(rd(QRDMA_REG_CQP_ERRCODES), 0);
    CHECK_EQ(rd(QRDMA_REG_CCQP_CTX_LOW), (uint32_t)CQP_CTX_ADDR);
    CHECK_EQ(fake.guest_errors, 0);
    /* A second creation is refused while the CQP exists. */
    cqp_create_at(CQP_CTX_ADDR);
    CHECK_STR_CONTAINS(fake.last_error, "while the CQP exists");
    CHECK_EQ(rd(QRDMA_REG_CCQP_STATUS), QRDMA_CCQP_STATUS_DONE);
}

static void expect_create_error(unsigned minor, const char *msg)
{
    cqp_create_at(CQP_CTX_ADDR);
    CHECK_EQ(rd(QRDMA_REG_CCQP_STATUS), QRDMA_CCQP_STATUS_ERR);
    CHECK_EQ(rd(QRDMA_REG_CQP_ERRCODES),
             QRDMA_CQP_ERR_CONTEXT << QRDMA_CQP_ERRCODES_MAJOR_SHIFT | minor);
    CHECK_STR_CONTAINS(fake.last_error, msg);
}

static void test_create_errors(void)
{
    fake_setup_ready(NULL);
    cqp_write_ctx(3, 5, CQP_SQ_ADDR, CQP_CCQ_ADDR, CQP_SHADOW_ADDR);
    expect_create_error(QRDMA_CQP_CTX_ERR_SQ_SIZE, "SQ size");
    cqp_write_ctx(12, 12, CQP_SQ_ADDR, CQP_CCQ_ADDR, CQP_SHADOW_ADDR);
    expect_create_error(QRDMA_CQP_CTX_ERR_SQ_SIZE, "SQ size");
    cqp_write_ctx(5, 4, CQP_SQ_ADDR, CQP_CCQ_ADDR, CQP_SHADOW_ADDR);
    expect_create_error(QRDMA_CQP_CTX_ERR_CCQ_SIZE, "CCQ smaller");
    cqp_write_ctx(4, 4, CQP_SQ_ADDR + 64, CQP_CCQ_ADDR, CQP_SHADOW_ADDR);
    expect_create_error(QRDMA_CQP_CTX_ERR_SQ_ADDR, "SQ not");
    cqp_write_ctx(4, 4, 0x1000, CQP_CCQ_ADDR, CQP_SHADOW_ADDR);              /* not RAM */
    expect_create_error(QRDMA_CQP_CTX_ERR_SQ_ADDR, "SQ not");
    cqp_write_ctx(4, 4, FAKE_RAM_BASE + FAKE_RAM_SIZE - 512, CQP_CCQ_ADDR, CQP_SHADOW_ADDR); /* runs off RAM */
    expect_create_error(QRDMA_CQP_CTX_ERR_SQ_ADDR, "SQ not");
    cqp_write_ctx(4, 4, CQP_SQ_ADDR, CQP_CCQ_ADDR + 32, CQP_SHADOW_ADDR);
    expect_create_error(QRDMA_CQP_CTX_ERR_CCQ_ADDR, "CCQ not");
    cqp_write_ctx(4, 4, CQP_SQ_ADDR, CQP_CCQ_ADDR, CQP_SHADOW_ADDR + 4);
    expect_create_error(QRDMA_CQP_CTX_ERR_SHADOW_ADDR, "shadow");
    cqp_write_ctx(4, 4, CQP_SQ_ADDR, CQP_CCQ_ADDR, CQP_SHADOW_ADDR);
    put64(CQP_CTX_ADDR, 4 | 4 << 8 | 1 << 20);
    expect_create_error(QRDMA_CQP_CTX_ERR_RESERVED, "reserved bits");
    put64(CQP_CTX_ADDR, 4 | 4 << 8);
    put64(CQP_CTX_ADDR + 48, 1);                /* qwords 4-5 are CCQ events: test_core_eq */
    expect_create_error(QRDMA_CQP_CTX_ERR_RESERVED, "reserved qwords");
    put64(CQP_CTX_ADDR + 48, 0);
    wr(QRDMA_REG_CCQP_CTX_HIGH, 0);
    wr(QRDMA_REG_CCQP_CTX_LOW, 0x20);                            /* unaligned, not RAM */
    CHECK_EQ(rd(QRDMA_REG_CQP_ERRCODES),
             QRDMA_CQP_ERR_CONTEXT << QRDMA_CQP_ERRCODES_MAJOR_SHIFT |
             QRDMA_CQP_CTX_ERR_UNREADABLE);
    /* After all that, a good context still creates the CQP. */
    cqp_create_at(CQP_CTX_ADDR);
    CHECK_EQ(rd(QRDMA_REG_CCQP_STATUS), QRDMA_CCQP_STATUS_DONE);
}

static void test_create_needs_ready_engine(void)
{
    fake_setup(NULL);
    cqp_write_ctx(4, 4, CQP_SQ_ADDR, CQP_CCQ_ADDR, CQP_SHADOW_ADDR);
    cqp_create_at(CQP_CTX_ADDR);
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

        CHECK_EQ(cqp_major(status), QRDMA_CQP_OK);
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
        cqp_post(QRDMA_CQP_OP_NOP, NULL, 500 + i, drv.sq_valid);
    }
    cqp_ring();
    for (i = 0; i < 20; i++) {
        CHECK(cqp_poll(&scratch, &status, &retval));
        CHECK_EQ(scratch, 500 + i);
    }
    CHECK(!cqp_poll(&scratch, &status, &retval));
}

static void test_bad_wqes(void)
{
    uint64_t scratch, status, retval;
    uint64_t args[6] = { 0 };

    setup_cqp(4, 4);
    status = run1(0x7f, NULL);
    CHECK_EQ(cqp_major(status), QRDMA_CQP_ERR_BAD_OPCODE);
    CHECK_STR_CONTAINS(fake.last_error, "unknown opcode 0x7f");
    CHECK_EQ(rd(QRDMA_REG_CQP_ERRCODES), QRDMA_CQP_ERR_BAD_OPCODE << 16);

    /* Header with reserved bits. */
    cqp_post(QRDMA_CQP_OP_NOP, args, 1, true);
    put64(CQP_SQ_ADDR + ((drv.sq_next - 1) % 16) * 64ull + 56,
          QRDMA_CQP_OP_NOP | QRDMA_CQP_WQE_VALID | 1ull << 40);
    cqp_ring();
    CHECK(cqp_poll(&scratch, &status, &retval));
    CHECK_EQ(cqp_major(status), QRDMA_CQP_ERR_INVALID_ARG);
    CHECK_EQ(cqp_minor(status), 7);

    /* A doorbell over a WQE still carrying last lap's (wrong) VALID. */
    cqp_post(QRDMA_CQP_OP_NOP, NULL, 2, false);
    cqp_ring();
    CHECK(cqp_poll(&scratch, &status, &retval));
    CHECK_EQ(cqp_major(status), QRDMA_CQP_ERR_NOT_VALID);
    CHECK_STR_CONTAINS(fake.last_error, "without VALID=1");

    /* The ring keeps working. */
    CHECK_EQ(cqp_major(run1(QRDMA_CQP_OP_NOP, NULL)), QRDMA_CQP_OK);
}

static void test_ccq_full(void)
{
    uint64_t scratch, status, retval;
    unsigned i;

    setup_cqp(4, 4);
    /* Never consume: the 16-entry CCQ takes 15 CQEs, then must stop. */
    for (i = 0; i < 15; i++) {
        cqp_post(QRDMA_CQP_OP_NOP, NULL, i, drv.sq_valid);
    }
    cqp_ring();
    CHECK_EQ(rd(QRDMA_REG_CQP_TAIL), 15);
    cqp_post(QRDMA_CQP_OP_NOP, NULL, 15, drv.sq_valid);
    cqp_ring();
    CHECK_EQ(rd(QRDMA_REG_CQP_TAIL), 15);
    CHECK_STR_CONTAINS(fake.last_error, "no room in the CCQ");
    CHECK_EQ(rd(QRDMA_REG_CQP_ERRCODES) >> 16, QRDMA_CQP_ERR_CCQ_FULL);
    /* Consume everything; the next doorbell runs the waiting WQE. */
    for (i = 0; i < 15; i++) {
        CHECK(cqp_poll(&scratch, &status, &retval));
        CHECK_EQ(scratch, i);
    }
    cqp_ring();
    CHECK(cqp_poll(&scratch, &status, &retval));
    CHECK_EQ(scratch, 15);
    /* A shadow head outside the CCQ is refused too: logged, and nothing runs. */
    i = fake.guest_errors;
    put64(CQP_SHADOW_ADDR, 99);
    cqp_post(QRDMA_CQP_OP_NOP, NULL, 16, drv.sq_valid);
    cqp_ring();
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
    CHECK_EQ(cqp_major(add_gid(0, QRDMA_GID_TYPE_ROCE_V2_IPV4, gid_v4)), QRDMA_CQP_OK);
    CHECK_EQ(cqp_major(add_gid(31, QRDMA_GID_TYPE_ROCE_V2_IPV6, gid_v6)), QRDMA_CQP_OK);
    CHECK(qrdma_core_gid_is_own(&core, gid_v4));
    CHECK(qrdma_core_gid_is_own(&core, gid_v6));

    /* index beyond the table, bad type, type not matching the address */
    CHECK_EQ(cqp_major(add_gid(32, QRDMA_GID_TYPE_ROCE_V2_IPV4, gid_v4)),
             QRDMA_CQP_ERR_INVALID_ARG);
    CHECK_EQ(cqp_minor(add_gid(1, 3, gid_v4)), 0);
    CHECK_EQ(cqp_major(add_gid(1, 0, gid_v4)), QRDMA_CQP_ERR_INVALID_ARG);
    CHECK_EQ(cqp_minor(add_gid(1, QRDMA_GID_TYPE_ROCE_V2_IPV6, gid_v4)), 1);
    CHECK_EQ(cqp_minor(add_gid(1, QRDMA_GID_TYPE_ROCE_V2_IPV4, gid_v6)), 1);
    CHECK_EQ(cqp_major(add_gid(1, QRDMA_GID_TYPE_ROCE_V2_IPV4, gid_v6)),
             QRDMA_CQP_ERR_INVALID_ARG);
    args[0] = 1 | 1 << QRDMA_CQP_GID_TYPE_SHIFT | 1ull << 12;    /* reserved bit */
    CHECK_EQ(cqp_major(run1(QRDMA_CQP_OP_ADD_GID, args)), QRDMA_CQP_ERR_INVALID_ARG);

    /* delete */
    args[0] = 0;
    CHECK_EQ(cqp_major(run1(QRDMA_CQP_OP_DEL_GID, args)), QRDMA_CQP_OK);
    CHECK(!qrdma_core_gid_is_own(&core, gid_v4));
    CHECK_EQ(cqp_major(run1(QRDMA_CQP_OP_DEL_GID, args)), QRDMA_CQP_ERR_INVALID_ARG);
    args[0] = 200;
    CHECK_EQ(cqp_major(run1(QRDMA_CQP_OP_DEL_GID, args)), QRDMA_CQP_ERR_INVALID_ARG);
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
    CHECK_EQ(cqp_major(add_gid(0, QRDMA_GID_TYPE_ROCE_V2_IPV4, gid_v4)), QRDMA_CQP_OK);
    /* Receive is off: LAN traffic would be dropped, RoCE to our GID is steered. */
    CHECK_EQ(qrdma_core_lan_receive(&core, f, roce_frame(f, ours)), 80);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_ROCE_FRAMES), 1);
    CHECK_EQ(qrdma_core_lan_receive(&core, f, roce_frame(f, other)), 80);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_ROCE_FRAMES), 1);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_DROPPED), 1);
}

/*
 * The x-cqp-stall-opcode test hook: the CQP runs nothing from the first
 * WQE with that opcode on, however often it is rung, until a reset; after
 * the reset a new CQP runs commands again (and stalls again at the opcode).
 */
static void test_stall_hook(void)
{
    struct qrdma_core_config cfg;
    uint64_t scratch, status, retval;

    qrdma_core_config_defaults(&cfg);
    cfg.cqp_stall_opcode = QRDMA_CQP_OP_CREATE_SRQ;
    fake_setup_ready(&cfg);
    cqp_setup(4, 5);
    CHECK_EQ(cqp_major(run1(QRDMA_CQP_OP_NOP, NULL)), QRDMA_CQP_OK);
    cqp_post(QRDMA_CQP_OP_NOP, NULL, 10, drv.sq_valid);
    cqp_post(QRDMA_CQP_OP_CREATE_SRQ, NULL, 11, drv.sq_valid);
    cqp_post(QRDMA_CQP_OP_NOP, NULL, 12, drv.sq_valid);
    cqp_ring();
    /* The NOP before it completes; the stalling WQE and the one after do not. */
    CHECK(cqp_poll(&scratch, &status, &retval));
    CHECK_EQ(scratch, 10);
    CHECK(!cqp_poll(&scratch, &status, &retval));
    CHECK_EQ(rd(QRDMA_REG_CQP_TAIL), 2);
    CHECK_STR_CONTAINS(fake.last_error, "CQP stalled at WQE 2 (opcode 0x38");
    cqp_post(QRDMA_CQP_OP_NOP, NULL, 13, drv.sq_valid);
    cqp_ring();
    CHECK(!cqp_poll(&scratch, &status, &retval));
    CHECK_EQ(rd(QRDMA_REG_CQP_TAIL), 2);
    CHECK_EQ(core.stats.cqp_commands, 2);

    /* A reset clears the stall: a new CQP answers again. */
    wr(QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    qrdma_core_pe_ready(&core);
    memset(gpa(CQP_SQ_ADDR), 0, 16 * 64);
    memset(gpa(CQP_CCQ_ADDR), 0, 32 * 32);
    cqp_setup(4, 5);
    CHECK_EQ(cqp_major(run1(QRDMA_CQP_OP_NOP, NULL)), QRDMA_CQP_OK);
    CHECK_EQ(cqp_major(run1(QRDMA_CQP_OP_NOP, NULL)), QRDMA_CQP_OK);

    /* Not an opcode: refused at init. */
    {
        struct qrdma_core c2;
        struct qrdma_core_env env = { 0 };
        char err[128] = "";

        cfg.cqp_stall_opcode = 256;
        CHECK_EQ(qrdma_core_init(&c2, &cfg, &env, err, sizeof(err)), -EINVAL);
        CHECK_STR_CONTAINS(err, "cqp_stall_opcode=256");
    }
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
    UNIT_TEST(test_stall_hook),
};

int main(void)
{
    return unit_run("core-cqp", tests, sizeof(tests) / sizeof(tests[0]));
}
