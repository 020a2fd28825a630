#include <algorithm>
#include <charconv>
#include <random>

#include "commands.h"
#include "trtutils/check.h"
#include "trtutils/engine.h"
#include "trtutils/file_util.h"
#include "trtutils/logging.h"
#include "trtutils/npy.h"

namespace trtutils::cli {

std::string sanitize_file_name(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  if (s.empty() || s == "." || s == "..") s = "_" + s;
  return s;
}

namespace {

Tensor random_tensor(const ModelTensorInfo& v, std::mt19937_64& rng) {
  TRT_CHECK(v.shape.has_value(), ErrorCode::kInvalidArgument,
            "input '{}' has no declared shape; give it with --input {}=FILE.npy", v.name, v.name);
  Shape shape;
  for (const auto& d : *v.shape) {
    if (!d.is_static())
      TRT_LOG_INFO("input '{}': dimension '{}' set to 1 for random data", v.name,
                   d.param.empty() ? "?" : d.param);
    shape.push_back(d.is_static() ? d.value : 1);
  }
  Tensor t;
  try {
    t = Tensor(v.dtype, shape);
  } catch (const Error& e) {  // the allocator's message does not say which input
    throw Error(e.code(), fmt::format("input '{}': cannot make random data: {}; give it with "
                                      "--input {}=FILE.npy",
                                      v.name, e.what(), v.name));
  }
  std::uniform_real_distribution<float> uf(0.0f, 1.0f);
  std::uniform_int_distribution<int> ui(0, 9);
  const int64_t n = t.numel();
  switch (v.dtype) {
    case DataType::kFloat32:
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = uf(rng);
      break;
    case DataType::kFloat64:
      for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = uf(rng);
      break;
    case DataType::kFloat16:
      for (int64_t i = 0; i < n; ++i) t.data<half>()[i] = float_to_half(uf(rng));
      break;
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kBool:
      for (int64_t i = 0; i < n; ++i)
        t.data<uint8_t>()[i] =
            static_cast<uint8_t>(v.dtype == DataType::kBool ? ui(rng) % 2 : ui(rng));
      break;
    case DataType::kInt32:
      for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = ui(rng);
      break;
    case DataType::kInt64:
      for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = ui(rng);
      break;
    default:
      TRT_THROW(
          ErrorCode::kNotSupported,
          "cannot make random data of dtype {} for input '{}'; give it with --input {}=FILE.npy",
          dtype_name(v.dtype), v.name, v.name);
  }
  return t;
}

}  // namespace

Tensor random_input(const ModelTensorInfo& input, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return random_tensor(input, rng);
}

std::vector<ModelTensorInfo> with_shapes(std::vector<ModelTensorInfo> inputs,
                                         const std::vector<std::string>& specs) {
  for (const auto& spec : specs) {
    const auto [name, shape] = parse_shape_spec(spec, "--shapes");
    auto it = std::find_if(inputs.begin(), inputs.end(),
                           [&](const ModelTensorInfo& v) { return v.name == name; });
    std::string names;
    for (const auto& v : inputs) names += (names.empty() ? "" : ", ") + v.name;
    TRT_CHECK_ARG(it != inputs.end(), "--shapes '{}': the model has no input '{}' (inputs: {})",
                  spec, name, names);
    if (it->shape) {
      TRT_CHECK_ARG(it->shape->size() == shape.size(),
                    "--shapes '{}': input '{}' has rank {}, the shape has {} dimensions", spec,
                    name, it->shape->size(), shape.size());
      for (size_t d = 0; d < shape.size(); ++d)
        TRT_CHECK_ARG(!(*it->shape)[d].is_static() || (*it->shape)[d].value == shape[d],
                      "--shapes '{}': dimension {} of input '{}' is fixed at {}", spec, d, name,
                      (*it->shape)[d].value);
    }
    std::vector<ModelDim> dims;
    for (int64_t d : shape) dims.push_back({.value = d});
    it->shape = dims;
  }
  return inputs;
}

std::vector<ModelTensorInfo> engine_inputs(const Engine& engine) {
  std::vector<ModelTensorInfo> r;
  for (const auto& t : engine.inputs()) {
    ModelTensorInfo v;
    v.name = t.name;
    v.dtype = t.dtype;
    std::vector<ModelDim> s;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (t.shape[d] >= 0)
        s.push_back({.value = t.shape[d]});
      else if (d < t.opt_shape.size())
        s.push_back({.value = t.opt_shape[d]});
      else
        s.push_back({.param = d < t.dim_names.size() ? t.dim_names[d] : std::string()});
    }
    v.shape = s;
    r.push_back(v);
  }
  return r;
}

uint64_t parse_byte_size(const std::string& text, const char* flag) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  uint64_t mul = 1;
  const std::string suffix(ptr, end);
  if (suffix == "K" || suffix == "k" || suffix == "KiB")
    mul = uint64_t{1} << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB")
    mul = uint64_t{1} << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB")
    mul = uint64_t{1} << 30;
  else if (suffix == "T" || suffix == "t" || suffix == "TiB")
    mul = uint64_t{1} << 40;
  else
    TRT_CHECK_ARG(suffix.empty() || suffix == "B", "{} '{}': expected a size such as 512M or 8G",
                  flag, text);
  TRT_CHECK_ARG(ec == std::errc() && ptr != text.data() && v > 0 && v <= UINT64_MAX / mul,
                "{} '{}': expected a positive size such as 512M or 8G", flag, text);
  return v * mul;
}

std::pair<std::string, Shape> parse_shape_spec(const std::string& spec, const char* flag) {
  const auto colon = spec.rfind(':');
  TRT_CHECK_ARG(colon != std::string::npos && colon > 0 && colon + 1 < spec.size(),
                "{} '{}': expected NAME:d0,d1,... (e.g. input:8,3,224,224)", flag, spec);
  const std::string name = spec.substr(0, colon);
  Shape shape;
  std::string dims = spec.substr(colon + 1);
  for (char& c : dims)
    if (c == 'x') c = ',';
  size_t pos = 0;
  while (pos <= dims.size()) {
    const size_t next = std::min(dims.find(',', pos), dims.size());
    const std::string tok = dims.substr(pos, next - pos);
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    TRT_CHECK_ARG(!tok.empty() && ec == std::errc() && ptr == tok.data() + tok.size() && v >= 1,
                  "{} '{}': '{}' is not a dimension (positive integers only)", flag, spec, tok);
    shape.push_back(v);
    pos = next + 1;
  }
  return {name, shape};
}

void check_output_is_not_an_input(const char* flag, const std::filesystem::path& output,
                                  const std::string& model_flag, const std::string& model,
                                  const std::vector<std::string>& input_specs) {
  check_output_is_not_input(flag, output, {{model_flag, model}});
  for (const auto& spec : input_specs)  // NAME=FILE or FILE
    check_output_is_not_input(flag, output, {{"--input", spec.substr(spec.find('=') + 1)}});
}

std::map<std::string, Tensor> make_feeds(const std::vector<ModelTensorInfo>& inputs,
                                         const std::vector<std::string>& specs, uint64_t seed) {
  std::map<std::string, Tensor> feeds;
  for (const auto& spec : specs) {
    std::string name, file;
    const auto eq = spec.find('=');
    if (eq == std::string::npos) {
      TRT_CHECK_ARG(inputs.size() == 1,
                    "--input '{}': the model has {} inputs, so give each as NAME=FILE.npy", spec,
                    inputs.size());
      name = inputs[0].name;
      file = spec;
    } else {
      name = spec.substr(0, eq);
      file = spec.substr(eq + 1);
    }
    TRT_CHECK_ARG(!feeds.count(name), "--input '{}' is given twice", name);
    try {
      feeds[name] = npy_load(file);
    } catch (const Error& e) {
      throw Error(e.code(), fmt::format("--input {}: {}", name, e.what()));
    }
  }
  std::vector<const ModelTensorInfo*> missing;
  for (const auto& v : inputs)
    if (!feeds.count(v.name)) missing.push_back(&v);
  if (missing.size() == 1) {
    std::mt19937_64 rng(seed);
    TRT_LOG_INFO("input '{}' not given: using random data (seed {})", missing[0]->name, seed);
    feeds[missing[0]->name] = random_tensor(*missing[0], rng);
  } else if (missing.size() > 1) {
    std::string names;
    for (const auto* v : missing) names += (names.empty() ? "'" : ", '") + v->name + "'";
    TRT_THROW(ErrorCode::kInvalidArgument,
              "inputs {} are not given: pass them with --input NAME=FILE.npy (only one input may "
              "be left out, it then gets random data)",
              names);
  }
  return feeds;
}

}  // namespace trtutils::cli
