/*
 * qrdma device core: memory regions and STags. REG_MR, ALLOC_STAG,
 * DEALLOC_STAG and QUERY_STAG, the MR context in HMC, and the translation
 * the data path uses: an STag, a PD, an IOVA range and the rights wanted,
 * checked in full and then walked page by page. See docs/hw-spec.md,
 * section 18.
 *
 * An STag is MR_INDEX[31:8] | KEY[7:0]. Registration checks what it can
 * once (the PBLE range, the roots of a two-level list); translation reads
 * PBLEs through the HMC and checks every page it yields, since the driver
 * could rewrite a PBLE at any time.
 *
 * Memory windows (interface 0.7) are entries of the same table, type
 * QRDMA_MR_TYPE_MW: ALLOC_STAG makes one unbound, a BIND_MW WQE binds it
 * to a range of an MR, and a remote access through its STag is checked
 * against the window and then walks that MR (section 18.4).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qrdma_core_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define MR_CTX_SIZE 64u
#define DMA_PAGE_LOG2 12        /* a DMA MR is walked in 4 KB pieces */
/* Rights an access may ask for (a local read needs none). */
#define MR_RIGHTS (QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE | \
                   QRDMA_ACCESS_REMOTE_READ | QRDMA_ACCESS_REMOTE_ATOMIC)
#define MR_ARG1_FIELDS                                                         \
    (QRDMA_MR_ARG1_PD_MASK | QRDMA_MR_ARG1_ACCESS_MASK |                       \
     QRDMA_MR_ARG1_LEVELS_MASK | QRDMA_MR_ARG1_PAGE_MASK | QRDMA_MR_ARG1_DMA | \
     QRDMA_MR_ARG1_REREG)
#define ALLOC_ARG1_FIELDS (QRDMA_MR_ARG1_PD_MASK | QRDMA_MR_ARG1_ACCESS_MASK | \
                           QRDMA_MR_ARG1_MW_TYPE_MASK)
#define REMOTE_RIGHTS (QRDMA_ACCESS_REMOTE_WRITE | QRDMA_ACCESS_REMOTE_READ | \
                       QRDMA_ACCESS_REMOTE_ATOMIC)

_Static_assert(QRDMA_CORE_PAGE_SIZES & QRDMA_PAGE_SIZE_4K, "4 KB pages");
_Static_assert(QRDMA_CORE_PAGE_SIZES & QRDMA_PAGE_SIZE_2M, "2 MB pages");

static const struct cqp_result cqp_ok;

static uint32_t stag_index(uint32_t stag)
{
    return stag >> QRDMA_STAG_INDEX_SHIFT;
}

static uint8_t stag_key(uint32_t stag)
{
    return stag & QRDMA_STAG_KEY_MASK;
}

/* ---- the context --------------------------------------------------------- */

static void mr_ctx_render(const struct qrdma_mr *mr, uint8_t *ctx)
{
    memset(ctx, 0, MR_CTX_SIZE);
    qrdma_st_le64(ctx, mr->state | (uint64_t)mr->key << QRDMA_MR_CTX_KEY_SHIFT |
                       (uint64_t)mr->type << QRDMA_MR_CTX_TYPE_SHIFT |
                       (uint64_t)mr->pd << QRDMA_MR_CTX_PD_SHIFT);
    qrdma_st_le64(ctx + 8,
                  mr->access |
                      (uint64_t)mr->levels << QRDMA_MR_CTX1_LEVELS_SHIFT |
                      (uint64_t)mr->page_log2 << QRDMA_MR_CTX1_PAGE_SHIFT |
                      (mr->type == QRDMA_MR_TYPE_DMA ? QRDMA_MR_CTX1_DMA : 0) |
                      (uint64_t)mr->mw_type << QRDMA_MR_CTX1_MW_TYPE_SHIFT);
    qrdma_st_le64(ctx + 16, mr->iova);
    qrdma_st_le64(ctx + 24, mr->length);
    if (mr->type == QRDMA_MR_TYPE_MW) {
        qrdma_st_le64(ctx + 32,
                      mr->state == QRDMA_MR_STATE_VALID ? mr->mw_mr : 0);
        qrdma_st_le64(ctx + 48, mr->state == QRDMA_MR_STATE_VALID &&
                                mr->mw_type == QRDMA_MW_TYPE_2 ? mr->mw_qp : 0);
    } else {
        qrdma_st_le64(ctx + 32, mr->first);
        qrdma_st_le64(ctx + 48, mr->max_pages);
    }
    qrdma_st_le64(ctx + 40, mr->fbo);
    qrdma_st_le64(ctx + 56, mr->mw_bound);
}

/*
 * The context of MR `index` again, after a change the data path made (bind,
 * invalidate).
 */
static void mr_ctx_update(struct qrdma_core *core, uint32_t index,
                          const char *what)
{
    uint8_t ctx[MR_CTX_SIZE];

    mr_ctx_render(&core->obj.mr[index], ctx);
    qrdma_obj_ctx_write(core, QRDMA_HMC_MR, index, ctx, sizeof(ctx), what);
}

/* ---- checks at registration ---------------------------------------------- */

/* A page size this device translates (CAP_PAGE_SIZES). */
static bool page_size_supported(unsigned log2)
{
    return log2 <= 31 && (QRDMA_CORE_PAGE_SIZES & (1u << log2));
}

/*
 * IB: a peer may write only where the owner may (Linux's ib_check_mr_access
 * agrees).
 */
static bool access_consistent(unsigned access)
{
    return !(access &
             (QRDMA_ACCESS_REMOTE_WRITE | QRDMA_ACCESS_REMOTE_ATOMIC)) ||
           (access & QRDMA_ACCESS_LOCAL_WRITE);
}

/* STAG in arg0 names an index of the layout: the MR there, or a failure. */
static struct cqp_result stag_check(struct qrdma_core *core, uint64_t arg0,
                                    const char *cmd, struct qrdma_mr **mrp)
{
    struct cqp_result res;

    if (arg0 >> 32) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: arg0 0x%" PRIx64 " is not a 32-bit STag",
                              cmd, arg0);
    }
    res = qrdma_obj_id_check(core, QRDMA_HMC_MR, stag_index(arg0), cmd);
    if (res.major) {
        return res;
    }
    *mrp = &core->obj.mr[stag_index(arg0)];
    return cqp_ok;
}

/* An existing MR whose key the STag matches (DEALLOC_STAG, QUERY_STAG). */
static struct cqp_result stag_lookup(struct qrdma_core *core, uint64_t arg0,
                                     const char *cmd, struct qrdma_mr **mrp)
{
    struct cqp_result res = stag_check(core, arg0, cmd, mrp);

    if (res.major) {
        return res;
    }
    if ((*mrp)->state == QRDMA_MR_STATE_NONE) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE,
                              QRDMA_STATE_ERR_NOT_FOUND,
                              "%s: STag 0x%08x: no MR at index %u", cmd,
                              (uint32_t)arg0, stag_index(arg0));
    }
    if ((*mrp)->key != stag_key(arg0)) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_KEY,
                              "%s: STag 0x%08x: MR %u has key 0x%02x", cmd,
                              (uint32_t)arg0, stag_index(arg0), (*mrp)->key);
    }
    return cqp_ok;
}

/* PD and ACCESS of arg1, common to REG_MR and ALLOC_STAG. */
static struct cqp_result pd_access_check(struct qrdma_core *core,
                                         struct qrdma_mr *mr, uint64_t arg1,
                                         uint32_t stag, const char *cmd)
{
    mr->pd = arg1 & QRDMA_MR_ARG1_PD_MASK;
    mr->access = (arg1 & QRDMA_MR_ARG1_ACCESS_MASK) >>
                 QRDMA_MR_ARG1_ACCESS_SHIFT;
    if (mr->pd >= core->cfg.max_pd) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: STag 0x%08x: PD %u is beyond CAP_MAX_PD %u",
                              cmd, stag, mr->pd, core->cfg.max_pd);
    }
    if (mr->access & ~QRDMA_ACCESS_VALID_MASK) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: STag 0x%08x: ACCESS 0x%x is not within 0x%x",
                              cmd, stag, mr->access, QRDMA_ACCESS_VALID_MASK);
    }
    if (!access_consistent(mr->access)) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: STag 0x%08x: ACCESS 0x%x grants remote write or atomic "
                              "without local write", cmd, stag, mr->access);
    }
    return cqp_ok;
}

/*
 * PBLEs first..first+n-1 are in the layout and every HMC page holding them
 * is backed. PBLE i is at FPM BASE + 8i with BASE 4 KB aligned, so a page
 * starts at every index that is a multiple of 512.
 */
static struct cqp_result pble_range_check(struct qrdma_core *core,
                                          uint64_t first, uint64_t n,
                                          const char *what)
{
    const uint64_t per_page = QRDMA_HMC_PD_SIZE / sizeof(uint64_t);
    uint32_t count = core->hmc.count[QRDMA_HMC_PBLE];
    uint64_t i, gpa;

    if (first >= count || n > count - first) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_RANGE,
                              "%s: PBLEs %" PRIu64 "..%" PRIu64
                              " are beyond the %u committed",
                              what, first, first + n - 1, count);
    }
    /* n <= count <= QRDMA_HMC_PBLE_MAX: at most 4097 translations. */
    for (i = first; i < first + n; i = (i / per_page + 1) * per_page) {
        if (qrdma_core_hmc_object(core, QRDMA_HMC_PBLE, (uint32_t)i, &gpa)) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_HMC,
                                  "%s: PBLE %" PRIu64
                                  ": its HMC page is not backed",
                                  what, i);
        }
    }
    return cqp_ok;
}

/* The page list of a REG_MR: LEVELS 0, 1 or 2 (the MR's fields are set). */
static struct cqp_result mr_pages_check(struct qrdma_core *core,
                                        const struct qrdma_mr *mr,
                                        uint32_t stag)
{
    const uint64_t page_size = 1ull << mr->page_log2;
    uint64_t pages = (mr->fbo + mr->length + page_size - 1) >> mr->page_log2;
    uint64_t roots, r;
    struct cqp_result res;
    char what[40];

    snprintf(what, sizeof(what), "REG_MR: STag 0x%08x", stag);
    switch (mr->levels) {
    case 0:
        /* The pages are [first - FBO, ...): first must sit FBO into a page. */
        if ((mr->first & (page_size - 1)) != mr->fbo) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 4,
                                  "%s: address 0x%" PRIx64
                                  " is not FBO 0x%x into a page of "
                                  "0x%" PRIx64 " bytes",
                                  what, mr->first, mr->fbo, page_size);
        }
        {
            uint8_t probe;

            if (mr->first + mr->length - 1 < mr->first ||
                core->env.dma_read(core->env.opaque, mr->first, &probe, 1) ||
                core->env.dma_read(core->env.opaque, mr->first + mr->length - 1,
                                   &probe, 1)) {
                return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 4,
                                      "%s: 0x%" PRIx64 "..+0x%" PRIx64
                                      " is not guest RAM",
                                      what, mr->first, mr->length);
            }
        }
        return cqp_ok;
    case 1:
        return pble_range_check(core, mr->first, pages, what);
    default:
        /* The leaves are PBLEs too: more pages than PBLEs cannot be listed. */
        if (pages > core->hmc.count[QRDMA_HMC_PBLE]) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_PBLE,
                                  QRDMA_PBLE_ERR_RANGE,
                                  "%s: %" PRIu64
                                  " pages need more leaves than the %u PBLEs "
                                  "committed",
                                  what, pages, core->hmc.count[QRDMA_HMC_PBLE]);
        }
        roots = (pages + QRDMA_PBLE_LEAF_ENTRIES - 1) / QRDMA_PBLE_LEAF_ENTRIES;
        res = pble_range_check(core, mr->first, roots, what);
        if (res.major) {
            return res;
        }
        /*
         * Every root, each naming a leaf run: at most 4096 of them (roots <=
         * count).
         */
        for (r = 0; r < roots; r++) {
            uint64_t leaf, run = pages - r * QRDMA_PBLE_LEAF_ENTRIES;
            int err = qrdma_pble_get(core, mr->first + r, &leaf, what);

            if (err) {
                return (struct cqp_result){ .major = QRDMA_CQP_ERR_PBLE,
                                            .minor = err };
            }
            if (run > QRDMA_PBLE_LEAF_ENTRIES) {
                run = QRDMA_PBLE_LEAF_ENTRIES;
            }
            res = pble_range_check(core, leaf, run, what);
            if (res.major) {
                return res;
            }
        }
        return cqp_ok;
    }
}

/* ---- windows ------------------------------------------------------------- */

/*
 * A bound window lets go of its MR (dealloc, invalidate, rebind, QP gone); it
 * is FREE.
 */
static void mw_unbind(struct qrdma_core *core, struct qrdma_mr *mw)
{
    if (mw->state == QRDMA_MR_STATE_VALID) {
        uint32_t index = stag_index(mw->mw_mr);

        /* The bind counted it, and an MR with windows bound cannot go. */
        if (index < core->hmc.count[QRDMA_HMC_MR] &&
            core->obj.mr[index].mw_bound) {
            core->obj.mr[index].mw_bound--;
            mr_ctx_update(core, index, "window unbind");
        }
    }
    mw->state = QRDMA_MR_STATE_FREE;
    mw->iova = mw->length = 0;
    mw->access = 0;
    mw->mw_mr = mw->mw_qp = 0;
}

/* ---- commands ------------------------------------------------------------ */

/*
 * The MR at stag's index was just recorded: the backend's hook
 * (qrdma_dp_mr_register). One it refuses is forgotten again, the index
 * NONE, its context cleared and its count dropped, and the command fails.
 */
static struct cqp_result mr_mirror_forget(struct qrdma_core *core,
                                          uint32_t stag, const char *cmd,
                                          int ret)
{
    uint8_t zero[MR_CTX_SIZE];

    memset(&core->obj.mr[stag_index(stag)], 0, sizeof(core->obj.mr[0]));
    qrdma_obj_count_dec(core, QRDMA_HMC_MR);
    memset(zero, 0, sizeof(zero));
    qrdma_obj_ctx_write(core, QRDMA_HMC_MR, stag_index(stag), zero,
                        sizeof(zero), cmd);
    if (ret == -ENOMEM) {
        /*
         * Not the guest's fault: NO_RESOURCE, which the driver reports as
         * ENOMEM.
         */
        return qrdma_cqp_fail(
            core, QRDMA_CQP_ERR_NO_RESOURCE, QRDMA_RESOURCE_ERR_HOST,
            "%s: STag 0x%08x: the backend cannot register it (out of host "
            "resources)",
            cmd, stag);
    }
    return qrdma_cqp_fail(
        core, QRDMA_CQP_ERR_INVALID_ARG, 0,
        "%s: STag 0x%08x: the backend cannot register it (%s)", cmd, stag,
        ret == -ENOTSUP ? "its rkey lacks the STag's key byte"
                        : "it refuses the MR");
}

/* Success: the return value is the rkey peers use (WIRE_IDS, hw-spec 18.1). */
static struct cqp_result mr_mirror(struct qrdma_core *core, uint32_t stag,
                                   const char *cmd)
{
    struct cqp_result res = cqp_ok;
    uint32_t rkey;
    int ret = qrdma_dp_mr_register(core, stag, &rkey);

    if (ret) {
        return mr_mirror_forget(core, stag, cmd, ret);
    }
    res.retval = rkey;
    return res;
}

/*
 * A REG_MR.REREG the core has applied, mirrored like a new one: a backend
 * that holds the index replaces its registration in one step, and the
 * command returns the rkey of the new one. One it refuses leaves the old
 * registration in place, here and in the context. One it made with an
 * unusable rkey is gone from the backend again (qrdma_dp_mr_register), so
 * the MR is gone here too, as after a refused REG_MR.
 */
static struct cqp_result mr_mirror_rereg(struct qrdma_core *core, uint32_t stag,
                                         const struct qrdma_mr *old,
                                         const char *cmd)
{
    struct cqp_result res = cqp_ok;
    uint8_t ctx[MR_CTX_SIZE];
    uint32_t rkey;
    int ret = qrdma_dp_mr_register(core, stag, &rkey);

    if (!ret) {
        res.retval = rkey;
        return res;
    }
    if (ret == -ENOTSUP) {
        return mr_mirror_forget(core, stag, cmd, ret);
    }
    core->obj.mr[stag_index(stag)] = *old;
    mr_ctx_render(old, ctx);
    qrdma_obj_ctx_write(core, QRDMA_HMC_MR, stag_index(stag), ctx, sizeof(ctx),
                        cmd);
    return qrdma_cqp_fail(
        core,
        ret == -ENOMEM ? QRDMA_CQP_ERR_NO_RESOURCE : QRDMA_CQP_ERR_INVALID_ARG,
        QRDMA_RESOURCE_ERR_HOST,
        "%s: STag 0x%08x: the backend cannot re-register it (%s); the old "
        "registration stays",
        cmd, stag,
        ret == -ENOMEM ? "out of host resources" : "it refuses the MR");
}

struct cqp_result qrdma_cqp_reg_mr(struct qrdma_core *core, const uint64_t *arg)
{
    static const char cmd[] = "REG_MR";
    uint32_t stag = (uint32_t)arg[0];
    bool rereg = arg[1] & QRDMA_MR_ARG1_REREG;
    uint8_t ctx[MR_CTX_SIZE];
    struct qrdma_mr *slot, mr, old;
    struct cqp_result res;

    res = stag_check(core, arg[0], cmd, &slot);
    if (res.major) {
        return res;
    }
    if (rereg) {
        /* The index's MR, whatever its key: the new key byte is arg0's. */
        if (slot->state != QRDMA_MR_STATE_VALID ||
            slot->type != QRDMA_MR_TYPE_MEM) {
            return qrdma_cqp_fail(
                core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND,
                "%s: STag 0x%08x: REREG of MR %u, which is not a valid "
                "registered MR",
                cmd, stag, stag_index(stag));
        }
        if (arg[1] & QRDMA_MR_ARG1_DMA) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                                  "%s: STag 0x%08x: REREG with DMA", cmd, stag);
        }
        /*
         * IBTA 10.6.7: a window's range must stay the MR's while it is bound.
         */
        if (slot->mw_bound) {
            return qrdma_cqp_fail(
                core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_BUSY,
                "%s: STag 0x%08x: REREG of MR %u, which %u windows are "
                "bound to",
                cmd, stag, stag_index(stag), slot->mw_bound);
        }
    } else if (slot->state != QRDMA_MR_STATE_NONE) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_EXISTS,
                              "%s: STag 0x%08x: MR %u is in use", cmd, stag,
                              stag_index(stag));
    }
    if (arg[1] & ~MR_ARG1_FIELDS) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: STag 0x%08x: arg1 0x%" PRIx64
                              " sets reserved bits",
                              cmd, stag, arg[1]);
    }
    memset(&mr, 0, sizeof(mr));
    res = pd_access_check(core, &mr, arg[1], stag, cmd);
    if (res.major) {
        return res;
    }
    mr.key = stag_key(stag);
    mr.levels = (arg[1] & QRDMA_MR_ARG1_LEVELS_MASK) >>
                QRDMA_MR_ARG1_LEVELS_SHIFT;
    mr.page_log2 = (arg[1] & QRDMA_MR_ARG1_PAGE_MASK) >>
                   QRDMA_MR_ARG1_PAGE_SHIFT;

    if (arg[1] & QRDMA_MR_ARG1_DMA) {
        /*
         * The kernel's DMA MR: all of guest RAM at iova = address; nobody
         * else's to use.
         */
        if (mr.access & ~QRDMA_ACCESS_LOCAL_WRITE) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                                  "%s: STag 0x%08x: a DMA MR takes local access only, not "
                                  "ACCESS 0x%x", cmd, stag, mr.access);
        }
        if (mr.levels || mr.page_log2) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                                  "%s: STag 0x%08x: a DMA MR has no LEVELS or PAGE_SIZE_LOG2",
                                  cmd, stag);
        }
        mr.type = QRDMA_MR_TYPE_DMA;
    } else {
        mr.type = QRDMA_MR_TYPE_MEM;
        mr.iova = arg[2];
        mr.length = arg[3];
        mr.first = arg[4];
        if (mr.levels > 2) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                                  "%s: STag 0x%08x: LEVELS %u", cmd, stag,
                                  mr.levels);
        }
        if (!page_size_supported(mr.page_log2)) {
            return qrdma_cqp_fail(
                core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                "%s: STag 0x%08x: pages of 2^%u bytes are not in "
                "CAP_PAGE_SIZES 0x%x",
                cmd, stag, mr.page_log2, QRDMA_CORE_PAGE_SIZES);
        }
        if (!mr.length || mr.length > QRDMA_CORE_MAX_MR_SIZE) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 3,
                                  "%s: STag 0x%08x: LENGTH 0x%" PRIx64
                                  " is not 1..0x%llx",
                                  cmd, stag, mr.length, QRDMA_CORE_MAX_MR_SIZE);
        }
        if (mr.iova + mr.length - 1 < mr.iova) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 2,
                                  "%s: STag 0x%08x: IOVA 0x%" PRIx64
                                  " + LENGTH wraps",
                                  cmd, stag, mr.iova);
        }
        if (arg[5] >> mr.page_log2) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 5,
                                  "%s: STag 0x%08x: FBO 0x%" PRIx64
                                  " is not inside a page of "
                                  "2^%u bytes",
                                  cmd, stag, arg[5], mr.page_log2);
        }
        mr.fbo = (uint32_t)arg[5];
        res = mr_pages_check(core, &mr, stag);
        if (res.major) {
            return res;
        }
    }
    mr.state = QRDMA_MR_STATE_VALID;

    /*
     * Nothing is changed until every check passed; for a REREG the context
     * write is the last thing that can fail, and leaves the old MR whole.
     */
    mr_ctx_render(&mr, ctx);
    res = qrdma_obj_ctx_write(core, QRDMA_HMC_MR, stag_index(stag), ctx,
                              sizeof(ctx), cmd);
    if (res.major) {
        return res;
    }
    old = *slot;
    *slot = mr;
    if (!rereg) {
        qrdma_obj_count_inc(core, QRDMA_HMC_MR);
        return mr_mirror(core, stag, cmd);
    }
    return mr_mirror_rereg(core, stag, &old, cmd);
}

/*
 * ALLOC_STAG with MW_TYPE: an unbound window of PD mr->pd. A window takes
 * its rights from each bind, so ACCESS is 0, and it has no pages.
 */
static struct cqp_result alloc_window(struct qrdma_core *core,
                                      struct qrdma_mr *mr, const uint64_t *arg,
                                      uint32_t stag, struct qrdma_mr *slot)
{
    static const char cmd[] = "ALLOC_STAG";
    unsigned type = (arg[1] & QRDMA_MR_ARG1_MW_TYPE_MASK) >>
                    QRDMA_MR_ARG1_MW_TYPE_SHIFT;
    uint8_t ctx[MR_CTX_SIZE];
    struct cqp_result res;

    if (type != QRDMA_MW_TYPE_1 && type != QRDMA_MW_TYPE_2) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: STag 0x%08x: MW_TYPE %u is not 1 or 2", cmd,
                              stag, type);
    }
    if (mr->access) {
        return qrdma_cqp_fail(
            core, QRDMA_CQP_ERR_INVALID_ARG, 1,
            "%s: STag 0x%08x: a window has no ACCESS of its own (0x%x)", cmd,
            stag, mr->access);
    }
    if (arg[2] || arg[4]) {
        return qrdma_cqp_fail(
            core, QRDMA_CQP_ERR_INVALID_ARG, arg[2] ? 2 : 4,
            "%s: STag 0x%08x: a window has no pages (MAX_PAGES %" PRIu64
            ", PBLE %" PRIu64 ")",
            cmd, stag, arg[2], arg[4]);
    }
    mr->key = stag_key(stag);
    mr->type = QRDMA_MR_TYPE_MW;
    mr->mw_type = (uint8_t)type;
    mr->state = QRDMA_MR_STATE_FREE;
    mr_ctx_render(mr, ctx);
    res = qrdma_obj_ctx_write(core, QRDMA_HMC_MR, stag_index(stag), ctx,
                              sizeof(ctx), cmd);
    if (res.major) {
        return res;
    }
    *slot = *mr;
    qrdma_obj_count_inc(core, QRDMA_HMC_MR);
    return mr_mirror(core, stag, cmd);
}

struct cqp_result qrdma_cqp_alloc_stag(struct qrdma_core *core,
                                       const uint64_t *arg)
{
    static const char cmd[] = "ALLOC_STAG";
    uint32_t stag = (uint32_t)arg[0];
    uint8_t ctx[MR_CTX_SIZE];
    struct qrdma_mr *slot, mr;
    struct cqp_result res;
    char what[40];

    res = stag_check(core, arg[0], cmd, &slot);
    if (res.major) {
        return res;
    }
    if (slot->state != QRDMA_MR_STATE_NONE) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_EXISTS,
                              "%s: STag 0x%08x: MR %u is in use", cmd, stag,
                              stag_index(stag));
    }
    if (arg[1] & ~ALLOC_ARG1_FIELDS) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: STag 0x%08x: arg1 0x%" PRIx64
                              " sets bits other than PD "
                              "and ACCESS",
                              cmd, stag, arg[1]);
    }
    memset(&mr, 0, sizeof(mr));
    res = pd_access_check(core, &mr, arg[1], stag, cmd);
    if (res.major) {
        return res;
    }
    if (arg[1] & QRDMA_MR_ARG1_MW_TYPE_MASK) {
        return alloc_window(core, &mr, arg, stag, slot);
    }
    if (!arg[2] || arg[2] > core->hmc.count[QRDMA_HMC_PBLE]) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 2,
                              "%s: STag 0x%08x: MAX_PAGES %" PRIu64
                              " is not 1..%u",
                              cmd, stag, arg[2],
                              core->hmc.count[QRDMA_HMC_PBLE]);
    }
    snprintf(what, sizeof(what), "%s: STag 0x%08x", cmd, stag);
    res = pble_range_check(core, arg[4], arg[2], what);
    if (res.major) {
        return res;
    }
    mr.key = stag_key(stag);
    mr.type = QRDMA_MR_TYPE_FAST_REG;
    mr.state = QRDMA_MR_STATE_FREE;
    mr.max_pages = (uint32_t)arg[2];
    mr.first = arg[4];

    mr_ctx_render(&mr, ctx);
    res = qrdma_obj_ctx_write(core, QRDMA_HMC_MR, stag_index(stag), ctx,
                              sizeof(ctx), cmd);
    if (res.major) {
        return res;
    }
    *slot = mr;
    qrdma_obj_count_inc(core, QRDMA_HMC_MR);
    return mr_mirror(core, stag, cmd);
}

struct cqp_result qrdma_cqp_dealloc_stag(struct qrdma_core *core,
                                         const uint64_t *arg)
{
    static const char cmd[] = "DEALLOC_STAG";
    uint8_t zero[MR_CTX_SIZE];
    struct cqp_result res;
    struct qrdma_mr *mr;

    /*
     * A window's key byte is the consumer's: each bind may change it where
     * the driver cannot see (a user BIND_MW WQE), so a window is freed by
     * its index; an MR's STag is checked whole.
     */
    res = stag_check(core, arg[0], cmd, &mr);
    if (res.major) {
        return res;
    }
    if (mr->type != QRDMA_MR_TYPE_MW || mr->state == QRDMA_MR_STATE_NONE) {
        res = stag_lookup(core, arg[0], cmd, &mr);
        if (res.major) {
            return res;
        }
    }
    /* IBTA 10.6.7: an MR with windows bound to it cannot be deregistered. */
    if (mr->mw_bound) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_BUSY,
                              "%s: STag 0x%08x: %u windows are bound to MR %u",
                              cmd, (uint32_t)arg[0], mr->mw_bound,
                              stag_index(arg[0]));
    }
    if (mr->type == QRDMA_MR_TYPE_MW) {
        mw_unbind(core, mr);
    }
    /*
     * As every destroy: a context that cannot be cleared does not keep the MR
     * alive.
     */
    memset(zero, 0, sizeof(zero));
    qrdma_obj_ctx_write(core, QRDMA_HMC_MR, stag_index(arg[0]), zero,
                        sizeof(zero), cmd);
    qrdma_dp_mr_deregister(core, (uint32_t)arg[0]);
    memset(mr, 0, sizeof(*mr));
    qrdma_obj_count_dec(core, QRDMA_HMC_MR);
    return cqp_ok;
}

struct cqp_result qrdma_cqp_query_stag(struct qrdma_core *core,
                                       const uint64_t *arg)
{
    static const char cmd[] = "QUERY_STAG";
    uint8_t ctx[MR_CTX_SIZE];
    struct cqp_result res;
    struct qrdma_mr *mr;

    res = stag_lookup(core, arg[0], cmd, &mr);
    if (res.major) {
        return res;
    }
    mr_ctx_render(mr, ctx);
    if ((arg[1] & 63) ||
        core->env.dma_write(core->env.opaque, arg[1], ctx, sizeof(ctx))) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: STag 0x%08x: buffer 0x%" PRIx64
                              " is not 64-byte aligned "
                              "guest RAM",
                              cmd, (uint32_t)arg[0], arg[1]);
    }
    return cqp_ok;
}

/*
 * A fast-register WQE: MR `index` (allocated by ALLOC_STAG, FREE, of the
 * QP's PD) gets the key byte of `stag`, ACCESS, IOVA, LENGTH, FBO and a
 * one-level page list in the PBLEs ALLOC_STAG reserved for it, and becomes
 * VALID. Returns 0, or -1 with the reason logged (the WQE completes with
 * LOC_QP_OP_ERR).
 */
int qrdma_mr_fast_reg(struct qrdma_core *core, uint32_t pd,
                      const struct qrdma_fast_reg *fr)
{
    static const char cmd[] = "FAST_REG WQE";
    uint32_t index = stag_index(fr->stag);
    uint64_t page_size, pages;
    uint8_t ctx[MR_CTX_SIZE];
    struct cqp_result res;
    struct qrdma_mr *slot, mr;
    char what[48];

    if (!core->obj.mr || index >= core->hmc.count[QRDMA_HMC_MR]) {
        qrdma_guest_error(core, "%s: STag 0x%08x: no such MR", cmd, fr->stag);
        return -1;
    }
    slot = &core->obj.mr[index];
    if (slot->type != QRDMA_MR_TYPE_FAST_REG ||
        slot->state != QRDMA_MR_STATE_FREE || slot->pd != pd) {
        qrdma_guest_error(
            core,
            "%s: STag 0x%08x: MR %u is not a free fast-register MR of "
            "PD %u",
            cmd, fr->stag, index, pd);
        return -1;
    }
    mr = *slot;
    if ((fr->access & ~QRDMA_ACCESS_VALID_MASK) ||
        !access_consistent(fr->access)) {
        qrdma_guest_error(core, "%s: STag 0x%08x: ACCESS 0x%x is not valid",
                          cmd, fr->stag, fr->access);
        return -1;
    }
    if (fr->levels != 1 || fr->first != mr.first) {
        qrdma_guest_error(
            core,
            "%s: STag 0x%08x: the page list must be one level at the MR's "
            "own PBLE %" PRIu64 ", not LEVELS %u at %" PRIu64,
            cmd, fr->stag, mr.first, fr->levels, fr->first);
        return -1;
    }
    if (!page_size_supported(fr->page_log2)) {
        qrdma_guest_error(core,
                          "%s: STag 0x%08x: pages of 2^%u bytes are not in "
                          "CAP_PAGE_SIZES",
                          cmd, fr->stag, fr->page_log2);
        return -1;
    }
    page_size = 1ull << fr->page_log2;
    if (!fr->length || fr->length > QRDMA_CORE_MAX_MR_SIZE ||
        fr->iova + fr->length - 1 < fr->iova || fr->fbo >= page_size) {
        qrdma_guest_error(core,
                          "%s: STag 0x%08x: IOVA 0x%" PRIx64
                          ", LENGTH 0x%" PRIx64 ", FBO 0x%" PRIx64
                          " do not make a region",
                          cmd, fr->stag, fr->iova, fr->length, fr->fbo);
        return -1;
    }
    pages = (fr->fbo + fr->length + page_size - 1) >> fr->page_log2;
    if (pages > mr.max_pages) {
        qrdma_guest_error(core,
                          "%s: STag 0x%08x: %" PRIu64
                          " pages, but the MR has room for "
                          "%u",
                          cmd, fr->stag, pages, mr.max_pages);
        return -1;
    }
    snprintf(what, sizeof(what), "%s: STag 0x%08x", cmd, fr->stag);
    res = pble_range_check(core, mr.first, pages, what);
    if (res.major) {
        return -1;
    }
    mr.key = stag_key(fr->stag);
    mr.access = (uint8_t)fr->access;
    mr.iova = fr->iova;
    mr.length = fr->length;
    mr.fbo = (uint32_t)fr->fbo;
    mr.levels = 1;
    mr.page_log2 = (uint8_t)fr->page_log2;
    mr.state = QRDMA_MR_STATE_VALID;
    mr_ctx_render(&mr, ctx);
    res = qrdma_obj_ctx_write(core, QRDMA_HMC_MR, index, ctx, sizeof(ctx), cmd);
    if (res.major) {
        return -1;
    }
    *slot = mr;
    return 0;
}

/* ---- translation --------------------------------------------------------- */

/*
 * A remote access through window `mw` (VALID, its key checked): the
 * window's PD, QP, bounds and rights. 0 or a QRDMA_MR_ERR_*.
 */
static int mw_check(struct qrdma_core *core, const struct qrdma_mr *mw,
                    uint32_t stag, uint32_t pd, uint32_t qp_id, uint64_t iova,
                    uint64_t len, unsigned access)
{
    /*
     * IBTA 10.6.7: a window's STag is an R_Key only; it names no local memory.
     */
    if (!(access & REMOTE_RIGHTS) || (access & QRDMA_ACCESS_LOCAL_WRITE)) {
        qrdma_guest_error(
            core,
            "STag 0x%08x: a window is for remote access only (rights "
            "0x%x asked)",
            stag, access);
        return QRDMA_MR_ERR_ACCESS;
    }
    if (mw->pd != pd) {
        qrdma_guest_error(
            core, "STag 0x%08x: window %u is in PD %u, the access from PD %u",
            stag, stag_index(stag), mw->pd, pd);
        return QRDMA_MR_ERR_PD;
    }
    /* Type 2B (IBTA 10.6.7): the QP the window is bound to, and no other. */
    if (mw->mw_type == QRDMA_MW_TYPE_2 && mw->mw_qp != qp_id) {
        qrdma_guest_error(
            core,
            "STag 0x%08x: window %u is bound to QP %u, the access is from "
            "QP %d",
            stag, stag_index(stag), mw->mw_qp,
            qp_id == QRDMA_MR_NO_QP ? -1 : (int)qp_id);
        return QRDMA_MR_ERR_QP;
    }
    if (iova < mw->iova || iova - mw->iova > mw->length ||
        len > mw->length - (iova - mw->iova)) {
        qrdma_guest_error(core,
                          "STag 0x%08x: 0x%" PRIx64 " bytes at 0x%" PRIx64
                          " are not "
                          "inside window 0x%" PRIx64 "..+0x%" PRIx64,
                          stag, len, iova, mw->iova, mw->length);
        return QRDMA_MR_ERR_BOUNDS;
    }
    if (access & ~(unsigned)mw->access) {
        qrdma_guest_error(
            core,
            "STag 0x%08x: the access needs rights 0x%x, window %u grants "
            "0x%x",
            stag, access, stag_index(stag), mw->access);
        return QRDMA_MR_ERR_ACCESS;
    }
    return 0;
}

int qrdma_mr_translate(struct qrdma_core *core, uint32_t stag, uint32_t pd,
                       uint64_t iova, uint64_t len, unsigned access,
                       struct qrdma_mr_walk *walk)
{
    return qrdma_mr_translate_qp(core, stag, pd, QRDMA_MR_NO_QP, iova, len,
                                 access, walk);
}

int qrdma_mr_translate_qp(struct qrdma_core *core, uint32_t stag, uint32_t pd,
                          uint32_t qp_id, uint64_t iova, uint64_t len,
                          unsigned access, struct qrdma_mr_walk *walk)
{
    uint32_t index = stag_index(stag);
    const struct qrdma_mr *mr;
    uint64_t off;
    int err;

    if (!core->hmc.committed || index >= core->hmc.count[QRDMA_HMC_MR]) {
        qrdma_guest_error(core,
                          "STag 0x%08x: MR index %u is beyond the %u committed",
                          stag, index,
                          core->hmc.committed ? core->hmc.count[QRDMA_HMC_MR]
                                              : 0);
        return QRDMA_MR_ERR_INDEX;
    }
    mr = &core->obj.mr[index];
    if (mr->state != QRDMA_MR_STATE_VALID) {
        qrdma_guest_error(core, "STag 0x%08x: MR %u is %s", stag, index,
                          mr->state == QRDMA_MR_STATE_NONE ? "not registered"
                          : mr->type == QRDMA_MR_TYPE_MW
                              ? "an unbound window"
                              : "not valid (fast-register MR)");
        return QRDMA_MR_ERR_INVALID;
    }
    if (mr->key != stag_key(stag)) {
        qrdma_guest_error(core, "STag 0x%08x: MR %u has key 0x%02x", stag,
                          index, mr->key);
        return QRDMA_MR_ERR_KEY;
    }
    if (mr->type == QRDMA_MR_TYPE_MW) {
        const struct qrdma_mr *parent;

        err = mw_check(core, mr, stag, pd, qp_id, iova, len, access);
        if (err) {
            return err;
        }
        /*
         * The bind held the MR (mw_bound): it is there, VALID, with this key.
         */
        parent = &core->obj.mr[stag_index(mr->mw_mr)];
        off = iova - parent->iova + parent->fbo;
        walk->stag = mr->mw_mr;
        walk->pos = off;
        walk->left = len;
        return 0;
    }
    if (mr->pd != pd) {
        qrdma_guest_error(
            core, "STag 0x%08x: MR %u is in PD %u, the access from PD %u", stag,
            index, mr->pd, pd);
        return QRDMA_MR_ERR_PD;
    }
    if (len && iova + len - 1 < iova) {
        qrdma_guest_error(core,
                          "STag 0x%08x: 0x%" PRIx64 " bytes at 0x%" PRIx64
                          " wrap",
                          stag, len, iova);
        return QRDMA_MR_ERR_BOUNDS;
    }
    if (mr->type == QRDMA_MR_TYPE_DMA) {
        off = iova;             /* the whole guest-physical space */
    } else {
        off = iova - mr->iova;
        if (iova < mr->iova || off > mr->length || len > mr->length - off) {
            qrdma_guest_error(core,
                              "STag 0x%08x: 0x%" PRIx64 " bytes at 0x%" PRIx64
                              " are not "
                              "inside MR 0x%" PRIx64 "..+0x%" PRIx64,
                              stag, len, iova, mr->iova, mr->length);
            return QRDMA_MR_ERR_BOUNDS;
        }
        off += mr->fbo;
    }
    if (access & ~(unsigned)(mr->access & MR_RIGHTS)) {
        qrdma_guest_error(
            core,
            "STag 0x%08x: the access needs rights 0x%x, MR %u grants 0x%x",
            stag, access, index, mr->access);
        return QRDMA_MR_ERR_ACCESS;
    }
    walk->stag = stag;
    walk->pos = off;
    walk->left = len;
    return 0;
}

/* Page p of a one- or two-level list: its address, or a QRDMA_MR_ERR_*. */
static int mr_page(struct qrdma_core *core, const struct qrdma_mr *mr,
                   uint32_t stag, uint64_t p, uint64_t *page)
{
    uint64_t index = mr->first + p, root;
    char what[24];

    snprintf(what, sizeof(what), "STag 0x%08x", stag);
    if (mr->levels == 2) {
        if (qrdma_pble_get(core, mr->first + p / QRDMA_PBLE_LEAF_ENTRIES, &root,
                           what)) {
            return QRDMA_MR_ERR_PBLE;
        }
        /*
         * Checked at registration, read again: the root may have changed since.
         */
        if (root >= core->hmc.count[QRDMA_HMC_PBLE]) {
            qrdma_guest_error(core,
                              "%s: root PBLE %" PRIu64 " names PBLE %" PRIu64
                              ", beyond the %u committed",
                              what, mr->first + p / QRDMA_PBLE_LEAF_ENTRIES,
                              root, core->hmc.count[QRDMA_HMC_PBLE]);
            return QRDMA_MR_ERR_PBLE;
        }
        index = root + p % QRDMA_PBLE_LEAF_ENTRIES;
    }
    return qrdma_pble_get(core, index, page, what) ? QRDMA_MR_ERR_PBLE : 0;
}

/*
 * The next piece of a walk. With probe, its first and last byte are read
 * so that a piece outside guest RAM is reported here, before the caller's
 * DMA; mr_copy() does its DMA at once and reports such a piece the same
 * way, so it walks without the two extra reads.
 */
static int mr_walk_step(struct qrdma_core *core, struct qrdma_mr_walk *walk,
                        uint64_t *gpa, uint64_t *len, bool probe)
{
    uint32_t index = stag_index(walk->stag);
    const struct qrdma_mr *mr;
    uint64_t page_size, off, chunk, page;
    uint8_t byte;
    int err;

    *len = 0;
    if (!walk->left) {
        return 0;
    }
    /* The MR may have gone since qrdma_mr_translate: the walk is over then. */
    if (!core->hmc.committed || index >= core->hmc.count[QRDMA_HMC_MR] ||
        core->obj.mr[index].state != QRDMA_MR_STATE_VALID ||
        core->obj.mr[index].key != stag_key(walk->stag)) {
        qrdma_guest_error(core,
                          "STag 0x%08x: the MR went away during the access",
                          walk->stag);
        return QRDMA_MR_ERR_INVALID;
    }
    mr = &core->obj.mr[index];
    page_size = 1ull << (mr->type == QRDMA_MR_TYPE_DMA ? DMA_PAGE_LOG2
                                                       : mr->page_log2);
    off = walk->pos & (page_size - 1);
    chunk = page_size - off < walk->left ? page_size - off : walk->left;

    if (mr->type == QRDMA_MR_TYPE_DMA) {
        page = walk->pos - off;
    } else if (mr->levels == 0) {
        page = mr->first - mr->fbo + (walk->pos - off);
    } else {
        err = mr_page(core, mr, walk->stag, walk->pos / page_size, &page);
        if (err) {
            return err;
        }
        if (page & (page_size - 1)) {
            qrdma_guest_error(core,
                              "STag 0x%08x: page %" PRIu64 " at 0x%" PRIx64
                              " is not "
                              "aligned to its 0x%" PRIx64 " bytes",
                              walk->stag, walk->pos / page_size, page,
                              page_size);
            return QRDMA_MR_ERR_ALIGN;
        }
    }
    /*
     * The DMA itself checks every byte; this names the cause at the right page.
     */
    if (page + off + chunk - 1 < page ||
        (probe && (core->env.dma_read(core->env.opaque, page + off, &byte, 1) ||
                   core->env.dma_read(core->env.opaque, page + off + chunk - 1,
                                      &byte, 1)))) {
        qrdma_guest_error(core, "STag 0x%08x: 0x%" PRIx64 " bytes at 0x%" PRIx64
                          " are not guest RAM", walk->stag, chunk, page + off);
        return QRDMA_MR_ERR_NOT_RAM;
    }
    *gpa = page + off;
    *len = chunk;
    walk->pos += chunk;
    walk->left -= chunk;
    return 0;
}

int qrdma_mr_walk_next(struct qrdma_core *core, struct qrdma_mr_walk *walk,
                       uint64_t *gpa, uint64_t *len)
{
    return mr_walk_step(core, walk, gpa, len, true);
}

static int mr_copy(struct qrdma_core *core, uint32_t stag, uint32_t pd,
                   uint32_t qp_id, uint64_t iova, uint8_t *buf,
                   const uint8_t *src, uint64_t len, unsigned access)
{
    struct qrdma_mr_walk walk;
    uint64_t gpa, n, done = 0;
    int err;

    err = qrdma_mr_translate_qp(core, stag, pd, qp_id, iova, len, access,
                                &walk);
    while (!err && walk.left) {
        err = mr_walk_step(core, &walk, &gpa, &n, false);
        if (err) {
            break;
        }
        if (buf ? core->env.dma_read(core->env.opaque, gpa, buf + done, n)
                : core->env.dma_write(core->env.opaque, gpa, src + done, n)) {
            qrdma_guest_error(core,
                              "STag 0x%08x: 0x%" PRIx64 " bytes at 0x%" PRIx64
                              " are not guest RAM",
                              stag, n, gpa);
            return QRDMA_MR_ERR_NOT_RAM;
        }
        done += n;
    }
    return err;
}

int qrdma_mr_read(struct qrdma_core *core, uint32_t stag, uint32_t pd,
                  uint64_t iova, void *buf, uint64_t len, unsigned access)
{
    return mr_copy(core, stag, pd, QRDMA_MR_NO_QP, iova, buf, NULL, len,
                   access);
}

int qrdma_mr_write(struct qrdma_core *core, uint32_t stag, uint32_t pd,
                   uint64_t iova, const void *buf, uint64_t len,
                   unsigned access)
{
    return mr_copy(core, stag, pd, QRDMA_MR_NO_QP, iova, NULL, buf, len,
                   access);
}

int qrdma_mr_read_qp(struct qrdma_core *core, uint32_t stag, uint32_t pd,
                     uint32_t qp_id, uint64_t iova, void *buf, uint64_t len,
                     unsigned access)
{
    return mr_copy(core, stag, pd, qp_id, iova, buf, NULL, len, access);
}

int qrdma_mr_write_qp(struct qrdma_core *core, uint32_t stag, uint32_t pd,
                      uint32_t qp_id, uint64_t iova, const void *buf,
                      uint64_t len, unsigned access)
{
    return mr_copy(core, stag, pd, qp_id, iova, NULL, buf, len, access);
}

int qrdma_mr_map_read_qp(struct qrdma_core *core, uint32_t stag, uint32_t pd,
                         uint32_t qp_id, uint64_t iova, uint64_t len,
                         unsigned access, struct iovec *iov, unsigned max)
{
    struct qrdma_mr_walk walk;
    uint64_t gpa, n;
    unsigned cnt = 0;
    int err;

    /* Without a mapping the caller copies, and the copy checks: not twice. */
    if (!core->env.dma_map_read) {
        return 0;
    }
    err = qrdma_mr_translate_qp(core, stag, pd, qp_id, iova, len, access,
                                &walk);
    if (err) {
        return -err;
    }
    while (walk.left) {
        const void *p;

        err = mr_walk_step(core, &walk, &gpa, &n, false);
        if (err) {
            qrdma_mr_unmap_read(core, iov, cnt);
            return -err;
        }
        p = cnt < max ? core->env.dma_map_read(core->env.opaque, gpa, n) : NULL;
        if (!p) {
            qrdma_mr_unmap_read(core, iov, cnt);
            return 0;
        }
        iov[cnt].iov_base = (void *)p;
        iov[cnt++].iov_len = n;
    }
    return (int)cnt;
}

void qrdma_mr_unmap_read(struct qrdma_core *core, const struct iovec *iov,
                         unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        core->env.dma_unmap_read(core->env.opaque, iov[i].iov_base,
                                 iov[i].iov_len);
    }
}

/* ---- windows: bind and invalidate, in SQ order --------------------------- */

/*
 * BIND_MW (section 18.4). The checks, in the order rxe and the IBTA rules
 * C10-72..C10-75 and o10-36.2, o10-37.2 give them; nothing changes until
 * all pass.
 */
int qrdma_mw_bind(struct qrdma_core *core, uint32_t pd, uint32_t qp_id,
                  const struct qrdma_mw_bind *b)
{
    static const char cmd[] = "BIND_MW WQE";
    uint32_t index = stag_index(b->mw_stag), mr_index = stag_index(b->mr_stag);
    struct qrdma_mr *mw, *mr = NULL;

    if (!core->obj.mr || index >= core->hmc.count[QRDMA_HMC_MR]) {
        qrdma_guest_error(core, "%s: STag 0x%08x: no such window", cmd,
                          b->mw_stag);
        return -1;
    }
    mw = &core->obj.mr[index];
    if (mw->type != QRDMA_MR_TYPE_MW || mw->state == QRDMA_MR_STATE_NONE ||
        mw->key != stag_key(b->mw_stag)) {
        qrdma_guest_error(core, "%s: STag 0x%08x: not a window with that key",
                          cmd, b->mw_stag);
        return -1;
    }
    if (stag_index(b->new_stag) != index) {
        qrdma_guest_error(
            core, "%s: STag 0x%08x: the new STag 0x%08x names another index",
            cmd, b->mw_stag, b->new_stag);
        return -1;
    }
    /* C10-72: the QP and the window share a PD. */
    if (mw->pd != pd) {
        qrdma_guest_error(
            core, "%s: STag 0x%08x: window of PD %u bound from a QP of PD %u",
            cmd, b->mw_stag, mw->pd, pd);
        return -1;
    }
    /*
     * o10-37.2.30: a type 2 window is bound once, then invalidated before the
     * next bind.
     */
    if (mw->mw_type == QRDMA_MW_TYPE_2 && mw->state != QRDMA_MR_STATE_FREE) {
        qrdma_guest_error(core,
                          "%s: STag 0x%08x: type 2 window is bound already",
                          cmd, b->mw_stag);
        return -1;
    }
    if (b->access & ~(REMOTE_RIGHTS | QRDMA_ACCESS_LOCAL_WRITE)) {
        qrdma_guest_error(
            core,
            "%s: STag 0x%08x: ACCESS 0x%x (zero-based windows are not "
            "supported)",
            cmd, b->mw_stag, b->access);
        return -1;
    }
    if (!b->length) {
        /* o10-37.2.40: a type 2 window is not unbound by binding; type 1 is. */
        if (mw->mw_type == QRDMA_MW_TYPE_2) {
            qrdma_guest_error(core,
                              "%s: STag 0x%08x: type 2 window with LENGTH 0",
                              cmd, b->mw_stag);
            return -1;
        }
        mw_unbind(core, mw);
        mw->key = stag_key(b->new_stag);
        mr_ctx_update(core, index, cmd);
        return 0;
    }
    if (mr_index < core->hmc.count[QRDMA_HMC_MR]) {
        mr = &core->obj.mr[mr_index];
    }
    if (!mr || mr->state != QRDMA_MR_STATE_VALID ||
        mr->key != stag_key(b->mr_stag) || mr->type != QRDMA_MR_TYPE_MEM) {
        qrdma_guest_error(
            core,
            "%s: STag 0x%08x: MR STag 0x%08x names no valid registered MR", cmd,
            b->mw_stag, b->mr_stag);
        return -1;
    }
    if (mr->pd != pd) {
        qrdma_guest_error(
            core, "%s: STag 0x%08x: MR 0x%08x is in PD %u, the QP in PD %u",
            cmd, b->mw_stag, b->mr_stag, mr->pd, pd);
        return -1;
    }
    /* C10-73 */
    if (!(mr->access & QRDMA_ACCESS_MW_BIND)) {
        qrdma_guest_error(core,
                          "%s: STag 0x%08x: MR 0x%08x lacks MW_BIND access",
                          cmd, b->mw_stag, b->mr_stag);
        return -1;
    }
    if (mr->access & QRDMA_ACCESS_ZERO_BASED) {
        qrdma_guest_error(core, "%s: STag 0x%08x: MR 0x%08x is zero-based", cmd,
                          b->mw_stag, b->mr_stag);
        return -1;
    }
    /* C10-74: a peer may write only where the owner may. */
    if ((b->access &
         (QRDMA_ACCESS_REMOTE_WRITE | QRDMA_ACCESS_REMOTE_ATOMIC)) &&
        !(mr->access & QRDMA_ACCESS_LOCAL_WRITE)) {
        qrdma_guest_error(
            core,
            "%s: STag 0x%08x: remote write or atomic through a window on "
            "MR 0x%08x, which lacks LOCAL_WRITE",
            cmd, b->mw_stag, b->mr_stag);
        return -1;
    }
    /* C10-75: the window lies inside the MR. */
    if (b->addr < mr->iova || b->addr - mr->iova > mr->length ||
        b->length > mr->length - (b->addr - mr->iova)) {
        qrdma_guest_error(core,
                          "%s: STag 0x%08x: 0x%" PRIx64 " bytes at 0x%" PRIx64
                          " are not "
                          "inside MR 0x%" PRIx64 "..+0x%" PRIx64,
                          cmd, b->mw_stag, b->length, b->addr, mr->iova,
                          mr->length);
        return -1;
    }
    mw_unbind(core, mw);        /* a type 1 window may be bound again at once */
    mw->state = QRDMA_MR_STATE_VALID;
    mw->key = stag_key(b->new_stag);
    mw->iova = b->addr;
    mw->length = b->length;
    mw->access = (uint8_t)(b->access & REMOTE_RIGHTS);
    mw->mw_mr = b->mr_stag;
    mw->mw_qp = qp_id;
    mr->mw_bound++;
    mr_ctx_update(core, mr_index, cmd);
    mr_ctx_update(core, index, cmd);
    return 0;
}

int qrdma_mr_invalidate(struct qrdma_core *core, uint32_t pd, uint32_t stag)
{
    uint32_t index = stag_index(stag);
    struct qrdma_mr *mr;

    if (!core->obj.mr || index >= core->hmc.count[QRDMA_HMC_MR]) {
        qrdma_guest_error(core, "invalidate of STag 0x%08x: no such MR", stag);
        return -1;
    }
    mr = &core->obj.mr[index];
    if (mr->state != QRDMA_MR_STATE_VALID || mr->key != stag_key(stag) ||
        mr->pd != pd) {
        qrdma_guest_error(
            core,
            "invalidate of STag 0x%08x: nothing valid of PD %u with that "
            "key (already invalid?)",
            stag, pd);
        return -1;
    }
    if (mr->type == QRDMA_MR_TYPE_MW && mr->mw_type == QRDMA_MW_TYPE_2) {
        mw_unbind(core, mr);
        mr_ctx_update(core, index, "invalidate");
        return 0;
    }
    /*
     * o10-36.2: a type 1 window is not invalidated, only bound again with
     * LENGTH 0.
     */
    if (mr->type != QRDMA_MR_TYPE_FAST_REG) {
        qrdma_guest_error(
            core,
            "invalidate of STag 0x%08x: not a fast-register MR or a type 2 "
            "window",
            stag);
        return -1;
    }
    mr->state = QRDMA_MR_STATE_FREE;
    return 0;
}

void qrdma_mw_qp_gone(struct qrdma_core *core, uint32_t qp_id)
{
    uint32_t i;

    /*
     * The table has hmc.count[MR] entries: a bounded walk, on DESTROY_QP only.
     */
    for (i = 0; core->obj.mr && i < core->hmc.count[QRDMA_HMC_MR]; i++) {
        struct qrdma_mr *mw = &core->obj.mr[i];

        if (mw->type == QRDMA_MR_TYPE_MW && mw->mw_type == QRDMA_MW_TYPE_2 &&
            mw->state == QRDMA_MR_STATE_VALID && mw->mw_qp == qp_id) {
            mw_unbind(core, mw);
            mr_ctx_update(core, i, "DESTROY_QP");
        }
    }
}
