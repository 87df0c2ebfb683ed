#!/bin/bash
# VM test: the RDMA transport under faults. Both devices inject 5% loss, 1%
# duplication and 2% reordering into every RoCE frame they send (the
# device's x-fault-* test properties); perftest and
# a checksummed 32 MB transfer must still complete correctly, and a peer
# killed mid-transfer must end the survivor's WQEs with RETRY_EXC_ERR.
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../scripts/vm-run" --guests 2 --timeout 600 --share "$here" \
    --device-opts 'x-fault-loss-ppm=50000,x-fault-dup-ppm=10000,x-fault-reorder-ppm=20000' \
    --run 'bash guest-datapath.sh faults' --run 'bash guest-datapath.sh faults'
