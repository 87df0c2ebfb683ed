#!/usr/bin/env python3
"""A minimal QMP client for vm-run's helpers, and one query.

usage: qmp.py SOCKET qom-get PATH PROPERTY

Prints the property's value (JSON) and exits 0, or says why not on stderr
and exits 1. vm-run answers a guest's sig-qom request with it; vm-migrate.py
drives migrations with the Qmp class.
"""
import json
import socket
import sys
import time


class QmpError(Exception):
    pass


class Qmp:
    """A minimal QMP client: one command at a time, events skipped."""

    def __init__(self, path, deadline):
        self.sock = None
        while True:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(path)
                self.sock = s
                break
            except OSError as e:
                s.close()
                if time.monotonic() > deadline:
                    raise QmpError("cannot connect to %s: %s" % (path, e))
                time.sleep(0.05)
        self.sock.settimeout(max(1.0, deadline - time.monotonic()))
        self.buf = b""
        self.recv()  # the greeting
        self.cmd("qmp_capabilities")

    def recv(self):
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise QmpError("QMP connection closed")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def cmd(self, name, **args):
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            r = self.recv()
            if "event" in r:
                continue
            if "error" in r:
                raise QmpError("%s: %s" % (name, r["error"].get("desc", r["error"])))
            return r.get("return")


def main(argv):
    if len(argv) != 5 or argv[2] != "qom-get":
        sys.stderr.write(__doc__)
        return 2
    try:
        q = Qmp(argv[1], time.monotonic() + 10)
        print(json.dumps(q.cmd("qom-get", path=argv[3], property=argv[4])))
    except (QmpError, OSError, ValueError) as e:
        print("qmp.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
