// Progress of a long job over N items on stderr (console_write): a redrawn bar when that is a
// terminal, otherwise a plain line at every 10% and at least every `line_interval` while items
// complete. Silent when disabled or when the log level is kError (--quiet). The one progress
// display of the library: ImageBatcher (images), quantize's calibration and min_sqnr search,
// the weakly typed build's calibration.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace trtutils {

class Progress {
 public:
  static constexpr std::chrono::milliseconds kLineInterval{15000};

  // `unit`: what is counted ("images", "batches", "layers").
  Progress(std::string label, int64_t total, bool enabled, std::string unit = "images",
           std::chrono::milliseconds line_interval = kLineInterval);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `done` items so far (non-decreasing); `total` ends the display.
  void update(int64_t done);
  // Ends the display at `done` (a search that stopped before `total`); later calls do nothing.
  void finish(int64_t done);

 private:
  void draw(int64_t done, bool last);
  std::string label_, unit_;
  int64_t total_;
  bool enabled_;
  bool tty_ = false;
  bool open_line_ = false;  // a bar is on screen without its newline
  bool finished_ = false;
  int last_decile_ = 0;
  std::chrono::milliseconds line_interval_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace trtutils
