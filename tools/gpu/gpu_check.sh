#!/usr/bin/env bash
# tools/gpu/gpu_check.sh: the one prepared GPU check (README.md, "Tests").
#
# Builds the CUDA tests, the conform CLI and the benchmark here (bazel -c opt), bundles
# them into a directory that runs on a bare Linux x86-64 machine with only the NVIDIA
# driver (HDF5, GoogleTest, RapidCheck and cudart are linked statically; the binaries
# need only libc, libm, libstdc++, libgcc_s, libdl, libpthread, librt), and runs them
# there in one call.
#
# The device command. The device tool copies the working tree plus the ignored paths in
# its carry list to the GPU machine and runs one command in the repo root with $OUT as
# the folder that comes back. Build the bundle here first, then:
#
#     tools/gpu/gpu_check.sh --build-only gpu-bundle          # here (no GPU needed)
#     carry: ["gpu-bundle"]    command: bash gpu-bundle/run.sh "$OUT"
#
# run.sh (tools/gpu/bundle_run.sh) runs the test binaries, conform --impl cuda against the
# goldens, conform explore --impl cuda over a few seeds, compute-sanitizer's memcheck over
# a share of the goldens (where compute-sanitizer is on PATH), cuda_bench and
# bench_verl.py (verl's own functions, eager and torch.compile, from the bundled wheel).
# The device tool returns at most 8 files, so OUT_DIR gets gpu-check.tar.gz (every log,
# GTest/JUnit XML and JSON: env.log, bundle_check.log, <test>.log/.xml, conform_cuda,
# explore_seed<S> with the replayable differences, memcheck.log, bench and bench_verl
# .log/.json, ratio_table.md), summary.txt, and ratio_table.md, bench.json and
# bench_verl.json beside them while the total stays within 8. The last line of summary.txt:
#     SUMMARY: N passed, N failed, N skipped (test binaries); explore: S; memcheck: S;
#     bench: S; bench_verl: S
# and run.sh exits 1 when a test binary failed, explore errored, memcheck found an error,
# the benchmark errored or the bundle is corrupt, else 0. A binary whose device tests
# skipped (no usable GPU) counts as skipped, never as passed; conform_cuda is judged on the
# float32 goldens (the float64 ones are not compared by design). The whole run keeps inside
# GPU_CHECK_DEADLINE seconds (default 470, under the 8 minutes a device call is planned
# for): each step gets at most its own cap and never more than what is left once the later
# steps' minimums are set aside; the two benches get the rest as their --budget-s.
#
# Usage:
#   tools/gpu/gpu_check.sh --build-only BUNDLE_DIR      build + bundle only
#   tools/gpu/gpu_check.sh [--bundle BUNDLE_DIR] OUT_DIR build + bundle (default gpu-bundle/)
#                                                   + run here, for a machine with both
#   BUNDLE_DIR/run.sh OUT_DIR                        run a bundle (the GPU machine)
# Environment: GPU_CHECK_DEADLINE (seconds for the whole run.sh, default 470);
# GPU_CHECK_EXPLORE_SEEDS (default "1 2 3") and GPU_CHECK_EXPLORE_CASES (per function,
# default 20); GPU_CHECK_MEMCHECK_ONLY (conform --only for memcheck, default
# policy_loss,rollout_correction,advantage); BENCH_ARGS (extra cuda_bench flags, e.g.
# "--repeats 50"); BENCH_VERL_ARGS (extra bench_verl.py flags); GPU_CHECK_DRY_BUILD=1
# (CI's build flags: a check of the script and the bundle, never for figures).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
say() { echo "gpu_check: $*"; }
die() { echo "gpu_check: ERROR: $*" >&2; exit 2; }
usage() { sed -n '/^# Usage:/,/^# Environment/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

build_only=0
bundle=""
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-only) build_only=1; shift ;;
    --bundle) [[ $# -ge 2 ]] || usage; bundle="$2"; shift 2 ;;
    -h|--help) usage ;;
    -*) die "unknown option '$1'" ;;
    *) [[ -z "$out" ]] || die "one directory argument expected"; out="$1"; shift ;;
  esac
done
if [[ $build_only -eq 1 ]]; then
  [[ -z "$bundle" ]] || die "--build-only takes the bundle directory as its argument"
  [[ -n "$out" ]] || usage
  bundle="$out"
  out=""
else
  [[ -n "$out" ]] || usage
  bundle="${bundle:-$repo/gpu-bundle}"
fi
# Resolve against the caller's directory before we cd.
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
bundle="$(abspath "$bundle")"
[[ -z "$out" ]] || out="$(abspath "$out")"
cd "$repo"

# ------------------------------------------------------------------------------ build
# Bundle name -> Bazel target. The small test binaries stand alone; conform, cuda_bench
# and the device tests, which each embed all of cuda_impl's device code, are one
# multi-call binary (tools/gpu/verlconf_gpu.cc) reached through links of their names.
tests=(
  "third_party_cuda_test://third_party/tests:cuda_test"
  "cuda_impl_kl_kl_penalty_kernel_test://cuda_impl/kl:kl_penalty_kernel_test"
  "verlconf_gpu://tools/gpu:verlconf_gpu"
)
applets=(tools_gpu_cuda_test conform cuda_bench)
targets=()
for e in "${tests[@]}"; do targets+=("${e#*:}"); done

# sm_90 SASS only (the lent GPU is an H200), compressed: see third_party/cuda/cuda.bzl.
# GPU_CHECK_DRY_BUILD=1 builds with CI's flags instead (PTX only, no -c opt: what
# `bazel test --config=ci //...` has already built), for checking this script and the
# bundle on a machine without a GPU; never for the figures of a real run.
build_flags=(-c opt --define=cuda_fatbin=sm_90)
[[ "${GPU_CHECK_DRY_BUILD:-0}" == 1 ]] && build_flags=(--config=ci)
say "bazel build ${build_flags[*]} ${targets[*]}"
bazel build "${build_flags[@]}" "${targets[@]}"
bin_root="$(bazel info "${build_flags[@]}" bazel-bin 2>/dev/null)"

# ----------------------------------------------------------------------------- bundle
marker=".verlconf-gpu-bundle"
if [[ -e "$bundle" ]]; then
  # Only ever delete what this script made.
  [[ -d "$bundle" ]] || die "$bundle exists and is not a directory"
  if [[ -n "$(ls -A "$bundle")" && ! -e "$bundle/$marker" ]]; then
    die "$bundle is not empty and is not a gpu_check bundle; refusing to overwrite it"
  fi
  rm -rf "$bundle"
fi
mkdir -p "$bundle/bin"
touch "$bundle/$marker"

for e in "${tests[@]}"; do
  name="${e%%:*}"
  target="${e#*:}"
  pkg="${target#//}"; pkg="${pkg%%:*}"
  src="$bin_root/$pkg/${target##*:}"
  [[ -x "$src" ]] || die "built binary not found: $src"
  cp "$src" "$bundle/bin/$name"
  chmod u+w "$bundle/bin/$name"
  # Debug sections come from the static archives (HDF5's especially); symbols stay
  # for readable backtraces.
  strip --strip-debug "$bundle/bin/$name"
done
for a in "${applets[@]}"; do ln -s verlconf_gpu "$bundle/bin/$a"; done
# The goldens are not copied: the device tool carries the working tree, and the bundle
# reads the tree's fixtures/verl-0.9.1 by its path relative to the bundle (their sha256
# is in the manifest all the same).
goldens_rel="$(realpath --relative-to="$bundle" "$repo/fixtures/verl-0.9.1")"
echo "$goldens_rel" >"$bundle/goldens.path"
mkdir -p "$bundle/py" "$bundle/wheels"
cp tools/bench/bench_verl.py tools/bench/ratio_table.py "$bundle/py/"
# verl's wheel, for bench_verl.py on a machine that cannot install it (pure Python).
wheel_cache="${VERL_WHEEL_DIR:-$HOME/.cache/verlconf/wheels}"
if ! ls "$wheel_cache"/verl-0.9.1-*.whl >/dev/null 2>&1; then
  say "downloading verl 0.9.1's wheel into $wheel_cache"
  python3 -m pip download -q --no-deps --only-binary=:all: verl==0.9.1 -d "$wheel_cache" ||
    say "WARNING: could not download verl's wheel; the bundle's bench_verl step will skip"
fi
cp "$wheel_cache"/verl-0.9.1-*.whl "$bundle/wheels/" 2>/dev/null || true

# Dynamic dependencies: nothing beyond the C/C++ runtime may be needed. readelf's
# NEEDED list is what the GPU machine's loader will look for; ldd also resolves
# transitive ones on this machine.
allowed='^(linux-vdso\.so\.1|ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6'
allowed+='|libgcc_s\.so\.1|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1)$'
deps_report=""
bad=0
for f in "$bundle"/bin/*; do
  [[ -L "$f" ]] && continue
  needed="$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u)"
  resolved="$(ldd "$f" | awk '{print $1}' | sed 's|.*/||' | sort -u)"
  for lib in $needed $resolved; do
    if ! [[ "$lib" =~ $allowed ]]; then
      echo "gpu_check: ERROR: $(basename "$f") needs $lib" >&2
      bad=1
    fi
  done
  glibc="$(objdump -T "$f" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
  glibcxx="$(objdump -T "$f" | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)"
  deps_report+="$(basename "$f"): needs $(paste -sd, <<<"$needed"); newest symbols ${glibc:-none} ${glibcxx:-}"$'\n'
done
[[ $bad -eq 0 ]] || die "a bundled binary needs a shared library a bare GPU machine lacks"

# The binaries travel compressed (each embeds every family's device code; together they
# would not fit the device tool's 64 MiB); run.sh unpacks them into a temporary folder.
binaries_report="$(cd "$bundle" && for f in bin/*; do
  if [[ -L "$f" ]]; then echo "$f -> $(readlink "$f")"; else sha256sum "$f"; fi
done)"
tar -C "$bundle" -czf "$bundle/bin.tar.gz" bin
rm -rf "$bundle/bin"

# The runner (tools/gpu/bundle_run.sh, which says what it writes and why).
cp tools/gpu/bundle_run.sh "$bundle/run.sh"
chmod +x "$bundle/run.sh"

{
  echo "verlconf GPU bundle (tools/gpu/gpu_check.sh)"
  echo "built_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "git: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (+ uncommitted changes)')"
  echo "build_host: $(uname -srm); $(ldd --version 2>&1 | head -1)"
  echo "nvcc: $(/usr/local/cuda/bin/nvcc --version | tail -1)"
  echo "bazel flags: ${build_flags[*]}$([[ "${GPU_CHECK_DRY_BUILD:-0}" == 1 ]] && echo ' (a dry build: not for figures)')"
  echo "device command: bash $(basename "$bundle")/run.sh \"\$OUT\"   (carry: [\"$(basename "$bundle")\"])"
  echo
  echo "dynamic dependencies (checked: libc/libm/libstdc++/libgcc_s/libdl/libpthread/librt only):"
  printf '%s' "$deps_report"
  echo
  echo "binaries (in bin.tar.gz):"
  printf '%s\n' "$binaries_report"
  echo
  echo "files:"
  (cd "$bundle" && { find bin.tar.gz goldens.path run.sh py wheels -type f; ls "$goldens_rel"/*.h5; } | sort | xargs sha256sum)
} >"$bundle/MANIFEST.txt"


size="$(du -sh "$bundle" | cut -f1)"
bytes="$(du -sb "$bundle" | cut -f1)"
# The device tool carries at most 64 MiB: the working tree (tracked files and untracked
# ones git does not ignore) and the bundle together. Keep 4 MiB of margin.
tree_bytes="$("$repo/tools/gpu/tree_budget.sh" --bytes)"
carried=$((bytes + tree_bytes))
limit=$((60 * 1024 * 1024))
say "carried: bundle $((bytes / 1048576)) MiB + working tree $((tree_bytes / 1048576)) MiB = $((carried / 1048576)) MiB (limit 60)"
[[ $carried -lt $limit ]] || die "bundle ($size) + working tree is $((carried / 1048576)) MiB; too large to carry (64 MiB, 4 of margin)"
say "bundle ready: $bundle ($size)"
printf '%s' "$deps_report" | sed 's/^/gpu_check:   /'

if [[ $build_only -eq 1 ]]; then
  say "device command (repo root, carry [\"$(basename "$bundle")\"]): bash $(basename "$bundle")/run.sh \"\$OUT\""
  exit 0
fi
say "running $bundle/run.sh $out"
exec "$bundle/run.sh" "$out"
