// Rewriting a graph from a Placement and a ScaleTable: activation Q/DQ pairs, quantized
// weight initializers feeding DequantizeLinear.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "core/check.h"
#include "ir/graph_builder.h"
#include "quantize/qdq.h"

namespace trtutils::quantize {

namespace {

class Namer {
 public:
  explicit Namer(const ir::Graph& g) {
    for (const auto& n : g.nodes) {
      used_.insert(n.name);
      for (const auto& o : n.outputs) used_.insert(o);
      for (const auto& i : n.inputs) used_.insert(i);
    }
    for (const auto& v : g.inputs) used_.insert(v.name);
    for (const auto& [n, t] : g.initializers) used_.insert(n);
  }
  std::string operator()(const std::string& prefix) {
    std::string c = prefix;
    for (int i = 1; used_.count(c); ++i) c = prefix + "_" + std::to_string(i);
    used_.insert(c);
    return c;
  }

 private:
  std::unordered_set<std::string> used_;
};

Tensor scalar_f32(float v) {
  return Tensor::from_vector<float>(DataType::kFloat32, {}, {v});
}

// A zero point of `dtype` with `shape` (all zeros: Tensor storage is zero-initialised, and 0 is
// the bit pattern of +0 in e4m3fn and of 0 in int4).
Tensor zero_point(DataType dtype, Shape shape) {
  return Tensor(dtype, std::move(shape));
}

// Quantizes float v (already divided by the scale) into element i of `q`.
void store_quantized(Tensor& q, int64_t i, float v) {
  if (q.dtype() == DataType::kInt8) {
    q.data<int8_t>()[i] = static_cast<int8_t>(std::clamp(std::nearbyint(v), -128.0f, 127.0f));
  } else if (q.dtype() == DataType::kFloat8E4M3FN) {
    q.data<float8_e4m3fn>()[i] = float_to_e4m3fn(v, true);
  } else if (q.dtype() == DataType::kInt4) {
    const int r = static_cast<int>(std::clamp(std::nearbyint(v), -8.0f, 7.0f));
    uint8_t& b = q.data<uint8_t>()[i / 2];
    const uint8_t nib = static_cast<uint8_t>(r & 0xF);
    b = (i % 2 == 0) ? static_cast<uint8_t>((b & 0xF0) | nib)
                     : static_cast<uint8_t>((b & 0x0F) | (nib << 4));
  } else {
    TRT_THROW(ErrorCode::kInternal, "store_quantized: unexpected dtype {}", dtype_name(q.dtype()));
  }
}

// v / scale as stored and read back (in units of the scale).
float dequant_value(DataType dtype, float v) {
  if (dtype == DataType::kInt8) return std::clamp(std::nearbyint(v), -128.0f, 127.0f);
  if (dtype == DataType::kFloat8E4M3FN) return e4m3fn_to_float(float_to_e4m3fn(v, true));
  if (dtype == DataType::kInt4) return std::clamp(std::nearbyint(v), -8.0f, 7.0f);
  return v;
}

struct QuantizedWeight {
  Tensor q, scale, zp;
  std::vector<float> error;  // dequantized - original, element by element
};

// Scale groups of w: per tensor (axis -1), per channel along axis, or blocks of `block` along
// axis. w viewed as [outer, axis_len, inner].
// awq_clip: see ApplyOptions; `importance` (null: all 1) is indexed along `axis`.
// gptq_hessian (non-null, w 2-D): the weight is rounded by gptq_round with that K x K Hessian,
// K being w's axis k_axis.
QuantizedWeight quantize_weight(const Tensor& w, int64_t axis, int64_t block, QuantMode mode,
                                bool awq_clip, const std::vector<double>* importance,
                                const std::vector<float>* gptq_hessian = nullptr,
                                int64_t k_axis = 0, float min_scale = 0.0f,
                                int64_t* raised = nullptr) {
  const DataType qt = quant_mode_dtype(mode);
  const double qmax = quant_mode_qmax(mode);
  const std::vector<float> x = w.to_float_vector();
  const Shape& s = w.shape();
  int64_t outer = 1, alen = 1, inner = 1;
  if (axis >= 0) {
    for (int64_t d = 0; d < axis; ++d) outer *= s[d];
    alen = s[axis];
    for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  } else {
    inner = w.numel();
  }
  const int64_t nblk = block > 0 ? (alen + block - 1) / block : alen;
  Shape scale_shape;
  if (axis < 0) {
    scale_shape = {};
  } else if (block > 0) {
    scale_shape = s;
    scale_shape[axis] = nblk;
  } else {
    scale_shape = {alen};
  }
  QuantizedWeight r;
  r.q = Tensor(qt, s);
  r.scale = Tensor(DataType::kFloat32, scale_shape);
  r.zp = zero_point(qt, scale_shape);
  float* sc = r.scale.data<float>();
  // Element index for (o, a, i); scale index per layout.
  auto eidx = [&](int64_t o, int64_t a, int64_t i) { return (o * alen + a) * inner + i; };
  auto sidx = [&](int64_t o, int64_t a, int64_t i) -> int64_t {
    if (axis < 0) return 0;
    if (block > 0) return (o * nblk + a / block) * inner + i;
    return a;
  };
  const int64_t ns = std::max<int64_t>(1, r.scale.numel());
  std::vector<double> amax(ns, 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t a = 0; a < alen; ++a)
      for (int64_t i = 0; i < inner; ++i) {
        double& m = amax[sidx(o, a, i)];
        m = std::max(m, std::fabs(static_cast<double>(x[eidx(o, a, i)])));
      }
  for (int64_t k = 0; k < ns; ++k) sc[k] = amax[k] > 0 ? static_cast<float>(amax[k] / qmax) : 1.0f;
  if (awq_clip && block > 0) {
    // Per block, the clip ratio (1.0 down to 0.5) minimising the block's (activation-weighted)
    // squared error: E[(sum_k x_k (w_k - q_k))^2] ~ sum_k E[x_k^2] (w_k - q_k)^2 for
    // uncorrelated channels, so a channel with large activations keeps its weight precise.
    TRT_CHECK(!importance || static_cast<int64_t>(importance->size()) == alen, ErrorCode::kInternal,
              "awq_clip: {} activation channels for a weight of {} along axis {}",
              importance ? importance->size() : 0, alen, axis);
    std::vector<double> best_err(ns, std::numeric_limits<double>::infinity());
    std::vector<float> best(sc, sc + ns);
    for (int step = 0; step <= 10; ++step) {
      const double ratio = 1.0 - 0.05 * step;
      std::vector<double> err(ns, 0.0);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t a = 0; a < alen; ++a)
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t k = sidx(o, a, i);
            const float scl = amax[k] > 0 ? static_cast<float>(amax[k] * ratio / qmax) : 1.0f;
            const float v = x[eidx(o, a, i)];
            const float d = dequant_value(qt, v / scl) * scl - v;
            err[k] += (importance ? (*importance)[a] : 1.0) * static_cast<double>(d) * d;
          }
      for (int64_t k = 0; k < ns; ++k)
        if (err[k] < best_err[k]) {
          best_err[k] = err[k];
          best[k] = amax[k] > 0 ? static_cast<float>(amax[k] * ratio / qmax) : 1.0f;
        }
    }
    std::copy(best.begin(), best.end(), sc);
  }
  for (int64_t k = 0; k < ns; ++k)
    if (sc[k] < min_scale) {
      sc[k] = min_scale;
      if (raised) ++*raised;
    }
  // The values to store: w itself (round to nearest), or GPTQ's choice of grid points.
  std::vector<float> target;
  if (gptq_hessian && s.size() == 2) {
    std::vector<float> scale_of(x.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t a = 0; a < alen; ++a)
        for (int64_t i = 0; i < inner; ++i) scale_of[eidx(o, a, i)] = sc[sidx(o, a, i)];
    const int64_t kk = s[k_axis], nn = s[1 - k_axis];
    TRT_CHECK(static_cast<int64_t>(gptq_hessian->size()) == kk * kk, ErrorCode::kInternal,
              "gptq: Hessian of {} values for K = {}", gptq_hessian->size(), kk);
    // Element of w for (row = output channel, col = K index).
    auto at = [&](int64_t row, int64_t col) {
      return k_axis == 0 ? col * nn + row : row * kk + col;
    };
    std::vector<float> wnk(x.size());
    for (int64_t row = 0; row < nn; ++row)
      for (int64_t col = 0; col < kk; ++col) wnk[row * kk + col] = x[at(row, col)];
    const std::vector<float> qnk =
        gptq_round(wnk, nn, kk, *gptq_hessian, [&](float v, int64_t row, int64_t col) {
          const float scl = scale_of[at(row, col)];
          return dequant_value(qt, v / scl) * scl;
        });
    target.resize(x.size());
    for (int64_t row = 0; row < nn; ++row)
      for (int64_t col = 0; col < kk; ++col) target[at(row, col)] = qnk[row * kk + col];
  }
  const std::vector<float>& values = target.empty() ? x : target;
  r.error.resize(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t a = 0; a < alen; ++a)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t e = eidx(o, a, i);
        const float scl = sc[sidx(o, a, i)];
        store_quantized(r.q, e, values[e] / scl);
        // As DequantizeLinear computes, against the original weight.
        r.error[e] = dequant_value(qt, values[e] / scl) * scl - x[e];
      }
  return r;
}

// Per output channel, the mean output error E[sum (Wq - W) x] of node n whose weight (input 1,
// shape `ws`) has rounding error `err`, for input channel means `mean`; empty when the node's
// form is not one bias correction handles (see ApplyOptions::input_mean).
std::vector<double> weight_error_mean(const ir::Node& n, const Shape& ws,
                                      const std::vector<float>& err,
                                      const std::vector<double>& mean) {
  const auto m = static_cast<int64_t>(mean.size());
  std::vector<double> r;
  if (n.op_type == "Conv") {  // W [Cout, Cin/group, k...], X [N, Cin, ...]
    const int64_t group = n.attr_int("group", 1);
    if (ws.size() < 3 || group < 1 || ws[0] % group != 0 || ws[1] * group != m) return r;
    const int64_t cout = ws[0], cpg = ws[1], per = static_cast<int64_t>(err.size()) / cout,
                  ksz = per / cpg, opg = cout / group;
    r.assign(static_cast<size_t>(cout), 0.0);
    for (int64_t o = 0; o < cout; ++o) {
      double acc = 0;
      for (int64_t c = 0; c < cpg; ++c) {
        double e = 0;
        for (int64_t k = 0; k < ksz; ++k) e += err[static_cast<size_t>(o * per + c * ksz + k)];
        acc += e * mean[static_cast<size_t>((o / opg) * cpg + c)];
      }
      r[static_cast<size_t>(o)] = acc;
    }
    return r;
  }
  if (ws.size() != 2) return r;
  const bool gemm = n.op_type == "Gemm";
  if (!gemm && n.op_type != "MatMul") return r;
  const bool trans_b = gemm && n.attr_int("transB", 0) != 0;
  const int64_t k_len = trans_b ? ws[1] : ws[0], n_len = trans_b ? ws[0] : ws[1];
  if (k_len != m) return r;
  const double alpha = gemm ? n.attr_float("alpha", 1.0f) : 1.0;
  r.assign(static_cast<size_t>(n_len), 0.0);
  for (int64_t k = 0; k < k_len; ++k)
    for (int64_t j = 0; j < n_len; ++j)
      r[static_cast<size_t>(j)] +=
          static_cast<double>(err[static_cast<size_t>(trans_b ? j * k_len + k : k * n_len + j)]) *
          mean[static_cast<size_t>(k)];
  for (double& v : r) v *= alpha;
  return r;
}

// A float32 constant holding `b` (null: zeros of shape {n}) minus `shift / divisor` along its
// last axis (b has n elements, or 1: then broadcast to {n}).
Tensor shifted_bias(const Tensor* b, const std::vector<double>& shift, double divisor) {
  const auto n = static_cast<int64_t>(shift.size());
  Tensor r = b && b->numel() == n ? b->clone() : Tensor(DataType::kFloat32, {n});
  const float fill = b && b->numel() == 1 ? b->to_float_vector()[0] : 0.0f;
  float* d = r.data<float>();
  for (int64_t j = 0; j < n; ++j)
    d[j] = static_cast<float>((b && b->numel() == n ? static_cast<double>(d[j]) : fill) -
                              shift[static_cast<size_t>(j)] / divisor);
  return r;
}

bool is_f32_constant(const ir::Graph& g, const std::string& name) {
  const Tensor* t = g.initializer(name);
  return t && t->dtype() == DataType::kFloat32;
}

// Subtracts the weight error's output mean from node ni's bias (see ApplyOptions::input_mean).
// `reader` maps a tensor to the nodes that read it. Returns whether the node was corrected.
bool correct_bias(ir::Graph& g, size_t ni, const Shape& ws, const std::vector<float>& err,
                  const std::vector<double>& mean,
                  const std::unordered_map<std::string, std::vector<size_t>>& reader,
                  const std::unordered_set<std::string>& graph_outputs, Namer& name) {
  const std::vector<double> shift = weight_error_mean(g.nodes[ni], ws, err, mean);
  if (shift.empty()) return false;
  const auto n = static_cast<int64_t>(shift.size());
  ir::Node& node = g.nodes[ni];
  if (node.op_type == "Conv" || node.op_type == "Gemm") {
    const double beta = node.op_type == "Gemm" ? node.attr_float("beta", 1.0f) : 1.0;
    if (beta == 0) return false;
    const Tensor* b = nullptr;
    if (node.has_input(2)) {
      if (!is_f32_constant(g, node.inputs[2])) return false;
      b = g.initializer(node.inputs[2]);
      const Shape& bs = b->shape();
      // Conv B is [Cout]; Gemm C must broadcast along N only: [N], [1, N] or one value.
      const bool ok = b->numel() == 1 ? node.op_type == "Gemm"
                                      : b->numel() == n && bs.back() == n && bs.size() <= 2;
      if (!ok) return false;
    }
    Tensor nb = shifted_bias(b, shift, beta);
    const std::string bn = name(node.name + "_bias_corrected");
    g.initializers[bn] = std::move(nb);
    if (node.inputs.size() < 3) node.inputs.resize(3);
    node.inputs[2] = bn;
    return true;
  }
  // MatMul: the bias is the constant of the Add that alone reads the MatMul's output.
  const std::string& y = node.outputs.empty() ? std::string() : node.outputs[0];
  auto rd = reader.find(y);
  if (y.empty() || graph_outputs.count(y) || rd == reader.end() || rd->second.size() != 1)
    return false;
  ir::Node& add = g.nodes[rd->second[0]];
  if (add.op_type != "Add" || add.inputs.size() != 2) return false;
  const size_t bi = add.inputs[0] == y ? 1 : 0;
  if (add.inputs[1 - bi] != y || !is_f32_constant(g, add.inputs[bi])) return false;
  const Tensor* b = g.initializer(add.inputs[bi]);
  if (b->numel() != n || b->shape().empty() || b->shape().back() != n) return false;
  const std::string bn = name(add.inputs[bi] + "_bias_corrected");
  g.initializers[bn] = shifted_bias(b, shift, 1.0);
  add.inputs[bi] = bn;
  return true;
}

}  // namespace

std::optional<std::pair<std::string, int64_t>> bias_correction_input(const ir::Node& n,
                                                                     size_t weight_input) {
  if (weight_input != 1 || !n.has_input(0)) return std::nullopt;
  if (n.op_type == "Conv") return std::make_pair(n.inputs[0], int64_t{1});
  if (n.op_type == "Gemm")
    return std::make_pair(n.inputs[0], n.attr_int("transA", 0) != 0 ? int64_t{0} : int64_t{1});
  if (n.op_type == "MatMul") return std::make_pair(n.inputs[0], int64_t{-1});
  return std::nullopt;
}

ApplyStats apply_qdq(ir::Graph& g, const Placement& p, const ScaleTable& table,
                     const ApplyOptions& options) {
  ApplyStats st;
  Namer name(g);
  std::unordered_map<std::string, size_t> node_index;
  for (size_t i = 0; i < g.nodes.size(); ++i) node_index[g.nodes[i].name] = i;
  const DataType qt = quant_mode_dtype(options.mode);
  const double qmax = quant_mode_qmax(options.mode);
  std::vector<ir::Node> added;

  // Readers of each tensor (before any rewrite), for bias correction through a MatMul's Add.
  std::unordered_map<std::string, std::vector<size_t>> reader;
  std::unordered_set<std::string> graph_outputs;
  if (!options.input_mean.empty()) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (const auto& in : g.nodes[i].inputs)
        if (!in.empty()) reader[in].push_back(i);
    for (const auto& o : g.outputs) graph_outputs.insert(o.name);
  }

  // Weights: one DequantizeLinear per (tensor, axis, block), quantized when first met; its
  // uses are listed together so that bias correction sees the rounding error of each.
  using WeightKey = std::tuple<std::string, int64_t, int64_t>;
  std::vector<WeightKey> order;
  std::map<WeightKey, std::vector<const WeightQuant*>> uses_of;
  for (const auto& wq : p.weights) {
    auto key = std::make_tuple(wq.tensor, wq.axis, wq.block);
    auto [u, fresh] = uses_of.try_emplace(key);
    if (fresh) order.push_back(key);
    u->second.push_back(&wq);
  }
  for (const auto& key : order) {
    const std::vector<const WeightQuant*>& uses = uses_of.at(key);
    const WeightQuant& wq = *uses.front();
    const Tensor* w = g.initializer(wq.tensor);
    TRT_CHECK(w != nullptr, ErrorCode::kInternal, "weight '{}' is not an initializer", wq.tensor);
    auto imp = options.awq_importance.find(wq.tensor);
    // GPTQ: the Hessians of the uses that have one, summed (one K for all of them).
    std::vector<float> hsum;
    int64_t k_axis = -1;
    if (options.gptq && w->rank() == 2 && w->dtype() == DataType::kFloat32) {
      for (const WeightQuant* use : uses) {
        auto h = options.hessian.find(use->node);
        auto ni = node_index.find(use->node);
        if (h == options.hessian.end() || !h->second || ni == node_index.end() || use->input != 1)
          continue;
        const ir::Node& n = g.nodes[ni->second];
        const int64_t ka = n.op_type == "Gemm" && n.attr_int("transB", 0) != 0 ? 1 : 0;
        if ((n.op_type != "MatMul" && n.op_type != "Gemm") || (k_axis >= 0 && ka != k_axis) ||
            static_cast<int64_t>(h->second->size()) != w->dim(ka) * w->dim(ka))
          continue;
        k_axis = ka;
        if (hsum.empty()) hsum.assign(h->second->size(), 0.0f);
        for (size_t i = 0; i < hsum.size(); ++i) hsum[i] += (*h->second)[i];
      }
    }
    QuantizedWeight qw =
        quantize_weight(*w, wq.axis, wq.block, options.mode, options.awq_clip,
                        imp == options.awq_importance.end() ? nullptr : &imp->second,
                        hsum.empty() ? nullptr : &hsum, std::max<int64_t>(k_axis, 0),
                        options.min_scale, &st.scales_raised);
    if (!hsum.empty()) ++st.gptq_rounded;
    const Shape wshape = w->shape();
    const std::string qn = name(wq.tensor + "_quantized");
    const std::string sn = name(wq.tensor + "_scale");
    const std::string zn = name(wq.tensor + "_zero_point");
    g.initializers[qn] = qw.q;
    g.initializers[sn] = qw.scale;
    g.initializers[zn] = qw.zp;
    ir::Node dq;
    dq.name = name(wq.tensor + "_DequantizeLinear");
    dq.op_type = "DequantizeLinear";
    dq.inputs = {qn, sn, zn};
    dq.outputs = {name(wq.tensor + "_dequantized")};
    if (wq.axis >= 0) dq.attributes["axis"] = ir::attr_int("axis", wq.axis);
    if (wq.block > 0) dq.attributes["block_size"] = ir::attr_int("block_size", wq.block);
    for (const WeightQuant* use : uses) {
      auto ni = node_index.find(use->node);
      TRT_CHECK(ni != node_index.end(), ErrorCode::kInternal, "node '{}' not found", use->node);
      auto mean = options.input_mean.find(use->node);
      if (mean != options.input_mean.end() && use->input == 1 &&
          correct_bias(g, ni->second, wshape, qw.error, mean->second, reader, graph_outputs, name))
        ++st.bias_corrected;
      g.nodes[ni->second].inputs[use->input] = dq.outputs[0];
    }
    added.push_back(std::move(dq));
    ++st.weights;
  }

  // Activations: one Q/DQ pair per tensor, read by the listed uses.
  for (const auto& [tensor, uses] : p.activations) {
    auto a = table.amax.find(tensor);
    TRT_CHECK(a != table.amax.end(), ErrorCode::kInternal, "no calibrated scale for '{}'", tensor);
    float scale = a->second > 0 ? static_cast<float>(a->second / qmax) : 1.0f;
    if (scale < options.min_scale) {
      scale = options.min_scale;
      ++st.scales_raised;
    }
    const std::string sn = name(tensor + "_scale");
    const std::string zn = name(tensor + "_zero_point");
    g.initializers[sn] = scalar_f32(scale);
    g.initializers[zn] = zero_point(qt, {});
    ir::Node q, dq;
    q.name = name(tensor + "_QuantizeLinear");
    q.op_type = "QuantizeLinear";
    q.inputs = {tensor, sn, zn};
    q.outputs = {name(tensor + "_quantized")};
    dq.name = name(tensor + "_DequantizeLinear");
    dq.op_type = "DequantizeLinear";
    dq.inputs = {q.outputs[0], sn, zn};
    dq.outputs = {name(tensor + "_dequantized")};
    for (const auto& [node, i] : uses) {
      auto ni = node_index.find(node);
      TRT_CHECK(ni != node_index.end(), ErrorCode::kInternal, "node '{}' not found", node);
      g.nodes[ni->second].inputs[i] = dq.outputs[0];
    }
    added.push_back(std::move(q));
    added.push_back(std::move(dq));
    ++st.qdq_pairs;
  }
  for (auto& n : added) g.nodes.push_back(std::move(n));
  g.topological_sort();
  g.remove_dead_nodes();
  return st;
}

size_t fold_batch_norm(ir::Graph& g) {
  std::unordered_map<std::string, size_t> readers;
  for (const auto& n : g.nodes)
    for (const auto& in : n.inputs) ++readers[in];
  for (const auto& o : g.outputs) ++readers[o.name];
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& o : g.nodes[i].outputs) producer[o] = i;
  size_t folded = 0;
  std::vector<bool> drop(g.nodes.size(), false);
  for (size_t bi = 0; bi < g.nodes.size(); ++bi) {
    ir::Node& bn = g.nodes[bi];
    if (bn.op_type != "BatchNormalization" || bn.outputs.size() > 1 || bn.num_inputs() != 5)
      continue;
    if (bn.attr_int("training_mode", 0) != 0) continue;
    auto pr = producer.find(bn.inputs[0]);
    if (pr == producer.end()) continue;
    ir::Node& conv = g.nodes[pr->second];
    if (conv.op_type != "Conv" || readers[bn.inputs[0]] != 1 || !g.is_initializer(conv.inputs[1]))
      continue;
    const Tensor* w = g.initializer(conv.inputs[1]);
    bool ok = w->dtype() == DataType::kFloat32;
    for (int k = 1; k < 5; ++k) {
      const Tensor* t = g.initializer(bn.inputs[k]);
      ok = ok && t && t->dtype() == DataType::kFloat32 && t->numel() == w->dim(0);
    }
    const Tensor* b = conv.has_input(2) ? g.initializer(conv.inputs[2]) : nullptr;
    if (!ok || (conv.has_input(2) && (!b || b->dtype() != DataType::kFloat32))) continue;
    const int64_t cout = w->dim(0), per = w->numel() / cout;
    const float eps = bn.attr_float("epsilon", 1e-5f);
    const float* gamma = g.initializer(bn.inputs[1])->data<float>();
    const float* beta = g.initializer(bn.inputs[2])->data<float>();
    const float* mean = g.initializer(bn.inputs[3])->data<float>();
    const float* var = g.initializer(bn.inputs[4])->data<float>();
    Tensor nw = w->clone();
    Tensor nb(DataType::kFloat32, {cout});
    for (int64_t c = 0; c < cout; ++c) {
      const float f = gamma[c] / std::sqrt(var[c] + eps);
      for (int64_t k = 0; k < per; ++k) nw.data<float>()[c * per + k] *= f;
      const float b0 = b ? b->data<float>()[c] : 0.0f;
      nb.data<float>()[c] = (b0 - mean[c]) * f + beta[c];
    }
    const std::string wn = g.unique_name(conv.inputs[1] + "_bn_folded");
    g.initializers[wn] = nw;
    const std::string bname = g.unique_name(bn.name.empty() ? "bn_bias" : bn.name + "_bias");
    g.initializers[bname] = nb;
    conv.inputs.resize(3);
    conv.inputs[1] = wn;
    conv.inputs[2] = bname;
    conv.outputs[0] = bn.outputs[0];
    drop[bi] = true;
    ++folded;
  }
  if (folded) {
    std::vector<ir::Node> kept;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (!drop[i]) kept.push_back(std::move(g.nodes[i]));
    g.nodes = std::move(kept);
    g.remove_dead_nodes();
  }
  return folded;
}

}  // namespace trtutils::quantize
