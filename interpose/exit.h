/* SPDX-License-Identifier: Apache-2.0 */
/* _exit and _Exit (exit.c). */
#ifndef CS_EXIT_H
#define CS_EXIT_H

/* Find the next _exit now (the constructor), so that no later call needs the loader. */
void cs_exit_resolve(void);

#endif
