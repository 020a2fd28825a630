#!/usr/bin/env bash
# Newcomer's first command: install dependencies (Debian 12), build, and run the main job on the
# bundled example model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
build/bin/trtutils info
mkdir -p build/example_out
build/bin/trtutils run --onnx examples/tiny_cnn.onnx --input input=examples/tiny_cnn_input.npy \
  --output_dir build/example_out
