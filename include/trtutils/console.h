// Where trtutils' log lines and progress bars go: stderr by default, or a sink the embedding
// program installs (the Python package routes them to sys.stderr, so that they appear in a
// Jupyter cell and follow Python's redirections).
//
//   trtutils::set_console_sink({.write = [](std::string_view t) { my_log(t); },
//                               .terminal = false});
//
// write() receives whole pieces of text: log lines end in '\n'; a progress bar on a terminal is
// redrawn with '\r' + the line (and ends with '\n'); with terminal = false progress prints a
// plain line at every 10% (and every 15 s) instead. Calls come from any thread, possibly at the
// same time: the sink serialises them itself if it needs to (Python's GIL does).
#pragma once

#include <functional>
#include <optional>
#include <string_view>

namespace trtutils {

struct ConsoleSink {
  std::function<void(std::string_view)> write;
  bool terminal = false;  // redraw progress bars in place ('\r')
};

// nullopt: back to stderr.
void set_console_sink(std::optional<ConsoleSink> sink);
// Writes `text` to the sink or to stderr (flushed).
void console_write(std::string_view text);
// Whether progress may redraw in place: the sink's `terminal`, or whether stderr is a terminal.
bool console_is_terminal();

}  // namespace trtutils
