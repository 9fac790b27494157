"""calibrate_table.py: the table calibrate.sh prints: per preset and mode,
the measured median (the median of the repetitions' medians in a bench/e2e
results.tsv), its spread, the simulated iteration time (a trirace sim --json
file per preset) and their ratio. Only the Python standard library."""
import json
import os
import statistics
import sys


def main():
    sims, presets, modes, as_json = sys.argv[1:5]
    measured = {}
    for results in sys.argv[5:]:
        with open(results) as f:
            header = f.readline().rstrip("\n").split("\t")
            col = {name: i for i, name in enumerate(header)}
            for line in f:
                cells = line.rstrip("\n").split("\t")
                if len(cells) < len(header) or cells[col["status"]] != "ok":
                    continue
                key = (cells[col["preset"]], cells[col["mode"]])
                measured.setdefault(key, []).append(float(cells[col["median_ms"]]))
    rows = []
    for preset in presets.split(","):
        with open(os.path.join(sims, preset + ".json")) as f:
            sim = json.load(f)
        for mode in modes.split(","):
            if mode not in sim["modes"]:
                continue
            m = sim["modes"][mode]
            # A workload of several jobs (the rails presets): a row per job.
            targets = [(preset + "/" + job, ms) for job, ms in m["jobs_ms"].items()] if "jobs_ms" in m else \
                [(preset, m["iteration_ms"])]
            for row, s in targets:
                runs = measured.get((row, mode))
                if not runs:
                    continue
                med = statistics.median(runs)
                rows.append({"preset": row, "mode": mode, "measured_ms": round(med, 3), "runs": len(runs),
                             "spread": round((max(runs) - min(runs)) / med, 4), "simulated_ms": round(s, 3),
                             "error": round(s / med - 1, 4)})
    if not rows:
        sys.exit("calibrate: the results file has no run of the presets and modes asked for")
    if as_json == "1":
        print(json.dumps({"rows": rows, "max_abs_error": max(abs(r["error"]) for r in rows)}, indent=1))
        return
    print("%-16s %-9s %12s %4s %7s %13s %8s" % ("preset", "mode", "measured_ms", "runs", "spread", "simulated_ms",
                                               "sim/meas"))
    for r in rows:
        print("%-16s %-9s %12.1f %4d %6.1f%% %13.1f %+7.1f%%" % (r["preset"], r["mode"], r["measured_ms"], r["runs"],
                                                               100 * r["spread"], r["simulated_ms"],
                                                               100 * r["error"]))
    worst = max(rows, key=lambda r: abs(r["error"]))
    within = sum(1 for r in rows if abs(r["error"]) <= 0.05)
    print("largest error: %+.1f%% (%s, %s); %d of %d within 5%%" % (100 * worst["error"], worst["preset"],
                                                                    worst["mode"], within, len(rows)))


if __name__ == "__main__":
    main()
