/* SPDX-License-Identifier: Apache-2.0 */
/* When snapshots are taken: on a signal (CUDASNAP_SIGNAL) and as the process ends, through the
 * control thread (process/control.h: the pipe its handlers write one byte to); out of memory,
 * copied on the allocating thread and coalesced; at exit. The writing is process/dump_write.c's. */
#include "process/dump_internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/cs_log.h"
#include "device/contexts.h"
#include "process/control.h"
#include "process/ending.h"
#include "process/runtime.h"
#include "process/signals.h"
#include "publish/live_publish.h"

/* ---- out of memory: copied on the allocating thread, written on the control thread ----
 *
 * A program may meet OOM often and on purpose (PyTorch frees its cache and retries; cuDNN probes
 * workspaces), so an OOM costs its thread the state copy only, and the files are coalesced: the
 * first OOM of an interval is written at once (never replaced by a later OOM while it waits for the
 * control thread), later ones at most one per CS_DUMP_OOM_INTERVAL_MS, each the
 * latest OOM of its interval (the earlier ones folded into it, counted in oom_coalesced), and the
 * last OOM before the process ends is always written: by the control thread when its interval is
 * over, or else by the ending, before the final snapshot. */

enum { CS_DUMP_OOM_INTERVAL_MS = 10000 };

static pthread_mutex_t cs_dump_oom_lock = PTHREAD_MUTEX_INITIALIZER;
static cs_dump_copy_t cs_dump_oom_due;      /* an OOM's copy to write at once: the first of an interval,
                                               never replaced by a later OOM (state NULL: none) */
static cs_dump_copy_t cs_dump_oom_pending;  /* the latest OOM's copy, not written yet (state NULL: none) */
static uint64_t cs_dump_oom_folded;         /* OOMs replaced by a later one since the last written */
static uint64_t cs_dump_oom_next_ms;        /* monotonic ms before which no OOM snapshot is written */
static int64_t cs_dump_oom_latest;          /* the successful allocations at the latest OOM */

static uint64_t cs_dump_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void cs_dump_on_oom(void) {
  if (!(cs_runtime_options()->dump_on & CS_DUMP_ON_OOM)) return;
  cs_dump_how_t how = {.trigger = CS_TRIGGER_OOM, .snapshot = true};
  cs_dump_copy_t copy;
  if (cs_dump_copy_take(&copy, &how) != 0) return;
  pthread_mutex_lock(&cs_dump_oom_lock);
  const uint64_t now = cs_dump_now_ms();
  if (!cs_dump_oom_due.state && !cs_dump_oom_pending.state && now >= cs_dump_oom_next_ms) {
    /* the first of an interval is written at once, whatever comes before the control thread
     * takes it (1,000 OOMs in a loop came in 2 ms: the first was replaced by the last) */
    cs_dump_oom_due = copy;
    cs_dump_oom_next_ms = now + CS_DUMP_OOM_INTERVAL_MS;
  } else {
    if (cs_dump_oom_pending.state) {
      cs_dump_copy_free(&cs_dump_oom_pending);
      cs_dump_oom_folded++;
    }
    cs_dump_oom_pending = copy;
  }
  cs_dump_oom_latest = copy.allocations;
  pthread_mutex_unlock(&cs_dump_oom_lock);
  cs_control_send('o');
}

/* Held from taking an OOM copy out of the pending slot to the end of its write. The final snapshot
 * waits for a write under way: the copy has left the slot, and the process's end would otherwise
 * cut it off, its OOM snapshot lost (seen once in a dozen runs of an OOM just before exit). The
 * program's threads never take it: at an OOM they only fill the slot. */
static pthread_mutex_t cs_dump_oom_write_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic long cs_dump_oom_writer; /* the thread id holding it, 0: none */

enum { CS_DUMP_OOM_WRITE_WAIT_S = 10 }; /* the longest an ending waits for an OOM snapshot's write */

/* false: the lock could not be had in time (or this thread holds it: a fault inside the write). */
static bool cs_dump_oom_write_begin(bool ending) {
  const long self = (long)syscall(SYS_gettid);
  if (atomic_load(&cs_dump_oom_writer) == self) return false;
  if (!ending) {
    pthread_mutex_lock(&cs_dump_oom_write_lock);
  } else {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += CS_DUMP_OOM_WRITE_WAIT_S;
    if (pthread_mutex_timedlock(&cs_dump_oom_write_lock, &until) != 0) {
      cs_log_warn("the OOM snapshot being written did not finish in %d s; the last snapshot does not wait for it",
                  CS_DUMP_OOM_WRITE_WAIT_S);
      return false;
    }
  }
  atomic_store(&cs_dump_oom_writer, self);
  return true;
}

static void cs_dump_oom_write_end(bool began) {
  if (!began) return;
  atomic_store(&cs_dump_oom_writer, 0);
  pthread_mutex_unlock(&cs_dump_oom_write_lock);
}

/* The copy to write now, if any, into *copy and *note: the one due at once first, else the latest
 * if its interval allows (or the process ends). pre: cs_dump_oom_lock held. */
static bool cs_dump_oom_take(bool ending, uint64_t now, cs_dump_copy_t *copy, cs_dump_oom_note_t *note, bool *due) {
  *due = cs_dump_oom_due.state != NULL;
  if (*due) {
    *copy = cs_dump_oom_due;
    cs_dump_oom_due.state = NULL;
    *note = (cs_dump_oom_note_t){.coalesced = 0};
    return true;
  }
  if (!cs_dump_oom_pending.state || (!ending && now < cs_dump_oom_next_ms)) return false;
  *copy = cs_dump_oom_pending;
  cs_dump_oom_pending.state = NULL;
  *note = (cs_dump_oom_note_t){.coalesced = cs_dump_oom_folded};
  cs_dump_oom_folded = 0;
  cs_dump_oom_next_ms = now + CS_DUMP_OOM_INTERVAL_MS;
  return true;
}

/* Write the OOM copies whose time has come: the one due at once, then the latest if its interval
 * is over; each slot once, since the program's threads may go on meeting OOMs while it writes (a
 * termination signal's ending). Returns the milliseconds until the latest may be written (0: none
 * is left). ending: the process ends, so both are written now, and an allocation that has not
 * succeeded since an OOM never will. */
static uint64_t cs_dump_oom_flush(bool ending) {
  const bool began = cs_dump_oom_write_begin(ending);
  for (bool due = true; due;) {
    pthread_mutex_lock(&cs_dump_oom_lock);
    const uint64_t now = cs_dump_now_ms();
    cs_dump_copy_t copy;
    cs_dump_oom_note_t note;
    if (!cs_dump_oom_take(ending, now, &copy, &note, &due)) {
      const uint64_t wait = cs_dump_oom_pending.state ? cs_dump_oom_next_ms - now : 0;
      pthread_mutex_unlock(&cs_dump_oom_lock);
      cs_dump_oom_write_end(began);
      return wait;
    }
    int64_t latest = cs_dump_oom_latest; /* under the lock: an OOM on another thread writes it */
    pthread_mutex_unlock(&cs_dump_oom_lock);
    /* recovered: an allocation succeeded after this OOM (a later OOM's copy knows as much) */
    int64_t since = cs_contexts_allocations(CS_DUMP_LOCK_WAIT_MS);
    if (latest > copy.allocations || since > copy.allocations) note.recovered = CS_OOM_RECOVERED;
    else if (ending && since >= 0) note.recovered = CS_OOM_NOT_RECOVERED;
    cs_dump_how_t how = {.trigger = CS_TRIGGER_OOM, .snapshot = true, .ending = ending};
    (void)cs_dump_run_copy(&copy, &how, &note);
    cs_dump_copy_free(&copy);
  }
  cs_dump_oom_write_end(began); /* the latest written: the next OOM starts the wait again */
  return 0;
}

/* ---- the final snapshot: at exit, or as the process ends otherwise ---- */

static uint32_t cs_dump_on_bit(cs_trigger_t trigger) {
  switch (trigger) {
  case CS_TRIGGER_CRASH: return CS_DUMP_ON_CRASH;
  case CS_TRIGGER_TERM: return CS_DUMP_ON_TERM;
  default: return CS_DUMP_ON_EXIT;
  }
}

/* The snapshot if CUDASNAP_DUMP_ON has the trigger, and the leak report in any case; once. */
static void cs_dump_final(cs_trigger_t trigger) {
  if (!cs_dump_final_begin()) return;
  (void)cs_dump_oom_flush(true); /* the last OOM before the end, if not written yet */
  cs_dump_how_t how = {.trigger = trigger, .snapshot = (cs_runtime_options()->dump_on & cs_dump_on_bit(trigger)) != 0,
                       .leaks = true, .ending = true};
  (void)cs_dump_run(&how);
  cs_dump_final_end();
  cs_live_publish_end();
}

/* Runs from exit() (and quick_exit()); the CUDA runtime may already be torn down, and nothing here
 * calls CUDA. Another thread may be stuck in the driver under an allocator's lock (a watchdog
 * calls exit() on a hung device), or this one may hold it (exit() from a signal handler that
 * interrupted cudasnap): the locks are waited for with a bound, as by every snapshot. */
static void cs_dump_at_exit(void) {
  if (!cs_control_owns_process()) return; /* a fork child's inherited handler */
  cs_ending_await_deferred();          /* a termination signal came first: it ends the process */
  cs_dump_final(CS_TRIGGER_EXIT);
}

/* ---- the control thread: snapshots on signal, and endings; handlers write one byte ---- */

static int cs_dump_signal;                /* CUDASNAP_SIGNAL once its handler is installed, else 0 */
static struct sigaction cs_dump_previous; /* the program's action for it before cudasnap's */

/* sa_flags is an int, and SA_RESETHAND is glibc's unsigned top bit. */
#define CS_SA(flags) ((int)(flags))

/* The dump signal's handler. The action the program had before stays in force otherwise: its
 * handler runs (with its mask and flags, which the kernel got with cudasnap's handler), and a
 * one-shot one (SA_RESETHAND) runs once, as without cudasnap; from then on, as when the program
 * had SIG_DFL, the signal only asks for a snapshot. */
static void cs_dump_on_signal(int sig, siginfo_t *info, void *uctx) {
  cs_control_send('s');
  struct sigaction previous = cs_dump_previous;
  if (previous.sa_flags & CS_SA(SA_RESETHAND)) {
    memset(&cs_dump_previous, 0, sizeof cs_dump_previous); /* SIG_DFL */
    sigemptyset(&cs_dump_previous.sa_mask);
  }
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) previous.sa_sigaction(sig, info, uctx);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  }
}

static void *cs_dump_control_thread(void *arg) {
  (void)arg;
  cs_control_thread_begins();
  /* Every signal stays blocked here except the faults: one inside a dump must reach cudasnap's
   * handler, which lets a waiting ending thread end the process of its own cause. */
  sigset_t faults;
  sigemptyset(&faults);
  sigaddset(&faults, SIGSEGV);
  sigaddset(&faults, SIGBUS);
  sigaddset(&faults, SIGFPE);
  sigaddset(&faults, SIGILL);
  pthread_sigmask(SIG_UNBLOCK, &faults, NULL);
  char token;
  uint64_t oom_wait_ms = 0; /* a pending OOM snapshot is due in this long (0: none pending) */
  for (;;) {
    /* the next due of the pending OOM snapshot and of the live record's publication */
    int live_wait = cs_live_publish_wait_ms();
    int wait = oom_wait_ms ? (int)oom_wait_ms : -1;
    if (live_wait >= 0 && (wait < 0 || live_wait < wait)) wait = live_wait;
    cs_control_wait_t got = cs_control_receive(wait, &token);
    if (got == CS_CONTROL_TIMEOUT) { /* an OOM's interval is over, or the live record is due */
      if (oom_wait_ms) oom_wait_ms = cs_dump_oom_flush(false);
      cs_live_publish_tick();
      continue;
    }
    if (got == CS_CONTROL_CLOSED) return NULL;
    if (got == CS_CONTROL_TOKEN) {
      cs_trigger_t ending;
      if (cs_ending_take(&ending)) {
        cs_dump_final(ending);
        /* a final snapshot started elsewhere (exit() on another thread) is waited for */
        while (!cs_dump_final_finished()) {
          struct timespec ms = {.tv_sec = 0, .tv_nsec = 10000000};
          nanosleep(&ms, NULL);
        }
        int deferred = cs_ending_deferred_signal();
        cs_ending_served();
        if (deferred) cs_signals_die_of(deferred);
        return NULL; /* the process is ending */
      }
      if (token == 's') (void)cs_dump_write(CS_TRIGGER_SIGNAL, NULL);
      /* At every wake-up, not only an OOM's: the wait left is measured from the OOM's interval,
       * so that other requests (a signal every few seconds) never postpone a pending OOM. */
      if (token == 'o' || oom_wait_ms) oom_wait_ms = cs_dump_oom_flush(false);
      cs_live_publish_tick(); /* a stream of requests must not hold the publication back */
    }
  }
}

static void cs_dump_start_signal(int sig) {
  /* A fork child that activates again finds the handler it inherited (cs_dump_postfork_child
   * puts the program's back only where it was still cudasnap's): keep it, or it would chain to
   * itself. */
  struct sigaction current;
  if (cs_signals_real_sigaction(sig, NULL, &current) != 0) current.sa_flags = 0;
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == cs_dump_on_signal) return;
  /* The program's mask and delivery flags stay (a handler that relies on them still gets them);
   * the one-shot reset is cs_dump_on_signal's to do, and a restarting handler keeps the
   * program's system calls from seeing a snapshot request. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = cs_dump_on_signal;
  bool program_handler = current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN;
  int kept = CS_SA(SA_NODEFER | SA_ONSTACK) | (program_handler ? SA_RESTART : 0);
  sa.sa_flags = SA_SIGINFO | (current.sa_flags & kept) | (program_handler ? 0 : SA_RESTART);
  sa.sa_mask = current.sa_mask;
  if (!program_handler) sigemptyset(&sa.sa_mask);
  if (cs_signals_real_sigaction(sig, &sa, &cs_dump_previous) != 0) {
    cs_log_warn("cannot install the handler for signal %d (%s)", sig, strerror(errno));
    return;
  }
  cs_dump_signal = sig;
}

void cs_dump_start(void) {
  static atomic_bool exit_handler_registered;
  const cs_options_t *opts = cs_runtime_options();
  cs_control_own_process();
  if (!atomic_exchange(&exit_handler_registered, true)) {
    atexit(cs_dump_at_exit);
    at_quick_exit(cs_dump_at_exit);
  }
  cs_control_start(cs_dump_control_thread);
  if ((opts->dump_on & CS_DUMP_ON_SIGNAL) && opts->signal > 0) cs_dump_start_signal(opts->signal);
  cs_live_publish_start(opts, cs_runtime_job()); /* the registration, once the signal it names is handled */
  cs_control_send('l'); /* the control thread waits with the live record's interval from now on */
}

void cs_dump_postfork_child(void) {
  cs_dump_write_postfork_child();
  cs_live_publish_postfork_child();
  /* the parent's OOM is not the child's to write */
  pthread_mutex_init(&cs_dump_oom_lock, NULL);
  pthread_mutex_init(&cs_dump_oom_write_lock, NULL); /* the parent's writer is not here */
  atomic_store(&cs_dump_oom_writer, 0);
  cs_dump_copy_free(&cs_dump_oom_due);
  cs_dump_copy_free(&cs_dump_oom_pending);
  cs_dump_oom_folded = 0;
  cs_dump_oom_next_ms = 0;
  cs_dump_oom_latest = 0;
  cs_control_postfork_child();
  /* Until it uses CUDA itself, the child has the dump signal's disposition it would have without
   * cudasnap (kill -USR1 ends a multiprocessing worker that kept SIG_DFL); unless the program has
   * replaced cudasnap's handler since, which stays. */
  struct sigaction current;
  if (cs_dump_signal > 0 && cs_signals_real_sigaction(cs_dump_signal, NULL, &current) == 0 &&
      (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == cs_dump_on_signal)
    (void)cs_signals_real_sigaction(cs_dump_signal, &cs_dump_previous, NULL);
  cs_dump_signal = 0;
}
