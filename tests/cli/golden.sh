#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# golden.sh CUDASNAP SOURCE_DIR [--update]
#
# The tool's outputs on every snapshot the tests hold, compared with the ones kept in
# tests/golden/cli/expected (tests/golden/cli/README.md says what is there and why). CUDASNAP is the
# built tool, SOURCE_DIR the repository. Each case's output goes to a temporary directory and is
# compared with its golden file: a mismatch prints a unified diff (its first 40 lines); the last
# line counts the cases, and the exit status is 1 when one failed. --update writes the outputs over
# the golden files instead (an intentional change: commit them with it and say why).
#
# The report digests need a python3: $PYTHON, else python3 on PATH.
#
# What would vary between runs or machines is kept out: every command runs in a scratch directory
# where tests/ links to SOURCE_DIR/tests, so the paths the tool prints are relative and the same
# everywhere (an absolute path of the scratch directory, should one show, reads @WORK@); the report
# page is digested (tests/cli/golden_report.py) with the tool's version taken out of its template.
set -u
if [[ $# -lt 2 || $# -gt 3 || ( $# -eq 3 && $3 != --update ) ]]; then
  echo "usage: $0 CUDASNAP SOURCE_DIR [--update]" >&2
  exit 2
fi
cudasnap=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
update=${3:-}
python=${PYTHON:-python3}
golden=$src/tests/golden/cli/expected
command -v "$python" >/dev/null || { echo "golden: no python3 (set PYTHON)" >&2; exit 2; }
export LC_ALL=C TZ=UTC

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
work=$tmp/work out=$tmp/out
mkdir -p "$work/gen" "$work/reports" "$out"
ln -s "$src/tests" "$work/tests"
cd "$work" || exit 2
version=$("$cudasnap" --version | awk '{print $2}')

sed_escape() { printf '%s' "$1" | sed 's/[][\/.^$*#&]/\\&/g'; }
norm_sed=(-e "s#$(sed_escape "$work")#@WORK@#g")

# cap CASE ARGS...: run `cudasnap ARGS` and keep its stdout, stderr and exit status in
# $out/CASE.txt, paths normalized.
cap() {
  local case=$1
  shift
  mkdir -p "$(dirname "$out/$case")"
  "$cudasnap" "$@" >"$tmp/stdout" 2>"$tmp/stderr"
  local rc=$?
  {
    echo "\$ cudasnap $*"
    echo "[stdout]"
    cat "$tmp/stdout"
    echo "[stderr]"
    cat "$tmp/stderr"
    echo "[exit $rc]"
  } | sed "${norm_sed[@]}" >"$out/$case.txt"
  return $rc
}

# keep_file CASE FILE: a file the tool wrote: its bytes when up to 200 KB (hex for a pickle), else
# its size and sha256.
keep_file() {
  local case=$1 file=$2
  if [[ ! -f $file ]]; then
    echo "(no file)" >"$out/$case"
  elif [[ $(stat -c %s "$file") -gt 204800 ]]; then
    printf '%s bytes, sha256 %s\n' "$(stat -c %s "$file")" "$(sha256sum <"$file" | cut -d' ' -f1)" >"$out/$case.sha256"
  elif [[ $file == *.pickle ]]; then
    od -An -tx1 -v "$file" | sed 's/^ //' >"$out/$case.hex"
  else
    cp "$file" "$out/$case"
  fi
}

# report_case CASE INPUT: the page of INPUT, digested by golden_report.py.
report_case() {
  local case=$1 input=$2 page
  page=reports/$(basename "$input").html
  cap "$case" report -o "$page" "$input"
  if [[ -f $page ]]; then
    "$python" "$src/tests/cli/golden_report.py" "$page" "$version" | sed "${norm_sed[@]}" >>"$out/$case.txt"
    rm -f "$page"
  fi
}

# convert_to FORMAT INPUT: convert INPUT into gen/BASENAME.FORMAT and keep what it wrote.
convert_to() {
  local format=$1 input=$2 name
  name=$(basename "$input").$format
  cap "convert/$name" convert "$input" "gen/$name"
  keep_file "convert/$name.out" "gen/$name"
}

# ---- inputs -----------------------------------------------------------------------------------
fixtures=() traces=() snapshots=()
for f in tests/data/fixtures/*.json tests/data/fixtures/*.pickle; do fixtures+=("$f"); done
for f in tests/data/traces/*.pickle; do traces+=("$f"); done
snapshots=(tests/golden/cli/inputs/api.json tests/golden/cli/inputs/api.pickle)

# Every input: summary, check, report; conversion to the other format.
for input in "${fixtures[@]}" "${traces[@]}" "${snapshots[@]}" tests/golden/emit_sample.json; do
  name=$(basename "$input")
  cap "summary/$name" summary "$input"
  cap "check/$name" check "$input"
  report_case "report/$name" "$input"
  case $input in
  *.json) convert_to pickle "$input" ;;
  *) convert_to json "$input" ;;
  esac
done

# The traces' JSON made by convert (above) and the cudasnap snapshot's pickle: read back in full,
# and the JSON converted back to a pickle.
for input in "${traces[@]}"; do
  name=$(basename "$input").json
  cap "summary/$name" summary "gen/$name"
  cap "check/$name" check "gen/$name"
  report_case "report/$name" "gen/$name"
  convert_to pickle "gen/$name"
  cap "diff/$(basename "$input")--json" diff "$input" "gen/$name"
done
cap summary/api.json.pickle summary gen/api.json.pickle
cap check/api.json.pickle check gen/api.json.pickle

# Options.
trace_kk=tests/data/traces/cs336-kkaitlyn111_memory_ctx128_fullstep.pickle
trace_magma=tests/data/traces/cs336-MAGMA27_memory_snapshot_pythononly.pickle
trace_ft=tests/data/traces/ftcourse-cranberrii_memory_snapshot.pickle
cap summary-options/kk-top3-site-frames2 summary --top 3 --site-frames 2 "$trace_kk"
cap summary-options/magma-top1-site-frames64 summary --top 1 --site-frames 64 "$trace_magma"
cap summary-options/api-site-frames3 summary --site-frames 3 tests/golden/cli/inputs/api.json

# Diffs: traces against each other, the same snapshot in two formats, fixtures side by side.
fx=tests/data/fixtures
cap diff/magma--kk diff "$trace_magma" "$trace_kk"
cap diff/kk--ft diff "$trace_kk" "$trace_ft"
cap diff/ft--magma-top3 diff --top 3 "$trace_ft" "$trace_magma"
cap diff/api.json--api.pickle diff tests/golden/cli/inputs/api.json tests/golden/cli/inputs/api.pickle
cap diff/api.json--magma diff tests/golden/cli/inputs/api.json "$trace_magma"
cap diff/minimal_valid--p2 diff "$fx/memviz_minimal_valid.json" "$fx/memviz_minimal_valid.p2.pickle"
cap diff/minimal_valid--minimal_keys diff "$fx/memviz_minimal_valid.json" "$fx/memviz_minimal_keys.json"
cap diff/minimal_valid--category diff "$fx/memviz_minimal_valid.json" "$fx/memviz_category_with_unknown.json"
cap diff/no_block_frames--minimal_valid diff "$fx/memviz_no_block_frames_or_requested.json" "$fx/memviz_minimal_valid.json"
cap diff/minimal_valid--bad_string_sizes diff "$fx/memviz_minimal_valid.json" "$fx/memviz_bad_string_sizes.json"
# Phases: only the kkaitlyn111 trace has external_annotations.
cap diff/kk--json-phase-step diff --phase 'Optimizer.step#AdamW.step' "$trace_kk" "gen/$(basename "$trace_kk").json"
cap diff/kk--kk-phase-zero_grad-top2 diff --top 2 --phase 'Optimizer.zero_grad#AdamW.zero_grad' "$trace_kk" "$trace_kk"
cap diff/kk--magma-phase-missing diff --phase 'Optimizer.step#AdamW.step' "$trace_kk" "$trace_magma"

# recover: only its refusals (a recording names this machine's binaries, so no fixed input has one).
: >gen/empty.csrec
cap recover/empty recover -o gen/recovered.json gen/empty.csrec
cap recover/not-a-recording recover -o gen/recovered.json "$fx/memviz_minimal_valid.json"

# ---- compare ----------------------------------------------------------------------------------
if [[ $update == --update ]]; then
  rm -rf "$golden"
  mkdir -p "$golden"
  cp -r "$out/." "$golden/"
  echo "golden: updated $(find "$golden" -type f | wc -l) files in $golden"
  exit 0
fi
passed=0 failed=0
while IFS= read -r rel; do
  if [[ ! -f $golden/$rel ]]; then
    echo "golden: MISMATCH $rel: no golden file (new case? run with --update)"
    failed=$((failed + 1))
  elif [[ ! -f $out/$rel ]]; then
    echo "golden: MISMATCH $rel: not produced any more"
    failed=$((failed + 1))
  elif cmp -s "$golden/$rel" "$out/$rel"; then
    passed=$((passed + 1))
  else
    echo "golden: MISMATCH $rel"
    diff -u --label "golden/$rel" --label "now/$rel" "$golden/$rel" "$out/$rel" | head -40
    failed=$((failed + 1))
  fi
done < <({ (cd "$golden" 2>/dev/null && find . -type f); (cd "$out" && find . -type f); } | sed 's#^\./##' | sort -u)
echo "golden: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
