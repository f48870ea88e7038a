/* SPDX-License-Identifier: Apache-2.0 */
/* The site rule (contract in memviz/site_rule.h). Frames come from our symbolizer (function,
 * source file or module path) and from PyTorch snapshots (the same, with "??" or "" when
 * unknown), so every test here reads names and paths only: no address, no library handle. */
#include "memviz/site_rule.h"

#include "memviz/allocator_frames.h"

#include <string.h>

static bool cs_starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static bool cs_ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* The last path component, for '/' and Windows' '\' (PyTorch snapshots from Windows). */
static const char *cs_basename(const char *path) {
  const char *base = path;
  for (const char *p = path; *p; p++) {
    if (*p == '/' || *p == '\\') base = p + 1;
  }
  return base;
}

/* True when path has a component equal to `component`. */
static bool cs_has_component(const char *path, const char *component) {
  size_t m = strlen(component);
  for (const char *p = path; (p = strstr(p, component)) != NULL; p++) {
    bool starts = p == path || p[-1] == '/' || p[-1] == '\\';
    bool ends = p[m] == '/' || p[m] == '\\' || p[m] == '\0';
    if (starts && ends) return true;
  }
  return false;
}

/* A demangled name may begin with its return type ("void at::native::f<float>(...)",
 * "at::TensorBase at::detail::_empty_generic<long>(...)"): the qualified name then starts after
 * the first space that comes before any '(' or '<'. */
static bool cs_name_starts_with(const char *name, const char *prefix) {
  if (cs_starts_with(name, prefix)) return true;
  size_t head = strcspn(name, " (<");
  return name[head] == ' ' && cs_starts_with(name + head + 1, prefix);
}

/* ------------------------------------------------------------------------------------------------
 * CUDA and cudasnap: never a site
 * ---------------------------------------------------------------------------------------------- */

/* Library files of CUDA's toolkit that allocate on a caller's behalf; the caller is the site. */
static const char *const cs_cuda_libraries[] = {
    "libcuda",     /* libcuda (driver), libcudart, and libcudasnap: ours */
    "libcublas",   "libcudnn", "libcufft", "libcurand", "libcusparse", "libcusolver",
    "libnccl",     "libnvrtc", "libnvJitLink", "libnvidia-",
};

bool cs_frame_is_cuda(const cs_frame_t *f) {
  const char *file = cs_basename(f->filename);
  for (size_t i = 0; i < sizeof cs_cuda_libraries / sizeof *cs_cuda_libraries; i++) {
    if (cs_starts_with(file, cs_cuda_libraries[i])) return true;
  }
  const char *n = f->name;
  /* the runtime's entry points and internals, also when linked statically into the program */
  if (cs_starts_with(n, "cuda") || cs_starts_with(n, "__cudart") || cs_starts_with(n, "cudart::"))
    return true;
  return n[0] == 'c' && n[1] == 'u' && n[2] >= 'A' && n[2] <= 'Z'; /* driver API: cuMemAlloc_v2 */
}

/* ------------------------------------------------------------------------------------------------
 * Native machinery: frames a user did not write and would not recognize as "where"
 * ---------------------------------------------------------------------------------------------- */

typedef enum { CS_BY_LIBRARY, CS_BY_SOURCE, CS_BY_PATH, CS_BY_NAME, CS_BY_EXACT_NAME } cs_match_t;

typedef struct cs_machinery_s {
  cs_match_t by;    /* LIBRARY/SOURCE: basename prefix; PATH: substring; NAME: qualified-name
                       prefix; EXACT_NAME: the whole name */
  const char *text;
} cs_machinery_t;

static const cs_machinery_t cs_machinery[] = {
    /* The C and C++ runtimes: thread and process start, std::function and std::thread glue. */
    {CS_BY_LIBRARY, "libc.so"},       {CS_BY_LIBRARY, "libc-"},       {CS_BY_LIBRARY, "ld-linux"},
    {CS_BY_LIBRARY, "libstdc++"},     {CS_BY_LIBRARY, "libc++"},      {CS_BY_LIBRARY, "libgcc_s"},
    {CS_BY_LIBRARY, "libpthread"},    {CS_BY_PATH, "libstdc++-v3/"},  {CS_BY_NAME, "__libc_"},
    {CS_BY_NAME, "std::"},            {CS_BY_NAME, "__gnu_cxx::"},    {CS_BY_EXACT_NAME, "_start"},
    {CS_BY_EXACT_NAME, "start_thread"}, {CS_BY_EXACT_NAME, "clone"}, {CS_BY_EXACT_NAME, "clone3"},
    {CS_BY_EXACT_NAME, "__clone"},    {CS_BY_EXACT_NAME, "__clone3"},
    {CS_BY_EXACT_NAME, "execute_native_thread_routine"}, /* std::thread's start, in libstdc++ */

    /* The Python interpreter: its evaluation loop and call machinery stand between every two
       Python frames; the Python frames say more. By library (libpython, the python3.X
       executable), by CPython's source tree (conda builds keep /…/python-3.10.14/Objects/…),
       and by name when neither is known (PyTorch's 3.13 stacks name them with "??"). */
    {CS_BY_LIBRARY, "libpython"},     {CS_BY_LIBRARY, "python3"},     {CS_BY_PATH, "/python-3."},
    {CS_BY_PATH, "/Python-3."},       {CS_BY_NAME, "_Py"},            {CS_BY_NAME, "Py_"},
    {CS_BY_NAME, "PyEval_"},          {CS_BY_NAME, "PyObject_"},      {CS_BY_NAME, "PyVectorcall_"},
    {CS_BY_NAME, "PyRun_"},           {CS_BY_NAME, "pymain_"},        {CS_BY_NAME, "pyrun_"},
    {CS_BY_NAME, "run_eval_code_obj"}, {CS_BY_NAME, "run_mod"},       {CS_BY_NAME, "slot_tp_"},
    {CS_BY_NAME, "method_vectorcall"}, {CS_BY_NAME, "cfunction_"},    {CS_BY_NAME, "do_call_core"},
    {CS_BY_NAME, "partial_vectorcall"}, {CS_BY_NAME, "vectorcall_"},  {CS_BY_NAME, "builtin_"},

    /* PyTorch: how a snapshot is taken (its own unwinder), the caching allocator, and the
       dispatcher that routes an operator to its kernel (generated Register*.cpp wrappers,
       autograd's VariableType and ADInplaceOrView layers, boxing, TensorIterator's output
       allocation, empty/resize helpers), the Python bindings (the Python frame above says
       more), and the autograd engine's loop. What is left is the operator's kernel
       (at::native::mm_out_cuda, a backward node's apply): what a native-only stack can say. */
    {CS_BY_NAME, "torch::unwind::"},  {CS_BY_NAME, "torch::CapturedTraceback"},
    {CS_BY_SOURCE, "memory_snapshot.cpp"}, {CS_BY_NAME, "torch::cuda::(anonymous namespace)::gather"},
    {CS_BY_NAME, "c10::cuda::CUDACachingAllocator::"}, {CS_BY_SOURCE, "CUDACachingAllocator.cpp"},
    {CS_BY_NAME, "c10::CachingDeviceAllocator"}, {CS_BY_NAME, "c10::impl::"},
    {CS_BY_NAME, "c10::Dispatcher"},  {CS_BY_NAME, "c10::OperatorHandle"},
    {CS_BY_NAME, "c10::BoxedKernel"}, {CS_BY_NAME, "c10::KernelFunction"},
    {CS_BY_NAME, "c10::TensorImpl"},  {CS_BY_NAME, "c10::StorageImpl"}, {CS_BY_SOURCE, "TensorImpl.cpp"},
    {CS_BY_NAME, "at::_ops::"},       {CS_BY_NAME, "at::detail::"},   {CS_BY_NAME, "at::empty"},
    {CS_BY_NAME, "at::native::empty"}, {CS_BY_NAME, "at::meta::"}, /* structured ops' shape checks
                                                                       and output allocation */
    {CS_BY_NAME, "at::TensorIteratorBase::"}, {CS_BY_NAME, "at::TensorIterator::"},
    {CS_BY_NAME, "at::native::resize"}, {CS_BY_NAME, "at::native::_resize"},
    {CS_BY_NAME, "at::(anonymous namespace)::"}, {CS_BY_SOURCE, "Register"},
    {CS_BY_NAME, "at::Tensor::"},     {CS_BY_NAME, "at::TensorBase::"},
    {CS_BY_NAME, "torch::autograd::VariableType::"}, {CS_BY_SOURCE, "VariableType_"},
    {CS_BY_NAME, "torch::ADInplaceOrView::"}, {CS_BY_SOURCE, "ADInplaceOrViewType"},
    {CS_BY_NAME, "torch::autograd::THP"}, {CS_BY_SOURCE, "python_"},
    {CS_BY_NAME, "torch::autograd::Engine::"}, {CS_BY_NAME, "torch::autograd::python::PythonEngine::"}, {CS_BY_NAME, "torch::autograd::Node::"},
    {CS_BY_NAME, "torch::autograd::call_function"}, {CS_BY_NAME, "torch::autograd::evaluate_function"},
    {CS_BY_NAME, "torch::autograd::validate_outputs"}, {CS_BY_NAME, "torch::autograd::InputBuffer"},
    {CS_BY_SOURCE, "input_buffer.cpp"}, {CS_BY_SOURCE, "autograd_not_implemented_fallback.cpp"},
};

static bool cs_native_is_machinery(const cs_frame_t *f) {
  const char *base = cs_basename(f->filename);
  for (size_t i = 0; i < sizeof cs_machinery / sizeof *cs_machinery; i++) {
    const cs_machinery_t *m = &cs_machinery[i];
    switch (m->by) {
    case CS_BY_LIBRARY:
    case CS_BY_SOURCE:
      if (cs_starts_with(base, m->text)) return true;
      break;
    case CS_BY_PATH:
      if (strstr(f->filename, m->text) != NULL) return true;
      break;
    case CS_BY_NAME:
      if (cs_name_starts_with(f->name, m->text)) return true;
      break;
    case CS_BY_EXACT_NAME:
      if (strcmp(f->name, m->text) == 0) return true;
      break;
    }
  }
  return false;
}

/* ------------------------------------------------------------------------------------------------
 * Python frames
 * ---------------------------------------------------------------------------------------------- */

bool cs_frame_is_python(const cs_frame_t *f) {
  const char *file = f->filename;
  return cs_ends_with(file, ".py") || cs_ends_with(file, ".pyw") || (file[0] == '<' && cs_ends_with(file, ">"));
}

/* Code the interpreter made up: <frozen runpy>, <string> (exec, python -c), <built-in>. The
 * interactive prompt (<stdin>) and IPython's cells (<ipython-input-…>) are the user typing. */
static bool cs_python_is_synthetic(const char *file) {
  return file[0] == '<' && strcmp(file, "<stdin>") != 0 && !cs_starts_with(file, "<ipython-input-");
}

/* The standard library: a "pythonX.Y" (or "python3") directory right under lib or lib64
 * (/usr/lib/python3.11/json/…, conda's …/lib/python3.10/asyncio/…), or Windows' "Lib" folder. */
static bool cs_python_is_stdlib(const char *file) {
  for (const char *p = file; (p = strstr(p, "python")) != NULL; p++) {
    const char *after = p + strlen("python");
    if (!(after[0] >= '0' && after[0] <= '9') || !(p > file && (p[-1] == '/' || p[-1] == '\\'))) continue;
    size_t len = strcspn(after, "/\\");
    if (after[len] == '\0') continue;
    const char *parent = p - 1;
    while (parent > file && parent[-1] != '/' && parent[-1] != '\\') parent--;
    size_t plen = (size_t)(p - 1 - parent);
    if ((plen == 3 && strncmp(parent, "lib", 3) == 0) || (plen == 5 && strncmp(parent, "lib64", 5) == 0))
      return true;
  }
  return strchr(file, '\\') != NULL && cs_has_component(file, "Lib");
}

static bool cs_python_is_user(const char *file) {
  if (cs_python_is_synthetic(file)) return false;
  if (cs_has_component(file, "site-packages") || cs_has_component(file, "dist-packages")) return false;
  return !cs_python_is_stdlib(file);
}

/* ------------------------------------------------------------------------------------------------
 * The rule
 * ---------------------------------------------------------------------------------------------- */

cs_frame_kind_t cs_frame_kind_in(const cs_site_rule_t *rule, const cs_frame_t *f) {
  /* first: the user's allocator is often the user's own code (a Python helper, a C++ pool) */
  if (rule != NULL && rule->is_allocator != NULL ? rule->is_allocator(rule->ctx, f) : cs_allocator_frame(f))
    return CS_FRAME_ALLOCATOR;
  if (cs_frame_is_python(f)) return cs_python_is_user(f->filename) ? CS_FRAME_USER_PYTHON : CS_FRAME_MACHINERY;
  if (cs_frame_is_cuda(f)) return CS_FRAME_CUDA;
  return cs_native_is_machinery(f) ? CS_FRAME_MACHINERY : CS_FRAME_USER_NATIVE;
}

cs_frame_kind_t cs_frame_kind(const cs_frame_t *f) { return cs_frame_kind_in(NULL, f); }

size_t cs_site_index(size_t n, cs_frame_at_fn at, void *ctx) { return cs_site_index_in(NULL, n, at, ctx); }

size_t cs_site_index_in(const cs_site_rule_t *rule, size_t n, cs_frame_at_fn at, void *ctx) {
  size_t native = n, outside_cuda = n;
  for (size_t i = 0; i < n; i++) {
    cs_frame_t f = at(ctx, i);
    switch (cs_frame_kind_in(rule, &f)) {
    case CS_FRAME_USER_PYTHON:
      return i; /* Python user frames win */
    case CS_FRAME_USER_NATIVE:
      if (native == n) native = i;
      break;
    case CS_FRAME_MACHINERY:
      if (outside_cuda == n) outside_cuda = i;
      break;
    case CS_FRAME_CUDA:
    case CS_FRAME_ALLOCATOR:
      break;
    }
  }
  if (native < n) return native;
  if (outside_cuda < n) return outside_cuda;
  return n > 0 ? n - 1 : 0;
}
