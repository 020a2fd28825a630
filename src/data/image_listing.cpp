// Listing an image directory: the images ImageBatcher takes and what it passes over, so that
// nothing is left out silently.
#include <algorithm>
#include <cctype>

#include "core/check.h"
#include "data/codecs.h"

namespace trtutils::data {

namespace fs = std::filesystem;

namespace {

bool has_image_extension(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = name.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == "jpg" || ext == "jpeg" || ext == "png" || ext == "bmp" || ext == "webp";
}

// Byte order of the names: the same on every machine and locale.
void sort_by_name(std::vector<fs::path>& paths) {
  std::sort(paths.begin(), paths.end(), [](const fs::path& a, const fs::path& b) {
    return a.filename().string() < b.filename().string();
  });
}

void check_listing(const std::error_code& ec, const fs::path& dir) {
  TRT_CHECK(!ec, ErrorCode::kIO, "cannot list image directory '{}': {}", dir.string(),
            ec.message());
}

// Files one entry into `listing`: an image, or the reason it is passed over.
void sort_entry(const fs::directory_entry& entry, ImageDirListing& listing) {
  const std::string name = entry.path().filename().string();
  std::error_code ec;
  if (!name.empty() && name[0] == '.')
    listing.skips.hidden.push_back(entry.path());
  else if (entry.is_directory(ec))
    listing.skips.subfolders.push_back(entry.path());
  else if (has_image_extension(name) && entry.is_regular_file(ec))
    listing.images.push_back(entry.path());
  else
    listing.skips.not_images.push_back(entry.path());
}

}  // namespace

bool is_image_file_name(const std::string& name) {
  return !name.empty() && name[0] != '.' && has_image_extension(name);
}

ImageDirListing list_image_dir(const fs::path& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  TRT_CHECK(fs::exists(st), ErrorCode::kIO, "image directory '{}' does not exist", dir.string());
  TRT_CHECK_ARG(fs::is_directory(st), "'{}' is a file, not a directory of images", dir.string());
  ImageDirListing listing;
  fs::directory_iterator it(dir, ec);
  check_listing(ec, dir);
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    check_listing(ec, dir);
    sort_entry(*it, listing);
  }
  check_listing(ec, dir);
  for (auto* v : {&listing.images, &listing.skips.not_images, &listing.skips.hidden,
                  &listing.skips.subfolders})
    sort_by_name(*v);
  TRT_CHECK_ARG(!listing.images.empty(), "no images (*.jpg, *.jpeg, *.png, *.bmp, *.webp) in '{}'",
                dir.string());
  return listing;
}

std::vector<fs::path> list_image_files(const fs::path& dir) {
  return list_image_dir(dir).images;
}

}  // namespace trtutils::data
