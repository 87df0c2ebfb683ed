#!/bin/bash
# make bench-netdev: the system calls each guest's QEMU makes per frame on
# the dgram netdev (the -netdev of every VM test and of make bench), counted
# with perf's syscall tracepoints on both QEMUs while guest 0 WRITEs
# MESSAGES (default 5000) messages of 64 KB into guest 1 (ib_write_bw; RoCE
# MTU 1024 at vm-run's netdev MTU of 1500, so 64 data frames a message).
#
# Counts, not times: they hold still on a loaded machine far better than a
# rate does. Not wholly: how many frames one wakeup of the main loop finds
# waiting depends on the scheduling, so the load average is printed with
# them. QRDMA_QEMU selects the QEMU binary (one built without
# qemu-patches/0003, say, to compare).
#
#   bench/netdev-syscalls.sh [MESSAGES]
. "$(dirname "$0")/../scripts/lib.sh"
cd "$QRDMA_TOP" || exit 2
msgs=${1:-5000}
[[ $msgs =~ ^[1-9][0-9]*$ ]] || die "MESSAGES is a count"
command -v perf > /dev/null || die "perf is not installed (apt install linux-perf)"
work=$(mktemp -d)
pids=()
cleanup() {
    [ "${#pids[@]}" -eq 0 ] || kill "${pids[@]}" 2> /dev/null
    rm -rf "$work"
}
trap cleanup EXIT
cp tests/vm/guest-lib.sh "$work/"
events=ppoll,recvfrom,recvmmsg,sendto,sendmsg
perf_events=$(echo "$events" | sed 's/\([a-z]*\)/syscalls:sys_enter_\1/g')
bw="ib_write_bw -d qrdma0 -x 1 -F -s 65536 -n $msgs"

# descendants PID: every process below PID
descendants() {
    local p
    for p in $(pgrep -P "$1"); do
        echo "$p"
        descendants "$p"
    done
}

log "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
# The client marks the transfer's start and end on the share, where the
# host sees them; it starts a second after the mark, perf attached by then.
scripts/vm-run --guests 2 --share "$work" \
    --run ". ./guest-lib.sh; vm_wait server-up 120 || exit 1; : > start; sleep 1
           $bw 10.0.0.2 > client.log 2>&1; rc=\$?; : > end; exit \$rc" \
    --run ". ./guest-lib.sh; $bw > server.log 2>&1 & sleep 1; vm_signal server-up; wait \$!" \
    > "$work/vm.log" 2>&1 &
vmrun=$!

until [ -e "$work/start" ]; do
    kill -0 "$vmrun" 2> /dev/null || { tail -20 "$work/vm.log" >&2; die "vm-run ended before the transfer"; }
    sleep 0.2
done
for p in $(descendants "$vmrun"); do
    [ "$(cat "/proc/$p/comm" 2> /dev/null)" = qemu-system-x86 ] || continue
    g=$(tr '\0' ' ' < "/proc/$p/cmdline" | sed -n 's/.*qrdma-vmrun-\([0-9]*\),.*/\1/p')
    perf stat -x, -o "$work/perf-$g" -e "$perf_events" -p "$p" &
    pids+=($!)
done
[ "${#pids[@]}" -eq 2 ] || die "found ${#pids[@]} QEMU processes of this run, not 2"
until [ -e "$work/end" ]; do
    kill -0 "$vmrun" 2> /dev/null || break
    sleep 0.2
done
kill -INT "${pids[@]}" 2> /dev/null
wait "${pids[@]}" 2> /dev/null || true   # perf ends on the SIGINT
pids=()
wait "$vmrun" || { tail -30 "$work/vm.log" >&2; die "vm-run failed"; }
log "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
grep -h 'BW average\|65536 ' "$work/client.log" | tail -1 | sed 's/^/  ib_write_bw: /'

frames=$((msgs * 64))
echo "system calls during $msgs WRITEs of 64 KB ($frames data frames into guest 1; QEMU: ${QRDMA_QEMU:-the cached build})"
printf '%-22s' guest
for e in ${events//,/ }; do printf '%10s' "$e"; done
echo
for g in 0 1; do
    printf '%-22s' "$g ($([ "$g" = 0 ] && echo sender || echo receiver))"
    for e in ${events//,/ }; do
        printf '%10s' "$(awk -F, -v e="syscalls:sys_enter_$e" '$3 == e { print $1 }' "$work/perf-$g")"
    done
    echo
done
printf '%-22s' "1, per data frame"
for e in ${events//,/ }; do
    n=$(awk -F, -v e="syscalls:sys_enter_$e" '$3 == e { print $1 }' "$work/perf-1")
    printf '%10s' "$(awk -v n="$n" -v f="$frames" 'BEGIN { printf "%.3f", n / f }')"
done
echo
