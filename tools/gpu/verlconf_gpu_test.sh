#!/usr/bin/env bash
# The multi-call binary behaves as each program it carries, called by name or through a
# link of that name; an unknown name is a usage error.
set -uo pipefail
bin="$1"
fail() { echo "FAIL: $*"; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$bin" >"$tmp/none.txt" 2>&1; [[ $? -eq 2 ]] || fail "no program: expected exit 2"
grep -q "conform cuda_bench tools_gpu_cuda_test" "$tmp/none.txt" || fail "usage does not list the programs"
"$bin" nosuch >"$tmp/bad.txt" 2>&1; [[ $? -eq 2 ]] || fail "unknown program: expected exit 2"
grep -q "unknown program 'nosuch'" "$tmp/bad.txt" || fail "unknown program not named"

for n in conform cuda_bench tools_gpu_cuda_test; do ln -s "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" "$tmp/$n"; done

# conform: the same command line, exit codes included.
"$tmp/conform" --help >"$tmp/help.txt" 2>&1 || fail "conform --help through the link"
grep -qE "^  check  " "$tmp/help.txt" || fail "conform --help does not show the commands"
"$bin" conform check --only vanilla --against fixtures/verl-0.9.1 >"$tmp/check.txt" 2>&1 || fail "conform check (oracle) through the argument: $(cat "$tmp/check.txt")"
grep -qE '^[0-9]+ cases: [0-9]+ passed, 0 failed' "$tmp/check.txt" || fail "conform check totals: $(tail -3 "$tmp/check.txt")"
"$tmp/conform" check --impl nosuch >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "conform bad input: expected exit 2"
# explore --impl cuda with this binary's device code: on a machine without a GPU the
# reason and exit 4 (what check gives), never an internal error; with one, a run.
"$tmp/conform" explore --impl cuda --only k3 --cases 3 >"$tmp/explore.txt" 2>&1
rc=$?
if [[ $rc -eq 4 ]]; then
  grep -q "^CUDA: no CUDA device" "$tmp/explore.txt" || fail "explore --impl cuda without a device: $(cat "$tmp/explore.txt")"
else
  [[ $rc -eq 0 || $rc -eq 1 ]] || fail "explore --impl cuda: exit $rc: $(tail -3 "$tmp/explore.txt")"
fi
grep -q "internal error" "$tmp/explore.txt" && fail "explore --impl cuda: $(cat "$tmp/explore.txt")"

# cuda_bench: its usage error is its own exit 2.
"$tmp/cuda_bench" --nosuch >"$tmp/bench.txt" 2>&1; [[ $? -eq 2 ]] || fail "cuda_bench --nosuch: expected exit 2"
grep -q "cuda_bench" "$tmp/bench.txt" || fail "cuda_bench usage not shown"

# The device tests: registered and runnable (they skip without a GPU).
"$tmp/tools_gpu_cuda_test" --gtest_list_tests >"$tmp/tests.txt" 2>&1 || fail "tools_gpu_cuda_test --gtest_list_tests"
grep -q "CudaRegistry" "$tmp/tests.txt" || fail "the device tests are not linked in"
"$bin" tools_gpu_cuda_test --gtest_filter='CudaRegistry.*' >"$tmp/run.txt" 2>&1 || fail "CudaRegistry through the argument: $(tail -5 "$tmp/run.txt")"
grep -q "PASSED" "$tmp/run.txt" || fail "no PASSED line"
echo "PASS"
