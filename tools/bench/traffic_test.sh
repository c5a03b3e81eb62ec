#!/usr/bin/env bash
# The traffic budget, held in CI: every CUDA entry's declared bytes at the perf anchor's
# shape within 1.5x of its minimal traffic, or within the bound of its exception
# (tools/bench/traffic_budget.cc), no raw Thrust pass, no stale exception. The report is
# printed whole; its last line (the entries within 1.5x) must be the one the README shows.
set -euo pipefail
traffic="$1"
readme="$2"
out="${TEST_TMPDIR:-$(mktemp -d)}/traffic.out"
rc=0
"$traffic" >"$out" || rc=$?
cat "$out"
[[ $rc -eq 0 ]] || { echo "FAIL: an entry is over its traffic budget, not counted, or an exception is stale (above)"; exit 1; }
last="$(tail -1 "$out")"
grep -qxF "$last" "$readme" || { echo "FAIL: README.md does not show the report's last line: $last"; exit 1; }
