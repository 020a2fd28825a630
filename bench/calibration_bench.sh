#!/usr/bin/env bash
# generate_calibration throughput: N photos (default 1,000 JPEGs, 320..800 px, crops of real
# photos) -> 224x224x3 float32 NCHW letterbox .npy, on 2 cores, against a straightforward
# single-threaded decode+resize loop over the same decoders (bench/calibration_baseline.cpp).
# Prints images/s of both (files already in the page cache, .npy write included; best and
# median of R interleaved runs), CPU time and peak RSS, and checks that the outputs agree.
#
#   bench/calibration_bench.sh [--images N] [--cores LIST] [--size S] [--keep DIR] [--out-dir DIR]
#                              [--repeat R]
#
# The float32 output is 600 MB for 1,000 images: on a slow disk writing it dominates; pass
# --out-dir /dev/shm to measure the decoding and resizing rather than the disk. On a machine
# shared with other work, `chrt -f 10 bench/calibration_bench.sh ...` (root) keeps that work off
# the measured cores.
# Environment: TRTUTILS_BUILD (default build): its bin/trtutils and bin/calibration_baseline
# (CALIBRATION_BASELINE overrides; built here from bench/calibration_baseline.cpp against the
# build's libtrtutils.a when missing).
# Photos need /usr/bin/python3 with Pillow (python3-pil); python3-skimage gives more sources.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BUILD="${TRTUTILS_BUILD:-$ROOT/build}"
N=1000
CORES=0,1
SIZE=224
KEEP=""
OUT_DIR=""
REPEAT=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --images) N="$2"; shift 2 ;;
    --cores) CORES="$2"; shift 2 ;;
    --size) SIZE="$2"; shift 2 ;;
    --keep) KEEP="$2"; shift 2 ;;
    --out-dir) OUT_DIR="$2"; shift 2 ;;
    --repeat) REPEAT="$2"; shift 2 ;;
    *) echo "usage: $0 [--images N] [--cores LIST] [--size S] [--keep DIR] [--out-dir DIR] [--repeat R]" >&2; exit 2 ;;
  esac
done

TRTUTILS="$BUILD/bin/trtutils"
BASELINE="${CALIBRATION_BASELINE:-$BUILD/bin/calibration_baseline}"
[[ -x "$TRTUTILS" ]] || { echo "missing $TRTUTILS: build the trtutils_cli target" >&2; exit 1; }
if [[ ! -x "$BASELINE" ]]; then
  BASELINE="$(mktemp -d)/calibration_baseline"
  c++ -O3 -DNDEBUG -std=c++20 -I"$ROOT/include" -I"$ROOT/src" "$HERE/calibration_baseline.cpp" \
    "$BUILD/libtrtutils.a" -lfmt -ljpeg -lpng -lwebp -lpthread -o "$BASELINE"
fi

WORK="${KEEP:-$(mktemp -d)}"
OUT="$(mktemp -d "${OUT_DIR:-$WORK}/calib_bench.XXXXXX")"
if [[ -n "$KEEP" ]]; then trap 'rm -rf "$OUT"' EXIT; else trap 'rm -rf "$OUT" "$WORK"' EXIT; fi
PHOTOS="$WORK/photos"
if [[ ! -d "$PHOTOS" || $(ls "$PHOTOS" | wc -l) -ne $N ]]; then
  rm -rf "$PHOTOS"
  /usr/bin/python3 "$HERE/make_bench_photos.py" "$PHOTOS" "$N"
fi
cat "$PHOTOS"/* > /dev/null  # page cache: measure decoding, not the disk
echo "photos: $N JPEGs, $(du -sh "$PHOTOS" | cut -f1); cores $CORES; ${SIZE}x${SIZE}x3 float32 NCHW letterbox -> $OUT"

NCORES=$(taskset -c "$CORES" nproc)
# One config: label, then the command. Every run appends "wall cpu rss_kb" to $WORK/<id>.runs.
run_once() {
  local id="$1"; shift
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -f "%M %U %S" -o "$WORK/time" taskset -c "$CORES" "$@" > "$WORK/$id.log" 2>&1 ||
    { cat "$WORK/$id.log"; exit 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" '{ print b - a, $2 + $3, $1 }' "$WORK/time" >> "$WORK/$id.runs"
}
report() {  # id, label: best and median wall time over the runs
  sort -n "$WORK/$1.runs" | awk -v l="$2" -v n="$N" '
    { w[NR] = $1; c[NR] = $2; r[NR] = $3 }
    END { m = w[int((NR + 1) / 2)];
          printf "%-34s best %5.2f s %7.1f images/s | median %5.2f s %7.1f images/s | cpu %5.2f s | peak RSS %5.0f MB\n",
                 l, w[1], n / w[1], m, n / m, c[1], r[1] / 1024 }'
}

rm -f "$WORK"/*.runs
for ((i = 0; i < REPEAT; ++i)); do  # interleaved, so that load from elsewhere hits all alike
  run_once gen "$TRTUTILS" -q generate_calibration --calibration_dir "$PHOTOS" --input_shape "$SIZE" "$SIZE" 3 \
    --batch_size 8 --threads "$NCORES" --output "$OUT/calib.npy"
  run_once gen1 "$TRTUTILS" -q generate_calibration --calibration_dir "$PHOTOS" --input_shape "$SIZE" "$SIZE" 3 \
    --batch_size 8 --threads 1 --output "$OUT/calib1.npy"
  run_once base "$BASELINE" "$PHOTOS" "$SIZE" "$SIZE" "$OUT/baseline.npy"
done
echo "runs: $REPEAT each (best = least disturbed by other load on the machine)"
report gen "generate_calibration, $NCORES threads"
report gen1 "generate_calibration, 1 thread"
report base "baseline, 1 thread, all in memory"
sed 's/^/  last /' "$WORK/base.log"
/usr/bin/python3 -c "
import sys, numpy as np
a, b, c = (np.load(f, mmap_mode='r') for f in sys.argv[1:])
print('outputs:', a.shape, a.dtype, 'identical' if np.array_equal(a, b) and np.array_equal(a, c) else 'DIFFER')
" "$OUT/calib.npy" "$OUT/calib1.npy" "$OUT/baseline.npy"
