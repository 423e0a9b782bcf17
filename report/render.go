package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Views and formats Render knows.
var (
	Views   = []string{"op", "size", "rank", "file", "region", "beffio"}
	Formats = []string{"text", "csv", "json", "markdown"}
)

// Render writes view ("op", "size", "rank", "file", "region", "beffio";
// "" is "op") of s in format ("text", "csv", "json", "markdown"; "" is
// "text"). Text and Markdown start with a line "N ranks, M events,
// duration"; CSV has one header row and raw numbers (seconds, bytes);
// JSON is described in JSON.md.
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
	head := fmt.Sprintf("%d ranks, %d events, %s", s.Ranks, s.Events, HumanDuration(s.RunTime()))
	return writeTables(w, s.tables(view), head, format)
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

func nsCell(ns int64) cell { return cell{HumanDuration(ns), seconds(float64(ns) / 1e9)} }

func secCell(s float64) cell { return cell{HumanDuration(int64(s * 1e9)), seconds(s)} }

func seconds(s float64) string { return strconv.FormatFloat(s, 'g', 9, 64) }

func bytesCell(n int64) cell { return cell{HumanBytes(n), strconv.FormatInt(n, 10)} }

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

// HumanDuration prints ns as "812ns", "4.21µs", "3.5ms", "12.3s".
func HumanDuration(ns int64) string {
	if ns < 0 {
		// -ns overflows for the most negative int64; the magnitude as a
		// float does not, and no recursion is needed.
		return "-" + humanDuration(-float64(ns))
	}
	return humanDuration(float64(ns))
}

func humanDuration(f float64) string {
	switch {
	case f == 0:
		return "0"
	case f < 1000:
		return fmt.Sprintf("%dns", int64(f))
	case f < 1e6:
		return trim(f/1e3) + "µs"
	case f < 1e9:
		return trim(f/1e6) + "ms"
	}
	return trim(f/1e9) + "s"
}

// HumanBytes prints a byte count with binary units: "512 B", "4 KiB",
// "1.5 MiB".
func HumanBytes(n int64) string {
	if n < 0 {
		// As HumanDuration: no -n, which overflows for the most negative int64.
		return "-" + humanBytes(-float64(n))
	}
	return humanBytes(float64(n))
}

func humanBytes(f float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	u := 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", int64(f))
	}
	return trim(f) + " " + units[u]
}

// trim prints f with four significant digits at most (all of its integer
// part), without trailing zeros.
func trim(f float64) string {
	s := strconv.FormatFloat(f, 'f', 3, 64)
	if i := strings.Index(s, "."); i > 1 {
		s = strconv.FormatFloat(f, 'f', max(0, 4-i), 64)
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
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
			human := HumanBytes(r.Min)
			if !r.Exact() {
				human = "[" + human + ", " + HumanBytes(r.Max+1) + ")"
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
	case "beffio":
		t := s.beffTable(s.Detail)
		t.title = "b_eff_io"
		return []table{t}
	case "region":
		var ts []table
		for _, reg := range s.Regions {
			title := fmt.Sprintf("region %q: %d %s on %d %s, %s per rank, %s on the slowest rank",
				reg.Label, reg.Count, plural(reg.Count, "occurrence"), reg.Ranks, plural(int64(reg.Ranks), "rank"),
				HumanDuration(int64(reg.AvgPerRank()*1e9)), HumanDuration(reg.Wall))
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
