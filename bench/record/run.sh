#!/usr/bin/env bash
# Benchmark of iotrace record against strace, in one run, side by side:
#
#   1. N (200,000) × 4 KiB pwrite in C: untraced, under iotrace record, and
#      under strace -f --seccomp-bpf -e trace=pwrite64 -o /dev/null, with
#      tracer and program pinned to one CPU (taskset -c 0) and unpinned.
#      The per-call overhead is (traced − untraced) loop time ÷ N.
#   2. M (1,000,000) getppid calls, which the filter lets run untraced:
#      untraced, under iotrace record, and under the same strace command
#      (whose filter lets getppid through too), pinned and unpinned; and,
#      for reference, with a one-instruction allow-all filter and no
#      tracer: the cost of the kernel's seccomp entry path, which any
#      filter pays on every call.
#
# Each configuration runs REPS (3) times, the short getppid runs GP_REPS
# (9) times, interleaved; the tables give the medians. Loop times are measured by the programs themselves; wall times
# (whole command, tool start-up included) are given too. Prints a
# Markdown table on stdout. Needs go, cc, strace and taskset.
#
#   bench/record/run.sh > bench/record/RESULTS.md   # with the header kept
set -euo pipefail
cd "$(dirname "$0")/../.."

N=${N:-200000}
M=${M:-1000000}
REPS=${REPS:-3}
GP_REPS=${GP_REPS:-9}

for tool in go cc strace taskset; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool is required" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/iotrace" ./cmd/iotrace
cc -O2 -o "$tmp/pwrite" bench/record/pwrite.c
cc -O2 -o "$tmp/getppid" bench/record/getppid.c

# run PIN TOOL PROG ARGS… prints "wall_ns loop_ns".
run() {
	local pin=$1 tool=$2
	shift 2
	local pre=()
	[ "$pin" = pinned ] && pre=(taskset -c 0)
	local cmd=()
	case $tool in
	untraced) cmd=("$@") ;;
	filter) cmd=("$@" filter) ;;
	iotrace) cmd=("$tmp/iotrace" record -o "$tmp/trace.iot" -- "$@") ;;
	strace) cmd=(strace -f --seccomp-bpf -e trace=pwrite64 -o /dev/null "$@") ;;
	esac
	local start end loop
	start=$(date +%s%N)
	loop=$("${pre[@]}" "${cmd[@]}")
	end=$(date +%s%N)
	echo "$((end - start)) $loop"
}

# median of the numbers on stdin
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

declare -A wall loop
for pin in pinned unpinned; do
	for rep in $(seq "$REPS"); do
		for tool in untraced iotrace strace; do
			read -r w l < <(run "$pin" "$tool" "$tmp/pwrite" "$tmp/pwrite.dat" "$N")
			wall[pw,$pin,$tool]+="$w "
			loop[pw,$pin,$tool]+="$l "
		done
	done
	for rep in $(seq "$GP_REPS"); do
		for tool in untraced filter iotrace strace; do
			read -r w l < <(run "$pin" "$tool" "$tmp/getppid" "$M")
			wall[gp,$pin,$tool]+="$w "
			loop[gp,$pin,$tool]+="$l "
		done
	done
done

med() { tr ' ' '\n' <<<"$1" | grep . | median; }

echo "### $N × 4 KiB pwrite (C)"
echo
echo "Medians of $REPS runs on $(nproc) CPUs ($(uname -r), $(strace -V | head -1))."
echo
echo "| CPUs | run | wall (s) | loop (s) | µs per pwrite | overhead per call (µs) | overhead vs strace |"
echo "|---|---|---:|---:|---:|---:|---:|"
verdict=PASS
for pin in pinned unpinned; do
	base=$(med "${loop[pw,$pin,untraced]}")
	sover=$(( $(med "${loop[pw,$pin,strace]}") - base ))
	for tool in untraced iotrace strace; do
		w=$(med "${wall[pw,$pin,$tool]}")
		l=$(med "${loop[pw,$pin,$tool]}")
		label=$tool
		[ "$tool" = iotrace ] && label="iotrace record"
		[ "$tool" = strace ] && label="strace -f --seccomp-bpf"
		where="unpinned"
		[ "$pin" = pinned ] && where="pinned (taskset -c 0)"
		awk -v where="$where" -v label="$label" -v w="$w" -v l="$l" -v n="$N" -v base="$base" -v sover="$sover" -v tool="$tool" 'BEGIN {
			over = (l - base) / n / 1000
			ratio = sover > 0 ? sprintf("%.2f×", (l - base) / sover) : "–"
			if (tool == "untraced") { printf "| %s | %s | %.2f | %.3f | %.2f | – | – |\n", where, label, w/1e9, l/1e9, l/n/1000 }
			else { printf "| %s | %s | %.2f | %.3f | %.2f | %.2f | %s |\n", where, label, w/1e9, l/1e9, l/n/1000, over, ratio }
		}'
	done
	iover=$(( $(med "${loop[pw,$pin,iotrace]}") - base ))
	[ "$iover" -le "$sover" ] || verdict=FAIL
done
echo
echo "Per-call overhead of iotrace ≤ strace's, pinned and unpinned: **$verdict**."
echo
echo "### $M untraced system calls (getppid)"
echo
echo "Medians of $GP_REPS runs."
echo
echo "| CPUs | run | wall (s) | loop (s) | ns per call | loop time vs untraced |"
echo "|---|---|---:|---:|---:|---:|"
verdict=PASS
for pin in pinned unpinned; do
	base=$(med "${loop[gp,$pin,untraced]}")
	for tool in untraced filter iotrace strace; do
		w=$(med "${wall[gp,$pin,$tool]}")
		l=$(med "${loop[gp,$pin,$tool]}")
		label=$tool
		[ "$tool" = filter ] && label="allow-all seccomp filter, no tracer"
		[ "$tool" = iotrace ] && label="iotrace record"
		[ "$tool" = strace ] && label="strace -f --seccomp-bpf"
		where="unpinned"
		[ "$pin" = pinned ] && where="pinned (taskset -c 0)"
		awk -v where="$where" -v label="$label" -v w="$w" -v l="$l" -v m="$M" -v base="$base" 'BEGIN {
			printf "| %s | %s | %.3f | %.3f | %.0f | %+.1f %% |\n", where, label, w/1e9, l/1e9, l/m, (l - base) * 100 / base
		}'
	done
	awk -v l="$(med "${loop[gp,$pin,iotrace]}")" -v b="$base" 'BEGIN { exit !(l <= 1.10 * b) }' || verdict=FAIL
done
echo
echo "Untraced calls under iotrace within 10 % of their untraced time: **$verdict**."
for pin in pinned unpinned; do
	awk -v pin="$pin" -v u="$(med "${loop[gp,$pin,untraced]}")" -v f="$(med "${loop[gp,$pin,filter]}")" -v i="$(med "${loop[gp,$pin,iotrace]}")" -v m="$M" 'BEGIN {
		printf "%s: any seccomp filter adds %.0f ns per call (%+.1f %%); iotrace adds %.0f ns (%+.1f %%).\n", pin, (f-u)/m, (f-u)*100/u, (i-u)/m, (i-u)*100/u
	}'
done
