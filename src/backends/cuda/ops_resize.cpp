// Resize (opset 10..19+) and Upsample (opset 7..9) on the GPU, with the CPU kernel's semantics
// (ops/tensor_shapes.h: the plan, per-axis coordinates and linear taps are the same functions):
// nearest for every dtype (an index gather), linear for float32 / float16 / bfloat16 with at
// most 3 resized axes before the last (the CPU kernel's summation order), cubic for the same
// dtypes as the CPU's separable passes (resize_cubic_kernels.cu: one per resized axis, innermost
// first, float32 in between). The per-axis tables are computed on the host and uploaded once per
// input shape (the scales / sizes inputs are read on the host).
#include <algorithm>
#include <cstring>

#include "backends/cpu/copy_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/resize_cubic_kernels.h"
#include "ops/tensor_shapes.h"

namespace trtutils::cuda {

namespace {

// Host tables packed into one buffer for one upload, each section 8-byte aligned.
class TableBytes {
 public:
  // Appends size bytes from p; returns the section's offset.
  size_t put(const void* p, size_t size) {
    const size_t at = (bytes_.size() + 7) / 8 * 8;
    bytes_.resize(at + size);
    if (size) std::memcpy(bytes_.data() + at, p, size);
    return at;
  }
  bool empty() const { return bytes_.empty(); }
  void resize(size_t n) { bytes_.resize(n); }
  const uint8_t* data() const { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }

 private:
  std::vector<uint8_t> bytes_;
};

class ResizeOp : public GpuOp {
 public:
  explicit ResizeOp(const ir::Node& node, int64_t opset)
      : attrs_(ops::resize_attrs(node, opset)), inputs_(ops::resize_inputs(node, opset)) {}
  std::string kernel() const override {
    return attrs_.mode == ops::ResizeMode::kLinear  ? "CUDA kernel (linear)"
           : attrs_.mode == ops::ResizeMode::kCubic ? "CUDA kernel (cubic)"
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
    } else if (attrs_.mode == ops::ResizeMode::kCubic) {
      run_cubic(ctx, x, plan, px, py, n);
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
      TableBytes bytes;
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
        sec[d].i1 = bytes.put(t.i1.data(), t.i1.size() * sizeof(int64_t));
        sec[d].i2 = bytes.put(t.i2.data(), t.i2.size() * sizeof(int64_t));
        sec[d].w1 = bytes.put(t.w1.data(), t.w1.size() * sizeof(float));
        sec[d].w2 = bytes.put(t.w2.data(), t.w2.size() * sizeof(float));
        sec[d].outside = bytes.put(c.outside.data(), c.outside.size());
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

  // Per resized axis, innermost first: its taps (4 per output coordinate) in the uploaded tables.
  struct CubicAxis {
    size_t axis = 0;
    const int64_t* index = nullptr;
    const float* weight = nullptr;
  };

  // The taps of every resized axis and the tf_crop_and_resize mask, uploaded in one buffer.
  void upload_cubic_tables(const Value& x, const ops::ResizePlan& plan) {
    const size_t rank = x.shape.size();
    TableBytes bytes;
    std::vector<std::pair<size_t, size_t>> taps;  // index / weight offsets, innermost axis first
    std::vector<size_t> outside(rank, SIZE_MAX);
    std::vector<size_t> axes;
    for (size_t d = rank; d-- > 0;) {
      const ops::AxisCoords c = ops::axis_coords(attrs_, x.shape[d], plan.out[d], plan.scales[d],
                                                 plan.roi_start[d], plan.roi_end[d]);
      if (std::any_of(c.outside.begin(), c.outside.end(), [](uint8_t b) { return b != 0; }))
        outside[d] = bytes.put(c.outside.data(), c.outside.size());
      if (c.identity) continue;
      const ops::CubicTaps t = ops::cubic_taps(attrs_, c, x.shape[d]);
      axes.push_back(d);
      taps.emplace_back(bytes.put(t.index.data(), t.index.size() * sizeof(int64_t)),
                        bytes.put(t.weight.data(), t.weight.size() * sizeof(float)));
    }
    if (bytes.empty()) bytes.resize(8);
    tables_ = upload_private(bytes.data(), bytes.size());
    const auto* base = static_cast<const uint8_t*>(tables_.get());
    cubic_.clear();
    for (size_t k = 0; k < axes.size(); ++k)
      cubic_.push_back({axes[k], reinterpret_cast<const int64_t*>(base + taps[k].first),
                        reinterpret_cast<const float*>(base + taps[k].second)});
    outside_ = {};
    outside_.rank = static_cast<int>(rank);
    any_outside_ = false;
    for (size_t d = 0; d < rank; ++d) {
      outside_.out[d] = plan.out[d];
      if (outside[d] == SIZE_MAX) continue;
      outside_.outside[d] = base + outside[d];
      any_outside_ = true;
    }
  }

  void run_cubic(RunContext& ctx, const Value& x, const ops::ResizePlan& plan, const void* px,
                 void* py, int64_t n) {
    const ir::Node& node = *ctx.node;
    require_float(node, x.dtype, "input X");  // rank: checked in run() (k::kMaxRank)
    if (!cached(x.shape, plan)) {
      TRT_CHECK(!ctx.capturing, ErrorCode::kInternal, "{}: Resize tables change under capture",
                node.describe());
      upload_cubic_tables(x, plan);
      remember(x.shape, plan);
    }
    if (cubic_.empty()) {  // no axis resized: the values as they are
      ctx.check(cudaMemcpyAsync(py, px, static_cast<size_t>(n) * dtype_bits(x.dtype) / 8,
                                cudaMemcpyDeviceToDevice, ctx.stream),
                "Resize");
    } else {
      run_cubic_passes(ctx, x, plan, px, py);
    }
    if (any_outside_)
      ctx.check(
          k::resize_fill_outside(x.dtype, py, outside_, attrs_.extrapolation_value, n, ctx.stream),
          "Resize");
  }

  // One pass per resized axis, innermost first, through two float32 buffers.
  void run_cubic_passes(RunContext& ctx, const Value& x, const ops::ResizePlan& plan,
                        const void* px, void* py) {
    Shape cur = x.shape;
    int64_t most = 0;  // the largest intermediate
    for (size_t k = 0; k + 1 < cubic_.size(); ++k) {
      cur[cubic_[k].axis] = plan.out[cubic_[k].axis];
      most = std::max(most, shape_numel(cur));
    }
    std::shared_ptr<void> buf[2];
    for (auto& b : buf) b = ctx.scratch(static_cast<size_t>(std::max<int64_t>(most, 1)) * 4);
    cur = x.shape;
    for (size_t k = 0; k < cubic_.size(); ++k) {
      const size_t d = cubic_[k].axis;
      k::CubicPass p;
      p.outer = shape_numel(Shape(cur.begin(), cur.begin() + static_cast<std::ptrdiff_t>(d)));
      p.inner = shape_numel(Shape(cur.begin() + static_cast<std::ptrdiff_t>(d) + 1, cur.end()));
      p.n = cur[d];
      p.out_len = plan.out[d];
      p.index = cubic_[k].index;
      p.weight = cubic_[k].weight;
      const bool first = k == 0, last = k + 1 == cubic_.size();
      ctx.check(k::resize_cubic_pass(first ? x.dtype : DataType::kFloat32,
                                     first ? px : buf[(k + 1) % 2].get(),
                                     last ? x.dtype : DataType::kFloat32,
                                     last ? py : buf[k % 2].get(), p, ctx.stream),
                "Resize");
      cur[d] = plan.out[d];
    }
  }

  ops::ResizeAttrs attrs_;
  ops::ResizeInputs inputs_;
  std::vector<CubicAxis> cubic_;
  k::OutsideMask outside_;
  bool any_outside_ = false;
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
