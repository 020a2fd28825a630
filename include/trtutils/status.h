// Errors. The library reports every failure by throwing trtutils::Error (the only exception
// type that leaves the public API). An Error carries what failed, where (file, node, tensor) and
// what to do, already formatted into what(): the CLI prints what() and exits non-zero.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace trtutils {

enum class ErrorCode {
  kInvalidArgument,  // bad user input: flags, shapes, dtypes, files that do not parse
  kNotSupported,     // valid input that this build cannot handle (unknown op, dtype)
  kIO,               // a file could not be read or written
  kOutOfRange,       // sizes over a limit, offsets outside a buffer
  kInternal,         // a bug in trtutils
  kConfig,           // option combinations that are rejected as such (the Python original's
                     // ValueError: e.g. strongly_typed with precision flags); CLI exit code 2
};

std::string_view error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace trtutils
