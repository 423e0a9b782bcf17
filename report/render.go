package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/trace/units"
)

// Views and formats Render knows.
var (
	Views   = []string{"op", "size", "rank", "file", "access", "region", "beffio"}
	Formats = []string{"text", "csv", "json", "markdown"}
)

// Render writes view ("op", "size", "rank", "file", "access", "region",
// "beffio"; "" is "op") of s in format ("text", "csv", "json", "markdown"; "" is
// "text"). Text and Markdown start with a line "N ranks, M events,
// duration"; CSV has one header row and raw numbers (seconds, bytes);
// JSON is described in docs/FORMAT.md, "Reports".
func Render(w io.Writer, s *Stats, view, format string) error {
	if view == "" {
		view = "op"
	}
	if !slices.Contains(Views, view) {
		return fmt.Errorf("unknown view %q (want one of %s)", view, strings.Join(Views, ", "))
	}
	if format == "json" {
		return writeJSON(w, statsJSON(s, view))
	}
	head := fmt.Sprintf("%d ranks, %s, %s", s.Ranks, s.EventsText(strconv.FormatInt), units.Duration(s.RunTime()))
	if s.Times != "" {
		head += "\n" + s.Times
	}
	ts := s.tables(view)
	if view == "file" {
		if format == "csv" {
			ts = ts[:1] // one header row: --by access has the access patterns
		} else {
			ts = append(ts, s.accessTables()...)
		}
	}
	if err := writeTables(w, ts, head, format); err != nil {
		return err
	}
	if s.Replay != nil && (format == "text" || format == "markdown" || format == "") {
		// How the replay went, when the trace is a replay's.
		fmt.Fprintln(w)
		s.Replay.WriteText(w)
	}
	return nil
}

// EventsText says how many events s holds ("7898 events") and, when the
// TOTAL line does not count them all, what the others are: "7898 events:
// 7818 calls in TOTAL, 80 markers". num formats the numbers.
func (s *Stats) EventsText(num func(int64, int) string) string {
	n := func(v int64) string { return num(v, 10) }
	text := n(s.Events) + " " + plural(s.Events, "event")
	if s.Total == nil || s.Total.Count == s.Events {
		return text
	}
	parts := []string{n(s.Total.Count) + " " + plural(s.Total.Count, "call") + " in TOTAL"}
	for _, p := range []struct {
		v         int64
		one, many string
	}{{s.Markers, "marker", "markers"}, {s.ProcEvents, "process event", "process events"},
		{s.InMPIIO, "call inside MPI-IO (rows apart)", "calls inside MPI-IO (rows apart)"}} {
		switch {
		case p.v == 1:
			parts = append(parts, "1 "+p.one)
		case p.v > 1:
			parts = append(parts, n(p.v)+" "+p.many)
		}
	}
	return text + " (" + strings.Join(parts, ", ") + ")"
}

// writeTables writes tables in a text-like format, head first.
func writeTables(w io.Writer, ts []table, head, format string) error {
	switch format {
	case "text", "":
		fmt.Fprintln(w, head)
		for _, t := range ts {
			fmt.Fprintln(w)
			writeText(w, t)
		}
	case "markdown":
		fmt.Fprintln(w, head)
		for _, t := range ts {
			fmt.Fprintln(w)
			writeMarkdown(w, t)
		}
	case "csv":
		return writeCSV(w, ts)
	default:
		return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
	}
	return nil
}

// table is a view ready to print: columns, rows of cells, a title and
// notes. Several tables of one view share their columns; their group
// (a region label) becomes the first CSV column when it is set.
type table struct {
	title  string
	group  string // CSV: value of the groupCol column
	cols   []column
	rows   [][]cell
	notes  []string
	header string // CSV name of the group column, "" for none
}

type column struct {
	head  string // header in text and Markdown
	key   string // header in CSV
	right bool   // right-aligned
	only  string // "text" or "csv" for a column of one kind of format
}

func lcol(head, key string) column { return column{head: head, key: key} }

func rcol(head, key string) column { return column{head: head, key: key, right: true} }

// shown reports whether c is printed in text and Markdown.
func (c column) shown() bool { return c.only != "csv" }

// cell is a value as people read it (text, Markdown) and as programs do (CSV).
type cell struct{ human, raw string }

func str(s string) cell { return cell{s, s} }

func num(n int64) cell { s := strconv.FormatInt(n, 10); return cell{s, s} }

func nsCell(ns int64) cell { return cell{units.Duration(ns), seconds(float64(ns) / 1e9)} }

func secCell(s float64) cell { return cell{units.Duration(int64(s * 1e9)), seconds(s)} }

func seconds(s float64) string { return strconv.FormatFloat(s, 'g', 9, 64) }

func bytesCell(n int64) cell { return cell{units.Bytes(n), strconv.FormatInt(n, 10)} }

func mbsCell(v float64) cell {
	raw := strconv.FormatFloat(v, 'g', 9, 64)
	if v == 0 {
		return cell{"-", raw}
	}
	return cell{strconv.FormatFloat(v, 'f', 2, 64), raw}
}

func ratioCell(r float64, ok bool) cell {
	if !ok {
		return cell{"-", ""}
	}
	return cell{strconv.FormatFloat(r, 'f', 2, 64), strconv.FormatFloat(r, 'g', 9, 64)}
}

var opColumns = []column{
	lcol("operation", "op"), rcol("count", "count"), rcol("total time", "total_seconds"),
	rcol("time/rank", "avg_seconds_per_rank"), rcol("bytes", "bytes"), rcol("MB/s", "bandwidth_mb_s"),
	rcol("min", "min_seconds"), rcol("p50", "p50_seconds"), rcol("p99", "p99_seconds"),
	rcol("max", "max_seconds"), rcol("errors", "errors"),
}

func opCells(r *OpRow) []cell {
	return []cell{str(r.Op), num(r.Count), nsCell(r.Total), secCell(r.AvgPerRank()), bytesCell(r.Bytes),
		mbsCell(r.Bandwidth()), nsCell(r.Lat.Min()), nsCell(r.Lat.Quantile(0.5)), nsCell(r.Lat.Quantile(0.99)),
		nsCell(r.Lat.Max()), num(r.Errors)}
}

// opTable is the per-operation table of rows, with a TOTAL line.
func opTable(title string, rows []*OpRow, total *OpRow) table {
	t := table{title: title, cols: opColumns}
	for _, r := range rows {
		t.rows = append(t.rows, opCells(r))
	}
	if len(rows) > 0 {
		t.rows = append(t.rows, opCells(total))
	} else {
		t.notes = append(t.notes, "No calls.")
	}
	return t
}

func (s *Stats) tables(view string) []table {
	switch view {
	case "size":
		t := table{cols: []column{lcol("operation", "op"), {head: "size", right: true, only: "text"}, {key: "size_min", right: true, only: "csv"},
			{key: "size_max", right: true, only: "csv"}, rcol("count", "count")}}
		for _, r := range s.Sizes {
			human := units.Bytes(r.Min)
			if !r.Exact() {
				human = "[" + human + ", " + units.Bytes(r.Max+1) + ")"
			}
			t.rows = append(t.rows, []cell{str(r.Op), str(human), num(r.Min), num(r.Max), num(r.Count)})
		}
		t.notes = append(t.notes, fmt.Sprintf("Requested sizes: exact when an operation has at most %d distinct sizes, power-of-two buckets [2^k, 2^(k+1)) otherwise.", MaxExactSizes))
		return []table{t}
	case "rank":
		t := table{cols: []column{rcol("rank", "rank"), rcol("events", "events")}}
		for _, c := range rankColumns {
			t.cols = append(t.cols, rcol(c, strings.NewReplacer("/", "_", "-", "_").Replace(c)+"_seconds"))
		}
		t.cols = append(t.cols, rcol("I/O time", "io_seconds"), rcol("bytes", "bytes"),
			rcol("comm bytes", "comm_bytes"), lcol("", "straggler"))
		for _, r := range s.ByRank {
			row := []cell{num(int64(r.Rank)), num(r.Events)}
			for _, c := range rankColumns {
				row = append(row, nsCell(r.Time(c)))
			}
			flag := cell{"", "false"}
			if r.Straggler {
				flag = cell{"straggler", "true"}
			}
			row = append(row, nsCell(r.IOTime()), bytesCell(r.Bytes()), bytesCell(r.CommBytes()), flag)
			t.rows = append(t.rows, row)
		}
		rule := fmt.Sprintf("I/O time > %g × median and > median + %d × MAD", stragglerFactor, stragglerMADs)
		if len(s.Stragglers) > 0 {
			var rs []string
			for _, r := range s.Stragglers {
				rs = append(rs, strconv.FormatUint(uint64(r), 10))
			}
			t.notes = append(t.notes, fmt.Sprintf("Stragglers (%s): %s", rule, strings.Join(rs, " ")))
		} else {
			t.notes = append(t.notes, fmt.Sprintf("No stragglers (%s).", rule))
		}
		return []table{t}
	case "file":
		t := table{cols: []column{lcol("file", "path"), rcol("ranks", "ranks"), rcol("opens", "opens"),
			rcol("reads", "reads"), rcol("read bytes", "read_bytes"), rcol("writes", "writes"),
			rcol("write bytes", "write_bytes"), rcol("other", "other"), rcol("errors", "errors"),
			rcol("time", "seconds")}}
		for _, f := range s.Files {
			t.rows = append(t.rows, []cell{str(f.Path), num(int64(f.Ranks)), num(f.Opens()), num(f.Reads()),
				bytesCell(f.ReadBytes()), num(f.Writes()), bytesCell(f.WriteBytes()), num(f.Other()),
				num(f.Errors()), nsCell(f.Time())})
		}
		return []table{t}
	case "access":
		ts := s.accessTables()
		t := ts[0]
		t.title = ""
		t.rows = append(t.rows, ts[1].rows...)
		return []table{t}
	case "beffio":
		t := s.beffTable(s.Detail)
		t.title = "b_eff_io"
		return []table{t}
	case "region":
		var ts []table
		for _, reg := range s.Regions {
			title := fmt.Sprintf("region %q: %d %s on %d %s, %s per rank, %s on the slowest rank",
				reg.Label, reg.Count, plural(reg.Count, "occurrence"), reg.Ranks, plural(int64(reg.Ranks), "rank"),
				units.Duration(int64(reg.AvgPerRank()*1e9)), units.Duration(reg.Wall))
			t := opTable(title, reg.Ops, Sum(reg.Ops))
			t.group, t.header = reg.Label, "region"
			ts = append(ts, t)
		}
		if len(ts) == 0 {
			ts = append(ts, table{title: "No labelled regions in this trace.", cols: opColumns, header: "region"})
		}
		return ts
	}
	return []table{opTable("", s.Ops, s.Total)}
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func writeText(w io.Writer, t table) {
	if t.title != "" {
		fmt.Fprintln(w, t.title)
	}
	if len(t.rows) > 0 {
		var show []int
		width := make([]int, len(t.cols))
		for i, c := range t.cols {
			if !c.shown() {
				continue
			}
			show = append(show, i)
			width[i] = len([]rune(c.head))
			for _, r := range t.rows {
				width[i] = max(width[i], len([]rune(r[i].human)))
			}
		}
		line := func(cell func(i int) string) {
			var b strings.Builder
			for n, i := range show {
				s := cell(i)
				pad := strings.Repeat(" ", width[i]-len([]rune(s)))
				if n > 0 {
					b.WriteString("  ")
				}
				if t.cols[i].right {
					b.WriteString(pad + s)
				} else {
					b.WriteString(s + pad)
				}
			}
			fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		}
		line(func(i int) string { return t.cols[i].head })
		for _, r := range t.rows {
			line(func(i int) string { return r[i].human })
		}
	}
	for _, n := range t.notes {
		fmt.Fprintln(w, n)
	}
}

func writeMarkdown(w io.Writer, t table) {
	if t.title != "" {
		fmt.Fprintf(w, "**%s**\n\n", mdEscape(t.title))
	}
	if len(t.rows) > 0 {
		var heads, rules []string
		for _, c := range t.cols {
			if !c.shown() {
				continue
			}
			heads = append(heads, mdEscape(c.head))
			rules = append(rules, map[bool]string{false: "---", true: "--:"}[c.right])
		}
		fmt.Fprintf(w, "| %s |\n| %s |\n", strings.Join(heads, " | "), strings.Join(rules, " | "))
		for _, r := range t.rows {
			var cells []string
			for i, c := range t.cols {
				if !c.shown() {
					continue
				}
				cells = append(cells, mdEscape(r[i].human))
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		}
	}
	for _, n := range t.notes {
		fmt.Fprintf(w, "\n%s\n", mdEscape(n))
	}
}

func mdEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "|", `\|`, "*", `\*`, "`", "\\`", "<", "&lt;").Replace(s)
}

// writeCSV writes the rows of every table under one header row.
func writeCSV(w io.Writer, ts []table) error {
	cw := csv.NewWriter(w)
	for i, t := range ts {
		var rec []string
		if i == 0 {
			if t.header != "" {
				rec = append(rec, t.header)
			}
			for _, c := range t.cols {
				if c.only != "text" {
					rec = append(rec, c.key)
				}
			}
			cw.Write(rec)
		}
		for _, r := range t.rows {
			rec = rec[:0]
			if t.header != "" {
				rec = append(rec, t.group)
			}
			for j, c := range t.cols {
				if c.only != "text" {
					rec = append(rec, r[j].raw)
				}
			}
			cw.Write(rec)
		}
	}
	cw.Flush()
	return cw.Error()
}
