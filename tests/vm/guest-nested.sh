#!/bin/bash
# Run by test-nested.sh in a guest whose NIC is virtio-net with soft-RoCE
# (rxe0): our QEMU (from the share, with the host libraries the guest
# lacks in ./lib and its firmware in ./fw) boots an inner guest with
# -device qrdma,backend=verbs,ibdev=rxe0 on rxe0's IPv4 GID, from a small
# initramfs made here of this guest's own files; the inner guest
# (nested-init.sh) runs ibv_devinfo and the clients of qrdma-pingpong (RC)
# and qrdma-bulk (WRITE/READ) against their servers on rxe0 here, then
# qrdma-pingpong over UD and an SRQ, and perftest's WRITE, READ, atomic
# and UD SEND tests (QPNs over TCP) and a SEND test over rdma_cm (-R),
# then rping over its own kernel's rdma_cm, which the device's CM proxy
# (its default) carries through this guest's rdma_cm, as client and as
# server, and NVMe over RDMA to this guest's nvmet.
#
# Environment: NESTED_PP_SEED sets the ping-pong servers' pattern seed
# (-S: RC, UD and SRQ); a seed the inner clients do not share must fail
# their byte checks (how the test is seen to fail). NESTED_INNER_MB: the inner guest's RAM.
# NESTED_CM: the device's cm= (unset: the device's default, the proxy;
# off must fail the rping checks: the inner rdma_cm then finds no device
# to bind to). NESTED_IOTHREAD: unset or on, the device's data path runs
# in an IOThread (iothread=dp0), whose thread must then have done the
# work (its CPU time is sampled while QEMU runs); off, in the main loop,
# and the same IOThread, there but not the device's, must stay idle (how
# the CPU-time check is seen to tell the two apart).
. "$(dirname "$0")/guest-lib.sh"
t_start=$(cut -d' ' -f1 /proc/uptime)
export LD_LIBRARY_PATH=$PWD/lib
qemu=$PWD/qemu-system-x86_64

if ./qemu-system-x86_64 -version > /tmp/qemu-version 2>&1; then
    ok "our QEMU starts in the guest: $(head -n1 /tmp/qemu-version)"
else
    fail "our QEMU does not start in the guest"
    cat /tmp/qemu-version
    finish guest-nested
    exit 1
fi
check "it offers -device qrdma" sh -c "$qemu -device help | grep -q '^name \"qrdma\"'"

check "rxe0 is there" wait_for 30 test -e /sys/class/infiniband/rxe0
gid_index=$(ipv4_gid_index rxe0) gid=""
[ -z "$gid_index" ] || gid=$(cat "/sys/class/infiniband/rxe0/ports/1/gids/$gid_index")
check "rxe0 has an IPv4 GID (index '$gid_index': $gid)" test -n "$gid_index"
# the GID's IPv4 address, which the inner guest's netdev must have
ip4=$(printf '%d.%d.%d.%d' "0x${gid:30:2}" "0x${gid:32:2}" "0x${gid:35:2}" "0x${gid:37:2}")
echo "rxe0's IPv4 GID is ::ffff:$ip4 at index $gid_index"

# ---- the inner initramfs ---------------------------------------------------
d=/tmp/inner
rm -rf "$d" && mkdir -p "$d"/usr/bin "$d"/usr/lib "$d"/usr/lib64 "$d"/proc "$d"/sys "$d"/dev "$d"/tmp \
    "$d"/etc/libibverbs.d "$d"/usr/lib/x86_64-linux-gnu/libibverbs "$d"/modules
for l in bin sbin lib lib64; do ln -s "usr/$l" "$d/$l" 2>/dev/null; done
ln -sfn bin "$d/usr/sbin"
kver=$(uname -r)
# put FILE: FILE (and, for a symlink, what it points to) at its path in $d
put() {
    local f=$1 r
    [ -e "$d$f" ] && return 0
    mkdir -p "$d$(dirname "$f")"
    if [ -L "$f" ]; then
        cp -P "$f" "$d$f"
        r=$(readlink -f "$f")
        [ "$r" = "$f" ] || put "$r"
    else
        cp "$f" "$d$f"
    fi
}
# put_elf FILE: FILE and the shared libraries it loads
put_elf() {
    local l
    put "$1"
    for l in $(ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
        put "$l"
    done
}
bins=(bash mount insmod ip cat ls sleep timeout dmesg grep seq cut head readlink basename ibv_devinfo
      qrdma-pingpong qrdma-bulk rping rdma dd sha256sum ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw)
for b in "${bins[@]}"; do
    p=$(command -v "$b") || { fail "no $b in this guest"; continue; }
    put_elf "$(readlink -f "$p")"
    [ -e "$d/usr/bin/$b" ] || ln -s "$(readlink -f "$p")" "$d/usr/bin/$b"
done
# what glibc loads at run time rather than link time: libgcc_s for
# pthread_exit and thread cancellation (rping's threads end that way)
put /usr/lib/x86_64-linux-gnu/libgcc_s.so.1
# the provider (only qrdma's: no other driver file, so no other is loaded)
put_elf /usr/lib/x86_64-linux-gnu/libibverbs/libqrdma-rdmav34.so
cp /etc/libibverbs.d/qrdma.driver "$d/etc/libibverbs.d/"
for m in kernel/drivers/infiniband/core/ib_core.ko.xz kernel/drivers/infiniband/core/ib_uverbs.ko.xz \
         kernel/fs/configfs/configfs.ko.xz kernel/drivers/infiniband/core/ib_cm.ko.xz \
         kernel/drivers/infiniband/core/iw_cm.ko.xz kernel/drivers/infiniband/core/rdma_cm.ko.xz \
         kernel/drivers/infiniband/core/rdma_ucm.ko.xz extra/qrdma.ko; do
    cp "/usr/lib/modules/$kver/$m" "$d/modules/" || fail "no module $m"
done
# NVMe over RDMA's host side and what it needs that is not there yet, in
# the order modprobe would load them (nvme.list, for the inner /init)
: > "$d/modules/nvme.list"
modprobe --show-depends nvme-rdma | while read -r kind path _; do
    [ "$kind" = insmod ] || continue
    m=$(basename "$path")
    [ -e "$d/modules/$m" ] && continue
    cp "$path" "$d/modules/" && echo "$m" >> "$d/modules/nvme.list"
done
check "nvme-rdma and its modules for the inner guest ($(wc -l < "$d/modules/nvme.list"))" \
    grep -q '^nvme-rdma' "$d/modules/nvme.list"
# qrdma.ko without its debug information (9 MB of it: the inner kernel
# unpacks the initramfs under nested TCG)
if command -v strip > /dev/null; then strip --strip-debug "$d/modules/qrdma.ko"; fi
install -m 0755 nested-init.sh "$d/init"
(cd "$d" && find . -print | cpio -o -H newc --quiet) > /tmp/inner.cpio
echo "inner initramfs: $(du -k /tmp/inner.cpio | cut -f1) KB, $(find "$d" -type f | wc -l) files"

# ---- the peers on rxe0 -----------------------------------------------------
# Each started when the inner guest is about to need it: the ping-pong's
# once qrdma0 has rxe0's GID (minutes after the launch), the transfer's
# once the ping-pong is over (their own waits count from their start);
# the inner clients retry their TCP connection until the servers listen. Each writes its exit
# status to /tmp/NAME.rc.
qps_before=$(rdma res show qp 2>/dev/null | grep -c 'link rxe0')
# NVMe over RDMA: this guest's nvmet exports a 32 MB file on rxe0's
# address (port 4420); its first 16 MB random, read by the inner guest;
# the inner guest writes 8 MB of its own after them. Both compared by
# their SHA-256 here.
nqn=nqn.2026-11.org.qemu:qrdma-nested
check "modprobe nvmet-rdma" modprobe nvmet-rdma
dd if=/dev/urandom of=/tmp/ns.img bs=1M count=16 status=none
truncate -s 32M /tmp/ns.img
ns_read_sha=$(head -c 16M /tmp/ns.img | sha256sum | cut -d' ' -f1)
check "nvmet port on RDMA $ip4:4420 (rxe0)" nvmet_export "$nqn" /tmp/ns.img "$ip4"
rm -f /tmp/pp.rc /tmp/bulk.rc /tmp/rping-s.rc /tmp/rping-c.rc
start_pp_server() {
    echo "  outer: starting the ping-pong server on rxe0"
    ( timeout 900 qrdma-pingpong -d rxe0 -g "$gid_index" -t rc -s 4096 -n 20 -w 300 \
        ${NESTED_PP_SEED:+-S "$NESTED_PP_SEED"} > /tmp/pp-server.log 2>&1
      echo $? > /tmp/pp.rc ) > /dev/null 2>&1 &
}
# rdma_cm: rping's server for the inner client (its rdma_cm through the
# device's proxy to this kernel's), and rping's client, with -V and -v as
# the inner one, once the inner server listens on the proxy's port.
start_rping_server() {
    echo "  outer: starting the rping server on rxe0 (port 7471)"
    ( timeout 1200 rping -s -a "$ip4" -p 7471 -C 20 -S 4096 > /tmp/rping-s.log 2>&1
      echo $? > /tmp/rping-s.rc ) > /dev/null 2>&1 &
}
start_rping_client() {
    echo "  outer: starting the rping client of the inner server (port 7472)"
    ( timeout 600 rping -c -a "$ip4" -p 7472 -C 20 -S 4096 -V -v > /tmp/rping-c.log 2>&1
      echo $? > /tmp/rping-c.rc ) > /dev/null 2>&1 &
}
# What runs once the RC ping-pong and the transfer are done, each server
# on a port of its own, all started with the RC ping-pong's (they wait for
# their client; the inner guest runs the clients one after the other):
# qrdma-pingpong over UD and over an SRQ of 4 QPs (every byte checked, as
# RC), and perftest (exit status: every completion successful), each
# "NAME PORT COMMAND" with rxe0's GID index for @GID@ and -S
# NESTED_PP_SEED, if set, for @SEED@. The inner guest's
# clients are in nested-init.sh, in this order, with the same ports.
more_servers=(
    "pp-ud 19877 qrdma-pingpong -d rxe0 -g @GID@ -t ud -s 1024 -n 20 -w 1400 -p 19877 @SEED@"
    "pp-srq 19878 qrdma-pingpong -d rxe0 -g @GID@ -t srq -q 4 -s 4096 -n 20 -w 1400 -p 19878 @SEED@"
    "write-bw 18601 ib_write_bw -d rxe0 -x @GID@ -F -s 4096 -n 50 -p 18601"
    "read-bw 18602 ib_read_bw -d rxe0 -x @GID@ -F -s 4096 -n 50 -p 18602"
    "atomic-bw 18603 ib_atomic_bw -d rxe0 -x @GID@ -F -n 50 -p 18603"
    "send-bw-ud 18604 ib_send_bw -d rxe0 -x @GID@ -F -c UD -s 1024 -n 50 -p 18604"
    "send-bw-cm 18605 ib_send_bw -d rxe0 -R -F -s 4096 -n 50 -p 18605"
)
start_more_servers() {
    local e name cmd seed=${NESTED_PP_SEED:+-S $NESTED_PP_SEED}
    for e in "${more_servers[@]}"; do
        read -r name _ cmd <<< "$e"
        cmd=${cmd//@SEED@/$seed}
        echo "  outer: starting the $name server on rxe0"
        rm -f "/tmp/$name.rc"
        ( timeout 1400 ${cmd//@GID@/$gid_index} > "/tmp/$name-server.log" 2>&1
          echo $? > "/tmp/$name.rc" ) > /dev/null 2>&1 &
    done
}
start_bulk_server() {
    echo "  outer: starting the WRITE/READ server on rxe0"
    ( timeout 900 qrdma-bulk -d rxe0 -g "$gid_index" -m 8 -c 4 -w 256 -q 4 -s 2 -t 300 \
        > /tmp/bulk-server.log 2>&1
      echo $? > /tmp/bulk.rc ) > /dev/null 2>&1 &
}

# ---- the inner guest --------------------------------------------------------
mem=${NESTED_INNER_MB:-512}
# cm= unset: the default (the proxy where it can start), which this tests
cm_opts="cm-listen=7472"
[ -z "${NESTED_CM:-}" ] || cm_opts="cm=$NESTED_CM"
[ "${NESTED_CM:-}" != proxy ] || cm_opts="cm=proxy,cm-listen=7472"
# shellcheck disable=SC2054 # the commas are QEMU's option syntax
iothread_opts=(-name inner,debug-threads=on -object iothread,id=dp0) dev_iothread=""
[ "${NESTED_IOTHREAD:-on}" = off ] || dev_iothread=",iothread=dp0"
# sample_ticks NAME: writes to /tmp/NAME.ticks, every second while the
# inner QEMU runs, the CPU time (user and system, in clock ticks) of its
# thread named NAME so far
sample_ticks() {
    local pid t st f
    pid=$(wait_for_pid 60)
    [ -n "$pid" ] || return 0
    while [ -d "/proc/$pid" ]; do
        for t in /proc/"$pid"/task/*; do
            [ "$(cat "$t/comm" 2>/dev/null)" = "$1" ] || continue
            st=$(cat "$t/stat" 2>/dev/null) || continue
            # the fields after the name, which may hold spaces: utime and
            # stime are the 12th and 13th of them
            read -r -a f <<< "${st##*) }"
            echo $((f[11] + f[12])) > "/tmp/$1.ticks.new" && mv "/tmp/$1.ticks.new" "/tmp/$1.ticks"
        done
        sleep 1
    done
}
wait_for_pid() {
    local i p
    for ((i = 0; i < $1 * 10; i++)); do
        p=$(pgrep -f -n "^$qemu -L") && { echo "$p"; return 0; }
        sleep 0.1
    done
}
rm -f "/tmp/IO dp0.ticks"
sample_ticks "IO dp0" &
sampler=$!
t_launch=$EPOCHREALTIME
# stamp: each line of the inner console with the seconds since the launch
stamp() {
    local line
    while IFS= read -r line; do
        line=${line%$'\r'}
        printf '  inner| %6.1f %s\n' "$(awk -v a="$t_launch" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')" "$line"
        case "$line" in
        "nested-inner: qrdma0 ready"*) start_pp_server; start_rping_server; start_more_servers ;;
        "nested-inner: rping server listening"*) start_rping_client ;;
        "nested-result pingpong"*) start_bulk_server ;;
        esac
    done
}
timeout 1500 "$qemu" -L "$PWD/fw" -accel tcg -cpu max -smp 1 -m "$mem" \
    -object "memory-backend-memfd,id=ram,size=${mem}M,share=on" -machine q35,memory-backend=ram \
    -nodefaults -no-reboot -display none -serial stdio \
    -kernel vmlinuz -initrd /tmp/inner.cpio \
    -append "console=ttyS0 panic=-1 loglevel=4 nested.addr=$ip4 nested.gid=$gid nested.nqn=$nqn nested.uptime0=$t_launch" \
    -netdev user,id=n0 "${iothread_opts[@]}" \
    -device "qrdma,netdev=n0,backend=verbs,ibdev=rxe0,ibgid-index=$gid_index,$cm_opts$dev_iothread" \
    < /dev/null 2>&1 | stamp | tee /tmp/inner.log
qrc=${PIPESTATUS[0]}
t_end=$EPOCHREALTIME
expect_eq "the inner QEMU's exit status" "$qrc" 0
# An IOThread with nothing to do sleeps in ppoll: had the data path run
# in the main loop, its thread would have no CPU time to speak of (the
# data path's took 129 ticks in a run of 2026-11-30).
wait "$sampler"
ticks=$(cat "/tmp/IO dp0.ticks" 2>/dev/null || echo -1)
echo "the IOThread's CPU time: $ticks ticks of $(getconf CLK_TCK) a second"
if [ -n "$dev_iothread" ]; then
    check "iothread=dp0: its thread did the data path's work (at least 50 ticks of CPU time: $ticks)" \
        test "$ticks" -ge 50
else
    check "no iothread=: the data path in the main loop, the unused IOThread idle (under 20 ticks: $ticks)" \
        test "$ticks" -ge 0 -a "$ticks" -lt 20
fi

result() { sed -n "s/^  inner| *[0-9.]* nested-result $1 //p" /tmp/inner.log | tail -n1; }
# at SED-REGEX: the seconds after the launch at which the inner console printed it
at() { sed -n "s/^  inner| *\([0-9.]*\) $1.*/\1/p" /tmp/inner.log | head -n1; }
expect_eq "inner: ibv_devinfo shows qrdma0, PORT_ACTIVE and rxe0's GID" "$(result devinfo)" 0
expect_eq "inner: qrdma-pingpong RC client (every byte checked)" "$(result pingpong)" 0
wait_for 60 test -s /tmp/pp.rc
expect_eq "outer: qrdma-pingpong RC server on rxe0" "$(cat /tmp/pp.rc 2>/dev/null)" 0
tail -n 3 /tmp/pp-server.log | sed 's/^/  pp-server| /'
expect_eq "inner: qrdma-bulk client (WRITE, READ back compared, checksums)" "$(result bulk)" 0
wait_for 60 test -s /tmp/bulk.rc
expect_eq "outer: qrdma-bulk server on rxe0" "$(cat /tmp/bulk.rc 2>/dev/null)" 0
tail -n 3 /tmp/bulk-server.log | sed 's/^/  bulk-server| /'
for e in "${more_servers[@]}"; do
    read -r name port cmd <<< "$e"
    expect_eq "inner: $name client (${cmd%% -d *}, port $port)" "$(result "$name")" 0
    wait_for 60 test -s "/tmp/$name.rc"
    expect_eq "outer: $name server on rxe0" "$(cat "/tmp/$name.rc" 2>/dev/null)" 0
    tail -n 2 "/tmp/$name-server.log" | sed "s/^/  $name-server| /"
done
expect_eq "inner: rping client over rdma_cm (the CM proxy): exit status and rounds checked (-V)" \
    "$(result rping-client)" "0 20"
wait_for 60 test -s /tmp/rping-s.rc
expect_eq "outer: rping server on rxe0 for the inner client" "$(cat /tmp/rping-s.rc 2>/dev/null)" 0
tail -n 3 /tmp/rping-s.log | sed 's/^/  rping-server| /'
expect_eq "inner: rping server over rdma_cm (cm-listen=7472)" "$(result rping-server)" 0
wait_for 60 test -s /tmp/rping-c.rc
expect_eq "outer: rping client of the inner server: exit status and rounds checked (-V)" \
    "$(cat /tmp/rping-c.rc 2>/dev/null) $(grep -c '^ping data: rdma-ping-' /tmp/rping-c.log)" "0 20"
grep -v '^ping data: ' /tmp/rping-c.log | tail -n 3 | sed 's/^/  rping-client| /'
expect_eq "inner: NVMe over RDMA connect, 16 MB read with direct I/O: its SHA-256 the file's" \
    "$(result nvme-read)" "0 $ns_read_sha"
w=$(result nvme-write)
expect_eq "inner: NVMe over RDMA 8 MB written with direct I/O: the file's bytes there its SHA-256" \
    "0 $(tail -c +$((16 * 1048576 + 1)) /tmp/ns.img | head -c 8M | sha256sum | cut -d' ' -f1)" "$w"
expect_eq "inner: the NVMe controller deleted" "$(result nvme-disconnect)" 0
nvmet_unexport "$nqn"
check "nvmet-rdma unloads (no queue left)" modprobe -r nvmet-rdma
expect_eq "inner: no qrdma error, WARN or oops in its kernel log" "$(result dmesg)" 0
expect_eq "QPs on rxe0 after the run" "$(rdma res show qp 2>/dev/null | grep -c 'link rxe0')" "$qps_before"

echo "timings (seconds): outer guest ready at $t_start of its uptime;" \
    "after the inner QEMU's launch: its /init $(at 'nested-inner: init')," \
    "qrdma0 up $(at 'nested-inner: qrdma0 ready'), ping-pong done $(at 'nested-result pingpong')," \
    "WRITE/READ done $(at 'nested-result bulk'), QEMU gone" \
    "$(awk -v a="$t_launch" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }')"
finish guest-nested
