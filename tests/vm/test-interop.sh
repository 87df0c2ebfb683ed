#!/bin/bash
# VM test: qrdma and Linux soft-RoCE on one segment (guest 0 qrdma, guest 1
# virtio-net + rdma_rxe): the same tools in both directions
# (guest-interop.sh), the proof that qrdma's wire is standard RoCEv2.
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../scripts/vm-run" --guests 2 --timeout 1500 --share "$here" \
    --nic qrdma,virtio-rxe --run 'bash guest-interop.sh' --run 'bash guest-interop.sh'
