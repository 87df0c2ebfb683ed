/*
 * Reading and writing the saved-state stream (include/qrdma/qrdma_mig.h,
 * docs/migration.md), shared by the device core and the backends.
 *
 * One walk serves both directions: a function that visits a structure's
 * fields with qrdma_mig_u32(m, "name", &field)... writes them when
 * m->loading is false and reads them back when it is true, so save and
 * load cannot drift apart. Reading stops at the first failure, which is
 * kept in m->msg naming the section and the field; every later visit is a
 * no-op and the caller checks qrdma_mig_failed() at its end.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_MIG_STREAM_H
#define QRDMA_MIG_STREAM_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qrdma/qrdma_mig.h"

struct qrdma_mig {
    bool loading;
    /* Saving: the stream so far (malloc'd; the caller frees it). */
    uint8_t *buf;
    size_t len, cap;
    size_t sec_start;           /* the open section's header */
    /*
     * Loading: the stream, the next byte, the end of the open section's
     * payload.
     */
    const uint8_t *in;
    size_t in_len, pos, sec_end;
    /* the open section's version as the stream has it */
    unsigned sec_version;
    const char *section;        /* the open section's name, for messages */
    /* Guest time at the save or the load: timers travel as time remaining. */
    uint64_t now_ns;
    int error;                  /* 0, or -errno of the first failure */
    char msg[256];
    /*
     * Saving, optional: told of every section opened (field NULL) and
     * every field written in it, in stream order, with the section's tag
     * and version and the field's width (bytes of an integer; 0 for a
     * byte string, whose length is fixed or an earlier field's). The
     * layout guard (tests/unit/test_core_mig_layout.c) fingerprints
     * each section's fields with it.
     */
    void (*on_field)(void *opaque, uint32_t tag, unsigned version,
                     const char *field, unsigned width);
    void *on_field_opaque;
    uint32_t sec_tag;           /* saving: the open section's tag */
};

static inline void qrdma_mig_init_save(struct qrdma_mig *m, uint64_t now_ns)
{
    memset(m, 0, sizeof(*m));
    m->now_ns = now_ns;
}

static inline void qrdma_mig_init_load(struct qrdma_mig *m, const void *buf,
                                       size_t len, uint64_t now_ns)
{
    memset(m, 0, sizeof(*m));
    m->loading = true;
    m->in = buf;
    m->in_len = len;
    m->sec_end = len;
    m->now_ns = now_ns;
}

static inline bool qrdma_mig_failed(const struct qrdma_mig *m)
{
    return m->error != 0;
}

/* Record the first failure: "section S, field F: why". */
static inline void qrdma_mig_fail(struct qrdma_mig *m, int error,
                                  const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline void qrdma_mig_fail(struct qrdma_mig *m, int error,
                                  const char *field, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (m->error) {
        return;
    }
    m->error = error;
    n = snprintf(m->msg, sizeof(m->msg),
                 "section %s, field %s: ", m->section ? m->section : "header",
                 field);
    if (n < 0 || (size_t)n >= sizeof(m->msg)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(m->msg + n, sizeof(m->msg) - n, fmt, ap);
    va_end(ap);
}

/*
 * CRC-32, IEEE 802.3 polynomial (reflected), with the usual pre- and
 * post-inversion.
 */
static inline uint32_t qrdma_mig_crc32(uint32_t crc, const uint8_t *p,
                                       size_t len)
{
    static uint32_t tab[256];
    static bool ready;

    if (!ready) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;

            for (int k = 0; k < 8; k++) {
                c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
            }
            tab[i] = c;
        }
        ready = true;
    }
    crc = ~crc;
    while (len--) {
        crc = tab[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }
    return ~crc;
}

static inline void qrdma_mig_put_le(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static inline uint64_t qrdma_mig_get_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < n; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

/*
 * Saving: room for n more bytes; false (and the failure recorded) if out of
 * memory.
 */
static inline bool qrdma_mig_reserve(struct qrdma_mig *m, size_t n)
{
    size_t cap = m->cap ? m->cap : 4096;
    uint8_t *nb;

    if (m->error) {
        return false;
    }
    if (m->len + n <= m->cap) {
        return true;
    }
    while (cap < m->len + n) {
        cap *= 2;
    }
    nb = realloc(m->buf, cap);
    if (!nb) {
        qrdma_mig_fail(m, -ENOMEM, "-", "out of memory for the stream");
        return false;
    }
    m->buf = nb;
    m->cap = cap;
    return true;
}

static inline void qrdma_mig_seen(struct qrdma_mig *m, const char *field,
                                  unsigned width)
{
    if (m->on_field && !m->loading && !m->error && m->section) {
        m->on_field(m->on_field_opaque, m->sec_tag, m->sec_version, field,
                    width);
    }
}

/* n bytes at p out to the stream or in from it. */
static inline void qrdma_mig_raw(struct qrdma_mig *m, const char *field,
                                 void *p, size_t n)
{
    if (m->error) {
        return;
    }
    if (!m->loading) {
        if (qrdma_mig_reserve(m, n)) {
            memcpy(m->buf + m->len, p, n);
            m->len += n;
        }
        return;
    }
    if (n > m->sec_end - m->pos) {
        qrdma_mig_fail(m, -EINVAL, field,
                       "the section ends %zu bytes into it, %zu short",
                       m->sec_end - m->pos, n);
        return;
    }
    memcpy(p, m->in + m->pos, n);
    m->pos += n;
}

/* A byte string of n bytes, the same length both ways. */
static inline void qrdma_mig_bytes(struct qrdma_mig *m, const char *field,
                                   void *p, size_t n)
{
    qrdma_mig_seen(m, field, 0);
    qrdma_mig_raw(m, field, p, n);
}

static inline uint64_t qrdma_mig_uint(struct qrdma_mig *m, const char *field,
                                      uint64_t v, unsigned n)
{
    uint8_t b[8];

    qrdma_mig_put_le(b, v, n);
    qrdma_mig_seen(m, field, n);
    qrdma_mig_raw(m, field, b, n);
    return m->loading && !m->error ? qrdma_mig_get_le(b, n) : v;
}

static inline void qrdma_mig_u8(struct qrdma_mig *m, const char *field,
                                uint8_t *v)
{
    *v = (uint8_t)qrdma_mig_uint(m, field, *v, 1);
}

static inline void qrdma_mig_u16(struct qrdma_mig *m, const char *field,
                                 uint16_t *v)
{
    *v = (uint16_t)qrdma_mig_uint(m, field, *v, 2);
}

static inline void qrdma_mig_u32(struct qrdma_mig *m, const char *field,
                                 uint32_t *v)
{
    *v = (uint32_t)qrdma_mig_uint(m, field, *v, 4);
}

static inline void qrdma_mig_u64(struct qrdma_mig *m, const char *field,
                                 uint64_t *v)
{
    *v = qrdma_mig_uint(m, field, *v, 8);
}

static inline void qrdma_mig_bool(struct qrdma_mig *m, const char *field,
                                  bool *v)
{
    uint64_t x = qrdma_mig_uint(m, field, *v, 1);

    if (m->loading && !m->error && x > 1) {
        qrdma_mig_fail(m, -EINVAL, field, "%llu is not a boolean",
                       (unsigned long long)x);
        return;
    }
    *v = x;
}

/* A value that must not exceed max: loading refuses a larger one by name. */
static inline void qrdma_mig_u32_max(struct qrdma_mig *m, const char *field,
                                     uint32_t *v, uint32_t max)
{
    uint32_t x = (uint32_t)qrdma_mig_uint(m, field, *v, 4);

    if (m->loading && !m->error && x > max) {
        qrdma_mig_fail(m, -EINVAL, field, "%u is above %u", x, max);
        return;
    }
    *v = x;
}

static inline void qrdma_mig_u8_max(struct qrdma_mig *m, const char *field,
                                    uint8_t *v, uint8_t max)
{
    uint8_t x = (uint8_t)qrdma_mig_uint(m, field, *v, 1);

    if (m->loading && !m->error && x > max) {
        qrdma_mig_fail(m, -EINVAL, field, "%u is above %u", x, max);
        return;
    }
    *v = x;
}

/*
 * A field the device has and the stream must agree with (a property, a size).
 */
static inline void qrdma_mig_u32_same(struct qrdma_mig *m, const char *field,
                                      uint32_t v)
{
    uint32_t x = (uint32_t)qrdma_mig_uint(m, field, v, 4);

    if (m->loading && !m->error && x != v) {
        qrdma_mig_fail(m, -EINVAL, field, "the stream has %u, this device %u",
                       x, v);
    }
}

/*
 * A deadline on the guest clock (0: not armed), carried as the time left
 * (or, with past, an instant before now, as the time since).
 */
static inline void qrdma_mig_deadline(struct qrdma_mig *m, const char *field,
                                      uint64_t *t, bool past)
{
    uint64_t rel = 0;

    if (!m->loading && *t && *t != UINT64_MAX) {
        rel = past ? (m->now_ns > *t ? m->now_ns - *t : 0)
                   : (*t > m->now_ns ? *t - m->now_ns : 0);
        rel += 1;               /* 0 stays "not armed" */
    } else if (!m->loading && *t == UINT64_MAX) {
        rel = UINT64_MAX;
    }
    qrdma_mig_u64(m, field, &rel);
    if (!m->loading || m->error) {
        return;
    }
    if (rel == 0 || rel == UINT64_MAX) {
        *t = rel;
    } else if (past) {
        *t = m->now_ns > rel - 1 ? m->now_ns - (rel - 1) : 1;
    } else {
        *t = m->now_ns + (rel - 1);
        *t = *t ? *t : 1;
    }
}

/* ---- framing ------------------------------------------------------------- */

static inline void qrdma_mig_header(struct qrdma_mig *m, unsigned if_major,
                                    unsigned if_minor)
{
    uint8_t h[QRDMA_MIG_HDR_LEN];

    if (!m->loading) {
        memcpy(h, QRDMA_MIG_MAGIC, QRDMA_MIG_MAGIC_LEN);
        qrdma_mig_put_le(h + 8, QRDMA_MIG_FORMAT, 2);
        qrdma_mig_put_le(h + 10, if_major, 2);
        qrdma_mig_put_le(h + 12, if_minor, 2);
        qrdma_mig_put_le(h + 14, 0, 2);
        qrdma_mig_bytes(m, "header", h, sizeof(h));
        return;
    }
    if (m->in_len < sizeof(h)) {
        qrdma_mig_fail(m, -EINVAL, "magic",
                       "%zu bytes: too short for a qrdma stream", m->in_len);
        return;
    }
    memcpy(h, m->in, sizeof(h));
    m->pos = sizeof(h);
    if (memcmp(h, QRDMA_MIG_MAGIC, QRDMA_MIG_MAGIC_LEN)) {
        qrdma_mig_fail(m, -EINVAL, "magic", "not a qrdma device state stream");
    } else if (qrdma_mig_get_le(h + 8, 2) != QRDMA_MIG_FORMAT) {
        qrdma_mig_fail(m, -EINVAL, "format", "format %u, this build reads %u",
                       (unsigned)qrdma_mig_get_le(h + 8, 2), QRDMA_MIG_FORMAT);
    } else if (qrdma_mig_get_le(h + 10, 2) != if_major ||
               qrdma_mig_get_le(h + 12, 2) != if_minor) {
        qrdma_mig_fail(m, -EINVAL, "interface",
                       "from interface %u.%u, this device is %u.%u",
                       (unsigned)qrdma_mig_get_le(h + 10, 2),
                       (unsigned)qrdma_mig_get_le(h + 12, 2), if_major,
                       if_minor);
    } else if (qrdma_mig_get_le(h + 14, 2)) {
        qrdma_mig_fail(m, -EINVAL, "reserved", "not zero");
    }
}

/*
 * Open section tag (name for messages). Saving writes its header; loading
 * finds it next in the stream, skipping optional sections it does not
 * know, checks its CRC and version, and bounds the reads that follow to
 * its payload. Returns the section's version in the stream (0 on failure).
 */
static inline unsigned qrdma_mig_section(struct qrdma_mig *m, uint32_t tag,
                                         const char *name, unsigned version)
{
    if (m->error) {
        return 0;
    }
    m->section = name;
    if (!m->loading) {
        m->sec_tag = tag;
        m->sec_version = version;
        qrdma_mig_seen(m, NULL, 0);
        if (qrdma_mig_reserve(m, QRDMA_MIG_SEC_HDR_LEN)) {
            m->sec_start = m->len;
            qrdma_mig_put_le(m->buf + m->len, tag, 4);
            qrdma_mig_put_le(m->buf + m->len + 4, version, 2);
            qrdma_mig_put_le(m->buf + m->len + 6, 0, 2);
            /* length and CRC when it closes */
            m->len += QRDMA_MIG_SEC_HDR_LEN;
        }
        return version;
    }
    for (;;) {
        const uint8_t *h = m->in + m->pos;
        uint32_t t, flags, len, crc;

        if (m->in_len - m->pos < QRDMA_MIG_SEC_HDR_LEN) {
            qrdma_mig_fail(m, -EINVAL, "tag",
                           "the stream ends before the section");
            return 0;
        }
        t = (uint32_t)qrdma_mig_get_le(h, 4);
        m->sec_version = (unsigned)qrdma_mig_get_le(h + 4, 2);
        flags = (uint32_t)qrdma_mig_get_le(h + 6, 2);
        len = (uint32_t)qrdma_mig_get_le(h + 8, 4);
        crc = (uint32_t)qrdma_mig_get_le(h + 12, 4);
        if (len > m->in_len - m->pos - QRDMA_MIG_SEC_HDR_LEN) {
            qrdma_mig_fail(m, -EINVAL, "length",
                           "%u bytes, beyond the stream's end", len);
            return 0;
        }
        if (qrdma_mig_crc32(qrdma_mig_crc32(0, h, 12),
                            h + QRDMA_MIG_SEC_HDR_LEN, len) != crc) {
            qrdma_mig_fail(m, -EINVAL, "crc",
                           "checksum mismatch: the stream is corrupt");
            return 0;
        }
        if (flags & ~QRDMA_MIG_SEC_FLAGS) {
            qrdma_mig_fail(m, -EINVAL, "flags", "unknown flags 0x%x", flags);
            return 0;
        }
        if (t != tag && (flags & QRDMA_MIG_SEC_OPTIONAL)) {
            /* a later version's extra: skip it */
            m->pos += QRDMA_MIG_SEC_HDR_LEN + len;
            continue;
        }
        if (t != tag) {
            char have[5];

            qrdma_mig_put_le((uint8_t *)have, t, 4);
            for (int i = 0; i < 4; i++) {
                have[i] = have[i] >= 0x20 && have[i] < 0x7f ? have[i] : '?';
            }
            have[4] = 0;
            qrdma_mig_fail(m, -EINVAL, "tag",
                           "found section '%s' (0x%08x), which this build "
                           "cannot skip",
                           have, t);
            return 0;
        }
        if (m->sec_version == 0 || m->sec_version > version) {
            qrdma_mig_fail(m, -EINVAL, "version",
                           "version %u, this build reads up to %u",
                           m->sec_version, version);
            return 0;
        }
        m->pos += QRDMA_MIG_SEC_HDR_LEN;
        m->sec_end = m->pos + len;
        return m->sec_version;
    }
}

/*
 * Close the open section: saving fills in its length and CRC; loading wants it
 * all read.
 */
static inline void qrdma_mig_section_end(struct qrdma_mig *m)
{
    if (m->error) {
        return;
    }
    if (!m->loading) {
        uint8_t *h = m->buf + m->sec_start;
        size_t len = m->len - m->sec_start - QRDMA_MIG_SEC_HDR_LEN;

        if (len > UINT32_MAX) {
            qrdma_mig_fail(m, -E2BIG, "length", "%zu bytes: too long", len);
            return;
        }
        qrdma_mig_put_le(h + 8, len, 4);
        qrdma_mig_put_le(h + 12,
                         qrdma_mig_crc32(qrdma_mig_crc32(0, h, 12),
                                         h + QRDMA_MIG_SEC_HDR_LEN, len),
                         4);
    } else if (m->pos != m->sec_end) {
        qrdma_mig_fail(m, -EINVAL, "length", "%zu bytes left over",
                       m->sec_end - m->pos);
        return;
    }
    m->sec_end = m->in_len;
    m->section = NULL;
}

/*
 * Does the next section carry tag? (Loading: for sections only some streams
 * have.)
 */
static inline bool qrdma_mig_next_is(const struct qrdma_mig *m, uint32_t tag)
{
    return m->loading && !m->error &&
           m->in_len - m->pos >= QRDMA_MIG_SEC_HDR_LEN &&
           (uint32_t)qrdma_mig_get_le(m->in + m->pos, 4) == tag;
}

#endif /* QRDMA_MIG_STREAM_H */
