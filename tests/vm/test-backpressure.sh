#!/bin/bash
# VM test: transmit backpressure from the netdev. The segment's Unix
# datagram sockets keep the kernel's default depth, 10 frames
# (QRDMA_DGRAM_QLEN=10: vm-run sets net.unix.max_dgram_qlen as root and
# restores it when it ends), so QEMU's dgram netdev keeps meeting a full
# socket and queues frames. The device must then stop transmitting until
# the queued frame has gone, as a NIC stops at a full TX ring. The
# reproducer of the pile-up that happened before (ibv_srq_pingpong with
# 16 QPs and 3000 iterations: "transport retry counter exceeded" on both
# sides in 16 of 16 runs) must pass on both sides. Twice: the data path in
# the main loop, and in an IOThread (iothread=dp0), where the device's own
# queue of frames for the netdev fills first and stops the core.
here=$(cd "$(dirname "$0")" && pwd)
vmrun=$here/../../scripts/vm-run
rc=0
QRDMA_DGRAM_QLEN=10 "$vmrun" --guests 2 --timeout 900 --share "$here" \
    --run 'bash guest-datapath.sh backpressure' --run 'bash guest-datapath.sh backpressure' || rc=1
QRDMA_DGRAM_QLEN=10 "$vmrun" --guests 2 --timeout 900 --share "$here" \
    --iothread dp0 \
    --run 'bash guest-datapath.sh backpressure' \
    --run 'bash guest-datapath.sh backpressure' || rc=1
exit "$rc"
