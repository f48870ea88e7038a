/* SPDX-License-Identifier: Apache-2.0 */
/* The API's device argument (contract in api/device_arg.h). */
#include "api/device_arg.h"

#include <stdatomic.h>

#include "device/registry.h"

static _Atomic(cs_device_arg_current_fn) cs_device_arg_current;

void cs_device_arg_set_current_fn(cs_device_arg_current_fn fn) {
  atomic_store_explicit(&cs_device_arg_current, fn, memory_order_release);
}

int cs_device_arg_resolve(int device) {
  if (device >= 0) return device < CS_MAX_DEVICES ? device : -1;
  if (device != -1) return -1;
  cs_device_arg_current_fn fn = atomic_load_explicit(&cs_device_arg_current, memory_order_acquire);
  return fn ? fn() : 0;
}
