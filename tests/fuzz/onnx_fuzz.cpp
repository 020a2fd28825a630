// libFuzzer harness: ONNX loading. The input is written to a private temp folder (in /dev/shm when
// there is one) as model.onnx and loaded with load_model (file reading, protobuf, IR conversion,
// Constant folding, external data, graph checks). An input holding kSidecarMarker is split
// there: what follows it becomes model.onnx.data, the file external-data initializers name (the
// seeds do, see make_corpus.sh). The same model bytes also go through tensor_from_proto_bytes.
// A model that loads must serialize, load again, and serialize to the same bytes.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fuzz_util.h"
#include "onnx/onnx_io.h"
#include "trtutils/status.h"

using namespace trtutils;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSidecarMarker = "\n==trtutils-fuzz-sidecar==\n";

fs::path g_dir;

void write_all(const fs::path& p, std::string_view bytes) {
  FILE* f = std::fopen(p.c_str(), "wb");
  if (!f) fuzz::fuzz_fail("cannot write", p.c_str());
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size())
    fuzz::fuzz_fail("short write to", p.c_str());
  std::fclose(f);
}

void remove_temp_dir() {
  std::error_code ec;
  fs::remove_all(g_dir, ec);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet_logs();
  // In memory when possible: writing the files each run costs 20x the loading on a disk.
  std::error_code ec;
  const fs::path base =
      fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
  std::string tmpl = (base / "trtutils_onnx_fuzz_XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) fuzz::fuzz_fail("mkdtemp failed");
  g_dir = tmpl;
  std::atexit(remove_temp_dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_view(data, size);
  const size_t cut = input.find(kSidecarMarker);
  const std::string_view model = input.substr(0, cut);
  const fs::path model_path = g_dir / "model.onnx";
  const fs::path data_path = g_dir / "model.onnx.data";
  write_all(model_path, model);
  std::error_code ec;
  if (cut != std::string_view::npos) {
    write_all(data_path, input.substr(cut + kSidecarMarker.size()));
  } else {
    fs::remove(data_path, ec);
  }

  try {
    onnx_io::tensor_from_proto_bytes(model);
  } catch (const Error&) {
  }

  const onnx_io::LoadOptions options{.max_bytes = uint64_t{64} << 20};
  ir::Model m;
  try {
    m = onnx_io::load_model(model_path, options);
  } catch (const Error&) {
    return 0;
  }
  std::string first, second;
  try {
    first = onnx_io::serialize_model(m);
    const ir::Model again = onnx_io::load_model_from_bytes(first, "", options);
    second = onnx_io::serialize_model(again);
  } catch (const Error& e) {
    fuzz::fuzz_fail("a model that loads does not survive save + load:", e.what());
  }
  if (first != second) fuzz::fuzz_fail("save(load(save(m))) differs from save(m)");
  return 0;
}
