// cuDNN descriptor helpers shared by the convolution ops (cudnn_conv.cpp, ops_conv_transpose.cpp).
#pragma once

#include <vector>

#include "backends/cuda/cuda_ops.h"

namespace trtutils::cuda {

// dims in logical order [N, C, spatial...]; strides of NCHW, or of NHWC when channels_last.
void cudnn_set_tensor(cudnnTensorDescriptor_t d, cudnnDataType_t t, const std::vector<int>& dims,
                      bool channels_last);
// v as a cuDNN dimension: Error(kNotSupported) naming the node when it does not fit an int.
int cudnn_dim(const ir::Node& node, int64_t v);

}  // namespace trtutils::cuda
