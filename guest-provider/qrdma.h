/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libqrdma: provider state. One qrdma_context per ibv_context, holding the
 * doorbell page this process was given by the kernel.
 */
#ifndef QRDMA_PROVIDER_H
#define QRDMA_PROVIDER_H

#include <stdint.h>
#include <infiniband/driver.h>

#include "qrdma/qrdma_hw.h"
#include "qrdma/qrdma_abi.h"

struct qrdma_device {
	struct verbs_device ibv_dev;
};

struct qrdma_context {
	struct verbs_context ibv_ctx;
	void *db_page;			/* mmapped, uncached; QRDMA_DB_PAGE_SIZE */
	uint32_t db_page_index;
	uint32_t if_version;
	uint32_t max_inline_data;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
};

struct qrdma_pd {
	struct ibv_pd ibv_pd;
	uint32_t pdn;
};

/* Kernel command and response layouts: the core part, then ours. */
struct qrdma_get_context_resp {
	struct ib_uverbs_get_context_resp ibv_resp;
	struct qrdma_alloc_ucontext_resp drv;
};

struct qrdma_alloc_pd_resp_cmd {
	struct ib_uverbs_alloc_pd_resp ibv_resp;
	struct qrdma_alloc_pd_resp drv;
};

static inline struct qrdma_context *to_qctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct qrdma_context, ibv_ctx.context);
}

static inline struct qrdma_pd *to_qpd(struct ibv_pd *ibpd)
{
	return container_of(ibpd, struct qrdma_pd, ibv_pd);
}

#endif /* QRDMA_PROVIDER_H */
