/*
 * Communication-management MADs (InfiniBand Architecture Specification
 * volume 1, chapter 12; RoCE annex A16/A17), as the verbs backend's CM
 * proxy reads them from the guest's GSI QP and writes them to it
 * (docs/backends.md, "rdma_cm in verbs mode"). Plain C: no libibverbs,
 * no librdmacm.
 *
 * A MAD is 256 bytes: a 24-byte common header, then the message. Every
 * field is big-endian; fields are named by the byte of the message
 * (after the header) where they start and their bit offset from that
 * byte's most significant bit, as the specification's tables do. One
 * struct holds any message: which members a message carries is the
 * codec's table (vb_cm_mad.c), so decode and encode cannot disagree.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_VB_CM_MAD_H
#define QRDMA_VB_CM_MAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VB_MAD_BYTES            256
#define VB_MAD_HDR_BYTES        24
#define VB_MAD_BASE_VERSION     1
#define VB_MAD_CLASS_CM         0x07
#define VB_MAD_CM_CLASS_VERSION 2
#define VB_MAD_METHOD_SEND      0x03

/* The CM's attribute IDs: which message a MAD is. */
enum vb_cm_attr {
    VB_CM_REQ      = 0x0010,
    VB_CM_MRA      = 0x0011,
    VB_CM_REJ      = 0x0012,
    VB_CM_REP      = 0x0013,
    VB_CM_RTU      = 0x0014,
    VB_CM_DREQ     = 0x0015,
    VB_CM_DREP     = 0x0016,
    VB_CM_SIDR_REQ = 0x0017,
    VB_CM_SIDR_REP = 0x0018,
    VB_CM_LAP      = 0x0019,
    VB_CM_APR      = 0x001a,
};

/* Private data bytes each message carries. */
#define VB_CM_REQ_PDATA         92
#define VB_CM_MRA_PDATA         222
#define VB_CM_REJ_PDATA         148
#define VB_CM_REP_PDATA         196
#define VB_CM_RTU_PDATA         224
#define VB_CM_DREQ_PDATA        220
#define VB_CM_DREP_PDATA        224
#define VB_CM_SIDR_REQ_PDATA    216
#define VB_CM_SIDR_REP_PDATA    136
#define VB_CM_PDATA_MAX         224
/* REJ's and SIDR_REP's additional information */
#define VB_CM_ARI_MAX           72

/* REQ's transport service type. */
#define VB_CM_TRANSPORT_RC      0
#define VB_CM_TRANSPORT_UC      1

/* MRA's and REJ's "message" field: which message is answered. */
#define VB_CM_MSG_REQ           0
#define VB_CM_MSG_REP           1
#define VB_CM_MSG_OTHER         2

/* REJ reasons (IBTA table 109) the proxy sends. */
#define VB_CM_REJ_NO_QP               1
#define VB_CM_REJ_NO_RESOURCES        3
#define VB_CM_REJ_TIMEOUT             4
#define VB_CM_REJ_UNSUPPORTED_REQ     5
#define VB_CM_REJ_INVALID_COMM_ID     6
#define VB_CM_REJ_INVALID_SERVICE_ID  8
#define VB_CM_REJ_INVALID_GID         12
#define VB_CM_REJ_CONSUMER_DEFINED    28

/* SIDR_REP status (IBTA table 121). */
#define VB_CM_SIDR_SUCCESS      0
#define VB_CM_SIDR_UNSUPPORTED  1       /* service ID not supported */
#define VB_CM_SIDR_REJECT       2       /* rejected by the service provider */
#define VB_CM_SIDR_NO_QP        3

/* A path (REQ's primary path; the alternate is never used on RoCE). */
struct vb_cm_path {
    uint16_t local_lid, remote_lid;     /* 0xffff, permissive, on RoCE */
    uint8_t local_gid[16], remote_gid[16];
    uint32_t flow_label;
    uint8_t packet_rate;
    uint8_t traffic_class;
    uint8_t hop_limit;
    uint8_t sl;
    bool subnet_local;
    uint8_t local_ack_timeout;
};

/*
 * One CM message, header fields included. local/remote are the sender's
 * view: local_comm_id is the sender's communication ID (SIDR: the request
 * ID). qpn is REQ's and REP's local QPN, DREQ's remote QPN, SIDR_REP's QPN.
 */
struct vb_cm_msg {
    uint16_t attr;                      /* enum vb_cm_attr */
    uint8_t method;
    uint64_t tid;
    uint32_t local_comm_id, remote_comm_id;
    uint64_t service_id;
    uint64_t ca_guid;
    uint32_t qkey;
    uint32_t qpn;
    uint32_t starting_psn;
    uint8_t responder_resources, initiator_depth;
    uint8_t remote_cm_response_timeout, local_cm_response_timeout;
    uint8_t transport_type;             /* VB_CM_TRANSPORT_* */
    bool e2e_flow_control;
    uint8_t retry_count, rnr_retry_count, max_cm_retries;
    bool srq;
    uint16_t pkey;
    uint8_t path_mtu;                   /* enum ibv_mtu */
    struct vb_cm_path primary;
    uint8_t target_ack_delay, failover_accepted;
    uint8_t message;                    /* MRA, REJ: VB_CM_MSG_* */
    uint8_t service_timeout;            /* MRA */
    uint16_t reason;                    /* REJ */
    uint8_t status;                     /* SIDR_REP */
    uint8_t ari_len;                    /* REJ, SIDR_REP */
    uint8_t ari[VB_CM_ARI_MAX];
    /* the message's whole private-data field (vb_cm_pdata_len bytes) */
    uint8_t pdata[VB_CM_PDATA_MAX];
};

/* The private-data bytes of message attr; 0 for one the codec lacks. */
size_t vb_cm_pdata_len(uint16_t attr);

/* A name for logs ("REQ", ...; "attribute 0x1234" is not returned). */
const char *vb_cm_attr_name(uint16_t attr);

/*
 * A MAD of len bytes: 0 with *m filled (members the message lacks are
 * zero); -EPROTO when it is not a CM MAD of class version 2 (base
 * version, class, class version); -EOPNOTSUPP for a CM attribute the
 * codec lacks (ClassPortInfo, LAP, APR); -EINVAL when len is short.
 */
int vb_cm_decode(const uint8_t *mad, size_t len, struct vb_cm_msg *m);

/* The 256 bytes of m: the header (version 1, class CM, version 2), then m. */
void vb_cm_encode(const struct vb_cm_msg *m, uint8_t mad[VB_MAD_BYTES]);

/*
 * rdma_cm's header at the start of REQ's and SIDR_REQ's private data on an
 * IP port space (the kernel's cma_hdr): version 0, the IP version, the
 * sender's port, source and destination addresses as 16 bytes each, IPv4
 * in the last 4 (IPv4-mapped).
 */
#define VB_CMA_HDR_BYTES        36
#define VB_CMA_VERSION          0x00

/*
 * The IP port spaces in a service ID's upper 48 bits (RDMA_PS_*); the port
 * is in the low 16.
 */
#define VB_CMA_SID_PS_MASK      0xffffffffffff0000ull
#define VB_CMA_SID_TCP          0x0000000001060000ull
#define VB_CMA_SID_UDP          0x0000000001110000ull

struct vb_cma_hdr {
    uint8_t ip_version;                 /* 4 or 6 */
    uint16_t src_port;
    /* IPv6 or IPv4-mapped, as GIDs are */
    uint8_t src[16], dst[16];
};

/* An IPv4-mapped GID (::ffff:a.b.c.d): RoCE v2's form of an IPv4 address. */
bool vb_gid_is_v4(const uint8_t gid[16]);

/* 0, or -EPROTO when the header's version or IP version is not one we know. */
int vb_cma_hdr_get(const uint8_t pdata[VB_CMA_HDR_BYTES], struct vb_cma_hdr *h);
void vb_cma_hdr_put(const struct vb_cma_hdr *h,
                    uint8_t pdata[VB_CMA_HDR_BYTES]);

#endif /* QRDMA_VB_CM_MAD_H */
