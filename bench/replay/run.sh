#!/usr/bin/env bash
# Benchmarks of ioreplay, each measured side by side in one run; writes
# bench/replay/RESULTS.md (a Markdown table per benchmark):
#
#   1. overhead: one rank, N (200,000) × 4 KiB pwrite to a file in /dev/shm,
#      replayed with --timing afap, against a C loop issuing the same
#      pwrites (bench/replay/pwrite.c) in three forms: one hot buffer
#      (plain), the same kind of non-repeating data ioreplay writes
#      (pattern), and that data with the clock read around every call
#      (timed), as a replayer that measures each call must. Loop time is
#      the replay phase (ioreplay's elapsed_seconds: first call to last) or
#      the C loop; wall time is the whole command. Goal: ≤ 1.10.
#   2. timing fidelity: G (20,000) calls recorded 500 µs apart, replayed
#      with --timing original. Goals: issue lag p50 ≤ 20 µs, p99 ≤ 200 µs,
#      run time within 2 % of the recording.
#   3. scale: R (1,024) ranks × C (1,000) calls, a barrier every 100
#      calls, --timing afap: wall time and peak RSS.
#
# REPS (5) runs of benchmark 1, interleaved, give medians; benchmark 2 runs
# TREPS (3) times. Needs go, cc and /dev/shm.
#
#   bench/replay/run.sh      # about a minute
set -euo pipefail
cd "$(dirname "$0")/../.."

N=${N:-200000}
G=${G:-20000}
R=${R:-1024}
C=${C:-1000}
REPS=${REPS:-5}
TREPS=${TREPS:-3}
OUT=bench/replay/RESULTS.md

for tool in go cc; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool is required" >&2; exit 1; }
done
[ -d /dev/shm ] || { echo "run.sh: /dev/shm is required" >&2; exit 1; }

tmp=$(mktemp -d)
shm=$(mktemp -d /dev/shm/ioreplay-bench.XXXXXX)
trap 'rm -rf "$tmp" "$shm"' EXIT
go build -o "$tmp/ioreplay" ./cmd/ioreplay
go build -o "$tmp/iotrace" ./cmd/iotrace
go build -o "$tmp/gentrace" ./bench/replay/gentrace
cc -O2 -o "$tmp/pwrite" bench/replay/pwrite.c

now() { date +%s%N; }
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
jnum() { # jnum FILE KEY: the first number after "KEY":
	grep -o "\"$2\": *[-0-9.e+]*" "$1" | head -1 | sed 's/.*: *//'
}

# 1. overhead
"$tmp/gentrace" pwrite -o "$tmp/pwrite.iot" -calls "$N" -path /bench/replay.dat
declare -A loop wall
for rep in $(seq "$REPS"); do
	for mode in plain pattern timed; do
		s=$(now)
		l=$("$tmp/pwrite" "$shm/c.dat" "$N" "$mode")
		e=$(now)
		loop[$mode]+="$l "
		wall[$mode]+="$((e - s)) "
	done
	rm -f "$shm/c.dat"
	s=$(now)
	"$tmp/ioreplay" --timing afap --quiet --target "$shm/target" --summary "$tmp/s.json" "$tmp/pwrite.iot" >/dev/null
	e=$(now)
	l=$(awk -v s="$(jnum "$tmp/s.json" elapsed_seconds)" 'BEGIN {printf "%d", s * 1e9}')
	loop[replay]+="$l "
	wall[replay]+="$((e - s)) "
done

{
	echo "# ioreplay benchmarks"
	echo
	echo "Output of \`bench/replay/run.sh\` on $(nproc) CPUs ($(uname -r), $(go version | cut -d' ' -f3)), $(date -u +%Y-%m-%d)."
	echo "Machines of this kind are shared and noisy: ratios come from runs interleaved in one go."
	echo
	echo "### 1. Overhead: $N × 4 KiB pwrite to /dev/shm, --timing afap"
	echo
	echo "Medians of $REPS runs. Loop: the replay phase (first call to last) or the C loop; wall: the whole command"
	echo "(for ioreplay: reading and planning the trace, the replay, writing and reading its own trace, the report)."
	echo
	echo "| run | loop (s) | wall (s) | ns per call (loop) | ioreplay loop ÷ this loop | ioreplay wall ÷ this wall |"
	echo "|---|---:|---:|---:|---:|---:|"
	rl=$(med "${loop[replay]}")
	rw=$(med "${wall[replay]}")
	for mode in plain pattern timed replay; do
		l=$(med "${loop[$mode]}")
		w=$(med "${wall[$mode]}")
		label="C loop, $mode"
		case $mode in
		plain) label="C loop, one hot 4 KiB buffer" ;;
		pattern) label="C loop, non-repeating data as ioreplay writes" ;;
		timed) label="C loop, that data and the clock read around each call" ;;
		replay) label="**ioreplay --timing afap**" ;;
		esac
		awk -v label="$label" -v l="$l" -v w="$w" -v n="$N" -v rl="$rl" -v rw="$rw" 'BEGIN {
			printf "| %s | %.3f | %.3f | %.0f | %.2f | %.2f |\n", label, l/1e9, w/1e9, l/n, rl/l, rw/w
		}'
	done
	echo
	for mode in plain timed; do
		awk -v mode="$mode" -v rl="$rl" -v l="$(med "${loop[$mode]}")" -v rw="$rw" -v w="$(med "${wall[$mode]}")" 'BEGIN {
			v = (rl / l <= 1.10) ? "PASS" : "FAIL"
			printf "Goal loop time ≤ 1.10 × the C loop (%s): %.2f, **%s**; whole command ÷ C command: %.2f.\n", mode, rl/l, v, rw/w
		}'
		echo
	done
} >"$OUT.tmp"

# 2. timing fidelity
"$tmp/gentrace" gaps -o "$tmp/gaps.iot" -calls "$G" -gap 500us -path /bench/gaps.dat
"$tmp/iotrace" stats --format json "$tmp/gaps.iot" >"$tmp/orig.json"
orig=$(jnum "$tmp/orig.json" duration_seconds)
{
	echo "### 2. Timing fidelity: $G calls recorded 500 µs apart, --timing original"
	echo
	echo "| run | issue lag p50 (µs) | p99 (µs) | max (µs) | recorded (s) | replayed (s) | replayed ÷ recorded |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
} >>"$OUT.tmp"
verdict=PASS
for rep in $(seq "$TREPS"); do
	"$tmp/ioreplay" --timing original --quiet --target "$shm/target" --summary "$tmp/t.json" --record "$tmp/rec.iot" "$tmp/gaps.iot" >/dev/null
	"$tmp/iotrace" stats --format json "$tmp/rec.iot" >"$tmp/rec.json"
	p50=$(jnum "$tmp/t.json" p50_seconds)
	p99=$(jnum "$tmp/t.json" p99_seconds)
	mx=$(jnum "$tmp/t.json" max_seconds)
	got=$(jnum "$tmp/rec.json" duration_seconds)
	awk -v r="$rep" -v p50="$p50" -v p99="$p99" -v mx="$mx" -v o="$orig" -v g="$got" 'BEGIN {
		printf "| %d | %.1f | %.1f | %.0f | %.4f | %.4f | %.4f |\n", r, p50*1e6, p99*1e6, mx*1e6, o, g, g/o
	}' >>"$OUT.tmp"
	awk -v p50="$p50" -v p99="$p99" -v o="$orig" -v g="$got" 'BEGIN {
		r = g / o; exit !(p50 <= 20e-6 && p99 <= 200e-6 && r >= 0.98 && r <= 1.02)
	}' || verdict=FAIL
done
{
	echo
	echo "Goals p50 ≤ 20 µs, p99 ≤ 200 µs, run time within 2 %, in every run: **$verdict**."
	echo
} >>"$OUT.tmp"

# 3. scale
"$tmp/gentrace" barrier -o "$tmp/scale.iot" -ranks "$R" -calls "$C" -every 100 -path /bench/rank
events=$((R * (C + 2 + (C - 1) / 100)))
best_w="" best_m=""
for rep in 1 2; do
	/usr/bin/time -f "%e %M" -o "$tmp/time.txt" "$tmp/ioreplay" --timing afap --quiet --target "$shm/scale" \
		--summary "$tmp/x.json" "$tmp/scale.iot" >/dev/null
	read -r w m <"$tmp/time.txt"
	el=$(jnum "$tmp/x.json" elapsed_seconds)
	if [ -z "$best_w" ] || awk -v a="$w" -v b="$best_w" 'BEGIN {exit !(a < b)}'; then
		best_w=$w best_m=$m best_el=$el
	fi
	rm -rf "$shm/scale"
done
{
	echo "### 3. Scale: $R ranks × $C calls, a barrier every 100 calls, --timing afap"
	echo
	echo "Best of 2 runs."
	echo
	echo "| ranks | events | replay phase (s) | wall (s) | events/s (replay phase) | peak RSS (MiB) |"
	echo "|---:|---:|---:|---:|---:|---:|"
	awk -v r="$R" -v e="$events" -v el="$best_el" -v w="$best_w" -v m="$best_m" 'BEGIN {
		printf "| %d | %d | %.2f | %.2f | %.0f | %.1f |\n", r, e, el, w, e/el, m/1024
	}'
} >>"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
cat "$OUT"
