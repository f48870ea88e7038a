#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# free_order.sh SCENARIO BIN_DIR CUDASNAP_LIB CUDASNAP_TOOL
#
# Issue 44, item 2: it_free_order hands a freed address to another thread while the free is still
# inside the driver, every round; the exit snapshot must be clean for `cudasnap check`, never hold
# two live allocations at one address, and draw as live the allocation the other thread made last.
set -u
scenario=$1 bin=$2 lib=$3 tool=$4
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL [free_order $scenario]: $*" >&2; exit 1; }
(cd "$dir" && env LD_PRELOAD="$lib" CUDASNAP_DUMP_ON=exit CUDASNAP_OUTPUT="$dir/snap.json" \
  "$bin/it_free_order" "$scenario" >"$dir/out" 2>"$dir/err") || fail "it_free_order exited $?: $(head -c 2000 "$dir/err")"
cat "$dir/out"
[[ -f $dir/snap.json ]] || fail "no exit snapshot: $(head -c 2000 "$dir/err")"
"$tool" check "$dir/snap.json" >"$dir/check" 2>&1 || fail "cudasnap check: $(head -c 3000 "$dir/check")"
case $scenario in
async) site=(--live-site async it_other) ;;
vmm) site=(--live-site vmm_mapped it_other) ;;
*) site=() ;;
esac
python3 "$here/live_check.py" "$dir/snap.json" "${site[@]}" || fail "live_check.py"
echo "free_order $scenario: the frees recorded before the addresses were handed out again"
