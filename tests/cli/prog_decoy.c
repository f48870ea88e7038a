/* SPDX-License-Identifier: Apache-2.0 */
/* A process that looks profiled from /proc but is not: it maps a file whose name starts with
 * "libcudasnap" and handles SIGUSR1 itself, as the old `dump --all` picked processes. It prints
 * "ready", then "signalled" for every SIGUSR1, and exits at the end of stdin. argv[1]: the file to
 * map (made if missing). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile sig_atomic_t decoy_signals;
static void decoy_on_usr1(int sig) {
  (void)sig;
  decoy_signals++;
  (void)!write(STDOUT_FILENO, "signalled\n", 10);
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  int fd = open(argv[1], O_RDWR | O_CREAT, 0600);
  if (fd < 0 || ftruncate(fd, 4096) != 0) return 1;
  void *map = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return 1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = decoy_on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  printf("ready\n");
  fflush(stdout);
  char buf[64];
  while (read(STDIN_FILENO, buf, sizeof buf) > 0) continue;
  return 0;
}
