// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma.ko: memory regions. An STag is the HMC MR index << 8 | a key byte
 * that changes each time the index is (re)registered, so stale keys fail.
 * User MRs are pinned, cut into the largest page size the device and the
 * mapping allow, and listed in PBLEs (one level up to a leaf run, two
 * levels beyond); the kernel's DMA MR covers guest RAM with no list;
 * fast-register MRs reserve PBLEs that post_send fills, for a
 * fast-register WQE, from the page list map_mr_sg builds. Memory windows
 * take an index of the same table (ALLOC_STAG with MW_TYPE); user space
 * binds them through its own SQ.
 */
#include "qrdma.h"

#define QRDMA_ACCESS_REMOTE	(IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | \
				 IB_ACCESS_REMOTE_ATOMIC)
/* Fast-register MRs: pages in one PBLE run, as the WQE names one list. */
#define QRDMA_FAST_REG_MAX_PAGES (QRDMA_PBLE_LEAF_ENTRIES * 8)

u32 qrdma_max_fast_reg_pages(struct qrdma_dev *dev)
{
	return min(QRDMA_FAST_REG_MAX_PAGES, dev->pble.count);
}

static int qrdma_mr_check_access(struct qrdma_dev *dev, int access)
{
	/* Optional bits (relaxed ordering) may be ignored; others may not. */
	if (access & ~IB_ACCESS_OPTIONAL & ~QRDMA_ACCESS_VALID_MASK)
		return -EOPNOTSUPP;
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if ((access & IB_ACCESS_REMOTE_ATOMIC) && !(dev->caps.features & QRDMA_FEATURE_ATOMIC))
		return -EOPNOTSUPP;
	if ((access & IB_ACCESS_MW_BIND) && !(dev->caps.features & QRDMA_FEATURE_MW))
		return -EOPNOTSUPP;
	return 0;
}

static int qrdma_stag_index_alloc(struct qrdma_dev *dev, u32 *index)
{
	int idx;

	if (!dev->mr_max)
		return -ENOMEM;
	idx = ida_alloc_range(&dev->mr_ida, 1, dev->mr_max, GFP_KERNEL);
	if (idx < 0)
		return idx == -ENOSPC ? -ENOMEM : idx;
	*index = idx;
	if (qrdma_hmc_get(dev, QRDMA_HMC_MR, idx, 1)) {
		ida_free(&dev->mr_ida, idx);
		return -ENOMEM;
	}
	atomic_inc(&dev->num_mrs);
	return 0;
}

static void qrdma_stag_index_free(struct qrdma_dev *dev, u32 index, bool hmc)
{
	if (hmc)
		qrdma_hmc_put(dev, QRDMA_HMC_MR, index, 1);
	ida_free(&dev->mr_ida, index);
	atomic_dec(&dev->num_mrs);
}

static int qrdma_mr_index_alloc(struct qrdma_dev *dev, struct qrdma_mr *mr)
{
	return qrdma_stag_index_alloc(dev, &mr->index);
}

static void qrdma_mr_index_free(struct qrdma_dev *dev, struct qrdma_mr *mr, bool hmc)
{
	qrdma_stag_index_free(dev, mr->index, hmc);
}

/* A new STag for the MR's index: same index, next key byte. */
static void qrdma_mr_new_stag(struct qrdma_dev *dev, struct qrdma_mr *mr)
{
	u8 key = ++dev->mr_keys[mr->index];

	mr->stag = mr->index << QRDMA_STAG_INDEX_SHIFT | key;
	mr->ibmr.lkey = mr->stag;
	mr->ibmr.rkey = mr->stag;
}

static int qrdma_mr_dealloc_stag(struct qrdma_dev *dev, struct qrdma_mr *mr)
{
	u64 args[6] = { mr->stag };
	int ret;

	if (!mr->registered)
		return 0;
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_DEALLOC_STAG, args, NULL);
	if (ret) {
		/* BUSY: memory windows are bound to it, the consumer's to undo. */
		if (ret != -EBUSY)
			atomic64_inc(&dev->hw_errors);
		return ret;
	}
	mr->registered = false;
	return 0;
}

/*
 * REG_MR of the user region described by mr->stag, mr->pdn, mr->access,
 * mr->umem, mr->pbles, mr->page_shift; @rereg replaces the index's valid
 * registration in one step (REG_MR.REREG).
 */
static int qrdma_mr_reg_cmd(struct qrdma_dev *dev, struct qrdma_mr *mr, u64 iova, u64 length,
			    u64 fbo, bool rereg)
{
	u64 args[6] = {}, retval = 0;
	int ret;

	args[0] = mr->stag;
	args[1] = mr->pdn | (u64)(mr->access & QRDMA_ACCESS_VALID_MASK) <<
		  QRDMA_MR_ARG1_ACCESS_SHIFT | (u64)mr->pbles.levels << QRDMA_MR_ARG1_LEVELS_SHIFT |
		  (u64)mr->page_shift << QRDMA_MR_ARG1_PAGE_SHIFT |
		  (rereg ? QRDMA_MR_ARG1_REREG : 0);
	args[2] = iova;
	args[3] = length;
	args[4] = qrdma_pble_first(&mr->pbles);
	args[5] = fbo;
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_REG_MR, args, &retval);
	if (ret)
		return ret;
	/* Local work names the MR by its STag (lkey); peers by the wire rkey. */
	mr->ibmr.lkey = mr->stag;
	mr->ibmr.rkey = qrdma_wire_id(dev, retval, mr->stag);
	return 0;
}

/* A first registration, under a new key byte. */
static int qrdma_mr_register(struct qrdma_dev *dev, struct qrdma_mr *mr, u64 iova,
			     u64 length, u64 fbo)
{
	int ret;

	qrdma_mr_new_stag(dev, mr);
	ret = qrdma_mr_reg_cmd(dev, mr, iova, length, fbo, false);
	if (!ret)
		mr->registered = true;
	return ret;
}

/* Pin [start, start + length), choose the page size, fill the PBLEs. */
static int qrdma_mr_pin(struct qrdma_dev *dev, struct qrdma_mr *mr, u64 start, u64 length,
			u64 virt, int access, u64 *fbo)
{
	unsigned long pgsz;
	int ret;

	if (!length || length > dev->caps.max_mr_size)
		return -EINVAL;
	mr->umem = ib_umem_get(&dev->ibdev, start, length, access);
	if (IS_ERR(mr->umem)) {
		ret = PTR_ERR(mr->umem);
		mr->umem = NULL;
		return ret;
	}
	pgsz = ib_umem_find_best_pgsz(mr->umem, dev->caps.page_sizes, virt);
	if (!pgsz) {
		ret = -EINVAL;
		goto err_umem;
	}
	mr->page_shift = __ffs(pgsz);
	*fbo = ib_umem_dma_offset(mr->umem, pgsz);
	ret = qrdma_pble_alloc(dev, &mr->pbles, ib_umem_num_dma_blocks(mr->umem, pgsz), true);
	if (ret)
		goto err_umem;
	qrdma_pble_write_umem(dev, &mr->pbles, mr->umem, pgsz);
	return 0;

err_umem:
	ib_umem_release(mr->umem);
	mr->umem = NULL;
	return ret;
}

static void qrdma_mr_unpin(struct qrdma_dev *dev, struct qrdma_mr *mr)
{
	qrdma_pble_free(dev, &mr->pbles);
	if (mr->umem)
		ib_umem_release(mr->umem);
	mr->umem = NULL;
}

struct ib_mr *qrdma_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length, u64 virt,
				int access, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibpd->device);
	struct qrdma_mr *mr;
	u64 fbo;
	int ret;

	ret = qrdma_mr_check_access(dev, access);
	if (ret)
		return ERR_PTR(ret);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->access = access;
	mr->pdn = to_qpd(ibpd)->pdn;

	ret = qrdma_mr_index_alloc(dev, mr);
	if (ret)
		goto err_free;
	ret = qrdma_mr_pin(dev, mr, start, length, virt, access, &fbo);
	if (ret)
		goto err_index;
	ret = qrdma_mr_register(dev, mr, virt, length, fbo);
	if (ret)
		goto err_unpin;
	return &mr->ibmr;

err_unpin:
	qrdma_mr_unpin(dev, mr);
err_index:
	qrdma_mr_index_free(dev, mr, true);
err_free:
	kfree(mr);
	return ERR_PTR(ret);
}

/*
 * Change translation, access and/or PD in one REG_MR.REREG (interface
 * 0.6): the device swaps the registration at once, so the MR is never
 * without one and a failure leaves the old one intact. The keys stay when
 * only access or PD change (a peer's rkey keeps working, as on other
 * devices); a new translation takes a new key byte, so an rkey handed out
 * for the old memory fails. The caller gets the keys back in
 * ibmr->lkey/rkey (ib_core updates pd, iova, length). Before 0.6: the STag
 * is deallocated and registered again under a new key; if that fails the
 * MR holds no valid STag and only dereg works on it.
 */
static int qrdma_rereg_swap(struct qrdma_dev *dev, struct qrdma_mr *mr, bool repinned,
			    bool new_key, struct qrdma_mr *new, u64 iova, u64 len, u64 fbo)
{
	struct qrdma_mr next = *mr;
	int ret;

	if (repinned) {
		next.umem = new->umem;
		next.pbles = new->pbles;
		next.page_shift = new->page_shift;
	}
	if (new_key)
		next.stag = next.index << QRDMA_STAG_INDEX_SHIFT |
			    (u8)(dev->mr_keys[next.index] + 1);
	next.pdn = new->pdn;
	next.access = new->access;
	ret = qrdma_mr_reg_cmd(dev, &next, iova, len, fbo, true);
	if (ret)
		return ret;
	if (new_key)
		dev->mr_keys[next.index]++;
	if (repinned)
		qrdma_mr_unpin(dev, mr);
	*mr = next;		/* the keys REG_MR set in next.ibmr come along */
	return 0;
}

static int qrdma_rereg_in_two(struct qrdma_dev *dev, struct qrdma_mr *mr, bool repinned,
			      struct qrdma_mr *new, u64 iova, u64 len, u64 fbo)
{
	int ret;

	ret = qrdma_mr_dealloc_stag(dev, mr);
	if (ret)
		return ret;
	if (repinned) {
		qrdma_mr_unpin(dev, mr);
		mr->umem = new->umem;
		mr->pbles = new->pbles;
		mr->page_shift = new->page_shift;
		/* The new translation belongs to the MR now, whatever REG_MR says. */
		new->umem = NULL;
	}
	mr->pdn = new->pdn;
	mr->access = new->access;
	return qrdma_mr_register(dev, mr, iova, len, fbo);
}

struct ib_mr *qrdma_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start, u64 length,
				  u64 virt, int access, struct ib_pd *ibpd,
				  struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibmr->device);
	struct qrdma_mr *mr = to_qmr(ibmr);
	struct qrdma_mr new = { .pdn = mr->pdn, .access = mr->access };
	u64 fbo = 0, iova = ibmr->iova, len = ibmr->length;
	bool swap = (dev->if_version & QRDMA_IF_VERSION_MINOR_MASK) >= 6;
	bool repin = flags & IB_MR_REREG_TRANS;
	int ret;

	if (flags & ~IB_MR_REREG_SUPPORTED)
		return ERR_PTR(-EOPNOTSUPP);
	if (!mr->umem)
		return ERR_PTR(-EINVAL);	/* DMA and fast-register MRs */
	if (flags & IB_MR_REREG_ACCESS) {
		ret = qrdma_mr_check_access(dev, access);
		if (ret)
			return ERR_PTR(ret);
		new.access = access;
	}
	if (flags & IB_MR_REREG_PD)
		new.pdn = to_qpd(ibpd)->pdn;
	/*
	 * Pages pinned for reading only cannot take writes: new write rights
	 * pin the same range again, writable (same keys).
	 */
	if (!repin && ib_access_writable(new.access) && !mr->umem->writable) {
		repin = true;
		start = mr->umem->address;
		length = mr->umem->length;
		virt = ibmr->iova;
	}
	/* Pin the new translation first: on failure the old MR stays intact. */
	if (repin) {
		ret = qrdma_mr_pin(dev, &new, start, length, virt, new.access, &fbo);
		if (ret)
			return ERR_PTR(ret);
		iova = virt;
		len = length;
	} else {
		fbo = ib_umem_dma_offset(mr->umem, 1UL << mr->page_shift);
	}

	if (swap)
		ret = qrdma_rereg_swap(dev, mr, repin, flags & IB_MR_REREG_TRANS, &new, iova, len,
				       fbo);
	else
		ret = qrdma_rereg_in_two(dev, mr, repin, &new, iova, len, fbo);
	if (ret && new.umem)
		qrdma_mr_unpin(dev, &new);
	return ret ? ERR_PTR(ret) : NULL;
}

struct ib_mr *qrdma_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct qrdma_dev *dev = to_qdev(ibpd->device);
	struct qrdma_mr *mr;
	u64 args[6] = {}, retval = 0;
	int ret;

	/* The device's DMA MR is for local access only. */
	if (access & ~IB_ACCESS_OPTIONAL & ~IB_ACCESS_LOCAL_WRITE)
		return ERR_PTR(-EOPNOTSUPP);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->access = access;
	mr->pdn = to_qpd(ibpd)->pdn;
	ret = qrdma_mr_index_alloc(dev, mr);
	if (ret)
		goto err_free;
	qrdma_mr_new_stag(dev, mr);
	args[0] = mr->stag;
	/* No LEVELS, PAGE_SIZE_LOG2, IOVA or LENGTH: all of RAM at its address. */
	args[1] = mr->pdn | (u64)(access & IB_ACCESS_LOCAL_WRITE) << QRDMA_MR_ARG1_ACCESS_SHIFT |
		  QRDMA_MR_ARG1_DMA;
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_REG_MR, args, &retval);
	if (ret)
		goto err_index;
	mr->ibmr.rkey = qrdma_wire_id(dev, retval, mr->stag);
	mr->registered = true;
	return &mr->ibmr;

err_index:
	qrdma_mr_index_free(dev, mr, true);
err_free:
	kfree(mr);
	return ERR_PTR(ret);
}

struct ib_mr *qrdma_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type, u32 max_num_sg)
{
	struct qrdma_dev *dev = to_qdev(ibpd->device);
	struct qrdma_mr *mr;
	u64 args[6] = {}, retval = 0;
	int ret;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > qrdma_max_fast_reg_pages(dev))
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->pdn = to_qpd(ibpd)->pdn;
	mr->max_pages = max_num_sg;
	mr->pages = kvcalloc(max_num_sg, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = qrdma_mr_index_alloc(dev, mr);
	if (ret)
		goto err_pages;
	ret = qrdma_pble_alloc(dev, &mr->pbles, max_num_sg, false);
	if (ret)
		goto err_index;
	qrdma_mr_new_stag(dev, mr);
	/*
	 * Access comes with each fast-register WQE; the STag stays FREE (no
	 * translation) until one arrives.
	 */
	args[0] = mr->stag;
	args[1] = mr->pdn;
	args[2] = max_num_sg;
	args[4] = qrdma_pble_first(&mr->pbles);
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_ALLOC_STAG, args, &retval);
	if (ret)
		goto err_pbles;
	mr->registered = true;
	/*
	 * The wire rkey carries the STag's key byte (hw-spec 18.1), so
	 * ib_update_fast_reg_key keeps both in step. A ULP invalidates by
	 * the rkey: remember which index it names when it is not the STag.
	 */
	mr->ibmr.rkey = qrdma_wire_id(dev, retval, mr->stag);
	if (mr->ibmr.rkey >> QRDMA_STAG_INDEX_SHIFT != mr->index) {
		ret = xa_err(xa_store(&dev->wire_mrs, mr->ibmr.rkey >> QRDMA_STAG_INDEX_SHIFT,
				      mr, GFP_KERNEL));
		if (ret)
			goto err_dealloc;
	}
	return &mr->ibmr;

err_dealloc:
	if (qrdma_mr_dealloc_stag(dev, mr))
		return ERR_PTR(ret);	/* the device may still use the pages: leak them */
err_pbles:
	qrdma_pble_free(dev, &mr->pbles);
err_index:
	qrdma_mr_index_free(dev, mr, true);
err_pages:
	kvfree(mr->pages);
err_free:
	kfree(mr);
	return ERR_PTR(ret);
}

static int qrdma_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct qrdma_mr *mr = to_qmr(ibmr);

	if (mr->npages >= mr->max_pages)
		return -ENOMEM;
	mr->pages[mr->npages++] = addr;
	return 0;
}

/*
 * Build the page list a fast-register WQE will copy into the MR's PBLEs
 * (the PBLEs are not touched here: the MR may still be valid in the device).
 */
int qrdma_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct qrdma_mr *mr = to_qmr(ibmr);
	int n;

	if (!mr->pages ||
	    !(to_qdev(ibmr->device)->caps.page_sizes & ibmr->page_size) ||
	    !is_power_of_2(ibmr->page_size))
		return -EINVAL;
	mr->npages = 0;
	n = ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, qrdma_set_page);
	/*
	 * Pages are page-size aligned and iova is the first byte's address:
	 * its offset in page 0 is the FBO, kept apart because a ULP may
	 * rebase iova afterwards (ib_map_mr_sg_zbva).
	 */
	if (n > 0)
		mr->fbo = ibmr->iova & (ibmr->page_size - 1);
	return n;
}

int qrdma_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibmr->device);
	struct qrdma_mr *mr = to_qmr(ibmr);
	int ret = qrdma_mr_dealloc_stag(dev, mr);

	/* IBTA 10.6.7: an MR with bound windows stays; the MR is still whole. */
	if (ret == -EBUSY)
		return ret;
	/* Gone or not, its wire rkey no longer names it. */
	if (mr->pages && ibmr->rkey >> QRDMA_STAG_INDEX_SHIFT != mr->index)
		xa_erase(&dev->wire_mrs, ibmr->rkey >> QRDMA_STAG_INDEX_SHIFT);
	if (ret) {
		/*
		 * The device may still translate through the PBLEs and pages:
		 * keep them (and the HMC page) until remove resets it.
		 */
		dev_err(&dev->pdev->dev, "MR 0x%x: dealloc failed; pages kept until reset\n",
			mr->stag);
		{
			struct qrdma_qmem qm = { .umem = mr->umem, .pbles = mr->pbles };

			qrdma_retire(dev, &qm, NULL);
		}
		ida_free(&dev->mr_ida, mr->index);
		atomic_dec(&dev->num_mrs);
		kvfree(mr->pages);
		kfree(mr);
		return 0;
	}
	qrdma_mr_unpin(dev, mr);
	kvfree(mr->pages);
	qrdma_mr_index_free(dev, mr, true);
	kfree(mr);
	return 0;
}

/*
 * ib_alloc_mw through uverbs: an unbound window of the PD (ALLOC_STAG with
 * MW_TYPE). Its rkey's key byte is ours now and the consumer's after the
 * first bind, which is why DEALLOC_STAG frees a window by its index.
 */
int qrdma_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibmw->device);
	struct qrdma_mw *mw = to_qmw(ibmw);
	u64 args[6] = {};
	int ret;

	if (!(dev->caps.features & QRDMA_FEATURE_MW))
		return -EOPNOTSUPP;
	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	ret = qrdma_stag_index_alloc(dev, &mw->index);
	if (ret)
		return ret;
	ibmw->rkey = mw->index << QRDMA_STAG_INDEX_SHIFT | ++dev->mr_keys[mw->index];
	args[0] = ibmw->rkey;
	args[1] = to_qpd(ibmw->pd)->pdn |
		  (u64)(ibmw->type == IB_MW_TYPE_1 ? QRDMA_MW_TYPE_1 : QRDMA_MW_TYPE_2) <<
		  QRDMA_MR_ARG1_MW_TYPE_SHIFT;
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_ALLOC_STAG, args, NULL);
	if (ret)
		goto err_index;
	return 0;

err_index:
	qrdma_stag_index_free(dev, mw->index, true);
	return ret;
}

int qrdma_dealloc_mw(struct ib_mw *ibmw)
{
	struct qrdma_dev *dev = to_qdev(ibmw->device);
	struct qrdma_mw *mw = to_qmw(ibmw);
	u64 args[6] = { ibmw->rkey };

	if (qrdma_cqp_exec(dev, QRDMA_CQP_OP_DEALLOC_STAG, args, NULL)) {
		/*
		 * The device may still hold the window: keep its index (and
		 * HMC page) until remove resets the device.
		 */
		atomic64_inc(&dev->hw_errors);
		dev_err(&dev->pdev->dev, "MW 0x%x: dealloc failed; index kept until reset\n",
			ibmw->rkey);
		return 0;
	}
	qrdma_stag_index_free(dev, mw->index, true);
	return 0;
}
