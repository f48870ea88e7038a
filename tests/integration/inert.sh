#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# inert.sh PRELOAD COMMAND [ARGS...]
#
# Issue #3 test 9: a process that never uses CUDA is untouched by cudasnap. Runs COMMAND in an
# empty temporary directory with LD_PRELOAD=PRELOAD and a bad CUDASNAP_STACK_DEPTH=0 (whose
# warning may only appear once cudasnap activates, which it must not), and fails if anything is
# printed on stdout or stderr, the exit code is not 0, or a file appears in the directory.
set -u
preload=$1
shift
dir=$(mktemp -d)
out=$(mktemp)
err=$(mktemp)
trap 'rm -rf "$dir" "$out" "$err"' EXIT
[[ -f $preload ]] || { echo "FAIL: no library at $preload"; exit 1; }
(cd "$dir" && env LD_PRELOAD="$preload" CUDASNAP_STACK_DEPTH=0 CUDASNAP_LOG=debug "$@" >"$out" 2>"$err")
rc=$?
fail=
((rc == 0)) || fail+="exit code $rc; "
[[ -s $out ]] && fail+="printed on stdout; "
[[ -s $err ]] && fail+="printed on stderr; "
files=$(ls -A "$dir")
[[ -n $files ]] && fail+="created files: $files; "
# Guard against a preload that was not applied at all: the library must be mapped in the process.
maps=$(env LD_PRELOAD="$preload" bash -c 'cat /proc/$$/maps' 2>/dev/null | grep -c "$(basename "$preload")")
((maps > 0)) || fail+="the library is not mapped under LD_PRELOAD; "
if [[ -n $fail ]]; then
  echo "FAIL: $*: $fail"
  echo "--- stdout"; head -c 2000 "$out"
  echo "--- stderr"; head -c 2000 "$err"
  exit 1
fi
echo "ok: $* is silent and creates no file under the preload"
