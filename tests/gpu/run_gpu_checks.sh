#!/usr/bin/env bash
# run_gpu_checks.sh: the GPU-machine check of libtrirace.so's CUDA path. One
# run (about 5 minutes at most) goes through every step and prints one
# "RESULT PASS|FAIL|SKIP <name> <detail>" line per check; tests/gpu/README.md.
#
#   bash tests/gpu/run_gpu_checks.sh [build/lib/libtrirace.so]     (repo root)
#   bash tests/gpu/run_gpu_checks.sh --bundle [build/lib/libtrirace.so]
#     on the build machine: copies the shim's non-system libraries into
#     <shim dir>/deps, to carry with the shim
#
# Environment: OUT (summary + tarball of logs and traces copied there),
# GPU_CHECK_BUDGET_S (300), NCCL_HOME, CUDA_HOME, PYTHON (python3),
# TRIRACE_SHIM_DEPS (<shim dir>/deps: LD_LIBRARY_PATH of shim runs when it
# exists), SHIM_GPU_CHECK_ITERS (3). Only to test this script without a GPU:
# SHIM_GPU_CHECK_BIN (a prebuilt program), GPU_CHECK_EXPECT_BACKEND (cuda),
# TORCH_CHECK_CPU=1 (passed to torch_check.py).
# Exit: 0 all passed, 1 something failed, 77 no GPU here (nothing failed).
set -u -o pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

if [ "${1:-}" = "--bundle" ]; then
  shim=${2:-build/lib/libtrirace.so}
  deps=$(dirname "$shim")/deps
  mkdir -p "$deps" || exit 1
  ldd "$shim" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    case $name in libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*) continue ;; esac
    cp -L "$path" "$deps/$name" && echo "bundled $name"
  done
  echo "carry $shim and $deps/ (TRIRACE_SHIM_DEPS=$deps is the default there)"
  exit 0
fi

shim=${1:-build/lib/libtrirace.so}
[ -e "$shim" ] && shim=$(readlink -f "$shim")
PY=${PYTHON:-python3}
budget=${GPU_CHECK_BUDGET_S:-300}
iters=${SHIM_GPU_CHECK_ITERS:-3}
expect_backend=${GPU_CHECK_EXPECT_BACKEND:-cuda}
start=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/trirace-gpu.XXXXXX") || exit 1
logs=$work/logs
mkdir -p "$logs"
summary=$work/summary.txt
npass=0 nfail=0 nskip=0

result() {  # STATUS NAME DETAIL
  local line
  line=$(printf '%-4s %-26s %s' "$1" "$2" "$3")
  echo "RESULT $line"
  echo "$line" >> "$summary"
  case $1 in PASS) npass=$((npass + 1)) ;; FAIL) nfail=$((nfail + 1)) ;; *) nskip=$((nskip + 1)) ;; esac
}
note() { echo "== $*"; echo "# $*" >> "$summary"; }
left() { echo $((budget - (SECONDS - start))); }
oneline() { tr '\n' ' ' | cut -c1-300; }

# --- environment -------------------------------------------------------------
note "trirace GPU checks, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), repo $root ($(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')), shim $shim"
{
  uname -a; grep -h PRETTY_NAME /etc/os-release 2>/dev/null; ldd --version 2>&1 | head -1
  if command -v nvidia-smi >/dev/null; then timeout 30 nvidia-smi -L; timeout 30 nvidia-smi; else echo "nvidia-smi: not found"; fi
  if command -v nvcc >/dev/null; then nvcc --version | tail -2; else echo "nvcc: not found"; fi
  command -v g++ >/dev/null && g++ --version | head -1
  "$PY" --version
  timeout 90 "$PY" -c 'import torch; c = torch.cuda.is_available()
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", c, "nccl", torch.cuda.nccl.version() if c else "-")'
  env | grep -E '^(CUDA|NCCL|LD_|TORCH_|TRIRACE_)' | sort
} > "$logs/env.txt" 2>&1
sed -n '1,3p;/^GPU [0-9]/p;/Driver Version/p;/release/p;/^torch /p;/^Python/p' "$logs/env.txt" | while read -r l; do note "$l"; done
gpu=0
if grep -q '^GPU [0-9]' "$logs/env.txt"; then gpu=1; result PASS gpu "$(grep -m1 '^GPU [0-9]' "$logs/env.txt")"
elif compgen -G '/dev/nvidia[0-9]*' >/dev/null; then gpu=1; result PASS gpu "$(compgen -G '/dev/nvidia[0-9]*' | oneline)"
else result SKIP gpu "no GPU here (nvidia-smi lists none, no /dev/nvidia0): runs exit 77 and show as SKIP"; fi

# --- the shim ------------------------------------------------------------------
deps=${TRIRACE_SHIM_DEPS:-$(dirname "$shim")/deps}
shim_ldpath=""
[ -d "$deps" ] && shim_ldpath=$deps
shim_ok=0
if [ ! -f "$shim" ]; then
  result FAIL shim.loadable "$shim: no such file"
else
  LD_LIBRARY_PATH=$shim_ldpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$shim" > "$logs/shim-ldd.txt" 2>&1
  extra=$(awk '$2 == "=>" {print $1}' "$logs/shim-ldd.txt" | grep -vE '^(libc|libm|libstdc\+\+|libgcc_s|libdl|libpthread|librt)\.so')
  [ -n "$extra" ] && extra="$(echo "$extra" | wc -l) libraries beyond libc/libstdc++/libgcc_s/libm: $(echo "$extra" | head -3 | oneline)..."
  missing=$(grep -E 'not found' "$logs/shim-ldd.txt" | oneline)
  preload=$(LD_PRELOAD=$shim LD_LIBRARY_PATH=$shim_ldpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} /bin/true 2>&1 | oneline)
  if [ -n "$missing" ]; then
    result FAIL shim.loadable "unresolved: $missing (link them statically, or run --bundle where it was built and carry $(dirname "$shim")/deps)"
  elif [ -n "$preload" ]; then
    result FAIL shim.loadable "LD_PRELOAD of it prints: $preload"
  else
    shim_ok=1
    result PASS shim.loadable "needs ${extra:-only libc/libstdc++/libgcc_s/libm}${shim_ldpath:+ (found in $shim_ldpath)}"
  fi
fi
# The shim's own words this script looks for (interpose/*.cc): still there?
fallback_re='gated launch is off for the rest of the process|running in observe mode|the shim only forwards from now on'
fallback_re+='|every NCCL call returns an error|no real NCCL to forward to|outside the versions this shim knows'
for pat in "gated launch on the %s device backend" "gated tickets, %d ungated, %d ops passed through" \
           "gated launch is off for the rest of the process" "running in observe mode" "the shim only forwards from now on"; do
  grep -qF "$pat" "$root"/interpose/*.cc || note "WARNING: '$pat' is no longer in interpose/*.cc: this script's log checks may be stale"
done

# --- CUDA runtime and NCCL -----------------------------------------------------------
cuda_home=${CUDA_HOME:-${CUDA_PATH:-}}
if [ -z "$cuda_home" ] && command -v nvcc >/dev/null; then cuda_home=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")"); fi
[ -z "$cuda_home" ] && [ -d /usr/local/cuda ] && cuda_home=/usr/local/cuda
cuda_inc="" cuda_lib=""
for d in "$cuda_home/include" "$cuda_home/targets/x86_64-linux/include" /usr/include; do
  [ -f "$d/cuda_runtime.h" ] && { cuda_inc=$d; break; }
done
for d in "$cuda_home/lib64" "$cuda_home/lib" "$cuda_home/targets/x86_64-linux/lib" /usr/lib/x86_64-linux-gnu; do
  compgen -G "$d/libcudart.so*" >/dev/null && { cuda_lib=$d; break; }
done

nvidia_dirs() {  # the nvidia/ folders of the python packages (nvidia-nccl-cu13, ...)
  "$PY" -c 'import os, site
dirs = [os.path.join(d, "nvidia") for d in site.getsitepackages() + [site.getusersitepackages()]]
try:
    import nvidia; dirs = list(nvidia.__path__) + dirs
except Exception: pass
print("\n".join(dict.fromkeys(os.path.realpath(d) for d in dirs if os.path.isdir(d))))' 2>/dev/null
}
if [ -z "$cuda_inc" ] || [ -z "$cuda_lib" ]; then  # no toolkit: the python package's runtime
  while read -r d; do
    h=$(find "$d" -maxdepth 4 -name cuda_runtime.h 2>/dev/null | head -1)
    l=$(find "$d" -maxdepth 4 -name 'libcudart.so*' 2>/dev/null | sort | head -1)
    [ -n "$h" ] && [ -n "$l" ] && { cuda_inc=$(dirname "$h") cuda_lib=$(dirname "$l"); break; }
  done < <(nvidia_dirs)
fi
cudart=$(compgen -G "$cuda_lib/libcudart.so" || compgen -G "$cuda_lib/libcudart.so.*" | sort | head -1)
note "CUDA: home ${cuda_home:-none}, cuda_runtime.h in ${cuda_inc:-none}, libcudart ${cudart:-not found}"
nccl_inc="" nccl_lib="" nccl_from=""
pick_nccl() {  # INCLUDE_DIR LIB_DIR WHERE
  [ -f "$1/nccl.h" ] && [ -e "$2/libnccl.so.2" ] && { nccl_inc=$1 nccl_lib=$2 nccl_from=$3; return 0; }
  return 1
}
for h in ${NCCL_HOME:+"$NCCL_HOME"} ${cuda_home:+"$cuda_home"}; do
  for l in lib lib64 targets/x86_64-linux/lib; do pick_nccl "$h/include" "$h/$l" "$h" && break 2; done
done
if [ -z "$nccl_lib" ]; then
  while read -r d; do
    [ -n "$d" ] || continue
    h=$(find "$d" -maxdepth 6 -name nccl.h 2>/dev/null | head -1)
    l=$(find "$d" -maxdepth 6 -name 'libnccl.so.2*' 2>/dev/null | sort | head -1)
    [ -n "$h" ] && [ -n "$l" ] && pick_nccl "$(dirname "$h")" "$(dirname "$l")" "python package ($d)" && break
    [ -n "$l" ] && note "found $l but no nccl.h under $d"
  done < <(nvidia_dirs)
fi
[ -z "$nccl_lib" ] && pick_nccl /usr/include /usr/lib/x86_64-linux-gnu "system folders"
if [ -n "$nccl_lib" ]; then
  v=$(grep -E '^#define NCCL_(MAJOR|MINOR|PATCH) ' "$nccl_inc/nccl.h" | awk '{print $3}' | paste -sd.)
  result PASS nccl.found "nccl.h $v in $nccl_inc, libnccl.so.2 in $nccl_lib (from $nccl_from)"
else
  result FAIL nccl.found "no nccl.h + libnccl.so.2 (NCCL_HOME, $cuda_home, python nvidia packages, /usr): set NCCL_HOME"
fi

# --- compile shim_gpu_check -------------------------------------------------------
bin=$work/shim_gpu_check
if [ -n "${SHIM_GPU_CHECK_BIN:-}" ]; then
  bin=$SHIM_GPU_CHECK_BIN
  result PASS compile "prebuilt $bin (SHIM_GPU_CHECK_BIN)"
elif [ -z "$cuda_inc" ] || [ -z "$cudart" ] || [ -z "$nccl_lib" ]; then
  result FAIL compile "missing the CUDA runtime or NCCL (above)"
else
  src=$here/shim_gpu_check.cc
  rpath="$nccl_lib:$cuda_lib"
  if command -v g++ >/dev/null && g++ -std=c++17 -O2 -Wall -Wextra -I"$nccl_inc" -I"$cuda_inc" "$src" -o "$bin" \
       "$cudart" "$nccl_lib/libnccl.so.2" -Wl,--disable-new-dtags,-rpath,"$rpath" -pthread \
       > "$logs/compile.txt" 2>&1; then
    result PASS compile "g++ $(g++ -dumpversion)"
  elif command -v nvcc >/dev/null && nvcc -cudart none -std=c++17 -O2 -I"$nccl_inc" -I"$cuda_inc" "$src" -o "$bin" \
         -Xlinker "$cudart" -Xlinker "$nccl_lib/libnccl.so.2" -Xlinker --disable-new-dtags -Xlinker -rpath -Xlinker "$rpath" \
         >> "$logs/compile.txt" 2>&1; then
    result PASS compile "nvcc (g++ failed: logs/compile.txt)"
  else
    result FAIL compile "$(grep -m3 -E 'error|fatal' "$logs/compile.txt" | oneline)"
  fi
  [ -x "$bin" ] && ldd "$bin" > "$logs/shim_gpu_check-ldd.txt" 2>&1
fi

# --- runs -----------------------------------------------------------------------
# launch NAME PRELOAD LIMIT CMD...; extra environment in the array extra_env.
launch() {
  local name=$1 preload=$2 limit=$3 t envs=(-u CUDA_DEVICE_MAX_CONNECTIONS -u LD_PRELOAD) v
  shift 3
  t=$(($(left) - 5))
  if [ "$t" -lt 20 ]; then echo "not run: the time budget is spent" > "$logs/$name.out"; return 200; fi
  [ "$t" -gt "$limit" ] && t=$limit
  run_limit=$t
  for v in $(compgen -e | grep '^TRIRACE_'); do envs+=(-u "$v"); done
  # The programs' own watchdogs fire first and say where they hung.
  envs+=("SHIM_GPU_CHECK_TIMEOUT=$((t - 5))" "TORCH_CHECK_TIMEOUT=$((t - 8))" TRIRACE_DEBUG=INFO
         "TRIRACE_DEBUG_FILE=$logs/$name.trirace.%p.log" "TRIRACE_TRACE=$logs/$name.trace.%p.json"
         "NCCL_DEBUG=${NCCL_DEBUG:-WARN}" ${extra_env[@]+"${extra_env[@]}"})
  if [ "$preload" = 1 ]; then
    envs+=("LD_PRELOAD=$shim")
    [ -n "$shim_ldpath" ] && envs+=("LD_LIBRARY_PATH=$shim_ldpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  fi
  echo "+ env ${envs[*]} $* (limit ${t}s)" > "$logs/$name.out"
  timeout -k 10 "$t" env "${envs[@]}" "$@" >> "$logs/$name.out" 2>&1
}
# check_run NAME RC: sets $sum to the run's checksum ("" if none); 0 when it passed.
check_run() {
  local name=$1 rc=$2 out=$logs/$1.out
  sum=$(grep -m1 '^CHECKSUM ' "$out" | awk '{print $2}')
  if [ "$rc" = 200 ]; then result FAIL "$name" "not run: the ${budget}s budget is spent"
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then result FAIL "$name" "HANG (exit $rc, limit ${run_limit}s): $(grep -m1 -E 'watchdog|FAIL' "$out" | oneline)"
  elif [ "$rc" = 77 ] && [ $gpu = 0 ]; then result SKIP "$name" "$(grep -m1 '^SKIP' "$out" | oneline)"
  elif [ "$rc" = 77 ]; then result FAIL "$name" "exit 77 on a machine with a GPU: $(grep -m1 '^SKIP' "$out" | oneline)"
  elif [ "$rc" != 0 ] || ! grep -q '^PASS' "$out"; then
    result FAIL "$name" "exit $rc: $(grep -m2 -E '^(FAIL|MISMATCH)|Error|error' "$out" | oneline)"
  else result PASS "$name" "$(grep -m1 '^PASS' "$out" | cut -c1-200)"; return 0
  fi
  return 1
}
# check_shim NAME SCHEDULE STRICT: the shim's log of the run.
check_shim() {
  local name=$1 schedule=$2 strict=$3 all=$logs/$1.trirace.all real fb backend stats gated pt warns
  cat "$logs/$name".trirace.*.log > "$all" 2>/dev/null
  real=$(grep -m1 -o 'real NCCL .*' "$all" | cut -c1-160)
  fb=$(grep -m1 -E "$fallback_re" "$all" | sed 's/.* TriRace //' | cut -c1-240)
  warns=$(grep -c ' TriRace WARN ' "$all")
  if [ ! -s "$all" ]; then result FAIL "$name.shim" "no TriRace log: the shim did not load or saw no NCCL call"; return; fi
  if [ -n "$fb" ]; then result FAIL "$name.shim" "fell back: $fb"; return; fi
  if [ -z "$real" ]; then result FAIL "$name.shim" "no 'real NCCL' line in the log"; return; fi
  if [ "$schedule" = 0 ]; then result PASS "$name.shim" "$real; $warns WARN line(s)"; return; fi
  backend=$(grep -m1 -o 'gated launch on the [a-z]* device backend' "$all" | awk '{print $5}')
  stats=$(grep -o '[0-9]* gated tickets, [0-9]* ungated, [0-9]* ops passed through' "$all" | tail -1)
  gated=$(echo "$stats" | awk '{print $1}') pt=$(echo "$stats" | awk '{print $6}')
  if [ "$backend" != "$expect_backend" ]; then result FAIL "$name.shim" "device backend '${backend:-none}', expected $expect_backend"
  elif [ -z "$stats" ] || [ "${gated:-0}" = 0 ]; then result FAIL "$name.shim" "no op was gated (${stats:-no schedule summary at exit})"
  elif [ "$strict" = 1 ] && [ "${pt:-0}" != 0 ]; then result FAIL "$name.shim" "ops passed through ungated: $stats"
  else result PASS "$name.shim" "$backend backend; $stats; $warns WARN line(s)"
  fi
}
# check_trace NAME FUNCS...: every trace file parses and holds these ops.
check_trace() {
  local name=$1 f n=0 info missing fn
  shift
  for f in "$logs/$name".trace.*.json; do
    [ -e "$f" ] || continue
    n=$((n + 1))
    if ! "$PY" -m json.tool "$f" > /dev/null 2> "$logs/$name.json-error.txt"; then
      result FAIL "$name.trace" "$(basename "$f") is not valid JSON: $(oneline < "$logs/$name.json-error.txt")"; return
    fi
    info=$("$PY" -c 'import json, sys, collections
d = json.load(open(sys.argv[1])); ev = d.get("traceEvents", [])
ops = collections.Counter(e.get("name") for e in ev if e.get("cat") == "op")
print(len(ev), sum(ops.values()), " ".join("%s=%d" % kv for kv in sorted(ops.items())))' "$f")
    missing=""
    for fn in "$@"; do echo " ${info#* * } " | grep -q " $fn=" || missing="$missing $fn"; done
    if [ "$(echo "$info" | awk '{print $2}')" = 0 ] || [ -n "$missing" ]; then
      result FAIL "$name.trace" "$(basename "$f"): no ops or missing:${missing:- all} ($info)"; return
    fi
  done
  if [ $n = 0 ]; then result FAIL "$name.trace" "no trace file written"
  else result PASS "$name.trace" "$n file(s): $(echo "$info" | awk '{printf "%s events, %s ops:", $1, $2}') ${info#* * }"; fi
}

# checked NAME PRELOAD SCHEDULE STRICT REF FUNCS...: the checks of a run that
# just ended (its status in $rc); REF "-" = no checksum to compare with.
checked() {
  local name=$1 preload=$2 schedule=$3 strict=$4 refsum=$5 passed=0
  shift 5
  check_run "$name" "$rc" && passed=1
  if [ "$rc" = 200 ] || [ "$rc" = 77 ]; then return 1; fi
  if [ $passed = 1 ] && [ "$refsum" != - ]; then
    if [ "$sum" = "$refsum" ]; then result PASS "$name.checksum" "$sum = plain"
    else result FAIL "$name.checksum" "${sum:-none} differs from the plain run's ${refsum:-(none)}"; fi
  fi
  if [ "$preload" = 1 ]; then
    check_shim "$name" "$schedule" "$strict"
    [ $# -gt 0 ] && check_trace "$name" "$@"
  fi
  [ $passed = 1 ]
}
ref=""
cpp_case() {  # NAME PRELOAD MODE [VAR=VALUE...]
  local name=$1 preload=$2 mode=$3 rc
  shift 3
  extra_env=("$@")
  [ "$mode" != plain ] && extra_env+=("TRIRACE_MODE=$mode")
  if [ "$preload" = 1 ] && [ $shim_ok = 0 ]; then result FAIL "$name" "not run: the shim does not load"; return; fi
  launch "$name" "$preload" 45 "$bin" --iters "$iters" --max-mib 64; rc=$?
  if [ "$preload" = 0 ]; then checked "$name" 0 0 1 - && ref=$sum; return; fi
  if [ "$mode" = off ]; then checked "$name" 1 0 1 "$ref"; return; fi  # off: no trace
  checked "$name" 1 "$([ "$mode" = schedule ] && echo 1 || echo 0)" 1 "$ref" \
    AllReduce Broadcast Reduce AllGather ReduceScatter Send Recv
}
if [ -x "$bin" ]; then
  cpp_case cpp.plain 0 plain
  cpp_case cpp.off 1 off
  cpp_case cpp.observe 1 observe
  cpp_case cpp.fifo 1 schedule TRIRACE_POLICY=fifo
  cpp_case cpp.trirace 1 schedule TRIRACE_POLICY=trirace
  # Float sums split too (TRIRACE_CHUNK_FLOAT_REDUCTIONS=on), so that every collective is chunked; on one
  # rank a split reduction is still exact.
  cpp_case cpp.trirace_chunk1m 1 schedule TRIRACE_POLICY=trirace TRIRACE_CHUNK_BYTES=1048576 \
    TRIRACE_CHUNK_FLOAT_REDUCTIONS=on
else
  result FAIL cpp "not run: no shim_gpu_check program"
fi

# --- PyTorch ----------------------------------------------------------------------
extra_env=(${TORCH_CHECK_CPU:+"TORCH_CHECK_CPU=$TORCH_CHECK_CPU"})
launch torch.plain 0 120 "$PY" "$here/torch_check.py"; rc=$?
torch_ref=""
checked torch.plain 0 0 0 - && torch_ref=$sum
grep -h -E '^torch_check: torch|libnccl mapped' "$logs/torch.plain.out" | head -2 | cut -c1-220 | while read -r l; do note "$l"; done
if [ $rc = 77 ] || [ $rc = 200 ]; then
  result SKIP torch.trirace "not run: the plain torch run did not run"
elif [ $shim_ok = 0 ]; then
  result FAIL torch.trirace "not run: the shim does not load"
else
  extra_env+=(TRIRACE_MODE=schedule TRIRACE_POLICY=trirace)
  launch torch.trirace 1 120 "$PY" "$here/torch_check.py"; rc=$?
  checked torch.trirace 1 1 0 "$torch_ref" AllReduce
fi

# --- summary ----------------------------------------------------------------------------
note "elapsed $((SECONDS - start)) s of ${budget} s; logs in $logs"
line="$npass passed, $nfail failed, $nskip skipped"
echo "$line" | tee -a "$summary"
cp "$summary" "$logs/summary.txt"
find "$logs" -type f -empty -delete
tar -C "$work" -czf "$work/trirace-gpu-logs.tar.gz" logs 2>/dev/null
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT" && cp "$summary" "$OUT/gpu-summary.txt" && cp "$work/trirace-gpu-logs.tar.gz" "$OUT/" &&
    echo "copied gpu-summary.txt and trirace-gpu-logs.tar.gz to $OUT"
fi
if [ $nfail -gt 0 ]; then exit 1; fi
if [ $gpu = 0 ] && ! grep -q '^PASS' "$logs/cpp.plain.out" 2>/dev/null; then
  echo "no GPU here: nothing failed, the checks that need one were skipped"; exit 77
fi
exit 0
