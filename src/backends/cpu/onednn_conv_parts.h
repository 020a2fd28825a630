// What the oneDNN float convolution paths share (onednn_nn.cpp: convolutions, matmuls;
// onednn_pointwise_depthwise.cpp: the fused expansion + depthwise pair): plain memory
// descriptors, the activation post-ops, the weight samples that validate cached entries and
// per-thread buffers.
#pragma once

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "backends/cpu/nn_kernels.h"
#include "backends/cpu/onednn_common.h"

namespace trtutils::cpu::nn::parts {

constexpr dnnl::memory::data_type kF32 = dnnl::memory::data_type::f32;

// Per-thread growable buffers, one per id (reused across calls so large temporaries are not
// re-faulted each time).
enum ThreadBufferId { kSrcBuffer = 0, kDstBuffer = 1, kScratchBuffer = 2, kNumThreadBuffers = 3 };
void* thread_buffer(int id, size_t bytes);

// Dense C-order strides and the float32 descriptor with them.
dnnl::memory::dims plain_strides(const dnnl::memory::dims& dims);
dnnl::memory::desc plain_md(const dnnl::memory::dims& dims);
// A memory object over a caller's buffer (not owned).
dnnl::memory user_mem(const dnnl::memory::desc& md, const void* p);
// Throws dnnl::error (unimplemented) when oneDNN picked one of its reference implementations.
void require_optimized(const dnnl::primitive_desc_base& pd);
// The eltwise post-op for `post`'s activation (none for kNone).
void append_activation(dnnl::post_ops& ops, const ConvPostOps& post);
// Values of `t` at up to 32 evenly spaced positions (bit patterns, so NaN compares equal).
std::vector<uint32_t> sample_of(const Tensor& t);

}  // namespace trtutils::cpu::nn::parts
