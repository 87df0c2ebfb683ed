/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * qrdma.ko: driver state shared by the files of the module. One struct
 * qrdma_dev per PCI function, embedding its ib_device.
 */
#ifndef QRDMA_DRV_H
#define QRDMA_DRV_H

#include <linux/io.h>
#include <linux/idr.h>
#include <linux/pci.h>
#include <linux/dmapool.h>
#include <linux/refcount.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/iter.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "qrdma/qrdma_hw.h"
#include "qrdma/qrdma_abi.h"

#define QRDMA_DRV_NAME "qrdma"

/* The device's limits, read once from the capability registers. */
struct qrdma_caps {
	u32 max_qp;
	u32 max_cq;
	u32 max_mr;
	u32 max_pd;
	u32 max_srq;
	u32 max_ah;
	u32 max_qp_wr;
	u32 max_srq_wr;
	u32 max_cqe;
	u32 max_send_sge;
	u32 max_recv_sge;
	u32 max_inline;
	u32 page_sizes;
	u64 max_mr_size;
	u32 max_rd_atom;
	u32 max_resp_res;
	u32 max_mtu;
	u32 gid_table_len;
	u32 db_pages;
	u32 msix_vectors;
	u32 max_ceq;
	u32 features;
	u32 max_mcast_grp;		/* 0 without QRDMA_FEATURE_MCAST */
	u32 max_mcast_qp_attach;
};

/*
 * The control QP and its completion queue (qrdma_cqp.c). Up to sq_len
 * commands are in flight; each has a waiter, matched to its CCQ CQE by
 * the scratch value the device echoes. Whoever holds the lock may reap
 * the CCQ (a waiter polling, or CEQ 0's interrupt), so that sleeping and
 * spinning waiters never take each other's completions.
 */
struct qrdma_cqp {
	spinlock_t lock;		/* ring state, pending waiters, dead */
	struct list_head pending;	/* struct qrdma_cqp_waiter, oldest first */
	u32 in_flight;			/* WQEs posted whose CQE is not reaped */
	struct qrdma_cqp_ctx *ctx;	/* page: context, then the CCQ shadow area */
	dma_addr_t ctx_dma;
	__le64 *shadow;
	dma_addr_t shadow_dma;
	struct qrdma_cqp_wqe *sq;
	dma_addr_t sq_dma;
	struct qrdma_ccq_cqe *ccq;
	dma_addr_t ccq_dma;
	u32 sq_len, ccq_len;
	u32 sq_next, ccq_head;
	bool sq_valid, ccq_valid;	/* VALID of the current lap */
	u64 scratch;
	bool dead;			/* a command timed out: fail all others */
	bool event_mode;		/* CEQ 0 exists: sleep on wq, do not spin */
	wait_queue_head_t wq;		/* woken after CEQ 0 events reaped the CCQ */
};

/* The CEQE context value of the CCQ (given in the CQP context). */
#define QRDMA_CCQ_CTX	0x43435100ULL	/* "CCQ" */

/* The control event queues (qrdma_eq.c). */
struct qrdma_eqs {
	struct qrdma_aeqe *aeq;
	dma_addr_t aeq_dma;
	u32 aeq_len, aeq_head;
	bool aeq_valid;
	__le64 *ceq;			/* CEQ 0 */
	dma_addr_t ceq_dma;
	u32 ceq_len, ceq_head;
	bool ceq_valid;
	bool irq_requested;
	char irq_name[32];
	atomic64_t async_events;
	atomic64_t ceq_events;
};

/* One 4 KB guest page behind a page descriptor of a paged SD. */
struct qrdma_hmc_page {
	void *va;
	dma_addr_t dma;
	u32 refs;			/* objects (or PBLE runs) in this page */
};

enum qrdma_hmc_sd_kind {
	QRDMA_HMC_SD_NONE = 0,
	QRDMA_HMC_SD_PAGED,
	QRDMA_HMC_SD_DIRECT,
};

/* One segment descriptor: 2 MB of FPM space. */
struct qrdma_hmc_sd {
	enum qrdma_hmc_sd_kind kind;
	u32 refs;			/* paged: valid PDs; direct: page references */
	__le64 *pd_table;		/* paged: the 512 page descriptors */
	dma_addr_t pd_table_dma;
	struct qrdma_hmc_page *pages;	/* paged: what each PD names */
	void *direct_va;		/* direct: the 2 MB page */
	dma_addr_t direct_dma;
};

/* The committed HMC layout and the guest memory behind it (qrdma_hmc.c). */
struct qrdma_hmc {
	u32 max_sds;
	u32 sd_count;				/* SDs the layout needs */
	u32 max_count[QRDMA_HMC_NUM_TYPES];
	u32 count[QRDMA_HMC_NUM_TYPES];		/* committed */
	u8 obj_size_log2[QRDMA_HMC_NUM_TYPES];
	u64 base[QRDMA_HMC_NUM_TYPES];		/* FPM byte address */

	struct mutex lock;			/* SD and PD state below */
	struct qrdma_hmc_sd *sds;		/* sd_count entries */
	u32 backed_pages;			/* 4 KB pages lent to the device */
	u32 direct_sds;
};

/* PBLE index allocator over the committed PBLE count (qrdma_pble.c). */
struct qrdma_pble_pool {
	struct mutex lock;		/* bitmap and used */
	unsigned long *bitmap;
	u32 count;
	u32 used;
};

/*
 * A page list in PBLEs. One level: PBLEs first..first+npages-1. Two
 * levels: nroots roots at first, each naming a leaf run (leaf[i]) of up
 * to QRDMA_PBLE_LEAF_ENTRIES PBLEs.
 */
struct qrdma_pble_list {
	u32 first;
	u32 npages;
	u8 levels;			/* 0: none allocated, 1 or 2 */
	u32 nroots;
	u32 *leaf;			/* two levels: first PBLE of each leaf run */
};

/*
 * Queue memory: a kernel DMA-coherent ring, or a pinned user ring whose
 * 4 KB pages are listed in PBLEs (VIRTMAP).
 */
struct qrdma_qmem {
	size_t size;
	void *va;			/* kernel rings */
	dma_addr_t dma;
	struct ib_umem *umem;		/* user rings */
	struct qrdma_pble_list pbles;
};

/* A 64-byte shadow area: from the driver's pool, or pinned in user memory. */
struct qrdma_shadow {
	void *va;
	dma_addr_t dma;
	struct ib_umem *umem;
};

/*
 * Memory the device may still be using because a destroy command failed:
 * kept until remove has reset the device, then freed.
 */
struct qrdma_zombie {
	struct list_head list;
	struct qrdma_qmem qmem;
	struct qrdma_shadow shadow;
};

/* Per-type object IDs and the objects themselves, for event dispatch. */
struct qrdma_obj_table {
	struct xarray xa;		/* ID -> object, IRQ-safe lock */
	u32 min, max;			/* ID range, inclusive */
	atomic_t live;
};

/* Reference held while an event handler uses an object being destroyed. */
struct qrdma_obj_ref {
	refcount_t refs;
	struct completion done;
};

struct qrdma_dev {
	struct ib_device ibdev;
	struct pci_dev *pdev;
	void __iomem *regs;
	phys_addr_t db_bar_start;	/* bus address of doorbell page 0 */
	void __iomem *db_kernel;	/* doorbell page 0, the kernel's */

	struct qrdma_caps caps;
	u32 if_version;
	u32 fw_version;
	u32 hw_rev;
	u8 mac[ETH_ALEN];
	char board_id[QRDMA_BOARD_ID_LEN];
	int num_vectors;
	struct net_device *netdev;
	struct qrdma_netdev *lan;	/* while announcements may be scheduled */
	bool ib_registered;
	struct qrdma_cqp cqp;
	struct qrdma_eqs eqs;
	struct qrdma_hmc hmc;

	/* Resource numbers; the device will own these once the CQP exists. */
	struct ida pd_ida;
	struct ida db_page_ida;
	atomic_t num_ucontexts;
	atomic_t num_pds;

	struct qrdma_pble_pool pble;
	struct dma_pool *ctl_pool;	/* 128-byte blocks: shadow areas, AVs, QP info */
	struct qrdma_obj_table qps, cqs, srqs;
	struct ida mr_ida, ah_ida;
	u32 mr_max, ah_max;		/* highest usable index */
	u32 ah_atomic_ids;		/* AH IDs 0..n-1: HMC backed from probe to remove */
	u8 *mr_keys;			/* last key byte used per MR index */
	/*
	 * WIRE_IDS: fast-register MRs (struct qrdma_mr) whose rkey is not
	 * their STag, by rkey[31:8], so a LOCAL_INV naming the rkey reaches
	 * the STag.
	 */
	struct xarray wire_mrs;
	atomic_t num_mrs, num_ahs;
	struct workqueue_struct *wq;	/* deferred AH destroys */
	spinlock_t zombie_lock;
	struct list_head zombies;
	atomic64_t hw_errors;		/* destroy commands the device failed */
	struct mutex stats_lock;	/* one counter snapshot at a time */
	u32 stats_num;			/* counters the device has, of QRDMA_STAT_NUM */
};

#define QRDMA_CTL_BLOCK		128

/* NUM_SGE is 5 bits in SQ and RQ WQE headers, whatever CAP_MAX_*_SGE says. */
#define QRDMA_MAX_WQE_SGES	31u
static_assert(QRDMA_MAX_WQE_SGES << QRDMA_SQ_HDR_NUM_SGE_SHIFT == QRDMA_SQ_HDR_NUM_SGE_MASK);
static_assert(QRDMA_MAX_WQE_SGES == QRDMA_RQ_HDR_NUM_SGE_MASK);

struct qrdma_cq {
	struct ib_cq ibcq;
	struct qrdma_obj_ref ref;
	u32 id;
	u32 size_log2;
	u16 db_page;
	bool user;
	struct qrdma_qmem ring;
	struct qrdma_qmem old_ring;	/* kernel resize: drained by the poller, freed later */
	struct qrdma_shadow shadow;
	spinlock_t lock;		/* kernel CQ consumer state */
	u16 arm_seq;
	u32 head;			/* kernel CQs: CQEs consumed in ring, free running */
	u32 old_head;			/* ... in old_ring, while old_active */
	u8 old_size_log2;
	bool old_active;		/* old_ring may still hold unread CQEs */
};

/*
 * A kernel work queue's producer and retire state. The ring is the QP's
 * sq or rq (struct qrdma_qmem); wr_ids live beside it, one per slot.
 */
struct qrdma_kwq {
	spinlock_t lock;		/* posting against retiring: head, tail, slots */
	u32 head;			/* WQEs posted, free running */
	u32 tail;			/* WQEs retired by CQEs, free running */
	u8 size_log2, wqe_log2;
	u64 *wr_id;
	u8 *wc_opcode;			/* SQ: the enum ib_wc_opcode each slot completes as */
};

struct qrdma_qp {
	struct ib_qp ibqp;
	struct qrdma_obj_ref ref;
	u32 id;
	bool user;
	struct mutex lock;		/* modify / query */
	enum ib_qp_state state;		/* as the driver last set or read it */
	struct qrdma_qmem sq, rq;
	u8 sq_size_log2, sq_wqe_log2, rq_size_log2, rq_wqe_log2;
	struct ib_qp_cap cap;
	enum ib_sig_type sq_sig_type;
	/* as last set: UD sends with a Q_Key of bit 31 set use it */
	u32 qkey;
	bool gsi;
	struct qrdma_kwq ksq, krq;	/* kernel QPs */
};

struct qrdma_srq {
	struct ib_srq ibsrq;
	struct qrdma_obj_ref ref;
	u32 id;
	bool user;
	u8 size_log2, wqe_log2;
	u32 max_sge;
	u32 limit;
	struct qrdma_qmem ring;
	struct qrdma_shadow shadow;
	/* Kernel SRQs: slots are freed by CQEs, which may come in any order. */
	spinlock_t lock;
	u32 head;			/* WQEs posted, free running (shadow qword 0) */
	u64 *wr_id;
	unsigned long *busy;		/* slot posted and not yet completed */
};

struct qrdma_ah_ctx;

struct qrdma_ah {
	struct ib_ah ibah;
	struct qrdma_ah_ctx *ctx;	/* outlives the ib_ah for deferred destroys */
	u32 id;				/* the AH_ID UD send WQEs name */
};

struct qrdma_mr {
	struct ib_mr ibmr;
	u32 index;
	u32 stag;
	bool registered;		/* the device holds a valid STag */
	u32 access;
	u32 pdn;
	u8 page_shift;
	struct ib_umem *umem;
	struct qrdma_pble_list pbles;
	u64 *pages;			/* fast-register: the page list map_mr_sg fills */
	u32 max_pages;
	u32 npages;
	u32 fbo;			/* fast-register: offset of byte 0 in pages[0] */
};

/* A memory window: an MR-table index of its own (docs/hw-spec.md 18.4). */
struct qrdma_mw {
	struct ib_mw ibmw;
	u32 index;
};

struct qrdma_ucontext {
	struct ib_ucontext ibucontext;
	struct rdma_user_mmap_entry *db_entry;
	u32 db_page;
};

struct qrdma_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

/* The doorbell page of one user context, mapped uncached into that process. */
struct qrdma_db_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	struct qrdma_dev *dev;
	u32 db_page;
};

/*
 * The number peers use for a QP or an MR: the command's return value when
 * the device hands out wire identifiers (CAP_FEATURES.WIRE_IDS, hw-spec
 * sections 17.1 and 18.1), else the driver's own ID or STag.
 */
static inline u32 qrdma_wire_id(const struct qrdma_dev *dev, u64 retval, u32 own)
{
	return (dev->caps.features & QRDMA_FEATURE_WIRE_IDS) ? (u32)retval : own;
}

/*
 * QP1 carries MADs (rdma_cm's connection manager): always before
 * interface 0.12, since then only with CAP_FEATURES.GSI (a backend on a
 * host NIC has none, hw-spec section 4.4).
 */
static inline bool qrdma_has_gsi(const struct qrdma_dev *dev)
{
	return (dev->if_version & QRDMA_IF_VERSION_MINOR_MASK) < 12 ||
	       (dev->caps.features & QRDMA_FEATURE_GSI);
}

static inline struct qrdma_dev *to_qdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct qrdma_dev, ibdev);
}

static inline struct qrdma_ucontext *to_quctx(struct ib_ucontext *ibuctx)
{
	return container_of(ibuctx, struct qrdma_ucontext, ibucontext);
}

static inline struct qrdma_pd *to_qpd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct qrdma_pd, ibpd);
}

static inline struct qrdma_cq *to_qcq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct qrdma_cq, ibcq);
}

static inline struct qrdma_qp *to_qqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct qrdma_qp, ibqp);
}

static inline struct qrdma_srq *to_qsrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct qrdma_srq, ibsrq);
}

static inline struct qrdma_ah *to_qah(struct ib_ah *ibah)
{
	return container_of(ibah, struct qrdma_ah, ibah);
}

static inline struct qrdma_mr *to_qmr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct qrdma_mr, ibmr);
}

static inline struct qrdma_mw *to_qmw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct qrdma_mw, ibmw);
}

/* The doorbell page a user object's doorbells use; 0 for kernel objects. */
static inline u16 qrdma_udata_db_page(struct ib_udata *udata)
{
	struct qrdma_ucontext *uctx;

	if (!udata)
		return QRDMA_DB_PAGE_KERNEL;
	uctx = rdma_udata_to_drv_context(udata, struct qrdma_ucontext, ibucontext);
	return uctx ? uctx->db_page : QRDMA_DB_PAGE_KERNEL;
}

static inline u32 qrdma_rd32(struct qrdma_dev *dev, u32 reg)
{
	return readl(dev->regs + reg);
}

static inline void qrdma_wr32(struct qrdma_dev *dev, u32 reg, u32 val)
{
	writel(val, dev->regs + reg);
}

/* qrdma_verbs.c */
int qrdma_register_ibdev(struct qrdma_dev *dev);
/* qrdma_stats.c: the port's hardware counters, if the device has them */
void qrdma_stats_init(struct qrdma_dev *dev);
void qrdma_unregister_ibdev(struct qrdma_dev *dev);
void qrdma_port_event(struct qrdma_dev *dev);

/* qrdma_cqp.c */
int qrdma_cqp_create(struct qrdma_dev *dev);
void qrdma_cqp_free(struct qrdma_dev *dev);
int qrdma_cqp_exec(struct qrdma_dev *dev, u8 opcode, const u64 *args, u64 *retval);
int qrdma_cqp_exec_atomic(struct qrdma_dev *dev, u8 opcode, const u64 *args, u64 *retval);
void qrdma_cqp_ccq_event(struct qrdma_dev *dev);

/* qrdma_eq.c */
int qrdma_eq_create(struct qrdma_dev *dev);
void qrdma_eq_stop(struct qrdma_dev *dev);
void qrdma_eq_free(struct qrdma_dev *dev);

/* qrdma_hmc.c */
int qrdma_hmc_init(struct qrdma_dev *dev);
int qrdma_hmc_get(struct qrdma_dev *dev, enum qrdma_hmc_type type, u32 first, u32 count);
void qrdma_hmc_put(struct qrdma_dev *dev, enum qrdma_hmc_type type, u32 first, u32 count);
void *qrdma_hmc_va(struct qrdma_dev *dev, enum qrdma_hmc_type type, u32 index);
void qrdma_hmc_free(struct qrdma_dev *dev);

/* qrdma_pble.c */
int qrdma_pble_init(struct qrdma_dev *dev);
void qrdma_pble_fini(struct qrdma_dev *dev);
int qrdma_pble_alloc(struct qrdma_dev *dev, struct qrdma_pble_list *pl, u32 npages,
		     bool two_level_ok);
void qrdma_pble_free(struct qrdma_dev *dev, struct qrdma_pble_list *pl);
void qrdma_pble_set(struct qrdma_dev *dev, struct qrdma_pble_list *pl, u32 i, u64 addr);
u32 qrdma_pble_first(const struct qrdma_pble_list *pl);
void qrdma_pble_write_umem(struct qrdma_dev *dev, struct qrdma_pble_list *pl,
			   struct ib_umem *umem, unsigned long pgsz);

/* qrdma_qmem.c */
int qrdma_qmem_kernel(struct qrdma_dev *dev, struct qrdma_qmem *qm, size_t size);
int qrdma_qmem_user(struct qrdma_dev *dev, struct qrdma_qmem *qm, u64 va, size_t size);
u64 qrdma_qmem_addr(const struct qrdma_qmem *qm);
void qrdma_qmem_free(struct qrdma_dev *dev, struct qrdma_qmem *qm);
int qrdma_shadow_kernel(struct qrdma_dev *dev, struct qrdma_shadow *sh);
int qrdma_shadow_user(struct qrdma_dev *dev, struct qrdma_shadow *sh, u64 va);
void qrdma_shadow_free(struct qrdma_dev *dev, struct qrdma_shadow *sh);
void qrdma_retire(struct qrdma_dev *dev, struct qrdma_qmem *qm, struct qrdma_shadow *sh);
void qrdma_zombies_free(struct qrdma_dev *dev);
void qrdma_obj_table_init(struct qrdma_obj_table *t, u32 min, u32 max);
int qrdma_obj_id_alloc(struct qrdma_obj_table *t, u32 *id);
int qrdma_obj_id_claim(struct qrdma_obj_table *t, u32 id);
void qrdma_obj_publish(struct qrdma_obj_table *t, u32 id, void *obj, struct qrdma_obj_ref *ref);
void qrdma_obj_unpublish(struct qrdma_obj_table *t, u32 id, struct qrdma_obj_ref *ref);
void *qrdma_obj_get(struct qrdma_obj_table *t, u32 id, size_t ref_off);
void qrdma_obj_put(struct qrdma_obj_ref *ref);
int qrdma_res_init(struct qrdma_dev *dev);
void qrdma_res_fini(struct qrdma_dev *dev);

/* qrdma_cq.c */
int qrdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata);
int qrdma_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int qrdma_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int qrdma_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
void qrdma_cq_event(struct qrdma_dev *dev, u32 ctx);
int qrdma_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
void qrdma_cq_clean(struct qrdma_cq *cq, u32 qp_id);

/* qrdma_qp.c */
int qrdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init, struct ib_udata *udata);
int qrdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata);
int qrdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
int qrdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);

/* qrdma_post.c */
int qrdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int qrdma_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
int qrdma_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);
int qrdma_kwq_init(struct qrdma_kwq *wq, u8 size_log2, u8 wqe_log2, bool sq);
void qrdma_kwq_free(struct qrdma_kwq *wq);
void qrdma_kwq_reset(struct qrdma_kwq *wq, struct qrdma_qmem *ring);

/* qrdma_srq.c */
int qrdma_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int qrdma_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int qrdma_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int qrdma_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);

/* qrdma_ah.c */
int qrdma_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init, struct ib_udata *udata);
int qrdma_destroy_ah(struct ib_ah *ibah, u32 flags);
int qrdma_av_from_ah_attr(struct qrdma_dev *dev, const struct rdma_ah_attr *ah_attr,
			  struct qrdma_av *av);
int qrdma_ah_window_init(struct qrdma_dev *dev);
void qrdma_ah_window_fini(struct qrdma_dev *dev);

/* qrdma_mr.c */
struct ib_mr *qrdma_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *qrdma_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length, u64 virt,
				int access, struct ib_udata *udata);
struct ib_mr *qrdma_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start, u64 length,
				  u64 virt, int access, struct ib_pd *ibpd,
				  struct ib_udata *udata);
int qrdma_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *qrdma_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type, u32 max_num_sg);
int qrdma_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
u32 qrdma_max_fast_reg_pages(struct qrdma_dev *dev);
int qrdma_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int qrdma_dealloc_mw(struct ib_mw *ibmw);

/* qrdma_eq.c: AEQ sources mapped to IB events */
void qrdma_ae_dispatch(struct qrdma_dev *dev, u32 code, u32 src, u32 id);
void qrdma_eq_sync(struct qrdma_dev *dev);

/* qrdma_netdev.c */
int qrdma_netdev_create(struct qrdma_dev *dev);
void qrdma_netdev_destroy(struct qrdma_dev *dev);
bool qrdma_netdev_link_up(struct qrdma_dev *dev);
void qrdma_netdev_announce(struct qrdma_dev *dev);

#endif /* QRDMA_DRV_H */
