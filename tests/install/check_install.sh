#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_install.sh BUILD_DIR SOURCE_DIR [PYTHON]
# `cmake --install` into a temporary prefix gives a working layout: the tool finds the library
# relative to itself, the header and pkg-config file work, a program using the weak API runs
# with and without the library, and (with PYTHON) the Python package imports from the prefix and
# answers under `cudasnap run`, and says how to start the program without it.
set -euo pipefail
build=$1 src=$2 python=${3:-}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/cudasnap lib/libcudasnap.so include/cudasnap.h lib/pkgconfig/cudasnap.pc; do
  [[ -e $prefix/$f ]] || fail "$f not installed"
done
"$prefix/bin/cudasnap" run -- /bin/true || fail "the installed tool cannot run a program"
read -r cflags < <(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags cudasnap) # read trims the trailing space
include=$(realpath -m "${cflags#-I}")
[[ $include == "$(realpath "$prefix/include")" ]] || fail "pkg-config --cflags gave '$cflags'"
cat >"$prefix/weak.c" <<'C'
#include <cudasnap.h>
#include <stdio.h>
int main(void) {
  if (!cudasnap_memory_allocated) { puts("without cudasnap"); return 0; }
  printf("with cudasnap: %lld bytes allocated\n", (long long)cudasnap_memory_allocated(0));
  return 0;
}
C
cc $cflags "$prefix/weak.c" -o "$prefix/weak"
[[ $("$prefix/weak") == "without cudasnap" ]] || fail "the weak API is not optional"
[[ $(LD_PRELOAD=$prefix/lib/libcudasnap.so "$prefix/weak") == "with cudasnap: 0 bytes allocated" ]] ||
  fail "the weak API is not found under the preload"
if [[ -n $python ]]; then
  sites=("$prefix"/lib/python*/site-packages)
  [[ ${#sites[@]} -eq 1 && -f ${sites[0]}/cudasnap/__init__.py ]] || fail "the Python package is not in PREFIX/lib/pythonX.Y/site-packages"
  ask='import cudasnap; print(cudasnap.is_available(), cudasnap.memory_allocated(), cudasnap.memory_stats()["num_ooms"])'
  out=$(PYTHONPATH=${sites[0]} "$prefix/bin/cudasnap" run -- "$python" -c "$ask") || fail "the installed package failed under cudasnap run"
  [[ $out == "True 0 0" ]] || fail "the installed package under cudasnap run said '$out'"
  err=$(cd "$prefix" && PYTHONPATH=${sites[0]} "$python" -c "$ask" 2>&1) && fail "the package answered without cudasnap"
  [[ $err == *"NotProfiledError: cudasnap: this program does not run under cudasnap"* &&
     $err == *"\`$prefix/bin/cudasnap run -- "* && $err == *"\`LD_PRELOAD=$prefix/lib/libcudasnap.so "* ]] ||
    fail "without cudasnap the installed package did not say how to start the program with this prefix: $err"
fi
echo "install ok"
