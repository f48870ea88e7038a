/* Whole-tree operations (contract in cli/tree.h). */
#include "cli/tree.h"

#include <math.h>
#include <string.h>

#include "reader/reader.h"

/* The type bits cJSON sets, without its flags (IsReference, StringIsConst). */
static int cs_tree_type(const cJSON *item) { return item->type & 0xff; }

static bool cs_tree_number_equal(const cJSON *a, const cJSON *b) {
  if (cs_reader_is_float(a) != cs_reader_is_float(b)) return false; /* 2 and 2.0: not one value to Python */
  if (cs_reader_is_float(a))
    return a->valuedouble == b->valuedouble && !signbit(a->valuedouble) == !signbit(b->valuedouble);
  int64_t x, y;
  bool xi = cs_reader_int_exact(a, &x) != 0, yi = cs_reader_int_exact(b, &y) != 0;
  if (xi || yi) return xi && yi && x == y;
  return a->valuedouble == b->valuedouble;
}

static bool cs_tree_key_equal(const cJSON *a, const cJSON *b) {
  if (a->string == NULL || b->string == NULL) return a->string == b->string;
  return strcmp(a->string, b->string) == 0;
}

bool cs_tree_equal(const cJSON *a, const cJSON *b) {
  if (cs_tree_type(a) != cs_tree_type(b)) return false;
  if (cs_reader_is_tuple(a) != cs_reader_is_tuple(b)) return false;
  if (cJSON_IsNumber(a)) return cs_tree_number_equal(a, b);
  if (cJSON_IsString(a)) return strcmp(a->valuestring, b->valuestring) == 0;
  if (!cJSON_IsArray(a) && !cJSON_IsObject(a)) return true; /* null, true, false */
  const cJSON *x = a->child, *y = b->child;
  for (; x != NULL && y != NULL; x = x->next, y = y->next) {
    if (cJSON_IsObject(a) && !cs_tree_key_equal(x, y)) return false;
    if (!cs_tree_equal(x, y)) return false;
  }
  return x == NULL && y == NULL;
}

static uint64_t cs_tree_mix(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 0x100000001b3ull; /* FNV-1a */
  return h;
}

static uint64_t cs_tree_hash_from(uint64_t h, const cJSON *item) {
  int type = cs_tree_type(item);
  h = cs_tree_mix(h, &type, sizeof type);
  if (cJSON_IsNumber(item)) {
    int64_t x;
    if (!cs_reader_is_float(item) && cs_reader_int_exact(item, &x)) return cs_tree_mix(h, &x, sizeof x);
    return cs_tree_mix(h, &item->valuedouble, sizeof item->valuedouble);
  }
  if (cJSON_IsString(item)) return cs_tree_mix(h, item->valuestring, strlen(item->valuestring) + 1);
  for (const cJSON *c = item->child; c != NULL; c = c->next) {
    if (cJSON_IsObject(item) && c->string != NULL) h = cs_tree_mix(h, c->string, strlen(c->string) + 1);
    h = cs_tree_hash_from(h, c);
  }
  return cs_tree_mix(h, "]", 1); /* [[a],b] and [[a,b]] differ */
}

uint64_t cs_tree_hash(const cJSON *item) { return cs_tree_hash_from(0xcbf29ce484222325ull, item); }

size_t cs_tree_depth(const cJSON *item) {
  if (!cJSON_IsArray(item) && !cJSON_IsObject(item)) return 0;
  size_t deepest = 0;
  for (const cJSON *c = item->child; c != NULL; c = c->next) {
    size_t d = cs_tree_depth(c);
    if (d > deepest) deepest = d;
  }
  return deepest + 1;
}

size_t cs_tree_count(const cJSON *item) {
  size_t n = 1;
  for (const cJSON *c = item->child; c != NULL; c = c->next) n += cs_tree_count(c);
  return n;
}
