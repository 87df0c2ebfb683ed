#!/bin/bash
# VM test: a kernel RDMA consumer. iSER between two guests (a LIO target
# with ib_isert, the open-iscsi initiator with ib_iser), a LUN written and
# read back with direct I/O and compared (guest-iser.sh).
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../scripts/vm-run" --guests 2 --timeout 600 --share "$here" \
    --run 'bash guest-iser.sh' --run 'bash guest-iser.sh'
