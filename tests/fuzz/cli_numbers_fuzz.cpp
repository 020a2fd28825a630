// libFuzzer harness: the CLI's numeric flags (tools/cli/flag_ranges.h). At start-up every
// option of every subcommand whose type is a number is listed with the range its validator
// declares ("INT in [0 - 1024]"); a numeric option without one fails at once. Each input picks
// one of them (first byte) and a value (the rest, up to 64 bytes), written as `--flag value` or
// `--flag=value` (and repeated where the option takes several values), with dummy values for the
// subcommand's required options. make_app(false) parses and checks the command line without
// running it. The invariant: a value the parser accepts lies in the declared range (so that no
// command ever sees --threads 65536 or --warmup 2000000000), and parsing never misbehaves.
#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "../../tools/cli/commands.h"
#include "fuzz_util.h"
#include "trtutils/status.h"
#include "trtutils/tensor.h"

using namespace trtutils;

namespace {

struct NumericFlag {
  std::string subcommand, flag, type;  // type: INT, UINT or FLOAT
  long double lo = 0, hi = 0;
  int values = 1;  // how many values one occurrence takes
  std::vector<std::string> required;
};

std::vector<NumericFlag> g_flags;
uint64_t g_memory_limit = 0;

std::vector<NumericFlag> list_numeric_flags() {
  static const std::regex range(R"(in \[(-?[0-9.e+-]+) - (-?[0-9.e+-]+)\])");
  std::vector<NumericFlag> flags;
  const auto app = cli::make_app(false);
  for (const CLI::App* sub : app->get_subcommands({})) {
    std::vector<std::string> required;
    for (const CLI::Option* opt : sub->get_options())
      if (opt->get_required()) required.push_back(opt->get_name(false, true));
    for (const CLI::Option* opt : sub->get_options()) {
      const std::string type = opt->get_type_name();
      const bool numeric =
          type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0 || type.rfind("FLOAT", 0) == 0;
      if (!numeric || opt->get_expected_min() == 0) continue;  // flags (-v) count, take no value
      NumericFlag f;
      f.subcommand = sub->get_name();
      f.flag = opt->get_name(false, true);
      f.type = type.substr(0, type.find(':'));
      std::smatch m;
      if (!std::regex_search(type, m, range))
        fuzz::fuzz_fail("numeric option without a range:", (f.subcommand + " " + f.flag).c_str());
      f.lo = std::stold(m[1].str());
      f.hi = std::stold(m[2].str());
      f.values = std::max(1, opt->get_expected_min());
      for (const auto& r : required)
        if (r.rfind(f.flag, 0) != 0) f.required.push_back(r.substr(0, r.find(',')));
      flags.push_back(std::move(f));
    }
  }
  return flags;
}

long double parsed_value(const CLI::Option* opt, const std::string& type) {
  if (type == "FLOAT") return static_cast<long double>(opt->as<double>());
  if (type == "UINT") return static_cast<long double>(opt->as<uint64_t>());
  return static_cast<long double>(opt->as<int64_t>());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet_logs();
  g_memory_limit = memory_limit();
  g_flags = list_numeric_flags();
  if (g_flags.size() < 20) fuzz::fuzz_fail("too few numeric flags found");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const NumericFlag& f = g_flags[data[0] % g_flags.size()];
  const bool joined = data[1] & 1;
  const std::string value(fuzz::as_view(data + 2, std::min<size_t>(size - 2, 64)));
  if (value.find('\0') != std::string::npos) return 0;  // argv cannot hold one
  std::vector<std::string> args{"trtutils", f.subcommand};
  for (const auto& r : f.required) {
    args.push_back(r);
    args.push_back(r == "--input_shape" ? "8" : "x");
    if (r == "--input_shape") args.insert(args.end(), {"8", "3"});
  }
  if (joined) {
    args.push_back(f.flag + "=" + value);
  } else {
    args.push_back(f.flag);
    for (int i = 0; i < f.values; ++i) args.push_back(value);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  const auto app = cli::make_app(false);
  bool accepted = false;
  try {
    app->parse(static_cast<int>(argv.size()), argv.data());
    fuzz::fuzz_fail("make_app(false) ran past the parse");
  } catch (const CLI::Success&) {
    accepted = true;
  } catch (const CLI::Error&) {
  } catch (const Error&) {
  }
  if (accepted) {
    const CLI::Option* opt = app->get_subcommand(f.subcommand)->get_option(f.flag);
    if (opt->count() > 0) {
      long double v = 0;
      try {
        v = parsed_value(opt, f.type);
      } catch (const CLI::Error&) {
        fuzz::fuzz_fail("an accepted value does not convert:", value.c_str());
      }
      if (!(v >= f.lo && v <= f.hi) || std::isnan(static_cast<double>(v)))
        fuzz::fuzz_fail(
            (f.subcommand + " " + f.flag + " accepted a value outside its range:").c_str(),
            value.c_str());
    }
  }
  fuzz::quiet_logs();
  set_memory_limit(g_memory_limit);
  return 0;
}
