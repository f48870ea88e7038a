/* SPDX-License-Identifier: Apache-2.0 */
/* Writing snapshots: when (exit, signal, out of memory, the API, and as the process ends otherwise:
 * _exit, a crash, a termination signal), under which name, and the one line that reports each
 * (docs/design.md section 4).
 *
 * A dump copies the state under the allocators' locks, then symbolizes and writes with no lock
 * held, to a temporary file renamed into place; an existing file is never replaced. A failure is
 * one line on stderr and the program goes on. Dumps are serialized. No CUDA call is made.
 *
 * The control thread, started at activation, writes the snapshots asked for by a signal handler
 * (CUDASNAP_SIGNAL) and by a thread that ends the process (process/ending.h). */
#ifndef CS_DUMP_H
#define CS_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A snapshot waits this long in all for the locks it copies under (a busy allocator's, the memory
 * passed through's, the NVTX pools'), then leaves out what a lock it did not get guards, and says
 * so in the snapshot (`best_effort`): whatever the trigger, its holder may be stuck for good. */
enum { CS_DUMP_LOCK_WAIT_MS = 1000 };

typedef enum cs_trigger_e {
  CS_TRIGGER_EXIT = 0,   /* exit(), return from main, _exit, _Exit, quick_exit */
  CS_TRIGGER_SIGNAL = 1, /* CUDASNAP_SIGNAL; the program goes on */
  CS_TRIGGER_OOM = 2,
  CS_TRIGGER_API = 3,
  CS_TRIGGER_CRASH = 4,  /* SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL */
  CS_TRIGGER_TERM = 5,   /* SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGXCPU */
} cs_trigger_t;

/* The trigger's name in %t and in the snapshot. */
const char *cs_dump_trigger_name(cs_trigger_t trigger);

/* At activation: the exit handlers, the control thread, the signal handler. */
void cs_dump_start(void);

/* Write a snapshot now. path NULL: named from CUDASNAP_OUTPUT. Returns 0 when a file was
 * written, else -1 (the reason was reported). */
int cs_dump_write(cs_trigger_t trigger, const char *path);

/* The same, also giving the name the file was written under (path, or path with "-N" added, or
 * the name CUDASNAP_OUTPUT gave), truncated to fit `len` and NUL-terminated when len > 0. Returns
 * the name's whole length, as snprintf does, or -1 when no file was written. */
int cs_dump_write_named(cs_trigger_t trigger, const char *path, char *written, size_t len);

/* An allocation is about to report out of memory (CUDASNAP_DUMP_ON has oom): dump first. */
void cs_dump_on_oom(void);

/* fork: the child gets a new pipe and no control thread until it uses CUDA itself, and never
 * writes the parent's snapshots */
void cs_dump_postfork_child(void);

/* ---- for the endings (process/ending.c, process/signals.c); all async-signal-safe ---- */

/* Is this thread writing a dump (a fault now is a fault inside cudasnap)? */
bool cs_dump_running_here(void);

/* The final snapshot (exit or an ending) has been started, or finished. */
bool cs_dump_final_started(void);
bool cs_dump_final_finished(void);

/* A counter every dump advances as it goes: a waiter tells a slow dump from a stuck one. */
uint64_t cs_dump_progress(void);

/* Remove the temporary file of the dump under way, if any (the process ends before it is done). */
void cs_dump_abandon(void);

#endif
