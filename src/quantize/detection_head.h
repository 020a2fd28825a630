// The decode of a detection head: the arithmetic a detector runs after its last learned layers
// turn feature maps into per-anchor predictions (YOLOv5/v8/v11/X, RetinaNet, FCOS, SSD: the
// Reshape / Transpose into anchor lists, Concat of the levels, Sigmoid / Softmax, the DFL
// expectation, box arithmetic with anchors and strides). Its values are coordinates in pixels
// next to probabilities in [0, 1] in one tensor (a Concat of boxes and scores), where one int8
// scale cannot serve both, so `quantize` leaves it in float by default, as deployments of
// nvidia-modelopt do by excluding the head's decode nodes.
//
// The rule, on the graph alone:
//   - a feature layer is a Conv / ConvTranspose / Gemm / MatMul whose weight is not a constant
//     (attention), or a constant with at least 2 output channels and 256 elements (the DFL's
//     fixed [1, 16, 1, 1] expectation conv is not one);
//   - a flattening point is a Reshape or Flatten whose input is a rank-4 feature map with more
//     than one spatial position and whose output is not rank 4 (feature maps into anchor lists);
//   - the decode is every node reachable from a flattening point from which no feature layer
//     is reachable. ViT's patch flattening and DETR's feature flattening are followed by
//     feature layers, so they have none; a classifier's Flatten after global pooling (1x1) is
//     not a flattening point.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace trtutils::quantize {

// Names of the decode nodes, in graph order (empty for a model without a detection head).
std::vector<std::string> detection_head_decode_nodes(const ir::Graph& g);

}  // namespace trtutils::quantize
