/*
 * qrdma device core: the data path's state and hooks (qrdma_dp.c).
 * Private to the core; qrdma_core_int.h includes it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_DP_H
#define QRDMA_DP_H

#include <stdbool.h>
#include <stdint.h>

#include "qrdma/qrdma_hw.h"
#include "qrdma_backend.h"

struct qrdma_core;

/* No QP: the end of a doorbell page's list. */
#define QRDMA_DP_NO_QP  UINT32_MAX

/* Per QP, beside the object's working copy (indexed by QP ID). */
struct qrdma_dp_qp {
    struct qrdma_be_qp *be_qp;  /* the backend's QP while the object exists */
    /* the QPN peers address it by (the backend's) */
    uint32_t wire_qpn;
    bool kicked;                /* on the kick FIFO */
    bool rq_flush;              /* in error: flush RQ WQEs */
    /*
     * A CQE of this QP could not be written (its CQ overflowed or is in
     * error): the QP goes to ERR with AEQE QP_FATAL, outside the engine's
     * callbacks (cq_lost), once until the next RESET (fatal_raised).
     */
    bool cq_lost, fatal_raised;
    /*
     * SQ WQEs fetched (free running); the next one is at sq_fetched mod size.
     */
    uint32_t sq_fetched;
    /*
     * RQ WQEs a push backend (recv_doorbell) took with get_recv and has not
     * completed yet: the flush of the rest waits for them, so the QP's
     * receive CQEs stay in ring order.
     */
    uint32_t rq_held;
    /*
     * On its doorbell page's list (qrdma_dp.page_first) while the backend
     * QP exists: an SQ notification (qrdma_dp_sq_notify), which names
     * only the page, kicks every QP on it.
     */
    bool on_page;
    uint16_t page;
    uint32_t page_prev, page_next;  /* QP IDs, QRDMA_DP_NO_QP at the ends */
};

/*
 * Per CQ: the arm state the CQ_ARM doorbell loaded (QRDMA_CQ_ARM_*, bits 16 and
 * 17).
 */
struct qrdma_dp_cq {
    uint32_t armed;
};

/* A frame to our own MAC, looping back inside the device. */
struct qrdma_dp_frame {
    struct qrdma_dp_frame *next;
    size_t len;
    uint8_t data[];
};

#define QRDMA_DP_LOOPBACK_MAX   1024    /* frames waiting; more are dropped */

/*
 * The longest frame the backend sends: 4096 bytes of payload and its headers,
 * with room.
 */
#define QRDMA_DP_FRAME_MAX  (4096 + 256)

struct qrdma_dp {
    /*
     * The backend (qrdma_backend.h): its ops, chosen at init for the
     * device's life, and the instance, NULL after qrdma_dp_fini or a
     * backend that could not start again at a reset.
     */
    const struct qrdma_be_ops *ops;
    struct qrdma_be *be;
    /* the station address the backend was last given */
    uint8_t be_mac[6];
    uint32_t nqp, ncq;          /* sizes of the arrays below */
    struct qrdma_dp_qp *qp;
    struct qrdma_dp_cq *cq;
    uint32_t *fifo;             /* QP IDs with SQ or RQ work, nqp slots */
    /*
     * Per doorbell page (cfg.db_pages entries): the first QP of the page's
     * list (qrdma_dp_qp.page_next), QRDMA_DP_NO_QP if none.
     */
    uint32_t *page_first;
    uint32_t fifo_head, fifo_len;
    /* the backend's next timer, UINT64_MAX if none */
    uint64_t deadline;
    struct qrdma_dp_frame *loop_head, *loop_tail;
    uint32_t loop_len;
    uint64_t loop_drops;
    /*
     * Scratch for the SQ WQE being posted (the backend copies what it keeps).
     */
    struct qrdma_be_send_wr wr;
    /* Counters for the stats the glue exposes. */
    uint64_t sq_wqes, rq_wqes, cqes, bad_wqes, cq_overflows;
    /*
     * A frame sent in pieces, joined for the loopback queue or an
     * embedding without send_frame_iov; frames too long for it (none the
     * transport builds) are dropped and counted.
     */
    uint8_t tx_join[QRDMA_DP_FRAME_MAX];
    uint64_t tx_join_drops;
    /*
     * The backend was told QRDMA_BE_TX_BUSY and waits for its tx_ready
     * (qrdma_dp_process calls it once the netdev holds nothing of ours).
     */
    bool be_tx_busy;
    /*
     * A backend on a host NIC (ops->port): its port as last read, and
     * whether QRDMA_BE_EV_PORT_CHANGE asked for a new read.
     */
    struct qrdma_be_port port;
    bool port_stale;
};

/*
 * Backend lifetime: made with the core from the ops given (0, or negative
 * with the reason in err), reset at every device reset, freed by fini.
 */
int qrdma_dp_init(struct qrdma_core *core, const struct qrdma_be_ops *ops,
                  char *err, size_t err_len);
void qrdma_dp_reset(struct qrdma_core *core);
void qrdma_dp_fini(struct qrdma_core *core);

/*
 * Object hooks, called by the CQP commands after they succeeded.
 * qrdma_dp_qp_create: 0 with *wire_qpn (the backend's QPN, CREATE_QP's
 * return value); -ENOMEM; -ENOTSUP when the backend's QPN does not fit
 * 24 bits (the command then forgets the QP).
 */
int qrdma_dp_qp_create(struct qrdma_core *core, uint32_t qp_id,
                       uint32_t *wire_qpn);
void qrdma_dp_qp_modify(struct qrdma_core *core, uint32_t qp_id, uint32_t mask);
void qrdma_dp_qp_destroy(struct qrdma_core *core, uint32_t qp_id);
void qrdma_dp_cq_destroy(struct qrdma_core *core, uint32_t cq_id);
/*
 * MR hooks (qrdma_mr.c): REG_MR or ALLOC_STAG recorded MR stag (0 with
 * *rkey, the rkey peers use and the command's return value; or negative:
 * the command must forget it: -ENOMEM when the backend is out of host
 * resources, -ENOTSUP when a fast-register MR's rkey lacks the STag's key
 * byte); DEALLOC_STAG is about to forget it.
 */
/*
 * SRQ hooks (qrdma_obj.c), for a backend that posts SRQ WQEs ahead
 * (srq_create; a no-op without): CREATE_SRQ recorded SRQ srq_id (0, or
 * negative: the command must forget it; -ENOMEM: out of host resources);
 * MODIFY_SRQ is about to set its limit (0, or negative: the command
 * fails and the old limit stays); DESTROY_SRQ is about to forget it.
 */
int qrdma_dp_srq_create(struct qrdma_core *core, uint32_t srq_id);
int qrdma_dp_srq_modify(struct qrdma_core *core, uint32_t srq_id,
                        uint32_t limit);
void qrdma_dp_srq_destroy(struct qrdma_core *core, uint32_t srq_id);
int qrdma_dp_mr_register(struct qrdma_core *core, uint32_t stag,
                         uint32_t *rkey);
void qrdma_dp_mr_deregister(struct qrdma_core *core, uint32_t stag);

/* Doorbells (page, offset inside the page, value). */
void qrdma_dp_doorbell(struct qrdma_core *core, uint32_t page, uint32_t offset,
                       uint32_t value);
/*
 * An SQ doorbell of @page whose value was not seen (qrdma_core_db_notify):
 * every QP of the page is kicked, and finds its new WQEs by their VALID bits.
 */
void qrdma_dp_sq_notify(struct qrdma_core *core, uint32_t page);
/* A RoCEv2 frame for one of our GIDs arrived. */
void qrdma_dp_rx_frame(struct qrdma_core *core, const uint8_t *frame,
                       size_t len);
/*
 * A frame for a multicast group, to the QPs qp_id[0..n) attached to it (n <=
 * QRDMA_BE_MCAST_MAX_QPS).
 */
void qrdma_dp_rx_mcast(struct qrdma_core *core, const uint8_t *frame,
                       size_t len, const uint32_t *qp_id, uint32_t n);
/* Work kicked by a doorbell or a frame, or the engine's timer. */
void qrdma_dp_process(struct qrdma_core *core);

/*
 * A backend on a host NIC (ops->port): is the port the host's, and is gid
 * (network order) one of the host GIDs the guest may use?
 */
bool qrdma_dp_host_port(const struct qrdma_core *core);
bool qrdma_dp_host_gid(const struct qrdma_core *core, const uint8_t gid[16]);
/* The host GIDs as text, for a guest error: "::ffff:10.0.0.1 (host 3), ..." */
void qrdma_dp_host_gids_str(const struct qrdma_core *core, char *buf,
                            size_t len);
/*
 * Read the host port again and show it in PORT_SPEED and the HOST_GID
 * registers (device reset, QRDMA_BE_EV_PORT_CHANGE).
 */
void qrdma_dp_port_refresh(struct qrdma_core *core);

/*
 * Saved state (qrdma_mig.c): the data path's section, both ways (struct
 * qrdma_mig).
 */
struct qrdma_mig;
void qrdma_dp_mig(struct qrdma_core *core, struct qrdma_mig *m);

#endif /* QRDMA_DP_H */
