package fio

import (
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// fuzzPaths are the files the events of FuzzExport name: plain, nested,
// relative, escaping, special, empty.
var fuzzPaths = []string{"", "/scratch/run/out", "/scratch/run/d/in", "rel/x", "/scratch/../../etc/passwd", "/dev/null", "/proc/self/fd/3", "a b/'q'"}

// fuzzTrace makes the events of data, 12 bytes each: op, rank, path,
// path2, descriptor, flags, then offset, size and start (16 bits each,
// shifted by the byte after them) and a duration. Sizes and offsets stay
// below 2^32: a call of 2^62 bytes is 2^30 iolog entries of 4 GiB − 1,
// and a read at 2^40 makes the prepare job write a 1 TiB file in a
// million 1 MiB entries, which the export rightly writes and no fuzzer
// can wait for (at 2^40 a run took up to 0.16 s: 3,600 runs a minute).
func fuzzTrace(data []byte) *trace.MemTrace {
	m := trace.NewMemTrace()
	ids := make([]trace.PathID, len(fuzzPaths))
	for i, p := range fuzzPaths {
		ids[i] = m.Paths.Intern(p)
	}
	ops := trace.Ops()
	for len(data) >= 12 {
		d := data[:12]
		data = data[12:]
		wide := func(i int) int64 {
			return int64(binary.LittleEndian.Uint16(d[i:])) << (d[i+2] % 17)
		}
		fd := int32(d[3] % 8)
		if fd == 7 {
			fd = -1
		}
		e := trace.Event{
			Op:     ops[int(d[0])%len(ops)],
			Rank:   uint32(d[1] % 3),
			Path:   ids[int(d[2])%len(ids)],
			Path2:  ids[int(d[3]>>4)%len(ids)],
			FD:     fd,
			Flags:  uint32(d[4]) << (d[4] % 16),
			Offset: wide(5),
			Size:   wide(8) & (1<<32 - 1),
			Start:  int64(d[11]) * 1000,
			Dur:    int64(d[4]) * 10,
		}
		e.Ret = e.Size
		switch {
		case d[1]&0x80 != 0:
			e.Ret = -int64(d[1] & 0x1f) // a failure
		case e.Op.Info().FD == trace.FDOpen:
			e.Ret = int64(d[3] % 8)
		}
		m.Add(e)
	}
	return m
}

// FuzzExport exports arbitrary events as a fio job: an export either
// fails with one line or writes a job whose iologs read back with this
// package's reader, nothing outside its directory, and only what its
// summary lists.
//
//	go test -run '^$' -fuzz '^FuzzExport$' -fuzztime 10m ./convert/fio
func FuzzExport(f *testing.F) {
	ev := func(op trace.Op, rank, path, fd byte, off, size uint16, start byte) []byte {
		b := []byte{byte(slices.Index(trace.Ops(), op)), rank, path, fd, 0}
		b = binary.LittleEndian.AppendUint16(b, off)
		b = append(b, 0)
		b = binary.LittleEndian.AppendUint16(b, size)
		b = append(b, 12, start) // sizes in 4 KiB
		return b
	}
	seq := func(evs ...[]byte) []byte { return slices.Concat(evs...) }
	f.Add(seq(ev(trace.OpOpen, 0, 1, 3, 0, 0, 1), ev(trace.OpPwrite, 0, 1, 3, 0, 1, 2), ev(trace.OpClose, 0, 1, 3, 0, 0, 3)))
	f.Add(seq(ev(trace.OpOpen, 1, 2, 4, 0, 0, 1), ev(trace.OpRead, 1, 2, 4, 0, 2, 2), ev(trace.OpRead, 1, 2, 4, 0, 2, 3),
		ev(trace.OpFsync, 1, 2, 4, 0, 0, 4), ev(trace.OpDup, 1, 2, 4, 0, 0, 5), ev(trace.OpClose, 1, 2, 4, 0, 0, 6)))
	f.Add(seq(ev(trace.OpMPIFileOpen, 2, 3, 1, 0, 0, 1), ev(trace.OpMPIFileWriteAt, 2, 3, 1, 7, 3, 2), ev(trace.OpMPIFileClose, 2, 3, 1, 0, 0, 3)))
	f.Add(seq(ev(trace.OpOpen, 0, 4, 3, 0, 0, 1), ev(trace.OpWrite, 0, 4, 3, 0, 1, 2), ev(trace.OpOpen, 0, 5, 4, 0, 0, 3),
		ev(trace.OpWrite, 0, 5, 4, 0, 1, 4), ev(trace.OpPread, 0, 7, 5, 9, 1, 5)))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 12*24 {
			return
		}
		m := fuzzTrace(data)
		dir, err := os.MkdirTemp(fuzzDir(), "export-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		job := filepath.Join(dir, "out", "job.fio")
		s, err := Export(m, job, ExportOptions{})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		listed := map[string]bool{job: true}
		for _, l := range s.Iologs {
			listed[l] = true
			fh, err := os.Open(l)
			if err != nil {
				t.Fatal(err)
			}
			r := NewReader(fh, l, 0, nil)
			buf := make([]trace.Event, 64)
			for {
				_, err := r.ReadEvents(buf)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					fh.Close()
					t.Fatalf("an exported iolog does not read back: %v", err)
				}
			}
			fh.Close()
		}
		// Nothing but the job, its iologs, its directory script and the
		// directories of its files.
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if !listed[p] && !strings.HasSuffix(p, "-dirs.sh") {
				t.Fatalf("the export wrote %s, which its summary does not list", p)
			}
			return nil
		})
	})
}

// fuzzDir is where FuzzExport writes: memory when the machine has it.
func fuzzDir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}
