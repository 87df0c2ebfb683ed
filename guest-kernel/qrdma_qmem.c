// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma.ko: what the object verbs share. Queue memory (kernel rings in
 * DMA-coherent memory, user rings pinned and listed in PBLEs), 64-byte
 * shadow areas, per-type object ID tables that event handlers look
 * objects up in, and the "zombie" list: memory a failed destroy left with
 * the device, freed only once remove has reset it.
 */
#include "qrdma.h"

int qrdma_qmem_kernel(struct qrdma_dev *dev, struct qrdma_qmem *qm, size_t size)
{
	memset(qm, 0, sizeof(*qm));
	if (!size || size > QRDMA_QUEUE_MAX_BYTES)
		return -EINVAL;
	/* Coherent allocations are page aligned: the 4 KB the device needs. */
	qm->size = PAGE_ALIGN(size);
	qm->va = dma_alloc_coherent(&dev->pdev->dev, qm->size, &qm->dma, GFP_KERNEL);
	if (!qm->va)
		return -ENOMEM;
	return 0;
}

/* Pin a user ring (page aligned, as the ABI says) and list its pages. */
int qrdma_qmem_user(struct qrdma_dev *dev, struct qrdma_qmem *qm, u64 va, size_t size)
{
	int ret;

	memset(qm, 0, sizeof(*qm));
	if (!size || size > QRDMA_QUEUE_MAX_BYTES || !PAGE_ALIGNED(va))
		return -EINVAL;
	qm->size = size;
	qm->umem = ib_umem_get(&dev->ibdev, va, size, IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(qm->umem)) {
		ret = PTR_ERR(qm->umem);
		qm->umem = NULL;
		return ret;
	}
	ret = qrdma_pble_alloc(dev, &qm->pbles, ib_umem_num_dma_blocks(qm->umem, PAGE_SIZE),
			       false);
	if (ret) {
		ib_umem_release(qm->umem);
		qm->umem = NULL;
		return ret;
	}
	qrdma_pble_write_umem(dev, &qm->pbles, qm->umem, PAGE_SIZE);
	return 0;
}

/* The ring argument of a create command: address, or first PBLE (VIRTMAP). */
u64 qrdma_qmem_addr(const struct qrdma_qmem *qm)
{
	return qm->umem ? qrdma_pble_first(&qm->pbles) : qm->dma;
}

void qrdma_qmem_free(struct qrdma_dev *dev, struct qrdma_qmem *qm)
{
	if (qm->va)
		dma_free_coherent(&dev->pdev->dev, qm->size, qm->va, qm->dma);
	qrdma_pble_free(dev, &qm->pbles);
	if (qm->umem)
		ib_umem_release(qm->umem);
	memset(qm, 0, sizeof(*qm));
}

int qrdma_shadow_kernel(struct qrdma_dev *dev, struct qrdma_shadow *sh)
{
	memset(sh, 0, sizeof(*sh));
	sh->va = dma_pool_zalloc(dev->ctl_pool, GFP_KERNEL, &sh->dma);
	return sh->va ? 0 : -ENOMEM;
}

/* A user shadow area: 64-byte aligned, so it never crosses a page. */
int qrdma_shadow_user(struct qrdma_dev *dev, struct qrdma_shadow *sh, u64 va)
{
	struct ib_block_iter biter;
	int ret;

	memset(sh, 0, sizeof(*sh));
	if (!va || !IS_ALIGNED(va, 64) ||
	    (va & PAGE_MASK) != ((va + sizeof(struct qrdma_cq_shadow) - 1) & PAGE_MASK))
		return -EINVAL;
	sh->umem = ib_umem_get(&dev->ibdev, va, sizeof(struct qrdma_cq_shadow),
			       IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(sh->umem)) {
		ret = PTR_ERR(sh->umem);
		sh->umem = NULL;
		return ret;
	}
	rdma_umem_for_each_dma_block(sh->umem, &biter, PAGE_SIZE) {
		sh->dma = rdma_block_iter_dma_address(&biter) + (va & ~PAGE_MASK);
		break;
	}
	return 0;
}

void qrdma_shadow_free(struct qrdma_dev *dev, struct qrdma_shadow *sh)
{
	if (sh->va)
		dma_pool_free(dev->ctl_pool, sh->va, sh->dma);
	if (sh->umem)
		ib_umem_release(sh->umem);
	memset(sh, 0, sizeof(*sh));
}

/*
 * A destroy failed: the device may still write this memory, so it must not
 * go back to the kernel (or, pinned, to the process) before the reset at
 * remove. The caller's structs are emptied.
 */
void qrdma_retire(struct qrdma_dev *dev, struct qrdma_qmem *qm, struct qrdma_shadow *sh)
{
	struct qrdma_zombie *z = kzalloc(sizeof(*z), GFP_KERNEL | __GFP_NOFAIL);

	if (qm) {
		z->qmem = *qm;
		memset(qm, 0, sizeof(*qm));
	}
	if (sh) {
		z->shadow = *sh;
		memset(sh, 0, sizeof(*sh));
	}
	spin_lock(&dev->zombie_lock);
	list_add_tail(&z->list, &dev->zombies);
	spin_unlock(&dev->zombie_lock);
}

/* After the device reset. */
void qrdma_zombies_free(struct qrdma_dev *dev)
{
	struct qrdma_zombie *z, *tmp;

	list_for_each_entry_safe(z, tmp, &dev->zombies, list) {
		qrdma_qmem_free(dev, &z->qmem);
		qrdma_shadow_free(dev, &z->shadow);
		list_del(&z->list);
		kfree(z);
	}
}

/* ---- Object tables ----------------------------------------------------- */

void qrdma_obj_table_init(struct qrdma_obj_table *t, u32 min, u32 max)
{
	xa_init_flags(&t->xa, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ);
	t->min = min;
	t->max = max;
	atomic_set(&t->live, 0);
}

/* Reserve an ID (the slot reads NULL until published). */
int qrdma_obj_id_alloc(struct qrdma_obj_table *t, u32 *id)
{
	int ret;

	if (t->max < t->min)
		return -ENOMEM;
	ret = xa_alloc_irq(&t->xa, id, NULL, XA_LIMIT(t->min, t->max), GFP_KERNEL);
	/* Every ID in use: ib_core and libibverbs report that as ENOMEM. */
	if (ret == -EBUSY)
		return -ENOMEM;
	return ret;
}

/* Reserve one fixed ID outside the allocator's range (QP1, the GSI QP). */
int qrdma_obj_id_claim(struct qrdma_obj_table *t, u32 id)
{
	/* Inserting NULL reserves the index; -EBUSY if it is taken. */
	return xa_insert_irq(&t->xa, id, NULL, GFP_KERNEL);
}

/* Free an ID that was reserved but never published. */
static void qrdma_obj_id_free(struct qrdma_obj_table *t, u32 id)
{
	xa_erase_irq(&t->xa, id);
}

/* The object exists in the device: events may find it from now on. */
void qrdma_obj_publish(struct qrdma_obj_table *t, u32 id, void *obj, struct qrdma_obj_ref *ref)
{
	refcount_set(&ref->refs, 1);
	init_completion(&ref->done);
	xa_store_irq(&t->xa, id, obj, GFP_KERNEL);
	atomic_inc(&t->live);
}

/*
 * Hide the object from event handlers and wait for those running: after
 * this, nothing else holds it. Frees the ID too.
 */
void qrdma_obj_unpublish(struct qrdma_obj_table *t, u32 id, struct qrdma_obj_ref *ref)
{
	qrdma_obj_id_free(t, id);
	qrdma_obj_put(ref);
	wait_for_completion(&ref->done);
	atomic_dec(&t->live);
}

/*
 * Look an object up from interrupt context and take a reference on it;
 * ref_off is the offset of its struct qrdma_obj_ref.
 */
void *qrdma_obj_get(struct qrdma_obj_table *t, u32 id, size_t ref_off)
{
	unsigned long flags;
	void *obj;

	xa_lock_irqsave(&t->xa, flags);
	obj = xa_load(&t->xa, id);
	if (obj && !refcount_inc_not_zero(&((struct qrdma_obj_ref *)(obj + ref_off))->refs))
		obj = NULL;
	xa_unlock_irqrestore(&t->xa, flags);
	return obj;
}

void qrdma_obj_put(struct qrdma_obj_ref *ref)
{
	if (refcount_dec_and_test(&ref->refs))
		complete(&ref->done);
}

/* ---- Setup and teardown of the shared state ----------------------------- */

static u32 qrdma_limit(u32 cap, u32 committed)
{
	u32 n = min(cap, committed);

	/* IDs are 24 bits wide in every command. */
	return min_t(u32, n, QRDMA_OBJ_ID_MASK + 1);
}

int qrdma_res_init(struct qrdma_dev *dev)
{
	struct qrdma_hmc *hmc = &dev->hmc;
	const struct qrdma_caps *c = &dev->caps;
	u32 n;
	int ret;

	spin_lock_init(&dev->zombie_lock);
	INIT_LIST_HEAD(&dev->zombies);
	atomic64_set(&dev->hw_errors, 0);
	ida_init(&dev->mr_ida);
	ida_init(&dev->ah_ida);
	xa_init(&dev->wire_mrs);

	/* A table whose max is below its min is empty. */
	n = qrdma_limit(c->max_qp, hmc->count[QRDMA_HMC_QP]);
	qrdma_obj_table_init(&dev->qps, QRDMA_QP_RESERVED, n > QRDMA_QP_RESERVED ? n - 1 : 0);
	n = qrdma_limit(c->max_cq, hmc->count[QRDMA_HMC_CQ]);
	qrdma_obj_table_init(&dev->cqs, n ? 0 : 1, n ? n - 1 : 0);
	n = qrdma_limit(c->max_srq, hmc->count[QRDMA_HMC_SRQ]);
	qrdma_obj_table_init(&dev->srqs, n ? 0 : 1, n ? n - 1 : 0);
	/* MR index 0 stays unused so that no STag is 0. */
	dev->mr_max = qrdma_limit(c->max_mr, hmc->count[QRDMA_HMC_MR]);
	dev->mr_max = dev->mr_max ? dev->mr_max - 1 : 0;
	dev->ah_max = qrdma_limit(c->max_ah, hmc->count[QRDMA_HMC_AH]);
	dev->ah_max = dev->ah_max ? dev->ah_max - 1 : 0;
	atomic_set(&dev->num_mrs, 0);
	atomic_set(&dev->num_ahs, 0);

	dev->mr_keys = kvzalloc(dev->mr_max + 1, GFP_KERNEL);
	if (!dev->mr_keys)
		return -ENOMEM;
	/* 128-byte, 64-byte aligned blocks: shadow areas, AVs, QP info buffers. */
	dev->ctl_pool = dma_pool_create("qrdma-ctl", &dev->pdev->dev, QRDMA_CTL_BLOCK, 64, 0);
	if (!dev->ctl_pool) {
		ret = -ENOMEM;
		goto err_keys;
	}
	dev->wq = alloc_ordered_workqueue("qrdma-%s", 0, pci_name(dev->pdev));
	if (!dev->wq) {
		ret = -ENOMEM;
		goto err_pool;
	}
	ret = qrdma_pble_init(dev);
	if (ret)
		goto err_wq;
	ret = qrdma_ah_window_init(dev);
	if (ret)
		goto err_pble;
	return 0;

err_pble:
	qrdma_pble_fini(dev);
err_wq:
	destroy_workqueue(dev->wq);
	dev->wq = NULL;
err_pool:
	dma_pool_destroy(dev->ctl_pool);
	dev->ctl_pool = NULL;
err_keys:
	kvfree(dev->mr_keys);
	dev->mr_keys = NULL;
	return ret;
}

/*
 * After the device reset (it uses none of this memory any more) and after
 * ib_core has destroyed every object.
 */
void qrdma_res_fini(struct qrdma_dev *dev)
{
	qrdma_zombies_free(dev);
	if (dev->wq)
		destroy_workqueue(dev->wq);
	dev->wq = NULL;
	WARN_ON(!xa_empty(&dev->qps.xa) || !xa_empty(&dev->cqs.xa) || !xa_empty(&dev->srqs.xa));
	xa_destroy(&dev->qps.xa);
	xa_destroy(&dev->cqs.xa);
	xa_destroy(&dev->srqs.xa);
	ida_destroy(&dev->mr_ida);
	ida_destroy(&dev->ah_ida);
	xa_destroy(&dev->wire_mrs);
	qrdma_pble_fini(dev);
	dma_pool_destroy(dev->ctl_pool);
	dev->ctl_pool = NULL;
	kvfree(dev->mr_keys);
	dev->mr_keys = NULL;
}
