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
# The same model through the Python package (build/python/trtutils)
PYTHONPATH=build/python /usr/bin/python3 -c "import numpy as np, trtutils; \
from trtutils.builder import build_engine; \
build_engine('examples/tiny_cnn.onnx', 'build/example_out/tiny_cnn.engine', shapes=[('input', (1, 3, 32, 32))]); \
print(trtutils.TRTEngine('build/example_out/tiny_cnn.engine').execute([np.load('examples/tiny_cnn_input.npy')])[0])"
