#include "trtutils/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
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

namespace {
// Why `path` cannot be read as a file, or "" when it is a regular file.
std::string not_a_regular_file(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return errno == ENOENT || errno == ENOTDIR ? "not found" : std::strerror(errno);
  if (S_ISREG(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return "it is a directory, not a file";
  if (S_ISFIFO(st.st_mode)) return "it is a FIFO (named pipe), not a regular file";
  if (S_ISCHR(st.st_mode)) return "it is a character device, not a regular file";
  if (S_ISBLK(st.st_mode)) return "it is a block device, not a regular file";
  if (S_ISSOCK(st.st_mode)) return "it is a socket, not a regular file";
  return "it is not a regular file";
}
}  // namespace

void require_regular_file(const std::filesystem::path& path, std::string_view what) {
  const std::string why = not_a_regular_file(path);
  TRT_CHECK(why.empty(), ErrorCode::kIO, "cannot read {} '{}': {}", what, path.string(), why);
}

int open_regular_file(const std::filesystem::path& path, std::string_view what) {
  require_regular_file(path, what);
  // O_NONBLOCK: a FIFO put in the file's place after the check does not block the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  TRT_CHECK(fd >= 0, ErrorCode::kIO, "cannot read {} '{}': {}", what, path.string(),
            std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    TRT_THROW(ErrorCode::kIO, "cannot read {} '{}': it is not a regular file", what, path.string());
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

void check_output_is_not_input(std::string_view output_flag, const std::filesystem::path& output,
                               std::initializer_list<NamedPath> inputs) {
  namespace fs = std::filesystem;
  if (output.empty()) return;
  std::error_code ec;
  const fs::path out = fs::weakly_canonical(fs::absolute(output, ec), ec);
  for (const auto& in : inputs) {
    if (in.path.empty()) continue;
    bool same =
        fs::exists(output, ec) && fs::exists(in.path, ec) && fs::equivalent(output, in.path, ec);
    if (!same) {
      std::error_code ec2;
      const fs::path p = fs::weakly_canonical(fs::absolute(in.path, ec2), ec2);
      same = !ec2 && p == out;
    }
    TRT_CHECK_ARG(!same,
                  "{} '{}' is the same file as {} '{}': writing it would replace the input; "
                  "choose another output path",
                  output_flag, output.string(), in.flag, in.path.string());
  }
}

uint64_t readable_file_size(const std::filesystem::path& path, uint64_t max_bytes,
                            std::string_view what) {
  require_regular_file(path, what);
  std::error_code ec;
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
