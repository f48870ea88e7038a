/* SPDX-License-Identifier: Apache-2.0 */
#include "process/ending.h"

#include <limits.h>
#include <signal.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/cs_log.h"
#include "process/control.h"

/* The handshake between the ending thread and the control thread. Everything here is atomics,
 * futex and clock calls: the ending thread may be in a signal handler. */
enum {
  CS_ENDING_IDLE = 0,
  CS_ENDING_REQUESTED = 1, /* the ending thread asked, the control thread has not started */
  CS_ENDING_SERVING = 2,   /* the control thread is writing */
  CS_ENDING_DONE = 3,      /* written, or nothing to write */
  CS_ENDING_FAILED = 4,    /* a fault inside the dump */
  CS_ENDING_STALLED = 5,   /* (a wait's answer only) no progress for CS_ENDING_STALL_MS */
};

/* After the first ending's dump, a second ending thread waits this long for the first to end the
 * process, so that the process ends of the first cause. */
enum { CS_ENDING_GRACE_MS = 1000, CS_ENDING_SLICE_MS = 50 };

/* A termination signal this soon after the one that started the ending is the same request again,
 * not a person who will not wait: Ctrl-C reaches every process of the terminal's group and the
 * launcher (torchrun, srun, mpirun) forwards it again; mpirun turns it into SIGTERM; Slurm signals
 * every process of a step. A person pressing Ctrl-C again takes longer than this. */
enum { CS_ENDING_REPEAT_MS = 250 };

static atomic_long cs_ending_thread; /* the thread ending the process, 0 before */
static atomic_int cs_ending_trigger;
static atomic_int cs_ending_phase;    /* a futex word */
static atomic_int cs_ending_deferred; /* the signal of a deferred ending (cs_ending_defer), or 0 */
static atomic_int cs_ending_first_signal;    /* the termination signal that started the ending, or 0 */
static _Atomic uint64_t cs_ending_first_ms;  /* when it came (monotonic) */

static long cs_ending_gettid(void) { return (long)syscall(SYS_gettid); }

static uint64_t cs_ending_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void cs_ending_wake_all(void) {
  (void)syscall(SYS_futex, (int *)&cs_ending_phase, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Until the ending's dump is done or failed, or has made no progress for CS_ENDING_STALL_MS
 * (any dump's progress counts: the control thread may first wait for a dump under way). */
static int cs_ending_wait(void) {
  uint64_t progress = cs_dump_progress();
  uint64_t quiet_since = cs_ending_now_ms();
  for (;;) {
    int phase = atomic_load(&cs_ending_phase);
    if (phase == CS_ENDING_DONE || phase == CS_ENDING_FAILED) return phase;
    struct timespec slice = {.tv_sec = 0, .tv_nsec = CS_ENDING_SLICE_MS * 1000000L};
    (void)syscall(SYS_futex, (int *)&cs_ending_phase, FUTEX_WAIT_PRIVATE, phase, &slice, NULL, 0);
    uint64_t now = cs_ending_now_ms(), p = cs_dump_progress();
    if (p != progress) {
      progress = p;
      quiet_since = now;
    } else if (now - quiet_since >= CS_ENDING_STALL_MS) {
      return CS_ENDING_STALLED;
    }
  }
}

static void cs_ending_sleep_ms(long ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Another ending is under way: it ends the process once its snapshot is written. Wait for that,
 * and a little more, so that the process ends of the first cause. */
static void cs_ending_wait_for_first(void) {
  (void)cs_ending_wait();
  cs_ending_sleep_ms(CS_ENDING_GRACE_MS);
}

/* The termination signals by name, for the line below (strsignal is not async-signal-safe). */
static const char *cs_ending_signal_name(int sig) {
  switch (sig) {
  case SIGTERM: return "SIGTERM";
  case SIGINT: return "SIGINT";
  case SIGHUP: return "SIGHUP";
  case SIGQUIT: return "SIGQUIT";
  case SIGXCPU: return "SIGXCPU";
  default: return "a signal";
  }
}

/* An ending started by a termination signal: remember which and when, for cs_ending_repeat. */
static void cs_ending_note_first(cs_trigger_t trigger, int sig) {
  if (trigger != CS_TRIGGER_TERM || sig <= 0) return;
  atomic_store(&cs_ending_first_ms, cs_ending_now_ms());
  atomic_store(&cs_ending_first_signal, sig);
}

/* Is this termination signal the ending's own request again (CS_ENDING_REPEAT_MS)? */
static bool cs_ending_repeat(cs_trigger_t trigger, int sig) {
  if (trigger != CS_TRIGGER_TERM || sig <= 0 || !atomic_load(&cs_ending_first_signal)) return false;
  return cs_ending_now_ms() - atomic_load(&cs_ending_first_ms) < CS_ENDING_REPEAT_MS;
}

/* A termination signal while another ending's snapshot is written: someone (a second Ctrl-C) will
 * not wait for it. The process ends now, and the unfinished file is removed; the user learns why
 * there is no snapshot, and what survives such an ending. */
static bool cs_ending_impatient(cs_trigger_t trigger, int sig) {
  if (trigger != CS_TRIGGER_TERM) return false;
  cs_dump_abandon();
  int first = atomic_load(&cs_ending_first_signal);
  if (first) {
    uint64_t after = cs_ending_now_ms() - atomic_load(&cs_ending_first_ms);
    cs_log_error("snapshot abandoned: %s came %llu.%02llu s after %s and ends the process now; a recording "
                 "(CUDASNAP_RECORD=PATH, then cudasnap recover) survives such endings",
                 cs_ending_signal_name(sig), (unsigned long long)(after / 1000),
                 (unsigned long long)(after % 1000 / 10), cs_ending_signal_name(first));
  } else {
    cs_log_error("snapshot abandoned: %s during a snapshot ends the process now; a recording "
                 "(CUDASNAP_RECORD=PATH, then cudasnap recover) survives such endings",
                 cs_ending_signal_name(sig));
  }
  return true;
}

bool cs_ending_run(cs_trigger_t trigger, int sig) {
  if (!cs_control_owns_process()) return true;
  if (atomic_load(&cs_ending_thread) && cs_ending_repeat(trigger, sig)) return false;
  if (atomic_load(&cs_ending_deferred)) { /* the control thread ends the process */
    if (!cs_ending_impatient(trigger, sig)) cs_ending_wait_for_first();
    return true;
  }
  if (cs_dump_running_here()) { /* a fault inside the dump, or a termination signal during it */
    (void)cs_ending_impatient(trigger, sig);
    return true;
  }
  if (cs_dump_final_finished()) return true;
  long self = cs_ending_gettid();
  long first = 0;
  if (!atomic_compare_exchange_strong(&cs_ending_thread, &first, self)) {
    if (first == self) { /* a fault in the ending path itself, or a second Ctrl-C: end at once */
      (void)cs_ending_impatient(trigger, sig);
      return true;
    }
    if (!cs_ending_impatient(trigger, sig)) cs_ending_wait_for_first();
    return true;
  }
  cs_ending_note_first(trigger, sig);
  if (!cs_control_running()) return true; /* said at start: no thread to write it */
  atomic_store(&cs_ending_trigger, (int)trigger);
  atomic_store(&cs_ending_phase, CS_ENDING_REQUESTED);
  cs_control_wake();
  int phase = cs_ending_wait();
  if (phase == CS_ENDING_DONE) return true;
  cs_dump_abandon(); /* no partial file is left behind */
  if (phase == CS_ENDING_FAILED)
    cs_log_error("no snapshot at %s: cudasnap's dump faulted", cs_dump_trigger_name(trigger));
  else
    cs_log_error("no snapshot at %s: the dump made no progress for %d s (a lock held by the ending thread?)",
                 cs_dump_trigger_name(trigger), CS_ENDING_STALL_MS / 1000);
  return true;
}

bool cs_ending_defer(int sig, cs_trigger_t trigger) {
  if (!cs_control_owns_process() || cs_dump_running_here() || cs_dump_final_started() || !cs_control_running())
    return false;
  long first = 0;
  if (!atomic_compare_exchange_strong(&cs_ending_thread, &first, cs_ending_gettid())) return false;
  cs_ending_note_first(trigger, sig);
  atomic_store(&cs_ending_deferred, sig);
  atomic_store(&cs_ending_trigger, (int)trigger);
  atomic_store(&cs_ending_phase, CS_ENDING_REQUESTED);
  cs_control_wake();
  return true;
}

int cs_ending_deferred_signal(void) { return atomic_load(&cs_ending_deferred); }

void cs_ending_await_deferred(void) {
  if (atomic_load(&cs_ending_deferred)) cs_ending_wait_for_first();
}

int cs_ending_control_fault(void) {
  int phase = atomic_load(&cs_ending_phase);
  if (phase != CS_ENDING_REQUESTED && phase != CS_ENDING_SERVING) return 0;
  int deferred = atomic_load(&cs_ending_deferred);
  if (deferred) {
    /* nobody waits: this thread ends the process, of the signal that asked for the snapshot */
    cs_dump_abandon();
    cs_log_error("no snapshot at %s: cudasnap's dump faulted",
                 cs_dump_trigger_name((cs_trigger_t)atomic_load(&cs_ending_trigger)));
    return deferred;
  }
  atomic_store(&cs_ending_phase, CS_ENDING_FAILED);
  cs_ending_wake_all();
  /* The ending thread ends the process now; this thread must not run on from its fault. */
  for (;;) pause();
}

bool cs_ending_take(cs_trigger_t *trigger) {
  int expected = CS_ENDING_REQUESTED;
  if (!atomic_compare_exchange_strong(&cs_ending_phase, &expected, CS_ENDING_SERVING)) return false;
  *trigger = (cs_trigger_t)atomic_load(&cs_ending_trigger);
  return true;
}

void cs_ending_served(void) {
  atomic_store(&cs_ending_phase, CS_ENDING_DONE);
  cs_ending_wake_all();
}

void cs_ending_postfork_child(void) {
  atomic_store(&cs_ending_thread, 0);
  atomic_store(&cs_ending_deferred, 0);
  atomic_store(&cs_ending_first_signal, 0);
  atomic_store(&cs_ending_phase, CS_ENDING_IDLE);
}
