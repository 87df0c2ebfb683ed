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
	if (le64_to_cpu(buf->head) != sds || sds > hmc->max_sds) {
		dev_err(d, "COMMIT_FPM_VAL: %llu SDs in the buffer, %llu returned, %u at most\n",
			le64_to_cpu(buf->head), sds, hmc->max_sds);
		ret = -EIO;
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
