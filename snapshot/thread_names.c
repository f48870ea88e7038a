/* SPDX-License-Identifier: Apache-2.0 */
#include "snapshot/thread_names.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { CS_COMM_LEN = 16 }; /* the kernel's TASK_COMM_LEN, its NUL included */
enum { CS_NAMES_SLOTS = CS_PHASES_MAX_THREADS * 2 }; /* half full at most */

/* A thread's comm into name (NUL-terminated, its newline dropped); false when it cannot be read
 * (the thread has ended). */
static bool cs_thread_comm(uint32_t thread, char name[CS_COMM_LEN]) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%u/comm", thread);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, name, CS_COMM_LEN - 1);
  close(fd);
  if (n <= 0) return false;
  name[n] = '\0';
  name[strcspn(name, "\n")] = '\0';
  return name[0] != '\0';
}

typedef struct cs_names_s {
  uint32_t thread[CS_NAMES_SLOTS]; /* 0: free */
  uint32_t index[CS_NAMES_SLOTS];  /* into the names */
  size_t count;
} cs_names_t;

/* The slot of a thread in the table: its own, or the free one where it goes. */
static size_t cs_names_slot(const cs_names_t *t, uint32_t thread) {
  size_t i = (thread * 2654435761u) & (CS_NAMES_SLOTS - 1);
  while (t->thread[i] != 0 && t->thread[i] != thread) i = (i + 1) & (CS_NAMES_SLOTS - 1);
  return i;
}

void cs_snap_thread_names(cs_phase_list_t *list) {
  if (list == NULL || list->count == 0) return;
  cs_names_t *t = calloc(1, sizeof *t);
  char(*names)[CS_COMM_LEN] = malloc(CS_PHASES_MAX_THREADS * sizeof *names);
  if (t == NULL || names == NULL) {
    free(t);
    free(names);
    return;
  }
  /* a thread nobody named has the name of the thread that made it: the main thread's, mostly */
  char main_name[CS_COMM_LEN] = "";
  (void)cs_thread_comm((uint32_t)getpid(), main_name);
  for (size_t i = 0; i < list->count; i++) {
    const cs_phase_t *p = &list->items[i];
    if (p->thread_name != NULL || p->thread == 0 || t->count == CS_PHASES_MAX_THREADS) continue;
    size_t s = cs_names_slot(t, p->thread);
    if (t->thread[s] != 0) continue;
    t->thread[s] = p->thread;
    t->index[s] = (uint32_t)t->count;
    char *name = names[t->count++];
    if (!cs_thread_comm(p->thread, name))
      snprintf(name, CS_COMM_LEN, "%s", p->thread_ended_as ? p->thread_ended_as : "");
    if (strcmp(name, main_name) == 0) name[0] = '\0';
  }
  char *owned = t->count ? malloc(t->count * CS_COMM_LEN) : NULL;
  if (owned) {
    memcpy(owned, names, t->count * CS_COMM_LEN);
    for (size_t i = 0; i < list->count; i++) {
      cs_phase_t *p = &list->items[i];
      if (p->thread_name != NULL || p->thread == 0) continue;
      size_t s = cs_names_slot(t, p->thread);
      if (t->thread[s] == 0) continue; /* past the limit */
      const char *name = owned + (size_t)t->index[s] * CS_COMM_LEN;
      if (name[0]) p->thread_name = name;
    }
    free(list->owned);
    list->owned = owned;
  }
  free(t);
  free(names);
}
