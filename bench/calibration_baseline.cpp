// The straightforward way to make calibration data, for bench/calibration_bench.sh: one thread,
// decode + resize each file in turn (the same decoders and resize as generate_calibration),
// the whole array in memory, one npy_save at the end.
//
//   calibration_baseline DIR H W OUT.npy     (float32, NCHW, letterbox, scale (0, 1))
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "data/codecs.h"
#include "data/preprocess.h"
#include "trtutils/npy.h"
#include "trtutils/status.h"

int main(int argc, char** argv) {
  using namespace trtutils;
  namespace fs = std::filesystem;
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s DIR H W OUT.npy\n", argv[0]);
    return 2;
  }
  try {
    ImageBatcherOptions o;
    o.shape = {std::stoll(argv[2]), std::stoll(argv[3]), 3};
    const data::RenderSpec spec = data::make_render_spec(o);
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(argv[1])) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t n = static_cast<int64_t>(files.size());
    Tensor all(DataType::kFloat32, {n, 3, o.shape[0], o.shape[1]});
    const auto t_loop = std::chrono::steady_clock::now();
    const int64_t per_image = 3 * o.shape[0] * o.shape[1];
    for (int64_t i = 0; i < n; ++i) {
      const data::Image img = data::convert_channels(data::load_image(files[i]), 3);
      data::render_image(img, spec, all.data<float>() + i * per_image);
    }
    const auto t1 = std::chrono::steady_clock::now();
    npy_save(argv[4], all);
    const auto t2 = std::chrono::steady_clock::now();
    const double decode = std::chrono::duration<double>(t1 - t_loop).count();
    const double total = std::chrono::duration<double>(t2 - t0).count();
    std::printf(
        "baseline: %lld images, decode+resize loop %.2f s (%.1f images/s); with the allocation "
        "and the .npy write %.2f s (%.1f images/s)\n",
        static_cast<long long>(n), decode, n / decode, total, n / total);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
