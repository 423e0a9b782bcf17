#!/usr/bin/env bash
# Benchmarks of iotrace convert --to script: time and peak memory of
# folding big traces into scripts, printed as the Markdown of the "Convert
# to script" section of docs/BENCHMARKS.md.
#
#   1. regular: an IOR-like trace of 4 ranks × 2 × CALLS (1,250,000) events
#      — 10 million events — with measured timing jitter (iotrace generate
#      ior). Goal: under a minute, memory bounded (not growing with the
#      trace).
#   2. the same with a quarter of the events, to show that memory does not
#      grow with the trace.
#   3. twophase: astro3d-like dumps of 8 ranks (alltoall, seek and write of
#      strided chunks, rank 0's header) with DUMPS (16) dumps: rank folding.
#   4. random: 4 ranks × RCALLS (25,000) random preads and pwrites: no
#      structure, every call a line of the script.
#
# Each conversion runs with the check that the script makes the trace's
# calls (the default) and without it (--no-verify). As a reference, the
# trace is also copied to a new trace file (iotrace convert -o copy.iot):
# reading and writing it once. Times are wall, user and system seconds from
# /usr/bin/time; RSS is the peak resident set.
#
#   bench/convert/run.sh      # a few minutes
set -euo pipefail
cd "$(dirname "$0")/../.."

CALLS=${CALLS:-1250000}
DUMPS=${DUMPS:-16}
RCALLS=${RCALLS:-25000}

for tool in go /usr/bin/time; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool is required" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/iotrace" ./cmd/iotrace # static, as README.md's Install builds it
it="$tmp/iotrace"

# measure LABEL CMD…: one row: wall, user, sys, peak RSS (MiB).
rows=()
measure() {
	local label=$1
	shift
	/usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" || {
		cat "$tmp/err" >&2
		exit 1
	}
	read -r wall user sys rss <"$tmp/time"
	rows+=("$(printf '| %s | %s | %s | %s | %d |' "$label" "$wall" "$user" "$sys" $((rss / 1024)))")
}

events() { "$it" stats "$1" | head -1 | awk '{print $3}'; }
lines() { wc -l <"$1" | tr -d ' '; }

declare -A ev ln
bench() { # bench NAME TRACE
	local name=$1 tr=$2
	ev[$name]=$(events "$tr")
	measure "$name: copy to a trace file (reference)" "$it" convert "$tr" -o "$tmp/copy.iot"
	measure "$name: convert --to script --no-verify" "$it" convert --no-verify "$tr" -o "$tmp/${name//\//-}.iop"
	measure "$name: convert --to script (checked)" "$it" convert "$tr" -o "$tmp/${name//\//-}.iop"
	ln[$name]=$(lines "$tmp/${name//\//-}.iop")
	rm -f "$tmp/copy.iot"
}

"$it" generate ior --ranks 4 --calls "$CALLS" -o "$tmp/ior.iot" 2>/dev/null
bench regular "$tmp/ior.iot"
rm -f "$tmp/ior.iot"
"$it" generate ior --ranks 4 --calls $((CALLS / 4)) -o "$tmp/ior4.iot" 2>/dev/null
bench "regular/4" "$tmp/ior4.iot"
rm -f "$tmp/ior4.iot"
"$it" generate twophase --ranks 8 --calls "$DUMPS" -o "$tmp/tp.iot" 2>/dev/null
bench twophase "$tmp/tp.iot"
"$it" generate random --ranks 4 --calls "$RCALLS" -o "$tmp/rnd.iot" 2>/dev/null
bench random "$tmp/rnd.iot"

{
	echo "## Convert to script ($(date -u +%Y-%m-%d), $(nproc) cores, $(go version | cut -d' ' -f3))"
	echo
	echo "Output of \`bench/convert/run.sh\`: \`iotrace convert --to script\` on generated traces"
	echo "(\`iotrace generate\`, with measured timing jitter). \"checked\" is the default: the"
	echo "script is run, rank by rank, and compared call by call with the trace. The copy of"
	echo "the trace to a new trace file is the reference: reading and writing it once."
	echo "Times in seconds, RSS the peak resident set in MiB."
	echo
	echo "| trace | events | script lines |"
	echo "|---|---:|---:|"
	for n in regular regular/4 twophase random; do
		echo "| $n | ${ev[$n]} | ${ln[$n]} |"
	done
	echo
	echo "| run | wall | user | sys | RSS MiB |"
	echo "|---|---:|---:|---:|---:|"
	printf '%s\n' "${rows[@]}"
}
