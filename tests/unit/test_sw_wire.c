/*
 * Unit tests of the software RoCEv2 engine's wire format: the ICRC against
 * two published vectors (a CNP captured from a ConnectX-4 Lx, and the UC
 * SEND of scapy's RoCE layer tests) and against a bitwise reference
 * written here apart from the engine's, with each CRC implementation the
 * CPU has forced in turn; the IPv4/IPv6/UDP/BTH fields and
 * extended headers of the frames the engine emits; and frames that are
 * truncated, malformed, corrupted or not for us, dropped and counted, plus
 * a deterministic mutation run that must not crash.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <stdlib.h>

#include "sw_int.h"
#include "sw_testbed.h"
#include "unit.h"

int unit_failures;

/* ---- an independent reference: bitwise CRC32 and hand-made masking (Annex A17.3.3) ---- */

static uint32_t ref_crc32(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) {
            crc = crc & 1 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
        }
    }
    return crc;
}

/* The ICRC over an IP packet without its last 4 bytes (l3_len), computed bit by bit. */
static uint32_t ref_icrc_l3(const uint8_t *ip, size_t l3_len, bool v6)
{
    size_t hl = v6 ? 40 : 20;
    uint8_t *buf = malloc(8 + l3_len);
    uint32_t crc;

    memset(buf, 0xff, 8);
    memcpy(buf + 8, ip, l3_len);
    if (v6) {
        buf[8 + 0] |= 0x0f;                 /* traffic class and flow label ones */
        buf[8 + 1] = buf[8 + 2] = buf[8 + 3] = 0xff;
        buf[8 + 7] = 0xff;                  /* hop limit */
    } else {
        buf[8 + 1] = 0xff;                  /* TOS */
        buf[8 + 8] = 0xff;                  /* TTL */
        buf[8 + 10] = buf[8 + 11] = 0xff;   /* header checksum */
    }
    buf[8 + hl + 6] = buf[8 + hl + 7] = 0xff;   /* UDP checksum */
    buf[8 + hl + 8 + 4] = 0xff;                 /* BTH resv8a */
    crc = ~ref_crc32(0xffffffffu, buf, 8 + l3_len);
    free(buf);
    return crc;
}

/* The ICRC of a frame, recomputed from scratch; the stored one is the 4 bytes at the end of IP. */
static uint32_t ref_icrc(const uint8_t *frame, size_t *icrc_at)
{
    const uint8_t *ip = frame + 14;
    bool v6 = frame[12] == 0x86;
    size_t iplen = v6 ? 40u + (ip[4] << 8 | ip[5]) : (size_t)(ip[2] << 8 | ip[3]);

    *icrc_at = 14 + iplen - 4;
    return ref_icrc_l3(ip, iplen - 4, v6);
}

static uint32_t stored_icrc(const uint8_t *f, size_t at)
{
    return (uint32_t)f[at] | (uint32_t)f[at + 1] << 8 | (uint32_t)f[at + 2] << 16 |
           (uint32_t)f[at + 3] << 24;
}

static void fix_icrc(uint8_t *f)
{
    size_t at;
    uint32_t c = ref_icrc(f, &at);

    f[at] = (uint8_t)c;
    f[at + 1] = (uint8_t)(c >> 8);
    f[at + 2] = (uint8_t)(c >> 16);
    f[at + 3] = (uint8_t)(c >> 24);
}

static uint16_t ref_csum(const uint8_t *p, size_t n, uint32_t sum)
{
    for (size_t i = 0; i + 1 < n; i += 2) {
        sum += (uint32_t)p[i] << 8 | p[i + 1];
    }
    if (n & 1) {
        sum += (uint32_t)p[n - 1] << 8;
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)~sum;
}

/* ---- published vectors ----------------------------------------------------------------- */

static void test_icrc_vectors(void)
{
    /* A RoCEv2 CNP captured on a ConnectX-4 Lx (published with scapy's RoCE tests). */
    static const uint8_t cnp[] = {
        0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0x08, 0x00, 0x45, 0xc2,
        0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00, 0x11, 0x01, 0x0a, 0x00,
        0x12, 0x01, 0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x81, 0x00, 0xff, 0xff, 0x40, 0x00,
        0x01, 0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x82, 0xfd, 0x00, 0x2a,
    };
    /* scapy's example UC SEND ONLY: IPv4 TOS 1, ID 1144, DF, TTL 64; UDP checksum 0xaca2; ICRC 78 f3 53 f3 */
    static const uint8_t uc[] = {
        0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22, 0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22, 0x08, 0x00,
        0x45, 0x01, 0x00, 0x40, 0x04, 0x78, 0x40, 0x00, 0x40, 0x11, 0xb4, 0xd5, 192, 168, 0, 7,
        192, 168, 0, 7,
        0xc0, 0x00, 0x12, 0xb7, 0x00, 0x2c, 0xac, 0xa2,
        0x24, 0x60, 0xff, 0xff, 0x00, 0x00, 0x00, 211, 0x00, 0xcf, 0x17, 0x10,
        'F', '0', 0x81, 0x8b, 0xe2, 0x89, '5', 0xd9, 0x0e, 0x9a, 0x95, 'P', 'T', 0x01, 0xbe, 0x88,
        '^', 'P', 0x00, 0x00,
        0x78, 0xf3, 0x53, 0xf3,
    };
    static uint32_t tab[8][256];
    size_t at;

    qsw_crc32_init(tab);
    /* with each CRC implementation this CPU has, the fastest last */
    for (int i = 0; i < QSW_CRC_NIMPL; i++) {
        if (qsw_crc32_select(i) != 0) {
            continue;
        }
        CHECK_EQ(qsw_icrc((const uint32_t (*)[256])tab, cnp + 14, sizeof(cnp) - 14 - 4, false),
                 stored_icrc(cnp, sizeof(cnp) - 4));
        CHECK_EQ(qsw_icrc((const uint32_t (*)[256])tab, uc + 14, sizeof(uc) - 14 - 4, false),
                 stored_icrc(uc, sizeof(uc) - 4));
    }
    CHECK_EQ(ref_icrc(cnp, &at), stored_icrc(cnp, sizeof(cnp) - 4));
    CHECK_EQ(at, sizeof(cnp) - 4);
    CHECK_EQ(ref_icrc(uc, &at), 0xf353f378u);
    CHECK_EQ(ref_csum(uc + 14, 20, 0), 0);
}

/* ---- each CRC implementation against the bitwise reference ------------------------------ */

static uint64_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 16;
}

/* x^n mod P(x) by shifting, reflected, times x (33 bits): what the folding constants must be. */
static uint64_t ref_xpow(unsigned n)
{
    uint32_t r = 0x80000000u;           /* x^0: bit 31 holds the coefficient of x^0 */

    while (n--) {
        r = r & 1 ? (r >> 1) ^ 0xedb88320u : r >> 1;
    }
    return (uint64_t)r << 1;
}

static void test_crc_constants(void)
{
    CHECK(qsw_crc_nxpow >= 10);
    for (size_t i = 0; i < qsw_crc_nxpow; i++) {
        CHECK_EQ(qsw_crc_xpow[i].k, ref_xpow(qsw_crc_xpow[i].n));
    }
    /* the reference itself: x^32 mod P is P without its x^32 term */
    CHECK_EQ(ref_xpow(32), (uint64_t)0xedb88320u << 1);
    CHECK_EQ(ref_xpow(31), 1ull << 1);
}

/* The CRC implementations this CPU and build have, the forced one in use for each. */
static int crc_impls(enum qsw_crc_impl out[QSW_CRC_NIMPL])
{
    int n = 0;

    for (int i = 0; i < QSW_CRC_NIMPL; i++) {
        if (qsw_crc32_supported(i)) {
            out[n++] = i;
        }
    }
    return n;
}

static void crc_select(enum qsw_crc_impl impl)
{
    CHECK_EQ(qsw_crc32_select(impl), 0);
    CHECK_EQ(qsw_crc32_impl(), impl);
}

/* The fastest one the CPU has: the last supported one. */
static void crc_select_best(void)
{
    enum qsw_crc_impl impls[QSW_CRC_NIMPL];

    crc_select(impls[crc_impls(impls) - 1]);
}

#define CRC_MAX_SHORT 600

static void test_crc_impls(void)
{
    static const uint32_t inits[] = { 0xffffffffu, 0x9abcdef0u, 0 };
    static uint32_t tab[8][256];
    static uint8_t data[CRC_MAX_SHORT];
    static uint32_t ref[CRC_MAX_SHORT + 1];
    enum qsw_crc_impl impls[QSW_CRC_NIMPL];
    int nimpl = crc_impls(impls);
    uint64_t rng = 0xc0ffee;
    uint8_t *big;

    /* before any test chose one: the widest this CPU has */
    CHECK_EQ(qsw_crc32_impl(), impls[nimpl - 1]);
    CHECK_EQ(qsw_crc32_select(QSW_CRC_NIMPL), -ENOTSUP);
    CHECK(qsw_crc32_supported(QSW_CRC_TABLE));
    printf("# CRC32 implementations here:");
    for (int i = 0; i < nimpl; i++) {
        printf(" %s", qsw_crc_impl_name[impls[i]]);
    }
    printf("\n");
    qsw_crc32_init(tab);
    for (size_t i = 0; i < sizeof(data); i++) {
        data[i] = (uint8_t)rng_next(&rng);
    }
    for (int ii = 0; ii < nimpl; ii++) {
        crc_select(impls[ii]);
        /* every length to CRC_MAX_SHORT at every alignment, in a buffer that ends there (ASan) */
        for (size_t c = 0; c < sizeof(inits) / sizeof(inits[0]); c++) {
            ref[0] = inits[c];
            for (size_t n = 1; n <= CRC_MAX_SHORT; n++) {
                ref[n] = ref_crc32(ref[n - 1], data + n - 1, 1);
            }
            for (size_t o = 0; o < 64; o++) {
                int bad = 0;

                for (size_t n = 0; n <= CRC_MAX_SHORT; n++) {
                    uint8_t *b = malloc(o + n + 1);
                    uint32_t got;

                    memcpy(b + o, data, n);
                    got = qsw_crc32_update((const uint32_t (*)[256])tab, inits[c], b + o, n);
                    if (got != ref[n] && !bad++) {
                        fprintf(stderr, "  %s: length %zu at offset %zu, init %08x\n",
                                qsw_crc_impl_name[impls[ii]], n, o, inits[c]);
                        CHECK_EQ(got, ref[n]);
                    }
                    free(b);
                }
                CHECK_EQ(bad, 0);
            }
        }
        /* random long runs, random alignment and initial value */
        for (int it = 0; it < 24; it++) {
            size_t n = CRC_MAX_SHORT + rng_next(&rng) % 70000, o = rng_next(&rng) % 64;
            uint32_t init = (uint32_t)rng_next(&rng);

            big = malloc(o + n);
            for (size_t i = 0; i < n; i++) {
                big[o + i] = (uint8_t)rng_next(&rng);
            }
            CHECK_EQ(qsw_crc32_update((const uint32_t (*)[256])tab, init, big + o, n),
                     ref_crc32(init, big + o, n));
            free(big);
        }
    }
    crc_select_best();
}

/* qsw_icrc (masked headers in a copy, then the rest in place) at every length and alignment. */
static void test_icrc_impls(void)
{
    static uint32_t tab[8][256];
    static uint8_t data[4200];
    static uint32_t ref[2][4200 + 1];
    enum qsw_crc_impl impls[QSW_CRC_NIMPL];
    int nimpl = crc_impls(impls);
    uint64_t rng = 0x1cc;

    qsw_crc32_init(tab);
    for (size_t i = 0; i < sizeof(data); i++) {
        data[i] = (uint8_t)rng_next(&rng);
    }
    /* lengths every byte to 700 and from 4000 to 4200 (MTU 4096 frames) */
    for (int v6 = 0; v6 < 2; v6++) {
        for (size_t n = v6 ? 60 : 40; n <= sizeof(data); n += n == 700 ? 3300 : 1) {
            ref[v6][n] = ref_icrc_l3(data, n, v6);
        }
    }
    for (int ii = 0; ii < nimpl; ii++) {
        crc_select(impls[ii]);
        for (int v6 = 0; v6 < 2; v6++) {
            for (size_t o = 0; o < 64; o += o < 16 ? 1 : 7) {
                int bad = 0;

                for (size_t n = v6 ? 60 : 40; n <= sizeof(data); n += n == 700 ? 3300 : 1) {
                    uint8_t *b = malloc(o + n);
                    uint32_t got;

                    memcpy(b + o, data, n);
                    got = qsw_icrc((const uint32_t (*)[256])tab, b + o, n, v6);
                    if (got != ref[v6][n] && !bad++) {
                        fprintf(stderr, "  %s: ICRC, IPv%d, length %zu at offset %zu\n",
                                qsw_crc_impl_name[impls[ii]], v6 ? 6 : 4, n, o);
                        CHECK_EQ(got, ref[v6][n]);
                    }
                    CHECK(memcmp(b + o, data, n) == 0);     /* the packet is left as it was */
                    free(b);
                }
                CHECK_EQ(bad, 0);
            }
        }
    }
    crc_select_best();
}

/* ---- what the engine emits --------------------------------------------------------------- */

#define MAXF 64

struct capture {
    unsigned n;
    size_t len[MAXF];
    uint8_t f[MAXF][4400];
};

static bool capture_fn(struct tb *tb, int from, uint8_t *f, size_t *len, void *arg)
{
    struct capture *c = arg;

    if (c->n < MAXF) {
        memcpy(c->f[c->n], f, *len);
        c->len[c->n++] = *len;
    }
    return false;
}

struct pair {
    struct tb *tb;
    struct qsw_qp *a, *b;
    uint32_t ka, kb;
};

static void pair_setup_tb(struct pair *p, struct tb *tb, enum qsw_mtu mtu, struct capture *cap)
{
    struct tb_conn c = { .mtu = mtu, .psn_a = 0x123456, .psn_b = 0xabcdef, .retry_cnt = 7,
                         .rnr_retry = 7 };

    p->tb = tb;
    p->a = tb_qp(&p->tb->node[0], 0x51, QSW_QPT_RC, 1, 64);
    p->b = tb_qp(&p->tb->node[1], 0x62, QSW_QPT_RC, 1, 64);
    p->ka = tb_reg_mr(&p->tb->node[0], 1, 0, TB_MEM_SIZE, 0xf);
    p->kb = tb_reg_mr(&p->tb->node[1], 1, 0, TB_MEM_SIZE, 0xf);
    CHECK_EQ(tb_connect(p->tb, p->a, p->b, &c), 0);
    p->tb->tap = capture_fn;
    p->tb->tap_arg = cap;
}

static void pair_setup(struct pair *p, bool ipv6, enum qsw_mtu mtu, struct capture *cap)
{
    pair_setup_tb(p, tb_new(ipv6), mtu, cap);
}

static void check_frame_common(const uint8_t *f, size_t len, bool v6, const struct tb *tb, int from)
{
    const uint8_t *ip = f + 14, *udp = ip + (v6 ? 40 : 20), *bth = udp + 8;
    size_t at;

    CHECK(len >= 60);
    CHECK(memcmp(f, tb->node[1 - from].mac, 6) == 0);
    CHECK(memcmp(f + 6, tb->node[from].mac, 6) == 0);
    if (v6) {
        uint32_t iplen = 40u + (ip[4] << 8 | ip[5]);
        uint32_t sum = (uint32_t)(iplen - 40) + 17;

        CHECK_EQ(f[12] << 8 | f[13], 0x86dd);
        CHECK_EQ(ip[0] >> 4, 6);
        CHECK_EQ(ip[6], 17);
        CHECK_EQ(ip[7], 64);
        CHECK(memcmp(ip + 8, tb->node[from].gid, 16) == 0);
        CHECK(memcmp(ip + 24, tb->node[1 - from].gid, 16) == 0);
        for (int i = 0; i < 32; i += 2) {
            sum += (uint32_t)ip[8 + i] << 8 | ip[9 + i];
        }
        CHECK(udp[6] || udp[7]);
        CHECK_EQ(ref_csum(udp, iplen - 40, sum), 0);    /* a valid UDP checksum */
    } else {
        CHECK_EQ(f[12] << 8 | f[13], 0x0800);
        CHECK_EQ(ip[0], 0x45);
        CHECK_EQ(ip[6] << 8 | ip[7], 0x4000);           /* DF, no fragment */
        CHECK_EQ(ip[8], 64);
        CHECK_EQ(ip[9], 17);
        CHECK_EQ(ref_csum(ip, 20, 0), 0);
        CHECK(memcmp(ip + 12, tb->node[from].gid + 12, 4) == 0);
        CHECK(memcmp(ip + 16, tb->node[1 - from].gid + 12, 4) == 0);
        CHECK_EQ(udp[6] << 8 | udp[7], 0);              /* no UDP checksum over IPv4 */
        CHECK_EQ((size_t)(ip[2] << 8 | ip[3]) + 14 <= len, 1);
    }
    CHECK_EQ(udp[2] << 8 | udp[3], 4791);
    CHECK((udp[0] << 8 | udp[1]) >= 0xc000);
    CHECK_EQ(bth[1] & 0x4f, 0);                         /* M 0, TVer 0 */
    CHECK_EQ(bth[2] << 8 | bth[3], 0xffff);
    CHECK_EQ(bth[4], 0);
    CHECK_EQ(bth[8] & 0x7f, 0);
    CHECK_EQ(ref_icrc(f, &at), stored_icrc(f, at));
}

static void test_frames_emitted(void)
{
    for (int v6 = 0; v6 < 2; v6++) {
        static struct capture cap;
        struct pair p;
        struct qsw_send_wr wr;
        uint64_t v = 5;

        memset(&cap, 0, sizeof(cap));
        pair_setup(&p, v6, QSW_MTU_256, &cap);
        memcpy(p.tb->node[1].mem + 4096, &v, 8);
        tb_post_recv(p.b, 1, tb_va(8192), 1000, p.kb);
        tb_post_recv(p.b, 2, tb_va(8192), 1000, p.kb);
        /* SEND_WITH_IMM of 301 bytes: FIRST (256) + LAST_IMM (45 + pad 3) */
        wr = tb_wr(1, QSW_WR_SEND_WITH_IMM, QSW_SEND_SIGNALED | QSW_SEND_SOLICITED);
        tb_wr_sge(&wr, tb_va(0), 301, p.ka);
        wr.imm_data = 0xaabbccdd;
        CHECK_EQ(qsw_post_send(p.a, &wr), 0);
        CHECK(tb_run_wcs(p.tb, 0, 1, 1000000000ull));
        /* RDMA WRITE ONLY with IMM, READ, FETCH_ADD, CMP_SWAP */
        wr = tb_wr(2, QSW_WR_RDMA_WRITE_WITH_IMM, QSW_SEND_SIGNALED);
        tb_wr_sge(&wr, tb_va(0), 10, p.ka);
        wr.rdma.remote_addr = tb_va(12288);
        wr.rdma.rkey = p.kb;
        wr.imm_data = 0x11223344;
        CHECK_EQ(qsw_post_send(p.a, &wr), 0);
        CHECK(tb_run_wcs(p.tb, 0, 2, 1000000000ull));
        wr = tb_wr(3, QSW_WR_RDMA_READ, QSW_SEND_SIGNALED);
        tb_wr_sge(&wr, tb_va(0), 20, p.ka);
        wr.rdma.remote_addr = tb_va(12288);
        wr.rdma.rkey = p.kb;
        CHECK_EQ(qsw_post_send(p.a, &wr), 0);
        CHECK(tb_run_wcs(p.tb, 0, 3, 1000000000ull));
        wr = tb_wr(4, QSW_WR_ATOMIC_CMP_AND_SWP, QSW_SEND_SIGNALED);
        tb_wr_sge(&wr, tb_va(64), 8, p.ka);
        wr.atomic.remote_addr = tb_va(4096);
        wr.atomic.rkey = p.kb;
        wr.atomic.compare_add = 5;
        wr.atomic.swap = 0x0102030405060708ull;
        CHECK_EQ(qsw_post_send(p.a, &wr), 0);
        CHECK(tb_run_wcs(p.tb, 0, 4, 1000000000ull));
        CHECK(tb_run_idle(p.tb, 1000000000ull));

        for (unsigned i = 0; i < cap.n; i++) {
            check_frame_common(cap.f[i], cap.len[i], v6, p.tb, cap.f[i][5] == 1 ? 1 : 0);
        }
        {
            size_t o = 14 + (v6 ? 40 : 20) + 8;     /* BTH offset */
            const uint8_t *b;

            /* frame 0: SEND FIRST, PSN 0x123456, dest QP 0x62, no AckReq */
            CHECK_EQ(cap.n, 9);
            b = cap.f[0] + o;
            CHECK_EQ(b[0], 0x00);
            CHECK_EQ(b[5] << 16 | b[6] << 8 | b[7], 0x62);
            CHECK_EQ(b[9] << 16 | b[10] << 8 | b[11], 0x123456);
            CHECK_EQ(b[8], 0);
            CHECK_EQ((b[1] >> 4) & 3, 0);
            /* frame 1: SEND LAST with IMM: SE, pad 3, AckReq, ImmDt, zero pad bytes */
            b = cap.f[1] + o;
            CHECK_EQ(b[0], 0x03);
            CHECK_EQ(b[1] & 0x80, 0x80);
            CHECK_EQ((b[1] >> 4) & 3, 3);
            CHECK_EQ(b[8], 0x80);
            CHECK_EQ(b[9] << 16 | b[10] << 8 | b[11], 0x123457);
            CHECK_EQ(ld32(b + 12), 0xddccbbaa);     /* imm_data was given in network order */
            CHECK(b[16 + 45] == 0 && b[16 + 46] == 0 && b[16 + 47] == 0);
            /* frame 2: the ACK from b: opcode 0x11, AETH ACK with invalid credit count, MSN 1 */
            b = cap.f[2] + o;
            CHECK_EQ(b[0], 0x11);
            CHECK_EQ(b[5] << 16 | b[6] << 8 | b[7], 0x51);
            CHECK_EQ(b[9] << 16 | b[10] << 8 | b[11], 0x123457);
            CHECK_EQ(b[12], 0x1f);
            CHECK_EQ(b[13] << 16 | b[14] << 8 | b[15], 1);
            /* frame 3: WRITE ONLY with IMM: RETH then ImmDt */
            b = cap.f[3] + o;
            CHECK_EQ(b[0], 0x0b);
            CHECK_EQ(ld64(b + 12), tb_va(12288));
            CHECK_EQ(ld32(b + 20), p.kb);
            CHECK_EQ(ld32(b + 24), 10);
            CHECK_EQ(ld32(b + 28), 0x44332211);
            /* frame 5: READ request with RETH; frame 6: READ RESPONSE ONLY with AETH */
            b = cap.f[5] + o;
            CHECK_EQ(b[0], 0x0c);
            CHECK_EQ(ld32(b + 24), 20);
            b = cap.f[6] + o;
            CHECK_EQ(b[0], 0x10);
            CHECK_EQ(b[12], 0x1f);
            /* frame 7: CMP_SWAP with AtomicETH: VA, R_Key, swap, compare */
            b = cap.f[7] + o;
            CHECK_EQ(b[0], 0x13);
            CHECK_EQ(ld64(b + 12), tb_va(4096));
            CHECK_EQ(ld32(b + 20), p.kb);
            CHECK_EQ(ld64(b + 24), 0x0102030405060708ull);
            CHECK_EQ(ld64(b + 32), 5);
            /* frame 8: ATOMIC ACKNOWLEDGE: AETH and the original value */
            b = cap.f[8] + o;
            CHECK_EQ(b[0], 0x12);
            CHECK_EQ(ld64(b + 16), 5);
        }
        tb_free(p.tb);
    }
}

/* IPv4 TOS/TTL/flow label from the address vector; IPv6 traffic class and flow label. */
static void test_av_fields(void)
{
    for (int v6 = 0; v6 < 2; v6++) {
        static struct capture cap;
        struct pair p;
        struct qsw_qp_attr a;
        struct qsw_send_wr wr;
        const uint8_t *ip;
        size_t at;

        memset(&cap, 0, sizeof(cap));
        pair_setup(&p, v6, QSW_MTU_1024, &cap);
        qsw_qp_query(p.a, &a);
        a.av.traffic_class = 0x6a;
        a.av.hop_limit = 9;
        a.av.flow_label = 0xabcde;
        CHECK_EQ(qsw_qp_modify(p.a, &a, QSW_QP_AV), 0);
        wr = tb_wr(1, QSW_WR_RDMA_WRITE, QSW_SEND_SIGNALED);
        wr.rdma.remote_addr = tb_va(0);
        wr.rdma.rkey = p.kb;
        CHECK_EQ(qsw_post_send(p.a, &wr), 0);       /* zero-length WRITE */
        CHECK(tb_run_wcs(p.tb, 0, 1, 1000000000ull));
        CHECK_EQ(p.tb->node[0].wc[0].status, 0);
        ip = cap.f[0] + 14;
        if (v6) {
            CHECK_EQ(ld32(ip), 6u << 28 | 0x6au << 20 | 0xabcde);
            CHECK_EQ(ip[7], 9);
        } else {
            CHECK_EQ(ip[1], 0x6a);
            CHECK_EQ(ip[8], 9);
        }
        /* the UDP source port folds the flow label into 0xC000-0xFFFF */
        CHECK_EQ(ld16(ip + (v6 ? 40 : 20)), 0xc000 | ((0xabcde & 0x3fff) ^ (0xabcde >> 14)));
        CHECK_EQ(ref_icrc(cap.f[0], &at), stored_icrc(cap.f[0], at));
        tb_free(p.tb);
    }
}

/* ---- what the engine drops ----------------------------------------------------------------- */

static void test_malformed(void)
{
    static struct capture cap;
    static uint8_t f[4400];
    struct pair p;
    struct qsw_send_wr wr;
    struct qsw_stats st0, st;
    struct qsw_engine *eng;
    size_t len, o = 14 + 20 + 8;

    memset(&cap, 0, sizeof(cap));
    pair_setup(&p, false, QSW_MTU_1024, &cap);
    eng = p.tb->node[1].eng;
    wr = tb_wr(1, QSW_WR_RDMA_WRITE, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(0), 100, p.ka);
    wr.rdma.remote_addr = tb_va(0);
    wr.rdma.rkey = p.kb;
    CHECK_EQ(qsw_post_send(p.a, &wr), 0);
    CHECK(tb_run_wcs(p.tb, 0, 1, 1000000000ull));
    CHECK(tb_run_idle(p.tb, 1000000000ull));
    len = cap.len[0];                           /* a WRITE ONLY, already delivered once */
    p.tb->tap = NULL;

#define RX_EXPECT(field, mutate)                                                        \
    do {                                                                                \
        memcpy(f, cap.f[0], len);                                                       \
        mutate;                                                                         \
        qsw_engine_stats(eng, &st0);                                                    \
        qsw_rx_frame(eng, f, flen);                                                     \
        qsw_engine_stats(eng, &st);                                                     \
        CHECK_EQ(st.field - st0.field, 1);                                              \
    } while (0)
    {
        size_t flen = len;

        RX_EXPECT(drop_icrc, f[o + 30] ^= 1);                       /* payload bit */
        RX_EXPECT(drop_icrc, f[len - 1] ^= 0x80);                   /* the ICRC itself */
        RX_EXPECT(drop_not_roce, f[0] ^= 1);                        /* not our MAC */
        RX_EXPECT(drop_not_roce, (f[12] = 0x88, f[13] = 0x8e));     /* not IP */
        RX_EXPECT(drop_not_roce, (f[14 + 9] = 6, fix_icrc(f)));     /* TCP */
        RX_EXPECT(drop_not_roce, (f[14 + 22] = 0x12, f[14 + 23] = 0xb8)); /* UDP 4792 */
        RX_EXPECT(drop_malformed, f[14 + 11] ^= 1);                 /* IP header checksum */
        RX_EXPECT(drop_malformed, (f[o] = 0x15, fix_icrc(f)));      /* reserved opcode */
        RX_EXPECT(drop_malformed, (f[o] = 0xff, fix_icrc(f)));
        RX_EXPECT(drop_malformed, (f[o + 1] |= 1, fix_icrc(f)));    /* TVer 1 */
        RX_EXPECT(drop_malformed, (f[o + 2] = 0x12, fix_icrc(f)));  /* another partition */
        RX_EXPECT(drop_unknown_qp, (f[o + 7] = 0x77, fix_icrc(f))); /* no such QP */
        RX_EXPECT(drop_bad_state, (f[o] = 0x2a, fix_icrc(f)));      /* UC opcode to an RC QP */
        RX_EXPECT(drop_addr, (f[14 + 15] = 9,                       /* another source IP */
                              f[14 + 10] = f[14 + 11] = 0,
                              st16(f + 24, ref_csum(f + 14, 20, 0)), fix_icrc(f)));
    }
    {
        /* a WRITE ONLY whose pad count exceeds its payload: build a zero-length one */
        size_t flen;
        uint8_t *ip = f + 14;

        memcpy(f, cap.f[0], len);
        flen = 14 + 20 + 8 + 28 + 4;
        st16(ip + 2, 20 + 8 + 28 + 4);
        st16(ip + 10, 0);
        st16(ip + 10, ref_csum(ip, 20, 0));
        st16(ip + 24, 8 + 28 + 4);
        f[o + 1] = 3 << 4;
        fix_icrc(f);
        qsw_engine_stats(eng, &st0);
        qsw_rx_frame(eng, f, flen < 60 ? 60 : flen);
        qsw_engine_stats(eng, &st);
        CHECK_EQ(st.drop_malformed - st0.drop_malformed, 1);
        /* the same with pad 0 is a valid zero-length WRITE (a duplicate now) */
        f[o + 1] = 0;
        fix_icrc(f);
        qsw_rx_frame(eng, f, flen);
        qsw_engine_stats(eng, &st0);
        CHECK_EQ(st0.drop_malformed, st.drop_malformed);
        CHECK_EQ(st0.duplicates - st.duplicates, 1);
    }
    /* every truncation is dropped without reading past the end */
    {
        qsw_engine_stats(eng, &st0);
        for (size_t n = 0; n < len; n++) {
            uint8_t *t = malloc(n ? n : 1);

            memcpy(t, cap.f[0], n);
            qsw_rx_frame(eng, t, n);
            free(t);
        }
        qsw_engine_stats(eng, &st);
        CHECK_EQ((st.drop_not_roce + st.drop_malformed + st.drop_icrc) -
                 (st0.drop_not_roce + st0.drop_malformed + st0.drop_icrc), len);
        CHECK_EQ(st.duplicates, st0.duplicates);
    }
    CHECK_EQ(qsw_qp_state(p.b), QSW_QPS_RTS);
    CHECK_EQ(p.tb->node[1].nwc, 0);
    tb_free(p.tb);
}

/* Random mutations of valid frames of every kind, with the checksums fixed half of the time. */
static void test_mutations(void)
{
    static struct capture cap;
    static uint8_t f[4400];
    struct pair p;
    struct qsw_send_wr wr;
    uint64_t rng = 0x1234567;
    struct qsw_stats st;

    memset(&cap, 0, sizeof(cap));
    pair_setup(&p, false, QSW_MTU_256, &cap);
    tb_post_recv(p.b, 1, tb_va(8192), 1000, p.kb);
    wr = tb_wr(1, QSW_WR_SEND_WITH_IMM, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(0), 600, p.ka);
    CHECK_EQ(qsw_post_send(p.a, &wr), 0);
    wr = tb_wr(2, QSW_WR_RDMA_READ, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(0), 600, p.ka);
    wr.rdma.remote_addr = tb_va(0);
    wr.rdma.rkey = p.kb;
    CHECK_EQ(qsw_post_send(p.a, &wr), 0);
    wr = tb_wr(3, QSW_WR_ATOMIC_FETCH_AND_ADD, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(0), 8, p.ka);
    wr.atomic.remote_addr = tb_va(0);
    wr.atomic.rkey = p.kb;
    CHECK_EQ(qsw_post_send(p.a, &wr), 0);
    CHECK(tb_run_wcs(p.tb, 0, 3, 1000000000ull));
    p.tb->tap = NULL;
    for (int it = 0; it < 20000; it++) {
        unsigned k = (unsigned)(rng % cap.n);
        size_t len = cap.len[k];
        int nmut;

        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        nmut = 1 + (int)((rng >> 33) % 4);
        memcpy(f, cap.f[k], len);
        for (int m = 0; m < nmut; m++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            f[14 + (rng >> 33) % (len - 14)] ^= (uint8_t)(rng >> 20);
        }
        if (rng & (1ull << 40)) {
            len -= (rng >> 41) % 64 < len - 14 ? (rng >> 41) % 64 : 0;
        }
        if (rng & (1ull << 50) && len >= 14 + 20 + 8 + 12 + 4 && f[12] == 8 && f[13] == 0 &&
            (size_t)(f[16] << 8 | f[17]) + 14 <= len && (f[16] << 8 | f[17]) >= 44) {
            f[14] = 0x45;
            f[24] = f[25] = 0;
            st16(f + 24, ref_csum(f + 14, 20, 0));
            fix_icrc(f);
        }
        qsw_rx_frame(p.tb->node[cap.f[k][5] == 2 ? 1 : 0].eng, f, len);
        qsw_engine_poll(p.tb->node[0].eng, 16);
        qsw_engine_poll(p.tb->node[1].eng, 16);
    }
    qsw_engine_stats(p.tb->node[1].eng, &st);
    CHECK(st.drop_icrc > 1000);
    CHECK(st.drop_malformed > 1000);
    CHECK(st.drop_unknown_qp > 10);
    tb_free(p.tb);
}

static void test_zero_copy_frames(void);

/* The engine's frames and drops with each CRC implementation, not only the fastest. */
static void test_engine_each_crc(void)
{
    enum qsw_crc_impl impls[QSW_CRC_NIMPL];
    int nimpl = crc_impls(impls);

    for (int i = 0; i < nimpl; i++) {
        crc_select(impls[i]);
        test_frames_emitted();
        test_malformed();
        test_zero_copy_frames();
    }
    crc_select_best();
}

/*
 * The same work on a pair at path MTU 4096: a SEND of three SGEs (odd
 * lengths and addresses, 10701 bytes: 4096 + 4096 + 2509 mapped, the last
 * with 3 bytes of pad), an RDMA WRITE of 5000 bytes from an odd address (4096 mapped, 904
 * copied), a 1-byte WRITE with immediate (3 bytes of pad) and a READ (its
 * response is copied).
 */
static void zc_work(struct pair *p)
{
    struct qsw_send_wr wr;

    tb_fill(&p->tb->node[0], 0, 65536, 7);
    tb_post_recv(p->b, 1, tb_va(200000), 16384, p->kb);
    tb_post_recv(p->b, 2, tb_va(230000), 16384, p->kb);
    wr = tb_wr(1, QSW_WR_SEND, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(3), 1500, p->ka);
    tb_wr_sge(&wr, tb_va(10001), 6998, p->ka);
    tb_wr_sge(&wr, tb_va(20000), 2203, p->ka);
    CHECK_EQ(qsw_post_send(p->a, &wr), 0);
    wr = tb_wr(2, QSW_WR_RDMA_WRITE, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(777), 5000, p->ka);
    wr.rdma.remote_addr = tb_va(100000);
    wr.rdma.rkey = p->kb;
    CHECK_EQ(qsw_post_send(p->a, &wr), 0);
    wr = tb_wr(3, QSW_WR_RDMA_WRITE_WITH_IMM, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(30001), 1, p->ka);
    wr.rdma.remote_addr = tb_va(110001);
    wr.rdma.rkey = p->kb;
    wr.imm_data = 0x01020304;
    CHECK_EQ(qsw_post_send(p->a, &wr), 0);
    wr = tb_wr(4, QSW_WR_RDMA_READ, QSW_SEND_SIGNALED);
    tb_wr_sge(&wr, tb_va(40000), 3000, p->ka);
    wr.rdma.remote_addr = tb_va(100000);
    wr.rdma.rkey = p->kb;
    CHECK_EQ(qsw_post_send(p->a, &wr), 0);
    CHECK(tb_run_wcs(p->tb, 0, 4, 1000000000ull));
    CHECK(tb_run_idle(p->tb, 1000000000ull));
    for (int i = 1; i <= 4; i++) {
        const struct qsw_wc *wc = tb_find_wc(&p->tb->node[0], (uint64_t)i, false);

        CHECK(wc && wc->status == QSW_WC_SUCCESS);
    }
}

/*
 * Zero-copy transmit: frames whose payload the engine gathers from mapped
 * pieces, the ICRC (and for IPv6 the UDP checksum) computed over the
 * pieces, are byte for byte the frames it builds by copying; a refused
 * map falls back to the copy; every piece goes back; the data arrives.
 */
static void test_zero_copy_frames(void)
{
    for (int v6 = 0; v6 < 2; v6++) {
        for (unsigned refuse = 0; refuse <= 2; refuse += 2) {
            static struct capture copy, zc;
            struct pair pc, pz;
            const uint8_t *a, *b;

            memset(&copy, 0, sizeof(copy));
            memset(&zc, 0, sizeof(zc));
            pair_setup(&pc, v6, QSW_MTU_4096, &copy);
            pair_setup_tb(&pz, tb_new_zero_copy(v6, refuse), QSW_MTU_4096, &zc);
            zc_work(&pc);
            zc_work(&pz);

            CHECK(copy.n >= 8 && copy.n < MAXF);
            CHECK_EQ(zc.n, copy.n);
            for (unsigned i = 0; i < copy.n && i < zc.n; i++) {
                CHECK_EQ(zc.len[i], copy.len[i]);
                CHECK(memcmp(zc.f[i], copy.f[i], copy.len[i]) == 0);
                check_frame_common(zc.f[i], zc.len[i], v6, pz.tb, zc.f[i][5] == 1 ? 1 : 0);
            }
            /* 3 SEND and 1 WRITE packets carry 1 KB or more: mapped, but for every second map refused */
            CHECK_EQ(pz.tb->frames_iov, refuse ? 2 : 4);
            CHECK_EQ(pz.tb->node[0].eng->tx_mapped, pz.tb->frames_iov);
            CHECK(pz.tb->maps > pz.tb->frames_iov);     /* pieces cut at TB_MAP_SPLIT */
            CHECK_EQ(pz.tb->maps_out, 0);
            CHECK_EQ(pc.tb->frames_iov, 0);
            CHECK_EQ(pc.tb->node[0].eng->tx_mapped, 0);
            a = pz.tb->node[0].mem;
            b = pz.tb->node[1].mem;
            CHECK(memcmp(b + 200000, a + 3, 1500) == 0);
            CHECK(memcmp(b + 201500, a + 10001, 6998) == 0);
            CHECK(memcmp(b + 208498, a + 20000, 2203) == 0);
            CHECK(memcmp(b + 100000, a + 777, 5000) == 0);
            CHECK_EQ(b[110001], a[30001]);
            CHECK(memcmp(a + 40000, a + 777, 3000) == 0);
            tb_free(pc.tb);
            tb_free(pz.tb);
        }
    }
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_icrc_vectors),
    UNIT_TEST(test_crc_constants),
    UNIT_TEST(test_crc_impls),
    UNIT_TEST(test_icrc_impls),
    UNIT_TEST(test_frames_emitted),
    UNIT_TEST(test_zero_copy_frames),
    UNIT_TEST(test_av_fields),
    UNIT_TEST(test_malformed),
    UNIT_TEST(test_mutations),
    UNIT_TEST(test_engine_each_crc),
};

int main(void)
{
    return unit_run("test_sw_wire", tests, sizeof(tests) / sizeof(tests[0]));
}
