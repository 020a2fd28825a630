// trtutils build_yolo --onnx MODEL --output ENGINE [--num_classes 80] [--conf_threshold 0.25]
//   [--iou_threshold 0.5] [--top_k 100] [--box_coding center_size|corner] [--class_agnostic]
//   [every build flag: --fp16, --int8, --calibration_data, --shape, --backend, ...]
// A YOLO detector with EfficientNMS inside the engine (include/trtutils/yolo.h); the engine's
// outputs are num_dets, det_boxes, det_scores, det_classes. --backend tensorrt writes
// <output stem>_nms.onnx with TensorRT's EfficientNMS_TRT plugin node and hands it to trtexec
// (--dry_run: prints the command, --trt_version X.Y: for that TensorRT). Exit codes as build's.
#include <fmt/format.h>

#include "build_flags.h"
#include "commands.h"
#include "flag_ranges.h"
#include "trtutils/check.h"
#include "trtutils/logging.h"
#include "trtutils/tensorrt.h"
#include "trtutils/yolo.h"

namespace trtutils::cli {

namespace {

struct BuildYoloFlags {
  BuildFlags build;
  builder::YoloConfig yolo;
};

void build_yolo(BuildYoloFlags& f, const CLI::App* sub) {
  const builder::BuildConfig& c = resolve_build_flags(f.build, sub);
  const auto trt_version = dry_run_trt_version(f.build);
  if (c.backend == "tensorrt" && f.build.dry_run) {
    const auto nms_onnx = builder::tensorrt_nms_onnx_path(f.build.output);
    const auto head = builder::write_yolo_nms_onnx(f.build.onnx, nms_onnx, f.yolo, true);
    fmt::print("{}\nEfficientNMS_TRT model written to {}\n", head.description, nms_onnx.string());
    (void)builder::build_with_trtexec(nms_onnx, f.build.output, c, /*dry_run=*/true, -1,
                                      trt_version);
    return;
  }
  TRT_CHECK_ARG(!f.build.dry_run, "--dry_run applies to --backend tensorrt only");
  const builder::YoloBuildResult r =
      builder::build_yolo_engine(f.build.onnx, f.build.output, f.yolo, c);
  fmt::print("{}\n", r.description);
  std::string summary;
  for (const auto& [p, n] : r.build.layers_per_precision)
    summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n, p);
  if (r.build.from_cache)
    fmt::print("engine {} reused from the engine cache ({:.2f} s)\n", f.build.output,
               r.build.seconds);
  else
    fmt::print("built {}: {} layers ({}) in {:.1f} s\n", f.build.output, r.build.num_layers,
               summary, r.build.seconds);
  print_calibration_notes(r.build);
}

}  // namespace

void add_build_yolo_command(CLI::App& app) {
  auto f = std::make_shared<BuildYoloFlags>();
  CLI::App* sub = app.add_subcommand(
      "build_yolo", "Build an engine from a YOLO detector with NMS inside (EfficientNMS outputs)");
  sub->add_option("--onnx", f->build.onnx, "ONNX model of a YOLO detector")->required();
  sub->add_option("--output", f->build.output, "engine file to write")->required();
  add_ranged(sub, "--num_classes", f->yolo.num_classes, "classes the model predicts", int64_t{1},
             int64_t{1} << 20);
  add_ranged(sub, "--conf_threshold", f->yolo.conf_threshold, "detections need a score >= this",
             0.0f, 1.0f);
  add_ranged(sub, "--iou_threshold", f->yolo.iou_threshold,
             "a box overlapping a better one of its class by IoU >= this is dropped", 0.0f, 1.0f);
  add_ranged(sub, "--top_k", f->yolo.top_k, "detections kept per image", int64_t{1},
             int64_t{1} << 20);
  sub->add_option("--box_coding", f->yolo.box_coding,
                  "the model's boxes: center_size (cx, cy, w, h) or corner (x1, y1, x2, y2)")
      ->check(CLI::IsMember({"center_size", "corner"}))
      ->capture_default_str();
  sub->add_flag("--class_agnostic", f->yolo.class_agnostic,
                "suppress overlapping boxes across classes, not per class");
  add_build_flags(sub, f->build);
  sub->callback([f, sub] {
    f->build.config.verbose = log_level() >= LogLevel::kVerbose;
    build_yolo(*f, sub);
  });
}

}  // namespace trtutils::cli
