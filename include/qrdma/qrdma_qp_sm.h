/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * qrdma: the IB QP state machine as data. Which QP types may move from
 * one state to another, from IBTA vol. 1 section 10.3.1 (the state
 * diagram) and 11.2.4.2 (Modify QP), as Linux's ib_modify_qp_is_ok()
 * table also has it: RESET -> INIT -> RTR -> RTS, RTS <-> SQD, SQE -> RTS
 * (UC and UD only: RC never enters SQE), INIT, RTS and SQD to themselves,
 * every state to RESET, and every state but RESET to ERR.
 *
 * One table for every component that runs the state machine: the
 * device's MODIFY_QP (which adds, per transition, the attributes IB
 * requires and allows) and the software transport's qsw_qp_modify(). It
 * is data only and includes no device or transport header beyond the
 * hardware interface's state numbers (enum qrdma_qp_state, the values of
 * ib_qp_state and ibv_qp_state); include it only where the table is used.
 */
#ifndef QRDMA_QP_SM_H
#define QRDMA_QP_SM_H

#include "qrdma/qrdma_hw.h"

#define QRDMA_QP_NUM_STATES		(QRDMA_QPS_ERR + 1)

/* QP types as the table's columns; the GSI QP (QP 1, UD) has IB's own. */
enum qrdma_qp_kind {
	QRDMA_QPK_RC,
	QRDMA_QPK_UC,
	QRDMA_QPK_UD,
	QRDMA_QPK_GSI,
	QRDMA_QPK_NUM,
};

#define QRDMA_QPK_BIT(k)		(1u << (k))
#define QRDMA_QPK_ALL			(QRDMA_QPK_BIT(QRDMA_QPK_RC) | QRDMA_QPK_BIT(QRDMA_QPK_UC) | \
					 QRDMA_QPK_BIT(QRDMA_QPK_UD) | QRDMA_QPK_BIT(QRDMA_QPK_GSI))
#define QRDMA_QPK_NOT_RC		(QRDMA_QPK_ALL & ~QRDMA_QPK_BIT(QRDMA_QPK_RC))

/*
 * [current][next]: the QRDMA_QPK_BIT()s of the QP types that may take the
 * transition; 0 (an absent entry) forbids it for every type.
 */
static const unsigned char qrdma_qp_transitions[QRDMA_QP_NUM_STATES][QRDMA_QP_NUM_STATES] = {
	[QRDMA_QPS_RESET] = {
		[QRDMA_QPS_RESET] = QRDMA_QPK_ALL,
		[QRDMA_QPS_INIT] = QRDMA_QPK_ALL,
	},
	[QRDMA_QPS_INIT] = {
		[QRDMA_QPS_RESET] = QRDMA_QPK_ALL,
		[QRDMA_QPS_ERR] = QRDMA_QPK_ALL,
		[QRDMA_QPS_INIT] = QRDMA_QPK_ALL,
		[QRDMA_QPS_RTR] = QRDMA_QPK_ALL,
	},
	[QRDMA_QPS_RTR] = {
		[QRDMA_QPS_RESET] = QRDMA_QPK_ALL,
		[QRDMA_QPS_ERR] = QRDMA_QPK_ALL,
		[QRDMA_QPS_RTS] = QRDMA_QPK_ALL,
	},
	[QRDMA_QPS_RTS] = {
		[QRDMA_QPS_RESET] = QRDMA_QPK_ALL,
		[QRDMA_QPS_ERR] = QRDMA_QPK_ALL,
		[QRDMA_QPS_RTS] = QRDMA_QPK_ALL,
		[QRDMA_QPS_SQD] = QRDMA_QPK_ALL,
	},
	[QRDMA_QPS_SQD] = {
		[QRDMA_QPS_RESET] = QRDMA_QPK_ALL,
		[QRDMA_QPS_ERR] = QRDMA_QPK_ALL,
		[QRDMA_QPS_RTS] = QRDMA_QPK_ALL,
		[QRDMA_QPS_SQD] = QRDMA_QPK_ALL,
	},
	[QRDMA_QPS_SQE] = {
		[QRDMA_QPS_RESET] = QRDMA_QPK_ALL,
		[QRDMA_QPS_ERR] = QRDMA_QPK_ALL,
		[QRDMA_QPS_RTS] = QRDMA_QPK_NOT_RC,
	},
	[QRDMA_QPS_ERR] = {
		[QRDMA_QPS_RESET] = QRDMA_QPK_ALL,
		[QRDMA_QPS_ERR] = QRDMA_QPK_ALL,
	},
};

#endif /* QRDMA_QP_SM_H */
