#include "ops/permuted_matmul.h"

#include "ir/graph_builder.h"

namespace trtutils::ops {

namespace {

ir::Node transpose(const std::string& name, const std::string& in, const std::string& out,
                   const std::vector<int64_t>& perm) {
  ir::Node n;
  n.name = name;
  n.op_type = "Transpose";
  n.inputs = {in};
  n.outputs = {out};
  n.attributes["perm"] = ir::attr_ints("perm", perm);
  return n;
}

}  // namespace

std::vector<ir::Node> split_permuted_matmul(const ir::Node& fused) {
  std::vector<ir::Node> nodes;
  auto input = [&](size_t i) { return i < fused.inputs.size() ? fused.inputs[i] : std::string(); };
  std::string a = input(0), b = input(1);
  const std::vector<int64_t> pa = fused.attr_ints("perm_a"), pb = fused.attr_ints("perm_b"),
                             py = fused.attr_ints("perm_y");
  if (!pa.empty()) {
    nodes.push_back(transpose(fused.name + "/transpose_a", a, fused.name + "/a", pa));
    a = nodes.back().outputs[0];
  }
  if (!pb.empty()) {
    nodes.push_back(transpose(fused.name + "/transpose_b", b, fused.name + "/b", pb));
    b = nodes.back().outputs[0];
  }
  const std::string y = fused.outputs.empty() ? std::string() : fused.outputs[0];
  ir::Node mm;
  mm.name = fused.name + "/matmul";
  mm.op_type = "MatMul";
  mm.inputs = {a, b};
  mm.outputs = {py.empty() ? y : fused.name + "/product"};
  nodes.push_back(mm);
  if (!py.empty()) nodes.push_back(transpose(fused.name + "/transpose_y", mm.outputs[0], y, py));
  return nodes;
}

}  // namespace trtutils::ops
