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
  const std::string line = escape_control_characters(message);
  std::fprintf(stderr, "[trtutils] [%s] %s\n", kNames[static_cast<int>(level)], line.c_str());
}

std::string escape_control_characters(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) {
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
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
