/* SPDX-License-Identifier: Apache-2.0 */
/* A second dlsym overrider for the coexistence tests (issue #3 test 10), written the correct
 * chaining way (interposition.md 4.2, pitfalls 1 and 5): it counts every call and tail-jumps to the
 * next dlsym, found as libc_dlsym(RTLD_NEXT, "dlsym") from inside this library, where libc_dlsym
 * comes from dlvsym. The jump keeps the caller's return address, so RTLD_NEXT lookups still
 * resolve relative to the program's own object. Preloaded before or after cudasnap, each must
 * see the other's lookups.
 *
 * DLSYM_SPY_REPORT=1 prints "dlsym_spy: N calls" on stderr at exit. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void *(*spy_dlsym_fn)(void *, const char *);

static atomic_ulong spy_calls;
static _Atomic(spy_dlsym_fn) spy_next;

/* Called by the trampoline below: count the call, return the dlsym to jump to. */
__attribute__((used)) spy_dlsym_fn spy_dlsym_target(void);
spy_dlsym_fn spy_dlsym_target(void) {
  atomic_fetch_add_explicit(&spy_calls, 1, memory_order_relaxed);
  spy_dlsym_fn fn = atomic_load_explicit(&spy_next, memory_order_acquire);
  if (fn) return fn;
  void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
#if defined(__x86_64__)
  if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
#elif defined(__aarch64__)
  if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17");
#endif
  spy_dlsym_fn libc_dlsym;
  memcpy(&libc_dlsym, &p, sizeof p);
  /* Called from here, RTLD_NEXT means "after this library": another overrider, or libc. */
#ifdef DLSYM_SPY_SKIPS_NEXT
  /* the HAMi/nvshare way: straight to libc, skipping any overrider after this one */
  void *next = NULL;
#else
  void *next = libc_dlsym(RTLD_NEXT, "dlsym");
#endif
  if (next) memcpy(&fn, &next, sizeof next);
  else fn = libc_dlsym;
  atomic_store_explicit(&spy_next, fn, memory_order_release);
  return fn;
}

/* dlsym: save the arguments, ask for the target, restore, jump (never call). */
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "  .cfi_startproc\n"
        "  pushq %rdi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  pushq %rsi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  subq $8, %rsp\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  call spy_dlsym_target\n"
        "  addq $8, %rsp\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rsi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rdi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  jmp *%rax\n"
        "  .cfi_endproc\n"
        ".size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, %function\n"
        "dlsym:\n"
        "  stp x29, x30, [sp, #-32]!\n"
        "  mov x29, sp\n"
        "  stp x0, x1, [sp, #16]\n"
        "  bl spy_dlsym_target\n"
        "  mov x16, x0\n"
        "  ldp x0, x1, [sp, #16]\n"
        "  ldp x29, x30, [sp], #32\n"
        "  br x16\n"
        ".size dlsym, .-dlsym\n");
#else
#error "dlsym_spy: x86-64 and aarch64 only"
#endif

__attribute__((visibility("default"))) unsigned long dlsym_spy_calls(void);
unsigned long dlsym_spy_calls(void) { return atomic_load(&spy_calls); }

__attribute__((destructor)) static void spy_report(void) {
  const char *r = getenv("DLSYM_SPY_REPORT");
  if (!r || strcmp(r, "1") != 0) return;
  char line[64];
  int n = snprintf(line, sizeof line, "dlsym_spy: %lu calls\n", atomic_load(&spy_calls));
  if (n > 0) (void)!write(STDERR_FILENO, line, (size_t)n);
}
