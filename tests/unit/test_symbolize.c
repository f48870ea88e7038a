/* SPDX-License-Identifier: Apache-2.0 */
/* Symbolization of PCs in this executable (built with -g: names, files and lines), in libc
 * (names; lines only where its debug information is installed), of garbage, and of a C++-mangled
 * symbol, which comes back demangled when the process has __cxa_demangle. */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "record/stack.h"
#include "snapshot/symbolize.h"
#include "snapshot/symbol_name.h"

/* noclone: GCC must not rename these to "x.constprop.0" clones; and a call followed by
 * KEEP_FRAME is not a tail call, so the return address stays in the caller. */
#ifdef __clang__
#define TEST_FRAME __attribute__((noinline))
#else
#define TEST_FRAME __attribute__((noinline, noclone))
#endif
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

TEST_FRAME static uintptr_t return_address(void) {
  uintptr_t r = (uintptr_t)__builtin_return_address(0);
  KEEP_FRAME();
  return r;
}

/* *line is the line of the call to return_address: what pc - 1 must give. */
TEST_FRAME static uintptr_t static_target(int *line) {
  *line = __LINE__ + 1; /* the call's line */
  uintptr_t pc = return_address();
  KEEP_FRAME();
  return pc;
}

TEST_FRAME uintptr_t cs_test_extern_target(int *line);
TEST_FRAME uintptr_t cs_test_extern_target(int *line) {
  *line = __LINE__ + 1; /* the call's line */
  uintptr_t pc = return_address();
  KEEP_FRAME();
  return pc;
}

/* A C function under a C++ symbol name: what a C++ frame looks like to the symbolizer. */
int cs_test_mangled(int x) __asm__("_ZN3foo3barEi");
TEST_FRAME int cs_test_mangled(int x) {
  KEEP_FRAME();
  return x + 1;
}

static void test_static_function(void **state) {
  (void)state;
  cs_symbolizer_t *s = cs_symbolizer_create();
  assert_non_null(s);
  int line = 0;
  uintptr_t pc = static_target(&line);
  cs_frame_t f = cs_symbolize(s, pc, 0);
  assert_string_equal(f.name, "static_target");
  assert_true(ends_with(f.filename, "test_symbolize.c"));
  assert_int_equal(f.line, line);
  cs_symbolizer_destroy(s);
}

static void test_extern_function(void **state) {
  (void)state;
  cs_symbolizer_t *s = cs_symbolizer_create();
  assert_non_null(s);
  int line = 0;
  uintptr_t pc = cs_test_extern_target(&line);
  cs_frame_t f = cs_symbolize(s, pc, 0);
  assert_string_equal(f.name, "cs_test_extern_target");
  assert_true(ends_with(f.filename, "test_symbolize.c"));
  assert_int_equal(f.line, line);

  /* cached: the same strings again */
  cs_frame_t again = cs_symbolize(s, pc, 0);
  assert_ptr_equal(again.name, f.name);
  assert_ptr_equal(again.filename, f.filename);
  assert_int_equal(again.line, f.line);

  /* exact: a function's own address is that function (pc - 1 would be whatever precedes it) */
  cs_frame_t entry = cs_symbolize(s, (uintptr_t)&cs_test_extern_target, 1);
  assert_string_equal(entry.name, "cs_test_extern_target");
  assert_true(entry.line > 0 && entry.line < line);
  cs_symbolizer_destroy(s);
}

/* The frames cudasnap really captures: the capture's own caller is found by name and line. */
TEST_FRAME static size_t capture_here(uintptr_t *pcs, size_t max, int *line) {
  *line = __LINE__ + 1; /* the call's line */
  size_t n = cs_stack_capture(pcs, max);
  KEEP_FRAME();
  return n;
}

static void test_captured_stack(void **state) {
  (void)state;
  cs_stack_init();
  cs_stack_set_skip_range(0, 0); /* this executable is "cudasnap's own code" in a unit test */
  uintptr_t pcs[CS_STACK_MAX_DEPTH];
  int line = 0;
  size_t n = capture_here(pcs, CS_STACK_MAX_DEPTH, &line);
  assert_true(n > 2);
  cs_symbolizer_t *s = cs_symbolizer_create();
  assert_non_null(s);
  bool found = false;
  for (size_t i = 0; i < n; i++) {
    cs_frame_t f = cs_symbolize(s, pcs[i], 0);
    assert_non_null(f.name);
    assert_non_null(f.filename);
    if (strcmp(f.name, "capture_here") == 0) {
      assert_true(ends_with(f.filename, "test_symbolize.c"));
      assert_int_equal(f.line, line);
      /* the next frame out is this test */
      assert_true(i + 1 < n);
      assert_string_equal(cs_symbolize(s, pcs[i + 1], 0).name, "test_captured_stack");
      found = true;
    }
  }
  assert_true(found);
  cs_symbolizer_destroy(s);
}

static int lowest_load_of_program(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  uintptr_t *lo = data;
  for (size_t i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_LOAD && info->dlpi_addr + info->dlpi_phdr[i].p_vaddr < *lo)
      *lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
  return 1; /* the first object is the program */
}

/* A page of a loaded file mapped again just below it, as libffi maps its own file for the
 * trampolines of Python's ctypes callbacks: in /proc/self/maps the two read as one longer
 * mapping of the file. The file's code is still named at its load address. */
static void test_file_mapped_again_below(void **state) {
  (void)state;
  uintptr_t lo = UINTPTR_MAX;
  dl_iterate_phdr(lowest_load_of_program, &lo);
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  lo &= ~(uintptr_t)(page - 1);
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  assert_true(fd >= 0);
  void *again = mmap((void *)(lo - page), page, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
  close(fd);
  if (again == MAP_FAILED || (uintptr_t)again != lo - page) skip(); /* something else lives there */
  cs_symbolizer_t *s = cs_symbolizer_create();
  assert_non_null(s);
  int line = 0;
  uintptr_t pc = static_target(&line);
  cs_frame_t f = cs_symbolize(s, pc, 0);
  assert_string_equal(f.name, "static_target");
  assert_int_equal(f.line, line);
  cs_symbolizer_destroy(s);
  munmap(again, page);
}

/* The same for a library loaded by a symbolic link's name, as the loader loads most (libffi.so.8
 * -> libffi.so.8.1.2): the loader knows the link's name, /proc/self/maps the file's. */
static void test_library_mapped_again_below(void **state) {
  (void)state;
  void *lib = dlopen("libffi.so.8", RTLD_NOW | RTLD_LOCAL);
  if (!lib) skip(); /* no libffi on this machine */
  void *fn = dlsym(lib, "ffi_call");
  Dl_info info;
  assert_true(fn && dladdr(fn, &info) && info.dli_fname);
  char real[4096];
  assert_non_null(realpath(info.dli_fname, real));
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const uintptr_t lo = (uintptr_t)info.dli_fbase & ~(uintptr_t)(page - 1);
  int fd = open(real, O_RDONLY | O_CLOEXEC);
  assert_true(fd >= 0);
  void *again = mmap((void *)(lo - page), page, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
  close(fd);
  if (again == MAP_FAILED || (uintptr_t)again != lo - page) {
    dlclose(lib);
    skip(); /* something else lives there */
  }
  cs_symbolizer_t *s = cs_symbolizer_create();
  assert_non_null(s);
  assert_string_equal(cs_symbolize(s, (uintptr_t)fn, 1).name, "ffi_call");
  cs_symbolizer_destroy(s);
  munmap(again, page);
  dlclose(lib);
}

static void *libc_symbol(const char *name) {
  /* through libc's own handle: RTLD_DEFAULT could give a sanitizer's interceptor instead */
  void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  assert_non_null(libc);
  void *p = dlsym(libc, name);
  dlclose(libc);
  assert_non_null(p);
  return p;
}

static void test_libc(void **state) {
  (void)state;
  cs_symbolizer_t *s = cs_symbolizer_create();
  assert_non_null(s);
  const uintptr_t fn = (uintptr_t)libc_symbol("getpid");
  /* the entry exactly, and as if returning to one byte past it */
  cs_frame_t exact = cs_symbolize(s, fn, 1);
  cs_frame_t ret = cs_symbolize(s, fn + 1, 0);
  assert_non_null(strstr(exact.name, "getpid")); /* getpid or its alias __getpid */
  assert_string_equal(ret.name, exact.name);
  assert_true(exact.line >= 0);
  /* without libc's debug information: the module as file, line 0; with it: a source line */
  if (exact.line == 0) assert_non_null(strstr(exact.filename, "libc"));
  else assert_string_not_equal(exact.filename, "??");
  cs_symbolizer_destroy(s);
}

/* The ELF header of libc: in the module, but no symbol and no line there. */
static void test_module_without_symbol(void **state) {
  (void)state;
  Dl_info info;
  assert_true(dladdr(libc_symbol("getpid"), &info));
  cs_symbolizer_t *s = cs_symbolizer_create();
  assert_non_null(s);
  cs_frame_t f = cs_symbolize(s, (uintptr_t)info.dli_fbase, 1);
  assert_string_equal(f.name, "??");
  assert_non_null(strstr(f.filename, "libc"));
  assert_true(ends_with(f.filename, "+0x0"));
  assert_int_equal(f.line, 0);
  cs_symbolizer_destroy(s);
}

static void test_garbage(void **state) {
  (void)state;
  cs_symbolizer_t *s = cs_symbolizer_create();
  assert_non_null(s);
  const uintptr_t garbage[] = {0x10, 0, 1, UINTPTR_MAX, (uintptr_t)0xdead00000000u};
  for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++)
    for (int exact = 0; exact <= 1; exact++) {
      cs_frame_t f = cs_symbolize(s, garbage[i], exact);
      assert_string_equal(f.name, "??");
      assert_string_equal(f.filename, "??");
      assert_int_equal(f.line, 0);
    }
  cs_symbolizer_destroy(s);
  cs_symbolizer_destroy(NULL);
  cs_frame_t f = cs_symbolize(NULL, 0x1234, 0);
  assert_string_equal(f.name, "??");
}

/* Many distinct PCs: the cache and the string arena grow; earlier strings stay valid. */
static void test_many_pcs(void **state) {
  (void)state;
  cs_symbolizer_t *s = cs_symbolizer_create();
  assert_non_null(s);
  const uintptr_t base = (uintptr_t)libc_symbol("getpid");
  int line = 0;
  const uintptr_t mine = cs_test_extern_target(&line);
  cs_frame_t first = cs_symbolize(s, mine, 0);
  for (uintptr_t i = 0; i < 5000; i++) {
    cs_frame_t f = cs_symbolize(s, base + i * 7, 0);
    assert_non_null(f.name);
    assert_non_null(f.filename);
  }
  assert_string_equal(first.name, "cs_test_extern_target");
  assert_int_equal(cs_symbolize(s, mine, 0).line, line);
  cs_symbolizer_destroy(s);
}

static void test_demangle(void **state) {
  (void)state;
  const bool had_runtime = dlsym(RTLD_DEFAULT, "__cxa_demangle") != NULL;
  if (!had_runtime) {
    /* no C++ runtime loaded yet: the mangled name is kept as it is */
    void *loaded = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (!loaded) {
      cs_symbolizer_t *s = cs_symbolizer_create();
      assert_non_null(s);
      assert_string_equal(cs_symbolize(s, (uintptr_t)&cs_test_mangled, 1).name, "_ZN3foo3barEi");
      cs_symbolizer_destroy(s);
    } else {
      dlclose(loaded);
    }
  }
  /* Load a C++ runtime the way a Python extension would (not global): the symbolizer must still
   * find __cxa_demangle. */
  void *cxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
  if (!cxx) skip(); /* no libstdc++ on this machine */
  cs_symbolizer_t *s = cs_symbolizer_create();
  assert_non_null(s);
  cs_frame_t f = cs_symbolize(s, (uintptr_t)&cs_test_mangled, 1);
  assert_string_equal(f.name, "foo::bar(int)");
  assert_true(ends_with(f.filename, "test_symbolize.c"));
  cs_symbolizer_destroy(s);
  dlclose(cxx);
  assert_int_equal(cs_test_mangled(1), 2);
}

/* A compiler's clone of a function is named as the function: "alloc.constprop.0.isra.0" is the
 * user's "alloc", and a site must not split by how the compiler optimized it. */
static void cs_check_base_name(const char *name, const char *want) {
  const size_t n = cs_symbol_name_length(name, strlen(name));
  char got[128];
  snprintf(got, sizeof got, "%.*s", (int)n, name);
  assert_string_equal(got, want);
}

static void test_clone_suffixes(void **state) {
  (void)state;
  cs_check_base_name("allocate_leak.constprop.0.isra.0", "allocate_leak");
  cs_check_base_name("train_step.part.0", "train_step");
  cs_check_base_name("main.cold", "main");
  cs_check_base_name("helper.lto_priv.0", "helper");
  cs_check_base_name("f.llvm.8812334", "f");
  cs_check_base_name("ns::Alloc::grow(unsigned long) [clone .constprop.0] [clone .cold]", "ns::Alloc::grow(unsigned long)");
  /* names whose dots are their own */
  cs_check_base_name("_GLOBAL__sub_I_main.cpp", "_GLOBAL__sub_I_main.cpp");
  cs_check_base_name("train_step", "train_step");
  cs_check_base_name(".cold", ".cold");
  cs_check_base_name("operator[]", "operator[]");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_static_function),
      cmocka_unit_test(test_extern_function),
      cmocka_unit_test(test_captured_stack),
      cmocka_unit_test(test_libc),
      cmocka_unit_test(test_file_mapped_again_below),
      cmocka_unit_test(test_library_mapped_again_below),
      cmocka_unit_test(test_module_without_symbol),
      cmocka_unit_test(test_garbage),
      cmocka_unit_test(test_many_pcs),
      cmocka_unit_test(test_demangle),
      cmocka_unit_test(test_clone_suffixes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
