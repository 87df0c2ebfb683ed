/*
 * A mock host RDMA device behind the verbs backend's table of libibverbs
 * calls (host-backend/verbs/vb_verbs.h), for unit tests without RDMA
 * hardware. It hands out its own QPNs and keys (never equal to the
 * guest's), records every call's arguments, holds completions and async
 * events the test pushes, signals them on real fds (so the backend's
 * epoll fd works), counts live objects (leaks show), and fails a call
 * with an errno on request.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_VERBS_MOCK_H
#define QRDMA_VERBS_MOCK_H

#include <stdbool.h>

#include "../../host-backend/verbs/vb_verbs.h"

#define VM_MAX_OBJ   64
#define VM_MAX_WR    64
#define VM_MAX_WC    64
#define VM_MAX_EV    16

struct vm_qp {
    struct ibv_qp qp;
    struct ibv_qp_init_attr init;
    /* modify_qp calls */
    unsigned modifies;
    struct ibv_qp_attr attr[8];
    int mask[8];
    /* posted WRs, with their SGEs copied */
    struct ibv_send_wr send[VM_MAX_WR];
    struct ibv_sge send_sge[VM_MAX_WR][32];
    uint8_t inline_copy[VM_MAX_WR][64];
    unsigned nsend;
    struct ibv_recv_wr recv[VM_MAX_WR];
    struct ibv_sge recv_sge[VM_MAX_WR][32];
    unsigned nrecv;
};

struct vm_cq {
    struct ibv_cq cq;
    struct ibv_wc wc[VM_MAX_WC];
    unsigned head, tail;
    bool armed;
    int cqe;
};

struct vm_srq {
    struct ibv_srq srq;
    struct ibv_srq_init_attr init;
    uint32_t limit;                     /* the last IBV_SRQ_LIMIT set */
    unsigned modifies;
    struct ibv_recv_wr recv[VM_MAX_WR];
    struct ibv_sge recv_sge[VM_MAX_WR][32];
    unsigned nrecv;
};

struct vm_mr {
    struct ibv_mr mr;
    uint64_t iova;
    unsigned access;
    /*
     * The window a bind the host ran put on this MR (set by a test when it
     * completes the bind): dereg refuses with EBUSY while there is one, as
     * rxe does; dealloc_mw of that window clears it.
     */
    struct ibv_mw *bound_mw;
};

struct vm_ah {
    struct ibv_ah ah;
    struct ibv_ah_attr attr;
};

struct verbs_mock {
    /* the device */
    const char *name;                   /* "mock0" */
    enum ibv_port_state port_state;     /* ACTIVE */
    uint8_t active_speed, active_width; /* 0, 0: unknown */
    /*
     * GID index i (0..7) is ::ffff:10.0.0.(1 + i + gid_shift), RoCE v2
     * unless gid_type[i] says otherwise (the mock's reset sets V2)
     */
    bool gid_zero;                      /* query_gid gives ::, as a missing GID */
    bool gid_gone[8];                   /* :: at that index alone */
    uint8_t gid_shift;
    uint32_t gid_type[8];
    int fail_query_gid_type;            /* errno query_gid_type fails with */
    /* errno the next call of each kind fails with (0: succeed) */
    int fail_create_qp, fail_create_cq, fail_reg_mr, fail_post_send, fail_create_ah;
    /* deregs tried while a window was still on the MR (vm_mr.bound_mw) */
    unsigned dereg_busy;
    int fail_create_srq, fail_alloc_mw;
    /* live objects and call counts */
    int live_ctx, live_ch, live_pd, live_cq, live_qp, live_mr, live_ah, live_srq, live_mw;
    unsigned create_ah_calls, acked_async, acked_cq;
    /* reads of the completion channel and of the async events, empty or not */
    unsigned get_cq_event_calls, get_async_event_calls;
    /* the objects, in creation order */
    struct vm_qp *qps[VM_MAX_OBJ];
    unsigned nqps;
    struct vm_cq *cqs[VM_MAX_OBJ];
    unsigned ncqs;
    struct vm_mr *mrs[VM_MAX_OBJ];
    unsigned nmrs;
    struct vm_ah *ahs[VM_MAX_OBJ];
    unsigned nahs;
    struct vm_srq *srqs[VM_MAX_OBJ];
    unsigned nsrqs;
    struct ibv_mw *mws[VM_MAX_OBJ];
    unsigned nmws;
    struct ibv_context *ctx;
    struct ibv_comp_channel *ch;
    /* channel events and async events not read yet */
    struct ibv_cq *cq_ev[VM_MAX_EV * 4];
    unsigned cq_ev_head, cq_ev_tail;
    struct ibv_async_event async_ev[VM_MAX_EV];
    unsigned async_head, async_tail;
    uint32_t next_qpn, next_key;
};

extern struct verbs_mock vmock;
extern const struct qrdma_vb_verbs verbs_mock_table;

/* Forget everything (call after the backend destroyed its objects). */
void verbs_mock_reset(void);
/* A completion into cq; an event on its channel if the CQ was armed. */
void verbs_mock_cq_push(struct ibv_cq *cq, const struct ibv_wc *wc);
/* The host ran send WR wr_id of q: its completion, with status and opcode. */
void verbs_mock_send_done(struct vm_qp *q, uint64_t wr_id, enum ibv_wc_status status,
                          enum ibv_wc_opcode opcode);
void verbs_mock_async_push(enum ibv_event_type type, void *element);
/* The mock QP whose host QPN is qpn, or NULL. */
struct vm_qp *verbs_mock_qp(uint32_t qpn);
/* The last MR registered; whether an MR is still registered. */
struct vm_mr *verbs_mock_last_mr(void);
bool verbs_mock_mr_live(const struct vm_mr *m);

#endif /* QRDMA_VERBS_MOCK_H */
