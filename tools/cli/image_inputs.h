// Shared by detect and classify: --input (image files and folders) to the images to process
// and their output names, the --labels file, and the JSON writer.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "trtutils/detector.h"

namespace trtutils::cli {

struct ImageJob {
  std::filesystem::path image;  // the input file
  std::string stem;             // its output name: <output>/<stem>.json (and .png)
};

// Each --input is an image file (any name) or a folder, whose image files (*.jpg *.jpeg *.png
// *.bmp *.webp, not recursive) are taken in name order. Output stems are the file names without
// their extension; two inputs with the same stem are refused (a.jpg and a.png would overwrite
// each other's results), as is an output file that is one of the inputs. Error(kInvalidArgument)
// or kIO, naming the path, before any image is read.
std::vector<ImageJob> image_jobs(const std::vector<std::string>& inputs,
                                 const std::filesystem::path& output_dir,
                                 const std::vector<std::string>& extensions);

// A labels file: one class name per line, line i is class i ('\r' and trailing blank lines
// dropped). Empty path: no labels.
std::vector<std::string> read_labels(const std::string& path);
// The label of a class, or nullopt past the end of `labels`.
std::optional<std::string> label_of(const std::vector<std::string>& labels, int64_t class_id);

// {"decode", "preprocess", "inference", "postprocess", "total"} in milliseconds.
nlohmann::json latency_json(const ImageLatency& l);
// j as indented JSON text, written atomically.
void write_json(const std::filesystem::path& path, const nlohmann::json& j);

}  // namespace trtutils::cli
