/* SPDX-License-Identifier: Apache-2.0 */
/* cs_thread_log_t: one allocator's event history kept in per-thread chunks (issue 27).
 *
 * cs_ring_t is one array that every thread appends to: with several threads allocating, the slot
 * being written and the ring's head change cores on every event, on top of the allocator's lock.
 * Here each thread appends to a chunk of its own (a few hundred entries; see "where a thread
 * writes" below), so the lines written stay in the writer's cache, as Perfetto's and LTTng's per-thread buffers do. Order is kept exactly: every entry gets
 * the log's next sequence number, and a copy merges the chunks by it. Numbers, not times, order
 * them, because events of two threads can fall in one tick unit and a replay needs the order the
 * allocator made them in. The numbers are 64 bits and never wrap (584 years at a billion events a
 * second): a slot whose thread went idle keeps its part-filled chunk, whose old entries must stay
 * behind the cut however many events pass (with 32-bit numbers compared modulo 2^32 they came back
 * as the newest after 2^31 events; issue 44).
 *
 * Not thread-safe: like cs_ring_t, every call is made under the owner's lock (the allocator's,
 * which events are emitted under already). What is per thread is where an entry goes, not who
 * may call.
 *
 * Where a thread writes: each log has CS_THREAD_LOG_WRITERS writer slots, each with a current
 * chunk, and a thread writes through one slot, the same in every log (a thread-local number), so
 * it finds its chunk in one load whatever the number of logs it writes to: one thread driving 8
 * devices keeps 8 chunks filling, none left half used (issue 33). A thread takes the lowest free
 * slot at its first event and gives it back when it exits (a pthread key's destructor): the next
 * thread goes on filling the chunks it left, whose entries stay in the history until they age out.
 * Threads beyond CS_THREAD_LOG_WRITERS at once share slots, which is correct because every call
 * is made under the owner's lock; they share cache lines, nothing else.
 *
 * Bounded: the chunks are allocated once, enough for `capacity` entries plus CS_THREAD_LOG_SPARE.
 * When none is free, the chunk that filled first is reused, and every entry numbered up to its
 * newest is left out of copies from then on (the `cut`), so a copy is always a suffix of the
 * history, as a ring's is. Full chunks are reused in the order they filled, so entries before the
 * cut survive only in chunks that were current (in a slot) when the reused one filled; at most
 * CS_THREAD_LOG_WRITERS chunks are current, so the slots cost at most two chunks each (the one
 * filling and one straddling the cut) and a copy holds exactly the newest `capacity` entries, the
 * ones a ring of that capacity would hold, for any number of threads, logs and threads that come
 * and go (tests/unit/test_thread_log.c checks each against a ring). Each entry keeps the thread that made it
 * (record/thread_id.h; above the stream index, which needs 10 of its 32 bits): a phase is per
 * thread (issue 44). Memory: 40 bytes an entry (a ring's 32, and its number), plus the spare
 * chunks (330 KiB). Entries and their times are the
 * ring's (record/ring.h): ticks until a copy converts them in place, once. */
#ifndef CS_THREAD_LOG_H
#define CS_THREAD_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/ring.h"

enum {
  CS_THREAD_LOG_CHUNK = 256, /* entries per chunk: 10 KiB with their numbers */
  CS_THREAD_LOG_WRITERS = 16, /* writer slots: threads writing at once beyond it share them */
  CS_THREAD_LOG_SPARE = 2 * CS_THREAD_LOG_WRITERS + 1, /* chunks beyond the capacity */
};
/* The most entries a log keeps (memory: 40 GiB of chunks). */
#define CS_THREAD_LOG_MAX_CAPACITY ((size_t)1 << 30)

typedef struct cs_log_chunk_s cs_log_chunk_t;

typedef struct cs_thread_log_s {
  cs_log_chunk_t *chunks;      /* chunk_count, allocated once */
  void *heap;                  /* the copy's merge heap: chunk_count cursors, allocated once */
  size_t chunk_count;
  size_t capacity;             /* entries kept (CUDASNAP_MAX_ENTRIES); 0 = no history */
  cs_log_chunk_t *current[CS_THREAD_LOG_WRITERS]; /* each writer slot's chunk, with room; or NULL */
  cs_log_chunk_t *free_chunks; /* empty ones, linked */
  cs_log_chunk_t *full_head;   /* full ones in the order they filled: the oldest newest entry first */
  cs_log_chunk_t *full_tail;
  uint64_t pushed;             /* entries pushed since the last clear */
  uint64_t next_seq;           /* the next entry's number */
  uint64_t cut;                /* entries numbered before it may be missing: copies leave them out */
  uint64_t last_time;          /* of the last entry pushed (in ring units, as pushed) */
  cs_ticks_anchor_t start;     /* the process's time origin, and its wall clock (as a ring's) */
  uint64_t start_epoch_us;
  cs_ticks_anchor_t converted_until;
  cs_stream_table_t streams;
  bool enabled;
} cs_thread_log_t;

/* capacity 0 keeps no history. Returns 0 or -CS_EHOSTMEM (also for a capacity over
 * CS_THREAD_LOG_MAX_CAPACITY). */
int cs_thread_log_init(cs_thread_log_t *l, size_t capacity);
void cs_thread_log_destroy(cs_thread_log_t *l);

/* Record one event in the calling thread's chunk (nothing while disabled or with capacity 0). */
void cs_thread_log_push(cs_thread_log_t *l, cs_action_t action, int device, uint64_t addr, uint64_t size,
                        uintptr_t stream, uint32_t stack_id);
/* The same at the time of the last entry pushed (a free completed in the call that requested it,
 * under the same hold of the owner's lock): one clock read fewer. */
void cs_thread_log_push_same_time(cs_thread_log_t *l, cs_action_t action, int device, uint64_t addr,
                                  uint64_t size, uintptr_t stream, uint32_t stack_id);

/* Turn recording on or off; off forgets the history (cs_ring_set_enabled). */
void cs_thread_log_set_enabled(cs_thread_log_t *l, bool enabled);

/* Entries a copy may need room for: fixed at init, so a snapshot can reserve it before it takes
 * the owner's lock (what the copy returns is then trimmed to the capacity). */
size_t cs_thread_log_room(const cs_thread_log_t *l);

/* Copy the history, oldest first in the order the events were made, into out (room for
 * cs_thread_log_room entries), times converted to wall-clock microseconds as cs_ring_copy does,
 * and, unless threads is NULL, the thread that made each entry (record/thread_id.h) into threads
 * (room for as many); returns the count and the number of entries no longer kept. Allocates
 * nothing. */
size_t cs_thread_log_copy(cs_thread_log_t *l, cs_ring_entry_t *out, uint32_t *threads, uint64_t *dropped);

/* Forget the history (after fork, in the child; when recording is turned off). */
void cs_thread_log_clear(cs_thread_log_t *l);

/* In a fork's child: the writer slots of the parent's other threads, which do not exist in the
 * child and will never give them back, are free again. */
void cs_thread_log_postfork_child(void);

#ifdef CS_TESTING
/* The calling thread's writer slot (taking one if it has none), and the slots threads own. */
unsigned cs_thread_log_test_slot(void);
unsigned cs_thread_log_test_slots_owned(void);
#endif

#endif
