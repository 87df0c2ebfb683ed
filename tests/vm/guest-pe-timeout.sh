#!/bin/bash
# The device never reports PE ready (pe-ready-delay-us=4294967295): probe
# must fail with a clear message and register nothing; unload still works.
. "$(dirname "$0")/guest-lib.sh"
check "no qrdma0 registered" test ! -e /sys/class/infiniband/qrdma0
check "probe said why (default timeout)" sh -c "dmesg | grep -q 'engine not ready 5000 ms after reset (PE_STATUS 0x0)'"
check "ibv_devices lists no qrdma" sh -c '! ibv_devices | grep -q qrdma'
check "rmmod qrdma" rmmod qrdma
check "modprobe with a short timeout" modprobe qrdma pe_ready_timeout_ms=200
check "probe said why (200 ms)" sh -c "dmesg | grep -q 'engine not ready 200 ms after reset'"
check "still no qrdma0" test ! -e /sys/class/infiniband/qrdma0
check "rmmod qrdma again" rmmod qrdma
finish guest-pe-timeout
