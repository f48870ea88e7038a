/* SPDX-License-Identifier: Apache-2.0 */
/* The process's live record (contract in publish/live_publish.h). */
#include "publish/live_publish.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cs_deadline.h"
#include "common/cs_labels.h"
#include "common/cs_log.h"
#include "common/cs_process_info.h"
#include "common/cs_utf8.h"
#include "live/live_write.h"
#include "publish/live_gather.h"

static pthread_mutex_t cs_live_lock = PTHREAD_MUTEX_INITIALIZER; /* start, end and publication */
static cs_live_writer_t cs_live_writer;
static cs_live_gather_t *cs_live_gatherer;
static cs_live_device_t *cs_live_scratch; /* CS_LIVE_MAX_DEVICES, gathered before the copy */
static atomic_bool cs_live_on;             /* a record exists and figures are published */
static _Atomic uint64_t cs_live_due_ns;    /* CLOCK_MONOTONIC of the next publication */

static uint64_t cs_live_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

_Static_assert((int)CS_LIVE_MAX_LABELS == (int)CS_LABELS_MAX && (int)CS_LIVE_LABEL_KEY_LEN == (int)CS_LABEL_KEY_LEN &&
                   (int)CS_LIVE_LABEL_VALUE_LEN == (int)CS_LABEL_VALUE_LEN,
               "the record holds every label CUDASNAP_LABELS may give");

/* Add key=value unless the key is there already or the record is full. */
static void cs_live_add_label(cs_live_header_t *id, const char *key, const char *value) {
  for (uint32_t i = 0; i < id->label_count; i++)
    if (strcmp(id->labels[i].key, key) == 0) return;
  if (id->label_count == CS_LIVE_MAX_LABELS) return;
  cs_live_label_t *l = &id->labels[id->label_count++];
  snprintf(l->key, sizeof l->key, "%s", key);
  snprintf(l->value, sizeof l->value, "%s", value);
}

/* CUDASNAP_LABELS (checked with the options), then the pod's name and namespace as Kubernetes'
 * downward API gives them, where CUDASNAP_LABELS does not name them already. */
static void cs_live_labels(cs_live_header_t *id, const cs_options_t *opts) {
  cs_label_t labels[CS_LABELS_MAX];
  int n = cs_labels_parse(opts->labels, labels);
  for (int i = 0; i < n; i++) cs_live_add_label(id, labels[i].key, labels[i].value);
  static const char *const pod[][2] = {{"POD_NAME", "pod"}, {"POD_NAMESPACE", "namespace"}};
  for (size_t i = 0; i < sizeof pod / sizeof pod[0]; i++) {
    const char *value = getenv(pod[i][0]);
    if (!value || !*value) continue;
    if (cs_label_value_ok(value, strlen(value))) cs_live_add_label(id, pod[i][1], value);
    else cs_log_warn("%s='%.64s' is not a label value (1 to 255 bytes of UTF-8 without commas or control "
                     "characters): the live record leaves it out", pod[i][0], value);
  }
}

void cs_live_publish_start(const cs_options_t *opts, const cs_job_t *job) {
  pthread_mutex_lock(&cs_live_lock);
  if (cs_live_writer.record) goto out;
  cs_live_header_t id;
  memset(&id, 0, sizeof id);
  id.pid = (int64_t)getpid();
  id.uid = (uint32_t)geteuid(); /* the owner of what it makes, as readers check it */
  /* the signal that asks for a snapshot, only while it does: dump --all sends it and nothing else */
  id.signal = (opts->dump_on & CS_DUMP_ON_SIGNAL) ? opts->signal : 0;
  id.start_ticks = cs_live_start_ticks((long)id.pid);
  id.pid_ns = cs_live_pid_ns();
  id.rank = job->rank;
  id.local_rank = job->local_rank;
  id.world_size = job->world_size;
  memcpy(id.job_id, job->job_id, sizeof id.job_id < sizeof job->job_id ? sizeof id.job_id : sizeof job->job_id);
  id.job_id[sizeof id.job_id - 1] = '\0';
  cs_utf8_trim(id.job_id);
  memcpy(id.host, job->host, sizeof id.host);
  id.host[sizeof id.host - 1] = '\0';
  cs_utf8_trim(id.host);
  cs_process_info_t *info = malloc(sizeof *info);
  if (info) {
    cs_process_info_read(info);
    memcpy(id.exe, info->exe, sizeof id.exe);
    id.exe[sizeof id.exe - 1] = '\0';
  cs_utf8_trim(id.exe);
    free(info);
  }
  id.interval_ms = opts->live ? opts->live_interval_ms : 0;
  cs_live_labels(&id, opts);
  int err = cs_live_writer_open(&cs_live_writer, opts->live_dir, &id);
  if (err) {
    cs_log_warn("cannot make the live record in %s (%s): cudasnap top, metrics and dump --all will not see "
                "this process",
                opts->live_dir, strerror(err));
    goto out;
  }
  if (!opts->live) goto out; /* the registration only */
  if (!cs_live_gatherer) cs_live_gatherer = cs_live_gather_create();
  if (!cs_live_scratch) cs_live_scratch = calloc(CS_LIVE_MAX_DEVICES, sizeof *cs_live_scratch);
  if (!cs_live_gatherer || !cs_live_scratch) {
    cs_log_warn("no host memory for the live record's figures; the record only registers this process");
    goto out;
  }
  atomic_store(&cs_live_due_ns, cs_deadline_now_ns());
  atomic_store(&cs_live_on, true);
out:
  pthread_mutex_unlock(&cs_live_lock);
}

int cs_live_publish_wait_ms(void) {
  if (!atomic_load_explicit(&cs_live_on, memory_order_acquire)) return -1;
  uint64_t due = atomic_load(&cs_live_due_ns), now = cs_deadline_now_ns();
  return due <= now ? 0 : (int)((due - now + 999999) / 1000000);
}

void cs_live_publish_tick(void) {
  if (cs_live_publish_wait_ms() != 0) return;
  pthread_mutex_lock(&cs_live_lock);
  cs_live_record_t *r = cs_live_writer.record;
  if (r && atomic_load(&cs_live_on)) {
    uint32_t prev = r->header.device_count;
    size_t n = cs_live_gather(cs_live_gatherer, cs_live_scratch, r->devices, prev);
    cs_live_writer_begin(&cs_live_writer);
    memcpy(r->devices, cs_live_scratch, n * sizeof *r->devices);
    r->header.device_count = (uint32_t)n;
    r->header.published_ms = cs_live_wall_ms();
    r->header.publications++;
    cs_live_writer_end(&cs_live_writer);
    /* the interval counts from the end of this one: at most once per interval, whatever it cost */
    atomic_store(&cs_live_due_ns, cs_deadline_now_ns() + (uint64_t)r->header.interval_ms * 1000000u);
  }
  pthread_mutex_unlock(&cs_live_lock);
}

void cs_live_publish_end(void) {
  atomic_store(&cs_live_on, false);
  /* the control thread may be publishing: wait for it, within bounds (the end must not hang) */
  if (cs_deadline_lock(&cs_live_lock, cs_deadline_in_ms(200))) {
    cs_live_writer_close(&cs_live_writer, true);
    pthread_mutex_unlock(&cs_live_lock);
    return;
  }
  /* not had: remove the file anyway (its mapping stays; the process is ending) */
  cs_live_writer_remove(&cs_live_writer);
}

void cs_live_publish_postfork_child(void) {
  pthread_mutex_init(&cs_live_lock, NULL);
  atomic_store(&cs_live_on, false);
  cs_live_writer_close(&cs_live_writer, false); /* never removes the parent's: another pid made it */
}
