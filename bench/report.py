#!/usr/bin/env python3
"""Turn `make bench` raw results into bench/results/README.md and a plot.

Input: the result lines of bench/guest-perftest.sh ("res" and key=value
words: setup, mtu, test, size, rep, value|fail, unit, p99, max, and h0/h1,
the host's load line of bench/host-load.py before and after the run) and
host lines "limit <name> <value> <unit>". Output: per netdev MTU a Markdown
table of medians with their spread (min-max) per setup and the ratio
qrdma/rxe per pair of neighbouring runs, latency tails, the host's load
during the runs (runs on a busy machine are counted and flagged), the
issue's targets, and a plot drawn by gnuplot (Debian's gnuplot-nox). With
NATIVE (the lines of `make bench-native`), the native microbenchmarks'
table too.

With --native, only that table, as bench/results/native.md: lines
"native <bench> <test> <size> <mtu> <msgs/s> <GB/s> <lat median us> <lat p99 us>"
("-" where a column does not apply) from sw_bench and core_bench.

With --tails, bench/tails.sh's lines (result lines with a sched= word and
"delays" lines) as bench/results/tails.md, on standard output. With
--doorbells, bench/doorbells.sh's lines (result lines with ioeventfd= and
round= words) as bench/results/doorbells.md, on standard output.

usage: report.py RAW LIMITS OUTDIR MACHINE-NOTE [NATIVE]
       report.py --native NATIVE OUT.md MACHINE-NOTE
       report.py --tails REPORT REPS WINDOW-SECONDS
       report.py --doorbells REPORT ROUNDS
"""
import collections
import os
import statistics
import subprocess
import sys

NATIVE_BENCHES = [
    ("sw", "(a) transport alone, 1 process"),
    ("core", "(b) device core + transport, 1 process"),
    ("core-dgram", "(c) device core + transport, 2 processes, Unix dgram"),
]
NATIVE_TESTS = ["write_bw", "send_bw", "read_bw", "wire_bw", "write_lat", "send_lat"]
# The issue's targets: (bench, test, size, column, at least, what).
NATIVE_TARGETS = [
    ("sw", "write_bw", 65536, "gbps", 5.0, "(a) 64 KB RDMA WRITE, GB/s"),
    ("sw", "write_bw", 64, "msgs", 2e6, "(a) 64 B RDMA WRITE, msgs/s"),
    ("core", "write_bw", 65536, "gbps", 5.0, "(b) 64 KB RDMA WRITE, GB/s"),
    ("core", "write_bw", 64, "msgs", 2e6, "(b) 64 B RDMA WRITE, msgs/s"),
    ("core-dgram", "write_bw", 65536, "gbps", 2.0, "(c) 64 KB RDMA WRITE, GB/s"),
]


def native_table(path):
    """Markdown lines for the native microbenchmarks' results in path."""
    rows = {}
    for line in open(path):
        f = line.split()
        if len(f) != 9 or f[0] != "native":
            continue
        bench, test, size, mtu = f[1], f[2], int(f[3]), int(f[4])
        num = [None if v == "-" else float(v) for v in f[5:9]]
        rows[(bench, test, size, mtu)] = dict(zip(("msgs", "gbps", "med", "p99"), num))

    def cell(v, spec):
        return "-" if v is None else format(v, spec)

    out = ["| bench | test | size (B) | MTU | msgs/s | GB/s | latency median (us) | latency p99 (us) |",
           "|---|---|---:|---:|---:|---:|---:|---:|"]
    order = {b: i for i, (b, _) in enumerate(NATIVE_BENCHES)}
    names = dict(NATIVE_BENCHES)
    for key in sorted(rows, key=lambda k: (order.get(k[0], 99), NATIVE_TESTS.index(k[1])
                                           if k[1] in NATIVE_TESTS else 99, k[2], k[3])):
        r = rows[key]
        out.append(f"| {names.get(key[0], key[0])} | {key[1]} | {key[2]} | {key[3]} | "
                   f"{cell(r['msgs'], ',.0f')} | {cell(r['gbps'], '.3f')} | "
                   f"{cell(r['med'], '.2f')} | {cell(r['p99'], '.2f')} |")
    out += ["", "| target (issue) | at least | measured | met |", "|---|---:|---:|---|"]
    for bench, test, size, col, goal, what in NATIVE_TARGETS:
        v = rows.get((bench, test, size, 4096), {}).get(col)
        spec = ",.0f" if col == "msgs" else ".3f"
        out.append(f"| {what} | {format(goal, spec)} | {cell(v, spec)} | "
                   f"{'n/a' if v is None else 'yes' if v >= goal else 'no'} |")
    # Issue 14 item 4: (c) at 64 KB against the socket path measured in the same run.
    wire = rows.get(("core-dgram", "wire_bw", 4154, 4096), {}).get("gbps")
    v = rows.get(("core-dgram", "write_bw", 65536, 4096), {}).get("gbps")
    if wire and v is not None:
        out.append(f"| (c) 64 KB RDMA WRITE, share of wire_bw (4154-byte frames, same run; "
                   f"a flood: no ceiling on a loaded machine) | 90% | {100 * v / wire:.0f}% | "
                   f"{'yes' if v >= 0.9 * wire else 'no'} |")
    return out


NATIVE_NOTE = ("No VM. (a) host-backend/bench/sw_bench.c: two transport engines over an "
               "in-memory wire. (b) bench/native/core_bench.c: two device cores with fake guest "
               "memory, driven through doorbells, WQEs and CQEs as the provider drives them, "
               "over the same kind of wire. (c) the same with one core per process over Unix "
               "datagram sockets, as QEMU's dgram netdev in the VM tests; wire_bw is that "
               "socket path alone. RC; bandwidth with 128 WRs in flight, GB/s = 1e9 bytes of "
               "payload per second; latency one way, half of an 8-byte ping-pong's round trip. "
               "One CPU per process. See docs/performance-native.md.")

# A run is "busy" when, between the client's two reads of the host's load,
# processes other than the bench's used more than BUSY_OTHER of the
# machine's CPU time, or the hypervisor stole more than BUSY_STEAL of it.
BUSY_OTHER = 0.10
BUSY_STEAL = 0.05


class Run:
    """One perftest run: a result line of guest-perftest.sh."""

    def __init__(self, kv):
        self.setup, self.mtu, self.test = kv["setup"], int(kv["mtu"]), kv["test"]
        self.size, self.rep, self.unit = int(kv["size"]), int(kv["rep"]), kv["unit"]
        num = lambda v: None if v in ("-", "fail", "") else float(v)
        self.value, self.p99, self.max = num(kv["value"]), num(kv["p99"]), num(kv["max"])
        self.other = self.steal = self.load0 = self.load1 = None
        h0, h1 = kv.get("h0", "").split(","), kv.get("h1", "").split(",")
        if len(h0) == 7 and len(h1) == 7:
            # <time> <load1> <total> <busy> <steal> <bench> <ncpu>
            d = [float(b) - float(a) for a, b in zip(h0, h1)]
            total = d[2]
            if total > 0:
                self.other = max(0.0, d[3] - d[5]) / total
                self.steal = d[4] / total
            self.load0, self.load1 = float(h0[1]), float(h1[1])

    @property
    def busy(self):
        return ((self.other or 0) > BUSY_OTHER) or ((self.steal or 0) > BUSY_STEAL)


def read_runs(path):
    """(words, Run) for each result line ("res" and key=value words) in path."""
    out = []
    for line in open(path):
        f = line.split()
        if not f or f[0] != "res":
            continue
        kv = dict(w.split("=", 1) for w in f[1:] if "=" in w)
        try:
            out.append((kv, Run(kv)))
        except (KeyError, ValueError):
            print(f"report: skipped a malformed line: {line.strip()}", file=sys.stderr)
    return out


def tails_report(path, reps, window):
    """bench/results/tails.md (make bench-tails) from bench/tails.sh's lines:
    the result lines with a sched= word, and "delays sched=S n p50 p90 p99 max"."""
    delays = {}
    for line in open(path):
        w = line.split()
        if w and w[0] == "delays":
            delays[w[1].split("=", 1)[1]] = w[2:]
    runs = read_runs(path)
    out = ["# Latency tails: the emulator threads' scheduling (make bench-tails)", "",
           f"Two qrdma guests, netdev MTU 1500, {reps} runs of each test at 5,000 iterations; "
           "microseconds, the median of the runs with their range.", "",
           "| emulator threads | test | typical | p99 | max |", "|---|---|---|---|---|"]
    for s in delays:
        for t in ("write_lat", "send_lat"):
            mine = [r for kv, r in runs if kv.get("sched") == s and r.test == t]
            ok = [r for r in mine if r.value is not None]
            fails = len(mine) - len(ok)

            def col(attr):
                v = [getattr(r, attr) for r in ok]
                return f"{statistics.median(v):.0f} ({min(v):.0f}–{max(v):.0f})" if v else "-"
            extra = f" ({fails} failed)" if fails else ""
            out.append(f"| {s} | {t} 8 B{extra} | {col('value')} | {col('p99')} | {col('max')} |")
    other = [100 * r.other for _, r in runs if r.other is not None]
    if other:
        out += ["", f"Other processes used {statistics.median(other):.1f}% of the host's CPU "
                f"during a run (median; at most {max(other):.1f}%)."]
    out += ["", f"The main loops' scheduling delay, from wakeup to running, over a {window} s "
            "window of the same runs (perf sched; milliseconds):", "",
            "| emulator threads | wakeups | p50 | p90 | p99 | max |", "|---|---|---|---|---|---|"]
    for s, (n, p50, p90, p99, mx) in delays.items():
        out.append(f"| {s} | {n} | {p50} | {p90} | {p99} | {mx} |")
    return out


def doorbells_report(path, rounds):
    """bench/results/doorbells.md (make bench-doorbells) from bench/doorbells.sh's
    lines: result lines with ioeventfd= and round= words."""
    runs = read_runs(path)
    out = ["# SQ doorbells: MMIO writes against eventfds (make bench-doorbells)", "",
           f"Two qrdma guests, the data path in an IOThread (`iothread=dp0`), netdev MTU "
           f"1500, booted {rounds} times with `ioeventfd=off` and {rounds} times with "
           "`ioeventfd=on`, alternately, each boot running every test once; the median of "
           "the boots with their range, and on/off of the medians. Under TCG the vCPU "
           "holds the BQL for the doorbell write in both (docs/backends.md, \"Doorbells "
           "without the BQL\").", "",
           "| test | size | unit | ioeventfd=off | ioeventfd=on | on/off |",
           "|---|---|---|---|---|---|"]
    keys = []
    for kv, r in runs:
        if (r.test, r.size, r.unit) not in keys:
            keys.append((r.test, r.size, r.unit))
    for test, size, unit in keys:
        med = {}
        cells = []
        for cfg in ("off", "on"):
            mine = [r for kv, r in runs if kv.get("ioeventfd") == cfg and r.test == test
                    and r.size == size]
            v = [r.value for r in mine if r.value is not None]
            fails = len(mine) - len(v)
            extra = f", {fails} failed" if fails else ""
            if v:
                med[cfg] = statistics.median(v)
                cells.append(f"{med[cfg]:.1f} ({min(v):.1f}–{max(v):.1f}{extra})")
            else:
                cells.append(f"-{extra}")
        ratio = f"{med['on'] / med['off']:.2f}" if len(med) == 2 and med["off"] else "-"
        out.append(f"| {test} | {size} | {unit} | {cells[0]} | {cells[1]} | {ratio} |")
    other = [100 * r.other for _, r in runs if r.other is not None]
    busy = sum(1 for _, r in runs if r.busy)
    if other:
        out += ["", f"Other processes used {statistics.median(other):.1f}% of the host's CPU "
                f"during a run (median; at most {max(other):.1f}%); {busy} of {len(runs)} runs "
                "were on a busy machine."]
    return out


if len(sys.argv) > 1 and sys.argv[1] == "--doorbells":
    print("\n".join(doorbells_report(*sys.argv[2:4])))
    sys.exit(0)

if len(sys.argv) > 1 and sys.argv[1] == "--tails":
    print("\n".join(tails_report(*sys.argv[2:5])))
    sys.exit(0)

if len(sys.argv) > 1 and sys.argv[1] == "--native":
    native_raw, out_md, note = sys.argv[2:5]
    with open(out_md, "w") as out:
        out.write("# make bench-native: the transport and the device core without VMs\n\n")
        out.write(f"{note}\n\n{NATIVE_NOTE}\n\n")
        out.write("\n".join(native_table(native_raw)) + "\n")
    print(open(out_md).read())
    sys.exit(0)

raw, limits_file, outdir, machine = sys.argv[1:5]
native_raw = sys.argv[5] if len(sys.argv) > 5 else None

runs = [r for _, r in read_runs(raw)]

limits = {}
for line in open(limits_file):
    f = line.split()
    if len(f) >= 4 and f[0] == "limit":
        limits[f[1]] = (float(f[2]), " ".join(f[3:]))

TESTS = ["write_bw", "read_bw", "send_bw", "msg_rate", "write_lat", "send_lat", "read_lat"]
mtus = sorted({r.mtu for r in runs})
keys = sorted({(r.test, r.size) for r in runs},
              key=lambda k: (TESTS.index(k[0]) if k[0] in TESTS else 99, k[1]))
by = collections.defaultdict(list)          # (setup, mtu, test, size) -> [Run]
for r in runs:
    by[(r.setup, r.mtu, r.test, r.size)].append(r)


def values(setup, mtu, test, size, attr="value"):
    return [getattr(r, attr) for r in by[(setup, mtu, test, size)] if getattr(r, attr) is not None]


def med(v):
    return statistics.median(v) if v else None


def fmt(v):
    if v is None:
        return "n/a"
    return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"


def spread(v):
    """median (min-max)"""
    if not v:
        return "n/a"
    return f"{fmt(med(v))} ({fmt(min(v))}-{fmt(max(v))})" if len(v) > 1 else fmt(v[0])


def pair_ratios(mtu, test, size, attr="value"):
    """qrdma / rxe, repetition by repetition: the runs of a pair ran back to
    back, so a drift of the machine's speed cancels in each ratio."""
    q = {r.rep: getattr(r, attr) for r in by[("qrdma", mtu, test, size)]}
    x = {r.rep: getattr(r, attr) for r in by[("rxe", mtu, test, size)]}
    return [q[k] / x[k] for k in sorted(q) if q[k] is not None and x.get(k)]


def roce_mtu(mtu):
    """The RoCE path MTU a netdev MTU gives: the largest IBTA MTU that fits
    after 96 bytes of headers (GRH 40, UDP 8, BTH 12, XRC ETH 4, atomic
    ETH 28, ICRC 4), as the kernel's iboe_get_mtu() reckons it."""
    for m in (4096, 2048, 1024, 512, 256):
        if mtu - 96 >= m:
            return m
    return 256


# Issue 14's targets: (MTU, test, size, attribute, "min"|"max", bound, what)
TARGETS = [
    (1500, "write_bw", 65536, "value", "min", 25, "ib_write_bw 64 KB, RoCE MTU 1024: at least 25x"),
    (9000, "write_bw", 65536, "value", "min", 40, "ib_write_bw 64 KB, RoCE MTU 4096: at least 40x"),
    (1500, "send_bw", 4096, "value", "min", 5, "ib_send_bw 4 KB: at least 5x"),
    (9000, "send_bw", 4096, "value", "min", 5, "ib_send_bw 4 KB, RoCE MTU 4096: at least 5x"),
    (1500, "write_lat", 8, "value", "max", 0.02, "ib_write_lat 8 B typical: at most 0.02x"),
    (1500, "write_lat", 8, "p99", "max", 0.1, "ib_write_lat 8 B p99: at most 0.1x"),
    (9000, "write_lat", 8, "value", "max", 0.02, "ib_write_lat 8 B typical, MTU 9000: at most 0.02x"),
    (9000, "write_lat", 8, "p99", "max", 0.1, "ib_write_lat 8 B p99, MTU 9000: at most 0.1x"),
]

out = ["# make bench: qrdma against soft-RoCE (rxe) in the same guests", "", machine, ""]
busy = [r for r in runs if r.busy]
measured = [r for r in runs if r.other is not None]
if busy:
    out += [f"**Warning: {len(busy)} of {len(runs)} runs ran while the machine was busy** "
            f"(other processes used more than {BUSY_OTHER:.0%} of its CPU time, or more than "
            f"{BUSY_STEAL:.0%} was stolen, between the client's two reads of the host's load); "
            "their rows say how many. Compare ratios, not absolute figures.", ""]
if len(measured) < len(runs):
    out += [f"The host's load could not be read around {len(runs) - len(measured)} runs.", ""]
if measured:
    others = [r.other for r in measured]
    steals = [r.steal for r in measured]
    loads = [x for r in measured for x in (r.load0, r.load1)]
    out += ["Host during the runs (between the client's two reads): CPU used by processes "
            f"other than the two guests' QEMUs {100 * med(others):.1f}% of the machine "
            f"(median; max {100 * max(others):.1f}%), stolen {100 * med(steals):.1f}% "
            f"(max {100 * max(steals):.1f}%), load average (1 min, which counts the guests' "
            f"own vCPU threads) {min(loads):.2f} to {max(loads):.2f}.", ""]

out += ["Each row: the median over the repetitions and, in brackets, the smallest and "
        "largest (the spread). qrdma and rxe ran alternately in the same two guests "
        "(qrdma, rxe, qrdma, rxe ...); ratio = qrdma / rxe, per pair of neighbouring runs, "
        "median (min-max) of those pairs. Bandwidth in MiB/s (perftest's BW average); "
        "latency in microseconds (t_typical, the median of the run's iterations, its 99th "
        "percentile and its maximum); message rate in Mpps.", ""]

memcpy = limits.get("memcpy_64MiB", (None,))[0]
for mtu in mtus:
    out += [f"## Netdev MTU {mtu} (RoCE path MTU {roce_mtu(mtu)})", ""]
    out += ["| test | size (B) | unit | qrdma | rxe | ratio | memcpy fraction | notes |",
            "|---|---:|---|---:|---:|---:|---:|---|"]
    lat_rows = []
    for test, size in keys:
        rs = by[("qrdma", mtu, test, size)] + by[("rxe", mtu, test, size)]
        if not rs:
            continue
        unit = rs[0].unit
        q, x = values("qrdma", mtu, test, size), values("rxe", mtu, test, size)
        ratio = pair_ratios(mtu, test, size)
        frac = "-"
        if unit == "MiB/s" and memcpy and q:
            frac = f"{med(q) * 1.048576 / 1000 / memcpy:.4f}"
        note = []
        for s in ("qrdma", "rxe"):
            nf = sum(1 for r in by[(s, mtu, test, size)] if r.value is None)
            nb = sum(1 for r in by[(s, mtu, test, size)] if r.busy)
            if nf:
                note.append(f"{s} failed {nf}x")
            if nb:
                note.append(f"{s} busy {nb}x")
        out.append(f"| {test} | {size} | {unit} | {spread(q)} | {spread(x)} | {spread(ratio)} | "
                   f"{frac} | {', '.join(note)} |")
        if test.endswith("_lat"):
            lat_rows.append(
                f"| {test} | {size} | {spread(values('qrdma', mtu, test, size, 'p99'))} | "
                f"{spread(values('rxe', mtu, test, size, 'p99'))} | "
                f"{spread(pair_ratios(mtu, test, size, 'p99'))} | "
                f"{fmt(med(values('qrdma', mtu, test, size, 'max')))} | "
                f"{fmt(med(values('rxe', mtu, test, size, 'max')))} |")
    if lat_rows:
        out += ["", "Latency tails (microseconds): the 99th percentile and the maximum of "
                "each run's iterations, medians (min-max) over the repetitions.", "",
                "| test | size (B) | qrdma p99 | rxe p99 | ratio p99 | qrdma max (median) | "
                "rxe max (median) |", "|---|---:|---:|---:|---:|---:|---:|"] + lat_rows
    out.append("")

out += ["## The issue's targets", "",
        "Checked here, never by a timed test: the median of the pairwise ratios.", "",
        "| target | measured ratio | met |", "|---|---:|---|"]
for mtu, test, size, attr, kind, bound, what in TARGETS:
    v = med(pair_ratios(mtu, test, size, attr))
    met = "n/a" if v is None else "yes" if (v >= bound if kind == "min" else v <= bound) else "no"
    out.append(f"| {what} | {fmt(v)} | {met} |")
out.append("")

out += ["## Host limits", "", "| limit | value |", "|---|---:|"]
for k, (v, u) in sorted(limits.items()):
    out.append(f"| {k} | {v:g} {u} |")
if native_raw and os.path.exists(native_raw):
    out += ["", "## Native microbenchmarks (no VM)", "", NATIVE_NOTE, ""]
    out += native_table(native_raw)
out += ["", "![bandwidth and latency](bench.png)", ""]

os.makedirs(outdir, exist_ok=True)
with open(os.path.join(outdir, "README.md"), "w") as f:
    f.write("\n".join(out))

# gnuplot: per MTU, each test's median against size, both setups.
series_bw, series_lat = [], []
for mtu in mtus:
    for setup, style in (("qrdma", "lp pt 7"), ("rxe", "lp pt 5 dt 2")):
        for test in TESTS:
            pts = [(size, med(values(setup, mtu, test, size))) for t, size in keys if t == test]
            pts = [(s, v) for s, v in pts if v is not None]
            if not pts:
                continue
            path = os.path.join(outdir, f"{setup}-{mtu}-{test}.dat")
            with open(path, "w") as dat:
                dat.writelines(f"{s} {v}\n" for s, v in pts)
            entry = f"'{path}' using 1:2 with {style} title '{setup} MTU {mtu} {test}'"
            (series_lat if test.endswith("_lat") else series_bw).append(entry)

# A panel with no series (a matrix without bandwidth or latency tests)
# says so: gnuplot refuses a plot with no defined point.
EMPTY_PANEL = """unset logscale y
set yrange [0:1]
set label 1 'not measured in this run' at graph 0.5,0.5 center
plot 2 notitle
unset label 1
set autoscale y
set logscale y"""


def panel(series):
    return "plot " + ", ".join(series) if series else EMPTY_PANEL


gp = f"""
set terminal png size 1200,500 noenhanced
set output '{os.path.join(outdir, "bench.png")}'
set multiplot layout 1,2 title 'qrdma vs rxe, same guests, interleaved (medians)'
set logscale x 2
set logscale y
set grid
set key left top
set xlabel 'message size (bytes)'
set ylabel 'MiB/s'
set title 'bandwidth'
set xtics ("64" 64, "256" 256, "1K" 1024, "4K" 4096, "16K" 16384, "64K" 65536, "256K" 262144, "1M" 1048576)
{panel(series_bw)}
set ylabel 'microseconds'
set title 'latency (typical)'
set key right center
set xtics ("8" 8, "32" 32, "128" 128, "512" 512, "2K" 2048, "4K" 4096)
{panel(series_lat)}
unset multiplot
"""
with open(os.path.join(outdir, "bench.gp"), "w") as f:
    f.write(gp)
subprocess.run(["gnuplot", os.path.join(outdir, "bench.gp")], check=True)
print(open(os.path.join(outdir, "README.md")).read())
