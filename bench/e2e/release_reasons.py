#!/usr/bin/env python3
"""release_reasons.py: why and when each rank's gates opened, from the traces
of an end-to-end run (bench/e2e/run_e2e.sh --trace).

    release_reasons.py --out DIR [--class DENSE]
    release_reasons.py --self-test

Reads DIR/traces/<preset>/<mode>/trace.<rank>.json and prints, per preset,
mode and rank, for the gated ops of one traffic class (DENSE by default;
an op is a trace record: a chunk, or one member of a gated group):
how many there were, how many each release reason opened (the trace's
"release": the scheduler's names, docs/scheduler.md; gates the shim's
watchdog opened count as max-hold), the median and largest gate wait
(call to release), and the median time from release to completion. When
that is far above the op's wire time, the op did not start when its gate
opened: its stream, or a peer's stream or gate, was still behind (the
caller runs ahead of its streams, so a decision taken at the call may come
long before the op moves a byte), or the transfer itself was slow. A trace
cut short (a rank that died) is read up to where it ends. Modes without
gated ops (off, wire) print nothing.

Only the Python standard library. Exit status 0, 1 when DIR has no traces,
2 on usage errors; --self-test checks the summary on a trace it writes.
"""
import argparse
import collections
import glob
import json
import os
import re
import signal
import statistics
import sys
import tempfile

from trace_events import read_trace_events


def load_ops(path):
    """The op slices of one trace; None when it cannot be read."""
    try:
        events = read_trace_events(path)
    except (OSError, ValueError, KeyError):
        return None
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == "op"]


def summarise(ops, traffic_class):
    """One rank's gated ops of `traffic_class`: a dict of figures, or None."""
    gated = [e for e in ops if e.get("args", {}).get("class") == traffic_class and "release" in e["args"]]
    if not gated:
        return None
    reasons = collections.Counter(e["args"]["release"] for e in gated)
    waits_ms = [e["args"].get("gate_wait_us", 0) / 1000 for e in gated]
    runs_ms = [e["args"].get("run_us", 0) / 1000 for e in gated]
    return {
        "ops": len(gated),
        "reasons": dict(reasons.most_common()),
        "wait_median_ms": statistics.median(waits_ms),
        "wait_max_ms": max(waits_ms),
        "run_median_ms": statistics.median(runs_ms),
    }


def rank_of(path):
    m = re.search(r"trace\.(\d+)\.json$", path)
    return int(m.group(1)) if m else -1


def report(out_dir, traffic_class, stream):
    paths = sorted(glob.glob(os.path.join(out_dir, "traces", "*", "*", "trace.*.json")))
    if not paths:
        print(f"release_reasons: no traces under {out_dir}/traces (run run_e2e.sh with --trace)", file=sys.stderr)
        return 1
    print(f"{traffic_class} gates per rank: ops, release reasons, gate wait median/max, release to completion median",
          file=stream)
    groups = collections.defaultdict(list)
    for p in paths:
        mode_dir = os.path.dirname(p)
        groups[(os.path.basename(os.path.dirname(mode_dir)), os.path.basename(mode_dir))].append(p)
    for (preset, mode), files in sorted(groups.items()):
        for p in sorted(files, key=rank_of):
            ops = load_ops(p)
            if ops is None:
                print(f"  {preset:<14} {mode:<10} rank {rank_of(p)}: trace unreadable ({p})", file=stream)
                continue
            s = summarise(ops, traffic_class)
            if s is None:
                continue
            reasons = " ".join(f"{k}={v}" for k, v in s["reasons"].items())
            print(f"  {preset:<14} {mode:<10} rank {rank_of(p)}: {s['ops']} ops  {reasons}  "
                  f"wait {s['wait_median_ms']:.2f}/{s['wait_max_ms']:.1f} ms  "
                  f"run {s['run_median_ms']:.1f} ms", file=stream)
    return 0


def self_test():
    def op(cls, release, ts, dur, run_us, wait_us):
        return {"name": "AllReduce", "cat": "op", "ph": "X", "ts": ts, "dur": dur,
                "args": {"class": cls, "release": release, "release_reason": 0, "run_us": run_us,
                         "gate_wait_us": wait_us}}

    events = [
        op("DENSE", "deadline", 0, 10000, 9000, 100),
        op("DENSE", "max-hold", 0, 50000, 20000, 30000),
        op("DENSE", "deadline", 0, 20000, 16000, 300),
        op("P2P", "p2p", 0, 1000, 1000, 0),
        {"name": "Send", "cat": "op", "ph": "X", "ts": 0, "dur": 5, "args": {"class": "P2P"}},
        {"name": "iteration 0 begin", "ph": "i", "ts": 0},
    ]
    with tempfile.TemporaryDirectory() as d:
        gate = os.path.join(d, "traces", "contention", "gate")
        os.makedirs(gate)
        with open(os.path.join(gate, "trace.3.json"), "w") as f:
            json.dump({"traceEvents": events}, f)
        with open(os.path.join(gate, "trace.4.json"), "w") as f:
            f.write(json.dumps({"traceEvents": events[:1]})[:-2] + ",")  # cut before its closing part
        off = os.path.join(d, "traces", "contention", "off")
        os.makedirs(off)
        with open(os.path.join(off, "trace.0.json"), "w") as f:
            json.dump({"traceEvents": events[4:]}, f)
        lines = []

        class Sink:
            def write(self, s):
                lines.append(s)

        rc = report(d, "DENSE", Sink())
    text = "".join(lines)
    want = "contention     gate       rank 3: 3 ops  deadline=2 max-hold=1  wait 0.30/30.0 ms  run 16.0 ms"
    failures = []
    if "contention     gate       rank 4: 1 ops  deadline=1" not in text:
        failures.append("a trace cut short was not read")
    if rc != 0:
        failures.append(f"exit status {rc}")
    if want not in text:
        failures.append(f"missing line {want!r}")
    if " off " in text:
        failures.append("a mode without gated ops printed a line")
    with tempfile.TemporaryDirectory() as empty:
        if report(empty, "DENSE", Sink()) != 1:
            failures.append("no traces did not give exit status 1")
    for f in failures:
        print(f"release_reasons self-test: {f}\n{text}", file=sys.stderr)
    return 1 if failures else 0


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="run_e2e.sh's --out directory")
    ap.add_argument("--class", dest="traffic_class", default="DENSE", choices=["DENSE", "SPARSE", "P2P", "OTHER"])
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.out:
        ap.error("--out DIR is required")
    return report(args.out, args.traffic_class, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
