/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for memviz/emit*.c and memviz/sink.c: golden outputs of one sample tree in both
 * formats, the exact encodings at every boundary, Python as an independent reader
 * (emit_roundtrip.py), sticky sink failures, and the fd sink over a file, a pipe and a write(2)
 * that is interrupted and short.
 *
 * The golden files live in tests/golden. After an intended format change, regenerate them with
 * CS_UPDATE_GOLDEN=1 (run from tests/unit: `CS_UPDATE_GOLDEN=1 ./test_emit`) and review the diff;
 * the round trip through Python must still pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memviz/emit.h"
#include "memviz/sink.h"

#ifndef CS_GOLDEN_DIR
#define CS_GOLDEN_DIR "../golden" /* from tests/unit, the test's working directory */
#endif
#define ROUNDTRIP_SCRIPT CS_GOLDEN_DIR "/../unit/emit_roundtrip.py"

typedef void (*fill_fn)(cs_emitter_t *e);

/* ------------------------------------------------------------------------------------------------
 * The sample tree (emit_roundtrip.py's expected() is the same value; keep the two in step)
 * ---------------------------------------------------------------------------------------------- */

static const int64_t sample_ints[] = {
    0, 255, 256, 65535, 65536,                       /* BININT1 / BININT2 / BININT edges */
    INT32_MAX, (int64_t)INT32_MAX + 1,               /* BININT / LONG1 */
    -1, INT32_MIN, (int64_t)INT32_MIN - 1,           /* negatives: BININT, then LONG1 */
    (INT64_C(1) << 39) - 1, INT64_C(1) << 39,        /* LONG1 in 5, then 6 bytes */
    -(INT64_C(1) << 39), -(INT64_C(1) << 39) - 1,    /* likewise, negative */
    INT64_C(1) << 53, INT64_C(1) << 55, INT64_MIN, INT64_MAX,
};

static void emit_frame(cs_emitter_t *e, const char *file, int64_t line, const char *name) {
  cs_emit_dict_begin(e);
  cs_emit_key(e, "filename");
  cs_emit_str(e, file);
  cs_emit_key(e, "line");
  cs_emit_int(e, line);
  cs_emit_key(e, "name");
  cs_emit_str(e, name);
  cs_emit_dict_end(e);
}

/* Frame list `id`, written out the first time and referenced afterwards, as snapshot.c does. */
static void emit_frames(cs_emitter_t *e, uint32_t id) {
  if (cs_emit_frames_ref(e, id)) return;
  cs_emit_list_begin(e);
  if (id == 1) {
    emit_frame(e, "train.py", 42, "step");
    emit_frame(e, "libtorch_cuda.so", 0, "??");
  } else {
    emit_frame(e, "model.py", 7, "forward");
  }
  cs_emit_list_end(e);
  cs_emit_frames_done(e, id);
}

static void emit_trace_entry(cs_emitter_t *e, int64_t i, uint32_t frames_id) {
  cs_emit_dict_begin(e);
  cs_emit_key(e, "action");
  cs_emit_str(e, "alloc");
  cs_emit_key(e, "addr");
  cs_emit_int(e, INT64_C(0x7F0000000000) + i * 512);
  cs_emit_key(e, "size");
  cs_emit_int(e, 512);
  cs_emit_key(e, "stream");
  cs_emit_int(e, 0);
  cs_emit_key(e, "time_us");
  cs_emit_int(e, INT64_C(1700000000000000) + i);
  cs_emit_key(e, "frames");
  emit_frames(e, frames_id);
  cs_emit_dict_end(e);
}

static void emit_strings(cs_emitter_t *e) {
  static const char controls[] = "\x00\x01\b\t\n\x0b\f\r\x1f\x7f";
  static const char invalid[] = "bad \xff|\xc3(|\xe2\x82|\xed\xa0\x80|\xf4\x90\x80\x80|\xc0\xaf|"
                                "\xe0\x80\xaf|\xf0\x9f\x98";
  char long_valid[303], long_invalid[256];
  memset(long_valid, 'x', 300);
  memcpy(long_valid + 300, "\xc3\xa9", 3); /* 302 bytes: BINUNICODE */
  memset(long_invalid, 'y', 254);
  memcpy(long_invalid + 254, "\xff", 2); /* 255 bytes in, 257 out: the prefix counts the output */
  cs_emit_list_begin(e);
  cs_emit_str(e, "");
  cs_emit_str(e, "plain");
  cs_emit_str(e, "quote\" backslash\\ slash/");
  cs_emit_str_n(e, controls, sizeof controls - 1);
  cs_emit_str(e, "h\xc3\xa9llo \xe2\x82\xac \xf0\x9d\x84\x9e \xe6\x97\xa5\xe6\x9c\xac");
  cs_emit_str(e, invalid);
  cs_emit_str(e, long_valid);
  cs_emit_str(e, long_invalid);
  cs_emit_list_end(e);
}

static void emit_tuples(cs_emitter_t *e) {
  char long_str[301];
  memset(long_str, 'x', 300);
  long_str[300] = '\0';
  cs_emit_list_begin(e);
  cs_emit_tuple_begin(e); /* EMPTY_TUPLE */
  cs_emit_tuple_end(e);
  cs_emit_tuple_begin(e); /* TUPLE1 */
  cs_emit_str(e, "one");
  cs_emit_tuple_end(e);
  cs_emit_tuple_begin(e); /* TUPLE3 */
  for (int64_t i = 1; i <= 3; i++) cs_emit_int(e, i);
  cs_emit_tuple_end(e);
  cs_emit_tuple_begin(e); /* MARK ... TUPLE: more than 3 items */
  for (int64_t i = 1; i <= 4; i++) cs_emit_int(e, i);
  cs_emit_tuple_end(e);
  cs_emit_tuple_begin(e); /* MARK ... TUPLE: items too long to take the MARK back */
  cs_emit_str(e, long_str);
  cs_emit_int(e, 2);
  cs_emit_tuple_end(e);
  cs_emit_list_end(e);
}

static void emit_sample(cs_emitter_t *e) {
  cs_emit_dict_begin(e);

  cs_emit_key(e, "ints");
  cs_emit_list_begin(e);
  for (size_t i = 0; i < sizeof sample_ints / sizeof sample_ints[0]; i++) cs_emit_int(e, sample_ints[i]);
  cs_emit_list_end(e);

  cs_emit_key(e, "floats");
  cs_emit_list_begin(e);
  cs_emit_float(e, 0.1);
  cs_emit_float(e, 1.5);
  cs_emit_float(e, -2.0);
  cs_emit_float(e, 1e300);
  cs_emit_float(e, 5e-324);
  cs_emit_float(e, -0.0);
  cs_emit_float(e, NAN); /* the last three are written as 0.0 */
  cs_emit_float(e, INFINITY);
  cs_emit_float(e, -INFINITY);
  cs_emit_list_end(e);

  cs_emit_key(e, "strings");
  emit_strings(e);
  cs_emit_key(e, "key \"quoted\"\n");
  cs_emit_int(e, 1);
  cs_emit_key(e, "cl\xc3\xa9");
  cs_emit_int(e, 2);

  cs_emit_key(e, "bools");
  cs_emit_list_begin(e);
  cs_emit_bool(e, true);
  cs_emit_bool(e, false);
  cs_emit_list_end(e);
  cs_emit_key(e, "none");
  cs_emit_none(e);

  cs_emit_key(e, "pool_id");
  cs_emit_tuple_begin(e);
  cs_emit_int(e, 0);
  cs_emit_int(e, 7);
  cs_emit_tuple_end(e);
  cs_emit_key(e, "tuples");
  emit_tuples(e);

  cs_emit_key(e, "nested"); /* {"a": {"b": [[], {}, [[1]], {"c": None}]}} */
  cs_emit_dict_begin(e);
  cs_emit_key(e, "a");
  cs_emit_dict_begin(e);
  cs_emit_key(e, "b");
  cs_emit_list_begin(e);
  cs_emit_list_begin(e);
  cs_emit_list_end(e);
  cs_emit_dict_begin(e);
  cs_emit_dict_end(e);
  cs_emit_list_begin(e);
  cs_emit_list_begin(e);
  cs_emit_int(e, 1);
  cs_emit_list_end(e);
  cs_emit_list_end(e);
  cs_emit_dict_begin(e);
  cs_emit_key(e, "c");
  cs_emit_none(e);
  cs_emit_dict_end(e);
  cs_emit_list_end(e);
  cs_emit_dict_end(e);
  cs_emit_dict_end(e);

  cs_emit_key(e, "traces"); /* frame list 1 three times, frame list 2 once */
  cs_emit_list_begin(e);
  for (int64_t i = 0; i < 4; i++) emit_trace_entry(e, i, i == 2 ? 2 : 1);
  cs_emit_list_end(e);

  cs_emit_key(e, "many_frames"); /* 300 shared lists: memo indexes past 255 take the long forms */
  cs_emit_list_begin(e);
  for (uint32_t i = 0; i < 300; i++) {
    for (int twice = 0; twice < 2; twice++) {
      if (cs_emit_frames_ref(e, 100 + i)) continue;
      cs_emit_list_begin(e);
      cs_emit_int(e, i);
      cs_emit_str(e, "f");
      cs_emit_list_end(e);
      cs_emit_frames_done(e, 100 + i);
    }
  }
  cs_emit_list_end(e);

  cs_emit_key(e, "big_list"); /* batches of 1000, 1000 and 500 */
  cs_emit_list_begin(e);
  for (int64_t i = 0; i < 2500; i++) cs_emit_int(e, i);
  cs_emit_list_end(e);

  cs_emit_key(e, "big_dict"); /* 1001 pairs: SETITEMS batches of 1000 and 1 */
  cs_emit_dict_begin(e);
  for (int64_t i = 0; i <= 1000; i++) {
    char key[16];
    snprintf(key, sizeof key, "k%d", (int)i);
    cs_emit_key(e, key);
    cs_emit_int(e, i);
  }
  cs_emit_dict_end(e);

  cs_emit_key(e, "empty_dict");
  cs_emit_dict_begin(e);
  cs_emit_dict_end(e);
  cs_emit_key(e, "empty_list");
  cs_emit_list_begin(e);
  cs_emit_list_end(e);

  cs_emit_dict_end(e);
}

/* ------------------------------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------------------------------- */

/* Emit fill's tree into *out (cs_mem_sink_free it); returns cs_emit_finish's result. */
static int emit_mem(cs_emit_format_t format, int protocol, fill_fn fill, cs_mem_sink_t *out) {
  cs_mem_sink_init(out);
  cs_emitter_t *e = cs_emitter_create(format, cs_mem_sink(out), protocol);
  assert_non_null(e);
  fill(e);
  return cs_emit_finish(e);
}

/* The JSON text of fill's tree, without the final newline, compared with want. */
static void check_json(fill_fn fill, const char *want) {
  cs_mem_sink_t out;
  assert_int_equal(emit_mem(CS_EMIT_JSON, 0, fill, &out), 0);
  assert_true(out.len > 0 && out.data[out.len - 1] == '\n');
  char *text = strndup(out.data, out.len - 1);
  assert_non_null(text);
  assert_string_equal(text, want);
  free(text);
  cs_mem_sink_free(&out);
}

/* The pickle bytes of fill's tree between PROTO 2 and STOP, compared with want. */
static void check_pickle(fill_fn fill, const void *want, size_t want_len) {
  cs_mem_sink_t out;
  assert_int_equal(emit_mem(CS_EMIT_PICKLE, 2, fill, &out), 0);
  assert_true(out.len >= 3);
  assert_memory_equal(out.data, "\x80\x02", 2);
  assert_int_equal(out.data[out.len - 1], '.');
  assert_int_equal(out.len - 3, want_len);
  assert_memory_equal(out.data + 2, want, want_len);
  cs_mem_sink_free(&out);
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *data = malloc(cap);
  size_t got;
  while (data != NULL && (got = fread(data + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) data = realloc(data, cap *= 2);
  }
  fclose(f);
  *len = n;
  return data;
}

static void write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

/* Golden pickles are hex text, 32 bytes a line. */
static char *to_hex(const unsigned char *data, size_t len, size_t *text_len) {
  char *text = malloc(len * 2 + len / 32 + 2);
  assert_non_null(text);
  size_t n = 0;
  for (size_t i = 0; i < len; i++) {
    n += (size_t)sprintf(text + n, "%02x", data[i]);
    if (i % 32 == 31 || i + 1 == len) text[n++] = '\n';
  }
  *text_len = n;
  return text;
}

static size_t from_hex(char *text, size_t len) {
  size_t n = 0;
  for (size_t i = 0; i + 1 < len;) {
    if (text[i] == '\n') {
      i++;
      continue;
    }
    unsigned byte;
    assert_int_equal(sscanf(text + i, "%2x", &byte), 1);
    text[n++] = (char)byte;
    i += 2;
  }
  return n;
}

/* Compare output with tests/golden/name (hex: a .pkl.hex file), or rewrite the file when
 * CS_UPDATE_GOLDEN is set. */
static void check_golden(const char *name, const char *data, size_t len, bool hex) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", CS_GOLDEN_DIR, name);
  if (getenv("CS_UPDATE_GOLDEN") != NULL) {
    size_t text_len = len;
    char *text = hex ? to_hex((const unsigned char *)data, len, &text_len) : NULL;
    write_file(path, hex ? text : data, text_len);
    free(text);
    print_message("updated %s\n", path);
    return;
  }
  size_t want_len = 0;
  char *want = read_file(path, &want_len);
  if (want != NULL && hex) want_len = from_hex(want, want_len);
  size_t at = 0;
  while (want != NULL && at < len && at < want_len && want[at] == data[at]) at++;
  if (want == NULL || at != len || at != want_len) {
    print_error("%s: %s at byte %zu (output %zu bytes, golden %zu).\n"
                "If the change is intended, regenerate the golden files and review the diff:\n"
                "  cd tests/unit && CS_UPDATE_GOLDEN=1 <build>/tests/unit/test_emit\n",
                path, want == NULL ? "cannot be read" : "differs from the output", at, len, want_len);
    free(want);
    fail();
  }
  free(want);
}

/* ------------------------------------------------------------------------------------------------
 * Golden files and Python
 * ---------------------------------------------------------------------------------------------- */

static void test_golden_json(void **state) {
  (void)state;
  cs_mem_sink_t out;
  cs_mem_sink_init(&out);
  cs_emitter_t *e = cs_emitter_create(CS_EMIT_JSON, cs_mem_sink(&out), 0);
  assert_non_null(e);
  emit_sample(e);
  assert_int_equal(cs_emit_nonfinite(e), 3);
  uint64_t bytes = cs_emit_bytes(e);
  assert_int_equal(cs_emit_finish(e), 0);
  assert_int_equal(out.len, bytes + 1); /* all but the final newline */
  check_golden("emit_sample.json", out.data, out.len, false);
  cs_mem_sink_free(&out);
}

static void test_golden_pickle(void **state) {
  (void)state;
  cs_mem_sink_t out;
  assert_int_equal(emit_mem(CS_EMIT_PICKLE, 2, emit_sample, &out), 0);
  check_golden("emit_sample.pkl.hex", out.data, out.len, true);
  cs_mem_sink_free(&out);
}

/* Exit status of argv[0] run with argv, 127 when it cannot be started. */
static int run(char *const argv[]) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    execvp(argv[0], argv);
    _exit(127);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_python_roundtrip(void **state) {
  (void)state;
  char *probe[] = {"python3", "-c", "", NULL};
  if (run(probe) != 0) {
    print_message("python3 not found: round trip skipped\n");
    skip();
  }
  assert_int_equal(access(ROUNDTRIP_SCRIPT, R_OK), 0);
  const char *tmp = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/cs_emit_XXXXXX", tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
  assert_non_null(mkdtemp(dir));
  char json_path[4200], p2_path[4200], p4_path[4200];
  snprintf(json_path, sizeof json_path, "%s/sample.json", dir);
  snprintf(p2_path, sizeof p2_path, "%s/sample.p2.pickle", dir);
  snprintf(p4_path, sizeof p4_path, "%s/sample.p4.pickle", dir);

  cs_mem_sink_t out;
  assert_int_equal(emit_mem(CS_EMIT_JSON, 0, emit_sample, &out), 0);
  write_file(json_path, out.data, out.len);
  cs_mem_sink_free(&out);
  assert_int_equal(emit_mem(CS_EMIT_PICKLE, 2, emit_sample, &out), 0);
  write_file(p2_path, out.data, out.len);
  cs_mem_sink_free(&out);
  assert_int_equal(emit_mem(CS_EMIT_PICKLE, 4, emit_sample, &out), 0);
  write_file(p4_path, out.data, out.len);
  cs_mem_sink_free(&out);

  char *argv[] = {"python3", ROUNDTRIP_SCRIPT, json_path, p2_path, p4_path, NULL};
  int status = run(argv);
  unlink(json_path);
  unlink(p2_path);
  unlink(p4_path);
  rmdir(dir);
  assert_int_equal(status, 0);
}

/* ------------------------------------------------------------------------------------------------
 * Exact encodings
 * ---------------------------------------------------------------------------------------------- */

static void fill_ints(cs_emitter_t *e) {
  cs_emit_list_begin(e);
  for (size_t i = 0; i < sizeof sample_ints / sizeof sample_ints[0]; i++) cs_emit_int(e, sample_ints[i]);
  cs_emit_list_end(e);
}

static void test_json_ints(void **state) {
  (void)state;
  check_json(fill_ints, "[0,255,256,65535,65536,2147483647,2147483648,-1,-2147483648,-2147483649,"
                        "549755813887,549755813888,-549755813888,-549755813889,9007199254740992,"
                        "36028797018963968,-9223372036854775808,9223372036854775807]");
}

/* Every digit count, at both ends: the count comes from the bit length (emit_json.c), which
 * leaves 10^k - 1 and 10^k one apart. */
static void test_json_int_digits(void **state) {
  (void)state;
  uint64_t power = 1;
  for (int k = 0; k <= 19; k++) {
    const uint64_t values[] = {power - 1, power, power + 1, power * 2 - 1};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
      if (values[i] > (uint64_t)INT64_MAX) continue;
      char want[32];
      snprintf(want, sizeof want, "%" PRId64 "\n", (int64_t)values[i]);
      cs_mem_sink_t out;
      cs_mem_sink_init(&out);
      cs_emitter_t *e = cs_emitter_create(CS_EMIT_JSON, cs_mem_sink(&out), 0);
      assert_non_null(e);
      cs_emit_int(e, (int64_t)values[i]);
      assert_int_equal(cs_emit_finish(e), 0);
      assert_int_equal(out.len, strlen(want));
      assert_memory_equal(out.data, want, out.len);
      cs_mem_sink_free(&out);
    }
    if (k < 19) power *= 10;
  }
}

static void test_pickle_ints(void **state) {
  (void)state;
  static const unsigned char want[] =
      "]("
      "K\x00"                                  /* 0 */
      "K\xff"                                  /* 255 */
      "M\x00\x01"                              /* 256 */
      "M\xff\xff"                              /* 65535 */
      "J\x00\x00\x01\x00"                      /* 65536 */
      "J\xff\xff\xff\x7f"                      /* 2^31-1 */
      "\x8a\x05\x00\x00\x00\x80\x00"           /* 2^31: the sign needs a fifth byte */
      "J\xff\xff\xff\xff"                      /* -1 */
      "J\x00\x00\x00\x80"                      /* -2^31 */
      "\x8a\x05\xff\xff\xff\x7f\xff"           /* -2^31-1 */
      "\x8a\x05\xff\xff\xff\xff\x7f"           /* 2^39-1 */
      "\x8a\x06\x00\x00\x00\x00\x80\x00"       /* 2^39 */
      "\x8a\x05\x00\x00\x00\x00\x80"           /* -2^39 */
      "\x8a\x06\xff\xff\xff\xff\x7f\xff"       /* -2^39-1 */
      "\x8a\x07\x00\x00\x00\x00\x00\x00\x20"   /* 2^53 */
      "\x8a\x08\x00\x00\x00\x00\x00\x00\x80\x00" /* 2^55 */
      "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80" /* INT64_MIN */
      "\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f" /* INT64_MAX */
      "e";
  check_pickle(fill_ints, want, sizeof want - 1);
}

static void fill_floats(cs_emitter_t *e) {
  cs_emit_list_begin(e);
  cs_emit_float(e, 0.1);
  cs_emit_float(e, 2.0);
  cs_emit_float(e, -0.0);
  cs_emit_float(e, 1e300);
  cs_emit_float(e, 1.5e-7);
  cs_emit_float(e, NAN);
  cs_emit_list_end(e);
}

static void test_json_floats(void **state) {
  (void)state;
  check_json(fill_floats, "[0.1,2.0,-0.0,1e+300,1.5e-07,0.0]"); /* Python's repr, shortest */
}

/* Each double as the fewest digits that read back as it: what Python's repr gives. */
static void test_json_float_shortest(void **state) {
  (void)state;
  static const struct {
    double value;
    const char *text;
  } cases[] = {
      {0.30000000000000004, "0.30000000000000004"}, {1.0 / 3, "0.3333333333333333"}, {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"}, {123456789.125, "123456789.125"},
      {9007199254740994.0, "9007199254740994.0"}, {0.6, "0.6"}, {-1e-5, "-1e-05"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cs_mem_sink_t sink;
    cs_mem_sink_init(&sink);
    cs_emitter_t *e = cs_emitter_create(CS_EMIT_JSON, cs_mem_sink(&sink), 2);
    assert_non_null(e);
    cs_emit_float(e, cases[i].value);
    assert_int_equal(cs_emit_finish(e), 0);
    assert_true(sink.len > 0 && sink.data[sink.len - 1] == '\n');
    sink.data[sink.len - 1] = '\0';
    assert_string_equal(sink.data, cases[i].text);
    assert_true(strtod(sink.data, NULL) == cases[i].value);
    free(sink.data);
  }
}

static void test_pickle_floats(void **state) {
  (void)state;
  static const unsigned char want[] = "](G\x3f\xb9\x99\x99\x99\x99\x99\x9a"
                                      "G\x40\x00\x00\x00\x00\x00\x00\x00"
                                      "G\x80\x00\x00\x00\x00\x00\x00\x00"
                                      "G\x7e\x37\xe4\x3c\x88\x00\x75\x9c"
                                      "G\x3e\x84\x21\xf5\xf4\x0d\x83\x76"
                                      "G\x00\x00\x00\x00\x00\x00\x00\x00" "e";
  check_pickle(fill_floats, want, sizeof want - 1);
}

/* A program may set LC_NUMERIC to a locale whose radix is not '.'; the JSON must not follow. */
static void test_json_float_locale(void **state) {
  (void)state;
  static const char *const locales[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "ru_RU.UTF-8",
                                        "C.UTF-8@radix"};
  const char *found = NULL;
  for (size_t i = 0; i < sizeof locales / sizeof locales[0] && found == NULL; i++)
    found = setlocale(LC_NUMERIC, locales[i]);
  if (found == NULL) {
    print_message("no locale with a comma radix installed: skipped\n");
    skip();
  }
  check_json(fill_floats, "[0.1,2.0,-0.0,1e+300,1.5e-07,0.0]"); /* Python's repr, shortest */
  setlocale(LC_NUMERIC, "C");
}

static void fill_escapes(cs_emitter_t *e) {
  cs_emit_list_begin(e);
  cs_emit_str_n(e, "\"\\/\b\f\n\r\t\x00\x01\x1f\x7f", 12);
  cs_emit_str(e, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  cs_emit_str(e, "a\xff" "b\xc3" "c\xe2\x82" "d\xed\xa0\x80" "e\xc0\xaf" "f\xf4\x90\x80\x80" "g\xf0\x9f\x98");
  cs_emit_list_end(e);
}

static void test_json_strings(void **state) {
  (void)state;
  check_json(fill_escapes,
             "[\"\\\"\\\\/\\b\\f\\n\\r\\t\\u0000\\u0001\\u001f\x7f\","
             "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\","
             /* maximal subparts: e2 82 and f0 9f 98 are one U+FFFD each; ed a0 80, c0 af and
              * f4 90 80 80 one per byte */
             "\"a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xef\xbf\xbd" "d\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
             "e\xef\xbf\xbd\xef\xbf\xbd" "f\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
             "g\xef\xbf\xbd\"]");
}

/* One byte that needs work, at every position of plain strings of 0 to 40 bytes, as a value and
 * as a key: the plain case reads short strings in overlapping pieces and long ones a word at a
 * time (emit_json.c), so each length and position takes its own path through it. */
static void test_json_string_positions(void **state) {
  (void)state;
  static const struct {
    char byte;
    const char *out;
  } specials[] = {
      {'"', "\\\""}, {'\\', "\\\\"}, {'\n', "\\n"}, {'\x01', "\\u0001"}, {'\x1f', "\\u001f"},
      {'\xff', "\xef\xbf\xbd"}, {' ', " "}, {'\x7f', "\x7f"}, {'!', "!"}, {'~', "~"},
  };
  for (size_t len = 0; len <= 40; len++) {
    for (size_t at = 0; at <= len; at++) { /* at == len: no special byte */
      for (size_t k = 0; k < sizeof specials / sizeof specials[0]; k++) {
        if (at == len && k > 0) break;
        char in[48], want[160];
        memset(in, 'x', len);
        if (at < len) in[at] = specials[k].byte;
        size_t n = 0;
        want[n++] = '{';
        for (int twice = 0; twice < 2; twice++) { /* the key, then the value */
          want[n++] = '"';
          for (size_t i = 0; i < len; i++) {
            const char *piece = i == at ? specials[k].out : "x";
            memcpy(want + n, piece, strlen(piece));
            n += strlen(piece);
          }
          want[n++] = '"';
          want[n++] = twice == 0 ? ':' : '}';
        }
        want[n++] = '\n';
        cs_mem_sink_t out;
        cs_mem_sink_init(&out);
        cs_emitter_t *e = cs_emitter_create(CS_EMIT_JSON, cs_mem_sink(&out), 0);
        assert_non_null(e);
        char key[48];
        memcpy(key, in, len);
        key[len] = '\0';
        cs_emit_dict_begin(e);
        cs_emit_key(e, key);
        cs_emit_str_n(e, in, len);
        cs_emit_dict_end(e);
        assert_int_equal(cs_emit_finish(e), 0);
        assert_int_equal(out.len, n);
        assert_memory_equal(out.data, want, n);
        cs_mem_sink_free(&out);
      }
    }
  }
}

static void test_pickle_strings(void **state) {
  (void)state;
  static const unsigned char want[] =
      "]("
      "\x8c\x0c\"\\/\b\f\n\r\t\x00\x01\x1f\x7f"
      "\x8c\x09\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
      "\x8c\x2e"
      "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xef\xbf\xbd" "d\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
      "e\xef\xbf\xbd\xef\xbf\xbd" "f\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
      "g\xef\xbf\xbd"
      "e";
  check_pickle(fill_escapes, want, sizeof want - 1);
}

/* f0 90 80 is one maximal invalid subpart of three bytes: replaced by the three bytes of U+FFFD,
 * the string keeps its length, yet it must not be copied as it is (Python's unpickler would
 * refuse the pickle, the viewer would show different text). */
static void fill_same_length_invalid(cs_emitter_t *e) {
  cs_emit_list_begin(e);
  cs_emit_str(e, "\xf0\x90\x80x");
  cs_emit_list_end(e);
}

static void test_pickle_same_length_invalid(void **state) {
  (void)state;
  static const unsigned char want[] = "](\x8c\x04\xef\xbf\xbd" "xe";
  check_pickle(fill_same_length_invalid, want, sizeof want - 1);
  check_json(fill_same_length_invalid, "[\"\xef\xbf\xbdx\"]");
}

static void fill_tuples(cs_emitter_t *e) { emit_tuples(e); }

static void test_pickle_tuples(void **state) {
  (void)state;
  static const char head[] = "](" ")" "\x8c\x03one\x85" "K\x01K\x02K\x03\x87"
                             "(K\x01K\x02K\x03K\x04t" "(X\x2c\x01\x00\x00"; /* BINUNICODE 300 */
  static const char tail[] = "K\x02te";
  char want[sizeof head + 300 + sizeof tail];
  size_t n = 0;
  memcpy(want, head, sizeof head - 1);
  n += sizeof head - 1;
  memset(want + n, 'x', 300);
  n += 300;
  memcpy(want + n, tail, sizeof tail - 1);
  n += sizeof tail - 1;
  check_pickle(fill_tuples, want, n);
}

static void test_json_tuples(void **state) {
  (void)state;
  char want[400] = "[[],[\"one\"],[1,2,3],[1,2,3,4],[\"";
  size_t n = strlen(want);
  memset(want + n, 'x', 300);
  strcpy(want + n + 300, "\",2]]");
  check_json(fill_tuples, want);
}

/* Tuples anywhere in the stream drop their MARK, also across buffer flushes: the emitter makes
 * room first. */
static void fill_tuples_everywhere(cs_emitter_t *e) {
  cs_emit_list_begin(e);
  for (int i = 0; i < 3000; i++) {
    cs_emit_tuple_begin(e);
    cs_emit_int(e, 7);
    cs_emit_int(e, 7);
    cs_emit_tuple_end(e);
  }
  cs_emit_list_end(e);
}

static void test_pickle_tuples_everywhere(void **state) {
  (void)state;
  static const char tuple[] = "K\x07K\x07\x86";
  char *want = malloc(3 * (2 + 1000 * (sizeof tuple - 1)) + 1);
  assert_non_null(want);
  size_t n = 0;
  for (int batch = 0; batch < 3; batch++) {
    memcpy(want + n, batch == 0 ? "](" : "e(", 2);
    n += 2;
    for (int i = 0; i < 1000; i++, n += sizeof tuple - 1) memcpy(want + n, tuple, sizeof tuple - 1);
  }
  want[n++] = 'e';
  check_pickle(fill_tuples_everywhere, want, n);
  free(want);
}

static void fill_deep(cs_emitter_t *e) {
  for (int i = 0; i < CS_EMIT_MAX_DEPTH; i++) cs_emit_list_begin(e);
  for (int i = 0; i < CS_EMIT_MAX_DEPTH; i++) cs_emit_list_end(e);
}

static void test_max_depth(void **state) {
  (void)state;
  char want[2 * CS_EMIT_MAX_DEPTH + 1];
  memset(want, '[', CS_EMIT_MAX_DEPTH);
  memset(want + CS_EMIT_MAX_DEPTH, ']', CS_EMIT_MAX_DEPTH);
  want[2 * CS_EMIT_MAX_DEPTH] = '\0';
  check_json(fill_deep, want);
}

static void fill_scalars(cs_emitter_t *e) {
  cs_emit_dict_begin(e);
  cs_emit_key(e, "t");
  cs_emit_bool(e, true);
  cs_emit_key(e, "f");
  cs_emit_bool(e, false);
  cs_emit_key(e, "n");
  cs_emit_none(e);
  cs_emit_key(e, "e");
  cs_emit_dict_begin(e);
  cs_emit_dict_end(e);
  cs_emit_dict_end(e);
}

static void test_scalars(void **state) {
  (void)state;
  check_json(fill_scalars, "{\"t\":true,\"f\":false,\"n\":null,\"e\":{}}");
  static const unsigned char want[] = "}(\x8c\x01t\x88\x8c\x01" "f\x89\x8c\x01nN\x8c\x01" "e}u";
  check_pickle(fill_scalars, want, sizeof want - 1);
}

/* JSON has no references: a shared frame list is written out each time. */
static void fill_shared(cs_emitter_t *e) {
  cs_emit_list_begin(e);
  for (int i = 0; i < 3; i++) {
    if (cs_emit_frames_ref(e, 5)) continue;
    cs_emit_list_begin(e);
    cs_emit_int(e, 9);
    cs_emit_list_end(e);
    cs_emit_frames_done(e, 5);
  }
  cs_emit_list_end(e);
}

static void test_frames_shared(void **state) {
  (void)state;
  check_json(fill_shared, "[[9],[9],[9]]");
  static const unsigned char want[] = "](](K\x09" "eq\x00h\x00h\x00" "e";
  check_pickle(fill_shared, want, sizeof want - 1);
}

#if CS_DEBUG == 0
/* Calls out of order: release builds fail the output (debug builds assert and stop). */
static void fill_key_in_list(cs_emitter_t *e) {
  cs_emit_list_begin(e);
  cs_emit_key(e, "k");
  cs_emit_int(e, 1);
  cs_emit_list_end(e);
}

static void fill_too_deep(cs_emitter_t *e) {
  for (int i = 0; i <= CS_EMIT_MAX_DEPTH; i++) cs_emit_list_begin(e);
}

static void fill_value_without_key(cs_emitter_t *e) {
  cs_emit_dict_begin(e);
  cs_emit_int(e, 1);
  cs_emit_dict_end(e);
}

static void fill_unclosed(cs_emitter_t *e) { cs_emit_list_begin(e); }

static void fill_done_late(cs_emitter_t *e) {
  cs_emit_list_begin(e);
  cs_emit_list_begin(e);
  cs_emit_list_end(e);
  cs_emit_int(e, 1);
  cs_emit_frames_done(e, 1); /* the top of the stack is no longer the list */
  cs_emit_list_end(e);
}

static void test_misuse(void **state) {
  (void)state;
  const fill_fn fills[] = {fill_key_in_list, fill_too_deep, fill_value_without_key, fill_unclosed,
                           fill_done_late};
  for (size_t i = 0; i < sizeof fills / sizeof fills[0]; i++) {
    cs_mem_sink_t out;
    assert_int_equal(emit_mem(CS_EMIT_PICKLE, 2, fills[i], &out), EINVAL);
    assert_true(out.len == 0); /* nothing was flushed yet, and nothing will be */
    cs_mem_sink_free(&out);
  }
}
#endif

static void test_bad_protocol(void **state) {
  (void)state;
  cs_mem_sink_t out;
  cs_mem_sink_init(&out);
  assert_null(cs_emitter_create(CS_EMIT_PICKLE, cs_mem_sink(&out), 1));
  assert_null(cs_emitter_create(CS_EMIT_PICKLE, cs_mem_sink(&out), 5));
  assert_int_equal(out.len, 0);
}

/* ------------------------------------------------------------------------------------------------
 * Streaming and sink failures
 * ---------------------------------------------------------------------------------------------- */

typedef struct test_sink_s {
  size_t limit;        /* bytes accepted before failing */
  size_t accepted;     /* bytes accepted */
  size_t calls;        /* write calls */
  size_t max_chunk;    /* largest write */
  size_t after_error;  /* write calls after the failure: must stay 0 */
  bool failed;
  char *data;          /* accepted bytes (limit of them at most) */
} test_sink_t;

static int test_sink_write(void *ctx, const void *buf, size_t len) {
  test_sink_t *s = ctx;
  s->calls++;
  if (len > s->max_chunk) s->max_chunk = len;
  if (s->failed) {
    s->after_error++;
    return EIO;
  }
  if (len > s->limit - s->accepted) {
    s->failed = true;
    return EIO;
  }
  memcpy(s->data + s->accepted, buf, len);
  s->accepted += len;
  return 0;
}

static void check_failure(cs_emit_format_t format, const cs_mem_sink_t *full, size_t limit) {
  test_sink_t sink = {.limit = limit, .data = malloc(limit + 1)};
  assert_non_null(sink.data);
  cs_emitter_t *e = cs_emitter_create(format, (cs_sink_t){.write = test_sink_write, .ctx = &sink}, 2);
  assert_non_null(e);
  emit_sample(e);
  if (sink.failed) assert_int_equal(cs_emit_bytes(e), sink.accepted);
  int rc = cs_emit_finish(e);
  if (limit >= full->len) {
    assert_int_equal(rc, 0);
    assert_int_equal(sink.accepted, full->len);
  } else {
    assert_int_equal(rc, EIO);
    assert_true(sink.failed);
  }
  assert_int_equal(sink.after_error, 0);
  assert_memory_equal(sink.data, full->data, sink.accepted); /* a prefix of the real output */
  free(sink.data);
}

static void test_sink_failure(void **state) {
  (void)state;
  for (int format = CS_EMIT_JSON; format <= CS_EMIT_PICKLE; format++) {
    cs_mem_sink_t full;
    assert_int_equal(emit_mem((cs_emit_format_t)format, 2, emit_sample, &full), 0);
    const size_t limits[] = {0, 1, 2, 100, 4095, 4096, 4097, 8191, 8192, 20000, full.len - 1, full.len};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++)
      check_failure((cs_emit_format_t)format, &full, limits[i]);
    cs_mem_sink_free(&full);
  }
}

/* Output reaches the sink while it is produced, in chunks of at most 4 KiB. */
static void test_streaming(void **state) {
  (void)state;
  test_sink_t sink = {.limit = SIZE_MAX, .data = malloc(1 << 20)};
  assert_non_null(sink.data);
  cs_emitter_t *e = cs_emitter_create(CS_EMIT_JSON, (cs_sink_t){.write = test_sink_write, .ctx = &sink}, 0);
  assert_non_null(e);
  cs_emit_list_begin(e);
  for (int64_t i = 0; i < 100000; i++) cs_emit_int(e, i);
  assert_true(sink.accepted > 500000);
  assert_true(cs_emit_bytes(e) >= sink.accepted && cs_emit_bytes(e) - sink.accepted <= 4096);
  cs_emit_list_end(e);
  assert_int_equal(cs_emit_finish(e), 0);
  assert_true(sink.max_chunk <= 4096);
  free(sink.data);
}

static void test_mem_sink(void **state) {
  (void)state;
  cs_mem_sink_t s;
  cs_mem_sink_init(&s);
  cs_sink_t sink = cs_mem_sink(&s);
  char chunk[5000];
  for (size_t i = 0; i < sizeof chunk; i++) chunk[i] = (char)i;
  for (int i = 0; i < 10; i++) assert_int_equal(sink.write(sink.ctx, chunk, sizeof chunk), 0);
  assert_int_equal(s.len, 10 * sizeof chunk);
  assert_memory_equal(s.data + 9 * sizeof chunk, chunk, sizeof chunk);
  cs_mem_sink_free(&s);
  assert_null(s.data);
  assert_int_equal(s.len, 0);
}

/* ------------------------------------------------------------------------------------------------
 * The fd sink
 * ---------------------------------------------------------------------------------------------- */

/* The sample through an fd sink on fd, flushed; returns the emitter's result. */
static int emit_fd(cs_emit_format_t format, int fd, cs_fd_sink_t *s) {
  cs_fd_sink_init(s, fd);
  cs_emitter_t *e = cs_emitter_create(format, cs_fd_sink(s), 2);
  assert_non_null(e);
  emit_sample(e);
  int rc = cs_emit_finish(e);
  int flushed = cs_fd_sink_flush(s);
  return rc != 0 ? rc : flushed;
}

static void test_fd_sink_file(void **state) {
  (void)state;
  cs_fd_sink_t *s = malloc(sizeof *s);
  assert_non_null(s);
  for (int format = CS_EMIT_JSON; format <= CS_EMIT_PICKLE; format++) {
    cs_mem_sink_t want;
    assert_int_equal(emit_mem((cs_emit_format_t)format, 2, emit_sample, &want), 0);
    char path[] = "/tmp/cs_emit_fd_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(emit_fd((cs_emit_format_t)format, fd, s), 0);
    assert_int_equal(s->total, want.len);
    assert_int_equal(close(fd), 0);
    size_t len;
    char *got = read_file(path, &len);
    unlink(path);
    assert_non_null(got);
    assert_int_equal(len, want.len);
    assert_memory_equal(got, want.data, len);
    free(got);
    cs_mem_sink_free(&want);
  }
  free(s);
}

typedef struct pipe_reader_s {
  int fd;
  char *data;
  size_t len, cap;
} pipe_reader_t;

static void *pipe_reader_main(void *arg) {
  pipe_reader_t *r = arg;
  for (;;) {
    if (r->len == r->cap) r->data = realloc(r->data, r->cap = r->cap * 2 + 4096);
    if (r->data == NULL) return NULL;
    ssize_t n = read(r->fd, r->data + r->len, r->cap - r->len > 700 ? 700 : r->cap - r->len);
    if (n <= 0) return NULL;
    r->len += (size_t)n;
  }
}

/* A pipe holds 64 KiB; a slow reader makes write(2) block and resume. */
static void test_fd_sink_pipe(void **state) {
  (void)state;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pipe_reader_t reader = {.fd = fds[0]};
  pthread_t thread;
  assert_int_equal(pthread_create(&thread, NULL, pipe_reader_main, &reader), 0);
  cs_fd_sink_t *s = malloc(sizeof *s);
  assert_non_null(s);
  cs_fd_sink_init(s, fds[1]);
  cs_sink_t sink = cs_fd_sink(s);
  char chunk[70000];
  for (size_t i = 0; i < sizeof chunk; i++) chunk[i] = (char)(i * 7);
  size_t sizes[] = {1, 15, 16, 17, 3, 70000, 5, 65536, 65535, 1, 2, 40000};
  size_t total = 0;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    assert_int_equal(sink.write(sink.ctx, chunk, sizes[i]), 0);
    total += sizes[i];
  }
  assert_int_equal(cs_fd_sink_flush(s), 0);
  assert_int_equal(s->total, total);
  close(fds[1]);
  assert_int_equal(pthread_join(thread, NULL), 0);
  close(fds[0]);
  assert_int_equal(reader.len, total);
  size_t at = 0;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    assert_memory_equal(reader.data + at, chunk, sizes[i]);
    at += sizes[i];
  }
  free(reader.data);
  free(s);
}

/* A scripted write(2): interrupted, short, then whole, in turn; or failing from call fail_at. */
static struct fake_write_s {
  size_t calls;
  size_t fail_at;  /* 0 = never */
  int fail_errno;  /* errno to fail with; 0: return 0 (no progress) */
  char *data;      /* what was written */
  size_t len;
} fake;

static ssize_t fake_write(int fd, const void *buf, size_t len) {
  (void)fd;
  fake.calls++;
  if (fake.fail_at != 0 && fake.calls >= fake.fail_at) {
    if (fake.fail_errno == 0) return 0;
    errno = fake.fail_errno;
    return -1;
  }
  size_t n = len;
  switch (fake.calls % 4) {
  case 1: errno = EINTR; return -1;
  case 2: n = 1; break;
  case 3: n = len < 7 ? len : 7; break;
  default: break;
  }
  fake.data = realloc(fake.data, fake.len + n);
  assert_non_null(fake.data);
  memcpy(fake.data + fake.len, buf, n);
  fake.len += n;
  return (ssize_t)n;
}

static int fake_setup(void **state) {
  (void)state;
  memset(&fake, 0, sizeof fake);
  cs_sink_write_impl = fake_write;
  return 0;
}

static int fake_teardown(void **state) {
  (void)state;
  cs_sink_write_impl = write;
  free(fake.data);
  memset(&fake, 0, sizeof fake);
  return 0;
}

static void test_fd_sink_eintr_short(void **state) {
  (void)state;
  cs_fd_sink_t *s = malloc(sizeof *s);
  assert_non_null(s);
  for (int format = CS_EMIT_JSON; format <= CS_EMIT_PICKLE; format++) {
    cs_mem_sink_t want;
    assert_int_equal(emit_mem((cs_emit_format_t)format, 2, emit_sample, &want), 0);
    fake.len = 0;
    fake.calls = 0;
    assert_int_equal(emit_fd((cs_emit_format_t)format, 99, s), 0);
    assert_true(fake.calls >= 4); /* at least: interrupted, 1 byte, 7 bytes, the rest */
    assert_int_equal(fake.len, want.len);
    assert_memory_equal(fake.data, want.data, want.len);
    cs_mem_sink_free(&want);
  }
  free(s);
}

static void check_fd_failure(int fail_errno, int want_errno) {
  cs_fd_sink_t *s = malloc(sizeof *s);
  assert_non_null(s);
  fake.calls = 0;
  fake.len = 0;
  fake.fail_at = 2; /* after an EINTR: the retry fails */
  fake.fail_errno = fail_errno;
  assert_int_equal(emit_fd(CS_EMIT_PICKLE, 99, s), want_errno);
  assert_int_equal(fake.calls, 2); /* nothing after the failure */
  assert_int_equal(s->error, want_errno);
  cs_sink_t sink = cs_fd_sink(s);
  assert_int_equal(sink.write(sink.ctx, "x", 1), want_errno);
  assert_int_equal(sink.write(sink.ctx, s->buf, sizeof s->buf), want_errno);
  assert_int_equal(cs_fd_sink_flush(s), want_errno);
  assert_int_equal(fake.calls, 2);
  free(s);
}

static void test_fd_sink_error_sticky(void **state) {
  (void)state;
  check_fd_failure(ENOSPC, ENOSPC);
  check_fd_failure(0, EIO); /* write(2) returning 0 must not spin */
}

static void test_fd_sink_flush_empty(void **state) {
  (void)state;
  cs_fd_sink_t *s = malloc(sizeof *s);
  assert_non_null(s);
  cs_fd_sink_init(s, 99);
  assert_int_equal(cs_fd_sink_flush(s), 0);
  assert_int_equal(fake.calls, 0);
  free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_json),
      cmocka_unit_test(test_golden_pickle),
      cmocka_unit_test(test_python_roundtrip),
      cmocka_unit_test(test_json_ints),
      cmocka_unit_test(test_json_int_digits),
      cmocka_unit_test(test_pickle_ints),
      cmocka_unit_test(test_json_floats),
      cmocka_unit_test(test_json_float_shortest),
      cmocka_unit_test(test_pickle_floats),
      cmocka_unit_test(test_json_float_locale),
      cmocka_unit_test(test_json_strings),
      cmocka_unit_test(test_json_string_positions),
      cmocka_unit_test(test_pickle_strings),
      cmocka_unit_test(test_pickle_same_length_invalid),
      cmocka_unit_test(test_json_tuples),
      cmocka_unit_test(test_pickle_tuples),
      cmocka_unit_test(test_pickle_tuples_everywhere),
      cmocka_unit_test(test_max_depth),
      cmocka_unit_test(test_scalars),
      cmocka_unit_test(test_frames_shared),
      cmocka_unit_test(test_bad_protocol),
#if CS_DEBUG == 0
      cmocka_unit_test(test_misuse),
#endif
      cmocka_unit_test(test_sink_failure),
      cmocka_unit_test(test_streaming),
      cmocka_unit_test(test_mem_sink),
      cmocka_unit_test(test_fd_sink_file),
      cmocka_unit_test(test_fd_sink_pipe),
      cmocka_unit_test_setup_teardown(test_fd_sink_eintr_short, fake_setup, fake_teardown),
      cmocka_unit_test_setup_teardown(test_fd_sink_error_sticky, fake_setup, fake_teardown),
      cmocka_unit_test_setup_teardown(test_fd_sink_flush_empty, fake_setup, fake_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
