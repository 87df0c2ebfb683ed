#!/bin/bash
# Lifecycle stress in one guest, run by test-lifecycle.sh (short) and by
# `make stress` (long): guest-lifecycle.sh KILLS RELOADS RESETS
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
#  3. RESETS times: a PCI function-level reset from the guest (sysfs
#     `reset`, reset_method flr) while traffic runs over loopback: the
#     driver's reset_prepare takes the device down as remove does (the
#     processes' contexts are disassociated), reset_done brings it up as
#     probe does. Traffic alternates between qrdma-bulk (WRITE, READ back,
#     SEND, waits on its completion channel with poll()) and
#     `ibv_rc_pingpong -e` (blocks in ibv_get_cq_event): both processes of
#     each pair must fail with an error and exit by themselves, not hang.
#     Then one reset whose bring-up fails (pe_ready_timeout_ms below the
#     device's pe-ready-delay-us): nothing registered, another reset brings
#     the device back; the same failure followed by rmmod and modprobe; and
#     an FLR written with setpci behind the driver's back (the device's own
#     counters drop to zero under live objects), and one PCI remove +
#     rescan with traffic running. Afterwards the counters
#     are idle, traffic works, and QEMU's RSS over the resets is reported.
#  4. QEMU's resident set size is read after a warm-up and at the end.
. "$(dirname "$0")/guest-lib.sh"
kills=${1:-20} reloads=${2:-5} resets=${3:-10}
dev=$qdev_sys
t0=$(date +%s)
check "qrdma0 registered" wait_for 10 test -d "$dev"
bdf=$(qrdma_bdf)
pci=/sys/bus/pci/devices/$bdf
idle_snapshot
check "idle: only the MAD layer's objects" idle_is_mad_only

check "warm-up: qrdma-datapath passes" sh -c 'qrdma-datapath > /tmp/dp.log 2>&1'
tail -n 3 /tmp/dp.log | sed 's/^/  | /'
# What a leak in the device would grow is QEMU's own part of its RSS (its
# heap, the device's state): the whole RSS also grows with the guest pages
# and the TCG code that the run touches for the first time (tens of MB, by
# as much as 37 and 22 of a 66 MB growth in one run).
rss0=$(vm_rss warm)
own0=$(vm_rss_qemu warm)
check "QEMU RSS after warm-up read ($rss0 kB, QEMU's own $own0 kB)" test -n "$rss0" -a -n "$own0"

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
check "traffic after the reloads: qrdma-pingpong, every byte checked" \
    pair_run pp qrdma-pingpong -d qrdma0 -g 1 -s 4096 -n 50
check "qrdma-datapath passes after the reloads" sh -c 'qrdma-datapath > /tmp/dp.log 2>&1'

# ---- 3. function-level reset with traffic running -----------------------------------
# running PID: the process exists and has not exited (a zombie not yet
# waited for has; kill -0 would still succeed on it).
running() {
    local st
    read -r _ _ st _ 2>/dev/null < "/proc/$1/stat" && [ "$st" != Z ]
}
# pair_start KIND: a server and a client of KIND (bulk or pingpong) over
# loopback in the background ($s, $c; logs /tmp/$KIND-{s,c}.log); returns
# once traffic flows.
pair_start() {
    local kind=$1
    if [ "$kind" = bulk ]; then
        # 1 TB in 4 MB chunks: it runs until the reset.
        qrdma-bulk -d qrdma0 -g 1 -m 1048576 -c 4 -w 256 -t 60 > /tmp/bulk-s.log 2>&1 &
        s=$!
        sleep 1
        qrdma-bulk -d qrdma0 -g 1 -m 1048576 -c 4 -w 256 -t 60 "$QRDMA_IP" > /tmp/bulk-c.log 2>&1 &
        c=$!
        # Two chunks through: WRITE, READ back and SEND all ran.
        wait_for 60 grep -q '^server: chunk 2/' /tmp/bulk-s.log
    else
        ibv_rc_pingpong -d qrdma0 -g 1 -e -s 4096 -n 100000000 > /tmp/pingpong-s.log 2>&1 &
        s=$!
        sleep 1
        ibv_rc_pingpong -d qrdma0 -g 1 -e -s 4096 -n 100000000 "$QRDMA_IP" > /tmp/pingpong-c.log 2>&1 &
        c=$!
        sleep 3
        running "$s" && running "$c"
    fi
}
both_exited() { ! running "$s" && ! running "$c"; }
# pair_end KIND WHAT: both processes exit by themselves, with an error.
pair_end() {
    local kind=$1 what=$2 rs rc
    if ! wait_for 60 both_exited; then
        fail "$what: the $kind processes still run 60 s after the reset (hung)"
        tail -n 3 /tmp/$kind-s.log /tmp/$kind-c.log
        kill -9 "$s" "$c" 2>/dev/null
    fi
    wait "$s"; rs=$?
    wait "$c"; rc=$?
    if [ "$rs" -ne 0 ] && [ "$rc" -ne 0 ]; then
        ok "$what: both $kind processes failed and exited (status $rs and $rc)"
    else
        fail "$what: $kind exit status $rs and $rc, expected both non-zero"
    fi
    # The error each saw, for the log (stderr's line comes before the
    # buffered stdout that the exit flushes).
    grep -HiE 'fail|error|couldn' /tmp/$kind-s.log /tmp/$kind-c.log | sed 's/^/  | /'
}
# flr: a function-level reset through sysfs, as root does it.
flr() { timeout 120 sh -c "echo 1 > $pci/reset"; }
back_up() {
    wait_for 30 test -d "$dev" && netdev_up
}

check "FLR is the reset method" sh -c "echo flr > $pci/reset_method"
t_r=$(date +%s)
for i in $(seq "$resets"); do
    # After the first cycle (pages its traffic touches for the first time
    # then count in QEMU's RSS): what more resets add.
    [ "$i" -eq 2 ] && rss_r0=$(vm_rss resets-warm) && own_r0=$(vm_rss_qemu resets-warm)
    kind=bulk
    [ $((i % 2)) -eq 0 ] && kind=pingpong
    if ! pair_start "$kind"; then
        fail "reset $i: the $kind traffic did not start"
        tail -n 5 /tmp/$kind-s.log /tmp/$kind-c.log
    fi
    check "reset $i: FLR with $kind traffic running" flr
    pair_end "$kind" "reset $i"
    check "reset $i: qrdma0 and its netdev back" back_up
done
echo "$resets function-level resets in $(($(date +%s) - t_r))s"
if [ "$resets" -ge 2 ]; then
    rss_r1=$(vm_rss resets-done)
    own_r1=$(vm_rss_qemu resets-done)
    echo "QEMU RSS over resets 2..$resets: ${rss_r0} kB before, ${rss_r1} kB after ($(( (rss_r1 - rss_r0) / 1024 )) MB more);" \
        "QEMU's own ${own_r0} kB before, ${own_r1} kB after"
    check "QEMU's own memory grew by less than 16 MB over resets 2..$resets" \
        test "$((own_r1 - own_r0))" -lt $((16 * 1024))
fi
check "after $resets resets: counters at idle" wait_for 60 counters_at_zero
echo "counters: $(counters)"

# A bring-up that fails after the reset leaves nothing registered; the next
# reset brings the device back. The device is booted with a PE-ready delay
# of 200 ms (test-lifecycle.sh): a 50 ms timeout makes reset_done fail.
param=/sys/module/qrdma/parameters/pe_ready_timeout_ms
echo 50 > "$param"
check "failing bring-up: FLR" flr
check "failing bring-up: reset_done said why" sh -c \
    "dmesg | grep -q 'function reset: bring-up failed' && dmesg | grep -q 'engine not ready 50 ms after reset'"
check "failing bring-up: no qrdma0" test ! -e "$dev"
check "failing bring-up: the driver is still bound" test -e "/sys/bus/pci/drivers/qrdma/$bdf"
echo 5000 > "$param"
check "after the failed bring-up: another FLR brings the device back" flr
check "after the failed bring-up: qrdma0 and its netdev back" back_up
echo 50 > "$param"
check "failing bring-up again: FLR" flr
check "failing bring-up again: no qrdma0" test ! -e "$dev"
check "after a failed bring-up: rmmod" timeout 120 rmmod qrdma
check "after a failed bring-up: modprobe" modprobe qrdma
check "after a failed bring-up: qrdma0 and its netdev back" back_up

# An FLR behind the driver's back: setpci writes Initiate FLR into the PCIe
# Device Control register, as a confused or hostile guest can. The device
# really resets: its own object counters (registers the driver's hw_*
# attributes read) drop to zero although the driver and the traffic still
# hold QPs, CQs and MRs, and nothing more moves. The config space the FLR
# cleared is written back by hand (the kernel did not save it); then the
# driver's own reset recovers.
hw_counters="hw_qps hw_cqs hw_srqs hw_mrs hw_ahs"
hw_all_zero() {
    local c
    for c in $hw_counters; do [ "$(cat "$qdev_sys/$c")" = 0 ] || return 1; done
}
if pair_start bulk; then ok "setpci FLR: traffic runs"; else fail "setpci FLR: the traffic did not start"; fi
check "setpci FLR: the device holds the traffic's QPs" test "$(cat "$qdev_sys/hw_qps")" -gt "${idle[hw_qps]}"
saved=$(for r in 0 1 2 3 4 5; do echo "BASE_ADDRESS_$r.l=$(setpci -s "$bdf" BASE_ADDRESS_$r.l)"; done)
saved_cmd=$(setpci -s "$bdf" COMMAND.w)
check "setpci FLR: Initiate FLR written into Device Control" setpci -s "$bdf" CAP_EXP+8.w=8000:8000
sleep 0.2
# shellcheck disable=SC2086 # one setpci argument per saved register
check "setpci FLR: BARs and COMMAND written back" sh -c \
    "setpci -s $bdf $(echo $saved) && setpci -s $bdf COMMAND.w=$saved_cmd"
check "setpci FLR: the device's own counters are zero" hw_all_zero
echo "after the setpci FLR: $(for c in $hw_counters; do printf '%s=%s ' "$c" "$(cat "$qdev_sys/$c")"; done)"
check "setpci FLR: the driver's reset recovers" flr
pair_end bulk "setpci FLR"
check "setpci FLR: qrdma0 and its netdev back" back_up

# PCI remove (the driver's remove) and rescan (probe) with traffic running.
if pair_start bulk; then ok "remove: traffic runs"; else fail "remove: the traffic did not start"; fi
check "PCI remove with traffic running" timeout 120 sh -c "echo 1 > $pci/remove"
pair_end bulk "remove"
check "PCI rescan" sh -c "echo 1 > /sys/bus/pci/rescan"
check "after the rescan: qrdma0 and its netdev back" back_up

check "after the resets: counters at idle" wait_for 60 counters_at_zero
echo "counters: $(counters)"
# The chunk and WR sizes of the runs above: its buffers take no more guest
# pages than theirs did (pages touched for the first time count in RSS).
check "traffic after the resets: qrdma-bulk 64 MB written, read back, checked" \
    pair_run bulk-end qrdma-bulk -d qrdma0 -g 1 -m 64 -c 4 -w 256 -t 60
check "traffic after the resets: qrdma-pingpong, every byte checked" \
    pair_run pp qrdma-pingpong -d qrdma0 -g 1 -s 4096 -n 50
rss1=$(vm_rss end)
own1=$(vm_rss_qemu end)
echo "QEMU RSS: ${rss0} kB after warm-up, ${rss1} kB at the end ($(( (rss1 - rss0) / 1024 )) MB more);" \
    "QEMU's own ${own0} kB, then ${own1} kB"
# 8 to 9 MB in the runs of 2026-11-30, over 20 kills, 5 reloads, 10 resets
# and their traffic; a leak per cycle in the device would add up far beyond.
check "QEMU's own memory grew by less than 32 MB" test "$((own1 - own0))" -lt $((32 * 1024))
no_oops
echo "lifecycle took $(($(date +%s) - t0))s"
finish guest-lifecycle
