#!/usr/bin/env bash
# Builds the binaries for the GPU machine and packs them into dist/trtutils-dist.tar.xz (dist/ is
# ignored by git), an archive of
#   bin/trtutils_tests, bin/trtutils   stripped, kernels for TRTUTILS_CUDA_ARCHS (90a)
#   lib/*.so*                          the non-system shared libraries they load
#                                                (Debian's protobuf, onnx, oneDNN, OpenCL loader,
#                                                fmt, gomp, jpeg, png, webp, zlib)
# CUDA's own libraries (cudart is static; cuBLASLt, cuDNN) are not copied: the GPU machine has
# them. Then on that machine, from the repo root: bash bench/cuda/device_check.sh
# Environment: TRTUTILS_CUDA_ARCHS (default 90a), JOBS (default 2), BUILD_DIR (build-dist),
# SKIP_BUILD=1 (pack what BUILD_DIR/bin already holds).
set -euo pipefail
cd "$(dirname "$0")/.."
archs="${TRTUTILS_CUDA_ARCHS:-90a}"
build="${BUILD_DIR:-build-dist}"
if [ "${SKIP_BUILD:-0}" != "1" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRTUTILS_CUDA_ARCHS="$archs" \
    -DTRTUTILS_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build" -j"${JOBS:-2}" --target trtutils_tests trtutils_cli
fi
rm -rf dist
mkdir -p dist/bin dist/lib
cp "$build/bin/trtutils_tests" "$build/bin/trtutils" dist/bin/
strip --strip-unneeded dist/bin/trtutils_tests dist/bin/trtutils
# Libraries resolved outside the CUDA toolkit, minus glibc and the compiler runtime (the GPU
# machine's own, newer ones are used).
for b in dist/bin/*; do ldd "$b"; done | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libcuda.so* | libcudart* | libcublas* | libcudnn* | libnvrtc*) continue ;;
    libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | libstdc++.so* | libgcc_s.so*) continue ;;
  esac
  case "$lib" in /usr/local/cuda*) continue ;; esac
  cp -L "$lib" dist/lib/
done
# Packed (xz) so that the repo plus dist/ stay under the 64 MiB a device run carries;
# bench/cuda/device_check.sh unpacks it there.
tar -C dist -cf - bin lib | xz -T"${JOBS:-2}" -6 >dist/trtutils-dist.tar.xz
rm -rf dist/bin dist/lib
size=$(du -sm dist | cut -f1)
echo "dist/trtutils-dist.tar.xz: ${size} MiB"
if [ "$size" -ge 56 ]; then
  echo "make_dist.sh: dist/ is ${size} MiB, too close to the 64 MiB a device run can carry" >&2
  exit 1
fi
