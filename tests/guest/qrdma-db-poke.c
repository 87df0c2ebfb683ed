// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Ring a doorbell that names no queue, from an ordinary user context: open
 * the uverbs device without libibverbs, allocate a context with the raw
 * GET_CONTEXT command, map the context's own doorbell page the way
 * libqrdma does, and write to it. The device must answer with an AEQE
 * (BAD_DOORBELL, the page as ID), which the driver logs.
 *
 * usage: qrdma-db-poke [/dev/infiniband/uverbsN]
 * Prints "doorbell page N rung" on success.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>

#include "qrdma/qrdma_abi.h"
#include "qrdma/qrdma_hw.h"

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/dev/infiniband/uverbs0";
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_get_context cmd;
	} req;
	struct {
		struct ib_uverbs_get_context_resp core;
		struct qrdma_alloc_ucontext_resp drv;
	} resp;
	volatile uint32_t *db;
	int fd;

	fd = open(path, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", path, strerror(errno));
		return 1;
	}
	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_GET_CONTEXT;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	if (write(fd, &req, sizeof(req)) != sizeof(req)) {
		fprintf(stderr, "GET_CONTEXT: %s\n", strerror(errno));
		return 1;
	}
	db = mmap(NULL, QRDMA_DB_PAGE_SIZE, PROT_WRITE, MAP_SHARED, fd, resp.drv.db_mmap_offset);
	if (db == MAP_FAILED) {
		fprintf(stderr, "mmap of doorbell page %u: %s\n", resp.drv.db_page_index,
			strerror(errno));
		return 1;
	}
	*db = 0x1234;
	printf("doorbell page %u rung\n", resp.drv.db_page_index);
	munmap((void *)db, QRDMA_DB_PAGE_SIZE);
	close(fd);
	return 0;
}
