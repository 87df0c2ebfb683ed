#!/bin/bash
# VM test: a kernel RDMA consumer. NVMe over Fabrics with the RDMA
# transport between two guests (nvmet-rdma target, nvme-rdma host), data
# written and read back with direct I/O and compared (guest-nvmeof.sh).
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../scripts/vm-run" --guests 2 --timeout 600 --share "$here" \
    --run 'bash guest-nvmeof.sh' --run 'bash guest-nvmeof.sh'
