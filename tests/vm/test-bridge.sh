#!/bin/bash
# VM test: guests the way they usually meet a host's Ethernet, and one of
# them started by libvirt. Three guests on a Linux bridge with a tap each
# (vm-run --segment bridge, in a network namespace of this run's own),
# guest 2's QEMU started by libvirt from a domain XML that names our QEMU
# as its <emulator> and qrdma as its NIC's model (vm-run --libvirt 2), a
# device property (max-qp) given to it as a <qemu:override>, and every
# guest's emulator threads at SCHED_FIFO (vm-run --emulator-sched: for
# guest 2 libvirt's <emulatorsched>; vm-run tells emulator threads from
# vCPUs by the thread names QEMU gives with debug-threads=on).
# guest-bridge.sh: ping the bridge and each other, then rping -V,
# ib_write_bw and qrdma-bulk in a ring, all three pairs at once.
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$here/../../scripts/vm-run" --guests 3 --timeout 900 --share "$here" \
    --segment bridge --libvirt 2 --device-opts max-qp=256 --emulator-sched fifo:1 \
    --run 'bash guest-bridge.sh' --run 'bash guest-bridge.sh' --run 'bash guest-bridge.sh' 2>&1 |
    tee "$out"
rc=${PIPESTATUS[0]}
# vm-run says so when libvirt started a guest's QEMU: that it did is the
# point of this test, not only that the guest worked.
if ! grep -q '^vm-run: guest 2: started by libvirt' "$out"; then
    echo "test-bridge: guest 2 was not started by libvirt"
    rc=1
fi
# Each QEMU, read back once its guest has booted: its main loop at FIFO 1,
# its two vCPUs at SCHED_OTHER. vm-run sets every emulator thread (none
# left out); libvirt sets the main thread, and threads QEMU had started
# before keep the default.
for i in 0 1 2; do
    re="^vm-run: guest $i: QEMU [0-9]+ \\(set by vm-run\\): main loop SCHED_FIFO 1; emulator threads: [1-9][0-9]* at SCHED_FIFO 1, 0 not; vCPU threads: 2 at SCHED_OTHER, 0 not$"
    [ "$i" != 2 ] ||
        re="^vm-run: guest $i: QEMU [0-9]+ \\(set by libvirt\\): main loop SCHED_FIFO 1; emulator threads: [1-9][0-9]* at SCHED_FIFO 1, .*; vCPU threads: 2 at SCHED_OTHER, 0 not$"
    if ! grep -Eq "$re" "$out"; then
        echo "test-bridge: guest $i's QEMU threads are not as --emulator-sched fifo:1 sets them"
        rc=1
    fi
done
exit "$rc"
