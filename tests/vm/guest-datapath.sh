#!/bin/bash
# The RDMA data path between guests, run in every guest by test-datapath.sh.
#
# guest-datapath.sh main (2 guests): each step runs a server on guest 0 and
# its client on guest 1 (the same command plus the server's address), in
# lockstep, both exit codes checked: the rdma-core pingpongs (RC, UD, SRQ:
# their exit status only, as their -c compares one constant byte per page
# and does not fail on a mismatch), qrdma-pingpong over RC, UC, UD and an SRQ
# (every byte of every message checked both ways), perftest bandwidth over
# all sizes 2 B..8 MB for WRITE/READ/SEND, atomics, the three latency
# tests, rdma_cm, 8 QPs, CQ events, UD, and qrdma-bulk: 1 GB written, read
# back and compared, with the server's checksum of everything it received
# compared at the end.
#
# guest-datapath.sh faults (2 guests, test-faults.sh): perftest and
# qrdma-bulk under injected loss, duplication and reordering; then the
# peer's process is killed mid-transfer.
#
# guest-datapath.sh backpressure (2 guests, test-backpressure.sh): the
# many-QP SRQ pingpong on a segment whose sockets hold only 10 frames.
#
# guest-datapath.sh capture (3 guests): the device steers RoCEv2 frames to
# its RDMA engine before the LAN function sees them, so a capture on a peer's
# own qrdma netdev holds no RoCE frame (checked on guest 0, whose capture
# must hold the ICMP replies of a ping it sends meanwhile: an empty or
# unreadable capture fails). Guest 2 sits on the same
# segment (vm-run's hub floods every frame to it) and captures in promiscuous
# mode, with a receive ring set by ethtool -G that holds the whole capture
# (none may be dropped), while guests 0 and 1 run a SEND pingpong and a
# small qrdma-bulk; then
# it decodes the capture with tshark (every frame RoCE, the expected BTH
# opcodes, both directions, no malformed frame, no expert error, IP checksums
# right) and checks every frame's ICRC with its own CRC-32 (tshark does not
# verify the ICRC).
. "$(dirname "$0")/guest-lib.sh"
mode=${1:-main}
# check_dp_thread MIN: with QRDMA_DP_IOTHREAD=ID the device runs its data
# path in the IOThread ID (test-datapath.sh's main run, test-backpressure.sh's
# second), which must then have done the work: at least MIN clock ticks of
# CPU time by the end (an IOThread the device does not use has next to none).
# There the SQ doorbells reach the device as eventfd notifications handled
# in that thread, none as MMIO writes under the BQL (ioeventfd=, at least
# MIN notifications: they coalesce); without it, all as MMIO writes.
check_dp_thread() {
    local ticks mmio notified
    mmio=$(vm_qom x-sq-doorbells) notified=$(vm_qom x-sq-notifications)
    if [ -z "${QRDMA_DP_IOTHREAD:-}" ]; then
        check "no iothread=: the SQ doorbells were MMIO writes (${mmio:-unread}), no eventfd notification (${notified:-unread})" \
            test "${mmio:-0}" -ge "$1" -a "${notified:-1}" = 0
        return
    fi
    ticks=$(vm_thread_ticks "$mode-end" "IO $QRDMA_DP_IOTHREAD")
    check "iothread=$QRDMA_DP_IOTHREAD: its thread did the data path's work (${ticks:-no such thread} ticks of CPU time, at least $1)" \
        test "${ticks:-0}" -ge "$1"
    check "iothread=$QRDMA_DP_IOTHREAD: the SQ doorbells reached the device as eventfd notifications (${notified:-unread}, at least $1), none as MMIO writes (${mmio:-unread})" \
        test "${notified:-0}" -ge "$1" -a "${mmio:-1}" = 0
}
me=$QRDMA_GUEST server=10.0.0.1 dev=qrdma0 n=0
start=$(date +%s)
case $me in 0) role=server ;; 1) role=client ;; *) role=sniffer ;; esac
vm_barrier up 150

# step NAME CMD...: CMD on guest 0, then "CMD 10.0.0.1" on guest 1 once the
# server listens (wait_serving); other guests only keep the lockstep.
step() {
    local name=$1 log s rc t0 dt limit=${step_limit:-90}
    shift
    n=$((n + 1))
    log=/tmp/step-$n.log
    t0=$(date +%s.%N)
    case $me in
    0)
        timeout "$limit" "$@" > "$log" 2> "$log.err" &
        s=$!
        wait_serving "$s" "${serve_limit:-10}"
        vm_signal "srv-$n"
        vm_wait "cli-$n" $((limit + 30))
        wait_for 15 bash -c "! kill -0 $s 2>/dev/null"
        kill "$s" 2>/dev/null
        wait "$s"
        rc=$? ;;
    1)
        if vm_wait "srv-$n" 120; then
            timeout "$limit" "$@" "$server" > "$log" 2> "$log.err"
            rc=$?
        else
            rc=1
        fi
        vm_signal "cli-$n" ;;
    *)
        vm_barrier "b-$n" $((limit + 60))
        return ;;
    esac
    dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    check "step $n, $name: $role exited 0 (${dt}s)" test "$rc" = 0
    if [ "$rc" != 0 ]; then
        # stderr apart: stdout is block-buffered into the file, so an error
        # message would sit above lines printed before it.
        echo "  $role exit status $rc; its errors, then the end of its output:"
        sed 's/^/  ! /' "$log.err"
        tail -n 25 "$log" | sed 's/^/  | /'
    elif [ "$me" = 1 ]; then
        # Results only: perftest's table rows, the pingpongs' summaries.
        cat "$log.err" >> "$log"
        grep -E '^ *[0-9]|bytes in|iters in|^client:' "$log" | sed 's/^/  | /'
    fi
    vm_barrier "b-$n" $((limit + 60))
}

if [ "$mode" = main ]; then
    step "ibv_rc_pingpong 4 KB" ibv_rc_pingpong -d $dev -g 1 -c -s 4096 -n 200
    step "ibv_uc_pingpong 4 KB" ibv_uc_pingpong -d $dev -g 1 -c -s 4096 -n 200
    step "ibv_ud_pingpong 1 KB" ibv_ud_pingpong -d $dev -g 1 -c -s 1024 -n 200
    step "ibv_srq_pingpong" ibv_srq_pingpong -d $dev -g 1 -c -n 100
    step "qrdma-pingpong RC 4 KB, every byte checked" qrdma-pingpong -d $dev -g 1 -t rc -s 4096 -n 200
    step "qrdma-pingpong UC 4 KB, every byte checked" qrdma-pingpong -d $dev -g 1 -t uc -s 4096 -n 200
    step "qrdma-pingpong UD 1 KB, every byte checked" qrdma-pingpong -d $dev -g 1 -t ud -s 1024 -n 200
    step "qrdma-pingpong SRQ, 4 QPs, every byte checked" qrdma-pingpong -d $dev -g 1 -t srq -q 4 -s 4096 -n 200
    # rping (rdma_cm): -V checks every ping's data; the client names the server with -a.
    step "rping -V, 20 pings of 4 KB" sh -c \
        'if [ $# -eq 0 ]; then exec rping -s -V -C 20 -S 4096; fi; exec rping -c -V -C 20 -S 4096 -a "$1"' rping
    # librdmacm's other examples (exit status): connections, UD with SIDR, rsockets.
    step "ucmatose" sh -c 'exec ucmatose ${1:+-s "$1"}' ucmatose
    step "udaddy" sh -c 'exec udaddy ${1:+-s "$1"}' udaddy
    step "rstream 64 KB x 100" sh -c 'exec rstream -S 65536 -C 100 ${1:+-s "$1"}' rstream
    step "riostream 64 KB x 100" sh -c 'exec riostream -S 65536 -C 100 ${1:+-s "$1"}' riostream
    step "ib_write_bw 2 B..8 MB" ib_write_bw -d $dev -x 1 -F -a -n 10
    step "ib_read_bw 2 B..8 MB" ib_read_bw -d $dev -x 1 -F -a -n 10
    step "ib_send_bw 2 B..8 MB" ib_send_bw -d $dev -x 1 -F -a -n 10
    step "ib_atomic_bw" ib_atomic_bw -d $dev -x 1 -F -n 200
    step "ib_write_lat 8 B" ib_write_lat -d $dev -x 1 -F -s 8 -n 200
    step "ib_send_lat 8 B" ib_send_lat -d $dev -x 1 -F -s 8 -n 200
    step "ib_read_lat 8 B" ib_read_lat -d $dev -x 1 -F -s 8 -n 200
    step "ib_write_bw over rdma_cm" ib_write_bw -d $dev -R -F -s 65536 -n 200
    step "ib_write_bw 8 QPs" ib_write_bw -d $dev -x 1 -F -q 8 -s 4096 -n 200
    step "ib_send_bw with CQ events" ib_send_bw -d $dev -x 1 -F -e -s 4096 -n 200
    step "ib_send_bw UD" ib_send_bw -d $dev -x 1 -F -c UD -s 1024 -n 200
    # 1 GB: 18.9 s in all (fill, write, read back, compare, server
    # checksum) once vm-run raised the Unix datagram queue; 77 s and over
    # 90 s were seen at load 6 before. The limit is a hang guard, not a
    # speed check.
    step_limit=240 step "qrdma-bulk 1 GB WRITE + READ back" qrdma-bulk -d $dev -g 1 -m 1024 -t 60
    # XRC is not offered: ibv_xsrq_pingpong must fail cleanly with EOPNOTSUPP (95).
    if [ "$me" = 0 ]; then
        timeout 30 ibv_xsrq_pingpong -d $dev -g 1 > /tmp/xsrq.log 2>&1
        xrc=$?
        sed 's/^/  | /' /tmp/xsrq.log | head -n 3
        check "ibv_xsrq_pingpong fails cleanly without XRC (exit $xrc)" test "$xrc" = 1
        check "ibv_xsrq_pingpong names the missing XRC domain with EOPNOTSUPP" \
            grep -q 'XRC Domain 95' /tmp/xsrq.log
    fi
    echo "data path steps took $(($(date +%s) - start))s"
    check_dp_thread 100
    finish guest-datapath
    exit
fi

# ---- faults mode ----------------------------------------------------------------
# test-faults.sh boots both guests with the device's fault hook on: every
# RoCE frame either device sends is lost with 5% probability, duplicated
# with 1%, held back (reordered) with 2%. The transfers must still complete
# with every byte right.
if [ "$mode" = faults ]; then
    step "ib_write_bw 64 KB, lossy" ib_write_bw -d $dev -x 1 -F -s 65536 -n 200
    step "ib_read_bw 64 KB, lossy" ib_read_bw -d $dev -x 1 -F -s 65536 -n 200
    step "ib_send_bw 4 KB, lossy" ib_send_bw -d $dev -x 1 -F -s 4096 -n 500
    # Not here: ibv_rc_pingpong (one 4 KB message at a time, timeout 14,
    # retry_cnt 7) ended with retry exceeded in 2 of 5 runs at this loss
    # rate; not understood yet (docs/hardening.md, "Not yet").
    step "qrdma-bulk 32 MB WRITE + READ back, lossy" qrdma-bulk -d $dev -g 1 -m 32 -c 8 -w 256 -t 60

    # The peer disappears mid-transfer: guest 0's server is killed with -9
    # while guest 1's WRITEs stream (its QP and MRs vanish; the frames that
    # still arrive find no QP and are dropped, or no MR and are NAKed).
    # Guest 1's outstanding WQEs must complete with "transport retry counter
    # exceeded" (qrdma-bulk sets timeout 14 = 67 ms and retry_cnt 7: about
    # 0.5 s of retries) or "remote access error", not hang; then a new QP
    # to a restarted server works.
    case $me in
    0)
        qrdma-bulk -d $dev -g 1 -m 256 -c 256 -t 120 > /tmp/victim.log 2>&1 &
        victim=$!
        wait_serving "$victim"
        vm_signal victim-up
        vm_wait client-up 120
        # Kill once the WRITEs are flowing (the client fills 256 MB first).
        r0=$(nic_stat hw_roce_frames)
        wait_for 120 nic_stat_above hw_roce_frames $((r0 + 2000))
        kill -9 "$victim"
        wait "$victim" 2>/dev/null
        echo "server killed after $(( $(nic_stat hw_roce_frames) - r0 )) RoCE frames"
        vm_signal victim-killed
        vm_wait client-done 120
        qrdma-bulk -d $dev -g 1 -m 16 -c 16 -w 256 -t 60 > /tmp/restart.log 2>&1 &
        s=$!
        wait_serving "$s"
        vm_signal restarted
        vm_wait client2-done 150
        wait_for 15 bash -c "! kill -0 $s 2>/dev/null"
        wait "$s"
        check "restarted server: new transfer completed" test $? = 0 ;;
    1)
        vm_wait victim-up 120
        qrdma-bulk -d $dev -g 1 -m 256 -c 256 -t 120 "$server" > /tmp/survivor.log 2>&1 &
        c=$!
        vm_signal client-up
        vm_wait victim-killed 150
        t0=$(date +%s.%N)
        wait_for 60 bash -c "! kill -0 $c 2>/dev/null"
        dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
        wait "$c"
        crc=$?
        echo "survivor exited $crc, ${dt}s after it saw the kill; the end of its output:"
        tail -n 3 /tmp/survivor.log | sed 's/^/  | /'
        check "survivor failed the transfer instead of hanging" test "$crc" != 0
        # Teardown frees the victim's MR before its QP or the QP first: the
        # WRITEs then meet a NAK (remote access error) or silence (retries).
        check "survivor's outstanding WQE completed with RETRY_EXC_ERR or REM_ACCESS_ERR" \
            grep -Eq 'completion with error: .*\(status (12|10), ' /tmp/survivor.log
        check "survivor's error came within 20 s of the kill (${dt}s)" \
            awk -v t="$dt" 'BEGIN { exit !(t < 20) }'
        vm_signal client-done
        vm_wait restarted 120
        qrdma-bulk -d $dev -g 1 -m 16 -c 16 -w 256 -t 60 "$server" > /tmp/restart.log 2>&1
        check "a new QP to the restarted server works" test $? = 0
        tail -n 2 /tmp/restart.log | sed 's/^/  | /'
        vm_signal client2-done ;;
    esac
    echo "fault steps took $(($(date +%s) - start))s"
    finish guest-datapath
    exit
fi

# ---- backpressure mode ----------------------------------------------------------
# test-backpressure.sh boots both guests on a segment whose Unix datagram
# sockets keep the kernel's default depth of 10 frames: QEMU's dgram netdev
# meets a full socket all the time and queues frames, and the device must
# stop transmitting until the frame it queued has gone (not pile frames up
# behind it: 16 of 16 runs of this step ended in "transport retry counter
# exceeded" on both sides before). The transport's retransmit counters
# are printed, for the record.
if [ "$mode" = backpressure ]; then
    hw=/sys/class/infiniband/$dev/ports/1/hw_counters
    step_limit=300 step "ibv_srq_pingpong 16 QPs, 3000 iterations, max_dgram_qlen 10" \
        ibv_srq_pingpong -d $dev -g 1 -q 16 -n 3000
    for c in tx_pkts retrans_pkts local_ack_timeout_err packet_seq_err; do
        echo "  $c $(cat $hw/$c 2>/dev/null)"
    done
    echo "backpressure steps took $(($(date +%s) - start))s"
    check_dp_thread 5
    finish guest-datapath
    exit
fi

# ---- capture mode -------------------------------------------------------------
cap=/tmp/cap.pcap
case $me in
0)  # Our own netdev, not promiscuous: RoCE must not reach the LAN stack.
    # ICMP too: the ping's replies show the capture sees what reaches it.
    tcpdump -p -i eth0 -n -U -w "$cap" udp port 4791 or icmp 2> /tmp/tcpdump.err &
    td=$!
    wait_for 30 grep -q 'listening on' /tmp/tcpdump.err || fail "tcpdump on eth0 did not start"
    check "ping the peer while capturing" ping -c 3 -i 0.2 -W 2 -q 10.0.0.2
    r0=$(nic_stat hw_roce_frames) ;;
2)  # A NIC out of receive descriptors drops (hw_rx_dropped), and under TCG
    # a sniffer that also writes every frame falls behind: give it a ring
    # that holds the whole capture (about 2,600 frames). ethtool -G while
    # the interface is up: a request is rounded up to a power of two, one
    # over the maximum refused.
    rx_ring() { ethtool -g eth0 | awk '/^Current/ { c = 1 } c && /^RX:/ { print $2; exit }'; }
    check "ethtool -G rx 1000" ethtool -G eth0 rx 1000
    expect_eq "receive ring after rx 1000 (rounded up)" "$(rx_ring)" 1024
    check "ethtool -G rx 8192 is refused" sh -c '! ethtool -G eth0 rx 8192 2>/dev/null'
    check "ethtool -G rx 4096" ethtool -G eth0 rx 4096
    expect_eq "receive ring" "$(rx_ring)" 4096
    wait_for 10 sh -c "ip link show eth0 | grep -q LOWER_UP" || fail "eth0's link did not come back"
    d0=$(nic_stat hw_rx_dropped)
    tcpdump -i eth0 -n -U -w "$cap" udp port 4791 2> /tmp/tcpdump.err &
    td=$!
    wait_for 30 grep -q 'listening on' /tmp/tcpdump.err || fail "tcpdump on eth0 did not start" ;;
esac
vm_barrier capturing 120

step "ibv_rc_pingpong 4 KB, captured" ibv_rc_pingpong -d $dev -g 1 -c -s 4096 -n 50
step "qrdma-bulk 1 MB, captured" qrdma-bulk -d $dev -g 1 -m 1 -c 1 -w 256 -t 60

stop_capture() {
    local last=-1 size i
    # The last frames may still be on their way to this guest: on a loaded
    # host it runs seconds behind its peers (queued, not lost: the hub and
    # the netdevs hold frames back, and guest 2's ring takes them all).
    # Stop once the capture has not grown for 2 s, within 2 minutes.
    for i in $(seq 60); do
        size=$(stat -c %s "$cap" 2>/dev/null || echo 0)
        [ "$size" = "$last" ] && break
        last=$size
        sleep 2
    done
    kill -INT "$td"
    wait "$td"
    check "tcpdump ended cleanly (status $?)" test $? = 0
    sed 's/^/  tcpdump: /' /tmp/tcpdump.err
}
case $me in
0)
    stop_capture
    r1=$(nic_stat hw_roce_frames)
    check "the device steered the RoCE frames to its engine (hw_roce_frames +$((r1 - r0)))" \
        test "$((r1 - r0))" -gt 500
    check "guest 0's capture is readable" sh -c "tcpdump -r $cap -n > /tmp/cap.txt 2> /tmp/cap.err"
    sed 's/^/  tcpdump -r: /' /tmp/cap.err
    check "guest 0's capture holds the ping's replies ($(grep -c 'ICMP echo reply' /tmp/cap.txt))" \
        test "$(grep -c 'ICMP echo reply' /tmp/cap.txt)" -ge 3
    expect_eq "RoCE frames seen by guest 0's own netdev" "$(grep -c '\.4791[: ]' /tmp/cap.txt)" 0
    grep '\.4791[: ]' /tmp/cap.txt | head -n 3 | sed 's/^/  roce: /' ;;
2)
    stop_capture
    expect_eq "frames the sniffer's device dropped (hw_rx_dropped)" "$(($(nic_stat hw_rx_dropped) - d0))" 0
    # Wireshark's InfiniBand heuristics would take random payloads for
    # RPC-over-RDMA, iSER... and call them malformed: dissect payloads as data.
    heur=()
    for h in smcr_infiniband smb_direct_infiniband rpcrdma_infiniband nvme_rdma lnet_ib \
             iser_infiniband eth_over_ib mellanox_eoib sdp_infiniband fc_infiniband drbd_rdma; do
        heur+=(--disable-heuristic "$h")
    done
    # One tshark pass (it takes long to start under TCG): a line per frame.
    tshark -r "$cap" "${heur[@]}" -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE \
        -T fields -e frame.number -e ip.src -e ip.dst -e udp.dstport -e frame.protocols \
        -e infiniband.bth.opcode -e ip.checksum.status -e _ws.malformed \
        -e _ws.expert.severity > /tmp/frames.tsv 2> /tmp/tshark.err
    check "tshark decoded the capture" test -s /tmp/frames.tsv
    grep -v 'Running as user' /tmp/tshark.err | head -n 5
    head -n 5 /tmp/frames.tsv | sed 's/^/  frame: /'
    frames=$(wc -l < /tmp/frames.tsv)
    roce=$(awk -F'\t' '$4 == 4791 && $5 ~ /:udp:infiniband/' /tmp/frames.tsv | wc -l)
    echo "captured $frames frame(s), $roce decoded as RoCE (UDP 4791, InfiniBand)"
    check "the sniffer captured RoCE frames" test "$roce" -gt 1000
    expect_eq "frames not decoded as RoCE" "$((frames - roce))" 0
    # _ws.expert.severity: 0x800000 is PI_ERROR; several values are comma-joined.
    awk -F'\t' '{ bad = $8 != ""; n = split($9, s, ","); for (i = 1; i <= n; i++) if (s[i] + 0 >= 8388608) bad = 1
                  if ($7 != "" && $7 != 1) bad = 1; if (bad) print }' /tmp/frames.tsv > /tmp/bad.tsv
    expect_eq "malformed frames, expert errors or bad IP checksums" "$(wc -l < /tmp/bad.tsv)" 0
    head -n 5 /tmp/bad.tsv | sed 's/^/  bad: /'
    expect_eq "directions" "$(awk -F'\t' '{ print $2 ">" $3 }' /tmp/frames.tsv | sort -u | tr '\n' ' ')" \
        "10.0.0.1>10.0.0.2 10.0.0.2>10.0.0.1 "
    ops=$(awk -F'\t' '{ print $6 }' /tmp/frames.tsv | sort -n | uniq -c | awk '{ printf "%s:%s ", $2, $1 }')
    echo "BTH opcodes (opcode:frames): $ops"
    # SEND first/middle/last (4 KB at MTU 1024), SEND only with immediate,
    # WRITE first/middle/last, READ request, READ response first/middle/last,
    # ACK.
    has_op() { awk -F'\t' -v op="$1" '$6 == op { f = 1 } END { exit !f }' /tmp/frames.tsv; }
    for op in 0 1 2 5 6 7 8 12 13 14 15 17; do
        check "BTH opcode $op on the wire" has_op "$op"
    done
    # RoCEv2 ICRC (IBA annex A17.8): CRC-32 over 8 bytes of 1s standing for
    # the LRH, the IPv4 header with TOS, TTL and checksum set to 1s, the UDP
    # header with its checksum set to 1s, the BTH with resv8a set to 1s, and
    # everything after it up to the ICRC, which goes least significant byte
    # first.
    check "every RoCE frame's ICRC is right" python3 - "$cap" <<'EOF'
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
e = '<' if struct.unpack('<I', data[:4])[0] in (0xa1b2c3d4, 0xa1b23c4d) else '>'
off, n, good, bad = 24, 0, 0, 0
while off + 16 <= len(data):
    incl = struct.unpack(e + 'I', data[off + 8:off + 12])[0]
    f = data[off + 16:off + 16 + incl]
    off += 16 + incl
    n += 1
    if len(f) < 34 or f[12:14] != b'\x08\x00' or f[14] >> 4 != 4 or f[23] != 17:
        continue
    ihl = (f[14] & 15) * 4
    l3 = f[14:14 + struct.unpack('!H', f[16:18])[0]]
    if struct.unpack('!H', l3[ihl + 2:ihl + 4])[0] != 4791:
        continue
    m = bytearray(l3[:ihl + 20])
    m[1] = m[8] = m[10] = m[11] = m[ihl + 6] = m[ihl + 7] = m[ihl + 12] = 0xff
    want = zlib.crc32(l3[ihl + 20:-4], zlib.crc32(bytes(m), zlib.crc32(b'\xff' * 8)))
    got = struct.unpack('<I', l3[-4:])[0]
    if got == want:
        good += 1
    else:
        bad += 1
        if bad <= 5:
            print('  ICRC of frame %d is %#010x, expected %#010x' % (n, got, want))
print('  ICRC right in %d RoCE frame(s), wrong in %d, of %d frame(s)' % (good, bad, n))
sys.exit(1 if bad or not good else 0)
EOF
    ;;
esac
vm_barrier analysed 300
echo "capture steps took $(($(date +%s) - start))s"
finish guest-datapath-capture
