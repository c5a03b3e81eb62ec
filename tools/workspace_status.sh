#!/bin/sh
# Bazel's --workspace_status_command: the source revision `conform --version` and every
# check report name. Only the revision file depends on it (//tools/cli:revision), not the
# binary, so a new commit rebuilds one tiny genrule and relinks nothing. Outside a git
# checkout (a source tarball) the revision is "unknown".
rev=$(git describe --always --dirty 2>/dev/null) || rev=""
echo "STABLE_VERLCONF_REVISION ${rev:-unknown}"
