/*
 * The RoCEv2 wire format of the software engine: the opcode table, CRC32
 * and the ICRC, building a frame in place in the engine's transmit buffer
 * and parsing a received frame with every length checked before use.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdlib.h>

#include "sw_int.h"

/* ---- opcode table (IBTA vol. 1, 9.2 and 9.3) ---- */

#define SEND_F  (M_REQ | M_SEND | M_PAYLOAD)
#define WRITE_F (M_REQ | M_WRITE | M_PAYLOAD)
#define RC_UC_REQUESTS(b)                                                      \
    [(b) + OP_SEND_FIRST]     = SEND_F | M_FIRST,                              \
    [(b) + OP_SEND_MIDDLE]    = SEND_F | M_MIDDLE,                             \
    [(b) + OP_SEND_LAST]      = SEND_F | M_LAST,                               \
    [(b) + OP_SEND_LAST_IMM]  = SEND_F | M_LAST | M_IMM,                       \
    [(b) + OP_SEND_ONLY]      = SEND_F | M_FIRST | M_LAST,                     \
    [(b) + OP_SEND_ONLY_IMM]  = SEND_F | M_FIRST | M_LAST | M_IMM,             \
    [(b) + OP_WRITE_FIRST]    = WRITE_F | M_FIRST | M_RETH,                    \
    [(b) + OP_WRITE_MIDDLE]   = WRITE_F | M_MIDDLE,                            \
    [(b) + OP_WRITE_LAST]     = WRITE_F | M_LAST,                              \
    [(b) + OP_WRITE_LAST_IMM] = WRITE_F | M_LAST | M_IMM,                      \
    [(b) + OP_WRITE_ONLY]     = WRITE_F | M_FIRST | M_LAST | M_RETH,           \
    [(b) + OP_WRITE_ONLY_IMM] = WRITE_F | M_FIRST | M_LAST | M_RETH | M_IMM

const uint32_t qsw_opmask[256] = {
    RC_UC_REQUESTS(0),
    [OP_READ_REQ]         = M_REQ | M_READ | M_FIRST | M_LAST | M_RETH,
    [OP_READ_RESP_FIRST]  = M_RESP | M_READ | M_PAYLOAD | M_FIRST | M_AETH,
    [OP_READ_RESP_MIDDLE] = M_RESP | M_READ | M_PAYLOAD | M_MIDDLE,
    [OP_READ_RESP_LAST]   = M_RESP | M_READ | M_PAYLOAD | M_LAST | M_AETH,
    [OP_READ_RESP_ONLY]   = M_RESP | M_READ | M_PAYLOAD | M_FIRST | M_LAST | M_AETH,
    [OP_ACK]              = M_RESP | M_ACK | M_AETH,
    [OP_ATOMIC_ACK]       = M_RESP | M_ATOMIC | M_AETH | M_ATMACK,
    [OP_CMP_SWAP]         = M_REQ | M_ATOMIC | M_FIRST | M_LAST | M_ATMETH,
    [OP_FETCH_ADD]        = M_REQ | M_ATOMIC | M_FIRST | M_LAST | M_ATMETH,
    [OP_SEND_LAST_INV]    = SEND_F | M_LAST | M_IETH,
    [OP_SEND_ONLY_INV]    = SEND_F | M_FIRST | M_LAST | M_IETH,
    RC_UC_REQUESTS(OP_UC),
    [OP_UD + OP_SEND_ONLY]     = SEND_F | M_FIRST | M_LAST | M_DETH,
    [OP_UD + OP_SEND_ONLY_IMM] = SEND_F | M_FIRST | M_LAST | M_DETH | M_IMM,
};

/* ---- CRC32 ----------------------------------------------------------------- */

void qsw_crc32_init(uint32_t tab[8][256])
{
    for (unsigned i = 0; i < 256; i++) {
        uint32_t c = i;

        for (int k = 0; k < 8; k++) {
            c = (c >> 1) ^ (c & 1 ? 0xedb88320u : 0);
        }
        tab[0][i] = c;
    }
    for (unsigned i = 0; i < 256; i++) {
        for (int k = 1; k < 8; k++) {
            tab[k][i] = (tab[k - 1][i] >> 8) ^ tab[0][tab[k - 1][i] & 0xff];
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_CLMUL_CRC 1

/*
 * CRC32 by carry-less multiplication (PCLMULQDQ), folding 512 then 128
 * bits at a time and finishing with a Barrett reduction, after Gopal et
 * al., "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ"
 * (Intel, 2009). The constants are x^n mod P(x) for the bit-reflected
 * IEEE polynomial: fold distances 4*128+32 / 4*128-32 (k1, k2), 128+32 /
 * 128-32 (k3, k4), 64 (k5), and P'(x) and mu for the reduction. Same
 * convention as the table code: no inversions. len >= 64, a multiple of 16.
 */
__attribute__((target("pclmul,sse2")))
static uint32_t crc32_clmul(uint32_t crc, const uint8_t *p, size_t len)
{
    const __m128i k1k2 = _mm_set_epi64x(0x1c6e41596ll, 0x154442bd4ll);
    const __m128i k3k4 = _mm_set_epi64x(0x0ccaa009ell, 0x1751997d0ll);
    const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124ll);
    const __m128i poly = _mm_set_epi64x(0x1f7011641ll, 0x1db710641ll);     /* mu, P' */
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x0, x1, x2, x3, t;

#define LD(i) _mm_loadu_si128((const __m128i *)(p + 16 * (i)))
#define FOLD(x, k, d) \
    (t = _mm_clmulepi64_si128((x), (k), 0x00), \
     _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128((x), (k), 0x11), t), (d)))

    x0 = _mm_xor_si128(LD(0), _mm_cvtsi32_si128((int)crc));
    x1 = LD(1);
    x2 = LD(2);
    x3 = LD(3);
    p += 64;
    len -= 64;
    while (len >= 64) {
        x0 = FOLD(x0, k1k2, LD(0));
        x1 = FOLD(x1, k1k2, LD(1));
        x2 = FOLD(x2, k1k2, LD(2));
        x3 = FOLD(x3, k1k2, LD(3));
        p += 64;
        len -= 64;
    }
    x0 = FOLD(x0, k3k4, x1);
    x0 = FOLD(x0, k3k4, x2);
    x0 = FOLD(x0, k3k4, x3);
    while (len >= 16) {
        x0 = FOLD(x0, k3k4, LD(0));
        p += 16;
        len -= 16;
    }
    /* 128 -> 64 bits */
    x0 = _mm_xor_si128(_mm_clmulepi64_si128(x0, k3k4, 0x10), _mm_srli_si128(x0, 8));
    /* 64 -> 32 bits */
    x0 = _mm_xor_si128(_mm_srli_si128(x0, 4),
                       _mm_clmulepi64_si128(_mm_and_si128(x0, mask32), k5, 0x00));
    /* Barrett reduction */
    t = _mm_clmulepi64_si128(_mm_and_si128(x0, mask32), poly, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, mask32), poly, 0x00);
    x0 = _mm_xor_si128(x0, t);
    return (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(x0, 4));
#undef LD
#undef FOLD
}
#endif

/* Slicing by 8 (and PCLMULQDQ for long runs on x86); no pre or post inversion. */
uint32_t qsw_crc32_update(const uint32_t tab[8][256], uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;

#ifdef HAVE_CLMUL_CRC
    static int clmul_state = -1;    /* any thread may set it: always to the same value */

    if (len >= 128) {
        int clmul = __atomic_load_n(&clmul_state, __ATOMIC_RELAXED);

        if (clmul < 0) {
            __builtin_cpu_init();
            clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2");
            __atomic_store_n(&clmul_state, clmul, __ATOMIC_RELAXED);
        }
        if (clmul) {
            size_t n = len & ~(size_t)15;

            crc = crc32_clmul(crc, p, n);
            p += n;
            len -= n;
        }
    }
#endif

    while (len >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24);

        crc = tab[7][lo & 0xff] ^ tab[6][(lo >> 8) & 0xff] ^ tab[5][(lo >> 16) & 0xff] ^
              tab[4][lo >> 24] ^ tab[3][p[4]] ^ tab[2][p[5]] ^ tab[1][p[6]] ^ tab[0][p[7]];
        p += 8;
        len -= 8;
    }
    while (len--) {
        crc = tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }
    return crc;
}

uint32_t qsw_icrc(const uint32_t tab[8][256], const uint8_t *l3, size_t l3_len, bool ipv6)
{
    static const uint8_t ones[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    uint8_t ph[IPV6_HLEN + UDP_HLEN + BTH_LEN];
    size_t iphl = ipv6 ? IPV6_HLEN : IPV4_HLEN;
    size_t phl = iphl + UDP_HLEN + BTH_LEN;
    uint32_t crc;

    memcpy(ph, l3, phl);
    if (ipv6) {
        ph[0] |= 0x0f;                      /* traffic class and flow label */
        ph[1] = ph[2] = ph[3] = 0xff;
        ph[7] = 0xff;                       /* hop limit */
    } else {
        ph[1] = 0xff;                       /* TOS */
        ph[8] = 0xff;                       /* TTL */
        ph[10] = ph[11] = 0xff;             /* header checksum */
    }
    ph[iphl + 6] = ph[iphl + 7] = 0xff;     /* UDP checksum */
    ph[iphl + UDP_HLEN + 4] = 0xff;         /* BTH resv8a */

    crc = qsw_crc32_update(tab, 0xffffffffu, ones, sizeof(ones));
    crc = qsw_crc32_update(tab, crc, ph, phl);
    crc = qsw_crc32_update(tab, crc, l3 + phl, l3_len - phl);
    return ~crc;
}

uint16_t qsw_ip_csum(const void *buf, size_t len, uint32_t sum)
{
    const uint8_t *p = buf;

    while (len > 1) {
        sum += (uint32_t)p[0] << 8 | p[1];
        p += 2;
        len -= 2;
    }
    if (len) {
        sum += (uint32_t)p[0] << 8;
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)~sum;
}

/* ---- addresses --------------------------------------------------------------- */

bool qsw_gid_is_v4(const uint8_t gid[16])
{
    static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

    return memcmp(gid, prefix, sizeof(prefix)) == 0;
}

/*
 * UDP source port from the flow label, or, without one, from a label
 * derived from both QPNs, folded into 0xC000-0xFFFF as Linux does
 * (Annex A17 leaves the choice to the sender; receivers ignore it).
 */
uint16_t qsw_udp_sport(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn)
{
    uint32_t fl = flow_label & 0xfffff;

    if (!fl) {
        uint64_t v = (uint64_t)lqpn * rqpn;

        v ^= v >> 20;
        v ^= v >> 40;
        fl = (uint32_t)v & 0xfffff;
    }
    return (uint16_t)(0xc000 | ((fl & 0x3fff) ^ (fl >> 14)));
}

/* ---- transmit ----------------------------------------------------------------- */

static const uint8_t zero_mac[6];

uint8_t *qsw_tx_begin(struct qsw_engine *eng, const struct qsw_av *av, bool ipv6)
{
    uint8_t *f = eng->tx;

    memcpy(f, av->dmac, 6);
    memcpy(f + 6, memcmp(av->smac, zero_mac, 6) ? av->smac : eng->mac, 6);
    st16(f + 12, ipv6 ? ETHERTYPE_IPV6 : ETHERTYPE_IPV4);
    return f + ETH_HLEN + (ipv6 ? IPV6_HLEN : IPV4_HLEN) + UDP_HLEN;
}

void qsw_tx_bth(uint8_t *bth, uint8_t opcode, bool se, unsigned pad, uint32_t dqpn, bool ackreq,
                uint32_t psn)
{
    bth[0] = opcode;
    bth[1] = (se ? BTH_SE : 0) | (uint8_t)(pad << BTH_PAD_SHIFT);   /* M = 0, TVer = 0 */
    bth[2] = 0xff;                                                   /* default P_Key */
    bth[3] = 0xff;
    bth[4] = 0;
    st24(bth + 5, dqpn);
    bth[8] = ackreq ? BTH_ACKREQ : 0;
    st24(bth + 9, psn);
}

/* tp_len: BTH through the padded payload. Fills IP/UDP, the ICRC, and sends. */
void qsw_tx_finish(struct qsw_engine *eng, const struct qsw_av *av, bool ipv6, uint16_t sport,
                   unsigned tp_len)
{
    uint8_t *l3 = eng->tx + ETH_HLEN;
    unsigned iphl = ipv6 ? IPV6_HLEN : IPV4_HLEN;
    uint8_t *udp = l3 + iphl;
    unsigned udp_len = UDP_HLEN + tp_len + ICRC_LEN;
    uint8_t hop = av->hop_limit ? av->hop_limit : 64;
    uint32_t icrc;
    size_t flen;

    if (ipv6) {
        uint32_t w = 6u << 28 | (uint32_t)av->traffic_class << 20 | (av->flow_label & 0xfffff);

        st32(l3, w);
        st16(l3 + 4, (uint16_t)udp_len);
        l3[6] = 17;
        l3[7] = hop;
        memcpy(l3 + 8, av->sgid, 16);
        memcpy(l3 + 24, av->dgid, 16);
    } else {
        l3[0] = 0x45;
        l3[1] = av->traffic_class;
        st16(l3 + 2, (uint16_t)(IPV4_HLEN + udp_len));
        st16(l3 + 4, eng->ip_id++);
        st16(l3 + 6, 0x4000);               /* DF */
        l3[8] = hop;
        l3[9] = 17;
        l3[10] = l3[11] = 0;
        memcpy(l3 + 12, av->sgid + 12, 4);
        memcpy(l3 + 16, av->dgid + 12, 4);
        st16(l3 + 10, qsw_ip_csum(l3, IPV4_HLEN, 0));
    }
    st16(udp, sport);
    st16(udp + 2, QSW_UDP_PORT);
    st16(udp + 4, (uint16_t)udp_len);
    st16(udp + 6, 0);                       /* IPv4: no UDP checksum (Annex A17) */

    icrc = qsw_icrc((const uint32_t (*)[256])eng->crc_tab, l3, iphl + UDP_HLEN + tp_len, ipv6);
    {
        uint8_t *ic = udp + UDP_HLEN + tp_len;

        ic[0] = (uint8_t)icrc;
        ic[1] = (uint8_t)(icrc >> 8);
        ic[2] = (uint8_t)(icrc >> 16);
        ic[3] = (uint8_t)(icrc >> 24);
    }
    if (ipv6) {
        /* IPv6 requires a UDP checksum (RFC 8200 8.1); the ICRC masks it. */
        uint32_t sum = udp_len + 17;
        uint16_t c;

        for (int i = 0; i < 32; i += 2) {
            sum += ld16(l3 + 8 + i);
        }
        c = qsw_ip_csum(udp, udp_len, sum);
        st16(udp + 6, c ? c : 0xffff);
    }
    flen = ETH_HLEN + iphl + udp_len;
    if (flen < 60) {                        /* Ethernet minimum without FCS */
        memset(eng->tx + flen, 0, 60 - flen);
        flen = 60;
    }
    eng->st.tx_frames++;
    eng->st.tx_bytes += flen;
    if (eng->fault_on) {
        qsw_fault_tx(eng, eng->tx, flen);
    } else {
        eng->ops.send_frame(eng->opaque, eng->tx, flen);
    }
}

/* ---- receive -------------------------------------------------------------------- */

static void gid_from_v4(uint8_t gid[16], const uint8_t *a)
{
    memset(gid, 0, 10);
    gid[10] = gid[11] = 0xff;
    memcpy(gid + 12, a, 4);
}

/*
 * Checks a frame from the Ethernet header to the ICRC; 0 and *pkt filled,
 * or -1 with the drop counted. Frames may carry Ethernet padding: lengths
 * come from the IP header.
 */
int qsw_parse(struct qsw_engine *eng, const uint8_t *f, size_t len, struct qsw_pkt *pkt)
{
    struct qsw_stats *st = &eng->st;
    const uint8_t *l3 = f + ETH_HLEN, *udp, *bth;
    size_t l3_len, iphl;
    unsigned udp_len, tp_len, hl, pad;
    uint16_t etype;
    uint32_t m, icrc;

    if (len < ETH_HLEN || memcmp(f, eng->mac, 6) != 0) {
        st->drop_not_roce++;
        return -1;
    }
    etype = ld16(f + 12);
    if (etype == ETHERTYPE_IPV4) {
        if (len < ETH_HLEN + IPV4_HLEN) {
            goto malformed;
        }
        if (l3[9] != 17) {
            st->drop_not_roce++;
            return -1;
        }
        iphl = IPV4_HLEN;
        l3_len = ld16(l3 + 2);
        if (l3[0] != 0x45 || l3_len > len - ETH_HLEN || l3_len < IPV4_HLEN + UDP_HLEN ||
            (ld16(l3 + 6) & 0x3fff) || qsw_ip_csum(l3, IPV4_HLEN, 0) != 0) {
            goto malformed;                 /* options, fragments, bad lengths or checksum */
        }
        pkt->ipv6 = false;
        gid_from_v4(pkt->sgid, l3 + 12);
        gid_from_v4(pkt->dgid, l3 + 16);
    } else if (etype == ETHERTYPE_IPV6) {
        if (len < ETH_HLEN + IPV6_HLEN) {
            goto malformed;
        }
        if (l3[6] != 17) {
            st->drop_not_roce++;
            return -1;
        }
        iphl = IPV6_HLEN;
        l3_len = IPV6_HLEN + (size_t)ld16(l3 + 4);
        if ((l3[0] >> 4) != 6 || l3_len > len - ETH_HLEN || l3_len < IPV6_HLEN + UDP_HLEN) {
            goto malformed;
        }
        pkt->ipv6 = true;
        memcpy(pkt->sgid, l3 + 8, 16);
        memcpy(pkt->dgid, l3 + 24, 16);
    } else {
        st->drop_not_roce++;
        return -1;
    }
    udp = l3 + iphl;
    if (ld16(udp + 2) != QSW_UDP_PORT) {
        st->drop_not_roce++;
        return -1;
    }
    udp_len = ld16(udp + 4);
    if (udp_len != l3_len - iphl || udp_len < UDP_HLEN + BTH_LEN + ICRC_LEN) {
        goto malformed;
    }
    bth = udp + UDP_HLEN;
    tp_len = udp_len - UDP_HLEN - ICRC_LEN;
    m = qsw_opmask[bth[0]];
    pad = (bth[1] >> BTH_PAD_SHIFT) & 3;
    hl = hdr_len(m);
    if (!m || (tp_len & 3) || (bth[1] & BTH_TVER_MASK) != 0 || (ld16(bth + 2) & 0x7fff) != 0x7fff ||
        hl > tp_len || (!(m & M_PAYLOAD) && (tp_len != hl || pad)) || pad > tp_len - hl) {
        goto malformed;
    }
    icrc = qsw_icrc((const uint32_t (*)[256])eng->crc_tab, l3, iphl + UDP_HLEN + tp_len,
                    pkt->ipv6);
    {
        const uint8_t *ic = bth + tp_len;

        if (icrc != ((uint32_t)ic[0] | (uint32_t)ic[1] << 8 | (uint32_t)ic[2] << 16 |
                     (uint32_t)ic[3] << 24)) {
            st->drop_icrc++;
            return -1;
        }
    }
    pkt->l3 = l3;
    pkt->bth = bth;
    pkt->mask = m;
    pkt->opcode = bth[0];
    pkt->se = bth[1] & BTH_SE;
    pkt->dqpn = ld24(bth + 5);
    pkt->ackreq = bth[8] & BTH_ACKREQ;
    pkt->psn = ld24(bth + 9);
    pkt->payload = bth + hl;
    pkt->paylen = tp_len - hl - pad;
    pkt->smac = f + 6;
    return 0;

malformed:
    st->drop_malformed++;
    return -1;
}
