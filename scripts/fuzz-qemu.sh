#!/bin/bash
# QEMU's own generic-fuzz on the qrdma glue: builds qemu-fuzz-x86_64
# (QRDMA_QEMU_VARIANT=fuzz: clang, libFuzzer, ASan+UBSan, the generic-fuzz
# configuration "qrdma" from tests/fuzz/qemu/) and runs
# --fuzz-target=generic-fuzz-qrdma for SECONDS (default 600).
#
#   scripts/fuzz-qemu.sh BUILD_DIR [SECONDS]
#
# The corpus grows in BUILD_DIR/fuzz/corpus-qemu; a finding is written
# there as qemu-crash-* (or -leak-, -timeout-). Ends with two lines:
# "generic-fuzz-qrdma: N executions, N edges (cov), at most N s" and
# "generic-fuzz-qrdma leak check: N corpus inputs replayed, no leak".
. "$(dirname "$0")/lib.sh"

OUT=$(realpath -m "${1:?usage: fuzz-qemu.sh BUILD_DIR [SECONDS]}")/fuzz
SECONDS_MAX=${2:-600}
BIN=$(QRDMA_QEMU_VARIANT=fuzz bash "$QRDMA_TOP/scripts/build-qemu.sh")
mkdir -p "$OUT/corpus-qemu"
cd "$OUT"
# The machine's firmware comes from Debian's packages (the +ds source has
# none); QEMU looks for it in its data directory inside the build's
# qemu-bundle/ (the one that holds keymaps/).
fw=$(dirname "$(find "$(dirname "$BIN")/qemu-bundle" -type d -name keymaps | head -1)")
[ -d "$fw" ] || die "no data directory in $(dirname "$BIN")/qemu-bundle"
for f in /usr/share/seabios/bios-256k.bin /usr/share/seabios/bios.bin; do
    [ -e "$fw/$(basename "$f")" ] || ln -sf "$f" "$fw/"
done

log=run-fuzz_qemu.log
rc=0
# The device's guest-error lines would fill the log; libFuzzer's own lines
# stay (stderr is kept, stdout closed: -close_fd_mask=1).
#
# Leaks: libFuzzer looks for one after every input that made more
# allocations than frees, and in QEMU every input does (memory-map
# rebuilds free their old maps after an RCU grace period), so with its
# per-input check on, LeakSanitizer's scan of the whole process took 70%
# of the time (perf, docs/hardening.md). The fuzzing runs with
# -detect_leaks=0 (LeakSanitizer still checks at exit); then every input
# of the corpus, each a distinct coverage, runs once more with the
# per-input check on.
nice -n "${FUZZ_NICE:-10}" "$BIN" --fuzz-target=generic-fuzz-qrdma \
    -max_total_time="$SECONDS_MAX" -print_final_stats=1 -close_fd_mask=1 \
    -max_len=4096 -timeout=30 -rss_limit_mb=4096 -artifact_prefix=qemu- \
    -detect_leaks=0 corpus-qemu > "$log" 2>&1 || rc=$?
grep -E '^(stat::|#[0-9]+[[:space:]]+DONE|==[0-9]+== ?ERROR|SUMMARY)' "$log" || true
printf 'generic-fuzz-qrdma: %s executions, %s edges (cov), at most %s s\n' \
    "$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")" \
    "$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)" "$SECONDS_MAX"
if [ "$rc" -ne 0 ]; then
    tail -60 "$log"
    exit "$rc"
fi
leaks=run-fuzz_qemu-leaks.log
nice -n "${FUZZ_NICE:-10}" "$BIN" --fuzz-target=generic-fuzz-qrdma \
    -runs=0 -close_fd_mask=1 -max_len=4096 -timeout=30 -rss_limit_mb=4096 \
    -artifact_prefix=qemu- -detect_leaks=1 corpus-qemu > "$leaks" 2>&1 || rc=$?
printf 'generic-fuzz-qrdma leak check: %s corpus inputs replayed, %s\n' \
    "$(grep -oE 'INITED.* corp: [0-9]+' "$leaks" | grep -oE '[0-9]+$')" \
    "$([ "$rc" -eq 0 ] && echo "no leak" || echo "a finding (rc $rc)")"
if [ "$rc" -ne 0 ]; then
    tail -60 "$leaks"
    exit "$rc"
fi
