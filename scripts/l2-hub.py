#!/usr/bin/env python3
"""A flooding Ethernet hub for vm-run with more than two guests.

Guest i's QEMU sends its frames (QEMU dgram netdev, one frame per datagram)
to DIR/hub<i>.sock; the hub forwards each frame to every other guest's
DIR/g<j>.sock. Unix sockets only: no traffic leaves this machine.
usage: l2-hub.py DIR N
"""
import os
import select
import socket
import sys


def main():
    job, n = sys.argv[1], int(sys.argv[2])
    socks = []
    for i in range(n):
        path = os.path.join(job, "hub%d.sock" % i)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(path)
        socks.append(s)
    peers = [os.path.join(job, "g%d.sock" % i) for i in range(n)]
    index = {s.fileno(): i for i, s in enumerate(socks)}
    while True:
        ready, _, _ = select.select(socks, [], [])
        for s in ready:
            frame = s.recv(65536)
            src = index[s.fileno()]
            for dst in range(n):
                if dst != src:
                    try:
                        socks[dst].sendto(frame, peers[dst])
                    except OSError:
                        pass  # that guest is not up (yet): a hub drops


if __name__ == "__main__":
    main()
