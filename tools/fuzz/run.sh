#!/usr/bin/env bash
# Build and run the libFuzzer target (tools/fuzz/fixture_fuzzer.cc) with clang,
# AddressSanitizer (+ LeakSanitizer) and UBSan, outside Bazel (Bazel's toolchain here is
# gcc, which has no libFuzzer).
#
#   tools/fuzz/run.sh [--seconds N] [--raw] [--jobs N]
#
# --seconds N  how long to fuzz (default 60, what CI runs)
# --raw        feed raw bytes to libhdf5's parser, seeded with the bundled goldens
#              (on demand only: libhdf5 1.10 is not hardened against hostile files)
# Prints libFuzzer's final stats line ("Done N runs in S second(s)") and exits non-zero
# on any crash, leak, timeout or escaped exception, leaving the reproducer in
# $WORK/crash-* (WORK defaults to a fresh temporary directory).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

seconds=60 raw=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --raw) raw=1; shift ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

work="${WORK:-$(mktemp -d)}"
mkdir -p "$work/corpus"
bin="$work/fixture_fuzzer"
libdir=/usr/lib/x86_64-linux-gnu
echo "fuzz: building $bin"
clang++ -std=c++17 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=undefined -I. -isystem /usr/include/hdf5/serial \
  tools/fuzz/fixture_fuzzer.cc fixtures/h5*.cc oracle/*/*.cc \
  "$libdir/libhdf5_serial.a" "$libdir/libsz.a" "$libdir/libaec.a" "$libdir/libz.a" -ldl -lm -lpthread \
  -o "$bin"

# One input per class the HDF5-level damage produces (fixture_fuzzer.cc, Damage).
cp tools/fuzz/seeds/* "$work/corpus/"
if [[ $raw -eq 1 ]]; then
  cp fixtures/verl-*/*.h5 "$work/corpus/" 2>/dev/null || true
  export VERLCONF_FUZZ_RAW=1
fi
echo "fuzz: running for ${seconds}s (corpus $work/corpus)"
cd "$work"
# -timeout: a single input taking longer than 10 s is a hang. -rss_limit_mb keeps a
# runaway allocation from taking the machine.
"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 corpus 2>&1 |
  tee "$work/fuzz.log" | grep -E "^(#[0-9]+ +(DONE|INITED)|Done|==[0-9]+==ERROR|SUMMARY|stat::number_of_executed_units)" || true
status=${PIPESTATUS[0]}
if [[ $status -ne 0 ]]; then
  echo "fuzz: FAILED (exit $status); log $work/fuzz.log"
  tail -40 "$work/fuzz.log"
  exit 1
fi
echo "fuzz: no crash, leak or hang in ${seconds}s"
