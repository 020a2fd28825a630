// Logging with a global verbosity. Messages go to stderr as "[trtutils] [level] text".
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace trtutils {

enum class LogLevel { kError = 0, kWarning = 1, kInfo = 2, kVerbose = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();
void log_message(LogLevel level, std::string_view message);

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> f, Args&&... args) {
  if (static_cast<int>(level) <= static_cast<int>(log_level()))
    log_message(level, fmt::format(f, std::forward<Args>(args)...));
}
#define TRT_LOG_ERROR(...) ::trtutils::log(::trtutils::LogLevel::kError, __VA_ARGS__)
#define TRT_LOG_WARN(...) ::trtutils::log(::trtutils::LogLevel::kWarning, __VA_ARGS__)
#define TRT_LOG_INFO(...) ::trtutils::log(::trtutils::LogLevel::kInfo, __VA_ARGS__)
#define TRT_LOG_VERBOSE(...) ::trtutils::log(::trtutils::LogLevel::kVerbose, __VA_ARGS__)

}  // namespace trtutils
