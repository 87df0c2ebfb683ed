#!/bin/bash
# VM test: qrdma and Linux soft-RoCE on one segment (guest 0 qrdma, guest 1
# virtio-net + rdma_rxe): the same tools in both directions
# (guest-interop.sh), the proof that qrdma's wire is standard RoCEv2.
# usage: test-interop.sh [PATTERN]: only the steps whose names match the
# extended regular expression PATTERN (letters, digits, spaces, | . -).
here=$(cd "$(dirname "$0")" && pwd)
only=${1:-}
case $only in *[!A-Za-z0-9\ \|.-]*) echo "test-interop.sh: PATTERN '$only' has other characters" >&2; exit 2 ;; esac
exec "$here/../../scripts/vm-run" --guests 2 --timeout 1500 --share "$here" \
    --nic qrdma,virtio-rxe --run "bash guest-interop.sh '$only'" --run "bash guest-interop.sh '$only'"
