#include "inspect_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

namespace trtutils::cli {

namespace {

// Width of a column: its header or its longest value, at most `cap`.
template <typename Get>
size_t inspect_column_width(const std::vector<EngineLayerInfo>& layers, const char* header,
                            size_t cap, Get get) {
  size_t w = std::string(header).size();
  for (const auto& l : layers) w = std::max(w, get(l).size());
  return std::min(w, cap);
}

std::string inspect_joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v)
    if (!x.empty()) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Where a piece of `name` starting at `from` ends: after the last separator in its second
// half, else at `width` characters.
size_t inspect_piece_end(const std::string& name, size_t from, size_t width) {
  const size_t hard = from + width;
  if (hard >= name.size()) return name.size();
  for (size_t e = hard; e > from + width / 2; --e)
    if (std::string_view("/._:").find(name[e - 1]) != std::string_view::npos) return e;
  return hard;
}

}  // namespace

std::vector<std::string> inspect_wrap_name(const std::string& name, size_t width) {
  width = std::max<size_t>(width, 1);
  std::vector<std::string> pieces;
  for (size_t at = 0; at < name.size();) {
    const size_t end = inspect_piece_end(name, at, width);
    pieces.push_back(name.substr(at, end - at));
    at = end;
  }
  if (pieces.empty()) pieces.emplace_back();
  return pieces;
}

std::string inspect_narrow_table(const std::vector<EngineLayerInfo>& layers) {
  const auto device = [](const EngineLayerInfo& l) -> const std::string& { return l.device; };
  const auto op = [](const EngineLayerInfo& l) -> const std::string& { return l.op; };
  const size_t dw = inspect_column_width(layers, "device", 16, device);
  const size_t ow = inspect_column_width(layers, "op", 28, op);
  std::string out = fmt::format("{:>4}  {:<9} {:<{}} {:<{}} {}\n", "#", "precision", "device", dw,
                                "op", ow, "layer");
  for (const auto& l : layers) {
    const std::string prefix =
        fmt::format("{:>4}  {:<9} {:<{}} {:<{}} ", l.index, l.precision, l.device, dw, l.op, ow);
    const size_t room =
        kInspectNarrowWidth > prefix.size() + 24 ? kInspectNarrowWidth - prefix.size() : size_t{24};
    const std::vector<std::string> pieces = inspect_wrap_name(l.name, room);
    out += prefix + pieces[0] + "\n";
    for (size_t k = 1; k < pieces.size(); ++k)
      out += std::string(prefix.size(), ' ') + pieces[k] + "\n";
  }
  return out;
}

std::string inspect_wide_table(const std::vector<EngineLayerInfo>& layers) {
  const auto name = [](const EngineLayerInfo& l) -> const std::string& { return l.name; };
  const size_t nw = std::max<size_t>(36, inspect_column_width(layers, "layer", 4096, name));
  std::string out =
      fmt::format("{:>4}  {:<{}} {:<24} {:<9} {:<6} {:<6} {:<28} {}\n", "#", "layer", nw, "op",
                  "precision", "device", "layout", "kernel", "shapes (inputs -> outputs)");
  for (const auto& l : layers) {
    const std::string kernel = l.kernel + (l.tactic.empty() ? "" : "/" + l.tactic);
    out += fmt::format("{:>4}  {:<{}} {:<24} {:<9} {:<6} {:<6} {:<28} {} -> {}\n", l.index, l.name,
                       nw, l.op, l.precision, l.device, l.layout.empty() ? "-" : l.layout, kernel,
                       inspect_joined(l.input_shapes), inspect_joined(l.output_shapes));
  }
  return out;
}

}  // namespace trtutils::cli
