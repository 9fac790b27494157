#!/usr/bin/env python3
"""One rank of bench/e2e/wire_priority.sh, run by testbed.sh on 3 hosts.

Rank 1 (host 1) receives. FLOWS bulk TCP streams towards host 1, marked
BULK_PRIO (-1: no bulk traffic), come from host 0 (WHERE=uplink: they share
the probe's uplink) or host 2 (WHERE=downlink: they share host 1's
downlink). Rank 0 (host 0) times PROBES round trips of one PROBE_BYTES
message (a pipeline activation) marked PROBE_PRIO, answered by one byte,
and prints one line:
  probe_ms median=... min=... max=...
A mark is what the net plugin's class priority sets
(TRIRACE_NET_CLASS_PRIORITY): socket priority 6 with DSCP EF (P2P), 0 with
DSCP 0 (SPARSE), 1 with DSCP CS1 (DENSE).
"""
import os
import socket
import sys
import threading
import time

BULK_PORT, PROBE_PORT = 5101, 5102
TOS_OF_PRIORITY = {6: 46 << 2, 0: 0, 1: 8 << 2}


def marked_socket(priority):
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, TOS_OF_PRIORITY.get(priority, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, priority)  # after IP_TOS, which resets it
    return s


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


def bulk_flows(peer, flows, prio, seconds):
    stop = time.time() + seconds

    def bulk():
        s = marked_socket(prio)
        s.connect((peer, BULK_PORT))
        buf = b"d" * (1 << 20)
        while time.time() < stop:
            s.sendall(buf)
        s.close()

    threads = [threading.Thread(target=bulk, daemon=True) for _ in range(flows)]
    for t in threads:
        t.start()
    return threads


def prober(peer, probe_prio, probe_bytes, probes):
    time.sleep(1.5)  # let the bulk flows fill the queues
    p = marked_socket(probe_prio)
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
    peer, where, flows, bulk_prio, probe_prio, probe_bytes, probes = sys.argv[1:8]
    rank = int(os.environ["RANK"])
    flows, bulk_prio, probe_prio = int(flows), int(bulk_prio), int(probe_prio)
    bulk_rank = 0 if where == "uplink" else 2
    if rank == 1:
        receiver(os.environ["TESTBED_HOST_ADDR"], int(probe_bytes))
        return
    time.sleep(0.5)  # the receiver listens first
    if rank == bulk_rank and bulk_prio >= 0:
        threads = bulk_flows(peer, flows, bulk_prio, 60)
    else:
        threads = []
    if rank == 0:
        prober(peer, probe_prio, int(probe_bytes), int(probes))
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
