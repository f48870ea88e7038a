#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `cudasnap ranks` at scale (bench/README.md, "Ranks at scale", issue 25): a job of 1,024 files of
# 100,000 events each, read through their heads (cudasnap_summary, snapshot/snap_summary.h), against
# the target of <= 2 s and <= 200 MB RSS.
#
#   bench/ranks.sh BUILD_DIR [--quick]
#
#   BUILD_DIR  a build tree with bench/bench_snapshot and cli/cudasnap
#   --quick    128 files instead of 1,024 and a job page of 8 processes instead of 64 (bench/run.sh
#              --quick); the figures' names say the counts
#
# One snapshot of 100,000 events is written by bench_snapshot (the library's own writer, JSON),
# converted to pickle, and each is hard-linked 1,024 times into a directory: the tool opens 1,024
# files of 132 MB (JSON) or 9 MB (pickle) each, without the disk space of 1,024 copies. The links
# share one pid, so they are one process to `ranks` (one row of 1,024 snapshots). For the rows of
# 1,024 distinct processes, a third directory holds 1,024 copies of a 1,000-event file whose head
# says another pid each (only the head's digits differ: `ranks` reads nothing else). Last, one
# file read whole (`ranks --full`), the cost per file without a head.
#
# Prints `BENCH ranks_<case> <seconds> s` and `BENCH ranks_<case>_rss <MiB> MiB`.
# Needs GNU time (/usr/bin/time) and about 1.5 GB of free space in TMPDIR.
set -euo pipefail

build=${1:?usage: bench/ranks.sh BUILD_DIR [--quick]}
source "$(dirname "${BASH_SOURCE[0]}")/measure.sh"
measure_init ranks "$build"
files=1024 pages=64
[[ ${2:-} == --quick ]] && files=128 pages=8

log "writing 100,000 events"
"$gen" write 100000 "$tmp/one.json" 2>/dev/null
"$cli" convert "$tmp/one.json" "$tmp/one.pickle" >/dev/null
log "JSON $(stat -c %s "$tmp/one.json") bytes, pickle $(stat -c %s "$tmp/one.pickle") bytes"
for fmt in json pickle; do
  mkdir "$tmp/$fmt"
  for ((i = 0; i < files; i++)); do ln "$tmp/one.$fmt" "$tmp/$fmt/snap-r$i.$fmt"; done
  cat "$tmp/one.$fmt" >/dev/null # warm, as for every figure of bench/README.md
  measure "ranks_${files}x100000_$fmt" "$cli" ranks "$tmp/$fmt"
  grep -q '^spread' "$tmp/out" && log "$fmt: more than one row from one pid?"
done

# 1,024 processes: a 1,000-event file, its head's pid rewritten (same width: 7 digits).
"$gen" write 1000 "$tmp/small.json" 2>/dev/null
mkdir "$tmp/procs"
for ((i = 0; i < files; i++)); do
  sed "1s/\"pid\":[0-9]*/\"pid\":$((1000000 + i))/" "$tmp/small.json" >"$tmp/procs/snap-r$i.json"
done
measure "ranks_${files}_processes_json" "$cli" ranks "$tmp/procs"
rows=$(awk 'NR > 1 && NF == 0 {exit} NR > 1 {n++} END {print n + 0}' "$tmp/out")
[[ $rows == "$files" ]] || log "expected $files rows, got $rows"

# The job page of 64 processes of 100,000 events: 64 copies of the pickle, each with another pid
# (the pid's bytes rewritten in place, same width), so that each is a process of its own.
mkdir "$tmp/page"
python3 - "$tmp/one.pickle" "$tmp/page" "$pages" <<'PY'
import re, sys
data = open(sys.argv[1], "rb").read()
for i in range(int(sys.argv[3])):
    def pid(m):  # BININT2 or BININT after the key "pid": the same opcode and width, plus i
        op, raw = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        value = (int.from_bytes(raw, "little") + i) % (1 << (8 * len(raw)))
        return b"\x8c\x03pid" + op + value.to_bytes(len(raw), "little")
    out = re.sub(rb"\x8c\x03pid(M)(..)|\x8c\x03pid(J)(....)", pid, data, flags=re.S)
    open("%s/snap-r%d.pickle" % (sys.argv[2], i), "wb").write(out)
PY
measure "report_job_page_${pages}x100000_pickle" "$cli" report -o "$tmp/job.html" "$tmp/page"/*.pickle
printf 'BENCH report_job_page_%dx100000_bytes %d B\n' "$pages" "$(stat -c %s "$tmp/job.html")"
rows=$(grep -o '"peak_reserved"' "$tmp/job.html" | wc -l)
((rows >= pages)) || log "job page: expected $pages rows"

measure "ranks_full_1x100000_json" "$cli" ranks --full "$tmp/one.json"
measure "ranks_full_1x100000_pickle" "$cli" ranks --full "$tmp/one.pickle"
