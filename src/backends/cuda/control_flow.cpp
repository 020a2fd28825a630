// If and Loop with their bodies on the GPU, the host driving the control flow (contract:
// control_flow.h). Checks and messages follow the CPU kernel's (engine/session.cpp).
#include "backends/cuda/control_flow.h"

#include <algorithm>
#include <limits>
#include <map>

namespace trtutils::cuda {

namespace {

// A loop with neither M nor a condition that ever turns false stops here (the CPU's limit).
constexpr int64_t kMaxLoopIterations = int64_t{1} << 24;

// A value of the parent as a body input: the same device / host memory, not a constant of the
// body (a constant's upload belongs to the executor holding it).
Value shared_value(const Value& v) {
  Value r = v;
  r.constant = false;
  return r;
}

Value host_value(Tensor t) {
  Value v;
  v.dtype = t.dtype();
  v.shape = t.shape();
  v.host = std::move(t);
  return v;
}

// A one-value tensor (condition, trip count) on the host: a small download when on the device.
const Tensor& host_scalar(RunContext& ctx, const ir::Node& node, Value& v, const char* what) {
  const Tensor& t = ctx.host(v);
  TRT_CHECK_ARG(t.numel() == 1, "{}: {} must hold one value, got {}", node.describe(), what,
                shape_str(t.shape()));
  return t;
}

std::unique_ptr<SubgraphExecutor> plan_body(const ir::Node& node, const char* attr,
                                            const std::vector<ir::OpsetImport>& opsets,
                                            const ExecutorOptions& options, const OuterScope& outer,
                                            const std::vector<size_t>& host_formals) {
  const ir::Attribute* a = node.attr(attr);
  TRT_CHECK_ARG(a && a->g, "{}: attribute {} is missing", node.describe(), attr);
  try {
    return std::make_unique<SubgraphExecutor>(*a->g, opsets, options, outer, host_formals);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotSupported) throw;
    throw Error(ErrorCode::kNotSupported, fmt::format("its {}: {}", attr, e.what()));
  }
}

// "2 gpu, 1 cpu (fallback)": where a body's nodes run.
std::string placement_summary(const SubgraphExecutor& body) {
  std::map<std::string, int> count;
  for (const auto& p : body.node_placement()) ++count[p];
  std::string s;
  for (const auto& [where, n] : count) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", n, where);
  return s.empty() ? "no nodes" : s;
}

// What If and Loop share: the bodies' enclosing values picked from the op's inputs (the node's
// own, then one per Node::implicit_inputs() name), and no CUDA graph capture.
class ControlFlowOp : public GpuOp {
 public:
  void want_layouts(const RunContext&, const std::vector<Value*>&,
                    std::vector<Layout>& want) const override {
    std::fill(want.begin(), want.end(), Layout::kAny);  // the bodies convert what they need
  }

 protected:
  explicit ControlFlowOp(const ir::Node& node)
      : implicit_(node.implicit_inputs()), explicit_(node.inputs.size()) {}

  // Per outer input of `body`, its index among the op's inputs.
  std::vector<size_t> slots(const SubgraphExecutor& body) const {
    std::vector<size_t> r;
    for (const std::string& name : body.outer_inputs()) {
      auto it = std::lower_bound(implicit_.begin(), implicit_.end(), name);
      TRT_INTERNAL_CHECK(it != implicit_.end() && *it == name);
      r.push_back(explicit_ + static_cast<size_t>(it - implicit_.begin()));
    }
    return r;
  }
  static void add_outer(const std::vector<size_t>& slots, const std::vector<Value*>& in,
                        std::vector<Value>& inputs) {
    for (size_t k : slots) {
      TRT_INTERNAL_CHECK(k < in.size() && in[k] && in[k]->defined());
      inputs.push_back(shared_value(*in[k]));
    }
  }
  static void refuse_capture(const RunContext& ctx, const ir::Node& node) {
    TRT_CHECK(!ctx.capturing, ErrorCode::kNotSupported,
              "{}: control flow reads its condition on the host (not capturable in a CUDA graph)",
              node.describe());
  }

 private:
  std::vector<std::string> implicit_;  // sorted, as Node::implicit_inputs() gives them
  size_t explicit_;
};

class IfOp : public ControlFlowOp {
 public:
  IfOp(const ir::Node& node, const std::vector<ir::OpsetImport>& opsets, const ExecutorOptions& o,
       const OuterScope& outer)
      : ControlFlowOp(node),
        then_(plan_body(node, "then_branch", opsets, o, outer, {})),
        else_(plan_body(node, "else_branch", opsets, o, outer, {})),
        then_slots_(slots(*then_)),
        else_slots_(slots(*else_)) {}

  std::string kernel() const override {
    return fmt::format("host-driven If (then_branch: {}; else_branch: {})",
                       placement_summary(*then_), placement_summary(*else_));
  }

  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    refuse_capture(ctx, node);
    TRT_CHECK_ARG(!in.empty() && in[0], "{}: the condition is missing", node.describe());
    const bool then = host_scalar(ctx, node, *in[0], "the condition").at_double(0) != 0.0;
    std::vector<Value> inputs;
    add_outer(then ? then_slots_ : else_slots_, in, inputs);
    std::vector<Value> outs = (then ? *then_ : *else_).run(ctx, inputs);
    TRT_CHECK_ARG(outs.size() == out.size(), "{}: {} has {} outputs, the node {}", node.describe(),
                  then ? "then_branch" : "else_branch", outs.size(), out.size());
    for (size_t k = 0; k < out.size(); ++k)
      if (out[k]) *out[k] = std::move(outs[k]);
  }

 private:
  std::unique_ptr<SubgraphExecutor> then_, else_;
  std::vector<size_t> then_slots_, else_slots_;
};

// One scan output's iterations stacked along a new axis 0 on the device; without iterations an
// empty [0] of the body output's declared dtype (float32 when unknown), as the CPU makes it.
void stack_iterations(RunContext& ctx, const ir::Node& node, const std::vector<Value>& parts,
                      DataType declared, Value& y) {
  if (parts.empty()) {
    y = host_value(Tensor(declared == DataType::kUndefined ? DataType::kFloat32 : declared, {0}));
    return;
  }
  const Value& first = parts[0];
  for (const Value& p : parts)
    TRT_CHECK_ARG(p.shape == first.shape && p.dtype == first.dtype,
                  "{}: a scan output changes shape between iterations ({} and {})", node.describe(),
                  shape_str(first.shape), shape_str(p.shape));
  Shape shape = first.shape;
  shape.insert(shape.begin(), static_cast<int64_t>(parts.size()));
  auto* dst = static_cast<uint8_t*>(ctx.make(y, first.dtype, shape));
  const size_t bytes = first.nbytes();
  if (bytes == 0) return;
  for (const Value& p : parts) {
    const bool on_device = p.ptr != nullptr;
    TRT_CUDA_CHECK(cudaMemcpyAsync(dst, on_device ? p.ptr : p.host.raw(), bytes,
                                   on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice,
                                   ctx.stream));
    dst += bytes;
  }
}

class LoopOp : public ControlFlowOp {
 public:
  LoopOp(const ir::Node& node, const std::vector<ir::OpsetImport>& opsets, const ExecutorOptions& o,
         const OuterScope& outer)
      : ControlFlowOp(node),
        body_(plan_body(node, "body", opsets, o, outer, {0, 1})),  // i and cond: host values
        slots_(slots(*body_)),
        carried_(node.inputs.size() >= 2 ? node.inputs.size() - 2 : 0) {
    const ir::Graph& body = *node.attr("body")->g;
    TRT_CHECK_ARG(body.inputs.size() == carried_ + 2 &&
                      body.outputs.size() == node.outputs.size() + 1 &&
                      node.outputs.size() >= carried_,
                  "{}: the body's {} inputs and {} outputs do not match {} loop-carried values",
                  node.describe(), body.inputs.size(), body.outputs.size(), carried_);
    for (size_t s = 1 + carried_; s < body.outputs.size(); ++s)
      scan_dtypes_.push_back(body.outputs[s].dtype);
  }

  std::string kernel() const override {
    return fmt::format("host-driven Loop (body: {})", placement_summary(*body_));
  }

  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    refuse_capture(ctx, node);
    int64_t trip = std::numeric_limits<int64_t>::max();
    if (!in.empty() && in[0]) trip = host_scalar(ctx, node, *in[0], "M").to_int64_vector()[0];
    bool keep = true;
    if (in.size() > 1 && in[1]) keep = host_scalar(ctx, node, *in[1], "cond").at_double(0) != 0.0;
    std::vector<Value> carried;
    for (size_t k = 0; k < carried_; ++k) {
      TRT_CHECK_ARG(in[2 + k], "{}: loop-carried input {} is missing", node.describe(), k);
      carried.push_back(shared_value(*in[2 + k]));
    }
    std::vector<std::vector<Value>> scans(scan_dtypes_.size());
    for (int64_t i = 0; i < trip && keep; ++i) {
      TRT_CHECK_ARG(i < kMaxLoopIterations, "{}: the loop did not end after {} iterations",
                    node.describe(), kMaxLoopIterations);
      std::vector<Value> outs = body_->run(ctx, iteration_inputs(i, carried, in));
      keep = host_scalar(ctx, node, outs[0], "the body's condition").at_double(0) != 0.0;
      for (size_t k = 0; k < carried_; ++k) carried[k] = std::move(outs[1 + k]);
      for (size_t s = 0; s < scans.size(); ++s)
        scans[s].push_back(std::move(outs[1 + carried_ + s]));
    }
    for (size_t k = 0; k < carried_; ++k)
      if (out[k]) *out[k] = std::move(carried[k]);
    for (size_t s = 0; s < scans.size(); ++s)
      if (out[carried_ + s])
        stack_iterations(ctx, node, scans[s], scan_dtypes_[s], *out[carried_ + s]);
  }

 private:
  // The body's inputs for iteration i: i and cond (true) on the host, the loop-carried values,
  // the enclosing values.
  std::vector<Value> iteration_inputs(int64_t i, const std::vector<Value>& carried,
                                      const std::vector<Value*>& in) const {
    std::vector<Value> inputs;
    inputs.push_back(host_value(Tensor::from_vector<int64_t>(DataType::kInt64, {}, {i})));
    Tensor cond(DataType::kBool, {});
    static_cast<uint8_t*>(cond.raw())[0] = 1;
    inputs.push_back(host_value(cond));
    inputs.insert(inputs.end(), carried.begin(), carried.end());
    add_outer(slots_, in, inputs);
    return inputs;
  }

  std::unique_ptr<SubgraphExecutor> body_;
  std::vector<size_t> slots_;
  size_t carried_;
  std::vector<DataType> scan_dtypes_;  // the body's declared scan output dtypes
};

bool is_loop(const ir::Node& node) {
  return node.op_type == "Loop";
}

}  // namespace

std::string make_control_flow_op(const ir::Node& node, const std::vector<ir::OpsetImport>& opsets,
                                 const ExecutorOptions& options, const OuterScope& outer,
                                 std::unique_ptr<GpuOp>& op) {
  try {
    if (is_loop(node))
      op = std::make_unique<LoopOp>(node, opsets, options, outer);
    else
      op = std::make_unique<IfOp>(node, opsets, options, outer);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotSupported) throw;
    return e.what();
  }
  return "";
}

void control_flow_coverage(const ir::Node& node, const std::vector<ir::OpsetImport>& opsets,
                           const OuterScope& outer, GpuCoverage& cov) {
  const bool loop = is_loop(node);
  const std::vector<const char*> attrs =
      loop ? std::vector<const char*>{"body"}
           : std::vector<const char*>{"then_branch", "else_branch"};
  std::vector<FallbackNode> inner;
  for (const char* attr : attrs) {
    const ir::Attribute* a = node.attr(attr);
    if (!a || !a->g) {
      cov.unsupported.push_back(
          fmt::format("{} (op {}): attribute {} is missing", node.describe(), node.op_type, attr));
      return;
    }
    const BodyModel b = make_body_model(*a->g, opsets, outer,
                                        loop ? std::vector<size_t>{0, 1} : std::vector<size_t>{});
    const GpuCoverage sub = gpu_coverage(b.model, b.host_inputs);
    if (!sub.unsupported.empty()) {
      cov.fallback.push_back(
          {node.name, node.op_type,
           fmt::format("{} (its {}: {})", kControlFlowReason, attr, sub.unsupported[0])});
      return;
    }
    for (const auto& f : sub.fallback) inner.push_back({node.name + "/" + f.node, f.op, f.reason});
  }
  cov.fallback.insert(cov.fallback.end(), inner.begin(), inner.end());
}

}  // namespace trtutils::cuda
