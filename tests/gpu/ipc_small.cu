/* SPDX-License-Identifier: Apache-2.0 */
// Check 2 of scripts/gpu-check.sh (issue 39, item 3): legacy CUDA IPC of a small cudaMalloc block,
// as ONNX Runtime's and TensorRT-LLM's custom all-reduce export their small buffers.
//
// Two 4 KiB blocks are allocated; the second (which a caching allocator cuts from the same
// segment as the first, at an offset) is filled with a pattern and exported with
// cudaIpcGetMemHandle. A child process (this program run again, "child HANDLE") opens the handle
// and compares what it maps with the pattern. Without cudasnap the driver maps the block. Under
// cudasnap the export of a block inside a shared segment must be refused (never a wrong mapping);
// with CUDASNAP_ALLOC_CONF=ipc_small:True it must map the block.
//
// Prints REFUSED (0/1: the export failed), MATCH (1: the child read the block's pattern, 0: other
// bytes, -1: no export), OFFSET (the bytes between the two blocks).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <string>

#include "tests/gpu/gc_common.h"

extern char **environ;

static const size_t kBytes = 4096;

static unsigned char gc_pattern(size_t i) { return static_cast<unsigned char>(i * 13 + 5); }

static int gc_child(const char *hex) {
  cudaIpcMemHandle_t h;
  if (std::strlen(hex) != 2 * sizeof h.reserved) return 2;
  for (size_t i = 0; i < sizeof h.reserved; i++) {
    unsigned v = 0;
    if (std::sscanf(hex + 2 * i, "%2x", &v) != 1) return 2;
    h.reserved[i] = static_cast<char>(v);
  }
  void *p = nullptr;
  GC_CHECK(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
  std::vector<unsigned char> got(kBytes);
  GC_CHECK(cudaMemcpy(got.data(), p, kBytes, cudaMemcpyDeviceToHost));
  GC_CHECK(cudaIpcCloseMemHandle(p));
  for (size_t i = 0; i < kBytes; i++)
    if (got[i] != gc_pattern(i)) return 1;
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && std::strcmp(argv[1], "child") == 0) return gc_child(argv[2]);
  void *a = nullptr, *b = nullptr;
  GC_CHECK(cudaMalloc(&a, kBytes));
  GC_CHECK(cudaMalloc(&b, kBytes));
  std::vector<unsigned char> host(kBytes);
  for (size_t i = 0; i < kBytes; i++) host[i] = gc_pattern(i);
  GC_CHECK(cudaMemset(a, 0, kBytes));
  GC_CHECK(cudaMemcpy(b, host.data(), kBytes, cudaMemcpyHostToDevice));
  GC_CHECK(cudaDeviceSynchronize());
  long long offset = static_cast<long long>(static_cast<char *>(b) - static_cast<char *>(a));
  cudaIpcMemHandle_t h;
  cudaError_t e = cudaIpcGetMemHandle(&h, b);
  int match = -1;
  if (e == cudaSuccess) {
    std::string hex;
    char two[3];
    for (size_t i = 0; i < sizeof h.reserved; i++) {
      std::snprintf(two, sizeof two, "%02x", static_cast<unsigned char>(h.reserved[i]));
      hex += two;
    }
    char child_arg[] = "child";
    char *args[] = {argv[0], child_arg, &hex[0], nullptr};
    pid_t pid = 0;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, args, environ) != 0) gc_fail("posix_spawn failed");
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) > 1) gc_fail("the importing child failed");
    match = WEXITSTATUS(status) == 0 ? 1 : 0;
  } else {
    (void)cudaGetLastError();
  }
  std::printf("REFUSED %d\nMATCH %d\nOFFSET %lld\n", e == cudaSuccess ? 0 : 1, match, offset);
  GC_CHECK(cudaFree(a));
  GC_CHECK(cudaFree(b));
  return 0;
}
