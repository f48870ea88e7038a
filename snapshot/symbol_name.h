/* SPDX-License-Identifier: Apache-2.0 */
/* A function's name as its source spells it, from the name a compiler gave its code.
 *
 * GCC and clang emit specialised copies of a function under its name plus a suffix: "step.part.0"
 * (a split-off part), "alloc.constprop.0.isra.0" (constants propagated, arguments changed),
 * "main.cold" (the cold path moved away), "f.lto_priv.0" and "g.llvm.1234" (local names made
 * unique by link-time optimization), and the demangler writes C++ ones as "f() [clone .cold]".
 * A user wrote "alloc", and every other view (PyTorch's stacks name functions by their DWARF
 * names, which have no suffix) does too: a site must not be split by how the compiler optimized. */
#ifndef CS_SYMBOL_NAME_H
#define CS_SYMBOL_NAME_H

#include <stddef.h>

/* The length of name[0..len) without the compiler's clone suffixes (len when there are none). */
size_t cs_symbol_name_length(const char *name, size_t len);

#endif
