#!/usr/bin/env bash
# The installed trtutils as a user gets it (ctest -L packaging; tests/CMakeLists.txt registers
# one ctest test per step, the install as their fixture):
#   install    cmake --install of this build into <work>/prefix (a temporary prefix)
#   cmake      tests/packaging/downstream configured with find_package(trtutils CONFIG REQUIRED)
#              against that prefix, built (its program and every public header compiled alone)
#              and run: quantize + build + execute the bundled tiny CNN through the public API
#   pkgconfig  the same program built with `pkg-config --cflags --libs trtutils` only, and run
#   deb        cpack -G DEB, the package's Depends printed, dpkg -x, then its usr/bin/trtutils info
#   subproject tests/packaging/subproject, which add_subdirectory()s this tree, configured only
#   cleanup    removes <work>
# Usage: packaging_test.sh <step> <build dir> <source dir> <work dir>
# Environment (set by ctest): CMAKE_COMMAND, CPACK_COMMAND, CXX, CMAKE_GENERATOR,
# CXX_LAUNCHER (e.g. ccache, may be empty), TRTUTILS_PYTHON (ON: the Python package is checked too).
set -euo pipefail
step=$1
build=$(cd "$2" && pwd)
src=$(cd "$3" && pwd)
work=$4
prefix=$work/prefix
cmake=${CMAKE_COMMAND:-cmake}
cpack=${CPACK_COMMAND:-cpack}
cxx=${CXX:-c++}
example=$src/examples
log() { echo "[packaging:$step] $* (${SECONDS} s)"; }
run_app() {  # <app> <work subdir>
  "$1" "$example/tiny_cnn.onnx" "$example/tiny_cnn_input.npy" "$example/tiny_cnn_expected.npy" "$2"
}

case "$step" in
  install)
    rm -rf "$work"
    mkdir -p "$work"
    log "cmake --install $build --prefix $prefix"
    "$cmake" --install "$build" --prefix "$prefix" >"$work/install.log"
    test -x "$prefix/bin/trtutils"
    "$prefix/bin/trtutils" --version
    # include/ holds the public headers only: nothing of src/.
    others=$(find "$prefix/include" -type f ! -path "$prefix/include/trtutils/*.h")
    if [ -n "$others" ]; then
      echo "unexpected files in $prefix/include: $others" >&2
      exit 1
    fi
    if grep -rn '#include "' "$prefix/include/trtutils" | grep -v '#include "trtutils/'; then
      echo "public headers include non-public headers (above)" >&2
      exit 1
    fi
    find "$prefix" -type f | sed "s|^$prefix/||" | sort | grep -v '^include/trtutils/' || true
    echo "+ include/trtutils/: $(ls "$prefix/include/trtutils" | wc -l) headers"
    ;;
  cmake)
    ds=$work/downstream-cmake
    rm -rf "$ds"
    log "configure tests/packaging/downstream with CMAKE_PREFIX_PATH=$prefix"
    "$cmake" -S "$src/tests/packaging/downstream" -B "$ds" -G "${CMAKE_GENERATOR:-Ninja}" \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
      -DCMAKE_CXX_COMPILER_LAUNCHER="${CXX_LAUNCHER:-}" \
      -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
      -DTRTUTILS_EXPECTED_INCLUDE_DIR="$prefix/include" >"$ds.configure.log" || {
      cat "$ds.configure.log"
      exit 1
    }
    grep 'downstream:' "$ds.configure.log"
    # The package found is the one just installed, not another on the machine.
    grep -q "from $prefix/" "$ds.configure.log"
    log "build"
    "$cmake" --build "$ds" -j2
    log "run"
    run_app "$ds/downstream_app" "$work/run-cmake"
    ;;
  pkgconfig)
    pc=$(find "$prefix" -name trtutils.pc -path '*/pkgconfig/*' | head -1)
    test -n "$pc"
    export PKG_CONFIG_PATH=$(dirname "$pc")
    flags=$(pkg-config --cflags --libs trtutils)
    echo "pkg-config --cflags --libs trtutils: $flags"
    case "$flags" in */src*)
      echo "pkg-config flags name a source tree" >&2
      exit 1
      ;;
    esac
    log "build with $cxx"
    # shellcheck disable=SC2086  # the flags are words
    ${CXX_LAUNCHER:-} "$cxx" -std=c++20 -O1 -Wall -Wextra -Werror \
      "$src/tests/packaging/downstream/main.cpp" $flags -o "$work/downstream_pkgconfig"
    log "run"
    run_app "$work/downstream_pkgconfig" "$work/run-pkgconfig"
    ;;
  deb)
    out=$work/deb
    rm -rf "$out"
    mkdir -p "$out"
    log "cpack -G DEB"
    (cd "$out" && "$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$out" >"$out/cpack.log") || {
      cat "$out/cpack.log"
      exit 1
    }
    deb=$(ls "$out"/*.deb)
    echo "$(basename "$deb"): $(du -h "$deb" | cut -f1)"
    depends=$(dpkg-deb -f "$deb" Depends)
    echo "Depends: $depends"
    echo "Recommends: $(dpkg-deb -f "$deb" Recommends)"
    for p in libdnnl2 libgomp1 libprotobuf libpng16-16 libjpeg62-turbo libwebp7 libstdc++6; do
      case "$depends" in *"$p"*) ;; *)
        echo "Depends lacks $p" >&2
        exit 1
        ;;
      esac
    done
    dpkg -x "$deb" "$out/root"
    log "usr/bin/trtutils info from the package"
    "$out/root/usr/bin/trtutils" info
    if [ "${TRTUTILS_PYTHON:-OFF}" = "ON" ]; then
      log "the package's Python module"
      PYTHONPATH="$out/root/usr/lib/python3/dist-packages" PYTHONDONTWRITEBYTECODE=1 \
        /usr/bin/python3 -c 'import trtutils, sys; print("python: trtutils", trtutils.__version__, "from", trtutils.__file__)'
    fi
    ;;
  subproject)
    sp=$work/subproject
    rm -rf "$sp"
    log "configure tests/packaging/subproject (add_subdirectory of $src)"
    "$cmake" -S "$src/tests/packaging/subproject" -B "$sp" -G "${CMAKE_GENERATOR:-Ninja}" \
      -DCMAKE_CXX_COMPILER="$cxx" -DTRTUTILS_SOURCE_DIR="$src" >"$sp.configure.log" 2>&1 || {
      cat "$sp.configure.log"
      exit 1
    }
    grep 'subproject:' "$sp.configure.log"
    ;;
  cleanup)
    rm -rf "$work"
    ;;
  *)
    echo "usage: $0 install|cmake|pkgconfig|deb|subproject|cleanup <build dir> <source dir> <work dir>" >&2
    exit 2
    ;;
esac
log "done"
