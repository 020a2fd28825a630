#include "image_inputs.h"

#include <fstream>
#include <map>

#include "trtutils/check.h"
#include "trtutils/file_util.h"
#include "trtutils/image.h"

namespace trtutils::cli {

namespace fs = std::filesystem;

std::vector<ImageJob> image_jobs(const std::vector<std::string>& inputs, const fs::path& output_dir,
                                 const std::vector<std::string>& extensions) {
  TRT_CHECK_ARG(!inputs.empty(), "--input: give at least one image or folder");
  std::vector<ImageJob> jobs;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      for (const fs::path& p : list_image_files(in)) jobs.push_back({p, p.stem().string()});
      continue;
    }
    require_regular_file(in, "image");
    jobs.push_back({in, fs::path(in).stem().string()});
  }
  std::map<std::string, fs::path> seen;
  for (ImageJob& j : jobs) {
    if (j.stem.empty()) j.stem = "image";
    const auto [it, fresh] = seen.emplace(j.stem, j.image);
    TRT_CHECK_ARG(fresh, "--input: '{}' and '{}' would both write {}/{}.*; rename one",
                  it->second.string(), j.image.string(), output_dir.string(), j.stem);
  }
  // An output that is an input would be replaced before (or after) it is read.
  for (const ImageJob& j : jobs)
    for (const ImageJob& other : jobs)
      for (const std::string& ext : extensions)
        check_output_is_not_input("--output", output_dir / (j.stem + ext),
                                  {{"--input", other.image}});
  return jobs;
}

std::vector<std::string> read_labels(const std::string& path) {
  if (path.empty()) return {};
  std::string text = read_file(path, uint64_t{64} << 20);
  std::vector<std::string> labels;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    labels.push_back(line);
    start = end + 1;
  }
  while (!labels.empty() && labels.back().find_first_not_of(" \t") == std::string::npos)
    labels.pop_back();
  TRT_CHECK_ARG(!labels.empty(), "--labels '{}' holds no class names", path);
  return labels;
}

std::optional<std::string> label_of(const std::vector<std::string>& labels, int64_t class_id) {
  if (class_id < 0 || class_id >= static_cast<int64_t>(labels.size())) return std::nullopt;
  return labels[static_cast<size_t>(class_id)];
}

nlohmann::json latency_json(const ImageLatency& l) {
  return {{"decode", l.decode_ms},
          {"preprocess", l.preprocess_ms},
          {"inference", l.inference_ms},
          {"postprocess", l.postprocess_ms},
          {"total", l.total_ms()}};
}

void write_json(const fs::path& path, const nlohmann::json& j) {
  write_file_atomic(path, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace trtutils::cli
