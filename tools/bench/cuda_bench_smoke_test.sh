#!/usr/bin/env bash
# cuda_bench on a tiny shape: exit 0 and a well-formed JSON whose status is "ok" (GPU)
# or "skipped" with a reason (no GPU); bad flags exit 2.
set -euo pipefail
bench="$1"
out="${TEST_TMPDIR:-$(mktemp -d)}"
json="$out/bench.json"

rc=0
"$bench" --batch 8 --tokens 37 --repeats 3 --warmup 1 --json "$json" >"$out/stdout" 2>&1 || rc=$?
cat "$out/stdout"
[[ $rc -eq 0 ]] || { echo "FAIL: cuda_bench exited $rc"; exit 1; }
python3 - "$json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "verlconf-cuda-bench/1", j
assert j["batch"] == 8 and j["tokens"] == 37 and j["repeats"] == 3, j
if j["status"] == "skipped":
    assert j["reason"], j
else:
    assert j["status"] == "ok", j
    assert j["spot_checks_ok"] is True, j
    names = {(r["name"], r["mode"]) for r in j["kl"]}
    for n in ("kl", "abs", "mse", "low_var_kl"):
        assert (n, "fwd") in names and (n, "fwd+grad") in names, names
    assert ("low_var_kl+", "fwd+grad") in names, names
    assert j["memory"]["no_token_matrix_temporaries"] is True, j["memory"]
print("bench JSON ok:", j["status"])
PY

rc=0
"$bench" --batch 0 >/dev/null 2>&1 || rc=$?
[[ $rc -eq 2 ]] || { echo "FAIL: --batch 0 exited $rc, want 2"; exit 1; }
rc=0
"$bench" --bogus 1 >/dev/null 2>&1 || rc=$?
[[ $rc -eq 2 ]] || { echo "FAIL: --bogus exited $rc, want 2"; exit 1; }
echo PASS
