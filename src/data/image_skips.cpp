// The warnings that say what an ImageBatcher left out of its directory, and why.
#include <fmt/format.h>

#include "data/codecs.h"
#include "trtutils/logging.h"

namespace trtutils::data {

namespace fs = std::filesystem;

namespace {

// "a.txt, b.csv" or "a.txt, ..., e.txt and 3 more": the first kImageSkipNamesShown names.
std::string skipped_names(const std::vector<fs::path>& paths) {
  std::string s;
  for (size_t k = 0; k < paths.size() && k < kImageSkipNamesShown; ++k)
    s += (k ? ", " : "") + paths[k].filename().string();
  if (paths.size() > kImageSkipNamesShown)
    s += fmt::format(" and {} more", paths.size() - kImageSkipNamesShown);
  return s;
}

}  // namespace

void warn_image_skips(const ImageDirSkips& skips, const fs::path& dir, int64_t batch_size) {
  if (!skips.not_images.empty())
    TRT_LOG_WARN(
        "skipped {} file(s) in '{}' that are not images (*.jpg, *.jpeg, *.png, *.bmp, *.webp): "
        "{}",
        skips.not_images.size(), dir.string(), skipped_names(skips.not_images));
  if (!skips.subfolders.empty())
    TRT_LOG_WARN("skipped {} subfolder(s) of '{}' (not recursed into: move their images up): {}",
                 skips.subfolders.size(), dir.string(), skipped_names(skips.subfolders));
  if (!skips.hidden.empty())
    TRT_LOG_WARN("skipped {} hidden name(s) in '{}' (starting with '.'): {}", skips.hidden.size(),
                 dir.string(), skipped_names(skips.hidden));
  if (skips.past_max_images > 0)
    TRT_LOG_INFO("skipped the last {} image(s) in '{}': past max_images", skips.past_max_images,
                 dir.string());
  if (skips.partial_batch > 0)
    TRT_LOG_WARN(
        "dropping the last {} image(s) in '{}': they do not fill a batch of {} (keep them with "
        "--keep_partial; Python: keep_partial=True)",
        skips.partial_batch, dir.string(), batch_size);
}

}  // namespace trtutils::data
