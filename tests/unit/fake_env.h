/*
 * A fake embedding for device-core unit tests: guest RAM as one host
 * buffer at a fixed guest-physical base, and recorders for guest errors,
 * timers, interrupts, kicks and sent frames.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_FAKE_ENV_H
#define QRDMA_FAKE_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/qrdma_core.h"

#define FAKE_RAM_BASE 0x100000ull           /* guest-physical address of fake RAM */
#define FAKE_RAM_SIZE (4u << 20)
#define FAKE_MAX_FRAMES 64

struct fake_frame {
    size_t len;
    uint8_t data[QRDMA_LAN_MTU_MAX + QRDMA_LAN_FRAME_OVERHEAD];
};

#define FAKE_LOG_LEN 16

struct fake_env {
    int guest_errors;
    char last_error[256];
    char log[FAKE_LOG_LEN][256];        /* messages since fake_log_mark() */
    int log_n;
    int pe_ready_scheduled;
    uint64_t pe_ready_delay_ns;
    bool link_up;
    uint8_t *ram;                       /* FAKE_RAM_SIZE bytes */
    int irqs[64];                       /* MSI-X notifications per vector */
    unsigned kicks;                     /* OR of QRDMA_WORK_* asked for */
    int rx_ready_calls;
    int frames_sent;
    struct fake_frame frames[FAKE_MAX_FRAMES];
    /*
     * A netdev that fills: non-zero, frame number queue_from (from 1) and
     * every later one is answered QRDMA_TX_QUEUED (taken, kept by the
     * netdev, and a qrdma_core_tx_ready() owed for it).
     */
    int queue_from;
    uint64_t now_ns;                    /* the fake clock the data path reads */
    uint64_t timer_deadline;            /* last env.timer_mod, UINT64_MAX if none */
};

extern struct fake_env fake;
extern struct qrdma_core core;

/* A core with these properties (defaults when cfg is NULL), reset, fake cleared. */
void fake_setup(const struct qrdma_core_config *cfg);
/* The same, with the engine ready. */
void fake_setup_ready(const struct qrdma_core_config *cfg);
struct qrdma_core_env fake_core_env(void);

/* Guest errors since the last mark (fake_setup marks too). */
void fake_log_mark(void);
/* Message i (from 0) since the mark, or "" if there was none. */
const char *fake_logged_msg(int i);
/* Did a guest error since the mark contain needle? Says on stderr if not. */
bool fake_logged(const char *needle);

uint32_t rd(uint32_t off);
void wr(uint32_t off, uint32_t v);

/* Host pointer of a guest-physical address inside fake RAM. */
void *gpa(uint64_t addr);
/* Little-endian qwords in fake RAM, as a driver writes and reads them. */
void put64(uint64_t addr, uint64_t v);
uint64_t get64(uint64_t addr);

#endif /* QRDMA_FAKE_ENV_H */
