// trtutils calib_to_qdq --onnx MODEL --calibration_cache CACHE --output MODEL_qdq.onnx
// A weakly-typed INT8 calibration cache -> a Q/DQ ONNX for strongly-typed builds
// (include/trtutils/quantize.h).
#include <fmt/format.h>

#include "commands.h"
#include "trtutils/quantize.h"

namespace trtutils::cli {

void add_calib_to_qdq_command(CLI::App& app) {
  struct Flags {
    std::string onnx, cache, output;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "calib_to_qdq", "Turn an INT8 calibration cache into a Q/DQ ONNX (for strong typing)");
  sub->add_option("--onnx", f->onnx, "the float ONNX model the cache was made for")->required();
  sub->add_option("--calibration_cache", f->cache, "TensorRT INT8 calibration cache")->required();
  sub->add_option("--output", f->output, "Q/DQ ONNX model to write")->required();
  sub->callback([f] {
    const auto r = calib_to_qdq(f->onnx, f->cache, f->output);
    fmt::print(
        "wrote {}: {} Q/DQ pair(s), {} quantized weight(s), {} INT8 layer(s){}\n", f->output,
        r.qdq_pairs, r.quantized_weights, r.quantized_layers,
        r.missing.empty() ? "" : fmt::format("; {} tensor(s) had no scale", r.missing.size()));
  });
}

}  // namespace trtutils::cli
