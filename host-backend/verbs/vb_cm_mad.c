/*
 * The CM MAD codec (vb_cm_mad.h): one table of every message's fields,
 * walked the same way to decode and to encode.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "vb_cm_mad.h"

#include <errno.h>
#include <string.h>

/* Where a member of struct vb_cm_msg sits in a message. */
struct cm_field {
    uint16_t attr;
    uint16_t byte;              /* from the end of the MAD header */
    uint8_t bit;                /* from that byte's most significant bit */
    /* bits of an integer member; 0: a byte array of len bytes */
    uint8_t width;
    uint16_t len;
    uint16_t member;            /* offsetof(struct vb_cm_msg, ...) */
    uint8_t size;               /* sizeof the member */
};

#define MSIZE(name) sizeof(((struct vb_cm_msg *)0)->name)
#define INT(a, byte, bit, width, name)                                         \
    { a, byte, bit, width, 0, offsetof(struct vb_cm_msg, name), MSIZE(name) }
#define BYTES(a, byte, len, name)                                              \
    { a, byte, 0, 0, len, offsetof(struct vb_cm_msg, name), MSIZE(name) }

/*
 * IBTA volume 1 tables 106 to 120. Fields the proxy never needs (EECNs,
 * RDC, the alternate path, the extended transport type) are left out:
 * decoding ignores them and encoding leaves them zero, which is what a
 * RoCE CM sends.
 */
static const struct cm_field cm_fields[] = {
    /* REQ, table 106 */
    INT(VB_CM_REQ, 0, 0, 32, local_comm_id),
    INT(VB_CM_REQ, 8, 0, 64, service_id),
    INT(VB_CM_REQ, 16, 0, 64, ca_guid),
    INT(VB_CM_REQ, 28, 0, 32, qkey),
    INT(VB_CM_REQ, 32, 0, 24, qpn),
    INT(VB_CM_REQ, 35, 0, 8, responder_resources),
    INT(VB_CM_REQ, 39, 0, 8, initiator_depth),
    INT(VB_CM_REQ, 43, 0, 5, remote_cm_response_timeout),
    INT(VB_CM_REQ, 43, 5, 2, transport_type),
    INT(VB_CM_REQ, 43, 7, 1, e2e_flow_control),
    INT(VB_CM_REQ, 44, 0, 24, starting_psn),
    INT(VB_CM_REQ, 47, 0, 5, local_cm_response_timeout),
    INT(VB_CM_REQ, 47, 5, 3, retry_count),
    INT(VB_CM_REQ, 48, 0, 16, pkey),
    INT(VB_CM_REQ, 50, 0, 4, path_mtu),
    INT(VB_CM_REQ, 50, 5, 3, rnr_retry_count),
    INT(VB_CM_REQ, 51, 0, 4, max_cm_retries),
    INT(VB_CM_REQ, 51, 4, 1, srq),
    INT(VB_CM_REQ, 52, 0, 16, primary.local_lid),
    INT(VB_CM_REQ, 54, 0, 16, primary.remote_lid),
    BYTES(VB_CM_REQ, 56, 16, primary.local_gid),
    BYTES(VB_CM_REQ, 72, 16, primary.remote_gid),
    INT(VB_CM_REQ, 88, 0, 20, primary.flow_label),
    INT(VB_CM_REQ, 91, 2, 6, primary.packet_rate),
    INT(VB_CM_REQ, 92, 0, 8, primary.traffic_class),
    INT(VB_CM_REQ, 93, 0, 8, primary.hop_limit),
    INT(VB_CM_REQ, 94, 0, 4, primary.sl),
    INT(VB_CM_REQ, 94, 4, 1, primary.subnet_local),
    INT(VB_CM_REQ, 95, 0, 5, primary.local_ack_timeout),
    BYTES(VB_CM_REQ, 140, VB_CM_REQ_PDATA, pdata),

    /* MRA, table 107 */
    INT(VB_CM_MRA, 0, 0, 32, local_comm_id),
    INT(VB_CM_MRA, 4, 0, 32, remote_comm_id),
    INT(VB_CM_MRA, 8, 0, 2, message),
    INT(VB_CM_MRA, 9, 0, 5, service_timeout),
    BYTES(VB_CM_MRA, 10, VB_CM_MRA_PDATA, pdata),

    /* REJ, table 108 */
    INT(VB_CM_REJ, 0, 0, 32, local_comm_id),
    INT(VB_CM_REJ, 4, 0, 32, remote_comm_id),
    INT(VB_CM_REJ, 8, 0, 2, message),
    INT(VB_CM_REJ, 9, 0, 7, ari_len),
    INT(VB_CM_REJ, 10, 0, 16, reason),
    BYTES(VB_CM_REJ, 12, VB_CM_ARI_MAX, ari),
    BYTES(VB_CM_REJ, 84, VB_CM_REJ_PDATA, pdata),

    /* REP, table 110 */
    INT(VB_CM_REP, 0, 0, 32, local_comm_id),
    INT(VB_CM_REP, 4, 0, 32, remote_comm_id),
    INT(VB_CM_REP, 8, 0, 32, qkey),
    INT(VB_CM_REP, 12, 0, 24, qpn),
    INT(VB_CM_REP, 20, 0, 24, starting_psn),
    INT(VB_CM_REP, 24, 0, 8, responder_resources),
    INT(VB_CM_REP, 25, 0, 8, initiator_depth),
    INT(VB_CM_REP, 26, 0, 5, target_ack_delay),
    INT(VB_CM_REP, 26, 5, 2, failover_accepted),
    INT(VB_CM_REP, 26, 7, 1, e2e_flow_control),
    INT(VB_CM_REP, 27, 0, 3, rnr_retry_count),
    INT(VB_CM_REP, 27, 3, 1, srq),
    INT(VB_CM_REP, 28, 0, 64, ca_guid),
    BYTES(VB_CM_REP, 36, VB_CM_REP_PDATA, pdata),

    /* RTU, table 111 */
    INT(VB_CM_RTU, 0, 0, 32, local_comm_id),
    INT(VB_CM_RTU, 4, 0, 32, remote_comm_id),
    BYTES(VB_CM_RTU, 8, VB_CM_RTU_PDATA, pdata),

    /* DREQ, table 112 */
    INT(VB_CM_DREQ, 0, 0, 32, local_comm_id),
    INT(VB_CM_DREQ, 4, 0, 32, remote_comm_id),
    INT(VB_CM_DREQ, 8, 0, 24, qpn),
    BYTES(VB_CM_DREQ, 12, VB_CM_DREQ_PDATA, pdata),

    /* DREP, table 113 */
    INT(VB_CM_DREP, 0, 0, 32, local_comm_id),
    INT(VB_CM_DREP, 4, 0, 32, remote_comm_id),
    BYTES(VB_CM_DREP, 8, VB_CM_DREP_PDATA, pdata),

    /* SIDR_REQ, table 119 */
    INT(VB_CM_SIDR_REQ, 0, 0, 32, local_comm_id),
    INT(VB_CM_SIDR_REQ, 4, 0, 16, pkey),
    INT(VB_CM_SIDR_REQ, 8, 0, 64, service_id),
    BYTES(VB_CM_SIDR_REQ, 16, VB_CM_SIDR_REQ_PDATA, pdata),

    /* SIDR_REP, table 120 */
    INT(VB_CM_SIDR_REP, 0, 0, 32, local_comm_id),
    INT(VB_CM_SIDR_REP, 4, 0, 8, status),
    INT(VB_CM_SIDR_REP, 5, 0, 8, ari_len),
    INT(VB_CM_SIDR_REP, 8, 0, 24, qpn),
    INT(VB_CM_SIDR_REP, 12, 0, 64, service_id),
    INT(VB_CM_SIDR_REP, 20, 0, 32, qkey),
    BYTES(VB_CM_SIDR_REP, 24, VB_CM_ARI_MAX, ari),
    BYTES(VB_CM_SIDR_REP, 96, VB_CM_SIDR_REP_PDATA, pdata),
};

#define N_FIELDS (sizeof(cm_fields) / sizeof(cm_fields[0]))

static const struct {
    uint16_t attr;
    const char *name;
    uint16_t pdata;
} cm_msgs[] = {
    { VB_CM_REQ, "REQ", VB_CM_REQ_PDATA },
    { VB_CM_MRA, "MRA", VB_CM_MRA_PDATA },
    { VB_CM_REJ, "REJ", VB_CM_REJ_PDATA },
    { VB_CM_REP, "REP", VB_CM_REP_PDATA },
    { VB_CM_RTU, "RTU", VB_CM_RTU_PDATA },
    { VB_CM_DREQ, "DREQ", VB_CM_DREQ_PDATA },
    { VB_CM_DREP, "DREP", VB_CM_DREP_PDATA },
    { VB_CM_SIDR_REQ, "SIDR_REQ", VB_CM_SIDR_REQ_PDATA },
    { VB_CM_SIDR_REP, "SIDR_REP", VB_CM_SIDR_REP_PDATA },
    { VB_CM_LAP, "LAP", 0 },
    { VB_CM_APR, "APR", 0 },
};

#define N_MSGS (sizeof(cm_msgs) / sizeof(cm_msgs[0]))

size_t vb_cm_pdata_len(uint16_t attr)
{
    for (size_t i = 0; i < N_MSGS; i++) {
        if (cm_msgs[i].attr == attr) {
            return cm_msgs[i].pdata;
        }
    }
    return 0;
}

const char *vb_cm_attr_name(uint16_t attr)
{
    for (size_t i = 0; i < N_MSGS; i++) {
        if (cm_msgs[i].attr == attr) {
            return cm_msgs[i].name;
        }
    }
    return attr == 0x0001 ? "ClassPortInfo" : "an unknown attribute";
}

/* width bits from bit position pos (0: the MSB of buf[0]), big-endian. */
static uint64_t bits_get(const uint8_t *buf, unsigned pos, unsigned width)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < width; i++, pos++) {
        v = (v << 1) | ((buf[pos / 8] >> (7 - pos % 8)) & 1);
    }
    return v;
}

static void bits_put(uint8_t *buf, unsigned pos, unsigned width, uint64_t v)
{
    for (unsigned i = 0; i < width; i++, pos++) {
        uint8_t bit = (v >> (width - 1 - i)) & 1;
        uint8_t mask = 1u << (7 - pos % 8);

        buf[pos / 8] = (buf[pos / 8] & ~mask) | (bit ? mask : 0);
    }
}

static uint64_t member_get(const struct vb_cm_msg *m, const struct cm_field *f)
{
    const uint8_t *p = (const uint8_t *)m + f->member;

    switch (f->size) {
    case 1:
        return *p;      /* uint8_t and bool alike */
    case 2:
        return *(const uint16_t *)p;
    case 4:
        return *(const uint32_t *)p;
    default:
        return *(const uint64_t *)p;
    }
}

static void member_put(struct vb_cm_msg *m, const struct cm_field *f,
                       uint64_t v)
{
    uint8_t *p = (uint8_t *)m + f->member;

    switch (f->size) {
    case 1:
        /* a bool member is 1 byte too; 0 or 1 are both fine for it */
        *p = (uint8_t)v;
        break;
    case 2:
        *(uint16_t *)p = (uint16_t)v;
        break;
    case 4:
        *(uint32_t *)p = (uint32_t)v;
        break;
    default:
        *(uint64_t *)p = v;
        break;
    }
}

static uint64_t be_get(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < n; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

static void be_put(uint8_t *p, unsigned n, uint64_t v)
{
    for (unsigned i = 0; i < n; i++) {
        p[n - 1 - i] = (uint8_t)(v >> (8 * i));
    }
}

int vb_cm_decode(const uint8_t *mad, size_t len, struct vb_cm_msg *m)
{
    const uint8_t *data = mad + VB_MAD_HDR_BYTES;

    if (len < VB_MAD_BYTES) {
        return -EINVAL;
    }
    if (mad[0] != VB_MAD_BASE_VERSION || mad[1] != VB_MAD_CLASS_CM ||
        mad[2] != VB_MAD_CM_CLASS_VERSION) {
        return -EPROTO;
    }
    memset(m, 0, sizeof(*m));
    m->method = mad[3];
    m->tid = be_get(mad + 8, 8);
    m->attr = (uint16_t)be_get(mad + 16, 2);
    if (vb_cm_pdata_len(m->attr) == 0) {
        return -EOPNOTSUPP;
    }
    for (size_t i = 0; i < N_FIELDS; i++) {
        const struct cm_field *f = &cm_fields[i];

        if (f->attr != m->attr) {
            continue;
        }
        if (f->width) {
            member_put(m, f, bits_get(data, f->byte * 8u + f->bit, f->width));
        } else {
            memcpy((uint8_t *)m + f->member, data + f->byte, f->len);
        }
    }
    return 0;
}

void vb_cm_encode(const struct vb_cm_msg *m, uint8_t mad[VB_MAD_BYTES])
{
    uint8_t *data = mad + VB_MAD_HDR_BYTES;

    memset(mad, 0, VB_MAD_BYTES);
    mad[0] = VB_MAD_BASE_VERSION;
    mad[1] = VB_MAD_CLASS_CM;
    mad[2] = VB_MAD_CM_CLASS_VERSION;
    mad[3] = m->method ? m->method : VB_MAD_METHOD_SEND;
    be_put(mad + 8, 8, m->tid);
    be_put(mad + 16, 2, m->attr);
    for (size_t i = 0; i < N_FIELDS; i++) {
        const struct cm_field *f = &cm_fields[i];

        if (f->attr != m->attr) {
            continue;
        }
        if (f->width) {
            uint64_t v = member_get(m, f);

            if (f->width < 64) {
                v &= (1ull << f->width) - 1;
            }
            bits_put(data, f->byte * 8u + f->bit, f->width, v);
        } else {
            memcpy(data + f->byte, (const uint8_t *)m + f->member, f->len);
        }
    }
}

/* The first 12 bytes of an IPv4-mapped GID. */
static const uint8_t v4_mapped[12] = { [10] = 0xff, [11] = 0xff };

bool vb_gid_is_v4(const uint8_t gid[16])
{
    return !memcmp(gid, v4_mapped, sizeof(v4_mapped));
}

int vb_cma_hdr_get(const uint8_t pdata[VB_CMA_HDR_BYTES], struct vb_cma_hdr *h)
{
    memset(h, 0, sizeof(*h));
    if (pdata[0] != VB_CMA_VERSION) {
        return -EPROTO;
    }
    h->ip_version = pdata[1] >> 4;
    h->src_port = (uint16_t)be_get(pdata + 2, 2);
    switch (h->ip_version) {
    case 4:
        /* the kernel writes IPv4 in the last 4 bytes, the rest zero */
        memcpy(h->src, v4_mapped, 12);
        memcpy(h->src + 12, pdata + 4 + 12, 4);
        memcpy(h->dst, v4_mapped, 12);
        memcpy(h->dst + 12, pdata + 20 + 12, 4);
        return 0;
    case 6:
        memcpy(h->src, pdata + 4, 16);
        memcpy(h->dst, pdata + 20, 16);
        return 0;
    default:
        return -EPROTO;
    }
}

void vb_cma_hdr_put(const struct vb_cma_hdr *h, uint8_t pdata[VB_CMA_HDR_BYTES])
{
    memset(pdata, 0, VB_CMA_HDR_BYTES);
    pdata[0] = VB_CMA_VERSION;
    pdata[1] = (uint8_t)(h->ip_version << 4);
    be_put(pdata + 2, 2, h->src_port);
    if (h->ip_version == 4) {
        memcpy(pdata + 4 + 12, h->src + 12, 4);
        memcpy(pdata + 20 + 12, h->dst + 12, 4);
    } else {
        memcpy(pdata + 4, h->src, 16);
        memcpy(pdata + 20, h->dst, 16);
    }
}
