/*
 * libqos driver for the qrdma device: a QOSGraph node ("qrdma", on any
 * pci-bus) and the few driver steps the qtests need: BAR access, bring-up
 * through the control QP (CQP), CQs, RC QPs moved to RTS, SQ WQEs and CQE
 * polling. Everything is done as the Linux driver and the provider do it,
 * through the BARs and guest memory only.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QOS_QRDMA_H
#define QOS_QRDMA_H

#include "qgraph.h"
#include "pci.h"
#include "libqos-malloc.h"
#include "hw/qrdma/include/qrdma/qrdma_hw.h"

/*
 * The driver's guest memory: one 4 MB block, 2 MB aligned, carved as below
 * (offsets from QRdma.mem). The HMC is one direct SD of the second 2 MB.
 */
#define QRDMA_T_CQP_CTX     0x0000
#define QRDMA_T_CQP_SHADOW  0x0040
#define QRDMA_T_CQP_SQ      0x1000      /* 64 WQEs of 64 bytes */
#define QRDMA_T_CCQ         0x2000      /* 64 CQEs of 32 bytes */
#define QRDMA_T_FPM_BUF     0x3000
#define QRDMA_T_INFO        0x3400
#define QRDMA_T_CEQ         0x4000      /* 64 CEQEs */
#define QRDMA_T_AEQ         0x5000      /* 64 AEQEs */
#define QRDMA_T_CQ_SHADOW(c) (0x6000 + 64ull * (c))
#define QRDMA_T_SQ(q)       (0x10000 + 0x8000ull * (q))    /* 16 KB */
#define QRDMA_T_RQ(q)       (QRDMA_T_SQ(q) + 0x4000)
#define QRDMA_T_CQ(c)       (0x90000 + 0x4000ull * (c))
#define QRDMA_T_DATA        0x100000    /* 1 MB, covered by QRDMA_T_STAG */
#define QRDMA_T_DATA_LEN    0x100000
#define QRDMA_T_HMC         0x200000
#define QRDMA_T_MEM_LEN     0x400000

#define QRDMA_T_LOG2        6           /* CQP, CCQ, CEQ and AEQ: 64 entries */
#define QRDMA_T_N_QP        8
#define QRDMA_T_N_CQ        8
#define QRDMA_T_PD          1
#define QRDMA_T_STAG        ((1u << QRDMA_STAG_INDEX_SHIFT) | 0x11)
#define QRDMA_T_IOVA        0x50000000ull
#define QRDMA_T_SQ_LOG2     3
#define QRDMA_T_SQ_WQE_LOG2 8
#define QRDMA_T_CQ_LOG2     4

typedef struct QRdma {
    QOSGraphObject obj;
    QPCIDevice dev;
    QPCIBar regs, doorbells;
    QTestState *qts;
    QGuestAllocator *alloc;
    uint64_t block;                     /* what guest_alloc returned */
    uint64_t mem;                       /* block, 2 MB aligned */
    uint8_t gid[16];
    uint8_t mac[6];
    unsigned cqp_next, ccq_head;
    bool cqp_valid, ccq_valid;
    uint32_t sq_posted[QRDMA_T_N_QP];
    uint32_t cq_head[QRDMA_T_N_CQ];
} QRdma;

typedef struct QRdmaCqe {
    uint32_t qp, wqe_index, byte_len;
    uint8_t opcode, status;
} QRdmaCqe;

uint32_t qrdma_t_reg_read(QRdma *d, uint32_t off);
void qrdma_t_reg_write(QRdma *d, uint32_t off, uint32_t val);
void qrdma_t_doorbell(QRdma *d, uint32_t page, uint32_t which, uint32_t val);

/* Enable the function (memory, bus master), find its MAC, allocate memory. */
void qrdma_t_start(QRdma *d, QTestState *qts, QGuestAllocator *alloc);
void qrdma_t_stop(QRdma *d);

/*
 * Wait for PE_STATUS, create the CQP (its completions raise CEQEs on CEQ 0
 * when ccq_events), the GID of index 0 (from the MAC: ::ffff:10.0.0.n), CEQ
 * 0, the AEQ, the FPM layout, its SD and the data MR.
 */
void qrdma_t_bringup(QRdma *d, bool ccq_events);
/* Post one CQP command and wait for its CCQ completion; its status qword. */
uint64_t qrdma_t_cqp(QRdma *d, uint8_t op, uint64_t a0, uint64_t a1, uint64_t a2,
                     uint64_t a3, uint64_t a4, uint64_t a5);
/* Post a CQP command and ring the doorbell; do not wait. */
void qrdma_t_cqp_post(QRdma *d, uint8_t op, uint64_t a0, uint64_t a1, uint64_t a2,
                      uint64_t a3, uint64_t a4, uint64_t a5);
unsigned qrdma_t_major(uint64_t status);

void qrdma_t_create_cq(QRdma *d, uint32_t id, bool ceq);
/* RC QP id (send CQ scq, receive CQ rcq), moved to RTS toward dgid/dmac, QP dqpn. */
void qrdma_t_create_rc_qp(QRdma *d, uint32_t id, uint32_t scq, uint32_t rcq);
void qrdma_t_rc_to_rts(QRdma *d, uint32_t id, const uint8_t *dgid, const uint8_t *dmac,
                       uint32_t dqpn, uint8_t retry_cnt);
/*
 * CQ 1 (its events on CEQ 0 when ceq) and CQ 2; RC QPs qa and qb of this
 * device connected to each other (loopback), qa's send CQ 1, the rest CQ 2.
 */
void qrdma_t_loopback_pair(QRdma *d, uint32_t qa, uint32_t qb, bool ceq);
/* An RDMA WRITE of len bytes from DATA + src to the peer's IOVA of DATA + dst. */
void qrdma_t_post_write(QRdma *d, uint32_t qp, uint64_t src, uint64_t dst, uint32_t len);
bool qrdma_t_poll_cq(QRdma *d, uint32_t cq, QRdmaCqe *e);
/* Step the virtual clock 1 ms at a time (0.2 ms of real time between) until cq
 * has a CQE or ms pass. */
bool qrdma_t_wait_cq(QRdma *d, uint32_t cq, QRdmaCqe *e, unsigned ms);

/* Program MSI-X entry v: address, data, unmasked. */
void qrdma_t_msix_entry(QRdma *d, unsigned v, uint64_t addr, uint32_t data);

#endif
