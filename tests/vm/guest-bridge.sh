# Guest side of test-bridge.sh: three guests on a Linux bridge, each NIC a
# tap, guest 2 started by libvirt. Every guest:
#   1. has qrdma0's port ACTIVE with its RoCEv2 GID (index 1) on its
#      address, and the object limit test-bridge.sh set; guest 2 finds its qrdma behind a PCIe root port, where
#      libvirt puts it (vm-run's own guests have it on the root bus);
#   2. reaches the bridge's own address (the host's station, 10.0.0.254)
#      and both other guests;
#   3. in a ring (each guest the server of the one before it and the client
#      of the one after it, all three pairs at once): rping with every
#      ping's data verified (-V, rdma_cm over the bridge's ARP),
#      ib_write_bw, and qrdma-bulk (64 MB written and read back, every byte
#      checked);
# and no kernel or qrdma error.
. ./guest-lib.sh
dev=qrdma0
peer=$(peer_ip)
prev=10.0.0.$(( (QRDMA_GUEST + QRDMA_GUESTS - 1) % QRDMA_GUESTS + 1 ))
n=0

state=$(ibv_devinfo -d $dev | awk '/state:/ { print $2; exit }')
expect_eq "port 1 state" "$state" PORT_ACTIVE
expect_eq "RoCEv2 GID 1" "$(cat /sys/class/infiniband/$dev/ports/1/gids/1)" \
    "0000:0000:0000:0000:0000:ffff:$(printf '%02x%02x:%02x%02x' ${QRDMA_IP//./ })"
# test-bridge.sh sets max-qp=256 on every guest's device (for guest 2
# through libvirt's <qemu:override>); QP IDs 0 and 1 are not general QPs.
check "advertised max_qp 254 (the device's max-qp=256)" \
    sh -c "ibv_devinfo -v -d $dev | grep -Eq '^[[:space:]]*max_qp:[[:space:]]+254\$'"
bdf=$(qrdma_bdf)
echo "qrdma at $bdf"
# on a bus other than 00 (an empty or odd answer fails)
behind_root_port() { [[ $bdf =~ ^0000:(0[1-9a-f]|[1-9a-f][0-9a-f]):[0-9a-f]{2}\.[0-7]$ ]]; }
if [ "$QRDMA_GUEST" = 2 ]; then
    check "qrdma behind a PCIe root port (libvirt's placement), not on bus 00" behind_root_port
fi

vm_barrier up 150
check "the bridge (10.0.0.254) answers ping" ping -c 3 -W 5 -q 10.0.0.254
for i in $(seq 0 $((QRDMA_GUESTS - 1))); do
    [ "$i" = "$QRDMA_GUEST" ] && continue
    check "guest $i (10.0.0.$((i + 1))) answers ping" ping -c 3 -W 5 -q "10.0.0.$((i + 1))"
done

# ring NAME SERVER CLIENT: SERVER (a command line) here in the background,
# and once every guest's server listens, CLIENT (with $peer, the next
# guest's address) here; both must exit 0 within 300 s.
ring() {
    local name=$1 s rc rs
    n=$((n + 1))
    timeout 300 bash -c "$2" > "/tmp/ring-$n-s.log" 2>&1 &
    s=$!
    wait_serving "$s"
    vm_barrier "ring-$n" 150
    timeout 300 bash -c "$3" > "/tmp/ring-$n-c.log" 2>&1
    rc=$?
    wait "$s"
    rs=$?
    check "$name: client of $peer exited $rc, server for $prev exited $rs" \
        test "$rc" = 0 -a "$rs" = 0
    if [ "$rc" != 0 ] || [ "$rs" != 0 ]; then
        tail -n 15 "/tmp/ring-$n-s.log" "/tmp/ring-$n-c.log" | sed 's/^/  | /'
    else
        grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+|every byte|^client:' "/tmp/ring-$n-c.log" | tail -n 2 |
            sed 's/^/  | /'
    fi
}

ring "rping -V, 20 pings of 4 KB" \
    "rping -s -V -C 20 -S 4096" "rping -c -V -C 20 -S 4096 -a $peer"
ring "ib_write_bw 64 KB" \
    "ib_write_bw -d $dev -x 1 -F -s 65536 -n 100" "ib_write_bw -d $dev -x 1 -F -s 65536 -n 100 $peer"
ring "qrdma-bulk 64 MB WRITE+READ, every byte checked" \
    "qrdma-bulk -d $dev -g 1 -m 64" "qrdma-bulk -d $dev -g 1 -m 64 $peer"

no_rdma_errors rping rping
finish "guest $QRDMA_GUEST bridge"
