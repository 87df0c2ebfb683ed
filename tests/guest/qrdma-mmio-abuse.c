// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Hostile-guest check, run with the qrdma driver unbound: map BAR0 and the
 * doorbell BAR through sysfs and do everything the interface forbids
 * (wrong sizes, unaligned offsets, holes, reserved blocks, read-only
 * registers, reserved bits, doorbells with no queue). Each must be ignored
 * and counted in GUEST_ERRORS; the device must keep its state and answer.
 *
 * usage: qrdma-mmio-abuse PCI_BDF     (e.g. 0000:00:01.0)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "qrdma/qrdma_hw.h"

static int failures;

#define EXPECT(cond, ...)                                   \
	do {                                                \
		printf((cond) ? "ok: " : "FAIL: ");         \
		printf(__VA_ARGS__);                        \
		printf("\n");                               \
		if (!(cond))                                \
			failures++;                         \
	} while (0)

static volatile uint8_t *map_bar(const char *bdf, int bar, size_t *len)
{
	char path[128];
	void *p;
	off_t size;
	int fd;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource%d", bdf, bar);
	fd = open(path, O_RDWR | O_SYNC);
	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", path, strerror(errno));
		exit(1);
	}
	size = lseek(fd, 0, SEEK_END);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		fprintf(stderr, "mmap %s: %s\n", path, strerror(errno));
		exit(1);
	}
	*len = size;
	return p;
}

static uint32_t rd32(volatile uint8_t *b, uint32_t off)
{
	return *(volatile uint32_t *)(b + off);
}

static void wr32(volatile uint8_t *b, uint32_t off, uint32_t v)
{
	*(volatile uint32_t *)(b + off) = v;
}

int main(int argc, char **argv)
{
	volatile uint8_t *regs, *db;
	size_t regs_len, db_len;
	uint32_t errors0, errors, v, expected = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PCI_BDF\n", argv[0]);
		return 2;
	}
	regs = map_bar(argv[1], QRDMA_BAR_REGS, &regs_len);
	db = map_bar(argv[1], QRDMA_BAR_DOORBELL, &db_len);
	EXPECT(regs_len == QRDMA_BAR_REGS_SIZE, "BAR0 is %zu bytes", regs_len);
	EXPECT(rd32(regs, QRDMA_REG_SIGNATURE) == QRDMA_SIGNATURE, "signature 0x%08x",
	       rd32(regs, QRDMA_REG_SIGNATURE));
	EXPECT(db_len == (size_t)rd32(regs, QRDMA_REG_CAP_DB_PAGES) * QRDMA_DB_PAGE_SIZE,
	       "doorbell BAR is %zu bytes = CAP_DB_PAGES pages", db_len);

	wr32(regs, QRDMA_REG_SCRATCH, 0x5a5a1234);
	errors0 = rd32(regs, QRDMA_REG_GUEST_ERRORS);

	/* Wrong sizes: byte, half-word and quad-word accesses. */
	v = *(volatile uint8_t *)(regs + QRDMA_REG_SIGNATURE);
	EXPECT(v == 0, "byte read of SIGNATURE reads 0 (got 0x%x)", v);
	expected++;
	*(volatile uint16_t *)(regs + QRDMA_REG_SCRATCH) = 0xffff;
	expected++;
	/* 8-aligned, so the CPU issues one 8-byte access and does not split it. */
	*(volatile uint64_t *)(regs + QRDMA_REG_GUEST_ERRORS) = ~0ull;
	expected++;
	/*
	 * Holes, a CQP context at an unaligned address, a read-only HMC
	 * register, beyond every block. (Unaligned accesses are
	 * refused by QEMU's memory core before the device sees them; the unit
	 * tests cover the device's own check.)
	 */
	v = rd32(regs, 0x01c);
	expected++;
	wr32(regs, QRDMA_REG_CQP_BASE, 1);
	expected++;
	wr32(regs, QRDMA_REG_HMC_SD_COUNT, 1);
	expected++;
	v = rd32(regs, QRDMA_REG_INTR_BASE + 0xffc);
	expected++;
	v = rd32(regs, 0xfffc);
	expected++;
	/* Read-only registers and reserved bits. */
	wr32(regs, QRDMA_REG_SIGNATURE, 0);
	expected++;
	wr32(regs, QRDMA_REG_CAP_MAX_QP, 0xffffffff);
	expected++;
	wr32(regs, QRDMA_REG_PE_STATUS, 0);
	expected++;
	wr32(regs, QRDMA_REG_DEV_CTRL, 0xfffffffe);
	expected++;
	/* Doorbells naming no queue, and a doorbell read. */
	wr32(db, QRDMA_DB_PAGE_SIZE * 1, 5);
	expected++;
	wr32(db, db_len - 4, 5);
	expected++;
	v = rd32(db, 0);
	expected++;

	errors = rd32(regs, QRDMA_REG_GUEST_ERRORS);
	EXPECT(errors - errors0 == expected, "GUEST_ERRORS rose by %u (expected %u)",
	       errors - errors0, expected);
	EXPECT(rd32(regs, QRDMA_REG_SIGNATURE) == QRDMA_SIGNATURE, "signature intact");
	EXPECT(rd32(regs, QRDMA_REG_CAP_MAX_QP) != 0xffffffff, "CAP_MAX_QP intact (%u)",
	       rd32(regs, QRDMA_REG_CAP_MAX_QP));
	EXPECT(rd32(regs, QRDMA_REG_PE_STATUS) == QRDMA_PE_STATUS_READY, "engine still ready");
	EXPECT(rd32(regs, QRDMA_REG_SCRATCH) == 0x5a5a1234, "SCRATCH kept 0x%08x",
	       rd32(regs, QRDMA_REG_SCRATCH));

	/* A valid reset still works afterwards and clears SCRATCH. */
	wr32(regs, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
	for (int i = 0; i < 5000 && rd32(regs, QRDMA_REG_PE_STATUS) != QRDMA_PE_STATUS_READY; i++)
		usleep(1000);
	EXPECT(rd32(regs, QRDMA_REG_PE_STATUS) == QRDMA_PE_STATUS_READY, "ready again after reset");
	EXPECT(rd32(regs, QRDMA_REG_SCRATCH) == 0, "reset cleared SCRATCH");

	printf("qrdma-mmio-abuse: %d failure(s)\n", failures);
	return failures ? 1 : 0;
}
