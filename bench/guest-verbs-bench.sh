#!/bin/bash
# Runs inside a vm-run guest whose NIC is virtio-net with soft-RoCE (rxe0),
# for bench/run-verbs-bench.sh: RDMA WRITE bandwidth on rxe0 two ways, run
# by run interleaved (native, qrdma, native, qrdma ...) at each size:
# native, perftest's ib_write_bw server and client on rxe0 in this guest;
# qrdma, qrdma-verbs-bench, two device cores with the verbs backend on the
# same rxe0, one writing into the other's guest RAM (the device's whole
# data path: WQEs from the SQ ring, host work requests, host completions
# into CQEs). Both at the same size, count and send queue depth (8), one
# QP, RoCEv2 on rxe0's IPv4 GID.
#
# Prints one line a run: "bench-verbs: SETUP SIZE REP MIB_PER_S" (0 when
# the run failed, with its output above), and "bench-verbs: done".
# Environment: BENCH_VERBS_SIZES (default "64 4096 65536"), BENCH_REPS
# (default 5), BENCH_VERBS_BYTES (bytes a run moves at the large sizes,
# default 64 MB; at least 2000 and at most 200000 WRITEs a run).
. "$(dirname "$0")/guest-lib.sh"

sizes=${BENCH_VERBS_SIZES:-64 4096 65536}
reps=${BENCH_REPS:-5}
bytes=${BENCH_VERBS_BYTES:-67108864}
depth=8

check "rxe0 is there" wait_for 30 test -e /sys/class/infiniband/rxe0
gid_index=$(ipv4_gid_index rxe0)
check "rxe0 has an IPv4 GID (index '$gid_index')" test -n "$gid_index"
echo "bench-verbs: rxe0 active_mtu $(ibv_devinfo -d rxe0 | sed -n 's/.*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p' | head -n1)"

# native SIZE ITERS: ib_write_bw's average bandwidth in MiB/s (perftest's
# MB is 2^20 bytes), server and client on rxe0; empty if either failed.
native() {
    local s rc_s rc_c
    timeout 120 ib_write_bw -d rxe0 -x "$gid_index" -s "$1" -n "$2" -t "$depth" -F \
        -p 18600 > /tmp/native-s.log 2>&1 &
    s=$!
    sleep 1
    timeout 120 ib_write_bw -d rxe0 -x "$gid_index" -s "$1" -n "$2" -t "$depth" -F \
        -p 18600 127.0.0.1 > /tmp/native-c.log 2>&1
    rc_c=$?
    wait "$s"
    rc_s=$?
    if [ "$rc_c" != 0 ] || [ "$rc_s" != 0 ]; then
        echo "native: client exit $rc_c, server exit $rc_s"
        tail -n 5 /tmp/native-c.log /tmp/native-s.log
        return
    fi
    # the result line: bytes, iterations, peak, average, message rate
    awk -v size="$1" '$1 == size && NF >= 5 { print $4 }' /tmp/native-c.log | tail -n1
}

# qrdma SIZE ITERS: qrdma-verbs-bench's MiB/s; empty if it failed.
qrdma() {
    if ! timeout 300 ./qrdma-verbs-bench rxe0 "$gid_index" "$1" "$2" > /tmp/qrdma.log 2>&1; then
        echo "qrdma-verbs-bench failed:"
        tail -n 5 /tmp/qrdma.log
        return
    fi
    sed -n 's/.*: \([0-9.]*\) MiB\/s.*/\1/p' /tmp/qrdma.log
}

for size in $sizes; do
    iters=$((bytes / size))
    [ "$iters" -ge 2000 ] || iters=2000
    [ "$iters" -le 200000 ] || iters=200000
    for ((rep = 1; rep <= reps; rep++)); do
        for setup in native qrdma; do
            v=$("$setup" "$size" "$iters")
            case "$v" in
            *[!0-9.]* | "") echo "$v"; v=0 ;;
            esac
            echo "bench-verbs: $setup $size $rep $v"
        done
    done
done
echo "bench-verbs: done"
