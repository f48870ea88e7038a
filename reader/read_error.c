/* SPDX-License-Identifier: Apache-2.0 */
/* A reader's one-line error (contract in reader/read_error.h). */
#include "reader/read_error.h"

#include <stdarg.h>
#include <stdio.h>

void cs_read_error_set(cs_read_error_t *err, size_t offset, const char *fmt, ...) {
  err->offset = offset;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
}
