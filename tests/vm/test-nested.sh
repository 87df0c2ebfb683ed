#!/bin/bash
# VM test (make check-nested, not in make check): the QEMU device in verbs
# mode with the guest driver on top, on a real RDMA device, nested.
#
# An outer TCG guest (scripts/vm-run, --nic virtio-rxe: soft-RoCE rxe0 over
# its virtio-net) runs our QEMU with -device qrdma,backend=verbs,ibdev=rxe0
# and a memfd as guest RAM; the inner TCG guest boots the same kernel with
# a small initramfs that guest-nested.sh makes from the outer guest's own
# files (qrdma.ko, the provider, libibverbs, ibv_devinfo, qrdma-pingpong,
# qrdma-bulk, perftest, rping). The inner guest checks ibv_devinfo (qrdma0, PORT_ACTIVE,
# rxe0's IPv4 GID), then an RC ping-pong (qrdma-pingpong, every byte
# checked) and a WRITE/READ transfer (qrdma-bulk, READ back compared byte
# for byte, checksums per chunk) against peers on rxe0 in the outer guest;
# QPNs, PSNs, rkeys and GIDs go over TCP through the inner QEMU's user-mode
# network (10.0.2.2 is the outer guest's loopback). Then qrdma-pingpong
# over UD and an SRQ (every byte checked), perftest's ib_write_bw,
# ib_read_bw, ib_atomic_bw and ib_send_bw -c UD (exit status both sides:
# every completion successful) and ib_send_bw -R (rdma_cm through the
# proxy) against servers on rxe0. Then rdma_cm: the
# device has its default cm (the proxy) and cm-listen=7472, and rping (-V: each round's buffer
# READ by the server, WRITTEN back and compared) runs over the inner
# kernel's own ib_cm and rdma_cm, whose MADs the device's proxy carries
# through the outer guest's rdma_cm: the inner client against a server on
# rxe0, then a client on rxe0 against the inner server. Last, NVMe over
# RDMA: the inner kernel's nvme-rdma connects through the proxy to the
# outer guest's nvmet on rxe0, reads 16 MB and writes 8 MB with 1 MB
# direct I/O (fast-registered pages), both compared by SHA-256.
#
# The QEMU binary is the one built here (Debian 12); the Debian 13 guest
# has all its shared libraries but libslirp, libfdt, libpixman and libpng
# (and whatever else it lacks, found below), which go into the share with
# the firmware it loads.
#
# QRDMA_NESTED_PP_SEED=N gives the ping-pong servers on rxe0 (RC, UD, SRQ)
# another pattern seed than the inner clients': their byte checks must then fail (how the test is
# seen to fail); QRDMA_NESTED_CM=off runs the device with cm=off, which
# must fail the rping checks. QRDMA_NESTED_INNER_MB: the inner guest's RAM (default 512);
# QRDMA_NESTED_MEM the outer guest's (3072), QRDMA_NESTED_TIMEOUT vm-run's.
# QRDMA_NESTED_IOTHREAD=off runs the device's data path in the main loop
# instead of an IOThread (iothread=dp0, the default here).
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
qemu=${QRDMA_QEMU:-$(bash "$top/scripts/build-qemu.sh")} || exit 1
guest_dir=${QRDMA_GUEST_DIR:-$(bash "$top/scripts/build-guest.sh")} || exit 1
cache=${QRDMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/qrdma}
root=$cache/guest/root
share=$(mktemp -d)
trap 'rm -rf "$share"' EXIT
mkdir -p "$share/lib" "$share/fw"
cp "$qemu" "$share/qemu-system-x86_64"
cp "$guest_dir/vmlinuz" "$share/vmlinuz"
cp "$here/guest-nested.sh" "$here/nested-init.sh" "$here/guest-lib.sh" "$share/"
# The libraries the binary needs that the guest root lacks, from this host.
ldd "$qemu" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | while read -r name path; do
    if [ ! -e "$root/usr/lib/x86_64-linux-gnu/$name" ] && [ ! -e "$root/lib/x86_64-linux-gnu/$name" ]; then
        cp -L "$path" "$share/lib/$name"
    fi
done
echo "test-nested: host libraries shipped: $(cd "$share/lib" && echo *)"
# Firmware for -kernel with -nodefaults: SeaBIOS and the linuxboot option ROM.
for f in /usr/share/seabios/bios-256k.bin /usr/share/qemu/linuxboot_dma.bin \
         /usr/share/qemu/kvmvapic.bin; do
    cp "$f" "$share/fw/" || exit 1
done
t0=$(date +%s)
"$top/scripts/vm-run" --guests 1 --accel tcg --mem "${QRDMA_NESTED_MEM:-3072}" \
    --timeout "${QRDMA_NESTED_TIMEOUT:-1800}" --share "$share" --nic virtio-rxe \
    --run "NESTED_PP_SEED=${QRDMA_NESTED_PP_SEED:-} NESTED_CM=${QRDMA_NESTED_CM:-} NESTED_INNER_MB=${QRDMA_NESTED_INNER_MB:-} NESTED_IOTHREAD=${QRDMA_NESTED_IOTHREAD:-} bash guest-nested.sh"
rc=$?
echo "test-nested: whole run $(($(date +%s) - t0))s (rc=$rc)"
exit "$rc"
