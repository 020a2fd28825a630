// trtutils can_run_on_dla --onnx MODEL [--shape NAME:d0,d1,...] [--max_chunks N]
//   [--min_layers N] [--json]: per layer, whether it fits NVIDIA's DLA 2.0 (Orin) restrictions
// and the rule it breaks; then the contiguous DLA-able chunks and the ones build_dla would place.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "flag_ranges.h"
#include "trtutils/check.h"
#include "trtutils/dla.h"

namespace trtutils::cli {

namespace {

struct CanRunOnDlaFlags {
  std::string onnx;
  std::vector<std::string> shapes;
  int max_chunks = 1;
  int min_layers = 20;
  bool json = false;
};

std::string chunk_str(const builder::DlaChunkReport& c) {
  return fmt::format("#{}-#{} ({} layers: '{}' .. '{}')", c.begin, c.end - 1, c.layers(), c.first,
                     c.last);
}

void run(const CanRunOnDlaFlags& f) {
  builder::DlaCheckOptions o;
  o.max_chunks = f.max_chunks;
  o.min_layers = f.min_layers;
  for (const auto& s : f.shapes) {
    auto [name, shape] = parse_shape_spec(s, "--shape");
    TRT_CHECK_ARG(!o.shapes.count(name), "--shape: input '{}' is given twice", name);
    o.shapes[name] = shape;
  }
  const builder::DlaReport r = builder::can_run_on_dla(f.onnx, o);
  if (f.json) {
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& l : r.layers) {
      nlohmann::json j = {{"index", l.index}, {"name", l.name}, {"op", l.op}, {"dla", l.dla}};
      if (!l.dla) {
        j["rule"] = l.rule;
        j["detail"] = l.detail;
        if (!l.limit.empty() || !l.source.empty()) {  // the rule is in the table
          j["limit"] = l.limit;
          j["source"] = l.source;
        }
      }
      layers.push_back(j);
    }
    auto chunks = [](const std::vector<builder::DlaChunkReport>& v) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& c : v)
        a.push_back({{"begin", c.begin},
                     {"end", c.end},
                     {"layers", c.layers()},
                     {"first", c.first},
                     {"last", c.last}});
      return a;
    };
    nlohmann::json j = {{"onnx", f.onnx},
                        {"layers", layers},
                        {"num_layers", r.layers.size()},
                        {"dla_layers", r.dla_layers},
                        {"chunks", chunks(r.chunks)},
                        {"selected", chunks(r.selected)},
                        {"max_chunks", f.max_chunks},
                        {"min_layers", f.min_layers}};
    fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  fmt::print("{}: {} of {} layers can run on DLA (Orin, DLA 2.0)\n", f.onnx, r.dla_layers,
             r.layers.size());
  fmt::print("{:>4}  {:<40} {:<20} {:<4} {}\n", "#", "layer", "op", "DLA", "failed rule");
  for (const auto& l : r.layers) {
    const std::string name = l.name.size() > 40 ? l.name.substr(0, 37) + "..." : l.name;
    fmt::print("{:>4}  {:<40} {:<20} {:<4} {}\n", l.index, name, l.op, l.dla ? "yes" : "no",
               l.dla ? "" : l.rule + ": " + l.detail);
  }
  fmt::print("DLA-able chunks: {}\n", r.chunks.size());
  for (const auto& c : r.chunks) fmt::print("  {}\n", chunk_str(c));
  fmt::print("placed on DLA by build_dla (max_chunks {}, min_layers {}): {}\n", f.max_chunks,
             f.min_layers, r.selected.empty() ? "none (GPU only)" : "");
  for (const auto& c : r.selected) fmt::print("  {}\n", chunk_str(c));
}

}  // namespace

void add_can_run_on_dla_command(CLI::App& app) {
  auto f = std::make_shared<CanRunOnDlaFlags>();
  CLI::App* sub = app.add_subcommand("can_run_on_dla",
                                     "Check each layer against the DLA (Jetson Orin) restrictions");
  sub->add_option("--onnx", f->onnx, "ONNX model")->required();
  sub->add_option("--shape", f->shapes, "NAME:d0,d1,... fix a dynamic input, repeatable");
  add_dla_chunk_flags(sub, f->max_chunks, f->min_layers, "chunks build_dla would place",
                      "smallest chunk build_dla would place");
  sub->add_flag("--json", f->json, "print as JSON");
  sub->callback([f] { run(*f); });
}

}  // namespace trtutils::cli
