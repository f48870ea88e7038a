#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# inert_touched.sh PRELOAD
#
# Issue 24, defect 8: what a process that never calls CUDA (nor NVTX) sees of cudasnap, exactly.
# Its environment differs by one variable, NVTX_INJECTION64_PATH naming the preloaded library
# (read by NVTX at the program's first NVTX call; unless CUDASNAP_NVTX=0 or another tool is named
# there already), and its signal dispositions and mask are the ones it has without cudasnap.
set -u
preload=$(realpath "$1")
fail() { echo "FAIL: $*"; exit 1; }
[[ -f $preload ]] || fail "no library at $preload"
base=(env -u LD_PRELOAD -u NVTX_INJECTION64_PATH -u CUDASNAP_NVTX)

# the environment: `env` itself prints it
plain=$("${base[@]}" env | grep -v '^_=' | sort)
with=$("${base[@]}" LD_PRELOAD="$preload" env | grep -v '^_=' | grep -v '^LD_PRELOAD=' | sort)
added=$(comm -13 <(echo "$plain") <(echo "$with"))
removed=$(comm -23 <(echo "$plain") <(echo "$with"))
[[ -z $removed ]] || fail "variables removed or changed under the preload: $removed"
[[ $added == "NVTX_INJECTION64_PATH=$preload" ]] || fail "variables added under the preload: '$added'"
off=$("${base[@]}" LD_PRELOAD="$preload" CUDASNAP_NVTX=0 env | grep -c '^NVTX_INJECTION64_PATH=')
((off == 0)) || fail "CUDASNAP_NVTX=0 still sets NVTX_INJECTION64_PATH"
other=$("${base[@]}" LD_PRELOAD="$preload" NVTX_INJECTION64_PATH=/opt/tool/libinj.so env | grep '^NVTX_INJECTION64_PATH=')
[[ $other == "NVTX_INJECTION64_PATH=/opt/tool/libinj.so" ]] || fail "another tool's injection was replaced: $other"

# signals: blocked, ignored and caught, as the kernel holds them
sigs() { grep -E '^(SigBlk|SigIgn|SigCgt):' /proc/self/status; }
plain=$("${base[@]}" bash -c "$(declare -f sigs); sigs")
with=$("${base[@]}" LD_PRELOAD="$preload" bash -c "$(declare -f sigs); sigs")
[[ $plain == "$with" ]] || fail "signal state differs under the preload: '$with' vs '$plain'"
echo "ok: a process that never calls CUDA sees NVTX_INJECTION64_PATH=$preload and nothing else"
