#!/bin/bash
# make bench-doorbells: the SQ doorbell as an MMIO write against the same
# doorbell as an eventfd (docs/backends.md, "Doorbells without the BQL").
# Two qrdma guests with the data path in an IOThread (vm-run --iothread
# dp0), booted alternately with ioeventfd=off and ioeventfd=on (off on off
# on ...), each boot running guest-perftest.sh's targets matrix once at
# netdev MTU 1500, the host's load read around every run. The report
# (bench/results/doorbells.md) puts the two side by side: medians of the
# boots with their range, and the ratio on/off. Under TCG the vCPU holds
# the BQL for the doorbell write either way (QEMU 10.0 takes it for every
# MMIO access); what differs is the work done under it, and where the
# data path learns of the doorbell. The gain the eventfd is for, a write
# that does not leave a KVM guest, is not measured here.
#
# Environment: BENCH_ROUNDS (boots of each configuration, default 3).
set -uo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
. "$(dirname "$0")/lib.sh"
cd "$QRDMA_TOP"

rounds=${BENCH_ROUNDS:-3}
results="$QRDMA_TOP/bench/results"
work=$(mktemp -d "${TMPDIR:-/tmp}/qrdma-doorbells.XXXXXX")
sampler=""
trap '[ -z "$sampler" ] || kill "$sampler" 2>/dev/null; rm -rf "$work"' EXIT

stage setup bash scripts/setup-host.sh || exit 1
stage qemu bash scripts/build-qemu.sh >/dev/null || exit 1
stage guest bash scripts/build-guest.sh >/dev/null || exit 1

: > "$work/report"
for round in $(seq 1 "$rounds"); do
    for ioeventfd in off on; do
        run="$work/$ioeventfd-$round"
        mkdir -p "$run"
        bench_share "$run"
        env=$(bench_guest_env qrdma 1500 1 targets)
        echo "bench-doorbells: round $round, ioeventfd=$ioeventfd"
        scripts/vm-run --nic qrdma --iothread dp0 --device-opts "ioeventfd=$ioeventfd" \
            --timeout 1800 --share "$run" \
            --run "$env bash guest-perftest.sh" --run "$env bash guest-perftest.sh" \
            > "$run/vm.log" 2>&1
        rc=$?
        kill "$sampler" 2>/dev/null
        sampler=""
        grep -E '^\[g1\] bench: qrdma' "$run/vm.log"
        [ "$rc" -eq 0 ] || { echo "bench-doorbells: vm-run failed ($rc); its log:" >&2
                             tail -30 "$run/vm.log" >&2; exit 1; }
        sed "s/^res /res ioeventfd=$ioeventfd round=$round /" "$run/raw" >> "$work/report"
    done
done

mkdir -p "$results"
python3 bench/report.py --doorbells "$work/report" "$rounds" > "$results/doorbells.md"
cat "$results/doorbells.md"
