// Resize (opset 10..19+) and Upsample (opset 7..9) on the GPU, with the CPU kernel's semantics
// (ops/tensor_shapes.h: the plan, per-axis coordinates and linear taps are the same functions):
// nearest for every dtype (an index gather), linear for float32 / float16 / bfloat16 with at
// most 3 resized axes before the last (the CPU kernel's summation order). Cubic is refused
// (kNotSupported: run such models on the cpu backend). The per-axis tables are computed on the
// host and uploaded once per input shape (the scales / sizes inputs are read on the host).
#include <cstring>

#include "backends/cpu/copy_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/tensor_shapes.h"

namespace trtutils::cuda {

namespace {

class ResizeOp : public GpuOp {
 public:
  explicit ResizeOp(const ir::Node& node, int64_t opset)
      : attrs_(ops::resize_attrs(node, opset)), inputs_(ops::resize_inputs(node, opset)) {
    TRT_CHECK(attrs_.mode != ops::ResizeMode::kCubic, ErrorCode::kNotSupported,
              "{}: cubic Resize has no CUDA kernel; run the model with the cpu backend",
              node.describe());
  }
  std::string kernel() const override {
    return attrs_.mode == ops::ResizeMode::kLinear ? "CUDA kernel (linear)"
                                                   : "CUDA kernel (nearest)";
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    auto host_input = [&](int i) -> const Tensor* {
      if (i < 0 || static_cast<size_t>(i) >= in.size() || !in[i]) return nullptr;
      return &ctx.host(*in[i]);
    };
    const ops::ResizePlan plan =
        ops::resize_plan(node, ctx.opset, x.shape, host_input(inputs_.roi),
                         host_input(inputs_.scales), host_input(inputs_.sizes));
    const size_t rank = x.shape.size();
    TRT_CHECK(rank <= static_cast<size_t>(k::kMaxRank), ErrorCode::kNotSupported,
              "{}: Resize of rank {} exceeds the CUDA kernels' {}", node.describe(), rank,
              k::kMaxRank);
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), x.dtype, plan.out);
    const int64_t n = shape_numel(plan.out);
    if (n == 0) return;
    for (size_t d = 0; d < rank; ++d)
      TRT_CHECK_ARG(x.shape[d] > 0, "{}: cannot resize the empty axis {}", node.describe(), d);
    if (attrs_.mode == ops::ResizeMode::kNearest) {
      run_nearest(ctx, x, plan, px, py, n);
    } else {
      run_linear(ctx, x, plan, px, py, n);
    }
  }

 private:
  // The tables for this input shape and plan, uploaded once (a changed shape re-uploads; never
  // under graph capture, whose shapes are those of the eager run before it).
  bool cached(const Shape& in, const ops::ResizePlan& plan) const {
    return tables_ && in == in_ && plan.out == out_ && plan.scales == scales_ &&
           plan.roi_start == roi_start_ && plan.roi_end == roi_end_;
  }
  void remember(const Shape& in, const ops::ResizePlan& plan) {
    in_ = in;
    out_ = plan.out;
    scales_ = plan.scales;
    roi_start_ = plan.roi_start;
    roi_end_ = plan.roi_end;
  }

  void run_nearest(RunContext& ctx, const Value& x, const ops::ResizePlan& plan, const void* px,
                   void* py, int64_t n) {
    const size_t rank = x.shape.size();
    if (!cached(x.shape, plan)) {
      TRT_CHECK(!ctx.capturing, ErrorCode::kInternal, "{}: Resize tables change under capture",
                ctx.node->describe());
      const auto strides = strides_of(x.shape);
      std::vector<int64_t> all;
      std::vector<size_t> start(rank);
      for (size_t d = 0; d < rank; ++d) {
        const int64_t len_in = x.shape[d], len_out = plan.out[d];
        const ops::AxisCoords c = ops::axis_coords(attrs_, len_in, len_out, plan.scales[d],
                                                   plan.roi_start[d], plan.roi_end[d]);
        start[d] = all.size();
        for (int64_t o = 0; o < len_out; ++o) {
          if (c.outside[o]) {
            all.push_back(-1);
            continue;
          }
          int64_t i =
              c.identity ? o
                         : ops::resize_nearest_index(attrs_.nearest, c.x[o], plan.scales[d] < 1.0f);
          i = std::min(std::max<int64_t>(i, 0), len_in - 1);
          all.push_back(i * strides[d]);
        }
      }
      tables_ = upload_private(all.data(), all.size() * sizeof(int64_t));
      nearest_ = {};
      nearest_.rank = static_cast<int>(rank);
      for (size_t d = 0; d < rank; ++d) {
        nearest_.out[d] = plan.out[d];
        nearest_.table[d] = static_cast<const int64_t*>(tables_.get()) + start[d];
      }
      remember(x.shape, plan);
    }
    uint64_t fill = 0;
    if (attrs_.coord == ops::CoordMode::kTfCropAndResize)
      cpu::store_from_double(x.dtype, &fill, attrs_.extrapolation_value);
    const size_t esz = static_cast<size_t>(dtype_bits(x.dtype) / 8);
    TRT_CHECK(dtype_bits(x.dtype) % 8 == 0 && x.dtype != DataType::kString,
              ErrorCode::kNotSupported, "{}: Resize of dtype {} is not supported on CUDA",
              ctx.node->describe(), dtype_name(x.dtype));
    ctx.check(k::resize_nearest(esz, px, py, nearest_, n, fill, ctx.stream), "Resize");
  }

  void run_linear(RunContext& ctx, const Value& x, const ops::ResizePlan& plan, const void* px,
                  void* py, int64_t n) {
    const ir::Node& node = *ctx.node;
    require_float(node, x.dtype, "input X");
    const size_t rank = x.shape.size();
    if (!cached(x.shape, plan)) {
      TRT_CHECK(!ctx.capturing, ErrorCode::kInternal, "{}: Resize tables change under capture",
                node.describe());
      // Per resized axis: i1, i2 (int64), then w1, w2 (float), then outside (bytes), packed in
      // one buffer with 8-byte aligned sections.
      struct Section {
        size_t i1, i2, w1, w2, outside;
      };
      std::vector<uint8_t> bytes;
      auto put = [&](const void* p, size_t size) {
        const size_t at = (bytes.size() + 7) / 8 * 8;
        bytes.resize(at + size);
        if (size) std::memcpy(bytes.data() + at, p, size);
        return at;
      };
      std::vector<Section> sec(rank);
      std::vector<bool> resized(rank, false);
      int outer = 0;
      for (size_t d = 0; d < rank; ++d) {
        const ops::AxisCoords c = ops::axis_coords(attrs_, x.shape[d], plan.out[d], plan.scales[d],
                                                   plan.roi_start[d], plan.roi_end[d]);
        if (c.identity) continue;
        resized[d] = true;
        if (d + 1 < rank) ++outer;
        const ops::LinearTaps t = ops::linear_taps(c, x.shape[d]);
        sec[d].i1 = put(t.i1.data(), t.i1.size() * sizeof(int64_t));
        sec[d].i2 = put(t.i2.data(), t.i2.size() * sizeof(int64_t));
        sec[d].w1 = put(t.w1.data(), t.w1.size() * sizeof(float));
        sec[d].w2 = put(t.w2.data(), t.w2.size() * sizeof(float));
        sec[d].outside = put(c.outside.data(), c.outside.size());
      }
      TRT_CHECK(outer <= 3, ErrorCode::kNotSupported,
                "{}: linear Resize of {} axes before the last has no CUDA kernel (at most 3)",
                node.describe(), outer);
      if (bytes.empty()) bytes.resize(8);
      tables_ = upload_private(bytes.data(), bytes.size());
      const auto* base = static_cast<const uint8_t*>(tables_.get());
      linear_ = {};
      linear_.rank = static_cast<int>(rank);
      const auto strides = strides_of(x.shape);
      for (size_t d = 0; d < rank; ++d) {
        linear_.out[d] = plan.out[d];
        linear_.in_strides[d] = strides[d];
        linear_.resized[d] = resized[d];
        if (!resized[d]) continue;
        linear_.i1[d] = reinterpret_cast<const int64_t*>(base + sec[d].i1);
        linear_.i2[d] = reinterpret_cast<const int64_t*>(base + sec[d].i2);
        linear_.w1[d] = reinterpret_cast<const float*>(base + sec[d].w1);
        linear_.w2[d] = reinterpret_cast<const float*>(base + sec[d].w2);
        linear_.outside[d] = base + sec[d].outside;
      }
      linear_.extrapolation = attrs_.extrapolation_value;
      remember(x.shape, plan);
    }
    ctx.check(k::resize_linear(x.dtype, px, py, linear_, n, ctx.stream), "Resize");
  }

  ops::ResizeAttrs attrs_;
  ops::ResizeInputs inputs_;
  std::shared_ptr<void> tables_;
  Shape in_, out_;
  std::vector<float> scales_, roi_start_, roi_end_;
  k::ResizeNearestDesc nearest_;
  k::ResizeLinearDesc linear_;
};

}  // namespace

void register_resize_ops(OpTable& t) {
  for (const char* op : {"Resize", "Upsample"})
    t[op] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
      return std::make_unique<ResizeOp>(b.node, b.opset);
    };
}

}  // namespace trtutils::cuda
