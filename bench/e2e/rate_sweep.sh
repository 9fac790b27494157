#!/usr/bin/env bash
# rate_sweep.sh: the same presets and modes at several link rates, to see
# whether one set of defaults holds from slow to fast links (issue #17).
# Runs bench/e2e/run_e2e.sh once per rate (modes alternated inside each
# run, as always), then writes OUT/sweep.tsv and draws OUT/sweep.png with
# plot_sweep.py: per preset and rate, each mode's speed-up over off and its
# share of the possible gain, (off - mode) / (off - ideal), where ideal is
# the training loop simulated on ideal links at that rate (e2e_bound); the
# speed-up here is median(off) / median(mode) over the repetitions.
#
#   bench/e2e/rate_sweep.sh [--build DIR] [--rates R1,R2,...] [--presets P1,P2,...]
#                           [--modes M1,M2,...] [--reps N] [--out DIR] [--report]
#                           [-- hybrid_parallel flags]
#
# --report runs nothing: it collects and draws again from the per-rate
# folders already in --out DIR.
#
# Defaults: rates 100mbit,300mbit,1gbit,2gbit; presets contention,megatron;
# modes off,wire,gate,trirace (off must be among them); 2 repetitions.
# Needs what run_e2e.sh needs (root for the test bed). Prints figures; never
# fails on timing. Exit codes: 0 done, 2 usage, 1 a rate produced no results.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build="$root/build" rates=100mbit,300mbit,1gbit,2gbit presets=contention,megatron modes=off,wire,gate,trirace
reps=2 out="" report=0 extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --presets) presets=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --report) report=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "rate_sweep: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ ,$modes, == *,off,* ]] || { echo "rate_sweep: --modes '$modes': must include off (the reference)" >&2; exit 2; }
[[ $rates =~ ^[0-9]+(bit|kbit|mbit|gbit)(,[0-9]+(bit|kbit|mbit|gbit))*$ ]] ||
  { echo "rate_sweep: --rates '$rates': expected a comma list like 100mbit,1gbit" >&2; exit 2; }
if [ $report = 1 ] && [ -z "$out" ]; then
  echo "rate_sweep: --report needs --out DIR of an earlier sweep" >&2
  exit 2
fi
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/trirace-sweep.XXXXXX")
mkdir -p "$out"

IFS=, read -r -a rate_list <<<"$rates"
IFS=, read -r -a preset_list <<<"$presets"
preset_flags=()
for p in "${preset_list[@]}"; do preset_flags+=(--preset "$p"); done

status=0
for rate in "${rate_list[@]}"; do
  [ $report = 1 ] && break
  echo "== $rate"
  "$here/run_e2e.sh" --build "$build" --rate "$rate" "${preset_flags[@]}" --modes "$modes" --reps "$reps" \
    --out "$out/$rate" -- "${extra[@]}" | sed -n '/^preset /,/^(spread/p'
  [ -s "$out/$rate/results.tsv" ] || { echo "rate_sweep: $rate: no results" >&2; status=1; }
done

# One line per rate, preset and mode: the median over repetitions.
{
  echo -e "rate\tpreset\tmode\tmedian_ms\toff_ms\tideal_ms\tspeedup\tshare"
  for rate in "${rate_list[@]}"; do
    [ -s "$out/$rate/results.tsv" ] || continue
    awk -F'\t' -v rate="$rate" '
      function median(a, n,   i, j, t) {
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
      }
      FILENAME ~ /bounds.tsv$/ { ideal[$1] = $3; next }
      FNR > 1 && $7 == "ok" { k = $1 SUBSEP $3; v[k, ++n[k]] = $4; if (!(k in seen)) { seen[k] = 1; order[++no] = k } }
      END {
        for (i = 1; i <= no; i++) {
          k = order[i]; split(k, pm, SUBSEP); c = n[k]
          for (j = 1; j <= c; j++) x[j] = v[k, j]
          med[k] = median(x, c)
        }
        for (i = 1; i <= no; i++) {
          k = order[i]; split(k, pm, SUBSEP); p = pm[1]; m = pm[2]
          off = med[p SUBSEP "off"]; id = (p in ideal) ? ideal[p] : "nan"
          sp = off > 0 ? off / med[k] : "nan"
          share = (id != "nan" && off - id > 0) ? (off - med[k]) / (off - id) : "nan"
          printf "%s\t%s\t%s\t%.2f\t%.2f\t%s\t%.3f\t%s\n", rate, p, m, med[k], off, id, sp, share
        }
      }' "$out/$rate/bounds.tsv" "$out/$rate/results.tsv"
  done
} >"$out/sweep.tsv"
echo "sweep: $out/sweep.tsv"
column -t -s $'\t' "$out/sweep.tsv" 2>/dev/null || cat "$out/sweep.tsv"

py=""
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import matplotlib' 2>/dev/null; then py=$p; break; fi
done
if [ -n "$py" ]; then
  "$py" "$here/plot_sweep.py" "$out/sweep.tsv" "$out/sweep.png" && echo "picture: $out/sweep.png"
else
  echo "rate_sweep: no python3 with matplotlib: no picture (install python3-matplotlib)" >&2
fi
exit $status
