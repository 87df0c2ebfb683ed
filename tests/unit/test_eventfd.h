/*
 * An eventfd as the tests' stand-in for a host channel's fd: readable
 * while the fake has something queued (the mock's completion channel and
 * async fd, the rdma_cm model's channel).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_TEST_EVENTFD_H
#define QRDMA_TEST_EVENTFD_H

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* Something was queued: the fd reads ready. */
static inline void fd_signal(int fd)
{
    uint64_t one = 1;

    if (write(fd, &one, sizeof(one)) != sizeof(one)) {
        abort();
    }
}

/* The queue is empty: the fd no longer reads ready. */
static inline void fd_clear(int fd)
{
    uint64_t v;

    (void)!read(fd, &v, sizeof(v));
}

#endif /* QRDMA_TEST_EVENTFD_H */
