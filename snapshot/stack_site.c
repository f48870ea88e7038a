/* SPDX-License-Identifier: Apache-2.0 */
/* The site of a recorded stack (contract in snapshot/stack_site.h). */
#include "snapshot/stack_site.h"

#include "memviz/site_rule.h"

/* The frames of a stack, one address's inlined functions after another; the rule asks for them
 * in order, each once, so a cursor walks them. */
typedef struct cs_stack_frames_s {
  const uintptr_t *pcs;
  cs_symbolizer_t *sym;
  size_t pc;                /* the address of the frame asked for next */
  size_t at, count;         /* that frame among the address's */
  const cs_frame_t *frames; /* the address's frames */
} cs_stack_frames_t;

static cs_frame_t cs_stack_frame_at(void *ctx, size_t i) {
  cs_stack_frames_t *st = ctx;
  (void)i; /* asked in order: the cursor is at it */
  while (st->at == st->count) {
    st->count = cs_symbolize_frames(st->sym, st->pcs[st->pc++], 0, &st->frames);
    st->at = 0;
  }
  return st->frames[st->at++];
}

/* The k-th frame of the stack, k below its count of frames. */
static cs_frame_t cs_stack_frame_nth(cs_symbolizer_t *sym, const uintptr_t *pcs, size_t k) {
  for (size_t i = 0;; i++) {
    const cs_frame_t *frames;
    const size_t count = cs_symbolize_frames(sym, pcs[i], 0, &frames);
    if (k < count) return frames[k];
    k -= count;
  }
}

cs_frame_t cs_stack_site(cs_symbolizer_t *sym, const uintptr_t *pcs, size_t n) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    const cs_frame_t *frames;
    total += cs_symbolize_frames(sym, pcs[i], 0, &frames); /* cached: asked again below */
  }
  cs_stack_frames_t st = {.pcs = pcs, .sym = sym, .pc = 0, .at = 0, .count = 0, .frames = NULL};
  return cs_stack_frame_nth(sym, pcs, cs_site_index(total, cs_stack_frame_at, &st));
}
