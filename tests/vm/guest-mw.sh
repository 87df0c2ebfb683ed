#!/bin/bash
# Memory windows in one guest, run by tests/vm/test-mw.sh: qrdma-mw
# (type 2 bound through the SQ, a peer QP's WRITE, READ and atomic through
# the window's rkey with bytes compared, LOCAL_INV and then the rkey
# refused, invalidating twice, the bad binds, type 1 through ibv_bind_mw,
# an MR with a bound window refusing dereg), then no kernel warning.
#
# "guest-mw.sh remote" (tests/vm/test-mw-remote.sh, two guests): guest 0
# owns the window (qrdma-mw --owner), guest 1 reaches it over the wire
# (qrdma-mw --peer); they meet through files in /job.
. "$(dirname "$0")/guest-lib.sh"
check "qrdma0 registered" wait_for 10 test -d /sys/class/infiniband/qrdma0
check "port 1 active" wait_for 30 sh -c 'ibv_devinfo -d qrdma0 | grep -q PORT_ACTIVE'
if [ "${1:-}" = remote ]; then
    # Each side's IPv4 GID must be in the table before qrdma-mw picks one.
    check "IPv4 GID present" wait_for 30 sh -c 'cat /sys/class/infiniband/qrdma0/ports/1/gids/* | grep -q "0000:0000:0000:0000:0000:ffff:"'
    vm_barrier up 150
    case $QRDMA_GUEST in
    0) role=--owner ;;
    *) role=--peer ;;
    esac
    check "qrdma-mw $role" sh -c "qrdma-mw $role '$QRDMA_JOB' > /tmp/mw.log 2>&1"
    sed 's/^/  | /' /tmp/mw.log
    check "no kernel warning or oops" sh -c '! dmesg | grep -E "WARNING:|BUG:|Oops|Call Trace:"'
    finish guest-mw-remote
    exit
fi
check "qrdma-mw" qrdma-mw
check "no kernel warning or oops" sh -c '! dmesg | grep -E "WARNING:|BUG:|Oops|Call Trace:"'
finish guest-mw
