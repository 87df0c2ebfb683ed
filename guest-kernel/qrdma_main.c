// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma.ko: PCI probe and remove, hardware bring-up (reset, PE-ready poll,
 * capability read, MSI-X), and function reset. IB registration lives in
 * qrdma_verbs.c.
 *
 * probe = qrdma_up(): hardware bring-up, then IB registration; remove =
 * qrdma_down() mirrors it. A function reset (FLR through sysfs, or any
 * reset the PCI core runs with the driver bound) is qrdma_down() in
 * reset_prepare and qrdma_up() in reset_done: the device loses all its
 * state in the reset, and so does the driver, as if the driver had been
 * unbound and bound again (ib_device and netdev included).
 */
#include <linux/iopoll.h>
#include <linux/log2.h>
#include <linux/module.h>

#include "qrdma.h"

static unsigned int pe_ready_timeout_ms = 5000;
module_param(pe_ready_timeout_ms, uint, 0644);
MODULE_PARM_DESC(pe_ready_timeout_ms, "How long probe waits for the engine to report ready (ms)");

static const struct pci_device_id qrdma_pci_ids[] = {
	{ PCI_DEVICE(QRDMA_PCI_VENDOR_ID, QRDMA_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, qrdma_pci_ids);

/*
 * Reset the engine and wait for PE_STATUS to read ready, as irdma waits
 * for GLPE_CPUSTATUS. A device that never gets there fails probe.
 */
static int qrdma_reset_and_wait(struct qrdma_dev *dev)
{
	/* Writable at run time; 0 would make readl_poll_timeout() wait forever. */
	unsigned int timeout_ms = max(READ_ONCE(pe_ready_timeout_ms), 1U);
	u32 status;
	int ret;

	qrdma_wr32(dev, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
	ret = readl_poll_timeout(dev->regs + QRDMA_REG_PE_STATUS, status,
				 status == QRDMA_PE_STATUS_READY, 1000, timeout_ms * 1000ULL);
	if (ret)
		dev_err(&dev->pdev->dev,
			"engine not ready %u ms after reset (PE_STATUS 0x%x); giving up\n",
			timeout_ms, status);
	return ret;
}

static void qrdma_read_caps(struct qrdma_dev *dev)
{
	struct qrdma_caps *c = &dev->caps;
	u32 lo, hi;
	int i;

	dev->if_version = qrdma_rd32(dev, QRDMA_REG_IF_VERSION);
	dev->fw_version = qrdma_rd32(dev, QRDMA_REG_FW_VERSION);
	dev->hw_rev = qrdma_rd32(dev, QRDMA_REG_HW_REV);

	lo = qrdma_rd32(dev, QRDMA_REG_MAC_LOW);
	hi = qrdma_rd32(dev, QRDMA_REG_MAC_HIGH);
	for (i = 0; i < 4; i++)
		dev->mac[i] = lo >> (8 * i);
	dev->mac[4] = hi;
	dev->mac[5] = hi >> 8;

	for (i = 0; i < QRDMA_BOARD_ID_LEN; i += 4) {
		__le32 word = cpu_to_le32(qrdma_rd32(dev, QRDMA_REG_BOARD_ID + i));

		memcpy(&dev->board_id[i], &word, 4);
	}
	dev->board_id[QRDMA_BOARD_ID_LEN - 1] = '\0';

	c->max_qp = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_QP);
	c->max_cq = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_CQ);
	c->max_mr = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_MR);
	c->max_pd = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_PD);
	c->max_srq = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_SRQ);
	c->max_ah = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_AH);
	c->max_qp_wr = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_QP_WR);
	c->max_srq_wr = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_SRQ_WR);
	c->max_cqe = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_CQE);
	c->max_send_sge = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_SEND_SGE);
	c->max_recv_sge = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_RECV_SGE);
	c->max_inline = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_INLINE);
	c->page_sizes = qrdma_rd32(dev, QRDMA_REG_CAP_PAGE_SIZES);
	c->max_mr_size = (u64)qrdma_rd32(dev, QRDMA_REG_CAP_MAX_MR_SIZE_HI) << 32 |
			 qrdma_rd32(dev, QRDMA_REG_CAP_MAX_MR_SIZE_LO);
	c->max_rd_atom = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_RD_ATOM);
	c->max_resp_res = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_RESP_RES);
	c->max_mtu = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_MTU);
	c->gid_table_len = qrdma_rd32(dev, QRDMA_REG_CAP_GID_TABLE_LEN);
	c->db_pages = qrdma_rd32(dev, QRDMA_REG_CAP_DB_PAGES);
	c->msix_vectors = qrdma_rd32(dev, QRDMA_REG_CAP_MSIX_VECTORS);
	c->max_ceq = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_CEQ);
	c->features = qrdma_rd32(dev, QRDMA_REG_CAP_FEATURES);
	/* The multicast limits exist since interface 0.10, with their feature bit. */
	if (c->features & QRDMA_FEATURE_MCAST) {
		c->max_mcast_grp = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_MCAST_GRP);
		c->max_mcast_qp_attach = qrdma_rd32(dev, QRDMA_REG_CAP_MAX_MCAST_QP_ATTACH);
	}
}

/* Capabilities the driver relies on; a device outside them is refused. */
static int qrdma_check_caps(struct qrdma_dev *dev)
{
	struct device *d = &dev->pdev->dev;
	resource_size_t db_len = pci_resource_len(dev->pdev, QRDMA_BAR_DOORBELL);

	if (!dev->caps.max_pd || !dev->caps.gid_table_len || !dev->caps.msix_vectors) {
		dev_err(d, "device reports zero PDs, GIDs or MSI-X vectors\n");
		return -EINVAL;
	}
	if (dev->caps.db_pages < 2 ||
	    (u64)dev->caps.db_pages * QRDMA_DB_PAGE_SIZE > db_len) {
		dev_err(d, "doorbell BAR of %pa bytes cannot hold %u pages\n", &db_len,
			dev->caps.db_pages);
		return -EINVAL;
	}
	if (!is_power_of_2(dev->caps.max_mtu) || dev->caps.max_mtu < 256 ||
	    dev->caps.max_mtu > 4096) {
		dev_err(d, "device reports an invalid MTU of %u\n", dev->caps.max_mtu);
		return -EINVAL;
	}
	return 0;
}

/*
 * Everything probe does: on success the function's qrdma_dev is its drvdata;
 * on failure nothing is left behind and drvdata is NULL.
 */
static int qrdma_up(struct pci_dev *pdev)
{
	struct qrdma_dev *dev;
	bool res_ready = false;
	u32 sig, major;
	int ret;

	dev = ib_alloc_device(qrdma_dev, ibdev);
	if (!dev)
		return -ENOMEM;
	dev->pdev = pdev;
	pci_set_drvdata(pdev, dev);
	ida_init(&dev->pd_ida);
	ida_init(&dev->db_page_ida);

	ret = pci_enable_device_mem(pdev);
	if (ret)
		goto err_free_ibdev;
	ret = pci_request_regions(pdev, QRDMA_DRV_NAME);
	if (ret)
		goto err_disable;
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		goto err_release;

	dev->regs = pci_iomap(pdev, QRDMA_BAR_REGS, QRDMA_BAR_REGS_SIZE);
	if (!dev->regs) {
		ret = -ENOMEM;
		goto err_release;
	}
	dev->db_bar_start = pci_resource_start(pdev, QRDMA_BAR_DOORBELL);
	/* The kernel's doorbell page (kernel CQ arming, later kernel SQs). */
	dev->db_kernel = pci_iomap_range(pdev, QRDMA_BAR_DOORBELL,
					 QRDMA_DB_PAGE_KERNEL * QRDMA_DB_PAGE_SIZE,
					 QRDMA_DB_PAGE_SIZE);
	if (!dev->db_kernel) {
		ret = -ENOMEM;
		goto err_unmap;
	}

	sig = qrdma_rd32(dev, QRDMA_REG_SIGNATURE);
	if (sig != QRDMA_SIGNATURE) {
		dev_err(&pdev->dev, "BAR0 signature 0x%08x is not qrdma's\n", sig);
		ret = -ENODEV;
		goto err_unmap;
	}
	major = (qrdma_rd32(dev, QRDMA_REG_IF_VERSION) & QRDMA_IF_VERSION_MAJOR_MASK) >>
		QRDMA_IF_VERSION_MAJOR_SHIFT;
	if (major != QRDMA_IF_VERSION_MAJOR) {
		dev_err(&pdev->dev, "interface major %u, driver speaks %u\n", major,
			QRDMA_IF_VERSION_MAJOR);
		ret = -ENODEV;
		goto err_unmap;
	}

	ret = qrdma_reset_and_wait(dev);
	if (ret)
		goto err_unmap;
	qrdma_read_caps(dev);
	ret = qrdma_check_caps(dev);
	if (ret)
		goto err_reset;

	ret = pci_alloc_irq_vectors(pdev, 1, dev->caps.msix_vectors, PCI_IRQ_MSIX);
	if (ret < 0) {
		dev_err(&pdev->dev, "cannot enable MSI-X: %d\n", ret);
		goto err_reset;
	}
	dev->num_vectors = ret;

	ret = qrdma_cqp_create(dev);
	if (ret)
		goto err_free_vectors;
	ret = qrdma_eq_create(dev);
	if (ret)
		goto err_stop_eq;
	ret = qrdma_hmc_init(dev);
	if (ret)
		goto err_stop_eq;
	ret = qrdma_res_init(dev);
	if (ret)
		goto err_stop_eq;
	ret = qrdma_netdev_create(dev);
	if (ret)
		goto err_res;
	ret = qrdma_register_ibdev(dev);
	if (ret)
		goto err_destroy_netdev;

	dev_info(&pdev->dev, "%s and %s: interface %u.%u, fw %u.%u.%u, MAC %pM, %d MSI-X vectors\n",
		 dev_name(&dev->ibdev.dev), netdev_name(dev->netdev), major,
		 dev->if_version & QRDMA_IF_VERSION_MINOR_MASK,
		 (dev->fw_version & QRDMA_FW_VERSION_MAJOR_MASK) >> QRDMA_FW_VERSION_MAJOR_SHIFT,
		 (dev->fw_version & QRDMA_FW_VERSION_MINOR_MASK) >> QRDMA_FW_VERSION_MINOR_SHIFT,
		 dev->fw_version & QRDMA_FW_VERSION_PATCH_MASK, dev->mac, dev->num_vectors);
	return 0;

err_destroy_netdev:
	qrdma_netdev_destroy(dev);
err_res:
	/* Its pages go back through the CQP, before the reset. */
	qrdma_ah_window_fini(dev);
	res_ready = true;
err_stop_eq:
	qrdma_eq_stop(dev);
	/* After the reset the device uses none of our memory: free it. */
	qrdma_wr32(dev, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
	qrdma_rd32(dev, QRDMA_REG_DEV_CTRL);
	qrdma_eq_free(dev);
	qrdma_cqp_free(dev);
	qrdma_hmc_free(dev);
	if (res_ready)
		qrdma_res_fini(dev);
err_free_vectors:
	pci_free_irq_vectors(pdev);
err_reset:
	/* Leave the engine in reset so nothing of this attempt survives. */
	qrdma_wr32(dev, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
err_unmap:
	if (dev->db_kernel)
		pci_iounmap(pdev, dev->db_kernel);
	pci_iounmap(pdev, dev->regs);
err_release:
	pci_release_regions(pdev);
err_disable:
	pci_disable_device(pdev);
err_free_ibdev:
	pci_set_drvdata(pdev, NULL);
	ida_destroy(&dev->db_page_ida);
	ida_destroy(&dev->pd_ida);
	ib_dealloc_device(&dev->ibdev);
	return ret;
}

/*
 * Everything remove does, in the reverse order of qrdma_up(): the ib_device
 * goes first (ib_core destroys every object through the destroy verbs,
 * user processes' included: their contexts are disassociated, their
 * doorbell pages zapped, and kernel ULPs release the device), then the
 * netdev; then interrupts stop, the engine is reset and only then is the
 * memory it used freed. Afterwards drvdata is NULL.
 */
static void qrdma_down(struct qrdma_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;

	/* ib_core destroys every object, user processes' included, in here. */
	qrdma_unregister_ibdev(dev);
	/* Deferred AH destroys still need the CQP. */
	flush_workqueue(dev->wq);
	qrdma_ah_window_fini(dev);
	qrdma_netdev_destroy(dev);
	WARN_ON(atomic_read(&dev->num_ucontexts) || atomic_read(&dev->num_pds));
	WARN_ON(atomic_read(&dev->qps.live) || atomic_read(&dev->cqs.live) ||
		atomic_read(&dev->srqs.live) || atomic_read(&dev->num_mrs) ||
		atomic_read(&dev->num_ahs));
	qrdma_eq_stop(dev);
	/* After the reset the device uses none of our memory: free it. */
	qrdma_wr32(dev, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
	qrdma_rd32(dev, QRDMA_REG_DEV_CTRL);
	qrdma_eq_free(dev);
	qrdma_cqp_free(dev);
	qrdma_hmc_free(dev);
	qrdma_res_fini(dev);
	pci_free_irq_vectors(pdev);
	pci_iounmap(pdev, dev->db_kernel);
	pci_iounmap(pdev, dev->regs);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
	pci_set_drvdata(pdev, NULL);
	ida_destroy(&dev->db_page_ida);
	ida_destroy(&dev->pd_ida);
	ib_dealloc_device(&dev->ibdev);
}

static int qrdma_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	return qrdma_up(pdev);
}

static void qrdma_remove(struct pci_dev *pdev)
{
	struct qrdma_dev *dev = pci_get_drvdata(pdev);

	/* NULL: a bring-up after a function reset failed and left nothing. */
	if (dev)
		qrdma_down(dev);
}

/*
 * A function reset is coming (sysfs "reset", VFIO, a bus reset of the slot;
 * the PCI core holds the device lock, so probe, remove and other resets
 * wait). The reset wipes the device's objects, CQP, event queues and HMC
 * under the driver, so take everything down first, exactly as remove does:
 * unregistering the ib_device waits for verbs in progress and makes
 * ib_core destroy every object, user processes see their contexts
 * disassociated (their next verb or event read fails with EIO, their
 * completion channels report POLLERR), the netdev is unregistered, and
 * the engine is reset before the memory it used is freed.
 */
static void qrdma_reset_prepare(struct pci_dev *pdev)
{
	struct qrdma_dev *dev = pci_get_drvdata(pdev);

	if (!dev) {
		dev_info(&pdev->dev, "function reset: the device is already down\n");
		return;
	}
	dev_info(&pdev->dev, "function reset: taking %s and %s down\n",
		 dev_name(&dev->ibdev.dev), netdev_name(dev->netdev));
	qrdma_down(dev);
}

/*
 * The reset is done and the PCI core has restored the config space: bring
 * the function up as probe does. If that fails, nothing is left (drvdata
 * NULL): remove and rmmod still work, and another reset tries again.
 */
static void qrdma_reset_done(struct pci_dev *pdev)
{
	int ret;

	if (WARN_ON_ONCE(pci_get_drvdata(pdev)))
		return;
	ret = qrdma_up(pdev);
	if (ret)
		dev_err(&pdev->dev,
			"function reset: bring-up failed (%d); the function stays down until another reset or a driver reload\n",
			ret);
	else
		dev_info(&pdev->dev, "function reset: back up\n");
}

static const struct pci_error_handlers qrdma_err_handlers = {
	.reset_prepare = qrdma_reset_prepare,
	.reset_done = qrdma_reset_done,
};

static struct pci_driver qrdma_pci_driver = {
	.name = QRDMA_DRV_NAME,
	.id_table = qrdma_pci_ids,
	.probe = qrdma_probe,
	.remove = qrdma_remove,
	.err_handler = &qrdma_err_handlers,
};

module_pci_driver(qrdma_pci_driver);

MODULE_DESCRIPTION("qrdma virtual RDMA NIC (E810-style RDMA engine in QEMU)");
MODULE_LICENSE("Dual BSD/GPL");
