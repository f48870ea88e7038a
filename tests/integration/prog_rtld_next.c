/* SPDX-License-Identifier: Apache-2.0 */
/* Issue #3 test 11: linked with rtld_next_a then rtld_next_b. Prints who=<A's answer> and
 * main_next=<answer of the function dlsym(RTLD_NEXT, "who") finds from the executable>; both must
 * be "A>B" whatever is preloaded. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

const char *who(void);

int main(void) {
  char w[64];
  snprintf(w, sizeof w, "%s", who()); /* A answers from a static buffer */
  void *p = dlsym(RTLD_NEXT, "who");
  const char *m = "(null)";
  if (p) {
    const char *(*next)(void);
    memcpy(&next, &p, sizeof p);
    m = next();
  }
  printf("who=%s main_next=%s\n", w, m);
  if (strcmp(w, "A>B") != 0 || strcmp(m, "A>B") != 0) {
    fprintf(stderr, "FAIL: RTLD_NEXT resolved wrongly: who=%s main_next=%s, expected A>B for both\n", w, m);
    return 1;
  }
  return 0;
}
