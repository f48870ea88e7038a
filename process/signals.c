/* SPDX-License-Identifier: Apache-2.0 */
#include "process/signals.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/cs_cpu_relax.h"
#include "common/cs_log.h"
#include "process/control.h"
#include "process/dump.h"
#include "process/ending.h"
#include "real/libc_dlsym.h"

static const int cs_crash_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
static const int cs_term_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGXCPU};

/* Signals a fault raises synchronously: never blocked in cudasnap's handler, so a fault inside it
 * is handled (and ends the process of the first cause) rather than killing it outright. */
static const int cs_fault_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};

enum { CS_SIG_SLOTS = 65 }; /* signal numbers 1..64 */

/* sa_flags is an int, and some of glibc's SA_ constants are unsigned (SA_RESETHAND is the top bit). */
#define CS_SA(flags) ((int)(flags))

/* What the program believes is installed for one watched signal. Written under cs_sig_lock with
 * every signal blocked; read by the handler without a lock: seq is odd while a write is under way,
 * and a read that saw it change is repeated. */
struct cs_sig_slot_s {
  atomic_bool watched;
  atomic_uint seq;
  struct sigaction program;
};

static cs_sig_slot_t cs_sig_slots[CS_SIG_SLOTS];
static atomic_flag cs_sig_lock = ATOMIC_FLAG_INIT;
static atomic_bool cs_sig_armed;   /* some signal is watched: the interposers look at the table */
static atomic_long cs_sig_pid;     /* the process the table belongs to */
static _Atomic(cs_signals_in_call_fn) cs_sig_in_call; /* cs_signals_set_in_call_fn */

void cs_signals_set_in_call_fn(cs_signals_in_call_fn fn) {
  atomic_store_explicit(&cs_sig_in_call, fn, memory_order_release);
}

/* Is this thread inside a CUDA call, as the boundary tells (false until it is told)? */
static bool cs_signals_in_call(void) {
  cs_signals_in_call_fn fn = atomic_load_explicit(&cs_sig_in_call, memory_order_acquire);
  return fn && fn();
}

/* ---- the real functions, found once (a handler or a vfork child must not look them up) ---- */

typedef int (*cs_sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef cs_signals_handler_fn (*cs_signal_fn)(int, cs_signals_handler_fn);

static _Atomic(cs_sigaction_fn) cs_real_sigaction_fn;
static _Atomic(cs_signal_fn) cs_real_signal_fns[CS_SIGNAL_VARIANTS];
static const char *const cs_signal_fn_names[CS_SIGNAL_VARIANTS] = {
    [CS_SIGNAL_BSD] = "signal", [CS_SIGNAL_BSD_SIGNAL] = "bsd_signal", [CS_SIGNAL_SYSV] = "sysv_signal",
    [CS_SIGNAL_SYSV_INTERNAL] = "__sysv_signal"};

static void *cs_signals_next(const char *name) { return cs_libc_dlsym(RTLD_NEXT, name); }

#define CS_SIG_RESOLVE(slot, type, name)                                                          \
  do {                                                                                            \
    if (!atomic_load_explicit(&slot, memory_order_acquire)) {                                     \
      void *p_ = cs_signals_next(name);                                                           \
      type fn_;                                                                                   \
      memcpy(&fn_, &p_, sizeof fn_);                                                              \
      atomic_store_explicit(&slot, fn_, memory_order_release);                                    \
    }                                                                                             \
  } while (0)

void cs_signals_resolve(void) {
  CS_SIG_RESOLVE(cs_real_sigaction_fn, cs_sigaction_fn, "sigaction");
  CS_SIG_RESOLVE(cs_real_signal_fns[CS_SIGNAL_BSD], cs_signal_fn, "signal");
  CS_SIG_RESOLVE(cs_real_signal_fns[CS_SIGNAL_BSD_SIGNAL], cs_signal_fn, "bsd_signal");
  CS_SIG_RESOLVE(cs_real_signal_fns[CS_SIGNAL_SYSV], cs_signal_fn, "sysv_signal");
  CS_SIG_RESOLVE(cs_real_signal_fns[CS_SIGNAL_SYSV_INTERNAL], cs_signal_fn, "__sysv_signal");
}

int cs_signals_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  CS_SIG_RESOLVE(cs_real_sigaction_fn, cs_sigaction_fn, "sigaction");
  cs_sigaction_fn fn = atomic_load_explicit(&cs_real_sigaction_fn, memory_order_acquire);
  if (!fn) {
    errno = ENOSYS;
    return -1;
  }
  return fn(sig, act, old);
}

cs_signals_handler_fn cs_signals_real_signal(cs_signal_variant_t variant, int sig, cs_signals_handler_fn handler) {
  _Atomic(cs_signal_fn) *slot = &cs_real_signal_fns[variant];
  cs_signal_fn fn = atomic_load_explicit(slot, memory_order_acquire);
  if (!fn) {
    void *p = cs_signals_next(cs_signal_fn_names[variant]);
    memcpy(&fn, &p, sizeof fn);
    atomic_store_explicit(slot, fn, memory_order_release);
  }
  if (!fn) {
    errno = ENOSYS;
    return SIG_ERR;
  }
  return fn(sig, handler);
}

/* ---- the table ---- */

static bool cs_signals_in(const int *set, size_t n, int sig) {
  for (size_t i = 0; i < n; i++)
    if (set[i] == sig) return true;
  return false;
}

bool cs_signals_is_crash(int sig) { return cs_signals_in(cs_crash_signals, CS_ARRAY_SIZE(cs_crash_signals), sig); }

static cs_sig_slot_t *cs_signals_slot(int sig) {
  if (sig <= 0 || sig >= CS_SIG_SLOTS) return NULL;
  return &cs_sig_slots[sig];
}

/* The table applies in the process that armed it and its fork children, not in a vfork child
 * (which shares this memory with its parent and must not write it). */
cs_sig_slot_t *cs_signals_watched(int sig) {
  if (!atomic_load_explicit(&cs_sig_armed, memory_order_acquire)) return NULL;
  cs_sig_slot_t *s = cs_signals_slot(sig);
  if (!s || !atomic_load_explicit(&s->watched, memory_order_acquire)) return NULL;
  if (getpid() != atomic_load(&cs_sig_pid)) return NULL;
  return s;
}

static void cs_signals_lock(sigset_t *saved) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, saved);
  while (atomic_flag_test_and_set_explicit(&cs_sig_lock, memory_order_acquire)) cs_cpu_relax();
}

static void cs_signals_unlock(const sigset_t *saved) {
  atomic_flag_clear_explicit(&cs_sig_lock, memory_order_release);
  int err = errno;
  pthread_sigmask(SIG_SETMASK, saved, NULL);
  errno = err;
}

static void cs_signals_write(cs_sig_slot_t *s, const struct sigaction *act) {
  unsigned seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
  atomic_store_explicit(&s->seq, seq + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  memcpy(&s->program, act, sizeof *act);
  atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
}

static void cs_signals_read(cs_sig_slot_t *s, struct sigaction *out) {
  for (int tries = 0; tries < 100000; tries++) {
    unsigned seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (seq & 1u) {
      cs_cpu_relax();
      continue;
    }
    memcpy(out, &s->program, sizeof *out);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&s->seq, memory_order_relaxed) == seq) return;
  }
  memcpy(out, &s->program, sizeof *out); /* a writer that never finishes: take what is there */
}

/* ---- the handler ---- */

static void cs_signals_handler(int sig, siginfo_t *info, void *uctx);

/* What the kernel gets when the program's disposition is SIG_DFL: cudasnap's handler, on the
 * alternate stack where there is one (a stack overflow), with every signal blocked while it runs
 * but the faults and the termination signals. A fault inside it is handled (and ends the process
 * of the first cause); a termination signal (a second Ctrl-C, another kill) reaches the waiting
 * ending thread, nested, whose give-up path ends the process at once (cs_ending_run). */
static void cs_signals_default_action(int sig, struct sigaction *kernel) {
  memset(kernel, 0, sizeof *kernel);
  kernel->sa_sigaction = cs_signals_handler;
  kernel->sa_flags = CS_SA(SA_SIGINFO | SA_ONSTACK | SA_RESTART);
  if (!cs_signals_is_crash(sig)) kernel->sa_flags |= CS_SA(SA_NODEFER); /* the same signal again too */
  sigfillset(&kernel->sa_mask);
  for (size_t i = 0; i < CS_ARRAY_SIZE(cs_fault_signals); i++) sigdelset(&kernel->sa_mask, cs_fault_signals[i]);
  for (size_t i = 0; i < CS_ARRAY_SIZE(cs_term_signals); i++) sigdelset(&kernel->sa_mask, cs_term_signals[i]);
}

/* The kernel's action for the program's (see signals.h). */
static void cs_signals_kernel_action(int sig, const struct sigaction *program, struct sigaction *kernel) {
  if (program->sa_handler == SIG_DFL) {
    cs_signals_default_action(sig, kernel);
    return;
  }
  *kernel = *program;
  if (program->sa_handler != SIG_IGN && (program->sa_flags & CS_SA(SA_RESETHAND))) {
    kernel->sa_sigaction = cs_signals_handler;
    kernel->sa_flags = (program->sa_flags & ~CS_SA(SA_RESETHAND)) | SA_SIGINFO;
  }
}

/* A one-shot handler is being called: the program's disposition is SIG_DFL from now on, as the
 * kernel would have made it, and the kernel gets cudasnap's handler for SIG_DFL. */
static void cs_signals_spend_one_shot(cs_sig_slot_t *s, int sig) {
  struct sigaction dfl, kernel;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  cs_signals_default_action(sig, &kernel);
  sigset_t saved;
  cs_signals_lock(&saved);
  cs_signals_write(s, &dfl);
  (void)cs_signals_real_sigaction(sig, &kernel, NULL);
  cs_signals_unlock(&saved);
}

/* End the process of sig, as its default action would have: SIG_DFL, the signal delivered again
 * (with its original siginfo where the kernel allows, so a core dump shows the fault's address),
 * and unblocked on this thread only, so that it, and no other pending signal, ends the process
 * now. */
static void cs_signals_die(int sig, siginfo_t *info) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  (void)cs_signals_real_sigaction(sig, &dfl, NULL);
  pid_t pid = getpid();
  long tid = (long)syscall(SYS_gettid);
  bool queued = false;
  if (info && tid == (long)pid) { /* the kernel takes a siginfo it did not write only from the main thread */
    siginfo_t copy = *info;
    queued = syscall(SYS_rt_tgsigqueueinfo, (long)pid, tid, sig, &copy) == 0;
  }
  if (!queued) (void)syscall(SYS_tgkill, (long)pid, tid, sig);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  pthread_sigmask(SIG_UNBLOCK, &only, NULL);
  /* Still here: the signal is held (a tracer). Returning delivers it when the mask is restored. */
}

void cs_signals_die_of(int sig) { cs_signals_die(sig, NULL); }

/* Does the signal say nothing about what this thread was doing, so that the thread may run on? A
 * termination signal, or a crash signal sent by another process (`kill -ABRT`, `timeout -s SEGV`);
 * not a fault, nor an abort() of this process. */
static bool cs_signals_from_outside(int sig, const siginfo_t *info) {
  if (!cs_signals_is_crash(sig)) return true;
  return info && (info->si_code == SI_USER || info->si_code == SI_QUEUE) && info->si_pid != getpid();
}

static void cs_signals_handler(int sig, siginfo_t *info, void *uctx) {
  int saved_errno = errno;
  cs_sig_slot_t *s = cs_signals_slot(sig);
  struct sigaction program;
  memset(&program, 0, sizeof program);
  if (s) cs_signals_read(s, &program);
  if (program.sa_handler == SIG_IGN) {
    errno = saved_errno;
    return;
  }
  if (program.sa_handler != SIG_DFL) {
    /* the program's handler: a one-shot one, or one installed while this signal was on its way */
    if (program.sa_flags & CS_SA(SA_RESETHAND)) cs_signals_spend_one_shot(s, sig);
    errno = saved_errno;
    if (program.sa_flags & SA_SIGINFO) program.sa_sigaction(sig, info, uctx);
    else program.sa_handler(sig);
    return;
  }
  /* SIG_DFL: the process ends here. */
  if (cs_control_is_this_thread()) {
    int deferred = cs_ending_control_fault(); /* a fault inside cudasnap's dump */
    if (deferred) {
      cs_signals_die(deferred, NULL);
      return;
    }
  } else if (cs_signals_in_call() && uctx && cs_signals_from_outside(sig, info) &&
             cs_ending_defer(sig, cs_signals_is_crash(sig) ? CS_TRIGGER_CRASH : CS_TRIGGER_TERM)) {
    /* a signal from outside, inside a CUDA call: this thread runs on, and the control thread ends
     * the process once the snapshot is written. A crash signal stays blocked here meanwhile; a
     * termination signal does not, so that another one (a second Ctrl-C) ends the process at
     * once (cs_ending_run). */
    if (cs_signals_is_crash(sig)) sigaddset(&((ucontext_t *)uctx)->uc_sigmask, sig);
    errno = saved_errno;
    return;
  } else if (!cs_ending_run(cs_signals_is_crash(sig) ? CS_TRIGGER_CRASH : CS_TRIGGER_TERM, sig)) {
    errno = saved_errno; /* the ending's own request again: the ending under way ends the process */
    return;
  }
  cs_signals_die(sig, info);
  errno = saved_errno;
}

/* ---- what the interposers set (interpose/signal_hooks.c) ---- */

int cs_signals_set(cs_sig_slot_t *s, int sig, const struct sigaction *act, struct sigaction *old) {
  sigset_t saved;
  cs_signals_lock(&saved);
  struct sigaction previous = s->program;
  int rc = 0;
  if (act) {
    struct sigaction kernel;
    cs_signals_kernel_action(sig, act, &kernel);
    cs_signals_write(s, act); /* first: a signal arriving now at cudasnap's handler sees the new one */
    rc = cs_signals_real_sigaction(sig, &kernel, NULL);
    if (rc != 0) cs_signals_write(s, &previous);
  }
  cs_signals_unlock(&saved);
  if (rc == 0 && old) *old = previous;
  return rc;
}

/* signal() and its variants: the action glibc builds for each. BSD semantics (glibc's signal and
 * bsd_signal): restarting, the signal blocked in its handler. System V semantics (sysv_signal, and
 * signal() under strict ISO C or XOPEN, which glibc's header turns into __sysv_signal): one-shot,
 * not blocked in its handler, not restarting. */
cs_signals_handler_fn cs_signals_set_handler(cs_sig_slot_t *s, int sig, cs_signals_handler_fn handler,
                                             cs_signal_variant_t variant) {
  if (handler == SIG_ERR) {
    errno = EINVAL;
    return SIG_ERR;
  }
  bool bsd = variant == CS_SIGNAL_BSD || variant == CS_SIGNAL_BSD_SIGNAL;
  struct sigaction act, old;
  memset(&act, 0, sizeof act);
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  if (bsd) sigaddset(&act.sa_mask, sig);
  act.sa_flags = bsd ? SA_RESTART : CS_SA(SA_RESETHAND | SA_NODEFER);
  if (cs_signals_set(s, sig, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}

/* ---- arming ---- */

/* Take over one signal: its current action becomes the program's, and the kernel gets the action
 * that follows from it. A fork child that activates again finds its signals watched already. */
static void cs_signals_watch(int sig) {
  cs_sig_slot_t *s = &cs_sig_slots[sig];
  if (atomic_load(&s->watched)) return;
  sigset_t saved;
  cs_signals_lock(&saved);
  struct sigaction current, kernel;
  if (cs_signals_real_sigaction(sig, NULL, &current) == 0) {
    cs_signals_write(s, &current);
    cs_signals_kernel_action(sig, &current, &kernel);
    bool same = kernel.sa_handler == current.sa_handler && kernel.sa_flags == current.sa_flags;
    if (same || cs_signals_real_sigaction(sig, &kernel, NULL) == 0) atomic_store(&s->watched, true);
    else cs_log_warn("cannot watch signal %d (%s); no snapshot if it ends the process", sig, strerror(errno));
  }
  cs_signals_unlock(&saved);
}

/* Enough for cudasnap's handler and for a program handler that asked for SA_ONSTACK on a thread
 * it gave no stack of its own. Pages are touched only when used. */
enum { CS_ALTSTACK_BYTES = 256 * 1024 };

static void cs_signals_altstack(void) {
  stack_t current;
  if (sigaltstack(NULL, &current) != 0 || !(current.ss_flags & SS_DISABLE)) return; /* it has one */
  void *p = mmap(NULL, CS_ALTSTACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return;
  stack_t ss = {.ss_sp = p, .ss_size = CS_ALTSTACK_BYTES, .ss_flags = 0};
  if (sigaltstack(&ss, NULL) != 0) munmap(p, CS_ALTSTACK_BYTES);
}

void cs_signals_arm(const cs_options_t *opts) {
  bool crash = opts->dump_on & CS_DUMP_ON_CRASH, term = opts->dump_on & CS_DUMP_ON_TERM;
  if (!crash && !term) return;
  cs_signals_resolve();
  atomic_store(&cs_sig_pid, (long)getpid());
  atomic_store(&cs_sig_armed, true);
  for (size_t i = 0; crash && i < CS_ARRAY_SIZE(cs_crash_signals); i++)
    if (cs_crash_signals[i] != opts->signal) cs_signals_watch(cs_crash_signals[i]);
  for (size_t i = 0; term && i < CS_ARRAY_SIZE(cs_term_signals); i++)
    if (cs_term_signals[i] != opts->signal) cs_signals_watch(cs_term_signals[i]);
  cs_signals_altstack();
}

void cs_signals_postfork_child(void) {
  atomic_flag_clear(&cs_sig_lock); /* a thread of the parent may have held it at the fork */
  atomic_store(&cs_sig_pid, (long)getpid());
}
