#!/bin/bash
# Object lifecycle in one guest, run by tests/vm/test-objects.sh:
# qrdma-objects (objects at scale, QP state machine, CQ resize, MR
# re-registration, running out of CQs, bad input), then every object
# counter back at zero, in the driver (res_*) and in the device (hw_*);
# then a process killed with objects open must leave nothing behind and
# must not keep the driver from unloading and loading again.
#
# "guest-objects.sh limits" runs only the resource limits, on a device
# with smaller maxima than the defaults (test-objects.sh says which):
# the advertised maxima follow the properties, then qrdma-objects
# --limits (a CQ overflow; QPs, SRQs, AHs, MRs and PBLEs exhausted,
# freed and created again) and the counters back at idle.
#
# The idle counts (guest-lib.sh) are recorded before the test, must be
# that small, and every count must come back to exactly them.
. "$(dirname "$0")/guest-lib.sh"
dev=/sys/class/infiniband/qrdma0
check "qrdma0 registered" wait_for 10 test -d "$dev"
for c in $zero_counters hmc_backed_pages hw_destroy_errors; do
    check "driver exposes $c" test -r "$dev/$c"
done
echo "counters before: $(counters)"
idle_snapshot
check "idle: only the MAD layer's objects" idle_is_mad_only
check "idle counts stable" counters_at_zero

if [ "${1:-}" = limits ]; then
    # QP IDs 0 and 1 are not general QPs; MR index 0 is never used.
    ibv_devinfo -v -d qrdma0 > /tmp/devinfo
    for want in "max_qp:254" "max_srq:64" "max_mr:2047" "max_ah:1536" "max_cq:256"; do
        check "advertised ${want%%:*} ${want#*:}" \
            grep -Eq "^[[:space:]]*${want%%:*}:[[:space:]]+${want#*:}\$" /tmp/devinfo
    done
    check "driver exposes pble_count" test -r "$dev/pble_count"
    check "qrdma-objects --limits" qrdma-objects --limits
    echo "counters after the limits: $(counters)"
    check "every object counter back at its idle value after the limits" counters_at_zero
    check "no kernel warning or oops" sh -c '! dmesg | grep -E "WARNING:|BUG:|Oops|Call Trace:"'
    finish guest-objects-limits
    exit
fi

# 2 MB pages for the MR test's hugetlb pool; the rest of it asks for
# transparent huge pages.
echo 32 > /proc/sys/vm/nr_hugepages
echo "hugepages: $(grep -E 'HugePages_(Total|Free)' /proc/meminfo | tr -s ' ' | tr '\n' ' ')"
echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
check "32 hugetlb pages reserved" test "$(awk '/HugePages_Total/ { print $2 }' /proc/meminfo)" -ge 32

check "qrdma-objects" qrdma-objects
echo "counters after: $(counters)"
check "every object counter back at its idle value" counters_at_zero
echo 0 > /proc/sys/vm/nr_hugepages

check "ibv_devinfo -v still works" sh -c 'ibv_devinfo -v -d qrdma0 > /tmp/devinfo'
check "ibv_devinfo: port ACTIVE" grep -Eq 'state:[[:space:]]+PORT_ACTIVE' /tmp/devinfo

# A process killed with objects open.
qrdma-objects --hold > /tmp/hold.log 2>&1 &
holder=$!
check "a process holds objects" wait_for 300 grep -q '^# holding' /tmp/hold.log
cat /tmp/hold.log
echo "counters while held: $(counters)"
check "its objects are live (res_qps $(cat $dev/res_qps))" test "$(cat $dev/res_qps)" -gt 0
# The driver backs HMC pages on demand: its SRQ (the idle device has none)
# and its 32 QPs, 32 CQs and 64 MRs need pages idle does not hold.
check "HMC pages backed on demand: hmc_backed_pages $(cat $dev/hmc_backed_pages) while held, ${idle[hmc_backed_pages]} idle" \
    test "$(cat $dev/hmc_backed_pages)" -gt "${idle[hmc_backed_pages]}"
kill -9 "$holder"
wait "$holder" 2>/dev/null
check "killed: every object counter back at its idle value" wait_for 60 counters_at_zero
echo "counters after kill -9: $(counters)"

check "rmmod qrdma" rmmod qrdma
check "qrdma0 gone after rmmod" test ! -e "$dev"
check "modprobe qrdma" modprobe qrdma
check "qrdma0 back after modprobe" wait_for 10 test -d "$dev"
ibv_devices | tee /tmp/devices
check "ibv_devices lists qrdma0 again" grep -q 'qrdma0' /tmp/devices
check "netdev up again with its address and RoCE GID" netdev_up
idle_snapshot
check "idle after reload: only the MAD layer's objects" idle_is_mad_only
check "object verbs after reload" qrdma-objects --cqs 20 --qps 20 --mrs 100 --no-exhaust
check "every object counter at its idle value after reload" counters_at_zero

check "no kernel warning or oops" sh -c '! dmesg | grep -E "WARNING:|BUG:|Oops|Call Trace:"'
finish guest-objects
