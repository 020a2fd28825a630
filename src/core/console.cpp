#include "trtutils/console.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <mutex>

namespace trtutils {

namespace {

std::mutex& console_mutex() {
  static std::mutex m;
  return m;
}

std::shared_ptr<const ConsoleSink>& console_sink() {
  static std::shared_ptr<const ConsoleSink> s;
  return s;
}

std::shared_ptr<const ConsoleSink> current_sink() {
  std::lock_guard<std::mutex> lock(console_mutex());
  return console_sink();
}

}  // namespace

void set_console_sink(std::optional<ConsoleSink> sink) {
  std::lock_guard<std::mutex> lock(console_mutex());
  console_sink() =
      sink && sink->write ? std::make_shared<const ConsoleSink>(std::move(*sink)) : nullptr;
}

void console_write(std::string_view text) {
  // The sink is called without the lock held: a sink that takes another lock (Python's GIL)
  // must not wait on a thread that waits for this one.
  if (const auto s = current_sink()) {
    s->write(text);
    return;
  }
  static std::mutex stderr_mutex;
  std::lock_guard<std::mutex> lock(stderr_mutex);
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

bool console_is_terminal() {
  if (const auto s = current_sink()) return s->terminal;
  return ::isatty(::fileno(stderr)) == 1;
}

}  // namespace trtutils
