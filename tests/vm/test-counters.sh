#!/bin/bash
# VM test: the port's hardware counters, the RDMA core's resource view and
# the device's trace events (docs/hw-spec.md section 20; docs/features.md).
#  1. guest-counters.sh in one guest whose device injects 3% loss, 1%
#     duplication and 1% corruption into the RoCE frames it sends: every
#     counter provoked and checked in sysfs, `rdma statistic show`,
#     `rdma resource show`.
#  2. the same device with QEMU's -trace 'qrdma_*': a short run
#     (guest-counters.sh trace) and the trace events of each kind the
#     device has must appear in QEMU's log: CQP commands with their status,
#     QP state changes, CEQ and AEQ posts, transport retransmits, NAKs and
#     RNR NAKs, the reset.
here=$(cd "$(dirname "$0")" && pwd)
vmrun=$here/../../scripts/vm-run
faults='x-fault-loss-ppm=30000,x-fault-dup-ppm=10000,x-fault-corrupt-ppm=10000'
rc=0
"$vmrun" --guests 1 --timeout 900 --share "$here" --device-opts "$faults" \
    --run 'bash guest-counters.sh' || rc=1

log=$(mktemp "${TMPDIR:-/tmp}/qrdma-trace.XXXXXX")
trap 'rm -f "$log"' EXIT
"$vmrun" --guests 1 --timeout 600 --share "$here" --device-opts "$faults" \
    --qemu-arg -trace --qemu-arg 'qrdma_*' --run 'bash guest-counters.sh trace' > "$log" 2>&1
vrc=$?
grep -v 'qrdma_reg_\|qrdma_db_write\|qrdma_irq' "$log" | grep -vE '^\[g0\] ([0-9]+@[0-9.]+:)?qrdma_' | tail -n 40
echo "trace: $(grep -cE 'qrdma_[a-z_]+ ' "$log") trace lines"
[ "$vrc" = 0 ] || { echo "FAIL: the traced run exited $vrc"; rc=1; }
# event REGEX DESCRIPTION: a trace line matching REGEX must be in the log.
event() {
    local n
    n=$(grep -cE "$1" "$log")
    if [ "$n" -gt 0 ]; then
        echo "ok: trace: $2 ($n lines, e.g. $(grep -m1 -oE "$1.*" "$log" | cut -c1-100))"
    else
        echo "FAIL: trace: no $2 (/$1/)"
        rc=1
    fi
}
event 'qrdma_reset ' "device reset"
event 'qrdma_cqp_cmd .*opcode 0x[0-9a-f]+ \(CREATE_QP\) status 0x0/0x0' "CQP CREATE_QP completing OK"
event 'qrdma_cqp_cmd .*opcode 0x[0-9a-f]+ \(MODIFY_QP\)' "CQP MODIFY_QP"
event 'qrdma_qp_state .*RESET -> INIT \(MODIFY_QP\)' "QP state change RESET -> INIT"
event 'qrdma_qp_state .*-> RTS' "QP state change to RTS"
event 'qrdma_qp_state .*-> ERR \(transport\)' "QP state change to ERR by the transport"
event 'qrdma_ceq_post ' "CEQ post"
event 'qrdma_aeq_post ' "AEQ post"
event 'qrdma_tp_retransmit ' "transport retransmit"
event 'qrdma_tp_nak .*rnr' "transport RNR NAK"
event 'qrdma_tp_nak .*(seq|access|inv)' "transport NAK"
event 'qrdma_guest_error ' "guest error (the bad rkey)"
exit "$rc"
