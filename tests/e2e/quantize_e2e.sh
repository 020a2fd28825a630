#!/usr/bin/env bash
# End-to-end check of `trtutils quantize`: every Q/DQ model it writes must run in ONNX Runtime
# (onnxruntime-node, graph optimization level basic), ORT and our CPU backend must agree on it,
# and the Q/DQ model must stay close to the float one (SQNR measured by ORT).
#
#   tests/e2e/quantize_e2e.sh [MODEL ...]   (default: tiny_cnn mobilenet_v2; also resnet50,
#                                            efficientnet_b0, vit_b_16 from export_models.py)
#
# Calibration: 64 random crops of real photos (quantize_calib_photos.py: the 68 photographs of
# Debian's python3-skimage and opencv-doc that scripts/fetch_photos.sh unpacks, run by
# scripts/install_deps.sh; offline, the four in tests/data/images), 8 more held out for the
# report; evaluation input: 4 other crops. With the 68 photos (session 17): ResNet-50 int8 40.5,
# fp8 31.4; EfficientNet-B0 51.3, 36.0; MobileNetV2 44.7, 36.0; ViT-B/16 29.6, 23.9 dB.
# Modes: int8 entropy, fp8 max, int4 rtn (weight-only; skipped when the model has no MatMul/Gemm
# weight of K >= 128), and int8h: int8 entropy with --high_precision_dtype fp16 (the rest of the
# graph in float16, nvidia-modelopt's default). ORT's WeightBiasQuantization (level basic and
# above) quantizes a float bias of a Conv / Gemm with dequantized inputs to int32 in the bias's
# type, which overflows float16 (MobileNetV2 int8h: 5.9 dB against ORT's float output, 47.0 dB
# with optimizations disabled); `quantize` therefore writes such a bias as an Add after the layer
# (src/quantize/fp16.cpp), and ORT at level basic (47.0 dB) is the judge here as for the other
# modes. ORT runs such a graph node by node in
# float16 while our fused layers compute in float32, so rounding flips spread through deep models
# (ResNet-50: ours vs ORT 39.2 dB); there `agree` also accepts our output being at least as
# close to the float model as ORT's (within 0.5 dB:
# ResNet-50 40.72 vs 40.55 dB, ViT-B/16 29.74 vs 29.66 dB).
#
# Checks per (model, mode), on each evaluation image:
#   agree:  max|ours - ort| <= max|ort| / 127 (one int8 step of the output's range), or, for
#           deep models, the ours-vs-ORT error at least 6 dB below the quantization error, or
#           no more than 3 dB above ORT's own disagreement between optimization levels basic
#           and disabled (ResNet-50 int8: ORT vs itself 37.6 dB, ours vs ORT 37.9 dB). Both
#           runtimes compute each layer in fp32 with a different summation order (~1e-5
#           relative); a value that lands on a rounding boundary flips by one step in one of
#           them, and the flips spread through 50 quantized layers (measured on ResNet-50:
#           0.04% of the first Conv's int8 outputs differ, all by 1).
#   sqnr:   SQNR(ort float, ort Q/DQ) >= int8 20 dB, fp8 25 dB (ViT-B/16: 23),
#           int4 15 dB (tiny_cnn: 15 / 20 / 15 dB).
#   engine: (int8, fp8) `trtutils build --strongly_typed` on the Q/DQ model: inspect shows
#           quantized layers (com.trtutils::Q* at the mode's precision) where the Q/DQ were, and
#           `run --engine` agrees with ORT by the same rule as `agree`.
# Weakly typed INT8 per model: `build --int8 --calibration_data` writes a TensorRT calibration
# cache; `build --int8 --calibration_cache` alone gives the same layer precisions; the engine's
# output SQNR against ORT's float output >= 20 dB (tiny_cnn: 15).
# Environment: TRTUTILS_BIN, TRTUTILS_MODEL_CACHE, TRTUTILS_E2E_WORK as for run_e2e.sh.
# Exit 0 all passed, 1 a check failed, 77 skipped (no node / ORT / numpy+PIL / models).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY=/usr/bin/python3
TRTUTILS_BIN="${TRTUTILS_BIN:-$ROOT/build/bin/trtutils}"
CACHE="${TRTUTILS_MODEL_CACHE:-$HOME/.cache/trtutils/models}"

skip() { echo "quantize_e2e.sh: SKIP: $*"; exit 77; }
die() { echo "quantize_e2e.sh: ERROR: $*" >&2; exit 2; }

[[ -x "$TRTUTILS_BIN" ]] || die "trtutils CLI not found at $TRTUTILS_BIN (set TRTUTILS_BIN)"
"$PY" -c 'import numpy, PIL' 2>/dev/null || skip "$PY lacks numpy/PIL"
command -v node >/dev/null || skip "node not found"
if [[ ! -d "$HERE/node_modules/onnxruntime-node" ]]; then  # installed as run_e2e.sh does
  command -v npm >/dev/null || skip "npm not found (needed to install onnxruntime-node)"
  (cd "$HERE" && npm ci --no-audit --no-fund) >&2 || skip "npm ci failed (offline?)"
fi
(cd "$HERE" && node -e "require('onnxruntime-node')") >/dev/null 2>&1 \
  || skip "onnxruntime-node does not load from $HERE/node_modules"

MODELS=("$@")
[[ ${#MODELS[@]} -gt 0 ]] || MODELS=(tiny_cnn mobilenet_v2)
WORK="${TRTUTILS_E2E_WORK:-$(mktemp -d -t trtutils_qe2e.XXXXXX)}"
mkdir -p "$WORK"

failed=()
summary=()
for m in "${MODELS[@]}"; do
  if [[ "$m" == tiny_cnn ]]; then
    model="$ROOT/examples/tiny_cnn.onnx"
    size=32
    th_int8=15 th_fp8=20 th_int4=15
  else
    model="$CACHE/$m.onnx"
    if [[ ! -f "$model" ]]; then
      "$PY" -c 'import torch, torchvision' 2>/dev/null || skip "no $model and no torch to export it"
      "$PY" "$HERE/export_models.py" --cache "$CACHE" "$m" 2> >(grep -v -i warning >&2) \
        || die "export of $m failed"
    fi
    size=224
    th_int8=20 th_fp8=25 th_int4=15
    # ResNet-50 fp8: 30.3 dB (27.7 dB with its single-row fc Gemm in fp8; 22.2 dB without bias
    # correction: the weights' rounding error has a per-channel mean that global pooling keeps;
    # quantize removes it from the biases).
    # ViT-B/16 fp8: 24.3 dB with GPTQ weight rounding (the default with calibration data) and
    # the single-row head Gemm left in float; 20.9 dB with round to nearest. The floor is the
    # 96 fp8 activation tensors in series (~31.6 dB each, random errors): activations alone gave
    # 23.6 dB. int4: 27.1 dB with GPTQ (13.3 dB round to nearest, 49 4-bit matrices in series).
    # Per class of layers left in float (these 4 images / mean of 20): none 24.3/23.9, QKV
    # 24.1/24.2, Q.K^T 24.4/24.1, attention.V 24.5/24.1, both BMMs (modelopt's MHA rule)
    # 24.0/23.9, out-proj 25.4/25.2, fc1 26.1/26.0, fc2 26.4/25.8. The random-weight model's
    # attention is near uniform (softmax entropy 5.18 of 5.28 max) and averages the per-token
    # fp8 noise of Q/K/V away; only the residual-stream GEMMs matter, and leaving them in float
    # is no default. Activation calibration: max 24.3, mse 24.6, entropy 24.0, percentile 23.9.
    # bench/fp8_floor.py (PyTorch simulation, session 19): with every weight in float, the FP8
    # activations alone give 23.3 dB on 16 crops (24.3 on these 4), and 23.8 with only the 36
    # residual-stream GEMM inputs in FP8: no weight rounding or calibration reaches 25 dB.
    [[ "$m" == vit_b_16 ]] && th_fp8=23
  fi
  dir="$WORK/$m"
  mkdir -p "$dir"
  "$PY" "$HERE/quantize_calib_photos.py" "$dir/calib.npy" --count 72 --size $size --seed 0 >/dev/null \
    || die "calibration data for $m"
  "$PY" "$HERE/quantize_calib_photos.py" "$dir/eval.npy" --count 4 --size $size --seed 1 >/dev/null \
    || die "evaluation data for $m"
  input=$("$PY" -c "import onnx,sys; m=onnx.load(sys.argv[1], load_external_data=False); \
init={i.name for i in m.graph.initializer}; print([i.name for i in m.graph.input if i.name not in init][0])" "$model")
  "$PY" - "$dir" <<'EOF'
import sys, numpy as np
d = sys.argv[1]
e = np.load(f"{d}/eval.npy")
for i in range(len(e)):
    np.save(f"{d}/x{i}.npy", e[i:i + 1])
EOF
  for i in 0 1 2 3; do
    node "$HERE/ort_run.mjs" "$model" "$dir/float_$i" "$input=$dir/x$i.npy" --opt basic \
      || die "ORT cannot run the float $m"
  done
  for spec in "int8 entropy $th_int8" "fp8 max $th_fp8" "int4 rtn $th_int4" "int8h entropy $th_int8"; do
    read -r mode method th <<<"$spec"
    q="$dir/${m}_${mode}.onnx"
    log="$dir/${mode}.log"
    hp=fp32
    [[ "$mode" == *h ]] && hp=fp16
    if ! "$TRTUTILS_BIN" quantize --onnx "$model" --output "$q" --calibration_data "$dir/calib.npy" \
        --quantize_mode "${mode%h}" --high_precision_dtype "$hp" --calibration_method "$method" \
        --eval_batches 8 >"$log" 2>&1; then
      echo "FAIL $m $mode: quantize failed"; cat "$log"; failed+=("$m/$mode"); continue
    fi
    if grep -q "^quantized 0 node" "$log"; then
      summary+=("$(printf '%-16s %-5s nothing to quantize (skipped)' "$m" "$mode")"); continue
    fi
    ok=1
    for i in 0 1 2 3; do
      node "$HERE/ort_run.mjs" "$q" "$dir/ort_${mode}_$i" "$input=$dir/x$i.npy" --opt basic \
        >"$dir/ort_${mode}_$i.log" 2>&1 || { echo "FAIL $m $mode: ORT rejects the Q/DQ model"; \
        cat "$dir/ort_${mode}_$i.log"; ok=0; break; }
      node "$HERE/ort_run.mjs" "$q" "$dir/ortdis_${mode}_$i" "$input=$dir/x$i.npy" --opt disabled \
        >/dev/null 2>&1 || { echo "FAIL $m $mode: ORT (disabled) rejects the Q/DQ model"; ok=0; break; }
      "$TRTUTILS_BIN" run --onnx "$q" --input "$input=$dir/x$i.npy" --output_dir "$dir/ours_${mode}_$i" \
        >/dev/null || { echo "FAIL $m $mode: trtutils run"; ok=0; break; }
    done
    if [[ $ok == 1 && "$mode" != int4 ]]; then  # the strongly-typed engine of the Q/DQ model
      e="$dir/${m}_${mode}.engine"
      if ! "$TRTUTILS_BIN" build --onnx "$q" --output "$e" --strongly_typed >"$dir/build_${mode}.log" 2>&1; then
        echo "FAIL $m $mode: strongly-typed build"; cat "$dir/build_${mode}.log"; ok=0
      else
        "$TRTUTILS_BIN" inspect --engine "$e" --json >"$dir/inspect_${mode}.json" || ok=0
        nq=$("$PY" -c "import json,sys; j=json.load(open(sys.argv[1])); \
print(sum(1 for l in j['layers'] if l['op'].startswith('com.trtutils::Q') and l['precision']==sys.argv[2]))" \
          "$dir/inspect_${mode}.json" "${mode%h}")
        echo "$m $mode: engine has $nq quantized layer(s) at ${mode%h}"
        [[ "$nq" -gt 0 ]] || { echo "FAIL $m $mode: no ${mode%h} layer in the engine"; ok=0; }
        for i in 0 1 2 3; do
          "$TRTUTILS_BIN" run --engine "$e" --input "$input=$dir/x$i.npy" --output_dir "$dir/eng_${mode}_$i" \
            >/dev/null || { echo "FAIL $m $mode: trtutils run --engine"; ok=0; break; }
        done
      fi
    fi
    if [[ $ok == 1 ]]; then
      res=$("$PY" - "$dir" "$mode" "$th" <<'EOF'
import glob, os, sys, numpy as np
d, mode, th = sys.argv[1], sys.argv[2], float(sys.argv[3])
sig = noise = agree_noise = self_noise = eng_noise = ours_float = eng_float = 0.0
worst_agree = worst_eng = 0.0
has_eng = os.path.isdir(f"{d}/eng_{mode}_0")
for i in range(4):
    for f in sorted(glob.glob(f"{d}/float_{i}/*.npy")):
        name = os.path.basename(f)
        ref = np.load(f).astype(np.float64)
        ort = np.load(f"{d}/ort_{mode}_{i}/{name}").astype(np.float64)
        ours = np.load(f"{d}/ours_{mode}_{i}/{name}").astype(np.float64)
        sig += (ref ** 2).sum(); noise += ((ref - ort) ** 2).sum()
        agree_noise += ((ours - ort) ** 2).sum()
        ours_float += ((ours - ref) ** 2).sum()
        dis = np.load(f"{d}/ortdis_{mode}_{i}/{name}").astype(np.float64)
        self_noise += ((dis - ort) ** 2).sum()
        step = np.abs(ort).max() / 127
        worst_agree = max(worst_agree, np.abs(ours - ort).max() / step)
        if has_eng:
            eng = np.load(f"{d}/eng_{mode}_{i}/{name}").astype(np.float64)
            eng_noise += ((eng - ort) ** 2).sum()
            eng_float += ((eng - ref) ** 2).sum()
            worst_eng = max(worst_eng, np.abs(eng - ort).max() / step)
db = lambda n: 10 * np.log10(sig / n) if n > 0 else float("inf")
sqnr, agree, self_agree = db(noise), db(agree_noise), db(self_noise)
agrees = lambda worst, a: worst <= 1.0 or a >= sqnr + 6 or a >= self_agree - 3
# float16 graphs (int8h): or at least as close to the float model as ORT (see the header)
as_good = lambda n: mode.endswith("h") and db(n) >= sqnr - 0.5
ok = sqnr >= th and (agrees(worst_agree, agree) or as_good(ours_float))
eng = ""
if has_eng:
    ok = ok and (agrees(worst_eng, db(eng_noise)) or as_good(eng_float))
    eng = f" engine_vs_ort: {worst_eng:.2f} step(s), {db(eng_noise):.1f}dB"
vs_float = f" ours_vs_float: {db(ours_float):.2f}dB" if mode.endswith("h") else ""
print(f"{'PASS' if ok else 'FAIL'} sqnr_ort={sqnr:.2f}dB (>= {th:g}) ours_vs_ort: "
      f"{worst_agree:.2f} step(s), {agree:.1f}dB (ORT basic vs disabled: {self_agree:.1f}dB){eng}"
      f"{vs_float}")
EOF
)
      echo "$m $mode: $res"
      summary+=("$(printf '%-16s %-5s %s' "$m" "$mode" "$res")")
      [[ "$res" == PASS* ]] || failed+=("$m/$mode")
    else
      failed+=("$m/$mode")
    fi
  done
  # Weakly typed INT8: calibrate while building, then rebuild from the cache alone.
  th_weak=20; [[ "$m" == tiny_cnn ]] && th_weak=15
  wa="$dir/${m}_weak_a.engine" wb="$dir/${m}_weak_b.engine" cache="$dir/${m}.cache"
  if "$TRTUTILS_BIN" build --onnx "$model" --output "$wa" --int8 --calibration_data "$dir/calib.npy" \
        --calibration_cache "$cache" >"$dir/weak_a.log" 2>&1 \
     && "$TRTUTILS_BIN" build --onnx "$model" --output "$wb" --int8 --calibration_cache "$cache" \
        >"$dir/weak_b.log" 2>&1; then
    "$TRTUTILS_BIN" inspect --engine "$wa" --json >"$dir/weak_a.json"
    "$TRTUTILS_BIN" inspect --engine "$wb" --json >"$dir/weak_b.json"
    okw=1
    for i in 0 1 2 3; do
      "$TRTUTILS_BIN" run --engine "$wb" --input "$input=$dir/x$i.npy" --output_dir "$dir/weak_$i" \
        >/dev/null || { okw=0; break; }
    done
    res=$("$PY" - "$dir" "$cache" "$th_weak" "$okw" <<'EOF'
import glob, json, os, sys, numpy as np
d, cache, th, okw = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "1"
a = json.load(open(f"{d}/weak_a.json")); b = json.load(open(f"{d}/weak_b.json"))
same = [(l["name"], l["precision"]) for l in a["layers"]] == [(l["name"], l["precision"]) for l in b["layers"]]
n8 = sum(1 for l in b["layers"] if l["precision"] == "int8" and l["op"].startswith("com.trtutils::Q"))
head = open(cache).readline().strip()
sig = noise = 0.0
if okw:
    for i in range(4):
        for f in sorted(glob.glob(f"{d}/float_{i}/*.npy")):
            ref = np.load(f).astype(np.float64)
            got = np.load(f"{d}/weak_{i}/{os.path.basename(f)}").astype(np.float64)
            sig += (ref ** 2).sum(); noise += ((ref - got) ** 2).sum()
sq = 10 * np.log10(sig / noise) if noise > 0 else float("inf")
ok = okw and same and n8 > 0 and head.startswith("TRT-") and sq >= th
print(f"{'PASS' if ok else 'FAIL'} cache '{head}', rebuilt from the cache: "
      f"{'same' if same else 'DIFFERENT'} precisions, {n8} int8 layers, sqnr_vs_float={sq:.2f}dB (>= {th:g})")
EOF
)
  else
    res="FAIL weakly-typed int8 build: $(tail -n 3 "$dir"/weak_*.log | tr '\n' ' ')"
  fi
  echo "$m weak-int8: $res"
  summary+=("$(printf '%-16s %-5s %s' "$m" "weak" "$res")")
  [[ "$res" == PASS* ]] || failed+=("$m/weak-int8")
done

echo "---- quantize e2e summary ----"
printf '%s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "failed: ${failed[*]} (work dir kept: $WORK)"
  exit 1
fi
[[ -z "${TRTUTILS_E2E_WORK:-}" ]] && rm -rf "$WORK"
exit 0
