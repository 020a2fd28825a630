// Detection post-processing ops (domain com.trtutils), appended to detector graphs by
// builder::build_yolo_engine (src/engine/yolo_builder.cpp).
//
// EfficientNMS: non-maximum suppression with the contract of TensorRT's EfficientNMS_TRT plugin
// (plugin/efficientNMSPlugin in NVIDIA/TensorRT), standard mode (no anchors input).
//   Inputs   0 boxes  [N, A, 4] float32 or float16: one box per anchor, shared by every class,
//                     coded as box_coding says
//            1 scores [N, A, C] float32 or float16
//   Attributes
//     score_threshold  float, default 0     candidates: score >= score_threshold (see below)
//     iou_threshold    float, default 0.5   suppression: IoU >= iou_threshold (see below)
//     max_output_boxes int, default 100     K, detections kept per image (>= 1)
//     box_coding       int, default 0       0: corners (x1, y1, x2, y2), any two opposite
//                                           corners; 1: center-size (cx, cy, w, h)
//     class_agnostic   int, default 0       1: a box suppresses boxes of every class
//     background_class int, default -1      this class is never a candidate (-1: none)
//   Outputs  0 num_dets    [N, 1] int32     detections per image, <= K
//            1 det_boxes   [N, K, 4] float32, corner coding whatever box_coding is (corner
//                                           inputs are passed through as given, not reordered)
//            2 det_scores  [N, K] float32
//            3 det_classes [N, K] int32
//   Slots at or past num_dets are zero. Outputs are float32 also for float16 inputs (the
//   plugin writes the input type there).
//
// Semantics, per image independently, as the plugin's kernels compute them:
//   1. Candidates are the (anchor, class) pairs with score >= score_threshold. The plugin's
//      filter keeps `score >= threshold` (EfficientNMSFilter: gte_mp; its dense path for
//      thresholds < 0.007 drops `score < threshold`), so a score equal to the threshold is kept.
//   2. They are sorted by score descending; equal scores keep the element order (anchor * C +
//      class): lower anchor first, then lower class (the plugin's stable radix sort over the
//      densely indexed scores).
//   3. Greedy suppression in that order: a candidate is dropped when a candidate kept before it,
//      of the same class (any class when class_agnostic), has IoU >= iou_threshold with it; the
//      plugin drops at `IOU(...) >= iouThreshold`. So iou_threshold = 0 keeps one box per class.
//      IoU is computed on reordered corners (x1 <= x2, y1 <= y2) in float32: intersection area
//      (0 when empty) / (area_a + area_b - intersection), 0 when either is not positive.
//   4. Kept candidates are written in that order until K are kept.
// Not reproduced: the plugin runs step 3 on the 4096 best candidates only (numSelectedBoxes);
// here every candidate takes part, so results differ only for images with more than 4096
// candidates. Not supported: per-class boxes [N, A, C, 4], the anchors input (fused box
// decoder) and score_activation.
#pragma once

namespace trtutils::ops::detection {

constexpr const char* kDomain = "com.trtutils";
constexpr const char* kEfficientNMS = "EfficientNMS";

enum BoxCoding : int { kBoxCodingCorner = 0, kBoxCodingCenterSize = 1 };

}  // namespace trtutils::ops::detection
