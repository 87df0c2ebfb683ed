#!/usr/bin/env python3
"""Commands for a guest that has given up its /job share (it is being
live-migrated: tests/vm/guest-migrate.sh), over TCP on the test segment.

  guest-migrate-agent.py serve PORT        run each command received
  guest-migrate-agent.py run HOST PORT CMD run CMD on HOST; its output and
                                           exit status are this one's

One connection per command: the command line, then the answer (the
command's output, stdout and stderr, its last 60 lines, then "rc N"). The
connection stays open while the command runs, across the migrations: it
is the Ethernet function's TCP surviving them. The command "exit" ends
the server. A client that cannot connect within 120 s, or loses the
connection, fails (exit status 255).
"""
import socket
import socketserver
import subprocess
import sys
import time


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        cmd = self.rfile.readline().decode().strip()
        if cmd == "exit":
            self.wfile.write(b"rc 0\n")
            self.server.done = True
            return
        p = subprocess.run(["bash", "-c", cmd], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        out = p.stdout.decode(errors="replace").splitlines()[-60:]
        self.wfile.write("".join(l + "\n" for l in out).encode())
        self.wfile.write(b"rc %d\n" % p.returncode)


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    done = False


def serve(port):
    with Server(("0.0.0.0", port), Handler) as srv:
        srv.timeout = 0.5
        while not srv.done:
            srv.handle_request()
    return 0


def run(host, port, cmd):
    deadline = time.monotonic() + 120
    while True:
        try:
            s = socket.create_connection((host, port), timeout=5)
            break
        except OSError as e:
            if time.monotonic() > deadline:
                print("agent: cannot connect to %s:%d: %s" % (host, port, e))
                return 255
            time.sleep(0.5)
    s.settimeout(None)
    s.sendall(cmd.encode() + b"\n")
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError as e:
        print("agent: connection lost: %s" % e)
        return 255
    lines = data.decode(errors="replace").splitlines()
    if not lines or not lines[-1].startswith("rc "):
        print("\n".join(lines))
        print("agent: the answer has no exit status (connection cut?)")
        return 255
    if lines[:-1]:
        print("\n".join(lines[:-1]))
    return int(lines[-1][3:])


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "serve":
        return serve(int(sys.argv[2]))
    if len(sys.argv) == 5 and sys.argv[1] == "run":
        return run(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
