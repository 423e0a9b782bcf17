#!/usr/bin/env bash
# Makes cmd/iotrace/default.pgo, the CPU profile the iotrace command is
# built with (go build's default -pgo=auto takes a main package's
# default.pgo): the helper's encode of preload spools, most of what
# iotrace record --preload costs after the program (docs/BENCHMARKS.md,
# "Record"), profiled in capture/preload's benchmarks BenchmarkEncodeTrace
# (200,000 pwrites) and BenchmarkEncodeTraceIOR (one rank of IOR's
# pattern, as bench/record part 1 runs it). Run it again when the encode
# changes much (a profile of older code still serves where functions kept
# their names), and give in the commit what it changed: instructions an
# event of iotrace record --from-spool under callgrind, before and after.
#
#   bench/pgo/run.sh            # about 15 s; needs go and cc
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test ./capture/preload -run '^$' -bench '^BenchmarkEncodeTrace(IOR)?$' -benchtime 200x \
	-o "$tmp/preload.test" -cpuprofile "$tmp/cpu.pprof" >&2
cp "$tmp/cpu.pprof" cmd/iotrace/default.pgo
ls -l cmd/iotrace/default.pgo >&2
