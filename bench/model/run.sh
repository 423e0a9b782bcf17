#!/usr/bin/env bash
# Before and after one model of file state (trace/state): the costs the
# model could have raised, measured side by side in one run, BASE (the
# tree before it: the commit before "trace: the ops real programs make")
# against the current tree. Prints the Markdown of docs/BENCHMARKS.md's
# "One model of file state" section; progress on standard error.
#
#   1. replay: one rank, N (200,000) × 4 KiB pwrite (bench/replay/gentrace)
#      replayed with --timing afap into /dev/shm; loop time (the replay
#      phase, elapsed_seconds of --summary) and wall time of the process.
#      Every call now goes through the follower of the rank's descriptors.
#   2. plan: BenchmarkPlan of package replay (the plan of that trace, per
#      event): the namespace, the merge of ranks. Script expansion:
#      BenchmarkExpandAllRanks of package script (ns per event of three
#      scripts), whose interpreter now follows its own events with the
#      model.
#   3. capture: N × 4 KiB pwrite in C (bench/record/pwrite.c), pinned to
#      one CPU, under iotrace record (ptrace) and iotrace record --preload;
#      the overhead per call over the untraced loop.
#   4. trace size: the trace of 3 in bytes per event, and of a real
#      program (tar czf of a 200-file tree, ptrace and --preload), which
#      now records more (process events, the calls the model gained).
#
# Runs are interleaved (their order rotates each repetition); medians of
# REPS (9). Needs go, cc, tar, gzip, taskset, /usr/bin/time and /dev/shm;
# about five minutes.
#
#   bench/model/run.sh > /tmp/model.md
set -euo pipefail
cd "$(dirname "$0")/../.."

N=${N:-200000}
REPS=${REPS:-9}
BASE=${BASE:-$(git log --format=%H -n 1 --grep='^trace: the ops real programs make')^}

for tool in go cc tar gzip taskset /usr/bin/time; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool is required" >&2; exit 1; }
done

tmp=$(mktemp -d)
shm=$(mktemp -d /dev/shm/iotrace-model.XXXXXX)
cleanup() {
	git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true
	rm -rf "$tmp" "$shm"
}
trap cleanup EXIT
git worktree add --detach "$tmp/base" "$BASE" >/dev/null 2>&1
for side in base head; do
	src=.
	[ "$side" = base ] && src=$tmp/base
	mkdir -p "$tmp/$side"
	(cd "$src" && CGO_ENABLED=0 go build -o "$tmp/$side/" ./cmd/iotrace ./cmd/ioreplay && go test -c -o "$tmp/$side/replay.test" ./replay &&
		go test -c -o "$tmp/$side/script.test" ./script)
done
go build -o "$tmp/gentrace" ./bench/replay/gentrace
cc -O2 -o "$tmp/pwrite" bench/record/pwrite.c
export IOTRACE_CACHE=$tmp/cache # the preload shim, built on first use (per binary: its hash)

jnum() { grep -o "\"$2\": *[-0-9.e+]*" "$1" | head -1 | sed 's/.*: *//'; }
now() { date +%s%N; }
med() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# 1. replay
echo "run.sh: 1. replay, $REPS repetitions" >&2
"$tmp/gentrace" pwrite -o "$tmp/pwrite.iot" -calls "$N" -path /bench/replay.dat
declare -A loop wall
for rep in $(seq "$REPS"); do
	sides=(base head)
	[ $((rep % 2)) = 0 ] && sides=(head base)
	for side in "${sides[@]}"; do
		s=$(now)
		"$tmp/$side/ioreplay" --timing afap --quiet --target "$shm/target" --summary "$tmp/s.json" "$tmp/pwrite.iot" >/dev/null
		e=$(now)
		rm -rf "${shm:?}/target"
		loop[$side]+="$(jnum "$tmp/s.json" elapsed_seconds) "
		wall[$side]+="$(awk -v d=$((e - s)) 'BEGIN {print d / 1e9}') "
	done
done

# 2. plan
echo "run.sh: 2. plan" >&2
declare -A plan
for rep in $(seq 3); do
	for side in base head; do
		plan[$side]+="$("$tmp/$side/replay.test" -test.run XXX -test.bench BenchmarkPlan -test.benchtime 20x | awk '/ns\/event/ {for (i = 1; i < NF; i++) if ($(i+1) == "ns/event") print $i}') "
	done
done

declare -A expand
for rep in $(seq 3); do
	for side in base head; do
		while read -r name v; do
			expand[$side,$name]+="$v "
		done < <("$tmp/$side/script.test" -test.run XXX -test.bench BenchmarkExpandAllRanks -test.benchtime 10x |
			awk '/ns\/event/ {n = $1; sub(/^BenchmarkExpandAllRanks\//, "", n); sub(/-[0-9]+$/, "", n); for (i = 1; i < NF; i++) if ($(i+1) == "ns/event") print n, $i}')
	done
done

# 3. capture
echo "run.sh: 3. capture, $REPS repetitions" >&2
declare -A cap
for rep in $(seq "$REPS"); do
	# The file is outside /dev (which iotrace record leaves out by default).
	cap[untraced]+="$(taskset -c 0 "$tmp/pwrite" "$tmp/p.dat" "$N") "
	sides=(base head)
	[ $((rep % 2)) = 0 ] && sides=(head base)
	for side in "${sides[@]}"; do
		cap[$side,ptrace]+="$(taskset -c 0 "$tmp/$side/iotrace" record -o "$tmp/$side-ptrace.iot" -- "$tmp/pwrite" "$tmp/p.dat" "$N") "
		cap[$side,preload]+="$(taskset -c 0 "$tmp/$side/iotrace" record --preload -o "$tmp/$side-preload.iot" -- "$tmp/pwrite" "$tmp/p.dat" "$N") "
	done
done
rm -f "$tmp/p.dat"

# 4. sizes
echo "run.sh: 4. trace sizes" >&2
mkdir -p "$tmp/tree/src"
for i in $(seq 200); do head -c $((i * 97)) /dev/urandom | base64 >"$tmp/tree/src/f$i.txt"; done
events() { "$tmp/head/iotrace" stats --format json "$1" | grep -o '"events": *[0-9]*' | head -1 | sed 's/.*: *//'; }
declare -A size nev
for side in base head; do
	for mode in ptrace preload; do
		f=$tmp/$side-$mode.iot
		size[$side,$mode,pw]=$(stat -c %s "$f")
		nev[$side,$mode,pw]=$(events "$f")
		flag=()
		[ "$mode" = preload ] && flag=(--preload)
		rm -f "$tmp/tree/a.tgz" "$tmp/$side-$mode-tar.iot"
		(cd "$tmp/tree" && "$tmp/$side/iotrace" record "${flag[@]}" --include "$tmp/tree" -o "$tmp/$side-$mode-tar.iot" -- tar czf a.tgz src)
		size[$side,$mode,tar]=$(stat -c %s "$tmp/$side-$mode-tar.iot")
		nev[$side,$mode,tar]=$(events "$tmp/$side-$mode-tar.iot")
	done
done

base_short=$(git rev-parse --short "$BASE")
echo "## One model of file state: before and after ($(date -u +%F), $(nproc) cores, $(go version | cut -d' ' -f3))"
echo
echo "\`bench/model/run.sh\`: $base_short (before the model) against the current tree, side by side in one run, interleaved; medians of $REPS runs."
echo
echo "| what | before | after | after ÷ before |"
echo "|---|---:|---:|---:|"
row() { awk -v w="$1" -v b="$2" -v a="$3" -v f="$4" 'BEGIN {printf "| %s | " f " | " f " | %.2f |\n", w, b, a, (b > 0 ? a / b : 0)}'; }
row "replay, $N × 4 KiB pwrite, afap: loop (s)" "$(med "${loop[base]}")" "$(med "${loop[head]}")" "%.3f"
row "replay: wall time of ioreplay (s)" "$(med "${wall[base]}")" "$(med "${wall[head]}")" "%.3f"
row "plan (BenchmarkPlan, ns per event)" "$(med "${plan[base]}")" "$(med "${plan[head]}")" "%.1f"
for name in barrier-64 parabench-listing3-16 beffio-8; do
	row "script expansion, $name (BenchmarkExpandAllRanks, ns per event)" "$(med "${expand[base,$name]}")" "$(med "${expand[head,$name]}")" "%.1f"
done
u=$(med "${cap[untraced]}")
for mode in ptrace preload; do
	label="iotrace record"
	[ "$mode" = preload ] && label="iotrace record --preload"
	b=$(awk -v l="$(med "${cap[base,$mode]}")" -v u="$u" -v n="$N" 'BEGIN {print (l - u) / n / 1000}')
	a=$(awk -v l="$(med "${cap[head,$mode]}")" -v u="$u" -v n="$N" 'BEGIN {print (l - u) / n / 1000}')
	row "capture overhead per pwrite, $label, pinned (µs)" "$b" "$a" "%.2f"
done
for mode in ptrace preload; do
	label="iotrace record"
	[ "$mode" = preload ] && label="iotrace record --preload"
	row "trace of the pwrite loop, $label: bytes per event" "$(awk -v s="${size[base,$mode,pw]}" -v n="${nev[base,$mode,pw]}" 'BEGIN {print s / n}')" "$(awk -v s="${size[head,$mode,pw]}" -v n="${nev[head,$mode,pw]}" 'BEGIN {print s / n}')" "%.2f"
done
for mode in ptrace preload; do
	label="iotrace record --include"
	[ "$mode" = preload ] && label="iotrace record --preload --include"
	echo "| \`tar czf\` of 200 files, $label: events | ${nev[base,$mode,tar]} | ${nev[head,$mode,tar]} | $(awk -v b="${nev[base,$mode,tar]}" -v a="${nev[head,$mode,tar]}" 'BEGIN {printf "%.2f", a / b}') |"
	echo "| \`tar czf\` of 200 files, $label: bytes | ${size[base,$mode,tar]} | ${size[head,$mode,tar]} | $(awk -v b="${size[base,$mode,tar]}" -v a="${size[head,$mode,tar]}" 'BEGIN {printf "%.2f", a / b}') |"
done
echo
echo "Untraced pwrite loop: $(awk -v u="$u" -v n="$N" 'BEGIN {printf "%.2f", u / n / 1000}') µs per call (pinned)."
