#!/usr/bin/env bash
# The main job on the bundled example: the seed's whole pipeline on the tiny CNN
# (examples/tiny_cnn.onnx, input 'input' [N, 3, 32, 32]) and the four bundled photos
# (tests/data/images/photo_*):
#   generate_calibration (photos -> calib.npy) -> quantize (int8 Q/DQ ONNX, SQNR report)
#   -> build --strongly_typed (engine) -> run (one photo as x.npy) -> compare (SQNR of the engine
#   against the float model on that photo) -> benchmark (latency, images/s).
# Everything lands in OUT_DIR. Takes a few seconds once the CLI is built.
# Usage: bash scripts/example.sh [BUILD_DIR [OUT_DIR]]   (defaults: build, BUILD_DIR/example_out)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-$build/example_out}
cli=$build/bin/trtutils
photos=tests/data/images
rm -rf "$out"
mkdir -p "$out/photos" "$out/photo"
cp "$photos"/photo_astronaut.png "$photos"/photo_chelsea.png "$photos"/photo_coffee.png \
  "$photos"/photo_hubble.jpg "$out/photos/"
cp "$photos"/photo_chelsea.png "$out/photo/"
# The model's preprocessing, shared by the calibration data and x.npy.
pre=(--input_shape 32 32 3 --input_dtype float32 --data_order NCHW --resize_method linear)
step() { echo "[example] $*"; }

step "1. calibration data from 4 photos"
"$cli" generate_calibration --calibration_dir "$out/photos" "${pre[@]}" --batch_size 2 \
  --output "$out/calib.npy"
step "2. int8 post-training quantization (SQNR per output on the calibration data)"
"$cli" quantize --onnx examples/tiny_cnn.onnx --output "$out/tiny_cnn_qdq.onnx" \
  --calibration_data "$out/calib.npy" --quantize_mode int8 --calibration_method max
step "3. strongly typed engine (precision from the Q/DQ graph)"
"$cli" build --onnx "$out/tiny_cnn_qdq.onnx" --output "$out/tiny_cnn.engine" --strongly_typed \
  --shape input:1,3,32,32
step "4. one photo as x.npy (the calibration preprocessing, a batch of 1), run"
"$cli" generate_calibration --calibration_dir "$out/photo" "${pre[@]}" --batch_size 1 \
  --output "$out/x.npy"
"$cli" run --engine "$out/tiny_cnn.engine" --input input="$out/x.npy" --output_dir "$out/run"
step "5. the engine against the float model on that photo (SQNR)"
"$cli" compare examples/tiny_cnn.onnx "$out/tiny_cnn.engine" --input input="$out/x.npy" \
  --atol 0.05 --rtol 1
step "6. speed"
"$cli" benchmark --engine "$out/tiny_cnn.engine" --iterations 50 --warmup_iterations 5
step "done: outputs in $out"
