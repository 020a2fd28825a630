// The graph half of build_yolo_engine (include/trtutils/yolo.h): recognise a YOLO model's
// detection head and append the EfficientNMS node, on the IR, so that tests can check it on
// graphs built in code.
#pragma once

#include <filesystem>
#include <string>

#include "ir/graph.h"
#include "trtutils/yolo.h"

namespace trtutils::builder {

enum class YoloLayout { kYoloV8, kYoloV5, kBoxesScores, kEndToEnd };

// "yolov8", "yolov5", "boxes_scores", "end_to_end".
const char* yolo_layout_name(YoloLayout layout);

struct YoloHead {
  YoloLayout layout = YoloLayout::kYoloV8;
  std::string description;  // "YOLOv8/v11 head: output0 [1, 84, 8400]"
};

// Validates `config` (Error(kInvalidArgument)), infers output shapes where the model lacks them,
// recognises the head (the rules and the error for an unknown layout: yolo.h; `source` names
// the model in messages) and, unless the model is end-to-end, rewrites model.graph: the NMS
// node and its four outputs replace the graph's outputs, dead nodes are removed and the
// com.trtutils domain is imported.
YoloHead add_yolo_nms(ir::Model& model, const YoloConfig& config, const std::string& source);

// write_yolo_nms_onnx and tensorrt_nms_onnx_path: include/trtutils/yolo.h.

}  // namespace trtutils::builder
