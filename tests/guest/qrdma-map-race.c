// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Hostile-guest check of the host's memory map under TCG, run with the
 * qrdma driver unbound: one vCPU reads BAR0's constant registers of one
 * qrdma function in long runs of straight-line code, while the other vCPU
 * turns memory decoding of a second function off and on through its PCI
 * command register, so that QEMU rebuilds the guest's memory map under the
 * reader many times a second.
 *
 * Every read must return the register's value. A QEMU whose TCG resolves a
 * TLB entry made under the old map against the new one dispatches the read
 * to another region (a wrong value) or aborts (iotlb_to_section's
 * assertion): see docs/hardening.md, "The memory map under TCG".
 *
 * usage: qrdma-map-race READ_BDF TOGGLE_BDF SECONDS
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "qrdma/qrdma_hw.h"

#define PCI_COMMAND_OFFSET 4
#define PCI_COMMAND_MEMORY 0x2

/*
 * The read-only identity registers the reader checks, and their values as
 * read before the race (SIGNATURE's is also checked against the interface).
 */
static struct {
	uint32_t offset;
	uint32_t value;
} constant_regs[] = {
	{ QRDMA_REG_SIGNATURE, 0 },
	{ QRDMA_REG_IF_VERSION, 0 },
	{ QRDMA_REG_HW_REV, 0 },
	{ QRDMA_REG_FW_VERSION, 0 },
};
#define NREGS (sizeof(constant_regs) / sizeof(constant_regs[0]))

static atomic_int stop;
static volatile uint8_t *bar0;
static int config_fd;
static uint64_t reads, bad_reads, toggles;
static uint32_t first_bad_offset, first_bad_value;

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fprintf(stderr, "pin to CPU %d: %s (running unpinned)\n", cpu, strerror(errno));
}

static void check(int i, uint32_t v)
{
	if (v == constant_regs[i].value)
		return;
	if (!bad_reads) {
		first_bad_offset = constant_regs[i].offset;
		first_bad_value = v;
	}
	bad_reads++;
}

#define RD(i) (*(volatile uint32_t *)(bar0 + constant_regs[i].offset))

/*
 * Sixteen reads with no branch between them: TCG puts them in one
 * translation block, and a CPU asked to leave (as QEMU asks each vCPU after
 * a memory map change) only leaves between blocks, so the reads after the
 * first run on TLB entries made under the map before the change.
 */
static void *reader(void *arg)
{
	uint32_t v[16];
	int i;

	(void)arg;
	pin(0);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		v[0] = RD(0); v[1] = RD(1); v[2] = RD(2); v[3] = RD(3);
		v[4] = RD(0); v[5] = RD(1); v[6] = RD(2); v[7] = RD(3);
		v[8] = RD(0); v[9] = RD(1); v[10] = RD(2); v[11] = RD(3);
		v[12] = RD(0); v[13] = RD(1); v[14] = RD(2); v[15] = RD(3);
		for (i = 0; i < 16; i++)
			check(i % NREGS, v[i]);
		reads += 16;
	}
	return NULL;
}

static void set_command(uint16_t cmd)
{
	if (pwrite(config_fd, &cmd, sizeof(cmd), PCI_COMMAND_OFFSET) != sizeof(cmd)) {
		fprintf(stderr, "write PCI command: %s\n", strerror(errno));
		exit(1);
	}
}

static void *toggler(void *arg)
{
	uint16_t cmd;

	(void)arg;
	pin(1);
	if (pread(config_fd, &cmd, sizeof(cmd), PCI_COMMAND_OFFSET) != sizeof(cmd)) {
		fprintf(stderr, "read PCI command: %s\n", strerror(errno));
		exit(1);
	}
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		set_command(cmd & ~PCI_COMMAND_MEMORY);
		set_command(cmd | PCI_COMMAND_MEMORY);
		toggles++;
	}
	set_command(cmd);
	return NULL;
}

static void *map_bar0(const char *bdf)
{
	char path[128];
	off_t size;
	void *p;
	int fd;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource0", bdf);
	fd = open(path, O_RDWR | O_SYNC);
	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", path, strerror(errno));
		exit(1);
	}
	size = lseek(fd, 0, SEEK_END);
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		fprintf(stderr, "mmap %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return p;
}

int main(int argc, char **argv)
{
	pthread_t r, t;
	char path[128];
	unsigned int i;
	int seconds;

	if (argc != 4 || (seconds = atoi(argv[3])) <= 0) {
		fprintf(stderr, "usage: %s READ_BDF TOGGLE_BDF SECONDS\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], argv[2])) {
		fprintf(stderr, "the reader and the toggled function must differ\n");
		return 2;
	}
	bar0 = map_bar0(argv[1]);
	for (i = 0; i < NREGS; i++)
		constant_regs[i].value = *(volatile uint32_t *)(bar0 + constant_regs[i].offset);
	if (constant_regs[0].value != QRDMA_SIGNATURE) {
		fprintf(stderr, "%s BAR0 SIGNATURE reads 0x%08x, not a qrdma function\n",
			argv[1], constant_regs[0].value);
		return 1;
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", argv[2]);
	config_fd = open(path, O_RDWR);
	if (config_fd < 0) {
		fprintf(stderr, "open %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (pthread_create(&r, NULL, reader, NULL) || pthread_create(&t, NULL, toggler, NULL)) {
		fprintf(stderr, "pthread_create failed\n");
		return 1;
	}
	sleep(seconds);
	atomic_store(&stop, 1);
	pthread_join(r, NULL);
	pthread_join(t, NULL);
	printf("%llu reads of %s BAR0, %llu with a wrong value; %llu memory map changes (%s decoding off and on)\n",
	       (unsigned long long)reads, argv[1], (unsigned long long)bad_reads,
	       (unsigned long long)toggles * 2, argv[2]);
	if (bad_reads)
		printf("first wrong value: 0x%08x at BAR0 offset 0x%x\n", first_bad_value, first_bad_offset);
	if (!reads || !toggles) {
		printf("FAIL: nothing raced (reads %llu, toggles %llu)\n",
		       (unsigned long long)reads, (unsigned long long)toggles);
		return 1;
	}
	return bad_reads ? 1 : 0;
}
