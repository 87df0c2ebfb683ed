/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * qrdma hardware interface: PCI identity, BAR layout, BAR0 registers and
 * their fields. The QEMU device, the Linux driver and the rdma-core
 * provider all include this one file; docs/hw-spec.md is its prose.
 *
 * Data only: constants, field positions and masks, size checks. Registers
 * are 32 bits wide, little endian, accessed with aligned 32-bit reads and
 * writes only. Fields are given as a mask and a shift; no C bitfields.
 */
#ifndef QRDMA_HW_H
#define QRDMA_HW_H

/* A mask of bits h..l of a 32-bit word, h >= l. */
#define QRDMA_MASK32(h, l) ((0xffffffffu >> (31 - (h))) & ~((1u << (l)) - 1u))

/* ---- PCI identity ---------------------------------------------------- */

/*
 * 1b36 is QEMU's own vendor ID; 00e8 is free in the pinned QEMU's
 * docs/specs/pci-ids.rst and in every in-kernel driver's ID table.
 */
#define QRDMA_PCI_VENDOR_ID		0x1b36
#define QRDMA_PCI_DEVICE_ID		0x00e8
#define QRDMA_PCI_REVISION		0x01
#define QRDMA_PCI_CLASS			0x0200	/* Ethernet controller */

/* ---- BARs ------------------------------------------------------------ */

#define QRDMA_BAR_REGS			0	/* registers, 32-bit MMIO */
#define QRDMA_BAR_DOORBELL		2	/* doorbell pages, 64-bit MMIO */
#define QRDMA_BAR_MSIX			4	/* MSI-X table and PBA */

#define QRDMA_BAR_REGS_SIZE		0x10000u
#define QRDMA_DB_PAGE_SIZE		4096u
/*
 * Doorbell page 0 belongs to the kernel driver; pages 1..DB_PAGES-1 are
 * handed out one per user context and mmapped into that process only.
 */
#define QRDMA_DB_PAGE_KERNEL		0

/* ---- BAR0 register map ----------------------------------------------- */

/* Identity block (0x000-0x0ff), read-only. */
#define QRDMA_REG_SIGNATURE		0x000	/* reads QRDMA_SIGNATURE */
#define QRDMA_REG_IF_VERSION		0x004
#define QRDMA_REG_HW_REV		0x008
#define QRDMA_REG_FW_VERSION		0x00c
#define QRDMA_REG_MAC_LOW		0x010	/* MAC bytes 0..3, byte 0 in bits 7:0 */
#define QRDMA_REG_MAC_HIGH		0x014	/* MAC bytes 4..5 in bits 15:0 */
#define QRDMA_REG_BOARD_ID		0x020	/* 16 bytes of ASCII, NUL padded */
#define QRDMA_BOARD_ID_LEN		16

#define QRDMA_SIGNATURE			0x414d4452u	/* "RDMA" in memory order */

/* Interface version: the driver refuses a device whose major differs. */
#define QRDMA_IF_VERSION_MAJOR_MASK	QRDMA_MASK32(31, 16)
#define QRDMA_IF_VERSION_MAJOR_SHIFT	16
#define QRDMA_IF_VERSION_MINOR_MASK	QRDMA_MASK32(15, 0)
#define QRDMA_IF_VERSION_MAJOR		0
#define QRDMA_IF_VERSION_MINOR		1

#define QRDMA_FW_VERSION_MAJOR_MASK	QRDMA_MASK32(31, 24)
#define QRDMA_FW_VERSION_MAJOR_SHIFT	24
#define QRDMA_FW_VERSION_MINOR_MASK	QRDMA_MASK32(23, 16)
#define QRDMA_FW_VERSION_MINOR_SHIFT	16
#define QRDMA_FW_VERSION_PATCH_MASK	QRDMA_MASK32(15, 0)

/* Control block (0x100-0x1ff). */
#define QRDMA_REG_DEV_CTRL		0x100	/* RW */
#define QRDMA_REG_PE_STATUS		0x104	/* RO, E810 GLPE_CPUSTATUS */
#define QRDMA_REG_GUEST_ERRORS		0x108	/* RO, saturating count */
#define QRDMA_REG_SCRATCH		0x10c	/* RW, no effect */

/*
 * DEV_CTRL.RESET: writing 1 resets the whole RDMA engine and LAN function
 * to power-on state. It reads back 0. PE_STATUS drops to 0 and the driver
 * must poll it until it reads QRDMA_PE_STATUS_READY again.
 */
#define QRDMA_DEV_CTRL_RESET		0x00000001u
#define QRDMA_DEV_CTRL_VALID_MASK	QRDMA_DEV_CTRL_RESET

/* As on the E810, the protocol engine is ready when its status reads 0x80. */
#define QRDMA_PE_STATUS_READY		0x80u

/* Capability block (0x200-0x2ff), read-only. Counts are maxima. */
#define QRDMA_REG_CAP_MAX_QP		0x200
#define QRDMA_REG_CAP_MAX_CQ		0x204
#define QRDMA_REG_CAP_MAX_MR		0x208
#define QRDMA_REG_CAP_MAX_PD		0x20c
#define QRDMA_REG_CAP_MAX_SRQ		0x210
#define QRDMA_REG_CAP_MAX_AH		0x214
#define QRDMA_REG_CAP_MAX_QP_WR		0x218	/* WQEs per SQ or RQ */
#define QRDMA_REG_CAP_MAX_SRQ_WR	0x21c
#define QRDMA_REG_CAP_MAX_CQE		0x220	/* CQEs per CQ */
#define QRDMA_REG_CAP_MAX_SEND_SGE	0x224
#define QRDMA_REG_CAP_MAX_RECV_SGE	0x228
#define QRDMA_REG_CAP_MAX_INLINE	0x22c	/* bytes */
#define QRDMA_REG_CAP_PAGE_SIZES	0x230	/* bit n set: 2^n-byte pages */
#define QRDMA_REG_CAP_MAX_MR_SIZE_LO	0x234
#define QRDMA_REG_CAP_MAX_MR_SIZE_HI	0x238
#define QRDMA_REG_CAP_MAX_RD_ATOM	0x23c	/* reads/atomics in flight, initiator */
#define QRDMA_REG_CAP_MAX_RESP_RES	0x240	/* responder resources */
#define QRDMA_REG_CAP_MAX_MTU		0x244	/* bytes: 256, 512, ... 4096 */
#define QRDMA_REG_CAP_GID_TABLE_LEN	0x248
#define QRDMA_REG_CAP_DB_PAGES		0x24c	/* pages in the doorbell BAR */
#define QRDMA_REG_CAP_MSIX_VECTORS	0x250
#define QRDMA_REG_CAP_MAX_CEQ		0x254
#define QRDMA_REG_CAP_FEATURES		0x258	/* QRDMA_FEATURE_* */

/*
 * Features the engine implements. A bit is set only once the device
 * carries it end to end; interface 0.1 sets none of them.
 */
#define QRDMA_FEATURE_RC		0x00000001u
#define QRDMA_FEATURE_UD		0x00000002u
#define QRDMA_FEATURE_UC		0x00000004u
#define QRDMA_FEATURE_SRQ		0x00000008u
#define QRDMA_FEATURE_ATOMIC		0x00000010u
#define QRDMA_FEATURE_MW		0x00000020u
#define QRDMA_FEATURE_FAST_REG		0x00000040u

#define QRDMA_PAGE_SIZE_4K		(1u << 12)
#define QRDMA_PAGE_SIZE_2M		(1u << 21)
#define QRDMA_PAGE_SIZE_1G		(1u << 30)

/* Port block (0x300-0x3ff), read-only. */
#define QRDMA_REG_PORT_STATUS		0x300
#define QRDMA_REG_PORT_SPEED		0x304	/* Mb/s */

#define QRDMA_PORT_STATUS_LINK_UP	0x00000001u

/* The plain register file ends here; blocks above are decoded by range. */
#define QRDMA_REG_FILE_END		0x400

/*
 * Blocks reserved for the control path and the LAN function. Interface
 * 0.1 implements none of them: accesses are logged and ignored.
 */
#define QRDMA_REG_CQP_BASE		0x1000	/* CCQPHIGH/LOW, CCQPSTATUS, CQPDB, CQPTAIL, CQPERRCODES */
#define QRDMA_REG_HMC_BASE		0x2000	/* SDCMD, SDDATALOW/HIGH, PDINV */
#define QRDMA_REG_INTR_BASE		0x3000	/* DYN_CTL(i), CEQCTL(i), AEQCTL */
#define QRDMA_REG_LAN_BASE		0x4000	/* LAN queue registers */
#define QRDMA_REG_BLOCK_SIZE		0x1000

_Static_assert(QRDMA_MASK32(31, 16) == 0xffff0000u, "QRDMA_MASK32");
_Static_assert(QRDMA_MASK32(15, 0) == 0x0000ffffu, "QRDMA_MASK32");
_Static_assert(QRDMA_MASK32(0, 0) == 0x00000001u, "QRDMA_MASK32");
_Static_assert(QRDMA_REG_CAP_FEATURES < 0x300, "capability block overflow");
_Static_assert(QRDMA_REG_BOARD_ID + QRDMA_BOARD_ID_LEN <= 0x100, "identity block overflow");

#endif /* QRDMA_HW_H */
