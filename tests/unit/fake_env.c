/*
 * The fake embedding of tests/unit (see fake_env.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fake_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

struct fake_env fake;
struct qrdma_core core;

static void fake_guest_error(void *opaque, const char *msg)
{
    struct fake_env *f = opaque;

    f->guest_errors++;
    snprintf(f->last_error, sizeof(f->last_error), "%s", msg);
    if (f->log_n < FAKE_LOG_LEN) {
        snprintf(f->log[f->log_n], sizeof(f->log[0]), "%s", msg);
    }
    f->log_n++;
}

void fake_log_mark(void)
{
    fake.log_n = 0;
}

const char *fake_logged_msg(int i)
{
    return i < fake.log_n && i < FAKE_LOG_LEN ? fake.log[i] : "";
}

bool fake_logged(const char *needle)
{
    int i;

    for (i = 0; i < fake.log_n && i < FAKE_LOG_LEN; i++) {
        if (strstr(fake.log[i], needle)) {
            return true;
        }
    }
    fprintf(stderr, "  no guest error containing \"%s\" among %d\n", needle, fake.log_n);
    return false;
}

static void fake_schedule_pe_ready(void *opaque, uint64_t delay_ns)
{
    struct fake_env *f = opaque;

    f->pe_ready_scheduled++;
    f->pe_ready_delay_ns = delay_ns;
}

static bool fake_link_up(void *opaque)
{
    return ((struct fake_env *)opaque)->link_up;
}

static bool in_ram(uint64_t addr, size_t len)
{
    return addr >= FAKE_RAM_BASE && len <= FAKE_RAM_SIZE &&
           addr - FAKE_RAM_BASE <= FAKE_RAM_SIZE - len;
}

static int fake_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    struct fake_env *f = opaque;

    if (!in_ram(addr, len)) {
        return -1;
    }
    memcpy(buf, f->ram + (addr - FAKE_RAM_BASE), len);
    return 0;
}

static int fake_dma_write(void *opaque, uint64_t addr, const void *buf, size_t len)
{
    struct fake_env *f = opaque;

    if (!in_ram(addr, len)) {
        return -1;
    }
    memcpy(f->ram + (addr - FAKE_RAM_BASE), buf, len);
    return 0;
}

static void fake_msix_notify(void *opaque, unsigned vector)
{
    struct fake_env *f = opaque;

    CHECK(vector < 64);
    if (vector < 64) {
        f->irqs[vector]++;
    }
}

static int fake_send_frame(void *opaque, const uint8_t *frame, size_t len)
{
    struct fake_env *f = opaque;

    if (f->frames_sent < FAKE_MAX_FRAMES) {
        f->frames[f->frames_sent].len = len;
        memcpy(f->frames[f->frames_sent].data, frame, len);
    }
    f->frames_sent++;
    return f->queue_from && f->frames_sent >= f->queue_from ? QRDMA_TX_QUEUED
                                                            : QRDMA_TX_SENT;
}

static void fake_kick(void *opaque, unsigned what)
{
    ((struct fake_env *)opaque)->kicks |= what;
}

static void fake_rx_ready(void *opaque)
{
    ((struct fake_env *)opaque)->rx_ready_calls++;
}

static uint64_t fake_now_ns(void *opaque)
{
    return ((struct fake_env *)opaque)->now_ns;
}

static void fake_timer_mod(void *opaque, uint64_t deadline_ns)
{
    ((struct fake_env *)opaque)->timer_deadline = deadline_ns;
}

struct qrdma_core_env fake_core_env(void)
{
    struct qrdma_core_env env = {
        .opaque = &fake,
        .guest_error = fake_guest_error,
        .schedule_pe_ready = fake_schedule_pe_ready,
        .link_up = fake_link_up,
        .dma_read = fake_dma_read,
        .dma_write = fake_dma_write,
        .msix_notify = fake_msix_notify,
        .send_frame = fake_send_frame,
        .kick = fake_kick,
        .rx_ready = fake_rx_ready,
        .now_ns = fake_now_ns,
        .timer_mod = fake_timer_mod,
    };
    return env;
}

void fake_setup(const struct qrdma_core_config *cfg)
{
    static uint8_t *ram;
    struct qrdma_core_config defaults;
    struct qrdma_core_env env;
    char err[128] = "";

    if (!ram) {
        ram = calloc(1, FAKE_RAM_SIZE);
    }
    /* The previous core's objects: init starts from a blank core. */
    qrdma_core_fini(&core);
    memset(ram, 0, FAKE_RAM_SIZE);
    memset(&fake, 0, sizeof(fake));
    fake.ram = ram;
    if (!cfg) {
        qrdma_core_config_defaults(&defaults);
        cfg = &defaults;
    }
    env = fake_core_env();
    CHECK_EQ(qrdma_core_init(&core, cfg, &env, err, sizeof(err)), 0);
    qrdma_core_reset(&core);
}

void fake_setup_ready(const struct qrdma_core_config *cfg)
{
    fake_setup(cfg);
    qrdma_core_pe_ready(&core);
}

uint32_t rd(uint32_t off)
{
    return qrdma_core_reg_read(&core, off, 4);
}

void wr(uint32_t off, uint32_t v)
{
    qrdma_core_reg_write(&core, off, 4, v);
}

void *gpa(uint64_t addr)
{
    CHECK(in_ram(addr, 1));
    return fake.ram + (addr - FAKE_RAM_BASE);
}

void put64(uint64_t addr, uint64_t v)
{
    uint8_t *p = gpa(addr);
    int i;

    for (i = 0; i < 8; i++) {
        p[i] = v >> (8 * i);
    }
}

uint64_t get64(uint64_t addr)
{
    const uint8_t *p = gpa(addr);
    uint64_t v = 0;
    int i;

    for (i = 7; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}
