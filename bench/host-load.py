#!/usr/bin/env python3
"""The host's load, for `make bench`: written where the guests can read it.

Every half second, one line to OUT (replaced atomically):
    <unix time> <load1> <total> <busy> <steal> <bench> <ncpu>
total, busy and steal are the host's cumulative CPU time in clock ticks
(all CPUs, /proc/stat: busy is user, nice, system, irq and softirq; steal
is time the hypervisor gave to others); bench is the CPU time of the
bench's own processes (every process whose command line names MARK: the
two guests' QEMUs). A guest reads the line before and after each run, so
the report can say what else used the machine during that run (busy minus
bench) and how much was stolen, which the load average alone cannot (it
counts the bench's own QEMU threads).

usage: host-load.py OUT MARK
Runs until killed.
"""
import os
import sys
import time


def cpu_ticks():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice
    user, nice, system, idle, iowait, irq, softirq, steal = (v + [0] * 8)[:8]
    busy = user + nice + system + irq + softirq
    return busy + idle + iowait + steal, busy, steal


def bench_pids(mark):
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if mark in f.read():
                    pids.append(p)
        except OSError:
            pass
    return pids


def proc_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])    # utime, stime
    except (OSError, IndexError, ValueError):
        return None


def main():
    out, mark = sys.argv[1], sys.argv[2].encode()
    ncpu = os.cpu_count()
    done = 0            # ticks of bench processes that have exited
    last = {}           # pid -> last ticks seen
    pids, rescan = [], 0.0
    while True:
        now = time.time()
        if now >= rescan:
            pids = sorted(set(pids) | set(bench_pids(mark)))
            rescan = now + 2
        bench = 0
        for pid in list(pids):
            t = proc_ticks(pid)
            if t is None:
                done += last.pop(pid, 0)
                pids.remove(pid)
            else:
                last[pid] = t
                bench += t
        total, busy, steal = cpu_ticks()
        with open("/proc/loadavg") as f:
            load1 = f.read().split()[0]
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{now:.1f} {load1} {total} {busy} {steal} {bench + done} {ncpu}\n")
        os.replace(tmp, out)
        time.sleep(0.5)


if __name__ == "__main__":
    main()
