/* SPDX-License-Identifier: Apache-2.0 */
/* A training rank's start on a machine where the runtime finds no driver (issue 46): it asks the
 * runtime how many devices there are, as train_rank did, and gives up when that fails. Linked with
 * the fake libcudart; the test points FAKE_CUDART_LIBCUDA at a driver that is nowhere. Prints the
 * runtime's answer on stdout and exits 1, as such a program does. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void) {
  int count = -1;
  cudaError_t rc = cudaGetDeviceCount(&count);
  printf("cudaGetDeviceCount: %d, %d devices\n", (int)rc, count);
  return rc == cudaSuccess && count > 0 ? 0 : 1;
}
