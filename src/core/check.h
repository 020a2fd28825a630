// Internal helpers to throw trtutils::Error with a formatted message.
#pragma once

#include <fmt/format.h>

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
#define TRT_INTERNAL_CHECK(cond)                                                                 \
  TRT_CHECK(cond, ::trtutils::ErrorCode::kInternal, "internal error: {} failed at {}:{}", #cond, \
            __FILE__, __LINE__)

namespace trtutils {

// Thread counts (--threads, num_threads): 0 (all cores) up to this; more only exhausts memory
// (65536 OpenMP threads crashed the process).
inline constexpr int kMaxThreads = 1024;
inline void check_thread_count(int n, const char* what = "num_threads") {
  TRT_CHECK_ARG(n >= 0 && n <= kMaxThreads, "{} {} must be in 0..{} (0: all cores)", what, n,
                kMaxThreads);
}

}  // namespace trtutils
