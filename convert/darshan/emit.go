package darshan

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
)

// A rank's body is rendered as a template: the text with a hole for each
// number that may differ between ranks (offsets, think times), and the
// numbers. Ranks whose templates are equal share one block of the script,
// the holes written as expressions of rank.

type hole struct {
	v   int64
	dur bool // a duration in ns (else bytes)
}

type body struct {
	text  string
	holes []hole
}

type renderer struct {
	b      strings.Builder
	holes  []hole
	indent string
}

const holeMark = "\x00"

func (r *renderer) line(format string, args ...any) {
	r.b.WriteString(r.indent)
	fmt.Fprintf(&r.b, format, args...)
	r.b.WriteByte('\n')
}

// off returns a hole for a byte count.
func (r *renderer) off(v int64) string {
	r.holes = append(r.holes, hole{v: v})
	return holeMark
}

func (r *renderer) dur(ns int64) string {
	r.holes = append(r.holes, hole{v: ns, dur: true})
	return holeMark
}

func size(n int64) string { return script.Size(n).Raw }

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '\\', '"', '$':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// openFlags writes POSIX open flags with the script's names.
func openFlags(f uint32) string {
	var parts []string
	switch f & 3 {
	case trace.ORdonly:
		parts = append(parts, "O_RDONLY")
	case trace.OWronly:
		parts = append(parts, "O_WRONLY")
	default:
		parts = append(parts, "O_RDWR")
	}
	if f&trace.OCreat != 0 {
		parts = append(parts, "O_CREAT")
	}
	if f&trace.InMPIIO != 0 {
		parts = append(parts, "0x80000000")
	}
	return strings.Join(parts, " | ")
}

func mpiFlags(f uint32) string {
	names := []struct {
		v    uint32
		name string
	}{{trace.MPIModeCreate, "MPI_MODE_CREATE"}, {trace.MPIModeRdonly, "MPI_MODE_RDONLY"},
		{trace.MPIModeWronly, "MPI_MODE_WRONLY"}, {trace.MPIModeRdwr, "MPI_MODE_RDWR"},
		{16, "MPI_MODE_DELETE_ON_CLOSE"}, {32, "MPI_MODE_UNIQUE_OPEN"}, {trace.MPIModeExcl, "MPI_MODE_EXCL"},
		{trace.MPIModeAppend, "MPI_MODE_APPEND"}, {256, "MPI_MODE_SEQUENTIAL"}}
	var parts []string
	for _, n := range names {
		if f&n.v != 0 {
			parts = append(parts, n.name)
			f &^= n.v
		}
	}
	if f != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(f), 16))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " | ")
}

// nominal durations of the calls a plan makes, as script.DefaultModel
// gives them, to place the think time.
var model = script.DefaultModel()

func dataDur(n int64) int64 {
	return int64(model.DataLatency) + (n*1_000_000_000+model.DataBandwidth-1)/model.DataBandwidth
}

// renderRank writes rank's items as a template. files are the names
// the rank's block uses for the plan's files (with $rank where the block
// is shared).
func (p *plan) renderRank(rank int, names []string) body {
	r := &renderer{indent: "    "}
	var clock int64 // ns, the rank's nominal clock
	for _, it := range p.ranks[rank] {
		at := int64(it.at * 1e9)
		if at > clock {
			r.line("sleep %s", r.dur(at-clock))
			clock = at
		}
		path := names[it.file]
		h := fmt.Sprintf("f%d", it.file)
		m := fmt.Sprintf("m%d", it.file)
		rep := func(n int64, f func()) {
			if n == 1 {
				f()
				return
			}
			r.line("repeat %d {", n)
			r.indent += "    "
			f()
			r.indent = r.indent[4:]
			r.line("}")
		}
		detail := ""
		if it.inMPIIO {
			detail = " flags 0x80000000"
		}
		call := func(name string) string { return "" }
		if it.stdio {
			// Darshan's STDIO module: the stream calls, on a handle of their own
			h = fmt.Sprintf("s%d", it.file)
			call = func(name string) string { return " call " + name }
		}
		switch it.kind {
		case iStat:
			rep(it.n, func() { r.line("stat %s", path) })
			clock += it.n * int64(model.MetaLatency)
		case iOpen:
			mode := ""
			if it.flags&trace.OCreat != 0 {
				mode = fmt.Sprintf(" mode 0o%o", it.mode)
			}
			r.line("open %s as %s flags %s%s%s", path, h, openFlags(it.flags), mode, call("fopen"))
			clock += int64(model.MetaLatency)
		case iDup:
			rep(it.n, func() {
				r.line("dup %s as d%d", h, it.file)
				r.line("close d%d%s", it.file, detail)
			})
			clock += 2 * it.n * int64(model.MetaLatency)
		case iClose:
			r.line("close %s%s%s", h, detail, call("fclose"))
			clock += int64(model.MetaLatency)
		case iSeek:
			if it.stdio {
				rep(it.n, func() { r.line("seek %s to 0 from current call fseek", h) })
			} else {
				rep(it.n, func() { r.line("seek %s to 0%s", h, detail) })
			}
			clock += it.n * int64(model.SeekLatency)
		case iFsync:
			rep(it.n, func() { r.line("sync %s%s%s", h, detail, call("fflush")) })
			clock += it.n * int64(model.MetaLatency)
		case iFdatasync:
			rep(it.n, func() { r.line("datasync %s%s", h, detail) })
			clock += it.n * int64(model.MetaLatency)
		case iData, iMPIData:
			verb := "read"
			if it.dir == trace.DirWrite {
				verb = "write"
			}
			handle, tail := h, detail
			if it.stdio {
				tail = " call f" + verb
			}
			if it.kind == iMPIData {
				handle, tail = m, ""
				if it.coll {
					tail = " all"
				} else if it.nb {
					tail = " call MPI_File_i" + verb + "_at"
				}
			}
			for i := 0; i < len(it.segs); {
				s := it.segs[i]
				// segments of the same shape at a constant distance: one loop
				j := i + 1
				var step int64
				if j < len(it.segs) {
					step = it.segs[j].off - s.off
				}
				for j < len(it.segs) && it.segs[j].n == s.n && it.segs[j].size == s.size && it.segs[j].seek == s.seek &&
					it.segs[j].off-it.segs[j-1].off == step {
					j++
				}
				if s.pos {
					// at the stream's position, which the accesses before left here
					rep(s.n, func() { r.line("%s %s size %s%s", verb, handle, size(s.size), tail) })
					clock += s.n * dataDur(s.size)
					i++
					continue
				}
				outer := int64(j - i)
				off := r.off(s.off)
				if outer > 1 {
					off += fmt.Sprintf(" + s * %s", size(step))
					r.line("repeat %d as s {", outer)
					r.indent += "    "
				}
				if s.n > 1 {
					off += fmt.Sprintf(" + i * %s", size(s.size))
					r.line("repeat %d as i {", s.n)
					r.indent += "    "
				}
				if s.seek {
					r.line("seek %s to %s%s%s", handle, off, detail, call("fseek"))
					r.line("%s %s size %s%s", verb, handle, size(s.size), tail)
				} else {
					r.line("%s %s at %s size %s%s", verb, handle, off, size(s.size), tail)
				}
				if s.n > 1 {
					r.indent = r.indent[4:]
					r.line("}")
				}
				if outer > 1 {
					r.indent = r.indent[4:]
					r.line("}")
				}
				per := dataDur(s.size)
				if s.seek {
					per += int64(model.SeekLatency)
				}
				clock += outer * s.n * per
				i = j
			}
		case iMPIOpen:
			self := ""
			if it.self {
				self = " self"
			}
			r.line("mpiopen %s as %s flags %s%s", path, m, mpiFlags(it.flags), self)
			clock += int64(model.MetaLatency)
		case iMPIView:
			rep(it.n, func() { r.line("view %s", m) })
			clock += it.n * int64(model.MetaLatency)
		case iMPISync:
			rep(it.n, func() { r.line("sync %s", m) })
			clock += it.n * int64(model.MetaLatency)
		case iMPIClose:
			r.line("close %s", m)
			clock += int64(model.MetaLatency)
		}
	}
	return body{text: r.b.String(), holes: r.holes}
}

var digits = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[0-9]+`) })

// rankName writes file for rank's block: "$rank" in place of the last
// number in it equal to the rank, if group says to.
func rankName(file string, rank int) (string, bool) {
	locs := digits().FindAllStringIndex(file, -1)
	want := strconv.Itoa(rank)
	for i := len(locs) - 1; i >= 0; i-- {
		l := locs[i]
		if file[l[0]:l[1]] == want {
			t := file[:l[0]] + "${rank}" + file[l[1]:]
			return t, true
		}
	}
	return file, false
}

// expr writes hole k of a group of ranks: a constant, a + b·rank, or an
// element of a list.
func holeExpr(vals []int64, ranks []int, dur bool, lists *[]string, nprocs int) string {
	lit := func(v int64) string {
		if dur {
			return script.FormatDuration(v)
		}
		return size(v)
	}
	same := true
	for _, v := range vals {
		if v != vals[0] {
			same = false
		}
	}
	if same {
		return lit(vals[0])
	}
	// affine in rank?
	if len(ranks) >= 2 && ranks[1] != ranks[0] {
		d := ranks[1] - ranks[0]
		if (vals[1]-vals[0])%int64(d) == 0 {
			b := (vals[1] - vals[0]) / int64(d)
			a := vals[0] - b*int64(ranks[0])
			ok := true
			for i, r := range ranks {
				if a+b*int64(r) != vals[i] {
					ok = false
					break
				}
			}
			if ok && a >= 0 && b > 0 {
				bs := size(b)
				if dur {
					bs = script.FormatDuration(b)
				}
				if a == 0 {
					return fmt.Sprintf("rank * %s", bs)
				}
				return fmt.Sprintf("%s + rank * %s", lit(a), bs)
			}
		}
	}
	// a list over the group's ranks, indexed by rank
	name := fmt.Sprintf("v%d", len(*lists))
	full := make([]string, nprocs)
	for i := range full {
		full[i] = "0"
	}
	for i, r := range ranks {
		full[r] = strconv.FormatInt(vals[i], 10)
	}
	*lists = append(*lists, fmt.Sprintf("let %s = [%s]", name, strings.Join(full, ", ")))
	if dur {
		return fmt.Sprintf("%s[rank] * 1ns", name)
	}
	return fmt.Sprintf("%s[rank]", name)
}

// rankCond writes the condition that selects ranks.
func rankCond(ranks []int, nprocs int) string {
	if len(ranks) == nprocs {
		return ""
	}
	// runs of consecutive ranks
	var parts []string
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, fmt.Sprintf("rank == %d", ranks[i]))
		} else {
			parts = append(parts, fmt.Sprintf("rank >= %d && rank <= %d", ranks[i], ranks[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, " || ")
}

// render writes the ranks' blocks: ranks with the same template share one.
func (p *plan) render() string {
	n := p.log.NProcs
	type group struct {
		tmpl  string
		ranks []int
		holes [][]hole
	}
	var groups []*group
	byTmpl := map[string]*group{}
	for rank := range n {
		if len(p.ranks[rank]) == 0 {
			continue
		}
		// try the rank's files with ${rank}; fall back to the names as they are
		names := make([]string, len(p.files))
		for i, f := range p.files {
			if t, ok := rankName(f, rank); ok {
				names[i] = quote(strings.Replace(t, "${rank}", "\x01", 1))
				names[i] = strings.Replace(names[i], "\x01", "${rank}", 1)
			} else {
				names[i] = quote(f)
			}
		}
		b := p.renderRank(rank, names)
		// a name with ${rank} that is not the same for another rank is
		// only worth it if a group forms; grouping does that
		g := byTmpl[b.text]
		if g == nil {
			// the same body with plain names, for ranks that share nothing
			g = &group{tmpl: b.text}
			byTmpl[b.text] = g
			groups = append(groups, g)
		}
		g.ranks = append(g.ranks, rank)
		g.holes = append(g.holes, b.holes)
	}
	var out strings.Builder
	for _, g := range groups {
		text := g.tmpl
		if len(g.ranks) == 1 {
			// a block of one rank names its files as they are
			names := make([]string, len(p.files))
			for i, f := range p.files {
				names[i] = quote(f)
			}
			b := p.renderRank(g.ranks[0], names)
			text = b.text
			g.holes = [][]hole{b.holes}
		}
		var lists []string
		parts := strings.Split(text, holeMark)
		var b strings.Builder
		for k, part := range parts {
			b.WriteString(part)
			if k == len(parts)-1 {
				break
			}
			vals := make([]int64, len(g.ranks))
			for i := range g.ranks {
				vals[i] = g.holes[i][k].v
			}
			b.WriteString(holeExpr(vals, g.ranks, g.holes[0][k].dur, &lists, n))
		}
		cond := rankCond(g.ranks, n)
		if cond == "" {
			for _, l := range lists {
				out.WriteString(l + "\n")
			}
			// unindent the body
			for _, l := range strings.SplitAfter(b.String(), "\n") {
				out.WriteString(strings.TrimPrefix(l, "    "))
			}
			continue
		}
		fmt.Fprintf(&out, "\nif %s {\n", cond)
		for _, l := range lists {
			out.WriteString("    " + l + "\n")
		}
		out.WriteString(b.String())
		out.WriteString("}\n")
	}
	return out.String()
}

// ranksOf lists the ranks of a plan that have items.
func (p *plan) ranksWithItems() []int {
	var out []int
	for r, its := range p.ranks {
		if len(its) > 0 {
			out = append(out, r)
		}
	}
	return slices.Clip(out)
}
