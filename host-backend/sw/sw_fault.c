/*
 * Fault injection on the engine's transmit side: frames lost, duplicated,
 * held back (reordered or delayed) or corrupted at rates in parts per
 * million, drawn from a seeded xorshift64* generator so that a test run
 * repeats exactly. Held frames wait, in release-time order (see hold()),
 * and leave from qsw_engine_poll(). This path allocates per frame; the
 * normal path does not.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdlib.h>

#include "sw_int.h"

struct qsw_held {
    struct qsw_held *next;
    uint64_t at;
    /* order sent, among frames due at once */
    uint64_t seq;
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

/*
 * Held frames leave by release time, frames due at the same time in the
 * order they were sent. Most are held for the configured delay only, so
 * their release times follow the clock: they queue in held, in constant
 * time. The others (reordered, or due before the last one queued) go into
 * held_late, kept sorted; there are few of them. With one sorted list for
 * all, every frame walked past the reordered ones near its end: a burst
 * of n held frames cost n^2 (thousands between two clock steps).
 */
static void hold(struct qsw_engine *eng, const uint8_t *frame, size_t len,
                 uint64_t at, bool corrupt, bool reordered)
{
    struct qsw_held *h = malloc(sizeof(*h) + len), **pp;

    if (!h) {
        /* out of memory: the frame is lost */
        return;
    }
    memcpy(h->data, frame, len);
    h->len = len;
    h->at = at;
    h->seq = eng->held_seq++;
    if (corrupt && len > ETH_HLEN) {
        h->data[ETH_HLEN + rnd(eng) % (len - ETH_HLEN)] ^=
            (uint8_t)(1u << (rnd(eng) % 8));
        eng->st.fault_corrupted++;
    }
    h->next = NULL;
    if (!reordered && (!eng->held || eng->held_tail->at <= at)) {
        *(eng->held ? &eng->held_tail->next : &eng->held) = h;
        eng->held_tail = h;
        return;
    }
    pp = &eng->held_late;
    while (*pp && (*pp)->at <= at) {
        pp = &(*pp)->next;
    }
    h->next = *pp;
    *pp = h;
}

/* The list whose first frame leaves first; NULL if nothing is held. */
static struct qsw_held **first(struct qsw_engine *eng)
{
    const struct qsw_held *a = eng->held, *b = eng->held_late;

    if (!a || !b) {
        return a ? &eng->held : b ? &eng->held_late : NULL;
    }
    return b->at < a->at || (b->at == a->at && b->seq < a->seq)
               ? &eng->held_late
               : &eng->held;
}

/* Take the first frame off the list at pp. */
static struct qsw_held *unhold(struct qsw_engine *eng, struct qsw_held **pp)
{
    struct qsw_held *h = *pp;

    *pp = h->next;
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
        bool corrupt = hit(eng, f->corrupt_ppm), reordered = false;

        if (hit(eng, f->reorder_ppm)) {
            eng->st.fault_reordered++;
            delay += 1 + rnd(eng) % f->reorder_window_ns;
            reordered = true;
        }
        if (!delay && !corrupt && !qsw_fault_holding(eng)) {
            qsw_tx_emit(eng, frame, len);
        } else {
            hold(eng, frame, len, eng->now + delay, corrupt, reordered);
        }
    }
    qsw_fault_poll(eng, eng->now);
}

/*
 * Sends the held frames that are due, while the wire takes them; returns
 * the next release time.
 */
uint64_t qsw_fault_poll(struct qsw_engine *eng, uint64_t now)
{
    struct qsw_held **pp;

    while ((pp = first(eng)) && (*pp)->at <= now && !eng->tx_busy) {
        struct qsw_held *h = unhold(eng, pp);

        qsw_tx_emit(eng, h->data, h->len);
        free(h);
    }
    return pp ? (*pp)->at : UINT64_MAX;
}

void qsw_fault_flush(struct qsw_engine *eng, bool send)
{
    struct qsw_held **pp;

    while ((pp = first(eng))) {
        struct qsw_held *h = unhold(eng, pp);

        if (send) {
            qsw_tx_emit(eng, h->data, h->len);
        }
        free(h);
    }
}
