#!/usr/bin/env bash
# The whole test suite: unit tests, ONNX's own backend tests, end-to-end comparisons with
# ONNX Runtime on torchvision models. Warnings are errors. Prints ctest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRTUTILS_WERROR=ON
cmake --build build -j"$jobs"
cd build
ctest --output-on-failure -j"$jobs" --timeout 1800 "$@"
