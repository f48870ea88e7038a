/* SPDX-License-Identifier: Apache-2.0 */
/* An example CUDA program to profile: a small "training loop" written against the CUDA runtime
 * API, as an unmodified program would be. Weights live for the whole run; each step allocates
 * activations in forward(), gradients and a workspace in backward(), and frees them in
 * optimizer_step(); the last step's output buffer is left allocated on purpose, so the exit
 * report has a leak to show.
 *
 *   cudasnap run -- build/examples/train_step [steps]
 *
 * It prints a checksum of its work, the same with and without cudasnap. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { LAYERS = 6 };

#define CHECK(call)                                                                               \
  do {                                                                                            \
    cudaError_t err_ = (call);                                                                    \
    if (err_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "train_step: %s failed: %s\n", #call, cudaGetErrorString(err_));            \
      exit(1);                                                                                    \
    }                                                                                             \
  } while (0)

typedef struct model_s {
  void *weights[LAYERS];
  size_t weight_bytes[LAYERS];
} model_t;

static uint64_t checksum = 1469598103934665603u;

static void mix(const void *buf, size_t n) {
  const unsigned char *p = buf;
  for (size_t i = 0; i < n; i++) checksum = (checksum ^ p[i]) * 1099511628211u;
}

/* Fill a device buffer from the host, and fold what comes back into the checksum. */
static void touch(void *dev, size_t bytes, unsigned char seed) {
  unsigned char host[4096];
  size_t n = bytes < sizeof host ? bytes : sizeof host;
  for (size_t i = 0; i < n; i++) host[i] = (unsigned char)(seed + i * 7);
  CHECK(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost));
  mix(host, n);
}

static __attribute__((noinline)) void model_init(model_t *m) {
  for (int l = 0; l < LAYERS; l++) {
    m->weight_bytes[l] = ((size_t)4 << 20) + (size_t)l * 65536;
    CHECK(cudaMalloc(&m->weights[l], m->weight_bytes[l]));
    touch(m->weights[l], m->weight_bytes[l], (unsigned char)l);
  }
}

static __attribute__((noinline)) void forward(void *activations[LAYERS], int step) {
  for (int l = 0; l < LAYERS; l++) {
    CHECK(cudaMalloc(&activations[l], ((size_t)2 << 20) + (size_t)(step % 4) * 4096));
    touch(activations[l], 4096, (unsigned char)(step + l));
  }
}

static __attribute__((noinline)) void backward(const model_t *m, void *grads[LAYERS], void **workspace) {
  CHECK(cudaMalloc(workspace, 256 * 1024));
  for (int l = LAYERS - 1; l >= 0; l--) {
    CHECK(cudaMalloc(&grads[l], m->weight_bytes[l]));
    touch(grads[l], 4096, (unsigned char)(3 * l));
  }
}

static __attribute__((noinline)) void optimizer_step(void *activations[LAYERS], void *grads[LAYERS], void *workspace) {
  for (int l = 0; l < LAYERS; l++) {
    CHECK(cudaFree(activations[l]));
    CHECK(cudaFree(grads[l]));
  }
  CHECK(cudaFree(workspace));
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 20;
  model_t model;
  model_init(&model);
  void *activations[LAYERS], *grads[LAYERS], *workspace = NULL;
  for (int step = 0; step < steps; step++) {
    forward(activations, step);
    backward(&model, grads, &workspace);
    optimizer_step(activations, grads, workspace);
  }
  void *output = NULL; /* never freed: the exit report shows it */
  CHECK(cudaMalloc(&output, 1 << 20));
  touch(output, 4096, 42);
  for (int l = 0; l < LAYERS; l++) CHECK(cudaFree(model.weights[l]));
  printf("train_step: %d steps, checksum=%016llx\n", steps, (unsigned long long)checksum);
  return 0;
}
