// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma.ko: address handles, and the address vector both AHs and
 * connected QPs carry. ib_core may create an AH where sleeping is not
 * allowed (without RDMA_CREATE_AH_SLEEPABLE: ib_cm, for every MAD it
 * sends, under a spinlock). Such a create takes an ID from a window of
 * AH IDs whose HMC pages stay backed from probe to remove (backing a page
 * sleeps), allocates with GFP_ATOMIC and runs CREATE_AH on the CQP's
 * spinning path. Sleepable creates take IDs above the window first. A
 * destroy that may not sleep is queued to the driver's workqueue, which
 * is drained before remove resets the device.
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

/* AH IDs below the window's end have HMC pages backed for good. */
static bool qrdma_ah_id_prebacked(struct qrdma_dev *dev, u32 id)
{
	return id < dev->ah_atomic_ids;
}

/* An AH ID, and its HMC page backed (sleepable callers only back one). */
static int qrdma_ah_id_alloc(struct qrdma_dev *dev, bool sleepable)
{
	int id = -ENOSPC;

	if (sleepable && dev->ah_atomic_ids <= dev->ah_max) {
		id = ida_alloc_range(&dev->ah_ida, dev->ah_atomic_ids, dev->ah_max, GFP_KERNEL);
		if (id >= 0 && qrdma_hmc_get(dev, QRDMA_HMC_AH, id, 1)) {
			ida_free(&dev->ah_ida, id);
			return -ENOMEM;
		}
	}
	/* The window: atomic creates, and sleepable ones once the rest is taken. */
	if (id == -ENOSPC && dev->ah_atomic_ids)
		id = ida_alloc_max(&dev->ah_ida, dev->ah_atomic_ids - 1,
				   sleepable ? GFP_KERNEL : GFP_ATOMIC);
	return id == -ENOSPC ? -ENOMEM : id;
}

static void qrdma_ah_id_free(struct qrdma_dev *dev, u32 id, bool hmc)
{
	if (hmc && !qrdma_ah_id_prebacked(dev, id))
		qrdma_hmc_put(dev, QRDMA_HMC_AH, id, 1);
	ida_free(&dev->ah_ida, id);
}

static unsigned int ah_atomic_ids = 1024;
module_param(ah_atomic_ids, uint, 0444);
MODULE_PARM_DESC(ah_atomic_ids,
		 "AH IDs kept backed for creates that may not sleep (the CM's, one per MAD in flight)");

/* Back the window's HMC pages at probe: 64 KB for 1024 AHs of 64 bytes. */
int qrdma_ah_window_init(struct qrdma_dev *dev)
{
	u32 ids = min_t(u32, ah_atomic_ids, dev->hmc.count[QRDMA_HMC_AH]);
	int ret;

	ids = min(ids, dev->ah_max + 1);
	dev->ah_atomic_ids = 0;
	if (!ids || !dev->hmc.count[QRDMA_HMC_AH])
		return 0;
	ret = qrdma_hmc_get(dev, QRDMA_HMC_AH, 0, ids);
	if (ret)
		return ret;
	dev->ah_atomic_ids = ids;
	return 0;
}

void qrdma_ah_window_fini(struct qrdma_dev *dev)
{
	if (dev->ah_atomic_ids)
		qrdma_hmc_put(dev, QRDMA_HMC_AH, 0, dev->ah_atomic_ids);
	dev->ah_atomic_ids = 0;
}

static void qrdma_ah_release(struct qrdma_dev *dev, struct qrdma_ah_ctx *ctx)
{
	u64 args[6] = { ctx->id };

	if (qrdma_cqp_exec(dev, QRDMA_CQP_OP_DESTROY_AH, args, NULL)) {
		/* The HMC page stays with the device until remove resets it. */
		atomic64_inc(&dev->hw_errors);
		qrdma_ah_id_free(dev, ctx->id, false);
	} else {
		qrdma_ah_id_free(dev, ctx->id, true);
	}
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
	bool sleepable = init->flags & RDMA_CREATE_AH_SLEEPABLE;
	gfp_t gfp = sleepable ? GFP_KERNEL : GFP_ATOMIC;
	struct qrdma_ah_ctx *ctx;
	struct qrdma_av *av;
	dma_addr_t av_dma;
	u64 args[6] = {};
	int id, ret;

	ctx = kzalloc(sizeof(*ctx), gfp);
	if (!ctx)
		return -ENOMEM;
	av = dma_pool_zalloc(dev->ctl_pool, gfp, &av_dma);
	if (!av) {
		ret = -ENOMEM;
		goto err_ctx;
	}
	ret = qrdma_av_from_ah_attr(dev, init->ah_attr, av);
	if (ret)
		goto err_av;

	id = qrdma_ah_id_alloc(dev, sleepable);
	if (id < 0) {
		ret = id;
		goto err_av;
	}

	args[0] = id | (u64)to_qpd(ibah->pd)->pdn << QRDMA_AH_ARG0_PD_SHIFT;
	args[1] = av_dma;
	if (sleepable)
		ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_CREATE_AH, args, NULL);
	else
		ret = qrdma_cqp_exec_atomic(dev, QRDMA_CQP_OP_CREATE_AH, args, NULL);
	if (ret)
		goto err_id;
	dma_pool_free(dev->ctl_pool, av, av_dma);

	INIT_WORK(&ctx->destroy_work, qrdma_ah_destroy_work);
	ctx->dev = dev;
	ctx->id = id;
	ah->ctx = ctx;
	ah->id = id;
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

err_id:
	qrdma_ah_id_free(dev, id, true);
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
