/* SPDX-License-Identifier: Apache-2.0 */
/* A training-like allocation pattern (weights once; activations, gradients and a workspace every
 * step) served by cudasnap's caching allocator on the simulated device, then the device's
 * torch.cuda.memory_summary()-style table. Shows the caching: a handful of device allocations
 * serve every step.
 *   build/examples/simulated_training [steps]
 * This exercises the allocator directly; profiling an unmodified CUDA program goes through
 * libcudasnap.so with LD_PRELOAD. */
#include <stdio.h>
#include <stdlib.h>

#include "allocator/allocator.h"
#include "allocator/sim_backend.h"
#include "common/cs_error.h"

#define MiB ((size_t)1 << 20)

static uintptr_t must_alloc(cs_allocator_t *a, size_t size) {
  uintptr_t p = 0;
  int rc = cs_allocator_malloc(a, size, 0, 0, &p);
  if (rc != 0) {
    fprintf(stderr, "simulated_training: allocating %zu bytes failed: %s\n", size, cs_strerror(rc));
    exit(1);
  }
  return p;
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 50;
  cs_sim_device_t dev;
  cs_sim_device_init(&dev, (size_t)16 << 30);
  cs_backend_t backend = cs_sim_backend(&dev);
  cs_alloc_conf_t conf;
  cs_alloc_conf_init(&conf);
  cs_allocator_t *a = cs_allocator_create(&conf, &backend, NULL);
  if (!a) return 1;

  enum { LAYERS = 12 };
  uintptr_t weights[LAYERS], activations[LAYERS], grads[LAYERS];
  for (int l = 0; l < LAYERS; l++) weights[l] = must_alloc(a, 24 * MiB + (size_t)l * 4096);
  for (int step = 0; step < steps; step++) {
    for (int l = 0; l < LAYERS; l++) activations[l] = must_alloc(a, 6 * MiB + 512 * (size_t)step % 8192);
    uintptr_t workspace = must_alloc(a, 300 * 1024);
    for (int l = LAYERS - 1; l >= 0; l--) {
      grads[l] = must_alloc(a, 24 * MiB + (size_t)l * 4096);
      cs_allocator_free(a, activations[l]);
    }
    cs_allocator_free(a, workspace);
    for (int l = 0; l < LAYERS; l++) cs_allocator_free(a, grads[l]);
  }

  cs_stats_t stats;
  cs_allocator_get_stats(a, &stats);
  char summary[8192];
  cs_stats_summary(&stats, 0, false, summary, sizeof summary);
  fputs(summary, stdout);
  printf("%d steps: %lld allocations served by %llu device allocations (%llu MiB reserved at peak)\n",
         steps, (long long)stats.allocation[CS_STAT_ALL].allocated,
         (unsigned long long)dev.segment_allocs, (unsigned long long)(dev.peak_used / MiB));
  for (int l = 0; l < LAYERS; l++) cs_allocator_free(a, weights[l]);
  cs_allocator_destroy(a);
  return 0;
}
