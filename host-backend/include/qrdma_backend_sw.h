/*
 * The sw backend (host-backend/sw/sw_backend.c): the backend contract of
 * qrdma_backend.h over the software RoCEv2 engine of qrdma_sw.h. The
 * device core knows it only as qrdma_be_sw_ops; what is here besides is
 * for tests and benchmarks that look at the engine behind a device.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_BACKEND_SW_H
#define QRDMA_BACKEND_SW_H

#include "qrdma_backend.h"
#include "qrdma_sw.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The engine of a sw backend (NULL for NULL): its statistics, its fault
 * injection.
 */
struct qsw_engine *qrdma_be_sw_engine(struct qrdma_be *be);
/* The engine's QP behind a sw backend's QP handle (NULL for NULL). */
struct qsw_qp *qrdma_be_sw_qp(struct qrdma_be_qp *qp);

#ifdef __cplusplus
}
#endif

#endif /* QRDMA_BACKEND_SW_H */
