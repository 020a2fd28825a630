// libFuzzer harness: the engine file reader (engine::deserialize_engine). The input is copied to a
// 64-byte aligned buffer and, when it is long enough, its header's file size and checksum are
// set to match, so that mutations reach the metadata and weight checks instead of stopping at
// the integrity check. An engine that loads must serialize, load again, and serialize to the
// same bytes.
#include <cstdlib>
#include <cstring>
#include <memory>

#include "engine/engine_file.h"
#include "fuzz_util.h"
#include "trtutils/status.h"

using namespace trtutils;

namespace {

void put_u64(uint8_t* p, uint64_t v) {
  for (int k = 0; k < 8; ++k) p[k] = static_cast<uint8_t>(v >> (8 * k));
}

std::shared_ptr<uint8_t> aligned_copy(const void* data, size_t size) {
  const size_t cap = (size + engine::kAlignment - 1) / engine::kAlignment * engine::kAlignment;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(engine::kAlignment, cap == 0 ? 64 : cap));
  if (!p) fuzz::fuzz_fail("aligned_alloc failed");
  if (size) std::memcpy(p, data, size);
  return {p, [](uint8_t* q) { std::free(q); }};
}

engine::EngineData load(const std::string& bytes, const char* what) {
  return engine::deserialize_engine(aligned_copy(bytes.data(), bytes.size()), bytes.size(), what);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::shared_ptr<uint8_t> buf = aligned_copy(data, size);
  if (size >= engine::kHeaderSize) {
    uint8_t* p = buf.get();
    put_u64(p + 16, size);
    const uint64_t head = engine::checksum64(p, 56);
    put_u64(p + 56, engine::checksum64(p + engine::kHeaderSize, size - engine::kHeaderSize, head));
  }
  engine::EngineData e;
  try {
    e = engine::deserialize_engine(buf, size, "fuzz.engine");
  } catch (const Error&) {
    return 0;
  }
  std::string first, second;
  try {
    first = engine::serialize_engine(e);
    second = engine::serialize_engine(load(first, "round trip"));
  } catch (const Error& err) {
    fuzz::fuzz_fail("an engine that loads does not survive save + load:", err.what());
  }
  if (first != second) fuzz::fuzz_fail("save(load(save(e))) differs from save(e)");
  return 0;
}
