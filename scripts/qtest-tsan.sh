#!/bin/bash
# make check-tsan: the qtests of the device's QEMU glue (tests/qtest/)
# against a QEMU built with ThreadSanitizer (QRDMA_QEMU_VARIANT=tsan). With
# iothread= the data path's IOThread and the main loop share the device's
# state under its locks (docs/backends.md, "The data path in an
# IOThread"); the /qrdma/iothread/ qtests run traffic, resets and unplugs
# in that mode, and a data race there is a report. QEMU's own suppressions
# (tests/tsan/suppressions.tsan in its tree) apply. Fails on a failed test
# or on any ThreadSanitizer report. Not in make check: the build takes
# about ten minutes on two cores the first time (cached after).
. "$(dirname "$0")/lib.sh"
qemu=$(QRDMA_QEMU_VARIANT=tsan bash "$QRDMA_TOP/scripts/build-qemu.sh") || die "TSan build of QEMU failed"
src="$QRDMA_CACHE/qemu-$QEMU_VERSION/src"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
log "qtests under the ThreadSanitizer QEMU ($qemu)"
QRDMA_QEMU_VARIANT=tsan \
    TSAN_OPTIONS="suppressions=$src/tests/tsan/suppressions.tsan halt_on_error=0 second_deadlock_stack=1" \
    bash "$QRDMA_TOP/scripts/run-qtests.sh" > "$out" 2>&1 || { rc=1; log "qtests FAILED"; }
grep -E '^  (not ok|ok) ' "$out" | grep -c '^  ok ' | sed 's/^/tsan: qtests passed: /'
grep -E '^  not ok ' "$out"
if grep -q 'WARNING: ThreadSanitizer' "$out"; then
    rc=1
    log "tsan: $(grep -c 'WARNING: ThreadSanitizer' "$out") ThreadSanitizer report(s) from QEMU; the first:"
    sed -n '/WARNING: ThreadSanitizer/,/^  ==================$/p' "$out" | head -n 80
fi
grep -E '^qtest: ' "$out"
[ "$rc" -eq 0 ] && log "tsan: the qtests passed with no ThreadSanitizer report"
exit "$rc"
