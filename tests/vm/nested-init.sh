#!/bin/bash
# PID 1 of the inner guest of test-nested.sh (a small initramfs made by
# guest-nested.sh): the qrdma device in verbs mode on the outer guest's
# rxe0. Loads the RDMA core and our driver, gives the qrdma netdev the
# user-mode network's address and rxe0's IPv4 address (the host GID the
# device offers: ib_core adds a GID for each address of the netdev), then
# ibv_devinfo, qrdma-pingpong RC and qrdma-bulk against the peers on rxe0
# (their TCP side at 10.0.2.2, the outer guest's loopback), qrdma-pingpong
# over UD and an SRQ, perftest (WRITE, READ, atomics, UD SEND; a SEND test
# over rdma_cm), then rping (rdma_cm through the device's CM proxy) as
# client and as server, and NVMe over RDMA. Prints
# "nested-result NAME STATUS" lines for guest-nested.sh and powers off.
export PATH=/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
echo "nested-inner: init at $(cut -d' ' -f1 /proc/uptime)s of the kernel's uptime"
ulimit -l unlimited

addr="" gid=""
for w in $(cat /proc/cmdline); do
    case "$w" in
        nested.addr=*) addr=${w#*=} ;;
        nested.gid=*) gid=${w#*=} ;;
        nested.nqn=*) nqn=${w#*=} ;;
    esac
done
end() { echo "nested-inner: power off"; echo o > /proc/sysrq-trigger; sleep 30; }

for m in ib_core.ko.xz ib_uverbs.ko.xz configfs.ko.xz ib_cm.ko.xz iw_cm.ko.xz rdma_cm.ko.xz \
         rdma_ucm.ko.xz qrdma.ko; do
    insmod "/modules/$m" || { echo "nested-inner: insmod $m failed"; end; }
done
ip link set lo up
net=""
for _ in $(seq 100); do
    for n in /sys/class/net/*; do
        [ "$(basename "$(readlink -f "$n/device/driver" 2>/dev/null)")" = qrdma ] && net=${n##*/}
    done
    [ -n "$net" ] && break
    sleep 0.2
done
[ -n "$net" ] || { echo "nested-inner: no qrdma netdev"; end; }
ip link set "$net" up
ip addr add 10.0.2.15/24 dev "$net"
ip addr add "$addr/32" dev "$net"
# The GID of that address in qrdma0's table (the driver admits host GIDs only).
idx=""
for _ in $(seq 300); do
    for g in /sys/class/infiniband/qrdma0/ports/1/gids/*; do
        [ "$(cat "$g" 2>/dev/null)" = "$gid" ] && idx=${g##*/} && break
    done
    [ -n "$idx" ] && break
    sleep 0.2
done
echo "nested-inner: qrdma0 ready: netdev $net, rxe0's GID $gid at index '${idx}'"
[ -n "$idx" ] || { echo "nested-result devinfo 1"; end; }

ibv_devinfo -v -d qrdma0 > /tmp/devinfo 2>&1
rc=$?
# what the test checks, not all of -v (a serial line costs time here)
grep -E 'hca_id|vendor|board_id|state|active_(mtu|speed|width)|link_layer|GID' /tmp/devinfo
a=$(printf '%d.%d.%d.%d' "0x${gid:30:2}" "0x${gid:32:2}" "0x${gid:35:2}" "0x${gid:37:2}")
grep -q 'state:[[:space:]]*PORT_ACTIVE' /tmp/devinfo || rc=2
grep -Eq "GID\[ *$idx\]:[[:space:]]*::ffff:$a, RoCE v2" /tmp/devinfo || rc=3
echo "nested-result devinfo $rc"

timeout 600 qrdma-pingpong -d qrdma0 -g "$idx" -t rc -s 4096 -n 20 -w 300 10.0.2.2
echo "nested-result pingpong $?"
timeout 600 qrdma-bulk -d qrdma0 -g "$idx" -m 8 -c 4 -w 256 -q 4 -s 2 -t 300 10.0.2.2
echo "nested-result bulk $?"

# The clients of the servers guest-nested.sh started on rxe0 (its
# more_servers: the same names, ports and options): qrdma-pingpong over
# UD and over an SRQ of 4 QPs, every byte checked; perftest's exit status
# (every completion successful), QPNs over TCP, and its SEND test over
# rdma_cm to rxe0's address (the proxy).
more() {
    local name=$1
    shift
    timeout 300 "$@" > /tmp/more.log 2>&1
    local rc=$?
    tail -n 2 /tmp/more.log
    echo "nested-result $name $rc"
}
more pp-ud qrdma-pingpong -d qrdma0 -g "$idx" -t ud -s 1024 -n 20 -w 300 -p 19877 10.0.2.2
more pp-srq qrdma-pingpong -d qrdma0 -g "$idx" -t srq -q 4 -s 4096 -n 20 -w 300 -p 19878 10.0.2.2
more write-bw ib_write_bw -d qrdma0 -x "$idx" -F -s 4096 -n 50 -p 18601 10.0.2.2
more read-bw ib_read_bw -d qrdma0 -x "$idx" -F -s 4096 -n 50 -p 18602 10.0.2.2
more atomic-bw ib_atomic_bw -d qrdma0 -x "$idx" -F -n 50 -p 18603 10.0.2.2
more send-bw-ud ib_send_bw -d qrdma0 -x "$idx" -F -c UD -s 1024 -n 50 -p 18604 10.0.2.2
more send-bw-cm ib_send_bw -d qrdma0 -R -F -s 4096 -n 50 -p 18605 "$a"

# rdma_cm over QP1, which the device (cm=proxy) carries through the outer
# guest's rdma_cm: this kernel's own ib_cm and rdma_cm, rping both ways.
# Active: rping's client here against the rping server the outer guest
# listens with on rxe0 (port 7471). The client READs nothing itself: the
# server READs its buffer and WRITEs it back, and -V compares the two,
# byte for byte, each of the 20 rounds; -v prints each round's data,
# counted here (rping exits 0 when a disconnect cuts it short).
timeout 600 rping -c -a "$a" -p 7471 -C 20 -S 4096 -V -v > /tmp/rping-c.log 2>&1
rc=$?
grep -v '^ping data: ' /tmp/rping-c.log | head -n 5
echo "nested-result rping-client $rc $(grep -c '^ping data: rdma-ping-' /tmp/rping-c.log)"
# Passive: rping's server here on port 7472, which the device's proxy
# listens on for the outer guest (cm-listen=7472); once it listens here
# (rdma res: its CM ID in LISTEN on qrdma0), the outer guest's client
# connects and checks its 20 rounds.
timeout 600 rping -s -a "$a" -p 7472 -C 20 -S 4096 > /tmp/rping-s.log 2>&1 &
srv=$!
for _ in $(seq 300); do
    rdma res show cm_id 2>/dev/null | grep -q "state LISTEN .*$a:7472" && break
    kill -0 "$srv" 2> /dev/null || break     # it gave up (no rdma_cm device)
    sleep 0.2
done
echo "nested-inner: rping server listening: $(rdma res show cm_id 2>/dev/null | grep -c "state LISTEN .*$a:7472")"
wait "$srv"
rc=$?
head -n 5 /tmp/rping-s.log
echo "nested-result rping-server $rc"

# NVMe over RDMA through the proxy: this kernel's nvme-rdma connects to
# the outer guest's nvmet on rxe0 (its rdma_cm), then reads 16 MB and
# writes 8 MB with direct I/O of 1 MB: the pages of dd's buffer (a user
# buffer's are rarely contiguous), which nvme-rdma fast-registers for the
# target's RDMA WRITEs and READs, answered with SEND_WITH_INV. The
# outer guest compares both SHA-256s with its file.
rc=0
for m in $(cat /modules/nvme.list); do
    insmod "/modules/$m" || { echo "nested-inner: insmod $m failed"; rc=1; }
done
echo "transport=rdma,traddr=$a,trsvcid=4420,nqn=$nqn,nr_io_queues=1" > /dev/nvme-fabrics || rc=2
for _ in $(seq 300); do
    [ -b /dev/nvme0n1 ] || [ "$rc" != 0 ] && break
    sleep 0.2
done
[ -b /dev/nvme0n1 ] || rc=3
sha=$(timeout 300 dd if=/dev/nvme0n1 bs=1M count=16 iflag=direct status=none | sha256sum | cut -d' ' -f1)
echo "nested-result nvme-read $rc $sha"
dd if=/dev/urandom of=/tmp/w bs=1M count=8 status=none
timeout 300 dd if=/tmp/w of=/dev/nvme0n1 bs=1M seek=16 oflag=direct status=none || rc=4
echo "nested-result nvme-write $rc $(sha256sum /tmp/w | cut -d' ' -f1)"
rc=0
echo 1 > /sys/class/nvme/nvme0/delete_controller || rc=1
echo "nested-result nvme-disconnect $rc"

# Expected: ib_core's "add_roce_gid GID add failed" for the netdev's
# addresses that are not host GIDs (10.0.2.15, the link-local one), which
# the driver refuses, and the taint of an unsigned out-of-tree module.
dmesg | grep -Ev 'add_roce_gid GID add failed|module verification failed' |
    grep -Ei 'qrdma.*(error|fail|timed out)|WARNING:|BUG:|Oops|Call Trace:' && rc=1 || rc=0
echo "nested-result dmesg $rc"
end
