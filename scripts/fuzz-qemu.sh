#!/bin/bash
# QEMU's own generic-fuzz on the qrdma glue: builds qemu-fuzz-x86_64
# (QRDMA_QEMU_VARIANT=fuzz: clang, libFuzzer, ASan+UBSan, the generic-fuzz
# configuration "qrdma" from tests/fuzz/qemu/) and runs
# --fuzz-target=generic-fuzz-qrdma for SECONDS (default 600).
#
#   scripts/fuzz-qemu.sh BUILD_DIR [SECONDS]
#
# The corpus grows in BUILD_DIR/fuzz/corpus-qemu; a finding is written
# there as qemu-crash-* (or -leak-, -timeout-). Ends with one line:
# "generic-fuzz-qrdma: N executions, N edges (cov), at most N s".
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
nice -n "${FUZZ_NICE:-10}" "$BIN" --fuzz-target=generic-fuzz-qrdma \
    -max_total_time="$SECONDS_MAX" -print_final_stats=1 -close_fd_mask=1 \
    -max_len=4096 -timeout=30 -rss_limit_mb=4096 -artifact_prefix=qemu- \
    corpus-qemu > "$log" 2>&1 || rc=$?
grep -E '^(stat::|#[0-9]+[[:space:]]+DONE|==[0-9]+== ?ERROR|SUMMARY)' "$log" || true
printf 'generic-fuzz-qrdma: %s executions, %s edges (cov), at most %s s\n' \
    "$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")" \
    "$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)" "$SECONDS_MAX"
if [ "$rc" -ne 0 ]; then
    tail -60 "$log"
    exit "$rc"
fi
