#!/bin/bash
# make demo: boot two guests with -device qrdma and show what each sees.
. "$(dirname "$0")/lib.sh"
exec "$QRDMA_TOP/scripts/vm-run" --guests 2 --timeout 300 \
    --run 'ibv_devices && ibv_devinfo -v -d qrdma0 && rdma link' \
    --run 'ibv_devices && ibv_devinfo -v -d qrdma0 && rdma link'
