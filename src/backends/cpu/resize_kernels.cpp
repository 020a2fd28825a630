// CPU kernels for Resize (opset 10..19) and Upsample (opset 7..9).
// nearest: a separable index gather (exact for every dtype). linear / cubic: separable 1-D
// passes in float32, innermost axis first (the order of ONNX's reference), each output
// coordinate a small list of (input index, weight) taps; axes the transform leaves unchanged
// are skipped. tf_crop_and_resize points outside the input get extrapolation_value.
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

// Taps of one axis: for output coordinate o, ntaps (index, weight) pairs.
struct AxisTaps {
  int ntaps = 1;
  std::vector<int64_t> index;
  std::vector<float> weight;
  std::vector<uint8_t> outside;  // tf_crop_and_resize: coordinate outside the input
  bool identity = true;
};

void cubic_coeffs(double t, double a, double c[4]) {
  const double t1 = t + 1, t2 = 1 - t, t3 = 2 - t;
  c[0] = ((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a;
  c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  c[2] = ((a + 2) * t2 - (a + 3)) * t2 * t2 + 1;
  c[3] = ((a * t3 - 5 * a) * t3 + 8 * a) * t3 - 4 * a;
}

AxisTaps axis_taps(const ops::ResizeAttrs& at, int64_t in, int64_t out, double scale,
                   float roi_start, float roi_end) {
  AxisTaps t;
  t.ntaps = at.mode == ResizeMode::kLinear ? 2 : 4;
  t.index.resize(static_cast<size_t>(out * t.ntaps), 0);
  t.weight.resize(t.index.size(), 0.0f);
  t.outside.resize(static_cast<size_t>(out), 0);
  t.identity = in == out;
  for (int64_t o = 0; o < out; ++o) {
    const double x = ops::resize_coordinate(at.coord, static_cast<double>(o), scale, out, in,
                                            roi_start, roi_end);
    int64_t* idx = &t.index[o * t.ntaps];
    float* w = &t.weight[o * t.ntaps];
    if (at.coord == CoordMode::kTfCropAndResize && (x < 0 || x > static_cast<double>(in - 1))) {
      t.outside[o] = 1;
      t.identity = false;
      continue;
    }
    if (at.mode == ResizeMode::kLinear) {
      const double xc = std::clamp(x, 0.0, static_cast<double>(in - 1));
      const int64_t x0 = static_cast<int64_t>(std::floor(xc));
      const int64_t x1 = std::min(x0 + 1, in - 1);
      const double r = xc - static_cast<double>(x0);
      idx[0] = x0;
      idx[1] = x1;
      w[0] = static_cast<float>(1 - r);
      w[1] = static_cast<float>(r);
      if (!(x0 == o && r == 0)) t.identity = false;
      continue;
    }
    const double xf = std::floor(x);
    const int64_t xi = static_cast<int64_t>(xf);
    double c[4];
    cubic_coeffs(x - xf, at.cubic_a, c);
    double sum = 0;
    for (int k = 0; k < 4; ++k) {
      const int64_t j = xi - 1 + k;
      if (at.exclude_outside && (j < 0 || j >= in)) c[k] = 0;
      sum += c[k];
    }
    for (int k = 0; k < 4; ++k) {
      idx[k] = std::clamp<int64_t>(xi - 1 + k, 0, in - 1);
      w[k] = static_cast<float>(at.exclude_outside ? c[k] / sum : c[k]);
    }
    if (!(xi == o && x == xf)) t.identity = false;
  }
  return t;
}

// One separable pass along axis d of `cur` (shape updated to the axis' output length).
std::vector<float> apply_axis(const std::vector<float>& src, Shape& cur, size_t d,
                              const AxisTaps& t, int64_t out_len) {
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < d; ++i) outer *= cur[i];
  for (size_t i = d + 1; i < cur.size(); ++i) inner *= cur[i];
  const int64_t n = cur[d];
  std::vector<float> dst(static_cast<size_t>(outer * out_len * inner), 0.0f);
  const int nt = t.ntaps;
#pragma omp parallel for if (outer * out_len * inner > (1 << 14))
  for (int64_t o = 0; o < outer; ++o) {
    const float* s = src.data() + o * n * inner;
    float* r = dst.data() + o * out_len * inner;
    for (int64_t j = 0; j < out_len; ++j) {
      float* rj = r + j * inner;
      for (int k = 0; k < nt; ++k) {
        const float w = t.weight[j * nt + k];
        if (w == 0.0f) continue;
        const float* sk = s + t.index[j * nt + k] * inner;
        for (int64_t i = 0; i < inner; ++i) rj[i] += w * sk[i];
      }
    }
  }
  cur[d] = out_len;
  return dst;
}

std::vector<float> to_floats(const Tensor& x) {
  std::vector<float> v(static_cast<size_t>(x.numel()));
  if (x.dtype() == DataType::kFloat32) {
    if (!v.empty()) std::memcpy(v.data(), x.raw(), v.size() * sizeof(float));
  } else {
    for (int64_t i = 0; i < x.numel(); ++i) v[i] = static_cast<float>(x.at_double(i));
  }
  return v;
}

void interpolate(KernelContext& ctx, const ops::ResizeAttrs& at, const ops::ResizePlan& plan) {
  const auto& node = ctx.node;
  const Tensor& x = ctx.input(0);
  const DataType dt = x.dtype();
  TRT_CHECK((dtype_is_float(dt) || dtype_is_integer(dt)) && !is_int4(dt) &&
                dt != DataType::kFloat8E4M3FNUZ && dt != DataType::kFloat8E5M2FNUZ,
            ErrorCode::kNotSupported, "{}: {} interpolation of dtype {} is not supported",
            node.describe(), at.mode == ResizeMode::kLinear ? "linear" : "cubic", dtype_name(dt));
  const size_t rank = x.rank();
  std::vector<AxisTaps> taps(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (plan.out[d] > 0 && x.dim(d) == 0)
      TRT_THROW(ErrorCode::kInvalidArgument, "{}: cannot resize the empty axis {}",
                node.describe(), d);
    taps[d] = axis_taps(at, x.dim(d), plan.out[d], plan.scales[d], plan.roi_start[d],
                        plan.roi_end[d]);
  }
  Tensor& out = ctx.make_output(0, dt, plan.out);
  if (out.numel() == 0) return;
  std::vector<float> cur = to_floats(x);
  Shape cur_shape = x.shape();
  for (size_t d = rank; d-- > 0;) {
    if (taps[d].identity) continue;
    cur = apply_axis(cur, cur_shape, d, taps[d], plan.out[d]);
  }
  if (at.coord == CoordMode::kTfCropAndResize) {
    // Any axis outside the input: the whole output point is extrapolated.
    const auto strides = strides_of(plan.out);
    for (size_t d = 0; d < rank; ++d) {
      if (std::none_of(taps[d].outside.begin(), taps[d].outside.end(), [](uint8_t b) { return b; }))
        continue;
      for (int64_t i = 0; i < out.numel(); ++i)
        if (taps[d].outside[(i / strides[d]) % plan.out[d]]) cur[i] = at.extrapolation_value;
    }
  }
  if (dt == DataType::kFloat32) {
    std::memcpy(out.raw(), cur.data(), cur.size() * sizeof(float));
    return;
  }
  const size_t esz = element_bytes(dt, node);
  uint8_t* dst = out.data<uint8_t>();
  const bool integral = dtype_is_integer(dt);
  for (size_t i = 0; i < cur.size(); ++i)
    store_from_double(dt, dst + i * esz, integral ? std::nearbyint(cur[i]) : cur[i]);
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
    std::vector<std::vector<int64_t>> tables(rank);
    for (size_t d = 0; d < rank; ++d) {
      const int64_t in = x.dim(d), out = plan.out[d];
      TRT_CHECK(in > 0 || out == 0, ErrorCode::kInvalidArgument,
                "{}: cannot resize the empty axis {}", node.describe(), d);
      for (int64_t o = 0; o < out; ++o) {
        const double c = ops::resize_coordinate(at.coord, static_cast<double>(o), plan.scales[d],
                                                out, in, plan.roi_start[d], plan.roi_end[d]);
        if (at.coord == CoordMode::kTfCropAndResize &&
            (c < 0 || c > static_cast<double>(in - 1))) {
          tables[d].push_back(kFill);
          continue;
        }
        const int64_t i = ops::resize_nearest_index(at.nearest, c, plan.scales[d] < 1.0);
        tables[d].push_back(std::clamp<int64_t>(i, 0, in - 1) * strides[d]);
      }
    }
    uint64_t fill = 0;
    if (at.coord == CoordMode::kTfCropAndResize)
      store_from_double(x0.dtype(), &fill, at.extrapolation_value);
    Tensor out(x.dtype(), plan.out);
    if (out.numel() > 0) gather_separable(x.raw(), out.raw(), esz, plan.out, tables, &fill);
    return std::vector<Tensor>{out};
  });
  ctx.outputs[0] = std::move(outs[0]);
}

void resize_kernel(KernelContext& ctx) {
  const auto& node = ctx.node;
  const ops::ResizeAttrs at = ops::resize_attrs(node, ctx.opset);
  const ops::ResizeInputs ri = ops::resize_inputs(node, ctx.opset);
  auto in = [&](int i) -> const Tensor* { return i >= 0 && ctx.has_input(i) ? ctx.inputs[i] : nullptr; };
  const Tensor& x = ctx.input(0);
  const ops::ResizePlan plan =
      ops::resize_plan(node, ctx.opset, x.shape(), in(ri.roi), in(ri.scales), in(ri.sizes));
  if (at.mode == ResizeMode::kNearest) return nearest(ctx, at, plan);
  interpolate(ctx, at, plan);
}

}  // namespace

void register_resize_kernels(KernelRegistry& r) {
  r.add({"Resize", "", resize_kernel});
  r.add({"Upsample", "", resize_kernel});
}

}  // namespace trtutils::cpu
