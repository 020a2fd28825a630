// OnnxSession and onnx_model_info (include/trtutils/onnx_session.h): the public face of Session
// (engine/session.h), with the graph's value infos turned into ModelTensorInfo.
#include "trtutils/onnx_session.h"

#include <utility>

#include "engine/session.h"
#include "onnx/onnx_io.h"

namespace trtutils {

namespace {

ModelTensorInfo model_tensor_info(const ir::ValueInfo& v) {
  ModelTensorInfo t{.name = v.name, .dtype = v.dtype, .shape = std::nullopt};
  if (v.shape) {
    std::vector<ModelDim> dims;
    dims.reserve(v.shape->size());
    for (const ir::Dim& d : *v.shape) dims.push_back({.value = d.value, .param = d.param});
    t.shape = std::move(dims);
  }
  return t;
}

std::vector<ModelTensorInfo> model_tensor_infos(const std::vector<ir::ValueInfo>& values) {
  std::vector<ModelTensorInfo> r;
  r.reserve(values.size());
  for (const auto& v : values) r.push_back(model_tensor_info(v));
  return r;
}

}  // namespace

OnnxModelInfo onnx_model_info(const std::filesystem::path& onnx) {
  const ir::Model model = onnx_io::load_model(onnx);
  OnnxModelInfo info;
  info.opset = model.opset();
  info.inputs = model_tensor_infos(model.graph.inputs);
  info.outputs = model_tensor_infos(model.graph.outputs);
  for (const auto& n : model.graph.nodes)
    info.nodes.push_back({.name = n.name, .op_type = n.op_type, .domain = n.domain});
  return info;
}

struct OnnxSession::Impl {
  Session session;
  std::vector<ModelTensorInfo> inputs, outputs;
};

OnnxSession::OnnxSession(const std::filesystem::path& onnx, const OnnxSessionOptions& options) {
  Session s = Session::from_file(onnx, {.num_threads = options.num_threads,
                                        .use_reference = options.use_reference,
                                        .profile = options.profile,
                                        .mark_all_outputs = options.mark_all_outputs});
  auto inputs = model_tensor_infos(s.inputs());
  auto outputs = model_tensor_infos(s.outputs());
  impl_ = std::make_unique<Impl>(Impl{std::move(s), std::move(inputs), std::move(outputs)});
}

OnnxSession::~OnnxSession() = default;
OnnxSession::OnnxSession(OnnxSession&&) noexcept = default;
OnnxSession& OnnxSession::operator=(OnnxSession&&) noexcept = default;

const std::vector<ModelTensorInfo>& OnnxSession::inputs() const {
  return impl_->inputs;
}

const std::vector<ModelTensorInfo>& OnnxSession::outputs() const {
  return impl_->outputs;
}

std::vector<std::string> OnnxSession::node_output_names() const {
  std::vector<std::string> names;
  for (const auto& n : impl_->session.model().graph.nodes)
    for (const auto& o : n.outputs) names.push_back(o);
  return names;
}

std::map<std::string, Tensor> OnnxSession::run(const std::map<std::string, Tensor>& feeds) {
  return impl_->session.run(feeds);
}

std::vector<LayerTiming> OnnxSession::profile() const {
  std::vector<LayerTiming> r;
  for (const auto& p : impl_->session.profile())
    r.push_back({.name = p.name,
                 .op = p.op_type,
                 .total_ms = p.total_ms,
                 .calls = p.calls,
                 .kernel = std::string()});
  return r;
}

uint64_t OnnxSession::peak_activation_bytes() const {
  return impl_->session.peak_activation_bytes();
}

uint64_t OnnxSession::weight_bytes() const {
  return impl_->session.weight_bytes();
}

}  // namespace trtutils
