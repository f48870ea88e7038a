/* SPDX-License-Identifier: Apache-2.0 */
/* Ending the process without exit(): _exit, and a signal whose default action ends the process.
 * The last snapshot and the leak report are written as at exit, by the control thread
 * (process/dump_trigger.c), while the thread that ends the process waits; then that thread ends the
 * process as it would have.
 *
 * Why the control thread: the ending thread may be in a signal handler, on a small alternate
 * stack, holding locks it will never release (an allocator's, malloc's, the loader's). Its wait
 * is bounded: it goes on when the dump is done, or when the dump has made no progress for
 * CS_ENDING_STALL_MS (a lock the frozen thread holds), removing the unfinished file. The dump
 * waits CS_DUMP_LOCK_WAIT_MS for a busy allocator, then leaves that allocator out and says so
 * in the snapshot (`best_effort` in its cudasnap key).
 *
 * A signal from outside that lands inside a CUDA call is deferred instead (cs_ending_defer).
 *
 * Only one ending runs: a second thread that ends the process meanwhile waits for the first,
 * except on a second termination signal (Ctrl-C again), which ends the process at once, with one
 * line on stderr; unless it comes within CS_ENDING_REPEAT_MS of the termination signal that started
 * the ending, when it is that request again (forwarded by a launcher) and the snapshot goes on. A fault
 * inside the ending path, or inside a dump, never starts another dump. */
#ifndef CS_ENDING_H
#define CS_ENDING_H

#include <stdbool.h>

#include "process/dump.h"

enum { CS_ENDING_STALL_MS = 10000 };

/* Write the final snapshot (when CUDASNAP_DUMP_ON has the trigger) and the leak report, and
 * return when they are written or abandoned. Does nothing in a process whose CUDA state is not
 * its own (it never used CUDA, or is a fork or vfork child that has not), when the final
 * snapshot was already written, and on a thread that is already ending the process or writing a
 * dump. sig: the termination or crash signal that ends the process, 0 for _exit.
 * Returns true when the caller is to end the process now, false when sig is the ending's own
 * termination signal again (a launcher's forwarded copy): the caller returns from its handler and
 * the ending under way ends the process. Async-signal-safe. */
bool cs_ending_run(cs_trigger_t trigger, int sig);

/* A signal from outside (a termination signal, or a crash signal another process sent) that
 * arrived while its thread was inside a CUDA call, and so perhaps inside an allocator with its lock
 * held (a program allocating in a loop is, much of the time): stopping that thread would leave its
 * allocator out. Instead the thread runs on with the signal blocked (the caller's job), the
 * control thread writes the snapshot, then ends the process of sig itself; exit, _exit or a fault
 * meanwhile wait for it. Returns false when the ending cannot be deferred (not this process's CUDA
 * state, an ending or final snapshot under way, no control thread): the caller goes on as for any
 * ending. Async-signal-safe. */
bool cs_ending_defer(int sig, cs_trigger_t trigger);

/* The control thread, once the snapshot is written: the signal of a deferred ending (the process is
 * to end of it now), or 0. */
int cs_ending_deferred_signal(void);

/* exit(): if a deferred ending is under way, wait for it to end the process. */
void cs_ending_await_deferred(void);

/* A fault on the control thread (inside a dump). When it was writing an ending that a thread waits
 * for, that thread is told the dump failed and this never returns (the process is about to end);
 * for a deferred ending, returns its signal, of which the caller ends the process; otherwise
 * returns 0 and the caller dies of its fault. */
int cs_ending_control_fault(void);

/* The control thread, at each wake-up: the trigger of an ending to write, at most once. */
bool cs_ending_take(cs_trigger_t *trigger);

/* The control thread: the ending's dump is finished (written or not). */
void cs_ending_served(void);

/* fork: the child has no ending under way. */
void cs_ending_postfork_child(void);

#endif
