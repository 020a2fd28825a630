// Executor::enqueue: device inputs and outputs on the caller's stream, no host wait. Three calls
// with the same shapes (eager planning run, CUDA graph capture, graph replay) and new input data
// each time, against run() on the same model; a too-small output buffer is refused with nothing
// written; new shapes plan again.
#include <cuda_runtime.h>

#include "backends/cuda/cuda_test_util.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

ir::Model small_net() {
  ir::GraphBuilder b("enqueue");
  const std::string x = b.input("x", DataType::kFloat32, {ir::Dim(std::string("n")), 4, 9, 9});
  const std::string c =
      b.node("Conv",
             {x, b.initializer("w", random_tensor(DataType::kFloat32, {8, 4, 3, 3}, 1)),
              b.initializer("b", random_tensor(DataType::kFloat32, {8}, 2))},
             {ais("pads", {1, 1, 1, 1})})[0];
  b.output(b.node("GlobalAveragePool", {b.node("Relu", {c})[0]})[0]);
  return b.build(17);
}

TEST(CudaEnqueue, MatchesRunThroughCaptureAndReplay) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = small_net();
  cuda::ExecutorOptions o;
  o.cuda_graph = true;
  cuda::Executor ref(m, {}), ex(m, o);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  void *din = nullptr, *dout = nullptr;
  const size_t in_bytes = 3 * 4 * 9 * 9 * 4, out_bytes = 3 * 8 * 4;
  ASSERT_EQ(cudaMalloc(&din, in_bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dout, out_bytes), cudaSuccess);
  for (int call = 0; call < 4; ++call) {
    const Tensor x = random_tensor(DataType::kFloat32, {3, 4, 9, 9}, 10 + call);
    ASSERT_EQ(cudaMemcpyAsync(din, x.raw(), in_bytes, cudaMemcpyHostToDevice, s), cudaSuccess);
    std::map<std::string, cuda::DeviceBuffer> in{{"x", {din, DataType::kFloat32, x.shape()}}};
    std::map<std::string, cuda::DeviceBuffer> out{
        {m.graph.outputs[0].name, {dout, DataType::kUndefined, {}, out_bytes}}};
    ex.enqueue(in, out, s);
    Tensor got(DataType::kFloat32, {3, 8, 1, 1});
    ASSERT_EQ(cudaMemcpyAsync(got.raw(), dout, out_bytes, cudaMemcpyDeviceToHost, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    const auto& b = out.begin()->second;
    EXPECT_EQ(b.dtype, DataType::kFloat32);
    EXPECT_EQ(b.shape, (Shape{3, 8, 1, 1}));
    expect_close(got, ref.run({{"x", x}}).begin()->second, kFp32,
                 "enqueue call " + std::to_string(call));
  }
  // Too small: refused, the buffer keeps what it had.
  std::map<std::string, cuda::DeviceBuffer> in{{"x", {din, DataType::kFloat32, {3, 4, 9, 9}}}};
  std::map<std::string, cuda::DeviceBuffer> small{
      {m.graph.outputs[0].name, {dout, DataType::kUndefined, {}, out_bytes - 4}}};
  try {
    ex.enqueue(in, small, s);
    ADD_FAILURE() << "a too-small output buffer was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("holds"), std::string::npos) << e.what();
  }
  // New shapes (batch 2) plan again.
  const Tensor x2 = random_tensor(DataType::kFloat32, {2, 4, 9, 9}, 30);
  ASSERT_EQ(cudaMemcpyAsync(din, x2.raw(), x2.nbytes(), cudaMemcpyHostToDevice, s), cudaSuccess);
  std::map<std::string, cuda::DeviceBuffer> in2{{"x", {din, DataType::kFloat32, x2.shape()}}};
  std::map<std::string, cuda::DeviceBuffer> out2{
      {m.graph.outputs[0].name, {dout, DataType::kUndefined, {}, out_bytes}}};
  ex.enqueue(in2, out2, s);
  Tensor got2(DataType::kFloat32, {2, 8, 1, 1});
  ASSERT_EQ(cudaMemcpyAsync(got2.raw(), dout, got2.nbytes(), cudaMemcpyDeviceToHost, s),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  expect_close(got2, ref.run({{"x", x2}}).begin()->second, kFp32, "enqueue batch 2");
  cudaFree(din);
  cudaFree(dout);
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace trtutils
