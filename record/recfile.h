/* SPDX-License-Identifier: Apache-2.0 */
/* The recording file (CUDASNAP_RECORD, issue 13): the event histories, the interned stacks and
 * the module map kept in a shared file mapping instead of anonymous memory, so that whatever the
 * process had recorded is in the file however it ends, SIGKILL included (the kernel's page cache
 * keeps every store the process made; nothing has to run at the end). `cudasnap recover` reads it
 * back into a snapshot.
 *
 * This header is the format, and nothing else: the library writes it (record/recfile.c), the tool
 * reads it (reader/recording.c) and links no record/ code. All integers are native-endian (the
 * file is read on the machine that wrote it); the tool checks the magic, the version and every
 * offset and count before it trusts one.
 *
 * Layout (offsets in the header; every section starts on a page):
 *   header     one page: identity, clock, section offsets, argv
 *   modules    CS_RECFILE_MODULES fixed records, appended as modules are seen
 *   stacks     an append-only log of interned stacks {id, n, pcs[n]}, ids 1, 2, ... in order
 *              (each pc a return address or a Python frame entry: record/stack_entry.h)
 *   rings      one section per context, added as contexts are created, and one for the memory
 *              passed through the cache (device CS_RECFILE_RING_PASSTHROUGH), added at its first
 *              event: a page of ring header, then `capacity` 32-byte cs_ring_entry_t
 *              (record/ring_entry.h), used as the ring itself
 *
 * The pass-through ring's entries carry their own devices, like every entry, and their kind of
 * memory (memviz/passthrough.h's cs_passthrough_kind_t) in the top bits of stack_id: stack id |
 * (kind + 1) << CS_RECFILE_KIND_SHIFT. A context's entries have 0 there (the cache's memory).
 *
 * Publication, and what a death at any instruction leaves: every counter below (module_count,
 * stack_count + stack_bytes, ring_count, a ring's `published`) is stored with release order after
 * the thing it counts is whole, so a reader never counts a half-written record. Ring entries carry
 * their own check in the upper bits of `stream` (CS_RECFILE_TAG_*): the writer clears the tag,
 * writes the entry, then stores the tag with release order, so an entry cut short by the kill has
 * tag 0 and one rewritten in place is never mistaken for the old or the new (see record/ring.c).
 * The tag also catches pages that reached the disk out of order after a machine crash. */
#ifndef CS_RECFILE_H
#define CS_RECFILE_H

#include <stdint.h>

#define CS_RECFILE_MAGIC "CSNAPREC"
enum {
  CS_RECFILE_VERSION = 3,         /* 3: oom_state entries after oom entries (record/ring_entry.h); 2: the
                                     pass-through ring, kinds in stack ids; 1 had the cache's only */
  CS_RECFILE_PAGE = 4096,
  CS_RECFILE_MAX_RINGS = 65,      /* rings in the file (64 contexts and the pass-through ring's, or 65
                                     contexts); later ones keep theirs in memory */
  CS_RECFILE_MODULES = 1024,      /* module records; later modules are not recorded */
  CS_RECFILE_PATH = 496,          /* bytes of a module path, NUL included (longer ones are cut) */
  CS_RECFILE_ARGV = 2048,         /* bytes of argv, NUL-separated (the rest is cut) */
  CS_RECFILE_MAX_DEPTH = 256,     /* PCs per stack at most (CUDASNAP_STACK_DEPTH's bound) */
  CS_RECFILE_TICKS_MONOTONIC = 0, /* ticks are CLOCK_MONOTONIC nanoseconds */
  CS_RECFILE_TICKS_TSC = 1,       /* ticks are the time-stamp counter: rate from the two anchors */
};
/* conf_flags: the settings were recorded; and two of them. conf_roundup has one value per
 * power-of-two interval (common/cs_alloc_conf.h's CS_ROUNDUP_INTERVALS). */
enum {
  CS_RECFILE_CONF_KNOWN = 1,
  CS_RECFILE_CONF_SPLIT_LARGE = 2,
  CS_RECFILE_CONF_IPC_SMALL = 4,
  CS_RECFILE_ROUNDUP = 16,
};
/* The stack log's size at most: past it, new stacks have no frames in a recovery. */
#define CS_RECFILE_STACK_BYTES_MAX ((uint64_t)64 << 20)
#define CS_RECFILE_RING_MAGIC UINT32_C(0x474e4952) /* "RING" */
/* A ring section's device that marks the pass-through ring (its entries name their devices). */
enum { CS_RECFILE_RING_PASSTHROUGH = -1 };

/* The kind of memory in a pass-through entry's stack_id: stack ids stay below 2^24 (the library
 * interns at most 2^18 stacks), the kind + 1 is above them; 0 there: the cache's memory. */
enum { CS_RECFILE_KIND_SHIFT = 24 };
#define CS_RECFILE_STACK_MASK ((UINT32_C(1) << CS_RECFILE_KIND_SHIFT) - 1)

static inline uint32_t cs_recfile_kind_stack(int kind, uint32_t stack_id) {
  return (stack_id & CS_RECFILE_STACK_MASK) | (uint32_t)(kind + 1) << CS_RECFILE_KIND_SHIFT;
}
/* The kind of an entry's stack_id, -1 for the cache's memory. */
static inline int cs_recfile_stack_kind(uint32_t stack_id) { return (int)(stack_id >> CS_RECFILE_KIND_SHIFT) - 1; }

/* A ring entry's `stream`: the stream index in the low bits (record/ring.h keeps fewer than
 * 2^CS_RECFILE_TAG_SHIFT), the tag above. The tag of the k-th entry pushed (k from 1) is
 * CS_RECFILE_TAG_SET | (k & CS_RECFILE_TAG_SEQ), never 0. */
enum { CS_RECFILE_TAG_SHIFT = 10 };
#define CS_RECFILE_TAG_SEQ UINT32_C(0x1fffff)  /* 21 bits of the push number */
#define CS_RECFILE_TAG_SET UINT32_C(0x200000)  /* always set in a whole entry's tag */
#define CS_RECFILE_STREAM_MASK ((UINT32_C(1) << CS_RECFILE_TAG_SHIFT) - 1)

static inline uint32_t cs_recfile_tag(uint64_t k) {
  return CS_RECFILE_TAG_SET | ((uint32_t)k & CS_RECFILE_TAG_SEQ);
}

typedef struct cs_recfile_header_s {
  char magic[8];              /* CS_RECFILE_MAGIC, written last at creation */
  uint32_t version;           /* CS_RECFILE_VERSION */
  uint32_t header_bytes;      /* CS_RECFILE_PAGE */
  int64_t pid;
  uint32_t tick_source;       /* CS_RECFILE_TICKS_* */
  uint32_t stack_depth;       /* CUDASNAP_STACK_DEPTH */
  uint64_t origin_ticks;      /* the process's time origin (record/ticks.h): entry times count */
  uint64_t origin_monotonic_ns; /* from these ticks, */
  uint64_t origin_epoch_us;   /* and this is its wall clock */
  uint64_t calib_ticks[2];    /* a later anchor, in two slots (the one calib_slot names is whole, */
  uint64_t calib_monotonic_ns[2]; /* published): ticks -> ns at the rate between it and the origin */
  uint64_t max_entries;       /* CUDASNAP_MAX_ENTRIES: every ring's capacity */
  uint64_t modules_offset;
  uint64_t stacks_offset;
  uint64_t stacks_capacity;   /* bytes */
  uint64_t rings_offset;
  uint64_t ring_bytes;        /* one ring section: a page, then max_entries entries, page-rounded */
  uint32_t ring_max;          /* CS_RECFILE_MAX_RINGS */
  uint32_t ring_count;        /* sections in use; published */
  uint32_t module_count;      /* published */
  uint32_t stack_count;       /* stacks in the log; published together with stack_bytes */
  uint64_t stack_bytes;       /* bytes of the log in use */
  uint32_t argc;              /* strings in argv[] */
  uint32_t calib_slot;        /* 0 or 1; published */
  char exe[CS_RECFILE_PATH];  /* /proc/self/exe */
  char argv[CS_RECFILE_ARGV]; /* NUL-separated */
  /* The allocator's settings that decide how large a block is for the bytes asked (the rounding
   * of allocator/size_class.h and its split rule), so that `cudasnap recover` draws each block at
   * the size the allocator gave it, as a dump does. conf_flags is 0 in files from before these
   * fields (the header page was zeros there): blocks are then drawn at the bytes asked. */
  uint32_t conf_flags;        /* CS_RECFILE_CONF_* */
  uint32_t conf_roundup[CS_RECFILE_ROUNDUP]; /* roundup_power2_divisions */
  uint64_t conf_max_split_size; /* bytes; UINT64_MAX: unlimited */
} cs_recfile_header_t;
_Static_assert(sizeof(cs_recfile_header_t) <= CS_RECFILE_PAGE, "the header is one page");

/* A loaded module: PCs in [lo, hi) belong to the file at path, loaded at bias (dlpi_addr), whose
 * GNU build ID (from its loaded PT_NOTE) was build_id[0, build_id_len), 0 when it has none: the
 * tool names frames from the file only when it still has that ID. */
enum { CS_RECFILE_BUILD_ID = 20 };
typedef struct cs_recfile_module_s {
  uint64_t lo, hi, bias;
  uint32_t build_id_len;
  uint8_t build_id[CS_RECFILE_BUILD_ID];
  char path[CS_RECFILE_PATH - 24 - 4 - CS_RECFILE_BUILD_ID];
} cs_recfile_module_t;
_Static_assert(sizeof(cs_recfile_module_t) == CS_RECFILE_PATH, "module records are fixed");

/* One record of the stack log; pcs[n] follow, innermost first. */
typedef struct cs_recfile_stack_s {
  uint32_t id;
  uint32_t n;
} cs_recfile_stack_t;

/* The first page of a ring section. */
typedef struct cs_recfile_ring_s {
  uint32_t magic;     /* CS_RECFILE_RING_MAGIC */
  int32_t device;
  uint64_t capacity;  /* entries */
  uint64_t published; /* entries pushed since the ring's last clear; published after each */
} cs_recfile_ring_t;

#endif
