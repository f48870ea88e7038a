/* SPDX-License-Identifier: Apache-2.0 */
/* Free bytes inside segments, rounding and gaps (issue 46): a server's cache after some traffic,
 * dumped, then killed. `cudasnap recover` of its recording must draw the blocks as the dump does,
 * so that both split the free bytes the same way (record_kill.sh free_split).
 *   a 72 MiB block freed, then 64 MiB asked: the cached segment serves it whole (IPC-safe pool)
 *     or split (split_large), 8 MiB of rounding or of free block
 *   3 MiB and 1000 bytes asked: a segment of its own rounded up to 4 MiB, or a piece of a shared
 *     20 MiB one (split_large), rounded by roundup_power2_divisions when set
 *   8 requests of 100,000 bytes in the small pool, the 2nd and 5th freed: gaps between blocks
 * then cudasnap_dump(argv[1]), "ready" on stdout, and a wait for SIGKILL. */
#include <stdio.h>
#include <unistd.h>

#include "tests/integration/it_driver.h"

int main(int argc, char **argv) {
  IT_CHECK(argc == 2, "usage: %s DUMP.json", argv[0]);
  IT_CHECK(cudasnap_dump != NULL, "run under cudasnap");
  (void)it_driver_context();
  it_free_ok(it_alloc_ok((size_t)72 << 20));
  CUdeviceptr big = it_alloc_ok((size_t)64 << 20);
  CUdeviceptr odd = it_alloc_ok(((size_t)3 << 20) + 1000);
  CUdeviceptr small[8];
  for (int i = 0; i < 8; i++) small[i] = it_alloc_ok(100000);
  it_free_ok(small[1]);
  it_free_ok(small[4]);
  (void)big;
  (void)odd;
  IT_CHECK(cudasnap_dump(argv[1]) == 0, "dump to %s failed", argv[1]);
  printf("ready\n");
  fflush(stdout);
  for (;;) pause(); /* until SIGKILL */
}
