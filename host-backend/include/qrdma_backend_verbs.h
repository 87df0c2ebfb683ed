/*
 * The host-verbs backend (host-backend/verbs/): guest QPs and MRs on a
 * host RDMA device through libibverbs, payload never copied. This header
 * is what an embedding (the QEMU glue, a test, a harness process) gives
 * it beyond the contract of qrdma_backend.h: which host device and port,
 * and where guest RAM is in this process. docs/backends.md, "The verbs
 * backend", is its prose.
 *
 * Plain C: no QEMU types. Including it does not need libibverbs; building
 * host-backend/verbs/ does.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_BACKEND_VERBS_H
#define QRDMA_BACKEND_VERBS_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "qrdma_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * One range of guest RAM: guest-physical [gpa, gpa + size) is at host
 * virtual address hva in this process and, when fd >= 0, at offset
 * fd_offset of fd (a memfd or hugetlbfs file mapped shared). The fd lets
 * the backend map an MR's scattered guest pages contiguously (an alias)
 * for one host registration; without it only MRs whose pages are already
 * contiguous in hva can be registered.
 */
struct qrdma_be_verbs_ram {
    uint64_t gpa;
    uint64_t size;
    void *hva;
    int fd;
    uint64_t fd_offset;
};

#define QRDMA_BE_VERBS_MAX_RAM 16

/* the libibverbs calls used (host-backend/verbs/vb_verbs.h) */
struct qrdma_vb_verbs;
/* the host rdma_cm calls the CM proxy makes (host-backend/verbs/vb_cm.h) */
struct vb_cmh_ops;

#define QRDMA_BE_VERBS_MAX_LISTEN 16    /* cm_listen's ports */

/* qrdma_be_params.backend_config of backend=verbs. */
struct qrdma_be_verbs_config {
    /* host device name (ibv_get_device_name), e.g. "rxe0" */
    const char *ibdev;
    uint8_t ibport;             /* host port, 1-based */
    /*
     * The host GIDs the guest may use, by host GID table index: the
     * ngids entries of gid_indexes, or gid_index alone when ngids is 0.
     * They are the guest's port GIDs (docs/backends.md).
     */
    uint8_t gid_index;
    unsigned ngids;
    uint8_t gid_indexes[QRDMA_BE_PORT_MAX_GIDS];
    unsigned nram;
    struct qrdma_be_verbs_ram ram[QRDMA_BE_VERBS_MAX_RAM];
    /* NULL: libibverbs itself (vb_libibverbs.c); tests pass a mock. */
    const struct qrdma_vb_verbs *verbs;
    /*
     * rdma_cm for the guest (docs/backends.md, "rdma_cm in verbs mode"):
     * with cm_proxy the device has a GSI QP whose CM MADs the CM proxy
     * carries through the host's rdma_cm, listening for peers on the
     * TCP and UDP port-space ports cm_listen names (on every guest GID);
     * without it the device has no GSI QP and the guest's rdma_cm fails
     * at once.
     */
    bool cm_proxy;
    /*
     * With cm_optional, a proxy that cannot start (a program built
     * without librdmacm, no host rdma_cm, a port taken) leaves the device
     * without a GSI QP instead of failing create, and says why in
     * cm_off_why (cm_off_why_len bytes) for the embedding to report.
     */
    bool cm_optional;
    char *cm_off_why;
    size_t cm_off_why_len;
    unsigned ncm_listen;
    uint16_t cm_listen[QRDMA_BE_VERBS_MAX_LISTEN];
    /*
     * NULL: librdmacm itself (vb_librdmacm.c, when built with it); tests
     * pass a model and its handle.
     */
    const struct vb_cmh_ops *cm_ops;
    void *cm_host;
    /* How long the proxy waits for the guest's next CM MAD (0: 60 s). */
    uint64_t cm_guest_timeout_ns;
};

/*
 * The fd an embedding watches (readable: call the backend's poll through
 * the core's data path): the host completion channel and async events.
 * -1 when the backend has none. Also reachable as qrdma_be_ops.wait_fd.
 */
int qrdma_be_verbs_wait_fd(struct qrdma_be *be);

extern const struct qrdma_be_ops qrdma_be_verbs_ops;

#ifdef __cplusplus
}
#endif

#endif /* QRDMA_BACKEND_VERBS_H */
