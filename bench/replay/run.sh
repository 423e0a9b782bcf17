#!/usr/bin/env bash
# Replay benchmarks of docs/BENCHMARKS.md, each measured side by side in one
# run; prints the Markdown of the "Replay" section on standard output
# (progress on standard error):
#
#   1. overhead: one rank, N (200,000) × 4 KiB pwrite to a file in /dev/shm,
#      replayed with --timing afap, against a C loop issuing the same pwrites
#      (bench/replay/pwrite.c, built with cc) in three forms: one hot 4 KiB
#      buffer (plain: the loop the issue names), the same kind of
#      non-repeating data ioreplay writes (pattern), and that data with the
#      clock read around every call (timed), as a replayer that measures each
#      call must; a Go program doing only that (bench/replay/floor: the
#      pwrites as raw system calls, ioreplay's pattern, the time-stamp
#      counter read per call, no trace, engine or report), the floor of any
#      replayer in Go; and ioreplay with --data fixed, which writes one buffer
#      again and again as the plain loop does. Loop time: ioreplay's replay phase (elapsed_seconds of
#      --summary: first call to last) or the C loop; wall and CPU time: the
#      whole process. The six runs of a repetition are interleaved (their
#      order rotates) and ratios are taken within a repetition, then the
#      median over REPS (11). Goals: loop time ≤ 1.10 × the C loop; ioreplay
#      ≤ 1.03 × the Go floor in loop time and ≤ 1.06 in wall time (issue 21).
#   2. timing fidelity: G (20,000) calls recorded 500 µs apart, replayed
#      with --timing original, TREPS (3) times. Goals: issue lag p50 ≤ 20 µs,
#      p99 ≤ 200 µs, replayed duration within 2 % of the recorded one. Each
#      replay is paired with its C peer (bench/replay/deadlines.c: the same
#      pwrites at the same deadlines, waited for with a calibrated
#      clock_nanosleep and a spin), run just before or after it: what the
#      peer's lag shows is the machine's, not the replayer's.
#   3. scale: R (1,024) ranks × C (1,000) calls each, a barrier every 100
#      calls, --timing afap: wall time and peak RSS, best of 2; and the same
#      with C2 (5,000) calls each, to show memory bounded as ranks grow longer.
#   4. the waiter on a dense trace: D (20,000) calls of 1 µs recorded 0–5 µs
#      apart (end to start), replayed with --timing think, DREPS (5) times:
#      the think time the replay kept (its span less its calls' time, from
#      its own trace) against the recorded one, per call.
#
# BEFORE=path/to/an/older/ioreplay adds it to benchmarks 1 and 4, run
# interleaved with the current one: before/after measured side by side
# (build it as this script builds ioreplay, with CGO_ENABLED=0, or the
# difference includes the dynamic loader's start).
#
# Needs go, cc, /usr/bin/time and /dev/shm. About two minutes.
#
#   bench/replay/run.sh > /tmp/replay.md
set -euo pipefail
cd "$(dirname "$0")/../.."

N=${N:-200000}
G=${G:-20000}
R=${R:-1024}
C=${C:-1000}
C2=${C2:-5000}
REPS=${REPS:-11}
TREPS=${TREPS:-3}
D=${D:-20000}
DREPS=${DREPS:-5}
BEFORE=${BEFORE:-}

for tool in go cc /usr/bin/time; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool is required" >&2; exit 1; }
done
[ -d /dev/shm ] || { echo "run.sh: /dev/shm is required" >&2; exit 1; }

tmp=$(mktemp -d)
shm=$(mktemp -d /dev/shm/ioreplay-bench.XXXXXX)
trap 'rm -rf "$tmp" "$shm"' EXIT
# ioreplay and iotrace as README.md's Install builds them: static (a BEFORE
# for comparison should be built so too).
CGO_ENABLED=0 go build -o "$tmp/ioreplay" ./cmd/ioreplay
CGO_ENABLED=0 go build -o "$tmp/iotrace" ./cmd/iotrace
go build -o "$tmp/gentrace" ./bench/replay/gentrace
go build -o "$tmp/floor" ./bench/replay/floor
cc -O2 -o "$tmp/pwrite" bench/replay/pwrite.c
cc -O2 -o "$tmp/deadlines" bench/replay/deadlines.c

jnum() { # jnum FILE KEY: the first number after "KEY":
	grep -o "\"$2\": *[-0-9.e+]*" "$1" | head -1 | sed 's/.*: *//'
}
now() { date +%s%N; }

# timed CMD…: runs CMD (stdout to $tmp/out) and appends "wall_ns cpu_ns" of
# the whole process to $tmp/tw (CPU from /usr/bin/time: user + system).
timed() {
	local s e
	s=$(now)
	/usr/bin/time -f "%U %S" -o "$tmp/rusage" "$@" >"$tmp/out"
	e=$(now)
	read -r u sy <"$tmp/rusage"
	awk -v w="$((e - s))" -v u="$u" -v s="$sy" 'BEGIN {printf "%d %d\n", w, (u + s) * 1e9}'
}

# 1. overhead
echo "run.sh: 1. overhead, $REPS repetitions" >&2
"$tmp/gentrace" pwrite -o "$tmp/pwrite.iot" -calls "$N" -path /bench/replay.dat
kinds=(plain pattern timed floor replay fixed)
if [ -n "$BEFORE" ]; then
	cp "$BEFORE" "$tmp/before"
	kinds+=(before)
fi
nk=${#kinds[@]}
: >"$tmp/one.txt" # rep kind loop_ns wall_ns cpu_ns
for rep in $(seq "$REPS"); do
	for k in $(seq 0 $((nk - 1))); do
		kind=${kinds[$(((k + rep) % nk))]}
		case $kind in
		replay | fixed | before)
			data=pattern
			[ "$kind" = fixed ] && data=fixed
			bin=$tmp/ioreplay
			[ "$kind" = before ] && bin=$tmp/before
			tw=$(timed "$bin" --timing afap --data "$data" --quiet --target "$shm/target" --summary "$tmp/s.json" "$tmp/pwrite.iot")
			loop=$(awk -v s="$(jnum "$tmp/s.json" elapsed_seconds)" 'BEGIN {printf "%d", s * 1e9}')
			rm -rf "${shm:?}/target"
			;;
		floor)
			tw=$(timed "$tmp/floor" "$shm/c.dat" "$N")
			loop=$(cat "$tmp/out")
			rm -f "$shm/c.dat"
			;;
		*)
			tw=$(timed "$tmp/pwrite" "$shm/c.dat" "$N" "$kind")
			loop=$(cat "$tmp/out")
			rm -f "$shm/c.dat"
			;;
		esac
		echo "$rep $kind $loop $tw" >>"$tmp/one.txt"
	done
done

# 2. timing fidelity
echo "run.sh: 2. timing fidelity, $TREPS runs" >&2
"$tmp/gentrace" gaps -o "$tmp/gaps.iot" -calls "$G" -gap 500us -path /bench/gaps.dat
"$tmp/iotrace" stats --format json "$tmp/gaps.iot" >"$tmp/orig.json"
orig=$(jnum "$tmp/orig.json" duration_seconds)
: >"$tmp/two.txt" # run p50 p99 max recorded replayed, then the C peer's p50 p99 max elapsed
for rep in $(seq "$TREPS"); do
	peer() { "$tmp/deadlines" "$shm/deadlines.dat" "$G" 500 >"$tmp/peer.txt" && rm -f "$shm/deadlines.dat"; }
	[ $((rep % 2)) = 1 ] && peer
	"$tmp/ioreplay" --timing original --quiet --target "$shm/target" --summary "$tmp/t.json" "$tmp/gaps.iot" >/dev/null
	rm -rf "${shm:?}/target"
	[ $((rep % 2)) = 0 ] && peer
	echo "$rep $(jnum "$tmp/t.json" p50_seconds) $(jnum "$tmp/t.json" p99_seconds) $(jnum "$tmp/t.json" max_seconds) $orig $(jnum "$tmp/t.json" elapsed_seconds) $(cat "$tmp/peer.txt")" >>"$tmp/two.txt"
done

# 3. scale: the issue's C calls per rank, and C2 (5,000) to show that
# memory stays bounded as each rank's part of the replay's trace grows.
echo "run.sh: 3. scale, $R ranks" >&2
: >"$tmp/three.txt" # calls wall_s maxrss_kib replay_s events
for calls in "$C" "$C2"; do
	"$tmp/gentrace" barrier -o "$tmp/scale.iot" -ranks "$R" -calls "$calls" -every 100 -path /bench/rank
	for rep in 1 2; do
		/usr/bin/time -f "%e %M" -o "$tmp/time.txt" "$tmp/ioreplay" --timing afap --quiet --target "$shm/scale" \
			--summary "$tmp/x.json" "$tmp/scale.iot" >/dev/null
		echo "$calls $(cat "$tmp/time.txt") $(jnum "$tmp/x.json" elapsed_seconds) $(jnum "$tmp/x.json" events)" >>"$tmp/three.txt"
		rm -rf "${shm:?}/scale"
	done
done

# 4. the waiter on a dense trace, think timing
echo "run.sh: 4. think timing on a dense trace, $DREPS repetitions" >&2
"$tmp/gentrace" dense -o "$tmp/dense.iot" -calls "$D" -path /bench/dense.dat
# think FILE: the span of a trace and its calls' time, in s
think() {
	"$tmp/iotrace" stats --format json "$1" >"$tmp/st.json"
	awk '/"duration_seconds"/ && !d {gsub(/[,"]/, ""); d = $2} /"op": "TOTAL"/ {t = 1} t && /"total_seconds"/ {gsub(/[,"]/, ""); print d, $2; exit}' "$tmp/st.json"
}
read -r dspan dcalls < <(think "$tmp/dense.iot")
dkinds=(replay)
[ -n "$BEFORE" ] && dkinds+=(before)
: >"$tmp/four.txt" # rep kind span calls elapsed lag_p50 lag_p99 cpu_s
for rep in $(seq "$DREPS"); do
	for k in $(seq 0 $((${#dkinds[@]} - 1))); do
		kind=${dkinds[$(((k + rep) % ${#dkinds[@]}))]}
		bin=$tmp/ioreplay
		[ "$kind" = before ] && bin=$tmp/before
		/usr/bin/time -f "%U %S" -o "$tmp/rusage" "$bin" --timing think --quiet --target "$shm/target" --summary "$tmp/d.json" --record "$tmp/d.iot" "$tmp/dense.iot" >/dev/null
		rm -rf "${shm:?}/target"
		read -r u sy <"$tmp/rusage"
		read -r span calls < <(think "$tmp/d.iot")
		echo "$rep $kind $span $calls $(jnum "$tmp/d.json" elapsed_seconds) $(jnum "$tmp/d.json" p50_seconds) $(jnum "$tmp/d.json" p99_seconds) $(awk -v u="$u" -v s="$sy" 'BEGIN {print u + s}')" >>"$tmp/four.txt"
	done
done

# The Markdown.
echo "## Replay ($(date -u +%F), $(nproc) cores, $(go version | cut -d' ' -f3), $(uname -r))"
echo
echo "### 1. Overhead: one rank, $N × 4 KiB pwrite to /dev/shm, --timing afap"
echo
awk -v reps="$REPS" -v n="$N" '
function median(a, k,   i, j, t) {
	for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
	return (k % 2) ? a[(k+1)/2] : (a[k/2] + a[k/2+1]) / 2
}
# ratio(x, y, what): the median over repetitions of x / y
function ratio(x, y, what,   r, v) {
	for (r = 1; r <= reps; r++) v[r] = (what == "loop" ? loop[r, x] / loop[r, y] : wall[r, x] / wall[r, y])
	return median(v, reps)
}
{ loop[$1, $2] = $3; wall[$1, $2] = $4; cpu[$1, $2] = $5 }
END {
	nk = split("plain pattern timed floor replay fixed", kinds, " ")
	if ((1, "before") in loop) kinds[++nk] = "before"
	label["plain"] = "C loop, one hot 4 KiB buffer (the issue'"'"'s peer)"
	label["pattern"] = "C loop, non-repeating data as ioreplay writes"
	label["timed"] = "C loop, that data and two clock reads per call"
	label["floor"] = "Go loop: that data, raw pwrites, the counter read per call, nothing else (the floor of a Go replayer)"
	label["replay"] = "**ioreplay --timing afap** (non-repeating data, the default)"
	label["fixed"] = "ioreplay --timing afap --data fixed (one buffer, as the plain loop)"
	label["before"] = "ioreplay before this change (BEFORE), --timing afap"
	print "| run | loop (s) | ns per call | wall (s) | CPU (s) |"
	print "|---|---:|---:|---:|---:|"
	for (q = 1; q <= nk; q++) {
		k = kinds[q]
		for (r = 1; r <= reps; r++) { l[r] = loop[r, k]; w[r] = wall[r, k]; c[r] = cpu[r, k] }
		ml = median(l, reps)
		printf "| %s | %.3f | %.0f | %.3f | %.3f |\n", label[k], ml/1e9, ml/n, median(w, reps)/1e9, median(c, reps)/1e9
	}
	print ""
	print "| ratio (median of the ratios within each repetition) | loop | whole command |"
	print "|---|---:|---:|"
	printf "| ioreplay ÷ C loop, one hot buffer — **the issue'"'"'s goal ≤ 1.10** | %.2f | %.2f |\n", ratio("replay", "plain", "loop"), ratio("replay", "plain", "wall")
	printf "| ioreplay ÷ C loop writing the same non-repeating data | %.2f | %.2f |\n", ratio("replay", "pattern", "loop"), ratio("replay", "pattern", "wall")
	printf "| ioreplay ÷ C loop with that data and two clock reads per call | %.2f | %.2f |\n", ratio("replay", "timed", "loop"), ratio("replay", "timed", "wall")
	printf "| ioreplay --data fixed ÷ C loop, one hot buffer (the same data) | %.2f | %.2f |\n", ratio("fixed", "plain", "loop"), ratio("fixed", "plain", "wall")
	printf "| Go floor ÷ C loop, one hot buffer: the least a Go replayer can reach | %.2f | %.2f |\n", ratio("floor", "plain", "loop"), ratio("floor", "plain", "wall")
	printf "| **ioreplay ÷ Go floor: the engine, reading the trace, recording and reporting — goal ≤ 1.03 (loop), ≤ 1.06 (whole)** | %.2f | %.2f |\n", ratio("replay", "floor", "loop"), ratio("replay", "floor", "wall")
	if (nk > 6) printf "| ioreplay before this change ÷ Go floor | %.2f | %.2f |\n", ratio("before", "floor", "loop"), ratio("before", "floor", "wall")
	print ""
	printf "Medians of %d repetitions; the runs of a repetition are interleaved, in an order that rotates.\n", reps
	print "Loop: the C loop, or ioreplay'"'"'s replay phase (first call to last); wall and CPU: the whole process (for"
	print "ioreplay also reading and planning the trace, preparing the target, writing its own trace and the report)."
	gw = ratio("replay", "plain", "wall"); gl = ratio("replay", "plain", "loop")
	printf "\nGoal, ioreplay'"'"'s wall time ≤ 1.10 × the C loop'"'"'s (the issue'"'"'s words): %.2f, %s; in loop time: %.2f, %s.\n", gw, gw <= 1.10 ? "met" : "**not met**", gl, gl <= 1.10 ? "met" : "**not met**"
	printf "The Go floor, which does no more than any replay must: %.2f (wall), %.2f (loop).\n", ratio("floor", "plain", "wall"), ratio("floor", "plain", "loop")
	fl = ratio("replay", "floor", "loop"); fw = ratio("replay", "floor", "wall")
	printf "Goal, ioreplay ≤ 1.03 × the Go floor in loop time and ≤ 1.06 in wall time: %.3f, %s; %.3f, %s.\n", fl, fl <= 1.03 ? "met" : "**not met**", fw, fw <= 1.06 ? "met" : "**not met**"
}' "$tmp/one.txt"
echo
echo "### 2. Timing fidelity: $G calls recorded 500 µs apart, --timing original"
echo
awk '
BEGIN {
	print "| run | waiter | issue lag p50 (µs) | p99 (µs) | max (µs) | recorded (s) | replayed (s) | replayed ÷ recorded |"
	print "|---|---|---:|---:|---:|---:|---:|---:|"
	ok = 1
	peerok = 1
}
{
	r = $6 / $5
	printf "| %d | **ioreplay** | %.1f | %.1f | %.0f | %.4f | %.4f | %.4f |\n", $1, $2*1e6, $3*1e6, $4*1e6, $5, $6, r
	printf "| %d | C peer | %.1f | %.1f | %.0f | %.4f | %.4f | %.4f |\n", $1, $7*1e6, $8*1e6, $9*1e6, $5, $10, $10 / $5
	if (!($2 <= 20e-6 && $3 <= 200e-6 && r >= 0.98 && r <= 1.02)) ok = 0
	if (!($7 <= 20e-6 && $8 <= 200e-6)) peerok = 0
}
END {
	print ""
	print "The C peer (`bench/replay/deadlines.c`) issues the same 4 KiB pwrites at the same deadlines, waiting for"
	print "each with a calibrated clock_nanosleep and a spin, in the minute of its replay: its lag is the machine'"'"'s."
	print ""
	printf "Goals p50 ≤ 20 µs, p99 ≤ 200 µs, replayed duration within 2 %% of the recorded one, in every run: %s", ok ? "met" : "**not met**"
	if (peerok) printf ".\n"
	else if (ok) printf ", while the C peer missed them in some run (the machine stalled beyond what a waiter controls).\n"
	else printf " (nor by the C peer in every run: the machine stalled beyond what a waiter controls).\n"
}' "$tmp/two.txt"
echo
echo "### 3. Scale: $R ranks × $C and × $C2 calls, a barrier every 100 calls, --timing afap"
echo
sort -k1,1n -k2,2g "$tmp/three.txt" | awk -v r="$R" '
BEGIN {
	print "| ranks | calls per rank | events | replay phase (s) | wall (s) | events/s (replay phase) | peak RSS (MiB) |"
	print "|---:|---:|---:|---:|---:|---:|---:|"
}
$1 != last { # the first line of each size: its best wall time
	last = $1
	printf "| %d | %d | %d | %.2f | %.2f | %.0f | %.1f |\n", r, $1, $5, $4, $2, $5/$4, $3/1024
}
END {
	print ""
	print "Best of 2 runs of each size (by wall time). Peak RSS is the maximum resident set of the whole process."
}'
echo
echo "### 4. The waiter: $D calls of 1 µs recorded 0–5 µs apart, --timing think"
echo
awk -v dspan="$dspan" -v dcalls="$dcalls" -v n="$D" '
BEGIN {
	think = dspan - dcalls
	print "| run | replay | replayed (s) | think time kept (s) | recorded think time (s) | beyond it per call (µs) | issue lag p50 / p99 (µs) | CPU (s) |"
	print "|---|---|---:|---:|---:|---:|---:|---:|"
}
{
	kept = $3 - $4
	label = $2 == "before" ? "before this change" : "**ioreplay**"
	printf "| %d | %s | %.4f | %.4f | %.4f | %.2f | %.1f / %.1f | %.3f |\n", $1, label, $5, kept, think, (kept - think) / n * 1e6, $6 * 1e6, $7 * 1e6, $8
}
END {
	print ""
	printf "Recorded: a span of %.4f s, %.4f s of it in calls. The think time kept is the replay'"'"'s span less its calls'"'"' time\n", dspan, dcalls
	print "(from its own trace); what goes beyond the recorded think time is the waiter'"'"'s and the engine'"'"'s cost between calls,"
	print "and, on a loaded machine, the time the kernel gave the processor to others."
}' "$tmp/four.txt"
