// Internal to the CUDA backend: error checks, device memory, the run-time value and context the
// GPU ops see, the op registry, and the helpers several ops share (cuDNN convolution, cuBLASLt
// matrix products, broadcasting).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_executor.h"
#include "backends/cuda/kernels.h"
#include "core/check.h"
#include "ir/graph.h"
#include "ops/nn_geometry.h"
#include "ops/qlinear_ops.h"

namespace trtutils::engine {
class TimingCache;
}

namespace trtutils::cuda {

// The fused-node activation as the kernels' enum (which adds kGelu).
inline k::Act to_kernel_act(ops::FusedActivation a) {
  switch (a) {
    case ops::FusedActivation::kNone:
      return k::Act::kNone;
    case ops::FusedActivation::kRelu:
      return k::Act::kRelu;
    case ops::FusedActivation::kClip:
      return k::Act::kClip;
    case ops::FusedActivation::kLeakyRelu:
      return k::Act::kLeakyRelu;
    case ops::FusedActivation::kSigmoid:
      return k::Act::kSigmoid;
    case ops::FusedActivation::kHardSwish:
      return k::Act::kHardSwish;
    case ops::FusedActivation::kSilu:
      return k::Act::kSilu;
  }
  return k::Act::kNone;
}

// ---- cuBLAS / cuBLASLt / cuDNN, loaded on first use (cuda_libs.cpp) -----------------------------
enum class CudaLibrary { kCublasLt, kCublas, kCudnn };
// Loads the three libraries (once); empty when they are loaded, else what is missing and why.
std::string load_libraries();
// `name` in that library, or nullptr when the library could not be loaded.
void* library_symbol(CudaLibrary which, const char* name);

// ---- checks: every call is checked, the message names the call, file and line ----------------
[[noreturn]] void throw_cuda(cudaError_t e, const char* expr, const char* file, int line);
[[noreturn]] void throw_cudnn(cudnnStatus_t s, const char* expr, const char* file, int line);
[[noreturn]] void throw_cublas(cublasStatus_t s, const char* expr, const char* file, int line);

#define TRT_CUDA_CHECK(expr)                                                                    \
  do {                                                                                          \
    const cudaError_t trt_e_ = (expr);                                                          \
    if (trt_e_ != cudaSuccess) ::trtutils::cuda::throw_cuda(trt_e_, #expr, __FILE__, __LINE__); \
  } while (0)
#define TRT_CUDNN_CHECK(expr)                                           \
  do {                                                                  \
    const cudnnStatus_t trt_s_ = (expr);                                \
    if (trt_s_ != CUDNN_STATUS_SUCCESS)                                 \
      ::trtutils::cuda::throw_cudnn(trt_s_, #expr, __FILE__, __LINE__); \
  } while (0)
#define TRT_CUBLAS_CHECK(expr)                                           \
  do {                                                                   \
    const cublasStatus_t trt_s_ = (expr);                                \
    if (trt_s_ != CUBLAS_STATUS_SUCCESS)                                 \
      ::trtutils::cuda::throw_cublas(trt_s_, #expr, __FILE__, __LINE__); \
  } while (0)

// ---- device memory ------------------------------------------------------------------------------
// A caching pool for activations and workspaces: freed blocks are kept (by size) and reused in
// stream order (one stream per executor, so a block freed after enqueueing its last reader can
// be handed to the next kernel). The peak of bytes held is reported as activation memory.
class DeviceAllocator {
 public:
  DeviceAllocator() = default;
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;
  ~DeviceAllocator();
  // Shared ownership of `bytes` bytes (256-byte aligned); returned to the pool when released.
  std::shared_ptr<void> allocate(size_t bytes);
  size_t held_bytes() const { return held_; }
  size_t peak_bytes() const { return peak_; }
  // cudaFree of every cached free block (after synchronising the device).
  void trim();

 private:
  void give_back(void* p, size_t bytes);
  std::multimap<size_t, void*> free_;
  size_t held_ = 0, peak_ = 0;
};

// A cudaMalloc'd buffer with one owner (weights and what ops derive from them).
std::shared_ptr<void> device_malloc(size_t bytes);
// Uploads host bytes into a fresh device_malloc buffer (synchronous); while a DeviceWeights is in
// scope (the engine's, device_weights.h), into the engine's shared copy of those bytes instead.
// For weights and what ops derive from them.
std::shared_ptr<void> upload_bytes(const void* data, size_t bytes);
// Synchronous host-to-device copy of weight bytes, complete on the device when it returns (any
// stream may read dst afterwards).
void copy_weight_bytes(void* dst, const void* src, size_t bytes);
// The same, never shared: for tables that depend on run-time shapes (an engine would otherwise
// keep one per shape ever seen).
std::shared_ptr<void> upload_private(const void* data, size_t bytes);

// ---- values -------------------------------------------------------------------------------------
// A tensor at run time: on the device (ptr), on the host (host), or both.
struct Value {
  DataType dtype = DataType::kUndefined;
  Shape shape;  // always the logical (ONNX, channels-first) shape
  void* ptr = nullptr;
  std::shared_ptr<void> owner;  // keeps ptr's memory alive
  Tensor host;                  // defined when the values are known on the host (always NCHW)
  bool constant = false;        // a weight: uploaded once into its own buffer, kept across runs
  // Channels-last: a 4-D value whose device memory (ptr) is [N, H, W, C] for shape [N, C, H, W].
  bool nhwc = false;
  // The same tensor in the other layout, made by the executor for a reader that wants it (kept
  // while this value lives, so that several such readers convert once).
  std::shared_ptr<Value> other;
  bool defined() const { return dtype != DataType::kUndefined; }
  int64_t numel() const { return shape_numel(shape); }
  size_t nbytes() const { return dtype_storage_bytes(dtype, numel()); }
};

// The memory layout an op wants an input in before run() (the executor converts 4-D values
// between NCHW and NHWC as asked; kAny takes the value as it is).
enum class Layout { kAny, kNchw, kNhwc };
// Whether a tensor of this shape has the same memory in NCHW and NHWC (rank <= 4, aligned to
// 4-D: one channel, or a 1x1 spatial extent): such operands join channels-last elementwise ops
// without conversion (per-channel and scalar broadcasts, the squeeze-excite gate).
bool layout_free(const Shape& s);
// [N, C, H, W] -> [N, H, W, C] of a shape aligned to rank 4 (leading 1s added).
Shape nhwc_order(const Shape& s);

// What a GPU op sees when it runs.
// Choices between kernels that are timed on the first eager run (the implicit GEMM against
// cuBLASLt, a custom convolution against cuDNN, cuBLASLt's candidate algorithms), kept in a
// timing cache file (ExecutorOptions::timing_cache; engine/tactics.h's format, so one file also
// serves the CPU builder): later executors and processes take the recorded kernel without timing
// it, which also makes their results the same run after run. Keys name the device, the
// libraries and trtutils' version; `what` names the decision and its problem (shapes, dtypes).
class TimingChoices {
 public:
  // path empty: the choices live in memory only (no file read or written).
  TimingChoices(std::filesystem::path path, std::string device);
  ~TimingChoices();
  // Choices to take as they are (an engine's recorded tactics: what -> choice); find answers
  // them first.
  void preload(const std::map<std::string, std::string>& choices);
  // The recorded choice, or "" when this decision was not timed here before.
  std::string find(const std::string& what);
  // Records a timed decision: the choice and each candidate's median (ms; < 0: failed).
  void put(const std::string& what, const std::string& choice,
           const std::vector<std::pair<std::string, float>>& ms);
  // Writes the file when something new was recorded (atomically).
  void save_if_changed();
  int64_t hits() const { return hits_; }
  int64_t recorded() const { return recorded_; }
  // Every decision found or recorded so far (what -> choice).
  const std::map<std::string, std::string>& decisions() const { return decisions_; }

 private:
  std::filesystem::path path_;
  std::string device_;
  std::unique_ptr<engine::TimingCache> cache_;
  std::map<std::string, std::string> preloaded_, decisions_;
  int64_t hits_ = 0, recorded_ = 0, saved_ = 0;
};

class RunContext {
 public:
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* lt_workspace = nullptr;
  size_t lt_workspace_bytes = 0;
  bool allow_tf32 = false;
  int sm = 0;
  int64_t opset = 0;
  const ir::Node* node = nullptr;
  DeviceAllocator* alloc = nullptr;
  uint64_t* weight_bytes = nullptr;  // counts constants uploaded by dev()
  bool capturing = false;            // inside CUDA graph capture: no host <-> device copies
  // ExecutorOptions::deterministic: kernel choices by fixed rules, never by timing.
  bool deterministic = false;
  // Ops may run channels-last (NHWC): float16 / bfloat16 convolution chains, and float32 ones
  // when allow_tf32 (ExecutorOptions::channels_last), with at least this batch.
  bool channels_last = false;
  int64_t channels_last_min_batch = 1;
  TimingChoices* timing = nullptr;  // the executor's timing cache (may be null)

  // The device data of v, uploading host-only values (the upload is kept in v).
  const void* dev(Value& v);
  // The host data of v (NCHW), downloading device-only values (synchronises the stream).
  const Tensor& host(Value& v);
  // Allocates v on the device with dtype/shape and returns the pointer.
  void* make(Value& v, DataType dtype, Shape shape);
  // v becomes `src` viewed with `shape` (same data; Reshape-like ops).
  void alias(Value& v, const Value& src, Shape shape);
  // Temporary device memory, valid until the returned handle is dropped (stream-ordered).
  std::shared_ptr<void> scratch(size_t bytes) { return alloc->allocate(bytes); }
  // Throws Error(kInternal) naming the node for a failed kernel launch (kNotSupported for
  // cudaErrorNotSupported: a dtype the kernel does not handle).
  void check(cudaError_t e, const char* what) const;
};

// A node's GPU implementation. Built once (may prepare weights), run every time.
class GpuOp {
 public:
  virtual ~GpuOp() = default;
  // in: one per node input (nullptr when omitted); out: one per node output (fill them).
  virtual void run(RunContext& ctx, const std::vector<Value*>& in,
                   const std::vector<Value*>& out) = 0;
  // What ran (for layer records and tests), e.g. "cuDNN", "cuBLASLt int8 (im2col)".
  virtual std::string kernel() const { return "CUDA kernel"; }
  // Asked before every run(): the layout each input must have (want has one entry per input,
  // preset to kNchw: ops that know nothing of channels-last get NCHW inputs). Ops that handle
  // NHWC set kAny or kNhwc and mark their outputs' Value::nhwc.
  virtual void want_layouts(const RunContext& ctx, const std::vector<Value*>& in,
                            std::vector<Layout>& want) const {
    (void)ctx;
    (void)in;
    (void)want;
  }
};

// What a factory sees at construction.
struct OpBuild {
  const ir::Node& node;
  int64_t opset;
  const ir::Graph& graph;
  // The value of a constant input (initializer or folded at construction), else nullptr.
  std::function<const Tensor*(const std::string&)> constant;
  uint64_t* weight_bytes = nullptr;  // ops add the device bytes they prepare from weights
  const Tensor* constant_input(size_t i) const {
    return node.has_input(i) ? constant(node.inputs[i]) : nullptr;
  }
  // dtype of input i when known from the graph (kUndefined otherwise).
  DataType input_dtype(size_t i) const;
};

using OpFactory = std::function<std::unique_ptr<GpuOp>(const OpBuild&)>;
// "Conv" or "com.trtutils::FusedConv" -> factory.
using OpTable = std::map<std::string, OpFactory>;
const OpTable& op_table();
void register_elementwise_ops(OpTable& t);
void register_tensor_ops(OpTable& t);
void register_nn_ops(OpTable& t);    // ops_nn.cpp: Softmax, LayerNormalization, reductions
void register_conv_ops(OpTable& t);  // ops_conv.cpp: Conv, FusedConv, ConvQuantize, PatchEmbed
void register_pool_ops(OpTable& t);  // ops_pool.cpp: the pools
void register_gemm_ops(OpTable& t);
void register_quant_ops(OpTable& t);
void register_resize_ops(OpTable& t);
void register_attention_ops(OpTable& t);
void register_conv_transpose_ops(OpTable& t);  // ops_conv_transpose.cpp
void register_nms_ops(OpTable& t);             // ops_nms.cpp: com.trtutils::EfficientNMS
void register_topk_ops(OpTable& t);            // ops_topk.cpp: TopK
void register_index_ops(
    OpTable& t);  // ops_index.cpp: ArgMax, Gather/ScatterElements, ...ND, NonZero
void register_norm_ops(OpTable& t);       // ops_norm.cpp: InstanceNormalization, GroupNormalization
void register_roi_align_ops(OpTable& t);  // ops_roi_align.cpp: RoiAlign
void register_grid_sample_ops(OpTable& t);  // ops_grid_sample.cpp: GridSample
void register_einsum_ops(OpTable& t);       // ops_einsum.cpp: Einsum (cuBLASLt)
void register_misc_ops(
    OpTable& t);  // ops_misc.cpp: Tile, IsNaN / IsInf, CastLike, NonMaxSuppression
void register_range_ops(OpTable& t);  // ops_range.cpp: Range, ConstantOfShape

// A kernel switch (kernel_switches.h: the engine's recorded value, or for an Executor made
// directly the environment): "0" / "off" / "false" turn it off, any other value on; unset: `def`.
bool kernel_switch(const char* name, bool def);

// How an alternative kernel is chosen against the default one: never, timed on the first eager
// run, or always (env `name` = 0 / unset / force). TRTUTILS_CUDA_FUSED_CONV=force means the
// default (cuDNN / cuBLASLt) everywhere.
enum class AltMode { kOff, kTimed, kForce };
AltMode alt_mode(const char* name);

// ---- shared helpers
// ------------------------------------------------------------------------------- Throws
// Error(kNotSupported) naming the node unless dt is float32/float16/bfloat16.
void require_float(const ir::Node& node, DataType dt, const char* what);
// The byte size of a data-movement kernel's element (1, 2, 4 or 8); Error(kNotSupported) naming
// the node for sub-byte and other dtypes.
size_t element_size(const ir::Node& node, DataType dt);
// numel must fit the kernels' 32-bit coordinates.
void require_indexable(const ir::Node& node, int64_t numel);
// Median of 3 timed runs of f on ctx.stream (after one warm-up run), in ms.
float time_on_stream(RunContext& ctx, const std::function<void()>& f);

// Broadcast of up to 3 inputs to `out` (each broadcastable to it), dims of size 1 dropped and
// contiguous runs merged. Error(kNotSupported) if more than kMaxRank dims remain.
k::Broadcast make_broadcast(const ir::Node& node, const Shape& out,
                            const std::vector<const Shape*>& ins);
// Strides of a C-order shape.
std::vector<int64_t> strides_of(const Shape& s);
// dst (dense, the dims' sizes outer first) = src read at offset + sum coord * stride, with
// dims = (size, source stride) pairs; merges contiguous dims before the kernel's kMaxRank limit
// (Error kNotSupported naming ctx.node beyond it). The caller checks require_indexable.
void copy_strided(RunContext& ctx, size_t esz, const void* src, void* dst,
                  const std::vector<std::pair<int64_t, int64_t>>& dims, int64_t offset);

// Convolution through cuDNN: descriptors and the algorithm (cudnnFind, once per problem) cached
// by problem. Float32 (FMA, or TF32 when allowed), float16 and bfloat16 (float accumulation),
// and int8 x int8 (int32 accumulation, channels-last only). Asymmetric padding is materialised
// with a pad kernel.
struct ConvGeometry {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  size_t nspatial = 0;  // 1..3
  std::vector<int64_t> in, out, kernel, stride, dilation, pad_begin, pad_end;
  bool operator==(const ConvGeometry&) const = default;
};
// Reads and validates a Conv-like node's geometry for input shape x and weight shape w.
ConvGeometry conv_geometry(const ir::Node& node, const Shape& x, const Shape& w);
Shape conv_output_shape(const ConvGeometry& g);
// The 2-D channels-last geometry of the im2col and depthwise descriptors (32-bit: the callers
// check the sizes).
template <typename D>
void set_2d_geometry(D& d, const ConvGeometry& g) {
  d.c = static_cast<int32_t>(g.in_channels);
  d.h = static_cast<int32_t>(g.in[0]);
  d.w = static_cast<int32_t>(g.in[1]);
  d.oh = static_cast<int32_t>(g.out[0]);
  d.ow = static_cast<int32_t>(g.out[1]);
  d.kh = static_cast<int32_t>(g.kernel[0]);
  d.kw = static_cast<int32_t>(g.kernel[1]);
  d.sh = static_cast<int32_t>(g.stride[0]);
  d.sw = static_cast<int32_t>(g.stride[1]);
  d.ph = static_cast<int32_t>(g.pad_begin[0]);
  d.pw = static_cast<int32_t>(g.pad_begin[1]);
  d.dh = static_cast<int32_t>(g.dilation[0]);
  d.dw = static_cast<int32_t>(g.dilation[1]);
}

// Data types and memory layout of a convolution.
struct ConvConfig {
  DataType x_t = DataType::kFloat32;  // X and W: float32 / float16 / bfloat16, or int8
  DataType y_t = DataType::kFloat32;  // Y (and the residual): x_t for floats; float32 for int8
  // X, Y and the residual NHWC ([N, spatial..., C] in memory, 1-D as 2-D) and W [K, k..., C/g]
  // ("KRSC"); int8 needs it (and channels that are multiples of 4). Otherwise NCHW and KCRS.
  bool channels_last = false;
  bool operator==(const ConvConfig&) const = default;
};

// What follows the convolution: Y = act(conv + bias + residual).
struct ConvEpilogue {
  const void* bias = nullptr;      // out_channels values of Y's dtype (null: none)
  const void* residual = nullptr;  // Y's dtype, shape and layout (null: none)
  k::Act act = k::Act::kNone;
  float alpha = 0, beta = 0;  // activation parameters (Clip bounds, LeakyRelu slope)
  bool empty() const { return !bias && !residual && act == k::Act::kNone; }
};

class CudnnConv {
 public:
  CudnnConv() = default;
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;
  ~CudnnConv();
  // y = epilogue(conv(x, w)) (y written, not accumulated). A bias / residual / ReLU or identity
  // epilogue of a float convolution runs inside cuDNN (cudnnConvolutionBiasActivationForward
  // with IMPLICIT_PRECOMP_GEMM) when that algorithm is about as fast as the fastest one plus an
  // epilogue pass (cudnnFind times; TRTUTILS_CUDA_FUSED_CONV=force / 0 overrides); other
  // activations, slower fused algorithms and problems cuDNN refuses to fuse run the convolution
  // and then one epilogue kernel.
  void run(RunContext& ctx, const ConvGeometry& g, const ConvConfig& c, const void* x,
           const void* w, void* y, const ConvEpilogue& e = {});
  // How the last run computed: "cuDNN fused", "cuDNN + epilogue" or "cuDNN" (no epilogue),
  // with " NHWC" for channels-last; "not run yet" before the first run.
  std::string how() const { return how_; }

 private:
  struct Plan;
  Plan& plan(RunContext& ctx, const ConvGeometry& g, const ConvConfig& c, int fuse);
  std::map<std::string, std::shared_ptr<Plan>> plans_;
  // The last plan used (the common case: the same shapes every run), found without a key.
  ConvGeometry last_g_;
  ConvConfig last_c_;
  int last_fuse_ = -1;
  bool last_tf32_ = false;
  Plan* last_ = nullptr;
  std::string how_ = "not run yet";
};

// Converts a 4-D tensor between NCHW and NHWC (`to_nhwc`: src NCHW -> dst NHWC) for the logical
// NCHW shape `nchw`; esz is the element size in bytes.
void convert_layout(RunContext& ctx, size_t esz, const Shape& nchw, const void* src, void* dst,
                    bool to_nhwc);

// Matrix products through cuBLASLt, row-major: D[b] = alpha * op(A[b]) x op(B[b]) + beta * D[b]
// (+ bias along N, + activation epilogue) for b < batch, with element strides between batch
// entries (0 = shared). Plans (descriptors + the fastest of the heuristic's algorithms, timed on
// the first eager call) are cached per shape.
struct MatmulProblem {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldd = 0;  // row-major leading dims (0: packed)
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  DataType a_t = DataType::kFloat32, b_t = DataType::kFloat32, d_t = DataType::kFloat32;
  enum class Epilogue {
    kNone,
    kBias,
    kReluBias,
    kGeluBias,
    kRelu,
    kGelu
  } epilogue = Epilogue::kNone;
  // int8 x int8 -> int8 requantized in cuBLASLt's epilogue (IMMA, d_t int8, see LtRequant).
  bool requant = false;
  bool with_c = false;  // requant / fp8_out: + beta * C (D's layout)
  // float8 x float8 -> float8 E4M3 D scaled in cuBLASLt (see LtFp8Out): C float16, bias float16.
  bool fp8_out = false;
  // fp8_out: B's scale is one float per column N (cuBLASLt's outer-vector scaling), else one.
  bool b_scale_vector = false;
  bool operator==(const MatmulProblem&) const = default;
};
// The requantizing int8 product: D[i][j] = sat(rint(act(alpha[j] * sum_k A[i][k] B[j][k] +
// beta * C[i][j] + bias[j]))) with alpha (n floats) on the device, beta on the host, bias
// float32 (the bias pointer of run()), C int8 like D.
struct LtRequant {
  const float* alpha = nullptr;
  float beta = 0.0f;
  const void* c = nullptr;
};
// The float8 product written as float8 by cuBLASLt: D = sat(act(a_scale * b_scale[j] * sum_k
// A[i][k] B[j][k] + beta * C[i][j] + bias[j]) * d_scale) with C float16 (the dequantized
// residual; may be null when beta = 0) and bias float16.
struct LtFp8Out {
  const float* d_scale = nullptr;
  float beta = 0.0f;
  const void* c = nullptr;
};
class LtMatmul {
 public:
  LtMatmul() = default;
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;
  ~LtMatmul();
  // Float types: alpha/beta as float; int8 x int8 -> int32 (TN only: trans_b with A [m,k] and
  // B stored [n,k]); float8: a_scale/b_scale device pointers (float32, may be null).
  // p.requant: int8 -> int8 with rq (see LtRequant). Returns false (nothing enqueued) when
  // cuBLASLt has no algorithm for the problem.
  // c: float products only, D = alpha * A B + beta * C (+ bias) with C in D's layout (null:
  // C is D itself).
  bool run(RunContext& ctx, const MatmulProblem& p, const void* a, const void* b, void* d,
           float alpha = 1.0f, float beta = 0.0f, const void* bias = nullptr,
           const float* a_scale = nullptr, const float* b_scale = nullptr,
           const LtRequant* rq = nullptr, const LtFp8Out* f8 = nullptr, const void* c = nullptr);

 private:
  struct Plan;
  struct Args {
    float falpha = 1, fbeta = 0;
    int32_t ialpha = 1, ibeta = 0;
    bool int_scale = false, with_c = false;
    const void* c = nullptr;  // the float C operand (null: D)
  };
  static constexpr int kMaxCandidates = 8;
  static constexpr int kTimedRuns = 3;
  static Args call_args(const Plan& pl, const MatmulProblem& p, float alpha, float beta,
                        const LtRequant* rq, const LtFp8Out* f8);
  cublasStatus_t launch(RunContext& ctx, Plan& pl, const cublasLtMatmulAlgo_t& algo,
                        const Args& args, const void* a, const void* b, void* d,
                        const LtRequant* rq, const LtFp8Out* f8);
  cublasLtMatmulAlgo_t fastest(RunContext& ctx, Plan& pl,
                               const cublasLtMatmulHeuristicResult_t* results, int count,
                               const Args& args, const void* a, const void* b, void* d,
                               const LtRequant* rq, const LtFp8Out* f8, int* chosen,
                               float* chosen_ms);  // the winner's index and median (when timed)
  static bool timing_enabled();
  std::map<std::string, std::shared_ptr<Plan>> plans_;
  // The last plan used and what it was made for (problem, tf32, pointer alignments).
  MatmulProblem last_p_;
  bool last_tf32_ = false;
  uint32_t last_align_[4] = {0, 0, 0, 0};
  bool last_scales_[2] = {false, false};
  Plan* last_ = nullptr;
};

// The executor's own ops (never in engine files): com.trtutils.cuda::MatMulBias (A, B 2-D,
// bias [N]; attribute gelu 0/1: the exact erf GELU after the bias), com.trtutils.cuda::Gelu and
// com.trtutils.cuda::Attention (ops_attention.cpp).
inline constexpr const char* kGpuDomain = "com.trtutils.cuda";
// The executor's layer-norm fusion into a com.trtutils::QGemm with a float output
// (fusion/layernorm_quantize.cpp): the LayerNormalization's and its quantizer's inputs after the
// QGemm's own (ops/qlinear_ops.h), attributes ln_epsilon and ln_swap01, and a second output: the
// quantized normalised rows.
enum QGemmLnInput : size_t {
  kLnScale = ops::qlinear::kNumInputs,
  kLnBias,
  kLnYScale,
  kLnYZeroPoint,
  kLnNumInputs,
};
// Rewrites the executor's copy of the graph: MatMul + bias Add (+ the exporters' erf GELU chain)
// into MatMulBias, lone GELU chains into Gelu, MatMul -> (scalar Mul / Div) -> Softmax -> MatMul
// into Attention, absorbing the Transposes and scalar scalings around it (fusion/pipeline.cpp).
// Returns the fusions made. TRTUTILS_CUDA_FUSION=0 turns it off; TRTUTILS_CUDA_ATTENTION=0 keeps
// the attention ops as they are. The float8 Q/DQ attention (QuantizeLinear -> QMatMul -> Softmax
// -> QuantizeLinear -> QMatMul, into AttentionQ) unless TRTUTILS_CUDA_ATTENTION_FP8=0.
size_t fuse_for_gpu(ir::Graph& graph, int64_t opset);
// BatchNormalization -> activation and / or per-tensor QuantizeLinear into
// com.trtutils.cuda::BatchNormAct (fusion/batchnorm_act.cpp); fuse_for_gpu and fusion_plan run it
// after the other fusions. absorbed (optional): each node fused away. Returns the fusions made.
size_t fuse_batchnorm_act(ir::Graph& graph, int64_t opset,
                          std::map<std::string, FusedInto>* absorbed);
// The float16 layers of a Q/DQ graph computed in float32 (fusion/half_islands.cpp says when and
// why); fuse_for_gpu and fusion_plan run it first. absorbed (optional): the removed Casts, with an
// empty op (the builder labels them "removed: ..."). Returns the number of changes.
size_t promote_half_islands(ir::Graph& graph, std::map<std::string, FusedInto>* absorbed);

// numpy matmul's output shape (1-D operands promoted and squeezed back).
Shape matmul_shape(const ir::Node& node, const Shape& a, const Shape& b);
// Y = matmul(A, B) of float dtype dt (Y allocated with matmul_shape); batches folded, strided
// or looped as the broadcast allows.
void matmul(RunContext& ctx, LtMatmul& lt, DataType dt, const Shape& a_shape, const Shape& b_shape,
            const void* a, const void* b, void* y);

}  // namespace trtutils::cuda
