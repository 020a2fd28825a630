// The layer table of `trtutils inspect`. Narrow (the default) fits kInspectNarrowWidth columns:
// index, precision, device, op and the layer name last, printed whole (names are what
// `--layer_precision NAME:PREC` takes); a name too long for its line goes on indented
// continuation lines, broken after a '/', '.', '_' or ':' where it can. Wide (--wide) adds the
// layout (GPU layers), the kernel / tactic and the shapes (inputs -> outputs), names whole in a
// column as wide as the longest. Each function returns the table's text, header line first, one
// line per row.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "trtutils/engine.h"

namespace trtutils::cli {

inline constexpr size_t kInspectNarrowWidth = 100;

std::string inspect_narrow_table(const std::vector<EngineLayerInfo>& layers);
std::string inspect_wide_table(const std::vector<EngineLayerInfo>& layers);

// `name` cut into pieces of at most `width` characters (>= 1) that concatenate to it.
std::vector<std::string> inspect_wrap_name(const std::string& name, size_t width);

}  // namespace trtutils::cli
