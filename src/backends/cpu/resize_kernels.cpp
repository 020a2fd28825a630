// CPU kernels for Resize (opset 10..19) and Upsample (opset 7..9).
// Arithmetic follows ONNX Runtime's CPU kernel (float32 coordinates, its bilinear weights and
// summation order, integer results truncated) so results match it bit for bit where it can
// run the case; the ONNX reference (float64) agrees within its test tolerance.
// nearest: a separable index gather (exact for every dtype). linear: the 2^k corners of the k
// resized axes per output point. cubic: separable 1-D passes. tf_crop_and_resize points
// outside the input get extrapolation_value.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/copy_util.h"
#include "backends/cpu/kernel_registry.h"
#include "core/check.h"
#include "ops/tensor_shapes.h"

namespace trtutils::cpu {

void register_resize_kernels(KernelRegistry& r);

namespace {

using ops::CoordMode;
using ops::ResizeMode;

using ops::axis_coords;
using ops::AxisCoords;
using ops::cubic_taps;
using ops::CubicTaps;
using ops::linear_taps;
using ops::LinearTaps;

std::vector<float> to_floats(const Tensor& x) {
  std::vector<float> v(static_cast<size_t>(x.numel()));
  if (x.dtype() == DataType::kFloat32) {
    if (!v.empty()) std::memcpy(v.data(), x.raw(), v.size() * sizeof(float));
  } else {
    for (int64_t i = 0; i < x.numel(); ++i) v[i] = static_cast<float>(x.at_double(i));
  }
  return v;
}

// Writes float results to the output dtype (integers truncated toward zero and saturated, as
// ONNX Runtime's static_cast does for in-range values).
void store_floats(const std::vector<float>& v, Tensor& out, const ir::Node& node) {
  if (out.dtype() == DataType::kFloat32) {
    if (!v.empty()) std::memcpy(out.raw(), v.data(), v.size() * sizeof(float));
    return;
  }
  const size_t esz = element_bytes(out.dtype(), node);
  uint8_t* dst = out.data<uint8_t>();
  for (size_t i = 0; i < v.size(); ++i) store_from_double(out.dtype(), dst + i * esz, v[i]);
}

void check_interpolatable(const ir::Node& node, const ops::ResizeAttrs& at, DataType dt) {
  TRT_CHECK((dtype_is_float(dt) || dtype_is_integer(dt)) && !is_int4(dt) &&
                dt != DataType::kFloat8E4M3FNUZ && dt != DataType::kFloat8E5M2FNUZ,
            ErrorCode::kNotSupported, "{}: {} interpolation of dtype {} is not supported",
            node.describe(), at.mode == ResizeMode::kLinear ? "linear" : "cubic", dtype_name(dt));
}

constexpr size_t kMaxResizedAxes = 8;

// Linear: for each output point, the sum over the 2^k corners of the k resized axes of
// (product of weights, innermost axis first) * value, corners enumerated innermost-fastest:
// ONNX Runtime's bilinear/trilinear expressions, so float and truncated integer results agree.
// Work is done per output row (all axes but the last): the corners of the outer axes are set
// up once per row, the last axis is walked in the inner loop.
void linear(KernelContext& ctx, const ops::ResizeAttrs& at, const ops::ResizePlan& plan) {
  const auto& node = ctx.node;
  const Tensor& x = ctx.input(0);
  check_interpolatable(node, at, x.dtype());
  const size_t rank = x.rank();
  Tensor& out = ctx.make_output(0, x.dtype(), plan.out);
  if (out.numel() == 0) return;
  if (rank == 0) {
    out = x.clone();
    return;
  }
  std::vector<AxisCoords> coords(rank);
  std::vector<LinearTaps> taps(rank);
  std::vector<size_t> outer_resized;  // resized axes before the last, outer to inner
  for (size_t d = 0; d < rank; ++d) {
    TRT_CHECK(x.dim(d) > 0, ErrorCode::kInvalidArgument, "{}: cannot resize the empty axis {}",
              node.describe(), d);
    coords[d] =
        axis_coords(at, x.dim(d), plan.out[d], plan.scales[d], plan.roi_start[d], plan.roi_end[d]);
    if (coords[d].identity) continue;
    taps[d] = linear_taps(coords[d], x.dim(d));
    if (d + 1 < rank) outer_resized.push_back(d);
  }
  const size_t kr = outer_resized.size();
  TRT_CHECK(kr + 1 <= kMaxResizedAxes, ErrorCode::kNotSupported,
            "{}: linear resize of more than {} axes at once is not supported", node.describe(),
            kMaxResizedAxes);
  const size_t last = rank - 1;
  const bool last_resized = !coords[last].identity;
  const AxisCoords& cl = coords[last];
  const LinearTaps& tl = taps[last];
  const std::vector<float> src = to_floats(x);
  const auto in_strides = strides_of(x.shape());
  const int64_t width = plan.out[last];
  const int64_t rows = out.numel() / width;
  const int64_t combos = int64_t{1} << kr;
  const float extrapolation = at.extrapolation_value;
  // float32 results go straight to the output; other dtypes through a float buffer
  const bool direct = out.dtype() == DataType::kFloat32;
  std::vector<float> buffer(direct ? 0 : static_cast<size_t>(out.numel()));
  float* const dst = direct ? out.data<float>() : buffer.data();
#pragma omp parallel for if (out.numel() * combos > (1 << 15))
  for (int64_t row = 0; row < rows; ++row) {
    float* y = dst + row * width;
    // Row index -> identity offset, outer resized output indices, "outside" flag.
    int64_t base = 0, rem = row;
    bool outside = false;
    int64_t oidx[kMaxResizedAxes] = {};
    for (size_t d = last, r = kr; d-- > 0;) {
      const int64_t o = rem % plan.out[d];
      rem /= plan.out[d];
      if (coords[d].identity) {
        base += o * in_strides[d];
      } else {
        oidx[--r] = o;
        outside = outside || coords[d].outside[o];
      }
    }
    if (outside) {
      std::fill(y, y + width, extrapolation);
      continue;
    }
    // Outer corners: offset and weights (innermost outer axis first).
    int64_t off[1 << (kMaxResizedAxes - 1)];
    float wc[1 << (kMaxResizedAxes - 1)][kMaxResizedAxes];
    for (int64_t c = 0; c < combos; ++c) {
      off[c] = base;
      for (size_t j = 0; j < kr; ++j) {  // j = 0: innermost outer axis
        const size_t r = kr - 1 - j;
        const size_t d = outer_resized[r];
        const bool second = (c >> j) & 1;
        const int64_t o = oidx[r];
        wc[c][j] = second ? taps[d].w2[o] : taps[d].w1[o];
        off[c] += (second ? taps[d].i2[o] : taps[d].i1[o]) * in_strides[d];
      }
    }
    for (int64_t xo = 0; xo < width; ++xo) {
      if (!last_resized) {
        if (kr == 0) {
          y[xo] = src[base + xo];
          continue;
        }
        float acc = 0;
        for (int64_t c = 0; c < combos; ++c) {
          float w = wc[c][0];
          for (size_t j = 1; j < kr; ++j) w = w * wc[c][j];
          acc = c == 0 ? w * src[off[c] + xo] : acc + w * src[off[c] + xo];
        }
        y[xo] = acc;
        continue;
      }
      if (cl.outside[xo]) {
        y[xo] = extrapolation;
        continue;
      }
      const int64_t i1 = tl.i1[xo], i2 = tl.i2[xo];
      const float w1 = tl.w1[xo], w2 = tl.w2[xo];
      float acc = 0;
      for (int64_t c = 0; c < combos; ++c) {
        float wa = w1, wb = w2;
        for (size_t j = 0; j < kr; ++j) {
          wa = wa * wc[c][j];
          wb = wb * wc[c][j];
        }
        const float ta = wa * src[off[c] + i1];
        acc = c == 0 ? ta : acc + ta;
        acc = acc + wb * src[off[c] + i2];
      }
      y[xo] = acc;
    }
  }
  if (!direct) store_floats(buffer, out, node);
}

// Cubic: separable 1-D passes in float32, innermost axis first (the order of ONNX Runtime and
// of the ONNX reference), 4 taps per coordinate (ops::cubic_taps, shared with the GPU kernel).
std::vector<float> cubic_pass(const std::vector<float>& src, Shape& cur, size_t d,
                              const CubicTaps& t, int64_t out_len) {
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < d; ++i) outer *= cur[i];
  for (size_t i = d + 1; i < cur.size(); ++i) inner *= cur[i];
  const int64_t n = cur[d];
  std::vector<float> dst(static_cast<size_t>(outer * out_len * inner), 0.0f);
#pragma omp parallel for if (outer * out_len * inner > (1 << 14))
  for (int64_t o = 0; o < outer; ++o) {
    const float* s = src.data() + o * n * inner;
    float* r = dst.data() + o * out_len * inner;
    for (int64_t j = 0; j < out_len; ++j) {
      float* rj = r + j * inner;
      for (int k = 0; k < 4; ++k) {
        const float w = t.weight[4 * j + k];
        const float* sk = s + t.index[4 * j + k] * inner;
        for (int64_t i = 0; i < inner; ++i) rj[i] += w * sk[i];
      }
    }
  }
  cur[d] = out_len;
  return dst;
}

void cubic(KernelContext& ctx, const ops::ResizeAttrs& at, const ops::ResizePlan& plan) {
  const auto& node = ctx.node;
  const Tensor& x = ctx.input(0);
  check_interpolatable(node, at, x.dtype());
  const size_t rank = x.rank();
  Tensor& out = ctx.make_output(0, x.dtype(), plan.out);
  if (out.numel() == 0) return;
  std::vector<AxisCoords> coords(rank);
  for (size_t d = 0; d < rank; ++d) {
    TRT_CHECK(x.dim(d) > 0, ErrorCode::kInvalidArgument, "{}: cannot resize the empty axis {}",
              node.describe(), d);
    coords[d] =
        axis_coords(at, x.dim(d), plan.out[d], plan.scales[d], plan.roi_start[d], plan.roi_end[d]);
  }
  std::vector<float> cur = to_floats(x);
  Shape cur_shape = x.shape();
  for (size_t d = rank; d-- > 0;) {
    if (coords[d].identity) continue;
    cur = cubic_pass(cur, cur_shape, d, cubic_taps(at, coords[d], x.dim(d)), plan.out[d]);
  }
  if (at.coord == CoordMode::kTfCropAndResize) {
    // Any axis outside the input: the whole output point is extrapolated.
    const auto strides = strides_of(plan.out);
    for (size_t d = 0; d < rank; ++d) {
      const auto& f = coords[d].outside;
      if (std::none_of(f.begin(), f.end(), [](uint8_t b) { return b != 0; })) continue;
      for (int64_t i = 0; i < out.numel(); ++i)
        if (f[(i / strides[d]) % plan.out[d]]) cur[i] = at.extrapolation_value;
    }
  }
  store_floats(cur, out, node);
}

void nearest(KernelContext& ctx, const ops::ResizeAttrs& at, const ops::ResizePlan& plan) {
  const auto& node = ctx.node;
  const Tensor& x0 = ctx.input(0);
  auto outs = with_unpacked_int4({&x0}, [&](const std::vector<const Tensor*>& ins) {
    const Tensor& x = *ins[0];
    TRT_CHECK(x.dtype() != DataType::kString, ErrorCode::kNotSupported,
              "{}: string tensors are not supported", node.describe());
    const size_t esz = element_bytes(x.dtype(), node);
    const size_t rank = x.rank();
    const auto strides = strides_of(x.shape());
    for (size_t d = 0; d < rank; ++d)
      TRT_CHECK(x.dim(d) > 0 || plan.out[d] == 0, ErrorCode::kInvalidArgument,
                "{}: cannot resize the empty axis {}", node.describe(), d);
    // The output first: its allocation checks --max_memory before the per-axis tables (as
    // large as the output's dims) are built.
    Tensor out_t(x.dtype(), plan.out);
    if (out_t.numel() == 0) return std::vector<Tensor>{out_t};
    std::vector<std::vector<int64_t>> tables(rank);
    for (size_t d = 0; d < rank; ++d) {
      const int64_t in = x.dim(d), out = plan.out[d];
      const AxisCoords c =
          axis_coords(at, in, out, plan.scales[d], plan.roi_start[d], plan.roi_end[d]);
      for (int64_t o = 0; o < out; ++o) {
        if (c.outside[o]) {
          tables[d].push_back(kFill);
          continue;
        }
        const int64_t i =
            c.identity ? o : ops::resize_nearest_index(at.nearest, c.x[o], plan.scales[d] < 1.0f);
        tables[d].push_back(std::clamp<int64_t>(i, 0, in - 1) * strides[d]);
      }
    }
    uint64_t fill = 0;
    if (at.coord == CoordMode::kTfCropAndResize)
      store_from_double(x0.dtype(), &fill, at.extrapolation_value);
    gather_separable(x.raw(), out_t.raw(), esz, plan.out, tables, &fill);
    return std::vector<Tensor>{out_t};
  });
  ctx.outputs[0] = std::move(outs[0]);
}

void resize_kernel(KernelContext& ctx) {
  const auto& node = ctx.node;
  const ops::ResizeAttrs at = ops::resize_attrs(node, ctx.opset);
  const ops::ResizeInputs ri = ops::resize_inputs(node, ctx.opset);
  auto in = [&](int i) -> const Tensor* {
    return i >= 0 && ctx.has_input(i) ? ctx.inputs[i] : nullptr;
  };
  const Tensor& x = ctx.input(0);
  const ops::ResizePlan plan =
      ops::resize_plan(node, ctx.opset, x.shape(), in(ri.roi), in(ri.scales), in(ri.sizes));
  switch (at.mode) {
    case ResizeMode::kNearest:
      return nearest(ctx, at, plan);
    case ResizeMode::kLinear:
      return linear(ctx, at, plan);
    case ResizeMode::kCubic:
      return cubic(ctx, at, plan);
  }
}

}  // namespace

void register_resize_kernels(KernelRegistry& r) {
  r.add({"Resize", "", resize_kernel});
  r.add({"Upsample", "", resize_kernel});
}

}  // namespace trtutils::cpu
