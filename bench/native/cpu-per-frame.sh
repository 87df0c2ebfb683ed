#!/bin/bash
# Where (c)'s 64 KB RDMA WRITE stands against its wire: the CPU time both
# processes spend per frame, in user space (the device core, the transport,
# the ICRC, the payload copies) and in the kernel (the Unix datagram
# sockets), for core_bench --dgram's write_bw of 64 KB and for wire_bw,
# the same sockets carrying 4154-byte frames with no device. Runs the two
# alternately REPS times and prints one line per run and the medians.
#
#   bench/native/cpu-per-frame.sh CORE_BENCH [REPS] [SECONDS]
#
# CPU time is the processes' own (bash's time of core_bench and its child,
# which it waits for), over the whole run (set-up and warm-up included,
# a few percent); the rates are core_bench's own, over the timed part.
# Both move with the machine's load (a process that waits for a CPU finds
# more frames queued and makes fewer system calls per frame), so the
# load average is printed around the runs.
set -euo pipefail

bin=${1:?usage: cpu-per-frame.sh CORE_BENCH [REPS] [SECONDS]}
reps=${2:-3}
secs=${3:-2}
# the device's case and its wire's: 64 KB WRITEs, and the frames they make
device_case=write_bw:65536
wire_case=wire_bw:4154
work=$(mktemp -d "${TMPDIR:-/tmp}/qrdma-cpf.XXXXXX")
trap 'rm -rf "$work"' EXIT

# one CASE: "CASE GB/s frames user-us/frame system-us/frame"
one() {
    local case=$1 out="$work/out" t="$work/time" frames rate user sys
    TIMEFORMAT='%R %U %S'
    { time "$bin" --dgram -s "$secs" -t "$case" > "$out"; } 2> "$t"
    # "(A: N frames sent, N received, ...; B: N sent, N received, ...)":
    # every frame is sent once.
    frames=$(sed -n 's/^(A: \([0-9]*\) frames sent, .*; B: \([0-9]*\) sent, .*/\1 \2/p' "$out" |
        awk '{ print $1 + $2 }')
    rate=$(awk '$1 == "native" { print $7 }' "$out")
    if [ -z "$frames" ] || [ "$frames" -eq 0 ] || [ -z "$rate" ]; then
        cat "$out" >&2
        echo "cpu-per-frame: no frame count or rate from $bin -t $case" >&2
        exit 1
    fi
    read -r _ user sys < "$t"
    awk -v c="$case" -v r="$rate" -v f="$frames" -v u="$user" -v s="$sys" \
        'BEGIN { printf "%s %.3f %d %.3f %.3f\n", c, r, f, u * 1e6 / f, s * 1e6 / f }'
}

echo "core_bench --dgram, $reps alternating runs of $secs s per case; load average" \
    "$(cut -d' ' -f1-3 /proc/loadavg) at the start"
printf '%-14s %8s %10s %12s %12s %12s\n' case GB/s frames "user us/fr" "sys us/fr" "total us/fr"
for _ in $(seq "$reps"); do
    for case in "$device_case" "$wire_case"; do
        one "$case" | tee -a "$work/all" |
            awk '{ printf "%-14s %8.3f %10.0f %12.3f %12.3f %12.3f\n", $1, $2, $3, $4, $5, $4 + $5 }'
    done
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
# Medians per case, and what the device adds per frame over the wire alone.
awk -v d="$device_case" -v w="$wire_case" '
    { n[$1]++; gb[$1, n[$1]] = $2; us[$1, n[$1]] = $4; sy[$1, n[$1]] = $5 }
    function med(a, c,   k, v, i, j, t) {
        for (i = 1; i <= n[c]; i++) v[i] = a[c, i]
        for (i = 1; i <= n[c]; i++) for (j = i + 1; j <= n[c]; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
        k = int((n[c] + 1) / 2); return v[k]
    }
    END {
        printf "median %-7s %8.3f GB/s, %.3f us user + %.3f us system per frame\n", "(c)", med(gb, d), med(us, d), med(sy, d)
        printf "median %-7s %8.3f GB/s, %.3f us user + %.3f us system per frame\n", "wire", med(gb, w), med(us, w), med(sy, w)
        printf "(c) / wire: %.0f%% of the rate; the device adds %.3f us of user time per frame and %+.3f us of system time\n",
            100 * med(gb, d) / med(gb, w), med(us, d) - med(us, w), med(sy, d) - med(sy, w)
    }' "$work/all"
