#!/bin/bash
# Memory windows in one guest, run by tests/vm/test-mw.sh: qrdma-mw
# (type 2 bound through the SQ, a peer QP's WRITE, READ and atomic through
# the window's rkey with bytes compared, LOCAL_INV and then the rkey
# refused, invalidating twice, the bad binds, type 1 through ibv_bind_mw,
# an MR with a bound window refusing dereg), then no kernel warning.
. "$(dirname "$0")/guest-lib.sh"
check "qrdma0 registered" wait_for 10 test -d /sys/class/infiniband/qrdma0
check "port 1 active" wait_for 30 sh -c 'ibv_devinfo -d qrdma0 | grep -q PORT_ACTIVE'
check "qrdma-mw" qrdma-mw
check "no kernel warning or oops" sh -c '! dmesg | grep -E "WARNING:|BUG:|Oops|Call Trace:"'
finish guest-mw
