#!/bin/bash
# VM test, two boots of one guest running guest-objects.sh:
# 1. the object verbs at scale, the QP state machine, CQ resize, MR
#    re-registration, running out of CQs, bad input, the driver's object
#    counters, and a process killed with objects open followed by a driver
#    reload, on a device with the default limits;
# 2. the resource limits (a CQ overflow; QPs, SRQs, AHs, MRs and PBLEs
#    exhausted and recovered) on a device with smaller maxima: running
#    out of the defaults costs minutes of TCG time in AH and MR commands,
#    and other maxima show the counts follow what the device advertises.
#    max-ah stays above the driver's 1024 AH IDs for atomic creates, so
#    running out crosses from the sleepable IDs into that window. The
#    PBLE pool has no property: it is exhausted at its full 2M entries.
#
# Memory: the guest's root is a ~450 MB initramfs unpacked in RAM (the
# archive itself is in RAM while it unpacks: 1 GB is too little); the test adds
# 64 MB of hugetlb pages, 64 MB + 16 MB of MR pools pinned many times over
# (pinning shares pages, it does not copy them), a 64 MB pool in the killed
# process, rings for ~1000 CQs and QPs and up to 16 MB of PBLEs lent to
# the device; the limit checks pin one 64 MB buffer (4 KB pages) about 130
# times over, which costs the buffer once, the PBLE pool (16 MB) and the
# pins' page lists (about 0.5 MB each): 2 GB leaves room.
here=$(cd "$(dirname "$0")" && pwd)
"$here/../../scripts/vm-run" --guests 1 --mem 2048 --timeout 1200 --share "$here" \
    --run 'bash guest-objects.sh' || exit
exec "$here/../../scripts/vm-run" --guests 1 --mem 2048 --timeout 600 --share "$here" \
    --device-opts max-qp=256,max-cq=256,max-srq=64,max-ah=1536,max-mr=2048 \
    --run 'bash guest-objects.sh limits'
