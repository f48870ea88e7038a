#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job on a fresh machine: set up, build, profile an example CUDA program with cudasnap,
# print the summary, write the report page, and say how to open the snapshot and the page.
#   scripts/example.sh
# On a machine with an NVIDIA GPU the program runs on it; otherwise on cudasnap's simulated CUDA
# driver (the fake libcuda/libcudart of tests/fakes, which put device memory in host memory).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCS_DEBUG=0 >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" --target cudasnap cudasnap_cli train_step fake_cuda fake_cudart >/dev/null

out=example-output
mkdir -p "$out"
rm -f "$out"/train_step-*.json "$out"/train_step-*.html
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "== profiling build/examples/train_step on the GPU"
  device_env=()
else
  echo "== no GPU here: profiling build/examples/train_step on the simulated CUDA driver"
  device_env=(env "LD_LIBRARY_PATH=$PWD/build/tests/fakes${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
fi
"${device_env[@]}" build/cli/cudasnap run -o "$out/train_step-%n-%t.json" -- build/examples/train_step 20

snapshot=$(ls "$out"/train_step-*-exit.json)
echo
echo "== cudasnap summary $snapshot"
build/cli/cudasnap summary "$snapshot"
report=${snapshot%.json}.html
build/cli/cudasnap report -o "$report" "$snapshot" >/dev/null
echo
echo "snapshot: $snapshot  (open it at https://pytorch.org/memory_viz: drag the file onto the page)"
echo "report:   $report  (open it in any browser, offline too: cudasnap report wrote it)"
