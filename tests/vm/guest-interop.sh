#!/bin/bash
# Interop with Linux soft-RoCE, run in both guests by test-interop.sh:
# guest 0 has qrdma (qrdma0), guest 1 virtio-net with rdma_rxe (rxe0), on
# one segment. Every tool runs twice, once with its server on each side,
# and both exit statuses count: the rdma-core pingpongs (RC, UC, UD, SRQ;
# exit status only, their -c proves no data), qrdma-pingpong RC, UC and UD
# (every byte checked), perftest WRITE, READ (as many reads in flight as
# each side offers), SEND and atomics without rdma_cm and WRITE with it
# (-R), rping with its data verified (-V), ucmatose, udaddy, mckey (UD
# multicast; the receiver must poll all its messages), rstream and
# riostream (exit status), and qrdma-bulk: 256 MB written by
# qrdma into soft-RoCE's memory and read back, 64 MB the other way, every
# byte compared. The proof that qrdma's wire is standard RoCEv2.
#
# An argument (an extended regular expression) runs only the steps whose
# names match it, e.g. "mckey" (test-interop.sh passes it on).
. "$(dirname "$0")/guest-lib.sh"
me=$QRDMA_GUEST n=0 only=${1:-}
case $me in 0) dev=qrdma0 ;; *) dev=rxe0 ;; esac
start=$(date +%s)
vm_barrier up 150

# step NAME SERVER CMD...: CMD on guest SERVER, then CMD plus SERVER's
# address on the other guest once the server listens (wait_serving). @DEV@ in
# CMD is each side's own device, @N@ the step's number; a CMD with @SRV@
# gets the address there instead (the server an empty word).
step() {
    local name=$1 srv=$2 log s rc src t0 limit=${step_limit:-120} args=() addr
    shift 2
    n=$((n + 1))
    if [ -n "$only" ] && ! [[ $name =~ $only ]]; then
        return 0
    fi
    log=/tmp/step-$n.log
    addr=10.0.0.$((srv + 1))
    [ "$me" = "$srv" ] && addr=""
    for a in "$@"; do a=${a//@DEV@/$dev}; a=${a//@N@/$n}; args+=("${a//@SRV@/$addr}"); done
    [[ "$*" == *@SRV@* ]] || [ -z "$addr" ] || args+=("$addr")
    t0=$(date +%s)
    if [ "$me" = "$srv" ]; then
        timeout "$limit" "${args[@]}" > "$log" 2>&1 &
        s=$!
        wait_serving "$s" "${serve_limit:-10}"
        vm_signal "srv-$n"
        vm_wait "cli-$n" $((limit + 30))
        wait_for 15 bash -c "! kill -0 $s 2>/dev/null"
        kill "$s" 2>/dev/null
        wait "$s"
        rc=$?
        echo "$rc" > "$QRDMA_JOB/srv-rc-$n.tmp" && mv "$QRDMA_JOB/srv-rc-$n.tmp" "$QRDMA_JOB/srv-rc-$n"
        # The client reports the step; a failed server shows its own end here.
        if [ "$rc" != 0 ]; then
            echo "step $n, $name: server exited $rc"
            tail -n 30 "$log" | sed 's/^/  | /'
        fi
        return 0
    fi
    if vm_wait "srv-$n" 120; then
        timeout "$limit" "${args[@]}" > "$log" 2>&1
        rc=$?
    else
        rc=1
    fi
    vm_signal "cli-$n"
    wait_for $((limit + 60)) test -e "$QRDMA_JOB/srv-rc-$n"
    src=$(cat "$QRDMA_JOB/srv-rc-$n" 2>/dev/null || echo none)
    check "step $n, $name: client exited $rc, server $src ($(($(date +%s) - t0))s)" \
        test "$rc" = 0 -a "$src" = 0
    if [ "$rc" != 0 ] || [ "$src" != 0 ]; then
        tail -n 20 "$log" | sed 's/^/  | /'
    else
        grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+|bytes in|every byte|^client:|MB' "$log" | tail -n 3 |
            sed 's/^/  | /'
    fi
}

# both NAME CMD...: step with the server on qrdma, then on soft-RoCE.
both() {
    local name=$1
    shift
    step "$name, qrdma serves" 0 "$@"
    step "$name, soft-RoCE serves" 1 "$@"
}

both "ibv_rc_pingpong 4 KB" ibv_rc_pingpong -d @DEV@ -g 1 -s 4096 -n 100
both "ibv_uc_pingpong 4 KB" ibv_uc_pingpong -d @DEV@ -g 1 -s 4096 -n 100
both "ibv_ud_pingpong 1 KB" ibv_ud_pingpong -d @DEV@ -g 1 -s 1024 -n 100
both "ibv_srq_pingpong" ibv_srq_pingpong -d @DEV@ -g 1 -n 50
both "qrdma-pingpong RC, every byte checked" qrdma-pingpong -d @DEV@ -g 1 -t rc -s 4096 -n 100
both "qrdma-pingpong UC, every byte checked" qrdma-pingpong -d @DEV@ -g 1 -t uc -s 4096 -n 100
both "qrdma-pingpong UD, every byte checked" qrdma-pingpong -d @DEV@ -g 1 -t ud -s 1024 -n 100
both "ib_write_bw 64 KB" ib_write_bw -d @DEV@ -x 1 -F -s 65536 -n 100
# Each side asks the other's max_qp_rd_atom (soft-RoCE offers 128).
both "ib_read_bw 64 KB" ib_read_bw -d @DEV@ -x 1 -F -s 65536 -n 100
both "ib_send_bw 64 KB" ib_send_bw -d @DEV@ -x 1 -F -s 65536 -n 100
both "ib_atomic_bw" ib_atomic_bw -d @DEV@ -x 1 -F -n 100
both "ib_write_bw -R (rdma_cm) 4 KB" ib_write_bw -d @DEV@ -R -F -s 4096 -n 100
both "ib_write_lat 8 B" ib_write_lat -d @DEV@ -x 1 -F -s 8 -n 100
# rping: -V checks every ping's data; the client names the server with -a.
both "rping -V, 20 pings of 4 KB" sh -c \
    'if [ -z "$0" ]; then exec rping -s -V -C 20 -S 4096; fi; exec rping -c -V -C 20 -S 4096 -a "$0"' @SRV@
# The rest of librdmacm's examples: connections (ucmatose), UD with SIDR
# (udaddy), rsockets streams (rstream, riostream); the client names the
# server with -s.
both "ucmatose" sh -c 'exec ucmatose ${0:+-s "$0"}' @SRV@
both "udaddy" sh -c 'exec udaddy ${0:+-s "$0"}' @SRV@
# mckey_side GROUP STEP SERVER: mckey's receiver (SERVER empty) or sender
# on multicast group GROUP. The receiver joins and, once it waits for
# data ("receiving data transfers"), writes /job/mckey-ready-STEP; the
# sender starts only then (a datagram sent before the join is lost). The
# receiver prints "data transfers complete" only after it has polled all
# of its -C completions (a lost datagram leaves it polling until the
# step's timeout), and each side must say so and exit 0.
mckey_side() {
    local group=$1 ready=$QRDMA_JOB/mckey-ready-$2 log=/tmp/mckey-$2.log rc pid
    if [ -z "$3" ]; then
        stdbuf -oL mckey -m "$group" -b "$QRDMA_IP" -C 10 > "$log" 2>&1 &
        pid=$!
        wait_for 60 grep -q "receiving data transfers" "$log" && touch "$ready"
        # The sender is done within seconds of "ready"; the step gives the
        # server 15 s more: say what the port counted before that ends.
        if ! wait_for 12 bash -c "! kill -0 $pid 2>/dev/null"; then
            echo "mckey: the receiver still waits for its messages; the port's counters:"
            grep -H . /sys/class/infiniband/*/ports/1/hw_counters/* 2>/dev/null |
                sed 's|.*/hw_counters/||' | grep -v ':0$'
            kill "$pid"
        fi
        wait "$pid"
        rc=$?
    elif wait_for 90 test -e "$ready"; then
        mckey -m "$group" -s -b "$QRDMA_IP" -C 10 > "$log" 2>&1
        rc=$?
    else
        echo "mckey: the receiver did not get ready"
        return 1
    fi
    cat "$log"
    [ "$rc" = 0 ] && grep -q "^data transfers complete" "$log"
}
export -f mckey_side wait_for
# Only soft-RoCE receiving: with soft-RoCE sending, Linux 6.12's rdma_rxe
# completes every send but puts few or none of the datagrams on the wire
# (its own sent_pkts, the guest's IP counters and a capture on its NIC agree;
# two soft-RoCE guests lose them alike), so that direction would test
# rdma_rxe, not qrdma (docs/features.md).
# The receiver joins a group and listens for nothing: 2 s to start.
serve_limit=2 step "mckey, 10 datagrams to 239.1.1.N, soft-RoCE serves" 1 \
    bash -c 'mckey_side "239.1.1.$1" "$1" "$0"' @SRV@ @N@
both "rstream" sh -c 'exec rstream -S 65536 -C 100 ${0:+-s "$0"}' @SRV@
both "riostream" sh -c 'exec riostream -S 65536 -C 100 ${0:+-s "$0"}' @SRV@
step_limit=300
step "qrdma-bulk 256 MB WRITE+READ into soft-RoCE" 1 qrdma-bulk -d @DEV@ -g 1 -m 256
step "qrdma-bulk 64 MB WRITE+READ into qrdma" 0 qrdma-bulk -d @DEV@ -g 1 -m 64
echo "interop: $n steps in $(($(date +%s) - start))s"
finish interop
