package outfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "report.txt")
	if err := os.WriteFile(name, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A failing writer leaves the old file as it was and no temporary file.
	boom := errors.New("boom")
	err := Write(name, nil, func(w io.Writer) error {
		io.WriteString(w, "partial")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if b, _ := os.ReadFile(name); string(b) != "old" {
		t.Errorf("after a failure the file holds %q, want the old contents", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("after a failure the directory holds %d entries, want 1", len(ents))
	}
	// A successful one replaces it whole.
	if err := Write(name, nil, func(w io.Writer) error {
		_, err := io.WriteString(w, "new report")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(name); string(b) != "new report" {
		t.Errorf("file holds %q, want %q", b, "new report")
	}
	// "" and "-" mean standard output.
	for _, n := range []string{"", "-"} {
		var buf bytes.Buffer
		if err := Write(n, &buf, func(w io.Writer) error {
			_, err := io.WriteString(w, "to stdout")
			return err
		}); err != nil || buf.String() != "to stdout" {
			t.Errorf("name %q: got %q, %v", n, buf.String(), err)
		}
	}
	// A directory that does not exist is one clear error naming the file.
	err = Write(filepath.Join(dir, "no", "such.txt"), nil, func(io.Writer) error { return nil })
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("such.txt")) {
		t.Errorf("err = %v, want one naming the file", err)
	}
}

// TestDevicesAndLinks: what is not a regular file (a device, such as
// -o /dev/null, or a FIFO) is written in place, never replaced by a file;
// a symbolic link leads to the file replaced.
func TestDevicesAndLinks(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- string(b)
	}()
	if err := Write(fifo, nil, func(w io.Writer) error {
		_, err := io.WriteString(w, "through")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through" {
		t.Errorf("read %q from the FIFO", s)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v, %v", fi.Mode(), err)
	}
	dir := t.TempDir()
	real := filepath.Join(dir, "real.txt")
	link := filepath.Join(dir, "link.txt")
	os.WriteFile(real, []byte("old"), 0o644)
	if err := os.Symlink("real.txt", link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, nil, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	if b, _ := os.ReadFile(real); string(b) != "new" {
		t.Errorf("the linked file holds %q, want new", b)
	}
}

// TestNotInput: an output that is an input — by its name, through a
// symbolic link, or a hard link — is refused; a new name, another file
// and a device are not.
func TestNotInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.iot")
	other := filepath.Join(dir, "other")
	for _, p := range []string{in, other} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link, hard := filepath.Join(dir, "link"), filepath.Join(dir, "hard")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{in, link, hard, dir + "/./in.iot"} {
		err := NotInput([]Output{{"--record", ""}, {"-o", out}}, []string{"sample", in})
		if err == nil || !strings.Contains(err.Error(), "-o "+out+": is ") || !strings.Contains(err.Error(), "would destroy it") {
			t.Errorf("NotInput(%s) = %v", out, err)
		}
	}
	for _, out := range []string{filepath.Join(dir, "new"), other, "/dev/null", "-"} {
		if err := NotInput([]Output{{"-o", out}}, []string{in, "/dev/null"}); err != nil {
			t.Errorf("NotInput(%s) = %v", out, err)
		}
	}
}

// TestNoNameUntilCommit: a file being written has no name in its
// directory until Commit (where the file system makes unnamed files), so
// that a command killed meanwhile leaves nothing; Commit gives it the
// final name, over an old file or not, with a new file's permissions;
// Abort leaves nothing. Where there are no unnamed files, the temporary
// name does the same job.
func TestNoNameUntilCommit(t *testing.T) {
	for _, unnamed := range []bool{true, false} {
		dir := t.TempDir()
		if !unnamed {
			saved := procFD
			procFD = func() bool { return false }
			defer func() { procFD = saved }()
		}
		name := filepath.Join(dir, "summary.json")
		o, err := Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if unnamed && !o.unnamed {
			t.Logf("%s makes no unnamed files (O_TMPFILE): only the temporary names are tested", dir)
			o.Abort()
			continue
		}
		if _, err := io.WriteString(o, "first"); err != nil {
			t.Fatal(err)
		}
		ents, _ := os.ReadDir(dir)
		if unnamed && len(ents) != 0 || !unnamed && len(ents) != 1 {
			t.Errorf("unnamed %v: while written, the directory holds %d entries", unnamed, len(ents))
		}
		if err := o.Commit(); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(name); string(b) != "first" {
			t.Errorf("unnamed %v: file holds %q, want %q", unnamed, b, "first")
		}
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		umask := syscall.Umask(0)
		syscall.Umask(umask)
		if want := os.FileMode(0o666 &^ umask); fi.Mode().Perm() != want {
			t.Errorf("unnamed %v: mode %v, want %v", unnamed, fi.Mode().Perm(), want)
		}
		// Again, over the file now there.
		if err := Write(name, nil, func(w io.Writer) error {
			_, err := io.WriteString(w, "second")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(name); string(b) != "second" {
			t.Errorf("unnamed %v: file holds %q, want %q", unnamed, b, "second")
		}
		// Aborted: nothing new, the old file as it was.
		o, err = Create(filepath.Join(dir, "other.json"))
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(o, "lost")
		o.Abort()
		if ents, _ := os.ReadDir(dir); len(ents) != 1 || ents[0].Name() != "summary.json" {
			t.Errorf("unnamed %v: after an abort the directory holds %v", unnamed, ents)
		}
	}
	// A directory where the file should be is an error at once, not at
	// the end of the work.
	if _, err := Create(t.TempDir()); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Create(a directory) = %v, want an error saying it is a directory", err)
	}
}
