// A main() for the libFuzzer harnesses without libFuzzer: runs LLVMFuzzerTestOneInput once over
// every file named on the command line (a folder: every regular file in it, in name order), as
// `harness -runs=0 corpus/` does. The sanitizer build of the test suite links each harness with
// it (tests/fuzz/replay.cmake) to replay the seed corpora under ASan + UBSan with the library it
// already built; the clang libFuzzer build (scripts/fuzz.sh) is for fuzzing sessions.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

std::vector<std::filesystem::path> inputs_of(const std::filesystem::path& arg) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(arg)) return {arg};
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(arg))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  size_t runs = 0;
  for (int i = 1; i < argc; ++i) {
    for (const auto& path : inputs_of(argv[i])) {
      std::ifstream in(path, std::ios::binary);
      if (!in) {
        std::fprintf(stderr, "cannot read %s\n", path.c_str());
        return 1;
      }
      const std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
      std::fprintf(stderr, "replay %s (%zu bytes)\n", path.c_str(), bytes.size());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++runs;
    }
  }
  std::printf("replayed %zu input(s)\n", runs);
  return runs > 0 ? 0 : 1;
}
