#!/bin/bash
# make bench-native: the native microbenchmarks, no VM (bench/native/README.md).
#   (a) sw_bench: the software RoCEv2 transport alone, two engines in one process
#   (b) core_bench: device core + transport, two cores in one process
#   (c) core_bench --dgram: the same, two processes over Unix datagram sockets
# Each prints its table; their "native ..." lines go to OUT/native.txt and
# bench/report.py --native turns them into OUT/native.md. Then instructions
# per message, counted by callgrind: the device's two ends
# (count-instr.sh) and the provider's fast path (count-provider.sh), in
# OUT/instructions.md and instructions.txt. (c)'s CPU time per frame against
# its wire alone (cpu-per-frame.sh) goes to OUT/cpu-per-frame.txt.
#
# usage: run-native.sh BINDIR OUTDIR [SECONDS-PER-CASE]
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
cd "$QRDMA_TOP"

bin=$1
out=$2
secs=${3:-1}
work=$(mktemp -d "${TMPDIR:-/tmp}/qrdma-native.XXXXXX")
trap 'rm -rf "$work"' EXIT

# run NAME LOG CMD...: a stage that shows the benchmark's table as it goes and keeps all
# of its output in LOG.
run() {
    local name=$1 log=$2
    shift 2
    stage "$name" bash -c 'set -o pipefail; "${@:2}" | tee "$1" | grep --line-buffered -v "^native "' \
        _ "$log" "$@"
}

load=$(cut -d' ' -f1-3 /proc/loadavg)
run "native-a sw_bench" "$work/a" "$bin/sw_bench" "$secs" || exit 1
run "native-b core_bench" "$work/b" "$bin/core_bench" -s "$secs" || exit 1
run "native-c core_bench --dgram" "$work/c" "$bin/core_bench" --dgram -s "$secs" || exit 1
# (c)'s 64 KB WRITE against its wire alone: CPU time per frame, user and system.
stage "native-c cpu per frame" bash -c 'set -o pipefail; bash bench/native/cpu-per-frame.sh "$1" 3 "$2" | tee "$3"' \
    _ "$bin/core_bench" "$secs" "$work/cpf" || exit 1

machine="Machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), \
load average $load at the start. ${secs} s per case (plus 0.1 s of warm-up in (b) and (c)), \
$(date -u +%Y-%m-%d)."
if [ "${QRDMA_BENCH_CLOCK:-}" = cpu ]; then
    machine+=" Bandwidth of (a) and (b) timed by the CPU time of their one thread (QRDMA_BENCH_CLOCK=cpu), \
not the wall clock: the rate of one core on a machine shared with other work."
fi
# Instructions per message (callgrind; independent of the machine's load):
# the device's two ends, then the provider's fast path.
stage "native-instr device core" bash bench/native/count-instr.sh "$bin/core_bench" "$work/instr-core.md" || exit 1
stage "native-instr provider" bash bench/native/count-provider.sh "$work/instr-prov.md" || exit 1

mkdir -p "$out"
cat "$work/a" "$work/b" "$work/c" | grep '^native ' > "$out/native.txt"
cp "$work/cpf" "$out/cpu-per-frame.txt"
{ cat "$work/instr-core.md"; echo; sed 's/^# Instructions per message, libqrdma$/## libqrdma/' "$work/instr-prov.md"; } > "$out/instructions.md"
sed -i '1s/.*/# Instructions per message\n\n## Device core + transport/' "$out/instructions.md"
cat "$work/instr-core.txt" "$work/instr-prov.txt" > "$out/instructions.txt"
stage native-report python3 bench/report.py --native "$out/native.txt" "$out/native.md" "$machine"
