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
    kver=$(basename "$(ls -d "$dst"/usr/lib/modules/*/ | head -n1)")
    chroot "$dst" depmod "$kver"
    cp -L /etc/resolv.conf "$dst/etc/resolv.conf"
}

# Left out of a guest root packed as an initramfs: only builds need them.
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

# Wireshark's dissectors, a third of the root (130 of 420 MB), which only the
# capture check of guest-datapath.sh uses (tshark): packed as a layer of their
# own, wireshark.cpio, that a run asks for with vm-run --wireshark. The
# kernel unpacks the initramfs at about 50 MB/s under TCG, so every other
# boot is seconds shorter without them.
GUEST_WIRESHARK_PATHS=(
    './usr/lib/x86_64-linux-gnu/libwireshark.so*' ./usr/lib/x86_64-linux-gnu/wireshark
    ./usr/share/wireshark
)

# pack_root ROOT FILE: the guest root ROOT as an uncompressed initramfs
# (cpio newc) without GUEST_PACK_EXCLUDES and GUEST_WIRESHARK_PATHS.
pack_root() {
    local root=$1 file=$2 ex=() e
    for e in "${GUEST_PACK_EXCLUDES[@]}" "${GUEST_WIRESHARK_PATHS[@]}"; do
        ex+=(-path "$e" -prune -o)
    done
    (cd "$root" && find . "${ex[@]}" -print | cpio -o -H newc --quiet) > "$file.tmp"
    mv "$file.tmp" "$file"
}

# pack_wireshark ROOT FILE: only GUEST_WIRESHARK_PATHS of ROOT, a layer to
# unpack after pack_root's (their directories are in that one already).
pack_wireshark() {
    local root=$1 file=$2 sel=() e
    # The first path is the library: without it the layer would be empty.
    compgen -G "$root/${GUEST_WIRESHARK_PATHS[0]#./}" > /dev/null ||
        die "no Wireshark in the guest root: tshark not installed?"
    for e in "${GUEST_WIRESHARK_PATHS[@]}"; do sel+=(-path "$e" -o -path "$e/*" -o); done
    (cd "$root" && find . \( "${sel[@]}" -false \) -print | cpio -o -H newc --quiet) > "$file.tmp"
    mv "$file.tmp" "$file"
}
