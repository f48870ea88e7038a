/* SPDX-License-Identifier: Apache-2.0 */
/* A snapshot on a signal while the program allocates: it sends itself the dump signal halfway,
 * goes on allocating, and waits (at most 10 s) until the control thread has written the snapshot
 * into the directory argv[1], so the test can check it. Prints the workload checksum, which must
 * be the same with and without cudasnap. */
#include <dirent.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "tests/integration/it_driver.h"

static int count_snapshots(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, "-signal.json")) n++;
  if (d) closedir(d);
  return n;
}

int main(int argc, char **argv) {
  IT_CHECK(argc == 2, "usage: %s DIR", argv[0]);
  int preloaded = it_preloaded();
  (void)it_driver_context();
  it_workload_t w;
  it_workload_init(&w, &it_driver_ops, 77, 4);
  it_workload_run(&w, 200);
  if (preloaded) raise(SIGUSR1); /* without cudasnap the default action would end the program */
  it_workload_run(&w, 200);
  for (int i = 0; preloaded && i < 1000 && count_snapshots(argv[1]) == 0; i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  IT_CHECK(!preloaded || count_snapshots(argv[1]) == 1, "no signal snapshot in %s", argv[1]);
  it_workload_finish(&w);
  printf("checksum=%016" PRIx64 "\n", w.checksum);
  return 0;
}
