#!/usr/bin/env bash
# Formats every C++ source with the root .clang-format; --check only reports (exit 1 if any file
# would change). CI runs the check.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files -- '*.cpp' '*.h' '*.cc' '*.hpp' '*.cu' '*.cuh')
if [[ "${1:-}" == "--check" ]]; then
  clang-format --dry-run --Werror "${files[@]}"
  echo "format: ${#files[@]} files clean"
else
  clang-format -i "${files[@]}"
fi
