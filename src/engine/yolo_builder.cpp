// build_yolo_engine: load -> recognise the head -> append EfficientNMS -> build_engine on the
// rewritten model (written to a temporary ONNX: build_engine reads a file, and its engine cache
// keys on the file's bytes).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/check.h"
#include "engine/yolo_head.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "ops/detection_ops.h"
#include "passes/passes.h"
#include "tensorrt/trtexec.h"
#include "trtutils/file_util.h"
#include "trtutils/logging.h"
#include "trtutils/yolo.h"

namespace trtutils::builder {

namespace {

namespace fs = std::filesystem;

void validate_yolo_config(const YoloConfig& c) {
  TRT_CHECK_ARG(c.num_classes >= 1, "num_classes must be >= 1, got {}", c.num_classes);
  TRT_CHECK_ARG(std::isfinite(c.conf_threshold) && c.conf_threshold >= 0 && c.conf_threshold <= 1,
                "conf_threshold must be in [0, 1], got {}", c.conf_threshold);
  TRT_CHECK_ARG(std::isfinite(c.iou_threshold) && c.iou_threshold >= 0 && c.iou_threshold <= 1,
                "iou_threshold must be in [0, 1], got {}", c.iou_threshold);
  TRT_CHECK_ARG(c.top_k >= 1, "top_k must be >= 1, got {}", c.top_k);
  TRT_CHECK_ARG(c.box_coding == "center_size" || c.box_coding == "corner",
                "box_coding must be center_size or corner, got '{}'", c.box_coding);
}

// An output's type and shape: the declared one, with dims that shape inference knows better
// (static where the declaration has a symbol or nothing) filled in.
ir::ValueInfo output_info(const ir::ValueInfo& declared, const ir::Graph& inferred) {
  ir::ValueInfo v = declared;
  const auto it = inferred.value_info.find(declared.name);
  if (it == inferred.value_info.end()) return v;
  if (v.dtype == DataType::kUndefined) v.dtype = it->second.dtype;
  if (!v.shape) {
    v.shape = it->second.shape;
  } else if (it->second.shape && it->second.shape->size() == v.shape->size()) {
    for (size_t d = 0; d < v.shape->size(); ++d)
      if (!(*v.shape)[d].is_static() && (*it->second.shape)[d].is_static())
        (*v.shape)[d] = (*it->second.shape)[d];
  }
  return v;
}

bool dim_is(const ir::Dim& d, int64_t v) {
  return d.is_static() && d.value == v;
}

// Same dimension in two outputs: equal values, or the same symbol.
bool same_dim(const ir::Dim& a, const ir::Dim& b) {
  return a.is_static() || b.is_static() ? a.value == b.value : (!a.param.empty() && a == b);
}

std::string describe_output(const ir::ValueInfo& v) {
  return fmt::format("{} {} ({})", v.name, v.shape ? ir::sym_shape_str(*v.shape) : "[?]",
                     dtype_name(v.dtype));
}

bool float_type(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16;
}

struct Match {
  YoloLayout layout;
  std::vector<size_t> outputs;  // indices into the graph's outputs: the head (boxes, scores)
};

std::optional<Match> recognise(const std::vector<ir::ValueInfo>& outs, int64_t c) {
  auto rank3 = [&](size_t i) {
    return outs[i].shape && outs[i].shape->size() == 3 && float_type(outs[i].dtype);
  };
  for (size_t i = 0; i < outs.size(); ++i)
    for (size_t j = 0; j < outs.size(); ++j) {
      if (i == j || !rank3(i) || !rank3(j)) continue;
      const ir::SymShape &b = *outs[i].shape, &s = *outs[j].shape;
      if (dim_is(b[2], 4) && dim_is(s[2], c) && same_dim(b[0], s[0]) && same_dim(b[1], s[1]))
        return Match{YoloLayout::kBoxesScores, {i, j}};
    }
  for (size_t i = 0; i < outs.size(); ++i)
    if (rank3(i) && dim_is((*outs[i].shape)[1], 4 + c)) return Match{YoloLayout::kYoloV8, {i}};
  for (size_t i = 0; i < outs.size(); ++i)
    if (rank3(i) && dim_is((*outs[i].shape)[2], 5 + c)) return Match{YoloLayout::kYoloV5, {i}};
  for (size_t i = 0; i < outs.size(); ++i)
    if (rank3(i) && dim_is((*outs[i].shape)[2], 6)) return Match{YoloLayout::kEndToEnd, {i}};
  return std::nullopt;
}

// Split(x, axis 2) into `sizes`: the sizes are an input from opset 13, an attribute before.
std::vector<std::string> split_last(ir::Graph& g, int64_t opset, const std::string& x,
                                    const std::vector<int64_t>& sizes) {
  ir::Node n;
  n.name = g.unique_name("yolo_nms/Split");
  n.op_type = "Split";
  n.inputs = {x};
  n.attributes["axis"] = ir::attr_int("axis", 2);
  if (opset >= 13) {
    const std::string name = g.unique_name("yolo_nms/split_sizes");
    g.initializers[name] =
        Tensor::from_vector(DataType::kInt64, {static_cast<int64_t>(sizes.size())}, sizes);
    n.inputs.push_back(name);
  } else {
    n.attributes["split"] = ir::attr_ints("split", sizes);
  }
  for (size_t i = 0; i < sizes.size(); ++i)
    n.outputs.push_back(g.unique_name(n.name + "_out" + std::to_string(i)));
  g.nodes.push_back(n);
  return n.outputs;
}

std::string add_node(ir::Graph& g, const std::string& op, std::vector<std::string> inputs,
                     std::vector<ir::Attribute> attrs = {}) {
  ir::Node n;
  n.name = g.unique_name("yolo_nms/" + op);
  n.op_type = op;
  n.inputs = std::move(inputs);
  n.outputs = {g.unique_name(n.name + "_out")};
  for (auto& a : attrs) n.attributes[a.name] = std::move(a);
  g.nodes.push_back(n);
  return n.outputs[0];
}

}  // namespace

const char* yolo_layout_name(YoloLayout layout) {
  switch (layout) {
    case YoloLayout::kYoloV8:
      return "yolov8";
    case YoloLayout::kYoloV5:
      return "yolov5";
    case YoloLayout::kBoxesScores:
      return "boxes_scores";
    case YoloLayout::kEndToEnd:
      return "end_to_end";
  }
  return "?";
}

YoloHead add_yolo_nms(ir::Model& model, const YoloConfig& config, const std::string& source) {
  validate_yolo_config(config);
  ir::Graph& g = model.graph;
  const int64_t opset = model.opset();
  const int64_t c = config.num_classes;
  ir::Graph inferred = g;
  passes::infer_shapes(inferred, opset);
  std::vector<ir::ValueInfo> outs;
  for (const auto& o : g.outputs) outs.push_back(output_info(o, inferred));
  // Shapes computed from the input's Shape (dynamic-batch exports: Reshape(x, Concat(Shape(x)
  // [0], ...))) stay unknown with a symbolic batch: infer again with every symbolic input dim
  // set to 1 and take the dims after the batch from there (the head's channel and anchor counts
  // do not depend on the batch).
  const bool unknown = std::any_of(outs.begin(), outs.end(), [](const ir::ValueInfo& v) {
    return !v.shape || v.shape->size() < 2 ||
           !std::all_of(v.shape->begin() + 1, v.shape->end(),
                        [](const ir::Dim& d) { return d.is_static(); });
  });
  if (unknown) {
    ir::Graph bound = g;
    for (auto& in : bound.inputs)
      if (in.shape)
        for (auto& d : *in.shape)
          if (!d.is_static()) d = ir::Dim(1);
    // Shape inference and constant folding to a fixed point (Shape -> Gather -> Reshape chains
    // become constants once the input shape is).
    passes::run_pipeline(bound, opset, {"qdq_fusion", "qdq_layout", "conv_fusion"});
    for (auto& v : outs) {
      const auto it = bound.value_info.find(v.name);
      if (it == bound.value_info.end()) continue;
      const ir::ValueInfo& b = it->second;
      if (!v.shape && b.shape && !b.shape->empty()) {
        v.shape = b.shape;
        (*v.shape)[0] = ir::Dim();  // the batch: unknown
      } else if (v.shape && b.shape && b.shape->size() == v.shape->size()) {
        for (size_t d = 1; d < v.shape->size(); ++d)
          if (!(*v.shape)[d].is_static()) (*v.shape)[d] = (*b.shape)[d];
      }
      if (v.dtype == DataType::kUndefined) v.dtype = b.dtype;
    }
  }

  const std::optional<Match> m = recognise(outs, c);
  if (!m) {
    std::string seen;
    for (const auto& o : outs) seen += (seen.empty() ? "" : ", ") + describe_output(o);
    TRT_THROW(ErrorCode::kInvalidArgument,
              "'{}': no known detection head among its outputs {}; build_yolo knows (with "
              "--num_classes {}): YOLOv8/v11 one output [N, {}, A]; YOLOv5/v7 one output "
              "[N, A, {}]; boxes [N, A, 4] + scores [N, A, {}]; end-to-end (YOLOv10) [N, top_k, "
              "6] (float32 or float16; is --num_classes right?)",
              source, seen.empty() ? "(none)" : seen, c, 4 + c, 5 + c, c);
  }
  YoloHead head{m->layout, ""};
  const ir::ValueInfo& first = outs[m->outputs[0]];
  switch (m->layout) {
    case YoloLayout::kYoloV8:
      head.description = "YOLOv8/v11 head: " + describe_output(first);
      break;
    case YoloLayout::kYoloV5:
      head.description = "YOLOv5/v7 head (objectness x class scores): " + describe_output(first);
      break;
    case YoloLayout::kBoxesScores:
      head.description = "boxes + scores outputs: " + describe_output(first) + ", " +
                         describe_output(outs[m->outputs[1]]);
      break;
    case YoloLayout::kEndToEnd:
      head.description = "end-to-end head (YOLOv10 style, NMS-free): " + describe_output(first) +
                         "; built as it is, no NMS layer added";
      return head;
  }

  // Boxes [N, A, 4] and scores [N, A, C] from the head.
  std::string boxes, scores;
  switch (m->layout) {
    case YoloLayout::kYoloV8: {
      const std::string t =
          add_node(g, "Transpose", {first.name}, {ir::attr_ints("perm", {0, 2, 1})});
      const auto parts = split_last(g, opset, t, {4, c});
      boxes = parts[0];
      scores = parts[1];
      break;
    }
    case YoloLayout::kYoloV5: {
      const auto parts = split_last(g, opset, first.name, {4, 1, c});
      boxes = parts[0];
      scores = add_node(g, "Mul", {parts[2], parts[1]});
      break;
    }
    case YoloLayout::kBoxesScores:
      boxes = first.name;
      scores = outs[m->outputs[1]].name;
      break;
    case YoloLayout::kEndToEnd:
      break;
  }

  const std::vector<std::string> names = {"num_dets", "det_boxes", "det_scores", "det_classes"};
  for (const auto& n : names) {
    const bool taken = g.unique_name(n) != n;
    TRT_CHECK_ARG(!taken, "'{}': the model already has a value named '{}', one of the NMS outputs",
                  source, n);
  }
  ir::Node nms;
  nms.name = g.unique_name("yolo_nms/EfficientNMS");
  nms.op_type = ops::detection::kEfficientNMS;
  nms.domain = ops::detection::kDomain;
  nms.inputs = {boxes, scores};
  nms.outputs = names;
  for (ir::Attribute a : {ir::attr_float("score_threshold", config.conf_threshold),
                          ir::attr_float("iou_threshold", config.iou_threshold),
                          ir::attr_int("max_output_boxes", config.top_k),
                          ir::attr_int("box_coding", config.box_coding == "corner"
                                                         ? ops::detection::kBoxCodingCorner
                                                         : ops::detection::kBoxCodingCenterSize),
                          ir::attr_int("class_agnostic", config.class_agnostic ? 1 : 0)})
    nms.attributes[a.name] = a;
  g.nodes.push_back(nms);

  const ir::Dim n = (*first.shape)[0];
  const int64_t k = config.top_k;
  g.outputs = {{names[0], DataType::kInt32, ir::SymShape{n, 1}, ""},
               {names[1], DataType::kFloat32, ir::SymShape{n, k, 4}, ""},
               {names[2], DataType::kFloat32, ir::SymShape{n, k}, ""},
               {names[3], DataType::kInt32, ir::SymShape{n, k}, ""}};
  g.remove_dead_nodes();
  bool imported = false;
  for (const auto& o : model.opset_imports)
    imported = imported || o.domain == ops::detection::kDomain;
  if (!imported) model.opset_imports.push_back({ops::detection::kDomain, 1});
  g.validate();
  return head;
}

namespace {

// TensorRT's EfficientNMS plugin in place of our node: the same inputs, outputs and attribute
// names (TensorRT's ONNX parser looks the op up in the plugin registry), plus the plugin's own
// background_class = -1 (none), score_activation = 0 (the head's scores are probabilities) and
// plugin_version "1".
void use_tensorrt_plugin(ir::Model& model) {
  for (auto& n : model.graph.nodes) {
    if (n.domain != ops::detection::kDomain || n.op_type != ops::detection::kEfficientNMS) continue;
    n.op_type = "EfficientNMS_TRT";
    n.domain.clear();
    for (ir::Attribute a :
         {ir::attr_int("background_class", -1), ir::attr_int("score_activation", 0),
          ir::attr_string("plugin_version", "1")})
      n.attributes[a.name] = a;
  }
  auto& imports = model.opset_imports;
  imports.erase(std::remove_if(imports.begin(), imports.end(),
                               [](const auto& o) { return o.domain == ops::detection::kDomain; }),
                imports.end());
}

struct YoloModel {
  ir::Model model;
  YoloHead head;
};

// The model of `onnx` with the NMS appended (unchanged when end-to-end).
YoloModel load_with_nms(const fs::path& onnx, const YoloConfig& yolo) {
  require_regular_file(onnx, "ONNX model");
  YoloModel y{onnx_io::load_model(onnx), {}};
  y.head = add_yolo_nms(y.model, yolo, onnx.string());
  return y;
}

// Builds `output` from `model` saved in a private temporary folder, removed on every exit (and
// on SIGINT / SIGTERM through the interrupt cleanup). Its file name is the source's with "_nms",
// which the engine records as its source model.
BuildResult build_from_temporary(const ir::Model& model, const fs::path& onnx,
                                 const fs::path& output, const BuildConfig& build) {
  static std::atomic<int> counter{0};
  const fs::path dir = fs::temp_directory_path() /
                       fmt::format("trtutils_yolo_{}_{}", ::getpid(), counter.fetch_add(1));
  std::error_code ec;
  fs::remove_all(dir, ec);
  TRT_CHECK(fs::create_directory(dir, ec), ErrorCode::kIO, "cannot create temporary folder {}: {}",
            dir.string(), ec.message());
  const fs::path tmp = dir / (onnx.stem().string() + "_nms.onnx");
  struct Cleanup {
    fs::path dir;
    int slot;
    ~Cleanup() {
      unregister_temp_file(slot);
      std::error_code e;
      fs::remove_all(dir, e);
    }
  } cleanup{dir, register_temp_file(tmp)};
  onnx_io::save_model(model, tmp);
  return build_engine(tmp, output, build);
}

// trtexec builds from the model with TensorRT's plugin node, kept beside the engine (removed
// when the build fails).
BuildResult build_with_tensorrt_plugin(ir::Model& model, const fs::path& output,
                                       const BuildConfig& build) {
  use_tensorrt_plugin(model);
  const fs::path nms_onnx = tensorrt_nms_onnx_path(output);
  onnx_io::save_model(model, nms_onnx);
  TRT_LOG_INFO("build_yolo: EfficientNMS_TRT model written to {}", nms_onnx.string());
  try {
    return build_with_trtexec(nms_onnx, output, build, /*dry_run=*/false);
  } catch (...) {
    std::error_code ec;
    fs::remove(nms_onnx, ec);
    throw;
  }
}

}  // namespace

YoloHeadInfo write_yolo_nms_onnx(const fs::path& onnx, const fs::path& out, const YoloConfig& yolo,
                                 bool tensorrt_plugin) {
  check_output_is_not_input("--output", out, {{"--onnx", onnx}});
  validate_yolo_config(yolo);
  YoloModel y = load_with_nms(onnx, yolo);
  if (tensorrt_plugin) use_tensorrt_plugin(y.model);
  onnx_io::save_model(y.model, out);
  return {yolo_layout_name(y.head.layout), y.head.description};
}

fs::path tensorrt_nms_onnx_path(const fs::path& output) {
  return output.parent_path() / (output.stem().string() + "_nms.onnx");
}

YoloBuildResult build_yolo_engine(const fs::path& onnx, const fs::path& output,
                                  const YoloConfig& yolo, const BuildConfig& build) {
  check_output_is_not_input("--output", output, {{"--onnx", onnx}});
  validate_yolo_config(yolo);
  YoloModel y = load_with_nms(onnx, yolo);
  YoloBuildResult result;
  result.layout = yolo_layout_name(y.head.layout);
  result.description = y.head.description;
  TRT_LOG_INFO("build_yolo: {}", y.head.description);
  const bool tensorrt = build.backend == "tensorrt";
  if (y.head.layout == YoloLayout::kEndToEnd)
    result.build = tensorrt ? build_with_trtexec(onnx, output, build, /*dry_run=*/false)
                            : build_engine(onnx, output, build);
  else if (tensorrt)
    result.build = build_with_tensorrt_plugin(y.model, output, build);
  else
    result.build = build_from_temporary(y.model, onnx, output, build);
  return result;
}

}  // namespace trtutils::builder
