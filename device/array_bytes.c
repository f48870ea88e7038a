/* SPDX-License-Identifier: Apache-2.0 */
/* The bytes of a CUDA array (contract in device/array_bytes.h). */
#include "device/array_bytes.h"

static size_t cs_array_format_bytes(CUarray_format format) {
  switch (format) {
  case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return 1;
  case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: return 2;
  default: return 4;
  }
}

static size_t cs_array_extent(size_t n, unsigned level) {
  size_t d = (n ? n : 1) >> level;
  return d ? d : 1;
}

/* All levels: each dimension halves per level, down to 1. */
static size_t cs_array_bytes(size_t width, size_t height, size_t depth, CUarray_format format, unsigned channels,
                             unsigned levels) {
  size_t total = 0;
  for (unsigned l = 0; l < levels && l < 64; l++)
    total += cs_array_extent(width, l) * cs_array_extent(height, l) * cs_array_extent(depth, l) * channels *
             cs_array_format_bytes(format);
  return total;
}

size_t cs_array_bytes_2d(const CUDA_ARRAY_DESCRIPTOR *d) {
  return d ? cs_array_bytes(d->Width, d->Height, 1, d->Format, d->NumChannels, 1) : 0;
}

size_t cs_array_bytes_3d(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels) {
  return d ? cs_array_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels, levels) : 0;
}
