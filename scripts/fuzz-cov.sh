#!/usr/bin/env bash
# Line coverage of the data-path sources by the fuzz corpora (make fuzz-cov).
#
# Builds each harness with clang's source-based coverage (no sanitizers),
# runs every input of its corpus once (libFuzzer -runs=0), and prints a
# per-file table of the lines covered, per harness and for all together.
#
#   scripts/fuzz-cov.sh [build dir]     (default build; corpora in <build>/fuzz)
#
# A harness whose corpus directory does not exist is run on its committed
# seeds. Needs clang, llvm-profdata and llvm-cov of the same version.
#
# SPDX-License-Identifier: GPL-2.0-or-later
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=$BUILD/fuzz-cov
CC=${FUZZ_CC:-clang}
ver=$("$CC" --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
PROFDATA=$(command -v "llvm-profdata-$ver" || command -v llvm-profdata)
COV=$(command -v "llvm-cov-$ver" || command -v llvm-cov)
[ -n "$PROFDATA" ] && [ -n "$COV" ] || { echo "fuzz-cov: llvm-profdata/llvm-cov $ver missing" >&2; exit 1; }

CORE_SRCS=(qemu-hw/core/*.c host-backend/sw/*.c)
FLAGS=(-std=gnu11 -O1 -g -w -Iinclude -Iqemu-hw -Ihost-backend/include -Ihost-backend/sw
       -Itests/unit -fsanitize=fuzzer -fprofile-instr-generate -fcoverage-mapping)
BED=(tests/fuzz/fuzz_core_bed.c tests/unit/dp_testbed.c)
FILES=(qemu-hw/core/qrdma_dp.c qemu-hw/core/qrdma_mr.c qemu-hw/core/qrdma_qp.c
       qemu-hw/core/qrdma_obj.c qemu-hw/core/qrdma_cqp.c qemu-hw/core/qrdma_hmc.c
       host-backend/sw/sw_engine.c host-backend/sw/sw_fault.c host-backend/sw/sw_proto.c
       host-backend/sw/sw_req.c host-backend/sw/sw_resp.c)

mkdir -p "$OUT"
# harness, extra sources, corpus, seeds
targets=(
    "fuzz_core_dp|${BED[*]}|$BUILD/fuzz/corpus-dp|tests/fuzz/seeds-core-dp"
    "fuzz_core_rx|${BED[*]}|$BUILD/fuzz/corpus-rx|tests/fuzz/seeds-core-rx"
)
profiles=()
names=()
for t in "${targets[@]}"; do
    IFS='|' read -r name extra corpus seeds <<<"$t"
    bin=$OUT/$name
    # shellcheck disable=SC2086
    "$CC" "${FLAGS[@]}" -o "$bin" "tests/fuzz/$name.c" $extra "${CORE_SRCS[@]}"
    [ -d "$corpus" ] || corpus=$seeds
    rm -f "$OUT/$name".*.profraw
    LLVM_PROFILE_FILE="$OUT/$name.%p.profraw" QRDMA_FUZZ_REENTER=0 \
        "$bin" -runs=0 -max_len=65536 "$corpus" >"$OUT/$name.log" 2>&1 || {
        echo "fuzz-cov: $name failed on its corpus (see $OUT/$name.log)" >&2
        exit 1
    }
    "$PROFDATA" merge -sparse -o "$OUT/$name.profdata" "$OUT/$name".*.profraw
    echo "$name: $(ls "$corpus" | wc -l) inputs from $corpus"
    profiles+=("$OUT/$name.profdata")
    names+=("$name")
done

# One JSON summary per harness; the union by merging the line counts.
for i in "${!names[@]}"; do
    "$COV" export -summary-only -instr-profile="${profiles[$i]}" "$OUT/${names[$i]}" \
        "${FILES[@]}" >"$OUT/${names[$i]}.json"
    "$COV" export -format=lcov -instr-profile="${profiles[$i]}" "$OUT/${names[$i]}" \
        "${FILES[@]}" >"$OUT/${names[$i]}.lcov"
done

python3 - "$OUT" "${names[@]}" <<'EOF'
import json, os, sys
out, names = sys.argv[1], sys.argv[2:]
per = {}      # name -> file -> (covered, total)
lines = {}    # file -> line -> hit in any harness
for n in names:
    d = json.load(open(os.path.join(out, n + ".json")))
    per[n] = {}
    for f in d["data"][0]["files"]:
        s = f["summary"]["lines"]
        per[n][f["filename"]] = (s["covered"], s["count"])
    cur = None
    for l in open(os.path.join(out, n + ".lcov")):
        if l.startswith("SF:"):
            cur = lines.setdefault(l[3:].strip(), {})
        elif l.startswith("DA:"):
            ln, hits = l[3:].strip().split(",")[:2]
            cur[ln] = cur.get(ln, False) or int(hits) > 0
files = sorted({f for n in names for f in per[n]})
root = os.getcwd() + "/"
hdr = "%-30s" % "file" + "".join("%16s" % n for n in names) + "%16s" % "together"
print(hdr)
print("-" * len(hdr))
tot = {n: [0, 0] for n in names + ["together"]}
for f in files:
    row = "%-30s" % f.replace(root, "")
    for n in names:
        c, t = per[n].get(f, (0, 0))
        tot[n][0] += c; tot[n][1] += t
        row += "%16s" % ("%.1f%% %d/%d" % (100.0 * c / t, c, t) if t else "-")[:16].rjust(16)
    l = lines.get(f, {})
    c, t = sum(l.values()), len(l)
    tot["together"][0] += c; tot["together"][1] += t
    row += "%16s" % ("%.1f%%" % (100.0 * c / t) if t else "-")
    print(row)
print("-" * len(hdr))
print("%-30s" % "all" + "".join("%16s" % ("%.1f%%" % (100.0 * tot[n][0] / tot[n][1]) if tot[n][1] else "-")
                                 for n in names + ["together"]))
EOF
