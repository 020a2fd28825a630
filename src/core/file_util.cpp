#include "trtutils/file_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <random>

#include "core/check.h"

namespace trtutils {

namespace {

// Async-signal-safe registry: fixed slots, claimed with an atomic flag, path copied before the
// flag is published.
constexpr int kSlots = 64;
constexpr size_t kPathMax = 4096;
struct TempSlot {
  std::atomic<int> state{0};  // 0 free, 1 claimed (being filled), 2 live
  char path[kPathMax];
};
TempSlot g_slots[kSlots];

void on_interrupt(int sig) {
  for (auto& s : g_slots)
    if (s.state.load(std::memory_order_acquire) == 2) ::unlink(s.path);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install_interrupt_cleanup() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGHUP, &sa, nullptr);
}

int register_temp_file(const std::filesystem::path& path) {
  const std::string p = std::filesystem::absolute(path).string();
  if (p.size() >= kPathMax) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (g_slots[i].state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      std::memcpy(g_slots[i].path, p.c_str(), p.size() + 1);
      g_slots[i].state.store(2, std::memory_order_release);
      return i;
    }
  }
  return -1;
}

void unregister_temp_file(int slot) {
  if (slot >= 0 && slot < kSlots) g_slots[slot].state.store(0, std::memory_order_release);
}

void write_file_atomic(const std::filesystem::path& path, std::string_view data) {
  namespace fs = std::filesystem;
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  TRT_CHECK(fs::is_directory(dir, ec), ErrorCode::kIO,
            "cannot write '{}': folder '{}' does not exist", path.string(), dir.string());
  std::random_device rd;
  const fs::path tmp = dir / fmt::format(".{}.tmp{:08x}", path.filename().string(), rd());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  TRT_CHECK(fd >= 0, ErrorCode::kIO, "cannot write '{}': {}", path.string(), std::strerror(errno));
  struct Registered {
    int slot;
    ~Registered() { unregister_temp_file(slot); }
  } registered{register_temp_file(tmp)};
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      TRT_THROW(ErrorCode::kIO, "cannot write '{}': {}", path.string(), std::strerror(err));
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    TRT_THROW(ErrorCode::kIO, "cannot write '{}': {}", path.string(), std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    TRT_THROW(ErrorCode::kIO, "cannot write '{}': {}", path.string(), std::strerror(err));
  }
}

uint64_t readable_file_size(const std::filesystem::path& path, uint64_t max_bytes) {
  std::error_code ec;
  TRT_CHECK(std::filesystem::is_regular_file(path, ec), ErrorCode::kIO,
            "cannot read '{}': no such file", path.string());
  const auto size = std::filesystem::file_size(path, ec);
  TRT_CHECK(!ec, ErrorCode::kIO, "cannot read '{}': {}", path.string(), ec.message());
  TRT_CHECK(max_bytes == 0 || size <= max_bytes, ErrorCode::kOutOfRange,
            "'{}' is {} bytes, over the limit of {} bytes", path.string(), size, max_bytes);
  return size;
}

std::string read_file(const std::filesystem::path& path, uint64_t max_bytes) {
  const uint64_t size = readable_file_size(path, max_bytes);
  std::ifstream f(path, std::ios::binary);
  TRT_CHECK(f.good(), ErrorCode::kIO, "cannot open '{}'", path.string());
  std::string data(size, '\0');
  f.read(data.data(), static_cast<std::streamsize>(size));
  TRT_CHECK(f.gcount() == static_cast<std::streamsize>(size), ErrorCode::kIO,
            "cannot read '{}': short read", path.string());
  return data;
}

}  // namespace trtutils
