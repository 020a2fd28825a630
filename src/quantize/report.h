// Accuracy of a Q/DQ model against its float original: SQNR, cosine similarity and max abs
// error of pairs of tensors (float model value, Q/DQ model value), accumulated over batches.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "quantize/qdq.h"
#include "trtutils/quantize.h"

namespace trtutils::quantize {

struct PairMetrics {
  double sqnr_db = 0;  // 10 log10(sum ref^2 / sum err^2); +inf when identical
  double cosine = 0;
  double max_abs_error = 0;
};

// Accumulates the sums one batch at a time.
class MetricsAccumulator {
 public:
  void add(const Tensor& ref, const Tensor& test);  // same element count, any float dtype
  PairMetrics result() const;

 private:
  double sig_ = 0, noise_ = 0, dot_ = 0, nr_ = 0, nt_ = 0, max_abs_ = 0;
};

// Runs both models on `num_batches` batches; for each pair (name in the float model, name in
// the Q/DQ model) returns the metrics. Names that are not outputs are marked as extra outputs.
std::vector<PairMetrics> compare_models(
    const ir::Model& float_model, const ir::Model& qdq_model,
    const std::vector<std::pair<std::string, std::string>>& pairs, int64_t num_batches,
    const std::function<std::map<std::string, Tensor>(int64_t)>& feed_batch, int num_threads);

// The values of `names` (outputs or inner values) of `model` on each batch.
std::vector<std::map<std::string, Tensor>> run_batches(
    const ir::Model& model, const std::vector<std::string>& names, int64_t num_batches,
    const std::function<std::map<std::string, Tensor>(int64_t)>& feed_batch, int num_threads);
// The metrics of each pair over batches already computed: reference[b] (float model values,
// pair.first) against got[b] (pair.second).
std::vector<PairMetrics> pair_metrics(
    const std::vector<std::map<std::string, Tensor>>& reference,
    const std::vector<std::map<std::string, Tensor>>& got,
    const std::vector<std::pair<std::string, std::string>>& pairs);
// As compare_models, against reference values computed once by run_batches.
std::vector<PairMetrics> compare_to_reference(
    const std::vector<std::map<std::string, Tensor>>& reference, const ir::Model& qdq_model,
    const std::vector<std::pair<std::string, std::string>>& pairs,
    const std::function<std::map<std::string, Tensor>(int64_t)>& feed_batch, int num_threads);

// A PNG bar chart of per-tensor SQNR (graph order; gridlines every 10 dB), written atomically.
void plot_sqnr_png(const std::vector<QuantizeTensorMetrics>& tensors,
                   const std::filesystem::path& path);

// The JSON report: options, counts, per-output and per-tensor metrics, the scale table.
std::string report_json(const QuantizeOptions& o, const QuantizeResult& r, const ScaleTable& table,
                        double qmax);

}  // namespace trtutils::quantize
