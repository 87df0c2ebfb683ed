#!/bin/bash
# Where QEMU's time goes on the qrdma path: two guests run ib_write_bw
# (64 KB) and then ib_write_lat (8 B) for a fixed time while perf samples
# the client guest's QEMU process (call graphs); the reports go to
# bench/profile/profile-write_bw.txt and profile-write_lat.txt. Used for
# docs/performance.md.
set -uo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
cd "$QRDMA_TOP"
out="$QRDMA_TOP/bench/profile"
work=$(mktemp -d "${TMPDIR:-/tmp}/qrdma-prof.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
command -v perf > /dev/null || die "perf is not installed"
stage qemu bash scripts/build-qemu.sh >/dev/null || exit 1
stage guest bash scripts/build-guest.sh >/dev/null || exit 1

cat > "$work/guest-prof.sh" <<'GUEST'
. /mnt/host/guest-lib.sh
vm_barrier up 150
for t in "write_bw ib_write_bw -s 65536" "write_lat ib_write_lat -s 8"; do
    set -- $t
    name=$1; shift
    if [ "$QRDMA_GUEST" = 0 ]; then
        timeout 120 "$@" -d qrdma0 -x 1 -F -D 40 > /tmp/$name.log 2>&1 &
        s=$!
        vm_signal "srv-$name"
        wait "$s"
    else
        vm_wait "srv-$name" 120 && sleep 2
        echo "profile: start $name"
        timeout 120 "$@" -d qrdma0 -x 1 -F -D 40 10.0.0.1 > /tmp/$name.log 2>&1
        echo "profile: end $name"
        grep -E '^ *[0-9]' /tmp/$name.log | tail -n 1 | sed "s/^/profile: $name result /"
    fi
    vm_barrier "done-$name" 150
done
GUEST
cp tests/vm/guest-lib.sh "$work/"
scripts/vm-run --guests 2 --timeout 900 --share "$work" \
    --run 'bash guest-prof.sh' --run 'bash guest-prof.sh' > "$work/vm.log" 2>&1 &
vm=$!
for name in write_bw write_lat; do
    for _ in $(seq 600); do grep -q "profile: start $name" "$work/vm.log" && break; sleep 0.5; done
    sleep 8     # past perftest's warm-up
    pid=$(pgrep -f "qemu-system.*vmrun.guest=1 " | head -n1)
    [ -n "$pid" ] || die "no QEMU process for guest 1"
    stage "perf-$name" perf record -F 999 -g -p "$pid" -o "$work/$name.data" -- sleep 20 \
        > /dev/null 2>&1
    perf report -i "$work/$name.data" --no-children --sort dso,symbol --stdio \
        --percent-limit 0.7 -g none 2>/dev/null | grep -v '^$' > "$out/profile-$name.txt"
done
wait "$vm"
grep -E 'profile: .* result' "$work/vm.log"
for name in write_bw write_lat; do
    grep "profile: $name result" "$work/vm.log" >> "$out/profile-$name.txt"
    echo "== $out/profile-$name.txt"; head -n 40 "$out/profile-$name.txt"
done
