#!/bin/bash
# Builds qrdma.ko against the host's Debian 12 kernel headers (Linux 6.1) to
# keep the driver building on the oldest kernel it supports; the guest runs
# 6.12. Built in a scratch copy, so the tree stays clean.
. "$(dirname "$0")/lib.sh"
kdir=$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n1)
[ -n "$kdir" ] || die "no Linux 6.1 headers (scripts/setup-host.sh installs linux-headers-amd64)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$QRDMA_TOP/guest-kernel/." "$tmp/"
make -C "$kdir" M="$tmp" QRDMA_INCLUDE="$QRDMA_TOP/include" modules > "$tmp/build.log" 2>&1 ||
    { cat "$tmp/build.log" >&2; die "qrdma.ko does not build against $(basename "$kdir")"; }
log "qrdma.ko builds against $(basename "$kdir")"
