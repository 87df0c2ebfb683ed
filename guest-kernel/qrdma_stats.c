// SPDX-License-Identifier: GPL-2.0-only
/*
 * qrdma: the port's hardware counters for the RDMA core
 * (/sys/class/infiniband/qrdmaN/ports/1/hw_counters, `rdma statistic`).
 * The device counts (docs/hw-spec.md section 20); the driver takes a
 * snapshot (STATS_CTRL.SNAPSHOT) and reads each 64-bit counter as its
 * LO/HI pair from it, so no value tears.
 *
 * Names: where mlx5, efa or rxe count the same event, their name; the
 * mapping and what each counts is in docs/hw-spec.md section 20.
 */
#include "qrdma.h"

static const struct rdma_stat_desc qrdma_stat_descs[] = {
	[QRDMA_STAT_TX_PKTS].name = "tx_pkts",				/* efa */
	[QRDMA_STAT_TX_BYTES].name = "tx_bytes",			/* efa */
	[QRDMA_STAT_RX_PKTS].name = "rx_pkts",				/* efa */
	[QRDMA_STAT_RX_BYTES].name = "rx_bytes",			/* efa */
	[QRDMA_STAT_RETRANS_PKTS].name = "retrans_pkts",		/* efa */
	[QRDMA_STAT_LOCAL_ACK_TIMEOUT].name = "local_ack_timeout_err",	/* mlx5 */
	[QRDMA_STAT_PACKET_SEQ_ERR].name = "packet_seq_err",		/* mlx5 */
	[QRDMA_STAT_RNR_NAK_RCVD].name = "rnr_nak_retry_err",		/* mlx5 */
	[QRDMA_STAT_RNR_NAK_SENT].name = "send_rnr_err",		/* rxe */
	[QRDMA_STAT_DUPLICATE_REQUEST].name = "duplicate_request",	/* mlx5, rxe */
	[QRDMA_STAT_OUT_OF_SEQUENCE].name = "out_of_sequence",		/* mlx5 */
	[QRDMA_STAT_ICRC_ERR].name = "rx_icrc_encapsulated",		/* mlx5 */
	[QRDMA_STAT_RX_READ_REQUESTS].name = "rx_read_requests",	/* mlx5 */
	[QRDMA_STAT_RX_WRITE_REQUESTS].name = "rx_write_requests",	/* mlx5 */
	[QRDMA_STAT_RX_ATOMIC_REQUESTS].name = "rx_atomic_requests",	/* mlx5 */
	[QRDMA_STAT_REQ_CQE_ERROR].name = "req_cqe_error",		/* mlx5 */
	[QRDMA_STAT_RESP_CQE_ERROR].name = "resp_cqe_error",		/* mlx5 */
	[QRDMA_STAT_REQ_CQE_FLUSH].name = "req_cqe_flush_error",	/* mlx5 */
	[QRDMA_STAT_RESP_CQE_FLUSH].name = "resp_cqe_flush_error",	/* mlx5 */
	[QRDMA_STAT_OUT_OF_BUFFER].name = "out_of_buffer",		/* mlx5 */
	[QRDMA_STAT_RX_DROPS].name = "rx_drops",			/* efa */
};

static_assert(ARRAY_SIZE(qrdma_stat_descs) == QRDMA_STAT_NUM);

static struct rdma_hw_stats *qrdma_alloc_hw_port_stats(struct ib_device *ibdev, u32 port_num)
{
	return rdma_alloc_hw_stats_struct(qrdma_stat_descs, ARRAY_SIZE(qrdma_stat_descs),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int qrdma_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats, u32 port,
			      int index)
{
	struct qrdma_dev *dev = to_qdev(ibdev);
	u32 n = min_t(u32, stats->num_counters, dev->stats_num);
	u32 i;

	/* One snapshot at a time: another reader's would move the values under ours. */
	mutex_lock(&dev->stats_lock);
	qrdma_wr32(dev, QRDMA_REG_STATS_CTRL, QRDMA_STATS_CTRL_SNAPSHOT);
	for (i = 0; i < n; i++)
		stats->value[i] = qrdma_rd32(dev, QRDMA_REG_STAT_LO(i)) |
				  (u64)qrdma_rd32(dev, QRDMA_REG_STAT_HI(i)) << 32;
	mutex_unlock(&dev->stats_lock);
	/* Counters a device older than this driver lacks read 0. */
	for (; i < stats->num_counters; i++)
		stats->value[i] = 0;
	return stats->num_counters;
}

static const struct ib_device_ops qrdma_stats_ops = {
	.alloc_hw_port_stats = qrdma_alloc_hw_port_stats,
	.get_hw_stats = qrdma_get_hw_stats,
};

/* Before ib_register_device: the counters exist only if the device has them. */
void qrdma_stats_init(struct qrdma_dev *dev)
{
	mutex_init(&dev->stats_lock);
	if (!(dev->caps.features & QRDMA_FEATURE_STATS))
		return;
	dev->stats_num = min_t(u32, qrdma_rd32(dev, QRDMA_REG_STATS_NUM), QRDMA_STAT_NUM);
	ib_set_device_ops(&dev->ibdev, &qrdma_stats_ops);
}
