// Helpers shared by the quantize tests.
#pragma once

#include <string>

#include "trtutils/quantize.h"
#include "trtutils/status.h"

namespace trtutils::quantize_testing {

// The message quantize_onnx(o) fails with, or "" when it succeeds.
inline std::string quantize_error(const QuantizeOptions& o) {
  try {
    quantize_onnx(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace trtutils::quantize_testing
