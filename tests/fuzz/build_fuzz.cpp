// libFuzzer harness: model validation at `build`. The input is an ONNX model, written to a private
// temp folder (in /dev/shm when there is one) and built into a CPU engine as `trtutils build
// --backend cpu --optimization_level 0` builds it (loading, graph checks, passes, strict shape
// inference, kernel checks, the engine read back). The invariant is the one `build` promises:
// a model it accepts makes an engine that loads, and whose context is created, without an error
// (once, `run` refused such engines as "invalid engine file"). Running the engine may still fail
// on data-dependent values, but only with a trtutils::Error that is not internal; it runs when
// its inputs are small. The memory limit is 256 MiB, so that a model asking for more is refused,
// not a reason for an out-of-memory report.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fuzz_util.h"
#include "trtutils/builder.h"
#include "trtutils/engine.h"
#include "trtutils/status.h"
#include "trtutils/tensor.h"

using namespace trtutils;
namespace fs = std::filesystem;

namespace {

fs::path g_dir;

void remove_temp_dir() {
  std::error_code ec;
  fs::remove_all(g_dir, ec);
}

// Inputs of the engine at their planned shapes (dynamic dims: 1), zero-filled; empty when the
// inputs are too large to run quickly or have no fixed shape.
std::map<std::string, Tensor> small_feeds(const Engine& engine) {
  std::map<std::string, Tensor> feeds;
  int64_t total = 0;
  for (const auto& in : engine.inputs()) {
    Shape s;
    for (int64_t d : in.shape) s.push_back(d < 0 ? 1 : d);
    if (dtype_bits(in.dtype) <= 0 || in.dtype == DataType::kString) return {};
    int64_t n = 1;
    for (int64_t d : s) {
      if (d > (1 << 16)) return {};
      n *= d;
      if (n > (1 << 16)) return {};
    }
    total += n;
    if (total > (1 << 16)) return {};
    feeds.emplace(in.name, Tensor(in.dtype, s));
  }
  return feeds;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet_logs();
  set_memory_limit(uint64_t{256} << 20);
  std::error_code ec;
  const fs::path base =
      fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
  std::string tmpl = (base / "trtutils_build_fuzz_XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) fuzz::fuzz_fail("mkdtemp failed");
  g_dir = tmpl;
  std::atexit(remove_temp_dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path model = g_dir / "model.onnx", engine_path = g_dir / "model.engine";
  {
    FILE* f = std::fopen(model.c_str(), "wb");
    if (!f) fuzz::fuzz_fail("cannot write", model.c_str());
    if (size && std::fwrite(data, 1, size, f) != size) fuzz::fuzz_fail("short write");
    std::fclose(f);
  }
  std::error_code ec;
  fs::remove(engine_path, ec);
  builder::BuildConfig config;
  config.backend = "cpu";
  config.optimization_level = 0;  // no tactic timing: the graph checks are what is fuzzed
  config.num_threads = 1;
  try {
    (void)builder::build_engine(model, engine_path, config);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kInternal) fuzz::fuzz_fail("build: internal error:", e.what());
    return 0;  // refused at build time: the contract
  }
  std::shared_ptr<Engine> engine;
  std::unique_ptr<ExecutionContext> ctx;
  try {
    engine = Engine::load(engine_path, {.backend = "cpu"});
    ctx = engine->create_execution_context({.num_threads = 1});
  } catch (const Error& e) {
    fuzz::fuzz_fail("build accepted a model whose engine does not load:", e.what());
  }
  const auto feeds = small_feeds(*engine);
  if (feeds.empty() && !engine->inputs().empty()) return 0;
  try {
    (void)ctx->execute(feeds);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kInternal) fuzz::fuzz_fail("run: internal error:", e.what());
  }
  return 0;
}
