#!/bin/bash
# Runs inside a vm-run guest (two guests, --nic qrdma+virtio-rxe): the
# perftest matrix of `make bench`. Each guest has both devices: qrdma0 on
# 10.0.0.0/24 and soft-RoCE (rxe0 over virtio-net) on 10.0.1.0/24, so the
# two are measured in the same boot, interleaved: for each configuration
# (netdev MTU), test, size and repetition, qrdma then rxe (A B A B ...).
# Guest 0 serves, guest 1 is the client; each run is one server / client
# pair started in lockstep through /job. Before and after each run the
# client reads the host's load (bench/host-load.py writes it to the share).
# Result lines go to $BENCH_OUT (on the shared directory) as key=value
# words:
#   res setup= mtu= test= size= rep= value= unit= p99= max= h0= h1=
# (h0 and h1: the host-load line before and after, commas for spaces); a
# test that fails is recorded as value=fail with its log kept.
#
# Environment: BENCH_SETUPS (default "qrdma rxe"), BENCH_MTUS (netdev MTUs,
# default "1500 9000"), BENCH_REPS (default 5), BENCH_MATRIX (targets, the
# default: the tests the issue's targets name and a few more; full: every
# test at every size; tails: the 8-byte latency tests, 5,000 iterations),
# BENCH_OUT, BENCH_LOGS, BENCH_HOSTLOAD.
. /mnt/host/guest-lib.sh

setups=${BENCH_SETUPS:-qrdma rxe} mtus=${BENCH_MTUS:-1500 9000} reps=${BENCH_REPS:-5}
out=${BENCH_OUT:?} logs=${BENCH_LOGS:?} hostload=${BENCH_HOSTLOAD:?}
mkdir -p "$logs"

# test-name  perftest-binary  extra-arguments  sizes
case "${BENCH_MATRIX:-targets}" in
    targets)
        matrix=(
            "write_bw  ib_write_bw  -n_200      4096 65536"
            "read_bw   ib_read_bw   -n_200      65536"
            "send_bw   ib_send_bw   -n_200      4096 65536"
            "write_lat ib_write_lat -n_1000     8"
            "send_lat  ib_send_lat  -n_1000     8"
        ) ;;
    full)
        matrix=(
            "write_bw  ib_write_bw  -n_200      64 4096 65536 1048576"
            "read_bw   ib_read_bw   -n_200      64 4096 65536 1048576"
            "send_bw   ib_send_bw   -n_200      64 4096 65536 1048576"
            "write_lat ib_write_lat -n_1000     8 4096"
            "send_lat  ib_send_lat  -n_1000     8 4096"
            "read_lat  ib_read_lat  -n_1000     8 4096"
            "msg_rate  ib_write_bw  -n_2000_-q_4 64"
        ) ;;
    tails)
        # the latency tails alone, with enough iterations for a p99
        matrix=(
            "write_lat ib_write_lat -n_5000     8"
            "send_lat  ib_send_lat  -n_5000     8"
        ) ;;
    *) echo "bench: BENCH_MATRIX is targets, full or tails" >&2; exit 2 ;;
esac

# dev_of SETUP, net_of SETUP: the IB device and its segment's /24.
dev_of() { case "$1" in qrdma) echo qrdma0 ;; rxe) echo rxe0 ;; esac; }
net_of() { case "$1" in qrdma) echo 10.0.0 ;; rxe) echo 10.0.1 ;; esac; }
# if_of SETUP: the netdev holding this guest's address on that segment.
if_of() { ip -o -4 addr show | awk -v p="$(net_of "$1")." 'index($4, p) == 1 { print $2; exit }'; }
for s in $setups; do
    [ -n "$(dev_of "$s")" ] || { echo "bench: unknown setup '$s' (qrdma, rxe)" >&2; exit 2; }
    [ -n "$(if_of "$s")" ] || { echo "bench: no interface for $s (vm-run --nic qrdma+virtio-rxe)" >&2; exit 1; }
done

# The last data line of perftest's table. Bandwidth tests: MiB/s in
# column 4 (BW average), or the message rate (Mpps) in column 5; latency
# tests: t_typical (the median), the 99th percentile and t_max, in
# microseconds (columns 5, 8 and 4).
parse() {
    local kind=$1 log=$2
    awk -v kind="$kind" '
        /^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { line = $0 }
        END {
            if (line == "") exit 1
            split(line, f, " ")
            if (kind == "lat") print f[5], f[8], f[4]
            else if (kind == "rate") print f[5], "-", "-"
            else print f[4], "-", "-"
        }' "$log"
}
# host_load: the host's load line, commas for spaces.
host_load() { local l; read -r l < "$hostload" 2>/dev/null; echo "${l// /,}"; }

n=0
for mtu in $mtus; do
    for s in $setups; do
        ip link set dev "$(if_of "$s")" mtu "$mtu" || { echo "bench: cannot set MTU $mtu for $s" >&2; exit 1; }
    done
    n=$((n + 1))
    vm_barrier "mtu-$n" 120 || exit 1
    for s in $setups; do
        echo "bench: MTU $mtu: $(dev_of "$s") active_mtu $(ibv_devinfo -d "$(dev_of "$s")" | awk '/active_mtu/ { print $2; exit }')"
    done
    for row in "${matrix[@]}"; do
        read -r name bin extra sizes <<<"$row"
        extra=${extra//_/ }
        case "$name" in *_lat) kind=lat unit=us ;; msg_rate) kind=rate unit=Mpps ;; *) kind=bw unit=MiB/s ;; esac
        for size in $sizes; do
            iters=$extra
            # Big messages: fewer iterations keep a TCG run in minutes.
            [ "$size" -ge 1048576 ] && iters="-n 20"
            for rep in $(seq 1 "$reps"); do
                for s in $setups; do
                    n=$((n + 1))
                    dev=$(dev_of "$s")
                    tag="$s-$mtu-$name-$size-$rep"
                    log="$logs/$tag-g$QRDMA_GUEST.log"
                    if [ "$QRDMA_GUEST" = 0 ]; then
                        timeout 120 "$bin" -d "$dev" -R -F -s "$size" $iters >"$log" 2>&1 &
                        server=$!
                        # The client connects once the server listens (its
                        # rdma_cm ID in LISTEN): a first run after boot
                        # took more than the client's 2 s to get there, and
                        # the client, rejected, crashed.
                        wait_for 30 sh -c "rdma resource show cm_id 2>/dev/null | grep -q 'state LISTEN.*comm $bin'" ||
                            echo "bench: $bin on $dev not listening after 30 s" >&2
                        vm_signal "srv-$n"
                        # A client that failed to connect leaves the server
                        # listening: end it once the client is done.
                        vm_wait "cli-$n" 300 || exit 1
                        wait_for 10 bash -c "! kill -0 $server 2>/dev/null"
                        kill "$server" 2>/dev/null
                        wait "$server" 2>/dev/null
                        # The client records the result: a failed server fails it too.
                        echo "$?" > "$QRDMA_JOB/srv-rc-$n.tmp" && mv "$QRDMA_JOB/srv-rc-$n.tmp" "$QRDMA_JOB/srv-rc-$n"
                    else
                        vm_wait "srv-$n" 300 || exit 1
                        sleep 2
                        h0=$(host_load)
                        timeout 120 "$bin" -d "$dev" -R -F -s "$size" $iters "$(net_of "$s").1" >"$log" 2>&1
                        rc=$?
                        h1=$(host_load)
                        vm_signal "cli-$n"
                        wait_for 30 test -e "$QRDMA_JOB/srv-rc-$n"
                        src=$(cat "$QRDMA_JOB/srv-rc-$n" 2>/dev/null || echo none)
                        head="res setup=$s mtu=$mtu test=$name size=$size rep=$rep"
                        if [ "$rc" -eq 0 ] && [ "$src" = 0 ] && v=$(parse "$kind" "$log"); then
                            read -r value p99 max <<<"$v"
                            echo "$head value=$value unit=$unit p99=$p99 max=$max h0=$h0 h1=$h1" >> "$out"
                            tail=""
                            [ "$p99" = - ] || tail=" (p99 $p99, max $max)"
                            echo "bench: $s MTU $mtu $name $size B rep $rep: $value $unit$tail"
                        else
                            echo "$head value=fail unit=$unit p99=- max=- h0=$h0 h1=$h1" >> "$out"
                            echo "bench: $s MTU $mtu $name $size B rep $rep: failed (rc $rc, server $src, ${log##*/})"
                        fi
                    fi
                    vm_barrier "done-$n" 300 || exit 1
                done
            done
        done
    done
done
exit 0
