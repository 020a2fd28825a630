#include "ops/pointwise_depthwise.h"

#include "ir/graph_builder.h"

namespace trtutils::ops {

namespace {

constexpr const char* kDomain = "com.trtutils";

// `from`'s attribute `name` as `to`'s attribute `as`, when present.
void copy_attr(const ir::Node& from, const std::string& name, ir::Node& to, const std::string& as) {
  const auto it = from.attributes.find(name);
  if (it == from.attributes.end()) return;
  ir::Attribute a = it->second;
  a.name = as;
  to.attributes[as] = std::move(a);
}

ir::Node blocked_conv(const std::string& name, std::vector<std::string> inputs,
                      const std::string& output) {
  ir::Node n;
  n.name = name;
  n.op_type = "FusedConv";
  n.domain = kDomain;
  n.inputs = std::move(inputs);
  n.outputs = {output};
  n.attributes["blocked"] = ir::attr_int("blocked", 1);
  return n;
}

const char* const kGeometry[] = {"strides", "pads", "dilations"};
const char* const kActivation[] = {"activation", "activation_params"};

}  // namespace

std::pair<ir::Node, ir::Node> split_pointwise_depthwise(const ir::Node& fused,
                                                        const std::string& mid) {
  auto input = [&](size_t i) { return i < fused.inputs.size() ? fused.inputs[i] : std::string(); };
  ir::Node pw = blocked_conv(fused.name + "/pointwise", {input(0), input(1), input(2)}, mid);
  pw.attributes["kernel_shape"] = ir::attr_ints("kernel_shape", {1, 1});
  ir::Node dw = blocked_conv(fused.name + "/depthwise", {mid, input(3), input(4)},
                             fused.outputs.empty() ? std::string() : fused.outputs[0]);
  for (const char* a : kActivation) {
    copy_attr(fused, a, pw, a);
    copy_attr(fused, std::string("dw_") + a, dw, a);
  }
  for (const char* a : kGeometry) copy_attr(fused, std::string("dw_") + a, dw, a);
  copy_attr(fused, "dw_group", dw, "group");
  return {std::move(pw), std::move(dw)};
}

ir::Node join_pointwise_depthwise(const ir::Node& pw, const ir::Node& dw) {
  ir::Node n;
  n.name = dw.name;
  n.op_type = "PointwiseDepthwise";
  n.domain = kDomain;
  auto input = [](const ir::Node& c, size_t i) {
    return i < c.inputs.size() ? c.inputs[i] : std::string();
  };
  n.inputs = {input(pw, 0), input(pw, 1), input(pw, 2), input(dw, 1), input(dw, 2)};
  while (!n.inputs.empty() && n.inputs.back().empty()) n.inputs.pop_back();
  n.outputs = dw.outputs;
  for (const char* a : kActivation) {
    copy_attr(pw, a, n, a);
    copy_attr(dw, a, n, std::string("dw_") + a);
  }
  for (const char* a : kGeometry) copy_attr(dw, a, n, std::string("dw_") + a);
  copy_attr(dw, "group", n, "dw_group");
  return n;
}

}  // namespace trtutils::ops
