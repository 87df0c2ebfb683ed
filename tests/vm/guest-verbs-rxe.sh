#!/bin/bash
# Run by test-verbs-rxe.sh in a guest whose NIC is virtio-net with soft-RoCE
# (rxe0): qrdma-verbs-rxe on rxe0's IPv4 GID; then qrdma-verbs-stock as the
# client of the stock ibv_rc_pingpong, ibv_ud_pingpong and ibv_srq_pingpong
# servers on the same GID (-c, every byte checked on our side), and as the
# server of the same tools as clients; then qrdma-verbs-cm, the CM proxy on
# rxe0's rdma_cm; then qrdma-verbs-bench briefly; then no QP left on the
# device (the cores' teardown released them).
. "$(dirname "$0")/guest-lib.sh"

check "rxe0 is there" wait_for 30 test -e /sys/class/infiniband/rxe0
# The GID of this guest's IPv4 address (::ffff:a.b.c.d), as RoCEv2 uses it.
gid_index=$(ipv4_gid_index rxe0)
check "rxe0 has an IPv4 GID (index '$gid_index')" test -n "$gid_index"
qps_before=$(rdma res show qp 2>/dev/null | grep -c 'link rxe0')
if timeout 120 ./qrdma-verbs-rxe rxe0 "$gid_index" > /tmp/verbs-rxe.log 2>&1; then
    ok "qrdma-verbs-rxe"
else
    fail "qrdma-verbs-rxe (exit $?)"
fi
cat /tmp/verbs-rxe.log

# stock ROLE NAME TOOL OPTS...: the stock rdma-core TOOL on rxe0 (RoCEv2
# GID $gid_index) as ROLE (server or client), and qrdma-verbs-stock NAME
# with the same OPTS on the other side. Our client retries its connect; the
# stock client does not, so it starts once ours listens. Passes only when
# both exit 0 and the stock TOOL printed its closing "iters in" line,
# nothing on stderr and no "invalid data" (the stock server's -c check only
# prints). Each exit status is taken from its own PID.
stock() {
    local role=$1 name=$2 tool=$3 label=$2 s rq rt
    shift 3
    local theirs=(timeout 60 "$tool" -d rxe0 -g "$gid_index" "$@")
    local ours=(timeout 60 ./qrdma-verbs-stock "$@" rxe0 "$gid_index" "$name")
    if [ "$role" = server ]; then
        "${theirs[@]}" > "/tmp/$name-t.out" 2> "/tmp/$name-t.err" &
        s=$!
        "${ours[@]}" 127.0.0.1 > "/tmp/$name-q.log" 2>&1
        rq=$?
        wait "$s"
        rt=$?
    else
        label="$name as the server"
        "${ours[@]}" > "/tmp/$name-q.log" 2>&1 &
        s=$!
        wait_serving "$s" 30
        "${theirs[@]}" 127.0.0.1 > "/tmp/$name-t.out" 2> "/tmp/$name-t.err"
        rt=$?
        wait "$s"
        rq=$?
    fi
    sed 's/^/  qrdma-verbs-stock | /' "/tmp/$name-q.log"
    sed "s/^/  $tool | /" "/tmp/$name-t.out"
    sed "s/^/  $tool stderr | /" "/tmp/$name-t.err"
    expect_eq "$label: qrdma-verbs-stock's exit status" "$rq" 0
    expect_eq "$label: $tool's exit status" "$rt" 0
    check "$label: $tool ran to its end" grep -q "iters in" "/tmp/$name-t.out"
    check "$label: $tool found no invalid data" sh -c "! grep -qi 'invalid' /tmp/$name-t.out"
    check "$label: $tool wrote nothing on stderr" test ! -s "/tmp/$name-t.err"
}
stock server rc ibv_rc_pingpong -s 4096 -n 200 -c
stock server ud ibv_ud_pingpong -s 1024 -n 200 -c
stock server srq ibv_srq_pingpong -s 4096 -q 4 -n 200 -c
# the other way round: qrdma-verbs-stock as the server checks every byte
# of every message from the stock client
stock client rc ibv_rc_pingpong -s 4096 -n 200 -c
stock client ud ibv_ud_pingpong -s 1024 -n 200 -c
stock client srq ibv_srq_pingpong -s 4096 -q 4 -n 200 -c
# The CM proxy on rxe0's rdma_cm (the kernel's rdma_ucm is its user-space door).
check "rdma_ucm loaded" modprobe rdma_ucm
if timeout 120 ./qrdma-verbs-cm rxe0 "$gid_index" > /tmp/verbs-cm.log 2>&1; then
    ok "qrdma-verbs-cm"
else
    fail "qrdma-verbs-cm (exit $?)"
fi
sed 's/^/  qrdma-verbs-cm | /' /tmp/verbs-cm.log
# make bench-verbs' tool, briefly: 200 WRITEs of 64 KB, every completion
# successful and the bytes in the other core's RAM, or it exits 1.
if timeout 120 ./qrdma-verbs-bench rxe0 "$gid_index" 65536 200 > /tmp/verbs-bench.log 2>&1; then
    ok "qrdma-verbs-bench: $(cat /tmp/verbs-bench.log)"
else
    fail "qrdma-verbs-bench (exit $?)"
    cat /tmp/verbs-bench.log
fi
expect_eq "QPs on rxe0 after the run" "$(rdma res show qp 2>/dev/null | grep -c 'link rxe0')" \
    "$qps_before"
finish guest-verbs-rxe
