/*
 * libFuzzer harness for the device core: each input is a program of
 * guest actions — register and doorbell accesses of any size and offset,
 * writes of arbitrary bytes into guest RAM, CQP WQEs with arbitrary
 * arguments, LAN descriptors, frames from the wire, work kicks, resets —
 * run against a fresh core with a fake guest RAM. Built with ASan and
 * UBSan: any crash, overflow or undefined behaviour is a finding.
 *
 * Ops (one byte each, then their operands from the input):
 *   0 reg write   u16 offset, u8 size, u32 value
 *   1 reg read    u16 offset, u8 size
 *   2 doorbell    u32 offset, u8 size, u32 value
 *   3 run work    u8 mask
 *   4 poke RAM    u32 address, u8 length, bytes
 *   5 frame       u16 length, bytes
 *   6 PE ready
 *   7 CQP setup   (fixed addresses, as the driver would)
 *   8 CQP WQE     u8 opcode, 6 x u64 arguments, u8 valid-flip; doorbell + run
 *   9 LAN TX      u32 buffer, u64 cmd; post at the tail and kick
 *  10 LAN RX      u32 buffer, u64 cmd; post at the tail
 *  11 LAN setup   u8 ring log2, u32 ctrl
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/qrdma_core.h"
#include "fake_cqp.h"
#include "fake_env.h"

int unit_failures;

#define TXQ   (FAKE_RAM_BASE + 0x20000)
#define RXQ   (FAKE_RAM_BASE + 0x30000)

struct input {
    const uint8_t *p;
    size_t n;
};

static uint64_t take(struct input *in, unsigned bytes)
{
    uint64_t v = 0;
    unsigned i;

    for (i = 0; i < bytes && in->n; i++, in->p++, in->n--) {
        v |= (uint64_t)in->p[0] << (8 * i);
    }
    return v;
}

static unsigned size_of(uint8_t b)
{
    static const unsigned sizes[] = { 4, 4, 4, 1, 2, 8, 3, 0 };

    return sizes[b & 7];
}

static uint64_t ram_addr(uint32_t v)
{
    /* Mostly inside fake RAM, sometimes just outside it. */
    return FAKE_RAM_BASE - 0x1000 + v % (FAKE_RAM_SIZE + 0x2000);
}

static uint32_t tx_tail, rx_tail, lan_len;

static void run_program(struct input *in)
{
    uint8_t frame[QRDMA_LAN_MTU_MAX + 64];
    unsigned steps;

    for (steps = 0; in->n && steps < 256; steps++) {
        uint8_t op = take(in, 1) % 12;

        switch (op) {
        case 0: {
            uint64_t off = take(in, 2);
            unsigned size = size_of(take(in, 1));

            qrdma_core_reg_write(&core, off, size, take(in, 4));
            break;
        }
        case 1: {
            uint64_t off = take(in, 2);

            qrdma_core_reg_read(&core, off, size_of(take(in, 1)));
            break;
        }
        case 2: {
            uint64_t off = take(in, 4) % (2ull * QRDMA_DEFAULT_DB_PAGES * QRDMA_DB_PAGE_SIZE);
            unsigned size = size_of(take(in, 1));

            qrdma_core_db_write(&core, off, size, take(in, 4));
            break;
        }
        case 3:
            qrdma_core_run(&core, take(in, 1));
            break;
        case 4: {
            uint64_t addr = FAKE_RAM_BASE + take(in, 4) % FAKE_RAM_SIZE;
            unsigned len = take(in, 1);

            while (len-- && in->n && addr < FAKE_RAM_BASE + FAKE_RAM_SIZE) {
                *(uint8_t *)gpa(addr++) = take(in, 1);
            }
            break;
        }
        case 5: {
            size_t len = take(in, 2) % sizeof(frame), i;

            for (i = 0; i < len; i++) {
                frame[i] = in->n ? take(in, 1) : 0;
            }
            if (qrdma_core_lan_can_receive(&core)) {
                qrdma_core_lan_receive(&core, frame, len);
            }
            break;
        }
        case 6:
            qrdma_core_pe_ready(&core);
            break;
        case 7:
            /* As cqp_setup(), but quiet: earlier ops may make creation fail. */
            if (core.pe_ready && !core.cqp.created) {
                int q;

                cqp_write_ctx(4, 5, CQP_SQ_ADDR, CQP_CCQ_ADDR, CQP_SHADOW_ADDR);
                for (q = 4; q < 8; q++) {
                    put64(CQP_CTX_ADDR + 8 * q, 0);
                }
                put64(CQP_SHADOW_ADDR, 0);
                cqp_create_at(CQP_CTX_ADDR);
                memset(&drv, 0, sizeof(drv));
                drv.sq_len = 16;
                drv.ccq_len = 32;
                drv.sq_valid = drv.ccq_valid = true;
            }
            break;
        case 8: {
            uint8_t opcode = take(in, 1);
            uint64_t args[6];
            int i;

            for (i = 0; i < 6; i++) {
                args[i] = take(in, 8);
            }
            /* Point buffer arguments into RAM often enough to go deep. */
            if (args[5] & 1) {
                args[0] = ram_addr(args[0]) & ~63ull;
                args[1] = ram_addr(args[1]) & ~4095ull;
            }
            if (core.cqp.created) {
                cqp_post(opcode, args, take(in, 2), drv.sq_valid ^ (take(in, 1) == 0xff));
                wr(QRDMA_REG_CQP_DB, drv.sq_next);
                qrdma_core_run(&core, QRDMA_WORK_CQP);
                /* Consume what completed, as a driver would. */
                uint64_t s, st, rv;
                while (cqp_poll(&s, &st, &rv)) {
                }
            }
            break;
        }
        case 9: {
            uint64_t buf = ram_addr(take(in, 4));
            uint64_t cmd = take(in, 8);

            if (lan_len) {
                put64(TXQ + tx_tail * 16, buf);
                put64(TXQ + tx_tail * 16 + 8, cmd);
                tx_tail = (tx_tail + 1) & (lan_len - 1);
                wr(QRDMA_REG_LAN_TXQ_TAIL, tx_tail);
                qrdma_core_run(&core, QRDMA_WORK_LAN_TX);
            }
            break;
        }
        case 10: {
            uint64_t buf = ram_addr(take(in, 4));
            uint64_t cmd = take(in, 8);

            if (lan_len) {
                put64(RXQ + rx_tail * 16, buf);
                put64(RXQ + rx_tail * 16 + 8, cmd);
                rx_tail = (rx_tail + 1) & (lan_len - 1);
                wr(QRDMA_REG_LAN_RXQ_TAIL, rx_tail);
            }
            break;
        }
        case 11: {
            unsigned log2 = 3 + take(in, 1) % 4;

            wr(QRDMA_REG_LAN_CTRL, 0);
            lan_len = 1u << log2;
            tx_tail = rx_tail = 0;
            wr(QRDMA_REG_LAN_TXQ_BASE_LOW, (uint32_t)TXQ);
            wr(QRDMA_REG_LAN_TXQ_BASE_HIGH, (uint32_t)(TXQ >> 32));
            wr(QRDMA_REG_LAN_TXQ_LEN, lan_len);
            wr(QRDMA_REG_LAN_RXQ_BASE_LOW, (uint32_t)RXQ);
            wr(QRDMA_REG_LAN_RXQ_BASE_HIGH, (uint32_t)(RXQ >> 32));
            wr(QRDMA_REG_LAN_RXQ_LEN, lan_len);
            wr(QRDMA_REG_LAN_CTRL, take(in, 4) & QRDMA_LAN_CTRL_VALID_MASK);
            break;
        }
        }
        /* The guest may reset the device at any point; keep our view in step. */
        if (!core.lan.tx.len) {
            lan_len = 0;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct input in = { data, size };

    fake_setup(NULL);
    tx_tail = rx_tail = lan_len = 0;
    run_program(&in);
    return 0;
}
