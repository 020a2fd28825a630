// Helpers of the CUDA backend tests: skipping without a device, random tensors, one-node models
// run through cuda::Executor and through the CPU reference kernel (cpu::run_node), and the
// comparison with a named tolerance per precision. Test suites are named Cuda* (ctest label
// "gpu").
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernel_registry.h"
#include "backends/cuda/cuda_executor.h"
#include "ir/graph_builder.h"
#include "trtutils/status.h"
#include "trtutils/tensor.h"

#define TRT_REQUIRE_CUDA()                                                                \
  do {                                                                                    \
    const ::trtutils::cuda::DeviceStatus trt_status_ = ::trtutils::cuda::device_status(); \
    if (!trt_status_.usable) GTEST_SKIP() << "no CUDA device: " << trt_status_.why;       \
  } while (0)

namespace trtutils::cuda_testing {

// |gpu - cpu| <= atol + rtol * |cpu| per element.
struct Tolerance {
  double atol, rtol;
};
// float32 kernels against the double-accumulating CPU reference (FMA order differs).
inline constexpr Tolerance kFp32{1e-4, 1e-4};
// float16 storage (11-bit significand) with float accumulation.
inline constexpr Tolerance kFp16{2e-2, 1e-2};
// Transcendentals in float32 (erf, exp, tanh in CUDA's libm vs glibc).
inline constexpr Tolerance kFp32Math{2e-6, 2e-5};
inline constexpr Tolerance kExact{0, 0};

// A 0-D tensor holding v as float32 / float16 / bfloat16.
inline Tensor scalar_tensor(DataType dt, float v) {
  Tensor t(dt, {});
  if (dt == DataType::kFloat16) {
    t.data<half>()[0] = float_to_half(v);
  } else if (dt == DataType::kBFloat16) {
    t.data<bfloat16>()[0] = float_to_bfloat16(v);
  } else {
    t.data<float>()[0] = v;
  }
  return t;
}

inline Tensor random_tensor(DataType dt, const Shape& shape, uint32_t seed, float lo = -1.0f,
                            float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t(dt, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = u(rng);
    if (dt == DataType::kFloat32) {
      t.data<float>()[i] = v;
    } else if (dt == DataType::kFloat16) {
      t.data<half>()[i] = float_to_half(v);
    } else if (dt == DataType::kBFloat16) {
      t.data<bfloat16>()[i] = float_to_bfloat16(v);
    } else if (dt == DataType::kInt8) {
      t.data<int8_t>()[i] = static_cast<int8_t>(std::lround(v));
    } else if (dt == DataType::kUInt8) {
      t.data<uint8_t>()[i] = static_cast<uint8_t>(std::lround(v));
    } else if (dt == DataType::kInt32) {
      t.data<int32_t>()[i] = static_cast<int32_t>(std::lround(v));
    } else if (dt == DataType::kInt64) {
      t.data<int64_t>()[i] = static_cast<int64_t>(std::lround(v));
    } else if (dt == DataType::kFloat8E4M3FN) {
      t.data<float8_e4m3fn>()[i] = float_to_e4m3fn(v);
    } else if (dt == DataType::kFloat8E5M2) {
      t.data<float8_e5m2>()[i] = float_to_e5m2(v);
    } else {
      ADD_FAILURE() << "random_tensor: unsupported dtype " << dtype_name(dt);
      return t;
    }
  }
  return t;
}

// One input of a one-node case: a graph input (fed at run time) or a constant (initializer).
struct In {
  Tensor value;
  bool constant = false;
  bool omitted = false;
};
inline In feed(Tensor t) {
  return {std::move(t), false, false};
}
inline In weight(Tensor t) {
  return {std::move(t), true, false};
}
inline In omitted() {
  return {Tensor(), false, true};
}

struct NodeCase {
  NodeCase() = default;
  NodeCase(std::string op_, std::vector<In> inputs_, std::vector<ir::Attribute> attrs_ = {},
           size_t num_outputs_ = 1, std::string domain_ = "", int64_t opset_ = 17)
      : op(std::move(op_)),
        inputs(std::move(inputs_)),
        attrs(std::move(attrs_)),
        num_outputs(num_outputs_),
        domain(std::move(domain_)),
        opset(opset_) {}
  std::string op;
  std::vector<In> inputs;
  std::vector<ir::Attribute> attrs;
  size_t num_outputs = 1;
  std::string domain;
  int64_t opset = 17;
};

inline ir::Node make_node(const NodeCase& c) {
  ir::Node n;
  n.name = c.op + "_under_test";
  n.op_type = c.op;
  n.domain = c.domain;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    n.inputs.push_back(c.inputs[i].omitted ? std::string() : "in" + std::to_string(i));
  for (size_t i = 0; i < c.num_outputs; ++i) n.outputs.push_back("out" + std::to_string(i));
  for (const auto& a : c.attrs) n.attributes[a.name] = a;
  return n;
}

inline ir::Model make_model(const NodeCase& c) {
  ir::Model m;
  m.opset_imports = {{"", c.opset}};
  if (!c.domain.empty()) m.opset_imports.push_back({c.domain, 1});
  ir::Graph& g = m.graph;
  g.name = "one_node";
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const In& in = c.inputs[i];
    if (in.omitted) continue;
    const std::string name = "in" + std::to_string(i);
    if (in.constant) {
      g.initializers[name] = in.value;
    } else {
      g.inputs.push_back({name, in.value.dtype(), ir::sym_shape_from_static(in.value.shape()), {}});
    }
  }
  g.nodes.push_back(make_node(c));
  for (size_t i = 0; i < c.num_outputs; ++i)
    g.outputs.push_back({"out" + std::to_string(i), DataType::kUndefined, std::nullopt, {}});
  return m;
}

inline std::vector<Tensor> run_cpu(const NodeCase& c) {
  std::vector<const Tensor*> ins;
  for (const auto& in : c.inputs) ins.push_back(in.omitted ? nullptr : &in.value);
  return cpu::run_node(make_node(c), c.opset, ins, /*use_reference=*/true);
}

inline std::vector<Tensor> run_gpu(const NodeCase& c, const cuda::ExecutorOptions& o = {}) {
  cuda::Executor ex(make_model(c), o);
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (!c.inputs[i].omitted && !c.inputs[i].constant)
      feeds["in" + std::to_string(i)] = c.inputs[i].value;
  auto outs = ex.run(feeds);
  // A GPU kernel's test must run that kernel: a node placed on the CPU (per-layer fallback)
  // would compare the CPU with itself.
  for (const auto& p : ex.node_placement())
    EXPECT_NE(p, "cpu (fallback)") << c.op << " ran on the CPU (no GPU kernel took it)";
  std::vector<Tensor> r;
  for (size_t i = 0; i < c.num_outputs; ++i) r.push_back(outs.at("out" + std::to_string(i)));
  return r;
}

// Compares element by element as doubles; `what` names the case in failures. At most a few
// mismatches are reported.
inline void expect_close(const Tensor& gpu, const Tensor& cpu, Tolerance tol,
                         const std::string& what) {
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  int bad = 0;
  double worst = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    const double a = gpu.at_double(i), b = cpu.at_double(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    const double err = std::fabs(a - b);
    worst = std::max(worst, err);
    if (!(err <= tol.atol + tol.rtol * std::fabs(b))) {
      if (++bad <= 5)
        ADD_FAILURE() << what << ": element " << i << " gpu " << a << " cpu " << b << " (|diff| "
                      << err << ")";
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << cpu.numel()
                    << " elements outside the tolerance (worst |diff| " << worst << ")";
}

// Quantized outputs: values (as numbers) may differ by `steps` units (a rounding boundary
// crossed by float rounding).
inline void expect_within_steps(const Tensor& gpu, const Tensor& cpu, double steps,
                                const std::string& what, double max_bad_fraction = 0.02) {
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  int64_t off = 0, bad = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    const double a = gpu.at_double(i), b = cpu.at_double(i);
    if (a != b) ++off;
    if (std::fabs(a - b) > steps) {
      if (++bad <= 5) ADD_FAILURE() << what << ": element " << i << " gpu " << a << " cpu " << b;
    }
  }
  EXPECT_EQ(bad, 0) << what;
  EXPECT_LE(static_cast<double>(off), max_bad_fraction * static_cast<double>(cpu.numel()) + 1)
      << what << ": " << off << " of " << cpu.numel() << " elements differ by one step";
}

// Runs the case on both and compares every output.
inline void check_case(const NodeCase& c, Tolerance tol, const std::string& what,
                       const cuda::ExecutorOptions& o = {}) {
  std::vector<Tensor> want = run_cpu(c);
  std::vector<Tensor> got;
  try {
    got = run_gpu(c, o);
  } catch (const std::exception& e) {
    FAIL() << what << ": " << e.what();
  }
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    expect_close(got[i], want[i], tol, what + " output " + std::to_string(i));
}

inline ir::Attribute ai(const std::string& n, int64_t v) {
  return ir::attr_int(n, v);
}
inline ir::Attribute af(const std::string& n, float v) {
  return ir::attr_float(n, v);
}
inline ir::Attribute as(const std::string& n, const std::string& v) {
  return ir::attr_string(n, v);
}
inline ir::Attribute ais(const std::string& n, std::vector<int64_t> v) {
  return ir::attr_ints(n, v);
}
inline ir::Attribute afs(const std::string& n, std::vector<float> v) {
  return ir::attr_floats(n, v);
}
inline Tensor i64(Shape s, std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>(DataType::kInt64, std::move(s), v);
}
inline Tensor f32(Shape s, std::vector<float> v) {
  return Tensor::from_vector<float>(DataType::kFloat32, std::move(s), v);
}

}  // namespace trtutils::cuda_testing
