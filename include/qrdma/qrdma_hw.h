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

#include <linux/types.h>

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
#define QRDMA_IF_VERSION_MINOR		13

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
 * Object counters (RO, live): how many objects of each type exist now,
 * one register per HMC type QP..AH (enum qrdma_hmc_type): QPs, CQs, SRQs,
 * MRs (every STag index that is not QRDMA_MR_STATE_NONE) and AHs. A create
 * adds one, a destroy (DEALLOC_STAG for MRs) takes it back, and reset makes
 * them 0 with the objects. A driver that has destroyed all it created
 * reads 0 in every one: the lifecycle tests' proof that nothing leaked.
 */
#define QRDMA_REG_OBJ_COUNT(t)		(0x110 + 4 * (t))	/* t < QRDMA_HMC_PBLE */
#define QRDMA_REG_OBJ_COUNT_QP		0x110
#define QRDMA_REG_OBJ_COUNT_CQ		0x114
#define QRDMA_REG_OBJ_COUNT_SRQ		0x118
#define QRDMA_REG_OBJ_COUNT_MR		0x11c
#define QRDMA_REG_OBJ_COUNT_AH		0x120

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
/* Interface 0.10, with QRDMA_FEATURE_MCAST (0 without it). */
#define QRDMA_REG_CAP_MAX_MCAST_GRP	0x25c	/* multicast groups with a QP attached */
#define QRDMA_REG_CAP_MAX_MCAST_QP_ATTACH 0x260	/* QPs attached to one group */

/*
 * Features the engine implements. A bit is set only once the device
 * carries it end to end; interface 0.4 sets none of them.
 */
#define QRDMA_FEATURE_RC		0x00000001u
#define QRDMA_FEATURE_UD		0x00000002u
#define QRDMA_FEATURE_UC		0x00000004u
#define QRDMA_FEATURE_SRQ		0x00000008u
#define QRDMA_FEATURE_ATOMIC		0x00000010u
#define QRDMA_FEATURE_MW		0x00000020u
#define QRDMA_FEATURE_FAST_REG		0x00000040u
/*
 * Interface 0.9: CREATE_QP returns the QP's wire QPN, REG_MR and
 * ALLOC_STAG the MR's wire rkey, as the command's return value; the
 * driver reports those (ib_qp.qp_num, ib_mr.rkey). With the sw backend
 * they equal the QP ID and the STag.
 */
#define QRDMA_FEATURE_WIRE_IDS		0x00000080u
#define QRDMA_FEATURE_STATS		0x00000100u	/* port counters, block 0x5000 (0.7) */
/* Interface 0.10: UD multicast, MCAST_ATTACH and MCAST_DETACH (hw-spec 16.1). */
#define QRDMA_FEATURE_MCAST		0x00000200u
/*
 * Interface 0.12: QP1 carries MADs (the GSI QP, what rdma_cm's connection
 * manager uses). A device reporting a MINOR below 12 carries it without
 * the bit; one that clears it refuses CREATE_QP of the GSI QP, and the
 * driver then offers neither MADs nor the IB connection manager.
 */
#define QRDMA_FEATURE_GSI		0x00000400u
/*
 * Interface 0.12: the port is a host RDMA NIC's (a backend on a host NIC):
 * its GIDs are the host's, listed in HOST_GID_COUNT and HOST_GID(i), and
 * ADD_GID accepts only those; PORT_STATUS and PORT_SPEED are the host
 * port's.
 */
#define QRDMA_FEATURE_HOST_GIDS		0x00000800u
/*
 * Interface 0.13: the device asks the driver to announce the Ethernet
 * function's addresses (AEQE QRDMA_AE_ANNOUNCE) when the segment may not
 * know where its MAC is: after the VM moved (an incoming live migration).
 */
#define QRDMA_FEATURE_ANNOUNCE		0x00001000u

#define QRDMA_PAGE_SIZE_4K		(1u << 12)
#define QRDMA_PAGE_SIZE_2M		(1u << 21)
#define QRDMA_PAGE_SIZE_1G		(1u << 30)

/* Port block (0x300-0x3ff), read-only. */
#define QRDMA_REG_PORT_STATUS		0x300
#define QRDMA_REG_PORT_SPEED		0x304	/* Mb/s */
/*
 * Interface 0.12, with QRDMA_FEATURE_HOST_GIDS (0 without it): how many
 * host GIDs the guest may use, and each as 4 registers, HOST_GID(i) + 4w
 * holding GID bytes 4w..4w+3 in network order, byte 4w in bits 7:0 (as
 * ADD_GID's arguments have them). Entries at or beyond the count read 0.
 */
#define QRDMA_REG_HOST_GID_COUNT	0x308
#define QRDMA_REG_HOST_GID(i)		(0x380 + 16 * (i))
#define QRDMA_HOST_GIDS_MAX		8

#define QRDMA_PORT_STATUS_LINK_UP	0x00000001u

/* The plain register file ends here; blocks above are decoded by range. */
#define QRDMA_REG_FILE_END		0x400

/*
 * Register blocks of 4 KB above the plain register file, each laid out in
 * its section below. Offsets inside a block that name no register are
 * holes: accesses are logged and ignored.
 */
#define QRDMA_REG_CQP_BASE		0x1000	/* control QP */
#define QRDMA_REG_HMC_BASE		0x2000	/* segment descriptors, PD invalidate */
#define QRDMA_REG_INTR_BASE		0x3000	/* DYN_CTL(v), CEQCTL(i), AEQCTL, ALLOC */
#define QRDMA_REG_LAN_BASE		0x4000	/* LAN queues: implemented, see below */
#define QRDMA_REG_STATS_BASE		0x5000	/* port counters (interface 0.7) */
#define QRDMA_REG_BLOCK_SIZE		0x1000

/* ---- LAN function (block 0x4000) ------------------------------------- */

/*
 * One transmit and one receive ring of 16-byte descriptors in guest memory.
 * The driver produces (writes descriptors, then the ring's TAIL register);
 * the device consumes from its HEAD, writes the descriptor back with DD
 * set, and advances HEAD. Rings hold LEN descriptors, LEN a power of two;
 * indices run 0..LEN-1 and wrap. A ring with LEN 0 is disabled.
 */
#define QRDMA_REG_LAN_CTRL		0x4000	/* RW */
#define QRDMA_REG_LAN_MTU		0x4004	/* RW, bytes of L3 payload */
#define QRDMA_REG_LAN_MAC_LOW		0x4008	/* RW, receive filter address */
#define QRDMA_REG_LAN_MAC_HIGH		0x400c	/* RW, bits 15:0 */
#define QRDMA_REG_LAN_MC_HASH_LOW	0x4010	/* RW, multicast hash bits 31:0 */
#define QRDMA_REG_LAN_MC_HASH_HIGH	0x4014	/* RW, multicast hash bits 63:32 */
#define QRDMA_REG_LAN_INT_CTRL		0x4018	/* RW, vectors and arming */
#define QRDMA_REG_LAN_INT_CAUSE		0x401c	/* RO, what fired last */

#define QRDMA_REG_LAN_TXQ_BASE_LOW	0x4040	/* RW, 16-byte aligned */
#define QRDMA_REG_LAN_TXQ_BASE_HIGH	0x4044	/* RW */
#define QRDMA_REG_LAN_TXQ_LEN		0x4048	/* RW, descriptors */
#define QRDMA_REG_LAN_TXQ_TAIL		0x404c	/* RW, doorbell */
#define QRDMA_REG_LAN_TXQ_HEAD		0x4050	/* RO */

#define QRDMA_REG_LAN_RXQ_BASE_LOW	0x4060
#define QRDMA_REG_LAN_RXQ_BASE_HIGH	0x4064
#define QRDMA_REG_LAN_RXQ_LEN		0x4068
#define QRDMA_REG_LAN_RXQ_TAIL		0x406c	/* RW, doorbell */
#define QRDMA_REG_LAN_RXQ_HEAD		0x4070	/* RO */

/* Counters, RO, 32-bit, wrapping; cleared by reset. */
#define QRDMA_REG_LAN_STAT_TX_FRAMES	0x4080
#define QRDMA_REG_LAN_STAT_TX_BYTES	0x4084
#define QRDMA_REG_LAN_STAT_TX_ERRORS	0x4088	/* bad descriptors */
#define QRDMA_REG_LAN_STAT_RX_FRAMES	0x408c
#define QRDMA_REG_LAN_STAT_RX_BYTES	0x4090
#define QRDMA_REG_LAN_STAT_RX_ERRORS	0x4094	/* bad descriptors, oversize */
#define QRDMA_REG_LAN_STAT_RX_FILTERED	0x4098	/* dropped by the address filter */
#define QRDMA_REG_LAN_STAT_RX_DROPPED	0x409c	/* receive off, or no buffer and backlog full */
#define QRDMA_REG_LAN_STAT_ROCE_FRAMES	0x40a0	/* steered to the RDMA engine */
#define QRDMA_REG_LAN_STAT_FIRST	QRDMA_REG_LAN_STAT_TX_FRAMES
#define QRDMA_REG_LAN_STAT_LAST		QRDMA_REG_LAN_STAT_ROCE_FRAMES

#define QRDMA_LAN_CTRL_RX_ENABLE	0x00000001u
#define QRDMA_LAN_CTRL_TX_ENABLE	0x00000002u
#define QRDMA_LAN_CTRL_PROMISC		0x00000004u	/* accept every frame */
#define QRDMA_LAN_CTRL_ALLMULTI		0x00000008u	/* accept every multicast */
#define QRDMA_LAN_CTRL_BROADCAST	0x00000010u	/* accept broadcast */
#define QRDMA_LAN_CTRL_VALID_MASK	0x0000001fu

#define QRDMA_LAN_MTU_MIN		68
#define QRDMA_LAN_MTU_MAX		9000
/* Largest frame on the wire: MTU + Ethernet header + one VLAN tag. */
#define QRDMA_LAN_FRAME_OVERHEAD	18
#define QRDMA_LAN_RING_MIN		8
#define QRDMA_LAN_RING_MAX		4096
/* A transmitted frame spans at most this many descriptors. */
#define QRDMA_LAN_TX_MAX_FRAGS		32

/*
 * Multicast hash: bit (crc32_le(~0, addr, 6) >> 26) of the 64-bit hash
 * (the Ethernet CRC's top six bits, as ether_crc_le computes it).
 */

/*
 * LAN_INT_CTRL: RX_VECTOR[7:0], TX_VECTOR[15:8] (MSI-X vectors), RX_ARM[16],
 * TX_ARM[17]. An armed cause fires its vector once, when a descriptor of
 * that ring is written back (or at arming time if one was written back
 * since the last interrupt), and disarms itself: NAPI re-arms after polling.
 * Writing 0 to an ARM bit disarms it. Reserved bits [31:18].
 */
#define QRDMA_LAN_INT_RX_VECTOR_MASK	QRDMA_MASK32(7, 0)
#define QRDMA_LAN_INT_RX_VECTOR_SHIFT	0
#define QRDMA_LAN_INT_TX_VECTOR_MASK	QRDMA_MASK32(15, 8)
#define QRDMA_LAN_INT_TX_VECTOR_SHIFT	8
#define QRDMA_LAN_INT_RX_ARM		0x00010000u
#define QRDMA_LAN_INT_TX_ARM		0x00020000u
#define QRDMA_LAN_INT_VALID_MASK	QRDMA_MASK32(17, 0)
/* LAN_INT_CAUSE: which causes fired since it was last read (read clears). */
#define QRDMA_LAN_INT_CAUSE_RX		0x00000001u
#define QRDMA_LAN_INT_CAUSE_TX		0x00000002u

/*
 * Descriptors: two little-endian 64-bit words.
 *   qword 0: buffer guest-physical address.
 *   qword 1, written by the driver:
 *     TX: LEN[15:0] bytes of this fragment, EOP[16] last fragment of a frame;
 *         in the first descriptor of a frame also CSUM[17]: the device
 *         computes the Internet checksum (RFC 1071) from byte CSUM_START[41:32]
 *         of the frame to its end and stores it, folded and complemented, at
 *         byte CSUM_START + CSUM_OFFSET[49:42] (0 is sent as 0xffff), adding
 *         to the 16 bits the driver left there (the pseudo-header sum): Linux's
 *         CHECKSUM_PARTIAL contract.
 *     RX: LEN[15:0] bytes the buffer holds
 *   qword 1, written back by the device:
 *     TX: DD[63], ERR[62], the driver's bits unchanged
 *     RX: LEN[15:0] bytes of the frame received, ERR[62], DD[63]
 * ERR means the descriptor was bad (zero or oversize length, an address
 * outside guest RAM, a frame over QRDMA_LAN_TX_MAX_FRAGS descriptors) and
 * was skipped; for RX the buffer holds no frame.
 */
struct qrdma_lan_desc {
	__le64 addr;
	__le64 cmd;
};

#define QRDMA_LAN_DESC_LEN_MASK		0x000000000000ffffull
#define QRDMA_LAN_DESC_EOP		(1ull << 16)
#define QRDMA_LAN_DESC_CSUM		(1ull << 17)
#define QRDMA_LAN_DESC_CSUM_START_SHIFT	32
#define QRDMA_LAN_DESC_CSUM_START_MASK	(0x3ffull << 32)
#define QRDMA_LAN_DESC_CSUM_OFFSET_SHIFT 42
#define QRDMA_LAN_DESC_CSUM_OFFSET_MASK	(0xffull << 42)
#define QRDMA_LAN_DESC_ERR		(1ull << 62)
#define QRDMA_LAN_DESC_DD		(1ull << 63)

_Static_assert(sizeof(struct qrdma_lan_desc) == 16, "qrdma_lan_desc");

/* ---- Port counters (block 0x5000, interface 0.7) -------------------- */

/*
 * 64-bit event counters of the port, counted where each event happens (the
 * transport, the completion engine). The driver reads them consistently
 * through a snapshot: writing STATS_CTRL.SNAPSHOT copies every counter at
 * once into the snapshot the STAT_LO/HI registers show, so the two halves
 * of one counter, and all counters together, belong to one instant; no
 * LO/HI tearing, no latch per counter. Counters and snapshot are zero after
 * every device reset. docs/hw-spec.md section 20.
 */
#define QRDMA_REG_STATS_CTRL		0x5000	/* RW: SNAPSHOT, self-clearing, reads 0 */
#define QRDMA_REG_STATS_NUM		0x5004	/* RO: counters implemented (QRDMA_STAT_NUM) */
#define QRDMA_REG_STAT_LO(i)		(0x5100 + 8 * (i))	/* RO: snapshot of counter i, bits 31:0 */
#define QRDMA_REG_STAT_HI(i)		(0x5104 + 8 * (i))	/* RO: bits 63:32 */
#define QRDMA_STATS_MAX			64	/* room in the block for counters */

#define QRDMA_STATS_CTRL_SNAPSHOT	0x00000001u
#define QRDMA_STATS_CTRL_VALID_MASK	0x00000001u

/*
 * The counters, by index. The Linux names the driver gives them (the names
 * mlx5, efa or rxe use for the same event) follow each; docs/hw-spec.md
 * section 20 says exactly what each counts.
 */
enum qrdma_stat {
	QRDMA_STAT_TX_PKTS = 0,		/* tx_pkts: RoCEv2 frames the transport sent */
	QRDMA_STAT_TX_BYTES,		/* tx_bytes: their bytes, Ethernet header to ICRC */
	QRDMA_STAT_RX_PKTS,		/* rx_pkts: RoCEv2 frames steered to the transport */
	QRDMA_STAT_RX_BYTES,		/* rx_bytes */
	QRDMA_STAT_RETRANS_PKTS,	/* retrans_pkts: request packets sent again */
	QRDMA_STAT_LOCAL_ACK_TIMEOUT,	/* local_ack_timeout_err: retransmit timer expiries */
	QRDMA_STAT_PACKET_SEQ_ERR,	/* packet_seq_err: PSN sequence error NAKs received */
	QRDMA_STAT_RNR_NAK_RCVD,	/* rnr_nak_retry_err: RNR NAKs received */
	QRDMA_STAT_RNR_NAK_SENT,	/* send_rnr_err: RNR NAKs sent */
	QRDMA_STAT_DUPLICATE_REQUEST,	/* duplicate_request: requests seen again */
	QRDMA_STAT_OUT_OF_SEQUENCE,	/* out_of_sequence: requests past the expected PSN */
	QRDMA_STAT_ICRC_ERR,		/* rx_icrc_encapsulated: frames dropped for a bad ICRC */
	QRDMA_STAT_RX_READ_REQUESTS,	/* rx_read_requests */
	QRDMA_STAT_RX_WRITE_REQUESTS,	/* rx_write_requests */
	QRDMA_STAT_RX_ATOMIC_REQUESTS,	/* rx_atomic_requests */
	QRDMA_STAT_REQ_CQE_ERROR,	/* req_cqe_error: send-side CQEs in error, not flushes */
	QRDMA_STAT_RESP_CQE_ERROR,	/* resp_cqe_error: receive-side CQEs in error, not flushes */
	QRDMA_STAT_REQ_CQE_FLUSH,	/* req_cqe_flush_error: send-side WR_FLUSH_ERR CQEs */
	QRDMA_STAT_RESP_CQE_FLUSH,	/* resp_cqe_flush_error: receive-side WR_FLUSH_ERR CQEs */
	/* 0.12: */
	QRDMA_STAT_OUT_OF_BUFFER,	/* out_of_buffer: UD datagrams dropped, no receive WQE */
	QRDMA_STAT_RX_DROPS,		/* rx_drops: RoCE frames dropped for another reason */
	QRDMA_STAT_NUM
};

/* ---- Control QP (block 0x1000) ----------------------------------------- */

/*
 * The CQP is a ring of 64-byte WQEs in guest memory; its completions go to
 * the CCQ, a ring of 32-byte CQEs. Both are described by a 64-byte CQP
 * context the driver builds and hands over by writing its address to
 * CCQP_CTX_HIGH, then CCQP_CTX_LOW (the low write starts creation, as the
 * E810's CCQPHIGH/CCQPLOW). The driver polls CCQP_STATUS for DONE or ERR.
 * The CQP lives until the function is reset.
 */
#define QRDMA_REG_CCQP_CTX_LOW		0x1000	/* RW */
#define QRDMA_REG_CCQP_CTX_HIGH		0x1004	/* RW */
#define QRDMA_REG_CCQP_STATUS		0x1008	/* RO */
#define QRDMA_REG_CQP_DB		0x100c	/* RW: index after the last posted WQE */
#define QRDMA_REG_CQP_TAIL		0x1010	/* RO: next WQE the device reads */
#define QRDMA_REG_CQP_ERRCODES		0x1014	/* RO: codes of the last failure */

#define QRDMA_CCQP_STATUS_DONE		0x00000001u
#define QRDMA_CCQP_STATUS_ERR		0x80000000u
#define QRDMA_CQP_ERRCODES_MINOR_MASK	QRDMA_MASK32(15, 0)
#define QRDMA_CQP_ERRCODES_MAJOR_MASK	QRDMA_MASK32(31, 16)
#define QRDMA_CQP_ERRCODES_MAJOR_SHIFT	16

/*
 * CQP context, 64 bytes, 64-byte aligned:
 *   qword 0: SQ_SIZE_LOG2[3:0]   CQP ring of 2^n WQEs, n in 4..11
 *            CCQ_SIZE_LOG2[11:8] CCQ ring of 2^n CQEs, n >= SQ_SIZE_LOG2
 *   qword 1: CQP ring address (4 KB aligned)
 *   qword 2: CCQ ring address (4 KB aligned)
 *   qword 3: CCQ shadow area address (8-byte aligned): qword 0 of the
 *            shadow area is the driver's CCQ head (next CQE it will read),
 *            which the device reads to avoid overwriting unread CQEs.
 *   qword 4: CCQ_CEQ_ID[7:0], CCQ_CEQ_ENABLE[8]: while enabled and that CEQ
 *            exists, every CCQ completion also writes a CEQE with
 *   qword 5: CCQ_CTX, the value that CEQE carries
 *   qwords 6..7: reserved, 0
 * (CEQs are created through the CQP itself, so the CCQ's events start once
 * its CEQ exists: the driver polls until then.)
 */
struct qrdma_cqp_ctx {
	__le64 sizes;
	__le64 sq_addr;
	__le64 ccq_addr;
	__le64 ccq_shadow_addr;
	__le64 ccq_ceq;
	__le64 ccq_ctx;
	__le64 reserved[2];
};

#define QRDMA_CQP_CTX_CCQ_CEQ_ID_MASK	0x0ffULL
#define QRDMA_CQP_CTX_CCQ_CEQ_ENABLE	0x100ULL

#define QRDMA_CQP_CTX_SQ_SIZE_MASK	0x00fULL
#define QRDMA_CQP_CTX_CCQ_SIZE_MASK	0xf00ULL
#define QRDMA_CQP_CTX_CCQ_SIZE_SHIFT	8
#define QRDMA_CQP_SQ_SIZE_LOG2_MIN	4
#define QRDMA_CQP_SQ_SIZE_LOG2_MAX	11

/*
 * CQP WQE, 64 bytes. qwords 0..5 are the command's arguments, qword 6 a
 * scratch value the device echoes in the completion, qword 7 the header:
 * OPCODE[7:0], VALID[63]. The driver writes the header last, after a
 * barrier. VALID is 1 on the ring's first lap and flips on every lap, so
 * the device tells a fresh WQE from last lap's without reading an index.
 */
struct qrdma_cqp_wqe {
	__le64 arg[6];
	__le64 scratch;
	__le64 hdr;
};

#define QRDMA_CQP_WQE_OPCODE_MASK	0xffULL
#define QRDMA_CQP_WQE_VALID		(1ULL << 63)

/*
 * CCQ CQE, 32 bytes:
 *   qword 0: the WQE's scratch
 *   qword 1: the command's return value (command specific, 0 if none)
 *   qword 2: MINOR[15:0], MAJOR[31:16], OPCODE[39:32], WQE_INDEX[55:40]
 *   qword 3: VALID[63], 1 on the CCQ's first lap, flipping on every lap
 */
struct qrdma_ccq_cqe {
	__le64 scratch;
	__le64 retval;
	__le64 status;
	__le64 hdr;
};

#define QRDMA_CCQ_CQE_MINOR_MASK	0x000000000000ffffULL
#define QRDMA_CCQ_CQE_MAJOR_MASK	0x00000000ffff0000ULL
#define QRDMA_CCQ_CQE_MAJOR_SHIFT	16
#define QRDMA_CCQ_CQE_OPCODE_MASK	0x000000ff00000000ULL
#define QRDMA_CCQ_CQE_OPCODE_SHIFT	32
#define QRDMA_CCQ_CQE_WQE_INDEX_MASK	0x00ffff0000000000ULL
#define QRDMA_CCQ_CQE_WQE_INDEX_SHIFT	40
#define QRDMA_CCQ_CQE_VALID		(1ULL << 63)

/* CQP opcodes (the E810's numbering where the E810 has the command). */
enum qrdma_cqp_opcode {
	QRDMA_CQP_OP_CREATE_QP = 0x00,
	QRDMA_CQP_OP_MODIFY_QP = 0x01,
	QRDMA_CQP_OP_DESTROY_QP = 0x02,
	QRDMA_CQP_OP_CREATE_CQ = 0x03,
	QRDMA_CQP_OP_MODIFY_CQ = 0x04,		/* resize */
	QRDMA_CQP_OP_DESTROY_CQ = 0x05,
	QRDMA_CQP_OP_ALLOC_STAG = 0x09,
	QRDMA_CQP_OP_REG_MR = 0x0a,
	QRDMA_CQP_OP_QUERY_STAG = 0x0b,
	QRDMA_CQP_OP_DEALLOC_STAG = 0x0d,
	QRDMA_CQP_OP_QUERY_QP = 0x13,		/* the E810's UPLOAD_CONTEXT */
	QRDMA_CQP_OP_CREATE_AH = 0x1c,
	QRDMA_CQP_OP_MODIFY_AH = 0x1d,
	QRDMA_CQP_OP_DESTROY_AH = 0x1e,
	QRDMA_CQP_OP_CREATE_CEQ = 0x16,
	QRDMA_CQP_OP_DESTROY_CEQ = 0x18,
	QRDMA_CQP_OP_CREATE_AEQ = 0x19,
	QRDMA_CQP_OP_DESTROY_AEQ = 0x1b,
	QRDMA_CQP_OP_UPDATE_PE_SDS = 0x1f,
	QRDMA_CQP_OP_QUERY_FPM_VAL = 0x20,
	QRDMA_CQP_OP_COMMIT_FPM_VAL = 0x21,
	QRDMA_CQP_OP_NOP = 0x24,
	QRDMA_CQP_OP_ADD_GID = 0x30,
	QRDMA_CQP_OP_DEL_GID = 0x31,
	QRDMA_CQP_OP_MCAST_ATTACH = 0x32,	/* interface 0.10 */
	QRDMA_CQP_OP_MCAST_DETACH = 0x33,
	QRDMA_CQP_OP_CREATE_SRQ = 0x38,
	QRDMA_CQP_OP_MODIFY_SRQ = 0x39,
	QRDMA_CQP_OP_DESTROY_SRQ = 0x3a,
	QRDMA_CQP_OP_QUERY_SRQ = 0x3b,
};

/*
 * ADD_GID: arg0 INDEX[7:0], TYPE[9:8]; arg1, arg2 the 16 GID bytes in
 * network order (arg1 holds bytes 0..7, byte 0 in bits 7:0).
 * DEL_GID: arg0 INDEX[7:0].
 * The device uses its GID table to recognise RoCEv2 traffic for itself.
 */
#define QRDMA_CQP_GID_INDEX_MASK	0x0ffULL
#define QRDMA_CQP_GID_TYPE_MASK		0x300ULL
#define QRDMA_CQP_GID_TYPE_SHIFT	8
#define QRDMA_GID_TYPE_ROCE_V2_IPV4	1	/* ::ffff:a.b.c.d */
#define QRDMA_GID_TYPE_ROCE_V2_IPV6	2
/*
 * ADD_GID's INVALID_ARG minor codes: 0 index, type or reserved bits; 1 type
 * not matching the address; 2 (0.12, QRDMA_FEATURE_HOST_GIDS) not one of
 * the host GIDs the device may use.
 */
#define QRDMA_ADD_GID_ERR_NOT_HOST	2

/*
 * MCAST_ATTACH, MCAST_DETACH (interface 0.10): arg0 QP_ID[23:0] of a UD QP;
 * arg1, arg2 the 16 bytes of the multicast GID as ADD_GID has them: an
 * IPv4-mapped ::ffff:224.0.0.0/100 or an IPv6 ff00::/8 address.
 */
#define QRDMA_CQP_MCAST_QP_ID_MASK	0xffffffULL

/* CQP error codes: MAJOR says what kind, MINOR which argument or check. */
enum qrdma_cqp_major {
	QRDMA_CQP_OK = 0,
	QRDMA_CQP_ERR_BAD_OPCODE = 1,
	QRDMA_CQP_ERR_INVALID_ARG = 2,	/* minor: index of the bad argument */
	QRDMA_CQP_ERR_NOT_VALID = 3,	/* WQE without the expected VALID */
	QRDMA_CQP_ERR_CCQ_FULL = 4,	/* completion dropped: CCQ overflow */
	QRDMA_CQP_ERR_CONTEXT = 5,	/* CQP creation: minor says which field */
	QRDMA_CQP_ERR_HMC = 6,		/* minor: enum qrdma_hmc_error */
	QRDMA_CQP_ERR_STATE = 7,	/* minor: enum qrdma_state_error */
	QRDMA_CQP_ERR_INFO = 8,		/* a bad field in an info buffer; minor: its byte offset */
	QRDMA_CQP_ERR_PBLE = 9,		/* minor: enum qrdma_pble_error */
	QRDMA_CQP_ERR_NO_RESOURCE = 10,	/* a device limit is reached; minor: enum qrdma_resource_error */
};

/* Minor codes of QRDMA_CQP_ERR_STATE. */
enum qrdma_state_error {
	QRDMA_STATE_ERR_EXISTS = 1,	/* create of an object that exists */
	QRDMA_STATE_ERR_NOT_FOUND = 2,	/* the object (or one it names) does not exist */
	QRDMA_STATE_ERR_BUSY = 3,	/* destroy of an object others still use */
	QRDMA_STATE_ERR_TRANSITION = 4,	/* a QP state change the IB state machine forbids */
	QRDMA_STATE_ERR_ATTR = 5,	/* an attribute missing or not allowed for the transition */
	QRDMA_STATE_ERR_KEY = 6,	/* STAG key byte does not match the MR's */
};

/* Minor codes of QRDMA_CQP_ERR_NO_RESOURCE (interface 0.10; HOST 0.11). */
enum qrdma_resource_error {
	QRDMA_RESOURCE_ERR_HOST = 0,		/* no device limit: the host (its memory, its RDMA NIC) is out */
	QRDMA_RESOURCE_ERR_MCAST_GRP = 1,	/* CAP_MAX_MCAST_GRP groups have QPs */
	QRDMA_RESOURCE_ERR_MCAST_QP_ATTACH = 2,	/* the group has CAP_MAX_MCAST_QP_ATTACH QPs */
};

/* Minor codes of QRDMA_CQP_ERR_PBLE. */
enum qrdma_pble_error {
	QRDMA_PBLE_ERR_RANGE = 1,	/* a PBLE index beyond the committed PBLE count */
	QRDMA_PBLE_ERR_HMC = 2,		/* the PBLE's HMC page is not backed */
	QRDMA_PBLE_ERR_ALIGN = 3,	/* a page address not aligned to the page size */
	QRDMA_PBLE_ERR_NOT_RAM = 4,	/* a page outside guest RAM */
};

/* Why an FPM address could not be used (minor of QRDMA_CQP_ERR_HMC). */
enum qrdma_hmc_error {
	QRDMA_HMC_ERR_NOT_COMMITTED = 1,	/* no FPM layout committed */
	QRDMA_HMC_ERR_ALREADY_COMMITTED = 2,	/* COMMIT_FPM_VAL twice */
	QRDMA_HMC_ERR_COUNT = 3,		/* object index beyond the committed count */
	QRDMA_HMC_ERR_SD_INVALID = 4,		/* its SD is not valid */
	QRDMA_HMC_ERR_PD_INVALID = 5,		/* its page descriptor is not valid */
	QRDMA_HMC_ERR_NOT_RAM = 6,		/* a page or buffer outside guest RAM */
	QRDMA_HMC_ERR_BAD_SD = 7,		/* a malformed SD entry or index */
};

/* Minor codes of QRDMA_CQP_ERR_CONTEXT. */
enum qrdma_cqp_ctx_error {
	QRDMA_CQP_CTX_ERR_UNREADABLE = 1,
	QRDMA_CQP_CTX_ERR_SQ_SIZE = 2,
	QRDMA_CQP_CTX_ERR_CCQ_SIZE = 3,
	QRDMA_CQP_CTX_ERR_SQ_ADDR = 4,
	QRDMA_CQP_CTX_ERR_CCQ_ADDR = 5,
	QRDMA_CQP_CTX_ERR_SHADOW_ADDR = 6,
	QRDMA_CQP_CTX_ERR_RESERVED = 7,
};

/* ---- Event queues and interrupts (block 0x3000) ------------------------- */

/*
 * Completion event queues (CEQs) and the asynchronous event queue (AEQ)
 * are rings in guest memory the device writes and the driver reads by
 * VALID polarity (1 on the first lap, flipping each lap). They are created
 * and destroyed through the CQP. The driver returns consumed entries with
 * CEQALLOC(i) / AEQALLOC so that the device never overwrites an unread one
 * (a full queue drops the event and counts it in EQ_OVERFLOWS).
 *
 * Interrupts, as GLINT_CEQCTL / PFINT_AEQCTL / GLINT_DYN_CTL on the E810:
 * CEQCTL(i) and AEQCTL route a queue to an MSI-X vector (CAUSE_ENA on);
 * DYN_CTL(v).INTENA lets vector v fire once: the device clears INTENA when
 * it fires, and fires at once when INTENA is set while an event is pending.
 */
#define QRDMA_REG_DYN_CTL(v)		(0x3000 + 4 * (v))	/* RW, v < CAP_MSIX_VECTORS */
#define QRDMA_REG_CEQCTL(i)		(0x3100 + 4 * (i))	/* RW, i < CAP_MAX_CEQ */
#define QRDMA_REG_CEQALLOC(i)		(0x3200 + 4 * (i))	/* W: entries consumed */
#define QRDMA_REG_AEQCTL		0x3300			/* RW */
#define QRDMA_REG_AEQALLOC		0x3304			/* W: entries consumed */
#define QRDMA_REG_EQ_OVERFLOWS		0x3308			/* RO: events dropped */
#define QRDMA_MAX_VECTORS		64
#define QRDMA_MAX_CEQS			64

#define QRDMA_DYN_CTL_INTENA		0x00000001u
#define QRDMA_EQCTL_MSIX_MASK		QRDMA_MASK32(7, 0)
#define QRDMA_EQCTL_CAUSE_ENA		0x40000000u
#define QRDMA_EQCTL_VALID_MASK		(QRDMA_EQCTL_MSIX_MASK | QRDMA_EQCTL_CAUSE_ENA)
#define QRDMA_EQALLOC_MASK		QRDMA_MASK32(15, 0)

/* CEQE: 8 bytes, VALID[63], CQ_CTX[62:0] (the CQ's context value). */
#define QRDMA_CEQE_CQ_CTX_MASK		0x7fffffffffffffffULL
#define QRDMA_CEQE_VALID		(1ULL << 63)

/*
 * AEQE: 16 bytes. qword 0: the context value of the source (0 if none);
 * qword 1: ID[31:0] (queue or page the event is about), CODE[47:32],
 * SOURCE[51:48], VALID[63].
 */
struct qrdma_aeqe {
	__le64 ctx;
	__le64 info;
};

#define QRDMA_AEQE_ID_MASK		0x00000000ffffffffULL
#define QRDMA_AEQE_CODE_MASK		0x0000ffff00000000ULL
#define QRDMA_AEQE_CODE_SHIFT		32
#define QRDMA_AEQE_SOURCE_MASK		0x000f000000000000ULL
#define QRDMA_AEQE_SOURCE_SHIFT		48
#define QRDMA_AEQE_VALID		(1ULL << 63)

enum qrdma_ae_source {
	QRDMA_AE_SRC_DOORBELL = 1,	/* ID: doorbell page */
	QRDMA_AE_SRC_CQ = 2,
	QRDMA_AE_SRC_QP = 3,
	QRDMA_AE_SRC_SRQ = 4,
};

enum qrdma_ae_code {
	QRDMA_AE_BAD_DOORBELL = 0x0001,	/* a doorbell named no queue of its page */
	QRDMA_AE_CQ_OVERFLOW = 0x0002,	/* ID: CQ; ctx: CQ_CTX; the CQ is in error */
	QRDMA_AE_CQ_ERROR = 0x0003,	/* ID: CQ; its ring or shadow area became unusable */
	QRDMA_AE_QP_FATAL = 0x0010,	/* ID: QP; a WQE or ring the device cannot use, or a CQE its CQ could not take */
	QRDMA_AE_QP_ACCESS_ERR = 0x0011,	/* ID: QP; a remote access violation */
	QRDMA_AE_QP_REQ_ERR = 0x0012,	/* ID: QP; an invalid request from the peer */
	QRDMA_AE_QP_LAST_WQE = 0x0013,	/* ID: QP; on an SRQ QP entering error */
	QRDMA_AE_QP_COMM_EST = 0x0014,	/* ID: QP; first receive in RTR */
	QRDMA_AE_SQ_DRAINED = 0x0015,	/* ID: QP; SQD reached with nothing in flight */
	QRDMA_AE_SRQ_LIMIT = 0x0020,	/* ID: SRQ; ctx: SRQ_CTX; outstanding fell below LIMIT */
	QRDMA_AE_SRQ_ERROR = 0x0021,	/* ID: SRQ */
	/*
	 * 0.13, with QRDMA_FEATURE_ANNOUNCE; SOURCE 0, ID 0, ctx 0: send a
	 * gratuitous ARP and unsolicited neighbour advertisements for the
	 * Ethernet function's addresses (what Linux's netdev_notify_peers()
	 * does). Posted once per round of the embedding's announcement.
	 */
	QRDMA_AE_ANNOUNCE = 0x0030,
};

/*
 * CREATE_CEQ (CQP 0x16): arg0 CEQ_ID[7:0], SIZE_LOG2[15:8] (6..15 entries
 * of 8 bytes); arg1 ring address, 4 KB aligned. DESTROY_CEQ (0x18): arg0
 * CEQ_ID. CREATE_AEQ (0x19): arg0 SIZE_LOG2[15:8] (6..15 entries of 16
 * bytes); arg1 ring address. DESTROY_AEQ (0x1b).
 */
#define QRDMA_EQ_ID_MASK		0x00ffULL
#define QRDMA_EQ_SIZE_MASK		0xff00ULL
#define QRDMA_EQ_SIZE_SHIFT		8
#define QRDMA_EQ_SIZE_LOG2_MIN		6
#define QRDMA_EQ_SIZE_LOG2_MAX		15

_Static_assert(sizeof(struct qrdma_aeqe) == 16, "qrdma_aeqe");

/* ---- HMC: host memory cache (block 0x2000) ------------------------------ */

/*
 * As on the E810, object contexts live in guest memory that the driver
 * lends the device: a function-private memory (FPM) address space divided
 * into typed objects, backed by segment descriptors (SDs). SD i covers FPM
 * bytes [i * 2 MB, (i + 1) * 2 MB), either directly (one 2 MB guest page)
 * or paged (a 4 KB guest page of 512 page descriptors, each naming one
 * 4 KB guest page). The device caches page descriptors: after changing a PD
 * the driver must write HMC_PDINV, or the device may go on using the old one.
 */
#define QRDMA_REG_HMC_SD_DATA_LOW	0x2000	/* RW */
#define QRDMA_REG_HMC_SD_DATA_HIGH	0x2004	/* RW */
#define QRDMA_REG_HMC_SD_CMD		0x2008	/* RW: INDEX[11:0], WRITE[31] */
#define QRDMA_REG_HMC_PDINV		0x200c	/* W: SD_INDEX[11:0], PD_INDEX[24:16] */
#define QRDMA_REG_HMC_SD_COUNT		0x2010	/* RO: SDs the device holds */

/*
 * HMC_SD_CMD: with WRITE set, SD INDEX takes SD_DATA_HIGH:SD_DATA_LOW; with
 * WRITE clear, SD_DATA_HIGH:SD_DATA_LOW load SD INDEX's current value.
 */
#define QRDMA_HMC_SD_CMD_INDEX_MASK	QRDMA_MASK32(11, 0)
#define QRDMA_HMC_SD_CMD_WRITE		0x80000000u
#define QRDMA_HMC_SD_CMD_VALID_MASK	(QRDMA_HMC_SD_CMD_INDEX_MASK | QRDMA_HMC_SD_CMD_WRITE)
#define QRDMA_HMC_PDINV_SD_INDEX_MASK	QRDMA_MASK32(11, 0)
#define QRDMA_HMC_PDINV_PD_INDEX_MASK	QRDMA_MASK32(24, 16)
#define QRDMA_HMC_PDINV_PD_INDEX_SHIFT	16
#define QRDMA_HMC_PDINV_VALID_MASK	(QRDMA_HMC_PDINV_SD_INDEX_MASK | QRDMA_HMC_PDINV_PD_INDEX_MASK)

/*
 * SD entry (64 bits): VALID[0], TYPE[1] (0 paged, 1 direct),
 * BP_COUNT[11:2] (paged: 512), ADDR[63:12] (paged: the PD page, 4 KB
 * aligned; direct: the 2 MB page, 2 MB aligned).
 * Page descriptor (64 bits): VALID[0], ADDR[63:12] (a 4 KB page).
 */
#define QRDMA_HMC_SD_VALID		0x1ULL
#define QRDMA_HMC_SD_TYPE_DIRECT	0x2ULL
#define QRDMA_HMC_SD_BP_COUNT_MASK	0xffcULL
#define QRDMA_HMC_SD_BP_COUNT_SHIFT	2
#define QRDMA_HMC_SD_ADDR_MASK		(~0xfffULL)
#define QRDMA_HMC_PD_VALID		0x1ULL
#define QRDMA_HMC_PD_ADDR_MASK		(~0xfffULL)
#define QRDMA_HMC_SD_SIZE		(2u << 20)
#define QRDMA_HMC_PD_SIZE		4096u
#define QRDMA_HMC_PDS_PER_SD		512u
#define QRDMA_HMC_MAX_SDS		4096u

/* HMC object types; FPM layout follows this order. */
enum qrdma_hmc_type {
	QRDMA_HMC_QP = 0,
	QRDMA_HMC_CQ = 1,
	QRDMA_HMC_SRQ = 2,
	QRDMA_HMC_MR = 3,
	QRDMA_HMC_AH = 4,
	QRDMA_HMC_PBLE = 5,
	QRDMA_HMC_NUM_TYPES = 6,
};

/*
 * QUERY_FPM_VAL (CQP opcode 0x20), arg0: address of a 64-byte, 64-byte
 * aligned buffer the device fills: qword 0 MAX_SDS[31:0]; qword 1 + t for
 * type t: MAX_COUNT[31:0], OBJ_SIZE_LOG2[39:32].
 * COMMIT_FPM_VAL (0x21), arg0: address of a 64-byte buffer: the driver
 * writes qword 1 + t = COUNT[31:0] for each type; the device checks every
 * count against its maximum, lays the objects out in type order, each base
 * aligned to 4 KB, and writes qword 1 + t = BASE (FPM byte address) and
 * qword 0 = the number of SDs the layout needs. The completion's return
 * value is that number too. A committed layout lasts until reset.
 */
struct qrdma_fpm_buf {
	__le64 head;
	__le64 type[QRDMA_HMC_NUM_TYPES];
	__le64 reserved;
};

#define QRDMA_FPM_MAX_COUNT_MASK	0x00000000ffffffffULL
#define QRDMA_FPM_OBJ_SIZE_LOG2_MASK	0x000000ff00000000ULL
#define QRDMA_FPM_OBJ_SIZE_LOG2_SHIFT	32

/*
 * UPDATE_PE_SDS (0x1f): arg0 COUNT[7:0] (1..64); COUNT <= 2: the pairs
 * (cmd, data) inline in arg1/arg2 and arg3/arg4; else arg5 is the address
 * of COUNT 16-byte pairs. cmd and data are as HMC_SD_CMD (WRITE set) and
 * the SD entry. All pairs are checked before any is applied.
 */
#define QRDMA_UPDATE_SDS_COUNT_MASK	0xffULL
#define QRDMA_UPDATE_SDS_MAX		64u

/* ---- Objects: PD, queue memory, PBLEs ------------------------------------ */

/*
 * Object IDs are indexes into the committed HMC count of their type: QP n
 * is HMC QP object n, and so on. The driver allocates IDs; the device
 * refuses an ID beyond the committed count, a create of an ID that exists
 * and every use of one that does not. QP 0 (IB's SMI QP) does not exist
 * on RoCE; QP 1 is created only as the GSI QP: type UD with
 * QRDMA_QP_CREATE_GSI, which no other QP may carry.
 *
 * PDs need no command: a PD is a number below CAP_MAX_PD that the driver
 * hands out; objects carry it and the device checks that they agree
 * (a QP and the MRs it touches, a QP and its AH and SRQ).
 *
 * Queue memory (SQ, RQ, SRQ and CQ rings) is either one physically
 * contiguous, 4 KB aligned guest buffer (kernel queues, DMA-coherent
 * memory) or, with VIRTMAP set, a list of 4 KB pages in consecutive PBLEs
 * starting at a first PBLE index (user queues, pinned by the driver). A
 * ring never exceeds QRDMA_QUEUE_MAX_BYTES.
 *
 * PBLEs (HMC type PBLE, 8 bytes each) hold page addresses, aligned to the
 * page size of the MR or queue that uses them. An MR's page list is either
 * one level (PBLE first..first+n-1 are the pages) or two levels: PBLE
 * first..first+m-1 are roots, each holding the PBLE index of a leaf run of
 * QRDMA_PBLE_LEAF_ENTRIES PBLEs (the last run may be shorter) that hold the
 * pages. The device reads PBLEs through the HMC every time it translates,
 * so the driver may not change a PBLE while an object uses it.
 */
#define QRDMA_QP_RESERVED		2	/* QP 0 and 1 (GSI) are not general QPs */
#define QRDMA_QP_GSI			1
#define QRDMA_QUEUE_MAX_BYTES		(8u << 20)
#define QRDMA_PBLE_LEAF_ENTRIES		512u
#define QRDMA_OBJ_ID_MASK		0x0000000000ffffffULL	/* 24-bit object IDs */

/* ---- CQs ------------------------------------------------------------------ */

/*
 * CREATE_CQ (0x03):
 *   arg0: CQ_ID[23:0], CEQ_ID[31:24], SIZE_LOG2[36:32] (2^n CQEs, n in
 *         QRDMA_CQ_SIZE_LOG2_MIN..MAX and 2^n <= CAP_MAX_CQE + 1),
 *         CEQ_ENABLE[40] (events for this CQ go to CEQ_ID, which must exist),
 *         VIRTMAP[41], DB_PAGE[63:48] (the doorbell page whose CQ_ARM may
 *         name this CQ: 0 for kernel CQs, the context's page for user CQs)
 *   arg1: CQ_CTX[62:0], the value CEQEs and AEQEs about this CQ carry
 *   arg2: ring: guest-physical address (4 KB aligned) or, with VIRTMAP,
 *         first PBLE index
 *   arg3: shadow area, guest-physical, 64-byte aligned (struct
 *         qrdma_cq_shadow)
 * The device writes the CQ context to the CQ's HMC object and keeps a
 * working copy. MODIFY_CQ (0x04) resizes: the same arg0 (CEQ fields and
 * DB_PAGE must be unchanged), arg2 the new ring (CQ_CTX and the shadow
 * area stay; arg1 and arg3 are ignored). The device writes later
 * CQEs from index 0 of the new ring with VALID 1; every CQE written before
 * the command completed is in the old ring, so the consumer drains the old
 * ring, then moves. DESTROY_CQ (0x05): arg0 CQ_ID; refused with
 * STATE/BUSY while a QP uses the CQ (as its send or receive CQ).
 */
#define QRDMA_CQ_ARG0_ID_MASK		0x0000000000ffffffULL
#define QRDMA_CQ_ARG0_CEQ_MASK		0x00000000ff000000ULL
#define QRDMA_CQ_ARG0_CEQ_SHIFT		24
#define QRDMA_CQ_ARG0_SIZE_MASK		0x0000001f00000000ULL
#define QRDMA_CQ_ARG0_SIZE_SHIFT	32
#define QRDMA_CQ_ARG0_CEQ_ENABLE	(1ULL << 40)
#define QRDMA_CQ_ARG0_VIRTMAP		(1ULL << 41)
#define QRDMA_CQ_ARG0_DB_PAGE_MASK	0xffff000000000000ULL
#define QRDMA_CQ_ARG0_DB_PAGE_SHIFT	48
#define QRDMA_CQ_SIZE_LOG2_MIN		2
#define QRDMA_CQ_SIZE_LOG2_MAX		18	/* 2^18 CQEs of 32 bytes: QRDMA_QUEUE_MAX_BYTES */

/* CQE: 32 bytes, VALID in qword 3 bit 63, polarity 1 on the first lap. */
#define QRDMA_CQE_SIZE			32u

/*
 * CQ shadow area, 64 bytes, written by the consumer:
 *   qword 0: HEAD, the index (modulo 2^32) of the next CQE the consumer
 *            will read; the device never overwrites an unread CQE (a full
 *            CQ is an overflow: AEQE QRDMA_AE_CQ_OVERFLOW, CQ to error)
 *   qword 1: ARM: ARM_SEQ[15:0] (incremented by the consumer on each
 *            request), ARM_NEXT[16] (any completion), ARM_SOLICITED[17]
 *            (solicited or error completions only); the CQ_ARM doorbell
 *            makes the device read it
 *   qwords 2..7: reserved
 */
struct qrdma_cq_shadow {
	__le64 head;
	__le64 arm;
	__le64 reserved[6];
};

#define QRDMA_CQ_ARM_SEQ_MASK		0x000000000000ffffULL
#define QRDMA_CQ_ARM_NEXT		(1ULL << 16)
#define QRDMA_CQ_ARM_SOLICITED		(1ULL << 17)

/*
 * CQ context in HMC, 64 bytes, written by the device (the driver reads it
 * only for debugging): qword 0 VALID[0] plus arg0 of the create/modify
 * (bits 63:1 as there), qword 1 CQ_CTX, qword 2 ring, qword 3 shadow area,
 * qword 4 the device's tail index, qword 5 its VALID polarity in bit 0.
 */
#define QRDMA_CQ_CTX_VALID		1ULL

/* ---- Doorbells (BAR2, per page) ------------------------------------------- */

/*
 * A doorbell page holds three 32-bit doorbells. Writing an ID the page
 * does not own (the queue's DB_PAGE differs, or no such queue) is reported
 * as AEQE BAD_DOORBELL and otherwise ignored. The producer writes the SQ
 * doorbell after posting send WQEs and the RQ doorbell after posting
 * receive WQEs to a QP's own RQ (the device also looks for receive WQEs
 * whenever a message arrives; the RQ doorbell is what makes it flush WQEs
 * posted to a QP in error).
 */
#define QRDMA_DB_SQ			0x00	/* W: QP_ID, new SQ WQEs were posted */
#define QRDMA_DB_CQ_ARM			0x40	/* W: CQ_ID, read the shadow ARM */
#define QRDMA_DB_RQ			0x80	/* W: QP_ID, new RQ WQEs were posted */

/* ---- SRQs ------------------------------------------------------------------ */

/*
 * CREATE_SRQ (0x38):
 *   arg0: SRQ_ID[23:0], SIZE_LOG2[36:32] (2^n WQEs, n in QRDMA_WQ_SIZE_LOG2_MIN..,
 *         2^n <= CAP_MAX_SRQ_WR + 1), WQE_LOG2[43:40] (stride 2^n bytes,
 *         QRDMA_WQE_LOG2_MIN..MAX), VIRTMAP[48]
 *   arg1: PD[23:0], LIMIT[55:32] (0: no limit event)
 *   arg2: ring (as for CQs)
 *   arg3: shadow area, 64-byte aligned: qword 0 is the consumer's count of
 *         WQEs posted (modulo 2^32), so the device knows how many are
 *         outstanding and when the limit is crossed
 *   arg4: SRQ_CTX[62:0] for AEQEs (SRQ limit reached)
 * MODIFY_SRQ (0x39): arg0 SRQ_ID, arg1 LIMIT[55:32] (arms the limit event
 * again). DESTROY_SRQ (0x3a): arg0 SRQ_ID; BUSY while a QP uses it.
 * QUERY_SRQ (0x3b): arg0 SRQ_ID; the return value is LIMIT[23:0] and the
 * WQEs the device holds as outstanding in [55:32].
 */
#define QRDMA_SRQ_ARG0_ID_MASK		0x0000000000ffffffULL
#define QRDMA_SRQ_ARG0_SIZE_MASK	0x0000001f00000000ULL
#define QRDMA_SRQ_ARG0_SIZE_SHIFT	32
#define QRDMA_SRQ_ARG0_WQE_MASK		0x00000f0000000000ULL
#define QRDMA_SRQ_ARG0_WQE_SHIFT	40
#define QRDMA_SRQ_ARG0_VIRTMAP		(1ULL << 48)
#define QRDMA_SRQ_ARG1_PD_MASK		0x0000000000ffffffULL
#define QRDMA_SRQ_ARG1_LIMIT_MASK	0x00ffffff00000000ULL
#define QRDMA_SRQ_ARG1_LIMIT_SHIFT	32

#define QRDMA_WQ_SIZE_LOG2_MIN		1
#define QRDMA_WQ_SIZE_LOG2_MAX		15
#define QRDMA_WQE_LOG2_MIN		5	/* 32-byte WQEs */
#define QRDMA_WQE_LOG2_MAX		10	/* 1 KB WQEs */

/*
 * WQE strides: an SQ WQE is a 64-byte header followed by 16 bytes per SGE
 * (or by the inline data); an RQ or SRQ WQE is a 16-byte header followed
 * by 16 bytes per SGE. A queue's stride is the power of two that holds its
 * largest WQE. The layouts themselves are in "Work queues".
 */
#define QRDMA_SQ_WQE_HDR_BYTES		64u
#define QRDMA_RQ_WQE_HDR_BYTES		16u
#define QRDMA_SGE_BYTES			16u
/* An SQ stride holds at least the header: CREATE_QP refuses 32-byte SQ WQEs. */
#define QRDMA_SQ_WQE_LOG2_MIN		6

/* SRQ context in HMC, 64 bytes: qword 0 VALID[0] | arg0, qwords 1..4 args 1..4. */
#define QRDMA_SRQ_CTX_VALID		1ULL

/* ---- Address vectors and AHs ---------------------------------------------- */

/*
 * Address vector, 32 bytes, used by AHs and by QP modify (RC/UC paths).
 * SGID_INDEX names an entry of the device's GID table; the GID types of
 * the source and DGID (IPv4-mapped or not) must agree.
 */
struct qrdma_av {
	__u8 dgid[16];
	__u8 dmac[6];
	__u8 sgid_index;
	__u8 hop_limit;
	__u8 traffic_class;
	__u8 reserved[3];
	__le32 flow_label;	/* bits 19:0 */
};

/*
 * CREATE_AH (0x1c): arg0 AH_ID[23:0], PD[55:32]; arg1 address of a
 * struct qrdma_av (8-byte aligned, guest RAM). MODIFY_AH (0x1d): the same,
 * for an existing AH. DESTROY_AH (0x1e): arg0 AH_ID. The device stores the
 * AV as the AH's HMC context (64 bytes: qword 0 VALID[0] | arg0, then the
 * 32-byte AV at byte 8).
 */
#define QRDMA_AH_ARG0_ID_MASK		0x0000000000ffffffULL
#define QRDMA_AH_ARG0_PD_MASK		0x00ffffff00000000ULL
#define QRDMA_AH_ARG0_PD_SHIFT		32
#define QRDMA_AH_CTX_VALID		1ULL

/* ---- QPs ------------------------------------------------------------------ */

/* QP types, states and MTUs use the IB numbering (enum ib_qp_type etc.). */
enum qrdma_qp_type {
	QRDMA_QP_TYPE_RC = 2,
	QRDMA_QP_TYPE_UC = 3,
	QRDMA_QP_TYPE_UD = 4,
};

enum qrdma_qp_state {
	QRDMA_QPS_RESET = 0,
	QRDMA_QPS_INIT = 1,
	QRDMA_QPS_RTR = 2,
	QRDMA_QPS_RTS = 3,
	QRDMA_QPS_SQD = 4,
	QRDMA_QPS_SQE = 5,
	QRDMA_QPS_ERR = 6,
};

/*
 * CREATE_QP (0x00): arg0 QP_ID[23:0]; arg1 address of a struct
 * qrdma_qp_create_info (64-byte aligned, guest RAM). The QP starts in
 * RESET. The CQs (and SRQ) it names must exist and be in the same PD
 * where they have one; a bad field fails with QRDMA_CQP_ERR_INFO and the
 * field's byte offset as minor. Each ring holds 2^SIZE_LOG2 WQEs with
 * SIZE_LOG2 in QRDMA_WQ_SIZE_LOG2_MIN..MAX and 2^SIZE_LOG2 <= CAP_MAX_QP_WR
 * + 1, of a stride 2^WQE_LOG2 in QRDMA_WQE_LOG2_MIN..MAX (the SQ's from
 * QRDMA_SQ_WQE_LOG2_MIN), at most QRDMA_QUEUE_MAX_BYTES in all. With QRDMA_QP_CREATE_SRQ the RQ fields
 * (rq_size_log2, rq_wqe_log2, rq_addr, RQ_VIRTMAP) are 0; without it srq
 * is 0. QP 0 cannot be created; QP 1 only as the GSI QP (above).
 */
struct qrdma_qp_create_info {
	__le32 pd;
	__u8 type;		/* enum qrdma_qp_type */
	__u8 flags;		/* QRDMA_QP_CREATE_* */
	__le16 db_page;		/* the doorbell page whose SQ doorbell may name this QP */
	__le32 send_cq;
	__le32 recv_cq;
	__le32 srq;		/* with QRDMA_QP_CREATE_SRQ */
	__u8 sq_size_log2;	/* 2^n SQ WQEs */
	__u8 sq_wqe_log2;	/* SQ WQE stride 2^n bytes */
	__u8 rq_size_log2;	/* 2^n RQ WQEs; 0 with an SRQ */
	__u8 rq_wqe_log2;
	__le64 sq_addr;		/* ring: address, or first PBLE index with SQ_VIRTMAP */
	__le64 rq_addr;
	__le64 qp_ctx;		/* bits 62:0: the value AEQEs about this QP carry */
	__le64 reserved[2];
};

#define QRDMA_QP_CREATE_SRQ		0x01	/* receives come from srq, no RQ */
#define QRDMA_QP_CREATE_SQ_VIRTMAP	0x02
#define QRDMA_QP_CREATE_RQ_VIRTMAP	0x04
#define QRDMA_QP_CREATE_SIG_ALL		0x08	/* every send WQE completes */
#define QRDMA_QP_CREATE_GSI		0x10	/* QP 1, the GSI QP (UD, Q_Key 0x80010000) */
#define QRDMA_QP_CREATE_FLAGS_MASK	0x1f

/*
 * MODIFY_QP (0x01): arg0 QP_ID; arg1 address of a struct
 * qrdma_qp_modify_info (64-byte aligned). ATTR_MASK uses the IB attribute
 * mask bits (QRDMA_QP_ATTR_*, the values of enum ib_qp_attr_mask); the
 * device moves the QP only along transitions the IB state machine allows,
 * with the attributes IB requires and allows for that transition and QP
 * type (STATE/TRANSITION or STATE/ATTR otherwise), and applies every
 * attribute or none. ALT_PATH, PATH_MIG_STATE and CAP are not implemented
 * (QRDMA_CQP_ERR_INFO, minor 0). Moving to RESET forgets every attribute.
 * sq_draining is ignored. QUERY_QP (0x13): arg0 QP_ID, arg1 address of a
 * struct qrdma_qp_modify_info the device fills with the QP's current
 * state and every attribute, ATTR_MASK naming those that were ever set.
 */
struct qrdma_qp_modify_info {
	__le32 attr_mask;
	__u8 state;		/* new state (QUERY_QP: the current one) */
	__u8 cur_state;		/* with QRDMA_QP_ATTR_CUR_STATE: the state the driver expects */
	__u8 path_mtu;		/* IB enum: 1 = 256 ... 5 = 4096 */
	__u8 timeout;		/* 4.096 us * 2^timeout; 0 = infinite */
	__le32 sq_psn;
	__le32 rq_psn;
	__le32 dest_qpn;
	__le32 qkey;
	__le32 access_flags;	/* IB access bits: REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC */
	__le16 pkey_index;
	__u8 retry_cnt;
	__u8 rnr_retry;
	__u8 min_rnr_timer;
	__u8 max_rd_atomic;
	__u8 max_dest_rd_atomic;
	__u8 port_num;
	__u8 sq_draining;	/* QUERY_QP only */
	__u8 reserved0[7];
	struct qrdma_av av;	/* with QRDMA_QP_ATTR_AV */
	__le32 reserved1;
	__le64 reserved2[6];
};

#define QRDMA_QP_ATTR_STATE		(1u << 0)
#define QRDMA_QP_ATTR_CUR_STATE		(1u << 1)
#define QRDMA_QP_ATTR_EN_SQD_ASYNC	(1u << 2)
#define QRDMA_QP_ATTR_ACCESS_FLAGS	(1u << 3)
#define QRDMA_QP_ATTR_PKEY_INDEX	(1u << 4)
#define QRDMA_QP_ATTR_PORT		(1u << 5)
#define QRDMA_QP_ATTR_QKEY		(1u << 6)
#define QRDMA_QP_ATTR_AV		(1u << 7)
#define QRDMA_QP_ATTR_PATH_MTU		(1u << 8)
#define QRDMA_QP_ATTR_TIMEOUT		(1u << 9)
#define QRDMA_QP_ATTR_RETRY_CNT		(1u << 10)
#define QRDMA_QP_ATTR_RNR_RETRY		(1u << 11)
#define QRDMA_QP_ATTR_RQ_PSN		(1u << 12)
#define QRDMA_QP_ATTR_MAX_QP_RD_ATOMIC	(1u << 13)
#define QRDMA_QP_ATTR_ALT_PATH		(1u << 14)
#define QRDMA_QP_ATTR_MIN_RNR_TIMER	(1u << 15)
#define QRDMA_QP_ATTR_SQ_PSN		(1u << 16)
#define QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC (1u << 17)
#define QRDMA_QP_ATTR_PATH_MIG_STATE	(1u << 18)
#define QRDMA_QP_ATTR_CAP		(1u << 19)
#define QRDMA_QP_ATTR_DEST_QPN		(1u << 20)

/* IB access flags as MRs and QPs carry them (enum ib_access_flags). */
#define QRDMA_ACCESS_LOCAL_WRITE	0x01u
#define QRDMA_ACCESS_REMOTE_WRITE	0x02u
#define QRDMA_ACCESS_REMOTE_READ	0x04u
#define QRDMA_ACCESS_REMOTE_ATOMIC	0x08u
#define QRDMA_ACCESS_MW_BIND		0x10u
#define QRDMA_ACCESS_ZERO_BASED		0x20u
#define QRDMA_ACCESS_VALID_MASK		0x3fu

/*
 * DESTROY_QP (0x02): arg0 QP_ID. Any state; outstanding work is dropped.
 * QP context in HMC, 256 bytes, written by the device on every create,
 * modify and destroy: bytes 0..63 the create info (qword 0 bit 63 set
 * while the QP exists), bytes 64..191 the modify info as QUERY_QP reports
 * it, bytes 192..255 reserved for the transport.
 */
#define QRDMA_QP_CTX_SIZE		256u
#define QRDMA_QP_CTX_VALID		(1ULL << 63)

/* ---- Work queues: SQ, RQ and SRQ WQEs, CQEs ------------------------------ */

/*
 * Rings are arrays of fixed-stride WQEs (the stride the queue was created
 * with) that the producer fills and the device consumes in order. A WQE
 * belongs to the current lap when its VALID bit equals the lap's polarity
 * (1 on the first lap, flipping each time the index wraps to 0); the
 * producer writes everything else first, then, after a write barrier, the
 * qword holding VALID. wr_id stays with the producer: completions carry
 * the WQE's index and the producer keeps wr_ids in an array beside the ring.
 *
 * SGE, 16 bytes: qword 0 address (in the MR's IOVA space), qword 1
 * LENGTH[31:0], LKEY[63:32]. A zero-length SGE is allowed and moves nothing.
 */
struct qrdma_sge {
	__le64 addr;
	__le32 length;
	__le32 lkey;
};

/*
 * SQ WQE: a 64-byte header, then NUM_SGE SGEs or INLINE_LEN bytes of
 * inline data. Header qwords:
 *   0: remote address (RDMA, atomics); FAST_REG: the MR's new IOVA
 *   1: REMOTE_STAG[31:0] (RDMA, atomics) ; IMM_DATA or INVALIDATE_STAG[63:32]
 *      (network byte order as IB carries it; SEND_WITH_INV, LOCAL_INV use it)
 *   2: atomic compare (CMP_AND_SWP) or add (FETCH_AND_ADD) operand;
 *      FAST_REG: LENGTH
 *   3: atomic swap operand; FAST_REG: first PBLE index
 *   4: UD: DEST_QPN[23:0], AH_ID[55:32]; FAST_REG: NEW_STAG[31:0],
 *      ACCESS[39:32], PAGE_SIZE_LOG2[45:40], LEVELS[47:46]
 *   5: UD: Q_KEY[31:0]
 *   6: FAST_REG: FBO
 *   7: OPCODE[7:0], NUM_SGE[12:8], INLINE_LEN[25:16], INLINE[26],
 *      SIGNALED[27], SOLICITED[28], READ_FENCE[29], LOCAL_FENCE[30], VALID[63]
 */
struct qrdma_sq_wqe_hdr {
	__le64 remote_addr;
	__le64 rkey_imm;
	__le64 compare_add;
	__le64 swap;
	__le64 ud_dest;
	__le64 ud_qkey;
	__le64 fbo;
	__le64 hdr;
};

#define QRDMA_SQ_RKEY_MASK		0x00000000ffffffffULL
#define QRDMA_SQ_IMM_SHIFT		32
#define QRDMA_SQ_UD_QPN_MASK		0x0000000000ffffffULL
#define QRDMA_SQ_UD_AH_MASK		0x00ffffff00000000ULL
#define QRDMA_SQ_UD_AH_SHIFT		32
#define QRDMA_SQ_FR_STAG_MASK		0x00000000ffffffffULL
#define QRDMA_SQ_FR_ACCESS_MASK		0x000000ff00000000ULL
#define QRDMA_SQ_FR_ACCESS_SHIFT	32
#define QRDMA_SQ_FR_PAGE_MASK		0x00003f0000000000ULL
#define QRDMA_SQ_FR_PAGE_SHIFT		40
#define QRDMA_SQ_FR_LEVELS_MASK		0x0000c00000000000ULL
#define QRDMA_SQ_FR_LEVELS_SHIFT	46

/*
 * BIND_MW (0x0a, interface 0.8) binds a memory window to a range of an MR
 * in SQ order (docs/hw-spec.md section 18.4). Header qwords:
 *   0: ADDR, the window's first byte in the MR's IOVA space
 *   1: NEW_STAG[31:0] (the window's index with its new key byte),
 *      MR_STAG[63:32] (the MR's lkey; 0 when a type 1 window is unbound)
 *   2: LENGTH (0 on a type 1 window: unbind)
 *   4: MW_STAG[31:0] (the window's STag now), ACCESS[39:32]
 *      (QRDMA_ACCESS_REMOTE_* the window grants)
 * No SGEs and no inline data.
 */
#define QRDMA_SQ_MW_NEW_STAG_MASK	0x00000000ffffffffULL
#define QRDMA_SQ_MW_MR_STAG_SHIFT	32
#define QRDMA_SQ_MW_STAG_MASK		0x00000000ffffffffULL
#define QRDMA_SQ_MW_ACCESS_MASK		0x000000ff00000000ULL
#define QRDMA_SQ_MW_ACCESS_SHIFT	32

#define QRDMA_SQ_HDR_OPCODE_MASK	0x00000000000000ffULL
#define QRDMA_SQ_HDR_NUM_SGE_MASK	0x0000000000001f00ULL
#define QRDMA_SQ_HDR_NUM_SGE_SHIFT	8
#define QRDMA_SQ_HDR_INLINE_LEN_MASK	0x0000000003ff0000ULL
#define QRDMA_SQ_HDR_INLINE_LEN_SHIFT	16
#define QRDMA_SQ_HDR_INLINE		(1ULL << 26)
#define QRDMA_SQ_HDR_SIGNALED		(1ULL << 27)
#define QRDMA_SQ_HDR_SOLICITED		(1ULL << 28)
#define QRDMA_SQ_HDR_READ_FENCE		(1ULL << 29)
#define QRDMA_SQ_HDR_LOCAL_FENCE	(1ULL << 30)
#define QRDMA_SQ_HDR_VALID		(1ULL << 63)

/* SQ opcodes (our numbering). */
enum qrdma_sq_opcode {
	QRDMA_SQ_OP_RDMA_WRITE = 0x00,
	QRDMA_SQ_OP_RDMA_WRITE_WITH_IMM = 0x01,
	QRDMA_SQ_OP_SEND = 0x02,
	QRDMA_SQ_OP_SEND_WITH_IMM = 0x03,
	QRDMA_SQ_OP_SEND_WITH_INV = 0x04,
	QRDMA_SQ_OP_RDMA_READ = 0x05,
	QRDMA_SQ_OP_ATOMIC_CMP_AND_SWP = 0x06,
	QRDMA_SQ_OP_ATOMIC_FETCH_AND_ADD = 0x07,
	QRDMA_SQ_OP_LOCAL_INV = 0x08,
	QRDMA_SQ_OP_FAST_REG = 0x09,
	QRDMA_SQ_OP_BIND_MW = 0x0a,		/* interface 0.8 */
	QRDMA_SQ_OP_NOP = 0x0c,
};

/*
 * RQ / SRQ WQE: a 16-byte header, then NUM_SGE SGEs. Header: qword 0
 * reserved (0), qword 1 NUM_SGE[4:0], VALID[63].
 */
struct qrdma_rq_wqe_hdr {
	__le64 reserved;
	__le64 hdr;
};

#define QRDMA_RQ_HDR_NUM_SGE_MASK	0x1fULL
#define QRDMA_RQ_HDR_VALID		(1ULL << 63)

/*
 * CQE, QRDMA_CQE_SIZE (32) bytes:
 *   qword 0: BYTE_LEN[31:0], IMM_DATA or INVALIDATED_STAG[63:32]
 *   qword 1: QP_ID[23:0], SRC_QP[55:32] (UD receives)
 *   qword 2: WQE_INDEX[15:0] (in the SQ, RQ or SRQ the CQE is about),
 *            OPCODE[23:16] (the ibv_wc_opcode value), STATUS[31:24] (the
 *            ibv_wc_status value), VENDOR_ERR[47:32], FLAGS[55:48]
 *   qword 3: VALID[63]
 */
#define QRDMA_CQE_BYTE_LEN_MASK		0x00000000ffffffffULL
#define QRDMA_CQE_IMM_SHIFT		32
#define QRDMA_CQE_QP_MASK		0x0000000000ffffffULL
#define QRDMA_CQE_SRC_QP_MASK		0x00ffffff00000000ULL
#define QRDMA_CQE_SRC_QP_SHIFT		32
#define QRDMA_CQE_WQE_INDEX_MASK	0x000000000000ffffULL
#define QRDMA_CQE_OPCODE_MASK		0x0000000000ff0000ULL
#define QRDMA_CQE_OPCODE_SHIFT		16
#define QRDMA_CQE_STATUS_MASK		0x00000000ff000000ULL
#define QRDMA_CQE_STATUS_SHIFT		24
#define QRDMA_CQE_VENDOR_ERR_MASK	0x0000ffff00000000ULL
#define QRDMA_CQE_VENDOR_ERR_SHIFT	32
#define QRDMA_CQE_FLAGS_MASK		0x00ff000000000000ULL
#define QRDMA_CQE_FLAGS_SHIFT		48
#define QRDMA_CQE_VALID			(1ULL << 63)

#define QRDMA_CQE_FLAG_SQ		0x01	/* about an SQ WQE */
#define QRDMA_CQE_FLAG_SRQ		0x02	/* WQE_INDEX is in the QP's SRQ */
#define QRDMA_CQE_FLAG_WITH_IMM		0x04
#define QRDMA_CQE_FLAG_WITH_INV		0x08
#define QRDMA_CQE_FLAG_GRH		0x10	/* UD: a 40-byte GRH opens the buffer */
#define QRDMA_CQE_FLAG_SOLICITED	0x20

/*
 * Completion rules (the data path):
 * - SQ: WQEs complete in ring order. A SIGNALED WQE (every WQE with
 *   QRDMA_QP_CREATE_SIG_ALL) gets a CQE on the send CQ when done; an
 *   unsignaled one only if it fails. A CQE for SQ index i also retires
 *   every earlier unsignaled WQE of that SQ.
 * - RQ/SRQ: every receive WQE gets a CQE on the receive CQ.
 * - Errors: the failing WQE completes with its status; the QP moves to
 *   ERR (RC; UC/UD send errors to SQE) and every later WQE of the QP,
 *   posted before or after, completes with WR_FLUSH_ERR (signaled or not).
 * - CQ HEAD in the shadow area counts CQEs consumed, free running modulo
 *   2^32; the device writes CQE number t at ring index t mod 2^SIZE_LOG2
 *   only while t - HEAD < 2^SIZE_LOG2, else the CQ overflows: the
 *   device writes nothing more to it (CQEs already written stay as they
 *   are), raises QRDMA_AE_CQ_OVERFLOW once, and every QP with a
 *   completion for it from then on (the one that overflowed it first)
 *   moves to ERR with QRDMA_AE_QP_FATAL; that completion is lost. Only
 *   DESTROY_CQ ends the error.
 * - Arming: the consumer bumps ARM_SEQ with ARM_NEXT or ARM_SOLICITED in
 *   the shadow ARM qword, then writes the CQ_ARM doorbell. The next CQE
 *   written after the doorbell (for ARM_SOLICITED: the next receive CQE
 *   with QRDMA_CQE_FLAG_SOLICITED, or with an error status) writes a CEQE
 *   with the CQ's CQ_CTX to its CEQ and disarms the CQ.
 * - imm_data and invalidate keys are carried as the 32-bit value in the
 *   verbs structs (network byte order for imm_data), unchanged.
 */

_Static_assert(sizeof(struct qrdma_sge) == 16, "qrdma_sge");
_Static_assert(sizeof(struct qrdma_sq_wqe_hdr) == 64, "qrdma_sq_wqe_hdr");
_Static_assert(sizeof(struct qrdma_rq_wqe_hdr) == 16, "qrdma_rq_wqe_hdr");

/* ---- MRs (STags) ------------------------------------------------------------ */

/*
 * An STag (lkey / rkey) is MR_INDEX[31:8] | KEY[7:0]: the HMC MR object and
 * a key byte the driver changes on each reuse of the index, so a stale key
 * fails. Every use checks the whole STag.
 *
 * REG_MR (0x0a) registers a memory region in one command:
 *   arg0: STAG
 *   arg1: PD[23:0], ACCESS[39:32] (QRDMA_ACCESS_*), LEVELS[41:40] (0:
 *         physically contiguous at arg4, 1: one-level PBLE list, 2: two
 *         levels), PAGE_SIZE_LOG2[53:48] (a size in CAP_PAGE_SIZES),
 *         DMA[56] (all of guest RAM, iova = guest-physical address; local
 *         access only: the kernel's DMA MR)
 *   arg2: IOVA, the address the MR starts at in WQEs
 *   arg3: LENGTH in bytes (0 < LENGTH <= CAP_MAX_MR_SIZE; any with DMA)
 *   arg4: first PBLE index (LEVELS 1, 2) or the guest-physical address of
 *         the first byte (LEVELS 0)
 *   arg5: FBO, the offset of the first byte inside the first page
 * Byte IOVA + x lives in page (FBO + x) >> PAGE_SIZE_LOG2 of the list, at
 * offset (FBO + x) & (page size - 1). The device checks the PBLE range (and
 * reads the roots) at registration and every page address at use. LEVELS
 * 0 is the list of pages from arg4 - FBO on, so arg4 mod page size must be
 * FBO. With DMA, LEVELS and PAGE_SIZE_LOG2 are 0 and args 2..5 are ignored.
 * REREG[57] (interface 0.6) re-registers an index that holds a valid MR of
 * REG_MR (not DMA, not fast-register) in one step: every argument is
 * checked as for a new MR, then the registration (PD, access, translation
 * and the key byte of arg0, which may differ from the MR's) replaces the
 * old one at once, so an access in between sees the old or the new, never
 * no MR; on any error the old one stays. ibv_rereg_mr keeps its keys when
 * only access or PD change.
 *
 * ALLOC_STAG (0x09) creates a fast-register MR without a translation:
 *   arg0 STAG, arg1 PD[23:0] | ACCESS[39:32], arg2 MAX_PAGES (the PBLEs
 *   reserved for it), arg4 first PBLE index. It stays invalid until a
 *   fast-register WQE fills it.
 *   With MW_TYPE[45:44] (interface 0.8) 1 or 2 it creates a memory window
 *   of that type instead (QRDMA_FEATURE_MW): ACCESS, arg2 and arg4 are 0,
 *   and the window is unbound (FREE) until a BIND_MW WQE binds it.
 *   DEALLOC_STAG frees a window (bound or not); an MR that windows are
 *   bound to cannot be freed or re-registered (QRDMA_STATE_ERR_BUSY).
 * DEALLOC_STAG (0x0d): arg0 STAG. QUERY_STAG (0x0b): arg0 STAG, arg1
 * address of 64 bytes (64-byte aligned) the device fills with the MR's
 * HMC context. Both check the key byte (STATE/KEY).
 *
 * MR context in HMC, 64 bytes:
 *   qword 0: STATE[1:0] (QRDMA_MR_STATE_*), KEY[15:8], TYPE[17:16],
 *            PD[55:32]
 *   qword 1: ACCESS[7:0], LEVELS[9:8], PAGE_SIZE_LOG2[21:16], DMA[24],
 *            MW_TYPE[27:26] (windows)
 *   qword 2: IOVA   qword 3: LENGTH   qword 4: first PBLE or address;
 *            windows: the bound MR's STag
 *   qword 5: FBO    qword 6: MAX_PAGES (fast-register MRs); type 2
 *            windows: the QP ID bound to
 *   qword 7: MRs: how many windows are bound to it
 */
#define QRDMA_STAG_INDEX_SHIFT		8
#define QRDMA_STAG_KEY_MASK		0xffu

#define QRDMA_MR_ARG1_PD_MASK		0x0000000000ffffffULL
#define QRDMA_MR_ARG1_ACCESS_MASK	0x000000ff00000000ULL
#define QRDMA_MR_ARG1_ACCESS_SHIFT	32
#define QRDMA_MR_ARG1_LEVELS_MASK	0x0000030000000000ULL
#define QRDMA_MR_ARG1_LEVELS_SHIFT	40
#define QRDMA_MR_ARG1_PAGE_MASK		0x003f000000000000ULL
#define QRDMA_MR_ARG1_PAGE_SHIFT	48
#define QRDMA_MR_ARG1_DMA		(1ULL << 56)
#define QRDMA_MR_ARG1_REREG		(1ULL << 57)
#define QRDMA_MR_ARG1_MW_TYPE_MASK	0x0000300000000000ULL	/* ALLOC_STAG, 0.8 */
#define QRDMA_MR_ARG1_MW_TYPE_SHIFT	44
#define QRDMA_MW_TYPE_1			1
#define QRDMA_MW_TYPE_2			2

enum qrdma_mr_state {
	QRDMA_MR_STATE_NONE = 0,	/* no MR at this index */
	QRDMA_MR_STATE_FREE = 1,	/* allocated, no valid translation (fast-register) */
	QRDMA_MR_STATE_VALID = 2,
};

enum qrdma_mr_type {
	QRDMA_MR_TYPE_MEM = 0,		/* REG_MR */
	QRDMA_MR_TYPE_FAST_REG = 1,	/* ALLOC_STAG */
	QRDMA_MR_TYPE_DMA = 2,		/* REG_MR with DMA */
	QRDMA_MR_TYPE_MW = 3,		/* ALLOC_STAG with MW_TYPE: a memory window */
};

#define QRDMA_MR_CTX_STATE_MASK		0x3ULL
#define QRDMA_MR_CTX_KEY_MASK		0xff00ULL
#define QRDMA_MR_CTX_KEY_SHIFT		8
#define QRDMA_MR_CTX_TYPE_MASK		0x30000ULL
#define QRDMA_MR_CTX_TYPE_SHIFT		16
#define QRDMA_MR_CTX_PD_MASK		0x00ffffff00000000ULL
#define QRDMA_MR_CTX_PD_SHIFT		32
#define QRDMA_MR_CTX1_ACCESS_MASK	0xffULL
#define QRDMA_MR_CTX1_LEVELS_MASK	0x300ULL
#define QRDMA_MR_CTX1_LEVELS_SHIFT	8
#define QRDMA_MR_CTX1_PAGE_MASK		0x3f0000ULL
#define QRDMA_MR_CTX1_PAGE_SHIFT	16
#define QRDMA_MR_CTX1_DMA		(1ULL << 24)
#define QRDMA_MR_CTX1_MW_TYPE_MASK	0xc000000ULL
#define QRDMA_MR_CTX1_MW_TYPE_SHIFT	26

_Static_assert(sizeof(struct qrdma_cq_shadow) == 64, "qrdma_cq_shadow");
_Static_assert(sizeof(struct qrdma_av) == 32, "qrdma_av");
_Static_assert(sizeof(struct qrdma_qp_create_info) == 64, "qrdma_qp_create_info");
_Static_assert(sizeof(struct qrdma_qp_modify_info) == 128, "qrdma_qp_modify_info");

_Static_assert(sizeof(struct qrdma_fpm_buf) == 64, "qrdma_fpm_buf");
_Static_assert(sizeof(struct qrdma_cqp_ctx) == 64, "qrdma_cqp_ctx");
_Static_assert(sizeof(struct qrdma_cqp_wqe) == 64, "qrdma_cqp_wqe");
_Static_assert(sizeof(struct qrdma_ccq_cqe) == 32, "qrdma_ccq_cqe");

_Static_assert(QRDMA_MASK32(31, 16) == 0xffff0000u, "QRDMA_MASK32");
_Static_assert(QRDMA_MASK32(15, 0) == 0x0000ffffu, "QRDMA_MASK32");
_Static_assert(QRDMA_MASK32(0, 0) == 0x00000001u, "QRDMA_MASK32");
_Static_assert(QRDMA_REG_CAP_MAX_MCAST_QP_ATTACH < 0x300, "capability block overflow");
_Static_assert(QRDMA_REG_OBJ_COUNT(QRDMA_HMC_AH) == QRDMA_REG_OBJ_COUNT_AH, "OBJ_COUNT(t)");
_Static_assert(QRDMA_REG_OBJ_COUNT_AH < 0x200, "control block overflow");
_Static_assert(QRDMA_REG_BOARD_ID + QRDMA_BOARD_ID_LEN <= 0x100, "identity block overflow");
_Static_assert(QRDMA_STAT_NUM <= QRDMA_STATS_MAX, "port counters overflow");
_Static_assert(QRDMA_REG_STAT_HI(QRDMA_STATS_MAX - 1) < QRDMA_REG_STATS_BASE + QRDMA_REG_BLOCK_SIZE,
	       "port counter block overflow");

#endif /* QRDMA_HW_H */
