package replay_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/trace"
)

// detailBackend fails every MPI_File_sync of its ranks with EIO and says
// why, as an MPI library would; other calls succeed without a detail.
type detailBackend struct{ fakeBackend }

func (f *detailBackend) Rank(uint32, int) (replay.Executor, error) { return &detailExec{}, nil }

type detailExec struct{ n, last int }

func (x *detailExec) Do(c *replay.Call) (int64, replay.Skip) {
	x.last = 0
	if c.Ev.Op == trace.OpMPIFileSync {
		x.n++
		x.last = x.n
		return c.Ev.Ret - 5, replay.NotSkipped // −EIO
	}
	return c.Ev.Ret, replay.NotSkipped
}
func (x *detailExec) Close() error { return nil }
func (x *detailExec) ErrorDetail() string {
	if x.last == 0 {
		return ""
	}
	return fmt.Sprintf("MPI_ERR_IO: input/output error, sync %d", x.last)
}

// TestErrorDetail checks that what a backend's library says of a failed
// call reaches the result (the first of each op and errno, in the
// summary and its JSON form) and a --strict failure's message.
func TestErrorDetail(t *testing.T) {
	m := trace.NewMemTrace()
	for r := range uint32(2) {
		m.Add(trace.Event{Rank: r, Op: trace.OpMPIFileOpen, Path: m.Paths.Intern("/x/f"), FD: 1},
			trace.Event{Rank: r, Op: trace.OpMPIFileSync, FD: 1, Start: 10},
			trace.Event{Rank: r, Op: trace.OpMPIFileSync, FD: 1, Start: 20},
			trace.Event{Rank: r, Op: trace.OpMPIFileClose, FD: 1, Start: 30})
	}
	res, _ := run(t, m, replay.Options{Timing: replay.AFAP}, &detailBackend{})
	if len(res.Errors) != 1 || res.Errors[0].Count != 4 || res.Errors[0].Detail != "MPI_ERR_IO: input/output error, sync 1" {
		t.Fatalf("errors %+v", res.Errors)
	}
	var sum, js bytes.Buffer
	report.ReplayOf(res.PerRank).WriteText(&sum)
	if want := "MPI_File_sync: 4 failed with EIO (first: MPI_ERR_IO: input/output error, sync 1)"; !strings.Contains(sum.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, sum.String())
	}
	if err := report.ReplayOf(res.PerRank).WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"detail": "MPI_ERR_IO: input/output error, sync 1"`) {
		t.Errorf("JSON summary lacks the detail:\n%s", js.String())
	}
	rp, err := replay.New(m, replay.Options{Timing: replay.AFAP, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rp.Run(context.Background(), &detailBackend{}, newSinks().out(""))
	if err == nil || !strings.Contains(err.Error(), "EIO (MPI_ERR_IO: input/output error, sync 1)") {
		t.Errorf("strict replay: %v", err)
	}
}
