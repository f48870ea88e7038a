#include "cli/format.h"

#include <stdio.h>

void cs_format_bytes(uint64_t bytes, char *buf, size_t len) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) {
    snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    return;
  }
  double value = (double)bytes / 1024.0;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < sizeof units / sizeof units[0]) {
    value /= 1024.0;
    unit++;
  }
  snprintf(buf, len, "%llu B (%.1f %s)", (unsigned long long)bytes, value, units[unit]);
}

const char *cs_plural(uint64_t n) { return n == 1 ? "" : "s"; }
