/* SPDX-License-Identifier: Apache-2.0 */
/* Compiler helpers shared by every layer. */
#ifndef CS_COMPILER_H
#define CS_COMPILER_H

#define CS_LIKELY(x) __builtin_expect(!!(x), 1)
#define CS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CS_NOINLINE __attribute__((noinline))
#define CS_COLD __attribute__((cold, noinline))
#define CS_NORETURN __attribute__((noreturn))
#define CS_UNUSED __attribute__((unused))
#define CS_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
/* Only hooks and cudasnap_* leave libcudasnap.so; everything else is hidden by default. */
#define CS_EXPORT __attribute__((visibility("default")))
/* Initial-exec TLS never calls __tls_get_addr, so reading it cannot allocate. */
#define CS_TLS __thread __attribute__((tls_model("initial-exec")))

#define CS_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
