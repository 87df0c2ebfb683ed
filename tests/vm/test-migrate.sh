#!/bin/bash
# VM test: live migration with RDMA traffic running (issue 16,
# docs/migration.md). Two guests; guest 0 is live-migrated to a new QEMU
# and back 2*ROUNDS times during each of the transfers to guest 1 (a
# checked WRITE + READ transfer of ROUNDS*4 GB, ib_write_bw,
# ibv_rc_pingpong, qrdma-pingpong with every byte checked), and a
# migration QEMU refuses is answered and leaves the guest running:
# tests/vm/guest-migrate.sh. QRDMA_MIG_PHASES names the transfers (default
# the two that check every byte, bulk and qrdma_pp, to keep make check
# within its time budget; make check-migration runs all four). Runs
# (QRDMA_MIG_VARIANTS, a list; make check runs sw only: rxe at 5 rounds
# took 25 minutes under TCG, its phases sized for soft-RoCE's speed;
# QRDMA_MIG_VARIANTS="sw rxe" runs both):
#   sw      both guests qrdma, ROUNDS = QRDMA_MIG_ROUNDS (default 1: 4
#           migrations with the default phases, 8 with all;
#           2 took 6 minutes under TCG on a loaded machine; 5, the issue's
#           count, up to about 25: make check-migration, docs/migration.md)
#   rxe     guest 1 runs soft-RoCE over virtio-net (the peer is not
#           qrdma), QRDMA_MIG_VARIANT_ROUNDS (default 1: 8 migrations)
#   lossy   both guests qrdma with the device's loss hook on both
#           (x-fault-*: 2% loss, 1% duplication, 1% reordering of every
#           RoCE frame sent), phases sized for a lossy link and no
#           ibv_rc_pingpong, QRDMA_MIG_VARIANT_ROUNDS (6 migrations a
#           round); make check-migration runs it
#   both    three guests on the hub, and both ends move: guest 0 (the
#           clients) and guest 1 (the servers) are each migrated 2*ROUNDS
#           times per phase, alternately, while guest 2 drives,
#           QRDMA_MIG_VARIANT_ROUNDS; make check-migration runs it
#   iothread  as sw, each device's data path in an IOThread
#           (iothread=dp0: frames still queued between the thread and the
#           netdev at the switchover are lost as on a wire),
#           QRDMA_MIG_VARIANT_ROUNDS; make check-migration runs it
here=$(cd "$(dirname "$0")" && pwd)
vmrun=$here/../../scripts/vm-run
rounds=${QRDMA_MIG_ROUNDS:-1} vrounds=${QRDMA_MIG_VARIANT_ROUNDS:-1}
phases="QRDMA_MIG_PHASES='${QRDMA_MIG_PHASES:-bulk qrdma_pp}'"
rc=0
# The moved guest's RAM (vm-run's default 2 GB: the root file system is
# unpacked into it) is what each migration copies.
for v in ${QRDMA_MIG_VARIANTS:-sw}; do
    echo "=== test-migrate: $v"
    case $v in
    sw|iothread)
        # the same run; iothread moves both devices' data path to dp0
        r=$rounds opts=()
        [ "$v" = sw ] || r=$vrounds opts=(--iothread dp0)
        "$vmrun" --guests 2 --timeout $((600 + r * 400)) --share "$here" "${opts[@]}" \
            --run "exec bash guest-migrate.sh sw $r" --run "$phases bash guest-migrate.sh sw $r" ;;
    rxe)
        "$vmrun" --guests 2 --timeout $((600 + vrounds * 400)) --share "$here" --nic qrdma,virtio-rxe \
            --run "exec bash guest-migrate.sh rxe $vrounds rxe0" \
            --run "$phases bash guest-migrate.sh rxe $vrounds rxe0" ;;
    lossy)
        "$vmrun" --guests 2 --timeout $((600 + vrounds * 500)) --share "$here" \
            --device-opts 'x-fault-loss-ppm=20000,x-fault-dup-ppm=10000,x-fault-reorder-ppm=10000' \
            --run "exec bash guest-migrate.sh lossy $vrounds" \
            --run "$phases ${QRDMA_MIG_LOSSY_SIZES:-} bash guest-migrate.sh lossy $vrounds" ;;
    both)
        "$vmrun" --guests 3 --timeout $((900 + vrounds * 1500)) --share "$here" \
            --run "exec bash guest-migrate.sh both $vrounds" \
            --run "exec bash guest-migrate.sh both $vrounds" \
            --run "$phases bash guest-migrate.sh both $vrounds" ;;
    *)
        echo "test-migrate: unknown variant '$v'" >&2
        false ;;
    esac || rc=1
done
exit "$rc"
