#!/usr/bin/env python3
"""plot_e2e.py: the pictures of an end-to-end run (bench/e2e/run_e2e.sh).

    plot_e2e.py --out DIR [--per-host R]

Reads DIR/results.tsv (one line per run) and the traces under
DIR/traces/<preset>/<mode>/trace.<rank>.json (written by run_e2e.sh --trace)
and writes:

  DIR/iterations.png          median iteration time per preset and mode, with
                              the spread over the repetitions as error bars
                              and the lower bound as a dashed line
  DIR/timeline-<preset>.png   one steady-state iteration per mode: for every
                              rank, grouped by host, what it sends over its
                              host's uplink, by traffic class. The trace has
                              each op's call and completion, not its wire
                              time, so the solid slice is the op's wire bytes
                              at the link rate ending at its completion (the
                              shortest time it can have been on the link);
                              the thin grey line before it is the op issued
                              but not yet on the wire (waiting on its stream,
                              its gate or the link). Receives, and sends to a
                              rank of the same host, are left out.

Needs python3-matplotlib (Debian). Prints the paths it wrote; exits 1 when
matplotlib is missing, 2 on usage errors.
"""
import argparse
import csv
import glob
import json
import os
import re
import statistics
import sys

from trace_events import read_trace_events

CLASS_COLOURS = {"P2P": "#d62728", "DENSE": "#1f77b4", "SPARSE": "#2ca02c"}
MODE_ORDER = ["none", "off", "fifo", "priority", "wire", "gate", "trirace"]


def load_results(path):
    runs = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if row["status"] != "ok":
                continue
            try:
                ms = float(row["median_ms"])
            except ValueError:
                continue
            runs.setdefault(row["preset"], {}).setdefault(row["mode"], []).append(ms)
    return runs


def load_bounds(path):
    """bounds.tsv: preset, lower bound, simulated ideal ("nan" when absent)."""
    bounds, ideals = {}, {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                for table, k in ((bounds, 1), (ideals, 2)):
                    try:
                        value = float(fields[k])
                    except (IndexError, ValueError):
                        continue
                    if value == value:  # not nan
                        table[fields[0]] = value
    return bounds, ideals


def mode_colours(plt, modes):
    """A colour per mode, distinct for up to 20 modes (tab10 repeats its last colour past 10)."""
    cmap = plt.get_cmap("tab10" if len(modes) <= 10 else "tab20")
    return {mode: cmap(k % cmap.N) for k, mode in enumerate(modes)}


def fit_axes(fig, ax, width_in, height_in):
    """Sizes a figure drawn with constrained layout to its content: grows it
    until `ax` gets at least width_in x height_in inches next to whatever the
    layout put around it (title, axis labels, a legend outside the axes), so
    that a long title or a tall legend widens the picture instead of being
    cut off or squeezing the axes."""
    for _ in range(4):
        fig.canvas.draw()
        fig_w, fig_h = fig.get_size_inches()
        box = ax.get_position()
        grow_w = max(0.0, width_in - box.width * fig_w)
        grow_h = max(0.0, height_in - box.height * fig_h)
        if grow_w < 0.01 and grow_h < 0.01:
            return
        fig.set_size_inches(fig_w + grow_w, fig_h + grow_h)


def plot_iterations(plt, runs, bounds, ideals, path):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    presets = list(runs)
    seen = [m for p in presets for m in runs[p]]
    modes = [m for m in MODE_ORDER if m in seen] + sorted({m for m in seen if m not in MODE_ORDER})
    colours = mode_colours(plt, modes)
    # The axes get 2 inches per preset (3 at least, so that one preset's bars
    # are not squeezed); the figure is what they need around them: the
    # legend to their right, outside the bars, and the title above.
    axes_w, axes_h = max(3.0, 2.0 * len(presets)), 3.2
    fig, ax = plt.subplots(figsize=(axes_w + 3.0, axes_h + 1.5), constrained_layout=True)
    width = 0.8 / max(1, len(modes))
    handles = []
    for k, mode in enumerate(modes):
        xs, meds, lo, hi = [], [], [], []
        for i, preset in enumerate(presets):
            v = runs[preset].get(mode)
            if not v:
                continue
            m = statistics.median(v)
            xs.append(i + (k - (len(modes) - 1) / 2) * width)
            meds.append(m)
            lo.append(m - min(v))
            hi.append(max(v) - m)
        ax.bar(xs, meds, width * 0.95, yerr=[lo, hi], capsize=2, color=colours[mode])
        # The legend's entries are made here, one per mode, rather than
        # collected from the artists' labels.
        handles.append(Patch(facecolor=colours[mode], label=mode))
    # The dashed and dotted lines, with a legend entry each when one of the
    # presets has one (not only when the first preset has).
    for table, style, label in ((bounds, "dashed", "lower bound"), (ideals, "dotted", "simulated ideal")):
        drawn = False
        for i, preset in enumerate(presets):
            if preset in table:
                ax.hlines(table[preset], i - 0.45, i + 0.45, colors="black", linestyles=style)
                drawn = True
        if drawn:
            handles.append(Line2D([], [], color="black", linestyle=style, label=label))
    ax.set_xticks(range(len(presets)))
    ax.set_xticklabels(presets)
    ax.set_xlim(-0.5, len(presets) - 0.5)
    ax.set_ylabel("median iteration time (ms)")
    ax.set_title("Iteration time per preset and mode\n(error bars: min..max over repetitions)")
    ax.legend(handles=handles, fontsize=9, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    fit_axes(fig, ax, axes_w, axes_h)
    fig.savefig(path, dpi=110, bbox_inches="tight", pad_inches=0.1)
    plt.close(fig)


def load_config(out, preset, mode_dirs):
    """The model config from a traced run's RESULT line (rank 0), or None."""
    for mode in mode_dirs:
        path = os.path.join(out, "runs", f"{preset}-0-{mode}-traced", "rank-0.out")
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith("RESULT "):
                        return json.loads(line[len("RESULT "):])["config"]
        except (OSError, ValueError, KeyError):
            continue
    return None


def rank_of(cfg, stage, replica):
    total = cfg["stages"] + (1 if cfg["embedding"] else 0)
    if cfg["order"] == "dp-inner":
        return stage * cfg["replicas"] + replica
    return replica * total + stage


def place_of(cfg, rank):
    """(stage, replica) of a world rank."""
    total = cfg["stages"] + (1 if cfg["embedding"] else 0)
    if cfg["order"] == "dp-inner":
        return rank // cfg["replicas"], rank % cfg["replicas"]
    return rank % total, rank // total


def crosses_uplink(cfg, rank, per_host, role, peer):
    """Whether an op of `rank` on a comm of `role` sends over its host's uplink."""
    if cfg is None:
        return True
    stage, replica = place_of(cfg, rank)
    host = rank // per_host
    if role == "pipeline" and peer is not None:
        return rank_of(cfg, peer, replica) // per_host != host
    if role == "data-parallel":
        return any(rank_of(cfg, stage, d) // per_host != host for d in range(cfg["replicas"]))
    return True


def wire_bytes(func, nbytes, members):
    """Bytes one rank puts on its link for an op (ring algorithms)."""
    n = max(1, members)
    if func == "AllReduce":
        return nbytes * 2 * (n - 1) / n
    if func == "AllGather":
        return nbytes * (n - 1)
    if func == "AlltoAll":
        return nbytes * (n - 1) / n
    return nbytes


def load_trace(path):
    """Returns (iteration begin instants {it: ts_us}, op slices, comm tracks)."""
    events = read_trace_events(path)
    begins, ops, tracks = {}, [], {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            m = re.match(r"comm \d+ (\S+) .*rank (\d+)/(\d+)", e["args"]["name"])
            if m:
                tracks[e["tid"] // 16] = (m.group(1), int(m.group(3)))
        elif e.get("cat") == "iteration" and e.get("name", "").endswith(" begin"):
            begins[e["args"]["iteration"]] = e["ts"]
        elif e.get("cat") == "op" and e.get("ph") == "X":
            a = e.get("args", {})
            cls = a.get("class", "")
            if cls not in CLASS_COLOURS:
                continue
            if a.get("func") == "Recv":
                continue
            ops.append((e["ts"], e["ts"] + e["dur"], cls, a.get("func"), a.get("bytes", 0), a.get("peer"),
                        e["tid"] // 16))
    return begins, ops, tracks


def plot_timeline(plt, preset, mode_dirs, per_host, gbps, path, cfg):
    modes = [m for m in MODE_ORDER if m in mode_dirs]
    fig, axes = plt.subplots(len(modes), 1, figsize=(11, 1.2 + 1.9 * len(modes)), squeeze=False)
    for ax, mode in zip(axes[:, 0], modes):
        files = glob.glob(os.path.join(mode_dirs[mode], "trace.*.json"))
        ranks = {}
        for f in files:
            m = re.search(r"trace\.(\d+)\.json$", f)
            if m:
                ranks[int(m.group(1))] = load_trace(f)
        if 0 not in ranks or len(ranks[0][0]) < 2:
            ax.set_title(f"{mode}: no trace")
            continue
        begins = ranks[0][0]
        its = sorted(begins)
        # One iteration of the steady state: rank 0 issues an iteration only
        # once the one `lookahead` before it completed, so the gap between
        # two issues is one iteration. The middle pair of the run.
        it = its[len(its) // 2 - 1] if len(its) > 2 else its[0]
        t0, t1 = begins[it], begins[its[its.index(it) + 1]]
        labels = []
        for row, rank in enumerate(sorted(ranks)):
            labels.append(f"h{rank // per_host} rank {rank}")
            _, ops, tracks = ranks[rank]
            for start, end, cls, func, nbytes, peer, comm in ops:
                if end < t0 or start > t1:
                    continue
                role, members = tracks.get(comm, ("unknown", 1))
                if not crosses_uplink(cfg, rank, per_host, role, peer):
                    continue
                wire_us = wire_bytes(func, nbytes, members) * 8 / (gbps * 1e3)
                on = max(start, end - wire_us)
                if on > start:
                    ax.hlines(row, (start - t0) / 1e3, (on - t0) / 1e3, colors="#999999", linewidth=0.6)
                ax.broken_barh([((on - t0) / 1e3, max(end - on, 1.0) / 1e3)], (row - 0.35, 0.7),
                               facecolors=CLASS_COLOURS[cls], alpha=0.6, edgecolor="none")
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, (t1 - t0) / 1e3)
        for h in range(1, (len(labels) + per_host - 1) // per_host):
            ax.axhline(h * per_host - 0.5, color="black", linewidth=0.5)
        ax.set_title(f"{preset}, {mode}: rank 0 issuing iteration {it} to issuing {it + 1} "
                     f"({(t1 - t0) / 1e3:.1f} ms)", fontsize=9, loc="left")
    axes[-1, 0].set_xlabel("ms since the iteration began (rank 0)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c, alpha=0.55) for c in CLASS_COLOURS.values()]
    fig.legend(handles, list(CLASS_COLOURS), loc="lower right", ncol=3, fontsize=8)
    fig.suptitle(f"What each rank sends over its host's uplink, by class, one iteration per mode ({preset})\n"
                 f"solid: the op's wire bytes at {gbps:g} Gbit/s, ending at its completion; grey: issued, "
                 f"not yet on the wire", fontsize=9, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0.03, 1, 0.96))
    # bbox_inches="tight": nothing drawn is cut off at the picture's edges
    # (the class legend in its lower right corner included).
    fig.savefig(path, dpi=100, bbox_inches="tight", pad_inches=0.1)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="run_e2e.sh's output folder")
    p.add_argument("--per-host", type=int, default=2, help="ranks per host (default 2)")
    p.add_argument("--gbps", type=float, default=0.3, help="uplink rate in Gbit/s (default 0.3)")
    args = p.parse_args()
    results = os.path.join(args.out, "results.tsv")
    if not os.path.exists(results):
        print(f"plot_e2e: --out {args.out}: no results.tsv there", file=sys.stderr)
        return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_e2e: python3-matplotlib is not installed (scripts/setup-deps.sh installs it)",
              file=sys.stderr)
        return 1
    runs = load_results(results)
    if runs:
        path = os.path.join(args.out, "iterations.png")
        plot_iterations(plt, runs, *load_bounds(os.path.join(args.out, "bounds.tsv")), path)
        print(path)
    for preset_dir in sorted(glob.glob(os.path.join(args.out, "traces", "*"))):
        mode_dirs = {os.path.basename(d): d for d in glob.glob(os.path.join(preset_dir, "*"))}
        if not mode_dirs:
            continue
        preset = os.path.basename(preset_dir)
        path = os.path.join(args.out, f"timeline-{preset}.png")
        plot_timeline(plt, preset, mode_dirs, args.per_host, args.gbps, path,
                      load_config(args.out, preset, mode_dirs))
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
