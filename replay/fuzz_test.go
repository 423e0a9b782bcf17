package replay_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/replay/posix"
	"github.com/iotrace/iotrace/trace"
)

// fuzzOps are the calls FuzzReplay makes: every POSIX and metadata call
// (communication and MPI-IO could wait for a partner forever; the replay
// tests and the MPI tests cover them).
var fuzzOps = func() []trace.Op {
	var ops []trace.Op
	for _, op := range trace.Ops() {
		if c := op.Class(); c == trace.ClassPOSIX || c == trace.ClassMeta {
			ops = append(ops, op)
		}
	}
	return ops
}()

// fuzzPaths are names a trace may hold: ordinary ones, ones that climb
// out, special ones.
var fuzzPaths = []string{"/s/a", "/s/d/b", "/s/d", "rel/c", "../../o/x", "/s/../../../o/y", "/dev/null", "/proc/self/status",
	"pipe:[7]", "/s/d/../a", "/", "", "/s/l", "/o/secret", "/dev/shm/z"}

// fuzzEvents makes up to 64 events of two ranks from data: each event
// takes 16 bytes (op, rank, path, second path, descriptor, flags, offset,
// size, result). small says every offset and size is small enough to run.
func fuzzEvents(data []byte, m *trace.MemTrace) (small bool) {
	small = true
	ids := make([]trace.PathID, len(fuzzPaths))
	for i, p := range fuzzPaths {
		if p != "" {
			ids[i] = m.Paths.Intern(p)
		}
	}
	var evs []trace.Event
	for k := 0; len(data) >= 16 && k < 64; k++ {
		b := data[:16]
		data = data[16:]
		e := trace.Event{
			Op:     fuzzOps[int(b[0])%len(fuzzOps)],
			Rank:   uint32(b[1] & 1),
			Thread: uint32(b[1]>>1) & 1,
			Path:   ids[int(b[2])%len(ids)],
			Path2:  ids[int(b[3])%len(ids)],
			FD:     int32(b[4]%8) - 1,
			Flags:  uint32(binary.LittleEndian.Uint16(b[5:])),
			Mode:   0o644,
			Whence: int32(b[7] % 4),
			Start:  int64(k) * 1000,
			Dur:    10,
		}
		off := int64(binary.LittleEndian.Uint16(b[8:]))
		size := int64(binary.LittleEndian.Uint16(b[10:]))
		if b[12]&0x80 != 0 {
			// The numbers a hostile trace holds: plan them, do not run them.
			off, size, small = int64(binary.LittleEndian.Uint64(b[8:])), int64(binary.LittleEndian.Uint32(b[12:]))<<31, false
		}
		e.Offset, e.Size = off, size
		switch r := int8(b[14]); {
		case r < -100:
			e.Ret = -int64(b[15] % 40) // an errno
		case r < 0:
			e.Ret = size
		default:
			e.Ret = int64(r % 8) // a descriptor or a short count
		}
		evs = append(evs, e)
	}
	m.Add(evs...)
	return small
}

// FuzzReplay: arbitrary POSIX and metadata calls of two ranks, through
// every transform, planned (the dry run's plan and the disk check) and,
// when their numbers are small, replayed into a temporary target: the
// replay ends (no hang), returns or reports, and nothing outside the
// target changes.
//
//	go test -run '^$' -fuzz '^FuzzReplay$' -fuzztime 10m ./replay
func FuzzReplay(f *testing.F) {
	seed := func(evs ...[16]byte) []byte {
		var b []byte
		for _, e := range evs {
			b = append(b, e[:]...)
		}
		return b
	}
	opIndex := func(op trace.Op) byte {
		for i, o := range fuzzOps {
			if o == op {
				return byte(i)
			}
		}
		return 0
	}
	for tf := range byte(6) {
		f.Add(tf, seed(
			[16]byte{opIndex(trace.OpOpen), 0, 0, 0, 4, 0x41, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0},
			[16]byte{opIndex(trace.OpPwrite), 0, 0, 0, 4, 0, 0, 0, 0, 16, 0, 32, 0, 0, 0xf0, 0},
			[16]byte{opIndex(trace.OpPread), 1, 1, 0, 4, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0xf0, 0},
			[16]byte{opIndex(trace.OpRename), 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			[16]byte{opIndex(trace.OpUnlink), 1, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			[16]byte{opIndex(trace.OpClose), 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		))
	}
	f.Fuzz(func(t *testing.T, tf byte, data []byte) {
		if len(data) > 16*24 {
			// 24 events reach every path; the fuzzer minimises what
			// finds new code in time quadratic in its length, and counts
			// none of those runs.
			return
		}
		m := trace.NewMemTrace()
		small := fuzzEvents(data, m)
		if len(m.Ranks()) == 0 {
			return
		}
		var opts replay.Options
		opts.Timing = replay.AFAP
		switch tf % 6 {
		case 1:
			opts.Transforms.Split = replay.Split{Size: 4096, Order: "hash", Servers: 3}
			if !small {
				// Up to 2^13 blocks a request: the limit (16 million)
				// takes seconds, and TestSplitStreams tries it.
				opts.Transforms.Split.Size = 1 << 50
			}
		case 2:
			opts.Transforms.Layout = "shared"
		case 3:
			opts.Transforms.Layout = "fpp"
		case 4:
			opts.Transforms.ScaleSize, opts.Transforms.Align = 2, 512
		case 5:
			opts.Transforms.SkipOps = []string{"meta"}
		}
		if err := opts.Transforms.Validate(); err != nil {
			t.Fatal(err)
		}
		rp, err := replay.New(m, opts)
		if err != nil {
			return // one error, as the session prints it
		}
		base := t.TempDir()
		tgt, outside := filepath.Join(base, "t"), filepath.Join(base, "o")
		for _, d := range []string{tgt, outside} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
		plan := rp.Plan()
		err = plan.CheckSpace(tgt, false)
		var se *replay.SpaceError
		if err != nil && !errors.As(err, &se) {
			t.Fatalf("CheckSpace: %v", err)
		}
		if !small || err != nil {
			return
		}
		be, err := posix.New(posix.Options{Target: tgt})
		if err != nil {
			t.Fatal(err)
		}
		defer be.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := be.Prepare(ctx, &plan.Layout); err == nil {
			if _, err := rp.Run(ctx, be, replay.Output{Target: tgt}); ctx.Err() != nil {
				t.Fatalf("the replay did not end: %v", err)
			}
		}
		ents, _ := os.ReadDir(base)
		if len(ents) != 2 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Fatalf("the replay made %q beside its target", names)
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 1 {
			t.Fatalf("the replay changed the directory beside its target: %d entries", len(ents))
		}
		if b, err := os.ReadFile(filepath.Join(outside, "secret")); err != nil || string(b) != "keep" {
			t.Fatalf("the replay changed a file beside its target: %q %v", b, err)
		}
	})
}
