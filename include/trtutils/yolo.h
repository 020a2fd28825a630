// YOLO detectors with NMS inside the engine (the outputs of TensorRT's EfficientNMS_TRT plugin).
//
//   trtutils::builder::build_yolo_engine("yolov8n.onnx", "yolov8n.engine",
//                                        {.num_classes = 80, .conf_threshold = 0.25f},
//                                        {.fp16 = true});
//
// The model's detection head is recognised from its outputs' shapes (C = num_classes, A the
// number of anchors; N and A may be symbolic, the channel dimension must be static):
//   YOLOv8 / YOLOv11   one output [N, 4 + C, A]: (cx, cy, w, h) then class scores per anchor;
//                      transposed, split into boxes and scores
//   YOLOv5 / YOLOv7    one output [N, A, 5 + C]: box, objectness, class scores; the scores given
//                      to NMS are objectness * class score
//   boxes + scores     two outputs [N, A, 4] and [N, A, C], taken as they are
//   end-to-end         one output [N, top_k, 6] (YOLOv10: NMS-free): built unchanged
// Checked in this order, the first match wins (with num_classes 1 an [N, A, 6] output is the
// YOLOv5 layout). Outputs of other shapes (YOLOv5's per-level raw maps) are dropped.
// Anything else is an Error(kInvalidArgument) naming the output shapes seen and the layouts
// known. A recognised head gets a com.trtutils::EfficientNMS node (src/ops/detection_ops.h)
// and the model's outputs become num_dets [N, 1] int32, det_boxes [N, top_k, 4] float32
// (x1, y1, x2, y2), det_scores [N, top_k] float32 and det_classes [N, top_k] int32; then the
// graph goes through build_engine with `build` (the NMS layer runs on the CPU backend).
//
// Errors: what build_engine throws; Error(kInvalidArgument) for a config value out of range
// (num_classes < 1, thresholds outside [0, 1], top_k < 1, box_coding not "center_size" or
// "corner") or an output path that is the input model.
//
// backend "tensorrt": the model is written beside the engine as <output stem>_nms.onnx with
// TensorRT's own EfficientNMS_TRT plugin node (the same attributes and outputs) instead of ours,
// and trtexec builds it (build_with_trtexec; TensorRT's EfficientNMS orders equal scores its own
// way, so ties may come out in another order than ours).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "trtutils/builder.h"

namespace trtutils::builder {

struct YoloConfig {
  int64_t num_classes = 80;
  float conf_threshold = 0.25f;  // candidates: score >= conf_threshold (EfficientNMS's rule)
  float iou_threshold = 0.5f;    // suppressed: IoU >= iou_threshold with a kept box
  int64_t top_k = 100;           // detections kept per image
  // How the model codes its boxes: "center_size" (cx, cy, w, h: YOLO heads) or "corner"
  // (x1, y1, x2, y2). det_boxes are corners either way.
  std::string box_coding = "center_size";
  bool class_agnostic = false;  // one suppression across classes
};

struct YoloBuildResult {
  std::string layout;       // "yolov8", "yolov5", "boxes_scores" or "end_to_end"
  std::string description;  // e.g. "YOLOv8/v11 head: output0 [1, 84, 8400]"
  BuildResult build;
};

YoloBuildResult build_yolo_engine(const std::filesystem::path& onnx,
                                  const std::filesystem::path& output, const YoloConfig& yolo = {},
                                  const BuildConfig& build = {});

// The head write_yolo_nms_onnx recognised.
struct YoloHeadInfo {
  std::string layout{};       // as YoloBuildResult::layout
  std::string description{};  // as YoloBuildResult::description
};

// The graph half of build_yolo_engine alone: `onnx` with the NMS appended (the rules above),
// written to `out` atomically: our com.trtutils::EfficientNMS node, or with tensorrt_plugin
// TensorRT's EfficientNMS_TRT (the same attributes plus background_class -1, score_activation
// 0, plugin_version "1"; the com.trtutils opset import removed), which trtexec builds with the
// plugin library TensorRT ships. An end-to-end model is written unchanged. Errors as
// build_yolo_engine's (an `out` that is `onnx` is refused naming --output and --onnx).
YoloHeadInfo write_yolo_nms_onnx(const std::filesystem::path& onnx,
                                 const std::filesystem::path& out, const YoloConfig& yolo = {},
                                 bool tensorrt_plugin = false);
// Where build_yolo_engine with backend "tensorrt" keeps that model: <output dir>/<output
// stem>_nms.onnx.
std::filesystem::path tensorrt_nms_onnx_path(const std::filesystem::path& output);

}  // namespace trtutils::builder
