/* SPDX-License-Identifier: Apache-2.0 */
/* What the tool reads about a process in /proc to decide whether a live record is its record:
 * its user, its pid inside its own PID namespace, the signals it catches; and, for records made
 * in another PID namespace (a container writing to a shared CUDASNAP_LIVE_DIR), the pid each
 * process of that namespace has here. Tool only: nothing here runs in a profiled process. */
#ifndef CS_LIVE_PROC_H
#define CS_LIVE_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The PID namespace the kernel starts with (PROC_PID_INIT_INO): a reader in it sees every
 * process, so a namespace it cannot find is gone. */
#define CS_LIVE_INIT_PID_NS 0xEFFFFFFCu

typedef struct cs_live_status_s {
  uint32_t euid;   /* Uid's second field */
  long ns_pid;     /* NSpid's last field: the pid inside the process's own namespace; 0 when unknown */
  uint64_t sigcgt; /* SigCgt: bit n-1 for signal n */
  bool has_uid, has_sigcgt;
} cs_live_status_t;

/* /proc/PID/status's fields above. Returns 0, or an errno value (ENOENT: no such process). */
int cs_live_status_read(long pid, cs_live_status_t *st);

/* The PID namespace of pid (the inode of /proc/PID/ns/pid); 0 when it cannot be read. */
uint64_t cs_live_ns_of(long pid);

/* Every process here whose PID namespace is not `own`: (namespace, pid inside it) -> pid here. */
typedef struct cs_live_ns_entry_s {
  uint64_t ns;
  long ns_pid, pid;
} cs_live_ns_entry_t;

typedef struct cs_live_nsmap_s {
  cs_live_ns_entry_t *items; /* sorted by (ns, ns_pid) */
  size_t count;
  bool complete; /* every process of /proc was looked at (not cut short by the deadline) */
} cs_live_nsmap_t;

/* Scan /proc until deadline_ns (CLOCK_MONOTONIC). Returns 0 or an errno value. */
int cs_live_nsmap_build(cs_live_nsmap_t *map, uint64_t own, uint64_t deadline_ns);

/* The pid here of ns_pid in namespace ns; 0 when not found. *ns_seen: some process here is in ns. */
long cs_live_nsmap_find(const cs_live_nsmap_t *map, uint64_t ns, long ns_pid, bool *ns_seen);

void cs_live_nsmap_free(cs_live_nsmap_t *map);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t cs_live_now_ns(void);

#endif
