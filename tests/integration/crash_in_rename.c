/* SPDX-License-Identifier: Apache-2.0 */
/* A preload for endings.sh (scenario dump_fault): renameat2 faults. In the program it is used with,
 * cudasnap is the only caller (to give a written snapshot its name), so the fault happens inside
 * cudasnap's own dump, after the temporary file was written. */
#include <stdint.h>
#include <stdio.h>

/* Read through a volatile pointer: a constant address is one GCC's -Warray-bounds rejects when
 * this file is built without link-time optimization. */
static volatile int *volatile cs_bad_address = (volatile int *)(uintptr_t)8;

__attribute__((visibility("default"))) int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags) {
  (void)olddirfd;
  (void)oldpath;
  (void)newdirfd;
  (void)newpath;
  (void)flags;
  *cs_bad_address = 1;
  return -1;
}
