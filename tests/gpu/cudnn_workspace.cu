/* SPDX-License-Identifier: Apache-2.0 */
// Check 3 of scripts/gpu-check.sh: a cuDNN convolution. The program allocates the workspace cuDNN
// asks for at gc_cudnn_workspace_site; cuDNN also allocates on its own inside cudnnCreate and the
// convolution (gc_cudnn_create_site, gc_cudnn_conv_site). The script looks for those sites in the
// snapshot. The output is checked against a host convolution (FMA math: no TF32) and its
// CHECKSUM compared with a run without cudasnap.
#include <cudnn.h>

#include <cmath>

#include "tests/gpu/gc_common.h"

#define GC_DNN(call)                                                                           \
  do {                                                                                         \
    cudnnStatus_t st_ = (call);                                                                \
    if (st_ != CUDNN_STATUS_SUCCESS) {                                                         \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudnnGetErrorString(st_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

__attribute__((noinline)) static cudnnHandle_t gc_cudnn_create_site() {
  cudnnHandle_t h;
  GC_DNN(cudnnCreate(&h));
  return h;
}

__attribute__((noinline)) static void *gc_cudnn_workspace_site(size_t bytes) {
  void *ws = nullptr;
  GC_CHECK(cudaMalloc(&ws, bytes));
  return ws;
}

int main() {
  // N C H W = 2 8 32 32, K = 16 filters of 3x3, padding 1: output 2 16 32 32
  const int N = 2, C = 8, H = 32, W = 32, K = 16, R = 3, S = 3;
  std::vector<float> hx(N * C * H * W), hw(K * C * R * S), hy(N * K * H * W);
  for (size_t i = 0; i < hx.size(); i++) hx[i] = static_cast<float>(gc_pattern(i, 3) % 11) / 8.0f - 0.5f;
  for (size_t i = 0; i < hw.size(); i++) hw[i] = static_cast<float>(gc_pattern(i, 4) % 7) / 8.0f - 0.375f;
  float *x, *w, *y;
  GC_CHECK(cudaMalloc(&x, hx.size() * 4));
  GC_CHECK(cudaMalloc(&w, hw.size() * 4));
  GC_CHECK(cudaMalloc(&y, hy.size() * 4));
  GC_CHECK(cudaMemcpy(x, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
  GC_CHECK(cudaMemcpy(w, hw.data(), hw.size() * 4, cudaMemcpyHostToDevice));

  cudnnHandle_t h = gc_cudnn_create_site();
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  GC_DNN(cudnnCreateTensorDescriptor(&xd));
  GC_DNN(cudnnCreateTensorDescriptor(&yd));
  GC_DNN(cudnnCreateFilterDescriptor(&wd));
  GC_DNN(cudnnCreateConvolutionDescriptor(&cd));
  GC_DNN(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, C, H, W));
  GC_DNN(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, K, H, W));
  GC_DNN(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, C, R, S));
  GC_DNN(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  GC_DNN(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH));
  // a fixed algorithm that uses a workspace, so every run computes the same way
  const cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  size_t ws_bytes = 0;
  GC_DNN(cudnnGetConvolutionForwardWorkspaceSize(h, xd, wd, cd, yd, algo, &ws_bytes));
  const size_t ws_alloc = ws_bytes > 0 ? ws_bytes : 256; // always a workspace block to find
  void *ws = gc_cudnn_workspace_site(ws_alloc);
  const float one = 1.0f, zero = 0.0f;
  GC_DNN(cudnnConvolutionForward(h, &one, xd, x, wd, w, cd, algo, ws, ws_bytes, &zero, yd, y));
  GC_CHECK(cudaDeviceSynchronize());
  GC_CHECK(cudaMemcpy(hy.data(), y, hy.size() * 4, cudaMemcpyDeviceToHost));

  double worst = 0;
  for (int n = 0; n < N; n++)
    for (int k = 0; k < K; k++)
      for (int i = 0; i < H; i++)
        for (int j = 0; j < W; j++) {
          double ref = 0;
          for (int c = 0; c < C; c++)
            for (int r = 0; r < R; r++)
              for (int s = 0; s < S; s++) {
                int ii = i + r - 1, jj = j + s - 1;
                if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
                ref += static_cast<double>(hx[((n * C + c) * H + ii) * W + jj]) * hw[((k * C + c) * R + r) * S + s];
              }
          worst = std::fmax(worst, std::fabs(ref - hy[((n * K + k) * H + i) * W + j]));
        }
  const uint64_t sum = gc_checksum(y, hy.size() * 4);
  GC_CHECK(cudaFree(ws));
  GC_DNN(cudnnDestroyTensorDescriptor(xd));
  GC_DNN(cudnnDestroyTensorDescriptor(yd));
  GC_DNN(cudnnDestroyFilterDescriptor(wd));
  GC_DNN(cudnnDestroyConvolutionDescriptor(cd));
  GC_DNN(cudnnDestroy(h));
  GC_CHECK(cudaFree(x));
  GC_CHECK(cudaFree(w));
  GC_CHECK(cudaFree(y));
  std::printf("CUDNN_VERSION %zu\nWORKSPACE_BYTES %zu\nMAX_ABS_ERROR %.3g\nCHECKSUM %016llx\n", cudnnGetVersion(), ws_bytes,
              worst, static_cast<unsigned long long>(sum));
  if (worst > 1e-3) gc_fail("cuDNN's convolution differs from the host's");
  return 0;
}
