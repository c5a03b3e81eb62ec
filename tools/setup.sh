#!/usr/bin/env bash
# One idempotent command that makes a fresh Debian 12 machine able to run
# `bazel test //...` fully offline afterwards (Bazel itself downloads nothing;
# every dependency comes from these apt packages or /usr/local/cuda).
#
#   tools/setup.sh             install/verify the build and test dependencies
#   tools/setup.sh --capture … delegate to fixtures/capture/setup_capture.sh … (the
#                              Python environment that runs upstream verl)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
say() { echo "setup: $*"; }
die() { echo "setup: ERROR: $*" >&2; exit 1; }

if [[ "${1:-}" == "--capture" ]]; then
  shift
  capture_setup="$here/../fixtures/capture/setup_capture.sh"
  [[ -f "$capture_setup" ]] ||
    die "fixtures/capture/setup_capture.sh does not exist (capture setup is not available in this checkout)"
  say "delegating to fixtures/capture/setup_capture.sh $*"
  exec bash "$capture_setup" "$@"
fi
[[ $# -eq 0 ]] || die "unknown argument '$1' (usage: tools/setup.sh [--capture ARGS...])"

# Why each package: Bazel; the C++ libraries wrapped in third_party/*.BUILD
# (static archives: gtest/gmock, rapidcheck, hdf5 + its zlib/szip filters);
# Debian's python3 with numpy/h5py for py_test (third_party/python); compiler; clang
# and its libFuzzer/sanitizer runtime for tools/fuzz/run.sh; clang-format and clang-tidy
# for tools/lint.sh (the style gate); LibTorch (CPU, shared
# libraries) for the C++ candidate API and the autograd cross-check (tools/torch_api);
# python3-venv for the small venv that holds ruff (tools/lint.sh's Python gate: PyPI
# only, and Debian 12's python3 refuses `pip install --user` (PEP 668)), for the one that
# holds Ray (verlconf.ray_explore's tests) and for the venv
# //tools/wheel:wheel_test installs the verlconf wheel into; python3-pytest for that test's
# run of the wheel's pytest plugin (the venv sees the system's numpy, h5py and pytest).
packages=(
  bazel-bootstrap
  g++
  googletest libgtest-dev libgmock-dev
  librapidcheck-dev
  libhdf5-dev zlib1g-dev libaec-dev
  python3 python3-numpy python3-h5py python3-pytest
  clang libclang-rt-14-dev clang-format clang-tidy
  libtorch-dev
  python3-venv
)

[[ -r /etc/os-release ]] && . /etc/os-release
[[ "${ID:-}" == "debian" && "${VERSION_ID:-}" == "12" ]] ||
  say "warning: tested on Debian 12 only (this is ${PRETTY_NAME:-unknown})"

if [[ $EUID -eq 0 ]]; then
  as_root=(env DEBIAN_FRONTEND=noninteractive)
elif command -v sudo >/dev/null; then
  as_root=(sudo env DEBIAN_FRONTEND=noninteractive)
else
  as_root=()  # only an error if something actually needs installing
fi

missing=()
for p in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    say "$p: already installed, skipped"
  else
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -gt 0 ]]; then
  [[ ${#as_root[@]} -gt 0 ]] || die "need root or sudo to install: ${missing[*]}"
  say "apt-get update"
  "${as_root[@]}" apt-get update -q >/dev/null || die "apt-get update failed"
  say "installing: ${missing[*]}"
  "${as_root[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
    die "apt-get install failed for: ${missing[*]}"
else
  say "all packages present, apt-get not run"
fi

# Check what the build actually relies on, not just that packages exist.
command -v bazel >/dev/null || die "bazel not on PATH after installing bazel-bootstrap"
/usr/bin/python3 -c 'import numpy, h5py, pytest' 2>/dev/null ||
  die "/usr/bin/python3 cannot import numpy, h5py and pytest"
for f in /usr/lib/x86_64-linux-gnu/{libgtest,libgmock,librapidcheck,libhdf5_serial,libsz,libaec,libz}.a; do
  [[ -f "$f" ]] || die "missing static library $f"
done
for f in /usr/lib/x86_64-linux-gnu/{libtorch,libtorch_cpu,libc10}.so /usr/include/torch/csrc/api/include/torch/torch.h; do
  [[ -f "$f" ]] || die "missing LibTorch file $f (libtorch-dev)"
done
say "bazel, static libraries, python3 numpy/h5py/pytest, libtorch: ok"

# ruff, pinned, in a venv of its own outside the tree (tools/lint.sh finds it there).
# Neither Debian 12 nor PyPI packages buildifier: tools/lint.sh checks BUILD/.bzl files
# with buildifier where one is on PATH, else with tools/lint_bazel.py.
RUFF_VERSION=0.17.6
tools_venv="${VERLCONF_TOOLS:-$HOME/.cache/verlconf-tools}/venv"
if [[ "$("$tools_venv/bin/ruff" --version 2>/dev/null)" == "ruff $RUFF_VERSION" ]]; then
  say "ruff $RUFF_VERSION: already installed in $tools_venv, skipped"
else
  [[ -x "$tools_venv/bin/pip" ]] || /usr/bin/python3 -m venv "$tools_venv" || die "cannot create $tools_venv"
  say "installing ruff $RUFF_VERSION into $tools_venv"
  "$tools_venv/bin/pip" install -q --disable-pip-version-check "ruff==$RUFF_VERSION" ||
    die "pip install ruff==$RUFF_VERSION failed"
fi

# Ray, pinned, in a second venv (verlconf.ray_explore's tests run a real local Ray instance
# in it). --system-site-packages: it sees Debian's numpy and h5py, which the adapters and
# the verlconf package import; Ray itself brings no numpy. Its own venv keeps ruff's small.
RAY_VERSION=2.60.0
ray_venv="${VERLCONF_TOOLS:-$HOME/.cache/verlconf-tools}/ray-venv"
if [[ "$("$ray_venv/bin/python" -c 'import ray; print(ray.__version__)' 2>/dev/null)" == "$RAY_VERSION" ]]; then
  say "ray $RAY_VERSION: already installed in $ray_venv, skipped"
else
  [[ -x "$ray_venv/bin/pip" ]] || /usr/bin/python3 -m venv --system-site-packages "$ray_venv" ||
    die "cannot create $ray_venv"
  say "installing ray $RAY_VERSION into $ray_venv"
  "$ray_venv/bin/pip" install -q --disable-pip-version-check "ray==$RAY_VERSION" ||
    die "pip install ray==$RAY_VERSION failed"
fi
"$ray_venv/bin/python" -c 'import numpy, h5py' 2>/dev/null || die "$ray_venv/bin/python cannot import numpy and h5py"

# The CUDA toolkit is not a Debian package; CI images ship it preinstalled.
if [[ -x /usr/local/cuda/bin/nvcc && -f /usr/local/cuda/lib64/libcudart_static.a ]]; then
  say "CUDA: $(/usr/local/cuda/bin/nvcc --version | grep -o 'release [0-9.]*')"
else
  say "WARNING: no CUDA toolkit at /usr/local/cuda (nvcc, lib64/libcudart_static.a);" \
      "CUDA targets will fail to build on this machine"
fi
say "done"
