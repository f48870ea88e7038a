/* SPDX-License-Identifier: Apache-2.0 */
/* The process's allocator frames (contract in memviz/allocator_frames.h).
 *
 * Append-only: a writer fills the next entry under the mutex and then publishes the count with
 * release order; readers load the count with acquire order and read the entries below it, which
 * never change again. So a reader (a snapshot being written, the live record's publisher) never
 * waits for a writer. */
#include "memviz/allocator_frames.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cs_allocator_frame_s {
  char text[CS_GLOB_MAX_BYTES + 1];
  cs_glob_t *glob; /* compiled: 4 KiB, so allocated per entry rather than held for all 64 */
} cs_allocator_frame_t;

static cs_allocator_frame_t cs_af_entries[CS_ALLOCATOR_FRAMES_MAX];
static _Atomic size_t cs_af_count;
static pthread_mutex_t cs_af_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- names ---- */

/* After "operator" in a C++ name, the operator's own characters, so that `operator<` opens no
 * template and `operator()` is not taken for the parameter list. */
static size_t cs_af_operator_end(const char *name, size_t i, size_t len) {
  if (i + 1 < len && name[i] == '(' && name[i + 1] == ')') return i + 2;
  while (i < len && strchr("<>=!+-*/%^&|~[],", name[i]) != NULL) i++;
  return i;
}

/* The qualified name inside a demangled C++ name, [*start, *end): after a return type ("void
 * ns::f<int>(int)": from "ns::"), before the parameter list; the whole name when it has neither
 * (C and Python names). */
static void cs_af_bare_name(const char *name, size_t len, size_t *start, size_t *end) {
  const size_t head = strcspn(name, " (<");
  *start = name[head] == ' ' ? head + 1 : 0;
  *end = len;
  int depth = 0; /* inside template arguments or a lambda's {...} */
  for (size_t i = *start; i < len; i++) {
    const char c = name[i];
    if (strncmp(name + i, "operator", 8) == 0) {
      i = cs_af_operator_end(name, i + 8, len) - 1;
    } else if (c == '<' || c == '{') {
      depth++;
    } else if ((c == '>' || c == '}') && depth > 0) {
      depth--;
    } else if (c == '(' && depth == 0) {
      if (strncmp(name + i, "(anonymous namespace)", 21) == 0) {
        i += 20;
        continue;
      }
      *end = i;
      return;
    }
  }
}

static bool cs_af_matches(const cs_glob_t *g, const char *name, size_t len, size_t start, size_t end) {
  if (cs_glob_match(g, name, len)) return true;
  return (start != 0 || end != len) && cs_glob_match(g, name + start, end - start);
}

bool cs_allocator_frames_match(const cs_glob_t *globs, size_t n, const char *name) {
  if (n == 0 || name == NULL) return false;
  const size_t len = strlen(name);
  size_t start, end;
  cs_af_bare_name(name, len, &start, &end);
  for (size_t i = 0; i < n; i++)
    if (cs_af_matches(&globs[i], name, len, start, end)) return true;
  return false;
}

bool cs_allocator_frame(const cs_frame_t *f) {
  const size_t n = atomic_load_explicit(&cs_af_count, memory_order_acquire);
  if (n == 0 || f->name == NULL) return false;
  const size_t len = strlen(f->name);
  size_t start, end;
  cs_af_bare_name(f->name, len, &start, &end);
  for (size_t i = 0; i < n; i++)
    if (cs_af_matches(cs_af_entries[i].glob, f->name, len, start, end)) return true;
  return false;
}

/* ---- the list ---- */

size_t cs_allocator_frames_count(void) { return atomic_load_explicit(&cs_af_count, memory_order_acquire); }

const char *cs_allocator_frames_text(size_t i) { return cs_af_entries[i].text; }

/* pre: the lock is held, glob checked. */
static int cs_af_add_locked(const char *glob, size_t len, const char **why) {
  const size_t n = atomic_load_explicit(&cs_af_count, memory_order_relaxed);
  for (size_t i = 0; i < n; i++)
    if (strlen(cs_af_entries[i].text) == len && memcmp(cs_af_entries[i].text, glob, len) == 0) return 0;
  if (n == CS_ALLOCATOR_FRAMES_MAX) {
    *why = "the list holds 64 globs already";
    return -1;
  }
  cs_glob_t *compiled = malloc(sizeof *compiled);
  if (compiled == NULL) {
    *why = "no host memory";
    return -1;
  }
  (void)cs_glob_compile(compiled, glob, len);
  cs_allocator_frame_t *e = &cs_af_entries[n];
  memcpy(e->text, glob, len);
  e->text[len] = '\0';
  e->glob = compiled;
  atomic_store_explicit(&cs_af_count, n + 1, memory_order_release);
  return 0;
}

int cs_allocator_frames_add(const char *glob, size_t len, const char **why) {
  if ((*why = cs_glob_check(glob, len)) != NULL) return -1;
  pthread_mutex_lock(&cs_af_lock);
  const int rc = cs_af_add_locked(glob, len, why);
  pthread_mutex_unlock(&cs_af_lock);
  return rc;
}

typedef struct cs_af_list_s {
  char *why;
  size_t why_len;
  size_t items;
  bool adding; /* false: only checking */
} cs_af_list_t;

static bool cs_af_list_item(void *ctx, const char *item, size_t len) {
  cs_af_list_t *l = ctx;
  const char *why = cs_glob_check(item, len);
  if (why == NULL && !l->adding && ++l->items > CS_ALLOCATOR_FRAMES_MAX)
    why = "is one glob more than the 64 a list takes";
  if (why == NULL && l->adding && cs_af_add_locked(item, len, &why) == 0) return true;
  if (why == NULL) return true;
  char shown[65]; /* a glob may hold any byte: its control characters are quoted as '?' */
  size_t n = 0;
  for (; n < len && n < sizeof shown - 1; n++)
    shown[n] = (unsigned char)item[n] < 0x20 || item[n] == 0x7f ? '?' : item[n];
  shown[n] = '\0';
  snprintf(l->why, l->why_len, "`%s%s` %s", shown, n < len ? "..." : "", why);
  return false;
}

int cs_allocator_frames_add_list(const char *text, char *why, size_t why_len) {
  cs_af_list_t l = {.why = why, .why_len = why_len, .items = 0, .adding = false};
  if (!cs_glob_list_each(text, cs_af_list_item, &l)) return -1; /* all or none: checked first */
  pthread_mutex_lock(&cs_af_lock);
  l.adding = true;
  const bool added = cs_glob_list_each(text, cs_af_list_item, &l);
  pthread_mutex_unlock(&cs_af_lock);
  return added ? 0 : -1;
}
