#!/usr/bin/env bash
# Control run of the peer reports: verl itself (tools/adapters/verl_adapter.py) in the peers'
# torch environment, judged against its own goldens.
#
#   tools/peers/control.sh
#
# The goldens were captured with torch 2.15; the peers run on the shared torch 2.10
# (.venv-peers/torch). What verl itself does differently under that torch is a torch effect, not
# a framework difference: this run measures it, and docs/peers/README.md shows the result.
#
# 1. builds .venv-peers/verl-control: a venv that sees .venv-peers/torch through a .pth file (as
#    run.sh's framework venvs do, both through tools/peers/venv.sh) with
#    tools/peers/control-requirements.txt installed --no-deps;
# 2. runs the candidate harness with verl's adapter over fixtures/verl-0.9.1 and judges each
#    family file with `conform check --format json`;
# 3. writes tools/peers/control.json (tools/peers/make_report.py control) and regenerates
#    docs/peers/README.md.
#
# Environment: as run.sh (PEERS_PYTHON, PEERS_ENV_DIR, CONFORM, PEERS_WORK, default
# /tmp/verlconf-peers/verl-control). Exit: 0 written; 2 a step that failed (named on stderr).
set -euo pipefail

die() { echo "tools/peers/control.sh: $*" >&2; exit 2; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
[ $# -eq 0 ] || die "usage: tools/peers/control.sh (no arguments)"
REQ=tools/peers/control-requirements.txt
ADAPTER=tools/adapters/verl_adapter.py
SET=verl-0.9.1
PY=${PEERS_PYTHON:-/usr/bin/python3}
ENVS=${PEERS_ENV_DIR:-$REPO/.venv-peers}
WORK=${PEERS_WORK:-/tmp/verlconf-peers/verl-control}
BASE=$ENVS/torch
FW=$ENVS/verl-control
. tools/peers/venv.sh

# --- 1. environments (the shared torch one is run.sh's)
peers_venvs "$PY" "$BASE" "$FW" "$REQ"
"$FW/bin/python" -c 'import torch, numpy, h5py, verl' || die "$FW: torch, numpy, h5py or verl does not import"

# --- 2. harness and judge
if [ -z "${CONFORM:-}" ]; then
  bazel build --config=ci //tools:conform >&2 || die "bazel build //tools:conform failed"
  CONFORM=$REPO/bazel-bin/tools/conform
fi
[ -x "$CONFORM" ] || die "$CONFORM: not an executable conform binary"
rm -rf "$WORK"
mkdir -p "$WORK"
"$FW/bin/python" -c 'import json, sys, torch, verl; print(json.dumps({"torch": torch.__version__, "verl": verl.__version__, "python": sys.version.split()[0]}))' \
  > "$WORK/versions.json" || die "could not read the versions"
echo "== verl on fixtures/$SET under $(cat "$WORK/versions.json")"
"$FW/bin/python" tools/harness/run_candidate.py --adapter "$ADAPTER" --goldens "fixtures/$SET" --out "$WORK/$SET" \
  > "$WORK/harness.txt" 2>&1 || { cat "$WORK/harness.txt" >&2; die "harness failed"; }
tail -n 1 "$WORK/harness.txt"
jsons=()
for cand in "$WORK/$SET"/*.h5; do
  fam=$(basename "$cand" .h5)
  rc=0
  "$CONFORM" check --candidate "$cand" --against "fixtures/$SET" --format json > "$WORK/$fam.json" \
    2> "$WORK/$fam.stderr.txt" || rc=$?
  case $rc in
    0|1) jsons+=("$WORK/$fam.json") ;;
    *) cat "$WORK/$fam.stderr.txt" >&2; die "conform check exited $rc on $cand" ;;
  esac
done

# --- 3. the summary and the README that shows it
"$PY" tools/peers/make_report.py control --requirements "$REQ" --versions "$WORK/versions.json" \
  --out tools/peers/control.json "${jsons[@]}" || die "make_report.py control failed"
"$PY" tools/peers/make_report.py readme --out docs/peers/README.md || die "make_report.py readme failed"
echo "== wrote tools/peers/control.json and docs/peers/README.md"
