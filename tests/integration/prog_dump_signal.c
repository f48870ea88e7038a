/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 24, defect 7: cudasnap's dump signal (SIGUSR1) leaves the program's own disposition in
 * force wherever cudasnap has nothing to write. Run with cudasnap preloaded and
 * CUDASNAP_DUMP_ON=signal.
 *
 *   it_dump_signal fork_child   a fork child that never uses CUDA sees SIG_DFL for SIGUSR1, and
 *                               kill -USR1 ends it, as without cudasnap
 *   it_dump_signal one_shot     a handler the program installed first, with a mask and
 *                               SA_RESETHAND, runs with its mask and only once
 * Each prints "<mode> ok". */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/it_driver.h"

static void it_use_cuda(void) {
  (void)it_driver_context();
  uint64_t p = 0;
  IT_CHECK(it_driver_alloc(&p, 4096) == 0, "allocation failed");
  IT_CHECK(it_driver_free(p) == 0, "free failed");
}

static int it_fork_child_main(void) {
  it_use_cuda(); /* cudasnap is active: its handler is installed */
  int ready[2];
  IT_CHECK(pipe(ready) == 0, "pipe failed");
  fflush(NULL);
  pid_t pid = fork();
  IT_CHECK(pid >= 0, "fork failed");
  if (pid == 0) {
    struct sigaction now;
    if (sigaction(SIGUSR1, NULL, &now) != 0 || (now.sa_flags & SA_SIGINFO) || now.sa_handler != SIG_DFL) _exit(3);
    alarm(10); /* never hang the test: SIGALRM is not the awaited ending */
    (void)!write(ready[1], "r", 1);
    for (;;) pause();
  }
  close(ready[1]);
  char c;
  if (read(ready[0], &c, 1) == 1) IT_CHECK(kill(pid, SIGUSR1) == 0, "kill failed");
  int status = 0;
  IT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid failed");
  IT_CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 3), "the child saw a handler for SIGUSR1, not SIG_DFL");
  IT_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR1,
           "the child was not ended by SIGUSR1 (status 0x%x%s)", (unsigned)status,
           WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? ": it ignored it until its alarm" : "");
  printf("fork_child ok\n");
  return 0;
}

static volatile sig_atomic_t it_calls, it_usr2_blocked;

static void it_one_shot(int sig) {
  (void)sig;
  sigset_t now;
  pthread_sigmask(SIG_SETMASK, NULL, &now);
  if (sigismember(&now, SIGUSR2)) it_usr2_blocked = 1;
  it_calls++;
}

static int it_one_shot_main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = it_one_shot;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGUSR2);
  sa.sa_flags = (int)SA_RESETHAND;
  IT_CHECK(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction failed");
  it_use_cuda();
  raise(SIGUSR1);
  IT_CHECK(it_calls == 1, "the program's handler ran %d times for the first SIGUSR1", (int)it_calls);
  IT_CHECK(it_usr2_blocked, "the program's handler ran without its sa_mask (SIGUSR2 not blocked)");
  /* spent: without cudasnap this would end the process; with it, SIG_DFL means a snapshot */
  raise(SIGUSR1);
  IT_CHECK(it_calls == 1, "the one-shot handler ran again (%d times in all)", (int)it_calls);
  printf("one_shot ok\n");
  return 0;
}

int main(int argc, char **argv) {
  IT_CHECK(argc == 2, "usage: it_dump_signal fork_child|one_shot");
  IT_CHECK(it_preloaded(), "this test needs cudasnap preloaded");
  if (strcmp(argv[1], "fork_child") == 0) return it_fork_child_main();
  if (strcmp(argv[1], "one_shot") == 0) return it_one_shot_main();
  fprintf(stderr, "unknown mode %s\n", argv[1]);
  return 2;
}
