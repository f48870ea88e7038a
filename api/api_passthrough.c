/* SPDX-License-Identifier: Apache-2.0 */
/* cudasnap_passthrough_stats of include/cudasnap.h: cudasnap's own statistics of the memory that
 * passes the cache by, kept by device/passthrough_mem.c. */
#define CUDASNAP_BUILDING_LIBRARY 1
#include "include/cudasnap.h"

#include <pthread.h>

#include "api/device_arg.h"
#include "device/passthrough_mem.h"

/* a device's row: every kind but host memory and reservations; the host row: its two kinds */
_Static_assert(CUDASNAP_PASSTHROUGH_KEYS == (CS_PASSTHROUGH_KINDS - 3) * CS_PASSTHROUGH_STAT_FIELDS,
               "public key count");
_Static_assert(CUDASNAP_PASSTHROUGH_HOST_KEYS == 2 * CS_PASSTHROUGH_STAT_FIELDS, "public host key count");

/* The pass-through keys, made once: the API hands out pointers that live as long as the library. */
static char cs_api_passthrough_keys[CS_PASSTHROUGH_KINDS][CS_PASSTHROUGH_STAT_FIELDS][64];
static pthread_once_t cs_api_passthrough_once = PTHREAD_ONCE_INIT;

static void cs_api_passthrough_names(void) {
  for (int k = 0; k < CS_PASSTHROUGH_KINDS; k++)
    for (int f = 0; f < CS_PASSTHROUGH_STAT_FIELDS; f++)
      cs_passthrough_stat_key((cs_passthrough_kind_t)k, f, cs_api_passthrough_keys[k][f],
                              sizeof cs_api_passthrough_keys[k][f]);
}

int cudasnap_passthrough_stats(int device, cudasnap_stat_t *out, size_t cap) {
  bool host = device == CUDASNAP_HOST;
  int row = host ? CS_PASSTHROUGH_NO_DEVICE : cs_device_arg_resolve(device);
  cs_passthrough_stat_t stats[CS_PASSTHROUGH_KINDS];
  if (row < 0 || (!host && row >= CS_PASSTHROUGH_MAX_DEVICES) || !cs_passthrough_stats(row, stats)) return -1;
  pthread_once(&cs_api_passthrough_once, cs_api_passthrough_names);
  size_t n = 0;
  for (int k = 0; k < CS_PASSTHROUGH_KINDS; k++) {
    if (!cs_passthrough_kind_in_row((cs_passthrough_kind_t)k, host)) continue;
    for (int f = 0; f < CS_PASSTHROUGH_STAT_FIELDS; f++, n++)
      if (out && n < cap)
        out[n] = (cudasnap_stat_t){cs_api_passthrough_keys[k][f], cs_passthrough_stat_field(&stats[k], f)};
  }
  return (int)n;
}

