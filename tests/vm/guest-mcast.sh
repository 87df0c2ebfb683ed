#!/bin/bash
# UD multicast between two guests, run in both by tests/vm/test-mcast.sh.
# Guest 1 receives, guest 0 sends; each step starts the sender only once
# the receiver has attached its QPs (through /job rendezvous files), and
# both exit codes are checked.
#  1. qrdma-mcast: on guest 1 three UD QPs join 239.1.1.2 by
#     ibv_attach_mcast, one leaves again by ibv_detach_mcast; attaching
#     beyond max_mcast_grp fails with ENOMEM; guest 0 sends 16 datagrams
#     to the group; both attached QPs must receive all 16 with every byte
#     right, the detached one nothing.
#  2. mckey (librdmacm: rdma_join_multicast, the kernel's ucma and
#     attach_mcast) on 239.1.1.1: the receiver must report its 10 messages
#     ("data transfers complete", exit 0) and the sender exit 0. mckey does
#     not check payloads; step 1 does.
. "$(dirname "$0")/guest-lib.sh"
me=$QRDMA_GUEST
check "qrdma0 registered" wait_for 10 test -d /sys/class/infiniband/qrdma0
check "port 1 active" wait_for 30 sh -c 'ibv_devinfo -d qrdma0 | grep -q PORT_ACTIVE'
check "max_mcast_grp advertised" sh -c 'ibv_devinfo -v -d qrdma0 | grep -Eq "max_mcast_grp:[[:space:]]+32"'
check "max_mcast_qp_attach advertised" sh -c 'ibv_devinfo -v -d qrdma0 | grep -Eq "max_mcast_qp_attach:[[:space:]]+16"'
vm_barrier up 150

case $me in
1)
    timeout 90 qrdma-mcast recv 239.1.1.2 16 "$QRDMA_JOB/sig-verbs-ready" > /tmp/mc-recv.log 2>&1
    rc=$?
    sed 's/^/  | /' /tmp/mc-recv.log
    expect_eq "qrdma-mcast recv exit status" "$rc" 0
    check "both attached QPs got all 16" grep -q "^received: 16, 16; detached QP: 0$" /tmp/mc-recv.log
    check "ENOMEM at the group limit" grep -q "the next refused with ENOMEM" /tmp/mc-recv.log
    vm_signal verbs-done

    # Line-buffered: the sender waits for the receiver's "receiving" line.
    timeout 90 stdbuf -oL mckey -m 239.1.1.1 -b "$QRDMA_IP" -C 10 > /tmp/mckey-r.log 2>&1 &
    pid=$!
    wait_for 60 grep -q "receiving data transfers" /tmp/mckey-r.log && vm_signal mckey-ready
    wait "$pid"
    rc=$?
    sed 's/^/  | /' /tmp/mckey-r.log
    expect_eq "mckey receiver exit status" "$rc" 0
    check "mckey receiver got its messages" grep -q "data transfers complete" /tmp/mckey-r.log
    vm_signal mckey-done
    ;;
0)
    if vm_wait verbs-ready 120; then
        timeout 60 qrdma-mcast send 239.1.1.2 16 > /tmp/mc-send.log 2>&1
        rc=$?
        sed 's/^/  | /' /tmp/mc-send.log
        expect_eq "qrdma-mcast send exit status" "$rc" 0
    fi
    vm_wait verbs-done 120
    if vm_wait mckey-ready 120; then
        timeout 60 mckey -m 239.1.1.1 -s -b "$QRDMA_IP" -C 10 > /tmp/mckey-s.log 2>&1
        rc=$?
        sed 's/^/  | /' /tmp/mckey-s.log
        expect_eq "mckey sender exit status" "$rc" 0
    fi
    vm_wait mckey-done 150
    ;;
esac
check "no kernel warning or oops" sh -c '! dmesg | grep -E "WARNING:|BUG:|Oops|Call Trace:"'
finish guest-mcast
