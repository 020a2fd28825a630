// Numeric flags: every one is added with its range, checked by the parser before any work (a
// value outside it is one error line naming the flag, exit code 2) and shown in --help
// ("INT in [0 - 1024]"). FlagRanges (tests/cli/hostile_input_test.cpp) fails for a numeric flag
// without one; tests/fuzz/cli_numbers_fuzz.cpp checks that no value outside it gets through.
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "trtutils/check.h"

namespace trtutils::cli {

// The limits shared by several subcommands.
inline constexpr int kMaxThreads = trtutils::kMaxThreads;  // --threads (0: all cores)
inline constexpr int64_t kMaxBatch = 1 << 16;              // --batch_size and the like
inline constexpr int kMaxIterations = 1'000'000;           // benchmark --iterations
inline constexpr int kMaxWarmup = 100'000;                 // benchmark --warmup_iterations

// The range check of every numeric flag: CLI::Range's description ("INT in [0 - 1024]", which
// --help shows), but NaN is refused (CLI::Range lets it through: it compares false both ways,
// found by cli_numbers_fuzz), and so is a sign on an unsigned flag (CLI11 reads "-5" into a
// uint64 as 2^64 - 5).
template <typename T>
CLI::Validator in_range(T lo, T hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        if (std::is_unsigned_v<T> && s.find_first_of("+-") != std::string::npos)
          return "a sign is not allowed here: " + s;
        T v{};
        if (!CLI::detail::lexical_cast(s, v) || !(v >= lo && v <= hi))
          return fmt::format("Value {} not in range {} to {}", s, lo, hi);
        return "";
      },
      CLI::Range(lo, hi).get_description());
}

// sub->add_option(name, value, help) with in_range(lo, hi) on it (on each element for a
// vector) and its default shown.
template <typename T, typename L>
CLI::Option* add_ranged(CLI::App* sub, const std::string& name, T& value, const std::string& help,
                        L lo, L hi) {
  return sub->add_option(name, value, help)->check(in_range(lo, hi))->capture_default_str();
}

// --seed: any unsigned 64-bit value.
inline CLI::Option* add_seed_flag(CLI::App* sub, uint64_t& value) {
  return add_ranged(sub, "--seed", value, "seed of the random input data", uint64_t{0},
                    std::numeric_limits<uint64_t>::max());
}

// --threads, the same in every subcommand.
inline CLI::Option* add_threads_flag(CLI::App* sub, int& value, const std::string& help) {
  return add_ranged(sub, "--threads", value, help + " (0: all cores)", 0, kMaxThreads);
}

// build_dla / can_run_on_dla: --max_chunks (a DLA core holds at most 16 loadables) and
// --min_layers.
inline void add_dla_chunk_flags(CLI::App* sub, int& max_chunks, int& min_layers,
                                const std::string& chunks_help, const std::string& layers_help) {
  add_ranged(sub, "--max_chunks", max_chunks, chunks_help, 1, 16);
  add_ranged(sub, "--min_layers", min_layers, layers_help, 1, 1 << 20);
}

}  // namespace trtutils::cli
