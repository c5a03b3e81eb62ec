#!/usr/bin/env bash
# Conformance report of one peer RL framework against verl's goldens:
#
#   tools/peers/run.sh NAME        # NAME: a tools/adapters/peers/NAME_adapter.py
#
# 1. builds the shared torch environment .venv-peers/torch (tools/peers/torch-requirements.txt,
#    once) and the framework's own venv .venv-peers/NAME, which sees that torch through a
#    .pth file and gets tools/peers/NAME-requirements.txt installed with --no-deps (the
#    frameworks' declared dependencies are trainer stacks of many GB that their algorithm
#    modules do not import; every package is pinned in those files), through
#    tools/peers/venv.sh, which tools/peers/control.sh shares;
# 2. runs the candidate harness with that venv's python over fixtures/verl-0.9.1 and
#    fixtures/verl-0.8.0 and judges each family file with `conform check --format json`;
# 3. runs `conform explore` with the adapter (generated cases against the oracle, every
#    difference shrunk to a minimal case, sharded cases for the data-parallel rows) and keeps
#    its result, the minimal cases and the framework's results on them in the xz archive
#    docs/peers/explore/NAME.tar.xz (committed: CI replays them; the Python repros stay in
#    the scratch folder, PEERS_WORK/explore/repro);
# 4. writes docs/peers/NAME.md (tools/peers/make_report.py, with the causes stated in
#    tools/peers/causes/NAME.tsv, each naming the minimal cases that show it, the source
#    inventory in tools/peers/inventory/NAME.tsv and the trainer's per-rank normaliser in
#    tools/peers/sharding/NAME.md) and regenerates docs/peers/README.md. A registry function
#    added since the framework's last run is "not yet checked" until this step runs on results
#    that have it; make_report.py then wants its inventory row (add it first).
#
# PEERS_STEPS=report redoes step 4 only, from the previous run's results (after editing the
# causes); PEERS_STEPS=goldens redoes steps 2 and 4 and keeps the committed explore results
# (after cases joined a golden set); PEERS_EXPLORE_CASES (default 200) and PEERS_EXPLORE_DP_CASES (default 20) set
# explore's budget per function (seed 0).
#
# Heavy (torch alone is about 7 GB) and never run by CI; CI only checks the committed
# reports (docs/peers/reports_test.py).
#
# Environment: PEERS_PYTHON (the interpreter the venvs are made from, default
# /usr/bin/python3), PEERS_ENV_DIR (default .venv-peers), CONFORM (a built conform binary;
# default: bazel build --config=ci //tools:conform), PEERS_WORK (scratch, default
# /tmp/verlconf-peers/NAME).
# Exit: 0 report written; 2 bad usage or a step that failed (named on stderr).
set -euo pipefail

die() { echo "tools/peers/run.sh: $*" >&2; exit 2; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
[ $# -eq 1 ] || die "usage: tools/peers/run.sh NAME (one of: $(ls tools/adapters/peers | sed -n 's/_adapter\.py$//p' | tr '\n' ' '))"
NAME=$1
case "$NAME" in *[!a-z0-9_]*|"") die "bad framework name '$NAME'" ;; esac
ADAPTER=tools/adapters/peers/${NAME}_adapter.py
REQ=tools/peers/${NAME}-requirements.txt
CAUSES=tools/peers/causes/${NAME}.tsv
INVENTORY=tools/peers/inventory/${NAME}.tsv
for f in "$ADAPTER" "$REQ" "$CAUSES" "$INVENTORY"; do [ -f "$f" ] || die "$f: missing (no peer named '$NAME'?)"; done

PY=${PEERS_PYTHON:-/usr/bin/python3}
ENVS=${PEERS_ENV_DIR:-$REPO/.venv-peers}
WORK=${PEERS_WORK:-/tmp/verlconf-peers/$NAME}
BASE=$ENVS/torch
FW=$ENVS/$NAME
. tools/peers/venv.sh

# --- 1. environments
peers_venvs "$PY" "$BASE" "$FW" "$REQ"
"$FW/bin/python" -c 'import torch, numpy, h5py' || die "$FW: torch, numpy or h5py does not import"

STEPS=${PEERS_STEPS:-all}
case "$STEPS" in all|goldens|report) ;; *) die "PEERS_STEPS must be all, goldens or report, not '$STEPS'" ;; esac
EXPLORE_ARCHIVE=docs/peers/explore/$NAME.tar.xz
SHARDING=tools/peers/sharding/${NAME}.md

# --- 2. harness and judge, per golden set
if [ -z "${CONFORM:-}" ]; then
  bazel build --config=ci //tools:conform >&2 || die "bazel build //tools:conform failed"
  CONFORM=$REPO/bazel-bin/tools/conform
fi
[ -x "$CONFORM" ] || die "$CONFORM: not an executable conform binary"
# The report names the conform revision that judged it: a copied binary without its runfiles
# says "unknown", a build of an uncommitted tree "-dirty"; neither can be checked out again.
rev=$("$CONFORM" --version | sed -n '1s/^conform //p')
case "$rev" in ""|unknown|*-dirty) die "$CONFORM: revision '${rev}': use a conform built by bazel from a committed tree (with its runfiles)" ;; esac
if [ "$STEPS" != report ]; then
rm -rf "$WORK"
mkdir -p "$WORK"
: > "$WORK/unjudged.tsv"
"$FW/bin/pip" freeze --disable-pip-version-check > "$WORK/pip-freeze.txt"
"$FW/bin/python" --version > "$WORK/python-version.txt" 2>&1
# What the report states about versions: the shared torch as the framework's venv imports it,
# and each golden set's root attributes.
"$FW/bin/python" - "$WORK/versions.json" <<'PYEOF' || die "could not read the versions"
import glob, json, sys
import h5py, torch
out = {"torch": torch.__version__, "goldens": {}}
for s in ("verl-0.9.1", "verl-0.8.0"):
    with h5py.File(sorted(glob.glob(f"fixtures/{s}/*.h5"))[0], "r") as f:
        out["goldens"][s] = {k: str(f.attrs[k]) for k in ("verl_version", "torch_version") if k in f.attrs}
with open(sys.argv[1], "w") as f:
    json.dump(out, f)
PYEOF
for set in verl-0.9.1 verl-0.8.0; do
  echo "== $NAME on fixtures/$set"
  "$FW/bin/python" tools/harness/run_candidate.py --adapter "$ADAPTER" --goldens "fixtures/$set" \
    --out "$WORK/$set" > "$WORK/$set.harness.txt" 2>&1 \
    || { cat "$WORK/$set.harness.txt" >&2; die "harness failed on fixtures/$set"; }
  tail -n 3 "$WORK/$set.harness.txt"
  # An exception raised in the adapter itself is glue failing, never a framework difference: no
  # report is written from such a run.
  if ! grep -q ' 0 adapter errors' "$WORK/$set.harness.txt"; then
    grep 'adapter error' "$WORK/$set.harness.txt" | head -n 5 >&2
    die "the adapter raised on fixtures/$set (see $WORK/$set.harness.txt)"
  fi
  # Judged one family file at a time: a golden file that this conform refuses (a case its
  # verl's config rules reject) is then reported as not judged, not silently dropped.
  jsons=""
  for cand in "$WORK/$set"/*.h5; do
    fam=$(basename "$cand" .h5)
    rc=0
    "$CONFORM" check --candidate "$cand" --against "fixtures/$set" --format json > "$WORK/$set.$fam.json" \
      2> "$WORK/$set.$fam.stderr.txt" || rc=$?
    case $rc in
      # 1: a conformance failure, the point of the report; 4: nothing of the family compared
      # (every case declined or not provided), which the report shows as such.
      0|1|4) jsons+="${jsons:+,}$WORK/$set.$fam.json" ;;
      2) printf '%s\t%s\t%s\n' "$set" "$fam" "$(head -n 1 "$WORK/$set.$fam.stderr.txt")" >> "$WORK/unjudged.tsv" ;;
      *) cat "$WORK/$set.$fam.stderr.txt" >&2; die "conform check exited $rc on $cand" ;;
    esac
  done
  [ -n "$jsons" ] || die "conform judged no family of fixtures/$set"
  printf '%s\n' "$set=$jsons" >> "$WORK/sets.txt"
done

fi

# --- 3. explore: generated cases, shrunk differences
if [ "$STEPS" = all ]; then
echo "== $NAME: conform explore"
rc=0
"$CONFORM" explore --adapter "$ADAPTER" --python "$FW/bin/python" --seed 0 --cases "${PEERS_EXPLORE_CASES:-200}" \
  --dp-cases "${PEERS_EXPLORE_DP_CASES:-20}" --jobs 2 --out "$WORK/explore" > "$WORK/explore.txt" 2> "$WORK/explore.stderr.txt" || rc=$?
case $rc in
  0|1|4) tail -n 4 "$WORK/explore.txt" ;;
  *) tail -n 20 "$WORK/explore.stderr.txt" >&2; die "conform explore exited $rc" ;;
esac
"$PY" tools/peers/demos.py pack "$WORK/explore" "$EXPLORE_ARCHIVE" || die "could not archive $WORK/explore"
fi

[ -f "$WORK/sets.txt" ] || die "$WORK/sets.txt: no earlier run to report from (run with PEERS_STEPS=all)"
mapfile -t sets < "$WORK/sets.txt"

# --- 4. the report and the cross-framework matrix
"$PY" tools/peers/make_report.py report --name "$NAME" --adapter "$ADAPTER" --requirements "$REQ" \
  --causes "$CAUSES" --inventory "$INVENTORY" --unjudged "$WORK/unjudged.tsv" --versions "$WORK/versions.json" --freeze "$WORK/pip-freeze.txt" --python "$(cat "$WORK/python-version.txt")" \
  --explore "$EXPLORE_ARCHIVE" --sharding "$SHARDING" --out "docs/peers/$NAME.md" "${sets[@]}" || die "make_report.py report failed"
"$PY" tools/peers/make_report.py readme --out docs/peers/README.md || die "make_report.py readme failed"
echo "== wrote docs/peers/$NAME.md and docs/peers/README.md"
