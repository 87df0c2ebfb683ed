#!/bin/bash
# Installs what building and testing qrdma needs on a Debian 12 host, as root.
#
# Adds two apt source entries derived from the machine's own Debian source
# (so no mirror host is ever written into this repo): deb-src for trixie
# (QEMU and rdma-core source packages) and deb for bookworm-backports
# (meson >= 1.5, which QEMU 10 needs). Idempotent; a stamp keyed by this
# script skips the work when nothing changed.
. "$(dirname "$0")/lib.sh"

HOST_PACKAGES=(
    build-essential ccache ninja-build pkg-config python3 python3-venv clang libfuzzer-14-dev patch
    libglib2.0-dev libpixman-1-dev libslirp-dev libfdt-dev zlib1g-dev
    libibverbs-dev librdmacm-dev linux-headers-amd64
    mmdebstrap cpio xz-utils zstd dpkg-dev curl rsync lintian
    seabios qemu-system-data ipxe-qemu
    gnuplot-nox valgrind
    # make lint: sparse for the kernel build's C=1; clang-format for
    # scripts/qemu-style-wrap.py
    sparse clang-format
    # the bridge and libvirt VM test (vm-run --segment bridge --libvirt):
    # iproute2 for the bridge and taps, libvirt's QEMU driver and its
    # virt-qemu-run
    iproute2 libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients
)

stamp="$QRDMA_CACHE/host-setup.$(hash_inputs scripts/setup-host.sh scripts/lib.sh)"
if [ -e "$stamp" ] && [ -z "${QRDMA_FORCE_SETUP:-}" ]; then
    log "host setup up to date"
    exit 0
fi

# The machine's Debian archive URI and key, from its deb822 or one-line
# sources. Security and updates entries are skipped: we want the main archive.
debian_uri() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -e "$f" ] || continue
        awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/ && $i ~ /debian\/?$/) { print $i; exit } }' "$f"
    done | head -n1
    if [ -e /etc/apt/sources.list ]; then
        awk '$1 == "deb" && $2 !~ /security/ && $2 ~ /debian\/?$/ { print $2; exit }' /etc/apt/sources.list
    fi
}

uri=$(debian_uri | head -n1)
[ -n "$uri" ] || die "cannot find the Debian archive in this machine's apt sources"

src=/etc/apt/sources.list.d/qrdma.sources
cat > "$src.tmp" <<EOF
# Written by qrdma scripts/setup-host.sh from this machine's apt sources.
Types: deb-src
URIs: $uri
Suites: $GUEST_SUITE
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $uri
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
as_root mv "$src.tmp" "$src"

export DEBIAN_FRONTEND=noninteractive
as_root apt-get update -q
as_root apt-get install -y -q --no-install-recommends "${HOST_PACKAGES[@]}"
as_root apt-get install -y -q --no-install-recommends -t bookworm-backports meson python3-pycotap

# libvirt's QEMU driver, run by root, looks up the account it runs QEMU as
# (Debian's libvirt-qemu) before it reads qemu.conf, and fails without it.
# libvirt-daemon-system creates it, but that package brings systemd as
# init; create just the account, as that package does.
if ! getent passwd libvirt-qemu > /dev/null; then
    getent group libvirt-qemu > /dev/null || as_root groupadd --system libvirt-qemu
    as_root useradd --system --gid libvirt-qemu --no-create-home --home-dir /var/lib/libvirt \
        --shell /usr/sbin/nologin libvirt-qemu
fi

meson_version=$(/usr/bin/meson --version)
case "$meson_version" in
    0.* | 1.[0-4].*) die "meson $meson_version is too old for QEMU 10 (need >= 1.5)" ;;
esac

rm -f "$QRDMA_CACHE"/host-setup.*
touch "$stamp"
log "host setup done (meson $meson_version)"
