#!/usr/bin/env bash
# Installs every build, test and benchmark dependency from Debian 12. Idempotent: packages
# already present are skipped by apt-get; run as root (or with sudo).
set -euo pipefail

pkgs=(
  # toolchain
  build-essential cmake ninja-build pkg-config git clang-format
  # compiler cache: CMakeLists.txt puts it in front of the compilers when found (TRTUTILS_CCACHE)
  ccache
  # ONNX model I/O: protobuf runtime + compiler, Debian's ONNX (generated onnx.pb classes)
  libprotobuf-dev protobuf-compiler libonnx-dev
  # fast CPU convolution / GEMM
  libdnnl-dev
  # CLI parsing, formatting/logging, JSON reports
  libcli11-dev libfmt-dev libspdlog-dev nlohmann-json3-dev
  # unit tests and micro benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # independent oracles: ONNX's backend test data, PyTorch/torchvision exporters
  libonnx-testdata python3-torch python3-torchvision python3-numpy python3-onnx
  # the Python package (python/): bindings and their pytest suite
  pybind11-dev python3-dev python3-pytest
  # image decoding for calibration data; Pillow writes the photos of bench/calibration_bench.sh
  libjpeg62-turbo-dev libpng-dev libwebp-dev python3-pil
  # fuzzing (tests/fuzz): clang with libFuzzer + sanitizer runtimes, and its OpenMP runtime
  clang-14 libclang-rt-14-dev libomp-14-dev
)
# ONNX Runtime comes from npm (onnxruntime-node) and needs Node.js + npm; keep a newer one if present
command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "dependencies: all ${#pkgs[@]} Debian packages present"
# Real photos for calibration and the quantization tests (python3-skimage and opencv-doc,
# downloaded and unpacked into a cache, not installed); offline, the tests fall back to the four
# bundled photos.
bash "$(dirname "$0")/fetch_photos.sh" || true
