#!/bin/bash
# make bench-verbs (also a stage of make bench): the verbs backend's
# overhead as a ratio. One guest with soft-RoCE (rxe0 over virtio-net) as
# the "host NIC" runs bench/guest-verbs-bench.sh: perftest's ib_write_bw
# natively on rxe0, and the device core with the verbs backend on the same
# rxe0 as a process (qrdma-verbs-bench, built here), the same sizes, counts
# and send queue depth, run by run interleaved. Writes the table of
# medians, spreads (min-max) and qrdma/native ratios to
# bench/results/verbs.md (VERBS_OUT overrides), with the host's load
# average and CPU steal before and after; warns when the machine was busy.
#
# Environment: BENCH_REPS (default 5), BENCH_VERBS_SIZES, BENCH_VERBS_BYTES
# (guest-verbs-bench.sh).
set -uo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
cd "$QRDMA_TOP" || exit 1

out=${VERBS_OUT:-$QRDMA_TOP/bench/results/verbs.md}
work=$(mktemp -d "${TMPDIR:-/tmp}/qrdma-verbs-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# "load1 steal_ticks total_ticks" of the host now
host_load() {
    local load
    load=$(cut -d' ' -f1 /proc/loadavg)
    awk -v l="$load" '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print l, $9, t }' /proc/stat
}

stage setup bash scripts/setup-host.sh || exit 1
stage guest bash scripts/build-guest.sh > /dev/null || exit 1
stage build make -s build/verbs-rxe/qrdma-verbs-bench || exit 1
cp build/verbs-rxe/qrdma-verbs-bench bench/guest-verbs-bench.sh tests/vm/guest-lib.sh "$work/"
env="BENCH_REPS=${BENCH_REPS:-5} BENCH_VERBS_SIZES='${BENCH_VERBS_SIZES:-64 4096 65536}'"
env="$env BENCH_VERBS_BYTES=${BENCH_VERBS_BYTES:-67108864}"
before=$(host_load)
stage vm-bench scripts/vm-run --guests 1 --timeout 3600 --share "$work" --nic virtio-rxe \
    --run "$env bash guest-verbs-bench.sh" > "$work/vm.log" 2>&1
rc=$?
after=$(host_load)
grep -E 'bench-verbs:|^vm-run:' "$work/vm.log"
[ "$rc" = 0 ] || { tail -n 30 "$work/vm.log"; die "the guest run failed (vm-run exit $rc)"; }
grep -q 'bench-verbs: done' "$work/vm.log" || die "the guest did not finish the bench"

mkdir -p "$(dirname "$out")"
python3 - "$work/vm.log" "$before" "$after" "$out" <<'PY'
import re, statistics, sys, time
log, before, after, out = sys.argv[1:5]
runs = {}
mtu = "?"
for line in open(log):
    m = re.search(r"bench-verbs: (native|qrdma) (\d+) (\d+) ([0-9.]+)$", line.strip())
    if m:
        runs.setdefault((int(m.group(2)), m.group(1)), []).append(float(m.group(4)))
    m = re.search(r"bench-verbs: rxe0 active_mtu (\d+)", line)
    if m:
        mtu = m.group(1)
l0, st0, t0 = before.split()
l1, st1, t1 = after.split()
steal = 100.0 * (int(st1) - int(st0)) / max(1, int(t1) - int(t0))
rows = []
failed = 0
for size in sorted({s for s, _ in runs}):
    cells = []
    med = {}
    for setup in ("native", "qrdma"):
        v = runs.get((size, setup), [])
        failed += sum(1 for x in v if x == 0)
        ok = [x for x in v if x > 0]
        med[setup] = statistics.median(ok) if ok else 0
        cells.append(f"{med[setup]:.1f} ({min(ok):.1f}-{max(ok):.1f})" if ok else "failed")
    ratio = med["qrdma"] / med["native"] if med["native"] and med["qrdma"] else 0
    rows.append(f"| {size} | {cells[0]} | {cells[1]} | {ratio:.2f} |")
text = [
    "# Verbs backend against native perftest on the same device",
    "",
    "RDMA WRITE bandwidth on soft-RoCE (rxe0 over virtio-net) in one TCG guest:",
    "native is perftest's `ib_write_bw` (server and client on rxe0); qrdma is the",
    "device core with the verbs backend on the same rxe0 as a process",
    "(`qrdma-verbs-bench`: two cores, one RC QP writing into the other's guest",
    "RAM). Same sizes, counts and send queue depth (8), one QP, RoCE MTU " + mtu + ".",
    "MiB/s, median (min-max) of " + str(max(len(v) for v in runs.values()) if runs else 0) +
    " runs interleaved; ratio = qrdma / native medians. Made by",
    "`make bench-verbs` (bench/run-verbs-bench.sh) on " +
    time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()) + ".",
    "",
    "| Size (bytes) | native MiB/s | qrdma MiB/s | qrdma / native |",
    "|---|---|---|---|",
] + rows + [
    "",
    f"Host load average {l0} before and {l1} after; CPU steal {steal:.1f}% during the run.",
]
if float(l0) > 1.0:
    text.append("Warning: the machine was busy when the run started (load average above 1):"
                " these figures are not comparable with a quiet machine's.")
if failed:
    text.append(f"{failed} run(s) failed and are left out of the medians.")
open(out, "w").write("\n".join(text) + "\n")
print("\n".join(text))
sys.exit(1 if failed else 0)
PY
