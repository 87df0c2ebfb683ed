#!/bin/bash
# make bench: qrdma against Linux soft-RoCE (rdma_rxe over virtio-net) in
# the same two guests (vm-run --nic qrdma+virtio-rxe: each guest has both,
# on segments of their own, QEMU dgram netdevs over Unix sockets), the
# perftest matrix interleaved run by run (qrdma, rxe, qrdma, rxe ...) at
# each netdev MTU, the host's load sampled around every run, the host's own
# limits, the native microbenchmarks (make bench-native: the transport and
# the device core without VMs), and a report with tables of medians and
# spreads, the issue's targets and a plot in bench/results/.
#
# Environment: BENCH_REPS (default 5), BENCH_SETUPS (default "qrdma rxe"),
# BENCH_MTUS (default "1500 9000"), BENCH_MATRIX (targets, the default,
# full or tails), BENCH_SECONDS (per native case, default 1), BENCH_NATIVE (0 skips
# the native stage), BENCH_VERBS (0 skips the verbs backend's, make bench-verbs), BENCH_EMULATOR_SCHED (vm-run --emulator-sched: fifo:1,
# the default, runs both guests' QEMU emulator threads, where both devices'
# emulation runs, at SCHED_FIFO 1 and the vCPUs as usual; other leaves the
# host's scheduling alone. docs/performance.md, "Latency tails", has why).
set -uo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
. "$(dirname "$0")/lib.sh"
cd "$QRDMA_TOP"

reps=${BENCH_REPS:-5}
setups=${BENCH_SETUPS:-qrdma rxe}
mtus=${BENCH_MTUS:-1500 9000}
matrix=${BENCH_MATRIX:-targets}
emulator_sched=${BENCH_EMULATOR_SCHED:-fifo:1}
results="$QRDMA_TOP/bench/results"
work=$(mktemp -d "${TMPDIR:-/tmp}/qrdma-bench.XXXXXX")
sampler=""
trap '[ -z "$sampler" ] || kill "$sampler" 2>/dev/null; rm -rf "$work"' EXIT

stage setup bash scripts/setup-host.sh || exit 1
stage host-limits bash -c "cc -O2 -Wall -o '$work/host-limits' bench/host-limits.c &&
    '$work/host-limits' | tee '$work/limits'" || exit 1
if [ "${BENCH_NATIVE:-1}" != 0 ]; then
    stage bench-native make -s bench-native NATIVE_OUT="$work/native" || exit 1
fi
stage qemu bash scripts/build-qemu.sh >/dev/null || exit 1
stage guest bash scripts/build-guest.sh >/dev/null || exit 1
# The verbs backend against native perftest (its own guest, before the pair).
if [ "${BENCH_VERBS:-1}" != 0 ]; then
    stage bench-verbs bash bench/run-verbs-bench.sh || exit 1
fi

bench_share "$work"
env=$(bench_guest_env "$setups" "$mtus" "$reps" "$matrix")
# A test that fails still yields its rows (as failures); the run goes on.
stage vm-bench scripts/vm-run --nic qrdma+virtio-rxe --emulator-sched "$emulator_sched" \
    --timeout 14400 --share "$work" \
    --run "$env bash guest-perftest.sh" --run "$env bash guest-perftest.sh" |
    tee "$work/vm.log" | grep --line-buffered -E '^\[g[01]\] bench:|^vm-run:'
# What vm-run set, in its words (a refusal included).
sched_note="QEMU's emulator threads at the host's default scheduling."
if [ "$emulator_sched" != other ]; then
    sched_note="QEMU's emulator threads $emulator_sched (vm-run --emulator-sched): \
$(sed -n 's/^vm-run: guest \([0-9]*\): \(.*SCHED_FIFO.*\)/guest \1: \2/p' "$work/vm.log" | paste -sd'/' - | sed 's|/| / |g')."
fi
kill "$sampler" 2>/dev/null
sampler=""

accel=$(grep -ho 'accelerator [a-z]*' "$work"/vm.log | head -n1)
machine="Machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), \
$(free -g | awk '/Mem:/ {print $2}') GB RAM. Guests: 2 vCPUs and 2048 MB each, ${accel:-accelerator unknown}, \
QEMU $QEMU_VERSION, dgram netdevs over Unix sockets, both devices in each guest. $reps repetitions \
interleaved, netdev MTU $mtus, matrix $matrix, $(date -u '+%Y-%m-%d %H:%M') UTC. $sched_note"
# What each device reported as its active MTU at each netdev MTU (guest 1's view).
active=$(sed -n 's/^\[g1\] bench: MTU \([0-9]*\): \([a-z0-9]*\) active_mtu \([0-9]*\).*/\2 \3 at \1/p' \
    "$work/vm.log" | paste -sd, - | sed 's/,/, /g')
[ -z "$active" ] || machine="$machine Active RoCE MTU: $active."
# The VM bench's products are replaced; the native ones only when this run
# made them (BENCH_NATIVE=0 keeps the last).
mkdir -p "$results"
rm -rf "$results/logs" "$results"/*.dat "$results/raw.txt"
cp "$work/raw" "$results/raw.txt"
cp "$work/limits" "$results/host-limits.txt"
if [ -d "$work/native" ]; then
    cp "$work/native/native.md" "$work/native/native.txt" "$work/native/instructions.md" \
        "$work/native/instructions.txt" "$work/native/cpu-per-frame.txt" "$results/"
fi
[ -d "$work/logs" ] && cp -r "$work/logs" "$results/logs"
stage report python3 bench/report.py "$work/raw" "$work/limits" "$results" "$machine" \
    "$results/native.txt"
