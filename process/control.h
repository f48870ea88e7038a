/* SPDX-License-Identifier: Apache-2.0 */
/* The control thread's identity and the pipe that wakes it. The thread itself (what it does at
 * each wake-up) is process/dump_trigger.c's; here is what the endings and the signal handlers ask
 * of it, all async-signal-safe: whose process this is, whether the thread runs and is the calling
 * one, and one byte down its pipe. */
#ifndef CS_CONTROL_H
#define CS_CONTROL_H

#include <stdbool.h>

/* At activation: the process whose snapshots cudasnap writes is this one. */
void cs_control_own_process(void);

/* Is this process the one whose CUDA state cudasnap holds (not a fork or vfork child that has not
 * used CUDA itself)? */
bool cs_control_owns_process(void);

/* Make the pipe and start the thread running run(NULL), once; a failure is one warning (no
 * snapshot on a signal, a crash or _exit then). */
void cs_control_start(void *(*run)(void *));

/* The thread, first thing: it is the control thread. */
void cs_control_thread_begins(void);

/* Is the thread running, is it the calling one. */
bool cs_control_running(void);
bool cs_control_is_this_thread(void);

/* One byte to the thread (a full pipe drops it), and the byte that says an ending is requested. */
void cs_control_send(char token);
void cs_control_wake(void);

/* The thread's wait for a byte, at most wait_ms (-1: no limit). */
typedef enum cs_control_wait_e {
  CS_CONTROL_TOKEN,   /* *token was read */
  CS_CONTROL_TIMEOUT, /* wait_ms went by */
  CS_CONTROL_AGAIN,   /* interrupted: wait again */
  CS_CONTROL_CLOSED,  /* the pipe is gone: the thread ends */
} cs_control_wait_t;
cs_control_wait_t cs_control_receive(int wait_ms, char *token);

/* fork: the parent's thread is not in the child, and its pipe must not carry the child's signals;
 * the child gets its own when it uses CUDA itself. */
void cs_control_postfork_child(void);

#endif
