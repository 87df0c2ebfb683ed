#!/bin/bash
# make check-tsan: the qtests of the device's QEMU glue in the data path's
# IOThread mode (/qrdma/iothread/, tests/qtest/qrdma-reset-test.c) against
# a QEMU built with ThreadSanitizer (QRDMA_QEMU_VARIANT=tsan). There the
# IOThread and the main loop share the device's state under its locks
# (docs/backends.md, "The data path in an IOThread"), with traffic, resets
# and unplugs running. QEMU's own suppressions and ours
# (tests/tsan/qrdma.supp, each with why) apply. Fails on a failed test or
# on any report with the device's code in it; QEMU's own reports without
# it are counted and listed, not judged. Not in make check: the build
# takes about fifteen minutes on two cores the first time (cached after).
. "$(dirname "$0")/lib.sh"
qemu=$(QRDMA_QEMU_VARIANT=tsan bash "$QRDMA_TOP/scripts/build-qemu.sh") || die "TSan build of QEMU failed"
src="$QRDMA_CACHE/qemu-$QEMU_VERSION/src"
out=$(mktemp) supp=$(mktemp)
trap 'rm -f "$out" "$supp"' EXIT
cat "$src/tests/tsan/suppressions.tsan" "$QRDMA_TOP/tests/tsan/qrdma.supp" > "$supp"
rc=0
log "qtests /qrdma/iothread under the ThreadSanitizer QEMU ($qemu)"
# exitcode=0: QEMU exits as usual with reports (the qtests would fail at
# its exit status, not at the report); die_after_fork=0: libqtest forks
# QEMU from a process that has threads.
iothread=/x86_64/qrdma/iothread
QRDMA_QEMU_VARIANT=tsan QRDMA_QTEST_ONLY="$iothread $iothread/irq $iothread/unplug" \
    TSAN_OPTIONS="suppressions=$supp halt_on_error=0 exitcode=0 die_after_fork=0 second_deadlock_stack=1" \
    bash "$QRDMA_TOP/scripts/run-qtests.sh" > "$out" 2>&1 || { rc=1; log "qtests FAILED"; }
grep -E '^  not ok ' "$out" || true
read -r ours theirs < <(python3 - "$out" <<'PY'
import re, sys
text = open(sys.argv[1], errors="replace").read()
reports = re.findall(r"WARNING: ThreadSanitizer:.*?SUMMARY: ThreadSanitizer:[^\n]*", text, re.S)
ours = [r for r in reports if "qrdma" in r]
theirs = [r for r in reports if "qrdma" not in r]
with open(sys.argv[1] + ".ours", "w") as f:
    f.write("\n\n".join(ours))
with open(sys.argv[1] + ".theirs", "w") as f:
    f.writelines(r.splitlines()[-1] + "\n" for r in theirs)
print(len(ours), len(theirs))
PY
)
if [ "$theirs" -gt 0 ]; then
    log "tsan: $theirs report(s) of QEMU's own code, without the device's in them:"
    sort "$out.theirs" | uniq -c | sort -rn | sed 's/^/  /'
fi
if [ "$ours" -gt 0 ]; then
    rc=1
    log "tsan: $ours report(s) with the device's code in them; the first:"
    sed -n '1,/SUMMARY: ThreadSanitizer/p' "$out.ours" | head -n 80
fi
rm -f "$out.ours" "$out.theirs"
grep -E '^qtest: ' "$out" || true
[ "$rc" -eq 0 ] && log "tsan: the IOThread qtests passed with no report of the device's code"
exit "$rc"
