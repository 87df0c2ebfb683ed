#!/bin/bash
# Live migration with RDMA traffic running (issue 16), run in both guests by
# test-migrate.sh: guest-migrate.sh MODE ROUNDS [DEV1].
#
# Guest 0 moves: it gives up its 9p shares (QEMU refuses to migrate a guest
# with one mounted: vm_detach) and serves commands over TCP on the test
# segment (guest-migrate-agent.py), so the Ethernet function's TCP carries
# the test across every migration. Guest 1 drives: each phase runs a server
# here and its client on guest 0, and while both run, asks vm-run to
# live-migrate guest 0 2*ROUNDS times (moved to a new QEMU and "back" to
# another, as a round trip between two hosts would), each migration checked
# to complete with both programs still running. The phases:
#   bulk      qrdma-bulk: ROUNDS*4 GB (ROUNDS*1 GB with the rxe peer)
#             written by guest 0 in 32 MB chunks, each read back and
#             compared byte for byte, each chunk's and the whole stream's
#             checksum compared with the server's
#   write_bw  ib_write_bw for a fixed duration (exit status both sides)
#   rc_pp     ibv_rc_pingpong (exit status only: its -c checks nothing)
#   qrdma_pp  qrdma-pingpong RC, every byte of every message checked both
#             ways; the peer's (guest 1's) longest round trip is the
#             longest stall it saw
# Then on guest 0: its device's object counters back to what they were
# before (no QP, CQ or MR left behind) and no destroy error; and no qrdma
# error in its kernel log. Guest 1 captures the announcements from guest
# 0's MAC after each migration: QEMU's RARP frames, and the gratuitous ARPs
# and unsolicited neighbour advertisements guest 0's driver sends when the
# device asks it to (AE ANNOUNCE), at least one of each per migration (NAs
# only if guest 0 has an IPv6 address there). vm-run checks both consoles
# for oopses and warnings. MODE is "sw" (both guests qrdma), "rxe" (guest 1 runs
# soft-RoCE: DEV1 rxe0) or "lossy" (both guests qrdma with the device's
# loss hook on, x-fault-* in test-migrate.sh's device options: phases sized
# for a lossy link, and no ibv_rc_pingpong, which ends in retry exceeded
# under loss at times without a migration, docs/hardening.md), or "both":
# three guests, and both ends of every connection move. Guests 0 and 1
# give up their shares and serve over TCP, the server of each phase runs
# on guest 1 and its client on guest 0, and guest 2 drives: it migrates
# guest 0, then guest 1, 2*ROUNDS times each per phase, and checks every
# moved guest as guest 1 checks guest 0 in the other modes. (The 9p refusal
# is checked by the other modes.)
. "$(dirname "$0")/guest-lib.sh"
mode=${1:-sw} rounds=${2:-5} dev1=${3:-qrdma0}
me=$QRDMA_GUEST port=7000 peer=10.0.0.2
# The guests that move, how many, and the one that drives (and captures).
movers="0" nmovers=1 driver=1
[ "$mode" != both ] || movers="0 1" nmovers=2 driver=2
# lossy: MB of the checked transfer and qrdma-pingpong messages per round
LOSSY_BULK_MB=${QRDMA_MIG_LOSSY_BULK_MB:-256} LOSSY_PP=${QRDMA_MIG_LOSSY_PP:-5000}
# QRDMA_MIG_PHASES: the phases to run (default all; make check runs the
# two that check every byte, bulk and qrdma_pp); nphases counts those run.
phases=" ${QRDMA_MIG_PHASES:-bulk write_bw rc_pp qrdma_pp} " nphases=0

# The interface on the test segment (qrdma's Ethernet function on a moved
# guest, or the driver's NIC).
seg_dev() { ip -o -4 addr show | awk -v ip="$QRDMA_IP/" 'index($4, ip) == 1 { print $2 }'; }

if [ "$mode" = sub ]; then
    # Commands guest 1 runs on guest 0 through the agent.
    case $rounds in
        snapshot)
            idle_snapshot
            declare -p idle > /tmp/mig/idle
            dmesg | wc -l > /tmp/mig/dmesg-lines ;;
        idle)
            . /tmp/mig/idle
            wait_for 30 counters_at_zero || { echo "guest 0 counters: $(counters)"; exit 1; }
            echo "guest 0 counters at idle: $(counters)" ;;
        announcements)
            # The driver's count of AE ANNOUNCE handled (ethtool -S).
            nic_stat announcements "$(seg_dev)" ;;
        ipv6)
            # Has the segment interface an IPv6 address to announce?
            ip -6 addr show dev "$(seg_dev)" scope link | grep -q inet6 ;;
        serving)
            # The peer's server (program $3) listens for its TCP exchange.
            wait_for 10 sh -c "ss -Hltnp | grep -q '((\"$3\"'" ;;
        dmesg)
            dmesg | tail -n +$(($(cat /tmp/mig/dmesg-lines) + 1)) > /tmp/mig/dmesg-new
            grep -i qrdma /tmp/mig/dmesg-new | tail -n 20
            ! grep -iE 'qrdma.*(error|fatal|fail)' /tmp/mig/dmesg-new ;;
        *) exit 2 ;;
    esac
    exit
fi

if [ "$me" != "$driver" ]; then
    here=$(dirname "$0")
    if [ -z "${QRDMA_MIG_COPY:-}" ]; then
        # Run from a copy in RAM: the shares are about to go.
        mkdir -p /tmp/mig &&
            cp "$here/guest-migrate.sh" "$here/guest-lib.sh" "$here/guest-migrate-agent.py" /tmp/mig/ ||
            exit 1
        cd /tmp/mig && QRDMA_MIG_COPY=1 exec bash /tmp/mig/guest-migrate.sh "$@"
    fi
    vm_barrier up 150 || exit 1
    [ "$mode" = both ] || vm_wait refusal-seen 300 || exit 1
    check "guest $me gives up its 9p shares" vm_detach
    echo "guest $me: serving the test over TCP while it moves"
    python3 /tmp/mig/guest-migrate-agent.py serve "$port"
    check "guest $me mounts /job again" vm_attach
    finish "guest-migrate $mode (moved guest)"
    exit
fi

# ---- guest 1 (guest 2 when both move): drives the test --------------------
vm_barrier up 150 || exit 1
if [ "$mode" != both ]; then
    # A migration QEMU refuses (guest 0 still has its 9p shares): vm-run
    # answers why, and guest 0 runs on in its first QEMU (its agent answers
    # below, and a migration that was not one would leave it a QEMU behind).
    a=$(vm_migrate 0)
    echo "  while guest 0 has its shares: $a"
    check "a refused migration is answered 'failed: ...' naming the 9p share" \
        grep -q '^failed: .*VirtFS' <<< "$a"
    vm_signal refusal-seen
fi
# rg J CMD: CMD on moved guest J, through its agent; r0: on guest 0.
rg() { python3 guest-migrate-agent.py run "10.0.0.$(($1 + 1))" "$port" "$2"; }
r0() { rg 0 "$1"; }
# srv_run CMD: a phase's server, here or (both) on guest 1.
srv_run() { if [ "$mode" = both ]; then rg 1 "$1"; else $1; fi; }
for j in $movers; do
    check "guest $j's agent answers" rg "$j" true
    check "guest $j: counters before" rg "$j" "bash /tmp/mig/guest-migrate.sh sub snapshot"
done
# The moved guest's announcements: after each incoming migration QEMU sends
# a RARP frame from every NIC's MAC (qemu_announce_self; 5 rounds by
# default), qrdma's Ethernet function included, so the segment's switches
# learn where the MAC went; in each round qrdma also asks its driver to
# announce the addresses (docs/migration.md), so the peers' ARP and
# neighbour caches hear it too: a gratuitous ARP (sender and target
# address the same) and an unsolicited NA to all nodes. Captured here, on
# the segment interface.
seg=$(seg_dev)
tcpdump -i "$seg" -n -e -l '(ether src 52:54:00:71:00:00 or ether src 52:54:00:71:00:01) and
    (ether proto 0x8035 or (arp and arp[14:4] = arp[24:4]) or
    (ip6 dst ff02::1 and icmp6 and ip6[40] = 136))' \
    > /tmp/rarp.log 2> /tmp/rarp.err &
rarp=$!
wait_for 30 grep -q 'listening on' /tmp/rarp.err || fail "tcpdump on $seg did not start"
downtimes=() totals=() nmig=0 nmig_of=()

# phase NAME TIMEOUT SERVER_CMD CLIENT_CMD: SERVER_CMD on the peer (here,
# or guest 1 when both move), "CLIENT_CMD $peer" on guest 0, and 2*ROUNDS
# migrations of each moving guest while both run; nothing when NAME is not
# in $phases.
phase() {
    local name=$1 limit=$2 srv=$3 cli=$4 s c k j a during=0 rs rc t0
    [[ $phases == *" $name "* ]] || return 0
    nphases=$((nphases + 1))
    t0=$(date +%s)
    srv_run "timeout $limit $srv" > "/tmp/$name-s.log" 2>&1 &
    s=$!
    if [ "$mode" = both ]; then
        rg 1 "bash /tmp/mig/guest-migrate.sh sub serving ${srv%% *}" ||
            echo "  (guest 1's ${srv%% *} not seen listening)"
    else
        wait_serving "$s"
    fi
    r0 "timeout $limit $cli $peer" > "/tmp/$name-c.log" 2>&1 &
    c=$!
    sleep 4
    for k in $(seq $((2 * rounds))); do
        for j in $movers; do
            a=$(vm_migrate "$j")
            k_ok=$?
            echo "  $name: migration $k of guest $j: $a"
            if [ "$k_ok" != 0 ]; then
                fail "$name: migration $k of guest $j: $a"
                break 2
            fi
            nmig=$((nmig + 1)) nmig_of[j]=$((${nmig_of[j]:-0} + 1))
            a=${a#*downtime_ms=}; downtimes+=("${a%% *}")
            a=${a#*total_ms=}; totals+=("${a%% *}")
            if kill -0 "$s" 2>/dev/null && kill -0 "$c" 2>/dev/null; then
                during=$((during + 1))
            fi
            sleep 2
        done
    done
    wait "$c"; rc=$?
    wait "$s"; rs=$?
    check "$name: client on the moved guest exited 0" test "$rc" = 0
    check "$name: server on the peer exited 0" test "$rs" = 0
    expect_eq "$name: migrations with the traffic still running" "$during" $((2 * rounds * nmovers))
    echo "  $name: $(($(date +%s) - t0)) s; server's output, end:"
    tail -n 4 "/tmp/$name-s.log" | sed 's/^/  s| /'
    echo "  client's output, end:"
    tail -n 4 "/tmp/$name-c.log" | sed 's/^/  c| /'
}

# Sized from TCG measurements so that a phase outlasts its migrations,
# on a quiet machine as on a loaded one (traffic and migrations both slow
# down with the load, by different factors): unmigrated, qrdma-bulk moves
# 60 MB/s loaded and 200 MB/s quiet, ibv_rc_pingpong takes 5.6 ms loaded
# and 0.83 ms quiet a round trip, qrdma-pingpong 1.7 and 0.86 ms; a
# migration took 3-22 s loaded and 1-7 s quiet, then 2 s of traffic. At
# least 30 s of traffic per round on a quiet machine (11,000 round trips of
# ibv_rc_pingpong, 9 s, ended before its second migration there); a phase
# that ends before its last migration fails the "still running" check.
hwc=/sys/class/infiniband/qrdma0/ports/1/hw_counters
if [ "$mode" = lossy ]; then
    # The loss must be real: both devices' retransmissions, before and after
    # (the moved guest's counters travel in its device state).
    rt1=$(cat "$hwc/retrans_pkts") rt0=$(r0 "cat $hwc/retrans_pkts")
    # Under loss a lost packet costs the requester a retransmit timeout
    # (67 ms for these programs' QPs) far more often than the link's
    # speed: sized from a lossy run (docs/migration.md) for about 60 s of
    # traffic per round, as above.
    phase bulk 1500 "qrdma-bulk -d $dev1 -g 1 -m $((rounds * LOSSY_BULK_MB)) -c 16 -w 256 -t 60" \
        "qrdma-bulk -d qrdma0 -g 1 -m $((rounds * LOSSY_BULK_MB)) -c 16 -w 256 -t 60"
    phase write_bw 900 "ib_write_bw -d $dev1 -x 1 -F -s 65536 -D $((rounds * 60 + 20))" \
        "ib_write_bw -d qrdma0 -x 1 -F -s 65536 -D $((rounds * 60 + 20))"
    phase qrdma_pp 1200 "qrdma-pingpong -d $dev1 -g 1 -t rc -s 4096 -n $((rounds * LOSSY_PP)) -w 60" \
        "qrdma-pingpong -d qrdma0 -g 1 -t rc -s 4096 -n $((rounds * LOSSY_PP)) -w 60"
    # A switchover alone makes the peer resend at most its one message in
    # flight (qrdma-pingpong: 4 packets) per migration; with the loss on it
    # resent some 1,800 packets a round (5-round run, docs/migration.md).
    rt1=$(($(cat "$hwc/retrans_pkts") - rt1)) rt0=$(($(r0 "cat $hwc/retrans_pkts") - rt0))
    check "the loss was on: packets retransmitted by the peer $rt1 (more than $((rounds * 100))), by the moved guest $rt0" \
        test "$rt1" -gt $((rounds * 100)) -a "$rt0" -gt 0
else
    # With both ends moving, twice the migrations a phase: the phases of
    # fixed length or count are twice as long (the checked transfer, the
    # slowest, outlasts them as it is).
    nm=$nmovers
    # Per round: MB of the checked transfer and ibv_rc_pingpong round
    # trips. With a soft-RoCE peer under TCG on a quiet machine, 4 GB
    # took 237 s (WRITE 47 MB/s, READ 29 MB/s) and a round trip 3.3 ms
    # (qrdma 0.83): a quarter of the transfer and 15,000 round trips give
    # it the same minute or so of traffic a round as qrdma's sizes, where
    # 4 minutes a round put 5 rounds past vm-run's timeout.
    bulk_mb=4096 rc_pp_n=40000
    [ "$mode" != rxe ] || bulk_mb=1024 rc_pp_n=15000
    # The transfer's size grows with the rounds and, when both ends move,
    # its rate halves (5 rounds of `both` took 1130 s, sw 591 s): its
    # limit grows with both.
    phase bulk $((900 + rounds * 300 * nm)) "qrdma-bulk -d $dev1 -g 1 -m $((rounds * bulk_mb)) -c 32 -t 60" \
        "qrdma-bulk -d qrdma0 -g 1 -m $((rounds * bulk_mb)) -c 32 -t 60"
    phase write_bw $((900 * nm)) "ib_write_bw -d $dev1 -x 1 -F -s 65536 -D $((rounds * 60 * nm + 20))" \
        "ib_write_bw -d qrdma0 -x 1 -F -s 65536 -D $((rounds * 60 * nm + 20))"
    phase rc_pp $((900 * nm)) "ibv_rc_pingpong -d $dev1 -g 1 -s 4096 -n $((rounds * rc_pp_n * nm))" \
        "ibv_rc_pingpong -d qrdma0 -g 1 -s 4096 -n $((rounds * rc_pp_n * nm))"
    phase qrdma_pp $((900 * nm)) "qrdma-pingpong -d $dev1 -g 1 -t rc -s 4096 -n $((rounds * 35000 * nm)) -w 60" \
        "qrdma-pingpong -d qrdma0 -g 1 -t rc -s 4096 -n $((rounds * 35000 * nm)) -w 60"
fi
stall=$(grep -o 'longest round trip [0-9]* ms' /tmp/qrdma_pp-s.log | grep -o '[0-9]*')

kill "$rarp"; wait "$rarp"
grep -m1 'Reverse ARP' /tmp/rarp.log | sed 's/^/  rarp| /'
grep -m1 'ethertype ARP' /tmp/rarp.log | sed 's/^/  garp| /'
grep -m1 'ethertype IPv6' /tmp/rarp.log | sed 's/^/  na| /'
check "phases run: $nphases (${phases# })" test "$nphases" -gt 0
for j in $movers; do
    mac=52:54:00:71:00:0$j m=${nmig_of[j]:-0}
    n_rarp=$(grep -c "^[^ ]* $mac > ff:ff:ff:ff:ff:ff, ethertype Reverse ARP" /tmp/rarp.log)
    n_garp=$(grep -c "^[^ ]* $mac > ff:ff:ff:ff:ff:ff, ethertype ARP (0x0806)" /tmp/rarp.log)
    n_na=$(grep -c "^[^ ]* $mac > 33:33:00:00:00:01, ethertype IPv6" /tmp/rarp.log)
    echo "  guest $j's driver announced $(rg "$j" "bash /tmp/mig/guest-migrate.sh sub announcements") times"
    check "guest $j announced its MAC after every migration: $n_rarp RARP frames for $m migrations" \
        test "$n_rarp" -ge "$m" -a "$m" -gt 0
    check "guest $j's driver announced its IPv4 address after every migration: $n_garp gratuitous ARPs" \
        test "$n_garp" -ge "$m"
    if rg "$j" "bash /tmp/mig/guest-migrate.sh sub ipv6"; then
        check "guest $j's driver announced its IPv6 addresses after every migration: $n_na unsolicited NAs" \
            test "$n_na" -ge "$m"
    else
        echo "  guest $j has no IPv6 address: $n_na unsolicited NAs, none required"
    fi
    check "guest $j: counters back to idle" rg "$j" "bash /tmp/mig/guest-migrate.sh sub idle"
    check "guest $j: no qrdma error in the kernel log" rg "$j" "bash /tmp/mig/guest-migrate.sh sub dmesg"
    check "guest $j's agent stops" rg "$j" exit
done
if [ "${#downtimes[@]}" -gt 0 ]; then
    echo "migrations: $nmig; downtime ms: ${downtimes[*]}; total ms: ${totals[*]}"
    echo "downtime max $(printf '%s\n' "${downtimes[@]}" | sort -n | tail -n1) ms;" \
        "migration total max $(printf '%s\n' "${totals[@]}" | sort -n | tail -n1) ms;" \
        "peer's longest stall (qrdma-pingpong round trip) ${stall:-?} ms"
fi
expect_eq "migrations completed" "$nmig" $((nphases * 2 * rounds * nmovers))
finish "guest-migrate $mode (driver)"
