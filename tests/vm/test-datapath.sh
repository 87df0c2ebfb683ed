#!/bin/bash
# VM test: the RDMA data path (RoCEv2 over qrdma's software transport).
# Two runs of guest-datapath.sh: "main" with two guests (pingpongs, perftest,
# qrdma-bulk 1 GB), each device's data path in an IOThread (iothread=dp0;
# the capture run and the other VM tests keep it in the main loop), then
# "capture" with three: guests 0 and 1 run RDMA while
# guest 2 captures the segment and decodes and checks the frames (the RoCE
# frames never reach the peers' own netdevs, so the sniffer is a third
# station on vm-run's flooding hub).
here=$(cd "$(dirname "$0")" && pwd)
vmrun=$here/../../scripts/vm-run
rc=0
"$vmrun" --guests 2 --timeout 600 --share "$here" \
    --iothread dp0 \
    --run 'bash guest-datapath.sh main' \
    --run 'bash guest-datapath.sh main' || rc=1
"$vmrun" --guests 3 --timeout 420 --share "$here" \
    --run 'bash guest-datapath.sh capture' --run 'bash guest-datapath.sh capture' \
    --run 'bash guest-datapath.sh capture' || rc=1
exit "$rc"
