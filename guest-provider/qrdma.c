// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libqrdma: the rdma-core provider for qrdma. Matched by PCI ID (the
 * kernel driver keeps RDMA_DRIVER_UNKNOWN), it opens contexts, maps the
 * context's doorbell page and implements the device, port and PD verbs;
 * qrdma_verbs.c has the other objects, qrdma_dp.c the data path.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <util/util.h>

#include "qrdma.h"

_Static_assert(sizeof(struct qrdma_get_context_resp) ==
	       sizeof(struct ib_uverbs_get_context_resp) + sizeof(struct qrdma_alloc_ucontext_resp),
	       "driver data must follow the core response without padding");
_Static_assert(sizeof(struct qrdma_alloc_pd_resp_cmd) ==
	       sizeof(struct ib_uverbs_alloc_pd_resp) + sizeof(struct qrdma_alloc_pd_resp),
	       "driver data must follow the core response without padding");

static int qrdma_query_device_ex(struct ibv_context *context,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(context, input, attr, attr_size, &resp, &resp_size);
	if (ret)
		return ret;

	/* The kernel reports fw_ver as major 63:32, minor 31:16, patch 15:0. */
	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver), "%u.%u.%u",
		 (unsigned int)(fw >> 32), (unsigned int)(fw >> 16) & 0xffff,
		 (unsigned int)fw & 0xffff);
	return 0;
}

static int qrdma_query_port(struct ibv_context *context, uint8_t port,
			    struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *qrdma_alloc_pd(struct ibv_context *context)
{
	struct qrdma_alloc_pd_resp_cmd resp = {};
	struct ibv_alloc_pd cmd = {};
	struct qrdma_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_alloc_pd(context, &pd->ibv_pd, &cmd, sizeof(cmd), &resp.ibv_resp,
			       sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	pd->pdn = resp.drv.pdn;
	return &pd->ibv_pd;
}

static int qrdma_dealloc_pd(struct ibv_pd *ibpd)
{
	int ret;

	ret = ibv_cmd_dealloc_pd(ibpd);
	if (ret)
		return ret;
	free(to_qpd(ibpd));
	return 0;
}

static void qrdma_free_context(struct ibv_context *ibctx)
{
	struct qrdma_context *ctx = to_qctx(ibctx);
	unsigned int i;

	for (i = 0; i < QRDMA_QP_TABLE_LEAVES; i++)
		free(ctx->qp_table[i]);
	pthread_mutex_destroy(&ctx->qp_table_mutex);
	munmap(ctx->db_page, QRDMA_DB_PAGE_SIZE);
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

static const struct verbs_context_ops qrdma_context_ops = {
	.alloc_mw = qrdma_alloc_mw,
	.alloc_pd = qrdma_alloc_pd,
	.attach_mcast = qrdma_attach_mcast,
	.bind_mw = qrdma_bind_mw,
	.create_ah = qrdma_create_ah,
	.create_cq = qrdma_create_cq,
	.create_cq_ex = qrdma_create_cq_ex,
	.create_qp = qrdma_create_qp,
	.create_qp_ex = qrdma_create_qp_ex,
	.create_srq = qrdma_create_srq,
	.dealloc_mw = qrdma_dealloc_mw,
	.dealloc_pd = qrdma_dealloc_pd,
	.dereg_mr = qrdma_dereg_mr,
	.destroy_ah = qrdma_destroy_ah,
	.destroy_cq = qrdma_destroy_cq,
	.destroy_qp = qrdma_destroy_qp,
	.destroy_srq = qrdma_destroy_srq,
	.detach_mcast = qrdma_detach_mcast,
	.free_context = qrdma_free_context,
	.modify_qp = qrdma_modify_qp,
	.modify_srq = qrdma_modify_srq,
	.poll_cq = qrdma_poll_cq,
	.post_recv = qrdma_post_recv,
	.post_send = qrdma_post_send,
	.post_srq_recv = qrdma_post_srq_recv,
	.query_device_ex = qrdma_query_device_ex,
	.query_port = qrdma_query_port,
	.query_qp = qrdma_query_qp,
	.query_srq = qrdma_query_srq,
	.reg_dmabuf_mr = qrdma_reg_dmabuf_mr,
	.reg_mr = qrdma_reg_mr,
	.req_notify_cq = qrdma_req_notify_cq,
	.rereg_mr = qrdma_rereg_mr,
	.resize_cq = qrdma_resize_cq,
};

/* Limits the object verbs check requests against, read once per context. */
static int qrdma_read_limits(struct qrdma_context *ctx)
{
	struct ibv_device_attr_ex attr;
	int ret;

	ret = ibv_cmd_query_device_any(&ctx->ibv_ctx.context, NULL, &attr, sizeof(attr.orig_attr),
				       NULL, NULL);
	if (ret)
		return ret;
	ctx->max_cqe = attr.orig_attr.max_cqe;
	ctx->max_qp_wr = attr.orig_attr.max_qp_wr;
	ctx->max_srq_wr = attr.orig_attr.max_srq_wr;
	ctx->max_srq_sge = attr.orig_attr.max_srq_sge;
	return 0;
}

static struct verbs_context *qrdma_alloc_context(struct ibv_device *ibdev, int cmd_fd,
						 void *private_data)
{
	struct qrdma_get_context_resp resp = {};
	struct ibv_get_context cmd = {};
	struct qrdma_context *ctx;
	uint32_t major;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx, RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	if (ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd), &resp.ibv_resp, sizeof(resp)))
		goto err_free;

	major = (resp.drv.if_version & QRDMA_IF_VERSION_MAJOR_MASK) >> QRDMA_IF_VERSION_MAJOR_SHIFT;
	if (major != QRDMA_IF_VERSION_MAJOR) {
		verbs_err(&ctx->ibv_ctx, "qrdma: device interface %u.%u, provider speaks %u.x\n",
			  major, resp.drv.if_version & QRDMA_IF_VERSION_MINOR_MASK,
			  QRDMA_IF_VERSION_MAJOR);
		errno = EOPNOTSUPP;
		goto err_free;
	}
	ctx->if_version = resp.drv.if_version;
	ctx->db_page_index = resp.drv.db_page_index;
	ctx->max_inline_data = resp.drv.max_inline_data;
	ctx->max_send_sge = resp.drv.max_send_sge;
	ctx->max_recv_sge = resp.drv.max_recv_sge;
	errno = qrdma_read_limits(ctx);
	if (errno) {
		verbs_err(&ctx->ibv_ctx, "qrdma: cannot query the device: %s\n", strerror(errno));
		goto err_free;
	}

	pthread_mutex_init(&ctx->qp_table_mutex, NULL);

	/* Doorbells are only ever written: map the page write-only. */
	ctx->db_page = mmap(NULL, QRDMA_DB_PAGE_SIZE, PROT_WRITE, MAP_SHARED, cmd_fd,
			    resp.drv.db_mmap_offset);
	if (ctx->db_page == MAP_FAILED) {
		verbs_err(&ctx->ibv_ctx, "qrdma: cannot map doorbell page %u: %s\n",
			  ctx->db_page_index, strerror(errno));
		pthread_mutex_destroy(&ctx->qp_table_mutex);
		goto err_free;
	}

	verbs_set_ops(&ctx->ibv_ctx, &qrdma_context_ops);
	return &ctx->ibv_ctx;

err_free:
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	return NULL;
}

static struct verbs_device *qrdma_device_alloc(struct verbs_sysfs_dev *sysfs_dev)
{
	struct qrdma_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->ibv_dev;
}

static void qrdma_device_free(struct verbs_device *vdev)
{
	free(container_of(vdev, struct qrdma_device, ibv_dev));
}

static const struct verbs_match_ent qrdma_match_table[] = {
	VERBS_PCI_MATCH(QRDMA_PCI_VENDOR_ID, QRDMA_PCI_DEVICE_ID, NULL),
	{},
};

static const struct verbs_device_ops qrdma_dev_ops = {
	.name = "qrdma",
	.match_min_abi_version = QRDMA_ABI_VERSION,
	.match_max_abi_version = QRDMA_ABI_VERSION,
	.match_table = qrdma_match_table,
	.alloc_device = qrdma_device_alloc,
	.uninit_device = qrdma_device_free,
	.alloc_context = qrdma_alloc_context,
};

PROVIDER_DRIVER(qrdma, qrdma_dev_ops);
