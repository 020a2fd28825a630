// ImageBatcher: file listing, the worker pool with bounded prefetch, and the .npy output.
//
// Workers claim images in file order from a shared counter, but never past the end of batch
// `consumed + prefetch_batches`: at most that many batch tensors (plus one decoded image per
// worker) exist at any time, whatever the directory size. Each image is written straight into
// its slot of its batch tensor, so the order of completion does not matter.
#include "trtutils/image_batcher.h"

#include <malloc.h>
#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "core/check.h"
#include "core/progress.h"
#include "data/codecs.h"
#include "data/npy_stream.h"
#include "data/preprocess.h"
#include "trtutils/logging.h"

namespace trtutils {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

void validate(const ImageBatcherOptions& o) {
  data::check_render_options(o);
  TRT_CHECK_ARG(o.batch_size >= 1 && o.batch_size <= (1 << 20), "batch size {} must be in 1..{}",
                o.batch_size, 1 << 20);
  TRT_CHECK_ARG(!o.max_images || *o.max_images >= 1, "max_images must be at least 1, got {}",
                o.max_images.value_or(0));
  check_thread_count(o.num_threads, "thread count");
  TRT_CHECK_ARG(o.prefetch_batches >= 1 && o.prefetch_batches <= 1024,
                "prefetch of {} batches must be in 1..1024", o.prefetch_batches);
}

// Cores this process may run on (taskset, cgroup cpusets), not all the machine's.
int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

std::optional<DataOrder> data_order_from_name(std::string_view name) {
  const std::string n = lower(name);
  if (n == "nchw") return DataOrder::kNCHW;
  if (n == "nhwc") return DataOrder::kNHWC;
  return std::nullopt;
}
std::optional<ResizeMethod> resize_method_from_name(std::string_view name) {
  const std::string n = lower(name);
  if (n == "letterbox") return ResizeMethod::kLetterbox;
  if (n == "linear") return ResizeMethod::kLinear;
  return std::nullopt;
}
std::optional<ColorOrder> color_order_from_name(std::string_view name) {
  const std::string n = lower(name);
  if (n == "rgb") return ColorOrder::kRGB;
  if (n == "bgr") return ColorOrder::kBGR;
  return std::nullopt;
}
std::string_view data_order_name(DataOrder order) {
  switch (order) {
    case DataOrder::kNCHW:
      return "NCHW";
    case DataOrder::kNHWC:
      return "NHWC";
  }
  return "?";
}
std::string_view resize_method_name(ResizeMethod method) {
  switch (method) {
    case ResizeMethod::kLetterbox:
      return "letterbox";
    case ResizeMethod::kLinear:
      return "linear";
  }
  return "?";
}
std::string_view color_order_name(ColorOrder order) {
  switch (order) {
    case ColorOrder::kRGB:
      return "RGB";
    case ColorOrder::kBGR:
      return "BGR";
  }
  return "?";
}

struct ImageBatcher::Impl {
  ImageBatcherOptions opt;
  data::RenderSpec spec;
  std::vector<fs::path> files;  // the ones used
  ImageDirSkips skips;          // what the directory held but is not used
  int64_t batches = 0;
  int64_t sample_bytes = 0;
  int threads = 1;

  struct Slot {
    Tensor tensor;
    bool started = false;  // `remaining` set by the first image claimed
    int64_t remaining = 0;
    int64_t error_index = -1;
    std::exception_ptr error;
  };
  std::mutex mu;
  std::condition_variable work_cv, done_cv;
  std::vector<std::thread> workers;
  bool stop = false;
  int64_t next_image = 0;  // next to claim
  int64_t consumed = 0;    // batches handed out
  std::map<int64_t, Slot> slots;
  std::vector<Tensor> spare;  // batch tensors handed back by save_calibration_data, for reuse
  std::exception_ptr failed;
  std::unique_ptr<Progress> progress;

  ~Impl() { stop_workers(); }

  int64_t images() const { return static_cast<int64_t>(files.size()); }
  int64_t images_in(int64_t batch) const {
    return std::min(opt.batch_size, images() - batch * opt.batch_size);
  }
  Shape shape_of(int64_t n) const {
    const auto [h, w, c] = opt.shape;
    return opt.order == DataOrder::kNCHW ? Shape{n, c, h, w} : Shape{n, h, w, c};
  }
  int64_t claim_limit() const {
    return std::min(images(), (consumed + opt.prefetch_batches) * opt.batch_size);
  }

  void worker() {
    for (;;) {
      int64_t idx, batch;
      Tensor tensor;
      std::exception_ptr error;
      {
        std::unique_lock lk(mu);
        work_cv.wait(lk,
                     [&] { return stop || next_image >= images() || next_image < claim_limit(); });
        if (stop || next_image >= images()) return;
        idx = next_image++;
        batch = idx / opt.batch_size;
        Slot& slot = slots[batch];
        if (!slot.started) {
          slot.started = true;
          slot.remaining = images_in(batch);
        }
        if (!slot.tensor.defined()) {
          const Shape shape = shape_of(images_in(batch));
          if (!spare.empty() && spare.back().shape() == shape) {
            // Every element is overwritten by the images, so a used tensor needs no clearing.
            slot.tensor = std::move(spare.back());
            spare.pop_back();
          } else {
            try {
              slot.tensor = Tensor(opt.dtype, shape);
            } catch (...) {  // out of memory: reported with this image's batch
              error = std::current_exception();
            }
          }
        }
        tensor = slot.tensor;
      }
      if (!error) {
        try {
          data::Image img = data::convert_channels(data::load_image(files[idx]), spec.channels);
          data::render_image(img, spec,
                             tensor.data<uint8_t>() + (idx % opt.batch_size) * sample_bytes);
        } catch (...) {
          error = std::current_exception();
        }
      }
      std::lock_guard lk(mu);
      Slot& slot = slots[batch];
      if (error && (slot.error_index < 0 || idx < slot.error_index)) {
        slot.error = error;
        slot.error_index = idx;
      }
      if (--slot.remaining == 0) done_cv.notify_all();
    }
  }

  void stop_workers() {
    {
      std::lock_guard lk(mu);
      stop = true;
    }
    work_cv.notify_all();
    for (std::thread& t : workers) t.join();
    workers.clear();
    stop = false;
  }

  void reset() {
    stop_workers();
    slots.clear();
    spare.clear();
    next_image = 0;
    consumed = 0;
    failed = nullptr;
    progress.reset();
  }

  Tensor next() {
    if (failed) std::rethrow_exception(failed);
    if (consumed >= batches) return {};
    if (consumed == 0 && opt.progress && !progress)
      progress = std::make_unique<Progress>("calibration data", images(), true);
    if (workers.empty() && next_image < images()) {
      const int n = static_cast<int>(std::min<int64_t>(threads, images() - next_image));
      for (int i = 0; i < n; ++i) workers.emplace_back([this] { worker(); });
    }
    Slot slot;
    {
      std::unique_lock lk(mu);
      done_cv.wait(lk, [&] {
        auto it = slots.find(consumed);
        return it != slots.end() && it->second.remaining == 0;
      });
      auto it = slots.find(consumed);
      slot = std::move(it->second);
      slots.erase(it);
      ++consumed;
    }
    work_cv.notify_all();
    if (slot.error) {
      failed = slot.error;
      stop_workers();
      std::rethrow_exception(failed);
    }
    if (progress) progress->update(std::min(images(), consumed * opt.batch_size));
#ifdef __GLIBC__
    // glibc raises its mmap threshold after the first large free, so later image and batch
    // buffers come from the heap, where the order of frees across threads strands free pages
    // (RSS grew to ~200 MB for 224x224 float32 batches of 8). Handing free pages back once per
    // batch keeps the footprint at the prefetch depth (~30 MB) for a small cost.
    malloc_trim(0);
#endif
    return std::move(slot.tensor);
  }
};

ImageBatcher::ImageBatcher(ImageBatcherOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  validate(options);
  m.opt = std::move(options);
  m.spec = data::make_render_spec(m.opt);
  data::ImageDirListing listing = data::list_image_dir(m.opt.image_dir);
  std::vector<fs::path>& files = listing.images;
  const int64_t found = static_cast<int64_t>(files.size());
  int64_t n = found;
  if (m.opt.max_images && *m.opt.max_images < n) n = *m.opt.max_images;
  const int64_t bs = m.opt.batch_size;
  TRT_CHECK_ARG(n >= bs || m.opt.keep_partial,
                "{} image(s) in '{}' do not fill one batch of {}; lower the batch size or keep the "
                "partial batch (--keep_partial; Python: keep_partial=True)",
                n, m.opt.image_dir.string(), bs);
  m.skips = std::move(listing.skips);
  m.skips.past_max_images = found - n;
  m.skips.partial_batch = m.opt.keep_partial ? 0 : n % bs;
  data::warn_image_skips(m.skips, m.opt.image_dir, bs);
  files.resize(static_cast<size_t>(n - m.skips.partial_batch));
  m.files = std::move(files);
  m.batches = (m.images() + bs - 1) / bs;
  m.sample_bytes =
      static_cast<int64_t>(dtype_storage_bytes(m.opt.dtype, shape_numel(m.shape_of(1))));
  shape_numel(m.shape_of(bs));  // overflow check of a whole batch
  m.threads = m.opt.num_threads > 0 ? m.opt.num_threads : usable_cores();
  if (m.opt.dtype == DataType::kInt8 && !m.opt.input_scale && m.opt.mean.empty())
    TRT_LOG_WARN(
        "int8 image data without an input scale: pixel values above 127 saturate (input_scale "
        "(-128, 127) "
        "centres them)");
  TRT_LOG_INFO("{} image(s) in '{}' (using {}): {} batch(es) of {}, {} {} {}", found,
               m.opt.image_dir.string(), m.images(), m.batches, bs, dtype_name(m.opt.dtype),
               data_order_name(m.opt.order), resize_method_name(m.opt.resize_method));
}

ImageBatcher::~ImageBatcher() = default;
ImageBatcher::ImageBatcher(ImageBatcher&&) noexcept = default;
ImageBatcher& ImageBatcher::operator=(ImageBatcher&&) noexcept = default;

int64_t ImageBatcher::num_batches() const {
  return impl_->batches;
}
int64_t ImageBatcher::batch_size() const {
  return impl_->opt.batch_size;
}
int64_t ImageBatcher::num_images() const {
  return impl_->images();
}
const std::vector<fs::path>& ImageBatcher::image_paths() const {
  return impl_->files;
}
const ImageDirSkips& ImageBatcher::skipped() const {
  return impl_->skips;
}
Shape ImageBatcher::batch_shape() const {
  return impl_->shape_of(impl_->opt.batch_size);
}
const ImageBatcherOptions& ImageBatcher::options() const {
  return impl_->opt;
}
Tensor ImageBatcher::next_batch() {
  return impl_->next();
}
void ImageBatcher::reset() {
  impl_->reset();
}

void ImageBatcher::save_calibration_data(const fs::path& path) {
  reset();
  try {
    data::NpyStreamWriter out(path, impl_->opt.dtype, impl_->shape_of(impl_->images()));
    for (Tensor b = next_batch(); !b.empty(); b = next_batch()) {
      out.write(b.raw(), b.nbytes());
      // Nobody else holds this batch: its buffer can take a later one (no fresh pages to fault
      // in and clear for every batch).
      std::lock_guard lk(impl_->mu);
      impl_->spare.push_back(std::move(b));
    }
    out.commit();
  } catch (...) {
    reset();
    throw;
  }
  reset();
}

}  // namespace trtutils
