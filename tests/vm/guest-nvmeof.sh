#!/bin/bash
# A kernel RDMA consumer over qrdma: NVMe over Fabrics (RDMA transport),
# run in both guests by test-nvmeof.sh. Guest 0 exports a 64 MB file as
# namespace 1 of an nvmet subsystem on an RDMA port; guest 1 connects with
# nvme-rdma and writes and reads the namespace with direct I/O, comparing
# every byte.
#
# What it exercises on qrdma: kernel QPs, CQs and SRQ-less receive rings
# from rdma_cm (connection setup through QP1 MADs), the host's fast-register
# MRs (IB_WR_REG_MR WQEs, ib_mr_pool), the target's RDMA READ/WRITE with
# the DMA lkey and several SGEs (rdma_rw), SEND_WITH_INV from the target
# invalidating the host's rkey (IB_WC_WITH_INVALIDATE at the host) and
# LOCAL_INV when the host has to invalidate itself.
. "$(dirname "$0")/guest-lib.sh"
nqn=nqn.2026-11.org.qemu:qrdma-test
me=$QRDMA_GUEST
vm_barrier up 150
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config

case $me in
0)
    check "modprobe nvmet-rdma" modprobe nvmet-rdma
    truncate -s 64M /tmp/ns.img
    check "nvmet port on RDMA 10.0.0.1:4420" nvmet_export "$nqn" /tmp/ns.img 10.0.0.1
    dmesg | grep -E 'nvmet' | tail -n 3 | sed 's/^/  /'
    vm_signal target-up
    vm_wait host-done 600
    # The host disconnected: the target's queues are gone, nothing failed.
    nvmet_unexport "$nqn"
    check "nvmet-rdma unloads" modprobe -r nvmet-rdma
    ;;
1)
    check "modprobe nvme-rdma" modprobe nvme-rdma
    vm_wait target-up 150
    dd if=/dev/urandom of=/tmp/pattern bs=1M count=48 status=none
    check "nvme connect -t rdma" \
        nvme connect -t rdma -a 10.0.0.1 -s 4420 -n "$nqn" -i 2
    blk=
    for i in $(seq 100); do
        for d in /sys/class/nvme/nvme*; do
            [ "$(cat "$d/transport" 2>/dev/null)" = rdma ] || continue
            blk=$(ls "$d" | grep -E '^nvme[0-9]+(c[0-9]+)?n1$' | head -n1)
        done
        [ -n "$blk" ] && [ -b "/dev/${blk/c[0-9]*n/n}" ] && break
        sleep 0.2
    done
    blk=/dev/${blk/c[0-9]*n/n}
    check "namespace block device $blk" test -b "$blk"
    expect_eq "namespace size" "$(blockdev --getsize64 "$blk")" $((64 << 20))

    # 1 MB direct writes: each one a fast-registered 256-page MR the target
    # RDMA READs; then 1 MB direct reads: the target RDMA WRITEs and answers
    # with SEND_WITH_INV of the host's rkey.
    blk_roundtrip "$blk" NVMe/RDMA
    # Small I/O: 4 KB writes travel inline in the command capsule's SEND;
    # 12 KB reads map three pages; odd offsets cross MR page boundaries.
    check "4 KB direct writes at 512 offsets" \
        dd if=/tmp/pattern of="$blk" bs=4k count=512 skip=4096 seek=8192 oflag=direct \
        status=none
    check "12 KB direct reads" \
        dd if="$blk" of=/tmp/back2 bs=12k count=170 skip=$((8192 / 3)) iflag=direct status=none
    dd if=/tmp/pattern of=/tmp/want2 bs=4k count=512 skip=4096 status=none
    dd if="$blk" of=/tmp/back3 bs=1M count=2 skip=32 iflag=direct status=none
    check "4 KB writes read back in 1 MB pieces" cmp /tmp/want2 /tmp/back3
    tail -c +$((8192 % 3 * 4096 + 1)) /tmp/back2 > /tmp/back2.tail
    ls -l /tmp/back2 /tmp/back2.tail /tmp/want2 | sed 's/^/  /'
    check "4 KB writes read back in 12 KB pieces" \
        cmp -n $((170 * 12288 - 8192 % 3 * 4096)) /tmp/want2 /tmp/back2.tail
    # Many I/Os in flight at once: fio is not in the image; parallel dd.
    readers=()
    for j in 0 1 2 3; do
        dd if="$blk" of=/tmp/par$j bs=64k count=128 skip=$((j * 128)) iflag=direct \
            status=none &
        readers+=($!)
    done
    for j in 0 1 2 3; do
        wait "${readers[j]}"
        check "parallel reader $j exited 0" test $? = 0
    done
    cat /tmp/par0 /tmp/par1 /tmp/par2 /tmp/par3 > /tmp/par
    check "4 parallel readers of 8 MB each" cmp -n $((32 << 20)) /tmp/pattern /tmp/par

    check "nvme disconnect" nvme disconnect -n "$nqn"
    check "nvme-rdma unloads" modprobe -r nvme-rdma
    vm_signal host-done
    ;;
esac
# No oops, WARN or driver error in either guest.
no_rdma_errors nvme nvme
finish guest-nvmeof
