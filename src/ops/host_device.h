// TRT_HOST_DEVICE: inline functions that the CPU kernels and the CUDA kernels share (one rule,
// one implementation: ops/grid_sample.h, ops/roi_align.h).
#pragma once

#if defined(__CUDACC__)
#define TRT_HOST_DEVICE __host__ __device__
#else
#define TRT_HOST_DEVICE
#endif
