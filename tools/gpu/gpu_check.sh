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
# run.sh writes into OUT_DIR: env.log (driver, nvidia-smi, bundle manifest),
# bundle_check.log (sha256 of every bundled file against MANIFEST.txt); one
# <name>.log and GTest <name>.xml per test binary; conform_cuda.log/.xml (JUnit);
# bench.log and bench.json (cuda_bench); bench_verl.log and bench_verl.json (verl's own
# functions, eager and torch.compile, from the bundled wheel); ratio_table.md;
# summary.txt. Its last line reads
#     SUMMARY: N passed, N failed, N skipped (test binaries); bench: S; bench_verl: S
# and it exits 1 when a test binary failed, the benchmark errored or the bundle is
# corrupt, else 0. A binary whose device tests skipped (no usable GPU) counts as
# skipped, never as passed. The whole run keeps inside GPU_CHECK_DEADLINE seconds
# (default 470, under the 8 minutes a device call is planned for): each step gets at
# most its own cap and never more than what is left once the later steps' minimums
# are set aside; the two benches get the rest as their --budget-s.
#
# Usage:
#   tools/gpu/gpu_check.sh --build-only BUNDLE_DIR      build + bundle only
#   tools/gpu/gpu_check.sh [--bundle BUNDLE_DIR] OUT_DIR build + bundle (default gpu-bundle/)
#                                                   + run here, for a machine with both
#   BUNDLE_DIR/run.sh OUT_DIR                        run a bundle (the GPU machine)
# Environment: GPU_CHECK_DEADLINE (seconds for the whole run.sh, default 470);
# BENCH_ARGS (extra cuda_bench flags, e.g. "--repeats 50"); BENCH_VERL_ARGS (extra
# bench_verl.py flags); GPU_CHECK_DRY_BUILD=1 (CI's build flags: a check of the script
# and the bundle, never for figures).
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
  (cd "$bundle" && { find bin.tar.gz goldens.path py wheels -type f; ls "$goldens_rel"/*.h5; } | sort | xargs sha256sum)
} >"$bundle/MANIFEST.txt"

# The runner. Plain bash + coreutils: the GPU machine may have nothing else.
cat >"$bundle/run.sh" <<'RUN_SH'
#!/usr/bin/env bash
# Runs the verlconf GPU check bundle (made by tools/gpu/gpu_check.sh): every test binary,
# conform --impl cuda against the tree's goldens, and the benchmark.
#   usage: run.sh OUT_DIR
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[[ $# -eq 1 ]] || { echo "usage: run.sh OUT_DIR" >&2; exit 2; }
mkdir -p "$1" || exit 2
out="$(cd "$1" && pwd)"
deadline=$((SECONDS + ${GPU_CHECK_DEADLINE:-470}))
export GTEST_COLOR=no
names=(third_party_cuda_test cuda_impl_kl_kl_penalty_kernel_test tools_gpu_cuda_test conform_cuda bench bench_verl)
for n in "${names[@]}"; do rm -f "$out/$n.log" "$out/$n.xml" "$out/$n.json"; done
rm -f "$out/env.log" "$out/summary.txt" "$out/ratio_table.md"

# A bundle that arrived incomplete would quietly check fewer goldens.
bundle_ok=1
if ! (cd "$here" && sed -n '/^files:$/,$p' MANIFEST.txt | tail -n +2 | sha256sum -c --quiet) >"$out/bundle_check.log" 2>&1; then
  bundle_ok=0
  echo "FAILED   bundle integrity (sha256 of MANIFEST.txt's files; see bundle_check.log)"
  cat "$out/bundle_check.log"
fi

goldens="$here/$(cat "$here/goldens.path" 2>/dev/null)"
[[ -d "$goldens" ]] || { echo "FAILED   no goldens at $goldens (goldens.path)"; bundle_ok=0; }
# The device tests find the goldens as the tree's fixtures/ from the tree's root.
cd "$goldens/../.." || exit 2
bin="$(mktemp -d)/bin"
tar -xzf "$here/bin.tar.gz" -C "$(dirname "$bin")" || { echo "FAILED   unpacking bin.tar.gz"; bundle_ok=0; }

{
  echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -a)"
  echo "glibc: $(ldd --version 2>&1 | head -1)"
  if command -v nvidia-smi >/dev/null; then
    timeout 30 nvidia-smi 2>&1
  else
    echo "nvidia-smi: not found"
  fi
  echo
  cat "$here/MANIFEST.txt"
} >"$out/env.log" 2>&1

passed=0 failed=0 skipped=0
lines=()
note() { lines+=("$1"); echo "$1"; }

# Seconds a step may take: at most its cap, and never the time the later steps need
# (their minimums, the second argument) out of what is left before the deadline.
allowance() {
  local cap="$1" reserve="$2" left=$((deadline - SECONDS - $2))
  ((left < cap)) && cap=$left
  ((cap < 10)) && cap=10
  echo "$cap"
}

# Runs one step under a timeout of $1 seconds; stdout+stderr to OUT/<name>.log; sets $rc.
step() {
  local limit="$1" name="$2"; shift 2
  rc=0
  timeout -k 10 "$limit" "$@" >"$out/$name.log" 2>&1 || rc=$?
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then echo "(timed out after ${limit}s)" >>"$out/$name.log"; fi
}

show_tail() { echo "----- last lines of $1.log"; tail -n 30 "$out/$1.log"; echo "-----"; }

for name in third_party_cuda_test cuda_impl_kl_kl_penalty_kernel_test tools_gpu_cuda_test; do
  # Later: the other tests (30 s each), conform (40 s) and the two benches (60 s each).
  step "$(allowance 120 250)" "$name" "$bin/$name" --gtest_output="xml:$out/$name.xml"
  total=0 skip=0
  if [[ -f "$out/$name.xml" ]]; then
    total=$(grep -c '<testcase ' "$out/$name.xml" || true)
    skip=$(grep -c 'result="skipped"' "$out/$name.xml" || true)
  fi
  if [[ $rc -ne 0 || ! -f "$out/$name.xml" ]]; then
    failed=$((failed + 1))
    note "FAILED   $name (exit $rc; see $name.log)"
    show_tail "$name"
  elif [[ $skip -gt 0 ]]; then
    skipped=$((skipped + 1))
    why=$(grep -m1 -A1 ': Skipped$' "$out/$name.log" | tail -1)
    note "SKIPPED  $name ($skip of $total tests skipped: $why)"
  else
    passed=$((passed + 1))
    note "PASSED   $name ($total tests)"
  fi
done

# conform prints "N cases: P passed, F failed, M mistrusted, U unsupported, S skipped".
# Functions without a CUDA entry are UNSUPPORTED by design; they do not fail the step.
name=conform_cuda
step "$(allowance 90 120)" "$name" "$bin/conform" check --impl cuda --against "$goldens" --junit "$out/$name.xml"
counts=$(grep -E '^[0-9]+ cases: ' "$out/$name.log" | tail -1)
c_pass=$(sed -n 's/.* \([0-9]*\) passed.*/\1/p' <<<"$counts")
c_skip=$(sed -n 's/.* \([0-9]*\) skipped.*/\1/p' <<<"$counts")
if [[ $rc -ne 0 || -z "$counts" ]]; then
  failed=$((failed + 1))
  note "FAILED   $name (exit $rc; $counts)"
  show_tail "$name"
elif [[ "${c_skip:-0}" -gt 0 || "${c_pass:-0}" -eq 0 ]]; then
  skipped=$((skipped + 1))
  why=$(grep -m1 '^CUDA: ' "$out/$name.log" || echo "nothing compared")
  note "SKIPPED  $name ($counts; $why)"
else
  passed=$((passed + 1))
  note "PASSED   $name ($counts)"
fi

# The benches share what is left: cuda_bench half of it (a wall clock for its own rows,
# leaving 20 s for its exit), then bench_verl.py the rest.
bench_s=$(( (deadline - SECONDS) / 2 ))
((bench_s < 60)) && bench_s=60
# shellcheck disable=SC2086  # BENCH_ARGS is a flag list on purpose
step "$bench_s" bench "$bin/cuda_bench" --json "$out/bench.json" --budget-s $((bench_s - 20)) ${BENCH_ARGS:-}
# The JSON is one line; its top-level "status" is written last.
bench_status=$(grep -o '"status":"[a-z]*"' "$out/bench.json" 2>/dev/null | tail -1 | cut -d'"' -f4)
[[ $rc -eq 0 ]] || bench_status="error"
echo "----- bench.log"
cat "$out/bench.log"
echo "-----"
note "bench: ${bench_status:-error} (exit $rc; bench.json, bench.log)"

# verl's own functions on the same GPU, from the bundled wheel (bench_verl.py stubs the
# packages verl imports that the machine lacks and says which). Needs python3 + torch.
verl_s=$((deadline - SECONDS))
((verl_s < 60)) && verl_s=60
verl_status="skipped"
wheel=$(ls "$here"/wheels/verl-*.whl 2>/dev/null | head -1)
if ! command -v python3 >/dev/null || ! python3 -c "import torch" >/dev/null 2>&1; then
  echo "bench_verl: skipped: no python3 with torch" >"$out/bench_verl.log"
elif [[ -z "$wheel" ]]; then
  echo "bench_verl: skipped: no verl wheel in the bundle" >"$out/bench_verl.log"
else
  # shellcheck disable=SC2086  # BENCH_VERL_ARGS is a flag list on purpose
  step "$verl_s" bench_verl python3 "$here/py/bench_verl.py" --verl-wheel "$wheel" --json "$out/bench_verl.json" \
    --device cuda --budget-s $((verl_s - 45)) ${BENCH_VERL_ARGS:-}
  verl_status=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["status"])' \
    "$out/bench_verl.json" 2>/dev/null || echo error)
  [[ $rc -eq 0 ]] || verl_status="error (exit $rc)"
fi
echo "----- bench_verl.log"
tail -n 80 "$out/bench_verl.log"
echo "-----"
note "bench_verl: $verl_status (bench_verl.json, bench_verl.log)"
if command -v python3 >/dev/null; then
  python3 "$here/py/ratio_table.py" --cuda "$out/bench.json" --verl "$out/bench_verl.json" --out "$out/ratio_table.md" \
    >"$out/ratio_table.log" 2>&1 && cat "$out/ratio_table.md"
fi

summary="SUMMARY: $passed passed, $failed failed, $skipped skipped (test binaries); bench: ${bench_status:-error}"
summary+="; bench_verl: $verl_status"
[[ $bundle_ok -eq 1 ]] || summary+="; bundle: CORRUPT"
printf '%s\n' "${lines[@]}" "$summary" >"$out/summary.txt"
echo "$summary"
[[ $failed -eq 0 && "${bench_status:-error}" != "error" && $bundle_ok -eq 1 ]]
RUN_SH
chmod +x "$bundle/run.sh"

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
