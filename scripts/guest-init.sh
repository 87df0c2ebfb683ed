#!/bin/bash
# PID 1 of a qrdma test guest: the root image's /init, which the initramfs
# (scripts/guest-boot.c) runs once it has mounted the root.
#
# Kernel command line words it reads:
#   vmrun.guest=I    this guest's index (0-based)
#   vmrun.guests=N   how many guests share the segment
#   vmrun.share=1    a host directory is shared with tag "host"
#   vmrun.mac=M      MAC of the test segment's NIC
#   vmrun.nic=K      qrdma (default), or virtio-rxe: the NIC is virtio-net
#                    and soft-RoCE (rxe0) runs over it, or qrdma+virtio-rxe:
#                    both (rxe0 on 10.0.1.0/24)
# The vm-run job directory is shared with tag "job" and mounted at /job:
# it holds cmd-I.sh (this guest's command, if any); the guest writes rc-I
# there when the command ends, and an idle guest waits for the file "stop".
# Every boot is a life (scripts/vm-run): the N-th boot of guest I writes
# /job/life-I-N and runs the command with QRDMA_BOOT=N. Life N > 1 must
# follow an announced end of life N-1 (/job/end-I-(N-1): a vm_reboot or a
# vm-run kill); otherwise (a panic, a reset) the command fails unrun.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /run /tmp /job /mnt/host
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
exec </dev/console >/dev/console 2>&1

log() { echo "qrdma-guest[$(cut -d' ' -f1 /proc/uptime)]: $*"; }
# The root is a disk that power-off shuts down: power off in this process,
# which then runs no more (scripts/guest-boot.c says why).
power_off() { exec /usr/local/sbin/qrdma-boot poweroff; }

QRDMA_GUEST=0 QRDMA_GUESTS=1 share=0 mac="" nic=qrdma
for w in $(cat /proc/cmdline); do
    case "$w" in
        vmrun.guest=*) QRDMA_GUEST=${w#*=} ;;
        vmrun.guests=*) QRDMA_GUESTS=${w#*=} ;;
        vmrun.share=*) share=${w#*=} ;;
        vmrun.mac=*) mac=${w#*=} ;;
        vmrun.nic=*) nic=${w#*=} ;;
    esac
done
export QRDMA_GUEST QRDMA_GUESTS QRDMA_JOB=/job
export QRDMA_IP="10.0.0.$((QRDMA_GUEST + 1))"
hostname "g$QRDMA_GUEST"
ulimit -l unlimited
ip link set lo up

modprobe 9pnet_virtio && modprobe 9p || log "ERROR: no 9p modules"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none job /job ||
    { log "ERROR: cannot mount the job share"; power_off; }

QRDMA_BOOT=1
while [ -e "/job/life-$QRDMA_GUEST-$QRDMA_BOOT" ]; do QRDMA_BOOT=$((QRDMA_BOOT + 1)); done
cut -d' ' -f1 /proc/uptime > "/job/life-$QRDMA_GUEST-$QRDMA_BOOT"
export QRDMA_BOOT
unannounced=""
if [ "$QRDMA_BOOT" -gt 1 ]; then
    log "life $QRDMA_BOOT: life $((QRDMA_BOOT - 1)) ended by" \
        "'$(cat "/job/end-$QRDMA_GUEST-$((QRDMA_BOOT - 1))" 2>/dev/null || echo nothing announced)'"
    [ -e "/job/end-$QRDMA_GUEST-$((QRDMA_BOOT - 1))" ] || unannounced=1
fi
if [ "$share" = 1 ]; then
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none host /mnt/host ||
        log "ERROR: cannot mount the host share"
fi

# Interfaces on the test segment have unique MACs: skip IPv6 duplicate
# address detection, so link-local addresses (and their RoCE GIDs) are
# usable the moment an interface comes up, here and after a driver reload.
echo 0 > /proc/sys/net/ipv6/conf/default/accept_dad 2>/dev/null || true

# What udev would do at boot: load the RDMA stack and our driver.
for m in ib_core ib_uverbs rdma_ucm qrdma; do
    modprobe "$m" || log "ERROR: modprobe $m failed"
done

# Address the segment's interface (found by its MAC; a test may add more
# qrdma functions, which stay unconfigured). qrdma+virtio-rxe: both, the
# virtio-net one (MAC 52:54:00:72:...) on the second segment, 10.0.1.0/24.
# net_up DRIVER MAC ADDRESS [rxe]
net_up() {
    local n drv
    for n in /sys/class/net/*; do
        drv=$(basename "$(readlink -f "$n/device/driver" 2>/dev/null)")
        [ "$drv" = "$1" ] && [ "$(cat "$n/address")" = "$2" ] || continue
        ip link set "${n##*/}" up
        ip addr add "$3/24" dev "${n##*/}"
        log "net ${n##*/} $3"
        if [ "${4:-}" = rxe ]; then
            modprobe rdma_rxe && rdma link add rxe0 type rxe netdev "${n##*/}" ||
                log "ERROR: cannot start soft-RoCE on ${n##*/}"
        fi
    done
}
case "$nic" in virtio-rxe|qrdma+virtio-rxe)
    modprobe virtio_net || log "ERROR: modprobe virtio_net failed" ;;
esac
case "$nic" in
    virtio-rxe) net_up virtio_net "$mac" "$QRDMA_IP" rxe ;;
    qrdma+virtio-rxe)
        net_up qrdma "$mac" "$QRDMA_IP"
        net_up virtio_net "52:54:00:72:${mac#52:54:00:71:}" "10.0.1.$((QRDMA_GUEST + 1))" rxe ;;
    *) net_up qrdma "$mac" "$QRDMA_IP" ;;
esac

log "ready"
cmd=/job/cmd-$QRDMA_GUEST.sh
if [ -n "$unannounced" ]; then
    log "ERROR: this guest rebooted unasked (a panic or a reset?); its command fails"
    echo 1 > "/job/rc-$QRDMA_GUEST.tmp" && mv "/job/rc-$QRDMA_GUEST.tmp" "/job/rc-$QRDMA_GUEST"
elif [ -e "$cmd" ]; then
    # In a subshell: PID 1's working directory stays off the shares, so a
    # command can unmount them (QEMU refuses live migration while a 9p
    # share is mounted: vm_detach in tests/vm/guest-lib.sh).
    ( if [ "$share" = 1 ]; then cd /mnt/host; else cd /root; fi; exec bash "$cmd" )
    rc=$?
    log "command exited with $rc"
    # A command that unmounted the job share and did not mount it again.
    mountpoint -q /job ||
        mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none job /job ||
        log "ERROR: cannot mount the job share again"
    echo "$rc" > "/job/rc-$QRDMA_GUEST.tmp" && mv "/job/rc-$QRDMA_GUEST.tmp" "/job/rc-$QRDMA_GUEST"
else
    log "idle until the other guests finish"
    while [ ! -e /job/stop ]; do sleep 0.5; done
fi
sync
umount /mnt/host 2>/dev/null
umount /job
power_off
