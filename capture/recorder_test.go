package capture

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

type evWant struct {
	op        trace.Op
	off, size int64
	ret       int64
}

func checkEvents(t *testing.T, evs []trace.Event, want []evWant) {
	t.Helper()
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
	}
	for i, w := range want {
		e := evs[i]
		if e.Op != w.op || e.Offset != w.off || e.Size != w.size || e.Ret != w.ret {
			t.Errorf("event %d: %s off %d size %d ret %d; want %s off %d size %d ret %d",
				i, e.Op, e.Offset, e.Size, e.Ret, w.op, w.off, w.size, w.ret)
		}
		if i > 0 && e.Start < evs[i-1].Start {
			t.Errorf("event %d starts before event %d", i, i-1)
		}
		if e.Dur < 0 || e.Rank != 7 {
			t.Errorf("event %d: dur %d rank %d", i, e.Dur, e.Rank)
		}
	}
}

// TestRecorderFile records every File method with the offsets it used.
func TestRecorderFile(t *testing.T) {
	dir := t.TempDir()
	sink := trace.NewSliceSink()
	rec := NewRecorder(sink, 7)
	name := filepath.Join(dir, "f")
	f, err := rec.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	end := rec.Region("dump")
	f.Write(make([]byte, 100))
	f.WriteString("hello")
	end()
	end() // a second call records nothing
	f.Seek(10, io.SeekStart)
	buf := make([]byte, 20)
	f.Read(buf)
	f.WriteAt([]byte("xyz"), 1000)
	f.ReadAt(buf[:4], 1001)
	f.ReadAt(buf, 1000) // short: 3 of 20 bytes, io.EOF
	f.Seek(0, io.SeekEnd)
	f.Sync()
	f.Truncate(50)
	f.Stat()
	f.Seek(-100, io.SeekStart)
	f.Close()
	rec.Mark("done")
	if _, err := rec.Open(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("open missing: %v", err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	enoent, einval := -int64(syscall.ENOENT), -int64(syscall.EINVAL)
	checkEvents(t, sink.Events, []evWant{
		{trace.OpOpen, 0, 0, int64(f.fd)},
		{trace.OpRegionBegin, 0, 0, 0},
		{trace.OpWrite, 0, 100, 100},
		{trace.OpWrite, 100, 5, 5},
		{trace.OpRegionEnd, 0, 0, 0},
		{trace.OpLseek, 10, 0, 10},
		{trace.OpRead, 10, 20, 20},
		{trace.OpPwrite, 1000, 3, 3},
		{trace.OpPread, 1001, 4, 2},
		{trace.OpPread, 1000, 20, 3},
		{trace.OpLseek, 0, 0, 1003},
		{trace.OpFsync, 0, 0, 0},
		{trace.OpFtruncate, 0, 50, 0},
		{trace.OpFstat, 0, 0, 0},
		{trace.OpLseek, -100, 0, einval},
		{trace.OpClose, 0, 0, 0},
		{trace.OpMark, 0, 0, 0},
		{trace.OpOpen, 0, 0, enoent},
	})
	if p := sink.Paths.Lookup(sink.Events[0].Path); p != name {
		t.Errorf("path %q, want %q", p, name)
	}
	if l := sink.Paths.Lookup(sink.Events[1].Path); l != "dump" || sink.Events[4].Path != sink.Events[1].Path {
		t.Errorf("region label %q", l)
	}
	if sink.Events[0].Flags != uint32(os.O_RDWR|os.O_CREATE|os.O_TRUNC) || sink.Events[0].Mode != 0o666 {
		t.Errorf("open flags %#x mode %o", sink.Events[0].Flags, sink.Events[0].Mode)
	}
	// Calls after Close are not recorded.
	n := len(sink.Events)
	rec.Mark("late")
	if len(sink.Events) != n {
		t.Error("event recorded after Close")
	}
}

// TestRecorderAppendAndMeta covers O_APPEND offsets and the metadata calls.
func TestRecorderAppendAndMeta(t *testing.T) {
	dir := t.TempDir()
	sink := trace.NewSliceSink()
	rec := NewRecorder(sink, 7)
	name := filepath.Join(dir, "log")
	os.WriteFile(name, make([]byte, 30), 0o644)
	f, err := rec.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("abcd"))
	if _, err := f.WriteAt([]byte("x"), 0); err == nil {
		t.Error("WriteAt on an O_APPEND file did not fail")
	}
	f.Write([]byte("ef"))
	f.Close()
	d := filepath.Join(dir, "d")
	rec.Mkdir(d, 0o755)
	rec.Rename(name, filepath.Join(d, "moved"))
	rec.Stat(filepath.Join(d, "moved"))
	rec.Remove(filepath.Join(d, "moved"))
	rec.Remove(d)
	rec.Remove(d)
	rec.Close()
	enoent := -int64(syscall.ENOENT)
	checkEvents(t, sink.Events, []evWant{
		{trace.OpOpen, 0, 0, int64(f.fd)},
		{trace.OpWrite, 30, 4, 4},
		{trace.OpWrite, 34, 2, 2},
		{trace.OpClose, 0, 0, 0},
		{trace.OpMkdir, 0, 0, 0},
		{trace.OpRename, 0, 0, 0},
		{trace.OpStat, 0, 0, 0},
		{trace.OpUnlink, 0, 0, 0},
		{trace.OpRmdir, 0, 0, 0},
		{trace.OpUnlink, 0, 0, enoent},
	})
	if p2 := sink.Paths.Lookup(sink.Events[5].Path2); p2 != filepath.Join(d, "moved") {
		t.Errorf("rename target %q", p2)
	}
}

// TestRecorderWrap: a file the program opened itself is recorded from
// its current position on, O_APPEND included, with an inherit event that
// says where it stood.
func TestRecorderWrap(t *testing.T) {
	dir := t.TempDir()
	sink := trace.NewSliceSink()
	rec := NewRecorder(sink, 7)
	name := filepath.Join(dir, "w")
	os.WriteFile(name, make([]byte, 40), 0o644)
	osf, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	osf.Seek(25, io.SeekStart)
	ofd := int64(osf.Fd())
	f := rec.Wrap(osf)
	f.Write([]byte("abc"))
	f.Read(make([]byte, 5))
	f.Close()
	app, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	afd := int64(app.Fd())
	fa := rec.Wrap(app)
	fa.Write([]byte("zz"))
	fa.Close()
	rec.Close()
	checkEvents(t, sink.Events, []evWant{
		{trace.OpInherit, 25, 0, ofd},
		{trace.OpWrite, 25, 3, 3},
		{trace.OpRead, 28, 5, 5},
		{trace.OpClose, 0, 0, 0},
		{trace.OpInherit, 0, 0, afd},
		{trace.OpWrite, 40, 2, 2},
		{trace.OpClose, 0, 0, 0},
	})
	if sink.Events[4].Flags&trace.OAppend == 0 {
		t.Errorf("the inherit event of a file opened with O_APPEND says flags %#x", sink.Events[4].Flags)
	}
	if p := sink.Paths.Lookup(sink.Events[0].Path); p != name {
		t.Errorf("path %q, want %q", p, name)
	}
}

// TestRecorderConcurrent: goroutines share a recorder; the stream stays
// in start order.
func TestRecorderConcurrent(t *testing.T) {
	dir := t.TempDir()
	sink := trace.NewSliceSink()
	rec := NewRecorder(sink, 7)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			f, err := rec.Create(filepath.Join(dir, string(rune('a'+g))))
			if err != nil {
				t.Error(err)
				return
			}
			for i := 0; i < 300; i++ {
				f.Write([]byte{1, 2, 3})
			}
			f.Close()
		}(g)
	}
	wg.Wait()
	rec.Close()
	if len(sink.Events) != 8*302 {
		t.Fatalf("%d events", len(sink.Events))
	}
	perPath := map[trace.PathID]int64{}
	for _, e := range sink.Events {
		if e.Op == trace.OpWrite {
			if e.Offset != perPath[e.Path] {
				t.Fatalf("write at %d, want %d", e.Offset, perPath[e.Path])
			}
			perPath[e.Path] += 3
		}
	}
}

// TestStartWritesRankFiles: Start follows the launcher's rank variables,
// and the files of all ranks read back as one trace.
func TestStartWritesRankFiles(t *testing.T) {
	out := filepath.Join(t.TempDir(), "go.iot")
	for r := 0; r < 2; r++ {
		t.Setenv("OMPI_COMM_WORLD_RANK", string(rune('0'+r)))
		t.Setenv("OMPI_COMM_WORLD_SIZE", "2")
		rec, err := Start(out)
		if err != nil {
			t.Fatal(err)
		}
		f, err := rec.Create(filepath.Join(t.TempDir(), "data"))
		if err != nil {
			t.Fatal(err)
		}
		f.Write(make([]byte, 10*(r+1)))
		f.Close()
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
	}
	rd, err := format.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if got := rd.Ranks(); len(got) != 2 || rd.Meta().Ranks != 2 {
		t.Fatalf("ranks %v, meta %+v", got, rd.Meta())
	}
	for _, r := range rd.Ranks() {
		src, _ := rd.Rank(r)
		evs, err := trace.ReadAll(src)
		if err != nil || len(evs) != 3 || evs[1].Op != trace.OpWrite || evs[1].Ret != int64(10*(r+1)) {
			t.Errorf("rank %d: %v %+v", r, err, evs)
		}
	}
	if s := rd.Summary(); s[0].PID != os.Getpid() {
		t.Errorf("rank pid %d", s[0].PID)
	}
}

// TestStartBadEnvironment: a bad rank variable is one clear error.
func TestStartBadEnvironment(t *testing.T) {
	t.Setenv("PMI_RANK", "seven")
	if _, err := Start(filepath.Join(t.TempDir(), "x.iot")); err == nil {
		t.Fatal("no error")
	}
}
