// permute_channels (copy_util.h): a tensor's channel axis moved first <-> last, per image a
// C x S <-> S x C transpose in square tiles, for any element of 1, 2, 4 or 8 bytes.
#include <algorithm>

#include "backends/cpu/copy_util.h"
#include "core/check.h"

namespace trtutils::cpu {

namespace {

template <typename T>
void transpose_images(const T* src, T* dst, int64_t images, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 32;
  const int64_t rt = (rows + kTile - 1) / kTile, ct = (cols + kTile - 1) / kTile;
#pragma omp parallel for collapse(2) schedule(static) if (images * rows * cols > (1 << 15))
  for (int64_t b = 0; b < images; ++b)
    for (int64_t t = 0; t < rt * ct; ++t) {
      const int64_t r0 = (t / ct) * kTile, c0 = (t % ct) * kTile;
      const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      const T* s = src + b * rows * cols;
      T* d = dst + b * rows * cols;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) d[c * rows + r] = s[r * cols + c];
    }
}

}  // namespace

Tensor permute_channels(const Tensor& t, bool to_last) {
  const Shape& s = t.shape();
  const int64_t n = s[0];
  const int64_t c = to_last ? s[1] : s.back();
  int64_t sp = 1;
  Shape out{n};
  if (to_last) {
    for (size_t i = 2; i < s.size(); ++i) sp *= s[i], out.push_back(s[i]);
    out.push_back(c);
  } else {
    out.push_back(c);
    for (size_t i = 1; i + 1 < s.size(); ++i) sp *= s[i], out.push_back(s[i]);
  }
  Tensor r = Tensor::uninitialized(t.dtype(), out);
  const int64_t rows = to_last ? c : sp, cols = to_last ? sp : c;
  switch (dtype_bits(t.dtype())) {
    case 8:
      transpose_images(t.data<uint8_t>(), r.data<uint8_t>(), n, rows, cols);
      break;
    case 16:
      transpose_images(t.data<uint16_t>(), r.data<uint16_t>(), n, rows, cols);
      break;
    case 32:
      transpose_images(t.data<uint32_t>(), r.data<uint32_t>(), n, rows, cols);
      break;
    case 64:
      transpose_images(t.data<uint64_t>(), r.data<uint64_t>(), n, rows, cols);
      break;
    default:
      TRT_THROW(ErrorCode::kNotSupported, "permute_channels: {} elements", dtype_name(t.dtype()));
  }
  return r;
}

}  // namespace trtutils::cpu
