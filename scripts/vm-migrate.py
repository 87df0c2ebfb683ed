#!/usr/bin/env python3
"""Live-migrate one vm-run guest from its QEMU to a waiting destination.

usage: vm-migrate.py SRC_QMP DST_QMP URI LINK TARGET TIMEOUT

SRC_QMP, DST_QMP: the QMP sockets of the source QEMU and of the destination
QEMU (started with the same command line plus `-incoming URI`). LINK is the
guest's segment address (a symlink the peers send to); once the source has
stopped for good, LINK is pointed at TARGET, the destination's own socket,
so the peers' frames reach the destination from then on.

Steps, each bounded by TIMEOUT seconds in all: wait for both QMP sockets,
`migrate` the source to URI with no bandwidth limit, poll `query-migrate`
until completed or failed, then wait for the destination to run and quit
the source. One line on stdout says how it went:
  ok downtime_ms=D total_ms=T setup_ms=S ram_mb=R
  failed: REASON
Exit status 0 only for ok. A failure leaves the source running (QEMU
resumes it when a migration fails; after a completed migration whose
destination does not start, this script resumes it with `cont` and points
LINK back), and the caller ends the destination.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qmp import Qmp, QmpError  # noqa: E402


def point(link, target):
    tmp = link + ".new"
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    os.symlink(target, tmp)
    os.replace(tmp, link)


def migrate(src_path, dst_path, uri, link, target, timeout):
    deadline = time.monotonic() + timeout
    old_target = os.readlink(link)
    dst = Qmp(dst_path, deadline)
    src = Qmp(src_path, deadline)
    # No bandwidth cap (QEMU's default is 128 MiB/s): both ends are on this
    # machine. QEMU's default downtime limit (300 ms) stays.
    src.cmd("migrate-set-parameters", **{"max-bandwidth": 8 << 30})
    src.cmd("migrate", uri=uri)
    info = {}
    while True:
        info = src.cmd("query-migrate")
        status = info.get("status")
        if status == "completed":
            break
        if status in ("failed", "cancelled"):
            return "failed: %s" % info.get("error-desc", status)
        if time.monotonic() > deadline:
            try:
                src.cmd("migrate_cancel")
            except QmpError:
                pass
            return "failed: not completed within %ds (status %s)" % (timeout, status)
        time.sleep(0.02)
    # The source is stopped for good: the segment now reaches the destination.
    point(link, target)
    while True:
        try:
            st = dst.cmd("query-status")
        except QmpError as e:
            st = {"status": "gone (%s)" % e}
        if st.get("status") == "running":
            break
        if time.monotonic() > deadline or st.get("status", "").startswith("gone"):
            point(link, old_target)
            try:
                src.cmd("cont")
            except QmpError as e:
                return "failed: destination did not run (%s); source not resumed: %s" % (
                    st.get("status"), e)
            return "failed: destination did not run (status %s); source resumed" % st.get("status")
        time.sleep(0.02)
    ram = info.get("ram", {})
    try:
        src.cmd("quit")
    except QmpError:
        pass  # it quits as it answers
    return "ok downtime_ms=%d total_ms=%d setup_ms=%d ram_mb=%d" % (
        info.get("downtime", -1), info.get("total-time", -1),
        info.get("setup-time", -1), ram.get("transferred", 0) >> 20)


def main():
    if len(sys.argv) != 7:
        print("failed: usage: vm-migrate.py SRC_QMP DST_QMP URI LINK TARGET TIMEOUT")
        return 2
    src, dst, uri, link, target, timeout = sys.argv[1:]
    try:
        result = migrate(src, dst, uri, link, target, int(timeout))
    except (QmpError, OSError, ValueError) as e:
        result = "failed: %s" % e
    print(result, flush=True)
    return 0 if result.startswith("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
