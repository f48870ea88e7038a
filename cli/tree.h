/* Whole-tree operations on the reader's cJSON values (reader/reader.h): exact equality and
 * hashing, nesting depth and size. Numbers compare as the reader keeps them: an integer never
 * equals a float (2 and 2.0 are different objects to Python; cs_reader_is_float), integers compare
 * exactly (cs_reader_int_exact, beyond 2^53 too), floats as doubles with their sign (-0.0 is not
 * 0.0); cJSON_Compare would allow a relative error, which could make two different frame lists
 * one. A tuple never equals a list (cs_reader_is_tuple). Object members compare in order, as they
 * are written. All recurse, at most as deep as the tree (the reader bounds it). */
#ifndef CS_CLI_TREE_H
#define CS_CLI_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

bool cs_tree_equal(const cJSON *a, const cJSON *b);

/* Equal trees hash alike. */
uint64_t cs_tree_hash(const cJSON *item);

/* Containers on the deepest path: 0 for a scalar, 1 for [] or {}, 2 for [[]] ... */
size_t cs_tree_depth(const cJSON *item);

/* Values in the tree, item itself included. */
size_t cs_tree_count(const cJSON *item);

#endif
