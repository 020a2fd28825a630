// calib_to_qdq: a weakly-typed INT8 calibration cache (TensorRT's text format) + the float ONNX
// model it was made for -> the same model with Q/DQ nodes, for strongly-typed builds (TensorRT
// 11 has no calibrators; strongly-typed DLA builds refuse caches).
//
// The Q/DQ placement and scales are exactly those the builder's weakly-typed INT8 path uses
// (builder.cpp): constants and BatchNorm folded, opset raised to 13 if lower, place_qdq (int8
// defaults), amax = scale * 127 per activation from the cache, scales shared within scale groups,
// apply_qdq. So a strongly-typed build of the result has the layer precisions of the weakly-typed
// build from the same cache. A tensor the cache has no scale for leaves the layers reading it in
// float (a warning names how many).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "precision/calibration_cache.h"
#include "trtutils/quantize.h"

namespace trtutils::precision {

// The result: trtutils::CalibToQdqResult (include/trtutils/quantize.h).
using CalibToQdqResult = ::trtutils::CalibToQdqResult;

// Rewrites `model` in place. Error(kInvalidArgument) if it already has Q/DQ nodes or the cache
// has no scale for any tensor the placement quantizes.
CalibToQdqResult calib_to_qdq(ir::Model& model, const CalibrationCache& cache);

// Loads, converts and saves (onnx_io::save_model, atomic). Nothing is written on error.
// trtutils::calib_to_qdq (the public name).
CalibToQdqResult calib_to_qdq_file(const std::filesystem::path& onnx,
                                   const std::filesystem::path& calibration_cache,
                                   const std::filesystem::path& output);

}  // namespace trtutils::precision
