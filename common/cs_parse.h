/* SPDX-License-Identifier: Apache-2.0 */
/* Small parsing helpers shared by the option parsers. No allocation. */
#ifndef CS_PARSE_H
#define CS_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* A decimal integer of digits only. strtoull would also take spaces, a sign (and wrap "-1" to
 * UINT64_MAX) and, with base 0, octal and hex prefixes. False on anything else or overflow. */
static inline bool cs_parse_u64(const char *text, uint64_t *out) {
  if (*text == '\0') return false;
  uint64_t n = 0;
  for (; *text != '\0'; text++) {
    if (*text < '0' || *text > '9') return false;
    uint64_t digit = (uint64_t)(*text - '0');
    if (n > (UINT64_MAX - digit) / 10) return false;
    n = n * 10 + digit;
  }
  *out = n;
  return true;
}

#endif
