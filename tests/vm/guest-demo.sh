#!/bin/bash
# make demo, inside each of the two guests (scripts/demo.sh): the device as
# rdma-core sees it, then RDMA between the guests: ib_write_bw (64 KB
# WRITEs), ib_write_lat (8 B) and rping with its data verified (-V). Guest
# 0 serves, guest 1 is the client and prints the summary. Every step's exit
# status counts (both sides'); the demo fails if one does.
. "$(dirname "$0")/guest-lib.sh"
me=$QRDMA_GUEST dev=qrdma0 server=10.0.0.1 n=0
vm_barrier up 150

if [ "$me" = 1 ]; then
    echo "== the device in guest $me"
    ibv_devinfo -d "$dev" | grep -E 'hca_id|fw_ver|node_guid|vendor|board_id|port:|state|mtu|link_layer'
fi
vm_barrier shown 60

# demo_step NAME SERVER-CMD... : the server command here on guest 0, the
# same command with the server's address on guest 1, in lockstep; on guest
# 1 the client's output goes to /tmp/demo-NAME.log and the verdict counts
# the server's exit status too.
demo_step() {
    local name=$1 log=/tmp/demo-$1.log s rc src
    shift
    n=$((n + 1))
    if [ "$me" = 0 ]; then
        timeout 180 "$@" > "$log" 2>&1 &
        s=$!
        wait_serving "$s"
        vm_signal "srv-$n"
        vm_wait "cli-$n" 240 || true
        wait_for 15 bash -c "! kill -0 $s 2>/dev/null"
        kill "$s" 2>/dev/null
        wait "$s"
        echo "$?" > "$QRDMA_JOB/srv-rc-$n.tmp" && mv "$QRDMA_JOB/srv-rc-$n.tmp" "$QRDMA_JOB/srv-rc-$n"
        return 0
    fi
    vm_wait "srv-$n" 120 || return 1
    timeout 180 "$@" "$server" > "$log" 2>&1
    rc=$?
    vm_signal "cli-$n"
    wait_for 30 test -e "$QRDMA_JOB/srv-rc-$n"
    src=$(cat "$QRDMA_JOB/srv-rc-$n" 2>/dev/null || echo none)
    if [ "$rc" != 0 ] || [ "$src" != 0 ]; then
        fail "$name: client exit status $rc, server $src"
        tail -n 20 "$log" | sed 's/^/  | /'
        return 1
    fi
}

# The last row of perftest's table: column 4 is the average bandwidth
# (MiB/s), column 5 of the latency table the typical (median) latency (us).
table_col() { awk -v c="$2" '/^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { v = $c } END { if (v == "") exit 1; print v }' "$1"; }

bw="" lat="" rping=""
demo_step write_bw ib_write_bw -d "$dev" -R -F -s 65536 -n 500 &&
    bw=$(table_col /tmp/demo-write_bw.log 4)
demo_step write_lat ib_write_lat -d "$dev" -R -F -s 8 -n 500 &&
    lat=$(table_col /tmp/demo-write_lat.log 5)
# rping: the server side is -s, the client -c -a ADDR; -V checks the data of
# every ping, -C 20 pings, -S 4096 bytes each.
if [ "$me" = 0 ]; then
    demo_step rping rping -s -V -C 20 -S 4096
else
    demo_step rping sh -c 'exec rping -c -V -C 20 -S 4096 -v -a "$0"' &&
        rping=$(grep -c '^ping data: ' /tmp/demo-rping.log)
fi

if [ "$me" = 1 ]; then
    echo
    echo "== summary"
    port=/sys/class/infiniband/$dev/ports/1
    echo "   device:     $dev, port 1 $(cut -d' ' -f2 "$port/state"), $(cat "$port/link_layer"), RoCE v2"
    echo "   GIDs:       $(cat "$port"/gids/{0,1} | tr '\n' ' ')"
    echo "   RDMA WRITE bandwidth, 64 KB messages: ${bw:-failed} MiB/s"
    echo "   RDMA WRITE latency, 8 B, typical:     ${lat:-failed} us"
    echo "   rping, 20 pings of 4 KB verified:     ${rping:-failed} pings"
    if [ -n "$bw" ] && [ -n "$lat" ] && [ "${rping:-0}" -ge 20 ]; then
        echo "   RDMA works between the two guests (TCG guests: figures are not a benchmark; see make bench)."
    else
        fail "a demo step failed"
    fi
fi
finish demo
