#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The read side at scale (bench/README.md, "Reading"): wall time and peak RSS of `cudasnap
# summary`, `check`, `report` and `convert` on snapshots of 100,000 and 1,000,000 events, JSON and
# pickle, written by bench_snapshot (the library's own writer, the workload of bench_snapshot dump).
# Beside them: reading the file's bytes (`cat FILE > /dev/null`, warm: the physical limit) and,
# when CS_BENCH_MEMVIZ_PY names a copy of PyTorch's torch/cuda/_memory_viz.py (its reading code
# runs without torch; keep the copy outside this repository), PyTorch's `stats` on the same pickle.
#
#   bench/read.sh BUILD_DIR [--quick]
#
#   BUILD_DIR  a build tree with bench/bench_snapshot and cli/cudasnap (bench/run.sh passes its own)
#   --quick    100,000 events only, and `summary` of the 1,000,000-event pickle in PyTorch's shape
#
# Prints `BENCH read_<command>_<json|pickle>_<events> <seconds> s` and `..._rss <MiB> MiB` lines,
# and `BENCH read_pytorch_stats_pickle_<events>` with its `_ratio` (PyTorch's time / ours).
# Needs GNU time (/usr/bin/time) and about 3 GB of free space in TMPDIR for the 1M-event JSON.
set -euo pipefail

build=${1:?usage: bench/read.sh BUILD_DIR [--quick]}
quick=0
[[ ${2:-} == --quick ]] && quick=1
source "$(dirname "${BASH_SOURCE[0]}")/measure.sh"
measure_init read "$build"

sizes=(100000 1000000)
[[ $quick == 1 ]] && sizes=(100000)
last_secs=0
for n in "${sizes[@]}"; do
  summary_pickle_secs=
  json=$tmp/s$n.json pickle=$tmp/s$n.pickle
  log "writing $n events"
  "$gen" write "$n" "$json" 2>/dev/null
  "$cli" convert "$json" "$pickle" >/dev/null
  log "$n events: JSON $(stat -c %s "$json") bytes, pickle $(stat -c %s "$pickle") bytes"
  for fmt in pickle json; do
    file=$tmp/s$n.$fmt
    cat "$file" >/dev/null # warm the page cache for every figure below
    measure "read_cat_${fmt}_$n" cat "$file" || true
    measure "read_summary_${fmt}_$n" "$cli" summary "$file" || true
    [[ $fmt == pickle ]] && summary_pickle_secs=$last_secs
    # check exits 1 on warnings; the figure is the time it took all the same
    measure "read_check_${fmt}_$n" bash -c '"$0" check "$1"; [[ $? -le 1 ]]' "$cli" "$file" || true
    measure "read_report_${fmt}_$n" "$cli" report -o "$tmp/page.html" "$file" || true
    other=$([[ $fmt == json ]] && echo pickle || echo json)
    measure "read_convert_${fmt}_$n" "$cli" convert --force "$file" "$tmp/out.$other" || true
    rm -f "$tmp/page.html" "$tmp/out.$other"
  done
  if [[ -n ${CS_BENCH_MEMVIZ_PY:-} ]]; then
    if measure "read_pytorch_stats_pickle_$n" python3 "$CS_BENCH_MEMVIZ_PY" stats "$pickle"; then
      awk -v a="$last_secs" -v b="${summary_pickle_secs:-0}" -v n="$n" \
        'BEGIN { if (b > 0) printf "BENCH read_pytorch_stats_pickle_%s_ratio %.1f x\n", n, a / b }'
    fi
  else
    log "CS_BENCH_MEMVIZ_PY is not set: no PyTorch figure"
  fi
  rm -f "$json" "$pickle"
done

# ---- the 1M-event pickle as PyTorch writes it (issues 33 and 36) --------------------------------
# torch.cuda.memory._dump_snapshot pickles the snapshot with Python's pickle: every dict, list and
# string memoized, items in batches of 1,000. Made once from the same workload (bench_snapshot write
# -> cudasnap convert -> pickle.load + pickle.dump) and kept in BUILD_DIR/read-cache/ (delete it to
# make them again: the first run spends a minute or two here). `summary` of it runs $rounds times;
# the figures are the minimum over the rounds (wall and CPU: the machine may be shared). With
# CS_BENCH_BEFORE_CLI=PATH/cudasnap (another build, e.g. main's before a change), that tool runs
# interleaved with this one (A B A B ...) as ..._before; with CS_BENCH_MEMVIZ_PY, PyTorch's `stats`
# of the same file runs in the same rounds (read_pytorch_stats_torch_pickle_1000000), and
# ..._vs_pytorch is our minimum over PyTorch's, wall and CPU (issue 36: at most 0.3); PyTorch's
# runs once in --quick (it takes 10-20 s).
cache=$build/read-cache
torch_pickle=$cache/s1000000.torch.pickle
if [[ ! -s $torch_pickle ]] && command -v python3 >/dev/null; then
  mkdir -p "$cache"
  log "making the 1,000,000-event pickle in PyTorch's shape (once; kept in $cache)"
  "$gen" write 1000000 "$tmp/s1m.json" 2>/dev/null
  "$cli" convert "$tmp/s1m.json" "$tmp/s1m.pickle" >/dev/null
  rm -f "$tmp/s1m.json"
  python3 -c 'import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
with open(sys.argv[2] + ".part", "wb") as f:
    pickle.dump(d, f)' "$tmp/s1m.pickle" "$torch_pickle" && mv "$torch_pickle.part" "$torch_pickle"
  rm -f "$tmp/s1m.pickle"
fi
if [[ -s $torch_pickle ]]; then
  rounds=5
  [[ $quick == 1 ]] && rounds=3
  cat "$torch_pickle" >/dev/null
  tools=("$cli summary")
  names=(read_summary_torch_pickle_1000000)
  if [[ -n ${CS_BENCH_BEFORE_CLI:-} ]]; then
    tools+=("$CS_BENCH_BEFORE_CLI summary")
    names+=(read_summary_torch_pickle_1000000_before)
  fi
  if [[ -n ${CS_BENCH_MEMVIZ_PY:-} ]]; then
    tools+=("python3 $CS_BENCH_MEMVIZ_PY stats")
    names+=(read_pytorch_stats_torch_pickle_1000000)
  fi
  declare -A wall_min cpu_min
  for ((r = 0; r < rounds; r++)); do
    for i in "${!tools[@]}"; do
      # PyTorch's stats takes 10-20 s here: once in --quick, which must stay short
      [[ $quick == 1 && $r -gt 0 && ${names[$i]} == read_pytorch_* ]] && continue
      # shellcheck disable=SC2086 # a command and its words
      /usr/bin/time -f '%e %U %S' -o "$tmp/time" ${tools[$i]} "$torch_pickle" >/dev/null 2>&1 || {
        log "${names[$i]} failed"
        continue
      }
      read -r w u s <"$tmp/time"
      c=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
      n=${names[$i]}
      [[ -z ${wall_min[$n]:-} ]] || awk -v a="$w" -v b="${wall_min[$n]}" 'BEGIN { exit !(a < b) }' && wall_min[$n]=$w
      [[ -z ${cpu_min[$n]:-} ]] || awk -v a="$c" -v b="${cpu_min[$n]}" 'BEGIN { exit !(a < b) }' && cpu_min[$n]=$c
    done
  done
  for n in "${names[@]}"; do
    [[ -n ${wall_min[$n]:-} ]] || continue
    echo "BENCH ${n}_min ${wall_min[$n]} s"
    echo "BENCH ${n}_cpu_min ${cpu_min[$n]} s"
  done
  ours=read_summary_torch_pickle_1000000 theirs=read_pytorch_stats_torch_pickle_1000000
  if [[ -n ${wall_min[$ours]:-} && -n ${wall_min[$theirs]:-} ]]; then
    awk -v a="${wall_min[$ours]}" -v b="${wall_min[$theirs]}" -v c="${cpu_min[$ours]}" -v d="${cpu_min[$theirs]}" 'BEGIN {
      if (b > 0) printf "BENCH %s_vs_pytorch %.2f x\n", "read_summary_torch_pickle_1000000", a / b
      if (d > 0) printf "BENCH %s_cpu_vs_pytorch %.2f x\n", "read_summary_torch_pickle_1000000", c / d
    }'
  fi
else
  log "no python3: the 1,000,000-event pickle in PyTorch's shape is not made"
fi
