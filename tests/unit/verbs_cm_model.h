/*
 * A model of the host's rdma_cm for the CM proxy's tests (struct
 * vb_cmh_ops): hosts in one process, each with its GIDs, an event queue
 * and its IDs; what one host's ID does arrives at the other's as the
 * kernel's rdma_cm would report it (CONNECT_REQUEST on a listener,
 * CONNECT_RESPONSE for a QP-less active ID, ESTABLISHED, DISCONNECTED,
 * REJECTED with the REJ reason, SIDR's ESTABLISHED with the UD QPN and
 * Q_Key). Each ID gets a random starting PSN, as the kernel's does: the
 * PSN it expects to receive, which its REQ or REP tells the peer;
 * rdma_init_qp_attr (qp_attrs) gives it for RTR, and the peer's for RTS.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_VERBS_CM_MODEL_H
#define QRDMA_VERBS_CM_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "vb_cm.h"

#define CMM_MAX_IDS     640
#define CMM_MAX_EVENTS  512

struct cmm_world;
struct cmm_host;

extern const struct vb_cmh_ops cmm_ops;

struct cmm_world *cmm_world_new(uint32_t seed);
void cmm_world_free(struct cmm_world *w);
/* A host named ibdev (port 1) owning gid; the handle for the proxy's host. */
struct cmm_host *cmm_host_new(struct cmm_world *w, const char *ibdev,
                              const uint8_t gid[16]);
/*
 * Give host h an fd (an eventfd) that is readable while it has events, as
 * the rdma_cm channel's is; without it the model has none (vb_cm_fd -1).
 * Closed by cmm_world_free.
 */
void cmm_host_use_fd(struct cmm_host *h);
/* IDs the host holds now (listeners included); events queued for it. */
unsigned cmm_host_ids(const struct cmm_host *h);
unsigned cmm_host_events(const struct cmm_host *h);
/* The next call of this kind on host h fails with err (once). */
enum cmm_call { CMM_CREATE_ID, CMM_RESOLVE_ADDR, CMM_CONNECT, CMM_ACCEPT };
void cmm_fail_next(struct cmm_host *h, enum cmm_call call, int err);
/* The starting PSN the host's ID for QP qpn told its peer (it receives from it). */
bool cmm_host_psn(const struct cmm_host *h, uint32_t qpn, uint32_t *psn);

#endif /* QRDMA_VERBS_CM_MODEL_H */
