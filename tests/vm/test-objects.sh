#!/bin/bash
# VM test: one guest runs guest-objects.sh: the object verbs at scale, the
# QP state machine, CQ resize, MR re-registration, running out of CQs, bad
# input, resource limits (a CQ overflow; QPs, SRQs, AHs, MRs and PBLEs
# exhausted and recovered), the driver's object counters, and a process
# killed with objects open followed by a driver reload.
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
exec "$here/../../scripts/vm-run" --guests 1 --mem 2048 --timeout 1200 --share "$here" \
    --run 'bash guest-objects.sh'
