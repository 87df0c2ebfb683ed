#!/bin/bash
# VM test: UD multicast (interface 0.10) between two guests (guest-mcast.sh):
# qrdma-mcast (two attached QPs each get every datagram, bytes compared, a
# detached QP gets none, ENOMEM at the group limit), then rdma-core's
# mckey, receiver on guest 1 and sender on guest 0.
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../scripts/vm-run" --guests 2 --timeout 600 --share "$here" \
    --run 'bash guest-mcast.sh' --run 'bash guest-mcast.sh'
