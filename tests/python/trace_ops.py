"""Reads the ops of a TriRace trace (TRIRACE_TRACE) for the Python tests.

load(path) -> [{"func", "bytes", "class", "tag", "comm", "role", "chunks"}, ...]
in trace order, where comm is the track's comm number, role the comm's role
as the trace's footer states it (e.g. "data-parallel (annotated)") and
chunks the number of chunks the op was split into (1: issued whole).
"""

import json
import re


def load(path):
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    roles = {}
    for key, value in trace.get("otherData", {}).items():
        match = re.fullmatch(r"comm (\d+)", key)
        role = re.search(r"role=(.*?) parent=", value)
        if match and role:
            roles[int(match.group(1))] = role.group(1)
    ops = []
    for e in events:
        if e.get("cat") != "op":
            continue
        track = re.match(r"comm (\d+) ", tracks.get(e["tid"], ""))
        comm = int(track.group(1)) if track else None
        ops.append({"func": e["args"]["func"], "bytes": e["args"].get("bytes", 0), "class": e["args"].get("class"),
                    "tag": e["args"].get("tag", {}), "comm": comm, "role": roles.get(comm),
                    "chunks": e["args"].get("chunks", 1)})
    return ops
