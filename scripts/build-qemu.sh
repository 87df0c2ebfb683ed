#!/bin/bash
# Builds qemu-system-x86_64 with the qrdma device from Debian's pinned QEMU
# source package.
#
# Cache layout ($QRDMA_CACHE/qemu-<version>/): src/ is the unpacked tree with
# our hooks (hw/Kconfig, hw/meson.build, the trace subdirs) and hw/qrdma/ synced
# from qemu-hw/, include/qrdma/ and host-backend/; build/ is the meson build;
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
# --enable-asan --enable-ubsan in its own build directory.
VARIANT=${QRDMA_QEMU_VARIANT:-}
BUILD="$QEMU_DIR/build${VARIANT:+-$VARIANT}"
BIN="$BUILD/qemu-system-x86_64"
CONFIGURE_ARGS=(
    --target-list=x86_64-softmmu --disable-docs --disable-werror
    --disable-install-blobs --disable-download --disable-user
    --disable-guest-agent --disable-tools --python=/usr/bin/python3
)
case "$VARIANT" in
    "") ;;
    asan) CONFIGURE_ARGS+=(--enable-asan --enable-ubsan) ;;
    *) die "unknown QRDMA_QEMU_VARIANT '$VARIANT' (asan)" ;;
esac

unpack_tree() {
    local tarball tmp
    tarball=$(fetch_orig "qemu/$GUEST_SUITE" "$QEMU_ORIG" "$QEMU_ORIG_SHA256")
    tmp="$QEMU_DIR/src.tmp"
    rm -rf "$tmp" && mkdir -p "$tmp"
    tar -xf "$tarball" -C "$tmp" --strip-components=1
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
    ninja -C "$BUILD" -j"$(nproc)" qemu-system-x86_64 > "$BUILD/ninja.log" 2>&1 ||
        { grep -B2 -A12 -m3 'error' "$BUILD/ninja.log" >&2 || tail -40 "$BUILD/ninja.log" >&2; die "QEMU build failed"; }
    # QEMU is configured without -Werror; our own files must still be clean.
    if grep -A6 'hw/qrdma/.*warning:' "$BUILD/ninja.log" >&2; then
        # Touch them so that the next build compiles and reports them again.
        grep -o 'hw/qrdma/[^:]*\.c' "$BUILD/ninja.log" | sort -u | sed "s|^|$SRC/|" | xargs touch
        die "warnings in hw/qrdma"
    fi
}

key="$QEMU_VERSION.$(hash_inputs qemu-hw include/qrdma host-backend scripts/build-qemu.sh)"
if [ -x "$BIN" ] && [ "$(cat "$BUILD/.qrdma-built-key" 2>/dev/null)" = "$key" ]; then
    log "QEMU up to date"
    echo "$BIN"
    exit 0
fi

[ -d "$SRC/hw/qrdma" ] || stage qemu-unpack unpack_tree
stage qemu-sync sync_device
stage qemu-configure configure_tree
stage qemu-compile compile_tree
echo "$key" > "$BUILD/.qrdma-built-key"
echo "$BIN"
