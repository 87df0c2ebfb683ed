#!/bin/bash
# The qtests of the device's QEMU glue (tests/qtest/): the libqos node
# "qrdma" with its tests in QEMU's qos-test, and the q35 reset tests in
# qrdma-reset-test. Builds them in the cached QEMU tree next to the binary
# (scripts/build-qemu.sh), runs them, and ends with "qtest: N passed, N failed".
# QRDMA_QEMU_VARIANT=asan runs them against the ASan+UBSan build.
. "$(dirname "$0")/lib.sh"

BIN=$(bash "$QRDMA_TOP/scripts/build-qemu.sh")
BUILD=$(dirname "$BIN")
QEMU_DIR="$QRDMA_CACHE/qemu-$QEMU_VERSION"
SRC="$QEMU_DIR/src"

# Our files into QEMU's test tree, and the three build hooks, once.
hook_qtests() {
    local qt="$SRC/tests/qtest"
    rsync -c "$QRDMA_TOP/tests/qtest/qrdma-test.c" "$QRDMA_TOP/tests/qtest/qrdma-reset-test.c" "$qt/"
    rsync -c "$QRDMA_TOP/tests/qtest/libqos/qrdma.c" "$QRDMA_TOP/tests/qtest/libqos/qrdma.h" "$qt/libqos/"
    grep -q "'qrdma.c'" "$qt/libqos/meson.build" ||
        sed -i "s|^libqos = static_library('qos'|libqos_srcs += files('qrdma.c')\n&|" "$qt/libqos/meson.build"
    grep -q "qrdma-test.c" "$qt/meson.build" ||
        sed -i "s|^qos_test_ss = ss.source_set()$|&\nqos_test_ss.add(files('qrdma-test.c'))|" "$qt/meson.build"
    grep -q "qrdma-reset-test" "$qt/meson.build" ||
        sed -i "s|^qtests_x86_64 = qtests_i386$|&\nqtests_x86_64 += ['qrdma-reset-test']|" "$qt/meson.build"
    grep -q "'qrdma.c'" "$qt/libqos/meson.build" && grep -q "qrdma-test.c" "$qt/meson.build" &&
        grep -q "qrdma-reset-test" "$qt/meson.build" || die "could not hook the qtests into QEMU's meson files"
}

build_qtests() {
    export PATH="/usr/lib/ccache:$PATH" CCACHE_DIR="$QEMU_DIR/ccache"
    export CCACHE_BASEDIR="$QEMU_DIR" CCACHE_NOHASHDIR=1
    ninja -C "$BUILD" -j"$(nproc)" tests/qtest/qos-test tests/qtest/qrdma-reset-test \
        > "$BUILD/ninja-qtest.log" 2>&1 ||
        { grep -B2 -A12 -m3 'error' "$BUILD/ninja-qtest.log" >&2 || tail -40 "$BUILD/ninja-qtest.log" >&2
          die "qtest build failed"; }
    if grep -A6 'qtest/.*qrdma.*warning:' "$BUILD/ninja-qtest.log" >&2; then
        die "warnings in the qrdma qtests"
    fi
}

(
    flock 9
    stage qtest-hook hook_qtests
    stage qtest-build build_qtests
) 9>"$QRDMA_CACHE/.lock-qemu"

# TAP lines "ok N /path" and "not ok N /path" are counted; a test binary
# that dies mid-way counts as one more failure.
# The machines' firmware comes from Debian's packages (the +ds source has
# none). libqtest takes the target from the binary's name, so a wrapper of
# the same name adds the -L options.
wrap=$(mktemp -d)
tap="$wrap/tap"
trap 'rm -rf "$wrap"' EXIT
# QRDMA_QTEST_LOG=FILE: the devices' guest-error lines go there (-d guest_errors).
log_args=""
[ -z "${QRDMA_QTEST_LOG:-}" ] || log_args="-d guest_errors -D $(printf %q "$QRDMA_QTEST_LOG")"
printf '#!/bin/sh\nexec %q -L /usr/share/qemu -L /usr/share/seabios -L /usr/lib/ipxe/qemu %s "$@"\n' \
    "$BIN" "$log_args" > "$wrap/qemu-system-x86_64"
chmod +x "$wrap/qemu-system-x86_64"
export QTEST_QEMU_BINARY="$wrap/qemu-system-x86_64"
passed=0 failed=0
count() { grep -c "$1" "$tap" || true; }
run_tap() {
    local rc=0 ok bad
    timeout 600 "$@" --tap -k > "$tap" 2>&1 || rc=$?
    sed 's/^/  /' "$tap"
    ok=$(count '^ok ')
    bad=$(count '^not ok ')
    # A binary that died without a "not ok" line (abort, timeout) is one failure more.
    [ "$rc" -eq 0 ] || [ "$bad" -gt 0 ] || bad=1
    [ "$ok" -gt 0 ] || [ "$bad" -gt 0 ] || bad=1
    passed=$((passed + ok))
    failed=$((failed + bad))
}
cd "$BUILD"
if [ -n "${QRDMA_QTEST_ONLY:-}" ]; then
    # QRDMA_QTEST_ONLY="PATH ...": only qrdma-reset-test's tests in these
    # suites (GLib's -p takes a suite's own tests, not its sub-suites')
    only=()
    for p in $QRDMA_QTEST_ONLY; do only+=(-p "$p"); done
    run_tap tests/qtest/qrdma-reset-test "${only[@]}"
else
    # The qrdma node's tests on the pc machine's PCI bus (qos-test's graph path).
    run_tap tests/qtest/qos-test -p /x86_64/pc/i440FX-pcihost/pci-bus-pc/pci-bus/qrdma/qrdma-tests
    run_tap tests/qtest/qrdma-reset-test
fi
echo "qtest: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
