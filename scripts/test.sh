#!/usr/bin/env bash
# Set up, build, and run every test: the main build (all tests), the whole suite again in a Release
# build (no debug information, -O3: the tests must not depend on the build type), then the unit
# tests again under AddressSanitizer + UndefinedBehaviorSanitizer, and the concurrency tests under
# ThreadSanitizer.
#   scripts/test.sh
# Build trees: build/, build-release/, build-asan/, build-tsan/ (reused between runs).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

scripts/setup.sh

step() { printf '\n== %s\n' "$*"; }

step "build and test (RelWithDebInfo, assertions on)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCS_DEBUG=1 >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

step "build and test (Release, as users build it)"
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-release -j "$jobs"
ctest --test-dir build-release --output-on-failure -j "$jobs"

step "unit tests under AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCS_DEBUG=2 -DCS_SANITIZE=address,undefined >/dev/null
cmake --build build-asan -j "$jobs"
ctest --test-dir build-asan --output-on-failure -j "$jobs" -L unit

step "concurrency tests under ThreadSanitizer"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCS_SANITIZE=thread >/dev/null
cmake --build build-tsan -j "$jobs"
TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure -R 'threads|test_ring|test_thread_log|test_intern|test_phases'
