#!/bin/bash
# Hostile guest: with the driver unbound, abuse BAR0 and the doorbell BAR
# directly (qrdma-mmio-abuse); the device must count and ignore every bad
# access, keep its state, and still work for the driver afterwards.
. "$(dirname "$0")/guest-lib.sh"
bdf=$(qrdma_bdf)
check "qrdma bound to a PCI function ($bdf)" test -n "$bdf"

# With the driver bound: the control path completes CQP commands through
# CEQ 0 interrupts, and a doorbell naming no queue comes back as an AEQE.
ctrl_irqs() { awk -v n="qrdma-ctrl@$bdf" '$NF == n { s = 0; for (i = 2; i < NF; i++) if ($i ~ /^[0-9]+$/) s += $i; print s }' /proc/interrupts; }
check "control vector has interrupts ($(ctrl_irqs))" test "$(ctrl_irqs)" -gt 0
qrdma-db-poke | tee /tmp/poke
page=$(awk '/^doorbell page/ { print $3 }' /tmp/poke)
check "a user context rang its own doorbell page ($page) naming no queue" test -n "$page"
check "the device raised an AEQE and the driver reports it" wait_for 5 sh -c "dmesg | grep -q 'async event BAD_DOORBELL (0x1) from source 1 id $page '"
check "rmmod qrdma" rmmod qrdma
check "MMIO abuse ignored and counted" qrdma-mmio-abuse "$bdf"
check "modprobe qrdma" modprobe qrdma
check "qrdma0 back" wait_for 10 test -d /sys/class/infiniband/qrdma0
check "provider verbs after abuse" qrdma-verbs-smoke --expect-fw 0.1.0 --pds 4
finish guest-bad-input
