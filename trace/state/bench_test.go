package state

import (
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// BenchmarkApplyPwrite follows a rank's pwrites on one descriptor: what
// the follower adds to every call of a replay.
func BenchmarkApplyPwrite(b *testing.B) {
	f := New[int32, struct{}](nil)
	f.Apply(&trace.Event{Op: trace.OpOpen, Path: 1, Ret: 3})
	evs := make([]trace.Event, 256)
	for i := range evs {
		evs[i] = trace.Event{Op: trace.OpPwrite, FD: 3, Offset: int64(i) * 4096, Size: 4096, Ret: 4096}
	}
	b.ResetTimer()
	var n int32
	for i := range b.N {
		st := f.Apply(&evs[i%256])
		n += st.Desc.Aux
	}
	_ = n
}

// BenchmarkApplyWrite is BenchmarkApplyPwrite for writes at the file
// position, which move it.
func BenchmarkApplyWrite(b *testing.B) {
	f := New[int32, struct{}](nil)
	f.Apply(&trace.Event{Op: trace.OpOpen, Path: 1, Ret: 3})
	evs := make([]trace.Event, 256)
	for i := range evs {
		evs[i] = trace.Event{Op: trace.OpWrite, FD: 3, Offset: int64(i) * 4096, Size: 4096, Ret: 4096}
	}
	b.ResetTimer()
	for i := range b.N {
		f.Apply(&evs[i%256])
	}
}
