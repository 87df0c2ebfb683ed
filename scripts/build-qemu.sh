#!/bin/bash
# Builds qemu-system-x86_64 with the qrdma device from Debian's pinned QEMU
# source package.
#
# Cache layout ($QRDMA_CACHE/qemu-<version>/): src/ is the unpacked tree with
# qemu-patches/ applied, our hooks (hw/Kconfig, hw/meson.build, the trace
# subdirs) and hw/qrdma/ synced from qemu-hw/, include/qrdma/ and
# host-backend/; build/ is the meson build;
# ccache/ holds the compiler cache. Paths stay fixed, so ccache and ninja hit
# across clones. Prints the binary's path on stdout.
. "$(dirname "$0")/lib.sh"

QEMU_DIR="$QRDMA_CACHE/qemu-$QEMU_VERSION"
# One build at a time per cache: parallel test runs on this machine share it.
mkdir -p "$QRDMA_CACHE"
exec 9>"$QRDMA_CACHE/.lock-qemu"
flock 9
SRC="$QEMU_DIR/src"
# QRDMA_QEMU_VARIANT=asan builds a second binary with QEMU's
# --enable-asan --enable-ubsan in its own build directory; =tsan one with
# --enable-tsan (ThreadSanitizer: the data path's IOThread); =fuzz builds
# QEMU's libFuzzer binary qemu-fuzz-x86_64 with clang, ASan and UBSan, and
# adds the generic-fuzz configuration "qrdma" (tests/fuzz/qemu/).
VARIANT=${QRDMA_QEMU_VARIANT:-}
BUILD="$QEMU_DIR/build${VARIANT:+-$VARIANT}"
TARGET=qemu-system-x86_64
CONFIGURE_ARGS=(
    --target-list=x86_64-softmmu --disable-docs --disable-werror
    --disable-install-blobs --disable-download --disable-user
    --disable-guest-agent --disable-tools --python=/usr/bin/python3
)
case "$VARIANT" in
    "") ;;
    asan) CONFIGURE_ARGS+=(--enable-asan --enable-ubsan) ;;
    tsan) CONFIGURE_ARGS+=(--enable-tsan) ;;
    fuzz)
        CONFIGURE_ARGS+=(--cc=clang --cxx=clang++ --enable-fuzzing --enable-asan --enable-ubsan)
        TARGET=qemu-fuzz-x86_64
        ;;
    *) die "unknown QRDMA_QEMU_VARIANT '$VARIANT' (asan, tsan, fuzz)" ;;
esac
BIN="$BUILD/$TARGET"
PATCHES_KEY=$(hash_inputs qemu-patches)

unpack_tree() {
    local tarball tmp
    tarball=$(fetch_orig "qemu/$GUEST_SUITE" "$QEMU_ORIG" "$QEMU_ORIG_SHA256")
    tmp="$QEMU_DIR/src.tmp"
    rm -rf "$tmp" && mkdir -p "$tmp"
    tar -xf "$tarball" -C "$tmp" --strip-components=1
    # Our fixes to QEMU itself: qemu-patches/README.md lists them and why.
    local p
    for p in "$QRDMA_TOP"/qemu-patches/*.patch; do
        patch -d "$tmp" -p1 --forward --batch --quiet < "$p" ||
            die "qemu-patches/$(basename "$p") does not apply to QEMU $QEMU_VERSION"
    done
    echo "$PATCHES_KEY" > "$tmp/.qrdma-patches"
    # Hook hw/qrdma into the build: Kconfig, meson subdir, trace events.
    echo 'source qrdma/Kconfig' >> "$tmp/hw/Kconfig"
    echo "subdir('qrdma')" >> "$tmp/hw/meson.build"
    # Debian's +ds source drops the EDK2 images; do not try to unpack them.
    sed -i 's|^    unpack_edk2_blobs = bzip2.found()$|    unpack_edk2_blobs = false|' "$tmp/meson.build"
    sed -i "s|^    'hw/pci',$|    'hw/pci',\n    'hw/qrdma',|" "$tmp/meson.build"
    grep -q "'hw/qrdma'," "$tmp/meson.build" || die "could not add hw/qrdma to trace_events_subdirs"
    mkdir -p "$tmp/hw/qrdma"
    rm -rf "$SRC" && mv "$tmp" "$SRC"
}

# Copy only files whose content changed, so ninja rebuilds only those.
sync_device() {
    local dst="$SRC/hw/qrdma"
    mkdir -p "$dst/include" "$dst/backend"
    rsync -rc --delete "$QRDMA_TOP/qemu-hw/" "$dst/" \
        --exclude include --exclude backend --exclude README.md
    rsync -rc --delete "$QRDMA_TOP/include/qrdma/" "$dst/include/qrdma/"
    rsync -rc --delete "$QRDMA_TOP/host-backend/" "$dst/backend/" \
        --exclude tests --exclude README.md
}

# generic-fuzz-qrdma: our entry in QEMU's table of generic-fuzz
# configurations, inserted before the table's end (fuzz variant only).
hook_fuzz_config() {
    local conf="$SRC/tests/qtest/fuzz/generic_fuzz_configs.h"
    python3 - "$conf" "$QRDMA_TOP/tests/fuzz/qemu/generic-fuzz-qrdma.h" <<'PY'
import re, sys
conf, entry = sys.argv[1], open(sys.argv[2]).read()
old = open(conf).read()
begin, end = "/* qrdma: begin */", "/* qrdma: end */"
text = re.sub(r",\n" + re.escape(begin) + ".*?" + re.escape(end), "", old, flags=re.S)
body = entry[entry.index("*/") + 2:].strip("\n")
close = text.rindex("};")
text = text[:close].rstrip() + ",\n" + begin + "\n" + body + "\n" + end + "\n" + text[close:]
if text != old:
    open(conf, "w").write(text)
PY
    grep -q '"qrdma"' "$conf" || die "could not add the qrdma generic-fuzz configuration"
}

configure_tree() {
    local want have=""
    want=$(printf '%s\n' "${CONFIGURE_ARGS[@]}" | sha256sum | cut -c1-16)
    [ -e "$BUILD/.qrdma-configured" ] && have=$(cat "$BUILD/.qrdma-configured")
    [ "$want" = "$have" ] && [ -e "$BUILD/build.ninja" ] && return 0
    rm -rf "$BUILD" && mkdir -p "$BUILD"
    (cd "$BUILD" && "$SRC/configure" "${CONFIGURE_ARGS[@]}" > configure.log 2>&1) ||
        { tail -30 "$BUILD/configure.log" >&2; die "QEMU configure failed"; }
    echo "$want" > "$BUILD/.qrdma-configured"
}

compile_tree() {
    export PATH="/usr/lib/ccache:$PATH" CCACHE_DIR="$QEMU_DIR/ccache"
    export CCACHE_BASEDIR="$QEMU_DIR" CCACHE_NOHASHDIR=1
    ninja -C "$BUILD" -j"$(nproc)" "$TARGET" > "$BUILD/ninja.log" 2>&1 ||
        { grep -B2 -A12 -m3 'error' "$BUILD/ninja.log" >&2 || tail -40 "$BUILD/ninja.log" >&2; die "QEMU build failed"; }
    # QEMU is configured without -Werror; our own files must still be clean.
    if grep -A6 'hw/qrdma/.*warning:' "$BUILD/ninja.log" >&2; then
        # Touch them so that the next build compiles and reports them again.
        grep -o 'hw/qrdma/[^:]*\.c' "$BUILD/ninja.log" | sort -u | sed "s|^|$SRC/|" | xargs touch
        die "warnings in hw/qrdma"
    fi
}

inputs=(qemu-hw include/qrdma host-backend qemu-patches scripts/build-qemu.sh)
[ "$VARIANT" != fuzz ] || inputs+=(tests/fuzz/qemu)
key="$QEMU_VERSION.$(hash_inputs "${inputs[@]}")"
if [ -x "$BIN" ] && [ "$(cat "$BUILD/.qrdma-built-key" 2>/dev/null)" = "$key" ]; then
    log "QEMU up to date"
    echo "$BIN"
    exit 0
fi

# A tree patched with another set of qemu-patches/ is unpacked again.
[ -d "$SRC/hw/qrdma" ] && [ "$(cat "$SRC/.qrdma-patches" 2>/dev/null)" = "$PATCHES_KEY" ] ||
    stage qemu-unpack unpack_tree
stage qemu-sync sync_device
[ "$VARIANT" != fuzz ] || stage qemu-fuzz-config hook_fuzz_config
stage qemu-configure configure_tree
stage qemu-compile compile_tree
echo "$key" > "$BUILD/.qrdma-built-key"
echo "$BIN"
