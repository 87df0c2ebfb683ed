#!/bin/bash
# make deb: Debian packages of qrdma, checked with lintian.
#
#   qrdma-dkms   (all)    Debian 13 guests: the driver's source in
#                         /usr/src/qrdma-VERSION, built by dkms at install
#                         time for each installed kernel (Linux 6.1..6.12;
#                         other kernels get dkms's BUILD_EXCLUSIVE refusal)
#   libqrdma     (amd64)  Debian 13 guests: the rdma-core provider and its
#                         /etc/libibverbs.d entry, tied to the libibverbs1
#                         upstream release it was compiled against
#   qrdma-qemu   (amd64)  the host we build on (Debian 12): our QEMU under
#                         /usr/lib/qrdma and the qemu-system-x86_64-qrdma
#                         wrapper, beside Debian's QEMU, never over it
#
# The guest packages are built in a copy of the guest root of
# scripts/build-guest.sh with dpkg-dev and lintian added (cached under
# $QRDMA_CACHE/deb/root by the guest root's key and that list), so the
# provider compiles against exactly the guest's libibverbs headers and
# library, with Debian's build flags. The packages are plain binary packages
# put together here (dpkg-deb), their library dependencies computed by
# dpkg-shlibdeps. lintian runs on every package (the guest ones with
# Debian 13's lintian, the host one with the host's); any error fails.
#
# Usage: build-deb.sh [OUTDIR]   (default build/deb); prints OUTDIR.
. "$(dirname "$0")/lib.sh"

OUT=$(mkdir -p "${1:-$QRDMA_TOP/build/deb}" && cd "${1:-$QRDMA_TOP/build/deb}" && pwd)
DEB="$QRDMA_CACHE/deb"
GUEST_ROOT="$QRDMA_CACHE/guest/root"
ROOT="$DEB/root"
WORK="$DEB/work"
BUILD_ROOT_TOOLS=(dpkg-dev lintian)
MAINTAINER=${QRDMA_DEB_MAINTAINER:-"qrdma developers <qrdma-devel@example.org>"}

# The packages' version: the hardware interface version they speak.
hw_h="$QRDMA_TOP/include/qrdma/qrdma_hw.h"
VERSION="$(awk '$2 == "QRDMA_IF_VERSION_MAJOR" { print $3 }' "$hw_h").$(awk '$2 == "QRDMA_IF_VERSION_MINOR" { print $3 }' "$hw_h")"
[[ "$VERSION" =~ ^[0-9]+\.[0-9]+$ ]] || die "cannot read the interface version from $hw_h"
DEB_VERSION="$VERSION-1"
QEMU_DEB_VERSION="$QEMU_VERSION+qrdma$VERSION-1"

# The guest root and QEMU first (each takes its own lock), then ours.
bash "$QRDMA_TOP/scripts/build-guest.sh" > /dev/null
QEMU_BIN=$(bash "$QRDMA_TOP/scripts/build-qemu.sh")
mkdir -p "$DEB"
exec 9>"$QRDMA_CACHE/.lock-deb"
flock 9

umask 022
commit=$(git -C "$QRDMA_TOP" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
# Reproducible dates: the last commit's, as SOURCE_DATE_EPOCH would give.
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$QRDMA_TOP" log -1 --format=%ct 2>/dev/null || date +%s)}

make_build_root() {
    local tmp="$ROOT.tmp"
    copy_guest_root "$GUEST_ROOT" "$tmp"
    mkdir -p "$WORK"
    chroot_run "$tmp" "$WORK" sh -c "apt-get update -q && apt-get install -y -q --no-install-recommends ${BUILD_ROOT_TOOLS[*]}" \
        > "$DEB/build-root.log" 2>&1 || { tail -30 "$DEB/build-root.log" >&2; die "could not add ${BUILD_ROOT_TOOLS[*]} to the build root"; }
    rm -rf "$ROOT" && mv "$tmp" "$ROOT"
}

# The provider, in our own rdma-core tree (not the guest image's, which is
# built with a run path into its build directory): Debian's build flags
# (hardening), no run path, then stripped as dh_strip does.
build_provider() {
    [ -d "$WORK/rdma-core" ] || unpack_rdma_core "$WORK/rdma-core"
    sync_provider "$WORK/rdma-core"
    chroot_run "$ROOT" "$WORK" sh -c '
        set -e
        export DEB_BUILD_MAINT_OPTIONS=hardening=+all
        flags=$(dpkg-buildflags --export=sh)
        eval "$flags"
        mkdir -p /build/rdma-core/build-deb && cd /build/rdma-core/build-deb
        # Configured once per set of build flags (cmake keeps them).
        [ "$(cat .qrdma-flags 2>/dev/null)" = "$flags" ] || rm -rf ./*
        echo "$flags" > .qrdma-flags
        [ -e build.ninja ] || cmake -GNinja -DNO_MAN_PAGES=1 -DNO_PYVERBS=1 -DENABLE_STATIC=0 \
            -DCMAKE_BUILD_TYPE=None -DCMAKE_SKIP_RPATH=ON ..
        ninja qrdma-rdmav34' > "$DEB/provider.log" 2>&1 ||
        { grep -A10 -m5 -E 'error|FAILED' "$DEB/provider.log" >&2 || tail -30 "$DEB/provider.log" >&2; die "provider build failed"; }
}

# doc_files DIR PKG SOURCE VERSION COPYRIGHT: the copyright file and a
# Debian changelog, which every binary package carries.
doc_files() {
    local dir=$1 pkg=$2 src=$3 ver=$4 copyright=$5 doc
    doc="$dir/usr/share/doc/$pkg"
    install -d "$doc"
    sed "s/@YEAR@/$(date -u -d "@$epoch" +%Y)/" "$copyright" > "$doc/copyright"
    {
        echo "$src ($ver) unstable; urgency=medium"
        echo
        echo "  * Built from qrdma commit $commit (hardware interface $VERSION)."
        echo
        echo " -- $MAINTAINER  $(LC_ALL=C date -u -R -d "@$epoch")"
    } | gzip -9n > "$doc/changelog.Debian.gz"
    touch -d "@$epoch" "$doc/changelog.Debian.gz"
}

# build_deb DIR: md5sums, Installed-Size, then the .deb in $OUT.
build_deb() {
    local dir=$1 name
    (cd "$dir" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
        xargs -0r md5sum) > "$dir/DEBIAN/md5sums"
    chmod 0644 "$dir/DEBIAN/md5sums"
    sed -i "s|^Installed-Size: .*|Installed-Size: $(du -sk --exclude=DEBIAN "$dir" | cut -f1)|" "$dir/DEBIAN/control"
    find "$dir" -exec touch -h -d "@$epoch" {} +
    name=$(awk '/^Package:/ { p = $2 } /^Version:/ { v = $2 } /^Architecture:/ { a = $2 }
        END { print p "_" v "_" a ".deb" }' "$dir/DEBIAN/control")
    dpkg-deb --root-owner-group -Zxz --build "$dir" "$OUT/$name" > /dev/null
    log "built $name"
}

package_dkms() {
    local dir="$DEB/stage/qrdma-dkms" src
    rm -rf "$dir"
    src="$dir/usr/src/qrdma-$VERSION"
    install -d "$dir/DEBIAN" "$src/include/qrdma"
    install -m 0644 "$QRDMA_TOP"/guest-kernel/*.[ch] "$QRDMA_TOP/guest-kernel/Kbuild" \
        "$QRDMA_TOP/guest-kernel/Makefile" "$src/"
    install -m 0644 "$QRDMA_TOP"/include/qrdma/*.h "$src/include/qrdma/"
    sed "s/@VERSION@/$VERSION/g" "$QRDMA_TOP/packaging/deb/dkms.conf" > "$src/dkms.conf"
    sed "s/@VERSION@/$VERSION/g" "$QRDMA_TOP/packaging/deb/dkms.postinst" > "$dir/DEBIAN/postinst"
    sed "s/@VERSION@/$VERSION/g" "$QRDMA_TOP/packaging/deb/dkms.prerm" > "$dir/DEBIAN/prerm"
    chmod 0755 "$dir/DEBIAN/postinst" "$dir/DEBIAN/prerm"
    doc_files "$dir" qrdma-dkms qrdma "$DEB_VERSION" "$QRDMA_TOP/packaging/deb/copyright"
    cat > "$dir/DEBIAN/control" <<EOF
Package: qrdma-dkms
Source: qrdma
Version: $DEB_VERSION
Architecture: all
Maintainer: $MAINTAINER
Installed-Size: 0
Depends: dkms (>= 3.0)
Recommends: libqrdma
Section: kernel
Priority: optional
Description: qrdma virtual RDMA NIC - Linux driver (DKMS)
 qrdma is a virtual RDMA PCI device for QEMU whose hardware interface
 follows the Intel E810 RDMA engine; it carries RoCEv2 on a QEMU netdev.
 .
 This package holds the source of its Linux driver, qrdma.ko (hardware
 interface $VERSION), which dkms builds and installs for every installed
 kernel that has its headers. Linux 6.1 to 6.12 are supported; dkms
 refuses other kernels at install time.
EOF
    build_deb "$dir"
}

# The provider is linked against libibverbs's private ABI (symbol version
# IBVERBS_PRIVATE_NN, rdma-core's internal provider interface). Debian keeps
# its own ibverbs-providers in step with libibverbs1 by a Breaks in
# libibverbs1 (ibverbs-providers << NN~), which does not name an outside
# provider, and libibverbs1 provides no virtual package for the private ABI.
# So libqrdma depends on the rdma-core upstream release it was compiled
# against, any Debian revision of it: with another libibverbs1, dpkg and apt
# refuse the package instead of libibverbs skipping the provider unseen.
package_provider() {
    local dir="$DEB/stage/libqrdma" so="$WORK/rdma-core/build-deb/lib/libqrdma-rdmav34.so"
    local ibv_version ibv_upstream private shlibs
    ibv_version=$(chroot "$ROOT" dpkg-query -W -f '${Version}' libibverbs1)
    ibv_upstream=${ibv_version%-*}
    ibv_upstream=${ibv_upstream#*:}
    [ "$ibv_upstream" = "$RDMA_CORE_VERSION" ] ||
        die "the guest's libibverbs1 is $ibv_version, the provider's rdma-core source $RDMA_CORE_VERSION"
    private=$(objdump -T "$so" | grep -oE 'IBVERBS_PRIVATE_[0-9]+' | sort -u)
    [ "$(echo "$private" | wc -l)" = 1 ] || die "libqrdma needs no single private ABI: '$private'"
    grep -q "^ $private@$private " "$ROOT/var/lib/dpkg/info/libibverbs1:amd64.symbols" ||
        die "the guest's libibverbs1 does not define $private"
    objdump -p "$so" | grep -qE 'RPATH|RUNPATH' && die "libqrdma has a run path"

    rm -rf "$dir"
    install -d "$dir/DEBIAN" "$dir/usr/lib/x86_64-linux-gnu/libibverbs" "$dir/etc/libibverbs.d"
    strip --strip-unneeded --remove-section=.comment --remove-section=.note \
        -o "$dir/usr/lib/x86_64-linux-gnu/libibverbs/libqrdma-rdmav34.so" "$so"
    chmod 0644 "$dir/usr/lib/x86_64-linux-gnu/libibverbs/libqrdma-rdmav34.so"
    echo "driver qrdma" > "$dir/etc/libibverbs.d/qrdma.driver"
    echo /etc/libibverbs.d/qrdma.driver > "$dir/DEBIAN/conffiles"
    doc_files "$dir" libqrdma qrdma "$DEB_VERSION" "$QRDMA_TOP/packaging/deb/copyright"

    # dpkg-shlibdeps in the build root, where the guest's symbols files are;
    # its libibverbs1 lower bound gives way to the release pin above.
    rm -rf "$WORK/shlibs" && mkdir -p "$WORK/shlibs/debian/libqrdma"
    printf 'Source: qrdma\n\nPackage: libqrdma\nArchitecture: amd64\n' > "$WORK/shlibs/debian/control"
    cp -a "$dir/usr" "$WORK/shlibs/debian/libqrdma/"
    shlibs=$(chroot_run "$ROOT" "$WORK" sh -c 'cd /build/shlibs &&
        dpkg-shlibdeps -O debian/libqrdma/usr/lib/x86_64-linux-gnu/libibverbs/libqrdma-rdmav34.so') ||
        die "dpkg-shlibdeps failed for libqrdma"
    shlibs=$(echo "$shlibs" | sed -n 's/^shlibs:Depends=//p' | tr ',' '\n' | sed 's/^ *//' |
        grep -v '^libibverbs1\b' | paste -sd, | sed 's/,/, /g')
    cat > "$dir/DEBIAN/control" <<EOF
Package: libqrdma
Source: qrdma
Version: $DEB_VERSION
Architecture: amd64
Maintainer: $MAINTAINER
Installed-Size: 0
Depends: ${shlibs:+$shlibs, }libibverbs1 (>= $ibv_upstream), libibverbs1 (<< $ibv_upstream+~)
Recommends: qrdma-dkms
Section: libs
Priority: optional
Description: qrdma virtual RDMA NIC - rdma-core provider
 qrdma is a virtual RDMA PCI device for QEMU whose hardware interface
 follows the Intel E810 RDMA engine; it carries RoCEv2 on a QEMU netdev.
 .
 This package holds its userspace verbs provider for libibverbs (hardware
 interface $VERSION) and the /etc/libibverbs.d entry that loads it. It was
 built for rdma-core $ibv_upstream (libibverbs private ABI $private) and
 installs only beside that release of libibverbs1.
EOF
    build_deb "$dir"
}

package_qemu() {
    local dir="$DEB/stage/qrdma-qemu" shlibs bad
    rm -rf "$dir"
    install -d "$dir/DEBIAN" "$dir/usr/lib/qrdma" "$dir/usr/bin" "$dir/usr/share/man/man1"
    strip --strip-unneeded --remove-section=.comment --remove-section=.note \
        -o "$dir/usr/lib/qrdma/qemu-system-x86_64" "$QEMU_BIN"
    chmod 0755 "$dir/usr/lib/qrdma/qemu-system-x86_64"
    install -m 0755 "$QRDMA_TOP/packaging/deb/qemu-system-x86_64-qrdma" "$dir/usr/bin/"
    gzip -9n < "$QRDMA_TOP/packaging/deb/qemu-system-x86_64-qrdma.1" \
        > "$dir/usr/share/man/man1/qemu-system-x86_64-qrdma.1.gz"
    doc_files "$dir" qrdma-qemu qrdma-qemu "$QEMU_DEB_VERSION" "$QRDMA_TOP/packaging/deb/copyright.qemu"
    # Beside Debian's QEMU: nothing outside our own names.
    bad=$(cd "$dir" && find . -path ./DEBIAN -prune -o -type f -print | grep -vE \
        '^\./usr/(lib/qrdma/|bin/qemu-system-x86_64-qrdma$|share/man/man1/qemu-system-x86_64-qrdma\.1\.gz$|share/doc/qrdma-qemu/)' || true)
    [ -z "$bad" ] || die "qrdma-qemu would install outside its own names: $bad"

    rm -rf "$DEB/shlibs-host" && mkdir -p "$DEB/shlibs-host/debian"
    printf 'Source: qrdma-qemu\n\nPackage: qrdma-qemu\nArchitecture: amd64\n' > "$DEB/shlibs-host/debian/control"
    shlibs=$(cd "$DEB/shlibs-host" && dpkg-shlibdeps -O "$dir/usr/lib/qrdma/qemu-system-x86_64" 2>"$DEB/shlibs-host/err") ||
        { cat "$DEB/shlibs-host/err" >&2; die "dpkg-shlibdeps failed for qrdma-qemu"; }
    shlibs=$(echo "$shlibs" | sed -n 's/^shlibs:Depends=//p')
    cat > "$dir/DEBIAN/control" <<EOF
Package: qrdma-qemu
Version: $QEMU_DEB_VERSION
Architecture: amd64
Maintainer: $MAINTAINER
Installed-Size: 0
Depends: $shlibs, qemu-system-data, seabios, ipxe-qemu
Section: otherosfs
Priority: optional
Description: QEMU with the qrdma virtual RDMA device
 qrdma is a virtual RDMA PCI device for QEMU whose hardware interface
 follows the Intel E810 RDMA engine; it carries RoCEv2 on a QEMU netdev.
 .
 This package holds qemu-system-x86_64 $QEMU_VERSION built from Debian's
 source with qrdma's fixes to QEMU (a TCG memory-map race a guest can use
 to abort QEMU) and the qrdma device (hardware interface $VERSION), in
 /usr/lib/qrdma, and the wrapper qemu-system-x86_64-qrdma, which runs it
 with the firmware of Debian's seabios, ipxe-qemu and qemu-system-data.
 It installs beside Debian's QEMU packages and replaces none of their files.
EOF
    build_deb "$dir"
}

# The host package's binary runs and has the device.
smoke_qemu() {
    local tmp
    tmp=$(mktemp -d)
    dpkg-deb -x "$OUT/qrdma-qemu_${QEMU_DEB_VERSION}_amd64.deb" "$tmp"
    "$tmp/usr/lib/qrdma/qemu-system-x86_64" -device help | grep -q '^name "qrdma"' ||
        { rm -rf "$tmp"; die "the packaged QEMU does not list -device qrdma"; }
    rm -rf "$tmp"
    log "qrdma-qemu: the packaged binary lists -device qrdma"
}

# lintian: every tag printed, errors fail. The guest packages are checked by
# Debian 13's lintian in the build root, the host package by the host's.
run_lintian() {
    local rc=0
    rm -rf "$WORK/lintian" && mkdir -p "$WORK/lintian"
    cp "$OUT/qrdma-dkms_${DEB_VERSION}_all.deb" "$OUT/libqrdma_${DEB_VERSION}_amd64.deb" "$WORK/lintian/"
    chroot_run "$ROOT" "$WORK" sh -c 'lintian --fail-on error --display-info --tag-display-limit 0 /build/lintian/*.deb' >&2 ||
        rc=1
    lintian --fail-on error --display-info --tag-display-limit 0 "$OUT/qrdma-qemu_${QEMU_DEB_VERSION}_amd64.deb" >&2 ||
        rc=1
    [ "$rc" -eq 0 ] || die "lintian found errors"
    log "lintian: no errors"
}

root_key="$(cat "$QRDMA_CACHE/guest/root-key").$(printf '%s\n' "${BUILD_ROOT_TOOLS[@]}" | sha256sum | cut -c1-16)"
if [ "$(cat "$DEB/root-key" 2>/dev/null)" != "$root_key" ] || [ ! -d "$ROOT/usr" ]; then
    rm -f "$DEB/root-key"
    rm -rf "$WORK/rdma-core/build-deb"
    stage deb-build-root make_build_root
    echo "$root_key" > "$DEB/root-key"
fi
rm -f "$OUT"/*.deb
stage deb-provider build_provider
stage deb-qrdma-dkms package_dkms
stage deb-libqrdma package_provider
stage deb-qrdma-qemu package_qemu
stage deb-qemu-smoke smoke_qemu
stage deb-lintian run_lintian
echo "$OUT"
