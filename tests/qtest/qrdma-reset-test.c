/*
 * qtests of resets and unplugs that reach the qrdma device from its own
 * interrupts, on q35 with the device behind a PCIe root port. An MSI-X
 * message is a DMA write: aimed at configuration space through ECAM it can
 * set the root port's Secondary Bus Reset, power off its slot, or set FLR
 * in the device's own Device Control, all while the device is inside its
 * own work (the bottom half that completes a WRITE). QEMU must survive
 * each, the device must come back in its reset state, and the traffic must
 * stop. And a hot-unplug with QPs open and a WRITE in flight.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "hw/pci/pci_regs.h"
#include "libqos/pci-pc.h"
#include "libqos/malloc-pc.h"
#include "libqos/qrdma.h"
#include "qapi/error.h"
#include "qobject/qjson.h"
#include <sys/socket.h>
#include <sys/un.h>

#define ECAM_BASE       0xb0000000ull           /* q35's MMCONFIG default */
#define RP_DEVFN        QPCI_DEVFN(2, 0)        /* the root port: 00:02.0 */
#define DEV_BUS         1                       /* the device: 01:00.0 */
#define CQE_SUCCESS     0                       /* IBV_WC_SUCCESS */
#define QP_A            2                       /* QP 1 is the GSI QP's */
#define QP_B            3

typedef struct Bed {
    QTestState *qts;
    QGuestAllocator alloc;
    QPCIBus *pcibus;
    QPCIDevice rp;
    QRdma d;
} Bed;

static uint64_t ecam(unsigned bus, unsigned devfn, unsigned reg)
{
    return ECAM_BASE + ((uint64_t)bus << 20) + ((uint64_t)devfn << 12) + reg;
}

/* Bus numbers and a memory window on the root port; the device behind it. */
static void bed_bridge(Bed *b)
{
    b->rp.bus = b->pcibus;
    b->rp.devfn = RP_DEVFN;
    /* pcie-root-port: Red Hat, 1b36:000c. */
    g_assert_cmphex(qpci_config_readw(&b->rp, PCI_DEVICE_ID), ==, 0x000c);
    qpci_config_writeb(&b->rp, PCI_PRIMARY_BUS, 0);
    qpci_config_writeb(&b->rp, PCI_SECONDARY_BUS, DEV_BUS);
    qpci_config_writeb(&b->rp, PCI_SUBORDINATE_BUS, DEV_BUS);
    /* libqos maps BARs from 0xe0000000 up: forward 0xe0000000-0xefffffff. */
    qpci_config_writew(&b->rp, PCI_MEMORY_BASE, 0xe000);
    qpci_config_writew(&b->rp, PCI_MEMORY_LIMIT, 0xeff0);
    qpci_config_writew(&b->rp, PCI_PREF_MEMORY_BASE, 0xfff0);
    qpci_config_writew(&b->rp, PCI_PREF_MEMORY_LIMIT, 0x0000);
    qpci_config_writew(&b->rp, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
    /* The device: bus 1 in bits 15:8 of libqos's devfn, as 0xcf8 takes it. */
    b->d.dev.bus = b->pcibus;
    b->d.dev.devfn = DEV_BUS << 8;
}

/*
 * The device's options for each test's two runs: its data path in the main
 * loop, and in an IOThread (iothread=, its frames crossing to the main
 * loop's netdev in queues).
 */
static const char *const dp_modes[] = { "", ",iothread=io0" };

static void bed_init(Bed *b, const char *dp_mode)
{
    QPCIDevice mch;

    memset(b, 0, sizeof(*b));
    b->qts = qtest_initf("-machine q35 -nodefaults -m 256M -object iothread,id=io0 "
                         "-device pcie-root-port,id=rp0,bus=pcie.0,addr=2.0,chassis=1,slot=1 "
                         "-netdev hubport,id=n0,hubid=0 "
                         "-device qrdma,id=qrdma0,bus=rp0,netdev=n0,stall-floor-ms=0%s",
                         dp_mode);
    pc_alloc_init(&b->alloc, b->qts, ALLOC_NO_FLAGS);
    b->pcibus = qpci_new_pc(b->qts, &b->alloc);
    /* ECAM on, as firmware sets it: PCIEXBAR = 0xb0000000, 256 MB, enabled. */
    mch.bus = b->pcibus;
    mch.devfn = 0;
    qpci_config_writel(&mch, 0x64, 0);
    qpci_config_writel(&mch, 0x60, (uint32_t)ECAM_BASE | 1);
    bed_bridge(b);
    g_assert_cmphex(qpci_config_readw(&b->d.dev, PCI_VENDOR_ID), ==, QRDMA_PCI_VENDOR_ID);
    g_assert_cmphex(qtest_readw(b->qts, ecam(DEV_BUS, 0, PCI_DEVICE_ID)), ==,
                    QRDMA_PCI_DEVICE_ID);
    qrdma_t_start(&b->d, b->qts, &b->alloc);
    qpci_msix_enable(&b->d.dev);
}

static void bed_fini(Bed *b)
{
    qpci_free_pc(b->pcibus);
    alloc_destroy(&b->alloc);
    qtest_quit(b->qts);
}

/*
 * QP 1 -> QP 2 in loopback; CQ 1 armed with its events on CEQ 0, routed to
 * vector 0, whose MSI-X entry writes data at addr. Then a WRITE whose
 * completion raises that interrupt from the device's bottom half, and a
 * wait (5 s at most) until fired says it did: with iothread= the data
 * path's thread completes the WRITE in its own time and the main loop
 * sends the interrupt after it.
 */
static void write_with_irq_to(Bed *b, uint64_t addr, uint32_t data,
                              bool (*fired)(Bed *b))
{
    QRdma *d = &b->d;

    qrdma_t_bringup(d, false);
    qrdma_t_loopback_pair(d, QP_A, QP_B, true);
    qrdma_t_msix_entry(d, 0, addr, data);
    qrdma_t_reg_write(d, QRDMA_REG_CEQCTL(0), QRDMA_EQCTL_CAUSE_ENA | 0);
    qrdma_t_reg_write(d, QRDMA_REG_DYN_CTL(0), QRDMA_DYN_CTL_INTENA);
    qtest_writeq(b->qts, d->mem + QRDMA_T_CQ_SHADOW(1) + 8, 1 | QRDMA_CQ_ARM_NEXT);
    qrdma_t_doorbell(d, 0, QRDMA_DB_CQ_ARM, 1);
    qtest_memset(b->qts, d->mem + QRDMA_T_DATA, 0xa5, 0x10000);
    /* Two WRITEs: the first's completion fires; the second is in flight then. */
    qrdma_t_post_write(d, QP_A, 0, 0x80000, 0x10000);
    qrdma_t_post_write(d, QP_A, 0, 0x90000, 0x10000);
    qtest_clock_step(b->qts, 100 * 1000000);
    for (unsigned i = 0; i < 5000 && !fired(b); i++) {
        g_usleep(1000);
        qtest_clock_step(b->qts, 1000000);
    }
    g_assert(fired(b));
}

/* After a reset: nothing open, nothing moving; then the device works again. */
static void expect_reset_then_usable(Bed *b)
{
    QRdma *d = &b->d;
    g_autofree uint8_t *before = g_malloc(QRDMA_T_MEM_LEN);
    g_autofree uint8_t *after = g_malloc(QRDMA_T_MEM_LEN);
    QRdmaCqe e;
    unsigned t;

    qtest_memread(b->qts, d->mem, before, QRDMA_T_MEM_LEN);
    qtest_clock_step(b->qts, 3000ll * 1000000);
    qtest_memread(b->qts, d->mem, after, QRDMA_T_MEM_LEN);
    g_assert(!memcmp(before, after, QRDMA_T_MEM_LEN));

    qrdma_t_stop(d);
    qrdma_t_start(d, b->qts, &b->alloc);
    g_assert_cmphex(qrdma_t_reg_read(d, QRDMA_REG_CCQP_STATUS), ==, 0);
    for (t = 0; t < QRDMA_HMC_PBLE; t++) {
        g_assert_cmpuint(qrdma_t_reg_read(d, QRDMA_REG_OBJ_COUNT(t)), ==, 0);
    }
    qrdma_t_bringup(d, false);
    qrdma_t_loopback_pair(d, QP_A, QP_B, false);
    qtest_memset(b->qts, d->mem + QRDMA_T_DATA, 0x3c, 4096);
    qrdma_t_post_write(d, QP_A, 0, 0x80000, 4096);
    g_assert(qrdma_t_wait_cq(d, 1, &e, 2000));
    g_assert_cmpuint(e.status, ==, CQE_SUCCESS);
    g_assert_cmphex(qtest_readb(b->qts, d->mem + QRDMA_T_DATA + 0x80000 + 4095), ==, 0x3c);
}

static bool bus_reset_set(Bed *b)
{
    return qpci_config_readw(&b->rp, PCI_BRIDGE_CONTROL) & PCI_BRIDGE_CTL_BUS_RESET;
}

/* The interrupt sets Secondary Bus Reset in the root port's Bridge Control. */
static void test_irq_bus_reset(const void *dp_mode)
{
    Bed b;

    bed_init(&b, dp_mode);
    /* A dword at 0x3c: Interrupt Line, Pin (read-only), Bridge Control. */
    write_with_irq_to(&b, ecam(0, RP_DEVFN, PCI_INTERRUPT_LINE),
                      (uint32_t)PCI_BRIDGE_CTL_BUS_RESET << 16, bus_reset_set);
    qpci_config_writew(&b.rp, PCI_BRIDGE_CONTROL, 0);
    expect_reset_then_usable(&b);
    bed_fini(&b);
}

/* An FLR clears the Command register bus mastering was on in. */
static bool flr_done(Bed *b)
{
    return !(qpci_config_readw(&b->d.dev, PCI_COMMAND) & PCI_COMMAND_MASTER);
}

/* The interrupt sets Initiate FLR in the device's own Device Control. */
static void test_irq_flr(const void *dp_mode)
{
    Bed b;
    uint8_t exp;

    bed_init(&b, dp_mode);
    exp = qpci_find_capability(&b.d.dev, PCI_CAP_ID_EXP, 0);
    g_assert_cmphex(exp & 3, ==, 0);
    write_with_irq_to(&b, ecam(DEV_BUS, 0, exp + PCI_EXP_DEVCTL),
                      PCI_EXP_DEVCTL_BCR_FLR, flr_done);
    expect_reset_then_usable(&b);
    bed_fini(&b);
}

/* Unpowered, the device's config space reads as nothing. */
static bool unpowered(Bed *b)
{
    return qpci_config_readw(&b->d.dev, PCI_VENDOR_ID) == 0xffff;
}

/*
 * The interrupt powers off the root port's slot: the device loses power
 * (QEMU resets it) from inside its own bottom half, with QPs open and a
 * WRITE in flight. Powered on again it is in its reset state and works.
 */
static void test_irq_slot_power_off(const void *dp_mode)
{
    Bed b;
    uint8_t exp;
    uint16_t sltctl;

    bed_init(&b, dp_mode);
    exp = qpci_find_capability(&b.rp, PCI_CAP_ID_EXP, 0);
    g_assert_cmphex((exp + PCI_EXP_SLTCTL) & 3, ==, 0);
    sltctl = qpci_config_readw(&b.rp, exp + PCI_EXP_SLTCTL);
    sltctl &= ~(PCI_EXP_SLTCTL_PCC | PCI_EXP_SLTCTL_PIC);
    write_with_irq_to(&b, ecam(0, RP_DEVFN, exp + PCI_EXP_SLTCTL),
                      sltctl | PCI_EXP_SLTCTL_PWR_OFF | PCI_EXP_SLTCTL_PWR_IND_OFF,
                      unpowered);
    /* QEMU runs on. */
    qtest_clock_step(b.qts, 1000ll * 1000000);
    qtest_qmp_assert_success(b.qts, "{ 'execute': 'query-status' }");
    qpci_config_writew(&b.rp, exp + PCI_EXP_SLTCTL, sltctl | PCI_EXP_SLTCTL_PWR_IND_ON);
    g_assert_cmphex(qpci_config_readw(&b.d.dev, PCI_VENDOR_ID), ==, QRDMA_PCI_VENDOR_ID);
    expect_reset_then_usable(&b);
    bed_fini(&b);
}

/*
 * Hot-unplug (ACPI, pc machine) with QPs open and a WRITE in flight:
 * DEVICE_DELETED comes once the device is finalized, so no reference the
 * device's glue takes outlives it.
 */
static void test_unplug_with_qps(const void *dp_mode)
{
    QTestState *qts;
    QGuestAllocator alloc;
    QPCIBus *pcibus;
    QRdma d = { 0 };
    QRdmaCqe e;

    qts = qtest_initf("-machine pc -nodefaults -m 256M -netdev hubport,id=n0,hubid=0 "
                      "-object iothread,id=io0 "
                      "-device qrdma,id=qrdma0,addr=4.0,netdev=n0%s", (const char *)dp_mode);
    pc_alloc_init(&alloc, qts, ALLOC_NO_FLAGS);
    pcibus = qpci_new_pc(qts, &alloc);
    d.dev.bus = pcibus;
    d.dev.devfn = QPCI_DEVFN(4, 0);
    g_assert_cmphex(qpci_config_readw(&d.dev, PCI_VENDOR_ID), ==, QRDMA_PCI_VENDOR_ID);
    qrdma_t_start(&d, qts, &alloc);
    qrdma_t_bringup(&d, false);
    qrdma_t_loopback_pair(&d, QP_A, QP_B, false);
    qrdma_t_post_write(&d, QP_A, 0, 0x80000, 0x10000);
    g_assert(qrdma_t_wait_cq(&d, 1, &e, 2000));
    qrdma_t_post_write(&d, QP_A, 0, 0x90000, 0x10000);
    qpci_unplug_acpi_device_test(qts, "qrdma0", 4);
    g_assert_cmphex(qpci_config_readw(&d.dev, PCI_VENDOR_ID), ==, 0xffff);
    qtest_clock_step(qts, 3000ll * 1000000);
    qtest_qmp_assert_success(qts, "{ 'execute': 'query-status' }");
    qpci_free_pc(pcibus);
    alloc_destroy(&alloc);
    qtest_quit(qts);
}

/*
 * Two devices on one hub, each QP's peer on the other device: unlike the
 * loopback pair, every frame crosses the netdev, so with iothread= each
 * goes through both queues between the data path's thread and the main
 * loop, many more than either holds (256 frames of 1 KB a pass). 256 KB
 * written from A into B, compared byte for byte; then an FLR of A with
 * WRITEs in flight drops what A had queued. A, brought up again, writes
 * into B again through a new pair of QPs: a reset that left the core
 * waiting for frames it was told were queued would leave A unable to
 * send, and the second compare would fail.
 */
#define XFER_CHUNK      0x10000
#define XFER_CHUNKS     4
#define XFER_LEN        (XFER_CHUNK * XFER_CHUNKS)
#define XFER_DST        0x80000

/* d started (again: its memory freed first) and brought up, with CQs 1 and 2. */
static void up_with_cqs(QRdma *d, QTestState *qts, QGuestAllocator *alloc)
{
    qrdma_t_stop(d);
    qrdma_t_start(d, qts, alloc);
    qrdma_t_bringup(d, false);
    qrdma_t_create_cq(d, 1, false);
    qrdma_t_create_cq(d, 2, false);
}

/* An FLR written into d's Device Control, as setpci would. */
static void flr(QRdma *d)
{
    uint8_t exp = qpci_find_capability(&d->dev, PCI_CAP_ID_EXP, 0);

    qpci_config_writew(&d->dev, exp + PCI_EXP_DEVCTL, PCI_EXP_DEVCTL_BCR_FLR);
}

static void two_devices_post(QRdma *a, uint32_t qp)
{
    for (unsigned i = 0; i < XFER_CHUNKS; i++) {
        qrdma_t_post_write(a, qp, i * XFER_CHUNK, XFER_DST + i * XFER_CHUNK, XFER_CHUNK);
    }
}

static void two_devices_write(QRdma *a, uint32_t qp, QRdma *b, uint8_t seed)
{
    g_autofree uint8_t *pat = g_malloc(XFER_LEN);
    g_autofree uint8_t *got = g_malloc(XFER_LEN);
    QRdmaCqe e;

    for (unsigned i = 0; i < XFER_LEN; i++) {
        pat[i] = seed + i * 7 + (i >> 10);  /* differs in every 1 KB frame */
    }
    qtest_memwrite(a->qts, a->mem + QRDMA_T_DATA, pat, XFER_LEN);
    qtest_memset(b->qts, b->mem + QRDMA_T_DATA + XFER_DST, 0, XFER_LEN);
    two_devices_post(a, qp);
    for (unsigned i = 0; i < XFER_CHUNKS; i++) {
        g_assert(qrdma_t_wait_cq(a, 1, &e, 5000));
        g_assert_cmpuint(e.status, ==, CQE_SUCCESS);
        g_assert_cmpuint(e.qp, ==, qp);
    }
    qtest_memread(b->qts, b->mem + QRDMA_T_DATA + XFER_DST, got, XFER_LEN);
    g_assert(!memcmp(pat, got, XFER_LEN));
}

/* A uint64 QOM property of device id. */
static uint64_t qom_u64(QTestState *qts, const char *id, const char *prop)
{
    QDict *resp = qtest_qmp(qts, "{ 'execute': 'qom-get', 'arguments': "
                            "{ 'path': %s, 'property': %s } }", id, prop);
    uint64_t v;

    g_assert(qdict_haskey(resp, "return"));
    v = qdict_get_int(resp, "return");
    qobject_unref(resp);
    return v;
}

/*
 * How device id's SQ doorbells reached it: with iothread= (and ioeventfd=
 * not off) every one as an eventfd notification handled in the IOThread,
 * none as an MMIO write dispatched under the BQL; otherwise all as MMIO
 * writes. posted: how many were rung (notifications may coalesce).
 */
static void expect_sq_doorbells(QTestState *qts, const char *id, const char *dp_mode,
                                uint64_t posted)
{
    uint64_t mmio = qom_u64(qts, id, "x-sq-doorbells");
    uint64_t notified = qom_u64(qts, id, "x-sq-notifications");

    g_test_message("%s: %" PRIu64 " SQ doorbells rung: %" PRIu64 " by MMIO, %" PRIu64
                   " notified", id, posted, mmio, notified);
    if (strstr(dp_mode, "iothread=") && !strstr(dp_mode, "ioeventfd=off")) {
        g_assert_cmpuint(mmio, ==, 0);
        g_assert_cmpuint(notified, >=, 1);
        g_assert_cmpuint(notified, <=, posted);
    } else {
        g_assert_cmpuint(mmio, ==, posted);
        g_assert_cmpuint(notified, ==, 0);
    }
}

static void test_two_devices(const void *dp_mode)
{
    QTestState *qts;
    QGuestAllocator alloc;
    QPCIBus *pcibus;
    QRdma a = { 0 }, b = { 0 };
    unsigned t;

    qts = qtest_initf("-machine pc -nodefaults -m 256M -object iothread,id=io0 "
                      "-netdev hubport,id=n0,hubid=0 -netdev hubport,id=n1,hubid=0 "
                      "-device qrdma,id=a,addr=4.0,netdev=n0,mac=52:54:00:12:34:01%s "
                      "-device qrdma,id=b,addr=5.0,netdev=n1,mac=52:54:00:12:34:02%s",
                      (const char *)dp_mode, (const char *)dp_mode);
    pc_alloc_init(&alloc, qts, ALLOC_NO_FLAGS);
    pcibus = qpci_new_pc(qts, &alloc);
    a.dev.bus = b.dev.bus = pcibus;
    a.dev.devfn = QPCI_DEVFN(4, 0);
    b.dev.devfn = QPCI_DEVFN(5, 0);
    up_with_cqs(&a, qts, &alloc);
    up_with_cqs(&b, qts, &alloc);
    qrdma_t_create_rc_qp(&a, QP_A, 1, 2);
    qrdma_t_create_rc_qp(&b, QP_B, 2, 2);
    qrdma_t_rc_to_rts(&a, QP_A, b.gid, b.mac, QP_B, 7);
    qrdma_t_rc_to_rts(&b, QP_B, a.gid, a.mac, QP_A, 7);
    two_devices_write(&a, QP_A, &b, 0x11);
    two_devices_write(&a, QP_A, &b, 0x22);
    expect_sq_doorbells(qts, "a", dp_mode, 2 * XFER_CHUNKS);

    /* An FLR of A with its WRITEs in flight. */
    two_devices_post(&a, QP_A);
    flr(&a);
    qtest_clock_step(qts, 1000ll * 1000000);
    for (t = 0; t < QRDMA_HMC_PBLE; t++) {
        g_assert_cmpuint(qrdma_t_reg_read(&a, QRDMA_REG_OBJ_COUNT(t)), ==, 0);
    }

    /* A again, with a new QP at B (B's first saw PSNs the new one reuses). */
    up_with_cqs(&a, qts, &alloc);
    qrdma_t_create_rc_qp(&a, QP_A, 1, 2);
    qrdma_t_create_rc_qp(&b, QP_B + 1, 2, 2);
    qrdma_t_rc_to_rts(&a, QP_A, b.gid, b.mac, QP_B + 1, 7);
    qrdma_t_rc_to_rts(&b, QP_B + 1, a.gid, a.mac, QP_A, 7);
    two_devices_write(&a, QP_A, &b, 0x33);

    qpci_free_pc(pcibus);
    alloc_destroy(&alloc);
    qtest_quit(qts);
}

/*
 * A reset while the netdev cannot take the device's frames: the netdev is
 * a Unix datagram socket (QEMU's dgram netdev, as vm-run's segment) whose
 * reader, this test, reads nothing, so it fills and the device's frames
 * wait: in QEMU's queue, and with iothread= in the device's own queue too,
 * until the core is told to stop sending. An FLR drops them all. Then the
 * reader drains the socket, the device is brought up again and a WRITE of
 * four frames must go out on the wire: a reset that left the core waiting
 * for frames it had been told were queued would stop it after one.
 */
/* The largest frame the tests read from a netdev's socket (a jumbo frame). */
#define FRAME_MAX       9216

/* The address of the Unix socket DIR/NAME. */
static struct sockaddr_un dgram_addr(const char *dir, const char *name)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };

    g_assert(snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name) <
             sizeof(sa.sun_path));
    return sa;
}

/* A datagram socket bound at DIR/NAME. */
static int dgram_socket(const char *dir, const char *name)
{
    struct sockaddr_un sa = dgram_addr(dir, name);
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

    g_assert(fd >= 0);
    g_assert(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    return fd;
}

/* Read every frame the socket holds; whether one of them has marker in it. */
static bool recv_marker(int fd, const uint8_t *marker, size_t len)
{
    uint8_t frame[FRAME_MAX];
    bool seen = false;
    ssize_t n;

    while ((n = recv(fd, frame, sizeof(frame), MSG_DONTWAIT)) >= 0) {
        seen |= marker && memmem(frame, n, marker, len);
    }
    return seen;
}

static void test_reset_under_backpressure(const void *dp_mode)
{
    g_autofree char *dir = g_dir_make_tmp("qrdma-bp-XXXXXX", NULL);
    g_autofree char *qemu_end = g_strdup_printf("%s/qemu", dir);
    g_autofree char *test_end = g_strdup_printf("%s/test", dir);
    static const uint8_t peer_gid[16] = { [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 99 };
    static const uint8_t peer_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 99 };
    uint8_t marker[64];
    QTestState *qts;
    QGuestAllocator alloc;
    QPCIBus *pcibus;
    QRdma a = { 0 };
    bool seen = false;
    int fd;

    fd = dgram_socket(dir, "test");
    qts = qtest_initf("-machine pc -nodefaults -m 256M -object iothread,id=io0 "
                      "-netdev dgram,id=n0,local.type=unix,local.path=%s,"
                      "remote.type=unix,remote.path=%s "
                      "-device qrdma,id=a,addr=4.0,netdev=n0%s",
                      qemu_end, test_end, (const char *)dp_mode);
    pc_alloc_init(&alloc, qts, ALLOC_NO_FLAGS);
    pcibus = qpci_new_pc(qts, &alloc);
    a.dev.bus = pcibus;
    a.dev.devfn = QPCI_DEVFN(4, 0);
    up_with_cqs(&a, qts, &alloc);
    qrdma_t_create_rc_qp(&a, QP_A, 1, 2);
    qrdma_t_rc_to_rts(&a, QP_A, peer_gid, peer_mac, QP_B, 7);
    /* 256 KB: the whole first window, far more than the socket holds. */
    two_devices_post(&a, QP_A);
    for (unsigned i = 0; i < 200; i++) {
        g_usleep(1000);
        qtest_clock_step(qts, 100000);
    }
    flr(&a);
    g_assert_cmpuint(qrdma_t_reg_read(&a, QRDMA_REG_OBJ_COUNT_QP), ==, 0);
    recv_marker(fd, NULL, 0);       /* the socket drained: room again */

    up_with_cqs(&a, qts, &alloc);
    qrdma_t_create_rc_qp(&a, QP_A, 1, 2);
    qrdma_t_rc_to_rts(&a, QP_A, peer_gid, peer_mac, QP_B, 7);
    /*
     * 4 KB, 4 frames, the marker in the last: a core that still counts a
     * queued frame stops after the first frame it sends.
     */
    for (unsigned i = 0; i < sizeof(marker); i++) {
        marker[i] = 0xc0 ^ i;
    }
    qtest_memset(qts, a.mem + QRDMA_T_DATA, 0, 4096);
    qtest_memwrite(qts, a.mem + QRDMA_T_DATA + 4096 - sizeof(marker), marker,
                   sizeof(marker));
    qrdma_t_post_write(&a, QP_A, 0, XFER_DST, 4096);
    for (unsigned i = 0; i < 5000 && !seen; i++) {
        g_usleep(1000);
        qtest_clock_step(qts, 1000000);
        seen = recv_marker(fd, marker, sizeof(marker));
    }
    g_assert(seen);

    qpci_free_pc(pcibus);
    alloc_destroy(&alloc);
    qtest_quit(qts);
    close(fd);
    unlink(test_end);
    unlink(qemu_end);
    rmdir(dir);
}

/*
 * A burst of frames into a device that cannot take them (qemu-patches/0003:
 * QEMU's dgram netdev reads up to 16 datagrams a wakeup). A's WRITE of
 * 128 KB is caught on the wire, the test's socket, and sent whole into B's
 * netdev while B's VM is stopped: the first frame of each burst waits in
 * QEMU's queue, the rest of the burst in the netdev. Once B runs again
 * every frame must reach its device, in order and once: the test relays no
 * retransmission, so a frame lost, left behind or overtaken leaves B's
 * memory short of A's.
 */
static QTestState *dgram_device(QRdma *d, QGuestAllocator *alloc, QPCIBus **bus,
                                const char *dir, char id, const char *dp_mode)
{
    QTestState *qts;

    qts = qtest_initf("-machine pc -nodefaults -m 256M -object iothread,id=io0 "
                      "-netdev dgram,id=n0,local.type=unix,local.path=%s/q%c,"
                      "remote.type=unix,remote.path=%s/t%c "
                      "-device qrdma,id=%c,addr=4.0,netdev=n0,mac=52:54:00:12:34:%02x%s",
                      dir, id, dir, id, id, id, dp_mode);
    pc_alloc_init(alloc, qts, ALLOC_NO_FLAGS);
    *bus = qpci_new_pc(qts, alloc);
    d->dev.bus = *bus;
    d->dev.devfn = QPCI_DEVFN(4, 0);
    up_with_cqs(d, qts, alloc);
    return qts;
}

#define BURST_LEN       0x20000
#define BURST_FRAMES    512

/*
 * Frames first..n-1 into the socket at to, in order, as far as it takes
 * them within 100 ms of no progress: the index of the first not sent.
 */
static unsigned burst_send(int fd, const struct sockaddr_un *to,
                           const uint8_t *frames, const size_t *len,
                           unsigned first, unsigned n)
{
    unsigned i, waited = 0;

    for (i = first; i < n && waited < 100; ) {
        ssize_t r = sendto(fd, frames + i * FRAME_MAX, len[i], MSG_DONTWAIT,
                           (const struct sockaddr *)to, sizeof(*to));

        if (r < 0 && errno == EAGAIN) {
            g_usleep(1000);
            waited++;
            continue;
        }
        g_assert_cmpint(r, ==, len[i]);
        i++;
        waited = 0;
    }
    return i;
}

static void test_dgram_burst(const void *dp_mode)
{
    static const char *const socket_names[] = { "ta", "tb", "qa", "qb" };
    g_autofree char *dir = g_dir_make_tmp("qrdma-burst-XXXXXX", NULL);
    g_autofree uint8_t *pat = g_malloc(BURST_LEN);
    g_autofree uint8_t *got = g_malloc(BURST_LEN);
    g_autofree uint8_t *frames = g_malloc(BURST_FRAMES * FRAME_MAX);
    size_t len[BURST_FRAMES];
    struct sockaddr_un to = dgram_addr(dir, "qb");
    QGuestAllocator alloc_a, alloc_b;
    QPCIBus *bus_a, *bus_b;
    QTestState *qa, *qb;
    QRdma a = { 0 }, b = { 0 };
    unsigned n = 0, quiet, i;
    int ta, tb;

    ta = dgram_socket(dir, "ta");
    tb = dgram_socket(dir, "tb");
    qa = dgram_device(&a, &alloc_a, &bus_a, dir, 'a', dp_mode);
    qb = dgram_device(&b, &alloc_b, &bus_b, dir, 'b', dp_mode);
    qrdma_t_create_rc_qp(&a, QP_A, 1, 2);
    qrdma_t_create_rc_qp(&b, QP_B, 2, 2);
    qrdma_t_rc_to_rts(&a, QP_A, b.gid, b.mac, QP_B, 7);
    qrdma_t_rc_to_rts(&b, QP_B, a.gid, a.mac, QP_A, 7);
    for (i = 0; i < BURST_LEN; i++) {
        pat[i] = 0x5a + i * 13 + (i >> 10);
    }
    qtest_memwrite(qa, a.mem + QRDMA_T_DATA, pat, BURST_LEN);
    qtest_memset(qb, b.mem + QRDMA_T_DATA + XFER_DST, 0, BURST_LEN);

    /* A's frames, caught: its clock stands still, so nothing is sent twice. */
    for (i = 0; i < 2; i++) {
        qrdma_t_post_write(&a, QP_A, i * BURST_LEN / 2,
                           XFER_DST + i * BURST_LEN / 2, BURST_LEN / 2);
    }
    for (quiet = 0; quiet < 200 && n < BURST_FRAMES; ) {
        ssize_t r = recv(ta, frames + n * FRAME_MAX, FRAME_MAX, MSG_DONTWAIT);

        if (r < 0) {
            g_usleep(1000);
            quiet++;
            continue;
        }
        len[n++] = r;
        quiet = 0;
    }
    g_assert_cmpuint(n, >, 16);         /* more than one burst */
    g_assert_cmpuint(n, <, BURST_FRAMES);

    /*
     * As many as B's socket holds while B is stopped (net.unix.max_dgram_qlen
     * may be as low as 10: a VM test beside this one sets it so); the rest,
     * in order, once it runs.
     */
    qtest_qmp_assert_success(qb, "{ 'execute': 'stop' }");
    i = burst_send(tb, &to, frames, len, 0, n);
    g_assert_cmpuint(i, >, 16);         /* a burst met a stopped VM */
    qtest_qmp_assert_success(qb, "{ 'execute': 'cont' }");
    /* B's netdev reads again once the burst it holds has gone */
    g_assert_cmpuint(burst_send(tb, &to, frames, len, i, n), ==, n);
    for (i = 0; i < 3000; i++) {
        qtest_clock_step(qb, 1000000);
        if (i % 50 == 0) {
            qtest_memread(qb, b.mem + QRDMA_T_DATA + XFER_DST + BURST_LEN -
                          1024, got, 1024);
            if (!memcmp(pat + BURST_LEN - 1024, got, 1024)) {
                break;
            }
        }
        g_usleep(1000);
    }
    qtest_memread(qb, b.mem + QRDMA_T_DATA + XFER_DST, got, BURST_LEN);
    g_assert(!memcmp(pat, got, BURST_LEN));

    qpci_free_pc(bus_a);
    qpci_free_pc(bus_b);
    alloc_destroy(&alloc_a);
    alloc_destroy(&alloc_b);
    qtest_quit(qa);
    qtest_quit(qb);
    close(ta);
    close(tb);
    for (i = 0; i < G_N_ELEMENTS(socket_names); i++) {
        g_autofree char *path = g_strdup_printf("%s/%s", dir, socket_names[i]);

        unlink(path);
    }
    rmdir(dir);
}

/* The error description of a command that must fail. */
static char *error_of(QDict *resp)
{
    char *desc;

    g_assert(qdict_haskey(resp, "error"));
    desc = g_strdup(qdict_get_str(qdict_get_qdict(resp, "error"), "desc"));
    qobject_unref(resp);
    return desc;
}

/*
 * device_add of a qrdma with the properties props (a JSON object) must
 * fail, its error saying says (and says2 unless NULL).
 */
static void refused(QTestState *qts, const char *props, const char *says,
                    const char *says2)
{
    QDict *args = qobject_to(QDict, qobject_from_json(props, &error_abort));
    char *desc;

    qdict_put_str(args, "driver", "qrdma");
    desc = error_of(qtest_qmp(qts, "{ 'execute': 'device_add', 'arguments': %p }", args));
    g_test_message("%s: %s", props, desc);
    g_assert(strstr(desc, says));
    g_assert(!says2 || strstr(desc, says2));
    g_free(desc);
}

/*
 * backend=: device_add with backend=verbs (here without the RAM it needs)
 * or a name that is no backend fails with a message that says why;
 * backend=sw works. ioeventfd=on without iothread= is refused: the SQ
 * doorbells' eventfds are handled in the data path's IOThread.
 */
static void test_backend_property(void)
{
    QTestState *qts = qtest_init("-machine pc -nodefaults -m 256M");

    refused(qts, "{ 'id': 'v', 'backend': 'verbs' }", "verbs", NULL);
    refused(qts, "{ 'id': 'x', 'backend': 'bogus' }", "not a backend (sw or verbs)", NULL);
    refused(qts, "{ 'id': 'e', 'ioeventfd': 'on' }", "ioeventfd=on needs iothread=", NULL);
    qtest_qmp_assert_success(qts, "{ 'execute': 'device_add', 'arguments': "
                             "{ 'driver': 'qrdma', 'id': 's', 'backend': 'sw' } }");
    qtest_quit(qts);
}

/*
 * backend=verbs refusals at realize, each with a message that says what
 * to do: no ibdev=; guest RAM that is not shared memory (the default
 * RAM); a host device that is not there (this machine has no RDMA
 * device). A device refused after it blocked migration leaves no
 * blocker behind: a migration then starts (it would fail naming the
 * host NIC's QP numbers otherwise); and a sw device after it works.
 * iothread= (the data path in an IOThread): with verbs it reaches the
 * host device's check; an IOThread that does not exist is refused by
 * name. In a QEMU built without libibverbs the refusal says that instead.
 * (With sw it works: the "iothread" tests above.)
 */
static void test_verbs_refusals(void)
{
    QTestState *qts = qtest_init("-machine pc -nodefaults -m 256M");
    char *desc;

    desc = error_of(qtest_qmp(qts, "{ 'execute': 'device_add', 'arguments': "
                              "{ 'driver': 'qrdma', 'id': 'v0', 'backend': 'verbs' } }"));
    if (strstr(desc, "not built into this program")) {
        g_test_message("no libibverbs in this build: %s", desc);
        g_free(desc);
        qtest_quit(qts);
        return;
    }
    g_assert(strstr(desc, "needs ibdev="));
    g_free(desc);
    refused(qts, "{ 'id': 'v1', 'backend': 'verbs', 'ibdev': 'rxe0' }",
            "is not shared memory the host can register", "memory-backend-memfd");
    /* ibgid-indexes: a list of host GID indexes, 0..255, ':' between, at most 8 */
    refused(qts, "{ 'id': 'v3', 'backend': 'verbs', 'ibdev': 'rxe0', 'ibgid-indexes': '3:x' }",
            "not a list of host GID indexes", NULL);
    refused(qts, "{ 'id': 'v4', 'backend': 'verbs', 'ibdev': 'rxe0', "
            "'ibgid-indexes': '1:2:3:4:5:6:7:8:9' }", "more than 8 indexes", NULL);
    refused(qts, "{ 'id': 'v5', 'backend': 'verbs', 'ibdev': 'rxe0', 'ibgid-index': 2, "
            "'ibgid-indexes': '3' }", "not both", NULL);
    qtest_quit(qts);

    qts = qtest_init("-machine pc,memory-backend=m -nodefaults "
                     "-object memory-backend-memfd,id=m,size=256M,share=on "
                     "-object iothread,id=io0");
    refused(qts, "{ 'id': 'v2', 'backend': 'verbs', 'ibdev': 'qrdma-no-such-dev0' }",
            "host RDMA device 'qrdma-no-such-dev0' not found", NULL);
    refused(qts, "{ 'id': 'i1', 'backend': 'verbs', 'iothread': 'io0', "
            "'ibdev': 'qrdma-no-such-dev0' }",
            "host RDMA device 'qrdma-no-such-dev0' not found", NULL);
    refused(qts, "{ 'id': 'i2', 'backend': 'verbs', 'iothread': 'no-such-io', 'ibdev': 'rxe0' }",
            "no-such-io", NULL);
    qtest_qmp_assert_success(qts, "{ 'execute': 'migrate', 'arguments': "
                             "{ 'uri': 'exec:cat > /dev/null' } }");
    qtest_quit(qts);

    qts = qtest_init("-machine pc,memory-backend=m -nodefaults "
                     "-object memory-backend-memfd,id=m,size=256M,share=on");
    qtest_qmp_assert_success(qts, "{ 'execute': 'device_add', 'arguments': "
                             "{ 'driver': 'qrdma', 'id': 's', 'backend': 'sw' } }");
    qtest_quit(qts);
}

/* ---- live migration of the device state (docs/migration.md) ------------------ */

static char *mig_status(QTestState *qts)
{
    QDict *resp = qtest_qmp(qts, "{ 'execute': 'query-migrate' }");
    QDict *ret = qdict_get_qdict(resp, "return");
    char *st = g_strdup(ret && qdict_haskey(ret, "status") ? qdict_get_str(ret, "status")
                                                           : "none");

    qobject_unref(resp);
    return st;
}

/* Wait (30 s at most) for the migration to end; its final status. */
static char *mig_wait(QTestState *qts)
{
    for (int i = 0; i < 3000; i++) {
        char *st = mig_status(qts);

        if (!strcmp(st, "completed") || !strcmp(st, "failed")) {
            return st;
        }
        g_free(st);
        g_usleep(10000);
    }
    return g_strdup("timeout");
}

/* An incoming migration from file into a QEMU with device options opts. */
static char *mig_in(const char *file, const char *opts)
{
    QTestState *qts = qtest_initf("-machine pc -nodefaults -device qrdma,id=r%s%s "
                                  "-incoming defer", *opts ? "," : "", opts);
    g_autofree char *uri = g_strdup_printf("exec:cat %s", file);
    char *st;

    qtest_qmp_assert_success(qts, "{ 'execute': 'migrate-incoming', 'arguments': "
                             "{ 'uri': %s, 'exit-on-error': false } }", uri);
    st = mig_wait(qts);
    qtest_quit(qts);
    return st;
}

/*
 * Migration is allowed by default (tests/vm/test-migrate.sh proves it with
 * traffic): the device's stream goes out and comes back into another
 * QEMU; a corrupt stream, or a destination with another property, fails
 * the incoming migration (the device refuses it) instead of starting the
 * guest. (A backend that cannot save keeps a blocker naming it: the
 * core's refusal is unit-tested in test_core_mig; verbs' own blocker
 * needs a host RDMA device, which this test does not have.)
 */
static void test_migrate(void)
{
    QTestState *qts = qtest_init("-machine pc -nodefaults -device qrdma,id=r");
    g_autofree char *dir = g_dir_make_tmp("qrdma-mig-XXXXXX", NULL);
    g_autofree char *file = g_strdup_printf("%s/state", dir);
    g_autofree char *bad = g_strdup_printf("%s/bad", dir);
    g_autofree char *data = NULL;
    g_autofree char *uri = g_strdup_printf("exec:cat > %s", file);
    char *st, *magic;
    gsize len;

    qtest_qmp_assert_success(qts, "{ 'execute': 'migrate', 'arguments': "
                             "{ 'uri': %s } }", uri);
    st = mig_wait(qts);
    g_assert_cmpstr(st, ==, "completed");
    g_free(st);
    qtest_quit(qts);

    st = mig_in(file, "");
    g_assert_cmpstr(st, ==, "completed");
    g_free(st);
    st = mig_in(file, "max-qp=512");
    g_assert_cmpstr(st, ==, "failed");
    g_free(st);

    /* One bit flipped inside the device's stream (its config section). */
    g_assert(g_file_get_contents(file, &data, &len, NULL));
    magic = memmem(data, len, "QRDMAMIG", 8);
    g_assert(magic && magic + 40 < data + len);
    magic[40] ^= 0x10;
    g_assert(g_file_set_contents(bad, data, len, NULL));
    st = mig_in(bad, "");
    g_assert_cmpstr(st, ==, "failed");
    g_free(st);
    unlink(file);
    unlink(bad);
    rmdir(dir);
}

/* Is the CCQ entry the driver reads next written (VALID of its lap)? */
static bool ccq_ready(QRdma *d)
{
    uint64_t w = qtest_readq(d->qts, d->mem + QRDMA_T_CCQ + 32ull * d->ccq_head + 24);

    return !!(w & QRDMA_CCQ_CQE_VALID) == d->ccq_valid;
}

static void expect_nothing_done(QRdma *d, uint32_t cqp_tail, uint8_t fill, const char *where)
{
    QRdmaCqe e;

    g_test_message("nothing done: %s", where);
    qtest_clock_step(d->qts, 200 * 1000000);
    g_assert(!ccq_ready(d));
    g_assert_cmpuint(qrdma_t_reg_read(d, QRDMA_REG_CQP_TAIL), ==, cqp_tail);
    g_assert(!qrdma_t_poll_cq(d, 1, &e));
    g_assert_cmpuint(qtest_readb(d->qts, d->mem + QRDMA_T_DATA + 0x80000), ==, fill);
}

/*
 * The device works only while the VM runs (qrdma_vm_state_change). With
 * the source stopped, a CQP NOP and a loopback WRITE are posted and their
 * doorbells rung: the device takes them and does nothing. The state
 * migrates into a destination started with -S: after the load, which
 * restarts the device's work, it still does nothing while the guest has
 * not started (no CCQ entry, no CQE, no byte written, the CQP's tail
 * where it was). At 'cont' both complete, each once.
 */
static void test_migrate_held(void)
{
    g_autofree char *dir = g_dir_make_tmp("qrdma-held-XXXXXX", NULL);
    g_autofree char *file = g_strdup_printf("%s/state", dir);
    g_autofree char *out = g_strdup_printf("exec:cat > %s", file);
    g_autofree char *in = g_strdup_printf("exec:cat %s", file);
    g_autofree uint8_t *data = g_malloc(0x1000);
    g_autofree uint8_t *back = g_malloc(0x1000);
    QGuestAllocator alloc, alloc2;
    QPCIBus *pcibus, *pcibus2;
    QTestState *qts;
    QRdma d = { 0 };
    QRdmaCqe e;
    uint64_t c, status;
    uint32_t tail;
    QDict *resp;
    char *st;
    int i;

    qts = qtest_init("-machine pc -nodefaults -m 256M -device qrdma,id=r,addr=4.0");
    pc_alloc_init(&alloc, qts, ALLOC_NO_FLAGS);
    pcibus = qpci_new_pc(qts, &alloc);
    d.dev.bus = pcibus;
    d.dev.devfn = QPCI_DEVFN(4, 0);
    qrdma_t_start(&d, qts, &alloc);
    qrdma_t_bringup(&d, false);
    qrdma_t_loopback_pair(&d, QP_A, QP_B, false);
    for (i = 0; i < 0x1000; i++) {
        data[i] = (uint8_t)(i * 7 + 1);
    }
    qtest_memwrite(qts, d.mem + QRDMA_T_DATA, data, 0x1000);
    qtest_memset(qts, d.mem + QRDMA_T_DATA + 0x80000, 0xee, 0x1000);

    qtest_qmp_assert_success(qts, "{ 'execute': 'stop' }");
    tail = qrdma_t_reg_read(&d, QRDMA_REG_CQP_TAIL);
    qrdma_t_cqp_post(&d, QRDMA_CQP_OP_NOP, 0, 0, 0, 0, 0, 0);
    qrdma_t_post_write(&d, QP_A, 0, 0x80000, 0x1000);
    expect_nothing_done(&d, tail, 0xee, "the source, stopped");
    qtest_qmp_assert_success(qts, "{ 'execute': 'migrate', 'arguments': { 'uri': %s } }",
                             out);
    st = mig_wait(qts);
    g_assert_cmpstr(st, ==, "completed");
    g_free(st);
    qpci_free_pc(pcibus);
    alloc_destroy(&alloc);
    qtest_quit(qts);

    qts = qtest_init("-machine pc -nodefaults -m 256M -device qrdma,id=r,addr=4.0 "
                     "-incoming defer -S");
    qtest_qmp_assert_success(qts, "{ 'execute': 'migrate-incoming', 'arguments': "
                             "{ 'uri': %s, 'exit-on-error': false } }", in);
    st = mig_wait(qts);
    g_assert_cmpstr(st, ==, "completed");
    g_free(st);
    resp = qtest_qmp(qts, "{ 'execute': 'query-status' }");
    g_assert(!qdict_get_bool(qdict_get_qdict(resp, "return"), "running"));
    qobject_unref(resp);
    pc_alloc_init(&alloc2, qts, ALLOC_NO_FLAGS);
    pcibus2 = qpci_new_pc(qts, &alloc2);
    d.qts = qts;
    d.dev.bus = pcibus2;
    expect_nothing_done(&d, tail, 0xee, "the destination, loaded and paused");

    qtest_qmp_assert_success(qts, "{ 'execute': 'cont' }");
    for (i = 0; i < 2000 && !ccq_ready(&d); i++) {
        qtest_clock_step(qts, 1000000);
    }
    g_assert(ccq_ready(&d));
    c = d.mem + QRDMA_T_CCQ + 32ull * d.ccq_head;
    status = qtest_readq(qts, c + 16);
    g_assert_cmpuint((status & QRDMA_CCQ_CQE_OPCODE_MASK) >> QRDMA_CCQ_CQE_OPCODE_SHIFT, ==,
                     QRDMA_CQP_OP_NOP);
    g_assert_cmpuint(qrdma_t_major(status), ==, 0);
    d.ccq_head = (d.ccq_head + 1) & ((1u << QRDMA_T_LOG2) - 1);
    if (!d.ccq_head) {
        d.ccq_valid = !d.ccq_valid;
    }
    g_assert(qrdma_t_wait_cq(&d, 1, &e, 2000));
    g_assert_cmpuint(e.status, ==, CQE_SUCCESS);
    qtest_memread(qts, d.mem + QRDMA_T_DATA + 0x80000, back, 0x1000);
    g_assert(!memcmp(data, back, 0x1000));
    qtest_clock_step(qts, 500 * 1000000);
    g_assert(!ccq_ready(&d));                   /* each once */
    g_assert(!qrdma_t_poll_cq(&d, 1, &e));
    g_assert_cmpuint(qrdma_t_reg_read(&d, QRDMA_REG_CQP_TAIL), ==, d.cqp_next);
    qpci_free_pc(pcibus2);
    alloc_destroy(&alloc2);
    qtest_quit(qts);
    unlink(file);
    rmdir(dir);
}

/* Word 1 of AEQE i (code, source, ID, VALID). */
static uint64_t aeqe_info(QRdma *d, unsigned i)
{
    return qtest_readq(d->qts, d->mem + QRDMA_T_AEQ + 16ull * i + 8);
}

static bool wait_aeqe(QRdma *d, unsigned i)
{
    int n;

    for (n = 0; n < 200 && !(aeqe_info(d, i) & QRDMA_AEQE_VALID); n++) {
        qtest_clock_step(d->qts, 1000000);
    }
    return aeqe_info(d, i) & QRDMA_AEQE_VALID;
}

/*
 * QEMU's announcement (after an incoming migration; here the announce-self
 * command, one round) reaches the driver as AEQE ANNOUNCE through the NIC's
 * announce hook: nothing while the VM is stopped (the first round after a
 * migration comes before the VM runs), the event once it runs, and one
 * more for each later round.
 */
#define ANNOUNCE_ROUND "{ 'execute': 'announce-self', 'arguments': " \
                       "{ 'initial': 50, 'max': 550, 'rounds': 1, 'step': 50 } }"

static void test_announce(void)
{
    const uint64_t announce = (uint64_t)QRDMA_AE_ANNOUNCE << QRDMA_AEQE_CODE_SHIFT |
                              QRDMA_AEQE_VALID;
    QGuestAllocator alloc;
    QPCIBus *pcibus;
    QTestState *qts;
    QRdma d = { 0 };

    qts = qtest_init("-machine pc -nodefaults -m 256M -netdev hubport,id=n0,hubid=0 "
                     "-device qrdma,id=r,addr=4.0,netdev=n0");
    pc_alloc_init(&alloc, qts, ALLOC_NO_FLAGS);
    pcibus = qpci_new_pc(qts, &alloc);
    d.dev.bus = pcibus;
    d.dev.devfn = QPCI_DEVFN(4, 0);
    qrdma_t_start(&d, qts, &alloc);
    qrdma_t_bringup(&d, false);
    g_assert(qrdma_t_reg_read(&d, QRDMA_REG_CAP_FEATURES) & QRDMA_FEATURE_ANNOUNCE);
    g_assert_cmphex(aeqe_info(&d, 0), ==, 0);

    qtest_qmp_assert_success(qts, "{ 'execute': 'stop' }");
    qtest_qmp_assert_success(qts, ANNOUNCE_ROUND);
    qtest_clock_step(qts, 100 * 1000000);
    g_assert_cmphex(aeqe_info(&d, 0), ==, 0);
    qtest_qmp_assert_success(qts, "{ 'execute': 'cont' }");
    g_assert(wait_aeqe(&d, 0));
    g_assert_cmphex(aeqe_info(&d, 0), ==, announce);
    g_assert_cmphex(qtest_readq(qts, d.mem + QRDMA_T_AEQ), ==, 0);

    qtest_qmp_assert_success(qts, ANNOUNCE_ROUND);
    g_assert(wait_aeqe(&d, 1));
    g_assert_cmphex(aeqe_info(&d, 1), ==, announce);
    qtest_clock_step(qts, 100 * 1000000);
    g_assert_cmphex(aeqe_info(&d, 2), ==, 0);

    qpci_free_pc(pcibus);
    alloc_destroy(&alloc);
    qtest_quit(qts);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (unsigned m = 0; m < G_N_ELEMENTS(dp_modes); m++) {
        const char *where = m ? "/iothread" : "";
        g_autofree char *bus_reset = g_strdup_printf("/qrdma%s/irq/bus-reset", where);
        g_autofree char *flr = g_strdup_printf("/qrdma%s/irq/flr", where);
        g_autofree char *power_off = g_strdup_printf("/qrdma%s/irq/slot-power-off", where);
        g_autofree char *unplug = g_strdup_printf("/qrdma%s/unplug/with-qps", where);
        g_autofree char *two = g_strdup_printf("/qrdma%s/two-devices", where);
        g_autofree char *backpressure =
            g_strdup_printf("/qrdma%s/reset-under-backpressure", where);
        g_autofree char *burst = g_strdup_printf("/qrdma%s/dgram-burst", where);

        qtest_add_data_func(bus_reset, dp_modes[m], test_irq_bus_reset);
        qtest_add_data_func(flr, dp_modes[m], test_irq_flr);
        qtest_add_data_func(power_off, dp_modes[m], test_irq_slot_power_off);
        qtest_add_data_func(unplug, dp_modes[m], test_unplug_with_qps);
        qtest_add_data_func(two, dp_modes[m], test_two_devices);
        qtest_add_data_func(backpressure, dp_modes[m], test_reset_under_backpressure);
        qtest_add_data_func(burst, dp_modes[m], test_dgram_burst);
    }
    /* the data path in an IOThread, its SQ doorbells MMIO writes as without */
    qtest_add_data_func("/qrdma/iothread-mmio-doorbells/two-devices",
                        ",iothread=io0,ioeventfd=off", test_two_devices);
    qtest_add_func("/qrdma/backend-property", test_backend_property);
    qtest_add_func("/qrdma/verbs-refusals", test_verbs_refusals);
    qtest_add_func("/qrdma/migrate", test_migrate);
    qtest_add_func("/qrdma/migrate-held", test_migrate_held);
    qtest_add_func("/qrdma/announce", test_announce);
    return g_test_run();
}
