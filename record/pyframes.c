/* SPDX-License-Identifier: Apache-2.0 */
/* Python frames on the hot path (contract in record/pyframes.h). */
#include "record/pyframes.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "common/cs_compiler.h"
#include "common/cs_log.h"
#include "common/cs_lock.h"

/* ------------------------------------------------------------------------------------------------
 * Layouts, per CPython version (x86_64 and aarch64 LP64), from CPython's headers:
 * Include/cpython/pystate.h (PyThreadState, _PyCFrame), Include/internal/pycore_frame.h
 * (_PyInterpreterFrame), Include/cpython/code.h (PyCodeObject), Include/cpython/unicodeobject.h
 * and bytesobject.h, and for 3.9/3.10 Include/cpython/frameobject.h (every offset here was also
 * printed with offsetof from the installed headers of that version: Debian's 3.11, pyenv's 3.9.18,
 * 3.10.13, 3.12.1 and 3.13.0). Checked at run time as record/pyframes.h says; tests/integration/py_frames.sh runs
 * them on the interpreters installed.
 * ---------------------------------------------------------------------------------------------- */

enum { CS_PY_NONE = -1 };

typedef struct cs_py_layout_s {
  unsigned version;           /* major << 8 | minor */
  ptrdiff_t ts_cframe;        /* PyThreadState.cframe; CS_PY_NONE: the frame is in the state */
  size_t ts_thread_id;        /* PyThreadState.thread_id */
  size_t cframe_current;      /* _PyCFrame.current_frame, or PyThreadState.current_frame */
  size_t fr_code;             /* _PyInterpreterFrame.f_code (3.13: f_executable) */
  size_t fr_previous, fr_instr, fr_owner; /* previous; prev_instr (3.13: instr_ptr); owner */
  ptrdiff_t fr_is_entry;      /* 3.11's is_entry; CS_PY_NONE from 3.12, which has shim frames */
  int owner_generator;        /* FRAME_OWNED_BY_GENERATOR */
  int owner_cstack;           /* FRAME_OWNED_BY_CSTACK (3.12+: a C call's entry shim), or -1 */
  /* 3.9 and 3.10: frames are PyFrameObjects, one C-level evaluation call each */
  bool frame_objects;
  size_t ts_frame, fo_back, fo_code, fo_lasti; /* PyThreadState.frame; PyFrameObject's fields */
  bool lasti_bytes;           /* 3.9's f_lasti counts bytes, 3.10's code units */
  size_t co_firsttraceable, co_code; /* PyCodeObject._co_firsttraceable, co_code_adaptive */
  size_t co_filename, co_qualname, co_linetable, co_firstlineno;
  size_t unicode_state, unicode_length, ascii_data, compact_data; /* PyASCIIObject, PyCompactUnicodeObject */
  size_t bytes_size, bytes_data;                                  /* PyBytesObject */
} cs_py_layout_t;

static const cs_py_layout_t cs_py_layouts[] = {
    /* 3.9: co_lnotab for lines, co_name for the name (no co_qualname before 3.11) */
    {.version = 0x0309, .frame_objects = true, .ts_thread_id = 176,
     .ts_frame = 24, .fo_back = 24, .fo_code = 32, .fo_lasti = 104, .lasti_bytes = true,
     .co_filename = 104, .co_qualname = 112, .co_linetable = 120, .co_firstlineno = 40,
     .unicode_state = 32, .unicode_length = 16, .ascii_data = 48, .compact_data = 72,
     .bytes_size = 16, .bytes_data = 32},
    /* 3.10: co_linetable in 3.10's own format */
    {.version = 0x030a, .frame_objects = true, .ts_thread_id = 176,
     .ts_frame = 24, .fo_back = 24, .fo_code = 32, .fo_lasti = 96, .lasti_bytes = false,
     .co_filename = 104, .co_qualname = 112, .co_linetable = 120, .co_firstlineno = 40,
     .unicode_state = 32, .unicode_length = 16, .ascii_data = 48, .compact_data = 72,
     .bytes_size = 16, .bytes_data = 32},
    {.version = 0x030b,
     .ts_cframe = 56, .ts_thread_id = 152, .cframe_current = 8,
     .fr_code = 32, .fr_previous = 48, .fr_instr = 56, .fr_owner = 69, .fr_is_entry = 68,
     .owner_generator = 1, .owner_cstack = -1,
     .co_firsttraceable = 168, .co_code = 184,
     .co_filename = 112, .co_qualname = 128, .co_linetable = 136, .co_firstlineno = 72,
     .unicode_state = 32, .unicode_length = 16, .ascii_data = 48, .compact_data = 72,
     .bytes_size = 16, .bytes_data = 32},
    /* 3.12: no is_entry, a shim frame owned by the C stack opens each C-level evaluation call;
       PyUnicode lost its wstr fields */
    {.version = 0x030c,
     .ts_cframe = 56, .ts_thread_id = 136, .cframe_current = 0,
     .fr_code = 0, .fr_previous = 8, .fr_instr = 56, .fr_owner = 70, .fr_is_entry = CS_PY_NONE,
     .owner_generator = 1, .owner_cstack = 3,
     .co_firsttraceable = 176, .co_code = 192,
     .co_filename = 112, .co_qualname = 128, .co_linetable = 136, .co_firstlineno = 68,
     .unicode_state = 32, .unicode_length = 16, .ascii_data = 40, .compact_data = 56,
     .bytes_size = 16, .bytes_data = 32},
    /* 3.13: no _PyCFrame (the current frame is in the thread state), f_executable, instr_ptr
       (the instruction under way rather than the last one done: the same index either way) */
    {.version = 0x030d,
     .ts_cframe = CS_PY_NONE, .ts_thread_id = 152, .cframe_current = 72,
     .fr_code = 0, .fr_previous = 8, .fr_instr = 56, .fr_owner = 70, .fr_is_entry = CS_PY_NONE,
     .owner_generator = 1, .owner_cstack = 3,
     .co_firsttraceable = 184, .co_code = 200,
     .co_filename = 112, .co_qualname = 128, .co_linetable = 136, .co_firstlineno = 68,
     .unicode_state = 32, .unicode_length = 16, .ascii_data = 40, .compact_data = 56,
     .bytes_size = 16, .bytes_data = 32},
};

/* ------------------------------------------------------------------------------------------------
 * The interpreter, found once
 * ---------------------------------------------------------------------------------------------- */

typedef int (*cs_py_int_fn)(void);
typedef void *(*cs_py_ptr_fn)(void);

static struct {
  const cs_py_layout_t *layout; /* NULL: no usable interpreter */
  cs_py_int_fn is_initialized, is_finalizing;
  cs_py_ptr_fn this_thread_state; /* PyGILState_GetThisThreadState: this thread's, from TSS */
  const void *code_type, *unicode_type, *bytes_type; /* &PyCode_Type, &PyUnicode_Type, &PyBytes_Type */
  uintptr_t eval_lo, eval_hi;     /* _PyEval_EvalFrameDefault's code */
} cs_py;

static atomic_int cs_py_initialized;
static atomic_int cs_py_checked; /* 0 not yet, 1 layout matches, -1 refused */

static void *cs_py_sym(const char *name) { return dlsym(RTLD_DEFAULT, name); }

/* dlsym's void * as a function pointer (ISO C has no direct conversion). */
#define CS_PY_FN(out, name)                                                                        \
  do {                                                                                             \
    void *cs_sym_ = cs_py_sym(name);                                                               \
    memcpy(&(out), &cs_sym_, sizeof cs_sym_);                                                      \
  } while (0)

static bool cs_py_arena_init(void);

void cs_py_init(void) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&cs_py_initialized, &expected, 1)) return;
  const unsigned long *version = cs_py_sym("Py_Version"); /* 3.11 and later */
  unsigned v = 0;
  if (version != NULL) {
    v = (unsigned)(*version >> 16) & 0xffffu;
  } else {
    /* before 3.11: "3.10.13 (main, ...)"; Python's documentation lists Py_GetVersion among the
       few functions safe to call before the interpreter is initialized */
    const char *(*get_version)(void) = NULL;
    CS_PY_FN(get_version, "Py_GetVersion");
    if (get_version == NULL) return; /* no interpreter in this process: nothing more, ever */
    unsigned major = 0, minor = 0;
    if (sscanf(get_version(), "%u.%u", &major, &minor) == 2 && major < 256 && minor < 256) v = major << 8 | minor;
  }
  const cs_py_layout_t *layout = NULL;
  for (size_t i = 0; i < sizeof cs_py_layouts / sizeof *cs_py_layouts; i++) {
    if (cs_py_layouts[i].version == v) layout = &cs_py_layouts[i];
  }
  if (layout == NULL) {
    /* free-threaded builds (3.13t and later) are among these: no one GIL to rely on */
    cs_log_debug("Python frames: CPython %u.%u is not one cudasnap knows (3.9 to 3.13); native frames only", v >> 8,
                 v & 0xffu);
    return;
  }
  CS_PY_FN(cs_py.is_initialized, "Py_IsInitialized");
  CS_PY_FN(cs_py.is_finalizing, "Py_IsFinalizing"); /* 3.13; _Py_IsFinalizing before */
  if (!cs_py.is_finalizing) CS_PY_FN(cs_py.is_finalizing, "_Py_IsFinalizing");
  CS_PY_FN(cs_py.this_thread_state, "PyGILState_GetThisThreadState");
  cs_py.code_type = cs_py_sym("PyCode_Type");
  cs_py.unicode_type = cs_py_sym("PyUnicode_Type");
  cs_py.bytes_type = cs_py_sym("PyBytes_Type");
  void *eval = cs_py_sym("_PyEval_EvalFrameDefault");
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (eval != NULL && dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) != 0 && sym != NULL) {
    cs_py.eval_lo = (uintptr_t)eval;
    cs_py.eval_hi = (uintptr_t)eval + sym->st_size;
  }
  const void *type_type = cs_py_sym("PyType_Type");
  if (!cs_py.is_initialized || !cs_py.is_finalizing || !cs_py.this_thread_state || !cs_py.code_type ||
      !cs_py.unicode_type || !cs_py.bytes_type || !type_type) {
    cs_log_debug("Python frames: CPython %u.%u lacks part of the C API cudasnap reads; native frames only", v >> 8,
                 v & 0xffu);
    return;
  }
  /* Objects start with a reference count and their type (PyCode_Type's type is PyType_Type) in
     the default build; a free-threaded build (3.13t) puts its thread id and counts first. */
  if (*(const void *const *)((const char *)cs_py.code_type + sizeof(intptr_t)) != type_type) {
    cs_log_debug("Python frames: CPython %u.%u's objects are not laid out as a default build's (free-threaded?); "
                 "native frames only",
                 v >> 8, v & 0xffu);
    return;
  }
  if (!cs_py_arena_init()) {
    cs_log_debug("Python frames: no memory for the code table; native frames only");
    return;
  }
  cs_log_debug("Python frames: CPython %u.%u found; its layout is checked at the first allocation from Python",
               v >> 8, v & 0xffu);
  cs_py.layout = layout;
}

/* ------------------------------------------------------------------------------------------------
 * Code objects, copied once each: a Python frame entry names a record in our own arena (the
 * code's qualified name and file as UTF-8, its first line and its location table), never the
 * code object, so nothing Python frees later can make a snapshot read freed memory, and no
 * reference (which would need the GIL) is taken. The arena is reserved once (address space; pages
 * are touched as records are added) and never grows: past it, frames are recorded unnamed.
 *
 * Lookups are lock-free (a fixed open-addressing set keyed by the code object's address and the
 * addresses of its name, file and table, so that a new code object at a freed one's address is
 * a new key); an insert takes a mutex (first sight of a code object only).
 * ---------------------------------------------------------------------------------------------- */

enum {
  CS_PY_SLOTS = 1 << 15,             /* distinct code objects at most (3/4 of it used) */
  CS_PY_ARENA_BYTES = 32 << 20,      /* all records */
  CS_PY_NAME_MAX = 512,              /* bytes of a name or file kept */
  CS_PY_TABLE_MAX = 64 << 10,        /* bytes of a location table kept */
};

typedef struct cs_py_slot_s {
  _Atomic uintptr_t code; /* 0 = empty; written last */
  uintptr_t name, file, table; /* the code's co_qualname, co_filename, co_linetable */
  uint32_t record;        /* offset / 8 into the arena */
} cs_py_slot_t;

static cs_py_slot_t cs_py_slots[CS_PY_SLOTS];
static size_t cs_py_slots_used;
static char *cs_py_arena;
static _Atomic size_t cs_py_arena_used = 8; /* record 0 means "unnamed" */
static cs_lock_t cs_py_lock; /* zero: free */

static bool cs_py_arena_init(void) {
  void *p = mmap(NULL, CS_PY_ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  cs_py_arena = p;
  return true;
}

const cs_py_record_t *cs_py_record(uint32_t record) {
  if (record == 0 || (size_t)record * 8 >= atomic_load_explicit(&cs_py_arena_used, memory_order_acquire))
    return NULL;
  return (const cs_py_record_t *)(const void *)(cs_py_arena + (size_t)record * 8);
}

#define CS_PY_AT(base, off, type) (*(type const *)((const char *)(base) + (off)))

static bool cs_py_is(const void *obj, const void *type) {
  return obj != NULL && CS_PY_AT(obj, sizeof(intptr_t), const void *) == type; /* ob_type */
}

/* Appends code point cp as UTF-8 at out[*k], within cap bytes. */
static void cs_py_put_utf8(char *out, size_t cap, size_t *k, uint32_t cp) {
  unsigned char tmp[4];
  size_t n;
  if (cp < 0x80) {
    tmp[0] = (unsigned char)cp;
    n = 1;
  } else if (cp < 0x800) {
    tmp[0] = (unsigned char)(0xC0 | cp >> 6);
    tmp[1] = (unsigned char)(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    tmp[0] = (unsigned char)(0xE0 | cp >> 12);
    tmp[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    tmp[2] = (unsigned char)(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    tmp[0] = (unsigned char)(0xF0 | (cp >> 18 & 0x07));
    tmp[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    tmp[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    tmp[3] = (unsigned char)(0x80 | (cp & 0x3F));
    n = 4;
  }
  if (*k + n > cap) return;
  memcpy(out + *k, tmp, n);
  *k += n;
}

/* A str object's text as UTF-8 into out (at most cap bytes); its length. Code objects' names
 * and files are compact strings (the characters follow the header); 0 for anything else. */
static size_t cs_py_copy_str(const cs_py_layout_t *l, const void *str, char *out, size_t cap) {
  uint32_t state = CS_PY_AT(str, l->unicode_state, uint32_t);
  unsigned kind = state >> 2 & 7u, compact = state >> 5 & 1u, ascii = state >> 6 & 1u;
  size_t length = (size_t)CS_PY_AT(str, l->unicode_length, intptr_t);
  if (!compact) return 0;
  if (ascii) {
    size_t n = length < cap ? length : cap;
    memcpy(out, (const char *)str + l->ascii_data, n);
    return n;
  }
  const unsigned char *data = (const unsigned char *)str + l->compact_data;
  size_t k = 0;
  for (size_t i = 0; i < length && k + 4 <= cap; i++) {
    uint32_t cp = kind == 1   ? data[i]
                  : kind == 2 ? ((const uint16_t *)(const void *)data)[i]
                              : ((const uint32_t *)(const void *)data)[i];
    cs_py_put_utf8(out, cap, &k, cp);
  }
  return k;
}

/* Copies code's naming data into a new record; its index, or 0 when the arena is full. Under the
 * lock. */
static uint32_t cs_py_add_record(const cs_py_layout_t *l, const void *code, const void *name, const void *file,
                                 const void *table) {
  size_t table_len = (size_t)CS_PY_AT(table, l->bytes_size, intptr_t);
  if (table_len > CS_PY_TABLE_MAX) table_len = CS_PY_TABLE_MAX;
  size_t at = atomic_load_explicit(&cs_py_arena_used, memory_order_relaxed);
  size_t need = sizeof(cs_py_record_t) + 2 * CS_PY_NAME_MAX + table_len;
  if (at + need > CS_PY_ARENA_BYTES) return 0;
  cs_py_record_t *r = (cs_py_record_t *)(void *)(cs_py_arena + at);
  char *text = r->data;
  r->first_line = CS_PY_AT(code, l->co_firstlineno, int);
  r->version = l->version;
  r->name_len = (uint32_t)cs_py_copy_str(l, name, text, CS_PY_NAME_MAX);
  r->file_len = (uint32_t)cs_py_copy_str(l, file, text + r->name_len, CS_PY_NAME_MAX);
  r->table_len = (uint32_t)table_len;
  memcpy(text + r->name_len + r->file_len, (const char *)table + l->bytes_data, table_len);
  size_t used = sizeof(cs_py_record_t) + r->name_len + r->file_len + table_len;
  atomic_store_explicit(&cs_py_arena_used, at + ((used + 7) & ~(size_t)7), memory_order_release);
  return (uint32_t)(at / 8);
}

/* The record naming code, made on first sight; 0 when it cannot be named. */
static uint32_t cs_py_code_record(const cs_py_layout_t *l, const void *code) {
  const void *name = CS_PY_AT(code, l->co_qualname, const void *);
  const void *file = CS_PY_AT(code, l->co_filename, const void *);
  const void *table = CS_PY_AT(code, l->co_linetable, const void *);
  size_t h = (size_t)(((uintptr_t)code >> 4) * 0x9E3779B97F4A7C15ull >> 40);
  for (bool locked = false;;) {
    size_t i = h & (CS_PY_SLOTS - 1);
    for (size_t probes = 0; probes < CS_PY_SLOTS; probes++, i = (i + 1) & (CS_PY_SLOTS - 1)) {
      cs_py_slot_t *s = &cs_py_slots[i];
      uintptr_t c = atomic_load_explicit(&s->code, memory_order_acquire);
      if (c == 0) break;
      if (c == (uintptr_t)code && s->name == (uintptr_t)name && s->file == (uintptr_t)file &&
          s->table == (uintptr_t)table) {
        if (locked) cs_lock_release(&cs_py_lock);
        return s->record;
      }
    }
    if (locked) {
      /* not there, under the lock: add it at the empty slot the probe stopped at */
      uint32_t record = 0;
      if (cs_py_slots_used * 4 < CS_PY_SLOTS * 3 && cs_py_is(code, cs_py.code_type) &&
          cs_py_is(name, cs_py.unicode_type) && cs_py_is(file, cs_py.unicode_type) &&
          cs_py_is(table, cs_py.bytes_type))
        record = cs_py_add_record(l, code, name, file, table);
      if (record != 0) {
        cs_py_slot_t *s = &cs_py_slots[i];
        s->name = (uintptr_t)name;
        s->file = (uintptr_t)file;
        s->table = (uintptr_t)table;
        s->record = record;
        atomic_store_explicit(&s->code, (uintptr_t)code, memory_order_release);
        cs_py_slots_used++;
      }
      cs_lock_release(&cs_py_lock);
      return record;
    }
    cs_lock_acquire(&cs_py_lock);
    locked = true;
  }
}

void cs_py_postfork_child(void) { cs_lock_init(&cs_py_lock); }

/* ------------------------------------------------------------------------------------------------
 * Reading this thread's frames
 *
 * Only this thread's own frames are read, and only while it is inside a call out of Python (the
 * allocation we are in): holding the GIL or having released it around a C call (ctypes, most
 * extension code), its frame chain changes only when it returns to Python, which it cannot do
 * while here; its frames hold their code objects. No other thread's state is read.
 * ---------------------------------------------------------------------------------------------- */

enum { CS_PY_INSTR_BITS = 24 };

static uintptr_t cs_py_encode(uint32_t record, uintptr_t instr) {
  if (instr >= ((uintptr_t)1 << CS_PY_INSTR_BITS)) instr = ((uintptr_t)1 << CS_PY_INSTR_BITS) - 1;
  return CS_PY_FRAME_TAG | (uintptr_t)record << CS_PY_INSTR_BITS | instr;
}

void cs_py_frame_decode(uintptr_t entry, uint32_t *record, uint32_t *instr) {
  *instr = (uint32_t)(entry & (((uintptr_t)1 << CS_PY_INSTR_BITS) - 1));
  *record = (uint32_t)((entry & ~CS_PY_FRAME_TAG) >> CS_PY_INSTR_BITS);
}

/* From frame (raw, may be NULL), the first frame with an instruction under way: frames whose
 * prologue has not run yet, and 3.12+'s C-stack shims, are skipped, as CPython's own tracebacks
 * do. *crossed: set when a shim was passed (a C-level evaluation call begins below it). */
static const void *cs_py_complete(const cs_py_layout_t *l, const void *frame, bool *crossed) {
  for (int guard = 0; frame != NULL && guard < 100000; guard++) {
    const void *code = CS_PY_AT(frame, l->fr_code, const void *);
    char owner = CS_PY_AT(frame, l->fr_owner, char);
    if (owner == l->owner_cstack || !cs_py_is(code, cs_py.code_type)) {
      if (owner == l->owner_cstack) *crossed = true;
      frame = CS_PY_AT(frame, l->fr_previous, const void *);
      continue;
    }
    uintptr_t first = (uintptr_t)code + l->co_code +
                      2 * (uintptr_t)CS_PY_AT(code, l->co_firsttraceable, int); /* 2-byte code units */
    if (owner == l->owner_generator || CS_PY_AT(frame, l->fr_instr, uintptr_t) >= first) return frame;
    frame = CS_PY_AT(frame, l->fr_previous, const void *);
  }
  return NULL;
}

/* 3.9/3.10: from frame (may be NULL), the first frame object holding a code object. */
static const void *cs_py_object_frame(const cs_py_layout_t *l, const void *frame) {
  for (int guard = 0; frame != NULL && guard < 100000; guard++) {
    if (cs_py_is(CS_PY_AT(frame, l->fo_code, const void *), cs_py.code_type)) return frame;
    frame = CS_PY_AT(frame, l->fo_back, const void *);
  }
  return NULL;
}

/* This thread's innermost Python frame, or NULL: no interpreter running, or this thread has no
 * Python state or no Python frame. */
static const void *cs_py_first_frame(const cs_py_layout_t *l) {
  if (!cs_py.is_initialized() || cs_py.is_finalizing()) return NULL;
  const void *ts = cs_py.this_thread_state();
  if (ts == NULL) return NULL;
  if (CS_UNLIKELY(atomic_load_explicit(&cs_py_checked, memory_order_relaxed) == 0)) {
    /* once: the thread state's layout must hold this thread's id where the header says */
    bool ok = CS_PY_AT(ts, l->ts_thread_id, unsigned long) == (unsigned long)pthread_self();
    if (!ok)
      cs_log_debug("Python frames: CPython %u.%u's thread state is not laid out as cudasnap expects; native "
                   "frames only",
                   l->version >> 8, l->version & 0xffu);
    atomic_store_explicit(&cs_py_checked, ok ? 1 : -1, memory_order_relaxed);
  }
  if (atomic_load_explicit(&cs_py_checked, memory_order_relaxed) < 0) return NULL;
  if (l->frame_objects) return cs_py_object_frame(l, CS_PY_AT(ts, l->ts_frame, const void *));
  const void *holder = ts; /* 3.11 and 3.12: the frame hangs off the _PyCFrame */
  if (l->ts_cframe != CS_PY_NONE) holder = CS_PY_AT(ts, (size_t)l->ts_cframe, const void *);
  if (holder == NULL) return NULL;
  bool crossed = false;
  return cs_py_complete(l, CS_PY_AT(holder, l->cframe_current, const void *), &crossed);
}

/* The entry of *frame, which advances to the next complete frame; *entry_frame: whether it was
 * the first frame its C-level evaluation call ran (where a native evaluation frame ends). */
static uintptr_t cs_py_take(const cs_py_layout_t *l, const void **frame, bool *entry_frame) {
  const void *f = *frame;
  if (l->frame_objects) {
    const void *code = CS_PY_AT(f, l->fo_code, const void *);
    int lasti = CS_PY_AT(f, l->fo_lasti, int); /* -1 before the first instruction */
    uintptr_t instr = lasti < 0 ? 0 : l->lasti_bytes ? (uintptr_t)lasti / 2 : (uintptr_t)lasti;
    *entry_frame = true; /* each frame object runs in a C-level evaluation call of its own */
    *frame = cs_py_object_frame(l, CS_PY_AT(f, l->fo_back, const void *));
    return cs_py_encode(cs_py_code_record(l, code), instr);
  }
  const void *code = CS_PY_AT(f, l->fr_code, const void *);
  uintptr_t instr = (CS_PY_AT(f, l->fr_instr, uintptr_t) - ((uintptr_t)code + l->co_code)) / 2;
  bool crossed = false;
  *frame = cs_py_complete(l, CS_PY_AT(f, l->fr_previous, const void *), &crossed);
  *entry_frame = l->fr_is_entry != CS_PY_NONE ? CS_PY_AT(f, (size_t)l->fr_is_entry, bool) : crossed;
  return cs_py_encode(cs_py_code_record(l, code), instr);
}

bool cs_py_active(void) { return cs_py.layout != NULL; }

size_t cs_py_merge(const uintptr_t *pcs, size_t n, uintptr_t *out, size_t max, bool python_only) {
  const cs_py_layout_t *l = cs_py.layout;
  const void *frame = l != NULL ? cs_py_first_frame(l) : NULL;
  if (frame == NULL) return CS_PY_NO_FRAMES;
  size_t k = 0;
  for (size_t i = 0; !python_only && i < n && k < max; i++) {
    bool eval = pcs[i] - cs_py.eval_lo < cs_py.eval_hi - cs_py.eval_lo;
    if (!eval) {
      out[k++] = pcs[i];
      continue;
    }
    /* one C-level evaluation call runs Python frames up to and including an entry frame */
    bool entry = false;
    while (frame != NULL && !entry && k < max) out[k++] = cs_py_take(l, &frame, &entry);
  }
  while (frame != NULL && k < max) {
    bool entry;
    out[k++] = cs_py_take(l, &frame, &entry);
  }
  return k;
}
