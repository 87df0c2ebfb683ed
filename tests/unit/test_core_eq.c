/*
 * Unit tests of the device core's event queues and interrupts:
 * CREATE/DESTROY_CEQ and CREATE/DESTROY_AEQ with every argument check;
 * the CCQ's completion events through CQP context qwords 4-5 (and their
 * checks at CQP creation); CEQEs and AEQEs read back from guest memory
 * with their VALID polarity over several laps; the ALLOC registers, the
 * full-queue drop and EQ_OVERFLOWS; CEQCTL/AEQCTL routing and the one-shot
 * DYN_CTL.INTENA rule, counted per MSI-X vector; the AEQ's BAD_DOORBELL
 * event; register checks of the interrupt block; and reset.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/qrdma_core.h"
#include "fake_cqp.h"
#include "fake_env.h"
#include "unit.h"

int unit_failures;

/* Fake RAM is [1 MB, 5 MB); the CQP sits in its first 128 KB (fake_cqp.h). */
#define CEQ_RING    (FAKE_RAM_BASE + 0x100000)  /* up to 256 KB (2^15 CEQEs) */
#define CEQ_RING2   (FAKE_RAM_BASE + 0x180000)
#define AEQ_RING    (FAKE_RAM_BASE + 0x200000)  /* up to 512 KB (2^15 AEQEs) */
#define RAM_END     (FAKE_RAM_BASE + FAKE_RAM_SIZE)
#define NOT_RAM     0x10000000ull

#define CCQ_CTX     0x1234ull
#define ENA         QRDMA_CQP_CTX_CCQ_CEQ_ENABLE
#define CAUSE_ENA   QRDMA_EQCTL_CAUSE_ENA
#define INTENA      QRDMA_DYN_CTL_INTENA

/* ---- setup and the CQP ------------------------------------------------------ */

/*
 * A fresh core (defaults for NULL) with a CQP of 64 WQEs and a CCQ of 128
 * whose context qwords 4 and 5 are q4 and q5 (cqp_write_ctx leaves them).
 */
static void setup_with(const struct qrdma_core_config *cfg, uint64_t q4, uint64_t q5)
{
    fake_setup_ready(cfg);
    put64(CQP_CTX_ADDR + 32, q4);
    put64(CQP_CTX_ADDR + 40, q5);
    cqp_setup(6, 7);
    fake_log_mark();
}

static void setup(uint64_t q4, uint64_t q5)
{
    setup_with(NULL, q4, q5);
}

static uint64_t run2(uint8_t opcode, uint64_t arg0, uint64_t arg1)
{
    uint64_t args[6] = { arg0, arg1 };

    return cqp_run1(opcode, args, NULL);
}

static uint64_t create_ceq(unsigned id, unsigned log2, uint64_t ring)
{
    return run2(QRDMA_CQP_OP_CREATE_CEQ, id | (uint64_t)log2 << QRDMA_EQ_SIZE_SHIFT, ring);
}

static uint64_t destroy_ceq(unsigned id)
{
    return run2(QRDMA_CQP_OP_DESTROY_CEQ, id, 0);
}

static uint64_t create_aeq(unsigned log2, uint64_t ring)
{
    return run2(QRDMA_CQP_OP_CREATE_AEQ, (uint64_t)log2 << QRDMA_EQ_SIZE_SHIFT, ring);
}

static uint64_t destroy_aeq(void)
{
    return run2(QRDMA_CQP_OP_DESTROY_AEQ, 0, 0);
}

/* One NOP: the CCQ completion that makes a CCQ event. */
static void nop(void)
{
    CHECK_RESULT(cqp_run1(QRDMA_CQP_OP_NOP, NULL, NULL), QRDMA_CQP_OK, 0);
}

static void nops(unsigned n)
{
    while (n--) {
        nop();
    }
}

static int irq_total(void)
{
    int i, sum = 0;

    for (i = 0; i < 64; i++) {
        sum += fake.irqs[i];
    }
    return sum;
}

static uint64_t ceqe(uint64_t ring, unsigned i)
{
    return get64(ring + 8ull * i);
}

static uint64_t aeqe_info(unsigned i)
{
    return get64(AEQ_RING + 16ull * i + 8);
}

static uint64_t aeqe_ctx(unsigned i)
{
    return get64(AEQ_RING + 16ull * i);
}

static uint64_t bad_doorbell_info(uint32_t page, bool valid)
{
    return page | (uint64_t)QRDMA_AE_BAD_DOORBELL << QRDMA_AEQE_CODE_SHIFT |
           (uint64_t)QRDMA_AE_SRC_DOORBELL << QRDMA_AEQE_SOURCE_SHIFT |
           (valid ? QRDMA_AEQE_VALID : 0);
}

static void doorbell(uint32_t page)
{
    qrdma_core_db_write(&core, (uint64_t)QRDMA_DB_PAGE_SIZE * page, 4, 1);
}

/* ---- 1. CREATE/DESTROY_CEQ and CREATE/DESTROY_AEQ ------------------------- */

static void test_ceq_create_destroy(void)
{
    setup(0, 0);
    CHECK_RESULT(create_ceq(0, 6, CEQ_RING), QRDMA_CQP_OK, 0);
    CHECK_RESULT(create_ceq(7, 15, CEQ_RING2), QRDMA_CQP_OK, 0);  /* last id, largest ring */
    CHECK_EQ(fake.guest_errors, 0);
    /* Nothing is written to a ring until there is an event. */
    CHECK_EQ(ceqe(CEQ_RING, 0), 0);

    /* Creating an existing CEQ: STATE, checked before the other arguments. */
    fake_log_mark();
    CHECK_RESULT(create_ceq(0, 6, CEQ_RING), QRDMA_CQP_ERR_STATE, 0);
    CHECK_RESULT(create_ceq(0, 99, CEQ_RING + 8), QRDMA_CQP_ERR_STATE, 0);
    CHECK_EQ(fake.log_n, 2);
    CHECK_STR_CONTAINS(fake_logged_msg(0), "CQP CREATE_CEQ (WQE 2) failed: major 7 minor 0");

    /* Destroy, destroy again, then create anew. */
    CHECK_RESULT(destroy_ceq(0), QRDMA_CQP_OK, 0);
    fake_log_mark();
    CHECK_RESULT(destroy_ceq(0), QRDMA_CQP_ERR_STATE, 0);
    CHECK_EQ(fake.log_n, 1);
    CHECK_STR_CONTAINS(fake_logged_msg(0), "CQP DESTROY_CEQ");
    CHECK_STR_CONTAINS(fake_logged_msg(0), "major 7 minor 0");
    CHECK_RESULT(destroy_ceq(1), QRDMA_CQP_ERR_STATE, 0);        /* never created */
    CHECK_RESULT(create_ceq(0, 6, CEQ_RING), QRDMA_CQP_OK, 0);
    CHECK_RESULT(destroy_ceq(7), QRDMA_CQP_OK, 0);
    CHECK_RESULT(destroy_ceq(0), QRDMA_CQP_OK, 0);

    /* DESTROY_CEQ's own argument checks. */
    CHECK_RESULT(destroy_ceq(8), QRDMA_CQP_ERR_INVALID_ARG, 0);  /* id >= CAP_MAX_CEQ */
    CHECK_RESULT(destroy_ceq(255), QRDMA_CQP_ERR_INVALID_ARG, 0);
    CHECK_RESULT(run2(QRDMA_CQP_OP_DESTROY_CEQ, 1ull << 8, 0), QRDMA_CQP_ERR_INVALID_ARG, 0);
    CHECK_RESULT(run2(QRDMA_CQP_OP_DESTROY_CEQ, 1ull << 63, 0), QRDMA_CQP_ERR_INVALID_ARG, 0);
    CHECK_EQ(rd(QRDMA_REG_CQP_ERRCODES), QRDMA_CQP_ERR_INVALID_ARG << 16 | 0);
}

static void test_ceq_create_errors(void)
{
    int errors;

    setup(0, 0);
    errors = fake.guest_errors;
    /* arg0: id beyond CAP_MAX_CEQ (8 by default), size, reserved bits: minor 0 */
    CHECK_RESULT(create_ceq(8, 6, CEQ_RING), QRDMA_CQP_ERR_INVALID_ARG, 0);
    CHECK_RESULT(create_ceq(255, 6, CEQ_RING), QRDMA_CQP_ERR_INVALID_ARG, 0);
    CHECK_RESULT(create_ceq(0, 5, CEQ_RING), QRDMA_CQP_ERR_INVALID_ARG, 0);
    CHECK_RESULT(create_ceq(0, 16, CEQ_RING), QRDMA_CQP_ERR_INVALID_ARG, 0);
    CHECK_RESULT(create_ceq(0, 0, CEQ_RING), QRDMA_CQP_ERR_INVALID_ARG, 0);
    CHECK_RESULT(run2(QRDMA_CQP_OP_CREATE_CEQ, 6 << 8 | 1ull << 16, CEQ_RING),
                 QRDMA_CQP_ERR_INVALID_ARG, 0);
    CHECK_RESULT(run2(QRDMA_CQP_OP_CREATE_CEQ, 6 << 8 | 1ull << 63, CEQ_RING),
                 QRDMA_CQP_ERR_INVALID_ARG, 0);
    /* arg1: misaligned, not RAM, running off the end of RAM: minor 1 */
    CHECK_RESULT(create_ceq(0, 6, CEQ_RING + 8), QRDMA_CQP_ERR_INVALID_ARG, 1);
    CHECK_RESULT(create_ceq(0, 6, CEQ_RING + 2048), QRDMA_CQP_ERR_INVALID_ARG, 1);
    CHECK_RESULT(create_ceq(0, 6, NOT_RAM), QRDMA_CQP_ERR_INVALID_ARG, 1);
    CHECK_RESULT(create_ceq(0, 6, 0), QRDMA_CQP_ERR_INVALID_ARG, 1);
    CHECK_RESULT(create_ceq(0, 10, RAM_END - 4096), QRDMA_CQP_ERR_INVALID_ARG, 1);
    CHECK_RESULT(create_ceq(0, 6, ~0xfffull), QRDMA_CQP_ERR_INVALID_ARG, 1);
    CHECK_EQ(rd(QRDMA_REG_CQP_ERRCODES), QRDMA_CQP_ERR_INVALID_ARG << 16 | 1);
    CHECK_STR_CONTAINS(fake.last_error, "CQP CREATE_CEQ");
    CHECK_STR_CONTAINS(fake.last_error, "major 2 minor 1");
    /* One guest error per failed command. */
    CHECK_EQ(fake.guest_errors, errors + 13);

    /* None of them created anything; a ring ending exactly at the end of RAM is fine. */
    CHECK_RESULT(create_ceq(0, 9, RAM_END - 4096), QRDMA_CQP_OK, 0);
    CHECK_RESULT(destroy_ceq(0), QRDMA_CQP_OK, 0);
    CHECK_RESULT(create_ceq(0, 6, CEQ_RING), QRDMA_CQP_OK, 0);
}

static void test_ceq_id_follows_max_ceq(void)
{
    struct qrdma_core_config cfg;

    qrdma_core_config_defaults(&cfg);
    cfg.max_ceq = 2;
    setup_with(&cfg, 0, 0);
    CHECK_RESULT(create_ceq(1, 6, CEQ_RING), QRDMA_CQP_OK, 0);
    CHECK_RESULT(create_ceq(2, 6, CEQ_RING2), QRDMA_CQP_ERR_INVALID_ARG, 0);
    CHECK_RESULT(destroy_ceq(2), QRDMA_CQP_ERR_INVALID_ARG, 0);

    cfg.max_ceq = 64;
    setup_with(&cfg, 0, 0);
    CHECK_RESULT(create_ceq(63, 6, CEQ_RING), QRDMA_CQP_OK, 0);
    CHECK_RESULT(create_ceq(64, 6, CEQ_RING2), QRDMA_CQP_ERR_INVALID_ARG, 0);
    CHECK_RESULT(destroy_ceq(63), QRDMA_CQP_OK, 0);
}

static void test_aeq_create_destroy(void)
{
    int errors;

    setup(0, 0);
    CHECK_RESULT(destroy_aeq(), QRDMA_CQP_ERR_STATE, 0);          /* none yet */
    errors = fake.guest_errors;
    CHECK_RESULT(create_aeq(5, AEQ_RING), QRDMA_CQP_ERR_INVALID_ARG, 0);
    CHECK_RESULT(create_aeq(16, AEQ_RING), QRDMA_CQP_ERR_INVALID_ARG, 0);
    /* CREATE_AEQ has no id: arg0 bits [7:0] are reserved like [63:16] */
    CHECK_RESULT(run2(QRDMA_CQP_OP_CREATE_AEQ, 6 << 8 | 1, AEQ_RING), QRDMA_CQP_ERR_INVALID_ARG, 0);
    CHECK_RESULT(run2(QRDMA_CQP_OP_CREATE_AEQ, 6 << 8 | 1ull << 16, AEQ_RING),
                 QRDMA_CQP_ERR_INVALID_ARG, 0);
    CHECK_RESULT(create_aeq(6, AEQ_RING + 16), QRDMA_CQP_ERR_INVALID_ARG, 1);
    CHECK_RESULT(create_aeq(6, NOT_RAM), QRDMA_CQP_ERR_INVALID_ARG, 1);
    /* 2^9 AEQEs are 8 KB: off the end; 2^8 are 4 KB: fits exactly */
    CHECK_RESULT(create_aeq(9, RAM_END - 4096), QRDMA_CQP_ERR_INVALID_ARG, 1);
    CHECK_STR_CONTAINS(fake.last_error, "CQP CREATE_AEQ");
    CHECK_EQ(fake.guest_errors, errors + 7);
    CHECK_RESULT(create_aeq(8, RAM_END - 4096), QRDMA_CQP_OK, 0);
    CHECK_RESULT(create_aeq(8, RAM_END - 4096), QRDMA_CQP_ERR_STATE, 0);
    CHECK_RESULT(destroy_aeq(), QRDMA_CQP_OK, 0);
    CHECK_RESULT(destroy_aeq(), QRDMA_CQP_ERR_STATE, 0);
    CHECK_STR_CONTAINS(fake.last_error, "CQP DESTROY_AEQ");
    CHECK_RESULT(create_aeq(15, AEQ_RING), QRDMA_CQP_OK, 0);      /* 512 KB */
    CHECK_RESULT(destroy_aeq(), QRDMA_CQP_OK, 0);
}

/* ---- 2. the CCQ's events and the interrupt rules ---------------------------- */

static void test_ccq_events_and_intena(void)
{
    unsigned i;

    setup(0 | ENA, CCQ_CTX);
    wr(QRDMA_REG_CEQCTL(0), 2 | CAUSE_ENA);
    wr(QRDMA_REG_DYN_CTL(2), INTENA);
    CHECK_EQ(rd(QRDMA_REG_CEQCTL(0)), 2 | CAUSE_ENA);
    CHECK_EQ(rd(QRDMA_REG_DYN_CTL(2)), INTENA);

    /* CEQ 0 does not exist yet: completions make no event, and no error. */
    nops(3);
    CHECK_EQ(irq_total(), 0);
    CHECK_EQ(fake.guest_errors, 0);
    CHECK_EQ(rd(QRDMA_REG_DYN_CTL(2)), INTENA);

    /* The completion of CREATE_CEQ 0 is the first event on it. */
    CHECK_RESULT(create_ceq(0, 6, CEQ_RING), QRDMA_CQP_OK, 0);
    CHECK_EQ(ceqe(CEQ_RING, 0), QRDMA_CEQE_VALID | CCQ_CTX);
    CHECK_EQ(ceqe(CEQ_RING, 1), 0);
    CHECK_EQ(fake.irqs[2], 1);
    CHECK_EQ(irq_total(), 1);
    CHECK_EQ(rd(QRDMA_REG_DYN_CTL(2)), 0);          /* INTENA cleared by firing */

    /* More completions: one CEQE each, no interrupt while INTENA is clear. */
    nops(2);
    CHECK_EQ(ceqe(CEQ_RING, 1), QRDMA_CEQE_VALID | CCQ_CTX);
    CHECK_EQ(ceqe(CEQ_RING, 2), QRDMA_CEQE_VALID | CCQ_CTX);
    CHECK_EQ(ceqe(CEQ_RING, 3), 0);
    CHECK_EQ(irq_total(), 1);

    /* Re-arming with events pending fires at once, and only once. */
    wr(QRDMA_REG_DYN_CTL(2), INTENA);
    CHECK_EQ(fake.irqs[2], 2);
    CHECK_EQ(rd(QRDMA_REG_DYN_CTL(2)), 0);
    wr(QRDMA_REG_DYN_CTL(2), INTENA);               /* nothing pending now */
    CHECK_EQ(fake.irqs[2], 2);
    CHECK_EQ(rd(QRDMA_REG_DYN_CTL(2)), INTENA);
    nop();
    CHECK_EQ(ceqe(CEQ_RING, 3), QRDMA_CEQE_VALID | CCQ_CTX);
    CHECK_EQ(fake.irqs[2], 3);
    CHECK_EQ(rd(QRDMA_REG_DYN_CTL(2)), 0);

    /* Writing 0 disarms: an armed-then-disarmed vector stays quiet. */
    wr(QRDMA_REG_DYN_CTL(2), INTENA);
    wr(QRDMA_REG_DYN_CTL(2), 0);
    nop();
    CHECK_EQ(fake.irqs[2], 3);

    /* CAUSE_ENA clear: events are written but signal nothing. */
    wr(QRDMA_REG_DYN_CTL(2), INTENA);               /* fires for the NOP above */
    CHECK_EQ(fake.irqs[2], 4);
    wr(QRDMA_REG_CEQCTL(0), 2);
    wr(QRDMA_REG_DYN_CTL(2), INTENA);
    nops(2);
    CHECK_EQ(ceqe(CEQ_RING, 5), QRDMA_CEQE_VALID | CCQ_CTX);
    CHECK_EQ(ceqe(CEQ_RING, 6), QRDMA_CEQE_VALID | CCQ_CTX);
    CHECK_EQ(fake.irqs[2], 4);
    CHECK_EQ(rd(QRDMA_REG_DYN_CTL(2)), INTENA);
    /* Turning CAUSE_ENA back on does not signal those events; the next one does. */
    wr(QRDMA_REG_CEQCTL(0), 2 | CAUSE_ENA);
    CHECK_EQ(fake.irqs[2], 4);
    nop();
    CHECK_EQ(fake.irqs[2], 5);

    /* Only vector 2 ever fired; every entry carries the context; no errors. */
    CHECK_EQ(irq_total(), fake.irqs[2]);
    for (i = 0; i < 8; i++) {
        CHECK_EQ(ceqe(CEQ_RING, i), QRDMA_CEQE_VALID | CCQ_CTX);
    }
    CHECK_EQ(ceqe(CEQ_RING, 8), 0);
    CHECK_EQ(fake.guest_errors, 0);
}

static void test_ccq_event_binding(void)
{
    const uint64_t big_ctx = QRDMA_CEQE_CQ_CTX_MASK;     /* the largest context value */

    /* CCQ bound to CEQ 3 routed to vector 5: events go there, nowhere else. */
    setup(3 | ENA, big_ctx);
    wr(QRDMA_REG_CEQCTL(3), 5 | CAUSE_ENA);
    wr(QRDMA_REG_CEQCTL(0), 1 | CAUSE_ENA);
    wr(QRDMA_REG_DYN_CTL(5), INTENA);
    wr(QRDMA_REG_DYN_CTL(1), INTENA);
    CHECK_RESULT(create_ceq(0, 6, CEQ_RING), QRDMA_CQP_OK, 0);
    CHECK_EQ(ceqe(CEQ_RING, 0), 0);
    CHECK_RESULT(create_ceq(3, 6, CEQ_RING2), QRDMA_CQP_OK, 0);
    CHECK_EQ(ceqe(CEQ_RING2, 0), QRDMA_CEQE_VALID | big_ctx);
    nop();
    CHECK_EQ(ceqe(CEQ_RING2, 1), QRDMA_CEQE_VALID | big_ctx);
    CHECK_EQ(ceqe(CEQ_RING, 0), 0);
    CHECK_EQ(fake.irqs[5], 1);
    CHECK_EQ(irq_total(), 1);

    /* Destroying the CCQ's CEQ: that completion and later ones make no event. */
    CHECK_RESULT(destroy_ceq(3), QRDMA_CQP_OK, 0);
    nop();
    CHECK_EQ(ceqe(CEQ_RING2, 2), 0);
    CHECK_EQ(ceqe(CEQ_RING2, 3), 0);
    CHECK_EQ(fake.guest_errors, 0);
    /* Created anew, it starts again at entry 0 with VALID 1. */
    memset(gpa(CEQ_RING2), 0, 64);
    CHECK_RESULT(create_ceq(3, 6, CEQ_RING2), QRDMA_CQP_OK, 0);
    CHECK_EQ(ceqe(CEQ_RING2, 0), QRDMA_CEQE_VALID | big_ctx);
    CHECK_EQ(ceqe(CEQ_RING2, 1), 0);

    /* CCQ_CEQ_ENABLE clear: no events even though the named CEQ exists. */
    setup(0, CCQ_CTX);
    wr(QRDMA_REG_CEQCTL(0), 1 | CAUSE_ENA);
    wr(QRDMA_REG_DYN_CTL(1), INTENA);
    CHECK_RESULT(create_ceq(0, 6, CEQ_RING), QRDMA_CQP_OK, 0);
    nops(3);
    CHECK_EQ(ceqe(CEQ_RING, 0), 0);
    CHECK_EQ(irq_total(), 0);
    CHECK_EQ(fake.guest_errors, 0);
}

/* The driver's pattern: the AEQ and CEQ 0 share vector 0. */
static void test_shared_vector(void)
{
    setup(0 | ENA, CCQ_CTX);
    CHECK_RESULT(create_aeq(6, AEQ_RING), QRDMA_CQP_OK, 0);
    CHECK_RESULT(create_ceq(0, 6, CEQ_RING), QRDMA_CQP_OK, 0);   /* event 0, no routing yet */
    wr(QRDMA_REG_AEQCTL, 0 | CAUSE_ENA);
    wr(QRDMA_REG_CEQCTL(0), 0 | CAUSE_ENA);
    CHECK_EQ(irq_total(), 0);
    wr(QRDMA_REG_DYN_CTL(0), INTENA);
    CHECK_EQ(irq_total(), 0);               /* event 0 came before the routing */
    nop();                                  /* CEQ event: fires */
    CHECK_EQ(fake.irqs[0], 1);
    doorbell(9);                            /* AEQ event while disarmed */
    nop();                                  /* CEQ event while disarmed */
    CHECK_EQ(fake.irqs[0], 1);
    wr(QRDMA_REG_DYN_CTL(0), INTENA);       /* one interrupt for both */
    CHECK_EQ(fake.irqs[0], 2);
    CHECK_EQ(irq_total(), 2);
    CHECK_EQ(aeqe_info(0), bad_doorbell_info(9, true));
    CHECK_EQ(ceqe(CEQ_RING, 2), QRDMA_CEQE_VALID | CCQ_CTX);
}

/* ---- 3. CQP context qwords 4-7 ------------------------------------------------ */

static void expect_ctx_refused(uint64_t q4, uint64_t q5, uint64_t q6, uint64_t q7,
                               const char *msg)
{
    int errors;

    fake_setup_ready(NULL);
    cqp_write_ctx(6, 7, CQP_SQ_ADDR, CQP_CCQ_ADDR, CQP_SHADOW_ADDR);
    put64(CQP_CTX_ADDR + 32, q4);
    put64(CQP_CTX_ADDR + 40, q5);
    put64(CQP_CTX_ADDR + 48, q6);
    put64(CQP_CTX_ADDR + 56, q7);
    errors = fake.guest_errors;
    cqp_create_at(CQP_CTX_ADDR);
    CHECK_EQ(rd(QRDMA_REG_CCQP_STATUS), QRDMA_CCQP_STATUS_ERR);
    CHECK_EQ(rd(QRDMA_REG_CQP_ERRCODES),
             QRDMA_CQP_ERR_CONTEXT << QRDMA_CQP_ERRCODES_MAJOR_SHIFT | QRDMA_CQP_CTX_ERR_RESERVED);
    CHECK_EQ(fake.guest_errors, errors + 1);
    CHECK_STR_CONTAINS(fake.last_error, msg);
}

static void test_ccq_ctx_checks(void)
{
    struct qrdma_core_config cfg;

    expect_ctx_refused(8 | ENA, CCQ_CTX, 0, 0, "CCQ event fields");      /* id >= max_ceq */
    expect_ctx_refused(8, CCQ_CTX, 0, 0, "CCQ event fields");            /* even disabled */
    expect_ctx_refused(0xff | ENA, 0, 0, 0, "CCQ event fields");
    expect_ctx_refused(0x200 | ENA, 0, 0, 0, "CCQ event fields");        /* reserved bit 9 */
    expect_ctx_refused(1ull << 63, 0, 0, 0, "CCQ event fields");
    expect_ctx_refused(ENA, 1ull << 63, 0, 0, "CCQ event fields");       /* 64-bit context */
    expect_ctx_refused(0, ~0ull, 0, 0, "CCQ event fields");
    expect_ctx_refused(ENA, CCQ_CTX, 1, 0, "reserved qwords");
    expect_ctx_refused(ENA, CCQ_CTX, 0, 1ull << 40, "reserved qwords");

    /* A good context: the CQP exists, and a refused one left nothing behind. */
    fake_setup_ready(NULL);
    put64(CQP_CTX_ADDR + 32, 7 | ENA);
    put64(CQP_CTX_ADDR + 40, QRDMA_CEQE_CQ_CTX_MASK);
    cqp_setup(6, 7);
    CHECK_EQ(rd(QRDMA_REG_CQP_ERRCODES), 0);
    CHECK_EQ(fake.guest_errors, 0);

    /* The id limit is the property. */
    qrdma_core_config_defaults(&cfg);
    cfg.max_ceq = 2;
    fake_setup_ready(&cfg);
    cqp_write_ctx(6, 7, CQP_SQ_ADDR, CQP_CCQ_ADDR, CQP_SHADOW_ADDR);
    put64(CQP_CTX_ADDR + 32, 2 | ENA);
    cqp_create_at(CQP_CTX_ADDR);
    CHECK_EQ(rd(QRDMA_REG_CQP_ERRCODES), QRDMA_CQP_ERR_CONTEXT << 16 | QRDMA_CQP_CTX_ERR_RESERVED);
    put64(CQP_CTX_ADDR + 32, 1 | ENA);
    cqp_create_at(CQP_CTX_ADDR);
    CHECK_EQ(rd(QRDMA_REG_CCQP_STATUS), QRDMA_CCQP_STATUS_DONE);
}

/* ---- 4. ring wrap, ALLOC, overflow -------------------------------------------- */

static void test_ceq_full_and_alloc(void)
{
    unsigned i;

    setup(0 | ENA, CCQ_CTX);
    wr(QRDMA_REG_CEQCTL(0), 1 | CAUSE_ENA);
    /* 64 events fill a 64-entry CEQ: CREATE_CEQ's completion and 63 NOPs. */
    CHECK_RESULT(create_ceq(0, 6, CEQ_RING), QRDMA_CQP_OK, 0);
    nops(63);
    for (i = 0; i < 64; i++) {
        CHECK_EQ(ceqe(CEQ_RING, i), QRDMA_CEQE_VALID | CCQ_CTX);
    }
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 0);
    CHECK_EQ(fake.guest_errors, 0);

    /* The 65th is dropped and counted; the command itself still completes. */
    fake_log_mark();
    nop();
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 1);
    CHECK_EQ(fake.log_n, 1);
    CHECK_STR_CONTAINS(fake_logged_msg(0), "CEQ 0 full: event dropped");
    CHECK_EQ(ceqe(CEQ_RING, 0), QRDMA_CEQE_VALID | CCQ_CTX);  /* not overwritten */
    nop();
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 2);

    /* Returning 10 entries lets 10 events in, on the second lap: VALID 0. */
    fake_log_mark();
    wr(QRDMA_REG_CEQALLOC(0), 10);
    CHECK_EQ(fake.log_n, 0);
    nops(10);
    for (i = 0; i < 10; i++) {
        CHECK_EQ(ceqe(CEQ_RING, i), CCQ_CTX);
    }
    CHECK_EQ(ceqe(CEQ_RING, 10), QRDMA_CEQE_VALID | CCQ_CTX);
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 2);
    CHECK_EQ(fake.log_n, 0);
    nop();
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 3);
    CHECK_EQ(ceqe(CEQ_RING, 10), QRDMA_CEQE_VALID | CCQ_CTX);

    /* Returning more than is outstanding: a guest error, clamped to all 64. */
    wr(QRDMA_REG_CEQALLOC(0), 5);
    nops(5);                                    /* entries 10..14 */
    fake_log_mark();
    wr(QRDMA_REG_CEQALLOC(0), 70);              /* 64 are outstanding */
    CHECK_EQ(fake.log_n, 1);
    CHECK_STR_CONTAINS(fake_logged_msg(0), "CEQ 0 ALLOC returns 70 entries but only 64 are outstanding");
    nops(64);                                   /* exactly a ring's worth fits ... */
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 3);
    for (i = 15; i < 64; i++) {
        CHECK_EQ(ceqe(CEQ_RING, i), CCQ_CTX);                  /* second lap */
    }
    for (i = 0; i < 15; i++) {
        CHECK_EQ(ceqe(CEQ_RING, i), QRDMA_CEQE_VALID | CCQ_CTX);   /* third lap */
    }
    nop();                                      /* ... and not one more */
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 4);
    CHECK_EQ(ceqe(CEQ_RING, 15), CCQ_CTX);

    /* Dropped events never interrupt: vector 1 was not armed, nothing pending from drops. */
    CHECK_EQ(irq_total(), 0);

    /* EQ_OVERFLOWS is read-only. */
    fake_log_mark();
    wr(QRDMA_REG_EQ_OVERFLOWS, 0);
    CHECK_EQ(fake.log_n, 1);
    CHECK_STR_CONTAINS(fake_logged_msg(0), "read-only register EQ_OVERFLOWS");
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 4);
}

static void test_alloc_errors(void)
{
    setup(0, 0);
    fake_log_mark();
    wr(QRDMA_REG_CEQALLOC(1), 1);               /* CEQ 1 does not exist */
    wr(QRDMA_REG_CEQALLOC(8), 1);               /* beyond CAP_MAX_CEQ */
    wr(QRDMA_REG_AEQALLOC, 1);                  /* no AEQ */
    wr(QRDMA_REG_CEQALLOC(0), 0x10000);         /* beyond the 16-bit count */
    wr(QRDMA_REG_AEQALLOC, 0x80000000u);
    CHECK_EQ(fake.log_n, 5);
    CHECK_STR_CONTAINS(fake_logged_msg(0), "CEQ 1 ALLOC written while the queue does not exist");
    CHECK_STR_CONTAINS(fake_logged_msg(1), "CEQALLOC(8) written: the device has 8 CEQs");
    CHECK_STR_CONTAINS(fake_logged_msg(2), "AEQ ALLOC written while the queue does not exist");
    CHECK_STR_CONTAINS(fake_logged_msg(3), "CEQALLOC sets reserved bits 0x10000");
    CHECK_STR_CONTAINS(fake_logged_msg(4), "AEQALLOC sets reserved bits 0x80000000");
    /* With the queue, a return of 0 is harmless and any return with none outstanding clamps. */
    CHECK_RESULT(create_ceq(1, 6, CEQ_RING), QRDMA_CQP_OK, 0);
    fake_log_mark();
    wr(QRDMA_REG_CEQALLOC(1), 0);
    CHECK_EQ(fake.log_n, 0);
    wr(QRDMA_REG_CEQALLOC(1), 1);
    CHECK_EQ(fake.log_n, 1);
    CHECK_STR_CONTAINS(fake_logged_msg(0), "returns 1 entries but only 0 are outstanding");
    /* The ALLOC registers read 0. */
    CHECK_EQ(rd(QRDMA_REG_CEQALLOC(1)), 0);
    CHECK_EQ(rd(QRDMA_REG_AEQALLOC), 0);
}

/* A driver-like consumer over many laps: every event seen once, none dropped. */
struct eq_reader {
    uint64_t ring;
    unsigned len, head, seen;
    bool valid;
};

static unsigned ceq_drain(struct eq_reader *r)
{
    unsigned n = 0;

    while (!!(ceqe(r->ring, r->head) & QRDMA_CEQE_VALID) == r->valid) {
        CHECK_EQ(ceqe(r->ring, r->head) & QRDMA_CEQE_CQ_CTX_MASK, CCQ_CTX);
        r->head = (r->head + 1) % r->len;
        if (!r->head) {
            r->valid = !r->valid;
        }
        n++;
        if (n > r->len) {
            CHECK(n <= r->len);         /* more valid entries than the ring holds */
            break;
        }
    }
    if (n) {
        wr(QRDMA_REG_CEQALLOC(0), n);
    }
    r->seen += n;
    return n;
}

static void test_ceq_many_laps(void)
{
    struct eq_reader r = { .ring = CEQ_RING, .len = 64, .valid = true };
    unsigned i, events = 1;

    setup(0 | ENA, CCQ_CTX);
    CHECK_RESULT(create_ceq(0, 6, CEQ_RING), QRDMA_CQP_OK, 0);
    for (i = 0; i < 300; i++) {
        nop();
        events++;
        if (i % 7 == 6) {
            ceq_drain(&r);
        }
    }
    ceq_drain(&r);
    CHECK_EQ(r.seen, events);
    CHECK_EQ(r.head, events % 64);
    CHECK_EQ(r.valid, (events / 64) % 2 == 0);
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 0);
    CHECK_EQ(fake.guest_errors, 0);
}

/* ---- 5. the AEQ ------------------------------------------------------------------ */

static void test_aeq_bad_doorbell(void)
{
    int errors;
    unsigned i;

    setup(0, 0);
    /* No AEQ yet: a bad doorbell is only a guest error. */
    doorbell(5);
    CHECK_EQ(fake.guest_errors, 1);
    CHECK_STR_CONTAINS(fake.last_error, "page 5");

    CHECK_RESULT(create_aeq(6, AEQ_RING), QRDMA_CQP_OK, 0);
    CHECK_EQ(aeqe_info(0), 0);
    wr(QRDMA_REG_AEQCTL, 3 | CAUSE_ENA);
    CHECK_EQ(rd(QRDMA_REG_AEQCTL), 3 | CAUSE_ENA);
    wr(QRDMA_REG_DYN_CTL(3), INTENA);
    errors = fake.guest_errors;
    fake_log_mark();
    qrdma_core_db_write(&core, QRDMA_DB_PAGE_SIZE * 5, 4, 1);
    CHECK_EQ(aeqe_ctx(0), 0);
    CHECK_EQ(aeqe_info(0), bad_doorbell_info(5, true));
    CHECK_EQ(aeqe_info(0) & QRDMA_AEQE_ID_MASK, 5);
    CHECK_EQ((aeqe_info(0) & QRDMA_AEQE_CODE_MASK) >> QRDMA_AEQE_CODE_SHIFT,
             QRDMA_AE_BAD_DOORBELL);
    CHECK_EQ((aeqe_info(0) & QRDMA_AEQE_SOURCE_MASK) >> QRDMA_AEQE_SOURCE_SHIFT,
             QRDMA_AE_SRC_DOORBELL);
    CHECK(aeqe_info(0) & QRDMA_AEQE_VALID);
    CHECK_EQ(aeqe_info(1), 0);
    CHECK_EQ(fake.irqs[3], 1);
    CHECK_EQ(irq_total(), 1);
    CHECK_EQ(rd(QRDMA_REG_DYN_CTL(3)), 0);
    /* The doorbell is still a guest error, the event does not replace it. */
    CHECK_EQ(fake.guest_errors, errors + 1);
    CHECK_STR_CONTAINS(fake_logged_msg(0), "no QP of this page has that ID");

    /* The kernel page, an offset inside a page, the last page. */
    qrdma_core_db_write(&core, 0, 4, 1);
    qrdma_core_db_write(&core, QRDMA_DB_PAGE_SIZE * 7 + 0x40, 4, 1);
    doorbell(QRDMA_DEFAULT_DB_PAGES - 1);
    CHECK_EQ(aeqe_info(1), bad_doorbell_info(0, true));
    CHECK_EQ(aeqe_info(2), bad_doorbell_info(7, true));
    CHECK_EQ(aeqe_info(3), bad_doorbell_info(QRDMA_DEFAULT_DB_PAGES - 1, true));
    CHECK_EQ(fake.irqs[3], 1);                  /* not re-armed */

    /* Accesses refused before decoding a page make no event. */
    qrdma_core_db_write(&core, QRDMA_DB_PAGE_SIZE * 5, 8, 1);
    qrdma_core_db_write(&core, QRDMA_DB_PAGE_SIZE * 5 + 2, 4, 1);
    doorbell(QRDMA_DEFAULT_DB_PAGES);
    qrdma_core_db_read(&core, QRDMA_DB_PAGE_SIZE * 5, 4);
    CHECK_EQ(aeqe_info(4), 0);
    for (i = 0; i < 4; i++) {
        CHECK_EQ(aeqe_ctx(i), 0);
    }

    /* Re-arming fires for the events written meanwhile. */
    wr(QRDMA_REG_DYN_CTL(3), INTENA);
    CHECK_EQ(fake.irqs[3], 2);
    CHECK_EQ(irq_total(), 2);

    /* After DESTROY_AEQ the doorbell goes back to being only a guest error. */
    CHECK_RESULT(destroy_aeq(), QRDMA_CQP_OK, 0);
    errors = fake.guest_errors;
    doorbell(6);
    CHECK_EQ(fake.guest_errors, errors + 1);
    CHECK_EQ(aeqe_info(4), 0);
}

static void test_aeq_full_and_alloc(void)
{
    unsigned i;

    setup(0, 0);
    CHECK_RESULT(create_aeq(6, AEQ_RING), QRDMA_CQP_OK, 0);
    for (i = 0; i < 64; i++) {
        doorbell(i + 1);
    }
    for (i = 0; i < 64; i++) {
        CHECK_EQ(aeqe_info(i), bad_doorbell_info(i + 1, true));
    }
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 0);

    /* Full: the event is dropped, counted and logged, before the doorbell's own error. */
    fake_log_mark();
    doorbell(100);
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 1);
    CHECK_EQ(fake.log_n, 2);
    CHECK_STR_CONTAINS(fake_logged_msg(0), "AEQ full: event dropped");
    CHECK_STR_CONTAINS(fake_logged_msg(1), "no QP of this page has that ID");
    CHECK_EQ(aeqe_info(0), bad_doorbell_info(1, true));

    /* AEQALLOC of 4: four more on the second lap, VALID 0; the fifth dropped. */
    wr(QRDMA_REG_AEQALLOC, 4);
    for (i = 0; i < 5; i++) {
        doorbell(200 + i);
    }
    for (i = 0; i < 4; i++) {
        CHECK_EQ(aeqe_info(i), bad_doorbell_info(200 + i, false));
    }
    CHECK_EQ(aeqe_info(4), bad_doorbell_info(5, true));
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 2);

    /* More than outstanding: logged and clamped. */
    fake_log_mark();
    wr(QRDMA_REG_AEQALLOC, 65);
    CHECK_EQ(fake.log_n, 1);
    CHECK_STR_CONTAINS(fake_logged_msg(0), "AEQ ALLOC returns 65 entries but only 64 are outstanding");
    for (i = 0; i < 65; i++) {
        doorbell(10);
    }
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 3);
    for (i = 4; i < 64; i++) {
        CHECK_EQ(aeqe_info(i), bad_doorbell_info(10, false));  /* second lap */
    }
    for (i = 0; i < 4; i++) {
        CHECK_EQ(aeqe_info(i), bad_doorbell_info(10, true));   /* third lap */
    }
    CHECK_EQ(irq_total(), 0);                   /* AEQCTL never routed */
}

/*
 * The embedding asks for an announcement (QEMU after an incoming
 * migration): a kick, and when the work runs, one AEQE ANNOUNCE with
 * source, ID and context 0, interrupting as any AEQE does. Without an AEQ
 * there is no one to ask: nothing is written and it is no guest error.
 */
static void test_aeq_announce(void)
{
    const uint64_t announce = (uint64_t)QRDMA_AE_ANNOUNCE << QRDMA_AEQE_CODE_SHIFT;

    setup(0, 0);
    CHECK(rd(QRDMA_REG_CAP_FEATURES) & QRDMA_FEATURE_ANNOUNCE);
    CHECK_EQ(rd(QRDMA_REG_IF_VERSION) & QRDMA_IF_VERSION_MINOR_MASK, 13);

    qrdma_core_announce(&core);
    CHECK_EQ(fake.kicks, QRDMA_WORK_ANNOUNCE);
    fake.kicks = 0;
    qrdma_core_run(&core, QRDMA_WORK_ANNOUNCE);
    CHECK_EQ(fake.guest_errors, 0);
    CHECK_EQ(irq_total(), 0);

    CHECK_RESULT(create_aeq(6, AEQ_RING), QRDMA_CQP_OK, 0);
    wr(QRDMA_REG_AEQCTL, 3 | CAUSE_ENA);
    wr(QRDMA_REG_DYN_CTL(3), INTENA);
    qrdma_core_announce(&core);
    /* Nothing before the work runs: a VM not yet running gets it later. */
    CHECK_EQ(aeqe_info(0), 0);
    CHECK_EQ(irq_total(), 0);
    CHECK_EQ(fake.kicks, QRDMA_WORK_ANNOUNCE);
    fake.kicks = 0;
    qrdma_core_run(&core, QRDMA_WORK_ANNOUNCE);
    CHECK_EQ(aeqe_ctx(0), 0);
    CHECK_EQ(aeqe_info(0), announce | QRDMA_AEQE_VALID);
    CHECK_EQ(aeqe_info(1), 0);
    CHECK_EQ(fake.irqs[3], 1);
    CHECK_EQ(fake.guest_errors, 0);

    /* One AEQE a round: QEMU's five rounds make five. */
    qrdma_core_run(&core, QRDMA_WORK_ANNOUNCE);
    CHECK_EQ(aeqe_info(1), announce | QRDMA_AEQE_VALID);
    CHECK_EQ(fake.kicks, 0);

    /* A reset takes the AEQ away: nothing again. */
    wr(QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    memset(gpa(AEQ_RING), 0, 64 * 16);
    qrdma_core_run(&core, QRDMA_WORK_ANNOUNCE);
    CHECK_EQ(aeqe_info(0), 0);
    CHECK_EQ(fake.guest_errors, 0);
}

/* ---- 6. register checks ----------------------------------------------------------- */

static void test_intr_registers(void)
{
    unsigned v;

    setup(0, 0);
    CHECK_EQ(fake.guest_errors, 0);
    /* Names; the first hole after EQ_OVERFLOWS. */
    CHECK(!strcmp(qrdma_core_reg_name(QRDMA_REG_DYN_CTL(0)), "DYN_CTL"));
    CHECK(!strcmp(qrdma_core_reg_name(QRDMA_REG_DYN_CTL(63)), "DYN_CTL"));
    CHECK(!strcmp(qrdma_core_reg_name(QRDMA_REG_CEQCTL(63)), "CEQCTL"));
    CHECK(!strcmp(qrdma_core_reg_name(QRDMA_REG_CEQALLOC(0)), "CEQALLOC"));
    CHECK(!strcmp(qrdma_core_reg_name(QRDMA_REG_AEQCTL), "AEQCTL"));
    CHECK(!strcmp(qrdma_core_reg_name(QRDMA_REG_AEQALLOC), "AEQALLOC"));
    CHECK(!strcmp(qrdma_core_reg_name(QRDMA_REG_EQ_OVERFLOWS), "EQ_OVERFLOWS"));
    CHECK(qrdma_core_reg_name(QRDMA_REG_EQ_OVERFLOWS + 4) == NULL);
    fake_log_mark();
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS + 4), 0);
    CHECK_STR_CONTAINS(fake_logged_msg(0), "no register there");

    /* Reset values. */
    for (v = 0; v < 64; v++) {
        CHECK_EQ(rd(QRDMA_REG_DYN_CTL(v)), 0);
        CHECK_EQ(rd(QRDMA_REG_CEQCTL(v)), 0);
    }
    CHECK_EQ(rd(QRDMA_REG_AEQCTL), 0);
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 0);

    /* DYN_CTL(v): v < CAP_MSIX_VECTORS (9). */
    fake_log_mark();
    wr(QRDMA_REG_DYN_CTL(8), INTENA);
    CHECK_EQ(rd(QRDMA_REG_DYN_CTL(8)), INTENA);
    CHECK_EQ(fake.log_n, 0);
    wr(QRDMA_REG_DYN_CTL(9), INTENA);
    wr(QRDMA_REG_DYN_CTL(63), INTENA);
    CHECK_EQ(fake.log_n, 2);
    CHECK_STR_CONTAINS(fake_logged_msg(0), "DYN_CTL(9) written: the device has 9 MSI-X vectors");
    CHECK_STR_CONTAINS(fake_logged_msg(1), "DYN_CTL(63) written");
    CHECK_EQ(rd(QRDMA_REG_DYN_CTL(9)), 0);
    CHECK_EQ(rd(QRDMA_REG_DYN_CTL(63)), 0);
    /* DYN_CTL reserved bits: the whole write is refused. */
    wr(QRDMA_REG_DYN_CTL(8), INTENA | 2);
    CHECK_STR_CONTAINS(fake_logged_msg(2), "DYN_CTL sets reserved bits 0x2");
    CHECK_EQ(rd(QRDMA_REG_DYN_CTL(8)), INTENA);

    /* CEQCTL(i): i < CAP_MAX_CEQ (8), vector < 9, reserved bits. */
    fake_log_mark();
    wr(QRDMA_REG_CEQCTL(7), 8 | CAUSE_ENA);
    CHECK_EQ(rd(QRDMA_REG_CEQCTL(7)), 8 | CAUSE_ENA);
    CHECK_EQ(fake.log_n, 0);
    wr(QRDMA_REG_CEQCTL(8), 1 | CAUSE_ENA);
    CHECK_STR_CONTAINS(fake_logged_msg(0), "CEQCTL(8) written: the device has 8 CEQs");
    CHECK_EQ(rd(QRDMA_REG_CEQCTL(8)), 0);
    wr(QRDMA_REG_CEQCTL(7), 9 | CAUSE_ENA);
    CHECK_STR_CONTAINS(fake_logged_msg(1), "CEQCTL(7)=0x40000009 routes to vector 9 of 9; ignored");
    wr(QRDMA_REG_CEQCTL(7), 9);                 /* also without CAUSE_ENA */
    CHECK_STR_CONTAINS(fake_logged_msg(2), "routes to vector 9 of 9");
    CHECK_EQ(rd(QRDMA_REG_CEQCTL(7)), 8 | CAUSE_ENA);
    wr(QRDMA_REG_CEQCTL(7), 0x100 | 1);          /* bit 8: reserved */
    CHECK_STR_CONTAINS(fake_logged_msg(3), "CEQCTL sets reserved bits 0x100");
    wr(QRDMA_REG_CEQCTL(7), 0x80000000u | CAUSE_ENA);
    CHECK_STR_CONTAINS(fake_logged_msg(4), "CEQCTL sets reserved bits 0x80000000");
    CHECK_EQ(rd(QRDMA_REG_CEQCTL(7)), 8 | CAUSE_ENA);
    CHECK_EQ(fake.log_n, 5);

    /* AEQCTL: the same rules. */
    fake_log_mark();
    wr(QRDMA_REG_AEQCTL, 0 | CAUSE_ENA);
    CHECK_EQ(rd(QRDMA_REG_AEQCTL), CAUSE_ENA);
    wr(QRDMA_REG_AEQCTL, 255 | CAUSE_ENA);
    CHECK_STR_CONTAINS(fake_logged_msg(0), "AEQCTL=0x400000ff routes to vector 255 of 9; ignored");
    wr(QRDMA_REG_AEQCTL, 0x20000000u);
    CHECK_STR_CONTAINS(fake_logged_msg(1), "AEQCTL sets reserved bits 0x20000000");
    CHECK_EQ(rd(QRDMA_REG_AEQCTL), CAUSE_ENA);
    wr(QRDMA_REG_AEQCTL, 0);
    CHECK_EQ(rd(QRDMA_REG_AEQCTL), 0);
    CHECK_EQ(fake.log_n, 2);

    /* EQ_OVERFLOWS is read-only. */
    wr(QRDMA_REG_EQ_OVERFLOWS, 5);
    CHECK_STR_CONTAINS(fake.last_error, "read-only register EQ_OVERFLOWS");
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 0);
    CHECK_EQ(irq_total(), 0);
}

static void test_intr_registers_follow_properties(void)
{
    struct qrdma_core_config cfg;

    qrdma_core_config_defaults(&cfg);
    cfg.msix_vectors = 4;
    cfg.max_ceq = 2;
    setup_with(&cfg, 1 | ENA, CCQ_CTX);
    wr(QRDMA_REG_DYN_CTL(3), INTENA);
    CHECK_EQ(rd(QRDMA_REG_DYN_CTL(3)), INTENA);
    wr(QRDMA_REG_DYN_CTL(4), INTENA);
    CHECK_STR_CONTAINS(fake.last_error, "DYN_CTL(4) written: the device has 4 MSI-X vectors");
    wr(QRDMA_REG_CEQCTL(1), 4 | CAUSE_ENA);
    CHECK_STR_CONTAINS(fake.last_error, "routes to vector 4 of 4");
    wr(QRDMA_REG_CEQCTL(2), 3 | CAUSE_ENA);
    CHECK_STR_CONTAINS(fake.last_error, "CEQCTL(2) written: the device has 2 CEQs");
    CHECK_EQ(fake.guest_errors, 3);
    wr(QRDMA_REG_CEQCTL(1), 3 | CAUSE_ENA);
    CHECK_EQ(fake.guest_errors, 3);
    /* The highest vector and the highest CEQ work end to end. */
    CHECK_RESULT(create_ceq(1, 6, CEQ_RING), QRDMA_CQP_OK, 0);
    CHECK_EQ(ceqe(CEQ_RING, 0), QRDMA_CEQE_VALID | CCQ_CTX);
    CHECK_EQ(fake.irqs[3], 1);
    CHECK_EQ(irq_total(), 1);
}

/* ---- 7. reset ---------------------------------------------------------------------- */

static void test_reset_clears_everything(void)
{
    unsigned v;

    setup(0 | ENA, CCQ_CTX);
    CHECK_RESULT(create_aeq(6, AEQ_RING), QRDMA_CQP_OK, 0);
    CHECK_RESULT(create_ceq(0, 6, CEQ_RING), QRDMA_CQP_OK, 0);   /* entry 0 */
    CHECK_RESULT(create_ceq(5, 6, CEQ_RING2), QRDMA_CQP_OK, 0);
    wr(QRDMA_REG_CEQCTL(0), 2 | CAUSE_ENA);
    wr(QRDMA_REG_CEQCTL(5), 3 | CAUSE_ENA);
    wr(QRDMA_REG_AEQCTL, 4 | CAUSE_ENA);
    wr(QRDMA_REG_DYN_CTL(7), INTENA);
    nops(63);                                   /* 65 events: CEQ 0 full, one dropped */
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 1);
    doorbell(1);                                /* AEQ entry 0 */
    /* Vectors 2 and 4 now have events pending (not armed), vector 7 is armed. */
    CHECK_EQ(irq_total(), 0);

    wr(QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    for (v = 0; v < 64; v++) {
        CHECK_EQ(rd(QRDMA_REG_DYN_CTL(v)), 0);
        CHECK_EQ(rd(QRDMA_REG_CEQCTL(v)), 0);
    }
    CHECK_EQ(rd(QRDMA_REG_AEQCTL), 0);
    CHECK_EQ(rd(QRDMA_REG_EQ_OVERFLOWS), 0);

    /* Pending interrupts are gone: arming (and routing) fires nothing. */
    wr(QRDMA_REG_DYN_CTL(2), INTENA);
    wr(QRDMA_REG_DYN_CTL(4), INTENA);
    wr(QRDMA_REG_CEQCTL(0), 2 | CAUSE_ENA);
    wr(QRDMA_REG_AEQCTL, 4 | CAUSE_ENA);
    CHECK_EQ(irq_total(), 0);

    /* The queues are gone: ALLOC is refused, a doorbell writes no AEQE. */
    fake_log_mark();
    wr(QRDMA_REG_CEQALLOC(0), 1);
    wr(QRDMA_REG_AEQALLOC, 1);
    CHECK_EQ(fake.log_n, 2);
    CHECK_STR_CONTAINS(fake_logged_msg(0), "does not exist");
    CHECK_STR_CONTAINS(fake_logged_msg(1), "does not exist");
    doorbell(2);
    CHECK_EQ(aeqe_info(1), 0);
    CHECK_EQ(irq_total(), 0);

    /* A new CQP without a CCQ binding; the old ids can be created again. */
    qrdma_core_pe_ready(&core);
    put64(CQP_CTX_ADDR + 32, 0);
    put64(CQP_CTX_ADDR + 40, 0);
    cqp_setup(6, 7);
    memset(gpa(AEQ_RING), 0, 64 * 16);
    memset(gpa(CEQ_RING), 0, 64 * 8);
    CHECK_RESULT(create_ceq(0, 6, CEQ_RING), QRDMA_CQP_OK, 0);
    CHECK_RESULT(create_ceq(5, 6, CEQ_RING2), QRDMA_CQP_OK, 0);
    CHECK_RESULT(create_aeq(6, AEQ_RING), QRDMA_CQP_OK, 0);
    nop();
    CHECK_EQ(ceqe(CEQ_RING, 0), 0);             /* the new CCQ has no CEQ */
    /* The new AEQ starts at entry 0 with VALID 1, and AEQCTL routes it to vector 4. */
    doorbell(3);
    CHECK_EQ(aeqe_info(0), bad_doorbell_info(3, true));
    CHECK_EQ(fake.irqs[4], 1);
    CHECK_EQ(irq_total(), 1);
}

static const struct unit_test tests[] = {
    UNIT_TEST(test_ceq_create_destroy),
    UNIT_TEST(test_ceq_create_errors),
    UNIT_TEST(test_ceq_id_follows_max_ceq),
    UNIT_TEST(test_aeq_create_destroy),
    UNIT_TEST(test_ccq_events_and_intena),
    UNIT_TEST(test_ccq_event_binding),
    UNIT_TEST(test_shared_vector),
    UNIT_TEST(test_ccq_ctx_checks),
    UNIT_TEST(test_ceq_full_and_alloc),
    UNIT_TEST(test_alloc_errors),
    UNIT_TEST(test_ceq_many_laps),
    UNIT_TEST(test_aeq_bad_doorbell),
    UNIT_TEST(test_aeq_full_and_alloc),
    UNIT_TEST(test_aeq_announce),
    UNIT_TEST(test_intr_registers),
    UNIT_TEST(test_intr_registers_follow_properties),
    UNIT_TEST(test_reset_clears_everything),
};

int main(void)
{
    return unit_run("core-eq", tests, sizeof(tests) / sizeof(tests[0]));
}
