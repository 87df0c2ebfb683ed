// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma.ko: the HMC layout. At probe the driver asks the device for its
 * object limits (QUERY_FPM_VAL), chooses how many of each object it will
 * use, and fixes the function-private memory layout (COMMIT_FPM_VAL). The
 * guest pages behind that layout are lent to the device on demand, one SD
 * and page at a time, as objects are created.
 */
#include "qrdma.h"

static const char * const qrdma_hmc_type_names[QRDMA_HMC_NUM_TYPES] = {
	[QRDMA_HMC_QP] = "QP",
	[QRDMA_HMC_CQ] = "CQ",
	[QRDMA_HMC_SRQ] = "SRQ",
	[QRDMA_HMC_MR] = "MR",
	[QRDMA_HMC_AH] = "AH",
	[QRDMA_HMC_PBLE] = "PBLE",
};

int qrdma_hmc_init(struct qrdma_dev *dev)
{
	struct device *d = &dev->pdev->dev;
	struct qrdma_hmc *hmc = &dev->hmc;
	struct qrdma_fpm_buf *buf;
	dma_addr_t buf_dma;
	u64 args[6] = {}, sds;
	int t, ret;

	buf = dma_alloc_coherent(d, PAGE_SIZE, &buf_dma, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	args[0] = buf_dma;

	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_QUERY_FPM_VAL, args, NULL);
	if (ret) {
		dev_err(d, "QUERY_FPM_VAL failed: %d\n", ret);
		goto out;
	}
	hmc->max_sds = le64_to_cpu(buf->head) & QRDMA_FPM_MAX_COUNT_MASK;
	for (t = 0; t < QRDMA_HMC_NUM_TYPES; t++) {
		u64 v = le64_to_cpu(buf->type[t]);

		hmc->max_count[t] = v & QRDMA_FPM_MAX_COUNT_MASK;
		hmc->obj_size_log2[t] = (v & QRDMA_FPM_OBJ_SIZE_LOG2_MASK) >>
					QRDMA_FPM_OBJ_SIZE_LOG2_SHIFT;
		if (hmc->obj_size_log2[t] > PAGE_SHIFT) {
			dev_err(d, "HMC %s objects of 2^%u bytes do not fit a page\n",
				qrdma_hmc_type_names[t], hmc->obj_size_log2[t]);
			ret = -EINVAL;
			goto out;
		}
	}

	/*
	 * Take everything the device offers: the layout is only address
	 * space, and guest pages back it sparsely, as objects appear.
	 */
	memset(buf, 0, sizeof(*buf));
	for (t = 0; t < QRDMA_HMC_NUM_TYPES; t++) {
		hmc->count[t] = hmc->max_count[t];
		buf->type[t] = cpu_to_le64(hmc->count[t]);
	}
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_COMMIT_FPM_VAL, args, &sds);
	if (ret) {
		dev_err(d, "COMMIT_FPM_VAL failed: %d\n", ret);
		goto out;
	}
	hmc->sd_count = sds;
	for (t = 0; t < QRDMA_HMC_NUM_TYPES; t++)
		hmc->base[t] = le64_to_cpu(buf->type[t]);
	if (le64_to_cpu(buf->head) != sds || sds > hmc->max_sds || sds > QRDMA_HMC_MAX_SDS) {
		dev_err(d, "COMMIT_FPM_VAL: %llu SDs in the buffer, %llu returned, %u at most\n",
			le64_to_cpu(buf->head), sds, hmc->max_sds);
		ret = -EIO;
		goto out;
	}
	mutex_init(&hmc->lock);
	hmc->sds = kvcalloc(sds, sizeof(*hmc->sds), GFP_KERNEL);
	if (!hmc->sds) {
		ret = -ENOMEM;
		goto out;
	}
	dev_info(d, "HMC: %u QPs, %u CQs, %u SRQs, %u MRs, %u AHs, %u PBLEs in %u SDs of 2 MB\n",
		 hmc->count[QRDMA_HMC_QP], hmc->count[QRDMA_HMC_CQ], hmc->count[QRDMA_HMC_SRQ],
		 hmc->count[QRDMA_HMC_MR], hmc->count[QRDMA_HMC_AH], hmc->count[QRDMA_HMC_PBLE],
		 hmc->sd_count);
out:
	dma_free_coherent(d, PAGE_SIZE, buf, buf_dma);
	return ret;
}

/* ---- Backing the layout with guest memory, on demand -------------------- */

/*
 * Pages are lent to the device as objects appear and taken back when the
 * last object in them goes. A paged SD holds a 4 KB table of 512 PDs, each
 * naming one 4 KB page; the SD itself is cleared when its last PD is. The
 * PBLE area prefers direct SDs (one 2 MB page each: one SD write instead
 * of 512 PDs, and PBLE runs that never straddle two allocations in the
 * guest); an SD that is already paged, or a 2 MB allocation that fails,
 * falls back to paged.
 */
static bool hmc_direct_pble = true;
module_param(hmc_direct_pble, bool, 0444);
MODULE_PARM_DESC(hmc_direct_pble, "Back the PBLE area with direct 2 MB SDs when possible");

/* Program one SD entry through the CQP (UPDATE_PE_SDS, one inline pair). */
static int qrdma_hmc_write_sd(struct qrdma_dev *dev, u32 sd_idx, u64 entry)
{
	u64 args[6] = {};

	args[0] = 1;
	args[1] = (sd_idx & QRDMA_HMC_SD_CMD_INDEX_MASK) | QRDMA_HMC_SD_CMD_WRITE;
	args[2] = entry;
	return qrdma_cqp_exec(dev, QRDMA_CQP_OP_UPDATE_PE_SDS, args, NULL);
}

static void qrdma_hmc_pdinv(struct qrdma_dev *dev, u32 sd_idx, u32 pd_idx)
{
	/* writel orders the PD table update before the invalidate. */
	qrdma_wr32(dev, QRDMA_REG_HMC_PDINV,
		   (sd_idx & QRDMA_HMC_PDINV_SD_INDEX_MASK) |
		   (pd_idx << QRDMA_HMC_PDINV_PD_INDEX_SHIFT & QRDMA_HMC_PDINV_PD_INDEX_MASK));
}

static int qrdma_hmc_sd_direct(struct qrdma_dev *dev, u32 sd_idx)
{
	struct qrdma_hmc_sd *sd = &dev->hmc.sds[sd_idx];
	struct device *d = &dev->pdev->dev;
	int ret;

	sd->direct_va = dma_alloc_coherent(d, QRDMA_HMC_SD_SIZE, &sd->direct_dma,
					   GFP_KERNEL | __GFP_NOWARN);
	if (!sd->direct_va)
		return -ENOMEM;
	if (!IS_ALIGNED(sd->direct_dma, QRDMA_HMC_SD_SIZE)) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = qrdma_hmc_write_sd(dev, sd_idx, (sd->direct_dma & QRDMA_HMC_SD_ADDR_MASK) |
				 QRDMA_HMC_SD_TYPE_DIRECT | QRDMA_HMC_SD_VALID);
	if (ret)
		goto err_free;
	sd->kind = QRDMA_HMC_SD_DIRECT;
	sd->refs = 0;
	dev->hmc.direct_sds++;
	dev->hmc.backed_pages += QRDMA_HMC_SD_SIZE / QRDMA_HMC_PD_SIZE;
	return 0;

err_free:
	dma_free_coherent(d, QRDMA_HMC_SD_SIZE, sd->direct_va, sd->direct_dma);
	sd->direct_va = NULL;
	return ret;
}

static int qrdma_hmc_sd_paged(struct qrdma_dev *dev, u32 sd_idx)
{
	struct qrdma_hmc_sd *sd = &dev->hmc.sds[sd_idx];
	struct device *d = &dev->pdev->dev;
	int ret;

	sd->pages = kvcalloc(QRDMA_HMC_PDS_PER_SD, sizeof(*sd->pages), GFP_KERNEL);
	if (!sd->pages)
		return -ENOMEM;
	sd->pd_table = dma_alloc_coherent(d, QRDMA_HMC_PD_SIZE, &sd->pd_table_dma, GFP_KERNEL);
	if (!sd->pd_table) {
		ret = -ENOMEM;
		goto err_pages;
	}
	ret = qrdma_hmc_write_sd(dev, sd_idx, (sd->pd_table_dma & QRDMA_HMC_SD_ADDR_MASK) |
				 (u64)QRDMA_HMC_PDS_PER_SD << QRDMA_HMC_SD_BP_COUNT_SHIFT |
				 QRDMA_HMC_SD_VALID);
	if (ret)
		goto err_table;
	sd->kind = QRDMA_HMC_SD_PAGED;
	sd->refs = 0;
	return 0;

err_table:
	dma_free_coherent(d, QRDMA_HMC_PD_SIZE, sd->pd_table, sd->pd_table_dma);
	sd->pd_table = NULL;
err_pages:
	kvfree(sd->pages);
	sd->pages = NULL;
	return ret;
}

/* Free an SD's memory; the device no longer uses it (cleared or reset). */
static void qrdma_hmc_sd_release(struct qrdma_dev *dev, struct qrdma_hmc_sd *sd)
{
	struct device *d = &dev->pdev->dev;
	u32 i;

	if (sd->kind == QRDMA_HMC_SD_DIRECT) {
		dma_free_coherent(d, QRDMA_HMC_SD_SIZE, sd->direct_va, sd->direct_dma);
		dev->hmc.direct_sds--;
		dev->hmc.backed_pages -= QRDMA_HMC_SD_SIZE / QRDMA_HMC_PD_SIZE;
	} else if (sd->kind == QRDMA_HMC_SD_PAGED) {
		for (i = 0; i < QRDMA_HMC_PDS_PER_SD; i++) {
			if (!sd->pages[i].va)
				continue;
			dma_free_coherent(d, QRDMA_HMC_PD_SIZE, sd->pages[i].va, sd->pages[i].dma);
			dev->hmc.backed_pages--;
		}
		dma_free_coherent(d, QRDMA_HMC_PD_SIZE, sd->pd_table, sd->pd_table_dma);
		kvfree(sd->pages);
	}
	memset(sd, 0, sizeof(*sd));
}

/* The SD has nothing left in it: clear it in the device, then free it. */
static void qrdma_hmc_sd_retire(struct qrdma_dev *dev, u32 sd_idx)
{
	struct qrdma_hmc_sd *sd = &dev->hmc.sds[sd_idx];

	/*
	 * If the device cannot be told, it may still use the memory: keep it
	 * until remove resets the device (qrdma_hmc_free).
	 */
	if (qrdma_hmc_write_sd(dev, sd_idx, 0)) {
		atomic64_inc(&dev->hw_errors);
		return;
	}
	qrdma_hmc_sd_release(dev, sd);
}

/* Take a reference on FPM page (sd_idx, pd_idx), backing it if needed. */
static int qrdma_hmc_page_get(struct qrdma_dev *dev, u32 sd_idx, u32 pd_idx, bool pble)
{
	struct qrdma_hmc_sd *sd = &dev->hmc.sds[sd_idx];
	struct qrdma_hmc_page *pg;
	int ret;

	if (sd->kind == QRDMA_HMC_SD_NONE) {
		ret = -ENOMEM;
		if (pble && hmc_direct_pble)
			ret = qrdma_hmc_sd_direct(dev, sd_idx);
		if (ret)
			ret = qrdma_hmc_sd_paged(dev, sd_idx);
		if (ret)
			return ret;
	}
	if (sd->kind == QRDMA_HMC_SD_DIRECT) {
		sd->refs++;
		return 0;
	}

	pg = &sd->pages[pd_idx];
	if (!pg->va) {
		pg->va = dma_alloc_coherent(&dev->pdev->dev, QRDMA_HMC_PD_SIZE, &pg->dma,
					    GFP_KERNEL);
		if (!pg->va) {
			ret = -ENOMEM;
			goto err_sd;
		}
		WRITE_ONCE(sd->pd_table[pd_idx],
			   cpu_to_le64((pg->dma & QRDMA_HMC_PD_ADDR_MASK) | QRDMA_HMC_PD_VALID));
		/* The device may cache the PD as invalid: drop that entry. */
		qrdma_hmc_pdinv(dev, sd_idx, pd_idx);
		sd->refs++;
		dev->hmc.backed_pages++;
	}
	pg->refs++;
	return 0;

err_sd:
	if (!sd->refs)
		qrdma_hmc_sd_retire(dev, sd_idx);
	return ret;
}

static void qrdma_hmc_page_put(struct qrdma_dev *dev, u32 sd_idx, u32 pd_idx)
{
	struct qrdma_hmc_sd *sd = &dev->hmc.sds[sd_idx];
	struct qrdma_hmc_page *pg;

	if (WARN_ON_ONCE(sd->kind == QRDMA_HMC_SD_NONE))
		return;
	if (sd->kind == QRDMA_HMC_SD_DIRECT) {
		if (!--sd->refs)
			qrdma_hmc_sd_retire(dev, sd_idx);
		return;
	}
	pg = &sd->pages[pd_idx];
	if (WARN_ON_ONCE(!pg->refs) || --pg->refs)
		return;
	WRITE_ONCE(sd->pd_table[pd_idx], 0);
	qrdma_hmc_pdinv(dev, sd_idx, pd_idx);
	dma_free_coherent(&dev->pdev->dev, QRDMA_HMC_PD_SIZE, pg->va, pg->dma);
	pg->va = NULL;
	dev->hmc.backed_pages--;
	if (!--sd->refs)
		qrdma_hmc_sd_retire(dev, sd_idx);
}

/* FPM page numbers (4 KB units) holding objects first..first+count-1. */
static void qrdma_hmc_span(struct qrdma_dev *dev, enum qrdma_hmc_type type, u32 first,
			   u32 count, u64 *pg_first, u64 *pg_last)
{
	struct qrdma_hmc *hmc = &dev->hmc;
	u64 start = hmc->base[type] + ((u64)first << hmc->obj_size_log2[type]);
	u64 end = hmc->base[type] + ((u64)(first + count) << hmc->obj_size_log2[type]) - 1;

	*pg_first = start / QRDMA_HMC_PD_SIZE;
	*pg_last = end / QRDMA_HMC_PD_SIZE;
}

/*
 * Make sure the FPM pages holding objects first..first+count-1 of a type
 * are backed, taking one reference on each. Sleeps.
 */
int qrdma_hmc_get(struct qrdma_dev *dev, enum qrdma_hmc_type type, u32 first, u32 count)
{
	struct qrdma_hmc *hmc = &dev->hmc;
	u64 pg, pg_first, pg_last;
	int ret = 0;

	if (!count || first >= hmc->count[type] || count > hmc->count[type] - first)
		return -EINVAL;
	qrdma_hmc_span(dev, type, first, count, &pg_first, &pg_last);
	if (pg_last / QRDMA_HMC_PDS_PER_SD >= hmc->sd_count)
		return -EINVAL;

	mutex_lock(&hmc->lock);
	for (pg = pg_first; pg <= pg_last; pg++) {
		ret = qrdma_hmc_page_get(dev, pg / QRDMA_HMC_PDS_PER_SD,
					 pg % QRDMA_HMC_PDS_PER_SD, type == QRDMA_HMC_PBLE);
		if (ret)
			break;
	}
	if (ret)
		while (pg-- > pg_first)
			qrdma_hmc_page_put(dev, pg / QRDMA_HMC_PDS_PER_SD,
					   pg % QRDMA_HMC_PDS_PER_SD);
	mutex_unlock(&hmc->lock);
	return ret;
}

/* Drop the references qrdma_hmc_get() took; the objects are destroyed. */
void qrdma_hmc_put(struct qrdma_dev *dev, enum qrdma_hmc_type type, u32 first, u32 count)
{
	struct qrdma_hmc *hmc = &dev->hmc;
	u64 pg, pg_first, pg_last;

	/* After remove's reset everything was freed at once (qrdma_hmc_free). */
	if (!count || !hmc->sds)
		return;
	qrdma_hmc_span(dev, type, first, count, &pg_first, &pg_last);
	mutex_lock(&hmc->lock);
	for (pg = pg_first; pg <= pg_last; pg++)
		qrdma_hmc_page_put(dev, pg / QRDMA_HMC_PDS_PER_SD, pg % QRDMA_HMC_PDS_PER_SD);
	mutex_unlock(&hmc->lock);
}

/*
 * The kernel mapping of object index of a type, whose page the caller
 * holds a reference on (so the SD and page cannot change under it).
 */
void *qrdma_hmc_va(struct qrdma_dev *dev, enum qrdma_hmc_type type, u32 index)
{
	struct qrdma_hmc *hmc = &dev->hmc;
	u64 fpm = hmc->base[type] + ((u64)index << hmc->obj_size_log2[type]);
	struct qrdma_hmc_sd *sd = &hmc->sds[fpm / QRDMA_HMC_SD_SIZE];
	u32 off = fpm % QRDMA_HMC_SD_SIZE;

	if (sd->kind == QRDMA_HMC_SD_DIRECT)
		return sd->direct_va + off;
	if (WARN_ON_ONCE(sd->kind != QRDMA_HMC_SD_PAGED ||
			 !sd->pages[off / QRDMA_HMC_PD_SIZE].va))
		return NULL;
	return sd->pages[off / QRDMA_HMC_PD_SIZE].va + off % QRDMA_HMC_PD_SIZE;
}

/* Free every backing page. Only after the device reset: it uses none now. */
void qrdma_hmc_free(struct qrdma_dev *dev)
{
	struct qrdma_hmc *hmc = &dev->hmc;
	u32 i;

	if (!hmc->sds)
		return;
	for (i = 0; i < hmc->sd_count; i++)
		qrdma_hmc_sd_release(dev, &hmc->sds[i]);
	WARN_ON(hmc->backed_pages || hmc->direct_sds);
	kvfree(hmc->sds);
	hmc->sds = NULL;
}
