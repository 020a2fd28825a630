#include "data/progress.h"

#include <fmt/format.h>

#include "trtutils/console.h"
#include "trtutils/logging.h"

namespace trtutils::data {

Progress::Progress(std::string label, int64_t total, bool enabled)
    : label_(std::move(label)),
      total_(total),
      enabled_(enabled && total > 0 && log_level() != LogLevel::kError),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  tty_ = enabled_ && console_is_terminal();
}

Progress::~Progress() {
  if (open_line_) console_write("\n");
}

void Progress::update(int64_t done) {
  if (!enabled_) return;
  const bool last = done >= total_;
  const auto now = std::chrono::steady_clock::now();
  if (tty_) {
    if (last || now - last_draw_ >= std::chrono::milliseconds(100)) draw(done, last);
    return;
  }
  const int decile = static_cast<int>(done * 10 / total_);
  if (decile > last_decile_) {
    last_decile_ = decile;
    draw(done, last);
  }
}

void Progress::draw(int64_t done, bool last) {
  last_draw_ = std::chrono::steady_clock::now();
  const double secs = std::chrono::duration<double>(last_draw_ - start_).count();
  const double rate = secs > 0 ? static_cast<double>(done) / secs : 0.0;
  if (tty_) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(done * kWidth / total_);
    const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
    std::string line =
        fmt::format("\r{} [{}] {}/{} images, {:.0f} img/s", label_, bar, done, total_, rate);
    if (!last && rate > 0)
      line += fmt::format(", {:.0f} s left ", static_cast<double>(total_ - done) / rate);
    if (last) line += fmt::format(", {:.1f} s          \n", secs);
    console_write(line);
    open_line_ = !last;
    return;
  }
  console_write(fmt::format("[trtutils] {}: {}/{} images ({}%), {:.0f} img/s\n", label_, done,
                            total_, done * 100 / total_, rate));
}

}  // namespace trtutils::data
