/* SPDX-License-Identifier: Apache-2.0 */
// Check 3 of scripts/gpu-check.sh: cuBLAS's own device allocations (its workspace and internal
// buffers, made through the cudart that libcublas embeds) reach cudasnap's cache and show their
// call site. The script looks in the snapshot for a block whose stack has both a libcublas frame
// and one of the gc_cublas_* functions below (noinline, built with -g, so each is a named frame).
// The product is checked against the host (FP32 math: no TF32 unless asked for) and its
// CHECKSUM compared with a run without cudasnap.
#include <cublas_v2.h>

#include <cmath>

#include "tests/gpu/gc_common.h"

#define GC_BLAS(call)                                                                    \
  do {                                                                                   \
    cublasStatus_t st_ = (call);                                                         \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                  \
      std::fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call, (int)st_); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

__attribute__((noinline)) static cublasHandle_t gc_cublas_create_site() {
  cublasHandle_t h;
  GC_BLAS(cublasCreate(&h));
  return h;
}

__attribute__((noinline)) static void gc_cublas_gemm_site(cublasHandle_t h, int n, const float *a, const float *b, float *c) {
  const float one = 1.0f, zero = 0.0f;
  GC_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
}

int main() {
  const int n = 256;
  std::vector<float> ha(n * n), hb(n * n), hc(n * n);
  for (int i = 0; i < n * n; i++) {
    ha[i] = static_cast<float>(gc_pattern(i, 1) % 17) / 8.0f - 1.0f;
    hb[i] = static_cast<float>(gc_pattern(i, 2) % 13) / 8.0f - 0.75f;
  }
  float *a, *b, *c;
  GC_CHECK(cudaMalloc(&a, n * n * sizeof(float)));
  GC_CHECK(cudaMalloc(&b, n * n * sizeof(float)));
  GC_CHECK(cudaMalloc(&c, n * n * sizeof(float)));
  GC_CHECK(cudaMemcpy(a, ha.data(), n * n * sizeof(float), cudaMemcpyHostToDevice));
  GC_CHECK(cudaMemcpy(b, hb.data(), n * n * sizeof(float), cudaMemcpyHostToDevice));
  const int64_t before = gc_stat("allocation.all.allocated");
  cublasHandle_t h = gc_cublas_create_site();
  gc_cublas_gemm_site(h, n, a, b, c);
  GC_CHECK(cudaDeviceSynchronize());
  const int64_t during = gc_stat("allocation.all.allocated");
  GC_CHECK(cudaMemcpy(hc.data(), c, n * n * sizeof(float), cudaMemcpyDeviceToHost));
  double worst = 0;
  for (int col = 0; col < n; col++)
    for (int row = 0; row < n; row++) {
      double ref = 0;
      for (int k = 0; k < n; k++) ref += static_cast<double>(ha[k * n + row]) * hb[col * n + k];
      worst = std::fmax(worst, std::fabs(ref - hc[col * n + row]));
    }
  const uint64_t sum = gc_checksum(c, n * n * sizeof(float));
  // destroyed, so the trace holds the workspace's allocation and its free, as a real program's would
  GC_BLAS(cublasDestroy(h));
  GC_CHECK(cudaFree(a));
  GC_CHECK(cudaFree(b));
  GC_CHECK(cudaFree(c));
  std::printf("MAX_ABS_ERROR %.3g\nCUBLAS_ALLOCS %lld\nCHECKSUM %016llx\n", worst,
              before < 0 ? -1ll : static_cast<long long>(during - before), static_cast<unsigned long long>(sum));
  if (worst > 1e-3) gc_fail("cublasSgemm's product differs from the host's");
  return 0;
}
