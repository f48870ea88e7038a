/* SPDX-License-Identifier: Apache-2.0 */
/* The RTLD_NEXT chain (issue #3 test 11; interposition.md 4.2, pitfall 1), built twice:
 *   RTLD_NEXT_LIB_A: who() wraps the next definition, found with dlsym(RTLD_NEXT, "who")
 *   RTLD_NEXT_LIB_B: who() returns "B"
 * With A before B in the search order, A's who() returns "A>B". A dlsym override that forwarded
 * RTLD_NEXT by an ordinary call would make glibc search after the override instead: A would get
 * itself ("A>A", infinite recursion in a real wrapper) or nothing ("A>(null)"). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define RTLD_NEXT_EXPORT __attribute__((visibility("default")))

RTLD_NEXT_EXPORT const char *who(void);

#if defined(RTLD_NEXT_LIB_A)
const char *who(void) {
  static char buf[64];
  void *p = dlsym(RTLD_NEXT, "who");
  if (!p) return "A>(null)";
  const char *(*next)(void);
  memcpy(&next, &p, sizeof p);
  if (next == who) return "A>A";
  snprintf(buf, sizeof buf, "A>%s", next());
  return buf;
}
#elif defined(RTLD_NEXT_LIB_B)
const char *who(void) { return "B"; }
#else
#error "define RTLD_NEXT_LIB_A or RTLD_NEXT_LIB_B"
#endif
