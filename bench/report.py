#!/usr/bin/env python3
"""Turn `make bench` raw results into bench/results/README.md and a plot.

Input: result lines "<setup> <test> <size> <rep> <value|fail> <unit>" and
host lines "limit <name> <value> <unit>". Output: a Markdown table of
medians per setup with the ratio qrdma/rxe and, for bandwidths, the fraction
of single-core memcpy bandwidth; gnuplot data files and a PNG drawn by
gnuplot (Debian's gnuplot-nox). With NATIVE (the lines of `make
bench-native`), the native microbenchmarks' table too.

With --native, only that table, as bench/results/native.md: lines
"native <bench> <test> <size> <mtu> <msgs/s> <GB/s> <lat median us> <lat p99 us>"
("-" where a column does not apply) from sw_bench and core_bench.

usage: report.py RAW LIMITS OUTDIR MACHINE-NOTE [NATIVE]
       report.py --native NATIVE OUT.md MACHINE-NOTE
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
    if native_raw and os.path.exists(native_raw):
        out.write("\n## Native microbenchmarks (no VM)\n\n")
        out.write(f"{NATIVE_NOTE}\n\n")
        out.write("\n".join(native_table(native_raw)) + "\n")
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
set xtics ("64" 64, "256" 256, "1K" 1024, "4K" 4096, "16K" 16384, "64K" 65536, "256K" 262144, "1M" 1048576)
plot {series(["write_bw", "read_bw", "send_bw"], "MiB/s")}
set ylabel 'microseconds'
set title 'latency'
set key right center
set xtics ("8" 8, "32" 32, "128" 128, "512" 512, "2K" 2048, "4K" 4096)
plot {series(["write_lat", "send_lat", "read_lat"], "us")}
unset multiplot
"""
with open(os.path.join(outdir, "bench.gp"), "w") as f:
    f.write(gp)
subprocess.run(["gnuplot", os.path.join(outdir, "bench.gp")], check=True)
print(open(os.path.join(outdir, "README.md")).read())
