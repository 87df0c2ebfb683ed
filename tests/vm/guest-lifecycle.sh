#!/bin/bash
# Lifecycle stress in one guest, run by test-lifecycle.sh (short) and by
# `make stress` (long): guest-lifecycle.sh KILLS RELOADS
#
#  1. KILLS times: qrdma-datapath (every object type of the provider, then
#     loopback traffic through the device's own GID: RC, UD, SRQ, atomics,
#     CQ resize, completion channel) is killed with SIGKILL after a random
#     0.3..2.5 s, wherever it is. Afterwards every object counter of the
#     driver and of the device is back at its idle value and a full run of
#     qrdma-datapath passes.
#  2. RELOADS times: `rmmod qrdma` while an RC ping-pong runs between two
#     processes over loopback (the driver disassociates their contexts: the
#     core destroys their objects and zaps the doorbell pages), then
#     `modprobe qrdma`; afterwards the counters are idle and traffic works.
#  3. QEMU's resident set size is read after a warm-up and at the end.
. "$(dirname "$0")/guest-lib.sh"
kills=${1:-20} reloads=${2:-5}
dev=$qdev_sys
t0=$(date +%s)
check "qrdma0 registered" wait_for 10 test -d "$dev"
idle_snapshot
check "idle: only the MAD layer's objects" idle_is_mad_only

check "warm-up: qrdma-datapath passes" sh -c 'qrdma-datapath > /tmp/dp.log 2>&1'
tail -n 3 /tmp/dp.log | sed 's/^/  | /'
rss0=$(vm_rss warm)
check "QEMU RSS after warm-up read ($rss0 kB)" test -n "$rss0"

# ---- 1. kill -9 wherever the process is ----------------------------------------
RANDOM=7
for i in $(seq "$kills"); do
    qrdma-datapath > /tmp/dp-kill.log 2>&1 &
    p=$!
    ms=$((300 + RANDOM % 2200))
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    kill -9 "$p" 2>/dev/null
    wait "$p" 2>/dev/null
done
echo "$kills processes killed with SIGKILL after $(($(date +%s) - t0))s"
check "after $kills kills: every object counter back at its idle value" wait_for 60 counters_at_zero
echo "counters: $(counters)"
check "qrdma-datapath passes after the kills" sh -c 'qrdma-datapath > /tmp/dp.log 2>&1'

# ---- 2. rmmod with traffic running ------------------------------------------------
pp="ibv_rc_pingpong -d qrdma0 -g 1 -s 4096 -n 100000000"
for i in $(seq "$reloads"); do
    $pp > /tmp/pp-s.log 2>&1 &
    s=$!
    sleep 1
    $pp "$QRDMA_IP" > /tmp/pp-c.log 2>&1 &
    c=$!
    # Traffic is flowing when the server's QP has taken receive WQEs.
    sleep 3
    if ! kill -0 "$s" 2>/dev/null || ! kill -0 "$c" 2>/dev/null; then
        fail "reload $i: the ping-pong did not start"
        tail -n 5 /tmp/pp-s.log /tmp/pp-c.log
    fi
    check "reload $i: rmmod with traffic running" timeout 120 rmmod qrdma
    kill -9 "$s" "$c" 2>/dev/null
    wait "$s" "$c" 2>/dev/null
    check "reload $i: modprobe" modprobe qrdma
    check "reload $i: qrdma0 back" wait_for 30 test -d "$dev"
    check "reload $i: netdev up with its RoCE GID" netdev_up
done
check "after $reloads reloads: counters at idle" wait_for 60 counters_at_zero
echo "counters: $(counters)"
check "traffic after the reloads: ping-pong with data check" \
    sh -c "ibv_rc_pingpong -d qrdma0 -g 1 -c -n 50 > /tmp/s.log 2>&1 & sleep 1;
           ibv_rc_pingpong -d qrdma0 -g 1 -c -n 50 $QRDMA_IP > /tmp/c.log 2>&1 && wait"
check "qrdma-datapath passes after the reloads" sh -c 'qrdma-datapath > /tmp/dp.log 2>&1'

rss1=$(vm_rss end)
echo "QEMU RSS: ${rss0} kB after warm-up, ${rss1} kB at the end ($(( (rss1 - rss0) / 1024 )) MB more)"
# Guest pages touched for the first time also count; a leak per cycle in
# the device would add up far beyond this.
check "QEMU RSS grew by less than 64 MB" test "$((rss1 - rss0))" -lt $((64 * 1024))
check "no kernel warning or oops" sh -c '! dmesg | grep -E "WARNING:|BUG:|Oops|Call Trace:"'
echo "lifecycle took $(($(date +%s) - t0))s"
finish guest-lifecycle
