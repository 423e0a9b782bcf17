package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/trace"
)

// Views and formats Render knows.
var (
	Views   = []string{"op", "size", "rank", "file", "region"}
	Formats = []string{"text", "csv", "json", "markdown"}
)

// table is a rendered view: a title, column headers, and rows of cells
// (each cell a human string and a raw value for CSV).
type table struct {
	title  string
	header []string
	right  []bool // right-align column
	rows   [][]cell
	notes  []string
}

type cell struct {
	human string
	raw   string
}

func str(s string) cell { return cell{s, s} }

func num(n int64) cell { s := strconv.FormatInt(n, 10); return cell{s, s} }

func dur(ns int64) cell {
	return cell{HumanDuration(ns), strconv.FormatFloat(float64(ns)/1e9, 'g', 9, 64)}
}

func secs(s float64) cell {
	return cell{HumanDuration(int64(s * 1e9)), strconv.FormatFloat(s, 'g', 9, 64)}
}

func bytesCell(n int64) cell { return cell{HumanBytes(n), strconv.FormatInt(n, 10)} }

func mbs(v float64) cell {
	if v == 0 {
		return cell{"-", "0"}
	}
	return cell{strconv.FormatFloat(v, 'f', 2, 64), strconv.FormatFloat(v, 'g', 9, 64)}
}

// HumanDuration prints ns as "812ns", "4.21µs", "3.5ms", "12.3s".
func HumanDuration(ns int64) string {
	f := float64(ns)
	switch {
	case ns == 0:
		return "0"
	case ns < 1000:
		return fmt.Sprintf("%dns", ns)
	case ns < 1e6:
		return trim(f/1e3) + "µs"
	case ns < 1e9:
		return trim(f/1e6) + "ms"
	}
	return trim(f/1e9) + "s"
}

// HumanBytes prints a byte count with binary units: "512 KiB", "1.5 MiB".
func HumanBytes(n int64) string {
	const k = 1024
	f := float64(n)
	switch {
	case n < k:
		return fmt.Sprintf("%d B", n)
	case n < k*k:
		return trim(f/k) + " KiB"
	case n < k*k*k:
		return trim(f/(k*k)) + " MiB"
	case n < k*k*k*k:
		return trim(f/(k*k*k)) + " GiB"
	}
	return trim(f/(k*k*k*k)) + " TiB"
}

func trim(f float64) string {
	s := strconv.FormatFloat(f, 'f', 3, 64)
	if len(s) > 5 {
		s = strconv.FormatFloat(f, 'f', max(0, 4-strings.Index(s, ".")), 64)
	}
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

func sizeCell(r SizeRow) cell {
	if r.Exact() {
		return cell{HumanBytes(r.Min), strconv.FormatInt(r.Min, 10)}
	}
	return cell{HumanBytes(r.Min) + " – " + HumanBytes(r.Max), strconv.FormatInt(r.Min, 10) + "-" + strconv.FormatInt(r.Max, 10)}
}

func opTable(title string, rows []*OpRow) table {
	t := table{
		title:  title,
		header: []string{"operation", "count", "total time", "time/rank", "bytes", "MB/s", "p50", "p99", "max", "errors"},
		right:  []bool{false, true, true, true, true, true, true, true, true, true},
	}
	add := func(r *OpRow) {
		t.rows = append(t.rows, []cell{str(r.Op), num(r.Count), dur(r.Total), secs(r.AvgPerRank()), bytesCell(r.Bytes),
			mbs(r.Bandwidth()), dur(r.Lat.Quantile(0.5)), dur(r.Lat.Quantile(0.99)), dur(r.Lat.Max()), num(r.Errors)})
	}
	for _, r := range rows {
		add(r)
	}
	if len(rows) > 1 {
		add(Total(rows))
	}
	return t
}

func (s *Stats) tables(view string) ([]table, error) {
	switch view {
	case "op", "":
		t := opTable("", s.Ops)
		return []table{t}, nil
	case "size":
		t := table{title: "", header: []string{"operation", "size", "count"}, right: []bool{false, true, true}}
		for _, r := range s.Sizes {
			t.rows = append(t.rows, []cell{str(r.Op), sizeCell(r), num(r.Count)})
		}
		t.notes = append(t.notes, fmt.Sprintf("Exact sizes where an operation has at most %d distinct sizes, power-of-two buckets otherwise.", maxExactSizes))
		return []table{t}, nil
	case "rank":
		h := []string{"rank", "events"}
		h = append(h, rankGroups...)
		h = append(h, "I/O time", "bytes", "")
		t := table{header: h, right: []bool{true, true, true, true, true, true, true, true, true, true, true, true, false}}
		for _, r := range s.ByRank {
			row := []cell{num(int64(r.Rank)), num(r.Events)}
			for _, v := range r.Time {
				row = append(row, dur(v))
			}
			flag := ""
			if r.Straggler {
				flag = "straggler"
			}
			row = append(row, dur(r.IOTime()), bytesCell(r.Bytes), str(flag))
			t.rows = append(t.rows, row)
		}
		if len(s.Straggle) > 0 {
			t.notes = append(t.notes, fmt.Sprintf("Stragglers (I/O time > %.1f × median and > median + %d × MAD): %s", stragglerFactor, stragglerMADs, rankList(s.Straggle)))
		} else {
			t.notes = append(t.notes, "No stragglers (I/O time > 1.5 × median and > median + 3 × MAD).")
		}
		return []table{t}, nil
	case "file":
		t := table{header: []string{"file", "ranks", "opens", "reads", "read bytes", "writes", "write bytes", "other", "time"},
			right: []bool{false, true, true, true, true, true, true, true, true}}
		for _, f := range s.Files {
			t.rows = append(t.rows, []cell{str(f.Path), num(int64(f.RankCount)), num(f.Opens), num(f.Reads), bytesCell(f.ReadBytes),
				num(f.Writes), bytesCell(f.WriteBytes), num(f.Other), dur(f.Time)})
		}
		return []table{t}, nil
	case "region":
		var ts []table
		for _, reg := range s.Regions {
			occ := "occurrences"
			if reg.Count == 1 {
				occ = "occurrence"
			}
			t := opTable(fmt.Sprintf("region %q: %d %s, %s per rank", reg.Label, reg.Count, occ, HumanDuration(int64(reg.AvgPerRank()*1e9))), reg.Ops)
			ts = append(ts, t)
		}
		if len(ts) == 0 {
			ts = append(ts, table{title: "no labelled regions in this trace"})
		}
		return ts, nil
	}
	return nil, fmt.Errorf("unknown view %q (want %s)", view, strings.Join(Views, ", "))
}

func rankList(rs []uint32) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, strconv.FormatUint(uint64(r), 10))
	}
	return strings.Join(parts, " ")
}

// Render writes view ("op", "size", "rank", "file", "region") of s in
// format ("text", "csv", "json", "markdown").
func Render(w io.Writer, s *Stats, view, format string) error {
	if format == "json" {
		return renderJSON(w, s, view)
	}
	ts, err := s.tables(view)
	if err != nil {
		return err
	}
	switch format {
	case "text", "":
		fmt.Fprintf(w, "%d ranks, %d events, %s\n", s.Ranks, s.Events, HumanDuration(s.End-s.Start))
		for _, t := range ts {
			fmt.Fprintln(w)
			writeText(w, t)
		}
		return nil
	case "markdown":
		fmt.Fprintf(w, "%d ranks, %d events, %s\n", s.Ranks, s.Events, HumanDuration(s.End-s.Start))
		for _, t := range ts {
			fmt.Fprintln(w)
			writeMarkdown(w, t)
		}
		return nil
	case "csv":
		cw := csv.NewWriter(w)
		for i, t := range ts {
			h := t.header
			if view == "region" {
				h = append([]string{"region"}, h...)
			}
			if i == 0 {
				cw.Write(h)
			}
			for _, r := range t.rows {
				var rec []string
				if view == "region" {
					rec = append(rec, s.Regions[i].Label)
				}
				for _, c := range r {
					rec = append(rec, c.raw)
				}
				cw.Write(rec)
			}
		}
		cw.Flush()
		return cw.Error()
	}
	return fmt.Errorf("unknown format %q (want %s)", format, strings.Join(Formats, ", "))
}

func writeText(w io.Writer, t table) {
	if t.title != "" {
		fmt.Fprintln(w, t.title)
	}
	if len(t.header) > 0 {
		width := make([]int, len(t.header))
		for i, h := range t.header {
			width[i] = len([]rune(h))
		}
		for _, r := range t.rows {
			for i, c := range r {
				width[i] = max(width[i], len([]rune(c.human)))
			}
		}
		line := func(cells []string) {
			var b strings.Builder
			for i, c := range cells {
				pad := strings.Repeat(" ", width[i]-len([]rune(c)))
				if i > 0 {
					b.WriteString("  ")
				}
				if t.right[i] {
					b.WriteString(pad + c)
				} else {
					b.WriteString(c + pad)
				}
			}
			fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		}
		line(t.header)
		for _, r := range t.rows {
			cells := make([]string, len(r))
			for i, c := range r {
				cells[i] = c.human
			}
			line(cells)
		}
	}
	for _, n := range t.notes {
		fmt.Fprintln(w, n)
	}
}

func writeMarkdown(w io.Writer, t table) {
	if t.title != "" {
		fmt.Fprintf(w, "**%s**\n\n", t.title)
	}
	if len(t.header) > 0 {
		fmt.Fprintf(w, "| %s |\n|", strings.Join(t.header, " | "))
		for i := range t.header {
			if t.right[i] {
				fmt.Fprint(w, "---:|")
			} else {
				fmt.Fprint(w, "---|")
			}
		}
		fmt.Fprintln(w)
		for _, r := range t.rows {
			cells := make([]string, len(r))
			for i, c := range r {
				cells[i] = strings.ReplaceAll(c.human, "|", `\|`)
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		}
	}
	for _, n := range t.notes {
		fmt.Fprintf(w, "\n%s\n", n)
	}
}

// JSON shapes; the field names are stable (report/JSON.md).
type jsonOp struct {
	Op         string  `json:"op"`
	Class      string  `json:"class"`
	Count      int64   `json:"count"`
	Bytes      int64   `json:"bytes"`
	Errors     int64   `json:"errors"`
	Total      float64 `json:"total_seconds"`
	AvgPerRank float64 `json:"avg_seconds_per_rank"`
	Bandwidth  float64 `json:"bandwidth_mb_s"`
	P50        float64 `json:"p50_seconds"`
	P99        float64 `json:"p99_seconds"`
	Max        float64 `json:"max_seconds"`
}

type jsonSize struct {
	Op      string `json:"op"`
	Size    *int64 `json:"size,omitempty"`
	SizeMin *int64 `json:"size_min,omitempty"`
	SizeMax *int64 `json:"size_max,omitempty"`
	Count   int64  `json:"count"`
}

type jsonRank struct {
	Rank      uint32             `json:"rank"`
	Events    int64              `json:"events"`
	Seconds   map[string]float64 `json:"seconds"`
	IOSeconds float64            `json:"io_seconds"`
	Bytes     int64              `json:"bytes"`
	Straggler bool               `json:"straggler"`
}

type jsonFile struct {
	Path       string  `json:"path"`
	Ranks      int     `json:"ranks"`
	Opens      int64   `json:"opens"`
	Reads      int64   `json:"reads"`
	ReadBytes  int64   `json:"read_bytes"`
	Writes     int64   `json:"writes"`
	WriteBytes int64   `json:"write_bytes"`
	Other      int64   `json:"other"`
	Seconds    float64 `json:"seconds"`
}

type jsonRegion struct {
	Label       string   `json:"label"`
	Count       int64    `json:"count"`
	SecondsRank float64  `json:"avg_seconds_per_rank"`
	Ops         []jsonOp `json:"ops"`
}

type jsonStats struct {
	Ranks      int          `json:"ranks"`
	Events     int64        `json:"events"`
	Duration   float64      `json:"duration_seconds"`
	Ops        []jsonOp     `json:"ops"`
	Sizes      []jsonSize   `json:"sizes"`
	ByRank     []jsonRank   `json:"by_rank,omitempty"`
	Stragglers []uint32     `json:"stragglers,omitempty"`
	Files      []jsonFile   `json:"files,omitempty"`
	Regions    []jsonRegion `json:"regions,omitempty"`
}

func jsonOps(rows []*OpRow) []jsonOp {
	out := []jsonOp{}
	for _, r := range rows {
		out = append(out, jsonOp{Op: r.Op, Class: r.Class.String(), Count: r.Count, Bytes: r.Bytes, Errors: r.Errors,
			Total: float64(r.Total) / 1e9, AvgPerRank: r.AvgPerRank(), Bandwidth: r.Bandwidth(),
			P50: float64(r.Lat.Quantile(0.5)) / 1e9, P99: float64(r.Lat.Quantile(0.99)) / 1e9, Max: float64(r.Lat.Max()) / 1e9})
	}
	return out
}

func renderJSON(w io.Writer, s *Stats, view string) error {
	if !validView(view) {
		return fmt.Errorf("unknown view %q (want %s)", view, strings.Join(Views, ", "))
	}
	js := jsonStats{Ranks: s.Ranks, Events: s.Events, Duration: s.Duration(), Ops: jsonOps(s.Ops), Sizes: []jsonSize{}}
	for _, r := range s.Sizes {
		r := r
		if r.Exact() {
			js.Sizes = append(js.Sizes, jsonSize{Op: r.Op, Size: &r.Min, Count: r.Count})
		} else {
			js.Sizes = append(js.Sizes, jsonSize{Op: r.Op, SizeMin: &r.Min, SizeMax: &r.Max, Count: r.Count})
		}
	}
	switch view {
	case "rank":
		for _, r := range s.ByRank {
			jr := jsonRank{Rank: r.Rank, Events: r.Events, Seconds: map[string]float64{}, IOSeconds: float64(r.IOTime()) / 1e9, Bytes: r.Bytes, Straggler: r.Straggler}
			for i, g := range rankGroups {
				jr.Seconds[g] = float64(r.Time[i]) / 1e9
			}
			js.ByRank = append(js.ByRank, jr)
		}
		js.Stragglers = s.Straggle
	case "file":
		for _, f := range s.Files {
			js.Files = append(js.Files, jsonFile{Path: f.Path, Ranks: f.RankCount, Opens: f.Opens, Reads: f.Reads, ReadBytes: f.ReadBytes,
				Writes: f.Writes, WriteBytes: f.WriteBytes, Other: f.Other, Seconds: float64(f.Time) / 1e9})
		}
	case "region":
		for _, reg := range s.Regions {
			js.Regions = append(js.Regions, jsonRegion{Label: reg.Label, Count: reg.Count, SecondsRank: reg.AvgPerRank(), Ops: jsonOps(reg.Ops)})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(js)
}

func validView(v string) bool {
	for _, x := range Views {
		if v == x {
			return true
		}
	}
	return v == ""
}

var _ = trace.ClassPOSIX
