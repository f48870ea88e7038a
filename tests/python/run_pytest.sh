#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_pytest.sh TESTS PYTHON...: tests of the Python package (a file or folder) under pytest, with the first of the
# given interpreters that has pytest (scripts/setup.sh installs Debian's python3-pytest, which the
# system python3 has; a python3 found first on PATH, e.g. pyenv's, may not). Exit 77 (skipped) when
# none has it.
set -euo pipefail
tests=$1
shift
for py in "$@"; do
  if [[ -x $py ]] && "$py" -c 'import pytest' 2>/dev/null; then
    exec "$py" -m pytest -q -p no:cacheprovider "$tests"
  fi
done
echo "SKIP: no Python with pytest among: $* (scripts/setup.sh installs python3-pytest)"
exit 77
