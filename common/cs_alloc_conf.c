/* SPDX-License-Identifier: Apache-2.0 */
/* CUDASNAP_ALLOC_CONF: PyTorch's PYTORCH_CUDA_ALLOC_CONF syntax and keys (snapshot-format.md
 * section 7, c10/core/AllocatorConfig.cpp), read without allocating by a lexer that hands out
 * one token at a time.
 *
 * PyTorch throws at the first problem. Here a bad entry costs one warning and nothing else: the
 * parser skips to the next comma outside brackets and the other entries still apply. */
#include "common/cs_alloc_conf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_compiler.h"
#include "common/cs_log.h"
#include "common/cs_parse.h"

#define CS_MIB ((size_t)1 << 20)

/* PyTorch's kLargeBuffer: max_split_size_mb and max_non_split_rounding_mb go no lower. */
enum { CS_CONF_MIN_MIB = 20 };

/* pinned_max_register_threads() in PyTorch. */
enum { CS_CONF_MAX_REGISTER_THREADS = 128 };

void cs_alloc_conf_init(cs_alloc_conf_t *conf) {
  /* Zero is garbage collection off, no roundup divisions and the IPC-safe large pool. */
  memset(conf, 0, sizeof *conf);
  conf->max_split_size = SIZE_MAX;
  conf->max_non_split_rounding = CS_CONF_MIN_MIB * CS_MIB;
  conf->free_mode = CS_FREE_SYNC;
  conf->cache = true;
}

/* ------------------------------------------------------------------------------------------------
 * Lexer
 * ---------------------------------------------------------------------------------------------- */

/* A token is one of the characters , : [ ] (its kind is the character), a word, or the end. */
enum { CS_TOKEN_END = '\0', CS_TOKEN_WORD = -1 };

/* Longer than any key or value; a longer word is marked cut and never matches anything. */
enum { CS_CONF_WORD_MAX = 64 };

typedef struct cs_conf_lexer_s {
  const char *next;            /* the first character after the current token */
  unsigned depth;              /* '[' left open before the current token */
  int kind;                    /* of the current token */
  const char *start;           /* where the current token begins, for quoting entries */
  char word[CS_CONF_WORD_MAX]; /* kind == CS_TOKEN_WORD: its characters, spaces dropped */
  bool word_cut;               /* the word did not fit in word[] */
} cs_conf_lexer_t;

static bool cs_conf_is_punctuation(char c) { return c == ',' || c == ':' || c == '[' || c == ']'; }

/* Spaces are dropped everywhere, inside words too ("1 00" is 100), as PyTorch's lexer does. */
static void cs_conf_advance(cs_conf_lexer_t *lx) {
  if (lx->kind == '[') lx->depth++;
  if (lx->kind == ']' && lx->depth > 0) lx->depth--;
  while (*lx->next == ' ') lx->next++;
  lx->start = lx->next;
  if (*lx->next == '\0' || cs_conf_is_punctuation(*lx->next)) {
    lx->kind = *lx->next;
    if (lx->kind != CS_TOKEN_END) lx->next++;
    return;
  }
  size_t len = 0;
  lx->kind = CS_TOKEN_WORD;
  lx->word_cut = false;
  for (; *lx->next != '\0' && !cs_conf_is_punctuation(*lx->next); lx->next++) {
    if (*lx->next == ' ') continue;
    if (len + 1 < sizeof lx->word) {
      lx->word[len++] = *lx->next;
    } else {
      lx->word_cut = true;
    }
  }
  lx->word[len] = '\0';
}

/* Move past the current token if it is of this kind. */
static bool cs_conf_take(cs_conf_lexer_t *lx, int kind) {
  if (lx->kind != kind) return false;
  cs_conf_advance(lx);
  return true;
}

/* Copy the current token out and move past it, if it is a whole word. */
static bool cs_conf_take_word(cs_conf_lexer_t *lx, char word[CS_CONF_WORD_MAX]) {
  if (lx->kind != CS_TOKEN_WORD || lx->word_cut) return false;
  memcpy(word, lx->word, sizeof lx->word);
  cs_conf_advance(lx);
  return true;
}

/* ------------------------------------------------------------------------------------------------
 * Values
 * ---------------------------------------------------------------------------------------------- */


static bool cs_is_power_of_two(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

static bool cs_conf_take_u64(cs_conf_lexer_t *lx, uint64_t *out) {
  char word[CS_CONF_WORD_MAX];
  return cs_conf_take_word(lx, word) && cs_parse_u64(word, out);
}

/* True and False are PyTorch's words; true, false, 1 and 0 are accepted as well. */
static bool cs_conf_take_bool(cs_conf_lexer_t *lx, bool *out) {
  char word[CS_CONF_WORD_MAX];
  if (!cs_conf_take_word(lx, word)) return false;
  if (strcmp(word, "True") == 0 || strcmp(word, "true") == 0 || strcmp(word, "1") == 0) {
    *out = true;
    return true;
  }
  if (strcmp(word, "False") == 0 || strcmp(word, "false") == 0 || strcmp(word, "0") == 0) {
    *out = false;
    return true;
  }
  return false;
}

/* An integer number of MiB, at least 20, as bytes. A count too large for size_t is clamped, as
 * PyTorch clamps it, rather than rejected. */
static bool cs_conf_take_mib(cs_conf_lexer_t *lx, size_t *bytes) {
  uint64_t mib;
  if (!cs_conf_take_u64(lx, &mib) || mib < CS_CONF_MIN_MIB) return false;
  *bytes = mib > SIZE_MAX / CS_MIB ? SIZE_MAX / CS_MIB * CS_MIB : (size_t)mib * CS_MIB;
  return true;
}

/* A number strictly between 0 and 1. Checking the characters first keeps strtod from taking
 * leading spaces, nan, inf or hex; its range check still catches everything else. */
static bool cs_conf_take_fraction(cs_conf_lexer_t *lx, double *out) {
  char word[CS_CONF_WORD_MAX];
  if (!cs_conf_take_word(lx, word) || strspn(word, "0123456789.eE+-") != strlen(word)) return false;
  int saved_errno = errno; /* parsing runs inside the program's CUDA calls: leave errno alone */
  errno = 0;
  char *end;
  double value = strtod(word, &end);
  bool valid = *end == '\0' && errno != ERANGE && value > 0.0 && value < 1.0;
  errno = saved_errno;
  if (valid) *out = value;
  return valid;
}

/* ------------------------------------------------------------------------------------------------
 * roundup_power2_divisions
 * ---------------------------------------------------------------------------------------------- */

/* 0 (no roundup) or a power of two that fits the table's uint32_t. */
static bool cs_conf_take_divisions(cs_conf_lexer_t *lx, uint32_t *out) {
  uint64_t n;
  if (!cs_conf_take_u64(lx, &n) || (n != 0 && !cs_is_power_of_two(n)) || n > UINT32_MAX) {
    return false;
  }
  *out = (uint32_t)n;
  return true;
}

static void cs_conf_fill_divisions(uint32_t *divisions, size_t from, size_t to, uint32_t value) {
  for (size_t i = from; i < to; i++) divisions[i] = value;
}

/* The interval that starts at `mib` MiB, a power of two; starts from 32 GiB up share the last. */
static size_t cs_conf_interval_index(uint64_t mib) {
  size_t log2 = (size_t)(63 - __builtin_clzll(mib));
  return log2 < CS_ROUNDUP_INTERVALS ? log2 : CS_ROUNDUP_INTERVALS - 1;
}

/* PyTorch's list form, after the '[': for example [256:1,512:2,1024:4,>:8]. A key is the start of
 * an interval in MiB; the first key also sets every interval below it, and > sets every interval
 * after the last key given. Intervals no key reaches keep their values. */
static bool cs_conf_take_division_list(cs_conf_lexer_t *lx, uint32_t *divisions) {
  bool first = true;
  size_t last = 0;
  while (!cs_conf_take(lx, ']')) {
    char interval[CS_CONF_WORD_MAX];
    uint32_t value;
    if (!cs_conf_take_word(lx, interval) || !cs_conf_take(lx, ':') ||
        !cs_conf_take_divisions(lx, &value)) {
      return false;
    }
    if (strcmp(interval, ">") == 0) {
      cs_conf_fill_divisions(divisions, last + 1, CS_ROUNDUP_INTERVALS, value);
    } else {
      uint64_t mib;
      if (!cs_parse_u64(interval, &mib) || !cs_is_power_of_two(mib)) return false;
      size_t index = cs_conf_interval_index(mib);
      if (first) cs_conf_fill_divisions(divisions, 0, index, value);
      divisions[index] = value;
      first = false;
      last = index;
    }
    if (!cs_conf_take(lx, ',') && lx->kind != ']') return false;
  }
  return true;
}

/* ------------------------------------------------------------------------------------------------
 * Keys
 * ---------------------------------------------------------------------------------------------- */

typedef enum cs_conf_verdict_e {
  CS_CONF_ACCEPTED,    /* stored, or valid and of no consequence to cudasnap */
  CS_CONF_REJECTED,    /* not a value of this key */
  CS_CONF_UNSUPPORTED, /* valid for PyTorch, but asks for something cudasnap does not do */
} cs_conf_verdict_t;

/* Reads a key's value from the token after its ':'. It may write conf even when it rejects the
 * value, because it writes into a copy that is kept only for a whole, accepted entry. */
typedef cs_conf_verdict_t cs_conf_parse_fn(cs_conf_lexer_t *lx, cs_alloc_conf_t *conf);

static cs_conf_verdict_t cs_conf_accepted_if(bool valid) {
  return valid ? CS_CONF_ACCEPTED : CS_CONF_REJECTED;
}

static cs_conf_verdict_t cs_conf_parse_max_split_size(cs_conf_lexer_t *lx, cs_alloc_conf_t *conf) {
  return cs_conf_accepted_if(cs_conf_take_mib(lx, &conf->max_split_size));
}

static cs_conf_verdict_t cs_conf_parse_max_non_split_rounding(cs_conf_lexer_t *lx,
                                                               cs_alloc_conf_t *conf) {
  return cs_conf_accepted_if(cs_conf_take_mib(lx, &conf->max_non_split_rounding));
}

static cs_conf_verdict_t cs_conf_parse_gc_threshold(cs_conf_lexer_t *lx, cs_alloc_conf_t *conf) {
  return cs_conf_accepted_if(cs_conf_take_fraction(lx, &conf->garbage_collection_threshold));
}

/* One value for every interval, or a list. */
static cs_conf_verdict_t cs_conf_parse_roundup(cs_conf_lexer_t *lx, cs_alloc_conf_t *conf) {
  uint32_t *divisions = conf->roundup_power2_divisions;
  if (cs_conf_take(lx, '[')) return cs_conf_accepted_if(cs_conf_take_division_list(lx, divisions));
  uint32_t value;
  if (!cs_conf_take_divisions(lx, &value)) return CS_CONF_REJECTED;
  cs_conf_fill_divisions(divisions, 0, CS_ROUNDUP_INTERVALS, value);
  return CS_CONF_ACCEPTED;
}

static cs_conf_verdict_t cs_conf_parse_expandable_segments(cs_conf_lexer_t *lx,
                                                           cs_alloc_conf_t *conf) {
  (void)conf;
  bool expandable;
  if (!cs_conf_take_bool(lx, &expandable)) return CS_CONF_REJECTED;
  return expandable ? CS_CONF_UNSUPPORTED : CS_CONF_ACCEPTED;
}

static cs_conf_verdict_t cs_conf_parse_split_large(cs_conf_lexer_t *lx, cs_alloc_conf_t *conf) {
  return cs_conf_accepted_if(cs_conf_take_bool(lx, &conf->split_large));
}

static cs_conf_verdict_t cs_conf_parse_ipc_small(cs_conf_lexer_t *lx, cs_alloc_conf_t *conf) {
  return cs_conf_accepted_if(cs_conf_take_bool(lx, &conf->ipc_small));
}

/* The keys below set PyTorch's lock policy, graph-capture policy and pinned host allocator, none
 * of which cudasnap's device cache has: they are checked, so that a typo is still reported, and
 * then have no effect. */
static cs_conf_verdict_t cs_conf_parse_ignored_bool(cs_conf_lexer_t *lx, cs_alloc_conf_t *conf) {
  (void)conf;
  bool ignored;
  return cs_conf_accepted_if(cs_conf_take_bool(lx, &ignored));
}

static cs_conf_verdict_t cs_conf_parse_register_threads(cs_conf_lexer_t *lx,
                                                        cs_alloc_conf_t *conf) {
  (void)conf;
  uint64_t threads;
  return cs_conf_accepted_if(cs_conf_take_u64(lx, &threads) && cs_is_power_of_two(threads) &&
                             threads <= CS_CONF_MAX_REGISTER_THREADS);
}

static cs_conf_verdict_t cs_conf_parse_ignored_mib(cs_conf_lexer_t *lx, cs_alloc_conf_t *conf) {
  (void)conf;
  uint64_t mib;
  return cs_conf_accepted_if(cs_conf_take_u64(lx, &mib));
}

static cs_conf_verdict_t cs_conf_parse_backend(cs_conf_lexer_t *lx, cs_alloc_conf_t *conf) {
  (void)conf;
  char backend[CS_CONF_WORD_MAX];
  if (!cs_conf_take_word(lx, backend)) return CS_CONF_REJECTED;
  if (strcmp(backend, "native") == 0) return CS_CONF_ACCEPTED;
  if (strcmp(backend, "cudaMallocAsync") == 0) return CS_CONF_UNSUPPORTED;
  return CS_CONF_REJECTED;
}

typedef struct cs_conf_key_s {
  const char *name;
  cs_conf_parse_fn *parse;
  const char *accepted;    /* what the key takes, for the warning about a rejected value */
  const char *unsupported; /* why a CS_CONF_UNSUPPORTED value is ignored */
} cs_conf_key_t;

static const cs_conf_key_t cs_conf_keys[] = {
    {"max_split_size_mb", cs_conf_parse_max_split_size, "an integer number of MiB, at least 20",
     NULL},
    {"max_non_split_rounding_mb", cs_conf_parse_max_non_split_rounding,
     "an integer number of MiB, at least 20", NULL},
    {"garbage_collection_threshold", cs_conf_parse_gc_threshold,
     "a number greater than 0 and less than 1", NULL},
    {"roundup_power2_divisions", cs_conf_parse_roundup,
     "a power of two or 0, or a list such as [256:1,512:2,>:8] of interval starts in MiB "
     "(powers of two, or > for all larger) and powers of two or 0",
     NULL},
    {"expandable_segments", cs_conf_parse_expandable_segments, "True or False",
     "cudasnap does not support expandable segments"},
    {"split_large", cs_conf_parse_split_large, "True or False", NULL},
    {"ipc_small", cs_conf_parse_ipc_small, "True or False", NULL},
    {"release_lock_on_cudamalloc", cs_conf_parse_ignored_bool, "True or False", NULL},
    {"graph_capture_record_stream_reuse", cs_conf_parse_ignored_bool, "True or False", NULL},
    {"pinned_use_cuda_host_register", cs_conf_parse_ignored_bool, "True or False", NULL},
    {"pinned_use_background_threads", cs_conf_parse_ignored_bool, "True or False", NULL},
    {"pinned_num_register_threads", cs_conf_parse_register_threads,
     "a power of two up to 128", NULL},
    {"pinned_reserve_segment_size_mb", cs_conf_parse_ignored_mib, "an integer number of MiB",
     NULL},
    {"backend", cs_conf_parse_backend, "native or cudaMallocAsync",
     "cudasnap always caches natively"},
};

static const cs_conf_key_t *cs_conf_find_key(const char *name) {
  for (size_t i = 0; i < CS_ARRAY_SIZE(cs_conf_keys); i++) {
    if (strcmp(cs_conf_keys[i].name, name) == 0) return &cs_conf_keys[i];
  }
  return NULL;
}

/* ------------------------------------------------------------------------------------------------
 * Entries and warnings
 * ---------------------------------------------------------------------------------------------- */

/* Longest part of an entry a warning quotes, so that the line still ends with what is accepted. */
enum { CS_CONF_QUOTE_MAX = 128 };

/* Holds every key name; a longer list would only be cut, like any long log line. */
enum { CS_CONF_KEY_LIST_MAX = 512 };

static void cs_conf_list_keys(char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < CS_ARRAY_SIZE(cs_conf_keys); i++) {
    int n = snprintf(buf + used, size - used, "%s%s", i > 0 ? ", " : "", cs_conf_keys[i].name);
    if (n < 0 || (size_t)n >= size - used) return;
    used += (size_t)n;
  }
}

static int cs_conf_report(const char *source, const cs_conf_key_t *key, cs_conf_verdict_t verdict,
                          const char *entry, size_t len) {
  int quoted = len < CS_CONF_QUOTE_MAX ? (int)len : CS_CONF_QUOTE_MAX;
  const char *cut = (size_t)quoted < len ? "..." : "";
  if (key == NULL) {
    char keys[CS_CONF_KEY_LIST_MAX];
    cs_conf_list_keys(keys, sizeof keys);
    cs_log_warn("%s: %.*s%s is not accepted (unknown key; the keys are %s); entry ignored", source,
                quoted, entry, cut, keys);
  } else if (verdict == CS_CONF_UNSUPPORTED) {
    cs_log_warn("%s: %.*s%s is ignored: %s", source, quoted, entry, cut, key->unsupported);
  } else {
    cs_log_warn("%s: %.*s%s is not accepted (%s takes %s); entry ignored", source, quoted, entry,
                cut, key->name, key->accepted);
  }
  return 1;
}

static bool cs_conf_at_entry_end(const cs_conf_lexer_t *lx) {
  return lx->kind == CS_TOKEN_END || (lx->kind == ',' && lx->depth == 0);
}

static size_t cs_conf_trimmed_len(const char *start, const char *end) {
  while (end > start && end[-1] == ' ') end--;
  return (size_t)(end - start);
}

/* Parse the entry that starts at the current token and stop on the ',' or the end after it.
 * Returns the number of problems reported: 0 or 1. */
static int cs_conf_parse_entry(cs_conf_lexer_t *lx, const char *source, cs_alloc_conf_t *conf) {
  const char *entry = lx->start;
  char name[CS_CONF_WORD_MAX];
  const cs_conf_key_t *key = cs_conf_take_word(lx, name) ? cs_conf_find_key(name) : NULL;
  /* A value can turn out bad after it was read ("max_split_size_mb:64:1"), so it is parsed into
   * a copy that is kept only when the whole entry is good. */
  cs_alloc_conf_t parsed = *conf;
  cs_conf_verdict_t verdict = CS_CONF_REJECTED;
  if (key != NULL && cs_conf_take(lx, ':')) {
    verdict = key->parse(lx, &parsed);
    if (!cs_conf_at_entry_end(lx)) verdict = CS_CONF_REJECTED;
  }
  while (!cs_conf_at_entry_end(lx)) cs_conf_advance(lx); /* the rest of a bad entry */
  if (verdict == CS_CONF_ACCEPTED) {
    *conf = parsed;
    return 0;
  }
  return cs_conf_report(source, key, verdict, entry, cs_conf_trimmed_len(entry, lx->start));
}

int cs_alloc_conf_parse(const char *text, const char *source, cs_alloc_conf_t *conf) {
  cs_conf_lexer_t lx = {.next = text, .kind = CS_TOKEN_END};
  cs_conf_advance(&lx);
  int problems = 0;
  while (lx.kind != CS_TOKEN_END) {
    /* Between entries; also skips empty ones, such as a trailing comma (PyTorch allows one). */
    if (cs_conf_take(&lx, ',')) continue;
    problems += cs_conf_parse_entry(&lx, source, conf);
  }
  return problems;
}
