// Image decoders (libjpeg-turbo, libpng, libwebp, and our own BMP reader). Each takes the whole
// file in memory and returns 8-bit pixels; it throws Error(kInvalidArgument) with a message that
// does not name the file (decode_image adds it) on corrupt or truncated data,
// Error(kNotSupported) on valid files it does not handle (animated WebP, RLE BMP, ...),
// Error(kOutOfRange) on images over the limits in image.h. No input can crash a decoder or
// make it print to stdout/stderr: libjpeg and libpng report through longjmp into our code.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/image.h"
#include "trtutils/image_batcher.h"

namespace trtutils::data {

enum class ImageFormat { kUnknown, kJpeg, kPng, kBmp, kWebp };

// From the first bytes of the file (its extension plays no part).
ImageFormat sniff_image_format(std::span<const uint8_t> bytes);

// JPEG: gray -> 1 channel, YCbCr/RGB -> 3, CMYK/YCCK -> 3 (converted). EXIF orientation (1..8,
// 1 if absent or unreadable) goes to *orientation; the pixels are as stored (not yet rotated).
Image decode_jpeg(std::span<const uint8_t> bytes, int* orientation);
// PNG: palette and low bit depths expanded, tRNS -> alpha, 16 bits -> the high byte (as
// OpenCV's imread), no gamma correction. 1, 2, 3 or 4 channels.
Image decode_png(std::span<const uint8_t> bytes);
// WebP (lossy or lossless, still images): 3 channels, or 4 with alpha.
Image decode_webp(std::span<const uint8_t> bytes);
// BMP: 1/4/8-bit paletted (1 channel when the palette is gray), 16/24/32-bit BI_RGB and
// BI_BITFIELDS (4 channels when there is an alpha mask and some pixel is not transparent),
// bottom-up and top-down. RLE and embedded JPEG/PNG are refused with kNotSupported.
Image decode_bmp(std::span<const uint8_t> bytes);

// The orientation tag (0x0112) of an APP1 "Exif\0\0" payload; 1 if absent or malformed.
int exif_orientation(std::span<const uint8_t> app1_payload);
// Applies an EXIF orientation (1..8; other values leave the image as it is).
Image apply_orientation(Image image, int orientation);

// Sniffs, decodes, applies the JPEG orientation. Errors name `name`.
Image decode_image(std::span<const uint8_t> bytes, std::string_view name);
// Reads (files over 1 GiB are refused) and decodes.
Image load_image(const std::filesystem::path& path);

// The file names ImageBatcher takes: *.jpg *.jpeg *.png *.bmp *.webp (any case), not starting
// with '.'.
bool is_image_file_name(const std::string& name);
// The regular files of `dir` with such names (not recursive), in byte order of their names.
// Error(kIO) for a missing or unlistable folder, kInvalidArgument for a file or no images.
std::vector<std::filesystem::path> list_image_files(const std::filesystem::path& dir);

// list_image_files and what it passed over (in name order): files that are not images by their
// extension, hidden names and subfolders (skips.past_max_images / partial_batch stay 0).
struct ImageDirListing {
  std::vector<std::filesystem::path> images;
  ImageDirSkips skips;
};
ImageDirListing list_image_dir(const std::filesystem::path& dir);
// Logs one warning per kind of skip in `skips` (nothing when there is none; past_max_images
// is asked for, so it is an info line); the partial batch's names the flag that keeps it.
void warn_image_skips(const ImageDirSkips& skips, const std::filesystem::path& dir,
                      int64_t batch_size);

}  // namespace trtutils::data
