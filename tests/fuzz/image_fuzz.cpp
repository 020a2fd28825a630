// libFuzzer harness: image decoding (sniffing, libjpeg-turbo / libpng / libwebp, our BMP reader,
// EXIF orientation) through decode_image, the entry point calibration data uses.
#include "data/codecs.h"
#include "fuzz_util.h"
#include "trtutils/status.h"

using namespace trtutils;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  data::Image img;
  try {
    img = data::decode_image({data, size}, "fuzz");
  } catch (const Error&) {
    return 0;
  }
  if (img.width <= 0 || img.height <= 0 || img.width > data::kMaxImageSide ||
      img.height > data::kMaxImageSide || img.channels < 1 || img.channels > 4 ||
      img.pixels.size() != static_cast<size_t>(img.width * img.height * img.channels))
    fuzz::fuzz_fail("decoded image breaks the Image contract");
  return 0;
}
