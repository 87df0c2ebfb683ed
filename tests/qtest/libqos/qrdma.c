/*
 * libqos driver for the qrdma device (see qrdma.h): the QOSGraph node and
 * the driver steps the qtests share. The steps follow the Linux driver's
 * bring-up (guest-kernel/qrdma_main.c) and the provider's rings, reduced to
 * what a test needs: one PD, one MR over a data area, a few CQs and RC QPs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "../libqtest.h"
#include "qemu/module.h"
#include "hw/pci/pci_regs.h"
#include "qrdma.h"

#define QRDMA_T_POLLS   2000            /* 1 ms clock steps while waiting */

uint32_t qrdma_t_reg_read(QRdma *d, uint32_t off)
{
    return qpci_io_readl(&d->dev, d->regs, off);
}

void qrdma_t_reg_write(QRdma *d, uint32_t off, uint32_t val)
{
    qpci_io_writel(&d->dev, d->regs, off, val);
}

void qrdma_t_doorbell(QRdma *d, uint32_t page, uint32_t which, uint32_t val)
{
    qpci_io_writel(&d->dev, d->doorbells, (uint64_t)page * QRDMA_DB_PAGE_SIZE + which, val);
}

static void w64(QRdma *d, uint64_t off, uint64_t v)
{
    qtest_writeq(d->qts, d->mem + off, v);
}

static uint64_t r64(QRdma *d, uint64_t off)
{
    return qtest_readq(d->qts, d->mem + off);
}

static void wbuf(QRdma *d, uint64_t off, const void *buf, size_t len)
{
    qtest_memwrite(d->qts, d->mem + off, buf, len);
}

void qrdma_t_start(QRdma *d, QTestState *qts, QGuestAllocator *alloc)
{
    uint32_t lo, hi;

    d->qts = qts;
    d->alloc = alloc;
    qpci_device_enable(&d->dev);
    d->regs = qpci_iomap(&d->dev, QRDMA_BAR_REGS, NULL);
    d->doorbells = qpci_iomap(&d->dev, QRDMA_BAR_DOORBELL, NULL);
    d->block = guest_alloc(alloc, QRDMA_T_MEM_LEN + 0x200000);
    g_assert(d->block);
    d->mem = (d->block + 0x1fffff) & ~0x1fffffull;
    qtest_memset(qts, d->mem, 0, QRDMA_T_MEM_LEN);

    lo = qrdma_t_reg_read(d, QRDMA_REG_MAC_LOW);
    hi = qrdma_t_reg_read(d, QRDMA_REG_MAC_HIGH);
    d->mac[0] = lo;
    d->mac[1] = lo >> 8;
    d->mac[2] = lo >> 16;
    d->mac[3] = lo >> 24;
    d->mac[4] = hi;
    d->mac[5] = hi >> 8;
    /* RoCE v2 over IPv4: ::ffff:10.0.0.n, n from the MAC. */
    memset(d->gid, 0, sizeof(d->gid));
    d->gid[10] = d->gid[11] = 0xff;
    d->gid[12] = 10;
    d->gid[15] = d->mac[5];
}

void qrdma_t_stop(QRdma *d)
{
    if (d->block) {
        guest_free(d->alloc, d->block);
        d->block = 0;
    }
}

unsigned qrdma_t_major(uint64_t status)
{
    return (status & QRDMA_CCQ_CQE_MAJOR_MASK) >> QRDMA_CCQ_CQE_MAJOR_SHIFT;
}

void qrdma_t_cqp_post(QRdma *d, uint8_t op, uint64_t a0, uint64_t a1, uint64_t a2,
                      uint64_t a3, uint64_t a4, uint64_t a5)
{
    const uint64_t args[6] = { a0, a1, a2, a3, a4, a5 };
    uint64_t w = QRDMA_T_CQP_SQ + 64ull * d->cqp_next;
    int i;

    for (i = 0; i < 6; i++) {
        w64(d, w + 8 * i, args[i]);
    }
    w64(d, w + 48, 0x5c00 + d->cqp_next);
    w64(d, w + 56, op | (d->cqp_valid ? QRDMA_CQP_WQE_VALID : 0));
    d->cqp_next = (d->cqp_next + 1) & ((1u << QRDMA_T_LOG2) - 1);
    if (!d->cqp_next) {
        d->cqp_valid = !d->cqp_valid;
    }
    qrdma_t_reg_write(d, QRDMA_REG_CQP_DB, d->cqp_next);
}

uint64_t qrdma_t_cqp(QRdma *d, uint8_t op, uint64_t a0, uint64_t a1, uint64_t a2,
                     uint64_t a3, uint64_t a4, uint64_t a5)
{
    uint64_t c = QRDMA_T_CCQ + 32ull * d->ccq_head, status;
    int i;

    qrdma_t_cqp_post(d, op, a0, a1, a2, a3, a4, a5);
    for (i = 0; i < QRDMA_T_POLLS; i++) {
        if (!!(r64(d, c + 24) & QRDMA_CCQ_CQE_VALID) == d->ccq_valid) {
            break;
        }
        qtest_clock_step(d->qts, 1000000);
    }
    g_assert_cmpint(i, <, QRDMA_T_POLLS);
    status = r64(d, c + 16);
    g_assert_cmpuint((status & QRDMA_CCQ_CQE_OPCODE_MASK) >> QRDMA_CCQ_CQE_OPCODE_SHIFT, ==, op);
    d->ccq_head = (d->ccq_head + 1) & ((1u << QRDMA_T_LOG2) - 1);
    if (!d->ccq_head) {
        d->ccq_valid = !d->ccq_valid;
    }
    w64(d, QRDMA_T_CQP_SHADOW, d->ccq_head);
    return status;
}

#define CQP_OK(st) g_assert_cmpuint(qrdma_t_major(st), ==, 0)

void qrdma_t_bringup(QRdma *d, bool ccq_events)
{
    static const uint64_t counts[QRDMA_HMC_NUM_TYPES] = {
        QRDMA_T_N_QP, QRDMA_T_N_CQ, 2, 8, 4, 64,
    };
    uint64_t hi = 0;
    unsigned t;
    int i;

    for (i = 0; i < QRDMA_T_POLLS && !(qrdma_t_reg_read(d, QRDMA_REG_PE_STATUS) &
                                      QRDMA_PE_STATUS_READY); i++) {
        qtest_clock_step(d->qts, 1000000);
    }
    g_assert_cmpint(i, <, QRDMA_T_POLLS);

    d->cqp_next = d->ccq_head = 0;
    d->cqp_valid = d->ccq_valid = true;
    memset(d->sq_posted, 0, sizeof(d->sq_posted));
    memset(d->cq_head, 0, sizeof(d->cq_head));
    qtest_memset(d->qts, d->mem, 0, QRDMA_T_DATA);
    w64(d, QRDMA_T_CQP_CTX, QRDMA_T_LOG2 | (uint64_t)QRDMA_T_LOG2 << QRDMA_CQP_CTX_CCQ_SIZE_SHIFT);
    w64(d, QRDMA_T_CQP_CTX + 8, d->mem + QRDMA_T_CQP_SQ);
    w64(d, QRDMA_T_CQP_CTX + 16, d->mem + QRDMA_T_CCQ);
    w64(d, QRDMA_T_CQP_CTX + 24, d->mem + QRDMA_T_CQP_SHADOW);
    w64(d, QRDMA_T_CQP_CTX + 32, ccq_events ? QRDMA_CQP_CTX_CCQ_CEQ_ENABLE : 0);
    w64(d, QRDMA_T_CQP_CTX + 40, 0xcc0);
    qrdma_t_reg_write(d, QRDMA_REG_CCQP_CTX_HIGH, (uint32_t)((d->mem + QRDMA_T_CQP_CTX) >> 32));
    qrdma_t_reg_write(d, QRDMA_REG_CCQP_CTX_LOW, (uint32_t)(d->mem + QRDMA_T_CQP_CTX));
    g_assert_cmphex(qrdma_t_reg_read(d, QRDMA_REG_CCQP_STATUS), ==, QRDMA_CCQP_STATUS_DONE);

    for (i = 15; i >= 8; i--) {
        hi = hi << 8 | d->gid[i];
    }
    CQP_OK(qrdma_t_cqp(d, QRDMA_CQP_OP_ADD_GID, 0 | QRDMA_GID_TYPE_ROCE_V2_IPV4 << 8, 0, hi,
                       0, 0, 0));
    CQP_OK(qrdma_t_cqp(d, QRDMA_CQP_OP_CREATE_CEQ, 0 | QRDMA_T_LOG2 << QRDMA_EQ_SIZE_SHIFT,
                       d->mem + QRDMA_T_CEQ, 0, 0, 0, 0));
    CQP_OK(qrdma_t_cqp(d, QRDMA_CQP_OP_CREATE_AEQ, QRDMA_T_LOG2 << QRDMA_EQ_SIZE_SHIFT,
                       d->mem + QRDMA_T_AEQ, 0, 0, 0, 0));
    for (t = 0; t < QRDMA_HMC_NUM_TYPES; t++) {
        w64(d, QRDMA_T_FPM_BUF + 8 * (1 + t), counts[t]);
    }
    CQP_OK(qrdma_t_cqp(d, QRDMA_CQP_OP_COMMIT_FPM_VAL, d->mem + QRDMA_T_FPM_BUF, 0, 0, 0, 0, 0));
    qrdma_t_reg_write(d, QRDMA_REG_HMC_SD_DATA_LOW,
                      (uint32_t)(d->mem + QRDMA_T_HMC) | QRDMA_HMC_SD_TYPE_DIRECT |
                      QRDMA_HMC_SD_VALID);
    qrdma_t_reg_write(d, QRDMA_REG_HMC_SD_DATA_HIGH, (uint32_t)((d->mem + QRDMA_T_HMC) >> 32));
    qrdma_t_reg_write(d, QRDMA_REG_HMC_SD_CMD, QRDMA_HMC_SD_CMD_WRITE | 0);
    CQP_OK(qrdma_t_cqp(d, QRDMA_CQP_OP_REG_MR, QRDMA_T_STAG,
                       QRDMA_T_PD |
                       (uint64_t)(QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE |
                                  QRDMA_ACCESS_REMOTE_READ) << QRDMA_MR_ARG1_ACCESS_SHIFT |
                       12ull << QRDMA_MR_ARG1_PAGE_SHIFT,
                       QRDMA_T_IOVA, QRDMA_T_DATA_LEN, d->mem + QRDMA_T_DATA, 0));
}

void qrdma_t_create_cq(QRdma *d, uint32_t id, bool ceq)
{
    g_assert_cmpuint(id, <, QRDMA_T_N_CQ);
    qtest_memset(d->qts, d->mem + QRDMA_T_CQ(id), 0, 32u << QRDMA_T_CQ_LOG2);
    w64(d, QRDMA_T_CQ_SHADOW(id), 0);
    w64(d, QRDMA_T_CQ_SHADOW(id) + 8, 0);
    CQP_OK(qrdma_t_cqp(d, QRDMA_CQP_OP_CREATE_CQ,
                       id | (uint64_t)QRDMA_T_CQ_LOG2 << QRDMA_CQ_ARG0_SIZE_SHIFT |
                       (ceq ? QRDMA_CQ_ARG0_CEQ_ENABLE : 0),
                       0xc0000 + id, d->mem + QRDMA_T_CQ(id), d->mem + QRDMA_T_CQ_SHADOW(id),
                       0, 0));
    d->cq_head[id] = 0;
}

#define INFO_AT(type, f) (QRDMA_T_INFO + offsetof(type, f))
#define CI(f) INFO_AT(struct qrdma_qp_create_info, f)
#define MI(f) INFO_AT(struct qrdma_qp_modify_info, f)

static void w8(QRdma *d, uint64_t off, uint8_t v)
{
    qtest_writeb(d->qts, d->mem + off, v);
}

static void w32(QRdma *d, uint64_t off, uint32_t v)
{
    qtest_writel(d->qts, d->mem + off, v);
}

void qrdma_t_create_rc_qp(QRdma *d, uint32_t id, uint32_t scq, uint32_t rcq)
{
    g_assert_cmpuint(id, <, QRDMA_T_N_QP);
    qtest_memset(d->qts, d->mem + QRDMA_T_SQ(id), 0, 0x8000);
    qtest_memset(d->qts, d->mem + QRDMA_T_INFO, 0, 64);
    w32(d, CI(pd), QRDMA_T_PD);
    w8(d, CI(type), QRDMA_QP_TYPE_RC);
    w32(d, CI(send_cq), scq);
    w32(d, CI(recv_cq), rcq);
    w8(d, CI(sq_size_log2), QRDMA_T_SQ_LOG2);
    w8(d, CI(sq_wqe_log2), QRDMA_T_SQ_WQE_LOG2);
    w8(d, CI(rq_size_log2), 3);
    w8(d, CI(rq_wqe_log2), 6);
    w64(d, CI(sq_addr), d->mem + QRDMA_T_SQ(id));
    w64(d, CI(rq_addr), d->mem + QRDMA_T_RQ(id));
    w64(d, CI(qp_ctx), 0xa0000 + id);
    CQP_OK(qrdma_t_cqp(d, QRDMA_CQP_OP_CREATE_QP, id, d->mem + QRDMA_T_INFO, 0, 0, 0, 0));
    d->sq_posted[id] = 0;
}

static void mod_begin(QRdma *d, uint32_t mask, uint8_t state)
{
    qtest_memset(d->qts, d->mem + QRDMA_T_INFO, 0, sizeof(struct qrdma_qp_modify_info));
    w32(d, MI(attr_mask), mask | QRDMA_QP_ATTR_STATE);
    w8(d, MI(state), state);
}

static void mod_run(QRdma *d, uint32_t id)
{
    CQP_OK(qrdma_t_cqp(d, QRDMA_CQP_OP_MODIFY_QP, id, d->mem + QRDMA_T_INFO, 0, 0, 0, 0));
}

void qrdma_t_rc_to_rts(QRdma *d, uint32_t id, const uint8_t *dgid, const uint8_t *dmac,
                       uint32_t dqpn, uint8_t retry_cnt)
{
    mod_begin(d, QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_PORT | QRDMA_QP_ATTR_ACCESS_FLAGS,
              QRDMA_QPS_INIT);
    w8(d, MI(port_num), 1);
    w32(d, MI(access_flags), QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE |
                             QRDMA_ACCESS_REMOTE_READ);
    mod_run(d, id);

    mod_begin(d, QRDMA_QP_ATTR_AV | QRDMA_QP_ATTR_PATH_MTU | QRDMA_QP_ATTR_DEST_QPN |
              QRDMA_QP_ATTR_RQ_PSN | QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC |
              QRDMA_QP_ATTR_MIN_RNR_TIMER, QRDMA_QPS_RTR);
    w8(d, MI(path_mtu), 3);                 /* 1024 */
    w32(d, MI(dest_qpn), dqpn);
    w32(d, MI(rq_psn), 0x100);
    w8(d, MI(max_dest_rd_atomic), 4);
    w8(d, MI(min_rnr_timer), 1);
    wbuf(d, MI(av) + offsetof(struct qrdma_av, dgid), dgid, 16);
    wbuf(d, MI(av) + offsetof(struct qrdma_av, dmac), dmac, 6);
    w8(d, MI(av) + offsetof(struct qrdma_av, hop_limit), 64);
    mod_run(d, id);

    mod_begin(d, QRDMA_QP_ATTR_SQ_PSN | QRDMA_QP_ATTR_TIMEOUT | QRDMA_QP_ATTR_RETRY_CNT |
              QRDMA_QP_ATTR_RNR_RETRY | QRDMA_QP_ATTR_MAX_QP_RD_ATOMIC, QRDMA_QPS_RTS);
    w32(d, MI(sq_psn), 0x100);
    w8(d, MI(timeout), 14);                 /* 67 ms */
    w8(d, MI(retry_cnt), retry_cnt);
    w8(d, MI(rnr_retry), 7);
    w8(d, MI(max_rd_atomic), 4);
    mod_run(d, id);
}

void qrdma_t_loopback_pair(QRdma *d, uint32_t qa, uint32_t qb, bool ceq)
{
    qrdma_t_create_cq(d, 1, ceq);
    qrdma_t_create_cq(d, 2, false);
    qrdma_t_create_rc_qp(d, qa, 1, 2);
    qrdma_t_create_rc_qp(d, qb, 2, 2);
    qrdma_t_rc_to_rts(d, qa, d->gid, d->mac, qb, 7);
    qrdma_t_rc_to_rts(d, qb, d->gid, d->mac, qa, 7);
}

void qrdma_t_post_write(QRdma *d, uint32_t qp, uint64_t src, uint64_t dst, uint32_t len)
{
    uint32_t n = d->sq_posted[qp]++;
    uint32_t index = n & ((1u << QRDMA_T_SQ_LOG2) - 1);
    bool valid = !((n >> QRDMA_T_SQ_LOG2) & 1);
    uint64_t a = QRDMA_T_SQ(qp) + ((uint64_t)index << QRDMA_T_SQ_WQE_LOG2);
    uint64_t hdr = QRDMA_SQ_OP_RDMA_WRITE | QRDMA_SQ_HDR_SIGNALED |
                   1ull << QRDMA_SQ_HDR_NUM_SGE_SHIFT;

    qtest_memset(d->qts, d->mem + a, 0, 56);
    w64(d, a + 0, QRDMA_T_IOVA + dst);
    w64(d, a + 8, QRDMA_T_STAG);
    w64(d, a + 64, QRDMA_T_IOVA + src);
    w32(d, a + 72, len);
    w32(d, a + 76, QRDMA_T_STAG);
    if (valid) {
        hdr |= QRDMA_SQ_HDR_VALID;
    }
    w64(d, a + 56, hdr);
    qrdma_t_doorbell(d, 0, QRDMA_DB_SQ, qp);
}

bool qrdma_t_poll_cq(QRdma *d, uint32_t cq, QRdmaCqe *e)
{
    uint32_t head = d->cq_head[cq];
    uint64_t a = QRDMA_T_CQ(cq) + 32ull * (head & ((1u << QRDMA_T_CQ_LOG2) - 1)), q0, q1, q2;
    bool lap_valid = !((head >> QRDMA_T_CQ_LOG2) & 1);

    if (!!(r64(d, a + 24) & QRDMA_CQE_VALID) != lap_valid) {
        return false;
    }
    q0 = r64(d, a);
    q1 = r64(d, a + 8);
    q2 = r64(d, a + 16);
    e->byte_len = q0 & QRDMA_CQE_BYTE_LEN_MASK;
    e->qp = q1 & QRDMA_CQE_QP_MASK;
    e->wqe_index = q2 & QRDMA_CQE_WQE_INDEX_MASK;
    e->opcode = (q2 & QRDMA_CQE_OPCODE_MASK) >> QRDMA_CQE_OPCODE_SHIFT;
    e->status = (q2 & QRDMA_CQE_STATUS_MASK) >> QRDMA_CQE_STATUS_SHIFT;
    d->cq_head[cq] = head + 1;
    w64(d, QRDMA_T_CQ_SHADOW(cq), d->cq_head[cq]);
    return true;
}

bool qrdma_t_wait_cq(QRdma *d, uint32_t cq, QRdmaCqe *e, unsigned ms)
{
    unsigned i;

    for (i = 0; i <= ms; i++) {
        if (qrdma_t_poll_cq(d, cq, e)) {
            return true;
        }
        /*
         * Real time too: with iothread= the device's data path runs in a
         * thread of its own, which virtual time does not wait for.
         */
        g_usleep(200);
        qtest_clock_step(d->qts, 1000000);
    }
    return false;
}

void qrdma_t_msix_entry(QRdma *d, unsigned v, uint64_t addr, uint32_t data)
{
    uint64_t e = d->dev.msix_table_off + (uint64_t)v * PCI_MSIX_ENTRY_SIZE;

    g_assert(d->dev.msix_enabled);
    qpci_io_writel(&d->dev, d->dev.msix_table_bar, e + PCI_MSIX_ENTRY_LOWER_ADDR,
                   (uint32_t)addr);
    qpci_io_writel(&d->dev, d->dev.msix_table_bar, e + PCI_MSIX_ENTRY_UPPER_ADDR,
                   (uint32_t)(addr >> 32));
    qpci_io_writel(&d->dev, d->dev.msix_table_bar, e + PCI_MSIX_ENTRY_DATA, data);
    qpci_io_writel(&d->dev, d->dev.msix_table_bar, e + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
}

/* ---- the QOSGraph node ---------------------------------------------------------- */

static void *qrdma_get_driver(void *obj, const char *interface)
{
    QRdma *d = obj;

    if (!g_strcmp0(interface, "pci-device")) {
        return &d->dev;
    }
    fprintf(stderr, "%s not present in qrdma\n", interface);
    g_assert_not_reached();
}

static void qrdma_destructor(QOSGraphObject *obj)
{
    QRdma *d = (QRdma *)obj;

    qrdma_t_stop(d);
    if (d->dev.msix_enabled) {
        qpci_msix_disable(&d->dev);
    }
    qpci_iounmap(&d->dev, d->regs);
    qpci_iounmap(&d->dev, d->doorbells);
}

static void qrdma_foreach(QPCIDevice *dev, int devfn, void *data)
{
    QRdma *d = data;

    d->dev = *dev;
    g_free(dev);
}

static void *qrdma_create(void *pci_bus, QGuestAllocator *alloc, void *addr)
{
    QRdma *d = g_new0(QRdma, 1);
    QPCIAddress *address = addr;

    qpci_device_foreach(pci_bus, address->vendor_id, address->device_id, qrdma_foreach, d);
    g_assert(d->dev.bus);
    d->alloc = alloc;
    d->obj.get_driver = qrdma_get_driver;
    d->obj.destructor = qrdma_destructor;
    return &d->obj;
}

static void qrdma_register_nodes(void)
{
    QPCIAddress addr = {
        .vendor_id = QRDMA_PCI_VENDOR_ID,
        .device_id = QRDMA_PCI_DEVICE_ID,
    };
    QOSGraphEdgeOptions opts = {
        .before_cmd_line = "-netdev hubport,id=qrdmanet0,hubid=0",
        .extra_device_opts = "netdev=qrdmanet0,stall-floor-ms=0",
    };

    add_qpci_address(&opts, &addr);
    qos_node_create_driver("qrdma", qrdma_create);
    qos_node_consumes("qrdma", "pci-bus", &opts);
}

libqos_init(qrdma_register_nodes);
