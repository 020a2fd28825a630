#!/usr/bin/env bash
# Newcomer's first command: install dependencies (Debian 12), build (CLI, library, Python
# package), print the platform (`trtutils info`), then run the main job on the bundled example
# (scripts/example.sh: photos -> generate_calibration -> quantize -> strongly typed build -> run,
# compare (SQNR) and benchmark (speed)), then the same strongly typed build and a run through the
# Python package.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
build/bin/trtutils info
bash scripts/example.sh build build/example_out
# The seed's Python API on the example's Q/DQ model (build/python/trtutils)
PYTHONPATH=build/python /usr/bin/python3 -c "import numpy as np, trtutils; \
from trtutils.builder import build_engine; \
build_engine('build/example_out/tiny_cnn_qdq.onnx', 'build/example_out/tiny_cnn_py.engine', \
             strongly_typed=True, shapes=[('input', (1, 3, 32, 32))]); \
print(trtutils.TRTEngine('build/example_out/tiny_cnn_py.engine').execute([np.load('build/example_out/x.npy')])[0])"
