#!/bin/bash
# VM test: a peer VM killed mid-transfer (SIGKILL of its QEMU) and a guest
# reset (sysrq b) while RDMA WRITEs land in it. The survivor's WQEs must end
# with RETRY_EXC_ERR within the QP's retry budget, its QP in ERR; the killed
# guest boots again and a new QP to it works; after the reboot both guests
# move checked data again, the rebooted device's counters are back at idle
# and its QEMU's RSS stays bounded. Guest 0 lives three lives, guest 1 one
# (guest-lives.sh has the steps; scripts/vm-run the kill, boot and reboot
# requests). The stall floor is 1 s, below the test QP's retry budget of
# 2.15 s, so that giving up at the floor instead of after the retries
# would fail the test.
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../scripts/vm-run" --guests 2 --timeout 900 --share "$here" \
    --device-opts stall-floor-ms=1000 \
    --run 'bash guest-lives.sh' --run 'bash guest-lives.sh'
