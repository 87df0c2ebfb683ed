#!/bin/bash
# Instructions libqrdma spends per message (make bench-native;
# bench/native/README.md): bench/native/provider_bench.c is compiled inside
# the guest root (scripts/build-guest.sh) with the guest's compiler and the
# flags rdma-core's build gives providers/qrdma/qrdma_dp.c, linked
# statically with that file, and run under callgrind on the host. Needs the
# guest built (make guest).
#
# usage: count-provider.sh OUT.md [MESSAGES]
# Prints the table and writes OUT.md; "instr provider" lines go to OUT.txt:
#   instr provider <pattern> <post_send> <post_recv> <poll_cq>   (per message)
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

out=$1
n=${2:-16000}
GUEST="$QRDMA_CACHE/guest"
ROOT="$GUEST/root"
build="$GUEST/work/rdma-core/build"
command -v valgrind >/dev/null || die "valgrind is missing (scripts/setup-host.sh installs it)"
[ -e "$build/build.ninja" ] || die "the guest's rdma-core build is missing: run make guest first"
work=$(mktemp -d "${TMPDIR:-/tmp}/qrdma-prov.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The compile command rdma-core's build uses for qrdma_dp.c, without its
# output, dependency and PIC options: the flags the guest's provider has.
flags=$(ninja -C "$build" -t commands qrdma-rdmav34 |
    awk '/ -c \/build\/rdma-core\/providers\/qrdma\/qrdma_dp.c/ && !done { print; done = 1 }' |
    sed -e 's| -c /build/rdma-core/providers/qrdma/qrdma_dp.c||' \
        -e 's| -o [^ ]*||; s| -MF [^ ]*||; s| -MT [^ ]*||; s| -MD||; s| -fPIC||; s| -D[a-z_0-9]*_EXPORTS||')
[ -n "$flags" ] || die "cannot find how rdma-core compiles qrdma_dp.c"

# Build in the root, as scripts/build-guest.sh builds our parts (its lock held).
exec 9>"$QRDMA_CACHE/.lock-guest"
flock 9
mkdir -p "$GUEST/work/bench-provider"
cp "$QRDMA_TOP/bench/native/provider_bench.c" "$GUEST/work/bench-provider/"
mount -t proc proc "$ROOT/proc"
mount --bind "$GUEST/work" "$ROOT/build"
rc=0
chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    sh -c "$flags -I/build/rdma-core/providers/qrdma -static -o /build/bench-provider/provider_bench \
        /build/bench-provider/provider_bench.c /build/rdma-core/providers/qrdma/qrdma_dp.c" > "$work/cc.log" 2>&1 || rc=$?
umount "$ROOT/build"
umount "$ROOT/proc"
flock -u 9
[ "$rc" = 0 ] || { cat "$work/cc.log" >&2; die "provider_bench did not build in the guest root"; }
bin="$GUEST/work/bench-provider/provider_bench"

# count PATTERN: prints the inclusive instructions of post_send, post_recv, poll_cq.
count() {
    local f="$work/cg.$1"
    valgrind --tool=callgrind --callgrind-out-file="$f" "$bin" "$1" "$n" > "$f.out" 2> "$f.log" ||
        { cat "$f.out" "$f.log" >&2; die "provider_bench $1 failed"; }
    callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$f" |
        awk '$1 != "=>" && /:qrdma_post_send \[/ { gsub(",", "", $1); s = $1 }
             $1 != "=>" && /:qrdma_post_recv \[/ { gsub(",", "", $1); r = $1 }
             $1 != "=>" && /:qrdma_poll_cq \[/ { gsub(",", "", $1); p = $1 }
             END { print s + 0, r + 0, p + 0 }'
}

: > "${out%.md}.txt"
rows=()
for pattern in single burst; do
    read -r s r p < <(count "$pattern")
    [ "$s" -gt 0 ] && [ "$p" -gt 0 ] || die "$pattern: callgrind saw no post_send or poll_cq"
    read -r ps pr pp < <(awk -v n="$n" -v s="$s" -v r="$r" -v p="$p" \
        'BEGIN { printf "%.0f %.0f %.0f\n", s / n, r / n, p / n }')
    echo "instr provider $pattern $ps $pr $pp" >> "${out%.md}.txt"
    case $pattern in
        single) what="one WR per post, one CQE per poll; a SEND and a RECV (poll_cq: both CQEs)" ;;
        burst) what="16 chained WRs per post, 16 CQEs per poll; SEND" ;;
    esac
    [ "$pattern" = burst ] && pr=-
    rows+=("| $what | $ps | $pr | $pp |")
    printf '%-6s post_send %5s  post_recv %5s  poll_cq %5s instructions per message\n' \
        "$pattern" "$ps" "$pr" "$pp"
done

{
    echo "# Instructions per message, libqrdma"
    echo
    echo "\`make bench-native\` (bench/native/count-provider.sh), $(date -u +%Y-%m-%d), commit"
    echo "$(git -C "$QRDMA_TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo "Callgrind's count of the instructions in qrdma_post_send, qrdma_post_recv"
    echo "and qrdma_poll_cq (inclusive), per message, over $n messages:"
    echo "bench/native/provider_bench.c built in the guest root with the guest's"
    echo "compiler and rdma-core's flags for the provider, an RC QP, 64-byte"
    echo "messages with one SGE, signaled; a test program plays the device. This"
    echo "is what each message costs the guest's own (under TCG, emulated) CPU in"
    echo "the provider; libibverbs' inline ibv_post_send/ibv_poll_cq wrappers add a"
    echo "call each."
    echo
    echo "| pattern | post_send | post_recv | poll_cq |"
    echo "|---|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
} > "$out"
