"""policy.py: the trirace policy's settings judged on the simulator. For
each setting (a TRIRACE_* variable), one value at a time around the
defaults, runs every bench/e2e preset at several link rates in the modes
that use the policy (gate: the policy alone; trirace: with class marks on
the wire), and prints per value and rate the geometric mean over the
presets of off / mode, with the defaults' row first. The simulated engines
read the variables as the shim's do (trirace sim's environment).

  python3 bench/sim/policy.py [--build DIR] [--rates LIST] [--presets LIST] [--only NAME] [--decide-at call|stream]
                              [--qos none|host|fabric]

--qos sets which of the bed's queues honour the marks (trirace sim --qos;
the bed's default, fabric, is testbed.sh --prio; none is --no-prio).

Only the Python standard library."""
import argparse
import json
import math
import os
import subprocess
import sys

# name -> values tried (the default first).
SETTINGS = {
    "TRIRACE_DENSE_WINDOW_US": ["7000", "1000", "3000", "20000", "100000"],
    "TRIRACE_DENSE_CREDIT_US": ["2000", "0", "500", "7000"],
    "TRIRACE_CHUNK_US": ["4000", "0", "1000", "16000"],
    "TRIRACE_MAX_HOLD_FRACTION": ["0.1", "0", "0.3", "1"],
    "TRIRACE_DEADLINE_SLACK_US": ["1000", "0", "10000"],
    "TRIRACE_TUNE": ["on", "off"],
    "TRIRACE_FRONT_STAGE_FIRST": ["auto", "off"],
}


def run(trirace, preset, gbps, env, decide_at, qos):
    out = subprocess.run([trirace, "sim", "--cluster", "testbed", "--gbps", gbps, "--preset", preset, "--modes",
                          "off,gate,trirace", "--decide-at", decide_at, "--qos", qos, "--json"], check=True,
                         capture_output=True, text=True, env=env).stdout
    d = json.loads(out)
    return {m: d["modes"][m]["speedup"] for m in ("gate", "trirace")}, d["modes"]["off"]["iteration_ms"] / d["ideal_ms"]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(here, "..", "..", "build"))
    ap.add_argument("--rates", default="0.1,0.3,1,10")
    ap.add_argument("--presets", default="contention,megatron,sparse")
    ap.add_argument("--only", default="", help="one setting's name")
    ap.add_argument("--decide-at", default="call", help="call (the shim) or stream (trirace sim --decide-at)")
    ap.add_argument("--qos", default="fabric", help="none, host or fabric (trirace sim --qos)")
    a = ap.parse_args()
    trirace = os.path.join(a.build, "bin", "trirace")
    if not os.access(trirace, os.X_OK):
        sys.exit("policy: %s is missing: build first" % trirace)
    base = {k: v for k, v in os.environ.items() if not k.startswith("TRIRACE_")}
    rates = a.rates.split(",")
    presets = a.presets.split(",")
    print("geometric mean over %s of off/mode; columns: gate / trirace per rate (Gbit/s); ideal in the last row; "
          "--qos %s" % (",".join(presets), a.qos))
    print("%-28s %-8s " % ("setting", "value") + " ".join("%15s" % r for r in rates))
    ideal_row = {}
    for name, values in SETTINGS.items():
        if a.only and name != a.only:
            continue
        for i, value in enumerate(values):
            env = dict(base, **{name: value})
            cells = []
            for rate in rates:
                g = t = 0.0
                ideal = 0.0
                for p in presets:
                    s, best = run(trirace, p, rate, env, a.decide_at, a.qos)
                    g += math.log(s["gate"])
                    t += math.log(s["trirace"])
                    ideal += math.log(best)
                ideal_row[rate] = math.exp(ideal / len(presets))
                cells.append("%7.3f/%-7.3f" % (math.exp(g / len(presets)), math.exp(t / len(presets))))
            print("%-28s %-8s " % (name if i == 0 else "", value + ("*" if i == 0 else "")) + " ".join(cells))
    print("%-28s %-8s " % ("ideal", "") + " ".join("%15.3f" % ideal_row[r] for r in rates))


if __name__ == "__main__":
    main()
