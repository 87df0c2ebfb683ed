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
python3 - "$work/report" "$reps" "$window" > "$results/tails.md" <<'PY'
import statistics, sys
rows, delays = [], {}
for line in open(sys.argv[1]):
    w = line.split()
    if w[0] == "delays":
        delays[w[1].split("=", 1)[1]] = w[2:]
    elif w[0] == "res":
        rows.append(dict(x.split("=", 1) for x in w[1:]))
scheds = list(delays)
print("# Latency tails: the emulator threads' scheduling (make bench-tails)\n")
print(f"Two qrdma guests, netdev MTU 1500, {sys.argv[2]} runs of each test at 5,000 iterations; "
      "microseconds, the median of the runs with their range.\n")
print("| emulator threads | test | typical | p99 | max |")
print("|---|---|---|---|---|")
for s in scheds:
    for t in ("write_lat", "send_lat"):
        r = [x for x in rows if x["sched"] == s and x["test"] == t and x["value"] != "fail"]
        fails = sum(1 for x in rows if x["sched"] == s and x["test"] == t and x["value"] == "fail")
        def col(k):
            v = [float(x[k]) for x in r]
            return f"{statistics.median(v):.0f} ({min(v):.0f}–{max(v):.0f})" if v else "-"
        extra = f" ({fails} failed)" if fails else ""
        print(f"| {s} | {t} 8 B{extra} | {col('value')} | {col('p99')} | {col('max')} |")
# Other processes' share of the host's CPU during each run (host-load.py's
# counters before and after: busy minus the bench's QEMUs, over the total).
other = []
for x in rows:
    try:
        a = [float(v) for v in x["h0"].split(",")]
        b = [float(v) for v in x["h1"].split(",")]
    except (KeyError, ValueError):
        continue
    if len(a) >= 7 and len(b) >= 7 and b[2] > a[2]:
        other.append(100 * max(0.0, (b[3] - a[3]) - (b[5] - a[5])) / (b[2] - a[2]))
if other:
    print(f"\nOther processes used {statistics.median(other):.1f}% of the host's CPU during a run "
          f"(median; at most {max(other):.1f}%).")
print(f"\nThe main loops' scheduling delay, from wakeup to running, over a {sys.argv[3]} s window "
      "of the same runs (perf sched; milliseconds):\n")
print("| emulator threads | wakeups | p50 | p90 | p99 | max |")
print("|---|---|---|---|---|---|")
for s in scheds:
    n, p50, p90, p99, mx = delays[s]
    print(f"| {s} | {n} | {p50} | {p90} | {p99} | {mx} |")
PY
cat "$results/tails.md"
