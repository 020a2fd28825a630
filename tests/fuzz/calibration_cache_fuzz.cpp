// libFuzzer harness: TensorRT calibration cache parser. A cache that parses must format and parse
// back to the same header, names and scale bits, and formatting must be a fixed point.
#include <bit>

#include "fuzz_util.h"
#include "precision/calibration_cache.h"
#include "trtutils/status.h"

using namespace trtutils;
using precision::CalibrationCache;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CalibrationCache c;
  try {
    c = precision::parse_calibration_cache(fuzz::as_view(data, size), "fuzz.cache");
  } catch (const Error&) {
    return 0;
  }
  std::string text;
  CalibrationCache back;
  try {
    text = precision::format_calibration_cache(c);
    back = precision::parse_calibration_cache(text, "round trip");
  } catch (const Error& e) {
    fuzz::fuzz_fail("a parsed cache does not round-trip:", e.what());
  }
  if (back.trt_version != c.trt_version || back.algorithm != c.algorithm ||
      back.scales.size() != c.scales.size())
    fuzz::fuzz_fail("round trip changed the header or the number of scales");
  for (size_t i = 0; i < c.scales.size(); ++i) {
    if (back.scales[i].first != c.scales[i].first ||
        std::bit_cast<uint32_t>(back.scales[i].second) !=
            std::bit_cast<uint32_t>(c.scales[i].second))
      fuzz::fuzz_fail("round trip changed a scale:", c.scales[i].first.c_str());
    if (c.scale(c.scales[i].first) != c.scales[i].second)  // names are unique
      fuzz::fuzz_fail("scale() does not find:", c.scales[i].first.c_str());
  }
  if (precision::format_calibration_cache(back) != text)
    fuzz::fuzz_fail("formatting is not a fixed point");
  return 0;
}
