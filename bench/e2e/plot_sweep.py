#!/usr/bin/env python3
"""Draws rate_sweep.sh's sweep.tsv: per preset, each mode's share of the
possible gain, (off - mode) / (off - ideal), against the link rate (top),
and its speed-up over off (bottom).

    plot_sweep.py SWEEP_TSV OUT_PNG
"""
import csv
import re
import sys

UNITS = {"bit": 1e-6, "kbit": 1e-3, "mbit": 1.0, "gbit": 1e3}
MODE_ORDER = ["priority", "wire", "gate", "trirace"]


def mbit(rate):
    m = re.fullmatch(r"(\d+)(bit|kbit|mbit|gbit)", rate)
    if not m:
        raise ValueError(f"not a rate: {rate}")
    return int(m.group(1)) * UNITS[m.group(2)]


def number(text):
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value else None


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(csv.DictReader(open(argv[1], newline=""), delimiter="\t"))
    presets = list(dict.fromkeys(r["preset"] for r in rows))
    modes = [m for m in MODE_ORDER if any(r["mode"] == m for r in rows)]
    if not presets or not modes:
        sys.stderr.write("plot_sweep: nothing to draw in %s\n" % argv[1])
        return 1
    fig, axes = plt.subplots(2, len(presets), figsize=(4.6 * len(presets), 6.4), squeeze=False, sharex=True)
    colours = plt.get_cmap("tab10")
    for col, preset in enumerate(presets):
        for k, mode in enumerate(modes):
            pts = sorted((mbit(r["rate"]), number(r["share"]), number(r["speedup"]))
                         for r in rows if r["preset"] == preset and r["mode"] == mode)
            xs = [p[0] for p in pts]
            axes[0][col].plot(xs, [p[1] for p in pts], marker="o", label=mode, color=colours(k + 1))
            axes[1][col].plot(xs, [p[2] for p in pts], marker="o", label=mode, color=colours(k + 1))
        axes[0][col].axhline(0, color="grey", linewidth=0.8)
        axes[0][col].axhline(1, color="black", linestyle="dotted", linewidth=0.8)
        axes[1][col].axhline(1, color="grey", linewidth=0.8)
        axes[0][col].set_title(preset)
        axes[1][col].set_xscale("log")
        axes[1][col].set_xlabel("link rate (Mbit/s)")
    axes[0][0].set_ylabel("share of the possible gain\n(off - mode) / (off - ideal)")
    axes[1][0].set_ylabel("off / mode")
    axes[0][-1].legend(fontsize=8)
    fig.suptitle("The same defaults at every link rate (median over repetitions, modes alternated)")
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
