#!/usr/bin/env bash
# (Re)builds the seed corpora tests/fuzz/corpus/<harness>/ from the repository's fixtures, ONNX's
# backend test data (libonnx-testdata) and a few hand-written inputs. The output is committed
# (about 200 KB), so this only runs when the fixtures change. Needs /usr/bin/python3 with onnx
# for the external-data models.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=tests/fuzz/corpus
rm -rf "$out"
mkdir -p "$out"/{onnx,npy,calibration_cache,image,cli,engine,build,cli_numbers}

# ---- image: the small decoder fixtures (every format and variant; photos are too large) ----
for f in tests/data/images/*.{jpg,png,bmp,webp}; do
  [ "$(stat -c %s "$f")" -le 6000 ] && cp "$f" "$out/image/"
done

# ---- npy: numpy-written fixtures (versions 1-3, endianness, dtypes, Fortran order) ----
cp tests/data/npy/*.npy "$out/npy/"
cp tests/data/images/ref_gray8_bmp.npy tests/data/images/ref_pal1_bmp.npy "$out/npy/"

# ---- onnx: small backend-test models (subgraphs, sequences, strings, quantization...), the
# example CNN, TensorProtos, and models whose initializers are external data (model + marker +
# sidecar, see onnx_fuzz.cpp) ----
data=/usr/include/onnx/backend/test/data
if [ -d "$data" ]; then
  for t in node/test_conv_with_strides_padding node/test_if node/test_loop11 node/test_constant \
    node/test_cast_FLOAT_to_STRING node/test_reshape_extended_dims node/test_gather_0 \
    node/test_resize_upsample_scales_linear node/test_quantizelinear node/test_dequantizelinear \
    node/test_scan9_sum node/test_sequence_insert_at_back node/test_optional_get_element \
    node/test_matmulinteger node/test_constantofshape_int_zeros node/test_if_seq \
    node/test_split_variable_parts_default_axis node/test_strnormalizer_export_monday_casesensintive_lower \
    pytorch-converted/test_Conv2d pytorch-converted/test_BatchNorm2d_eval \
    pytorch-converted/test_Embedding simple/test_sequence_model1 simple/test_expand_shape_model1; do
    cp "$data/$t/model.onnx" "$out/onnx/$(basename "$t").onnx"
  done
  cp "$data/node/test_conv_with_strides_padding/test_data_set_0/input_1.pb" "$out/onnx/tensor_f32.pb"
  cp "$data/node/test_cast_FLOAT_to_STRING/test_data_set_0/output_0.pb" "$out/onnx/tensor_string.pb"
else
  echo "make_corpus.sh: libonnx-testdata not installed; ONNX seeds limited" >&2
fi
cp examples/tiny_cnn.onnx "$out/onnx/"
/usr/bin/python3 - "$out/onnx" <<'EOF'
# The same model twice: one initializer external (w), then both (offsets and lengths set).
import os, sys, tempfile
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

out = sys.argv[1]
marker = b"\n==trtutils-fuzz-sidecar==\n"

def model():
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "w")
    b = numpy_helper.from_array(np.array([1, -2, 3], dtype=np.int64), "b")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Shape", ["y"], ["s"]),
         helper.make_node("Add", ["s", "b"], ["z"])],
        "ext", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
        [helper.make_tensor_value_info("z", TensorProto.INT64, [2])], [w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m

for i, all_external in enumerate([False, True]):
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "model.onnx")
        onnx.save_model(model(), p, save_as_external_data=True,
                        all_tensors_to_one_file=True, location="model.onnx.data",
                        size_threshold=0 if all_external else 70)  # getsizeof: +33
        blob = open(p, "rb").read() + marker + open(p + ".data", "rb").read()
    open(os.path.join(out, f"external_data_{i}.onnx"), "wb").write(blob)
EOF

# ---- engine: engines written by `trtutils build` (TRTUTILS_CLI, default build/bin/trtutils) from
# the example CNN (for the CPU and for the GPU) and single-op backend models (weights,
# int8/int32/fp16 layers, no layers) ----
mkdir -p "$out/engine"
cli=${TRTUTILS_CLI:-build/bin/trtutils}
if [ -x "$cli" ]; then
  "$cli" build --onnx examples/tiny_cnn.onnx --output "$out/engine/tiny_cnn.engine" >/dev/null
  # A GPU engine (format 2: its GPU plan in a second graph section), built without the GPU.
  "$cli" build --onnx examples/tiny_cnn.onnx --output "$out/engine/tiny_cnn_cuda.engine" \
    --backend cuda --target_sm 90 >/dev/null
  for t in test_gather_0 test_quantizelinear test_dequantizelinear test_matmulinteger \
    test_conv_with_strides_padding test_constant test_cast_FLOAT_to_FLOAT16 \
    test_resize_upsample_scales_linear; do
    [ -f "$data/node/$t/model.onnx" ] &&
      "$cli" build --onnx "$data/node/$t/model.onnx" --output "$out/engine/$t.engine" >/dev/null
  done
else
  echo "make_corpus.sh: no CLI at $cli (set TRTUTILS_CLI): no engine seeds" >&2
fi

# ---- calibration_cache: TensorRT-style caches and the variants the reader tolerates/refuses ----
c=$out/calibration_cache
printf 'TRT-8601-EntropyCalibration2\nimages: 3c010a14\n/model.0/conv/Conv_output_0: 3d8a8ed6\n(Unnamed Layer* 8) [Constant]_output: 39137939\noutput0: 40b7daf4\n' >"$c/trt8.cache"
printf 'TRT-100300-MinMaxCalibration\r\ninput: 3C010A14\r\n\r\nname:with:colons: 3f800000  \r\nshort: 3c\r\nlast: 40000000' >"$c/crlf_short_hex.cache"
printf 'TRT-7000-LegacyCalibration\ndata: 3c008912\nconv1: 3c88edfc\n' >"$c/legacy.cache"
printf 'TRT-8XXX-EntropyCalibration\na: 7f7fffff\nb: 00000001\n' >"$c/extremes.cache"
printf 'TRT-8601-EntropyCalibration2\nx: 7f800000\n' >"$c/bad_inf.cache"
printf 'TRT-8601-EntropyCalibration2\nx: 1\nx: 2\n' >"$c/bad_duplicate.cache"
printf 'TRT-8601-KLCalibration\nx 3c010a14\n' >"$c/bad_header.cache"

# ---- cli: argument lists, one per line here, '\0'-separated in the seed ----
a=$out/cli
args() { printf '%s\n' "${@:2}" | head -c -1 | tr '\n' '\0' >"$a/$1"; }
args run run --onnx model.onnx --input x=in.npy --output_dir out --seed 7 --threads 2 --reference
args benchmark benchmark --onnx m.onnx --iterations 100 --warmup 0 --json t.json --profile
args info -vv info --json
args generate_calibration generate_calibration --calibration_dir imgs --input_shape 224 224 3 \
  --output c.npy --input_scale -1 1 --mean 0.485 0.456 0.406 --max_images 10 --keep_partial
args quantize quantize --onnx m.onnx --output q.onnx --calibration_data c.npy --quantize_mode int4 \
  --calibration_method percentile --percentile 99.99 --nodes_to_exclude 'conv.*' --min_sqnr 30
args build build --onnx m.onnx --output m.engine --int8 --fp16 --calibration_cache m.cache \
  --layer_precision 'conv1:fp32' --shape x:1,3,224,224 --min_shapes x:1,3,8,8 --workspace 512 \
  --optimization_level 3 --backend cpu
args inspect inspect --engine m.engine --json
args version --version
args help -q run --help

# ---- build: the onnx seeds that are models, and the bad corpus's invalid graphs ----
cp "$out"/onnx/*.onnx "$out/build/"
for f in tests/data/bad/onnx_*.onnx; do cp "$f" "$out/build/"; done

# ---- cli_numbers: a flag index byte, a form byte (odd: --flag=value), then the value ----
n=$out/cli_numbers
i=0
for v in 0 1 -1 65536 2000000000 1e9 0x10 3.5 -0 nan inf 18446744073709551616 99999999999; do
  printf "\\x$(printf %02x $((i * 7 % 256)))\\x$((i % 2))%s" "$v" >"$n/seed_$i"
  i=$((i + 1))
done

# ---- every harness: the inputs it once failed on (tests/data/bad/<harness>_fuzz_*) ----
for d in "$out"/*; do
  h=$(basename "$d")
  for f in tests/data/bad/"${h}"_fuzz_*; do [ -f "$f" ] && cp "$f" "$d/"; done
done

du -sh "$out"
for d in "$out"/*; do echo "$(basename "$d"): $(ls "$d" | wc -l) files"; done
