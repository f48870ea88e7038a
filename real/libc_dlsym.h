/* SPDX-License-Identifier: Apache-2.0 */
/* The libc dlsym, and the next dlsym after cudasnap in the search order (another overrider, or
 * libc's): resolved without state, so they work before any constructor ran. The lowest piece of
 * the library: the dlsym override, the real-function slots and the interposers of libc's functions
 * all stand on it, and it needs none of them. */
#ifndef CS_LIBC_DLSYM_H
#define CS_LIBC_DLSYM_H

typedef void *(*cs_dlsym_fn)(void *, const char *);

void *cs_libc_dlsym(void *handle, const char *name);
void *cs_next_dlsym(void *handle, const char *name);

/* The next dlsym itself, for the trampoline's tail jump. */
cs_dlsym_fn cs_next_dlsym_fn(void);

#endif
