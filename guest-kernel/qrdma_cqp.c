// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma.ko: the control QP. Creation through CCQP_CTX_HIGH/LOW, and one
 * submission path: a command posts its WQE under a spinlock, rings CQP_DB
 * and waits for the CCQ CQE carrying its scratch value. Whoever holds the
 * lock reaps the CCQ for everyone: a polling waiter, or CEQ 0's interrupt
 * once the event queues exist, after which sleeping waiters are woken.
 * qrdma_cqp_exec() sleeps (polls with short sleeps during bring-up);
 * qrdma_cqp_exec_atomic() spins, for callers that may not sleep (AH
 * creation from the CM). A command that does not complete in time marks
 * the CQP dead, and every later command fails with -EIO (unload still
 * works: it only resets).
 */
#include <linux/iopoll.h>
#include <linux/delay.h>

#include "qrdma.h"

#define QRDMA_CQP_SQ_LOG2	4
#define QRDMA_CQP_CCQ_LOG2	5

static unsigned int cqp_timeout_ms = 5000;
module_param(cqp_timeout_ms, uint, 0644);
MODULE_PARM_DESC(cqp_timeout_ms, "How long a control QP command may take (ms)");

static const char *qrdma_cqp_op_name(u8 opcode)
{
	switch (opcode) {
	case QRDMA_CQP_OP_NOP:
		return "NOP";
	case QRDMA_CQP_OP_ADD_GID:
		return "ADD_GID";
	case QRDMA_CQP_OP_DEL_GID:
		return "DEL_GID";
	case QRDMA_CQP_OP_MCAST_ATTACH:
		return "MCAST_ATTACH";
	case QRDMA_CQP_OP_MCAST_DETACH:
		return "MCAST_DETACH";
	case QRDMA_CQP_OP_CREATE_QP:
		return "CREATE_QP";
	case QRDMA_CQP_OP_MODIFY_QP:
		return "MODIFY_QP";
	case QRDMA_CQP_OP_DESTROY_QP:
		return "DESTROY_QP";
	case QRDMA_CQP_OP_QUERY_QP:
		return "QUERY_QP";
	case QRDMA_CQP_OP_CREATE_CQ:
		return "CREATE_CQ";
	case QRDMA_CQP_OP_MODIFY_CQ:
		return "MODIFY_CQ";
	case QRDMA_CQP_OP_DESTROY_CQ:
		return "DESTROY_CQ";
	case QRDMA_CQP_OP_ALLOC_STAG:
		return "ALLOC_STAG";
	case QRDMA_CQP_OP_REG_MR:
		return "REG_MR";
	case QRDMA_CQP_OP_QUERY_STAG:
		return "QUERY_STAG";
	case QRDMA_CQP_OP_DEALLOC_STAG:
		return "DEALLOC_STAG";
	case QRDMA_CQP_OP_CREATE_AH:
		return "CREATE_AH";
	case QRDMA_CQP_OP_MODIFY_AH:
		return "MODIFY_AH";
	case QRDMA_CQP_OP_DESTROY_AH:
		return "DESTROY_AH";
	case QRDMA_CQP_OP_CREATE_SRQ:
		return "CREATE_SRQ";
	case QRDMA_CQP_OP_MODIFY_SRQ:
		return "MODIFY_SRQ";
	case QRDMA_CQP_OP_DESTROY_SRQ:
		return "DESTROY_SRQ";
	case QRDMA_CQP_OP_QUERY_SRQ:
		return "QUERY_SRQ";
	case QRDMA_CQP_OP_UPDATE_PE_SDS:
		return "UPDATE_PE_SDS";
	case QRDMA_CQP_OP_CREATE_CEQ:
		return "CREATE_CEQ";
	case QRDMA_CQP_OP_CREATE_AEQ:
		return "CREATE_AEQ";
	case QRDMA_CQP_OP_QUERY_FPM_VAL:
		return "QUERY_FPM_VAL";
	case QRDMA_CQP_OP_COMMIT_FPM_VAL:
		return "COMMIT_FPM_VAL";
	default:
		return "?";
	}
}

/* What a failed command means to the verb that issued it. */
static int qrdma_cqp_errno(u32 major, u32 minor)
{
	switch (major) {
	case QRDMA_CQP_OK:
		return 0;
	case QRDMA_CQP_ERR_BAD_OPCODE:
		return -EOPNOTSUPP;
	case QRDMA_CQP_ERR_INVALID_ARG:
	case QRDMA_CQP_ERR_INFO:
	case QRDMA_CQP_ERR_PBLE:
		return -EINVAL;
	case QRDMA_CQP_ERR_CCQ_FULL:
		return -EBUSY;
	case QRDMA_CQP_ERR_NO_RESOURCE:	/* a device limit, or the host's resources (0.11) */
		return -ENOMEM;
	case QRDMA_CQP_ERR_STATE:
		switch (minor) {
		case QRDMA_STATE_ERR_EXISTS:
			return -EEXIST;
		case QRDMA_STATE_ERR_NOT_FOUND:
			return -ENOENT;
		case QRDMA_STATE_ERR_BUSY:
			return -EBUSY;
		default:	/* TRANSITION, ATTR, KEY: the caller's request */
			return -EINVAL;
		}
	default:		/* HMC, CONTEXT, NOT_VALID: the driver's fault */
		return -EIO;
	}
}

int qrdma_cqp_create(struct qrdma_dev *dev)
{
	struct device *d = &dev->pdev->dev;
	struct qrdma_cqp *cqp = &dev->cqp;
	u32 status;
	int ret;

	spin_lock_init(&cqp->lock);
	INIT_LIST_HEAD(&cqp->pending);
	cqp->in_flight = 0;
	init_waitqueue_head(&cqp->wq);
	cqp->event_mode = false;
	cqp->sq_len = 1 << QRDMA_CQP_SQ_LOG2;
	cqp->ccq_len = 1 << QRDMA_CQP_CCQ_LOG2;
	/* The context and the CCQ shadow area share one page. */
	cqp->ctx = dma_alloc_coherent(d, PAGE_SIZE, &cqp->ctx_dma, GFP_KERNEL);
	cqp->sq = dma_alloc_coherent(d, PAGE_SIZE, &cqp->sq_dma, GFP_KERNEL);
	cqp->ccq = dma_alloc_coherent(d, PAGE_SIZE, &cqp->ccq_dma, GFP_KERNEL);
	if (!cqp->ctx || !cqp->sq || !cqp->ccq) {
		ret = -ENOMEM;
		goto err_free;
	}
	static_assert(sizeof(struct qrdma_cqp_wqe) << QRDMA_CQP_SQ_LOG2 <= PAGE_SIZE);
	static_assert(sizeof(struct qrdma_ccq_cqe) << QRDMA_CQP_CCQ_LOG2 <= PAGE_SIZE);
	cqp->shadow = (__le64 *)(cqp->ctx + 1);
	cqp->shadow_dma = cqp->ctx_dma + sizeof(*cqp->ctx);
	cqp->sq_next = 0;
	cqp->ccq_head = 0;
	cqp->sq_valid = true;
	cqp->ccq_valid = true;
	cqp->dead = false;

	cqp->ctx->sizes = cpu_to_le64(QRDMA_CQP_SQ_LOG2 |
				      QRDMA_CQP_CCQ_LOG2 << QRDMA_CQP_CTX_CCQ_SIZE_SHIFT);
	cqp->ctx->sq_addr = cpu_to_le64(cqp->sq_dma);
	cqp->ctx->ccq_addr = cpu_to_le64(cqp->ccq_dma);
	cqp->ctx->ccq_shadow_addr = cpu_to_le64(cqp->shadow_dma);
	/* CCQ completions raise CEQ 0 events once CEQ 0 exists (qrdma_eq.c). */
	cqp->ctx->ccq_ceq = cpu_to_le64(0 | QRDMA_CQP_CTX_CCQ_CEQ_ENABLE);
	cqp->ctx->ccq_ctx = cpu_to_le64(QRDMA_CCQ_CTX);
	*cqp->shadow = 0;

	/* As on the E810: the high half first, the low half starts creation. */
	qrdma_wr32(dev, QRDMA_REG_CCQP_CTX_HIGH, upper_32_bits(cqp->ctx_dma));
	qrdma_wr32(dev, QRDMA_REG_CCQP_CTX_LOW, lower_32_bits(cqp->ctx_dma));
	ret = readl_poll_timeout(dev->regs + QRDMA_REG_CCQP_STATUS, status,
				 status & (QRDMA_CCQP_STATUS_DONE | QRDMA_CCQP_STATUS_ERR),
				 100, cqp_timeout_ms * 1000ULL);
	if (ret || (status & QRDMA_CCQP_STATUS_ERR)) {
		dev_err(d, "control QP creation failed: status 0x%x, error codes 0x%x\n", status,
			qrdma_rd32(dev, QRDMA_REG_CQP_ERRCODES));
		ret = ret ?: -EIO;
		goto err_free;
	}

	ret = qrdma_cqp_exec(dev, QRDMA_CQP_OP_NOP, NULL, NULL);
	if (ret) {
		dev_err(d, "control QP does not answer a NOP: %d\n", ret);
		goto err_free;
	}
	return 0;

err_free:
	/* The device may hold the addresses: forget them before freeing. */
	qrdma_wr32(dev, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
	qrdma_cqp_free(dev);
	return ret;
}

/* Free the rings. The caller has reset the device, so it no longer uses them. */
void qrdma_cqp_free(struct qrdma_dev *dev)
{
	struct device *d = &dev->pdev->dev;
	struct qrdma_cqp *cqp = &dev->cqp;

	if (cqp->ccq)
		dma_free_coherent(d, PAGE_SIZE, cqp->ccq, cqp->ccq_dma);
	if (cqp->sq)
		dma_free_coherent(d, PAGE_SIZE, cqp->sq, cqp->sq_dma);
	if (cqp->ctx)
		dma_free_coherent(d, PAGE_SIZE, cqp->ctx, cqp->ctx_dma);
	cqp->ccq = NULL;
	cqp->sq = NULL;
	cqp->ctx = NULL;
}

/* One command in flight: on its issuer's stack until reaped or abandoned. */
struct qrdma_cqp_waiter {
	struct list_head list;
	u64 scratch;
	u64 retval;
	u64 status;
	bool done;
};

/*
 * Take every CQE the CCQ holds and hand each to the waiter whose scratch
 * it echoes. Called with cqp->lock held, by a waiter polling or by CEQ 0's
 * interrupt; a CQE nobody waits for any more (its waiter timed out) is
 * dropped.
 */
static void qrdma_cqp_reap(struct qrdma_dev *dev)
{
	struct qrdma_cqp *cqp = &dev->cqp;
	struct qrdma_cqp_waiter *w;
	u32 n;

	lockdep_assert_held(&cqp->lock);
	for (n = 0; n < cqp->ccq_len; n++) {
		struct qrdma_ccq_cqe *cqe = &cqp->ccq[cqp->ccq_head];
		u64 hdr = le64_to_cpu(READ_ONCE(cqe->hdr));
		u64 scratch;
		bool found = false;

		if (!!(hdr & QRDMA_CCQ_CQE_VALID) != cqp->ccq_valid)
			break;
		/* Read the body only after seeing VALID. */
		dma_rmb();
		scratch = le64_to_cpu(cqe->scratch);
		list_for_each_entry(w, &cqp->pending, list) {
			if (w->scratch != scratch)
				continue;
			w->status = le64_to_cpu(cqe->status);
			w->retval = le64_to_cpu(cqe->retval);
			WRITE_ONCE(w->done, true);
			list_del_init(&w->list);
			found = true;
			break;
		}
		if (!found)
			dev_warn_ratelimited(&dev->pdev->dev,
					     "CQP completion for scratch %llu, which nobody waits for\n",
					     scratch);
		if (cqp->in_flight)
			cqp->in_flight--;
		cqp->ccq_head = (cqp->ccq_head + 1) & (cqp->ccq_len - 1);
		if (!cqp->ccq_head)
			cqp->ccq_valid = !cqp->ccq_valid;
	}
	if (n)
		WRITE_ONCE(*cqp->shadow, cpu_to_le64(cqp->ccq_head));
}

/* CEQ 0 says the CCQ has news: reap it here and wake the sleepers. IRQ. */
void qrdma_cqp_ccq_event(struct qrdma_dev *dev)
{
	struct qrdma_cqp *cqp = &dev->cqp;
	unsigned long flags;

	spin_lock_irqsave(&cqp->lock, flags);
	qrdma_cqp_reap(dev);
	spin_unlock_irqrestore(&cqp->lock, flags);
	wake_up_all(&cqp->wq);
}

/* Post the waiter's command. Lock held, a free SQ slot known to exist. */
static void qrdma_cqp_post(struct qrdma_dev *dev, struct qrdma_cqp_waiter *w, u8 opcode,
			   const u64 *args)
{
	struct qrdma_cqp *cqp = &dev->cqp;
	struct qrdma_cqp_wqe *wqe = &cqp->sq[cqp->sq_next];
	int i;

	w->scratch = ++cqp->scratch;
	for (i = 0; i < ARRAY_SIZE(wqe->arg); i++)
		wqe->arg[i] = cpu_to_le64(args ? args[i] : 0);
	wqe->scratch = cpu_to_le64(w->scratch);
	/* The body must be visible before the header that makes it valid. */
	dma_wmb();
	WRITE_ONCE(wqe->hdr, cpu_to_le64(opcode | (cqp->sq_valid ? QRDMA_CQP_WQE_VALID : 0)));
	cqp->sq_next = (cqp->sq_next + 1) & (cqp->sq_len - 1);
	if (!cqp->sq_next)
		cqp->sq_valid = !cqp->sq_valid;
	cqp->in_flight++;
	list_add_tail(&w->list, &cqp->pending);
	/* writel orders the WQE's memory writes before the doorbell. */
	qrdma_wr32(dev, QRDMA_REG_CQP_DB, cqp->sq_next);
}

/*
 * Between two looks at the CQP: spin (atomic callers), sleep a little
 * (bring-up, before CEQ 0 exists), or sleep until CEQ 0's handler has
 * reaped something (the short timeout only bounds a lost event).
 */
static void qrdma_cqp_pause(struct qrdma_cqp *cqp, struct qrdma_cqp_waiter *w, bool atomic)
{
	if (atomic)
		udelay(1);
	else if (!READ_ONCE(cqp->event_mode))
		usleep_range(10, 50);
	else if (w)
		wait_event_timeout(cqp->wq, READ_ONCE(w->done) || READ_ONCE(cqp->dead),
				   msecs_to_jiffies(10));
	else
		wait_event_timeout(cqp->wq, READ_ONCE(cqp->in_flight) < cqp->sq_len ||
				   READ_ONCE(cqp->dead), msecs_to_jiffies(10));
}

/*
 * Run one command and wait for its completion: args are its six argument
 * qwords (NULL for none); retval, when given, gets the completion's return
 * value. A command that does not complete within cqp_timeout_ms (including
 * the wait for a free slot) marks the CQP dead and every later one fails.
 */
static int qrdma_cqp_run(struct qrdma_dev *dev, u8 opcode, const u64 *args, u64 *retval,
			 bool atomic)
{
	struct qrdma_cqp *cqp = &dev->cqp;
	struct qrdma_cqp_waiter w = { .done = false };
	ktime_t deadline = ktime_add_ms(ktime_get(), cqp_timeout_ms);
	unsigned long flags;
	bool posted = false;
	u32 major, minor;
	int ret;

	INIT_LIST_HEAD(&w.list);
	spin_lock_irqsave(&cqp->lock, flags);
	for (;;) {
		qrdma_cqp_reap(dev);
		if (w.done) {
			ret = 0;
			break;
		}
		if (cqp->dead) {
			ret = -EIO;
			break;
		}
		if (!posted && cqp->in_flight < cqp->sq_len) {
			qrdma_cqp_post(dev, &w, opcode, args);
			posted = true;
			continue;	/* a polled device may have answered already */
		}
		if (ktime_after(ktime_get(), deadline)) {
			dev_err(&dev->pdev->dev, "CQP %s timed out after %u ms; CQP marked dead\n",
				qrdma_cqp_op_name(opcode), cqp_timeout_ms);
			WRITE_ONCE(cqp->dead, true);
			ret = -EIO;
			break;
		}
		spin_unlock_irqrestore(&cqp->lock, flags);
		qrdma_cqp_pause(cqp, posted ? &w : NULL, atomic);
		spin_lock_irqsave(&cqp->lock, flags);
	}
	/* Abandoned (dead CQP): a late CQE finds no waiter and is dropped. */
	if (!w.done)
		list_del(&w.list);
	spin_unlock_irqrestore(&cqp->lock, flags);
	if (ret) {
		wake_up_all(&cqp->wq);	/* other waiters see dead at once */
		return ret;
	}

	if (retval)
		*retval = w.retval;
	major = (w.status & QRDMA_CCQ_CQE_MAJOR_MASK) >> QRDMA_CCQ_CQE_MAJOR_SHIFT;
	minor = w.status & QRDMA_CCQ_CQE_MINOR_MASK;
	ret = qrdma_cqp_errno(major, minor);
	/* Users can provoke failures (a bad QP transition): rate limit. */
	if (ret)
		dev_warn_ratelimited(&dev->pdev->dev, "CQP %s failed: major %u minor %u\n",
				     qrdma_cqp_op_name(opcode), major, minor);
	return ret;
}

/* Process context: sleeps while the command runs. */
int qrdma_cqp_exec(struct qrdma_dev *dev, u8 opcode, const u64 *args, u64 *retval)
{
	might_sleep();
	return qrdma_cqp_run(dev, opcode, args, retval, false);
}

/*
 * Any context: busy-waits for the completion (a command takes
 * microseconds; cqp_timeout_ms bounds the spin as it bounds a sleep).
 */
int qrdma_cqp_exec_atomic(struct qrdma_dev *dev, u8 opcode, const u64 *args, u64 *retval)
{
	return qrdma_cqp_run(dev, opcode, args, retval, true);
}
