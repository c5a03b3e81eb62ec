#!/usr/bin/env bash
# The GPU bundle's runner (tools/gpu/bundle_run.sh, run.sh in a bundle) on a bundle of
# stand-ins, as the device machine runs it: what comes back is at most 8 files (every log
# in one archive); conform_cuda is judged on the float32 goldens; explore and memcheck are
# steps of their own in the SUMMARY line; without a device every device step is skipped,
# never passed.
#   bundle_run_test.sh RUN_SH CONFORM RATIO_TABLE BENCH_VERL
# CONFORM is //tools:conform: the stand-in for the bundle's conform runs it with
# --impl cuda-host on a few functions, so the runner reads conform's real output.
set -uo pipefail
run_sh="$(realpath "$1")" conform="$(realpath "$2")" ratio_table="$(realpath "$3")" bench_verl="$(realpath "$4")"
fail() { echo "FAIL: $*"; exit 1; }
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/bundle_run.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
goldens="$PWD/fixtures/verl-0.9.1"
[[ -d "$goldens" ]] || fail "no goldens at $goldens"

# ------------------------------------------------------------------ the stand-in bundle
bundle="$tmp/gpu-bundle"
mkdir -p "$bundle/bin" "$bundle/py" "$bundle/wheels" "$tmp/path"
cp "$run_sh" "$bundle/run.sh"
cp "$ratio_table" "$bench_verl" "$bundle/py/"
realpath --relative-to="$bundle" "$goldens" >"$bundle/goldens.path"

gtest() {  # a test binary: NAME, then "skip" for one whose device tests skip
  cat >"$bundle/bin/$1" <<EOF
#!/usr/bin/env bash
xml="\${1#--gtest_output=xml:}"
if [[ "$2" == skip ]]; then
  echo "[ RUN      ] Device.Runs"; echo "x.cc:1: Skipped"; echo "no CUDA device: stand-in"
  printf '<testsuites>\n<testcase name="Runs" result="skipped"/>\n<testcase name="Host" result="completed"/>\n</testsuites>\n' >"\$xml"
else
  printf '<testsuites>\n<testcase name="A" result="completed"/>\n<testcase name="B" result="completed"/>\n</testsuites>\n' >"\$xml"
fi
EOF
}
gtest third_party_cuda_test pass
gtest cuda_impl_kl_kl_penalty_kernel_test skip
gtest tools_gpu_cuda_test pass

# conform: the real CLI on the host twin of the CUDA code (or, with NO_DEVICE=1, asked for
# --impl cuda as a machine without a GPU answers it), on a few functions in place of the
# runner's --only.
cat >"$bundle/bin/conform" <<EOF
#!/usr/bin/env bash
args=()
while [[ \$# -gt 0 ]]; do
  case "\$1" in
    --only) shift 2 ;;
    cuda) if [[ "\${NO_DEVICE:-0}" == 1 ]]; then args+=(cuda); else args+=(cuda-host); fi; shift ;;
    *) args+=("\$1"); shift ;;
  esac
done
case "\${args[0]}" in
  check) exec "$conform" "\${args[@]}" --only vanilla,k3 ;;
  explore)
    if [[ -n "\${EXPLORE_DIFFERENCES:-}" ]]; then
      echo "\$EXPLORE_DIFFERENCES difference(s), each shrunk to a minimal case (0.1 s):"
      exit 1
    fi
    exec "$conform" "\${args[@]}" --only k3 ;;
esac
exit 2
EOF
cat >"$bundle/bin/cuda_bench" <<'EOF'
#!/usr/bin/env bash
while [[ $# -gt 0 ]]; do [[ "$1" == --json ]] && json="$2"; shift; done
echo "cuda_bench: stand-in"
printf '{"schema":"verlconf-cuda-bench/2","device":{"name":"stand-in"},"shapes":[[4096,8192]],"results":[{"label":"kl/k3","family":"kl","name":"k3","rows":4096,"tokens":8192,"status":"ok","ms":0.2,"roofline_ms":0.1,"ratio_to_roofline":2.0,"meets_target":false}],"not_run_budget":[],"status":"ok"}\n' >"$json"
EOF
chmod +x "$bundle"/bin/*
tar -C "$bundle" -czf "$bundle/bin.tar.gz" bin
rm -rf "${bundle:?}/bin"
{
  echo "stand-in bundle"
  echo
  echo "files:"
  (cd "$bundle" && find bin.tar.gz goldens.path run.sh py -type f | sort | xargs sha256sum)
} >"$bundle/MANIFEST.txt"

# compute-sanitizer: runs the program and reports as the real one does.
cat >"$tmp/path/compute-sanitizer" <<'EOF'
#!/usr/bin/env bash
[[ "$1 $2" == "--tool memcheck" ]] || exit 2
shift 2
echo "========= COMPUTE-SANITIZER"
"$@"
rc=$?
echo "========= ERROR SUMMARY: ${MEMCHECK_ERRORS:-0} errors"
exit $rc
EOF
chmod +x "$tmp/path/compute-sanitizer"

run() {  # OUT_DIR, then environment assignments; sets $rc and $summary
  local o="$1"; shift
  rc=0
  env "$@" GPU_CHECK_DEADLINE=400 GPU_CHECK_EXPLORE_CASES=3 bash "$bundle/run.sh" "$o" >"$o.stdout" 2>&1 || rc=$?
  summary="$(tail -1 "$o/summary.txt" 2>/dev/null)"
}
files_in() { find "$1" -type f | wc -l; }
in_archive() { tar -tzf "$1/gpu-check.tar.gz" | sed 's|^gpu-check/||' | sort; }

# ------------------------------------------------------------------ 1. a full run
out="$tmp/out1"
mkdir -p "$out"
# What an earlier runner left there, one file per log, goes first.
touch "$out/env.log" "$out/conform_cuda.log" "$out/conform_cuda.xml" "$out/bench.log" "$out/tools_gpu_cuda_test.xml"
run "$out" PATH="$tmp/path:$PATH"
[[ $rc -eq 0 ]] || fail "full run: exit $rc: $(tail -20 "$out.stdout")"
n=$(files_in "$out")
[[ $n -le 8 ]] || fail "full run: $n files in OUT_DIR: $(ls "$out")"
for f in gpu-check.tar.gz summary.txt ratio_table.md bench.json; do
  [[ -f "$out/$f" ]] || fail "full run: no $f beside the archive: $(ls "$out")"
done
[[ ! -e "$out/env.log" && ! -e "$out/conform_cuda.xml" ]] || fail "full run: an earlier runner's files stayed: $(ls "$out")"
listed="$(in_archive "$out")"
for f in env.log bundle_check.log summary.txt third_party_cuda_test.log third_party_cuda_test.xml \
  cuda_impl_kl_kl_penalty_kernel_test.xml tools_gpu_cuda_test.xml conform_cuda.log conform_cuda.xml \
  explore_seed1.log explore_seed2.log explore_seed3.log explore_seed1/explore.json memcheck.log bench.log bench.json \
  bench_verl.log ratio_table.md; do
  grep -qx "$f" <<<"$listed" || fail "full run: $f is not in the archive: $listed"
done
grep -q "^PASSED   conform_cuda (.* passed, 0 failed.*float64 cases are not compared by design)" "$out/summary.txt" ||
  fail "full run: conform_cuda is not passed on its float32 cases: $(cat "$out/summary.txt")"
want="SUMMARY: 3 passed, 0 failed, 1 skipped (test binaries); explore: 0 difference(s) (seeds 1,2,3 x 3 cases per"
want+=" function); memcheck: 0 errors ("
[[ "$summary" == "$want"* ]] || fail "full run: summary '$summary'"
[[ "$summary" == *"--only policy_loss,rollout_correction,advantage); bench: ok; bench_verl: skipped" ]] ||
  fail "full run: summary '$summary'"
cmp -s "$out/summary.txt" <(tar -xzOf "$out/gpu-check.tar.gz" gpu-check/summary.txt) ||
  fail "full run: summary.txt differs from the archive's"

# ------------------------------------------------------------------ 2. no device
out="$tmp/out2"
run "$out" PATH="$tmp/path:$PATH" NO_DEVICE=1
[[ $rc -eq 0 ]] || fail "no device: exit $rc: $(tail -20 "$out.stdout")"
grep -q "^SKIPPED  conform_cuda (.*CUDA: " "$out/summary.txt" || fail "no device: conform_cuda: $(cat "$out/summary.txt")"
[[ "$summary" == "SUMMARY: 2 passed, 0 failed, 2 skipped (test binaries); explore: skipped (CUDA: "* ]] ||
  fail "no device: summary '$summary'"
[[ "$summary" == *"; memcheck: skipped (CUDA: "* ]] || fail "no device: summary '$summary'"
[[ $(files_in "$out") -le 8 ]] || fail "no device: $(files_in "$out") files"

# ------------------------------------------------------------------ 3. findings and the cap
# Differences are findings in the SUMMARY; a memcheck error fails the run; without
# compute-sanitizer on PATH memcheck is skipped. Files already in OUT_DIR count against
# the 8: the key files beside the archive are the first to give way.
out="$tmp/out3"
mkdir -p "$out"
for k in 1 2 3 4 5; do echo x >"$out/other$k.txt"; done
run "$out" PATH="$tmp/path:$PATH" EXPLORE_DIFFERENCES=2 MEMCHECK_ERRORS=3
[[ $rc -eq 1 ]] || fail "memcheck errors: exit $rc, want 1"
[[ "$summary" == *"; explore: 6 difference(s) (seeds 1,2,3 x 3 cases per function); memcheck: 3 error(s) ("* ]] ||
  fail "findings: summary '$summary'"
[[ $(files_in "$out") -eq 8 ]] || fail "cap: $(files_in "$out") files: $(ls "$out")"
[[ -f "$out/ratio_table.md" && ! -e "$out/bench.json" ]] || fail "cap: the key files kept: $(ls "$out")"
in_archive "$out" | grep -qx bench.json || fail "cap: bench.json is not in the archive"

out="$tmp/out4"
run "$out" PATH="/usr/bin:/bin"
[[ $rc -eq 0 ]] || fail "no sanitizer: exit $rc: $(tail -20 "$out.stdout")"
[[ "$summary" == *"; memcheck: skipped (no compute-sanitizer on PATH); bench: ok"* ]] ||
  fail "no sanitizer: summary '$summary'"
echo "PASS"
