#!/usr/bin/env bash
# run_e2e.sh: the end-to-end benchmark driver. Runs examples/hybrid_parallel
# on the multi-host test bed under each TriRace mode, alternating the modes
# run by run (A B C D A B C D ...), and prints per preset and mode the median
# iteration time, its spread, the speed-up off/X (median of the per-repetition
# ratios) and measured/bound against the lower bound from e2e_bound.
#
#   bench/e2e/run_e2e.sh [--build DIR] [--preset P]... [--reps N] [--hosts H]
#                        [--ranks-per-host R] [--rate RATE] [--mtu BYTES] [--nics N] [--modes LIST]
#                        [--out DIR] [--loopback] [--no-prio] [--trace] [--env NAME=VALUE]...
#                        [--variant LABEL=MODE,NAME=VALUE[,NAME=VALUE]...]... [--report]
#                        [-- extra hybrid_parallel flags]
#
# Presets: hybrid_parallel's (contention, megatron, sparse, no-contention:
# the default four), and the 2-rail pair rails-split and rails-shared
# (rails_job.sh): a data-parallel job on local rank 0 and a pipeline job on
# local rank 1 of every host, on two NICs per host (--nics defaults to 2
# when one of them is asked for; they always run 2 ranks per host): split
# puts the DP job on rail 0 and the pipeline on rail 1, shared both on rail
# 0. Each gives two rows, <preset>/dp and <preset>/pp, one per job; their
# bounds are the job's own (the other job's traffic left out). The PyTorch
# presets pytorch, pytorch-sparse and pytorch-2bw (pytorch_job.sh) run
# examples/pytorch/hybrid_train.py on hostccl's torch backend instead (the
# extra flags after -- go to hybrid_train.py for them; no bound or ideal: the
# simulation models hybrid_parallel only; they need a python3 with torch).
#
# Modes (comma list, default off,fifo,priority,wire,gate,trirace):
#   none      no shim loaded
#   off       libtrirace.so preloaded, TRIRACE_MODE=off
#   fifo | priority | trirace   TRIRACE_MODE=schedule TRIRACE_POLICY=<mode>
#   wire      off with TRIRACE_NET_CLASS_PRIORITY=on: no gating, class
#             priority on the wire (what NIC QoS alone gives)
#   gate      trirace with TRIRACE_NET_CLASS_PRIORITY=off: the scheduler alone
#   LABEL     a --variant: MODE with extra variables for its ranks only, so
#             that a setting is compared side by side, in the same
#             repetitions, e.g. --variant trirace-nocp=trirace,TRIRACE_NET_CLASS_PRIORITY=off
#             (a variant not named in --modes is appended to them)
# Without libtrirace.so in DIR/lib only `none` can run (the others are
# skipped with a message). Without root, or with --loopback, the ranks run on
# loopback with launch.sh (no shaped links: no contention to schedule
# around; the figures only show the modes' overhead).
# The test bed's uplinks have a priority queue (testbed.sh --prio) that
# serves socket priority 6 before 0 before 1, as a NIC with traffic classes
# would; the net plugin uses it when class priority is on
# (TRIRACE_NET_CLASS_PRIORITY, auto: in mode trirace only). --no-prio
# leaves it out (one FIFO per uplink). --env adds a variable to every rank
# of every mode (e.g. TRIRACE_NET_CLASS_PRIORITY=off to compare). --mtu
# sets the links' MTU (default 9000, jumbo frames as on cluster fabrics).
# --report runs nothing: it prints the table (and, with --trace, draws the
# pictures) again from the results.tsv and traces already in --out DIR.
#
# Prints a table; writes DIR/results.tsv (one line per run), DIR/bounds.tsv
# and each run's rank logs under DIR/runs/. cpu% is the share of the
# machine's cores the ranks used (their getrusage over the training loop),
# host% the whole machine's busy share over the run (/proc/stat): near 100
# the CPUs, not the links, set the pace. --trace adds, after the timed runs,
# one traced run per mode (off is traced as observe, which records without
# gating) into DIR/traces/<preset>/<mode>/trace.<rank>.json and draws
# DIR/iterations.png and DIR/timeline-<preset>.png with plot_e2e.py
# (python3-matplotlib), and prints per rank why and when the DENSE gates
# opened (release_reasons.py). This prints figures: it never fails on timing.
# Exit codes: 0 done (even if some runs failed: they are marked), 2 usage,
# 1 missing programs.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build="$root/build" reps=3 hosts=4 per_host=2 rate=300mbit mtu=9000 nics="" modes=off,fifo,priority,wire,gate,trirace out="" loopback=0
prio=1 report=0
user_env=()
variant_labels=() variant_base=() variant_envs=()
trace=0
presets=()
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --preset) presets+=("$2"); shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --ranks-per-host) per_host=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --mtu) mtu=$2; shift 2 ;;
    --nics) nics=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --loopback) loopback=1; shift ;;
    --no-prio) prio=0; shift ;;
    --report) report=1; shift ;;
    --env)
      [[ ${2:-} =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || { echo "run_e2e: --env '${2:-}': expected NAME=VALUE" >&2; exit 2; }
      user_env+=(--env "$2"); shift 2 ;;
    --variant)
      [[ ${2:-} =~ ^([a-z][a-z0-9-]*)=(none|off|fifo|priority|wire|gate|trirace)((,[A-Za-z_][A-Za-z0-9_]*=[^,]*)+)$ ]] || {
        echo "run_e2e: --variant '${2:-}': expected LABEL=MODE,NAME=VALUE[,NAME=VALUE]... (LABEL: lower case," \
          "digits, '-'; MODE: none, off, fifo, priority, wire, gate or trirace; values without commas)" >&2
        exit 2
      }
      case ${BASH_REMATCH[1]} in
        none | off | observe | fifo | priority | wire | gate | trirace)
          echo "run_e2e: --variant '$2': the label must not be a mode's name" >&2; exit 2 ;;
      esac
      variant_labels+=("${BASH_REMATCH[1]}") variant_base+=("${BASH_REMATCH[2]}")
      variant_envs+=("${BASH_REMATCH[3]#,}")
      shift 2 ;;
    --trace) trace=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '2,46p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_e2e: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#presets[@]} -gt 0 ] || presets=(contention megatron sparse no-contention)
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "run_e2e: --reps '$reps': expected a positive integer" >&2; exit 2; }
rails=0
for p in "${presets[@]}"; do [[ $p == rails-* ]] && rails=1; done
for p in "${presets[@]}"; do
  case $p in
    rails-split | rails-shared | contention | megatron | sparse | no-contention | default | tiny) ;;
    pytorch | pytorch-sparse | pytorch-2bw) ;;
    rails-*) echo "run_e2e: --preset '$p': the 2-rail presets are rails-split and rails-shared" >&2; exit 2 ;;
  esac
done
[ -n "$nics" ] || nics=$((rails ? 2 : 1))
[[ $nics =~ ^[1-8]$ ]] || { echo "run_e2e: --nics '$nics': expected an integer from 1 to 8" >&2; exit 2; }
if [ $rails = 1 ] && [ "$nics" -lt 2 ]; then
  echo "run_e2e: --nics $nics: the rails-* presets need 2 NICs per host" >&2
  exit 2
fi

hybrid="$build/bin/hybrid_parallel"
plugin="$build/lib/libnccl-net-trirace.so"
shim="$build/lib/libtrirace.so"
bound_bin="$build/bin/e2e_bound"
testbed="$root/tools/testbed/testbed.sh"
launch="$root/examples/hybrid_parallel/launch.sh"
for f in "$hybrid" "$plugin"; do
  [ -e "$f" ] || { echo "run_e2e: $f is missing: build the examples, plugin and hostccl modules" >&2; exit 1; }
done
# The PyTorch presets need a python3 with torch; without one they are left out.
torch_py=""
for p in "${presets[@]}"; do
  [[ $p == pytorch* ]] || continue
  torch_py=$("$root/tests/python/torch_python.sh" 2>"${TMPDIR:-/tmp}/run_e2e-torch.$$") && break
  echo "run_e2e: the pytorch presets are left out: $(cat "${TMPDIR:-/tmp}/run_e2e-torch.$$")" >&2
  kept=()
  for q in "${presets[@]}"; do [[ $q == pytorch* ]] || kept+=("$q"); done
  presets=("${kept[@]}")
  [ ${#presets[@]} -gt 0 ] || exit 1
  break
done
rm -f "${TMPDIR:-/tmp}/run_e2e-torch.$$"
IFS=, read -r -a mode_list <<<"$modes"
# variant_index LABEL: the index of a --variant, or nothing.
variant_index() {
  local i
  for i in "${!variant_labels[@]}"; do [ "${variant_labels[$i]}" = "$1" ] && echo "$i"; done
}
for l in "${variant_labels[@]}"; do
  [[ ",$modes," == *",$l,"* ]] || mode_list+=("$l")
done
runnable=()
for m in "${mode_list[@]}"; do
  base=$m
  v=$(variant_index "$m")
  [ -n "$v" ] && base=${variant_base[$v]}
  case $base in
    none) runnable+=("$m") ;;
    off | fifo | priority | wire | gate | trirace)
      if [ -e "$shim" ]; then runnable+=("$m"); else echo "run_e2e: mode $m skipped: $shim not built" >&2; fi ;;
    *) echo "run_e2e: --modes: '$m' is not one of none, off, fifo, priority, wire, gate, trirace or a --variant" >&2; exit 2 ;;
  esac
done
[ ${#runnable[@]} -gt 0 ] || { echo "run_e2e: no mode can run" >&2; exit 1; }

if [ $report = 1 ]; then
  [ -n "$out" ] && [ -f "$out/results.tsv" ] ||
    { echo "run_e2e: --report needs --out DIR with the results.tsv of an earlier run" >&2; exit 2; }
fi
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/trirace-e2e.XXXXXX")
mkdir -p "$out/runs"
results="$out/results.tsv"
[ $report = 1 ] || echo -e "preset\trep\tmode\tmedian_ms\tchecksum\thost_cpu_pct\tstatus\tranks_cpu_pct" >"$results"

# The test bed, made once and removed at exit.
tb_name=""
cleanup() {
  [ -n "$tb_name" ] && "$testbed" down --name "$tb_name" >/dev/null 2>&1
  rm -f "/dev/shm/trirace-$(id -u)-e2e-$$"  # the loopback runs' occupancy segment
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ $loopback = 0 ] && [ $report = 0 ]; then
  prio_flag=()
  [ "$prio" = 1 ] && prio_flag=(--prio)
  line=$("$testbed" up --hosts "$hosts" --nics "$nics" --rate "$rate" --mtu "$mtu" "${prio_flag[@]}" --owner $$ \
    2>"$out/testbed-up.err")
  rc=$?
  if [ $rc = 78 ] && [ "$prio" = 1 ]; then
    # The kernel or the tools lack what --prio needs (pfifo_fast, nftables).
    echo "run_e2e: no priority queues ($(tail -n1 "$out/testbed-up.err")); one FIFO per uplink instead" >&2
    line=$("$testbed" up --hosts "$hosts" --nics "$nics" --rate "$rate" --mtu "$mtu" --owner $$ 2>"$out/testbed-up.err")
    rc=$?
  fi
  if [ $rc = 0 ]; then
    tb_name=$(sed -n 's/^TESTBED name=\([^ ]*\).*/\1/p' <<<"$line")
    echo "test bed: $line"
  else
    echo "run_e2e: no test bed (testbed.sh up exited $rc: $(tail -n1 "$out/testbed-up.err")); running on loopback," \
      "which has no contention" >&2
    loopback=1
  fi
fi
if [ $loopback = 1 ] && [ $rails = 1 ]; then
  echo "run_e2e: the rails-* presets need the test bed's two NICs per host: left out on loopback" >&2
  kept=()
  for p in "${presets[@]}"; do [[ $p == rails-* ]] || kept+=("$p"); done
  presets=("${kept[@]}")
  [ ${#presets[@]} -gt 0 ] || exit 1
fi
gbps=$(awk -v r="$rate" 'BEGIN { n = r + 0; u = substr(r, length(n "") + 1);
  m = (u == "kbit") ? 1e-6 : (u == "mbit") ? 1e-3 : (u == "gbit") ? 1 : (u == "tbit") ? 1e3 : 1e-9; print n * m }')

# CPU busy share between two /proc/stat samples, in percent.
cpu_sample() { awk '/^cpu / { idle = $5 + $6; t = 0; for (i = 2; i <= NF; i++) t += $i; print t, idle }' /proc/stat; }

# mode_env MODE [traced]: the variables of a mode or --variant, one per
# line; a traced off runs as observe (records without gating).
mode_env() {
  local v
  v=$(variant_index "$1")
  if [ -n "$v" ]; then
    mode_env "${variant_base[$v]}" "${2:-}"
    tr , '\n' <<<"${variant_envs[$v]}"
    return
  fi
  case $1 in
    none) ;;
    off) printf '%s\n' "LD_PRELOAD=$shim" "TRIRACE_MODE=$([ -n "${2:-}" ] && echo observe || echo off)" ;;
    wire) mode_env off "${2:-}"; echo TRIRACE_NET_CLASS_PRIORITY=on ;;
    gate) mode_env trirace "${2:-}"; echo TRIRACE_NET_CLASS_PRIORITY=off ;;
    *) printf '%s\n' "LD_PRELOAD=$shim" TRIRACE_MODE=schedule "TRIRACE_POLICY=$1" ;;
  esac
}

# rows_of PRESET: the preset's rows in the table: itself, or one per job.
rows_of() { case $1 in rails-*) echo "$1/dp $1/pp" ;; *) echo "$1" ;; esac; }
# row_args ROW: the hybrid_parallel flags of a row's job (the extra ones not
# included), as rails_job.sh runs it.
row_args() {
  case $1 in
    */dp) echo "--preset contention --stages 1 --replicas $hosts" ;;
    */pp) echo "--preset contention --stages $hosts --replicas 1" ;;
    *) echo "--preset $1" ;;
  esac
}

# run_one PRESET REP MODE: one timed run, a line in results.tsv per row.
# With a 4th argument (a folder) the run is traced there instead and not
# counted.
run_one() {
  local preset=$1 rep=$2 mode=$3 tdir=${4:-} envs=() kv
  local dir="$out/runs/$1-$2-$3${tdir:+-traced}"
  while IFS= read -r kv; do [ -n "$kv" ] && envs+=(--env "$kv"); done < <(mode_env "$mode" "${tdir:+traced}")
  envs+=("${user_env[@]}")
  if [ -n "$tdir" ]; then
    mkdir -p "$tdir"
    envs+=(--env "TRIRACE_TRACE=$tdir/trace.%r.json")
  fi
  local before after rph=$per_host cmd=("$hybrid" --preset "$preset" "${extra[@]}")
  if [[ $preset == rails-* ]]; then
    rph=2
    cmd=("$here/rails_job.sh" --placement "${preset#rails-}" -- "$hybrid" "${extra[@]}")
  elif [[ $preset == pytorch* ]]; then
    cmd=("$here/pytorch_job.sh" --build "$build" --preset "$preset" -- "${extra[@]}")
    envs+=(--env "TRIRACE_TORCH_PYTHON=$torch_py")
  fi
  before=$(cpu_sample)
  if [ $loopback = 1 ]; then
    "$launch" -n "$((hosts * per_host))" --timeout 300 --out "$dir" --env TRIRACE_NET_IFNAME=lo \
      --env NCCL_NET_PLUGIN="$plugin" --env TRIRACE_JOB_ID="e2e-$$" "${envs[@]}" -- \
      "${cmd[@]}" >/dev/null 2>"$dir.err"
  else
    "$testbed" run --name "$tb_name" --ranks-per-host "$rph" --timeout 300 --out "$dir" \
      --env NCCL_NET_PLUGIN="$plugin" "${envs[@]}" -- "${cmd[@]}" >/dev/null 2>"$dir.err"
  fi
  local rc=$?
  after=$(cpu_sample)
  local cpu
  cpu=$(awk -v a="$before" -v b="$after" 'BEGIN { split(a, x, " "); split(b, y, " ");
    dt = y[1] - x[1]; di = y[2] - x[2]; printf "%.0f", (dt > 0 ? 100 * (dt - di) / dt : 0) }')
  local rows row i=0
  read -r -a rows <<<"$(rows_of "$preset")"
  # Row i's RESULT is in rank i's output: rank 0 of its job is local rank i of host 0.
  for row in "${rows[@]}"; do
    record "$row" "$rep" "$mode" "$dir/rank-$i.out" "$rc" "$cpu" "$tdir"
    i=$((i + 1))
  done
}

# record ROW REP MODE RANK_OUT RC CPU [TRACE_DIR]: a row's figures from its
# rank 0's RESULT line.
record() {
  local preset=$1 rep=$2 mode=$3 rank_out=$4 rc=$5 cpu=$6 tdir=${7:-}
  local result median checksum
  result=$(grep -h '^RESULT ' "$rank_out" 2>/dev/null)
  # hybrid_parallel's RESULT (compact JSON) or hybrid_train.py's (json.dumps: a space after ':').
  median=$(sed -n 's/.*"median\(_step\)\{0,1\}_ms": *\([0-9.e+-]*\).*/\2/p' <<<"$result")
  checksum=$(sed -n 's/.*"\(weights_\)\{0,1\}checksum": *"\([0-9a-f]*\)".*/\2/p' <<<"$result")
  local ranks_cpu
  ranks_cpu=$(sed -n 's/.*"ranks_cpu_pct": *\([0-9.e+-]*\).*/\1/p' <<<"$result")
  ranks_cpu=$(awk -v c="$ranks_cpu" 'BEGIN { if (c == "") print "nan"; else printf "%.0f", c }')
  local status=ok
  if [ $rc != 0 ] || [ -z "$median" ]; then status="failed($rc)"; fi
  if [ -n "$tdir" ]; then
    printf '  %-14s traced  %-9s %10s ms  cpu %3s%% host %3s%%  %s -> %s\n' "$preset" "$mode" "${median:-nan}" \
      "$ranks_cpu" "$cpu" "$status" "$tdir"
    return
  fi
  echo -e "$preset\t$rep\t$mode\t${median:-nan}\t${checksum:--}\t$cpu\t$status\t$ranks_cpu" >>"$results"
  printf '  %-14s rep %d %-9s %10s ms  cpu %3s%% host %3s%%  %s\n' "$preset" "$rep" "$mode" "${median:-nan}" \
    "$ranks_cpu" "$cpu" "$status"
}

for preset in "${presets[@]}"; do
  [ $report = 1 ] && break
  for ((rep = 1; rep <= reps; rep++)); do
    for mode in "${runnable[@]}"; do run_one "$preset" "$rep" "$mode"; done
  done
  if [ $trace = 1 ]; then
    for mode in "${runnable[@]}"; do
      [ "$mode" = none ] || run_one "$preset" 0 "$mode" "$out/traces/$preset/$mode"
    done
  fi
done

# ---- summary ---------------------------------------------------------------
echo
echo "results: $results"
printf '%-14s %-9s %10s %8s %9s %10s %9s %10s %9s %5s %6s\n' preset mode median_ms spread off/mode bound_ms \
  meas/bnd ideal_ms meas/idl cpu% host%
: >"$out/bounds.tsv"
# Loopback is not shaped: only the compute on the critical path bounds it.
bound_key=bound_ms
if [ $loopback = 1 ]; then
  bound_key=compute_ms
  echo "(loopback: no shaped links, bound_ms is the compute on the critical path only)"
fi
rows=()
for preset in "${presets[@]}"; do read -r -a r <<<"$(rows_of "$preset")"; rows+=("${r[@]}"); done
for preset in "${rows[@]}"; do
  bound="nan" ideal="nan"
  read -r -a args <<<"$(row_args "$preset")"
  rph=$per_host
  [[ $preset == rails-* ]] && rph=1
  if [[ $preset == pytorch* ]]; then
    # No simulation of hybrid_train.py: its runs are checked against each other.
    ref=$(awk -F'\t' -v p="$preset" 'NR > 1 && $1 == p && $7 == "ok" { print $5; exit }' "$results")
  elif [ -x "$bound_bin" ]; then
    bline=$("$bound_bin" --hosts "$hosts" --ranks-per-host "$rph" --gbps "$gbps" -- "${args[@]}" "${extra[@]}")
    bound=$(sed -n "s/.*\"$bound_key\":\\([0-9.]*\\).*/\\1/p" <<<"$bline")
    # The simulated loop on ideal links needs the shaped links it models.
    [ $loopback = 1 ] || ideal=$(sed -n 's/.*"ideal_ms":\([0-9.]*\).*/\1/p' <<<"$bline")
    echo -e "$preset\t$bound\t$ideal" >>"$out/bounds.tsv"
  fi
  [[ $preset == pytorch* ]] ||
    ref=$("$hybrid" "${args[@]}" "${extra[@]}" --reference | sed -n 's/.*"checksum":"\([0-9a-f]*\)".*/\1/p')
  awk -F'\t' -v preset="$preset" -v bound="${bound:-nan}" -v ideal="${ideal:-nan}" -v ref="$ref" \
    -v modes="${runnable[*]}" '
    function median(a, n,   i, j, t) {
      for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    NR > 1 && $1 == preset && $7 == "ok" { v[$3, ++n[$3]] = $4; by_rep[$3, $2] = $4; reps[$2] = 1; ok++
      cpu[$3, n[$3]] = $8; host[$3, n[$3]] = $6
      if ($5 != ref) bad = bad " " $3 "/rep" $2 }
    END {
      nm = split(modes, ml, " ")
      for (k = 1; k <= nm; k++) {
        m = ml[k]; c = n[m] + 0
        if (c == 0) { printf "%-14s %-9s %10s\n", preset, m, "no run"; continue }
        lo = hi = v[m, 1]; for (i = 1; i <= c; i++) { x[i] = v[m, i]; if (x[i] < lo) lo = x[i]; if (x[i] > hi) hi = x[i] }
        med = median(x, c)
        rc = 0; for (r in reps) if (((ml[1], r) in by_rep) && ((m, r) in by_rep)) q[++rc] = by_rep[ml[1], r] / by_rep[m, r]
        ratio = rc ? sprintf("%.3fx", median(q, rc)) : "-"
        mb = (bound == "nan" || bound == 0) ? "-" : sprintf("%.2f", med / bound)
        mi = (ideal == "nan" || ideal == 0) ? "-" : sprintf("%.2f", med / ideal)
        for (i = 1; i <= c; i++) { y[i] = cpu[m, i] + 0; z[i] = host[m, i] + 0 }
        printf "%-14s %-9s %10.2f %7.1f%% %9s %10s %9s %10s %9s %4.0f%% %5.0f%%\n", preset, m, med,
          100 * (hi - lo) / med, ratio, bound, mb, ideal, mi, median(y, c), median(z, c)
      }
      printf "%-14s checksum: %s\n", preset, ok == 0 ? "no successful run" : bad == "" ? "every run = reference " ref : "MISMATCH in" bad
      if (preset ~ /^pytorch/) printf "%-14s (reference: the first run; hybrid_train.py has no simulated bound)\n", preset
    }' "$results"
done
echo "(spread = (max - min) / median over the repetitions; off/mode = median over repetitions of the" \
  "first mode's time / this mode's, run side by side; bound_ms = max(compute, busiest link's bytes / rate);" \
  "ideal_ms = the training loop simulated on ideal links with P2P ahead of DENSE and the front stages' DENSE ahead of the rest ([R14]; e2e_bound);" \
  "cpu% = the ranks' share of the machine's cores, host% = the whole machine's, medians)"
if [ $trace = 1 ]; then
  echo "traces: $out/traces/<preset>/<mode>/trace.<rank>.json (open in ui.perfetto.dev)"
  # Why and when the DENSE gates opened, per rank (standard library only).
  if command -v python3 > /dev/null; then
    python3 "$here/release_reasons.py" --out "$out" || true
  fi
  # The Debian python3 first: python3-matplotlib is installed for it, and
  # another python3 may come first on PATH.
  py=""
  for p in /usr/bin/python3 python3; do
    if "$p" -c 'import matplotlib' 2>/dev/null; then py=$p; break; fi
  done
  if [ -n "$py" ]; then
    "$py" "$here/plot_e2e.py" --out "$out" --per-host "$per_host" --gbps "$gbps" | sed 's/^/picture: /'
  else
    echo "run_e2e: no python3 with matplotlib: no pictures (install python3-matplotlib)" >&2
  fi
fi
