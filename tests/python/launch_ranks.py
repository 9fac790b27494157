"""Starts N ranks of a Python script on this host with torchrun's environment.

    launch_ranks.py --nproc 4 [--timeout S] [--env K=V]... script.py [args...]

Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR
(127.0.0.1) and MASTER_PORT (a free port). Rank 0's stdout passes through;
other ranks' stdout goes to stderr prefixed with the rank. Exits with the
first non-zero rank status (or 124 when the timeout kills the job). This is
for tests: Debian's torch 1.13 `torchrun` fails to start on Python 3.11.
"""

import argparse
import os
import socket
import subprocess
import sys
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pump(stream, out, prefix):
    for line in iter(stream.readline, b""):
        out.buffer.write(prefix + line)
        out.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nproc", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--env", action="append", default=[], metavar="K=V")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    if opts.nproc < 1:
        parser.error("--nproc must be at least 1, got %d" % opts.nproc)
    base = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                WORLD_SIZE=str(opts.nproc), LOCAL_WORLD_SIZE=str(opts.nproc))
    for item in opts.env:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error("--env wants K=V, got %r" % item)
        base[key] = value
    procs, pumps = [], []
    for rank in range(opts.nproc):
        env = dict(base, RANK=str(rank), LOCAL_RANK=str(rank))
        proc = subprocess.Popen([sys.executable, opts.script] + opts.args, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        procs.append(proc)
        out = sys.stdout if rank == 0 else sys.stderr
        prefix = b"" if rank == 0 else b"[rank %d] " % rank
        for stream, sink, pre in ((proc.stdout, out, prefix), (proc.stderr, sys.stderr, b"[rank %d] " % rank)):
            t = threading.Thread(target=pump, args=(stream, sink, pre), daemon=True)
            t.start()
            pumps.append(t)
    deadline = time.monotonic() + opts.timeout
    status = 0
    while any(p.poll() is None for p in procs):
        if time.monotonic() > deadline:
            for p in procs:
                if p.poll() is None:
                    p.kill()
            print("launch_ranks: killed the job after %.0f s" % opts.timeout, file=sys.stderr)
            status = 124
            break
        time.sleep(0.05)
    for p in procs:
        p.wait()
        if status == 0 and p.returncode != 0:
            status = p.returncode if p.returncode > 0 else 128 - p.returncode
    for t in pumps:
        t.join(timeout=5)
    return status


if __name__ == "__main__":
    sys.exit(main())
