#!/bin/bash
# Walking-skeleton smoke test, run in every guest by tests/vm/test-smoke.sh:
# the device appears to rdma-core tools, sysfs and iproute2's rdma with the
# attributes the device reports, and survives a driver reload.
. "$(dirname "$0")/guest-lib.sh"
dev=/sys/class/infiniband/qrdma0
guid=$(printf '5054:00ff:fe71:%04x' "$QRDMA_GUEST")

check "qrdma0 registered" wait_for 10 test -d "$dev"
ibv_devices | tee /tmp/devices
check "ibv_devices lists qrdma0 with its GUID" grep -Eq "qrdma0[[:space:]]+${guid//:/}" /tmp/devices
ibv_devinfo -v -d qrdma0 | tee /tmp/devinfo
check "ibv_devinfo: fw_ver 0.1.0" grep -Eq 'fw_ver:[[:space:]]+0\.1\.0$' /tmp/devinfo
check "ibv_devinfo: node_guid" grep -Eq "node_guid:[[:space:]]+$guid" /tmp/devinfo
check "ibv_devinfo: vendor_id 0x1b36" grep -Eq 'vendor_id:[[:space:]]+0x1b36' /tmp/devinfo
check "ibv_devinfo: port ACTIVE" grep -Eq 'state:[[:space:]]+PORT_ACTIVE \(4\)' /tmp/devinfo
check "ibv_devinfo: link_layer Ethernet" grep -Eq 'link_layer:[[:space:]]+Ethernet' /tmp/devinfo
check "ibv_devinfo: max_mtu 4096" grep -Eq 'max_mtu:[[:space:]]+4096 \(5\)' /tmp/devinfo

expect_eq "board_id" "$(cat $dev/board_id)" "QEMU-QRDMA"
expect_eq "fw_ver" "$(cat $dev/fw_ver)" "0.1.0"
expect_eq "hca_type" "$(cat $dev/hca_type)" "QRDMA-00e8"
expect_eq "hw_rev" "$(cat $dev/hw_rev)" "0x1"
expect_eq "node_guid" "$(cat $dev/node_guid)" "$guid"
expect_eq "node_type" "$(cat $dev/node_type)" "1: CA"
expect_eq "port state" "$(cat $dev/ports/1/state)" "4: ACTIVE"
expect_eq "port phys_state" "$(cat $dev/ports/1/phys_state)" "5: LinkUp"
expect_eq "port rate" "$(cat $dev/ports/1/rate)" "100 Gb/sec (4X EDR)"
expect_eq "port lid" "$(cat $dev/ports/1/lid)" "0x0"
expect_eq "port pkeys/0" "$(cat $dev/ports/1/pkeys/0)" "0xffff"
check "port gids/0 readable" test -r "$dev/ports/1/gids/0"
expect_eq "device modalias" "$(cat $dev/device/modalias | cut -c1-22)" "pci:v00001B36d000000E8"

rdma link | tee /tmp/rdmalink
check "rdma link lists qrdma0/1 ACTIVE" grep -q 'link qrdma0/1 state ACTIVE' /tmp/rdmalink

# max_qp: the 1024 QPs of the device less QP 0 and QP 1 (GSI), which no verb can create.
check "provider verbs" qrdma-verbs-smoke --expect-fw 0.1.0 --expect-max-qp 1022 --pds 200
check "HMC layout committed at probe" sh -c "dmesg | grep -Eq 'qrdma .*HMC: 1024 QPs, 2048 CQs, 256 SRQs, 16384 MRs, 4096 AHs, [0-9]+ PBLEs in [0-9]+ SDs'"

# The provider's own refusals and loopback traffic on this device, every
# check's line shown when one fails (qrdma-datapath prints TAP).
if ! check "qrdma-datapath: provider checks and loopback traffic" \
        sh -c 'qrdma-datapath > /tmp/datapath.log 2>&1'; then
    grep -E '^(not ok|#)' /tmp/datapath.log | sed 's/^/  | /'
fi

# A second function without a netdev (test-smoke.sh adds it): a NIC whose
# link is down, and an RDMA port that is DOWN.
dev1=/sys/class/infiniband/qrdma1
check "qrdma1 (no netdev) registered" wait_for 10 test -d "$dev1"
eth1=$(ls "$dev1/device/net" 2>/dev/null | head -n1)
check "qrdma1 has a netdev ($eth1)" test -n "$eth1"
ip link set "$eth1" up
sleep 1
expect_eq "$eth1 has no carrier" "$(cat /sys/class/net/$eth1/carrier)" 0
expect_eq "qrdma1 port state" "$(cat $dev1/ports/1/state)" "1: DOWN"
expect_eq "qrdma1 port phys_state" "$(cat $dev1/ports/1/phys_state)" "3: Disabled"
check "qrdma1 verbs work with the link down" qrdma-verbs-smoke --dev qrdma1 --pds 4

# A process that dies with a context and PDs open must not keep rmmod from working.
python3 -c '
import pyverbs.device as d, pyverbs.pd as p, os, signal
ctx = d.Context(name="qrdma0"); pds = [p.PD(ctx) for _ in range(8)]
print("pyverbs: context and 8 PDs open"); os.kill(os.getpid(), signal.SIGKILL)'
check "rmmod qrdma" rmmod qrdma
check "qrdma0 gone after rmmod" test ! -e "$dev"
check "modprobe qrdma" modprobe qrdma
check "qrdma0 back after modprobe" wait_for 10 test -d "$dev"
check "provider verbs after reload" qrdma-verbs-smoke --expect-fw 0.1.0 --pds 8
finish guest-smoke
