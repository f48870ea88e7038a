/* SPDX-License-Identifier: Apache-2.0 */
/* A preload for endings.sh (scenarios term_twice*): renameat2 takes 5 s (IT_SLOW_RENAME_S seconds
 * when set, at most 9), then does its work. In
 * the program it is used with, cudasnap is the only caller (to give a written snapshot its name),
 * so cudasnap's dump is slow as a large one is, while the dump still makes progress to the
 * ending's stall watch (which gives up after 10 s). */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*renameat2_fn)(int, const char *, int, const char *, unsigned int);

__attribute__((visibility("default"))) int renameat2(int olddirfd, const char *oldpath, int newdirfd,
                                                     const char *newpath, unsigned int flags) {
  const char *seconds = getenv("IT_SLOW_RENAME_S");
  const long s = seconds ? strtol(seconds, NULL, 10) : 5;
  struct timespec left = {.tv_sec = s > 0 && s <= 9 ? s : 5, .tv_nsec = 0};
  while (nanosleep(&left, &left) != 0) {
  }
  void *sym = dlsym(RTLD_NEXT, "renameat2");
  renameat2_fn real;
  memcpy(&real, &sym, sizeof real);
  return real(olddirfd, oldpath, newdirfd, newpath, flags);
}
