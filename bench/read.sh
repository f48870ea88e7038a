#!/usr/bin/env bash
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
#   --quick    100,000 events only
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
