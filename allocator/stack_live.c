/* SPDX-License-Identifier: Apache-2.0 */
/* Live blocks and bytes per stack id (contract in allocator/stack_live.h). */
#include "allocator/stack_live.h"

#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"

void cs_stack_live_init(cs_stack_live_table_t *t) { memset(t, 0, sizeof *t); }

void cs_stack_live_destroy(cs_stack_live_table_t *t) {
  for (size_t p = 0; p < t->page_count; p++) free(t->pages[p]);
  free(t->pages);
  memset(t, 0, sizeof *t);
}

CS_COLD int cs_stack_live_make_page(cs_stack_live_table_t *t, uint32_t stack_id) {
  size_t p = stack_id / CS_STACK_LIVE_PAGE;
  if (p >= t->page_count) {
    /* doubling: a program's ids come in order, so the slots grow O(log) times */
    size_t count = t->page_count ? t->page_count : 1;
    while (count <= p) count *= 2;
    cs_stack_live_t **pages = realloc(t->pages, count * sizeof *pages);
    if (!pages) return -CS_EHOSTMEM;
    memset(pages + t->page_count, 0, (count - t->page_count) * sizeof *pages);
    t->pages = pages;
    t->page_count = count;
  }
  if (!t->pages[p]) {
    t->pages[p] = calloc(CS_STACK_LIVE_PAGE, sizeof *t->pages[p]);
    if (!t->pages[p]) return -CS_EHOSTMEM;
  }
  return 0;
}

size_t cs_stack_live_copy_page(const cs_stack_live_table_t *t, size_t page, cs_stack_live_t out[CS_STACK_LIVE_PAGE]) {
  if (page < t->page_count && t->pages[page]) memcpy(out, t->pages[page], CS_STACK_LIVE_PAGE * sizeof *out);
  else memset(out, 0, CS_STACK_LIVE_PAGE * sizeof *out);
  return t->page_count;
}
