/* SPDX-License-Identifier: Apache-2.0 */
/* The caching allocator's configuration: PyTorch's PYTORCH_CUDA_ALLOC_CONF keys, read from
 * CUDASNAP_ALLOC_CONF, plus cudasnap's own keys and the free mode (CUDASNAP_FREE) and cache switch
 * (CUDASNAP_CACHE), which the allocator needs together.
 *
 * Grammar (as PyTorch lexes it): `key:value(,key:value)*`; `,` `:` `[` `]` are tokens, spaces are
 * dropped. A bad value or an unknown key gets one warning line naming it and what is accepted, and
 * that key keeps its default; the other keys still apply. */
#ifndef CS_ALLOC_CONF_H
#define CS_ALLOC_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* roundup_power2_divisions has one value per power-of-two interval: index floor(log2(size)) - 20,
 * clamped to 0..15, so sizes below 2 MiB share interval 0 and sizes of 32 GiB and more share 15. */
#define CS_ROUNDUP_INTERVALS 16

typedef enum cs_free_mode_e {
  CS_FREE_SYNC = 0,   /* reusable after the synchronization cudaFree would have done (default) */
  CS_FREE_FENCE = 1,  /* reusable once events recorded at free time have completed */
  CS_FREE_STREAM = 2, /* PyTorch semantics: reusable at once on the block's own stream */
} cs_free_mode_t;

typedef struct cs_alloc_conf_s {
  size_t max_split_size;           /* bytes; SIZE_MAX = unlimited (PyTorch's default) */
  size_t max_non_split_rounding;   /* bytes; how much larger than the request an unsplit block may be */
  double garbage_collection_threshold; /* 0 = off, else in (0, 1) */
  uint32_t roundup_power2_divisions[CS_ROUNDUP_INTERVALS]; /* 0 or 1 = plain 512 B rounding */
  bool split_large;                /* cudasnap key: PyTorch's full large pool instead of IPC-safe */
  bool ipc_small;                  /* cudasnap key: requests <= 1 MiB get segments of their own too */
  cs_free_mode_t free_mode;        /* CUDASNAP_FREE */
  bool cache;                      /* CUDASNAP_CACHE; false = record only, every call passes through */
} cs_alloc_conf_t;

/* The defaults: PyTorch's, with the IPC-safe large pool, sync frees and the cache on. */
void cs_alloc_conf_init(cs_alloc_conf_t *conf);

/* Parse a CUDASNAP_ALLOC_CONF string into conf (which holds defaults or earlier values).
 * `source` names the variable in messages. Returns the number of problems reported (0 = clean).
 * Pure apart from the warning lines; never allocates. */
int cs_alloc_conf_parse(const char *text, const char *source, cs_alloc_conf_t *conf);

/* The value PyTorch reports as the stat `max_split_size`: bytes, or -1 when unlimited. */
static inline int64_t cs_alloc_conf_max_split_stat(const cs_alloc_conf_t *conf) {
  return conf->max_split_size == SIZE_MAX ? -1 : (int64_t)conf->max_split_size;
}

#endif
