// compare --layerwise: both sides run once more with every layer output marked, and the tensors
// they both expose are compared in A's topological order. Names match when equal, and a Q/DQ
// side's "<T>_dequantized" matches "<T>" (the quantizer keeps the float tensor names for the
// float values and names the fake-quantized copy after them). Only float tensors (fp64, fp32,
// fp16, bf16) are layer values here: int8 / fp8 ones are quantized codes and shape tensors are
// integers.
#pragma once

#include <map>
#include <string>

#include "compare_report.h"
#include "compare_side.h"

namespace trtutils::cli {

LayerwiseResult compare_layers(const CompareSide& a, const CompareSide& b,
                               const std::map<std::string, Tensor>& feeds,
                               const compare::CompareOptions& options);

}  // namespace trtutils::cli
