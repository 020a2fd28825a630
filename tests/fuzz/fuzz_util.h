// Shared by the libFuzzer harnesses (tests/fuzz/*_fuzz.cpp). A harness catches trtutils::Error
// (bad input is refused: that is the contract); anything else that escapes - another exception,
// a sanitizer report, an allocation over -malloc_limit_mb - is a bug libFuzzer reports. Broken
// round-trip invariants abort through fuzz_fail().
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "trtutils/logging.h"

namespace trtutils::fuzz {

inline std::string_view as_view(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void fuzz_fail(const char* what, const char* detail = "") {
  std::fprintf(stderr, "fuzz invariant broken: %s %s\n", what, detail);
  std::abort();
}

// Logs only errors: warnings on every malformed input would drown libFuzzer's output.
inline void quiet_logs() {
  set_log_level(LogLevel::kError);
}

}  // namespace trtutils::fuzz
