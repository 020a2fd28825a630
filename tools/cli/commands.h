// Subcommands of the trtutils CLI. Each add_*_command() registers one subcommand on the app
// with its options; its callback runs the command and throws trtutils::Error on failure.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trtutils/onnx_session.h"
#include "trtutils/tensor.h"

namespace trtutils::cli {

// The whole command line: global flags and every subcommand. Parsing runs the chosen
// subcommand's callback (the command itself); with run_commands = false (tests/fuzz) parsing
// stops, once every flag is checked and the global ones applied, by throwing CLI::Success.
std::unique_ptr<CLI::App> make_app(bool run_commands = true);

void add_run_command(CLI::App& app);
void add_benchmark_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_generate_calibration_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_build_command(CLI::App& app);
void add_build_yolo_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_can_run_on_dla_command(CLI::App& app);
void add_build_dla_command(CLI::App& app);
void add_calib_to_qdq_command(CLI::App& app);
void add_detect_command(CLI::App& app);
void add_classify_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_debug_precision_command(CLI::App& app);

}  // namespace trtutils::cli

namespace trtutils {
class Engine;
namespace cli {
// Shared by run and benchmark: "NAME=FILE.npy" (or "FILE.npy" for a single-input model) specs
// to feeds; one input left out gets seeded random data (floats uniform in [0, 1), integers in
// [0, 10)); its symbolic dims are set to 1.
std::map<std::string, Tensor> make_feeds(const std::vector<ModelTensorInfo>& inputs,
                                         const std::vector<std::string>& specs, uint64_t seed);
// --shapes NAME:DIMS specs applied to the inputs (the shape of a dynamic input's random data);
// Error(kInvalidArgument) for an unknown name, a rank or a static dimension that differs.
std::vector<ModelTensorInfo> with_shapes(std::vector<ModelTensorInfo> inputs,
                                         const std::vector<std::string>& specs);
// Seeded random data for one input (as make_feeds makes it); its symbolic dims are set to 1.
Tensor random_input(const ModelTensorInfo& input, uint64_t seed);
// Refuses (before any work) an output path that is the model or one of the --input files.
void check_output_is_not_an_input(const char* flag, const std::filesystem::path& output,
                                  const std::string& model_flag, const std::string& model,
                                  const std::vector<std::string>& input_specs);
// The inputs of an engine as model tensors; dynamic dims take the profile's opt size.
std::vector<ModelTensorInfo> engine_inputs(const Engine& engine);
// "NAME:d0,d1,..." (or "NAME:d0xd1x...") -> (name, shape); Error(kInvalidArgument) otherwise.
std::pair<std::string, Shape> parse_shape_spec(const std::string& spec, const char* flag);
// "512M", "8G", "1024" (bytes), "64KiB" -> bytes; Error(kInvalidArgument) naming the flag.
uint64_t parse_byte_size(const std::string& text, const char* flag);
// A file name for a tensor name: characters other than [A-Za-z0-9._-] become '_'.
std::string sanitize_file_name(const std::string& name);
}  // namespace cli
}  // namespace trtutils
