#!/bin/bash
# Runs the qtests and VM tests against a QEMU built with --enable-asan --enable-ubsan:
# `make check-asan`. Not part of `make check`: the sanitizer build of QEMU
# takes about ten minutes on two cores the first time (cached after).
# Fails on a failed test or on any sanitizer report from QEMU.
. "$(dirname "$0")/lib.sh"
qemu=$(QRDMA_QEMU_VARIANT=asan bash "$QRDMA_TOP/scripts/build-qemu.sh") || die "ASan build of QEMU failed"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
# The qtests of the glue first: resets and unplugs from the device's own
# interrupts are where a use-after-free would show.
log "qtests under the ASan+UBSan QEMU"
QRDMA_QEMU_VARIANT=asan UBSAN_OPTIONS=print_stacktrace=1 \
    bash "$QRDMA_TOP/scripts/run-qtests.sh" > "$out" 2>&1 || { rc=1; log "qtests FAILED"; }
if grep -E 'ERROR: AddressSanitizer|runtime error:' "$out"; then
    rc=1
    log "qtests: sanitizer report from QEMU"
fi
grep -E '^qtest: ' "$out"
# test-map-race: our QEMU patch (qemu-patches/0001) under the sanitizers.
for t in test-smoke test-bad-input test-ethernet test-map-race; do
    log "$t under the ASan+UBSan QEMU"
    # Leak checking at exit reports QEMU's own allocations; errors matter here.
    QRDMA_QEMU=$qemu ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
        bash "$QRDMA_TOP/tests/vm/$t.sh" > "$out" 2>&1 || { rc=1; log "$t FAILED"; }
    if grep -E 'ERROR: AddressSanitizer|runtime error:' "$out"; then
        rc=1
        log "$t: sanitizer report from QEMU"
    fi
    grep -E '^vm-run: (done|guest)' "$out"
done
[ "$rc" -eq 0 ] && log "asan: all VM tests passed with no sanitizer report"
exit "$rc"
