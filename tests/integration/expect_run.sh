#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# expect_run.sh [CHECK...] -- COMMAND [ARGS...]
#
# Runs COMMAND and checks its exit code and output. Checks:
#   --rc N                  exit code must be N (default 0)
#   --has LINE              stderr has LINE as a whole line
#   --has-either LINE LINE  stderr has one of the two lines
#   --count LINE N          stderr has LINE exactly N times
#   --count-prefix TEXT N   exactly N stderr lines start with TEXT
#   --stdout-has LINE       stdout has LINE as a whole line
#   --show-prefix TEXT      on success, print the stderr lines that start with TEXT
# On failure prints what failed and the start of both outputs.
set -u
want_rc=0
checks=()
show=
while (($#)); do
  case $1 in
    --rc) want_rc=$2; shift 2 ;;
    --has) checks+=("has" "$2" ""); shift 2 ;;
    --has-either) checks+=("either" "$2" "$3"); shift 3 ;;
    --count) checks+=("count" "$2" "$3"); shift 3 ;;
    --count-prefix) checks+=("prefix" "$2" "$3"); shift 3 ;;
    --stdout-has) checks+=("stdout" "$2" ""); shift 2 ;;
    --show-prefix) show=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "expect_run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
(($#)) || { echo "expect_run.sh: no command" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$@" >"$tmp/out" 2>"$tmp/err"
rc=$?

fail=()
((rc == want_rc)) || fail+=("exit code $rc, expected $want_rc")
for ((i = 0; i < ${#checks[@]}; i += 3)); do
  kind=${checks[i]} a=${checks[i + 1]} b=${checks[i + 2]}
  case $kind in
    has) grep -qFx -- "$a" "$tmp/err" || fail+=("stderr lacks the line: $a") ;;
    either) grep -qFx -e "$a" -e "$b" "$tmp/err" || fail+=("stderr has neither line: $a | $b") ;;
    count)
      n=$(grep -cFx -- "$a" "$tmp/err")
      ((n == b)) || fail+=("stderr has $n lines '$a', expected $b") ;;
    prefix)
      n=$(grep -c "^$(printf '%s' "$a" | sed 's/[][\.*^$/]/\\&/g')" "$tmp/err")
      ((n == b)) || fail+=("stderr has $n lines starting '$a', expected $b") ;;
    stdout) grep -qFx -- "$a" "$tmp/out" || fail+=("stdout lacks the line: $a") ;;
  esac
done

if ((${#fail[@]})); then
  printf 'FAIL: %s\n' "${fail[@]}"
  echo "--- command: $*"
  echo "--- stdout"; head -c 3000 "$tmp/out"
  echo "--- stderr (first 60 lines)"; head -n 60 "$tmp/err"
  exit 1
fi
head -n 3 "$tmp/out"
[[ -n $show ]] && grep -F -- "$show" "$tmp/err" | head -n 20
exit 0
