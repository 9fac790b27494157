"""sweep.py: where scheduling pays. For each bench/e2e preset on the
simulated test bed, scales every compute time by factors from 1/8 to 8
(trirace sim --compute-scale) and prints, per factor, the compute :
communication ratio (the bound's compute half over its busiest link's) and
each mode's speed-up over off, the ideal's too; draws the speed-ups against
the ratio, a panel per preset (python3-matplotlib).

  python3 bench/sim/sweep.py [--build DIR] [--presets LIST] [--gbps G] [--qos none|host|fabric] [--out FILE.png]
                             [--tsv FILE]

--qos: which of the bed's queues honour the marks (trirace sim --qos; the
bed's default, fabric, is testbed.sh --prio).

Only the Python standard library, and matplotlib for the picture (left out,
with a message, when it is missing)."""
import argparse
import json
import os
import subprocess
import sys

FACTORS = [0.125, 0.25, 0.5, 1, 2, 4, 8]
MODES = ["wire", "gate", "trirace"]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(here, "..", "..", "build"))
    ap.add_argument("--presets", default="contention,megatron,sparse,no-contention")
    ap.add_argument("--gbps", default="0.3")
    ap.add_argument("--qos", default="fabric", help="none, host or fabric (trirace sim --qos)")
    ap.add_argument("--out", default="", help="the picture (PNG); none without")
    ap.add_argument("--tsv", default="", help="the figures as a table (TSV)")
    a = ap.parse_args()
    trirace = os.path.join(a.build, "bin", "trirace")
    if not os.access(trirace, os.X_OK):
        sys.exit("sweep: %s is missing: build first" % trirace)
    rows = []
    for preset in a.presets.split(","):
        for f in FACTORS:
            out = subprocess.run([trirace, "sim", "--cluster", "testbed", "--gbps", a.gbps, "--preset", preset,
                                  "--modes", "off," + ",".join(MODES), "--compute-scale", str(f), "--qos", a.qos,
                                  "--json"],
                                 check=True, capture_output=True, text=True).stdout
            d = json.loads(out)
            off = d["modes"]["off"]["iteration_ms"]
            row = {"preset": preset, "factor": f, "ratio": d["compute_ms"] / d["link_ms"], "off_ms": off,
                   "ideal": off / d["ideal_ms"]}
            for m in MODES:
                row[m] = d["modes"][m]["speedup"]
            rows.append(row)
    cols = ["preset", "factor", "ratio", "off_ms"] + MODES + ["ideal"]
    lines = ["\t".join(cols)] + ["\t".join(("%.4g" % r[c]) if isinstance(r[c], float) else str(r[c]) for c in cols)
                                 for r in rows]
    print("\n".join(lines))
    if a.tsv:
        with open(a.tsv, "w") as f:
            f.write("\n".join(lines) + "\n")
    if not a.out:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("sweep: no matplotlib (Debian: python3-matplotlib): no picture", file=sys.stderr)
        return
    presets = a.presets.split(",")
    fig, axes = plt.subplots(1, len(presets), figsize=(3.6 * len(presets), 3.4), sharey=True)
    if len(presets) == 1:
        axes = [axes]
    for ax, preset in zip(axes, presets):
        rs = [r for r in rows if r["preset"] == preset]
        x = [r["ratio"] for r in rs]
        for m, style in zip(MODES + ["ideal"], ["-o", "-s", "-^", "--"]):
            ax.plot(x, [r[m] for r in rs], style, label=m, markersize=4)
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_title(preset)
        ax.set_xlabel("compute : communication (bound's halves)")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("speed-up over off (simulated)")
    axes[-1].legend(loc="upper right", fontsize=8)
    fig.suptitle("Where scheduling pays: the test bed's presets, compute scaled 1/8x to 8x (%s Gbit/s)" % a.gbps,
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print("sweep: wrote %s" % a.out, file=sys.stderr)


if __name__ == "__main__":
    main()
