#!/bin/bash
# VM test: a kernel RDMA consumer. NFS over RDMA between two guests (knfsd
# with an RDMA listener, the NFS client with proto=rdma), NFS 4.2 and 3,
# data written, read back and compared (guest-nfs.sh); then the same with
# both devices dropping 1% of the RoCE frames they send (less data, NFS
# 4.2 only).
here=$(cd "$(dirname "$0")" && pwd)
vmrun="$here/../../scripts/vm-run"
"$vmrun" --guests 2 --timeout 900 --share "$here" \
    --run 'bash guest-nfs.sh' --run 'bash guest-nfs.sh' || exit
exec "$vmrun" --guests 2 --timeout 900 --share "$here" \
    --device-opts 'x-fault-loss-ppm=10000' \
    --run 'bash guest-nfs.sh faults' --run 'bash guest-nfs.sh faults'
