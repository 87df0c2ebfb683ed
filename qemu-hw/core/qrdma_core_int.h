/*
 * Private to the device core's files: register descriptors, the guest
 * error helper, and the hooks each block of the core provides.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_CORE_INT_H
#define QRDMA_CORE_INT_H

#include "qrdma_core.h"
#include "qrdma_dp.h"

enum qrdma_reg_access {
    QRDMA_REG_RO,
    QRDMA_REG_RW,
};

/*
 * One BAR0 register. Without a read hook the value is the block's
 * storage; without a write hook a valid write is stored there. A write
 * hook gets only values that passed the write mask.
 */
struct qrdma_reg_desc {
    const char *name;
    enum qrdma_reg_access access;
    uint32_t write_mask;        /* RW: the bits a write may set */
    uint32_t (*read)(struct qrdma_core *core, uint32_t offset);
    void (*write)(struct qrdma_core *core, uint32_t offset, uint32_t value);
};

#define QRDMA_REG_RO_DESC(off, base, nm) \
    [((off) - (base)) / 4] = { .name = (nm), .access = QRDMA_REG_RO }
#define QRDMA_REG_RO_LIVE_DESC(off, base, nm, fn) \
    [((off) - (base)) / 4] = { .name = (nm), .access = QRDMA_REG_RO, \
                               .read = (fn) }
#define QRDMA_REG_RW_DESC(off, base, nm, mask, fn) \
    [((off) - (base)) / 4] = { .name = (nm), .access = QRDMA_REG_RW, \
                               .write_mask = (mask), .write = (fn) }
#define QRDMA_REG_RW_LIVE_DESC(off, base, nm, mask, rd, wr) \
    [((off) - (base)) / 4] = { .name = (nm),                \
                               .access = QRDMA_REG_RW,      \
                               .write_mask = (mask),        \
                               .read = (rd),                \
                               .write = (wr) }

/*
 * Little-endian qwords of guest descriptors, byte by byte (no alignment).
 * Spelled out rather than looped: compilers turn the straight-line forms
 * into one load or store, but at -O2 keep a loop a loop (eight shifts per
 * qword on the data path's every WQE, CQE and SGE).
 */
static inline uint64_t qrdma_ld_le64(const uint8_t *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
           (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
           (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

static inline void qrdma_st_le64(uint8_t *p, uint64_t v)
{
    p[0] = v;
    p[1] = v >> 8;
    p[2] = v >> 16;
    p[3] = v >> 24;
    p[4] = v >> 32;
    p[5] = v >> 40;
    p[6] = v >> 48;
    p[7] = v >> 56;
}

/* The same for the 32- and 16-bit fields of info buffers. */
/* A GID (network order) as an address: "::ffff:10.0.0.1", "fe80::1". */
#define QRDMA_GID_STR_LEN 48
void qrdma_gid_str(const uint8_t gid[16], char *buf, size_t len);

static inline uint32_t qrdma_ld_le32(const uint8_t *p)
{
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint16_t qrdma_ld_le16(const uint8_t *p)
{
    return p[0] | p[1] << 8;
}

static inline void qrdma_st_le32(uint8_t *p, uint32_t v)
{
    p[0] = v;
    p[1] = v >> 8;
    p[2] = v >> 16;
    p[3] = v >> 24;
}

static inline void qrdma_st_le16(uint8_t *p, uint16_t v)
{
    p[0] = v;
    p[1] = v >> 8;
}

void qrdma_guest_error(struct qrdma_core *core, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * One frame to the netdev (env.send_frame, or send_frame_iov when iov is
 * not NULL): counts a QRDMA_TX_QUEUED answer. True when the netdev now
 * holds frames of ours, and the device must send nothing more until
 * qrdma_core_tx_ready().
 */
bool qrdma_tx_frame(struct qrdma_core *core, const uint8_t *frame, size_t len,
                    const struct iovec *iov, unsigned n);
static inline bool qrdma_tx_blocked(const struct qrdma_core *core)
{
    return core->tx_queued != 0;
}

/*
 * Raise MSI-X vector v (< msix_vectors): delivered through env.msix_notify
 * when the outermost entry point returns (struct qrdma_core_guard).
 */
void qrdma_irq_raise(struct qrdma_core *core, unsigned v);

/*
 * Is a ring of len bytes at addr 4 KB aligned with both ends in guest RAM?
 * Checked when a ring is created; every later access is checked again.
 */
bool qrdma_ring_in_ram(struct qrdma_core *core, uint64_t addr, uint64_t len);

/* What a CQP command returns: the completion's status and return value. */
struct cqp_result {
    enum qrdma_cqp_major major;
    uint16_t minor;
    uint64_t retval;
};

/*
 * Log a guest error saying why a command failed and return that failure:
 * the one line each refusal of the object commands writes (the CQP adds
 * its "failed: major M minor m" line after it).
 */
struct cqp_result qrdma_cqp_fail(struct qrdma_core *core,
                                 enum qrdma_cqp_major major, unsigned minor,
                                 const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* qrdma_cqp.c */
extern const struct qrdma_reg_desc
    qrdma_cqp_reg_table[QRDMA_REG_BLOCK_SIZE / 4];
void qrdma_cqp_reset(struct qrdma_core *core);
void qrdma_cqp_process(struct qrdma_core *core);

/* qrdma_eq.c */
extern const struct qrdma_reg_desc
    qrdma_intr_reg_table[QRDMA_REG_BLOCK_SIZE / 4];
void qrdma_eq_reset(struct qrdma_core *core);
/* Write an event; false (counted or logged) if the queue is absent or full. */
bool qrdma_ceq_post(struct qrdma_core *core, unsigned ceq_id, uint64_t cq_ctx);
bool qrdma_aeq_post(struct qrdma_core *core, uint64_t ctx, uint32_t id,
                    uint16_t code, uint8_t source);
struct cqp_result qrdma_cqp_create_ceq(struct qrdma_core *core,
                                       const uint64_t *arg);
struct cqp_result qrdma_cqp_destroy_ceq(struct qrdma_core *core,
                                        const uint64_t *arg);
struct cqp_result qrdma_cqp_create_aeq(struct qrdma_core *core,
                                       const uint64_t *arg);
struct cqp_result qrdma_cqp_destroy_aeq(struct qrdma_core *core,
                                        const uint64_t *arg);

/* qrdma_mcast.c: the multicast group table (docs/hw-spec.md section 16.1) */
void qrdma_mcast_reset(struct qrdma_core *core);
/* QP qp_id is destroyed: it leaves every group. */
void qrdma_mcast_qp_gone(struct qrdma_core *core, uint32_t qp_id);
struct cqp_result qrdma_cqp_mcast_attach(struct qrdma_core *core,
                                         const uint64_t *arg);
struct cqp_result qrdma_cqp_mcast_detach(struct qrdma_core *core,
                                         const uint64_t *arg);
/*
 * Is gid a multicast GID? If so, and mac is not NULL, the Ethernet address of
 * its frames.
 */
bool qrdma_mcast_gid(const uint8_t gid[16], uint8_t mac[6]);
/*
 * A RoCEv2 frame to the multicast Ethernet address dst_mac and the
 * multicast GID dgid: handed to the transport for the QPs attached to
 * that group, or dropped and counted when there are none.
 */
void qrdma_mcast_rx(struct qrdma_core *core, const uint8_t *frame, size_t len,
                    const uint8_t dgid[16]);
/*
 * A multicast RoCEv2 frame this device is sending (its Ethernet and IP
 * headers in the first hdr_len bytes of frame): does its group have QPs of
 * this device attached, which then get a copy (qrdma_mcast_rx_own)?
 */
bool qrdma_mcast_has_own(struct qrdma_core *core, const uint8_t *frame,
                         size_t hdr_len);
/*
 * Such a frame, whole, to this device's QPs attached to its group; nothing
 * counted as dropped when none are left (the frame went to the wire too).
 */
void qrdma_mcast_rx_own(struct qrdma_core *core, const uint8_t *frame,
                        size_t len);

/* qrdma_lan.c */
extern const struct qrdma_reg_desc
    qrdma_lan_reg_table[QRDMA_REG_BLOCK_SIZE / 4];
void qrdma_lan_reset(struct qrdma_core *core);
void qrdma_lan_tx_process(struct qrdma_core *core);
/*
 * Is the frame RoCEv2 (IPv4 first fragment or IPv6, UDP destination port
 * 4791)? If so, *dst_gid is its destination GID (IPv4 mapped into
 * ::ffff:0:0/96). The Ethernet address is not looked at.
 */
bool qrdma_lan_roce_dgid(const uint8_t *f, size_t len, uint8_t dst_gid[16]);
/* qrdma_core_lan_can_receive / _receive, inside the guard. */
bool qrdma_lan_can_receive(struct qrdma_core *core);
size_t qrdma_lan_receive(struct qrdma_core *core, const uint8_t *frame,
                         size_t len);

/*
 * An event for the embedding's tracer (struct qrdma_trace_ev), if it has one.
 */
static inline void qrdma_trace(struct qrdma_core *core,
                               enum qrdma_trace_kind kind, uint32_t a,
                               uint32_t b, uint32_t c, uint64_t d,
                               const char *name, const char *name2)
{
    if (core->env.trace) {
        struct qrdma_trace_ev ev = { kind, a, b, c, d, name, name2 };

        core->env.trace(core->env.opaque, &ev);
    }
}

/* qrdma_qp.c: the name of enum qrdma_qp_state s, "?" if none */
const char *qrdma_qp_state_name(unsigned s);

/* qrdma_stats.c: the port counters */
extern const struct qrdma_reg_desc
    qrdma_stats_reg_table[QRDMA_REG_BLOCK_SIZE / 4];
void qrdma_stats_reset(struct qrdma_core *core);
/*
 * Copy every counter into the snapshot STAT_LO/HI read (STATS_CTRL.SNAPSHOT).
 */
void qrdma_stats_snapshot(struct qrdma_core *core);

/* qrdma_hmc.c: registers, reset, and the HMC commands of qrdma_cqp_ops[] */
extern const struct qrdma_reg_desc
    qrdma_hmc_reg_table[QRDMA_REG_BLOCK_SIZE / 4];
void qrdma_hmc_reset(struct qrdma_core *core);
struct cqp_result qrdma_hmc_update_pe_sds(struct qrdma_core *core,
                                          const uint64_t *arg);
struct cqp_result qrdma_hmc_query_fpm_val(struct qrdma_core *core,
                                          const uint64_t *arg);
struct cqp_result qrdma_hmc_commit_fpm_val(struct qrdma_core *core,
                                           const uint64_t *arg);

/*
 * qrdma_obj.c: object arrays, helpers shared by the object commands, CQs, SRQs,
 * AHs
 */
/*
 * Allocate the arrays for a layout of count[] objects; 0, or 1 + the type that
 * failed.
 */
unsigned qrdma_obj_alloc(struct qrdma_core *core, const uint32_t *count);
void qrdma_obj_reset(struct qrdma_core *core);
/*
 * Write an object's context (len bytes) to its HMC object: 0, or the
 * failure (HMC major, enum qrdma_hmc_error minor) after logging "what".
 */
struct cqp_result qrdma_obj_ctx_write(struct qrdma_core *core,
                                      enum qrdma_hmc_type type, uint32_t index,
                                      const uint8_t *ctx, size_t len,
                                      const char *what);
/*
 * The object ID in an argument or info field: refuses (HMC COUNT or
 * NOT_COMMITTED) one the layout does not hold.
 */
struct cqp_result qrdma_obj_id_check(struct qrdma_core *core,
                                     enum qrdma_hmc_type type, uint64_t id,
                                     const char *what);
/*
 * Check a ring about to be created (every page for VIRTMAP). bad_addr is
 * what a contiguous ring that is misaligned or not guest RAM fails with.
 */
struct cqp_result qrdma_queue_check(struct qrdma_core *core,
                                    const struct qrdma_queue *q,
                                    struct cqp_result bad_addr,
                                    const char *what);
/* Read PBLE index; 0 or enum qrdma_pble_error (RANGE, HMC) after logging. */
int qrdma_pble_get(struct qrdma_core *core, uint64_t index, uint64_t *val,
                   const char *what);
/*
 * Parse and check a 32-byte struct qrdma_av: 0, or 1 + the byte offset of
 * the bad field inside the AV after logging.
 */
unsigned qrdma_av_parse(struct qrdma_core *core, const uint8_t *raw,
                        struct qrdma_av_info *av, const char *what);
void qrdma_av_store(uint8_t *raw, const struct qrdma_av_info *av);
void qrdma_obj_count_inc(struct qrdma_core *core, enum qrdma_hmc_type t);
void qrdma_obj_count_dec(struct qrdma_core *core, enum qrdma_hmc_type t);
struct cqp_result qrdma_cqp_create_cq(struct qrdma_core *core,
                                      const uint64_t *arg);
struct cqp_result qrdma_cqp_modify_cq(struct qrdma_core *core,
                                      const uint64_t *arg);
struct cqp_result qrdma_cqp_destroy_cq(struct qrdma_core *core,
                                       const uint64_t *arg);
struct cqp_result qrdma_cqp_create_srq(struct qrdma_core *core,
                                       const uint64_t *arg);
struct cqp_result qrdma_cqp_modify_srq(struct qrdma_core *core,
                                       const uint64_t *arg);
struct cqp_result qrdma_cqp_destroy_srq(struct qrdma_core *core,
                                        const uint64_t *arg);
struct cqp_result qrdma_cqp_query_srq(struct qrdma_core *core,
                                      const uint64_t *arg);
struct cqp_result qrdma_cqp_create_ah(struct qrdma_core *core,
                                      const uint64_t *arg);
struct cqp_result qrdma_cqp_modify_ah(struct qrdma_core *core,
                                      const uint64_t *arg);
struct cqp_result qrdma_cqp_destroy_ah(struct qrdma_core *core,
                                       const uint64_t *arg);

/* qrdma_qp.c */
struct cqp_result qrdma_cqp_create_qp(struct qrdma_core *core,
                                      const uint64_t *arg);
struct cqp_result qrdma_cqp_modify_qp(struct qrdma_core *core,
                                      const uint64_t *arg);
struct cqp_result qrdma_cqp_query_qp(struct qrdma_core *core,
                                     const uint64_t *arg);
struct cqp_result qrdma_cqp_destroy_qp(struct qrdma_core *core,
                                       const uint64_t *arg);

/* qrdma_mr.c */
struct cqp_result qrdma_cqp_reg_mr(struct qrdma_core *core,
                                   const uint64_t *arg);
struct cqp_result qrdma_cqp_alloc_stag(struct qrdma_core *core,
                                       const uint64_t *arg);
struct cqp_result qrdma_cqp_dealloc_stag(struct qrdma_core *core,
                                         const uint64_t *arg);
struct cqp_result qrdma_cqp_query_stag(struct qrdma_core *core,
                                       const uint64_t *arg);

#endif /* QRDMA_CORE_INT_H */
