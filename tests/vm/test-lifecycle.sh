#!/bin/bash
# VM test: lifecycle stress, short form (guest-lifecycle.sh): 20 processes
# killed with SIGKILL in the middle of their work, 5 driver reloads and 10
# function-level resets with traffic running (plus a failed bring-up after
# a reset, and a PCI remove + rescan); counters back to idle, QEMU's RSS
# stable. `make stress` runs the long form (100 kills, 50 reloads, 50
# resets). The device's engine takes 200 ms to report ready after a reset,
# so that a short pe_ready_timeout_ms can make a bring-up fail.
here=$(cd "$(dirname "$0")" && pwd)
kills=${QRDMA_STRESS_KILLS:-20} reloads=${QRDMA_STRESS_RELOADS:-5} resets=${QRDMA_STRESS_RESETS:-10}
# Budget, generous for a loaded host: 3 s a kill, 15 s a reload, 20 s a reset (a
# reset took about 5 s under TCG), plus boot and the fixed steps.
timeout=$((600 + 3 * kills + 15 * reloads + 20 * resets))
exec "$here/../../scripts/vm-run" --guests 1 --timeout "$timeout" --share "$here" \
    --device-opts pe-ready-delay-us=200000 \
    --run "bash guest-lifecycle.sh $kills $reloads $resets"
