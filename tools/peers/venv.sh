# shellcheck shell=bash
# The peers' environments, sourced by tools/peers/run.sh and tools/peers/control.sh (from the
# repository root, after they define die, which names the script on stderr and exits 2):
#
#   peers_venvs PY BASE FW REQ
#
# builds, where its stamp (a hash of the requirement files it was built from) is not current:
# - BASE, the shared torch venv (tools/peers/torch-requirements.txt), once for every framework;
# - FW, a venv made by PY that sees BASE's packages through a .pth file and gets REQ installed
#   with --no-deps (the frameworks' declared dependencies are trainer stacks of many GB that
#   their algorithm modules do not import; every package is pinned in the requirement files).
# Whether FW then imports what its caller needs is the caller's check.

peers_stamp() { sha256sum "$@" | sha256sum | cut -c1-16; }

peers_venvs() {
  local py=$1 base=$2 fw=$3 req=$4
  local torch_req=tools/peers/torch-requirements.txt
  local base_site fw_site
  if [ "$(cat "$base/.verlconf-stamp" 2>/dev/null)" != "$(peers_stamp "$torch_req")" ]; then
    echo "== building $base (torch, once)"
    rm -rf "$base"
    "$py" -m venv "$base" || die "python -m venv $base failed"
    "$base/bin/pip" install -q --disable-pip-version-check --no-deps -r "$torch_req" \
      || die "pip install of $torch_req failed"
    peers_stamp "$torch_req" > "$base/.verlconf-stamp"
  fi
  if [ "$(cat "$fw/.verlconf-stamp" 2>/dev/null)" != "$(peers_stamp "$torch_req" "$req")" ]; then
    echo "== building $fw"
    rm -rf "$fw"
    "$py" -m venv "$fw" || die "python -m venv $fw failed"
    base_site=$("$base/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    fw_site=$("$fw/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    # The framework's own packages come first on sys.path, the shared torch after them.
    echo "$base_site" > "$fw_site/verlconf-peers-torch.pth"
    "$fw/bin/pip" install -q --disable-pip-version-check --no-deps -r "$req" || die "pip install of $req failed"
    peers_stamp "$torch_req" "$req" > "$fw/.verlconf-stamp"
  fi
}
