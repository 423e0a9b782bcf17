#!/usr/bin/env bash
# The "Record" section of docs/BENCHMARKS.md: what iotrace record costs a
# program, side by side in one run, interleaved. Prints Markdown.
#
#   1. The preload shim (iotrace record --preload) on IOR's pattern: one
#      rank of `ior -a POSIX -w -r -t 4k -b 8m -F -i ITER` as IOR's POSIX
#      backend makes its calls (bench/record/ior.c: per transfer an lseek64
#      and a 4 KiB write or read), and on a tight loop of lseek64 + 4 KiB
#      write in place (ior.c loop). Each configuration runs untraced, under
#      iotrace record --preload as built from BASE (the commit before the
#      capture issue's changes: "before"), under this tree's (after), and,
#      for IOR's pattern, under the ptrace recorder (on PTRACE_ITER
#      iterations: it is slow). The figures, medians over ROUNDS rounds of
#      the per-round differences to the untraced run of the same round:
#        - extra wall time per transfer of the loop (the program times its
#          open-to-close phases, as IOR does), unpinned, and pinned with the
#          whole command on one CPU (taskset -c 0: iotrace, its helper work
#          and the program share it);
#        - extra CPU time of the program per transfer (its own process);
#        - the helper's CPU per recorded call: the CPU of the whole command
#          (getrusage of everything it waited for, bench/record/cpu.c) less
#          the program's, less the same for a run of 0 iterations (iotrace's
#          start, the shim's build check, the empty encode: given apart as
#          the fixed cost per run), divided by the calls recorded;
#        - the extra wall time of the whole command per transfer (iotrace's
#          start and the encode after the program included).
#      Then 4 ranks of IOR's pattern on the machine's CPUs at once (4
#      iotrace record --preload --rank R, one per rank, as mpirun starts
#      them): the extra CPU of the whole job over the untraced ranks.
#   2. N (200,000) × 4 KiB pwrite in C (pwrite.c): untraced, under
#      iotrace record (ptrace) of BASE (before) and of this tree, and
#      strace -f --seccomp-bpf -e
#      trace=pwrite64 -o /dev/null; pinned (taskset -c 0: tracer and
#      program share a CPU, as under mpirun --bind-to core) and unpinned,
#      PW_ROUNDS rounds. The per-call overhead is (traced − untraced loop
#      time) ÷ N; the acceptance test is its ratio to strace's, the median
#      of the rounds' ratios (≤ 0.5). The same ratio of the whole commands'
#      CPU time (tracer and program) is given beside it: a ptrace stop costs
#      context switches, whose wall time on two CPUs depends on how fast the
#      other CPU wakes (other jobs, the host), its CPU time far less.
#   3. M (1,000,000) untraced system calls of a few kinds a real program
#      makes (calls.c): untraced; with a one-instruction allow-all seccomp
#      filter and no tracer; with a filter the kernel's cache cannot hold;
#      under strace; under iotrace record; under iotrace record --preload.
#      Pinned and unpinned, CALL_REPS runs. The acceptance test: getppid,
#      the cheapest call, within 10 % of its untraced CPU time under iotrace.
#   4. The latency a trace shows: the same program (latency.c: an lseek
#      then a 512-byte read of a cached file, 4096 times) recorded with
#      iotrace record --raw-times (the tracer's cost in the times), iotrace
#      record (its cost taken out, following the run: docs/FORMAT.md, "The
#      recorder's cost") and iotrace record --preload; the read's p50
#      latency in each trace, medians of LAT_REPS runs, with the tracer and
#      the program free to share a processor, and kept apart (iotrace on
#      CPU 0, the program on CPU 1: every stop wakes a processor).
#   5. Processes: a shell starting PROCS (200) processes one after another
#      (`cat` of a 4 KiB file in the data directory, as a make or git
#      starts a process per step), and bench/record/spawn.c starting them
#      as git's run_command does (the child opens /dev/null and dup2s it
#      to its standard output before its exec), untraced, under iotrace record --preload
#      of BASE (before) and of this tree (after; its spools where
#      iotrace puts them, in $TMPDIR, and, where there is one, in
#      /dev/shm with --spool), and under iotrace record (ptrace) of BASE
#      and of this tree, with runs of 1 process for the fixed
#      cost (iotrace's start and encode; a record whose program started
#      processes measures the shim's cost per process start once, about
#      0.2 s); PROC_ROUNDS (7) interleaved rounds. Per process:
#      the extra wall time and CPU time of the whole command (program and
#      iotrace), and what the trace still holds of the recorder: its span
#      from the first file call to the last (bench/predict/span) less the
#      untraced loop's wall time, per process — the time a replay would
#      take for the program's own between its processes.
#
# Loop times are measured inside the programs. Data files go to /dev/shm
# when it exists (the file system's speed is not what is measured; the
# recorders are told --include it, since /dev is not recorded by default),
# spools to the default ($TMPDIR). Needs go, cc, git, strace, taskset.
# SKIP=1,2 leaves parts out. About twelve minutes on 2 cores.
#
#   bench/record/run.sh            # paste the output into docs/BENCHMARKS.md
set -euo pipefail
cd "$(dirname "$0")/../.."

BASE=${BASE:-9aaeba8f3f0594fe25ef1690c2d80184c6c5c24e}
ROUNDS=${ROUNDS:-7}
ITER=${ITER:-25}             # IOR iterations: 25 × 2 × 2048 transfers
LOOP_ITER=${LOOP_ITER:-50}   # tight loop: 50 × 2048 transfers
PTRACE_ITER=${PTRACE_ITER:-2}
RANKS=${RANKS:-4}
N=${N:-200000}
M=${M:-1000000}
PW_ROUNDS=${PW_ROUNDS:-7}
CALL_REPS=${CALL_REPS:-3}
LAT_REPS=${LAT_REPS:-5}
PROCS=${PROCS:-200}
PROC_ROUNDS=${PROC_ROUNDS:-7}
KINDS=${KINDS:-getppid clock_gettime mmap}
SKIP=${SKIP:-}

for tool in go cc git strace taskset; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool is required" >&2; exit 1; }
done
skip() { [[ ",$SKIP," == *",$1,"* ]]; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=$tmp/data
[ -d /dev/shm ] && [ -w /dev/shm ] && data=$(mktemp -d /dev/shm/iotrace-bench-record.XXXXXX)
trap 'rm -rf "$tmp" "$data"' EXIT
mkdir -p "$data"
# Both iotraces static, as README.md's Install builds them.
CGO_ENABLED=0 go build -o "$tmp/after/iotrace" ./cmd/iotrace
before=yes
if git cat-file -e "$BASE^{commit}" 2>/dev/null; then
	mkdir -p "$tmp/base"
	git archive "$BASE" | tar -x -C "$tmp/base"
	(cd "$tmp/base" && CGO_ENABLED=0 go build -o "$tmp/before/iotrace" ./cmd/iotrace)
else
	before=
	echo "run.sh: commit $BASE not here (a shallow clone?): no before figures" >&2
fi
go build -o "$tmp/span" ./bench/predict/span
cc -O2 -o "$tmp/ior" bench/record/ior.c
cc -O2 -o "$tmp/cpu" bench/record/cpu.c
cc -O2 -o "$tmp/pwrite" bench/record/pwrite.c
cc -O2 -o "$tmp/calls" bench/record/calls.c
cc -O2 -o "$tmp/latency" bench/record/latency.c
cc -O2 -o "$tmp/spawn" bench/record/spawn.c
# Each binary builds its own shim on first use, into its own cache.
for v in after ${before:+before}; do
	IOTRACE_CACHE=$tmp/$v/cache "$tmp/$v/iotrace" record --preload --include "$data" -o "$tmp/warm.iot" -- "$tmp/ior" "$data/warm" 8192 4096 1 >/dev/null
done

med() { tr ' ' '\n' <<<"$1" | { grep . || true; } | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
pre() { [ "$1" = pinned ] && echo "taskset -c 0" || true; }

# ior PIN TOOL ITER [loop] runs one configuration and prints "transfers
# loopwall loopcpu proccpu wall cpu" (ns): the program's figures, then the
# whole command's wall time and CPU.
ior() {
	local pin=$1 tool=$2 iter=$3 mode=${4:-}
	local cmd=("$tmp/ior" "$data/f" 8388608 4096 "$iter" $mode)
	case $tool in
	untraced) ;;
	before | after) cmd=(env IOTRACE_CACHE="$tmp/$tool/cache" "$tmp/$tool/iotrace" record --preload --include "$data" -o "$tmp/t.iot" -- "${cmd[@]}") ;;
	ptrace) cmd=("$tmp/after/iotrace" record --include "$data" -o "$tmp/t.iot" -- "${cmd[@]}") ;;
	esac
	local out
	out=$($(pre "$pin") "$tmp/cpu" "$tmp/cpu.out" "${cmd[@]}")
	rm -rf "${tmp:?}/t.iot"
	echo "$out $(cat "$tmp/cpu.out")"
}

tools="untraced ${before:+before} after"
declare -A R # R[key] = space-separated per-round values

# add KEY VALUE
add() { R[$1]+="$2 "; }

if ! skip 1; then
	for round in $(seq "$ROUNDS"); do
		for mode in ior loop; do
			it=$ITER
			[ $mode = loop ] && it=$LOOP_ITER
			m=""
			[ $mode = loop ] && m=loop
			declare -A ref=()
			for pin in unpinned pinned; do
				ts="$tools"
				[ $mode = ior ] && [ $pin = unpinned ] && ts+=" ptrace"
				for tool in $ts; do
					i=$it
					[ $tool = ptrace ] && i=$PTRACE_ITER
					read -r n lw lc pc w c < <(ior $pin $tool $i $m)
					calls=$((2 * n))
					[ $mode = ior ] && calls=$((calls + 6 * i)) || calls=$((calls + 2))
					if [ $tool = untraced ]; then
						ref[$pin]="$n $lw $lc $pc $w $c"
						if [ $pin = unpinned ] && [ $mode = ior ]; then
							ref[ptrace]="$lw $lc $pc $w $c"
							if [ "$PTRACE_ITER" != "$it" ]; then
								read -r _ lw0 lc0 pc0 w0 c0 < <(ior $pin untraced "$PTRACE_ITER")
								ref[ptrace]="$lw0 $lc0 $pc0 $w0 $c0"
							fi
						fi
						continue
					fi
					read -r _ blw blc bpc bw bc <<<"${ref[$pin]}"
					[ $tool = ptrace ] && read -r blw blc bpc bw bc <<<"${ref[ptrace]}"
					add "$mode,$pin,$tool,wall" "$(awk -v a="$lw" -v b="$blw" -v n="$n" 'BEGIN {print (a-b)/n/1000}')"
					add "$mode,$pin,$tool,cpu" "$(awk -v a="$lc" -v b="$blc" -v n="$n" 'BEGIN {print (a-b)/n/1000}')"
					add "$mode,$pin,$tool,cmdwall" "$(awk -v a="$w" -v b="$bw" -v n="$n" 'BEGIN {print (a-b)/n/1000}')"
					add "$mode,$pin,$tool,helper" "$((c - pc - (bc - bpc)))"
					add "$mode,$pin,$tool,calls" "$calls"
				done
			done
			# The fixed cost: runs of 0 iterations, unpinned.
			read -r _ _ _ pc0 _ c0 < <(ior unpinned untraced 0 $m)
			for tool in ${before:+before} after; do
				read -r _ _ _ pc _ c < <(ior unpinned $tool 0 $m)
				add "$mode,$tool,fixed" "$((c - pc - (c0 - pc0)))"
			done
		done
		# RANKS ranks at once.
		for tool in $tools; do
			rm -rf "${tmp:?}/job" && mkdir -p "$tmp/job"
			job="for r in \$(seq 0 $((RANKS - 1))); do "
			case $tool in
			untraced) job+="\"$tmp/ior\" \"$data/j\$r\" 8388608 4096 $ITER >/dev/null & " ;;
			*) job+="IOTRACE_CACHE=\"$tmp/$tool/cache\" \"$tmp/$tool/iotrace\" record --preload --include \"$data\" --rank \$r -o \"$tmp/job\" -- \"$tmp/ior\" \"$data/j\$r\" 8388608 4096 $ITER >/dev/null & " ;;
			esac
			job+="done; wait"
			"$tmp/cpu" "$tmp/cpu.out" bash -c "$job"
			read -r w c <"$tmp/cpu.out"
			add "job,$tool,cpu" "$c"
			add "job,$tool,wall" "$w"
		done
	done
fi

echo "## Record ($(date -u +%F), $(nproc) cores, Linux $(uname -r), $(strace -V | head -1 | sed 's/ -- version//'), $(go version | cut -d' ' -f3), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end)"
echo

# helper MODE PIN TOOL: the median helper CPU per call (µs), less the
# fixed cost of a run.
helperPerCall() {
	local mode=$1 pin=$2 tool=$3 fixed
	fixed=$(med "${R[$mode,$tool,fixed]:-0}")
	paste -d' ' <(tr ' ' '\n' <<<"${R[$mode,$pin,$tool,helper]}" | grep .) <(tr ' ' '\n' <<<"${R[$mode,$pin,$tool,calls]}" | grep .) |
		awk -v f="$fixed" '{print ($1-f)/$2/1000}' | tr '\n' ' '
}

if ! skip 1; then
	label() {
		case $1 in
		before) echo "iotrace record --preload, before (\`$(git rev-parse --short "$BASE")\`)" ;;
		after) echo "iotrace record --preload, after (this tree)" ;;
		ptrace) echo "iotrace record (ptrace, $PTRACE_ITER iterations)" ;;
		esac
	}
	echo "### The preload shim: what a recorded call costs, all of it"
	echo
	echo "Medians of $ROUNDS interleaved rounds of the per-round differences to the untraced run; µs per transfer (one transfer: an lseek64 and a 4 KiB write or read, two recorded calls) except the helper's CPU, per recorded call. Fixed: the helper's CPU per run that does not depend on the calls (iotrace's start, the shim's build check, the empty encode), measured on runs of 0 iterations."
	echo
	for mode in ior loop; do
		if [ $mode = ior ]; then
			echo "IOR's pattern, one rank (\`bench/record/ior.c\`: \`ior -a POSIX -w -r -t 4k -b 8m -F -i $ITER\`, $((ITER * 4096)) transfers):"
		else
			echo "Tight loop (\`ior.c loop\`: $((LOOP_ITER * 2048)) × lseek64 + 4 KiB write in place):"
		fi
		echo
		echo "| recorder | extra wall per transfer | extra program CPU per transfer | helper CPU per call | helper CPU fixed (ms) | extra wall per transfer, pinned to one CPU | extra wall of the whole command per transfer |"
		echo "|---|---:|---:|---:|---:|---:|---:|"
		ts="${before:+before} after"
		[ $mode = ior ] && ts+=" ptrace"
		for tool in $ts; do
			w=$(med "${R[$mode,unpinned,$tool,wall]}")
			c=$(med "${R[$mode,unpinned,$tool,cpu]}")
			h=$(med "$(helperPerCall $mode unpinned $tool)")
			f=$(med "${R[$mode,$tool,fixed]:-}")
			p=$(med "${R[$mode,pinned,$tool,wall]:-}")
			cw=$(med "${R[$mode,unpinned,$tool,cmdwall]}")
			awk -v l="$(label $tool)" -v w="$w" -v c="$c" -v h="$h" -v f="$f" -v p="$p" -v cw="$cw" -v t=$tool 'BEGIN {
				if (t == "ptrace") { printf "| %s | %.2f | %.2f | – | – | – | %.2f |\n", l, w, c, cw; exit }
				printf "| %s | %.2f | %.2f | %.3f | %.0f | %.2f | %.2f |\n", l, w, c, h, f/1e6, p, cw
			}'
		done
		echo
	done
	echo "$RANKS ranks of IOR's pattern at once on $(nproc) CPUs (\`iotrace record --preload --rank R\` per rank, as a launcher starts them), the whole job's CPU and wall time, medians of $ROUNDS rounds:"
	echo
	echo "| ranks run | job CPU (s) | extra job CPU (s) | job wall (s) |"
	echo "|---|---:|---:|---:|"
	jb=$(med "${R[job,untraced,cpu]}")
	for tool in $tools; do
		c=$(med "${R[job,$tool,cpu]}")
		w=$(med "${R[job,$tool,wall]}")
		l="untraced"
		[ $tool != untraced ] && l=$(label $tool)
		awk -v l="$l" -v c="$c" -v b="$jb" -v w="$w" -v t=$tool 'BEGIN {
			if (t == "untraced") printf "| %s | %.2f | – | %.2f |\n", l, c/1e9, w/1e9
			else printf "| %s | %.2f | %+.2f | %.2f |\n", l, c/1e9, (c-b)/1e9, w/1e9
		}'
	done
	echo
fi

# run PIN TOOL PROG ARGS… prints what PROG prints (loop times in ns).
run() {
	local pin=$1 tool=$2
	shift 2
	local pre=()
	[ "$pin" = pinned ] && pre=(taskset -c 0)
	case $tool in
	untraced) "${pre[@]}" "$@" ;;
	allow | argload) "${pre[@]}" "$@" "$tool" ;;
	iotrace) "${pre[@]}" "$tmp/after/iotrace" record -o "$tmp/trace.iot" -- "$@" ;;
	preload) IOTRACE_CACHE=$tmp/after/cache "${pre[@]}" "$tmp/after/iotrace" record --preload -o "$tmp/trace.iot" -- "$@" ;;
	strace) "${pre[@]}" strace -f --seccomp-bpf -e trace=pwrite64 -o /dev/null "$@" ;;
	esac
}

pins="pinned unpinned"
where() { [ "$1" = pinned ] && echo "pinned (taskset -c 0)" || echo unpinned; }

# pwrun PIN TOOL prints the pwrite loop's time and the CPU time of the
# whole command (tracer and program), in ns.
pwrun() {
	local pin=$1 tool=$2 cmd=("$tmp/pwrite" "$data/pwrite.dat" "$N")
	case $tool in
	iotrace) cmd=("$tmp/after/iotrace" record --include "$data" -o "$tmp/trace.iot" -- "${cmd[@]}") ;;
	before) cmd=("$tmp/before/iotrace" record --include "$data" -o "$tmp/trace.iot" -- "${cmd[@]}") ;;
	strace) cmd=(strace -f --seccomp-bpf -e trace=pwrite64 -o /dev/null "${cmd[@]}") ;;
	esac
	local l w
	rm -f "$tmp/trace.iot"
	l=$($(pre "$pin") "$tmp/cpu" "$tmp/cpu.out" "${cmd[@]}")
	if [ "$tool" = iotrace ] || [ "$tool" = before ]; then
		# Every pwrite recorded: a call the path rules leave out stops
		# the program at its entry only, half a recorded call's cost.
		w=$("$tmp/after/iotrace" stats "$tmp/trace.iot" 2>/dev/null | awk '$1 == "write" {print $2}')
		[ "$w" = "$N" ] || { echo "run.sh: part 2: $tool recorded ${w:-no} writes of $N" >&2; exit 1; }
	fi
	echo "$l $(cut -d' ' -f2 "$tmp/cpu.out")"
}

# ratios PIN KEY [TOOL] prints, per round, the ratio of TOOL's (iotrace's)
# overhead over the untraced run to strace's, for the values in
# P[PIN,TOOL,KEY].
ratios() {
	paste -d' ' <(tr ' ' '\n' <<<"${P[$1,untraced,$2]}" | grep .) <(tr ' ' '\n' <<<"${P[$1,${3:-iotrace},$2]}" | grep .) <(tr ' ' '\n' <<<"${P[$1,strace,$2]}" | grep .) |
		awk '{print ($2-$1)/($3-$1)}' | tr '\n' ' '
}

# span "v1 v2 …" prints "median (lowest–highest)".
span() {
	local v
	v=$(tr ' ' '\n' <<<"$1" | grep . | sort -g)
	printf "%.2f (%.2f–%.2f)" "$(med "$1")" "$(head -1 <<<"$v")" "$(tail -1 <<<"$v")"
}

if ! skip 2; then
	declare -A P
	pwtools="untraced iotrace strace"
	[ -n "$before" ] && pwtools="untraced before iotrace strace"
	for round in $(seq "$PW_ROUNDS"); do
		for pin in $pins; do
			for tool in $pwtools; do
				read -r l c < <(pwrun "$pin" "$tool") || true
				[ -n "${c:-}" ] || exit 1 # pwrun said why
				P[$pin,$tool,loop]+="$l "
				P[$pin,$tool,cpu]+="$c "
			done
		done
	done
	echo "### $N × 4 KiB pwrite in C: iotrace record (ptrace) against strace"
	echo
	echo "Command lines: \`pwrite\` (untraced), \`iotrace record --include DATA -o trace.iot -- pwrite\` (every pwrite recorded: entry and exit stop), \`strace -f --seccomp-bpf -e trace=pwrite64 -o /dev/null pwrite\`. $PW_ROUNDS interleaved rounds. The loop's time is measured by the program; the CPU time is the whole command's (tracer and program, \`bench/record/cpu.c\`). Each ratio is the median of the rounds' ratios of iotrace's overhead to strace's (each over the round's own untraced run), with the lowest and highest round."
	echo
	echo "| CPUs | run | loop (s) | µs per pwrite | overhead per call (µs) | overhead ÷ strace's | CPU overhead per call (µs) | CPU overhead ÷ strace's |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|"
	verdict=PASS
	for pin in $pins; do
		r=$(ratios "$pin" loop)
		rc=$(ratios "$pin" cpu)
		base=$(med "${P[$pin,untraced,loop]}")
		cbase=$(med "${P[$pin,untraced,cpu]}")
		for tool in $pwtools; do
			l=$(med "${P[$pin,$tool,loop]}")
			c=$(med "${P[$pin,$tool,cpu]}")
			label=$tool
			[ "$tool" = iotrace ] && label="iotrace record"
			[ "$tool" = before ] && label="iotrace record, before (\`$(git rev-parse --short "$BASE")\`)"
			[ "$tool" = strace ] && label="strace -f --seccomp-bpf"
			tr=$r trc=$rc
			[ "$tool" = before ] && tr=$(ratios "$pin" loop before) trc=$(ratios "$pin" cpu before)
			awk -v where="$(where "$pin")" -v label="$label" -v l="$l" -v c="$c" -v n="$N" -v base="$base" -v cbase="$cbase" -v tool="$tool" -v r="$(span "$tr")" -v rc="$(span "$trc")" 'BEGIN {
				if (tool == "untraced") { printf "| %s | %s | %.3f | %.2f | – | – | – | – |\n", where, label, l/1e9, l/n/1000; exit }
				printf "| %s | %s | %.3f | %.2f | %.2f | %s | %.2f | %s |\n", where, label, l/1e9, l/n/1000, (l-base)/n/1000, (tool == "strace" ? "1" : r), (c-cbase)/n/1000, (tool == "strace" ? "1" : rc)
			}'
		done
		awk -v r="$(med "$r")" 'BEGIN { exit !(r <= 0.5) }' || verdict=FAIL
	done
	echo
	echo "Per-call overhead of iotrace record (ptrace) ≤ 0.5 × strace's (the median of the rounds' ratios of loop times), pinned and unpinned: **$verdict**."
	echo
fi

if ! skip 3; then
	declare -A wall cpu
	for pin in $pins; do
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
fi

if ! skip 4; then
	head -c 1048576 /dev/zero >"$data/lat.dat"
	cat "$data/lat.dat" >/dev/null
	# p50 NS: the read p50 of a trace (iotrace stats), in ns.
	p50() {
		"$tmp/after/iotrace" stats "$1" | awk '$1 == "read" {
			v = $9; u = v; sub(/[0-9.]+/, "", u); n = v + 0
			if (u == "µs") n *= 1e3; else if (u == "ms") n *= 1e6; else if (u == "s") n *= 1e9
			print n }'
	}
	declare -A lat
	for where in together apart; do
		for rep in $(seq "$LAT_REPS"); do
			for how in raw corrected preload; do
				flags=()
				[ "$how" = raw ] && flags=(--raw-times)
				[ "$how" = preload ] && flags=(--preload)
				cmd=("$tmp/after/iotrace" record -q --include "$data" "${flags[@]}" -o "$tmp/lat.iot" -- "$tmp/latency" "$data/lat.dat")
				[ "$where" = apart ] && cmd=(taskset -c 0 "${cmd[@]}" 1)
				IOTRACE_CACHE=$tmp/after/cache "${cmd[@]}" >/dev/null
				lat[$where,$how]+="$(p50 "$tmp/lat.iot") "
			done
		done
	done
	echo "### Latency in the trace"
	echo
	echo "The same program (\`bench/record/latency.c\`: an lseek then a 512-byte read of a cached file, 4096 times) recorded three ways; the read's p50 latency in the trace, median of $LAT_REPS runs. *Apart*: iotrace on CPU 0, the program on CPU 1 (every ptrace stop wakes the other processor)."
	echo
	echo "| tracer and program | ptrace, raw (--raw-times) | ptrace, corrected | --preload |"
	echo "|---|---:|---:|---:|"
	for where in together apart; do
		awk -v w="$where" -v r="$(med "${lat[$where,raw]}")" -v c="$(med "${lat[$where,corrected]}")" -v p="$(med "${lat[$where,preload]}")" 'BEGIN {
			printf "| %s | %.2f µs | %.2f µs | %.2f µs |\n", w, r/1e3, c/1e3, p/1e3 }'
	done
	echo
fi

if ! skip 5; then
	head -c 4096 /dev/urandom >"$data/small"
	# procs HOW TOOL P: "wall cpu span" (ns; span 0 untraced) of a shell
	# (HOW sh) or bench/record/spawn.c (spawn) starting P processes.
	procs() {
		local how=$1 tool=$2 n=$3 cmd sp=0
		cmd=(sh -c 'i=0; while [ $i -lt "$1" ]; do cat "$2" >/dev/null; i=$((i + 1)); done' sh "$n" "$data/small")
		[ "$how" = spawn ] && cmd=("$tmp/spawn" "$n" "$data/small")
		case $tool in
		before | after) cmd=(env IOTRACE_CACHE="$tmp/$tool/cache" "$tmp/$tool/iotrace" record -q --preload --include "$data" -o "$tmp/p.iot" -- "${cmd[@]}") ;;
		shm) cmd=(env IOTRACE_CACHE="$tmp/after/cache" "$tmp/after/iotrace" record -q --preload --spool "$data/spool" --include "$data" -o "$tmp/p.iot" -- "${cmd[@]}") ;;
		ptrace-before) cmd=("$tmp/before/iotrace" record -q --include "$data" -o "$tmp/p.iot" -- "${cmd[@]}") ;;
		ptrace) cmd=("$tmp/after/iotrace" record -q --include "$data" -o "$tmp/p.iot" -- "${cmd[@]}") ;;
		esac
		"$tmp/cpu" "$tmp/cpu.out" "${cmd[@]}" >/dev/null
		rm -rf "${data:?}/spool"
		if [ "$tool" != untraced ] && [ "$n" -gt 0 ]; then
			sp=$("$tmp/span" "$tmp/p.iot" | sed 's/^span=\([0-9.]*\).*/\1/' | awk '{printf "%d", $1 * 1e9}')
		fi
		rm -rf "${tmp:?}/p.iot"
		echo "$(cat "$tmp/cpu.out") $sp"
	}
	declare -A P
	ptools=(untraced ${before:+before} after)
	[ "$data" != "$tmp/data" ] && ptools+=(shm) # the spools in /dev/shm too
	ptools+=(${before:+ptrace-before} ptrace) # and the ptrace recorder
	for round in $(seq "$PROC_ROUNDS"); do
		for how in sh spawn; do
			for k in $(seq 0 $((${#ptools[@]} - 1))); do
				tool=${ptools[$(((k + round) % ${#ptools[@]}))]}
				read -r w1 c1 _ <<<"$(procs "$how" "$tool" 1)"
				read -r w c sp <<<"$(procs "$how" "$tool" "$PROCS")"
				P[$how,$tool,w]+="$((w - w1)) " P[$how,$tool,c]+="$((c - c1)) " P[$how,$tool,s]+="$sp " P[$how,$tool,w1]+="$w1 "
			done
		done
	done
	# per-round differences to the untraced run of the same round
	diffs() { # diffs HOW TOOL KEY: per process, µs
		paste -d' ' <(tr ' ' '\n' <<<"${P[$1,$2,$3]}" | grep .) <(tr ' ' '\n' <<<"${P[$1,untraced,$4]}" | grep .) |
			awk -v n="$((PROCS - 1))" '{printf "%s ", ($1 - $2) / n / 1e3}'
	}
	# once DIFFS: the per-round wall of one process under TOOL less that
	# of the untraced run, ms
	once() {
		paste -d' ' <(tr ' ' '\n' <<<"${P[$1,$2,w1]}" | grep .) <(tr ' ' '\n' <<<"${P[$1,untraced,w1]}" | grep .) |
			awk '{printf "%s ", ($1 - $2) / 1e6}'
	}
	echo "### Processes: what the recorders cost a program that starts many"
	echo
	echo "A shell starting $PROCS processes one after another (\`cat\` of a 4 KiB file in the recorded directory), and a C program starting them as git's run_command does (\`bench/record/spawn.c\`: the child opens /dev/null and dup2s it to its standard output before its exec: calls the recording leaves out), untraced, under \`iotrace record --preload\` (its spools in \`\$TMPDIR\`, ${TMPDIR:-/tmp} here, on $(df --output=fstype "${TMPDIR:-/tmp}" | tail -1); and in /dev/shm) and under \`iotrace record\` (ptrace); medians over $PROC_ROUNDS interleaved rounds of the per-round differences to the untraced run, µs per process, each less the same command's run of 1 process (iotrace's start and encode, the shell's start, and what a record does once when its program started processes: it measures the shim's cost per process start, which it takes out of the trace). The recorder's whole time for that one process is below the table. *In the trace*: the trace's span from the first file call to the last, less the untraced loop's wall time — the recorder's time a replay would still take for the program's."
	echo
	echo "| starter | recorder | extra wall per process (µs) | extra CPU per process (µs) | in the trace per process (µs) |"
	echo "|---|---|---:|---:|---:|"
	for how in sh spawn; do
		for tool in "${ptools[@]:1}"; do
			label="iotrace record --preload, after (this tree)"
			[ "$tool" = before ] && label="iotrace record --preload, before (\`$(git rev-parse --short "$BASE")\`)"
			[ "$tool" = shm ] && label="iotrace record --preload --spool /dev/shm/…, after (the spools on tmpfs)"
			[ "$tool" = ptrace-before ] && label="iotrace record (ptrace), before (\`$(git rev-parse --short "$BASE")\`)"
			[ "$tool" = ptrace ] && label="iotrace record (ptrace), after (this tree)"
			printf '| %s | %s | %.1f | %.1f | %.1f |\n' "$how" "$label" "$(med "$(diffs "$how" "$tool" w w)")" "$(med "$(diffs "$how" "$tool" c c)")" "$(med "$(diffs "$how" "$tool" s w)")"
		done
	done
	echo
	for how in sh spawn; do
		printf 'Extra wall time of the run of 1 process (%s), the recorder'"'"'s fixed cost:' "$how"
		for tool in "${ptools[@]:1}"; do
			printf ' %s %.1f ms;' "$tool" "$(med "$(once "$how" "$tool")")"
		done
		echo
	done
	echo
fi
