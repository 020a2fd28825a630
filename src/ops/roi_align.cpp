// RoiAlign's attributes (roi_align.h has the sampling rules).
#include "ops/roi_align.h"

#include <string>

#include "core/check.h"
#include "ir/graph.h"

namespace trtutils::ops::roi {

Attrs parse_attrs(const ir::Node& n, int64_t opset) {
  Attrs a;
  a.oh = n.attr_int("output_height", 1);
  a.ow = n.attr_int("output_width", 1);
  a.sampling = n.attr_int("sampling_ratio", 0);
  a.scale = n.attr_float("spatial_scale", 1.0f);
  const std::string mode = n.attr_string("mode", "avg");
  TRT_CHECK_ARG(mode == "avg" || mode == "max", "{}: mode '{}' (expected avg or max)", n.describe(),
                mode);
  a.max_mode = mode == "max";
  const std::string ctm = opset >= 16
                              ? n.attr_string("coordinate_transformation_mode", "half_pixel")
                              : "output_half_pixel";
  TRT_CHECK_ARG(ctm == "half_pixel" || ctm == "output_half_pixel",
                "{}: coordinate_transformation_mode '{}' (expected half_pixel or "
                "output_half_pixel)",
                n.describe(), ctm);
  a.half_pixel = ctm == "half_pixel";
  TRT_CHECK_ARG(a.oh >= 1 && a.ow >= 1 && a.sampling >= 0,
                "{}: output_height {}, output_width {} and sampling_ratio {} out of range",
                n.describe(), a.oh, a.ow, a.sampling);
  return a;
}

}  // namespace trtutils::ops::roi
