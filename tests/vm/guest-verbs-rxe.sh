#!/bin/bash
# Run by test-verbs-rxe.sh in a guest whose NIC is virtio-net with soft-RoCE
# (rxe0): qrdma-verbs-rxe on rxe0's IPv4 GID, then no QP of it left on
# the device (the cores' teardown released them).
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
expect_eq "QPs on rxe0 after the run" "$(rdma res show qp 2>/dev/null | grep -c 'link rxe0')" \
    "$qps_before"
finish guest-verbs-rxe
