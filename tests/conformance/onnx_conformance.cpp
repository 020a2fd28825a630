// onnx_conformance: runs ONNX's own backend test data (Debian libonnx-testdata: node/ and
// pytorch-converted/ folders of model.onnx + test_data_set_*/{input,output}_*.pb) through
// trtutils::Session and compares with ONNX's tolerance.
//
// Attribution. A node test belongs to a claimed op X when its folder name is test_<prefix> or
// test_<prefix>_... for one of X's prefixes in kClaimedOps below AND its model is exactly X
// (the set of op types, Constant ignored, is {X}); an "_expanded" test (X decomposed into
// other ops) belongs to X when its un-expanded sibling is exactly X. A pytorch-converted test
// belongs to every claimed op it contains and is in scope only when all its ops are claimed.
//
// Verdicts per test (all data sets must pass): passed; not supported (trtutils::Error with
// kNotSupported from loading, session construction or run, or a graph with non-tensor I/O);
// failed (any other error, a crash, a timeout, or a mismatch). Comparison: dtype and shape must
// match; floats: |a-b| <= atol + rtol*|b| (numpy.allclose; rtol 1e-3, atol 1e-7 as in ONNX's
// backend runner; NaN == NaN, inf == inf of the same sign); integers and bools: exact; fp8 and
// int4 compare by value.
//
// Each test runs in a forked child (GNU OpenMP is not fork-safe, so the parent never runs a
// session), so a crash or hang is reported against its test and the run goes on.
//
// Exit code: 0 when no in-scope test failed, 1 otherwise, 2 on bad usage, 77 when the data
// folder is missing (ctest SKIP_RETURN_CODE).
#include <fcntl.h>
#include <onnx/onnx_pb.h>
#include <onnx/version_converter/convert.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "engine/session.h"
#include "onnx/onnx_io.h"
#include "trtutils/dtype.h"
#include "trtutils/file_util.h"
#include "trtutils/status.h"
#include "trtutils/tensor.h"

namespace fs = std::filesystem;
using trtutils::DataType;
using trtutils::Error;
using trtutils::ErrorCode;
using trtutils::Tensor;

namespace {

// The op set claimed by the CPU backend, with the node-test folder prefixes (after "test_")
// that exercise each op. Kept explicit: ONNX's test names do not follow one rule.
struct ClaimedOp {
  const char* op;
  std::vector<const char*> prefixes;
};
const std::vector<ClaimedOp> kClaimedOps = {
    {"Conv", {"conv", "basic_conv"}},
    {"ConvTranspose", {"convtranspose"}},
    {"Gemm", {"gemm"}},
    {"MatMul", {"matmul"}},
    {"Add", {"add"}},
    {"Sub", {"sub"}},
    {"Mul", {"mul"}},
    {"Div", {"div"}},
    {"Pow", {"pow"}},
    {"Sqrt", {"sqrt"}},
    {"Relu", {"relu"}},
    {"LeakyRelu", {"leakyrelu"}},
    {"Sigmoid", {"sigmoid"}},
    {"Tanh", {"tanh"}},
    {"Clip", {"clip"}},
    {"HardSigmoid", {"hardsigmoid"}},
    {"HardSwish", {"hardswish"}},
    {"Erf", {"erf"}},
    {"Gelu", {"gelu"}},
    {"Softmax", {"softmax"}},
    {"MaxPool", {"maxpool"}},
    {"AveragePool", {"averagepool"}},
    {"GlobalAveragePool", {"globalaveragepool"}},
    {"BatchNormalization", {"batchnorm"}},
    {"InstanceNormalization", {"instancenorm"}},
    {"LayerNormalization", {"layer_normalization"}},
    {"ReduceMean", {"reduce_mean"}},
    {"ReduceSum", {"reduce_sum"}},
    {"ReduceMax", {"reduce_max"}},
    {"Concat", {"concat"}},
    {"Split", {"split"}},
    {"Slice", {"slice"}},
    {"Gather", {"gather"}},
    {"ScatterND", {"scatternd"}},
    {"GatherND", {"gathernd"}},
    {"TopK", {"top_k"}},
    {"NonZero", {"nonzero"}},
    {"NonMaxSuppression", {"nonmaxsuppression"}},
    {"If", {"if"}},
    {"Loop", {"loop"}},
    {"GatherElements", {"gather_elements"}},
    {"ArgMax", {"argmax"}},
    {"ArgMin", {"argmin"}},
    {"ScatterElements", {"scatter_elements", "scatter_with", "scatter_without"}},
    {"RoiAlign", {"roialign"}},
    {"Einsum", {"einsum"}},
    {"CumSum", {"cumsum"}},
    {"GridSample", {"gridsample"}},
    {"Not", {"not"}},
    // Inference only: the training-mode tests (random masks) are refused as not supported.
    {"Dropout", {"dropout", "training_dropout"}},
    {"Reshape", {"reshape"}},
    {"Flatten", {"flatten"}},
    {"Transpose", {"transpose"}},
    {"Squeeze", {"squeeze"}},
    {"Unsqueeze", {"unsqueeze"}},
    {"Expand", {"expand"}},
    {"Pad", {"pad", "constant_pad", "edge_pad", "reflect_pad", "wrap_pad"}},
    {"Resize", {"resize"}},
    {"Cast", {"cast"}},
    {"Identity", {"identity"}},
    {"Shape", {"shape"}},
    {"ConstantOfShape", {"constantofshape"}},
    {"Where", {"where"}},
    {"Equal", {"equal"}},
    {"Less", {"less"}},
    {"Greater", {"greater"}},
    {"QuantizeLinear", {"quantizelinear"}},
    {"DequantizeLinear", {"dequantizelinear"}},
};
// Tests whose expected outputs in ONNX 1.12's data (Debian libonnx-testdata) disagree with the
// op's specification as ONNX Runtime implements it. When such a test fails it is reported as a
// "known data issue" (listed with the reason, not counted as a failure); when it passes it is
// an ordinary pass. Each entry was checked by hand; keep the list short.
struct KnownDataIssue {
  const char* test;
  const char* reason;
};
const std::vector<KnownDataIssue> kKnownDataIssues = {
    {"test_cast_FLOAT_to_BFLOAT16",
     "ONNX 1.12 generated the expected bfloat16 values by truncating float32 (0x3ef5eeb0 -> "
     "0x3ef5); Cast rounds to nearest even (spec since ONNX 1.14, ONNX Runtime), giving 0x3ef6"},
    {"test_resize_downsample_scales_linear_align_corners",
     "ONNX 1.12's reference uses the non-integer length_resized = length*scale (2.4) in the "
     "align_corners formula; ONNX Runtime 1.30 (checked: [1, 4]) and trtutils use the integer "
     "output size (2); expected [1, 3.142857]"},
    {"test_resize_downsample_scales_cubic_align_corners",
     "same as test_resize_downsample_scales_linear_align_corners: ONNX 1.12's reference uses "
     "length*scale (3.2) instead of the output size (3); ONNX Runtime 1.30 gives [[1, 2.5, 4], "
     "...] like trtutils"},
};

const KnownDataIssue* known_data_issue(const std::string& test) {
  for (const auto& k : kKnownDataIssues) {
    if (test == k.test) return &k;
  }
  return nullptr;
}

// Folded into initializers by the loader; not an op a test is about.
const std::set<std::string> kIgnoredOps = {"Constant"};

// trtutils loads opsets 7..21. Older test models (pytorch-converted is opset 6, a few node tests
// are opset 1/6) are converted with ONNX's own version converter first, so that the kernels
// are still checked; such tests are counted and named in the report.
constexpr int kMinOpset = 7;

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;

enum class Verdict { kPassed, kFailed, kNotSupported, kKnownIssue };

struct Options {
  fs::path data_dir = "/usr/include/onnx/backend/test/data";
  std::vector<std::string> suites = {"node", "pytorch-converted"};
  std::optional<std::regex> filter;
  std::string filter_text;
  bool verbose = false;
  bool all = false;  // also run tests outside the claimed scope
  bool fork = true;
  bool list = false;
  bool convert = true;  // take opset < kMinOpset models to kMinOpset with ONNX's converter
  int timeout_s = 120;
  trtutils::SessionOptions session;
};

struct TestCase {
  std::string suite;
  std::string name;
  fs::path dir;
  std::set<std::string> ops;         // op types in the model (Constant ignored)
  std::vector<std::string> claimed;  // claimed ops this test is attributed to
  bool in_scope = false;
  std::string non_tensor_io;  // non-empty: the model has sequence/optional/map I/O
  int64_t opset = 0;          // default-domain opset of model.onnx
  Verdict verdict = Verdict::kNotSupported;
  std::string message;
  double seconds = 0;
};

// ---- model inspection (parent side: protobuf only, no session) ------------------------------

std::optional<onnx::ModelProto> read_model_proto(const fs::path& path) {
  onnx::ModelProto proto;
  std::string bytes;
  try {
    bytes = trtutils::read_file(path);
  } catch (const Error&) {
    return std::nullopt;
  }
  if (!proto.ParseFromString(bytes)) return std::nullopt;
  return proto;
}

std::set<std::string> model_ops(const onnx::ModelProto& m) {
  std::set<std::string> ops;
  for (const auto& n : m.graph().node()) {
    if (!kIgnoredOps.count(n.op_type())) ops.insert(n.op_type());
  }
  return ops;
}

std::string find_non_tensor_io(const onnx::ModelProto& m) {
  for (const auto& vi : m.graph().input()) {
    if (vi.has_type() && !vi.type().has_tensor_type()) return "graph input '" + vi.name() + "'";
  }
  for (const auto& vi : m.graph().output()) {
    if (vi.has_type() && !vi.type().has_tensor_type()) return "graph output '" + vi.name() + "'";
  }
  return "";
}

bool name_has_prefix(const std::string& test_name, const std::string& prefix) {
  const std::string p = "test_" + prefix;
  if (test_name.compare(0, p.size(), p) != 0) return false;
  return test_name.size() == p.size() || test_name[p.size()] == '_';
}

const ClaimedOp* claimed_op(const std::string& op) {
  for (const auto& c : kClaimedOps) {
    if (op == c.op) return &c;
  }
  return nullptr;
}

void attribute(TestCase& t, const fs::path& suite_dir) {
  if (t.suite == "node") {
    std::set<std::string> defining_ops = t.ops;
    const std::string kExpanded = "_expanded";
    if (t.name.size() > kExpanded.size() &&
        t.name.compare(t.name.size() - kExpanded.size(), kExpanded.size(), kExpanded) == 0) {
      auto sibling = read_model_proto(
          suite_dir / t.name.substr(0, t.name.size() - kExpanded.size()) / "model.onnx");
      defining_ops = sibling ? model_ops(*sibling) : std::set<std::string>{};
    }
    if (defining_ops.size() != 1) return;
    const ClaimedOp* c = claimed_op(*defining_ops.begin());
    if (c == nullptr) return;
    for (const char* prefix : c->prefixes) {
      if (name_has_prefix(t.name, prefix)) {
        t.claimed = {c->op};
        t.in_scope = true;
        return;
      }
    }
    return;
  }
  // pytorch-converted (and any other suite): every claimed op it contains.
  bool all_claimed = !t.ops.empty();
  for (const auto& op : t.ops) {
    if (claimed_op(op))
      t.claimed.push_back(op);
    else
      all_claimed = false;
  }
  t.in_scope = all_claimed;
}

// ---- running one test (child side) -----------------------------------------------------------

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  // input_0.pb, input_1.pb, ... ordered by index (input_10 after input_9).
  std::vector<std::pair<int, fs::path>> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0 && e.path().extension() == ".pb") {
      found.emplace_back(std::atoi(n.c_str() + prefix.size()), e.path());
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& [i, p] : found) out.push_back(p);
  return out;
}

std::string fmt_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Empty string: equal. Otherwise what differs.
std::string compare_tensors(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype()) {
    return "dtype " + std::string(trtutils::dtype_name(got.dtype())) + ", expected " +
           std::string(trtutils::dtype_name(want.dtype()));
  }
  if (got.shape() != want.shape()) {
    return "shape " + trtutils::shape_str(got.shape()) + ", expected " +
           trtutils::shape_str(want.shape());
  }
  const DataType dt = want.dtype();
  const int64_t n = want.numel();
  int64_t mismatches = 0;
  int64_t first = -1;
  double max_abs = 0;
  const bool is_float = trtutils::dtype_is_float(dt);
  const int bits = trtutils::dtype_bits(dt);
  for (int64_t i = 0; i < n; ++i) {
    bool ok;
    if (is_float) {
      const double a = got.at_double(i), b = want.at_double(i);
      if (std::isnan(a) || std::isnan(b)) {
        ok = std::isnan(a) && std::isnan(b);
      } else if (a == b) {
        ok = true;  // covers inf == inf
      } else {
        const double d = std::fabs(a - b);
        ok = std::isfinite(d) && d <= kAtol + kRtol * std::fabs(b);
        if (std::isfinite(d)) max_abs = std::max(max_abs, d);
      }
    } else if (dt == DataType::kBool) {
      ok = (got.data<uint8_t>()[i] != 0) == (want.data<uint8_t>()[i] != 0);
    } else if (bits >= 8) {
      const size_t w = static_cast<size_t>(bits / 8);
      ok = std::memcmp(got.data<uint8_t>() + i * w, want.data<uint8_t>() + i * w, w) == 0;
    } else {
      ok = got.at_double(i) == want.at_double(i);
    }
    if (!ok) {
      if (first < 0) first = i;
      ++mismatches;
    }
  }
  if (mismatches == 0) return "";
  std::string msg = std::to_string(mismatches) + " of " + std::to_string(n) +
                    " elements differ (first at flat index " + std::to_string(first) + ": got " +
                    fmt_double(got.at_double(first)) + ", expected " +
                    fmt_double(want.at_double(first)) + ")";
  if (is_float) {
    msg += ", max |a-b| " + fmt_double(max_abs) + " (tolerance " + fmt_double(kAtol) + " + " +
           fmt_double(kRtol) + "*|expected|)";
  }
  return msg;
}

Tensor read_pb(const fs::path& p, std::string* name = nullptr) {
  return trtutils::onnx_io::tensor_from_proto_bytes(trtutils::read_file(p), name);
}

// ONNX <= 1.13 stores bfloat16 test data as uint16 bit patterns (numpy has no bfloat16); give
// such a tensor its declared type back (same bits).
Tensor as_declared_bfloat16(const Tensor& t, DataType declared) {
  if (declared != DataType::kBFloat16 || t.dtype() != DataType::kUInt16) return t;
  Tensor out(DataType::kBFloat16, t.shape());
  std::memcpy(out.raw(), t.raw(), t.nbytes());
  return out;
}

// Runs the whole test in this process. Returns the verdict and a message.
std::pair<Verdict, std::string> run_test(const TestCase& t, const Options& opt) {
  if (!t.non_tensor_io.empty()) {
    return {Verdict::kNotSupported, "runner: " + t.non_tensor_io +
                                        " is not a tensor (sequence/optional/map); trtutils "
                                        "sessions take and return tensors only"};
  }
  std::string stage = "load";
  try {
    trtutils::ir::Model model;
    if (opt.convert && t.opset > 0 && t.opset < kMinOpset) {
      stage = "convert";
      std::string bytes;
      try {
        onnx::ModelProto in;
        if (!in.ParseFromString(trtutils::read_file(t.dir / "model.onnx"))) {
          return {Verdict::kFailed, "runner: model.onnx does not parse"};
        }
        bytes = onnx::version_conversion::ConvertVersion(in, kMinOpset).SerializeAsString();
      } catch (const std::exception& e) {
        return {Verdict::kNotSupported, "runner: ONNX's version converter cannot take opset " +
                                            std::to_string(t.opset) + " to " +
                                            std::to_string(kMinOpset) + ": " + e.what()};
      }
      stage = "load (converted to opset " + std::to_string(kMinOpset) + ")";
      model = trtutils::onnx_io::load_model_from_bytes(bytes, t.dir);
    } else {
      model = trtutils::onnx_io::load_model(t.dir / "model.onnx");
    }
    stage = "session";
    trtutils::Session session(std::move(model), opt.session);
    std::vector<fs::path> sets;
    for (const auto& e : fs::directory_iterator(t.dir)) {
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) {
        sets.push_back(e.path());
      }
    }
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) return {Verdict::kFailed, "runner: no test_data_set_* folder"};
    const auto& inputs = session.inputs();
    const auto& outputs = session.outputs();
    for (const auto& set : sets) {
      const std::string set_name = set.filename().string();
      stage = set_name + " inputs";
      std::map<std::string, Tensor> feeds;
      const auto in_files = sorted_files(set, "input_");
      if (in_files.size() > inputs.size()) {
        return {Verdict::kFailed, set_name + ": " + std::to_string(in_files.size()) +
                                      " input files but the session has " +
                                      std::to_string(inputs.size()) + " inputs"};
      }
      for (size_t i = 0; i < in_files.size(); ++i) {
        std::string pb_name;
        Tensor v = read_pb(in_files[i], &pb_name);
        // By name when the file names a graph input, else by position (ONNX's runner: position).
        size_t k = i;
        for (size_t j = 0; j < inputs.size(); ++j) {
          if (!pb_name.empty() && inputs[j].name == pb_name) k = j;
        }
        feeds[inputs[k].name] = as_declared_bfloat16(v, inputs[k].dtype);
      }
      stage = set_name + " run";
      std::map<std::string, Tensor> got = session.run(feeds);
      stage = set_name + " compare";
      const auto out_files = sorted_files(set, "output_");
      if (out_files.size() != outputs.size()) {
        return {Verdict::kFailed, set_name + ": " + std::to_string(out_files.size()) +
                                      " expected outputs but the session has " +
                                      std::to_string(outputs.size())};
      }
      for (size_t i = 0; i < out_files.size(); ++i) {
        const std::string& name = outputs[i].name;
        auto it = got.find(name);
        if (it == got.end())
          return {Verdict::kFailed, set_name + ": output '" + name + "' missing"};
        const std::string diff = compare_tensors(
            it->second, as_declared_bfloat16(read_pb(out_files[i]), outputs[i].dtype));
        if (!diff.empty()) return {Verdict::kFailed, set_name + ": output '" + name + "': " + diff};
      }
    }
    return {Verdict::kPassed, ""};
  } catch (const Error& e) {
    const Verdict v =
        e.code() == ErrorCode::kNotSupported ? Verdict::kNotSupported : Verdict::kFailed;
    return {v, stage + ": [" + std::string(trtutils::error_code_name(e.code())) + "] " + e.what()};
  } catch (const std::exception& e) {
    return {Verdict::kFailed, stage + ": unexpected std::exception: " + e.what()};
  }
}

char verdict_char(Verdict v) {
  switch (v) {
    case Verdict::kPassed:
      return 'P';
    case Verdict::kFailed:
      return 'F';
    case Verdict::kNotSupported:
      return 'N';
    case Verdict::kKnownIssue:
      return 'F';  // decided by the parent
  }
  return 'F';
}

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t w = ::write(fd, s.data() + off, s.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    off += static_cast<size_t>(w);
  }
}

// Forks; the child runs the test and writes "<verdict char><message>" to a pipe.
std::pair<Verdict, std::string> run_test_forked(const TestCase& t, const Options& opt) {
  int fds[2];
  if (::pipe(fds) != 0) return {Verdict::kFailed, "runner: pipe() failed"};
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {Verdict::kFailed, "runner: fork() failed"};
  }
  if (pid == 0) {
    ::close(fds[0]);
    auto [v, msg] = run_test(t, opt);
    write_all(fds[1], std::string(1, verdict_char(v)) + msg);
    ::close(fds[1]);
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opt.timeout_s);
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return {Verdict::kFailed, "timed out after " + std::to_string(opt.timeout_s) + " s"};
  }
  if (WIFSIGNALED(status)) {
    return {Verdict::kFailed, "crashed: signal " + std::to_string(WTERMSIG(status)) + " (" +
                                  strsignal(WTERMSIG(status)) + ")"};
  }
  if (out.empty()) {
    return {Verdict::kFailed,
            "child exited with status " + std::to_string(WEXITSTATUS(status)) + " and no verdict"};
  }
  const char c = out[0];
  const Verdict v = c == 'P'   ? Verdict::kPassed
                    : c == 'N' ? Verdict::kNotSupported
                               : Verdict::kFailed;
  return {v, out.substr(1)};
}

// ---- reporting -------------------------------------------------------------------------------

struct Counts {
  int passed = 0, failed = 0, not_supported = 0, known_issue = 0;
  void add(Verdict v) {
    switch (v) {
      case Verdict::kPassed:
        ++passed;
        break;
      case Verdict::kFailed:
        ++failed;
        break;
      case Verdict::kNotSupported:
        ++not_supported;
        break;
      case Verdict::kKnownIssue:
        ++known_issue;
        break;
    }
  }
  void add(const Counts& o) {
    passed += o.passed;
    failed += o.failed;
    not_supported += o.not_supported;
    known_issue += o.known_issue;
  }
  int total() const { return passed + failed + not_supported + known_issue; }
};

std::string counts_str(const Counts& c) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "passed %4d / failed %4d / not supported %4d", c.passed, c.failed,
                c.not_supported);
  std::string out = buf;
  if (c.known_issue) out += " (+" + std::to_string(c.known_issue) + " known data issue)";
  return out;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPassed:
      return "passed";
    case Verdict::kFailed:
      return "FAILED";
    case Verdict::kNotSupported:
      return "not supported";
    case Verdict::kKnownIssue:
      return "known issue";
  }
  return "?";
}

void usage(const char* argv0) {
  std::printf(
      "usage: %s [--data_dir DIR] [--suite NAME]... [--filter REGEX] [--verbose] [--all]\n"
      "          [--list] [--no-fork] [--timeout S] [--threads N] [--reference] [--no-fold]\n"
      "  --data_dir DIR  ONNX backend test data (default /usr/include/onnx/backend/test/data)\n"
      "  --suite NAME    node, pytorch-converted (repeatable; default both)\n"
      "  --filter REGEX  only tests whose name matches (std::regex search)\n"
      "  --verbose       print every test's verdict and the not-supported reasons\n"
      "  --all           also run tests outside the claimed op set (reported, never fail the run)\n"
      "  --list          print the attribution of each test and exit\n"
      "  --no-convert    do not convert opset < 7 models with ONNX's version converter\n"
      "                  (trtutils refuses them: they count as not supported)\n"
      "  --no-fork       run tests in this process (for debuggers; a crash ends the run)\n"
      "  --timeout S     per-test limit in seconds (default 120)\n"
      "  --threads N     SessionOptions::num_threads\n"
      "  --reference     SessionOptions::use_reference (plain reference kernels)\n"
      "  --no-fold       SessionOptions::fold_constants = false\n"
      "exit: 0 no in-scope failure, 1 some in-scope test failed, 2 bad usage, 77 no data\n",
      argv0);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  bool suites_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "onnx_conformance: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--data_dir") {
      opt.data_dir = value();
    } else if (a == "--suite") {
      if (!suites_given) opt.suites.clear();
      suites_given = true;
      opt.suites.push_back(value());
    } else if (a == "--filter") {
      opt.filter_text = value();
      try {
        opt.filter = std::regex(opt.filter_text);
      } catch (const std::regex_error& e) {
        std::fprintf(stderr, "onnx_conformance: bad --filter regex '%s': %s\n",
                     opt.filter_text.c_str(), e.what());
        return 2;
      }
    } else if (a == "--verbose" || a == "-v") {
      opt.verbose = true;
    } else if (a == "--all") {
      opt.all = true;
    } else if (a == "--list") {
      opt.list = true;
    } else if (a == "--no-convert") {
      opt.convert = false;
    } else if (a == "--no-fork") {
      opt.fork = false;
    } else if (a == "--timeout") {
      opt.timeout_s = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--threads") {
      opt.session.num_threads = std::atoi(value().c_str());
    } else if (a == "--reference") {
      opt.session.use_reference = true;
    } else if (a == "--no-fold") {
      opt.session.fold_constants = false;
    } else if (a == "--help" || a == "-h") {
      usage(argv[0]);
      return 0;
    } else {
      std::fprintf(stderr, "onnx_conformance: unknown argument '%s'\n", a.c_str());
      usage(argv[0]);
      return 2;
    }
  }
  if (!fs::is_directory(opt.data_dir)) {
    std::printf(
        "onnx_conformance: SKIP: test data folder %s not found (install libonnx-testdata "
        "or pass --data_dir)\n",
        opt.data_dir.c_str());
    return 77;
  }

  // Collect and attribute.
  std::vector<TestCase> tests;
  for (const auto& suite : opt.suites) {
    const fs::path suite_dir = opt.data_dir / suite;
    if (!fs::is_directory(suite_dir)) {
      std::fprintf(stderr, "onnx_conformance: suite folder %s not found\n", suite_dir.c_str());
      return 2;
    }
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(suite_dir)) {
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
    }
    std::sort(dirs.begin(), dirs.end());
    for (const auto& d : dirs) {
      TestCase t;
      t.suite = suite;
      t.name = d.filename().string();
      t.dir = d;
      if (opt.filter && !std::regex_search(t.name, *opt.filter)) continue;
      auto proto = read_model_proto(d / "model.onnx");
      if (proto) {
        t.ops = model_ops(*proto);
        t.non_tensor_io = find_non_tensor_io(*proto);
        for (const auto& imp : proto->opset_import()) {
          if (imp.domain().empty() || imp.domain() == "ai.onnx") t.opset = imp.version();
        }
      }
      attribute(t, suite_dir);
      tests.push_back(std::move(t));
    }
  }

  if (opt.list) {
    for (const auto& t : tests) {
      std::string ops, claimed;
      for (const auto& o : t.ops) ops += (ops.empty() ? "" : ",") + o;
      for (const auto& o : t.claimed) claimed += (claimed.empty() ? "" : ",") + o;
      std::printf("%-18s %-60s %-9s claimed=[%s] ops=[%s]\n", t.suite.c_str(), t.name.c_str(),
                  t.in_scope ? "in-scope" : "other", claimed.c_str(), ops.c_str());
    }
    return 0;
  }

  // Run.
  int ran = 0;
  for (auto& t : tests) {
    if (!t.in_scope && !opt.all) continue;
    const auto t0 = std::chrono::steady_clock::now();
    auto [v, msg] = opt.fork ? run_test_forked(t, opt) : run_test(t, opt);
    t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t.verdict = v;
    t.message = msg;
    if (v == Verdict::kFailed) {
      if (const KnownDataIssue* k = known_data_issue(t.name)) {
        t.verdict = Verdict::kKnownIssue;
        t.message = msg + "\n      known ONNX 1.12 data issue: " + k->reason;
      }
    }
    ++ran;
    if (opt.verbose) {
      std::printf("[%-13s] %s/%s%s (%.2fs)\n", verdict_name(t.verdict), t.suite.c_str(),
                  t.name.c_str(), t.in_scope ? "" : " [out of scope]", t.seconds);
      std::fflush(stdout);
    }
  }

  // Per-op table over in-scope tests.
  std::map<std::string, Counts> per_op;
  for (const auto& c : kClaimedOps) per_op[c.op];
  std::map<std::string, Counts> per_suite, per_suite_other;
  for (const auto& t : tests) {
    if (!t.in_scope && !opt.all) continue;
    if (t.in_scope) {
      for (const auto& op : t.claimed) per_op[op].add(t.verdict);
      per_suite[t.suite].add(t.verdict);
    } else {
      per_suite_other[t.suite].add(t.verdict);
    }
  }
  std::printf("\nONNX backend conformance (%s; rtol %g, atol %g)%s%s\n", opt.data_dir.c_str(),
              kRtol, kAtol, opt.filter ? ", filter " : "", opt.filter_text.c_str());
  std::printf("%-22s %s\n", "op (in-scope tests)", "");
  for (const auto& c : kClaimedOps) {
    const Counts& k = per_op[c.op];
    std::printf("%-22s %s%s\n", c.op, counts_str(k).c_str(), k.total() == 0 ? "   (no tests)" : "");
  }
  std::printf("\nTotals (unique tests):\n");
  Counts all;
  for (const auto& [suite, k] : per_suite) {
    std::printf("  %-30s %s\n", (suite + " in scope").c_str(), counts_str(k).c_str());
    all.add(k);
  }
  std::printf("  %-30s %s\n", "all in scope", counts_str(all).c_str());
  if (opt.convert) {
    int converted = 0, converted_passed = 0;
    for (const auto& t : tests) {
      if (t.in_scope && t.opset > 0 && t.opset < kMinOpset) {
        ++converted;
        converted_passed += t.verdict == Verdict::kPassed;
      }
    }
    if (converted) {
      std::printf(
          "  (%d in-scope tests have opset < %d, which trtutils refuses to load; the runner took "
          "them to opset %d with ONNX's version converter first: %d of them passed. "
          "--no-convert runs them as they are.)\n",
          converted, kMinOpset, kMinOpset, converted_passed);
    }
  }
  for (const auto& [suite, k] : per_suite_other) {
    std::printf("  %-30s %s   (informational)\n", (suite + " out of scope").c_str(),
                counts_str(k).c_str());
  }

  std::printf("\nFailures (in scope):\n");
  int failures = 0;
  for (const auto& t : tests) {
    if (t.in_scope && t.verdict == Verdict::kFailed) {
      std::printf("  %s/%s: %s\n", t.suite.c_str(), t.name.c_str(), t.message.c_str());
      ++failures;
    }
  }
  if (failures == 0) std::printf("  (none)\n");
  bool any_known = false;
  for (const auto& t : tests) {
    if (t.verdict != Verdict::kKnownIssue) continue;
    if (!any_known) std::printf("\nKnown ONNX 1.12 test-data issues (failed, not counted):\n");
    any_known = true;
    std::printf("  %s/%s: %s\n", t.suite.c_str(), t.name.c_str(), t.message.c_str());
  }
  // Not-supported reasons: always a one-line-per-test summary so a human can judge them.
  std::printf("\nNot supported (in scope)%s:\n", opt.verbose ? "" : " [first line of each reason]");
  int ns = 0;
  for (const auto& t : tests) {
    if (t.in_scope && t.verdict == Verdict::kNotSupported) {
      std::string m = t.message;
      if (!opt.verbose) m = m.substr(0, m.find('\n'));
      std::printf("  %s/%s: %s\n", t.suite.c_str(), t.name.c_str(), m.c_str());
      ++ns;
    }
  }
  if (ns == 0) std::printf("  (none)\n");
  if (opt.all && opt.verbose) {
    std::printf("\nOut of scope (informational):\n");
    for (const auto& t : tests) {
      if (!t.in_scope && t.verdict != Verdict::kPassed) {
        std::printf("  [%s] %s/%s: %s\n", verdict_name(t.verdict), t.suite.c_str(), t.name.c_str(),
                    t.message.substr(0, t.message.find('\n')).c_str());
      }
    }
  }
  std::printf("\n%d test(s) run; %s\n", ran,
              failures ? "FAILED: some in-scope tests failed" : "OK: no in-scope failures");
  return failures ? 1 : 0;
}
