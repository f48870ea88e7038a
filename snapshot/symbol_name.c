/* SPDX-License-Identifier: Apache-2.0 */
/* Clone suffixes of compiled function names (contract in snapshot/symbol_name.h). */
#include "snapshot/symbol_name.h"

#include <stdbool.h>
#include <string.h>

/* The suffixes GCC and clang add, each after a '.'; a name with a '.' elsewhere (a static
 * initializer's "_GLOBAL__sub_I_main.cpp") is left alone. */
static const char *const cs_clone_suffixes[] = {"constprop.", "isra.", "part.", "cold", "lto_priv.",
                                                "localalias", "llvm.", "specialized."};

static bool cs_is_clone_suffix(const char *s, size_t left) {
  for (size_t i = 0; i < sizeof cs_clone_suffixes / sizeof *cs_clone_suffixes; i++) {
    const size_t n = strlen(cs_clone_suffixes[i]);
    if (left >= n && memcmp(s, cs_clone_suffixes[i], n) == 0) return true;
  }
  return false;
}

size_t cs_symbol_name_length(const char *name, size_t len) {
  /* demangled C++: "ns::f(int) [clone .constprop.0] [clone .cold]" */
  static const char clone[] = " [clone .";
  for (size_t i = 1; i + sizeof clone - 1 <= len; i++)
    if (memcmp(name + i, clone, sizeof clone - 1) == 0 && name[len - 1] == ']') return i;
  /* C and unmangled names: "alloc.constprop.0.isra.0" */
  for (size_t i = 1; i < len; i++)
    if (name[i] == '.' && cs_is_clone_suffix(name + i + 1, len - i - 1)) return i;
  return len;
}
