// quantize_onnx's data stage (quantize_stages.h): the calibration data (a .npy file or an image
// directory) as batches for the model's input, and which of them calibrate and which the report
// evaluates (eval_split.h).
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/check.h"
#include "data/input_images.h"
#include "quantize/quantize_stages.h"
#include "trtutils/image_batcher.h"
#include "trtutils/logging.h"
#include "trtutils/npy.h"

namespace trtutils::quantize {

namespace fs = std::filesystem;

void BatchSource::set_file(const fs::path& path, uint64_t offset, Shape shape) {
  file_ = std::make_shared<std::ifstream>(path, std::ios::binary);
  TRT_CHECK(file_->good(), ErrorCode::kIO, "cannot open {}", path.string());
  path_ = path;
  offset_ = offset;
  shape_ = std::move(shape);
}

Tensor BatchSource::batch(int64_t i) const {
  if (!file_) return batches_.at(i);
  const auto [b, e] = ranges_.at(i);
  Shape s = shape_;
  s[0] = e - b;
  Tensor t(DataType::kFloat32, s);
  const uint64_t row = t.nbytes() / static_cast<uint64_t>(e - b);
  file_->clear();
  file_->seekg(static_cast<std::streamoff>(offset_ + row * static_cast<uint64_t>(b)));
  file_->read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  TRT_CHECK(file_->good(), ErrorCode::kIO, "{}: truncated while reading samples {}..{}",
            path_.string(), b, e - 1);
  check_calibration_values(t, path_.string(), b);
  return t;
}

namespace {

Tensor slice_rows(const Tensor& t, int64_t begin, int64_t end) {
  Shape s = t.shape();
  s[0] = end - begin;
  Tensor r(t.dtype(), s);
  const size_t row = t.nbytes() / static_cast<size_t>(std::max<int64_t>(1, t.dim(0)));
  std::memcpy(r.raw(), static_cast<const uint8_t*>(t.raw()) + row * begin, row * (end - begin));
  return r;
}

Tensor to_dtype(const Tensor& t, DataType dt) {
  if (t.dtype() == dt) return t;
  TRT_CHECK(dt == DataType::kFloat32, ErrorCode::kNotSupported,
            "calibration data is {}, the model input is {}: convert the data to {}",
            dtype_name(t.dtype()), dtype_name(dt), dtype_name(dt));
  std::vector<float> v = t.to_float_vector();
  return Tensor::from_vector<float>(DataType::kFloat32, t.shape(), v);
}

// Data of one more axis than the model input whose other dims match: samples for an input
// without a batch axis (see BatchSource::unbatched).
bool unbatched_data(const Shape& ds, const ir::SymShape& ms) {
  bool yes = ds.size() == ms.size() + 1;
  for (size_t d = 0; yes && d < ms.size(); ++d)
    yes = !ms[d].is_static() || ms[d].value == ds[d + 1];
  return yes;
}

}  // namespace

BatchSource load_batches(const QuantizeOptions& o, const ir::Graph& g) {
  TRT_CHECK_ARG(g.inputs.size() == 1,
                "calibration data feeds one input, but the model has {} inputs", g.inputs.size());
  const ir::ValueInfo& in = g.inputs[0];
  TRT_CHECK(in.shape.has_value(), ErrorCode::kNotSupported,
            "model input '{}' has no shape: cannot check the calibration data", in.name);
  const ir::SymShape& ms = *in.shape;
  BatchSource src;
  src.input_name = in.name;
  const bool static_batch = !ms.empty() && ms[0].is_static();
  int64_t bs = o.batch_size;
  auto fixed_batch = [&] {
    if (static_batch && ms[0].value != bs) {
      TRT_LOG_INFO(
          "model input '{}' has a fixed batch of {}: calibrating with batch_size {} (not {})",
          in.name, ms[0].value, ms[0].value, bs);
      bs = ms[0].value;
    }
  };
  if (fs::is_directory(o.calibration_data)) {
    fixed_batch();
    ImageBatcherOptions bo = data::fit_images_to_input(o.image_preprocess, in);
    bo.image_dir = o.calibration_data;
    bo.batch_size = bs;
    bo.keep_partial = !static_batch;
    bo.num_threads = o.num_threads;
    bo.progress = o.progress;
    ImageBatcher batcher(bo);
    src.preprocessing = preprocessing_summary(batcher.options());
    TRT_LOG_INFO("calibration images: {}", src.preprocessing);
    for (Tensor t = batcher.next_batch(); !t.empty(); t = batcher.next_batch())
      src.add(to_dtype(t, in.dtype));
    return src;
  }
  // One reader for every .npy (npy_read_header checks what npy_load checks): little-endian
  // float32 data for a float32 input is streamed from the file, anything else loaded whole.
  const NpyHeader header = npy_read_header(o.calibration_data);
  const bool stream =
      header.dtype == DataType::kFloat32 && !header.big_endian && in.dtype == DataType::kFloat32;
  Tensor data;
  Shape dshape;
  if (stream) {
    dshape = header.shape;
  } else {
    data = to_dtype(npy_load(o.calibration_data), in.dtype);
    dshape = data.shape();
  }
  auto mismatch = [&] {
    std::string expect;
    for (size_t d = 1; d < ms.size(); ++d)
      expect +=
          (d > 1 ? ", " : "") + (ms[d].is_static() ? std::to_string(ms[d].value) : ms[d].param);
    return fmt::format(
        "calibration data {} has shape {}, which does not fit the model input '{}' {} "
        "(expected [samples, {}])",
        o.calibration_data.string(), shape_str(dshape), in.name, ir::sym_shape_str(ms), expect);
  };
  const bool unbatched = unbatched_data(dshape, ms);
  if (unbatched) {
    TRT_LOG_INFO("model input '{}' {} has no batch axis: calibrating one sample at a time", in.name,
                 ir::sym_shape_str(ms));
    src.unbatched = true;
    bs = 1;
  } else {
    fixed_batch();
    TRT_CHECK_ARG(dshape.size() == ms.size() && !dshape.empty(), "{}", mismatch());
    for (size_t d = 1; d < ms.size(); ++d)
      TRT_CHECK_ARG(!ms[d].is_static() || ms[d].value == dshape[d], "{}", mismatch());
  }
  TRT_CHECK_ARG(dshape[0] >= 1, "calibration data {} has no samples", o.calibration_data.string());
  if (!data.defined()) src.set_file(o.calibration_data, header.data_offset, dshape);
  const int64_t n = dshape[0];
  for (int64_t b = 0; b < n; b += bs) {
    const int64_t e = std::min(n, b + bs);
    if (e - b < bs && static_batch && !unbatched) {
      TRT_LOG_INFO("dropping the last {} sample(s): the model's batch is fixed at {}", e - b, bs);
      break;
    }
    if (data.defined()) {
      src.add(slice_rows(data, b, e));
      check_calibration_values(src.last(), o.calibration_data.string(), b);
    } else {
      src.add_file_range(b, e);
    }
  }
  TRT_CHECK_ARG(src.num_batches() > 0,
                "calibration data {} has {} samples, fewer than one batch of {}",
                o.calibration_data.string(), n, bs);
  return src;
}

void load_data(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  if (run.have_data) {
    run.data = load_batches(o, run.model.graph);
    const EvalSplit split = split_batches(run.data->num_batches(), run.data->samples(0, 1),
                                          o.eval_batches, o.max_calibration_batches);
    run.calib_batches = split.calib_batches;
    run.eval_index = split.eval;
    if (o.eval_batches && !run.eval_index.empty() && !split.held_out)
      TRT_LOG_WARN(
          "only {} batch(es) of calibration data: the report evaluates on calibration "
          "batches (not held out)",
          run.data->num_batches());
    run.result.preprocessing = run.data->preprocessing;
    run.result.calibration_samples = run.data->samples(0, run.calib_batches);
    for (int64_t b : run.eval_index) run.result.eval_samples += run.data->samples(b, b + 1);
    run.result.eval_held_out = split.held_out;
  }
}

}  // namespace trtutils::quantize
