// libFuzzer harness: .npy reader (npy_from_bytes). What it reads must write (npy_to_bytes) and
// read back to the same dtype, shape and bytes.
#include <cstring>

#include "fuzz_util.h"
#include "trtutils/npy.h"
#include "trtutils/status.h"

using namespace trtutils;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Tensor t;
  try {
    t = npy_from_bytes(fuzz::as_view(data, size), "fuzz.npy");
  } catch (const Error&) {
    return 0;
  }
  if (t.numel() != 0 && t.raw() == nullptr) fuzz::fuzz_fail("tensor without a buffer");
  std::string out;
  try {
    out = npy_to_bytes(t);
  } catch (const Error& e) {
    fuzz::fuzz_fail("a tensor read from .npy cannot be written back:", e.what());
  }
  Tensor back;
  try {
    back = npy_from_bytes(out, "round trip");
  } catch (const Error& e) {
    fuzz::fuzz_fail("npy_to_bytes wrote a file npy_from_bytes refuses:", e.what());
  }
  if (back.dtype() != t.dtype() || back.shape() != t.shape() || back.nbytes() != t.nbytes() ||
      (t.nbytes() != 0 && std::memcmp(back.raw(), t.raw(), t.nbytes()) != 0))
    fuzz::fuzz_fail("npy round trip changed the tensor");
  return 0;
}
