// The bad-input corpus (tests/data/bad, made by make_bad_corpus.py): one test per line of
// tests/data/bad/MANIFEST.tsv. Each runs the CLI command of its line on a copy of the file and
// expects a clean failure: exit code 1 or 2 (no crash, no timeout), exactly one "error:" line on
// stderr holding the expected text (one line, printable, not an internal error), every other
// stderr line a log line, and nothing written: the output folder stays empty and no file
// appears anywhere else in the test's folder (no output, no temporary).
//
// MANIFEST.tsv: '#' comments, then one line per file, three tab-separated columns:
//   file      the name in tests/data/bad
//   command   the CLI arguments, with {file} (the copy of the file, in a folder of its own),
//             {in} (that folder: an image directory), {out} (the empty output folder) and
//             {examples} (the repository's examples/); or "-" for a file that another test
//             covers (a fuzz regression input that must be accepted, say)
//   expected  the text the error line must contain; for "-": the covering test, Suite.Name
// EveryFileHasAManifestLine keeps the folder and the manifest in step.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace trtutils {
namespace {

namespace fs = std::filesystem;

const fs::path kBadDir = fs::path(TRTUTILS_TEST_DATA_DIR) / "bad";
// Files of tests/data/bad that are not bad inputs (and Python's cache of the script).
const std::set<std::string> kNotInputs = {"MANIFEST.tsv", "make_bad_corpus.py", "__pycache__"};
constexpr uint64_t kMaxFileBytes = 64 << 10;

struct BadCase {
  std::string file, command, expected;
  int line = 0;
};

// For gtest's messages (instead of the struct's bytes).
void PrintTo(const BadCase& c, std::ostream* os) {
  *os << "MANIFEST.tsv:" << c.line << " " << c.file;
}

struct Manifest {
  std::vector<BadCase> cases;
  std::vector<std::string> problems;  // lines that do not parse
};

Manifest read_manifest() {
  Manifest m;
  std::ifstream f(kBadDir / "MANIFEST.tsv");
  if (!f) {
    m.problems.push_back("cannot read " + (kBadDir / "MANIFEST.tsv").string());
    return m;
  }
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    std::stringstream s(line);
    for (std::string col; std::getline(s, col, '\t');) cols.push_back(col);
    if (cols.size() != 3 || cols[0].empty() || cols[1].empty() || cols[2].empty()) {
      m.problems.push_back("MANIFEST.tsv:" + std::to_string(n) +
                           ": expected 3 non-empty tab-separated columns: " + line);
      continue;
    }
    m.cases.push_back({cols[0], cols[1], cols[2], n});
  }
  return m;
}

const Manifest& manifest() {
  static const Manifest m = read_manifest();
  return m;
}

std::vector<BadCase> runnable_cases() {
  std::vector<BadCase> r;
  for (const auto& c : manifest().cases)
    if (c.command != "-") r.push_back(c);
  return r;
}

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string substitute(std::string s, const std::string& key, const std::string& value) {
  for (size_t p = s.find(key); p != std::string::npos; p = s.find(key, p + value.size()))
    s.replace(p, key.size(), value);
  return s;
}

// Every path in `dir`, recursively, relative to it.
std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> r;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    r.insert(fs::relative(e.path(), dir).string());
  return r;
}

class BadCorpusTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadCorpusTest, FailsCleanly) {
  const BadCase& c = GetParam();
  SCOPED_TRACE("MANIFEST.tsv:" + std::to_string(c.line) + " " + c.file);
  const fs::path dir = fs::temp_directory_path() /
                       ("trtutils_bad_corpus_" + std::to_string(::getpid()) + "_" + c.file);
  fs::remove_all(dir);
  const fs::path in = dir / "in", out = dir / "out";
  fs::create_directories(in);
  fs::create_directories(out);
  // A copy: a command that wrongly writes to its input cannot damage the corpus.
  const std::string original = read_all(kBadDir / c.file);
  fs::copy_file(kBadDir / c.file, in / c.file);

  std::string args = c.command;
  args = substitute(args, "{file}", (in / c.file).string());
  args = substitute(args, "{in}", in.string());
  args = substitute(args, "{out}", out.string());
  args = substitute(
      args, "{examples}",
      fs::weakly_canonical(fs::path(TRTUTILS_TEST_DATA_DIR) / "../../examples").string());
  // Run from the test's folder: a file written to the working directory is caught too.
  const std::string cmd = "cd '" + dir.string() + "' && timeout 120 " + TRTUTILS_CLI + " " + args +
                          " >stdout.txt 2>stderr.txt";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << cmd;
  const int code = WEXITSTATUS(status);
  const std::string out_text = read_all(dir / "stdout.txt");
  const std::string err_text = read_all(dir / "stderr.txt");
  const std::string report = "command: " + args + "\nexit code " + std::to_string(code) +
                             "\nstdout:\n" + out_text + "stderr:\n" + err_text;

  EXPECT_TRUE(code == 1 || code == 2) << "expected exit code 1 or 2 (124: timeout, >128: signal)\n"
                                      << report;
  std::vector<std::string> errors, other;
  std::stringstream lines(err_text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("error:", 0) == 0)
      errors.push_back(line);
    else if (line.rfind("[trtutils] ", 0) != 0)
      other.push_back(line);
  }
  ASSERT_EQ(errors.size(), 1u) << report;
  const std::string& error = errors[0];
  EXPECT_NE(error.find(c.expected), std::string::npos)
      << "expected '" << c.expected << "' in the error line\n"
      << report;
  EXPECT_EQ(error.find("internal error"), std::string::npos) << report;
  EXPECT_TRUE(
      std::all_of(error.begin(), error.end(),
                  [](char ch) { return static_cast<unsigned char>(ch) >= 0x20 && ch != 0x7f; }))
      << "control character in the error line\n"
      << report;
  EXPECT_TRUE(other.empty()) << "stderr lines that are neither the error nor a log line (a "
                                "message spanning lines?)\n"
                             << report;
  EXPECT_EQ(out_text.find("error:"), std::string::npos) << report;

  // Nothing written: no output, no temporary, no stray file; the input unchanged.
  EXPECT_TRUE(fs::is_empty(out)) << "something was left in the output folder (listing below)\n"
                                 << report;
  const std::set<std::string> expected_files = {"in", (fs::path("in") / c.file).string(), "out",
                                                "stdout.txt", "stderr.txt"};
  EXPECT_EQ(listing(dir), expected_files) << report;
  EXPECT_TRUE(read_all(in / c.file) == original) << "the command changed its input\n" << report;
  fs::remove_all(dir);
}

std::string case_name(const ::testing::TestParamInfo<BadCase>& info) {
  std::string s = info.param.file;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Manifest, BadCorpusTest, ::testing::ValuesIn(runnable_cases()), case_name);

// The corpus and the manifest never drift: every file has exactly one line, every line a file
// (small, as committed test data should be), and a "-" line names a test that exists.
TEST(BadCorpus, EveryFileHasAManifestLine) {
  for (const auto& p : manifest().problems) ADD_FAILURE() << p;
  std::set<std::string> listed;
  for (const auto& c : manifest().cases) {
    EXPECT_TRUE(listed.insert(c.file).second) << "MANIFEST.tsv lists " << c.file << " twice";
    EXPECT_TRUE(fs::is_regular_file(kBadDir / c.file))
        << "MANIFEST.tsv:" << c.line << ": no file tests/data/bad/" << c.file;
    if (c.command != "-") continue;
    const auto dot = c.expected.find('.');
    bool found = false;
    const auto* unit = ::testing::UnitTest::GetInstance();
    for (int i = 0; i < unit->total_test_suite_count() && dot != std::string::npos; ++i) {
      const auto* suite = unit->GetTestSuite(i);
      if (suite->name() != c.expected.substr(0, dot)) continue;
      for (int j = 0; j < suite->total_test_count(); ++j)
        found = found || suite->GetTestInfo(j)->name() == c.expected.substr(dot + 1);
    }
    EXPECT_TRUE(found) << "MANIFEST.tsv:" << c.line << ": " << c.file
                       << " is said to be covered by test " << c.expected
                       << ", which does not exist";
  }
  for (const auto& e : fs::directory_iterator(kBadDir)) {
    const std::string name = e.path().filename().string();
    if (kNotInputs.count(name)) continue;
    if (!e.is_regular_file()) {
      ADD_FAILURE() << "tests/data/bad/" << name << " is not a plain file";
      continue;
    }
    EXPECT_TRUE(listed.count(name))
        << "tests/data/bad/" << name
        << " has no line in MANIFEST.tsv (file, CLI command, expected error text)";
    EXPECT_LT(e.file_size(), kMaxFileBytes) << "tests/data/bad/" << name << " is too large";
  }
}

}  // namespace
}  // namespace trtutils
