/*
 * qtests of the qrdma device's QEMU glue (qemu-hw/qrdma.c), on the libqos
 * "qrdma" node: what only the glue does and the device-core unit tests
 * cannot see. BAR layout and identity, MSI-X delivery, a function-level
 * reset written into the PCIe Device Control register (with objects open
 * and traffic running), a reset while the data-path timer is armed, and an
 * interrupt aimed at the device's own DEV_CTRL from the timer's context.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/module.h"
#include "hw/pci/pci_regs.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "libqos/qrdma.h"

/* CQE STATUS is the ibv_wc_status value: IBV_WC_SUCCESS. */
#define QRDMA_CQE_STATUS_SUCCESS_T  0
/* The doorbell-pages property's default (qemu-hw/core/qrdma_core.h). */
#define QRDMA_DEFAULT_DB_PAGES_T    256
/* Two RC QPs of the device talking to each other (QP 1 is the GSI QP's). */
#define LB_QP_A     2
#define LB_QP_B     3

static QTestState *qts_of(QRdma *d)
{
    return d->dev.bus->qts;
}

static void test_bar_layout(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdma *d = obj;
    uint64_t size;
    QPCIBar bar;
    uint32_t errors;
    uint8_t exp;

    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_VENDOR_ID), ==, QRDMA_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_DEVICE_ID), ==, QRDMA_PCI_DEVICE_ID);
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_CLASS_DEVICE), ==, QRDMA_PCI_CLASS);
    g_assert_cmphex(qpci_config_readb(&d->dev, PCI_REVISION_ID), ==, QRDMA_PCI_REVISION);

    bar = qpci_iomap(&d->dev, QRDMA_BAR_REGS, &size);
    g_assert_cmphex(size, ==, QRDMA_BAR_REGS_SIZE);
    qpci_iounmap(&d->dev, bar);
    bar = qpci_iomap(&d->dev, QRDMA_BAR_DOORBELL, &size);
    g_assert_cmphex(size, ==, (uint64_t)QRDMA_DEFAULT_DB_PAGES_T * QRDMA_DB_PAGE_SIZE);
    qpci_iounmap(&d->dev, bar);
    g_assert_cmphex(qpci_config_readl(&d->dev, PCI_BASE_ADDRESS_0 + 4 * QRDMA_BAR_DOORBELL) &
                    PCI_BASE_ADDRESS_MEM_TYPE_MASK, ==, PCI_BASE_ADDRESS_MEM_TYPE_64);
    g_assert_cmphex(qpci_find_capability(&d->dev, PCI_CAP_ID_MSIX, 0), !=, 0);
    exp = qpci_find_capability(&d->dev, PCI_CAP_ID_EXP, 0);
    g_assert_cmphex(exp, !=, 0);
    g_assert_cmphex(qpci_config_readl(&d->dev, exp + PCI_EXP_DEVCAP) & PCI_EXP_DEVCAP_FLR, !=, 0);

    qrdma_t_start(d, qts_of(d), alloc);
    g_assert_cmphex(qrdma_t_reg_read(d, QRDMA_REG_SIGNATURE), ==, QRDMA_SIGNATURE);
    g_assert_cmphex(qrdma_t_reg_read(d, QRDMA_REG_IF_VERSION) >> QRDMA_IF_VERSION_MAJOR_SHIFT,
                    ==, QRDMA_IF_VERSION_MAJOR);
    /* A bad access is refused and counted, never fatal. */
    errors = qrdma_t_reg_read(d, QRDMA_REG_GUEST_ERRORS);
    qpci_io_writew(&d->dev, d->regs, QRDMA_REG_SCRATCH, 1);
    g_assert_cmphex(qrdma_t_reg_read(d, QRDMA_REG_GUEST_ERRORS), ==, errors + 1);
    g_assert_cmphex(qrdma_t_reg_read(d, QRDMA_REG_SCRATCH), ==, 0);
    qrdma_t_reg_write(d, QRDMA_REG_SCRATCH, 0x5a5a);
    g_assert_cmphex(qrdma_t_reg_read(d, QRDMA_REG_SCRATCH), ==, 0x5a5a);
}

/* A loopback RDMA WRITE between QP 1 and QP 2 of the device: every byte arrives. */
static void loopback_write(QRdma *d, uint32_t len, unsigned seed)
{
    g_autofree uint8_t *src = g_malloc(len);
    g_autofree uint8_t *dst = g_malloc(len);
    QRdmaCqe e;
    uint32_t i;

    for (i = 0; i < len; i++) {
        src[i] = (uint8_t)(i * 7 + seed);
    }
    qtest_memwrite(qts_of(d), d->mem + QRDMA_T_DATA, src, len);
    qtest_memset(qts_of(d), d->mem + QRDMA_T_DATA + 0x80000, 0, len);
    qrdma_t_post_write(d, LB_QP_A, 0, 0x80000, len);
    g_assert(qrdma_t_wait_cq(d, 1, &e, 2000));
    g_assert_cmpuint(e.status, ==, QRDMA_CQE_STATUS_SUCCESS_T);
    g_assert_cmpuint(e.qp, ==, LB_QP_A);
    qtest_memread(qts_of(d), d->mem + QRDMA_T_DATA + 0x80000, dst, len);
    g_assert(!memcmp(src, dst, len));
}

static void loopback_pair(QRdma *d, bool ceq)
{
    qrdma_t_loopback_pair(d, LB_QP_A, LB_QP_B, ceq);
}

static void test_loopback(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdma *d = obj;
    uint32_t errors;

    qrdma_t_start(d, qts_of(d), alloc);
    /* GUEST_ERRORS counts for the life of the device (QEMU runs on between tests). */
    errors = qrdma_t_reg_read(d, QRDMA_REG_GUEST_ERRORS);
    qrdma_t_bringup(d, false);
    loopback_pair(d, false);
    loopback_write(d, 3000, 1);
    loopback_write(d, 65536, 2);
    g_assert_cmphex(qrdma_t_reg_read(d, QRDMA_REG_GUEST_ERRORS), ==, errors);
}

/* CQP completions raise CEQEs on CEQ 0, routed to a masked vector: it goes pending. */
static void test_msix(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdma *d = obj;

    qrdma_t_start(d, qts_of(d), alloc);
    qpci_msix_enable(&d->dev);
    qpci_msix_masked(&d->dev, 3);
    qrdma_t_bringup(d, true);
    g_assert(!qpci_msix_pending(&d->dev, 3));
    qrdma_t_reg_write(d, QRDMA_REG_CEQCTL(0), QRDMA_EQCTL_CAUSE_ENA | 3);
    qrdma_t_reg_write(d, QRDMA_REG_DYN_CTL(3), QRDMA_DYN_CTL_INTENA);
    qrdma_t_create_cq(d, 1, false);
    g_assert(qpci_msix_pending(&d->dev, 3));
    /* One interrupt per enable: INTENA is clear now. */
    g_assert_cmphex(qrdma_t_reg_read(d, QRDMA_REG_DYN_CTL(3)) & QRDMA_DYN_CTL_INTENA, ==, 0);
}

static uint8_t exp_cap(QRdma *d)
{
    uint8_t exp = qpci_find_capability(&d->dev, PCI_CAP_ID_EXP, 0);

    g_assert_cmphex(exp, !=, 0);
    return exp;
}

/* FLR through config space, as setpci or the kernel's pcie_flr() write it. */
static void flr(QRdma *d)
{
    uint8_t exp = exp_cap(d);

    qpci_config_writew(&d->dev, exp + PCI_EXP_DEVCTL,
                       qpci_config_readw(&d->dev, exp + PCI_EXP_DEVCTL) | PCI_EXP_DEVCTL_BCR_FLR);
}

static void expect_reset_state(QRdma *d)
{
    unsigned t;

    /* A reset clears the command register and the BARs: map them again. */
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_COMMAND) &
                    (PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER), ==, 0);
    qrdma_t_stop(d);
    qrdma_t_start(d, qts_of(d), d->alloc);
    g_assert_cmphex(qrdma_t_reg_read(d, QRDMA_REG_SCRATCH), ==, 0);
    g_assert_cmphex(qrdma_t_reg_read(d, QRDMA_REG_CCQP_STATUS), ==, 0);
    for (t = 0; t < QRDMA_HMC_PBLE; t++) {
        g_assert_cmpuint(qrdma_t_reg_read(d, QRDMA_REG_OBJ_COUNT(t)), ==, 0);
    }
}

static void test_flr(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdma *d = obj;

    qrdma_t_start(d, qts_of(d), alloc);
    qrdma_t_bringup(d, false);
    loopback_pair(d, false);
    qrdma_t_reg_write(d, QRDMA_REG_SCRATCH, 0x1234);
    g_assert_cmpuint(qrdma_t_reg_read(d, QRDMA_REG_OBJ_COUNT(QRDMA_HMC_QP)), ==, 2);
    g_assert_cmpuint(qrdma_t_reg_read(d, QRDMA_REG_OBJ_COUNT(QRDMA_HMC_CQ)), ==, 2);
    g_assert_cmpuint(qrdma_t_reg_read(d, QRDMA_REG_OBJ_COUNT(QRDMA_HMC_MR)), ==, 1);
    /* With a WRITE posted and not yet run. */
    qrdma_t_post_write(d, LB_QP_A, 0, 0x80000, 65536);
    flr(d);
    expect_reset_state(d);
    /* The device works again after a new bring-up. */
    qrdma_t_bringup(d, false);
    loopback_pair(d, false);
    loopback_write(d, 8192, 3);
}

/*
 * The data-path timer armed (a WRITE to a peer that never answers), then
 * an FLR: the timer is gone with the state it served, and nothing of the
 * old QP reaches guest memory afterwards.
 */
static void test_reset_timer_armed(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint8_t nobody_gid[16] = { [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 0x99 };
    static const uint8_t nobody_mac[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x99 };
    QRdma *d = obj;
    g_autofree uint8_t *before = g_malloc(QRDMA_T_DATA);
    g_autofree uint8_t *after = g_malloc(QRDMA_T_DATA);
    QRdmaCqe e;

    qrdma_t_start(d, qts_of(d), alloc);
    qrdma_t_bringup(d, false);
    qrdma_t_create_cq(d, 1, false);
    qrdma_t_create_cq(d, 2, false);
    qrdma_t_create_rc_qp(d, LB_QP_A, 1, 2);
    qrdma_t_rc_to_rts(d, LB_QP_A, nobody_gid, nobody_mac, 5, 7);
    qrdma_t_post_write(d, LB_QP_A, 0, 0, 4096);
    qtest_clock_step(qts_of(d), 10 * 1000000);
    g_assert(!qrdma_t_poll_cq(d, 1, &e));
    flr(d);
    qtest_memread(qts_of(d), d->mem, before, QRDMA_T_DATA);
    /* Far past the QP's retry budget (7 x 67 ms) and the stall floor. */
    qtest_clock_step(qts_of(d), 5000ll * 1000000);
    qtest_memread(qts_of(d), d->mem, after, QRDMA_T_DATA);
    g_assert(!memcmp(before, after, QRDMA_T_DATA));
    expect_reset_state(d);
}

/*
 * An MSI-X vector aimed at BAR0 DEV_CTRL with RESET as its data, raised
 * from the data-path timer (retry exceeded on a WRITE nobody answers, the
 * error CQE on an armed CQ): the reset must wait until the device's own
 * work has returned. Before the core's re-entrancy guard this freed the
 * transport under the timer's call.
 */
static void test_irq_resets_from_timer(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint8_t nobody_gid[16] = { [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 0x98 };
    static const uint8_t nobody_mac[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x98 };
    QRdma *d = obj;
    QRdmaCqe e;

    qrdma_t_start(d, qts_of(d), alloc);
    qpci_msix_enable(&d->dev);
    qrdma_t_bringup(d, false);
    qrdma_t_create_cq(d, 1, true);
    qrdma_t_create_cq(d, 2, false);
    qrdma_t_create_rc_qp(d, LB_QP_A, 1, 2);
    qrdma_t_rc_to_rts(d, LB_QP_A, nobody_gid, nobody_mac, 5, 1);
    qrdma_t_msix_entry(d, 2, d->regs.addr + QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    qrdma_t_reg_write(d, QRDMA_REG_CEQCTL(0), QRDMA_EQCTL_CAUSE_ENA | 2);
    qrdma_t_reg_write(d, QRDMA_REG_DYN_CTL(2), QRDMA_DYN_CTL_INTENA);
    qtest_writeq(qts_of(d), d->mem + QRDMA_T_CQ_SHADOW(1) + 8, 1 | QRDMA_CQ_ARM_NEXT);
    qrdma_t_doorbell(d, 0, QRDMA_DB_CQ_ARM, 1);
    qrdma_t_post_write(d, LB_QP_A, 0, 0, 4096);
    /* retry_cnt 1: the WRITE fails from the timer within a second. */
    qtest_clock_step(qts_of(d), 3000ll * 1000000);
    g_assert(qrdma_t_poll_cq(d, 1, &e));
    g_assert_cmpuint(e.status, !=, QRDMA_CQE_STATUS_SUCCESS_T);
    /* The interrupt's write reset the device after that work returned. */
    g_assert_cmpuint(qrdma_t_reg_read(d, QRDMA_REG_OBJ_COUNT(QRDMA_HMC_QP)), ==, 0);
    g_assert_cmphex(qrdma_t_reg_read(d, QRDMA_REG_CCQP_STATUS), ==, 0);
    qrdma_t_bringup(d, false);
    loopback_pair(d, false);
    loopback_write(d, 4096, 4);
}

static void register_qrdma_test(void)
{
    qos_add_test("bar-layout", "qrdma", test_bar_layout, NULL);
    qos_add_test("loopback-write", "qrdma", test_loopback, NULL);
    qos_add_test("msix", "qrdma", test_msix, NULL);
    qos_add_test("flr", "qrdma", test_flr, NULL);
    qos_add_test("reset-timer-armed", "qrdma", test_reset_timer_armed, NULL);
    qos_add_test("irq-resets-from-timer", "qrdma", test_irq_resets_from_timer, NULL);
}

libqos_init(register_qrdma_test);
