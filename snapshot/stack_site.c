/* The site of a recorded stack (contract in snapshot/stack_site.h). */
#include "snapshot/stack_site.h"

#include "memviz/site_rule.h"

typedef struct cs_stack_frames_s {
  const uintptr_t *pcs;
  cs_symbolizer_t *sym;
} cs_stack_frames_t;

static cs_frame_t cs_stack_frame_at(void *ctx, size_t i) {
  const cs_stack_frames_t *st = ctx;
  return cs_symbolize(st->sym, st->pcs[i], 0);
}

uintptr_t cs_stack_site_pc(cs_symbolizer_t *sym, const uintptr_t *pcs, size_t n) {
  cs_stack_frames_t st = {.pcs = pcs, .sym = sym};
  return pcs[cs_site_index(n, cs_stack_frame_at, &st)];
}
