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

// `text` with every control character (and DEL) written as a C escape ("\n", "\t", "\x00"),
// so that a message stays one printable line whatever the file, node or tensor names in it hold
// (a model may name a tensor "a\nerror: b"; a file name may hold a newline).
std::string escape_control_characters(std::string_view text);
// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF): names that reach JSON (engine files, reports) must be.
bool is_valid_utf8(std::string_view text);

class Error : public std::runtime_error {
 public:
  // The message is stored with its control characters escaped (escape_control_characters).
  Error(ErrorCode code, const std::string& message)
      : std::runtime_error(escape_control_characters(message)), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace trtutils
