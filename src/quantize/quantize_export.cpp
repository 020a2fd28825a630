// quantize_onnx's Q/DQ stages (quantize_stages.h): where the Q/DQ nodes go (placement.cpp), the
// Q/DQ model built from the float one with the scale table (rewrite.cpp), and saved.
#include <string>

#include "onnx/onnx_io.h"
#include "quantize/detection_head.h"
#include "quantize/quantize_stages.h"
#include "trtutils/logging.h"

namespace trtutils::quantize {

namespace {

uint64_t weight_bytes(const ir::Graph& g) {
  uint64_t n = 0;
  for (const auto& [name, t] : g.initializers) n += t.nbytes();
  return n;
}

}  // namespace

void place_activations(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  if (o.keep_detection_head_float) {
    run.result.excluded_detection_head = detection_head_decode_nodes(run.model.graph);
    run.po.nodes_excluded_exact.insert(run.result.excluded_detection_head.begin(),
                                       run.result.excluded_detection_head.end());
    if (!run.result.excluded_detection_head.empty())
      TRT_LOG_INFO("kept a detection head's decode in {}: {} node(s) ({}{})",
                   o.high_precision_dtype, run.result.excluded_detection_head.size(),
                   run.result.excluded_detection_head.front(),
                   run.result.excluded_detection_head.size() > 1 ? ", ..." : "");
  }
  run.placement = place_qdq(run.model.graph, run.po);
}

ir::Model build_qdq_model(const QuantizeRun& run, const Placement& p, ApplyStats* st) {
  ir::Model m = run.float_model;
  ApplyStats s = apply_qdq(m.graph, p, run.table, run.ao);
  if (st) *st = s;
  if (run.fp16) convert_to_fp16(m);
  return m;
}

void save_qdq_model(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  run.qmodel.graph.value_info.clear();
  run.qmodel.producer_name = "trtutils";
  onnx_io::SaveOptions save;
  if (weight_bytes(run.qmodel.graph) > kInlineMaxBytes)
    save.external_data_threshold = kExternalMinBytes;
  onnx_io::save_model(run.qmodel, o.output_path, save);
}

}  // namespace trtutils::quantize
