#!/usr/bin/env bash
# The traffic budget, held in CI: every CUDA entry's declared bytes at the perf anchor's
# shape within 1.5x of its minimal traffic, or within the bound of its exception
# (tools/bench/traffic_budget.cc), no raw Thrust pass, no stale exception. The report is
# printed whole; the last line counts the entries within 1.5x.
set -euo pipefail
rc=0
"$1" || rc=$?
[[ $rc -eq 0 ]] || { echo "FAIL: an entry is over its traffic budget, not counted, or an exception is stale (above)"; exit 1; }
