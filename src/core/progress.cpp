#include "core/progress.h"

#include <fmt/format.h>

#include <algorithm>

#include "trtutils/console.h"
#include "trtutils/logging.h"

namespace trtutils {

namespace {

// Items per second with the digits that matter (1234, 12.3, 0.45).
std::string rate_str(double rate) {
  const int digits = rate >= 100 ? 0 : (rate >= 1 ? 1 : 2);
  return fmt::format("{:.{}f}", rate, digits);
}

}  // namespace

Progress::Progress(std::string label, int64_t total, bool enabled, std::string unit,
                   std::chrono::milliseconds line_interval)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      enabled_(enabled && total > 0 && log_level() != LogLevel::kError),
      line_interval_(line_interval),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  tty_ = enabled_ && console_is_terminal();
}

Progress::~Progress() {
  if (open_line_) console_write("\n");
}

void Progress::update(int64_t done) {
  if (!enabled_ || finished_) return;
  if (done >= total_) {
    finish(done);
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (tty_) {
    if (now - last_draw_ >= std::chrono::milliseconds(100)) draw(done, false);
    return;
  }
  const int decile = static_cast<int>(done * 10 / total_);
  if (decile > last_decile_ || now - last_draw_ >= line_interval_) {
    last_decile_ = std::max(last_decile_, decile);
    draw(done, false);
  }
}

void Progress::finish(int64_t done) {
  if (!enabled_ || finished_) return;
  finished_ = true;
  draw(done, true);
}

void Progress::draw(int64_t done, bool last) {
  last_draw_ = std::chrono::steady_clock::now();
  const double secs = std::chrono::duration<double>(last_draw_ - start_).count();
  const double rate = secs > 0 ? static_cast<double>(done) / secs : 0.0;
  const int64_t shown = std::min(done, total_);
  std::string tail = fmt::format("{} {}/s", rate_str(rate), unit_);
  if (!last && rate > 0)
    tail += fmt::format(", {:.0f} s left", static_cast<double>(total_ - done) / rate);
  if (last) tail += fmt::format(", done in {:.1f} s", secs);
  if (tty_) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(shown * kWidth / total_);
    const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
    // Trailing spaces cover the end of a longer earlier line.
    console_write(fmt::format("\r{} [{}] {}/{} {}, {}{}", label_, bar, done, total_, unit_, tail,
                              last ? "\n" : "      "));
    open_line_ = !last;
    return;
  }
  console_write(fmt::format("[trtutils] {}: {}/{} {} ({}%), {}\n", label_, done, total_, unit_,
                            shown * 100 / total_, tail));
}

}  // namespace trtutils
