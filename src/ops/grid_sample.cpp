// GridSample's schema (output [N, C, Ho, Wo] from X [N, C, H, W] and grid [N, Ho, Wo, 2], X's
// dtype) and its attributes (grid_sample.h has the sampling rule).
#include "ops/grid_sample.h"

#include "core/check.h"
#include "ops/op_registry.h"

namespace trtutils::ops {
namespace grid {

Params parse_params(const ir::Node& node) {
  Params p;
  const std::string mode = node.attr_string("mode", "bilinear");
  if (mode == "bilinear" || mode == "linear")
    p.mode = Mode::kLinear;
  else if (mode == "nearest")
    p.mode = Mode::kNearest;
  else if (mode == "bicubic" || mode == "cubic")
    p.mode = Mode::kCubic;
  else
    TRT_THROW(ErrorCode::kNotSupported,
              "{}: mode '{}' (expected bilinear / linear, nearest, bicubic / cubic)",
              node.describe(), mode);
  const std::string pad = node.attr_string("padding_mode", "zeros");
  if (pad == "zeros")
    p.padding = Padding::kZeros;
  else if (pad == "border")
    p.padding = Padding::kBorder;
  else if (pad == "reflection")
    p.padding = Padding::kReflection;
  else
    TRT_THROW(ErrorCode::kNotSupported,
              "{}: padding_mode '{}' (expected zeros, border, reflection)", node.describe(), pad);
  p.align_corners = node.attr_int("align_corners", 0) != 0;
  return p;
}

}  // namespace grid

namespace {

void infer_grid_sample(InferContext& ctx) {
  (void)grid::parse_params(ctx.node);
  const auto& xs = ctx.input_shape(0);
  const auto& gs = ctx.input_shape(1);
  TRT_CHECK(!xs || xs->size() == 4, ErrorCode::kNotSupported,
            "{}: X must be 4-D [N, C, H, W] (volumetric GridSample is not supported)",
            ctx.node.describe());
  if (gs)
    TRT_CHECK_ARG(gs->size() == 4 && (*gs)[3] == ir::Dim(2),
                  "{}: grid must be [N, H_out, W_out, 2]", ctx.node.describe());
  ir::SymShape out{xs ? (*xs)[0] : ir::Dim(), xs ? (*xs)[1] : ir::Dim(), gs ? (*gs)[1] : ir::Dim(),
                   gs ? (*gs)[2] : ir::Dim()};
  ctx.set_output(0, ctx.input_dtype(0), out);
}

}  // namespace

void register_grid_sample_op(OpRegistry& r) {
  r.add({"GridSample", "", infer_grid_sample});
}

}  // namespace trtutils::ops
