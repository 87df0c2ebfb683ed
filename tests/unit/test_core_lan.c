/*
 * Unit tests of the device core's LAN function (qrdma_lan.c): ring
 * programming, transmit (gather, wrap, bad descriptors), receive (delivery,
 * bad buffers, no buffer), the address filter, the RoCEv2 split, LAN
 * interrupts, counters and reset. Descriptors and buffers live in the fake
 * guest RAM of fake_env.c; frames are built by hand.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdbool.h>
#include <stdlib.h>

#include "core/qrdma_core.h"
#include "fake_env.h"
#include "unit.h"

int unit_failures;

/* Guest-physical layout inside fake RAM. */
#define TXQ         (FAKE_RAM_BASE + 0x1000)        /* up to 4096 descriptors */
#define RXQ         (FAKE_RAM_BASE + 0x20000)
#define TXBUF       (FAKE_RAM_BASE + 0x100000)      /* one buffer per descriptor index */
#define RXBUF       (FAKE_RAM_BASE + 0x200000)
#define BUF_STRIDE  0x4000ull
#define NOT_RAM     0x10000000ull                   /* far beyond fake RAM */
#define RX_BUF_LEN  0x4000u

#define DD          QRDMA_LAN_DESC_DD
#define ERR         QRDMA_LAN_DESC_ERR
#define EOP         QRDMA_LAN_DESC_EOP

static const uint8_t own_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t other_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x57 };
static const uint8_t peer_mac[6] = { 0x02, 0x00, 0x00, 0xaa, 0xbb, 0xcc };
static const uint8_t bcast_mac[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t own_ip4[4] = { 10, 0, 0, 1 };
static const uint8_t own_ip6[16] = { 0xfe, 0x80, [8] = 0x50, 0x54, 0x00, 0xff,
                                     0xfe, 0x12, 0x34, 0x56 };

static uint32_t tx_len, tx_tail, rx_len, rx_tail;
static uint64_t tx_cmd[64];                 /* qword 1 as posted, by index */

/* ---- helpers ------------------------------------------------------------ */

static void set_desc(uint64_t ring, uint32_t idx, uint64_t addr, uint64_t cmd)
{
    put64(ring + idx * 16ull, addr);
    put64(ring + idx * 16ull + 8, cmd);
}

static uint64_t desc_cmd(uint64_t ring, uint32_t idx)
{
    return get64(ring + idx * 16ull + 8);
}

static void lan_ctrl_set(uint32_t bits)
{
    wr(QRDMA_REG_LAN_CTRL, rd(QRDMA_REG_LAN_CTRL) | bits);
}

static void lan_ctrl_clear(uint32_t bits)
{
    wr(QRDMA_REG_LAN_CTRL, rd(QRDMA_REG_LAN_CTRL) & ~bits);
}

static void setup(void)
{
    fake_setup(NULL);
    tx_len = tx_tail = rx_len = rx_tail = 0;
    memset(tx_cmd, 0, sizeof(tx_cmd));
}

/* Program the TX ring at base (while disabled), then enable TX. */
static void tx_setup_at(uint64_t base, uint32_t len)
{
    wr(QRDMA_REG_LAN_TXQ_BASE_LOW, (uint32_t)base);
    wr(QRDMA_REG_LAN_TXQ_BASE_HIGH, (uint32_t)(base >> 32));
    wr(QRDMA_REG_LAN_TXQ_LEN, len);
    lan_ctrl_set(QRDMA_LAN_CTRL_TX_ENABLE);
    tx_len = len;
    tx_tail = 0;
}

static void rx_setup(uint32_t len)
{
    wr(QRDMA_REG_LAN_RXQ_BASE_LOW, (uint32_t)RXQ);
    wr(QRDMA_REG_LAN_RXQ_BASE_HIGH, (uint32_t)(RXQ >> 32));
    wr(QRDMA_REG_LAN_RXQ_LEN, len);
    lan_ctrl_set(QRDMA_LAN_CTRL_RX_ENABLE);
    rx_len = len;
    rx_tail = 0;
}

/* One raw TX descriptor at the tail (no doorbell). */
static void tx_post_raw(uint64_t addr, uint64_t cmd)
{
    set_desc(TXQ, tx_tail, addr, cmd);
    tx_cmd[tx_tail] = cmd;
    tx_tail = (tx_tail + 1) & (tx_len - 1);
}

/* Post a frame in nfrags fragments, EOP on the last (no doorbell). */
static void tx_post(const uint8_t *frame, size_t len, unsigned nfrags)
{
    size_t off = 0;
    unsigned i;

    for (i = 0; i < nfrags; i++) {
        size_t n = i + 1 == nfrags ? len - off : len / nfrags;
        uint64_t buf = TXBUF + tx_tail * BUF_STRIDE;

        memcpy(gpa(buf), frame + off, n);
        tx_post_raw(buf, n | (i + 1 == nfrags ? EOP : 0));
        off += n;
    }
}

/* Ring the TX doorbell: it only kicks; run the work as the embedding would. */
static void tx_kick(void)
{
    fake.kicks = 0;
    wr(QRDMA_REG_LAN_TXQ_TAIL, tx_tail);
    CHECK_EQ(fake.kicks, QRDMA_WORK_LAN_TX);
    qrdma_core_run(&core, QRDMA_WORK_LAN_TX);
}

/* Descriptors [from, from + n) were written back with DD (and ERR if err). */
static void check_tx_wb(uint32_t from, uint32_t n, bool err)
{
    uint32_t i;

    for (i = 0; i < n; i++) {
        uint32_t idx = (from + i) & (tx_len - 1);

        CHECK_EQ(desc_cmd(TXQ, idx), tx_cmd[idx] | DD | (err ? ERR : 0));
    }
}

static uint64_t rx_buf(uint32_t idx)
{
    return RXBUF + idx * BUF_STRIDE;
}

/* Post n receive buffers of buflen bytes and write the RX tail. */
static void rx_post(unsigned n, uint16_t buflen)
{
    while (n--) {
        set_desc(RXQ, rx_tail, rx_buf(rx_tail), buflen);
        rx_tail = (rx_tail + 1) & (rx_len - 1);
    }
    wr(QRDMA_REG_LAN_RXQ_TAIL, rx_tail);
}

/* An Ethernet frame of len bytes to dst with a payload pattern from seed. */
static size_t eth_frame(uint8_t *f, const uint8_t *dst, size_t len, uint8_t seed)
{
    size_t i;

    memcpy(f, dst, 6);
    memcpy(f + 6, peer_mac, 6);
    f[12] = 0x88;                   /* local experimental ethertype 0x88b5 */
    f[13] = 0xb5;
    for (i = 14; i < len; i++) {
        f[i] = (uint8_t)(seed + i * 7);
    }
    return len;
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v & 0xff;
}

/* Ethernet + IPv4 + UDP to dst/ip:dport; frag is the IPv4 flags/offset word. */
static size_t udp4_frame(uint8_t *f, const uint8_t *dst, const uint8_t ip[4], uint16_t dport,
                         uint16_t frag, size_t payload)
{
    uint8_t *iph = f + 14, *udp = f + 34;

    eth_frame(f, dst, 42 + payload, 0x5a);
    put16(f + 12, 0x0800);
    memset(iph, 0, 28);
    iph[0] = 0x45;
    put16(iph + 2, 28 + payload);
    put16(iph + 6, frag);
    iph[8] = 64;
    iph[9] = 17;
    memcpy(iph + 12, (const uint8_t[]){ 10, 0, 0, 2 }, 4);
    memcpy(iph + 16, ip, 4);
    put16(udp, 0xc000);
    put16(udp + 2, dport);
    put16(udp + 4, 8 + payload);
    return 42 + payload;
}

/* Ethernet + IPv6 + UDP to dst/ip:dport. */
static size_t udp6_frame(uint8_t *f, const uint8_t *dst, const uint8_t ip[16], uint16_t dport,
                         size_t payload)
{
    uint8_t *ip6 = f + 14, *udp = f + 54;

    eth_frame(f, dst, 62 + payload, 0xa5);
    put16(f + 12, 0x86dd);
    memset(ip6, 0, 48);
    ip6[0] = 0x60;
    put16(ip6 + 4, 8 + payload);
    ip6[6] = 17;
    ip6[7] = 64;
    ip6[8] = 0xfe;
    ip6[9] = 0x80;
    ip6[23] = 2;
    memcpy(ip6 + 24, ip, 16);
    put16(udp, 0xc000);
    put16(udp + 2, dport);
    put16(udp + 4, 8 + payload);
    return 62 + payload;
}

/* The multicast hash bit: reflected CRC32 of the address, top six bits. */
static unsigned mc_hash_bit(const uint8_t *addr)
{
    uint32_t crc = 0xffffffffu;
    int i, k;

    for (i = 0; i < 6; i++) {
        crc ^= addr[i];
        for (k = 0; k < 8; k++) {
            crc = crc & 1 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
        }
    }
    return crc >> 26;
}

/* Install our GIDs as the CQP's ADD_GID would. */
static void add_own_gids(void)
{
    core.gids[0].valid = true;
    core.gids[0].type = QRDMA_GID_TYPE_ROCE_V2_IPV4;
    memset(core.gids[0].gid, 0, 16);
    core.gids[0].gid[10] = core.gids[0].gid[11] = 0xff;
    memcpy(core.gids[0].gid + 12, own_ip4, 4);
    core.gids[1].valid = true;
    core.gids[1].type = QRDMA_GID_TYPE_ROCE_V2_IPV6;
    memcpy(core.gids[1].gid, own_ip6, 16);
}

/* Receive one frame expected to land in RX descriptor idx. */
static void check_rx_at(uint32_t idx, const uint8_t *f, size_t len)
{
    CHECK_EQ(qrdma_core_lan_receive(&core, f, len), len);
    CHECK_EQ(desc_cmd(RXQ, idx), DD | len);
    CHECK(!memcmp(gpa(rx_buf(idx)), f, len));
}

/* ---- ring programming --------------------------------------------------- */

static void test_ring_programming(void)
{
    setup();
    wr(QRDMA_REG_LAN_TXQ_BASE_LOW, 0x12345670);
    wr(QRDMA_REG_LAN_TXQ_BASE_HIGH, 0x9);
    wr(QRDMA_REG_LAN_TXQ_LEN, 4096);
    wr(QRDMA_REG_LAN_RXQ_BASE_LOW, 0xabcdef00);
    wr(QRDMA_REG_LAN_RXQ_BASE_HIGH, 0x1);
    wr(QRDMA_REG_LAN_RXQ_LEN, 8);
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_BASE_LOW), 0x12345670);
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_BASE_HIGH), 0x9);
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_LEN), 4096);
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_BASE_LOW), 0xabcdef00);
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_BASE_HIGH), 0x1);
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_LEN), 8);
    wr(QRDMA_REG_LAN_TXQ_TAIL, 4095);
    wr(QRDMA_REG_LAN_RXQ_TAIL, 7);
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_TAIL), 4095);
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_TAIL), 7);
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_HEAD), 0);
    /* A new LEN restarts the ring; LEN 0 turns it off. */
    wr(QRDMA_REG_LAN_TXQ_LEN, 16);
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_TAIL), 0);
    wr(QRDMA_REG_LAN_RXQ_LEN, 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_LEN), 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_TAIL), 0);
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_ring_bad_values(void)
{
    static const uint32_t bad_len[] = { 4, 12, 100, 8192, 0xffffffffu };
    unsigned i;

    setup();
    wr(QRDMA_REG_LAN_TXQ_LEN, 64);
    wr(QRDMA_REG_LAN_RXQ_LEN, 64);
    for (i = 0; i < sizeof(bad_len) / sizeof(bad_len[0]); i++) {
        wr(QRDMA_REG_LAN_TXQ_LEN, bad_len[i]);
        CHECK_EQ(fake.guest_errors, 2 * i + 1);
        CHECK_STR_CONTAINS(fake.last_error, "LAN_TXQ_LEN");
        wr(QRDMA_REG_LAN_RXQ_LEN, bad_len[i]);
        CHECK_EQ(fake.guest_errors, 2 * i + 2);
        CHECK_STR_CONTAINS(fake.last_error, "power of two");
    }
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_LEN), 64);
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_LEN), 64);

    wr(QRDMA_REG_LAN_TXQ_BASE_LOW, 0x1000);
    wr(QRDMA_REG_LAN_TXQ_BASE_LOW, 0x1008);
    CHECK_STR_CONTAINS(fake.last_error, "16-byte aligned");
    wr(QRDMA_REG_LAN_RXQ_BASE_LOW, 0x2001);
    CHECK_STR_CONTAINS(fake.last_error, "LAN_RXQ_BASE_LOW");
    CHECK_EQ(fake.guest_errors, 12);
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_BASE_LOW), 0x1000);
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_BASE_LOW), 0);
}

static void test_ring_cfg_while_enabled(void)
{
    setup();
    tx_setup_at(TXQ, 8);
    rx_setup(8);
    fake.guest_errors = 0;
    wr(QRDMA_REG_LAN_TXQ_BASE_LOW, 0x5000);
    CHECK_STR_CONTAINS(fake.last_error, "while the ring is enabled");
    wr(QRDMA_REG_LAN_TXQ_BASE_HIGH, 1);
    wr(QRDMA_REG_LAN_TXQ_LEN, 16);
    wr(QRDMA_REG_LAN_RXQ_BASE_LOW, 0x5000);
    wr(QRDMA_REG_LAN_RXQ_LEN, 16);
    CHECK_EQ(fake.guest_errors, 5);
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_BASE_LOW), (uint32_t)TXQ);
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_BASE_HIGH), 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_LEN), 8);
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_BASE_LOW), (uint32_t)RXQ);
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_LEN), 8);
    /* Only the enabled direction is locked. */
    lan_ctrl_clear(QRDMA_LAN_CTRL_TX_ENABLE);
    wr(QRDMA_REG_LAN_TXQ_LEN, 16);
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_LEN), 16);
    CHECK_EQ(fake.guest_errors, 5);
}

static void test_tail_out_of_range(void)
{
    setup();
    fake.kicks = 0;
    wr(QRDMA_REG_LAN_TXQ_TAIL, 0);          /* ring not configured */
    CHECK_EQ(fake.guest_errors, 1);
    tx_setup_at(TXQ, 8);
    fake.kicks = 0;
    wr(QRDMA_REG_LAN_TXQ_TAIL, 8);
    CHECK_EQ(fake.guest_errors, 2);
    CHECK_STR_CONTAINS(fake.last_error, "LAN_TXQ_TAIL=8");
    CHECK_EQ(fake.kicks, 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_TAIL), 0);
    rx_setup(16);
    fake.rx_ready_calls = 0;
    wr(QRDMA_REG_LAN_RXQ_TAIL, 16);
    CHECK_EQ(fake.guest_errors, 3);
    CHECK_EQ(fake.rx_ready_calls, 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_TAIL), 0);
    wr(QRDMA_REG_LAN_RXQ_TAIL, 15);
    CHECK_EQ(fake.rx_ready_calls, 1);
    CHECK_EQ(fake.guest_errors, 3);
}

static void test_mtu_register(void)
{
    setup();
    CHECK_EQ(rd(QRDMA_REG_LAN_MTU), 1500);
    wr(QRDMA_REG_LAN_MTU, 67);
    wr(QRDMA_REG_LAN_MTU, 9001);
    wr(QRDMA_REG_LAN_MTU, 0x10000 | 1500);
    CHECK_EQ(fake.guest_errors, 3);
    CHECK_EQ(rd(QRDMA_REG_LAN_MTU), 1500);
    wr(QRDMA_REG_LAN_MTU, 68);
    CHECK_EQ(rd(QRDMA_REG_LAN_MTU), 68);
    wr(QRDMA_REG_LAN_MTU, 9000);
    CHECK_EQ(rd(QRDMA_REG_LAN_MTU), 9000);
    CHECK_EQ(fake.guest_errors, 3);
}

/* ---- transmit ----------------------------------------------------------- */

static void test_tx_single_and_gather(void)
{
    uint8_t f1[60], f2[1000];

    setup();
    tx_setup_at(TXQ, 8);
    eth_frame(f1, peer_mac, sizeof(f1), 1);
    eth_frame(f2, peer_mac, sizeof(f2), 2);
    tx_post(f1, sizeof(f1), 1);
    tx_kick();
    CHECK_EQ(fake.frames_sent, 1);
    CHECK_EQ(fake.frames[0].len, sizeof(f1));
    CHECK(!memcmp(fake.frames[0].data, f1, sizeof(f1)));
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_HEAD), 1);
    check_tx_wb(0, 1, false);

    tx_post(f2, sizeof(f2), 3);             /* 333 + 333 + 334 bytes */
    CHECK_EQ(tx_cmd[1], 333);
    CHECK_EQ(tx_cmd[3], 334 | EOP);
    tx_kick();
    CHECK_EQ(fake.frames_sent, 2);
    CHECK_EQ(fake.frames[1].len, sizeof(f2));
    CHECK(!memcmp(fake.frames[1].data, f2, sizeof(f2)));
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_HEAD), 4);
    check_tx_wb(1, 3, false);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_FRAMES), 2);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_BYTES), sizeof(f1) + sizeof(f2));
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_ERRORS), 0);
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_tx_batches_wrap(void)
{
    uint8_t f[30][200];
    int sent = 0, nb = 0, i;
    uint32_t bytes = 0;

    setup();
    tx_setup_at(TXQ, 8);
    while (sent < 30) {
        uint32_t start = tx_tail, ndesc = 0;
        int batch = 1 + nb++ % 3, first = sent;    /* at most 6 descriptors */

        for (i = 0; i < batch && sent < 30; i++, sent++) {
            size_t len = 60 + sent * 4;
            unsigned nfrags = 1 + sent % 2;

            eth_frame(f[sent], peer_mac, len, (uint8_t)sent);
            tx_post(f[sent], len, nfrags);
            ndesc += nfrags;
            bytes += len;
        }
        tx_kick();
        CHECK_EQ(fake.frames_sent, sent);
        CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_HEAD), tx_tail);
        check_tx_wb(start, ndesc, false);
        for (i = first; i < sent; i++) {
            CHECK_EQ(fake.frames[i].len, 60 + i * 4);
            CHECK(!memcmp(fake.frames[i].data, f[i], 60 + i * 4));
        }
    }
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_FRAMES), 30);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_BYTES), bytes);
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_tx_waits_for_eop(void)
{
    uint8_t f[300];

    setup();
    tx_setup_at(TXQ, 8);
    eth_frame(f, peer_mac, sizeof(f), 3);
    tx_post(f, sizeof(f), 3);
    wr(QRDMA_REG_LAN_TXQ_TAIL, 2);          /* EOP not posted yet */
    qrdma_core_run(&core, QRDMA_WORK_LAN_TX);
    CHECK_EQ(fake.frames_sent, 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_HEAD), 0);
    CHECK_EQ(desc_cmd(TXQ, 0), tx_cmd[0]);
    tx_kick();
    CHECK_EQ(fake.frames_sent, 1);
    CHECK(!memcmp(fake.frames[0].data, f, sizeof(f)));
    check_tx_wb(0, 3, false);
    CHECK_EQ(fake.guest_errors, 0);
}

/*
 * A full netdev (it kept the frame, QRDMA_TX_QUEUED) stops the ring as a
 * full TX path does: the descriptors after that frame wait, not done,
 * doorbells send nothing, until qrdma_core_tx_ready() kicks the ring on;
 * then the rest goes in order.
 */
static void test_tx_netdev_full(void)
{
    uint8_t f[5][100];
    unsigned i;

    setup();
    tx_setup_at(TXQ, 8);
    for (i = 0; i < 4; i++) {
        eth_frame(f[i], peer_mac, sizeof(f[i]), 10 + i);
        tx_post(f[i], sizeof(f[i]), 1);
    }
    fake.queue_from = 2;
    tx_kick();
    CHECK_EQ(fake.frames_sent, 2);          /* the second one taken and kept */
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_HEAD), 2);
    check_tx_wb(0, 2, false);
    CHECK_EQ(desc_cmd(TXQ, 2), tx_cmd[2]);  /* not done */
    CHECK_EQ(core.tx_queued, 1);
    eth_frame(f[4], peer_mac, sizeof(f[4]), 14);
    tx_post(f[4], sizeof(f[4]), 1);
    tx_kick();
    CHECK_EQ(fake.frames_sent, 2);
    fake.queue_from = 0;
    fake.kicks = 0;
    qrdma_core_tx_ready(&core);
    CHECK_EQ(core.tx_queued, 0);
    CHECK(fake.kicks & QRDMA_WORK_LAN_TX);
    qrdma_core_run(&core, fake.kicks);
    CHECK_EQ(fake.frames_sent, 5);
    for (i = 0; i < 5; i++) {
        CHECK(!memcmp(fake.frames[i].data, f[i], sizeof(f[i])));
    }
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_HEAD), 5);
    check_tx_wb(0, 5, false);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_FRAMES), 5);
    CHECK_EQ(core.stats.tx_queued, 1);
    /* a spurious tx_ready changes nothing */
    qrdma_core_tx_ready(&core);
    CHECK_EQ(core.tx_queued, 0);
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_tx_disabled(void)
{
    uint8_t f[64];

    setup();
    tx_setup_at(TXQ, 8);
    lan_ctrl_clear(QRDMA_LAN_CTRL_TX_ENABLE);
    eth_frame(f, peer_mac, sizeof(f), 4);
    tx_post(f, sizeof(f), 1);
    tx_kick();
    CHECK_EQ(fake.frames_sent, 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_HEAD), 0);
    CHECK_EQ(desc_cmd(TXQ, 0), tx_cmd[0]);
    /* Enabling asks for a run, which sends what was posted. */
    fake.kicks = 0;
    lan_ctrl_set(QRDMA_LAN_CTRL_TX_ENABLE);
    CHECK_EQ(fake.kicks, QRDMA_WORK_LAN_TX);
    qrdma_core_run(&core, QRDMA_WORK_LAN_TX);
    CHECK_EQ(fake.frames_sent, 1);
    CHECK(!memcmp(fake.frames[0].data, f, sizeof(f)));
}

/* After a bad frame at [from, from + n): error logged, counted, next frame goes. */
static void check_tx_bad(uint32_t from, uint32_t n, const char *why)
{
    uint8_t good[80];

    CHECK_EQ(fake.frames_sent, 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_ERRORS), 1);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_FRAMES), 0);
    CHECK_EQ(fake.guest_errors, 1);
    CHECK_STR_CONTAINS(fake.last_error, why);
    check_tx_wb(from, n, true);
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_HEAD), (from + n) & (tx_len - 1));
    eth_frame(good, peer_mac, sizeof(good), 9);
    tx_post(good, sizeof(good), 1);
    tx_kick();
    CHECK_EQ(fake.frames_sent, 1);
    CHECK(!memcmp(fake.frames[0].data, good, sizeof(good)));
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_FRAMES), 1);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_ERRORS), 1);
}

static void test_tx_zero_length_fragment(void)
{
    setup();
    tx_setup_at(TXQ, 8);
    tx_post_raw(TXBUF, 40);
    tx_post_raw(TXBUF + BUF_STRIDE, 0);
    tx_post_raw(TXBUF + 2 * BUF_STRIDE, 40 | EOP);
    tx_kick();
    check_tx_bad(0, 3, "zero-length fragment");
}

static void test_tx_oversize(void)
{
    static uint8_t f[1519];

    setup();
    tx_setup_at(TXQ, 8);
    eth_frame(f, peer_mac, sizeof(f), 5);
    tx_post(f, sizeof(f), 2);
    tx_kick();
    check_tx_bad(0, 2, "longer than MTU + 18");
    /* The largest frame, MTU + 18, is fine. */
    tx_post(f, sizeof(f) - 1, 2);
    tx_kick();
    CHECK_EQ(fake.frames_sent, 2);
    CHECK_EQ(fake.frames[1].len, 1518);
    CHECK(!memcmp(fake.frames[1].data, f, 1518));
}

static void test_tx_buffer_outside_ram(void)
{
    setup();
    tx_setup_at(TXQ, 8);
    tx_post_raw(TXBUF, 40);
    tx_post_raw(NOT_RAM, 40 | EOP);
    tx_kick();
    check_tx_bad(0, 2, "fragment buffer outside guest RAM");
}

static void test_tx_ring_outside_ram(void)
{
    /* Descriptors 0 and 1 are the last 32 bytes of RAM; 2..7 are not RAM. */
    uint64_t base = FAKE_RAM_BASE + FAKE_RAM_SIZE - 32;
    uint8_t f[70];

    setup();
    tx_setup_at(base, 8);
    eth_frame(f, peer_mac, sizeof(f), 6);
    memcpy(gpa(TXBUF), f, sizeof(f));
    set_desc(base, 0, TXBUF, sizeof(f) | EOP);
    set_desc(base, 1, TXBUF, sizeof(f) | EOP);
    wr(QRDMA_REG_LAN_TXQ_TAIL, 3);
    qrdma_core_run(&core, QRDMA_WORK_LAN_TX);
    CHECK_EQ(fake.frames_sent, 2);
    CHECK(!memcmp(fake.frames[1].data, f, sizeof(f)));
    CHECK_EQ(desc_cmd(base, 1), sizeof(f) | EOP | DD);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_ERRORS), 1);
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_HEAD), 3);
    /* The unreadable descriptor, the dropped frame, the failed write-back. */
    CHECK_EQ(fake.guest_errors, 3);
    CHECK_STR_CONTAINS(fake.last_error, "cannot write back descriptor 2");

    /* Reprogrammed into RAM, the ring works again. */
    lan_ctrl_clear(QRDMA_LAN_CTRL_TX_ENABLE);
    tx_setup_at(TXQ, 8);
    tx_post(f, sizeof(f), 1);
    tx_kick();
    CHECK_EQ(fake.frames_sent, 3);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_FRAMES), 3);
}

static void test_tx_too_many_fragments(void)
{
    uint8_t f[QRDMA_LAN_TX_MAX_FRAGS * 10];
    unsigned i;

    setup();
    tx_setup_at(TXQ, 64);
    /* QRDMA_LAN_TX_MAX_FRAGS fragments, EOP on the last: the limit, fine. */
    eth_frame(f, peer_mac, sizeof(f), 17);
    tx_post(f, sizeof(f), QRDMA_LAN_TX_MAX_FRAGS);
    tx_kick();
    CHECK_EQ(fake.frames_sent, 1);
    CHECK(!memcmp(fake.frames[0].data, f, sizeof(f)));
    check_tx_wb(0, QRDMA_LAN_TX_MAX_FRAGS, false);
    /*
     * A frame of 33 descriptors (EOP on the 33rd), then a good frame, in one
     * run: the whole long frame is dropped, its tail never sent on its own.
     */
    for (i = 0; i < QRDMA_LAN_TX_MAX_FRAGS; i++) {
        tx_post_raw(TXBUF + (32 + i) * BUF_STRIDE, 10);
    }
    memcpy(gpa(TXBUF + 2 * BUF_STRIDE), f, 100);
    tx_post_raw(TXBUF + 2 * BUF_STRIDE, 100 | EOP);     /* would pass as a frame */
    tx_post(f, 100, 1);
    tx_kick();
    check_tx_wb(QRDMA_LAN_TX_MAX_FRAGS, QRDMA_LAN_TX_MAX_FRAGS, true);
    check_tx_wb(0, 1, true);
    check_tx_wb(1, 1, false);
    CHECK_EQ(fake.frames_sent, 2);
    CHECK_EQ(fake.frames[1].len, 100);
    CHECK(!memcmp(fake.frames[1].data, f, 100));
    CHECK_EQ(rd(QRDMA_REG_LAN_TXQ_HEAD), 2);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_ERRORS), 2);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_FRAMES), 2);
    CHECK_EQ(fake.guest_errors, 2);
    CHECK_STR_CONTAINS(fake.last_error, "rest of a frame longer than");
}

/* A ring full of descriptors and no EOP can never complete: dropped, not stuck. */
static void test_tx_ring_full_without_eop(void)
{
    uint8_t f[100];
    unsigned i;

    setup();
    tx_setup_at(TXQ, 8);
    for (i = 0; i < 7; i++) {
        tx_post_raw(TXBUF + i * BUF_STRIDE, 10);
    }
    tx_kick();
    check_tx_wb(0, 7, true);
    CHECK_EQ(fake.frames_sent, 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_ERRORS), 1);
    CHECK_STR_CONTAINS(fake.last_error, "ring full without an EOP");
    /* The ring goes on. */
    eth_frame(f, peer_mac, sizeof(f), 3);
    tx_post(f, sizeof(f), 1);
    tx_kick();
    CHECK_EQ(fake.frames_sent, 1);
    CHECK(!memcmp(fake.frames[0].data, f, sizeof(f)));
}

static void test_tx_checksum_offload(void)
{
    uint8_t f[42 + 21];
    uint64_t csum = QRDMA_LAN_DESC_CSUM | 34ull << QRDMA_LAN_DESC_CSUM_START_SHIFT |
                    6ull << QRDMA_LAN_DESC_CSUM_OFFSET_SHIFT;
    uint32_t sum = 0, i;

    setup();
    tx_setup_at(TXQ, 8);
    udp4_frame(f, peer_mac, own_ip4, 1234, 0, 21);
    put16(f + 40, 0x1234);                  /* "pseudo-header sum" */
    for (i = 34; i < sizeof(f); i++) {
        sum += i & 1 ? f[i] : f[i] << 8;
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    memcpy(gpa(TXBUF), f, sizeof(f));
    tx_post_raw(TXBUF, sizeof(f) | EOP | csum);
    /* An offset beyond the frame is a bad descriptor. */
    tx_post_raw(TXBUF, sizeof(f) | EOP | QRDMA_LAN_DESC_CSUM |
                (uint64_t)(sizeof(f) - 1) << QRDMA_LAN_DESC_CSUM_START_SHIFT);
    tx_kick();
    CHECK_EQ(fake.frames_sent, 1);
    CHECK_EQ(fake.frames[0].data[40] << 8 | fake.frames[0].data[41], ~sum & 0xffff);
    CHECK(!memcmp(fake.frames[0].data, f, 40));
    CHECK(!memcmp(fake.frames[0].data + 42, f + 42, sizeof(f) - 42));
    check_tx_wb(0, 1, false);
    check_tx_wb(1, 1, true);
    CHECK_STR_CONTAINS(fake.last_error, "checksum start or offset");
}

/* ---- receive ------------------------------------------------------------ */

static void test_rx_deliver_and_wrap(void)
{
    uint8_t f[1518];
    uint32_t bytes = 0, i;

    setup();
    rx_setup(8);
    for (i = 0; i < 30; i++) {
        size_t len = i == 29 ? 1518 : 60 + i * 13;

        rx_post(1, RX_BUF_LEN);
        eth_frame(f, own_mac, len, (uint8_t)i);
        check_rx_at(i % 8, f, len);
        CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_HEAD), (i + 1) % 8);
        bytes += len;
    }
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FRAMES), 30);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_BYTES), bytes);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_ERRORS), 0);
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_rx_no_buffer(void)
{
    uint8_t f[100];

    setup();
    eth_frame(f, own_mac, sizeof(f), 7);
    fake.rx_ready_calls = 0;
    rx_setup(8);
    CHECK_EQ(fake.rx_ready_calls, 1);       /* enabling receive */
    /* The device never asks QEMU to hold frames: a held LAN frame would block RoCE. */
    CHECK(qrdma_core_lan_can_receive(&core));
    CHECK_EQ(qrdma_core_lan_receive(&core, f, sizeof(f)), sizeof(f));
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_HEAD), 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FRAMES), 0);
    /* Posting a buffer delivers the held frame. */
    rx_post(1, RX_BUF_LEN);
    CHECK_EQ(fake.rx_ready_calls, 2);
    CHECK_EQ(desc_cmd(RXQ, 0), DD | sizeof(f));
    CHECK(!memcmp(gpa(rx_buf(0)), f, sizeof(f)));
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FRAMES), 1);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_DROPPED), 0);
}

/*
 * With no buffer, LAN frames wait in the backlog in order, up to 32; the
 * next is dropped (RX_DROPPED). Buffers posted later take the held frames
 * first, oldest first, and only then new ones. RoCE frames pass meanwhile.
 */
static void test_rx_backlog(void)
{
    uint8_t f[QRDMA_LAN_BACKLOG_FRAMES + 2][100];
    unsigned i;

    setup();
    rx_setup(64);
    for (i = 0; i < QRDMA_LAN_BACKLOG_FRAMES + 1; i++) {
        eth_frame(f[i], own_mac, sizeof(f[i]), 40 + i);
        CHECK_EQ(qrdma_core_lan_receive(&core, f[i], sizeof(f[i])), sizeof(f[i]));
    }
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_DROPPED), 1);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FRAMES), 0);
    /* 8 buffers: the 8 oldest. */
    rx_post(8, RX_BUF_LEN);
    for (i = 0; i < 8; i++) {
        CHECK_EQ(desc_cmd(RXQ, i), DD | sizeof(f[i]));
        CHECK(!memcmp(gpa(rx_buf(i)), f[i], sizeof(f[i])));
    }
    /* A new frame queues behind the 24 still held, not ahead of them. */
    eth_frame(f[QRDMA_LAN_BACKLOG_FRAMES + 1], own_mac, 100, 99);
    CHECK_EQ(qrdma_core_lan_receive(&core, f[QRDMA_LAN_BACKLOG_FRAMES + 1], 100), 100);
    rx_post(32, RX_BUF_LEN);
    for (i = 8; i < QRDMA_LAN_BACKLOG_FRAMES; i++) {
        CHECK(!memcmp(gpa(rx_buf(i)), f[i], sizeof(f[i])));
    }
    CHECK(!memcmp(gpa(rx_buf(QRDMA_LAN_BACKLOG_FRAMES)), f[QRDMA_LAN_BACKLOG_FRAMES + 1], 100));
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FRAMES), QRDMA_LAN_BACKLOG_FRAMES + 1);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_DROPPED), 1);
    /* Receive off empties the backlog. */
    setup();
    rx_setup(8);
    CHECK_EQ(qrdma_core_lan_receive(&core, f[0], sizeof(f[0])), sizeof(f[0]));
    CHECK_EQ(qrdma_core_lan_receive(&core, f[1], sizeof(f[1])), sizeof(f[1]));
    lan_ctrl_clear(QRDMA_LAN_CTRL_RX_ENABLE);
    lan_ctrl_set(QRDMA_LAN_CTRL_RX_ENABLE);
    rx_post(2, RX_BUF_LEN);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FRAMES), 0);
    CHECK_EQ(desc_cmd(RXQ, 0), RX_BUF_LEN);
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_rx_disabled(void)
{
    uint8_t f[100];

    setup();
    eth_frame(f, own_mac, sizeof(f), 8);
    CHECK(qrdma_core_lan_can_receive(&core));       /* nothing configured */
    CHECK_EQ(qrdma_core_lan_receive(&core, f, sizeof(f)), sizeof(f));
    rx_setup(8);
    rx_post(2, RX_BUF_LEN);
    lan_ctrl_clear(QRDMA_LAN_CTRL_RX_ENABLE);
    CHECK(qrdma_core_lan_can_receive(&core));
    CHECK_EQ(qrdma_core_lan_receive(&core, f, sizeof(f)), sizeof(f));
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_DROPPED), 2);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FRAMES), 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_HEAD), 0);
    CHECK_EQ(desc_cmd(RXQ, 0), RX_BUF_LEN);
    lan_ctrl_set(QRDMA_LAN_CTRL_RX_ENABLE);
    check_rx_at(0, f, sizeof(f));
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_rx_bad_frame_length(void)
{
    static uint8_t f[9019];

    setup();
    rx_setup(8);
    rx_post(7, RX_BUF_LEN);
    eth_frame(f, own_mac, sizeof(f), 9);
    CHECK_EQ(qrdma_core_lan_receive(&core, f, 13), 13);
    CHECK_EQ(qrdma_core_lan_receive(&core, f, 1519), 1519);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_ERRORS), 2);
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_HEAD), 0);
    check_rx_at(0, f, 14);                  /* bare header: smallest accepted */
    check_rx_at(1, f, 1518);
    wr(QRDMA_REG_LAN_MTU, 9000);
    check_rx_at(2, f, 9018);
    CHECK_EQ(qrdma_core_lan_receive(&core, f, 9019), 9019);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_ERRORS), 3);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FRAMES), 3);
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_HEAD), 3);
    CHECK_EQ(fake.guest_errors, 0);         /* wire errors are not the guest's */
}

static void test_rx_bad_buffers_skipped(void)
{
    uint8_t f[200], g[300];

    setup();
    rx_setup(8);
    eth_frame(f, own_mac, sizeof(f), 10);
    eth_frame(g, own_mac, sizeof(g), 11);
    set_desc(RXQ, 0, rx_buf(0), 0);                 /* zero length */
    set_desc(RXQ, 1, rx_buf(1), RX_BUF_LEN);
    set_desc(RXQ, 2, NOT_RAM, RX_BUF_LEN);          /* not RAM */
    set_desc(RXQ, 3, FAKE_RAM_BASE + FAKE_RAM_SIZE - 100, RX_BUF_LEN);   /* runs off RAM */
    set_desc(RXQ, 4, rx_buf(4), RX_BUF_LEN);
    rx_tail = 5;
    wr(QRDMA_REG_LAN_RXQ_TAIL, rx_tail);
    check_rx_at(1, f, sizeof(f));
    CHECK_EQ(desc_cmd(RXQ, 0), DD | ERR);
    CHECK_EQ(fake.guest_errors, 1);
    CHECK_STR_CONTAINS(fake.last_error, "descriptor 0 skipped: zero-length buffer");
    check_rx_at(4, g, sizeof(g));
    CHECK_EQ(desc_cmd(RXQ, 2), DD | ERR);
    CHECK_EQ(desc_cmd(RXQ, 3), DD | ERR);
    CHECK_EQ(fake.guest_errors, 3);
    CHECK_STR_CONTAINS(fake.last_error, "descriptor 3 skipped: buffer outside guest RAM");
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_HEAD), 5);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_ERRORS), 3);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FRAMES), 2);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_BYTES), sizeof(f) + sizeof(g));
}

static void test_rx_buffer_too_short(void)
{
    uint8_t f[100], zero[100] = { 0 };

    setup();
    rx_setup(8);
    eth_frame(f, own_mac, sizeof(f), 12);
    set_desc(RXQ, 0, rx_buf(0), 99);
    set_desc(RXQ, 1, rx_buf(1), 100);
    rx_tail = 2;
    wr(QRDMA_REG_LAN_RXQ_TAIL, rx_tail);
    CHECK_EQ(qrdma_core_lan_receive(&core, f, sizeof(f)), sizeof(f));
    CHECK_EQ(desc_cmd(RXQ, 0), DD | ERR);
    CHECK(!memcmp(gpa(rx_buf(0)), zero, sizeof(zero)));
    CHECK_EQ(desc_cmd(RXQ, 1), 100);                /* frame dropped, not moved on */
    CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_HEAD), 1);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_ERRORS), 1);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FRAMES), 0);
    CHECK_EQ(fake.guest_errors, 1);
    CHECK_STR_CONTAINS(fake.last_error, "buffer of 99 bytes for a frame of 100");
    check_rx_at(1, f, sizeof(f));                   /* an exact fit is fine */
}

/* ---- address filter ----------------------------------------------------- */

/* Receive a 64-byte frame to dst; returns whether it reached the ring. */
static bool rx_accepts(const uint8_t *dst)
{
    uint8_t f[64];
    uint32_t head = rd(QRDMA_REG_LAN_RXQ_HEAD);
    uint32_t filtered = rd(QRDMA_REG_LAN_STAT_RX_FILTERED);

    rx_post(1, RX_BUF_LEN);
    eth_frame(f, dst, sizeof(f), dst[5]);
    CHECK_EQ(qrdma_core_lan_receive(&core, f, sizeof(f)), sizeof(f));
    if (rd(QRDMA_REG_LAN_RXQ_HEAD) == head) {
        CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FILTERED), filtered + 1);
        return false;
    }
    CHECK_EQ(desc_cmd(RXQ, head), DD | sizeof(f));
    CHECK(!memcmp(gpa(rx_buf(head)), f, sizeof(f)));
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FILTERED), filtered);
    return true;
}

static void test_filter_unicast(void)
{
    static const uint8_t new_mac[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };

    setup();
    rx_setup(64);
    CHECK_EQ(rd(QRDMA_REG_LAN_MAC_LOW), 0x12005452);
    CHECK_EQ(rd(QRDMA_REG_LAN_MAC_HIGH), 0x5634);
    CHECK(rx_accepts(own_mac));
    CHECK(!rx_accepts(other_mac));
    wr(QRDMA_REG_LAN_MAC_LOW, 0x33221102);
    wr(QRDMA_REG_LAN_MAC_HIGH, 0x5544);
    CHECK(rx_accepts(new_mac));
    CHECK(!rx_accepts(own_mac));
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FILTERED), 2);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FRAMES), 2);
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_filter_broadcast_multicast(void)
{
    static const uint8_t mc_v4[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };    /* bit 54 */
    static const uint8_t mc_v6[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 };    /* bit 23 */
    static const uint8_t mc_off[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x02 };   /* bit 49 */

    /* Our CRC agrees with bits precomputed with zlib (~crc32 >> 26). */
    CHECK_EQ(mc_hash_bit(mc_v4), 54);
    CHECK_EQ(mc_hash_bit(mc_v6), 23);
    CHECK_EQ(mc_hash_bit(mc_off), 49);

    setup();
    rx_setup(64);
    CHECK(!rx_accepts(bcast_mac));
    lan_ctrl_set(QRDMA_LAN_CTRL_BROADCAST);
    CHECK(rx_accepts(bcast_mac));

    CHECK(!rx_accepts(mc_v4));
    CHECK(!rx_accepts(mc_v6));
    wr(QRDMA_REG_LAN_MC_HASH_HIGH, 1u << (mc_hash_bit(mc_v4) - 32));
    wr(QRDMA_REG_LAN_MC_HASH_LOW, 1u << mc_hash_bit(mc_v6));
    CHECK(rx_accepts(mc_v4));
    CHECK(rx_accepts(mc_v6));
    CHECK(!rx_accepts(mc_off));
    lan_ctrl_set(QRDMA_LAN_CTRL_ALLMULTI);
    CHECK(rx_accepts(mc_off));
    CHECK(!rx_accepts(other_mac));      /* ALLMULTI is not promiscuous */
    /* ALLMULTI does not cover broadcast. */
    lan_ctrl_clear(QRDMA_LAN_CTRL_BROADCAST);
    CHECK(!rx_accepts(bcast_mac));
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_filter_promisc(void)
{
    static const uint8_t mc[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x02 };

    setup();
    rx_setup(64);
    lan_ctrl_set(QRDMA_LAN_CTRL_PROMISC);
    CHECK(rx_accepts(other_mac));
    CHECK(rx_accepts(bcast_mac));
    CHECK(rx_accepts(mc));
    CHECK(rx_accepts(own_mac));
    lan_ctrl_clear(QRDMA_LAN_CTRL_PROMISC);
    CHECK(!rx_accepts(other_mac));
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FRAMES), 4);
}

/* ---- RoCEv2 split ------------------------------------------------------- */

/* Receive f; check whether it was steered to RDMA (true) or reached the ring. */
static void check_roce(const uint8_t *f, size_t len, bool roce)
{
    uint32_t head = rd(QRDMA_REG_LAN_RXQ_HEAD);
    uint32_t n = rd(QRDMA_REG_LAN_STAT_ROCE_FRAMES);

    CHECK_EQ(qrdma_core_lan_receive(&core, f, len), len);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_ROCE_FRAMES), n + roce);
    if (roce) {
        CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_HEAD), head);
        CHECK_EQ(desc_cmd(RXQ, head), RX_BUF_LEN);
    } else {
        CHECK_EQ(rd(QRDMA_REG_LAN_RXQ_HEAD), (head + 1) % rx_len);
        CHECK_EQ(desc_cmd(RXQ, head), DD | len);
        CHECK(!memcmp(gpa(rx_buf(head)), f, len));
    }
}

static void test_roce_split(void)
{
    static const uint8_t other_ip4[4] = { 10, 0, 0, 9 };
    uint8_t f[200];
    size_t len;

    setup();
    add_own_gids();
    rx_setup(16);
    rx_post(15, RX_BUF_LEN);
    len = udp4_frame(f, own_mac, own_ip4, 4791, 0, 40);
    check_roce(f, len, true);
    len = udp4_frame(f, own_mac, own_ip4, 4791, 0x4000, 40);   /* DF set */
    check_roce(f, len, true);
    len = udp4_frame(f, own_mac, own_ip4, 4792, 0, 40);
    check_roce(f, len, false);
    len = udp4_frame(f, own_mac, own_ip4, 4791, 0x0001, 40);   /* not the first fragment */
    check_roce(f, len, false);
    len = udp4_frame(f, own_mac, other_ip4, 4791, 0, 40);      /* not one of our GIDs */
    check_roce(f, len, false);
    len = udp4_frame(f, own_mac, own_ip4, 4791, 0, 40);
    f[14 + 9] = 6;                                              /* TCP, not UDP */
    check_roce(f, len, false);

    len = udp6_frame(f, own_mac, own_ip6, 4791, 40);
    check_roce(f, len, true);
    len = udp6_frame(f, own_mac, own_ip6, 4792, 40);
    check_roce(f, len, false);

    /* Only unicast to our MAC is RoCE, even when promiscuous. */
    lan_ctrl_set(QRDMA_LAN_CTRL_PROMISC);
    len = udp4_frame(f, other_mac, own_ip4, 4791, 0, 40);
    check_roce(f, len, false);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_ROCE_FRAMES), 3);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FRAMES), 6);
    CHECK_EQ(fake.guest_errors, 0);
}

/* ---- interrupts --------------------------------------------------------- */

#define RX_VEC 3
#define TX_VEC 5
#define VECS   (RX_VEC << QRDMA_LAN_INT_RX_VECTOR_SHIFT | TX_VEC << QRDMA_LAN_INT_TX_VECTOR_SHIFT)

static void test_int_rx(void)
{
    uint8_t f[64];

    setup();
    rx_setup(8);
    rx_post(4, RX_BUF_LEN);
    eth_frame(f, own_mac, sizeof(f), 13);
    wr(QRDMA_REG_LAN_INT_CTRL, VECS | QRDMA_LAN_INT_RX_ARM);
    CHECK_EQ(fake.irqs[RX_VEC], 0);                 /* nothing done yet */
    check_rx_at(0, f, sizeof(f));
    CHECK_EQ(fake.irqs[RX_VEC], 1);
    CHECK_EQ(fake.irqs[TX_VEC], 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_INT_CTRL), VECS);     /* disarmed */
    CHECK_EQ(rd(QRDMA_REG_LAN_INT_CAUSE), QRDMA_LAN_INT_CAUSE_RX);
    CHECK_EQ(rd(QRDMA_REG_LAN_INT_CAUSE), 0);       /* read clears */
    check_rx_at(1, f, sizeof(f));
    CHECK_EQ(fake.irqs[RX_VEC], 1);                 /* not armed: no interrupt */
    CHECK_EQ(rd(QRDMA_REG_LAN_INT_CAUSE), 0);
    /* Arming with a completion pending fires at once, and only once. */
    wr(QRDMA_REG_LAN_INT_CTRL, VECS | QRDMA_LAN_INT_RX_ARM);
    CHECK_EQ(fake.irqs[RX_VEC], 2);
    CHECK_EQ(rd(QRDMA_REG_LAN_INT_CAUSE), QRDMA_LAN_INT_CAUSE_RX);
    wr(QRDMA_REG_LAN_INT_CTRL, VECS | QRDMA_LAN_INT_RX_ARM);
    CHECK_EQ(fake.irqs[RX_VEC], 2);
    CHECK_EQ(rd(QRDMA_REG_LAN_INT_CTRL), VECS | QRDMA_LAN_INT_RX_ARM);
    check_rx_at(2, f, sizeof(f));
    CHECK_EQ(fake.irqs[RX_VEC], 3);
    /* A frame the filter drops writes nothing back and does not interrupt. */
    wr(QRDMA_REG_LAN_INT_CTRL, VECS | QRDMA_LAN_INT_RX_ARM);
    eth_frame(f, other_mac, sizeof(f), 14);
    CHECK_EQ(qrdma_core_lan_receive(&core, f, sizeof(f)), sizeof(f));
    CHECK_EQ(fake.irqs[RX_VEC], 3);
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_int_tx(void)
{
    uint8_t f[64];

    setup();
    tx_setup_at(TXQ, 8);
    eth_frame(f, peer_mac, sizeof(f), 15);
    wr(QRDMA_REG_LAN_INT_CTRL, VECS | QRDMA_LAN_INT_TX_ARM | QRDMA_LAN_INT_RX_ARM);
    tx_post(f, sizeof(f), 1);
    tx_post(f, sizeof(f), 1);
    tx_kick();
    CHECK_EQ(fake.frames_sent, 2);
    CHECK_EQ(fake.irqs[TX_VEC], 1);                 /* one per run, not per frame */
    CHECK_EQ(fake.irqs[RX_VEC], 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_INT_CTRL), VECS | QRDMA_LAN_INT_RX_ARM);
    CHECK_EQ(rd(QRDMA_REG_LAN_INT_CAUSE), QRDMA_LAN_INT_CAUSE_TX);
    tx_post(f, sizeof(f), 1);
    tx_kick();
    CHECK_EQ(fake.irqs[TX_VEC], 1);
    wr(QRDMA_REG_LAN_INT_CTRL, VECS | QRDMA_LAN_INT_TX_ARM);
    CHECK_EQ(fake.irqs[TX_VEC], 2);
    CHECK_EQ(rd(QRDMA_REG_LAN_INT_CAUSE), QRDMA_LAN_INT_CAUSE_TX);
    /* A run with nothing to do does not interrupt. */
    wr(QRDMA_REG_LAN_INT_CTRL, VECS | QRDMA_LAN_INT_TX_ARM);
    qrdma_core_run(&core, QRDMA_WORK_LAN_TX);
    CHECK_EQ(fake.irqs[TX_VEC], 2);
    /* A bad frame is a completion too. */
    tx_post_raw(TXBUF, 0 | EOP);
    tx_kick();
    CHECK_EQ(fake.irqs[TX_VEC], 3);
    CHECK_EQ(desc_cmd(TXQ, 3), EOP | DD | ERR);
}

static void test_int_bad_vector(void)
{
    setup();
    wr(QRDMA_REG_LAN_INT_CTRL, 8 | 8 << 8);         /* the last of 9 vectors */
    CHECK_EQ(rd(QRDMA_REG_LAN_INT_CTRL), 8 | 8 << 8);
    CHECK_EQ(fake.guest_errors, 0);
    wr(QRDMA_REG_LAN_INT_CTRL, 9 | QRDMA_LAN_INT_RX_ARM);
    CHECK_EQ(fake.guest_errors, 1);
    CHECK_STR_CONTAINS(fake.last_error, "beyond the 9 MSI-X vectors");
    wr(QRDMA_REG_LAN_INT_CTRL, 200 << 8);
    CHECK_EQ(fake.guest_errors, 2);
    wr(QRDMA_REG_LAN_INT_CTRL, 1u << 18);           /* reserved bit */
    CHECK_EQ(fake.guest_errors, 3);
    CHECK_EQ(rd(QRDMA_REG_LAN_INT_CTRL), 8 | 8 << 8);
}

/* ---- reset and counters ------------------------------------------------- */

static void test_reset(void)
{
    uint8_t f[64];
    uint32_t off;

    setup();
    tx_setup_at(TXQ, 8);
    rx_setup(8);
    lan_ctrl_set(QRDMA_LAN_CTRL_PROMISC | QRDMA_LAN_CTRL_BROADCAST);
    wr(QRDMA_REG_LAN_MTU, 9000);
    wr(QRDMA_REG_LAN_MAC_LOW, 0x01020304);
    wr(QRDMA_REG_LAN_MC_HASH_LOW, 0xffffffffu);
    wr(QRDMA_REG_LAN_INT_CTRL, VECS | QRDMA_LAN_INT_RX_ARM);
    eth_frame(f, own_mac, sizeof(f), 16);
    tx_post(f, sizeof(f), 1);
    tx_kick();
    rx_post(3, RX_BUF_LEN);
    CHECK_EQ(qrdma_core_lan_receive(&core, f, sizeof(f)), sizeof(f));
    CHECK_EQ(qrdma_core_lan_receive(&core, f, 5), 5);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_FRAMES), 1);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FRAMES), 1);

    wr(QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    CHECK_EQ(rd(QRDMA_REG_LAN_CTRL), 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_MTU), 1500);
    CHECK_EQ(rd(QRDMA_REG_LAN_MAC_LOW), 0x12005452);
    CHECK_EQ(rd(QRDMA_REG_LAN_MAC_HIGH), 0x5634);
    CHECK_EQ(rd(QRDMA_REG_LAN_MC_HASH_LOW), 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_INT_CTRL), 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_INT_CAUSE), 0);
    for (off = QRDMA_REG_LAN_TXQ_BASE_LOW; off <= QRDMA_REG_LAN_RXQ_HEAD; off += 4) {
        if (qrdma_core_reg_name(off)) {
            CHECK_EQ(rd(off), 0);
        }
    }
    for (off = QRDMA_REG_LAN_STAT_FIRST; off <= QRDMA_REG_LAN_STAT_LAST; off += 4) {
        CHECK_EQ(rd(off), 0);
    }
    CHECK_EQ(fake.guest_errors, 0);
    /* The rings are gone: a tail write is out of range, frames are dropped. */
    wr(QRDMA_REG_LAN_TXQ_TAIL, 0);
    CHECK_EQ(fake.guest_errors, 1);
    CHECK(qrdma_core_lan_can_receive(&core));
    CHECK_EQ(qrdma_core_lan_receive(&core, f, sizeof(f)), sizeof(f));
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_DROPPED), 1);
}

static void test_counters(void)
{
    uint8_t f[1518];
    uint32_t tx_bytes = 0, rx_bytes = 0, i;

    memset(f, 0xee, sizeof(f));
    setup();
    tx_setup_at(TXQ, 16);
    rx_setup(16);
    rx_post(15, RX_BUF_LEN);
    for (i = 0; i < 5; i++) {
        size_t len = 64 + i * 301;

        eth_frame(f, own_mac, len, (uint8_t)i);
        tx_post(f, len, 1 + i % 3);
        tx_bytes += len;
        CHECK_EQ(qrdma_core_lan_receive(&core, f, len + 10), len + 10);
        rx_bytes += len + 10;
    }
    tx_kick();
    eth_frame(f, other_mac, 64, 0);
    CHECK_EQ(qrdma_core_lan_receive(&core, f, 64), 64);     /* filtered */
    CHECK_EQ(qrdma_core_lan_receive(&core, f, 10), 10);     /* runt */
    CHECK_EQ(fake.frames_sent, 5);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_FRAMES), 5);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_BYTES), tx_bytes);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_ERRORS), 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FRAMES), 5);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_BYTES), rx_bytes);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_ERRORS), 1);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_FILTERED), 1);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_RX_DROPPED), 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_ROCE_FRAMES), 0);
    /* Counters are read-only. */
    wr(QRDMA_REG_LAN_STAT_TX_FRAMES, 0);
    CHECK_EQ(rd(QRDMA_REG_LAN_STAT_TX_FRAMES), 5);
    CHECK_EQ(fake.guest_errors, 1);
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_ring_programming),
    UNIT_TEST(test_ring_bad_values),
    UNIT_TEST(test_ring_cfg_while_enabled),
    UNIT_TEST(test_tail_out_of_range),
    UNIT_TEST(test_mtu_register),
    UNIT_TEST(test_tx_single_and_gather),
    UNIT_TEST(test_tx_batches_wrap),
    UNIT_TEST(test_tx_waits_for_eop),
    UNIT_TEST(test_tx_netdev_full),
    UNIT_TEST(test_tx_disabled),
    UNIT_TEST(test_tx_zero_length_fragment),
    UNIT_TEST(test_tx_oversize),
    UNIT_TEST(test_tx_buffer_outside_ram),
    UNIT_TEST(test_tx_ring_outside_ram),
    UNIT_TEST(test_tx_too_many_fragments),
    UNIT_TEST(test_tx_ring_full_without_eop),
    UNIT_TEST(test_tx_checksum_offload),
    UNIT_TEST(test_rx_deliver_and_wrap),
    UNIT_TEST(test_rx_no_buffer),
    UNIT_TEST(test_rx_backlog),
    UNIT_TEST(test_rx_disabled),
    UNIT_TEST(test_rx_bad_frame_length),
    UNIT_TEST(test_rx_bad_buffers_skipped),
    UNIT_TEST(test_rx_buffer_too_short),
    UNIT_TEST(test_filter_unicast),
    UNIT_TEST(test_filter_broadcast_multicast),
    UNIT_TEST(test_filter_promisc),
    UNIT_TEST(test_roce_split),
    UNIT_TEST(test_int_rx),
    UNIT_TEST(test_int_tx),
    UNIT_TEST(test_int_bad_vector),
    UNIT_TEST(test_reset),
    UNIT_TEST(test_counters),
};

int main(void)
{
    return unit_run("core-lan", tests, sizeof(tests) / sizeof(tests[0]));
}
