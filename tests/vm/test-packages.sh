#!/bin/bash
# VM test: the Debian packages of `make deb` in guests that never had our
# overlay.
#
# On the host, in a copy of the Debian 13 guest root as mmdebstrap made it
# (copy_guest_root: none of our parts in it, which is checked), with chroot
# standing in for a guest's own shell (the packages are installed there, not
# in a booted guest, as installing in a TCG guest would take minutes):
#  - libqrdma refuses a libibverbs1 of another rdma-core release: apt, given
#    a dpkg status where libibverbs1 is 57.0-1, reports the unmet dependency
#    and installs nothing (and accepts the package with the real status);
#  - apt installs qrdma-dkms and libqrdma (dkms from Debian's archive);
#    dkms builds qrdma.ko for the guest's kernel;
#  - dkms refuses a kernel we do not support (a 6.13 with headers) with its
#    BUILD_EXCLUSIVE message, building nothing for it.
# That root is then packed as the guests' root image (pack_guest: none of
# build-guest.sh's overlay; the one file added is vm-run's /init) and
# booted as two guests, which run
# guest-packages.sh: the packaged module and provider in use, then
# ibv_rc_pingpong, ib_write_bw and rping -V (every ping's bytes compared)
# between them.
. "$(dirname "$0")/../../scripts/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
T="$QRDMA_CACHE/pkgtest"
ROOT="$T/root"
fails=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# expect DESCRIPTION CMD...: pass when CMD exits 0
expect() { local d=$1; shift; if "$@"; then ok "$d"; else fail "$d"; fi; }

debs=$(bash "$QRDMA_TOP/scripts/build-deb.sh") || die "make deb failed"
mkdir -p "$T"
exec 9>"$QRDMA_CACHE/.lock-pkgtest"
flock 9

stage pkgtest-root copy_guest_root "$QRDMA_CACHE/guest/root" "$ROOT"
kver=$(guest_kernel_release "$ROOT")
ours=$(cd "$ROOT" && find . -path ./proc -prune -o \( -name 'qrdma*.ko*' -o -name 'libqrdma*' \
    -o -name qrdma.driver -o -path './var/lib/dkms/qrdma' \) -print)
[ -z "$ours" ] || die "the guest root copy already holds our parts: $ours"
mkdir -p "$T/work/debs"
rm -f "$T/work/debs"/*.deb
dkms_deb=$(cd "$debs" && ls qrdma-dkms_*_all.deb)
provider_deb=$(cd "$debs" && ls libqrdma_*_amd64.deb)
cp "$debs/$dkms_deb" "$debs/$provider_deb" "$T/work/debs/"
in_root() { chroot_run "$ROOT" "$T/work" "$@"; }
# The package lists of make deb's build root (a copy of the same root) make
# this apt-get update a quick check for newer ones.
[ ! -d "$QRDMA_CACHE/deb/root/var/lib/apt/lists" ] ||
    rsync -a "$QRDMA_CACHE/deb/root/var/lib/apt/lists/" "$ROOT/var/lib/apt/lists/"
in_root apt-get update -q > "$T/apt-update.log" 2>&1 || { cat "$T/apt-update.log"; die "apt-get update failed"; }

# ---- libqrdma and another rdma-core release -------------------------------
# A copy of the dpkg status with libibverbs1 at 57.0-1 (what a guest with a
# newer rdma-core, and so another private ABI, would have), libibverbs-dev's
# exact dependency moved with it so that the status is consistent (apt-get
# check passes) and libqrdma is the only package left unsatisfied.
ibv=$(chroot "$ROOT" dpkg-query -W -f '${Version}' libibverbs1)
awk -v ibv="$ibv" '/^Package: / { p = $2 }
    p == "libibverbs1" && /^Version: / { $0 = "Version: 57.0-1" }
    /^Depends: / { gsub("libibverbs1 \\(= " ibv "\\)", "libibverbs1 (= 57.0-1)") }
    { print }' \
    "$ROOT/var/lib/dpkg/status" > "$T/work/status-libibverbs57"
[ "$(awk '/^Package: / { p = $2 } p == "libibverbs1" && /^Version: / { print $2 }' "$T/work/status-libibverbs57")" = 57.0-1 ] ||
    die "could not make the libibverbs1 57.0-1 status"
expect "the libibverbs1 57.0-1 status is consistent (apt-get check)" \
    in_root apt-get -s -o Dir::State::status=/build/status-libibverbs57 check
rc=0
in_root apt-get -s -o Dir::State::status=/build/status-libibverbs57 install "/build/debs/$provider_deb" \
    > "$T/refuse.log" 2>&1 || rc=$?
grep -E 'libqrdma|libibverbs1|E:' "$T/refuse.log" | head -n 5 | sed 's/^/  | /' || true
expect "apt refuses libqrdma beside libibverbs1 57.0-1 (exit $rc)" test "$rc" -ne 0
expect "apt names the libibverbs1 dependency it cannot meet" \
    grep -Eq 'libqrdma : Depends: libibverbs1 \(< [0-9.]+\+~\) but 57.0-1 is (installed|to be installed)' "$T/refuse.log"
expect "apt accepts libqrdma beside the guest's own libibverbs1" \
    in_root sh -c "apt-get -s install '/build/debs/$provider_deb' > /dev/null"

# ---- install ------------------------------------------------------------------
t0=$(date +%s)
rc=0
in_root apt-get install -y -q --no-install-recommends "/build/debs/$dkms_deb" \
    "/build/debs/$provider_deb" > "$T/install.log" 2>&1 || rc=$?
{ grep -iE 'qrdma|dkms|error' "$T/install.log" | grep -v '^Get:' | tail -n 25 | sed 's/^/  | /'; } || true
expect "apt-get install qrdma-dkms libqrdma exits 0 ($(($(date +%s) - t0))s)" test "$rc" -eq 0
# dkms's postinst builds for the running kernel and the newest installed
# one; in a chroot the running kernel is the host's (no headers here), so
# the guest's kernel is the newest one.
in_root dkms status qrdma > "$T/dkms-status.log" 2>&1 || true
sed 's/^/  | /' "$T/dkms-status.log"
version=$(dpkg-deb -f "$T/work/debs/$dkms_deb" Version | cut -d- -f1)
expect "dkms: qrdma installed for $kver" grep -Fqx "qrdma/$version, $kver, x86_64: installed" "$T/dkms-status.log"
expect "qrdma.ko in updates/dkms of $kver" \
    sh -c "ls '$ROOT/usr/lib/modules/$kver/updates/dkms/'qrdma.ko* > /dev/null"
expect "modules.dep lists the dkms qrdma.ko" grep -q '^updates/dkms/qrdma.ko' "$ROOT/usr/lib/modules/$kver/modules.dep"
expect "libqrdma installed its provider and driver entry" \
    test -e "$ROOT/usr/lib/x86_64-linux-gnu/libibverbs/libqrdma-rdmav34.so" -a -e "$ROOT/etc/libibverbs.d/qrdma.driver"

# ---- a kernel we do not support -------------------------------------------------
# 6.13 "headers": the guest's own, under another release name, so that only
# dkms's BUILD_EXCLUSIVE_KERNEL can stop the build.
bad=6.13.0-1-amd64
mkdir -p "$ROOT/usr/lib/modules/$bad"
ln -sfn "/usr/src/linux-headers-$kver" "$ROOT/usr/lib/modules/$bad/build"
rc=0
in_root dkms install -m qrdma -v "$version" \
    -k "$bad" > "$T/dkms-bad.log" 2>&1 || rc=$?
head -n 6 "$T/dkms-bad.log" | sed 's/^/  | /' 
expect "dkms refuses Linux $bad (exit $rc)" test "$rc" -ne 0
expect "dkms says why: BUILD_EXCLUSIVE does not match $bad" grep -q 'BUILD_EXCLUSIVE' "$T/dkms-bad.log"
expect "nothing built for $bad" sh -c "! find '$ROOT/usr/lib/modules/$bad' -name 'qrdma.ko*' | grep -q ."
rm -rf "${ROOT:?}/usr/lib/modules/$bad"

# ---- boot two guests from that root --------------------------------------------
# vm-run's /init is the only file added: the harness, not a part of ours.
rm -rf "$T/init" && mkdir -p "$T/init"
install -m 0755 "$QRDMA_TOP/scripts/guest-init.sh" "$T/init/init"
stage pkgtest-pack pack_guest "$ROOT" "$T/init" "$T/out"

if [ "$fails" -eq 0 ]; then
    QRDMA_GUEST_DIR="$T/out" "$QRDMA_TOP/scripts/vm-run" --guests 2 --timeout 420 --share "$here" \
        --run 'bash guest-packages.sh' --run 'bash guest-packages.sh' || fail "the guests' checks (above)"
else
    fail "host-side checks failed: the guests were not booted"
fi
rm -f "$T/out/root.img"
echo "test-packages: $fails failure(s)"
[ "$fails" -eq 0 ]
