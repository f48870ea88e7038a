# SPDX-License-Identifier: Apache-2.0
# Sourced by the benchmarks that time whole commands (read.sh, ranks.sh).
#
# `measure_init NAME BUILD_DIR` sets what both need: cli and gen (the tool and bench_snapshot of
# BUILD_DIR, checked with GNU time to be there), tmp (a scratch directory, removed at exit) and
# `log` (progress on stderr, as "bench: NAME: ...").
#
# `measure NAME CMD...` runs CMD under GNU time and prints `BENCH NAME <seconds> s` and
# `BENCH NAME_rss <MiB> MiB`; last_secs keeps the seconds. A command that fails is reported
# through `log` (its last stderr line) and gets no figure.
measure_init() {
  measure_name=$1
  cli=$2/cli/cudasnap
  gen=$2/bench/bench_snapshot
  local f
  for f in "$cli" "$gen" /usr/bin/time; do
    [[ -x $f ]] || { echo "bench/$measure_name.sh: missing $f" >&2; exit 1; }
  done
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/cudasnap-$measure_name.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
}

log() { printf 'bench: %s: %s\n' "$measure_name" "$*" >&2; }

measure() {
  local name=$1
  shift
  if ! /usr/bin/time -f '%e %M' -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err"; then
    log "$name failed: $(tail -n1 "$tmp/err")"
    return 1
  fi
  local secs kib
  read -r secs kib <"$tmp/time"
  last_secs=$secs
  printf 'BENCH %s %s s\n' "$name" "$secs"
  printf 'BENCH %s_rss %d MiB\n' "$name" $(((kib + 512) / 1024))
}
