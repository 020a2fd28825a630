// TensorRT INT8 calibration caches (the text files IInt8Calibrator::writeCalibrationCache gives,
// trtexec --calib takes): read and write, so that scales move between trtutils and TensorRT.
//
//   TRT-8601-EntropyCalibration2
//   images: 3c010a14
//   /model.0/conv/Conv_output_0: 3d8a8ed6
//
// Line 1 is `TRT-<version>-<algorithm>`; each further line is `<tensor name>: <hex>`, the hex
// being the IEEE float32 bit pattern of the scale (amax / 127), most significant digit first.
// Tensor names may contain ':' and spaces: a line splits at its LAST ':'.
//
// Reading accepts: LF or CRLF line endings, a missing final newline, blank lines, 1 to 8 hex
// digits in either case (TensorRT writes 8, but NVIDIA's own TAO exporter writes Python's
// hex() without the leading zeros), spaces around the hex. It refuses (Error kInvalidArgument,
// naming the file and line): a bad header or unknown algorithm, a line without ':', an empty
// name, anything but 1-8 hex digits, a duplicate tensor name, and a scale that is NaN, infinite,
// negative or zero. TensorRT itself writes 0 for a tensor that was all zeros during calibration
// and inf when calibration overflowed; such a scale cannot quantize anything, so the file has to
// be recalibrated or the line removed.
// Writing always gives 8 lowercase digits, LF endings and a final newline (what TensorRT writes).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trtutils::precision {

// Algorithms of the header line (TensorRT's CalibrationAlgoType names).
inline constexpr std::string_view kCalibrationAlgorithms[] = {
    "EntropyCalibration2", "EntropyCalibration", "MinMaxCalibration", "LegacyCalibration"};

// Caches over this size are refused (a real one is a few hundred KiB).
inline constexpr uint64_t kMaxCalibrationCacheBytes = uint64_t{64} << 20;

struct CalibrationCache {
  // TensorRT's version as its header spells it (NV_TENSORRT_VERSION: 8601 = 8.6.1,
  // 100300 = 10.3.0). TensorRT refuses a cache whose version is not its own; we accept any
  // letters and digits (tools write placeholders such as "8XXX").
  std::string trt_version = "100300";
  std::string algorithm = "EntropyCalibration2";
  std::vector<std::pair<std::string, float>> scales;  // file order

  // The scale of `tensor`, if the cache has one (linear search).
  std::optional<float> scale(const std::string& tensor) const;
};

// Parses cache text; `source` names it in error messages (a path, or e.g. "<memory>").
CalibrationCache parse_calibration_cache(std::string_view text, const std::string& source);
// Error(kIO) "... not found" naming the path if it is missing or unreadable,
// Error(kOutOfRange) if it is over kMaxCalibrationCacheBytes, else as parse_calibration_cache.
CalibrationCache read_calibration_cache(const std::filesystem::path& path);

// Error(kInvalidArgument) if the cache could not be read back: a version that is not letters and
// digits, an unknown algorithm, an empty name or one with a '\n', a duplicate name, a
// scale that is not finite and positive.
std::string format_calibration_cache(const CalibrationCache& cache);
// Formats, then writes atomically (see trtutils/file_util.h).
void write_calibration_cache(const std::filesystem::path& path, const CalibrationCache& cache);

}  // namespace trtutils::precision
