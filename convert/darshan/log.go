// Package darshan reads the text darshan-parser prints of a Darshan log
// (its counters: Darshan's default, without DXT tracing) and turns it into
// a pattern script whose expansion has the log's counters.
//
// Darshan keeps, for every file and rank (or, for a file every rank
// opened, one record of rank -1 reduced over the ranks), counters of what
// the program did: operation counts, bytes, a size histogram, the four
// most common access sizes and strides, sequential and consecutive
// accesses, opens, first and last times. No trace of the calls is left.
// Script chooses calls, offsets and order that give those counters back
// (docs/CONVERT.md, "Darshan counters"), and says in the script's header
// which counters its expansion honours exactly and which it only
// approximates: Check computes the counters of the expansion with
// trace/access, the definition of Darshan's counters iotrace uses
// everywhere, and compares them with the log's, counter by counter.
package darshan

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Log is a darshan-parser text: the job's header and the records.
type Log struct {
	Name     string // the input's name, for errors
	Version  string // "3.41"
	Exe      string
	JobID    string
	NProcs   int
	Start    int64   // the job's start, Unix seconds
	RunTime  float64 // seconds
	Records  []*Record
	Mounts   []Mount
	Warnings []string
}

// Mount is a mount entry of the header.
type Mount struct{ Point, Type string }

// Record is the counters of one module, file and rank.
type Record struct {
	Module    string // "POSIX", "MPI-IO", "STDIO", "HEATMAP", …
	Rank      int    // -1: a file every rank used (a reduced record)
	ID        uint64
	File      string
	Mount     string
	FSType    string
	Counters  map[string]int64
	FCounters map[string]float64
	Line      int // the line of its first counter
}

// C returns integer counter name (0 if the record does not have it).
func (r *Record) C(name string) int64 { return r.Counters[name] }

// F returns floating-point counter name.
func (r *Record) F(name string) float64 { return r.FCounters[name] }

// Limits on what Parse accepts, so that memory follows the input.
const (
	maxLine    = 1 << 20 // bytes in one line
	maxNProcs  = 1 << 24 // ranks
	maxRecords = 1 << 22
)

// Sniff reports whether head (the start of a file) is darshan-parser
// text of counters: Darshan's header followed by the description of its
// columns, and no DXT section (the text of darshan-dxt-parser starts with
// the same header).
func Sniff(head []byte) bool {
	if !bytes.HasPrefix(head, []byte("# darshan log version")) {
		return false
	}
	if bytes.Contains(head, []byte("# DXT, file_id: ")) || bytes.Contains(head, []byte("DXT_POSIX module data")) ||
		bytes.Contains(head, []byte("DXT_MPIIO module data")) {
		return false
	}
	return bytes.Contains(head, []byte("\n# description of columns:")) || bytes.Contains(head, []byte("\n#<module>\t<rank>")) ||
		bytes.Contains(head, []byte("\nPOSIX\t")) || bytes.Contains(head, []byte("\nMPI-IO\t"))
}

// Parse reads darshan-parser text. name labels errors: every error is one
// line "name:LINE: what".
func Parse(r io.Reader, name string) (*Log, error) {
	l := &Log{Name: name}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	type key struct {
		module string
		rank   int
		id     uint64
	}
	byKey := map[key]*Record{}
	line := 0
	sawHeader := false
	for sc.Scan() {
		line++
		s := strings.TrimRight(sc.Text(), "\r")
		if s == "" {
			continue
		}
		if s[0] == '#' {
			if strings.HasPrefix(s, "# DXT, ") || strings.HasPrefix(s, "# DXT_POSIX module data") || strings.HasPrefix(s, "# DXT_MPIIO module data") {
				return nil, fmt.Errorf("%s:%d: darshan-dxt-parser text (DXT traces), not darshan-parser's counters: convert it with --from dxt", name, line)
			}
			if line == 1 {
				v, ok := strings.CutPrefix(s, "# darshan log version: ")
				if !ok {
					return nil, fmt.Errorf("%s:1: not darshan-parser output (want \"# darshan log version: …\")", name)
				}
				l.Version = strings.TrimSpace(v)
				sawHeader = true
				continue
			}
			if err := l.header(s, line); err != nil {
				return nil, err
			}
			continue
		}
		if !sawHeader {
			return nil, fmt.Errorf("%s:%d: not darshan-parser output (no \"# darshan log version\" header)", name, line)
		}
		f := strings.Split(s, "\t")
		if len(f) != 8 {
			return nil, fmt.Errorf("%s:%d: want 8 tab-separated fields (module, rank, record id, counter, value, file, mount point, fs type), got %d", name, line, len(f))
		}
		rank, err := strconv.Atoi(f[1])
		if err != nil || rank < -1 || rank >= maxNProcs {
			return nil, fmt.Errorf("%s:%d: bad rank %q", name, line, f[1])
		}
		id, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: bad record id %q", name, line, f[2])
		}
		k := key{f[0], rank, id}
		rec := byKey[k]
		if rec == nil {
			if len(l.Records) >= maxRecords {
				return nil, fmt.Errorf("%s:%d: more than %d records", name, line, maxRecords)
			}
			rec = &Record{Module: f[0], Rank: rank, ID: id, File: f[5], Mount: f[6], FSType: f[7],
				Counters: map[string]int64{}, FCounters: map[string]float64{}, Line: line}
			byKey[k] = rec
			l.Records = append(l.Records, rec)
		} else if rec.File != f[5] {
			return nil, fmt.Errorf("%s:%d: record %s of rank %d names file %q, earlier %q", name, line, f[2], rank, f[5], rec.File)
		}
		counter, val := f[3], f[4]
		if counter == "" {
			return nil, fmt.Errorf("%s:%d: empty counter name", name, line)
		}
		if strings.Contains(counter, "_F_") {
			v, err := strconv.ParseFloat(val, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s:%d: %s: bad value %q", name, line, counter, val)
			}
			rec.FCounters[counter] = v
		} else {
			v, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %s: bad value %q (want an integer)", name, line, counter, val)
			}
			rec.Counters[counter] = v
		}
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			return nil, fmt.Errorf("%s:%d: line longer than %d bytes", name, line+1, maxLine)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !sawHeader {
		return nil, fmt.Errorf("%s: empty: not darshan-parser output", name)
	}
	if l.NProcs <= 0 {
		return nil, fmt.Errorf("%s: no \"# nprocs:\" line in the header", name)
	}
	for _, rec := range l.Records {
		if rec.Rank >= l.NProcs {
			return nil, fmt.Errorf("%s:%d: rank %d, but the job has %d processes", name, rec.Line, rec.Rank, l.NProcs)
		}
	}
	return l, nil
}

func (l *Log) header(s string, line int) error {
	field := func(prefix string) (string, bool) {
		v, ok := strings.CutPrefix(s, prefix)
		return strings.TrimSpace(v), ok
	}
	if v, ok := field("# exe: "); ok {
		l.Exe = v
	} else if v, ok := field("# jobid: "); ok {
		l.JobID = v
	} else if v, ok := field("# nprocs: "); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxNProcs {
			return fmt.Errorf("%s:%d: bad nprocs %q", l.Name, line, v)
		}
		l.NProcs = n
	} else if v, ok := field("# start_time: "); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%s:%d: bad start_time %q", l.Name, line, v)
		}
		l.Start = n
	} else if v, ok := field("# run time: "); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f > 1e9 {
			return fmt.Errorf("%s:%d: bad run time %q", l.Name, line, v)
		}
		l.RunTime = f
	} else if v, ok := field("# mount entry:"); ok {
		pt, typ, _ := strings.Cut(v, "\t")
		l.Mounts = append(l.Mounts, Mount{strings.TrimSpace(pt), strings.TrimSpace(typ)})
	}
	return nil
}
