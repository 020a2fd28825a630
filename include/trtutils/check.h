// Throwing trtutils::Error (status.h) with a formatted message, for the library and for programs
// built on it (the CLI validates its flags with these):
//
//   TRT_CHECK_ARG(n >= 1, "--iterations must be at least 1, got {}", n);  // kInvalidArgument
//   TRT_CHECK(ok, trtutils::ErrorCode::kConfig, "give either {} or {}", a, b);
//   TRT_THROW(trtutils::ErrorCode::kNotSupported, "dtype {} is not supported", name);
//
// The format strings are fmt's, checked at compile time. The message goes through Error's
// constructor, so its control characters are escaped.
#pragma once

#include <fmt/format.h>

#include <utility>

#include "trtutils/status.h"

namespace trtutils {

template <typename... Args>
[[noreturn]] void throw_error(ErrorCode code, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(code, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace trtutils

// TRT_CHECK(cond, code, "format {}", args...): throws trtutils::Error(code, message) when false.
#define TRT_CHECK(cond, code, ...)                           \
  do {                                                       \
    if (!(cond)) ::trtutils::throw_error(code, __VA_ARGS__); \
  } while (0)
#define TRT_CHECK_ARG(cond, ...) \
  TRT_CHECK(cond, ::trtutils::ErrorCode::kInvalidArgument, __VA_ARGS__)
#define TRT_THROW(code, ...) ::trtutils::throw_error(code, __VA_ARGS__)

namespace trtutils {

// Thread counts (--threads, num_threads of every options struct): 0 (all cores) up to this;
// more only exhausts memory (65536 OpenMP threads crashed the process).
inline constexpr int kMaxThreads = 1024;
// Error(kInvalidArgument) "<what> <n> must be in 0..1024 (0: all cores)" outside that range.
inline void check_thread_count(int n, const char* what = "num_threads") {
  TRT_CHECK_ARG(n >= 0 && n <= kMaxThreads, "{} {} must be in 0..{} (0: all cores)", what, n,
                kMaxThreads);
}

}  // namespace trtutils
