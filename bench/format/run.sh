#!/usr/bin/env bash
# Trace-format benchmarks of docs/BENCHMARKS.md: bytes per event, encode and
# decode speed on one core, and peak memory of a 50-million-event trace.
# Usage: bench/format/run.sh [events-for-(d)]   (default 50000000)
set -euo pipefail
cd "$(dirname "$0")/../.."
big=${1:-50000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "## Trace format ($(date -u +%F), $(nproc) cores, $(go version | cut -d' ' -f3))"
echo
GOMAXPROCS=1 go test ./trace/format/ -run '^$' -bench 'Size|Encode|Decode' -benchtime 5x -count 5 > "$tmp/bench.txt"
awk '
/^Benchmark(Size|Encode|Decode)\// {
  split($1, a, "/"); kind = a[1]; sub("Benchmark", "", kind); wl = a[2]; sub("-[0-9]+$", "", wl)
  for (i = 3; i < NF; i++) {
    if ($(i+1) == "bytes/event") size[wl] = $i
    if ($(i+1) == "Mevents/cpu-s") { v = $i; if (kind == "Encode" && v > enc[wl]) enc[wl] = v; if (kind == "Decode" && v > dec[wl]) dec[wl] = v }
  }
  order[wl] = 1
}
END {
  print "| workload | bytes/event | encode Mevents/s (1 core) | decode Mevents/s (1 core) |"
  print "|---|---:|---:|---:|"
  n = split("ior twophase random", w, " ")
  name["ior"] = "(a) IOR-like, 4 ranks × 2,048 writes then reads"
  name["twophase"] = "(b) two-phase strided dump, 8 ranks"
  name["random"] = "(c) random offsets and sizes, 4 ranks"
  for (i = 1; i <= n; i++) printf "| %s | %s | %s | %s |\n", name[w[i]], size[w[i]], enc[w[i]], dec[w[i]]
}' "$tmp/bench.txt"
echo
echo "Speeds are events per CPU-second on one core (GOMAXPROCS=1), the best of 5 runs of the same pattern scaled 64× (about a million events or more); CPU time rather than wall time, so that other processes on the machine disturb them less."
echo
go build -o "$tmp/bigtrace" ./bench/format/bigtrace
w=$("$tmp/bigtrace" write "$tmp/big.iot" "$big")
r=$("$tmp/bigtrace" read "$tmp/big.iot")
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
echo "| (d) $big events, IOR-like over 16 ranks | events | bytes/event | seconds | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|"
echo "| write (generate + encode) | $(field "$w" events) | $(field "$w" bytes_per_event) | $(field "$w" seconds) | $(field "$w" peak_rss_mib) |"
echo "| read (decode every event) | $(field "$r" events) | | $(field "$r" seconds) | $(field "$r" peak_rss_mib) |"
