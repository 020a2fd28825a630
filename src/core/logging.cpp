#include "trtutils/logging.h"

#include <atomic>
#include <cstdint>
#include <string>

#include "trtutils/console.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};
}  // namespace

void set_log_level(LogLevel level) {
  g_level = static_cast<int>(level);
}
LogLevel log_level() {
  return static_cast<LogLevel>(g_level.load());
}

void log_message(LogLevel level, std::string_view message) {
  static constexpr const char* kNames[] = {"error", "warning", "info", "verbose"};
  const std::string line = escape_control_characters(message);
  console_write(std::string("[trtutils] [") + kNames[static_cast<int>(level)] + "] " + line + "\n");
}

bool is_valid_utf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = p[i];
    size_t len = 0;
    uint32_t cp = 0, min = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      len = 2, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3, cp = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
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
