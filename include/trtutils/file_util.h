// Atomic file writes: data goes to a temporary file in the target's folder, is flushed, and is
// renamed over the target, so a crash never leaves a half-written output.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

namespace trtutils {

// Throws Error(kIO) naming the path on failure; no temporary file is left behind.
void write_file_atomic(const std::filesystem::path& path, std::string_view data);
// Temporary files being written (by write_file_atomic and streaming writers) are registered
// so that an interrupt removes them: after install_interrupt_cleanup(), SIGINT / SIGTERM
// unlink every registered temporary file, then end the process as the signal would (a killed
// build, quantize or generate_calibration leaves neither its output nor a temporary behind).
// At most 64 files are tracked at once; registration beyond that still works, unprotected.
void install_interrupt_cleanup();
int register_temp_file(const std::filesystem::path& path);  // returns a slot for unregister
void unregister_temp_file(int slot);

// Every file a command reads goes through these. A path that is not a regular file is refused
// before it is opened, saying what it is ("is a directory", "is a FIFO (named pipe)", "is a
// character device", "does not exist"): opening a FIFO would block, /dev/zero never ends.
// Error(kIO); `what` names the file's role in the message ("ONNX model", "engine file", ...).
void require_regular_file(const std::filesystem::path& path, std::string_view what = "file");
// Opens a regular file for reading (O_RDONLY | O_CLOEXEC, never blocking on a FIFO swapped in
// after the check) and returns its descriptor; the caller closes it. Same errors as above.
int open_regular_file(const std::filesystem::path& path, std::string_view what = "file");

// An output that resolves to one of the command's inputs (the same file through another
// spelling, a link or a hard link) would replace the input: Error(kInvalidArgument) before any
// work. Each input is (flag, path), e.g. {"--onnx", "m.onnx"}; empty paths are skipped.
struct NamedPath {
  std::string_view flag;
  std::filesystem::path path;
};
void check_output_is_not_input(std::string_view output_flag, const std::filesystem::path& output,
                               std::initializer_list<NamedPath> inputs);

// Reads a whole file; Error(kIO) naming the path if it cannot. max_bytes = 0: no limit.
std::string read_file(const std::filesystem::path& path, uint64_t max_bytes = 0);
// The size of a regular file that read_file would accept (the same errors), without reading it.
// `what` names the file's role in the message, as for require_regular_file.
uint64_t readable_file_size(const std::filesystem::path& path, uint64_t max_bytes = 0,
                            std::string_view what = "file");

}  // namespace trtutils
