/* SPDX-License-Identifier: Apache-2.0 */
/* Back memory with pages now, not at first touch.
 *
 * A fresh allocation of megabytes (a history ring, a snapshot's copy of it) is zero pages until
 * written; each first write traps, and under a hypervisor a trap costs 5 to 10 us. Taken on the
 * allocation hot path, or under the allocators' locks, that is a latency spike for the program;
 * taken here, at creation, it is one system call. */
#ifndef CS_POPULATE_H
#define CS_POPULATE_H

#include <stddef.h>

/* Best effort: MADV_POPULATE_WRITE (Linux 5.14) on the whole pages inside [p, p + n); on older
 * kernels nothing happens and the pages come at first touch as before. */
void cs_populate(void *p, size_t n);

#endif
