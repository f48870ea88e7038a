/* SPDX-License-Identifier: Apache-2.0 */
/* int64 sums held at the limits, for figures read from a file: a snapshot's sizes and times can be
 * any int64, and C leaves an overflowing signed sum undefined. No allocation. */
#ifndef CS_SATURATE_H
#define CS_SATURATE_H

#include <stdint.h>

/* a + b, INT64_MAX or INT64_MIN where it would leave the range. */
static inline int64_t cs_add_sat_i64(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? INT64_MAX : INT64_MIN;
}

/* a - b, INT64_MAX or INT64_MIN where it would leave the range. */
static inline int64_t cs_sub_sat_i64(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? INT64_MAX : INT64_MIN;
}

#endif
