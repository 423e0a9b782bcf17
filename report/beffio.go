package report

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The b_eff_io value (Rabenseifner and Koniges, "Effective File-I/O
// Bandwidth Benchmark", and samples/beffio.iop), computed from the regions
// of a trace — a replay of the sample recorded with ioreplay --record, or
// the sample expanded with its nominal times:
//
//   - the bandwidth of a pattern type is the bytes it moved over the time
//     from opening its file to closing it: the region
//     "b_eff_io METHOD type N" (N = 0 … 4), whose time is that of the rank
//     that spent the most in it;
//   - the value of an access method (METHOD = "first write", "rewrite",
//     "read") is the average over its pattern types, type 0 (scattering)
//     counted twice;
//   - the value of the partition is 25 % first write + 25 % rewrite +
//     50 % read.
//
// Regions "b_eff_io METHOD type N pattern P" give the bandwidth of each
// pattern of Table 2 (P = 0 … 42); they are details and weigh in no value.

// BeffIO is the b_eff_io value of a trace and its parts. Bandwidths are in
// MB/s, MB = 10⁶ bytes, as everywhere in iotrace.
type BeffIO struct {
	Methods []BeffMethod // the access methods found, in the order first write, rewrite, read
	Value   float64      // the partition's value; 0 unless every access method has every type
	Missing []string     // regions the definition needs that the trace lacks ("rewrite type 3")
}

// BeffMethod is one access method.
type BeffMethod struct {
	Name      string  // "first write", "rewrite" or "read"
	Weight    float64 // its weight in the partition's value: 0.25, 0.25, 0.5
	Types     []BeffType
	Bandwidth float64 // the weighted average of the types found
}

// BeffType is one pattern type of one access method.
type BeffType struct {
	Type     int
	Weight   int   // 2 for type 0, 1 for the others
	Bytes    int64 // data bytes of all ranks, from open to close
	Time     int64 // ns from open to close, on the rank that spent the most
	Patterns []BeffPattern
}

// Bandwidth is Bytes over Time, in MB/s (0 without time).
func (t BeffType) Bandwidth() float64 { return mbs(t.Bytes, t.Time) }

// BeffPattern is one pattern (a row of Table 2) within a type.
type BeffPattern struct {
	Pattern int
	Bytes   int64
	Time    int64
}

// Bandwidth is Bytes over Time, in MB/s (0 without time).
func (p BeffPattern) Bandwidth() float64 { return mbs(p.Bytes, p.Time) }

func mbs(bytes, ns int64) float64 {
	if ns <= 0 {
		return 0
	}
	return float64(bytes) / 1e6 / (float64(ns) / 1e9)
}

// beffMethods are the access methods and their weights in the partition's
// value.
var beffMethods = []struct {
	name   string
	weight float64
}{{"first write", 0.25}, {"rewrite", 0.25}, {"read", 0.5}}

// BeffTypes is the number of b_eff_io pattern types (0 … 4).
const BeffTypes = 5

var beffLabel = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^b_eff_io (first write|rewrite|read) type ([0-9]+)(?: pattern ([0-9]+))?$`)
})

// ErrNoBeffIO is the error of BeffIO on a trace without b_eff_io regions.
var ErrNoBeffIO = errors.New(`no b_eff_io regions in this trace (regions labelled "b_eff_io first write type 0" and so on, as samples/beffio.iop makes)`)

// BeffIO computes the b_eff_io value from the regions of s.
func (s *Stats) BeffIO() (*BeffIO, error) {
	type key struct {
		method string
		typ    int
	}
	types := map[key]*BeffType{}
	patterns := map[key][]BeffPattern{}
	for _, r := range s.Regions {
		m := beffLabel().FindStringSubmatch(r.Label)
		if m == nil {
			continue
		}
		t, err := strconv.Atoi(m[2])
		if err != nil || t >= BeffTypes {
			return nil, fmt.Errorf("region %q: b_eff_io has pattern types 0 to %d", r.Label, BeffTypes-1)
		}
		k := key{m[1], t}
		bytes := dataBytes(r.Ops, 0)
		if m[3] == "" {
			types[k] = &BeffType{Type: t, Weight: 1 + b2i(t == 0), Bytes: bytes, Time: r.Wall}
			continue
		}
		p, err := strconv.Atoi(m[3])
		if err != nil {
			return nil, fmt.Errorf("region %q: bad pattern number", r.Label)
		}
		patterns[k] = append(patterns[k], BeffPattern{Pattern: p, Bytes: bytes, Time: r.Wall})
	}
	if len(types) == 0 {
		return nil, ErrNoBeffIO
	}
	out := &BeffIO{}
	complete := true
	for _, bm := range beffMethods {
		meth := BeffMethod{Name: bm.name, Weight: bm.weight}
		var sum float64
		var weights int
		for t := 0; t < BeffTypes; t++ {
			bt := types[key{bm.name, t}]
			if bt == nil {
				out.Missing = append(out.Missing, fmt.Sprintf("%s type %d", bm.name, t))
				complete = false
				continue
			}
			bt.Patterns = patterns[key{bm.name, t}]
			slices.SortFunc(bt.Patterns, func(a, b BeffPattern) int { return a.Pattern - b.Pattern })
			sum += float64(bt.Weight) * bt.Bandwidth()
			weights += bt.Weight
			meth.Types = append(meth.Types, *bt)
		}
		if len(meth.Types) == 0 {
			continue
		}
		meth.Bandwidth = sum / float64(weights)
		out.Value += meth.Weight * meth.Bandwidth
		out.Methods = append(out.Methods, meth)
	}
	if !complete {
		out.Value = 0
	}
	return out, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

var beffTypeNames = [BeffTypes]string{
	"0 scatter, collective", "1 shared pointer, collective", "2 file per process",
	"3 segmented", "4 segmented, collective",
}

var beffColumns = []column{
	lcol("access method", "method"), lcol("pattern type", "type"), rcol("pattern", "pattern"),
	rcol("bytes", "bytes"), rcol("time", "seconds"), rcol("MB/s", "bandwidth_mb_s"), rcol("weight", "weight"),
}

// beffTable is the b_eff_io view: a row per access method and pattern
// type (with detail, a row per pattern under each type), the average of
// each access method, and the value.
func (s *Stats) beffTable(detail bool) table {
	t := table{cols: beffColumns}
	b, err := s.BeffIO()
	if err != nil {
		t.notes = append(t.notes, err.Error())
		return t
	}
	for _, m := range b.Methods {
		for _, ty := range m.Types {
			t.rows = append(t.rows, []cell{str(m.Name), str(beffTypeNames[ty.Type]), {"", ""}, bytesCell(ty.Bytes),
				nsCell(ty.Time), mbsCell(ty.Bandwidth()), num(int64(ty.Weight))})
			if detail {
				for _, p := range ty.Patterns {
					t.rows = append(t.rows, []cell{str(m.Name), {"", strconv.Itoa(ty.Type)}, num(int64(p.Pattern)),
						bytesCell(p.Bytes), nsCell(p.Time), mbsCell(p.Bandwidth()), {"", ""}})
				}
			}
		}
		t.rows = append(t.rows, []cell{str(m.Name), {"average", "average"}, {"", ""}, {"", ""}, {"", ""},
			mbsCell(m.Bandwidth), {fmt.Sprintf("%g %%", m.Weight*100), strconv.FormatFloat(m.Weight, 'g', -1, 64)}})
	}
	value := mbsCell(b.Value)
	t.rows = append(t.rows, []cell{str("b_eff_io"), {"", ""}, {"", ""}, {"", ""}, {"", ""}, value, {"", ""}})
	t.notes = append(t.notes,
		"Pattern type: bytes over the time from opening its file to closing it, on the slowest rank (MB = 10^6 B).",
		"Access method: average over the pattern types, type 0 counted twice. b_eff_io = 25 % first write + 25 % rewrite + 50 % read.")
	if len(b.Missing) > 0 {
		t.notes = append(t.notes, fmt.Sprintf("No b_eff_io value: the trace lacks %s.", joinMax(b.Missing, 6)))
	}
	return t
}

func joinMax(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(s[:n], ", "), len(s)-n)
}

// JSON of the b_eff_io view.

type jsonBeffPattern struct {
	Pattern   int     `json:"pattern"`
	Bytes     int64   `json:"bytes"`
	Seconds   float64 `json:"seconds"`
	Bandwidth float64 `json:"bandwidth_mb_s"`
}

type jsonBeffType struct {
	Type      int               `json:"type"`
	Weight    int               `json:"weight"`
	Bytes     int64             `json:"bytes"`
	Seconds   float64           `json:"seconds"`
	Bandwidth float64           `json:"bandwidth_mb_s"`
	Patterns  []jsonBeffPattern `json:"patterns"`
}

type jsonBeffMethod struct {
	Method    string         `json:"method"`
	Weight    float64        `json:"weight"`
	Bandwidth float64        `json:"bandwidth_mb_s"`
	Types     []jsonBeffType `json:"types"`
}

type jsonBeff struct {
	Value   float64          `json:"value_mb_s"`
	Methods []jsonBeffMethod `json:"methods"`
	Missing []string         `json:"missing"`
	Error   string           `json:"error,omitempty"`
}

func beffJSON(s *Stats) *jsonBeff {
	b, err := s.BeffIO()
	if err != nil {
		return &jsonBeff{Methods: []jsonBeffMethod{}, Missing: []string{}, Error: err.Error()}
	}
	out := &jsonBeff{Value: b.Value, Methods: []jsonBeffMethod{}, Missing: append([]string{}, b.Missing...)}
	for _, m := range b.Methods {
		jm := jsonBeffMethod{Method: m.Name, Weight: m.Weight, Bandwidth: m.Bandwidth, Types: []jsonBeffType{}}
		for _, t := range m.Types {
			jt := jsonBeffType{Type: t.Type, Weight: t.Weight, Bytes: t.Bytes, Seconds: float64(t.Time) / 1e9,
				Bandwidth: t.Bandwidth(), Patterns: []jsonBeffPattern{}}
			for _, p := range t.Patterns {
				jt.Patterns = append(jt.Patterns, jsonBeffPattern{Pattern: p.Pattern, Bytes: p.Bytes,
					Seconds: float64(p.Time) / 1e9, Bandwidth: p.Bandwidth()})
			}
			jm.Types = append(jm.Types, jt)
		}
		out.Methods = append(out.Methods, jm)
	}
	return out
}
