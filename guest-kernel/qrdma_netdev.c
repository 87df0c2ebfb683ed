// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma.ko: the Ethernet netdev of the function. One TX and one RX ring of
 * 16-byte descriptors (docs/hw-spec.md, "LAN function"), one NAPI context
 * on one MSI-X vector, scatter-gather transmit with checksum offload,
 * link state from the device, ethtool info, counters and ring sizes.
 *
 * Ring ownership: the driver owns next_to_use (it posts there and writes
 * TAIL); the device owns everything from its HEAD up to TAIL; the driver
 * reclaims from next_to_clean while descriptors show DD.
 */
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/if_vlan.h>
#include <linux/interrupt.h>
#include <linux/netdevice.h>
#include <linux/u64_stats_sync.h>

#include "qrdma.h"

/* Ring sizes until ethtool -G sets others (QRDMA_LAN_RING_MIN..MAX). */
#define QRDMA_TX_RING_LEN	512
#define QRDMA_RX_RING_LEN	512
#define QRDMA_LINK_POLL_MS	500

struct qrdma_tx_slot {
	struct sk_buff *skb;	/* set on the frame's last slot only */
	dma_addr_t dma;
	u32 len;
	bool is_page;		/* mapped with skb_frag_dma_map */
};

struct qrdma_rx_slot {
	struct sk_buff *skb;
	dma_addr_t dma;
	u32 len;
};

struct qrdma_ring {
	struct qrdma_lan_desc *desc;
	dma_addr_t desc_dma;
	u32 len;
	u32 next_to_use;
	u32 next_to_clean;
};

struct qrdma_netdev {
	struct qrdma_dev *dev;
	struct net_device *netdev;
	struct napi_struct napi;
	int vector;
	struct qrdma_ring tx, rx;
	u32 tx_ring_len, rx_ring_len;	/* what the next open allocates */
	struct qrdma_tx_slot *tx_slots;
	struct qrdma_rx_slot *rx_slots;
	u32 rx_buf_len;
	struct delayed_work link_work;
	/* AE ANNOUNCE: tell the segment where our addresses are (process context) */
	struct work_struct announce_work;

	struct u64_stats_sync syncp;
	u64 tx_packets, tx_bytes, tx_errors, tx_busy;
	u64 rx_packets, rx_bytes, rx_errors, rx_alloc_failed;
	atomic64_t announcements;
};

static u32 ring_free(const struct qrdma_ring *r)
{
	/* One slot stays empty so that TAIL == HEAD means "nothing posted". */
	return r->len - 1 - ((r->next_to_use - r->next_to_clean) & (r->len - 1));
}

static void qrdma_arm_irq(struct qrdma_netdev *qn)
{
	u32 v = qn->vector << QRDMA_LAN_INT_RX_VECTOR_SHIFT |
		qn->vector << QRDMA_LAN_INT_TX_VECTOR_SHIFT |
		QRDMA_LAN_INT_RX_ARM | QRDMA_LAN_INT_TX_ARM;

	qrdma_wr32(qn->dev, QRDMA_REG_LAN_INT_CTRL, v);
}

static void qrdma_disarm_irq(struct qrdma_netdev *qn)
{
	qrdma_wr32(qn->dev, QRDMA_REG_LAN_INT_CTRL,
		   qn->vector << QRDMA_LAN_INT_RX_VECTOR_SHIFT |
		   qn->vector << QRDMA_LAN_INT_TX_VECTOR_SHIFT);
}

/* ---- transmit ------------------------------------------------------------ */

static void qrdma_tx_unmap(struct qrdma_netdev *qn, struct qrdma_tx_slot *slot)
{
	struct device *d = &qn->dev->pdev->dev;

	if (slot->is_page)
		dma_unmap_page(d, slot->dma, slot->len, DMA_TO_DEVICE);
	else
		dma_unmap_single(d, slot->dma, slot->len, DMA_TO_DEVICE);
	slot->len = 0;
}

static netdev_tx_t qrdma_start_xmit(struct sk_buff *skb, struct net_device *netdev)
{
	struct qrdma_netdev *qn = netdev_priv(netdev);
	struct device *d = &qn->dev->pdev->dev;
	struct qrdma_ring *r = &qn->tx;
	u32 nfrags = skb_shinfo(skb)->nr_frags, first = r->next_to_use, idx = first, i;
	u64 csum_bits = 0;
	dma_addr_t dma;

	if (nfrags + 1 > QRDMA_LAN_TX_MAX_FRAGS && skb_linearize(skb))
		goto drop;
	nfrags = skb_shinfo(skb)->nr_frags;
	if (ring_free(r) < nfrags + 1) {
		/* The queue is stopped before this can happen; be safe anyway. */
		netif_stop_queue(netdev);
		qn->tx_busy++;
		return NETDEV_TX_BUSY;
	}
	if (skb->ip_summed == CHECKSUM_PARTIAL) {
		u32 start = skb_checksum_start_offset(skb);

		if (start > 0x3ff || skb->csum_offset > 0xff) {
			if (skb_checksum_help(skb))
				goto drop;
		} else {
			csum_bits = QRDMA_LAN_DESC_CSUM |
				    (u64)start << QRDMA_LAN_DESC_CSUM_START_SHIFT |
				    (u64)skb->csum_offset << QRDMA_LAN_DESC_CSUM_OFFSET_SHIFT;
		}
	}

	dma = dma_map_single(d, skb->data, skb_headlen(skb), DMA_TO_DEVICE);
	if (dma_mapping_error(d, dma))
		goto drop;
	qn->tx_slots[idx] = (struct qrdma_tx_slot){ .dma = dma, .len = skb_headlen(skb) };
	r->desc[idx].addr = cpu_to_le64(dma);
	r->desc[idx].cmd = cpu_to_le64(skb_headlen(skb) | csum_bits |
				       (nfrags ? 0 : QRDMA_LAN_DESC_EOP));

	for (i = 0; i < nfrags; i++) {
		const skb_frag_t *frag = &skb_shinfo(skb)->frags[i];
		u32 len = skb_frag_size(frag);

		idx = (idx + 1) & (r->len - 1);
		dma = skb_frag_dma_map(d, frag, 0, len, DMA_TO_DEVICE);
		if (dma_mapping_error(d, dma))
			goto unmap;
		qn->tx_slots[idx] = (struct qrdma_tx_slot){
			.dma = dma, .len = len, .is_page = true
		};
		r->desc[idx].addr = cpu_to_le64(dma);
		r->desc[idx].cmd = cpu_to_le64(len | (i == nfrags - 1 ? QRDMA_LAN_DESC_EOP : 0));
	}
	qn->tx_slots[idx].skb = skb;
	netdev_sent_queue(netdev, skb->len);
	skb_tx_timestamp(skb);
	r->next_to_use = (idx + 1) & (r->len - 1);

	/* Descriptors must be visible to the device before the tail moves. */
	dma_wmb();
	qrdma_wr32(qn->dev, QRDMA_REG_LAN_TXQ_TAIL, r->next_to_use);

	if (ring_free(r) < QRDMA_LAN_TX_MAX_FRAGS)
		netif_stop_queue(netdev);
	return NETDEV_TX_OK;

unmap:
	for (;;) {
		qrdma_tx_unmap(qn, &qn->tx_slots[idx]);
		if (idx == first)
			break;
		idx = (idx - 1) & (r->len - 1);
	}
drop:
	dev_kfree_skb_any(skb);
	u64_stats_update_begin(&qn->syncp);
	qn->tx_errors++;
	u64_stats_update_end(&qn->syncp);
	return NETDEV_TX_OK;
}

/* Reclaim descriptors the device has written back. */
static void qrdma_tx_clean(struct qrdma_netdev *qn, int napi_budget)
{
	struct qrdma_ring *r = &qn->tx;
	u32 pkts = 0, bytes = 0, errors = 0;

	while (r->next_to_clean != r->next_to_use) {
		u32 idx = r->next_to_clean;
		u64 cmd = le64_to_cpu(READ_ONCE(r->desc[idx].cmd));
		struct qrdma_tx_slot *slot = &qn->tx_slots[idx];

		if (!(cmd & QRDMA_LAN_DESC_DD))
			break;
		/* Read the rest of the descriptor only after seeing DD. */
		dma_rmb();
		if (cmd & QRDMA_LAN_DESC_ERR)
			errors++;
		qrdma_tx_unmap(qn, slot);
		if (slot->skb) {
			if (!(cmd & QRDMA_LAN_DESC_ERR)) {
				pkts++;
				bytes += slot->skb->len;
			}
			netdev_completed_queue(qn->netdev, 1, slot->skb->len);
			napi_consume_skb(slot->skb, napi_budget);
			slot->skb = NULL;
		}
		r->next_to_clean = (idx + 1) & (r->len - 1);
	}
	u64_stats_update_begin(&qn->syncp);
	qn->tx_packets += pkts;
	qn->tx_bytes += bytes;
	qn->tx_errors += errors;
	u64_stats_update_end(&qn->syncp);

	if (netif_queue_stopped(qn->netdev) && ring_free(r) >= 2 * QRDMA_LAN_TX_MAX_FRAGS &&
	    netif_carrier_ok(qn->netdev))
		netif_wake_queue(qn->netdev);
}

/* ---- receive ------------------------------------------------------------- */

static int qrdma_rx_fill_one(struct qrdma_netdev *qn, u32 idx, gfp_t gfp)
{
	struct device *d = &qn->dev->pdev->dev;
	struct qrdma_rx_slot *slot = &qn->rx_slots[idx];
	struct sk_buff *skb;
	dma_addr_t dma;

	skb = __netdev_alloc_skb_ip_align(qn->netdev, qn->rx_buf_len, gfp);
	if (!skb)
		return -ENOMEM;
	dma = dma_map_single(d, skb->data, qn->rx_buf_len, DMA_FROM_DEVICE);
	if (dma_mapping_error(d, dma)) {
		dev_kfree_skb_any(skb);
		return -ENOMEM;
	}
	slot->skb = skb;
	slot->dma = dma;
	slot->len = qn->rx_buf_len;
	qn->rx.desc[idx].addr = cpu_to_le64(dma);
	qn->rx.desc[idx].cmd = cpu_to_le64(qn->rx_buf_len);
	return 0;
}

/* Post buffers in every free slot, then tell the device. */
static void qrdma_rx_refill(struct qrdma_netdev *qn, gfp_t gfp)
{
	struct qrdma_ring *r = &qn->rx;
	bool posted = false;

	while (ring_free(r)) {
		if (qrdma_rx_fill_one(qn, r->next_to_use, gfp)) {
			qn->rx_alloc_failed++;
			break;
		}
		r->next_to_use = (r->next_to_use + 1) & (r->len - 1);
		posted = true;
	}
	if (posted) {
		dma_wmb();
		qrdma_wr32(qn->dev, QRDMA_REG_LAN_RXQ_TAIL, r->next_to_use);
	}
}

static int qrdma_rx_poll(struct qrdma_netdev *qn, int budget)
{
	struct device *d = &qn->dev->pdev->dev;
	struct qrdma_ring *r = &qn->rx;
	u32 pkts = 0, bytes = 0, errors = 0;

	while (pkts + errors < budget && r->next_to_clean != r->next_to_use) {
		u32 idx = r->next_to_clean;
		u64 cmd = le64_to_cpu(READ_ONCE(r->desc[idx].cmd));
		struct qrdma_rx_slot *slot = &qn->rx_slots[idx];
		struct sk_buff *skb = slot->skb;
		u32 len = cmd & QRDMA_LAN_DESC_LEN_MASK;

		if (!(cmd & QRDMA_LAN_DESC_DD))
			break;
		dma_rmb();
		dma_unmap_single(d, slot->dma, slot->len, DMA_FROM_DEVICE);
		slot->skb = NULL;
		r->next_to_clean = (idx + 1) & (r->len - 1);
		if ((cmd & QRDMA_LAN_DESC_ERR) || len < ETH_HLEN || len > slot->len) {
			dev_kfree_skb_any(skb);
			errors++;
			continue;
		}
		skb_put(skb, len);
		skb->protocol = eth_type_trans(skb, qn->netdev);
		bytes += len;
		pkts++;
		napi_gro_receive(&qn->napi, skb);
	}
	u64_stats_update_begin(&qn->syncp);
	qn->rx_packets += pkts;
	qn->rx_bytes += bytes;
	qn->rx_errors += errors;
	u64_stats_update_end(&qn->syncp);
	qrdma_rx_refill(qn, GFP_ATOMIC);
	return pkts + errors;
}

static int qrdma_napi_poll(struct napi_struct *napi, int budget)
{
	struct qrdma_netdev *qn = container_of(napi, struct qrdma_netdev, napi);
	int done;

	qrdma_tx_clean(qn, budget);
	done = qrdma_rx_poll(qn, budget);
	if (done < budget && napi_complete_done(napi, done))
		qrdma_arm_irq(qn);	/* fires at once if more arrived meanwhile */
	return done;
}

static irqreturn_t qrdma_lan_irq(int irq, void *data)
{
	struct qrdma_netdev *qn = data;

	/* The device disarmed the cause when it fired; NAPI re-arms. */
	napi_schedule_irqoff(&qn->napi);
	return IRQ_HANDLED;
}

/* ---- rings --------------------------------------------------------------- */

static int qrdma_ring_alloc(struct qrdma_netdev *qn, struct qrdma_ring *r, u32 len)
{
	r->desc = dma_alloc_coherent(&qn->dev->pdev->dev, len * sizeof(*r->desc), &r->desc_dma,
				     GFP_KERNEL);
	if (!r->desc)
		return -ENOMEM;
	r->len = len;
	r->next_to_use = 0;
	r->next_to_clean = 0;
	return 0;
}

static void qrdma_ring_free(struct qrdma_netdev *qn, struct qrdma_ring *r)
{
	dma_free_coherent(&qn->dev->pdev->dev, r->len * sizeof(*r->desc), r->desc, r->desc_dma);
	r->desc = NULL;
}

static void qrdma_program_ring(struct qrdma_netdev *qn, u32 base_low_reg, struct qrdma_ring *r)
{
	/* BASE_LOW, BASE_HIGH and LEN are consecutive registers. */
	qrdma_wr32(qn->dev, base_low_reg, lower_32_bits(r->desc_dma));
	qrdma_wr32(qn->dev, base_low_reg + 4, upper_32_bits(r->desc_dma));
	qrdma_wr32(qn->dev, base_low_reg + 8, r->len);
}

static void qrdma_free_tx_bufs(struct qrdma_netdev *qn)
{
	u32 i;

	for (i = 0; i < qn->tx.len; i++) {
		struct qrdma_tx_slot *slot = &qn->tx_slots[i];

		if (slot->len)
			qrdma_tx_unmap(qn, slot);
		if (slot->skb) {
			netdev_completed_queue(qn->netdev, 1, slot->skb->len);
			dev_kfree_skb_any(slot->skb);
			slot->skb = NULL;
		}
	}
}

static void qrdma_free_rx_bufs(struct qrdma_netdev *qn)
{
	u32 i;

	for (i = 0; i < qn->rx.len; i++) {
		struct qrdma_rx_slot *slot = &qn->rx_slots[i];

		if (!slot->skb)
			continue;
		dma_unmap_single(&qn->dev->pdev->dev, slot->dma, slot->len, DMA_FROM_DEVICE);
		dev_kfree_skb_any(slot->skb);
		slot->skb = NULL;
	}
}

/* Stop the device's LAN engine: after this it touches none of our memory. */
static void qrdma_lan_hw_stop(struct qrdma_netdev *qn)
{
	qrdma_wr32(qn->dev, QRDMA_REG_LAN_CTRL, 0);
	qrdma_disarm_irq(qn);
	/* A register read flushes the posted writes before buffers are freed. */
	qrdma_rd32(qn->dev, QRDMA_REG_LAN_CTRL);
	qrdma_wr32(qn->dev, QRDMA_REG_LAN_TXQ_LEN, 0);
	qrdma_wr32(qn->dev, QRDMA_REG_LAN_RXQ_LEN, 0);
}

static void qrdma_set_mac_regs(struct qrdma_netdev *qn, const u8 *mac)
{
	qrdma_wr32(qn->dev, QRDMA_REG_LAN_MAC_LOW,
		   mac[0] | mac[1] << 8 | mac[2] << 16 | (u32)mac[3] << 24);
	qrdma_wr32(qn->dev, QRDMA_REG_LAN_MAC_HIGH, mac[4] | mac[5] << 8);
}

static void qrdma_set_rx_mode(struct net_device *netdev)
{
	struct qrdma_netdev *qn = netdev_priv(netdev);
	u32 ctrl = qrdma_rd32(qn->dev, QRDMA_REG_LAN_CTRL) &
		   (QRDMA_LAN_CTRL_RX_ENABLE | QRDMA_LAN_CTRL_TX_ENABLE);
	struct netdev_hw_addr *ha;
	u64 hash = 0;

	ctrl |= QRDMA_LAN_CTRL_BROADCAST;
	if (netdev->flags & IFF_PROMISC)
		ctrl |= QRDMA_LAN_CTRL_PROMISC;
	if (netdev->flags & IFF_ALLMULTI)
		ctrl |= QRDMA_LAN_CTRL_ALLMULTI;
	netdev_for_each_mc_addr(ha, netdev)
		hash |= 1ULL << (ether_crc_le(ETH_ALEN, ha->addr) >> 26);
	qrdma_wr32(qn->dev, QRDMA_REG_LAN_MC_HASH_LOW, lower_32_bits(hash));
	qrdma_wr32(qn->dev, QRDMA_REG_LAN_MC_HASH_HIGH, upper_32_bits(hash));
	qrdma_wr32(qn->dev, QRDMA_REG_LAN_CTRL, ctrl);
}

static void qrdma_update_carrier(struct qrdma_netdev *qn)
{
	bool up = qrdma_rd32(qn->dev, QRDMA_REG_PORT_STATUS) & QRDMA_PORT_STATUS_LINK_UP;

	if (up == netif_carrier_ok(qn->netdev))
		return;
	if (up) {
		netif_carrier_on(qn->netdev);
		netif_wake_queue(qn->netdev);
	} else {
		netif_carrier_off(qn->netdev);
		netif_stop_queue(qn->netdev);
	}
	qrdma_port_event(qn->dev);
}

/* The device raises no link interrupt; the link is polled while the netdev is up. */
static void qrdma_link_work(struct work_struct *work)
{
	struct qrdma_netdev *qn = container_of(to_delayed_work(work), struct qrdma_netdev,
					       link_work);

	qrdma_update_carrier(qn);
	schedule_delayed_work(&qn->link_work, msecs_to_jiffies(QRDMA_LINK_POLL_MS));
}

static int qrdma_open(struct net_device *netdev)
{
	struct qrdma_netdev *qn = netdev_priv(netdev);
	int ret;

	qn->rx_buf_len = netdev->mtu + ETH_HLEN + VLAN_HLEN;
	ret = qrdma_ring_alloc(qn, &qn->tx, qn->tx_ring_len);
	if (ret)
		return ret;
	ret = qrdma_ring_alloc(qn, &qn->rx, qn->rx_ring_len);
	if (ret)
		goto err_free_tx_ring;
	qn->tx_slots = kcalloc(qn->tx.len, sizeof(*qn->tx_slots), GFP_KERNEL);
	qn->rx_slots = kcalloc(qn->rx.len, sizeof(*qn->rx_slots), GFP_KERNEL);
	if (!qn->tx_slots || !qn->rx_slots) {
		ret = -ENOMEM;
		goto err_free_slots;
	}

	qrdma_wr32(qn->dev, QRDMA_REG_LAN_MTU, netdev->mtu);
	qrdma_set_mac_regs(qn, netdev->dev_addr);
	qrdma_program_ring(qn, QRDMA_REG_LAN_TXQ_BASE_LOW, &qn->tx);
	qrdma_program_ring(qn, QRDMA_REG_LAN_RXQ_BASE_LOW, &qn->rx);

	ret = request_irq(pci_irq_vector(qn->dev->pdev, qn->vector), qrdma_lan_irq, 0,
			  netdev->name, qn);
	if (ret)
		goto err_unprogram;

	qrdma_rx_refill(qn, GFP_KERNEL);
	napi_enable(&qn->napi);
	qrdma_wr32(qn->dev, QRDMA_REG_LAN_CTRL,
		   QRDMA_LAN_CTRL_RX_ENABLE | QRDMA_LAN_CTRL_TX_ENABLE);
	qrdma_set_rx_mode(netdev);
	qrdma_arm_irq(qn);

	netif_carrier_off(netdev);
	netdev_reset_queue(netdev);
	qrdma_update_carrier(qn);
	if (netif_carrier_ok(netdev))
		netif_start_queue(netdev);
	schedule_delayed_work(&qn->link_work, msecs_to_jiffies(QRDMA_LINK_POLL_MS));
	return 0;

err_unprogram:
	qrdma_lan_hw_stop(qn);
err_free_slots:
	kfree(qn->rx_slots);
	kfree(qn->tx_slots);
	qn->rx_slots = NULL;
	qn->tx_slots = NULL;
	qrdma_ring_free(qn, &qn->rx);
err_free_tx_ring:
	qrdma_ring_free(qn, &qn->tx);
	return ret;
}

static int qrdma_stop(struct net_device *netdev)
{
	struct qrdma_netdev *qn = netdev_priv(netdev);

	/*
	 * No rings (open frees them when it fails): a reconfiguration could
	 * not bring them back and the interface is already down.
	 */
	if (!qn->tx.desc)
		return 0;
	cancel_delayed_work_sync(&qn->link_work);
	netif_stop_queue(netdev);
	netif_carrier_off(netdev);
	qrdma_port_event(qn->dev);
	qrdma_lan_hw_stop(qn);
	napi_disable(&qn->napi);
	free_irq(pci_irq_vector(qn->dev->pdev, qn->vector), qn);
	qrdma_free_tx_bufs(qn);
	qrdma_free_rx_bufs(qn);
	kfree(qn->rx_slots);
	kfree(qn->tx_slots);
	qn->rx_slots = NULL;
	qn->tx_slots = NULL;
	qrdma_ring_free(qn, &qn->rx);
	qrdma_ring_free(qn, &qn->tx);
	return 0;
}

/*
 * Receive buffers are sized by the MTU and the rings by ethtool -G: a
 * running interface gets new rings. If they cannot be had, it goes back
 * to the settings it had (and the caller gets the error); if even those
 * cannot be had, it goes down rather than stay up with no rings.
 */
static int qrdma_reconfigure(struct net_device *netdev, unsigned int mtu, u32 tx_len,
			     u32 rx_len)
{
	struct qrdma_netdev *qn = netdev_priv(netdev);
	unsigned int old_mtu = netdev->mtu;
	u32 old_tx = qn->tx_ring_len, old_rx = qn->rx_ring_len;
	bool running = netif_running(netdev);
	int ret;

	if (running)
		qrdma_stop(netdev);
	WRITE_ONCE(netdev->mtu, mtu);
	qn->tx_ring_len = tx_len;
	qn->rx_ring_len = rx_len;
	if (!running)
		return 0;
	ret = qrdma_open(netdev);
	if (!ret)
		return 0;
	WRITE_ONCE(netdev->mtu, old_mtu);
	qn->tx_ring_len = old_tx;
	qn->rx_ring_len = old_rx;
	if (qrdma_open(netdev)) {
		netdev_err(netdev, "cannot rebuild its rings: interface down\n");
		dev_close(netdev);
	}
	return ret;
}

static int qrdma_change_mtu(struct net_device *netdev, int mtu)
{
	struct qrdma_netdev *qn = netdev_priv(netdev);

	return qrdma_reconfigure(netdev, mtu, qn->tx_ring_len, qn->rx_ring_len);
}

static int qrdma_set_mac_address(struct net_device *netdev, void *p)
{
	struct qrdma_netdev *qn = netdev_priv(netdev);
	int ret;

	ret = eth_mac_addr(netdev, p);
	if (ret)
		return ret;
	qrdma_set_mac_regs(qn, netdev->dev_addr);
	return 0;
}

static void qrdma_get_stats64(struct net_device *netdev, struct rtnl_link_stats64 *s)
{
	struct qrdma_netdev *qn = netdev_priv(netdev);
	unsigned int start;

	do {
		start = u64_stats_fetch_begin(&qn->syncp);
		s->tx_packets = qn->tx_packets;
		s->tx_bytes = qn->tx_bytes;
		s->tx_errors = qn->tx_errors;
		s->rx_packets = qn->rx_packets;
		s->rx_bytes = qn->rx_bytes;
		s->rx_errors = qn->rx_errors;
	} while (u64_stats_fetch_retry(&qn->syncp, start));
	s->rx_dropped = qn->rx_alloc_failed;
}

static const struct net_device_ops qrdma_netdev_ops = {
	.ndo_open = qrdma_open,
	.ndo_stop = qrdma_stop,
	.ndo_start_xmit = qrdma_start_xmit,
	.ndo_change_mtu = qrdma_change_mtu,
	.ndo_set_mac_address = qrdma_set_mac_address,
	.ndo_set_rx_mode = qrdma_set_rx_mode,
	.ndo_get_stats64 = qrdma_get_stats64,
	.ndo_validate_addr = eth_validate_addr,
};

/* ---- ethtool ------------------------------------------------------------- */

static const struct {
	const char *name;
	u32 reg;
} qrdma_hw_stats[] = {
	{ "hw_tx_frames", QRDMA_REG_LAN_STAT_TX_FRAMES },
	{ "hw_tx_bytes", QRDMA_REG_LAN_STAT_TX_BYTES },
	{ "hw_tx_errors", QRDMA_REG_LAN_STAT_TX_ERRORS },
	{ "hw_rx_frames", QRDMA_REG_LAN_STAT_RX_FRAMES },
	{ "hw_rx_bytes", QRDMA_REG_LAN_STAT_RX_BYTES },
	{ "hw_rx_errors", QRDMA_REG_LAN_STAT_RX_ERRORS },
	{ "hw_rx_filtered", QRDMA_REG_LAN_STAT_RX_FILTERED },
	{ "hw_rx_dropped", QRDMA_REG_LAN_STAT_RX_DROPPED },
	{ "hw_roce_frames", QRDMA_REG_LAN_STAT_ROCE_FRAMES },
};

static const char * const qrdma_sw_stats[] = {
	"tx_busy", "rx_alloc_failed", "announcements",
};

static void qrdma_get_drvinfo(struct net_device *netdev, struct ethtool_drvinfo *info)
{
	struct qrdma_netdev *qn = netdev_priv(netdev);
	u32 fw = qn->dev->fw_version;

	strscpy(info->driver, QRDMA_DRV_NAME, sizeof(info->driver));
	snprintf(info->fw_version, sizeof(info->fw_version), "%u.%u.%u",
		 (fw & QRDMA_FW_VERSION_MAJOR_MASK) >> QRDMA_FW_VERSION_MAJOR_SHIFT,
		 (fw & QRDMA_FW_VERSION_MINOR_MASK) >> QRDMA_FW_VERSION_MINOR_SHIFT,
		 fw & QRDMA_FW_VERSION_PATCH_MASK);
	strscpy(info->bus_info, pci_name(qn->dev->pdev), sizeof(info->bus_info));
}

static int qrdma_get_sset_count(struct net_device *netdev, int sset)
{
	if (sset != ETH_SS_STATS)
		return -EOPNOTSUPP;
	return ARRAY_SIZE(qrdma_hw_stats) + ARRAY_SIZE(qrdma_sw_stats);
}

static void qrdma_get_strings(struct net_device *netdev, u32 sset, u8 *data)
{
	int i;

	if (sset != ETH_SS_STATS)
		return;
	for (i = 0; i < ARRAY_SIZE(qrdma_hw_stats); i++)
		ethtool_sprintf(&data, "%s", qrdma_hw_stats[i].name);
	for (i = 0; i < ARRAY_SIZE(qrdma_sw_stats); i++)
		ethtool_sprintf(&data, "%s", qrdma_sw_stats[i]);
}

static void qrdma_get_ethtool_stats(struct net_device *netdev, struct ethtool_stats *stats,
				    u64 *data)
{
	struct qrdma_netdev *qn = netdev_priv(netdev);
	int i;

	for (i = 0; i < ARRAY_SIZE(qrdma_hw_stats); i++)
		*data++ = qrdma_rd32(qn->dev, qrdma_hw_stats[i].reg);
	*data++ = qn->tx_busy;
	*data++ = qn->rx_alloc_failed;
	*data++ = atomic64_read(&qn->announcements);
}

static int qrdma_get_link_ksettings(struct net_device *netdev, struct ethtool_link_ksettings *ks)
{
	struct qrdma_netdev *qn = netdev_priv(netdev);

	ethtool_link_ksettings_zero_link_mode(ks, supported);
	ethtool_link_ksettings_zero_link_mode(ks, advertising);
	ks->base.speed = netif_carrier_ok(netdev) ?
			 qrdma_rd32(qn->dev, QRDMA_REG_PORT_SPEED) : SPEED_UNKNOWN;
	ks->base.duplex = netif_carrier_ok(netdev) ? DUPLEX_FULL : DUPLEX_UNKNOWN;
	ks->base.port = PORT_OTHER;
	ks->base.autoneg = AUTONEG_DISABLE;
	return 0;
}

static void qrdma_get_ringparam(struct net_device *netdev, struct ethtool_ringparam *ring,
				struct kernel_ethtool_ringparam *kring,
				struct netlink_ext_ack *extack)
{
	struct qrdma_netdev *qn = netdev_priv(netdev);

	ring->rx_max_pending = QRDMA_LAN_RING_MAX;
	ring->tx_max_pending = QRDMA_LAN_RING_MAX;
	ring->rx_pending = qn->rx_ring_len;
	ring->tx_pending = qn->tx_ring_len;
}

/* The device takes rings of a power of two: a request is rounded up to one. */
static u32 qrdma_ring_len_of(u32 pending)
{
	return roundup_pow_of_two(max_t(u32, pending, QRDMA_LAN_RING_MIN));
}

static int qrdma_set_ringparam(struct net_device *netdev, struct ethtool_ringparam *ring,
			       struct kernel_ethtool_ringparam *kring,
			       struct netlink_ext_ack *extack)
{
	struct qrdma_netdev *qn = netdev_priv(netdev);
	u32 tx_len, rx_len;

	if (ring->rx_mini_pending || ring->rx_jumbo_pending) {
		NL_SET_ERR_MSG_MOD(extack, "no mini or jumbo receive ring");
		return -EINVAL;
	}
	if (!ring->rx_pending || !ring->tx_pending ||
	    ring->rx_pending > QRDMA_LAN_RING_MAX || ring->tx_pending > QRDMA_LAN_RING_MAX) {
		NL_SET_ERR_MSG_MOD(extack, "rings take 1 to " __stringify(QRDMA_LAN_RING_MAX)
				   " descriptors");
		return -EINVAL;
	}
	tx_len = qrdma_ring_len_of(ring->tx_pending);
	rx_len = qrdma_ring_len_of(ring->rx_pending);
	if (tx_len != ring->tx_pending || rx_len != ring->rx_pending)
		netdev_info(netdev, "rings rounded up to a power of two: rx %u, tx %u\n",
			    rx_len, tx_len);
	if (tx_len == qn->tx_ring_len && rx_len == qn->rx_ring_len)
		return 0;
	return qrdma_reconfigure(netdev, netdev->mtu, tx_len, rx_len);
}

static const struct ethtool_ops qrdma_ethtool_ops = {
	.get_drvinfo = qrdma_get_drvinfo,
	.get_ringparam = qrdma_get_ringparam,
	.set_ringparam = qrdma_set_ringparam,
	.get_link = ethtool_op_get_link,
	.get_link_ksettings = qrdma_get_link_ksettings,
	.get_sset_count = qrdma_get_sset_count,
	.get_strings = qrdma_get_strings,
	.get_ethtool_stats = qrdma_get_ethtool_stats,
};

/* ---- announcements --------------------------------------------------------- */

/*
 * The device asks (AE ANNOUNCE: the VM moved to another host) that the
 * segment learn where our addresses are now: a gratuitous ARP for each
 * IPv4 address and an unsolicited neighbour advertisement for each IPv6
 * one, what the stack sends on NETDEV_NOTIFY_PEERS.
 */
static void qrdma_announce_work(struct work_struct *work)
{
	struct qrdma_netdev *qn = container_of(work, struct qrdma_netdev, announce_work);

	netdev_notify_peers(qn->netdev);
	atomic64_inc(&qn->announcements);
}

/* From the AEQ (interrupt context). */
void qrdma_netdev_announce(struct qrdma_dev *dev)
{
	struct qrdma_netdev *qn = READ_ONCE(dev->lan);

	if (qn)
		schedule_work(&qn->announce_work);
}

/* ---- creation -------------------------------------------------------------- */

int qrdma_netdev_create(struct qrdma_dev *dev)
{
	struct net_device *netdev;
	struct qrdma_netdev *qn;
	int ret;

	netdev = alloc_etherdev(sizeof(*qn));
	if (!netdev)
		return -ENOMEM;
	SET_NETDEV_DEV(netdev, &dev->pdev->dev);
	qn = netdev_priv(netdev);
	qn->dev = dev;
	qn->netdev = netdev;
	/* Vector 0 is the control path's; the LAN takes vector 1 when there is one. */
	qn->vector = dev->num_vectors > 1 ? 1 : 0;
	qn->tx_ring_len = QRDMA_TX_RING_LEN;
	qn->rx_ring_len = QRDMA_RX_RING_LEN;
	u64_stats_init(&qn->syncp);
	INIT_DELAYED_WORK(&qn->link_work, qrdma_link_work);
	INIT_WORK(&qn->announce_work, qrdma_announce_work);

	netdev->netdev_ops = &qrdma_netdev_ops;
	netdev->ethtool_ops = &qrdma_ethtool_ops;
	netdev->min_mtu = ETH_MIN_MTU;
	netdev->max_mtu = QRDMA_LAN_MTU_MAX;
	netdev->hw_features = NETIF_F_SG | NETIF_F_HW_CSUM;
	netdev->features = netdev->hw_features;
	eth_hw_addr_set(netdev, dev->mac);
	netif_napi_add(netdev, &qn->napi, qrdma_napi_poll);
	netif_carrier_off(netdev);

	ret = register_netdev(netdev);
	if (ret) {
		netif_napi_del(&qn->napi);
		free_netdev(netdev);
		return ret;
	}
	dev->netdev = netdev;
	WRITE_ONCE(dev->lan, qn);
	return 0;
}

void qrdma_netdev_destroy(struct qrdma_dev *dev)
{
	struct qrdma_netdev *qn = netdev_priv(dev->netdev);

	/* No AEQ interrupt schedules an announcement once it has seen this. */
	WRITE_ONCE(dev->lan, NULL);
	qrdma_eq_sync(dev);
	cancel_work_sync(&qn->announce_work);
	unregister_netdev(dev->netdev);
	netif_napi_del(&qn->napi);
	free_netdev(dev->netdev);
	dev->netdev = NULL;
}

bool qrdma_netdev_link_up(struct qrdma_dev *dev)
{
	return netif_running(dev->netdev) && netif_carrier_ok(dev->netdev);
}
