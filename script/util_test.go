package script

import (
	"fmt"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// evStr renders the fields of an event that are set, for exact
// comparisons: "pwrite f fd=3 off=0 size=4096 ret=4096".
func evStr(e *trace.Event, path func(trace.PathID) string) string {
	var b strings.Builder
	b.WriteString(e.Op.String())
	if e.Path != 0 {
		b.WriteString(" " + path(e.Path))
	}
	if e.Path2 != 0 {
		b.WriteString(" -> " + path(e.Path2))
	}
	add := func(name string, v int64) {
		if v != 0 {
			fmt.Fprintf(&b, " %s=%d", name, v)
		}
	}
	add("thread", int64(e.Thread))
	add("fd", int64(e.FD))
	add("off", e.Offset)
	add("fd2", int64(e.FD2))
	add("off2", e.Offset2)
	add("size", e.Size)
	flags := e.Flags
	if e.Op == trace.OpMPISendrecv {
		flags &^= trace.RecvHalf // recv= below says it
	}
	if flags != 0 {
		b.WriteString(" flags=" + trace.FormatFlags(e.Op, flags))
	}
	if e.Mode != 0 {
		fmt.Fprintf(&b, " mode=%#o", e.Mode)
	}
	add("whence", int64(e.Whence))
	add("peer", int64(e.Peer))
	add("tag", int64(e.Tag))
	// A sendrecv's receive half: "recv=?" unknown, "recv=S/T" when it is
	// not from the destination with the send's tag.
	if src, rtag, ok := e.RecvFrom(); !ok && e.Op == trace.OpMPISendrecv {
		b.WriteString(" recv=?")
	} else if ok && (src != e.Peer || rtag != e.Tag) {
		fmt.Fprintf(&b, " recv=%d/%d", src, rtag)
	}
	add("comm", int64(e.Comm))
	add("bytes", e.Bytes)
	add("count", int64(e.Count))
	add("stride", e.Stride)
	add("ret", e.Ret)
	return b.String()
}

func mustCompile(t testing.TB, src string) *Program {
	t.Helper()
	p, err := Compile("t.iop", []byte(src))
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return p
}

// expandAll expands src and returns every rank's events.
func expandAll(t testing.TB, src string, cfg Config) (*Expansion, map[uint32][]trace.Event) {
	t.Helper()
	x, err := Expand(mustCompile(t, src), cfg)
	if err != nil {
		t.Fatalf("expand: %v", err)
	}
	out := map[uint32][]trace.Event{}
	for _, r := range x.Ranks() {
		src, err := x.Rank(r)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := trace.ReadAll(src)
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		out[r] = evs
	}
	return x, out
}

// rankLines renders the events of one rank.
func rankLines(x *Expansion, evs []trace.Event) []string {
	var out []string
	for i := range evs {
		out = append(out, evStr(&evs[i], x.Path))
	}
	return out
}
