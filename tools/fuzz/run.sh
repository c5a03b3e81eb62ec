#!/usr/bin/env bash
# Build and run the libFuzzer target (tools/fuzz/fixture_fuzzer.cc) with clang,
# AddressSanitizer (+ LeakSanitizer) and UBSan, outside Bazel (Bazel's toolchain here is
# gcc, which has no libFuzzer).
#
#   tools/fuzz/run.sh [--seconds N] [--raw] [--jobs N]
#
# --seconds N  how long to fuzz (default 60, what CI runs)
# --raw        feed every input to libhdf5's parser as raw bytes, seeded with the bundled
#              goldens as well (on demand: they are large and slow to mutate). Without it
#              the corpus still holds small raw files (tools/fuzz/seeds/1[01]_*), each a
#              single flipped bit that crashes libhdf5 1.10, read as conform reads every
#              file: in a child process.
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
# build OUT SOURCE...: a libFuzzer binary with ASan and UBSan (any finding aborts).
build() {
  local out="$1"
  shift
  echo "fuzz: building $out"
  clang++ -std=c++17 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I. -isystem /usr/include/hdf5/serial "$@" -ldl -lm -lpthread -o "$out"
}

# fuzz WHAT BIN CORPUS SECONDS MAX_LEN LOG: run from $work, print libFuzzer's summary
# lines, and exit 1 with the log's tail on any crash, leak or hang. -timeout: a single
# input taking longer than 10 s is a hang; -rss_limit_mb keeps a runaway allocation from
# taking the machine.
fuzz() {
  local what="$1" bin="$2" corpus="$3" seconds="$4" max_len="$5" log="$6"
  (cd "$work" && "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
    -print_final_stats=1 "$corpus" 2>&1) | tee "$log" |
    grep -E "^(#[0-9]+ +(DONE|INITED)|Done|==[0-9]+==ERROR|SUMMARY|stat::number_of_executed_units)" || true
  local status=${PIPESTATUS[0]}
  if [[ $status -ne 0 ]]; then
    echo "fuzz: $what FAILED (exit $status); log $log"
    tail -40 "$log"
    exit 1
  fi
  echo "fuzz: $what: no crash, leak or hang in ${seconds}s"
}

build "$bin" tools/fuzz/fixture_fuzzer.cc tools/h5/h5*.cc oracle/*.cc oracle/*/*.cc \
  "$libdir/libhdf5_serial.a" "$libdir/libsz.a" "$libdir/libaec.a" "$libdir/libz.a"

# One input per class the HDF5-level damage produces (fixture_fuzzer.cc, Damage), and
# the raw files whose one flipped bit breaks libhdf5.
cp tools/fuzz/seeds/* "$work/corpus/"
# A loop inside libhdf5 would otherwise run into libFuzzer's -timeout before the reader
# child's CPU limit (a minute) ends it.
export VERLCONF_READER_CPU_SECONDS=2

# Single flipped bits in the bundled kl.h5, replayed once each on copies made here (at
# 870 KB the file is far beyond -max_len; libFuzzer would truncate it as a corpus entry):
# the three an attack found (two double frees, one SIGSEGV inside libhdf5), and a string
# in the last global heap grown into its free space, where libhdf5's parser loops (as a
# corpus entry, nearly every mutation of it would loop too, each costing the CPU limit).
# properties/h5_structure.py locates them by structure, wherever a recapture moved them.
mkdir -p "$work/replay"
flips=$(python3 properties/h5_structure.py attack-flips fixtures/verl-0.9.1/kl.h5) || exit 1
for flip in $flips; do
  offset=${flip%:*} bit=${flip#*:}
  out="$work/replay/kl_${offset}_bit${bit}.h5"
  cp fixtures/verl-0.9.1/kl.h5 "$out"
  byte=$(od -An -tu1 -j "$offset" -N1 "$out")
  printf "$(printf '\\%03o' $((byte ^ (1 << bit))))" | dd of="$out" bs=1 seek="$offset" conv=notrunc status=none
done
echo "fuzz: replaying $(ls "$work/replay" | wc -l) damaged copies of kl.h5"
if ! "$bin" -artifact_prefix="$work/" "$work"/replay/*.h5 > "$work/replay.log" 2>&1; then
  echo "fuzz: FAILED on a damaged kl.h5; log $work/replay.log"
  tail -40 "$work/replay.log"
  exit 1
fi

if [[ $raw -eq 1 ]]; then
  cp fixtures/verl-*/*.h5 "$work/corpus/" 2>/dev/null || true
  export VERLCONF_FUZZ_RAW=1
fi
echo "fuzz: running for ${seconds}s (corpus $work/corpus)"
# -max_len: the raw seeds are 12 KB.
fuzz "fixture files" "$bin" corpus "$seconds" 16384 "$work/fuzz.log"

# What an adapter sends back (tools/fuzz/reply_fuzzer.cc): one answer line, decoded and
# combined as a sharded call's result. A fifth of the time, at least 10 s.
reply_seconds=$(( seconds / 5 > 10 ? seconds / 5 : 10 ))
reply="$work/reply_fuzzer"
build "$reply" tools/fuzz/reply_fuzzer.cc tools/explore/wire.cc tools/explore/adapter_process.cc oracle/*.cc oracle/*/*.cc
mkdir -p "$work/reply_corpus"
cp tools/fuzz/reply_seeds/* "$work/reply_corpus/"
echo "fuzz: running the adapter-reply target for ${reply_seconds}s"
fuzz "adapter replies" "$reply" reply_corpus "$reply_seconds" 4096 "$work/reply.log"
