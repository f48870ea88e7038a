/* SPDX-License-Identifier: Apache-2.0 */
/* Error codes of cudasnap's own layers.
 *
 * Functions return int: 0 on success, a negative cs_err_t on failure (libunwind's convention).
 * Where a function forwards a backend failure it returns the backend's own status as a positive
 * number (see allocator/backend.h), so the exact driver status can reach the program unchanged. */
#ifndef CS_ERROR_H
#define CS_ERROR_H

typedef enum cs_err_e {
  CS_OK = 0,
  CS_ENOMEM = 1,   /* device memory exhausted, even after releasing the cache */
  CS_EINVAL = 2,   /* bad argument, or a pointer this allocator does not own */
  CS_EAGAIN = 3,   /* not yet: an event has not completed */
  CS_EHOSTMEM = 4, /* host memory for cudasnap's own metadata could not be had */
} cs_err_t;

static inline const char *cs_strerror(int err) {
  switch (err < 0 ? -err : err) {
  case CS_OK: return "success";
  case CS_ENOMEM: return "out of device memory";
  case CS_EINVAL: return "invalid argument";
  case CS_EAGAIN: return "not ready";
  case CS_EHOSTMEM: return "out of host memory";
  default: return "backend error";
  }
}

#endif
