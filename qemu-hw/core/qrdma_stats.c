/*
 * qrdma device core: the port counters (block 0x5000, interface 0.7,
 * docs/hw-spec.md section 20). The transport counts its events in the
 * backend (qrdma_be_ops.stats); the completion engine counts error and
 * flush CQEs here (qrdma_dp.c, cq_write). A write of STATS_CTRL.SNAPSHOT
 * copies all of them at one instant into the snapshot the STAT_LO/HI
 * registers read, so a 64-bit value read as two 32-bit halves never tears.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qrdma_core_int.h"

#include <string.h>

#define B QRDMA_REG_STATS_BASE

static uint32_t reg_read_stats_ctrl(struct qrdma_core *core, uint32_t offset)
{
    /* SNAPSHOT is self-clearing: the copy is done when the write returns */
    return 0;
}

static uint32_t reg_read_stats_num(struct qrdma_core *core, uint32_t offset)
{
    return QRDMA_STAT_NUM;
}

static void reg_write_stats_ctrl(struct qrdma_core *core, uint32_t offset,
                                 uint32_t value)
{
    if (value & QRDMA_STATS_CTRL_SNAPSHOT) {
        qrdma_stats_snapshot(core);
    }
}

static uint32_t reg_read_stat(struct qrdma_core *core, uint32_t offset)
{
    uint32_t i = (offset - QRDMA_REG_STAT_LO(0)) / 8;
    uint64_t v = core->port_stats.snapshot[i];

    return (offset - QRDMA_REG_STAT_LO(0)) % 8 ? (uint32_t)(v >> 32)
                                               : (uint32_t)v;
}

/* Counter i's two registers, named after its index's enum name. */
#define STAT_REG(nm) \
    { .name = "STAT_" nm, .access = QRDMA_REG_RO, .read = reg_read_stat }
#define STAT(i, nm)                                        \
    [(QRDMA_REG_STAT_LO(i) - B) / 4] = STAT_REG(nm "_LO"), \
    [(QRDMA_REG_STAT_HI(i) - B) / 4] = STAT_REG(nm "_HI")

const struct qrdma_reg_desc qrdma_stats_reg_table[QRDMA_REG_BLOCK_SIZE / 4] = {
    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_STATS_CTRL, B, "STATS_CTRL",
                           QRDMA_STATS_CTRL_VALID_MASK, reg_read_stats_ctrl,
                           reg_write_stats_ctrl),
    QRDMA_REG_RO_LIVE_DESC(QRDMA_REG_STATS_NUM, B, "STATS_NUM",
                           reg_read_stats_num),
    STAT(QRDMA_STAT_TX_PKTS, "TX_PKTS"),
    STAT(QRDMA_STAT_TX_BYTES, "TX_BYTES"),
    STAT(QRDMA_STAT_RX_PKTS, "RX_PKTS"),
    STAT(QRDMA_STAT_RX_BYTES, "RX_BYTES"),
    STAT(QRDMA_STAT_RETRANS_PKTS, "RETRANS_PKTS"),
    STAT(QRDMA_STAT_LOCAL_ACK_TIMEOUT, "LOCAL_ACK_TIMEOUT"),
    STAT(QRDMA_STAT_PACKET_SEQ_ERR, "PACKET_SEQ_ERR"),
    STAT(QRDMA_STAT_RNR_NAK_RCVD, "RNR_NAK_RCVD"),
    STAT(QRDMA_STAT_RNR_NAK_SENT, "RNR_NAK_SENT"),
    STAT(QRDMA_STAT_DUPLICATE_REQUEST, "DUPLICATE_REQUEST"),
    STAT(QRDMA_STAT_OUT_OF_SEQUENCE, "OUT_OF_SEQUENCE"),
    STAT(QRDMA_STAT_ICRC_ERR, "ICRC_ERR"),
    STAT(QRDMA_STAT_RX_READ_REQUESTS, "RX_READ_REQUESTS"),
    STAT(QRDMA_STAT_RX_WRITE_REQUESTS, "RX_WRITE_REQUESTS"),
    STAT(QRDMA_STAT_RX_ATOMIC_REQUESTS, "RX_ATOMIC_REQUESTS"),
    STAT(QRDMA_STAT_REQ_CQE_ERROR, "REQ_CQE_ERROR"),
    STAT(QRDMA_STAT_RESP_CQE_ERROR, "RESP_CQE_ERROR"),
    STAT(QRDMA_STAT_REQ_CQE_FLUSH, "REQ_CQE_FLUSH"),
    STAT(QRDMA_STAT_RESP_CQE_FLUSH, "RESP_CQE_FLUSH"),
    STAT(QRDMA_STAT_OUT_OF_BUFFER, "OUT_OF_BUFFER"),
    STAT(QRDMA_STAT_RX_DROPS, "RX_DROPS"),
};
_Static_assert(QRDMA_STAT_RX_DROPS + 1 == QRDMA_STAT_NUM,
               "a counter without registers in qrdma_stats_reg_table");

#undef STAT

void qrdma_stats_snapshot(struct qrdma_core *core)
{
    struct qrdma_port_stats *ps = &core->port_stats;
    struct qrdma_be_stats be = { 0 };
    uint64_t *s = ps->snapshot;

    /* No backend (it failed to start again at a reset): its counters read 0. */
    if (core->dp.be && core->dp.ops->stats) {
        core->dp.ops->stats(core->dp.be, &be);
    }
    memcpy(s, ps->live, sizeof(ps->live));
    s[QRDMA_STAT_TX_PKTS] = be.tx_pkts;
    s[QRDMA_STAT_TX_BYTES] = be.tx_bytes;
    s[QRDMA_STAT_RX_PKTS] = be.rx_pkts;
    s[QRDMA_STAT_RX_BYTES] = be.rx_bytes;
    s[QRDMA_STAT_RETRANS_PKTS] = be.retrans_pkts;
    s[QRDMA_STAT_LOCAL_ACK_TIMEOUT] = be.local_ack_timeouts;
    s[QRDMA_STAT_PACKET_SEQ_ERR] = be.seq_naks_rcvd;
    s[QRDMA_STAT_RNR_NAK_RCVD] = be.rnr_naks_rcvd;
    s[QRDMA_STAT_RNR_NAK_SENT] = be.rnr_naks_sent;
    s[QRDMA_STAT_DUPLICATE_REQUEST] = be.duplicate_requests;
    s[QRDMA_STAT_OUT_OF_SEQUENCE] = be.out_of_sequence;
    s[QRDMA_STAT_ICRC_ERR] = be.icrc_errors;
    s[QRDMA_STAT_RX_READ_REQUESTS] = be.rx_read_requests;
    s[QRDMA_STAT_RX_WRITE_REQUESTS] = be.rx_write_requests;
    s[QRDMA_STAT_RX_ATOMIC_REQUESTS] = be.rx_atomic_requests;
    s[QRDMA_STAT_OUT_OF_BUFFER] = be.out_of_buffer;
    /* The device's own drops (multicast to no group or QP), the backend's. */
    s[QRDMA_STAT_RX_DROPS] = ps->live[QRDMA_STAT_RX_DROPS] + be.rx_drops;
}

/*
 * The core's counters and the snapshot; the backend's restart with its reset.
 */
void qrdma_stats_reset(struct qrdma_core *core)
{
    memset(&core->port_stats, 0, sizeof(core->port_stats));
}
