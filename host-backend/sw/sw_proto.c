/*
 * The RoCEv2 wire format of the software engine: the opcode table, CRC32
 * and the ICRC, building a frame in place in the engine's transmit buffer
 * and parsing a received frame with every length checked before use.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "sw_int.h"

/* ---- opcode table (IBTA vol. 1, 9.2 and 9.3) ---- */

#define SEND_F  (M_REQ | M_SEND | M_PAYLOAD)
#define WRITE_F (M_REQ | M_WRITE | M_PAYLOAD)
#define RC_UC_REQUESTS(b)                                                   \
    [(b) + OP_SEND_FIRST]     = (SEND_F | M_FIRST),                         \
    [(b) + OP_SEND_MIDDLE]    = (SEND_F | M_MIDDLE),                        \
    [(b) + OP_SEND_LAST]      = (SEND_F | M_LAST),                          \
    [(b) + OP_SEND_LAST_IMM]  = (SEND_F | M_LAST | M_IMM),                  \
    [(b) + OP_SEND_ONLY]      = (SEND_F | M_FIRST | M_LAST),                \
    [(b) + OP_SEND_ONLY_IMM]  = (SEND_F | M_FIRST | M_LAST | M_IMM),        \
    [(b) + OP_WRITE_FIRST]    = (WRITE_F | M_FIRST | M_RETH),               \
    [(b) + OP_WRITE_MIDDLE]   = (WRITE_F | M_MIDDLE),                       \
    [(b) + OP_WRITE_LAST]     = (WRITE_F | M_LAST),                         \
    [(b) + OP_WRITE_LAST_IMM] = (WRITE_F | M_LAST | M_IMM),                 \
    [(b) + OP_WRITE_ONLY]     = (WRITE_F | M_FIRST | M_LAST | M_RETH),      \
    [(b) + OP_WRITE_ONLY_IMM] = (WRITE_F | M_FIRST | M_LAST | M_RETH | M_IMM)

const uint32_t qsw_opmask[256] = {
    RC_UC_REQUESTS(0),
    [OP_READ_REQ]         = M_REQ | M_READ | M_FIRST | M_LAST | M_RETH,
    [OP_READ_RESP_FIRST]  = M_RESP | M_READ | M_PAYLOAD | M_FIRST | M_AETH,
    [OP_READ_RESP_MIDDLE] = M_RESP | M_READ | M_PAYLOAD | M_MIDDLE,
    [OP_READ_RESP_LAST]   = M_RESP | M_READ | M_PAYLOAD | M_LAST | M_AETH,
    [OP_READ_RESP_ONLY]   = M_RESP | M_READ | M_PAYLOAD | M_FIRST | M_LAST |
                            M_AETH,
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

/* ---- CRC32 --------------------------------------------------------------- */

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

/*
 * One set of tables for the process: every engine reads it, none writes it,
 * so an engine costs no table build (8 KB and 2,304 loop rounds each).
 */
static uint32_t crc_tables[8][256];
static pthread_once_t crc_tables_once = PTHREAD_ONCE_INIT;

static void crc_tables_build(void)
{
    qsw_crc32_init(crc_tables);
}

const uint32_t (*qsw_crc32_tables(void))[256]
{
    pthread_once(&crc_tables_once, crc_tables_build);
    return (const uint32_t (*)[256])crc_tables;
}

/* Slicing by 8; the portable code and the tail of short runs. */
static uint32_t crc32_table(const uint32_t tab[8][256], uint32_t crc,
                            const uint8_t *p, size_t len)
{
    while (len >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
                             (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);

        crc = tab[7][lo & 0xff] ^ tab[6][(lo >> 8) & 0xff] ^
              tab[5][(lo >> 16) & 0xff] ^ tab[4][lo >> 24] ^ tab[3][p[4]] ^
              tab[2][p[5]] ^ tab[1][p[6]] ^ tab[0][p[7]];
        p += 8;
        len -= 8;
    }
    while (len--) {
        crc = tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }
    return crc;
}

/*
 * x^n mod P(x) for the folds below, bit-reflected and shifted left by one
 * (bit j holds the coefficient of x^(32-j)); the unit tests recompute them.
 */
#define CRC_XPOWS(X)                                                         \
    X(64, 0x163cd6124) X(96, 0x0ccaa009e) X(160, 0x1751997d0)                \
    X(224, 0x15a546366) X(288, 0x0f1da05aa) X(352, 0x174359406)              \
    X(416, 0x03db1ecdc) X(480, 0x1c6e41596) X(544, 0x154442bd4)              \
    X(736, 0x18cb44e58) X(800, 0x0df068dc2) X(992, 0x14a7fe880)              \
    X(1056, 0x1e88ef372) X(1504, 0x12e958ac4) X(1568, 0x1821d8bc0)           \
    X(2016, 0x1322d1430) X(2080, 0x11542778a)
#define X(n, k) \
    static const uint64_t crc_x##n = k##ull;
CRC_XPOWS(X)
#undef X
#define X(n, k) { n, crc_x##n },
const struct qsw_crc_xpow qsw_crc_xpow[] = { CRC_XPOWS(X) };
#undef X
const size_t qsw_crc_nxpow = sizeof(qsw_crc_xpow) / sizeof(qsw_crc_xpow[0]);

/*
 * The CRC state after the initial 0xffffffff and the ICRC's 8 bytes of ones
 * (LRH).
 */
#define ICRC_LRH_STATE 0xdebb20e3u
/* The folds start from one 16-byte lane; shorter runs go by table. */
#define CRC_FOLD_MIN 16

#if defined(__x86_64__) &&                     \
    (defined(__clang__) ? __clang_major__ >= 8 \
                        : defined(__GNUC__) && __GNUC__ >= 10)
#include <immintrin.h>
#define HAVE_CLMUL_CRC 1

/*
 * CRC32 by carry-less multiplication, after Gopal et al., "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ" (Intel, 2009). The
 * data is loaded little-endian, so bit i of a 128-bit lane is the
 * coefficient of x^(127-i) relative to the lane's end. Folding a lane F
 * bits forward multiplies its low half (the higher degrees) by
 * x^(F+32) mod P and its high half by x^(F-32) mod P and adds the
 * products to the lane F bits later. The last 128 bits are reduced to
 * 32: fold 64 bits by x^96, 32 by x^64, then a Barrett reduction with
 * mu = floor(x^64 / P) and P itself (both 33 bits, reflected). Same
 * convention as the tables: no pre- or post-inversion. Each
 * implementation runs with the instruction set of its target attribute,
 * chosen at run time, so that the file builds with any flags (QEMU's).
 */
#define K(n) ((long long)crc_x##n)
#define BARRETT_MU 0x1f7011641ll    /* floor(x^64 / P), reflected, 33 bits */
#define BARRETT_P  0x1db710641ll    /* P, reflected, 33 bits */
#define TARGET_CLMUL __attribute__((target("pclmul,sse4.1")))
#define TARGET_V256  __attribute__((target("avx2,vpclmulqdq,pclmul")))
#define TARGET_V512  __attribute__((target("avx512f,vpclmulqdq,pclmul")))

/* pshufb indexes: 0..15 at offsets 16..31, 0x80 (a zero byte) around them */
static const uint8_t crc_shuffle[48] __attribute__((aligned(16))) = {
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
};

/* x folded forward by the distance of k, plus d */
static inline __attribute__((always_inline)) TARGET_CLMUL
__m128i fold128(__m128i x, __m128i k, __m128i d)
{
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
                                       _mm_clmulepi64_si128(x, k, 0x11)), d);
}

/*
 * The state x (128 bits, data before p) continued by the len bytes at p,
 * reduced to the 32-bit CRC. A tail of fewer than 16 bytes is read as the
 * last 16 bytes of the data (there must be 16 before its end, in x's run
 * or here): x's first bytes move one lane up, the rest of x and the tail
 * make the lane after.
 */
static inline __attribute__((always_inline)) TARGET_CLMUL
uint32_t crc_finish128(__m128i x, const uint8_t *p, size_t len)
{
    const __m128i k128 = _mm_set_epi64x(K(96), K(160));
    const __m128i k64_96 = _mm_set_epi64x(K(64), K(96));
    const __m128i barrett = _mm_set_epi64x(BARRETT_MU, BARRETT_P);
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i t;

    while (len >= 16) {
        x = fold128(x, k128, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        len -= 16;
    }
    if (len) {
        __m128i up = _mm_loadu_si128((const __m128i *)(crc_shuffle + len));
        __m128i down = _mm_loadu_si128(
            (const __m128i *)(crc_shuffle + 16 + len));
        __m128i last = _mm_loadu_si128((const __m128i *)(p + len - 16));

        x = fold128(_mm_shuffle_epi8(x, up), k128,
                    _mm_blendv_epi8(_mm_shuffle_epi8(x, down), last, down));
    }
    /* 128 -> 96 bits: the low half (x^127..x^64) times x^96 */
    x = _mm_xor_si128(_mm_clmulepi64_si128(x, k64_96, 0x00),
                      _mm_srli_si128(x, 8));
    /* 96 -> 64 bits: the low 32 bits times x^64 */
    x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, mask32), k64_96,
                                           0x10),
                      _mm_srli_si128(x, 4));
    /*
     * Barrett: quotient from the high 32 coefficients, minus quotient times P
     */
    t = _mm_clmulepi64_si128(_mm_and_si128(x, mask32), barrett, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, mask32), barrett, 0x00);
    return (uint32_t)_mm_extract_epi32(_mm_xor_si128(x, t), 1);
}

/*
 * 16 <= len < 80, the data ORed with mask[0..len) as it is read (the
 * ICRC's fields of ones, applied in registers: a copy with byte stores
 * would stall the wide loads that follow).
 */
TARGET_CLMUL
static uint32_t crc32_clmul_short(uint32_t crc, const uint8_t *p, size_t len,
                                  const uint8_t *mask)
{
#define LD(q, i) _mm_loadu_si128((const __m128i *)((q) + (i)))
    const __m128i k128 = _mm_set_epi64x(K(96), K(160));
    __m128i x = _mm_xor_si128(_mm_or_si128(LD(p, 0), LD(mask, 0)),
                              _mm_cvtsi32_si128((int)crc));
    size_t off = 16;

    for (; off + 16 <= len; off += 16) {
        x = fold128(x, k128, _mm_or_si128(LD(p, off), LD(mask, off)));
    }
    /* the tail's 16 bytes, masked, read in place by crc_finish128 */
    if (off < len) {
        uint8_t last[16] __attribute__((aligned(16)));

        _mm_store_si128((__m128i *)last,
                        _mm_or_si128(LD(p, len - 16), LD(mask, len - 16)));
        return crc_finish128(x, last + 16 - (len - off), len - off);
    }
    return crc_finish128(x, p + off, 0);
#undef LD
}

/*
 * The long-run implementations: len >= 64, the first 64 bytes ORed with
 * mask[0..64) as they are read.
 */
typedef uint32_t crc_fold_fn(uint32_t crc, const uint8_t *p, size_t len,
                             const uint8_t *mask);

/* 128-bit PCLMULQDQ, four lanes folding 512 bits at a time. */
TARGET_CLMUL
static uint32_t crc32_clmul(uint32_t crc, const uint8_t *p, size_t len,
                            const uint8_t *mask)
{
#define LD(q, i) _mm_loadu_si128((const __m128i *)((q) + 16 * (i)))
#define LDM(i) _mm_or_si128(LD(p, i), LD(mask, i))
    const __m128i k512 = _mm_set_epi64x(K(480), K(544));
    __m128i x0 = _mm_xor_si128(LDM(0), _mm_cvtsi32_si128((int)crc));
    __m128i x1 = LDM(1), x2 = LDM(2), x3 = LDM(3);

    p += 64;
    len -= 64;
    while (len >= 64) {
        x0 = fold128(x0, k512, LD(p, 0));
        x1 = fold128(x1, k512, LD(p, 1));
        x2 = fold128(x2, k512, LD(p, 2));
        x3 = fold128(x3, k512, LD(p, 3));
        p += 64;
        len -= 64;
    }
    x3 = fold128(x0, _mm_set_epi64x(K(352), K(416)), x3);
    x3 = fold128(x1, _mm_set_epi64x(K(224), K(288)), x3);
    x3 = fold128(x2, _mm_set_epi64x(K(96), K(160)), x3);
    return crc_finish128(x3, p, len);
#undef LD
#undef LDM
}

/* 256-bit VPCLMULQDQ (AVX2): two lanes per register, four registers. */
TARGET_V256
static uint32_t crc32_vpclmul256(uint32_t crc, const uint8_t *p, size_t len,
                                 const uint8_t *mask)
{
#define LD(q, i) _mm256_loadu_si256((const void *)((q) + 32 * (i)))
#define KK(lo, hi) _mm256_set_epi64x(K(hi), K(lo), K(hi), K(lo))
#define FOLD(y, k, d)                                               \
    _mm256_xor_si256(                                               \
        _mm256_xor_si256(_mm256_clmulepi64_epi128((y), (k), 0x00),  \
                         _mm256_clmulepi64_epi128((y), (k), 0x11)), \
        (d))
    const __m256i k256 = KK(288, 224);
    __m256i y0 = _mm256_xor_si256(_mm256_or_si256(LD(p, 0), LD(mask, 0)),
                                  _mm256_set_epi64x(0, 0, 0, crc));
    __m256i y1 = _mm256_or_si256(LD(p, 1), LD(mask, 1));

    p += 64;
    len -= 64;
    if (len >= 64) {
        const __m256i k1024 = KK(1056, 992);
        __m256i y2 = LD(p, 0), y3 = LD(p, 1);

        p += 64;
        len -= 64;
        while (len >= 128) {
            y0 = FOLD(y0, k1024, LD(p, 0));
            y1 = FOLD(y1, k1024, LD(p, 1));
            y2 = FOLD(y2, k1024, LD(p, 2));
            y3 = FOLD(y3, k1024, LD(p, 3));
            p += 128;
            len -= 128;
        }
        y3 = FOLD(y0, KK(800, 736), y3);
        y3 = FOLD(y1, KK(544, 480), y3);
        y1 = FOLD(y2, k256, y3);
    } else {
        y1 = FOLD(y0, k256, y1);
    }
    while (len >= 32) {
        y1 = FOLD(y1, k256, LD(p, 0));
        p += 32;
        len -= 32;
    }
    return crc_finish128(fold128(_mm256_castsi256_si128(y1),
                                 _mm_set_epi64x(K(96), K(160)),
                                 _mm256_extracti128_si256(y1, 1)),
                         p, len);
#undef LD
#undef KK
#undef FOLD
}

/* 512-bit VPCLMULQDQ (AVX-512): four lanes per register, four registers. */
TARGET_V512
static uint32_t crc32_vpclmul512(uint32_t crc, const uint8_t *p, size_t len,
                                 const uint8_t *mask)
{
#define LD(q, i) _mm512_loadu_si512((const void *)((q) + 64 * (i)))
#define KK(lo, hi) \
    _mm512_set_epi64(K(hi), K(lo), K(hi), K(lo), K(hi), K(lo), K(hi), K(lo))
#define FOLD(z, k, d)                                                        \
    _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128((z), (k), 0x00),      \
                              _mm512_clmulepi64_epi128((z), (k), 0x11), (d), \
                              0x96)
    const __m512i k512 = KK(544, 480);
    __m512i z0 =
        _mm512_ternarylogic_epi64(_mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, crc),
                                  /* a ^ (b | c) */
                                  LD(p, 0), LD(mask, 0), 0x1e);
    __m512i t;
    __m128i x;

    p += 64;
    len -= 64;
    if (len >= 192) {
        const __m512i k2048 = KK(2080, 2016);
        __m512i z1 = LD(p, 0), z2 = LD(p, 1), z3 = LD(p, 2);

        p += 192;
        len -= 192;
        while (len >= 256) {
            z0 = FOLD(z0, k2048, LD(p, 0));
            z1 = FOLD(z1, k2048, LD(p, 1));
            z2 = FOLD(z2, k2048, LD(p, 2));
            z3 = FOLD(z3, k2048, LD(p, 3));
            p += 256;
            len -= 256;
        }
        z0 = FOLD(z0, KK(1568, 1504),
                  FOLD(z1, KK(1056, 992), FOLD(z2, k512, z3)));
    }
    while (len >= 64) {
        z0 = FOLD(z0, k512, LD(p, 0));
        p += 64;
        len -= 64;
    }
    /*
     * Lanes 0, 1, 2 folded 384, 256, 128 bits onto lane 3. The zero-masking
     * extracts: GCC 12's plain ones (and its cast) read an "undefined"
     * register that -Winit-self (QEMU's flags) reports.
     */
    t = FOLD(z0,
             _mm512_set_epi64(0, 0, K(96), K(160), K(224), K(288), K(352),
                              K(416)),
             _mm512_setzero_si512());
    x = _mm_xor_si128(_mm_xor_si128(_mm512_maskz_extracti32x4_epi32(0xf, t, 0),
                                    _mm512_maskz_extracti32x4_epi32(0xf, t, 1)),
                      _mm_xor_si128(_mm512_maskz_extracti32x4_epi32(0xf, t, 2),
                                    _mm512_maskz_extracti32x4_epi32(0xf, z0,
                                                                    3)));
    return crc_finish128(x, p, len);
#undef LD
#undef KK
#undef FOLD
}

static crc_fold_fn *const crc_folds[QSW_CRC_NIMPL] = {
    [QSW_CRC_CLMUL] = crc32_clmul,
    [QSW_CRC_VPCLMUL256] = crc32_vpclmul256,
    [QSW_CRC_VPCLMUL512] = crc32_vpclmul512,
};
#endif

const char *const qsw_crc_impl_name[QSW_CRC_NIMPL] = {
    [QSW_CRC_TABLE] = "table",
    [QSW_CRC_CLMUL] = "pclmulqdq",
    [QSW_CRC_VPCLMUL256] = "vpclmulqdq-256",
    [QSW_CRC_VPCLMUL512] = "vpclmulqdq-512",
};

bool qsw_crc32_supported(enum qsw_crc_impl impl)
{
#ifdef HAVE_CLMUL_CRC
    __builtin_cpu_init();
    switch (impl) {
    case QSW_CRC_TABLE:
        return true;
    case QSW_CRC_CLMUL:
        return __builtin_cpu_supports("pclmul") &&
               __builtin_cpu_supports("sse4.1");
    case QSW_CRC_VPCLMUL256:
        return qsw_crc32_supported(QSW_CRC_CLMUL) &&
               __builtin_cpu_supports("vpclmulqdq") &&
               __builtin_cpu_supports("avx2");
    case QSW_CRC_VPCLMUL512:
        return qsw_crc32_supported(QSW_CRC_CLMUL) &&
               __builtin_cpu_supports("vpclmulqdq") &&
               __builtin_cpu_supports("avx512f");
    default:
        return false;
    }
#else
    return impl == QSW_CRC_TABLE;
#endif
}

/*
 * The implementation in use, the fastest supported unless a test chose one; -1
 * until known.
 */
static int crc_impl = -1;

static enum qsw_crc_impl crc_impl_get(void)
{
    int impl = __atomic_load_n(&crc_impl, __ATOMIC_RELAXED);

    if (impl < 0) {
        impl = QSW_CRC_NIMPL - 1;
        while (!qsw_crc32_supported(impl)) {
            impl--;
        }
        /* any thread may store it: always the same value */
        __atomic_store_n(&crc_impl, impl, __ATOMIC_RELAXED);
    }
    return impl;
}

enum qsw_crc_impl qsw_crc32_impl(void)
{
    return crc_impl_get();
}

int qsw_crc32_select(enum qsw_crc_impl impl)
{
    if (!qsw_crc32_supported(impl)) {
        return -ENOTSUP;
    }
    __atomic_store_n(&crc_impl, impl, __ATOMIC_RELAXED);
    return 0;
}

#ifdef HAVE_CLMUL_CRC
/*
 * What the ICRC sets to ones (IBTA Annex A17.3.3), as OR masks; zeros to 80
 * bytes.
 */
static const uint8_t crc_mask_none[80] __attribute__((aligned(64)));
static const uint8_t icrc_mask_v4[80] __attribute__((aligned(64))) = {
    [1] = 0xff,                             /* TOS */
    [8] = 0xff,                             /* TTL */
    [10] = 0xff, [11] = 0xff,               /* header checksum */
    [IPV4_HLEN + 6] = 0xff, [IPV4_HLEN + 7] = 0xff,     /* UDP checksum */
    [IPV4_HLEN + UDP_HLEN + 4] = 0xff,                  /* BTH resv8a */
};
static const uint8_t icrc_mask_v6[80] __attribute__((aligned(64))) = {
    /* traffic class, flow label */
    [0] = 0x0f, [1] = 0xff, [2] = 0xff, [3] = 0xff,
    [7] = 0xff,                             /* hop limit */
    [IPV6_HLEN + 6] = 0xff, [IPV6_HLEN + 7] = 0xff,     /* UDP checksum */
    [IPV6_HLEN + UDP_HLEN + 4] = 0xff,                  /* BTH resv8a */
};

static uint32_t crc32_clmul_masked(enum qsw_crc_impl impl, uint32_t crc,
                                   const uint8_t *p, size_t len,
                                   const uint8_t *mask)
{
    return len >= 64 ? crc_folds[impl](crc, p, len, mask)
                     : crc32_clmul_short(crc, p, len, mask);
}
#endif

uint32_t qsw_crc32_update(const uint32_t tab[8][256], uint32_t crc,
                          const void *buf, size_t len)
{
#ifdef HAVE_CLMUL_CRC
    enum qsw_crc_impl impl = crc_impl_get();

    if (impl != QSW_CRC_TABLE && len >= CRC_FOLD_MIN) {
        return crc32_clmul_masked(impl, crc, buf, len, crc_mask_none);
    }
#endif
    return crc32_table(tab, crc, buf, len);
}

/*
 * The CRC state after the ICRC's masked headers: the IP, UDP and BTH
 * headers with the fields routers may change set to ones (Annex A17.3.3),
 * then whatever else of the first hdr_len bytes of l3 (the extension
 * headers, or the whole packet). Not yet complemented.
 */
uint32_t qsw_icrc_begin(const uint32_t tab[8][256], const uint8_t *l3,
                        size_t hdr_len, bool ipv6)
{
    uint8_t ph[IPV6_HLEN + UDP_HLEN + BTH_LEN];
    size_t iphl = ipv6 ? IPV6_HLEN : IPV4_HLEN;
    size_t phl = iphl + UDP_HLEN + BTH_LEN;
    uint32_t crc;

#ifdef HAVE_CLMUL_CRC
    enum qsw_crc_impl impl = crc_impl_get();

    if (impl != QSW_CRC_TABLE) {
        return crc32_clmul_masked(impl, ICRC_LRH_STATE, l3, hdr_len,
                                  ipv6 ? icrc_mask_v6 : icrc_mask_v4);
    }
#endif
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
    crc = crc32_table(tab, ICRC_LRH_STATE, ph, phl);
    return crc32_table(tab, crc, l3 + phl, hdr_len - phl);
}

uint32_t qsw_icrc(const uint32_t tab[8][256], const uint8_t *l3, size_t l3_len,
                  bool ipv6)
{
    return ~qsw_icrc_begin(tab, l3, l3_len, ipv6);
}

/* ---- addresses ----------------------------------------------------------- */

bool qsw_gid_is_v4(const uint8_t gid[16])
{
    static const uint8_t prefix[12] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
    };

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

/* ---- transmit ------------------------------------------------------------ */

static const uint8_t zero_mac[6];

/*
 * IP's mapping of a group to an Ethernet address: 01:00:5e and the low 23
 * bits of an IPv4 group (RFC 1112 6.4), 33:33 and the low 32 bits of an
 * IPv6 one (RFC 2464 7).
 */
bool qsw_mcast_mac(const uint8_t gid[16], uint8_t mac[6])
{
    static const uint8_t v4_prefix[12] = { [10] = 0xff, [11] = 0xff };

    if (!memcmp(gid, v4_prefix, sizeof(v4_prefix)) &&
        (gid[12] & 0xf0) == 0xe0) {
        mac[0] = 0x01;
        mac[1] = 0x00;
        mac[2] = 0x5e;
        mac[3] = gid[13] & 0x7f;
        mac[4] = gid[14];
        mac[5] = gid[15];
        return true;
    }
    if (gid[0] == 0xff) {
        mac[0] = mac[1] = 0x33;
        memcpy(mac + 2, gid + 12, 4);
        return true;
    }
    return false;
}

uint8_t *qsw_tx_begin(struct qsw_engine *eng, const struct qsw_av *av,
                      bool ipv6)
{
    uint8_t *f = eng->tx;

    /*
     * A datagram to a group goes to the group's address, whatever the AH's DMAC
     * says.
     */
    if (!qsw_mcast_mac(av->dgid, f)) {
        memcpy(f, av->dmac, 6);
    }
    memcpy(f + 6, memcmp(av->smac, zero_mac, 6) ? av->smac : eng->mac, 6);
    st16(f + 12, ipv6 ? ETHERTYPE_IPV6 : ETHERTYPE_IPV4);
    return f + ETH_HLEN + (ipv6 ? IPV6_HLEN : IPV4_HLEN) + UDP_HLEN;
}

void qsw_tx_bth(uint8_t *bth, uint8_t opcode, bool se, unsigned pad,
                uint32_t dqpn, bool ackreq, uint32_t psn)
{
    bth[0] = opcode;
    /* M = 0, TVer = 0 */
    bth[1] = (se ? BTH_SE : 0) | (uint8_t)(pad << BTH_PAD_SHIFT);
    /* default P_Key */
    bth[2] = 0xff;
    bth[3] = 0xff;
    bth[4] = 0;
    st24(bth + 5, dqpn);
    bth[8] = ackreq ? BTH_ACKREQ : 0;
    st24(bth + 9, psn);
}

/*
 * The IP and UDP headers of the frame in eng->tx whose transport part
 * (BTH through the padded payload) is tp_len bytes, the UDP checksum
 * aside; returns the UDP length.
 */
static inline __attribute__((always_inline)) unsigned tx_ip_udp(
    struct qsw_engine *eng, const struct qsw_av *av, bool ipv6, uint16_t sport,
    unsigned tp_len)
{
    uint8_t *l3 = eng->tx + ETH_HLEN;
    unsigned iphl = ipv6 ? IPV6_HLEN : IPV4_HLEN;
    uint8_t *udp = l3 + iphl;
    unsigned udp_len = UDP_HLEN + tp_len + ICRC_LEN;
    uint8_t hop = av->hop_limit ? av->hop_limit : 64;

    if (ipv6) {
        uint32_t w = 6u << 28 | (uint32_t)av->traffic_class << 20 |
                     (av->flow_label & 0xfffff);

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
        st16(l3 + 10, qrdma_inet_csum(l3, IPV4_HLEN, 0));
    }
    st16(udp, sport);
    st16(udp + 2, QSW_UDP_PORT);
    st16(udp + 4, (uint16_t)udp_len);
    /* IPv4: no UDP checksum (Annex A17) */
    st16(udp + 6, 0);
    return udp_len;
}

static void st_icrc(uint8_t *p, uint32_t icrc)
{
    p[0] = (uint8_t)icrc;
    p[1] = (uint8_t)(icrc >> 8);
    p[2] = (uint8_t)(icrc >> 16);
    p[3] = (uint8_t)(icrc >> 24);
}

/*
 * IPv6 requires a UDP checksum (RFC 8200 8.1); the ICRC masks it. Over the
 * pieces of iov.
 */
static void udp6_csum(uint8_t *l3, const struct iovec *iov, unsigned n)
{
    uint8_t *udp = l3 + IPV6_HLEN;
    /* pseudo-header: length, next header */
    uint64_t sum = ld16(udp + 4) + 17;
    bool odd = false;
    uint16_t c;

    sum = qrdma_csum_add(sum, l3 + 8, 32, &odd);
    for (unsigned i = 0; i < n; i++) {
        sum = qrdma_csum_add(sum, iov[i].iov_base, iov[i].iov_len, &odd);
    }
    c = qrdma_csum_fold(sum);
    st16(udp + 6, c ? c : 0xffff);
}

static void tx_count(struct qsw_engine *eng, size_t flen)
{
    eng->st.tx_frames++;
    eng->st.tx_bytes += flen;
}

/* tp_len: BTH through the padded payload. Fills IP/UDP, the ICRC, and sends. */
void qsw_tx_finish(struct qsw_engine *eng, const struct qsw_av *av, bool ipv6,
                   uint16_t sport, unsigned tp_len)
{
    uint8_t *l3 = eng->tx + ETH_HLEN;
    unsigned iphl = ipv6 ? IPV6_HLEN : IPV4_HLEN;
    unsigned udp_len = tx_ip_udp(eng, av, ipv6, sport, tp_len);
    size_t flen;

    st_icrc(l3 + iphl + UDP_HLEN + tp_len,
            qsw_icrc(eng->crc_tab, l3, iphl + UDP_HLEN + tp_len, ipv6));
    if (ipv6) {
        struct iovec udp = { .iov_base = l3 + iphl, .iov_len = udp_len };

        udp6_csum(l3, &udp, 1);
    }
    flen = ETH_HLEN + iphl + udp_len;
    if (flen < 60) {                        /* Ethernet minimum without FCS */
        memset(eng->tx + flen, 0, 60 - flen);
        flen = 60;
    }
    tx_count(eng, flen);
    if (eng->fault_on) {
        qsw_fault_tx(eng, eng->tx, flen);
    } else {
        qsw_tx_emit(eng, eng->tx, flen);
    }
}

/*
 * A frame in pieces: the headers in eng->tx, the payload where sge_map
 * found it, pad and ICRC in eng->tx_trailer. The ICRC runs over the
 * pieces in place. The frame is at least 60 bytes: 54 of headers, a
 * payload padded to 4 and the ICRC.
 */
void qsw_tx_finish_iov(struct qsw_engine *eng, const struct qsw_av *av,
                       bool ipv6, uint16_t sport, unsigned hdr_len,
                       const struct iovec *iov, unsigned n, uint32_t paylen,
                       unsigned pad)
{
    static const uint8_t zeros[4];
    uint8_t *l3 = eng->tx + ETH_HLEN;
    unsigned iphl = ipv6 ? IPV6_HLEN : IPV4_HLEN;
    unsigned udp_len = tx_ip_udp(eng, av, ipv6, sport, hdr_len + paylen + pad);
    unsigned i, cnt = 0;
    uint32_t crc;

    crc = qsw_icrc_begin(eng->crc_tab, l3, iphl + UDP_HLEN + hdr_len, ipv6);
    for (i = 0; i < n; i++) {
        crc = qsw_crc32_update(eng->crc_tab, crc, iov[i].iov_base,
                               iov[i].iov_len);
    }
    if (pad) {
        crc = qsw_crc32_update(eng->crc_tab, crc, zeros, pad);
        memset(eng->tx_trailer, 0, pad);
    }
    st_icrc(eng->tx_trailer + pad, ~crc);

    eng->tx_iov[cnt].iov_base = eng->tx;
    eng->tx_iov[cnt++].iov_len = ETH_HLEN + iphl + UDP_HLEN + hdr_len;
    for (i = 0; i < n; i++) {
        eng->tx_iov[cnt++] = iov[i];
    }
    eng->tx_iov[cnt].iov_base = eng->tx_trailer;
    eng->tx_iov[cnt++].iov_len = pad + ICRC_LEN;
    if (ipv6) {
        /*
         * The checksum covers the UDP datagram: the first piece from the UDP
         * header on.
         */
        eng->tx_iov[0].iov_base = l3 + iphl;
        eng->tx_iov[0].iov_len = UDP_HLEN + hdr_len;
        udp6_csum(l3, eng->tx_iov, cnt);
        eng->tx_iov[0].iov_base = eng->tx;
        eng->tx_iov[0].iov_len = ETH_HLEN + iphl + UDP_HLEN + hdr_len;
    }
    tx_count(eng, ETH_HLEN + iphl + udp_len);
    eng->tx_mapped++;
    qsw_tx_emit_iov(eng, eng->tx_iov, cnt);
}

/* ---- receive ------------------------------------------------------------- */

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
static int parse(struct qsw_engine *eng, const uint8_t *f, size_t len,
                 struct qsw_pkt *pkt, bool mcast);

int qsw_parse(struct qsw_engine *eng, const uint8_t *f, size_t len,
              struct qsw_pkt *pkt)
{
    return parse(eng, f, len, pkt, false);
}

int qsw_parse_mcast(struct qsw_engine *eng, const uint8_t *f, size_t len,
                    struct qsw_pkt *pkt)
{
    return parse(eng, f, len, pkt, true);
}

/* Unicast frames to our station address; multicast ones to a group address. */
static int parse(struct qsw_engine *eng, const uint8_t *f, size_t len,
                 struct qsw_pkt *pkt, bool mcast)
{
    struct qsw_stats *st = &eng->st;
    const uint8_t *l3 = f + ETH_HLEN, *udp, *bth;
    size_t l3_len, iphl;
    unsigned udp_len, tp_len, hl, pad;
    uint16_t etype;
    uint32_t m, icrc;

    if (len < ETH_HLEN || (mcast ? !(f[0] & 1) : memcmp(f, eng->mac, 6) != 0)) {
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
        if (l3[0] != 0x45 || l3_len > len - ETH_HLEN ||
            l3_len < IPV4_HLEN + UDP_HLEN || (ld16(l3 + 6) & 0x3fff) ||
            qrdma_inet_csum(l3, IPV4_HLEN, 0) != 0) {
            /* options, fragments, bad lengths or checksum */
            goto malformed;
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
        if ((l3[0] >> 4) != 6 || l3_len > len - ETH_HLEN ||
            l3_len < IPV6_HLEN + UDP_HLEN) {
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
    if (!m || (tp_len & 3) || (bth[1] & BTH_TVER_MASK) != 0 ||
        (ld16(bth + 2) & 0x7fff) != 0x7fff || hl > tp_len ||
        (!(m & M_PAYLOAD) && (tp_len != hl || pad)) || pad > tp_len - hl) {
        goto malformed;
    }
    icrc = qsw_icrc(eng->crc_tab, l3, iphl + UDP_HLEN + tp_len,
                    pkt->ipv6);
    {
        const uint8_t *ic = bth + tp_len;

        if (icrc != ((uint32_t)ic[0] | (uint32_t)ic[1] << 8 |
                     (uint32_t)ic[2] << 16 | (uint32_t)ic[3] << 24)) {
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
