// Package recorder reads the trace directories of Recorder 2.x
// (github.com/uiuc-hpc/Recorder), the research community's multi-level
// I/O tracer: every POSIX, MPI-IO and MPI call it recorded becomes an
// event of the iotrace model, or, for calls the model has no op for
// (MPI_Comm_rank, MPI_Wtime, ftell, chdir…), a mark labelled with the
// call's name, so that nothing is dropped.
//
// A trace directory holds (Recorder's reader, tools/reader.c, is the
// definition followed here):
//
//   - VERSION: "2.4.0" or "2.5.0" (text);
//   - recorder.mt: a 40-byte header (int32 total_ranks, 4 bytes of
//     padding, float64 start_ts, float64 time_resolution in seconds,
//     int32 ts_buffer_elements, int32 ts_compression_algo (0: none), a
//     bool interprocess_compression and padding), then the names of the
//     functions Recorder wraps, one per line: a record's func_id indexes
//     this list;
//   - RANK.cst, the call signature table: int32 entries, then per entry
//     int32 terminal_id, int32 rank, int32 key_len, int32 count (how many
//     calls had this signature), and key_len bytes of key: the thread
//     (8 bytes), func_id (1 byte), call depth (1), arg_count (1), int32
//     length of the arguments, and the arguments, each followed by a
//     space (pointers are "%p"; a descriptor is printed as the path it
//     was opened on; a communicator as MPI_COMM_WORLD or the name
//     Recorder gave it);
//   - RANK.cfg, the grammar the calls were compressed into: int32 rules,
//     then per rule int32 rule_id, int32 symbols and symbols pairs of
//     int32 (symbol, repetitions); a symbol ≥ 0 is a call signature, one
//     < 0 a rule; the calls of the rank are rule -1 expanded;
//   - RANK.ts: per call, two uint32 (start, end), in time_resolution
//     units after the start of the call before.
//
// Interprocess compression (recorder.cst, ug.cfg) and compressed
// timestamps are not read: Read says so in one line.
package recorder

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
)

// Limits, so that memory follows the input.
const (
	maxRanks   = 1 << 20
	maxSymbols = 1 << 26
	maxDepth   = 1 << 10
)

// header is recorder.mt.
type header struct {
	ranks      int
	startTS    float64
	resolution float64 // seconds per tick
	tsAlgo     int32
	interproc  bool
	funcs      []string
}

// sig is a call signature: one distinct call.
type sig struct {
	thread uint64
	fn     int
	depth  int
	args   []string
	count  int64 // calls with this signature, as Recorder counted them
}

type symbol struct{ val, rep int32 }

// rankFiles is one rank's decoded files.
type rankFiles struct {
	sigs  []sig
	rules map[int32][]symbol
	ts    []byte
	calls int64           // rule -1 expanded
	made  map[int32]int64 // calls each rule makes
}

func errf(dir, file string, format string, args ...any) error {
	return fmt.Errorf("%s: %s", strings.TrimSuffix(dir, "/")+"/"+file, fmt.Sprintf(format, args...))
}

func readHeader(fsys fs.FS, dir string) (*header, error) {
	v, err := fs.ReadFile(fsys, "VERSION")
	if err != nil {
		return nil, fmt.Errorf("%s: not a Recorder trace directory (no VERSION): %w", dir, err)
	}
	ver := strings.TrimSpace(string(v))
	if !strings.HasPrefix(ver, "2.4") && !strings.HasPrefix(ver, "2.5") {
		return nil, errf(dir, "VERSION", "Recorder %q: this reader reads the traces of Recorder 2.4 and 2.5", ver)
	}
	mt, err := fs.ReadFile(fsys, "recorder.mt")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if len(mt) < 40 {
		return nil, errf(dir, "recorder.mt", "%d bytes, shorter than its 40-byte header", len(mt))
	}
	h := &header{
		ranks:      int(int32(binary.LittleEndian.Uint32(mt[0:]))),
		startTS:    math.Float64frombits(binary.LittleEndian.Uint64(mt[8:])),
		resolution: math.Float64frombits(binary.LittleEndian.Uint64(mt[16:])),
		tsAlgo:     int32(binary.LittleEndian.Uint32(mt[28:])),
		interproc:  mt[32] != 0,
	}
	if h.ranks < 1 || h.ranks > maxRanks {
		return nil, errf(dir, "recorder.mt", "offset 0: %d ranks", h.ranks)
	}
	if !(h.resolution > 0 && h.resolution <= 1) {
		return nil, errf(dir, "recorder.mt", "offset 16: time resolution %g s", h.resolution)
	}
	if h.tsAlgo != 0 {
		return nil, errf(dir, "recorder.mt", "offset 28: timestamps compressed (algorithm %d): not read; record with uncompressed timestamps", h.tsAlgo)
	}
	if h.interproc {
		return nil, errf(dir, "recorder.mt", "offset 32: interprocess compression (recorder.cst, ug.cfg): not read; record without it")
	}
	for _, name := range bytes.Split(mt[40:], []byte("\n")) {
		h.funcs = append(h.funcs, string(name))
	}
	return h, nil
}

// reader reads little-endian int32s with one error for running short.
type reader struct {
	b   []byte
	off int
	err bool
}

func (r *reader) i32() int32 {
	if r.off+4 > len(r.b) {
		r.err = true
		r.off = len(r.b)
		return 0
	}
	v := int32(binary.LittleEndian.Uint32(r.b[r.off:]))
	r.off += 4
	return v
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || r.off+n > len(r.b) {
		r.err = true
		r.off = len(r.b)
		return nil
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v
}

func readRank(fsys fs.FS, dir string, h *header, rank int) (*rankFiles, error) {
	rf := &rankFiles{rules: map[int32][]symbol{}}
	name := strconv.Itoa(rank)
	cst, err := fs.ReadFile(fsys, name+".cst")
	if err != nil {
		return nil, fmt.Errorf("%s: rank %d: %w", dir, rank, err)
	}
	r := &reader{b: cst}
	n := r.i32()
	if n < 0 || int64(n)*16 > int64(len(cst)) {
		return nil, errf(dir, name+".cst", "offset 0: %d entries in %d bytes", n, len(cst))
	}
	rf.sigs = make([]sig, n)
	seen := make([]bool, n)
	for range n {
		at := r.off
		id, _, klen, count := r.i32(), r.i32(), r.i32(), r.i32()
		key := r.bytes(int(klen))
		if r.err {
			return nil, errf(dir, name+".cst", "offset %d: cut short", at)
		}
		if id < 0 || id >= n || seen[id] {
			return nil, errf(dir, name+".cst", "offset %d: terminal id %d (of %d entries, or twice)", at, id, n)
		}
		seen[id] = true
		s, err := parseKey(key, h)
		if err != nil {
			return nil, errf(dir, name+".cst", "offset %d: %v", at, err)
		}
		if count < 0 {
			return nil, errf(dir, name+".cst", "offset %d: count %d", at, count)
		}
		s.count = int64(count)
		rf.sigs[id] = s
	}
	cfg, err := fs.ReadFile(fsys, name+".cfg")
	if err != nil {
		return nil, fmt.Errorf("%s: rank %d: %w", dir, rank, err)
	}
	r = &reader{b: cfg}
	nr := r.i32()
	if nr < 0 || int64(nr)*8 > int64(len(cfg)) {
		return nil, errf(dir, name+".cfg", "offset 0: %d rules in %d bytes", nr, len(cfg))
	}
	var total int64
	for range nr {
		at := r.off
		id, ns := r.i32(), r.i32()
		if r.err || ns < 0 || int64(ns)*8 > int64(len(cfg)-r.off) {
			return nil, errf(dir, name+".cfg", "offset %d: rule of %d symbols: cut short", at, ns)
		}
		if id >= 0 {
			return nil, errf(dir, name+".cfg", "offset %d: rule id %d (rules are negative)", at, id)
		}
		if _, dup := rf.rules[id]; dup {
			return nil, errf(dir, name+".cfg", "offset %d: rule %d twice", at, id)
		}
		if total += int64(ns); total > maxSymbols {
			return nil, errf(dir, name+".cfg", "offset %d: more than %d symbols", at, maxSymbols)
		}
		body := make([]symbol, ns)
		for i := range body {
			body[i] = symbol{r.i32(), r.i32()}
			if body[i].rep < 0 {
				return nil, errf(dir, name+".cfg", "offset %d: rule %d: %d repetitions", at, id, body[i].rep)
			}
			if body[i].val >= n {
				return nil, errf(dir, name+".cfg", "offset %d: rule %d: call signature %d of %d", at, id, body[i].val, n)
			}
		}
		rf.rules[id] = body
	}
	if _, ok := rf.rules[-1]; !ok {
		return nil, errf(dir, name+".cfg", "no rule -1 (the start)")
	}
	// The calls the grammar makes: every rule reached must exist, no rule
	// may reach itself, and the timestamps must be there for every call.
	memo := map[int32]int64{}
	state := map[int32]uint8{} // 1 visiting, 2 done
	var count func(id int32, depth int) (int64, error)
	count = func(id int32, depth int) (int64, error) {
		switch state[id] {
		case 1:
			return 0, errf(dir, name+".cfg", "rule %d reaches itself", id)
		case 2:
			return memo[id], nil
		}
		if depth > maxDepth {
			return 0, errf(dir, name+".cfg", "rules nested deeper than %d", maxDepth)
		}
		body, ok := rf.rules[id]
		if !ok {
			return 0, errf(dir, name+".cfg", "rule %d is used but not defined", id)
		}
		state[id] = 1
		var n int64
		for _, s := range body {
			c := int64(1)
			if s.val < 0 {
				var err error
				if c, err = count(s.val, depth+1); err != nil {
					return 0, err
				}
			}
			if s.rep != 0 && c > (math.MaxInt64/4-n)/int64(s.rep) {
				return 0, errf(dir, name+".cfg", "rule %d makes more calls than can be counted", id)
			}
			n += c * int64(s.rep)
		}
		state[id], memo[id] = 2, n
		return n, nil
	}
	if rf.calls, err = count(-1, 0); err != nil {
		return nil, err
	}
	rf.made = memo
	ts, err := fs.ReadFile(fsys, name+".ts")
	if err != nil {
		return nil, fmt.Errorf("%s: rank %d: %w", dir, rank, err)
	}
	if int64(len(ts)) != rf.calls*8 {
		return nil, errf(dir, name+".ts", "%d bytes, but the grammar makes %d calls (8 bytes each)", len(ts), rf.calls)
	}
	rf.ts = ts
	return rf, nil
}

func parseKey(key []byte, h *header) (sig, error) {
	if len(key) < 15 {
		return sig{}, fmt.Errorf("call signature of %d bytes, shorter than its 15-byte head", len(key))
	}
	s := sig{thread: binary.LittleEndian.Uint64(key), fn: int(key[8]), depth: int(key[9])}
	nargs := int(key[10])
	alen := int(int32(binary.LittleEndian.Uint32(key[11:])))
	if alen < 0 || 15+alen > len(key) {
		return sig{}, fmt.Errorf("arguments of %d bytes in a signature of %d", alen, len(key))
	}
	if s.fn >= len(h.funcs) && s.fn != userFunction {
		return sig{}, fmt.Errorf("function %d, but recorder.mt lists %d", s.fn, len(h.funcs))
	}
	args := string(key[15 : 15+alen])
	if nargs > 0 {
		if !strings.HasSuffix(args, " ") {
			return sig{}, errors.New("arguments do not end with a space")
		}
		s.args = strings.Split(args[:len(args)-1], " ")
	}
	if len(s.args) != nargs {
		return sig{}, fmt.Errorf("%d arguments, the signature says %d", len(s.args), nargs)
	}
	return s, nil
}

// userFunction is the func_id of a user function (its name is argument 1).
const userFunction = 255

func (h *header) name(s *sig) string {
	if s.fn == userFunction {
		if len(s.args) > 1 {
			return s.args[1]
		}
		return "user function"
	}
	return h.funcs[s.fn]
}
