#!/usr/bin/env bash
# Create (or bring up to date) the Python environment that runs fixtures/capture.py:
# upstream verl 0.9.1 on CPU PyTorch, with exactly the versions that produced the
# bundled goldens (tools/capture-requirements.txt).
#
#   tools/setup_capture.sh [VENV_DIR]      default VENV_DIR: <repo>/.venv-capture
#
# Environment:
#   VERL_VERSION  the verl to install (default 0.9.1, the primary golden set). The drift
#            set uses VERL_VERSION=0.8.0 tools/setup_capture.sh .venv-verl-0.8.0: verl
#            0.8.0's algorithm modules import cleanly with the same pinned packages.
#   TORCH_VERSION  the torch to capture under (default 2.15.0, the primary set's). Another
#            version reads its own pins, tools/capture-requirements-torch-<version>.txt (the
#            same packages, with that torch and the CUDA/triton wheels it requires). The
#            torch drift set uses TORCH_VERSION=2.11.0 tools/setup_capture.sh .venv-torch-2.11
#            and holds the float32 cases only: torch 2.11.0 is the one verl 0.9.1's own
#            extras pin (cpu, fsdp, vllm, sglang, megatron), the perf anchor's and the GPU
#            machine's.
#   PYTHON   interpreter used to create the venv (default: python3; must be 3.11 or 3.12,
#            the range both verl 0.9.1 and torch 2.15 accept; Debian 12's python3 is 3.11)
#
# Idempotent: an existing venv whose installed packages already match the pins is left
# alone. verl is installed with --no-deps: its full dependency set (wandb, datasets, peft,
# tensorboard, ...) is not needed to import the algorithm modules; the extras that those
# modules do import are pinned in tools/capture-requirements.txt.
#
# Note: PyPI's Linux torch wheel depends on the CUDA runtime wheels (several GB). The
# capture itself runs on CPU only.
set -euo pipefail

VERL_VERSION="${VERL_VERSION:-0.9.1}"
TORCH_VERSION="${TORCH_VERSION:-2.15.0}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
req="$here/capture-requirements.txt"
[ "$TORCH_VERSION" = 2.15.0 ] || req="$here/capture-requirements-torch-$TORCH_VERSION.txt"
venv="${1:-$repo/.venv-capture}"
case "$venv" in /*) ;; *) venv="$(pwd)/$venv" ;; esac
python="${PYTHON:-python3}"

say() { echo "setup_capture: $*"; }
die() { echo "setup_capture: error: $*" >&2; exit 1; }

[ -f "$req" ] || die "missing $req (pins for torch $TORCH_VERSION: pip freeze of an environment that has it)"
grep -qx "torch==$TORCH_VERSION" "$req" || die "$req does not pin torch==$TORCH_VERSION"

# 1. A usable interpreter of the right version.
command -v "$python" >/dev/null 2>&1 || die "no '$python' on PATH (set PYTHON=...)"
pyver="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
case "$pyver" in
  3.11|3.12) say "using $python ($("$python" -c 'import platform; print(platform.python_version())'))" ;;
  *) die "$python is Python $pyver; verl $VERL_VERSION with torch $TORCH_VERSION needs 3.11 or 3.12 (set PYTHON=...)" ;;
esac

# 2. The venv module (Debian ships it separately as python3-venv).
if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing python3-venv with apt-get"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
  else
    die "$python lacks venv/ensurepip; install Debian's python3-venv (as root: apt-get install python3-venv)"
  fi
fi

# 3. The venv itself.
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
  have="$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  [ "$have" = "$pyver" ] || say "note: existing venv uses Python $have (not $pyver); keeping it"
  say "venv exists: $venv"
else
  say "creating venv: $venv"
  rm -rf "$venv"
  "$python" -m venv "$venv"
fi
vpy="$venv/bin/python"

# 4. Packages: compare what is installed with the pins; install only when they differ.
# Names normalised as pip does (lower case, runs of '_' / '.' / '-' as '-'); versions kept.
norm() { awk -F'==' 'NF == 2 { n = tolower($1); gsub(/[-_.]+/, "-", n); print n "==" $2 }' | sort; }
wanted="$( { grep -Ev '^[[:space:]]*(#|$)' "$req"; echo "verl==$VERL_VERSION"; } | norm)"
installed="$("$vpy" -m pip freeze --all 2>/dev/null | norm || true)"
missing="$(comm -23 <(echo "$wanted") <(echo "$installed") || true)"
if [ -z "$missing" ]; then
  say "all $(echo "$wanted" | wc -l) pinned packages already installed; nothing to do"
else
  say "$(echo "$missing" | wc -l) pinned package(s) missing or at another version:"
  echo "$missing" | sed 's/^/    /'
  say "pip install -r tools/$(basename "$req") (pip may warn that verl's other requirements"
  say "  - wandb, datasets, peft, ... - are not installed: expected, verl is installed with --no-deps)"
  "$vpy" -m pip install --disable-pip-version-check --no-input -q -r "$req"
  say "pip install --no-deps verl==$VERL_VERSION"
  "$vpy" -m pip install --disable-pip-version-check --no-input -q --no-deps "verl==$VERL_VERSION"
fi

# 5. Check that the modules the capture uses import cleanly.
say "checking imports"
"$vpy" - <<'EOF'
import h5py, numpy, torch, verl
from verl.trainer.ppo import core_algos, rollout_corr_helper  # noqa: F401
import verl.utils.torch_functional  # noqa: F401
from verl.workers.config import ActorConfig  # noqa: F401
print("setup_capture: ok: verl %s, torch %s, numpy %s, h5py %s" % (
    verl.__version__, torch.__version__, numpy.__version__, h5py.__version__))
EOF
if [ "$TORCH_VERSION" = 2.15.0 ]; then
  say "run the capture with: $vpy fixtures/capture.py --out fixtures/verl-$VERL_VERSION"
else
  # A torch drift set holds the float32 cases only (docs/drift-torch-2.11.0-to-2.15.0.md):
  # the device tool carries the whole tracked tree, golden sets included, within 64 MiB.
  say "run the capture with: $vpy fixtures/capture.py --out fixtures/verl-$VERL_VERSION-torch-$TORCH_VERSION --dtype float32"
fi
