/*
 * The device core on a real host RDMA device, as a process: see
 * verbs_host.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_host.h"

const char *vh_ibdev;
int vh_gid_index;
uint8_t vh_host_gid[16];
struct qrdma_be_verbs_config vh_cfg[2];

int vh_host(const char *ibdev, const char *gid_index)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_context *ctx = NULL;
    union ibv_gid gid;
    int i, ret = -1;

    vh_ibdev = ibdev;
    vh_gid_index = atoi(gid_index);
    for (i = 0; list && list[i]; i++) {
        if (!strcmp(ibv_get_device_name(list[i]), vh_ibdev)) {
            ctx = ibv_open_device(list[i]);
        }
    }
    if (ctx && !ibv_query_gid(ctx, 1, vh_gid_index, &gid)) {
        memcpy(vh_host_gid, gid.raw, 16);
        ret = 0;
    }
    if (ctx) {
        ibv_close_device(ctx);
    }
    if (ret) {
        fprintf(stderr, "%s: no GID %d on port 1\n", vh_ibdev, vh_gid_index);
    }
    if (list) {
        ibv_free_device_list(list);
    }
    return ret;
}

void vh_memfd_ram(struct side *s, int idx)
{
    struct qrdma_be_verbs_config *c = &vh_cfg[idx];
    int fd = memfd_create("qrdma-guest-ram", MFD_CLOEXEC);

    CHECK(fd >= 0 && !ftruncate(fd, RAM_SIZE));
    s->ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(s->ram != MAP_FAILED);
    memset(c, 0, sizeof(*c));
    c->ibdev = vh_ibdev;
    c->ibport = 1;
    c->gid_index = (uint8_t)vh_gid_index;
    c->nram = 1;
    c->ram[0] = (struct qrdma_be_verbs_ram){ RAM_BASE, RAM_SIZE, s->ram, fd, 0 };
}

void vh_side_up(struct side *s, int idx)
{
    dev_backend_ops = &qrdma_be_verbs_ops;
    dev_backend_config = &vh_cfg[idx];
    /* The port's GID is the host's: ADD_GID accepts no other. */
    dev_gid = vh_host_gid;
    side_up(s, idx);
    dev_backend_ops = NULL;
    dev_backend_config = NULL;
    dev_gid = NULL;
}

bool vh_wait_cqe(struct side *s, uint32_t cq, struct cqe *e, int nsides, unsigned timeout_s)
{
    struct timespec t0, t;
    int i;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct pollfd p[2];

        for (i = 0; i < nsides; i++) {
            qrdma_core_run(&sides[i].core, QRDMA_WORK_DP);
            p[i] = (struct pollfd){ .fd = qrdma_core_backend_wait_fd(&sides[i].core),
                                    .events = POLLIN };
        }
        if (poll_cq(s, cq, e)) {
            return true;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > (time_t)timeout_s) {
            fprintf(stderr, "  no CQE on side %d CQ %u in %u s\n", s->idx, cq, timeout_s);
            return false;
        }
        /* Short: the backend also takes SRQ WQEs the guest posted without a doorbell. */
        poll(p, nsides, 10);
    }
}

void vh_rc_pair(uint32_t id, uint32_t qpn[2])
{
    create_qp(SA, id, &rc_spec);
    qpn[0] = (uint32_t)last_retval;
    create_qp(SB, id, &rc_spec);
    qpn[1] = (uint32_t)last_retval;
    rc_to_rts(SA, id, SB, qpn[1], 7);
    rc_to_rts(SB, id, SA, qpn[0], 7);
}

void vh_fini(int nsides)
{
    int i;

    for (i = 0; i < nsides; i++) {
        qrdma_core_fini(&sides[i].core);
        if (sides[i].ram) {
            munmap(sides[i].ram, RAM_SIZE);
            sides[i].ram = NULL;
        }
    }
}
