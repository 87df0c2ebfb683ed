#!/bin/bash
# Run in both guests by test-packages.sh, booted from a Debian 13 root that
# got qrdma only from its packages (qrdma-dkms, libqrdma): the module dkms
# built is the one loaded, the provider libibverbs opens is the packaged
# one, and RDMA works between the guests: ibv_rc_pingpong, ib_write_bw, and
# rping -V, which compares the bytes of every ping it reads and writes back
# (ibv_rc_pingpong -c compares one constant byte per page only).
. "$(dirname "$0")/guest-lib.sh"
me=$QRDMA_GUEST server=10.0.0.1 dev=qrdma0 n=0

check "no qrdma test programs in this guest (packages only)" sh -c '! ls /usr/local/bin/qrdma-* 2>/dev/null'
expect_eq "qrdma loaded from dkms's tree" "$(modinfo -n qrdma | grep -o '/updates/dkms/qrdma.ko.*')" \
    "$(ls /usr/lib/modules/$(uname -r)/updates/dkms/qrdma.ko* | grep -o '/updates/dkms/qrdma.ko.*')"
check "qrdma is loaded" grep -q '^qrdma ' /proc/modules
check "dpkg: libqrdma and qrdma-dkms installed" sh -c \
    'dpkg-query -W -f "\${Status}\n" libqrdma qrdma-dkms | grep -c "install ok installed" | grep -qx 2'
check "qrdma0 registered" wait_for 10 test -d /sys/class/infiniband/qrdma0
IBV_SHOW_WARNINGS=1 ibv_devinfo -d $dev > /tmp/devinfo 2>&1
check "ibv_devinfo opens qrdma0 through the packaged provider" grep -Eq 'state:[[:space:]]+PORT_ACTIVE' /tmp/devinfo
check "no provider warning from libibverbs" sh -c '! grep -Ei "warning|no userspace|does not support" /tmp/devinfo'
check "the provider mapped is dpkg's file" sh -c \
    "python3 -c 'import pyverbs.device as d; c = d.Context(name=\"$dev\"); print(open(\"/proc/self/maps\").read())' |
     grep \"\$(dpkg -L libqrdma | grep rdmav)\" > /dev/null"
vm_barrier up 150

# step NAME CMD...: CMD on guest 0, "CMD 10.0.0.1" on guest 1 once the
# server has had 2 s to start; both exit codes checked.
step() {
    local name=$1 log=/tmp/step-$((n + 1)).log s rc
    shift
    n=$((n + 1))
    if [ "$me" = 0 ]; then
        timeout 90 "$@" > "$log" 2>&1 &
        s=$!
        wait_serving "$s"
        vm_signal "srv-$n"
        vm_wait "cli-$n" 120
        wait_for 15 bash -c "! kill -0 $s 2>/dev/null"
        kill "$s" 2>/dev/null
        wait "$s"
        rc=$?
    else
        rc=1
        if vm_wait "srv-$n" 120; then
            timeout 90 "$@" "$server" > "$log" 2>&1
            rc=$?
        fi
        vm_signal "cli-$n"
    fi
    check "$name: exit 0" test "$rc" = 0
    tail -n 4 "$log" | sed 's/^/  | /'
    cp "$log" "/tmp/$1.log"
    vm_barrier "b-$n" 150
}

step "ibv_rc_pingpong 4 KB x 200" ibv_rc_pingpong -d $dev -g 1 -c -s 4096 -n 200
# 200 round trips of 4 KB: 2 x 200 x 4096 bytes, as ibv_rc_pingpong counts them.
check "ibv_rc_pingpong moved 200 round trips" grep -Eq '^1638400 bytes in .* seconds' /tmp/ibv_rc_pingpong.log
step "ib_write_bw 64 KB x 200" ib_write_bw -d $dev -x 1 -F -s 65536 -n 200
[ "$me" = 1 ] && check "ib_write_bw reported a 64 KB result line" \
    grep -Eq '^ *65536 +200 +[0-9.]+ +[0-9.]+ ' /tmp/ib_write_bw.log
step "rping -V, 20 pings of 4 KB, bytes compared" sh -c \
    'if [ $# -eq 0 ]; then exec rping -s -V -C 20 -S 4096; fi; exec rping -c -V -C 20 -S 4096 -a "$1"' rping
check "rping saw no data mismatch" sh -c '! grep -qi mismatch /tmp/sh.log'
finish guest-packages
