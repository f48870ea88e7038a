/* SPDX-License-Identifier: Apache-2.0 */
/* The signals whose default action ends the process, watched once CUDA is in use, so that the
 * final snapshot and leak report are written before the process goes (docs/design.md section 5,
 * CUDASNAP_DUMP_ON crash and term):
 *   crash  SIGSEGV SIGBUS SIGABRT SIGFPE SIGILL
 *   term   SIGTERM SIGINT SIGHUP SIGQUIT SIGXCPU
 * (CUDASNAP_SIGNAL, if it is one of them, is cudasnap's dump signal instead.)
 *
 * The program keeps the dispositions it sets. cudasnap interposes sigaction, signal, bsd_signal,
 * sysv_signal and __sysv_signal (interpose/signal_hooks.c) for the watched signals and keeps the
 * program's disposition in a table here, answering queries from it, so the program sees exactly
 * what it installed. What the kernel
 * holds follows from it:
 *   - the program's handler, or SIG_IGN: installed as given. cudasnap is not in the way; if the
 *     handler ends the process with _exit, exit, or by restoring SIG_DFL and raising the signal
 *     again (what faulthandler, glog and breakpad do), those paths are covered there.
 *   - SIG_DFL: cudasnap's handler, which writes the snapshot (process/ending.h), restores
 *     SIG_DFL and delivers the signal again, so the process dies of it (core dump included) as it
 *     would have. (A termination signal that lands inside a CUDA call lets its thread run on with
 *     the signal blocked; the control thread ends the process of it after the snapshot.)
 *   - a handler with SA_RESETHAND (one-shot, as backward-cpp installs its own): cudasnap's handler,
 *     which does the reset itself (the program's disposition becomes SIG_DFL) and calls the
 *     program's handler; a second delivery then ends the process through cudasnap.
 * A handler the program installed before cudasnap started is thus never replaced, and one it
 * installs later replaces cudasnap's in the kernel, as it asked.
 *
 * Not seen: dispositions changed through the raw rt_sigaction system call (the Go runtime), sigset(),
 * and signals the kernel sends that no handler can catch (SIGKILL). */
#ifndef CS_SIGNALS_H
#define CS_SIGNALS_H

#include <signal.h>
#include <stdbool.h>

#include "common/cs_options.h"

/* At activation: watch the signals CUDASNAP_DUMP_ON asks for, and give the activating thread an
 * alternate signal stack if it has none (so a stack overflow still reaches the handler). */
void cs_signals_arm(const cs_options_t *opts);

/* Is sig one of the crash signals (else a termination signal)? */
bool cs_signals_is_crash(int sig);

/* libc's sigaction, past cudasnap's own (cudasnap's own handlers are installed with it). */
int cs_signals_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* End the process of sig as its default action does (SIG_DFL, delivered to this thread now). */
void cs_signals_die_of(int sig);

/* Resolve the real functions early (the constructor): a handler must not look anything up. */
void cs_signals_resolve(void);

/* fork: the child's table is its own (a vfork child, which runs no fork handler, never writes it). */
void cs_signals_postfork_child(void);

/* Whether the calling thread is inside a CUDA call (the reentrancy guard's depth, interpose/guard.h):
 * a signal from outside that lands there is deferred (process/ending.h). Installed by the boundary
 * before main; async-signal-safe. */
typedef bool (*cs_signals_in_call_fn)(void);
void cs_signals_set_in_call_fn(cs_signals_in_call_fn fn);

/* ---- for the interposers of the functions that set a disposition ---- */

typedef struct cs_sig_slot_s cs_sig_slot_t;
typedef void (*cs_signals_handler_fn)(int);

/* signal() and its variants, each with its own semantics and its own real function. */
typedef enum cs_signal_variant_e {
  CS_SIGNAL_BSD,           /* signal */
  CS_SIGNAL_BSD_SIGNAL,    /* bsd_signal */
  CS_SIGNAL_SYSV,          /* sysv_signal */
  CS_SIGNAL_SYSV_INTERNAL, /* __sysv_signal */
  CS_SIGNAL_VARIANTS
} cs_signal_variant_t;

/* The table's slot of sig when cudasnap watches it in this process, else NULL: the call is the
 * real function's. */
cs_sig_slot_t *cs_signals_watched(int sig);

/* sigaction for a watched signal: the program's action goes into the table, the kernel gets the
 * action that follows from it; *old is the program's previous one. */
int cs_signals_set(cs_sig_slot_t *s, int sig, const struct sigaction *act, struct sigaction *old);

/* The signal() variant for a watched signal, through the table; the previous handler, or SIG_ERR. */
cs_signals_handler_fn cs_signals_set_handler(cs_sig_slot_t *s, int sig, cs_signals_handler_fn handler,
                                             cs_signal_variant_t variant);

/* The real signal() variant (for a signal cudasnap does not watch). */
cs_signals_handler_fn cs_signals_real_signal(cs_signal_variant_t variant, int sig, cs_signals_handler_fn handler);

#endif
