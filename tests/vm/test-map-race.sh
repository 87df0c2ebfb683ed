#!/bin/bash
# VM test: the guest's memory map changes under a vCPU reading MMIO, under
# TCG. One guest with two qrdma functions runs guest-map-race.sh: with the
# driver unbound, one vCPU reads one function's BAR0 while the other turns
# the other function's memory decoding off and on. QEMU 10.0.13 as Debian
# ships it aborts in iotlb_to_section() within a second of this;
# qemu-patches/0001 is the fix.
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../scripts/vm-run" --guests 1 --smp 2 --timeout 240 --share "$here" \
    --qemu-arg -device --qemu-arg qrdma,mac=52:54:00:72:00:02 \
    --run 'bash guest-map-race.sh'
