/* SPDX-License-Identifier: Apache-2.0 */
/* The control thread's identity and its pipe (contract in process/control.h). */
#include "process/control.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cs_log.h"

static atomic_long cs_control_owner; /* the process whose snapshots these are */
static int cs_control_pipe[2] = {-1, -1};
static atomic_bool cs_control_started; /* it reads the pipe once it runs */
static atomic_long cs_control_tid;      /* set by the thread itself */

void cs_control_own_process(void) { atomic_store(&cs_control_owner, (long)getpid()); }

bool cs_control_owns_process(void) { return atomic_load(&cs_control_owner) == (long)getpid(); }

bool cs_control_running(void) { return atomic_load(&cs_control_started); }

bool cs_control_is_this_thread(void) {
  long tid = atomic_load(&cs_control_tid);
  return tid != 0 && tid == (long)syscall(SYS_gettid);
}

void cs_control_thread_begins(void) { atomic_store(&cs_control_tid, (long)syscall(SYS_gettid)); }

void cs_control_send(char token) {
  int saved = errno;
  if (cs_control_pipe[1] >= 0) (void)!write(cs_control_pipe[1], &token, 1);
  errno = saved;
}

/* A full pipe drops the byte; the control thread looks for an ending at every byte it reads. */
void cs_control_wake(void) { cs_control_send('e'); }

cs_control_wait_t cs_control_receive(int wait_ms, char *token) {
  struct pollfd pfd = {.fd = cs_control_pipe[0], .events = POLLIN};
  int ready = poll(&pfd, 1, wait_ms);
  if (ready == 0) return CS_CONTROL_TIMEOUT;
  if (ready < 0) return errno == EINTR ? CS_CONTROL_AGAIN : CS_CONTROL_CLOSED;
  ssize_t n = read(cs_control_pipe[0], token, 1);
  if (n == 1) return CS_CONTROL_TOKEN;
  return n < 0 && errno == EINTR ? CS_CONTROL_AGAIN : CS_CONTROL_CLOSED;
}

void cs_control_start(void *(*run)(void *)) {
  if (cs_control_pipe[0] >= 0) return;
  if (pipe2(cs_control_pipe, O_CLOEXEC) != 0) {
    cs_log_warn("cannot create the snapshot pipe (%s); no snapshot on a signal, a crash or _exit", strerror(errno));
    return;
  }
  (void)fcntl(cs_control_pipe[1], F_SETFL, O_NONBLOCK); /* a burst of signals never blocks a handler */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread inherits the mask: no signal lands there */
  pthread_t thread;
  int err = pthread_create(&thread, NULL, run, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err) {
    cs_log_warn("cannot start the snapshot thread (%s); no snapshot on a signal, a crash or _exit", strerror(err));
    return;
  }
  pthread_detach(thread);
  atomic_store(&cs_control_started, true);
}

void cs_control_postfork_child(void) {
  atomic_store(&cs_control_started, false);
  atomic_store(&cs_control_tid, 0);
  for (int i = 0; i < 2; i++) {
    if (cs_control_pipe[i] >= 0) close(cs_control_pipe[i]);
    cs_control_pipe[i] = -1;
  }
}
