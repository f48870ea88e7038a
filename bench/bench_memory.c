/* SPDX-License-Identifier: Apache-2.0 */
/* Host memory cudasnap spends on what it tracks, measured from the C library's own accounting:
 * the growth of mallinfo2().uordblks + hblkhd (bytes in use from the heap and from mmap) across
 * an operation, divided by how many things it created.
 *
 *   bench_memory N
 *
 * - per live allocation: N blocks allocated and held through the allocator over the simulated
 *   device (the device memory is simulated; what grows is the block structs, which come in slabs
 *   of 128, the live map's slots, which double when half full, and the 2 MiB segments' structs),
 *   for requests of 512 B (4096 blocks to a segment) and of 1 B..64 KiB (fewer, so segments
 *   weigh more);
 * - per ring entry: sizeof(cs_ring_entry_t), and the growth across cs_ring_init of N entries / N.
 * Prints BENCH lines. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "allocator/allocator.h"
#include "allocator/sim_backend.h"
#include "bench/bench_common.h"
#include "record/ring.h"

static size_t bench_heap_in_use(void) {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

static double bench_per_allocation(size_t n, bool mixed) {
  uintptr_t *addrs = calloc(n, sizeof *addrs); /* before the first reading: not counted */
  if (!addrs) bench_fail("calloc", -1);
  cs_alloc_conf_t conf;
  cs_alloc_conf_init(&conf);
  cs_sim_device_t dev;
  cs_sim_device_init(&dev, (size_t)1 << 44);
  cs_backend_t backend = cs_sim_backend(&dev);
  cs_allocator_t *a = cs_allocator_create(&conf, &backend, NULL);
  if (!a) bench_fail("cs_allocator_create", -1);
  uint64_t seed = BENCH_SEED;
  size_t before = bench_heap_in_use();
  for (size_t i = 0; i < n; i++) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    size_t size = mixed ? (size_t)(seed % 65536) + 1 : 512;
    int rc = cs_allocator_malloc(a, size, 0, 0, &addrs[i]);
    if (rc != 0) bench_fail("allocation", rc);
  }
  size_t after = bench_heap_in_use();
  for (size_t i = 0; i < n; i++)
    if (cs_allocator_free(a, addrs[i]) != 0) bench_fail("free", -1);
  cs_allocator_destroy(a);
  free(addrs);
  return after >= before ? (double)(after - before) / (double)n : 0.0;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 100000;
  if (n == 0) return 2;
  char count[32];
  if (n % 1000000 == 0) snprintf(count, sizeof count, "%zum", n / 1000000);
  else if (n % 1000 == 0) snprintf(count, sizeof count, "%zuk", n / 1000);
  else snprintf(count, sizeof count, "%zu", n);

  printf("BENCH host_bytes_per_allocation_512B_%s %.1f B\n", count, bench_per_allocation(n, false));
  printf("BENCH host_bytes_per_allocation_mixed_%s %.1f B\n", count, bench_per_allocation(n, true));
  printf("BENCH block_struct_sizeof %zu B\n", sizeof(cs_block_t));

  cs_ring_t ring;
  size_t before = bench_heap_in_use();
  if (cs_ring_init(&ring, n) != 0) bench_fail("cs_ring_init", -1);
  size_t after = bench_heap_in_use();
  cs_ring_destroy(&ring);
  printf("BENCH ring_entry_sizeof %zu B\n", sizeof(cs_ring_entry_t));
  printf("BENCH ring_bytes_per_entry_%s %.2f B\n", count, (double)(after - before) / (double)n);
  return 0;
}
