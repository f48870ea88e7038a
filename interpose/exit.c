/* SPDX-License-Identifier: Apache-2.0 */
/* _exit and _Exit: the process ends without exit()'s handlers, as every child of Python's
 * multiprocessing (fork start method) does through os._exit, and many launchers' workers. The
 * final snapshot and leak report are written first (process/ending.h), as at exit(). Nothing
 * happens in a process whose CUDA state is not its own: one that never used CUDA, a fork child that
 * has not used it itself, or a vfork child (which shares its parent's memory, and calls _exit when
 * its exec fails).
 *
 * exit() ends with glibc's internal _exit, which does not come here; a raw exit_group system call
 * (a static runtime, the Go runtime) is not seen. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cs_compiler.h"
#include "interpose/exit.h"
#include "process/ending.h"
#include "real/libc_dlsym.h"

typedef void (*cs_exit_fn)(int);
static _Atomic(cs_exit_fn) cs_exit_next;

void cs_exit_resolve(void) {
  void *p = cs_libc_dlsym(RTLD_NEXT, "_exit");
  cs_exit_fn fn;
  memcpy(&fn, &p, sizeof fn);
  atomic_store_explicit(&cs_exit_next, fn, memory_order_release);
}

/* The next _exit (another preload's, or libc's), found by the constructor: a vfork child must not
 * call the dynamic loader. Without it, the system call itself. */
static CS_NORETURN void cs_exit_real(int status) {
  cs_exit_fn fn = atomic_load_explicit(&cs_exit_next, memory_order_acquire);
  if (fn) fn(status);
  for (;;) syscall(SYS_exit_group, status);
}

CS_EXPORT CS_NORETURN void _exit(int status) {
  (void)cs_ending_run(CS_TRIGGER_EXIT, 0);
  cs_exit_real(status);
}

CS_EXPORT CS_NORETURN void _Exit(int status) {
  (void)cs_ending_run(CS_TRIGGER_EXIT, 0);
  cs_exit_real(status);
}
