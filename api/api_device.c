/* SPDX-License-Identifier: Apache-2.0 */
/* Device -1 of the opt-in API (include/cudasnap.h), the calling thread's current device: the
 * device of its current context, as the driver tells it. Installed into device_arg.c before main,
 * so the API's device argument resolves the same way however the program reaches it; a file of
 * its own so that unit tests of api_stats.c install a fake one instead. */
#include <stdatomic.h>

#include "api/device_arg.h"
#include "process/lifecycle.h"
#include "real/real.h"

/* Asked only once the program has used CUDA (the driver is then loaded); before that, or without
 * a current context, it is device 0, which then holds nothing either. */
static int cs_api_current_device(void) {
  if (!atomic_load_explicit(&cs_lifecycle_active, memory_order_acquire)) return 0;
  PFN_cuCtxGetDevice_v2000 get_device = CS_REAL_FN(cuCtxGetDevice, PFN_cuCtxGetDevice_v2000);
  CUdevice device = 0;
  if (!get_device || get_device(&device) != CUDA_SUCCESS || device < 0) return 0;
  return device;
}

__attribute__((constructor)) static void cs_api_install_current_device(void) {
  cs_device_arg_set_current_fn(cs_api_current_device);
}
