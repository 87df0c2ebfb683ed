#!/bin/bash
# make bench: qrdma against Linux soft-RoCE (rdma_rxe over virtio-net) in
# two guests booted the same way (accelerator, memory, CPUs, QEMU dgram
# netdev over Unix sockets), the perftest matrix in both, the host's own
# limits, the native microbenchmarks (make bench-native: the transport and
# the device core without VMs), and a report with a table and a plot in
# bench/results/.
#
# Environment: BENCH_REPS (default 3), BENCH_SETUPS (default "rxe qrdma"),
# BENCH_SECONDS (per native case, default 1).
set -uo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
cd "$QRDMA_TOP"

reps=${BENCH_REPS:-3}
setups=${BENCH_SETUPS:-rxe qrdma}
results="$QRDMA_TOP/bench/results"
work=$(mktemp -d "${TMPDIR:-/tmp}/qrdma-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

stage setup bash scripts/setup-host.sh || exit 1
stage host-limits bash -c "cc -O2 -Wall -o '$work/host-limits' bench/host-limits.c &&
    '$work/host-limits' | tee '$work/limits'" || exit 1
stage bench-native make -s bench-native NATIVE_OUT="$work/native" || exit 1
stage qemu bash scripts/build-qemu.sh >/dev/null || exit 1
stage guest bash scripts/build-guest.sh >/dev/null || exit 1

cp bench/guest-perftest.sh tests/vm/guest-lib.sh "$work/"
: > "$work/raw"
for s in $setups; do
    case "$s" in
        rxe) nic=virtio-rxe dev=rxe0 ;;
        qrdma) nic=qrdma dev=qrdma0 ;;
        *) die "unknown setup '$s' (rxe, qrdma)" ;;
    esac
    env="BENCH_SETUP=$s BENCH_DEV=$dev BENCH_REPS=$reps BENCH_OUT=/mnt/host/raw BENCH_LOGS=/mnt/host/logs"
    # A setup whose tests fail still yields its rows (as failures); the run goes on.
    stage "vm-$s" scripts/vm-run --nic "$nic" --timeout 3600 --share "$work" \
        --run "$env bash guest-perftest.sh" --run "$env bash guest-perftest.sh" |
        tee "$work/vm-$s.log" | grep --line-buffered -E '^\[g[01]\] bench:|^vm-run:'
done

accel=$(grep -ho 'accelerator [a-z]*' "$work"/vm-*.log | head -n1)
machine="Machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), \
$(free -g | awk '/Mem:/ {print $2}') GB RAM. Guests: 2 vCPUs and 2048 MB each, ${accel:-accelerator unknown}, \
QEMU $QEMU_VERSION, dgram netdev over Unix sockets. $reps repetitions, $(date -u +%Y-%m-%d)."
rm -rf "$results" && mkdir -p "$results"
cp "$work/raw" "$results/raw.txt"
cp "$work/limits" "$results/host-limits.txt"
cp "$work/native/native.md" "$work/native/native.txt" "$work/native/instructions.md" \
    "$work/native/instructions.txt" "$results/"
[ -d "$work/logs" ] && cp -r "$work/logs" "$results/logs"
stage report python3 bench/report.py "$work/raw" "$work/limits" "$results" "$machine" \
    "$work/native/native.txt"
