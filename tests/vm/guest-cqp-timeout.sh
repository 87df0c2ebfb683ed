#!/bin/bash
# A control QP that stops answering (the device's x-cqp-stall-opcode test
# hook, set by test-cqp-timeout.sh to CREATE_SRQ: the CQP hangs at the first
# SRQ creation until the next reset, as a hung engine would):
#  1. the command that hangs fails with EIO after cqp_timeout_ms, the driver
#     says the CQP is dead, and every later command fails with EIO at once;
#     the process's objects are destroyed anyway (their memory kept until
#     the reset);
#  2. a function-level reset brings the device back (reset_prepare with a
#     dead CQP, reset_done with a new one): traffic works, counters idle;
#  3. the same hang again, then rmmod and modprobe work and traffic runs.
. "$(dirname "$0")/guest-lib.sh"
dev=$qdev_sys
check "qrdma0 registered" wait_for 10 test -d "$dev"
idle_snapshot
bdf=$(qrdma_bdf)
echo 1000 > /sys/module/qrdma/parameters/cqp_timeout_ms

# hang: a CQ (the CQP still answers), then an SRQ (it hangs: EIO after the
# 1 s timeout), then another CQ (EIO at once: the CQP is dead).
hang() {
    python3 - <<'PY'
import errno, sys, time
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.srq import SRQ, SrqInitAttr, SrqAttr
from pyverbs.pyverbs_error import PyverbsRDMAError

def expect_eio(what, make, at_most):
    t = time.monotonic()
    try:
        make()
    except PyverbsRDMAError as e:
        took = time.monotonic() - t
        print('%s: %s (after %.2f s)' % (what, e, took))
        if e.error_code != errno.EIO or took > at_most:
            print('FAIL: %s: expected EIO within %.1f s' % (what, at_most))
            sys.exit(1)
        return
    print('FAIL: %s succeeded' % what)
    sys.exit(1)

ctx = Context(name='qrdma0')
pd = PD(ctx)
cq = CQ(ctx, 16)
print('CQ created: the CQP answers')
expect_eio('SRQ creation (the CQP hangs)', lambda: SRQ(pd, SrqInitAttr(SrqAttr(max_wr=16, max_sge=1))), 10)
expect_eio('CQ creation (the CQP is dead)', lambda: CQ(ctx, 16), 0.5)
PY
}
back_up() { wait_for 30 test -d "$dev" && netdev_up; }
pingpong() { pair_run pp qrdma-pingpong -d qrdma0 -g 1 -s 4096 -n 50; }
# dead_process: a new process's first command fails with an error, at once
# (exit status 1 and "Couldn't ..." from ibv_rc_pingpong). Run as the
# server it would wait for a client forever once its objects existed, so a
# hang (timeout's 124) is a failure, not a pass.
dead_process() {
    local rc t0 dt
    t0=$(date +%s.%N)
    timeout 20 ibv_rc_pingpong -d qrdma0 -g 1 > /tmp/dead.log 2>&1
    rc=$?
    dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    sed 's/^/  | /' /tmp/dead.log | head -n 3
    echo "  ibv_rc_pingpong exited with status $rc after ${dt}s"
    [ "$rc" = 1 ] && grep -q "^Couldn't" /tmp/dead.log && awk -v t="$dt" 'BEGIN { exit !(t < 5) }'
}

check "1. the CQP hangs at CREATE_SRQ: EIO after the timeout, then EIO at once" hang
check "1. the driver said the CQP is dead" \
    sh -c "dmesg | grep -q 'CQP CREATE_SRQ timed out after 1000 ms; CQP marked dead'"
check "1. a new process fails at once (within 5 s, exit status 1, not a hang)" dead_process
echo "counters with the CQP dead: $(counters)"
check "1. the failed destroys were counted" test "$(cat "$dev/hw_destroy_errors")" -gt 0

check "2. FLR with the CQP dead" timeout 120 sh -c "echo 1 > /sys/bus/pci/devices/$bdf/reset"
check "2. qrdma0 back with its netdev" back_up
check "2. counters at idle" wait_for 30 counters_at_zero
check "2. traffic: qrdma-pingpong, every byte checked" pingpong

echo 1000 > /sys/module/qrdma/parameters/cqp_timeout_ms
check "3. the CQP hangs again" hang
check "3. rmmod with the CQP dead" timeout 120 rmmod qrdma
check "3. modprobe" modprobe qrdma
check "3. qrdma0 back with its netdev" back_up
check "3. counters at idle" wait_for 30 counters_at_zero
check "3. traffic: qrdma-pingpong, every byte checked" pingpong
echo "counters: $(counters)"
finish guest-cqp-timeout
