#!/usr/bin/env python3
"""One rank of bench/e2e/wire_priority.sh, run by testbed.sh on 2 hosts.

Rank 1 (host 1) receives. Rank 0 (host 0) keeps FLOWS bulk TCP streams
busy towards host 1 at socket priority BULK_PRIO (-1: no bulk traffic) and
times PROBES round trips of one PROBE_BYTES message (a pipeline activation)
at socket priority PROBE_PRIO, answered by one byte. Prints one line:
  probe_ms median=... min=... max=...
Socket priorities are what the net plugin's class priority sets
(TRIRACE_NET_CLASS_PRIORITY): P2P 6, SPARSE 0, DENSE 1.
"""
import os
import socket
import sys
import threading
import time

BULK_PORT, PROBE_PORT = 5101, 5102


def drain(conn):
    while conn.recv(1 << 20):
        pass


def receiver(addr, probe_bytes):
    bulk = socket.create_server((addr, BULK_PORT), reuse_port=True, backlog=16)

    def accept_bulk():
        while True:
            c, _ = bulk.accept()
            threading.Thread(target=drain, args=(c,), daemon=True).start()

    threading.Thread(target=accept_bulk, daemon=True).start()
    probe = socket.create_server((addr, PROBE_PORT), reuse_port=True)
    c, _ = probe.accept()
    while True:
        got = 0
        while got < probe_bytes:
            d = c.recv(probe_bytes - got)
            if not d:
                return
            got += len(d)
        c.sendall(b"k")


def sender(peer, flows, bulk_prio, probe_prio, probe_bytes, probes):
    stop = time.time() + 60

    def bulk():
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, bulk_prio)
        s.connect((peer, BULK_PORT))
        buf = b"d" * (1 << 20)
        while time.time() < stop:
            s.sendall(buf)

    if bulk_prio >= 0:
        for _ in range(flows):
            threading.Thread(target=bulk, daemon=True).start()
        time.sleep(1.0)  # let the bulk flows fill the queue
    p = socket.socket()
    p.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, probe_prio)
    p.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    p.connect((peer, PROBE_PORT))
    msg = b"p" * probe_bytes
    times = []
    for _ in range(probes):
        t = time.perf_counter()
        p.sendall(msg)
        p.recv(1)
        times.append((time.perf_counter() - t) * 1000)
        time.sleep(0.02)
    times.sort()
    print("probe_ms median=%.1f min=%.1f max=%.1f" % (times[len(times) // 2], times[0], times[-1]))
    sys.stdout.flush()
    os._exit(0)


def main():
    peer, flows, bulk_prio, probe_prio, probe_bytes, probes = sys.argv[1:7]
    rank = int(os.environ["RANK"])
    if rank == 1:
        receiver(os.environ["TESTBED_HOST_ADDR"], int(probe_bytes))
    else:
        time.sleep(0.5)  # the receiver listens first
        sender(peer, int(flows), int(bulk_prio), int(probe_prio), int(probe_bytes), int(probes))


if __name__ == "__main__":
    main()
