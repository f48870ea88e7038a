/* SPDX-License-Identifier: Apache-2.0 */
/* SipHash-1-3, keyed per model (contract in model/hash.h). Written from the algorithm's description
 * (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012). */
#include "model/hash.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t cs_rotl(uint64_t x, unsigned b) {
  return (x << b) | (x >> (64 - b));
}

typedef struct cs_sip_s {
  uint64_t v0, v1, v2, v3;
} cs_sip_t;

static inline void cs_sip_round(cs_sip_t *s) {
  s->v0 += s->v1;
  s->v1 = cs_rotl(s->v1, 13);
  s->v1 ^= s->v0;
  s->v0 = cs_rotl(s->v0, 32);
  s->v2 += s->v3;
  s->v3 = cs_rotl(s->v3, 16);
  s->v3 ^= s->v2;
  s->v0 += s->v3;
  s->v3 = cs_rotl(s->v3, 21);
  s->v3 ^= s->v0;
  s->v2 += s->v1;
  s->v1 = cs_rotl(s->v1, 17);
  s->v1 ^= s->v2;
  s->v2 = cs_rotl(s->v2, 32);
}

static inline cs_sip_t cs_sip_init(const cs_hash_key_t *key) {
  return (cs_sip_t){key->k0 ^ 0x736f6d6570736575ULL, key->k1 ^ 0x646f72616e646f6dULL,
                    key->k0 ^ 0x6c7967656e657261ULL, key->k1 ^ 0x7465646279746573ULL};
}

static inline void cs_sip_compress(cs_sip_t *s, uint64_t m) {
  s->v3 ^= m;
  cs_sip_round(s);
  s->v0 ^= m;
}

static inline uint64_t cs_sip_finish(cs_sip_t *s, uint64_t last) {
  cs_sip_compress(s, last);
  s->v2 ^= 0xff;
  cs_sip_round(s);
  cs_sip_round(s);
  cs_sip_round(s);
  return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

static inline uint64_t cs_le64(const unsigned char *p) {
  uint64_t w = 0;
  for (unsigned i = 0; i < 8; i++) w |= (uint64_t)p[i] << (8 * i);
  return w;
}

uint64_t cs_hash_bytes(const cs_hash_key_t *key, const void *p, size_t n) {
  const unsigned char *s = p;
  cs_sip_t st = cs_sip_init(key);
  size_t left = n;
  for (; left >= 8; left -= 8, s += 8) cs_sip_compress(&st, cs_le64(s));
  uint64_t last = (uint64_t)n << 56;
  for (size_t i = 0; i < left; i++) last |= (uint64_t)s[i] << (8 * i);
  return cs_sip_finish(&st, last);
}

uint64_t cs_hash_words(const cs_hash_key_t *key, const uint64_t *w, size_t n) {
  cs_sip_t st = cs_sip_init(key);
  for (size_t i = 0; i < n; i++) cs_sip_compress(&st, w[i]);
  return cs_sip_finish(&st, (uint64_t)(n * 8) << 56);
}

/* Fills buf from /dev/urandom; false when it cannot. */
static bool cs_hash_urandom(void *buf, size_t n) {
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char *)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  return got == n;
}

void cs_hash_key_random(cs_hash_key_t *key) {
  uint64_t k[2];
  ssize_t r;
  do {
    r = getrandom(k, sizeof k, 0);
  } while (r < 0 && errno == EINTR);
  if (r != (ssize_t)sizeof k && !cs_hash_urandom(k, sizeof k)) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    k[0] = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 48;
    k[1] = (uint64_t)(uintptr_t)key ^ (uint64_t)(uintptr_t)&ts << 7;
  }
  key->k0 = k[0];
  key->k1 = k[1];
}
