// Atomic file writes: data goes to a temporary file in the target's folder, is flushed, and is
// renamed over the target, so a crash never leaves a half-written output.
#pragma once

#include <filesystem>
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

// Reads a whole file; Error(kIO) naming the path if it cannot. max_bytes = 0: no limit.
std::string read_file(const std::filesystem::path& path, uint64_t max_bytes = 0);
// The size of a regular file that read_file would accept (the same errors), without reading it.
uint64_t readable_file_size(const std::filesystem::path& path, uint64_t max_bytes = 0);

}  // namespace trtutils
