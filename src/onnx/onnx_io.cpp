#include "onnx/onnx_io.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <set>
#include <unordered_set>

#include "core/check.h"
#include "onnx/tensor_proto.h"
#include "trtutils/file_util.h"
#include "trtutils/logging.h"

namespace trtutils::onnx_io {

namespace {

namespace fs = std::filesystem;
using ir::Attribute;

bool is_default_domain(const std::string& d) {
  return d.empty() || d == "ai.onnx";
}

// ---- loading ----------------------------------------------------------------------------------

struct LoadContext {
  std::string file;  // the model, for messages
  ExternalDataContext ext;
  std::set<std::pair<std::string, std::string>> functions;  // model-local (domain, name)
};

const char* type_case_name(const onnx::TypeProto& t) {
  // An if-chain, not a switch: the set of cases differs between ONNX versions and ONNX_ML.
  const auto c = t.value_case();
  if (c == onnx::TypeProto::kTensorType) return "a tensor";
  if (c == onnx::TypeProto::kSequenceType) return "a sequence";
  if (c == onnx::TypeProto::kMapType) return "a map";
  if (c == onnx::TypeProto::kOptionalType) return "an optional";
  if (c == onnx::TypeProto::kSparseTensorType) return "a sparse tensor";
  return "of another non-tensor type";
}

// `role` names the value in messages ("graph input"). strict: non-tensor types throw
// Error(kNotSupported); otherwise they return nullopt (value_info entries are only hints).
std::optional<ir::ValueInfo> value_info_from_proto(const onnx::ValueInfoProto& v,
                                                   const LoadContext& ctx, const char* role,
                                                   bool strict) {
  ir::ValueInfo info;
  info.name = v.name();
  info.doc_string = v.doc_string();
  TRT_CHECK_ARG(!info.name.empty(), "'{}': a {} has no name", ctx.file, role);
  if (!v.has_type() || v.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) return info;
  const onnx::TypeProto& type = v.type();
  if (type.value_case() != onnx::TypeProto::kTensorType) {
    TRT_CHECK(!strict, ErrorCode::kNotSupported,
              "'{}': {} '{}' is {}; only tensor values are supported", ctx.file, role, info.name,
              type_case_name(type));
    return std::nullopt;
  }
  const auto& tt = type.tensor_type();
  if (tt.elem_type() != 0) {
    const auto dtype = dtype_from_onnx(tt.elem_type());
    if (!dtype) {
      TRT_CHECK(!strict, ErrorCode::kNotSupported,
                "'{}': {} '{}' has ONNX data type {}, which is not supported", ctx.file, role,
                info.name, tt.elem_type());
      return std::nullopt;
    }
    info.dtype = *dtype;
  }
  if (tt.has_shape()) {
    ir::SymShape shape;
    shape.reserve(static_cast<size_t>(tt.shape().dim_size()));
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value() && d.dim_value() >= 0) {
        shape.emplace_back(d.dim_value());
      } else if (d.has_dim_param() && !d.dim_param().empty()) {
        shape.emplace_back(d.dim_param());
      } else {
        shape.emplace_back();  // unknown (negative dim_value from some exporters, too)
      }
    }
    info.shape = std::move(shape);
  }
  return info;
}

ir::Graph graph_from_proto(const onnx::GraphProto& g, LoadContext& ctx);

// Old files leave AttributeProto.type unset; the set field tells the kind.
onnx::AttributeProto::AttributeType attribute_type(const onnx::AttributeProto& a) {
  if (a.type() != onnx::AttributeProto::UNDEFINED) return a.type();
  if (a.has_f()) return onnx::AttributeProto::FLOAT;
  if (a.has_i()) return onnx::AttributeProto::INT;
  if (a.has_s()) return onnx::AttributeProto::STRING;
  if (a.has_t()) return onnx::AttributeProto::TENSOR;
  if (a.has_g()) return onnx::AttributeProto::GRAPH;
  if (a.floats_size()) return onnx::AttributeProto::FLOATS;
  if (a.ints_size()) return onnx::AttributeProto::INTS;
  if (a.strings_size()) return onnx::AttributeProto::STRINGS;
  if (a.tensors_size()) return onnx::AttributeProto::TENSORS;
  if (a.graphs_size()) return onnx::AttributeProto::GRAPHS;
  return onnx::AttributeProto::UNDEFINED;
}

Attribute attribute_from_proto(const onnx::AttributeProto& a, const ir::Node& node,
                               LoadContext& ctx) {
  Attribute r;
  r.name = a.name();
  TRT_CHECK_ARG(!r.name.empty(), "'{}': {} has an attribute without a name", ctx.file,
                node.describe());
  TRT_CHECK(a.ref_attr_name().empty(), ErrorCode::kNotSupported,
            "'{}': {}: attribute '{}' refers to a function attribute ('{}'), which is only valid "
            "inside functions",
            ctx.file, node.describe(), r.name, a.ref_attr_name());
  switch (attribute_type(a)) {
    case onnx::AttributeProto::FLOAT:
      r.kind = Attribute::Kind::kFloat;
      r.f = a.f();
      return r;
    case onnx::AttributeProto::INT:
      r.kind = Attribute::Kind::kInt;
      r.i = a.i();
      return r;
    case onnx::AttributeProto::STRING:
      r.kind = Attribute::Kind::kString;
      r.s = a.s();
      return r;
    case onnx::AttributeProto::TENSOR:
      r.kind = Attribute::Kind::kTensor;
      r.t = tensor_from_proto(
          a.t(), &ctx.ext,
          fmt::format("'{}': {}: tensor attribute '{}'", ctx.file, node.describe(), r.name));
      return r;
    case onnx::AttributeProto::GRAPH:
      r.kind = Attribute::Kind::kGraph;
      r.g = std::make_shared<ir::Graph>(graph_from_proto(a.g(), ctx));
      return r;
    case onnx::AttributeProto::FLOATS:
      r.kind = Attribute::Kind::kFloats;
      r.floats.assign(a.floats().begin(), a.floats().end());
      return r;
    case onnx::AttributeProto::INTS:
      r.kind = Attribute::Kind::kInts;
      r.ints.assign(a.ints().begin(), a.ints().end());
      return r;
    case onnx::AttributeProto::STRINGS:
      r.kind = Attribute::Kind::kStrings;
      r.strings.assign(a.strings().begin(), a.strings().end());
      return r;
    case onnx::AttributeProto::UNDEFINED:
      TRT_THROW(ErrorCode::kInvalidArgument, "'{}': {}: attribute '{}' has no type and no value",
                ctx.file, node.describe(), r.name);
    case onnx::AttributeProto::SPARSE_TENSOR:
    case onnx::AttributeProto::TYPE_PROTO:
    case onnx::AttributeProto::TENSORS:
    case onnx::AttributeProto::GRAPHS:
    case onnx::AttributeProto::SPARSE_TENSORS:
    case onnx::AttributeProto::TYPE_PROTOS:
      break;
  }
  TRT_THROW(ErrorCode::kNotSupported,
            "'{}': {}: attribute '{}' has AttributeProto type {}, which is not supported", ctx.file,
            node.describe(), r.name, static_cast<int>(a.type()));
}

ir::Node node_from_proto(const onnx::NodeProto& n, LoadContext& ctx) {
  ir::Node node;
  node.name = n.name();
  node.op_type = n.op_type();
  node.domain = n.domain() == "ai.onnx" ? std::string() : n.domain();
  node.inputs.assign(n.input().begin(), n.input().end());
  node.outputs.assign(n.output().begin(), n.output().end());
  node.doc_string = n.doc_string();
  TRT_CHECK_ARG(!node.op_type.empty(), "'{}': node '{}' has no op_type", ctx.file, node.name);
  TRT_CHECK(!ctx.functions.count({n.domain(), n.op_type()}), ErrorCode::kNotSupported,
            "'{}': {} calls a model-local function ({}::{}), which is not supported; inline it "
            "first (onnx.inliner / onnxsim)",
            ctx.file, node.describe(), n.domain(), n.op_type());
  for (const auto& a : n.attribute()) {
    Attribute attr = attribute_from_proto(a, node, ctx);
    const std::string name = attr.name;
    TRT_CHECK_ARG(node.attributes.emplace(name, std::move(attr)).second,
                  "'{}': {} has attribute '{}' twice", ctx.file, node.describe(), name);
  }
  return node;
}

// The value of a `Constant` node (opset 1..21 attribute forms).
Tensor constant_value(const ir::Node& n, const std::string& file) {
  TRT_CHECK_ARG(n.attributes.size() == 1,
                "'{}': {} must have exactly one value attribute, it has {}", file, n.describe(),
                n.attributes.size());
  // Not a structured binding: clang before 16 cannot capture those in the lambda below.
  const std::string& name = n.attributes.begin()->first;
  const Attribute& a = n.attributes.begin()->second;
  auto expect = [&](Attribute::Kind k) {
    TRT_CHECK_ARG(a.kind == k, "'{}': {}: attribute '{}' has the wrong type", file, n.describe(),
                  name);
  };
  if (name == "value") {
    expect(Attribute::Kind::kTensor);
    return a.t;
  }
  if (name == "value_float") {
    expect(Attribute::Kind::kFloat);
    return Tensor::from_vector<float>(DataType::kFloat32, {}, {a.f});
  }
  if (name == "value_floats") {
    expect(Attribute::Kind::kFloats);
    return Tensor::from_vector<float>(DataType::kFloat32, {static_cast<int64_t>(a.floats.size())},
                                      a.floats);
  }
  if (name == "value_int") {
    expect(Attribute::Kind::kInt);
    return Tensor::from_vector<int64_t>(DataType::kInt64, {}, {a.i});
  }
  if (name == "value_ints") {
    expect(Attribute::Kind::kInts);
    return Tensor::from_vector<int64_t>(DataType::kInt64, {static_cast<int64_t>(a.ints.size())},
                                        a.ints);
  }
  TRT_CHECK(name != "value_string" && name != "value_strings", ErrorCode::kNotSupported,
            "'{}': {}: string constants are not supported", file, n.describe());
  TRT_THROW(ErrorCode::kInvalidArgument, "'{}': {} has an unknown value attribute '{}'", file,
            n.describe(), name);
}

// Constant nodes become initializers: every later layer then sees weights in one place.
void fold_constant_nodes(ir::Graph& g, const std::string& file) {
  std::vector<ir::Node> kept;
  kept.reserve(g.nodes.size());
  for (auto& n : g.nodes) {
    if (n.op_type != "Constant" || !is_default_domain(n.domain)) {
      kept.push_back(std::move(n));
      continue;
    }
    TRT_CHECK_ARG(n.outputs.size() == 1 && !n.outputs[0].empty(),
                  "'{}': {} must have exactly one output", file, n.describe());
    Tensor value = constant_value(n, file);
    TRT_CHECK_ARG(g.initializers.emplace(n.outputs[0], std::move(value)).second,
                  "'{}': {} produces '{}', which is already an initializer", file, n.describe(),
                  n.outputs[0]);
  }
  g.nodes = std::move(kept);
}

ir::Graph graph_from_proto(const onnx::GraphProto& g, LoadContext& ctx) {
  ir::Graph graph;
  graph.name = g.name();
  graph.doc_string = g.doc_string();
  TRT_CHECK(g.sparse_initializer_size() == 0, ErrorCode::kNotSupported,
            "'{}': graph '{}' has sparse initializers, which are not supported", ctx.file,
            g.name());
  for (const auto& init : g.initializer()) {
    TRT_CHECK_ARG(!init.name().empty(), "'{}': graph '{}' has an initializer without a name",
                  ctx.file, g.name());
    Tensor t = tensor_from_proto(init, &ctx.ext,
                                 fmt::format("'{}': initializer '{}'", ctx.file, init.name()));
    // The proto is ours and read once: drop each weight's bytes as soon as it is converted, so
    // that loading peaks near one copy of the weights instead of two.
    if (init.has_raw_data())
      std::string().swap(*const_cast<onnx::TensorProto&>(init).mutable_raw_data());
    TRT_CHECK_ARG(graph.initializers.emplace(init.name(), std::move(t)).second,
                  "'{}': initializer '{}' is defined twice", ctx.file, init.name());
  }
  std::unordered_set<std::string> seen;
  size_t overridable = 0;
  for (const auto& in : g.input()) {
    // IR < 4 lists every initializer as an input too; ONNX lets callers override such inputs,
    // we treat them as constants (what every exporter meant).
    if (graph.is_initializer(in.name())) {
      ++overridable;
      continue;
    }
    auto info = value_info_from_proto(in, ctx, "graph input", true);
    TRT_CHECK_ARG(seen.insert(info->name).second, "'{}': graph input '{}' is listed twice",
                  ctx.file, info->name);
    graph.inputs.push_back(std::move(*info));
  }
  if (overridable)
    TRT_LOG_VERBOSE("'{}': {} graph inputs of '{}' have initializers; treated as constants",
                    ctx.file, overridable, g.name());
  for (const auto& out : g.output())
    graph.outputs.push_back(*value_info_from_proto(out, ctx, "graph output", true));
  for (const auto& vi : g.value_info()) {
    auto info = value_info_from_proto(vi, ctx, "value_info entry", false);
    if (info) graph.value_info[info->name] = std::move(*info);
  }
  graph.nodes.reserve(static_cast<size_t>(g.node_size()));
  for (const auto& n : g.node()) graph.nodes.push_back(node_from_proto(n, ctx));
  fold_constant_nodes(graph, ctx.file);
  return graph;
}

void parse_model_proto(std::string_view bytes, const std::string& what, const LoadOptions& options,
                       onnx::ModelProto& proto) {
  const uint64_t limit = options.max_bytes ? options.max_bytes : memory_limit();
  TRT_CHECK(bytes.size() <= limit, ErrorCode::kOutOfRange,
            "'{}' is {} bytes, over the limit of {} bytes (--max_memory)", what, bytes.size(),
            limit);
  TRT_CHECK_ARG(bytes.size() <= static_cast<size_t>(INT_MAX) &&
                    proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())),
                "'{}' is not a valid ONNX model (protobuf parse failed)", what);
}

// Parses the file straight from its descriptor (protobuf's FileInputStream): the file's bytes
// are never held whole next to the parsed message (ResNet-50: 98 MiB less at the loader's peak;
// the initializers' bytes are then released one by one as graph_from_proto converts them).
void parse_model_file(const fs::path& path, uint64_t limit, onnx::ModelProto& proto) {
  const uint64_t size = readable_file_size(path, limit, "ONNX model");
  const int fd = open_regular_file(path, "ONNX model");
  google::protobuf::io::FileInputStream in(fd);
  in.SetCloseOnDelete(true);
  bool ok = size <= static_cast<uint64_t>(INT_MAX);
  if (ok) {
    google::protobuf::io::CodedInputStream coded(&in);
    coded.SetTotalBytesLimit(INT_MAX);
    ok = proto.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  }
  TRT_CHECK(in.GetErrno() == 0, ErrorCode::kIO, "cannot read '{}': {}", path.string(),
            std::strerror(in.GetErrno()));
  TRT_CHECK_ARG(ok, "'{}' is not a valid ONNX model (protobuf parse failed)", path.string());
}

ir::Model load_impl(onnx::ModelProto& proto, const fs::path& base_dir, const std::string& what,
                    const LoadOptions& options) {
  TRT_CHECK_ARG(proto.has_ir_version() && proto.has_graph(),
                "'{}' is not a valid ONNX model (it has no {})", what,
                proto.has_ir_version() ? "graph" : "ir_version");
  TRT_CHECK_ARG(proto.ir_version() >= 1,
                "'{}' is not a valid ONNX model (ir_version {}; ONNX IR versions start at 1)", what,
                proto.ir_version());

  ir::Model model;
  model.ir_version = proto.ir_version();
  model.producer_name = proto.producer_name();
  model.producer_version = proto.producer_version();
  model.domain = proto.domain();
  model.model_version = proto.model_version();
  model.doc_string = proto.doc_string();
  for (const auto& kv : proto.metadata_props())
    model.metadata_props.emplace_back(kv.key(), kv.value());
  bool has_default = false;
  for (const auto& o : proto.opset_import()) {
    model.opset_imports.push_back({o.domain(), o.version()});
    has_default = has_default || is_default_domain(o.domain());
  }
  // No opset at all is malformed (IR >= 3 requires one); only other domains (e.g. the training
  // preview domain) is a valid model we cannot run.
  TRT_CHECK_ARG(!model.opset_imports.empty(),
                "'{}' is not a valid ONNX model (it has no opset_import)", what);
  TRT_CHECK(has_default, ErrorCode::kNotSupported,
            "'{}' imports no opset of the default ONNX domain (opset_import has no entry for "
            "domain '' or 'ai.onnx'); trtutils runs default-domain models (opsets {} to {})",
            what, kMinOpset, kMaxOpset);
  const int64_t opset = model.opset();
  TRT_CHECK(opset >= kMinOpset && opset <= kMaxOpset, ErrorCode::kNotSupported,
            "'{}' uses ONNX opset {}; trtutils supports opsets {} to {} (convert the model with "
            "onnx.version_converter.convert_version)",
            what, opset, kMinOpset, kMaxOpset);

  LoadContext ctx;
  ctx.file = what;
  uint64_t bytes_read = proto.ByteSizeLong();  // counts against max_bytes with external data
  ctx.ext.base_dir = base_dir;
  ctx.ext.max_bytes = options.max_bytes ? options.max_bytes : memory_limit();
  ctx.ext.bytes_read = &bytes_read;
  for (const auto& f : proto.functions()) ctx.functions.emplace(f.domain(), f.name());
  model.graph = graph_from_proto(proto.graph(), ctx);
  try {
    model.graph.topological_sort();
    model.graph.validate();
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("'{}' is not a valid ONNX model: {}", what, e.what()));
  }
  return model;
}

// ---- saving -----------------------------------------------------------------------------------

// Collects initializers over the threshold into one blob ("<model>.data").
struct ExternalWriter {
  uint64_t threshold = 0;
  std::string location;
  std::string blob;
};

void value_info_to_proto(const ir::ValueInfo& v, onnx::ValueInfoProto* p) {
  p->set_name(v.name);
  if (!v.doc_string.empty()) p->set_doc_string(v.doc_string);
  if (v.dtype == DataType::kUndefined && !v.shape) return;
  auto* tt = p->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(v.dtype));
  if (!v.shape) return;
  auto* shape = tt->mutable_shape();
  for (const auto& d : *v.shape) {
    auto* dim = shape->add_dim();
    if (d.is_static()) {
      dim->set_dim_value(d.value);
    } else if (!d.param.empty()) {
      dim->set_dim_param(d.param);
    }
  }
}

void graph_to_proto(const ir::Graph& g, onnx::GraphProto* p, ExternalWriter* ext);

void attribute_to_proto(const Attribute& a, const ir::Node& node, onnx::AttributeProto* p,
                        ExternalWriter* ext) {
  p->set_name(a.name);
  switch (a.kind) {
    case Attribute::Kind::kFloat:
      p->set_type(onnx::AttributeProto::FLOAT);
      p->set_f(a.f);
      return;
    case Attribute::Kind::kInt:
      p->set_type(onnx::AttributeProto::INT);
      p->set_i(a.i);
      return;
    case Attribute::Kind::kString:
      p->set_type(onnx::AttributeProto::STRING);
      p->set_s(a.s);
      return;
    case Attribute::Kind::kTensor:
      p->set_type(onnx::AttributeProto::TENSOR);
      tensor_to_proto(a.t, p->mutable_t());
      return;
    case Attribute::Kind::kGraph:
      p->set_type(onnx::AttributeProto::GRAPH);
      TRT_CHECK_ARG(a.g != nullptr, "{}: graph attribute '{}' is empty", node.describe(), a.name);
      graph_to_proto(*a.g, p->mutable_g(), ext);
      return;
    case Attribute::Kind::kFloats:
      p->set_type(onnx::AttributeProto::FLOATS);
      for (float f : a.floats) p->add_floats(f);
      return;
    case Attribute::Kind::kInts:
      p->set_type(onnx::AttributeProto::INTS);
      for (int64_t i : a.ints) p->add_ints(i);
      return;
    case Attribute::Kind::kStrings:
      p->set_type(onnx::AttributeProto::STRINGS);
      for (const auto& s : a.strings) p->add_strings(s);
      return;
    case Attribute::Kind::kUndefined:
      break;
  }
  TRT_THROW(ErrorCode::kInvalidArgument, "{}: attribute '{}' has no kind; cannot save it",
            node.describe(), a.name);
}

void initializer_to_proto(const std::string& name, const Tensor& t, onnx::TensorProto* p,
                          ExternalWriter* ext) {
  p->set_name(name);
  if (!ext || ext->threshold == 0 || t.nbytes() <= ext->threshold) {
    tensor_to_proto(t, p);
    return;
  }
  for (int64_t d : t.shape()) p->add_dims(d);
  p->set_data_type(static_cast<int32_t>(t.dtype()));
  ext->blob.resize((ext->blob.size() + 63) / 64 * 64, '\0');  // aligned for mmap-style readers
  const size_t offset = ext->blob.size();
  ext->blob.append(reinterpret_cast<const char*>(t.raw()), t.nbytes());
  p->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char* k, const std::string& v) {
    auto* e = p->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", ext->location);
  add("offset", std::to_string(offset));
  add("length", std::to_string(t.nbytes()));
}

void graph_to_proto(const ir::Graph& g, onnx::GraphProto* p, ExternalWriter* ext) {
  p->set_name(g.name);
  if (!g.doc_string.empty()) p->set_doc_string(g.doc_string);
  for (const auto& [name, t] : g.initializers)
    initializer_to_proto(name, t, p->add_initializer(), ext);
  for (const auto& v : g.inputs) value_info_to_proto(v, p->add_input());
  for (const auto& v : g.outputs) value_info_to_proto(v, p->add_output());
  for (const auto& [name, v] : g.value_info) value_info_to_proto(v, p->add_value_info());
  for (const auto& n : g.nodes) {
    auto* np = p->add_node();
    for (const auto& i : n.inputs) np->add_input(i);
    for (const auto& o : n.outputs) np->add_output(o);
    if (!n.name.empty()) np->set_name(n.name);
    np->set_op_type(n.op_type);
    if (!n.domain.empty()) np->set_domain(n.domain);
    if (!n.doc_string.empty()) np->set_doc_string(n.doc_string);
    for (const auto& [name, a] : n.attributes) attribute_to_proto(a, n, np->add_attribute(), ext);
  }
}

// The lowest IR version that can hold every dtype the graph uses (fp8: 9, int4: 10), at least 4
// because initializers are not repeated as graph inputs.
int64_t required_ir_version(const ir::Graph& g) {
  int64_t v = 4;
  auto note = [&](DataType t) {
    if (t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E4M3FNUZ ||
        t == DataType::kFloat8E5M2 || t == DataType::kFloat8E5M2FNUZ)
      v = std::max<int64_t>(v, 9);
    if (t == DataType::kInt4 || t == DataType::kUInt4) v = std::max<int64_t>(v, 10);
  };
  for (const auto& [n, t] : g.initializers) note(t.dtype());
  for (const auto& vi : g.inputs) note(vi.dtype);
  for (const auto& vi : g.outputs) note(vi.dtype);
  for (const auto& [n, vi] : g.value_info) note(vi.dtype);
  for (const auto& node : g.nodes)
    for (const auto& [n, a] : node.attributes) {
      if (a.kind == Attribute::Kind::kTensor) note(a.t.dtype());
      if (a.kind == Attribute::Kind::kGraph && a.g) v = std::max(v, required_ir_version(*a.g));
    }
  return v;
}

onnx::ModelProto model_to_proto(const ir::Model& m, ExternalWriter* ext) {
  onnx::ModelProto p;
  p.set_ir_version(std::max(m.ir_version, required_ir_version(m.graph)));
  for (const auto& o : m.opset_imports) {
    auto* op = p.add_opset_import();
    op->set_domain(o.domain);
    op->set_version(o.version);
  }
  if (!m.producer_name.empty()) p.set_producer_name(m.producer_name);
  if (!m.producer_version.empty()) p.set_producer_version(m.producer_version);
  if (!m.domain.empty()) p.set_domain(m.domain);
  if (m.model_version) p.set_model_version(m.model_version);
  if (!m.doc_string.empty()) p.set_doc_string(m.doc_string);
  for (const auto& [k, v] : m.metadata_props) {
    auto* e = p.add_metadata_props();
    e->set_key(k);
    e->set_value(v);
  }
  graph_to_proto(m.graph, p.mutable_graph(), ext);
  return p;
}

std::string serialize_proto(const onnx::ModelProto& p) {
  const size_t size = p.ByteSizeLong();
  TRT_CHECK(size <= static_cast<size_t>(INT_MAX), ErrorCode::kOutOfRange,
            "the model is {} bytes, over protobuf's 2 GiB limit; save it with "
            "SaveOptions::external_data_threshold to move the weights to a .data file",
            size);
  std::string out;
  TRT_CHECK(p.SerializeToString(&out), ErrorCode::kInternal, "protobuf serialization failed");
  return out;
}

}  // namespace

ir::Model load_model(const fs::path& path, const LoadOptions& options) {
  onnx::ModelProto proto;
  parse_model_file(path, options.max_bytes ? options.max_bytes : memory_limit(), proto);
  fs::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  return load_impl(proto, dir, path.string(), options);
}

ir::Model load_model_from_bytes(std::string_view bytes, const fs::path& base_dir,
                                const LoadOptions& options) {
  onnx::ModelProto proto;
  parse_model_proto(bytes, "<memory>", options, proto);
  return load_impl(proto, base_dir, "<memory>", options);
}

namespace {

void external_locations(const onnx::GraphProto& g, std::vector<std::string>& out);

void external_location(const onnx::TensorProto& t, std::vector<std::string>& out) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL) return;
  for (const auto& kv : t.external_data())
    if (kv.key() == "location" && std::find(out.begin(), out.end(), kv.value()) == out.end())
      out.push_back(kv.value());
}

void external_locations(const onnx::GraphProto& g, std::vector<std::string>& out) {
  for (const auto& t : g.initializer()) external_location(t, out);
  for (const auto& st : g.sparse_initializer()) {
    external_location(st.values(), out);
    external_location(st.indices(), out);
  }
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      if (a.has_t()) external_location(a.t(), out);
      for (const auto& t : a.tensors()) external_location(t, out);
      if (a.has_g()) external_locations(a.g(), out);
      for (const auto& sg : a.graphs()) external_locations(sg, out);
    }
}

}  // namespace

std::vector<std::string> external_data_locations(const fs::path& path) {
  onnx::ModelProto proto;
  parse_model_file(path, memory_limit(), proto);
  std::vector<std::string> out;
  if (proto.has_graph()) external_locations(proto.graph(), out);
  return out;
}

void save_model(const ir::Model& model, const fs::path& path, const SaveOptions& options) {
  ExternalWriter ext;
  ext.threshold = options.external_data_threshold;
  ext.location = path.filename().string() + ".data";
  const onnx::ModelProto proto = model_to_proto(model, &ext);
  const std::string bytes = serialize_proto(proto);
  // The weights first: a model file never points at data that is not there yet.
  if (!ext.blob.empty()) write_file_atomic(path.parent_path() / ext.location, ext.blob);
  write_file_atomic(path, bytes);
}

std::string serialize_model(const ir::Model& model) {
  return serialize_proto(model_to_proto(model, nullptr));
}

Tensor tensor_from_proto_bytes(std::string_view bytes, std::string* name) {
  onnx::TensorProto proto;
  TRT_CHECK_ARG(bytes.size() <= static_cast<size_t>(INT_MAX) &&
                    proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())),
                "not a valid ONNX TensorProto (protobuf parse failed)");
  if (name) *name = proto.name();
  return tensor_from_proto(proto, nullptr, fmt::format("tensor '{}'", proto.name()));
}

std::string tensor_to_proto_bytes(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  if (!name.empty()) proto.set_name(name);
  tensor_to_proto(tensor, &proto);
  std::string out;
  TRT_CHECK(proto.SerializeToString(&out), ErrorCode::kOutOfRange,
            "tensor '{}' is too large for a TensorProto (2 GiB)", name);
  return out;
}

}  // namespace trtutils::onnx_io
