#!/usr/bin/env bash
# cuda_bench end to end on tiny shapes. Through the host system (no GPU needed): every
# registry entry with a CUDA implementation gets a row, is judged against the oracle at
# the smallest shape, and the JSON is well formed; every row bench_verl.py (the third
# argument) times has its row under the same label, the anchor's rows first at each shape.
# On the device: exit 0 and "ok", or "skipped" with the reason where no GPU is usable. Bad
# flags exit 2.
set -euo pipefail
bench="$1"
conform="$2"
bench_verl="$3"
out="${TEST_TMPDIR:-$(mktemp -d)}"

rc=0
"$bench" --system host --shapes 3x37,8x5 --repeats 1 --warmup 0 --json "$out/host.json" >"$out/host.out" 2>&1 || rc=$?
cat "$out/host.out"
[[ $rc -eq 0 ]] || { echo "FAIL: cuda_bench --system host exited $rc"; exit 1; }
"$conform" list --json >"$out/list.json"
python3 - "$out/host.json" "$out/list.json" "$bench_verl" <<'PY'
import importlib.util, json, sys
j = json.load(open(sys.argv[1]))
listed = json.load(open(sys.argv[2]))
spec = importlib.util.spec_from_file_location("bench_verl", sys.argv[3])
bench_verl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_verl)
functions = listed["functions"] if isinstance(listed, dict) else listed
cuda = {f["family"] + "/" + f["name"] for f in functions if f.get("cuda")}
assert j["schema"] == "verlconf-cuda-bench/2" and j["system"] == "host" and j["status"] == "ok", j["status"]
rows = j["results"]
for shape in ([3, 37], [8, 5]):
    seen = {r["family"] + "/" + r["name"] for r in rows if r["rows"] == shape[0] and r["label"] == r["family"] + "/" + r["name"]}
    assert seen == cuda, ("rows at", shape, "missing", sorted(cuda - seen), "extra", sorted(seen - cuda))
for r in rows:
    assert r["status"] in ("ok", "raises", "skipped"), r
    if r["status"] == "skipped":  # no generator: the names verl only raises for
        assert r["family"] == "kl" and r["name"] in ("full", "full+"), r
        continue
    if r["status"] == "raises":  # verl's own error for these inputs, raised by the entry as by the oracle
        assert r["detail"].split(":")[0] in ("ValueError", "AssertionError", "NotImplementedError"), r
        continue
    assert r["host_wall_ms"] >= 0 and r["minimal_traffic_bytes"] > 0, r
    if r["rows"] == 8:  # the smallest shape (8 x 5 < 3 x 37) is judged against the oracle
        assert r["conformance"] in ("PASSED", "MISTRUSTED"), r
# The ratio table joins on the anchor's labels: every row bench_verl.py times has its
# cuda_bench row under the same label, and at each shape the anchor's rows come first, so
# a budget that runs out cuts the rows with no verl figure beside them.
for shape in ([3, 37], [8, 5]):
    at = [r for r in rows if r["rows"] == shape[0]]
    anchored = [(r.get("anchor") or {}).get("row") for r in at]
    assert set(anchored) - {None} == set(bench_verl.LABELS), (
        "anchor rows without a bench_verl row", sorted(set(anchored) - {None} - set(bench_verl.LABELS)),
        "bench_verl rows without a cuda_bench row", sorted(set(bench_verl.LABELS) - set(anchored)))
    first_other = anchored.index(None) if None in anchored else len(anchored)
    assert all(a is None for a in anchored[first_other:]), ("an anchor row after the others at", shape)
print("host bench JSON ok:", len(rows), "rows")
PY

rc=0
"$bench" --shapes 8x37 --repeats 3 --warmup 1 --json "$out/device.json" >"$out/device.out" 2>&1 || rc=$?
cat "$out/device.out"
[[ $rc -eq 0 ]] || { echo "FAIL: cuda_bench exited $rc"; exit 1; }
python3 - "$out/device.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
if j["status"] == "skipped":
    assert j["reason"], j
else:
    assert j["status"] == "ok", j
    assert all(r["status"] in ("ok", "raises", "skipped") for r in j["results"])
print("device bench JSON ok:", j["status"])
PY

for bad in "--shapes 0x5" "--shapes 4" "--bogus 1" "--system gpu" "--only nosuch/entry" "--json="; do
  rc=0
  # shellcheck disable=SC2086
  "$bench" --system host $bad >/dev/null 2>&1 || rc=$?
  [[ $rc -eq 2 ]] || { echo "FAIL: '$bad' exited $rc, want 2"; exit 1; }
done
echo PASS
