/*
 * Fault injection on the engine's transmit side: frames lost, duplicated,
 * held back (reordered or delayed) or corrupted at rates in parts per
 * million, drawn from a seeded xorshift64* generator so that a test run
 * repeats exactly. Held frames wait in a list sorted by release time and
 * leave from qsw_engine_poll(). This path allocates per frame; the normal
 * path does not.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdlib.h>

#include "sw_int.h"

struct qsw_held {
    struct qsw_held *next;
    uint64_t at;
    size_t len;
    uint8_t data[];
};

static uint64_t rnd(struct qsw_engine *eng)
{
    uint64_t x = eng->rng;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    eng->rng = x;
    return x * 0x2545f4914f6cdd1dull;
}

static bool hit(struct qsw_engine *eng, uint32_t ppm)
{
    return ppm && rnd(eng) % 1000000u < ppm;
}

static void hold(struct qsw_engine *eng, const uint8_t *frame, size_t len, uint64_t at,
                 bool corrupt)
{
    struct qsw_held *h = malloc(sizeof(*h) + len), **pp;

    if (!h) {
        return;                             /* out of memory: the frame is lost */
    }
    memcpy(h->data, frame, len);
    h->len = len;
    h->at = at;
    if (corrupt && len > ETH_HLEN) {
        h->data[ETH_HLEN + rnd(eng) % (len - ETH_HLEN)] ^= (uint8_t)(1u << (rnd(eng) % 8));
        eng->st.fault_corrupted++;
    }
    /*
     * Most frames are held for the same delay and so go last: append them
     * in constant time. Walking the list for each one made a burst of n
     * held frames cost n^2 (thousands of frames between two clock steps).
     * Frames due at the same time stay in the order they were sent.
     */
    if (eng->held && eng->held_tail->at <= at) {
        pp = &eng->held_tail->next;
    } else {
        for (pp = &eng->held; *pp && (*pp)->at <= at; pp = &(*pp)->next) {
        }
    }
    h->next = *pp;
    *pp = h;
    if (!h->next) {
        eng->held_tail = h;
    }
}

/* Take the first held frame off the list. */
static struct qsw_held *unhold(struct qsw_engine *eng)
{
    struct qsw_held *h = eng->held;

    eng->held = h->next;
    if (!eng->held) {
        eng->held_tail = NULL;
    }
    return h;
}

void qsw_fault_tx(struct qsw_engine *eng, const uint8_t *frame, size_t len)
{
    const struct qsw_fault *f = &eng->fault;
    int copies = 1;

    if (hit(eng, f->loss_ppm)) {
        eng->st.fault_lost++;
        return;
    }
    if (hit(eng, f->dup_ppm)) {
        eng->st.fault_dup++;
        copies = 2;
    }
    while (copies--) {
        uint64_t delay = f->delay_ns;
        bool corrupt = hit(eng, f->corrupt_ppm);

        if (hit(eng, f->reorder_ppm)) {
            eng->st.fault_reordered++;
            delay += 1 + rnd(eng) % f->reorder_window_ns;
        }
        if (!delay && !corrupt && !eng->held) {
            eng->ops.send_frame(eng->opaque, frame, len);
        } else {
            hold(eng, frame, len, eng->now + delay, corrupt);
        }
    }
    if (eng->held && eng->held->at <= eng->now) {
        qsw_fault_poll(eng, eng->now);
    }
}

/* Sends the held frames that are due; returns the next release time. */
uint64_t qsw_fault_poll(struct qsw_engine *eng, uint64_t now)
{
    while (eng->held && eng->held->at <= now) {
        struct qsw_held *h = unhold(eng);

        eng->ops.send_frame(eng->opaque, h->data, h->len);
        free(h);
    }
    return eng->held ? eng->held->at : UINT64_MAX;
}

void qsw_fault_flush(struct qsw_engine *eng, bool send)
{
    while (eng->held) {
        struct qsw_held *h = unhold(eng);

        if (send) {
            eng->ops.send_frame(eng->opaque, h->data, h->len);
        }
        free(h);
    }
}
