// Subcommands of the trtutils CLI. Each add_*_command() registers one subcommand on the app
// with its options; its callback runs the command and throws trtutils::Error on failure.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "trtutils/tensor.h"

namespace trtutils::cli {

void add_run_command(CLI::App& app);
void add_benchmark_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_generate_calibration_command(CLI::App& app);
void add_quantize_command(CLI::App& app);

}  // namespace trtutils::cli

namespace trtutils {
class Session;
namespace cli {
// Shared by run and benchmark: "NAME=FILE.npy" (or "FILE.npy" for a single-input model) specs
// to feeds; one input left out gets seeded random data (floats uniform in [0, 1), integers in
// [0, 10)); its symbolic dims are set to 1.
std::map<std::string, Tensor> make_feeds(const Session& session,
                                         const std::vector<std::string>& specs, uint64_t seed);
// A file name for a tensor name: characters other than [A-Za-z0-9._-] become '_'.
std::string sanitize_file_name(const std::string& name);
}  // namespace cli
}  // namespace trtutils
