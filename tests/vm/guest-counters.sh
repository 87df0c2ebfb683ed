#!/bin/bash
# The port's hardware counters and the RDMA core's resource view, in one
# guest, run by tests/vm/test-counters.sh on a device that injects loss,
# duplication and corruption into the RoCE frames it sends (its x-fault-*
# properties; the RC traffic here loops back through the device, so both
# ends of every QP are on it and every counter is this guest's):
#  1. hw_counters lists every counter (docs/hw-spec.md section 20) and
#     `rdma statistic show` prints them;
#  2. qrdma-datapath --counters provokes each event once (RNR, a WRITE, a
#     READ, a FETCH_ADD, a bad rkey, a receive too short): the counters of
#     requests by kind and of error and flush CQEs move by exactly that;
#  3. perftest under the faults: the transport's counters (packets, bytes,
#     retransmissions, timeouts, sequence NAKs, out-of-sequence and
#     duplicate requests, ICRC drops) move;
#  4. `rdma resource show qp/cq/mr/pd` lists a live process's objects on
#     qrdma0 with the QP's type and state.
#
# "guest-counters.sh trace" runs only step 2: test-counters.sh runs it under
# QEMU's -trace 'qrdma_*' and checks the trace events in the log.
. "$(dirname "$0")/guest-lib.sh"
dev=qrdma0
hw=/sys/class/infiniband/$dev/ports/1/hw_counters
check "$dev registered" wait_for 10 test -d "/sys/class/infiniband/$dev"

if [ "${1:-}" = trace ]; then
    check "qrdma-datapath --counters" sh -c 'qrdma-datapath --counters > /tmp/c.log 2>&1'
    grep -E '^not ok|^#' /tmp/c.log | sed 's/^/  | /'
    finish guest-counters-trace
    exit
fi

names="tx_pkts tx_bytes rx_pkts rx_bytes retrans_pkts local_ack_timeout_err packet_seq_err
       rnr_nak_retry_err send_rnr_err duplicate_request out_of_sequence rx_icrc_encapsulated
       rx_read_requests rx_write_requests rx_atomic_requests req_cqe_error resp_cqe_error
       req_cqe_flush_error resp_cqe_flush_error out_of_buffer rx_drops"
declare -A at0 at1
# snap ARRAY: every counter now. The RDMA core caches values for 10 ms: wait that out.
snap() {
    local -n a=$1
    local c
    sleep 0.1
    for c in $names; do a[$c]=$(cat "$hw/$c" 2>/dev/null || echo missing); done
}
delta() { echo $((at1[$1] - at0[$1])); }

# 1. the counters are there, under the names the RDMA core shows
check "hw_counters exists" test -d "$hw"
expect_eq "hw_counters holds exactly the documented counters" \
    "$(ls "$hw" | grep -v '^lifespan$' | sort | tr '\n' ' ')" \
    "$(printf '%s\n' $names | sort | tr '\n' ' ')"
rdma statistic show link $dev/1 > /tmp/stat.txt 2>&1
sed 's/^/  | /' /tmp/stat.txt | head -n 5
for c in $names; do
    check "rdma statistic show prints $c" grep -qw "$c" /tmp/stat.txt
done
snap at0
for c in $names; do
    check "$c reads a number" test "${at0[$c]}" -ge 0
done

# 2. each event once
check "qrdma-datapath --counters" sh -c 'qrdma-datapath --counters > /tmp/c.log 2>&1'
grep -E '^not ok|^#' /tmp/c.log | sed 's/^/  | /'
snap at1
for c in $names; do echo "  $c: ${at0[$c]} -> ${at1[$c]}"; done
check "send_rnr_err moved (RNR NAKs sent)" test "$(delta send_rnr_err)" -ge 1
check "rnr_nak_retry_err moved (RNR NAKs received)" test "$(delta rnr_nak_retry_err)" -ge 1
expect_eq "RNR NAKs received = sent (loopback, minus lost ones)" \
    "$(($(delta rnr_nak_retry_err) <= $(delta send_rnr_err)))" 1
# WRITE and the bad-rkey WRITE; no perftest ran yet, so nothing else.
expect_eq "rx_write_requests moved by 2" "$(delta rx_write_requests)" 2
expect_eq "rx_read_requests moved by 1" "$(delta rx_read_requests)" 1
expect_eq "rx_atomic_requests moved by 1" "$(delta rx_atomic_requests)" 1
# REM_ACCESS_ERR (bad rkey) and REM_INV_REQ_ERR (short receive at the peer).
expect_eq "req_cqe_error moved by 2" "$(delta req_cqe_error)" 2
# LOC_LEN_ERR of the short receive.
expect_eq "resp_cqe_error moved by 1" "$(delta resp_cqe_error)" 1
# The SEND behind the bad WRITE; the receive posted on the requester.
expect_eq "req_cqe_flush_error moved by 1" "$(delta req_cqe_flush_error)" 1
expect_eq "resp_cqe_flush_error moved by 1" "$(delta resp_cqe_flush_error)" 1

# 3. the transport's counters under the injected faults
at0=()
for c in $names; do at0[$c]=${at1[$c]}; done
check "ib_write_bw 64 KB x 200 under faults" pair_run wbw ib_write_bw -d $dev -x 1 -F -s 65536 -n 200
check "ib_read_bw 64 KB x 100 under faults" pair_run rbw ib_read_bw -d $dev -x 1 -F -s 65536 -n 100
check "ib_send_bw 4 KB x 500 under faults" pair_run sbw ib_send_bw -d $dev -x 1 -F -s 4096 -n 500
snap at1
for c in $names; do echo "  $c: ${at0[$c]} -> ${at1[$c]}"; done
for c in tx_pkts rx_pkts retrans_pkts local_ack_timeout_err packet_seq_err duplicate_request \
         out_of_sequence rx_icrc_encapsulated rx_write_requests rx_read_requests; do
    check "$c moved under faults" test "$(delta "$c")" -ge 1
done
# Every frame leaves and comes back through this device: bytes per packet are RoCE's.
check "tx_bytes moved by at least 64 bytes a packet" test "$(delta tx_bytes)" -ge $((64 * $(delta tx_pkts)))
check "rx_bytes moved by at least 64 bytes a packet" test "$(delta rx_bytes)" -ge $((64 * $(delta rx_pkts)))
check "rx_pkts <= tx_pkts (loss only takes away)" test "$(delta rx_pkts)" -le \
    $(($(delta tx_pkts) + $(delta duplicate_request) + $(delta tx_pkts) / 10))
check "no error CQE in clean perftest runs" test "$(delta req_cqe_error)" = 0

# 4. the RDMA core's resource view of a live process's objects
ibv_rc_pingpong -d $dev -g 1 -n 1 > /tmp/pp.log 2>&1 &
pp=$!
check "ibv_rc_pingpong is listening" wait_for 20 sh -c 'rdma resource show qp 2>/dev/null | grep -q ibv_rc_pingpong'
for r in qp cq mr pd; do
    rdma resource show $r > /tmp/res-$r.txt 2>&1
    grep ibv_rc_pingpong /tmp/res-$r.txt | head -n 2 | sed 's/^/  | /'
    check "rdma resource show $r lists ibv_rc_pingpong's $r on $dev" \
        sh -c "grep ibv_rc_pingpong /tmp/res-$r.txt | grep -q '$dev'"
done
check "its QP: type RC, state INIT" sh -c "grep ibv_rc_pingpong /tmp/res-qp.txt | grep -q 'type RC state INIT'"
rdma resource show > /tmp/res.txt 2>&1
sed 's/^/  | /' /tmp/res.txt
check "rdma resource show summarises $dev" grep -q "^[0-9]*: $dev: .*qp [1-9]" /tmp/res.txt
kill "$pp" 2>/dev/null
wait "$pp" 2>/dev/null
finish guest-counters
