// numpy <-> trtutils::Tensor.
//
// array_to_tensor: a C-contiguous, aligned array of a dtype numpy and trtutils share (bool,
// (u)int8..64, float16/32/64) is wrapped without a copy (the Tensor keeps the array alive and
// must only be read); any other layout is copied into a C-order tensor. TypeError for a dtype
// trtutils has no equivalent of (complex, object, strings, datetimes).
// tensor_to_array: a zero-copy view for the shared dtypes (the array keeps the tensor's buffer
// alive); bfloat16 and the float8 types become float32, int4/uint4 int8/uint8 (copies: numpy
// has no such dtypes).
#pragma once

#include <pybind11/numpy.h>

#include "trtutils/tensor.h"

namespace trtutils::python {

// Needs the GIL (it may touch the array's reference count and its dtype).
Tensor array_to_tensor(const pybind11::array& array);
pybind11::array tensor_to_array(const Tensor& tensor);
// The numpy dtype for a trtutils one (float32 for bfloat16 / float8, int8 for int4, ...).
pybind11::dtype numpy_dtype(DataType dtype);

}  // namespace trtutils::python
