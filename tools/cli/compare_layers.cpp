#include "compare_layers.h"

#include <set>

namespace trtutils::cli {

namespace {

bool is_layer_value(const Tensor& t) {
  const DataType d = t.dtype();
  return d == DataType::kFloat32 || d == DataType::kFloat16 || d == DataType::kBFloat16 ||
         d == DataType::kFloat64;
}

std::string dequantized_base(const std::string& n) {
  constexpr std::string_view kSuffix = "_dequantized";
  return n.ends_with(kSuffix) ? n.substr(0, n.size() - kSuffix.size()) : n;
}

// B's float tensors by base name; an exact name wins over a "_dequantized" one.
std::map<std::string, std::string> by_dequantized_base(
    const std::map<std::string, Tensor>& values) {
  std::map<std::string, std::string> r;
  for (const auto& [n, t] : values)
    if (is_layer_value(t) && dequantized_base(n) != n) r.try_emplace(dequantized_base(n), n);
  for (const auto& [n, t] : values)
    if (is_layer_value(t) && dequantized_base(n) == n) r[n] = n;
  return r;
}

}  // namespace

LayerwiseResult compare_layers(const CompareSide& a, const CompareSide& b,
                               const std::map<std::string, Tensor>& feeds,
                               const compare::CompareOptions& options) {
  std::vector<std::string> order_a, order_b;
  const auto la = a.run_marked(feeds, order_a);
  const auto lb = b.run_marked(feeds, order_b);
  const auto names_b = by_dequantized_base(lb);
  LayerwiseResult r;
  std::set<std::string> done;
  for (const auto& name : order_a) {
    auto ia = la.find(name);
    if (ia == la.end() || !is_layer_value(ia->second)) continue;
    auto ib = names_b.find(dequantized_base(name));
    if (ib == names_b.end() || !done.insert(ib->second).second) {
      ++r.skipped;
      continue;
    }
    const std::string shown = ib->second == name ? name : name + " ~ " + ib->second;
    auto c =
        compare::compare_tensors(dequantized_base(name), ia->second, lb.at(ib->second), options);
    c.name = shown;
    r.tensors.push_back(std::move(c));
  }
  return r;
}

}  // namespace trtutils::cli
