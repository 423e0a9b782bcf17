#!/usr/bin/env bash
# Benchmarks of script expansion: what it costs to read every rank of a
# pattern script (iotrace stats, convert, ioreplay --dry-run read scripts
# this way), before and after the completion log shared by the streams of
# an expansion (script/expand.go, clog). Prints the Markdown of the
# "Script expansion" section of docs/BENCHMARKS.md.
#
#   1. go test -bench ExpandAllRanks ./script: ns per event, every rank read
#      one after the other, for a 64-rank script with a barrier every write
#      and a time-driven loop, parabench-listing3 at 16 ranks (smaller
#      parameters), b_eff_io at 8 ranks with T=2s.
#   2. iotrace stats on parabench-listing3 (16 ranks, its defaults) and
#      b_eff_io (8 ranks, T=1m): user CPU seconds and peak RSS.
#
# BASE (default: the commit before the completion log) is built in a
# temporary git worktree; its runs and the current tree's alternate, REPS
# (3) times, and the table gives medians and the ratio within each pair.
#
#   bench/script/run.sh      # about five minutes
set -euo pipefail
cd "$(dirname "$0")/../.."

# What the table says of the two trees: BASE's default, or a BASE given.
if [ -z "${BASE:-}" ]; then
	BASE=$(git log --format=%H -n 1 --grep='^script: a completion log shared')^
	WHAT="every rank's stream runs the other ranks of its communicators itself) and after the completion log shared by an expansion's streams"
else
	WHAT="given as BASE) and after (the current tree)"
fi
REPS=${REPS:-3}

tmp=$(mktemp -d)
cleanup() {
	git worktree remove --force "$tmp/base" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
git worktree add --detach "$tmp/base" "$BASE" >/dev/null 2>&1
# The benchmark file is the current one, in both trees.
cp script/expand_bench_test.go "$tmp/base/script/"
(cd "$tmp/base" && go test -c -o "$tmp/base.test" ./script && CGO_ENABLED=0 go build -o "$tmp/base-iotrace" ./cmd/iotrace)
go test -c -o "$tmp/new.test" ./script
CGO_ENABLED=0 go build -o "$tmp/new-iotrace" ./cmd/iotrace # static, as README.md's Install builds it

# bench BIN: the ns/event of each case, one per line: "name value".
bench() {
	(cd script && "$1" -test.run '^$' -test.bench ExpandAllRanks -test.benchtime 2x) |
		awk '/^BenchmarkExpandAllRanks\// { split($1, a, "/"); sub(/-[0-9]+$/, "", a[2]); for (i = 1; i <= NF; i++) if ($(i+1) == "ns/event") print a[2], $i }'
}
# cpu BIN ARGS…: user seconds and peak RSS (KiB).
cpu() {
	/usr/bin/time -f "%U %M" -o "$tmp/time" "$@" >/dev/null 2>&1
	cat "$tmp/time"
}

declare -A bb nb
declare -A sb sn
for rep in $(seq "$REPS"); do
	while read -r n v; do bb[$n]+="$v "; done < <(bench "$tmp/base.test")
	while read -r n v; do nb[$n]+="$v "; done < <(bench "$tmp/new.test")
	for c in "parabench-listing3 --ranks 16" "beffio --ranks 8 --param T=1m"; do
		read -r u m < <(cpu "$tmp/base-iotrace" stats $c)
		sb[$c]+="$u:$m "
		read -r u m < <(cpu "$tmp/new-iotrace" stats $c)
		sn[$c]+="$u:$m "
	done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ratios() { # ratios A B: median of A_i / B_i
	paste <(tr ' ' '\n' <<<"$1" | grep -v '^$') <(tr ' ' '\n' <<<"$2" | grep -v '^$') |
		awk '{ printf "%.1f\n", $1 / $2 }' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

{
	echo "## Script expansion ($(date -u +%Y-%m-%d), $(nproc) cores, $(go version | cut -d' ' -f3))"
	echo
	echo "Output of \`bench/script/run.sh\`: reading every rank of a pattern script, one after the other, before"
	echo "($(git rev-parse --short "$BASE"): $WHAT. Medians of $REPS interleaved runs;"
	echo "the ratio is the median of before ÷ after within each pair."
	echo
	echo "| \`go test -bench ExpandAllRanks ./script\` | ns/event before | ns/event after | before ÷ after |"
	echo "|---|---:|---:|---:|"
	for n in barrier-64 parabench-listing3-16 beffio-8; do
		echo "| $n | $(median <<<"${bb[$n]}") | $(median <<<"${nb[$n]}") | $(ratios "${bb[$n]}" "${nb[$n]}") |"
	done
	echo
	echo "| \`iotrace stats\` | user s before | user s after | before ÷ after | RSS MiB before | RSS MiB after |"
	echo "|---|---:|---:|---:|---:|---:|"
	for c in "parabench-listing3 --ranks 16" "beffio --ranks 8 --param T=1m"; do
		ub=$(tr ' ' '\n' <<<"${sb[$c]}" | cut -d: -f1 | tr '\n' ' ')
		un=$(tr ' ' '\n' <<<"${sn[$c]}" | cut -d: -f1 | tr '\n' ' ')
		mb=$(tr ' ' '\n' <<<"${sb[$c]}" | grep -v '^$' | cut -d: -f2 | median)
		mn=$(tr ' ' '\n' <<<"${sn[$c]}" | grep -v '^$' | cut -d: -f2 | median)
		echo "| $c | $(median <<<"$ub") | $(median <<<"$un") | $(ratios "$ub" "$un") | $((mb / 1024)) | $((mn / 1024)) |"
	done
}
