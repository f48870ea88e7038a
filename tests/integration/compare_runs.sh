#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# compare_runs.sh [--optional FILE] PRELOAD PROGRAM [ARGS...]
#
# Runs PROGRAM ARGS twice, without LD_PRELOAD and with LD_PRELOAD=PRELOAD, and fails unless both
# exit 0 and print the same checksum=<hex> line. CS_IT_EXPECT_PRELOAD=0/1 tells the program which
# run it is in, so a run that silently lacks the library fails too. Quiet on success except for
# one summary line; on failure prints both runs' output. With --optional FILE, exits 77 (ctest's
# skip code, as the test declares it) with a message when FILE does not exist.
set -u
if [[ ${1:-} == --optional ]]; then
  if [[ ! -e $2 ]]; then
    echo "SKIP: $2 is not installed (scripts/setup.sh installs it)"
    exit 77
  fi
  shift 2
fi
if (($# < 2)); then
  echo "usage: $0 PRELOAD PROGRAM [ARGS...]" >&2
  exit 2
fi
preload=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

env -u LD_PRELOAD CS_IT_EXPECT_PRELOAD=0 "$@" >"$tmp/out0" 2>"$tmp/err0"
rc0=$?
env LD_PRELOAD="$preload" CS_IT_EXPECT_PRELOAD=1 "$@" >"$tmp/out1" 2>"$tmp/err1"
rc1=$?

sum0=$(grep -m1 '^checksum=' "$tmp/out0")
sum1=$(grep -m1 '^checksum=' "$tmp/out1")
fail=
((rc0 == 0)) || fail+="without the preload it exited $rc0; "
((rc1 == 0)) || fail+="with LD_PRELOAD=$preload it exited $rc1; "
[[ -n $sum0 ]] || fail+="no checksum without the preload; "
[[ -n $sum1 ]] || fail+="no checksum with the preload; "
[[ -n $sum0 && -n $sum1 && $sum0 != "$sum1" ]] && fail+="checksums differ ($sum0 vs $sum1); "

if [[ -n $fail ]]; then
  echo "FAIL: $*: $fail"
  for run in 0 1; do
    if ((run == 0)); then echo "--- without the preload"; else echo "--- with LD_PRELOAD=$preload"; fi
    head -c 4000 "$tmp/out$run"
    head -c 4000 "$tmp/err$run"
  done
  exit 1
fi
summary=$(grep -m1 '^driver allocations' "$tmp/err1")
echo "ok: $sum1 with and without the preload${summary:+ ($summary)}"
