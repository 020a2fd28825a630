// Flags shared by compare and debug_precision: tolerances (--atol, --rtol, --check_error_stat,
// --error_quantile) and the inputs both sides run on (--input, --input_dir, --seed, --shapes).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trtutils/compare.h"
#include "trtutils/onnx_session.h"
#include "trtutils/tensor.h"

namespace trtutils::cli {

struct ToleranceFlags {
  std::vector<std::string> atol, rtol;  // VALUE (the default) or NAME:VALUE
  std::string check_error_stat = "elemwise";
  double error_quantile = 0.99;
};
void add_tolerance_flags(CLI::App* sub, ToleranceFlags& f);
// Error(kInvalidArgument) naming the flag for a value that is not a number >= 0.
compare::CompareOptions resolve_tolerance_flags(const ToleranceFlags& f);

struct InputFlags {
  std::vector<std::string> inputs;  // NAME=FILE.npy, or FILE.npy for a single input
  std::string input_dir;            // <input name>.npy files
  uint64_t seed = 0;
  std::vector<std::string> shapes;  // NAME:1x3x224x224, for the random data of dynamic inputs
};
void add_input_flags(CLI::App* sub, InputFlags& f);
// One tensor per input: from --input, else from --input_dir, else seeded random data (uniform
// in [0, 1) for floats; input i gets seed + i) of its static shape or its --shapes entry.
std::map<std::string, Tensor> make_compare_feeds(const std::vector<ModelTensorInfo>& inputs,
                                                 const InputFlags& f);

}  // namespace trtutils::cli
