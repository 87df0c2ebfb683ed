#!/bin/bash
# make bench-tails: where qrdma's latency tail comes from. The 8-byte
# latency tests (guest-perftest.sh's tails matrix: ib_write_lat and
# ib_send_lat, 5,000 iterations) between two qrdma guests, once with the
# host's default scheduling of QEMU's threads and once with the emulator
# threads at SCHED_FIFO 1 (vm-run --emulator-sched), and for each the
# scheduling delay of the two QEMUs' main loops (the thread the device and
# its netdev run in: from its wakeup to its running), recorded with
# `perf sched` over a window of the run. The report
# (bench/results/tails.md) puts the two side by side.
#
# Environment: BENCH_REPS (default 3), TAILS_SCHEDS (default
# "other fifo:1"), TAILS_PERF_SECONDS (the recorded window, default 20; 0
# records nothing).
set -uo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
. "$(dirname "$0")/lib.sh"
cd "$QRDMA_TOP"

reps=${BENCH_REPS:-3}
scheds=${TAILS_SCHEDS:-other fifo:1}
window=${TAILS_PERF_SECONDS:-20}
results="$QRDMA_TOP/bench/results"
work=$(mktemp -d "${TMPDIR:-/tmp}/qrdma-tails.XXXXXX")
sampler="" vm=""
trap '[ -z "$sampler" ] || kill "$sampler" 2>/dev/null; rm -rf "$work"' EXIT

stage setup bash scripts/setup-host.sh || exit 1
stage qemu bash scripts/build-qemu.sh >/dev/null || exit 1
stage guest bash scripts/build-guest.sh >/dev/null || exit 1
have_perf=""
if [ "$window" != 0 ] && perf sched record -o "$work/probe.data" -- true >/dev/null 2>&1; then
    have_perf=1
else
    echo "bench-tails: perf sched cannot record here; latencies only" >&2
fi

# delays DATA PIDS: the main threads' scheduling delays in DATA, in ms:
# "n p50 p90 p99 max" (perf sched timehist names a process's main thread
# by its PID alone, its other threads TID/PID).
delays() {
    perf sched timehist -i "$1" 2>/dev/null |
        awk -v pids="$2" '
            BEGIN { n = split(pids, p, " "); for (i = 1; i <= n; i++) want["[" p[i] "]"] = 1 }
            { m = match($3, /\[[0-9]+\]$/); if (m && (substr($3, m) in want)) print $5 }' |
        sort -n | awk '{ a[NR] = $1 } END {
            if (NR == 0) { print "0 - - - -"; exit }
            printf "%d %s %s %s %s\n", NR, a[int(NR * .5) + 1], a[int(NR * .9) + 1], a[int(NR * .99) + 1], a[NR] }'
}

: > "$work/report"
for sched in $scheds; do
    run="$work/${sched/:/-}"
    mkdir -p "$run"
    bench_share "$run"
    env=$(bench_guest_env qrdma 1500 "$reps" tails)
    echo "bench-tails: emulator threads $sched"
    scripts/vm-run --nic qrdma --emulator-sched "$sched" --timeout 1800 --share "$run" \
        --run "$env bash guest-perftest.sh" --run "$env bash guest-perftest.sh" > "$run/vm.log" 2>&1 &
    vm=$!
    if [ -n "$have_perf" ]; then
        # The window starts with the first test (the guests have booted and
        # set their MTU), after vm-run has set the threads' policy.
        while kill -0 "$vm" 2>/dev/null && ! grep -q '^\[g1\] bench: MTU' "$run/vm.log"; do sleep 0.5; done
        sleep 2
        pids=$(pgrep -f "qemu-system-x86_64.*$run" | paste -sd' ' -)
        perf sched record -o "$run/sched.data" -- sleep "$window" >/dev/null 2>&1
    fi
    wait "$vm"
    rc=$?
    kill "$sampler" 2>/dev/null
    sampler=""
    grep -E '^\[g1\] bench: qrdma|^vm-run: guest .*SCHED_FIFO' "$run/vm.log"
    [ "$rc" -eq 0 ] || { echo "bench-tails: vm-run failed ($rc); its log:" >&2; tail -30 "$run/vm.log" >&2; exit 1; }
    d="- - - - -"
    [ -z "$have_perf" ] || [ ! -s "$run/sched.data" ] || d=$(delays "$run/sched.data" "$pids")
    echo "delays sched=$sched $d" >> "$work/report"
    sed "s/^res /res sched=$sched /" "$run/raw" >> "$work/report"
done

mkdir -p "$results"
python3 bench/report.py --tails "$work/report" "$reps" "$window" > "$results/tails.md"
cat "$results/tails.md"
