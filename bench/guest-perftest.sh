#!/bin/bash
# Runs inside a vm-run guest (two guests): the perftest matrix of `make
# bench`. Guest 0 serves, guest 1 is the client; each test is one server /
# client pair started in lockstep through /job. Result lines go to
# $BENCH_OUT (on the shared directory) as
#   <setup> <test> <size> <rep> <value> <unit>
# and a test that fails is recorded as value "fail" with its log kept.
#
# Environment: BENCH_SETUP (qrdma | rxe), BENCH_DEV (IB device name),
# BENCH_REPS, BENCH_OUT, BENCH_LOGS.
. /mnt/host/guest-lib.sh

setup=${BENCH_SETUP:?} dev=${BENCH_DEV:?} reps=${BENCH_REPS:-3}
out=${BENCH_OUT:?} logs=${BENCH_LOGS:?}
mkdir -p "$logs"

# test-name  perftest-binary  extra-arguments  sizes
matrix=(
    "write_bw  ib_write_bw  -n_200      64 4096 65536 1048576"
    "read_bw   ib_read_bw   -n_200      64 4096 65536 1048576"
    "send_bw   ib_send_bw   -n_200      64 4096 65536 1048576"
    "write_lat ib_write_lat -n_200      8 4096"
    "send_lat  ib_send_lat  -n_200      8 4096"
    "read_lat  ib_read_lat  -n_200      8 4096"
    "msg_rate  ib_write_bw  -n_2000_-q_4 64"
)

# The last data line of perftest's table: bandwidth tests report MiB/s in
# column 4 (BW average), latency tests the median (t_typical) in column 5.
parse() {
    local kind=$1 log=$2
    awk -v kind="$kind" '
        /^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { line = $0 }
        END {
            if (line == "") exit 1
            split(line, f, " ")
            if (kind == "lat") print f[5]; else if (kind == "rate") print f[5]; else print f[4]
        }' "$log"
}

n=0
for row in "${matrix[@]}"; do
    read -r name bin extra sizes <<<"$row"
    extra=${extra//_/ }
    case "$name" in *_lat) kind=lat unit=us ;; msg_rate) kind=rate unit=Mpps ;; *) kind=bw unit=MiB/s ;; esac
    for size in $sizes; do
        iters=$extra
        # Big messages: fewer iterations keep a TCG run in minutes.
        [ "$size" -ge 1048576 ] && iters="-n 20"
        for rep in $(seq 1 "$reps"); do
            n=$((n + 1))
            tag="$name-$size-$rep"
            log="$logs/$setup-$tag-g$QRDMA_GUEST.log"
            if [ "$QRDMA_GUEST" = 0 ]; then
                timeout 120 "$bin" -d "$dev" -R -F -s "$size" $iters >"$log" 2>&1 &
                server=$!
                vm_signal "srv-$n"
                # A client that failed to connect leaves the server listening:
                # end it once the client is done.
                vm_wait "cli-$n" 300 || exit 1
                wait_for 10 bash -c "! kill -0 $server 2>/dev/null"
                kill "$server" 2>/dev/null
                wait "$server" 2>/dev/null
                # The client records the result: a failed server fails it too.
                echo "$?" > "$QRDMA_JOB/srv-rc-$n.tmp" && mv "$QRDMA_JOB/srv-rc-$n.tmp" "$QRDMA_JOB/srv-rc-$n"
            else
                vm_wait "srv-$n" 300 || exit 1
                sleep 2
                timeout 120 "$bin" -d "$dev" -R -F -s "$size" $iters "$(peer_ip)" >"$log" 2>&1
                rc=$?
                vm_signal "cli-$n"
                wait_for 30 test -e "$QRDMA_JOB/srv-rc-$n"
                src=$(cat "$QRDMA_JOB/srv-rc-$n" 2>/dev/null || echo none)
                if [ "$rc" -eq 0 ] && [ "$src" = 0 ] && v=$(parse "$kind" "$log"); then
                    echo "$setup $name $size $rep $v $unit" >> "$out"
                    echo "bench: $setup $name $size B rep $rep: $v $unit"
                else
                    echo "$setup $name $size $rep fail $unit" >> "$out"
                    echo "bench: $setup $name $size B rep $rep: failed (rc $rc, server $src, ${log##*/})"
                fi
            fi
            vm_barrier "done-$n" 300 || exit 1
        done
    done
done
exit 0
