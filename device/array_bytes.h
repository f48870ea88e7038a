/* SPDX-License-Identifier: Apache-2.0 */
/* The bytes a CUDA array's descriptor asks for, every mipmap level's: what memory passed through
 * records for cuArrayCreate, cuArray3DCreate and cuMipmappedArrayCreate. The driver pads and tiles
 * arrays, so on a real GPU this is a lower bound. */
#ifndef CS_ARRAY_BYTES_H
#define CS_ARRAY_BYTES_H

#include <stddef.h>

#include "real/cuda_api.h"

/* 0 for a NULL descriptor. */
size_t cs_array_bytes_2d(const CUDA_ARRAY_DESCRIPTOR *d);
size_t cs_array_bytes_3d(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels);

#endif
