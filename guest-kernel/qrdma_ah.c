// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma.ko: address handles, and the address vector both AHs and
 * connected QPs carry. CREATE_AH / DESTROY_AH go through the CQP, which
 * sleeps: ib_core may create an AH where sleeping is not allowed (without
 * RDMA_CREATE_AH_SLEEPABLE: ib_cm under a spinlock). Those requests fail
 * with -EAGAIN rather than spin on the CQP; today only the MAD/CM stack
 * asks that way, and it has no GSI QP on this device anyway. A destroy
 * that may not sleep is queued to the driver's workqueue, which is
 * drained before remove resets the device.
 */
#include <net/addrconf.h>

#include "qrdma.h"

/* State that outlives the ib_ah when its destroy is deferred. */
struct qrdma_ah_ctx {
	struct work_struct destroy_work;
	struct qrdma_dev *dev;
	u32 id;
};

int qrdma_av_from_ah_attr(struct qrdma_dev *dev, const struct rdma_ah_attr *ah_attr,
			  struct qrdma_av *av)
{
	const struct ib_global_route *grh;

	if (ah_attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(ah_attr) & IB_AH_GRH))
		return -EINVAL;
	if (rdma_ah_get_port_num(ah_attr) != 1)
		return -EINVAL;
	grh = rdma_ah_read_grh(ah_attr);
	if (grh->sgid_index >= dev->caps.gid_table_len)
		return -EINVAL;
	/* The port speaks RoCE v2 only. */
	if (grh->sgid_attr && grh->sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;
	memset(av, 0, sizeof(*av));
	memcpy(av->dgid, grh->dgid.raw, sizeof(av->dgid));
	memcpy(av->dmac, ah_attr->roce.dmac, ETH_ALEN);
	av->sgid_index = grh->sgid_index;
	av->hop_limit = grh->hop_limit;
	av->traffic_class = grh->traffic_class;
	av->flow_label = cpu_to_le32(grh->flow_label & 0xfffff);
	return 0;
}

static void qrdma_ah_release(struct qrdma_dev *dev, struct qrdma_ah_ctx *ctx)
{
	u64 args[6] = { ctx->id };

	if (qrdma_cqp_exec(dev, QRDMA_CQP_OP_DESTROY_AH, args, NULL)) {
		/* The HMC page stays with the device until remove resets it. */
		atomic64_inc(&dev->hw_errors);
	} else {
		qrdma_hmc_put(dev, QRDMA_HMC_AH, ctx->id, 1);
	}
	ida_free(&dev->ah_ida, ctx->id);
	atomic_dec(&dev->num_ahs);
	kfree(ctx);
}

static void qrdma_ah_destroy_work(struct work_struct *work)
{
	struct qrdma_ah_ctx *ctx = container_of(work, struct qrdma_ah_ctx, destroy_work);

	qrdma_ah_release(ctx->dev, ctx);
}

int qrdma_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibah->device);
	struct qrdma_ah *ah = to_qah(ibah);
	struct qrdma_create_ah_resp resp = {};
	struct qrdma_ah_ctx *ctx;
	struct qrdma_av *av;
	dma_addr_t av_dma;
	u64 args[6] = {};
	int id, ret;

	if (!(init->flags & RDMA_CREATE_AH_SLEEPABLE))
		return -EAGAIN;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	av = dma_pool_zalloc(dev->ctl_pool, GFP_KERNEL, &av_dma);
	if (!av) {
		ret = -ENOMEM;
		goto err_ctx;
	}
	ret = qrdma_av_from_ah_attr(dev, init->ah_attr, av);
	if (ret)
		goto err_av;

	id = ida_alloc_max(&dev->ah_ida, dev->ah_max, GFP_KERNEL);
	if (id < 0) {
		ret = id == -ENOSPC ? -ENOMEM : id;
		goto err_av;
	}
	ret = qrdma_hmc_get(dev, QRDMA_HMC_AH, id, 1);
	if (ret)
		goto err_id;

	args[0] = id | (u64)to_qpd(ibah->pd)->pdn << QRDMA_AH_ARG0_PD_SHIFT;
	args[1] = av_dma;
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_CREATE_AH, args, NULL);
	if (ret)
		goto err_hmc;
	dma_pool_free(dev->ctl_pool, av, av_dma);

	INIT_WORK(&ctx->destroy_work, qrdma_ah_destroy_work);
	ctx->dev = dev;
	ctx->id = id;
	ah->ctx = ctx;
	atomic_inc(&dev->num_ahs);

	if (udata) {
		resp.ah_id = id;
		ret = ib_copy_to_udata(udata, &resp, min_t(size_t, udata->outlen, sizeof(resp)));
		if (ret) {
			qrdma_ah_release(dev, ctx);
			return ret;
		}
	}
	return 0;

err_hmc:
	qrdma_hmc_put(dev, QRDMA_HMC_AH, id, 1);
err_id:
	ida_free(&dev->ah_ida, id);
err_av:
	dma_pool_free(dev->ctl_pool, av, av_dma);
err_ctx:
	kfree(ctx);
	return ret;
}

int qrdma_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct qrdma_ah *ah = to_qah(ibah);
	struct qrdma_dev *dev = to_qdev(ibah->device);

	if (flags & RDMA_DESTROY_AH_SLEEPABLE)
		qrdma_ah_release(dev, ah->ctx);
	else
		queue_work(dev->wq, &ah->ctx->destroy_work);
	ah->ctx = NULL;
	return 0;
}
