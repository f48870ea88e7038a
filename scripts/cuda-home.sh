# SPDX-License-Identifier: Apache-2.0
# Sourced by the scripts that build with nvcc. Sets cuda_home to the CUDA Toolkit's root, asking
# nvcc itself: nvcc on PATH may be a wrapper script (e.g. /usr/local/bin/nvcc that execs
# /usr/local/cuda-13.0/bin/nvcc), so the folder above it is not always the toolkit's.
# Usage: cuda_home=$(cuda_home_of "$nvcc")
cuda_home_of() {
  local nvcc=$1 top
  top=$("$nvcc" --dryrun -c -x cu /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$ TOP=//p' | head -n1)
  if [[ -n $top && -d $top ]]; then
    (cd "$top" && pwd)
  else
    (cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd)
  fi
}
