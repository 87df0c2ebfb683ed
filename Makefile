# qrdma top-level Makefile.
#
#   make check   everything a submission must pass: unit tests (plain and
#                under ASan+UBSan), QEMU and guest builds, the VM tests
#   make deb     Debian packages (qrdma-dkms, libqrdma for Debian 13 guests;
#                qrdma-qemu for the host) in build/deb, checked by lintian
#   make demo    build everything, boot two guests, print ibv_devinfo
#   make unit    device-core unit tests only (seconds, no VM)
#   make lint    the upstream checkers: QEMU's checkpatch.pl on qemu-hw/ and
#                host-backend/, the kernel's checkpatch.pl --strict, sparse
#                (C=1) and W=1 on guest-kernel/ (scripts/lint.sh)
#   make qtest   qtests of the QEMU glue (QEMU's own framework, no guest)
#   make fuzz    libFuzzer on the device core (registers; the data path on
#                two brought-up cores; RoCEv2 frames into one) and on the
#                transport's receive path (FUZZ_SECONDS each, default 600)
#   make fuzz-qemu  QEMU's generic-fuzz on -device qrdma (also part of make fuzz)
#   make fuzz-cov  line coverage of the data-path files by the fuzz corpora
#   make check-asan  VM tests against an ASan+UBSan build of QEMU
#   make check-tsan  the glue's qtests against a ThreadSanitizer build of QEMU
#   make check-nested  the device in verbs mode on soft-RoCE with the guest
#                driver on top: QEMU inside a TCG guest (minutes; not in check)
#   make stress  long lifecycle stress in a guest (kills, driver reloads, resets)
#   make bench   qrdma vs soft-RoCE in guests, host limits; bench/results/
#   make bench-native  the transport and the device core without VMs;
#                bench/results/native.md
#   make bench-verbs  the verbs backend against native perftest on soft-RoCE
#                in a guest; bench/results/verbs.md
#   make bench-tails  the latency tail and the host's scheduling of QEMU's
#                threads; bench/results/tails.md
#   make bench-doorbells  SQ doorbells as MMIO writes against eventfds
#                (ioeventfd=, iothread=); bench/results/doorbells.md
#   make bench-netdev  system calls per frame of the guests' QEMUs on the
#                dgram netdev (perf), docs/performance.md
#
# Builds of QEMU and of the guest are cached outside the repo (see
# scripts/lib.sh); `make clean` removes only this tree's build/.

BUILD      := build
CC         ?= cc
CFLAGS_UNIT := -std=gnu11 -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter \
	       -Iinclude -Iqemu-hw -Ihost-backend/include -Itests/unit
SAN_FLAGS  := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

CORE_SRCS  := $(wildcard qemu-hw/core/*.c) $(wildcard host-backend/sw/*.c)
TEST_SRCS  := tests/unit/fake_env.c tests/unit/fake_cqp.c
# The core-dp suite's two-core bed, linked by that suite, core-backend, core-mw, core-mcast, core-mig and bench/native only.
DP_TESTBED := tests/unit/dp_testbed.c
CORE_HDRS  := $(wildcard qemu-hw/core/*.h include/qrdma/*.h host-backend/include/*.h host-backend/sw/*.h tests/unit/*.h) $(TEST_SRCS) $(DP_TESTBED)
UNIT_TESTS := $(sort $(basename $(notdir $(wildcard tests/unit/test_core_*.c))))

# The software RoCEv2 transport (host-backend/sw/) is tested on its own,
# without the device core: suites tests/unit/test_sw_*.c.
SW_SRCS    := $(wildcard host-backend/sw/*.c)
SW_TEST_SRCS := $(wildcard tests/unit/sw_*.c)
SW_HDRS    := $(wildcard host-backend/include/*.h host-backend/sw/*.h tests/unit/*.h)
SW_TESTS   := $(sort $(basename $(notdir $(wildcard tests/unit/test_sw_*.c))))
CFLAGS_SW  := -std=gnu11 -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter \
	       -Iinclude -Ihost-backend/include -Ihost-backend/sw -Itests/unit

# The host-verbs backend (host-backend/verbs/) is tested against a mock host
# device (tests/unit/verbs_mock.c): suites tests/unit/test_verbs_*.c. They
# need libibverbs' headers and library, and are skipped without them.
HAVE_VERBS := $(shell pkg-config --exists libibverbs 2>/dev/null && echo 1)
# The CM proxy's librdmacm side (vb_librdmacm.c) only where librdmacm is;
# the proxy itself is tested on a model of rdma_cm either way.
HAVE_RDMACM := $(shell pkg-config --exists librdmacm 2>/dev/null && echo 1)
VERBS_SRCS := $(filter-out $(if $(HAVE_RDMACM),,host-backend/verbs/vb_librdmacm.c),$(wildcard host-backend/verbs/*.c))
VERBS_TEST_SRCS := tests/unit/verbs_mock.c tests/unit/verbs_cm_model.c
VERBS_HDRS := $(wildcard host-backend/include/*.h host-backend/verbs/*.h tests/unit/verbs_mock.h tests/unit/verbs_cm_model.h tests/unit/test_eventfd.h tests/unit/unit.h)
VERBS_TESTS := $(if $(HAVE_VERBS),$(sort $(basename $(notdir $(wildcard tests/unit/test_verbs_*.c)))))
VERBS_LIBS := $(if $(HAVE_VERBS),$(shell pkg-config --libs libibverbs)) \
	      $(if $(HAVE_RDMACM),$(shell pkg-config --libs librdmacm))
CFLAGS_VERBS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter \
	       -Iinclude -Iqemu-hw -Ihost-backend/include -Ihost-backend/verbs -Itests/unit \
	       $(if $(HAVE_RDMACM),-DQRDMA_HAVE_RDMACM)

FUZZ_CC      ?= clang
FUZZ_FLAGS   := -std=gnu11 -O1 -g -Wall -Wno-unused-parameter -Iinclude -Iqemu-hw -Ihost-backend/include -Itests/unit \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_SECONDS ?= 600
FUZZ_SMOKE_SECONDS ?= 18
# fuzz_sw_rx: frames of up to 4 KB in an input; an input runs in milliseconds
FUZZ_SW_ARGS := -max_len=8192 -timeout=30 -artifact_prefix=sw-

.PHONY: all bench bench-verbs bench-native bench-tails bench-doorbells bench-netdev stress check check-migration check-asan check-tsan check-nested unit unit-plain unit-asan fuzz fuzz-smoke fuzz-qemu qtest \
	fuzz-corpus-sw fuzz-seeds-sw fuzz-corpus-core fuzz-seeds-core fuzz-cov setup qemu guest deb vm-check demo clean

all: unit

setup:
	@bash scripts/setup-host.sh

# Each source is compiled once per variant (flags) into
# $(BUILD)/obj/VARIANT/, with its header dependencies from the compiler
# (-MMD), and a suite links its own object against the variant's archive:
# the archive brings in only the members a suite uses (dp_testbed.o only
# where a suite calls the two-core bed). Compiling every source into every
# suite took three quarters of make unit.
CFLAGS_UNIT_ASAN := $(CFLAGS_UNIT) $(SAN_FLAGS)
CFLAGS_SW_ASAN := $(CFLAGS_SW) $(SAN_FLAGS)
CFLAGS_VERBS_ASAN := $(CFLAGS_VERBS) $(SAN_FLAGS)

# $(1) variant, $(2) compiler variable, $(3) flags variable
define obj_variant
$(BUILD)/obj/$(1)/%.o: %.c
	@mkdir -p $$(@D)
	$$($(2)) $$($(3)) -MMD -MP -c -o $$@ $$<
endef
objs = $(patsubst %.c,$(BUILD)/obj/$(1)/%.o,$(2))

$(eval $(call obj_variant,unit,CC,CFLAGS_UNIT))
$(eval $(call obj_variant,unit-asan,CC,CFLAGS_UNIT_ASAN))
$(eval $(call obj_variant,sw,CC,CFLAGS_SW))
$(eval $(call obj_variant,sw-asan,CC,CFLAGS_SW_ASAN))
$(eval $(call obj_variant,verbs,CC,CFLAGS_VERBS))
$(eval $(call obj_variant,verbs-asan,CC,CFLAGS_VERBS_ASAN))

CORE_LIB_SRCS := $(TEST_SRCS) $(DP_TESTBED) $(CORE_SRCS)
SW_LIB_SRCS := $(SW_TEST_SRCS) $(SW_SRCS)
VERBS_LIB_SRCS := $(VERBS_TEST_SRCS) $(VERBS_SRCS) $(CORE_LIB_SRCS)

# $(1) variant, $(2) sources
define archive
$(BUILD)/obj/$(1)/lib.a: $(call objs,$(1),$(2))
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endef
$(eval $(call archive,unit,$(CORE_LIB_SRCS)))
$(eval $(call archive,unit-asan,$(CORE_LIB_SRCS)))
$(eval $(call archive,sw,$(SW_LIB_SRCS)))
$(eval $(call archive,sw-asan,$(SW_LIB_SRCS)))
$(eval $(call archive,verbs,$(VERBS_LIB_SRCS)))
$(eval $(call archive,verbs-asan,$(VERBS_LIB_SRCS)))

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

$(BUILD)/unit/%: $(BUILD)/obj/unit/tests/unit/%.o $(BUILD)/obj/unit/lib.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_UNIT) -o $@ $^

$(BUILD)/unit-asan/%: $(BUILD)/obj/unit-asan/tests/unit/%.o $(BUILD)/obj/unit-asan/lib.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_UNIT_ASAN) -o $@ $^

$(BUILD)/unit-sw/%: $(BUILD)/obj/sw/tests/unit/%.o $(BUILD)/obj/sw/lib.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_SW) -o $@ $^ -lm

$(BUILD)/unit-sw-asan/%: $(BUILD)/obj/sw-asan/tests/unit/%.o $(BUILD)/obj/sw-asan/lib.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_SW_ASAN) -o $@ $^ -lm

# The verbs suites link the device core and the core-dp bed too (test_verbs_core runs both).
$(BUILD)/unit-verbs/%: $(BUILD)/obj/verbs/tests/unit/%.o $(BUILD)/obj/verbs/lib.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_VERBS) -o $@ $^ $(VERBS_LIBS) -lm

$(BUILD)/unit-verbs-asan/%: $(BUILD)/obj/verbs-asan/tests/unit/%.o $(BUILD)/obj/verbs-asan/lib.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_VERBS_ASAN) -o $@ $^ $(VERBS_LIBS) -lm

# qrdma-verbs-rxe: the device core and the verbs backend on a real host
# RDMA device, as a process; tests/vm/test-verbs-rxe.sh runs it in a guest
# with rdma_rxe. Built here, on the host (the guest's libibverbs is newer).
# qrdma-verbs-stock: one such core as the client of a stock rdma-core
# pingpong server (ibv_rc/ud/srq_pingpong) on the same device, in the same
# guest run. qrdma-verbs-bench: the WRITE bandwidth of two such cores,
# for make bench-verbs.
VERBS_HOST := tests/unit/verbs_host.c
$(BUILD)/verbs-rxe/qrdma-verbs-rxe $(BUILD)/verbs-rxe/qrdma-verbs-stock $(BUILD)/verbs-rxe/qrdma-verbs-bench: $(BUILD)/verbs-rxe/qrdma-verbs-%: tests/unit/verbs_%.c $(VERBS_HOST) $(VERBS_SRCS) $(VERBS_HDRS) $(CORE_SRCS) $(CORE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_VERBS) -o $@ $< $(VERBS_HOST) $(VERBS_SRCS) $(DP_TESTBED) $(TEST_SRCS) $(CORE_SRCS) $(VERBS_LIBS) -lm

# qrdma-verbs-cm: the CM proxy on the real librdmacm of a device (two
# proxies in one process playing two guests' CM, tests/unit/verbs_cm_real.c);
# test-verbs-rxe.sh runs it in the same guest.
VERBS_CM_SRCS := host-backend/verbs/vb_cm.c host-backend/verbs/vb_cm_mad.c host-backend/verbs/vb_librdmacm.c
$(BUILD)/verbs-rxe/qrdma-verbs-cm: tests/unit/verbs_cm_real.c $(VERBS_CM_SRCS) $(VERBS_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_VERBS) -o $@ $< $(VERBS_CM_SRCS) $(VERBS_LIBS)

UNIT_PLAIN_BINS := $(addprefix $(BUILD)/unit/,$(UNIT_TESTS)) $(addprefix $(BUILD)/unit-sw/,$(SW_TESTS)) \
		   $(addprefix $(BUILD)/unit-verbs/,$(VERBS_TESTS))
UNIT_ASAN_BINS := $(addprefix $(BUILD)/unit-asan/,$(UNIT_TESTS)) $(addprefix $(BUILD)/unit-sw-asan/,$(SW_TESTS)) \
		  $(addprefix $(BUILD)/unit-verbs-asan/,$(VERBS_TESTS))

# One run of one suite: with make -j the suites run side by side (each is
# one thread), and make -O keeps each suite's output together.
$(addprefix run/,$(UNIT_PLAIN_BINS) $(UNIT_ASAN_BINS)): run/%: %
	@echo "== $*$(if $(findstring -asan/,$*), (ASan+UBSan))"; $*

unit-plain: $(addprefix run/,$(UNIT_PLAIN_BINS))
	@$(if $(HAVE_VERBS),,echo "== test_verbs_*: skipped, no libibverbs (pkg-config)";)

unit-asan: $(addprefix run/,$(UNIT_ASAN_BINS))

.PHONY: $(addprefix run/,$(UNIT_PLAIN_BINS) $(UNIT_ASAN_BINS))

unit: unit-plain unit-asan

# Keep the objects (make would delete them as intermediates of the suites).
.SECONDARY:

# libFuzzer on the device core (tests/fuzz/). The corpus grows in build/fuzz;
# crashes are written there as crash-* and must become unit tests.
# The core's sources are compiled once for the three core harnesses, with
# libFuzzer's coverage but without its main (fuzzer-no-link).
comma := ,
FUZZ_OBJ_FLAGS := $(subst -fsanitize=fuzzer$(comma),-fsanitize=fuzzer-no-link$(comma),$(FUZZ_FLAGS)) \
		  -Ihost-backend/sw
$(eval $(call obj_variant,fuzz,FUZZ_CC,FUZZ_OBJ_FLAGS))
$(eval $(call archive,fuzz,$(TEST_SRCS) $(CORE_SRCS)))

$(BUILD)/fuzz/fuzz_core: tests/fuzz/fuzz_core.c $(BUILD)/obj/fuzz/lib.a $(CORE_HDRS)
	@mkdir -p $(@D)/corpus
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(BUILD)/obj/fuzz/lib.a

# libFuzzer on the software transport's receive path: frames against live
# QPs of two engines. Its corpus, build/fuzz/corpus-sw, starts from the
# committed seeds; its crashes are build/fuzz/sw-crash-*.
$(BUILD)/fuzz/fuzz_sw_rx: tests/fuzz/fuzz_sw_rx.c tests/fuzz/fuzz_frame.h $(SW_SRCS) $(SW_HDRS)
	@mkdir -p $(@D)/corpus-sw
	$(FUZZ_CC) $(FUZZ_FLAGS) -Ihost-backend/sw -o $@ $< $(SW_SRCS)

fuzz-corpus-sw:
	@mkdir -p $(BUILD)/fuzz/corpus-sw && cp tests/fuzz/seeds-sw/* $(BUILD)/fuzz/corpus-sw/

# The data-path harnesses: two device cores brought up as the driver would
# (tests/fuzz/fuzz_core_bed.c over the core-dp suite's bed), then a program
# of guest and wire actions (fuzz_core_dp) or of RoCEv2 frames into one core
# (fuzz_core_rx). Corpora build/fuzz/corpus-dp and corpus-rx start from the
# committed seeds; crashes are build/fuzz/dp-crash-* and rx-crash-*.
FUZZ_BED   := tests/fuzz/fuzz_core_bed.c $(DP_TESTBED)
FUZZ_BED_HDRS := tests/fuzz/fuzz_core_bed.h tests/fuzz/fuzz_frame.h $(CORE_HDRS)
FUZZ_DP_ARGS := -max_len=4096 -timeout=30 -artifact_prefix=dp-
FUZZ_RX_ARGS := -max_len=16384 -timeout=30 -artifact_prefix=rx-

# The bed is built without libFuzzer's coverage (still with ASan+UBSan):
# its page marking and RAM accessors are not what is fuzzed, and their
# instrumented comparisons took a tenth of an input's time.
FUZZ_BED_FLAGS := $(filter-out -fsanitize=fuzzer%,$(FUZZ_FLAGS)) -fsanitize=address,undefined \
		  -Ihost-backend/sw
FUZZ_BED_OBJS := $(BUILD)/fuzz/bed/fuzz_core_bed.o $(BUILD)/fuzz/bed/dp_testbed.o
$(BUILD)/fuzz/bed/fuzz_core_bed.o: tests/fuzz/fuzz_core_bed.c $(FUZZ_BED_HDRS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_BED_FLAGS) -c -o $@ $<
$(BUILD)/fuzz/bed/dp_testbed.o: tests/unit/dp_testbed.c $(FUZZ_BED_HDRS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_BED_FLAGS) -c -o $@ $<

$(BUILD)/fuzz/fuzz_core_%: tests/fuzz/fuzz_core_%.c $(FUZZ_BED_OBJS) $(FUZZ_BED_HDRS) $(BUILD)/obj/fuzz/lib.a
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -Ihost-backend/sw -o $@ $< $(FUZZ_BED_OBJS) $(BUILD)/obj/fuzz/lib.a

# Seed generators: the harnesses built without libFuzzer (run each seed once).
$(BUILD)/fuzz/gen_core_%: tests/fuzz/fuzz_core_%.c $(FUZZ_BED) $(FUZZ_BED_HDRS) $(CORE_SRCS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_UNIT) -Ihost-backend/sw -DFUZZ_CORE_SEEDGEN -o $@ $< $(FUZZ_BED) $(CORE_SRCS)

fuzz-seeds-core: $(BUILD)/fuzz/gen_core_dp $(BUILD)/fuzz/gen_core_rx
	rm -rf tests/fuzz/seeds-core-dp tests/fuzz/seeds-core-rx
	$(BUILD)/fuzz/gen_core_dp tests/fuzz/seeds-core-dp
	$(BUILD)/fuzz/gen_core_rx tests/fuzz/seeds-core-rx

fuzz-corpus-core:
	@mkdir -p $(BUILD)/fuzz/corpus-dp $(BUILD)/fuzz/corpus-rx
	@cp tests/fuzz/seeds-core-dp/* $(BUILD)/fuzz/corpus-dp/
	@cp tests/fuzz/seeds-core-rx/* $(BUILD)/fuzz/corpus-rx/

# Line coverage of qrdma_dp/mr/qp/obj/cqp/hmc.c and host-backend/sw by the
# data-path corpora (clang source-based coverage, llvm-cov): a per-file table.
fuzz-cov:
	@nice -n $(FUZZ_NICE) bash scripts/fuzz-cov.sh $(BUILD)

# The seed generator is the same harness built without libFuzzer; this
# rewrites tests/fuzz/seeds-sw/ (after a change to the harness's set-up).
# The numbered seeds are its own; finding-* are inputs the fuzzer found
# (each also a unit test), kept as they are.
$(BUILD)/fuzz/gen_sw_seeds: tests/fuzz/fuzz_sw_rx.c tests/fuzz/fuzz_frame.h $(SW_SRCS) $(SW_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_SW) -DFUZZ_SW_SEEDGEN -o $@ $< $(SW_SRCS)

fuzz-seeds-sw: $(BUILD)/fuzz/gen_sw_seeds
	rm -f tests/fuzz/seeds-sw/[0-9]* && $< tests/fuzz/seeds-sw

# fuzz_verbs_cm: the verbs backend's CM proxy (guest CM MADs) over the rdma_cm
# model; plain C, no libibverbs.
CM_FUZZ_SRCS := host-backend/verbs/vb_cm.c host-backend/verbs/vb_cm_mad.c tests/unit/verbs_cm_model.c
$(BUILD)/fuzz/fuzz_verbs_cm: tests/fuzz/fuzz_verbs_cm.c $(CM_FUZZ_SRCS) host-backend/verbs/vb_cm.h \
		host-backend/verbs/vb_cm_mad.h tests/unit/verbs_cm_model.h tests/unit/test_eventfd.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -Ihost-backend/verbs -o $@ $< $(CM_FUZZ_SRCS)

FUZZ_TARGETS := $(BUILD)/fuzz/fuzz_core $(BUILD)/fuzz/fuzz_sw_rx $(BUILD)/fuzz/fuzz_core_dp \
		$(BUILD)/fuzz/fuzz_core_rx $(BUILD)/fuzz/fuzz_verbs_cm

# ASan's quarantine (freed memory held back from reuse, to catch a use after
# free) at 16 MB instead of 256: an input frees a few MB, so a use after a
# free within the input is still caught, and reused memory no longer
# faults in fresh pages (8 to 10% of fuzz_core_dp's and fuzz_core_rx's
# time). ASAN_OPTIONS from the environment come after it and win.
FUZZ_ASAN_OPTIONS ?= quarantine_size_mb=16

# One harness for $(2) seconds; its log in $(3), then one line: executions, edges.
define fuzz_one
	{ ASAN_OPTIONS=$(FUZZ_ASAN_OPTIONS)$${ASAN_OPTIONS:+:$$ASAN_OPTIONS} \
	  QRDMA_FUZZ_REENTER=$(FUZZ_REENTER) nice -n $(FUZZ_NICE) ./$(1) -max_total_time=$(2) -print_final_stats=1 $(4) > $(3) 2>&1; \
	  r=$$?; echo "== $(1)"; \
	  grep -E '^(stat::|#[0-9]+[[:space:]]+DONE|==[0-9]+== ?ERROR|SUMMARY|fuzz_sw_rx: engine bug|fuzz_core: device bug)' $(3); \
	  printf '%s: %s executions, %s edges (cov), at most %s s\n' $(1) \
	    "$$(sed -n 's/^stat::number_of_executed_units: *//p' $(3))" \
	    "$$(grep -oE 'cov: [0-9]+' $(3) | tail -1 | cut -d' ' -f2)" $(2); \
	  [ $$r -eq 0 ] || { tail -40 $(3); rc=$$r; }; }
endef

FUZZ_NICE ?= 10
# fuzz_core_dp's re-entrant actions (a register write, doorbell, reset or run
# from inside msix_notify) are on: the core defers or refuses them (its
# re-entrancy guard). FUZZ_REENTER=0 turns them off.
FUZZ_REENTER ?= 1

fuzz: $(FUZZ_TARGETS) fuzz-corpus-sw fuzz-corpus-core
	@mkdir -p $(BUILD)/fuzz/corpus $(BUILD)/fuzz/corpus-cm && cd $(BUILD)/fuzz && rc=0; \
	$(foreach f,$(FUZZ_NAMES),$(call fuzz_one,$(f),$(FUZZ_SECONDS),run-$(f).log,$(FUZZ_ARGS_$(f))); )\
	cd $(CURDIR) && FUZZ_NICE=$(FUZZ_NICE) bash scripts/fuzz-qemu.sh $(BUILD) $(FUZZ_SECONDS) || rc=$$?; \
	exit $$rc

# QEMU's generic-fuzz with the qrdma configuration (the QOM glue, config
# space, DMA): builds qemu-fuzz-x86_64 (clang, ASan+UBSan; about 8 minutes
# the first time, cached like the other QEMU builds). Not in make check:
# that first build would add a sixth to a fresh machine's run.
fuzz-qemu:
	@FUZZ_NICE=$(FUZZ_NICE) bash scripts/fuzz-qemu.sh $(BUILD) $(FUZZ_SECONDS)

# Each harness for FUZZ_SMOKE_SECONDS (five of them: 90 s of
# CPU); fails on a finding, showing the end of its log. Each harness is one
# thread, so make -j runs them side by side (make -O keeps each log whole).
FUZZ_NAMES := fuzz_core fuzz_sw_rx fuzz_core_dp fuzz_core_rx fuzz_verbs_cm
FUZZ_ARGS_fuzz_core := corpus
FUZZ_ARGS_fuzz_sw_rx := $(FUZZ_SW_ARGS) corpus-sw
FUZZ_ARGS_fuzz_core_dp := $(FUZZ_DP_ARGS) corpus-dp
FUZZ_ARGS_fuzz_core_rx := $(FUZZ_RX_ARGS) corpus-rx
FUZZ_ARGS_fuzz_verbs_cm := -max_len=4096 -timeout=30 -artifact_prefix=cm- corpus-cm

$(addprefix smoke/,$(FUZZ_NAMES)): smoke/%: $(BUILD)/fuzz/% fuzz-corpus-sw fuzz-corpus-core
	@mkdir -p $(BUILD)/fuzz/corpus $(BUILD)/fuzz/corpus-cm && cd $(BUILD)/fuzz && rc=0; \
	$(call fuzz_one,$*,$(FUZZ_SMOKE_SECONDS),smoke-$*.log,$(FUZZ_ARGS_$*)); \
	exit $$rc

fuzz-smoke: $(addprefix smoke/,$(FUZZ_NAMES))

.PHONY: $(addprefix smoke/,$(FUZZ_NAMES))

qemu: setup
	@bash scripts/build-qemu.sh >/dev/null

guest: setup
	@bash scripts/build-guest.sh >/dev/null

# Debian packages from the cached QEMU and guest builds (scripts/build-deb.sh).
deb: setup
	@bash scripts/build-deb.sh $(CURDIR)/$(BUILD)/deb

# The libqos node and qtests in tests/qtest/, built in the cached QEMU tree.
qtest: setup
	@bash scripts/run-qtests.sh

vm-check: qemu guest
	@bash tests/vm/run-all.sh

check:
	@bash scripts/check.sh

# The checkers come from the pinned QEMU and Linux source packages (cached).
lint: setup
	@bash scripts/lint.sh

# VM tests against QEMU built with ASan and UBSan (slow first build).
check-asan: setup guest
	@bash scripts/vm-test-asan.sh

# The qtests of the glue against QEMU built with ThreadSanitizer (the data
# path's IOThread and the main loop; slow first build).
check-tsan: setup
	@bash scripts/qtest-tsan.sh

# The device with backend=verbs on a real RDMA device (soft-RoCE) and the
# guest driver on top: our QEMU run inside a TCG guest that has rxe0, its
# inner guest (a small initramfs) doing ibv_devinfo, an RC ping-pong and a
# WRITE/READ transfer against peers on rxe0 (tests/vm/test-nested.sh).
# Nested TCG: minutes, so not in make check.
check-nested: qemu guest
	@bash tests/vm/test-nested.sh

# Long lifecycle stress in a guest: 100 processes killed mid-work, 50 driver
# reloads and 50 function-level resets with traffic running (make check runs
# 20, 5 and 10).
stress: qemu guest
	@QRDMA_STRESS_KILLS=100 QRDMA_STRESS_RELOADS=50 QRDMA_STRESS_RESETS=50 \
		bash tests/vm/test-lifecycle.sh

# Live migration as the issue counts it: guest 0 moved away and back 5 times
# during each of the four transfers, with a qrdma peer, a soft-RoCE peer, a
# lossy link, with the peer moving too (three guests: both ends of each
# connection migrated alternately), and with the data path in an IOThread
# (iothread=). make check runs one round trip with the
# qrdma peer during the two byte-checked transfers: 4 migrations.
check-migration: qemu guest
	@QRDMA_MIG_ROUNDS=5 QRDMA_MIG_VARIANT_ROUNDS=5 QRDMA_MIG_VARIANTS="sw rxe lossy both iothread" \
		QRDMA_MIG_PHASES="bulk write_bw rc_pp qrdma_pp" \
		bash tests/vm/test-migrate.sh

bench:
	@bash bench/run-bench.sh

# The verbs backend against native perftest on the same soft-RoCE device in
# one guest (WRITE bandwidth, the device's overhead as a ratio);
# bench/results/verbs.md. Also a stage of make bench.
bench-verbs:
	@bash bench/run-verbs-bench.sh

# Where the latency tail comes from: the 8-byte latency tests with QEMU's
# emulator threads at the default and at SCHED_FIFO, with the main loops'
# scheduling delays (perf sched); bench/results/tails.md.
bench-tails:
	@bash bench/tails.sh

# The SQ doorbell as an MMIO write against an eventfd (ioeventfd=), the
# data path in an IOThread; bench/results/doorbells.md.
bench-doorbells:
	@bash bench/doorbells.sh

# System calls per frame of each guest's QEMU on the dgram netdev during a
# fixed transfer (perf's syscall tracepoints): counts, steadier than times.
# BENCH_NETDEV_MESSAGES WRITEs of 64 KB; QRDMA_QEMU picks the binary.
BENCH_NETDEV_MESSAGES ?= 5000
bench-netdev: qemu guest
	@bash bench/netdev-syscalls.sh $(BENCH_NETDEV_MESSAGES)

# Native microbenchmarks, no VM (bench/native/README.md): (a) the transport
# alone, (b) device core and transport, two cores in one process, (c) the
# same in two processes over Unix datagram sockets as the VMs' netdev.
# Optimised, no sanitizers; results in NATIVE_OUT (native.md, native.txt).
BENCH_CFLAGS := -std=gnu11 -O2 -g -DNDEBUG -Wall -Wextra -Werror -Wno-unused-parameter \
		-Iinclude -Iqemu-hw -Ihost-backend/include -Ihost-backend/sw -Ihost-backend/bench -Itests/unit
BENCH_SECONDS ?= 1
NATIVE_OUT ?= bench/results

$(BUILD)/bench/sw_bench: host-backend/bench/sw_bench.c host-backend/bench/bench_clock.h $(SW_SRCS) $(SW_HDRS)
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(SW_SRCS) -lm

$(BUILD)/bench/core_bench: bench/native/core_bench.c host-backend/bench/bench_clock.h $(CORE_SRCS) $(CORE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(DP_TESTBED) $(CORE_SRCS) -lm

# Also instructions per message by callgrind, the provider's built in the
# guest root (hence guest).
bench-native: setup guest $(BUILD)/bench/sw_bench $(BUILD)/bench/core_bench
	@bash bench/native/run-native.sh $(BUILD)/bench $(NATIVE_OUT) $(BENCH_SECONDS)

demo: setup qemu guest
	@bash scripts/demo.sh

clean:
	rm -rf $(BUILD)
