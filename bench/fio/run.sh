#!/usr/bin/env bash
# ioreplay against fio replaying the same trace, measured side by side in
# one run; prints the Markdown of the "fio" section of docs/BENCHMARKS.md.
#
# The trace: one rank, N (200,000) × 4 KiB pwrite at (i mod 256) × 4 KiB
# to one file (bench/replay/gentrace pwrite). ioreplay replays it with
# --timing afap; fio replays the job 'iotrace convert --to fio --timing
# afap' wrote for it (replay_no_stall=1, ioengine=psync: one pwrite per
# entry). Both write to /dev/shm, so the file system costs little and the
# replayers' own costs show. REPS (5) repetitions alternate which runs
# first; ratios are taken within each repetition, and their medians
# reported. Goal: ioreplay at least 2× faster (whole command).
#
# Needs go, fio and /dev/shm. IOREPLAY=PATH runs a prebuilt ioreplay
# instead of this tree's.
#
#   bench/fio/run.sh            # about half a minute
set -euo pipefail
cd "$(dirname "$0")/../.."

N=${N:-200000}
REPS=${REPS:-5}

for tool in go fio; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool is required" >&2; exit 1; }
done
[ -d /dev/shm ] || { echo "run.sh: /dev/shm is required" >&2; exit 1; }

tmp=$(mktemp -d)
shm=$(mktemp -d /dev/shm/iotrace-fio-bench.XXXXXX)
trap 'rm -rf "$tmp" "$shm"' EXIT
if [ -n "${IOREPLAY:-}" ]; then
	cp "$IOREPLAY" "$tmp/ioreplay"
else
	CGO_ENABLED=0 go build -o "$tmp/ioreplay" ./cmd/ioreplay # static, as README.md's Install builds it
fi
CGO_ENABLED=0 go build -o "$tmp/iotrace" ./cmd/iotrace
go build -o "$tmp/gentrace" ./bench/replay/gentrace

"$tmp/gentrace" pwrite -o "$tmp/pwrite.iot" -calls "$N" -path /bench/replay.dat
mkdir -p "$tmp/job"
"$tmp/iotrace" convert --timing afap --target "$shm/fio" -o "$tmp/job/pwrite.fio" "$tmp/pwrite.iot" 2>/dev/null

now() { date +%s%N; }
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
# fiosum KEY FILE: the sum of KEY ("job_runtime", or "write.total_ios")
# over the rank jobs of fio's JSON output (pretty-printed, one field a line).
fiosum() {
	awk -v key="$1" '
		/"jobname"/ { split($0, a, "\""); rank = (a[4] ~ /^rank/) }
		/^      "(read|write|trim|sync)" : \{/ { split($0, a, "\""); sect = a[2] }
		{
			split($0, a, "\"")
			name = a[2]
			full = (key ~ /\./) ? sect "." name : name
			if (rank && full == key && (key ~ /\./ || sect == "" || name == "job_runtime")) {
				v = $0; sub(/.*: */, "", v); sub(/,.*/, "", v); sum += v
			}
		}
		/^      "job_runtime"/ { sect = "" }
		END { print sum + 0 }' "$2"
}
jnum() { grep -o "\"$2\" *: *[-0-9.e+]*" "$1" | head -1 | sed 's/.*: *//'; }

run_ioreplay() {
	rm -rf "${shm:?}/ioreplay"
	local s e
	s=$(now)
	/usr/bin/time -f "%U %S" -o "$tmp/cpu" "$tmp/ioreplay" --timing afap --quiet --target "$shm/ioreplay" \
		--summary "$tmp/s.json" "$tmp/pwrite.iot" >/dev/null
	e=$(now)
	r_wall+="$((e - s)) "
	r_loop+="$(awk -v s="$(jnum "$tmp/s.json" elapsed_seconds)" 'BEGIN {printf "%d", s * 1e9}') "
	r_cpu+="$(awk '{printf "%d", ($1 + $2) * 1e9}' "$tmp/cpu") "
}

run_fio() {
	rm -rf "${shm:?}/fio"
	local s e
	s=$(now)
	(cd "$tmp/job" && /usr/bin/time -f "%U %S" -o "$tmp/cpu" fio --output-format=json pwrite.fio >"$tmp/fio.out")
	e=$(now)
	f_wall+="$((e - s)) "
	# job_runtime (ms) of the rank job: fio's own time of the replay.
	sed -n '/^{/,$p' "$tmp/fio.out" >"$tmp/fio.json"
	f_loop+="$(fiosum job_runtime "$tmp/fio.json" | awk '{printf "%d", $1 * 1e6}') "
	f_cpu+="$(awk '{printf "%d", ($1 + $2) * 1e9}' "$tmp/cpu") "
	writes=$(fiosum write.total_ios "$tmp/fio.json")
	if [ "$writes" != "$N" ]; then
		echo "run.sh: fio issued $writes writes, not $N" >&2
		exit 1
	fi
}

r_wall="" r_loop="" r_cpu="" f_wall="" f_loop="" f_cpu=""
ratio_wall="" ratio_loop="" ratio_cpu=""
for rep in $(seq "$REPS"); do
	if ((rep % 2)); then run_ioreplay; run_fio; else run_fio; run_ioreplay; fi
	last() { awk '{print $NF}' <<<"$1"; }
	ratio_wall+="$(awk -v f="$(last "$f_wall")" -v r="$(last "$r_wall")" 'BEGIN {print f / r}') "
	ratio_loop+="$(awk -v f="$(last "$f_loop")" -v r="$(last "$r_loop")" 'BEGIN {print f / r}') "
	ratio_cpu+="$(awk -v f="$(last "$f_cpu")" -v r="$(last "$r_cpu")" 'BEGIN {print f / r}') "
done

rw=$(med "$ratio_wall")
echo "### ioreplay and fio: $N × 4 KiB pwrite to /dev/shm, as fast as possible"
echo
echo "Output of \`bench/fio/run.sh\` on $(nproc) CPUs ($(uname -r), $(go version | cut -d' ' -f3), $(fio --version)), $(date -u +%Y-%m-%d)."
echo "ioreplay --timing afap against fio running the job of \`iotrace convert --to fio --timing afap\` (replay_no_stall=1, psync)."
echo "Medians of $REPS interleaved runs; ratios within each run. Whole command: from start to exit (ioreplay reads and plans"
echo "the trace, replays it, records and reports its own trace; fio parses the job and the iolog, replays it, prints JSON)."
echo "Replay phase: ioreplay's elapsed_seconds, fio's job_runtime."
echo
echo "| | ioreplay | fio | fio ÷ ioreplay |"
echo "|---|---:|---:|---:|"
awk -v r="$(med "$r_wall")" -v f="$(med "$f_wall")" -v x="$rw" 'BEGIN {printf "| whole command (s) | %.3f | %.3f | **%.2f** |\n", r/1e9, f/1e9, x}'
awk -v r="$(med "$r_loop")" -v f="$(med "$f_loop")" -v x="$(med "$ratio_loop")" -v n="$N" 'BEGIN {printf "| replay phase (s) | %.3f | %.3f | %.2f |\n| replay phase per call (µs) | %.2f | %.2f | |\n", r/1e9, f/1e9, x, r/n/1e3, f/n/1e3}'
awk -v r="$(med "$r_cpu")" -v f="$(med "$f_cpu")" -v x="$(med "$ratio_cpu")" 'BEGIN {printf "| CPU time, user + system (s) | %.3f | %.3f | %.2f |\n", r/1e9, f/1e9, x}'
echo
awk -v x="$rw" 'BEGIN {v = (x >= 2) ? "PASS" : "FAIL"; printf "Goal: ioreplay at least 2× faster than fio (whole command): %.2f×, **%s**.\n", x, v}'
