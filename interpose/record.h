/* The process's recording: one event ring and one stack table for all contexts, created at
 * activation from the options. Every context's allocator reports its events here (the observer),
 * and the allocation hook captures the caller's stack before entering the allocator. */
#ifndef CS_RECORD_H
#define CS_RECORD_H

#include <stdint.h>

#include "allocator/allocator.h"
#include "common/cs_options.h"
#include "snapshot/intern.h"
#include "snapshot/ring.h"

/* At activation. A failure leaves recording off (one warning); allocation is unaffected. */
void cs_record_start(const cs_options_t *opts);

/* The caller's interned stack, or 0 (stacks off, not started, or the table is full). Hot path. */
uint32_t cs_record_stack(void);

/* The observer for the allocator of a context on `device` (the int must outlive the allocator). */
cs_allocator_observer_t cs_record_observer(const int *device);

cs_ring_t *cs_record_ring(void);        /* NULL before start */
cs_intern_t *cs_record_intern(void);    /* NULL before start or with stacks off */

/* fork: the child forgets the parent's history and stacks */
void cs_record_prefork(void);
void cs_record_postfork(bool child);

#endif
