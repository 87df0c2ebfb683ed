# Helpers for test scripts that run inside a vm-run guest. Sourced.
fails=0
ok()   { echo "ok: $*"; }
# Every failure is also noted in the job directory: a life that ends in a
# reboot or a kill (scripts/vm-run) never reaches finish, so the last life's
# finish counts them.
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
    [ -d "${QRDMA_JOB:-}" ] && echo "life ${QRDMA_BOOT:-1}: $*" >> "$QRDMA_JOB/fails-${QRDMA_GUEST:-0}"
}
# check DESCRIPTION CMD...: run CMD, pass when it exits 0
check() { local d=$1; shift; if "$@"; then ok "$d"; else fail "$d"; fi; }
# expect_eq DESCRIPTION ACTUAL EXPECTED
expect_eq() { if [ "$2" = "$3" ]; then ok "$1: '$2'"; else fail "$1: '$2', expected '$3'"; fi; }
# wait_for SECONDS CMD...: poll CMD until it succeeds
wait_for() { local t=$1 i; shift; for i in $(seq $((t * 10))); do "$@" && return 0; sleep 0.1; done; return 1; }
# nic_stat NAME [IFACE]: the ethtool -S counter NAME of IFACE (eth0)
nic_stat() { ethtool -S "${2:-eth0}" | awk -v n="$1:" '$1 == n { print $2 }'; }
# nic_stat_above NAME N [IFACE]: that counter is past N (for wait_for)
nic_stat_above() { local v; v=$(nic_stat "$1" "${3:-eth0}"); [ -n "$v" ] && [ "$v" -gt "$2" ]; }
# finish NAME: the verdict, counting this guest's failures in earlier lives.
finish() {
    local f=${QRDMA_JOB:-/nonexistent}/fails-${QRDMA_GUEST:-0} earlier=0
    if [ -s "$f" ]; then
        earlier=$(grep -vc "^life ${QRDMA_BOOT:-1}: " "$f")
        grep -v "^life ${QRDMA_BOOT:-1}: " "$f" | sed 's/^/FAIL in an earlier /'
    fi
    echo "$1: $((fails + earlier)) failure(s)"
    [ "$fails" -eq 0 ] && [ "$earlier" -eq 0 ]
}
# no_oops: the kernel logged no WARN, BUG or oops in this boot; if it did,
# the first one and its call trace are shown (the log a diagnosis needs).
no_oops() {
    local re="WARNING:|BUG:|Oops|Call Trace:"
    if dmesg | grep -qE "$re"; then
        fail "no kernel WARN/BUG/oops"
        dmesg | sed -En "/$re/,\$p" | head -n 60 | sed 's/^/  oops: /'
    else
        ok "no kernel WARN/BUG/oops"
    fi
}
# no_rdma_errors WHAT ULP_ERE: no oops, and no error line from qrdma (its
# messages name the PCI function, "qrdma 0000:00:01.0: ...") or from the
# consumer whose messages match ULP_ERE; shows what it found.
no_rdma_errors() {
    local bad="qrdma [0-9a-f]{4}:[0-9a-f:.]+: .*(error|fail|timed out)|($2).*(error|fail)"
    no_oops
    check "no qrdma or $1 errors" sh -c "! dmesg | grep -Ei '$bad'"
    dmesg | grep -Ei "$bad|WARNING|BUG|$2" | head -n 12 | sed 's/^/  dmesg: /'
}
# blk_roundtrip DEV WHAT: /tmp/pattern (48 MB) written to block device DEV
# and read back with 1 MB direct I/O, compared byte for byte, timed.
blk_roundtrip() {
    local t0 dt
    t0=$(date +%s.%N)
    check "48 MB written with 1 MB direct I/O" \
        dd if=/tmp/pattern of="$1" bs=1M oflag=direct conv=fsync status=none
    check "48 MB read back with 1 MB direct I/O" \
        dd if="$1" of=/tmp/back bs=1M count=48 iflag=direct status=none
    check "the data read back is the data written" cmp /tmp/pattern /tmp/back
    dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    echo "96 MB through $2 in ${dt}s"
}
# pair_run NAME CMD...: CMD as a server in the background and "CMD
# $QRDMA_IP" as its client in this guest (loopback through the device),
# logs /tmp/NAME-{s,c}.log; passes only when both exit 0 within 120 s.
pair_run() {
    local name=$1 s rs rc
    shift
    timeout 120 "$@" > "/tmp/$name-s.log" 2>&1 &
    s=$!
    wait_serving "$s"
    timeout 120 "$@" "$QRDMA_IP" > "/tmp/$name-c.log" 2>&1
    rc=$?
    wait "$s"
    rs=$?
    tail -n 1 "/tmp/$name-s.log" "/tmp/$name-c.log" 2>&1 | sed 's/^/  | /'
    [ "$rs" -eq 0 ] && [ "$rc" -eq 0 ]
}
# tree_pids PID: PID and every process below it (timeout, sh -c and the
# tool it runs), separated by '|'; from /proc, without a process per level.
tree_pids() {
    local p kids=() out=$1
    read -r -a kids < "/proc/$1/task/$1/children" 2>/dev/null
    for p in "${kids[@]}"; do out+="|$(tree_pids "$p")"; done
    echo "$out"
}
# serving PID: a process of PID's tree listens on a TCP port (the
# pingpongs', perftest's and qrdma's own exchange) or holds an rdma_cm ID
# in LISTEN (rping, ucmatose, udaddy, rsockets, perftest -R).
serving() {
    local re out
    re=$(tree_pids "$1")
    out=$(ss -Hltnp 2>/dev/null)
    [[ $out =~ pid=($re), ]] && return 0
    out=$(rdma resource show cm_id 2>/dev/null | grep 'state LISTEN')
    [[ $out =~ pid\ ($re)( |$) ]]
}
# wait_serving PID [SECONDS]: wait until the server PID listens (at most
# SECONDS, 10) or has exited, so that its client neither finds it missing
# nor waits a fixed pause sized for the slowest start. A server that never
# listens (mckey's receiver joins a group instead) costs the whole SECONDS:
# give it fewer. Fails when PID has exited.
wait_serving() {
    local t0=$SECONDS
    until ! kill -0 "$1" 2>/dev/null || serving "$1"; do
        if [ $((SECONDS - t0)) -ge "${2:-10}" ]; then
            echo "  (server $1 not seen listening after $((SECONDS - t0)) s)"
            break
        fi
        sleep 0.1
    done
    kill -0 "$1" 2>/dev/null
}
# ipv4_gid_index DEV: the index of the first GID of DEV's port 1 that is an
# IPv4 address (::ffff:a.b.c.d), as RoCEv2 uses it; nothing if it has none.
ipv4_gid_index() {
    local g
    for g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
        case "$(cat "$g" 2>/dev/null)" in
        0000:0000:0000:0000:0000:ffff:*) echo "${g##*/}"; return 0 ;;
        esac
    done
}

qrdma_bdf() { basename "$(readlink -f /sys/bus/pci/drivers/qrdma/0000:* 2>/dev/null | head -n1)"; }
# Rendezvous between guests through the shared /job directory.
# A create, not touch: vm-run may remove the file before touch would set
# its times (touch then fails with ENOENT).
vm_signal() { : > "$QRDMA_JOB/sig-$1"; }
# vm_wait NAME [SECONDS]: wait until some guest signalled NAME
vm_wait() { wait_for "${2:-120}" test -e "$QRDMA_JOB/sig-$1" || { fail "timed out waiting for '$1'"; return 1; }; }
# vm_barrier NAME: every guest signals NAME-<i> and waits for all of them
vm_barrier() {
    local i
    vm_signal "$1-$QRDMA_GUEST"
    for i in $(seq 0 $((QRDMA_GUESTS - 1))); do vm_wait "$1-$i" "${2:-120}" || return 1; done
}
peer_ip() { echo "10.0.0.$(( (QRDMA_GUEST + 1) % QRDMA_GUESTS + 1 ))"; }
# vm_rss NAME: this guest's QEMU resident set size in kB (vm-run reads it).
vm_rss() {
    vm_signal "rss-$1-$QRDMA_GUEST"
    wait_for 30 test -e "$QRDMA_JOB/rss-$1-$QRDMA_GUEST" && cat "$QRDMA_JOB/rss-$1-$QRDMA_GUEST"
}
# vm_rss_qemu NAME: of that, the kB neither guest RAM nor TCG's code cache
# (QEMU's heap, the device's state): what a device leak would grow. Call it
# after vm_rss NAME.
vm_rss_qemu() { cat "$QRDMA_JOB/rss-qemu-$1-$QRDMA_GUEST"; }
# vm_thread_ticks NAME THREAD: the CPU time, in clock ticks, that the thread
# named THREAD ("IO dp0": the IOThread dp0) of this guest's QEMU has used so
# far (vm-run reads it at NAME); nothing if there is no such thread.
vm_thread_ticks() {
    local f=$QRDMA_JOB/threads-$1-$QRDMA_GUEST
    vm_signal "threads-$1-$QRDMA_GUEST"
    wait_for 30 test -e "$f" &&
        awk -v t="$2" '{ n = $1; sub(/^[0-9]+ /, ""); if ($0 == t) print n }' "$f"
}
# vm_qom PROP: the QOM property PROP of this guest's qrdma device, which
# vm-run reads over QMP now; nothing if it cannot be read.
vm_qom() {
    local f=$QRDMA_JOB/qom-$1-$QRDMA_GUEST
    rm -f "$f"
    vm_signal "qom-$1-$QRDMA_GUEST"
    wait_for 30 test -e "$f" && cat "$f"
}

# Lives (scripts/vm-run header): $QRDMA_BOOT is this guest's boot number,
# 1 in its first life; the command runs again in every life.
# vm_kill J: vm-run SIGKILLs guest J's QEMU; returns once the signal is sent.
vm_kill() {
    rm -f "$QRDMA_JOB/killed-$1"
    vm_signal "kill-$1"
    wait_for 30 test -e "$QRDMA_JOB/killed-$1" && [ "$(cat "$QRDMA_JOB/killed-$1")" != refused ]
}
# vm_boot J: vm-run boots the killed guest J again (its next life).
vm_boot() {
    rm -f "$QRDMA_JOB/booted-$1"
    vm_signal "boot-$1"
    wait_for 30 test -e "$QRDMA_JOB/booted-$1" && [ "$(cat "$QRDMA_JOB/booted-$1")" != refused ]
}
# vm_reboot: end this life with a hard reset, as sysrq b does it: no
# shutdown, no sync; QEMU resets the machine and the device with whatever
# traffic runs. The command starts again in the next life. Never returns.
vm_reboot() {
    echo reboot > "$QRDMA_JOB/end-$QRDMA_GUEST-$QRDMA_BOOT"
    echo "guest $QRDMA_GUEST: rebooting (end of life $QRDMA_BOOT)"
    echo b > /proc/sysrq-trigger
    sleep 60
    exit 1
}

# Object counters of qrdma0: in the driver (res_*) and in the device's own
# registers (hw_*). "Idle" is what the device holds with no user process:
# ib_core's MAD layer owns the GSI QP (QP 1), its CQ, PD and DMA MR.
qdev_sys=/sys/class/infiniband/qrdma0
zero_counters="res_ucontexts res_pds res_qps res_cqs res_srqs res_mrs res_ahs res_pbles hw_qps hw_cqs hw_srqs hw_mrs hw_ahs"
counters() {
    local c
    for c in $zero_counters hmc_backed_pages hw_destroy_errors; do
        printf '%s=%s ' "$c" "$(cat "$qdev_sys/$c" 2>/dev/null || echo missing)"
    done
    echo
}
declare -A idle
idle_snapshot() {
    local c
    for c in $zero_counters hmc_backed_pages; do idle[$c]=$(cat "$qdev_sys/$c"); done
}
# Only the MAD layer's objects: no context, at most the GSI QP, its CQ(s), PD, MR.
idle_is_mad_only() {
    [ "${idle[res_ucontexts]}" = 0 ] && [ "${idle[res_qps]}" -le 1 ] &&
        [ "${idle[res_cqs]}" -le 2 ] && [ "${idle[res_pds]}" -le 1 ] &&
        [ "${idle[res_mrs]}" -le 1 ] && [ "${idle[res_srqs]}" = 0 ] &&
        [ "${idle[hw_qps]}" = "${idle[res_qps]}" ] && [ "${idle[hw_cqs]}" = "${idle[res_cqs]}" ]
}
counters_at_zero() {
    local c
    for c in $zero_counters hmc_backed_pages; do
        [ "$(cat "$qdev_sys/$c" 2>/dev/null)" = "${idle[$c]}" ] || return 1
    done
    [ "$(cat "$qdev_sys/hw_destroy_errors")" = 0 ]
}
# After a driver reload: the netdev back up with its address, so the port
# has its GIDs again. The netdev may register a moment after the RDMA
# device, and the RoCE GIDs follow the address asynchronously: wait for
# both, or connections would fail to resolve their path. The IPv6
# link-local address (and its GID) comes up tentative: until duplicate
# address detection ends, a path to it does not resolve (ETIMEDOUT), so
# wait for that too.
netdev_up() {
    local n gid
    wait_for 30 test -d "$qdev_sys/device/net" || return 1
    n=$(ls "$qdev_sys/device/net" | head -n1)
    ip link set "$n" up && ip addr replace "$QRDMA_IP/24" dev "$n" || return 1
    gid=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${QRDMA_IP//./ })
    wait_for 30 grep -qsx "$gid" "$qdev_sys"/ports/1/gids/* || return 1
    wait_for 30 link_local_ready "$n"
}
# link_local_ready NETDEV: it has an IPv6 link-local address that is no
# longer tentative.
link_local_ready() {
    local a
    a=$(ip -6 -o addr show dev "$1" scope link)
    [ -n "$a" ] && ! grep -q tentative <<< "$a"
}

# Live migration (scripts/vm-run, sig-migrate). QEMU refuses to migrate a
# guest with a virtio-9p share mounted, so the guest that moves gives up
# /job and the host share first (vm_detach: the caller's working directory
# and open files must be off them) and talks to its peers over the network
# meanwhile; vm_attach mounts /job again.
vm_detach() {
    cd / || return 1
    if mountpoint -q /mnt/host; then umount /mnt/host || return 1; fi
    umount /job
}
vm_attach() {
    mountpoint -q /job ||
        mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none job /job
}
# vm_migrate J: vm-run live-migrates guest J to a new QEMU; prints vm-run's
# answer ("ok downtime_ms=D total_ms=T ..." or "failed: REASON") and
# returns 0 only for ok. Guest J keeps its life.
vm_migrate() {
    local a
    rm -f "$QRDMA_JOB/migrated-$1"
    vm_signal "migrate-$1"
    wait_for "${QRDMA_MIGRATE_WAIT:-240}" test -e "$QRDMA_JOB/migrated-$1" || { echo "failed: no answer"; return 1; }
    a=$(cat "$QRDMA_JOB/migrated-$1")
    echo "$a"
    [[ "$a" == ok* ]]
}
# nvmet_export NQN FILE ADDR: FILE as namespace 1 of nvmet subsystem NQN,
# open to any host, on RDMA port 1 at ADDR:4420 (configfs; nvmet-rdma
# loaded); returns the status of linking the subsystem to the port.
# nvmet_unexport NQN undoes it.
nvmet_export() {
    local cfg=/sys/kernel/config/nvmet
    mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
    mkdir "$cfg/subsystems/$1"
    echo 1 > "$cfg/subsystems/$1/attr_allow_any_host"
    mkdir "$cfg/subsystems/$1/namespaces/1"
    echo -n "$2" > "$cfg/subsystems/$1/namespaces/1/device_path"
    echo 1 > "$cfg/subsystems/$1/namespaces/1/enable"
    mkdir "$cfg/ports/1"
    echo rdma > "$cfg/ports/1/addr_trtype"
    echo ipv4 > "$cfg/ports/1/addr_adrfam"
    echo "$3" > "$cfg/ports/1/addr_traddr"
    echo 4420 > "$cfg/ports/1/addr_trsvcid"
    ln -s "$cfg/subsystems/$1" "$cfg/ports/1/subsystems/$1"
}
nvmet_unexport() {
    local cfg=/sys/kernel/config/nvmet
    rm "$cfg/ports/1/subsystems/$1"
    rmdir "$cfg/ports/1"
    echo 0 > "$cfg/subsystems/$1/namespaces/1/enable"
    rmdir "$cfg/subsystems/$1/namespaces/1"
    rmdir "$cfg/subsystems/$1"
}
