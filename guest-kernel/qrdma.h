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
#include <rdma/ib_verbs.h>

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
};

/* The control QP and its completion queue (qrdma_cqp.c). */
struct qrdma_cqp {
	struct mutex lock;		/* one command at a time */
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
	wait_queue_head_t wq;		/* woken by CEQ 0 events for the CCQ */
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

/* The committed HMC layout (qrdma_hmc.c). */
struct qrdma_hmc {
	u32 max_sds;
	u32 sd_count;				/* SDs the layout needs */
	u32 max_count[QRDMA_HMC_NUM_TYPES];
	u32 count[QRDMA_HMC_NUM_TYPES];		/* committed */
	u8 obj_size_log2[QRDMA_HMC_NUM_TYPES];
	u64 base[QRDMA_HMC_NUM_TYPES];		/* FPM byte address */
};

struct qrdma_dev {
	struct ib_device ibdev;
	struct pci_dev *pdev;
	void __iomem *regs;
	phys_addr_t db_bar_start;	/* bus address of doorbell page 0 */

	struct qrdma_caps caps;
	u32 if_version;
	u32 fw_version;
	u32 hw_rev;
	u8 mac[ETH_ALEN];
	char board_id[QRDMA_BOARD_ID_LEN];
	int num_vectors;
	struct net_device *netdev;
	bool ib_registered;
	struct qrdma_cqp cqp;
	struct qrdma_eqs eqs;
	struct qrdma_hmc hmc;

	/* Resource numbers; the device will own these once the CQP exists. */
	struct ida pd_ida;
	struct ida db_page_ida;
	atomic_t num_ucontexts;
	atomic_t num_pds;
};

struct qrdma_ucontext {
	struct ib_ucontext ibucontext;
	struct rdma_user_mmap_entry *db_entry;
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
void qrdma_unregister_ibdev(struct qrdma_dev *dev);
void qrdma_port_event(struct qrdma_dev *dev);

/* qrdma_cqp.c */
int qrdma_cqp_create(struct qrdma_dev *dev);
void qrdma_cqp_free(struct qrdma_dev *dev);
int qrdma_cqp_exec(struct qrdma_dev *dev, u8 opcode, const u64 *args, u64 *retval);

/* qrdma_eq.c */
int qrdma_eq_create(struct qrdma_dev *dev);
void qrdma_eq_stop(struct qrdma_dev *dev);
void qrdma_eq_free(struct qrdma_dev *dev);

/* qrdma_hmc.c */
int qrdma_hmc_init(struct qrdma_dev *dev);

/* qrdma_netdev.c */
int qrdma_netdev_create(struct qrdma_dev *dev);
void qrdma_netdev_destroy(struct qrdma_dev *dev);
bool qrdma_netdev_link_up(struct qrdma_dev *dev);

#endif /* QRDMA_DRV_H */
