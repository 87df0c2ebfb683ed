#!/bin/bash
# VM test: a hostile guest's MMIO is logged by QEMU (-d guest_errors) and
# ignored; the guest-side checks are in guest-bad-input.sh.
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$here/../../scripts/vm-run" --guests 1 --timeout 240 --share "$here" \
    --qemu-arg -d --qemu-arg guest_errors \
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
    if ! grep -qF "$want" "$out"; then
        echo "test-bad-input: QEMU did not log '$want'" >&2
        exit 1
    fi
done
echo "test-bad-input: QEMU logged every refusal"
