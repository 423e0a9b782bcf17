package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
)

// TestRecordTimeMoversE2E: the calls that move an application's I/O time
// without moving its data, recorded by both capture modes from programs
// nobody here wrote, and carried out by the replay: `sync -f` (syncfs),
// fio reading a file it invalidates first (posix_fadvise
// POSIX_FADV_DONTNEED), and `git clone` of a local repository (its objects
// hard-linked, a symbolic link checked out and one it probes with, its
// index and objects read through mmap and munmap); and a pattern script
// converted from the trace makes them too.
func TestRecordTimeMoversE2E(t *testing.T) {
	recSkipUnsupported(t)
	git, fio := recNeedTool(t, "git"), recNeedTool(t, "fio")
	recNeedTool(t, "sync")
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	replayBin := filepath.Join(dir, "ioreplay")
	if out, err := exec.Command("go", "build", "-o", replayBin, "../ioreplay").CombinedOutput(); err != nil {
		t.Fatalf("building ioreplay: %v\n%s", err, out)
	}
	for _, mode := range []string{"ptrace", "preload"} {
		t.Run(mode, func(t *testing.T) {
			work := filepath.Join(dir, mode, "work")
			repo := filepath.Join(work, "r")
			os.MkdirAll(repo, 0o755)
			os.WriteFile(filepath.Join(repo, "a"), []byte("hello\n"), 0o644)
			os.Symlink("a", filepath.Join(repo, "s"))
			os.WriteFile(filepath.Join(work, "f"), make([]byte, 1<<20), 0o644)
			for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"}} {
				cmd := exec.Command(git, args...)
				cmd.Dir = repo
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			orig := filepath.Join(dir, mode, "orig.iot")
			args := []string{"record", "--include", work, "-o", orig}
			if mode == "preload" {
				args = append(args, "--preload")
			}
			script := git + " clone -q r c && sync -f f && " + fio +
				" --name=j --filename=f2 --size=1M --rw=read --bs=64k --ioengine=psync --invalidate=1 >/dev/null"
			if _, stderr, code := recRun(t, work, nil, "", append(args, "--", "sh", "-c", script)...); code != 0 {
				t.Fatalf("record: exit %d\n%s", code, stderr)
			}
			counts := func(name string) map[string]int {
				r, evs := readTrace(t, name)
				f := state.New[struct{}, struct{}](nil)
				n := map[string]int{}
				for i := range evs {
					e := evs[i]
					p := r.Path(f.Apply(&evs[i]).Path)
					switch {
					case e.Op == trace.OpSyncfs && strings.HasSuffix(p, "/f"):
						n["syncfs"]++
					case e.Op == trace.OpFadvise && e.Flags == 4 && strings.HasSuffix(p, "/f2"):
						n["fadvise DONTNEED"]++
					case (e.Op == trace.OpLink || e.Op == trace.OpLinkat) && strings.Contains(r.Path(e.Path2), "/c/.git/objects/"):
						n["link"]++
					case e.Op == trace.OpSymlink || e.Op == trace.OpSymlinkat:
						n["symlink"]++
					case e.Op == trace.OpMmap && strings.Contains(p, "/.git/"):
						n["mmap"]++
					case e.Op == trace.OpMunmap && strings.Contains(p, "/.git/"):
						n["munmap"]++
					}
				}
				return n
			}
			want := counts(orig)
			for _, k := range []string{"syncfs", "fadvise DONTNEED", "link", "symlink", "mmap", "munmap"} {
				if want[k] == 0 {
					t.Errorf("no %s in the recorded trace: %v", k, want)
				}
			}
			// A pattern script makes them too (convert checks that it
			// makes the recorded calls exactly).
			if _, stderr, code := recRun(t, work, nil, "", "convert", orig, "-o", filepath.Join(dir, mode, "orig.iop")); code != 0 {
				t.Errorf("convert to a script: exit %d\n%s", code, stderr)
			}
			replayed := filepath.Join(dir, mode, "replay.iot")
			target := filepath.Join(dir, mode, "target")
			cmd := exec.Command(replayBin, "--timing", "afap", "--target", target, "--record", replayed, "--quiet", orig)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("ioreplay: %v\n%s", err, out)
			}
			got := counts(replayed)
			for k, n := range want {
				if got[k] != n {
					t.Errorf("%s: %d recorded, %d replayed", k, n, got[k])
				}
			}
			// The checked-out link, wherever the common prefix put c/.
			links := 0
			filepath.Walk(target, func(p string, fi os.FileInfo, err error) error {
				if err == nil && strings.HasSuffix(p, "/c/s") {
					if l, _ := os.Readlink(p); l == "a" {
						links++
					}
				}
				return nil
			})
			if links != 1 {
				t.Errorf("%d symbolic links c/s → a in the target, want 1", links)
			}
		})
	}
}
