#!/usr/bin/env bash
# The style gate, exit 1 and the offending files otherwise:
#   - every C++/CUDA source is formatted by the root .clang-format;
#   - every Python file is formatted by ruff and passes `ruff check` (root ruff.toml;
#     tools/setup.sh installs the pinned ruff into ~/.cache/verlconf-tools/venv);
#   - every BUILD/.bzl file passes buildifier where one is on PATH; neither Debian 12 nor
#     PyPI packages it, so otherwise tools/lint_bazel.py checks the part of its format
#     that can be checked without it (and says so).
# --fix formats C++ and Python in place (and applies ruff's safe fixes). --tidy also runs
# clang-tidy (root .clang-tidy) over the oracle, the reader and the CLI; it needs no
# Bazel, only the system headers tools/setup.sh installs. --tidy-only runs clang-tidy alone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

fix=0 tidy=0 style=1
for a in "$@"; do
  case "$a" in
    --fix) fix=1 ;;
    --tidy) tidy=1 ;;
    --tidy-only) tidy=1 style=0 ;;
    *) echo "tools/lint.sh: unknown argument '$a' (usage: tools/lint.sh [--fix] [--tidy | --tidy-only])" >&2; exit 2 ;;
  esac
done
rc=0

if [[ $style -eq 1 ]]; then
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
      rc=1
    else
      echo "tools/lint.sh: ${#sources[@]} files formatted"
    fi
  fi

  # Python: the pinned ruff (tools/setup.sh), else one on PATH of the same version.
  want_ruff="ruff $(sed -n 's/^RUFF_VERSION=//p' tools/setup.sh)"
  ruff="${VERLCONF_TOOLS:-$HOME/.cache/verlconf-tools}/venv/bin/ruff"
  [[ -x "$ruff" ]] || ruff="$(command -v ruff || true)"
  [[ -n "$ruff" ]] || { echo "tools/lint.sh: ruff is not installed (tools/setup.sh)" >&2; exit 2; }
  [[ "$("$ruff" --version)" == "$want_ruff" ]] ||
    { echo "tools/lint.sh: $ruff is $("$ruff" --version), tools/setup.sh pins $want_ruff" >&2; exit 2; }
  if [[ $fix -eq 1 ]]; then
    "$ruff" format --quiet . && "$ruff" check --quiet --fix . || rc=1
    echo "tools/lint.sh: Python formatted ($want_ruff)"
  else
    if "$ruff" format --check --quiet . && "$ruff" check --quiet .; then
      echo "tools/lint.sh: Python formatted and checked ($want_ruff)"
    else
      echo "tools/lint.sh: Python is not formatted or ruff check fails (run tools/lint.sh --fix)" >&2
      rc=1
    fi
  fi

  # One writer for every file conform writes (tools/lint_writers.py).
  mapfile -t writer_sources < <(git ls-files 'oracle/*.cc' 'fixtures/*.cc' 'tools/*.cc' ':!:tools/torch_api/**' \
    ':!:tools/bench/**' ':!:tools/fuzz/**' ':!:tools/gpu/**')
  if /usr/bin/python3 tools/lint_writers.py "${writer_sources[@]}"; then
    echo "tools/lint.sh: ${#writer_sources[@]} sources write files only through AtomicFile or WriteFixtureFile"
  else
    echo "tools/lint.sh: a file written another way (tools/lint_writers.py)" >&2
    rc=1
  fi

  # BUILD and .bzl files.
  mapfile -t bazel_files < <(git ls-files '*BUILD.bazel' '*.bzl' '*.BUILD' 'WORKSPACE')
  if command -v buildifier > /dev/null; then
    if [[ $fix -eq 1 ]]; then
      buildifier "${bazel_files[@]}" || rc=1
    elif buildifier --mode=check "${bazel_files[@]}"; then
      echo "tools/lint.sh: ${#bazel_files[@]} BUILD/.bzl files formatted (buildifier)"
    else
      rc=1
    fi
  elif /usr/bin/python3 tools/lint_bazel.py "${bazel_files[@]}"; then
    echo "tools/lint.sh: ${#bazel_files[@]} BUILD/.bzl files checked (tools/lint_bazel.py: no buildifier on PATH)"
  else
    echo "tools/lint.sh: BUILD/.bzl files break buildifier's format (tools/lint_bazel.py; fix by hand)" >&2
    rc=1
  fi
fi

if [[ $tidy -eq 1 ]]; then
  command -v clang-tidy > /dev/null || { echo "tools/lint.sh: clang-tidy is not installed (tools/setup.sh)" >&2; exit 2; }
  # Not the device tests (tools/gpu/): nvcc builds them for the GPU binary, and their
  # bitwise comparisons of doubles (memcmp) are what they test.
  mapfile -t tidy_sources < <(git ls-files 'oracle/*.cc' 'fixtures/*.cc' 'tools/*.cc' ':!:tools/torch_api/**' \
    ':!:tools/bench/**' ':!:tools/fuzz/**' ':!:tools/gpu/**')
  # One clang-tidy per core: each source is parsed on its own anyway. Its count of the
  # (suppressed) warnings in system headers, one line per source, is dropped.
  printf '%s\0' "${tidy_sources[@]}" |
    xargs -0 -n 4 -P "$(nproc)" bash -c 'set -o pipefail
      clang-tidy --quiet "$@" -- -std=c++17 -I. -isystem /usr/include/hdf5/serial 2>&1 |
        { grep -v "^[0-9]* warnings\? generated\.$" || true; }' tidy ||
    rc=1
  [[ $rc -ne 0 ]] || echo "tools/lint.sh: clang-tidy clean over ${#tidy_sources[@]} sources"
fi
exit $rc
