#!/bin/bash
# Run by test-verbs-rxe.sh in a guest whose NIC is virtio-net with soft-RoCE
# (rxe0): qrdma-verbs-rxe on rxe0's IPv4 GID; then qrdma-verbs-stock as the
# client of the stock ibv_rc_pingpong, ibv_ud_pingpong and ibv_srq_pingpong
# servers on the same GID (-c, every byte checked on our side), and as the
# server of the same tools as clients; then no QP left on the device (the
# cores' teardown released them).
. "$(dirname "$0")/guest-lib.sh"

check "rxe0 is there" wait_for 30 test -e /sys/class/infiniband/rxe0
# The GID of this guest's IPv4 address (::ffff:a.b.c.d), as RoCEv2 uses it.
gid_index=""
for g in /sys/class/infiniband/rxe0/ports/1/gids/*; do
    case "$(cat "$g" 2>/dev/null)" in
    0000:0000:0000:0000:0000:ffff:*) gid_index=${g##*/}; break ;;
    esac
done
check "rxe0 has an IPv4 GID (index '$gid_index')" test -n "$gid_index"
qps_before=$(rdma res show qp 2>/dev/null | grep -c 'link rxe0')
if timeout 120 ./qrdma-verbs-rxe rxe0 "$gid_index" > /tmp/verbs-rxe.log 2>&1; then
    ok "qrdma-verbs-rxe"
else
    fail "qrdma-verbs-rxe (exit $?)"
fi
cat /tmp/verbs-rxe.log

# stock NAME TOOL OPTS...: the stock rdma-core TOOL as a server on rxe0
# (RoCEv2 GID $gid_index) and qrdma-verbs-stock NAME with the same OPTS as
# its client. Passes only when both exit 0 and the server printed its
# closing "iters in" line, nothing on stderr and no "invalid data" (its -c
# check only prints). Each exit status is taken from its own PID.
stock() {
    local name=$1 tool=$2 s rs rc
    shift 2
    timeout 60 "$tool" -d rxe0 -g "$gid_index" "$@" > "/tmp/$name-s.out" 2> "/tmp/$name-s.err" &
    s=$!
    timeout 60 ./qrdma-verbs-stock "$@" rxe0 "$gid_index" "$name" 127.0.0.1 \
        > "/tmp/$name-c.log" 2>&1
    rc=$?
    wait "$s"
    rs=$?
    sed 's/^/  client | /' "/tmp/$name-c.log"
    sed 's/^/  server | /' "/tmp/$name-s.out"
    sed 's/^/  server stderr | /' "/tmp/$name-s.err"
    expect_eq "$name: qrdma-verbs-stock's exit status" "$rc" 0
    expect_eq "$name: $tool's exit status" "$rs" 0
    check "$name: $tool ran to its end" grep -q "iters in" "/tmp/$name-s.out"
    check "$name: $tool found no invalid data" sh -c "! grep -qi 'invalid' /tmp/$name-s.out"
    check "$name: $tool wrote nothing on stderr" test ! -s "/tmp/$name-s.err"
}
stock rc ibv_rc_pingpong -s 4096 -n 200 -c
stock ud ibv_ud_pingpong -s 1024 -n 200 -c
stock srq ibv_srq_pingpong -s 4096 -q 4 -n 200 -c

# stock_client NAME TOOL OPTS...: the other way round, qrdma-verbs-stock
# NAME as the server (every byte of every message from the stock client
# checked) and the stock TOOL as its client, started once ours listens.
# Passes only when both exit 0, the client printed its closing "iters in"
# line and nothing on stderr.
stock_client() {
    local name=$1 tool=$2 s rs rc
    shift 2
    timeout 60 ./qrdma-verbs-stock "$@" rxe0 "$gid_index" "$name" > "/tmp/$name-s.log" 2>&1 &
    s=$!
    wait_serving "$s" 30
    timeout 60 "$tool" -d rxe0 -g "$gid_index" "$@" 127.0.0.1 > "/tmp/$name-c.out" 2> "/tmp/$name-c.err"
    rc=$?
    wait "$s"
    rs=$?
    sed 's/^/  server | /' "/tmp/$name-s.log"
    sed 's/^/  client | /' "/tmp/$name-c.out"
    sed 's/^/  client stderr | /' "/tmp/$name-c.err"
    expect_eq "$name as the server: qrdma-verbs-stock's exit status" "$rs" 0
    expect_eq "$name as the server: $tool's exit status" "$rc" 0
    check "$name as the server: $tool ran to its end" grep -q "iters in" "/tmp/$name-c.out"
    check "$name as the server: $tool wrote nothing on stderr" test ! -s "/tmp/$name-c.err"
}
stock_client rc ibv_rc_pingpong -s 4096 -n 200 -c
stock_client ud ibv_ud_pingpong -s 1024 -n 200 -c
stock_client srq ibv_srq_pingpong -s 4096 -q 4 -n 200 -c
expect_eq "QPs on rxe0 after the run" "$(rdma res show qp 2>/dev/null | grep -c 'link rxe0')" \
    "$qps_before"
finish guest-verbs-rxe
