#!/usr/bin/env bash
# The "Record" section of docs/BENCHMARKS.md: what iotrace record costs a
# program, side by side with strace in one run. Prints Markdown.
#
#   1. N (200,000) × 4 KiB pwrite in C (pwrite.c): untraced, under
#      iotrace record (ptrace), iotrace record --preload (the LD_PRELOAD
#      shim), and strace -f --seccomp-bpf -e trace=pwrite64 -o /dev/null; pinned (taskset -c 0: tracer and program share a CPU,
#      as under mpirun --bind-to core) and unpinned. The per-call overhead
#      is (traced − untraced loop time) ÷ N; its ratio to strace's is the
#      acceptance test (≤ 1).
#   2. M (1,000,000) untraced system calls of a few kinds a real program
#      makes (calls.c): untraced; with a one-instruction allow-all seccomp
#      filter and no tracer (the kernel's seccomp entry path with its action
#      cache, which every seccomp filter pays); with a filter the cache cannot
#      hold (the BPF program runs at every call); under strace; under
#      iotrace record; and under iotrace record --preload. Pinned and
#      unpinned. The acceptance test: getppid, the cheapest call, within 10 %
#      of its untraced time under iotrace.
#
# Runs are interleaved; tables give medians of REPS (3) pwrite runs and
# CALL_REPS (3) runs of each call kind. Loop times are measured inside the
# programs: wall clock for pwrite (a traced call waits for the tracer), and
# for the untraced calls both CPU time (the tables and the verdict: robust
# on a shared machine; for a program that only computes and makes system
# calls it is its run time) and wall clock. Needs go, cc, strace and taskset;
# takes about 5 minutes (most of it strace and iotrace unpinned).
#
#   bench/record/run.sh            # paste the output into docs/BENCHMARKS.md
set -euo pipefail
cd "$(dirname "$0")/../.."

N=${N:-200000}
M=${M:-1000000}
REPS=${REPS:-3}
CALL_REPS=${CALL_REPS:-3}
KINDS=${KINDS:-getppid clock_gettime mmap}

for tool in go cc strace taskset; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool is required" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/iotrace" ./cmd/iotrace
export IOTRACE_CACHE=$tmp/cache # the preload shim, built on first use
cc -O2 -o "$tmp/pwrite" bench/record/pwrite.c
cc -O2 -o "$tmp/calls" bench/record/calls.c

# run PIN TOOL PROG ARGS… prints what PROG prints (loop times in ns).
run() {
	local pin=$1 tool=$2
	shift 2
	local pre=()
	[ "$pin" = pinned ] && pre=(taskset -c 0)
	case $tool in
	untraced) "${pre[@]}" "$@" ;;
	allow | argload) "${pre[@]}" "$@" "$tool" ;;
	iotrace) "${pre[@]}" "$tmp/iotrace" record -o "$tmp/trace.iot" -- "$@" ;;
	preload) "${pre[@]}" "$tmp/iotrace" record --preload -o "$tmp/trace.iot" -- "$@" ;;
	strace) "${pre[@]}" strace -f --seccomp-bpf -e trace=pwrite64 -o /dev/null "$@" ;;
	esac
}

# med "v1 v2 …" prints the median.
med() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

pins="pinned unpinned"
where() { [ "$1" = pinned ] && echo "pinned (taskset -c 0)" || echo unpinned; }

declare -A pw wall cpu
for pin in $pins; do
	for rep in $(seq "$REPS"); do
		for tool in untraced iotrace preload strace; do
			pw[$pin,$tool]+="$(run "$pin" "$tool" "$tmp/pwrite" "$tmp/pwrite.dat" "$N") "
		done
	done
	for rep in $(seq "$CALL_REPS"); do
		for kind in $KINDS; do
			n=$M
			[ "$kind" = mmap ] && n=$((M / 5))
			for tool in untraced allow argload strace iotrace preload; do
				read -r w c < <(run "$pin" "$tool" "$tmp/calls" "$n" "$kind")
				wall[$pin,$kind,$tool]+="$w "
				cpu[$pin,$kind,$tool]+="$c "
			done
		done
	done
done

echo "## Record ($(date -u +%F), $(nproc) cores, Linux $(uname -r), $(strace -V | head -1 | sed 's/ -- version//'), $(go version | cut -d' ' -f3))"
echo
echo "### $N × 4 KiB pwrite in C: iotrace record against strace"
echo
echo "Command lines: \`pwrite\` (untraced), \`iotrace record -o trace.iot -- pwrite\`, \`iotrace record --preload -o trace.iot -- pwrite\`, \`strace -f --seccomp-bpf -e trace=pwrite64 -o /dev/null pwrite\`. Medians of $REPS runs; loop time measured by the program."
echo
echo "| CPUs | run | loop (s) | µs per pwrite | overhead per call (µs) | overhead ÷ strace's |"
echo "|---|---|---:|---:|---:|---:|"
verdict=PASS
for pin in $pins; do
	base=$(med "${pw[$pin,untraced]}")
	sover=$(($(med "${pw[$pin,strace]}") - base))
	for tool in untraced iotrace preload strace; do
		l=$(med "${pw[$pin,$tool]}")
		label=$tool
		[ "$tool" = iotrace ] && label="iotrace record"
		[ "$tool" = preload ] && label="iotrace record --preload"
		[ "$tool" = strace ] && label="strace -f --seccomp-bpf"
		awk -v where="$(where "$pin")" -v label="$label" -v l="$l" -v n="$N" -v base="$base" -v sover="$sover" -v tool="$tool" 'BEGIN {
			if (tool == "untraced") { printf "| %s | %s | %.3f | %.2f | – | – |\n", where, label, l/1e9, l/n/1000; exit }
			printf "| %s | %s | %.3f | %.2f | %.2f | %s |\n", where, label, l/1e9, l/n/1000, (l-base)/n/1000, (sover > 0 ? sprintf("%.2f", (l-base)/sover) : "–")
		}'
	done
	iover=$(($(med "${pw[$pin,iotrace]}") - base))
	[ "$iover" -le "$sover" ] || verdict=FAIL
done
echo
echo "Per-call overhead of iotrace record (ptrace) ≤ strace's, pinned and unpinned: **$verdict**."
echo
echo "### Untraced system calls"
echo
echo "$M calls of each kind (mmap: $((M / 5)) mmap + munmap pairs, per pair) in a C loop (\`bench/record/calls.c\`), none of which iotrace stops at. Medians of $CALL_REPS runs of CPU time per call: the untraced cost, then what each setup adds to it."
echo
echo "| CPUs | call | untraced (ns) | allow-all filter, no tracer | uncacheable filter, no tracer | strace --seccomp-bpf | iotrace record | iotrace record --preload | iotrace vs untraced | --preload vs untraced |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for pin in $pins; do
	for kind in $KINDS; do
		n=$M
		label=$kind
		[ "$kind" = mmap ] && n=$((M / 5)) && label="mmap + munmap"
		args=""
		for tool in untraced allow argload strace iotrace preload; do args+=" $(med "${cpu[$pin,$kind,$tool]}")"; done
		awk -v where="$(where "$pin")" -v label="$label" -v n="$n" -v args="$args" 'BEGIN {
			split(args, v, " ")
			u = v[1] / n
			printf "| %s | %s | %.0f | %+.0f | %+.0f | %+.0f | %+.0f | %+.0f | %+.1f %% | %+.1f %% |\n", where, label, u, v[2]/n - u, v[3]/n - u, v[4]/n - u, v[5]/n - u, v[6]/n - u, (v[5] - v[1]) * 100 / v[1], (v[6] - v[1]) * 100 / v[1]
		}'
	done
done
echo
# within10 TOOL prints PASS if TOOL's getppid CPU time is within 10 % of the
# untraced one, pinned and unpinned.
within10() {
	local v=PASS
	for pin in $pins; do
		awk -v l="$(med "${cpu[$pin,getppid,$1]}")" -v b="$(med "${cpu[$pin,getppid,untraced]}")" 'BEGIN { exit !(l <= 1.10 * b) }' || v=FAIL
	done
	echo $v
}
line="Wall clock (medians, noisier on a shared machine), getppid:"
for pin in $pins; do
	line+=$(awk -v where="$(where "$pin")" -v u="$(med "${wall[$pin,getppid,untraced]}")" -v a="$(med "${wall[$pin,getppid,allow]}")" -v i="$(med "${wall[$pin,getppid,iotrace]}")" -v m="$M" 'BEGIN {
		printf " %s %.0f ns untraced, %.0f ns with the allow-all filter, %.0f ns under iotrace (%+.1f %%);", where, u/m, a/m, i/m, (i-u)*100/u
	}')
done
echo "${line%;}."
echo
echo "A program making $M untraced system calls (getppid, the cheapest) runs within 10 % of its untraced time (CPU time), pinned and unpinned: under iotrace record (ptrace) **$(within10 iotrace)**, under iotrace record --preload **$(within10 preload)**; with an allow-all seccomp filter and no tracer at all **$(within10 allow)**."
