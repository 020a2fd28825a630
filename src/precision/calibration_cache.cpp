#include "precision/calibration_cache.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <unordered_map>

#include "core/check.h"
#include "trtutils/file_util.h"

namespace trtutils::precision {

namespace {

bool is_alnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A line (or part of one) for an error message: non-printable bytes escaped, long text cut.
std::string quote(std::string_view s) {
  constexpr size_t kMax = 80;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f || c == '\\') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += s.size() > kMax ? "'..." : "'";
  return out;
}

bool known_algorithm(std::string_view a) {
  for (std::string_view k : kCalibrationAlgorithms)
    if (a == k) return true;
  return false;
}

std::string algorithm_list() {
  std::string s;
  for (std::string_view k : kCalibrationAlgorithms)
    s += fmt::format("{}{}", s.empty() ? "" : ", ", k);
  return s;
}

bool valid_version(std::string_view v) {
  if (v.empty()) return false;
  for (char c : v)
    if (!is_alnum(c)) return false;
  return true;
}

// "" if `scale` is usable, else what is wrong with it.
std::string scale_problem(float scale) {
  if (std::isnan(scale)) return "is NaN";
  if (std::signbit(scale)) return "is negative";
  if (std::isinf(scale)) return "is infinite";
  if (scale == 0.0f) return "is zero";
  return "";
}

constexpr std::string_view kScaleHint =
    "a scale must be finite and positive (TensorRT writes 0 for a tensor that was all zeros "
    "during calibration and inf when calibration overflowed): recalibrate or remove the line";

}  // namespace

std::optional<float> CalibrationCache::scale(const std::string& tensor) const {
  for (const auto& [name, s] : scales)
    if (name == tensor) return s;
  return std::nullopt;
}

CalibrationCache parse_calibration_cache(std::string_view text, const std::string& source) {
  CalibrationCache cache;
  cache.trt_version.clear();
  cache.algorithm.clear();
  std::unordered_map<std::string_view, size_t> first_line;  // views into `text`
  size_t line_no = 0;
  size_t pos = 0;
  bool header_seen = false;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);

    if (!header_seen) {
      const std::string_view h = trim(line);
      TRT_CHECK_ARG(h.substr(0, 4) == "TRT-" && h.find('-', 4) != std::string_view::npos,
                    "{}:{}: not a TensorRT calibration cache: expected a header "
                    "'TRT-<version>-<algorithm>' (e.g. TRT-8601-EntropyCalibration2), found {}",
                    source, line_no, quote(line));
      const size_t dash = h.find('-', 4);
      const std::string_view version = h.substr(4, dash - 4);
      const std::string_view algorithm = h.substr(dash + 1);
      TRT_CHECK_ARG(valid_version(version),
                    "{}:{}: bad header {}: the TensorRT version {} must be letters and digits "
                    "(e.g. 8601)",
                    source, line_no, quote(line), quote(version));
      TRT_CHECK_ARG(known_algorithm(algorithm),
                    "{}:{}: bad header {}: unknown calibration algorithm {} (expected one of {})",
                    source, line_no, quote(line), quote(algorithm), algorithm_list());
      cache.trt_version = std::string(version);
      cache.algorithm = std::string(algorithm);
      header_seen = true;
      continue;
    }
    if (trim(line).empty()) continue;

    const size_t colon = line.rfind(':');
    TRT_CHECK_ARG(colon != std::string_view::npos,
                  "{}:{}: expected '<tensor name>: <hex scale>', found no ':' in {}", source,
                  line_no, quote(line));
    const std::string_view name = line.substr(0, colon);
    const std::string_view hex = trim(line.substr(colon + 1));
    TRT_CHECK_ARG(!name.empty(), "{}:{}: empty tensor name in {}", source, line_no, quote(line));
    bool hex_ok = !hex.empty() && hex.size() <= 8;
    uint32_t bits = 0;
    for (char c : hex) {
      const int v = hex_value(c);
      hex_ok = hex_ok && v >= 0;
      bits = (bits << 4) | static_cast<uint32_t>(v < 0 ? 0 : v);
    }
    TRT_CHECK_ARG(hex_ok,
                  "{}:{}: the scale of tensor {} is {}, not 8 hex digits (the float32 bits of "
                  "amax/127, e.g. 3c010a14)",
                  source, line_no, quote(name), quote(hex));
    const float scale = std::bit_cast<float>(bits);
    // Fewer digits are read as leading zeros dropped (Python's hex() writes them so), which
    // only a normal float survives: 3 digits such as '3c0' would be a subnormal (8.6e-43).
    TRT_CHECK_ARG(hex.size() == 8 || std::fpclassify(scale) != FP_SUBNORMAL,
                  "{}:{}: the scale of tensor {} is {}, {} hex digits: read with its leading "
                  "zeros restored it is a subnormal float ({:g}), not a calibration scale; a "
                  "cache holds the 8 hex digits of the float32 bits of amax/127",
                  source, line_no, quote(name), quote(hex), hex.size(), scale);
    const std::string problem = scale_problem(scale);
    TRT_CHECK_ARG(problem.empty(), "{}:{}: the scale of tensor {} ({} = {}) {}; {}", source,
                  line_no, quote(name), hex, scale, problem, kScaleHint);
    const auto [it, inserted] = first_line.emplace(name, line_no);
    TRT_CHECK_ARG(inserted, "{}:{}: duplicate tensor {} (first on line {})", source, line_no,
                  quote(name), it->second);
    cache.scales.emplace_back(std::string(name), scale);
  }
  TRT_CHECK_ARG(header_seen,
                "{}: empty file: a TensorRT calibration cache starts with a header "
                "'TRT-<version>-<algorithm>' (e.g. TRT-8601-EntropyCalibration2)",
                source);
  return cache;
}

CalibrationCache read_calibration_cache(const std::filesystem::path& path) {
  std::error_code ec;
  TRT_CHECK(std::filesystem::exists(path, ec), ErrorCode::kIO, "calibration cache '{}' not found",
            path.string());
  require_regular_file(path, "calibration cache");
  return parse_calibration_cache(read_file(path, kMaxCalibrationCacheBytes), path.string());
}

std::string format_calibration_cache(const CalibrationCache& cache) {
  TRT_CHECK_ARG(valid_version(cache.trt_version),
                "cannot write a calibration cache: the TensorRT version '{}' must be letters and "
                "digits (e.g. 8601)",
                cache.trt_version);
  TRT_CHECK_ARG(known_algorithm(cache.algorithm),
                "cannot write a calibration cache: unknown calibration algorithm '{}' (expected "
                "one of {})",
                cache.algorithm, algorithm_list());
  std::string out = fmt::format("TRT-{}-{}\n", cache.trt_version, cache.algorithm);
  std::unordered_map<std::string_view, size_t> seen;
  for (size_t i = 0; i < cache.scales.size(); ++i) {
    const auto& [name, scale] = cache.scales[i];
    TRT_CHECK_ARG(!name.empty() && name.find('\n') == std::string::npos,
                  "cannot write a calibration cache: tensor name {} (entry {}) is empty or "
                  "contains a line break",
                  quote(name), i);
    const auto [it, inserted] = seen.emplace(name, i);
    TRT_CHECK_ARG(inserted,
                  "cannot write a calibration cache: duplicate tensor {} (entries {} and {})",
                  quote(name), it->second, i);
    const std::string problem = scale_problem(scale);
    TRT_CHECK_ARG(problem.empty(),
                  "cannot write a calibration cache: the scale of tensor {} ({}) {}; a scale must "
                  "be finite and positive",
                  quote(name), scale, problem);
    fmt::format_to(std::back_inserter(out), "{}: {:08x}\n", name, std::bit_cast<uint32_t>(scale));
  }
  return out;
}

void write_calibration_cache(const std::filesystem::path& path, const CalibrationCache& cache) {
  write_file_atomic(path, format_calibration_cache(cache));
}

}  // namespace trtutils::precision
