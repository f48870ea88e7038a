/* SPDX-License-Identifier: Apache-2.0 */
/* Debug assertions. cs_assert is on at CS_DEBUG >= 1, cs_assert_expensive (full invariant walks)
 * at CS_DEBUG >= 2. The failure path writes with write(2) and never allocates. */
#ifndef CS_ASSERT_H
#define CS_ASSERT_H

#include "common/cs_compiler.h"

CS_COLD CS_NORETURN void cs_assert_fail(const char *expr, const char *file, int line);

#if CS_DEBUG >= 1
#define cs_assert(e) ((e) ? (void)0 : cs_assert_fail(#e, __FILE__, __LINE__))
#else
#define cs_assert(e) ((void)0)
#endif

#if CS_DEBUG >= 2
#define cs_assert_expensive(e) cs_assert(e)
#else
#define cs_assert_expensive(e) ((void)0)
#endif

#define cs_unreachable() cs_assert_fail("unreachable", __FILE__, __LINE__)

#endif
