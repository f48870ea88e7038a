#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ranks_test.sh CUDASNAP PROG_RANKS SOURCE_DIR PYTHON
#
# `cudasnap ranks` on a fake job: tests/cli/prog_ranks.c run as 8 ranks (RANK=0..7, WORLD_SIZE=8)
# under the tool's `run` on the fake driver (the caller puts tests/fakes on LD_LIBRARY_PATH),
# even ranks writing JSON, odd ones pickle. Rank 3 peaks through hold_embeddings, rank 5 hits OOM.
# Checks cudasnap.job in the files, the table's order, the OOM row, the differing site, the JSON
# fields (read by python3), PyTorch's own pickles under per-rank names, and bad input.
set -u
cudasnap=$1 prog=$2 src=$3 python=$4
fail() { echo "FAIL [ranks]: $*" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/job"

for r in 0 1 2 3 4 5 6 7; do
  ext=json
  ((r % 2)) && ext=pickle
  cap=1073741824
  ((r == 5)) && cap=50331648 # 48 MiB: rank 5 runs out
  RANK=$r WORLD_SIZE=8 SLURM_JOB_ID=4242 FAKE_CUDA_CAPACITY=$cap CUDASNAP_OUTPUT="$dir/job/snap-r%r-%n-%t.$ext" \
    "$cudasnap" run -- "$prog" >"$dir/run$r.out" 2>"$dir/run$r.err" || fail "rank $r failed: $(cat "$dir/run$r.err")"
done
ls "$dir/job" | grep -q 'snap-r5-.*-oom.pickle' || fail "rank 5 wrote no OOM snapshot: $(ls "$dir/job")"

# cudasnap.job, as the viewer's JSON reader sees it
"$python" - "$dir/job/snap-r2-1-exit.json" <<'PY' || fail "cudasnap.job"
import json, socket, sys
job = json.load(open(sys.argv[1]))["cudasnap"]["job"]
want = {"rank": 2, "world_size": 8, "job_id": "4242", "host": socket.gethostname()}
assert job == want, job  # local_rank: no variable set, left out
PY
echo "ok cudasnap.job"

"$cudasnap" ranks "$dir/job" >"$dir/table" 2>"$dir/err" || fail "ranks: $(cat "$dir/err")"
cat "$dir/table"
[[ ! -s $dir/err ]] || fail "ranks wrote to stderr: $(cat "$dir/err")"
order=$(awk 'NR > 1 && NF == 0 {exit} NR > 1 {printf "%s ", $1}' "$dir/table")
[[ $order == "3 5 7 6 4 2 1 0 " ]] || fail "order by peak: '$order'"
# rank 5's OOM column: the size its failed cudaMalloc asked (3 MiB), as summary's "Tried to allocate"
grep -qE '^ +5 .* 3\.0 MiB ' "$dir/table" || fail "rank 5's OOM column is not the size asked (3.0 MiB)"
[[ $(grep -cE ' (yes|[0-9.]+ [KMG]?i?B) +[^ ]+ [^ ]+:[0-9]+$' "$dir/table") -eq 1 ]] || fail "OOM rows: $(cat "$dir/table")"
grep -qE '^ +3 .*hold_embeddings .*prog_ranks.c' "$dir/table" || fail "rank 3's top site"
grep -qE '^spread: highest / median peak = [0-9.]+x \(rank 3 .* / rank 4 ' "$dir/table" || fail "spread line"
sed -n '/^sites that differ most/{n;p}' "$dir/table" | grep -qE '^  \+96\.0 MiB  hold_embeddings ' ||
  fail "first differing site: $(sed -n '/^sites that differ/,$p' "$dir/table")"
echo "ok table"

# report DIR: the job page of the folder's snapshots, read as `ranks DIR` reads them (every
# *.json, *.pickle, *.pkl in name order): the same page as those files named one by one; to
# DIR/job.html unless -o says where. A folder without snapshots: one line, exit 1.
"$cudasnap" report -o "$dir/dir.html" "$dir/job" >"$dir/out" 2>"$dir/err" || fail "report -o DIR: $(cat "$dir/err")"
grep -qx "wrote $dir/dir.html: [0-9]* bytes" "$dir/out" && [[ ! -s $dir/err ]] ||
  fail "report -o DIR: $(cat "$dir/out" "$dir/err")"
mapfile -t listed < <("$python" -c '
import os, sys
d = sys.argv[1]
for n in sorted(os.listdir(d)):
    if n.endswith((".json", ".pickle", ".pkl")):
        print(os.path.join(d, n))' "$dir/job")
[[ ${#listed[@]} -eq 9 ]] || fail "the job's files: ${listed[*]}"
"$cudasnap" report -o "$dir/files.html" "${listed[@]}" >/dev/null || fail "report -o FILE..."
cmp -s "$dir/dir.html" "$dir/files.html" || fail "report DIR is not the page of the DIR's files"
grep -q "<title>[^<]*a job of " "$dir/dir.html" || fail "report DIR: not the job's page"
"$cudasnap" report "$dir/job/" >"$dir/out" 2>"$dir/err" || fail "report DIR: $(cat "$dir/err")"
grep -qx "wrote $dir/job/job.html: [0-9]* bytes" "$dir/out" || fail "report DIR's default name: $(cat "$dir/out")"
cmp -s "$dir/dir.html" "$dir/job/job.html" || fail "report DIR and report -o OUT DIR differ"
rm "$dir/job/job.html" "$dir/dir.html" "$dir/files.html"
mkdir "$dir/no-snapshots"
"$cudasnap" report "$dir/no-snapshots" >"$dir/out" 2>"$dir/err" && fail "report of a folder without snapshots exited 0"
[[ $(wc -l <"$dir/err") -eq 1 ]] && grep -q "^$dir/no-snapshots: no snapshot files" "$dir/err" ||
  fail "report of a folder without snapshots: $(cat "$dir/err")"
echo "ok report DIR"

# The head (cudasnap_summary, the files' first key) says what the whole file says: the library
# computes it by the tool's own replay. --full reads every event; the outputs must be the same.
"$python" - "$dir/job" <<'PY' || fail "cudasnap_summary is not the first key"
import json, os, pickle, sys
d = sys.argv[1]
for name in sorted(os.listdir(d)):
    path = os.path.join(d, name)
    o = json.load(open(path)) if name.endswith(".json") else pickle.load(open(path, "rb"))
    keys = list(o)
    assert keys[0] == "cudasnap_summary" and keys[1] == "segments", (name, keys)
    assert o["cudasnap_summary"]["complete"] is True, (name, o["cudasnap_summary"])
PY
"$cudasnap" ranks --full "$dir/job" >"$dir/table_full" 2>"$dir/err" || fail "ranks --full: $(cat "$dir/err")"
diff "$dir/table_full" "$dir/table" || fail "ranks from the heads differs from ranks --full"
"$cudasnap" ranks --json --full "$dir/job" >"$dir/json_full" 2>&1 || fail "ranks --json --full"
"$cudasnap" ranks --json "$dir/job" >"$dir/json_head" 2>&1 || fail "ranks --json"
diff "$dir/json_full" "$dir/json_head" || fail "ranks --json from the heads differs from --full"
echo "ok head = full"

"$cudasnap" ranks --json "$dir/job" >"$dir/json" 2>"$dir/err" || fail "ranks --json: $(cat "$dir/err")"
"$python" - "$dir/json" <<'PY' || fail "ranks --json: $(head -c 2000 "$dir/json")"
import json, sys
o = json.load(open(sys.argv[1]))
rows = o["ranks"]
assert [r["rank"] for r in rows] == [3, 5, 7, 6, 4, 2, 1, 0], [r["rank"] for r in rows]
for r in rows:
    for k in ("rank", "host", "pid", "trigger", "peak_allocated", "peak_reserved", "oom", "top_site", "file",
              "world_size", "job_id", "phase"):
        assert k in r, (k, r)
    assert r["world_size"] == 8 and r["job_id"] == "4242", r
    assert r["peak_reserved"] >= r["peak_allocated"], r
assert [r["oom"] for r in rows] == [False, True] + [False] * 6
assert [r["oom_bytes"] for r in rows] == [None, 3 << 20] + [None] * 6, [r["oom_bytes"] for r in rows]
assert rows[1]["snapshots"] == 2 and rows[1]["trigger"] == "exit", rows[1]  # the latest of rank 5's two
assert rows[0]["peak_allocated"] >= 100 << 20 and "hold_embeddings" in rows[0]["top_site"], rows[0]
peaks = [r["peak_allocated"] for r in rows]
assert peaks == sorted(peaks, reverse=True)
assert abs(o["spread"] - peaks[0] / peaks[4]) < 1e-9, o["spread"]
d = o["differing_sites"][0]
assert "hold_embeddings" in d["site"] and d["bytes_highest"] == 96 << 20 and d["bytes_median"] == 0, d
print("ok json: spread %.2f" % o["spread"])
PY
"$cudasnap" ranks --top 2 --json "$dir/job" | "$python" -c 'import json,sys; o=json.load(sys.stdin); assert len(o["ranks"]) == 2 and len(o["differing_sites"]) <= 2' ||
  fail "--top 2"
# FILE operands: the same rows as the directory
"$cudasnap" ranks "$dir"/job/* >"$dir/table2" 2>&1 || fail "ranks FILE...: $(cat "$dir/table2")"
cmp -s "$dir/table" "$dir/table2" || fail "ranks FILE... differs from ranks DIR"

# PyTorch's own per-rank pickles: the rank from the file's name
mkdir "$dir/torch"
traces=("$src"/tests/data/traces/*.pickle)
cp "${traces[0]}" "$dir/torch/snapshot_0.pickle"
cp "${traces[1]}" "$dir/torch/snapshot_1.pickle"
cp "${traces[2]}" "$dir/torch/memory_snapshot-rank2.pickle"
"$cudasnap" ranks --json "$dir/torch" >"$dir/tjson" 2>"$dir/err" || fail "ranks on PyTorch's pickles: $(cat "$dir/err")"
"$python" - "$dir/tjson" <<'PY' || fail "PyTorch's pickles: $(head -c 2000 "$dir/tjson")"
import json, sys
rows = json.load(open(sys.argv[1]))["ranks"]
assert sorted(r["rank"] for r in rows) == [0, 1, 2], rows
for r in rows:
    assert r["pid"] is None and r["host"] is None and r["peak_allocated"] > 0 and r["top_site"], r
print("ok PyTorch pickles: " + ", ".join("rank %d %d B" % (r["rank"], r["peak_allocated"]) for r in rows))
PY
"$cudasnap" ranks "$dir/torch" >/dev/null || fail "table on PyTorch's pickles"

# bad input: one line naming the file, exit 1
mkdir "$dir/empty"
"$cudasnap" ranks "$dir/empty" >"$dir/out" 2>"$dir/err" && fail "an empty directory exited 0"
[[ $(wc -l <"$dir/err") -eq 1 ]] && grep -q "$dir/empty: no snapshot files" "$dir/err" || fail "empty: $(cat "$dir/err")"
printf '{"segments": [' >"$dir/broken.json"
"$cudasnap" ranks "$dir/broken.json" >"$dir/out" 2>"$dir/err" && fail "a truncated file exited 0"
[[ $(wc -l <"$dir/err") -eq 1 ]] && grep -q "broken.json: byte" "$dir/err" || fail "broken: $(cat "$dir/err")"
"$cudasnap" ranks >"$dir/out" 2>"$dir/err"
[[ $? -eq 2 ]] || fail "no operand: not a usage error"

# a rank variable that is not a number: left out, one warning line
RANK=two CUDASNAP_OUTPUT="$dir/bad.json" "$cudasnap" run -- "$prog" >/dev/null 2>"$dir/err" || fail "RANK=two run"
[[ $(grep -c "cudasnap: warning: RANK='two' is not a number" "$dir/err") -eq 1 ]] || fail "RANK=two: $(cat "$dir/err")"
"$python" -c 'import json,sys; j=json.load(open(sys.argv[1]))["cudasnap"]["job"]; assert "rank" not in j, j' "$dir/bad.json" ||
  fail "RANK=two: rank written"
echo "ok bad input"

# The README's commands, run twice over the job's files, as a user does after a second run: no
# output of one command may be caught by another's glob (the Perfetto trace defaults to
# .trace.json.gz, gzip-compressed), and every command succeeds the second time too (outputs are
# replaced). Then files that are not snapshots beside the snapshots (an older export, a config):
# `ranks DIR` and the job page skip each with one line and read the rest.
rm -f "$dir/job/snap-r8"* # none: the job is ranks 0-7
for round in 1 2; do
  (cd "$dir/job" &&
    "$cudasnap" export --format perfetto snap-r*.json &&
    "$cudasnap" export --format pprof snap-r0-1-exit.json &&
    "$cudasnap" ranks . &&
    "$cudasnap" report -o ../job.html ./*.json &&
    "$cudasnap" report snap-r0-1-exit.json &&
    "$cudasnap" summary snap-r0-1-exit.json) >"$dir/out" 2>"$dir/err" ||
    fail "the README's commands, round $round: $(tail -n 3 "$dir/err")"
  [[ ! -s $dir/err ]] || fail "round $round wrote to stderr: $(cat "$dir/err")"
done
grep -q "^wrote snap-r0-1-exit.trace.json.gz: " "$dir/out" || fail "perfetto default name: $(grep wrote "$dir/out")"
"$python" - "$dir/job/snap-r0-1-exit.trace.json.gz" <<'PY' || fail "the default Perfetto output is not gzip-compressed trace JSON"
import gzip, json, sys
events = json.load(gzip.open(sys.argv[1]))["traceEvents"]
assert len({e["pid"] for e in events}) == 4, "one process per even rank's JSON file"
PY
"$cudasnap" export --format perfetto -o "$dir/job/old.trace.json" "$dir/job/snap-r0-1-exit.json" >/dev/null
echo '{"lr": 0.1}' >"$dir/job/config.json"
"$cudasnap" ranks "$dir/job" >"$dir/out" 2>"$dir/err" || fail "ranks with other files: $(cat "$dir/err")"
[[ $(wc -l <"$dir/err") -eq 2 ]] && grep -q "^cudasnap ranks: skipped $dir/job/old.trace.json: " "$dir/err" &&
  grep -q "^cudasnap ranks: skipped $dir/job/config.json: " "$dir/err" || fail "ranks' notes: $(cat "$dir/err")"
[[ $(awk 'NR > 1 && NF == 0 {exit} NR > 1' "$dir/out" | wc -l) -eq 8 ]] || fail "ranks lost rows: $(cat "$dir/out")"
"$cudasnap" report -o "$dir/job.html" "$dir"/job/*.json >"$dir/out" 2>"$dir/err" || fail "job page: $(cat "$dir/err")"
[[ $(wc -l <"$dir/err") -eq 2 ]] && grep -q "^cudasnap report: skipped $dir/job/config.json: " "$dir/err" ||
  fail "report's notes: $(cat "$dir/err")"
"$cudasnap" report -o "$dir/none.html" "$dir/job/config.json" "$dir/job/old.trace.json" >"$dir/out" 2>"$dir/err" &&
  fail "a job page of no snapshot exited 0"
[[ ! -e $dir/none.html ]] || fail "a job page of no snapshot was written"
echo "ok the README's commands twice"
