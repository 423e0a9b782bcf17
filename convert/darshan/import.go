package darshan

import (
	"compress/gzip"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace"
)

// Trace is the expansion of the script made from a log: a trace of the
// workload, whose PatternScript is the script itself.
type Trace struct {
	*script.Expansion
	Result *Result
}

// PatternScript returns the script the trace is the expansion of (what
// iotrace convert writes for --to script, rather than folding the trace).
func (t *Trace) PatternScript() []byte { return t.Result.Script }

// Read parses darshan-parser text from r (gzip-compressed if it starts
// so), makes its script, and expands it with the log's number of ranks.
// name labels errors and the script's header.
func Read(r io.Reader, name string) (*Trace, error) {
	br := newPeek(r)
	if head, _ := br.peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer z.Close()
		r = z
	} else {
		r = br
	}
	l, err := Parse(r, name)
	if err != nil {
		return nil, err
	}
	res, err := Script(l, filepath.Base(name))
	if err != nil {
		return nil, err
	}
	prog, err := script.Compile(strings.TrimSuffix(filepath.Base(name), ".txt")+".iop", res.Script)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	exp, err := script.Expand(prog, script.Config{Ranks: l.NProcs})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &Trace{Expansion: exp, Result: res}, nil
}

// Notes are what a user should hear of the conversion: counters the
// script could not meet, and what it left out.
func (t *Trace) Notes() []string {
	var out []string
	res := t.Result
	if res.Unchecked > 0 {
		out = append(out, fmt.Sprintf("the script's %d calls are too many to check against the log as it is made", res.Unchecked))
	} else if len(res.Off) == 0 {
		out = append(out, fmt.Sprintf("the script gives back all %d counters of the log it honours (its header lists them)", res.Counters))
	} else {
		out = append(out, fmt.Sprintf("%d of the log's %d counters it honours are not met (the script's header lists them)", len(res.Off), res.Counters))
	}
	for _, s := range res.Skipped {
		out = append(out, "not made: "+s)
	}
	return out
}

var _ trace.Trace = (*Trace)(nil)

// peek is a reader that can look at its first bytes.
type peekReader struct {
	r   io.Reader
	buf []byte
}

func newPeek(r io.Reader) *peekReader { return &peekReader{r: r} }

func (p *peekReader) peek(n int) ([]byte, error) {
	for len(p.buf) < n {
		b := make([]byte, n-len(p.buf))
		k, err := p.r.Read(b)
		p.buf = append(p.buf, b[:k]...)
		if err != nil {
			return p.buf, err
		}
	}
	return p.buf[:n], nil
}

func (p *peekReader) Read(b []byte) (int, error) {
	if len(p.buf) > 0 {
		n := copy(b, p.buf)
		p.buf = p.buf[n:]
		return n, nil
	}
	return p.r.Read(b)
}
