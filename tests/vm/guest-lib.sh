# Helpers for test scripts that run inside a vm-run guest. Sourced.
fails=0
ok()   { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# check DESCRIPTION CMD...: run CMD, pass when it exits 0
check() { local d=$1; shift; if "$@"; then ok "$d"; else fail "$d"; fi; }
# expect_eq DESCRIPTION ACTUAL EXPECTED
expect_eq() { if [ "$2" = "$3" ]; then ok "$1: '$2'"; else fail "$1: '$2', expected '$3'"; fi; }
# wait_for SECONDS CMD...: poll CMD until it succeeds
wait_for() { local t=$1 i; shift; for i in $(seq $((t * 10))); do "$@" && return 0; sleep 0.1; done; return 1; }
finish() { echo "$1: $fails failure(s)"; [ "$fails" -eq 0 ]; }
qrdma_bdf() { basename "$(readlink -f /sys/bus/pci/drivers/qrdma/0000:* 2>/dev/null | head -n1)"; }
# Rendezvous between guests through the shared /job directory.
vm_signal() { touch "$QRDMA_JOB/sig-$1"; }
# vm_wait NAME [SECONDS]: wait until some guest signalled NAME
vm_wait() { wait_for "${2:-120}" test -e "$QRDMA_JOB/sig-$1" || { fail "timed out waiting for '$1'"; return 1; }; }
# vm_barrier NAME: every guest signals NAME-<i> and waits for all of them
vm_barrier() {
    local i
    vm_signal "$1-$QRDMA_GUEST"
    for i in $(seq 0 $((QRDMA_GUESTS - 1))); do vm_wait "$1-$i" "${2:-120}" || return 1; done
}
peer_ip() { echo "10.0.0.$(( (QRDMA_GUEST + 1) % QRDMA_GUESTS + 1 ))"; }
