/* SPDX-License-Identifier: Apache-2.0 */
/* dlclose (dlclose.c). */
#ifndef CS_DLCLOSE_H
#define CS_DLCLOSE_H

/* Find the next dlclose now (the constructor): a lookup inside the program's dlclose would clear
 * an error the program has not read yet with dlerror. */
void cs_dlclose_resolve(void);

#endif
