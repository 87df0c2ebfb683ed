# Shared helpers for qrdma's build and test scripts. Sourced, never run.
#
# Everything expensive (QEMU tree and build, ccache, guest root and image,
# rdma-core source) lives in a cache outside the repo, keyed by its inputs,
# so CI on the same machine reuses it and a fresh machine rebuilds it.

set -euo pipefail

QRDMA_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QRDMA_CACHE=${QRDMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/qrdma}

# Pinned inputs. Change a version together with its checksum.
QEMU_VERSION=10.0.13
QEMU_ORIG=qemu_10.0.13+ds.orig.tar.xz
QEMU_ORIG_SHA256=6a0888e806c2ffc0c5f0733e974f9aea55491950d3c47c98669c8b236dde59ae
RDMA_CORE_VERSION=56.1
RDMA_CORE_ORIG=rdma-core_56.1.orig.tar.gz
RDMA_CORE_ORIG_SHA256=63ce7f2baa7242c2dbc76375dac957c420187dd27f8c5e148efc07971ee522a8
GUEST_SUITE=trixie

mkdir -p "$QRDMA_CACHE"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# stage NAME CMD...: run a build stage and print how long it took, so a CI
# log shows where the time of a fresh-machine run goes.
stage() {
    local name=$1 t0 rc
    shift
    t0=$(date +%s)
    log "stage $name: start"
    "$@" && rc=0 || rc=$?
    log "stage $name: $((($(date +%s) - t0)))s (rc=$rc)"
    return "$rc"
}

# hash_inputs FILE|DIR...: a short content hash of the named inputs, used to
# key cached build products.
hash_inputs() {
    (cd "$QRDMA_TOP" && find "$@" -type f ! -name '*.o' ! -name '*.ko' -print0 2>/dev/null |
        sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16
}

# check_sha256 FILE SUM
check_sha256() {
    local got
    got=$(sha256sum "$1" | cut -d' ' -f1)
    [ "$got" = "$2" ] || die "sha256 of $(basename "$1") is $got, expected $2"
}

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# fetch_orig SRCPKG/SUITE FILE SHA256: download one file of a Debian source
# package (the upstream orig tarball) into the cache and check it. The URL
# comes from apt's own deb-src entry, so no mirror is named here.
fetch_orig() {
    local pkg=$1 file=$2 sum=$3 dir="$QRDMA_CACHE/src" url
    mkdir -p "$dir"
    if [ -e "$dir/$file" ]; then
        check_sha256 "$dir/$file" "$sum"
        echo "$dir/$file"
        return
    fi
    url=$(cd "$dir" && apt-get source --print-uris "$pkg" 2>/dev/null |
        awk -v f="$file" '$2 == f { gsub("\x27", "", $1); print $1 }')
    [ -n "$url" ] || die "apt has no source entry for $file (run scripts/setup-host.sh)"
    curl -fsSL --retry 3 -o "$dir/$file.part" "$url" || die "download of $file failed"
    check_sha256 "$dir/$file.part" "$sum"
    mv "$dir/$file.part" "$dir/$file"
    echo "$dir/$file"
}

# unpack_rdma_core DIR: the pinned rdma-core source in DIR (which must not
# exist yet), with providers/qrdma registered in its build as an in-tree
# provider is. The provider's sources are put there by sync_provider.
unpack_rdma_core() {
    local dir=$1 tarball
    tarball=$(fetch_orig "rdma-core/$GUEST_SUITE" "$RDMA_CORE_ORIG" "$RDMA_CORE_ORIG_SHA256")
    mkdir -p "$dir.tmp"
    tar -xzf "$tarball" -C "$dir.tmp" --strip-components=1
    sed -i 's|^add_subdirectory(providers/mlx5)$|&\nadd_subdirectory(providers/qrdma)|' \
        "$dir.tmp/CMakeLists.txt"
    grep -q 'providers/qrdma' "$dir.tmp/CMakeLists.txt" ||
        die "could not hook providers/qrdma into rdma-core"
    mv "$dir.tmp" "$dir"
}

# sync_provider DIR: guest-provider/ and the interface headers into the
# rdma-core tree DIR (only changed files, so ninja rebuilds only those).
sync_provider() {
    local p="$1/providers/qrdma"
    mkdir -p "$p/include/qrdma"
    rsync -rc --delete --exclude README.md --exclude include "$QRDMA_TOP/guest-provider/" "$p/"
    rsync -rc --delete "$QRDMA_TOP/include/qrdma/" "$p/include/qrdma/"
}

# chroot_run ROOT DIR CMD...: CMD inside the Debian root ROOT, with /proc
# mounted and DIR bound at /build, in a clean environment; both are unmounted
# again whatever CMD does.
chroot_run() {
    local root=$1 dir=$2 rc=0
    shift 2
    mkdir -p "$root/build"
    mount -t proc proc "$root/proc"
    mount --bind "$dir" "$root/build"
    chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        DEBIAN_FRONTEND=noninteractive "$@" || rc=$?
    umount "$root/build"
    umount "$root/proc"
    return "$rc"
}

# copy_guest_root SRC DST: a copy of the guest root SRC (scripts/build-guest.sh)
# as it was before any of our parts went into it: build-guest.sh leaves only
# qrdma.ko in SRC's extra/ (to compute modules.dep for the overlay), which
# is left out and modules.dep recomputed without it. apt can use the copy
# (the machine's resolv.conf, package lists fetched again).
copy_guest_root() {
    local src=$1 dst=$2 kver
    rm -rf "$dst"
    mkdir -p "$dst"
    rsync -aH --exclude '/build/*' --exclude '/usr/lib/modules/*/extra/qrdma.ko' "$src/" "$dst/"
    kver=$(guest_kernel_release "$dst")
    chroot "$dst" depmod "$kver"
    cp -L /etc/resolv.conf "$dst/etc/resolv.conf"
}

# guest_kernel_release ROOT: the release of the (one) kernel in guest root ROOT.
guest_kernel_release() {
    basename "$(ls -d "$1"/usr/lib/modules/*/ | head -n1)"
}

# Left out of the guest's root image (pack_guest): only builds need them.
GUEST_PACK_EXCLUDES=(
    ./usr/src ./usr/include ./usr/lib/gcc ./usr/libexec/gcc ./usr/share/doc
    ./usr/share/man ./usr/share/info ./usr/share/locale ./var/cache/apt
    ./var/lib/apt/lists ./build ./boot ./usr/share/cmake-* ./usr/bin/cmake ./usr/bin/ctest
    ./usr/bin/cpack './usr/lib/x86_64-linux-gnu/*.a' './usr/lib/x86_64-linux-gnu/lib*san.so*'
    './usr/lib/x86_64-linux-gnu/libgfortran*' './usr/bin/x86_64-linux-gnu-lto-dump*'
    # kernel modules no guest test loads
    './usr/lib/modules/*/kernel/drivers/gpu' './usr/lib/modules/*/kernel/drivers/media'
    './usr/lib/modules/*/kernel/drivers/net/wireless' './usr/lib/modules/*/kernel/net/wireless'
    './usr/lib/modules/*/kernel/net/mac80211' './usr/lib/modules/*/kernel/sound'
    './usr/lib/modules/*/kernel/drivers/staging' './usr/lib/modules/*/kernel/drivers/bluetooth'
    './usr/lib/modules/*/kernel/net/bluetooth' './usr/lib/modules/*/kernel/drivers/iio'
    './usr/lib/modules/*/kernel/drivers/usb' './usr/lib/modules/*/kernel/drivers/hid'
    './usr/lib/modules/*/kernel/drivers/input' './usr/lib/modules/*/kernel/drivers/video'
    './usr/lib/modules/*/kernel/drivers/ata'
    './usr/lib/modules/*/kernel/drivers/md' './usr/lib/modules/*/kernel/drivers/mtd'
    './usr/lib/modules/*/kernel/drivers/isdn' './usr/lib/modules/*/kernel/drivers/hwmon'
    './usr/lib/modules/*/kernel/drivers/platform' './usr/lib/modules/*/kernel/drivers/net/can'
    './usr/lib/modules/*/kernel/drivers/net/ethernet'
    # our module: the overlay brings it (build-guest.sh puts a copy in the
    # root only for depmod)
    './usr/lib/modules/*/extra'
    # udev's hardware database: no udevd runs in the guest
    # (scripts/guest-init.sh loads the modules itself)
    ./usr/lib/udev/hwdb.bin ./usr/lib/udev/hwdb.d
)

# The kernel modules the guest's first init (scripts/guest-boot.c) loads to
# mount its root: the disk, its file system, the overlay (the Debian kernel
# builds them as modules), with their dependencies.
GUEST_BOOT_MODULES=(virtio_blk ext4 overlay)

# pack_guest ROOT LAYER OUT: what scripts/vm-run boots, in OUT:
#   root.img   ROOT without GUEST_PACK_EXCLUDES, with LAYER's files over it
#              (LAYER may be empty), as an ext4 image the guests share
#              read-only (no journal: nothing writes it once made)
#   boot.cpio  the initramfs: scripts/guest-boot.c, built static in ROOT by
#              its own compiler, as /init, and GUEST_BOOT_MODULES (the image
#              has the program too, /usr/local/sbin/qrdma-boot, to power off)
#   vmlinuz    ROOT's kernel
# Each file is replaced whole, so a guest still running keeps the old one.
pack_guest() {
    local root=$1 layer=$2 out=$3 kver stage boot e n=0 f mb
    kver=$(guest_kernel_release "$root")
    stage="$(dirname "$root")/pack-stage" boot="$(dirname "$root")/pack-boot"
    rm -rf "$stage" "$boot"
    mkdir -p "$out" "$boot/modules" "$boot/dev"
    cp "$QRDMA_TOP/scripts/guest-boot.c" "$root/tmp/qrdma-boot.c"
    chroot "$root" gcc -static -O2 -Wall -Wextra -Werror -o /tmp/qrdma-boot /tmp/qrdma-boot.c ||
        die "the guest's boot init failed to build"
    mv "$root/tmp/qrdma-boot" "$boot/init"
    rm -f "$root/tmp/qrdma-boot.c"
    # hard links: a copy of the tree costs no data; files LAYER replaces
    # are unlinked first, never written through to ROOT
    cp -al "$root" "$stage"
    # shellcheck disable=SC2086 # the patterns expand here, in the copy
    (cd "$stage" && for e in "${GUEST_PACK_EXCLUDES[@]}"; do rm -rf $e; done)
    [ -z "$layer" ] || cp -a --remove-destination "$layer/." "$stage/"
    mkdir -p "$stage/usr/local/sbin"
    cp "$boot/init" "$stage/usr/local/sbin/qrdma-boot"
    mb=$(du -sm "$stage" | cut -f1)
    rm -f "$out/root.img.tmp"
    mke2fs -q -t ext4 -O ^has_journal,^metadata_csum -m 0 -L qrdma-root \
        -d "$stage" "$out/root.img.tmp" "$((mb + mb / 5 + 64))M" > /dev/null ||
        die "mke2fs of the guest's root image failed"
    rm -rf "$stage"
    for e in "${GUEST_BOOT_MODULES[@]}"; do
        chroot "$root" modprobe -S "$kver" --show-depends "$e" ||
            die "no module $e for $kver in the guest root"
    done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' > "$boot/order"
    while read -r f; do
        n=$((n + 1))
        cp "$root$f" "$boot/modules/$(printf %02d "$n")-$(basename "$f")"
    done < "$boot/order"
    rm "$boot/order"
    mknod "$boot/dev/console" c 5 1
    (cd "$boot" && find . -print | cpio -o -H newc --quiet) > "$out/boot.cpio.tmp"
    rm -rf "$boot"
    cp "$root/boot/vmlinuz-$kver" "$out/vmlinuz.tmp"
    echo "$kver" > "$out/kernel-release"
    mv "$out/root.img.tmp" "$out/root.img"
    mv "$out/boot.cpio.tmp" "$out/boot.cpio"
    mv "$out/vmlinuz.tmp" "$out/vmlinuz"
}
