// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Guest-side check of the provider's verbs: open the qrdma device, query
 * it (ibv_query_device_ex) and its port, compare against what sysfs and
 * the expected device properties say, and allocate and free PDs.
 *
 * usage: qrdma-verbs-smoke [--dev NAME] [--expect-fw X.Y.Z] [--expect-max-qp N] [--pds N]
 * Prints one line per check and exits non-zero if any failed.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

static int failures;

#define EXPECT(cond, ...)                                   \
	do {                                                \
		if (cond) {                                 \
			printf("ok: " __VA_ARGS__);         \
		} else {                                    \
			printf("FAIL: " __VA_ARGS__);       \
			failures++;                         \
		}                                           \
		printf("\n");                               \
	} while (0)

static int read_sysfs(const char *dev, const char *attr, char *buf, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/%s", dev, attr);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int main(int argc, char **argv)
{
	const char *expect_fw = NULL, *dev_name = "qrdma0";
	long expect_max_qp = -1;
	int num_pds = 64;
	struct ibv_device **list;
	struct ibv_device *ibdev = NULL;
	struct ibv_context *ctx;
	struct ibv_device_attr_ex attr = {};
	struct ibv_port_attr port = {};
	struct ibv_pd **pds;
	char buf[128];
	int i, n, ret;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--expect-fw") && i + 1 < argc)
			expect_fw = argv[++i];
		else if (!strcmp(argv[i], "--expect-max-qp") && i + 1 < argc)
			expect_max_qp = strtol(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--pds") && i + 1 < argc)
			num_pds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--dev") && i + 1 < argc)
			dev_name = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--dev NAME] [--expect-fw X.Y.Z] [--expect-max-qp N] [--pds N]\n",
				argv[0]);
			return 2;
		}
	}

	list = ibv_get_device_list(&n);
	EXPECT(list && n >= 1, "ibv_get_device_list found %d device(s)", list ? n : -1);
	if (!list)
		return 1;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			ibdev = list[i];
	EXPECT(ibdev, "%s is listed", dev_name);
	if (!ibdev)
		return 1;

	ctx = ibv_open_device(ibdev);
	EXPECT(ctx, "ibv_open_device(%s): %s", ibv_get_device_name(ibdev),
	       ctx ? "opened" : strerror(errno));
	if (!ctx)
		return 1;

	ret = ibv_query_device_ex(ctx, NULL, &attr);
	EXPECT(ret == 0, "ibv_query_device_ex returned %d", ret);
	EXPECT(attr.orig_attr.vendor_id == 0x1b36 && attr.orig_attr.vendor_part_id == 0x00e8,
	       "vendor 0x%x part 0x%x", attr.orig_attr.vendor_id, attr.orig_attr.vendor_part_id);
	EXPECT(attr.orig_attr.phys_port_cnt == 1, "phys_port_cnt %u", attr.orig_attr.phys_port_cnt);
	if (expect_fw)
		EXPECT(!strcmp(attr.orig_attr.fw_ver, expect_fw), "fw_ver '%s' (expected '%s')",
		       attr.orig_attr.fw_ver, expect_fw);
	if (expect_max_qp >= 0)
		EXPECT(attr.orig_attr.max_qp == expect_max_qp, "max_qp %d (expected %ld)",
		       attr.orig_attr.max_qp, expect_max_qp);
	EXPECT(attr.orig_attr.max_pd > 0 && attr.orig_attr.max_cqe > 0 &&
	       attr.orig_attr.max_sge > 0, "max_pd %d max_cqe %d max_sge %d",
	       attr.orig_attr.max_pd, attr.orig_attr.max_cqe, attr.orig_attr.max_sge);

	/* fw_ver and node GUID must agree with what the kernel shows in sysfs. */
	if (!read_sysfs(ibv_get_device_name(ibdev), "fw_ver", buf, sizeof(buf)))
		EXPECT(!strcmp(buf, attr.orig_attr.fw_ver), "sysfs fw_ver '%s' matches", buf);
	else
		EXPECT(0, "sysfs fw_ver readable");
	if (!read_sysfs(ibv_get_device_name(ibdev), "node_guid", buf, sizeof(buf))) {
		uint64_t g = be64toh(attr.orig_attr.node_guid);
		char want[32];

		snprintf(want, sizeof(want), "%04x:%04x:%04x:%04x", (unsigned)(g >> 48) & 0xffff,
			 (unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff,
			 (unsigned)g & 0xffff);
		EXPECT(!strcmp(buf, want), "node_guid %s (sysfs %s)", want, buf);
	} else {
		EXPECT(0, "sysfs node_guid readable");
	}

	ret = ibv_query_port(ctx, 1, &port);
	EXPECT(ret == 0, "ibv_query_port(1) returned %d", ret);
	EXPECT(port.link_layer == IBV_LINK_LAYER_ETHERNET, "link_layer %u is Ethernet",
	       port.link_layer);
	EXPECT(port.max_mtu == IBV_MTU_4096, "max_mtu %d", port.max_mtu);
	EXPECT(port.gid_tbl_len > 0 && port.pkey_tbl_len == 1, "gid_tbl_len %d pkey_tbl_len %u",
	       port.gid_tbl_len, port.pkey_tbl_len);
	ret = ibv_query_port(ctx, 2, &port);
	EXPECT(ret != 0, "ibv_query_port(2) fails (returned %d)", ret);

	pds = calloc(num_pds, sizeof(*pds));
	for (i = 0; i < num_pds; i++) {
		pds[i] = ibv_alloc_pd(ctx);
		if (!pds[i])
			break;
	}
	EXPECT(i == num_pds, "allocated %d of %d PDs", i, num_pds);
	n = i;
	for (i = 0; i < n; i++) {
		ret = ibv_dealloc_pd(pds[i]);
		if (ret)
			break;
	}
	EXPECT(i == n, "freed %d of %d PDs", i, n);
	free(pds);

	ret = ibv_close_device(ctx);
	EXPECT(ret == 0, "ibv_close_device returned %d", ret);
	ibv_free_device_list(list);

	printf("qrdma-verbs-smoke: %d failure(s)\n", failures);
	return failures ? 1 : 0;
}
