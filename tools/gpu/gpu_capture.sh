#!/usr/bin/env bash
# tools/gpu/gpu_capture.sh: capture verl 0.9.1's float32 goldens on a GPU (capture.py --device
# cuda), for the CPU-to-GPU drift report. A sibling of tools/gpu/gpu_check.sh: the device
# machine has python3 with torch, numpy and h5py but neither verl nor a registry, so the
# capture's own Python files travel with verl and the few packages its algorithm modules
# import as wheels (tools/gpu/gpu_capture_boot.py unpacks them; Ray is stubbed, see there).
# Nothing is compiled: no bazel, no CUDA toolkit needed here.
#
# The device command (the device tool copies the working tree plus the carried paths and
# runs one command in the repository root with $OUT as the folder that comes back):
#
#     tools/gpu/gpu_capture.sh --build-only gpu-capture-bundle      # here
#     carry: ["gpu-capture-bundle"]    command: bash gpu-capture-bundle/run.sh "$OUT"
#
# run.sh captures the catalogue's float32 cases twice with the machine's own torch: on the
# GPU (--device cuda) and, as the baseline that tells the device apart from the machine,
# on that machine's CPU (--device cpu). It writes into OUT_DIR (the device tool brings
# back at most 8 files, so each set travels as one tarball):
#   env.log                 nvidia-smi, python3, torch and its CUDA, the bundle manifest
#   capture_cuda.log, capture_cpu.log  (with --other-version: an error verl raises on one
#                           device only is recorded in its case and listed as a departure)
#   verl-0.9.1-cuda.tar.gz  the GPU set (fixtures/README.md: root attributes device=cuda,
#                           device_name, device_capability, cuda_version, cuda_driver_version)
#   verl-0.9.1-cpu.tar.gz   the same machine's CPU set
#   summary.txt             its last line: SUMMARY: cuda S; cpu S
# and exits 1 when a capture failed or the bundle is corrupt. Back here:
#
#     tar -xzf OUT/verl-0.9.1-cuda.tar.gz -C /tmp && mv /tmp/verl-0.9.1-cuda fixtures/verl-0.9.1-cuda-h200
#     bazel run //tools:conform -- drift fixtures/verl-0.9.1-torch-2.11.0 fixtures/verl-0.9.1-cuda-h200 \
#         --report docs/drift-cpu-to-h200.md
#
# (the GPU machine's torch is 2.11.0, the torch of fixtures/verl-0.9.1-torch-2.11.0; check
# env.log, and pick the CPU set of the same torch), plus a drift of the two tarballs
# against each other for the reading (device alone, same machine and torch). Then add
# ("drift_gpu_report_test", "drift-cpu-to-h200.md", "verl-0.9.1-torch-2.11.0",
# "verl-0.9.1-cuda-h200") to the report list in properties/BUILD.bazel and the report to
# docs/BUILD.bazel's exports_files, so that a test regenerates it.
#
# Usage:
#   tools/gpu/gpu_capture.sh --build-only BUNDLE_DIR    assemble the bundle
#   tools/gpu/gpu_capture.sh --dry [BUNDLE_DIR] OUT_DIR assemble (default gpu-capture-bundle/),
#                                                   then run it here on the CPU only, with the
#                                                   GPU machine's missing packages hidden
#   BUNDLE_DIR/run.sh OUT_DIR                       run a bundle (the GPU machine)
# Environment: PYTHON (the interpreter of --dry: one with torch, numpy and h5py, e.g.
# .venv-torch-2.11/bin/python); VERL_WHEEL_DIR (default ~/.cache/verlconf/wheels, where the
# wheels are downloaded once); GPU_CAPTURE_DEADLINE (seconds for run.sh, default 400).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
say() { echo "gpu_capture: $*"; }
die() { echo "gpu_capture: ERROR: $*" >&2; exit 2; }
usage() { sed -n '/^# Usage:/,/^# Environment/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

build_only=0 dry=0
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-only) build_only=1; shift ;;
    --dry) dry=1; shift ;;
    -h|--help) usage ;;
    -*) die "unknown option '$1'" ;;
    *) args+=("$1"); shift ;;
  esac
done
[[ $((build_only + dry)) -eq 1 ]] || usage
if [[ $build_only -eq 1 ]]; then
  [[ ${#args[@]} -eq 1 ]] || usage
  bundle="${args[0]}" out=""
else
  case ${#args[@]} in
    1) bundle="$repo/gpu-capture-bundle" out="${args[0]}" ;;
    2) bundle="${args[0]}" out="${args[1]}" ;;
    *) usage ;;
  esac
fi
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
bundle="$(abspath "$bundle")"
[[ -z "$out" ]] || out="$(abspath "$out")"
cd "$repo"

# ---------------------------------------------------------------------------- wheels
# Exact pins of the capture environment (fixtures/capture/capture-requirements-torch-2.11.0.txt:
# the GPU machine's torch is 2.11.0) for the packages the machine lacks. The two with
# compiled code come for CPython 3.11 (a --dry run here) and 3.12 (the GPU machine).
req="$repo/fixtures/capture/capture-requirements-torch-2.11.0.txt"
pin() { grep -i "^$1==" "$req" | head -1 | cut -d= -f3; }
pure=("verl==0.9.1" "omegaconf==$(pin omegaconf)" "codetiming==$(pin codetiming)" "pyvers==$(pin pyvers)")
compiled=("tensordict==$(pin tensordict)" "orjson==$(pin orjson)")
for p in "${pure[@]}" "${compiled[@]}"; do [[ "$p" != *== ]] || die "no pin for ${p%==} in $req"; done
wheels="${VERL_WHEEL_DIR:-$HOME/.cache/verlconf/wheels}"
mkdir -p "$wheels"
have() { ls "$wheels"/"$(echo "${1%%==*}" | tr - _)"-"${1##*==}"-"$2"*.whl >/dev/null 2>&1; }
for p in "${pure[@]}"; do
  have "$p" py3 || { say "downloading $p into $wheels"; python3 -m pip download -q --disable-pip-version-check \
    --no-deps --only-binary=:all: "$p" -d "$wheels"; }
done
for p in "${compiled[@]}"; do
  for py in 3.11 3.12; do
    have "$p" "cp${py/./}" || { say "downloading $p (CPython $py) into $wheels"; python3 -m pip download -q \
      --disable-pip-version-check --no-deps --only-binary=:all: --python-version "$py" --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      "$p" -d "$wheels"; }
  done
done

# ---------------------------------------------------------------------------- bundle
marker=".verlconf-gpu-capture-bundle"
if [[ -e "$bundle" ]]; then
  # Only ever delete what this script made.
  [[ -d "$bundle" ]] || die "$bundle exists and is not a directory"
  if [[ -n "$(ls -A "$bundle")" && ! -e "$bundle/$marker" ]]; then
    die "$bundle is not empty and is not a gpu_capture bundle; refusing to overwrite it"
  fi
  rm -rf "$bundle"
fi
mkdir -p "$bundle/repo/tools/adapters" "$bundle/repo/tools/python/verlconf" "$bundle/repo/fixtures/capture" "$bundle/repo/fixtures/catalogue" \
  "$bundle/repo/tools/gpu" "$bundle/repo/tools/bench" "$bundle/wheels"
touch "$bundle/$marker"
# The capture's files keep their repository paths: capture_script_sha256 hashes them by
# those paths, so the GPU set's hash names the same scripts as a capture here.
cp fixtures/capture.py fixtures/spec.json "$bundle/repo/fixtures/"
cp fixtures/capture/capture.py "$bundle/repo/fixtures/capture/"
cp tools/python/verlconf_harness.py "$bundle/repo/tools/python/"
cp tools/python/verlconf/*.py "$bundle/repo/tools/python/verlconf/"
cp fixtures/catalogue/*.py "$bundle/repo/fixtures/catalogue/"
cp tools/adapters/verl_adapter.py tools/adapters/verl_keys.py "$bundle/repo/tools/adapters/"
cp tools/gpu/gpu_capture_boot.py "$bundle/repo/tools/gpu/"
cp tools/bench/bench_verl.py "$bundle/repo/tools/bench/"
for p in "${pure[@]}"; do cp "$wheels"/"$(echo "${p%%==*}" | tr - _)"-"${p##*==}"-py3*.whl "$bundle/wheels/"; done
for p in "${compiled[@]}"; do cp "$wheels"/"$(echo "${p%%==*}" | tr - _)"-"${p##*==}"-cp3{11,12}*.whl "$bundle/wheels/"; done

{
  echo "verlconf GPU capture bundle (tools/gpu/gpu_capture.sh)"
  echo "built_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "git: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (+ uncommitted changes)')"
  echo "device command: bash $(basename "$bundle")/run.sh \"\$OUT\"   (carry: [\"$(basename "$bundle")\"])"
  echo
  echo "files:"
  (cd "$bundle" && find repo wheels -type f | sort | xargs sha256sum)
} >"$bundle/MANIFEST.txt"

cat >"$bundle/run.sh" <<'RUN_SH'
#!/usr/bin/env bash
# Runs the verlconf GPU capture bundle (made by tools/gpu/gpu_capture.sh).
#   usage: run.sh OUT_DIR      (RUN_DEVICES="cpu" for a run without a GPU: tools/gpu/gpu_capture.sh --dry)
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[[ $# -eq 1 ]] || { echo "usage: run.sh OUT_DIR" >&2; exit 2; }
mkdir -p "$1" || exit 2
out="$(cd "$1" && pwd)"
deadline=$((SECONDS + ${GPU_CAPTURE_DEADLINE:-400}))
py="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1
rm -f "$out"/env.log "$out"/summary.txt "$out"/capture_*.log "$out"/verl-0.9.1-*.tar.gz

ok=1
if ! (cd "$here" && sed -n '/^files:$/,$p' MANIFEST.txt | tail -n +2 | sha256sum -c --quiet) >"$out/bundle_check.log" 2>&1; then
  ok=0
  echo "FAILED   bundle integrity (see bundle_check.log)"
  cat "$out/bundle_check.log"
fi
{
  echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -a)"
  if command -v nvidia-smi >/dev/null; then timeout 30 nvidia-smi 2>&1; else echo "nvidia-smi: not found"; fi
  echo
  echo "python: $(command -v "$py") $("$py" --version 2>&1)"
  timeout 60 "$py" -c 'import torch, numpy, h5py; print("torch", torch.__version__, "cuda", torch.version.cuda,
"available", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "");
print("numpy", numpy.__version__, "h5py", h5py.__version__)' 2>&1
  echo
  cat "$here/MANIFEST.txt"
} >"$out/env.log" 2>&1
sed -n '1,30p' "$out/env.log"

work="$(mktemp -d)"
lines=()
for dev in ${RUN_DEVICES:-cuda cpu}; do
  name="verl-0.9.1-$dev"
  left=$((deadline - SECONDS))
  ((left < 30)) && left=30
  rc=0
  # shellcheck disable=SC2086  # BARE is a flag list on purpose
  # --other-version: where verl raises on this device but not on the CPU (or the reverse),
  # the error is recorded in the case and listed as a departure, not a failed capture.
  timeout -k 10 "$left" "$py" "$here/repo/tools/gpu/gpu_capture_boot.py" --wheels "$here/wheels" ${BARE:-} -- \
    --out "$work/$name" --device "$dev" --dtype float32 --other-version >"$out/capture_$dev.log" 2>&1 || rc=$?
  tail -n 25 "$out/capture_$dev.log"
  departs=$(grep -c "departs from the catalogue" "$out/capture_$dev.log" || true)
  # What was written comes back even from a failed capture: its log says what failed.
  [[ -d "$work/$name" ]] && tar -C "$work" -czf "$out/$name.tar.gz" "$name"
  if [[ $rc -eq 0 ]]; then
    lines+=("$dev ok ($(du -h "$out/$name.tar.gz" | cut -f1); $departs departure(s) from the catalogue)")
  else
    ok=0
    lines+=("$dev FAILED (exit $rc; capture_$dev.log)")
  fi
done
summary="SUMMARY: $(IFS=';'; echo "${lines[*]}")"
[[ $ok -eq 1 ]] || summary+="; FAILED"
printf '%s\n' "$summary" >"$out/summary.txt"
echo "$summary"
[[ $ok -eq 1 ]]
RUN_SH
chmod +x "$bundle/run.sh"

bytes="$(du -sb "$bundle" | cut -f1)"
[[ $bytes -lt $((16 * 1024 * 1024)) ]] || die "bundle is $((bytes / 1024)) KiB; keep it well under the 64 MiB a device call carries"
say "bundle ready: $bundle ($(du -sh "$bundle" | cut -f1))"
# The device call carries the working tree too (every tracked file, the golden sets
# included) within the same 64 MiB.
if tree="$("$repo/tools/gpu/tree_budget.sh" --bytes)" && [[ -n "$tree" ]]; then
  total=$((tree + bytes))
  say "working tree $((tree / 1024 / 1024)) MiB + bundle = $((total / 1024 / 1024)) MiB of the 64 MiB a device call carries"
  [[ $total -lt $((64 * 1024 * 1024)) ]] || die "tree and bundle together exceed what a device call carries"
fi
if [[ $build_only -eq 1 ]]; then
  say "device command (repo root, carry [\"$(basename "$bundle")\"]): bash $(basename "$bundle")/run.sh \"\$OUT\""
  exit 0
fi
# --dry: the bundle as the GPU machine would run it, on this CPU, with what that machine
# lacks hidden (gpu_capture_boot.py --simulate-bare).
[[ -n "${PYTHON:-}" ]] || die "--dry needs PYTHON=<an interpreter with torch, numpy and h5py>"
say "dry run: $bundle/run.sh $out (CPU only, simulate-bare)"
RUN_DEVICES=cpu BARE=--simulate-bare exec "$bundle/run.sh" "$out"
