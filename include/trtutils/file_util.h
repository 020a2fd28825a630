// Atomic file writes: data goes to a temporary file in the target's folder, is flushed, and is
// renamed over the target, so a crash never leaves a half-written output.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace trtutils {

// Throws Error(kIO) naming the path on failure; no temporary file is left behind.
void write_file_atomic(const std::filesystem::path& path, std::string_view data);
// Reads a whole file; Error(kIO) naming the path if it cannot. max_bytes = 0: no limit.
std::string read_file(const std::filesystem::path& path, uint64_t max_bytes = 0);

}  // namespace trtutils
