#!/bin/bash
# make check: every stage a submission must pass, with its timing.
#   setup (apt) -> unit tests (plain, ASan+UBSan) -> fuzz smoke (libFuzzer,
#   ASan+UBSan) -> driver against Linux 6.1
#   -> QEMU -> qtests of the QEMU glue -> guest -> upstream checkers (make
#   lint; after the guest, whose kernel headers it also builds against)
#   -> Debian packages (lintian)
#   -> VM tests (test-packages.sh installs those packages in guests)
# The guest is built alongside the stages from the unit tests to the
# qtests: on a fresh machine its root (mmdebstrap) waits mostly on the
# network and dpkg while those keep both CPUs busy. Its output and its own
# stage timings are shown where it joins, with the time waited there.
# Ends with one "check: N passed, N failed" line summing the test counts.
. "$(dirname "$0")/lib.sh"
cd "$QRDMA_TOP"
out=$(mktemp)
guest_log=$(mktemp)
guest_pid=""
trap 'rm -f "$out" "$guest_log"' EXIT
t0=$(date +%s)

run_stage() {
    local name=$1
    shift
    stage "$name" "$@" 2>&1 | tee -a "$out"
    return "${PIPESTATUS[0]}"
}

rc=0
run_stage setup bash scripts/setup-host.sh || rc=$?
if [ "$rc" -eq 0 ]; then
    log "stage guest: building alongside the next stages"
    bash scripts/build-guest.sh > "$guest_log" 2>&1 &
    guest_pid=$!
fi
[ "$rc" -eq 0 ] && { run_stage unit make --no-print-directory -j"$(nproc)" -O unit || rc=$?; }
[ "$rc" -eq 0 ] && { run_stage fuzz-smoke make --no-print-directory -j"$(nproc)" -O fuzz-smoke || rc=$?; }
[ "$rc" -eq 0 ] && { run_stage module-6.1 bash scripts/build-module-6.1.sh || rc=$?; }
[ "$rc" -eq 0 ] && { run_stage qemu bash scripts/build-qemu.sh || rc=$?; }
[ "$rc" -eq 0 ] && { run_stage qtest bash scripts/run-qtests.sh || rc=$?; }
if [ "$rc" -eq 0 ]; then
    # Waited for here, in this shell, whose child the build is; the time
    # is what the build added after the stages it ran alongside.
    guest_t0=$(date +%s)
    wait "$guest_pid" && grc=0 || grc=$?
    guest_pid=""
    { cat "$guest_log"; log "stage guest: $(($(date +%s) - guest_t0))s (rc=$grc)"; } 2>&1 | tee -a "$out"
    [ "$grc" -eq 0 ] || rc=$grc
fi
[ "$rc" -eq 0 ] && { run_stage lint env QRDMA_LINT_NEED_GUEST=1 bash scripts/lint.sh || rc=$?; }
[ "$rc" -eq 0 ] && { run_stage deb bash scripts/build-deb.sh || rc=$?; }
[ "$rc" -eq 0 ] && { run_stage vm-tests bash tests/vm/run-all.sh || rc=$?; }
# A stage before the join failed: the guest's build still ends on its own.
[ -z "$guest_pid" ] || wait "$guest_pid"

grep -E 'stage [a-z0-9.-]+: [0-9]+s' "$out" | sed 's/^\[[0-9:]*\] //' | sed 's/^/  /'
# and each VM test's (tests/vm/run-all.sh), slowest first
grep -E '^=== test-[a-z0-9-]+: (PASS|FAIL) in [0-9]+s$' "$out" |
    sed 's/^=== //' | sort -t' ' -k4 -rn | sed 's/^/    /'
# Every suite's closing line: core-*, test_sw_* (tests/unit/unit.h), vm-tests.
read -r passed failed < <(grep -E '^[A-Za-z0-9_-]+: [0-9]+ passed, [0-9]+ failed$' "$out" |
    awk '{ p += $2; f += $4 } END { print p + 0, f + 0 }')
[ "$rc" -eq 0 ] || failed=$((failed + 1))
# CI shows only the tail of this output: end with what failed and why, the
# failing checks of each failed VM test and suite (at most 8 lines each).
if [ "$rc" -ne 0 ]; then
    echo "what failed:"
    grep -E '^\[[0-9:]+\] stage [a-z0-9.-]+: [0-9]+s \(rc=[1-9][0-9]*\)' "$out" |
        sed 's/^\[[0-9:]*\] /  /'
    awk '/^=== test-[a-z0-9-]+$/ { name = $2; n = 0; delete why; next }
         /^FAIL|^\[g[0-9]+\] FAIL|^vm-run: .*(TIMEOUT|did not|exited with [1-9]|panic|refused|FAILURE)/ {
             if (n < 8) why[n++] = $0 }
         /^=== test-[a-z0-9-]+: FAIL in / {
             print "  " $2; for (i = 0; i < n; i++) print "    " substr(why[i], 1, 160) }' "$out"
    grep -E '^ *not ok ' "$out" | head -n 8 | sed 's/^ */  /'
    grep -E '^[A-Za-z0-9_-]+: [0-9]+ passed, [1-9][0-9]* failed$' "$out" | sed 's/^/  /'
fi
echo "make check took $(($(date +%s) - t0))s"
echo "check: $passed passed, $failed failed"
exit "$rc"
