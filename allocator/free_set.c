/* SPDX-License-Identifier: Apache-2.0 */
/* The free set's red-black tree (free_set.h). Textbook insert and delete with parent links; the
 * code for the two mirror-image sides is written once, indexed by a direction d (0 = lower,
 * 1 = higher). A missing child counts as black. */
#include "allocator/free_set.h"

static inline cs_block_t **cs_children(cs_block_t *b) { return b->u.free.link.child; }
static inline cs_block_t *cs_parent(const cs_block_t *b) { return b->u.free.link.parent; }

static inline bool cs_is_red(const cs_block_t *b) {
  return b != NULL && (b->size_and_flags & CS_BLOCK_RED_BIT) != 0;
}
static inline void cs_set_red(cs_block_t *b) { b->size_and_flags |= CS_BLOCK_RED_BIT; }
static inline void cs_set_black(cs_block_t *b) { b->size_and_flags &= ~(uint64_t)CS_BLOCK_RED_BIT; }
static inline void cs_copy_colour(cs_block_t *dst, const cs_block_t *src) {
  if (cs_is_red(src)) cs_set_red(dst);
  else cs_set_black(dst);
}

/* Point whatever pointed at old (its parent's child slot, or the root) at new. */
static inline void cs_replace_child(cs_free_set_t *set, cs_block_t *parent, const cs_block_t *old,
                                    cs_block_t *new_child) {
  if (!parent) set->root = new_child;
  else cs_children(parent)[cs_children(parent)[1] == old] = new_child;
}

/* Lift x's child on side !d into x's place; x becomes that node's child on side d. */
static void cs_rotate(cs_free_set_t *set, cs_block_t *x, int d) {
  cs_block_t *y = cs_children(x)[!d];
  cs_block_t *inner = cs_children(y)[d];
  cs_children(x)[!d] = inner;
  if (inner) inner->u.free.link.parent = x;
  y->u.free.link.parent = cs_parent(x);
  cs_replace_child(set, cs_parent(x), x, y);
  cs_children(y)[d] = x;
  x->u.free.link.parent = y;
}

void cs_free_set_insert(cs_free_set_t *set, cs_block_t *z) {
  cs_block_t *parent = NULL;
  int d = 0;
  for (cs_block_t *n = set->root; n; n = cs_children(n)[d]) {
    parent = n;
    d = cs_free_set_less(n, z); /* z goes to the higher side of every smaller node */
  }
  z->u.free.link = (cs_free_link_t){.child = {NULL, NULL}, .parent = parent};
  cs_set_red(z);
  if (parent) cs_children(parent)[d] = z;
  else set->root = z;

  /* Restore "no red node has a red parent"; the root is black, so a red parent has a parent. */
  while ((parent = cs_parent(z)) && cs_is_red(parent)) {
    cs_block_t *grand = cs_parent(parent);
    int pd = cs_children(grand)[1] == parent;
    cs_block_t *uncle = cs_children(grand)[!pd];
    if (cs_is_red(uncle)) { /* push the grandparent's blackness down and go up */
      cs_set_black(parent);
      cs_set_black(uncle);
      cs_set_red(grand);
      z = grand;
      continue;
    }
    if (cs_children(parent)[!pd] == z) { /* inner grandchild: make it an outer one */
      cs_rotate(set, parent, pd);
      z = parent;
      parent = cs_parent(z);
    }
    cs_set_black(parent);
    cs_set_red(grand);
    cs_rotate(set, grand, !pd);
  }
  cs_set_black(set->root);
}

/* One black node was taken from the paths through x (NULL allowed), x being parent's child. */
static void cs_remove_fixup(cs_free_set_t *set, cs_block_t *x, cs_block_t *parent) {
  while (x != set->root && !cs_is_red(x)) {
    /* The sibling's side still has the old black height (>= 1), so the sibling exists and x's
     * side is the other slot even when x is NULL. */
    int d = cs_children(parent)[1] == x;
    cs_block_t *sibling = cs_children(parent)[!d];
    if (cs_is_red(sibling)) {
      cs_set_black(sibling);
      cs_set_red(parent);
      cs_rotate(set, parent, d);
      sibling = cs_children(parent)[!d];
    }
    if (!cs_is_red(cs_children(sibling)[0]) && !cs_is_red(cs_children(sibling)[1])) {
      cs_set_red(sibling); /* both sides short by one: move the deficit up */
      x = parent;
      parent = cs_parent(x);
      continue;
    }
    if (!cs_is_red(cs_children(sibling)[!d])) { /* make the sibling's outer child the red one */
      cs_set_black(cs_children(sibling)[d]);
      cs_set_red(sibling);
      cs_rotate(set, sibling, !d);
      sibling = cs_children(parent)[!d];
    }
    cs_copy_colour(sibling, parent);
    cs_set_black(parent);
    cs_set_black(cs_children(sibling)[!d]);
    cs_rotate(set, parent, d);
    x = set->root;
  }
  if (x) cs_set_black(x);
}

void cs_free_set_remove(cs_free_set_t *set, cs_block_t *z) {
  cs_block_t *lower = cs_children(z)[0], *higher = cs_children(z)[1];
  cs_block_t *child, *parent;
  bool black_removed;
  if (lower && higher) {
    /* Two children: z's successor y (leftmost of the higher side) takes z's place and colour;
     * the node actually unlinked is y, from its old position. */
    cs_block_t *y = higher;
    while (cs_children(y)[0]) y = cs_children(y)[0];
    child = cs_children(y)[1];
    black_removed = !cs_is_red(y);
    if (y == higher) {
      parent = y;
    } else {
      parent = cs_parent(y);
      cs_children(parent)[0] = child;
      if (child) child->u.free.link.parent = parent;
      cs_children(y)[1] = higher;
      higher->u.free.link.parent = y;
    }
    cs_children(y)[0] = lower;
    lower->u.free.link.parent = y;
    y->u.free.link.parent = cs_parent(z);
    cs_replace_child(set, cs_parent(z), z, y);
    cs_copy_colour(y, z);
  } else {
    child = lower ? lower : higher;
    parent = cs_parent(z);
    black_removed = !cs_is_red(z);
    if (child) child->u.free.link.parent = parent;
    cs_replace_child(set, parent, z, child);
  }
  if (black_removed) cs_remove_fixup(set, child, parent);
}

void cs_free_set_replace(cs_free_set_t *set, cs_block_t *old, cs_block_t *fresh) {
  fresh->u.free.link = old->u.free.link;
  cs_copy_colour(fresh, old);
  for (int d = 0; d < 2; d++)
    if (cs_children(fresh)[d]) cs_children(fresh)[d]->u.free.link.parent = fresh;
  cs_replace_child(set, cs_parent(old), old, fresh);
}

cs_block_t *cs_free_set_lower_bound(const cs_free_set_t *set, uintptr_t stream, size_t size,
                                    cs_block_t **pred) {
  cs_block_t *found = NULL, *before = NULL;
  for (cs_block_t *n = set->root; n;) {
    /* (n.stream, n.size, n.addr) < (stream, size, 0): addresses never decide it. */
    size_t n_size = cs_block_size(n);
    unsigned n_less = (n->stream < stream) | ((n->stream == stream) & (n_size < size));
    /* Selects by index: written as conditionals, GCC turns them back into branches. */
    cs_block_t *found_if[2] = {n, found}, *before_if[2] = {before, n};
    found = found_if[n_less];
    before = before_if[n_less];
    n = cs_children(n)[n_less];
  }
  if (pred) *pred = before;
  return found;
}

static cs_block_t *cs_extreme(cs_block_t *n, int d) {
  if (n)
    while (cs_children(n)[d]) n = cs_children(n)[d];
  return n;
}

/* The neighbour of b on side d in key order. */
static cs_block_t *cs_step(const cs_block_t *b, int d) {
  cs_block_t *n = b->u.free.link.child[d];
  if (n) return cs_extreme(n, !d);
  const cs_block_t *from = b;
  cs_block_t *up = cs_parent(b);
  while (up && cs_children(up)[d] == from) {
    from = up;
    up = cs_parent(up);
  }
  return up;
}

cs_block_t *cs_free_set_first(const cs_free_set_t *set) { return cs_extreme(set->root, 0); }
cs_block_t *cs_free_set_last(const cs_free_set_t *set) { return cs_extreme(set->root, 1); }
cs_block_t *cs_free_set_next(const cs_block_t *b) { return cs_step(b, 1); }
cs_block_t *cs_free_set_prev(const cs_block_t *b) { return cs_step(b, 0); }

/* ---- invariant check (tests) ---- */

/* Black height of the subtree at n, or -1; counts its blocks into *count. lo/hi bound its keys. */
static long cs_check_subtree(const cs_block_t *n, const cs_block_t *parent, const cs_block_t *lo,
                             const cs_block_t *hi, long *count) {
  if (!n) return 1;
  if (cs_parent(n) != parent || cs_block_state(n) != CS_BLOCK_FREE) return -1;
  if ((lo && !cs_free_set_less(lo, n)) || (hi && !cs_free_set_less(n, hi))) return -1;
  if (cs_is_red(n) && (cs_is_red(n->u.free.link.child[0]) || cs_is_red(n->u.free.link.child[1])))
    return -1;
  long left = cs_check_subtree(n->u.free.link.child[0], n, lo, n, count);
  long right = cs_check_subtree(n->u.free.link.child[1], n, n, hi, count);
  if (left < 0 || left != right) return -1;
  ++*count;
  return left + (cs_is_red(n) ? 0 : 1);
}

long cs_free_set_check(const cs_free_set_t *set) {
  long count = 0;
  if (cs_is_red(set->root)) return -1;
  return cs_check_subtree(set->root, NULL, NULL, NULL, &count) < 0 ? -1 : count;
}
