// device_status() on any machine (no GPU needed: this suite is not a Cuda* one): it must not
// throw or crash without a driver or device, and must say why when the backend is unusable.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "backends/cuda/cuda_executor.h"
#ifdef TRTUTILS_HAVE_CUDA_BACKEND
#include "backends/cuda/cuda_ops.h"
#endif
#include "ir/graph_builder.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

TEST(DeviceStatus, CudaQueryNeverThrows) {
  cuda::DeviceStatus s;
  ASSERT_NO_THROW(s = cuda::device_status());
  if (s.usable) {
    EXPECT_GE(s.sm, 75);
    EXPECT_FALSE(s.name.empty());
  } else {
    EXPECT_FALSE(s.why.empty());
    // Without a usable device an Executor refuses with kNotSupported (never a crash).
    try {
      cuda::Executor ex(ir::Model{}, {});
      ADD_FAILURE() << "expected Error(kNotSupported)";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kNotSupported);
    }
  }
#ifdef TRTUTILS_HAVE_CUDA_BACKEND
  // Coverage checks need no device (the builder makes CUDA engines on machines without one).
  ir::GraphBuilder b("coverage");
  const std::string x = b.input("x", DataType::kFloat32, {1, 3, 8, 8});
  const std::string w = b.initializer("w", Tensor(DataType::kFloat32, {4, 3, 3, 3}));
  const std::string y = b.node("Conv", {x, w})[0];
  const std::string shape = b.node("Shape", {y})[0];
  const std::string n = b.node("ReduceProd", {shape})[0];  // host shape arithmetic
  b.output(b.node("Relu", {y})[0]);
  b.output(n);
  const cuda::GpuCoverage all_gpu = cuda::gpu_coverage(b.build(17));
  EXPECT_TRUE(all_gpu.fallback.empty() && all_gpu.unsupported.empty());
  // No GPU kernel, a CPU one: runs on the CPU inside the GPU engine.
  const std::string z = b.input("z", DataType::kFloat32, {1, 6});
  b.output(b.node("Cosh", {z})[0]);
  const cuda::GpuCoverage cov = cuda::gpu_coverage(b.build(17));
  ASSERT_EQ(cov.fallback.size(), 1u);
  EXPECT_EQ(cov.fallback[0].op, "Cosh");
  EXPECT_EQ(cov.fallback[0].reason, "no CUDA kernel");
  EXPECT_TRUE(cov.unsupported.empty());
  const auto ops = cuda::supported_ops();
  for (const char* op : {"Conv", "com.trtutils::FusedConv", "MatMul", "Gemm", "Softmax",
                         "LayerNormalization", "com.trtutils::QConv", "QuantizeLinear"})
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
#endif
}

#ifdef TRTUTILS_HAVE_CUDA_BACKEND
std::string mapped_files() {
  std::ifstream f("/proc/self/maps");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// cuBLAS(Lt) and cuDNN are not linked: a process that never asks for them never maps them
// (libcublasLt alone made every process 140-220 MiB resident), and the first call loads them.
TEST(DeviceStatus, CudaLibrariesLoadOnFirstUse) {
  const cuda::DeviceStatus s = cuda::device_status();
  if (!s.usable) {  // no device: the probe must not have loaded them
    const std::string maps = mapped_files();
    EXPECT_EQ(maps.find("libcublasLt.so"), std::string::npos);
    EXPECT_EQ(maps.find("libcudnn.so"), std::string::npos);
  }
  // Every machine here has the toolkit; elsewhere the message names the missing library.
  const std::string why = cuda::load_libraries();
  if (!why.empty()) {
    EXPECT_NE(why.find(".so."), std::string::npos) << why;
    GTEST_SKIP() << why;
  }
  EXPECT_NE(cuda::library_symbol(cuda::CudaLibrary::kCublasLt, "cublasLtMatmul"), nullptr);
  EXPECT_NE(cuda::library_symbol(cuda::CudaLibrary::kCudnn, "cudnnCreate"), nullptr);
  EXPECT_EQ(cudnnGetVersion() / 10000, static_cast<size_t>(CUDNN_MAJOR));
  EXPECT_GT(cublasLtGetVersion(), 0u);
  EXPECT_NE(mapped_files().find("libcublasLt.so"), std::string::npos);
}
#endif

}  // namespace
}  // namespace trtutils
