package fold

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
)

// Options tune a conversion. The zero value is the default.
type Options struct {
	// Window is how many of the last commands (or loops) a rank's folding
	// compares with the newest: the longest loop body it finds. 256 by
	// default.
	Window int
	// KeepSleep: think time at least this long stays where the trace had
	// it (a sleep before the call). Shorter gaps are pooled into one
	// sleep per loop body or block. 100µs by default.
	KeepSleep time.Duration
	// MinSleep: pooled think time shorter than this is dropped. 1µs by
	// default.
	MinSleep time.Duration
	// Workers folds this many ranks at once; GOMAXPROCS by default.
	Workers int
	// Source names the trace in the script's header comment.
	Source string
}

func (o *Options) defaults() {
	if o.Window <= 0 {
		o.Window = 256
	}
	if o.KeepSleep <= 0 {
		o.KeepSleep = 100 * time.Microsecond
	}
	if o.MinSleep <= 0 {
		o.MinSleep = time.Microsecond
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
}

// Result is a converted trace.
type Result struct {
	File     *script.File
	Ranks    int      // the ranks the script runs with (--ranks)
	Events   int64    // events of the trace
	Warnings []string // what the script does not keep
	// PerRank is, for every rank with events, its events and the
	// statements its folded program has before ranks are merged.
	PerRank []RankStats
	// Groups is the number of distinct folded programs (ranks whose
	// programs differ only in rank-dependent values count as one).
	Groups int
	// rankLines returns the lines of rank PerRank[i]'s program alone.
	rankLines func(i int) int
}

// RankStats describes the folding of one rank.
type RankStats struct {
	Rank   uint32
	Events int64
	Lines  int // lines of its folded program alone (set by Explain)
	Loops  int // loops in it
	Depth  int // deepest loop nesting
}

// Convert folds the trace t into a pattern script that makes, rank by
// rank, the same calls (see Compare for what "the same" means). Ranks are
// read one at a time per worker, each in one pass with memory bounded by
// the size of its folded program.
func Convert(t trace.Trace, opt Options) (*Result, error) {
	opt.defaults()
	ranks := t.Ranks()
	nranks := t.Meta().Ranks
	for _, r := range ranks {
		nranks = max(nranks, int(r)+1)
	}
	if nranks == 0 {
		return nil, errors.New("the trace has no events")
	}
	if nranks > script.MaxRanks {
		// The script could not be run, and its layout costs memory per
		// rank: refuse before making it.
		return nil, fmt.Errorf("the trace has %d ranks (its highest rank, or its header, says so): a script runs at most %d", nranks, script.MaxRanks)
	}
	in := newInterner()
	type rankOut struct {
		nodes  []*node
		events int64
		halves int64 // sendrecvs without a receive half
		// descriptors declared without an event, and of them those
		// that replaced one the trace opened on another file
		declared, redeclared int64
		splits               map[string]uint32 // the communicators it made, by name
		std                  stdUse
		comms                map[uint32]bool
		err                  error
	}
	outs := make([]rankOut, len(ranks))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < opt.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				o := &outs[i]
				src, err := t.Rank(ranks[i])
				if err != nil {
					o.err = err
					continue
				}
				f := newFolder(in, opt.Window)
				lw := newLowerer(in, ranks[i], src.Path, f)
				o.err = lowerAll(src, lw)
				if c, ok := src.(io.Closer); ok {
					c.Close()
				}
				if o.err == nil {
					o.nodes, o.err = f.finish()
					if o.err != nil {
						o.err = fmt.Errorf("rank %d: %w", ranks[i], o.err)
					}
				}
				o.events, o.comms, o.halves = lw.ncall, lw.comms, lw.unknownHalves
				o.declared, o.redeclared, o.splits = lw.declared, lw.redeclared, lw.splitIDs
				o.std = stdUse{hoisted: lw.hoisted, touched: lw.stdTouched, kinds: lw.kinds}
			}
		}()
	}
	for i := range ranks {
		next <- i
	}
	close(next)
	wg.Wait()
	res := &Result{Ranks: nranks}
	var declared, redeclared, halves int64
	comms := map[uint32][]int{}
	lists := make([][]*stmt, len(ranks))
	rs := make([]int, len(ranks))
	for i, o := range outs {
		if o.err != nil {
			return nil, o.err
		}
		res.Events += o.events
		declared += o.declared
		redeclared += o.redeclared
		halves += o.halves
		for c := range o.comms {
			comms[c] = append(comms[c], int(ranks[i]))
		}
		lists[i] = tableFold(tree(o.nodes, 0), 0)
		rs[i] = int(ranks[i])
		loops, depth := loopStats(lists[i], 0)
		res.PerRank = append(res.PerRank, RankStats{Rank: ranks[i], Events: o.events, Loops: loops, Depth: depth})
	}
	if declared > 0 {
		w := fmt.Sprintf("the trace uses %s it does not show opened (inherited, or opened by calls the capture left out): the script declares them with quiet inherits, which make no event", count(declared, "descriptor"))
		if redeclared > 0 {
			w += fmt.Sprintf("; %d of them had been opened on another file in the trace (renamed since, or the calls of processes the trace does not tell apart)", redeclared)
		}
		res.Warnings = append(res.Warnings, w)
	}
	if halves > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d MPI_Sendrecv calls have no recorded source (the trace predates it): the script receives each from the rank it sends to, where a replay of the trace receives from any rank", halves))
	}
	groups, decls, err := inferGroups(comms, nranks)
	if err != nil {
		return nil, err
	}
	std := make([]stdUse, len(outs))
	for i := range outs {
		std[i] = outs[i].std
	}
	hoistStd(in, lists, std)
	made := make([]map[string]uint32, len(outs))
	for i := range outs {
		made[i] = outs[i].splits
	}
	members := splitMembers(made, ranks)
	colors, err := splitColors(lists, rs, nranks, groups, members)
	if err != nil {
		return nil, err
	}
	for i := range lists {
		if err := commPeers(lists[i], groups, outs[i].splits, members, rs[i]); err != nil {
			return nil, err
		}
	}
	mg := &merger{nranks: nranks, maxAlign: 1 << 20}
	merged := mg.mergeList(rs, lists, 0)
	em := &emitter{nranks: nranks, keep: float64(opt.KeepSleep), min: float64(opt.MinSleep),
		groups: groups, used: map[int]bool{}, onFirst: -1, mg: mg, colors: colors}
	em.dir = commonDir(lists)
	all := make([]int, nranks)
	for i := range all {
		all[i] = i
	}
	body := em.list(merged, all, 0, 0)
	if em.err != nil {
		return nil, em.err
	}
	res.Groups = len(distinctSigs(lists))
	// Each rank's program on its own, for Explain.
	res.rankLines = func(i int) int {
		one := &emitter{nranks: nranks, keep: em.keep, min: em.min, groups: groups, used: map[int]bool{}, onFirst: -1, mg: mg, colors: colors}
		p := one.list(mg.mergeList([]int{rs[i]}, [][]*stmt{lists[i]}, 0), []int{rs[i]}, 0, 0)
		return countLines(script.Format(&script.File{Stmts: p}))
	}
	var stmts []script.Stmt
	if em.dir != "" {
		stmts = append(stmts, &script.ParamStmt{Name: ident("dir"), Value: script.Str(em.dir)})
	}
	stmts = append(stmts, decls...)
	stmts = append(stmts, body...)
	res.File = &script.File{Stmts: stmts}
	header := []string{
		fmt.Sprintf("# Converted by iotrace convert --to script from %s:", nameOr(opt.Source, "a trace")),
		fmt.Sprintf("# %d ranks, %d calls. Run it with --ranks %d.", nranks, res.Events, nranks),
	}
	for _, w := range res.Warnings {
		header = append(header, "# Note: "+w+".")
	}
	if len(stmts) > 0 {
		in := stmts[0]
		var cs []script.Comment
		for _, h := range header {
			cs = append(cs, script.Comment{Text: h})
		}
		setLeading(in, cs)
	}
	return res, nil
}

// count writes n things: "1 descriptor", "3 descriptors".
func count(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func nameOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func setLeading(s script.Stmt, cs []script.Comment) {
	switch s := s.(type) {
	case *script.ParamStmt:
		s.Leading = cs
	case *script.GroupStmt:
		s.Leading = cs
	case *script.CommandStmt:
		s.Leading = cs
	case *script.RepeatStmt:
		s.Leading = cs
	case *script.IfStmt:
		s.Leading = cs
	case *script.OnStmt:
		s.Leading = cs
	case *script.TimeStmt:
		s.Leading = cs
	}
}

func countLines(b []byte) int { return strings.Count(string(b), "\n") }

func lowerAll(src trace.Source, lw *lowerer) error {
	buf := make([]trace.Event, trace.BatchSize)
	for {
		n, err := src.ReadEvents(buf)
		for i := range buf[:n] {
			if e := lw.event(&buf[i]); e != nil {
				return e
			}
		}
		if errors.Is(err, io.EOF) {
			return lw.flush()
		}
		if err != nil {
			return fmt.Errorf("rank %d: %w", lw.rank, err)
		}
	}
}

func loopStats(ss []*stmt, depth int) (loops, deepest int) {
	for _, s := range ss {
		d := depth
		if s.kind == tLoop {
			loops++
			d++
			deepest = max(deepest, d)
		}
		l, dd := loopStats(s.body, d)
		loops += l
		deepest = max(deepest, dd)
	}
	return
}

func distinctSigs(lists [][]*stmt) map[string]bool {
	m := map[string]bool{}
	for _, l := range lists {
		m[sig(l)] = true
	}
	return m
}

// inferGroups turns the communicators of the trace (other than
// MPI_COMM_WORLD and MPI_COMM_SELF) into the script's groups: communicator
// c is group c-2 in declaration order, and the groups take the ranks in
// order. A communicator no rank used is declared for the ranks between
// the groups around it (the first of several such takes them all, the
// others none). A trace whose communicators are not laid out that way
// cannot be a script.
func inferGroups(comms map[uint32][]int, nranks int) (map[uint32][]int, []script.Stmt, error) {
	if len(comms) == 0 {
		return nil, nil, nil
	}
	var top uint32
	for c := range comms {
		if c > 1<<16 {
			return nil, nil, fmt.Errorf("the trace uses communicator %d: a script's groups are communicators 2, 3, … in order", c)
		}
		top = max(top, c)
	}
	groups := map[uint32][]int{}
	var decls []script.Stmt
	next := 0
	var unused []*script.GroupStmt // declared, no rank used them, since the last used one
	for c := uint32(2); c <= top; c++ {
		rs := comms[c]
		if len(rs) == 0 {
			g := &script.GroupStmt{Name: ident(groupName(c)), Size: script.Int(0)}
			unused = append(unused, g)
			decls = append(decls, g)
			continue
		}
		sort.Ints(rs)
		if rs[len(rs)-1]-rs[0] != len(rs)-1 || rs[0] < next || rs[0] > next && len(unused) == 0 {
			return nil, nil, fmt.Errorf("communicator %d has ranks %s: a script's groups take consecutive ranks in order, from %d", c, rankList(rs), next)
		}
		if rs[0] > next {
			unused[0].Size = script.Int(int64(rs[0] - next))
		}
		unused = nil
		groups[c] = rs
		next = rs[0] + len(rs)
		decls = append(decls, &script.GroupStmt{Name: ident(groupName(c)), Size: script.Int(int64(len(rs)))})
	}
	if next > nranks {
		return nil, nil, fmt.Errorf("the groups have %d ranks, the run %d", next, nranks)
	}
	return groups, decls, nil
}

// shiftConst returns p + d.
func shiftConst(p poly, d int64) poly {
	out := make(poly, 0, len(p)+1)
	done := false
	for _, t := range p {
		if !done && t.m == "" && t.tab == nil {
			done = true
			if t.c += d; t.c == 0 {
				continue
			}
		}
		out = append(out, t)
	}
	if !done && d != 0 {
		out = append(poly{{c: d}}, out...)
	}
	return out
}

// commonDir is the directory every absolute path of the script starts
// with, when there are at least two paths: it becomes the parameter dir.
func commonDir(lists [][]*stmt) string {
	var dir string
	n := 0
	ok := true
	var walk func([]*stmt)
	walk = func(ss []*stmt) {
		for _, s := range ss {
			if s.kind == tLeaf && ok {
				l := s.t.leaf
				for i, p := range []*strT{l.path, l.path2} {
					if p == nil || l.operand == oLabel || i == 1 && l.text2 || i == 0 && l.operand != oPath {
						continue
					}
					lit := p.lits[0]
					if p.runs() == 0 {
						lit = lit[:strings.LastIndexByte(lit, '/')+1]
					}
					if !strings.HasPrefix(lit, "/") {
						ok = false
						return
					}
					d := lit[:strings.LastIndexByte(lit, '/')]
					if n == 0 {
						dir = d
					}
					for !strings.HasPrefix(d+"/", dir+"/") {
						dir = dir[:max(strings.LastIndexByte(dir, '/'), 0)]
					}
					n++
				}
			}
			walk(s.body)
		}
	}
	for _, l := range lists {
		walk(l)
	}
	if !ok || n < 2 || dir == "" {
		return ""
	}
	return dir
}

// Verify runs src (the script Convert made from t) with t's ranks and
// compares what every rank does with t (Compare). Each rank runs on its
// own, as a replay runs it: collective calls do not wait for the others,
// which changes no call.
func Verify(t trace.Trace, name string, src []byte, nranks int) error {
	p, err := script.Compile(name, src)
	if err != nil {
		return fmt.Errorf("the script does not compile: %w", err)
	}
	in, err := p.Instantiate(script.Config{Ranks: nranks})
	if err != nil {
		return err
	}
	return Compare(t, &instanceTrace{in: in, paths: trace.NewPaths()})
}

// instanceTrace is a script instance as a trace whose ranks run alone.
type instanceTrace struct {
	in    *script.Instance
	paths *trace.Paths
}

func (x *instanceTrace) Meta() trace.Meta { return trace.Meta{Ranks: x.in.Ranks()} }

func (x *instanceTrace) Ranks() []uint32 {
	rs := make([]uint32, x.in.Ranks())
	for i := range rs {
		rs[i] = uint32(i)
	}
	return rs
}

func (x *instanceTrace) Rank(r uint32) (trace.Source, error) {
	return x.in.Source(int(r), x.paths, nil)
}

func (x *instanceTrace) Path(id trace.PathID) string { return x.paths.Lookup(id) }

func (x *instanceTrace) Close() error { return nil }
