#!/bin/sh
# Only reached under `bazel coverage`, which this offline setup does not support.
echo "remote_coverage_tools stub: bazel coverage is not supported offline" >&2
exit 1
