package chrome

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/tracegen"
)

type chromeEvent struct {
	Ph   string          `json:"ph"`
	Pid  *int64          `json:"pid"`
	Tid  *int64          `json:"tid"`
	Ts   *float64        `json:"ts"`
	Dur  *float64        `json:"dur"`
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	ID   *int64          `json:"id"`
	Bp   string          `json:"bp"`
	S    string          `json:"s"`
	Args json.RawMessage `json:"args"`
}

type track struct{ pid, tid int64 }

// Validated is what Validate found in a Chrome JSON document.
type validated struct {
	events  []chromeEvent
	flows   int // paired flows
	slices  map[track][]chromeEvent
	threads map[track]string
	procs   map[int64]string
}

// validate checks the structure of a Chrome trace-event JSON document:
// the required fields of every event by phase, that every flow has
// exactly one start and one end, each inside a slice of its track, that
// every track is named and "B"/"E" pairs balance per track.
func validate(t *testing.T, doc []byte) *validated {
	t.Helper()
	var top struct {
		TraceEvents     []chromeEvent `json:"traceEvents"`
		DisplayTimeUnit string        `json:"displayTimeUnit"`
		OtherData       map[string]any
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&top); err != nil {
		t.Fatalf("not Chrome JSON: %v\n%.3000s", err, doc)
	}
	if top.DisplayTimeUnit != "ns" || top.OtherData == nil {
		t.Errorf("displayTimeUnit %q otherData %v", top.DisplayTimeUnit, top.OtherData)
	}
	v := &validated{events: top.TraceEvents, slices: map[track][]chromeEvent{}, threads: map[track]string{}, procs: map[int64]string{}}
	type flowEnds struct{ s, f []chromeEvent }
	flows := map[string]*flowEnds{}
	depth := map[track]int{}
	used := map[track]bool{}
	for i, e := range top.TraceEvents {
		if e.Pid == nil || e.Tid == nil || e.Ts == nil || e.Ph == "" {
			t.Fatalf("event %d lacks ph, pid, tid or ts: %+v", i, e)
		}
		if *e.Pid <= 0 || *e.Tid < 0 {
			t.Errorf("event %d: pid %d tid %d (pid 0 is the kernel's in Perfetto)", i, *e.Pid, *e.Tid)
		}
		tr := track{*e.Pid, *e.Tid}
		switch e.Ph {
		case "M":
			var a struct {
				Name      *string
				SortIndex *int64 `json:"sort_index"`
			}
			if err := json.Unmarshal(e.Args, &a); err != nil {
				t.Fatalf("metadata args %s: %v", e.Args, err)
			}
			switch e.Name {
			case "process_name":
				v.procs[*e.Pid] = *a.Name
			case "thread_name":
				v.threads[tr] = *a.Name
			case "process_sort_index", "thread_sort_index":
				if a.SortIndex == nil {
					t.Errorf("event %d: %s without sort_index", i, e.Name)
				}
			default:
				t.Errorf("event %d: metadata %q", i, e.Name)
			}
			continue
		case "X":
			if e.Dur == nil || *e.Dur < 0 || e.Name == "" || e.Cat == "" || len(e.Args) == 0 {
				t.Fatalf("event %d: slice without dur, name, cat or args: %+v", i, e)
			}
			var a map[string]any
			if err := json.Unmarshal(e.Args, &a); err != nil || a["op"] != e.Name {
				t.Errorf("event %d: args %s", i, e.Args)
			}
			v.slices[tr] = append(v.slices[tr], e)
		case "B":
			if e.Name == "" {
				t.Errorf("event %d: B without a name", i)
			}
			depth[tr]++
		case "E":
			depth[tr]--
			if depth[tr] < 0 {
				t.Errorf("event %d: E without B on %v", i, tr)
			}
		case "i":
			if e.S != "t" || e.Name == "" {
				t.Errorf("event %d: instant %+v", i, e)
			}
		case "s", "f":
			if e.ID == nil || e.Cat == "" || e.Name == "" {
				t.Fatalf("event %d: flow without id, cat or name: %+v", i, e)
			}
			if e.Ph == "f" && e.Bp != "e" {
				t.Errorf("event %d: flow end not bound to its enclosing slice", i)
			}
			k := fmt.Sprint(e.Cat, "/", *e.ID)
			if flows[k] == nil {
				flows[k] = &flowEnds{}
			}
			if e.Ph == "s" {
				flows[k].s = append(flows[k].s, e)
			} else {
				flows[k].f = append(flows[k].f, e)
			}
		default:
			t.Errorf("event %d: phase %q", i, e.Ph)
		}
		used[tr] = true
	}
	for tr, d := range depth {
		if d != 0 {
			t.Errorf("track %v: %d regions open at the end", tr, d)
		}
	}
	for tr := range used {
		if v.threads[tr] == "" || v.procs[tr.pid] == "" {
			t.Errorf("track %v is not named (thread %q, process %q)", tr, v.threads[tr], v.procs[tr.pid])
		}
	}
	inSlice := func(e chromeEvent) bool {
		for _, s := range v.slices[track{*e.Pid, *e.Tid}] {
			if *e.Ts >= *s.Ts && *e.Ts <= *s.Ts+*s.Dur {
				return true
			}
		}
		return false
	}
	for k, fe := range flows {
		if len(fe.s) != 1 || len(fe.f) != 1 {
			t.Errorf("flow %s: %d starts and %d ends", k, len(fe.s), len(fe.f))
			continue
		}
		if !inSlice(fe.s[0]) || !inSlice(fe.f[0]) {
			t.Errorf("flow %s: an end outside every slice of its track: %+v %+v", k, fe.s[0], fe.f[0])
		}
		if *fe.s[0].Pid == *fe.f[0].Pid {
			t.Errorf("flow %s within one rank", k)
		}
		v.flows++
	}
	return v
}

func write(t *testing.T, tr trace.Trace) ([]byte, *Summary) {
	t.Helper()
	var b bytes.Buffer
	s, err := Write(&b, tr)
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), s
}

// commTrace: three ranks exchanging messages and meeting in collectives,
// with a thread, regions, marks and a descriptor-only write.
func commTrace() *trace.MemTrace {
	m := trace.NewMemTrace()
	m.M = trace.Meta{Ranks: 3, Creator: "test", Command: []string{"prog", "a b"}}
	f := m.Paths.Intern("/data/out")
	phase := m.Paths.Intern("phase 1")
	clock := map[uint32]int64{}
	add := func(r uint32, e trace.Event, dur int64) {
		e.Rank, e.Start, e.Dur = r, clock[r], dur
		clock[r] += dur + 100
		m.Add(e)
	}
	for r := uint32(0); r < 3; r++ {
		add(r, trace.Event{Op: trace.OpRegionBegin, Path: phase}, 0)
		add(r, trace.Event{Op: trace.OpOpen, Path: f, Ret: 3, Flags: trace.OWronly}, 1000)
		add(r, trace.Event{Op: trace.OpPwrite, FD: 3, Size: 10, Ret: 10, Offset: int64(r) * 10}, 2000)
		clock[r] += int64(r) * 5000 // rank 2 enters the barrier last
		add(r, trace.Event{Op: trace.OpMPIBarrier}, 10000)
		add(r, trace.Event{Op: trace.OpMPIBcast, Peer: 1, Bytes: 8}, 3000)
		add(r, trace.Event{Op: trace.OpMPIReduce, Peer: 0, Bytes: 8}, 3000)
		add(r, trace.Event{Op: trace.OpRegionEnd, Path: phase}, 0)
	}
	// 0 → 1 twice on tag 5, once on tag 6 (from a thread); 1 → 2 with Isend;
	// 2 receives from any source; 0 sends to 2 with nobody receiving.
	add(0, trace.Event{Op: trace.OpMPISend, Peer: 1, Tag: 5, Bytes: 100}, 500)
	add(0, trace.Event{Op: trace.OpMPISend, Peer: 1, Tag: 5, Bytes: 100}, 500)
	add(0, trace.Event{Op: trace.OpMPISend, Peer: 1, Tag: 6, Bytes: 100, Thread: 1}, 500)
	add(0, trace.Event{Op: trace.OpMPISend, Peer: 2, Tag: 9, Bytes: 1}, 500)
	add(1, trace.Event{Op: trace.OpMPIRecv, Peer: 0, Tag: 6, Bytes: 100}, 800)
	add(1, trace.Event{Op: trace.OpMPIRecv, Peer: 0, Tag: 5, Bytes: 100}, 800)
	add(1, trace.Event{Op: trace.OpMPIRecv, Peer: 0, Tag: 5, Bytes: 100}, 800)
	add(1, trace.Event{Op: trace.OpMPIIsend, Peer: 2, Tag: 0, Bytes: 4}, 50)
	add(1, trace.Event{Op: trace.OpMPIWait}, 50)
	add(2, trace.Event{Op: trace.OpMPIIrecv, Peer: 1, Tag: 0, Bytes: 4}, 50)
	add(2, trace.Event{Op: trace.OpMPIRecv, Peer: -1, Tag: 3, Bytes: 4}, 50)
	add(2, trace.Event{Op: trace.OpMark, Path: m.Paths.Intern("done")}, 0)
	add(2, trace.Event{Op: trace.OpRegionBegin, Path: phase}, 0) // never ended
	// A barrier rank 2 does not make.
	add(0, trace.Event{Op: trace.OpMPIBarrier}, 10)
	add(1, trace.Event{Op: trace.OpMPIBarrier}, 10)
	return m
}

func TestWriteComm(t *testing.T) {
	doc, s := write(t, commTrace())
	v := validate(t, doc)
	// Messages: 3 (0→1) + 1 (1→2). Collectives: barrier 2 (from the
	// last, rank 2), bcast 2 (from root 1), reduce 2 (to root 0).
	if v.flows != 10 || s.Flows != 10 {
		t.Errorf("flows %d (summary %d), want 10", v.flows, s.Flows)
	}
	if s.Unmatched != 1 || s.Wildcards != 1 || s.Incomplete != 1 {
		t.Errorf("summary %+v", s)
	}
	if s.Note() == "" {
		t.Error("no note for unmatched communication")
	}
	if len(v.procs) != 3 || v.procs[1] != "rank 0" || v.threads[track{1, TID(0, 1)}] != "rank 0 thread 1" || v.threads[track{3, TID(2, 0)}] != "rank 2" {
		t.Errorf("names %v %v", v.procs, v.threads)
	}
	// The barrier's arrows leave rank 2's barrier, the one entered last.
	byID := map[int64][]chromeEvent{}
	for _, e := range v.events {
		if e.ID != nil {
			byID[*e.ID] = append(byID[*e.ID], e)
		}
	}
	var barrierFrom = map[int64]int{}
	for _, fe := range byID {
		if fe[0].Name == "MPI_Barrier" {
			for _, e := range fe {
				if e.Ph == "s" {
					barrierFrom[*e.Pid]++
				}
			}
		}
		if fe[0].Name == "MPI_Reduce" {
			for _, e := range fe {
				if e.Ph == "f" && *e.Pid != PID(0) {
					t.Errorf("reduce arrow ends on pid %d, not the root's", *e.Pid)
				}
			}
		}
	}
	if len(barrierFrom) != 1 || barrierFrom[PID(2)] != 2 {
		t.Errorf("barrier arrows start at %v, want 2 from rank 2", barrierFrom)
	}
	// The n-th send on a channel meets the n-th receive: 0's tag-6 send
	// (its third) ends at 1's first receive.
	for _, fe := range byID {
		var s, f chromeEvent
		for _, e := range fe {
			if e.Ph == "s" {
				s = e
			} else {
				f = e
			}
		}
		if s.Name == "MPI_Send" && *s.Tid == TID(0, 1) {
			sl := v.slices[track{*f.Pid, *f.Tid}]
			sort.Slice(sl, func(i, j int) bool { return *sl[i].Ts < *sl[j].Ts })
			var first chromeEvent
			for _, x := range sl {
				if x.Name == "MPI_Recv" {
					first = x
					break
				}
			}
			if *f.Ts < *first.Ts || *f.Ts > *first.Ts+*first.Dur {
				t.Errorf("tag 6 arrives at %v, not in rank 1's first receive %v+%v", *f.Ts, *first.Ts, *first.Dur)
			}
		}
	}
	// The descriptor-only write names its file.
	found := false
	for _, e := range v.slices[track{PID(1), TID(1, 0)}] {
		if e.Name == "pwrite" {
			var a struct{ Path string }
			json.Unmarshal(e.Args, &a)
			found = a.Path == "/data/out"
		}
	}
	if !found {
		t.Error("pwrite's args lack the path of its descriptor")
	}
}

func TestWriteGenerated(t *testing.T) {
	tr := tracegen.TwoPhase(4, 2, 3, 5, 1000, 1)
	doc, s := write(t, tr)
	v := validate(t, doc)
	// Every alltoall draws 3 arrows: 2 dumps × 3 arrays.
	if v.flows != 2*3*3 || s.Incomplete != 0 || s.Unmatched != 0 {
		t.Errorf("flows %d, summary %+v", v.flows, s)
	}
	var events int64
	for _, r := range tr.Ranks() {
		src, _ := tr.Rank(r)
		evs, _ := trace.ReadAll(src)
		events += int64(len(evs))
	}
	if s.Slices != events {
		t.Errorf("%d slices for %d events", s.Slices, events)
	}
}

func TestAppendMicros(t *testing.T) {
	for ns, want := range map[int64]string{0: "0", 1: "0.001", 999: "0.999", 1000: "1", 1234567: "1234.567", -1500: "-1.500", 10: "0.010"} {
		if got := string(appendMicros(nil, ns)); got != want {
			t.Errorf("%d ns: %q, want %q", ns, got, want)
		}
	}
}

// TestWriteSendrecvShift: the arrows of a ring shift with MPI_Sendrecv
// (to the next rank, from the previous one) go from each send half to the
// receive half of the next rank; a non-periodic end (MPI_PROC_NULL) draws
// nothing and is not unmatched.
func TestWriteSendrecvShift(t *testing.T) {
	m := trace.NewMemTrace()
	for r := int32(0); r < 3; r++ {
		e := trace.Event{Rank: uint32(r), Op: trace.OpMPISendrecv, Peer: (r + 1) % 3, Tag: 4, Bytes: 8, Start: 1000, Dur: 500}
		e.SetRecvFrom((r+2)%3, 4)
		f := trace.Event{Rank: uint32(r), Op: trace.OpMPISendrecv, Peer: r + 1, Tag: 5, Bytes: 8, Start: 2000, Dur: 500}
		src := r - 1
		if r == 2 {
			f.Peer = trace.ProcNull
		}
		if r == 0 {
			src = trace.ProcNull
		}
		f.SetRecvFrom(src, 5)
		m.Add(e, f)
	}
	doc, s := write(t, m)
	v := validate(t, doc)
	if v.flows != 5 || s.Flows != 5 || s.Unmatched != 0 || s.Wildcards != 0 {
		t.Errorf("flows %d (summary %+v), want 5, none unmatched", v.flows, s)
	}
}
