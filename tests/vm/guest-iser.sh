#!/bin/bash
# A kernel RDMA consumer over qrdma: iSER (iSCSI Extensions for RDMA), run
# in both guests by test-iser.sh. Guest 0 is a LIO target (configfs, a
# 64 MB fileio LUN, its portal with iSER enabled); guest 1 is the open-iscsi
# initiator with an interface whose transport is iser: it logs in, writes
# and reads the LUN with direct I/O and compares every byte.
#
# What it exercises on qrdma: kernel QPs from rdma_cm, the initiator's
# fast-registered MRs per SCSI command, the target's RDMA READ (SCSI
# WRITE data pulled from the initiator) and RDMA WRITE (SCSI READ data),
# SENDs carrying iSCSI PDUs, and remote invalidation.
. "$(dirname "$0")/guest-lib.sh"
iqn=iqn.2026-11.org.qemu:qrdma-target
portal=10.0.0.1:3260
me=$QRDMA_GUEST
vm_barrier up 150
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config

case $me in
0)
    # LIO through configfs, as targetcli would write it (targetcli wants a
    # D-Bus this initramfs guest does not run).
    check "modprobe ib_isert" bash -c 'modprobe iscsi_target_mod && modprobe ib_isert'
    T=/sys/kernel/config/target
    tpg=$T/iscsi/$iqn/tpgt_1
    truncate -s 64M /tmp/lun.img
    check "fileio backstore" bash -c "mkdir -p $T/core/fileio_0/lun0 &&
        echo fd_dev_name=/tmp/lun.img,fd_dev_size=$((64 << 20)) > $T/core/fileio_0/lun0/control &&
        echo 1 > $T/core/fileio_0/lun0/enable"
    check "iSCSI target $iqn, LUN 0" bash -c "mkdir -p $tpg/lun/lun_0 &&
        ln -s $T/core/fileio_0/lun0 $tpg/lun/lun_0/lun0"
    check "portal $portal" mkdir "$tpg/np/$portal"
    # The TCP portal stays for discovery; iser=1 adds the iSER one beside it.
    check "iSER enabled on the portal" bash -c "echo 1 > $tpg/np/$portal/iser"
    check "open access (test only)" bash -c "echo 0 > $tpg/attrib/authentication &&
        echo 1 > $tpg/attrib/generate_node_acls && echo 1 > $tpg/attrib/cache_dynamic_acls &&
        echo 0 > $tpg/attrib/demo_mode_write_protect && echo 1 > $tpg/enable"
    vm_signal target-up
    vm_wait initiator-done 600
    check "target removed" bash -c "echo 0 > $tpg/enable && echo 0 > $tpg/np/$portal/iser &&
        rmdir $tpg/np/$portal && rm $tpg/lun/lun_0/lun0 && rmdir $tpg/lun/lun_0 &&
        rmdir $tpg && rmdir $T/iscsi/$iqn && rmdir $T/core/fileio_0/lun0 $T/core/fileio_0"
    check "ib_isert unloads" modprobe -r ib_isert
    ;;
1)
    # No udev here: the SCSI disk driver is loaded by hand, as udev would on the LUN.
    check "modprobe ib_iser and sd_mod" bash -c "modprobe ib_iser && modprobe sd_mod"
    mkdir -p /etc/iscsi /run/lock/iscsi /var/lib/iscsi
    [ -s /etc/iscsi/initiatorname.iscsi ] ||
        echo "InitiatorName=iqn.2026-11.org.qemu:qrdma-initiator" > /etc/iscsi/initiatorname.iscsi
    check "iscsid" iscsid
    check "an iSER interface" iscsiadm -m iface -I iser0 -o new
    check "its transport is iser" \
        iscsiadm -m iface -I iser0 -o update -n iface.transport_name -v iser
    dd if=/dev/urandom of=/tmp/pattern bs=1M count=48 status=none
    vm_wait target-up 150
    # SendTargets discovery over TCP; the node is then bound to the iSER interface.
    check "discovery" iscsiadm -m discovery -t st -p "$portal"
    check "the node on the iSER interface" iscsiadm -m node -T "$iqn" -p "$portal" -I iser0 -o new
    check "login over iSER" iscsiadm -m node -T "$iqn" -p "$portal" -I iser0 --login
    check "the session's transport is iser" \
        bash -c "iscsiadm -m session -P 1 | grep -q 'Iface Transport: iser'"
    dev=
    for i in $(seq 150); do
        dev=$(iscsiadm -m session -P 3 2>/dev/null | awk '/Attached scsi disk/ { print $4; exit }')
        [ -n "$dev" ] && [ -b "/dev/$dev" ] && break
        sleep 0.2
    done
    check "the LUN's block device /dev/$dev" test -b "/dev/$dev"
    expect_eq "LUN size" "$(blockdev --getsize64 "/dev/$dev")" $((64 << 20))
    blk_roundtrip "/dev/$dev" iSER
    check "4 KB direct writes at 512 offsets" \
        dd if=/tmp/pattern of="/dev/$dev" bs=4k count=512 skip=4096 seek=12288 oflag=direct \
        status=none
    dd if=/tmp/pattern of=/tmp/want2 bs=4k count=512 skip=4096 status=none
    dd if="/dev/$dev" of=/tmp/back2 bs=1M count=2 skip=48 iflag=direct status=none
    check "4 KB writes read back" cmp /tmp/want2 /tmp/back2
    check "logout" iscsiadm -m node -T "$iqn" -p "$portal" -I iser0 --logout
    vm_signal initiator-done
    ;;
esac
no_rdma_errors iSER iser
finish guest-iser
