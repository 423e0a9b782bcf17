package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/hist"
)

// replayed is a trace that says how its replay went.
type replayed struct {
	*trace.MemTrace
	ranks map[uint32]*trace.ReplayRank
}

func (r replayed) Replay(rank uint32) *trace.ReplayRank { return r.ranks[rank] }

func lagOf(vs ...int64) *hist.Hist {
	var h hist.Hist
	for _, v := range vs {
		h.Add(v)
	}
	return &h
}

// TestReplaySection: the report of a replay's own trace says how the
// replay went — in text, JSON and HTML — and a comparison shows its issue
// lag.
func TestReplaySection(t *testing.T) {
	m := handTrace()
	rt := replayed{MemTrace: m, ranks: map[uint32]*trace.ReplayRank{}}
	for _, r := range m.Ranks() {
		rt.ranks[r] = &trace.ReplayRank{Timing: "original", Planned: 10, Events: 10, Elapsed: int64(r+1) * 1e6,
			Lag:    map[trace.Op]*hist.Hist{trace.OpWrite: lagOf(1000, 2000), trace.OpOpen: lagOf(5e6)},
			Errors: []trace.ReplayError{{Op: trace.OpOpen, Ret: -2, Count: 1}},
			Skips:  []trace.ReplaySkip{{Op: trace.OpRead, Reason: "standard stream", Count: 2}}}
	}
	st := compute(t, rt, Options{})
	if st.Replay == nil || st.Replay.Ranks != len(m.Ranks()) || st.Replay.Lag.Count() != uint64(3*len(m.Ranks())) {
		t.Fatalf("replay %+v", st.Replay)
	}
	var text bytes.Buffer
	if err := Render(&text, st, "op", "text"); err != nil {
		t.Fatal(err)
	}
	n := int64(len(m.Ranks()))
	for _, want := range []string{
		"replay: " + itoa(n) + " ranks, " + itoa(10*n) + " of " + itoa(10*n) + " events in " + itoa(n) + "ms, timing original",
		"issue lag: p50 ", "issue lag by op: open p99 5ms, write p99 2µs",
		"open: " + itoa(n) + " failed with ENOENT", "skipped " + itoa(2*n) + " read: standard stream",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := Render(&js, st, "op", "json"); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Replay struct {
			Events int64 `json:"events"`
			Lag    struct {
				Count uint64  `json:"count"`
				Max   float64 `json:"max_seconds"`
			} `json:"lag"`
			LagByOp []struct {
				Op string `json:"op"`
			} `json:"lag_by_op"`
			Skips []struct {
				Reason string `json:"reason"`
			} `json:"skips"`
		} `json:"replay"`
	}
	if err := json.Unmarshal(js.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.Replay.Events != int64(10*n) || v.Replay.Lag.Max != 0.005 || len(v.Replay.LagByOp) != 2 || v.Replay.Skips[0].Reason != "standard stream" {
		t.Errorf("json replay %+v", v.Replay)
	}
	var html bytes.Buffer
	if err := RenderHTML(&html, st, HTMLOptions{}); err != nil || !strings.Contains(html.String(), "replay: "+itoa(n)+" ranks") {
		t.Errorf("the HTML page lacks the replay's summary (%v)", err)
	}
	c := Compare(compute(t, m, Options{}), st)
	var cmpText, cmpJSON bytes.Buffer
	if err := RenderCompare(&cmpText, c, "text"); err != nil || !strings.Contains(cmpText.String(), "issue lag of b (original timing): p50 ") {
		t.Errorf("comparison lacks the issue lag (%v):\n%s", err, cmpText.String())
	}
	if err := RenderCompare(&cmpJSON, c, "json"); err != nil || !strings.Contains(cmpJSON.String(), `"replay_b": {`) || strings.Contains(cmpJSON.String(), `"replay_a"`) {
		t.Errorf("comparison JSON (%v):\n%s", err, cmpJSON.String())
	}
	// A trace that is no replay's says nothing of one.
	if compute(t, m, Options{}).Replay != nil {
		t.Error("a plain trace has a replay section")
	}
}

// TestReplayPredictSummary: the summary puts the application's I/O time
// in the replay (the slowest rank's) beside the captured one, says
// "predicted" under --predict, and counts the MPI-IO library cost kept;
// the JSON has them as predict, io_time and mpiio_library_cost.
func TestReplayPredictSummary(t *testing.T) {
	r := ReplayOf([]*trace.ReplayRank{
		{Rank: 0, Timing: "think", Predict: true, IOTime: 2e9, CapturedIOTime: 3e9, LibCalls: 2, LibTime: 80e6},
		{Rank: 1, Timing: "think", Predict: true, IOTime: 5e9, CapturedIOTime: 4e9, LibCalls: 1, LibTime: 40e6},
	})
	var b bytes.Buffer
	r.WriteText(&b)
	text := b.String()
	for _, want := range []string{
		"MPI-IO library cost kept: 3 calls, 120",
		"predicted application I/O time: 5", "(slowest rank 1), captured 4", "+25.0 %",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	b.Reset()
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Predict bool `json:"predict"`
		IOTime  struct {
			Replay   float64 `json:"replay_seconds"`
			Rank     uint32  `json:"replay_rank"`
			Captured float64 `json:"captured_seconds"`
		} `json:"io_time"`
		Lib struct {
			Calls   int64   `json:"calls"`
			Seconds float64 `json:"seconds"`
		} `json:"mpiio_library_cost"`
	}
	if err := json.Unmarshal(b.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if !v.Predict || v.IOTime.Replay != 5 || v.IOTime.Rank != 1 || v.IOTime.Captured != 4 || v.Lib.Calls != 3 || v.Lib.Seconds != 0.12 {
		t.Errorf("JSON %s", b.String())
	}
	// Without --predict, the line says what it measured; without the
	// fields (an older replay's trace), no line.
	r.Predict = false
	b.Reset()
	r.WriteText(&b)
	if !strings.Contains(b.String(), "I/O time in the replay: 5") {
		t.Errorf("summary without --predict:\n%s", b.String())
	}
	b.Reset()
	ReplayOf([]*trace.ReplayRank{{Timing: "afap"}}).WriteText(&b)
	if strings.Contains(b.String(), "I/O time") || strings.Contains(b.String(), "MPI-IO") {
		t.Errorf("summary of an old replay's trace:\n%s", b.String())
	}
}

// TestReplayPredictSpan: with the rebuilt timelines' span (every rank's
// block holds it; processes of an MPI replay merge), the summary's
// prediction is that span beside the capture's, and the slowest rank's
// I/O time is no longer called predicted; the JSON has it as io_span.
func TestReplayPredictSpan(t *testing.T) {
	r := ReplayOf([]*trace.ReplayRank{
		{Rank: 0, Timing: "think", Predict: true, IOTime: 2e9, CapturedIOTime: 3e9, IOSpan: 6e9, CapturedIOSpan: 5e9},
		{Rank: 1, Timing: "think", Predict: true, IOTime: 5e9, CapturedIOTime: 4e9},
	})
	var b bytes.Buffer
	r.WriteText(&b)
	text := b.String()
	for _, want := range []string{"predicted application I/O time (first file call to last, every rank): 6s, captured 5s, +20.0 %", "I/O time in the replay: 5"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "predicted application I/O time: ") {
		t.Errorf("the slowest rank's I/O time is called the prediction:\n%s", text)
	}
	b.Reset()
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var v struct {
		IOSpan *struct {
			Predicted float64 `json:"predicted_seconds"`
			Captured  float64 `json:"captured_seconds"`
		} `json:"io_span"`
	}
	if err := json.Unmarshal(b.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.IOSpan == nil || v.IOSpan.Predicted != 6 || v.IOSpan.Captured != 5 {
		t.Errorf("JSON %s", b.String())
	}
}
