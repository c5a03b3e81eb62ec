#!/usr/bin/env bash
# The style gate: every C++/CUDA source of the tree is formatted by the root
# .clang-format (exit 1 and the offending files otherwise). --fix formats them in
# place. --tidy also runs clang-tidy (root .clang-tidy) over the oracle, the reader and
# the CLI; it needs no Bazel, only the system headers tools/setup.sh installs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

fix=0 tidy=0
for a in "$@"; do
  case "$a" in
    --fix) fix=1 ;;
    --tidy) tidy=1 ;;
    *) echo "tools/lint.sh: unknown argument '$a' (usage: tools/lint.sh [--fix] [--tidy])" >&2; exit 2 ;;
  esac
done

command -v clang-format > /dev/null || { echo "tools/lint.sh: clang-format is not installed (tools/setup.sh)" >&2; exit 2; }
mapfile -t sources < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh' ':!:third_party/**')
[[ ${#sources[@]} -gt 0 ]] || { echo "tools/lint.sh: no sources found (not a git checkout?)" >&2; exit 2; }

if [[ $fix -eq 1 ]]; then
  clang-format -i "${sources[@]}"
  echo "tools/lint.sh: formatted ${#sources[@]} files"
else
  bad=()
  for f in "${sources[@]}"; do
    clang-format --dry-run --Werror "$f" > /dev/null 2>&1 || bad+=("$f")
  done
  if [[ ${#bad[@]} -gt 0 ]]; then
    echo "tools/lint.sh: ${#bad[@]} of ${#sources[@]} files are not formatted (run tools/lint.sh --fix):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "tools/lint.sh: ${#sources[@]} files formatted"
fi

if [[ $tidy -eq 1 ]]; then
  command -v clang-tidy > /dev/null || { echo "tools/lint.sh: clang-tidy is not installed (tools/setup.sh)" >&2; exit 2; }
  mapfile -t tidy_sources < <(git ls-files 'oracle/*.cc' 'fixtures/*.cc' 'tools/*.cc' ':!:tools/torch_api/**' ':!:tools/bench/**' ':!:tools/fuzz/**')
  clang-tidy --quiet "${tidy_sources[@]}" -- -std=c++17 -I. -isystem /usr/include/hdf5/serial
fi
