#!/usr/bin/env bash
# Prediction benchmark: does a replay on file system B tell how long the
# application's I/O takes on B? (docs/BENCHMARKS.md, "Prediction")
#
# Applications (APPS; Debian packages no IOR or mdtest, so two small C
# programs here make exactly their calls: bench/predict/ior.c, mdtest.c),
# at SIZES=small (the default), or large (in parentheses: a run on tmpfs
# takes tens of milliseconds instead of 1-16; tried on 2026-11-29, the
# runs did not vary less from one to the next, and mdtest on the disk met
# ext4's inode allocator, see docs/BENCHMARKS.md):
#
#   ior-posix     mpirun -np 2 ior -a POSIX -F -e -b 8m (64m) -t 256k: file
#                 per process, lseek+write, fsync, stat, close; barrier;
#                 lseek+read back (from the page cache, as IOR without -C)
#   ior-direct    the same with O_DIRECT, -b 4m (32m) -t 128k
#   ior-mpiio     mpirun -np 2 ior -a MPIIO -c -e -b 4m -t 1m -s 2 (8): one
#                 shared file, MPI_File_write_at_all, MPI_File_sync,
#                 read_at_all
#   mdtest        mpirun -np 2 mdtest -n 200 (2000): mkdir/stat/rmdir n/4
#                 directories, create/stat/unlink n empty files per rank
#   mdtest-fsync  mpirun -np 2 mdtest -n 50 (200) -w 4096 -y: each file
#                 written (4 KiB) and fsynced before its close, read back,
#                 removed
#   h5py          mpirun -np 2 python3 h5.py: 4 (16) time steps of 2 MiB
#                 per rank written collectively through h5py's MPI driver,
#                 read back collectively
#   sqlite        sqlite3 db.sqlite < txn.sql: 50 (200) transactions (an
#                 insert and an update each, rollback journal, fsync) on a
#                 database of 2,000 rows, then a full scan
#   fio           fio job.fio: its own job; a sequential 8 MiB write in
#                 64 KiB blocks with end_fsync, then (stonewall) 256 random
#                 4 KiB reads of the file, which fio opens with its default
#                 invalidate=1 (posix_fadvise DONTNEED)
#   tar-sync      sh -c 'tar cf out.tar src && sync -f out.tar': 40 (160)
#                 files, 8 (32) MiB, archived, then the file system synced
#                 (syncfs)
#   git           sh -c 'git add -A && git commit && git checkout HEAD~1 &&
#                 git checkout -': a repository of 45 (135) files, 10 (30)
#                 changed and 5 (15) new ones committed, then two checkouts
#
# File systems: tmpfs (/dev/shm), the VM's disk (ext4, /var/tmp) and "slow":
# an ext4 on a loop device (direct I/O on a sparse file of the disk) whose
# reads and writes are throttled to SLOW_IOPS (300) and SLOW_MBPS (50) MiB/s
# each, with cgroup v1 blkio.throttle.{read,write}_{iops,bps}_device on the
# root group (every bio of the device, writeback included), or, where only
# cgroup v2 is mounted, io.max in a child group the script runs in. The
# script sets it up and tears it down on exit, whatever happens (trap).
# Before each timed run on it the device is left idle SETTLE (0.3) s: the
# flush of the caches' sync opens a throttling slice, and I/O issued
# within it is let through at 2–3 times the limit.
#
# For each application: CAPTURES (REPS) captures (RECORDER: preload, or
# ptrace) on each file system of CAPTURE_FS (tmpfs disk); then on each
# target of TARGETS (tmpfs disk slow), REPS (5) paired repetitions, each
# the real run and one replay of every file system's capture in every mode
# of MODES, in an order that rotates with the repetition. Repetition r
# replays capture r (with fewer captures, r mod CAPTURES): a capture is a
# run of the application too, as variable as the real runs (its span
# ranged from 0.82 to 1.44 times the real runs' median from one capture to
# the next), and with one capture for all repetitions its one draw was in
# every repetition's error. Caches are dropped (sync -f; echo 3 >
# /proc/sys/vm/drop_caches) before each timed run, and before each capture.
# Short cells get more repetitions: where the median of a target's first
# REPS real runs is under FAST (0.1) s, the repetitions go on to FAST_REPS
# (11), and an application whose first CAPTURES captures all span less
# than FAST is captured FAST_REPS times, so that each of those
# repetitions replays a capture of its own. A run of a few milliseconds
# varies by tens of per cent from one run to the next (scheduling, the
# journal's commits), and it costs about a second to repeat, while a
# throttled cell lasts seconds and varies by a per cent.
#
# What is timed: the application's I/O time, on both sides the span from
# the start of the first file call (POSIX, metadata or MPI-IO, on the
# application's files) to the end of the last one, on the earliest and
# latest ranks. It holds the computation between the calls (and the
# processes a shell starts between them), not the start-up before the
# first call (exec, dynamic loading, the interpreter's imports, MPI_Init)
# nor the exit after the last (MPI_Finalize).
#   - real run, self-timed programs (ior, mdtest, h5py): the program reads
#     CLOCK_MONOTONIC just before its first file call and after its last
#     one, and prints max(end) − min(start) over its ranks ("io_seconds").
#   - real run, other programs (sqlite3, fio, tar, git): the wall time of
#     the command, measured by this shell (EPOCHREALTIME, no fork), minus
#     the program's start-up and exit, S: the median wall time of its null
#     command (the same first program started and ended with no work on
#     the files: sh -c :, sqlite3 :memory:, fio --version), run just before
#     it. The table gives S.
#   - replay under --predict: ioreplay's own prediction (its summary's
#     io_span.predicted_seconds): the same span on the timelines it
#     rebuilds from each call's time in the replay and the captured think
#     time before it (docs/REPLAY.md, "What --predict reports"); the
#     replay engine's own work between calls is not in it.
#   - replay in other modes: the span of the replay's own trace (ioreplay
#     --record), measured by bench/predict/span: so ioreplay's start-up,
#     reading and planning the trace, the prepare phase, and writing its
#     report are outside it, as start-up is on the real side.
#   - before every timed run its inputs are in place and cold: the real run's
#     inputs are made (untimed), caches dropped, then the program's binaries
#     warmed by its warm-up command (the same program on a tiny problem in
#     a scratch directory of tmpfs: loads its libraries, MPI's components,
#     Python's modules), so that cold means the data, not the program. A
#     replay's inputs are made by ioreplay --prepare-only into the target,
#     caches dropped, then the replay runs (its binary and the trace live
#     on tmpfs). A mode with @oneshot replays without that separation, as a
#     one-shot ioreplay does: the prepared inputs still in the page cache.
# Signed error of a cell: predicted ÷ real − 1, within each repetition, then
# the median over the repetitions (negative: the replay under-predicts).
# Self-replays are also set against the capture they replay (its span in
# the trace, a run of the same application on the same file system): that
# error is the replay's alone, without the application's variation from
# one run to the next, but with what the recorder added to the capture
# (the Captures table: trace ÷ real).
#
# MODES: names, or NAME=FLAG,FLAG… (ioreplay flags; @oneshot: see above;
# @mpirun: replay under mpirun -np 2 ioreplay --mpi, built with -tags mpi,
# for the MPI applications only; @before: the ioreplay at BEFORE, another
# build, instead of this tree's: before and after a change, paired in one
# run). A bare name N means --timing=N. The
# default, 'predict=--predict original afap': the predicted column is
# ioreplay --predict (think timing, a cold cache, the MPI-IO library's
# captured cost kept; docs/REPLAY.md, "Which timing predicts"), beside the
# two modes that do not predict. Others, e.g.:
#   MODES='predict=--predict think warm=--timing=think,--cache=warm,@oneshot'
#
# Usage (as root: drop_caches, losetup, mount, cgroup):
#
#   bench/predict/run.sh                          # about 20 minutes (5 repetitions, 11 for short cells); Markdown on stdout
#   bench/predict/run.sh --write baseline --title "before issue 22's changes"
#                                                 # also (re)writes that section of docs/BENCHMARKS.md
#   bench/predict/run.sh --quick                  # REPS=1, MODES=predict (unless given): a few minutes
#   bench/predict/run.sh --dry-run                # builds the helpers, prints the plan; runs nothing, needs no root
#   APPS='tar-sync fio' TARGETS=slow bench/predict/run.sh --keep /tmp/p   # a few cells; keep traces, replays, logs
#   bench/predict/run.sh --report /tmp/p --write baseline   # the Markdown of a kept run again (no runs)
#
# Needs go, cc, mpicc, mpirun, sqlite3, fio, tar, git, python3 with h5py's MPI
# build (Debian python3-h5py-mpi), losetup, mkfs.ext4.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

APPS=${APPS:-ior-posix ior-direct ior-mpiio mdtest mdtest-fsync h5py sqlite fio tar-sync git}
TARGETS=${TARGETS:-tmpfs disk slow}
CAPTURE_FS=${CAPTURE_FS:-tmpfs disk}
RECORDER=${RECORDER:-preload}
REPS=${REPS:-5}
CAPTURES=${CAPTURES:-$REPS}
FAST=${FAST:-0.1}
FAST_REPS=${FAST_REPS:-11}
NP=${NP:-2}
NULLS=${NULLS:-3}
SLOW_IOPS=${SLOW_IOPS:-300}
SLOW_MBPS=${SLOW_MBPS:-50}
SETTLE=${SETTLE:-0.3}
AFTERIO_N=${AFTERIO_N:-1000}
PY=${PY:-/usr/bin/python3}
DOC=${DOC:-docs/BENCHMARKS.md}
SIZES=${SIZES:-small}

dry=0 write="" title="" keep="" report="" quick=0 modes_given=${MODES+1}
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--dry-run) dry=1 ;;
	--write) write=$2; shift ;;
	--title) title=$2; shift ;;
	--keep) keep=$2; shift ;;
	--report) report=$2; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown argument $1 (--quick, --dry-run, --write NAME, --title TEXT, --keep DIR, --report DIR)" >&2; exit 2 ;;
	esac
	shift
done
if [ $quick = 1 ]; then
	REPS=1
	[ -n "$modes_given" ] || MODES=predict=--predict
fi
MODES=${MODES:-predict=--predict original afap}
[[ -z $write || $write =~ ^[A-Za-z0-9_.-]+$ ]] || { echo "run.sh: --write takes a name of letters, digits, . _ -" >&2; exit 2; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_base_warn_component_unused=0
# A rank waiting in MPI yields its processor (as Open MPI does by itself
# when oversubscribed): on a shared machine, busy-polling ranks that lose
# their processor stretch every collective by a scheduler's time slice.
export OMPI_MCA_mpi_yield_when_idle=1
export LC_ALL=C
log() { echo "run.sh: $*" >&2; }

# The applications.
is_mpi() { case $1 in ior-* | mdtest* | h5py) return 0 ;; esac; return 1; }
known_app() { case $1 in ior-posix | ior-direct | ior-mpiio | mdtest | mdtest-fsync | h5py | sqlite | fio | tar-sync | git) return 0 ;; esac; return 1; }
for a in $APPS; do known_app "$a" || { echo "run.sh: unknown application $a in APPS" >&2; exit 2; }; done
for t in $TARGETS $CAPTURE_FS; do
	case $t in tmpfs | disk | slow) ;; *) echo "run.sh: unknown file system $t (tmpfs, disk, slow)" >&2; exit 2 ;; esac
done
case $RECORDER in preload) recflags=(--preload) ;; ptrace) recflags=() ;; *) echo "run.sh: RECORDER is preload or ptrace" >&2; exit 2 ;; esac

# Modes: parallel arrays of names, ioreplay flags, and procedure.
mode_names=() mode_flags=() mode_oneshot=() mode_mpirun=() mode_before=() need_mpi_replay=0
for m in $MODES; do
	name=${m%%=*}
	if [ "$name" = "$m" ]; then spec="--timing=$m"; else spec=${m#*=}; fi
	flags="" oneshot=0 viampi=0 before=0
	IFS=, read -ra parts <<<"$spec"
	for p in "${parts[@]}"; do
		case $p in
		@oneshot) oneshot=1 ;;
		@mpirun) viampi=1 need_mpi_replay=1 ;;
		@before)
			before=1
			[ -x "${BEFORE:-}" ] || { echo "run.sh: mode $m: @before needs BEFORE=path/to/an/ioreplay" >&2; exit 2; }
			;;
		--*) flags+="$p " ;;
		*) echo "run.sh: mode $m: $p is neither an ioreplay flag (--…) nor @oneshot, @mpirun, @before" >&2; exit 2 ;;
		esac
	done
	mode_names+=("$name") mode_flags+=("$flags") mode_oneshot+=("$oneshot") mode_mpirun+=("$viampi") mode_before+=("$before")
done

# The applications' sizes (SIZES): small, the default, where a real run on
# tmpfs takes 1-16 ms; large, where it takes tens of ms (docs/BENCHMARKS.md).
app_args() { # app_args APP: the command of APP, DIR its directory (the one place that says it)
	case $SIZES/$1 in
	small/ior-posix) echo "ior -a POSIX -F -e -b 8m -t 256k -o DIR/testFile" ;;
	large/ior-posix) echo "ior -a POSIX -F -e -b 64m -t 256k -o DIR/testFile" ;;
	small/ior-direct) echo "ior -a POSIX -F -d -e -b 4m -t 128k -o DIR/testFile" ;;
	large/ior-direct) echo "ior -a POSIX -F -d -e -b 32m -t 128k -o DIR/testFile" ;;
	small/ior-mpiio) echo "ior -a MPIIO -c -e -b 4m -t 1m -s 2 -o DIR/testFile" ;;
	large/ior-mpiio) echo "ior -a MPIIO -c -e -b 4m -t 1m -s 8 -o DIR/testFile" ;;
	small/mdtest) echo "mdtest -n 200 -d DIR" ;;
	large/mdtest) echo "mdtest -n 2000 -d DIR" ;;
	small/mdtest-fsync) echo "mdtest -n 50 -w 4096 -y -d DIR" ;;
	large/mdtest-fsync) echo "mdtest -n 200 -w 4096 -y -d DIR" ;;
	small/h5py) echo "python3 -I h5.py DIR/field.h5 4 262144" ;;
	large/h5py) echo "python3 -I h5.py DIR/field.h5 16 262144" ;;
	*/sqlite) echo "sqlite3 db.sqlite < txn.sql" ;;
	*/fio) echo "fio job.fio" ;;
	*/tar-sync) echo "sh -c 'tar cf out.tar src && sync -f out.tar'" ;;
	*/git) echo "sh -c 'git add -A && git commit -q -m two && git checkout -q HEAD~1 && git checkout -q -'" ;;
	esac
}
# The inputs' sizes: sqlite's transactions; tar's files of 200 KiB in each
# of 4 directories; git's files in each of 3 directories, how many of
# them change and how many are new.
sizes_in() { # sizes_in SIZES: sets the inputs' sizes
	case $1 in
	small) TXNS=50 TAR_FILES=10 GIT_FILES=15 GIT_CHANGED=10 GIT_NEW=5 ;;
	large) TXNS=200 TAR_FILES=40 GIT_FILES=45 GIT_CHANGED=30 GIT_NEW=15 ;;
	*) echo "run.sh: SIZES is large or small" >&2; exit 2 ;;
	esac
}
sizes_in "$SIZES"
sizes_of() { # the inputs' sizes, in words
	sizes_in "$SIZES"
	echo "sqlite: $TXNS transactions, tar-sync: $((4 * TAR_FILES)) files of 200 KiB, git: $((3 * GIT_FILES)) files, $GIT_CHANGED changed and $GIT_NEW new"
}
cmd_of() { # the command line of APP (documentation and dry run)
	if is_mpi "$1"; then
		echo "mpirun -np $NP $(app_args "$1")"
	else
		echo "cd DIR && $(app_args "$1")"
	fi
}
null_of() { # the start-up and exit the real run's wall time loses (other programs)
	case $1 in
	sqlite) echo "sqlite3 :memory: ''" ;;
	fio) echo "fio --version" ;;
	tar-sync | git) echo "sh -c :" ;;
	*) echo "(self-timed)" ;;
	esac
}

# The Markdown.
section() {
	local head="## Prediction: replay on B against the application on B ($start"
	[ -n "$title" ] && head+=", $title"
	echo "$head)"
	echo
	echo "\`bench/predict/run.sh\` at ${commit:-?} on $host_s, $minutes min."
	echo "Load average (1, 5, 15 min) $load_start at the start, $load_end at the end; the 1-minute load at each timed run is in the"
	echo "tables' last column (median over the cell's runs). Captures: \`iotrace record$( [ "$RECORDER" = preload ] && echo ' --preload')\` on tmpfs (/dev/shm) and on the"
	echo "disk (ext4, the VM's virtio disk); replayed on tmpfs, the disk and *slow* (ext4 on a loop device, $SLOW_IOPS IOPS and"
	echo "$SLOW_MBPS MiB/s each way: cgroup blkio throttling); $REPS paired repetitions$( [ "${FAST_REPS:-0}" -gt "$REPS" ] && echo ", $FAST_REPS where the real runs' median is under ${FAST} s,") (the real run and every replay of a"
	echo "repetition interleaved, their order rotating; $CAPTURES captures on each file system$( [ "${FAST_REPS:-0}" -gt "$CAPTURES" ] && echo " ($FAST_REPS for an application whose captures all span under ${FAST} s)"), repetition *r* replaying capture"
	echo "*r*$( [ "$CAPTURES" -lt "$REPS" ] && echo " mod $CAPTURES")), caches dropped before each (and *slow* left idle ${SETTLE:-0.3} s, past"
	echo "the throttle's slice); MPI programs run under \`mpirun -np 2\` with \`mpi_yield_when_idle\`; replays standalone"
	echo "(one ioreplay process, POSIX backend); medians."
	echo
	echo "**The application's I/O time** is, on both sides, the span from the start of the first file call (POSIX, metadata"
	echo "or MPI-IO, on the application's files) to the end of the last one, on the earliest and latest ranks: it holds the"
	echo "computation between the calls, not the start-up before the first call (exec, loading, imports, MPI_Init) nor the"
	echo "exit after the last. Real run: ior, mdtest and h5py time themselves that way (CLOCK_MONOTONIC, min start to max"
	echo "end over ranks); for sqlite3, fio, tar and git it is the command's wall time minus its start-up and exit *S*, the"
	echo "median wall time of its null command run just before (\`sh -c :\`, \`sqlite3 :memory:\`, \`fio --version\`). Replay"
	echo "under \`--predict\`: ioreplay's own prediction, the same span on the timelines it rebuilds from each call's time in"
	echo "the replay and the captured think time before it (docs/REPLAY.md, \"What --predict reports\"); other modes: the same"
	echo "span in the replay's own trace (\`--record\`). Either way ioreplay's start-up, planning, the prepare phase and its"
	echo "report are outside it. Inputs are in place and cold before every timed run: the real run's made by the script,"
	echo "the replay's by \`ioreplay --prepare-only\`, then caches dropped (the program's binaries warmed again by a tiny run"
	echo "of it on tmpfs). **Error** = predicted ÷ real − 1 within each repetition, median over repetitions; negative:"
	echo "the replay under-predicts; in parentheses the interval that holds the median error with 95 % confidence whatever"
	echo "the errors' distribution (order statistics of the repetitions' errors; with 5 repetitions their whole range, 94 %)."
	echo "A cell *surely beyond* 5 or 15 % has all its interval beyond: its error is not the repetitions' noise."
	echo "**Real spread**: (max − min) ÷ median of the cell's real runs, how far the application itself varied from run to run."
	echo
	echo "Sizes: $SIZES ($(sizes_of)): bench/predict/run.sh says what each application does."
	echo
	echo "| application | what it does (DIR: its directory) | *S* |"
	echo "|---|---|---|"
	for a in $APPS; do echo "| $a | \`$(cmd_of "$a")\` | \`$(null_of "$a")\` |"; done
	echo
	awk -F'\t' -v modes="${mode_names[*]}" -v targets="$TARGETS" -v cfss="$CAPTURE_FS" -v apps="$APPS" '
function median(a, k,   i, j, t) {
	if (k == 0) return ""
	for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
	return (k % 2) ? a[(k+1)/2] : (a[k/2] + a[k/2+1]) / 2
}
function abs(x) { return x < 0 ? -x : x }
function pct(x) { return sprintf("%+.1f %%", 100 * x) }
# lowrank(k): the rank j of the order statistics x(j), x(k+1-j) that bound
# the median of k values with at least 95 % confidence whatever their
# distribution: the largest j whose 1 - 2 P(B < j), B ~ Binomial(k, 1/2),
# is at least 0.95; 1 (the whole range, 94 % for 5 values) below 6.
function lowrank(k,   j, c, p) {
	c = 0; p = 2 ^ -k # P(B = 0)
	for (j = 1; j <= k / 2; j++) {
		c += p # P(B < j)
		if (1 - 2 * c < 0.95) break
		p = p * (k - j + 1) / j # P(B = j)
	}
	return j > 1 ? j - 1 : 1
}
# interval(a, k): the interval of the median of a[1..k], sorted (median sorts)
function interval(a, k,   j) { j = lowrank(k); return a[j] SUBSEP a[k + 1 - j] }
# beyond(lo, hi, x): the interval lies wholly beyond ±x
function beyond(lo, hi, x) { return lo > x || hi < -x }
$1 == "real" { real[$2, $3, $6] = $7; S[$2, $3, ++ns[$2, $3]] = $9; L[$2, $3, ++nl[$2, $3]] = $10 }
$1 == "replay" { pred[$2, $3, $4, $5, $6] = $7; L[$2, $3, ++nl[$2, $3]] = $11 }
$1 == "capture" { k = ++ncap[$2, $3]; capv[$2, $3, k] = $7; capiov[$2, $3, k] = $8; capr[$2, $3, $6] = $7 }
$1 == "dev" { k = ++devn[$2, $4, $5]; for (i = 7; i <= 10; i++) dev[$2, $4, $5, i, k] = $i; ndev++ }
# devcell(app, capture, mode): "read / written MiB, reads / writes" (medians)
function devcell(a, c, m,   i, k, n, v, med) {
	n = devn[a, c, m]
	if (!n) return "–"
	for (i = 7; i <= 10; i++) { delete v; for (k = 1; k <= n; k++) v[k] = dev[a, c, m, i, k]; med[i] = median(v, n) }
	return sprintf("%.1f / %.1f, %d / %d", med[7] / 1048576, med[8] / 1048576, med[9], med[10])
}
END {
	na = split(apps, A, " "); nt = split(targets, T, " "); nc = split(cfss, C, " "); nm = split(modes, M, " ")
	# the captures: medians over those of each file system
	for (a = 1; a <= na; a++) for (c = 1; c <= nc; c++) if (ncap[A[a], C[c]]) {
		n = ncap[A[a], C[c]]
		delete v; for (i = 1; i <= n; i++) v[i] = capv[A[a], C[c], i]; cap[A[a], C[c]] = median(v, n)
		delete v; k = 0; for (i = 1; i <= n; i++) if (capiov[A[a], C[c], i] != "-") v[++k] = capiov[A[a], C[c], i]; capio[A[a], C[c]] = k ? median(v, k) : "-"
		lo = hi = capv[A[a], C[c], 1]; for (i = 2; i <= n; i++) { x = capv[A[a], C[c], i]; lo = x < lo ? x : lo; hi = x > hi ? x : hi }
		capsp[A[a], C[c]] = (n > 1 && cap[A[a], C[c]] > 0) ? sprintf("%.0f %%", 100 * (hi - lo) / cap[A[a], C[c]]) : "–"
	}
	# cells: the median real, each mode'"'"'s median prediction and median paired error
	for (a = 1; a <= na; a++) for (t = 1; t <= nt; t++) {
		k = 0; delete v
		for (r = 1; r <= 99; r++) if ((A[a], T[t], r) in real) v[++k] = real[A[a], T[t], r]
		R[A[a], T[t]] = median(v, k)
		# the spread of the real runs: (max - min) / median
		if (k > 1 && R[A[a], T[t]] > 0) { lo = hi = v[1]; for (i = 2; i <= k; i++) { lo = v[i] < lo ? v[i] : lo; hi = v[i] > hi ? v[i] : hi }; SP[A[a], T[t]] = (hi - lo) / R[A[a], T[t]] }
		k = 0; delete v
		for (i = 1; i <= ns[A[a], T[t]]; i++) v[++k] = S[A[a], T[t], i]
		SS[A[a], T[t]] = median(v, k)
		k = 0; delete v
		for (i = 1; i <= nl[A[a], T[t]]; i++) v[++k] = L[A[a], T[t], i]
		LL[A[a], T[t]] = median(v, k)
		for (c = 1; c <= nc; c++) for (m = 1; m <= nm; m++) {
			k = 0; ke = 0; kc = 0; delete v; delete e; delete ec
			for (r = 1; r <= 99; r++) if ((A[a], T[t], C[c], M[m], r) in pred) {
				p = pred[A[a], T[t], C[c], M[m], r]; v[++k] = p
				if ((A[a], T[t], r) in real && real[A[a], T[t], r] > 0) e[++ke] = p / real[A[a], T[t], r] - 1
				# against the capture it replays (repetition r replays capture r, or r mod CAPTURES)
				cr = ncap[A[a], C[c]] ? (r - 1) % ncap[A[a], C[c]] + 1 : 0
				if (C[c] == T[t] && (A[a], C[c], cr) in capr && capr[A[a], C[c], cr] > 0) ec[++kc] = p / capr[A[a], C[c], cr] - 1
			}
			P[A[a], T[t], C[c], M[m]] = median(v, k)
			if (ke) { E[A[a], T[t], C[c], M[m]] = median(e, ke); HAS[A[a], T[t], C[c], M[m]] = 1; EI[A[a], T[t], C[c], M[m]] = interval(e, ke) }
			if (kc) { EC[A[a], T[t], C[c], M[m]] = median(ec, kc); ECI[A[a], T[t], C[c], M[m]] = interval(ec, kc) }
		}
	}
	for (pass = 1; pass <= 2; pass++) {
		if (pass == 1) {
			print "### Prediction: captured on one file system, replayed on another"
		} else {
			print ""
			print "### Self-replay: captured and replayed on the same file system"
		}
		print ""
		printf "| application | captured on | replayed on | real (s) | real spread | *S* (s) |"
		for (m = 1; m <= nm; m++) printf " %s: predicted (s), error |", M[m]
		if (pass == 2) for (m = 1; m <= nm; m++) printf " %s against its capture |", M[m]
		print " load |"
		printf "|---|---|---|---:|---:|---:|"
		for (m = 1; m <= nm; m++) printf "---:|"
		if (pass == 2) for (m = 1; m <= nm; m++) printf "---:|"
		print "---:|"
		for (a = 1; a <= na; a++) for (c = 1; c <= nc; c++) for (t = 1; t <= nt; t++) {
			self = (C[c] == T[t])
			if ((pass == 1) == self) continue
			if (!((A[a], C[c]) in cap)) continue
			printf "| %s | %s | %s | %s | %s | %s |", A[a], C[c], T[t], R[A[a], T[t]] == "" ? "–" : sprintf("%.4f", R[A[a], T[t]]), (A[a], T[t]) in SP ? sprintf("%.0f %%", 100 * SP[A[a], T[t]]) : "–", SS[A[a], T[t]] == "" || SS[A[a], T[t]] == 0 ? "–" : sprintf("%.4f", SS[A[a], T[t]])
			for (m = 1; m <= nm; m++) {
				key = A[a] SUBSEP T[t] SUBSEP C[c] SUBSEP M[m]
				if (key in HAS) {
					x = E[key]; s = pct(x)
					if (abs(x) > 0.15) s = "**" s "**"
					split(EI[key], iv, SUBSEP)
					printf " %.4f, %s (%+.1f…%+.1f) |", P[key], s, 100 * iv[1], 100 * iv[2]
					if (beyond(iv[1], iv[2], 0.05)) out5[pass, M[m]]++
					if (beyond(iv[1], iv[2], 0.15)) out15[pass, M[m]]++
					cells[pass, M[m], ++ncell[pass, M[m]]] = abs(x)
					if (!((pass, M[m]) in worst) || abs(x) > worst[pass, M[m]]) { worst[pass, M[m]] = abs(x); wname[pass, M[m]] = A[a] " " C[c] "→" T[t] " " pct(x) }
					if (abs(x) <= 0.05) in5[pass, M[m]]++
					if (abs(x) <= 0.15) in15[pass, M[m]]++
				} else printf " – |"
			}
			if (pass == 2) for (m = 1; m <= nm; m++) {
				key = A[a] SUBSEP T[t] SUBSEP C[c] SUBSEP M[m]
				if (!(key in EC)) { printf " – |"; continue }
				x = EC[key]; s = pct(x)
				if (abs(x) > 0.05) s = "**" s "**"
				split(ECI[key], iv, SUBSEP)
				printf " %s (%+.1f…%+.1f) |", s, 100 * iv[1], 100 * iv[2]
				if (beyond(iv[1], iv[2], 0.05)) out5[3, M[m]]++
				if (beyond(iv[1], iv[2], 0.15)) out15[3, M[m]]++
				cells[3, M[m], ++ncell[3, M[m]]] = abs(x)
				if (!((3, M[m]) in worst) || abs(x) > worst[3, M[m]]) { worst[3, M[m]] = abs(x); wname[3, M[m]] = A[a] " " C[c] "→" T[t] " " pct(x) }
				if (abs(x) <= 0.05) in5[3, M[m]]++
				if (abs(x) <= 0.15) in15[3, M[m]]++
			}
			printf " %.1f |\n", LL[A[a], T[t]]
		}
	}
	print ""
	print "### Summary per mode"
	print ""
	print "| mode | cells | median \\|error\\| | cells within 5 % | within 15 % | surely beyond 5 % | surely beyond 15 % | worst cell |"
	print "|---|---:|---:|---:|---:|---:|---:|---|"
	for (pass = 1; pass <= 3; pass++) for (m = 1; m <= nm; m++) {
		k = ncell[pass, M[m]]; if (!k) continue
		delete v
		for (i = 1; i <= k; i++) v[i] = cells[pass, M[m], i]
		printf "| %s, %s | %d | %.1f %% | %d | %d | %d | %d | %s |\n", M[m], pass == 1 ? "prediction" : pass == 2 ? "self-replay" : "self-replay against its capture", k, 100 * median(v, k), in5[pass, M[m]], in15[pass, M[m]], out5[pass, M[m]], out15[pass, M[m]], wname[pass, M[m]]
	}
	if (ndev) {
		print ""
		print "### What reached the slow device"
		print ""
		print "Bytes and requests the throttled device served during each timed run (blkio statistics of the loop device;"
		print "medians), read / written: where a replay moves less than the application, calls are missing or the cache"
		print "serves what the application had to read (a one-shot mode'"'"'s count includes its prepare phase)."
		print ""
		printf "| application | real: MiB, requests |"
		for (c = 1; c <= nc; c++) for (m = 1; m <= nm; m++) printf " %s (%s capture) |", M[m], C[c]
		print ""
		printf "|---|---:|"
		for (c = 1; c <= nc; c++) for (m = 1; m <= nm; m++) printf "---:|"
		print ""
		for (a = 1; a <= na; a++) {
			if (!((A[a], "-", "real") in devn)) continue
			printf "| %s | %s |", A[a], devcell(A[a], "-", "real")
			for (c = 1; c <= nc; c++) for (m = 1; m <= nm; m++) printf " %s |", devcell(A[a], C[c], M[m])
			print ""
		}
	}
	print ""
	print "### Captures"
	print ""
	print "The captures'"'"' own span (their traces, under the recorder; median, and its spread over the captures: (max − min)"
	print "÷ median) beside the real runs'"'"' I/O time on the same file system (median of the real runs above) and the"
	print "application'"'"'s own measure of it under the recorder."
	print ""
	print "| application | captured on | span in the trace (s) | spread | I/O time under the recorder (s) | real, untraced (s) | trace ÷ real |"
	print "|---|---|---:|---:|---:|---:|---:|"
	for (a = 1; a <= na; a++) for (c = 1; c <= nc; c++) if ((A[a], C[c]) in cap) {
		r = R[A[a], C[c]]
		printf "| %s | %s | %.4f | %s | %s | %s | %s |\n", A[a], C[c], cap[A[a], C[c]], capsp[A[a], C[c]], capio[A[a], C[c]] == "-" ? "–" : sprintf("%.4f", capio[A[a], C[c]]), r == "" ? "–" : sprintf("%.4f", r), r == "" || r == 0 ? "–" : sprintf("%.2f", cap[A[a], C[c]] / r)
	}
}' "$res"
	grep -q '^afterio' "$res" || return 0
	echo
	echo "### The same computation after different file calls"
	echo
	echo "\`bench/predict/afterio.c\` on each file system: a fixed computation (a loop over a 1 MiB buffer) right after"
	echo "no call, a 4 KiB pwrite, a pwrite and fdatasync, and a close, unlink, create, pwrite and fdatasync (a journal's"
	echo "life); the median over $AFTERIO_N of each of its processor time (CLOCK_THREAD_CPUTIME_ID), µs, and in"
	echo "parentheses its wall time. Where a call made the thread sleep, the same instructions take longer after it:"
	echo "think time captured on that file system is longer than the program's on one where the call does not sleep,"
	echo "and a capture there over-predicts a run on the faster one (docs/REPLAY.md, \"What a prediction cannot know\")."
	echo
	echo "| file system | no call | after a pwrite | after pwrite + fdatasync | after unlink … fdatasync |"
	echo "|---|---:|---:|---:|---:|"
	awk -F'\t' '$1 == "afterio" { w[$2, $3] = $4; c[$2, $3] = $5; if (!($2 in seen)) { seen[$2] = 1; fs[++n] = $2 } }
	function cell(f, k) { return (f, k) in c ? sprintf("%.2f (%.2f)", c[f, k] / 1e3, w[f, k] / 1e3) : "–" }
	function rel(f, k) { return (f, k) in c && c[f, "none"] > 0 ? sprintf(", %+.0f %%", 100 * (c[f, k] / c[f, "none"] - 1)) : "" }
	END { for (i = 1; i <= n; i++) { f = fs[i]; printf "| %s | %s | %s%s | %s%s | %s%s |\n", f, cell(f, "none"), cell(f, "write"), rel(f, "write"), cell(f, "fdatasync"), rel(f, "fdatasync"), cell(f, "unlink"), rel(f, "unlink") } }' "$res"
}


write_doc() { # write_doc SECTION_FILE: replace the section between this name's markers, or put it before the first section
	awk -v name="$write" -v file="$1" '
	BEGIN { b = "<!-- bench/predict " name " -->"; e = "<!-- /bench/predict " name " -->" }
	function emit(   l) { print b; while ((getline l <file) > 0) print l; print e; print ""; done = 1 }
	$0 == b { skip = 1; emit(); next }
	skip && $0 == e { skip = 0; getline; if ($0 != "") print; next }
	skip { next }
	!done && (/^## / || /^<!-- bench\/predict /) { emit() } # before the first section, or the markers of another run
	{ print }
	END { if (!done) { print ""; emit() } }' "$DOC" >"$1.doc"
	cp "$1.doc" "$DOC"
	rm -f "$1.doc"
	log "wrote the section \"$write\" of $DOC"
}

if [ -n "$report" ]; then
	FAST_REPS=0 # a run kept before repetitions adapted had none
	SIZES=small # nor one kept before the sizes were chosen
	# shellcheck source=/dev/null
	. "$report/meta.sh"
	read -ra mode_names <<<"$mode_names_s"
	res=$report/results.tsv
	section >"$report/section.md"
	cat "$report/section.md"
	[ -z "$write" ] || write_doc "$report/section.md"
	exit 0
fi

for tool in go cc mpicc mpirun sqlite3 fio tar git "$PY"; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool is required" >&2; exit 1; }
done
if [ $dry = 0 ]; then
	[ "$(id -u)" = 0 ] || { echo "run.sh: run as root (drop_caches, losetup, mount, cgroup throttling); --dry-run needs no root" >&2; exit 1; }
	for tool in losetup mkfs.ext4 mount umount; do
		command -v "$tool" >/dev/null || { echo "run.sh: $tool is required" >&2; exit 1; }
	done
fi

# Work directories: binaries, traces and results on tmpfs (dropping caches
# does not touch them), the disk's under /var/tmp.
shm=$(mktemp -d /dev/shm/iotrace-predict.XXXXXX)
disk=$(mktemp -d /var/tmp/iotrace-predict.XXXXXX)
bin=$shm/bin scratch=$shm/scratch
mkdir -p "$bin" "$scratch" "$shm/home" "$shm/traces" "$shm/runs" "$shm/seed"
loopdev="" loopmm="" slowmnt="$disk/slow" cgv2=""
cleanup() {
	set +e
	if [ -n "$loopmm" ]; then
		if [ -n "$cgv2" ]; then
			echo "$loopmm rbps=max wbps=max riops=max wiops=max" >"$cgv2/io.max" 2>/dev/null
			echo $$ >"${cgv2%/*}/cgroup.procs" 2>/dev/null
			rmdir "$cgv2" 2>/dev/null
		else
			for f in read_iops write_iops read_bps write_bps; do
				echo "$loopmm 0" >"/sys/fs/cgroup/blkio/blkio.throttle.${f}_device" 2>/dev/null
			done
		fi
	fi
	mountpoint -q "$slowmnt" 2>/dev/null && umount "$slowmnt"
	[ -n "$loopdev" ] && losetup -d "$loopdev"
	if [ -n "$keep" ] && [ $dry = 0 ]; then
		mkdir -p "$keep" && cp -r "$shm/traces" "$shm/runs" "$keep/" 2>/dev/null
		for f in results.tsv meta.sh section.md; do [ -f "$shm/$f" ] && cp "$shm/$f" "$keep/"; done
	fi
	rm -rf "$shm" "$disk"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "building the helpers"
commit=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo '?') # the commit the binaries are built from
# Static, as README.md's Install builds them (the MPI build below needs cgo).
CGO_ENABLED=0 go build -o "$bin/iotrace" ./cmd/iotrace
CGO_ENABLED=0 go build -o "$bin/ioreplay" ./cmd/ioreplay
[ -z "${BEFORE:-}" ] || cp "$BEFORE" "$bin/ioreplay-before"
go build -o "$bin/span" ./bench/predict/span
[ $need_mpi_replay = 1 ] && go build -tags mpi -o "$bin/ioreplay-mpi" ./cmd/ioreplay
mpicc -O2 -o "$bin/ior" bench/predict/ior.c
mpicc -O2 -o "$bin/mdtest" bench/predict/mdtest.c
cc -O2 -o "$bin/afterio" bench/predict/afterio.c
cp bench/predict/h5.py "$bin/h5.py"
export IOTRACE_CACHE=$shm/cache HOME=$shm/home
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.org GIT_COMMITTER_NAME=bench \
	GIT_COMMITTER_EMAIL=bench@example.org GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z'

# The applications' fixed inputs.
cat >"$bin/job.fio" <<'EOF'
[global]
ioengine=psync
filename=data
size=8m
[write]
rw=write
bs=64k
end_fsync=1
[randread]
stonewall
rw=randread
bs=4k
io_size=1m
EOF
sed 's/^size=8m/size=64k/; s/^io_size=1m/io_size=8k/' "$bin/job.fio" >"$bin/warm.fio"
{
	echo "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB);"
	echo "BEGIN;"
	for i in $(seq 2000); do echo "INSERT INTO t(v) VALUES(randomblob(1000));"; done
	echo "COMMIT;"
} >"$bin/init.sql"
{
	for i in $(seq "$TXNS"); do
		echo "BEGIN; INSERT INTO t(v) VALUES(randomblob(2000)); UPDATE t SET v = randomblob(1000) WHERE k = $(((i * 37) % 2000 + 1)); COMMIT;"
	done
	echo "SELECT count(*), sum(length(v)) FROM t;"
} >"$bin/txn.sql"

seed_inputs() {
	mkdir -p "$shm/seed/tar/src" "$shm/seed/git"
	for d in 0 1 2 3; do
		mkdir -p "$shm/seed/tar/src/d$d"
		for f in $(seq 0 $((TAR_FILES - 1))); do head -c 209715 /dev/urandom >"$shm/seed/tar/src/d$d/f$f.bin"; done
	done
	(
		cd "$shm/seed/git"
		git init -q -b main .
		for d in a b c; do
			mkdir -p "$d"
			for f in $(seq 0 $((GIT_FILES - 1))); do seq $((f * 1000 + 1)) $((f * 1000 + 600)) | sed "s/^/$d line /" >"$d/file$f.txt"; done
		done
		git add -A && git commit -q -m one
		for f in $(seq 0 $((GIT_CHANGED - 1))); do echo "changed $f" >>"a/file$f.txt"; done
		mkdir -p d && for f in $(seq 0 $((GIT_NEW - 1))); do seq 1 500 >"d/new$f.txt"; done
	)
}

setup_app() { # setup_app APP DIR: the inputs of a run (untimed)
	case $1 in
	sqlite) sqlite3 "$2/db.sqlite" <"$bin/init.sql" ;;
	tar-sync) cp -r "$shm/seed/tar/src" "$2/" ;;
	git) cp -a "$shm/seed/git/." "$2/" ;;
	esac
}

REC=()
mpi() { (cd "$scratch" && mpirun -np "$NP" --oversubscribe "${REC[@]}" "$@"); }
run_app() { # run_app APP DIR: the application on DIR, under "${REC[@]}"; stdout to $out
	local d=$2 w args=()
	if is_mpi "$1"; then
		for w in $(app_args "$1"); do
			case $w in
			ior | mdtest | h5.py) w=$bin/$w ;;
			python3) w=$PY ;;
			DIR/*) w=$d/${w#DIR/} ;;
			DIR) w=$d ;;
			esac
			args+=("$w")
		done
		mpi "${args[@]}" >"$out"
		return
	fi
	case $1 in
	sqlite) (cd "$d" && "${REC[@]}" sqlite3 db.sqlite <"$bin/txn.sql") ;;
	fio) (cd "$d" && "${REC[@]}" fio --output="$shm/fio.out" "$bin/job.fio") ;;
	tar-sync) (cd "$d" && "${REC[@]}" sh -c 'tar cf out.tar src && sync -f out.tar') ;;
	git) (cd "$d" && "${REC[@]}" sh -c 'git add -A && git commit -q -m two && git checkout -q HEAD~1 && git checkout -q -') ;;
	esac >"$out"
}
warm_app() { # the program's binaries back in the page cache: the same program, a tiny problem, on tmpfs
	local w=$scratch/warm
	rm -rf "$w" && mkdir -p "$w"
	case $1 in
	ior-posix | ior-direct) mpi "$bin/ior" -a POSIX -F -e -b 4k -t 4k -o "$w/f" ;;
	ior-mpiio) mpi "$bin/ior" -a MPIIO -c -e -b 4k -t 4k -o "$w/f" ;;
	mdtest*) mpi "$bin/mdtest" -n 2 -w 8 -y -d "$w" ;;
	h5py) mpi "$PY" -I "$bin/h5.py" "$w/f.h5" 1 8 ;;
	sqlite) sqlite3 "$w/db" 'CREATE TABLE t(x); INSERT INTO t VALUES(1);' ;;
	fio) (cd "$w" && fio --output=/dev/null "$bin/warm.fio") ;;
	tar-sync) (cd "$w" && mkdir s && echo x >s/x && sh -c 'tar cf o.tar s && sync -f o.tar') ;;
	git) (cd "$w" && git init -q . && echo x >x && git add -A && git commit -q -m w && git checkout -q -b b && git checkout -q -) ;;
	esac >/dev/null 2>&1
	rm -rf "$w"
}
null_app() { # null_app APP: prints the median wall time of its null command (other programs), 0 for self-timed
	local i s e v=""
	is_mpi "$1" && { echo 0; return; }
	for i in $(seq "$NULLS"); do
		s=$EPOCHREALTIME
		case $1 in
		sqlite) (cd "$scratch" && sqlite3 :memory: '') ;;
		fio) (cd "$scratch" && fio --version) ;;
		tar-sync | git) (cd "$scratch" && sh -c :) ;;
		esac >/dev/null
		e=$EPOCHREALTIME
		v+="$(awk -v s="$s" -v e="$e" 'BEGIN {print e - s}') "
	done
	tr ' ' '\n' <<<"$v" | grep . | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}

fsroot() { case $1 in tmpfs) echo "$shm/fs" ;; disk) echo "$disk/fs" ;; slow) echo "$slowmnt/fs" ;; esac; }
drop_caches() { # drop_caches DIR: its file system's dirty data written, then every clean page, dentry and inode dropped
	sync -f "$1"
	echo 3 >/proc/sys/vm/drop_caches
	# On the throttled device, the sync's flush opens a throttling slice:
	# I/O issued within it gets the credit of the whole slice (bursts
	# of 2–3 times the limit were measured). Idle past it, every run
	# starts from the same state.
	case $1 in "$slowmnt"/*) sleep "$SETTLE" ;; esac
}
load1() { cut -d' ' -f1 /proc/loadavg; }
devstat() { # bytes read, written, reads, writes that reached the throttled device so far
	if [ -n "$cgv2" ]; then
		awk -v d="$loopmm" '$1 == d {for (i = 2; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]}} END {printf "%.0f %.0f %.0f %.0f\n", v["rbytes"], v["wbytes"], v["rios"], v["wios"]}' "$cgv2/io.stat"
	else
		awk -v d="$loopmm" '$1 == d && $2 == "Read" {v[FILENAME ~ /bytes/ ? "rb" : "ri"] = $3} $1 == d && $2 == "Write" {v[FILENAME ~ /bytes/ ? "wb" : "wi"] = $3}
			END {printf "%.0f %.0f %.0f %.0f\n", v["rb"], v["wb"], v["ri"], v["wi"]}' /sys/fs/cgroup/blkio/blkio.throttle.io_service_bytes /sys/fs/cgroup/blkio/blkio.throttle.io_serviced
	fi
}
devdelta() { # devdelta BEFORE AFTER: what reached the device between two devstat readings, tab-separated
	awk -v a="$1" -v b="$2" 'BEGIN {split(a, x, " "); split(b, y, " "); printf "%.0f\t%.0f\t%.0f\t%.0f\n", y[1] - x[1], y[2] - x[2], y[3] - x[3], y[4] - x[4]}'
}
jnum() { grep -o "\"$2\": *[-0-9.e+]*" "$1" | head -1 | sed 's/.*: *//'; }
kv() { sed -n "s/.* *\b$1=\([^ ]*\).*/\1/p" <<<" $2"; } # kv KEY LINE

# The plan.
nmodes=${#mode_names[@]}
nreal=0 nrep=0 ncap=0
for a in $APPS; do
	for t in $TARGETS; do
		nreal=$((nreal + REPS))
		for c in $CAPTURE_FS; do
			for i in $(seq 0 $((nmodes - 1))); do
				[ "${mode_mpirun[$i]}" = 1 ] && ! is_mpi "$a" && continue
				nrep=$((nrep + REPS))
			done
		done
	done
	for c in $CAPTURE_FS; do ncap=$((ncap + CAPTURES)); done
done
{
	echo "applications ($(wc -w <<<"$APPS")):"
	for a in $APPS; do printf '  %-13s %s   [start-up: %s]\n' "$a" "$(cmd_of "$a")" "$(null_of "$a")"; done
	echo "captures: $RECORDER on $CAPTURE_FS"
	echo "targets: $TARGETS (slow: ext4 on a loop device, $SLOW_IOPS IOPS and $SLOW_MBPS MiB/s)"
	echo -n "modes:"
	for i in $(seq 0 $((nmodes - 1))); do
		echo -n " ${mode_names[$i]} ($(sed 's/ *$//' <<<"${mode_flags[$i]}")"
		[ "${mode_oneshot[$i]}" = 1 ] && echo -n ", one-shot"
		[ "${mode_mpirun[$i]}" = 1 ] && echo -n ", under mpirun"
		echo -n ")"
	done
	echo
	echo -n "runs: $ncap captures, $nreal real runs and $nrep replays ($REPS repetitions)"
	if [ "$FAST_REPS" -gt "$REPS" ]; then
		echo "; up to $FAST_REPS repetitions (and captures) where the runs take under $FAST s"
	else
		echo
	fi
} >&2
if [ $dry = 1 ]; then
	log "dry run: helpers built in $bin; nothing run"
	exit 0
fi
seed_inputs

# The slow file system: ext4 on a loop device, throttled.
if [[ " $TARGETS $CAPTURE_FS " == *" slow "* ]]; then
	mkdir -p "$slowmnt"
	truncate -s 2G "$disk/slow.img"
	loopdev=$(losetup --direct-io=on -f --show "$disk/slow.img")
	# Inode tables and journal written now, at the disk's speed: left to
	# ext4lazyinit they would be written in the background, through the
	# throttle, during the first runs.
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$loopdev"
	mount "$loopdev" "$slowmnt"
	loopmm=$(lsblk -dno MAJ:MIN "$loopdev" | tr -d ' ')
	bps=$((SLOW_MBPS * 1024 * 1024))
	if [ -d /sys/fs/cgroup/blkio ]; then
		for f in read_iops write_iops; do echo "$loopmm $SLOW_IOPS" >"/sys/fs/cgroup/blkio/blkio.throttle.${f}_device"; done
		for f in read_bps write_bps; do echo "$loopmm $bps" >"/sys/fs/cgroup/blkio/blkio.throttle.${f}_device"; done
	elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		# cgroup v2: io.max binds in a child group only, and writeback is
		# charged to the group that dirtied the pages: this shell and
		# everything it starts move there.
		cgv2=/sys/fs/cgroup/iotrace-predict.$$
		mkdir "$cgv2"
		echo "+io" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
		echo "$loopmm rbps=$bps wbps=$bps riops=$SLOW_IOPS wiops=$SLOW_IOPS" >"$cgv2/io.max"
		echo $$ >"$cgv2/cgroup.procs"
	else
		echo "run.sh: neither cgroup v1 blkio nor cgroup v2 is mounted: no throttling" >&2
		exit 1
	fi
	log "slow: $loopdev ($loopmm) on $slowmnt, $SLOW_IOPS IOPS, $SLOW_MBPS MiB/s"
fi
for fs in $TARGETS $CAPTURE_FS; do mkdir -p "$(fsroot "$fs")"; done

res=$shm/results.tsv
: >"$res"
out=$shm/out.txt
# io_of APP WALL NULL: the application's I/O time of the run whose stdout is $out
io_of() {
	if is_mpi "$1"; then
		awk '/^io_seconds / {print $2; f = 1} END {if (!f) exit 1}' "$out"
	else
		awk -v w="$2" -v n="$3" 'BEGIN {printf "%.6f\n", w - n}'
	fi
}

capture() { # capture APP FS K: the K-th capture
	local a=$1 fs=$2 k=$3 d trace s e null
	d=$(fsroot "$fs")/work trace=$shm/traces/$a-$fs-$k.iot
	rm -rf "$d" "$trace" && mkdir -p "$d"
	setup_app "$a" "$d"
	drop_caches "$d"
	warm_app "$a"
	null=$(null_app "$a")
	REC=("$bin/iotrace" record "${recflags[@]}" --include "$d" -o "$trace" --)
	s=$EPOCHREALTIME
	run_app "$a" "$d" 2>"$shm/runs/capture-$a-$fs-$k.err" || { REC=(); log "capture $k of $a on $fs failed: $(tail -3 "$shm/runs/capture-$a-$fs-$k.err")"; return 1; }
	e=$EPOCHREALTIME
	REC=()
	local w io sp
	w=$(awk -v s="$s" -v e="$e" 'BEGIN {print e - s}')
	io=$(io_of "$a" "$w" "$null")
	sp=$("$bin/span" "$trace")
	"$bin/iotrace" stats --detail "$trace" >"$shm/runs/capture-$a-$fs-$k.stats" 2>&1 || true
	is_mpi "$a" || io=- # the wall time holds the recorder's own start and end
	printf 'capture\t%s\t%s\t-\t-\t%s\t%s\t%s\t%s\t%s\t%s\n' "$a" "$fs" "$k" "$(kv span "$sp")" "$io" "$w" "$(load1)" "$sp" >>"$res"
	rm -rf "$d"
}

real_run() { # real_run APP FS REP
	local a=$1 fs=$2 rep=$3 d s e null w io
	d=$(fsroot "$fs")/work
	rm -rf "$d" && mkdir -p "$d"
	setup_app "$a" "$d"
	drop_caches "$d"
	warm_app "$a"
	null=$(null_app "$a")
	local l d0=""
	l=$(load1)
	[ "$fs" = slow ] && d0=$(devstat)
	s=$EPOCHREALTIME
	run_app "$a" "$d" 2>"$shm/runs/real-$a-$fs-$rep.err" || { log "real run of $a on $fs failed: $(tail -3 "$shm/runs/real-$a-$fs-$rep.err")"; return 1; }
	e=$EPOCHREALTIME
	[ -z "$d0" ] || printf 'dev\t%s\t%s\t-\treal\t%s\t%s\n' "$a" "$fs" "$rep" "$(devdelta "$d0" "$(devstat)")" >>"$res"
	w=$(awk -v s="$s" -v e="$e" 'BEGIN {print e - s}')
	io=$(io_of "$a" "$w" "$null")
	printf 'real\t%s\t%s\t-\t-\t%s\t%s\t%s\t%s\t%s\n' "$a" "$fs" "$rep" "$io" "$w" "$null" "$l" >>"$res"
	rm -rf "$d"
}

capcount=$CAPTURES                                    # the captures of the application at hand
capture_of() { echo $((($1 - 1) % capcount + 1)); } # the capture repetition REP replays

# fast_captures APP: whether every capture of APP spans less than FAST s.
fast_captures() {
	awk -F'\t' -v a="$1" -v f="$FAST" '$1 == "capture" && $2 == a { n++; if ($7 >= f) slow = 1 } END { exit !(n && !slow) }' "$res"
}
# fast_real APP FS: whether the median of APP's real runs on FS is under FAST s.
fast_real() {
	awk -F'\t' -v a="$1" -v fs="$2" -v f="$FAST" '$1 == "real" && $2 == a && $3 == fs { v[++n] = $7 }
	END {
		if (!n) exit 1
		for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j+1] = v[j]; v[j+1] = t }
		m = (n % 2) ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2
		exit !(m < f)
	}' "$res"
}

replay_run() { # replay_run APP FS CAPTURE_FS MODE_INDEX REP
	local a=$1 fs=$2 cfs=$3 i=$4 rep=$5 t trace rt sum l sp
	local name=${mode_names[$i]} flags
	read -ra flags <<<"${mode_flags[$i]}"
	t=$(fsroot "$fs")/replay trace=$shm/traces/$a-$cfs-$(capture_of "$rep").iot
	rt=$shm/runs/replay-$a-$fs-$cfs-$name-$rep.iot sum=${rt%.iot}.json
	rm -rf "$t" && mkdir -p "$t"
	local -a cmd=("$bin/ioreplay")
	[ "${mode_before[$i]}" = 1 ] && cmd=("$bin/ioreplay-before")
	[ "${mode_mpirun[$i]}" = 1 ] && cmd=(mpirun -np "$NP" --oversubscribe "$bin/ioreplay-mpi" --mpi)
	if [ "${mode_oneshot[$i]}" = 0 ]; then
		"$bin/ioreplay" --prepare-only --quiet --target "$t" "$trace" >/dev/null 2>"${rt%.iot}.err"
		drop_caches "$t"
		# The target now holds the prepared files, which a trace that
		# writes its inputs (sqlite, tar) would overwrite: without --force
		# ioreplay refuses to start.
		cmd+=(--force)
	else
		drop_caches "$t"
	fi
	local d0=""
	# A predicting replay in one process records no trace: its prediction
	# is in its summary, and encoding a trace while the ranks run takes
	# the processors they are measured on (mdtest with fsync on tmpfs, 2
	# ranks on 2 cores: +70 to +110 % with --record, within 6 % of the
	# capture without).
	local -a rec=(--record "$rt")
	[[ " ${flags[*]} " == *" --predict "* && "${mode_mpirun[$i]}" != 1 ]] && rec=()
	l=$(load1)
	[ "$fs" = slow ] && d0=$(devstat)
	"${cmd[@]}" --quiet --target "$t" "${rec[@]}" --summary "$sum" "${flags[@]}" "$trace" >/dev/null 2>>"${rt%.iot}.err" ||
		{ log "replay of $a ($cfs capture) on $fs, mode $name, failed: $(tail -3 "${rt%.iot}.err")"; return 1; }
	[ -z "$d0" ] || printf 'dev\t%s\t%s\t%s\t%s\t%s\t%s\n' "$a" "$fs" "$cfs" "$name" "$rep" "$(devdelta "$d0" "$(devstat)")" >>"$res"
	sp=""
	[ ${#rec[@]} = 0 ] || sp=$("$bin/span" "$rt")
	# The prediction: ioreplay's own (--predict: the rebuilt timelines,
	# "io_span" of its summary) where it makes one, else the span of the
	# replay's trace; the latter is kept in the last column where there
	# is one.
	local pred
	pred=$(jnum "$sum" predicted_seconds)
	[ -n "$pred" ] || pred=$(kv span "$sp")
	printf 'replay\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$a" "$fs" "$cfs" "$name" "$rep" "$pred" \
		"$(jnum "$sum" elapsed_seconds)" "$(jnum "$sum" p50_seconds)" "$(jnum "$sum" p99_seconds)" "$l" "$(kv span "$sp")" >>"$res"
	[ -n "$keep" ] || rm -f "$rt"
	rm -rf "$t"
}

# The recorder's first use builds its shim (and, under mpirun, its MPI
# wrappers) into IOTRACE_CACHE: not in a capture's time.
log "preparing the recorder"
(cd "$scratch" && "$bin/iotrace" record "${recflags[@]}" -o "$scratch/w.iot" -- true) >/dev/null 2>&1
REC=("$bin/iotrace" record "${recflags[@]}" -o "$scratch/w-mpi.iot" --)
mpi "$bin/ior" -a POSIX -F -b 4k -t 4k -o "$scratch/w" >/dev/null 2>&1
REC=()
rm -rf "${scratch:?}"/w*

start=$(date -u '+%F %H:%M UTC') load_start=$(cut -d' ' -f1-3 /proc/loadavg) t_start=$SECONDS
for a in $APPS; do
	capcount=$CAPTURES
	for k in $(seq "$CAPTURES"); do
		for c in $CAPTURE_FS; do
			log "$a: capture $k on $c"
			capture "$a" "$c" "$k" || true
		done
	done
	if [ "$FAST_REPS" -gt "$CAPTURES" ] && fast_captures "$a"; then
		for k in $(seq $((CAPTURES + 1)) "$FAST_REPS"); do
			for c in $CAPTURE_FS; do
				log "$a: capture $k on $c (its captures span under $FAST s)"
				capture "$a" "$c" "$k" || true
			done
		done
		capcount=$FAST_REPS
	fi
	for fs in $TARGETS; do
		want=$REPS rep=0
		while [ $rep -lt "$want" ]; do
			rep=$((rep + 1))
			runs=("real")
			for c in $CAPTURE_FS; do
				[ -e "$shm/traces/$a-$c-$(capture_of "$rep").iot" ] || continue
				for i in $(seq 0 $((nmodes - 1))); do
					[ "${mode_mpirun[$i]}" = 1 ] && ! is_mpi "$a" && continue
					runs+=("$c:$i")
				done
			done
			n=${#runs[@]}
			log "$a on $fs, repetition $rep: $n runs (load $(load1))"
			for k in $(seq 0 $((n - 1))); do
				r=${runs[$(((k + rep - 1) % n))]}
				if [ "$r" = real ]; then
					real_run "$a" "$fs" "$rep" || true
				else
					replay_run "$a" "$fs" "${r%%:*}" "${r#*:}" "$rep" || true
				fi
			done
			if [ "$rep" = "$REPS" ] && [ "$FAST_REPS" -gt "$REPS" ] && fast_real "$a" "$fs"; then
				want=$FAST_REPS
				log "$a on $fs: its real runs take under $FAST s: $FAST_REPS repetitions"
			fi
		done
	done
done
# The same computation right after different file calls, on each file
# system of the run (afterio.c): how far think time depends on the file
# system the program ran on.
for fs in tmpfs disk slow; do
	case " $TARGETS $CAPTURE_FS " in *" $fs "*) ;; *) continue ;; esac
	d=$(fsroot "$fs")
	[ -n "$d" ] || continue
	mkdir -p "$d/afterio"
	"$bin/afterio" "$d/afterio" "$AFTERIO_N" | while read -r kind w c; do
		printf 'afterio\t%s\t%s\t%s\t%s\n' "$fs" "$kind" "$w" "$c" >>"$res"
	done || log "afterio on $fs failed"
	rm -rf "${d:?}/afterio"
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg) minutes=$(((SECONDS - t_start + 30) / 60))

host_s="$(nproc) cores ($(uname -r), $(go version | cut -d' ' -f3))"
mode_names_s="${mode_names[*]}"
declare -p start load_start load_end minutes commit host_s SIZES APPS TARGETS CAPTURE_FS RECORDER REPS CAPTURES FAST FAST_REPS SLOW_IOPS SLOW_MBPS SETTLE AFTERIO_N mode_names_s >"$shm/meta.sh"
section >"$shm/section.md"
cat "$shm/section.md"
[ -z "$write" ] || write_doc "$shm/section.md"
