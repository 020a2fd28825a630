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

#include "cli/clean_failure.h"

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

std::string substitute(std::string s, const std::string& key, const std::string& value) {
  for (size_t p = s.find(key); p != std::string::npos; p = s.find(key, p + value.size()))
    s.replace(p, key.size(), value);
  return s;
}

class BadCorpusTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadCorpusTest, FailsCleanly) {
  const BadCase& c = GetParam();
  SCOPED_TRACE("MANIFEST.tsv:" + std::to_string(c.line) + " " + c.file);
  const fs::path dir = fs::temp_directory_path() /
                       ("trtutils_bad_corpus_" + std::to_string(::getpid()) + "_" + c.file);
  fs::remove_all(dir);
  const fs::path work = dir / "work", in = work / "in", out = work / "out";
  fs::create_directories(in);
  fs::create_directories(out);
  // A copy: a command that wrongly writes to its input cannot damage the corpus.
  fs::copy_file(kBadDir / c.file, in / c.file);

  std::string args = c.command;
  args = substitute(args, "{file}", (in / c.file).string());
  args = substitute(args, "{in}", in.string());
  args = substitute(args, "{out}", out.string());
  args = substitute(
      args, "{examples}",
      fs::weakly_canonical(fs::path(TRTUTILS_TEST_DATA_DIR) / "../../examples").string());
  // Run from the work folder: a file written to the working directory is caught too.
  const auto before = test_util::snapshot(work);
  const test_util::CliRun r = test_util::run_cli(work, args, dir, 120);
  test_util::expect_clean_error(r, c.expected);
  // Nothing written: no output, no temporary, no stray file; the input unchanged.
  EXPECT_TRUE(fs::is_empty(out)) << "something was left in the output folder\n" << r.report;
  EXPECT_TRUE(test_util::snapshot(work) == before)
      << "the command changed, added or removed files\n"
      << r.report;
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
