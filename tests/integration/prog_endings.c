/* SPDX-License-Identifier: Apache-2.0 */
/* Issue #13: every way a process ends, for endings.sh, which runs each mode with and without
 * cudasnap and compares how the process ended.
 *
 * Every mode first allocates on device 0 (or 1, see below), frees most of it, and leaves one block
 * of 3 MiB allocated in allocate_leak() (stdout: "frame=allocate_leak <line>", flushed), then ends:
 *   exit            return from main
 *   _exit, _Exit    _exit(7), _Exit(9)
 *   quick_exit      quick_exit(4) (at_quick_exit handlers, then glibc's own _exit)
 *   segv, abort     a null pointer write; abort()
 *   fpe             an integer division by zero
 *   stack           unbounded recursion (the handler runs on the alternate stack)
 *   term, int       kill(getpid(), SIGTERM / SIGINT) with the default action
 *   term-handled    a SIGTERM handler installed after the first CUDA call sets a flag; exit(3)
 *   term-handled-early  the same handler installed before any CUDA call
 *   term-reraise    a SIGTERM handler that restores SIG_DFL with signal() and raises again
 *   term-ignored    SIGTERM ignored, then sent: the program goes on and returns 0
 *   term-in-driver  SIGTERM sent from inside the driver's cuMemAlloc (so under cudasnap's allocator
 *                   lock); if the process is still alive when the call returns, it calls exit(0)
 *   abrt-in-driver  another process sends SIGABRT while this one is inside the driver's cuMemAlloc
 *                   (it waits there for the sender); then exit(0) if still alive
 *   term-twice      SIGTERM with the default action, and another one 300 ms later from a helper
 *                   process (a second Ctrl-C during the snapshot)
 *   term-twice-in-driver  the same, the first SIGTERM sent from inside the driver's cuMemAlloc;
 *                   then exit(0) if still alive
 *   term-repeat     another process sends SIGTERM, and SIGTERM again 10 ms later (a launcher
 *                   forwarding the same Ctrl-C or scancel: the same request, issue 33)
 *   int-then-term   the same with SIGINT, then SIGTERM 10 ms later (Ctrl-C reaches the group, and
 *                   mpirun sends its processes SIGTERM)
 *   kill PID SIG [MS [SIG2]]  (no CUDA) send SIG to PID (after MS milliseconds), and then SIG2 after
 *                   MS more: the other process of abrt-in-driver, term-twice* and the repeats
 *   resethand       a one-shot (SA_RESETHAND) SIGSEGV handler that raises SIGSEGV again
 *   view            no ending: sigaction and signal answer what the program installed; returns 0
 *   busy            another thread allocates and frees in a loop on device 0 while main crashes
 *   stuck           two devices: a thread is stopped inside the driver's cuMemAlloc on device 0
 *                   (under cudasnap's allocator lock), main (device 1) crashes
 *   stuck-exit      the same, and main calls exit(0) (a watchdog giving up on a hung device)
 *   stuck-signal    the same (three devices; SIGUSR1 handled by the program), but first main
 *                   raises SIGUSR1 (a snapshot, which waits for device 0), then makes device 2's
 *                   context and allocates (1 MiB, kept) in it meanwhile, and exits 0 three seconds
 *                   later
 *   crash-in-driver two devices: main crashes inside the driver's cuMemAlloc on device 0, after its
 *                   leak on device 1
 *   vfork           a vfork child whose exec fails calls _exit(127); returns 0
 *   fork            a fork child that does not use CUDA calls _exit(5); returns 0
 *   fork-term       a fork child that does not use CUDA dies of SIGTERM (default action); returns 0
 *   fork-cuda       a fork child allocates (and leaks) itself, then _exit(6); returns 0 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/it_driver.h"

static int leak_line;

static __attribute__((noinline)) CUdeviceptr allocate_leak(size_t bytes) {
  CUdeviceptr p = 0;
  leak_line = __LINE__ + 1;
  CUresult r = cuMemAlloc(&p, bytes);
  __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
  IT_CHECK(r == CUDA_SUCCESS, "cuMemAlloc failed: %d", (int)r);
  return p;
}

static void churn(void) {
  for (int i = 0; i < 20; i++) {
    CUdeviceptr p = 0;
    IT_CHECK(cuMemAlloc(&p, (size_t)(i + 1) << 16) == CUDA_SUCCESS, "churn alloc");
    IT_CHECK(cuMemFree(p) == CUDA_SUCCESS, "churn free");
  }
}

static CUcontext context_of(int device) {
  CUdevice dev;
  CUcontext ctx;
  IT_CHECK(cuDeviceGet(&dev, device) == CUDA_SUCCESS, "no device %d", device);
  IT_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS, "no context on %d", device);
  IT_CHECK(cuCtxSetCurrent(ctx) == CUDA_SUCCESS, "cuCtxSetCurrent %d", device);
  return ctx;
}

/* Allocate, free, and leave the 3 MiB block of allocate_leak on `device`. */
static void prologue(int device) {
  IT_CHECK(cuInit(0) == CUDA_SUCCESS, "cuInit failed");
  (void)context_of(device);
  churn();
  (void)allocate_leak(3 << 20);
  printf("frame=allocate_leak %d\n", leak_line);
  fflush(stdout);
}

static void sleep_ms(long ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Through a volatile pointer: a constant address is one GCC's -Warray-bounds rejects when this file
 * is built without link-time optimization. */
static volatile int *volatile bad_address = (volatile int *)(uintptr_t)8;
static void crash(void) { *bad_address = 1; }

static volatile sig_atomic_t got_term;
static void on_term_flag(int sig) { got_term = sig; }
static void on_term_reraise(int sig) {
  signal(sig, SIG_DFL);
  raise(sig);
}
static void on_segv_once(int sig) {
  static const char msg[] = "one-shot handler ran\n";
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
  raise(sig); /* the disposition is SIG_DFL again: this ends the process */
}

/* Deep enough to overflow any stack; the depth comes from the command line so that the compiler
 * cannot call it infinite. */
static int __attribute__((noinline)) recurse(volatile char *up, long depth) {
  volatile char frame[512];
  frame[0] = up ? up[0] : 1;
  if (depth == 0) return frame[0];
  return recurse(frame, depth - 1) + frame[0];
}

/* ---- threads inside the allocator or the driver ---- */

static atomic_int in_driver;
static void hook_block(size_t bytes) {
  if (bytes < (30u << 20)) return;
  atomic_store(&in_driver, 1);
  for (;;) pause();
}
static void hook_crash(size_t bytes) {
  if (bytes >= (30u << 20)) crash();
}

static void hook_term(size_t bytes) {
  if (bytes >= (30u << 20) && !atomic_exchange(&in_driver, 1)) kill(getpid(), SIGTERM);
}

/* Inside the driver: another process (this program in mode kill) sends SIGABRT to this one. */
static void hook_abrt_from_outside(size_t bytes) {
  if (bytes < (30u << 20) || atomic_exchange(&in_driver, 1)) return;
  char pid[32], sig[8];
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  snprintf(sig, sizeof sig, "%d", SIGABRT);
  char *args[] = {"it_endings", "kill", pid, sig, NULL};
  pid_t sender;
  extern char **environ;
  IT_CHECK(posix_spawn(&sender, "/proc/self/exe", NULL, NULL, args, environ) == 0, "posix_spawn");
  int status;
  while (waitpid(sender, &status, 0) < 0 && errno == EINTR) {
  }
}

/* A helper process (this program in mode kill, spawned: a fork would run cudasnap's fork handlers,
 * which wait for the allocator lock a hook in the driver runs under) that sends SIGTERM to this one
 * in 300 ms: the second Ctrl-C. */
static void second_term_soon(void) {
  char pid[32], sig[8];
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  snprintf(sig, sizeof sig, "%d", SIGTERM);
  char *args[] = {"it_endings", "kill", pid, sig, "300", NULL};
  pid_t sender;
  extern char **environ;
  fflush(NULL);
  IT_CHECK(posix_spawn(&sender, "/proc/self/exe", NULL, NULL, args, environ) == 0, "posix_spawn");
}

/* A helper process that sends first, then second ms milliseconds later. */
static void signal_twice_from_outside(int first, int second, int ms) {
  char pid[32], sig1[8], sig2[8], wait[16];
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  snprintf(sig1, sizeof sig1, "%d", first);
  snprintf(sig2, sizeof sig2, "%d", second);
  snprintf(wait, sizeof wait, "%d", ms);
  char *args[] = {"it_endings", "kill", pid, sig1, wait, sig2, NULL};
  pid_t sender;
  extern char **environ;
  fflush(NULL);
  IT_CHECK(posix_spawn(&sender, "/proc/self/exe", NULL, NULL, args, environ) == 0, "posix_spawn");
}

static void hook_term_twice(size_t bytes) {
  if (bytes < (30u << 20) || atomic_exchange(&in_driver, 1)) return;
  second_term_soon();
  kill(getpid(), SIGTERM);
}

static void *busy_thread(void *ctx) {
  IT_CHECK(cuCtxSetCurrent((CUcontext)ctx) == CUDA_SUCCESS, "cuCtxSetCurrent in thread");
  for (unsigned i = 0;; i++) {
    CUdeviceptr p = 0;
    IT_CHECK(cuMemAlloc(&p, (size_t)(1 + i % 64) << 12) == CUDA_SUCCESS, "busy alloc");
    IT_CHECK(cuMemFree(p) == CUDA_SUCCESS, "busy free");
    atomic_store(&in_driver, 1);
  }
  return NULL;
}

static void *stuck_thread(void *ctx) {
  IT_CHECK(cuCtxSetCurrent((CUcontext)ctx) == CUDA_SUCCESS, "cuCtxSetCurrent in thread");
  CUdeviceptr p = 0;
  (void)cuMemAlloc(&p, 30u << 20); /* stops in the driver for good */
  return NULL;
}

/* ---- view: the program sees what it installed ---- */

/* In libc, but declared by <signal.h> only for old X/Open programs. */
typedef void (*handler_t)(int);
extern handler_t bsd_signal(int sig, handler_t handler);

static void check_view(void) {
  struct sigaction old;
  IT_CHECK(sigaction(SIGSEGV, NULL, &old) == 0 && old.sa_handler == SIG_DFL, "SIGSEGV is not SIG_DFL");
  IT_CHECK(sigaction(SIGTERM, NULL, &old) == 0 && old.sa_handler == SIG_DFL, "SIGTERM is not SIG_DFL");
  struct sigaction act;
  memset(&act, 0, sizeof act);
  act.sa_handler = on_term_flag;
  act.sa_flags = SA_RESTART;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, SIGUSR2);
  IT_CHECK(sigaction(SIGTERM, &act, &old) == 0 && old.sa_handler == SIG_DFL, "set SIGTERM");
  IT_CHECK(sigaction(SIGTERM, NULL, &old) == 0 && old.sa_handler == on_term_flag, "SIGTERM handler not read back");
  IT_CHECK((old.sa_flags & SA_RESTART) && sigismember(&old.sa_mask, SIGUSR2) == 1, "flags or mask not read back");
  IT_CHECK(signal(SIGTERM, SIG_IGN) == on_term_flag, "signal() did not return the previous handler");
  IT_CHECK(signal(SIGTERM, SIG_DFL) == SIG_IGN, "signal() did not return SIG_IGN");
  IT_CHECK(sigaction(SIGTERM, NULL, &old) == 0 && old.sa_handler == SIG_DFL, "SIGTERM not back to SIG_DFL");
  IT_CHECK(sigaction(SIGSEGV, NULL, &old) == 0 && old.sa_handler == SIG_DFL, "SIGSEGV changed");
  /* a watched signal set to SIG_IGN is really ignored */
  IT_CHECK(signal(SIGINT, SIG_IGN) == SIG_DFL, "SIGINT was not SIG_DFL");
  IT_CHECK(kill(getpid(), SIGINT) == 0, "kill");
  IT_CHECK(signal(SIGINT, SIG_DFL) == SIG_IGN, "SIGINT was not SIG_IGN");
  /* System V signal(): one-shot; the disposition is SIG_DFL again once the handler has run */
  IT_CHECK(sysv_signal(SIGHUP, on_term_flag) == SIG_DFL, "sysv_signal did not return SIG_DFL");
  IT_CHECK(sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler == on_term_flag &&
               (old.sa_flags & (int)SA_RESETHAND),
           "the one-shot handler not read back");
  IT_CHECK(raise(SIGHUP) == 0 && got_term == SIGHUP, "the one-shot handler did not run");
  IT_CHECK(sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler == SIG_DFL, "SIGHUP not SIG_DFL after one shot");
  IT_CHECK(bsd_signal(SIGQUIT, SIG_IGN) == SIG_DFL && bsd_signal(SIGQUIT, SIG_DFL) == SIG_IGN, "bsd_signal");
  /* an invalid signal number is refused as libc refuses it */
  errno = 0;
  IT_CHECK(sigaction(0, &act, NULL) == -1 && errno == EINVAL, "sigaction(0) was accepted");
}

static int wait_child(pid_t pid) {
  int status = 0;
  IT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
  IT_CHECK(WIFEXITED(status), "the child ended with status 0x%x", (unsigned)status);
  return WEXITSTATUS(status);
}

int main(int argc, char **argv) {
  IT_CHECK(argc >= 2, "usage: %s MODE", argv[0]);
  const char *mode = argv[1];
  if (strcmp(mode, "kill") == 0) {
    IT_CHECK(argc >= 4 && argc <= 6, "usage: %s kill PID SIG [MS [SIG2]]", argv[0]);
    pid_t pid = (pid_t)atol(argv[2]);
    if (argc == 6) { /* SIG now, SIG2 MS later: both timed here, whatever the target is doing */
      if (kill(pid, atoi(argv[3])) != 0) return 1;
      sleep_ms(atol(argv[4]));
      return kill(pid, atoi(argv[5])) == 0 ? 0 : 1;
    }
    if (argc == 5) sleep_ms(atol(argv[4]));
    return kill(pid, atoi(argv[3])) == 0 ? 0 : 1;
  }
  (void)it_preloaded();
  if (strcmp(mode, "term-handled-early") == 0) IT_CHECK(signal(SIGTERM, on_term_flag) != SIG_ERR, "signal");
  bool stuck_signal = strcmp(mode, "stuck-signal") == 0;
  if (stuck_signal) IT_CHECK(signal(SIGUSR1, on_term_flag) != SIG_ERR, "signal");
  bool stuck = strcmp(mode, "stuck") == 0 || strcmp(mode, "stuck-exit") == 0 || stuck_signal;
  bool two_devices = stuck || strcmp(mode, "crash-in-driver") == 0;
  prologue(two_devices ? 1 : 0);

  if (strcmp(mode, "exit") == 0) return 0;
  if (strcmp(mode, "_exit") == 0) _exit(7);
  if (strcmp(mode, "_Exit") == 0) _Exit(9);
  if (strcmp(mode, "quick_exit") == 0) quick_exit(4);
  if (strcmp(mode, "segv") == 0) crash();
  if (strcmp(mode, "abort") == 0) abort();
  if (strcmp(mode, "fpe") == 0) {
#if defined(__x86_64__) || defined(__i386__)
    volatile int zero = 0, one = 1; /* both volatile: 1 / x is otherwise a comparison */
    printf("%d\n", one / zero);
#else
    raise(SIGFPE); /* integer division does not trap here */
#endif
  }
  if (strcmp(mode, "stack") == 0) return recurse(NULL, LONG_MAX - argc);
  if (strcmp(mode, "term") == 0 || strcmp(mode, "int") == 0) {
    kill(getpid(), strcmp(mode, "term") == 0 ? SIGTERM : SIGINT);
    for (;;) pause();
  }
  if (strcmp(mode, "term-repeat") == 0 || strcmp(mode, "int-then-term") == 0) {
    signal_twice_from_outside(strcmp(mode, "term-repeat") == 0 ? SIGTERM : SIGINT, SIGTERM, 10);
    for (;;) pause();
  }
  if (strcmp(mode, "term-twice") == 0) {
    second_term_soon();
    kill(getpid(), SIGTERM);
    for (;;) pause();
  }
  if (strcmp(mode, "term-twice-in-driver") == 0) {
    fake_cuda_control_t fake = it_fake();
    fake.set_alloc_hook(hook_term_twice);
    CUdeviceptr p = 0;
    (void)cuMemAlloc(&p, 30u << 20);
    exit(0);
  }
  if (strcmp(mode, "term-handled") == 0 || strcmp(mode, "term-handled-early") == 0) {
    if (strcmp(mode, "term-handled") == 0) IT_CHECK(signal(SIGTERM, on_term_flag) != SIG_ERR, "signal");
    kill(getpid(), SIGTERM);
    while (!got_term) sleep_ms(1);
    printf("handled signal %d\n", (int)got_term);
    exit(3);
  }
  if (strcmp(mode, "term-reraise") == 0) {
    IT_CHECK(signal(SIGTERM, on_term_reraise) != SIG_ERR, "signal");
    kill(getpid(), SIGTERM);
    for (;;) pause();
  }
  if (strcmp(mode, "term-ignored") == 0) {
    IT_CHECK(signal(SIGTERM, SIG_IGN) != SIG_ERR, "signal");
    kill(getpid(), SIGTERM);
    sleep_ms(50);
    return 0;
  }
  if (strcmp(mode, "term-in-driver") == 0) {
    fake_cuda_control_t fake = it_fake();
    fake.set_alloc_hook(hook_term);
    CUdeviceptr p = 0;
    (void)cuMemAlloc(&p, 30u << 20);
    exit(0);
  }
  if (strcmp(mode, "abrt-in-driver") == 0) {
    fake_cuda_control_t fake = it_fake();
    fake.set_alloc_hook(hook_abrt_from_outside);
    CUdeviceptr p = 0;
    (void)cuMemAlloc(&p, 30u << 20);
    exit(0);
  }
  if (strcmp(mode, "resethand") == 0) {
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = on_segv_once;
    act.sa_flags = (int)(SA_RESETHAND | SA_NODEFER);
    sigemptyset(&act.sa_mask);
    IT_CHECK(sigaction(SIGSEGV, &act, NULL) == 0, "sigaction");
    crash();
  }
  if (strcmp(mode, "view") == 0) {
    check_view();
    return 0;
  }
  if (strcmp(mode, "busy") == 0) {
    CUcontext ctx = NULL;
    IT_CHECK(cuCtxGetCurrent(&ctx) == CUDA_SUCCESS, "cuCtxGetCurrent");
    pthread_t t;
    IT_CHECK(pthread_create(&t, NULL, busy_thread, ctx) == 0, "pthread_create");
    while (!atomic_load(&in_driver)) sleep_ms(1);
    sleep_ms(20);
    crash();
  }
  if (stuck) {
    fake_cuda_control_t fake = it_fake();
    fake.set_alloc_hook(hook_block);
    CUcontext ctx0 = context_of(0);
    churn(); /* device 0 has an allocator, and history */
    (void)context_of(1);
    pthread_t t;
    IT_CHECK(pthread_create(&t, NULL, stuck_thread, ctx0) == 0, "pthread_create");
    while (!atomic_load(&in_driver)) sleep_ms(1);
    if (strcmp(mode, "stuck-exit") == 0) exit(0);
    if (stuck_signal) {
      IT_CHECK(raise(SIGUSR1) == 0 && got_term == SIGUSR1, "the program's SIGUSR1 handler did not run");
      sleep_ms(200); /* the snapshot is waiting for device 0's allocator now */
      (void)context_of(2);
      CUdeviceptr p = 0;
      /* not freed: a free with several contexts asks each allocator, device 0's too */
      IT_CHECK(cuMemAlloc(&p, 1 << 20) == CUDA_SUCCESS, "device 2");
      sleep_ms(3000); /* the signal's snapshot is written */
      exit(0);
    }
    crash();
  }
  if (strcmp(mode, "crash-in-driver") == 0) {
    fake_cuda_control_t fake = it_fake();
    fake.set_alloc_hook(hook_crash);
    (void)context_of(0);
    churn();
    CUdeviceptr p = 0;
    (void)cuMemAlloc(&p, 30u << 20); /* crashes in the driver */
  }
  if (strcmp(mode, "vfork") == 0) {
    pid_t pid = vfork();
    IT_CHECK(pid >= 0, "vfork");
    if (pid == 0) {
      execl("/nonexistent/program", "program", (char *)NULL);
      _exit(127);
    }
    IT_CHECK(wait_child(pid) == 127, "the vfork child's status");
    return 0;
  }
  if (strcmp(mode, "fork-term") == 0) {
    pid_t pid = fork();
    IT_CHECK(pid >= 0, "fork");
    if (pid == 0) {
      kill(getpid(), SIGTERM);
      for (;;) pause();
    }
    int status = 0;
    IT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    IT_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "the fork child ended with status 0x%x",
             (unsigned)status);
    return 0;
  }
  if (strcmp(mode, "fork") == 0 || strcmp(mode, "fork-cuda") == 0) {
    bool cuda = strcmp(mode, "fork-cuda") == 0;
    fflush(NULL);
    pid_t pid = fork();
    IT_CHECK(pid >= 0, "fork");
    if (pid == 0) {
      if (cuda) {
        churn();
        (void)allocate_leak(3 << 20);
        _exit(6);
      }
      _exit(5);
    }
    IT_CHECK(wait_child(pid) == (cuda ? 6 : 5), "the fork child's status");
    return 0;
  }
  IT_FAIL("unknown mode %s", mode);
}
