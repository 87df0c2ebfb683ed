#!/bin/bash
# VM test: lifecycle stress, short form (guest-lifecycle.sh): 20 processes
# killed with SIGKILL in the middle of their work, 5 driver reloads with
# traffic running; counters back to idle, QEMU's RSS stable. `make stress`
# runs the long form (100 kills, 50 reloads).
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../scripts/vm-run" --guests 1 --timeout 900 --share "$here" \
    --run "bash guest-lifecycle.sh ${QRDMA_STRESS_KILLS:-20} ${QRDMA_STRESS_RELOADS:-5}"
