/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * qrdma uverbs ABI: the driver-specific data that travels in udata between
 * libqrdma (rdma-core provider) and qrdma.ko. Bump QRDMA_ABI_VERSION on any
 * incompatible change; the provider refuses a kernel outside its range.
 */
#ifndef QRDMA_ABI_H
#define QRDMA_ABI_H

#include <linux/types.h>

#define QRDMA_ABI_VERSION		2

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

/*
 * User queues live in memory the provider allocates (page aligned, sized
 * as qrdma_hw.h says); the driver pins it (ib_umem_get), writes its pages
 * into PBLEs and creates the object with VIRTMAP. Sizes travel as log2 so
 * both sides agree on ring geometry without rounding rules.
 */

/* create_cq, resize_cq */
struct qrdma_create_cq_req {
	__aligned_u64 ring_va;		/* 2^size_log2 CQEs of QRDMA_CQE_SIZE bytes */
	__aligned_u64 shadow_va;	/* struct qrdma_cq_shadow, 64-byte aligned */
	__u32 size_log2;
	__u32 reserved;
};

struct qrdma_create_cq_resp {
	__u32 cq_id;
	__u32 size_log2;
};

struct qrdma_resize_cq_req {
	__aligned_u64 ring_va;
	__u32 size_log2;
	__u32 reserved;
};

/* create_qp */
struct qrdma_create_qp_req {
	__aligned_u64 sq_va;		/* 2^sq_size_log2 WQEs of 2^sq_wqe_log2 bytes */
	__aligned_u64 rq_va;		/* 0 with an SRQ */
	__u8 sq_size_log2;
	__u8 sq_wqe_log2;
	__u8 rq_size_log2;
	__u8 rq_wqe_log2;
	__u32 reserved;
};

struct qrdma_create_qp_resp {
	__u32 qp_id;
	__u32 max_inline_data;		/* what the SQ stride holds */
};

/* create_srq */
struct qrdma_create_srq_req {
	__aligned_u64 ring_va;
	__aligned_u64 shadow_va;	/* 64 bytes: qword 0 is the count of WQEs posted */
	__u8 size_log2;
	__u8 wqe_log2;
	__u8 reserved[6];
};

struct qrdma_create_srq_resp {
	__u32 srq_id;
	__u32 reserved;
};

/* create_ah: the ID the provider puts in UD send WQEs */
struct qrdma_create_ah_resp {
	__u32 ah_id;
	__u32 reserved;
};

_Static_assert(sizeof(struct qrdma_create_cq_req) == 24, "qrdma_create_cq_req");
_Static_assert(sizeof(struct qrdma_create_cq_resp) == 8, "qrdma_create_cq_resp");
_Static_assert(sizeof(struct qrdma_resize_cq_req) == 16, "qrdma_resize_cq_req");
_Static_assert(sizeof(struct qrdma_create_qp_req) == 24, "qrdma_create_qp_req");
_Static_assert(sizeof(struct qrdma_create_qp_resp) == 8, "qrdma_create_qp_resp");
_Static_assert(sizeof(struct qrdma_create_srq_req) == 24, "qrdma_create_srq_req");
_Static_assert(sizeof(struct qrdma_create_srq_resp) == 8, "qrdma_create_srq_resp");
_Static_assert(sizeof(struct qrdma_create_ah_resp) == 8, "qrdma_create_ah_resp");
_Static_assert(sizeof(struct qrdma_alloc_ucontext_resp) == 32, "qrdma_alloc_ucontext_resp");
_Static_assert(sizeof(struct qrdma_alloc_pd_resp) == 8, "qrdma_alloc_pd_resp");

#endif /* QRDMA_ABI_H */
