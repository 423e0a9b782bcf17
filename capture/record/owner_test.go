package record

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/launcher"
)

// TestOwnerRoundTrip: the owner file record writes reads back, names a
// live recorder (this process), and a spool link resolves to it.
func TestOwnerRoundTrip(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool")
	if err := os.Mkdir(spool, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeOwner(spool, []string{"./app", "x"}, filepath.Join(dir, "t.iot"), launcher.Rank{Rank: 1, Known: true, Size: 2}); err != nil {
		t.Fatal(err)
	}
	link := SpoolLink(filepath.Join(dir, "t.iot"), launcher.Rank{})
	if err := os.Symlink(spool, link); err != nil {
		t.Fatal(err)
	}
	got, own, ok, err := ResolveSpool(link)
	if err != nil || !ok || got != spool {
		t.Fatalf("ResolveSpool(%s) = %s, %v, %v", link, got, ok, err)
	}
	if own.PID != os.Getpid() || !own.alive() || own.Out != filepath.Join(dir, "t.iot") || strings.Join(own.Command, " ") != "./app x" {
		t.Errorf("owner %+v (alive %v)", own, own.alive())
	}
	if r := own.rank(); r.Rank != 1 || !r.Known || r.Size != 2 {
		t.Errorf("the owner's rank: %+v", r)
	}
	own.Start++ // another process that got the pid
	if own.alive() {
		t.Error("a recorder with another start time is taken for alive")
	}
	os.RemoveAll(spool)
	if _, _, _, err := ResolveSpool(link); err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Errorf("a dangling link: %v", err)
	}
}

// FuzzParseOwner: an owner file is outside input (a spool directory may
// be anyone's): whatever it holds, ParseOwner returns an owner that
// names a process and an output, or one error line.
func FuzzParseOwner(f *testing.F) {
	f.Add([]byte(`{"pid": 12, "start": 345, "started": "2026-01-01T00:00:00Z", "command": ["./a"], "out": "/t.iot", "rank": 0}`))
	f.Add([]byte(`{"pid": -1}`))
	f.Add([]byte(`{"pid": 1, "start": 1, "out": "x"} {}`))
	f.Add([]byte("{\"pid\": 1, \"start\": 1, \"out\": \"x\", \"evil\": \"\n\"}"))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(`{"pid": 1, "start": 1, "out": "a\nb", "started": "\r", "command": ["sh", "-c", "x\ny", ""]}`))
	f.Add([]byte(`{"pid": 1, "start": 1, "out": "x", "rank": 3, "size": 2}`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := ParseOwner(b)
		if err != nil {
			if s := err.Error(); strings.ContainsAny(s, "\n\r") || s == "" {
				t.Fatalf("error %q is not one line", s)
			}
			return
		}
		if line := commandLine(o.Command) + printable(o.Started) + printable(o.Out); strings.ContainsAny(line, "\n\r") {
			t.Fatalf("the owner prints on more than one line: %q", line)
		}
		if o.PID <= 0 || o.Start == 0 || o.Out == "" || o.Size < 0 || o.Size > 0 && int64(o.Rank) >= int64(o.Size) {
			t.Fatalf("accepted %+v", o)
		}
	})
}
