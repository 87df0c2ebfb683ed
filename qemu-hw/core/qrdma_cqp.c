/*
 * qrdma device core: the control QP. Creation from the CQP context,
 * the WQE ring with its VALID polarity, the opcode table, completions on
 * the CCQ, and the small commands (NOP, GID table). The HMC commands live
 * in qrdma_hmc.c, the event queues' in qrdma_eq.c, the object commands in
 * qrdma_obj.c, qrdma_qp.c and qrdma_mr.c. See docs/hw-spec.md, "Control QP".
 *
 * Commands run from the core's work kick (a bottom half in QEMU), never in
 * the MMIO handler. A batch is bounded by the ring size, and a run by a
 * budget of guest lookups (CQP_RUN_BUDGET): the rest of a heavy batch
 * runs in later runs. A bad WQE gets an error completion; it never stops
 * the device or the host.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qrdma_core_int.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define CQP_WQE_SIZE 64u
#define CCQ_CQE_SIZE 32u

/*
 * The work one run may start, in guest lookups (core->stats.guest_lookups:
 * HMC translations, PBLE reads, page probes). A command is never split:
 * the heaviest, a two-level REG_MR over the largest PBLE layout, costs
 * about 16,400 (4,096 roots, each read and its leaves translated). A run
 * starts no command once it has spent the budget and asks for another
 * run (env.kick), so the embedding's lock is let go between them instead
 * of being held for a ring of such commands (2,047, some 3e7 lookups).
 */
#define CQP_RUN_BUDGET      4096u
/*
 * A command's own: its WQE, the CCQ's shadow HEAD, its info or buffer, the CQE.
 */
#define CQP_CMD_LOOKUPS     4u

/* ---- creation ------------------------------------------------------------ */

static void cqp_fail_create(struct qrdma_core *core,
                            enum qrdma_cqp_ctx_error minor, const char *why)
{
    qrdma_guest_error(core, "CQP context at 0x%" PRIx64 " refused: %s",
                      (uint64_t)core->cqp.ctx_high << 32 | core->cqp.ctx_low,
                      why);
    core->cqp.status = QRDMA_CCQP_STATUS_ERR;
    core->cqp.errcodes =
        QRDMA_CQP_ERR_CONTEXT << QRDMA_CQP_ERRCODES_MAJOR_SHIFT | minor;
}

static void cqp_create(struct qrdma_core *core)
{
    struct qrdma_cqp *cqp = &core->cqp;
    uint64_t addr = (uint64_t)cqp->ctx_high << 32 | cqp->ctx_low;
    uint8_t raw[sizeof(struct qrdma_cqp_ctx)];
    uint64_t sizes, sq_addr, ccq_addr, shadow, ccq_ceq, ccq_ctx;
    unsigned sq_log2, ccq_log2, i;

    if (addr & 63 ||
        core->env.dma_read(core->env.opaque, addr, raw, sizeof(raw))) {
        cqp_fail_create(core, QRDMA_CQP_CTX_ERR_UNREADABLE,
                        "not a 64-byte aligned address in guest RAM");
        return;
    }
    sizes = qrdma_ld_le64(raw);
    sq_addr = qrdma_ld_le64(raw + 8);
    ccq_addr = qrdma_ld_le64(raw + 16);
    shadow = qrdma_ld_le64(raw + 24);
    sq_log2 = sizes & QRDMA_CQP_CTX_SQ_SIZE_MASK;
    ccq_log2 = (sizes & QRDMA_CQP_CTX_CCQ_SIZE_MASK) >>
               QRDMA_CQP_CTX_CCQ_SIZE_SHIFT;

    for (i = 6; i < 8; i++) {
        if (qrdma_ld_le64(raw + 8 * i)) {
            cqp_fail_create(core, QRDMA_CQP_CTX_ERR_RESERVED,
                            "reserved qwords are not zero");
            return;
        }
    }
    ccq_ceq = qrdma_ld_le64(raw + 32);
    ccq_ctx = qrdma_ld_le64(raw + 40);
    if (ccq_ceq &
            ~(QRDMA_CQP_CTX_CCQ_CEQ_ID_MASK | QRDMA_CQP_CTX_CCQ_CEQ_ENABLE) ||
        (ccq_ceq & QRDMA_CQP_CTX_CCQ_CEQ_ID_MASK) >= core->cfg.max_ceq ||
        ccq_ctx & ~QRDMA_CEQE_CQ_CTX_MASK) {
        cqp_fail_create(core, QRDMA_CQP_CTX_ERR_RESERVED,
                        "CCQ event fields: bad CEQ id, reserved bits or a 64-bit context");
        return;
    }
    if (sizes & ~(QRDMA_CQP_CTX_SQ_SIZE_MASK | QRDMA_CQP_CTX_CCQ_SIZE_MASK)) {
        cqp_fail_create(core, QRDMA_CQP_CTX_ERR_RESERVED,
                        "reserved bits of qword 0 set");
        return;
    }
    if (sq_log2 < QRDMA_CQP_SQ_SIZE_LOG2_MIN ||
        sq_log2 > QRDMA_CQP_SQ_SIZE_LOG2_MAX) {
        cqp_fail_create(core, QRDMA_CQP_CTX_ERR_SQ_SIZE,
                        "SQ size out of range");
        return;
    }
    /*
     * A CCQ at least as deep as the SQ cannot overflow while the driver keeps
     * up.
     */
    if (ccq_log2 < sq_log2) {
        cqp_fail_create(core, QRDMA_CQP_CTX_ERR_CCQ_SIZE,
                        "CCQ smaller than the SQ");
        return;
    }
    if (!qrdma_ring_in_ram(core, sq_addr, (uint64_t)CQP_WQE_SIZE << sq_log2)) {
        cqp_fail_create(core, QRDMA_CQP_CTX_ERR_SQ_ADDR,
                        "SQ not 4 KB aligned guest RAM");
        return;
    }
    if (!qrdma_ring_in_ram(core, ccq_addr,
                           (uint64_t)CCQ_CQE_SIZE << ccq_log2)) {
        cqp_fail_create(core, QRDMA_CQP_CTX_ERR_CCQ_ADDR,
                        "CCQ not 4 KB aligned guest RAM");
        return;
    }
    if ((shadow & 7) || core->env.dma_read(core->env.opaque, shadow, raw, 8)) {
        cqp_fail_create(core, QRDMA_CQP_CTX_ERR_SHADOW_ADDR,
                        "CCQ shadow area not 8-byte aligned guest RAM");
        return;
    }

    cqp->sq_addr = sq_addr;
    cqp->sq_len = 1u << sq_log2;
    cqp->ccq_addr = ccq_addr;
    cqp->ccq_len = 1u << ccq_log2;
    cqp->shadow_addr = shadow;
    cqp->sq_head = cqp->db = cqp->ccq_tail = 0;
    cqp->sq_valid = cqp->ccq_valid = true;
    cqp->ccq_ceq = ccq_ceq;
    cqp->ccq_ctx = ccq_ctx;
    cqp->created = true;
    cqp->status = QRDMA_CCQP_STATUS_DONE;
}

/* ---- commands ------------------------------------------------------------ */

static struct cqp_result bad_arg(unsigned which)
{
    return (struct cqp_result){ .major = QRDMA_CQP_ERR_INVALID_ARG,
                                .minor = which };
}

static struct cqp_result cqp_nop(struct qrdma_core *core, const uint64_t *arg)
{
    return (struct cqp_result){ 0 };
}

static struct cqp_result cqp_add_gid(struct qrdma_core *core,
                                     const uint64_t *arg)
{
    static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0,    0,
                                           0, 0, 0, 0, 0xff, 0xff };
    uint32_t index = arg[0] & QRDMA_CQP_GID_INDEX_MASK;
    uint32_t type = (arg[0] & QRDMA_CQP_GID_TYPE_MASK) >>
                    QRDMA_CQP_GID_TYPE_SHIFT;
    struct qrdma_gid_entry *e;
    uint8_t gid[16];

    if (arg[0] & ~(QRDMA_CQP_GID_INDEX_MASK | QRDMA_CQP_GID_TYPE_MASK) ||
        index >= core->cfg.gid_table_len ||
        (type != QRDMA_GID_TYPE_ROCE_V2_IPV4 &&
         type != QRDMA_GID_TYPE_ROCE_V2_IPV6)) {
        return bad_arg(0);
    }
    qrdma_st_le64(gid, arg[1]);
    qrdma_st_le64(gid + 8, arg[2]);
    if ((type == QRDMA_GID_TYPE_ROCE_V2_IPV4) !=
        !memcmp(gid, v4_prefix, sizeof(v4_prefix))) {
        return bad_arg(1);   /* the type does not match the address */
    }
    if (qrdma_dp_host_port(core) && !qrdma_dp_host_gid(core, gid)) {
        char g[QRDMA_GID_STR_LEN], host[512];

        /*
         * The port is a host NIC's: traffic can only carry the host's GIDs,
         * never one the guest made up (docs/backends.md).
         */
        qrdma_gid_str(gid, g, sizeof(g));
        qrdma_dp_host_gids_str(core, host, sizeof(host));
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG,
                              QRDMA_ADD_GID_ERR_NOT_HOST,
                              "ADD_GID: index %u: %s is not a GID of the host "
                              "port; the guest may use: %s",
                              index, g, host);
    }
    e = &core->gids[index];
    e->valid = true;
    e->type = type;
    memcpy(e->gid, gid, sizeof(gid));
    return (struct cqp_result){ 0 };
}

static struct cqp_result cqp_del_gid(struct qrdma_core *core,
                                     const uint64_t *arg)
{
    uint32_t index = arg[0] & QRDMA_CQP_GID_INDEX_MASK;

    if (arg[0] & ~QRDMA_CQP_GID_INDEX_MASK ||
        index >= core->cfg.gid_table_len || !core->gids[index].valid) {
        return bad_arg(0);
    }
    memset(&core->gids[index], 0, sizeof(core->gids[index]));
    return (struct cqp_result){ 0 };
}

static const struct {
    const char *name;
    struct cqp_result (*run)(struct qrdma_core *core, const uint64_t *arg);
} qrdma_cqp_ops[256] = {
    [QRDMA_CQP_OP_CREATE_QP] = { "CREATE_QP", qrdma_cqp_create_qp },
    [QRDMA_CQP_OP_MODIFY_QP] = { "MODIFY_QP", qrdma_cqp_modify_qp },
    [QRDMA_CQP_OP_DESTROY_QP] = { "DESTROY_QP", qrdma_cqp_destroy_qp },
    [QRDMA_CQP_OP_CREATE_CQ] = { "CREATE_CQ", qrdma_cqp_create_cq },
    [QRDMA_CQP_OP_MODIFY_CQ] = { "MODIFY_CQ", qrdma_cqp_modify_cq },
    [QRDMA_CQP_OP_DESTROY_CQ] = { "DESTROY_CQ", qrdma_cqp_destroy_cq },
    [QRDMA_CQP_OP_ALLOC_STAG] = { "ALLOC_STAG", qrdma_cqp_alloc_stag },
    [QRDMA_CQP_OP_REG_MR] = { "REG_MR", qrdma_cqp_reg_mr },
    [QRDMA_CQP_OP_QUERY_STAG] = { "QUERY_STAG", qrdma_cqp_query_stag },
    [QRDMA_CQP_OP_DEALLOC_STAG] = { "DEALLOC_STAG", qrdma_cqp_dealloc_stag },
    [QRDMA_CQP_OP_QUERY_QP] = { "QUERY_QP", qrdma_cqp_query_qp },
    [QRDMA_CQP_OP_CREATE_CEQ] = { "CREATE_CEQ", qrdma_cqp_create_ceq },
    [QRDMA_CQP_OP_DESTROY_CEQ] = { "DESTROY_CEQ", qrdma_cqp_destroy_ceq },
    [QRDMA_CQP_OP_CREATE_AEQ] = { "CREATE_AEQ", qrdma_cqp_create_aeq },
    [QRDMA_CQP_OP_DESTROY_AEQ] = { "DESTROY_AEQ", qrdma_cqp_destroy_aeq },
    [QRDMA_CQP_OP_CREATE_AH] = { "CREATE_AH", qrdma_cqp_create_ah },
    [QRDMA_CQP_OP_MODIFY_AH] = { "MODIFY_AH", qrdma_cqp_modify_ah },
    [QRDMA_CQP_OP_DESTROY_AH] = { "DESTROY_AH", qrdma_cqp_destroy_ah },
    [QRDMA_CQP_OP_UPDATE_PE_SDS] = { "UPDATE_PE_SDS", qrdma_hmc_update_pe_sds },
    [QRDMA_CQP_OP_QUERY_FPM_VAL] = { "QUERY_FPM_VAL", qrdma_hmc_query_fpm_val },
    [QRDMA_CQP_OP_COMMIT_FPM_VAL] = { "COMMIT_FPM_VAL",
                                      qrdma_hmc_commit_fpm_val },
    [QRDMA_CQP_OP_NOP] = { "NOP", cqp_nop },
    [QRDMA_CQP_OP_ADD_GID] = { "ADD_GID", cqp_add_gid },
    [QRDMA_CQP_OP_DEL_GID] = { "DEL_GID", cqp_del_gid },
    [QRDMA_CQP_OP_MCAST_ATTACH] = { "MCAST_ATTACH", qrdma_cqp_mcast_attach },
    [QRDMA_CQP_OP_MCAST_DETACH] = { "MCAST_DETACH", qrdma_cqp_mcast_detach },
    [QRDMA_CQP_OP_CREATE_SRQ] = { "CREATE_SRQ", qrdma_cqp_create_srq },
    [QRDMA_CQP_OP_MODIFY_SRQ] = { "MODIFY_SRQ", qrdma_cqp_modify_srq },
    [QRDMA_CQP_OP_DESTROY_SRQ] = { "DESTROY_SRQ", qrdma_cqp_destroy_srq },
    [QRDMA_CQP_OP_QUERY_SRQ] = { "QUERY_SRQ", qrdma_cqp_query_srq },
};

void qrdma_gid_str(const uint8_t gid[16], char *buf, size_t len)
{
    char text[INET6_ADDRSTRLEN];

    if (!inet_ntop(AF_INET6, gid, text, sizeof(text))) {
        snprintf(text, sizeof(text), "?");
    }
    snprintf(buf, len, "%s", text);
}

bool qrdma_core_gid_is_own(struct qrdma_core *core, const uint8_t gid[16])
{
    uint32_t i;

    for (i = 0; i < core->cfg.gid_table_len; i++) {
        if (core->gids[i].valid && !memcmp(core->gids[i].gid, gid, 16)) {
            return true;
        }
    }
    return false;
}

/* ---- the ring ------------------------------------------------------------ */

/* Room for one more CQE? The driver's head comes from the shadow area. */
static bool ccq_has_room(struct qrdma_core *core)
{
    struct qrdma_cqp *cqp = &core->cqp;
    uint8_t raw[8];
    uint64_t head;

    if (core->env.dma_read(core->env.opaque, cqp->shadow_addr, raw,
                           sizeof(raw))) {
        return false;
    }
    head = qrdma_ld_le64(raw);
    if (head >= cqp->ccq_len) {
        qrdma_guest_error(core,
                          "CCQ head %" PRIu64
                          " in the shadow area is outside a CCQ of %u",
                          head, cqp->ccq_len);
        return false;
    }
    return ((cqp->ccq_tail + 1) & (cqp->ccq_len - 1)) != head;
}

static void ccq_post(struct qrdma_core *core, uint32_t wqe_index,
                     uint8_t opcode, uint64_t scratch, struct cqp_result res)
{
    struct qrdma_cqp *cqp = &core->cqp;
    uint8_t cqe[CCQ_CQE_SIZE];
    uint64_t addr = cqp->ccq_addr + (uint64_t)cqp->ccq_tail * CCQ_CQE_SIZE;

    qrdma_st_le64(cqe, scratch);
    qrdma_st_le64(cqe + 8, res.retval);
    qrdma_st_le64(cqe + 16,
                  res.minor | (uint64_t)res.major << QRDMA_CCQ_CQE_MAJOR_SHIFT |
                      (uint64_t)opcode << QRDMA_CCQ_CQE_OPCODE_SHIFT |
                      (uint64_t)wqe_index << QRDMA_CCQ_CQE_WQE_INDEX_SHIFT);
    qrdma_st_le64(cqe + 24, cqp->ccq_valid ? QRDMA_CCQ_CQE_VALID : 0);
    /* Body first, then the qword holding VALID: the driver polls on it. */
    if (core->env.dma_write(core->env.opaque, addr, cqe, 24) ||
        core->env.dma_write(core->env.opaque, addr + 24, cqe + 24, 8)) {
        qrdma_guest_error(core,
                          "CCQ entry %u at 0x%" PRIx64 " is not guest RAM",
                          cqp->ccq_tail, addr);
    }
    cqp->ccq_tail = (cqp->ccq_tail + 1) & (cqp->ccq_len - 1);
    if (!cqp->ccq_tail) {
        cqp->ccq_valid = !cqp->ccq_valid;
    }
    /* Until its CEQ exists the driver polls, so no event is no error. */
    if (cqp->ccq_ceq & QRDMA_CQP_CTX_CCQ_CEQ_ENABLE) {
        qrdma_ceq_post(core, cqp->ccq_ceq & QRDMA_CQP_CTX_CCQ_CEQ_ID_MASK,
                       cqp->ccq_ctx);
    }
}

void qrdma_cqp_process(struct qrdma_core *core)
{
    struct qrdma_cqp *cqp = &core->cqp;
    uint64_t start = core->stats.guest_lookups;
    uint32_t budget;

    if (!cqp->created || cqp->stalled) {
        return;
    }
    for (budget = cqp->sq_len; budget && cqp->sq_head != cqp->db; budget--) {
        uint8_t raw[CQP_WQE_SIZE];
        uint64_t arg[6], scratch, hdr;
        uint64_t addr = cqp->sq_addr + (uint64_t)cqp->sq_head * CQP_WQE_SIZE;
        struct cqp_result res;
        uint8_t opcode;
        int i;

        if (core->stats.guest_lookups - start >= CQP_RUN_BUDGET) {
            /* The rest of the batch in a later run, in order, from sq_head. */
            core->env.kick(core->env.opaque, QRDMA_WORK_CQP);
            return;
        }
        core->stats.guest_lookups += CQP_CMD_LOOKUPS;
        if (!ccq_has_room(core)) {
            qrdma_guest_error(
                core,
                "CQP: no room in the CCQ; WQE %u waits for the next doorbell",
                cqp->sq_head);
            cqp->errcodes = QRDMA_CQP_ERR_CCQ_FULL
                            << QRDMA_CQP_ERRCODES_MAJOR_SHIFT;
            return;
        }
        if (core->env.dma_read(core->env.opaque, addr, raw, sizeof(raw))) {
            memset(raw, 0, sizeof(raw));    /* reported as not valid below */
        }
        for (i = 0; i < 6; i++) {
            arg[i] = qrdma_ld_le64(raw + 8 * i);
        }
        scratch = qrdma_ld_le64(raw + 48);
        hdr = qrdma_ld_le64(raw + 56);
        opcode = hdr & QRDMA_CQP_WQE_OPCODE_MASK;

        if (opcode == core->cfg.cqp_stall_opcode &&
            !!(hdr & QRDMA_CQP_WQE_VALID) == cqp->sq_valid) {
            /*
             * Test hook (x-cqp-stall-opcode): the engine hangs here until
             * reset.
             */
            qrdma_guest_error(
                core, "CQP stalled at WQE %u (opcode 0x%x, x-cqp-stall-opcode)",
                cqp->sq_head, opcode);
            cqp->stalled = true;
            return;
        }
        if (!!(hdr & QRDMA_CQP_WQE_VALID) != cqp->sq_valid) {
            qrdma_guest_error(core, "CQP WQE %u rung without VALID=%d",
                              cqp->sq_head, cqp->sq_valid);
            res = (struct cqp_result){ .major = QRDMA_CQP_ERR_NOT_VALID };
        } else if (hdr & ~(QRDMA_CQP_WQE_VALID | QRDMA_CQP_WQE_OPCODE_MASK)) {
            qrdma_guest_error(core, "CQP WQE %u: reserved header bits set",
                              cqp->sq_head);
            res = bad_arg(7);
        } else if (!qrdma_cqp_ops[opcode].run) {
            qrdma_guest_error(core, "CQP WQE %u: unknown opcode 0x%x",
                              cqp->sq_head, opcode);
            res = (struct cqp_result){ .major = QRDMA_CQP_ERR_BAD_OPCODE };
        } else {
            res = qrdma_cqp_ops[opcode].run(core, arg);
            if (res.major) {
                qrdma_guest_error(core,
                                  "CQP %s (WQE %u) failed: major %u minor %u",
                                  qrdma_cqp_ops[opcode].name, cqp->sq_head,
                                  res.major, res.minor);
            }
        }
        if (res.major) {
            cqp->errcodes = res.major << QRDMA_CQP_ERRCODES_MAJOR_SHIFT |
                            res.minor;
        }
        core->stats.cqp_commands++;
        qrdma_trace(core, QRDMA_TRACE_CQP_CMD, cqp->sq_head, opcode, res.major,
                    res.minor,
                    qrdma_cqp_ops[opcode].name ? qrdma_cqp_ops[opcode].name
                                               : "?",
                    NULL);
        ccq_post(core, cqp->sq_head, opcode, scratch, res);
        cqp->sq_head = (cqp->sq_head + 1) & (cqp->sq_len - 1);
        if (!cqp->sq_head) {
            cqp->sq_valid = !cqp->sq_valid;
        }
    }
}

/* ---- registers ----------------------------------------------------------- */

static void reg_write_ctx_low(struct qrdma_core *core, uint32_t offset,
                              uint32_t value)
{
    if (core->cqp.created) {
        qrdma_guest_error(core,
                          "CCQP_CTX_LOW written while the CQP exists; ignored");
        return;
    }
    if (!core->pe_ready) {
        qrdma_guest_error(
            core, "CCQP_CTX_LOW written before the engine is ready; ignored");
        return;
    }
    core->cqp.ctx_low = value;
    cqp_create(core);
}

static void reg_write_ctx_high(struct qrdma_core *core, uint32_t offset,
                               uint32_t value)
{
    if (core->cqp.created) {
        qrdma_guest_error(
            core, "CCQP_CTX_HIGH written while the CQP exists; ignored");
        return;
    }
    core->cqp.ctx_high = value;
}

static uint32_t reg_read_cqp(struct qrdma_core *core, uint32_t offset)
{
    switch (offset) {
    case QRDMA_REG_CCQP_CTX_LOW:
        return core->cqp.ctx_low;
    case QRDMA_REG_CCQP_CTX_HIGH:
        return core->cqp.ctx_high;
    case QRDMA_REG_CCQP_STATUS:
        return core->cqp.status;
    case QRDMA_REG_CQP_DB:
        return core->cqp.db;
    case QRDMA_REG_CQP_TAIL:
        return core->cqp.sq_head;
    default: /* QRDMA_REG_CQP_ERRCODES */
        return core->cqp.errcodes;
    }
}

static void reg_write_db(struct qrdma_core *core, uint32_t offset,
                         uint32_t value)
{
    if (!core->cqp.created) {
        qrdma_guest_error(core, "CQP doorbell before the CQP exists; ignored");
        return;
    }
    if (value >= core->cqp.sq_len) {
        qrdma_guest_error(core, "CQP doorbell %u outside a ring of %u; ignored",
                          value, core->cqp.sq_len);
        return;
    }
    core->cqp.db = value;
    core->env.kick(core->env.opaque, QRDMA_WORK_CQP);
}

#define B QRDMA_REG_CQP_BASE
const struct qrdma_reg_desc qrdma_cqp_reg_table[QRDMA_REG_BLOCK_SIZE / 4] = {
    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_CCQP_CTX_LOW, B, "CCQP_CTX_LOW",
                           0xffffffffu, reg_read_cqp, reg_write_ctx_low),
    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_CCQP_CTX_HIGH, B, "CCQP_CTX_HIGH",
                           0xffffffffu, reg_read_cqp, reg_write_ctx_high),
    QRDMA_REG_RO_LIVE_DESC(QRDMA_REG_CCQP_STATUS, B, "CCQP_STATUS",
                           reg_read_cqp),
    QRDMA_REG_RW_LIVE_DESC(QRDMA_REG_CQP_DB, B, "CQP_DB", 0xffffffffu,
                           reg_read_cqp, reg_write_db),
    QRDMA_REG_RO_LIVE_DESC(QRDMA_REG_CQP_TAIL, B, "CQP_TAIL", reg_read_cqp),
    QRDMA_REG_RO_LIVE_DESC(QRDMA_REG_CQP_ERRCODES, B, "CQP_ERRCODES",
                           reg_read_cqp),
};
#undef B

void qrdma_cqp_reset(struct qrdma_core *core)
{
    memset(&core->cqp, 0, sizeof(core->cqp));
    memset(core->gids, 0, sizeof(core->gids));
}
