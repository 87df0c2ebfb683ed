#!/bin/bash
# Object lifecycle in one guest, run by tests/vm/test-objects.sh:
# qrdma-objects (objects at scale, QP state machine, CQ resize, MR
# re-registration, running out of CQs, bad input), then every object
# counter back at zero, in the driver (res_*) and in the device (hw_*);
# then a process killed with objects open must leave nothing behind and
# must not keep the driver from unloading and loading again.
. "$(dirname "$0")/guest-lib.sh"
dev=/sys/class/infiniband/qrdma0
# Object counts that must be 0 with no user of the device: the driver's
# res_* (ib_core's MAD layer gets no QP1 from qrdma, so it holds nothing)
# and the device's own hw_* registers.
zero_counters="res_ucontexts res_pds res_qps res_cqs res_srqs res_mrs res_ahs res_pbles hw_qps hw_cqs hw_srqs hw_mrs hw_ahs"

counters() {
    local c
    for c in $zero_counters hmc_backed_pages hw_destroy_errors; do
        printf '%s=%s ' "$c" "$(cat "$dev/$c" 2>/dev/null || echo missing)"
    done
    echo
}
counters_at_zero() {
    local c
    for c in $zero_counters hw_destroy_errors; do
        [ "$(cat "$dev/$c" 2>/dev/null)" = 0 ] || return 1
    done
    [ "$(cat "$dev/hmc_backed_pages")" = "$backed_pages_idle" ]
}
# After a driver reload: the netdev back up with its address, so the port
# has its GIDs again.
netdev_up() {
    local n
    n=$(ls "$dev/device/net" | head -n1)
    ip link set "$n" up && ip addr replace "$QRDMA_IP/24" dev "$n"
}

check "qrdma0 registered" wait_for 10 test -d "$dev"
for c in $zero_counters hmc_backed_pages hw_destroy_errors; do
    check "driver exposes $c" test -r "$dev/$c"
done
echo "counters before: $(counters)"
backed_pages_idle=$(cat "$dev/hmc_backed_pages")
check "no objects before the test" counters_at_zero

# 2 MB pages for the MR test's hugetlb pool; the rest of it asks for
# transparent huge pages.
echo 32 > /proc/sys/vm/nr_hugepages
echo "hugepages: $(grep -E 'HugePages_(Total|Free)' /proc/meminfo | tr -s ' ' | tr '\n' ' ')"
echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
check "32 hugetlb pages reserved" test "$(awk '/HugePages_Total/ { print $2 }' /proc/meminfo)" -ge 32

check "qrdma-objects" qrdma-objects
echo "counters after: $(counters)"
check "every object counter back at zero" counters_at_zero
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
kill -9 "$holder"
wait "$holder" 2>/dev/null
check "killed: every object counter back at zero" wait_for 60 counters_at_zero
echo "counters after kill -9: $(counters)"

check "rmmod qrdma" rmmod qrdma
check "qrdma0 gone after rmmod" test ! -e "$dev"
check "modprobe qrdma" modprobe qrdma
check "qrdma0 back after modprobe" wait_for 10 test -d "$dev"
ibv_devices | tee /tmp/devices
check "ibv_devices lists qrdma0 again" grep -q 'qrdma0' /tmp/devices
netdev_up
backed_pages_idle=$(cat "$dev/hmc_backed_pages")
check "object verbs after reload" qrdma-objects --cqs 20 --qps 20 --mrs 100 --no-exhaust
check "every object counter at zero after reload" counters_at_zero

check "no kernel warning or oops" sh -c '! dmesg | grep -E "WARNING:|BUG:|Oops|Call Trace:"'
finish guest-objects
