#!/usr/bin/env bash
# The main job on a fresh machine: set up, build, and run the example.
#   scripts/example.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" --target simulated_training cudasnap >/dev/null
echo "== a training-like allocation pattern on the simulated device"
build/examples/simulated_training 50
