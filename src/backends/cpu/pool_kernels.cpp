// MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool on the CPU (1-D/2-D/3-D). These are
// memory bound; the plain loops (parallel over planes, bounds hoisted out of the inner loop) are
// the only implementation.
#include <algorithm>
#include <array>
#include <limits>
#include <utility>
#include <vector>

#include "backends/cpu/nn_kernels.h"
#include "backends/cpu/vector_exp.h"
#include "core/check.h"
#include "ops/blocked_layout.h"
#include "ops/nn_geometry.h"

namespace trtutils::cpu::nn {

namespace {

// Pool problem with the spatial axes padded to 3 (leading axes of size 1).
struct PoolProblem {
  size_t nspatial = 0;
  int64_t planes = 0;  // N * C
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1},
      dilation{1, 1, 1}, pad_begin{0, 0, 0}, pad_end{0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
};

PoolProblem make_pool_problem(const ir::Node& node, const Tensor& x, Shape& out_shape) {
  TRT_CHECK_ARG(x.rank() >= 3, "{}: input X {} must have rank >= 3 (N, C, spatial...)",
                node.describe(), shape_str(x.shape()));
  const size_t nsp = x.rank() - 2;
  TRT_CHECK(nsp <= 3, ErrorCode::kNotSupported,
            "{}: {}-D pooling is not supported (1-D, 2-D and 3-D are)", node.describe(), nsp);
  const ops::WindowSpec ws = ops::read_window_spec(node, nsp, nullptr);
  PoolProblem p;
  p.nspatial = nsp;
  p.planes = x.dim(0) * x.dim(1);
  out_shape = {x.dim(0), x.dim(1)};
  const size_t o = 3 - nsp;
  for (size_t i = 0; i < nsp; ++i) {
    const ops::AxisGeometry g = ops::conv_axis(ws, i, x.dim(2 + i), node);
    p.in[o + i] = x.dim(2 + i);
    p.out[o + i] = g.out;
    p.kernel[o + i] = ws.kernel[i];
    p.stride[o + i] = ws.strides[i];
    p.dilation[o + i] = ws.dilations[i];
    p.pad_begin[o + i] = g.pad_begin;
    p.pad_end[o + i] = g.pad_end;
    out_shape.push_back(g.out);
  }
  return p;
}

// Kernel taps [lo, hi) of an axis whose input index start + k * d lies in [0, len).
struct Taps {
  int64_t start, lo, hi;
};
Taps valid_taps(int64_t start, int64_t d, int64_t k, int64_t len) {
  const int64_t lo = start >= 0 ? 0 : (-start + d - 1) / d;
  const int64_t hi = start >= len ? 0 : std::min(k, (len - 1 - start) / d + 1);
  return {start, lo, std::max(lo, hi)};
}
// The taps of every output position along axis a (computed once per call, not per output).
std::vector<Taps> axis_taps(const PoolProblem& p, int a) {
  std::vector<Taps> t(static_cast<size_t>(p.out[a]));
  for (int64_t o = 0; o < p.out[a]; ++o)
    t[o] = valid_taps(o * p.stride[a] - p.pad_begin[a], p.dilation[a], p.kernel[a], p.in[a]);
  return t;
}

// indices (optional): flat index into X, row-major (storage_order 0) or with the spatial axes
// column-major (storage_order 1), as in ONNX Runtime.
// Output positions [lo, hi) along an axis whose tap k (input o * s - pad + k * d) is inside
// [0, len).
std::pair<int64_t, int64_t> outputs_for_tap(const PoolProblem& p, int a, int64_t k) {
  const int64_t off = k * p.dilation[a] - p.pad_begin[a], s = p.stride[a];
  const int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
  const int64_t hi = (p.in[a] - 1 - off) < 0 ? 0 : std::min(p.out[a], (p.in[a] - 1 - off) / s + 1);
  return {lo, std::max(lo, hi)};
}

// MaxPool without indices: per output row, fold every valid (kd, kh, kw) tap into the row with
// the output position innermost (vectorisable). Rows no tap reaches stay at lowest().
template <typename T>
void max_pool_rows(const PoolProblem& p, const T* x, T* y) {
  const int64_t in_sz = p.in_size(), out_sz = p.out_size();
  const std::vector<Taps> td = axis_taps(p, 0), th = axis_taps(p, 1);
  std::vector<std::pair<int64_t, int64_t>> rw(static_cast<size_t>(p.kernel[2]));
  for (int64_t kw = 0; kw < p.kernel[2]; ++kw) rw[kw] = outputs_for_tap(p, 2, kw);
  const int64_t sw = p.stride[2];
#pragma omp parallel for schedule(static)
  for (int64_t pl = 0; pl < p.planes; ++pl) {
    const T* xp = x + pl * in_sz;
    for (int64_t od = 0; od < p.out[0]; ++od) {
      for (int64_t oh = 0; oh < p.out[1]; ++oh) {
        T* yr = y + pl * out_sz + (od * p.out[1] + oh) * p.out[2];
        std::fill(yr, yr + p.out[2], std::numeric_limits<T>::lowest());
        for (int64_t kd = td[od].lo; kd < td[od].hi; ++kd) {
          const int64_t id = td[od].start + kd * p.dilation[0];
          for (int64_t kh = th[oh].lo; kh < th[oh].hi; ++kh) {
            const int64_t ih = th[oh].start + kh * p.dilation[1];
            const T* xr = xp + (id * p.in[1] + ih) * p.in[2];
            for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
              const T* xt = xr + kw * p.dilation[2] - p.pad_begin[2];
              for (int64_t ow = rw[kw].first; ow < rw[kw].second; ++ow)
                yr[ow] = std::max(yr[ow], xt[ow * sw]);
            }
          }
        }
      }
    }
  }
}

template <typename T>
void max_pool(const PoolProblem& p, const T* x, T* y, int64_t* indices, bool col_major) {
  const int64_t in_sz = p.in_size(), out_sz = p.out_size();
  const std::vector<Taps> td = axis_taps(p, 0), th = axis_taps(p, 1), tw = axis_taps(p, 2);
  const int64_t dd = p.dilation[0], dh = p.dilation[1], dw = p.dilation[2];
#pragma omp parallel for schedule(static)
  for (int64_t pl = 0; pl < p.planes; ++pl) {
    const T* xp = x + pl * in_sz;
    T* yp = y + pl * out_sz;
    int64_t oi = 0;
    for (const Taps& a : td) {
      for (const Taps& b : th) {
        for (const Taps& c : tw) {
          T best = std::numeric_limits<T>::lowest();
          int64_t arg = -1;
          for (int64_t kd = a.lo; kd < a.hi; ++kd) {
            const int64_t id = a.start + kd * dd;
            for (int64_t kh = b.lo; kh < b.hi; ++kh) {
              const int64_t ih = b.start + kh * dh;
              const T* row = xp + (id * p.in[1] + ih) * p.in[2] + c.start;
              if (!indices) {
                for (int64_t kw = c.lo; kw < c.hi; ++kw) best = std::max(best, row[kw * dw]);
                continue;
              }
              for (int64_t kw = c.lo; kw < c.hi; ++kw) {
                if (arg < 0 || row[kw * dw] > best) {
                  best = row[kw * dw];
                  const int64_t iw = c.start + kw * dw;
                  arg = col_major ? (iw * p.in[1] + ih) * p.in[0] + id
                                  : (id * p.in[1] + ih) * p.in[2] + iw;
                }
              }
            }
          }
          yp[oi] = best;
          if (indices) indices[pl * out_sz + oi] = pl * in_sz + std::max<int64_t>(arg, 0);
          ++oi;
        }
      }
    }
  }
}

template <typename T>
void average_pool(const PoolProblem& p, const T* x, T* y, bool count_include_pad) {
  const int64_t in_sz = p.in_size(), out_sz = p.out_size();
  const std::vector<Taps> td = axis_taps(p, 0), th = axis_taps(p, 1), tw = axis_taps(p, 2);
  // Divisor per axis: valid taps, or (count_include_pad) taps inside the padded extent
  // [-pad_begin, in + pad_end).
  auto counts = [&](int a, const std::vector<Taps>& taps) {
    std::vector<int64_t> c(taps.size());
    for (size_t o = 0; o < taps.size(); ++o) {
      if (!count_include_pad) {
        c[o] = taps[o].hi - taps[o].lo;
        continue;
      }
      c[o] = 0;
      for (int64_t k = 0; k < p.kernel[a]; ++k) {
        const int64_t i = taps[o].start + k * p.dilation[a];
        c[o] += (i >= -p.pad_begin[a] && i < p.in[a] + p.pad_end[a]) ? 1 : 0;
      }
    }
    return c;
  };
  const std::vector<int64_t> cd = counts(0, td), ch = counts(1, th), cw = counts(2, tw);
  const int64_t dd = p.dilation[0], dh = p.dilation[1], dw = p.dilation[2];
#pragma omp parallel for schedule(static)
  for (int64_t pl = 0; pl < p.planes; ++pl) {
    const T* xp = x + pl * in_sz;
    T* yp = y + pl * out_sz;
    int64_t oi = 0;
    for (size_t od = 0; od < td.size(); ++od) {
      const Taps& a = td[od];
      for (size_t oh = 0; oh < th.size(); ++oh) {
        const Taps& b = th[oh];
        for (size_t ow = 0; ow < tw.size(); ++ow) {
          const Taps& c = tw[ow];
          double sum = 0;
          for (int64_t kd = a.lo; kd < a.hi; ++kd) {
            const int64_t id = a.start + kd * dd;
            for (int64_t kh = b.lo; kh < b.hi; ++kh) {
              const T* row = xp + (id * p.in[1] + b.start + kh * dh) * p.in[2] + c.start;
              for (int64_t kw = c.lo; kw < c.hi; ++kw) sum += static_cast<double>(row[kw * dw]);
            }
          }
          const int64_t count = cd[od] * ch[oh] * cw[ow];
          yp[oi++] = static_cast<T>(count > 0 ? sum / static_cast<double>(count) : 0.0);
        }
      }
    }
  }
}

template <typename T>
void global_pool(const T* x, T* y, int64_t planes, int64_t size, bool is_max) {
#pragma omp parallel for schedule(static)
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* xp = x + pl * size;
    if (is_max) {
      T best = size > 0 ? xp[0] : T(0);
      for (int64_t i = 1; i < size; ++i) best = xp[i] > best ? xp[i] : best;
      y[pl] = best;
    } else {
      double sum = 0;
      for (int64_t i = 0; i < size; ++i) sum += static_cast<double>(xp[i]);
      y[pl] = static_cast<T>(size > 0 ? sum / static_cast<double>(size) : 0.0);
    }
  }
}

// Global pooling of [N, spatial..., C] float32 (channels_last = 1, from the conv_layout pass)
// into [N, C, 1...]: per image the C-vectors of every pixel summed (or maxed) in order, in
// double as the plain kernel does; threads split the channels.
void global_pool_channels_last(const float* x, float* y, int64_t n, int64_t pixels, int64_t c,
                               bool is_max) {
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (c + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n * pixels * c > (1 << 15))
  for (int64_t job = 0; job < n * blocks; ++job) {
    const int64_t b = job / blocks, c0 = (job % blocks) * kBlock, cw = std::min(kBlock, c - c0);
    double acc[kBlock];
    for (int64_t k = 0; k < cw; ++k)
      acc[k] = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t p = 0; p < pixels; ++p) {
      const float* xp = x + (b * pixels + p) * c + c0;
      if (is_max)
        for (int64_t k = 0; k < cw; ++k) acc[k] = std::max(acc[k], static_cast<double>(xp[k]));
      else
        for (int64_t k = 0; k < cw; ++k) acc[k] += static_cast<double>(xp[k]);
    }
    for (int64_t k = 0; k < cw; ++k)
      y[b * c + c0 + k] = static_cast<float>(
          is_max ? acc[k] : (pixels > 0 ? acc[k] / static_cast<double>(pixels) : 0.0));
  }
}

// Global pooling of a blocked X [N, C / 16, spatial..., 16] (conv_blocked_layout) into
// [N, C, 1...]: each block is a channels-last image of 16 channels.
void run_global_pool_blocked(KernelContext& ctx, bool is_max) {
  const ir::Node& node = ctx.node;
  const Tensor& x = ctx.input(0);
  const int64_t c = node.attr_int("channels", -1);
  TRT_CHECK_ARG(x.dtype() == DataType::kFloat32 && x.rank() >= 4 && x.shape().back() == 16 &&
                    c > 0 && x.dim(1) == ops::channel_blocks(c),
                "{}: a blocked X must be float32 [N, {}, spatial..., 16], got {} {}",
                node.describe(), ops::channel_blocks(c), dtype_name(x.dtype()),
                shape_str(x.shape()));
  const int64_t n = x.dim(0), planes = n * x.dim(1);
  Shape out_shape(x.rank() - 1, 1);
  out_shape[0] = n;
  out_shape[1] = c;
  std::vector<float> lanes(static_cast<size_t>(planes * 16));
  global_pool_channels_last(x.data<float>(), lanes.data(), planes, x.numel() / (planes * 16), 16,
                            is_max);
  Tensor& y = ctx.make_output(0, DataType::kFloat32, out_shape);
  for (int64_t b = 0; b < n; ++b)
    std::copy(lanes.begin() + b * x.dim(1) * 16, lanes.begin() + b * x.dim(1) * 16 + c,
              y.data<float>() + b * c);
}

void run_global_pool(KernelContext& ctx, bool is_max) {
  const ir::Node& node = ctx.node;
  const Tensor& x_in = ctx.input(0);
  TRT_CHECK_ARG(x_in.rank() >= 3, "{}: input X {} must have rank >= 3 (N, C, spatial...)",
                node.describe(), shape_str(x_in.shape()));
  if (node.attr_int("blocked", 0) != 0) {
    run_global_pool_blocked(ctx, is_max);
    return;
  }
  if (node.attr_int("channels_last", 0) != 0) {
    TRT_CHECK_ARG(x_in.dtype() == DataType::kFloat32, "{}: channels-last X must be float32",
                  node.describe());
    const int64_t n = x_in.dim(0), c = x_in.shape().back();
    Shape out_shape(x_in.rank(), 1);
    out_shape[0] = n;
    out_shape[1] = c;
    Tensor& y = ctx.make_output(0, DataType::kFloat32, out_shape);
    const int64_t pixels = n * c > 0 ? x_in.numel() / (n * c) : 0;
    global_pool_channels_last(x_in.data<float>(), y.data<float>(), n, pixels, c, is_max);
    return;
  }
  const Tensor x = to_compute(x_in, node, "input X");
  Shape out_shape(x.rank(), 1);
  out_shape[0] = x.dim(0);
  out_shape[1] = x.dim(1);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t size = planes > 0 ? x.numel() / planes : 0;
  Tensor y(x.dtype(), out_shape);
  if (x.dtype() == DataType::kFloat64)
    global_pool(x.data<double>(), y.data<double>(), planes, size, is_max);
  else
    global_pool(x.data<float>(), y.data<float>(), planes, size, is_max);
  set_output_from(ctx, 0, x_in.dtype(), y);
}

// MaxPool on [N, spatial..., C] float32 (channels_last = 1, from the conv_layout pass): per
// output pixel the maximum of the valid taps' C-vectors, contiguous in memory (padding taps
// never win, as in the plain kernel).
void max_pool_channels_last(const PoolProblem& p, int64_t n, int64_t c, const float* x, float* y) {
  const int64_t rows = n * p.out[0] * p.out[1];
#pragma omp parallel for schedule(static) if (rows * p.out[2] * c > (1 << 14))
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = r / (p.out[0] * p.out[1]), od = (r / p.out[1]) % p.out[0], oh = r % p.out[1];
    const Taps td =
        valid_taps(od * p.stride[0] - p.pad_begin[0], p.dilation[0], p.kernel[0], p.in[0]);
    const Taps th =
        valid_taps(oh * p.stride[1] - p.pad_begin[1], p.dilation[1], p.kernel[1], p.in[1]);
    for (int64_t ow = 0; ow < p.out[2]; ++ow) {
      const Taps tw =
          valid_taps(ow * p.stride[2] - p.pad_begin[2], p.dilation[2], p.kernel[2], p.in[2]);
      float* yp = y + ((r * p.out[2]) + ow) * c;
      std::fill(yp, yp + c, -std::numeric_limits<float>::infinity());
      for (int64_t kd = td.lo; kd < td.hi; ++kd)
        for (int64_t kh = th.lo; kh < th.hi; ++kh) {
          const int64_t id = td.start + kd * p.dilation[0], ih = th.start + kh * p.dilation[1];
          const float* row = x + ((b * p.in[0] + id) * p.in[1] + ih) * p.in[2] * c;
          for (int64_t kw = tw.lo; kw < tw.hi; ++kw) {
            const float* xp = row + (tw.start + kw * p.dilation[2]) * c;
            for (int64_t k = 0; k < c; ++k) yp[k] = std::max(yp[k], xp[k]);
          }
        }
    }
  }
}

#if defined(__x86_64__)
// max_pool_channels_last for 16 channels (a blocked image, one vector per pixel), the taps of
// each axis computed once: ResNet-50's 3x3 stride-2 pool of 64 x 112 x 112 at batch 1 took
// 0.51 ms in the generic loop (ONNX Runtime: 0.12). _mm512_max_ps(x, acc) returns acc when x is
// NaN, as std::max(acc, x) does.
__attribute__((target("avx512f"))) void max_pool_16(const PoolProblem& p, int64_t n, const float* x,
                                                    float* y) {
  const std::vector<Taps> td = axis_taps(p, 0), th = axis_taps(p, 1), tw = axis_taps(p, 2);
  const int64_t rows = n * p.out[0] * p.out[1];
#pragma omp parallel for schedule(static) if (rows * p.out[2] > (1 << 10))
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = r / (p.out[0] * p.out[1]), od = (r / p.out[1]) % p.out[0], oh = r % p.out[1];
    const Taps& d = td[od];
    const Taps& h = th[oh];
    for (int64_t ow = 0; ow < p.out[2]; ++ow) {
      const Taps& w = tw[ow];
      __m512 acc = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
      for (int64_t kd = d.lo; kd < d.hi; ++kd)
        for (int64_t kh = h.lo; kh < h.hi; ++kh) {
          const int64_t id = d.start + kd * p.dilation[0], ih = h.start + kh * p.dilation[1];
          const float* row = x + ((b * p.in[0] + id) * p.in[1] + ih) * p.in[2] * 16;
          for (int64_t kw = w.lo; kw < w.hi; ++kw)
            acc = _mm512_max_ps(_mm512_loadu_ps(row + (w.start + kw * p.dilation[2]) * 16), acc);
        }
      _mm512_storeu_ps(y + (r * p.out[2] + ow) * 16, acc);
    }
  }
}
#endif

// MaxPool of a blocked X [N, C / 16, spatial..., 16] (conv_blocked_layout): each block is a
// channels-last image of 16 channels.
void max_pool_blocked(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& x = ctx.input(0);
  TRT_CHECK(x.dtype() == DataType::kFloat32 && x.rank() >= 4 && x.shape().back() == 16 &&
                !(node.outputs.size() > 1 && !node.outputs[1].empty()),
            ErrorCode::kNotSupported,
            "{}: a blocked MaxPool must be float32 [N, C / 16, spatial..., 16], without Indices",
            node.describe());
  const int64_t planes = x.dim(0) * x.dim(1);
  Shape first{planes, 16};
  first.insert(first.end(), x.shape().begin() + 2, x.shape().end() - 1);
  Shape out_first;
  const PoolProblem p = make_pool_problem(node, x.reshaped(first), out_first);
  Shape out{x.dim(0), x.dim(1)};
  out.insert(out.end(), out_first.begin() + 2, out_first.end());
  out.push_back(16);
  Tensor& y = ctx.make_output(0, DataType::kFloat32, out);
#if defined(__x86_64__)
  if (has_avx512f()) return max_pool_16(p, planes, x.data<float>(), y.data<float>());
#endif
  max_pool_channels_last(p, planes, 16, x.data<float>(), y.data<float>());
}

}  // namespace

void max_pool_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& x_in = ctx.input(0);
  if (node.attr_int("blocked", 0) != 0) {
    max_pool_blocked(ctx);
    return;
  }
  if (node.attr_int("channels_last", 0) != 0) {
    // [N, spatial..., C]: only float32 without Indices (what the conv_layout pass converts).
    TRT_CHECK(x_in.dtype() == DataType::kFloat32 && x_in.rank() >= 3 &&
                  !(node.outputs.size() > 1 && !node.outputs[1].empty()),
              ErrorCode::kNotSupported,
              "{}: a channels-last MaxPool must be float32, rank >= 3, without Indices",
              node.describe());
    Shape first{x_in.dim(0), x_in.shape().back()};
    first.insert(first.end(), x_in.shape().begin() + 1, x_in.shape().end() - 1);
    Shape out_first;
    // The geometry reads only the shape: a view of X with the channels-first shape.
    const PoolProblem p = make_pool_problem(node, x_in.reshaped(first), out_first);
    Shape out_last{out_first[0]};
    out_last.insert(out_last.end(), out_first.begin() + 2, out_first.end());
    out_last.push_back(out_first[1]);
    Tensor& y = ctx.make_output(0, DataType::kFloat32, out_last);
    max_pool_channels_last(p, x_in.dim(0), x_in.shape().back(), x_in.data<float>(),
                           y.data<float>());
    return;
  }
  Shape out_shape;
  const PoolProblem p = make_pool_problem(node, x_in, out_shape);
  const int64_t storage_order = node.attr_int("storage_order", 0);
  TRT_CHECK_ARG(storage_order == 0 || storage_order == 1, "{}: storage_order {} must be 0 or 1",
                node.describe(), storage_order);
  const bool want_indices = node.outputs.size() > 1 && !node.outputs[1].empty();
  int64_t* indices =
      want_indices ? ctx.make_output(1, DataType::kInt64, out_shape).data<int64_t>() : nullptr;
  const DataType dt = x_in.dtype();
  if (dt == DataType::kInt8 || dt == DataType::kUInt8) {
    Tensor& y = ctx.make_output(0, dt, out_shape);
    if (dt == DataType::kInt8 && !indices)  // int8 MaxPool of Q/DQ models (qdq_fusion)
      max_pool_rows(p, x_in.data<int8_t>(), y.data<int8_t>());
    else if (dt == DataType::kUInt8 && !indices)
      max_pool_rows(p, x_in.data<uint8_t>(), y.data<uint8_t>());
    else if (dt == DataType::kInt8)
      max_pool(p, x_in.data<int8_t>(), y.data<int8_t>(), indices, storage_order == 1);
    else
      max_pool(p, x_in.data<uint8_t>(), y.data<uint8_t>(), indices, storage_order == 1);
    return;
  }
  if (dt == DataType::kFloat8E4M3FN || dt == DataType::kFloat8E5M2) {
    // float8 MaxPool of Q/DQ models (qdq_fusion): through float32, exact both ways (the max is
    // one of the inputs).
    const bool e4m3 = dt == DataType::kFloat8E4M3FN;
    const auto* src = static_cast<const uint8_t*>(x_in.raw());
    Tensor xf(DataType::kFloat32, x_in.shape());
    float* xv = xf.data<float>();
    for (int64_t k = 0; k < x_in.numel(); ++k)
      xv[k] = e4m3 ? e4m3fn_to_float(float8_e4m3fn{src[k]}) : e5m2_to_float(float8_e5m2{src[k]});
    Tensor yf(DataType::kFloat32, out_shape);
    if (indices)
      max_pool(p, xv, yf.data<float>(), indices, storage_order == 1);
    else
      max_pool_rows(p, xv, yf.data<float>());
    Tensor& y = ctx.make_output(0, dt, out_shape);
    auto* dst = static_cast<uint8_t*>(y.raw());
    const float* yv = yf.data<float>();
    for (int64_t k = 0; k < y.numel(); ++k)
      dst[k] = e4m3 ? float_to_e4m3fn(yv[k]).bits : float_to_e5m2(yv[k]).bits;
    return;
  }
  const Tensor x = to_compute(x_in, node, "input X");
  Tensor y(x.dtype(), out_shape);
  if (x.dtype() == DataType::kFloat64)
    max_pool(p, x.data<double>(), y.data<double>(), indices, storage_order == 1);
  else if (!indices)
    max_pool_rows(p, x.data<float>(), y.data<float>());
  else
    max_pool(p, x.data<float>(), y.data<float>(), indices, storage_order == 1);
  set_output_from(ctx, 0, dt, y);
}

void average_pool_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& x_in = ctx.input(0);
  Shape out_shape;
  const PoolProblem p = make_pool_problem(node, x_in, out_shape);
  const bool include_pad = node.attr_int("count_include_pad", 0) != 0;
  const Tensor x = to_compute(x_in, node, "input X");
  Tensor y(x.dtype(), out_shape);
  if (x.dtype() == DataType::kFloat64)
    average_pool(p, x.data<double>(), y.data<double>(), include_pad);
  else
    average_pool(p, x.data<float>(), y.data<float>(), include_pad);
  set_output_from(ctx, 0, x_in.dtype(), y);
}

void global_average_pool_kernel(KernelContext& ctx) {
  run_global_pool(ctx, false);
}
void global_max_pool_kernel(KernelContext& ctx) {
  run_global_pool(ctx, true);
}

}  // namespace trtutils::cpu::nn
