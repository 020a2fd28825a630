// trtutils classify --engine ENGINE --input IMAGE_OR_DIR... --output DIR [--top_k 5]
//   [--labels FILE] [--backend auto|cpu|cuda] [--preprocess auto|cpu|gpu] [--threads N]
//   [--resize_method linear|letterbox]
//   [--input_scale LO HI] [--mean R G B] [--std R G B] [--color_order RGB|BGR] [--pad_value 114]
// Per image: DIR/<name>.json with the top-k classes (softmax applied unless the model's output
// already is a distribution; include/trtutils/detector.h) and the latency.
#include <fmt/format.h>

#include <chrono>

#include "batcher_flags.h"
#include "commands.h"
#include "flag_ranges.h"
#include "image_inputs.h"
#include "trtutils/check.h"
#include "trtutils/detector.h"

namespace trtutils::cli {

namespace {

namespace fs = std::filesystem;

struct ClassifyFlags {
  std::string engine;
  std::vector<std::string> inputs;
  std::string output;
  int64_t top_k = 5;
  std::string labels;
  std::string backend = "auto";
  std::string preprocess = "auto";
  int threads = 0;
  BatcherFlags pre;
};

void classify(const ClassifyFlags& f) {
  ImageBatcherOptions pre;
  apply_preprocess_flags(f.pre, pre);
  const fs::path out_dir = f.output;
  const std::vector<ImageJob> jobs = image_jobs(f.inputs, out_dir, {".json"});
  const std::vector<std::string> labels = read_labels(f.labels);
  Classifier cls(f.engine, {.resize_method = pre.resize_method,
                            .input_scale = pre.input_scale,
                            .mean = pre.mean,
                            .std = pre.std,
                            .color_order = pre.color_order,
                            .pad_value = pre.pad_value,
                            .backend = f.backend,
                            .num_threads = f.threads,
                            .preprocess = f.preprocess});
  std::error_code ec;
  TRT_CHECK_ARG(fs::is_directory(out_dir, ec) || fs::create_directories(out_dir, ec),
                "--output '{}' cannot be created: {}", f.output, ec.message());
  for (const ImageJob& job : jobs) {
    const auto t0 = std::chrono::steady_clock::now();
    const Image img = load_image(job.image);
    const double decode_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const std::vector<Classification> top = cls.classify(img, f.top_k);
    ImageLatency lat = cls.last_latency();
    lat.decode_ms = decode_ms;
    nlohmann::json list = nlohmann::json::array();
    std::string summary;
    for (const Classification& c : top) {
      nlohmann::json e = {{"class_id", c.class_id}, {"score", c.score}};
      const auto l = label_of(labels, c.class_id);
      if (l) e["label"] = *l;
      list.push_back(std::move(e));
      if (summary.size() < 200)
        summary += fmt::format("{}{} {:.3f}", summary.empty() ? "" : ", ",
                               l ? *l : std::to_string(c.class_id), c.score);
    }
    const fs::path json_path = out_dir / (job.stem + ".json");
    write_json(json_path, {{"image", job.image.string()},
                           {"width", img.width},
                           {"height", img.height},
                           {"engine", f.engine},
                           {"num_classes", cls.num_classes()},
                           {"softmax_applied", cls.softmax_applied()},
                           {"top_k", std::move(list)},
                           {"latency_ms", latency_json(lat)}});
    fmt::print("{}: {} ({:.1f} ms) -> {}\n", job.image.string(), summary, lat.total_ms(),
               json_path.string());
  }
}

}  // namespace

void add_classify_command(CLI::App& app) {
  auto f = std::make_shared<ClassifyFlags>();
  f->pre.resize_method = "linear";
  CLI::App* sub = app.add_subcommand(
      "classify", "Classify images with an engine: the top-k classes of each as JSON");
  sub->add_option("--engine", f->engine, "engine of an image classifier ([N, classes] output)")
      ->required();
  sub->add_option("--input", f->inputs, "image files and/or folders of images")->required();
  sub->add_option("--output", f->output, "folder for <name>.json")->required();
  add_ranged(sub, "--top_k", f->top_k, "classes reported per image", int64_t{1}, int64_t{1} << 20);
  sub->add_option("--labels", f->labels, "class names, one per line (line 1: class 0)");
  sub->add_option("--backend", f->backend, "engine runtime: auto, cpu, cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  sub->add_option("--preprocess", f->preprocess,
                  "where images are resized and normalised: auto (the GPU for a GPU engine), "
                  "cpu, gpu")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}))
      ->capture_default_str();
  add_threads_flag(sub, f->threads, "CPU threads");
  add_preprocess_flags(sub, f->pre);
  sub->callback([f] { classify(*f); });
}

}  // namespace trtutils::cli
