/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * qrdma uverbs ABI: the driver-specific data that travels in udata between
 * libqrdma (rdma-core provider) and qrdma.ko. Bump QRDMA_ABI_VERSION on any
 * incompatible change; the provider refuses a kernel outside its range.
 */
#ifndef QRDMA_ABI_H
#define QRDMA_ABI_H

#include <linux/types.h>

#define QRDMA_ABI_VERSION		1

/* alloc_ucontext */
struct qrdma_alloc_ucontext_resp {
	/* mmap() offset of this context's doorbell page (QRDMA_DB_PAGE_SIZE bytes). */
	__aligned_u64 db_mmap_offset;
	__u32 db_page_index;		/* which doorbell page of the BAR */
	__u32 if_version;		/* the device's QRDMA_REG_IF_VERSION */
	__u32 max_inline_data;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 reserved;
};

/* alloc_pd */
struct qrdma_alloc_pd_resp {
	__u32 pdn;
	__u32 reserved;
};

_Static_assert(sizeof(struct qrdma_alloc_ucontext_resp) == 32, "qrdma_alloc_ucontext_resp");
_Static_assert(sizeof(struct qrdma_alloc_pd_resp) == 8, "qrdma_alloc_pd_resp");

#endif /* QRDMA_ABI_H */
