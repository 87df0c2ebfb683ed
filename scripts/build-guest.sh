#!/bin/bash
# Builds the Debian 13 guest that qrdma's VM tests boot.
#
# Three layers, each cached under $QRDMA_CACHE/guest/ by its own inputs:
#  1. root/     an mmdebstrap trixie root with rdma-core, perftest, the kernel,
#               its headers and build tools (key: the package list).
#  2. our parts built INSIDE the root with its own compiler and kernel
#     headers: guest-kernel/ -> qrdma.ko, guest-provider/ in the rdma-core
#     56.1 source tree -> libqrdma, tests/guest/ -> test programs.
#  3. out/, what vm-run boots (pack_guest in lib.sh): root.img, the root
#     without compilers, headers and docs, with overlay/ (those parts and
#     /init, scripts/guest-init.sh) over it, a read-only ext4 image;
#     boot.cpio, the initramfs that mounts it (scripts/guest-boot.c);
#     vmlinuz.
# Prints the directory holding vmlinuz and the images.
. "$(dirname "$0")/lib.sh"

GUEST="$QRDMA_CACHE/guest"
# One build at a time per cache: parallel test runs on this machine share it.
mkdir -p "$QRDMA_CACHE"
exec 9>"$QRDMA_CACHE/.lock-guest"
flock 9
ROOT="$GUEST/root"
OUT="$GUEST/out"
GUEST_PACKAGES=(
    # what the tests use
    rdma-core ibverbs-utils ibverbs-providers librdmacm1 libibverbs1 perftest
    rdmacm-utils python3 python3-pyverbs iproute2 kmod iputils-ping
    netcat-openbsd pciutils procps psmisc nvme-cli ethtool tcpdump tshark
    # kernel consumers: NFS over RDMA, iSER (open-iscsi initiator; the LIO
    # target is configured through configfs)
    nfs-kernel-server nfs-common rpcbind open-iscsi
    linux-image-amd64
    # what building our module, provider and tests inside the root needs
    linux-headers-amd64 gcc make libc6-dev cmake ninja-build pkg-config
    libnl-3-dev libnl-route-3-dev libudev-dev libibverbs-dev librdmacm-dev
)

build_root() {
    local tmp="$GUEST/root.tmp" list
    list=$(IFS=,; echo "${GUEST_PACKAGES[*]}")
    rm -rf "$tmp"
    # No MIRROR argument: mmdebstrap uses Debian's default archive.
    mmdebstrap --variant=minbase --include="$list" \
        --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-include=/usr/share/doc/*/copyright' \
        "$GUEST_SUITE" "$tmp" > "$GUEST/mmdebstrap.log" 2>&1 ||
        { tail -30 "$GUEST/mmdebstrap.log" >&2; die "mmdebstrap failed"; }
    rm -rf "$ROOT" && mv "$tmp" "$ROOT"
}

# Runs a command inside the root with /proc and the sources bound in.
in_root() {
    local rc=0
    mount -t proc proc "$ROOT/proc"
    mount --bind "$GUEST/work" "$ROOT/build"
    chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@" || rc=$?
    umount "$ROOT/build"
    umount "$ROOT/proc"
    return "$rc"
}

# Our sources, copied to one tree visible inside the root as /build.
sync_sources() {
    mkdir -p "$GUEST/work" "$ROOT/build"
    rsync -rc --delete "$QRDMA_TOP/include/" "$GUEST/work/include/"
    rsync -rc --delete "$QRDMA_TOP/guest-kernel/" "$GUEST/work/guest-kernel/"
    rsync -rc --delete "$QRDMA_TOP/tests/guest/" "$GUEST/work/tests-guest/"
    [ -d "$GUEST/work/rdma-core" ] || unpack_rdma_core "$GUEST/work/rdma-core"
    sync_provider "$GUEST/work/rdma-core"
}

build_module() {
    local kver
    kver=$(guest_kernel_release "$ROOT")
    in_root make -C "/usr/src/linux-headers-$kver" M=/build/guest-kernel \
        QRDMA_INCLUDE=/build/include modules > "$GUEST/module.log" 2>&1 ||
        { cat "$GUEST/module.log" >&2; die "qrdma.ko build failed"; }
    grep -E 'warning|error' "$GUEST/module.log" >&2 || true
}

build_provider() {
    local b=/build/rdma-core/build
    if [ ! -e "$GUEST/work/rdma-core/build/build.ninja" ]; then
        in_root sh -c "mkdir -p $b && cd $b && cmake -GNinja -DNO_MAN_PAGES=1 -DNO_PYVERBS=1 \
            -DENABLE_STATIC=0 -DCMAKE_BUILD_TYPE=RelWithDebInfo .." > "$GUEST/provider.log" 2>&1 ||
            { tail -40 "$GUEST/provider.log" >&2; die "rdma-core configure failed"; }
    fi
    in_root ninja -C "$b" qrdma-rdmav34 >> "$GUEST/provider.log" 2>&1 ||
        { grep -A10 -m5 -E 'error|FAILED' "$GUEST/provider.log" >&2; die "provider build failed"; }
    grep -E 'warning:' "$GUEST/provider.log" >&2 || true
}

build_tests() {
    in_root make -C /build/tests-guest QRDMA_INCLUDE=/build/include > "$GUEST/tests.log" 2>&1 ||
        { cat "$GUEST/tests.log" >&2; die "guest test programs failed to build"; }
}

pack_overlay() {
    local kver o="$GUEST/overlay"
    kver=$(guest_kernel_release "$ROOT")
    # usr/lib, not lib: in the merged-/usr root /lib is a symlink, and the
    # kernel's cpio unpacker replaces a symlink by a directory of that name.
    rm -rf "$o" && mkdir -p "$o/usr/lib/modules/$kver/extra" "$o/usr/lib/x86_64-linux-gnu/libibverbs" \
        "$o/etc/libibverbs.d" "$o/usr/local/bin" "$o/usr/local/lib/qrdma"
    cp "$GUEST/work/guest-kernel/qrdma.ko" "$o/usr/lib/modules/$kver/extra/"
    cp "$GUEST/work/rdma-core/build/lib/libqrdma-rdmav34.so" "$o/usr/lib/x86_64-linux-gnu/libibverbs/"
    echo "driver qrdma" > "$o/etc/libibverbs.d/qrdma.driver"
    install -m 0755 "$QRDMA_TOP/scripts/guest-init.sh" "$o/init"
    find "$GUEST/work/tests-guest" -maxdepth 1 -type f -perm -u+x -name 'qrdma-*' \
        -exec cp {} "$o/usr/local/bin/" \;
    # modules.dep must list qrdma so that modprobe finds it: recompute it for
    # the root with the module in place, and ship the result in the overlay.
    mkdir -p "$ROOT/usr/lib/modules/$kver/extra"
    cp "$o/usr/lib/modules/$kver/extra/qrdma.ko" "$ROOT/usr/lib/modules/$kver/extra/"
    chroot "$ROOT" depmod "$kver"
    cp "$ROOT/usr/lib/modules/$kver"/modules.* "$o/usr/lib/modules/$kver/"
    pack_guest "$ROOT" "$o" "$OUT"
    # the images of the initramfs boot, before the disk root
    rm -f "$GUEST/base.cpio" "$GUEST/wireshark.cpio" "$GUEST/overlay.cpio" "$GUEST/base-key" \
        "$OUT/image.cpio" "$OUT/image-wireshark.cpio"
}

root_key=$(printf '%s\n' "$GUEST_SUITE" "${GUEST_PACKAGES[@]}" | sha256sum | cut -c1-16)
if [ "$(cat "$GUEST/root-key" 2>/dev/null)" != "$root_key" ] || [ ! -d "$ROOT/usr" ]; then
    mkdir -p "$GUEST"
    rm -f "$GUEST/root-key"
    stage guest-root build_root
    echo "$root_key" > "$GUEST/root-key"
fi
# lib.sh's part: how pack_guest packs, and what
pack_key=$( { declare -f pack_guest; printf '%s\n' "${GUEST_PACK_EXCLUDES[@]}" -- "${GUEST_BOOT_MODULES[@]}"; } |
    sha256sum | cut -c1-16)
parts_key="$root_key.$pack_key.$(hash_inputs include guest-kernel guest-provider tests/guest \
    scripts/guest-init.sh scripts/guest-boot.c scripts/build-guest.sh)"
if [ "$(cat "$GUEST/parts-key" 2>/dev/null)" = "$parts_key" ] && [ -e "$OUT/root.img" ] &&
    [ -e "$OUT/boot.cpio" ]; then
    log "guest image up to date"
    echo "$OUT"
    exit 0
fi
stage guest-sync sync_sources
stage guest-module build_module
stage guest-provider build_provider
stage guest-tests build_tests
stage guest-pack pack_overlay
echo "$parts_key" > "$GUEST/parts-key"
echo "$OUT"
