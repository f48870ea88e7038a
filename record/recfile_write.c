/* SPDX-License-Identifier: Apache-2.0 */
#include "record/recfile_write.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "record/recfile.h"
#include "record/ticks.h"

/* The stack log is backed on disk this much at a time, as it fills. */
#define CS_RECFILE_STACK_CHUNK ((uint64_t)1 << 20)

struct cs_recfile_writer_s {
  int fd;                     /* a duplicate of the caller's, for growing the file */
  char *base;                 /* the whole mapping, map_bytes long */
  size_t map_bytes;
  cs_recfile_header_t *header;
  uint64_t stacks_backed;     /* bytes of the stack log allocated on disk; under the intern lock */
  bool stacks_full;           /* a stack did not fit: later ones are not logged either */
  pthread_mutex_t modules_lock;
  unsigned long long loader_adds, loader_subs; /* the loader's counts at the last module scan */
  pthread_mutex_t calib_lock;
  atomic_bool detached;
  cs_recfile_params_t params;
  int ring_devices[CS_RECFILE_MAX_RINGS]; /* of the sections handed out, for cs_recfile_reopen */
  uint32_t rings_used;
  uint64_t rings_offset, ring_bytes; /* the layout, also once detached (the header is gone then) */
};

static uint64_t cs_recfile_round_page(uint64_t n) {
  return (n + CS_RECFILE_PAGE - 1) / CS_RECFILE_PAGE * CS_RECFILE_PAGE;
}

/* A newer anchor in the spare slot, then the slot is published. Several callers: one at a time. */
static void cs_recfile_calibrate(cs_recfile_writer_t *w) {
  if (pthread_mutex_trylock(&w->calib_lock) != 0) return;
  cs_recfile_header_t *h = w->header;
  const uint32_t slot = 1u - __atomic_load_n(&h->calib_slot, __ATOMIC_RELAXED);
  const cs_ticks_anchor_t now = cs_ticks_anchor();
  h->calib_ticks[slot] = now.ticks;
  h->calib_monotonic_ns[slot] = now.monotonic_ns;
  __atomic_store_n(&h->calib_slot, slot, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&w->calib_lock);
}

static void cs_recfile_read_identity(cs_recfile_header_t *h, bool argv) {
  ssize_t len = readlink("/proc/self/exe", h->exe, sizeof h->exe - 1);
  h->exe[len > 0 ? len : 0] = '\0';
  if (!argv) return; /* CUDASNAP_ARGV=0: tokens on the command line stay out of the file */
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, h->argv, sizeof h->argv - 1) : -1;
  if (fd >= 0) close(fd);
  if (n <= 0) return;
  /* a cut argument is dropped, not kept half */
  while (n > 0 && h->argv[n - 1] != '\0') h->argv[--n] = '\0';
  uint32_t argc = 0;
  for (ssize_t i = 0; i < n; i++) argc += h->argv[i] == '\0';
  h->argc = argc;
}

_Static_assert(CS_RECFILE_ROUNDUP == CS_ROUNDUP_INTERVALS, "the header holds every interval's divisions");

/* The settings recover draws the blocks' sizes by (record/recfile.h). */
static void cs_recfile_write_conf(cs_recfile_header_t *h, const cs_alloc_conf_t *conf) {
  if (conf == NULL) return;
  h->conf_flags = CS_RECFILE_CONF_KNOWN | (conf->split_large ? CS_RECFILE_CONF_SPLIT_LARGE : 0) |
                  (conf->ipc_small ? CS_RECFILE_CONF_IPC_SMALL : 0);
  memcpy(h->conf_roundup, conf->roundup_power2_divisions, sizeof h->conf_roundup);
  h->conf_max_split_size = conf->max_split_size == SIZE_MAX ? UINT64_MAX : (uint64_t)conf->max_split_size;
}

/* cs_recfile_create, with the mapping at `at` when not NULL (MAP_FIXED: cs_recfile_reopen). */
static cs_recfile_writer_t *cs_recfile_map(int fd, const cs_recfile_params_t *params, void *at, size_t at_bytes,
                                           int *err) {
  *err = 0;
  const uint64_t depth = params->stack_depth < CS_RECFILE_MAX_DEPTH ? params->stack_depth : CS_RECFILE_MAX_DEPTH;
  const uint64_t modules_offset = CS_RECFILE_PAGE;
  const uint64_t stacks_offset = modules_offset + cs_recfile_round_page(CS_RECFILE_MODULES * sizeof(cs_recfile_module_t));
  uint64_t stack_bytes = (uint64_t)params->max_stacks * (sizeof(cs_recfile_stack_t) + depth * sizeof(uint64_t));
  if (params->max_stacks == 0 || stack_bytes > CS_RECFILE_STACK_BYTES_MAX) stack_bytes = CS_RECFILE_STACK_BYTES_MAX;
  stack_bytes = cs_recfile_round_page(stack_bytes);
  const uint64_t rings_offset = stacks_offset + stack_bytes;
  /* a bound on the whole mapping (2^46 bytes) keeps every product below from overflowing */
  const uint64_t max_entries = params->max_entries;
  if (max_entries > ((uint64_t)1 << 40) / CS_RECFILE_MAX_RINGS) {
    *err = EFBIG;
    return NULL;
  }
  const uint64_t ring_bytes = CS_RECFILE_PAGE + cs_recfile_round_page(max_entries * sizeof(cs_ring_entry_t));
  const uint64_t map_bytes = rings_offset + CS_RECFILE_MAX_RINGS * ring_bytes;

  cs_recfile_writer_t *w = calloc(1, sizeof *w);
  if (!w) {
    *err = ENOMEM;
    return NULL;
  }
  w->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (w->fd < 0 || ftruncate(w->fd, (off_t)rings_offset) != 0) goto fail;
  /* the header and the module records on disk now; the stack log as it fills */
  if ((*err = posix_fallocate(w->fd, 0, (off_t)stacks_offset)) != 0) goto fail_err;
  if (at && at_bytes != map_bytes) {
    *err = EINVAL; /* not the same layout: cannot take the old one's place */
    goto fail_err;
  }
  void *base = mmap(at, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | (at ? MAP_FIXED : 0), w->fd, 0);
  if (base == MAP_FAILED) goto fail;
  w->params = *params;
  w->base = base;
  w->map_bytes = map_bytes;
  w->rings_offset = rings_offset;
  w->ring_bytes = ring_bytes;
  w->header = base;
  pthread_mutex_init(&w->modules_lock, NULL);
  pthread_mutex_init(&w->calib_lock, NULL);

  cs_recfile_header_t *h = w->header;
  h->version = CS_RECFILE_VERSION;
  h->header_bytes = CS_RECFILE_PAGE;
  h->pid = (int64_t)getpid();
  cs_ticks_init();
  const bool tsc = atomic_load_explicit(&cs_ticks_use_tsc, memory_order_relaxed);
  h->tick_source = tsc ? CS_RECFILE_TICKS_TSC : CS_RECFILE_TICKS_MONOTONIC;
  h->stack_depth = (uint32_t)depth;
  const cs_ticks_origin_t origin = cs_ticks_origin();
  h->origin_ticks = origin.anchor.ticks;
  h->origin_monotonic_ns = origin.anchor.monotonic_ns;
  h->origin_epoch_us = origin.epoch_us;
  if (tsc) {
    /* the TSC's rate comes from two anchors: let a millisecond pass since the origin, so the
     * first estimate is good to about 5e-5 even if the process dies before the next one */
    uint64_t since = cs_ticks_monotonic_ns() - origin.anchor.monotonic_ns;
    if (since < 1000000) nanosleep(&(struct timespec){.tv_nsec = (long)(1000000 - since)}, NULL);
  }
  const cs_ticks_anchor_t now = cs_ticks_anchor();
  h->calib_ticks[0] = now.ticks;
  h->calib_monotonic_ns[0] = now.monotonic_ns;
  h->calib_slot = 0;
  h->max_entries = max_entries;
  h->modules_offset = modules_offset;
  h->stacks_offset = stacks_offset;
  h->stacks_capacity = stack_bytes;
  h->rings_offset = rings_offset;
  h->ring_bytes = ring_bytes;
  h->ring_max = CS_RECFILE_MAX_RINGS;
  cs_recfile_read_identity(h, params->argv);
  cs_recfile_write_conf(h, params->conf);
  /* the magic last: a file without it was never whole, and the tool says so */
  atomic_thread_fence(memory_order_release);
  memcpy(h->magic, CS_RECFILE_MAGIC, sizeof h->magic);
  return w;

fail:
  *err = errno;
fail_err:
  if (w->fd >= 0) close(w->fd);
  free(w);
  return NULL;
}

cs_recfile_writer_t *cs_recfile_create(int fd, const cs_recfile_params_t *params, int *err) {
  return cs_recfile_map(fd, params, NULL, 0, err);
}

/* The next ring section, on disk and with its header; NULL when none is left. */
static cs_recfile_ring_t *cs_recfile_new_section(cs_recfile_writer_t *w, int device) {
  cs_recfile_header_t *h = w->header;
  const uint32_t index = __atomic_load_n(&h->ring_count, __ATOMIC_RELAXED);
  if (index >= h->ring_max || h->max_entries == 0) return NULL;
  const uint64_t offset = h->rings_offset + index * h->ring_bytes;
  if (ftruncate(w->fd, (off_t)(offset + h->ring_bytes)) != 0) return NULL;
  if (posix_fallocate(w->fd, (off_t)offset, (off_t)h->ring_bytes) != 0) {
    (void)ftruncate(w->fd, (off_t)offset);
    return NULL;
  }
  cs_recfile_ring_t *section = (cs_recfile_ring_t *)(void *)(w->base + offset);
  section->device = device;
  section->capacity = h->max_entries;
  w->ring_devices[index] = device;
  w->rings_used = index + 1;
  return section;
}

/* The section counts: its magic, then the header's count. */
static void cs_recfile_publish_section(cs_recfile_writer_t *w, cs_recfile_ring_t *section) {
  __atomic_store_n(&section->magic, CS_RECFILE_RING_MAGIC, __ATOMIC_RELEASE);
  __atomic_store_n(&w->header->ring_count, w->rings_used, __ATOMIC_RELEASE);
}

bool cs_recfile_add_ring(cs_recfile_writer_t *w, cs_ring_t *r, int device) {
  if (atomic_load(&w->detached)) return false;
  cs_recfile_ring_t *section = cs_recfile_new_section(w, device);
  if (!section) return false;
  cs_ring_init_mapped(r, (size_t)w->header->max_entries,
                      (cs_ring_entry_t *)(void *)((char *)section + CS_RECFILE_PAGE), &section->published);
  cs_recfile_publish_section(w, section);
  cs_recfile_calibrate(w);
  return true;
}

cs_recfile_writer_t *cs_recfile_reopen(cs_recfile_writer_t *old, int fd, int *err) {
  if (!atomic_load(&old->detached)) {
    *err = EINVAL;
    return NULL;
  }
  /* The rings in use point into the old sections, now these: the same layout, the same places.
   * They were cleared at the fork, but a ring may have recorded since, in the detached memory
   * (the history of memory passed through records a fork child's calls before the one that
   * activates it and makes this file): that is copied into the new sections. */
  const size_t entry_bytes = sizeof(cs_ring_entry_t);
  uint64_t published[CS_RECFILE_MAX_RINGS] = {0};
  void *saved[CS_RECFILE_MAX_RINGS] = {0};
  for (uint32_t i = 0; i < old->rings_used; i++) {
    const char *at = old->base + old->rings_offset + i * old->ring_bytes;
    published[i] = ((const cs_recfile_ring_t *)(const void *)at)->published;
    const uint64_t n = published[i] < old->params.max_entries ? published[i] : old->params.max_entries;
    if (n && (saved[i] = malloc(n * entry_bytes))) memcpy(saved[i], at + CS_RECFILE_PAGE, n * entry_bytes);
  }
  cs_recfile_writer_t *w = cs_recfile_map(fd, &old->params, old->base, old->map_bytes, err);
  for (uint32_t i = 0; w && i < old->rings_used; i++) {
    cs_recfile_ring_t *section = cs_recfile_new_section(w, old->ring_devices[i]);
    if (!section) break; /* a ring without its section writes to pages no one reads */
    const uint64_t n = published[i] < old->params.max_entries ? published[i] : old->params.max_entries;
    if (saved[i]) memcpy((char *)section + CS_RECFILE_PAGE, saved[i], n * entry_bytes);
    /* the ring's count goes on from here (entries not copied read as damaged, never as whole) */
    section->published = published[i];
    cs_recfile_publish_section(w, section);
  }
  for (uint32_t i = 0; i < old->rings_used; i++) free(saved[i]);
  if (!w) return NULL;
  free(old);
  return w;
}

void cs_recfile_add_stack(void *writer, uint32_t id, const uintptr_t *pcs, size_t n) {
  cs_recfile_writer_t *w = writer;
  if (w->stacks_full || atomic_load_explicit(&w->detached, memory_order_relaxed)) return;
  cs_recfile_header_t *h = w->header;
  if (n > h->stack_depth) n = h->stack_depth;
  const uint64_t used = h->stack_bytes; /* only this function (under the intern lock) changes it */
  const uint64_t size = sizeof(cs_recfile_stack_t) + n * sizeof(uint64_t);
  while (used + size > w->stacks_backed) {
    uint64_t chunk = h->stacks_capacity - w->stacks_backed;
    if (chunk > CS_RECFILE_STACK_CHUNK) chunk = CS_RECFILE_STACK_CHUNK;
    if (chunk == 0 || posix_fallocate(w->fd, (off_t)(h->stacks_offset + w->stacks_backed), (off_t)chunk) != 0) {
      w->stacks_full = true; /* ids stay in order in the log: no later, smaller stack either */
      return;
    }
    w->stacks_backed += chunk;
  }
  char *at = w->base + h->stacks_offset + used;
  const cs_recfile_stack_t record = {.id = id, .n = (uint32_t)n};
  memcpy(at, &record, sizeof record);
  for (size_t i = 0; i < n; i++) {
    const uint64_t pc = pcs[i];
    memcpy(at + sizeof record + i * sizeof pc, &pc, sizeof pc);
  }
  /* the bytes before the count: a reader takes the count first and never walks past the bytes */
  __atomic_store_n(&h->stack_bytes, used + size, __ATOMIC_RELEASE);
  __atomic_store_n(&h->stack_count, h->stack_count + 1, __ATOMIC_RELEASE);
}

/* ---- the module map ---- */

typedef struct cs_recfile_scan_s {
  cs_recfile_writer_t *w;
  bool first;
  bool changed;
} cs_recfile_scan_t;

static bool cs_recfile_module_known(const cs_recfile_header_t *h, const cs_recfile_module_t *mods,
                                    const cs_recfile_module_t *m) {
  for (uint32_t i = 0; i < h->module_count; i++)
    if (mods[i].bias == m->bias && mods[i].lo == m->lo && strcmp(mods[i].path, m->path) == 0) return true;
  return false;
}

/* The GNU build ID from the module's loaded notes (NT_GNU_BUILD_ID, owner "GNU"), if it has one
 * of at most CS_RECFILE_BUILD_ID bytes. Reads mapped memory only. */
static void cs_recfile_build_id(const struct dl_phdr_info *info, cs_recfile_module_t *m) {
  for (size_t i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
    while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
      const ElfW(Nhdr) *note = (const ElfW(Nhdr) *)(const void *)p;
      const size_t name = (note->n_namesz + 3u) & ~(size_t)3, desc = (note->n_descsz + 3u) & ~(size_t)3;
      if (name + desc > (size_t)(end - p) - sizeof *note) break;
      const char *owner = p + sizeof *note;
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && memcmp(owner, "GNU", 4) == 0 &&
          note->n_descsz > 0 && note->n_descsz <= CS_RECFILE_BUILD_ID) {
        memcpy(m->build_id, owner + name, note->n_descsz);
        m->build_id_len = note->n_descsz;
        return;
      }
      p += sizeof *note + name + desc;
    }
  }
}

static int cs_recfile_scan_one(struct dl_phdr_info *info, size_t size, void *data) {
  cs_recfile_scan_t *scan = data;
  cs_recfile_writer_t *w = scan->w;
  if (scan->first) {
    scan->first = false;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
      if (info->dlpi_adds == w->loader_adds && info->dlpi_subs == w->loader_subs) return 1; /* no change */
      w->loader_adds = info->dlpi_adds;
      w->loader_subs = info->dlpi_subs;
    }
    scan->changed = true;
  }
  cs_recfile_header_t *h = w->header;
  if (h->module_count >= CS_RECFILE_MODULES) return 1;
  cs_recfile_module_t m = {.bias = info->dlpi_addr, .lo = UINT64_MAX, .hi = 0};
  for (size_t i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    if (info->dlpi_addr + ph->p_vaddr < m.lo) m.lo = info->dlpi_addr + ph->p_vaddr;
    if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > m.hi) m.hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
  }
  cs_recfile_build_id(info, &m);
  /* the main program has no name here; the vDSO and the like have no file to read */
  const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : h->exe;
  if (m.lo >= m.hi || path[0] != '/' || strlen(path) >= sizeof m.path) return 0;
  memcpy(m.path, path, strlen(path) + 1);
  cs_recfile_module_t *mods = (cs_recfile_module_t *)(void *)(w->base + h->modules_offset);
  if (cs_recfile_module_known(h, mods, &m)) return 0;
  mods[h->module_count] = m;
  __atomic_store_n(&h->module_count, h->module_count + 1, __ATOMIC_RELEASE);
  return 0;
}

void cs_recfile_note_modules(cs_recfile_writer_t *w) {
  if (atomic_load_explicit(&w->detached, memory_order_relaxed)) return;
  /* trylock: a thread in dlopen (holding the loader's lock) may allocate and come here while
   * another holds this lock and waits for the loader's; it goes on, the other records the map */
  if (pthread_mutex_trylock(&w->modules_lock) != 0) return;
  cs_recfile_scan_t scan = {.w = w, .first = true};
  dl_iterate_phdr(cs_recfile_scan_one, &scan);
  pthread_mutex_unlock(&w->modules_lock);
  if (scan.changed) cs_recfile_calibrate(w);
}

void cs_recfile_detach(cs_recfile_writer_t *w) {
  atomic_store(&w->detached, true);
  (void)mmap(w->base, w->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  close(w->fd);
  w->fd = -1;
  w->stacks_full = true;
  pthread_mutex_init(&w->modules_lock, NULL);
  pthread_mutex_init(&w->calib_lock, NULL);
}

void cs_recfile_close(cs_recfile_writer_t *w) {
  if (!w) return;
  munmap(w->base, w->map_bytes);
  if (w->fd >= 0) close(w->fd);
  pthread_mutex_destroy(&w->modules_lock);
  pthread_mutex_destroy(&w->calib_lock);
  free(w);
}
