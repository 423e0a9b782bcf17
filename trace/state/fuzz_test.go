package state

import (
	"encoding/binary"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// FuzzFollower feeds events made of arbitrary bytes to a follower with a
// namespace: whatever a trace says, following it does not panic, and
// the state it keeps stays bounded by the events.
func FuzzFollower(f *testing.F) {
	f.Add([]byte("\x01\x00\x03\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x03"))
	f.Add(make([]byte, 64))
	ops := trace.Ops()
	names := []string{"/w/a", "/w/d", "/w/d/f", "/w/e", "rel/x", "/", "/w/../..", "pipe:[3]", "/dev/null", ""}
	f.Fuzz(func(t *testing.T, data []byte) {
		paths := trace.NewPaths()
		for _, n := range names {
			paths.Intern(n)
		}
		ns := NewNamespace(paths.Lookup)
		fl := New[struct{}, struct{}](ns)
		for len(data) >= 16 {
			b := data[:16]
			data = data[16:]
			e := trace.Event{
				Op:      ops[int(b[0])%len(ops)],
				Thread:  uint32(b[1] % 8),
				FD:      int32(int8(b[2])),
				FD2:     int32(int8(b[3])),
				Path:    trace.PathID(b[4] % uint8(len(names)+1)),
				Path2:   trace.PathID(b[5] % uint8(len(names)+1)),
				Flags:   binary.LittleEndian.Uint32(b[6:10]),
				Whence:  int32(b[10] % 4),
				Offset:  int64(int8(b[11])) << (b[12] % 64),
				Size:    int64(b[13]) << (b[14] % 64),
				Ret:     int64(int8(b[15])),
				Offset2: int64(b[12]),
			}
			fl.Apply(&e)
		}
		ns.Before()
		ns.End()
	})
}
