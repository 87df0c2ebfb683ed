/*
 * The device core on a real host RDMA device, as a process (no QEMU):
 * what qrdma-verbs-rxe (tests/unit/verbs_rxe.c, two cores) and
 * qrdma-verbs-stock (tests/unit/verbs_stock.c, one core against stock
 * rdma-core tools) share. A side of the two-core bed (dp_testbed.h) gets
 * the verbs backend on host device vh_ibdev, port 1, GID vh_gid_index,
 * and a memfd as its guest RAM, as memory-backend-memfd,share=on gives
 * QEMU.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_VERBS_HOST_H
#define QRDMA_VERBS_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "dp_testbed.h"
#include "qrdma_backend_verbs.h"

extern const char *vh_ibdev;
extern int vh_gid_index;
/* The host GID at vh_gid_index: the cores' port GID and the address their AVs name. */
extern uint8_t vh_host_gid[16];
extern struct qrdma_be_verbs_config vh_cfg[2];

/*
 * The host device ibdev and its GID index gid_index (a decimal string):
 * vh_ibdev, vh_gid_index and vh_host_gid set; -1, said on stderr, if the
 * device has no such GID on port 1.
 */
int vh_host(const char *ibdev, const char *gid_index);
/* Side idx's guest RAM: a memfd of RAM_SIZE at RAM_BASE, in vh_cfg[idx]. */
void vh_memfd_ram(struct side *s, int idx);
/* Side idx brought up (side_up) with the verbs backend of vh_cfg[idx] and the host GID. */
void vh_side_up(struct side *s, int idx);
/*
 * Run the data paths of the first nsides sides, waking on their backends'
 * fds, until a CQE is on s's CQ cq; false (said on stderr) after timeout_s.
 */
bool vh_wait_cqe(struct side *s, uint32_t cq, struct cqe *e, int nsides, unsigned timeout_s);
/*
 * RC QP id on both sides (rc_spec), each RESET -> RTS toward the other's
 * host QPN, which it returns in qpn[0] (side A's) and qpn[1] (side B's).
 */
void vh_rc_pair(uint32_t id, uint32_t qpn[2]);
/* The first nsides cores finished (their backends release the host objects), then their RAM. */
void vh_fini(int nsides);

#endif /* QRDMA_VERBS_HOST_H */
