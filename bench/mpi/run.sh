#!/usr/bin/env bash
# Benchmarks of the MPI side, in one run, side by side; prints the Markdown
# of the "MPI" section of docs/BENCHMARKS.md.
#
#   1. Preload shim overhead per call: N (1,000,000) × 64-byte pwrite in C,
#      untraced and under iotrace record --preload (and, for reference,
#      under the ptrace recorder), REPS (5) times interleaved. The program
#      times its own loop (wall and CPU); the overhead per call is
#      (recorded − untraced) ÷ N, from the medians.
#      The shim's own cost without the system call (two clock readings and
#      a record into the thread's block of the spool: bench/mpi/emit.c) is measured too; it
#      does not depend on the system call's noise.
#   2. A collective strided write through a view (P ranks, K × B bytes
#      each with MPI_File_write_all; K (512) × B (1 MiB): 1 GiB in all with
#      2 ranks, each run over the file the previous one wrote, so that a
#      virtual machine's first touch of fresh memory is not what is timed):
#      the C program (bench/mpi/strided.c)
#      against ioreplay --mpi --backend mpiio --timing afap replaying the
#      trace of that program recorded with --preload, under mpirun -np P,
#      MREPS (15) rounds of runs, one rank per core; the ratio is the
#      median of the rounds' ratios. A third program in each round is
#      ioreplay with every core in each process (GOMAXPROCS), as ioreplay
#      ran before each process took its share of the node's. Both time the same span:
#      the open to the end of the close (the program with MPI_Wtime,
#      ioreplay its elapsed time from the common start, without the
#      program's barrier and reduction around it: --skip-ops comm). The
#      table also gives the ratios of the medians and of the fastest runs.
#
# Files go to /dev/shm when it exists (the file system's speed is not what
# is measured), else $TMPDIR. Needs go, cc, mpicc and mpirun.
#
#   bench/mpi/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

N=${N:-1000000}
REPS=${REPS:-5}
# One rank per core: with more, Open MPI's busy waiting in collectives
# (which the C program does and ioreplay's waiting ranks do not) dominates.
cores=$(nproc)
P=${P:-$((cores < 2 ? 2 : cores > 8 ? 8 : cores))}
B=${B:-1048576}
K=${K:-512}
MREPS=${MREPS:-15}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

for tool in go cc mpicc mpirun; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool is required" >&2; exit 1; }
done

base=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && base=/dev/shm
tmp=$(mktemp -d "$base/iotrace-bench-mpi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export IOTRACE_CACHE=$tmp/cache
CGO_ENABLED=0 go build -o "$tmp/iotrace" ./cmd/iotrace # static, as README.md's Install builds it (ioreplay -tags mpi needs cgo)
go build -tags mpi -o "$tmp/ioreplay" ./cmd/ioreplay
cc -O2 -o "$tmp/pwrite64" bench/mpi/pwrite64.c
mpicc -O2 -o "$tmp/strided" bench/mpi/strided.c
cc -O2 -I capture/preload/shim -o "$tmp/emit" bench/mpi/emit.c capture/preload/shim/shim.c -ldl -lpthread
mpirun_() { mpirun -np "$P" --oversubscribe --bind-to none "$@"; }

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
med() { tr ' ' '\n' <<<"$1" | grep . | median; }

# 1. Shim overhead.
"$tmp/iotrace" record --preload -o "$tmp/warm.iot" -- "$tmp/pwrite64" "$tmp/pw.dat" 1000 >/dev/null # builds the shim
declare -A wall cpu
for rep in $(seq "$REPS"); do
	for tool in untraced preload ptrace; do
		rm -rf "${tmp:?}/pw.iot"
		case $tool in
		untraced) out=$("$tmp/pwrite64" "$tmp/pw.dat" "$N") ;;
		preload) out=$("$tmp/iotrace" record --preload --include "$tmp" -o "$tmp/pw.iot" -- "$tmp/pwrite64" "$tmp/pw.dat" "$N") ;;
		ptrace) out=$("$tmp/iotrace" record --include "$tmp" -o "$tmp/pw.iot" -- "$tmp/pwrite64" "$tmp/pw.dat" "$N") ;;
		esac
		read -r w c <<<"$out"
		wall[$tool]+="$w "
		cpu[$tool]+="$c "
	done
done
# The last run is the ptrace recorder's; check the preload trace once more.
rm -rf "${tmp:?}/pw.iot"
"$tmp/iotrace" record --preload --include "$tmp" -o "$tmp/pw.iot" -- "$tmp/pwrite64" "$tmp/pw.dat" "$N" >/dev/null
events=$("$tmp/iotrace" stats "$tmp/pw.iot" | head -1 | awk '{print $3}')

# The shim's own cost, without the system call.
emit_w="" emit_c=""
for rep in $(seq "$REPS"); do
	mkdir -p "$tmp/spool" && rm -f "$tmp/spool"/*
	read -r w c < <(IOTRACE_SPOOL="$tmp/spool" "$tmp/emit" 5000000)
	emit_w+="$w "
	emit_c+="$c "
done
echo "### Preload shim: overhead per call"
echo
echo "$N × 64-byte \`pwrite\` to a file in $base, medians of $REPS interleaved runs; the"
echo "program times its own loop (\`bench/mpi/pwrite64.c\`)."
echo
echo "| recorder | loop wall (ms) | loop CPU (ms) | per call wall (ns) | overhead per call, wall (ns) | overhead per call, CPU (ns) |"
echo "|---|---:|---:|---:|---:|---:|"
uw=$(med "${wall[untraced]}")
uc=$(med "${cpu[untraced]}")
for tool in untraced preload ptrace; do
	w=$(med "${wall[$tool]}")
	c=$(med "${cpu[$tool]}")
	name=$tool
	[ "$tool" = preload ] && name="iotrace record --preload"
	[ "$tool" = ptrace ] && name="iotrace record (ptrace)"
	awk -v n="$name" -v w="$w" -v c="$c" -v uw="$uw" -v uc="$uc" -v N="$N" 'BEGIN {
		ow = n == "untraced" ? "–" : sprintf("%.0f", (w - uw) / N)
		oc = n == "untraced" ? "–" : sprintf("%.0f", (c - uc) / N)
		printf "| %s | %.1f | %.1f | %.0f | %s | %s |\n", n, w / 1e6, c / 1e6, w / N, ow, oc
	}'
done
echo "| the shim's recording alone, no system call (\`bench/mpi/emit.c\`) | | | | $(med "$emit_w") | $(med "$emit_c") |"
echo
echo "A preload trace of the loop holds $events events: its $N pwrites, the open and the close. The"
echo "program's threads do the recording; the encode after the program is in the Record section's helper CPU."
echo

# 2. MPI-IO collective strided write: C against ioreplay --backend mpiio.
(cd "$tmp" && mpirun_ "$tmp/iotrace" record --preload --include "$tmp" -o "$tmp/strided.iot" -- "$tmp/strided" "$tmp/strided.dat" "$B" "$K" >/dev/null)
# Both write over the file of their previous run: a first run of each (not
# counted) makes it, so that what is timed is MPI-IO writing, not the VM's
# host backing fresh tmpfs pages (which varies by a factor of two).
# Three programs per round, back to back, in an order that rotates: the C
# program, ioreplay, and ioreplay with every core in each process
# (GOMAXPROCS=$cores, as before each process took its share of the node's:
# docs/MPI.md, "Processors").
declare -A secs ratios
run_prog() {
	case $1 in
	c) mpirun_ "$tmp/strided" "$tmp/strided.dat" "$B" "$K" >"$tmp/c.txt" ;;
	replay | allcores)
		local env=()
		[ "$1" = allcores ] && env=(-x GOMAXPROCS="$cores")
		mpirun_ "${env[@]}" "$tmp/ioreplay" --mpi --backend mpiio --timing afap --target "$tmp/target" --quiet \
			--summary "$tmp/sum-$1.json" --format json -o /dev/null --skip-ops comm "$tmp/strided.iot"
		;;
	esac
}
progs=(c replay allcores)
for rep in $(seq 0 "$MREPS"); do
	for k in 0 1 2; do
		run_prog "${progs[$(((k + rep) % 3))]}"
	done
	[ "$rep" = 0 ] && continue
	c=$(cat "$tmp/c.txt")
	secs[c]+="$c "
	for p in replay allcores; do
		r=$(grep '"elapsed_seconds"' "$tmp/sum-$p.json" | tr -dc '0-9.')
		secs[$p]+="$r "
		ratios[$p]+="$(awk -v c="$c" -v r="$r" 'BEGIN {printf "%.4f", r / c}') "
	done
done
fastest() { tr ' ' '\n' <<<"$1" | grep . | sort -n | head -1; }
c=$(med "${secs[c]}")
cmin=$(fastest "${secs[c]}")
pr=$(med "${ratios[replay]}")
mb=$(awk -v p="$P" -v b="$B" -v k="$K" 'BEGIN {printf "%.0f", p * b * k / 1048576}')

echo "### MPI-IO: a collective strided write, ioreplay --backend mpiio against C"
echo
echo "$P ranks (\`mpirun -np $P\`), each writing $K × $((B / 1024)) KiB with \`MPI_File_write_all\`"
echo "through a view of $((B / 1024)) KiB blocks every $((P * B / 1024)) KiB ($mb MiB in all) to $base;"
echo "$MREPS rounds of three runs back to back (in an order that rotates), each from the open to the"
echo "end of the close, each over the file its previous run wrote (a first round, not counted, makes"
echo "them). The ratio is taken within each round, then the median over the rounds, as in the Replay"
echo "benchmarks: the machine's speed drifts from minute to minute, and a round shares its minute."
echo
echo "| program | median (s) | MB/s | fastest (s) | ratio to C: median of the rounds' | of the medians | of the fastest |"
echo "|---|---:|---:|---:|---:|---:|---:|"
awk -v c="$c" -v cm="$cmin" -v mb="$mb" 'BEGIN {
	printf "| C program (bench/mpi/strided.c) | %.3f | %.0f | %.3f | 1.00 | 1.00 | 1.00 |\n", c, mb * 1.048576 / c, cm
}'
for p in replay allcores; do
	name="**ioreplay --mpi --backend mpiio** (its trace)"
	[ "$p" = allcores ] && name="ioreplay, every core in each process (GOMAXPROCS=$cores)"
	awk -v n="$name" -v c="$c" -v r="$(med "${secs[$p]}")" -v cm="$cmin" -v rm="$(fastest "${secs[$p]}")" -v mb="$mb" -v pr="$(med "${ratios[$p]}")" 'BEGIN {
		printf "| %s | %.3f | %.0f | %.3f | %.2f | %.2f | %.2f |\n", n, r, mb * 1.048576 / r, rm, pr, r / c, rm / cm
	}'
done
echo
echo "Ratios of ioreplay's rounds, in order: ${ratios[replay]}"
awk -v pr="$pr" 'BEGIN {printf "\nGoal, ioreplay ÷ C ≤ 1.10 (median of the rounds'"'"' ratios): %.2f, %s.\n", pr, pr <= 1.10 ? "met" : "**not met**"}'
