#!/bin/bash
# make demo: boot two guests with -device qrdma, show the device as
# rdma-core sees it, then move data between them with RDMA (ib_write_bw,
# ib_write_lat, rping with its data verified) and print a summary
# (tests/vm/guest-demo.sh). Exits non-zero if a step failed.
#
# The guests' routine kernel messages are left out of the output (vm-run
# still fails the run on an oops, a WARN or a panic, and prints those).
. "$(dirname "$0")/lib.sh"
set -o pipefail
vmtests="$QRDMA_TOP/tests/vm"
"$QRDMA_TOP/scripts/vm-run" --guests 2 --timeout 900 --share "$vmtests" \
    --run 'bash guest-demo.sh' --run 'bash guest-demo.sh' |
    awk '!/^\[g[0-9]+\] \[ *[0-9]+\.[0-9]+\] / || /WARNING|BUG|Oops|panic|Call Trace/ { print; fflush() }'
