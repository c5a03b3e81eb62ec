#!/usr/bin/env bash
# The GPU bundle's runner: tools/gpu/gpu_check.sh copies this file into the bundle as
# run.sh. It runs every test binary, conform --impl cuda against the tree's goldens, conform
# explore --impl cuda over a few seeds, compute-sanitizer's memcheck over a share of the
# goldens (where compute-sanitizer is on PATH) and the two benchmarks.
#   usage: run.sh OUT_DIR
#
# The device tool brings back at most 8 files from OUT_DIR, so every log, JUnit XML and
# JSON goes into one archive, gpu-check.tar.gz (refreshed after each step, so a run cut
# short still returns what it had), beside summary.txt; ratio_table.md, bench.json and
# bench_verl.json are also left outside, as long as OUT_DIR stays within 8 files.
# Plain bash + coreutils + tar: the GPU machine may have nothing else.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[[ $# -eq 1 ]] || { echo "usage: run.sh OUT_DIR" >&2; exit 2; }
mkdir -p "$1" || exit 2
out="$(cd "$1" && pwd)"
deadline=$((SECONDS + ${GPU_CHECK_DEADLINE:-470}))
max_files=8
archive=gpu-check.tar.gz
key_files=(ratio_table.md bench.json bench_verl.json)
export GTEST_COLOR=no
# What this runner leaves in OUT_DIR, and what earlier runners left there one file each.
rm -f "$out/$archive" "$out/summary.txt" "${key_files[@]/#/$out/}"
for n in env bundle_check third_party_cuda_test cuda_impl_kl_kl_penalty_kernel_test tools_gpu_cuda_test \
  conform_cuda bench bench_verl ratio_table; do
  rm -f "$out/$n.log" "$out/$n.xml" "$out/$n.json"
done

# Every log is written here and travels in the archive.
stage="$(mktemp -d)"
logs="$stage/gpu-check"
mkdir -p "$logs"
lines=()
summary=""

# The archive and summary.txt as they stand: written beside and then moved, so OUT_DIR
# never holds a half-written archive.
pack() {
  printf '%s\n' "${lines[@]}" ${summary:+"$summary"} >"$logs/summary.txt"
  cp "$logs/summary.txt" "$out/summary.txt"
  tar -C "$stage" -czf "$stage/$archive" gpu-check && mv -f "$stage/$archive" "$out/$archive"
}

# A bundle that arrived incomplete would quietly check fewer goldens.
bundle_ok=1
if ! (cd "$here" && sed -n '/^files:$/,$p' MANIFEST.txt | tail -n +2 | sha256sum -c --quiet) >"$logs/bundle_check.log" 2>&1; then
  bundle_ok=0
  echo "FAILED   bundle integrity (sha256 of MANIFEST.txt's files; see bundle_check.log)"
  cat "$logs/bundle_check.log"
fi

goldens="$here/$(cat "$here/goldens.path" 2>/dev/null)"
[[ -d "$goldens" ]] || { echo "FAILED   no goldens at $goldens (goldens.path)"; bundle_ok=0; }
# The device tests find the goldens as the tree's fixtures/ from the tree's root.
cd "$goldens/../.." || exit 2
bin="$(mktemp -d)/bin"
tar -xzf "$here/bin.tar.gz" -C "$(dirname "$bin")" || { echo "FAILED   unpacking bin.tar.gz"; bundle_ok=0; }

sanitizer="$(command -v compute-sanitizer || true)"

{
  echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -a)"
  echo "glibc: $(ldd --version 2>&1 | head -1)"
  echo "compute-sanitizer: ${sanitizer:-not found}"
  if command -v nvidia-smi >/dev/null; then
    timeout 30 nvidia-smi 2>&1
  else
    echo "nvidia-smi: not found"
  fi
  echo
  cat "$here/MANIFEST.txt"
} >"$logs/env.log" 2>&1
pack

passed=0 failed=0 skipped=0
note() { lines+=("$1"); echo "$1"; }

# The least time each later step needs (seconds): a step never takes what they need.
read -r -a explore_seeds <<<"${GPU_CHECK_EXPLORE_SEEDS:-1 2 3}"
min_test=30 min_conform=40 min_seed=20 min_bench=60 min_verl=60
min_memcheck=0
[[ -n "$sanitizer" ]] && min_memcheck=30
min_explore=$((min_seed * ${#explore_seeds[@]}))

# Seconds a step may take: at most its cap, and never the time the later steps need
# (their minimums, the second argument) out of what is left before the deadline.
allowance() {
  local cap="$1" left=$((deadline - SECONDS - $2))
  ((left < cap)) && cap=$left
  ((cap < 10)) && cap=10
  echo "$cap"
}

# Runs one step under a timeout of $1 seconds; stdout+stderr to <logs>/<name>.log; sets $rc.
step() {
  local limit="$1" name="$2"; shift 2
  rc=0
  timeout -k 10 "$limit" "$@" >"$logs/$name.log" 2>&1 || rc=$?
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then echo "(timed out after ${limit}s)" >>"$logs/$name.log"; fi
}

show_tail() { echo "----- last lines of $1.log"; tail -n 30 "$logs/$1.log"; echo "-----"; }

tests=(third_party_cuda_test cuda_impl_kl_kl_penalty_kernel_test tools_gpu_cuda_test)
for k in "${!tests[@]}"; do
  name="${tests[$k]}"
  later_tests=$(( (${#tests[@]} - k - 1) * min_test ))
  step "$(allowance 120 $((later_tests + min_conform + min_explore + min_memcheck + min_bench + min_verl)))" \
    "$name" "$bin/$name" --gtest_output="xml:$logs/$name.xml"
  total=0 skip=0
  if [[ -f "$logs/$name.xml" ]]; then
    total=$(grep -c '<testcase ' "$logs/$name.xml" || true)
    skip=$(grep -c 'result="skipped"' "$logs/$name.xml" || true)
  fi
  if [[ $rc -ne 0 || ! -f "$logs/$name.xml" ]]; then
    failed=$((failed + 1))
    note "FAILED   $name (exit $rc; see $name.log)"
    show_tail "$name"
  elif [[ $skip -gt 0 ]]; then
    skipped=$((skipped + 1))
    why=$(grep -m1 -A1 ': Skipped$' "$logs/$name.log" | tail -1)
    note "SKIPPED  $name ($skip of $total tests skipped: $why)"
  else
    passed=$((passed + 1))
    note "PASSED   $name ($total tests)"
  fi
  pack
done

# conform prints "N cases: P passed, F failed, M mistrusted, U unsupported, S skipped".
# Functions without a CUDA entry are UNSUPPORTED by design; they do not fail the step.
# The CUDA implementation computes in float32 only, so every float64 golden is SKIPPED by
# design (its JUnit message says so): the step is judged on the float32 cases, and only a
# skip for another reason (no device) makes it skipped. Exit 4: nothing compared.
name=conform_cuda
step "$(allowance 90 $((min_explore + min_memcheck + min_bench + min_verl)))" "$name" \
  "$bin/conform" check --impl cuda --against "$goldens" --junit "$logs/$name.xml"
counts=$(grep -E '^[0-9]+ cases: ' "$logs/$name.log" | tail -1)
c_pass=$(sed -n 's/.* \([0-9]*\) passed.*/\1/p' <<<"$counts")
c_skip=$(sed -n 's/.* \([0-9]*\) skipped.*/\1/p' <<<"$counts")
by_design=$(grep -o 'computes in float32 only; float64 cases are not compared' "$logs/$name.xml" 2>/dev/null | wc -l)
other_skips=$((${c_skip:-0} - by_design))
why=$(grep -m1 '^CUDA: ' "$logs/$name.log" || echo "nothing compared")
if [[ $rc -eq 4 ]]; then
  skipped=$((skipped + 1))
  note "SKIPPED  $name ($counts; $why)"
elif [[ $rc -ne 0 || -z "$counts" ]]; then
  failed=$((failed + 1))
  note "FAILED   $name (exit $rc; $counts)"
  show_tail "$name"
elif [[ $other_skips -gt 0 || "${c_pass:-0}" -eq 0 ]]; then
  skipped=$((skipped + 1))
  note "SKIPPED  $name ($counts; $other_skips float32 case(s) skipped: $why)"
else
  passed=$((passed + 1))
  note "PASSED   $name ($counts; the $by_design float64 cases are not compared by design)"
fi
pack

# explore: generated cases on the device against the oracle, a few seeds, each difference
# shrunk and kept as a replayable case under explore_seed<S>/. A difference is a finding
# reported here (and in the archive), not a failure of the check; an error is.
explore_cases=${GPU_CHECK_EXPLORE_CASES:-20}
explore_diffs=0 explore_done=() explore_status="" explore_failed=0
for k in "${!explore_seeds[@]}"; do
  s="${explore_seeds[$k]}"
  later_seeds=$(( (${#explore_seeds[@]} - k - 1) * min_seed ))
  step "$(allowance 40 $((later_seeds + min_memcheck + min_bench + min_verl)))" "explore_seed$s" \
    "$bin/conform" explore --impl cuda --seed "$s" --cases "$explore_cases" --shrink-seconds 5 \
    --out "$logs/explore_seed$s"
  case $rc in
    0) explore_done+=("$s") ;;
    1)
      explore_done+=("$s")
      n=$(sed -n 's/^\([0-9]*\) difference(s), each shrunk.*/\1/p' "$logs/explore_seed$s.log" | tail -1)
      explore_diffs=$((explore_diffs + ${n:-1}))
      ;;
    4) explore_status="skipped ($(grep -m1 '^CUDA: ' "$logs/explore_seed$s.log" || echo "nothing compared"))"; break ;;
    124 | 137) explore_status="seed $s timed out"; break ;;
    *)
      explore_status="error (seed $s: exit $rc; explore_seed$s.log)"
      explore_failed=1
      show_tail "explore_seed$s"
      break
      ;;
  esac
  pack
done
if [[ -z "$explore_status" || ${#explore_done[@]} -gt 0 ]]; then
  done_text="seeds $(IFS=,; echo "${explore_done[*]:-none}") x $explore_cases cases per function"
  explore_status="$explore_diffs difference(s) ($done_text)${explore_status:+; $explore_status}"
fi
note "explore: $explore_status"
pack

# memcheck: compute-sanitizer over the float32 goldens of a few families (the device code
# of every family runs under check; all of them would not fit the deadline).
memcheck_only=${GPU_CHECK_MEMCHECK_ONLY:-policy_loss,rollout_correction,advantage}
memcheck_status="skipped (no compute-sanitizer on PATH)"
memcheck_failed=0
if [[ -n "$sanitizer" ]]; then
  step "$(allowance 100 $((min_bench + min_verl)))" memcheck "$sanitizer" --tool memcheck \
    "$bin/conform" check --impl cuda --against "$goldens" --only "$memcheck_only"
  errors=$(sed -n 's/^========= ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$logs/memcheck.log" | tail -1)
  m_counts=$(grep -E '^[0-9]+ cases: ' "$logs/memcheck.log" | tail -1 | cut -d';' -f1)
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    reports=$(grep -cE '^========= (Invalid|Program hit|Error|Leaked|Race|Uninitialized)' "$logs/memcheck.log" || true)
    memcheck_status="timed out ($reports error report(s) before; --only $memcheck_only)"
    [[ $reports -gt 0 ]] && memcheck_failed=1
  elif [[ -z "$errors" ]]; then
    memcheck_status="error (exit $rc, no ERROR SUMMARY; memcheck.log)"
    memcheck_failed=1
    show_tail memcheck
  elif [[ $errors -gt 0 ]]; then
    memcheck_status="$errors error(s) ($m_counts; --only $memcheck_only)"
    memcheck_failed=1
    show_tail memcheck
  elif [[ $rc -eq 4 ]]; then
    memcheck_status="skipped ($(grep -m1 '^CUDA: ' "$logs/memcheck.log" || echo "nothing compared"))"
  else
    memcheck_status="0 errors ($m_counts; --only $memcheck_only)"
  fi
fi
note "memcheck: $memcheck_status"
pack

# The benches share what is left: cuda_bench half of it (a wall clock for its own rows,
# leaving 20 s for its exit), then bench_verl.py the rest.
bench_s=$(( (deadline - SECONDS) / 2 ))
((bench_s < min_bench)) && bench_s=$min_bench
# shellcheck disable=SC2086  # BENCH_ARGS is a flag list on purpose
step "$bench_s" bench "$bin/cuda_bench" --json "$logs/bench.json" --budget-s $((bench_s - 20)) ${BENCH_ARGS:-}
# The JSON is one line; its top-level "status" is written last.
bench_status=$(grep -o '"status":"[a-z]*"' "$logs/bench.json" 2>/dev/null | tail -1 | cut -d'"' -f4)
[[ $rc -eq 0 ]] || bench_status="error"
echo "----- bench.log"
cat "$logs/bench.log"
echo "-----"
note "bench: ${bench_status:-error} (exit $rc; bench.json, bench.log)"
pack

# verl's own functions on the same GPU, from the bundled wheel (bench_verl.py stubs the
# packages verl imports that the machine lacks and says which). Needs python3 + torch.
verl_s=$((deadline - SECONDS))
((verl_s < min_verl)) && verl_s=$min_verl
verl_status="skipped"
wheel=$(ls "$here"/wheels/verl-*.whl 2>/dev/null | head -1)
if ! command -v python3 >/dev/null || ! python3 -c "import torch" >/dev/null 2>&1; then
  echo "bench_verl: skipped: no python3 with torch" >"$logs/bench_verl.log"
elif [[ -z "$wheel" ]]; then
  echo "bench_verl: skipped: no verl wheel in the bundle" >"$logs/bench_verl.log"
else
  # shellcheck disable=SC2086  # BENCH_VERL_ARGS is a flag list on purpose
  step "$verl_s" bench_verl python3 "$here/py/bench_verl.py" --verl-wheel "$wheel" --json "$logs/bench_verl.json" \
    --device cuda --budget-s $((verl_s - 45)) ${BENCH_VERL_ARGS:-}
  verl_status=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["status"])' \
    "$logs/bench_verl.json" 2>/dev/null || echo error)
  [[ $rc -eq 0 ]] || verl_status="error (exit $rc)"
fi
echo "----- bench_verl.log"
tail -n 80 "$logs/bench_verl.log"
echo "-----"
note "bench_verl: $verl_status (bench_verl.json, bench_verl.log)"
if command -v python3 >/dev/null; then
  python3 "$here/py/ratio_table.py" --cuda "$logs/bench.json" --verl "$logs/bench_verl.json" \
    --out "$logs/ratio_table.md" >"$logs/ratio_table.log" 2>&1 && cat "$logs/ratio_table.md"
fi

summary="SUMMARY: $passed passed, $failed failed, $skipped skipped (test binaries); explore: $explore_status"
summary+="; memcheck: $memcheck_status; bench: ${bench_status:-error}; bench_verl: $verl_status"
[[ $bundle_ok -eq 1 ]] || summary+="; bundle: CORRUPT"
pack
# The key files beside the archive, while OUT_DIR stays within what comes back.
for f in "${key_files[@]}"; do
  [[ -f "$logs/$f" ]] || continue
  [[ $(find "$out" -type f | wc -l) -lt $max_files ]] || break
  cp "$logs/$f" "$out/$f"
done
rm -rf "$stage" "$(dirname "$bin")"
echo "$summary"
echo "OUT_DIR: $(cd "$out" && find . -type f | sed 's|^\./||' | sort | paste -sd' ') (every log in $archive)"
[[ $failed -eq 0 && $explore_failed -eq 0 && $memcheck_failed -eq 0 && "${bench_status:-error}" != "error" &&
  $bundle_ok -eq 1 ]]
