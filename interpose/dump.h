/* Writing snapshots: when (exit, signal, out of memory, the API), under which name, and the one
 * line that reports each (DESIGN.md section 4).
 *
 * A dump copies the state under the allocators' locks, then symbolizes and writes with no lock
 * held, to a temporary file renamed into place; an existing file is never replaced. A failure is
 * one line on stderr and the program goes on. Dumps are serialized. No CUDA call is made. */
#ifndef CS_DUMP_H
#define CS_DUMP_H

#include <stdbool.h>

typedef enum cs_trigger_e {
  CS_TRIGGER_EXIT = 0,
  CS_TRIGGER_SIGNAL = 1,
  CS_TRIGGER_OOM = 2,
  CS_TRIGGER_API = 3,
} cs_trigger_t;

/* At activation: the signal handler and control thread, the exit handler. */
void cs_dump_start(void);

/* Write a snapshot now. path NULL: named from CUDASNAP_OUTPUT. Returns 0 when a file was
 * written, else -1 (the reason was reported). */
int cs_dump_write(cs_trigger_t trigger, const char *path);

/* An allocation is about to report out of memory (CUDASNAP_DUMP_ON has oom): dump first. */
void cs_dump_on_oom(void);

/* fork: the child gets a new pipe and no control thread until it uses CUDA itself, and never
 * writes the parent's snapshots */
void cs_dump_postfork_child(void);

#endif
