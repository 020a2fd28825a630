#include "trtutils/logging.h"

#include <atomic>
#include <cstdio>
#include <mutex>

#include "trtutils/status.h"

namespace trtutils {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};
std::mutex g_mutex;
}  // namespace

void set_log_level(LogLevel level) {
  g_level = static_cast<int>(level);
}
LogLevel log_level() {
  return static_cast<LogLevel>(g_level.load());
}

void log_message(LogLevel level, std::string_view message) {
  static constexpr const char* kNames[] = {"error", "warning", "info", "verbose"};
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "[trtutils] [%s] %.*s\n", kNames[static_cast<int>(level)],
               static_cast<int>(message.size()), message.data());
}

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNotSupported:
      return "not supported";
    case ErrorCode::kIO:
      return "I/O error";
    case ErrorCode::kOutOfRange:
      return "out of range";
    case ErrorCode::kInternal:
      return "internal error";
    case ErrorCode::kConfig:
      return "invalid configuration";
  }
  return "error";
}

}  // namespace trtutils
