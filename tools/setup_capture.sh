#!/usr/bin/env bash
# The capture environment's setup, kept at the path the README gives: it is
# fixtures/capture/setup_capture.sh, which says what it installs and which variables it reads.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../fixtures/capture/setup_capture.sh" "$@"
