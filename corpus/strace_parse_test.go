package corpus

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestStraceParse checks the strace reader on the forms strace 6 prints:
// decorations, relative paths against AT_FDCWD and other descriptors,
// unfinished and resumed calls of two processes, fcntl commands, failed
// calls, working directories followed across chdir and fork.
func TestStraceParse(t *testing.T) {
	const out = `100 openat(AT_FDCWD</d>, "src", O_RDONLY|O_DIRECTORY) = 3</d/src>
100 newfstatat(3</d/src>, "", {st_mode=S_IFDIR|0755, st_size=4096, ...}, AT_EMPTY_PATH) = 0
100 getdents64(3</d/src>, 0x56117d84c8d0 /* 6 entries */, 32768) = 168
100 fcntl(3</d/src>, F_GETFL) = 0x8000 (flags O_RDONLY|O_LARGEFILE)
100 fcntl(3</d/src>, F_DUPFD_CLOEXEC, 10) = 10</d/src>
100 newfstatat(3</d/src>, "f, (1).txt", {st_mode=S_IFREG|0644, st_size=13, ...}, AT_SYMLINK_NOFOLLOW) = 0
100 openat(3</d/src>, "f, (1).txt", O_RDONLY <unfinished ...>
101 write(4</d/out.tgz>, "\37\213\10\0\0\0\0\0\0\3\354\275\"y) = 5|\7..."..., 32768 <unfinished ...>
100 <... openat resumed>) = 5</d/src/f, (1).txt>
101 <... write resumed>) = 32768
100 read(5</d/src/f, (1).txt>, "hello\n", 4096) = 13
100 read(0</etc/passwd>, "", 4096) = 0
100 newfstatat(4<pipe:[74648]>, "", AT_EMPTY_PATH) = 0
100 newfstatat(77, "x", 0x7ffd, 0) = -1 EBADF (Bad file descriptor)
100 openat(AT_FDCWD</d>, "/d/nope", O_RDONLY) = -1 ENOENT (No such file or directory)
100 openat(AT_FDCWD</d>, "/etc/ld.so.cache", O_RDONLY|O_CLOEXEC) = 3</etc/ld.so.cache>
100 mmap(NULL, 8192, PROT_READ, MAP_SHARED, 5</d/src/f, (1).txt>, 0) = 0x7f0000000000
100 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f0000002000
100 msync(0x7f0000000000, 4096, MS_SYNC) = 0
100 munmap(0x7f0000002000, 8192) = 0
100 copy_file_range(5</d/src/f, (1).txt>, NULL, 6</tmp/elsewhere>, NULL, 9223372035781033984, 0) = 13
100 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f) = 102
102 munmap(0x7f0000000000, 8192) = 0
100 munmap(0x7f0000000000, 8192) = 0
100 close(5</d/src/f, (1).txt>(deleted)) = 0
100 chdir("src") = 0
100 unlink("x") = 0
102 mkdir("made", 0777) = 0
102 rename("made", "/elsewhere/moved") = 0
100 exit_group(0) = ?
100 +++ exited with 0 +++
`
	dir := t.TempDir()
	f := filepath.Join(dir, "s.txt")
	if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	ops, err := parseStraceFiles([]string{f}, "/d", "/d", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ops["fstatat"].Count != 2 || ops["openat"].Count != 3 || ops["copy_file_range"].Count != 1 {
		t.Errorf("per op: %v", ops)
	}
	got := families(ops)
	want := map[string]famCount{
		"open":    {Count: 3},               // src, f (1).txt, /d/nope
		"stat":    {Count: 2},               // newfstatat on src, f
		"readdir": {Count: 1},               // getdents64
		"dup":     {Count: 1},               // F_DUPFD_CLOEXEC only
		"write":   {Count: 1, Bytes: 32768}, // resumed
		"read":    {Count: 1, Bytes: 13},    // not fd 0 on /etc/passwd
		"mmap":    {Count: 3},               // the shared mapping, not the anonymous one; its munmap by the forked child, and by the parent
		"sync":    {Count: 1},               // msync of the shared mapping
		"copy":    {Count: 1, Bytes: 13},    // one end under /d
		"close":   {Count: 1},               // a file removed while open: "(deleted)" after its path
		"unlink":  {Count: 1},               // /d/src/x after chdir
		"mkdir":   {Count: 1},               // /d/made, cwd inherited through clone
		"rename":  {Count: 1},               // from /d/made
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}
