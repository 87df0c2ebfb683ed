#!/bin/bash
# The LAN function between two guests (run in both by test-ethernet.sh):
# ping both ways up to the MTU at 1500 and 9000, a 200 MB TCP transfer
# checked with sha256 at both ends, IPv6 neighbour discovery (multicast
# through the hash filter), RoCE v2 GIDs following the addresses,
# port state following the netdev, ethtool.
. "$(dirname "$0")/guest-lib.sh"
me=$QRDMA_GUEST peer=$(peer_ip) ifc=eth0

check "eth0 is driven by qrdma" test "$(basename "$(readlink -f /sys/class/net/$ifc/device/driver)")" = qrdma
expect_eq "eth0 has our address" "$(ip -4 -o addr show $ifc | awk '{print $4}')" "$QRDMA_IP/24"
vm_barrier up

ping_sizes() {   # ping_sizes MTU: small, and the largest unfragmented payload
    local mtu=$1
    check "ping $peer (56 bytes, MTU $mtu)" ping -c 20 -i 0.05 -W 2 -q "$peer"
    check "ping $peer ($((mtu - 28)) bytes, DF, MTU $mtu)" \
        ping -c 20 -i 0.05 -W 2 -q -M do -s $((mtu - 28)) "$peer"
    check "ping $peer ($((mtu - 27)) bytes with DF refused locally)" \
        sh -c "! ping -c 1 -W 1 -M do -s $((mtu - 27)) $peer >/dev/null 2>&1"
}

# TCP: guest 0 sends SIZE MB of random data to guest 1; both hash it.
tcp_transfer() {   # tcp_transfer TAG MB
    local tag=$1 mb=$2
    if [ "$me" = 1 ]; then
        nc -l -p 5001 > /tmp/rx.bin &
        local nc_pid=$!
        vm_signal "listening-$tag"
        wait $nc_pid
        check "nc received until the sender closed (status $?)" test $? = 0
        sha256sum < /tmp/rx.bin | cut -d' ' -f1 > "$QRDMA_JOB/rx-$tag.sha.tmp"
        mv "$QRDMA_JOB/rx-$tag.sha.tmp" "$QRDMA_JOB/rx-$tag.sha"
        echo "received $(stat -c %s /tmp/rx.bin) bytes"
        rm -f /tmp/rx.bin
        vm_wait "tx-$tag-hashed"
    else
        head -c "${mb}M" /dev/urandom > /tmp/tx.bin
        sha256sum < /tmp/tx.bin | cut -d' ' -f1 > "$QRDMA_JOB/tx-$tag.sha.tmp"
        mv "$QRDMA_JOB/tx-$tag.sha.tmp" "$QRDMA_JOB/tx-$tag.sha"
        vm_signal "tx-$tag-hashed"
        vm_wait "listening-$tag"
        local t0 t1
        t0=$(date +%s.%N)
        check "nc sent $mb MB" nc -N -w 30 "$peer" 5001 < /tmp/tx.bin
        t1=$(date +%s.%N)
        awk -v a="$t0" -v b="$t1" -v mb="$mb" 'BEGIN { printf "TCP %d MB in %.1f s (%.1f MB/s)\n", mb, b - a, mb / (b - a) }'
        rm -f /tmp/tx.bin
    fi
    wait_for 120 test -e "$QRDMA_JOB/rx-$tag.sha"
    expect_eq "TCP $mb MB ($tag) sha256 matches at both ends" \
        "$(cat "$QRDMA_JOB/rx-$tag.sha" 2>/dev/null)" "$(cat "$QRDMA_JOB/tx-$tag.sha")"
}

ping_sizes 1500
vm_barrier ping1500
tcp_transfer mtu1500 200
vm_barrier tcp1500

# RoCE v2 GIDs come from the netdev's addresses (ib_core fills the table).
gids() { ibv_devinfo -v -d qrdma0 | grep -E 'GID\['; }
check "RoCE v2 GID from IPv4" wait_for 10 sh -c "ibv_devinfo -v -d qrdma0 | grep -q '::ffff:$QRDMA_IP, RoCE v2'"
check "RoCE v2 GID from the IPv6 link-local" wait_for 10 sh -c "ibv_devinfo -v -d qrdma0 | grep -Eq 'fe80::5054:ff:fe71:[0-9a-f]+, RoCE v2'"
gids
ip addr add "10.9.$me.1/24" dev $ifc
v6="fd00::$((me + 1)):1"
ip -6 addr add "$v6/64" dev $ifc nodad
check "added IPv4 address appears as a GID" wait_for 10 sh -c "ibv_devinfo -v -d qrdma0 | grep -q '::ffff:10.9.$me.1, RoCE v2'"
check "added IPv6 address appears as a GID" wait_for 10 sh -c "ibv_devinfo -v -d qrdma0 | grep -q '$v6, RoCE v2'"
check "sysfs GID table holds it" sh -c "grep -q 'fd00:0000:0000:0000:0000:0000:000$((me + 1)):0001' /sys/class/infiniband/qrdma0/ports/1/gids/*"
# IPv6 neighbour discovery: the neighbour solicitation goes to the peer's
# solicited-node multicast group (33:33:ff:...), which the peer's device
# passes only through its multicast hash filter (the netdev is neither
# promiscuous nor all-multicast: checked); the advertisement comes back
# unicast. A ping to the peer's fresh address needs both.
vm_barrier v6-up
peer_v6="fd00::$(( (me + 1) % 2 + 1 )):1"
flags=$(cat /sys/class/net/$ifc/flags)
check "eth0 neither promiscuous nor all-multicast (flags $flags)" test $(( flags & 0x300 )) = 0
ip -6 neigh flush dev $ifc
check "ping $peer_v6 (IPv6 neighbour discovery first)" ping -6 -c 3 -i 0.2 -W 2 -q "$peer_v6"
ip -6 neigh show "$peer_v6" dev $ifc | sed 's/^/  neighbour: /'
check "neighbour discovery resolved $peer_v6 to the peer's MAC" \
    sh -c "ip -6 neigh show $peer_v6 dev $ifc | grep -q 'lladdr 52:54:00:71:00:0$(( (me + 1) % 2 ))'"
vm_barrier v6-pinged
ip addr del "10.9.$me.1/24" dev $ifc
ip -6 addr del "$v6/64" dev $ifc
check "removed IPv4 address leaves the GID table" wait_for 10 sh -c "! ibv_devinfo -v -d qrdma0 | grep -q '::ffff:10.9.$me.1'"
check "removed IPv6 address leaves the GID table" wait_for 10 sh -c "! ibv_devinfo -v -d qrdma0 | grep -q '$v6,'"
vm_barrier gids

# The driver programs GIDs into the device (CQP ADD_GID/DEL_GID): the device
# steers RoCEv2 (UDP 4791) frames for its GIDs to the RDMA engine
# (hw_roce_frames) and everything else to the LAN. Guest 1 sends, guest 0
# adds and removes 10.9.0.1.
send_roce() { for _ in 1 2 3; do echo roce | nc -u -w 1 -q 0 "$1" 4791; done; }
if [ "$me" = 1 ]; then
    ip route add 10.9.0.0/24 dev $ifc
    ip neigh replace 10.9.0.1 lladdr 52:54:00:71:00:00 dev $ifc nud permanent
    vm_signal steer-ready
    vm_wait steer-phase1; send_roce 10.0.0.1; send_roce 10.9.0.1; vm_signal steer-sent1
    vm_wait steer-phase2; send_roce 10.9.0.1; vm_signal steer-sent2
    vm_wait steer-phase3; send_roce 10.9.0.1; vm_signal steer-sent3
else
    vm_wait steer-ready
    r0=$(nic_stat hw_roce_frames "$ifc")
    vm_signal steer-phase1; vm_wait steer-sent1; sleep 1
    expect_eq "RoCE frames to our GID 10.0.0.1 steered, to unknown 10.9.0.1 not" \
        "$(nic_stat hw_roce_frames "$ifc")" "$((r0 + 3))"
    ip addr add 10.9.0.1/24 dev $ifc
    check "GID 10.9.0.1 added" wait_for 10 sh -c "ibv_devinfo -v -d qrdma0 | grep -q '::ffff:10.9.0.1, RoCE v2'"
    vm_signal steer-phase2; vm_wait steer-sent2; sleep 1
    expect_eq "after ADD_GID, RoCE frames to 10.9.0.1 are steered" "$(nic_stat hw_roce_frames "$ifc")" "$((r0 + 6))"
    ip addr del 10.9.0.1/24 dev $ifc
    check "GID 10.9.0.1 removed" wait_for 10 sh -c "! ibv_devinfo -v -d qrdma0 | grep -q '::ffff:10.9.0.1,'"
    vm_signal steer-phase3; vm_wait steer-sent3; sleep 1
    expect_eq "after DEL_GID, RoCE frames to 10.9.0.1 reach the LAN again" "$(nic_stat hw_roce_frames "$ifc")" "$((r0 + 6))"
    check "no CQP command failed" sh -c "! dmesg | grep -q 'CQP .* failed'"
fi
vm_barrier steered

# Jumbo frames.
check "MTU 9000" ip link set $ifc mtu 9000
expect_eq "eth0 MTU" "$(cat /sys/class/net/$ifc/mtu)" 9000
check "RoCE active_mtu 4096 at MTU 9000" wait_for 5 sh -c "ibv_devinfo -d qrdma0 | grep -q 'active_mtu:.*4096'"
vm_barrier mtu9000
ping_sizes 9000
vm_barrier ping9000
tcp_transfer mtu9000 50
vm_barrier tcp9000

# The RoCE port follows the netdev.
if [ "$me" = 0 ]; then
    ip link set $ifc down
    check "port DOWN after ip link set down" wait_for 5 sh -c "ibv_devinfo -d qrdma0 | grep -q 'state:.*PORT_DOWN'"
    expect_eq "sysfs port state when down" "$(cat /sys/class/infiniband/qrdma0/ports/1/state)" "1: DOWN"
    ip link set $ifc up
    check "port ACTIVE after ip link set up" wait_for 10 sh -c "ibv_devinfo -d qrdma0 | grep -q 'state:.*PORT_ACTIVE'"
    check "ping works again" wait_for 20 ping -c 1 -W 1 -q "$peer"
fi
ethtool -i $ifc | tee /tmp/ethtool-i
check "ethtool -i: driver qrdma" grep -q '^driver: qrdma' /tmp/ethtool-i
check "ethtool -i: firmware 0.1.0" grep -q '^firmware-version: 0.1.0' /tmp/ethtool-i
ethtool -S $ifc | tee /tmp/ethtool-s
check "ethtool -S: >200 MB worth of frames counted" sh -c "awk '/hw_(tx|rx)_frames/ { n += \$2 } END { exit !(n > 100000) }' /tmp/ethtool-s"
check "ethtool -S: no descriptor errors" sh -c "grep -Eq 'hw_(tx|rx)_errors: 0' /tmp/ethtool-s && ! grep -Eq 'hw_(tx|rx)_errors: [1-9]' /tmp/ethtool-s"
vm_barrier done 300
finish guest-ethernet
