#!/usr/bin/env bash
# Runs the corpus (every case, both capture modes, the four oracles) with
# this checkout's iotrace and ioreplay, and rewrites docs/CORPUS.md from
# the run. Extra arguments go to the test binary, e.g. -keep /tmp/corpus
# to keep every case's inputs, strace output, traces, replays and scripts.
# It exits non-zero when a cell differs from corpus/expected_test.go; the
# table is written all the same.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
go test -count=1 -timeout 30m ./corpus -run 'TestCorpus$' -args -write "$@"
