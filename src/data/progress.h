// Progress of a long job over N items on stderr: a redrawn bar on a terminal, a plain line at
// every 10% otherwise. Silent when disabled or when the log level is kError (--quiet).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace trtutils::data {

class Progress {
 public:
  Progress(std::string label, int64_t total, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `done` items so far (non-decreasing); the last call should pass `total`.
  void update(int64_t done);

 private:
  void draw(int64_t done, bool last);
  std::string label_;
  int64_t total_;
  bool enabled_;
  bool tty_ = false;
  bool open_line_ = false;  // a bar is on screen without its newline
  int last_decile_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace trtutils::data
