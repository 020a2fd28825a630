// trtutils detect --engine ENGINE --input IMAGE_OR_DIR... --output DIR [--conf_threshold 0.25]
//   [--iterations N [--warmup 10]]
//   [--labels FILE] [--backend auto|cpu|cuda] [--preprocess auto|cpu|gpu] [--threads N]
//   [--resize_method letterbox|linear]
//   [--input_scale LO HI] [--mean R G B] [--std R G B] [--color_order RGB|BGR] [--pad_value 114]
// Per image: DIR/<name>.json (boxes in the image's pixel coordinates, classes, labels, scores,
// latency) and DIR/<name>.png (the image with the boxes drawn and labelled). The engine needs
// the EfficientNMS outputs of build_yolo (include/trtutils/detector.h). An engine with a static
// batch N takes the images N at a time. --iterations N then times every batch again from the
// decoded images to the detections (the speed a service sees, decoding apart).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "batcher_flags.h"
#include "commands.h"
#include "flag_ranges.h"
#include "image_inputs.h"
#include "stats.h"
#include "trtutils/check.h"
#include "trtutils/detector.h"
#include "trtutils/image.h"
#include "trtutils/logging.h"

namespace trtutils::cli {

namespace {

namespace fs = std::filesystem;

struct DetectFlags {
  std::string engine;
  std::vector<std::string> inputs;
  std::string output;
  float conf_threshold = 0.25f;
  std::string labels;
  std::string backend = "auto";
  std::string preprocess = "auto";
  int threads = 0;
  int iterations = 0;  // --iterations: timed repetitions after the results are written
  int warmup = 10;
  BatcherFlags pre;
};

nlohmann::json detections_json(const std::vector<Detection>& dets,
                               const std::vector<std::string>& labels) {
  nlohmann::json list = nlohmann::json::array();
  for (const Detection& d : dets) {
    const std::array<uint8_t, 3> col = detection_color(d.class_id);
    nlohmann::json e = {{"class_id", d.class_id},
                        {"score", d.score},
                        {"box", {d.x1, d.y1, d.x2, d.y2}},
                        {"color", {col[0], col[1], col[2]}}};
    if (const auto l = label_of(labels, d.class_id)) e["label"] = *l;
    list.push_back(std::move(e));
  }
  return list;
}

struct Decoded {
  const ImageJob& job;
  const Image& image;
  double decode_ms = 0;
};

// Writes <stem>.json and <stem>.png of one image and prints its line.
void write_result(const DetectFlags& f, const fs::path& out_dir, const Decoded& d,
                  const std::vector<Detection>& dets, const ImageLatency& lat, size_t batch,
                  const std::vector<std::string>& labels) {
  const fs::path json_path = out_dir / (d.job.stem + ".json");
  const fs::path png_path = out_dir / (d.job.stem + ".png");
  write_json(json_path, {{"image", d.job.image.string()},
                         {"width", d.image.width},
                         {"height", d.image.height},
                         {"engine", f.engine},
                         {"box_format", "x1 y1 x2 y2, image pixels"},
                         {"detections", detections_json(dets, labels)},
                         {"batch", batch},
                         {"latency_ms", latency_json(lat)}});
  write_png(png_path, draw_detections(d.image, dets, labels));
  fmt::print(
      "{}: {} detection{} in {:.1f} ms (decode {:.1f}, preprocess {:.1f}, inference "
      "{:.1f}, postprocess {:.1f}{}) -> {}, {}\n",
      d.job.image.string(), dets.size(), dets.size() == 1 ? "" : "s", lat.total_ms(), lat.decode_ms,
      lat.preprocess_ms, lat.inference_ms, lat.postprocess_ms,
      batch > 1 ? fmt::format("; a batch of {}", batch) : "", json_path.string(),
      png_path.string());
}

// --iterations: every batch of images again, timed from decoded images to detections.
void time_batches(const DetectFlags& f, Detector& det,
                  const std::vector<std::vector<Image>>& batches, const fs::path& out_dir) {
  std::vector<double> ms;
  size_t images = 0;
  for (int w = 0; w < f.warmup; ++w)
    for (const auto& b : batches) det.detect(b);
  for (int it = 0; it < f.iterations; ++it) {
    for (const auto& b : batches) {
      const auto t0 = std::chrono::steady_clock::now();
      det.detect(b);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      images += b.size();
    }
  }
  double total = 0;
  for (double v : ms) total += v;
  const double p50 = percentile(ms, 50), p90 = percentile(ms, 90), p99 = percentile(ms, 99);
  const double ips = static_cast<double>(images) * 1e3 / total;
  fmt::print(
      "timing: {} execution{} of up to {} image{} (decoded images to detections): median {:.3f} "
      "ms, p90 {:.3f}, p99 {:.3f}, mean {:.3f}; {:.1f} images/s\n",
      ms.size(), ms.size() == 1 ? "" : "s", det.batch_size(), det.batch_size() == 1 ? "" : "s", p50,
      p90, p99, total / static_cast<double>(ms.size()), ips);
  write_json(out_dir / "timing.json", {{"engine", f.engine},
                                       {"backend", det.engine().runtime_backend()},
                                       {"gpu_preprocessing", det.gpu_preprocessing()},
                                       {"batch", det.batch_size()},
                                       {"executions", ms.size()},
                                       {"median_ms", p50},
                                       {"p90_ms", p90},
                                       {"p99_ms", p99},
                                       {"mean_ms", total / static_cast<double>(ms.size())},
                                       {"images_per_s", ips}});
}

void detect(const DetectFlags& f) {
  ImageBatcherOptions pre;
  apply_preprocess_flags(f.pre, pre);
  const fs::path out_dir = f.output;
  const std::vector<ImageJob> jobs = image_jobs(f.inputs, out_dir, {".json", ".png"});
  const std::vector<std::string> labels = read_labels(f.labels);
  Detector det(f.engine, {.conf_threshold = f.conf_threshold,
                          .resize_method = pre.resize_method,
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
  // Images in groups of the engine's batch: one execution each.
  const auto n = static_cast<size_t>(det.batch_size());
  double inference_sum = 0;
  std::vector<std::vector<Image>> timed;
  for (size_t first = 0; first < jobs.size(); first += n) {
    std::vector<Image> images;
    std::vector<double> decode_ms;
    for (size_t i = first; i < std::min(jobs.size(), first + n); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      images.push_back(load_image(jobs[i].image));
      decode_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    const std::vector<std::vector<Detection>> dets = det.detect(images);
    ImageLatency lat = det.last_latency();
    inference_sum += lat.inference_ms;
    for (size_t i = 0; i < images.size(); ++i) {
      lat.decode_ms = decode_ms[i];
      write_result(f, out_dir, {jobs[first + i], images[i], decode_ms[i]}, dets[i], lat,
                   images.size(), labels);
    }
    if (f.iterations > 0) timed.push_back(std::move(images));
  }
  const size_t executions = (jobs.size() + n - 1) / n;
  fmt::print("{} image{} on {} (preprocessing on the {}), mean inference {:.2f} ms per execution\n",
             jobs.size(), jobs.size() == 1 ? "" : "s", det.engine().runtime_backend(),
             det.gpu_preprocessing() ? "GPU" : "host",
             inference_sum / static_cast<double>(executions));
  if (f.iterations > 0) time_batches(f, det, timed, out_dir);
}

}  // namespace

void add_detect_command(CLI::App& app) {
  auto f = std::make_shared<DetectFlags>();
  CLI::App* sub = app.add_subcommand(
      "detect",
      "Detect objects in images with a build_yolo engine: JSON and an annotated PNG each");
  sub->add_option("--engine", f->engine, "engine with EfficientNMS outputs (from build_yolo)")
      ->required();
  sub->add_option("--input", f->inputs, "image files and/or folders of images")->required();
  sub->add_option("--output", f->output, "folder for <name>.json and <name>.png")->required();
  add_ranged(sub, "--conf_threshold", f->conf_threshold, "keep detections with a score >= this",
             0.0f, 1.0f);
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
  add_ranged(sub, "--iterations", f->iterations,
             "then time every batch of images this many times, decoded images to detections "
             "(median / p90 / p99 ms, images/s; also <output>/timing.json)",
             0, 1 << 20);
  add_ranged(sub, "--warmup", f->warmup, "untimed passes before --iterations", 0, 1 << 20);
  sub->callback([f] { detect(*f); });
}

}  // namespace trtutils::cli
