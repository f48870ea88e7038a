/* SPDX-License-Identifier: Apache-2.0 */
/* The site rule (memviz/site_rule.h) on frames as our symbolizer and PyTorch's snapshots write
 * them: which frame of a stack names the site, and how each kind of frame is classed. The frames
 * are copied from the real PyTorch snapshots in tests/data/traces and from our own stacks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "memviz/allocator_frames.h"
#include "memviz/site_rule.h"

#define F(n, f) ((cs_frame_t){.name = (n), .filename = (f), .line = 0})

static cs_frame_t at_array(void *ctx, size_t i) { return ((const cs_frame_t *)ctx)[i]; }

static size_t site_of(cs_frame_t *frames, size_t n) { return cs_site_index(n, at_array, frames); }

static bool never(void *ctx, const cs_frame_t *f) {
  (void)ctx;
  (void)f;
  return false;
}

static void kind_is(cs_frame_kind_t want, const char *name, const char *file) {
  cs_frame_t f = F(name, file);
  if (cs_frame_kind(&f) != want) fail_msg("%s (%s): kind %d, want %d", name, file, (int)cs_frame_kind(&f), (int)want);
}

static void test_python_frames(void **state) {
  (void)state;
  kind_is(CS_FRAME_USER_PYTHON, "step", "/home/u/assignment1/cs336_basics/optimizers.py");
  kind_is(CS_FRAME_USER_PYTHON, "forward", "D:\\Dev\\a2\\cs336-basics\\cs336_basics\\model.py");
  kind_is(CS_FRAME_USER_PYTHON, "<module>", "/tmp/ipykernel_114/3105878423.py");
  kind_is(CS_FRAME_USER_PYTHON, "<module>", "<stdin>");
  kind_is(CS_FRAME_USER_PYTHON, "f", "/home/u/lib/mylib.py"); /* a "lib" folder of one's own */
  /* installed packages, Linux, Debian and Windows venvs */
  kind_is(CS_FRAME_MACHINERY, "_call_impl", "/venv/lib/python3.13/site-packages/torch/nn/modules/module.py");
  kind_is(CS_FRAME_MACHINERY, "f", "/usr/lib/python3/dist-packages/numba/cuda/api.py");
  kind_is(CS_FRAME_MACHINERY, "einsum", "D:\\Dev\\a2\\.venv\\Lib\\site-packages\\torch\\functional.py");
  /* the standard library */
  kind_is(CS_FRAME_MACHINERY, "run", "/root/miniconda3/envs/py3.10/lib/python3.10/asyncio/base_events.py");
  kind_is(CS_FRAME_MACHINERY, "__init__", "/usr/lib/python3.11/ctypes/__init__.py");
  kind_is(CS_FRAME_MACHINERY, "run", "C:\\Python311\\Lib\\asyncio\\runners.py");
  /* synthetic */
  kind_is(CS_FRAME_MACHINERY, "_run_code", "<frozen runpy>");
  kind_is(CS_FRAME_MACHINERY, "<module>", "<string>");
}

static void test_native_frames(void **state) {
  (void)state;
  kind_is(CS_FRAME_CUDA, "cudaMalloc", "/usr/local/cuda/lib64/libcudart.so.13");
  kind_is(CS_FRAME_CUDA, "cuMemAlloc_v2", "??");
  kind_is(CS_FRAME_CUDA, "cublasCreate_v2", "/usr/lib/libcublas.so.13");
  kind_is(CS_FRAME_CUDA, "cs_interpose_malloc", "/opt/cudasnap/lib/libcudasnap.so");
  kind_is(CS_FRAME_MACHINERY, "torch::unwind::unwind()", "??");
  kind_is(CS_FRAME_MACHINERY,
          "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long)",
          "CUDACachingAllocator.cpp");
  kind_is(CS_FRAME_MACHINERY, "at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>)", "");
  kind_is(CS_FRAME_MACHINERY, "at::(anonymous namespace)::wrapper_CUDA_bmm(at::Tensor const&)", "RegisterCUDA.cpp");
  kind_is(CS_FRAME_MACHINERY, "_PyEval_EvalFrameDefault", "??");
  kind_is(CS_FRAME_MACHINERY, "method_vectorcall.llvm.12275804309777372242", "??");
  kind_is(CS_FRAME_MACHINERY, "cfunction_call", "/usr/local/src/conda/python-3.10.14/Objects/methodobject.c");
  kind_is(CS_FRAME_MACHINERY, "__libc_start_main", "??");
  kind_is(CS_FRAME_MACHINERY, "execute_native_thread_routine", "thread48.o");
  kind_is(CS_FRAME_USER_NATIVE, "torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor>&&)", "??");
  kind_is(CS_FRAME_USER_NATIVE, "allocate_weights", "/src/app/train.c");
  kind_is(CS_FRAME_USER_NATIVE, "main", "/src/app/train.c");
  kind_is(CS_FRAME_USER_NATIVE, "python_helper", "/src/app/helper.c"); /* lowercase "python": a user's */
}

/* A PyTorch stacks="all" stack (abridged): the Python caller wins over every native frame. */
static void test_python_caller_wins(void **state) {
  (void)state;
  cs_frame_t s[] = {
      F("torch::unwind::unwind()", "??"),
      F("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)", ""),
      F("at::native::index_select_cuda(at::Tensor const&, long, at::Tensor const&)", "??"), /* a native user frame */
      F("torch::autograd::THPVariable_getitem(_object*, _object*)", "??"),
      F("embedding", "/venv/lib/python3.10/site-packages/torch/nn/functional.py"),
      F("_PyEval_EvalFrameDefault", "??"),
      F("forward", "/home/u/cs336_basics/transformer.py"),
      F("_PyEval_EvalFrameDefault", "??"),
      F("main", "/home/u/cs336_systems/benchmark.py"),
  };
  assert_int_equal(site_of(s, sizeof s / sizeof *s), 6);
}

/* No Python: the first native user frame past the framework's machinery (autograd's thread). */
static void test_native_only(void **state) {
  (void)state;
  cs_frame_t s[] = {
      F("torch::unwind::unwind()", "??"),
      F("at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)", "??"),
      F("void at::meta::common_checks_baddbmm_bmm<at::meta::structured_bmm>(at::meta::structured_bmm&)", ""),
      F("at::_ops::bmm::call(at::Tensor const&, at::Tensor const&)", "??"),
      F("torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor>&&)", "??"),
      F("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", "??"),
      F("start_thread", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
  };
  assert_int_equal(site_of(s, sizeof s / sizeof *s), 4);
}

/* Only machinery: the first frame outside CUDA's libraries; only CUDA: the outermost frame. */
static void test_fallbacks(void **state) {
  (void)state;
  cs_frame_t machinery[] = {
      F("cudaMalloc", "/usr/lib/libcudart.so.13"),
      F("_PyEval_EvalFrameDefault", "??"),
      F("_run_code", "<frozen runpy>"),
  };
  assert_int_equal(site_of(machinery, 3), 1);
  cs_frame_t cuda[] = {F("cuMemAlloc_v2", "??"), F("cudaMalloc", "libcudart.so.13")};
  assert_int_equal(site_of(cuda, 2), 1);
  assert_int_equal(site_of(NULL, 0), 0);
}

/* Frames the program names part of its allocator are never the site: the first frame outside
 * them is, Python or native; a C++ name matches with or without its parameters. Last: the
 * process's list only grows. */
static void test_allocator_frames(void **state) {
  (void)state;
  cs_frame_t python[] = {
      F("cuMemAlloc_v2", "/usr/lib/libcuda.so.1"),
      F("ffi_call", "/usr/lib/x86_64-linux-gnu/libffi.so.8"),
      F("cuda_alloc", "/home/u/finetune_sim.py"),
      F("load_model", "/home/u/finetune_sim.py"),
      F("<module>", "/home/u/finetune_sim.py"),
  };
  cs_frame_t pool[] = {
      F("cudaMalloc", "/usr/lib/libcudart.so.13"),
      F("mem::DevicePool<float>::grow(unsigned long)", "/src/pool.hpp"),
      F("mem::DevicePool<float>::allocate(unsigned long)", "/src/pool.hpp"),
      F("build_index(int)", "/src/index.cpp"),
      F("main", "/src/main.cpp"),
  };
  cs_frame_t all_allocator[] = {F("cudaMalloc", "libcudart.so.13"), F("cuda_alloc", "/home/u/a.py")};
  assert_int_equal(site_of(python, 5), 2);
  assert_int_equal(site_of(pool, 5), 1);
  const char *why = NULL;
  assert_int_equal(cs_allocator_frames_add("cuda_alloc", strlen("cuda_alloc"), &why), 0);
  char list_why[128];
  assert_int_equal(cs_allocator_frames_add_list("mem::DevicePool<*>::grow, mem::DevicePool<float>::allocate", list_why,
                                                sizeof list_why), 0);
  assert_int_equal(cs_allocator_frames_count(), 3);
  assert_string_equal(cs_allocator_frames_text(1), "mem::DevicePool<*>::grow");
  assert_int_equal(site_of(python, 5), 3);
  assert_int_equal(site_of(pool, 5), 3);
  assert_int_equal(site_of(all_allocator, 2), 1); /* nothing else: the outermost */
  cs_frame_t f = F("cuda_alloc", "/home/u/a.py");
  assert_int_equal(cs_frame_kind(&f), CS_FRAME_ALLOCATOR);
  /* the same again is no new entry; a bad one is refused, and the list stays */
  assert_int_equal(cs_allocator_frames_add("cuda_alloc", strlen("cuda_alloc"), &why), 0);
  assert_int_equal(cs_allocator_frames_add_list("ok_one,[bad", list_why, sizeof list_why), -1);
  assert_string_equal(list_why, "`[bad` has a [ that is not closed");
  assert_int_equal(cs_allocator_frames_count(), 3);
  /* a rule of the caller's own replaces the process's list (the tool: a file's list too) */
  cs_site_rule_t none = {.is_allocator = never, .ctx = NULL};
  assert_int_equal(cs_site_index_in(&none, 5, at_array, python), 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_python_frames),   cmocka_unit_test(test_native_frames),
      cmocka_unit_test(test_python_caller_wins), cmocka_unit_test(test_native_only),
      cmocka_unit_test(test_fallbacks), cmocka_unit_test(test_allocator_frames),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
