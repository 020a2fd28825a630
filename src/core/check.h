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
