# qrdma top-level Makefile.
#
#   make check   everything a submission must pass: unit tests (plain and
#                under ASan+UBSan), QEMU and guest builds, the VM tests
#   make demo    build everything, boot two guests, print ibv_devinfo
#   make unit    device-core unit tests only (seconds, no VM)
#
# Builds of QEMU and of the guest are cached outside the repo (see
# scripts/lib.sh); `make clean` removes only this tree's build/.

BUILD      := build
CC         ?= cc
CFLAGS_UNIT := -std=gnu11 -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter \
	       -Iinclude -Iqemu-hw -Itests/unit
SAN_FLAGS  := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

CORE_SRCS  := $(wildcard qemu-hw/core/*.c)
TEST_SRCS  := tests/unit/fake_env.c tests/unit/fake_cqp.c
CORE_HDRS  := $(wildcard qemu-hw/core/*.h include/qrdma/*.h tests/unit/*.h) $(TEST_SRCS)
UNIT_TESTS := test_core_regs test_core_cqp test_core_eq test_core_hmc test_core_lan

.PHONY: all check unit unit-plain unit-asan setup qemu guest vm-check demo clean

all: unit

setup:
	@bash scripts/setup-host.sh

$(BUILD)/unit/%: tests/unit/%.c $(CORE_SRCS) $(CORE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_UNIT) -o $@ $< $(TEST_SRCS) $(CORE_SRCS)

$(BUILD)/unit-asan/%: tests/unit/%.c $(CORE_SRCS) $(CORE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_UNIT) $(SAN_FLAGS) -o $@ $< $(TEST_SRCS) $(CORE_SRCS)

unit-plain: $(addprefix $(BUILD)/unit/,$(UNIT_TESTS))
	@set -e; for t in $^; do echo "== $$t"; $$t; done

unit-asan: $(addprefix $(BUILD)/unit-asan/,$(UNIT_TESTS))
	@set -e; for t in $^; do echo "== $$t (ASan+UBSan)"; $$t; done

unit: unit-plain unit-asan

qemu: setup
	@bash scripts/build-qemu.sh >/dev/null

guest: setup
	@bash scripts/build-guest.sh >/dev/null

vm-check: qemu guest
	@bash tests/vm/run-all.sh

check:
	@bash scripts/check.sh

demo: setup qemu guest
	@bash scripts/demo.sh

clean:
	rm -rf $(BUILD)
