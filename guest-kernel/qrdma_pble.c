// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma.ko: the PBLE manager. PBLEs are HMC objects of 8 bytes holding
 * page addresses. Runs of consecutive PBLE indexes come from a bitmap over
 * the committed PBLE count; the HMC pages behind a run are backed when the
 * run is allocated and released with it. The driver writes PBLEs through
 * the kernel mapping of those pages, before the object that uses them is
 * created: the device reads them on every translation, so a PBLE in use is
 * never changed.
 */
#include "qrdma.h"

int qrdma_pble_init(struct qrdma_dev *dev)
{
	struct qrdma_pble_pool *pool = &dev->pble;

	mutex_init(&pool->lock);
	pool->count = dev->hmc.count[QRDMA_HMC_PBLE];
	pool->used = 0;
	pool->bitmap = NULL;
	if (!pool->count)
		return 0;
	pool->bitmap = kvcalloc(BITS_TO_LONGS(pool->count), sizeof(long), GFP_KERNEL);
	return pool->bitmap ? 0 : -ENOMEM;
}

void qrdma_pble_fini(struct qrdma_dev *dev)
{
	WARN_ON(dev->pble.used);
	kvfree(dev->pble.bitmap);
	dev->pble.bitmap = NULL;
}

/* One run of n consecutive PBLEs, its HMC pages backed. */
static int qrdma_pble_run_alloc(struct qrdma_dev *dev, u32 n, u32 *first)
{
	struct qrdma_pble_pool *pool = &dev->pble;
	unsigned long start;
	int ret;

	if (!n || n > pool->count)
		return -ENOMEM;
	mutex_lock(&pool->lock);
	start = bitmap_find_next_zero_area(pool->bitmap, pool->count, 0, n, 0);
	if (start >= pool->count) {
		mutex_unlock(&pool->lock);
		return -ENOMEM;
	}
	bitmap_set(pool->bitmap, start, n);
	pool->used += n;
	mutex_unlock(&pool->lock);

	ret = qrdma_hmc_get(dev, QRDMA_HMC_PBLE, start, n);
	if (ret) {
		mutex_lock(&pool->lock);
		bitmap_clear(pool->bitmap, start, n);
		pool->used -= n;
		mutex_unlock(&pool->lock);
		return ret;
	}
	*first = start;
	return 0;
}

static void qrdma_pble_run_free(struct qrdma_dev *dev, u32 first, u32 n)
{
	struct qrdma_pble_pool *pool = &dev->pble;

	qrdma_hmc_put(dev, QRDMA_HMC_PBLE, first, n);
	mutex_lock(&pool->lock);
	bitmap_clear(pool->bitmap, first, n);
	pool->used -= n;
	mutex_unlock(&pool->lock);
}

static void qrdma_pble_write(struct qrdma_dev *dev, u32 index, u64 val)
{
	__le64 *p = qrdma_hmc_va(dev, QRDMA_HMC_PBLE, index);

	if (p)
		WRITE_ONCE(*p, cpu_to_le64(val));
}

/*
 * Allocate PBLEs for a list of npages pages: one level when the list fits
 * a leaf run (or when two levels are not allowed: queues), else two levels.
 */
int qrdma_pble_alloc(struct qrdma_dev *dev, struct qrdma_pble_list *pl, u32 npages,
		     bool two_level_ok)
{
	u32 i, n;
	int ret;

	memset(pl, 0, sizeof(*pl));
	if (!npages)
		return -EINVAL;
	if (npages <= QRDMA_PBLE_LEAF_ENTRIES || !two_level_ok) {
		ret = qrdma_pble_run_alloc(dev, npages, &pl->first);
		if (ret)
			return ret;
		pl->npages = npages;
		pl->levels = 1;
		return 0;
	}

	pl->nroots = DIV_ROUND_UP(npages, QRDMA_PBLE_LEAF_ENTRIES);
	pl->leaf = kvcalloc(pl->nroots, sizeof(*pl->leaf), GFP_KERNEL);
	if (!pl->leaf)
		return -ENOMEM;
	ret = qrdma_pble_run_alloc(dev, pl->nroots, &pl->first);
	if (ret)
		goto err_leaf;
	for (i = 0; i < pl->nroots; i++) {
		n = min(npages - i * QRDMA_PBLE_LEAF_ENTRIES, QRDMA_PBLE_LEAF_ENTRIES);
		ret = qrdma_pble_run_alloc(dev, n, &pl->leaf[i]);
		if (ret)
			goto err_runs;
		/* A root holds the first PBLE index of its leaf run. */
		qrdma_pble_write(dev, pl->first + i, pl->leaf[i]);
	}
	pl->npages = npages;
	pl->levels = 2;
	return 0;

err_runs:
	while (i--)
		qrdma_pble_run_free(dev, pl->leaf[i],
				    min(npages - i * QRDMA_PBLE_LEAF_ENTRIES,
					QRDMA_PBLE_LEAF_ENTRIES));
	qrdma_pble_run_free(dev, pl->first, pl->nroots);
err_leaf:
	kvfree(pl->leaf);
	memset(pl, 0, sizeof(*pl));
	return ret;
}

void qrdma_pble_free(struct qrdma_dev *dev, struct qrdma_pble_list *pl)
{
	u32 i;

	if (pl->levels == 1) {
		qrdma_pble_run_free(dev, pl->first, pl->npages);
	} else if (pl->levels == 2) {
		for (i = 0; i < pl->nroots; i++)
			qrdma_pble_run_free(dev, pl->leaf[i],
					    min(pl->npages - i * QRDMA_PBLE_LEAF_ENTRIES,
						QRDMA_PBLE_LEAF_ENTRIES));
		qrdma_pble_run_free(dev, pl->first, pl->nroots);
		kvfree(pl->leaf);
	}
	memset(pl, 0, sizeof(*pl));
}

/* The PBLE index the device is given: the list, or its first root. */
u32 qrdma_pble_first(const struct qrdma_pble_list *pl)
{
	return pl->first;
}

/* Page i of the list is at addr. */
void qrdma_pble_set(struct qrdma_dev *dev, struct qrdma_pble_list *pl, u32 i, u64 addr)
{
	if (WARN_ON_ONCE(i >= pl->npages))
		return;
	if (pl->levels == 1)
		qrdma_pble_write(dev, pl->first + i, addr);
	else
		qrdma_pble_write(dev, pl->leaf[i / QRDMA_PBLE_LEAF_ENTRIES] +
				 i % QRDMA_PBLE_LEAF_ENTRIES, addr);
}

/* Write the pgsz-sized blocks of a pinned region into the list, in order. */
void qrdma_pble_write_umem(struct qrdma_dev *dev, struct qrdma_pble_list *pl,
			   struct ib_umem *umem, unsigned long pgsz)
{
	struct ib_block_iter biter;
	u32 i = 0;

	rdma_umem_for_each_dma_block(umem, &biter, pgsz) {
		if (i >= pl->npages)
			break;
		qrdma_pble_set(dev, pl, i++, rdma_block_iter_dma_address(&biter));
	}
	/* PBLEs are plain memory the device reads: order them before the command. */
	dma_wmb();
}
