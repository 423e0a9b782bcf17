package darshan

import (
	"cmp"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/access"
)

// A plan is what every rank does, as items in time order.

// seg is n accesses of size bytes, back to back from off.
type seg struct {
	off, size, n int64
	seek         bool // each access is an lseek to it and a read or write at the position
	pos          bool // the accesses are at the position the ones before left (stdio)
}

type itemKind uint8

const (
	iStat itemKind = iota
	iOpen
	iClose
	iDup // dup and close of the dup
	iData
	iSeek // an lseek that no access follows
	iFsync
	iFdatasync
	iMPIOpen
	iMPIClose
	iMPIData
	iMPISync
	iMPIView
)

// item is one step of a rank's plan.
type item struct {
	kind    itemKind
	at      float64 // planned start, seconds from the job's start
	file    int     // index in plan.files
	session int
	dir     trace.Dir
	segs    []seg // iData, iMPIData
	n       int64 // repetitions (iStat, iDup, iSeek, iFsync, iFdatasync, iMPISync, iMPIView)
	flags   uint32
	mode    uint32
	self    bool // iMPIOpen on MPI_COMM_SELF
	coll    bool // iMPIData: collective
	nb      bool // iMPIData: non-blocking
	inMPIIO bool // POSIX calls an MPI-IO library made
	stdio   bool // calls of Darshan's STDIO module: fopen, fwrite, fseek…
	order   int  // tie-break: the order items were planned in
}

type plan struct {
	log    *Log
	files  []string
	fileIx map[string]int
	ranks  [][]item
	notes  []string // what the plan could not honour, for the header
	order  int
}

func (p *plan) file(name string) int {
	if i, ok := p.fileIx[name]; ok {
		return i
	}
	p.fileIx[name] = len(p.files)
	p.files = append(p.files, name)
	return len(p.files) - 1
}

func (p *plan) add(rank int, it item) {
	it.order = p.order
	p.order++
	p.ranks[rank] = append(p.ranks[rank], it)
}

func (p *plan) note(format string, args ...any) {
	p.notes = append(p.notes, fmt.Sprintf(format, args...))
}

// dealInt splits total over k parts as evenly as possible, the larger
// parts first from start.
func dealInt(total int64, k, start int) []int64 {
	out := make([]int64, k)
	if k == 0 {
		return out
	}
	for i := range out {
		out[i] = total / int64(k)
	}
	for j := int64(0); j < total%int64(k); j++ {
		out[(start+int(j))%k]++
	}
	return out
}

// dealSizes splits each size's count over k ranks.
func dealSizes(s []sizeCount, k int) [][]sizeCount {
	out := make([][]sizeCount, k)
	start := 0
	for _, c := range s {
		parts := dealInt(c.n, k, start)
		start = (start + int(c.n%int64(k))) % k
		for i, n := range parts {
			if n > 0 {
				out[i] = append(out[i], sizeCount{c.size, n})
			}
		}
	}
	return out
}

// recordRanks returns the ranks of a record: its own, or every rank.
func (p *plan) recordRanks(r *Record) []int {
	if r.Rank >= 0 {
		return []int{r.Rank}
	}
	out := make([]int, p.log.NProcs)
	for i := range out {
		out[i] = i
	}
	return out
}

// maxChunks bounds the runs of back-to-back accesses one rank's accesses
// of one direction are laid out in (a log of random accesses beyond it is
// laid out in fewer, longer runs: its sequential counts come out higher
// than the log's, and the script's header says so).
const maxChunks = 1 << 20

// maxChunksAll bounds them over all the ranks of a record, so that memory
// stays within what the log's size describes, whatever its counts say.
const maxChunksAll = 1 << 24

// layout is one rank's accesses of one direction, laid out.
type layout struct {
	segs []seg
	ext  int64 // the end of the furthest access
	// The last sweep (the accesses after the last jump back): its first
	// segment, its furthest end and the last byte before the jump (-1:
	// there is no jump back).
	sweep         int
	sweepEnd      int64
	beforeJumpEnd int64
}

// shift moves the segments from i on by d.
func (l *layout) shift(from int, d int64) {
	for i := from; i < len(l.segs); i++ {
		l.segs[i].off += d
	}
}

// dirLayout lays out one rank's accesses of one direction: n accesses of
// the sizes in order, c of them consecutive, g after a forward gap of the
// strides in gaps, the others (but the first) after a jump back to the
// start, spread among the gaps so that the sweeps between jumps are of
// about equal reach. The first access is at 0; the caller moves a rank
// whose first access is sequential. Offsets are from the rank's base.
func dirLayout(sizes []sizeCount, c, g int64, gaps []sizeCount, most int64) layout {
	n, _ := total(sizes)
	l := layout{beforeJumpEnd: -1}
	if n == 0 {
		return l
	}
	chunks := min(max(n-c, 1), most) // chunks of back-to-back accesses
	backs := max(chunks-1-g, 0)
	chunkLen := func(k int64) int64 {
		l := n / chunks
		if k < n%chunks {
			l++
		}
		return l
	}
	// boundary k is a jump back when it is one of the backs spread evenly
	isBack := func(k int64) bool {
		if backs == 0 {
			return false
		}
		j := ((k+1)*(backs+1) + chunks - 1) / chunks
		return j >= 1 && j <= backs && j*chunks/(backs+1)-1 == k
	}
	var pos int64
	si, used := 0, int64(0) // the size being taken, and how many of it
	gi, gused := 0, int64(0)
	nback := int64(0)
	for k := int64(0); k < chunks; k++ {
		ln := chunkLen(k)
		for ln > 0 {
			sz := sizes[si]
			take := min(ln, sz.n-used)
			l.segs = append(l.segs, seg{off: pos, size: sz.size, n: take})
			pos += take * sz.size
			l.ext = max(l.ext, pos)
			l.sweepEnd = max(l.sweepEnd, pos)
			ln -= take
			used += take
			if used == sz.n {
				si++
				used = 0
			}
		}
		if k == chunks-1 {
			break
		}
		back := nback < backs && (isBack(k) || chunks-1-k <= backs-nback)
		if !back && gi < len(gaps) {
			pos += gaps[gi].size
			gused++
			if gused == gaps[gi].n {
				gi++
				gused = 0
			}
			continue
		}
		nback++
		l.beforeJumpEnd = pos
		l.sweep = len(l.segs)
		l.sweepEnd = 0
		pos = 0
	}
	return l
}

// split cuts segs into parts of about equal numbers of accesses.
func split(segs []seg, parts int) [][]seg {
	var n int64
	for _, s := range segs {
		n += s.n
	}
	want := dealInt(n, parts, 0)
	out := make([][]seg, parts)
	i := 0
	for _, s := range segs {
		for s.n > 0 {
			for i < parts-1 && want[i] == 0 {
				i++
			}
			take := min(s.n, want[i])
			if i == parts-1 {
				take = s.n
			}
			out[i] = append(out[i], seg{off: s.off, size: s.size, n: take, seek: s.seek})
			s.off += take * s.size
			s.n -= take
			want[i] -= take
		}
	}
	return out
}

// markSeeks makes the first k accesses of segs lseek-then-access ones,
// and returns how many it marked.
func markSeeks(segs []seg, k int64) ([]seg, int64) {
	var out []seg
	var marked int64
	for _, s := range segs {
		if k > 0 {
			take := min(k, s.n)
			out = append(out, seg{off: s.off, size: s.size, n: take, seek: true})
			k -= take
			marked += take
			if take < s.n {
				out = append(out, seg{off: s.off + take*s.size, size: s.size, n: s.n - take})
			}
			continue
		}
		out = append(out, s)
	}
	return out, marked
}

func opsOf(segs []seg) int64 {
	var n int64
	for _, s := range segs {
		n += s.n
	}
	return n
}

// spreadTime returns the time of step i of n between a and b.
func spreadTime(a, b float64, i, n int) float64 {
	if n <= 1 || b <= a {
		return a
	}
	return a + (b-a)*float64(i)/float64(n-1)
}

const (
	dirR = 0
	dirW = 1
)

// posixRecord plans a POSIX record.
func (p *plan) posixRecord(r *Record, inMPIIO bool, mode uint32) {
	ranks := p.recordRanks(r)
	k := len(ranks)
	fi := p.file(r.File)
	var histR, histW [10]int64
	for i, b := range access.BucketNames {
		histR[i] = r.C("POSIX_SIZE_READ_" + b)
		histW[i] = r.C("POSIX_SIZE_WRITE_" + b)
	}
	var accesses, strides access.Commons
	for i := range 4 {
		accesses[i] = access.Common{Value: r.C(fmt.Sprintf("POSIX_ACCESS%d_ACCESS", i+1)), Count: r.C(fmt.Sprintf("POSIX_ACCESS%d_COUNT", i+1))}
		strides[i] = access.Common{Value: r.C(fmt.Sprintf("POSIX_STRIDE%d_STRIDE", i+1)), Count: r.C(fmt.Sprintf("POSIX_STRIDE%d_COUNT", i+1))}
	}
	histR = p.checkHist(r, histR, "POSIX_READS", "POSIX_BYTES_READ")
	histW = p.checkHist(r, histW, "POSIX_WRITES", "POSIX_BYTES_WRITTEN")
	reads, writes, _ := solveSizes(accesses, histR, histW, r.C("POSIX_BYTES_READ"), r.C("POSIX_BYTES_WRITTEN"))
	// Every rank with reads and writes switches at least once: where the
	// log has fewer switches than ranks, fewer ranks read and write. The
	// first choice whose accesses reach the log's highest bytes is taken.
	layoutFor := func(wr, rd []int, alignStep [2]bool, order uint64) (sizes [2][][]sizeCount, per [2][]rankDir, fits bool) {
		fits = true
		sizes = [2][][]sizeCount{spreadOver(dealSizes(reads, len(rd)), rd, k), spreadOver(dealSizes(writes, len(wr)), wr, k)}
		if order > 0 {
			// another order of the sizes: where accesses of several sizes run
			// back to back, which offsets are aligned depends on it
			rng := rand.New(rand.NewPCG(order, 1))
			for d := range sizes {
				for _, l := range sizes[d] {
					rng.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
				}
			}
		}
		seqs := [2]int64{r.C("POSIX_SEQ_READS"), r.C("POSIX_SEQ_WRITES")}
		cons := [2]int64{r.C("POSIX_CONSEC_READS"), r.C("POSIX_CONSEC_WRITES")}
		maxByte := [2]int64{r.C("POSIX_MAX_BYTE_READ"), r.C("POSIX_MAX_BYTE_WRITTEN")}

		// Ranks with accesses of each direction, and their transitions (all
		// but the first access).
		var nr [2]int
		var slots [2][]int64
		for d := range 2 {
			slots[d] = make([]int64, k)
			for i := range k {
				n, _ := total(sizes[d][i])
				if n > 0 {
					nr[d]++
					slots[d][i] = n - 1
				}
			}
		}
		// Strides: complete when fewer than four are listed.
		var strideVals []sizeCount
		var gapTotal int64
		for _, s := range strides {
			if s.Value > 0 && s.Count > 0 {
				strideVals = append(strideVals, sizeCount{s.Value, s.Count})
				gapTotal += s.Count
			}
		}
		complete := len(strideVals) < 4
		// F: ranks whose first access of a direction is sequential (not at
		// offset 0); the others' is at 0. G: forward gaps.
		var F, G [2]int64
		for d := range 2 {
			if nr[d] > 1 {
				F[d] = int64(nr[d] - 1)
			}
			F[d] = min(F[d], max(seqs[d]-cons[d], 0))
		}
		if complete {
			x := seqs[0] + seqs[1] - cons[0] - cons[1] - gapTotal
			for d := range 2 {
				for F[0]+F[1] < x && F[d] < int64(nr[d]) && F[d] < seqs[d]-cons[d] {
					F[d]++
				}
			}
			for d := range 2 {
				for F[0]+F[1] > x && F[d] > 0 {
					F[d]--
				}
			}
		}
		for d := range 2 {
			G[d] = max(seqs[d]-cons[d]-F[d], 0)
		}
		if !complete {
			// Gaps beyond the listed strides get other strides.
			var listed int64
			for _, s := range strideVals {
				listed += s.n
			}
			if need := G[0] + G[1] - listed; need > 0 {
				var cs []access.Common
				for _, v := range strideVals {
					cs = append(cs, access.Common{Value: v.size, Count: v.n})
				}
				more, _ := spread(need, need*max(strideVals[3].size/2, 1), 1, 1<<50, newLimiter(cs))
				strideVals = append(strideVals, more...)
			}
		}
		// Gaps of each direction: the strides split in proportion.
		var gapVals [2][]sizeCount
		{
			left := G
			for _, s := range strideVals {
				wn := min(s.n, left[dirW])
				if G[0]+G[1] > 0 {
					wn = min(wn, (s.n*G[dirW]+G[0]+G[1]-1)/(G[0]+G[1]))
				}
				rn := min(s.n-wn, left[dirR])
				wn = min(s.n-rn, left[dirW])
				if wn > 0 {
					gapVals[dirW] = append(gapVals[dirW], sizeCount{s.size, wn})
				}
				if rn > 0 {
					gapVals[dirR] = append(gapVals[dirR], sizeCount{s.size, rn})
				}
				left[dirW] -= wn
				left[dirR] -= rn
			}
		}
		// Per rank: consecutive accesses and gaps, dealt over the ranks'
		// transitions.
		for d := range 2 {
			per[d] = make([]rankDir, k)
			room := slices.Clone(slots[d])
			cs := fill(cons[d], room)
			gs := fill(G[d], room)
			gv := dealSizesBy(gapVals[d], gs)
			// the last F ranks with accesses start after 0
			f := F[d]
			for i := k - 1; i >= 0 && f > 0; i-- {
				if n, _ := total(sizes[d][i]); n > 0 {
					per[d][i].first = true
					f--
				}
			}
			for i := range k {
				per[d][i].c, per[d][i].g, per[d][i].gaps = cs[i], gs[i], gv[i]
				per[d][i].lay = dirLayout(sizes[d][i], cs[i], gs[i], gv[i], max(min(maxChunks, maxChunksAll/int64(k)), 64))
			}
			// bases: ranks starting at 0 stay; the others are spread so that
			// the furthest access ends at the log's MAX_BYTE + 1
			align := r.C("POSIX_FILE_ALIGNMENT")
			if align <= 0 {
				align = 1
			}
			var firsts []int
			for i := range k {
				if per[d][i].first {
					firsts = append(firsts, i)
				}
			}
			end := maxByte[d] + 1
			if len(firsts) > 0 {
				lastExt := per[d][firsts[len(firsts)-1]].lay.ext
				step := (end - lastExt) / int64(len(firsts))
				if alignStep[d] && step >= align {
					step -= step % align
				}
				for j, i := range firsts {
					l := &per[d][i].lay
					base := step * int64(j+1)
					if j == len(firsts)-1 {
						base = end - l.ext
					}
					base = min(base, end-l.ext)
					if base <= 1 {
						// a first access at 1 would be consecutive (after
						// byte 0, where Darshan starts): 2 at least
						base = int64(j + 2)
					}
					l.shift(0, base)
					l.ext += base
					l.sweepEnd += base
					if l.beforeJumpEnd >= 0 {
						l.beforeJumpEnd += base
					}
				}
			}
			// Still short of the highest byte: a rank's last sweep after a
			// jump back starts further on, as far as it stays a jump back.
			reach := int64(0)
			for i := range k {
				reach = max(reach, per[d][i].lay.ext)
			}
			for i := k - 1; i >= 0 && reach < end; i-- {
				l := &per[d][i].lay
				if l.beforeJumpEnd < 0 || len(l.segs) == 0 {
					continue
				}
				from := l.segs[l.sweep].off
				to := end - (l.sweepEnd - from)
				if to > from && to <= l.beforeJumpEnd-1 {
					l.shift(l.sweep, to-from)
					l.sweepEnd += to - from
					l.ext = max(l.ext, l.sweepEnd)
					reach = max(reach, l.ext)
				}
			}
			if nr[d] > 0 && reach != end {
				fits = false
			}
		}
		return sizes, per, fits
	}
	// The first choice of ranks whose accesses reach the highest bytes,
	// with the bases of its ranks aligned to the file's alignment or not,
	// whichever gives the log's unaligned count.
	var sizes [2][][]sizeCount
	var per [2][]rankDir
	align := r.C("POSIX_FILE_ALIGNMENT")
	found := false
	for _, c := range ranksFor(len(writes) > 0, len(reads) > 0, r.C("POSIX_RW_SWITCHES"), k) {
		orders := uint64(64) // orders of sizes to try; fewer for big records
		if r.C("POSIX_READS")+r.C("POSIX_WRITES") > 100_000 {
			orders = 2
		}
	tries:
		for order := range orders {
			for _, as := range [][2]bool{{true, true}, {false, false}, {true, false}, {false, true}} {
				s, pr, fits := layoutFor(c[0], c[1], as, order)
				if !fits {
					break tries // alignment and order do not change the reach much: next choice of ranks
				}
				if sizes[0] == nil && sizes[1] == nil && per[0] == nil {
					sizes, per = s, pr
				}
				if notAligned(pr, align) == r.C("POSIX_FILE_NOT_ALIGNED") {
					sizes, per, found = s, pr, true
					break tries
				}
			}
		}
		if found {
			break
		}
	}
	if per[0] == nil {
		c := ranksFor(len(writes) > 0, len(reads) > 0, r.C("POSIX_RW_SWITCHES"), k)[0]
		sizes, per, _ = layoutFor(c[0], c[1], [2]bool{true, true}, 0)
	}
	_ = sizes
	opens := dealInt(r.C("POSIX_OPENS")-r.C("POSIX_DUPS"), k, 0)
	dups := dealInt(r.C("POSIX_DUPS"), k, 0)
	seeks := dealInt(r.C("POSIX_SEEKS"), k, 0)
	stats := dealInt(r.C("POSIX_STATS"), k, 0)
	fsyncs := dealInt(r.C("POSIX_FSYNCS"), k, 0)
	fdsyncs := dealInt(r.C("POSIX_FDSYNCS"), k, 0)
	// read/write switches: every rank with both directions has one at
	// least
	var both []int
	for i := range k {
		if len(per[dirR][i].lay.segs) > 0 && len(per[dirW][i].lay.segs) > 0 {
			both = append(both, i)
		}
	}
	sw := make([]int64, k)
	if len(both) > 0 {
		extra := dealInt(max(r.C("POSIX_RW_SWITCHES")-int64(len(both)), 0), len(both), 0)
		for j, i := range both {
			sw[i] = 1 + extra[j]
		}
	}
	writesFirst := r.F("POSIX_F_WRITE_START_TIMESTAMP") <= r.F("POSIX_F_READ_START_TIMESTAMP") ||
		r.F("POSIX_F_READ_START_TIMESTAMP") == 0
	for i, rank := range ranks {
		segsR, segsW := per[dirR][i].lay.segs, per[dirW][i].lay.segs
		// lseeks before the first accesses
		segsW, mw := markSeeks(segsW, seeks[i])
		segsR, mr := markSeeks(segsR, seeks[i]-mw)
		extraSeeks := seeks[i] - mw - mr
		if !writesFirst {
			segsR, mr = markSeeks(per[dirR][i].lay.segs, seeks[i])
			segsW, mw = markSeeks(per[dirW][i].lay.segs, seeks[i]-mr)
			extraSeeks = seeks[i] - mw - mr
		}
		// blocks: alternate directions sw[i]+1 times
		type block struct {
			dir  trace.Dir
			segs []seg
		}
		var blocks []block
		switch {
		case len(segsR) > 0 && len(segsW) > 0:
			nb := int(min(sw[i]+1, 1<<16))
			first, second := trace.DirWrite, trace.DirRead
			fs, ss := segsW, segsR
			if !writesFirst {
				first, second, fs, ss = second, first, ss, fs
			}
			na, nb2 := (nb+1)/2, nb/2
			na = int(min(int64(na), opsOf(fs)))
			nb2 = int(min(int64(nb2), opsOf(ss)))
			pa, pb := split(fs, max(na, 1)), split(ss, max(nb2, 1))
			for j := 0; j < max(na, nb2); j++ {
				if j < len(pa) {
					blocks = append(blocks, block{first, pa[j]})
				}
				if j < len(pb) {
					blocks = append(blocks, block{second, pb[j]})
				}
			}
		case len(segsW) > 0:
			blocks = append(blocks, block{trace.DirWrite, segsW})
		case len(segsR) > 0:
			blocks = append(blocks, block{trace.DirRead, segsR})
		}
		nopen := opens[i]
		needOpen := len(blocks) > 0 || extraSeeks > 0 || fsyncs[i] > 0 || fdsyncs[i] > 0 || dups[i] > 0
		if nopen <= 0 && needOpen {
			nopen = 1
		}
		// sessions: one block each when there are as many opens as blocks
		// and each direction has one block; else every block in the first
		sessionOf := func(b int) int { return 0 }
		if nopen >= int64(len(blocks)) && len(blocks) == 2 {
			sessionOf = func(b int) int { return b }
		}
		flags := uint32(trace.ORdwr)
		if len(segsW) == 0 && len(segsR) > 0 {
			flags = trace.ORdonly
		}
		if inMPIIO {
			flags |= trace.InMPIIO
		}
		t := func(name string) float64 { return r.F("POSIX_F_" + name) }
		if stats[i] > 0 {
			p.add(rank, item{kind: iStat, at: t("OPEN_START_TIMESTAMP"), file: fi, n: stats[i], inMPIIO: inMPIIO})
		}
		lastData := 0
		for b := range blocks {
			lastData = max(lastData, sessionOf(b))
		}
		nw, nrd := 0, 0
		for s := 0; s < int(nopen); s++ {
			at := spreadTime(t("OPEN_START_TIMESTAMP"), t("OPEN_END_TIMESTAMP"), s, int(nopen))
			// a session opens no later than its first block starts
			nw0, nr0 := nw, nrd
			for b, blk := range blocks {
				if sessionOf(b) != s {
					continue
				}
				if blk.dir == trace.DirWrite {
					at = min(at, spreadTime(t("WRITE_START_TIMESTAMP"), t("WRITE_END_TIMESTAMP"), nw0, (len(blocks)+1)/2+1))
					nw0++
				} else {
					at = min(at, spreadTime(t("READ_START_TIMESTAMP"), t("READ_END_TIMESTAMP"), nr0, (len(blocks)+1)/2+1))
					nr0++
				}
			}
			fl, md := flags, uint32(0)
			if mode != 0 {
				fl |= trace.OCreat
				md = mode
			}
			p.add(rank, item{kind: iOpen, at: at, file: fi, session: s, flags: fl, mode: md, inMPIIO: inMPIIO})
			if s == 0 && dups[i] > 0 {
				p.add(rank, item{kind: iDup, at: at, file: fi, session: s, n: dups[i], inMPIIO: inMPIIO})
			}
			for b, blk := range blocks {
				if sessionOf(b) != s {
					continue
				}
				var bt float64
				if blk.dir == trace.DirWrite {
					bt = spreadTime(t("WRITE_START_TIMESTAMP"), t("WRITE_END_TIMESTAMP"), nw, (len(blocks)+1)/2+1)
					nw++
				} else {
					bt = spreadTime(t("READ_START_TIMESTAMP"), t("READ_END_TIMESTAMP"), nrd, (len(blocks)+1)/2+1)
					nrd++
				}
				p.add(rank, item{kind: iData, at: bt, file: fi, session: s, dir: blk.dir, segs: blk.segs, inMPIIO: inMPIIO})
			}
			if s == lastData {
				if extraSeeks > 0 {
					p.add(rank, item{kind: iSeek, at: at, file: fi, session: s, n: extraSeeks, inMPIIO: inMPIIO})
				}
				if fsyncs[i] > 0 {
					p.add(rank, item{kind: iFsync, at: at, file: fi, session: s, n: fsyncs[i], inMPIIO: inMPIIO})
				}
				if fdsyncs[i] > 0 {
					p.add(rank, item{kind: iFdatasync, at: at, file: fi, session: s, n: fdsyncs[i], inMPIIO: inMPIIO})
				}
			}
			ct := spreadTime(t("CLOSE_START_TIMESTAMP"), t("CLOSE_END_TIMESTAMP"), s, int(nopen))
			p.add(rank, item{kind: iClose, at: ct, file: fi, session: s, inMPIIO: inMPIIO})
		}
	}
}

// checkHist returns the size histogram of a record if it counts as many
// accesses as the record's op counter; else (a damaged or edited log) all
// the accesses in the bucket of their mean size.
func (p *plan) checkHist(r *Record, h [10]int64, ops, bytes string) [10]int64 {
	return p.checkHistSum(r, h, r.C(ops), ops, bytes)
}

func (p *plan) checkHistSum(r *Record, h [10]int64, n int64, what, bytes string) [10]int64 {
	var sum int64
	for _, v := range h {
		if v < 0 {
			sum = -1
			break
		}
		sum += v
	}
	if sum == n || n < 0 {
		return h
	}
	p.note("%s (rank %d): the size histogram counts %d accesses, %s %d: sizes from %s", r.File, r.Rank, sum, what, n, bytes)
	var out [10]int64
	if n > 0 {
		out[access.Bucket(max(r.C(bytes), 0)/n)] = n
	}
	return out
}

// ranksFor returns choices of the ranks (of k) that write and that read,
// in order of preference, so that at most sw of them do both: sw ranks
// doing all (as the aggregators of collective buffering do); the writers
// first and the readers last, overlapping on sw ranks; every rank writing
// and sw reading; every rank reading and sw writing.
func ranksFor(writes, reads bool, sw int64, k int) [][2][]int {
	all := make([]int, k)
	for i := range all {
		all[i] = i
	}
	if !writes || !reads || sw >= int64(k) {
		return [][2][]int{{all, all}}
	}
	both := int(max(sw, 1))
	a := (k + both) / 2 // writers: 0 … a-1; readers: a-both … k-1
	return [][2][]int{{all[:both], all[:both]}, {all[:a], all[a-both:]}, {all, all[k-both:]}, {all[k-both:], all}}
}

// spreadOver puts parts dealt over the ranks of idx into a slice of k.
func spreadOver(parts [][]sizeCount, idx []int, k int) [][]sizeCount {
	out := make([][]sizeCount, k)
	for j, i := range idx {
		out[i] = parts[j]
	}
	return out
}

// rankDir is one rank's accesses of one direction.
type rankDir struct {
	c, g  int64
	first bool
	gaps  []sizeCount
	lay   layout
}

// fill deals total over parts of at most room[i] each, evenly; it
// lowers room by what it gave.
func fill(total int64, room []int64) []int64 {
	out := make([]int64, len(room))
	for total > 0 {
		open := 0
		for _, r := range room {
			if r > 0 {
				open++
			}
		}
		if open == 0 {
			break
		}
		share := max(total/int64(open), 1)
		for i := range room {
			if total == 0 {
				break
			}
			if room[i] > 0 {
				g := min(share, room[i], total)
				out[i] += g
				room[i] -= g
				total -= g
			}
		}
	}
	return out
}

// dealSizesBy deals the values of s over parts of counts[i] each.
func dealSizesBy(s []sizeCount, counts []int64) [][]sizeCount {
	out := make([][]sizeCount, len(counts))
	vi, used := 0, int64(0)
	// round robin one at a time would be fairest; in turn is enough:
	// every part takes its share of each value in order
	left := slices.Clone(counts)
	var tot int64
	for _, c := range counts {
		tot += c
	}
	if tot == 0 {
		return out
	}
	for _, c := range s {
		shares := make([]int64, len(counts))
		var given int64
		for i := range counts {
			shares[i] = min(c.n*counts[i]/tot, left[i])
			given += shares[i]
		}
		for i := 0; given < c.n && i < len(counts); i++ {
			if left[i] > shares[i] {
				x := min(left[i]-shares[i], c.n-given)
				shares[i] += x
				given += x
			}
		}
		for i, n := range shares {
			if n > 0 {
				out[i] = append(out[i], sizeCount{c.size, n})
				left[i] -= n
			}
		}
	}
	_ = vi
	_ = used
	return out
}

// mpiioRecord plans an MPI-IO record.
func (p *plan) mpiioRecord(r *Record) {
	ranks := p.recordRanks(r)
	k := len(ranks)
	fi := p.file(r.File)
	var histR, histW [10]int64
	for i, b := range access.BucketNames {
		histR[i] = r.C("MPIIO_SIZE_READ_AGG_" + b)
		histW[i] = r.C("MPIIO_SIZE_WRITE_AGG_" + b)
	}
	var accesses access.Commons
	for i := range 4 {
		accesses[i] = access.Common{Value: r.C(fmt.Sprintf("MPIIO_ACCESS%d_ACCESS", i+1)), Count: r.C(fmt.Sprintf("MPIIO_ACCESS%d_COUNT", i+1))}
	}
	histR = p.checkHistSum(r, histR, r.C("MPIIO_INDEP_READS")+r.C("MPIIO_COLL_READS")+r.C("MPIIO_SPLIT_READS")+r.C("MPIIO_NB_READS"), "MPIIO reads", "MPIIO_BYTES_READ")
	histW = p.checkHistSum(r, histW, r.C("MPIIO_INDEP_WRITES")+r.C("MPIIO_COLL_WRITES")+r.C("MPIIO_SPLIT_WRITES")+r.C("MPIIO_NB_WRITES"), "MPIIO writes", "MPIIO_BYTES_WRITTEN")
	reads, writes, _ := solveSizes(accesses, histR, histW, r.C("MPIIO_BYTES_READ"), r.C("MPIIO_BYTES_WRITTEN"))
	shared := r.Rank < 0 && k > 1
	// Collective calls are made by every rank the same number of times.
	per := func(name string) []int64 {
		v := r.C(name)
		if shared && (name == "MPIIO_COLL_OPENS" || name == "MPIIO_COLL_READS" || name == "MPIIO_COLL_WRITES" ||
			name == "MPIIO_SPLIT_READS" || name == "MPIIO_SPLIT_WRITES" || name == "MPIIO_SYNCS" || name == "MPIIO_VIEWS") {
			if v%int64(k) != 0 {
				p.note("%s of %s: %d is not a multiple of the %d ranks that make the collective calls", name, r.File, v, k)
			}
			out := make([]int64, k)
			for i := range out {
				out[i] = v / int64(k)
			}
			return out
		}
		return dealInt(v, k, 0)
	}
	collOpens, indepOpens := per("MPIIO_COLL_OPENS"), per("MPIIO_INDEP_OPENS")
	if !shared {
		// a per-rank record's collective opens were on a communicator we
		// do not know: they are made on MPI_COMM_SELF
		for i := range indepOpens {
			indepOpens[i] += collOpens[i]
			collOpens[i] = 0
		}
		if r.C("MPIIO_COLL_OPENS") > 0 {
			p.note("MPIIO_COLL_OPENS of %s (rank %d): opened on a communicator the log does not name; made on MPI_COMM_SELF", r.File, r.Rank)
		}
	}
	kinds := []struct {
		dir      trace.Dir
		coll, nb bool
		n        []int64
	}{
		{trace.DirWrite, true, false, sum(per("MPIIO_COLL_WRITES"), per("MPIIO_SPLIT_WRITES"))},
		{trace.DirWrite, false, false, per("MPIIO_INDEP_WRITES")},
		{trace.DirWrite, false, true, per("MPIIO_NB_WRITES")},
		{trace.DirRead, true, false, sum(per("MPIIO_COLL_READS"), per("MPIIO_SPLIT_READS"))},
		{trace.DirRead, false, false, per("MPIIO_INDEP_READS")},
		{trace.DirRead, false, true, per("MPIIO_NB_READS")},
	}
	if r.C("MPIIO_SPLIT_READS")+r.C("MPIIO_SPLIT_WRITES") > 0 {
		p.note("MPIIO_SPLIT_* of %s: split collectives are made as collective calls", r.File)
	}
	if r.C("MPIIO_HINTS") > 0 {
		p.note("MPIIO_HINTS of %s: the script sets no hints", r.File)
	}
	syncs, views := per("MPIIO_SYNCS"), per("MPIIO_VIEWS")
	// Sizes of each rank's calls: collective calls take sizes in the same
	// order on every rank.
	sizeQueue := [2][]sizeCount{reads, writes}
	mode := uint32(r.C("MPIIO_MODE"))
	writesFirst := r.F("MPIIO_F_WRITE_START_TIMESTAMP") <= r.F("MPIIO_F_READ_START_TIMESTAMP") || r.F("MPIIO_F_READ_START_TIMESTAMP") == 0
	t := func(name string) float64 { return r.F("MPIIO_F_" + name) }
	// The calls of each rank, per direction, in order (collective first).
	type call struct {
		size     int64
		coll, nb bool
	}
	var calls [2][][]call
	for d := range 2 {
		calls[d] = make([][]call, k)
	}
	take := func(d int) int64 {
		q := &sizeQueue[d]
		for len(*q) > 0 && (*q)[0].n == 0 {
			*q = (*q)[1:]
		}
		if len(*q) == 0 {
			return 0
		}
		(*q)[0].n--
		return (*q)[0].size
	}
	for _, kd := range kinds {
		d := dirR
		if kd.dir == trace.DirWrite {
			d = dirW
		}
		if kd.coll {
			// call j of every rank, for each j
			var most int64
			for _, n := range kd.n {
				most = max(most, n)
			}
			for j := int64(0); j < most; j++ {
				for i := range k {
					if j < kd.n[i] {
						calls[d][i] = append(calls[d][i], call{take(d), true, false})
					}
				}
			}
			continue
		}
		for i := range k {
			for j := int64(0); j < kd.n[i]; j++ {
				calls[d][i] = append(calls[d][i], call{take(d), false, kd.nb})
			}
		}
	}
	// bytes each rank moves per direction: its region of the file
	var regions [2][]int64
	for d := range 2 {
		regions[d] = make([]int64, k)
		for i := range k {
			for _, c := range calls[d][i] {
				regions[d][i] += c.size
			}
		}
	}
	for i, rank := range ranks {
		var base [2]int64
		for d := range 2 {
			for j := range i {
				base[d] += regions[d][j]
			}
		}
		// blocks of calls: one per direction, writes first unless the log
		// read first
		order := []int{dirW, dirR}
		if !writesFirst {
			order = []int{dirR, dirW}
		}
		var blocks []int
		for _, d := range order {
			if len(calls[d][i]) > 0 {
				blocks = append(blocks, d)
			}
		}
		ns := collOpens[i]
		self := false
		if ns == 0 {
			ns, self = indepOpens[i], true
		}
		if ns == 0 && (len(blocks) > 0 || syncs[i] > 0 || views[i] > 0) {
			ns, self = 1, !shared
			p.note("MPIIO opens of %s (rank %d): the log has none but calls; one is made", r.File, rank)
		}
		sessionOf := func(b int) int64 { return 0 }
		if ns >= int64(len(blocks)) {
			sessionOf = func(b int) int64 { return int64(b) }
		}
		for s := int64(0); s < ns; s++ {
			at := spreadTime(t("OPEN_START_TIMESTAMP"), t("OPEN_END_TIMESTAMP"), int(s), int(ns))
			for b, d := range blocks {
				if sessionOf(b) == s {
					if d == dirW {
						at = min(at, t("WRITE_START_TIMESTAMP"))
					} else {
						at = min(at, t("READ_START_TIMESTAMP"))
					}
				}
			}
			fl := uint32(trace.MPIModeCreate | trace.MPIModeRdwr)
			if s == ns-1 && mode != 0 {
				fl = mode // Darshan keeps the mode of the last open
			}
			p.add(rank, item{kind: iMPIOpen, at: at, file: fi, session: int(s), flags: fl, self: self})
			if s == 0 && views[i] > 0 {
				p.add(rank, item{kind: iMPIView, at: at, file: fi, session: int(s), n: views[i]})
			}
			for b, d := range blocks {
				if sessionOf(b) != s {
					continue
				}
				dir := trace.DirRead
				bt := t("READ_START_TIMESTAMP")
				if d == dirW {
					dir = trace.DirWrite
					bt = t("WRITE_START_TIMESTAMP")
				}
				off := base[d]
				// runs of calls of one kind and size
				cs := calls[d][i]
				for j := 0; j < len(cs); {
					e := j
					for e < len(cs) && cs[e] == cs[j] {
						e++
					}
					n := int64(e - j)
					p.add(rank, item{kind: iMPIData, at: bt, file: fi, session: int(s), dir: dir,
						segs: []seg{{off: off, size: cs[j].size, n: n}}, coll: cs[j].coll, nb: cs[j].nb})
					off += n * cs[j].size
					j = e
				}
			}
			if s == ns-1 && syncs[i] > 0 {
				p.add(rank, item{kind: iMPISync, at: at, file: fi, session: int(s), n: syncs[i]})
			}
			ct := spreadTime(t("CLOSE_START_TIMESTAMP"), t("CLOSE_END_TIMESTAMP"), int(s), int(ns))
			p.add(rank, item{kind: iMPIClose, at: ct, file: fi, session: int(s), self: self})
		}
		// independent opens beyond the sessions: open and close on self
		if !self {
			for s := int64(0); s < indepOpens[i]; s++ {
				at := spreadTime(t("OPEN_START_TIMESTAMP"), t("OPEN_END_TIMESTAMP"), 0, 1)
				fl := uint32(trace.MPIModeRdonly)
				if mode != 0 {
					fl = mode
				}
				p.add(rank, item{kind: iMPIOpen, at: at, file: fi, session: int(ns + s), flags: fl, self: true})
				p.add(rank, item{kind: iMPIClose, at: at, file: fi, session: int(ns + s), self: true})
			}
		}
	}
}

func sum(a, b []int64) []int64 {
	out := slices.Clone(a)
	for i := range out {
		out[i] += b[i]
	}
	return out
}

// order sorts every rank's items by planned time, keeping the items of
// one file's session in the order they were planned.
func (p *plan) sortItems() {
	for r := range p.ranks {
		its := p.ranks[r]
		// a session's items start no earlier than the item before them
		// (sessions of one file follow each other)
		type key struct{ file, session int }
		last := map[key]float64{}
		for i := range its {
			k := key{its[i].file, 0}
			if its[i].kind == iMPIOpen || its[i].kind == iMPIClose || its[i].kind == iMPIData || its[i].kind == iMPISync || its[i].kind == iMPIView {
				k.file = -1 - k.file
			}
			if v, ok := last[k]; ok && its[i].at < v {
				its[i].at = v
			}
			last[k] = its[i].at
		}
		slices.SortStableFunc(its, func(a, b item) int {
			return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.order, b.order))
		})
	}
}

// calls counts the calls the plan makes, about.
func (p *plan) calls() int64 {
	var n int64
	for _, its := range p.ranks {
		for _, it := range its {
			n += max(it.n, 1)
			for _, s := range it.segs {
				n += s.n
			}
		}
	}
	return n
}

// notAligned counts the accesses of every rank and direction whose offset
// is not a multiple of align.
func notAligned(per [2][]rankDir, align int64) int64 {
	if align <= 0 {
		return 0
	}
	var n int64
	for d := range per {
		for _, rd := range per[d] {
			for _, sg := range rd.lay.segs {
				n += sg.n - alignedIn(sg.off, sg.size, sg.n, align)
			}
		}
	}
	return n
}

// alignedIn counts the i in [0, n) with off + i·size a multiple of a: the
// solutions of i·size ≡ −off (mod a).
func alignedIn(off, size, n, a int64) int64 {
	if n <= 0 {
		return 0
	}
	r := (-off%a + a) % a
	s := (size%a + a) % a
	g := gcd(s, a)
	if r%g != 0 {
		return 0
	}
	m := a / g
	if m == 1 {
		return n
	}
	i0 := mulmod((r/g)%m, inverse((s/g)%m, m), m)
	if i0 >= n {
		return 0
	}
	return (n-1-i0)/m + 1
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	if a == 0 {
		return 1
	}
	return a
}

// inverse is x with a·x ≡ 1 (mod m), for a and m coprime.
func inverse(a, m int64) int64 {
	g, x, _ := egcd(a, m)
	if g != 1 {
		return 0
	}
	return (x%m + m) % m
}

func egcd(a, b int64) (int64, int64, int64) {
	if b == 0 {
		return a, 1, 0
	}
	g, x, y := egcd(b, a%b)
	return g, y, x - (a/b)*y
}

func mulmod(a, b, m int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	_, rem := bits.Div64(hi%uint64(m), lo, uint64(m))
	return int64(rem)
}

// stdioRecord plans a STDIO record: its streams opened, written and read
// at their position, sought and flushed. The module keeps no size
// histogram: accesses are of the mean size (and one more byte for some).
func (p *plan) stdioRecord(r *Record) {
	ranks := p.recordRanks(r)
	k := len(ranks)
	fi := p.file(r.File)
	if r.C("STDIO_FDOPENS") > 0 {
		p.note("STDIO_FDOPENS of %s: fdopen is made as fopen", r.File)
	}
	opens := dealInt(r.C("STDIO_OPENS"), k, 0)
	seeks := dealInt(r.C("STDIO_SEEKS"), k, 0)
	flushes := dealInt(r.C("STDIO_FLUSHES"), k, 0)
	type dirPlan struct {
		n, bytes []int64
		max      int64
	}
	dirs := [2]dirPlan{
		{dealInt(r.C("STDIO_READS"), k, 0), dealInt(r.C("STDIO_BYTES_READ"), k, 0), r.C("STDIO_MAX_BYTE_READ")},
		{dealInt(r.C("STDIO_WRITES"), k, 0), dealInt(r.C("STDIO_BYTES_WRITTEN"), k, 0), r.C("STDIO_MAX_BYTE_WRITTEN")},
	}
	t := func(name string) float64 { return r.F("STDIO_F_" + name) }
	for i, rank := range ranks {
		// per direction: the accesses from the stream's start; a seek
		// before the last one where the log's highest byte is further on
		var blocks [2][]seg
		usedSeeks := int64(0)
		for d := range 2 {
			n, b := dirs[d].n[i], dirs[d].bytes[i]
			if n <= 0 {
				continue
			}
			q, rem := b/n, b%n
			var segs []seg
			if n-rem > 0 {
				segs = append(segs, seg{size: q, n: n - rem, pos: true})
			}
			if rem > 0 {
				segs = append(segs, seg{size: q + 1, n: rem, pos: true})
			}
			// the rank with the furthest accesses reaches the highest byte
			if end := dirs[d].max + 1; b < end && i == k-1 && usedSeeks < seeks[i] {
				last := &segs[len(segs)-1]
				if last.n > 1 {
					last.n--
					segs = append(segs, seg{size: last.size, n: 1})
				} else {
					last.pos = false
				}
				l := &segs[len(segs)-1]
				l.off, l.seek, l.pos = end-l.size, true, false
				usedSeeks++
			}
			blocks[d] = segs
		}
		nopen := opens[i]
		if nopen <= 0 && (len(blocks[0]) > 0 || len(blocks[1]) > 0) {
			nopen = 1
		}
		flags := uint32(trace.OWronly | trace.OCreat | trace.OTrunc)
		switch {
		case len(blocks[0]) > 0 && len(blocks[1]) > 0:
			flags = trace.ORdwr | trace.OCreat
		case len(blocks[0]) > 0:
			flags = trace.ORdonly
		}
		// writes in the first session, reads in the second (the stream
		// starts again at 0), or after a seek back when there is one
		for s := 0; s < int(nopen); s++ {
			at := spreadTime(t("OPEN_START_TIMESTAMP"), t("OPEN_END_TIMESTAMP"), s, int(nopen))
			fl, md := flags, uint32(0)
			if fl&trace.OCreat != 0 {
				md = 0o666
			}
			p.add(rank, item{kind: iOpen, at: at, file: fi, session: s, flags: fl, mode: md, stdio: true})
			for _, d := range []int{dirW, dirR} {
				segs := blocks[d]
				if len(segs) == 0 {
					continue
				}
				want := 0
				if d == dirR && len(blocks[dirW]) > 0 && nopen > 1 {
					want = 1
				}
				if s != want {
					continue
				}
				if d == dirR && want == 0 && len(blocks[dirW]) > 0 {
					// back to the start of the stream to read what was written
					segs[0].seek, segs[0].pos = true, false
					if segs[0].n > 1 {
						rest := segs[0]
						rest.n--
						rest.seek, rest.pos = false, true
						segs = append([]seg{{off: 0, size: segs[0].size, n: 1, seek: true}, rest}, segs[1:]...)
					}
					usedSeeks++
				}
				dir, bt := trace.DirWrite, t("WRITE_START_TIMESTAMP")
				if d == dirR {
					dir, bt = trace.DirRead, t("READ_START_TIMESTAMP")
				}
				p.add(rank, item{kind: iData, at: bt, file: fi, session: s, dir: dir, segs: segs, stdio: true})
			}
			if s == 0 {
				if extra := seeks[i] - usedSeeks; extra > 0 {
					p.add(rank, item{kind: iSeek, at: at, file: fi, session: s, n: extra, stdio: true})
				}
				if flushes[i] > 0 {
					p.add(rank, item{kind: iFsync, at: at, file: fi, session: s, n: flushes[i], stdio: true})
				}
			}
			ct := spreadTime(t("CLOSE_START_TIMESTAMP"), t("CLOSE_END_TIMESTAMP"), s, int(nopen))
			p.add(rank, item{kind: iClose, at: ct, file: fi, session: s, stdio: true})
		}
	}
}
