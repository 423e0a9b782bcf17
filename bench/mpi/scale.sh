#!/usr/bin/env bash
# Scale of ioreplay --mpi over test hosts (network namespaces on this
# machine, Open MPI over TCP between them; docs/MPI.md, "Tests"): R (1,024)
# trace ranks over each of PROCS (8,32,128) MPI processes on H (4) hosts,
# oversubscribed, the scale script of cmd/ioreplay/scale_test.go (each
# rank writes its file, a message around the ring of ranks and an
# all-reduction, 20 steps; --timing afap, --node-local, --record). Each
# size runs once with --dry-run (launch, MPI_Init, the team, reading and
# planning the trace) and once whole; every process runs under
# /usr/bin/time for its peak RSS. Prints the Markdown rows of the "Scale
# over test hosts" table of docs/BENCHMARKS.md.
#
# Needs root (network namespaces), go, mpirun, mpicc, /usr/bin/time.
#
#   bench/mpi/scale.sh
#   R=4096 PROCS=8 bench/mpi/scale.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

export IOTRACE_SCALE_RANKS=${R:-1024}
export IOTRACE_SCALE_PROCS=${PROCS:-8,32,128}
export IOTRACE_SCALE_HOSTS=${H:-4}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -x /usr/bin/time ] || { echo "scale.sh: /usr/bin/time is required (apt-get install time)" >&2; exit 1; }

out=$(go test ./cmd/ioreplay -run '^$' -bench BenchmarkReplayScale -benchtime 1x -count 1 -timeout 120m)
echo "$out" >&2
echo "| ranks | processes | hosts | events | dry run, wall (s) | start-up (s) | run (s) | tail: gather, merge, end (s) | wall (s) | peak RSS, dry run, p50 (MiB) | peak RSS min (MiB) | p50 (MiB) | max (MiB) | replay's trace (MiB) |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
echo "$out" | sed -n 's/^ *scale_test.go:[0-9]*: \(| .*\)$/\1/p'
echo
echo "$(date -u +%F), $(nproc) cores, $(go env GOVERSION), $(mpirun --version | head -1), load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
