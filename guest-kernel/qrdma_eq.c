// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma.ko: the control event queues. The AEQ and CEQ 0 are created
 * through the CQP at probe and share MSI-X vector 0 with it: CEQ 0 carries
 * the CCQ's completion events (so CQP commands complete by interrupt once
 * it exists), the AEQ the device's asynchronous errors.
 */
#include <linux/interrupt.h>

#include "qrdma.h"

#define QRDMA_AEQ_LOG2		8	/* 256 entries of 16 bytes: one page */
#define QRDMA_CEQ_LOG2		9	/* 512 entries of 8 bytes: one page */
#define QRDMA_CTRL_VECTOR	0

static_assert(sizeof(struct qrdma_aeqe) << QRDMA_AEQ_LOG2 <= PAGE_SIZE);
static_assert(sizeof(u64) << QRDMA_CEQ_LOG2 <= PAGE_SIZE);

static const char *qrdma_ae_name(u32 code)
{
	switch (code) {
	case QRDMA_AE_BAD_DOORBELL:
		return "BAD_DOORBELL";
	case QRDMA_AE_CQ_OVERFLOW:
		return "CQ_OVERFLOW";
	case QRDMA_AE_CQ_ERROR:
		return "CQ_ERROR";
	case QRDMA_AE_QP_FATAL:
		return "QP_FATAL";
	case QRDMA_AE_QP_ACCESS_ERR:
		return "QP_ACCESS_ERR";
	case QRDMA_AE_QP_REQ_ERR:
		return "QP_REQ_ERR";
	case QRDMA_AE_QP_LAST_WQE:
		return "QP_LAST_WQE";
	case QRDMA_AE_QP_COMM_EST:
		return "QP_COMM_EST";
	case QRDMA_AE_SQ_DRAINED:
		return "SQ_DRAINED";
	case QRDMA_AE_SRQ_LIMIT:
		return "SRQ_LIMIT";
	case QRDMA_AE_SRQ_ERROR:
		return "SRQ_ERROR";
	case QRDMA_AE_ANNOUNCE:
		return "ANNOUNCE";
	default:
		return "unknown";
	}
}

/* The IB async event an AEQE code stands for; -1 if none. */
static int qrdma_ae_to_ib(u32 code)
{
	switch (code) {
	case QRDMA_AE_CQ_OVERFLOW:
	case QRDMA_AE_CQ_ERROR:
		return IB_EVENT_CQ_ERR;
	case QRDMA_AE_QP_FATAL:
		return IB_EVENT_QP_FATAL;
	case QRDMA_AE_QP_ACCESS_ERR:
		return IB_EVENT_QP_ACCESS_ERR;
	case QRDMA_AE_QP_REQ_ERR:
		return IB_EVENT_QP_REQ_ERR;
	case QRDMA_AE_QP_LAST_WQE:
		return IB_EVENT_QP_LAST_WQE_REACHED;
	case QRDMA_AE_QP_COMM_EST:
		return IB_EVENT_COMM_EST;
	case QRDMA_AE_SQ_DRAINED:
		return IB_EVENT_SQ_DRAINED;
	case QRDMA_AE_SRQ_LIMIT:
		return IB_EVENT_SRQ_LIMIT_REACHED;
	case QRDMA_AE_SRQ_ERROR:
		return IB_EVENT_SRQ_ERR;
	default:
		return -1;
	}
}

/*
 * Hand an async event to the owner of the object it is about. The object
 * is looked up by ID with a reference held across the handler, so a
 * concurrent destroy waits for the handler instead of freeing under it.
 * Interrupt context.
 */
void qrdma_ae_dispatch(struct qrdma_dev *dev, u32 code, u32 src, u32 id)
{
	struct ib_event ev = { .device = &dev->ibdev };
	int type = qrdma_ae_to_ib(code);
	struct qrdma_srq *srq;
	struct qrdma_qp *qp;
	struct qrdma_cq *cq;

	if (type < 0)
		return;
	ev.event = type;
	switch (src) {
	case QRDMA_AE_SRC_QP:
		if (type == IB_EVENT_CQ_ERR || type == IB_EVENT_SRQ_LIMIT_REACHED ||
		    type == IB_EVENT_SRQ_ERR)
			return;
		qp = qrdma_obj_get(&dev->qps, id, offsetof(struct qrdma_qp, ref));
		if (!qp)
			return;
		ev.element.qp = &qp->ibqp;
		if (qp->ibqp.event_handler)
			qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
		qrdma_obj_put(&qp->ref);
		return;
	case QRDMA_AE_SRC_CQ:
		if (type != IB_EVENT_CQ_ERR)
			return;
		cq = qrdma_obj_get(&dev->cqs, id, offsetof(struct qrdma_cq, ref));
		if (!cq)
			return;
		ev.element.cq = &cq->ibcq;
		if (cq->ibcq.event_handler)
			cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
		qrdma_obj_put(&cq->ref);
		return;
	case QRDMA_AE_SRC_SRQ:
		if (type != IB_EVENT_SRQ_LIMIT_REACHED && type != IB_EVENT_SRQ_ERR)
			return;
		srq = qrdma_obj_get(&dev->srqs, id, offsetof(struct qrdma_srq, ref));
		if (!srq)
			return;
		ev.element.srq = &srq->ibsrq;
		if (srq->ibsrq.event_handler)
			srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
		qrdma_obj_put(&srq->ref);
		return;
	default:
		return;
	}
}

static void qrdma_aeq_process(struct qrdma_dev *dev)
{
	struct qrdma_eqs *eqs = &dev->eqs;
	u32 n = 0;

	while (n < eqs->aeq_len) {
		struct qrdma_aeqe *e = &eqs->aeq[eqs->aeq_head];
		u64 info = le64_to_cpu(READ_ONCE(e->info));
		u32 code, src, id;

		if (!!(info & QRDMA_AEQE_VALID) != eqs->aeq_valid)
			break;
		/* The device writes the valid qword last; read the rest after it. */
		dma_rmb();
		code = (info & QRDMA_AEQE_CODE_MASK) >> QRDMA_AEQE_CODE_SHIFT;
		src = (info & QRDMA_AEQE_SOURCE_MASK) >> QRDMA_AEQE_SOURCE_SHIFT;
		id = info & QRDMA_AEQE_ID_MASK;
		/*
		 * Limit, establishment and announcement events are routine; the
		 * others are not.
		 */
		if (code == QRDMA_AE_SRQ_LIMIT || code == QRDMA_AE_QP_COMM_EST ||
		    code == QRDMA_AE_SQ_DRAINED || code == QRDMA_AE_QP_LAST_WQE ||
		    code == QRDMA_AE_ANNOUNCE)
			dev_dbg(&dev->pdev->dev, "async event %s from source %u id %u\n",
				qrdma_ae_name(code), src, id);
		else
			dev_warn_ratelimited(&dev->pdev->dev,
					     "async event %s (0x%x) from source %u id %u ctx 0x%llx\n",
					     qrdma_ae_name(code), code, src, id,
					     le64_to_cpu(e->ctx));
		if (code == QRDMA_AE_ANNOUNCE)
			qrdma_netdev_announce(dev);
		else
			qrdma_ae_dispatch(dev, code, src, id);
		atomic64_inc(&eqs->async_events);
		eqs->aeq_head = (eqs->aeq_head + 1) & (eqs->aeq_len - 1);
		if (!eqs->aeq_head)
			eqs->aeq_valid = !eqs->aeq_valid;
		n++;
	}
	if (n)
		qrdma_wr32(dev, QRDMA_REG_AEQALLOC, n);
}

static void qrdma_ceq_process(struct qrdma_dev *dev)
{
	struct qrdma_eqs *eqs = &dev->eqs;
	u32 n = 0;

	while (n < eqs->ceq_len) {
		u64 e = le64_to_cpu(READ_ONCE(eqs->ceq[eqs->ceq_head]));

		if (!!(e & QRDMA_CEQE_VALID) != eqs->ceq_valid)
			break;
		/*
		 * A kernel CQ's event calls its comp_handler (ib_core's
		 * softirq or workqueue poller, or the ULP's own) from here.
		 */
		if ((e & QRDMA_CEQE_CQ_CTX_MASK) == QRDMA_CCQ_CTX)
			qrdma_cqp_ccq_event(dev);
		else if ((e & QRDMA_CEQE_CQ_CTX_MASK) <= QRDMA_OBJ_ID_MASK)
			/* Every other CQ's CQ_CTX is its ID (qrdma_cq.c). */
			qrdma_cq_event(dev, e & QRDMA_CEQE_CQ_CTX_MASK);
		else
			dev_warn_ratelimited(&dev->pdev->dev, "CEQ 0 event for unknown CQ 0x%llx\n",
					     e & QRDMA_CEQE_CQ_CTX_MASK);
		atomic64_inc(&eqs->ceq_events);
		eqs->ceq_head = (eqs->ceq_head + 1) & (eqs->ceq_len - 1);
		if (!eqs->ceq_head)
			eqs->ceq_valid = !eqs->ceq_valid;
		n++;
	}
	if (n)
		qrdma_wr32(dev, QRDMA_REG_CEQALLOC(0), n);
}

static irqreturn_t qrdma_ctrl_irq(int irq, void *data)
{
	struct qrdma_dev *dev = data;

	qrdma_aeq_process(dev);
	qrdma_ceq_process(dev);
	/* The vector fired once and is masked: let it fire again. */
	qrdma_wr32(dev, QRDMA_REG_DYN_CTL(QRDMA_CTRL_VECTOR), QRDMA_DYN_CTL_INTENA);
	return IRQ_HANDLED;
}

int qrdma_eq_create(struct qrdma_dev *dev)
{
	struct device *d = &dev->pdev->dev;
	struct qrdma_eqs *eqs = &dev->eqs;
	u64 args[6] = {};
	int ret;

	eqs->aeq = dma_alloc_coherent(d, PAGE_SIZE, &eqs->aeq_dma, GFP_KERNEL);
	eqs->ceq = dma_alloc_coherent(d, PAGE_SIZE, &eqs->ceq_dma, GFP_KERNEL);
	if (!eqs->aeq || !eqs->ceq)
		return -ENOMEM;		/* qrdma_eq_free() releases what was allocated */
	eqs->aeq_len = 1 << QRDMA_AEQ_LOG2;
	eqs->ceq_len = 1 << QRDMA_CEQ_LOG2;
	eqs->aeq_head = 0;
	eqs->ceq_head = 0;
	eqs->aeq_valid = true;
	eqs->ceq_valid = true;

	args[0] = QRDMA_AEQ_LOG2 << QRDMA_EQ_SIZE_SHIFT;
	args[1] = eqs->aeq_dma;
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_CREATE_AEQ, args, NULL);
	if (ret)
		return ret;
	args[0] = 0 | QRDMA_CEQ_LOG2 << QRDMA_EQ_SIZE_SHIFT;	/* CEQ 0 */
	args[1] = eqs->ceq_dma;
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_CREATE_CEQ, args, NULL);
	if (ret)
		return ret;

	snprintf(eqs->irq_name, sizeof(eqs->irq_name), "qrdma-ctrl@%s", pci_name(dev->pdev));
	ret = request_irq(pci_irq_vector(dev->pdev, QRDMA_CTRL_VECTOR), qrdma_ctrl_irq, 0,
			  eqs->irq_name, dev);
	if (ret)
		return ret;
	eqs->irq_requested = true;
	qrdma_wr32(dev, QRDMA_REG_AEQCTL, QRDMA_CTRL_VECTOR | QRDMA_EQCTL_CAUSE_ENA);
	qrdma_wr32(dev, QRDMA_REG_CEQCTL(0), QRDMA_CTRL_VECTOR | QRDMA_EQCTL_CAUSE_ENA);
	qrdma_wr32(dev, QRDMA_REG_DYN_CTL(QRDMA_CTRL_VECTOR), QRDMA_DYN_CTL_INTENA);

	/* From now on CQP commands sleep until CEQ 0 says the CCQ has news. */
	dev->cqp.event_mode = true;
	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_NOP, NULL, NULL);
	if (ret)
		dev_err(d, "no NOP completion through CEQ 0: %d\n", ret);
	return ret;
}

/* Wait for a control interrupt handler that may be running to finish. */
void qrdma_eq_sync(struct qrdma_dev *dev)
{
	if (dev->eqs.irq_requested)
		synchronize_irq(pci_irq_vector(dev->pdev, QRDMA_CTRL_VECTOR));
}

/* Stop interrupts; the caller resets the device before qrdma_eq_free(). */
void qrdma_eq_stop(struct qrdma_dev *dev)
{
	struct qrdma_eqs *eqs = &dev->eqs;

	dev->cqp.event_mode = false;
	qrdma_wr32(dev, QRDMA_REG_AEQCTL, 0);
	qrdma_wr32(dev, QRDMA_REG_CEQCTL(0), 0);
	if (eqs->irq_requested)
		free_irq(pci_irq_vector(dev->pdev, QRDMA_CTRL_VECTOR), dev);
	eqs->irq_requested = false;
}

void qrdma_eq_free(struct qrdma_dev *dev)
{
	struct device *d = &dev->pdev->dev;
	struct qrdma_eqs *eqs = &dev->eqs;

	if (eqs->ceq)
		dma_free_coherent(d, PAGE_SIZE, eqs->ceq, eqs->ceq_dma);
	if (eqs->aeq)
		dma_free_coherent(d, PAGE_SIZE, eqs->aeq, eqs->aeq_dma);
	eqs->ceq = NULL;
	eqs->aeq = NULL;
}
