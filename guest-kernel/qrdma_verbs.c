// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma.ko: the ib_device: registration, device and port queries, user
 * contexts with their doorbell page, protection domains, sysfs attributes.
 */
#include <linux/etherdevice.h>
#include <linux/version.h>
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>	/* moved to linux/ in 6.12 */
#endif
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_mad.h>
#include <rdma/uverbs_ioctl.h>

#include "qrdma.h"

static_assert(PAGE_SIZE == QRDMA_DB_PAGE_SIZE, "one doorbell page per CPU page");

static u64 qrdma_fw_ver(struct qrdma_dev *dev)
{
	u32 v = dev->fw_version;

	/* ib_device_attr.fw_ver: major in bits 63:32, minor 31:16, patch 15:0. */
	return (u64)((v & QRDMA_FW_VERSION_MAJOR_MASK) >> QRDMA_FW_VERSION_MAJOR_SHIFT) << 32 |
	       ((v & QRDMA_FW_VERSION_MINOR_MASK) >> QRDMA_FW_VERSION_MINOR_SHIFT) << 16 |
	       (v & QRDMA_FW_VERSION_PATCH_MASK);
}

static void qrdma_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	u64 v = qrdma_fw_ver(to_qdev(ibdev));

	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u.%u", (u32)(v >> 32),
		 (u32)(v >> 16) & 0xffff, (u32)v & 0xffff);
}

static int qrdma_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
			      struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibdev);
	const struct qrdma_caps *c = &dev->caps;

	if (udata->inlen || udata->outlen)
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = qrdma_fw_ver(dev);
	attr->sys_image_guid = ibdev->node_guid;
	attr->max_mr_size = c->max_mr_size;
	attr->page_size_cap = c->page_sizes;
	attr->vendor_id = QRDMA_PCI_VENDOR_ID;
	attr->vendor_part_id = QRDMA_PCI_DEVICE_ID;
	attr->hw_ver = dev->hw_rev;
	/* The IDs the driver can hand out: capabilities and committed HMC counts. */
	attr->max_qp = dev->qps.max >= dev->qps.min ? dev->qps.max - dev->qps.min + 1 : 0;
	attr->max_qp_wr = c->max_qp_wr;
	attr->max_send_sge = c->max_send_sge;
	attr->max_recv_sge = c->max_recv_sge;
	attr->max_sge_rd = c->max_send_sge;
	attr->max_cq = dev->cqs.max >= dev->cqs.min ? dev->cqs.max - dev->cqs.min + 1 : 0;
	attr->max_cqe = c->max_cqe;
	attr->max_mr = dev->mr_max;
	attr->max_pd = c->max_pd;
	attr->max_qp_rd_atom = c->max_rd_atom;
	attr->max_qp_init_rd_atom = c->max_rd_atom;
	attr->max_res_rd_atom = c->max_resp_res * c->max_qp;
	attr->max_srq = dev->srqs.max >= dev->srqs.min ? dev->srqs.max - dev->srqs.min + 1 : 0;
	attr->max_srq_wr = c->max_srq_wr;
	attr->max_srq_sge = c->max_recv_sge;
	attr->max_ah = dev->ah_max + 1;
	attr->max_pkeys = 1;
	attr->local_ca_ack_delay = 15;
	/*
	 * What every qrdma device does: the transport NAKs a SEND that finds
	 * no receive WQE with RNR, the port's state changes
	 * reach consumers as PORT_ACTIVE / PORT_ERR events
	 * (qrdma_port_event), sys_image_guid is filled in.
	 */
	attr->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN | IB_DEVICE_PORT_ACTIVE_EVENT |
				 IB_DEVICE_SYS_IMAGE_GUID;
	/*
	 * Atomics, fast registration and the other feature flags follow
	 * CAP_FEATURES: a bit is set once the engine carries the feature end
	 * to end (the fast-register WQE is the data path's).
	 */
	if (c->features & QRDMA_FEATURE_FAST_REG) {
		attr->device_cap_flags |= IB_DEVICE_MEM_MGT_EXTENSIONS;
		attr->max_fast_reg_page_list_len = qrdma_max_fast_reg_pages(dev);
	}
	attr->atomic_cap = (c->features & QRDMA_FEATURE_ATOMIC) ? IB_ATOMIC_HCA : IB_ATOMIC_NONE;
	/* Windows share the MR table; type 2 windows are 2B (QP and PD checked). */
	if (c->features & QRDMA_FEATURE_MW) {
		attr->device_cap_flags |= IB_DEVICE_MEM_WINDOW | IB_DEVICE_MEM_WINDOW_TYPE_2B;
		attr->max_mw = attr->max_mr;
	}
	if (c->features & QRDMA_FEATURE_MCAST) {
		attr->max_mcast_grp = c->max_mcast_grp;
		attr->max_mcast_qp_attach = c->max_mcast_qp_attach;
		attr->max_total_mcast_qp_attach = c->max_mcast_grp * c->max_mcast_qp_attach;
	}
	return 0;
}

/* Map the link speed in Mb/s onto the IB width and per-lane speed. */
static void qrdma_speed_to_ib(u32 mbps, u16 *speed, u8 *width)
{
	static const struct {
		u32 mbps;
		u16 speed;
		u8 width;
	} table[] = {
		{ 400000, IB_SPEED_HDR, IB_WIDTH_8X },
		{ 200000, IB_SPEED_HDR, IB_WIDTH_4X },
		{ 100000, IB_SPEED_EDR, IB_WIDTH_4X },
		{ 50000, IB_SPEED_HDR, IB_WIDTH_1X },
		{ 40000, IB_SPEED_FDR10, IB_WIDTH_4X },
		{ 25000, IB_SPEED_EDR, IB_WIDTH_1X },
		{ 10000, IB_SPEED_FDR10, IB_WIDTH_1X },
		{ 0, IB_SPEED_SDR, IB_WIDTH_1X },
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(table) - 1 && mbps < table[i].mbps; i++)
		;
	*speed = table[i].speed;
	*width = table[i].width;
}

static int qrdma_query_port(struct ib_device *ibdev, u32 port, struct ib_port_attr *attr)
{
	struct qrdma_dev *dev = to_qdev(ibdev);
	/* RoCE: the port is up while its netdev is up and has carrier. */
	bool link_up = qrdma_netdev_link_up(dev);

	/* ib_core has zeroed attr. */
	attr->state = link_up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	attr->phys_state = link_up ? IB_PORT_PHYS_STATE_LINK_UP : IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = ib_mtu_int_to_enum(dev->caps.max_mtu);
	attr->active_mtu = min(attr->max_mtu, iboe_get_mtu(READ_ONCE(dev->netdev->mtu)));
	attr->gid_tbl_len = dev->caps.gid_table_len;
	attr->port_cap_flags = qrdma_has_gsi(dev) ? IB_PORT_CM_SUP : 0;
	attr->max_msg_sz = 1U << 31;
	attr->pkey_tbl_len = 1;
	attr->bad_pkey_cntr = 0;
	attr->qkey_viol_cntr = 0;
	attr->max_vl_num = 1;
	qrdma_speed_to_ib(qrdma_rd32(dev, QRDMA_REG_PORT_SPEED), &attr->active_speed,
			  &attr->active_width);
	return 0;
}

static int qrdma_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey)
{
	/* RoCE has one P_Key: the default full-membership key. */
	if (index > 0)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static int qrdma_get_port_immutable(struct ib_device *ibdev, u32 port,
				    struct ib_port_immutable *immutable)
{
	struct ib_port_attr attr = {};
	int ret;

	ret = ib_query_port(ibdev, port, &attr);
	if (ret)
		return ret;
	immutable->pkey_tbl_len = attr.pkey_tbl_len;
	immutable->gid_tbl_len = attr.gid_tbl_len;
	/* RoCE v2 (UDP encapsulation) only. */
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	if (!qrdma_has_gsi(to_qdev(ibdev))) {
		/*
		 * No QP1: no MADs and no IB connection manager, so ib_core never
		 * asks for the GSI QP and rdma_cm does not take the device (an
		 * address of its netdev fails to bind or resolve at once, ENODEV)
		 * instead of waiting for answers that never come.
		 */
		immutable->core_cap_flags = RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP |
					    RDMA_CORE_CAP_ETH_AH;
		immutable->max_mad_size = 0;
	}
	return 0;
}

static enum rdma_link_layer qrdma_get_link_layer(struct ib_device *ibdev, u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

/*
 * A port on a host RDMA NIC (CAP_FEATURES.HOST_GIDS, hw-spec 4.5) carries
 * only the host's GIDs, which the device lists in HOST_GID(i): is gid one?
 */
static bool qrdma_host_gid(struct qrdma_dev *dev, const union ib_gid *gid)
{
	u32 n = min_t(u32, qrdma_rd32(dev, QRDMA_REG_HOST_GID_COUNT), QRDMA_HOST_GIDS_MAX);
	u32 i, w;

	for (i = 0; i < n; i++) {
		for (w = 0; w < 4; w++) {
			if (qrdma_rd32(dev, QRDMA_REG_HOST_GID(i) + 4 * w) !=
			    get_unaligned_le32(&gid->raw[4 * w]))
				break;
		}
		if (w == 4)
			return true;
	}
	return false;
}

/* Say which host GIDs the port has, for whoever configures the netdev. */
static void qrdma_log_host_gids(struct qrdma_dev *dev)
{
	u32 n = min_t(u32, qrdma_rd32(dev, QRDMA_REG_HOST_GID_COUNT), QRDMA_HOST_GIDS_MAX);
	union ib_gid gid;
	u32 i, w;

	if (!(dev->caps.features & QRDMA_FEATURE_HOST_GIDS))
		return;
	dev_info(&dev->pdev->dev,
		 "the port is a host RDMA NIC's: give %s these addresses to use them as GIDs\n",
		 netdev_name(dev->netdev));
	for (i = 0; i < n; i++) {
		for (w = 0; w < 4; w++) {
			put_unaligned_le32(qrdma_rd32(dev, QRDMA_REG_HOST_GID(i) + 4 * w),
					   &gid.raw[4 * w]);
		}
		dev_info(&dev->pdev->dev, "host GID %u: %pI6\n", i, gid.raw);
	}
}

/*
 * ib_core's RoCE GID management adds and removes the netdev's addresses;
 * the device learns each one through the CQP, so that it knows which
 * RoCEv2 traffic is its own.
 */
static int qrdma_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct qrdma_dev *dev = to_qdev(attr->device);
	const struct in6_addr *a = (const struct in6_addr *)attr->gid.raw;
	u64 args[6] = {};

	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;
	if ((dev->caps.features & QRDMA_FEATURE_HOST_GIDS) && !qrdma_host_gid(dev, &attr->gid)) {
		/* The device would refuse it too (ADD_GID minor NOT_HOST). */
		ibdev_warn(&dev->ibdev,
			   "GID %pI6 (index %u) is not one of the host port's: not used (see the host GIDs listed at probe)\n",
			   attr->gid.raw, attr->index);
		return -EINVAL;
	}
	args[0] = attr->index |
		  (u64)(ipv6_addr_v4mapped(a) ? QRDMA_GID_TYPE_ROCE_V2_IPV4
					      : QRDMA_GID_TYPE_ROCE_V2_IPV6)
			<< QRDMA_CQP_GID_TYPE_SHIFT;
	/* Network byte order, byte 0 in the low bits of the first qword. */
	args[1] = get_unaligned_le64(&attr->gid.raw[0]);
	args[2] = get_unaligned_le64(&attr->gid.raw[8]);
	return qrdma_cqp_exec(dev, QRDMA_CQP_OP_ADD_GID, args, NULL);
}

static int qrdma_del_gid(const struct ib_gid_attr *attr, void **context)
{
	u64 args[6] = { attr->index };

	return qrdma_cqp_exec(to_qdev(attr->device), QRDMA_CQP_OP_DEL_GID, args, NULL);
}

/*
 * UD multicast (hw-spec 16.1): the device's group table is also its
 * receive filter for RoCEv2 multicast, so attaching is all the device
 * needs. On RoCE the LID means nothing; the RDMA core has checked that
 * the QP is UD and the GID multicast. A full table is -ENOMEM.
 */
static int qrdma_mcast_cmd(struct ib_qp *ibqp, union ib_gid *gid, u8 opcode)
{
	u64 args[6] = { to_qqp(ibqp)->id };

	args[1] = get_unaligned_le64(&gid->raw[0]);
	args[2] = get_unaligned_le64(&gid->raw[8]);
	return qrdma_cqp_exec(to_qdev(ibqp->device), opcode, args, NULL);
}

static int qrdma_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return qrdma_mcast_cmd(ibqp, gid, QRDMA_CQP_OP_MCAST_ATTACH);
}

static int qrdma_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return qrdma_mcast_cmd(ibqp, gid, QRDMA_CQP_OP_MCAST_DETACH);
}

static const struct ib_device_ops qrdma_mcast_ops = {
	.attach_mcast = qrdma_attach_mcast,
	.detach_mcast = qrdma_detach_mcast,
};

static int qrdma_alloc_ucontext(struct ib_ucontext *ibuctx, struct ib_udata *udata)
{
	struct qrdma_ucontext *uctx = to_quctx(ibuctx);
	struct qrdma_dev *dev = to_qdev(ibuctx->device);
	struct qrdma_alloc_ucontext_resp resp = {};
	struct qrdma_db_mmap_entry *entry;
	int page, ret;

	/* Page 0 is the kernel's; each context gets a page of its own. */
	page = ida_alloc_range(&dev->db_page_ida, 1, dev->caps.db_pages - 1, GFP_KERNEL);
	if (page < 0)
		return page == -ENOSPC ? -ENOMEM : page;

	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry) {
		ret = -ENOMEM;
		goto err_free_page;
	}
	entry->dev = dev;
	entry->db_page = page;
	ret = rdma_user_mmap_entry_insert(ibuctx, &entry->rdma_entry, QRDMA_DB_PAGE_SIZE);
	if (ret) {
		kfree(entry);
		goto err_free_page;
	}
	/* From here the page is returned by qrdma_mmap_free. */
	uctx->db_entry = &entry->rdma_entry;
	uctx->db_page = page;

	resp.db_mmap_offset = rdma_user_mmap_get_offset(uctx->db_entry);
	resp.db_page_index = page;
	resp.if_version = dev->if_version;
	resp.max_inline_data = dev->caps.max_inline;
	resp.max_send_sge = dev->caps.max_send_sge;
	resp.max_recv_sge = dev->caps.max_recv_sge;
	ret = ib_copy_to_udata(udata, &resp, min_t(size_t, udata->outlen, sizeof(resp)));
	if (ret)
		goto err_remove_entry;

	atomic_inc(&dev->num_ucontexts);
	return 0;

err_remove_entry:
	rdma_user_mmap_entry_remove(uctx->db_entry);
	return ret;
err_free_page:
	ida_free(&dev->db_page_ida, page);
	return ret;
}

static void qrdma_dealloc_ucontext(struct ib_ucontext *ibuctx)
{
	struct qrdma_ucontext *uctx = to_quctx(ibuctx);

	rdma_user_mmap_entry_remove(uctx->db_entry);
	atomic_dec(&to_qdev(ibuctx->device)->num_ucontexts);
}

/*
 * Device removal (rmmod, unbind, reset) with processes still holding
 * contexts: the core destroys their objects through our destroy verbs and
 * zaps every rdma_user_mmap_io() mapping itself, the doorbell page being
 * our only one, so nothing of the device stays reachable from user space
 * and there is nothing left to do here. Having the op lets removal proceed
 * instead of waiting for those processes to exit.
 */
static void qrdma_disassociate_ucontext(struct ib_ucontext *ibuctx)
{
}

static int qrdma_mmap(struct ib_ucontext *ibuctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rdma_entry;
	struct qrdma_db_mmap_entry *entry;
	struct qrdma_dev *dev;
	int ret;

	rdma_entry = rdma_user_mmap_entry_get(ibuctx, vma);
	if (!rdma_entry)
		return -EINVAL;
	entry = container_of(rdma_entry, struct qrdma_db_mmap_entry, rdma_entry);
	dev = entry->dev;
	/* Doorbells are MMIO: uncached, never executable. */
	ret = rdma_user_mmap_io(ibuctx, vma,
				PHYS_PFN(dev->db_bar_start) + entry->db_page,
				QRDMA_DB_PAGE_SIZE, pgprot_noncached(vma->vm_page_prot),
				rdma_entry);
	rdma_user_mmap_entry_put(rdma_entry);
	return ret;
}

/* The last reference to a doorbell mapping is gone: the page is free again. */
static void qrdma_mmap_free(struct rdma_user_mmap_entry *rdma_entry)
{
	struct qrdma_db_mmap_entry *entry =
		container_of(rdma_entry, struct qrdma_db_mmap_entry, rdma_entry);

	ida_free(&entry->dev->db_page_ida, entry->db_page);
	kfree(entry);
}

static int qrdma_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibpd->device);
	struct qrdma_pd *pd = to_qpd(ibpd);
	struct qrdma_alloc_pd_resp resp = {};
	int pdn, ret;

	pdn = ida_alloc_max(&dev->pd_ida, dev->caps.max_pd - 1, GFP_KERNEL);
	if (pdn < 0)
		return pdn == -ENOSPC ? -ENOMEM : pdn;
	pd->pdn = pdn;

	if (udata && udata->outlen) {
		resp.pdn = pdn;
		ret = ib_copy_to_udata(udata, &resp, min_t(size_t, udata->outlen, sizeof(resp)));
		if (ret) {
			ida_free(&dev->pd_ida, pdn);
			return ret;
		}
	}
	atomic_inc(&dev->num_pds);
	return 0;
}

static int qrdma_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibpd->device);

	ida_free(&dev->pd_ida, to_qpd(ibpd)->pdn);
	atomic_dec(&dev->num_pds);
	return 0;
}

/* ---- sysfs: board_id, hca_type, hw_rev as other RDMA drivers show them -- */

static ssize_t board_id_show(struct device *device, struct device_attribute *attr, char *buf)
{
	struct qrdma_dev *dev = rdma_device_to_drv_device(device, struct qrdma_dev, ibdev);

	return sysfs_emit(buf, "%s\n", dev->board_id);
}
static DEVICE_ATTR_RO(board_id);

static ssize_t hca_type_show(struct device *device, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "QRDMA-%04x\n", QRDMA_PCI_DEVICE_ID);
}
static DEVICE_ATTR_RO(hca_type);

static ssize_t hw_rev_show(struct device *device, struct device_attribute *attr, char *buf)
{
	struct qrdma_dev *dev = rdma_device_to_drv_device(device, struct qrdma_dev, ibdev);

	return sysfs_emit(buf, "0x%x\n", dev->hw_rev);
}
static DEVICE_ATTR_RO(hw_rev);

/*
 * Live objects per type as the driver counts them, and the HMC and PBLE
 * memory lent to the device for them.
 */
#define QRDMA_RES_ATTR(name, expr)						\
static ssize_t name##_show(struct device *device, struct device_attribute *attr, char *buf) \
{										\
	struct qrdma_dev *dev = rdma_device_to_drv_device(device, struct qrdma_dev, ibdev); \
										\
	return sysfs_emit(buf, "%llu\n", (unsigned long long)(expr));		\
}										\
static DEVICE_ATTR_RO(name)

QRDMA_RES_ATTR(res_ucontexts, atomic_read(&dev->num_ucontexts));
QRDMA_RES_ATTR(res_pds, atomic_read(&dev->num_pds));
QRDMA_RES_ATTR(res_qps, atomic_read(&dev->qps.live));
QRDMA_RES_ATTR(res_cqs, atomic_read(&dev->cqs.live));
QRDMA_RES_ATTR(res_srqs, atomic_read(&dev->srqs.live));
QRDMA_RES_ATTR(res_mrs, atomic_read(&dev->num_mrs));
QRDMA_RES_ATTR(res_ahs, atomic_read(&dev->num_ahs));
QRDMA_RES_ATTR(res_pbles, READ_ONCE(dev->pble.used));
/* The PBLE pool's size: res_pbles can reach it, max_mr and friends do not say it. */
QRDMA_RES_ATTR(pble_count, dev->pble.count);
QRDMA_RES_ATTR(hmc_backed_pages, READ_ONCE(dev->hmc.backed_pages));
QRDMA_RES_ATTR(hmc_direct_sds, READ_ONCE(dev->hmc.direct_sds));
QRDMA_RES_ATTR(hw_destroy_errors, atomic64_read(&dev->hw_errors));
QRDMA_RES_ATTR(async_events, atomic64_read(&dev->eqs.async_events));

#ifdef QRDMA_REG_OBJ_COUNT_QP
/* The device's own live counts, to compare with the driver's res_* files. */
QRDMA_RES_ATTR(hw_qps, qrdma_rd32(dev, QRDMA_REG_OBJ_COUNT_QP));
QRDMA_RES_ATTR(hw_cqs, qrdma_rd32(dev, QRDMA_REG_OBJ_COUNT_CQ));
QRDMA_RES_ATTR(hw_srqs, qrdma_rd32(dev, QRDMA_REG_OBJ_COUNT_SRQ));
QRDMA_RES_ATTR(hw_mrs, qrdma_rd32(dev, QRDMA_REG_OBJ_COUNT_MR));
QRDMA_RES_ATTR(hw_ahs, qrdma_rd32(dev, QRDMA_REG_OBJ_COUNT_AH));
#endif

static struct attribute *qrdma_dev_attrs[] = {
	&dev_attr_board_id.attr,
	&dev_attr_hca_type.attr,
	&dev_attr_hw_rev.attr,
	&dev_attr_res_ucontexts.attr,
	&dev_attr_res_pds.attr,
	&dev_attr_res_qps.attr,
	&dev_attr_res_cqs.attr,
	&dev_attr_res_srqs.attr,
	&dev_attr_res_mrs.attr,
	&dev_attr_res_ahs.attr,
	&dev_attr_res_pbles.attr,
	&dev_attr_pble_count.attr,
	&dev_attr_hmc_backed_pages.attr,
	&dev_attr_hmc_direct_sds.attr,
	&dev_attr_hw_destroy_errors.attr,
	&dev_attr_async_events.attr,
#ifdef QRDMA_REG_OBJ_COUNT_QP
	&dev_attr_hw_qps.attr,
	&dev_attr_hw_cqs.attr,
	&dev_attr_hw_srqs.attr,
	&dev_attr_hw_mrs.attr,
	&dev_attr_hw_ahs.attr,
#endif
	NULL
};

static const struct attribute_group qrdma_attr_group = {
	.attrs = qrdma_dev_attrs,
};

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
static int qrdma_create_cq_op(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			      struct uverbs_attr_bundle *attrs)
{
	return qrdma_create_cq(ibcq, attr, attrs ? &attrs->driver_udata : NULL);
}
#else
static int qrdma_create_cq_op(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			      struct ib_udata *udata)
{
	return qrdma_create_cq(ibcq, attr, udata);
}
#endif

/* dma-buf MRs need the device to fault pages in on move: not supported. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
static struct ib_mr *qrdma_reg_user_mr_dmabuf(struct ib_pd *pd, u64 offset, u64 length,
					      u64 virt, int fd, int access,
					      struct uverbs_attr_bundle *attrs)
#else
static struct ib_mr *qrdma_reg_user_mr_dmabuf(struct ib_pd *pd, u64 offset, u64 length,
					      u64 virt, int fd, int access,
					      struct ib_udata *udata)
#endif
{
	return ERR_PTR(-EOPNOTSUPP);
}

static const struct ib_device_ops qrdma_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = QRDMA_ABI_VERSION,
	.device_group = &qrdma_attr_group,

	.add_gid = qrdma_add_gid,
	.alloc_mr = qrdma_alloc_mr,
	.alloc_mw = qrdma_alloc_mw,
	.alloc_pd = qrdma_alloc_pd,
	.alloc_ucontext = qrdma_alloc_ucontext,
	.create_ah = qrdma_create_ah,
	.create_cq = qrdma_create_cq_op,
	.create_qp = qrdma_create_qp,
	.create_srq = qrdma_create_srq,
	.create_user_ah = qrdma_create_ah,
	.dealloc_mw = qrdma_dealloc_mw,
	.dealloc_pd = qrdma_dealloc_pd,
	.dealloc_ucontext = qrdma_dealloc_ucontext,
	.del_gid = qrdma_del_gid,
	.disassociate_ucontext = qrdma_disassociate_ucontext,
	.dereg_mr = qrdma_dereg_mr,
	.destroy_ah = qrdma_destroy_ah,
	.destroy_cq = qrdma_destroy_cq,
	.destroy_qp = qrdma_destroy_qp,
	.destroy_srq = qrdma_destroy_srq,
	.get_dev_fw_str = qrdma_get_dev_fw_str,
	.get_dma_mr = qrdma_get_dma_mr,
	.get_link_layer = qrdma_get_link_layer,
	.get_port_immutable = qrdma_get_port_immutable,
	.map_mr_sg = qrdma_map_mr_sg,
	.mmap = qrdma_mmap,
	.mmap_free = qrdma_mmap_free,
	.modify_qp = qrdma_modify_qp,
	.modify_srq = qrdma_modify_srq,
	.poll_cq = qrdma_poll_cq,
	.post_recv = qrdma_post_recv,
	.post_send = qrdma_post_send,
	.post_srq_recv = qrdma_post_srq_recv,
	.query_device = qrdma_query_device,
	.query_pkey = qrdma_query_pkey,
	.query_port = qrdma_query_port,
	.query_qp = qrdma_query_qp,
	.query_srq = qrdma_query_srq,
	.reg_user_mr = qrdma_reg_user_mr,
	.reg_user_mr_dmabuf = qrdma_reg_user_mr_dmabuf,
	.req_notify_cq = qrdma_req_notify_cq,
	.rereg_user_mr = qrdma_rereg_user_mr,
	.resize_cq = qrdma_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, qrdma_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, qrdma_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, qrdma_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, qrdma_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, qrdma_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, qrdma_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, qrdma_ucontext, ibucontext),
};

int qrdma_register_ibdev(struct qrdma_dev *dev)
{
	struct ib_device *ibdev = &dev->ibdev;
	int ret;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	/* After phys_port_cnt: ib_core checks the port number against it. */
	ret = ib_device_set_netdev(ibdev, dev->netdev, 1);
	if (ret) {
		dev_err(&dev->pdev->dev, "ib_device_set_netdev failed: %d\n", ret);
		return ret;
	}
	/* Vector 0 will carry the AEQ and CQP; the rest, completion events. */
	ibdev->num_comp_vectors = max(1, dev->num_vectors - 1);
	ibdev->dev.parent = &dev->pdev->dev;
	addrconf_addr_eui48((u8 *)&ibdev->node_guid, dev->mac);
	snprintf(ibdev->node_desc, sizeof(ibdev->node_desc), "qrdma %s", dev->board_id);
	ib_set_device_ops(ibdev, &qrdma_dev_ops);
	/* The verbs exist only when the device has multicast (uverbs hides them otherwise). */
	if (dev->caps.features & QRDMA_FEATURE_MCAST)
		ib_set_device_ops(ibdev, &qrdma_mcast_ops);
	qrdma_stats_init(dev);

	ret = ib_register_device(ibdev, "qrdma%d", &dev->pdev->dev);
	if (ret) {
		dev_err(&dev->pdev->dev, "ib_register_device failed: %d\n", ret);
		return ret;
	}
	dev->ib_registered = true;
	qrdma_log_host_gids(dev);
	return 0;
}

void qrdma_unregister_ibdev(struct qrdma_dev *dev)
{
	dev->ib_registered = false;
	ib_unregister_device(&dev->ibdev);
}

/* The netdev went up or down: tell RDMA consumers that the port did. */
void qrdma_port_event(struct qrdma_dev *dev)
{
	struct ib_event event = {
		.device = &dev->ibdev,
		.element.port_num = 1,
	};

	if (!dev->ib_registered)
		return;
	event.event = qrdma_netdev_link_up(dev) ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR;
	ib_dispatch_event(&event);
}
