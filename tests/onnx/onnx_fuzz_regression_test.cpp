// Inputs the onnx_fuzz harness (tests/fuzz) found problems with, kept in tests/data/bad/.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "onnx/onnx_io.h"
#include "trtutils/status.h"
#include "trtutils/tensor.h"

namespace trtutils::onnx_io {
namespace {

namespace fs = std::filesystem;

std::string bad_input(const char* name) {
  std::ifstream f(fs::path(TRTUTILS_TEST_DATA_DIR) / "bad" / name, std::ios::binary);
  EXPECT_TRUE(f.good()) << name;
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Lowers the tensor memory limit for one test: an allocation the input should never have asked
// for then fails loudly (kOutOfRange) instead of quietly taking gigabytes.
class SmallMemoryLimit {
 public:
  explicit SmallMemoryLimit(uint64_t bytes) : saved_(memory_limit()) { set_memory_limit(bytes); }
  ~SmallMemoryLimit() { set_memory_limit(saved_); }

 private:
  uint64_t saved_;
};

// A mutated model whose bytes, read as a TensorProto, declare external data of dims needing
// 4.9 GB: the tensor was allocated before the external data was checked (and here refused: no
// model folder). As in onnx_fuzz.cpp, the model ends where the sidecar marker starts.
TEST(OnnxFuzzRegression, ExternalDataIsCheckedBeforeAllocating) {
  std::string bytes = bad_input("onnx_fuzz_external_dims_oom.onnx");
  bytes.resize(bytes.find("\n==trtutils-fuzz-sidecar==\n"));
  const SmallMemoryLimit limit(uint64_t{64} << 20);
  try {
    tensor_from_proto_bytes(bytes);
    FAIL() << "no error";
  } catch (const Error& e) {
    // Not kOutOfRange (the memory limit): refused for its external data, before allocating. (The
    // message names the tensor, whose name here holds a NUL byte: what() ends there.)
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
}

// The same for an initializer of a model loaded from a file: a tiny sidecar cannot make the
// loader allocate what the dims claim.
TEST(OnnxFuzzRegression, ExternalInitializerLargerThanItsFileIsRefusedBeforeAllocating) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("trtutils_onnx_bad_{}", ::getpid());
  fs::create_directories(dir);
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  ::onnx::GraphProto* g = m.mutable_graph();
  ::onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : {1 << 20, 1 << 20}) w->add_dims(d);  // 4 TiB
  w->set_data_location(::onnx::TensorProto::EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value("w.bin");
  g->add_output()->set_name("w");
  std::ofstream(dir / "w.bin") << "tiny";
  std::ofstream(dir / "m.onnx", std::ios::binary) << m.SerializeAsString();
  const SmallMemoryLimit limit(uint64_t{64} << 20);
  try {
    load_model(dir / "m.onnx");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("has 4 bytes"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trtutils::onnx_io
