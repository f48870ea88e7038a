/* SPDX-License-Identifier: Apache-2.0 */
/* The live record: what a profiled process publishes about itself while it runs, for `cudasnap
 * top`, `cudasnap metrics` and `cudasnap dump --all` (docs/live.md).
 *
 * One file per process, DIR/cudasnap-live-UID/PIDNS-PID, mode 0600, where DIR is
 * CUDASNAP_LIVE_DIR (/dev/shm by default), made by the library when it activates (the
 * registration: pid, uid, the signal it listens on for snapshots, its job, its labels) and
 * rewritten in place by cudasnap's control thread at most once per CUDASNAP_LIVE_INTERVAL with
 * the figures of each device. Removed as the process ends; a reader skips and removes the record of
 * a process that died without removing it (a kill -9), recognised by the start time the record
 * names (a pid may have been reused since).
 *
 * A user's records live in a directory of that user's, mode 0700, so that in a shared DIR such as
 * the sticky /dev/shm another user can neither take their names nor add records in their place.
 * When another user made a file or directory under that name first, the library makes
 * DIR/cudasnap-live-UID-XXXXXX (mkdtemp) instead, and readers take every directory named
 * cudasnap-live-UID or cudasnap-live-UID-* that UID owns and nobody else may write.
 *
 * Readers take no lock and send no signal: the writer makes `seq` odd before it changes the
 * figures and even again after (a sequence lock), and a reader that copied the file between two
 * equal even readings of seq has a whole record. The file is as big as CS_LIVE_MAX_DEVICES devices
 * but tmpfs gives pages only to what is written; a reader reads the header and the first
 * device_count devices. Every string is a fixed-size field that the writer terminates and a
 * reader terminates again (the owner of a record may write anything in it). */
#ifndef CS_LIVE_FORMAT_H
#define CS_LIVE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define CS_LIVE_DIR "/dev/shm"           /* CUDASNAP_LIVE_DIR's default */
#define CS_LIVE_PREFIX "cudasnap-live-" /* a user's directory: then UID, or UID-XXXXXX */

enum {
  CS_LIVE_MAGIC = 0x4556494c, /* "LIVE" */
  CS_LIVE_VERSION = 3,       /* 2: driver_time_us; 3: a directory per user, labels */
  CS_LIVE_MAX_DEVICES = 64,
  CS_LIVE_TOP_SITES = 16,     /* per device, most live bytes first */
  CS_LIVE_SITE_LEN = 240,     /* a site as `cudasnap summary` names it, cut to fit */
  CS_LIVE_PHASE_LEN = 128,
  CS_LIVE_TEXT_LEN = 256,
  CS_LIVE_MAX_LABELS = 8,       /* common/cs_labels.h's CS_LABELS_MAX */
  CS_LIVE_LABEL_KEY_LEN = 32,   /* CS_LABEL_KEY_LEN */
  CS_LIVE_LABEL_VALUE_LEN = 256, /* CS_LABEL_VALUE_LEN */
};

/* A label for the process's samples: POD_NAME as pod, POD_NAMESPACE as namespace, or one of
 * CUDASNAP_LABELS (a reader judges them again: common/cs_labels.h). */
typedef struct cs_live_label_s {
  char key[CS_LIVE_LABEL_KEY_LEN];
  char value[CS_LIVE_LABEL_VALUE_LEN];
} cs_live_label_t;

typedef struct cs_live_site_s {
  uint64_t bytes;  /* requested bytes of the live blocks allocated there */
  uint64_t blocks;
  char name[CS_LIVE_SITE_LEN];
} cs_live_site_t;

typedef struct cs_live_device_s {
  int32_t device;
  uint32_t site_count;
  uint64_t allocated_bytes;      /* allocated_bytes.all.current */
  uint64_t reserved_bytes;       /* reserved_bytes.all.current */
  uint64_t peak_allocated_bytes; /* allocated_bytes.all.peak */
  uint64_t driver_used_bytes;    /* total - free, as the driver last answered */
  uint32_t driver_known;         /* 0: the driver was not asked yet */
  uint32_t stale;                /* 1: the allocator was busy at the last publication: older figures */
  uint64_t driver_time_us;       /* wall clock (us since 1970) of that answer: the driver is asked
                                    where the cache grows, so it can be minutes old */
  uint64_t ooms;                 /* num_ooms */
  char phase[CS_LIVE_PHASE_LEN]; /* the innermost open NVTX range, "" when none */
  cs_live_site_t sites[CS_LIVE_TOP_SITES];
} cs_live_device_t;

typedef struct cs_live_header_s {
  uint32_t magic;
  uint32_t version;
  uint64_t seq;          /* the sequence lock; odd while the figures change */
  uint32_t header_size;  /* sizeof(cs_live_header_t): the layout a reader expects */
  uint32_t device_size;  /* sizeof(cs_live_device_t) */
  int64_t pid;
  uint32_t uid;
  int32_t signal;        /* the signal that asks for a snapshot; 0: none (no signal trigger) */
  uint64_t start_ticks;  /* /proc/PID/stat field 22: tells this process from a later one of its pid */
  uint64_t pid_ns;       /* the inode of its PID namespace (/proc/self/ns/pid) */
  int64_t rank, local_rank, world_size; /* -1: not known (cudasnap.job) */
  char job_id[128];      /* "" when not known */
  char host[CS_LIVE_TEXT_LEN];
  char exe[CS_LIVE_TEXT_LEN];
  uint64_t interval_ms;  /* between publications; 0: CUDASNAP_LIVE=0, the registration only */
  uint64_t published_ms; /* wall clock (ms since the epoch) of the last publication; 0: none yet */
  uint64_t publications;
  uint32_t device_count; /* devices[0..device_count) hold figures */
  uint32_t label_count;  /* labels[0..label_count) */
  cs_live_label_t labels[CS_LIVE_MAX_LABELS];
} cs_live_header_t;

typedef struct cs_live_record_s {
  cs_live_header_t header;
  cs_live_device_t devices[CS_LIVE_MAX_DEVICES];
} cs_live_record_t;

/* "cudasnap-live-UID": the name of uid's directory under DIR. Returns snprintf's count. */
int cs_live_user_dir_name(char *buf, size_t len, unsigned uid);

/* "PIDNS-PID": a record's name in its user's directory. Returns snprintf's count. */
int cs_live_record_name(char *buf, size_t len, uint64_t pid_ns, long pid);

/* The caller's PID namespace, as the inode of /proc/self/ns/pid; 0 when it cannot be read. */
uint64_t cs_live_pid_ns(void);

/* /proc/PID/stat's start time (field 22, clock ticks since boot); 0 when it cannot be read. */
uint64_t cs_live_start_ticks(long pid);

#endif
