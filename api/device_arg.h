/* SPDX-License-Identifier: Apache-2.0 */
/* The device argument of the opt-in API (include/cudasnap.h): an ordinal, or -1 for the calling
 * thread's current device, which a function installed before main tells (api_device.c asks the
 * driver; unit tests install a fake one). Until one is installed the current device is 0. */
#ifndef CS_DEVICE_ARG_H
#define CS_DEVICE_ARG_H

/* An ordinal stays (-1 past the devices cudasnap tracks), -1 becomes the calling thread's current
 * device. Returns -1 for anything else. */
int cs_device_arg_resolve(int device);

typedef int (*cs_device_arg_current_fn)(void);
void cs_device_arg_set_current_fn(cs_device_arg_current_fn fn);

#endif
