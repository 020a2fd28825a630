// libFuzzer harness: the trtutils command-line parser (tools/cli: make_app). The input is split at
// '\0' bytes (or at '\n' when it has none) into the arguments after argv[0]. make_app(false)
// stops once the command line is parsed and checked and the global flags are applied: no
// command runs. A parse error's message is made too, as run_cli makes it (its suggestions and
// argument order: tools/cli/parse_messages.h). Those flags set process-wide state (log level,
// memory limit), restored after each input.
#include <string>
#include <vector>

#include "../../tools/cli/commands.h"
#include "../../tools/cli/parse_messages.h"
#include "fuzz_util.h"
#include "trtutils/status.h"
#include "trtutils/tensor.h"

using namespace trtutils;

namespace {
uint64_t g_memory_limit = 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet_logs();
  g_memory_limit = memory_limit();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kMaxArgs = 64;
  const std::string_view input = fuzz::as_view(data, size);
  const char sep = input.find('\0') != std::string_view::npos ? '\0' : '\n';
  std::vector<std::string> args{"trtutils"};
  size_t pos = 0;
  while (pos <= input.size() && args.size() <= kMaxArgs) {
    size_t end = input.find(sep, pos);
    if (end == std::string_view::npos) end = input.size();
    args.emplace_back(input.substr(pos, end - pos));
    pos = end + 1;
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());

  const std::unique_ptr<CLI::App> app = cli::make_app(/*run_commands=*/false);
  try {
    app->parse(static_cast<int>(argv.size()), argv.data());
    fuzz::fuzz_fail("make_app(false) ran past the parse");
  } catch (const CLI::ParseError& e) {  // parse errors, and CLI::Success where a command would run
    (void)cli::parse_error_message(*app, e, static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::Error&) {
  } catch (const Error&) {  // e.g. a bad --max_memory
  }
  fuzz::quiet_logs();
  set_memory_limit(g_memory_limit);
  return 0;
}
