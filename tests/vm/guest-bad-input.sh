#!/bin/bash
# Hostile guest: with the driver unbound, abuse BAR0 and the doorbell BAR
# directly (qrdma-mmio-abuse); the device must count and ignore every bad
# access, keep its state, and still work for the driver afterwards.
. "$(dirname "$0")/guest-lib.sh"
bdf=$(qrdma_bdf)
check "qrdma bound to a PCI function ($bdf)" test -n "$bdf"
check "rmmod qrdma" rmmod qrdma
check "MMIO abuse ignored and counted" qrdma-mmio-abuse "$bdf"
check "modprobe qrdma" modprobe qrdma
check "qrdma0 back" wait_for 10 test -d /sys/class/infiniband/qrdma0
check "provider verbs after abuse" qrdma-verbs-smoke --expect-fw 0.1.0 --pds 4
finish guest-bad-input
