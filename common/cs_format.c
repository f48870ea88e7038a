/* SPDX-License-Identifier: Apache-2.0 */
#include "common/cs_format.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

static const char *const cs_format_units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

/* bytes (1 KiB or more) in the largest of the first `units` binary units that keeps it at 1 or
 * more; *unit: its index in cs_format_units. */
static double cs_format_scale(uint64_t bytes, size_t units, size_t *unit) {
  double value = (double)bytes / 1024.0;
  *unit = 0;
  while (value >= 1024.0 && *unit + 1 < units) {
    value /= 1024.0;
    ++*unit;
  }
  return value;
}

void cs_format_size(uint64_t bytes, char *buf, size_t len) {
  if (bytes < 1024) {
    snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    return;
  }
  size_t unit;
  double value = cs_format_scale(bytes, sizeof cs_format_units / sizeof cs_format_units[0], &unit);
  snprintf(buf, len, "%.1f %s", value, cs_format_units[unit]);
}

void cs_format_size_torch(uint64_t bytes, char *buf, size_t len) {
  /* c10's format_size: a unit is kept up to and including 1024 of it ("1024.00 MiB" for 1 GiB),
   * and GiB is the largest. */
  if (bytes <= 1024) snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
  else if (bytes <= (1ull << 20)) snprintf(buf, len, "%.2f KiB", (double)bytes / 1024.0);
  else if (bytes <= (1ull << 30)) snprintf(buf, len, "%.2f MiB", (double)bytes / 1048576.0);
  else snprintf(buf, len, "%.2f GiB", (double)bytes / 1073741824.0);
}

void cs_format_bytes(uint64_t bytes, char *buf, size_t len) {
  if (bytes < 1024) {
    snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    return;
  }
  char size[32];
  cs_format_size(bytes, size, sizeof size);
  snprintf(buf, len, "%llu B (%s)", (unsigned long long)bytes, size);
}

const char *cs_plural(uint64_t n) { return n == 1 ? "" : "s"; }

bool cs_format_utc(int64_t time_us, char *buf, size_t len) {
  time_t seconds = (time_t)(time_us / 1000000);
  struct tm tm;
  char day[32];
  if (time_us < 0 || gmtime_r(&seconds, &tm) == NULL || strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm) == 0) {
    snprintf(buf, len, "%" PRId64 " us", time_us);
    return false;
  }
  snprintf(buf, len, "%s.%03d UTC", day, (int)(time_us % 1000000 / 1000));
  return true;
}
