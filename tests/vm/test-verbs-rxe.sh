#!/bin/bash
# VM test: the device core and the verbs backend on a real RDMA device.
# One guest with a virtio-net NIC and soft-RoCE (rxe0) as its "host NIC"
# runs qrdma-verbs-rxe (tests/unit/verbs_rxe.c, built here on the host):
# two device cores, each with backend=verbs on rxe0 and a memfd as guest
# RAM: first the port (rxe0's GID in the host GID registers, the port up,
# a foreign ADD_GID and the GSI QP refused), then an RC QP of one talking to one of the other through rxe by the
# QPNs and rkeys their CQP commands returned; WRITE, READ, SEND with
# immediate, FETCH_ADD and CMP_SWP checked byte for byte in guest RAM,
# a bad rkey completing in error; UD; an SRQ (receives byte for byte, its
# limit event). Then qrdma-verbs-stock (tests/unit/verbs_stock.c): one
# such core as the client of the stock ibv_rc_pingpong, ibv_ud_pingpong
# and ibv_srq_pingpong servers on rxe0, every byte of every answer checked
# in its guest RAM, the servers' exit status and -c output checked; then
# as the server of the same tools as clients, every byte of every message
# they send checked, their exit status and output checked. Then
# qrdma-verbs-cm (tests/unit/verbs_cm_real.c): the CM proxy on rxe0's real
# rdma_cm, two proxies playing two guests' CM through a connect, data both
# ways on the QPs it set up (every byte checked), a disconnect and a REQ to
# a port nobody listens on. Then a short run of qrdma-verbs-bench (make
# bench-verbs' tool: it must complete its WRITEs and find their bytes).
# Last, no QP left on rxe0.
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
make -C "$top" -s build/verbs-rxe/qrdma-verbs-rxe build/verbs-rxe/qrdma-verbs-stock \
    build/verbs-rxe/qrdma-verbs-cm build/verbs-rxe/qrdma-verbs-bench || exit 1
share=$(mktemp -d)
trap 'rm -rf "$share"' EXIT
cp "$top/build/verbs-rxe/qrdma-verbs-rxe" "$top/build/verbs-rxe/qrdma-verbs-stock" \
    "$top/build/verbs-rxe/qrdma-verbs-cm" "$top/build/verbs-rxe/qrdma-verbs-bench" \
    "$here/guest-verbs-rxe.sh" "$here/guest-lib.sh" "$share/"
"$top/scripts/vm-run" --guests 1 --timeout 600 --share "$share" --nic virtio-rxe \
    --run 'bash guest-verbs-rxe.sh'
