#!/bin/bash
# A kernel RDMA consumer over qrdma: NFS over RDMA (RPC-over-RDMA, port
# 20049), run in both guests by test-nfs.sh. Guest 0 is the server (knfsd
# with an RDMA listener, a tmpfs export); guest 1 mounts it with
# proto=rdma, NFS 4.2 and then NFS 3, writes files, reads them back after
# dropping its cache, and compares every byte and the server's checksums.
#
# What it exercises on qrdma: kernel QPs from rdma_cm on both sides, the
# client's fast-registered MRs (FRWR) for its read and write chunks, the
# server's RDMA WRITE (NFS READ payloads into the client's write chunks)
# and RDMA READ (NFS WRITE payloads pulled from the client's read chunks),
# SEND for the RPC calls and replies, LOCAL_INV and remote invalidation.
#
# usage: guest-nfs.sh [faults]   (faults: less data and NFS 4.2 only, for a
# run with the device's loss hook on)
. "$(dirname "$0")/guest-lib.sh"
me=$QRDMA_GUEST
mode=${1:-}
mb=64 tree=net versions="4.2 3"
# Under loss every dropped frame costs a retransmission: less data, fewer
# files, and NFS 4.2 alone (NFS 3 moves its data over the same RPC-over-RDMA
# transport, which the loss is there to exercise).
[ "$mode" = faults ] && mb=8 tree=net/ipv4 versions=4.2
server=10.0.0.1
vm_barrier up 150

case $me in
0)
    check "modprobe nfsd and rpcrdma" bash -c 'modprobe nfsd && modprobe rpcrdma'
    mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
    mkdir -p /export /run/rpcbind /var/lib/nfs/rpc_pipefs /var/lib/nfs/v4recovery
    mount -t tmpfs -o size=512m tmpfs /export
    # Short lease and grace periods (10 s, not 90), should the grace period
    # not be ended early below.
    echo 10 > /proc/fs/nfsd/nfsv4leasetime
    echo 10 > /proc/fs/nfsd/nfsv4gracetime
    echo "/export 10.0.0.0/24(rw,no_root_squash,insecure,no_subtree_check,fsid=1)" > /etc/exports
    check "rpcbind" rpcbind -w
    check "exportfs" exportfs -ra
    check "rpc.mountd" rpc.mountd
    check "rpc.nfsd with an RDMA listener on 20049" rpc.nfsd --rdma=20049 4
    check "the RDMA listener is up" grep -q '^rdma 20049' /proc/fs/nfsd/portlist
    # No client held state on a server that has just started: end its grace
    # period now, so that the client need not wait it out before OPEN.
    check "the grace period ended" bash -c 'echo Y > /proc/fs/nfsd/v4_end_grace'
    sed 's/^/  portlist: /' /proc/fs/nfsd/portlist
    vm_signal server-up
    for v in $versions; do
        vm_wait "written-$v" 600 || break
        # The client's files as the server stores them, for the client to compare.
        (cd /export && sha256sum big small.tar) > "$QRDMA_JOB/nfs-sums-$v"
        vm_signal "summed-$v"
    done
    vm_wait client-done 600
    check "nfsd stops" rpc.nfsd 0
    ;;
1)
    check "modprobe rpcrdma" modprobe rpcrdma
    mkdir -p /mnt/nfs /run/rpcbind
    dd if=/dev/urandom of=/tmp/big bs=1M count=$mb status=none
    # Many small files: a tree of 4 KB to 200 KB files (the modules of one directory).
    tar -C /usr/lib/modules -cf /tmp/small.tar "$(uname -r)/kernel/$tree" 2>/dev/null
    vm_wait server-up 150
    for v in $versions; do
        opts="vers=$v,proto=rdma,port=20049"
        [ "$v" = 3 ] && opts="$opts,nolock"
        check "mount NFS $v over RDMA" mount -t nfs -o "$opts" "$server:/export" /mnt/nfs
        check "NFS $v mount uses proto=rdma" grep -q ' /mnt/nfs nfs.*proto=rdma' /proc/mounts
        t0=$(date +%s.%N)
        rm -f /mnt/nfs/big /mnt/nfs/small.tar
        check "NFS $v: $mb MB written" cp /tmp/big /mnt/nfs/big
        check "NFS $v: small files written" tar -C /mnt/nfs -xf /tmp/small.tar
        check "NFS $v: a tar of them written" cp /tmp/small.tar /mnt/nfs/small.tar
        check "NFS $v: 4 MB with direct I/O" \
            dd if=/tmp/big of=/mnt/nfs/direct bs=1M count=4 oflag=direct status=none
        sync
        vm_signal "written-$v"
        # Read back from the server, not this guest's page cache.
        check "NFS $v: unmount" umount /mnt/nfs
        echo 3 > /proc/sys/vm/drop_caches
        check "NFS $v: mount again" mount -t nfs -o "$opts" "$server:/export" /mnt/nfs
        check "NFS $v: $mb MB read back equal" cmp /tmp/big /mnt/nfs/big
        check "NFS $v: small files read back equal" \
            diff -r "/usr/lib/modules/$(uname -r)/kernel/$tree" "/mnt/nfs/$(uname -r)/kernel/$tree"
        head -c 4M /tmp/big > /tmp/want-direct
        check "NFS $v: 4 MB read back with direct I/O" \
            dd if=/mnt/nfs/direct of=/tmp/back-direct bs=1M iflag=direct status=none
        check "NFS $v: direct I/O read back equal" cmp /tmp/want-direct /tmp/back-direct
        dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
        echo "NFS $v over RDMA: $((2 * mb + 8)) MB and a tree of small files in ${dt}s"
        vm_wait "summed-$v" 300
        (cd /tmp && sha256sum big small.tar) > /tmp/sums
        check "NFS $v: the server holds what was written" cmp /tmp/sums "$QRDMA_JOB/nfs-sums-$v"
        rm -rf "/mnt/nfs/$(uname -r)"
        check "NFS $v: unmount" umount /mnt/nfs
    done
    vm_signal client-done
    ;;
esac
no_rdma_errors RPC-over-RDMA 'rpcrdma|svcrdma'
finish guest-nfs
