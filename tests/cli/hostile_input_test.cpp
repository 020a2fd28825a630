// Hostile command lines: out-of-range numbers, special files where files are read (FIFOs,
// folders, devices), outputs that are one of the inputs, names with control characters. Each is
// run on a folder of good inputs (the example model, an input, calibration data, an engine, a
// calibration cache, a FIFO, ...) and must fail cleanly (clean_failure.h): exit code 1 or 2
// within its time limit, one error line naming what is wrong, and every file of the folder as
// it was. The numeric flags themselves are found from each subcommand's --help, so a flag added
// later without a range fails FlagRanges.EveryNumericFlagShowsItsRange.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "cli/clean_failure.h"
#include "trtutils/builder.h"
#include "trtutils/npy.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;

const fs::path kExamples = fs::path(TRTUTILS_TEST_DATA_DIR) / "../../examples";
const fs::path kImages = fs::path(TRTUTILS_TEST_DATA_DIR) / "images";

struct HostileCase {
  const char* name;
  std::string args;      // run in the fixture folder
  std::string expected;  // in the one error line
};

void PrintTo(const HostileCase& c, std::ostream* os) {
  *os << c.name;
}

// The folder every case runs in, made once: its files are what the cases must not change.
class HostileFolder {
 public:
  static const fs::path& dir() {
    static const HostileFolder f;
    return f.dir_;
  }
  static const fs::path& logs() {
    dir();
    return logs_path();
  }

 private:
  static fs::path& logs_path() {
    static fs::path p;
    return p;
  }
  HostileFolder() {
    const fs::path root =
        fs::temp_directory_path() / ("trtutils_hostile_" + std::to_string(getpid()));
    fs::remove_all(root);
    dir_ = root / "work";
    logs_path() = root;
    fs::create_directories(dir_ / "images");
    fs::create_directories(dir_ / "out");
    fs::create_directories(dir_ / "sub");
    fs::copy_file(kExamples / "tiny_cnn.onnx", dir_ / "model.onnx");
    fs::copy_file(kExamples / "tiny_cnn_input.npy", dir_ / "x.npy");
    fs::create_hard_link(dir_ / "model.onnx", dir_ / "hardlink.onnx");
    fs::create_symlink("model.onnx", dir_ / "symlink.onnx");
    for (const char* img : {"photo_astronaut.png", "photo_chelsea.png"})
      fs::copy_file(kImages / img, dir_ / "images" / img);
    ::mkfifo((dir_ / "fifo").c_str(), 0644);
    const std::string cache = "TRT-8601-EntropyCalibration2\ninput: 3c010a14\n";
    std::ofstream(dir_ / "model.cache") << cache;
    // Calibration data, an engine and an output of the model (given back as an input), made
    // in this process: every test process builds the folder, and a CLI start costs ~1 s under
    // the sanitizers.
    npy_save(dir_ / "calib.npy", Tensor(DataType::kFloat32, {2, 3, 32, 32}));
    builder::build_engine(dir_ / "model.onnx", dir_ / "model.engine", {.backend = "cpu"});
    npy_save(dir_ / "out" / "probabilities.npy", Tensor(DataType::kFloat32, {1, 10}));
  }
  fs::path dir_;
};

class HostileInputTest : public ::testing::TestWithParam<HostileCase> {};

TEST_P(HostileInputTest, FailsCleanly) {
  const HostileCase& c = GetParam();
  const fs::path& dir = HostileFolder::dir();
  const auto before = test_util::snapshot(dir);
  const test_util::CliRun r = test_util::run_cli(dir, c.args, HostileFolder::logs(), 30);
  test_util::expect_clean_error(r, c.expected);
  EXPECT_TRUE(test_util::snapshot(dir) == before) << "the command changed, added or removed files\n"
                                                  << r.report;
}

// A file of the bad-input corpus (tests/data/bad), for the commands its manifest line does not run.
std::string bad(const char* name) {
  return (fs::path(TRTUTILS_TEST_DATA_DIR) / "bad" / name).string();
}

const std::string kQuantize = "quantize --onnx model.onnx --output q.onnx --calibration_data ";
const std::string kGenerate =
    "generate_calibration --calibration_dir images --input_shape 32 32 3 --output c.npy ";

const HostileCase kCases[] = {
    // Numbers out of range: refused by the parser, naming the flag (65536 threads crashed).
    {"run_threads_huge", "run --onnx model.onnx --output_dir out --threads 65536", "--threads"},
    {"run_threads_negative", "run --onnx model.onnx --output_dir out --threads -5", "--threads"},
    {"benchmark_threads_huge", "benchmark --onnx model.onnx --threads 100000", "--threads"},
    {"quantize_threads_huge", kQuantize + "calib.npy --threads 65536", "--threads"},
    {"generate_threads_huge", kGenerate + "--threads 5000", "--threads"},
    {"benchmark_warmup_huge", "benchmark --onnx model.onnx --warmup 2000000000", "--warmup"},
    {"benchmark_iterations_zero", "benchmark --onnx model.onnx --iterations 0", "--iterations"},
    {"benchmark_duration_nan", "benchmark --onnx model.onnx --duration nan", "--duration"},
    {"benchmark_duration_negative", "benchmark --onnx model.onnx --duration -1", "--duration"},
    {"quantize_num_bins_huge", kQuantize + "calib.npy --num_bins 2000000000", "--num_bins"},
    {"quantize_percentile_zero", kQuantize + "calib.npy --percentile 0", "--percentile"},
    {"build_optimization_level", "build --onnx model.onnx --output m.engine --optimization_level 9",
     "--optimization_level"},
    {"build_workspace_negative", "build --onnx model.onnx --output m.engine --workspace -1",
     "--workspace"},
    {"run_seed_negative", "run --onnx model.onnx --output_dir out --seed -5", "--seed"},
    {"generate_batch_zero", kGenerate + "--batch_size 0", "--batch_size"},
    {"generate_input_scale_reversed", kGenerate + "--input_scale 1 0", "LO < HI"},
    {"run_backend_bogus", "run --onnx model.onnx --output_dir out --backend bogus", "--backend"},
    {"benchmark_backend_bogus", "benchmark --engine model.engine --backend bogus", "--backend"},
    {"build_backend_bogus", "build --onnx model.onnx --output m.engine --backend bogus",
     "--backend"},
    // Files that are not regular files: said what they are, never opened (a FIFO blocks).
    {"run_onnx_fifo", "run --onnx fifo --output_dir out", "is a FIFO (named pipe)"},
    {"run_onnx_directory", "run --onnx sub --output_dir out", "is a directory"},
    {"run_onnx_dev_zero", "run --onnx /dev/zero --output_dir out", "is a character device"},
    {"run_onnx_dev_null", "run --onnx /dev/null --output_dir out", "is a character device"},
    {"run_onnx_missing", "run --onnx nothing.onnx --output_dir out", "not found"},
    {"run_engine_fifo", "run --engine fifo --output_dir out", "is a FIFO (named pipe)"},
    {"inspect_engine_directory", "inspect --engine sub", "is a directory"},
    {"run_input_fifo", "run --onnx model.onnx --input input=fifo --output_dir out",
     "is a FIFO (named pipe)"},
    {"run_input_dev_zero", "run --onnx model.onnx --input input=/dev/zero --output_dir out",
     "is a character device"},
    {"quantize_calibration_fifo", kQuantize + "fifo", "is a FIFO (named pipe)"},
    {"quantize_calibration_dev_null", kQuantize + "/dev/null", "is a character device"},
    {"build_calibration_data_fifo",
     "build --onnx model.onnx --output m.engine --backend cpu --int8 --calibration_data fifo",
     "is a FIFO (named pipe)"},
    {"build_calibration_cache_fifo",
     "build --onnx model.onnx --output m.engine --backend cpu --int8 --calibration_cache fifo",
     "is a FIFO (named pipe)"},
    {"calib_to_qdq_cache_dev_null",
     "calib_to_qdq --onnx model.onnx --calibration_cache /dev/null --output q.onnx",
     "is a character device"},
    {"build_timing_cache_fifo",
     "build --onnx model.onnx --output m.engine --backend cpu --timing_cache fifo",
     "is a FIFO (named pipe)"},
    // Outputs that are inputs: refused before any work, the input left as it was.
    {"build_output_is_onnx", "build --onnx model.onnx --output model.onnx --backend cpu",
     "is the same file as --onnx"},
    {"build_output_is_onnx_respelled",
     "build --onnx model.onnx --output sub/../model.onnx --backend cpu",
     "is the same file as --onnx"},
    {"build_output_is_hard_link", "build --onnx model.onnx --output hardlink.onnx --backend cpu",
     "is the same file as --onnx"},
    {"build_output_is_symlink", "build --onnx symlink.onnx --output model.onnx --backend cpu",
     "is the same file as --onnx"},
    {"build_output_is_calibration_cache",
     "build --onnx model.onnx --output model.cache --backend cpu --int8 --calibration_cache "
     "model.cache",
     "is the same file as --calibration_cache"},
    {"quantize_output_is_onnx",
     "quantize --onnx model.onnx --output model.onnx --calibration_data calib.npy",
     "is the same file as --onnx"},
    {"quantize_output_is_calibration_data",
     "quantize --onnx model.onnx --output calib.npy --calibration_data calib.npy",
     "is the same file as --calibration_data"},
    {"calib_to_qdq_output_is_cache",
     "calib_to_qdq --onnx model.onnx --calibration_cache model.cache --output model.cache",
     "is the same file as --calibration_cache"},
    {"run_output_is_input",
     "run --onnx model.onnx --input input=out/probabilities.npy --output_dir out",
     "is the same file as --input"},
    {"benchmark_json_is_engine", "benchmark --engine model.engine --json model.engine",
     "is the same file as --engine"},
    // Invalid models: every command that reads one refuses it as `build` does.
    {"can_run_on_dla_gather_index",
     "can_run_on_dla --onnx " + bad("onnx_gather_index_out_of_range.onnx"),
     "index 7 (element 1 of the constant 'idx') is out of range"},
    {"can_run_on_dla_if_without_else",
     "can_run_on_dla --onnx " + bad("onnx_if_without_else_branch.onnx"),
     "the else_branch graph attribute is missing"},
    {"can_run_on_dla_output_not_computed",
     "can_run_on_dla --onnx " + bad("onnx_output_not_computed.onnx"),
     "graph output 'ghost' is not computed"},
    {"build_dla_output_not_computed",
     "build_dla --onnx " + bad("onnx_output_not_computed.onnx") +
         " --output m.engine --target_sm 87",
     "graph output 'ghost' is not computed"},
    {"quantize_no_outputs",
     "quantize --onnx " + bad("onnx_no_outputs.onnx") +
         " --output q.onnx --calibration_data calib.npy",
     "the graph has no outputs"},
    {"build_strongly_typed_gather_index",
     "build --onnx " + bad("onnx_gather_index_out_of_range.onnx") +
         " --output m.engine --backend cpu --strongly_typed",
     "is out of range"},
    // Control characters in names: escaped, the error stays one line.
    {"run_onnx_newline_in_name",
     "run --onnx \"$(printf 'new\\nerror: line.onnx')\" --output_dir out",
     "new\\nerror: line.onnx"},
    {"run_input_tab_in_name",
     "run --onnx model.onnx --input \"$(printf 'input=a\\tb.npy')\" --output_dir out", "a\\tb.npy"},
};

std::string case_name(const ::testing::TestParamInfo<HostileCase>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Cli, HostileInputTest, ::testing::ValuesIn(kCases), case_name);

std::vector<std::string> subcommands() {
  return {"run",     "benchmark",      "info",      "generate_calibration", "quantize",   "build",
          "inspect", "can_run_on_dla", "build_dla", "calib_to_qdq",         "build_yolo", "detect",
          "classify"};
}

// Every numeric option of every subcommand's --help shows its range ("INT in [0 - 1024]"), and
// the parser refuses a value just past it.
TEST(FlagRanges, EveryNumericFlagShowsItsRange) {
  const fs::path& dir = HostileFolder::dir();
  // "  --threads INT:INT in [0 - 1024] ..." or "  --seed UINT:UINT in [...]".
  static const std::regex option(
      R"(^\s+(?:-\w,)?(--\w+)(?:,--\w+)*\s+((?:INT|UINT|FLOAT)\S*)(.*)$)");
  static const std::regex range(R"(in \[(-?[0-9.e+-]+) - (-?[0-9.e+-]+)\])");
  int numeric = 0;
  for (const auto& sub : subcommands()) {
    const auto help = test_util::run_cli(dir, sub + " --help", HostileFolder::logs());
    ASSERT_EQ(help.code, 0) << help.report;
    std::stringstream lines(help.out);
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (!std::regex_match(line, m, option)) continue;
      ++numeric;
      const std::string flag = m[1].str(), rest = m[2].str() + m[3].str();
      std::smatch r;
      EXPECT_TRUE(std::regex_search(rest, r, range))
          << sub << " " << flag << " has no range in --help: " << line;
    }
  }
  EXPECT_GT(numeric, 20) << "the --help format changed: no numeric options found";
}

}  // namespace
}  // namespace trtutils
