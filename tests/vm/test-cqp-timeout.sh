#!/bin/bash
# VM test: a control QP that stops answering (x-cqp-stall-opcode=0x38: the
# device hangs at the first CREATE_SRQ until reset). The driver's CQP
# timeout marks the device dead, later commands fail with EIO, a
# function-level reset and a driver reload each bring it back
# (guest-cqp-timeout.sh).
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../scripts/vm-run" --guests 1 --timeout 300 --share "$here" \
    --device-opts x-cqp-stall-opcode=56 --run 'bash guest-cqp-timeout.sh'
