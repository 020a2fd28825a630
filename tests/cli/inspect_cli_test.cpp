// `trtutils inspect`: the default table fits 100 columns and prints every layer name whole
// (wrapped onto continuation lines, never truncated: --layer_precision needs them), --wide is
// the full table, and the header and --json carry the trtutils and engine format versions;
// --json is the library's engine_inspect_json (which the Python inspect_engine returns too).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_runner.h"
#include "trtutils/engine.h"
#include "trtutils/engine_inspect.h"

namespace fs = std::filesystem;

namespace trtutils {
namespace {

using test_util::run_cli;

// A separator-rich name (wraps after a '/') and one with none (wraps hard).
const std::string kLongName =
    "/backbone/stage_3/block_12/attention_with_a_rather_long_description/output_projection/"
    "residual_branch/Relu";
const std::string kSolidName(130, 'r');

void add_relu(onnx::GraphProto* g, const std::string& name, const std::string& in,
              const std::string& out) {
  auto* n = g->add_node();
  n->set_op_type("Relu");
  n->set_name(name);
  n->add_input(in);
  n->add_output(out);
}

// Two Relu layers with long names, x [1, 4] -> y [1, 4].
std::string long_names_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("g");
  add_relu(g, kLongName, "x", "t");
  add_relu(g, kSolidName, "t", "y");
  for (auto* v : {g->add_input(), g->add_output()}) {
    v->set_name(v == &g->input(0) ? "x" : "y");
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(1);
    t->mutable_shape()->add_dim()->set_dim_value(4);
  }
  return m.SerializeAsString();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// The layer names of a narrow table, continuation lines joined back on.
std::vector<std::string> narrow_names(const std::vector<std::string>& lines) {
  std::vector<std::string> names;
  size_t column = std::string::npos;
  for (const auto& l : lines) {
    if (column == std::string::npos) {
      if (l.find("precision") != std::string::npos && l.rfind("layer") != std::string::npos)
        column = l.rfind("layer");
      continue;
    }
    if (l.size() <= column) continue;
    const bool continuation = l.find_first_not_of(' ') >= column;
    if (continuation && !names.empty())
      names.back() += l.substr(column);
    else
      names.push_back(l.substr(column));
  }
  return names;
}

class InspectCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("trtutils_inspect_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "m.onnx", std::ios::binary) << long_names_model();
    engine_ = (dir_ / "m.engine").string();
    const auto r = run_cli("build --onnx " + (dir_ / "m.onnx").string() + " --output " + engine_);
    ASSERT_EQ(r.code, 0) << r.output;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string engine_;
};

TEST_F(InspectCliTest, DefaultTableIsNarrowWithWholeNames) {
  const auto r = run_cli("inspect --engine " + engine_);
  ASSERT_EQ(r.code, 0) << r.output;
  const std::vector<std::string> lines = lines_of(r.output);
  for (const auto& l : lines)
    if (l.rfind("engine: ", 0) != 0) {
      EXPECT_LE(l.size(), 100u) << l;
    }
  EXPECT_EQ(narrow_names(lines), (std::vector<std::string>{kLongName, kSolidName})) << r.output;
  EXPECT_EQ(r.output.find("..."), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(std::string("trtutils: ") + library_version() +
                          "; engine file format version 2 (written by trtutils "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("--wide"), std::string::npos) << r.output;
}

TEST_F(InspectCliTest, WideTableHasKernelsShapesAndWholeNames) {
  const auto r = run_cli("inspect --wide --engine " + engine_);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("shapes (inputs -> outputs)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[1, 4] -> [1, 4]"), std::string::npos) << r.output;
  bool long_seen = false, solid_seen = false;
  for (const auto& l : lines_of(r.output)) {
    long_seen |= l.find(kLongName + " ") != std::string::npos;
    solid_seen |= l.find(kSolidName + " ") != std::string::npos;
  }
  EXPECT_TRUE(long_seen && solid_seen) << r.output;
  EXPECT_NE(r.output.find("engine file format version 2"), std::string::npos) << r.output;
}

TEST_F(InspectCliTest, JsonHasTheVersionsAndIsTheLibrarysDescription) {
  // stdout only: the JSON.
  const auto r = test_util::run_command("sh -c '" + std::string(TRTUTILS_CLI) +
                                        " inspect --json --engine " + engine_ + " 2>/dev/null'");
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("trtutils_version"), library_version());
  EXPECT_EQ(j.at("engine_format_version"), 2);
  EXPECT_EQ(j.at("engine_producer"), std::string("trtutils ") + library_version());
  EXPECT_EQ(j.at("layers").at(0).at("name"), kLongName);
  const auto engine = Engine::load(engine_, {.backend = "cpu"});
  EXPECT_EQ(j, nlohmann::json::parse(engine_inspect_json(*engine)));
}

}  // namespace
}  // namespace trtutils
