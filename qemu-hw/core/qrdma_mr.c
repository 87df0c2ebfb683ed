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
#define MR_ARG1_FIELDS (QRDMA_MR_ARG1_PD_MASK | QRDMA_MR_ARG1_ACCESS_MASK | \
                        QRDMA_MR_ARG1_LEVELS_MASK | QRDMA_MR_ARG1_PAGE_MASK | QRDMA_MR_ARG1_DMA | \
                        QRDMA_MR_ARG1_REREG)
#define ALLOC_ARG1_FIELDS (QRDMA_MR_ARG1_PD_MASK | QRDMA_MR_ARG1_ACCESS_MASK)

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

/* ---- the context ------------------------------------------------------------------ */

static void mr_ctx_render(const struct qrdma_mr *mr, uint8_t *ctx)
{
    memset(ctx, 0, MR_CTX_SIZE);
    qrdma_st_le64(ctx, mr->state | (uint64_t)mr->key << QRDMA_MR_CTX_KEY_SHIFT |
                       (uint64_t)mr->type << QRDMA_MR_CTX_TYPE_SHIFT |
                       (uint64_t)mr->pd << QRDMA_MR_CTX_PD_SHIFT);
    qrdma_st_le64(ctx + 8, mr->access | (uint64_t)mr->levels << QRDMA_MR_CTX1_LEVELS_SHIFT |
                           (uint64_t)mr->page_log2 << QRDMA_MR_CTX1_PAGE_SHIFT |
                           (mr->type == QRDMA_MR_TYPE_DMA ? QRDMA_MR_CTX1_DMA : 0));
    qrdma_st_le64(ctx + 16, mr->iova);
    qrdma_st_le64(ctx + 24, mr->length);
    qrdma_st_le64(ctx + 32, mr->first);
    qrdma_st_le64(ctx + 40, mr->fbo);
    qrdma_st_le64(ctx + 48, mr->max_pages);
}

/* ---- checks at registration -------------------------------------------------------- */

/* A page size this device translates (CAP_PAGE_SIZES). */
static bool page_size_supported(unsigned log2)
{
    return log2 <= 31 && (QRDMA_CORE_PAGE_SIZES & (1u << log2));
}

/* IB: a peer may write only where the owner may (Linux's ib_check_mr_access agrees). */
static bool access_consistent(unsigned access)
{
    return !(access & (QRDMA_ACCESS_REMOTE_WRITE | QRDMA_ACCESS_REMOTE_ATOMIC)) ||
           (access & QRDMA_ACCESS_LOCAL_WRITE);
}

/* STAG in arg0 names an index of the layout: the MR there, or a failure. */
static struct cqp_result stag_check(struct qrdma_core *core, uint64_t arg0, const char *cmd,
                                    struct qrdma_mr **mrp)
{
    struct cqp_result res;

    if (arg0 >> 32) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                              "%s: arg0 0x%" PRIx64 " is not a 32-bit STag", cmd, arg0);
    }
    res = qrdma_obj_id_check(core, QRDMA_HMC_MR, stag_index(arg0), cmd);
    if (res.major) {
        return res;
    }
    *mrp = &core->obj.mr[stag_index(arg0)];
    return cqp_ok;
}

/* An existing MR whose key the STag matches (DEALLOC_STAG, QUERY_STAG). */
static struct cqp_result stag_lookup(struct qrdma_core *core, uint64_t arg0, const char *cmd,
                                     struct qrdma_mr **mrp)
{
    struct cqp_result res = stag_check(core, arg0, cmd, mrp);

    if (res.major) {
        return res;
    }
    if ((*mrp)->state == QRDMA_MR_STATE_NONE) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND,
                              "%s: STag 0x%08x: no MR at index %u", cmd, (uint32_t)arg0,
                              stag_index(arg0));
    }
    if ((*mrp)->key != stag_key(arg0)) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_KEY,
                              "%s: STag 0x%08x: MR %u has key 0x%02x", cmd, (uint32_t)arg0,
                              stag_index(arg0), (*mrp)->key);
    }
    return cqp_ok;
}

/* PD and ACCESS of arg1, common to REG_MR and ALLOC_STAG. */
static struct cqp_result pd_access_check(struct qrdma_core *core, struct qrdma_mr *mr,
                                         uint64_t arg1, uint32_t stag, const char *cmd)
{
    mr->pd = arg1 & QRDMA_MR_ARG1_PD_MASK;
    mr->access = (arg1 & QRDMA_MR_ARG1_ACCESS_MASK) >> QRDMA_MR_ARG1_ACCESS_SHIFT;
    if (mr->pd >= core->cfg.max_pd) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: STag 0x%08x: PD %u is beyond CAP_MAX_PD %u", cmd, stag,
                              mr->pd, core->cfg.max_pd);
    }
    if (mr->access & ~QRDMA_ACCESS_VALID_MASK) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: STag 0x%08x: ACCESS 0x%x is not within 0x%x", cmd, stag,
                              mr->access, QRDMA_ACCESS_VALID_MASK);
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
static struct cqp_result pble_range_check(struct qrdma_core *core, uint64_t first, uint64_t n,
                                          const char *what)
{
    const uint64_t per_page = QRDMA_HMC_PD_SIZE / sizeof(uint64_t);
    uint32_t count = core->hmc.count[QRDMA_HMC_PBLE];
    uint64_t i, gpa;

    if (first >= count || n > count - first) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_RANGE,
                              "%s: PBLEs %" PRIu64 "..%" PRIu64 " are beyond the %u committed",
                              what, first, first + n - 1, count);
    }
    /* n <= count <= QRDMA_HMC_PBLE_MAX: at most 4097 translations. */
    for (i = first; i < first + n; i = (i / per_page + 1) * per_page) {
        if (qrdma_core_hmc_object(core, QRDMA_HMC_PBLE, (uint32_t)i, &gpa)) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_HMC,
                                  "%s: PBLE %" PRIu64 ": its HMC page is not backed", what, i);
        }
    }
    return cqp_ok;
}

/* The page list of a REG_MR: LEVELS 0, 1 or 2 (the MR's fields are set). */
static struct cqp_result mr_pages_check(struct qrdma_core *core, const struct qrdma_mr *mr,
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
                                  "%s: address 0x%" PRIx64 " is not FBO 0x%x into a page of "
                                  "0x%" PRIx64 " bytes", what, mr->first, mr->fbo, page_size);
        }
        {
            uint8_t probe;

            if (mr->first + mr->length - 1 < mr->first ||
                core->env.dma_read(core->env.opaque, mr->first, &probe, 1) ||
                core->env.dma_read(core->env.opaque, mr->first + mr->length - 1, &probe, 1)) {
                return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 4,
                                      "%s: 0x%" PRIx64 "..+0x%" PRIx64 " is not guest RAM",
                                      what, mr->first, mr->length);
            }
        }
        return cqp_ok;
    case 1:
        return pble_range_check(core, mr->first, pages, what);
    default:
        /* The leaves are PBLEs too: more pages than PBLEs cannot be listed. */
        if (pages > core->hmc.count[QRDMA_HMC_PBLE]) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_PBLE, QRDMA_PBLE_ERR_RANGE,
                                  "%s: %" PRIu64 " pages need more leaves than the %u PBLEs "
                                  "committed", what, pages, core->hmc.count[QRDMA_HMC_PBLE]);
        }
        roots = (pages + QRDMA_PBLE_LEAF_ENTRIES - 1) / QRDMA_PBLE_LEAF_ENTRIES;
        res = pble_range_check(core, mr->first, roots, what);
        if (res.major) {
            return res;
        }
        /* Every root, each naming a leaf run: at most 4096 of them (roots <= count). */
        for (r = 0; r < roots; r++) {
            uint64_t leaf, run = pages - r * QRDMA_PBLE_LEAF_ENTRIES;
            int err = qrdma_pble_get(core, mr->first + r, &leaf, what);

            if (err) {
                return (struct cqp_result){ .major = QRDMA_CQP_ERR_PBLE, .minor = err };
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

/* ---- commands ------------------------------------------------------------------- */

/*
 * The MR at stag's index was just recorded: the backend's hook
 * (qrdma_dp_mr_register). One it refuses is forgotten again, the index
 * NONE, its context cleared and its count dropped, and the command fails.
 */
static struct cqp_result mr_mirror_forget(struct qrdma_core *core, uint32_t stag,
                                          const char *cmd, int ret)
{
    uint8_t zero[MR_CTX_SIZE];

    memset(&core->obj.mr[stag_index(stag)], 0, sizeof(core->obj.mr[0]));
    qrdma_obj_count_dec(core, QRDMA_HMC_MR);
    memset(zero, 0, sizeof(zero));
    qrdma_obj_ctx_write(core, QRDMA_HMC_MR, stag_index(stag), zero, sizeof(zero), cmd);
    return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                          "%s: STag 0x%08x: the backend cannot register it (%s)", cmd, stag,
                          ret == -ENOTSUP ? "its rkey lacks the STag's key byte"
                                          : "out of host resources");
}

/* Success: the return value is the rkey peers use (WIRE_IDS, hw-spec 18.1). */
static struct cqp_result mr_mirror(struct qrdma_core *core, uint32_t stag, const char *cmd)
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
                                         const struct qrdma_mr *old, const char *cmd)
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
    qrdma_obj_ctx_write(core, QRDMA_HMC_MR, stag_index(stag), ctx, sizeof(ctx), cmd);
    return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 0,
                          "%s: STag 0x%08x: the backend cannot re-register it (out of host "
                          "resources); the old registration stays", cmd, stag);
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
        if (slot->state != QRDMA_MR_STATE_VALID || slot->type != QRDMA_MR_TYPE_MEM) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_NOT_FOUND,
                                  "%s: STag 0x%08x: REREG of MR %u, which is not a valid "
                                  "registered MR", cmd, stag, stag_index(stag));
        }
        if (arg[1] & QRDMA_MR_ARG1_DMA) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                                  "%s: STag 0x%08x: REREG with DMA", cmd, stag);
        }
    } else if (slot->state != QRDMA_MR_STATE_NONE) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_STATE, QRDMA_STATE_ERR_EXISTS,
                              "%s: STag 0x%08x: MR %u is in use", cmd, stag, stag_index(stag));
    }
    if (arg[1] & ~MR_ARG1_FIELDS) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: STag 0x%08x: arg1 0x%" PRIx64 " sets reserved bits", cmd,
                              stag, arg[1]);
    }
    memset(&mr, 0, sizeof(mr));
    res = pd_access_check(core, &mr, arg[1], stag, cmd);
    if (res.major) {
        return res;
    }
    mr.key = stag_key(stag);
    mr.levels = (arg[1] & QRDMA_MR_ARG1_LEVELS_MASK) >> QRDMA_MR_ARG1_LEVELS_SHIFT;
    mr.page_log2 = (arg[1] & QRDMA_MR_ARG1_PAGE_MASK) >> QRDMA_MR_ARG1_PAGE_SHIFT;

    if (arg[1] & QRDMA_MR_ARG1_DMA) {
        /* The kernel's DMA MR: all of guest RAM at iova = address; nobody else's to use. */
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
                                  "%s: STag 0x%08x: LEVELS %u", cmd, stag, mr.levels);
        }
        if (!page_size_supported(mr.page_log2)) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                                  "%s: STag 0x%08x: pages of 2^%u bytes are not in "
                                  "CAP_PAGE_SIZES 0x%x", cmd, stag, mr.page_log2,
                                  QRDMA_CORE_PAGE_SIZES);
        }
        if (!mr.length || mr.length > QRDMA_CORE_MAX_MR_SIZE) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 3,
                                  "%s: STag 0x%08x: LENGTH 0x%" PRIx64 " is not 1..0x%llx",
                                  cmd, stag, mr.length, QRDMA_CORE_MAX_MR_SIZE);
        }
        if (mr.iova + mr.length - 1 < mr.iova) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 2,
                                  "%s: STag 0x%08x: IOVA 0x%" PRIx64 " + LENGTH wraps", cmd,
                                  stag, mr.iova);
        }
        if (arg[5] >> mr.page_log2) {
            return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 5,
                                  "%s: STag 0x%08x: FBO 0x%" PRIx64 " is not inside a page of "
                                  "2^%u bytes", cmd, stag, arg[5], mr.page_log2);
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
    res = qrdma_obj_ctx_write(core, QRDMA_HMC_MR, stag_index(stag), ctx, sizeof(ctx), cmd);
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

struct cqp_result qrdma_cqp_alloc_stag(struct qrdma_core *core, const uint64_t *arg)
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
                              "%s: STag 0x%08x: MR %u is in use", cmd, stag, stag_index(stag));
    }
    if (arg[1] & ~ALLOC_ARG1_FIELDS) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: STag 0x%08x: arg1 0x%" PRIx64 " sets bits other than PD "
                              "and ACCESS", cmd, stag, arg[1]);
    }
    memset(&mr, 0, sizeof(mr));
    res = pd_access_check(core, &mr, arg[1], stag, cmd);
    if (res.major) {
        return res;
    }
    if (!arg[2] || arg[2] > core->hmc.count[QRDMA_HMC_PBLE]) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 2,
                              "%s: STag 0x%08x: MAX_PAGES %" PRIu64 " is not 1..%u", cmd, stag,
                              arg[2], core->hmc.count[QRDMA_HMC_PBLE]);
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
    res = qrdma_obj_ctx_write(core, QRDMA_HMC_MR, stag_index(stag), ctx, sizeof(ctx), cmd);
    if (res.major) {
        return res;
    }
    *slot = mr;
    qrdma_obj_count_inc(core, QRDMA_HMC_MR);
    return mr_mirror(core, stag, cmd);
}

struct cqp_result qrdma_cqp_dealloc_stag(struct qrdma_core *core, const uint64_t *arg)
{
    static const char cmd[] = "DEALLOC_STAG";
    uint8_t zero[MR_CTX_SIZE];
    struct cqp_result res;
    struct qrdma_mr *mr;

    res = stag_lookup(core, arg[0], cmd, &mr);
    if (res.major) {
        return res;
    }
    /* As every destroy: a context that cannot be cleared does not keep the MR alive. */
    memset(zero, 0, sizeof(zero));
    qrdma_obj_ctx_write(core, QRDMA_HMC_MR, stag_index(arg[0]), zero, sizeof(zero), cmd);
    qrdma_dp_mr_deregister(core, (uint32_t)arg[0]);
    memset(mr, 0, sizeof(*mr));
    qrdma_obj_count_dec(core, QRDMA_HMC_MR);
    return cqp_ok;
}

struct cqp_result qrdma_cqp_query_stag(struct qrdma_core *core, const uint64_t *arg)
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
    if ((arg[1] & 63) || core->env.dma_write(core->env.opaque, arg[1], ctx, sizeof(ctx))) {
        return qrdma_cqp_fail(core, QRDMA_CQP_ERR_INVALID_ARG, 1,
                              "%s: STag 0x%08x: buffer 0x%" PRIx64 " is not 64-byte aligned "
                              "guest RAM", cmd, (uint32_t)arg[0], arg[1]);
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
int qrdma_mr_fast_reg(struct qrdma_core *core, uint32_t pd, const struct qrdma_fast_reg *fr)
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
    if (slot->type != QRDMA_MR_TYPE_FAST_REG || slot->state != QRDMA_MR_STATE_FREE ||
        slot->pd != pd) {
        qrdma_guest_error(core, "%s: STag 0x%08x: MR %u is not a free fast-register MR of "
                          "PD %u", cmd, fr->stag, index, pd);
        return -1;
    }
    mr = *slot;
    if ((fr->access & ~QRDMA_ACCESS_VALID_MASK) || !access_consistent(fr->access)) {
        qrdma_guest_error(core, "%s: STag 0x%08x: ACCESS 0x%x is not valid", cmd, fr->stag,
                          fr->access);
        return -1;
    }
    if (fr->levels != 1 || fr->first != mr.first) {
        qrdma_guest_error(core, "%s: STag 0x%08x: the page list must be one level at the MR's "
                          "own PBLE %" PRIu64 ", not LEVELS %u at %" PRIu64, cmd, fr->stag,
                          mr.first, fr->levels, fr->first);
        return -1;
    }
    if (!page_size_supported(fr->page_log2)) {
        qrdma_guest_error(core, "%s: STag 0x%08x: pages of 2^%u bytes are not in "
                          "CAP_PAGE_SIZES", cmd, fr->stag, fr->page_log2);
        return -1;
    }
    page_size = 1ull << fr->page_log2;
    if (!fr->length || fr->length > QRDMA_CORE_MAX_MR_SIZE ||
        fr->iova + fr->length - 1 < fr->iova || fr->fbo >= page_size) {
        qrdma_guest_error(core, "%s: STag 0x%08x: IOVA 0x%" PRIx64 ", LENGTH 0x%" PRIx64
                          ", FBO 0x%" PRIx64 " do not make a region", cmd, fr->stag, fr->iova,
                          fr->length, fr->fbo);
        return -1;
    }
    pages = (fr->fbo + fr->length + page_size - 1) >> fr->page_log2;
    if (pages > mr.max_pages) {
        qrdma_guest_error(core, "%s: STag 0x%08x: %" PRIu64 " pages, but the MR has room for "
                          "%u", cmd, fr->stag, pages, mr.max_pages);
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

/* ---- translation ----------------------------------------------------------------- */

int qrdma_mr_translate(struct qrdma_core *core, uint32_t stag, uint32_t pd, uint64_t iova,
                       uint64_t len, unsigned access, struct qrdma_mr_walk *walk)
{
    uint32_t index = stag_index(stag);
    const struct qrdma_mr *mr;
    uint64_t off;

    if (!core->hmc.committed || index >= core->hmc.count[QRDMA_HMC_MR]) {
        qrdma_guest_error(core, "STag 0x%08x: MR index %u is beyond the %u committed", stag,
                          index, core->hmc.committed ? core->hmc.count[QRDMA_HMC_MR] : 0);
        return QRDMA_MR_ERR_INDEX;
    }
    mr = &core->obj.mr[index];
    if (mr->state != QRDMA_MR_STATE_VALID) {
        qrdma_guest_error(core, "STag 0x%08x: MR %u is %s", stag, index,
                          mr->state == QRDMA_MR_STATE_NONE ? "not registered"
                                                           : "not valid (fast-register MR)");
        return QRDMA_MR_ERR_INVALID;
    }
    if (mr->key != stag_key(stag)) {
        qrdma_guest_error(core, "STag 0x%08x: MR %u has key 0x%02x", stag, index, mr->key);
        return QRDMA_MR_ERR_KEY;
    }
    if (mr->pd != pd) {
        qrdma_guest_error(core, "STag 0x%08x: MR %u is in PD %u, the access from PD %u", stag,
                          index, mr->pd, pd);
        return QRDMA_MR_ERR_PD;
    }
    if (len && iova + len - 1 < iova) {
        qrdma_guest_error(core, "STag 0x%08x: 0x%" PRIx64 " bytes at 0x%" PRIx64 " wrap", stag,
                          len, iova);
        return QRDMA_MR_ERR_BOUNDS;
    }
    if (mr->type == QRDMA_MR_TYPE_DMA) {
        off = iova;             /* the whole guest-physical space */
    } else {
        off = iova - mr->iova;
        if (iova < mr->iova || off > mr->length || len > mr->length - off) {
            qrdma_guest_error(core, "STag 0x%08x: 0x%" PRIx64 " bytes at 0x%" PRIx64 " are not "
                              "inside MR 0x%" PRIx64 "..+0x%" PRIx64, stag, len, iova, mr->iova,
                              mr->length);
            return QRDMA_MR_ERR_BOUNDS;
        }
        off += mr->fbo;
    }
    if (access & ~(unsigned)(mr->access & MR_RIGHTS)) {
        qrdma_guest_error(core, "STag 0x%08x: the access needs rights 0x%x, MR %u grants 0x%x",
                          stag, access, index, mr->access);
        return QRDMA_MR_ERR_ACCESS;
    }
    walk->stag = stag;
    walk->pos = off;
    walk->left = len;
    return 0;
}

/* Page p of a one- or two-level list: its address, or a QRDMA_MR_ERR_*. */
static int mr_page(struct qrdma_core *core, const struct qrdma_mr *mr, uint32_t stag,
                   uint64_t p, uint64_t *page)
{
    uint64_t index = mr->first + p, root;
    char what[24];

    snprintf(what, sizeof(what), "STag 0x%08x", stag);
    if (mr->levels == 2) {
        if (qrdma_pble_get(core, mr->first + p / QRDMA_PBLE_LEAF_ENTRIES, &root, what)) {
            return QRDMA_MR_ERR_PBLE;
        }
        /* Checked at registration, read again: the root may have changed since. */
        if (root >= core->hmc.count[QRDMA_HMC_PBLE]) {
            qrdma_guest_error(core, "%s: root PBLE %" PRIu64 " names PBLE %" PRIu64
                              ", beyond the %u committed", what,
                              mr->first + p / QRDMA_PBLE_LEAF_ENTRIES, root,
                              core->hmc.count[QRDMA_HMC_PBLE]);
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
static int mr_walk_step(struct qrdma_core *core, struct qrdma_mr_walk *walk, uint64_t *gpa,
                        uint64_t *len, bool probe)
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
        qrdma_guest_error(core, "STag 0x%08x: the MR went away during the access", walk->stag);
        return QRDMA_MR_ERR_INVALID;
    }
    mr = &core->obj.mr[index];
    page_size = 1ull << (mr->type == QRDMA_MR_TYPE_DMA ? DMA_PAGE_LOG2 : mr->page_log2);
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
            qrdma_guest_error(core, "STag 0x%08x: page %" PRIu64 " at 0x%" PRIx64 " is not "
                              "aligned to its 0x%" PRIx64 " bytes", walk->stag,
                              walk->pos / page_size, page, page_size);
            return QRDMA_MR_ERR_ALIGN;
        }
    }
    /* The DMA itself checks every byte; this names the cause at the right page. */
    if (page + off + chunk - 1 < page ||
        (probe && (core->env.dma_read(core->env.opaque, page + off, &byte, 1) ||
                   core->env.dma_read(core->env.opaque, page + off + chunk - 1, &byte, 1)))) {
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

int qrdma_mr_walk_next(struct qrdma_core *core, struct qrdma_mr_walk *walk, uint64_t *gpa,
                       uint64_t *len)
{
    return mr_walk_step(core, walk, gpa, len, true);
}

static int mr_copy(struct qrdma_core *core, uint32_t stag, uint32_t pd, uint64_t iova,
                   uint8_t *buf, const uint8_t *src, uint64_t len, unsigned access)
{
    struct qrdma_mr_walk walk;
    uint64_t gpa, n, done = 0;
    int err;

    err = qrdma_mr_translate(core, stag, pd, iova, len, access, &walk);
    while (!err && walk.left) {
        err = mr_walk_step(core, &walk, &gpa, &n, false);
        if (err) {
            break;
        }
        if (buf ? core->env.dma_read(core->env.opaque, gpa, buf + done, n)
                : core->env.dma_write(core->env.opaque, gpa, src + done, n)) {
            qrdma_guest_error(core, "STag 0x%08x: 0x%" PRIx64 " bytes at 0x%" PRIx64
                              " are not guest RAM", stag, n, gpa);
            return QRDMA_MR_ERR_NOT_RAM;
        }
        done += n;
    }
    return err;
}

int qrdma_mr_read(struct qrdma_core *core, uint32_t stag, uint32_t pd, uint64_t iova,
                  void *buf, uint64_t len, unsigned access)
{
    return mr_copy(core, stag, pd, iova, buf, NULL, len, access);
}

int qrdma_mr_write(struct qrdma_core *core, uint32_t stag, uint32_t pd, uint64_t iova,
                   const void *buf, uint64_t len, unsigned access)
{
    return mr_copy(core, stag, pd, iova, NULL, buf, len, access);
}
