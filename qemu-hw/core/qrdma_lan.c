/*
 * qrdma device core: the LAN function. One transmit and one receive ring
 * of descriptors in guest memory, the receive address filter, the split of
 * RoCEv2 traffic to the RDMA engine, LAN interrupts and counters. See
 * docs/hw-spec.md, "LAN function".
 *
 * Every guest-written value is checked against the device's own copies:
 * ring indices are compared with the ring length the device stored, every
 * loop over a ring is bounded by that length, and a bad descriptor is
 * written back with ERR, counted and skipped.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qrdma_core_int.h"
#include "qrdma_inet_csum.h"

#include <inttypes.h>
#include <string.h>

#define LAN_REG(core, off) ((core)->lan.regs[((off) - QRDMA_REG_LAN_BASE) / 4])
#define LAN_STAT(core, off) \
    ((core)->lan.stats[((off) - QRDMA_REG_LAN_STAT_FIRST) / 4])

#define ETH_HLEN 14
#define ETH_P_IPV4 0x0800
#define ETH_P_IPV6 0x86dd
#define IPPROTO_UDP_NUM 17
#define ROCE_V2_UDP_PORT 4791

static uint32_t lan_ctrl(struct qrdma_core *core)
{
    return LAN_REG(core, QRDMA_REG_LAN_CTRL);
}

static uint32_t lan_max_frame(struct qrdma_core *core)
{
    return LAN_REG(core, QRDMA_REG_LAN_MTU) + QRDMA_LAN_FRAME_OVERHEAD;
}

/* ---- interrupts -------------------------------------------------------- */

static void lan_fire(struct qrdma_core *core, uint32_t cause)
{
    uint32_t *ctrl = &LAN_REG(core, QRDMA_REG_LAN_INT_CTRL);
    uint32_t arm = cause == QRDMA_LAN_INT_CAUSE_RX ? QRDMA_LAN_INT_RX_ARM
                                                   : QRDMA_LAN_INT_TX_ARM;
    unsigned vector;

    if (!(core->lan.pending & cause) || !(*ctrl & arm)) {
        return;
    }
    vector = cause == QRDMA_LAN_INT_CAUSE_RX
                 ? (*ctrl & QRDMA_LAN_INT_RX_VECTOR_MASK) >>
                       QRDMA_LAN_INT_RX_VECTOR_SHIFT
                 : (*ctrl & QRDMA_LAN_INT_TX_VECTOR_MASK) >>
                       QRDMA_LAN_INT_TX_VECTOR_SHIFT;
    /* An interrupt disarms its cause; the driver re-arms after polling. */
    *ctrl &= ~arm;
    core->lan.pending &= ~cause;
    LAN_REG(core, QRDMA_REG_LAN_INT_CAUSE) |= cause;
    qrdma_irq_raise(core, vector);
}

/* A descriptor of the ring behind cause was written back. */
static void lan_signal(struct qrdma_core *core, uint32_t cause)
{
    core->lan.pending |= cause;
    lan_fire(core, cause);
}

/* ---- descriptors ------------------------------------------------------- */

static uint64_t ring_desc_addr(const struct qrdma_lan_ring *ring, uint32_t idx)
{
    return ring->base + (uint64_t)idx * sizeof(struct qrdma_lan_desc);
}

static bool desc_read(struct qrdma_core *core,
                      const struct qrdma_lan_ring *ring, uint32_t idx,
                      uint64_t *addr, uint64_t *cmd)
{
    uint8_t raw[sizeof(struct qrdma_lan_desc)];

    if (core->env.dma_read(core->env.opaque, ring_desc_addr(ring, idx), raw,
                           sizeof(raw))) {
        return false;
    }
    *addr = qrdma_ld_le64(raw);
    *cmd = qrdma_ld_le64(raw + 8);
    return true;
}

/* Write back qword 1 of a descriptor (the DD bit goes out with it). */
static void desc_write_back(struct qrdma_core *core,
                            const struct qrdma_lan_ring *ring, uint32_t idx,
                            uint64_t cmd)
{
    uint8_t raw[8];

    qrdma_st_le64(raw, cmd);
    if (core->env.dma_write(core->env.opaque, ring_desc_addr(ring, idx) + 8,
                            raw, sizeof(raw))) {
        qrdma_guest_error(core,
                          "LAN: cannot write back descriptor %u at 0x%" PRIx64
                          ": not guest RAM",
                          idx, ring_desc_addr(ring, idx));
    }
}

/* ---- transmit ---------------------------------------------------------- */

/*
 * Checksum offload (CSUM in a frame's first descriptor): the Internet
 * checksum from start to the end of the frame, added to what the driver
 * left at start + offset (the pseudo-header sum), stored complemented.
 * Returns false if start/offset do not fit the frame.
 */
static bool lan_tx_checksum(uint8_t *frame, uint32_t len, uint64_t cmd)
{
    uint32_t start = (cmd & QRDMA_LAN_DESC_CSUM_START_MASK) >>
                     QRDMA_LAN_DESC_CSUM_START_SHIFT;
    uint32_t at = start + ((cmd & QRDMA_LAN_DESC_CSUM_OFFSET_MASK) >>
                           QRDMA_LAN_DESC_CSUM_OFFSET_SHIFT);
    uint16_t folded;

    if (start >= len || at + 2 > len) {
        return false;
    }
    folded = qrdma_inet_csum(frame + start, len - start, 0);
    /* As Linux does in skb_checksum_help: 0 means "no checksum" for UDP. */
    if (!folded) {
        folded = 0xffff;
    }
    frame[at] = folded >> 8;
    frame[at + 1] = folded & 0xff;
    return true;
}

/*
 * Send every complete frame between head and tail. Runs from the core's
 * work kick, not the MMIO handler; bounded by the ring length since each
 * frame consumes at least one descriptor.
 */
void qrdma_lan_tx_process(struct qrdma_core *core)
{
    struct qrdma_lan_ring *ring = &core->lan.tx;
    uint64_t addr[QRDMA_LAN_TX_MAX_FRAGS], cmd[QRDMA_LAN_TX_MAX_FRAGS];
    bool wrote_back = false;
    uint32_t budget;

    if (!(lan_ctrl(core) & QRDMA_LAN_CTRL_TX_ENABLE) || !ring->len) {
        return;
    }
    /*
     * A full netdev stops the ring as a NIC's full TX path does: the
     * descriptors after the frame it took wait, not done, until
     * qrdma_core_tx_ready() kicks this again.
     */
    for (budget = ring->len;
         budget && ring->head != ring->tail && !qrdma_tx_blocked(core);
         budget--) {
        uint32_t n = 0, idx = ring->head, total = 0, i;
        const char *bad = NULL;

        /* Collect the frame's descriptors up to EOP. */
        for (;;) {
            if (idx == ring->tail) {
                if (n == ring->len - 1) {
                    /* The ring is full and holds no EOP: it never will. */
                    bad = "ring full without an EOP";
                    break;
                }
                goto out;   /* the rest of the frame is not posted yet */
            }
            if (!desc_read(core, ring, idx, &addr[n], &cmd[n])) {
                qrdma_guest_error(core,
                                  "LAN TX: descriptor %u at 0x%" PRIx64
                                  " is not in guest RAM",
                                  idx, ring_desc_addr(ring, idx));
                cmd[n] = 0;
                bad = "descriptor ring outside guest RAM";
            }
            idx = (idx + 1) & (ring->len - 1);
            n++;
            if ((cmd[n - 1] & QRDMA_LAN_DESC_EOP) || bad ||
                n == QRDMA_LAN_TX_MAX_FRAGS) {
                break;
            }
        }
        if (ring->discard_to_eop) {
            /*
             * The rest of a frame that had no EOP within the limit: dropped
             * up to and including its EOP, never sent as a frame of its own.
             */
            if (!bad) {
                bad = "rest of a frame longer than QRDMA_LAN_TX_MAX_FRAGS "
                      "descriptors";
            }
            ring->discard_to_eop = !(cmd[n - 1] & QRDMA_LAN_DESC_EOP);
        } else if (!bad && !(cmd[n - 1] & QRDMA_LAN_DESC_EOP)) {
            bad = "no EOP within QRDMA_LAN_TX_MAX_FRAGS descriptors";
            ring->discard_to_eop = n == QRDMA_LAN_TX_MAX_FRAGS;
        }
        for (i = 0; i < n && !bad; i++) {
            uint32_t len = cmd[i] & QRDMA_LAN_DESC_LEN_MASK;

            if (!len) {
                bad = "zero-length fragment";
            } else if (total + len > lan_max_frame(core)) {
                bad = "frame longer than MTU + 18";
            } else if (core->env.dma_read(core->env.opaque, addr[i],
                                          core->lan.frame + total, len)) {
                bad = "fragment buffer outside guest RAM";
            }
            total += len;
        }
        if (!bad && total < ETH_HLEN) {
            bad = "frame shorter than an Ethernet header";
        }
        if (!bad && (cmd[0] & QRDMA_LAN_DESC_CSUM) &&
            !lan_tx_checksum(core->lan.frame, total, cmd[0])) {
            bad = "checksum start or offset beyond the frame";
        }

        if (bad) {
            qrdma_guest_error(core,
                              "LAN TX: frame at descriptor %u dropped: %s",
                              ring->head, bad);
            LAN_STAT(core, QRDMA_REG_LAN_STAT_TX_ERRORS)++;
        } else {
            qrdma_tx_frame(core, core->lan.frame, total, NULL, 0);
            LAN_STAT(core, QRDMA_REG_LAN_STAT_TX_FRAMES)++;
            LAN_STAT(core, QRDMA_REG_LAN_STAT_TX_BYTES) += total;
        }
        for (i = 0; i < n; i++) {
            desc_write_back(core, ring, ring->head,
                            cmd[i] | QRDMA_LAN_DESC_DD |
                                (bad ? QRDMA_LAN_DESC_ERR : 0));
            ring->head = (ring->head + 1) & (ring->len - 1);
        }
        wrote_back = true;
    }
out:
    if (wrote_back) {
        lan_signal(core, QRDMA_LAN_INT_CAUSE_TX);
    }
}

/* ---- receive ----------------------------------------------------------- */

/* Is dst the unicast address in LAN_MAC_LOW/HIGH? */
static bool lan_is_own_mac(struct qrdma_core *core, const uint8_t *dst)
{
    uint32_t lo = LAN_REG(core, QRDMA_REG_LAN_MAC_LOW),
             hi = LAN_REG(core, QRDMA_REG_LAN_MAC_HIGH);
    const uint8_t mac[6] = { lo, lo >> 8, lo >> 16, lo >> 24, hi, hi >> 8 };

    return !memcmp(dst, mac, sizeof(mac));
}

static bool lan_filter_accepts(struct qrdma_core *core, const uint8_t *dst)
{
    static const uint8_t broadcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    uint32_t ctrl = lan_ctrl(core);
    uint32_t crc = 0xffffffffu, bit, k;
    int i;

    if (ctrl & QRDMA_LAN_CTRL_PROMISC) {
        return true;
    }
    if (!(dst[0] & 1)) {
        return lan_is_own_mac(core, dst);
    }
    if (!memcmp(dst, broadcast, 6)) {
        return ctrl & QRDMA_LAN_CTRL_BROADCAST;
    }
    if (ctrl & QRDMA_LAN_CTRL_ALLMULTI) {
        return true;
    }
    /*
     * The Ethernet CRC (reflected, as ether_crc_le); its top 6 bits index the
     * hash.
     */
    for (i = 0; i < 6; i++) {
        crc ^= dst[i];
        for (k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (crc & 1 ? 0xedb88320u : 0);
        }
    }
    bit = crc >> 26;
    return (bit < 32
                ? LAN_REG(core, QRDMA_REG_LAN_MC_HASH_LOW) >> bit
                : LAN_REG(core, QRDMA_REG_LAN_MC_HASH_HIGH) >> (bit - 32)) &
           1;
}

bool qrdma_lan_roce_dgid(const uint8_t *f, size_t len, uint8_t dst_gid[16])
{
    static const uint8_t v4_mapped[16] = { [10] = 0xff, [11] = 0xff };
    uint16_t type;
    size_t l4;

    if (len < ETH_HLEN) {
        return false;
    }
    type = f[12] << 8 | f[13];
    memcpy(dst_gid, v4_mapped, 16);
    if (type == ETH_P_IPV4 && len >= ETH_HLEN + 20 && (f[ETH_HLEN] >> 4) == 4) {
        l4 = ETH_HLEN + (f[ETH_HLEN] & 0xf) * 4;
        if (f[ETH_HLEN + 9] != IPPROTO_UDP_NUM || (f[ETH_HLEN] & 0xf) < 5) {
            return false;
        }
        /* Only a first fragment carries the UDP header. */
        if (((f[ETH_HLEN + 6] & 0x1f) << 8 | f[ETH_HLEN + 7]) != 0) {
            return false;
        }
        memcpy(dst_gid + 12, f + ETH_HLEN + 16, 4);     /* ::ffff:a.b.c.d */
    } else if (type == ETH_P_IPV6 && len >= ETH_HLEN + 40) {
        if (f[ETH_HLEN + 6] != IPPROTO_UDP_NUM) {
            return false;
        }
        l4 = ETH_HLEN + 40;
        memcpy(dst_gid, f + ETH_HLEN + 24, 16);
    } else {
        return false;
    }
    return len >= l4 + 8 && (f[l4 + 2] << 8 | f[l4 + 3]) == ROCE_V2_UDP_PORT;
}

/*
 * RoCEv2 frames (IPv4 first fragment or IPv6, UDP destination port 4791)
 * go to the RDMA engine, not the LAN ring. Unicast ones when they are to
 * our MAC and to one of the GIDs the driver programmed through the CQP;
 * multicast ones to a multicast GID, whichever the group (the group table
 * decides, qrdma_mcast.c). *dgid gets the destination GID.
 */
enum lan_roce { LAN_NOT_ROCE, LAN_ROCE_UNICAST, LAN_ROCE_MCAST };

static enum lan_roce lan_is_roce(struct qrdma_core *core, const uint8_t *f,
                                 size_t len, uint8_t dst_gid[16])
{
    bool mcast = f[0] & 1;

    if (!mcast && !lan_is_own_mac(core, f)) {
        return LAN_NOT_ROCE;
    }
    if (!qrdma_lan_roce_dgid(f, len, dst_gid)) {
        return LAN_NOT_ROCE;
    }
    if (mcast) {
        return qrdma_mcast_gid(dst_gid, NULL) ? LAN_ROCE_MCAST : LAN_NOT_ROCE;
    }
    return qrdma_core_gid_is_own(core, dst_gid) ? LAN_ROCE_UNICAST
                                                : LAN_NOT_ROCE;
}

static bool lan_rx_on(struct qrdma_core *core)
{
    return (lan_ctrl(core) & QRDMA_LAN_CTRL_RX_ENABLE) && core->lan.rx.len;
}

/*
 * Store one frame in the next good receive buffer. Returns false when no
 * buffer is posted (the frame is not consumed), true otherwise (stored, or
 * dropped for a buffer too short).
 */
static bool lan_rx_store(struct qrdma_core *core, const uint8_t *frame,
                         size_t len)
{
    struct qrdma_lan_ring *ring = &core->lan.rx;
    uint32_t budget;

    /* Skip (and report) bad descriptors until one takes the frame. */
    for (budget = ring->len; budget; budget--) {
        uint64_t addr, cmd;
        uint32_t idx = ring->head;
        const char *bad = NULL;

        if (idx == ring->tail) {
            return false;   /* no buffer */
        }
        ring->head = (idx + 1) & (ring->len - 1);
        if (!desc_read(core, ring, idx, &addr, &cmd)) {
            qrdma_guest_error(core,
                              "LAN RX: descriptor %u at 0x%" PRIx64
                              " is not in guest RAM",
                              idx, ring_desc_addr(ring, idx));
            LAN_STAT(core, QRDMA_REG_LAN_STAT_RX_ERRORS)++;
            continue;
        }
        /*
         * A zero-length or unreachable buffer is a bad descriptor: skip it
         * and try the next. A good buffer too short for this frame drops
         * the frame (frames are never spread over buffers).
         */
        if (!(cmd & QRDMA_LAN_DESC_LEN_MASK)) {
            bad = "zero-length buffer";
        } else if ((cmd & QRDMA_LAN_DESC_LEN_MASK) < len) {
            qrdma_guest_error(
                core,
                "LAN RX: descriptor %u: buffer of %u bytes for a frame of "
                "%zu; frame dropped",
                idx, (uint32_t)(cmd & QRDMA_LAN_DESC_LEN_MASK), len);
            LAN_STAT(core, QRDMA_REG_LAN_STAT_RX_ERRORS)++;
            desc_write_back(core, ring, idx,
                            QRDMA_LAN_DESC_DD | QRDMA_LAN_DESC_ERR);
            lan_signal(core, QRDMA_LAN_INT_CAUSE_RX);
            return true;
        } else if (core->env.dma_write(core->env.opaque, addr, frame, len)) {
            bad = "buffer outside guest RAM";
        }
        if (bad) {
            qrdma_guest_error(core, "LAN RX: descriptor %u skipped: %s", idx,
                              bad);
            LAN_STAT(core, QRDMA_REG_LAN_STAT_RX_ERRORS)++;
            desc_write_back(core, ring, idx,
                            QRDMA_LAN_DESC_DD | QRDMA_LAN_DESC_ERR);
            lan_signal(core, QRDMA_LAN_INT_CAUSE_RX);
            continue;
        }
        desc_write_back(core, ring, idx, QRDMA_LAN_DESC_DD | len);
        LAN_STAT(core, QRDMA_REG_LAN_STAT_RX_FRAMES)++;
        LAN_STAT(core, QRDMA_REG_LAN_STAT_RX_BYTES) += (uint32_t)len;
        lan_signal(core, QRDMA_LAN_INT_CAUSE_RX);
        return true;
    }
    return false;
}

/* Move held frames into the buffers the driver posted, oldest first. */
static void lan_backlog_drain(struct qrdma_core *core)
{
    struct qrdma_lan_backlog *b = &core->lan.backlog;

    while (b->count && lan_rx_on(core) &&
           lan_rx_store(core, b->data[b->head], b->len[b->head])) {
        b->head = (b->head + 1) % QRDMA_LAN_BACKLOG_FRAMES;
        b->count--;
    }
}

static void lan_backlog_clear(struct qrdma_core *core)
{
    core->lan.backlog.head = core->lan.backlog.count = 0;
}

/*
 * Always: the device never makes QEMU hold frames, since RoCE frames must
 * not wait behind LAN frames that have no buffer yet (those go to the
 * backlog, and are dropped when it is full, as a NIC out of descriptors).
 */
bool qrdma_lan_can_receive(struct qrdma_core *core)
{
    return true;
}

size_t qrdma_lan_receive(struct qrdma_core *core, const uint8_t *frame,
                         size_t len)
{
    struct qrdma_lan_backlog *b = &core->lan.backlog;
    uint8_t dgid[16];

    if (len < ETH_HLEN) {
        LAN_STAT(core, QRDMA_REG_LAN_STAT_RX_ERRORS)++;
        return len;
    }
    switch (lan_is_roce(core, frame, len, dgid)) {
    case LAN_ROCE_UNICAST:
        LAN_STAT(core, QRDMA_REG_LAN_STAT_ROCE_FRAMES)++;
        qrdma_dp_rx_frame(core, frame, len);
        return len;
    case LAN_ROCE_MCAST:
        LAN_STAT(core, QRDMA_REG_LAN_STAT_ROCE_FRAMES)++;
        qrdma_mcast_rx(core, frame, len, dgid);
        return len;
    case LAN_NOT_ROCE:
        break;
    }
    if (!lan_rx_on(core)) {
        LAN_STAT(core, QRDMA_REG_LAN_STAT_RX_DROPPED)++;
        return len;
    }
    if (!lan_filter_accepts(core, frame)) {
        LAN_STAT(core, QRDMA_REG_LAN_STAT_RX_FILTERED)++;
        return len;
    }
    if (len > lan_max_frame(core)) {
        LAN_STAT(core, QRDMA_REG_LAN_STAT_RX_ERRORS)++;
        return len;
    }

    /* Frames keep their order: while some wait, a new one waits behind them. */
    lan_backlog_drain(core);
    if (!b->count && lan_rx_store(core, frame, len)) {
        return len;
    }
    if (b->count == QRDMA_LAN_BACKLOG_FRAMES) {
        LAN_STAT(core, QRDMA_REG_LAN_STAT_RX_DROPPED)++;
        return len;
    }
    {
        uint32_t slot = (b->head + b->count) % QRDMA_LAN_BACKLOG_FRAMES;

        memcpy(b->data[slot], frame, len);
        b->len[slot] = (uint16_t)len;
        b->count++;
    }
    return len;
}

/* ---- registers ----------------------------------------------------------- */

static struct qrdma_lan_ring *ring_of(struct qrdma_core *core, uint32_t offset)
{
    return offset < QRDMA_REG_LAN_RXQ_BASE_LOW ? &core->lan.tx : &core->lan.rx;
}

static bool ring_enabled(struct qrdma_core *core, uint32_t offset)
{
    uint32_t bit = offset < QRDMA_REG_LAN_RXQ_BASE_LOW
                       ? QRDMA_LAN_CTRL_TX_ENABLE
                       : QRDMA_LAN_CTRL_RX_ENABLE;
    return lan_ctrl(core) & bit;
}

static void reg_write_ring_cfg(struct qrdma_core *core, uint32_t offset,
                               uint32_t value)
{
    struct qrdma_lan_ring *ring = ring_of(core, offset);
    uint32_t rel = offset - (ring == &core->lan.tx
                                 ? QRDMA_REG_LAN_TXQ_BASE_LOW
                                 : QRDMA_REG_LAN_RXQ_BASE_LOW);

    if (ring_enabled(core, offset)) {
        qrdma_guest_error(core, "%s written while the ring is enabled; ignored",
                          qrdma_core_reg_name(offset));
        return;
    }
    switch (rel) {
    case 0: /* BASE_LOW */
        if (value & 0xf) {
            qrdma_guest_error(core, "%s=0x%x is not 16-byte aligned; ignored",
                              qrdma_core_reg_name(offset), value);
            return;
        }
        ring->base = (ring->base & ~0xffffffffull) | value;
        break;
    case 4: /* BASE_HIGH */
        ring->base = (ring->base & 0xffffffffull) | (uint64_t)value << 32;
        break;
    case 8: /* LEN */
        if (value && (value < QRDMA_LAN_RING_MIN ||
                      value > QRDMA_LAN_RING_MAX || (value & (value - 1)))) {
            qrdma_guest_error(
                core, "%s=%u is not 0 or a power of two in %u..%u; ignored",
                qrdma_core_reg_name(offset), value, QRDMA_LAN_RING_MIN,
                QRDMA_LAN_RING_MAX);
            return;
        }
        ring->len = value;
        ring->head = ring->tail = 0;
        ring->discard_to_eop = false;
        if (ring == &core->lan.rx) {
            lan_backlog_clear(core);
        }
        break;
    }
    LAN_REG(core, offset) = value;
}

static uint32_t reg_read_ring_cfg(struct qrdma_core *core, uint32_t offset)
{
    return LAN_REG(core, offset);
}

static void reg_write_tail(struct qrdma_core *core, uint32_t offset,
                           uint32_t value)
{
    struct qrdma_lan_ring *ring = ring_of(core, offset);

    if (value >= ring->len) {
        qrdma_guest_error(core,
                          "%s=%u outside a ring of %u descriptors; ignored",
                          qrdma_core_reg_name(offset), value, ring->len);
        return;
    }
    ring->tail = value;
    if (ring == &core->lan.tx) {
        core->env.kick(core->env.opaque, QRDMA_WORK_LAN_TX);
    } else {
        lan_backlog_drain(core);
        core->env.rx_ready(core->env.opaque);
    }
}

static uint32_t reg_read_tail(struct qrdma_core *core, uint32_t offset)
{
    return ring_of(core, offset)->tail;
}

static uint32_t reg_read_head(struct qrdma_core *core, uint32_t offset)
{
    return ring_of(core, offset)->head;
}

static void reg_write_lan_ctrl(struct qrdma_core *core, uint32_t offset,
                               uint32_t value)
{
    uint32_t was = lan_ctrl(core);

    LAN_REG(core, offset) = value;
    if ((value & QRDMA_LAN_CTRL_TX_ENABLE) &&
        !(was & QRDMA_LAN_CTRL_TX_ENABLE)) {
        core->env.kick(core->env.opaque, QRDMA_WORK_LAN_TX);
    }
    if ((value & QRDMA_LAN_CTRL_RX_ENABLE) &&
        !(was & QRDMA_LAN_CTRL_RX_ENABLE)) {
        lan_backlog_drain(core);
        core->env.rx_ready(core->env.opaque);
    }
    if (!(value & QRDMA_LAN_CTRL_RX_ENABLE)) {
        /* receive off: what waited is dropped with it */
        lan_backlog_clear(core);
    }
}

static void reg_write_mtu(struct qrdma_core *core, uint32_t offset,
                          uint32_t value)
{
    if (value < QRDMA_LAN_MTU_MIN || value > QRDMA_LAN_MTU_MAX) {
        qrdma_guest_error(core, "LAN_MTU=%u outside %u..%u; ignored", value,
                          QRDMA_LAN_MTU_MIN, QRDMA_LAN_MTU_MAX);
        return;
    }
    LAN_REG(core, offset) = value;
}

static void reg_write_int_ctrl(struct qrdma_core *core, uint32_t offset,
                               uint32_t value)
{
    uint32_t rx_vec = (value & QRDMA_LAN_INT_RX_VECTOR_MASK) >>
                      QRDMA_LAN_INT_RX_VECTOR_SHIFT;
    uint32_t tx_vec = (value & QRDMA_LAN_INT_TX_VECTOR_MASK) >>
                      QRDMA_LAN_INT_TX_VECTOR_SHIFT;

    if (rx_vec >= core->cfg.msix_vectors || tx_vec >= core->cfg.msix_vectors) {
        qrdma_guest_error(
            core,
            "LAN_INT_CTRL=0x%x names a vector beyond the %u MSI-X vectors;"
            " ignored",
            value, core->cfg.msix_vectors);
        return;
    }
    LAN_REG(core, offset) = value;
    /* Completions since the last interrupt fire at once on arming. */
    lan_fire(core, QRDMA_LAN_INT_CAUSE_RX);
    lan_fire(core, QRDMA_LAN_INT_CAUSE_TX);
}

static uint32_t reg_read_int_cause(struct qrdma_core *core, uint32_t offset)
{
    uint32_t v = LAN_REG(core, offset);

    LAN_REG(core, offset) = 0;  /* read to clear */
    return v;
}

static uint32_t reg_read_stat(struct qrdma_core *core, uint32_t offset)
{
    return LAN_STAT(core, offset);
}

#define B QRDMA_REG_LAN_BASE
#define STAT(off, nm) QRDMA_REG_RO_LIVE_DESC(off, B, nm, reg_read_stat)

const struct qrdma_reg_desc qrdma_lan_reg_table[QRDMA_REG_BLOCK_SIZE / 4] = {
    QRDMA_REG_RW_DESC(QRDMA_REG_LAN_CTRL, B, "LAN_CTRL",
                      QRDMA_LAN_CTRL_VALID_MASK, reg_write_lan_ctrl),
    QRDMA_REG_RW_DESC(QRDMA_REG_LAN_MTU, B, "LAN_MTU", 0xffff, reg_write_mtu),
    QRDMA_REG_RW_DESC(QRDMA_REG_LAN_MAC_LOW, B, "LAN_MAC_LOW", 0xffffffffu,
                      NULL),
    QRDMA_REG_RW_DESC(QRDMA_REG_LAN_MAC_HIGH, B, "LAN_MAC_HIGH", 0xffff, NULL),
    QRDMA_REG_RW_DESC(QRDMA_REG_LAN_MC_HASH_LOW, B, "LAN_MC_HASH_LOW",
                      0xffffffffu, NULL),
    QRDMA_REG_RW_DESC(QRDMA_REG_LAN_MC_HASH_HIGH, B, "LAN_MC_HASH_HIGH",
                      0xffffffffu, NULL),
    QRDMA_REG_RW_DESC(QRDMA_REG_LAN_INT_CTRL, B, "LAN_INT_CTRL",
                      QRDMA_LAN_INT_VALID_MASK, reg_write_int_ctrl),
    QRDMA_REG_RO_LIVE_DESC(QRDMA_REG_LAN_INT_CAUSE, B, "LAN_INT_CAUSE",
                           reg_read_int_cause),

    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_LAN_TXQ_BASE_LOW, B, "LAN_TXQ_BASE_LOW",
                           0xffffffffu, reg_read_ring_cfg, reg_write_ring_cfg),
    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_LAN_TXQ_BASE_HIGH, B, "LAN_TXQ_BASE_HIGH",
                           0xffffffffu, reg_read_ring_cfg, reg_write_ring_cfg),
    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_LAN_TXQ_LEN, B, "LAN_TXQ_LEN", 0xffffffffu,
                           reg_read_ring_cfg, reg_write_ring_cfg),
    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_LAN_TXQ_TAIL, B, "LAN_TXQ_TAIL",
                           0xffffffffu, reg_read_tail, reg_write_tail),
    QRDMA_REG_RO_LIVE_DESC(QRDMA_REG_LAN_TXQ_HEAD, B, "LAN_TXQ_HEAD",
                           reg_read_head),

    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_LAN_RXQ_BASE_LOW, B, "LAN_RXQ_BASE_LOW",
                           0xffffffffu, reg_read_ring_cfg, reg_write_ring_cfg),
    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_LAN_RXQ_BASE_HIGH, B, "LAN_RXQ_BASE_HIGH",
                           0xffffffffu, reg_read_ring_cfg, reg_write_ring_cfg),
    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_LAN_RXQ_LEN, B, "LAN_RXQ_LEN", 0xffffffffu,
                           reg_read_ring_cfg, reg_write_ring_cfg),
    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_LAN_RXQ_TAIL, B, "LAN_RXQ_TAIL",
                           0xffffffffu, reg_read_tail, reg_write_tail),
    QRDMA_REG_RO_LIVE_DESC(QRDMA_REG_LAN_RXQ_HEAD, B, "LAN_RXQ_HEAD",
                           reg_read_head),

    STAT(QRDMA_REG_LAN_STAT_TX_FRAMES, "LAN_STAT_TX_FRAMES"),
    STAT(QRDMA_REG_LAN_STAT_TX_BYTES, "LAN_STAT_TX_BYTES"),
    STAT(QRDMA_REG_LAN_STAT_TX_ERRORS, "LAN_STAT_TX_ERRORS"),
    STAT(QRDMA_REG_LAN_STAT_RX_FRAMES, "LAN_STAT_RX_FRAMES"),
    STAT(QRDMA_REG_LAN_STAT_RX_BYTES, "LAN_STAT_RX_BYTES"),
    STAT(QRDMA_REG_LAN_STAT_RX_ERRORS, "LAN_STAT_RX_ERRORS"),
    STAT(QRDMA_REG_LAN_STAT_RX_FILTERED, "LAN_STAT_RX_FILTERED"),
    STAT(QRDMA_REG_LAN_STAT_RX_DROPPED, "LAN_STAT_RX_DROPPED"),
    STAT(QRDMA_REG_LAN_STAT_ROCE_FRAMES, "LAN_STAT_ROCE_FRAMES"),
};

#undef STAT
#undef B

void qrdma_lan_reset(struct qrdma_core *core)
{
    memset(&core->lan, 0, sizeof(core->lan));
    LAN_REG(core, QRDMA_REG_LAN_MTU) = 1500;
    /*
     * The filter starts at the permanent MAC (qrdma_core_reset set it first).
     */
    LAN_REG(core, QRDMA_REG_LAN_MAC_LOW) = core->regs[QRDMA_REG_MAC_LOW / 4];
    LAN_REG(core, QRDMA_REG_LAN_MAC_HIGH) = core->regs[QRDMA_REG_MAC_HIGH / 4];
}
