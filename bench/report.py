#!/usr/bin/env python3
"""Turn `make bench` raw results into bench/results/README.md and a plot.

Input: result lines "<setup> <test> <size> <rep> <value|fail> <unit>" and
host lines "limit <name> <value> <unit>". Output: a Markdown table of
medians per setup with the ratio qrdma/rxe and, for bandwidths, the fraction
of single-core memcpy bandwidth; gnuplot data files and a PNG drawn by
gnuplot (Debian's gnuplot-nox).

usage: report.py RAW LIMITS OUTDIR MACHINE-NOTE
"""
import collections
import os
import statistics
import subprocess
import sys

raw, limits_file, outdir, machine = sys.argv[1:5]

results = collections.defaultdict(list)     # (setup, test, size) -> [values]
units = {}
failed = collections.Counter()
for line in open(raw):
    f = line.split()
    if len(f) != 6:
        continue
    setup, test, size, _rep, value, unit = f
    units[test] = unit
    if value == "fail":
        failed[(setup, test, int(size))] += 1
    else:
        results[(setup, test, int(size))].append(float(value))

limits = {}
for line in open(limits_file):
    f = line.split()
    if len(f) >= 4 and f[0] == "limit":
        limits[f[1]] = (float(f[2]), " ".join(f[3:]))

tests = ["write_bw", "read_bw", "send_bw", "msg_rate", "write_lat", "send_lat", "read_lat"]
sizes = sorted({k[2] for k in list(results) + list(failed)})


def median(setup, test, size):
    v = results.get((setup, test, size))
    return statistics.median(v) if v else None


def fmt(v):
    if v is None:
        return "n/a"
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


memcpy = limits.get("memcpy_64MiB", (None,))[0]
rows = []
for test in tests:
    for size in sizes:
        q, r = median("qrdma", test, size), median("rxe", test, size)
        nq = failed[("qrdma", test, size)]
        nr = failed[("rxe", test, size)]
        if q is None and r is None and not nq and not nr:
            continue
        unit = units.get(test, "")
        ratio = fmt(q / r) if q is not None and r else "n/a"
        frac = "-"
        if unit == "MiB/s" and memcpy:
            frac = f"{q * 1.048576 / 1000 / memcpy:.4f}" if q is not None else "n/a"
        note = []
        if nq:
            note.append(f"qrdma failed {nq}x")
        if nr:
            note.append(f"rxe failed {nr}x")
        rows.append(f"| {test} | {size} | {unit} | {fmt(q)} | {fmt(r)} | {ratio} | {frac} | {', '.join(note)} |")

os.makedirs(outdir, exist_ok=True)
with open(os.path.join(outdir, "README.md"), "w") as out:
    out.write("# make bench: qrdma against soft-RoCE (rxe) in the guest\n\n")
    out.write(f"{machine}\n\n")
    out.write("Medians over the repetitions. Bandwidth in MiB/s (perftest's BW average), "
              "latency in microseconds (perftest's t_typical), message rate in Mpps. "
              "ratio = qrdma / rxe; memcpy fraction = qrdma bandwidth / single-core "
              "memcpy bandwidth of the host (64 MiB buffers). n/a: the setup could not "
              "run the test (see the notes and the logs in bench/results/logs).\n\n")
    out.write("| test | size (B) | unit | qrdma | rxe | ratio | memcpy fraction | notes |\n")
    out.write("|---|---:|---|---:|---:|---:|---:|---|\n")
    out.write("\n".join(rows) + "\n\n")
    out.write("## Host limits\n\n| limit | value |\n|---|---:|\n")
    for k, (v, u) in sorted(limits.items()):
        out.write(f"| {k} | {v:g} {u} |\n")
    out.write("\n![bandwidth and latency](bench.png)\n")

# gnuplot: bandwidth of write/read/send against size, latency against size.
for setup in ("qrdma", "rxe"):
    for test in tests:
        with open(os.path.join(outdir, f"{setup}-{test}.dat"), "w") as dat:
            for size in sizes:
                v = median(setup, test, size)
                if v is not None:
                    dat.write(f"{size} {v}\n")


def series(tests_, title_unit):
    parts = []
    for setup, style in (("qrdma", "lp pt 7"), ("rxe", "lp pt 5 dt 2")):
        for test in tests_:
            path = os.path.join(outdir, f"{setup}-{test}.dat")
            if os.path.getsize(path):
                parts.append(f"'{path}' using 1:2 with {style} title '{setup} {test}'")
    return ", ".join(parts) or "NaN notitle"


gp = f"""
set terminal png size 1200,500 noenhanced
set output '{os.path.join(outdir, "bench.png")}'
set multiplot layout 1,2 title 'qrdma vs rxe (guests under the same accelerator)'
set logscale x 2
set logscale y
set grid
set key left top
set xlabel 'message size (bytes)'
set ylabel 'MiB/s'
set title 'bandwidth'
plot {series(["write_bw", "read_bw", "send_bw"], "MiB/s")}
set ylabel 'microseconds'
set title 'latency'
plot {series(["write_lat", "send_lat", "read_lat"], "us")}
unset multiplot
"""
with open(os.path.join(outdir, "bench.gp"), "w") as f:
    f.write(gp)
subprocess.run(["gnuplot", os.path.join(outdir, "bench.gp")], check=True)
print(open(os.path.join(outdir, "README.md")).read())
