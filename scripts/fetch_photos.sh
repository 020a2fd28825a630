#!/usr/bin/env bash
# Real photos for calibration data and the quantization tests, from two Debian 12 packages that
# are downloaded and unpacked, not installed (`apt-get download` + `dpkg -x`; Debian's slim
# images drop /usr/share/doc, where opencv-doc keeps its images): scikit-image's sample photos
# (python3-skimage) and OpenCV's sample images (opencv-doc). Only photographs are kept (no
# renders, masks, logos, charts or synthetic patterns): 68 files, listed below.
#   bash scripts/fetch_photos.sh            -> ${TRTUTILS_PHOTO_CACHE:-~/.cache/trtutils/photos}
# Idempotent; ~120 MB downloaded once. Exit 0 with a message when the packages cannot be
# downloaded (offline): tests/e2e/quantize_calib_photos.py then falls back to the four photos in
# tests/data/images.
set -uo pipefail
dest="${TRTUTILS_PHOTO_CACHE:-$HOME/.cache/trtutils/photos}"
if [ -f "$dest/.complete" ]; then
  echo "photos: $(find "$dest" -type f ! -name .complete | wc -l) in $dest"
  exit 0
fi
skimage_photos=(astronaut.png chelsea.png coffee.png rocket.jpg motorcycle_left.png
  motorcycle_right.png hubble_deep_field.jpg retina.jpg ihc.png camera.png moon.png coins.png
  brick.png grass.png gravel.png cell.png clock_motion.png page.png)
opencv_photos=(data/aero1.jpg data/aero3.jpg data/aloeL.jpg data/aloeR.jpg data/apple.jpg
  data/baboon.jpg data/basketball1.png data/board.jpg data/box_in_scene.png data/building.jpg
  data/butterfly.jpg data/chicky_512.png data/ela_original.jpg data/fruits.jpg data/graf1.png
  data/graf3.png data/home.jpg data/left.jpg data/left01.jpg data/leuvenA.jpg data/leuvenB.jpg
  data/licenseplate_motion.jpg data/messi5.jpg data/orange.jpg data/pca_test1.jpg data/pic2.png
  data/right.jpg data/right01.jpg data/rubberwhale1.png data/rubberwhale2.png data/smarties.png
  data/squirrel_cls.jpg data/starry_night.jpg data/stuff.jpg data/sudoku.png hfs/data/000.jpg
  hfs/data/001.jpg hfs/data/002.jpg text/scenetext01.jpg text/scenetext02.jpg
  text/scenetext03.jpg text/scenetext04.jpg text/scenetext05.jpg text/scenetext06.jpg
  text/scenetext_segmented_word01.jpg text/scenetext_segmented_word02.jpg
  text/scenetext_segmented_word03.jpg text/scenetext_segmented_word04.jpg
  alphamat/input_images/plant.jpg fuzzy/input.png)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
download() { (cd "$tmp" && apt-get download -qq python3-skimage opencv-doc) >/dev/null 2>&1; }
if ! download; then
  # No package lists yet (a fresh image): refresh them where we may.
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq >/dev/null 2>&1
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo apt-get update -qq >/dev/null 2>&1
  fi
  if ! download; then
    echo "fetch_photos.sh: could not download python3-skimage / opencv-doc (offline?); the" \
      "quantization tests use the four photos in tests/data/images" >&2
    exit 0
  fi
fi
for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$tmp/x"; done
sk=$(find "$tmp/x" -type d -path '*/skimage/data' | head -1)
cv="$tmp/x/usr/share/doc/opencv-doc/examples"
mkdir -p "$dest/skimage" "$dest/opencv"
missing=0
for p in "${skimage_photos[@]}"; do
  if [ -n "$sk" ] && [ -f "$sk/$p" ]; then cp "$sk/$p" "$dest/skimage/$p"; else missing=$((missing + 1)); fi
done
for p in "${opencv_photos[@]}"; do
  if [ -f "$cv/$p" ]; then cp "$cv/$p" "$dest/opencv/${p//\//_}"; else missing=$((missing + 1)); fi
done
got=$(find "$dest" -type f ! -name .complete | wc -l)
# Marked complete (not fetched again) only with enough photos to draw from.
[ "$got" -ge 4 ] && touch "$dest/.complete"
echo "photos: $got in $dest ($missing of the list not found)"
