/* SPDX-License-Identifier: Apache-2.0 */
/* Growable arrays for the model and its readers, which reach hundreds of megabytes on a large file.
 *
 * realloc grows a large block by copying it when it cannot extend it in place, and the fresh pages
 * are faulted in 4 KiB at a time: on a 1,000,000-event pickle the copies and faults were a third of
 * the read (bench/README.md, "Reading"). An array of CS_REGION_MIN bytes or more lives in its own
 * mapping instead: grown by mremap (the kernel moves page tables, never the bytes) and marked for
 * transparent huge pages (one fault per 2 MiB where the kernel allows it). Smaller arrays stay on
 * the heap. Which one holds an array follows from its size alone, so the caller passes the
 * capacity in bytes it last asked for, to both calls. */
#ifndef CS_MODEL_REGION_H
#define CS_MODEL_REGION_H

#include <stddef.h>

#define CS_REGION_MIN ((size_t)1 << 20)

/* As realloc(p, new_bytes), for an array whose capacity was old_bytes (0 when p is NULL); arrays
 * only grow (new_bytes > old_bytes). NULL without memory, p then unchanged. */
void *cs_region_resize(void *p, size_t old_bytes, size_t new_bytes);

/* Frees an array of capacity `bytes` (as given to cs_region_resize); p may be NULL. */
void cs_region_free(void *p, size_t bytes);

#endif
