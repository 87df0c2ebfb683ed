#!/bin/bash
# VM test: a hostile guest's MMIO is logged by QEMU (-d guest_errors) and
# ignored; the guest-side checks are in guest-bad-input.sh. The device's
# trace events are on too (-trace 'qrdma_*', QEMU's log backend): register
# reads and writes, doorbells, guest errors and the reset must each leave
# their line. QEMU's log goes to a file of its own (-D), not the console.
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
qlog=$(mktemp)
trap 'rm -f "$out" "$qlog"' EXIT
"$here/../../scripts/vm-run" --guests 1 --timeout 240 --share "$here" \
    --qemu-arg -d --qemu-arg guest_errors --qemu-arg -D --qemu-arg "$qlog" \
    --qemu-arg -trace --qemu-arg 'qrdma_*' \
    --run 'bash guest-bad-input.sh' 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || exit "$rc"
# QEMU itself must have logged the refusals, with the register named.
for want in "qrdma: write of 0x0 to read-only register SIGNATURE" \
            "qrdma: BAR0 read of 1 bytes at 0x0: registers take 32-bit accesses" \
            "sets reserved bits 0xfffffffe" \
            "qrdma: write of 0x1 to read-only register HMC_SD_COUNT" \
            "doorbell 0x1234 at page 1 offset 0x0: no QP of this page has that ID" \
            "qrdma: BAR0 read at 0x3ffc: no register there" \
            "doorbells are write-only"; do
    if ! grep -qF "$want" "$qlog"; then
        echo "test-bad-input: QEMU did not log '$want'" >&2
        exit 1
    fi
done
echo "test-bad-input: QEMU logged every refusal"
# The trace events, each with the access the guest made: the driver's
# signature read at probe, qrdma-mmio-abuse's write to SIGNATURE and its
# doorbell naming no QP, the same refusal as a trace event, the reset QEMU
# gives every device at start.
echo "test-bad-input: trace lines per event:"
grep -oE 'qrdma_[a-z_]+ ' "$qlog" | sort | uniq -c | sed 's/^/  /'
for want in "qrdma_reg_read offset 0x0 size 4 value 0x" \
            "qrdma_reg_write offset 0x0 size 4 value 0x0" \
            "qrdma_db_write page 1 offset 0x0 size 4 value 0x1234" \
            "qrdma_guest_error write of 0x0 to read-only register SIGNATURE" \
            "qrdma_reset device"; do
    if ! grep -qF "$want" "$qlog"; then
        echo "test-bad-input: no trace line '$want'" >&2
        exit 1
    fi
done
echo "test-bad-input: every trace event seen"
