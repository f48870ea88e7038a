#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Set up, build, and run every test: the main build (all tests), the whole suite again in a Release
# build (no debug information, -O3: the tests must not depend on the build type), then the unit
# tests again under AddressSanitizer + UndefinedBehaviorSanitizer, and the concurrency tests under
# ThreadSanitizer (with the few integration tests a sanitizer build has, the library preloaded).
#   scripts/test.sh
# Build trees: build-test/, build-release/, build-asan/, build-tsan/ (reused between runs), each
# its own: build/ stays the users' (the Quickstart's), never configured with assertions here.
# After each suite, no program of its tree may still be running (a test that left one fails here).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

scripts/setup.sh --tests

step() { printf '\n== %s\n' "$*"; }

# Processes of this user still running a program of build tree $1, or preloading its library.
left_running() {
  local tree=$PWD/$1/ f pid cmd found=()
  local pattern="^LD_PRELOAD=.*${tree//./\\.}"
  while IFS= read -r f; do
    pid=${f#/proc/}
    pid=${pid%%/*}
    cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || continue # gone meanwhile
    [[ $pid == "$$" ]] || found+=("$pid $cmd")
  done < <({ find /proc/[0-9]*/exe -maxdepth 0 -lname "$tree*" 2>/dev/null
             grep -lzs -- "$pattern" /proc/[0-9]*/environ; } | sort -u)
  ((${#found[@]} == 0)) && return 0
  printf 'test.sh: the tests of %s left running:\n' "$1" >&2
  printf '  %s\n' "${found[@]}" >&2
  return 1
}

step "build and test (RelWithDebInfo, assertions on)"
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCS_DEBUG=1 >/dev/null
cmake --build build-test -j "$jobs"
ctest --test-dir build-test --output-on-failure -j "$jobs"
left_running build-test

step "build and test (Release, as users build it)"
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-release -j "$jobs"
ctest --test-dir build-release --output-on-failure -j "$jobs"
left_running build-release

step "unit tests and the servers' integration tests under AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCS_DEBUG=2 -DCS_SANITIZE=address,undefined >/dev/null
cmake --build build-asan -j "$jobs"
# and the few integration tests a sanitizer build has (tests/integration: the servers of issue 44)
ctest --test-dir build-asan --output-on-failure -j "$jobs" -L 'unit|integration'
left_running build-asan

step "concurrency tests under ThreadSanitizer"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCS_SANITIZE=thread >/dev/null
cmake --build build-tsan -j "$jobs"
TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure -R 'threads|test_ring|test_thread_log|test_intern|test_phases|test_stack|test_lock'
left_running build-tsan
