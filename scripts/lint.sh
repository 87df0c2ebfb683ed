#!/bin/bash
# make lint: the checkers upstream reviewers run first, all from pinned
# sources, each of which must be clean:
#  1. QEMU's scripts/checkpatch.pl (from the pinned QEMU source package) on
#     qemu-hw/ (the glue and the QEMU-free core, both in QEMU's style) and
#     host-backend/ (QEMU's style too); errors and warnings both fail.
#  2. the kernel's scripts/checkpatch.pl --strict (from the pinned Debian
#     linux source package, which carries the guest's kernel) on guest-kernel/.
#  3. sparse (C=1) and W=1 on guest-kernel/, built against the host's Linux
#     6.1 headers and, when the guest root exists (scripts/build-guest.sh),
#     against the guest's own 6.12 headers inside that root. Any warning fails
#     (Kbuild adds -Werror for the compiler; sparse's are counted here).
# QRDMA_LINT_NEED_GUEST=1 (make check) makes a missing guest root an error;
# QRDMA_LINT_SKIP_KBUILD=1 runs the two checkpatch passes only (a minute).
. "$(dirname "$0")/lib.sh"
cd "$QRDMA_TOP"

# The kernel's checkpatch: three files of the pinned linux orig tarball,
# extracted once per version into the cache (the 150 MB tarball is dropped).
LINUX_VERSION=6.12.107
LINUX_SRCPKG=linux=6.12.107-1
LINUX_ORIG=linux_6.12.107.orig.tar.xz
LINUX_ORIG_SHA256=efc76d3c78a5d65f42724118c437d11db1c9f6309a5f024ee9a8b1978fdc6919

# Types the kernel's checkpatch may report, each with why it does not apply.
KERNEL_IGNORES=(
    # the driver builds for Linux 6.1 to 6.12 out of tree; upstream it would not
    LINUX_VERSION_CODE
    # "LINUX_VERSION_CODE >= KERNEL_VERSION()" is the idiom, both sides constant
    CONSTANT_COMPARISON
    # ethtool_puts() is Linux 6.8 and later; the driver also builds for 6.1
    PREFER_ETHTOOL_PUTS
)

# QEMU's checkpatch has no types to ignore: a report allowed in one file, as
# "FILE: MESSAGE", each with why it does not apply there.
QEMU_ALLOWED=(
    # the CLMUL CRC is x86 code by nature; other hosts take the table path
    "host-backend/sw/sw_proto.c: WARNING: architecture specific defines should be avoided"
    # the backend headers are also for C++ programs linking the QEMU-free backends
    "host-backend/include/qrdma_backend.h: WARNING: architecture specific defines should be avoided"
    "host-backend/include/qrdma_backend_sw.h: WARNING: architecture specific defines should be avoided"
    "host-backend/include/qrdma_backend_verbs.h: WARNING: architecture specific defines should be avoided"
    "host-backend/include/qrdma_sw.h: WARNING: architecture specific defines should be avoided"
    # the verbs backend is built without QEMU too (unit tests, qrdma-verbs-rxe)
    "host-backend/verbs/verbs_backend.c: ERROR: use qemu_real_host_page_size() instead of sysconf(_SC_PAGESIZE)"
)

CHECKERS="$QRDMA_CACHE/checkers"
# This run's scratch files: the checkpatch passes run at the same time.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

qemu_checkpatch() {
    local dir="$CHECKERS/qemu-$QEMU_VERSION" tarball
    if [ ! -e "$dir/scripts/checkpatch.pl" ]; then
        tarball=$(fetch_orig "qemu/$GUEST_SUITE" "$QEMU_ORIG" "$QEMU_ORIG_SHA256")
        rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
        tar -xJf "$tarball" -C "$dir.tmp" --strip-components=1 "qemu-$QEMU_VERSION/scripts/checkpatch.pl"
        rm -rf "$dir" && mv "$dir.tmp" "$dir"
    fi
    echo "$dir/scripts/checkpatch.pl"
}

kernel_checkpatch() {
    local dir="$CHECKERS/linux-$LINUX_VERSION" tarball f files=()
    if [ ! -e "$dir/scripts/checkpatch.pl" ]; then
        tarball=$(fetch_orig "$LINUX_SRCPKG" "$LINUX_ORIG" "$LINUX_ORIG_SHA256")
        # checkpatch reads its word lists from beside itself
        for f in checkpatch.pl spelling.txt const_structs.checkpatch; do
            files+=("linux-$LINUX_VERSION/scripts/$f")
        done
        rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
        tar -xJf "$tarball" -C "$dir.tmp" --strip-components=1 "${files[@]}"
        rm -rf "$dir" && mv "$dir.tmp" "$dir"
        rm -f "$tarball"
    fi
    echo "$dir/scripts/checkpatch.pl"
}

# checkpatch_runs CHECKPATCH DIR WHOSE: a checker that reports nothing on a
# known-bad file is not running; DIR is the caller's scratch directory.
checkpatch_runs() {
    printf 'int f(int x)\n{\n    if (x) return 1;\n    return 0;\n}\n' > "$2/bad.c"
    perl "$1" --no-tree --terse -f "$2/bad.c" > "$2/report" || true
    grep -q ERROR "$2/report" || die "$3 checkpatch.pl finds nothing in a known-bad file"
}

run_qemu_checkpatch() {
    local cp out=0 f report st w="$work/qemu"
    cp=$(qemu_checkpatch)
    mkdir -p "$w"
    checkpatch_runs "$cp" "$w" "QEMU's"
    # checkpatch -f takes one file at a time
    for f in $(git ls-files qemu-hw host-backend | grep -E '\.[ch]$|(^|/)trace-events$'); do
        # exit 1 is "errors found", more is a checker that did not run; it
        # exits 0 on warnings: any report not allowed above fails here
        st=0
        perl "$cp" --no-tree --no-summary --terse --color=never -f "$f" > "$w/report" || st=$?
        [ "$st" -le 1 ] || die "QEMU's checkpatch.pl failed on $f (exit $st)"
        report=$(sed -E 's/^([^:]+):[0-9]+: /\1: /' "$w/report" |
            grep -vxF -f <(printf '%s\n' "${QEMU_ALLOWED[@]}") || true)
        [ -z "$report" ] || { echo "$report"; grep -F -f <(echo "$report" | cut -d' ' -f2-) \
            "$w/report"; out=1; }
    done
    [ "$out" -eq 0 ] && log "QEMU checkpatch: qemu-hw/ and host-backend/ clean"
    return "$out"
}

run_kernel_checkpatch() {
    local cp ignores w="$work/kernel"
    cp=$(kernel_checkpatch)
    mkdir -p "$w"
    ignores=$(IFS=,; echo "${KERNEL_IGNORES[*]}")
    checkpatch_runs "$cp" "$w" "the kernel's"
    perl "$cp" --no-tree --strict --terse --show-types --no-summary --color=never \
        --ignore "$ignores" -f guest-kernel/*.[ch] || return 1
    log "kernel checkpatch --strict: guest-kernel/ clean"
}

# kbuild_check LOG MAKE-ARGS...: fails on a non-zero make or any diagnostic
# (sparse's warnings do not stop the build).
kbuild_check() {
    local logf=$1
    shift
    "$@" > "$logf" 2>&1 || { cat "$logf" >&2; return 1; }
    if grep -E '(warning|error):' "$logf" >&2; then
        return 1
    fi
}

run_kbuild_host() {
    local kdir tmp rc=0
    kdir=$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n1)
    [ -n "$kdir" ] || die "no Linux 6.1 headers (scripts/setup-host.sh installs linux-headers-amd64)"
    command -v sparse > /dev/null || die "no sparse (scripts/setup-host.sh installs it)"
    tmp=$(mktemp -d)
    cp -r guest-kernel/. "$tmp/"
    kbuild_check "$tmp/build.log" make -j"$(nproc)" -C "$kdir" M="$tmp" \
        QRDMA_INCLUDE="$QRDMA_TOP/include" C=1 W=1 modules || rc=1
    rm -rf "$tmp"
    [ "$rc" -eq 0 ] && log "sparse and W=1 against $(basename "$kdir"): clean"
    return "$rc"
}

# Inside the guest root (its gcc 14 and headers), with the host's sparse
# (it needs only libc) carried in beside the sources. The root's minimal perl
# lacks Pod::Usage for W=1's kernel-doc pass, so that pass runs on the host
# with the guest kernel's own kernel-doc script.
run_kbuild_guest() {
    local root="$QRDMA_CACHE/guest/root" kver kdoc tmp rc=0
    if [ ! -d "$root/usr/src" ]; then
        [ -z "${QRDMA_LINT_NEED_GUEST:-}" ] || die "no guest root (scripts/build-guest.sh)"
        log "sparse and W=1 against the guest's kernel: skipped, no guest root yet (make guest)"
        return 0
    fi
    kver=$(basename "$(ls -d "$root"/usr/src/linux-headers-*-amd64 | sort -V | tail -n1)")
    kver=${kver#linux-headers-}
    kdoc=$(ls "$root"/usr/src/linux-headers-*-common/scripts/kernel-doc | sort -V | tail -n1)
    tmp=$(mktemp -d)
    mkdir -p "$tmp/guest-kernel"
    cp -r guest-kernel/. "$tmp/guest-kernel/"
    cp -r include "$tmp/include"
    cp "$(command -v sparse)" "$tmp/sparse"
    kbuild_check "$tmp/build.log" chroot_run "$root" "$tmp" make -j"$(nproc)" -C "/usr/src/linux-headers-$kver" \
        M=/build/guest-kernel QRDMA_INCLUDE=/build/include C=1 CHECK=/build/sparse W=1 \
        cmd_checkdoc=: modules || rc=1
    rm -rf "$tmp"
    perl "$kdoc" -none -Wall guest-kernel/*.[ch] || rc=1
    [ "$rc" -eq 0 ] && log "sparse and W=1 against the guest's $kver: clean"
    return "$rc"
}

rc=0
# QEMU's checkpatch, a perl run a file on one CPU, runs beside the rest;
# what it reports is shown once they are done.
run_qemu_checkpatch > "$work/qemu.log" 2>&1 &
qemu_pid=$!
run_kernel_checkpatch || rc=1
[ -n "${QRDMA_LINT_SKIP_KBUILD:-}" ] || run_kbuild_host || rc=1
[ -n "${QRDMA_LINT_SKIP_KBUILD:-}" ] || run_kbuild_guest || rc=1
wait "$qemu_pid" || rc=1
cat "$work/qemu.log"
[ "$rc" -eq 0 ] || log "lint: see the reports above"
exit "$rc"
