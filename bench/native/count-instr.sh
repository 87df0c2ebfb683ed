#!/bin/bash
# Instructions per message at each end of the device (make bench-native;
# bench/native/README.md): core_bench -n runs a fixed number of messages on
# a virtual clock, and callgrind counts what each side's device did
# (the inclusive cost of device_end_a, the requester, and device_end_b, the
# responder: doorbells, bottom half, timer, frame receive; not the bed's
# driver work nor the wire's copy). Two runs of N and 2N messages per case;
# the difference divided by the difference in messages leaves bring-up and
# the first message's one-time costs out. Counts do not depend on the
# machine's load, unlike the rates.
#
# usage: count-instr.sh CORE_BENCH OUT.md [N [CORE_BENCH OPTIONS...]]
# (options such as --copy-tx, the transmit path before zero-copy, for a comparison)
# Prints the table and writes OUT.md; "instr" lines go to OUT.txt beside it:
#   instr core <test> <size> <requester instr/msg> <responder instr/msg>
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

bin=$1
out=$2
n1=${3:-2000}
n2=$((2 * n1))
extra=("${@:4}")
command -v valgrind >/dev/null || die "valgrind is missing (scripts/setup-host.sh installs it)"
work=$(mktemp -d "${TMPDIR:-/tmp}/qrdma-instr.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The cases of the speed issue: a 64 B SEND, an 8 B WRITE, a 64 KB WRITE.
CASES=(send_bw:64 write_bw:8 write_bw:65536)

# measure CASE N: prints "<messages> <instr in device_end_a> <instr in device_end_b>".
measure() {
    local c=$1 n=$2 f="$work/cg.${1/:/-}.$2" msgs a b
    msgs=$(valgrind --tool=callgrind --callgrind-out-file="$f" "$bin" "${extra[@]}" -n "$n" -t "$c" \
        2>"$f.log" | awk '$1 == "count" { print $4 }')
    [ -n "$msgs" ] || { cat "$f.log" >&2; die "core_bench -n $n -t $c printed no count"; }
    read -r a b < <(callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$f" |
        awk '/:device_end_a \[/ && $1 != "=>" { gsub(",", "", $1); a = $1 }
             /:device_end_b \[/ && $1 != "=>" { gsub(",", "", $1); b = $1 }
             END { print a + 0, b + 0 }')
    echo "$msgs $a $b"
}

: > "${out%.md}.txt"
rows=()
for c in "${CASES[@]}"; do
    read -r m1 a1 b1 < <(measure "$c" "$n1")
    read -r m2 a2 b2 < <(measure "$c" "$n2")
    [ "$m2" -gt "$m1" ] && [ "$a2" -gt "$a1" ] && [ "$b2" -gt "$b1" ] ||
        die "$c: counts did not grow with the messages ($m1 $a1 $b1; $m2 $a2 $b2)"
    read -r pa pb < <(awk -v m=$((m2 - m1)) -v a=$((a2 - a1)) -v b=$((b2 - b1)) \
        'BEGIN { printf "%.0f %.0f\n", a / m, b / m }')
    test=${c%:*} size=${c#*:}
    echo "instr core $test $size $pa $pb" >> "${out%.md}.txt"
    rows+=("| ${test%_bw} | $size B | $pa | $pb | $((m2 - m1)) |")
    printf '%-9s %6s B  requester %8s  responder %8s instructions per message\n' \
        "${test%_bw}" "$size" "$pa" "$pb"
done

{
    echo "# Instructions per message, device core + transport"
    echo
    echo "\`make bench-native\` (bench/native/count-instr.sh), $(date -u +%Y-%m-%d), commit"
    echo "$(git -C "$QRDMA_TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo "Callgrind's count of the instructions each end of the device executed"
    echo "(doorbells, bottom half, timer, frame receive), per message, RC, path MTU"
    echo "4096, 128 messages in flight: core_bench -n with $n1 and $n2 messages, the"
    echo "difference divided by the difference in messages. The bed's driver work"
    echo "and the in-memory wire's copy are not counted. Counts do not depend on"
    echo "the machine's load."
    echo
    echo "| message | size | requester | responder | messages counted |"
    echo "|---|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
} > "$out"
