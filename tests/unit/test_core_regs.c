/*
 * Unit tests of the device core's register file, reset and PE bring-up,
 * and doorbell decoding, driven through the core's entry points with a
 * fake embedding that records guest errors and timer requests.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "core/qrdma_core.h"
#include "fake_env.h"
#include "qrdma_sw.h"
#include "unit.h"

int unit_failures;

static void setup_with(const struct qrdma_core_config *cfg)
{
    fake_setup(cfg);
}

static void setup(void)
{
    fake_setup(NULL);
}

static void test_reset_values(void)
{
    struct qrdma_core_config cfg;

    qrdma_core_config_defaults(&cfg);
    setup();
    CHECK_EQ(rd(QRDMA_REG_SIGNATURE), QRDMA_SIGNATURE);
    CHECK_EQ(rd(QRDMA_REG_IF_VERSION),
             QRDMA_IF_VERSION_MAJOR << QRDMA_IF_VERSION_MAJOR_SHIFT | QRDMA_IF_VERSION_MINOR);
    CHECK_EQ(rd(QRDMA_REG_HW_REV), QRDMA_PCI_REVISION);
    CHECK_EQ(rd(QRDMA_REG_FW_VERSION), 0x00010000);
    CHECK_EQ(rd(QRDMA_REG_MAC_LOW), 0x12005452);
    CHECK_EQ(rd(QRDMA_REG_MAC_HIGH), 0x5634);
    CHECK_EQ(rd(QRDMA_REG_BOARD_ID), 0x554d4551);          /* "QEMU" */
    CHECK_EQ(rd(QRDMA_REG_BOARD_ID + 4), 0x4452512d);      /* "-QRD" */
    CHECK_EQ(rd(QRDMA_REG_BOARD_ID + 8), 0x0000414d);      /* "MA\0\0" */
    CHECK_EQ(rd(QRDMA_REG_BOARD_ID + 12), 0);
    CHECK_EQ(rd(QRDMA_REG_DEV_CTRL), 0);
    CHECK_EQ(rd(QRDMA_REG_PE_STATUS), 0);
    CHECK_EQ(rd(QRDMA_REG_SCRATCH), 0);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_QP), cfg.max_qp);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_CQ), cfg.max_cq);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_MR), cfg.max_mr);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_PD), cfg.max_pd);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_SRQ), cfg.max_srq);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_AH), cfg.max_ah);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_QP_WR), cfg.max_qp_wr);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_SRQ_WR), cfg.max_srq_wr);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_CQE), cfg.max_cqe);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_SEND_SGE), cfg.max_send_sge);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_RECV_SGE), cfg.max_recv_sge);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_INLINE), cfg.max_inline);
    CHECK_EQ(rd(QRDMA_REG_CAP_PAGE_SIZES),
             QRDMA_PAGE_SIZE_4K | QRDMA_PAGE_SIZE_2M | QRDMA_PAGE_SIZE_1G);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_MR_SIZE_LO), 0);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_MR_SIZE_HI), 1u << 8);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_RD_ATOM), cfg.max_rd_atom);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_RESP_RES), cfg.max_rd_atom);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_MTU), 4096);
    CHECK_EQ(rd(QRDMA_REG_CAP_GID_TABLE_LEN), cfg.gid_table_len);
    CHECK_EQ(rd(QRDMA_REG_CAP_DB_PAGES), cfg.db_pages);
    CHECK_EQ(rd(QRDMA_REG_CAP_MSIX_VECTORS), cfg.msix_vectors);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_CEQ), cfg.max_ceq);
    CHECK_EQ(rd(QRDMA_REG_CAP_FEATURES), QRDMA_FEATURE_RC | QRDMA_FEATURE_UD | QRDMA_FEATURE_UC |
                                         QRDMA_FEATURE_SRQ |
                                         QRDMA_FEATURE_ATOMIC | QRDMA_FEATURE_FAST_REG |
                                         QRDMA_FEATURE_MW | QRDMA_FEATURE_WIRE_IDS |
                                         QRDMA_FEATURE_STATS | QRDMA_FEATURE_MCAST |
                                         QRDMA_FEATURE_GSI | QRDMA_FEATURE_ANNOUNCE);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_MCAST_GRP), cfg.max_mcast_grp);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_MCAST_QP_ATTACH), cfg.max_mcast_qp_attach);
    CHECK_EQ(rd(QRDMA_REG_PORT_SPEED), 100000);
    /* sw: the port is the netdev's, no host GIDs */
    CHECK_EQ(rd(QRDMA_REG_HOST_GID_COUNT), 0);
    CHECK_EQ(rd(QRDMA_REG_HOST_GID(0)), 0);
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_properties_reach_registers(void)
{
    struct qrdma_core_config cfg;
    static const uint8_t mac[6] = { 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee };

    qrdma_core_config_defaults(&cfg);
    memcpy(cfg.mac, mac, sizeof(mac));
    snprintf(cfg.board_id, sizeof(cfg.board_id), "BOARD-7");
    cfg.max_qp = 77;
    cfg.db_pages = 16;
    cfg.max_mtu = 1024;
    setup_with(&cfg);
    CHECK_EQ(rd(QRDMA_REG_MAC_LOW), 0xccbbaa02);
    CHECK_EQ(rd(QRDMA_REG_MAC_HIGH), 0xeedd);
    CHECK_EQ(rd(QRDMA_REG_BOARD_ID), 0x52414f42);          /* "BOAR" */
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_QP), 77);
    CHECK_EQ(rd(QRDMA_REG_CAP_DB_PAGES), 16);
    CHECK_EQ(rd(QRDMA_REG_CAP_MAX_MTU), 1024);
}

static void test_bad_config_refused(void)
{
    struct qrdma_core_env env = fake_core_env();
    struct qrdma_core_config cfg;
    struct qrdma_core c;
    char err[128];

    qrdma_core_config_defaults(&cfg);
    cfg.db_pages = 100;
    CHECK_EQ(qrdma_core_init(&c, &cfg, &env, err, sizeof(err)), -EINVAL);
    CHECK_STR_CONTAINS(err, "db_pages=100 is not a power of two");

    qrdma_core_config_defaults(&cfg);
    cfg.max_qp = 0;
    CHECK_EQ(qrdma_core_init(&c, &cfg, &env, err, sizeof(err)), -EINVAL);
    CHECK_STR_CONTAINS(err, "max_qp=0 is outside");

    qrdma_core_config_defaults(&cfg);
    cfg.max_mtu = 1500;
    CHECK_EQ(qrdma_core_init(&c, &cfg, &env, err, sizeof(err)), -EINVAL);
    CHECK_STR_CONTAINS(err, "max_mtu=1500");

    qrdma_core_config_defaults(&cfg);
    cfg.msix_vectors = 65;
    CHECK_EQ(qrdma_core_init(&c, &cfg, &env, err, sizeof(err)), -EINVAL);

    qrdma_core_config_defaults(&cfg);
    cfg.mac[0] = 0x01;
    CHECK_EQ(qrdma_core_init(&c, &cfg, &env, err, sizeof(err)), -EINVAL);
    CHECK_STR_CONTAINS(err, "multicast");

    /*
     * The data path carries at most QSW_MAX_SGE SGEs per WQE: a larger
     * advertised maximum would let a consumer post WQEs that then fail.
     */
    qrdma_core_config_defaults(&cfg);
    cfg.max_send_sge = QSW_MAX_SGE;
    cfg.max_recv_sge = QSW_MAX_SGE;
    CHECK_EQ(qrdma_core_init(&c, &cfg, &env, err, sizeof(err)), 0);
    qrdma_core_fini(&c);
    cfg.max_send_sge = QSW_MAX_SGE + 1;
    CHECK_EQ(qrdma_core_init(&c, &cfg, &env, err, sizeof(err)), -EINVAL);
    CHECK_STR_CONTAINS(err, "max_send_sge=17 is outside 1..16");
    cfg.max_send_sge = QSW_MAX_SGE;
    cfg.max_recv_sge = QSW_MAX_SGE + 1;
    CHECK_EQ(qrdma_core_init(&c, &cfg, &env, err, sizeof(err)), -EINVAL);
    CHECK_STR_CONTAINS(err, "max_recv_sge=17 is outside 1..16");

    qrdma_core_config_defaults(&cfg);
    env.link_up = NULL;
    CHECK_EQ(qrdma_core_init(&c, &cfg, &env, err, sizeof(err)), -EINVAL);
}

static void test_pe_ready_after_delay(void)
{
    setup();
    CHECK_EQ(fake.pe_ready_scheduled, 1);
    CHECK_EQ(fake.pe_ready_delay_ns, QRDMA_DEFAULT_PE_READY_DELAY_US * 1000ull);
    CHECK_EQ(rd(QRDMA_REG_PE_STATUS), 0);
    qrdma_core_pe_ready(&core);
    CHECK_EQ(rd(QRDMA_REG_PE_STATUS), QRDMA_PE_STATUS_READY);
}

static void test_pe_never_ready(void)
{
    struct qrdma_core_config cfg;

    qrdma_core_config_defaults(&cfg);
    cfg.pe_ready_delay_us = QRDMA_PE_READY_NEVER;
    setup_with(&cfg);
    CHECK_EQ(fake.pe_ready_scheduled, 0);
    CHECK_EQ(rd(QRDMA_REG_PE_STATUS), 0);
}

static void test_read_only_registers(void)
{
    static const uint32_t ro[] = {
        QRDMA_REG_SIGNATURE, QRDMA_REG_IF_VERSION, QRDMA_REG_HW_REV, QRDMA_REG_FW_VERSION,
        QRDMA_REG_MAC_LOW, QRDMA_REG_MAC_HIGH, QRDMA_REG_BOARD_ID, QRDMA_REG_PE_STATUS,
        QRDMA_REG_GUEST_ERRORS, QRDMA_REG_CAP_MAX_QP, QRDMA_REG_CAP_FEATURES,
        QRDMA_REG_CAP_DB_PAGES, QRDMA_REG_PORT_STATUS, QRDMA_REG_PORT_SPEED,
        QRDMA_REG_HOST_GID_COUNT, QRDMA_REG_HOST_GID(7) + 12,
    };
    size_t i;

    setup();
    qrdma_core_pe_ready(&core);
    for (i = 0; i < sizeof(ro) / sizeof(ro[0]); i++) {
        uint32_t before = rd(ro[i]);
        int errors = fake.guest_errors;

        wr(ro[i], ~before);
        CHECK_EQ(fake.guest_errors, errors + 1);
        CHECK_STR_CONTAINS(fake.last_error, "read-only register");
        CHECK_STR_CONTAINS(fake.last_error, qrdma_core_reg_name(ro[i]));
        if (ro[i] != QRDMA_REG_GUEST_ERRORS) {
            CHECK_EQ(rd(ro[i]), before);
        }
    }
}

static void test_scratch_and_guest_error_count(void)
{
    setup();
    wr(QRDMA_REG_SCRATCH, 0xdeadbeef);
    CHECK_EQ(rd(QRDMA_REG_SCRATCH), 0xdeadbeef);
    CHECK_EQ(rd(QRDMA_REG_GUEST_ERRORS), 0);
    wr(QRDMA_REG_SIGNATURE, 1);
    rd(0x0fc);
    CHECK_EQ(rd(QRDMA_REG_GUEST_ERRORS), 2);
    CHECK_EQ(core.stats.guest_errors, 2);
}

static void test_bad_sizes_ignored(void)
{
    unsigned sizes[] = { 1, 2, 8 };
    size_t i;

    setup();
    wr(QRDMA_REG_SCRATCH, 0x11223344);
    for (i = 0; i < 3; i++) {
        int errors = fake.guest_errors;

        CHECK_EQ(qrdma_core_reg_read(&core, QRDMA_REG_SIGNATURE, sizes[i]), 0);
        CHECK_EQ(fake.guest_errors, errors + 1);
        CHECK_STR_CONTAINS(fake.last_error, "32-bit accesses");
        qrdma_core_reg_write(&core, QRDMA_REG_SCRATCH, sizes[i], 0xffffffffffffffffull);
        CHECK_EQ(fake.guest_errors, errors + 2);
    }
    CHECK_EQ(rd(QRDMA_REG_SCRATCH), 0x11223344);
}

static void test_bad_offsets_ignored(void)
{
    setup();
    /* unaligned */
    CHECK_EQ(qrdma_core_reg_read(&core, QRDMA_REG_SCRATCH + 1, 4), 0);
    CHECK_STR_CONTAINS(fake.last_error, "unaligned");
    qrdma_core_reg_write(&core, QRDMA_REG_SCRATCH + 2, 4, 5);
    CHECK_EQ(rd(QRDMA_REG_SCRATCH), 0);
    /* a hole in the register file */
    CHECK_EQ(rd(0x01c), 0);
    CHECK_STR_CONTAINS(fake.last_error, "no register there");
    wr(0x37c, 1);
    CHECK_STR_CONTAINS(fake.last_error, "no register there");
    /* every block is implemented (none is reserved): their holes are plain holes */
    CHECK_EQ(rd(QRDMA_REG_CQP_BASE + 0x100), 0);
    CHECK_STR_CONTAINS(fake.last_error, "no register there");
    wr(QRDMA_REG_HMC_BASE + 0x100, 1);
    CHECK_STR_CONTAINS(fake.last_error, "no register there");
    wr(QRDMA_REG_INTR_BASE + 0xffc, 1);
    CHECK_STR_CONTAINS(fake.last_error, "no register there");
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS + 4), 0);
    CHECK_STR_CONTAINS(fake.last_error, "no register there");
    CHECK_EQ(rd(QRDMA_REG_LAN_BASE + 0xffc), 0);
    CHECK_STR_CONTAINS(fake.last_error, "no register there");
    /* beyond all blocks and beyond the BAR */
    CHECK_EQ(rd(0x8000), 0);
    CHECK_STR_CONTAINS(fake.last_error, "no register there");
    CHECK_EQ(rd(QRDMA_BAR_REGS_SIZE), 0);
    CHECK_STR_CONTAINS(fake.last_error, "beyond the register BAR");
    CHECK_EQ(qrdma_core_reg_read(&core, UINT64_MAX - 3, 4), 0);
    CHECK_EQ(fake.guest_errors, 12);
}

static void test_reserved_bits_ignored(void)
{
    setup();
    qrdma_core_pe_ready(&core);
    wr(QRDMA_REG_SCRATCH, 42);
    /* RESET with a reserved bit: the whole write is refused. */
    wr(QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET | 0x80000000u);
    CHECK_STR_CONTAINS(fake.last_error, "reserved bits 0x80000000");
    CHECK_EQ(rd(QRDMA_REG_PE_STATUS), QRDMA_PE_STATUS_READY);
    CHECK_EQ(rd(QRDMA_REG_SCRATCH), 42);
    CHECK_EQ(core.stats.resets, 1);
}

static void test_dev_ctrl_reset(void)
{
    setup();
    qrdma_core_pe_ready(&core);
    wr(QRDMA_REG_SCRATCH, 42);
    wr(QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    CHECK_EQ(core.stats.resets, 2);
    CHECK_EQ(rd(QRDMA_REG_DEV_CTRL), 0);       /* self-clearing */
    CHECK_EQ(rd(QRDMA_REG_SCRATCH), 0);
    CHECK_EQ(rd(QRDMA_REG_PE_STATUS), 0);      /* engine restarts */
    CHECK_EQ(fake.pe_ready_scheduled, 2);
    CHECK_EQ(rd(QRDMA_REG_SIGNATURE), QRDMA_SIGNATURE);
    qrdma_core_pe_ready(&core);
    CHECK_EQ(rd(QRDMA_REG_PE_STATUS), QRDMA_PE_STATUS_READY);
    /* writing 0 does nothing */
    wr(QRDMA_REG_DEV_CTRL, 0);
    CHECK_EQ(core.stats.resets, 2);
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_port_status_follows_link(void)
{
    setup();
    CHECK_EQ(rd(QRDMA_REG_PORT_STATUS), 0);
    fake.link_up = true;
    CHECK_EQ(rd(QRDMA_REG_PORT_STATUS), QRDMA_PORT_STATUS_LINK_UP);
    fake.link_up = false;
    CHECK_EQ(rd(QRDMA_REG_PORT_STATUS), 0);
}

static void test_doorbells_without_queues(void)
{
    setup();
    qrdma_core_db_write(&core, QRDMA_DB_PAGE_SIZE * 3, 4, 7);
    CHECK_EQ(fake.guest_errors, 1);
    CHECK_STR_CONTAINS(fake.last_error, "page 3");
    CHECK_STR_CONTAINS(fake.last_error, "before the engine is ready");
    qrdma_core_pe_ready(&core);
    qrdma_core_db_write(&core, QRDMA_DB_PAGE_SIZE * 3, 4, 7);
    CHECK_EQ(fake.guest_errors, 2);
    CHECK_STR_CONTAINS(fake.last_error, "page 3");
    CHECK_STR_CONTAINS(fake.last_error, "no QP of this page has that ID");
    qrdma_core_db_write(&core, 2, 4, 7);
    CHECK_STR_CONTAINS(fake.last_error, "aligned 32-bit");
    qrdma_core_db_write(&core, 0, 8, 7);
    CHECK_STR_CONTAINS(fake.last_error, "aligned 32-bit");
    qrdma_core_db_write(&core, (uint64_t)QRDMA_DEFAULT_DB_PAGES * QRDMA_DB_PAGE_SIZE, 4, 7);
    CHECK_STR_CONTAINS(fake.last_error, "beyond the doorbell BAR");
    CHECK_EQ(qrdma_core_db_read(&core, 0, 4), 0);
    CHECK_STR_CONTAINS(fake.last_error, "write-only");
    CHECK_EQ(fake.guest_errors, 6);
    CHECK_EQ(core.stats.doorbells, 5);
}

/* Every offset and size in and past the BAR: no crash, only logged refusals. */
static void test_sweep_all_offsets(void)
{
    uint64_t off;
    unsigned size;

    setup();
    for (off = 0; off < QRDMA_BAR_REGS_SIZE + 16; off++) {
        for (size = 1; size <= 8; size *= 2) {
            qrdma_core_reg_read(&core, off, size);
            if (off != QRDMA_REG_DEV_CTRL) {
                qrdma_core_reg_write(&core, off, size, 0xffffffffffffffffull);
            }
        }
    }
    CHECK_EQ(rd(QRDMA_REG_SIGNATURE), QRDMA_SIGNATURE);
    CHECK_EQ(rd(QRDMA_REG_SCRATCH), 0xffffffff);
    CHECK(fake.guest_errors > 0);
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_reset_values),
    UNIT_TEST(test_properties_reach_registers),
    UNIT_TEST(test_bad_config_refused),
    UNIT_TEST(test_pe_ready_after_delay),
    UNIT_TEST(test_pe_never_ready),
    UNIT_TEST(test_read_only_registers),
    UNIT_TEST(test_scratch_and_guest_error_count),
    UNIT_TEST(test_bad_sizes_ignored),
    UNIT_TEST(test_bad_offsets_ignored),
    UNIT_TEST(test_reserved_bits_ignored),
    UNIT_TEST(test_dev_ctrl_reset),
    UNIT_TEST(test_port_status_follows_link),
    UNIT_TEST(test_doorbells_without_queues),
    UNIT_TEST(test_sweep_all_offsets),
};

int main(void)
{
    return unit_run("core-regs", tests, sizeof(tests) / sizeof(tests[0]));
}
